/*
 * vhca engine: the transport's scheduler - which QPs have work, in which
 * order they run, and each QP's deadline; and the transport state a QP
 * has from creation on.  The pass and the timer that use it are in
 * vhca-pass.c.
 *
 * A doorbell or a received packet marks its QP as having work (kick); a
 * marked QP waits in a ring of QPNs, in the order they were marked.  Each
 * QP has one deadline (retransmit or RNR timer), kept in a heap; the
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

/* ---------------------------------------------------------------------- */
/* Work marks                                                             */
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

void vhca_sched_request(VhcaCore *core)
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

uint32_t vhca_sched_pass_begin(VhcaCore *core)
{
    core->sched_requested = false;
    return core->sched_count;
}

bool vhca_sched_take(VhcaCore *core, uint32_t *qpn)
{
    *qpn = vhca_sched_pop(core);
    if (!(core->sched_flags[*qpn] & VHCA_SCHED_READY)) {
        return false;
    }
    vhca_sched_mark(core, *qpn, false);
    return true;
}

void vhca_sched_requeue(VhcaCore *core, uint32_t qpn)
{
    vhca_sched_mark(core, qpn, true);
}

void vhca_sched_pass_end(VhcaCore *core)
{
    if (core->sched_count) {
        vhca_sched_request(core);
    }
    vhca_sched_timer_update(core);
}

bool vhca_sched_queued_at(const VhcaCore *core, uint32_t i, uint32_t *qpn)
{
    *qpn = core->sched_fifo[(core->sched_head + i) % core->sched_slots];
    return core->sched_flags[*qpn] & VHCA_SCHED_READY;
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
 * deadline (vhca-completer.c, vhca-req.c) and its pacing time
 * (vhca-cc.c, from the requester), so these are the only places the
 * heap can go stale.
 */
void vhca_sched_deadline_sync(VhcaCore *core, uint32_t qpn,
                              const VhcaQp *qp)
{
    uint32_t pos = core->sched_heap_pos[qpn];
    /* The retransmit or RNR timer, or the pacer's time if earlier. */
    struct VhcaDeadline d = {
        .when = qp->pace_ns < qp->deadline ? qp->pace_ns : qp->deadline,
        .qpn = qpn,
    };

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

uint32_t vhca_sched_deadlines(const VhcaCore *core)
{
    return core->sched_heap_len;
}

uint32_t vhca_sched_deadline_qpn(const VhcaCore *core, uint32_t i)
{
    return core->sched_heap[i].qpn;
}

void vhca_sched_timer_update(VhcaCore *core)
{
    uint64_t earliest = core->sched_heap_len ? core->sched_heap[0].when
                                             : VHCA_NO_DEADLINE;
    /* The device's own deadlines: PFC's pauses and refreshes. */
    uint64_t pfc = vhca_pfc_deadline(core);

    if (pfc < earliest) {
        earliest = pfc;
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

uint32_t vhca_sched_timer_begin(VhcaCore *core)
{
    core->sched_timer = VHCA_NO_DEADLINE;
    return core->sched_heap_len;
}

bool vhca_sched_take_due(VhcaCore *core, uint64_t now, uint32_t *qpn)
{
    if (!core->sched_heap_len || core->sched_heap[0].when > now) {
        return false;
    }
    *qpn = core->sched_heap[0].qpn;
    vhca_heap_remove(core, 0);
    return true;
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
    qp->pace_ns = VHCA_NO_DEADLINE;
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
    vhca_req_window_init(&qp->req);
    qp->req.fetched = qp->req.cur = qp->sq.ci;
    qp->deadline = VHCA_NO_DEADLINE;
    qp->pace_ns = VHCA_NO_DEADLINE;
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
        vhca_req_window_init(req);
    }
    if (next == VHCA_QPS_RTS || next == VHCA_QPS_SQD) {
        /* WQEs posted in INIT or RTR, or held in SQD, may go now. */
        vhca_sched_kick(core, qpn);
    }
}

void vhca_sched_cleanup(VhcaCore *core)
{
    uint32_t qpn;

    if (!core->qps || !core->qp_ids.map) {
        return;
    }
    /*
     * Only a QP that exists has transport state (DESTROY_QP frees its
     * own): walking every slot would read in the pages of a table that
     * was never written, as the engine a migration loads replaces.
     */
    for (qpn = vhca_ids_next(&core->qp_ids, 0); qpn;
         qpn = vhca_ids_next(&core->qp_ids, qpn + 1)) {
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
