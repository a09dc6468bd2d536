/*
 * vhca engine: the requester (IBTA Vol 1 9.4, 9.5, 9.7.1-9.7.4, 9.8 for
 * UC, 10.2.5 and 11.4.1 for UD): fetch send WQEs, check them, segment
 * each message at the path MTU into packets with consecutive PSNs.  RC
 * keeps what was sent until the completer retires it; the retransmit
 * queue holds WQEs, not frames: a go-back-N (vhca_req_rewind) rebuilds
 * packets from the SQ and from memory, as hardware does.  UC and UD have
 * no acknowledgements: a WQE completes once its last packet is sent, and
 * a WQE that fails moves the QP to SQE, not ERR (IBTA 10.3.1).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-transport.h"

#define WQE_OFF(f)          offsetof(struct vhca_send_wqe, f)
#define WQE_SGE_OFF         offsetof(struct vhca_send_wqe, sge)
#define AV_OFF(f)           (WQE_OFF(av) + offsetof(struct vhca_ud_av, f))

static VhcaSendMeta *vhca_req_meta(VhcaQp *qp, uint32_t index)
{
    return &qp->req.win[index & (qp->req.win_size - 1)];
}

VhcaSendMeta *vhca_req_head(VhcaQp *qp)
{
    if (qp->sq.ci == qp->req.fetched) {
        return NULL;
    }
    return vhca_req_meta(qp, qp->sq.ci);
}

static bool vhca_wr_is_atomic(uint8_t op)
{
    return op == VHCA_WR_ATOMIC_CMP_AND_SWP ||
           op == VHCA_WR_ATOMIC_FETCH_AND_ADD;
}

static bool vhca_wr_is_rd_atomic(uint8_t op)
{
    return op == VHCA_WR_RDMA_READ || vhca_wr_is_atomic(op);
}

/*
 * Work on the device's own MRs and windows: no packet (IBTA 10.6.3.2,
 * 10.6.5, 10.6.7.2).
 */
static bool vhca_wr_is_local(uint8_t op)
{
    return op == VHCA_WR_REG_MR || op == VHCA_WR_LOCAL_INV ||
           op == VHCA_WR_BIND_MW;
}

/* IBTA 1.5 memory placement extensions: no local data, no SGEs. */
static bool vhca_wr_is_placement(uint8_t op)
{
    return op == VHCA_WR_FLUSH || op == VHCA_WR_ATOMIC_WRITE;
}

/*
 * The WQEs that take a responder resource at the peer and so count
 * against max_rd_atomic (IBTA 9.5; FLUSH and ATOMIC WRITE are answered
 * like a READ, IBTA 1.5), and that a FENCE waits for.
 */
bool vhca_wr_takes_rd_res(uint8_t op)
{
    return vhca_wr_is_rd_atomic(op) || vhca_wr_is_placement(op);
}

static bool vhca_req_signaled(const VhcaQp *qp, const VhcaSendMeta *m)
{
    return qp->sq_sig_all || (m->flags & VHCA_WQE_SIGNALED);
}

/* ---------------------------------------------------------------------- */
/* WQE checks (IBTA 10.8.3, 11.6.2: local errors complete the WQE)        */
/* ---------------------------------------------------------------------- */

/* Which send opcodes each service has (IBTA 9.4, Table 39; 11.4.1.1). */
static bool vhca_req_opcode_ok(const VhcaQp *qp, uint8_t op)
{
    switch (op) {
    case VHCA_WR_SEND:
    case VHCA_WR_SEND_WITH_IMM:
        return true;
    case VHCA_WR_RDMA_WRITE:
    case VHCA_WR_RDMA_WRITE_WITH_IMM:
        return vhca_qp_is_reliable(qp) || qp->type == VHCA_QPT_UC;
    case VHCA_WR_LOCAL_INV:
    case VHCA_WR_REG_MR:
        return qp->type == VHCA_QPT_RC || qp->type == VHCA_QPT_UC;
    /* As rxe: any QP that sends RDMA requests binds (IBTA 10.6.7.2). */
    case VHCA_WR_BIND_MW:
        return qp->type == VHCA_QPT_RC || qp->type == VHCA_QPT_UC ||
               qp->type == VHCA_QPT_XRC_INI;
    case VHCA_WR_SEND_WITH_INV:
    case VHCA_WR_RDMA_READ:
    case VHCA_WR_ATOMIC_CMP_AND_SWP:
    case VHCA_WR_ATOMIC_FETCH_AND_ADD:
        /* RC and XRC (annex A14: XRC has the RC operations). */
        return vhca_qp_is_reliable(qp);
    /* IBTA 1.5's, on RC only: vhca has no FLUSH or ATOMIC WRITE on XRC. */
    case VHCA_WR_FLUSH:
    case VHCA_WR_ATOMIC_WRITE:
        return qp->type == VHCA_QPT_RC;
    default:
        return false;
    }
}

/*
 * A UD WQE's destination: DestQP, Q_Key (IBTA 10.2.5: a WR Q_Key with
 * the high bit set means the QP's own) and address vector.  A source GID
 * that is not in the table, or IPv4 and IPv6 mixed, is a local QP
 * operation error, as on mlx5.
 */
