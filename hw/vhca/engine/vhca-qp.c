/*
 * vhca engine: queue pairs - CREATE/MODIFY/QUERY/DESTROY_QP, the SQ and
 * RQ doorbells, and the flush of outstanding work requests when a QP
 * enters the error state (docs/specs/vhca.rst, "Queue pairs"; IBTA 10.3,
 * 10.8.3.3, 11.2.4).
 *
 * The transport (vhca-req.c and friends) executes the WQEs of every QP
 * type: RC, UC, UD and the GSI QP (QPN 1, a UD QP with its own Q_Key).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vhca-transport.h"

/*
 * Both FLUSH placement types may be enabled on a QP (IBTA 1.5 memory
 * placement extensions), as on rxe: the MR's rights decide.
 */
#define VHCA_QP_ACCESS_ALL  (VHCA_ACCESS_LOCAL_WRITE |                      \
                             VHCA_ACCESS_REMOTE_WRITE |                     \
                             VHCA_ACCESS_REMOTE_READ |                      \
                             VHCA_ACCESS_REMOTE_ATOMIC |                    \
                             VHCA_ACCESS_FLUSH_GLOBAL |                     \
                             VHCA_ACCESS_FLUSH_PERSISTENT)
#define VHCA_PSN_MAX        0xffffffu
#define VHCA_QPN_MAX        0xffffffu
#define VHCA_FLOW_LABEL_MAX 0xfffffu

/* ---------------------------------------------------------------------- */
/* struct vhca_qp_attr <-> little-endian mailbox                          */
/* ---------------------------------------------------------------------- */

#define QA(f)   offsetof(struct vhca_qp_attr, f)

static const uint16_t qp_attr_le32[] = {
    QA(qpn), QA(attr_mask), QA(qp_access_flags), QA(dest_qp_num),
    QA(rq_psn), QA(sq_psn), QA(qkey), QA(flow_label), QA(max_send_wr),
    QA(max_recv_wr), QA(max_send_sge), QA(max_recv_sge),
    QA(max_inline_data),
};

static const uint16_t qp_attr_le16[] = {
    QA(pkey_index), QA(udp_sport), QA(dlid),
};

static void vhca_qp_attr_from_le(struct vhca_qp_attr *attr,
                                 const uint8_t *raw)
{
    size_t i;

    memcpy(attr, raw, sizeof(*attr));
    for (i = 0; i < sizeof(qp_attr_le32) / sizeof(qp_attr_le32[0]); i++) {
        uint32_t v = vhca_ld_le32(raw + qp_attr_le32[i]);

        memcpy((uint8_t *)attr + qp_attr_le32[i], &v, sizeof(v));
    }
    for (i = 0; i < sizeof(qp_attr_le16) / sizeof(qp_attr_le16[0]); i++) {
        uint16_t v = vhca_ld_le16(raw + qp_attr_le16[i]);

        memcpy((uint8_t *)attr + qp_attr_le16[i], &v, sizeof(v));
    }
}

static void vhca_qp_attr_to_le(uint8_t *raw, const struct vhca_qp_attr *attr)
{
    size_t i;

    memcpy(raw, attr, sizeof(*attr));
    for (i = 0; i < sizeof(qp_attr_le32) / sizeof(qp_attr_le32[0]); i++) {
        uint32_t v;

        memcpy(&v, (const uint8_t *)attr + qp_attr_le32[i], sizeof(v));
        vhca_st_le32(raw + qp_attr_le32[i], v);
    }
    for (i = 0; i < sizeof(qp_attr_le16) / sizeof(qp_attr_le16[0]); i++) {
        uint16_t v;

        memcpy(&v, (const uint8_t *)attr + qp_attr_le16[i], sizeof(v));
        vhca_st_le16(raw + qp_attr_le16[i], v);
    }
}

/* ---------------------------------------------------------------------- */
/* Doorbells                                                              */
/* ---------------------------------------------------------------------- */

static VhcaQp *vhca_qp_doorbell_target(VhcaCore *core, uint32_t page,
                                       uint32_t qpn, VhcaRingId ring,
                                       uint32_t pi)
{
    VhcaQp *qp = vhca_qp_lookup(core, qpn);
    const char *queue = ring == VHCA_RING_SQ ? "SQ" : "RQ";

    if (!qp || qp->db_page != page) {
        VHCA_HOOK(core, ub_doorbell, page,
                  ring == VHCA_RING_SQ ? VHCA_DB_SQ : VHCA_DB_RQ, 8, qpn);
        vhca_guest_error(core, VHCA_GUEST_ERR_DOORBELL,
                         "%s doorbell on page %u for QP %u, which the page "
                         "does not own, ignoring", queue, page, qpn);
        return NULL;
    }
    /* IBTA 10.8.2: nothing is posted to a QP in RESET. */
    if (qp->state == VHCA_QPS_RESET) {
        VHCA_HOOK(core, ub_ring_doorbell, ring, qpn, pi);
        vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                         "%s doorbell for QP %u in RESET, ignoring", queue,
                         qpn);
        return NULL;
    }
    return qp;
}

