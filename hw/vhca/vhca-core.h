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

#define VHCA_CORE_DEFAULT_MTU           1500
/* Ethernet header plus one 802.1Q tag: frame size limit is MTU + 18. */
#define VHCA_ETH_OVERHEAD               18
#define VHCA_ETH_HLEN                   14
#define VHCA_ETH_ALEN                   6
#define VHCA_GID_LEN                    16

/*
 * Classes of guest mistakes the engine reports.  The QEMU glue maps each
 * class to its own trace event and to LOG_GUEST_ERROR; the tests count them.
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
    VHCA_GUEST_ERR__MAX
} VhcaGuestError;

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
    /* The guest did something wrong; @msg is a complete sentence. */
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

/* Fixed at realize from the device properties. */
typedef struct VhcaCoreConfig {
    uint8_t mac[VHCA_ETH_ALEN];     /* permanent MAC */
    uint32_t gid_tbl_len;
    uint32_t num_db_pages;
    uint32_t num_vectors;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
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
} VhcaGidEntry;

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

    VhcaGidEntry gid_tbl[VHCA_CORE_GID_TBL_LEN_MAX];
    uint64_t uctx_map[VHCA_CORE_DB_PAGES_MAX / 64];
    /* CQs and QPs a doorbell page owns: DEALLOC_UCTX fails BUSY. */
    uint32_t uctx_users[VHCA_CORE_DB_PAGES_MAX];

    /* RDMA objects, indexed by handle (slots below ids.first unused). */
    VhcaIds pd_ids, mr_ids, eq_ids, cq_ids, qp_ids;
    VhcaPd *pds;
    VhcaMr *mrs;
    VhcaEq comp_eqs[VHCA_MAX_COMP_EQS + 1];
    VhcaCq *cqs;
    VhcaQp *qps;
    /* A CQ went into error: its QPs still have to be moved to ERR. */
    bool cq_error_pending;
    VhcaMcastGroup mcast[VHCA_MAX_MCAST_GROUPS];

    /* Transport work, all QP types (vhca-sched.c). */
    VhcaIds rc_pending;             /* QPs with deferred work, by QPN */
    uint32_t rc_next_qpn;           /* round robin: where a pass starts */
    bool rc_scheduled;              /* ops->schedule() is outstanding */
    uint64_t rc_timer;              /* deadline armed, UINT64_MAX: none */
    uint32_t rc_rx_queued;          /* received frames waiting on QPs */
    uint16_t rc_ip_id;              /* IPv4 identification of RoCE frames */
    /* Bounce buffers for one RoCE packet's payload and frame. */
    uint8_t rc_payload[4096];
    uint8_t rc_frame[VHCA_ETH_MAX_FRAME];

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

/*
 * Describe the device's state for people (x-query-vhca and "info vhca",
 * docs/user-guide.rst): port, GIDs, non-zero counters, then every QP, CQ,
 * EQ, MR, PD and multicast group, one line each.  Calls @line once per
 * line, without the newline.  Only reads the state, so it may run at any
 * time between two engine calls.
 */
typedef void VhcaDumpLine(void *opaque, const char *line);
void vhca_core_dump(const VhcaCore *core, VhcaDumpLine *line, void *opaque);

#endif /* HW_VHCA_CORE_H */
