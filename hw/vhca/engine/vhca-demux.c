/*
 * vhca engine: the transport's demux - a received packet's IB transport
 * headers are parsed, checked against what can be checked without the
 * QP's progress (P_Key, destination QP, its transport and state, the
 * queue bounds) and the packet is queued on its QP (or on each QP of its
 * multicast group) for the deferred pass (vhca-pass.c).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-ib.h"
#include "vhca-transport.h"

/*
 * IBTA 9.6.1.1: only P_Keys in our table are accepted.  The RoCE port's
 * table holds the default P_Key alone (annex A17.2).
 */
static bool vhca_rx_pkey_ok(uint16_t pkey)
{
    return (pkey & 0x7fff) == (VHCA_DEFAULT_PKEY & 0x7fff);
}

/* A P_Key check failed: dropped, and counted in PortInfo too (14.2.5.6). */
static void vhca_rx_drop_pkey(VhcaCore *core, uint32_t qpn)
{
    if (core->cfg.link == VHCA_LINK_IB && core->ib.pkey_violations < 0xffff) {
        core->ib.pkey_violations++;
    }
    vhca_rx_drop(core, VHCA_DROP_PKEY, qpn);
}

/*
 * The IB port's checks before a QP is looked up (IBTA 7.6.5, 9.6.1.1,
 * 10.9.3): VL15 carries subnet management packets, to QP0 only, and QP0
 * takes nothing else; a packet to QP0 is not checked against the P_Key
 * table (it always carries the default P_Key, 14.2.2), any other must
 * match an entry.  Maps DestQP 0 to the SMI QP's handle, which is no
 * address of its own.  False: dropped.
 */
static bool vhca_rx_ib_check(VhcaCore *core, const VhcaWirePacket *pkt,
                             uint32_t *qpn, uint16_t *pkey_index)
{
    bool smi = pkt->tp.bth.dest_qpn == VHCA_SMI_QPN;

    if (smi != (pkt->lrh.vl == VHCA_IB_VL_SMP)) {
        vhca_rx_drop(core, VHCA_DROP_VL15, pkt->tp.bth.dest_qpn);
        return false;
    }
    if (smi) {
        *qpn = core->smi_qpn;
        *pkey_index = 0;
        return true;
    }
    if (!vhca_ib_pkey_find(core, pkt->tp.bth.pkey, pkey_index)) {
        vhca_rx_drop_pkey(core, pkt->tp.bth.dest_qpn);
        return false;
    }
    /*
     * 14.2.4.1: on the wire the SMI QP is QP0 alone.  The handle
     * CREATE_QP gave it names it to doorbells and commands; a packet
     * naming it would reach QP0 on a data VL, past the rule above.
     */
    if (core->smi_qpn && pkt->tp.bth.dest_qpn == core->smi_qpn) {
        vhca_rx_drop(core, VHCA_DROP_NO_QP, pkt->tp.bth.dest_qpn);
        return false;
    }
    return true;
}

/*
 * IBTA 10.9.3: a QP belongs to the partition of its P_Key index and
 * takes only that partition's packets; QP1 serves every partition and
 * QP0 none (the table check above is theirs).
 */
static bool vhca_rx_qp_pkey_ok(const VhcaCore *core, const VhcaQp *qp,
                               uint16_t pkey)
{
    if (core->cfg.link != VHCA_LINK_IB || qp->type == VHCA_QPT_GSI ||
        qp->type == VHCA_QPT_SMI) {
        return true;
    }
    return vhca_ib_pkey_match(vhca_ib_pkey_at(core, qp->attr.pkey_index),
                              pkey);
}

/*
 * IBTA 9.6.1: each QP type takes its own transport's opcodes only; of
 * XRC's, the target takes the requests and the initiator the responses
 * (annex A14).
 */
static bool vhca_qp_takes(const VhcaQp *qp, uint8_t opcode,
                          const VhcaWireOpcodeInfo *info)
{
    switch (opcode & VHCA_IB_TRANSPORT_MASK) {
    case VHCA_IB_TRANSPORT_XRC:
        return qp->type == ((info->flags & VHCA_WIRE_OPF_REQUEST) ?
                            VHCA_QPT_XRC_TGT : VHCA_QPT_XRC_INI);
    case VHCA_IB_TRANSPORT_RC:
        return qp->type == VHCA_QPT_RC;
    case VHCA_IB_TRANSPORT_UC:
        return qp->type == VHCA_QPT_UC;
    case VHCA_IB_TRANSPORT_UD:
        return vhca_qp_is_datagram(qp);
    default:
        return false;
    }
}

