/*
 * vhca device engine: the behaviour of the virtual RoCEv2 HCA described in
 * docs/specs/vhca.rst, independent of QEMU.
 *
 * The engine includes no QEMU header.  It reaches guest memory, the wire,
 * interrupts and the log only through VhcaCoreOps, so the same code runs
 * inside the QEMU device (hw/vhca/vhca.c) and in the unit tests and fuzzers
 * (tests/unit), where guest RAM is a byte array.
 *
 * Everything the engine receives (register values, admin commands,
 * descriptors, DMA results, frames) is untrusted: it is validated here and
 * bad input fails with a status or is dropped, never with an abort.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_CORE_H
#define HW_VHCA_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhca_hw.h"
#include "vhca-dcqcn.h"
#include "vhca-pfc.h"

/* Limits of the device properties (docs/specs/vhca.rst, "Command line"). */
#define VHCA_CORE_GID_TBL_LEN_MIN       1
#define VHCA_CORE_GID_TBL_LEN_MAX       128
#define VHCA_CORE_GID_TBL_LEN_DEFAULT   16
#define VHCA_CORE_DB_PAGES_MIN          1
#define VHCA_CORE_DB_PAGES_MAX          1024
#define VHCA_CORE_DB_PAGES_DEFAULT      64
#define VHCA_CORE_VECTORS_MIN           VHCA_MIN_VECTORS
#define VHCA_CORE_VECTORS_MAX           64
#define VHCA_CORE_VECTORS_DEFAULT       8
/* RDMA object tables (docs/specs/vhca.rst, "RDMA resources"). */
#define VHCA_CORE_MAX_QP_MIN            1
#define VHCA_CORE_MAX_QP_MAX            16384
#define VHCA_CORE_MAX_QP_DEFAULT        256
#define VHCA_CORE_MAX_CQ_MIN            1
#define VHCA_CORE_MAX_CQ_MAX            65536
#define VHCA_CORE_MAX_CQ_DEFAULT        512
#define VHCA_CORE_MAX_MR_MIN            1
#define VHCA_CORE_MAX_MR_MAX            65536
#define VHCA_CORE_MAX_MR_DEFAULT        4096
#define VHCA_CORE_MAX_PD_MIN            1
#define VHCA_CORE_MAX_PD_MAX            65536
#define VHCA_CORE_MAX_PD_DEFAULT        1024
/* 0: the device has no SRQs (QUERY_DEVICE max_srq 0). */
#define VHCA_CORE_MAX_SRQ_MIN           0
#define VHCA_CORE_MAX_SRQ_MAX           65536
#define VHCA_CORE_MAX_SRQ_DEFAULT       256

/* x-rx-frame-rate: frames per second, 0 (the default): no limit. */
#define VHCA_CORE_RX_FRAME_RATE_MAX     10000000

#define VHCA_CORE_DEFAULT_MTU           1500
/* Ethernet header plus one 802.1Q tag: frame size limit is MTU + 18. */
#define VHCA_ETH_OVERHEAD               18
#define VHCA_ETH_HLEN                   14
#define VHCA_ETH_ALEN                   6
#define VHCA_GID_LEN                    16

/*
 * Classes of guest mistakes the engine reports: the prefix of their
 * LOG_GUEST_ERROR sentence; the tests count them.  The numbers of each go
 * to a typed hook (ub_*, err_* in VhcaCoreOps) and its trace event.
 */
typedef enum VhcaGuestError {
    VHCA_GUEST_ERR_REG_ACCESS,  /* bad size/alignment, RO/WO/unassigned */
    VHCA_GUEST_ERR_REG_REFUSED, /* write refused, ERROR register set */
    VHCA_GUEST_ERR_ADMQ,        /* admin queue doorbell or DMA failure */
    VHCA_GUEST_ERR_ADMIN_CMD,   /* admin command failed with a status */
    VHCA_GUEST_ERR_AEQ,         /* async event queue doorbell or DMA */
    VHCA_GUEST_ERR_TX,          /* TX ring doorbell, descriptor or buffer */
    VHCA_GUEST_ERR_RX,          /* RX ring doorbell, descriptor or buffer */
    VHCA_GUEST_ERR_DOORBELL,    /* BAR2 doorbell page access */
    VHCA_GUEST_ERR_EQ,          /* completion EQ doorbell or DMA */
    VHCA_GUEST_ERR_CQ,          /* CQ doorbell, overflow or DMA */
    VHCA_GUEST_ERR_QP,          /* QP doorbell or WQE fetch */
    VHCA_GUEST_ERR_SRQ,         /* SRQ doorbell or ring */
    VHCA_GUEST_ERR__MAX
} VhcaGuestError;