static bool vhca_wq_doorbell(VhcaCore *core, uint32_t qpn, VhcaWq *wq,
                             uint32_t pi, VhcaRingId ring)
{
    const char *queue = ring == VHCA_RING_SQ ? "SQ" : "RQ";

    if (pi - wq->ci > (1u << wq->log_size)) {
        VHCA_HOOK(core, err_doorbell_index, ring, qpn, pi, wq->ci,
                  wq->ci + (1u << wq->log_size));
        vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                         "QP %u %s producer index 0x%x is more than the "
                         "ring ahead of 0x%x, ignoring", qpn, queue, pi,
                         wq->ci);
        return false;
    }
    wq->pi = pi;
    return true;
}

void vhca_qp_sq_doorbell(VhcaCore *core, uint32_t page, uint32_t qpn,
                         uint32_t pi)
{
    VhcaQp *qp = vhca_qp_doorbell_target(core, page, qpn, VHCA_RING_SQ, pi);

    if (!qp || !vhca_wq_doorbell(core, qpn, &qp->sq, pi, VHCA_RING_SQ)) {
        return;
    }
    /*
     * RTS: the requester takes them in its next deferred pass; INIT, RTR
     * and SQD: they wait; ERR and SQE (IBTA 10.3.1): flushed now.
     */
    if (qp->state == VHCA_QPS_ERR || qp->state == VHCA_QPS_SQE) {
        vhca_qp_flush_wq(core, qpn, &qp->sq, qp->send_cqn, true);
        qp->req.fetched = qp->req.cur = qp->sq.ci;
        vhca_cq_errors_settle(core);
    } else if (qp->state == VHCA_QPS_RTS) {
        vhca_sched_kick(core, qpn);
    }
}

void vhca_qp_rq_doorbell(VhcaCore *core, uint32_t page, uint32_t qpn,
                         uint32_t pi)
{
    VhcaQp *qp = vhca_qp_doorbell_target(core, page, qpn, VHCA_RING_RQ, pi);

    if (qp && !qp->rq.pages) {
        /*
         * Its receive WQEs are posted to the SRQ, or it is an XRC
         * initiator, which receives nothing (annex A14): it has no RQ.
         */
        VHCA_HOOK(core, ub_ring_doorbell, VHCA_RING_RQ, qpn, pi);
        vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                         "RQ doorbell for QP %u, which has no RQ (SRQ %u), "
                         "ignoring", qpn, qp->srqn);
        return;
    }
    if (!qp || !vhca_wq_doorbell(core, qpn, &qp->rq, pi, VHCA_RING_RQ)) {
        return;
    }
    if (qp->state == VHCA_QPS_ERR) {
        vhca_qp_flush_wq(core, qpn, &qp->rq, qp->recv_cqn, false);
        vhca_cq_errors_settle(core);
    }
}

/* ---------------------------------------------------------------------- */
/* CREATE_QP / DESTROY_QP                                                 */
/* ---------------------------------------------------------------------- */

static void vhca_qp_create_parse(const uint8_t *raw,
                                 struct vhca_qp_create *c)
{
#define LD(f, bits) \
    (c->f = vhca_ld_le##bits(raw + offsetof(struct vhca_qp_create, f)))
    LD(pdn, 32);
    LD(send_cqn, 32);
    LD(recv_cqn, 32);
    LD(sq_pbl_addr, 64);
    LD(rq_pbl_addr, 64);
    LD(sq_npages, 32);
    LD(rq_npages, 32);
    LD(db_page, 32);
    LD(srqn, 32);
    LD(xrcdn, 32);
#undef LD
    c->type = raw[offsetof(struct vhca_qp_create, type)];
    c->sq_log_size = raw[offsetof(struct vhca_qp_create, sq_log_size)];
    c->rq_log_size = raw[offsetof(struct vhca_qp_create, rq_log_size)];
    c->sq_sig_all = raw[offsetof(struct vhca_qp_create, sq_sig_all)];
}

/*
 * A QP that receives from an SRQ (IBTA 10.2.9, 11.2.4.1): RC, UC or UD,
 * with no receive ring of its own.  The GSI QP keeps its own RQ, as in
 * Linux, which creates it without an SRQ.
 */
static uint8_t vhca_qp_check_create_srq(VhcaCore *core, VhcaCmdCtx *ctx,
                                        const struct vhca_qp_create *c)
{
    const VhcaSrq *srq = vhca_srq_lookup(core, c->srqn);

    if (!srq) {
        ctx->syndrome = c->srqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "SRQ %u does not exist", c->srqn);
    }
    /* Annex A14: only XRC requests reach an XRC SRQ. */
    if (srq->type != VHCA_SRQT_BASIC) {
        ctx->syndrome = c->srqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "SRQ %u is an XRC SRQ: no QP is created on "
                             "it", c->srqn);
    }
    if (c->type == VHCA_QPT_GSI || c->type == VHCA_QPT_SMI) {
        ctx->syndrome = c->srqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "the %s QP cannot receive from SRQ %u",
                             vhca_core_qp_type_name(c->type), c->srqn);
    }
    if (c->rq_log_size || c->rq_pbl_addr || c->rq_npages) {
        ctx->syndrome = c->srqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "a QP on SRQ %u has no RQ, but rq_log_size "
                             "%u, rq_pbl_addr 0x%llx, rq_npages %u",
                             c->srqn, c->rq_log_size,
                             (unsigned long long)c->rq_pbl_addr,
                             c->rq_npages);
    }
    return VHCA_ST_OK;
}

