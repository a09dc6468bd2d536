/*
 * QEMU vhca: the device's QOM type, shared by the glue files (vhca.c,
 * vhca-monitor.c).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_H
#define HW_VHCA_H

#include "hw/pci/pci_device.h"
#include "net/net.h"
#include "qom/object.h"

#include "vhca-core.h"
#include "vhca-dma.h"
#include "vhca-doorbell.h"

#define TYPE_VHCA "vhca"
OBJECT_DECLARE_SIMPLE_TYPE(VhcaState, VHCA)

struct VhcaState {
    PCIDevice parent_obj;

    MemoryRegion ctrl_bar;
    MemoryRegion doorbell_bar;

    NICState *nic;
    NICConf conf;

    uint32_t gid_tbl_len;
    uint32_t db_pages;
    uint32_t vectors;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;

    Error *migration_blocker;

    /* The engine's deferred work and its one timer (RC transport). */
    QEMUBH *work_bh;
    QEMUTimer *timer;
    bool running_doorbells;     /* in work_bh, before the deferred pass */
    bool unrealized;            /* exit ran: the object awaits finalize */

    /*
     * SQ doorbells rung without the BQL (vhca-doorbell.c), and
     * how many were queued and how many found the queue full ("info vhca").
     */
    VhcaDoorbellQueue doorbells;
    uint64_t doorbells_queued;
    uint64_t doorbells_queue_full;

    VhcaDma dma;
    VhcaCore core;
};

#endif /* HW_VHCA_H */