/*
 * The rings and queues a guest error can be about, for the typed error
 * hooks (vhca_core_ring_name() gives the name the trace prints).
 */
typedef enum VhcaRingId {
    VHCA_RING_ADMQ,             /* admin queue */
    VHCA_RING_AEQ,              /* async EQ (EQ 0) */
    VHCA_RING_EQ,               /* a completion EQ */
    VHCA_RING_TX,               /* Ethernet TX ring */
    VHCA_RING_RX,               /* Ethernet RX ring */
    VHCA_RING_CQ,
    VHCA_RING_SQ,
    VHCA_RING_RQ,
    VHCA_RING_SRQ,
    VHCA_RING__MAX
} VhcaRingId;

/* Why a QP changed state (the qp_state hook). */
typedef enum VhcaQpChange {
    VHCA_QP_CHANGE_COMMAND,     /* MODIFY_QP */
    VHCA_QP_CHANGE_ERROR,       /* a WQE of the QP or a request to it failed */
    VHCA_QP_CHANGE_FATAL,       /* its CQ went into error: QP_FATAL event */
    VHCA_QP_CHANGE__MAX
} VhcaQpChange;

/* Why an RC requester goes back N (IBTA 9.7.5.1, 9.7.6.1). */
typedef enum VhcaRetryCause {
    VHCA_RETRY_TIMEOUT,         /* local ACK timeout */
    VHCA_RETRY_SEQ_NAK,         /* NAK: PSN sequence error */
    VHCA_RETRY_IMPLIED_NAK,     /* a response skipped READ/atomic responses */
    VHCA_RETRY__MAX
} VhcaRetryCause;

/* The two kinds of negative AETH syndrome (IBTA 9.7.5.2.8, Table 44). */
typedef enum VhcaNakKind {
    VHCA_NAK_KIND_RNR,          /* code: the RNR timer (Table 45) */
    VHCA_NAK_KIND_NAK,          /* code: the NAK code (0..4) */
} VhcaNakKind;

/*
 * Which check of a BIND_MW WQE failed (docs/specs/vhca.rst, "Memory
 * windows", in the order they run).
 */
typedef enum VhcaMwBindError {
    VHCA_MW_BIND_BAD_KEY,       /* rkey names no window (index and tag) */
    VHCA_MW_BIND_NEW_KEY,       /* the new key has another index */
    VHCA_MW_BIND_ACCESS,        /* mw_access has bits a window cannot have */
    VHCA_MW_BIND_TYPE1_ZERO_BASED,  /* o10-36.2.2 */
    VHCA_MW_BIND_NOT_FREE,      /* type 2 bound already: o10-37.2.30 */
    VHCA_MW_BIND_ZERO_LENGTH,   /* type 2 of length 0: o10-37.2.40 */
    VHCA_MW_BIND_WINDOW_PD,     /* window not in the QP's PD: C10-72 */
    VHCA_MW_BIND_MR_KEY,        /* mw_mr_lkey names no valid MR */
    VHCA_MW_BIND_MR_PD,         /* the MR is not in the QP's PD */
    VHCA_MW_BIND_MR_NO_BIND,    /* the MR lacks MW_BIND: C10-73 */
    VHCA_MW_BIND_MR_NO_WRITE,   /* writable window, MR no LOCAL_WRITE: C10-74 */
    VHCA_MW_BIND_RANGE,         /* range not inside the MR: C10-75 */
    VHCA_MW_BIND__MAX
} VhcaMwBindError;

/* How a memory window became free. */
typedef enum VhcaMwInvalidation {
    VHCA_MW_INV_LOCAL,          /* a LOCAL_INV of the QP */
    VHCA_MW_INV_REMOTE,         /* a SEND with Invalidate the QP received */
    VHCA_MW_INV_QP_GONE,        /* DESTROY_QP of the QP it was tied to */
    VHCA_MW_INV__MAX
} VhcaMwInvalidation;

/* What vhca_core_receive() did with a frame (for tracing and tests). */
typedef enum VhcaRxResult {
    VHCA_RX_DELIVERED,          /* written to the RX ring */
    VHCA_RX_ROCE,               /* for the RDMA engine (queued or dropped) */
    VHCA_RX_FILTERED,           /* not for us, or RX disabled */
    VHCA_RX_NO_BUFFER,          /* RX ring empty: dropped, RX_NO_BUFFER */
    VHCA_RX_ERROR,              /* runt, oversize, bad buffer: RX_ERRORS */
} VhcaRxResult;