/*
 * Annex A14: an XRC target is the responder of an XRC domain; it has no
 * queues, no CQs and no PD (the XRC SRQ each request names brings them).
 */
static uint8_t vhca_qp_check_create_xrc_tgt(VhcaCore *core, VhcaCmdCtx *ctx,
                                            const struct vhca_qp_create *c)
{
    if (!vhca_xrcd_exists(core, c->xrcdn)) {
        ctx->syndrome = c->xrcdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "XRC domain %u does not exist", c->xrcdn);
    }
    if (c->pdn || c->send_cqn || c->recv_cqn || c->sq_log_size ||
        c->rq_log_size || c->sq_pbl_addr || c->rq_pbl_addr ||
        c->sq_npages || c->rq_npages || c->sq_sig_all || c->srqn) {
        ctx->syndrome = c->xrcdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "an XRC target QP has no PD (%u), CQs (%u, %u), "
                             "queues or SRQ (%u)", c->pdn, c->send_cqn,
                             c->recv_cqn, c->srqn);
    }
    return VHCA_ST_OK;
}

/* The type and what it lacks: an XRC initiator receives nothing (A14). */
static uint8_t vhca_qp_check_create_type(VhcaCore *core, VhcaCmdCtx *ctx,
                                         const struct vhca_qp_create *c)
{
    switch (c->type) {
    case VHCA_QPT_SMI:
        /* Annex A16/A17: RoCE has no subnet management QP. */
        if (core->cfg.link != VHCA_LINK_IB) {
            ctx->syndrome = c->type;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "an SMI QP exists only on an InfiniBand "
                                 "port (link=ib)");
        }
        break;
    case VHCA_QPT_RC:
    case VHCA_QPT_UC:
    case VHCA_QPT_UD:
    case VHCA_QPT_GSI:
        break;
    case VHCA_QPT_XRC_INI:
        if (c->recv_cqn || c->rq_log_size || c->rq_pbl_addr ||
            c->rq_npages || c->srqn) {
            ctx->syndrome = c->recv_cqn ? c->recv_cqn : c->srqn;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "an XRC initiator QP has no receive CQ "
                                 "(%u), RQ or SRQ (%u)", c->recv_cqn,
                                 c->srqn);
        }
        break;
    default:
        ctx->syndrome = c->type;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP type %u is not SMI, GSI, RC, UC, UD, "
                             "XRC_INI or XRC_TGT", c->type);
    }
    if (c->xrcdn) {
        ctx->syndrome = c->xrcdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "only an XRC target QP has an XRC domain (%u)",
                             c->xrcdn);
    }
    return VHCA_ST_OK;
}

