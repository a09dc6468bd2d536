/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * vhca hardware interface: the contract between the QEMU device model
 * (hw/vhca), the guest kernel driver (drivers/vhca) and the rdma-core
 * provider (provider/vhca).  docs/specs/vhca.rst describes every field.
 *
 * Everything the guest and the device exchange in memory is little-endian;
 * the structures below are laid out with explicit padding and checked by
 * static asserts so that all three halves agree on every byte.  Multi-byte
 * fields are vhca_le16/32/64: __le16/32/64 in the kernel, so that sparse
 * checks every access of the driver goes through le*_to_cpu()/cpu_to_le*(),
 * and plain fixed-width integers in QEMU and rdma-core, which convert with
 * their own helpers (the device's vhca_ld_le32(), the provider's le32toh()).
 */
#ifndef VHCA_HW_H
#define VHCA_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#else
#include <assert.h>
#include <stdint.h>
#endif

#ifdef __KERNEL__
typedef u8 vhca_u8;
typedef u16 vhca_u16;
typedef u32 vhca_u32;
typedef u64 vhca_u64;
typedef __le16 vhca_le16;
typedef __le32 vhca_le32;
typedef __le64 vhca_le64;
#else
typedef uint8_t vhca_u8;
typedef uint16_t vhca_u16;
typedef uint32_t vhca_u32;
typedef uint64_t vhca_u64;
/* Little-endian in memory: the user of a field converts it. */
typedef uint16_t vhca_le16;
typedef uint32_t vhca_le32;
typedef uint64_t vhca_le64;
#endif

/* ---------------------------------------------------------------------- */
/* PCI identity                                                           */
/* ---------------------------------------------------------------------- */

/* From the range QEMU reserves for experimental virtio-vendor devices. */
#define VHCA_PCI_VENDOR_ID		0x1af4
#define VHCA_PCI_DEVICE_ID		0x10f5
#define VHCA_PCI_REVISION		0x01
/* Network controller / Ethernet: the function is an Ethernet NIC first. */
#define VHCA_PCI_CLASS			0x0200
/* link=ib: an InfiniBand controller (PCI class code 02h, subclass 07h). */
#define VHCA_PCI_CLASS_IB		0x0207

#define VHCA_BAR_CTRL			0	/* control registers */
#define VHCA_BAR_DOORBELL		2	/* user doorbell pages */
#define VHCA_BAR_MSIX			4	/* MSI-X table and PBA */

#define VHCA_CTRL_BAR_SIZE		0x1000
#define VHCA_DB_PAGE_SIZE		0x1000

/* ---------------------------------------------------------------------- */
/* BAR0 registers (all 32-bit, naturally aligned accesses only)           */
/* ---------------------------------------------------------------------- */

#define VHCA_REG_MAGIC			0x000	/* RO "VHCA" */
#define VHCA_REG_VERSION		0x004	/* RO major << 16 | minor */
#define VHCA_REG_CAPS			0x008	/* RO VHCA_CAP_* */
#define VHCA_REG_NUM_VECTORS		0x00c	/* RO MSI-X vectors */
#define VHCA_REG_NUM_DB_PAGES		0x010	/* RO pages in BAR2 */
#define VHCA_REG_CTRL			0x014	/* RW VHCA_CTRL_* */
#define VHCA_REG_STATUS			0x018	/* RO VHCA_STATUS_* */
#define VHCA_REG_ERROR			0x01c	/* RO last VHCA_ERR_* seen */

/* Admin queue: a ring of struct vhca_admin_cmd in guest memory. */
#define VHCA_REG_ADMQ_BASE_LO		0x040	/* RW, 64-byte aligned */
#define VHCA_REG_ADMQ_BASE_HI		0x044	/* RW */
#define VHCA_REG_ADMQ_LOG_SIZE		0x048	/* RW log2(entries), 1..12 */
#define VHCA_REG_ADMQ_PI		0x04c	/* WO doorbell: producer index */
#define VHCA_REG_ADMQ_CI		0x050	/* RO commands completed */

/* Async event queue (EQ 0): a ring of struct vhca_eqe, MSI-X vector 0. */
#define VHCA_REG_AEQ_BASE_LO		0x060	/* RW, 64-byte aligned */
#define VHCA_REG_AEQ_BASE_HI		0x064	/* RW */
#define VHCA_REG_AEQ_LOG_SIZE		0x068	/* RW log2(entries), 1..16 */
#define VHCA_REG_AEQ_DB			0x06c	/* WO consumer index | ARM */
#define VHCA_REG_AEQ_PI			0x070	/* RO events produced */

/* Ethernet rings: struct vhca_eth_desc, MSI-X vector 1. */
#define VHCA_REG_TX_BASE_LO		0x100	/* RW, 16-byte aligned */
#define VHCA_REG_TX_BASE_HI		0x104	/* RW */
#define VHCA_REG_TX_LOG_SIZE		0x108	/* RW log2(entries), 1..15 */
#define VHCA_REG_TX_PI			0x10c	/* WO doorbell: producer index */
#define VHCA_REG_TX_CI			0x110	/* RO descriptors completed */
#define VHCA_REG_RX_BASE_LO		0x120	/* RW, 16-byte aligned */
#define VHCA_REG_RX_BASE_HI		0x124	/* RW */
#define VHCA_REG_RX_LOG_SIZE		0x128	/* RW log2(entries), 1..15 */
#define VHCA_REG_RX_PI			0x12c	/* WO doorbell: buffers posted */
#define VHCA_REG_RX_CI			0x130	/* RO descriptors filled */
#define VHCA_REG_ETH_CTRL		0x140	/* RW VHCA_ETH_CTRL_* */
#define VHCA_REG_ETH_IRQ_ARM		0x144	/* WO any value: arm vector 1 */

/*
 * Counters: 64-bit, read as LO then HI (reading LO latches HI).  Indexed
 * by enum vhca_counter; register = VHCA_REG_COUNTERS + 8 * index.
 */
#define VHCA_REG_COUNTERS		0x200

/*
 * Why the RoCE engine dropped a received frame.  Each reason has its own
 * counter (VHCA_CNT_DROP_*) and names the drop in the device's trace
 * (docs/specs/vhca.rst, "Dropped frames").
 */
enum vhca_drop_reason {
	VHCA_DROP_MALFORMED,			/* the parser refused it */
	VHCA_DROP_BAD_ICRC,			/* ICRC mismatch (annex A17) */
	VHCA_DROP_PKEY,			/* P_Key not ours (9.6.1.1) */
	VHCA_DROP_NO_QP,			/* no such QP, or not its type */
	VHCA_DROP_QP_STATE,			/* the QP does not take it now */
	VHCA_DROP_QUEUE_FULL,			/* RX queue full: sender retries */
	VHCA_DROP_NO_MEMORY,
	VHCA_DROP_MCAST_ECHO,			/* our own multicast, echoed */
	VHCA_DROP_MCAST_NO_MEMBER,		/* group nobody joined */
	VHCA_DROP_QKEY,			/* UD: Q_Key mismatch (10.2.5) */
	VHCA_DROP_NO_RWQE,			/* UD/UC: no receive WQE */
	VHCA_DROP_UC_MSG,			/* UC: packet of a dropped message */
	VHCA_DROP_STALE_RESPONSE,		/* RC: nothing outstanding */
	VHCA_DROP_BAD_RESPONSE,		/* RC: unexpected response */
	VHCA_DROP_DUP_TOO_OLD,			/* older than our resources */
	VHCA_DROP_OVERSIZE,			/* payload over the MTU */
	/* InfiniBand port only (docs/specs/vhca.rst, "InfiniBand port") */
	VHCA_DROP_BAD_VCRC,			/* VCRC mismatch (7.8.2) */
	VHCA_DROP_DLID,			/* DLID not ours (7.11.1) */
	VHCA_DROP_VL15,			/* VL15 not for QP0, or QP0 not VL15 */
	VHCA_DROP_PORT_STATE,			/* data while not ACTIVE (7.2) */
	/* RoCE: 802.1Q VID not the destination GID entry's (vhca-net.c) */
	VHCA_DROP_VLAN,
	VHCA_DROP_MAX
};

static inline const char *vhca_drop_reason_name(unsigned int reason)
{
	static const char * const names[VHCA_DROP_MAX] = {
		[VHCA_DROP_MALFORMED]		= "malformed",
		[VHCA_DROP_BAD_ICRC]		= "bad-icrc",
		[VHCA_DROP_PKEY]		= "pkey",
		[VHCA_DROP_NO_QP]		= "no-qp",
		[VHCA_DROP_QP_STATE]		= "qp-state",
		[VHCA_DROP_QUEUE_FULL]		= "queue-full",
		[VHCA_DROP_NO_MEMORY]		= "no-memory",
		[VHCA_DROP_MCAST_ECHO]		= "mcast-echo",
		[VHCA_DROP_MCAST_NO_MEMBER]	= "mcast-no-member",
		[VHCA_DROP_QKEY]		= "qkey",
		[VHCA_DROP_NO_RWQE]		= "no-rwqe",
		[VHCA_DROP_UC_MSG]		= "uc-msg",
		[VHCA_DROP_STALE_RESPONSE]	= "stale-response",
		[VHCA_DROP_BAD_RESPONSE]	= "bad-response",
		[VHCA_DROP_DUP_TOO_OLD]		= "duplicate-too-old",
		[VHCA_DROP_OVERSIZE]		= "oversize",
		[VHCA_DROP_BAD_VCRC]		= "bad-vcrc",
		[VHCA_DROP_DLID]		= "dlid",
		[VHCA_DROP_VL15]		= "vl15",
		[VHCA_DROP_PORT_STATE]		= "port-state",
		[VHCA_DROP_VLAN]		= "vlan",
	};

	return reason < VHCA_DROP_MAX ? names[reason] : "unknown";
}

/*
 * Device counters.  Their names (vhca_counter_name()) are what the guest
 * driver shows in `rdma statistic` and `ethtool -S`; where Linux rxe counts
 * the same thing the name is rxe's (drivers/infiniband/sw/rxe/
 * rxe_hw_counters.c).
 */