/*
 * The IB port's address vector (IBTA 10.2.1, 7.7, 8.3): the LRH's DLID,
 * SL and path bits, a GRH only when asked; DestQP 0xFFFFFF for a
 * multicast DLID (10.5.2.1).  A GSI WR names its P_Key by index (the
 * kernel's ib_ud_wr.pkey_index); other datagram QPs send with their
 * own.  Bad values are a local QP operation error, as on mlx4.
 */
static uint8_t vhca_req_parse_ud_ib(VhcaCore *core, VhcaQp *qp,
                                    const uint8_t *raw, VhcaSendMeta *m)
{
    VhcaPath *path = &m->ud_path;
    uint8_t ah_flags = raw[AV_OFF(ah_flags)];
    const VhcaGidEntry *sgid;

    path->dlid = vhca_ld_le16(raw + AV_OFF(dlid));
    path->sl = raw[AV_OFF(sl)];
    path->src_path_bits = raw[AV_OFF(src_path_bits)];
    path->grh = ah_flags & VHCA_AH_GRH;
    path->pkey_index = qp->type == VHCA_QPT_GSI ?
                       vhca_ld_le32(raw + WQE_OFF(pkey_index)) :
                       qp->attr.pkey_index;
    path->dest_qpn = vhca_ib_lid_is_multicast(path->dlid) ? VHCA_MCAST_QPN :
                     vhca_ld_le32(raw + WQE_OFF(dest_qpn)) & VHCA_IB_QPN_MASK;
    if (path->sl > 15 || path->src_path_bits > 0x7f ||
        (ah_flags & ~VHCA_AH_GRH) ||
        path->pkey_index >= VHCA_IB_PKEY_TBL_LEN) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    if (!path->grh) {
        return VHCA_WC_SUCCESS;
    }
    memcpy(path->dgid, raw + AV_OFF(dgid), VHCA_GID_LEN);
    path->sgid_index = raw[AV_OFF(sgid_index)];
    path->hop_limit = raw[AV_OFF(hop_limit)];
    path->traffic_class = raw[AV_OFF(traffic_class)];
    path->flow_label = vhca_ld_le32(raw + AV_OFF(flow_label)) & 0xfffff;
    if (path->sgid_index >= core->cfg.gid_tbl_len) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    sgid = &core->gid_tbl[path->sgid_index];
    return sgid->valid ? VHCA_WC_SUCCESS : VHCA_WC_LOC_QP_OP_ERR;
}

static uint8_t vhca_req_parse_ud(VhcaCore *core, VhcaQp *qp,
                                 const uint8_t *raw, VhcaSendMeta *m)
{
    VhcaPath *path = &m->ud_path;
    uint32_t qkey = vhca_ld_le32(raw + WQE_OFF(qkey));
    const VhcaGidEntry *sgid;

    m->qkey = (qkey & VHCA_QKEY_CONTROLLED) ? qp->attr.qkey : qkey;
    memset(path, 0, sizeof(*path));
    if (core->cfg.link == VHCA_LINK_IB) {
        return vhca_req_parse_ud_ib(core, qp, raw, m);
    }
    memcpy(path->dgid, raw + AV_OFF(dgid), VHCA_GID_LEN);
    memcpy(path->dmac, raw + AV_OFF(dmac), VHCA_ETH_ALEN);
    path->sgid_index = raw[AV_OFF(sgid_index)];
    path->hop_limit = raw[AV_OFF(hop_limit)];
    path->traffic_class = raw[AV_OFF(traffic_class)];
    path->sl = raw[AV_OFF(eth_sl)];     /* the PCP on a VLAN GID */
    path->udp_sport = vhca_ld_le16(raw + AV_OFF(udp_sport));
    path->flow_label = vhca_ld_le32(raw + AV_OFF(flow_label)) & 0xfffff;
    /* IBTA 10.5.2.1: multicast datagrams go to DestQP 0xFFFFFF. */
    path->dest_qpn = vhca_gid_is_multicast(path->dgid) ? VHCA_MCAST_QPN :
                     vhca_ld_le32(raw + WQE_OFF(dest_qpn)) & VHCA_IB_QPN_MASK;
    if (path->sgid_index >= core->cfg.gid_tbl_len) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    sgid = &core->gid_tbl[path->sgid_index];
    if (!sgid->valid ||
        vhca_wire_gid_is_ipv4(sgid->gid) !=
        vhca_wire_gid_is_ipv4(path->dgid)) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    return VHCA_WC_SUCCESS;
}

