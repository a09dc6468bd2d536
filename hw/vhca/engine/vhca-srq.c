/*
 * vhca engine: shared receive queues - CREATE/MODIFY/QUERY/DESTROY_SRQ,
 * the SRQ doorbell, the take of a receive WQE with its consumer record,
 * the limit event, the resize and the SRQ error state (docs/specs/vhca.rst,
 * "Shared receive queues"; IBTA 10.2.9, 11.2.3, 11.5.2.4, 11.6.3).
 *
 * The QPs attached to an SRQ take its WQEs in ring order through the one
 * receive WQE source of the transport (vhca_rq_take() in vhca-recv.c);
 * a WQE taken belongs to the QP that took it until it completes.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vhca-transport.h"

#define SA(f)   offsetof(struct vhca_srq_attr, f)

static uint32_t vhca_srq_entries(const VhcaSrq *srq)
{
    return 1u << srq->log_size;
}

static uint64_t vhca_srq_wqe_addr(const VhcaSrq *srq, uint32_t index)
{
    return vhca_queue_addr(srq->pages, srq->log_size, index,
                           VHCA_RECV_WQE_SIZE);
}

/* ---------------------------------------------------------------------- */
/* The receive side's view                                                */
/* ---------------------------------------------------------------------- */

bool vhca_srq_has_wqe(const VhcaCore *core, uint32_t srqn)
{
    const VhcaSrq *srq;

    if (!vhca_ids_used(&core->srq_ids, srqn)) {
        return false;
    }
    srq = &core->srqs[srqn];
    return !srq->error && srq->pi != srq->ci;
}

/*
 * IBTA 10.2.9 / 11.6.3.3: an SRQ whose WQEs cannot be read any more is in
 * error; the consumer learns it from SRQ_ERR, once.
 */
static void vhca_srq_set_error(VhcaCore *core, uint32_t srqn, VhcaSrq *srq,
                               uint32_t index, uint64_t addr,
                               const char *what)
{
    srq->error = true;
    VHCA_HOOK(core, err_guest_ram, VHCA_RING_SRQ, srqn, index, addr);
    vhca_guest_error(core, VHCA_GUEST_ERR_SRQ,
                     "SRQ %u: %s at 0x%llx (WQE %u) is not guest RAM: the "
                     "SRQ is in error", srqn, what, (unsigned long long)addr,
                     index);
    vhca_aeq_post(core, VHCA_EQE_SRQ_EVENT, VHCA_EVENT_SRQ_ERR, srqn, 0);
}

/*
 * IBTA 10.2.9.5, 11.5.2.4: the limit fires once, on the take that leaves
 * fewer WQEs than it, and disarms (as Linux rxe does).
 */
static void vhca_srq_check_limit(VhcaCore *core, uint32_t srqn,
                                 VhcaSrq *srq)
{
    uint32_t wqes = srq->pi - srq->ci;

    if (!srq->limit || wqes >= srq->limit) {
        return;
    }
    VHCA_HOOK(core, srq_limit, srqn, srq->limit, wqes);
    srq->limit = 0;
    vhca_aeq_post(core, VHCA_EQE_SRQ_EVENT, VHCA_EVENT_SRQ_LIMIT_REACHED,
                  srqn, 0);
}

bool vhca_srq_take(VhcaCore *core, uint32_t srqn, uint8_t *raw,
                   uint32_t *index)
{
    VhcaSrq *srq = vhca_srq_lookup(core, srqn);
    uint8_t count[4];
    uint64_t addr;

    if (!srq || srq->error || srq->pi == srq->ci) {
        return false;
    }
    addr = vhca_srq_wqe_addr(srq, srq->ci);
    if (vhca_dma_read(core, addr, raw, VHCA_RECV_WQE_SIZE)) {
        vhca_srq_set_error(core, srqn, srq, srq->ci, addr, "receive WQE");
        return false;
    }
    *index = srq->ci++;
    /* The consumer may reuse the slot once this count is past it. */
    vhca_st_le32(count, srq->ci);
    if (vhca_dma_write(core, srq->ci_addr, count, sizeof(count))) {
        /* This WQE was read: it is taken; the SRQ gives no more. */
        vhca_srq_set_error(core, srqn, srq, srq->ci, srq->ci_addr,
                           "the consumer record");
        return true;
    }
    vhca_srq_check_limit(core, srqn, srq);
    return true;
}

