/*
 * vhca engine: event queues - the producer shared by the async EQ (EQ 0)
 * and the completion EQs, its owner bit, arming and overflow, and
 * CREATE_EQ/DESTROY_EQ (docs/specs/vhca.rst, "Async event queue", "Event
 * and completion queues").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vhca-rdma.h"

static uint32_t vhca_eq_outstanding(const VhcaEq *eq)
{
    return eq->ring.pi - eq->ring.ci;
}

static uint64_t vhca_eq_slot_addr(const VhcaEq *eq, uint32_t index)
{
    if (eq->pages) {
        return vhca_queue_addr(eq->pages, eq->ring.log_size, index,
                               sizeof(struct vhca_eqe));
    }
    return vhca_ring_slot_addr(&eq->ring, index, sizeof(struct vhca_eqe));
}

static void vhca_eq_interrupt(VhcaCore *core, VhcaEq *eq)
{
    eq->armed = false;
    vhca_raise_irq(core, eq->vector);
}

/*
 * A doorbell carries the low 24 bits of the consumer index.  The driver
 * may only move it forward, up to what the device produced: anything else
 * is refused as a whole (the ARM bit too), so a confused driver cannot make
 * the device overwrite entries it has not consumed.  Returns false if
 * refused.
 */
static bool vhca_eq_doorbell(VhcaCore *core, VhcaEq *eq, uint32_t value)
{
    uint32_t new_ci24 = value & VHCA_EQ_DB_CI_MASK;
    uint32_t advance = (new_ci24 - eq->ring.ci) & VHCA_EQ_DB_CI_MASK;

    if (advance > vhca_eq_outstanding(eq)) {
        return false;
    }
    eq->ring.ci += advance;
    eq->overflow = false;

    if (value & VHCA_EQ_DB_ARM) {
        /*
         * Events the driver has not consumed yet interrupt at once: a
         * driver that re-arms after its last poll never sleeps on an event
         * written in between.
         */
        if (vhca_eq_outstanding(eq)) {
            vhca_eq_interrupt(core, eq);
        } else {
            eq->armed = true;
        }
    }
    return true;
}

