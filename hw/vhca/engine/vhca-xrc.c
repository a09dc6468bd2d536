/*
 * vhca engine: XRC domains - ALLOC_XRCD / DEALLOC_XRCD - and the rule by
 * which an XRC target QP finds the XRC SRQ a request names
 * (docs/specs/vhca.rst, "XRC"; IBTA Vol 1 annex A14).
 *
 * The initiator and the target are the RC requester and responder
 * (vhca-req.c, vhca-resp.c); what XRC adds to them on the wire is the
 * XRCETH and the XRC opcodes (vhca-wire.c).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

bool vhca_xrcd_exists(const VhcaCore *core, uint32_t xrcdn)
{
    return vhca_ids_used(&core->xrcd_ids, xrcdn);
}

uint8_t vhca_cmd_alloc_xrcd(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t xrcdn;

    /*
     * Running out is not a guest mistake: no guest error report.  A
     * device without SRQs has no XRC (QUERY_DEVICE max_xrcd 0).
     */
    if (!core->cfg.max_srq) {
        return VHCA_ST_NO_RESOURCES;
    }
    xrcdn = vhca_ids_alloc(&core->xrcd_ids);
    if (!xrcdn) {
        return VHCA_ST_NO_RESOURCES;
    }
    core->xrcd_users[xrcdn] = 0;
    vhca_cmd_set_handle_out(ctx, xrcdn, 0);
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_dealloc_xrcd(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t xrcdn = vhca_cmd_handle_in(ctx);

    ctx->syndrome = xrcdn;
    if (!vhca_xrcd_exists(core, xrcdn)) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "XRC domain %u does not exist", xrcdn);
    }
    /* Linux's ib_dealloc_xrcd_user() refuses it while in use too. */
    if (core->xrcd_users[xrcdn]) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "XRC domain %u still has %u XRC SRQs and "
                             "target QPs", xrcdn, core->xrcd_users[xrcdn]);
    }
    vhca_ids_free(&core->xrcd_ids, xrcdn);
    ctx->syndrome = 0;
    return VHCA_ST_OK;
}

void vhca_xrcd_reset(VhcaCore *core)
{
    memset(core->xrcd_users, 0, sizeof(core->xrcd_users));
    vhca_ids_clear(&core->xrcd_ids);
}

VhcaSrq *vhca_xrc_request_srq(VhcaCore *core, const VhcaQp *qp,
                              uint32_t srqn)
{
    VhcaSrq *srq = vhca_srq_lookup(core, srqn);

    /*
     * Annex A14: the XRCSRQ must be an XRC SRQ of the target QP's own
     * XRC domain; the domain is what keeps one job's SRQs from another's.
     */
    if (!srq || srq->type != VHCA_SRQT_XRC || srq->xrcdn != qp->xrcdn) {
        return NULL;
    }
    return srq;
}

void vhca_xrc_srq_gone(VhcaCore *core, uint32_t srqn)
{
    uint32_t qpn;

    for (qpn = vhca_ids_next(&core->qp_ids, 0); qpn;
         qpn = vhca_ids_next(&core->qp_ids, qpn + 1)) {
        VhcaQp *qp = &core->qps[qpn];

        if (qp->type == VHCA_QPT_XRC_TGT && qp->resp.rwqe_held &&
            qp->resp.rwqe_srqn == srqn) {
            qp->resp.rwqe_held = false;
            qp->resp.cur = VHCA_RESP_NONE;
            qp->resp.xrc_srqn = 0;
        }
    }
}
