/*
 * Test harness for the vhca engine without QEMU: a fake guest RAM, a frame
 * capture for send_frame, an interrupt recorder and a guest error recorder,
 * plus helpers that play the driver (ring set-up, admin commands).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_HARNESS_H
#define VHCA_HARNESS_H

#include <glib.h>

#include "vhca-core.h"

/*
 * Guest RAM is [RAM_BASE, RAM_BASE + RAM_SIZE): address 0 and everything
 * past the end are outside it, as MMIO holes and bad pointers would be.
 */
#define RAM_BASE            0x100000ull
#define RAM_SIZE            (4u << 20)
#define BAD_ADDR            0x80000000ull
/*
 * The RAM size of the harnesses made from now on: RAM_SIZE, which the
 * tests assume; a benchmark with many QPs asks for more (below BAD_ADDR).
 */
extern size_t harness_ram_size;

/* Where the harness puts the rings in guest RAM. */
#define ADMQ_ADDR           (RAM_BASE + 0x0000)
#define ADMQ_LOG            3                   /* 8 commands */
#define AEQ_ADDR            (RAM_BASE + 0x1000)
#define AEQ_LOG             3                   /* 8 events */
#define TX_RING_ADDR        (RAM_BASE + 0x2000)
#define RX_RING_ADDR        (RAM_BASE + 0x3000)
#define ETH_LOG             2                   /* 4 descriptors */
#define DATA_ADDR           (RAM_BASE + 0x10000)
#define TX_BUF_ADDR         (RAM_BASE + 0x20000)
#define RX_BUF_ADDR         (RAM_BASE + 0x40000)
#define RX_BUF_SIZE         0x2400              /* one 9018-byte frame */

#define MAX_FRAMES          64

typedef struct CapturedFrame {
    size_t len;
    uint8_t data[VHCA_ETH_MAX_FRAME];
} CapturedFrame;

typedef struct Harness Harness;

/*
 * What each typed trace hook of VhcaCoreOps saw: how often it was called
 * and the last call's arguments (named as in vhca-core.h).
 */
typedef struct EvQpState {
    unsigned n;
    uint32_t qpn;
    uint8_t type, from, to;
    VhcaQpChange why;
} EvQpState;

typedef struct EvRetransmit {
    unsigned n;
    uint32_t qpn, psn;
    VhcaRetryCause why;
} EvRetransmit;

typedef struct EvNak {
    unsigned n;
    uint32_t qpn, psn;
    VhcaNakKind kind;
    uint8_t code;
} EvNak;

typedef struct EvRnrWait {
    unsigned n;
    uint32_t qpn, psn;
    uint64_t timer_ns;
} EvRnrWait;

typedef struct EvAckTimeout {
    unsigned n;
    uint32_t qpn, psn;
    uint8_t retries_left;
} EvAckTimeout;

typedef struct EvWindowCut {
    unsigned n;
    uint32_t qpn, from, to;
    uint32_t min_to;                /* the smallest window it was cut to */
    VhcaRetryCause why;
} EvWindowCut;

typedef struct EvTimerBackoff {
    unsigned n;
    uint32_t qpn;
    uint64_t timer_ns;
    uint8_t backoff;
} EvTimerBackoff;

typedef struct EvCqeError {
    unsigned n;
    uint32_t cqn, qpn;
    uint64_t wr_id;
    uint8_t opcode, status;
    uint32_t vendor_err;
} EvCqeError;

typedef struct EvSrqLimit {
    unsigned n;
    uint32_t srqn, limit, wqes;
} EvSrqLimit;

typedef struct EvMwBindRefused {
    unsigned n;
    uint32_t qpn, key;
    VhcaMwBindError why;
} EvMwBindRefused;

typedef struct EvMwInvalidated {
    unsigned n;
    uint32_t qpn, key;
    VhcaMwInvalidation why;
} EvMwInvalidated;

typedef struct EvUbRegAccess {
    unsigned n;
    bool write;
    uint64_t offset;
    unsigned size;
    uint64_t value;
} EvUbRegAccess;

typedef struct EvUbDoorbell {
    unsigned n;
    uint64_t page;
    uint32_t offset;
    unsigned size;
    uint32_t object;
} EvUbDoorbell;

typedef struct EvUbRingDoorbell {
    unsigned n;
    VhcaRingId ring;
    uint32_t object, value;
} EvUbRingDoorbell;

typedef struct EvUbCqDoorbell {
    unsigned n;
    uint32_t cqn, value, ci, pi;
} EvUbCqDoorbell;