/*
 * The largest payload a packet for @qp may carry: its path MTU, or the
 * port's active MTU if that is larger (a UD QP has no path MTU).  Up to
 * it, a packet goes to the QP, whose transport judges the length against
 * the path MTU (an RC responder NAKs it, IBTA 9.7.5.2.4); beyond it no
 * sender this port talks to may go, and a frame that does is dropped
 * before it costs the device memory.
 */
static uint32_t vhca_rx_max_payload(const VhcaCore *core, const VhcaQp *qp)
{
    uint32_t path = vhca_qp_mtu(qp);
    uint32_t port = vhca_ib_mtu_bytes(vhca_port_active_mtu(core));

    return path > port ? path : port;
}

/*
 * Queue a copy of @frame (parsed into @pkt) on @q of QP @qpn and mark the
 * QP.  Only the IP datagram up to the end of the RoCE packet is kept:
 * nothing of a frame's Ethernet header is needed any more, and bytes
 * past the UDP length (or the IP length) are not the packet's.
 */
static void vhca_rx_enqueue(VhcaCore *core, uint32_t qpn, const VhcaQp *qp,
                            VhcaFrameQueue *q, const uint8_t *frame,
                            size_t len, const VhcaWirePacket *pkt,
                            uint16_t pkey_index)
{
    uint32_t start = pkt->l3_offset;
    uint64_t end = (uint64_t)pkt->payload_offset + pkt->payload_len +
                   pkt->tp.bth.pad + VHCA_IB_ICRC_LEN;
    uint32_t max_frames = VHCA_RXQ_MAX_QP;
    uint32_t max_bytes = VHCA_RXQ_MAX_QP_BYTES;
    uint32_t size;
    VhcaRxFrame *f;

    if (!vhca_rx_qp_pkey_ok(core, qp, pkt->tp.bth.pkey)) {
        vhca_rx_drop_pkey(core, qpn);
        return;
    }
    if (pkt->payload_len > vhca_rx_max_payload(core, qp)) {
        vhca_rx_drop(core, VHCA_DROP_OVERSIZE, qpn);
        return;
    }
    /* The parser vouches for this; a frame that breaks it is dropped. */
    if (end > len || start > pkt->payload_offset) {
        vhca_rx_drop(core, VHCA_DROP_MALFORMED, qpn);
        return;
    }
    size = vhca_rx_buf_size((uint32_t)(end - start));
    if (!size) {
        vhca_rx_drop(core, VHCA_DROP_OVERSIZE, qpn);
        return;
    }
    if (vhca_pfc_lossless(core, pkt)) {
        max_frames = VHCA_PFC_RXQ_MAX_QP;
        max_bytes = VHCA_PFC_RXQ_MAX_QP_BYTES;
    }
    if (q->count >= max_frames || core->rx_queued >= VHCA_RXQ_MAX_DEV ||
        q->bytes + size > max_bytes ||
        core->rx_queued_bytes + size > VHCA_RXQ_MAX_DEV_BYTES) {
        /* A real HCA's receive buffer is full too: the sender retries. */
        vhca_rx_drop(core, VHCA_DROP_QUEUE_FULL, qpn);
        return;
    }
    f = vhca_rx_buf_get(core, size);
    if (!f) {
        vhca_rx_drop(core, VHCA_DROP_NO_MEMORY, qpn);
        return;
    }
    memcpy(f->data, frame + start, end - start);
    f->pkey_index = (uint8_t)pkey_index;
    f->pkt = *pkt;
    f->pkt.l3_offset -= start;
    f->pkt.l4_offset -= start;
    f->pkt.l4_len = (uint32_t)(end - pkt->l4_offset);
    f->pkt.bth_offset -= start;
    f->pkt.payload_offset -= start;
    f->pkt.payload = f->data + f->pkt.payload_offset;
    vhca_frameq_push(core, q, f);
    vhca_sched_kick(core, qpn);
}

/*
 * A UD datagram to DestQP 0xFFFFFF (IBTA 10.5.2.1): one copy for each of
 * our QPs in the group of its destination GID.  @looped: our own, looped
 * back inside the device; a copy of it coming back from the wire (a
 * backend that echoes multicast) is not delivered twice.
 */
