/*
 * vhca engine: the RC responder (IBTA Vol 1 9.7.5.2 "Responder side",
 * 9.7.4-9.7.7, 9.9.3 "Responder error behavior"): check each request's
 * PSN and place in its message, execute SENDs into receive WQEs, RDMA
 * WRITEs, READs and atomics on memory regions, acknowledge, and replay
 * READ responses and atomic results of duplicate requests from the
 * responder resources.  IBTA 1.5's memory placement extensions, RDMA
 * FLUSH and ATOMIC WRITE, are executed once, answered with an RDMA READ
 * Response Only without data and replayed from the responder resources,
 * as Linux rxe does.
 *
 * Error classes (IBTA 9.9.3.1):
 *  - PSN sequence error (class A): one NAK per episode, no state change;
 *  - duplicate: ACK again, or replay from the responder resources;
 *  - no receive WQE (class B): RNR NAK with the QP's min_rnr_timer;
 *  - invalid request, remote access error (class C): NAK, the receive
 *    WQE in use (if any) completes in error, an affiliated event (Invalid
 *    Request / Local Access Violation Work Queue Error), QP to ERR;
 *  - a local error on the receive WQE (class D: unreadable WQE, its
 *    buffer fails the LOCAL_WRITE check): NAK remote operational error,
 *    the receive WQE completes with LOC_QP_OP_ERR / LOC_PROT_ERR, QP to
 *    ERR.  As in Linux rxe, RDMA WRITE, READ and atomics to a QP whose
 *    access flags do not enable them are invalid requests.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-transport.h"

/* ---------------------------------------------------------------------- */
/* Responses                                                              */
/* ---------------------------------------------------------------------- */

/*
 * AETH syndrome of a positive ACK: credits from the posted RQ WQEs; a QP
 * that receives from an SRQ has no credits of its own to count and sends
 * the "invalid" code 11111b (IBTA 9.7.7.2.4, 10.2.9), so the requester
 * does not limit itself by them.
 */
static uint8_t vhca_resp_ack_syndrome(const VhcaQp *qp)
{
    if (vhca_qp_on_srq(qp)) {
        return vhca_aeth_ack(VHCA_IB_CREDIT_CODE_INVALID);
    }
    return vhca_aeth_ack(vhca_aeth_credit_code(qp->rq.pi - qp->rq.ci));
}

static void vhca_resp_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                           VhcaWirePacket *pkt)
{
    VhcaResponder *resp = &qp->resp;

    /* A response for a later PSN acknowledges the earlier ones too. */
    if (resp->ack_pending &&
        !vhca_psn_before(pkt->tp.bth.psn, resp->ack_psn)) {
        resp->ack_pending = false;
    }
    pkt->tp.aeth.msn = resp->msn & VHCA_MSN_MASK;
    pkt->tp.bth.opcode = vhca_qp_wire_opcode(qp, pkt->tp.bth.opcode);
    vhca_xmit(core, qpn, &qp->path, pkt);
}

/* A NAK (or RNR NAK) goes out: its counter and trace event. */
static void vhca_resp_nak_sent(VhcaCore *core, uint32_t qpn, uint32_t psn,
                               uint8_t syndrome)
{
    static const uint8_t nak_counters[] = {
        [VHCA_IB_NAK_PSN_SEQ_ERROR] = VHCA_CNT_SEQ_NAK_SENT,
        [VHCA_IB_NAK_INVALID_REQUEST] = VHCA_CNT_INV_REQ_NAK_SENT,
        [VHCA_IB_NAK_REMOTE_ACCESS] = VHCA_CNT_REM_ACCESS_NAK_SENT,
        [VHCA_IB_NAK_REMOTE_OP] = VHCA_CNT_REM_OP_NAK_SENT,
    };
    uint8_t code = syndrome & VHCA_IB_AETH_VALUE_MASK;

    switch (syndrome & VHCA_IB_AETH_KIND_MASK) {
    case VHCA_IB_AETH_KIND_RNR_NAK:
        vhca_count(core, VHCA_CNT_RNR_NAK_SENT, 1);
        VHCA_HOOK(core, nak_sent, qpn, psn, VHCA_NAK_KIND_RNR, code);
        break;
    case VHCA_IB_AETH_KIND_NAK:
        if (code < sizeof(nak_counters)) {
            vhca_count(core, nak_counters[code], 1);
        }
        VHCA_HOOK(core, nak_sent, qpn, psn, VHCA_NAK_KIND_NAK, code);
        break;
    }
}

