/*
 * vhca engine: received frames - the buffers they are copied into, the
 * per-QP queues that hold them until the deferred pass, and the drops of
 * the receive path, each counted and traced with its reason.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdlib.h>
#include <string.h>

#include "vhca-transport.h"

void vhca_rx_drop_detail(VhcaCore *core, enum vhca_drop_reason reason,
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
    enum vhca_drop_reason reason = VHCA_DROP_MALFORMED;

    if (err == VHCA_WIRE_ERR_ICRC) {
        reason = VHCA_DROP_BAD_ICRC;
    } else if (err == VHCA_WIRE_ERR_VCRC) {
        reason = VHCA_DROP_BAD_VCRC;
    }
    vhca_rx_drop_detail(core, reason, vhca_wire_error_name(err), 0);
}

void vhca_frameq_push(VhcaCore *core, VhcaFrameQueue *q,
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
    vhca_pfc_rx_queued(core, f, true);
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
    vhca_pfc_rx_queued(core, f, false);
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
void vhca_rx_buf_release(VhcaCore *core, unsigned class)
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
VhcaRxFrame *vhca_rx_buf_get(VhcaCore *core, uint32_t size)
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
void vhca_frameq_clear(VhcaCore *core, VhcaFrameQueue *q)
{
    VhcaRxFrame *f;

    while ((f = vhca_frameq_pop(core, q))) {
        vhca_rx_drop(core, VHCA_DROP_QP_STATE, f->pkt.tp.bth.dest_qpn);
        vhca_rx_frame_free(f);
    }
}