static void vhca_rx_mcast(VhcaCore *core, const uint8_t *frame, size_t len,
                          const VhcaWirePacket *pkt, bool looped,
                          uint16_t pkey_index)
{
    const VhcaMcastGroup *g = NULL;
    uint32_t qpns[VHCA_MAX_MCAST_QPS];
    uint32_t i, n;

    if (!looped && pkt->link == VHCA_WIRE_LINK_ROCE &&
        !memcmp(pkt->net.smac, core->mac, VHCA_ETH_ALEN)) {
        vhca_rx_drop(core, VHCA_DROP_MCAST_ECHO, VHCA_MCAST_QPN);
        return;
    }
    if (vhca_gid_is_multicast(pkt->net.dgid)) {
        g = vhca_mcast_find(core, pkt->net.dgid);
    }
    if (!g) {
        vhca_rx_drop(core, VHCA_DROP_MCAST_NO_MEMBER, VHCA_MCAST_QPN);
        return;
    }
    n = g->nqps;
    memcpy(qpns, g->qpns, n * sizeof(qpns[0]));
    for (i = 0; i < n; i++) {
        VhcaQp *qp = vhca_qp_lookup(core, qpns[i]);

        if (!qp || !vhca_qp_receives(qp)) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpns[i]);
            continue;
        }
        vhca_rx_enqueue(core, qpns[i], qp, &qp->rxq_req, frame, len, pkt,
                        pkey_index);
    }
}

/*
 * Check what can be checked without the QP's progress (integrity and
 * headers, P_Key, QP, transport, state) and queue the packet on its QP;
 * the rest happens in the deferred pass.
 */
void vhca_rx_packet(VhcaCore *core, const uint8_t *frame, size_t len,
                    VhcaWirePacket *pkt, bool looped)
{
    const VhcaWireOpcodeInfo *info;
    uint16_t pkey_index = 0;
    VhcaFrameQueue *q;
    VhcaWireError err;
    uint32_t qpn;
    VhcaQp *qp;

    err = vhca_wire_parse_ib(frame, len, pkt);
    if (err != VHCA_WIRE_OK) {
        vhca_rx_drop_malformed(core, err);
        return;
    }
    vhca_count(core, VHCA_CNT_RDMA_RX_BYTES,
               pkt->payload_offset + pkt->payload_len + pkt->tp.bth.pad +
               VHCA_IB_ICRC_LEN -
               (pkt->link == VHCA_WIRE_LINK_IB ? 0 : pkt->l3_offset));
    /* A switch's congestion mark (RFC 3168 section 5), CNPs included. */
    if (vhca_wire_ecn(pkt) == VHCA_ECN_CE) {
        core->cc_counters[VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS]++;
    }
    qpn = pkt->tp.bth.dest_qpn;
    if (pkt->link == VHCA_WIRE_LINK_IB) {
        if (!vhca_rx_ib_check(core, pkt, &qpn, &pkey_index)) {
            return;
        }
    } else if (!vhca_rx_pkey_ok(pkt->tp.bth.pkey)) {
        vhca_rx_drop_pkey(core, qpn);
        return;
    }
    /* A CNP is for the reaction point, not for the QP's transport. */
    if (pkt->tp.bth.opcode == VHCA_BTH_OPCODE_CNP) {
        vhca_cc_rx_cnp(core, pkt);
        return;
    }
    info = vhca_wire_opcode_info(pkt->tp.bth.opcode);
    if ((pkt->tp.bth.opcode & VHCA_IB_TRANSPORT_MASK) ==
        VHCA_IB_TRANSPORT_UD && qpn == VHCA_MCAST_QPN) {
        vhca_rx_mcast(core, frame, len, pkt, looped, pkey_index);
        return;
    }
    qp = vhca_qp_lookup(core, qpn);
    /* IBTA 9.6.1: unknown QP, or a service the QP does not run: drop. */
    if (!qp || !vhca_qp_takes(qp, pkt->tp.bth.opcode, info)) {
        vhca_rx_drop(core, VHCA_DROP_NO_QP, qpn);
        return;
    }
    if (info->flags & VHCA_WIRE_OPF_REQUEST) {
        if (!vhca_qp_receives(qp)) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpn);
            return;
        }
        q = &qp->rxq_req;
    } else {
        if (qp->state != VHCA_QPS_RTS && qp->state != VHCA_QPS_SQD) {
            vhca_rx_drop(core, VHCA_DROP_QP_STATE, qpn);
            return;
        }
        q = &qp->rxq_resp;
    }
    vhca_rx_enqueue(core, qpn, qp, q, frame, len, pkt, pkey_index);
    /*
     * After the frame is queued (a copy): the CNP may go out through
     * the same bounce buffer that looped @frame back to us.
     */
    if (vhca_wire_ecn(pkt) == VHCA_ECN_CE) {
        vhca_cc_rx_marked(core, qpn, qp, pkt);
    }
}