static void vhca_resp_ack(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                          uint32_t psn, uint8_t syndrome)
{
    VhcaWirePacket pkt;

    vhca_resp_nak_sent(core, qpn, psn, syndrome);

    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, ACKNOWLEDGE);
    pkt.tp.bth.psn = psn;
    pkt.tp.aeth.syndrome = syndrome;
    vhca_resp_send(core, qpn, qp, &pkt);
}

static void vhca_resp_atomic_ack(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                 uint32_t psn, uint64_t orig)
{
    VhcaWirePacket pkt;

    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, ATOMIC_ACKNOWLEDGE);
    pkt.tp.bth.psn = psn;
    pkt.tp.aeth.syndrome = vhca_resp_ack_syndrome(qp);
    pkt.tp.atomic_orig = orig;
    vhca_resp_send(core, qpn, qp, &pkt);
}

/*
 * IBTA 1.5 memory placement extensions: FLUSH and ATOMIC WRITE are
 * acknowledged by an RDMA READ Response Only without data (rxe's
 * send_read_response_ack()), so that the requester waits for it as for
 * a READ.
 */
static void vhca_resp_placement_ack(VhcaCore *core, uint32_t qpn,
                                    VhcaQp *qp, uint32_t psn)
{
    VhcaWirePacket pkt;

    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, RDMA_READ_RESPONSE_ONLY);
    pkt.tp.bth.psn = psn;
    pkt.tp.aeth.syndrome = vhca_resp_ack_syndrome(qp);
    vhca_resp_send(core, qpn, qp, &pkt);
}

/* ---------------------------------------------------------------------- */
/* Errors                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * Class C and D errors: NAK @code for @psn, complete the receive WQE in
 * use with @status, post @event when no completion reports the error,
 * and move the QP to ERR (IBTA 9.9.3.1.3, 9.9.3.1.4).  Class C is the
 * peer's doing (traced: NAK, QP state, CQE), class D the guest's: its
 * receive WQE could not be read or written.
 */
static void vhca_resp_fatal(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                            uint32_t psn, uint8_t code, uint8_t status,
                            uint8_t event, uint32_t vendor_err)
{
    if (code == VHCA_IB_NAK_REMOTE_OP) {
        VHCA_HOOK(core, err_wqe, qpn, vhca_resp_rwqe_ring(qp),
                  qp->resp.rwqe_index, VHCA_WC_RECV, status, vendor_err);
        vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                         "QP %u: receive WQE %u%s completes with status %u, "
                         "QP to ERR (NAK remote operational error for PSN "
                         "0x%x)", qpn, qp->resp.rwqe_index,
                         vhca_qp_on_srq(qp) ? " of its SRQ" : "", status,
                         psn);
    }
    vhca_qp_note_error(qp, status, vendor_err);
    vhca_resp_ack(core, qpn, qp, psn, vhca_aeth_nak(code));
    if (qp->resp.cur == VHCA_RESP_SEND) {
        VhcaCompletion wc = {
            .status = status,
            .opcode = VHCA_WC_RECV,
            .vendor_err = vendor_err,
        };

        vhca_resp_complete_recv(core, qpn, qp, &wc);
    } else if (event) {
        vhca_qp_event(core, qpn, event);
    }
    vhca_qp_set_error(core, qpn, qp);
}

static void vhca_resp_invalid(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                              uint32_t psn)
{
    vhca_resp_fatal(core, qpn, qp, psn, VHCA_IB_NAK_INVALID_REQUEST,
                    VHCA_WC_REM_INV_REQ_ERR, VHCA_EVENT_QP_REQ_ERR, 0);
}

static void vhca_resp_access(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             uint32_t psn)
{
    vhca_resp_fatal(core, qpn, qp, psn, VHCA_IB_NAK_REMOTE_ACCESS,
                    VHCA_WC_REM_ACCESS_ERR, VHCA_EVENT_QP_ACCESS_ERR, 0);
}

