/*
 * vhca engine: the transport's scheduler - deferred work, the device
 * timer and the receive queues, for every QP type (RC, UC, UD, GSI).
 * Transmission and loopback are in vhca-tx.c.
 *
 * Neither a doorbell (an MMIO write) nor a received frame (a net layer
 * callback) does transport work in place: a doorbell marks its QP as
 * having work, a received RoCEv2 frame (parsed once, vhca_rx_packet) is
 * checked against its QP, copied to that QP's queue with its parsed
 * headers and marks the QP.  vhca_core_run_deferred
 * (a bottom half in QEMU) then runs the marked QPs in the order they were
 * marked with a budget of packets per QP and per pass, and asks to be run
 * again while work is left, so a 2 GiB message or a flood of frames never
 * stalls the vCPU or the main loop.  A multicast datagram is queued on
 * each QP that joined its group.
 *
 * Each QP has one deadline (retransmit or RNR timer), kept in a heap; the
 * device timer is armed for the earliest of them.  Neither a pass nor the
 * timer walks the QP table (issue 12: at max-qp 16384 that cost 34 us per
 * frame), so their cost follows the QPs with work, not max-qp.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdlib.h>
#include <string.h>

#include "vhca-transport.h"

uint64_t vhca_now(VhcaCore *core)
{
    return core->ops->now_ns ? core->ops->now_ns(core->opaque) : 0;
}

uint32_t vhca_qp_mtu(const VhcaQp *qp)
{
    uint32_t mtu = vhca_ib_mtu_bytes(qp->attr.path_mtu);

    return mtu ? mtu : 256;
}

void vhca_qp_event(VhcaCore *core, uint32_t qpn, uint8_t event)
{
    vhca_aeq_post(core, VHCA_EQE_QP_EVENT, event, qpn, 0);
}

static void vhca_rx_drop_detail(VhcaCore *core, enum vhca_drop_reason reason,
                                const char *detail, uint32_t qpn)
{
    vhca_count(core, VHCA_CNT_ROCE_RX_DROPPED, 1);
    if (reason < VHCA_DROP_MAX) {
        vhca_count(core, VHCA_CNT_DROP(reason), 1);
    }
    if (core->ops->rx_drop) {
        core->ops->rx_drop(core->opaque, vhca_drop_reason_name(reason),
                           detail, qpn);
    }
}

void vhca_rx_drop(VhcaCore *core, enum vhca_drop_reason reason, uint32_t qpn)
{
    vhca_rx_drop_detail(core, reason, "", qpn);
}

void vhca_rx_drop_malformed(VhcaCore *core, VhcaWireError err)
{
    vhca_rx_drop_detail(core, err == VHCA_WIRE_ERR_ICRC ? VHCA_DROP_BAD_ICRC
                                                        : VHCA_DROP_MALFORMED,
                        vhca_wire_error_name(err), 0);
}

/* ---------------------------------------------------------------------- */
/* Work marks and the deferred pass                                       */
/* ---------------------------------------------------------------------- */

/*
 * A QP with work is READY; a READY QP is also QUEUED, in the ring of QPNs
 * in the order the passes run them.  Unmarking clears READY only: the
 * pass skips the QPN when it comes to it.  A QPN is in the ring at most
 * once, so the ring needs a slot per QPN and no more.
 */
#define VHCA_SCHED_READY        1
#define VHCA_SCHED_QUEUED       2

struct VhcaDeadline {
    uint64_t when;
    uint32_t qpn;
};

static void vhca_sched_mark(VhcaCore *core, uint32_t qpn, bool on)
{
    uint8_t *flags = &core->sched_flags[qpn];

    if (!on) {
        *flags &= ~VHCA_SCHED_READY;
        return;
    }
    *flags |= VHCA_SCHED_READY;
    if (!(*flags & VHCA_SCHED_QUEUED)) {
        *flags |= VHCA_SCHED_QUEUED;
        core->sched_fifo[(core->sched_head + core->sched_count) %
                         core->sched_slots] = qpn;
        core->sched_count++;
    }
}

static uint32_t vhca_sched_pop(VhcaCore *core)
{
    uint32_t qpn = core->sched_fifo[core->sched_head];

    core->sched_head = (core->sched_head + 1) % core->sched_slots;
    core->sched_count--;
    core->sched_flags[qpn] &= ~VHCA_SCHED_QUEUED;
    return qpn;
}

