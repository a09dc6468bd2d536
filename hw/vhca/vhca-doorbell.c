/*
 * QEMU vhca: the doorbells a vCPU rings without the BQL.
 *
 * BAR2 is a lockless region (memory_region_enable_lockless_io(),
 * qemu-patches/0006): a vCPU that rings an SQ doorbell does not wait for
 * the BQL, which the main loop holds for a whole pass of the engine.  The
 * engine itself stays single-threaded: the write only lands in this queue,
 * in the order the vCPUs made them, and the main loop runs the queue under
 * the BQL before anything else the engine does (vhca.c,
 * vhca_doorbells_run()).  The lock guards a few stores, never the engine,
 * so neither side waits long for it.
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/lockable.h"

#include "vhca-doorbell.h"

void vhca_doorbell_queue_init(VhcaDoorbellQueue *q)
{
    qemu_mutex_init(&q->lock);
    q->head = 0;
    q->count = 0;
}

void vhca_doorbell_queue_destroy(VhcaDoorbellQueue *q)
{
    qemu_mutex_destroy(&q->lock);
}

/*
 * False if the queue is full: the caller must run it first.  *@first says
 * whether the queue was empty: only then must the caller wake whoever runs
 * it, as whoever runs the queue runs it until it is empty.
 */
bool vhca_doorbell_queue_push(VhcaDoorbellQueue *q, const VhcaDoorbell *db,
                              bool *first)
{
    QEMU_LOCK_GUARD(&q->lock);

    if (q->count == VHCA_DOORBELL_QUEUE_LEN) {
        return false;
    }
    *first = !q->count;
    q->entry[(q->head + q->count) % VHCA_DOORBELL_QUEUE_LEN] = *db;
    qatomic_store_release(&q->count, q->count + 1);
    return true;
}

/*
 * The oldest doorbell, if any; BQL held, as by everything that pops or
 * clears, so the count can only grow between the load and the lock.  An
 * empty queue costs one load: the engine asks at each of its entry points.
 */
bool vhca_doorbell_queue_pop(VhcaDoorbellQueue *q, VhcaDoorbell *db)
{
    if (!qatomic_load_acquire(&q->count)) {
        return false;
    }

    QEMU_LOCK_GUARD(&q->lock);

    *db = q->entry[q->head];
    q->head = (q->head + 1) % VHCA_DOORBELL_QUEUE_LEN;
    qatomic_store_release(&q->count, q->count - 1);
    return true;
}

/* Reset: the doorbells rung before it are for state that is gone. */
void vhca_doorbell_queue_clear(VhcaDoorbellQueue *q)
{
    QEMU_LOCK_GUARD(&q->lock);

    q->head = 0;
    qatomic_store_release(&q->count, 0);
}

/* Is anything queued?  A hint only, without the lock: for scheduling. */
bool vhca_doorbell_queue_pending(VhcaDoorbellQueue *q)
{
    return qatomic_load_acquire(&q->count) != 0;
}
