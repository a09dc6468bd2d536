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
#include "vhca-state.h"

#define TYPE_VHCA "vhca"

/* What reached the device while the engine ran (vhca.c, "Re-entrancy"). */
#define VHCA_DEFER_WORK         (1u << 0)   /* the work bottom half */
#define VHCA_DEFER_TIMER        (1u << 1)   /* the timer expired */
#define VHCA_DEFER_RX_FLUSH     (1u << 2)   /* frames wait in the net layer */
#define VHCA_DEFER_LINK         (1u << 3)   /* the backend's link changed */
#define VHCA_DEFER_RESET        (1u << 4)   /* FLR or bus reset */
#define VHCA_DEFER_EXIT         (1u << 5)   /* unplugged */
OBJECT_DECLARE_SIMPLE_TYPE(VhcaState, VHCA)

struct VhcaState {
    PCIDevice parent_obj;

    MemoryRegion ctrl_bar;
    MemoryRegion doorbell_bar;

    NICState *nic;
    NICConf conf;

    char *link;                     /* "eth" (default) or "ib" */
    uint32_t gid_tbl_len;
    uint32_t db_pages;
    uint32_t vectors;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    uint32_t rx_frame_rate;         /* x-rx-frame-rate, 0: no limit */


    /* The engine's deferred work and its one timer (RC transport). */
    QEMUBH *work_bh;
    QEMUTimer *timer;
    bool running_doorbells;     /* in work_bh, before the deferred pass */
    bool unrealized;            /* exit ran: the object awaits finalize */

    /*
     * Re-entrancy (vhca.c, vhca_engine_enter()): whether the engine is
     * running, what reached the device meanwhile and waits for it to
     * return (VHCA_DEFER_*), and how many such arrivals were deferred and
     * how many refused ("info vhca").
     */
    bool engine_busy;
    unsigned deferred;
    bool engine_saved_guard;
    uint64_t nested_deferred;
    uint64_t nested_refused;

    /*
     * SQ doorbells rung without the BQL (vhca-doorbell.c), and
     * how many were queued and how many found the queue full ("info vhca").
     */
    VhcaDoorbellQueue doorbells;
    uint64_t doorbells_queued;
    uint64_t doorbells_queue_full;

    /*
     * Migration (vhca-migration.c): the engine's state stream between
     * pre_save and post_save (mig_save owns it) or as loaded (g_malloc'd
     * by VMState), and the doorbells queued at save.
     */
    uint8_t *mig_state;
    uint32_t mig_state_len;
    VhcaStateBuf mig_save;
    uint32_t mig_doorbells;
    VhcaDoorbell mig_doorbell[VHCA_DOORBELL_QUEUE_LEN];
    /* Runs the engine dry when the VM stops (vhca-migration.c). */
    VMChangeStateEntry *vm_stop_entry;

    VhcaDma dma;
    VhcaCore core;
};

/* vhca.c, "Re-entrancy": every entry into the engine is bracketed so. */
bool vhca_engine_enter(VhcaState *s);
void vhca_engine_leave(VhcaState *s);
/* Whether the backend gives the port a carrier. */
bool vhca_link_is_up(VhcaState *s);
/* The work bottom half: queued doorbells, timers, received frames. */
void vhca_work_bh(void *opaque);

/* vhca-migration.c */
extern const VMStateDescription vmstate_vhca;
void vhca_migration_realize(VhcaState *s);
void vhca_migration_unrealize(VhcaState *s);

#endif /* HW_VHCA_H */