static void vhca_sched_request(VhcaCore *core)
{
    if (!core->sched_requested && core->ops->schedule) {
        core->sched_requested = true;
        core->ops->schedule(core->opaque);
    }
}

void vhca_sched_kick(VhcaCore *core, uint32_t qpn)
{
    if (!vhca_qp_lookup(core, qpn)) {
        return;
    }
    vhca_sched_mark(core, qpn, true);
    vhca_sched_request(core);
}

/* Only the QPs with work are in the ring: this does not walk the QP table. */
void vhca_sched_drain_senders(VhcaCore *core, uint32_t cqn)
{
    uint32_t queued = core->sched_count;
    uint32_t i;

    /* Running a QP may queue others (loopback); they go behind these. */
    for (i = 0; i < queued; i++) {
        uint32_t qpn = core->sched_fifo[(core->sched_head + i) %
                                        core->sched_slots];
        VhcaQp *qp;

        if (!(core->sched_flags[qpn] & VHCA_SCHED_READY)) {
            continue;
        }
        qp = vhca_qp_lookup(core, qpn);
        if (qp && qp->send_cqn == cqn) {
            vhca_qp_drain_unreliable(core, qpn, qp);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Deadlines: a binary min-heap of the QPs that have one                  */
/* ---------------------------------------------------------------------- */

static void vhca_heap_place(VhcaCore *core, uint32_t i, struct VhcaDeadline d)
{
    core->sched_heap[i] = d;
    core->sched_heap_pos[d.qpn] = i + 1;
}

static void vhca_heap_sift_up(VhcaCore *core, uint32_t i)
{
    struct VhcaDeadline d = core->sched_heap[i];

    while (i) {
        uint32_t parent = (i - 1) / 2;

        if (core->sched_heap[parent].when <= d.when) {
            break;
        }
        vhca_heap_place(core, i, core->sched_heap[parent]);
        i = parent;
    }
    vhca_heap_place(core, i, d);
}

static void vhca_heap_sift_down(VhcaCore *core, uint32_t i)
{
    struct VhcaDeadline d = core->sched_heap[i];
    uint32_t n = core->sched_heap_len;

    for (;;) {
        uint32_t child = 2 * i + 1;

        if (child >= n) {
            break;
        }
        if (child + 1 < n &&
            core->sched_heap[child + 1].when < core->sched_heap[child].when) {
            child++;
        }
        if (d.when <= core->sched_heap[child].when) {
            break;
        }
        vhca_heap_place(core, i, core->sched_heap[child]);
        i = child;
    }
    vhca_heap_place(core, i, d);
}

/* The entry at @i changed its deadline: move it up or down to its place. */
static void vhca_heap_fix(VhcaCore *core, uint32_t i)
{
    if (i && core->sched_heap[(i - 1) / 2].when > core->sched_heap[i].when) {
        vhca_heap_sift_up(core, i);
    } else {
        vhca_heap_sift_down(core, i);
    }
}

static void vhca_heap_remove(VhcaCore *core, uint32_t i)
{
    uint32_t last = --core->sched_heap_len;

    core->sched_heap_pos[core->sched_heap[i].qpn] = 0;
    if (i != last) {
        vhca_heap_place(core, i, core->sched_heap[last]);
        vhca_heap_fix(core, i);
    }
}

/*
 * The QP's deadline may have changed (it ran, its timer fired, it was
 * reset): move its heap entry to match.  Only the QP's own work sets its
 * deadline (vhca-completer.c, vhca-req.c), so these are the only places
 * the heap can go stale.
 */
static void vhca_sched_deadline_sync(VhcaCore *core, uint32_t qpn,
                                     const VhcaQp *qp)
{
    uint32_t pos = core->sched_heap_pos[qpn];
    struct VhcaDeadline d = { .when = qp->deadline, .qpn = qpn };

    if (!pos) {
        if (d.when != VHCA_NO_DEADLINE) {
            vhca_heap_place(core, core->sched_heap_len++, d);
            vhca_heap_sift_up(core, core->sched_heap_len - 1);
        }
        return;
    }
    if (d.when == VHCA_NO_DEADLINE) {
        vhca_heap_remove(core, pos - 1);
    } else if (core->sched_heap[pos - 1].when != d.when) {
        core->sched_heap[pos - 1].when = d.when;
        vhca_heap_fix(core, pos - 1);
    }
}

/* One QP's share of a pass; true if it has work left. */
static bool vhca_sched_run_qp(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                              unsigned *budget)
{
    bool more = false;

    /* Completer first: ACKs free the window the requester sends into. */
    more |= vhca_completer_run(core, qpn, qp, budget);
    more |= vhca_resp_run(core, qpn, qp, budget);
    more |= vhca_req_run(core, qpn, qp, budget);
    return more;
}

static void vhca_sched_timer_update(VhcaCore *core)
{
    uint64_t earliest = core->sched_heap_len ? core->sched_heap[0].when
                                             : VHCA_NO_DEADLINE;

    if (earliest == core->sched_timer) {
        return;
    }
    core->sched_timer = earliest;
    if (earliest == VHCA_NO_DEADLINE) {
        if (core->ops->timer_cancel) {
            core->ops->timer_cancel(core->opaque);
        }
    } else if (core->ops->timer_arm) {
        core->ops->timer_arm(core->opaque, earliest);
    }
}

/*
 * Each QP queued when the pass starts runs once, in turn, for at most
 * VHCA_SCHED_QP_BUDGET packets, until VHCA_SCHED_PASS_BUDGET packets are
 * done; one with work left queues again behind the others.  The pass
 * touches only QPs with work, whatever the size of the QP table.
 */
void vhca_core_run_deferred(VhcaCore *core)
{
    unsigned budget = VHCA_SCHED_PASS_BUDGET;
    uint32_t turns = core->sched_count;

    core->sched_requested = false;
    while (budget && turns--) {
        uint32_t qpn = vhca_sched_pop(core);
        VhcaQp *qp;
        unsigned share, left;

        if (!(core->sched_flags[qpn] & VHCA_SCHED_READY)) {
            continue;
        }
        vhca_sched_mark(core, qpn, false);
        qp = vhca_qp_lookup(core, qpn);
        if (!qp) {
            continue;
        }
        share = budget < VHCA_SCHED_QP_BUDGET ? budget
                                              : VHCA_SCHED_QP_BUDGET;
        left = share;
        if (vhca_sched_run_qp(core, qpn, qp, &left)) {
            vhca_sched_mark(core, qpn, true);
            /* Work left but no packet sent (a wait): still one of the pass. */
            left = left < share ? left : share - 1;
        }
        budget -= share - left;
        vhca_sched_deadline_sync(core, qpn, qp);
        vhca_cq_errors_settle(core);
    }
    if (core->sched_count) {
        vhca_sched_request(core);
    }
    vhca_sched_timer_update(core);
}

void vhca_core_timer_expired(VhcaCore *core)
{
    uint64_t now = vhca_now(core);
    /* Each QP once: a deadline set again at or before now waits a turn. */
    uint32_t due = core->sched_heap_len;

    core->sched_timer = VHCA_NO_DEADLINE;
    while (due-- && core->sched_heap_len &&
           core->sched_heap[0].when <= now) {
        uint32_t qpn = core->sched_heap[0].qpn;
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        vhca_heap_remove(core, 0);
        if (!qp) {
            continue;
        }
        if (qp->deadline <= now) {
            qp->deadline = VHCA_NO_DEADLINE;
            vhca_completer_timer(core, qpn, qp);
            vhca_sched_kick(core, qpn);
        }
        vhca_sched_deadline_sync(core, qpn, qp);
        vhca_cq_errors_settle(core);
    }
    vhca_sched_timer_update(core);
}

/* ---------------------------------------------------------------------- */
/* Receive queues                                                         */
/* ---------------------------------------------------------------------- */

static void vhca_frameq_push(VhcaCore *core, VhcaFrameQueue *q,
                             VhcaRxFrame *f)
{
    f->next = NULL;
    if (q->tail) {
        q->tail->next = f;
    } else {
        q->head = f;
    }
    q->tail = f;
    q->count++;
    q->bytes += f->size;
    core->rx_queued++;
    core->rx_queued_bytes += f->size;
}

VhcaRxFrame *vhca_frameq_pop(VhcaCore *core, VhcaFrameQueue *q)
{
    VhcaRxFrame *f = q->head;

    if (!f) {
        return NULL;
    }
    q->head = f->next;
    if (!q->head) {
        q->tail = NULL;
    }
    q->count--;
    q->bytes -= f->size;
    core->rx_queued--;
    core->rx_queued_bytes -= f->size;
    return f;
}

/*
 * Receive buffers: two size classes, so that ACKs and small messages do
 * not each hold a buffer for a full MTU.  A buffer freed goes on its
 * class's list and the next frame of that class takes it: in a steady
 * stream no frame costs a malloc(), and the heap does not shrink after a
 * burst and grow again for the next (issue 12: that was more than half
 * of the engine's time).
 */
uint32_t vhca_rx_buf_size(uint32_t len)
{
    if (len <= VHCA_RX_DATAGRAM_SMALL) {
        return (uint32_t)sizeof(VhcaRxFrame) + VHCA_RX_DATAGRAM_SMALL;
    }
    if (len <= VHCA_RX_DATAGRAM_MAX) {
        return (uint32_t)sizeof(VhcaRxFrame) + VHCA_RX_DATAGRAM_MAX;
    }
    return 0;
}

static unsigned vhca_rx_buf_class(uint32_t size)
{
    return size > sizeof(VhcaRxFrame) + VHCA_RX_DATAGRAM_SMALL;
}

/* Free the kept buffers of class @class. */
static void vhca_rx_buf_release(VhcaCore *core, unsigned class)
{
    VhcaRxFrame *f;

    while ((f = core->rx_free[class])) {
        core->rx_free[class] = f->next;
        core->rx_free_bytes -= f->size;
        free(f);
    }
}

/*
 * A buffer of @size bytes (vhca_rx_buf_size()) for a frame the queue
 * bounds admitted: a kept one, or a new one once the buffers kept in the
 * other class are given up, so that kept and queued buffers stay within
 * VHCA_RXQ_MAX_DEV_BYTES.  NULL if the heap has none.
 */
static VhcaRxFrame *vhca_rx_buf_get(VhcaCore *core, uint32_t size)
{
    unsigned class = vhca_rx_buf_class(size);
    VhcaRxFrame *f = core->rx_free[class];

    if (f) {
        core->rx_free[class] = f->next;
        core->rx_free_bytes -= size;
        return f;
    }
    if ((uint64_t)core->rx_queued_bytes + core->rx_free_bytes + size >
        VHCA_RXQ_MAX_DEV_BYTES) {
        vhca_rx_buf_release(core, !class);
    }
    f = malloc(size);
    if (f) {
        f->core = core;
        f->size = size;
    }
    return f;
}

void vhca_rx_frame_free(VhcaRxFrame *f)
{
    VhcaCore *core = f->core;
    unsigned class = vhca_rx_buf_class(f->size);

    f->next = core->rx_free[class];
    core->rx_free[class] = f;
    core->rx_free_bytes += f->size;
}

/* The QP leaves a receiving state or goes away: its frames are lost. */
static void vhca_frameq_clear(VhcaCore *core, VhcaFrameQueue *q)
{
    VhcaRxFrame *f;

    while ((f = vhca_frameq_pop(core, q))) {
        vhca_rx_drop(core, VHCA_DROP_QP_STATE, f->pkt.tp.bth.dest_qpn);
        vhca_rx_frame_free(f);
    }
}

/* IBTA 9.6.1.1: only P_Keys in our table (the default one) are accepted. */
static bool vhca_rx_pkey_ok(uint16_t pkey)
{
    return (pkey & 0x7fff) == (VHCA_DEFAULT_PKEY & 0x7fff);
}

/*
 * IBTA 9.6.1: each QP type takes its own transport's opcodes only; of
 * XRC's, the target takes the requests and the initiator the responses
 * (annex A14).
 */
static bool vhca_qp_takes(const VhcaQp *qp, uint8_t opcode,
                          const VhcaWireOpcodeInfo *info)
{
    switch (opcode & VHCA_IB_TRANSPORT_MASK) {
    case VHCA_IB_TRANSPORT_XRC:
        return qp->type == ((info->flags & VHCA_WIRE_OPF_REQUEST) ?
                            VHCA_QPT_XRC_TGT : VHCA_QPT_XRC_INI);
    case VHCA_IB_TRANSPORT_RC:
        return qp->type == VHCA_QPT_RC;
    case VHCA_IB_TRANSPORT_UC:
        return qp->type == VHCA_QPT_UC;
    case VHCA_IB_TRANSPORT_UD:
        return qp->type == VHCA_QPT_UD || qp->type == VHCA_QPT_GSI;
    default:
        return false;
    }
}

/*
 * The largest payload a packet for @qp may carry: its path MTU, or the
 * port's active MTU if that is larger (a UD QP has no path MTU).  Up to
 * it, a packet goes to the QP, whose transport judges the length against
 * the path MTU (an RC responder NAKs it, IBTA 9.7.5.2.4); beyond it no
 * sender this port talks to may go, and a frame that does is dropped
 * before it costs the device memory.
 */
static uint32_t vhca_rx_max_payload(const VhcaCore *core, const VhcaQp *qp)
{
    uint32_t path = vhca_qp_mtu(qp);
    uint32_t port = vhca_ib_mtu_bytes(vhca_port_active_mtu(core));

    return path > port ? path : port;
}

/*
 * Queue a copy of @frame (parsed into @pkt) on @q of QP @qpn and mark the
 * QP.  Only the IP datagram up to the end of the RoCE packet is kept:
 * nothing of a frame's Ethernet header is needed any more, and bytes
 * past the UDP length (or the IP length) are not the packet's.
 */
static void vhca_rx_enqueue(VhcaCore *core, uint32_t qpn, const VhcaQp *qp,
                            VhcaFrameQueue *q, const uint8_t *frame,
                            size_t len, const VhcaWirePacket *pkt)
{
    uint32_t start = pkt->l3_offset;
    uint64_t end = (uint64_t)pkt->payload_offset + pkt->payload_len +
                   pkt->tp.bth.pad + VHCA_IB_ICRC_LEN;
    uint32_t size;
    VhcaRxFrame *f;

    if (pkt->payload_len > vhca_rx_max_payload(core, qp)) {
        vhca_rx_drop(core, VHCA_DROP_OVERSIZE, qpn);
        return;
    }
    /* The parser vouches for this; a frame that breaks it is dropped. */
    if (end > len || start > pkt->payload_offset) {
        vhca_rx_drop(core, VHCA_DROP_MALFORMED, qpn);
        return;
    }
    size = vhca_rx_buf_size((uint32_t)(end - start));
    if (!size) {
        vhca_rx_drop(core, VHCA_DROP_OVERSIZE, qpn);
        return;
    }
    if (q->count >= VHCA_RXQ_MAX_QP || core->rx_queued >= VHCA_RXQ_MAX_DEV ||
        q->bytes + size > VHCA_RXQ_MAX_QP_BYTES ||
        core->rx_queued_bytes + size > VHCA_RXQ_MAX_DEV_BYTES) {
        /* A real HCA's receive buffer is full too: the sender retries. */
        vhca_rx_drop(core, VHCA_DROP_QUEUE_FULL, qpn);
        return;
    }
    f = vhca_rx_buf_get(core, size);
    if (!f) {
        vhca_rx_drop(core, VHCA_DROP_NO_MEMORY, qpn);
        return;
    }
    memcpy(f->data, frame + start, end - start);
    f->pkt = *pkt;
    f->pkt.l3_offset -= start;
    f->pkt.l4_offset -= start;
    f->pkt.l4_len = (uint32_t)(end - pkt->l4_offset);
    f->pkt.bth_offset -= start;
    f->pkt.payload_offset -= start;
    f->pkt.payload = f->data + f->pkt.payload_offset;
    vhca_frameq_push(core, q, f);
    vhca_sched_kick(core, qpn);
}

/*
 * A UD datagram to DestQP 0xFFFFFF (IBTA 10.5.2.1): one copy for each of
 * our QPs in the group of its destination GID.  @looped: our own, looped
 * back inside the device; a copy of it coming back from the wire (a
 * backend that echoes multicast) is not delivered twice.
 */
static void vhca_rx_mcast(VhcaCore *core, const uint8_t *frame, size_t len,
                          const VhcaWirePacket *pkt, bool looped)
{
    const VhcaMcastGroup *g = NULL;
    uint32_t qpns[VHCA_MAX_MCAST_QPS];
    uint32_t i, n;

    if (!looped && !memcmp(pkt->net.smac, core->mac, VHCA_ETH_ALEN)) {
        vhca_rx_drop(core, VHCA_DROP_MCAST_ECHO, VHCA_MCAST_QPN);
        return;
    }
    if (vhca_gid_is_multicast(pkt->net.dgid)) {
        g = vhca_mcast_find(core, pkt->net.dgid);
    }
    if (!g) {
        vhca_rx_drop(core, VHCA_DROP_MCAST_NO_MEMBER, VHCA_MCAST_QPN);
        return;
    }
    n = g->nqps;
    memcpy(qpns, g->qpns, n * sizeof(qpns[0]));
    for (i = 0; i < n; i++) {
        VhcaQp *qp = vhca_qp_lookup(core, qpns[i]);

        if (!qp || !vhca_qp_receives(qp)) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpns[i]);
            continue;
        }
        vhca_rx_enqueue(core, qpns[i], qp, &qp->rxq_req, frame, len, pkt);
    }
}

/*
 * Check what can be checked without the QP's progress (integrity and
 * headers, P_Key, QP, transport, state) and queue the packet on its QP;
 * the rest happens in the deferred pass.
 */
void vhca_rx_packet(VhcaCore *core, const uint8_t *frame, size_t len,
                    VhcaWirePacket *pkt, bool looped)
{
    const VhcaWireOpcodeInfo *info;
    VhcaFrameQueue *q;
    VhcaWireError err;
    uint32_t qpn;
    VhcaQp *qp;

    err = vhca_wire_parse_ib(frame, len, pkt);
    if (err != VHCA_WIRE_OK) {
        vhca_rx_drop_malformed(core, err);
        return;
    }
    if (!vhca_rx_pkey_ok(pkt->tp.bth.pkey)) {
        vhca_rx_drop(core, VHCA_DROP_PKEY, pkt->tp.bth.dest_qpn);
        return;
    }
    info = vhca_wire_opcode_info(pkt->tp.bth.opcode);
    qpn = pkt->tp.bth.dest_qpn;
    if ((pkt->tp.bth.opcode & VHCA_IB_TRANSPORT_MASK) ==
        VHCA_IB_TRANSPORT_UD && qpn == VHCA_MCAST_QPN) {
        vhca_rx_mcast(core, frame, len, pkt, looped);
        return;
    }
    qp = vhca_qp_lookup(core, qpn);
    /* IBTA 9.6.1: unknown QP, or a service the QP does not run: drop. */
    if (!qp || !vhca_qp_takes(qp, pkt->tp.bth.opcode, info)) {
        vhca_rx_drop(core, VHCA_DROP_NO_QP, qpn);
        return;
    }
    if (info->flags & VHCA_WIRE_OPF_REQUEST) {
        if (!vhca_qp_receives(qp)) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpn);
            return;
        }
        q = &qp->rxq_req;
    } else {
        if (qp->state != VHCA_QPS_RTS && qp->state != VHCA_QPS_SQD) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpn);
            return;
        }
        q = &qp->rxq_resp;
    }
    vhca_rx_enqueue(core, qpn, qp, q, frame, len, pkt);
}

