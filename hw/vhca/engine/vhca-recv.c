/*
 * vhca engine: what every receiver shares (RC and XRC responders, UC and
 * UD): taking a receive WQE from the QP's RQ or SRQ, scattering a
 * message into it, completing it, and the checks of an RDMA WRITE that RC
 * and UC share (IBTA 9.7.5.2, 10.2.9, 11.4.1).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-transport.h"

#define RWQE_OFF(f)         offsetof(struct vhca_recv_wqe, f)

uint32_t vhca_resp_recv_cqn(const VhcaCore *core, const VhcaQp *qp)
{
    if (qp->type == VHCA_QPT_XRC_TGT) {
        return core->srqs[qp->resp.rwqe_srqn].cqn;
    }
    return qp->recv_cqn;
}

uint32_t vhca_resp_pdn(const VhcaCore *core, const VhcaQp *qp)
{
    if (qp->type == VHCA_QPT_XRC_TGT) {
        return core->srqs[qp->resp.xrc_srqn].pdn;
    }
    return qp->pdn;
}

/* The SRQ a new message takes its receive WQE from; 0: the QP's RQ. */
static uint32_t vhca_resp_srqn(const VhcaQp *qp)
{
    return qp->type == VHCA_QPT_XRC_TGT ? qp->resp.xrc_srqn : qp->srqn;
}

void vhca_resp_complete_recv(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             const VhcaCompletion *proto)
{
    VhcaCompletion wc = *proto;

    /* An XRC target's completions name it, as ConnectX reports them. */
    wc.qpn = qpn;
    wc.wr_id = qp->resp.rwqe_wr_id;
    vhca_cq_post(core, vhca_resp_recv_cqn(core, qp), &wc);
    /* A WQE taken from an SRQ left it when it was taken. */
    if (!vhca_qp_on_srq(qp)) {
        qp->rq.ci++;
    }
    qp->resp.rwqe_held = false;
    qp->resp.cur = VHCA_RESP_NONE;
}

bool vhca_rq_has_wqe(const VhcaCore *core, const VhcaQp *qp)
{
    if (qp->resp.rwqe_held) {
        return true;
    }
    if (vhca_qp_on_srq(qp)) {
        return vhca_srq_has_wqe(core, vhca_resp_srqn(qp));
    }
    return qp->rq.ci != qp->rq.pi;
}

/* Parse a receive WQE into resp.rwqe_*; a VHCA_WC_* status. */
static uint8_t vhca_resp_parse_rwqe(VhcaResponder *resp, const uint8_t *raw)
{
    unsigned i;

    resp->rwqe_wr_id = vhca_ld_le64(raw + RWQE_OFF(wr_id));
    if (raw[RWQE_OFF(num_sge)] > VHCA_MAX_RECV_SGE) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    resp->rwqe_nsge = raw[RWQE_OFF(num_sge)];
    for (i = 0; i < resp->rwqe_nsge; i++) {
        const uint8_t *sge = raw + RWQE_OFF(sge) + 16 * i;

        resp->rwqe_sge[i].addr = vhca_ld_le64(sge);
        resp->rwqe_sge[i].length = vhca_ld_le32(sge + 8);
        resp->rwqe_sge[i].lkey = vhca_ld_le32(sge + 12);
        resp->rwqe_cap += resp->rwqe_sge[i].length;
    }
    return VHCA_WC_SUCCESS;
}