enum vhca_counter {
	VHCA_CNT_TX_PACKETS,
	VHCA_CNT_TX_BYTES,
	VHCA_CNT_TX_ERRORS,			/* bad descriptor or address */
	VHCA_CNT_RX_PACKETS,
	VHCA_CNT_RX_BYTES,
	VHCA_CNT_RX_NO_BUFFER,			/* dropped: RX ring empty */
	VHCA_CNT_RX_ERRORS,			/* bad buffer or oversize */
	VHCA_CNT_RX_MCAST_FILTERED,		/* refused by RX filter */
	VHCA_CNT_ADMIN_COMMANDS,
	VHCA_CNT_ADMIN_ERRORS,			/* status != OK */
	VHCA_CNT_EQ_OVERFLOWS,			/* events lost: EQ full */
	VHCA_CNT_DOORBELLS,			/* writes to BAR2 */
	/* RoCE transport (IBTA 9.7, 9.8) */
	VHCA_CNT_ROCE_TX_PACKETS,
	VHCA_CNT_ROCE_RX_PACKETS,		/* UDP/4791 to one of our GIDs */
	VHCA_CNT_ROCE_RX_DROPPED,		/* sum of the drop_* counters */
	VHCA_CNT_UD_TX_PACKETS,		/* incl. QP1 */
	VHCA_CNT_UD_RX_PACKETS,
	VHCA_CNT_UD_TX_TOO_LONG,		/* over the MTU: not sent (C10-93.1.1) */
	VHCA_CNT_DUPLICATE_REQUEST,		/* 9.9.1.1 */
	VHCA_CNT_OUT_OF_SEQ_REQUEST,		/* 9.9.1.1 */
	VHCA_CNT_SEQ_NAK_SENT,
	VHCA_CNT_SEQ_NAK_RCVD,
	VHCA_CNT_RNR_NAK_SENT,
	VHCA_CNT_RNR_NAK_RCVD,
	VHCA_CNT_INV_REQ_NAK_SENT,
	VHCA_CNT_INV_REQ_NAK_RCVD,
	VHCA_CNT_REM_ACCESS_NAK_SENT,
	VHCA_CNT_REM_ACCESS_NAK_RCVD,
	VHCA_CNT_REM_OP_NAK_SENT,
	VHCA_CNT_REM_OP_NAK_RCVD,
	VHCA_CNT_ACK_TIMEOUTS,			/* 9.7.6.1.3 */
	VHCA_CNT_RETRIES,			/* SQ rewinds */
	VHCA_CNT_RETRANSMITTED_PKTS,
	VHCA_CNT_RETRY_EXCEEDED,
	VHCA_CNT_RNR_RETRY_EXCEEDED,
	VHCA_CNT_UC_MSGS_DROPPED,		/* whole UC messages (9.8.3) */
	VHCA_CNT_COMPLETION_ERRORS,		/* CQEs with status != 0 */
	/* RDMA packets' bytes, LRH or IP header to ICRC (PMA PortXmitData) */
	VHCA_CNT_RDMA_TX_BYTES,
	VHCA_CNT_RDMA_RX_BYTES,
	VHCA_CNT_LINK_DOWNED,			/* port left LinkUp (PMA) */
	VHCA_CNT_XMIT_DISCARDS,		/* IB: port state, VL15 SL (PMA) */
	VHCA_CNT_SMA_TRAPS,			/* IB: traps handed to the driver */
	/* one per enum vhca_drop_reason, in its order */
	VHCA_CNT_DROP_MALFORMED,
	VHCA_CNT_DROP_BAD_ICRC,
	VHCA_CNT_DROP_PKEY,
	VHCA_CNT_DROP_NO_QP,
	VHCA_CNT_DROP_QP_STATE,
	VHCA_CNT_DROP_QUEUE_FULL,
	VHCA_CNT_DROP_NO_MEMORY,
	VHCA_CNT_DROP_MCAST_ECHO,
	VHCA_CNT_DROP_MCAST_NO_MEMBER,
	VHCA_CNT_DROP_QKEY,
	VHCA_CNT_DROP_NO_RWQE,
	VHCA_CNT_DROP_UC_MSG,
	VHCA_CNT_DROP_STALE_RESPONSE,
	VHCA_CNT_DROP_BAD_RESPONSE,
	VHCA_CNT_DROP_DUP_TOO_OLD,
	VHCA_CNT_DROP_OVERSIZE,
	VHCA_CNT_DROP_BAD_VCRC,
	VHCA_CNT_DROP_DLID,
	VHCA_CNT_DROP_VL15,
	VHCA_CNT_DROP_PORT_STATE,
	VHCA_CNT_DROP_VLAN,
	VHCA_CNT_MAX
};

/* The counter of drop reason @r. */
#define VHCA_CNT_DROP(r)		(VHCA_CNT_DROP_MALFORMED + (r))

static inline const char *vhca_counter_name(unsigned int counter)
{
	static const char * const names[VHCA_CNT_MAX] = {
		[VHCA_CNT_TX_PACKETS]		= "tx_packets",
		[VHCA_CNT_TX_BYTES]		= "tx_bytes",
		[VHCA_CNT_TX_ERRORS]		= "tx_errors",
		[VHCA_CNT_RX_PACKETS]		= "rx_packets",
		[VHCA_CNT_RX_BYTES]		= "rx_bytes",
		[VHCA_CNT_RX_NO_BUFFER]		= "rx_no_buffer",
		[VHCA_CNT_RX_ERRORS]		= "rx_errors",
		[VHCA_CNT_RX_MCAST_FILTERED]	= "rx_mcast_filtered",
		[VHCA_CNT_ADMIN_COMMANDS]	= "admin_commands",
		[VHCA_CNT_ADMIN_ERRORS]		= "admin_errors",
		[VHCA_CNT_EQ_OVERFLOWS]		= "eq_overflows",
		[VHCA_CNT_DOORBELLS]		= "doorbells",
		[VHCA_CNT_ROCE_TX_PACKETS]	= "sent_pkts",
		[VHCA_CNT_ROCE_RX_PACKETS]	= "rcvd_pkts",
		[VHCA_CNT_ROCE_RX_DROPPED]	= "rcvd_dropped",
		[VHCA_CNT_UD_TX_PACKETS]	= "ud_sent_pkts",
		[VHCA_CNT_UD_RX_PACKETS]	= "ud_rcvd_pkts",
		[VHCA_CNT_UD_TX_TOO_LONG]	= "ud_tx_too_long",
		[VHCA_CNT_DUPLICATE_REQUEST]	= "duplicate_request",
		[VHCA_CNT_OUT_OF_SEQ_REQUEST]	= "out_of_seq_request",
		[VHCA_CNT_SEQ_NAK_SENT]		= "send_seq_err",
		[VHCA_CNT_SEQ_NAK_RCVD]		= "rcvd_seq_err",
		[VHCA_CNT_RNR_NAK_SENT]		= "send_rnr_err",
		[VHCA_CNT_RNR_NAK_RCVD]		= "rcvd_rnr_err",
		[VHCA_CNT_INV_REQ_NAK_SENT]	= "send_inv_req_err",
		[VHCA_CNT_INV_REQ_NAK_RCVD]	= "rcvd_inv_req_err",
		[VHCA_CNT_REM_ACCESS_NAK_SENT]	= "send_rem_access_err",
		[VHCA_CNT_REM_ACCESS_NAK_RCVD]	= "rcvd_rem_access_err",
		[VHCA_CNT_REM_OP_NAK_SENT]	= "send_rem_op_err",
		[VHCA_CNT_REM_OP_NAK_RCVD]	= "rcvd_rem_op_err",
		[VHCA_CNT_ACK_TIMEOUTS]		= "local_ack_timeout_err",
		[VHCA_CNT_RETRIES]		= "completer_retry_err",
		[VHCA_CNT_RETRANSMITTED_PKTS]	= "retransmitted_pkts",
		[VHCA_CNT_RETRY_EXCEEDED]	= "retry_exceeded_err",
		[VHCA_CNT_RNR_RETRY_EXCEEDED]	= "retry_rnr_exceeded_err",
		[VHCA_CNT_UC_MSGS_DROPPED]	= "uc_msgs_dropped",
		[VHCA_CNT_COMPLETION_ERRORS]	= "completion_errors",
		[VHCA_CNT_RDMA_TX_BYTES]	= "sent_bytes",
		[VHCA_CNT_RDMA_RX_BYTES]	= "rcvd_bytes",
		[VHCA_CNT_LINK_DOWNED]		= "link_downed",
		[VHCA_CNT_XMIT_DISCARDS]	= "xmit_discards",
		[VHCA_CNT_SMA_TRAPS]		= "sma_traps",
		[VHCA_CNT_DROP_MALFORMED]	= "drop_malformed",
		[VHCA_CNT_DROP_BAD_ICRC]	= "drop_bad_icrc",
		[VHCA_CNT_DROP_PKEY]		= "drop_pkey",
		[VHCA_CNT_DROP_NO_QP]		= "drop_no_qp",
		[VHCA_CNT_DROP_QP_STATE]	= "drop_qp_state",
		[VHCA_CNT_DROP_QUEUE_FULL]	= "drop_queue_full",
		[VHCA_CNT_DROP_NO_MEMORY]	= "drop_no_memory",
		[VHCA_CNT_DROP_MCAST_ECHO]	= "drop_mcast_echo",
		[VHCA_CNT_DROP_MCAST_NO_MEMBER]	= "drop_mcast_no_member",
		[VHCA_CNT_DROP_QKEY]		= "drop_qkey",
		[VHCA_CNT_DROP_NO_RWQE]		= "drop_no_rwqe",
		[VHCA_CNT_DROP_UC_MSG]		= "drop_uc_msg",
		[VHCA_CNT_DROP_STALE_RESPONSE]	= "drop_stale_response",
		[VHCA_CNT_DROP_BAD_RESPONSE]	= "drop_bad_response",
		[VHCA_CNT_DROP_DUP_TOO_OLD]	= "drop_duplicate_too_old",
		[VHCA_CNT_DROP_OVERSIZE]	= "drop_oversize",
		[VHCA_CNT_DROP_BAD_VCRC]	= "drop_bad_vcrc",
		[VHCA_CNT_DROP_DLID]		= "drop_dlid",
		[VHCA_CNT_DROP_VL15]		= "drop_vl15",
		[VHCA_CNT_DROP_PORT_STATE]	= "drop_port_state",
		[VHCA_CNT_DROP_VLAN]		= "drop_vlan",
	};

	return counter < VHCA_CNT_MAX ? names[counter] : "unknown";
}

#define VHCA_MAGIC			0x41434856	/* "VHCA" little-endian */
#define VHCA_VERSION_MAJOR		1
#define VHCA_VERSION_MINOR		0
#define VHCA_VERSION ((VHCA_VERSION_MAJOR << 16) | VHCA_VERSION_MINOR)

#define VHCA_CAP_ETH			(1u << 0)	/* Ethernet rings */
#define VHCA_CAP_ROCE			(1u << 1)	/* RoCEv2 engine */
/*
 * The port is InfiniBand (link=ib, docs/specs/vhca.rst "InfiniBand
 * port"): the RDMA engine on an LRH wire, a subnet management and a
 * performance management agent behind MAD_IFC; no Ethernet rings, no
 * ADD_GID (the GID is the SM's subnet prefix and the port GUID).  Set
 * alone: CAPS is VHCA_CAP_IB.
 */
#define VHCA_CAP_IB			(1u << 2)

/* VHCA_REG_CTRL */
#define VHCA_CTRL_ENABLE		(1u << 0)	/* start the admin queue */
#define VHCA_CTRL_RESET			(1u << 1)	/* WO: full device reset */

/* VHCA_REG_STATUS */
#define VHCA_STATUS_READY		(1u << 0)	/* admin queue running */
#define VHCA_STATUS_LINK_UP		(1u << 1)
#define VHCA_STATUS_ADMQ_ERROR		(1u << 2)	/* see VHCA_REG_ERROR */
#define VHCA_STATUS_AEQ_OVERFLOW	(1u << 3)	/* events were lost */

/* VHCA_REG_ERROR: why a register write was refused. */
enum vhca_reg_error {
	VHCA_ERR_NONE			= 0,
	VHCA_ERR_BAD_RING_CONFIG	= 1,	/* base unaligned or bad size */
	VHCA_ERR_ADMQ_DOORBELL		= 2,	/* PI beyond ring capacity */
	VHCA_ERR_ADMQ_DMA		= 3,	/* command fetch failed */
	VHCA_ERR_ETH_DOORBELL		= 4,	/* TX/RX PI beyond capacity */
	VHCA_ERR_AEQ_DOORBELL		= 5,	/* CI beyond PI */
};

/* VHCA_REG_ETH_CTRL */
#define VHCA_ETH_CTRL_TX_ENABLE		(1u << 0)
#define VHCA_ETH_CTRL_RX_ENABLE		(1u << 1)
#define VHCA_ETH_CTRL_PROMISC		(1u << 2)

/* VHCA_REG_AEQ_DB */
#define VHCA_EQ_DB_CI_MASK		0x00ffffffu
#define VHCA_EQ_DB_ARM			(1u << 31)

/*
 * Queue and object limits.  QUERY_DEVICE reports the per-device counts
 * (QEMU properties); these are the fixed ones every half checks against.
 */
#define VHCA_ADMQ_MAX_LOG_SIZE		12
#define VHCA_AEQ_MAX_LOG_SIZE		16
#define VHCA_ETH_MAX_LOG_SIZE		15
/*
 * max_cqe = 2^19 - 1: the most one level-1 page list (4096 pages of
 * 4 KiB) holds at 32 bytes an entry.  libfabric's RXM asks its verbs CQ
 * for rx_size + tx_size * universe size (128 + 128 * 1024) entries; a
 * ConnectX reports 2^22 - 1 (docs/user-guide.rst, "Middleware").
 */
#define VHCA_CQ_MAX_LOG_SIZE		19
#define VHCA_EQ_MAX_LOG_SIZE		16
#define VHCA_WQ_MAX_LOG_SIZE		14	/* max_qp_wr = 2^14 */
/* Queues live on 4 KiB pages; no entry straddles a page. */
#define VHCA_QUEUE_PAGE_SHIFT		12
#define VHCA_QUEUE_PAGE_SIZE		(1u << VHCA_QUEUE_PAGE_SHIFT)
#define VHCA_MR_MIN_PAGE_SHIFT		12
#define VHCA_MR_MAX_PAGE_SHIFT		30
/*
 * Read and atomic requests a QP may have outstanding (either way): rxe's
 * 128, not a ConnectX's 16, because an emulated round trip is long
 * (docs/specs/vhca.rst, "Limits (QUERY_DEVICE)").
 */
