/*
 * vhca engine: the UD responder, for UD QPs, the GSI QP and on the IB
 * port the SMI QP (IBTA Vol 1 9.6, 10.2.5, 11.4.1.1; annex A17.4.5.2 for
 * RoCEv2's GRH area).
 *
 * A datagram is one packet.  Its PSN is not checked (9.7.1: UD has no
 * sequence), and nothing is ever sent back.  Frames the QP must not take
 * are dropped silently and counted:
 *  - Q_Key different from the QP's (for QP1 from 0x80010000): QKEY_DROPS
 *    (10.2.5: dropped silently; QP0 checks no Q_Key, 14.2.4.1);
 *  - no receive WQE posted (in the QP's RQ or its SRQ): NO_RWQE_DROPS
 *    (UD has no RNR NAK, 9.7.5.2.8 is RC only).
 * A datagram the receive WQE cannot hold (the 40-byte GRH area and the
 * payload) completes that WQE with LOC_LEN_ERR and moves the QP to ERR:
 * a receive completion error is fatal to every QP type (10.3.1, 10.8.3.3
 * class D; only send queue errors stop at SQE), as on mlx5.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

#define IPV4_HLEN       20

/*
 * The GRH area (IBTA 11.4.1.1; on RoCEv2 the network header instead of a
 * GRH, as rxe and mlx5 write it and ib_get_gids_from_rdma_hdr() reads
 * it): the IPv6 header as received, or 20 zero bytes and the IPv4 header
 * (its first 20 bytes: the checksum Linux verifies covers those).
 */
static void vhca_ud_grh_area(const VhcaRxFrame *f, uint8_t *grh)
{
    const uint8_t *ip = f->data + f->pkt.l3_offset;

    memset(grh, 0, VHCA_GRH_AREA_LEN);
    /* IB without a GRH: the area is there, its contents undefined. */
    if (!f->pkt.grh && f->pkt.link == VHCA_WIRE_LINK_IB) {
        return;
    }
    if (f->pkt.ipv6) {
        memcpy(grh, ip, VHCA_GRH_AREA_LEN);
    } else {
        memcpy(grh + VHCA_GRH_AREA_LEN - IPV4_HLEN, ip, IPV4_HLEN);
    }
}

static void vhca_ud_packet(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                    const VhcaRxFrame *f)
{
    const VhcaWirePacket *pkt = &f->pkt;
    uint8_t op = pkt->tp.bth.opcode & ~VHCA_IB_TRANSPORT_MASK;
    uint32_t qkey = qp->type == VHCA_QPT_GSI ? VHCA_GSI_QKEY : qp->attr.qkey;
    uint8_t grh[VHCA_GRH_AREA_LEN];
    uint32_t vendor_err = 0;
    VhcaCompletion wc;
    uint8_t status;

    if (qp->type != VHCA_QPT_SMI && pkt->tp.deth.qkey != qkey) {
        if (core->cfg.link == VHCA_LINK_IB &&
            core->ib.qkey_violations < 0xffff) {
            core->ib.qkey_violations++;     /* PortInfo, 14.2.5.6 */
        }
        vhca_rx_drop(core, VHCA_DROP_QKEY, qpn);
        return;
    }
    switch (vhca_rq_take(core, qp, &status, &vendor_err)) {
    case VHCA_RQ_EMPTY:
        vhca_rx_drop(core, VHCA_DROP_NO_RWQE, qpn);
        return;
    case VHCA_RQ_BAD:
        vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV, status, vendor_err);
        return;
    case VHCA_RQ_TAKEN:
        break;
    }
    if ((uint64_t)VHCA_GRH_AREA_LEN + pkt->payload_len > qp->resp.rwqe_cap) {
        vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV,
                            VHCA_WC_LOC_LEN_ERR, 0);
        return;
    }
    vhca_ud_grh_area(f, grh);
    status = vhca_resp_scatter(core, qp, 0, grh, sizeof(grh));
    if (status == VHCA_WC_SUCCESS) {
        status = vhca_resp_scatter(core, qp, VHCA_GRH_AREA_LEN, pkt->payload,
                                   pkt->payload_len);
    }
    if (status != VHCA_WC_SUCCESS) {
        vhca_resp_fail_rwqe(core, qpn, qp, VHCA_WC_RECV, status, 0);
        return;
    }

    memset(&wc, 0, sizeof(wc));
    wc.byte_len = VHCA_GRH_AREA_LEN + pkt->payload_len;
    wc.status = VHCA_WC_SUCCESS;
    wc.opcode = VHCA_WC_RECV;
    wc.src_qp = pkt->tp.deth.src_qpn;
    if (pkt->link == VHCA_WIRE_LINK_IB) {
        /* IBTA 11.4.2.1: the LRH's SLID and SL, the DLID's path bits. */
        wc.src_qp |= (uint32_t)f->pkey_index << 24;
        wc.vendor_err = pkt->lrh.slid | (uint32_t)pkt->lrh.sl << 16 |
                        (uint32_t)(pkt->lrh.dlid &
                                   ((1u << core->ib.lmc) - 1)) << 24;
        wc.flags = pkt->grh ? VHCA_CQE_GRH : 0;
    } else {
        wc.flags = VHCA_CQE_GRH | (pkt->ipv6 ? VHCA_CQE_NET_IPV6
                                             : VHCA_CQE_NET_IPV4);
        /*
         * The tag (vlan_tci, in vendor_err's place): the kernel finds
         * the GID entry to answer from by the VLAN the request came on
         * (ib_init_ah_attr_from_wc()), as mlx5 and rxe report it.
         */
        if (pkt->net.vlan) {
            wc.flags |= VHCA_CQE_VLAN;
            wc.vendor_err = pkt->net.vlan_tci;
        }
    }
    wc.solicited = pkt->tp.bth.solicited;

    if (vhca_op_has_imm(op)) {
        wc.flags |= VHCA_CQE_WITH_IMM;
        wc.imm_or_inv = __builtin_bswap32(pkt->tp.imm_data);
    }
    vhca_resp_complete_recv(core, qpn, qp, &wc);
    vhca_count(core, VHCA_CNT_UD_RX_PACKETS, 1);
}

bool vhca_ud_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp, unsigned *budget)
{
    bool more = false;
    VhcaRxFrame *f;

    while ((f = vhca_recv_next(core, qpn, qp, budget, &more))) {
        vhca_ud_packet(core, qpn, qp, f);
        vhca_rx_frame_free(f);
    }
    return more;
}