VhcaRqTake vhca_rq_take(VhcaCore *core, VhcaQp *qp, uint8_t *status,
                        uint32_t *vendor_err)
{
    VhcaResponder *resp = &qp->resp;
    VHCA_UNINITIALIZED uint8_t raw[VHCA_RECV_WQE_SIZE];

    *status = VHCA_WC_SUCCESS;
    *vendor_err = 0;
    /* A message cut short (UC) left its WQE to the next message. */
    if (resp->rwqe_held) {
        return VHCA_RQ_TAKEN;
    }
    if (!vhca_rq_has_wqe(core, qp)) {
        return VHCA_RQ_EMPTY;
    }
    resp->rwqe_wr_id = 0;
    resp->rwqe_nsge = 0;
    resp->rwqe_cap = 0;
    if (vhca_qp_on_srq(qp)) {
        uint32_t srqn = vhca_resp_srqn(qp);

        /* An SRQ whose ring fails gives no more WQEs: as if empty. */
        if (!vhca_srq_take(core, srqn, raw, &resp->rwqe_index)) {
            return VHCA_RQ_EMPTY;
        }
        resp->rwqe_held = true;
        resp->rwqe_srqn = srqn;
        resp->rwqe_pdn = core->srqs[srqn].pdn;
    } else {
        resp->rwqe_held = true;
        resp->rwqe_index = qp->rq.ci;
        resp->rwqe_pdn = qp->pdn;
        if (vhca_wq_fetch(core, &qp->rq, qp->rq.ci, raw, sizeof(raw))) {
            *status = VHCA_WC_LOC_QP_OP_ERR;
            *vendor_err = VHCA_VENDOR_ERR_WQE_DMA;
            return VHCA_RQ_BAD;
        }
    }
    *status = vhca_resp_parse_rwqe(resp, raw);
    return *status == VHCA_WC_SUCCESS ? VHCA_RQ_TAKEN : VHCA_RQ_BAD;
}

uint8_t vhca_resp_scatter(VhcaCore *core, VhcaQp *qp, uint64_t offset,
                          const uint8_t *data, uint32_t len)
{
    VhcaResponder *resp = &qp->resp;

    /* IBTA 10.2.9: an SRQ's WQE is checked in the SRQ's PD. */
    return vhca_sg_copy(core, VHCA_SG_SCATTER, resp->rwqe_sge,
                        resp->rwqe_nsge, offset, (uint8_t *)data, len,
                        resp->rwqe_pdn, VHCA_ACCESS_LOCAL_WRITE);
}

void vhca_resp_fail_rwqe(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                         uint8_t opcode, uint8_t status, uint32_t vendor_err)
{
    VhcaCompletion wc = {
        .status = status,
        .opcode = opcode,
        .vendor_err = vendor_err,
    };

    /* Too short for what the peer sent: not the guest's mistake. */
    if (status != VHCA_WC_LOC_LEN_ERR) {
        VHCA_HOOK(core, err_wqe, qpn, vhca_resp_rwqe_ring(qp),
                  qp->resp.rwqe_index, opcode, status, vendor_err);
        vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                         "QP %u: receive WQE %u%s completes with status %u, "
                         "QP to ERR", qpn, qp->resp.rwqe_index,
                         vhca_qp_on_srq(qp) ? " of its SRQ" : "", status);
    }
    vhca_qp_note_error(qp, status, vendor_err);
    vhca_resp_complete_recv(core, qpn, qp, &wc);
    vhca_qp_set_error(core, qpn, qp);
}

VhcaRqTake vhca_resp_take_write_imm(VhcaCore *core, uint32_t qpn,
                                    VhcaQp *qp)
{
    uint32_t vendor_err;
    uint8_t status;
    VhcaRqTake took = vhca_rq_take(core, qp, &status, &vendor_err);

    /* Only the wr_id matters: the data goes to the MR, not the SGEs. */
    if (took == VHCA_RQ_BAD && !vendor_err) {
        return VHCA_RQ_TAKEN;
    }
    if (took == VHCA_RQ_BAD) {
        vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV_RDMA_WITH_IMM,
                            status, vendor_err);
    }
    return took;
}

void vhca_resp_complete_write_imm(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                  const VhcaWirePacket *pkt,
                                  uint32_t write_len)
{
    VhcaCompletion wc = {
        .byte_len = write_len,
        .status = VHCA_WC_SUCCESS,
        .opcode = VHCA_WC_RECV_RDMA_WITH_IMM,
        .flags = VHCA_CQE_WITH_IMM,
        .imm_or_inv = __builtin_bswap32(pkt->tp.imm_data),
        .solicited = pkt->tp.bth.solicited,
    };

    vhca_resp_complete_recv(core, qpn, qp, &wc);
}

