/*
 * vhca engine: priority-based flow control, IEEE 802.1Qbb clause 36
 * (docs/specs/vhca.rst, "Priority flow control"), on the Ethernet port.
 *
 * Honour: a PFC frame (a MAC Control frame, 802.3 annex 31D, opcode
 * 0x0101) names priorities in its vector with a pause time each, in
 * quanta of 512 bit times at the link's speed.  For each one that is on
 * here (SET_CC pfc_enable) our transmission of that priority stops until
 * the time runs out; a frame that comes while it runs replaces the time,
 * and time 0 resumes at once (36.1.3.3).  Only that priority stops: a
 * RoCE QP's requester whose packets travel at it (vhca_pfc_may_send(),
 * before each packet) waits, not spinning, with the pause's end as its
 * pace_ns deadline; QPs of other priorities go on.
 *
 * Send: the frames of each priority waiting in the per-QP receive queues
 * are counted as they are queued and taken (vhca_pfc_rx_queued()).  With
 * PFC on for the priority, passing the XOFF threshold asks the peer to
 * pause it (VHCA_PFC_XOFF_QUANTA), again every half of that time while
 * the queues stay above XON, and a frame with time 0 (XON) releases the
 * peer once they drain below XON.  The frames go out from the next pass
 * or from the timer, never from inside the receive callback.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

uint64_t vhca_pfc_quanta_ns(uint16_t quanta)
{
    uint64_t bits = (uint64_t)quanta * VHCA_PAUSE_QUANTUM_BITS;

    /* bits / Mbit/s = us; in ns, rounded up so that a pause is never cut. */
    return (bits * 1000 + VHCA_PFC_LINK_MBPS - 1) / VHCA_PFC_LINK_MBPS;
}

void vhca_pfc_reset(VhcaCore *core)
{
    memset(&core->pfc, 0, sizeof(core->pfc));
    core->rx_rate_next_ns = 0;
}

void vhca_pfc_set_enable(VhcaCore *core, uint8_t enable)
{
    uint8_t off = core->pfc.enable & ~enable;
    unsigned i;

    core->pfc.enable = enable;
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        if (!(off & (1u << i))) {
            continue;
        }
        /* Off: a pause of it no longer holds, and the peer is released. */
        vhca_pfc_resume(core, (uint8_t)i, vhca_now(core));
        if (core->pfc.prio[i].xoff) {
            core->pfc.prio[i].xoff = false;
            core->pfc.pending |= 1u << i;
        }
    }
    if (core->pfc.pending) {
        vhca_sched_request(core);
    }
}

/* ---------------------------------------------------------------------- */
/* Honour                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * The QPs the pause of @prio held: their requesters may go on.  A held
 * QP has its pace_ns deadline, so it is in the deadline heap: the walk
 * costs the QPs that wait for something, not the QP table.  A kick marks
 * the QP and leaves the heap as it is.
 */
static void vhca_pfc_wake(VhcaCore *core, uint8_t prio)
{
    uint32_t i, n = vhca_sched_deadlines(core);

    for (i = 0; i < n; i++) {
        uint32_t qpn = vhca_sched_deadline_qpn(core, i);
        VhcaQp *qp = vhca_qp_lookup(core, qpn);

        if (qp && (qp->pfc_wait & (1u << prio))) {
            qp->pfc_wait &= (uint8_t)~(1u << prio);
            vhca_sched_kick(core, qpn);
        }
    }
}

void vhca_pfc_resume(VhcaCore *core, uint8_t prio, uint64_t now)
{
    VhcaPfcPrio *p = &core->pfc.prio[prio];
    uint64_t end = now < p->paused_until ? now : p->paused_until;
    uint64_t paused_ns;

    if (!p->paused) {
        return;
    }
    p->paused = false;
    paused_ns = end > p->paused_since ? end - p->paused_since : 0;
    core->pfc.counters[VHCA_PFC_CNT_RX_PAUSE_DURATION][prio] += paused_ns;
    core->pfc.counters[VHCA_PFC_CNT_RX_PAUSE_TRANSITION][prio]++;
    VHCA_HOOK(core, pfc_resumed, prio, paused_ns);
    vhca_pfc_wake(core, prio);
    /* The TX ring goes on from the next pass, not from a receive call. */
    if (core->pfc.ring_held) {
        core->pfc.ring_kick = true;
        vhca_sched_request(core);
    }
}

bool vhca_pfc_paused(VhcaCore *core, uint8_t prio, uint64_t now)
{
    VhcaPfcPrio *p = &core->pfc.prio[prio % VHCA_PFC_PRIORITIES];

    if (p->paused && p->paused_until <= now) {
        /* The time ran out before the timer said so: resume now. */
        vhca_pfc_resume(core, prio % VHCA_PFC_PRIORITIES, now);
    }
    return p->paused;
}