#define VHCA_MAX_RD_ATOMIC		128
#define VHCA_MAX_MSG_SIZE		0x80000000u	/* IBTA: 2^31 */
/* XRC domains (ALLOC_XRCD): handles 1..VHCA_MAX_XRCD. */
#define VHCA_MAX_XRCD			64
/* QP0 does not exist on RoCE; QP1 is the GSI QP (VHCA_QPT_GSI only). */
#define VHCA_FIRST_QPN			2

/* MSI-X vector assignment. */
#define VHCA_VECTOR_ASYNC		0
#define VHCA_VECTOR_ETH			1
#define VHCA_VECTOR_FIRST_COMP		2
#define VHCA_MIN_VECTORS		2

/* ---------------------------------------------------------------------- */
/* Admin queue                                                            */
/* ---------------------------------------------------------------------- */

/*
 * One 64-byte admin queue entry.  The driver fills the input half, clears
 * out.done, and rings VHCA_REG_ADMQ_PI.  The device executes commands in
 * order, writes the output half with done = 1 last, advances
 * VHCA_REG_ADMQ_CI and posts a VHCA_EQE_CMD_DONE event.
 */
struct vhca_admin_cmd {
	/* input, written by the driver */
	vhca_le16 opcode;		/* enum vhca_admin_opcode */
	vhca_le16 rsvd0;
	vhca_le32 token;		/* echoed in output and event */
	vhca_u8 in[32];			/* command specific */
	/* output, written by the device */
	vhca_u8 status;			/* enum vhca_admin_status */
	vhca_u8 done;			/* 1 when output is valid */
	vhca_le16 rsvd1;
	vhca_le32 syndrome;		/* detail for the status, 0 if none */
	vhca_u8 out[16];		/* command specific */
};

/*
 * Admin opcodes.  The RDMA resource commands take a mailbox (struct
 * vhca_cmd_dma_in); SET_RX_FILTER's mailbox holds a struct vhca_rx_filter;
 * ATTACH/DETACH_MCAST take struct vhca_cmd_mcast_in inline.
 */
enum vhca_admin_opcode {
	VHCA_CMD_NOP				= 0x00,
	VHCA_CMD_QUERY_DEVICE			= 0x01,
	VHCA_CMD_QUERY_PORT			= 0x02,
	VHCA_CMD_ADD_GID			= 0x03,
	VHCA_CMD_DEL_GID			= 0x04,
	VHCA_CMD_SET_MAC			= 0x05,
	VHCA_CMD_SET_MTU			= 0x06,
	VHCA_CMD_ALLOC_UCTX			= 0x07,
	VHCA_CMD_DEALLOC_UCTX			= 0x08,
	VHCA_CMD_SET_RX_FILTER			= 0x09,
	VHCA_CMD_CREATE_PD			= 0x10,
	VHCA_CMD_DESTROY_PD			= 0x11,
	VHCA_CMD_CREATE_MR			= 0x12,
	VHCA_CMD_DESTROY_MR			= 0x13,
	VHCA_CMD_CREATE_EQ			= 0x14,
	VHCA_CMD_DESTROY_EQ			= 0x15,
	VHCA_CMD_CREATE_CQ			= 0x16,
	VHCA_CMD_DESTROY_CQ			= 0x17,
	VHCA_CMD_CREATE_QP			= 0x18,
	VHCA_CMD_MODIFY_QP			= 0x19,
	VHCA_CMD_QUERY_QP			= 0x1a,
	VHCA_CMD_DESTROY_QP			= 0x1b,
	VHCA_CMD_ATTACH_MCAST			= 0x1c,
	VHCA_CMD_DETACH_MCAST			= 0x1d,
	VHCA_CMD_CREATE_SRQ			= 0x1e,
	VHCA_CMD_MODIFY_SRQ			= 0x1f,
	VHCA_CMD_QUERY_SRQ			= 0x20,
	VHCA_CMD_DESTROY_SRQ			= 0x21,
	VHCA_CMD_RESIZE_CQ			= 0x22,
	VHCA_CMD_ALLOC_XRCD			= 0x23,
	VHCA_CMD_DEALLOC_XRCD			= 0x24,
	VHCA_CMD_ALLOC_MW			= 0x25,
	VHCA_CMD_DEALLOC_MW			= 0x26,
	VHCA_CMD_MAD_IFC			= 0x27,	/* IB port only */
	VHCA_CMD_MODIFY_PORT			= 0x28,	/* IB port only */
	VHCA_CMD_SET_CC				= 0x29,	/* Ethernet port only */
	VHCA_CMD_QUERY_CC			= 0x2a,	/* Ethernet port only */
	VHCA_CMD_MAX
};

static inline const char *vhca_admin_opcode_name(unsigned int opcode)
{
	static const char * const names[VHCA_CMD_MAX] = {
		[VHCA_CMD_NOP]			= "NOP",
		[VHCA_CMD_QUERY_DEVICE]		= "QUERY_DEVICE",
		[VHCA_CMD_QUERY_PORT]		= "QUERY_PORT",
		[VHCA_CMD_ADD_GID]		= "ADD_GID",
		[VHCA_CMD_DEL_GID]		= "DEL_GID",
		[VHCA_CMD_SET_MAC]		= "SET_MAC",
		[VHCA_CMD_SET_MTU]		= "SET_MTU",
		[VHCA_CMD_ALLOC_UCTX]		= "ALLOC_UCTX",
		[VHCA_CMD_DEALLOC_UCTX]		= "DEALLOC_UCTX",
		[VHCA_CMD_SET_RX_FILTER]	= "SET_RX_FILTER",
		[VHCA_CMD_CREATE_PD]		= "CREATE_PD",
		[VHCA_CMD_DESTROY_PD]		= "DESTROY_PD",
		[VHCA_CMD_CREATE_MR]		= "CREATE_MR",
		[VHCA_CMD_DESTROY_MR]		= "DESTROY_MR",
		[VHCA_CMD_CREATE_EQ]		= "CREATE_EQ",
		[VHCA_CMD_DESTROY_EQ]		= "DESTROY_EQ",
		[VHCA_CMD_CREATE_CQ]		= "CREATE_CQ",
		[VHCA_CMD_DESTROY_CQ]		= "DESTROY_CQ",
		[VHCA_CMD_CREATE_QP]		= "CREATE_QP",
		[VHCA_CMD_MODIFY_QP]		= "MODIFY_QP",
		[VHCA_CMD_QUERY_QP]		= "QUERY_QP",
		[VHCA_CMD_DESTROY_QP]		= "DESTROY_QP",
		[VHCA_CMD_ATTACH_MCAST]		= "ATTACH_MCAST",
		[VHCA_CMD_DETACH_MCAST]		= "DETACH_MCAST",
		[VHCA_CMD_CREATE_SRQ]		= "CREATE_SRQ",
		[VHCA_CMD_MODIFY_SRQ]		= "MODIFY_SRQ",
		[VHCA_CMD_QUERY_SRQ]		= "QUERY_SRQ",
		[VHCA_CMD_DESTROY_SRQ]		= "DESTROY_SRQ",
		[VHCA_CMD_RESIZE_CQ]		= "RESIZE_CQ",
		[VHCA_CMD_ALLOC_XRCD]		= "ALLOC_XRCD",
		[VHCA_CMD_DEALLOC_XRCD]		= "DEALLOC_XRCD",
		[VHCA_CMD_ALLOC_MW]		= "ALLOC_MW",
		[VHCA_CMD_DEALLOC_MW]		= "DEALLOC_MW",
		[VHCA_CMD_MAD_IFC]		= "MAD_IFC",
		[VHCA_CMD_MODIFY_PORT]		= "MODIFY_PORT",
		[VHCA_CMD_SET_CC]		= "SET_CC",
		[VHCA_CMD_QUERY_CC]		= "QUERY_CC",
	};

	return opcode < VHCA_CMD_MAX && names[opcode] ? names[opcode] :
							 "UNKNOWN";
}

/* Admin command status. */
enum vhca_admin_status {
	VHCA_ST_OK				= 0x00,
	VHCA_ST_BAD_OPCODE			= 0x01,	/* unknown opcode */
	VHCA_ST_BAD_PARAM			= 0x02,	/* field out of range */
	VHCA_ST_BAD_INDEX			= 0x03,	/* table index out of range */
	VHCA_ST_BAD_ADDR			= 0x04,	/* DMA to/from guest failed */
	VHCA_ST_NO_RESOURCES			= 0x05,	/* table full */
	VHCA_ST_BAD_STATE			= 0x06,	/* object not in usable state */
	VHCA_ST_BUSY				= 0x07,	/* object in use */
	VHCA_ST_MAX
};

static inline const char *vhca_admin_status_name(unsigned int status)
{
	static const char * const names[VHCA_ST_MAX] = {
		[VHCA_ST_OK]			= "OK",
		[VHCA_ST_BAD_OPCODE]		= "BAD_OPCODE",
		[VHCA_ST_BAD_PARAM]		= "BAD_PARAM",
		[VHCA_ST_BAD_INDEX]		= "BAD_INDEX",
		[VHCA_ST_BAD_ADDR]		= "BAD_ADDR",
		[VHCA_ST_NO_RESOURCES]		= "NO_RESOURCES",
		[VHCA_ST_BAD_STATE]		= "BAD_STATE",
		[VHCA_ST_BUSY]			= "BUSY",
	};

	return status < VHCA_ST_MAX ? names[status] : "UNKNOWN";
}

/* VHCA_CMD_QUERY_DEVICE: in = struct vhca_cmd_dma_in; out buffer below. */
struct vhca_cmd_dma_in {
	vhca_le64 addr;			/* guest buffer, device writes it */
	vhca_le32 len;			/* bytes available at addr */
	vhca_le32 rsvd;
};

struct vhca_device_attr {
	vhca_le64 fw_version;		/* major << 32 | minor << 16 | sub */
	vhca_le64 sys_image_guid;	/* EUI-64 from the MAC */
	vhca_le64 node_guid;
	vhca_le64 max_mr_size;
	vhca_le64 page_size_cap;	/* bitmask of supported page sizes */
	vhca_le32 vendor_id;		/* the PCI vendor ID, 0x1af4 */
	vhca_le32 vendor_part_id;
	vhca_le32 hw_ver;
	vhca_le32 max_qp;
	vhca_le32 max_qp_wr;
	vhca_le32 max_sge;
	vhca_le32 max_cq;
	vhca_le32 max_cqe;
	vhca_le32 max_mr;
	vhca_le32 max_pd;
	vhca_le32 max_qp_rd_atom;
	vhca_le32 max_qp_init_rd_atom;
	vhca_le32 max_srq;
	vhca_le32 max_srq_wr;
	vhca_le32 max_srq_sge;
	vhca_le32 max_msg_size;
	vhca_le32 max_inline_data;
	vhca_le32 max_uctx;		/* doorbell pages */
	vhca_le32 num_comp_vectors;
	vhca_le32 gid_tbl_len;
	vhca_le32 max_pkeys;
	vhca_le32 cap_flags;		/* VHCA_DEV_CAP_* */
	vhca_le32 max_xrcd;		/* XRC domains, 0: no XRC */
	vhca_le32 max_mw;		/* memory windows, 0: none */
	vhca_le32 rsvd[30];		/* room to grow: 256 bytes */
};

/*
 * QUERY_DEVICE cap_flags: optional operations the device executes, as
 * requester and responder.  IBTA 1.5 memory placement extensions: RDMA
 * FLUSH of the global visibility placement type and ATOMIC WRITE.
 */
#define VHCA_DEV_CAP_FLUSH_GLOBAL	(1u << 0)
#define VHCA_DEV_CAP_ATOMIC_WRITE	(1u << 1)

/* VHCA_CMD_QUERY_PORT: in.port (1); out = struct vhca_port_attr. */
struct vhca_cmd_port_in {
	vhca_u8 port;
	vhca_u8 rsvd[31];
};

