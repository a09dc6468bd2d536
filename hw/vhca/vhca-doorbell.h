/*
 * QEMU vhca: the doorbells a vCPU rings without the BQL (vhca-doorbell.c).
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_DOORBELL_H
#define HW_VHCA_DOORBELL_H

#include "qemu/thread.h"

/*
 * A doorbell waits here from the vCPU's write until the main loop runs it.
 * So does any write into BAR0 or BAR2 that arrives while the engine runs
 * (the device's own MSI-X write aimed at itself, vhca.c "Re-entrancy"):
 * it is posted, as PCIe posts it, and runs after the engine returns.
 * None of 1.36 million doorbells found 256 taken in 4 KiB ib_send_bw
 * ("info vhca", 2026-12-04); a vCPU that finds the queue full
 * runs it itself under the BQL.
 */
#define VHCA_DOORBELL_QUEUE_LEN 256

typedef struct VhcaDoorbell {
    uint64_t value;
    uint32_t offset;            /* in the BAR, which is at most 4 MiB */
    uint8_t size;
    bool ctrl;                  /* a BAR0 register write, not a doorbell */
} VhcaDoorbell;

typedef struct VhcaDoorbellQueue {
    QemuMutex lock;             /* head, count and entry */
    uint32_t head;
    uint32_t count;             /* also read without the lock: any queued? */
    VhcaDoorbell entry[VHCA_DOORBELL_QUEUE_LEN];
} VhcaDoorbellQueue;

void vhca_doorbell_queue_init(VhcaDoorbellQueue *q);
void vhca_doorbell_queue_destroy(VhcaDoorbellQueue *q);
bool vhca_doorbell_queue_push(VhcaDoorbellQueue *q, const VhcaDoorbell *db,
                              bool *first);
bool vhca_doorbell_queue_pop(VhcaDoorbellQueue *q, VhcaDoorbell *db);
void vhca_doorbell_queue_clear(VhcaDoorbellQueue *q);
bool vhca_doorbell_queue_pending(VhcaDoorbellQueue *q);

#endif /* HW_VHCA_DOORBELL_H */