/* One priority of a PFC frame: pause it for @quanta, or resume it. */
static void vhca_pfc_pause(VhcaCore *core, uint8_t prio, uint16_t quanta,
                           uint64_t now)
{
    VhcaPfcPrio *p = &core->pfc.prio[prio];
    bool on = core->pfc.enable & (1u << prio);

    core->pfc.counters[VHCA_PFC_CNT_RX_PAUSE][prio]++;
    VHCA_HOOK(core, pfc_pause_rcvd, prio, quanta, on && quanta);
    /* 36.1.3.2: a priority without PFC ignores it. */
    if (!on) {
        return;
    }
    if (!quanta) {
        vhca_pfc_resume(core, prio, now);
        return;
    }
    if (!p->paused) {
        p->paused = true;
        p->paused_since = now;
    }
    /* The new time replaces what was left of the old one (36.1.3.3). */
    p->paused_until = now + vhca_pfc_quanta_ns(quanta);
    if (p->paused_until <= now) {
        vhca_pfc_resume(core, prio, now);
    }
}

VhcaRxResult vhca_pfc_receive(VhcaCore *core, const uint8_t *buf, size_t len)
{
    uint64_t now = vhca_now(core);
    VhcaWireError err;
    VhcaWirePfc pfc;
    unsigned i;

    /*
     * A MAC Control frame is the MAC's own: never the guest's, whatever
     * it holds.  One we cannot take is dropped and counted (802.3 31.5.1:
     * unsupported opcodes are discarded).
     */
    err = vhca_wire_parse_pfc(buf, len, &pfc);
    if (err != VHCA_WIRE_OK) {
        core->pfc.dropped++;
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        if (core->ops->rx_drop) {
            core->ops->rx_drop(core->opaque, "pfc", vhca_wire_error_name(err),
                               0);
        }
        return VHCA_RX_ERROR;
    }
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        if (pfc.enable & (1u << i)) {
            vhca_pfc_pause(core, (uint8_t)i, pfc.time[i], now);
        }
    }
    vhca_sched_timer_update(core);
    return VHCA_RX_FILTERED;
}

/*
 * The priority @path's packets go out at: what vhca_wire_priority() reads
 * from the headers vhca_tx_headers_roce() writes for @path - the same tag
 * (vhca_tx_vlan_tag(): PCP = SL on a VLAN GID) and traffic class.
 */
uint8_t vhca_pfc_path_priority(const VhcaCore *core, const VhcaPath *path)
{
    VhcaWireNet net = {
        .traffic_class = path->traffic_class,
    };

    vhca_tx_vlan_tag(core, path, &net);
    return vhca_wire_priority(&net);
}

bool vhca_pfc_may_send(VhcaCore *core, VhcaQp *qp, const VhcaPath *path)
{
    uint8_t prio;
    uint64_t now;

    if (!core->pfc.enable || core->cfg.link != VHCA_LINK_ETH) {
        return true;
    }
    prio = vhca_pfc_path_priority(core, path);
    now = vhca_now(core);
    if (!vhca_pfc_paused(core, prio, now)) {
        qp->pfc_wait &= (uint8_t)~(1u << prio);
        return true;
    }
    /* Not spinning: the end of the pause wakes it, or a resume before. */
    qp->pfc_wait |= (uint8_t)(1u << prio);
    if (core->pfc.prio[prio].paused_until < qp->pace_ns) {
        qp->pace_ns = core->pfc.prio[prio].paused_until;
    }
    return false;
}

/* ---------------------------------------------------------------------- */
/* Send                                                                   */
/* ---------------------------------------------------------------------- */

bool vhca_pfc_lossless(const VhcaCore *core, const VhcaWirePacket *pkt)
{
    return pkt->link == VHCA_WIRE_LINK_ROCE &&
           (core->pfc.enable & (1u << vhca_wire_priority(&pkt->net)));
}

void vhca_pfc_rx_queued(VhcaCore *core, const VhcaRxFrame *f, bool in)
{
    uint8_t prio;
    VhcaPfcPrio *p;

    if (f->pkt.link != VHCA_WIRE_LINK_ROCE) {
        return;
    }
    prio = vhca_wire_priority(&f->pkt.net);
    p = &core->pfc.prio[prio];
    if (in) {
        p->rx_frames++;
        p->rx_bytes += f->size;
    } else {
        p->rx_frames--;
        p->rx_bytes -= f->size;
    }
    if (!(core->pfc.enable & (1u << prio))) {
        return;
    }
    if (!p->xoff && (p->rx_frames >= VHCA_PFC_XOFF_FRAMES ||
                     p->rx_bytes >= VHCA_PFC_XOFF_BYTES)) {
        p->xoff = true;
        core->pfc.pending |= (uint8_t)(1u << prio);
    } else if (p->xoff && p->rx_frames <= VHCA_PFC_XON_FRAMES &&
               p->rx_bytes <= VHCA_PFC_XON_BYTES) {
        p->xoff = false;
        core->pfc.pending |= (uint8_t)(1u << prio);
    } else {
        return;
    }
    /* The frame goes from the next pass, not from a receive callback. */
    vhca_sched_request(core);
}