static uint8_t vhca_req_parse(VhcaCore *core, VhcaQp *qp, const uint8_t *raw,
                              VhcaSendMeta *m)
{
    uint32_t access;
    uint64_t total = 0;
    uint8_t status;
    unsigned i;

    m->wr_id = vhca_ld_le64(raw + WQE_OFF(wr_id));
    m->opcode = raw[WQE_OFF(opcode)];
    m->flags = raw[WQE_OFF(flags)];
    m->num_sge = raw[WQE_OFF(num_sge)];
    m->imm_or_inv = vhca_ld_le32(raw + WQE_OFF(imm_or_inv));
    m->remote_addr = vhca_ld_le64(raw + WQE_OFF(remote_addr));
    m->rkey = vhca_ld_le32(raw + WQE_OFF(rkey));
    m->compare_add = vhca_ld_le64(raw + WQE_OFF(compare_add));
    m->swap = vhca_ld_le64(raw + WQE_OFF(swap));
    m->xrc_srqn = vhca_ld_le32(raw + WQE_OFF(xrc_srqn)) & VHCA_IB_QPN_MASK;

    if (!vhca_req_opcode_ok(qp, m->opcode)) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    /* Executed when fetched (vhca_req_local()): nothing to gather. */
    if (vhca_wr_is_local(m->opcode)) {
        m->num_sge = 0;
        m->len = 0;
        return VHCA_WC_SUCCESS;
    }
    if (vhca_qp_is_datagram(qp)) {
        status = vhca_req_parse_ud(core, qp, raw, m);
        if (status != VHCA_WC_SUCCESS) {
            return status;
        }
    }
    /*
     * FLUSH and ATOMIC WRITE take their operands from the WQE, never
     * data from SGEs or inline (the flags are ignored, as by rxe).  The
     * responder checks alignment and placement type (rxe does too).
     */
    if (m->opcode == VHCA_WR_FLUSH) {
        m->num_sge = 0;
        m->len = vhca_ld_le32(raw + WQE_OFF(flush_len));
        m->flush_type = raw[WQE_OFF(flush_type)];
        m->flush_level = raw[WQE_OFF(flush_level)];
        /* Wider than their FETH fields: the guest's mistake. */
        if (m->flush_type & ~0xfu || m->flush_level & ~0x3u) {
            return VHCA_WC_LOC_QP_OP_ERR;
        }
        return VHCA_WC_SUCCESS;
    }
    if (m->opcode == VHCA_WR_ATOMIC_WRITE) {
        m->num_sge = 0;
        m->len = 8;
        return VHCA_WC_SUCCESS;
    }

    if (m->flags & VHCA_WQE_INLINE) {
        uint32_t inline_len = vhca_ld_le32(raw + WQE_OFF(inline_len));

        /* Inline data is gathered from the WQE: nothing to write to. */
        if (vhca_wr_is_rd_atomic(m->opcode)) {
            return VHCA_WC_LOC_QP_OP_ERR;
        }
        if (inline_len > VHCA_MAX_INLINE) {
            return VHCA_WC_LOC_LEN_ERR;
        }
        m->num_sge = 0;
        m->len = inline_len;
        return VHCA_WC_SUCCESS;
    }

    if (m->num_sge > VHCA_MAX_SEND_SGE) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    /* READ and atomic results are written to the local buffer. */
    access = vhca_wr_is_rd_atomic(m->opcode) ? VHCA_ACCESS_LOCAL_WRITE : 0;
    for (i = 0; i < m->num_sge; i++) {
        const uint8_t *sge = raw + WQE_SGE_OFF + 16 * i;
        uint64_t addr = vhca_ld_le64(sge);
        uint32_t len = vhca_ld_le32(sge + 8);
        uint32_t lkey = vhca_ld_le32(sge + 12);

        total += len;
        /* A window's key is no L_Key: access asks for no remote right. */
        if (len && vhca_mr_check(core, lkey, qp->pdn, 0, addr, len, access,
                                 NULL) != VHCA_MR_OK) {
            return VHCA_WC_LOC_PROT_ERR;
        }
    }
    if (total > VHCA_MAX_MSG_SIZE) {
        return VHCA_WC_LOC_LEN_ERR;
    }
    m->len = (uint32_t)total;
    if (vhca_wr_is_atomic(m->opcode)) {
        /* IBTA 9.4.5: one naturally aligned 64-bit word. */
        if (m->len != 8) {
            return VHCA_WC_LOC_LEN_ERR;
        }
        if (m->remote_addr & 7) {
            return VHCA_WC_LOC_QP_OP_ERR;
        }
    }
    return VHCA_WC_SUCCESS;
}

/*
 * Copy between @buf and bytes [offset, offset + len) of WQE @index's
 * local buffer (its SGEs or inline data), reading the WQE again: the
 * device keeps no copy of the SGEs.  Returns a VHCA_WC_* status.
 */
static uint8_t vhca_req_sg_copy(VhcaCore *core, VhcaQp *qp, uint32_t index,
                                const VhcaSendMeta *m, uint8_t *buf,
                                uint32_t offset, uint32_t len, bool to_local)
{
    VHCA_UNINITIALIZED uint8_t raw[VHCA_SEND_WQE_SIZE];
    VHCA_UNINITIALIZED struct vhca_sge sgl[VHCA_MAX_SEND_SGE];
    unsigned i;

    if (!len) {
        return VHCA_WC_SUCCESS;
    }
    if (m->flags & VHCA_WQE_INLINE) {
        if ((uint64_t)offset + len > m->len ||
            vhca_wq_fetch(core, &qp->sq, index, raw, WQE_SGE_OFF + m->len)) {
            return VHCA_WC_LOC_QP_OP_ERR;
        }
        memcpy(buf, raw + WQE_SGE_OFF + offset, len);
        return VHCA_WC_SUCCESS;
    }
    if (vhca_wq_fetch(core, &qp->sq, index, raw,
                      WQE_SGE_OFF + 16u * m->num_sge)) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    for (i = 0; i < m->num_sge; i++) {
        const uint8_t *sge = raw + WQE_SGE_OFF + 16 * i;

        sgl[i].addr = vhca_ld_le64(sge);
        sgl[i].length = vhca_ld_le32(sge + 8);
        sgl[i].lkey = vhca_ld_le32(sge + 12);
    }
    /*
     * Checked again as they are used: the MR may have gone since the WQE
     * was fetched, or the guest rewritten the SGEs of a WQE in flight
     * (LOC_LEN_ERR if they fall short).
     */
    return vhca_sg_copy(core, to_local ? VHCA_SG_SCATTER : VHCA_SG_GATHER,
                        sgl, m->num_sge, offset, buf, len, qp->pdn,
                        to_local ? VHCA_ACCESS_LOCAL_WRITE : 0);
}

