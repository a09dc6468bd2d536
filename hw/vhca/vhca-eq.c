/*
 * vhca engine: the async event queue (EQ 0) producer, its owner bit, arming
 * and overflow (docs/specs/vhca.rst, "Async event queue").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-internal.h"

/* CTRL.ENABLE accepted: the EQ starts empty and armed. */
void vhca_aeq_start(VhcaCore *core)
{
    core->aeq.pi = 0;
    core->aeq.ci = 0;
    core->aeq_armed = true;
}

static uint32_t vhca_aeq_outstanding(const VhcaCore *core)
{
    return core->aeq.pi - core->aeq.ci;
}

static void vhca_aeq_interrupt(VhcaCore *core)
{
    core->aeq_armed = false;
    vhca_raise_irq(core, VHCA_VECTOR_ASYNC);
}

/*
 * AEQ_DB carries the low 24 bits of the consumer index.  The driver may
 * only move it forward, up to what the device produced: anything else is
 * refused as a whole (the ARM bit too), so a confused driver cannot make
 * the device overwrite entries it has not consumed.
 */
void vhca_aeq_doorbell(VhcaCore *core, uint32_t value)
{
    uint32_t new_ci24 = value & VHCA_EQ_DB_CI_MASK;
    uint32_t advance = (new_ci24 - core->aeq.ci) & VHCA_EQ_DB_CI_MASK;

    if (!core->enabled) {
        vhca_guest_error(core, VHCA_GUEST_ERR_AEQ,
                         "AEQ_DB 0x%x written while the device is not "
                         "enabled, ignoring", value);
        return;
    }
    if (advance > vhca_aeq_outstanding(core)) {
        vhca_reg_refuse(core, VHCA_ERR_AEQ_DOORBELL,
                        "AEQ_DB consumer index 0x%x is beyond AEQ_PI 0x%x "
                        "(current CI 0x%x)", new_ci24, core->aeq.pi,
                        core->aeq.ci);
        return;
    }

    core->aeq.ci += advance;
    core->status &= ~VHCA_STATUS_AEQ_OVERFLOW;

    if (value & VHCA_EQ_DB_ARM) {
        /*
         * Events the driver has not consumed yet interrupt at once: a
         * driver that re-arms after its last poll never sleeps on an event
         * written in between.
         */
        if (vhca_aeq_outstanding(core)) {
            vhca_aeq_interrupt(core);
        } else {
            core->aeq_armed = true;
        }
    }
}

void vhca_aeq_post(VhcaCore *core, uint8_t type, uint8_t subtype,
                   uint32_t data0, uint32_t data1)
{
    uint8_t eqe[sizeof(struct vhca_eqe)];
    uint8_t owner;
    uint64_t addr;

    if (!core->enabled) {
        /* No EQ to write to: the driver reads state when it enables. */
        return;
    }
    if (vhca_aeq_outstanding(core) >= vhca_ring_entries(&core->aeq)) {
        core->status |= VHCA_STATUS_AEQ_OVERFLOW;
        vhca_count(core, VHCA_CNT_EQ_OVERFLOWS, 1);
        vhca_guest_error(core, VHCA_GUEST_ERR_AEQ,
                         "async EQ full (PI 0x%x CI 0x%x), event type %u "
                         "lost", core->aeq.pi, core->aeq.ci, type);
        return;
    }

    memset(eqe, 0, sizeof(eqe));
    eqe[offsetof(struct vhca_eqe, type)] = type;
    eqe[offsetof(struct vhca_eqe, subtype)] = subtype;
    vhca_st_le32(eqe + offsetof(struct vhca_eqe, data), data0);
    vhca_st_le32(eqe + offsetof(struct vhca_eqe, data) + 4, data1);
    /* Owner is 1 on the first pass over the ring, 0 on the second, ... */
    owner = ((core->aeq.pi >> core->aeq.log_size) & 1) ^ 1;

    addr = vhca_ring_slot_addr(&core->aeq, core->aeq.pi, sizeof(eqe));
    /* The owner byte goes last: it tells the driver the entry is valid. */
    if (vhca_dma_write(core, addr, eqe, offsetof(struct vhca_eqe, owner)) ||
        vhca_dma_write(core, addr + offsetof(struct vhca_eqe, owner),
                       &owner, 1)) {
        vhca_guest_error(core, VHCA_GUEST_ERR_AEQ,
                         "cannot write event at 0x%llx (not guest RAM), "
                         "event type %u lost", (unsigned long long)addr,
                         type);
        return;
    }

    if (core->ops->event_posted) {
        core->ops->event_posted(core->opaque, type, subtype, core->aeq.pi);
    }
    core->aeq.pi++;

    if (core->aeq_armed) {
        vhca_aeq_interrupt(core);
    }
}