/* One PFC frame for the priorities in @mask, each as its xoff says. */
static void vhca_pfc_send(VhcaCore *core, uint8_t mask, uint64_t now)
{
    uint8_t frame[VHCA_ETH_MIN_FRAME];
    VhcaWirePfc pfc;
    unsigned i;
    size_t len;

    memset(&pfc, 0, sizeof(pfc));
    pfc.enable = mask;
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        VhcaPfcPrio *p = &core->pfc.prio[i];

        if (!(mask & (1u << i))) {
            continue;
        }
        pfc.time[i] = p->xoff ? VHCA_PFC_XOFF_QUANTA : 0;
        if (p->xoff && !p->xoff_told) {
            p->xoff_since = now;
        } else if (!p->xoff && p->xoff_told) {
            core->pfc.counters[VHCA_PFC_CNT_TX_PAUSE_DURATION][i] +=
                now - p->xoff_since;
        }
        p->xoff_told = p->xoff;
        p->refresh_at = p->xoff ?
                        now + vhca_pfc_quanta_ns(VHCA_PFC_XOFF_QUANTA) / 2 :
                        VHCA_NO_DEADLINE;
        core->pfc.counters[VHCA_PFC_CNT_TX_PAUSE][i]++;
        VHCA_HOOK(core, pfc_pause_sent, (uint8_t)i, pfc.time[i],
                  p->rx_frames, p->rx_bytes);
    }
    len = vhca_wire_build_pfc(core->mac, &pfc, frame, sizeof(frame));
    /* No carrier: lost, as any frame; the refresh tells the peer later. */
    if (len && core->link_up && core->ops->send_frame) {
        core->ops->send_frame(core->opaque, frame, len);
    }
}

void vhca_pfc_send_pending(VhcaCore *core)
{
    uint8_t mask = core->pfc.pending;
    unsigned i;

    if (core->pfc.ring_kick) {
        core->pfc.ring_kick = false;
        vhca_eth_tx_resume(core);
    }
    core->pfc.pending = 0;
    /* An XON for a priority the peer was never told to pause is none. */
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        VhcaPfcPrio *p = &core->pfc.prio[i];

        if (!p->xoff && !p->xoff_told) {
            mask &= (uint8_t)~(1u << i);
        }
    }
    if (mask) {
        vhca_pfc_send(core, mask, vhca_now(core));
        vhca_sched_timer_update(core);
    }
}

/* ---------------------------------------------------------------------- */
/* Time                                                                   */
/* ---------------------------------------------------------------------- */

uint64_t vhca_pfc_deadline(const VhcaCore *core)
{
    uint64_t next = VHCA_NO_DEADLINE;
    unsigned i;

    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        const VhcaPfcPrio *p = &core->pfc.prio[i];

        if (p->paused && p->paused_until < next) {
            next = p->paused_until;
        }
        if (p->xoff && p->xoff_told && p->refresh_at < next) {
            next = p->refresh_at;
        }
    }
    return next;
}

void vhca_pfc_timer(VhcaCore *core, uint64_t now)
{
    uint8_t refresh = 0;
    unsigned i;

    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        VhcaPfcPrio *p = &core->pfc.prio[i];

        if (p->paused && p->paused_until <= now) {
            vhca_pfc_resume(core, (uint8_t)i, now);
        }
        if (p->xoff && p->xoff_told && p->refresh_at <= now) {
            refresh |= (uint8_t)(1u << i);
        }
    }
    if (refresh) {
        vhca_pfc_send(core, refresh, now);
    }
}

uint64_t vhca_pfc_counter(VhcaCore *core, unsigned counter, uint8_t prio)
{
    const VhcaPfcPrio *p = &core->pfc.prio[prio % VHCA_PFC_PRIORITIES];
    uint64_t v = core->pfc.counters[counter % VHCA_PFC_CNT_MAX]
                                   [prio % VHCA_PFC_PRIORITIES];
    uint64_t now = vhca_now(core);

    /* A pause still running counts as far as it has come; in us. */
    if (counter == VHCA_PFC_CNT_RX_PAUSE_DURATION) {
        uint64_t end = now < p->paused_until ? now : p->paused_until;

        if (p->paused && end > p->paused_since) {
            v += end - p->paused_since;
        }
        return v / 1000;
    }
    if (counter == VHCA_PFC_CNT_TX_PAUSE_DURATION) {
        if (p->xoff_told && now > p->xoff_since) {
            v += now - p->xoff_since;
        }
        return v / 1000;
    }
    return v;
}