uint8_t vhca_req_scatter(VhcaCore *core, VhcaQp *qp, const void *data,
                         uint32_t offset, uint32_t len)
{
    VhcaSendMeta *m = vhca_req_head(qp);

    if (!m) {
        return VHCA_WC_LOC_QP_OP_ERR;
    }
    return vhca_req_sg_copy(core, qp, qp->sq.ci, m, (uint8_t *)data, offset,
                            len, true);
}

/* ---------------------------------------------------------------------- */
/* Completion                                                             */
/* ---------------------------------------------------------------------- */

void vhca_req_complete_head(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaSendMeta *m = vhca_req_head(qp);
    VhcaRequester *req = &qp->req;

    if (!m) {
        return;
    }
    /* IBTA 10.8.6: unsignaled WQEs that succeed complete silently. */
    if (vhca_req_signaled(qp, m)) {
        VhcaCompletion wc = {
            .wr_id = m->wr_id,
            .byte_len = m->len,
            .qpn = qpn,
            .status = VHCA_WC_SUCCESS,
            .opcode = vhca_send_wc_opcode(m->opcode),
        };

        vhca_cq_post(core, qp->send_cqn, &wc);
    }
    if (vhca_wr_takes_rd_res(m->opcode) && req->rd_atomic) {
        req->rd_atomic--;
    }
    qp->sq.ci++;
    if ((int32_t)(req->cur - qp->sq.ci) < 0) {
        req->cur = qp->sq.ci;
        req->cur_pkt = 0;
    }
}

void vhca_req_fail(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   uint8_t status, uint32_t vendor_err)
{
    VhcaSendMeta *m = vhca_req_head(qp);

    vhca_qp_note_error(qp, status, vendor_err);
    if (m) {
        /* Errors complete whether signaled or not (IBTA 10.8.6). */
        VhcaCompletion wc = {
            .wr_id = m->wr_id,
            .qpn = qpn,
            .status = status,
            .opcode = vhca_send_wc_opcode(m->opcode),
            .vendor_err = vendor_err,
        };

        vhca_cq_post(core, qp->send_cqn, &wc);
        qp->sq.ci++;
    }
    /*
     * IBTA 10.3.1: an RC QP leaves for ERR; a UC or UD QP for SQE, where
     * it goes on receiving (the MAD layer moves QP1 back to RTS).  The
     * rest of the SQ is flushed either way.
     */
    if (vhca_qp_is_reliable(qp)) {
        vhca_qp_set_error(core, qpn, qp);
    } else {
        vhca_qp_set_sq_error(core, qpn, qp);
    }
}

/* ---------------------------------------------------------------------- */
/* Go back N and the retransmit timer                                     */
/* ---------------------------------------------------------------------- */

void vhca_req_rewind(VhcaQp *qp, uint32_t psn)
{
    VhcaRequester *req = &qp->req;
    uint32_t i;

    for (i = qp->sq.ci; i != req->fetched; i++) {
        VhcaSendMeta *m = vhca_req_meta(qp, i);

        if (m->status != VHCA_WC_SUCCESS ||
            vhca_psn_before(psn, vhca_psn_add(m->first_psn, m->npkts))) {
            req->cur = i;
            req->cur_pkt = m->status != VHCA_WC_SUCCESS ||
                           vhca_psn_before(psn, m->first_psn) ? 0 :
                           (uint32_t)vhca_psn_diff(psn, m->first_psn);
            return;
        }
    }
    req->cur = req->fetched;
    req->cur_pkt = 0;
}

/* ---------------------------------------------------------------------- */
/* Window and timer back-off                                              */
/* ---------------------------------------------------------------------- */

/*
 * A go-back-N requester that meets a slower receiver loses packets in
 * bursts; resending the whole window at full speed loses most of it again,
 * and the QP runs out of retries while the peer could have kept up at
 * its own pace.  So, as a real HCA facing a slow peer does (and TCP, RFC
 * 5681), a loss shrinks the window of packets it may have unacknowledged
 * and the ACKs that follow grow it back to VHCA_REQ_MAX_UNACKED: a
 * sequence NAK halves it (multiplicative decrease), a timeout restarts
 * it at one packet (the probe, vhca_completer_retry()); below ssthresh,
 * half the window at the loss, it grows by the packets each ACK retires
 * (slow start), above by one packet per window's worth (additive
 * increase).  Without loss the window stays at VHCA_REQ_MAX_UNACKED and
 * nothing changes.
 */
void vhca_req_window_cut(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                         VhcaRetryCause why)
{
    VhcaRequester *req = &qp->req;
    uint32_t from = req->window;
    uint32_t half = from / 2 > VHCA_REQ_MIN_WINDOW ? from / 2 :
                    VHCA_REQ_MIN_WINDOW;

    req->ssthresh = half;
    req->window = why == VHCA_RETRY_TIMEOUT ? 1 : half;
    req->window_acked = 0;
    if (req->window < from) {
        core->cc_counters[VHCA_CC_CNT_REQ_WINDOW_CUTS]++;
        VHCA_HOOK(core, window_cut, qpn, from, req->window, why);
    }
}