typedef struct EvErrDoorbellIndex {
    unsigned n;
    VhcaRingId ring;
    uint32_t object, index, low, high;
} EvErrDoorbellIndex;

typedef struct EvErrRingConfig {
    unsigned n;
    VhcaRingId ring;
    uint64_t base;
    uint32_t log_size;
} EvErrRingConfig;

typedef struct EvErrRingRunning {
    unsigned n;
    VhcaRingId ring;
    uint32_t reg, value;
} EvErrRingRunning;

typedef struct EvErrGuestRam {
    unsigned n;
    VhcaRingId ring;
    uint32_t object, index;
    uint64_t addr;
} EvErrGuestRam;

typedef struct EvErrFrameLen {
    unsigned n;
    VhcaRingId ring;
    uint32_t index, len, min, max;
} EvErrFrameLen;

typedef struct EvErrQueueOverflow {
    unsigned n;
    VhcaRingId ring;
    uint32_t object, pi, ci;
} EvErrQueueOverflow;

typedef struct EvErrWqe {
    unsigned n;
    uint32_t qpn;
    VhcaRingId queue;
    uint32_t index;
    uint8_t opcode, status;
    uint32_t vendor_err;
} EvErrWqe;

typedef struct EvErrAdminCmd {
    unsigned n;
    uint16_t opcode;
    uint8_t status;
    uint32_t syndrome;
} EvErrAdminCmd;

/* Priority flow control (pfc_* hooks): per priority, the last call's. */
typedef struct EvPfc {
    unsigned rcvd[8], sent[8], resumed[8];
    uint16_t rcvd_quanta[8], sent_quanta[8];
    bool rcvd_paused[8];
    uint64_t resumed_paused_ns[8];
} EvPfc;

typedef struct HarnessEvents {
    EvQpState qp_state;
    EvRetransmit retransmit;
    EvNak nak_sent;
    EvNak nak_rcvd;
    EvRnrWait rnr_wait;
    EvAckTimeout ack_timeout;
    EvWindowCut window_cut;
    EvTimerBackoff timer_backoff;
    EvCqeError cqe_error;
    EvSrqLimit srq_limit;
    EvMwBindRefused mw_bind_refused;
    EvMwInvalidated mw_invalidated;
    EvPfc pfc;
    /* Guest errors: each comes with one guest_error() sentence. */
    EvUbRegAccess ub_reg_access;
    EvUbDoorbell ub_doorbell;
    EvUbRingDoorbell ub_ring_doorbell;
    EvUbCqDoorbell ub_cq_doorbell;
    EvErrDoorbellIndex err_doorbell_index;
    EvErrRingConfig err_ring_config;
    EvErrRingRunning err_ring_running;
    EvErrGuestRam err_guest_ram;
    EvErrFrameLen err_frame_len;
    EvErrQueueOverflow err_queue_overflow;
    EvErrWqe err_wqe;
    EvErrAdminCmd err_admin_cmd;
} HarnessEvents;

struct Harness {
    VhcaCore core;
    uint8_t *ram;
    size_t ram_size;                /* harness_ram_size when it was made */

    /* Recorders. */
    unsigned irqs[VHCA_CORE_VECTORS_MAX];
    unsigned nframes;
    CapturedFrame frames[MAX_FRAMES];
    unsigned rx_ready_calls;
    unsigned guest_errors[VHCA_GUEST_ERR__MAX];
    unsigned rx_drops;              /* rx_drop calls, and the last one's */
    char last_drop_reason[32];
    char last_drop_detail[32];
    uint32_t last_drop_qpn;
    char last_error[256];
    unsigned admin_done_calls;
    uint16_t last_opcode;
    uint8_t last_status;
    uint32_t last_token;
    HarnessEvents ev;
    /*
     * Every guest error has a typed hook (ev.ub_*, ev.err_*) and a
     * sentence (guest_error): harness_free() checks they pair up.
     */
    unsigned guest_error_calls;
    unsigned typed_error_calls;

    /* Fault injection: fail the Nth DMA write from now (1 = next). */
    unsigned fail_dma_write_after;

    /* Transport services: a fake clock the test advances, the timer. */
    uint64_t now_ns;
    bool timer_armed;
    uint64_t timer_deadline;
    bool work_scheduled;            /* ops->schedule() since the last run */