/*
 * The engine's view of the outside world.  dma_read and dma_write are
 * required and must fail (return -1) for anything outside guest RAM; the
 * other hooks may be NULL.  All hooks receive VhcaCore.opaque.
 */
typedef struct VhcaCoreOps {
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                     size_t len);
    /* Transmit one Ethernet frame (no FCS) to the backend. */
    void (*send_frame)(void *opaque, const uint8_t *buf, size_t len);
    /* Send MSI-X vector @vector (< VhcaCoreConfig.num_vectors). */
    void (*raise_irq)(void *opaque, unsigned vector);
    /* vhca_core_can_receive() may have become true: flush queued frames. */
    void (*rx_ready)(void *opaque);
    /* An admin command completed (for tracing). */
    void (*admin_cmd_done)(void *opaque, uint32_t slot, uint16_t opcode,
                           uint32_t token, uint8_t status, uint32_t syndrome);
    /* An event was written to the async EQ at producer index @pi. */
    void (*event_posted)(void *opaque, uint8_t type, uint8_t subtype,
                         uint32_t pi);
    /*
     * The guest did something wrong; @msg is a complete sentence, for
     * LOG_GUEST_ERROR.  Its typed ub_* or err_* hook came just before.
     * Never for what a peer or the wire did: that is traced and counted.
     */
    void (*guest_error)(void *opaque, VhcaGuestError kind, const char *msg);
    /*
     * A received RoCE frame was dropped (for tracing): @reason names why
     * (vhca_drop_reason_name()), @detail the parser's error for a
     * malformed frame ("" otherwise), @qpn the QP it was for (0 if not
     * known, 0xffffff for a multicast group).
     */
    void (*rx_drop)(void *opaque, const char *reason, const char *detail,
                    uint32_t qpn);

    /*
     * Transport events, for tracing (docs/specs/vhca.rst, "Trace
     * events"); each may be NULL.  QPN, PSN and CQN as the engine has
     * them; @type is an enum vhca_qp_type, states enum vhca_qp_state.
     */
    void (*qp_state)(void *opaque, uint32_t qpn, uint8_t type, uint8_t from,
                     uint8_t to, VhcaQpChange why);
    /* The RC requester of @qpn sends again from @psn. */
    void (*retransmit)(void *opaque, uint32_t qpn, uint32_t psn,
                       VhcaRetryCause why);
    /* An RC NAK our responder sent, or our requester received. */
    void (*nak_sent)(void *opaque, uint32_t qpn, uint32_t psn,
                     VhcaNakKind kind, uint8_t code);
    void (*nak_rcvd)(void *opaque, uint32_t qpn, uint32_t psn,
                     VhcaNakKind kind, uint8_t code);
    /* An RNR NAK for @psn: the requester waits @timer_ns, then resends. */
    void (*rnr_wait)(void *opaque, uint32_t qpn, uint32_t psn,
                     uint64_t timer_ns);
    /*
     * The local ACK timer of @qpn expired with @psn the oldest PSN not
     * acknowledged; @retries_left 0: the WQE fails with RETRY_EXC_ERR.
     */
    void (*ack_timeout)(void *opaque, uint32_t qpn, uint32_t psn,
                        uint8_t retries_left);
    /*
     * Loss back-off (IBTA 9.7.6.1.3 for the timer): the RC requester of
     * @qpn cut its window of unacknowledged packets from @from to @to
     * after a loss (@why); consecutive timeouts doubled its retransmit
     * timer to @timer_ns (@backoff doublings, at most 2: 4T).
     */
    void (*window_cut)(void *opaque, uint32_t qpn, uint32_t from,
                       uint32_t to, VhcaRetryCause why);
    void (*timer_backoff)(void *opaque, uint32_t qpn, uint64_t timer_ns,
                          uint8_t backoff);
    /*
     * SRQ @srqn has fewer than @limit WQEs left (@wqes): the limit event
     * is posted and the limit disarmed (IBTA 10.2.9.5).
     */
    void (*srq_limit)(void *opaque, uint32_t srqn, uint32_t limit,
                      uint32_t wqes);
    /*
     * Memory windows (IBTA 10.6.7).  A BIND_MW WQE of @qpn naming window
     * key @key was refused by check @why (its err_wqe follows), or
     * window @key became free (type 2), @why, through QP @qpn.
     */
    void (*mw_bind_refused)(void *opaque, uint32_t qpn, uint32_t key,
                            VhcaMwBindError why);
    void (*mw_invalidated)(void *opaque, uint32_t qpn, uint32_t key,
                           VhcaMwInvalidation why);
    /*
     * IB port: the management agents took a MAD (MAD_IFC): its class,
     * method, attribute and modifier, the MAD status of the answer and
     * the VHCA_MAD_RESULT_* bits (0: not the device's to answer).
     */
    void (*mad)(void *opaque, uint8_t mgmt_class, uint8_t method,
                uint16_t attr_id, uint32_t attr_mod, uint16_t status,
                uint8_t result);
    /* IB port: the logical port state changed (enum vhca_port_state). */
    void (*ib_port_state)(void *opaque, uint8_t from, uint8_t to);
    /*
     * IB port: the SMA raised trap @trap for the master SM at @sm_lid;
     * @sent false if the port could not send it (not ACTIVE, no SM, no
     * SMI QP).
     */
    void (*ib_trap)(void *opaque, uint16_t trap, uint16_t sm_lid, bool sent);
    /*
     * RoCE congestion control (vhca-cc.c): QP @qpn sent a CNP to remote
     * QP @dest_qpn; a CNP for @qpn arrived and the reaction point took it
     * (@handled) or is off; the DCQCN rate of @qpn changed (bytes/s, its
     * target, alpha in 1/1024, its VhcaDcqcnStage).
     */
    void (*cc_cnp_sent)(void *opaque, uint32_t qpn, uint32_t dest_qpn);
    void (*cc_cnp_rcvd)(void *opaque, uint32_t qpn, bool handled);
    void (*cc_rate)(void *opaque, uint32_t qpn, uint64_t rate,
                    uint64_t target, uint16_t alpha, uint8_t stage);
    /*
     * Priority flow control (vhca-pfc.c): a PFC frame paused priority
     * @prio for @quanta (0: resume now) and @paused says whether it took
     * (PFC on for it); we sent one for @prio with @quanta (0: XON)
     * because @rx_frames frames, @rx_bytes bytes of it wait; @prio
     * resumed after @paused_ns.
     */
    void (*pfc_pause_rcvd)(void *opaque, uint8_t prio, uint16_t quanta,
                           bool paused);
    void (*pfc_pause_sent)(void *opaque, uint8_t prio, uint16_t quanta,
                           uint32_t rx_frames, uint32_t rx_bytes);
    void (*pfc_resumed)(void *opaque, uint8_t prio, uint64_t paused_ns);
    /* A CQE with a status other than SUCCESS was written to @cqn. */
    void (*cqe_error)(void *opaque, uint32_t cqn, uint32_t qpn,
                      uint64_t wr_id, uint8_t opcode, uint8_t status,
                      uint32_t vendor_err);

    /*
     * The numbers of a guest error, one hook per kind, for its typed
     * trace event; guest_error() follows with the sentence for the log.
     * ub_*: the access is ignored; err_*: it is refused or fails.
     */
    /* A BAR0 access of a bad size, to a RO/WO or unassigned register. */
    void (*ub_reg_access)(void *opaque, bool write, uint64_t offset,
                          unsigned size, uint64_t value);
    /* A BAR2 write past the pages, to a page or object not owned, ... */
    void (*ub_doorbell)(void *opaque, uint64_t page, uint32_t offset,
                        unsigned size, uint32_t object);
    /* A doorbell of a ring that does not run (or exist) now. */
    void (*ub_ring_doorbell)(void *opaque, VhcaRingId ring, uint32_t object,
                             uint32_t value);
    /* A CQ doorbell with bad arm bits, to a CQ in error or CI past PI. */
    void (*ub_cq_doorbell)(void *opaque, uint32_t cqn, uint32_t value,
                           uint32_t ci, uint32_t pi);
    /* A doorbell index outside @low..@high: refused. */
    void (*err_doorbell_index)(void *opaque, VhcaRingId ring,
                               uint32_t object, uint32_t index, uint32_t low,
                               uint32_t high);
    /* A ring enable refused: base zero or unaligned, or size. */
    void (*err_ring_config)(void *opaque, VhcaRingId ring, uint64_t base,
                            uint32_t log_size);
    /* A ring register (@reg: offset from BASE_LO) written while running. */
    void (*err_ring_running)(void *opaque, VhcaRingId ring, uint32_t reg,
                             uint32_t value);
    /* Entry @index of a ring, or its buffer, at @addr is not guest RAM. */
    void (*err_guest_ram)(void *opaque, VhcaRingId ring, uint32_t object,
                          uint32_t index, uint64_t addr);
    /* A frame of @len bytes for entry @index, outside @min..@max. */
    void (*err_frame_len)(void *opaque, VhcaRingId ring, uint32_t index,
                          uint32_t len, uint32_t min, uint32_t max);
    /* An EQ or CQ is full: an event or completion is lost. */
    void (*err_queue_overflow)(void *opaque, VhcaRingId ring, uint32_t object,
                               uint32_t pi, uint32_t ci);
    /* A WQE the guest wrote completes in error (or cannot be read). */
    void (*err_wqe)(void *opaque, uint32_t qpn, VhcaRingId queue,
                    uint32_t index, uint8_t opcode, uint8_t status,
                    uint32_t vendor_err);
    /* An admin command fails with @status and @syndrome. */
    void (*err_admin_cmd)(void *opaque, uint16_t opcode, uint8_t status,
                          uint32_t syndrome);

    /*
     * Transport services.  now_ns is a monotonic clock (QEMU's virtual
     * clock); the engine owns one timer: timer_arm replaces any earlier
     * deadline, and the glue calls vhca_core_timer_expired() when it
     * passes.  schedule asks the glue to call vhca_core_run_deferred()
     * soon, outside the current MMIO write or receive callback (a bottom
     * half), so that no single guest or wire event does unbounded work.
     */
    uint64_t (*now_ns)(void *opaque);
    void (*timer_arm)(void *opaque, uint64_t deadline_ns);
    void (*timer_cancel)(void *opaque);
    void (*schedule)(void *opaque);
} VhcaCoreOps;

