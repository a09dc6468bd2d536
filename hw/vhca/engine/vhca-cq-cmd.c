/*
 * vhca engine: the completion queue commands - CREATE_CQ, DESTROY_CQ and
 * RESIZE_CQ (docs/specs/vhca.rst, "Event and completion queues"; IBTA
 * 11.2.8).  The CQ at work is in vhca-cq.c.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vhca-rdma.h"

/* ---------------------------------------------------------------------- */
/* CREATE_CQ / DESTROY_CQ                                                 */
/* ---------------------------------------------------------------------- */

static void vhca_cq_create_parse(const uint8_t *raw,
                                 struct vhca_cq_create *c)
{
#define LD(f, bits) \
    (c->f = vhca_ld_le##bits(raw + offsetof(struct vhca_cq_create, f)))
    LD(pbl_addr, 64);
    LD(npages, 32);
    LD(eqn, 32);
    LD(db_page, 32);
    LD(dbrec_addr, 64);
#undef LD
    c->log_size = raw[offsetof(struct vhca_cq_create, log_size)];
}

static uint8_t vhca_cq_check_create(VhcaCore *core, VhcaCmdCtx *ctx,
                                    const struct vhca_cq_create *c)
{
    uint8_t raw[4];

    if (c->log_size < 1 || c->log_size > VHCA_CQ_MAX_LOG_SIZE) {
        ctx->syndrome = c->log_size;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "log_size %u outside 1..%u", c->log_size,
                             VHCA_CQ_MAX_LOG_SIZE);
    }
    if (!vhca_comp_eq_lookup(core, c->eqn)) {
        ctx->syndrome = c->eqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "EQ %u does not exist", c->eqn);
    }
    if (!vhca_db_page_ok(core, c->db_page)) {
        ctx->syndrome = c->db_page;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "doorbell page %u is not allocated",
                             c->db_page);
    }
    if (vhca_dma_read(core, c->dbrec_addr, raw, sizeof(raw))) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "doorbell record 0x%llx is not guest RAM",
                             (unsigned long long)c->dbrec_addr);
    }
    if (c->dbrec_addr & 3) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "doorbell record 0x%llx is not 4-byte aligned",
                             (unsigned long long)c->dbrec_addr);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_create_cq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_cq_create)];
    struct vhca_cq_create c;
    uint64_t *pages;
    uint32_t cqn;
    uint8_t status;
    VhcaCq *cq;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_cq_create_parse(raw, &c);
    status = vhca_cq_check_create(core, ctx, &c);
    if (status != VHCA_ST_OK) {
        return status;
    }
    status = vhca_queue_pages_read(core, ctx, c.pbl_addr, c.npages,
                                   (uint64_t)sizeof(struct vhca_cqe)
                                   << c.log_size, &pages);
    if (status != VHCA_ST_OK) {
        return status;
    }
    cqn = vhca_ids_alloc(&core->cq_ids);
    if (!cqn) {
        free(pages);
        return VHCA_ST_NO_RESOURCES;
    }

    cq = &core->cqs[cqn];
    memset(cq, 0, sizeof(*cq));
    cq->pages = pages;
    cq->log_size = c.log_size;
    cq->eqn = c.eqn;
    cq->db_page = c.db_page;
    cq->dbrec_addr = c.dbrec_addr;
    core->comp_eqs[c.eqn].users++;
    vhca_db_page_get(core, c.db_page);
    vhca_cmd_set_handle_out(ctx, cqn, 0);
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_destroy_cq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t cqn = vhca_cmd_handle_in(ctx);
    VhcaCq *cq = vhca_cq_lookup(core, cqn);

    if (!cq) {
        ctx->syndrome = cqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "CQ %u does not exist", cqn);
    }
    if (cq->users) {
        ctx->syndrome = cqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "CQ %u still has %u QPs", cqn, cq->users);
    }
    core->comp_eqs[cq->eqn].users--;
    vhca_db_page_put(core, cq->db_page);
    free(cq->pages);
    memset(cq, 0, sizeof(*cq));
    vhca_ids_free(&core->cq_ids, cqn);
    return VHCA_ST_OK;
}

/* ---------------------------------------------------------------------- */
/* RESIZE_CQ                                                              */
/* ---------------------------------------------------------------------- */

static void vhca_cq_resize_parse(const uint8_t *raw,
                                 struct vhca_cq_resize *r)
{
#define LD(f, bits) \
    (r->f = vhca_ld_le##bits(raw + offsetof(struct vhca_cq_resize, f)))
    LD(cqn, 32);
    LD(pbl_addr, 64);
    LD(npages, 32);
#undef LD
    r->log_size = raw[offsetof(struct vhca_cq_resize, log_size)];
}

/*
 * The consumer index of a resize: the doorbell record's, under the rules
 * of vhca_cq_update_ci() (it may only move forward, up to the producer),
 * but learnt only if the command succeeds.  *ci gets it (free running).
 */
static uint8_t vhca_cq_resize_ci(VhcaCore *core, VhcaCmdCtx *ctx,
                                 uint32_t cqn, const VhcaCq *cq,
                                 uint32_t *ci)
{
    uint8_t raw[4];
    uint32_t record, advance;

    if (vhca_dma_read(core, cq->dbrec_addr, raw, sizeof(raw))) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "CQ %u: doorbell record 0x%llx is not guest RAM",
                             cqn, (unsigned long long)cq->dbrec_addr);
    }
    record = vhca_ld_le32(raw);
    advance = ((record & VHCA_CQ_CI_MASK) - cq->ci) & VHCA_CQ_CI_MASK;
    if (advance > cq->pi - cq->ci) {
        ctx->syndrome = record;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "CQ %u: doorbell record 0x%x is not between the "
                             "consumer index 0x%x and the producer's 0x%x",
                             cqn, record, cq->ci & VHCA_CQ_CI_MASK,
                             cq->pi & VHCA_CQ_CI_MASK);
    }
    *ci = cq->ci + advance;
    return VHCA_ST_OK;
}