/* IBTA 9.7.5.2.8: no receive WQE: RNR NAK, the requester resends later. */
static void vhca_resp_rnr(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                          uint32_t psn)
{
    vhca_resp_ack(core, qpn, qp, psn,
                  vhca_aeth_rnr_nak(qp->attr.min_rnr_timer));
    /* What follows the NAK'd packet is dropped, not NAK'd again. */
    qp->resp.nak_sent = true;
}

/* ---------------------------------------------------------------------- */
/* Operations                                                             */
/* ---------------------------------------------------------------------- */

static void vhca_resp_do_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                              const VhcaWirePacket *pkt, uint8_t op,
                              bool first, bool last)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t psn = pkt->tp.bth.psn;
    uint32_t vendor_err = 0;
    uint8_t status;

    if (first) {
        VhcaRqTake took = vhca_rq_take(core, qp, &status, &vendor_err);

        if (took == VHCA_RQ_EMPTY) {
            vhca_resp_rnr(core, qpn, qp, psn);
            return;
        }
        resp->cur = VHCA_RESP_SEND;
        resp->cur_len = 0;
        if (took == VHCA_RQ_BAD) {
            vhca_resp_fatal(core, qpn, qp, psn, VHCA_IB_NAK_REMOTE_OP,
                            status, 0, vendor_err);
            return;
        }
    }
    /* A message longer than the receive buffer (IBTA 9.9.3.1.3). */
    if ((uint64_t)resp->cur_len + pkt->payload_len > resp->rwqe_cap) {
        vhca_resp_fatal(core, qpn, qp, psn, VHCA_IB_NAK_INVALID_REQUEST,
                        VHCA_WC_LOC_LEN_ERR, 0, 0);
        return;
    }
    status = vhca_resp_scatter(core, qp, resp->cur_len, pkt->payload,
                               pkt->payload_len);
    if (status != VHCA_WC_SUCCESS) {
        vhca_resp_fatal(core, qpn, qp, psn, VHCA_IB_NAK_REMOTE_OP, status,
                        0, 0);
        return;
    }
    resp->cur_len += pkt->payload_len;
    /*
     * IBTA 9.4.1.1, 10.6.5, 10.6.7.2.2: a SEND with Invalidate frees the
     * fast-register MR or type 2 window its key names once the message is
     * placed.  A key that cannot be
     * invalidated is the peer's invalid request (rxe's class J): traced
     * and counted as the NAK it earns, like every class C error.
     *
     * The key is an R_Key, checked in the PD an RDMA WRITE's would be,
     * vhca_resp_pdn(): for RC the QP's own, on an SRQ or not (the SRQ's
     * PD checks the L_Keys of its WQEs, 10.2.9); for an XRC target, which
     * has no PD (qp->pdn is 0), that of the XRC SRQ the request names
     * (annex A14).  On this, the last packet, that is the SRQ the first
     * packet named: vhca_resp_xrc_check() refused any other.
     */
    if (last && vhca_op_has_inv(op) &&
        !vhca_mr_remote_invalidate(core, qpn, vhca_resp_pdn(core, qp),
                                   pkt->tp.inv_rkey)) {
        vhca_resp_fatal(core, qpn, qp, psn, VHCA_IB_NAK_INVALID_REQUEST,
                        VHCA_WC_REM_INV_REQ_ERR, 0, 0);
        return;
    }
    if (last) {
        resp->msn++;
        vhca_resp_complete_send(core, qpn, qp, pkt, op);
    }
    resp->epsn = vhca_psn_add(psn, 1);
}