bool vhca_eq_post(VhcaCore *core, VhcaEq *eq, VhcaGuestError kind,
                  uint8_t type, uint8_t subtype, uint32_t data0,
                  uint32_t data1)
{
    uint8_t eqe[sizeof(struct vhca_eqe)];
    uint8_t owner;
    uint64_t addr;
    /* For the trace: EQ 0 is the async EQ, the others completion EQs. */
    VhcaRingId ring = eq == &core->aeq ? VHCA_RING_AEQ : VHCA_RING_EQ;
    uint32_t eqn = eq == &core->aeq ? 0 : (uint32_t)(eq - core->comp_eqs);

    if (vhca_eq_outstanding(eq) >= vhca_ring_entries(&eq->ring)) {
        eq->overflow = true;
        vhca_count(core, VHCA_CNT_EQ_OVERFLOWS, 1);
        VHCA_HOOK(core, err_queue_overflow, ring, eqn, eq->ring.pi,
                  eq->ring.ci);
        vhca_guest_error(core, kind,
                         "EQ full (PI 0x%x CI 0x%x), event type %u lost",
                         eq->ring.pi, eq->ring.ci, type);
        return false;
    }

    memset(eqe, 0, sizeof(eqe));
    eqe[offsetof(struct vhca_eqe, type)] = type;
    eqe[offsetof(struct vhca_eqe, subtype)] = subtype;
    vhca_st_le32(eqe + offsetof(struct vhca_eqe, data), data0);
    vhca_st_le32(eqe + offsetof(struct vhca_eqe, data) + 4, data1);
    /* Owner is 1 on the first pass over the ring, 0 on the second, ... */
    owner = ((eq->ring.pi >> eq->ring.log_size) & 1) ^ 1;

    addr = vhca_eq_slot_addr(eq, eq->ring.pi);
    /* The owner byte goes last: it tells the driver the entry is valid. */
    if (vhca_dma_write(core, addr, eqe, offsetof(struct vhca_eqe, owner)) ||
        vhca_dma_write(core, addr + offsetof(struct vhca_eqe, owner),
                       &owner, 1)) {
        VHCA_HOOK(core, err_guest_ram, ring, eqn, eq->ring.pi, addr);
        vhca_guest_error(core, kind,
                         "cannot write event at 0x%llx (not guest RAM), "
                         "event type %u lost", (unsigned long long)addr,
                         type);
        return false;
    }

    if (eq == &core->aeq && core->ops->event_posted) {
        core->ops->event_posted(core->opaque, type, subtype, eq->ring.pi);
    }
    eq->ring.pi++;

    if (eq->armed) {
        vhca_eq_interrupt(core, eq);
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* The async EQ (EQ 0)                                                    */
/* ---------------------------------------------------------------------- */

/* CTRL.ENABLE accepted: the EQ starts empty and armed. */
void vhca_aeq_start(VhcaCore *core)
{
    core->aeq.ring.pi = 0;
    core->aeq.ring.ci = 0;
    core->aeq.pages = NULL;
    core->aeq.vector = VHCA_VECTOR_ASYNC;
    core->aeq.armed = true;
    core->aeq.overflow = false;
}

void vhca_aeq_doorbell(VhcaCore *core, uint32_t value)
{
    if (!core->enabled) {
        VHCA_HOOK(core, ub_ring_doorbell, VHCA_RING_AEQ, 0, value);
        vhca_guest_error(core, VHCA_GUEST_ERR_AEQ,
                         "AEQ_DB 0x%x written while the device is not "
                         "enabled, ignoring", value);
        return;
    }
    if (!vhca_eq_doorbell(core, &core->aeq, value)) {
        VHCA_HOOK(core, err_doorbell_index, VHCA_RING_AEQ, 0,
                  value & VHCA_EQ_DB_CI_MASK,
                  core->aeq.ring.ci & VHCA_EQ_DB_CI_MASK,
                  core->aeq.ring.pi & VHCA_EQ_DB_CI_MASK);
        vhca_reg_refuse(core, VHCA_ERR_AEQ_DOORBELL,
                        "AEQ_DB consumer index 0x%x is beyond AEQ_PI 0x%x "
                        "(current CI 0x%x)", value & VHCA_EQ_DB_CI_MASK,
                        core->aeq.ring.pi, core->aeq.ring.ci);
    }
}

void vhca_aeq_post(VhcaCore *core, uint8_t type, uint8_t subtype,
                   uint32_t data0, uint32_t data1)
{
    if (!core->enabled) {
        /* No EQ to write to: the driver reads state when it enables. */
        return;
    }
    vhca_eq_post(core, &core->aeq, VHCA_GUEST_ERR_AEQ, type, subtype,
                 data0, data1);
}

/* ---------------------------------------------------------------------- */
/* Completion EQs                                                         */
/* ---------------------------------------------------------------------- */

/*
 * EQ_DB(eqn): as AEQ_DB.  A consumer index beyond the producer index is
 * refused with ERROR = AEQ_DOORBELL, the code for every EQ's doorbell.
 */
void vhca_comp_eq_doorbell(VhcaCore *core, uint32_t eqn, uint32_t value)
{
    VhcaEq *eq = vhca_comp_eq_lookup(core, eqn);

    if (!eq) {
        VHCA_HOOK(core, ub_ring_doorbell, VHCA_RING_EQ, eqn, value);
        vhca_guest_error(core, VHCA_GUEST_ERR_EQ,
                         "EQ_DB(%u) = 0x%x: EQ %u does not exist, ignoring",
                         eqn, value, eqn);
        return;
    }
    if (!vhca_eq_doorbell(core, eq, value)) {
        VHCA_HOOK(core, err_doorbell_index, VHCA_RING_EQ, eqn,
                  value & VHCA_EQ_DB_CI_MASK,
                  eq->ring.ci & VHCA_EQ_DB_CI_MASK,
                  eq->ring.pi & VHCA_EQ_DB_CI_MASK);
        vhca_reg_refuse(core, VHCA_ERR_AEQ_DOORBELL,
                        "EQ_DB(%u) consumer index 0x%x is beyond the "
                        "producer index 0x%x (current CI 0x%x)", eqn,
                        value & VHCA_EQ_DB_CI_MASK, eq->ring.pi,
                        eq->ring.ci);
    }
}

static uint8_t vhca_eq_check_create(VhcaCore *core, VhcaCmdCtx *ctx,
                                    uint32_t log_size, uint32_t vector)
{
    if (log_size < 1 || log_size > VHCA_EQ_MAX_LOG_SIZE) {
        ctx->syndrome = log_size;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "log_size %u outside 1..%u", log_size,
                             VHCA_EQ_MAX_LOG_SIZE);
    }
    if (vector < VHCA_VECTOR_FIRST_COMP || vector >= core->cfg.num_vectors) {
        ctx->syndrome = vector;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "vector %u is not a completion vector "
                             "(%u..%u)", vector, VHCA_VECTOR_FIRST_COMP,
                             core->cfg.num_vectors - 1);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_create_eq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_eq_create)];
    uint32_t log_size, vector, eqn;
    uint64_t *pages;
    uint8_t status;
    VhcaEq *eq;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    log_size = raw[offsetof(struct vhca_eq_create, log_size)];
    vector = vhca_ld_le32(raw + offsetof(struct vhca_eq_create, vector));
    status = vhca_eq_check_create(core, ctx, log_size, vector);
    if (status != VHCA_ST_OK) {
        return status;
    }
    status = vhca_queue_pages_read(core, ctx,
        vhca_ld_le64(raw + offsetof(struct vhca_eq_create, pbl_addr)),
        vhca_ld_le32(raw + offsetof(struct vhca_eq_create, npages)),
        (uint64_t)sizeof(struct vhca_eqe) << log_size, &pages);
    if (status != VHCA_ST_OK) {
        return status;
    }
    eqn = vhca_ids_alloc(&core->eq_ids);
    if (!eqn) {
        free(pages);
        return VHCA_ST_NO_RESOURCES;
    }

    /* A new EQ is empty and armed, as EQ 0 is after CTRL.ENABLE. */
    eq = &core->comp_eqs[eqn];
    memset(eq, 0, sizeof(*eq));
    eq->ring.log_size = log_size;
    eq->pages = pages;
    eq->vector = vector;
    eq->armed = true;
    vhca_cmd_set_handle_out(ctx, eqn, 0);
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_destroy_eq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t eqn = vhca_cmd_handle_in(ctx);
    VhcaEq *eq = vhca_comp_eq_lookup(core, eqn);

    if (!eq) {
        ctx->syndrome = eqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "EQ %u does not exist", eqn);
    }
    if (eq->users) {
        ctx->syndrome = eqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "EQ %u still has %u CQs", eqn, eq->users);
    }
    free(eq->pages);
    memset(eq, 0, sizeof(*eq));
    vhca_ids_free(&core->eq_ids, eqn);
    return VHCA_ST_OK;
}

void vhca_qp_event(VhcaCore *core, uint32_t qpn, uint8_t event)
{
    vhca_aeq_post(core, VHCA_EQE_QP_EVENT, event, qpn, 0);
}
