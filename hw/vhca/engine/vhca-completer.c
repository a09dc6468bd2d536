/*
 * vhca engine: the RC completer (IBTA Vol 1 9.7.5.1 "Requester side" and
 * 9.9.2 "Requester error behavior"): ACKs and NAKs, READ responses and
 * atomic ACKs retire the send WQEs in order; sequence errors, lost
 * responses and timeouts go back N; RNR NAKs wait; errors complete the
 * WQE with their status and move the QP to ERR.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

/* WQEs that complete only on their own response, never implicitly. */
static bool vhca_completer_is_rd_atomic(const VhcaSendMeta *m)
{
    return vhca_wr_takes_rd_res(m->opcode);
}

static bool vhca_completer_is_placement(const VhcaSendMeta *m)
{
    return m->opcode == VHCA_WR_FLUSH || m->opcode == VHCA_WR_ATOMIC_WRITE;
}

/*
 * A retry (NAK sequence error, IBTA 9.7.5.1.5; implied NAK, 9.7.5.1.2;
 * local ACK timeout, 9.7.6.1) from @psn, while the retry counter lasts.
 */
static void vhca_completer_retry(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                 uint32_t psn, VhcaRetryCause why)
{
    bool timeout = why == VHCA_RETRY_TIMEOUT;

    /*
     * One retry per loss: the packets that follow a lost one each show
     * the gap again until the resent ones arrive.
     */
    if (!timeout && qp->req.retrying && qp->req.retry_psn == psn) {
        return;
    }
    qp->req.retrying = true;
    qp->req.retry_psn = psn;
    if (!qp->req.retry_left) {
        vhca_count(core, VHCA_CNT_RETRY_EXCEEDED, 1);
        vhca_req_fail(core, qpn, qp, VHCA_WC_RETRY_EXC_ERR, 0);
        return;
    }
    qp->req.retry_left--;
    vhca_count(core, VHCA_CNT_RETRIES, 1);
    VHCA_HOOK(core, retransmit, qpn, psn, why);
    /*
     * After a timeout only the oldest unacknowledged packet goes again,
     * with AckReq, until an ACK shows progress - as TCP falls back to one
     * segment.  It keeps a lossy path from being flooded, and periodic
     * loss from hitting the same packets of every full retransmission.
     */
    qp->req.probe = timeout;
    /*
     * And the loss backs the requester off (vhca-req.c): a smaller window
     * from here on, a longer timer after a timeout.
     */
    vhca_req_window_cut(core, qpn, qp, why);
    if (timeout) {
        vhca_req_timer_backoff(core, qpn, qp);
    }
    vhca_req_rewind(qp, psn);
    qp->deadline = VHCA_NO_DEADLINE;
}

/* IBTA 9.7.5.1.4 / C9-119: RNR NAK: wait the time it names, then resend. */
static void vhca_completer_rnr(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                               uint32_t psn, uint8_t timer_code)
{
    VhcaRequester *req = &qp->req;
    uint64_t timer_ns = (uint64_t)vhca_ib_rnr_timer_us(timer_code) * 1000;

    vhca_count(core, VHCA_CNT_RNR_NAK_RCVD, 1);
    VHCA_HOOK(core, nak_rcvd, qpn, psn, VHCA_NAK_KIND_RNR, timer_code);
    /* rnr_retry 7 means retry for ever (IBTA 9.7.5.2.8, Table 41). */
    if (qp->attr.rnr_retry != 7) {
        if (!req->rnr_left) {
            vhca_count(core, VHCA_CNT_RNR_RETRY_EXCEEDED, 1);
            vhca_req_fail(core, qpn, qp, VHCA_WC_RNR_RETRY_EXC_ERR, 0);
            return;
        }
        req->rnr_left--;
    }
    VHCA_HOOK(core, rnr_wait, qpn, psn, timer_ns);
    vhca_req_rewind(qp, psn);
    req->rnr_wait = true;
    qp->deadline = vhca_now(core) + timer_ns;
}