enum vhca_port_state {			/* IBTA Vol 1, 14.2.5.6 PortState */
	VHCA_PORT_DOWN			= 1,
	VHCA_PORT_INIT			= 2,
	VHCA_PORT_ARMED			= 3,
	VHCA_PORT_ACTIVE		= 4,
};

enum vhca_port_phys_state {		/* PortPhysicalState */
	VHCA_PORT_PHYS_POLLING		= 2,
	VHCA_PORT_PHYS_DISABLED		= 3,
	VHCA_PORT_PHYS_LINK_UP		= 5,
};

enum vhca_ib_mtu {			/* IBTA MTU encoding */
	VHCA_IB_MTU_256			= 1,
	VHCA_IB_MTU_512			= 2,
	VHCA_IB_MTU_1024		= 3,
	VHCA_IB_MTU_2048		= 4,
	VHCA_IB_MTU_4096		= 5,
};

/* The encoding of a path MTU of @bytes (256 << n, up to 4096), or 0. */
static inline unsigned int vhca_ib_mtu_from_bytes(unsigned int bytes)
{
	unsigned int mtu;

	for (mtu = VHCA_IB_MTU_256; mtu <= VHCA_IB_MTU_4096; mtu++)
		if (bytes == 128u << mtu)
			return mtu;
	return 0;
}

struct vhca_port_attr {
	vhca_u8 state;			/* enum vhca_port_state */
	vhca_u8 phys_state;		/* enum vhca_port_phys_state */
	vhca_u8 max_mtu;		/* enum vhca_ib_mtu */
	vhca_u8 active_mtu;		/* from the Ethernet MTU */
	vhca_u8 active_speed;		/* IB speed code (IB_SPEED_*) */
	vhca_u8 active_width;		/* IB width code (IB_WIDTH_*) */
	vhca_le16 gid_tbl_len;
	vhca_le32 eth_mtu;		/* current Ethernet MTU in bytes; IB: 0 */
	vhca_le32 rsvd;
};

/*
 * InfiniBand port (VHCA_CAP_IB): the MAD interface.  The device holds a
 * subnet management agent (IBTA 14.2: the SMP attributes of an HCA port)
 * and a performance management agent (16.1: PortCounters,
 * PortCountersExtended, ClassPortInfo), and answers a MAD the way a
 * real HCA's firmware does for the kernel's process_mad(): the driver
 * hands it every MAD that reaches QP0 or QP1 for these classes, and the
 * MADs it makes itself to learn the port's state (query_port, query_pkey,
 * query_gid).
 *
 * VHCA_CMD_MAD_IFC: in = struct vhca_cmd_dma_in naming a struct
 * vhca_mad_ifc mailbox; the device reads its header and in_mad and
 * writes out_mad.  out[0] of the command = VHCA_MAD_RESULT_* bits: 0
 * means the device does not handle this MAD (another agent, such as a
 * subnet manager in user space, will).  A MAD the agent refuses (bad
 * version, method, attribute, M_Key) is answered with the MAD status
 * IBTA 13.4.7 defines, as on hardware; the command itself fails only
 * for a bad mailbox or port (BAD_ADDR, BAD_PARAM).
 */
#define VHCA_MAD_SIZE			256

struct vhca_mad_ifc {
	vhca_u8 port;			/* 1 */
	vhca_u8 flags;			/* VHCA_MAD_IFC_* */
	vhca_u8 sl;			/* the SL it arrived on (in_wc) */
	vhca_u8 rsvd0;
	vhca_le16 slid;			/* source LID (in_wc), 0: none */
	vhca_le16 pkey_index;		/* its P_Key index (in_wc) */
	vhca_le32 src_qp;		/* 0 or 1 (in_wc) */
	vhca_u8 rsvd1[20];
	vhca_u8 in_mad[VHCA_MAD_SIZE];	/* the MAD, network byte order */
	vhca_u8 out_mad[VHCA_MAD_SIZE];	/* the response, if REPLY */
};

/* The MAD has no work completion: made on this node (mlx4: no in_wc). */
#define VHCA_MAD_IFC_LOCAL		(1u << 0)
/* Skip the M_Key check (IB_MAD_IGNORE_MKEY: the driver's own query). */
#define VHCA_MAD_IFC_IGNORE_MKEY	(1u << 1)

enum vhca_mad_result {
	VHCA_MAD_RESULT_REPLY		= 1u << 0,	/* send out_mad back */
	VHCA_MAD_RESULT_CONSUMED	= 1u << 1,	/* nobody else gets it */
};

/*
 * VHCA_CMD_MODIFY_PORT: what ib_modify_port() may change in PortInfo
 * (IBTA 14.2.5.6) that the SM may not: CapabilityMask bits (IsSM when
 * a subnet manager opens the port, ...), and Q_Key violation counter
 * reset.  The set bits are applied after the clear bits.
 */
struct vhca_cmd_modify_port_in {
	vhca_u8 port;			/* 1 */
	vhca_u8 flags;			/* VHCA_MODIFY_PORT_* */
	vhca_le16 rsvd0;
	vhca_le32 set_cap_mask;		/* PortInfo CapabilityMask bits */
	vhca_le32 clr_cap_mask;
	vhca_u8 rsvd[20];
};

#define VHCA_MODIFY_PORT_RESET_QKEY_CNTR	(1u << 0)

/*
 * VHCA_CMD_SET_CC, VHCA_CMD_QUERY_CC: RoCE congestion control
 * (docs/specs/vhca.rst, "Congestion control").  in = struct
 * vhca_cmd_dma_in naming a struct vhca_cc_config mailbox, which SET_CC
 * reads and QUERY_CC writes.  flags turn on ECN-capable transmission,
 * the notification point (CNPs for CE-marked packets) and the reaction
 * point (DCQCN rate control on CNPs); params[] holds DCQCN's parameters
 * in mlx5's units, indexed by enum vhca_cc_param.  SET_CC refuses the
 * whole set (BAD_PARAM, nothing changes) for a reserved flag (syndrome:
 * the flags) or a parameter out of its range (syndrome: its index);
 * entries past VHCA_CC_PARAM_MAX are reserved, ignored and read as 0.
 * After reset: flags 0, every parameter its default.
 *
 * QUERY_CC writes a struct vhca_cc_query: the configuration, then the
 * congestion counters (enum vhca_cc_counter), which do not fit in the
 * BAR0 counter window; mlx5 likewise reads them with a command of their
 * own (QUERY_CONG_STATISTICS).  Reset clears them.
 */
#define VHCA_CC_ECN_TX			(1u << 0)	/* send RoCE as ECT(0) */
#define VHCA_CC_NP			(1u << 1)	/* answer CE with CNPs */
#define VHCA_CC_RP			(1u << 2)	/* react to CNPs (DCQCN) */

enum vhca_cc_param {			/* mlx5's cc_params names and units */
	VHCA_CC_PARAM_RP_CLAMP_TGT_RATE		= 0,
	VHCA_CC_PARAM_RP_CLAMP_TGT_RATE_ATI	= 1,
	VHCA_CC_PARAM_RP_TIME_RESET		= 2,	/* us */
	VHCA_CC_PARAM_RP_BYTE_RESET		= 3,	/* bytes */
	VHCA_CC_PARAM_RP_THRESHOLD		= 4,
	VHCA_CC_PARAM_RP_AI_RATE		= 5,	/* Mbit/s */
	VHCA_CC_PARAM_RP_MAX_RATE		= 6,	/* Mbit/s, 0: line */
	VHCA_CC_PARAM_RP_HAI_RATE		= 7,	/* Mbit/s */
	VHCA_CC_PARAM_RP_MIN_DEC_FAC		= 8,	/* % */
	VHCA_CC_PARAM_RP_MIN_RATE		= 9,	/* Mbit/s */
	VHCA_CC_PARAM_RP_RATE_TO_SET_ON_FIRST_CNP = 10,	/* Mbit/s */
	VHCA_CC_PARAM_RP_DCE_TCP_G		= 11,	/* 1/1024 */
	VHCA_CC_PARAM_RP_DCE_TCP_RTT		= 12,	/* us */
	VHCA_CC_PARAM_RP_RATE_REDUCE_MONITOR_PERIOD = 13,	/* us */
	VHCA_CC_PARAM_RP_INITIAL_ALPHA_VALUE	= 14,	/* 1/1024 */
	VHCA_CC_PARAM_RP_GD			= 15,
	VHCA_CC_PARAM_NP_MIN_TIME_BETWEEN_CNPS	= 16,	/* us */
	VHCA_CC_PARAM_NP_CNP_DSCP		= 17,
	VHCA_CC_PARAM_NP_CNP_PRIO_MODE		= 18,
	VHCA_CC_PARAM_NP_CNP_PRIO		= 19,
	VHCA_CC_PARAM_MAX
};

/* The parameters' names: mlx5's cc_params files, the guest's devlink's. */
static inline const char *vhca_cc_param_name(unsigned int param)
{
	static const char * const names[VHCA_CC_PARAM_MAX] = {
		[VHCA_CC_PARAM_RP_CLAMP_TGT_RATE]	= "rp_clamp_tgt_rate",
		[VHCA_CC_PARAM_RP_CLAMP_TGT_RATE_ATI]	= "rp_clamp_tgt_rate_ati",
		[VHCA_CC_PARAM_RP_TIME_RESET]		= "rp_time_reset",
		[VHCA_CC_PARAM_RP_BYTE_RESET]		= "rp_byte_reset",
		[VHCA_CC_PARAM_RP_THRESHOLD]		= "rp_threshold",
		[VHCA_CC_PARAM_RP_AI_RATE]		= "rp_ai_rate",
		[VHCA_CC_PARAM_RP_MAX_RATE]		= "rp_max_rate",
		[VHCA_CC_PARAM_RP_HAI_RATE]		= "rp_hai_rate",
		[VHCA_CC_PARAM_RP_MIN_DEC_FAC]		= "rp_min_dec_fac",
		[VHCA_CC_PARAM_RP_MIN_RATE]		= "rp_min_rate",
		[VHCA_CC_PARAM_RP_RATE_TO_SET_ON_FIRST_CNP] =
			"rp_rate_to_set_on_first_cnp",
		[VHCA_CC_PARAM_RP_DCE_TCP_G]		= "rp_dce_tcp_g",
		[VHCA_CC_PARAM_RP_DCE_TCP_RTT]		= "rp_dce_tcp_rtt",
		[VHCA_CC_PARAM_RP_RATE_REDUCE_MONITOR_PERIOD] =
			"rp_rate_reduce_monitor_period",
		[VHCA_CC_PARAM_RP_INITIAL_ALPHA_VALUE]	= "rp_initial_alpha_value",
		[VHCA_CC_PARAM_RP_GD]			= "rp_gd",
		[VHCA_CC_PARAM_NP_MIN_TIME_BETWEEN_CNPS] =
			"np_min_time_between_cnps",
		[VHCA_CC_PARAM_NP_CNP_DSCP]		= "np_cnp_dscp",
		[VHCA_CC_PARAM_NP_CNP_PRIO_MODE]	= "np_cnp_prio_mode",
		[VHCA_CC_PARAM_NP_CNP_PRIO]		= "np_cnp_prio",
	};

	return param < VHCA_CC_PARAM_MAX ? names[param] : "unknown";
}

#define VHCA_CC_PARAMS_LEN		28	/* params[]: room to grow */

struct vhca_cc_config {
	vhca_le32 flags;		/* VHCA_CC_* */
	vhca_u8 pfc_enable;		/* bit i: PFC on for priority i */
	vhca_u8 rsvd0[3];
	vhca_le32 rsvd[2];
	vhca_le32 params[VHCA_CC_PARAMS_LEN];	/* by enum vhca_cc_param */
};

/* Congestion counters, named as mlx5 names them (counters.c). */
enum vhca_cc_counter {
	VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS	= 0,	/* received CE */
	VHCA_CC_CNT_NP_CNP_SENT			= 1,
	VHCA_CC_CNT_RP_CNP_HANDLED		= 2,	/* with the RP on */
	VHCA_CC_CNT_RP_CNP_IGNORED		= 3,	/* with the RP off */
	VHCA_CC_CNT_RP_RATE_DECREASES		= 4,	/* DCQCN rate cuts */
	/* An RC requester's loss back-off (IBTA 9.7.6.1.3 for the timer) */
	VHCA_CC_CNT_REQ_WINDOW_CUTS		= 5,	/* window cut: loss */
	VHCA_CC_CNT_REQ_TIMER_BACKOFFS		= 6,	/* ACK timer doubled */
	VHCA_CC_CNT_MAX
};