static void vhca_resp_do_write(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                               const VhcaWirePacket *pkt, uint8_t op,
                               bool first, bool last)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t psn = pkt->tp.bth.psn;
    uint32_t plen = pkt->payload_len;

    switch (vhca_resp_check_write(core, qpn, qp, pkt, first, last)) {
    case VHCA_WRITE_INVALID:
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    case VHCA_WRITE_ACCESS:
        vhca_resp_access(core, qpn, qp, psn);
        return;
    case VHCA_WRITE_OK:
        break;
    }
    /*
     * WRITE with immediate takes a receive WQE (IBTA 9.4.3): before its
     * last data is placed, so that without one the packet is RNR NAK'd
     * and comes again.
     */
    if (last && vhca_op_has_imm(op)) {
        switch (vhca_resp_take_write_imm(core, qpn, qp)) {
        case VHCA_RQ_EMPTY:
            if (first) {
                resp->cur = VHCA_RESP_NONE;
            }
            vhca_resp_rnr(core, qpn, qp, psn);
            return;
        case VHCA_RQ_BAD:
            return;
        case VHCA_RQ_TAKEN:
            break;
        }
    }
    resp->cur = VHCA_RESP_WRITE;
    /*
     * Every packet is checked again, pinned to the MR the FIRST packet
     * checked: the MR went away under the WRITE, perhaps replaced by
     * another under the same key (IBTA 10.6.7.2, 9.7.5.2.4).
     */
    if (vhca_sg_copy_one(core, VHCA_SG_SCATTER, resp->write_rkey,
                         resp->write_gen, resp->write_va + resp->cur_len,
                         (uint8_t *)pkt->payload, plen,
                         vhca_resp_pdn(core, qp), qpn,
                         VHCA_ACCESS_REMOTE_WRITE) != VHCA_WC_SUCCESS) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    resp->cur_len += plen;
    if (last) {
        resp->msn++;
        resp->cur = VHCA_RESP_NONE;
        if (vhca_op_has_imm(op)) {
            vhca_resp_complete_write_imm(core, qpn, qp, pkt,
                                         resp->write_len);
        }
    }
    resp->epsn = vhca_psn_add(psn, 1);
}

/* The responder resource a new READ or atomic takes: oldest first. */
static VhcaRdRes *vhca_resp_res_alloc(VhcaQp *qp)
{
    VhcaResponder *resp = &qp->resp;
    VhcaRdRes *res = &resp->res[resp->res_next % qp->attr.max_dest_rd_atomic];

    resp->res_next = (resp->res_next + 1) % qp->attr.max_dest_rd_atomic;
    return res;
}

static void vhca_resp_read_start(VhcaQp *qp, uint64_t va, uint32_t rkey,
                                 uint64_t gen, uint32_t pdn, uint32_t len,
                                 uint32_t psn)
{
    VhcaResponder *resp = &qp->resp;

    resp->read_active = true;
    resp->read_pdn = pdn;
    resp->read_va = va;
    resp->read_rkey = rkey;
    resp->read_gen = gen;
    resp->read_len = len;
    resp->read_psn = psn;
    resp->read_idx = 0;
}

static void vhca_resp_do_read(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                              const VhcaWirePacket *pkt)
{
    const VhcaWireReth *reth = &pkt->tp.reth;
    uint32_t pdn = vhca_resp_pdn(core, qp);
    uint32_t psn = pkt->tp.bth.psn;
    uint64_t gen = VHCA_MR_GEN_ANY;
    VhcaRdRes *res;
    uint32_t npkts;

    /* Not enabled on this QP, or no responder resources (9.7.5.2). */
    if (!(qp->attr.qp_access_flags & VHCA_ACCESS_REMOTE_READ) ||
        !qp->attr.max_dest_rd_atomic || reth->dma_len > VHCA_MAX_MSG_SIZE) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    if (reth->dma_len &&
        vhca_mr_check(core, reth->rkey, pdn, qpn, reth->va, reth->dma_len,
                      VHCA_ACCESS_REMOTE_READ, &gen) != VHCA_MR_OK) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    npkts = vhca_wire_packet_count(reth->dma_len, qp->attr.path_mtu);
    res = vhca_resp_res_alloc(qp);
    res->kind = VHCA_RES_READ;
    res->first_psn = psn;
    res->last_psn = vhca_psn_add(psn, npkts - 1);
    res->va = reth->va;
    res->rkey = reth->rkey;
    res->gen = gen;
    res->pdn = pdn;
    res->len = reth->dma_len;
    vhca_resp_read_start(qp, reth->va, reth->rkey, gen, pdn, reth->dma_len,
                         psn);
    /* IBTA 9.4.4: a READ request takes one PSN per response packet. */
    qp->resp.epsn = vhca_psn_add(psn, npkts);
    qp->resp.msn++;
}

