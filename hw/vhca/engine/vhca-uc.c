/*
 * vhca engine: the UC responder (IBTA Vol 1 9.8.3 "UC responder", 9.9.4
 * "Unreliable service error behavior"): SENDs into receive WQEs and RDMA
 * WRITEs into memory regions, with no acknowledgement of any kind.
 *
 * The rules, which are also Linux rxe's (rxe_resp.c, check_psn() and
 * the class E errors of its state machine):
 *  - PSN: a packet with the expected PSN is taken.  A gap (lost packets)
 *    or a packet out of the FIRST [MIDDLE...] LAST sequence drops the
 *    message in progress: its receive WQE is not completed and takes the
 *    next message (the QP holds it, from its RQ or its SRQ), bytes a
 *    WRITE already placed stay where they are.
 *    The responder then discards packets until the next FIRST or ONLY,
 *    whose PSN it takes as the expected one.
 *  - A message that cannot be executed (R_Key, bounds, access rights,
 *    lengths that do not add up) is dropped the same way, silently.
 *  - No receive WQE for a SEND's FIRST/ONLY or a WRITE with immediate's
 *    LAST: the message is dropped (UC has no RNR NAK).
 *  - A SEND longer than its receive buffer, or a receive WQE that cannot
 *    be read or written: the WQE completes in error, the QP goes to ERR
 *    (a receive completion error, 10.3.1, as for RC).
 * Counters: UC_MSGS_DROPPED per dropped message, DROP_UC_MSG and
 * DROP_NO_RWQE per packet not executed (and ROCE_RX_DROPPED).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vhca-transport.h"

/* Drop the message of this packet and what follows until FIRST/ONLY. */
static void vhca_uc_drop_msg(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    vhca_count(core, VHCA_CNT_UC_MSGS_DROPPED, 1);
    vhca_rx_drop(core, VHCA_DROP_UC_MSG, qpn);
    qp->resp.cur = VHCA_RESP_NONE;
    qp->resp.uc_drop = true;
}

static void vhca_uc_no_rwqe(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    vhca_rx_drop(core, VHCA_DROP_NO_RWQE, qpn);
    qp->resp.cur = VHCA_RESP_NONE;
    qp->resp.uc_drop = true;
}

static void vhca_uc_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                         const VhcaWirePacket *pkt, uint8_t op, bool first,
                         bool last)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t vendor_err = 0;
    uint8_t status;

    if (first) {
        /* A WQE held from a message cut short takes this one. */
        VhcaRqTake took = vhca_rq_take(core, qp, &status, &vendor_err);

        if (took == VHCA_RQ_EMPTY) {
            vhca_uc_no_rwqe(core, qpn, qp);
            return;
        }
        resp->cur = VHCA_RESP_SEND;
        resp->cur_len = 0;
        if (took == VHCA_RQ_BAD) {
            vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV,
                                status, vendor_err);
            return;
        }
    }
    if ((uint64_t)resp->cur_len + pkt->payload_len > resp->rwqe_cap) {
        vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV,
                            VHCA_WC_LOC_LEN_ERR, 0);
        return;
    }
    status = vhca_resp_scatter(core, qp, resp->cur_len, pkt->payload,
                               pkt->payload_len);
    if (status != VHCA_WC_SUCCESS) {
        vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV, status, 0);
        return;
    }
    resp->cur_len += pkt->payload_len;
    if (last) {
        vhca_resp_complete_send(core, qpn, qp, pkt, op);
    }
}