void vhca_srq_qp_error(VhcaCore *core, uint32_t qpn)
{
    /*
     * IBTA 11.6.3.1 "Last WQE Reached": a QP on an SRQ in the error state
     * takes no more WQEs from it, and its held one was flushed.  The
     * consumer may now destroy the QP without losing a WQE (Linux's
     * ib_drain_qp() waits for this event).
     */
    vhca_qp_event(core, qpn, VHCA_EVENT_QP_LAST_WQE_REACHED);
}

/* ---------------------------------------------------------------------- */
/* Doorbell                                                               */
/* ---------------------------------------------------------------------- */

void vhca_srq_doorbell(VhcaCore *core, uint32_t page, uint32_t srqn,
                       uint32_t pi)
{
    VhcaSrq *srq = vhca_srq_lookup(core, srqn);
    uint32_t qpn;

    if (!srq || srq->db_page != page) {
        VHCA_HOOK(core, ub_doorbell, page, VHCA_DB_SRQ, 8, srqn);
        vhca_guest_error(core, VHCA_GUEST_ERR_DOORBELL,
                         "SRQ doorbell on page %u for SRQ %u, which the "
                         "page does not own, ignoring", page, srqn);
        return;
    }
    if (pi - srq->ci > vhca_srq_entries(srq)) {
        VHCA_HOOK(core, err_doorbell_index, VHCA_RING_SRQ, srqn, pi, srq->ci,
                  srq->ci + vhca_srq_entries(srq));
        vhca_guest_error(core, VHCA_GUEST_ERR_SRQ,
                         "SRQ %u producer index 0x%x is more than the ring "
                         "ahead of 0x%x, ignoring", srqn, pi, srq->ci);
        return;
    }
    srq->pi = pi;
    if (srq->error || srq->pi == srq->ci ||
        (!srq->users && srq->type != VHCA_SRQT_XRC)) {
        return;
    }
    /* Frames that waited for a WQE (RNR, UD/UC drops aside) may go on. */
    for (qpn = vhca_ids_next(&core->qp_ids, 0); qpn;
         qpn = vhca_ids_next(&core->qp_ids, qpn + 1)) {
        VhcaQp *qp = &core->qps[qpn];

        /* XRC targets of its domain may be waiting for it (A14). */
        if ((qp->srqn == srqn ||
             (qp->type == VHCA_QPT_XRC_TGT && srq->type == VHCA_SRQT_XRC &&
              qp->xrcdn == srq->xrcdn)) && qp->rxq_req.head) {
            vhca_sched_kick(core, qpn);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* CREATE_SRQ / DESTROY_SRQ                                               */
/* ---------------------------------------------------------------------- */

static void vhca_srq_create_parse(const uint8_t *raw,
                                  struct vhca_srq_create *c)
{
#define LD(f, bits) \
    (c->f = vhca_ld_le##bits(raw + offsetof(struct vhca_srq_create, f)))
    LD(pdn, 32);
    LD(db_page, 32);
    LD(pbl_addr, 64);
    LD(npages, 32);
    LD(ci_addr, 64);
    LD(limit, 32);
    LD(xrcdn, 32);
    LD(cqn, 32);
#undef LD
    c->log_size = raw[offsetof(struct vhca_srq_create, log_size)];
    c->type = raw[offsetof(struct vhca_srq_create, type)];
}

static uint8_t vhca_srq_check_log_size(VhcaCore *core, VhcaCmdCtx *ctx,
                                       uint8_t log_size)
{
    if (log_size < 1 || log_size > VHCA_WQ_MAX_LOG_SIZE) {
        ctx->syndrome = log_size;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "log_size %u outside 1..%u", log_size,
                             VHCA_WQ_MAX_LOG_SIZE);
    }
    return VHCA_ST_OK;
}

/* IBTA 11.2.3: the limit is at most the SRQ's size. */
static uint8_t vhca_srq_check_limit_value(VhcaCore *core, VhcaCmdCtx *ctx,
                                          uint32_t limit, uint8_t log_size)
{
    if (limit > (1u << log_size)) {
        ctx->syndrome = limit;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "limit %u is more than the %u WQEs of the SRQ",
                             limit, 1u << log_size);
    }
    return VHCA_ST_OK;
}

/*
 * Annex A14: an XRC SRQ is in an XRC domain and has a CQ of its own, as
 * no QP is attached to it; a basic SRQ names neither.
 */
static uint8_t vhca_srq_check_type(VhcaCore *core, VhcaCmdCtx *ctx,
                                   const struct vhca_srq_create *c)
{
    switch (c->type) {
    case VHCA_SRQT_BASIC:
        if (c->xrcdn || c->cqn) {
            ctx->syndrome = c->xrcdn ? c->xrcdn : c->cqn;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "a basic SRQ has no XRC domain (%u) and "
                                 "no CQ (%u)", c->xrcdn, c->cqn);
        }
        return VHCA_ST_OK;
    case VHCA_SRQT_XRC:
        if (!vhca_xrcd_exists(core, c->xrcdn)) {
            ctx->syndrome = c->xrcdn;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                                 "XRC domain %u does not exist", c->xrcdn);
        }
        if (!vhca_cq_lookup(core, c->cqn)) {
            ctx->syndrome = c->cqn;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                                 "CQ %u does not exist", c->cqn);
        }
        return VHCA_ST_OK;
    default:
        ctx->syndrome = c->type;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "SRQ type %u is not BASIC or XRC", c->type);
    }
}

