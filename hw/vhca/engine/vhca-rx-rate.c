/*
 * vhca engine: a receiver that cannot keep up, on purpose - the
 * x-rx-frame-rate property limits how many received requests per second
 * the QPs' receivers take from their queues (docs/developer-guide.rst,
 * "A slow receiver").  The rest wait in the queues, as in an HCA whose
 * host bus or memory is slower than its link: the queues fill, and past
 * their caps frames drop - unless PFC pauses the sender first, which is
 * what the PFC experiment shows.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vhca-transport.h"

/* Frames one pass may take at once after an idle time: a short burst. */
#define VHCA_RX_RATE_BURST      16

bool vhca_rx_rate_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                      unsigned *budget)
{
    uint64_t interval, now, allowed;
    unsigned share, left;
    bool rate_bound, more;

    if (!core->cfg.rx_frame_rate) {
        return vhca_recv_run(core, qpn, qp, budget);
    }
    interval = 1000000000ull / core->cfg.rx_frame_rate;
    now = vhca_now(core);
    /* Time not used is not saved up beyond the burst. */
    if (core->rx_rate_next_ns + VHCA_RX_RATE_BURST * interval < now) {
        core->rx_rate_next_ns = now - (VHCA_RX_RATE_BURST - 1) * interval;
    }
    allowed = core->rx_rate_next_ns <= now ?
              (now - core->rx_rate_next_ns) / interval + 1 : 0;
    rate_bound = allowed < *budget;
    share = rate_bound ? (unsigned)allowed : *budget;
    left = share;
    more = share && vhca_recv_run(core, qpn, qp, &left);
    core->rx_rate_next_ns += (uint64_t)(share - left) * interval;
    *budget -= share - left;
    if (rate_bound && qp->rxq_req.count) {
        /*
         * Out of turns, not of budget: the QP waits, not spinning, until
         * the next frame's turn (its pace_ns; an early wake is harmless).
         */
        if (core->rx_rate_next_ns < qp->pace_ns) {
            qp->pace_ns = core->rx_rate_next_ns;
        }
        return false;
    }
    return more;
}