static void vhca_uc_write(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                          const VhcaWirePacket *pkt, uint8_t op, bool first,
                          bool last)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t plen = pkt->payload_len;

    /* No NAKs on UC: whatever the check finds, the message is dropped. */
    if (vhca_resp_check_write(core, qpn, qp, pkt, first, last) !=
        VHCA_WRITE_OK) {
        vhca_uc_drop_msg(core, qpn, qp);
        return;
    }
    if (last && vhca_op_has_imm(op)) {
        switch (vhca_resp_take_write_imm(core, qpn, qp)) {
        case VHCA_RQ_EMPTY:
            vhca_uc_no_rwqe(core, qpn, qp);
            return;
        case VHCA_RQ_BAD:
            return;
        case VHCA_RQ_TAKEN:
            break;
        }
    }
    resp->cur = VHCA_RESP_WRITE;
    /* The MR the FIRST packet checked, or nothing (IBTA 10.6.7.2). */
    if (vhca_sg_copy_one(core, VHCA_SG_SCATTER, resp->write_rkey,
                         resp->write_gen, resp->write_va + resp->cur_len,
                         (uint8_t *)pkt->payload, plen, qp->pdn, qpn,
                         VHCA_ACCESS_REMOTE_WRITE) != VHCA_WC_SUCCESS) {
        vhca_uc_drop_msg(core, qpn, qp);
        return;
    }
    resp->cur_len += plen;
    if (!last) {
        return;
    }
    resp->cur = VHCA_RESP_NONE;
    if (vhca_op_has_imm(op)) {
        vhca_resp_complete_write_imm(core, qpn, qp, pkt, resp->write_len);
    }
}

static void vhca_uc_packet(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                    const VhcaWirePacket *pkt)
{
    VhcaResponder *resp = &qp->resp;
    const VhcaWireOpcodeInfo *info = vhca_wire_opcode_info(pkt->tp.bth.opcode);
    uint8_t op = pkt->tp.bth.opcode & ~VHCA_IB_TRANSPORT_MASK;
    uint32_t psn = pkt->tp.bth.psn;
    bool first = info->flags & VHCA_WIRE_OPF_FIRST;
    bool last = info->flags & VHCA_WIRE_OPF_LAST;
    uint32_t mtu = vhca_qp_mtu(qp);
    bool is_send = op <= VHCA_IB_OP_SEND_ONLY_IMM;
    bool is_write = op >= VHCA_IB_OP_RDMA_WRITE_FIRST &&
                    op <= VHCA_IB_OP_RDMA_WRITE_ONLY_IMM;

    /* IBTA 11.6.3.1: Communication Established, first packet in RTR. */
    if (qp->state == VHCA_QPS_RTR && !resp->comm_est) {
        resp->comm_est = true;
        vhca_qp_event(core, qpn, VHCA_EVENT_COMM_EST);
    }
    /* A gap, or discarding after one: only a FIRST or ONLY resumes. */
    if (resp->uc_drop || psn != resp->epsn) {
        if (!first) {
            if (!resp->uc_drop) {
                vhca_uc_drop_msg(core, qpn, qp);
            } else {
                vhca_rx_drop(core, VHCA_DROP_UC_MSG, qpn);
            }
            return;
        }
        if (resp->cur != VHCA_RESP_NONE) {
            /* Cut by the gap; its receive WQE takes this message. */
            vhca_count(core, VHCA_CNT_UC_MSGS_DROPPED, 1);
            resp->cur = VHCA_RESP_NONE;
        }
        resp->uc_drop = false;
    }
    resp->epsn = vhca_psn_add(psn, 1);

    /* 9.8.3: the opcode sequence, FIRST [MIDDLE...] LAST or ONLY. */
    if (resp->cur != VHCA_RESP_NONE &&
        (first || (resp->cur == VHCA_RESP_SEND && !is_send) ||
         (resp->cur == VHCA_RESP_WRITE && !is_write))) {
        vhca_count(core, VHCA_CNT_UC_MSGS_DROPPED, 1);
        resp->cur = VHCA_RESP_NONE;
    }
    if ((resp->cur == VHCA_RESP_NONE && !first) ||
        (!is_send && !is_write)) {
        vhca_uc_drop_msg(core, qpn, qp);
        return;
    }
    /* FIRST and MIDDLE carry exactly one MTU, LAST at most one. */
    if ((!last && pkt->payload_len != mtu) || pkt->payload_len > mtu ||
        (last && !first && pkt->payload_len == 0)) {
        vhca_uc_drop_msg(core, qpn, qp);
        return;
    }
    if (is_send) {
        vhca_uc_send(core, qpn, qp, pkt, op, first, last);
    } else {
        vhca_uc_write(core, qpn, qp, pkt, op, first, last);
    }
}

bool vhca_uc_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp, unsigned *budget)
{
    bool more = false;
    VhcaRxFrame *f;

    while ((f = vhca_recv_next(core, qpn, qp, budget, &more))) {
        vhca_uc_packet(core, qpn, qp, &f->pkt);
        vhca_rx_frame_free(f);
    }
    return more;
}