static uint8_t vhca_srq_check_create(VhcaCore *core, VhcaCmdCtx *ctx,
                                     const struct vhca_srq_create *c)
{
    uint8_t raw[4];
    uint8_t status;

    if (!vhca_pd_lookup(core, c->pdn)) {
        ctx->syndrome = c->pdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "PD %u does not exist", c->pdn);
    }
    status = vhca_srq_check_log_size(core, ctx, c->log_size);
    if (status != VHCA_ST_OK) {
        return status;
    }
    if (!vhca_db_page_ok(core, c->db_page)) {
        ctx->syndrome = c->db_page;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "doorbell page %u is not allocated",
                             c->db_page);
    }
    if (vhca_dma_read(core, c->ci_addr, raw, sizeof(raw))) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "consumer record 0x%llx is not guest RAM",
                             (unsigned long long)c->ci_addr);
    }
    if (c->ci_addr & 3) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "consumer record 0x%llx is not 4-byte aligned",
                             (unsigned long long)c->ci_addr);
    }
    status = vhca_srq_check_limit_value(core, ctx, c->limit, c->log_size);
    if (status != VHCA_ST_OK) {
        return status;
    }
    return vhca_srq_check_type(core, ctx, c);
}

uint8_t vhca_cmd_create_srq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_srq_create)];
    static const uint8_t zero[4];
    struct vhca_srq_create c;
    uint64_t *pages;
    uint32_t srqn;
    uint8_t status;
    VhcaSrq *srq;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_srq_create_parse(raw, &c);
    status = vhca_srq_check_create(core, ctx, &c);
    if (status != VHCA_ST_OK) {
        return status;
    }
    status = vhca_queue_pages_read(core, ctx, c.pbl_addr, c.npages,
                                   (uint64_t)VHCA_RECV_WQE_SIZE << c.log_size,
                                   &pages);
    if (status != VHCA_ST_OK) {
        return status;
    }
    /* No WQE taken yet: the consumer starts from a known count. */
    if (vhca_dma_write(core, c.ci_addr, zero, sizeof(zero))) {
        free(pages);
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot write the consumer record at 0x%llx",
                             (unsigned long long)c.ci_addr);
    }
    srqn = vhca_ids_alloc(&core->srq_ids);
    if (!srqn) {
        /* Running out (or max-srq 0) is not a guest mistake. */
        free(pages);
        return VHCA_ST_NO_RESOURCES;
    }

    srq = &core->srqs[srqn];
    memset(srq, 0, sizeof(*srq));
    srq->pages = pages;
    srq->log_size = c.log_size;
    srq->pdn = c.pdn;
    srq->db_page = c.db_page;
    srq->ci_addr = c.ci_addr;
    srq->limit = c.limit;
    srq->type = c.type;
    if (c.type == VHCA_SRQT_XRC) {
        srq->xrcdn = c.xrcdn;
        srq->cqn = c.cqn;
        core->xrcd_users[c.xrcdn]++;
        core->cqs[c.cqn].users++;
    }
    core->pds[c.pdn].users++;
    vhca_db_page_get(core, c.db_page);
    vhca_cmd_set_handle_out(ctx, srqn, 0);
    return VHCA_ST_OK;
}