/* The port's link layer (the "link" property). */
typedef enum VhcaLinkLayer {
    VHCA_LINK_ETH,                  /* RoCEv2 and the Ethernet NIC */
    VHCA_LINK_IB,                   /* InfiniBand: LRH wire, SMA, PMA */
} VhcaLinkLayer;

/* Fixed at realize from the device properties. */
typedef struct VhcaCoreConfig {
    VhcaLinkLayer link;
    uint8_t mac[VHCA_ETH_ALEN];     /* permanent MAC; IB: the GUIDs' seed */
    uint32_t gid_tbl_len;
    uint32_t num_db_pages;
    uint32_t num_vectors;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    /*
     * x-rx-frame-rate: received RoCE requests the device handles per
     * second, 0: as fast as it can - a receiver that cannot keep up,
     * for the PFC experiment (docs/developer-guide.rst).
     */
    uint32_t rx_frame_rate;
} VhcaCoreConfig;

/* Registers of one ring in guest memory, as the guest programmed them. */
typedef struct VhcaRing {
    uint32_t base_lo;
    uint32_t base_hi;
    uint32_t log_size;
    uint32_t pi;                    /* producer index (free running) */
    uint32_t ci;                    /* consumer index (free running) */
} VhcaRing;

/*
 * An event queue: the async EQ (EQ 0, contiguous at ring.base, programmed
 * through BAR0) or a completion EQ (CREATE_EQ, on a page list).
 */
