/*
 * vhca engine: the transport's scheduler - deferred work, the device
 * timer, receive queues, transmission and loopback, for every QP type
 * (RC, UC, UD, GSI).
 *
 * Neither a doorbell (an MMIO write) nor a received frame (a net layer
 * callback) does transport work in place: a doorbell marks its QP as
 * having work, a received RoCEv2 frame is parsed, checked against its
 * QP, copied to that QP's queue and marks the QP.  vhca_core_run_deferred
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

#include "vhca-rc.h"

uint64_t vhca_now(VhcaCore *core)
{
    return core->ops->now_ns ? core->ops->now_ns(core->opaque) : 0;
}

uint32_t vhca_rc_mtu(const VhcaQp *qp)
{
    uint32_t mtu = vhca_ib_mtu_bytes(qp->attr.path_mtu);

    return mtu ? mtu : 256;
}

void vhca_rc_qp_event(VhcaCore *core, uint32_t qpn, uint8_t event)
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

static void vhca_rc_mark(VhcaCore *core, uint32_t qpn, bool on)
{
    uint64_t bit = 1ull << (qpn % 64);

    if (on) {
        core->rc_pending.map[qpn / 64] |= bit;
    } else {
        core->rc_pending.map[qpn / 64] &= ~bit;
    }
}

static void vhca_rc_schedule(VhcaCore *core)
{
    if (!core->rc_scheduled && core->ops->schedule) {
        core->rc_scheduled = true;
        core->ops->schedule(core->opaque);
    }
}

void vhca_rc_kick(VhcaCore *core, uint32_t qpn)
{
    if (!vhca_qp_lookup(core, qpn)) {
        return;
    }
    vhca_rc_mark(core, qpn, true);
    vhca_rc_schedule(core);
}

/* The lowest marked QPN at or after @from, or 0 if there is none. */
static uint32_t vhca_rc_next_marked(VhcaCore *core, uint32_t from)
{
    const VhcaIds *ids = &core->rc_pending;
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
static bool vhca_rc_qp_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                           unsigned budget)
{
    bool more = false;

    /* Completer first: ACKs free the window the requester sends into. */
    more |= vhca_comp_run(core, qpn, qp, &budget);
    more |= vhca_resp_run(core, qpn, qp, &budget);
    more |= vhca_req_run(core, qpn, qp, &budget);
    return more;
}

static void vhca_rc_timer_update(VhcaCore *core)
{
    uint64_t earliest = VHCA_NO_DEADLINE;
    uint32_t qpn;

    for (qpn = core->qp_ids.first; qpn <= core->qp_ids.last; qpn++) {
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        if (qp && qp->deadline < earliest) {
            earliest = qp->deadline;
        }
    }
    if (earliest == core->rc_timer) {
        return;
    }
    core->rc_timer = earliest;
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
    unsigned budget = VHCA_RC_PASS_BUDGET;
    uint32_t qpn = core->rc_next_qpn;
    bool wrapped = false;

    core->rc_scheduled = false;
    while (budget) {
        VhcaQp *qp;
        unsigned share;

        qpn = vhca_rc_next_marked(core, qpn);
        if (!qpn) {
            if (wrapped) {
                break;
            }
            /* Round robin: continue from the first QPN. */
            wrapped = true;
            qpn = core->rc_pending.first;
            continue;
        }
        vhca_rc_mark(core, qpn, false);
        qp = vhca_qp_lookup(core, qpn);
        if (qp) {
            share = budget < VHCA_RC_QP_BUDGET ? budget : VHCA_RC_QP_BUDGET;
            budget -= share;
            if (vhca_rc_qp_run(core, qpn, qp, share)) {
                vhca_rc_mark(core, qpn, true);
            }
            vhca_cq_errors_settle(core);
        }
        qpn++;
        if (qpn > core->rc_pending.last) {
            qpn = core->rc_pending.first;
            if (wrapped) {
                break;
            }
            wrapped = true;
        }
    }
    core->rc_next_qpn = qpn;
    if (vhca_rc_next_marked(core, core->rc_pending.first)) {
        vhca_rc_schedule(core);
    }
    vhca_rc_timer_update(core);
}

void vhca_core_timer_expired(VhcaCore *core)
{
    uint64_t now = vhca_now(core);
    uint32_t qpn;

    core->rc_timer = VHCA_NO_DEADLINE;
    for (qpn = core->qp_ids.first; qpn <= core->qp_ids.last; qpn++) {
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        if (qp && qp->deadline <= now) {
            qp->deadline = VHCA_NO_DEADLINE;
            vhca_comp_timer(core, qpn, qp);
            vhca_cq_errors_settle(core);
            vhca_rc_kick(core, qpn);
        }
    }
    vhca_rc_timer_update(core);
}

/* ---------------------------------------------------------------------- */
/* Receive queues                                                         */
/* ---------------------------------------------------------------------- */