static void vhca_srq_free(VhcaCore *core, uint32_t srqn, VhcaSrq *srq)
{
    free(srq->pages);
    memset(srq, 0, sizeof(*srq));
    vhca_ids_free(&core->srq_ids, srqn);
}

uint8_t vhca_cmd_destroy_srq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t srqn = vhca_cmd_handle_in(ctx);
    VhcaSrq *srq = vhca_srq_lookup(core, srqn);

    ctx->syndrome = srqn;
    if (!srq) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "SRQ %u does not exist", srqn);
    }
    /* IBTA 11.2.3.4: not while a QP is associated with it. */
    if (srq->users) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "SRQ %u still has %u QPs", srqn, srq->users);
    }
    ctx->syndrome = 0;
    if (srq->type == VHCA_SRQT_XRC) {
        vhca_xrc_srq_gone(core, srqn);
        core->xrcd_users[srq->xrcdn]--;
        core->cqs[srq->cqn].users--;
    }
    core->pds[srq->pdn].users--;
    vhca_db_page_put(core, srq->db_page);
    vhca_srq_free(core, srqn, srq);
    return VHCA_ST_OK;
}

/* The queues of the SRQs that exist (DESTROY_SRQ frees its own). */
void vhca_srq_free_queues(VhcaCore *core)
{
    uint32_t srqn;

    for (srqn = vhca_ids_next(&core->srq_ids, 0); srqn;
         srqn = vhca_ids_next(&core->srq_ids, srqn + 1)) {
        free(core->srqs[srqn].pages);
    }
}

void vhca_srq_reset(VhcaCore *core)
{
    vhca_srq_free_queues(core);
    memset(core->srqs, 0, (core->cfg.max_srq + 1) * sizeof(*core->srqs));
    vhca_ids_clear(&core->srq_ids);
}

/* ---------------------------------------------------------------------- */
/* MODIFY_SRQ / QUERY_SRQ                                                 */
/* ---------------------------------------------------------------------- */

static void vhca_srq_attr_parse(const uint8_t *raw, struct vhca_srq_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->srqn = vhca_ld_le32(raw + SA(srqn));
    a->attr_mask = vhca_ld_le32(raw + SA(attr_mask));
    a->limit = vhca_ld_le32(raw + SA(limit));
    a->log_size = raw[SA(log_size)];
    a->pbl_addr = vhca_ld_le64(raw + SA(pbl_addr));
    a->npages = vhca_ld_le32(raw + SA(npages));
}

static uint8_t vhca_srq_attr_lookup(VhcaCore *core, VhcaCmdCtx *ctx,
                                    uint8_t *raw, struct vhca_srq_attr *a,
                                    VhcaSrq **srq)
{
    uint8_t status = vhca_cmd_mailbox_read(core, ctx, raw,
                                           sizeof(struct vhca_srq_attr));

    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_srq_attr_parse(raw, a);
    *srq = vhca_srq_lookup(core, a->srqn);
    if (!*srq) {
        ctx->syndrome = a->srqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "SRQ %u does not exist", a->srqn);
    }
    return VHCA_ST_OK;
}

/*
 * MAX_WR: the WQEs posted and not taken (ci .. pi - 1) keep their free
 * running indices in the new ring, so the consumer's producer index and
 * the consumer record go on unchanged.  They are copied into the new
 * ring before anything is committed: a failure leaves the SRQ as it was.
 */