    /*
     * Two devices back to back: with @peer set, sent frames go to
     * @tx_hook (fault injection) or straight to the peer's receive path,
     * and are counted in tx_frames instead of being captured.
     */
    struct Harness *peer;
    void (*tx_hook)(struct Harness *h, const uint8_t *buf, size_t len);
    void *tx_hook_opaque;
    unsigned tx_frames;

    /* Driver-side state. */
    uint32_t admq_pi;
    uint32_t aeq_ci;
    uint64_t rdma_next;             /* bump allocator, see rdma_alloc() */
};

/* The standard device: MAC 52:54:00:12:34:56, 16 GIDs, 4 pages, 8 vectors. */
extern const VhcaCoreConfig harness_default_cfg;
extern const uint8_t harness_mac[6];

Harness *harness_new(const VhcaCoreConfig *cfg);
void harness_free(Harness *h);

/* Deliver a frame to @h's receive path (what the wire does). */
void harness_deliver(Harness *h, const uint8_t *buf, size_t len);
/* Run deferred work until none is scheduled. */
void harness_run(Harness *h);
/* Advance the fake clock by @ns, firing the timer if it is due. */
void harness_advance(Harness *h, uint64_t ns);
/*
 * Run two connected devices until both are idle; then, while a timer is
 * armed and at most @max_ns of fake time have passed, jump to the next
 * deadline and run again.  Returns the fake time that passed.
 */
uint64_t harness_pair_settle(Harness *a, Harness *b, uint64_t max_ns);
/* Move both clocks to the earlier armed timer deadline and fire it. */
void harness_pair_advance_to_timer(Harness *a, Harness *b);

/* Guest RAM access for the test (asserts the range is inside RAM). */
void *ram_ptr(Harness *h, uint64_t addr, size_t len);
void ram_write(Harness *h, uint64_t addr, const void *buf, size_t len);
void ram_read(Harness *h, uint64_t addr, void *buf, size_t len);

uint32_t reg_read(Harness *h, uint32_t offset);
void reg_write(Harness *h, uint32_t offset, uint32_t value);
uint64_t counter(Harness *h, enum vhca_counter c);
unsigned guest_errors_total(const Harness *h);

/* Program and enable the admin queue and async EQ; asserts READY. */
void harness_enable(Harness *h);

/*
 * Queue one admin command in the next slot and ring the doorbell.
 * Returns the slot's output status; *out (if not NULL) gets out[16].
 */
uint8_t admin_cmd(Harness *h, uint16_t opcode, uint32_t token,
                  const void *in, size_t in_len, void *out);
/* Write a command to slot @pi without ringing the doorbell. */
void admin_post(Harness *h, uint32_t pi, uint16_t opcode, uint32_t token,
                const void *in, size_t in_len);
/* Read back the output half of the entry at @slot. */
struct vhca_admin_cmd admin_entry(Harness *h, uint32_t slot);

/* The EQE at slot @index of the async EQ. */
struct vhca_eqe aeq_entry(Harness *h, uint32_t index);

/* Convenience commands. */
uint8_t add_gid(Harness *h, uint16_t index, uint8_t type,
                const uint8_t gid[16]);
void gid_from_ipv4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
                   uint8_t d);

/* Ethernet: program ring addresses and enable TX and/or RX. */
void eth_setup(Harness *h, uint32_t eth_ctrl);
/* Post TX descriptor @index with a frame and ring TX_PI = index + 1. */
void tx_post(Harness *h, uint32_t index, uint64_t addr, uint16_t len);
struct vhca_eth_desc tx_desc(Harness *h, uint32_t index);
/* Post RX buffer @index of @size bytes (not rung). */
void rx_post(Harness *h, uint32_t index, uint16_t size);
struct vhca_eth_desc rx_desc(Harness *h, uint32_t index);

/* Build an Ethernet frame; returns its length. */
size_t build_eth(uint8_t *buf, const uint8_t dst[6], uint16_t ethertype,
                 size_t payload_len);
/*
 * Build a UDP datagram in IPv4 or IPv6 to @dport and the given address
 * (4 or 16 bytes), addressed to our MAC.  Returns the frame length.
 */
size_t build_udp4(uint8_t *buf, const uint8_t daddr[4], uint16_t dport,
                  size_t payload_len);
size_t build_udp6(uint8_t *buf, const uint8_t daddr[16], uint16_t dport,
                  size_t payload_len);

/*
 * RDMA resources.  Mailboxes go at MBOX_ADDR; queues, page lists and
 * buffers come from a bump allocator over [RDMA_MEM_BASE, RAM end).
 */