typedef struct VhcaEq {
    VhcaRing ring;                  /* base (EQ 0 only), log_size, pi, ci */
    uint64_t *pages;                /* completion EQs: 4 KiB pages */
    unsigned vector;                /* MSI-X vector */
    bool armed;
    bool overflow;                  /* events lost since the last doorbell */
    uint32_t users;                 /* CQs that report to it */
} VhcaEq;

/* A set of object handles [first, last]: bit set = handle in use. */
typedef struct VhcaIds {
    uint64_t *map;
    uint32_t first;
    uint32_t last;
} VhcaIds;

typedef struct VhcaPd VhcaPd;
typedef struct VhcaMr VhcaMr;
typedef struct VhcaCq VhcaCq;
typedef struct VhcaQp VhcaQp;
typedef struct VhcaSrq VhcaSrq;

/* A multicast group some of our UD QPs joined (ATTACH_MCAST). */
typedef struct VhcaMcastGroup {
    uint8_t gid[VHCA_GID_LEN];      /* network byte order */
    uint32_t nqps;                  /* members; 0: the slot is free */
    uint32_t qpns[VHCA_MAX_MCAST_QPS];
} VhcaMcastGroup;

typedef struct VhcaGidEntry {
    bool valid;
    uint8_t type;                   /* enum vhca_gid_type */
    uint8_t gid[VHCA_GID_LEN];      /* network byte order */
    bool vlan;                      /* on a VLAN interface: 802.1Q tag */
    uint16_t vid;                   /* its VID (vlan only) */
} VhcaGidEntry;