void vhca_req_window_grow(VhcaQp *qp, uint32_t acked)
{
    VhcaRequester *req = &qp->req;

    /* Progress: the timer is T again (as TCP's RTO after a new ACK). */
    req->backoff = 0;
    if (req->window < req->ssthresh) {
        req->window += acked < req->ssthresh - req->window ?
                       acked : req->ssthresh - req->window;
        return;
    }
    req->window_acked += acked;
    while (req->window < VHCA_REQ_MAX_UNACKED &&
           req->window_acked >= req->window) {
        req->window_acked -= req->window;
        req->window++;
    }
    if (req->window >= VHCA_REQ_MAX_UNACKED) {
        req->window = VHCA_REQ_MAX_UNACKED;
        req->window_acked = 0;
    }
}

/*
 * IBTA 9.7.6.1.3 (Local ACK Timeout): the transport timer runs for
 * T = 4.096 us * 2^timeout, and may run up to four times that (the range
 * the qtest test_retry_exceeded checks; the tests cite the rule as
 * C9-140, a number no public text at hand confirmed: docs/compliance.rst,
 * "Sources").  Consecutive timeouts use that
 * latitude: each doubles the timer, T, 2T, 4T, 4T..., so that a peer that
 * is slow to answer gets longer before the next retry is spent; the
 * first ACK that shows progress brings it back to T.
 */
void vhca_req_timer_backoff(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaRequester *req = &qp->req;

    if (req->backoff >= VHCA_REQ_MAX_BACKOFF ||
        vhca_ib_local_ack_timeout_ns(qp->attr.timeout) ==
        VHCA_IB_TIMEOUT_NONE) {
        return;
    }
    req->backoff++;
    core->cc_counters[VHCA_CC_CNT_REQ_TIMER_BACKOFFS]++;
    VHCA_HOOK(core, timer_backoff, qpn, vhca_req_ack_timeout_ns(qp),
              req->backoff);
}

uint64_t vhca_req_ack_timeout_ns(const VhcaQp *qp)
{
    uint64_t timeout = vhca_ib_local_ack_timeout_ns(qp->attr.timeout);

    return timeout == VHCA_IB_TIMEOUT_NONE ? timeout :
           timeout << qp->req.backoff;
}

void vhca_req_restart_timer(VhcaCore *core, VhcaQp *qp)
{
    uint64_t timeout = vhca_req_ack_timeout_ns(qp);

    if (qp->req.rnr_wait) {
        return;
    }
    if (qp->req.una_psn == qp->req.sent_psn ||
        timeout == VHCA_IB_TIMEOUT_NONE) {
        qp->deadline = VHCA_NO_DEADLINE;
        return;
    }
    qp->deadline = vhca_now(core) + timeout;
}

/* ---------------------------------------------------------------------- */
/* Fetching and sending                                                   */
/* ---------------------------------------------------------------------- */

/*
 * REG_MR, BIND_MW and LOCAL_INV act when fetched, so every later WQE
 * (fetched after) sees their effect.  LOCAL_INV waits until every
 * earlier WQE has completed: a retransmission must not meet a buffer
 * invalidated behind it.  BIND_MW need not wait: a window is never a
 * local buffer of an earlier WQE.  Returns false if the WQE must wait.
 */
static bool vhca_req_local(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                           const uint8_t *raw, VhcaSendMeta *m)
{
    if (m->opcode == VHCA_WR_LOCAL_INV) {
        if (qp->req.fetched != qp->sq.ci) {
            return false;
        }
        m->status = vhca_mr_local_inv(core, qpn, qp->pdn, m->imm_or_inv);
    } else if (m->opcode == VHCA_WR_BIND_MW) {
        m->status = vhca_mw_bind(core, qpn, qp->pdn, raw);
    } else {
        m->status = vhca_mr_fast_reg(core, qp->pdn, raw);
    }
    return true;
}