#define MBOX_ADDR           (RAM_BASE + 0x8000)
#define RDMA_MEM_BASE       (RAM_BASE + 0x100000)

/* Zeroed 4 KiB pages, contiguous in guest RAM. */
uint64_t rdma_alloc(Harness *h, uint32_t npages);
/*
 * A level 1 page list naming @npages pages starting at @first, in
 * reverse order when @reverse (so queues are not contiguous).
 */
uint64_t rdma_pbl(Harness *h, uint64_t first, uint32_t npages, bool reverse);

/* A resource command with its mailbox; *handle, *key from out (if set). */
uint8_t rdma_cmd(Harness *h, uint16_t opcode, const void *mbox, size_t len,
                 uint32_t *handle, uint32_t *key);
/* The congestion counter @c, through QUERY_CC (in the mailbox). */
uint64_t cc_counter(Harness *h, enum vhca_cc_counter c);
/* DESTROY_* (and anything taking struct vhca_cmd_obj_in). */
uint8_t rdma_destroy(Harness *h, uint16_t opcode, uint32_t handle);

uint32_t rdma_alloc_uctx(Harness *h);
uint32_t rdma_create_pd(Harness *h);
/* A completion EQ of 2^log entries on @vector; *ring gets its page. */
uint32_t rdma_create_eq(Harness *h, uint8_t log, uint32_t vector,
                        uint64_t *ring);

typedef struct TestCq {
    uint32_t cqn;
    uint8_t log;
    uint64_t ring;                  /* contiguous pages, in reverse pbl */
    uint64_t dbrec;
    uint32_t ci;                    /* the test's consumer index */
} TestCq;

uint8_t rdma_create_cq(Harness *h, TestCq *cq, uint8_t log, uint32_t eqn,
                       uint32_t db_page);
/* The CQE at @index; see cqe_owner_ok for validity. */
struct vhca_cqe cq_entry(Harness *h, const TestCq *cq, uint32_t index);
/* Poll the next CQE if its owner bit says it is new. */
bool cq_poll(Harness *h, TestCq *cq, struct vhca_cqe *cqe);

typedef struct TestQp {
    uint32_t qpn;
    uint8_t sq_log, rq_log;
    uint64_t sq, rq;                /* ring memory (contiguous) */
    uint32_t sq_pi, rq_pi;
    uint32_t db_page;
} TestQp;

uint8_t rdma_create_qp(Harness *h, TestQp *qp, uint8_t type, uint32_t pdn,
                       uint32_t send_cqn, uint32_t recv_cqn,
                       uint32_t db_page);
/* Write a send/recv WQE at the producer index and advance it (no bell). */
void qp_put_send(Harness *h, TestQp *qp, uint64_t wr_id, uint8_t opcode,
                 uint8_t flags);
void qp_put_recv(Harness *h, TestQp *qp, uint64_t wr_id);
/* Write a whole WQE (little-endian already) at the producer index. */
void qp_put_send_wqe(Harness *h, TestQp *qp, const struct vhca_send_wqe *wqe);
void qp_put_recv_wqe(Harness *h, TestQp *qp, const struct vhca_recv_wqe *wqe);
/* CREATE_MR of a physical (iova = guest address) MR; returns the key. */
uint32_t rdma_create_phys_mr(Harness *h, uint32_t pdn, uint64_t iova,
                             uint64_t len, uint32_t access);
/* A 64-bit doorbell write on @qp's page. */
void ring_doorbell(Harness *h, uint32_t page, uint32_t reg, uint32_t object,
                   uint32_t value);

uint8_t rdma_modify_qp(Harness *h, const struct vhca_qp_attr *attr);
uint8_t rdma_query_qp(Harness *h, uint32_t qpn, struct vhca_qp_attr *attr);
/* The attributes each step of the usual bring-up requires. */
uint32_t qp_required_mask(uint8_t type, uint8_t cur, uint8_t next);
/*
 * Walk a RC/UC/UD/GSI QP from RESET to @state (not SQE) along RESET, INIT,
 * RTR, RTS, SQD with the required attributes.  GID 0 must exist.
 */
void qp_move_to(Harness *h, uint32_t qpn, uint8_t type, uint8_t state);
/* The attributes qp_move_to() uses, valid for every transition. */
void qp_good_attr(struct vhca_qp_attr *attr, uint32_t qpn);
uint8_t qp_state(Harness *h, uint32_t qpn);

#endif /* VHCA_HARNESS_H */