/* ---------------------------------------------------------------------- */
/* QP life cycle                                                          */
/* ---------------------------------------------------------------------- */

int vhca_qp_transport_init(VhcaQp *qp)
{
    uint32_t entries = 1u << qp->sq.log_size;

    qp->req.win_size = entries < VHCA_REQ_WINDOW ? entries
                                                 : VHCA_REQ_WINDOW;
    qp->req.win = calloc(qp->req.win_size, sizeof(*qp->req.win));
    qp->deadline = VHCA_NO_DEADLINE;
    if (!qp->req.win) {
        return -1;
    }
    /* Only a reliable QP answers READs and atomics (IBTA 9.7.5.1.3). */
    if (vhca_qp_is_reliable(qp)) {
        qp->resp.res = calloc(VHCA_MAX_RD_ATOMIC, sizeof(*qp->resp.res));
        if (!qp->resp.res) {
            return -1;
        }
    }
    return 0;
}

void vhca_qp_transport_free(VhcaCore *core, VhcaQp *qp)
{
    vhca_frameq_clear(core, &qp->rxq_req);
    vhca_frameq_clear(core, &qp->rxq_resp);
    free(qp->req.win);
    qp->req.win = NULL;
    free(qp->resp.res);
    qp->resp.res = NULL;
}