static uint8_t vhca_qp_check_create(VhcaCore *core, VhcaCmdCtx *ctx,
                                    const struct vhca_qp_create *c)
{
    bool has_rq = c->type != VHCA_QPT_XRC_INI && !c->srqn;
    uint8_t status;

    if (c->type == VHCA_QPT_XRC_TGT) {
        return vhca_qp_check_create_xrc_tgt(core, ctx, c);
    }
    status = vhca_qp_check_create_type(core, ctx, c);
    if (status != VHCA_ST_OK) {
        return status;
    }
    /* IBTA 13.4.6: one GSI QP per port, and this device has one port. */
    if (c->type == VHCA_QPT_GSI && vhca_qp_lookup(core, VHCA_GSI_QPN)) {
        ctx->syndrome = VHCA_GSI_QPN;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "the GSI QP (QP1) exists already");
    }
    /* IBTA 14.2.4.1: one SMI QP (QP0) per port. */
    if (c->type == VHCA_QPT_SMI && core->smi_qpn) {
        ctx->syndrome = core->smi_qpn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "the SMI QP (QP0) exists already as QP %u",
                             core->smi_qpn);
    }
    if (c->sq_log_size < 1 || c->sq_log_size > VHCA_WQ_MAX_LOG_SIZE) {
        ctx->syndrome = c->sq_log_size;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "SQ log size %u outside 1..%u", c->sq_log_size,
                             VHCA_WQ_MAX_LOG_SIZE);
    }
    if (c->srqn) {
        status = vhca_qp_check_create_srq(core, ctx, c);
        if (status != VHCA_ST_OK) {
            return status;
        }
    } else if (has_rq && (c->rq_log_size < 1 ||
                          c->rq_log_size > VHCA_WQ_MAX_LOG_SIZE)) {
        ctx->syndrome = c->rq_log_size;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "RQ log size %u outside 1..%u", c->rq_log_size,
                             VHCA_WQ_MAX_LOG_SIZE);
    }
    if (!vhca_pd_lookup(core, c->pdn)) {
        ctx->syndrome = c->pdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "PD %u does not exist", c->pdn);
    }
    if (!vhca_cq_lookup(core, c->send_cqn) ||
        (c->type != VHCA_QPT_XRC_INI && !vhca_cq_lookup(core, c->recv_cqn))) {
        ctx->syndrome = vhca_cq_lookup(core, c->send_cqn) ? c->recv_cqn
                                                          : c->send_cqn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "CQ %u does not exist", ctx->syndrome);
    }
    if (!vhca_db_page_ok(core, c->db_page)) {
        ctx->syndrome = c->db_page;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "doorbell page %u is not allocated",
                             c->db_page);
    }
    return VHCA_ST_OK;
}

/*
 * The objects a QP uses count it (@delta +1 at CREATE, -1 at DESTROY), so
 * that none of them goes away under it.  XRC QPs lack some (annex A14).
 */
static void vhca_qp_users(VhcaCore *core, const VhcaQp *qp, int delta)
{
    if (qp->pdn) {
        core->pds[qp->pdn].users += delta;
    }
    if (qp->send_cqn) {
        core->cqs[qp->send_cqn].users += delta;
    }
    if (qp->recv_cqn) {
        core->cqs[qp->recv_cqn].users += delta;
    }
    if (qp->srqn) {
        core->srqs[qp->srqn].users += delta;
    }
    if (qp->xrcdn) {
        core->xrcd_users[qp->xrcdn] += delta;
    }
    if (delta > 0) {
        vhca_db_page_get(core, qp->db_page);
    } else {
        vhca_db_page_put(core, qp->db_page);
    }
}

static uint8_t vhca_qp_wq_init(VhcaCore *core, VhcaCmdCtx *ctx, VhcaWq *wq,
                               uint64_t pbl_addr, uint32_t npages,
                               uint32_t log_size, uint32_t stride)
{
    memset(wq, 0, sizeof(*wq));
    wq->log_size = log_size;
    wq->stride = stride;
    return vhca_queue_pages_read(core, ctx, pbl_addr, npages,
                                 (uint64_t)stride << log_size, &wq->pages);
}

