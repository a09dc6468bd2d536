/*
 * vhca engine: a QP's work queues and its error states - reading a WQE,
 * completing outstanding WQEs with WR_FLUSH_ERR, and the moves to SQE and
 * ERR the transport makes (IBTA 10.3.1, 11.4.3), or a CQ's error forces
 * (QP_FATAL).  The MODIFY_QP transitions are in vhca-qp.c.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>

#include "vhca-transport.h"

int vhca_wq_fetch(VhcaCore *core, const VhcaWq *wq, uint32_t index,
                  void *buf, size_t len)
{
    if (len > wq->stride) {
        return -1;
    }
    return vhca_dma_read(core, vhca_queue_addr(wq->pages, wq->log_size,
                                               index, wq->stride),
                         buf, len);
}

/* The completion opcode of a send WQE opcode (enum ibv_wc_opcode). */
uint8_t vhca_send_wc_opcode(uint8_t wr_opcode)
{
    static const struct {
        bool valid;
        uint8_t wc;
    } map[] = {
        [VHCA_WR_RDMA_WRITE] = { true, VHCA_WC_RDMA_WRITE },
        [VHCA_WR_RDMA_WRITE_WITH_IMM] = { true, VHCA_WC_RDMA_WRITE },
        [VHCA_WR_SEND] = { true, VHCA_WC_SEND },
        [VHCA_WR_SEND_WITH_IMM] = { true, VHCA_WC_SEND },
        [VHCA_WR_RDMA_READ] = { true, VHCA_WC_RDMA_READ },
        [VHCA_WR_ATOMIC_CMP_AND_SWP] = { true, VHCA_WC_COMP_SWAP },
        [VHCA_WR_ATOMIC_FETCH_AND_ADD] = { true, VHCA_WC_FETCH_ADD },
        [VHCA_WR_SEND_WITH_INV] = { true, VHCA_WC_SEND },
        [VHCA_WR_FLUSH] = { true, VHCA_WC_FLUSH },
        [VHCA_WR_ATOMIC_WRITE] = { true, VHCA_WC_ATOMIC_WRITE },
        [VHCA_WR_LOCAL_INV] = { true, VHCA_WC_LOCAL_INV },
        [VHCA_WR_REG_MR] = { true, VHCA_WC_REG_MR },
        [VHCA_WR_BIND_MW] = { true, VHCA_WC_BIND_MW },
    };

    if (wr_opcode < sizeof(map) / sizeof(map[0]) && map[wr_opcode].valid) {
        return map[wr_opcode].wc;
    }
    /* An unknown opcode still completes: as a send, like rxe does. */
    return VHCA_WC_SEND;
}

/*
 * IBTA 10.8.3.3 / 11.4.3: in the error state every outstanding WQE
 * completes, in order, with WR_FLUSH_ERR - signaled or not.
 */
void vhca_qp_flush_wq(VhcaCore *core, uint32_t qpn, VhcaWq *wq,
                      uint32_t cqn, bool is_sq)
{
    while (wq->ci != wq->pi) {
        VhcaCompletion wc = {
            .qpn = qpn,
            .status = VHCA_WC_WR_FLUSH_ERR,
            .opcode = VHCA_WC_RECV,
        };
        uint8_t hdr[16];

        if (core->cqs[cqn].error) {
            /* Nowhere to report them: the QP's CQ is in error. */
            wq->ci = wq->pi;
            return;
        }
        if (vhca_wq_fetch(core, wq, wq->ci, hdr, sizeof(hdr))) {
            VHCA_HOOK(core, err_wqe, qpn, is_sq ? VHCA_RING_SQ : VHCA_RING_RQ,
                      wq->ci, wc.opcode, wc.status, VHCA_VENDOR_ERR_WQE_DMA);
            vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                             "QP %u: cannot read %s WQE %u to flush it",
                             qpn, is_sq ? "send" : "receive", wq->ci);
            wc.vendor_err = VHCA_VENDOR_ERR_WQE_DMA;
        } else {
            wc.wr_id = vhca_ld_le64(hdr + offsetof(struct vhca_send_wqe,
                                                   wr_id));
            if (is_sq) {
                wc.opcode = vhca_send_wc_opcode(
                    hdr[offsetof(struct vhca_send_wqe, opcode)]);
            }
        }
        wq->ci++;
        vhca_cq_post(core, cqn, &wc);
    }
}