static inline const char *vhca_cc_counter_name(unsigned int counter)
{
	static const char * const names[VHCA_CC_CNT_MAX] = {
		[VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS] =
			"np_ecn_marked_roce_packets",
		[VHCA_CC_CNT_NP_CNP_SENT]	= "np_cnp_sent",
		[VHCA_CC_CNT_RP_CNP_HANDLED]	= "rp_cnp_handled",
		[VHCA_CC_CNT_RP_CNP_IGNORED]	= "rp_cnp_ignored",
		[VHCA_CC_CNT_RP_RATE_DECREASES]	= "rp_rate_decreases",
		[VHCA_CC_CNT_REQ_WINDOW_CUTS]	= "req_window_cuts",
		[VHCA_CC_CNT_REQ_TIMER_BACKOFFS] = "req_timer_backoffs",
	};

	return counter < VHCA_CC_CNT_MAX ? names[counter] : "unknown";
}

#define VHCA_CC_COUNTERS_LEN		16	/* counters[]: room to grow */

/*
 * Priority flow control counters (IEEE 802.1Qbb), one per priority each,
 * named as mlx5's ethtool -S names them (rx_prio%d_pause, ...); the
 * durations are in microseconds, as mlx5's PPCNT reports them.
 */
enum vhca_pfc_counter {
	VHCA_PFC_CNT_RX_PAUSE			= 0,	/* PFC frames naming it */
	VHCA_PFC_CNT_RX_PAUSE_DURATION		= 1,	/* us it was paused */
	VHCA_PFC_CNT_RX_PAUSE_TRANSITION	= 2,	/* paused -> sending */
	VHCA_PFC_CNT_TX_PAUSE			= 3,	/* PFC frames we sent */
	VHCA_PFC_CNT_TX_PAUSE_DURATION		= 4,	/* us we held it off */
	VHCA_PFC_CNT_MAX
};

/* The counter's name as a printf format: %u takes the priority. */
static inline const char *vhca_pfc_counter_name(unsigned int counter)
{
	static const char * const names[VHCA_PFC_CNT_MAX] = {
		[VHCA_PFC_CNT_RX_PAUSE]		= "rx_prio%u_pause",
		[VHCA_PFC_CNT_RX_PAUSE_DURATION] = "rx_prio%u_pause_duration",
		[VHCA_PFC_CNT_RX_PAUSE_TRANSITION] =
			"rx_prio%u_pause_transition",
		[VHCA_PFC_CNT_TX_PAUSE]		= "tx_prio%u_pause",
		[VHCA_PFC_CNT_TX_PAUSE_DURATION] = "tx_prio%u_pause_duration",
	};

	return counter < VHCA_PFC_CNT_MAX ? names[counter] : "unknown%u";
}

#define VHCA_PFC_COUNTERS_LEN		8	/* pfc[]: room to grow */

struct vhca_cc_query {
	struct vhca_cc_config config;
	vhca_le64 counters[VHCA_CC_COUNTERS_LEN];	/* vhca_cc_counter */
	/* [enum vhca_pfc_counter][priority]: VHCA_PFC_PRIORITIES of them */
	vhca_le64 pfc[VHCA_PFC_COUNTERS_LEN][8];
	vhca_le64 pfc_dropped;		/* malformed MAC control frames */
	vhca_u8 pfc_paused;		/* bit i: priority i paused now */
	vhca_u8 rsvd1[55];
};

/* PortInfo CapabilityMask bits the driver may set (IBTA 14.2.5.6). */
#define VHCA_PORT_CAP_MODIFIABLE	0x7f7f7ffeu

/*
 * IB port tables (docs/specs/vhca.rst, "InfiniBand port"): P_Key table
 * entries (NodeInfo PartitionCap, QUERY_DEVICE max_pkeys), GUIDs
 * (PortInfo GUIDCap), LMC at most 7 (IBTA 7.11.1).
 */
#define VHCA_IB_PKEY_TBL_LEN		128
#define VHCA_IB_GUID_TBL_LEN		1
#define VHCA_IB_MAX_LMC			7

/* VHCA_CMD_ADD_GID / VHCA_CMD_DEL_GID (DEL ignores gid and type). */
enum vhca_gid_type {
	VHCA_GID_TYPE_ROCE_V2_IPV4	= 1,	/* ::ffff:a.b.c.d */
	VHCA_GID_TYPE_ROCE_V2_IPV6	= 2,
	VHCA_GID_TYPE_IB		= 3,	/* IB port: prefix:port GUID */
};

/*
 * The GID's 802.1Q VLAN (docs/specs/vhca.rst, "RoCE over a VLAN"): the
 * entry belongs to a VLAN interface when VHCA_GID_VLAN_TAGGED is set,
 * VID in the low 12 bits (not 4095, IEEE 802.1Q Table 9-2); 0 for an
 * untagged entry.  Other bits are reserved (0).
 */
#define VHCA_GID_VLAN_TAGGED		0x8000

struct vhca_cmd_gid_in {
	vhca_le16 index;		/* < gid_tbl_len */
	vhca_u8 port;			/* 1 */
	vhca_u8 type;			/* enum vhca_gid_type */
	vhca_le16 vlan;			/* VHCA_GID_VLAN_TAGGED | VID, or 0 */
	vhca_le16 rsvd;
	vhca_u8 gid[16];		/* network byte order */
	vhca_u8 rsvd1[8];
};

/* VHCA_CMD_SET_MAC */
struct vhca_cmd_mac_in {
	vhca_u8 mac[6];			/* unicast, not all-zero */
	vhca_u8 rsvd[26];
};

/* VHCA_CMD_SET_MTU */
#define VHCA_MIN_MTU			68
#define VHCA_MAX_MTU			9000
struct vhca_cmd_mtu_in {
	vhca_le32 mtu;			/* Ethernet payload, VHCA_MIN..MAX_MTU */
	vhca_u8 rsvd[28];
};

/*
 * VHCA_CMD_ALLOC_UCTX: out = struct vhca_cmd_uctx_out, the index of a
 * free doorbell page in BAR2.  VHCA_CMD_DEALLOC_UCTX: in = that index.
 */
struct vhca_cmd_uctx_in {
	vhca_le32 db_page;
	vhca_u8 rsvd[28];
};

struct vhca_cmd_uctx_out {
	vhca_le32 db_page;
	vhca_u8 rsvd[12];
};

/* ---------------------------------------------------------------------- */
/* RDMA resources (docs/specs/vhca.rst, "RDMA resources")                 */
/* ---------------------------------------------------------------------- */

/*
 * Every RDMA resource command takes its input from a mailbox: in =
 * struct vhca_cmd_dma_in naming a guest buffer that holds the command's
 * structure below; MODIFY/QUERY_QP write their output back into it.
 * Objects are named by a 24-bit number the device returns in out[0..3]
 * (struct vhca_cmd_obj_out); DESTROY_* take struct vhca_cmd_obj_in.
 */
struct vhca_cmd_obj_in {
	vhca_le32 handle;		/* pdn, lkey, eqn, cqn or qpn */
	vhca_u8 rsvd[28];
};

struct vhca_cmd_obj_out {
	vhca_le32 handle;
	vhca_le32 key;			/* CREATE_MR: lkey == rkey */
	vhca_u8 rsvd[8];
};

/* Owner of a queue: the doorbell page whose writes may ring it. */
#define VHCA_DB_PAGE_KERNEL_NONE	0xffffffffu

/*
 * Page lists.  A queue or region is a set of pages of 2^page_shift bytes
 * (4 KiB for queues).  pbl_addr points to an array of npages u64 guest
 * physical page addresses (level 1), or, when pbl_levels == 2, to an array
 * of u64 addresses of 4 KiB pages that each hold 512 such entries.  The
 * array itself is contiguous and at most 4 KiB at level 2, at most
 * 32 KiB (4096 entries) at level 1.
 */
#define VHCA_PBL_ENTRIES_PER_PAGE	512
#define VHCA_PBL_MAX_L1_ENTRIES		4096

/* Access flags: the values of enum ib_access_flags / ibv_access_flags. */
#define VHCA_ACCESS_LOCAL_WRITE		(1u << 0)
#define VHCA_ACCESS_REMOTE_WRITE	(1u << 1)
#define VHCA_ACCESS_REMOTE_READ		(1u << 2)
#define VHCA_ACCESS_REMOTE_ATOMIC	(1u << 3)
#define VHCA_ACCESS_MW_BIND		(1u << 4)
#define VHCA_ACCESS_ZERO_BASED		(1u << 5)
#define VHCA_ACCESS_FLUSH_GLOBAL	(1u << 8)
#define VHCA_ACCESS_FLUSH_PERSISTENT	(1u << 9)

/* CREATE_MR flags */
#define VHCA_MR_PHYS			(1u << 0)	/* kernel DMA MR: iova = guest physical */
#define VHCA_MR_AT_INDEX		(1u << 1)	/* create at index mrn (reregister) */
/*
 * Fast-register MR (IBTA 10.6.3.2, 10.7; Linux IB_MR_TYPE_MEM_REG): no
 * page list at create, npages = the most pages a REG_MR WQE may map
 * (1..VHCA_FAST_REG_MAX_PAGES); free until a REG_MR WQE makes it valid.
 */
#define VHCA_MR_FAST_REG		(1u << 2)
/* Pages one REG_MR WQE maps: its level 1 list fills one 4 KiB page. */
#define VHCA_FAST_REG_MAX_PAGES		512

struct vhca_mr_create {
	vhca_le32 pdn;
	vhca_le32 access;		/* VHCA_ACCESS_* */
	vhca_le64 iova;			/* any value; need not be page aligned */
	vhca_le64 length;
	vhca_le64 pbl_addr;
	vhca_le32 npages;
	vhca_u8 page_shift;		/* 12..30 */
	vhca_u8 pbl_levels;		/* 1 or 2 */
	vhca_le16 flags;		/* VHCA_MR_* */
	vhca_le32 offset;		/* iova's offset in the first page */
	vhca_le32 key_tag;		/* low 8 bits: the key byte to use */
	vhca_le32 mrn;			/* VHCA_MR_AT_INDEX: the index to take */
	vhca_u8 rsvd[12];
};

/*
 * ALLOC_MW: a memory window (IBTA 10.6.7) in PD pdn, in `in`.  Its key
 * is index << 8 | key_tag, from the MR table's index space: keys of MRs
 * and windows never collide.  out = struct vhca_cmd_obj_out.
 */
enum vhca_mw_type {			/* the values of enum ib_mw_type */
	VHCA_MW_TYPE_1			= 1,
	VHCA_MW_TYPE_2			= 2,	/* type 2B: bound to one QP */
};

struct vhca_cmd_mw_in {
	vhca_le32 pdn;
	vhca_u8 type;			/* enum vhca_mw_type */
	vhca_u8 rsvd0[3];
	vhca_le32 key_tag;		/* low 8 bits: the first key's tag */
	vhca_u8 rsvd[20];
};

/* CREATE_EQ: a completion event queue on MSI-X vector >= 2. */
struct vhca_eq_create {
	vhca_le64 pbl_addr;		/* level 1, pages of 4 KiB */
	vhca_le32 npages;
	vhca_u8 log_size;		/* entries of struct vhca_eqe */
	vhca_u8 rsvd0[3];
	vhca_le32 vector;		/* VHCA_VECTOR_FIRST_COMP .. vectors-1 */
	vhca_u8 rsvd[12];
};

/* A completion EQ's doorbell: BAR0, one register per EQ. */
#define VHCA_REG_EQ_DB(eqn)		(0x400 + 4 * (eqn))	/* WO CI | ARM */
#define VHCA_MAX_COMP_EQS		62

struct vhca_cq_create {
	vhca_le64 pbl_addr;		/* level 1, pages of 4 KiB */
	vhca_le32 npages;
	vhca_u8 log_size;		/* entries of struct vhca_cqe, 1..16 */
	vhca_u8 rsvd0[3];
	vhca_le32 eqn;			/* completion EQ for its events */
	vhca_le32 db_page;		/* owner page, or ..._KERNEL_NONE */
	vhca_le64 dbrec_addr;		/* u32 consumer index the driver writes */
	vhca_u8 rsvd[32];
};