/* Fetch the WQE at req.fetched into the window; false if it must wait. */
static bool vhca_req_fetch(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaRequester *req = &qp->req;
    VHCA_UNINITIALIZED uint8_t raw[VHCA_SEND_WQE_SIZE];
    VhcaSendMeta m;

    /* SQD: what was started finishes, nothing new starts (10.3.1). */
    if (qp->state != VHCA_QPS_RTS || req->fetched == qp->sq.pi ||
        req->fetched - qp->sq.ci >= req->win_size) {
        return false;
    }
    /* Nothing is started behind a WQE that completes in error. */
    if (req->fetched != qp->sq.ci &&
        vhca_req_meta(qp, req->fetched - 1)->status != VHCA_WC_SUCCESS) {
        return false;
    }

    memset(&m, 0, sizeof(m));
    if (vhca_wq_fetch(core, &qp->sq, req->fetched, raw, sizeof(raw))) {
        m.opcode = 0xff;
        m.status = VHCA_WC_LOC_QP_OP_ERR;
        m.vendor_err = VHCA_VENDOR_ERR_WQE_DMA;
    } else {
        m.status = vhca_req_parse(core, qp, raw, &m);
    }

    if (m.status == VHCA_WC_SUCCESS) {
        /* IBTA 10.8.3.5: a fenced WQE waits for earlier READs/atomics. */
        if ((m.flags & VHCA_WQE_FENCE) && req->rd_atomic) {
            return false;
        }
        /* IBTA 9.5: at most max_rd_atomic READs/atomics outstanding. */
        if (vhca_wr_takes_rd_res(m.opcode)) {
            if (req->rd_atomic >= qp->attr.max_rd_atomic) {
                return false;
            }
            req->rd_atomic++;
        }
        m.npkts = vhca_wr_is_atomic(m.opcode) ||
                  vhca_wr_is_placement(m.opcode) ||
                  vhca_qp_is_datagram(qp) ? 1 :
                  vhca_wire_packet_count(m.len, qp->attr.path_mtu);
        if (vhca_wr_is_local(m.opcode)) {
            m.npkts = 0;
            if (!vhca_req_local(core, qpn, qp, raw, &m)) {
                return false;
            }
        }
    }
    if (m.status != VHCA_WC_SUCCESS) {
        VHCA_HOOK(core, err_wqe, qpn, VHCA_RING_SQ, req->fetched,
                  vhca_send_wc_opcode(m.opcode), m.status, m.vendor_err);
        vhca_guest_error(core, VHCA_GUEST_ERR_QP,
                         "QP %u: send WQE %u (opcode %u)%s completes with "
                         "status %u", qpn, req->fetched, m.opcode,
                         m.vendor_err ? " cannot be read: it" : "",
                         m.status);
    }
    m.first_psn = req->next_psn;
    req->next_psn = vhca_psn_add(req->next_psn, m.npkts);
    *vhca_req_meta(qp, req->fetched) = m;
    req->fetched++;
    return true;
}

static VhcaWireMsg vhca_req_msg_kind(uint8_t op)
{
    switch (op) {
    case VHCA_WR_RDMA_WRITE:
        return VHCA_WIRE_MSG_WRITE;
    case VHCA_WR_RDMA_WRITE_WITH_IMM:
        return VHCA_WIRE_MSG_WRITE_IMM;
    case VHCA_WR_SEND_WITH_IMM:
        return VHCA_WIRE_MSG_SEND_IMM;
    case VHCA_WR_SEND_WITH_INV:
        return VHCA_WIRE_MSG_SEND_INV;
    default:
        return VHCA_WIRE_MSG_SEND;
    }
}

/*
 * The one packet of a UD SEND (IBTA 9.4.1, 10.2.5): BTH with the QP's
 * next PSN (not checked by the receiver), DETH with the Q_Key and our
 * QPN, no AckReq.  Goes out along the WQE's address vector.
 */
static uint8_t vhca_req_send_datagram(VhcaCore *core, uint32_t qpn,
                                      VhcaQp *qp, uint32_t index,
                                      const VhcaSendMeta *m,
                                      VhcaWirePacket *pkt)
{
    uint8_t status;

    /*
     * IBTA 10.2.1, C10-93.1.1: a datagram longer than the port's MTU is
     * not sent, and that is no error: the WQE completes successfully, as
     * with rxe.  UD_TX_TOO_LONG counts it, so it does not go unseen.
     */
    if (m->len > vhca_ib_mtu_bytes(vhca_port_active_mtu(core))) {
        vhca_count(core, VHCA_CNT_UD_TX_TOO_LONG, 1);
        return VHCA_WC_SUCCESS;
    }
    status = vhca_req_sg_copy(core, qp, index, m, core->roce_payload, 0,
                              m->len, false);
    if (status != VHCA_WC_SUCCESS) {
        return status;
    }
    if (m->opcode == VHCA_WR_SEND_WITH_IMM) {
        pkt->tp.bth.opcode = VHCA_IB_OPCODE(UD, SEND_ONLY_IMM);
        pkt->tp.imm_data = __builtin_bswap32(m->imm_or_inv);
    } else {
        pkt->tp.bth.opcode = VHCA_IB_OPCODE(UD, SEND_ONLY);
    }
    pkt->tp.bth.solicited = m->flags & VHCA_WQE_SOLICITED;
    pkt->tp.deth.qkey = m->qkey;
    /* The SMI QP is QP0 on the wire, whatever its handle (14.2.4.1). */
    pkt->tp.deth.src_qpn = qp->type == VHCA_QPT_SMI ? VHCA_SMI_QPN : qpn;
    pkt->payload = core->roce_payload;
    pkt->payload_len = m->len;
    vhca_xmit(core, qpn, &m->ud_path, pkt);
    vhca_count(core, VHCA_CNT_UD_TX_PACKETS, 1);
    return VHCA_WC_SUCCESS;
}

/*
 * AckReq every VHCA_REQ_ACKREQ_EVERY packets, and at least twice a
 * window: a window cut below that after a loss must not stall waiting
 * for an ACK the responder was never asked for (IBTA 9.7.2: it may
 * coalesce ACKs until a packet with AckReq).
 */
static uint32_t vhca_req_ackreq_every(const VhcaQp *qp)
{
    uint32_t half = qp->req.window / 2 ? qp->req.window / 2 : 1;

    return half < VHCA_REQ_ACKREQ_EVERY ? half : VHCA_REQ_ACKREQ_EVERY;
}

