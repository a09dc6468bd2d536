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
 * (a bottom half in QEMU) then runs the marked QPs round robin with a
 * budget of packets per QP and per pass, and asks to be run again while
 * work is left, so a 2 GiB message or a flood of frames never stalls the
 * vCPU or the main loop.  A multicast datagram is queued on each QP that
 * joined its group.
 *
 * Each QP has one deadline (retransmit or RNR timer); the device timer is
 * armed for the earliest of them.
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

static void vhca_sched_mark(VhcaCore *core, uint32_t qpn, bool on)
{
    uint64_t bit = 1ull << (qpn % 64);

    if (on) {
        core->sched_pending.map[qpn / 64] |= bit;
    } else {
        core->sched_pending.map[qpn / 64] &= ~bit;
    }
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

/* The lowest marked QPN at or after @from, or 0 if there is none. */
static uint32_t vhca_sched_next_marked(VhcaCore *core, uint32_t from)
{
    const VhcaIds *ids = &core->sched_pending;
    uint32_t word;

    if (from < ids->first) {
        from = ids->first;
    }
    for (word = from / 64; word <= ids->last / 64; word++) {
        uint64_t bits = ids->map[word];

        if (word == from / 64) {
            bits &= ~0ull << (from % 64);
        }
        if (bits) {
            uint32_t qpn = word * 64 + (uint32_t)__builtin_ctzll(bits);

            return qpn <= ids->last ? qpn : 0;
        }
    }
    return 0;
}

/* One QP's share of a pass; true if it has work left. */
static bool vhca_sched_run_qp(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                              unsigned budget)
{
    bool more = false;

    /* Completer first: ACKs free the window the requester sends into. */
    more |= vhca_completer_run(core, qpn, qp, &budget);
    more |= vhca_resp_run(core, qpn, qp, &budget);
    more |= vhca_req_run(core, qpn, qp, &budget);
    return more;
}

static void vhca_sched_timer_update(VhcaCore *core)
{
    uint64_t earliest = VHCA_NO_DEADLINE;
    uint32_t qpn;

    for (qpn = core->qp_ids.first; qpn <= core->qp_ids.last; qpn++) {
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        if (qp && qp->deadline < earliest) {
            earliest = qp->deadline;
        }
    }
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

void vhca_core_run_deferred(VhcaCore *core)
{
    unsigned budget = VHCA_SCHED_PASS_BUDGET;
    uint32_t qpn = core->sched_next_qpn;
    bool wrapped = false;

    core->sched_requested = false;
    while (budget) {
        VhcaQp *qp;
        unsigned share;

        qpn = vhca_sched_next_marked(core, qpn);
        if (!qpn) {
            if (wrapped) {
                break;
            }
            /* Round robin: continue from the first QPN. */
            wrapped = true;
            qpn = core->sched_pending.first;
            continue;
        }
        vhca_sched_mark(core, qpn, false);
        qp = vhca_qp_lookup(core, qpn);
        if (qp) {
            share = budget < VHCA_SCHED_QP_BUDGET ? budget
                                                  : VHCA_SCHED_QP_BUDGET;
            budget -= share;
            if (vhca_sched_run_qp(core, qpn, qp, share)) {
                vhca_sched_mark(core, qpn, true);
            }
            vhca_cq_errors_settle(core);
        }
        qpn++;
        if (qpn > core->sched_pending.last) {
            qpn = core->sched_pending.first;
            if (wrapped) {
                break;
            }
            wrapped = true;
        }
    }
    core->sched_next_qpn = qpn;
    if (vhca_sched_next_marked(core, core->sched_pending.first)) {
        vhca_sched_request(core);
    }
    vhca_sched_timer_update(core);
}

void vhca_core_timer_expired(VhcaCore *core)
{
    uint64_t now = vhca_now(core);
    uint32_t qpn;

    core->sched_timer = VHCA_NO_DEADLINE;
    for (qpn = core->qp_ids.first; qpn <= core->qp_ids.last; qpn++) {
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        if (qp && qp->deadline <= now) {
            qp->deadline = VHCA_NO_DEADLINE;
            vhca_completer_timer(core, qpn, qp);
            vhca_cq_errors_settle(core);
            vhca_sched_kick(core, qpn);
        }
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
    return qp->req.win ? 0 : -1;
}

void vhca_qp_transport_free(VhcaCore *core, VhcaQp *qp)
{
    vhca_frameq_clear(core, &qp->rxq_req);
    vhca_frameq_clear(core, &qp->rxq_resp);
    free(qp->req.win);
    qp->req.win = NULL;
}

void vhca_qp_transport_reset(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaSendMeta *win = qp->req.win;
    uint32_t win_size = qp->req.win_size;

    vhca_frameq_clear(core, &qp->rxq_req);
    vhca_frameq_clear(core, &qp->rxq_resp);
    memset(&qp->req, 0, sizeof(qp->req));
    memset(&qp->resp, 0, sizeof(qp->resp));
    qp->req.win = win;
    qp->req.win_size = win_size;
    qp->req.fetched = qp->req.cur = qp->sq.ci;
    qp->deadline = VHCA_NO_DEADLINE;
    vhca_sched_mark(core, qpn, false);
}

void vhca_qp_transport_enter(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             uint8_t prev, uint8_t next)
{
    /* The same for every type; UC and UD use the PSNs and nothing else. */
    if (next == VHCA_QPS_RTR && prev == VHCA_QPS_INIT) {
        memset(&qp->resp, 0, sizeof(qp->resp));
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
    if (core->sched_pending.map) {
        vhca_ids_clear(&core->sched_pending);
    }
    if (core->sched_timer != VHCA_NO_DEADLINE && core->ops->timer_cancel) {
        core->ops->timer_cancel(core->opaque);
    }
    core->sched_timer = VHCA_NO_DEADLINE;
}