static void vhca_completer_nak(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                               uint32_t psn, uint8_t code)
{
    VhcaSendMeta *m = vhca_req_head(qp);

    /* The NAK must name a PSN of the oldest outstanding WQE. */
    if (!m || vhca_psn_before(psn, m->first_psn) ||
        !vhca_psn_before(psn, vhca_psn_add(m->first_psn, m->npkts))) {
        vhca_rx_drop(core, VHCA_DROP_BAD_RESPONSE, qpn);
        return;
    }
    VHCA_HOOK(core, nak_rcvd, qpn, psn, VHCA_NAK_KIND_NAK, code);
    /*
     * IBTA 9.9.2 Table "Requester error behavior": the error classes.
     * vendor_err says the peer's check failed: NAK | its code.
     */
    switch (code) {
    case VHCA_IB_NAK_PSN_SEQ_ERROR:
        vhca_count(core, VHCA_CNT_SEQ_NAK_RCVD, 1);
        vhca_completer_retry(core, qpn, qp, psn, VHCA_RETRY_SEQ_NAK);
        break;
    case VHCA_IB_NAK_INVALID_REQUEST:
        vhca_count(core, VHCA_CNT_INV_REQ_NAK_RCVD, 1);
        vhca_req_fail(core, qpn, qp, VHCA_WC_REM_INV_REQ_ERR,
                      VHCA_VENDOR_ERR_NAK | code);
        break;
    case VHCA_IB_NAK_REMOTE_ACCESS:
        vhca_count(core, VHCA_CNT_REM_ACCESS_NAK_RCVD, 1);
        vhca_req_fail(core, qpn, qp, VHCA_WC_REM_ACCESS_ERR,
                      VHCA_VENDOR_ERR_NAK | code);
        break;
    case VHCA_IB_NAK_REMOTE_OP:
        vhca_count(core, VHCA_CNT_REM_OP_NAK_RCVD, 1);
        vhca_req_fail(core, qpn, qp, VHCA_WC_REM_OP_ERR,
                      VHCA_VENDOR_ERR_NAK | code);
        break;
    default:
        /* Invalid RD request and reserved codes: not for an RC QP. */
        vhca_count(core, VHCA_CNT_INV_REQ_NAK_RCVD, 1);
        vhca_req_fail(core, qpn, qp, VHCA_WC_REM_INV_REQ_ERR,
                      VHCA_VENDOR_ERR_NAK | code);
        break;
    }
}

/* A READ response packet for the head WQE, in order. */
static void vhca_completer_read_response(VhcaCore *core, uint32_t qpn,
                                         VhcaQp *qp,
                                         const VhcaWirePacket *pkt)
{
    VhcaSendMeta *m = vhca_req_head(qp);
    uint32_t psn = pkt->tp.bth.psn;
    uint32_t mtu = vhca_qp_mtu(qp);
    uint32_t expect_psn, offset, expect_len;
    uint8_t status;

    /*
     * IBTA 1.5 memory placement extensions: FLUSH and ATOMIC WRITE are
     * answered by one RDMA READ Response Only without data (rxe sends
     * it so, and its completer takes it so).
     */
    if (m && vhca_completer_is_placement(m)) {
        if (psn != m->first_psn || pkt->payload_len ||
            (pkt->tp.bth.opcode & ~VHCA_IB_TRANSPORT_MASK) !=
            VHCA_IB_OP_RDMA_READ_RESPONSE_ONLY) {
            vhca_rx_drop(core, VHCA_DROP_BAD_RESPONSE, qpn);
            return;
        }
        qp->req.una_psn = vhca_psn_add(psn, 1);
        vhca_req_complete_head(core, qpn, qp);
        return;
    }
    if (!m || m->opcode != VHCA_WR_RDMA_READ ||
        vhca_psn_before(psn, m->first_psn) ||
        !vhca_psn_before(psn, vhca_psn_add(m->first_psn, m->npkts))) {
        vhca_rx_drop(core, VHCA_DROP_BAD_RESPONSE, qpn);
        return;
    }
    expect_psn = vhca_psn_add(m->first_psn, m->done_pkts);
    if (psn != expect_psn) {
        if (vhca_psn_after(psn, expect_psn)) {
            /* A response packet was lost: ask again from it. */
            vhca_completer_retry(core, qpn, qp, expect_psn,
                                 VHCA_RETRY_IMPLIED_NAK);
        }
        return;
    }
    offset = m->done_pkts * mtu;
    expect_len = m->len - offset < mtu ? m->len - offset : mtu;
    if (pkt->payload_len != expect_len) {
        /* A malformed response: ignore it; the timer retries. */
        vhca_rx_drop(core, VHCA_DROP_BAD_RESPONSE, qpn);
        return;
    }
    status = vhca_req_scatter(core, qp, pkt->payload, offset, expect_len);
    if (status != VHCA_WC_SUCCESS) {
        vhca_req_fail(core, qpn, qp, status, 0);
        return;
    }
    m->done_pkts++;
    qp->req.una_psn = vhca_psn_add(psn, 1);
    if (m->done_pkts >= m->npkts) {
        vhca_req_complete_head(core, qpn, qp);
    }
}