static void vhca_resp_do_atomic(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                const VhcaWirePacket *pkt, uint8_t op)
{
    const VhcaWireAtomicEth *at = &pkt->tp.atomic;
    uint32_t pdn = vhca_resp_pdn(core, qp);
    uint32_t psn = pkt->tp.bth.psn;
    uint8_t raw[8];
    uint64_t orig, result;
    VhcaRdRes *res;

    /* IBTA 9.4.5: misaligned atomics are invalid requests. */
    if (!(qp->attr.qp_access_flags & VHCA_ACCESS_REMOTE_ATOMIC) ||
        !qp->attr.max_dest_rd_atomic || (at->va & 7)) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    if (vhca_sg_copy_one(core, VHCA_SG_GATHER, at->rkey, VHCA_MR_GEN_ANY,
                         at->va, raw, 8, pdn, qpn,
                         VHCA_ACCESS_REMOTE_ATOMIC) !=
        VHCA_WC_SUCCESS) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    /*
     * Guest memory is little-endian.  The read-modify-write is atomic
     * with respect to everything the device does (it runs under one
     * lock), not to guest CPUs: IBV_ATOMIC_HCA.
     */
    orig = vhca_ld_le64(raw);
    if (op == VHCA_IB_OP_COMPARE_SWAP) {
        result = orig == at->compare ? at->swap_add : orig;
    } else {
        result = orig + at->swap_add;
    }
    vhca_st_le64(raw, result);
    if (vhca_sg_copy_one(core, VHCA_SG_SCATTER, at->rkey, VHCA_MR_GEN_ANY,
                         at->va, raw, 8, pdn, qpn,
                         VHCA_ACCESS_REMOTE_ATOMIC) !=
        VHCA_WC_SUCCESS) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    res = vhca_resp_res_alloc(qp);
    res->kind = VHCA_RES_ATOMIC;
    res->first_psn = res->last_psn = psn;
    res->orig = orig;
    qp->resp.epsn = vhca_psn_add(psn, 1);
    qp->resp.msn++;
    vhca_resp_atomic_ack(core, qpn, qp, psn, orig);
}

/*
 * A FLUSH or ATOMIC WRITE was executed: it takes a responder resource,
 * so that a duplicate is answered without executing again, and is
 * acknowledged.
 */
static void vhca_resp_placement_done(VhcaCore *core, uint32_t qpn,
                                     VhcaQp *qp, uint32_t psn)
{
    VhcaRdRes *res = vhca_resp_res_alloc(qp);

    res->kind = VHCA_RES_PLACEMENT;
    res->first_psn = res->last_psn = psn;
    qp->resp.epsn = vhca_psn_add(psn, 1);
    qp->resp.msn++;
    vhca_resp_placement_ack(core, qpn, qp, psn);
}

/*
 * RDMA FLUSH (IBTA 1.5 memory placement extensions, as rxe's
 * process_flush()).  The FETH's placement type needs the FLUSH right of
 * that type on the QP (else invalid request, as rxe) and on the MR over
 * the RETH range, or over the whole MR at MR-level selectivity (else
 * remote access error).  Guest RAM is the only memory the device places
 * data in, and every earlier WRITE and ATOMIC WRITE was written to it, by
 * DMA that had finished, before this request was taken (requests execute
 * in PSN order): global visibility holds once the response goes out.
 */
static void vhca_resp_do_flush(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                               const VhcaWirePacket *pkt)
{
    const VhcaWireFeth *feth = &pkt->tp.feth;
    const VhcaWireReth *reth = &pkt->tp.reth;
    uint32_t psn = pkt->tp.bth.psn;
    uint32_t access = 0;
    VhcaMrStatus st;

    if (feth->placement & VHCA_FLUSH_GLOBAL) {
        access |= VHCA_ACCESS_FLUSH_GLOBAL;
    }
    if (feth->placement & VHCA_FLUSH_PERSISTENT) {
        access |= VHCA_ACCESS_FLUSH_PERSISTENT;
    }
    /*
     * No placement type, a reserved one or a reserved selectivity level,
     * a type the QP does not enable, or no responder resource.
     */
    if (!access ||
        (feth->placement & ~(VHCA_FLUSH_GLOBAL | VHCA_FLUSH_PERSISTENT)) ||
        feth->selectivity > VHCA_FLUSH_MR ||
        (access & ~qp->attr.qp_access_flags) ||
        !qp->attr.max_dest_rd_atomic) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    if (feth->selectivity == VHCA_FLUSH_MR) {
        st = vhca_mr_check_whole(core, reth->rkey, vhca_resp_pdn(core, qp),
                                 qpn, access);
    } else {
        st = vhca_mr_check(core, reth->rkey, vhca_resp_pdn(core, qp), qpn,
                           reth->va, reth->dma_len, access, NULL);
    }
    if (st != VHCA_MR_OK) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    vhca_resp_placement_done(core, qpn, qp, psn);
}