uint8_t vhca_cmd_create_qp(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_qp_create)];
    struct vhca_qp_create c;
    VhcaQp qp;
    uint32_t qpn;
    uint8_t status;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_qp_create_parse(raw, &c);
    status = vhca_qp_check_create(core, ctx, &c);
    if (status != VHCA_ST_OK) {
        return status;
    }

    memset(&qp, 0, sizeof(qp));
    qp.type = c.type;               /* vhca_qp_transport_init() asks */
    if (c.type != VHCA_QPT_XRC_TGT) {
        status = vhca_qp_wq_init(core, ctx, &qp.sq, c.sq_pbl_addr,
                                 c.sq_npages, c.sq_log_size,
                                 VHCA_SEND_WQE_SIZE);
    }
    if (status == VHCA_ST_OK && !c.srqn && c.type != VHCA_QPT_XRC_INI &&
        c.type != VHCA_QPT_XRC_TGT) {
        status = vhca_qp_wq_init(core, ctx, &qp.rq, c.rq_pbl_addr,
                                 c.rq_npages, c.rq_log_size,
                                 VHCA_RECV_WQE_SIZE);
    }
    if (status == VHCA_ST_OK && vhca_qp_transport_init(&qp)) {
        status = VHCA_ST_NO_RESOURCES;
    }
    if (status != VHCA_ST_OK) {
        qpn = 0;
    } else if (c.type == VHCA_QPT_GSI) {
        qpn = vhca_ids_claim(&core->qp_ids, VHCA_GSI_QPN) ? VHCA_GSI_QPN : 0;
    } else {
        /* QPN 1 is the GSI QP's alone. */
        qpn = vhca_ids_alloc_from(&core->qp_ids, VHCA_FIRST_QPN);
    }
    if (!qpn) {
        free(qp.sq.pages);
        free(qp.rq.pages);
        vhca_qp_transport_free(core, &qp);
        return status == VHCA_ST_OK ? VHCA_ST_NO_RESOURCES : status;
    }

    qp.state = VHCA_QPS_RESET;
    qp.sq_sig_all = c.sq_sig_all != 0;
    qp.pdn = c.pdn;
    qp.send_cqn = c.send_cqn;
    qp.recv_cqn = c.recv_cqn;
    /* An XRC target has no queue to ring. */
    qp.db_page = c.type == VHCA_QPT_XRC_TGT ? VHCA_DB_PAGE_KERNEL_NONE
                                            : c.db_page;
    qp.srqn = c.srqn;
    qp.xrcdn = c.xrcdn;
    vhca_cc_qp_init(core, &qp);
    core->qps[qpn] = qp;
    if (c.type == VHCA_QPT_SMI) {
        core->smi_qpn = qpn;
    }
    vhca_qp_users(core, &qp, 1);
    vhca_cmd_set_handle_out(ctx, qpn, 0);
    return VHCA_ST_OK;
}

/* IBTA 10.2.4.4: destroying a QP drops its WQEs without completions. */
uint8_t vhca_cmd_destroy_qp(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t qpn = vhca_cmd_handle_in(ctx);
    VhcaQp *qp = vhca_qp_lookup(core, qpn);

    if (!qp) {
        ctx->syndrome = qpn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "QP %u does not exist", qpn);
    }
    vhca_qp_drain_unreliable(core, qpn, qp);
    vhca_qp_users(core, qp, -1);
    vhca_mcast_qp_gone(core, qpn);
    vhca_mw_qp_gone(core, qpn);
    vhca_qp_transport_reset(core, qpn, qp);
    vhca_qp_transport_free(core, qp);
    free(qp->sq.pages);
    free(qp->rq.pages);
    memset(qp, 0, sizeof(*qp));
    vhca_ids_free(&core->qp_ids, qpn);
    if (core->smi_qpn == qpn) {
        core->smi_qpn = 0;
    }
    return VHCA_ST_OK;
}

/* ---------------------------------------------------------------------- */
/* QUERY_QP                                                               */
/* ---------------------------------------------------------------------- */

uint8_t vhca_cmd_query_qp(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_qp_attr)];
    struct vhca_qp_attr attr;
    uint32_t qpn;
    uint8_t status;
    VhcaQp *qp;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    qpn = vhca_ld_le32(raw + QA(qpn));
    qp = vhca_qp_lookup(core, qpn);
    if (!qp) {
        ctx->syndrome = qpn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "QP %u does not exist", qpn);
    }

    attr = qp->attr;
    attr.qpn = qpn;
    attr.attr_mask = 0;
    attr.qp_state = qp->state;
    attr.cur_qp_state = qp->state;
    /* SQD and WQEs still in flight (IBTA 11.2.5.2 sq_draining). */
    attr.sq_draining = qp->state == VHCA_QPS_SQD &&
                       qp->sq.ci != qp->req.fetched;
    attr.max_send_wr = qp->sq.pages ? 1u << qp->sq.log_size : 0;
    /*
     * A QP on an SRQ has no receive ring of its own (IBTA 11.2.5.2), nor
     * has an XRC QP (annex A14).
     */
    attr.max_recv_wr = qp->rq.pages ? 1u << qp->rq.log_size : 0;
    attr.max_send_sge = VHCA_MAX_SEND_SGE;
    attr.max_recv_sge = VHCA_MAX_RECV_SGE;
    attr.max_inline_data = VHCA_MAX_INLINE;
    vhca_qp_attr_to_le(raw, &attr);
    return vhca_cmd_mailbox_write(core, ctx, raw, sizeof(raw));
}

/* ---------------------------------------------------------------------- */
/* MODIFY_QP                                                              */
/* ---------------------------------------------------------------------- */

/*
 * Attributes that are one number with a range: checked and copied from
 * the same table.  AV, CUR_STATE, STATE and the flags-only attributes are
 * handled on their own.
 */
typedef struct VhcaQpScalarAttr {
    uint32_t bit;
    uint16_t offset;
    uint8_t size;
    uint32_t min;
    uint32_t max;
    const char *name;
} VhcaQpScalarAttr;