/*
 * Copy the @n CQEs from @ci on to indices 0..n-1 of the ring on @pages,
 * with that ring's first-pass owner bit, as the producer writes them.
 */
static uint8_t vhca_cq_resize_copy(VhcaCore *core, VhcaCmdCtx *ctx,
                                   uint32_t cqn, const VhcaCq *cq,
                                   uint32_t ci, uint32_t n,
                                   const uint64_t *pages, uint32_t log_size)
{
    uint8_t cqe[sizeof(struct vhca_cqe)];
    uint64_t addr;
    uint32_t i;

    for (i = 0; i < n; i++) {
        addr = vhca_queue_addr(cq->pages, cq->log_size, ci + i, sizeof(cqe));
        if (vhca_dma_read(core, addr, cqe, sizeof(cqe))) {
            ctx->syndrome = i;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                                 "CQ %u: CQE %u at 0x%llx is not guest RAM",
                                 cqn, ci + i, (unsigned long long)addr);
        }
        if (vhca_cq_write_cqe(core, pages, log_size, i, cqe, &addr)) {
            ctx->syndrome = i;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                                 "CQ %u: new ring entry %u at 0x%llx is not "
                                 "guest RAM", cqn, i,
                                 (unsigned long long)addr);
        }
    }
    return VHCA_ST_OK;
}

/*
 * IBTA 11.2.8.3 (Resize CQ): the CQ moves to a new ring and keeps the
 * completions it holds.  Those the consumer has not passed move, in
 * order, to the start of the new ring; the consumer starts again at
 * index 0 of it.  Everything is checked and copied before the CQ changes,
 * so a failed command leaves it as it was (spec, "Event and completion
 * queues").
 */
uint8_t vhca_cmd_resize_cq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_cq_resize)];
    static const uint8_t zero[4];
    struct vhca_cq_resize r;
    uint64_t *pages;
    uint32_t ci, n;
    uint8_t status;
    VhcaCq *cq;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_cq_resize_parse(raw, &r);
    cq = vhca_cq_lookup(core, r.cqn);
    if (!cq) {
        ctx->syndrome = r.cqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "CQ %u does not exist", r.cqn);
    }
    /* IBTA 11.4.2.1: a CQ in error stays so until it is destroyed. */
    if (cq->error) {
        ctx->syndrome = r.cqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_STATE,
                             "CQ %u is in error", r.cqn);
    }
    if (r.log_size < 1 || r.log_size > VHCA_CQ_MAX_LOG_SIZE) {
        ctx->syndrome = r.log_size;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "log_size %u outside 1..%u", r.log_size,
                             VHCA_CQ_MAX_LOG_SIZE);
    }
    /* Doorbells before commands: what was rung has completed. */
    vhca_pass_drain_senders(core, r.cqn);
    if (cq->error) {
        ctx->syndrome = r.cqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_STATE,
                             "CQ %u overflowed with the sends rung before "
                             "the resize", r.cqn);
    }
    status = vhca_cq_resize_ci(core, ctx, r.cqn, cq, &ci);
    if (status != VHCA_ST_OK) {
        return status;
    }
    /* The fullness rule of vhca_cq_has_room(): a ring holds 2^log_size. */
    n = cq->pi - ci;
    if (n > (1u << r.log_size)) {
        ctx->syndrome = n;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "CQ %u holds %u CQEs, more than the %u of the "
                             "new ring", r.cqn, n, 1u << r.log_size);
    }
    status = vhca_queue_pages_read(core, ctx, r.pbl_addr, r.npages,
                                   (uint64_t)sizeof(struct vhca_cqe)
                                   << r.log_size, &pages);
    if (status != VHCA_ST_OK) {
        return status;
    }
    status = vhca_cq_resize_copy(core, ctx, r.cqn, cq, ci, n, pages,
                                 r.log_size);
    if (status == VHCA_ST_OK &&
        vhca_dma_write(core, cq->dbrec_addr, zero, sizeof(zero))) {
        status = VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                               "CQ %u: doorbell record 0x%llx is not guest "
                               "RAM", r.cqn,
                               (unsigned long long)cq->dbrec_addr);
    }
    if (status != VHCA_ST_OK) {
        free(pages);
        return status;
    }

    /* Commit: the arming (cq->arm) is the CQ's, not the ring's: it stays. */
    free(cq->pages);
    cq->pages = pages;
    cq->log_size = r.log_size;
    cq->pi = n;
    cq->ci = 0;
    vhca_cmd_set_handle_out(ctx, n, 0);
    return VHCA_ST_OK;
}