/*
 * RESIZE_CQ: move a live CQ to a new ring.  The CQEs not yet consumed
 * (the doorbell record's index up to the producer's) move to indices
 * 0, 1, ... of the new ring; the producer index becomes their count
 * (out[0..3]), the consumer index 0, and the device writes 0 to the
 * doorbell record.  The consumer restarts at index 0 of the new ring.
 */
struct vhca_cq_resize {
	vhca_le32 cqn;
	vhca_u8 log_size;		/* entries of the new ring, 1..16 */
	vhca_u8 rsvd0[3];
	vhca_le64 pbl_addr;		/* level 1, pages of 4 KiB */
	vhca_le32 npages;
	vhca_u8 rsvd[44];
};

enum vhca_qp_type {
	/*
	 * The General Services QP (IBTA 13.4.6): a UD QP whose number is
	 * always 1, one per device, that accepts only the Q_Key 0x80010000.
	 * RoCE has no Subnet Management QP 0 (annex A16/A17): QP type SMI
	 * exists only on the IB port, one per device, UD on VL15 (IBTA
	 * 14.2.4.1), with no Q_Key or P_Key check on receive.  CREATE_QP
	 * gives it an ordinary handle, which its doorbells, commands and
	 * CQEs use; on the wire it is QP0 (VHCA_SMI_QPN), as mlx4's
	 * special QPs are.
	 */
	VHCA_QPT_SMI			= 0,	/* IB_QPT_SMI */
	VHCA_QPT_GSI			= 1,	/* IB_QPT_GSI */
	VHCA_QPT_RC			= 2,	/* IB_QPT_RC */
	VHCA_QPT_UC			= 3,
	VHCA_QPT_UD			= 4,
	/*
	 * eXtended Reliable Connected (IBTA annex A14): the initiator has a
	 * send queue only and names the target's XRC SRQ in each request;
	 * the target has no queues and no CQs, and belongs to an XRC domain.
	 */
	VHCA_QPT_XRC_INI		= 9,	/* IB_QPT_XRC_INI */
	VHCA_QPT_XRC_TGT		= 10,	/* IB_QPT_XRC_TGT */
};

struct vhca_qp_create {
	vhca_u8 type;			/* enum vhca_qp_type */
	vhca_u8 sq_log_size;		/* send WQEs, 1..14 */
	vhca_u8 rq_log_size;		/* receive WQEs, 1..14 */
	vhca_u8 sq_sig_all;
	vhca_le32 pdn;
	vhca_le32 send_cqn;
	vhca_le32 recv_cqn;
	vhca_le64 sq_pbl_addr;		/* level 1, pages of 4 KiB */
	vhca_le64 rq_pbl_addr;
	vhca_le32 sq_npages;
	vhca_le32 rq_npages;
	vhca_le32 db_page;		/* owner page, or ..._KERNEL_NONE */
	vhca_le32 srqn;			/* 0, or the SRQ it receives from */
	vhca_le32 xrcdn;		/* XRC_TGT: its XRC domain; else 0 */
	vhca_u8 rsvd[12];
};

/*
 * Shared receive queue (IBTA 10.2.9): a ring of struct vhca_recv_wqe
 * that the QPs created with its srqn take their receive WQEs from, in
 * ring order.  The SRQ doorbell carries the new producer index; after
 * taking a WQE the device writes the count of WQEs taken (free running)
 * to the u32 at ci_addr, so the consumer knows which slots are free.
 */
struct vhca_srq_create {
	vhca_le32 pdn;			/* receive buffers are checked in it */
	vhca_le32 db_page;		/* owner page, or ..._KERNEL_NONE */
	vhca_le64 pbl_addr;		/* level 1, pages of 4 KiB */
	vhca_le32 npages;
	vhca_u8 log_size;		/* receive WQEs, 1..14 */
	vhca_u8 rsvd0[3];
	vhca_le64 ci_addr;		/* u32 the device writes: WQEs taken */
	vhca_le32 limit;		/* 0, or armed at this (srq_limit) */
	vhca_u8 type;			/* enum vhca_srq_type */
	vhca_u8 rsvd1[3];
	vhca_le32 xrcdn;		/* XRC: its XRC domain; else 0 */
	vhca_le32 cqn;			/* XRC: the CQ of its completions */
	vhca_u8 rsvd[16];
};

/* SRQ types: the values of enum ib_srq_type (IBTA 10.2.9, annex A14). */
enum vhca_srq_type {
	VHCA_SRQT_BASIC			= 0,	/* its QPs name it at CREATE_QP */
	VHCA_SRQT_XRC			= 1,	/* XRC requests name it (XRCETH) */
};

/* MODIFY_SRQ attribute mask: the values of enum ib_srq_attr_mask. */
#define VHCA_SRQ_MAX_WR			(1u << 0)	/* resize */
#define VHCA_SRQ_LIMIT			(1u << 1)	/* arm the limit */

/* MODIFY_SRQ / QUERY_SRQ mailbox (64 bytes). */
struct vhca_srq_attr {
	vhca_le32 srqn;
	vhca_le32 attr_mask;		/* VHCA_SRQ_* (MODIFY only) */
	vhca_le32 limit;		/* LIMIT: arm at it, 0 disarms */
	vhca_u8 log_size;		/* MAX_WR: the new ring's; QUERY: now */
	vhca_u8 rsvd0[3];
	vhca_le64 pbl_addr;		/* MAX_WR: the new ring's page list */
	vhca_le32 npages;
	vhca_le32 wqes;			/* QUERY: posted and not yet taken */
	vhca_u8 rsvd[32];
};

/* QP1 (GSI) and its well-known Q_Key (IBTA 13.4.6.1). */
#define VHCA_GSI_QPN			1
#define VHCA_GSI_QKEY			0x80010000u
/* A send WR's Q_Key with this bit set means "the QP's" (IBTA 10.2.5). */
#define VHCA_QKEY_CONTROLLED		0x80000000u
/* BTH DestQP of a multicast packet (IBTA 9.2, 10.5.2.1). */
#define VHCA_MCAST_QPN			0xffffffu
/*
 * IB port: the address vector has a GRH (IBTA 8.3: the dgid,
 * sgid_index, hop_limit, traffic_class and flow_label are used); without
 * it the packet carries the LRH alone and those fields are ignored.
 */
#define VHCA_AH_GRH			(1u << 0)
/* IB port: the Subnet Management QP's number on the wire (14.2.4.1). */
#define VHCA_SMI_QPN			0
/* UD: the 40 bytes at the head of each receive buffer (IBTA 11.4.1.1). */
#define VHCA_GRH_AREA_LEN		40

/* QP states: the values of enum ib_qp_state (IBTA 10.3.1). */
enum vhca_qp_state {
	VHCA_QPS_RESET			= 0,
	VHCA_QPS_INIT			= 1,
	VHCA_QPS_RTR			= 2,
	VHCA_QPS_RTS			= 3,
	VHCA_QPS_SQD			= 4,
	VHCA_QPS_SQE			= 5,
	VHCA_QPS_ERR			= 6,
};

/* MODIFY_QP attribute mask: the values of enum ib_qp_attr_mask. */
#define VHCA_QP_STATE			(1u << 0)
#define VHCA_QP_CUR_STATE		(1u << 1)
#define VHCA_QP_EN_SQD_ASYNC_NOTIFY	(1u << 2)
#define VHCA_QP_ACCESS_FLAGS		(1u << 3)
#define VHCA_QP_PKEY_INDEX		(1u << 4)
#define VHCA_QP_PORT			(1u << 5)
#define VHCA_QP_QKEY			(1u << 6)
#define VHCA_QP_AV			(1u << 7)
#define VHCA_QP_PATH_MTU		(1u << 8)
#define VHCA_QP_TIMEOUT			(1u << 9)
#define VHCA_QP_RETRY_CNT		(1u << 10)
#define VHCA_QP_RNR_RETRY		(1u << 11)
#define VHCA_QP_RQ_PSN			(1u << 12)
#define VHCA_QP_MAX_QP_RD_ATOMIC	(1u << 13)
#define VHCA_QP_ALT_PATH		(1u << 14)
#define VHCA_QP_MIN_RNR_TIMER		(1u << 15)
#define VHCA_QP_SQ_PSN			(1u << 16)
#define VHCA_QP_MAX_DEST_RD_ATOMIC	(1u << 17)
#define VHCA_QP_PATH_MIG_STATE		(1u << 18)
#define VHCA_QP_CAP			(1u << 19)
#define VHCA_QP_DEST_QPN		(1u << 20)

/* MODIFY_QP / QUERY_QP mailbox (128 bytes). */
struct vhca_qp_attr {
	vhca_le32 qpn;
	vhca_le32 attr_mask;		/* VHCA_QP_* (MODIFY only) */
	vhca_u8 qp_state;		/* enum vhca_qp_state */
	vhca_u8 cur_qp_state;
	vhca_u8 path_mtu;		/* enum vhca_ib_mtu */
	vhca_u8 timeout;		/* 4.096 us * 2^timeout, 0 = infinite */
	vhca_u8 retry_cnt;		/* 0..7 */
	vhca_u8 rnr_retry;		/* 0..7, 7 = infinite */
	vhca_u8 min_rnr_timer;		/* IBTA Table 45 code */
	vhca_u8 max_rd_atomic;		/* initiator depth */
	vhca_u8 max_dest_rd_atomic;	/* responder resources */
	vhca_u8 sgid_index;
	vhca_u8 hop_limit;
	vhca_u8 traffic_class;
	vhca_u8 port;
	vhca_u8 sq_draining;		/* QUERY: SQD and not yet drained */
	vhca_u8 en_sqd_async_notify;
	vhca_u8 rsvd0;
	vhca_le32 qp_access_flags;	/* VHCA_ACCESS_REMOTE_* */
	vhca_le32 dest_qp_num;
	vhca_le32 rq_psn;
	vhca_le32 sq_psn;
	vhca_le32 qkey;
	vhca_le32 flow_label;
	vhca_le16 pkey_index;
	vhca_le16 udp_sport;		/* 0: the device derives it */
	vhca_u8 dgid[16];		/* network byte order */
	vhca_u8 dmac[6];
	vhca_u8 rsvd1[2];
	/* QUERY only: the queue sizes the QP was created with */
	vhca_le32 max_send_wr;
	vhca_le32 max_recv_wr;
	vhca_le32 max_send_sge;
	vhca_le32 max_recv_sge;
	vhca_le32 max_inline_data;
	/* IB port, with VHCA_QP_AV: the LRH of the path (IBTA 7.7) */
	vhca_le16 dlid;
	vhca_u8 sl;			/* 0..15 */
	vhca_u8 src_path_bits;		/* SLID = LID | these (LMC) */
	vhca_u8 ah_flags;		/* VHCA_AH_GRH */
	vhca_u8 rsvd2[27];
};

/* ---------------------------------------------------------------------- */
/* Work queue and completion entries                                      */
/* ---------------------------------------------------------------------- */

struct vhca_sge {
	vhca_le64 addr;
	vhca_le32 length;
	vhca_le32 lkey;
};

enum vhca_wqe_opcode {			/* the values of enum ibv_wr_opcode */
	VHCA_WR_RDMA_WRITE		= 0,
	VHCA_WR_RDMA_WRITE_WITH_IMM	= 1,
	VHCA_WR_SEND			= 2,
	VHCA_WR_SEND_WITH_IMM		= 3,
	VHCA_WR_RDMA_READ		= 4,
	VHCA_WR_ATOMIC_CMP_AND_SWP	= 5,
	VHCA_WR_ATOMIC_FETCH_AND_ADD	= 6,
	VHCA_WR_LOCAL_INV		= 7,	/* key in imm_or_inv */
	VHCA_WR_BIND_MW			= 8,
	VHCA_WR_SEND_WITH_INV		= 9,
	VHCA_WR_FLUSH			= 14,
	VHCA_WR_ATOMIC_WRITE		= 15,
	/* Kernel only: the value of Linux's IB_WR_REG_MR. */
	VHCA_WR_REG_MR			= 0x20,
};