static void vhca_completer_atomic_ack(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                      const VhcaWirePacket *pkt)
{
    VhcaSendMeta *m = vhca_req_head(qp);
    uint8_t orig[8];
    uint8_t status;

    if (!m || (m->opcode != VHCA_WR_ATOMIC_CMP_AND_SWP &&
               m->opcode != VHCA_WR_ATOMIC_FETCH_AND_ADD) ||
        pkt->tp.bth.psn != m->first_psn) {
        vhca_rx_drop(core, VHCA_DROP_BAD_RESPONSE, qpn);
        return;
    }
    /* The original remote value, in the guest's (little-endian) order. */
    vhca_st_le64(orig, pkt->tp.atomic_orig);
    status = vhca_req_scatter(core, qp, orig, 0, sizeof(orig));
    if (status != VHCA_WC_SUCCESS) {
        vhca_req_fail(core, qpn, qp, status, 0);
        return;
    }
    qp->req.una_psn = vhca_psn_add(m->first_psn, 1);
    vhca_req_complete_head(core, qpn, qp);
}

/*
 * One response.  Every response acknowledges the PSNs before it
 * (IBTA 9.7.5.1.1: coalesced and implicit ACKs), a positive ACK its own
 * PSN too.  A READ or atomic whose responses were skipped over is
 * retried (9.7.5.1.2, "implied NAK").
 */