/*
 * The receive WQE a QP took from its SRQ for a message in progress is the
 * QP's own work: it is flushed with the QP's, while the WQEs still in the
 * SRQ stay there for the other QPs (IBTA 10.3.1, 11.2.3).
 */
static void vhca_qp_flush_srq_held(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaCompletion wc = {
        .qpn = qpn,
        .wr_id = qp->resp.rwqe_wr_id,
        .status = VHCA_WC_WR_FLUSH_ERR,
        .opcode = VHCA_WC_RECV,
    };

    if (!vhca_qp_on_srq(qp) || !qp->resp.rwqe_held) {
        return;
    }
    qp->resp.rwqe_held = false;
    vhca_cq_post(core, vhca_resp_recv_cqn(core, qp), &wc);
}

static void vhca_qp_flush(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    vhca_qp_flush_wq(core, qpn, &qp->sq, qp->send_cqn, true);
    vhca_qp_flush_wq(core, qpn, &qp->rq, qp->recv_cqn, false);
}

static bool vhca_qp_error_known(const VhcaQp *qp)
{
    return qp->err.status != VHCA_WC_SUCCESS || qp->err.fatal;
}

void vhca_qp_note_error(VhcaQp *qp, uint8_t status, uint32_t vendor_err)
{
    /* The first failure is the cause; flushes and later ones follow it. */
    if (!vhca_qp_error_known(qp)) {
        qp->err.status = status;
        qp->err.vendor_err = vendor_err;
    }
}

void vhca_qp_set_error(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    if (qp->state != VHCA_QPS_ERR) {
        VHCA_HOOK(core, qp_state, qpn, qp->type, qp->state, VHCA_QPS_ERR,
                  VHCA_QP_CHANGE_ERROR);
    }
    qp->state = VHCA_QPS_ERR;
    /* Before the transport forgets which WQE it held. */
    vhca_qp_flush_srq_held(core, qpn, qp);
    vhca_qp_transport_reset(core, qpn, qp);
    vhca_qp_flush(core, qpn, qp);
    if (qp->srqn) {
        vhca_srq_qp_error(core, qpn);
    }
}

void vhca_qp_set_sq_error(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    if (qp->state != VHCA_QPS_SQE) {
        VHCA_HOOK(core, qp_state, qpn, qp->type, qp->state, VHCA_QPS_SQE,
                  VHCA_QP_CHANGE_ERROR);
    }
    qp->state = VHCA_QPS_SQE;
    vhca_qp_flush_wq(core, qpn, &qp->sq, qp->send_cqn, true);
    /* Nothing in flight: SQE -> RTS starts again at the next WQE. */
    qp->req.fetched = qp->req.cur = qp->sq.ci;
    qp->req.cur_pkt = 0;
}

void vhca_qp_fatal(VhcaCore *core, uint32_t qpn)
{
    VhcaQp *qp = vhca_qp_lookup(core, qpn);

    if (!qp || qp->state == VHCA_QPS_ERR) {
        return;
    }
    if (!vhca_qp_error_known(qp)) {
        qp->err.fatal = true;
    }
    vhca_aeq_post(core, VHCA_EQE_QP_EVENT, VHCA_EVENT_QP_FATAL, qpn, 0);
    VHCA_HOOK(core, qp_state, qpn, qp->type, qp->state, VHCA_QPS_ERR,
              VHCA_QP_CHANGE_FATAL);
    /* Already ERR: vhca_qp_set_error() does not report it again. */
    qp->state = VHCA_QPS_ERR;
    vhca_qp_set_error(core, qpn, qp);
}