/*
 * ATOMIC WRITE (IBTA 1.5 memory placement extensions, as rxe's
 * atomic_write_reply()): exactly 8 bytes (RETH DMA length and payload,
 * oA19-28, else invalid request), REMOTE_WRITE on the QP (else invalid
 * request) and on the MR (else remote access error), an 8-byte aligned
 * address (else invalid request, as rxe).  The 8 bytes land in one DMA
 * write: atomic with respect to everything the device does, not to guest
 * CPUs, as the other atomics.
 */
static void vhca_resp_do_atomic_write(VhcaCore *core, uint32_t qpn,
                                      VhcaQp *qp, const VhcaWirePacket *pkt)
{
    const VhcaWireReth *reth = &pkt->tp.reth;
    uint32_t psn = pkt->tp.bth.psn;

    if (!(qp->attr.qp_access_flags & VHCA_ACCESS_REMOTE_WRITE) ||
        !qp->attr.max_dest_rd_atomic || reth->dma_len != 8 ||
        pkt->payload_len != 8) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    if (vhca_mr_check(core, reth->rkey, vhca_resp_pdn(core, qp), qpn,
                      reth->va, 8, VHCA_ACCESS_REMOTE_WRITE, NULL) !=
        VHCA_MR_OK) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    if (reth->va & 7) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    if (vhca_sg_copy_one(core, VHCA_SG_SCATTER, reth->rkey, VHCA_MR_GEN_ANY,
                         reth->va, (uint8_t *)pkt->payload, 8,
                         vhca_resp_pdn(core, qp), qpn,
                         VHCA_ACCESS_REMOTE_WRITE) != VHCA_WC_SUCCESS) {
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    vhca_resp_placement_done(core, qpn, qp, psn);
}

/* One READ response packet of the stream in progress. */
static void vhca_resp_read_step(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaResponder *resp = &qp->resp;
    VhcaWirePacket pkt;
    VhcaWireSegment seg;
    uint32_t psn;

    if (!vhca_wire_segment(VHCA_IB_TRANSPORT_RC, VHCA_WIRE_MSG_READ_RESPONSE,
                           resp->read_len, qp->attr.path_mtu, resp->read_idx,
                           &seg)) {
        resp->read_active = false;
        return;
    }
    psn = vhca_psn_add(resp->read_psn, resp->read_idx);
    /*
     * The MR may go away under a long READ, and another take its key
     * (IBTA 10.6.7.2): each packet reads the MR the request checked.
     */
    if (vhca_sg_copy_one(core, VHCA_SG_GATHER, resp->read_rkey,
                         resp->read_gen, resp->read_va + seg.offset,
                         core->roce_payload, seg.len, resp->read_pdn, qpn,
                         VHCA_ACCESS_REMOTE_READ) != VHCA_WC_SUCCESS) {
        resp->read_active = false;
        vhca_resp_access(core, qpn, qp, psn);
        return;
    }
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = seg.opcode;
    pkt.tp.bth.psn = psn;
    pkt.tp.aeth.syndrome = vhca_resp_ack_syndrome(qp);
    pkt.payload = core->roce_payload;
    pkt.payload_len = seg.len;
    resp->read_idx++;
    if (resp->read_idx >= vhca_wire_packet_count(resp->read_len,
                                                 qp->attr.path_mtu)) {
        resp->read_active = false;
    }
    vhca_resp_send(core, qpn, qp, &pkt);
}

/* ---------------------------------------------------------------------- */
/* Packet checks                                                          */
/* ---------------------------------------------------------------------- */

/* IBTA 9.7.5.2.2: a request the responder already executed. */
static void vhca_resp_duplicate(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                const VhcaWirePacket *pkt, uint8_t op)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t psn = pkt->tp.bth.psn;
    unsigned i;

    vhca_count(core, VHCA_CNT_DUPLICATE_REQUEST, 1);
    if (op == VHCA_IB_OP_RDMA_READ_REQUEST ||
        op == VHCA_IB_OP_COMPARE_SWAP || op == VHCA_IB_OP_FETCH_ADD ||
        op == VHCA_IB_OP_FLUSH || op == VHCA_IB_OP_ATOMIC_WRITE) {
        /* 9.7.5.1.3: answered from the responder resources, not redone. */
        for (i = 0; i < VHCA_MAX_RD_ATOMIC; i++) {
            VhcaRdRes *res = &resp->res[i];

            if (res->kind == VHCA_RES_FREE ||
                vhca_psn_before(psn, res->first_psn) ||
                vhca_psn_after(psn, res->last_psn)) {
                continue;
            }
            if (res->kind == VHCA_RES_ATOMIC) {
                if ((op == VHCA_IB_OP_COMPARE_SWAP ||
                     op == VHCA_IB_OP_FETCH_ADD) && psn == res->first_psn) {
                    vhca_resp_atomic_ack(core, qpn, qp, psn, res->orig);
                }
            } else if (res->kind == VHCA_RES_PLACEMENT) {
                /* IBTA 1.5 oA19-14, oA19-15: answered, not executed. */
                if ((op == VHCA_IB_OP_FLUSH ||
                     op == VHCA_IB_OP_ATOMIC_WRITE) && psn == res->first_psn) {
                    vhca_resp_placement_ack(core, qpn, qp, psn);
                }
            } else if (op == VHCA_IB_OP_RDMA_READ_REQUEST) {
                uint64_t off = (uint64_t)vhca_psn_diff(psn, res->first_psn) *
                               vhca_qp_mtu(qp);
                uint32_t len = res->len - (uint32_t)off;

                /*
                 * The READ from @psn, read again: the retried request may
                 * ask for less than the rest (9.4.4, as rxe honours).
                 */
                if (pkt->tp.reth.va == res->va + off &&
                    pkt->tp.reth.dma_len < len) {
                    len = pkt->tp.reth.dma_len;
                }
                vhca_resp_read_start(qp, res->va + off, res->rkey, res->gen,
                                     res->pdn, len, psn);
            }
            return;
        }
        /* Too old for the resources we keep: dropped (9.7.5.1.3). */
        vhca_rx_drop(core, VHCA_DROP_DUP_TOO_OLD, qpn);
        return;
    }
    /* SEND or WRITE done already: acknowledge again, coalesced. */
    if (pkt->tp.bth.ack_req) {
        resp->ack_pending = true;
        resp->ack_psn = vhca_psn_add(resp->epsn, VHCA_PSN_MASK);
    }
}