#define SCALAR(bit, field, lo, hi) \
    { VHCA_QP_##bit, QA(field), sizeof(((struct vhca_qp_attr *)0)->field), \
      lo, hi, #field }

static const VhcaQpScalarAttr qp_scalar_attrs[] = {
    SCALAR(ACCESS_FLAGS, qp_access_flags, 0, VHCA_QP_ACCESS_ALL),
    /* The IB port's P_Key table; one P_Key on Ethernet (check_values). */
    SCALAR(PKEY_INDEX, pkey_index, 0, VHCA_IB_PKEY_TBL_LEN - 1),
    SCALAR(PORT, port, 1, 1),
    SCALAR(QKEY, qkey, 0, UINT32_MAX),
    SCALAR(PATH_MTU, path_mtu, VHCA_IB_MTU_256, VHCA_IB_MTU_4096),
    SCALAR(TIMEOUT, timeout, 0, 31),
    SCALAR(RETRY_CNT, retry_cnt, 0, 7),
    SCALAR(RNR_RETRY, rnr_retry, 0, 7),
    SCALAR(RQ_PSN, rq_psn, 0, VHCA_PSN_MAX),
    SCALAR(MAX_QP_RD_ATOMIC, max_rd_atomic, 0, VHCA_MAX_RD_ATOMIC),
    SCALAR(MIN_RNR_TIMER, min_rnr_timer, 0, 31),
    SCALAR(SQ_PSN, sq_psn, 0, VHCA_PSN_MAX),
    SCALAR(MAX_DEST_RD_ATOMIC, max_dest_rd_atomic, 0, VHCA_MAX_RD_ATOMIC),
    SCALAR(DEST_QPN, dest_qp_num, 0, VHCA_QPN_MAX),
    SCALAR(EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify, 0, 1),
};

#undef SCALAR

static uint32_t vhca_qp_attr_get(const struct vhca_qp_attr *attr,
                                 uint16_t offset, uint8_t size)
{
    const uint8_t *p = (const uint8_t *)attr + offset;
    uint16_t v16;
    uint32_t v32;

    switch (size) {
    case 1:
        return *p;
    case 2:
        memcpy(&v16, p, sizeof(v16));
        return v16;
    default:
        memcpy(&v32, p, sizeof(v32));
        return v32;
    }
}

/*
 * The IB port's path (IBTA 7.7, 8.3): an SL, the LMC's path bits, and a
 * GRH only if the address vector asks for one; then its fields are
 * checked as on RoCE.
 */
static uint8_t vhca_qp_check_av_ib(VhcaCore *core, VhcaCmdCtx *ctx,
                                   const struct vhca_qp_attr *attr)
{
    if (attr->sl > 15 || attr->src_path_bits > 0x7f ||
        (attr->ah_flags & ~VHCA_AH_GRH)) {
        ctx->syndrome = attr->sl;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: sl %u, src_path_bits 0x%x or ah_flags "
                             "0x%x out of range", attr->qpn, attr->sl,
                             attr->src_path_bits, attr->ah_flags);
    }
    return VHCA_ST_OK;
}

static uint8_t vhca_qp_check_av(VhcaCore *core, VhcaCmdCtx *ctx,
                                const struct vhca_qp_attr *attr)
{
    if (core->cfg.link == VHCA_LINK_IB) {
        uint8_t status = vhca_qp_check_av_ib(core, ctx, attr);

        if (status != VHCA_ST_OK || !(attr->ah_flags & VHCA_AH_GRH)) {
            return status;
        }
    }
    if (attr->sgid_index >= core->cfg.gid_tbl_len ||
        !core->gid_tbl[attr->sgid_index].valid) {
        ctx->syndrome = attr->sgid_index;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: sgid_index %u names no GID", attr->qpn,
                             attr->sgid_index);
    }
    if (attr->flow_label > VHCA_FLOW_LABEL_MAX) {
        ctx->syndrome = attr->flow_label;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: flow_label 0x%x is wider than 20 bits",
                             attr->qpn, attr->flow_label);
    }
    return VHCA_ST_OK;
}