/*
 * Build and send packet @k of WQE @index.  *@last says whether it was the
 * last packet the WQE sends.  Returns a VHCA_WC_* status.
 */
static uint8_t vhca_req_send_packet(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                    uint32_t index, const VhcaSendMeta *m,
                                    uint32_t k, bool *last)
{
    uint64_t off = (uint64_t)k * vhca_qp_mtu(qp);
    VhcaWirePacket pkt;
    VhcaWireBth *bth = &pkt.tp.bth;
    VhcaWireSegment seg;
    uint8_t status;

    memset(&pkt, 0, sizeof(pkt));
    bth->psn = vhca_psn_add(m->first_psn, k);
    *last = true;

    if (vhca_qp_is_datagram(qp)) {
        return vhca_req_send_datagram(core, qpn, qp, index, m, &pkt);
    }
    switch (m->opcode) {
    case VHCA_WR_RDMA_READ:
        /*
         * IBTA 9.4.4 / C9-92: a READ retried after part of its response
         * arrived asks for the rest only, from the first missing PSN.
         */
        bth->opcode = VHCA_IB_OPCODE(RC, RDMA_READ_REQUEST);
        pkt.tp.reth.va = m->remote_addr + off;
        pkt.tp.reth.rkey = m->rkey;
        pkt.tp.reth.dma_len = m->len - (uint32_t)(off < m->len ? off : m->len);
        /* A probe asks for one response packet (see vhca_completer_retry). */
        if (qp->req.probe && pkt.tp.reth.dma_len > vhca_qp_mtu(qp)) {
            pkt.tp.reth.dma_len = vhca_qp_mtu(qp);
        }
        bth->ack_req = true;
        break;
    case VHCA_WR_ATOMIC_CMP_AND_SWP:
    case VHCA_WR_ATOMIC_FETCH_AND_ADD:
        if (m->opcode == VHCA_WR_ATOMIC_CMP_AND_SWP) {
            bth->opcode = VHCA_IB_OPCODE(RC, COMPARE_SWAP);
            pkt.tp.atomic.swap_add = m->swap;
            pkt.tp.atomic.compare = m->compare_add;
        } else {
            bth->opcode = VHCA_IB_OPCODE(RC, FETCH_ADD);
            pkt.tp.atomic.swap_add = m->compare_add;
        }
        pkt.tp.atomic.va = m->remote_addr;
        pkt.tp.atomic.rkey = m->rkey;
        bth->ack_req = true;
        break;
    case VHCA_WR_FLUSH:
        /* IBTA 1.5 oA19-2: FETH and RETH, no payload. */
        bth->opcode = VHCA_IB_OPCODE(RC, FLUSH);
        pkt.tp.feth.placement = m->flush_type;
        pkt.tp.feth.selectivity = m->flush_level;
        pkt.tp.reth.va = m->remote_addr;
        pkt.tp.reth.rkey = m->rkey;
        pkt.tp.reth.dma_len = m->len;
        bth->ack_req = true;
        break;
    case VHCA_WR_ATOMIC_WRITE:
        /*
         * The 8 bytes go in the order the WQE holds them (a little-endian
         * load stored back little-endian), as rxe sends its WQE's bytes.
         */
        vhca_st_le64(core->roce_payload, m->compare_add);
        bth->opcode = VHCA_IB_OPCODE(RC, ATOMIC_WRITE);
        pkt.tp.reth.va = m->remote_addr;
        pkt.tp.reth.rkey = m->rkey;
        pkt.tp.reth.dma_len = 8;
        pkt.payload = core->roce_payload;
        pkt.payload_len = 8;
        bth->ack_req = true;
        break;
    default:
        if (!vhca_wire_segment(qp->type == VHCA_QPT_UC ?
                               VHCA_IB_TRANSPORT_UC : VHCA_IB_TRANSPORT_RC,
                               vhca_req_msg_kind(m->opcode), m->len,
                               qp->attr.path_mtu, k, &seg)) {
            return VHCA_WC_LOC_QP_OP_ERR;
        }
        status = vhca_req_sg_copy(core, qp, index, m, core->roce_payload,
                                  seg.offset, seg.len, false);
        if (status != VHCA_WC_SUCCESS) {
            return status;
        }
        bth->opcode = seg.opcode;
        pkt.payload = core->roce_payload;
        pkt.payload_len = seg.len;
        *last = k + 1 >= m->npkts;
        if (k == 0 && (m->opcode == VHCA_WR_RDMA_WRITE ||
                       m->opcode == VHCA_WR_RDMA_WRITE_WITH_IMM)) {
            pkt.tp.reth.va = m->remote_addr;
            pkt.tp.reth.rkey = m->rkey;
            pkt.tp.reth.dma_len = m->len;
        }
        if (*last) {
            /* ImmDt carries the WQE's bytes in order (network order). */
            pkt.tp.imm_data = __builtin_bswap32(m->imm_or_inv);
            pkt.tp.inv_rkey = m->imm_or_inv;
            /* IBTA 9.2.3: SE on the last packet of a SEND or WRITE_IMM. */
            bth->solicited = (m->flags & VHCA_WQE_SOLICITED) &&
                             m->opcode != VHCA_WR_RDMA_WRITE;
        }
        /*
         * IBTA 9.7.2: AckReq at the end of a message, and now and then;
         * never on UC, which has no ACKs (9.8).
         */
        bth->ack_req = vhca_qp_is_reliable(qp) &&
                       (*last || qp->req.probe ||
                        qp->req.noack_pkts + 1 >= vhca_req_ackreq_every(qp));
        break;
    }
    qp->req.noack_pkts = bth->ack_req ? 0 : qp->req.noack_pkts + 1;
    /* Annex A14: XRC opcodes, and the target's SRQ in every request. */
    bth->opcode = vhca_qp_wire_opcode(qp, bth->opcode);
    pkt.tp.xrc_srqn = m->xrc_srqn;
    vhca_xmit(core, qpn, &qp->path, &pkt);
    return VHCA_WC_SUCCESS;
}