/*
 * The InfiniBand port's subnet management state (link=ib): what the SM
 * sets through the SMA (vhca-sma.c, IBTA 14.2.5) and the link layer and
 * transport read.  Back to its power-on value on reset
 * (vhca_ib_port_reset()); a port that loses its link forgets its LID,
 * LMC and SM (vhca_ib_port_set_link()).
 */
/* VLArbitrationTable entries per priority (PortInfo VLArb*Cap). */
#define VHCA_IB_VL_ARB_CAP              8
/* Device counters the PMA keeps a baseline of (vhca-pma.c). */
#define VHCA_IB_PMA_BASES               8

typedef struct VhcaIbPort {
    uint8_t state;                  /* enum vhca_port_state (7.2) */
    uint16_t lid;                   /* 0: not assigned */
    uint8_t lmc;                    /* LIDs lid .. lid + 2^lmc - 1 */
    uint16_t sm_lid;
    uint8_t sm_sl;
    uint64_t gid_prefix;            /* GIDPrefix, host order */
    uint64_t mkey;
    uint16_t mkey_lease_period;
    uint8_t mkey_protect;           /* M_KeyProtectBits */
    uint32_t cap_mask;              /* CapabilityMask (MODIFY_PORT) */
    uint8_t subnet_timeout;
    uint8_t resp_time_value;
    uint8_t neighbor_mtu;           /* enum vhca_ib_mtu */
    uint8_t operational_vls;        /* OperationalVLs code (1: VL0) */
    uint8_t init_type_reply;
    uint8_t local_phy_errors;       /* LocalPhyErrors threshold */
    uint8_t overrun_errors;         /* OverrunErrors threshold */
    uint16_t mkey_violations;
    uint16_t pkey_violations;
    uint16_t qkey_violations;
    uint16_t pkeys[VHCA_IB_PKEY_TBL_LEN];   /* 0: invalid entry */
    uint8_t sl2vl[16];              /* SL2VLMappingTable (14.2.5.8) */

    /* The port state machine (vhca-sma.c; IBTA 7.2, 14.2.5.6). */
    uint8_t phys_state;             /* enum vhca_port_phys_state */
    bool cable_up;                  /* the backend's link, last reported */
    uint8_t link_down_default;      /* LinkDownDefaultState */
    uint8_t link_width_enabled;     /* LinkWidthEnabled */
    uint8_t link_speed_enabled;     /* LinkSpeedEnabled */
    uint8_t vl_high_limit;
    /* M_Key lease (14.2.4.2): when protection lapses, 0: not running. */
    uint64_t mkey_lease_deadline_ns;
    /*
     * P_KeyViolations and Q_KeyViolations are pkey/qkey_violations plus
     * the DROP_PKEY and DROP_QKEY counts since *_base, when the SM (or
     * MODIFY_PORT) last cleared them.
     */
    uint64_t pkey_violations_base;
    uint64_t qkey_violations_base;
    /* VLArbitrationTable (14.2.5.9): [0] low, [1] high; VL, Weight. */
    uint8_t vl_arb[2][VHCA_IB_VL_ARB_CAP][2];
    /* NodeDescription (14.2.5.2): the node's, set by the driver. */
    uint8_t node_desc[64];
    /* The PMA's baselines of the device counters (vhca-pma.c). */
    uint64_t pma_base[VHCA_IB_PMA_BASES];
    /* The TransactionID of the last trap sent (vhca-trap.c). */
    uint64_t trap_tid;
} VhcaIbPort;