static uint8_t vhca_qp_check_values(VhcaCore *core, VhcaCmdCtx *ctx,
                                    const VhcaQp *qp,
                                    const struct vhca_qp_attr *attr)
{
    uint32_t mask = attr->attr_mask;
    size_t i;

    if ((mask & VHCA_QP_CUR_STATE) && attr->cur_qp_state != qp->state) {
        ctx->syndrome = attr->cur_qp_state;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_STATE,
                             "QP %u: cur_qp_state %u but the QP is in %s",
                             attr->qpn, attr->cur_qp_state,
                             vhca_qp_state_name(qp->state));
    }
    /* No alternate path: automatic path migration is not supported. */
    if (mask & VHCA_QP_ALT_PATH) {
        ctx->syndrome = VHCA_QP_ALT_PATH;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: alternate paths are not supported",
                             attr->qpn);
    }
    /* RoCE has one P_Key (QUERY_DEVICE max_pkeys 1, annex A17.2). */
    if ((mask & VHCA_QP_PKEY_INDEX) && attr->pkey_index &&
        core->cfg.link != VHCA_LINK_IB) {
        ctx->syndrome = attr->pkey_index;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: pkey_index %u on an Ethernet port, "
                             "which has one P_Key", attr->qpn,
                             attr->pkey_index);
    }
    /* The access flags are bits: the range below does not catch holes. */
    if ((mask & VHCA_QP_ACCESS_FLAGS) &&
        (attr->qp_access_flags & ~VHCA_QP_ACCESS_ALL)) {
        ctx->syndrome = VHCA_QP_ACCESS_FLAGS;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: qp_access_flags 0x%x has unknown bits",
                             attr->qpn, attr->qp_access_flags);
    }
    for (i = 0; i < sizeof(qp_scalar_attrs) / sizeof(qp_scalar_attrs[0]);
         i++) {
        const VhcaQpScalarAttr *a = &qp_scalar_attrs[i];
        uint32_t v = vhca_qp_attr_get(attr, a->offset, a->size);

        if ((mask & a->bit) && (v < a->min || v > a->max)) {
            ctx->syndrome = a->bit;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "QP %u: %s %u outside %u..%u", attr->qpn,
                                 a->name, v, a->min, a->max);
        }
    }
    return (mask & VHCA_QP_AV) ? vhca_qp_check_av(core, ctx, attr)
                               : VHCA_ST_OK;
}

static void vhca_qp_apply(VhcaQp *qp, const struct vhca_qp_attr *attr)
{
    uint32_t mask = attr->attr_mask;
    size_t i;

    for (i = 0; i < sizeof(qp_scalar_attrs) / sizeof(qp_scalar_attrs[0]);
         i++) {
        const VhcaQpScalarAttr *a = &qp_scalar_attrs[i];

        if (mask & a->bit) {
            memcpy((uint8_t *)&qp->attr + a->offset,
                   (const uint8_t *)attr + a->offset, a->size);
        }
    }
    if (mask & VHCA_QP_AV) {
        qp->attr.sgid_index = attr->sgid_index;
        qp->attr.hop_limit = attr->hop_limit;
        qp->attr.traffic_class = attr->traffic_class;
        qp->attr.flow_label = attr->flow_label;
        qp->attr.udp_sport = attr->udp_sport;
        memcpy(qp->attr.dgid, attr->dgid, sizeof(qp->attr.dgid));
        memcpy(qp->attr.dmac, attr->dmac, sizeof(qp->attr.dmac));
        qp->attr.dlid = attr->dlid;
        qp->attr.sl = attr->sl;
        qp->attr.src_path_bits = attr->src_path_bits;
        qp->attr.ah_flags = attr->ah_flags;
    }
    /* PATH_MIG_STATE carries no value here: always MIGRATED. */

    /* Built here once, not per packet (vhca_xmit takes it as it is). */
    memcpy(qp->path.dgid, qp->attr.dgid, VHCA_GID_LEN);
    memcpy(qp->path.dmac, qp->attr.dmac, VHCA_ETH_ALEN);
    qp->path.sgid_index = qp->attr.sgid_index;
    qp->path.hop_limit = qp->attr.hop_limit;
    qp->path.traffic_class = qp->attr.traffic_class;
    qp->path.udp_sport = qp->attr.udp_sport;
    qp->path.flow_label = qp->attr.flow_label;
    qp->path.dest_qpn = qp->attr.dest_qp_num;
    qp->path.pkey_index = qp->attr.pkey_index;
    qp->path.dlid = qp->attr.dlid;
    qp->path.sl = qp->attr.sl;
    qp->path.src_path_bits = qp->attr.src_path_bits;
    qp->path.grh = !!(qp->attr.ah_flags & VHCA_AH_GRH);
}