static uint8_t vhca_srq_resize(VhcaCore *core, VhcaCmdCtx *ctx,
                               uint32_t srqn, VhcaSrq *srq,
                               const struct vhca_srq_attr *a,
                               uint64_t **new_pages)
{
    uint32_t pending = srq->pi - srq->ci;
    uint8_t wqe[VHCA_RECV_WQE_SIZE];
    uint64_t *pages;
    uint8_t status;
    uint32_t i;

    if (pending > (1u << a->log_size)) {
        ctx->syndrome = pending;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "SRQ %u: %u WQEs are posted, more than a ring "
                             "of %u holds", srqn, pending,
                             1u << a->log_size);
    }
    status = vhca_queue_pages_read(core, ctx, a->pbl_addr, a->npages,
                                   (uint64_t)VHCA_RECV_WQE_SIZE << a->log_size,
                                   &pages);
    if (status != VHCA_ST_OK) {
        return status;
    }
    for (i = 0; i < pending; i++) {
        uint32_t index = srq->ci + i;
        uint64_t from = vhca_srq_wqe_addr(srq, index);
        uint64_t to = vhca_queue_addr(pages, a->log_size, index,
                                      VHCA_RECV_WQE_SIZE);

        if (vhca_dma_read(core, from, wqe, sizeof(wqe)) ||
            vhca_dma_write(core, to, wqe, sizeof(wqe))) {
            free(pages);
            ctx->syndrome = index;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                                 "SRQ %u: cannot move WQE %u from 0x%llx "
                                 "to 0x%llx", srqn, index,
                                 (unsigned long long)from,
                                 (unsigned long long)to);
        }
    }
    *new_pages = pages;
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_modify_srq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_srq_attr)];
    struct vhca_srq_attr a;
    uint64_t *pages = NULL;
    uint8_t log_size;
    uint8_t status;
    VhcaSrq *srq;

    status = vhca_srq_attr_lookup(core, ctx, raw, &a, &srq);
    if (status != VHCA_ST_OK) {
        return status;
    }
    if (a.attr_mask & ~(VHCA_SRQ_MAX_WR | VHCA_SRQ_LIMIT)) {
        ctx->syndrome = a.attr_mask;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "SRQ %u: attributes 0x%x are not MAX_WR or "
                             "LIMIT", a.srqn, a.attr_mask);
    }
    log_size = srq->log_size;
    if (a.attr_mask & VHCA_SRQ_MAX_WR) {
        status = vhca_srq_check_log_size(core, ctx, a.log_size);
        if (status != VHCA_ST_OK) {
            return status;
        }
        log_size = a.log_size;
    }
    if (a.attr_mask & VHCA_SRQ_LIMIT) {
        status = vhca_srq_check_limit_value(core, ctx, a.limit, log_size);
        if (status != VHCA_ST_OK) {
            return status;
        }
    }
    if (a.attr_mask & VHCA_SRQ_MAX_WR) {
        status = vhca_srq_resize(core, ctx, a.srqn, srq, &a, &pages);
        if (status != VHCA_ST_OK) {
            return status;
        }
        free(srq->pages);
        srq->pages = pages;
        srq->log_size = a.log_size;
    }
    if (a.attr_mask & VHCA_SRQ_LIMIT) {
        srq->limit = a.limit;
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_query_srq(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_srq_attr)];
    struct vhca_srq_attr a;
    uint8_t status;
    VhcaSrq *srq;

    status = vhca_srq_attr_lookup(core, ctx, raw, &a, &srq);
    if (status != VHCA_ST_OK) {
        return status;
    }
    memset(raw, 0, sizeof(raw));
    vhca_st_le32(raw + SA(srqn), a.srqn);
    vhca_st_le32(raw + SA(limit), srq->limit);
    raw[SA(log_size)] = (uint8_t)srq->log_size;
    vhca_st_le32(raw + SA(wqes), srq->pi - srq->ci);
    return vhca_cmd_mailbox_write(core, ctx, raw, sizeof(raw));
}