/*
 * Annex A14: an XRC target executes a request for an XRC SRQ of its own
 * domain only; that SRQ gives the receive WQE and the PD of every memory
 * check.  Naming another is a protection violation, as a PD mismatch is:
 * NAK remote access error (class C).  The packets of one message all name
 * the SRQ its first packet named.
 */
static bool vhca_resp_xrc_check(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                const VhcaWirePacket *pkt)
{
    VhcaResponder *resp = &qp->resp;
    uint32_t srqn = pkt->tp.xrc_srqn;

    if (!vhca_xrc_request_srq(core, qp, srqn)) {
        vhca_resp_access(core, qpn, qp, pkt->tp.bth.psn);
        return false;
    }
    if (resp->cur != VHCA_RESP_NONE && srqn != resp->xrc_srqn) {
        vhca_resp_invalid(core, qpn, qp, pkt->tp.bth.psn);
        return false;
    }
    resp->xrc_srqn = srqn;
    return true;
}

static void vhca_resp_packet(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             const VhcaWirePacket *pkt)
{
    VhcaResponder *resp = &qp->resp;
    const VhcaWireOpcodeInfo *info = vhca_wire_opcode_info(pkt->tp.bth.opcode);
    uint8_t op = pkt->tp.bth.opcode & ~VHCA_IB_TRANSPORT_MASK;
    uint32_t psn = pkt->tp.bth.psn;
    int32_t diff = vhca_psn_diff(psn, resp->epsn);
    bool first = info->flags & VHCA_WIRE_OPF_FIRST;
    bool last = info->flags & VHCA_WIRE_OPF_LAST;
    uint32_t mtu = vhca_qp_mtu(qp);
    bool is_send = op <= VHCA_IB_OP_SEND_ONLY_IMM ||
                   op == VHCA_IB_OP_SEND_LAST_INV ||
                   op == VHCA_IB_OP_SEND_ONLY_INV;
    bool is_write = op >= VHCA_IB_OP_RDMA_WRITE_FIRST &&
                    op <= VHCA_IB_OP_RDMA_WRITE_ONLY_IMM;

    /* IBTA 11.6.3.1: Communication Established, first packet in RTR. */
    if (qp->state == VHCA_QPS_RTR && !resp->comm_est) {
        resp->comm_est = true;
        vhca_qp_event(core, qpn, VHCA_EVENT_COMM_EST);
    }
    if (diff > 0) {
        vhca_count(core, VHCA_CNT_OUT_OF_SEQ_REQUEST, 1);
        /* 9.7.5.2.1 (class A): NAK once, drop until the PSN comes. */
        if (!resp->nak_sent) {
            resp->nak_sent = true;
            vhca_resp_ack(core, qpn, qp, resp->epsn,
                          vhca_aeth_nak(VHCA_IB_NAK_PSN_SEQ_ERROR));
        }
        return;
    }
    if (diff < 0) {
        vhca_resp_duplicate(core, qpn, qp, pkt, op);
        return;
    }
    resp->nak_sent = false;
    if (qp->type == VHCA_QPT_XRC_TGT &&
        !vhca_resp_xrc_check(core, qpn, qp, pkt)) {
        return;
    }

    /* 9.7.5.2.3: the opcode sequence, FIRST [MIDDLE...] LAST or ONLY. */
    if ((resp->cur == VHCA_RESP_NONE && !first) ||
        (resp->cur != VHCA_RESP_NONE &&
         (first || (resp->cur == VHCA_RESP_SEND && !is_send) ||
          (resp->cur == VHCA_RESP_WRITE && !is_write)))) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    /* IBTA 9.7.5.2.4: FIRST and MIDDLE carry exactly one MTU. */
    if ((!last && pkt->payload_len != mtu) ||
        (last && !first && pkt->payload_len == 0) ||
        pkt->payload_len > mtu) {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }

    if (is_send) {
        vhca_resp_do_send(core, qpn, qp, pkt, op, first, last);
    } else if (is_write) {
        vhca_resp_do_write(core, qpn, qp, pkt, op, first, last);
    } else if (op == VHCA_IB_OP_RDMA_READ_REQUEST) {
        vhca_resp_do_read(core, qpn, qp, pkt);
        return;
    } else if (op == VHCA_IB_OP_COMPARE_SWAP || op == VHCA_IB_OP_FETCH_ADD) {
        vhca_resp_do_atomic(core, qpn, qp, pkt, op);
        return;
    } else if (op == VHCA_IB_OP_FLUSH) {
        vhca_resp_do_flush(core, qpn, qp, pkt);
        return;
    } else if (op == VHCA_IB_OP_ATOMIC_WRITE) {
        vhca_resp_do_atomic_write(core, qpn, qp, pkt);
        return;
    } else {
        vhca_resp_invalid(core, qpn, qp, psn);
        return;
    }
    if (qp->state != VHCA_QPS_ERR && pkt->tp.bth.ack_req &&
        resp->epsn == vhca_psn_add(psn, 1)) {
        resp->ack_pending = true;
        resp->ack_psn = psn;
    }
}

bool vhca_resp_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   unsigned *budget)
{
    VhcaResponder *resp = &qp->resp;
    bool more = false;
    VhcaRxFrame *f;

    for (;;) {
        /* Requests wait while a READ is answered: responses go in order. */
        if (resp->read_active && vhca_qp_receives(qp)) {
            if (!*budget) {
                more = true;
                break;
            }
            (*budget)--;
            vhca_resp_read_step(core, qpn, qp);
            continue;
        }
        f = vhca_recv_next(core, qpn, qp, budget, &more);
        if (!f) {
            break;
        }
        vhca_resp_packet(core, qpn, qp, &f->pkt);
        vhca_rx_frame_free(f);
    }
    if (!vhca_qp_receives(qp)) {
        return false;
    }
    /* 9.7.5.1.1: one ACK for everything acknowledged in this pass. */
    if (resp->ack_pending && !resp->read_active) {
        resp->ack_pending = false;
        vhca_resp_ack(core, qpn, qp, resp->ack_psn,
                      vhca_resp_ack_syndrome(qp));
    }
    return more;
}