/* The responder as a new QP's: no message, PSN 0, resources all free. */
static void vhca_resp_clear(VhcaQp *qp)
{
    VhcaRdRes *res = qp->resp.res;

    memset(&qp->resp, 0, sizeof(qp->resp));
    if (res) {
        memset(res, 0, VHCA_MAX_RD_ATOMIC * sizeof(*res));
    }
    qp->resp.res = res;
}

void vhca_qp_transport_reset(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaSendMeta *win = qp->req.win;
    uint32_t win_size = qp->req.win_size;

    vhca_frameq_clear(core, &qp->rxq_req);
    vhca_frameq_clear(core, &qp->rxq_resp);
    memset(&qp->req, 0, sizeof(qp->req));
    vhca_resp_clear(qp);
    qp->req.win = win;
    qp->req.win_size = win_size;
    qp->req.fetched = qp->req.cur = qp->sq.ci;
    qp->deadline = VHCA_NO_DEADLINE;
    vhca_sched_deadline_sync(core, qpn, qp);
    vhca_sched_mark(core, qpn, false);
}

void vhca_qp_transport_enter(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             uint8_t prev, uint8_t next)
{
    /* The same for every type; UC and UD use the PSNs and nothing else. */
    if (next == VHCA_QPS_RTR && prev == VHCA_QPS_INIT) {
        vhca_resp_clear(qp);
        qp->resp.epsn = qp->attr.rq_psn;
    }
    if (next == VHCA_QPS_RTS && prev == VHCA_QPS_RTR) {
        VhcaRequester *req = &qp->req;

        req->fetched = req->cur = qp->sq.ci;
        req->cur_pkt = 0;
        req->next_psn = req->una_psn = req->sent_psn = qp->attr.sq_psn;
        req->retry_left = qp->attr.retry_cnt;
        req->rnr_left = qp->attr.rnr_retry;
    }
    if (next == VHCA_QPS_RTS || next == VHCA_QPS_SQD) {
        /* WQEs posted in INIT or RTR, or held in SQD, may go now. */
        vhca_sched_kick(core, qpn);
    }
}