typedef struct VhcaCore {
    const VhcaCoreOps *ops;
    void *opaque;
    VhcaCoreConfig cfg;

    /* Follows the backend, not the guest: survives device reset. */
    bool link_up;

    /* Everything below returns to its power-on value on reset. */
    bool enabled;                   /* CTRL.ENABLE */
    uint32_t status;                /* STATUS ADMQ_ERROR / AEQ_OVERFLOW */
    uint32_t error;                 /* enum vhca_reg_error */

    VhcaRing admq;
    VhcaEq aeq;                     /* EQ 0: STATUS.AEQ_OVERFLOW */

    VhcaRing tx;
    VhcaRing rx;
    uint32_t eth_ctrl;              /* VHCA_ETH_CTRL_* */
    bool eth_irq_armed;
    bool eth_irq_pending;           /* completions while disarmed */

    uint8_t mac[VHCA_ETH_ALEN];     /* current MAC (SET_MAC) */
    uint32_t mtu;                   /* current MTU (SET_MTU) */
    /* Multicast RX filter (SET_RX_FILTER); ALLMULTI until programmed. */
    uint32_t rx_filter_flags;       /* VHCA_RX_FILTER_* */
    uint32_t rx_mcast_count;
    uint8_t rx_mcast[VHCA_MAX_MCAST_MACS][VHCA_ETH_ALEN];

    /* link=ib only; gid_tbl[0] then mirrors gid_prefix:port GUID. */
    VhcaIbPort ib;
    /*
     * link=ib: the handle of the SMI QP, 0 if none.  It is QP0 on the
     * wire (BTH DestQP, DETH SrcQP) and an ordinary handle to the guest,
     * as mlx4's special QPs are.
     */
    uint32_t smi_qpn;

    VhcaGidEntry gid_tbl[VHCA_CORE_GID_TBL_LEN_MAX];
    /*
     * One past the highest valid entry: every packet sent and received
     * looks its GID up, and a guest fills the table from index 0.
     */
    uint32_t gid_tbl_top;
    uint64_t uctx_map[VHCA_CORE_DB_PAGES_MAX / 64];
    /* CQs and QPs a doorbell page owns: DEALLOC_UCTX fails BUSY. */
    uint32_t uctx_users[VHCA_CORE_DB_PAGES_MAX];

    /* RDMA objects, indexed by handle (slots below ids.first unused). */
    VhcaIds pd_ids, mr_ids, eq_ids, cq_ids, qp_ids, srq_ids;
    /* XRC domains (annex A14): XRC SRQs and XRC_TGT QPs in each. */
    VhcaIds xrcd_ids;
    uint32_t xrcd_users[VHCA_MAX_XRCD + 1];
    VhcaPd *pds;
    VhcaMr *mrs;
    VhcaEq comp_eqs[VHCA_MAX_COMP_EQS + 1];
    VhcaCq *cqs;
    VhcaQp *qps;
    VhcaSrq *srqs;
    /* CREATE_MRs so far, never reset: the generation of the newest MR. */
    uint64_t mr_gen;
    /* A CQ went into error: its QPs still have to be moved to ERR. */
    bool cq_error_pending;
    VhcaMcastGroup mcast[VHCA_MAX_MCAST_GROUPS];

    /*
     * Transport work, all QP types (vhca-sched.c), kept so that a pass
     * and a timer costs what the QPs with work or deadlines need, not
     * what the QP table holds: the QPs with work in the order they run,
     * and a heap of the QPs' deadlines, earliest first.
     */
    uint32_t sched_slots;           /* QPNs 0 .. sched_slots - 1 */
    uint8_t *sched_flags;           /* per QPN: VHCA_SCHED_READY, _QUEUED */
    uint32_t *sched_fifo;           /* a ring of the QUEUED QPNs */
    uint32_t sched_head, sched_count;
    struct VhcaDeadline *sched_heap;
    uint32_t *sched_heap_pos;       /* per QPN: heap index + 1, 0: none */
    uint32_t sched_heap_len;
    bool sched_requested;           /* ops->schedule() is outstanding */
    uint64_t sched_timer;           /* deadline armed, UINT64_MAX: none */
    uint32_t rx_queued;             /* received frames waiting on QPs */
    uint32_t rx_queued_bytes;       /* and their buffers' sizes */
    /*
     * Receive frame buffers no queue holds, kept for the next frames of
     * their size class (small, large): allocated once, then reused.
     */
    struct VhcaRxFrame *rx_free[2];
    uint32_t rx_free_bytes;
    uint16_t roce_ip_id;            /* IPv4 identification of RoCE frames */
    /*
     * RoCE congestion control (SET_CC, vhca-cc.c): VHCA_CC_* flags and
     * DCQCN's parameters, shared by every QP.
     */
    uint32_t cc_flags;
    VhcaDcqcnConfig cc;
    uint64_t cc_counters[VHCA_CC_CNT_MAX];  /* QUERY_CC */
    VhcaPfc pfc;                    /* priority flow control (SET_CC) */
    uint64_t rx_rate_next_ns;       /* x-rx-frame-rate: next frame's turn */
    /* Bounce buffers for one RoCE packet's payload and frame. */
    uint8_t roce_payload[4096];
    uint8_t roce_frame[VHCA_ETH_MAX_FRAME];

    uint64_t counters[VHCA_CNT_MAX];
    uint32_t counter_hi_latch[VHCA_CNT_MAX];

    /* Bounce buffer for one outgoing frame. */
    uint8_t tx_frame[VHCA_ETH_MAX_FRAME];
} VhcaCore;