/* FLUSH placement type: the values of enum ibv_placement_type. */
enum vhca_flush_type {
	VHCA_FLUSH_GLOBAL		= 1,
	VHCA_FLUSH_PERSISTENT		= 2,
};

/* FLUSH selectivity level: the values of enum ibv_selectivity_level. */
enum vhca_flush_level {
	VHCA_FLUSH_RANGE		= 0,
	VHCA_FLUSH_MR			= 1,
};

#define VHCA_WQE_SIGNALED		(1u << 0)
#define VHCA_WQE_FENCE			(1u << 1)
#define VHCA_WQE_SOLICITED		(1u << 2)
#define VHCA_WQE_INLINE			(1u << 3)

#define VHCA_SEND_WQE_SIZE		256
#define VHCA_MAX_SEND_SGE		12
#define VHCA_MAX_INLINE			(VHCA_MAX_SEND_SGE * 16)
#define VHCA_RECV_WQE_SIZE		128
#define VHCA_MAX_RECV_SGE		7

/*
 * UD address vector (IBTA 10.2.1, annex A17.4.2 for RoCEv2): where one
 * datagram goes.  The driver and the provider copy it from their address
 * handle into every UD send WQE; the device keeps no AH table.
 */
struct vhca_ud_av {
	vhca_u8 dgid[16];		/* network byte order; ::ffff:a.b.c.d = IPv4 */
	union {
		vhca_u8 dmac[6];	/* resolved by the guest (neighbour table) */
		struct {		/* IB port: the LRH (IBTA 7.7) */
			vhca_le16 dlid;
			vhca_u8 sl;		/* 0..15 */
			vhca_u8 src_path_bits;	/* SLID = LID | these */
			vhca_u8 ah_flags;	/* VHCA_AH_GRH */
			vhca_u8 rsvd_ib;
		};
	};
	vhca_u8 sgid_index;		/* source GID: < gid_tbl_len, valid */
	vhca_u8 hop_limit;		/* IPv6 hop limit / IPv4 TTL */
	vhca_u8 traffic_class;		/* IPv6 TC / IPv4 TOS */
	vhca_u8 eth_sl;			/* Ethernet: SL, VLAN GID's PCP */
	vhca_le16 udp_sport;		/* 0: the device derives it */
	vhca_le32 flow_label;		/* 20 bits */
};

/*
 * Send WQE, 256 bytes.  With VHCA_WQE_INLINE, inline_len bytes of data
 * follow the header in place of the SGEs.  RC and UC WQEs use remote_addr,
 * rkey and (RC) the atomic operands; XRC_INI WQEs those of RC plus the
 * target's XRC SRQ number; UD WQEs use dest_qpn, qkey and av in their
 * place.  ATOMIC_WRITE carries its 8 bytes in compare_add (copied to the
 * target as they are in the WQE), FLUSH its length, placement type and
 * selectivity level in place of the atomic operands; neither has SGEs.
 * The local operations (RC, UC) name their MR's key in imm_or_inv;
 * REG_MR's registration fills the SGE area (mr_*).  BIND_MW names the
 * window by its current key in rkey, its new key in imm_or_inv, and the
 * binding in the SGE area (mw_*).
 */
struct vhca_send_wqe {
	vhca_le64 wr_id;
	vhca_u8 opcode;			/* enum vhca_wqe_opcode */
	vhca_u8 flags;			/* VHCA_WQE_* */
	vhca_u8 num_sge;
	vhca_u8 rsvd0;
	vhca_le32 imm_or_inv;		/* immediate (network order) or rkey */
	union {
		vhca_le64 remote_addr;	/* RC, UC: RDMA and atomics */
		struct {		/* UD */
			vhca_le32 dest_qpn;	/* 24 bits */
			vhca_le32 qkey;		/* VHCA_QKEY_CONTROLLED: the QP's */
		};
	};
	union {
		vhca_le32 rkey;		/* RC, UC */
		vhca_le32 pkey_index;	/* GSI on the IB port; other UD: 0 */
	};
	vhca_le32 inline_len;
	union {
		struct {		/* RC, XRC; ATOMIC_WRITE */
			vhca_le64 compare_add;	/* atomics */
			vhca_le64 swap;
			vhca_le32 xrc_srqn;	/* XRC_INI: the target's XRC SRQ */
			vhca_u8 rsvd1[12];
		};
		struct {		/* RC FLUSH */
			vhca_le32 flush_len;	/* RETH DMA Length */
			vhca_u8 flush_type;	/* enum vhca_flush_type bits */
			vhca_u8 flush_level;	/* enum vhca_flush_level */
			vhca_u8 rsvd2[26];
		};
		struct vhca_ud_av av;	/* UD */
	};
	union {
		struct vhca_sge sge[VHCA_MAX_SEND_SGE];
		vhca_u8 inline_data[VHCA_MAX_INLINE];
		struct {		/* REG_MR; the new key in imm_or_inv */
			vhca_le64 mr_iova;
			vhca_le64 mr_length;
			vhca_le64 mr_pbl_addr;	/* level 1: mr_npages u64 */
			vhca_le32 mr_npages;
			vhca_le32 mr_access;	/* VHCA_ACCESS_* */
			vhca_u8 mr_page_shift;	/* 12..30 */
			vhca_u8 rsvd3[7];
		};
		struct {		/* BIND_MW */
			vhca_le64 mw_addr;	/* window start (MR iova) */
			vhca_le64 mw_length;	/* 0: unbind (type 1) */
			vhca_le32 mw_mr_lkey;	/* the MR it lies in */
			vhca_le32 mw_access;	/* VHCA_ACCESS_* */
			vhca_u8 rsvd4[8];
		};
	};
};

/* Receive WQE, 128 bytes. */
struct vhca_recv_wqe {
	vhca_le64 wr_id;
	vhca_u8 num_sge;
	vhca_u8 rsvd[7];
	struct vhca_sge sge[VHCA_MAX_RECV_SGE];
};

enum vhca_cqe_opcode {			/* the values of enum ibv_wc_opcode */
	VHCA_WC_SEND			= 0,
	VHCA_WC_RDMA_WRITE		= 1,
	VHCA_WC_RDMA_READ		= 2,
	VHCA_WC_COMP_SWAP		= 3,
	VHCA_WC_FETCH_ADD		= 4,
	VHCA_WC_BIND_MW			= 5,
	VHCA_WC_LOCAL_INV		= 6,
	VHCA_WC_FLUSH			= 8,
	VHCA_WC_ATOMIC_WRITE		= 9,
	/* Kernel only: Linux 6.12's IB_WC_REG_MR (not an ibv value). */
	VHCA_WC_REG_MR			= 10,
	VHCA_WC_RECV			= 128,
	VHCA_WC_RECV_RDMA_WITH_IMM	= 129,
};

#define VHCA_CQE_WITH_IMM		(1u << 0)
#define VHCA_CQE_WITH_INV		(1u << 1)
/*
 * UD receive: the first VHCA_GRH_AREA_LEN bytes of the buffer hold the
 * GRH area, and byte_len counts them (IBTA 11.4.1.1).  For RoCEv2 the
 * area holds the packet's IPv6 header, or 20 zero bytes then its IPv4
 * header (NET_IPV4), as rxe and mlx5 fill it.
 */
#define VHCA_CQE_GRH			(1u << 2)
#define VHCA_CQE_NET_IPV4		(1u << 3)
#define VHCA_CQE_NET_IPV6		(1u << 4)
/* UD receive on Ethernet: the frame had an 802.1Q tag, in vlan_tci. */
#define VHCA_CQE_VLAN			(1u << 5)

/*
 * Completion status: the values of enum ibv_wc_status / ib_wc_status
 * (IBTA 11.4.2.1, 11.6.2) the device produces.
 */
enum vhca_wc_status {
	VHCA_WC_SUCCESS			= 0,
	VHCA_WC_LOC_LEN_ERR		= 1,
	VHCA_WC_LOC_QP_OP_ERR		= 2,
	VHCA_WC_LOC_PROT_ERR		= 4,
	VHCA_WC_WR_FLUSH_ERR		= 5,
	VHCA_WC_MW_BIND_ERR		= 6,
	VHCA_WC_REM_INV_REQ_ERR		= 9,
	VHCA_WC_REM_ACCESS_ERR		= 10,
	VHCA_WC_REM_OP_ERR		= 11,
	VHCA_WC_RETRY_EXC_ERR		= 12,
	VHCA_WC_RNR_RETRY_EXC_ERR	= 13,
};

/*
 * vendor_err of an error CQE: which device condition produced the status.
 * A NAK the peer sent is VHCA_VENDOR_ERR_NAK | its AETH NAK code
 * (IBTA 9.7.5.2.8), so "remote access error" says whose check failed.
 */
enum vhca_vendor_err {
	VHCA_VENDOR_ERR_NONE		= 0x000,
	VHCA_VENDOR_ERR_NAK		= 0x100,	/* | NAK code 0..4 */
	VHCA_VENDOR_ERR_WQE_DMA		= 0x200,	/* WQE unreadable */
};

/*
 * Completion queue entry, 32 bytes; owner bit as in struct vhca_eqe.
 * status holds the values of enum ibv_wc_status (IBTA 11.4.2.1).
 */
struct vhca_cqe {
	vhca_le64 wr_id;
	vhca_le32 byte_len;
	vhca_le32 imm_or_inv;		/* immediate (network order) or rkey */
	vhca_le32 qpn;
	/*
	 * UD receives: bits 23:0 the DETH SrcQP, bits 31:24 the index of
	 * the P_Key it matched (IB port; 0 on Ethernet).
	 */
	vhca_le32 src_qp;
	union {
		vhca_le32 vendor_err;	/* device syndrome for errors */
		struct {		/* UD receive on the IB port (11.4.2.1) */
			vhca_le16 slid;
			vhca_u8 sl;
			vhca_u8 dlid_path_bits;
		};
		struct {		/* UD receive on Ethernet, CQE_VLAN */
			vhca_le16 vlan_tci;	/* the 802.1Q TCI */
			vhca_u8 rsvd_vlan[2];
		};
	};
	vhca_u8 status;
	vhca_u8 opcode;			/* enum vhca_cqe_opcode */
	vhca_u8 flags;			/* VHCA_CQE_* */
	vhca_u8 owner;			/* bit 0: pass parity */
};

/* ---------------------------------------------------------------------- */
/* Event queue entries                                                    */
/* ---------------------------------------------------------------------- */

/*
 * 16-byte event queue entry.  The owner bit of the last byte toggles on
 * each pass over the ring: on the first pass the device writes 1, on the
 * second 0, and so on, so the driver knows which entries are new without
 * reading a register.  The device writes the owner byte last.
 */
struct vhca_eqe {
	vhca_u8 type;			/* enum vhca_eqe_type */
	vhca_u8 subtype;
	vhca_le16 rsvd0;
	vhca_le32 data[2];		/* type specific */
	vhca_u8 rsvd1[3];
	vhca_u8 owner;			/* bit 0: pass parity */
};

enum vhca_eqe_type {
	/* data[0] = admin queue slot, data[1] = token; subtype = status */
	VHCA_EQE_CMD_DONE		= 1,
	/*
	 * data[0] = port; subtype = enum vhca_port_state.  On the IB port
	 * the logical state (DOWN, INIT, ARMED, ACTIVE: IBTA 7.2) the SM
	 * moves it through, on the Ethernet port ACTIVE or DOWN.
	 */
	VHCA_EQE_PORT_CHANGE		= 2,
	/* completion EQs: data[0] = cqn */
	VHCA_EQE_COMPLETION		= 3,
	/* data[0] = cqn: the CQ overflowed and is in error */
	VHCA_EQE_CQ_ERROR		= 4,
	/* data[0] = qpn; subtype = the enum ib_event_type value */
	VHCA_EQE_QP_EVENT		= 5,
	/* data[0] = srqn; subtype = enum vhca_srq_event */
	VHCA_EQE_SRQ_EVENT		= 6,
	/*
	 * IB port: the SM changed something consumers cache; data[0] =
	 * port, subtype = enum vhca_port_mgmt_event.
	 */
	VHCA_EQE_PORT_MGMT		= 7,
};

