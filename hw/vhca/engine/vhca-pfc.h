/*
 * vhca engine: priority-based flow control (IEEE 802.1Qbb) on the
 * Ethernet port (docs/specs/vhca.rst, "Priority flow control") - the
 * device's state per priority, kept in VhcaCore.
 *
 * Two halves, one per direction of the link:
 *  - honour: a PFC frame from the peer pauses our transmission of the
 *    priorities it names, for the time it gives (vhca_pfc_receive()).
 *  - send: when the frames of a priority waiting in our receive queues
 *    pass the XOFF threshold we ask the peer to pause it, refresh the
 *    request while they stay above, and release it (pause time 0, XON)
 *    once they drain below the XON threshold.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_PFC_H
#define HW_VHCA_PFC_H

#include <stdbool.h>
#include <stdint.h>

#include "vhca_hw.h"

/*
 * The Ethernet port's line rate: QUERY_PORT reports EDR (25 Gb/s) at
 * width 1X, the rate DCQCN's maximum is too.  A pause quantum is 512 bit
 * times at it (802.1Qbb 36.1.3.1, 802.3 31B.2): 20.48 ns.
 */
#define VHCA_PFC_LINK_MBPS          25000u

/*
 * What we ask the peer for: the longest pause (65535 quanta, 1.34 ms at
 * the line rate), sent again after half of it while the queue stays
 * above XOFF, so the peer never resumes in between (802.1Qbb 36.1.3.3:
 * the sender of a PFC frame refreshes it before it runs out).
 */
#define VHCA_PFC_XOFF_QUANTA        0xffffu

/*
 * Thresholds on the frames of one priority waiting in the receive queues,
 * against the per-QP queue caps (VHCA_RXQ_MAX_QP frames,
 * VHCA_RXQ_MAX_QP_BYTES), the first a single stream meets: XOFF at half
 * a cap, so the other half is headroom for what the peer sent before the
 * pause reached it (one pass of its QP, 64 packets, and the frames in
 * the backend); XON below a quarter, so a queue at the threshold does not
 * send a pause frame per received frame (hysteresis).
 */
#define VHCA_PFC_XOFF_FRAMES        (VHCA_RXQ_MAX_QP / 2)
#define VHCA_PFC_XOFF_BYTES         (VHCA_RXQ_MAX_QP_BYTES / 2)
#define VHCA_PFC_XON_FRAMES         (VHCA_RXQ_MAX_QP / 4)
#define VHCA_PFC_XON_BYTES          (VHCA_RXQ_MAX_QP_BYTES / 4)

/*
 * Headroom: a priority with PFC on is lossless, as a NIC's lossless
 * buffers are - its frames wait in a QP's queue up to twice the per-QP
 * caps, not the caps, so that what the peer sends between XOFF and the
 * moment it stops always fits.  Between two QEMUs that can be a whole RC
 * window (VHCA_REQ_MAX_UNACKED, 256 packets) sent before the XOFF is
 * read, more than the 234 large frames of the per-QP cap; XOFF plus a
 * window is 373 frames, under these 468.  The device caps still hold.
 */
#define VHCA_PFC_RXQ_MAX_QP         (2 * VHCA_RXQ_MAX_QP)
#define VHCA_PFC_RXQ_MAX_QP_BYTES   (2 * VHCA_RXQ_MAX_QP_BYTES)

typedef struct VhcaPfcPrio {
    /* Honour: our transmission of the priority, as the peer asked. */
    bool paused;
    uint64_t paused_since;          /* ns */
    uint64_t paused_until;          /* ns; resumes then */
    /* Send: the priority's frames waiting in our receive queues. */
    uint32_t rx_frames;
    uint32_t rx_bytes;              /* their buffers' sizes */
    bool xoff;                      /* we want the peer paused */
    bool xoff_told;                 /* and the last frame we sent said so */
    uint64_t xoff_since;            /* ns, the first XOFF of this pause */
    uint64_t refresh_at;            /* ns: send the XOFF again */
} VhcaPfcPrio;

typedef struct VhcaPfc {
    uint8_t enable;                 /* SET_CC pfc_enable: bit i, prio i */
    uint8_t pending;                /* priorities a frame must go for */
    bool ring_held;                 /* the TX ring waits for a resume */
    bool ring_kick;                 /* a resume came: run it (next pass) */
    VhcaPfcPrio prio[VHCA_PFC_PRIORITIES];
    /* enum vhca_pfc_counter by priority; durations in ns here. */
    uint64_t counters[VHCA_PFC_CNT_MAX][VHCA_PFC_PRIORITIES];
    uint64_t dropped;               /* malformed MAC Control frames */
} VhcaPfc;

#endif /* HW_VHCA_PFC_H */