static void vhca_completer_packet(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                  const VhcaWirePacket *pkt)
{
    VhcaRequester *req = &qp->req;
    uint8_t op = pkt->tp.bth.opcode & ~VHCA_IB_TRANSPORT_MASK;
    uint32_t psn = pkt->tp.bth.psn;
    uint8_t kind = VHCA_IB_AETH_KIND_ACK;
    uint32_t una = req->una_psn;
    uint32_t implied;
    VhcaSendMeta *m;

    /* Older than what is outstanding, or for a PSN never sent: drop. */
    if (vhca_psn_before(psn, req->una_psn) ||
        !vhca_psn_before(psn, req->sent_psn)) {
        vhca_rx_drop(core, VHCA_DROP_STALE_RESPONSE, qpn);
        return;
    }
    if (op != VHCA_IB_OP_RDMA_READ_RESPONSE_MIDDLE) {
        kind = pkt->tp.aeth.syndrome & VHCA_IB_AETH_KIND_MASK;
    }
    if (kind == VHCA_IB_AETH_KIND_RESERVED) {
        vhca_rx_drop(core, VHCA_DROP_BAD_RESPONSE, qpn);
        return;
    }
    implied = op == VHCA_IB_OP_ACKNOWLEDGE && kind == VHCA_IB_AETH_KIND_ACK ?
              psn : vhca_psn_add(psn, VHCA_PSN_MASK);

    while ((m = vhca_req_head(qp)) && m->status == VHCA_WC_SUCCESS) {
        uint32_t last = vhca_psn_add(m->first_psn, m->npkts - 1);

        if (vhca_completer_is_rd_atomic(m)) {
            uint32_t resume = vhca_psn_add(m->first_psn, m->done_pkts);

            if (!vhca_psn_before(implied, resume)) {
                /*
                 * What precedes @resume is acknowledged (the WQEs this
                 * response retired, the READ's responses so far): the
                 * window counts from there.
                 */
                if (vhca_psn_after(resume, req->una_psn)) {
                    req->una_psn = resume;
                }
                vhca_completer_retry(core, qpn, qp, resume,
                                     VHCA_RETRY_IMPLIED_NAK);
                return;
            }
            break;
        }
        if (vhca_psn_before(implied, last)) {
            break;
        }
        vhca_req_complete_head(core, qpn, qp);
    }
    if (vhca_psn_after(vhca_psn_add(implied, 1), req->una_psn)) {
        req->una_psn = vhca_psn_add(implied, 1);
    }

    switch (op) {
    case VHCA_IB_OP_RDMA_READ_RESPONSE_FIRST:
    case VHCA_IB_OP_RDMA_READ_RESPONSE_MIDDLE:
    case VHCA_IB_OP_RDMA_READ_RESPONSE_LAST:
    case VHCA_IB_OP_RDMA_READ_RESPONSE_ONLY:
        vhca_completer_read_response(core, qpn, qp, pkt);
        break;
    case VHCA_IB_OP_ATOMIC_ACKNOWLEDGE:
        vhca_completer_atomic_ack(core, qpn, qp, pkt);
        break;
    default:
        break;
    }
    if (qp->state == VHCA_QPS_ERR) {
        return;
    }
    /* Progress: the retry counters start again (as Linux rxe does). */
    if (req->una_psn != una) {
        vhca_req_window_grow(qp, (uint32_t)vhca_psn_diff(req->una_psn, una));
        req->retrying = false;
        if (req->probe) {
            /* The probe got through: everything after it goes again. */
            req->probe = false;
            vhca_req_rewind(qp, req->una_psn);
        }
        req->retry_left = qp->attr.retry_cnt;
        req->rnr_left = qp->attr.rnr_retry;
        vhca_req_restart_timer(core, qp);
    }
    if (op != VHCA_IB_OP_ACKNOWLEDGE) {
        return;
    }
    if (kind == VHCA_IB_AETH_KIND_RNR_NAK) {
        vhca_completer_rnr(core, qpn, qp, psn,
                           pkt->tp.aeth.syndrome & VHCA_IB_AETH_VALUE_MASK);
    } else if (kind == VHCA_IB_AETH_KIND_NAK) {
        vhca_completer_nak(core, qpn, qp, psn,
                           pkt->tp.aeth.syndrome & VHCA_IB_AETH_VALUE_MASK);
    }
    /*
     * ACK credits (9.7.7.2) are not used to hold back SENDs: an RNR NAK
     * tells the requester when the responder has no receive WQE.
     */
}

bool vhca_completer_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                        unsigned *budget)
{
    VhcaRxFrame *f;

    while (qp->rxq_resp.head) {
        if (!*budget) {
            return true;
        }
        (*budget)--;
        f = vhca_frameq_pop(core, &qp->rxq_resp);
        if (qp->state == VHCA_QPS_RTS || qp->state == VHCA_QPS_SQD) {
            vhca_completer_packet(core, qpn, qp, &f->pkt);
        } else {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpn);
        }
        vhca_rx_frame_free(f);
    }
    return false;
}

void vhca_completer_timer(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaRequester *req = &qp->req;

    if (qp->state != VHCA_QPS_RTS && qp->state != VHCA_QPS_SQD) {
        return;
    }
    if (req->rnr_wait) {
        req->rnr_wait = false;
        return;
    }
    /* IBTA 9.7.6.1: Local ACK Timeout: resend from the oldest PSN. */
    if (req->una_psn != req->sent_psn && vhca_req_head(qp)) {
        vhca_count(core, VHCA_CNT_ACK_TIMEOUTS, 1);
        VHCA_HOOK(core, ack_timeout, qpn, req->una_psn, req->retry_left);
        vhca_completer_retry(core, qpn, qp, req->una_psn, VHCA_RETRY_TIMEOUT);
    }
}