/* VHCA_EQE_PORT_MGMT subtypes: the values of enum ib_event_type. */
enum vhca_port_mgmt_event {
	VHCA_EVENT_LID_CHANGE		= 11,	/* PortInfo LID or LMC */
	VHCA_EVENT_PKEY_CHANGE		= 12,	/* P_KeyTable */
	VHCA_EVENT_SM_CHANGE		= 13,	/* PortInfo MasterSMLID or SL */
	VHCA_EVENT_CLIENT_REREGISTER	= 17,	/* PortInfo ClientReregister */
	VHCA_EVENT_GID_CHANGE		= 18,	/* PortInfo GIDPrefix */
};

/* VHCA_EQE_QP_EVENT subtypes: the values of enum ib_event_type (11.6.3). */
enum vhca_qp_event {
	VHCA_EVENT_QP_FATAL		= 1,
	VHCA_EVENT_QP_REQ_ERR		= 2,
	VHCA_EVENT_QP_ACCESS_ERR	= 3,
	VHCA_EVENT_COMM_EST		= 4,
	VHCA_EVENT_SQ_DRAINED		= 5,
	VHCA_EVENT_QP_LAST_WQE_REACHED	= 16,
};

/* VHCA_EQE_SRQ_EVENT subtypes: enum ib_event_type values (11.6.3). */
enum vhca_srq_event {
	VHCA_EVENT_SRQ_ERR		= 14,
	VHCA_EVENT_SRQ_LIMIT_REACHED	= 15,
};

/* ---------------------------------------------------------------------- */
/* Ethernet descriptors                                                   */
/* ---------------------------------------------------------------------- */

/*
 * 16-byte TX/RX descriptor.  TX: the driver writes addr/len with flags 0;
 * the device sends the frame and sets DONE (ERROR if it could not).  RX: the
 * driver writes addr/len (buffer size) with flags 0; the device writes the
 * frame, sets len to the frame length and sets DONE.  The device writes
 * flags last.
 */
struct vhca_eth_desc {
	vhca_le64 addr;
	vhca_le16 len;
	vhca_le16 flags;		/* VHCA_ETH_DESC_* */
	vhca_le32 rsvd;
};

#define VHCA_ETH_DESC_DONE		(1u << 0)
#define VHCA_ETH_DESC_ERROR		(1u << 1)

/* Largest frame: 9000 MTU + Ethernet header + one VLAN tag. */
#define VHCA_ETH_MAX_FRAME		(VHCA_MAX_MTU + 14 + 4)

/* ---------------------------------------------------------------------- */
/* On the wire: priorities and congestion (RoCEv2, 802.1Q, 802.1Qbb)      */
/* ---------------------------------------------------------------------- */

/*
 * What the device puts on and reads off the wire when RoCE traffic has a
 * priority and takes part in congestion control, and what the driver
 * maps its traffic classes and DCB settings onto.
 */

/* BTH OpCode of a RoCEv2 Congestion Notification Packet (annex A17.9.3). */
#define VHCA_BTH_OPCODE_CNP		0x81

/*
 * The IPv4 TOS / IPv6 Traffic Class byte: the DSCP in its upper six bits
 * (RFC 2474 section 3), the ECN field in its lower two (RFC 3168 section
 * 5).  ECT(0) and ECT(1) both say "ECN-capable"; a congested queue
 * rewrites either to CE instead of dropping the packet.
 */
#define VHCA_ECN_MASK			0x03
#define VHCA_ECN_NOT_ECT		0	/* not ECN-capable */
#define VHCA_ECN_ECT1			1	/* ECN-capable transport (1) */
#define VHCA_ECN_ECT0			2	/* ECN-capable transport (0) */
#define VHCA_ECN_CE			3	/* congestion experienced */
#define VHCA_DSCP_SHIFT			2
#define VHCA_DSCP_MAX			63

/*
 * IEEE 802.1Q tag: the TPID where the EtherType would be, then the TCI
 * (PCP:3 DEI:1 VID:12), then the frame's own EtherType.
 */
#define VHCA_ETH_P_8021Q		0x8100
#define VHCA_VLAN_HLEN			4
#define VHCA_VLAN_PCP_SHIFT		13
#define VHCA_VLAN_PCP_MAX		7
#define VHCA_VLAN_DEI			0x1000
#define VHCA_VLAN_VID_MASK		0x0fff

/*
 * Priority-based flow control (IEEE 802.1Qbb, a MAC Control frame of IEEE
 * 802.3 annex 31D): to 01-80-C2-00-00-01, EtherType 0x8808, opcode
 * 0x0101, a 16-bit priority-enable vector, then eight 16-bit pause times
 * (priority 0 first) in quanta of 512 bit times at the link's speed.
 */
#define VHCA_ETH_P_MAC_CONTROL		0x8808
#define VHCA_MAC_CONTROL_PFC		0x0101
#define VHCA_PFC_PRIORITIES		8
#define VHCA_PAUSE_QUANTUM_BITS		512

/* ---------------------------------------------------------------------- */
/* Doorbell pages (BAR2)                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Each user context owns one 4 KiB page at BAR2 + db_page * 4096, mapped
 * into its process (the kernel driver keeps one for its own queues).  A
 * doorbell is one 64-bit write: low 32 bits the object number, high 32
 * bits the value.  The device ignores (and counts) a doorbell for an
 * object the page does not own.
 *   SQ: value = new SQ producer index (free running)
 *   RQ: value = new RQ producer index
 *   CQ: value = VHCA_CQ_ARM_* | consumer index (24 bits): request an event
 *       for the next (solicited) completion after that index
 *   SRQ: value = new SRQ producer index (free running)
 */
#define VHCA_DB_SQ			0x000
#define VHCA_DB_RQ			0x008
#define VHCA_DB_CQ			0x010
#define VHCA_DB_SRQ			0x018
#define VHCA_CQ_ARM_NEXT		(1u << 30)
#define VHCA_CQ_ARM_SOLICITED		(2u << 30)
#define VHCA_CQ_CI_MASK			0x00ffffffu

/* RoCEv2: IANA UDP destination port. */
#define VHCA_ROCE_V2_UDP_PORT		4791

/* VHCA_CMD_ATTACH_MCAST / DETACH_MCAST: a UD QP joins/leaves a group. */
struct vhca_cmd_mcast_in {
	vhca_le32 qpn;			/* a UD QP (not QP1) */
	vhca_u8 rsvd[12];
	vhca_u8 gid[16];		/* multicast GID, network byte order */
};

#define VHCA_MAX_MCAST_GROUPS		64	/* groups per device */
#define VHCA_MAX_MCAST_QPS		16	/* QPs attached to one group */

static_assert(sizeof(struct vhca_cmd_mcast_in) == 32, "vhca_cmd_mcast_in layout");
static_assert(sizeof(struct vhca_ud_av) == 32, "vhca_ud_av layout");
static_assert(sizeof(struct vhca_admin_cmd) == 64, "vhca_admin_cmd layout");
static_assert(sizeof(struct vhca_device_attr) == 256, "vhca_device_attr layout");
static_assert(sizeof(struct vhca_port_attr) == 16, "vhca_port_attr layout");
static_assert(sizeof(struct vhca_cmd_dma_in) == 16, "vhca_cmd_dma_in layout");
static_assert(sizeof(struct vhca_cmd_port_in) == 32, "vhca_cmd_port_in layout");
static_assert(sizeof(struct vhca_cmd_gid_in) == 32, "vhca_cmd_gid_in layout");
static_assert(sizeof(struct vhca_cmd_mac_in) == 32, "vhca_cmd_mac_in layout");
static_assert(sizeof(struct vhca_cmd_mtu_in) == 32, "vhca_cmd_mtu_in layout");
static_assert(sizeof(struct vhca_cmd_uctx_in) == 32, "vhca_cmd_uctx_in layout");
static_assert(sizeof(struct vhca_cmd_uctx_out) == 16, "vhca_cmd_uctx_out layout");
static_assert(sizeof(struct vhca_eqe) == 16, "vhca_eqe layout");
static_assert(sizeof(struct vhca_cmd_obj_in) == 32, "vhca_cmd_obj_in layout");
static_assert(sizeof(struct vhca_cmd_obj_out) == 16, "vhca_cmd_obj_out layout");
static_assert(sizeof(struct vhca_mr_create) == 64, "vhca_mr_create layout");
static_assert(sizeof(struct vhca_cmd_mw_in) == 32, "vhca_cmd_mw_in layout");
static_assert(sizeof(struct vhca_eq_create) == 32, "vhca_eq_create layout");
static_assert(sizeof(struct vhca_cq_create) == 64, "vhca_cq_create layout");
static_assert(sizeof(struct vhca_qp_create) == 64, "vhca_qp_create layout");
static_assert(sizeof(struct vhca_qp_attr) == 128, "vhca_qp_attr layout");
static_assert(sizeof(struct vhca_sge) == 16, "vhca_sge layout");
static_assert(sizeof(struct vhca_send_wqe) == VHCA_SEND_WQE_SIZE, "vhca_send_wqe layout");
static_assert(__builtin_offsetof(struct vhca_send_wqe, dest_qpn) == 16, "UD WQE layout");
static_assert(__builtin_offsetof(struct vhca_send_wqe, av) == 32, "UD WQE layout");
static_assert(__builtin_offsetof(struct vhca_send_wqe, flush_len) == 32, "FLUSH WQE layout");
static_assert(__builtin_offsetof(struct vhca_send_wqe, flush_level) == 37, "FLUSH WQE layout");
static_assert(__builtin_offsetof(struct vhca_send_wqe, sge) == 64, "send WQE layout");
static_assert(__builtin_offsetof(struct vhca_send_wqe, xrc_srqn) == 48, "XRC WQE layout");
static_assert(sizeof(struct vhca_srq_create) == 64, "vhca_srq_create layout");
static_assert(sizeof(struct vhca_recv_wqe) == VHCA_RECV_WQE_SIZE, "vhca_recv_wqe layout");
static_assert(sizeof(struct vhca_cqe) == 32, "vhca_cqe layout");
static_assert(sizeof(struct vhca_mad_ifc) == 32 + 2 * VHCA_MAD_SIZE, "vhca_mad_ifc layout");
static_assert(sizeof(struct vhca_cmd_modify_port_in) == 32, "vhca_cmd_modify_port_in layout");
static_assert(sizeof(struct vhca_eth_desc) == 16, "vhca_eth_desc layout");
static_assert(sizeof(struct vhca_cc_config) == 128, "vhca_cc_config layout");
static_assert(VHCA_CC_PARAM_MAX <= VHCA_CC_PARAMS_LEN, "vhca_cc_config room");
static_assert(sizeof(struct vhca_cc_query) == 832, "vhca_cc_query layout");
static_assert(VHCA_PFC_CNT_MAX <= VHCA_PFC_COUNTERS_LEN, "vhca_cc_query pfc room");
static_assert(VHCA_PFC_PRIORITIES == 8, "vhca_cc_query pfc priorities");
static_assert(VHCA_CC_CNT_MAX <= VHCA_CC_COUNTERS_LEN, "vhca_cc_query room");

/*
 * VHCA_CMD_SET_RX_FILTER: the multicast addresses the Ethernet RX filter
 * passes (docs/specs/vhca.rst, "RX filter").  The new list replaces the
 * old one as a whole; until the first SET_RX_FILTER after a reset the
 * filter behaves as if ALLMULTI were set.
 */
#define VHCA_MAX_MCAST_MACS		64
#define VHCA_RX_FILTER_ALLMULTI		(1u << 0)	/* every multicast */

struct vhca_rx_filter {
	vhca_le32 flags;		/* VHCA_RX_FILTER_*, others 0 */
	vhca_le32 count;		/* entries of mac[], <= 64 */
	vhca_u8 mac[VHCA_MAX_MCAST_MACS][8];	/* 6-byte MAC, 2 reserved */
};

static_assert(sizeof(struct vhca_rx_filter) == 8 + 8 * VHCA_MAX_MCAST_MACS,
	      "vhca_rx_filter layout");
/* Counters end before the completion EQ doorbells. */
static_assert(VHCA_CNT_DROP(VHCA_DROP_MAX) == VHCA_CNT_MAX,
	      "one counter per drop reason, in order, at the end");
static_assert(VHCA_REG_COUNTERS + 8 * VHCA_CNT_MAX <= VHCA_REG_EQ_DB(0),
	      "counter registers overlap EQ_DB");

#endif /* VHCA_HW_H */