/* What entering @next does beyond changing the state (IBTA 10.3.1). */
static void vhca_qp_enter(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                          uint8_t next, const struct vhca_qp_attr *attr)
{
    uint8_t prev = qp->state;

    if (prev != next) {
        VHCA_HOOK(core, qp_state, qpn, qp->type, prev, next,
                  VHCA_QP_CHANGE_COMMAND);
    }
    qp->state = next;
    if (next == VHCA_QPS_RESET || next == VHCA_QPS_RTS) {
        /* Out of ERR or SQE: the old failure no longer applies. */
        memset(&qp->err, 0, sizeof(qp->err));
    }
    switch (next) {
    case VHCA_QPS_RESET:
        /* Both rings empty; the provider restarts its indices at 0. */
        qp->sq.pi = qp->sq.ci = 0;
        qp->rq.pi = qp->rq.ci = 0;
        memset(&qp->attr, 0, sizeof(qp->attr));
        memset(&qp->path, 0, sizeof(qp->path));
        vhca_qp_transport_reset(core, qpn, qp);
        vhca_cc_qp_init(core, qp);
        break;
    case VHCA_QPS_ERR:
        if (prev != VHCA_QPS_ERR) {
            vhca_qp_set_error(core, qpn, qp);
        }
        break;
    case VHCA_QPS_SQD:
        /*
         * IBTA 10.3.1.4: SQ Drained once the WQEs in flight complete -
         * at once if none are.
         */
        if (prev == VHCA_QPS_RTS && (attr->attr_mask &
                                     VHCA_QP_EN_SQD_ASYNC_NOTIFY) &&
            attr->en_sqd_async_notify) {
            qp->req.sqd_notify = true;
            vhca_req_sqd_check(core, qpn, qp);
        }
        break;
    }
    vhca_qp_transport_enter(core, qpn, qp, prev, next);
}

static uint8_t vhca_qp_check_transition(VhcaCore *core, VhcaCmdCtx *ctx,
                                        const VhcaQp *qp,
                                        const struct vhca_qp_attr *attr,
                                        uint8_t next)
{
    uint32_t bad;

    /*
     * IBTA 7.2: a port that is not ACTIVE sends no data packets, so a
     * connection cannot be made over it.  The datagram QPs may go to RTR
     * before: the kernel's MAD layer readies QP0 and QP1 at boot, and
     * the port is DOWN then.
     */
    if (core->cfg.link == VHCA_LINK_IB && next == VHCA_QPS_RTR &&
        qp->state != VHCA_QPS_RTR && !vhca_qp_is_datagram(qp) &&
        core->ib.state != VHCA_PORT_ACTIVE) {
        ctx->syndrome = core->ib.state;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_STATE,
                             "QP %u: cannot go to RTR while the port is "
                             "not ACTIVE (state %u); start a subnet manager",
                             attr->qpn, core->ib.state);
    }
    switch (vhca_qp_modify_is_ok(qp->type, qp->state, next,
                                 attr->attr_mask, &bad)) {
    case VHCA_QP_MODIFY_OK:
        return VHCA_ST_OK;
    case VHCA_QP_MODIFY_BAD_TRANSITION:
        ctx->syndrome = bad;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_STATE,
                             "QP %u: no transition from %s to %s",
                             attr->qpn, vhca_qp_state_name(qp->state),
                             vhca_qp_state_name(next));
    case VHCA_QP_MODIFY_MISSING_ATTR:
        ctx->syndrome = bad;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: %s to %s needs attributes 0x%x",
                             attr->qpn, vhca_qp_state_name(qp->state),
                             vhca_qp_state_name(next), bad);
    default:
        ctx->syndrome = bad;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: %s to %s does not allow attributes "
                             "0x%x", attr->qpn,
                             vhca_qp_state_name(qp->state),
                             vhca_qp_state_name(next), bad);
    }
}

uint8_t vhca_cmd_modify_qp(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_qp_attr)];
    struct vhca_qp_attr attr;
    uint8_t status, next;
    VhcaQp *qp;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_qp_attr_from_le(&attr, raw);
    qp = vhca_qp_lookup(core, attr.qpn);
    if (!qp) {
        ctx->syndrome = attr.qpn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "QP %u does not exist", attr.qpn);
    }
    next = (attr.attr_mask & VHCA_QP_STATE) ? attr.qp_state : qp->state;
    if (next > VHCA_QPS_ERR) {
        ctx->syndrome = next;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: no state %u", attr.qpn, next);
    }
    /* Before the checks: a send error met while draining moves to SQE. */
    if (next != qp->state) {
        vhca_qp_drain_unreliable(core, attr.qpn, qp);
    }
    status = vhca_qp_check_transition(core, ctx, qp, &attr, next);
    if (status == VHCA_ST_OK) {
        status = vhca_qp_check_values(core, ctx, qp, &attr);
    }
    if (status != VHCA_ST_OK) {
        return status;
    }

    vhca_qp_apply(qp, &attr);
    vhca_qp_enter(core, attr.qpn, qp, next, &attr);
    vhca_cq_errors_settle(core);
    return VHCA_ST_OK;
}