void vhca_sched_cleanup(VhcaCore *core)
{
    uint32_t qpn;

    if (!core->qps) {
        return;
    }
    for (qpn = 0; qpn < core->cfg.max_qp + VHCA_FIRST_QPN; qpn++) {
        vhca_qp_transport_free(core, &core->qps[qpn]);
    }
    core->rx_queued = 0;
    core->rx_queued_bytes = 0;
    vhca_rx_buf_release(core, 0);
    vhca_rx_buf_release(core, 1);
    if (core->sched_flags) {
        memset(core->sched_flags, 0, core->sched_slots);
        memset(core->sched_heap_pos, 0,
               core->sched_slots * sizeof(*core->sched_heap_pos));
    }
    core->sched_head = core->sched_count = 0;
    core->sched_heap_len = 0;
    if (core->sched_timer != VHCA_NO_DEADLINE && core->ops->timer_cancel) {
        core->ops->timer_cancel(core->opaque);
    }
    core->sched_timer = VHCA_NO_DEADLINE;
}

/*
 * Per QPN: a flag byte, a ring slot, a heap position and a heap entry
 * (about 25 bytes), allocated for the whole QP table at once.
 */
int vhca_sched_init(VhcaCore *core, uint32_t slots)
{
    core->sched_slots = slots;
    core->sched_flags = calloc(slots, sizeof(*core->sched_flags));
    core->sched_fifo = calloc(slots, sizeof(*core->sched_fifo));
    core->sched_heap = calloc(slots, sizeof(*core->sched_heap));
    core->sched_heap_pos = calloc(slots, sizeof(*core->sched_heap_pos));
    core->sched_head = core->sched_count = core->sched_heap_len = 0;
    if (!core->sched_flags || !core->sched_fifo || !core->sched_heap ||
        !core->sched_heap_pos) {
        vhca_sched_destroy(core);
        return -1;
    }
    return 0;
}

void vhca_sched_destroy(VhcaCore *core)
{
    free(core->sched_flags);
    free(core->sched_fifo);
    free(core->sched_heap);
    free(core->sched_heap_pos);
    core->sched_flags = NULL;
    core->sched_fifo = NULL;
    core->sched_heap = NULL;
    core->sched_heap_pos = NULL;
    core->sched_slots = 0;
    core->sched_head = core->sched_count = core->sched_heap_len = 0;
}