void vhca_req_sqd_check(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    /* IBTA 10.3.1.4 / 11.6.3.1: SQ Drained once nothing is in flight. */
    if (qp->state == VHCA_QPS_SQD && qp->req.sqd_notify &&
        qp->sq.ci == qp->req.fetched) {
        qp->req.sqd_notify = false;
        vhca_qp_event(core, qpn, VHCA_EVENT_SQ_DRAINED);
    }
}

static bool vhca_req_run_pace(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                              unsigned *budget, bool paced)
{
    VhcaRequester *req = &qp->req;
    bool reliable = vhca_qp_is_reliable(qp);
    uint64_t tx_bytes;

    if (qp->state != VHCA_QPS_RTS && qp->state != VHCA_QPS_SQD) {
        return false;
    }
    for (;;) {
        VhcaSendMeta *m = vhca_req_head(qp);
        uint32_t psn, end;
        uint8_t status;
        bool last;

        /* A WQE that failed its checks completes when it is the head. */
        if (m && m->status != VHCA_WC_SUCCESS) {
            vhca_req_fail(core, qpn, qp, m->status, m->vendor_err);
            return false;
        }
        /* A local operation at the head is done: nothing to wait for. */
        if (m && vhca_wr_is_local(m->opcode) && req->cur != qp->sq.ci) {
            vhca_req_complete_head(core, qpn, qp);
            continue;
        }
        if (req->rnr_wait) {
            break;
        }
        if (req->cur == req->fetched) {
            if (!vhca_req_fetch(core, qpn, qp)) {
                break;
            }
            continue;
        }
        m = vhca_req_meta(qp, req->cur);
        if (m->status != VHCA_WC_SUCCESS) {
            break;
        }
        /* Done when fetched; it completes in order (above, completer). */
        if (vhca_wr_is_local(m->opcode)) {
            req->cur++;
            req->cur_pkt = 0;
            continue;
        }
        psn = vhca_psn_add(m->first_psn, req->cur_pkt);
        if (reliable &&
            (vhca_psn_diff(psn, req->una_psn) >= (int32_t)req->window ||
             (req->probe && psn != req->una_psn))) {
            /* The window is full: the timer watches what fills it. */
            if (qp->deadline == VHCA_NO_DEADLINE) {
                vhca_req_restart_timer(core, qp);
            }
            break;
        }
        if (!*budget) {
            return true;
        }
        /*
         * Its priority paused by the peer (802.1Qbb), even unpaced: a
         * link that was told to stop does not send.  Then held to the
         * DCQCN rate.  The scheduler wakes the QP in time for both.
         */
        if (!vhca_pfc_may_send(core, qp, qp->type == VHCA_QPT_UD ?
                                         &m->ud_path : &qp->path) ||
            (paced && !vhca_cc_may_send(core, qpn, qp))) {
            break;
        }
        (*budget)--;
        /* The bytes vhca_xmit() counts, IP header to ICRC, are paced. */
        tx_bytes = core->counters[VHCA_CNT_RDMA_TX_BYTES];
        status = vhca_req_send_packet(core, qpn, qp, req->cur, m,
                                      req->cur_pkt, &last);
        vhca_cc_sent(core, qpn, qp,
                     core->counters[VHCA_CNT_RDMA_TX_BYTES] - tx_bytes);
        if (status != VHCA_WC_SUCCESS) {
            /* Completes with @status once it is the head. */
            m->status = status;
            continue;
        }
        if (reliable && vhca_psn_before(psn, req->sent_psn)) {
            vhca_count(core, VHCA_CNT_RETRANSMITTED_PKTS, 1);
        }
        end = m->opcode == VHCA_WR_RDMA_READ ?
              vhca_psn_add(m->first_psn, m->npkts) : vhca_psn_add(psn, 1);
        if (vhca_psn_after(end, req->sent_psn)) {
            req->sent_psn = end;
        }
        if (last) {
            req->cur++;
            req->cur_pkt = 0;
            /* UC, UD: done once handed to the wire (IBTA 9.8, 10.8.6). */
            if (!reliable) {
                vhca_req_complete_head(core, qpn, qp);
            }
        } else {
            req->cur_pkt++;
        }
        if (reliable && qp->deadline == VHCA_NO_DEADLINE) {
            vhca_req_restart_timer(core, qp);
        }
    }
    vhca_req_sqd_check(core, qpn, qp);
    return false;
}

bool vhca_req_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                  unsigned *budget)
{
    return vhca_req_run_pace(core, qpn, qp, budget, true);
}

bool vhca_req_run_unpaced(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                          unsigned *budget)
{
    return vhca_req_run_pace(core, qpn, qp, budget, false);
}