static void vhca_frameq_push(VhcaFrameQueue *q, VhcaRxFrame *f)
{
    f->next = NULL;
    if (q->tail) {
        q->tail->next = f;
    } else {
        q->head = f;
    }
    q->tail = f;
    q->count++;
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
    core->rc_rx_queued--;
    return f;
}

void vhca_rc_frame_free(VhcaRxFrame *f)
{
    free(f);
}

/* The QP leaves a receiving state or goes away: its frames are lost. */
static void vhca_frameq_clear(VhcaCore *core, VhcaFrameQueue *q)
{
    VhcaRxFrame *f;

    while ((f = vhca_frameq_pop(core, q))) {
        vhca_rx_drop(core, VHCA_DROP_QP_STATE, f->pkt.tp.bth.dest_qpn);
        vhca_rc_frame_free(f);
    }
}

/* IBTA 9.6.1.1: only P_Keys in our table (the default one) are accepted. */
static bool vhca_rc_pkey_ok(uint16_t pkey)
{
    return (pkey & 0x7fff) == (VHCA_DEFAULT_PKEY & 0x7fff);
}

/* IBTA 9.6.1: each QP type takes its own transport's opcodes only. */
static bool vhca_qp_takes(const VhcaQp *qp, uint8_t opcode)
{
    switch (opcode & VHCA_IB_TRANSPORT_MASK) {
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

/* Queue a copy of @frame (parsed into @pkt) on @q and mark the QP. */
static void vhca_rx_enqueue(VhcaCore *core, uint32_t qpn, VhcaFrameQueue *q,
                            const uint8_t *frame, size_t len,
                            const VhcaWirePacket *pkt)
{
    VhcaRxFrame *f;

    if (q->count >= VHCA_RC_RXQ_MAX_QP ||
        core->rc_rx_queued >= VHCA_RC_RXQ_MAX_DEV) {
        /* A real HCA's receive buffer is full too: the sender retries. */
        vhca_rx_drop(core, VHCA_DROP_QUEUE_FULL, qpn);
        return;
    }
    f = malloc(sizeof(*f) + len);
    if (!f) {
        vhca_rx_drop(core, VHCA_DROP_NO_MEMORY, qpn);
        return;
    }
    memcpy(f->data, frame, len);
    f->pkt = *pkt;
    f->pkt.payload = f->data + pkt->payload_offset;
    vhca_frameq_push(q, f);
    core->rc_rx_queued++;
    vhca_rc_kick(core, qpn);
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
        vhca_rx_enqueue(core, qpns[i], &qp->rxq_req, frame, len, pkt);
    }
}

/*
 * A frame the demux found to be RoCEv2 for one of our GIDs or multicast
 * groups, or one we looped back (@looped).  Checks what can be checked
 * without the QP's progress (headers, ICRC, QP, transport, P_Key) and
 * queues it on its QP; the rest happens in the deferred pass.
 */
static void vhca_rx_frame(VhcaCore *core, const uint8_t *frame, size_t len,
                          bool looped)
{
    VhcaWirePacket pkt;
    const VhcaWireOpcodeInfo *info;
    VhcaFrameQueue *q;
    VhcaWireError err;
    uint32_t qpn;
    VhcaQp *qp;

    err = vhca_wire_parse(frame, len, &pkt);
    if (err != VHCA_WIRE_OK) {
        vhca_rx_drop_malformed(core, err);
        return;
    }
    if (!vhca_rc_pkey_ok(pkt.tp.bth.pkey)) {
        vhca_rx_drop(core, VHCA_DROP_PKEY, pkt.tp.bth.dest_qpn);
        return;
    }
    info = vhca_wire_opcode_info(pkt.tp.bth.opcode);
    qpn = pkt.tp.bth.dest_qpn;
    if ((pkt.tp.bth.opcode & VHCA_IB_TRANSPORT_MASK) ==
        VHCA_IB_TRANSPORT_UD && qpn == VHCA_MCAST_QPN) {
        vhca_rx_mcast(core, frame, len, &pkt, looped);
        return;
    }
    qp = vhca_qp_lookup(core, qpn);
    /* IBTA 9.6.1: unknown QP, or a service the QP does not run: drop. */
    if (!qp || !vhca_qp_takes(qp, pkt.tp.bth.opcode)) {
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
    vhca_rx_enqueue(core, qpn, q, frame, len, &pkt);
}

void vhca_rc_receive(VhcaCore *core, const uint8_t *frame, size_t len)
{
    vhca_rx_frame(core, frame, len, false);
}

/* ---------------------------------------------------------------------- */
/* Transmission                                                           */
/* ---------------------------------------------------------------------- */

void vhca_xmit(VhcaCore *core, uint32_t qpn, const VhcaPath *path,
               VhcaWirePacket *pkt)
{
    const VhcaGidEntry *sgid = &core->gid_tbl[path->sgid_index %
                                              VHCA_CORE_GID_TBL_LEN_MAX];
    VhcaWireNet *net = &pkt->net;
    size_t len;

    /* The source GID was deleted since MODIFY_QP: nothing to send from. */
    if (path->sgid_index >= core->cfg.gid_tbl_len || !sgid->valid) {
        return;
    }
    memcpy(net->dmac, path->dmac, VHCA_ETH_ALEN);
    memcpy(net->smac, core->mac, VHCA_ETH_ALEN);
    memcpy(net->sgid, sgid->gid, VHCA_GID_LEN);
    memcpy(net->dgid, path->dgid, VHCA_GID_LEN);
    net->vlan = false;
    net->traffic_class = path->traffic_class;
    net->hop_limit = path->hop_limit;
    net->flow_label = path->flow_label;
    net->ip_id = core->rc_ip_id++;
    net->udp_sport = path->udp_sport ? path->udp_sport :
                     vhca_wire_udp_sport(path->flow_label, qpn,
                                         path->dest_qpn);
    pkt->tp.bth.pkey = VHCA_DEFAULT_PKEY;
    pkt->tp.bth.dest_qpn = path->dest_qpn;

    len = vhca_wire_build(pkt, core->rc_frame, sizeof(core->rc_frame));
    if (!len) {
        /* IPv4 and IPv6 GIDs mixed in the AV: the packet cannot exist. */
        return;
    }
    vhca_count(core, VHCA_CNT_ROCE_TX_PACKETS, 1);
    /*
     * A packet to one of our own GIDs goes to our receive path, queued
     * like a received frame, and not to the wire: a NIC loops back
     * traffic to its own addresses internally.
     */
    if (vhca_gid_is_ours(core, net->dgid)) {
        vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
        vhca_rx_frame(core, core->rc_frame, len, true);
        return;
    }
    /*
     * Multicast goes to the wire and, if some of our QPs joined the
     * group, to them as well (multicast loopback, as mlx5 does unless
     * the QP blocks it).
     */
    if (vhca_gid_is_multicast(net->dgid) &&
        vhca_mcast_find(core, net->dgid)) {
        vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
        vhca_rx_frame(core, core->rc_frame, len, true);
    }
    /* No carrier: lost on the wire; the retransmit timer recovers. */
    if (core->link_up && core->ops->send_frame) {
        core->ops->send_frame(core->opaque, core->rc_frame, len);
    }
}

/* ---------------------------------------------------------------------- */
/* QP life cycle                                                          */
/* ---------------------------------------------------------------------- */

int vhca_rc_qp_init(VhcaQp *qp)
{
    uint32_t entries = 1u << qp->sq.log_size;

    qp->req.win_size = entries < VHCA_REQ_WINDOW ? entries
                                                 : VHCA_REQ_WINDOW;
    qp->req.win = calloc(qp->req.win_size, sizeof(*qp->req.win));
    qp->deadline = VHCA_NO_DEADLINE;
    return qp->req.win ? 0 : -1;
}

void vhca_rc_qp_free(VhcaCore *core, VhcaQp *qp)
{
    vhca_frameq_clear(core, &qp->rxq_req);
    vhca_frameq_clear(core, &qp->rxq_resp);
    free(qp->req.win);
    qp->req.win = NULL;
}

void vhca_rc_qp_reset(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
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
    vhca_rc_mark(core, qpn, false);
}

void vhca_rc_qp_enter(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                      uint8_t prev, uint8_t next)
{
    /* The same for every type; UC and UD use the PSNs and nothing else. */
    if (next == VHCA_QPS_RTR && prev == VHCA_QPS_INIT) {
        memset(&qp->resp, 0, sizeof(qp->resp));
        qp->resp.epsn = qp->attr.rq_psn;
    }
    if (next == VHCA_QPS_RTS && prev == VHCA_QPS_RTR) {
        VhcaRcReq *req = &qp->req;

        req->fetched = req->cur = qp->sq.ci;
        req->cur_pkt = 0;
        req->next_psn = req->una_psn = req->sent_psn = qp->attr.sq_psn;
        req->retry_left = qp->attr.retry_cnt;
        req->rnr_left = qp->attr.rnr_retry;
    }
    if (next == VHCA_QPS_RTS || next == VHCA_QPS_SQD) {
        /* WQEs posted in INIT or RTR, or held in SQD, may go now. */
        vhca_rc_kick(core, qpn);
    }
}

void vhca_rc_cleanup(VhcaCore *core)
{
    uint32_t qpn;

    if (!core->qps) {
        return;
    }
    for (qpn = 0; qpn < core->cfg.max_qp + VHCA_FIRST_QPN; qpn++) {
        vhca_rc_qp_free(core, &core->qps[qpn]);
    }
    core->rc_rx_queued = 0;
    if (core->rc_pending.map) {
        vhca_ids_clear(&core->rc_pending);
    }
    if (core->rc_timer != VHCA_NO_DEADLINE && core->ops->timer_cancel) {
        core->ops->timer_cancel(core->opaque);
    }
    core->rc_timer = VHCA_NO_DEADLINE;
}
