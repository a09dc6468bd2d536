/*
 * vhca engine: the transport at work - the deferred pass and the device
 * timer run each QP's completer, receiver and requester, the top of the
 * transport.  What runs when, and the deadlines, are kept by the
 * scheduler (vhca-sched.c); the receivers take the packets the demux
 * (vhca-demux.c) queued on the QP.
 *
 * Neither a doorbell (an MMIO write) nor a received frame (a net layer
 * callback) does transport work in place: both mark the QP, and
 * vhca_core_run_deferred (a bottom half in QEMU) then runs the marked QPs
 * in the order they were marked with a budget of packets per QP and per
 * pass, and asks to be run again while work is left, so a 2 GiB message
 * or a flood of frames never stalls the vCPU or the main loop.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vhca-transport.h"

/*
 * The received packets of a QP go to its type's receiver: the RC (and
 * XRC target) responder, UC's or UD's (IBTA 9.6.1: the demux queued only
 * packets of the QP's own transport).
 */
bool vhca_recv_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   unsigned *budget)
{
    switch (qp->type) {
    case VHCA_QPT_RC:
    case VHCA_QPT_XRC_TGT:
        return vhca_resp_run(core, qpn, qp, budget);
    case VHCA_QPT_UC:
        return vhca_uc_run(core, qpn, qp, budget);
    default:
        return vhca_ud_run(core, qpn, qp, budget);
    }
}

/* One QP's share of a pass; true if it has work left. */
static bool vhca_pass_run_qp(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             unsigned *budget)
{
    bool more = false;

    vhca_cc_send_pending(core, qpn, qp);
    /* Completer first: ACKs free the window the requester sends into. */
    more |= vhca_completer_run(core, qpn, qp, budget);
    more |= vhca_rx_rate_run(core, qpn, qp, budget);
    more |= vhca_req_run(core, qpn, qp, budget);
    return more;
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
    uint32_t turns = vhca_sched_pass_begin(core);

    /* PFC frames first: the peer hears XOFF before more is received. */
    vhca_pfc_send_pending(core);

    while (budget && turns--) {
        uint32_t qpn;
        VhcaQp *qp;
        unsigned share, left;

        if (!vhca_sched_take(core, &qpn)) {
            continue;
        }
        qp = vhca_qp_lookup(core, qpn);
        if (!qp) {
            continue;
        }
        share = budget < VHCA_SCHED_QP_BUDGET ? budget
                                              : VHCA_SCHED_QP_BUDGET;
        left = share;
        if (vhca_pass_run_qp(core, qpn, qp, &left)) {
            vhca_sched_requeue(core, qpn);
            /* Work left but no packet sent (a wait): still one of the pass. */
            left = left < share ? left : share - 1;
        }
        budget -= share - left;
        vhca_sched_deadline_sync(core, qpn, qp);
        vhca_cq_errors_settle(core);
    }
    /* XONs for what the pass drained. */
    vhca_pfc_send_pending(core);
    vhca_sched_pass_end(core);
}

void vhca_core_timer_expired(VhcaCore *core)
{
    uint64_t now = vhca_now(core);
    /* Each QP once: a deadline set again at or before now waits a turn. */
    uint32_t due = vhca_sched_timer_begin(core);
    uint32_t qpn;

    /* Pauses whose time ran out (kicking their QPs), XOFF refreshes. */
    vhca_pfc_timer(core, now);

    while (due-- && vhca_sched_take_due(core, now, &qpn)) {
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        if (!qp) {
            continue;
        }
        /* The pacer's time came: the requester may send again. */
        if (qp->pace_ns <= now) {
            qp->pace_ns = VHCA_NO_DEADLINE;
            vhca_sched_kick(core, qpn);
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

/*
 * Doorbells and admin commands take effect in the order the guest issued
 * them: UD and UC send WQEs rung before a DESTROY_QP or MODIFY_QP leave
 * before the command runs, and their completions are in the CQ a
 * RESIZE_CQ moves, as they would be from a hardware send engine that had
 * already picked them up.  Programs rely on it: mckey posts its datagrams
 * and destroys the QP at once; rdma-core's test_resize_cq posts six
 * datagrams and at once shrinks their CQ below six, which must fail.  UD
 * and UC need nothing from the peer to finish a WQE, so this ends; RC
 * WQEs wait for ACKs and are left to the transition (flushed in ERR, kept
 * in SQD).  Bounded, so that one command cannot stall the device: what is
 * beyond the bound is flushed.  Not paced: the command is the guest's
 * word that the WQEs are done with, and a hardware engine that already
 * fetched them would send them.
 */
#define VHCA_QP_DRAIN_BUDGET    65536   /* packets */

void vhca_qp_drain_unreliable(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    unsigned budget = VHCA_QP_DRAIN_BUDGET;

    if (vhca_qp_is_reliable(qp)) {
        return;
    }
    vhca_req_run_unpaced(core, qpn, qp, &budget);
    vhca_cq_errors_settle(core);
}

/* Only the QPs with work are in the ring: this does not walk the QP table. */
void vhca_pass_drain_senders(VhcaCore *core, uint32_t cqn)
{
    uint32_t queued = core->sched_count;
    uint32_t i, qpn;

    /* Running a QP may queue others (loopback); they go behind these. */
    for (i = 0; i < queued; i++) {
        VhcaQp *qp;

        if (!vhca_sched_queued_at(core, i, &qpn)) {
            continue;
        }
        qp = vhca_qp_lookup(core, qpn);
        if (qp && qp->send_cqn == cqn) {
            vhca_qp_drain_unreliable(core, qpn, qp);
        }
    }
}