bool vhca_op_has_imm(uint8_t op)
{
    return op == VHCA_IB_OP_SEND_LAST_IMM || op == VHCA_IB_OP_SEND_ONLY_IMM ||
           op == VHCA_IB_OP_RDMA_WRITE_LAST_IMM ||
           op == VHCA_IB_OP_RDMA_WRITE_ONLY_IMM;
}

bool vhca_op_has_inv(uint8_t op)
{
    return op == VHCA_IB_OP_SEND_LAST_INV || op == VHCA_IB_OP_SEND_ONLY_INV;
}

void vhca_resp_complete_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             const VhcaWirePacket *pkt, uint8_t op)
{
    VhcaCompletion wc = {
        .byte_len = qp->resp.cur_len,
        .status = VHCA_WC_SUCCESS,
        .opcode = VHCA_WC_RECV,
        .solicited = pkt->tp.bth.solicited,
    };

    if (vhca_op_has_imm(op)) {
        wc.flags = VHCA_CQE_WITH_IMM;
        wc.imm_or_inv = __builtin_bswap32(pkt->tp.imm_data);
    } else if (vhca_op_has_inv(op)) {
        /* vhca_resp_do_send() invalidated the key. */
        wc.flags = VHCA_CQE_WITH_INV;
        wc.imm_or_inv = pkt->tp.inv_rkey;
    }
    vhca_resp_complete_recv(core, qpn, qp, &wc);
}

VhcaWriteCheck vhca_resp_check_write(VhcaCore *core, uint32_t qpn,
                                     VhcaQp *qp, const VhcaWirePacket *pkt,
                                     bool first, bool last)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t plen = pkt->payload_len;

    if (!(qp->attr.qp_access_flags & VHCA_ACCESS_REMOTE_WRITE)) {
        return VHCA_WRITE_INVALID;
    }
    if (first) {
        const VhcaWireReth *reth = &pkt->tp.reth;

        if (reth->dma_len > VHCA_MAX_MSG_SIZE) {
            return VHCA_WRITE_INVALID;
        }
        /*
         * IBTA C9-88: R_Key and VA are not checked for zero length.  The
         * rest of the message goes to the MR checked here or nowhere.
         */
        resp->write_gen = VHCA_MR_GEN_ANY;
        if (reth->dma_len &&
            vhca_mr_check(core, reth->rkey, vhca_resp_pdn(core, qp), qpn,
                          reth->va, reth->dma_len, VHCA_ACCESS_REMOTE_WRITE,
                          &resp->write_gen) != VHCA_MR_OK) {
            return VHCA_WRITE_ACCESS;
        }
        resp->write_va = reth->va;
        resp->write_rkey = reth->rkey;
        resp->write_len = reth->dma_len;
        resp->cur_len = 0;
    }
    /* IBTA 9.7.5.2: the packets must add up to the RETH DMA length. */
    if ((uint64_t)resp->cur_len + plen > resp->write_len ||
        (last && resp->cur_len + plen != resp->write_len)) {
        return VHCA_WRITE_INVALID;
    }
    return VHCA_WRITE_OK;
}

VhcaRxFrame *vhca_recv_next(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                            unsigned *budget, bool *more)
{
    VhcaRxFrame *f;

    if (!vhca_qp_receives(qp)) {
        while ((f = vhca_frameq_pop(core, &qp->rxq_req))) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpn);
            vhca_rx_frame_free(f);
        }
        return NULL;
    }
    if (!qp->rxq_req.head) {
        return NULL;
    }
    if (!*budget) {
        *more = true;
        return NULL;
    }
    (*budget)--;
    return vhca_frameq_pop(core, &qp->rxq_req);
}