/* The valid range of one VhcaCoreConfig field, named as its property. */
typedef struct VhcaConfigLimit {
    const char *prop;
    size_t offset;                  /* of a uint32_t in VhcaCoreConfig */
    uint32_t min;
    uint32_t max;
} VhcaConfigLimit;

/*
 * Validate @cfg against the property limits.  Returns NULL if it is
 * acceptable, otherwise the first limit it breaks, with the offending
 * value in *@value.
 */
const VhcaConfigLimit *vhca_core_config_violation(const VhcaCoreConfig *cfg,
                                                  uint32_t *value);

/* The same, returning only the name of the first bad property. */
const char *vhca_core_config_check(const VhcaCoreConfig *cfg);

/*
 * @cfg must have passed vhca_core_config_check().  Leaves link down.
 * Returns 0, or -1 if the object tables cannot be allocated.
 */
int vhca_core_init(VhcaCore *core, const VhcaCoreConfig *cfg,
                   const VhcaCoreOps *ops, void *opaque);

/* Free what vhca_core_init() allocated. */
void vhca_core_cleanup(VhcaCore *core);

/* docs/specs/vhca.rst "Reset": CTRL.RESET, FLR and system reset. */
void vhca_core_reset(VhcaCore *core);

/* BAR0 accesses of any size and alignment; the engine filters them. */
uint64_t vhca_core_reg_read(VhcaCore *core, uint64_t offset, unsigned size);
void vhca_core_reg_write(VhcaCore *core, uint64_t offset, uint64_t value,
                         unsigned size);

/* BAR2 (doorbell pages) writes. */
void vhca_core_doorbell_write(VhcaCore *core, uint64_t offset,
                              uint64_t value, unsigned size);

/* Netdev link change: STATUS.LINK_UP and a PORT_CHANGE event. */
void vhca_core_set_link(VhcaCore *core, bool up);

/*
 * Net layer: always true.  Frames are never held back in the backend: a
 * non-RoCE frame without an RX buffer is dropped (RX_NO_BUFFER), as on a
 * real NIC, so RoCE traffic never waits behind the Ethernet ring.
 */
bool vhca_core_can_receive(const VhcaCore *core);
VhcaRxResult vhca_core_receive(VhcaCore *core, const uint8_t *buf,
                               size_t len);

/*
 * Deferred transport work: a bounded pass over the QPs that have work;
 * calls ops->schedule() again if work is left.  Call from a bottom half.
 */
void vhca_core_run_deferred(VhcaCore *core);
/* The deadline given to ops->timer_arm() has passed. */
void vhca_core_timer_expired(VhcaCore *core);

/* Short name of a guest error class, e.g. "admq". */
const char *vhca_core_guest_error_name(VhcaGuestError kind);

/* Names the trace events print for the hooks' enums. */
const char *vhca_core_ring_name(VhcaRingId ring);
const char *vhca_core_qp_change_name(VhcaQpChange why);
const char *vhca_core_retry_name(VhcaRetryCause why);
const char *vhca_core_mw_bind_error_name(VhcaMwBindError why);
const char *vhca_core_mw_invalidation_name(VhcaMwInvalidation why);
/* "rnr-nak" or "nak"; a NAK code's name ("psn-seq-error", ...). */
const char *vhca_core_nak_kind_name(VhcaNakKind kind);
const char *vhca_core_nak_code_name(VhcaNakKind kind, uint8_t code);
const char *vhca_core_qp_type_name(uint8_t type);
/* "RESET", "INIT", ... (enum vhca_qp_state). */
const char *vhca_qp_state_name(uint8_t state);

/*
 * Describe the device's state for people (x-query-vhca and "info vhca",
 * docs/user-guide.rst): port, GIDs, non-zero counters, then every QP, CQ,
 * EQ, SRQ, MR, PD and multicast group, one line each.  Calls @line once per
 * line, without the newline.  Only reads the state, so it may run at any
 * time between two engine calls.
 */
typedef void VhcaDumpLine(void *opaque, const char *line);
void vhca_core_dump(const VhcaCore *core, VhcaDumpLine *line, void *opaque);

#endif /* HW_VHCA_CORE_H */
