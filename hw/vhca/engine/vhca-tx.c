/*
 * vhca engine: transmission of the transport's packets for every QP type,
 * on either link: the link and network part of a packet from its path
 * (Ethernet, IP and UDP on RoCEv2; LRH and an optional GRH on
 * InfiniBand), the packet built once (vhca_wire_build), and where it
 * goes - to the wire, or looped back to our own receive path when it is
 * addressed to us or to a multicast group one of our QPs joined.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-ib.h"
#include "vhca-transport.h"

/*
 * Our own packet to our own receive path: received like a frame from the
 * wire, parsed once, but not through the demux (it is ours).
 */
static void vhca_tx_loopback(VhcaCore *core, const uint8_t *frame,
                             size_t len)
{
    VhcaWirePacket pkt;
    VhcaWireError err;

    vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
    if (core->cfg.link == VHCA_LINK_IB) {
        err = vhca_wire_parse_lrh(frame, len, &pkt);
    } else {
        err = vhca_wire_parse_net(frame, len, &pkt);
    }
    if (err != VHCA_WIRE_OK) {
        vhca_rx_drop_malformed(core, err);
        return;
    }
    vhca_rx_packet(core, frame, len, &pkt, true);
}

/* The GRH, or on RoCE the IP header, from the path (IBTA 8.3, A17.4). */
static bool vhca_tx_global(VhcaCore *core, const VhcaPath *path,
                           VhcaWireNet *net)
{
    const VhcaGidEntry *sgid = &core->gid_tbl[path->sgid_index %
                                              VHCA_CORE_GID_TBL_LEN_MAX];

    /* The source GID was deleted since MODIFY_QP: nothing to send from. */
    if (path->sgid_index >= core->cfg.gid_tbl_len || !sgid->valid) {
        return false;
    }
    memcpy(net->sgid, sgid->gid, VHCA_GID_LEN);
    memcpy(net->dgid, path->dgid, VHCA_GID_LEN);
    net->traffic_class = path->traffic_class;
    net->hop_limit = path->hop_limit;
    net->flow_label = path->flow_label;
    return true;
}

/* RoCEv2 (annex A17.4): Ethernet, IP and UDP; the one default P_Key. */
static bool vhca_tx_headers_roce(VhcaCore *core, uint32_t qpn,
                                 const VhcaPath *path, VhcaWirePacket *pkt)
{
    VhcaWireNet *net = &pkt->net;

    if (!vhca_tx_global(core, path, net)) {
        return false;
    }
    /*
     * ECN (RFC 3168 section 6.1.1, A17.9.1): with ECN on, every RoCE
     * packet but a CNP says ECT(0), so that a congested queue marks it
     * CE instead of dropping it; the DSCP stays the path's.  With ECN
     * off the byte is the traffic class as given, as before.
     */
    if ((core->cc_flags & VHCA_CC_ECN_TX) &&
        pkt->tp.bth.opcode != VHCA_BTH_OPCODE_CNP) {
        net->traffic_class = (uint8_t)((net->traffic_class &
                                        ~VHCA_ECN_MASK) | VHCA_ECN_ECT0);
    }
    pkt->link = VHCA_WIRE_LINK_ROCE;
    pkt->grh = true;                /* the IP header stands for it */
    memcpy(net->dmac, path->dmac, VHCA_ETH_ALEN);
    memcpy(net->smac, core->mac, VHCA_ETH_ALEN);
    vhca_tx_vlan_tag(core, path, net);
    net->ip_id = core->roce_ip_id++;
    net->udp_sport = path->udp_sport ? path->udp_sport :
                     vhca_wire_udp_sport(path->flow_label, qpn,
                                         path->dest_qpn);
    pkt->tp.bth.pkey = VHCA_DEFAULT_PKEY;
    return true;
}

/*
 * InfiniBand (IBTA 7.7, 8.3): the LRH - VL15 for the SMI QP, for the
 * others the VL the SM's SL2VL table maps the path's SL to - and a GRH
 * if the path has one; the P_Key of the path's table entry.  The port
 * sends only what its state allows (7.2: INIT and ARMED send SMPs only);
 * what it may not send is discarded and counted, as PortXmitDiscards.
 */
static bool vhca_tx_headers_ib(VhcaCore *core, uint32_t qpn,
                               const VhcaPath *path, VhcaWirePacket *pkt)
{
    bool smi = qpn && qpn == core->smi_qpn;
    uint16_t path_mask = (uint16_t)((1u << core->ib.lmc) - 1);
    uint16_t pkey = smi ? VHCA_DEFAULT_PKEY :
                    vhca_ib_pkey_at(core, path->pkey_index);
    bool may_send;

    switch (core->ib.state) {
    case VHCA_PORT_ACTIVE:
        may_send = true;
        break;
    case VHCA_PORT_INIT:
    case VHCA_PORT_ARMED:
        may_send = smi;
        break;
    default:
        may_send = false;
        break;
    }
    pkt->link = VHCA_WIRE_LINK_IB;
    pkt->lrh.vl = smi ? VHCA_IB_VL_SMP : core->ib.sl2vl[path->sl & 0xf];
    pkt->lrh.sl = path->sl & 0xf;
    pkt->lrh.dlid = path->dlid;
    /* No LID yet (the SM's first SMPs): the permissive LID (7.11.1.2). */
    pkt->lrh.slid = core->ib.lid ?
                    (uint16_t)(core->ib.lid | (path->src_path_bits &
                                               path_mask)) :
                    VHCA_IB_LID_PERMISSIVE;
    pkt->grh = path->grh;
    /*
     * 7.6.6: a data packet whose SL maps to VL15 is dropped; a P_Key
     * entry the SM invalidated since (10.9.3) sends nothing either.
     */
    if (!may_send || (!smi && pkt->lrh.vl == VHCA_IB_VL_SMP) ||
        !(pkey & 0x7fff)) {
        vhca_count(core, VHCA_CNT_XMIT_DISCARDS, 1);
        return false;
    }
    if (pkt->grh && !vhca_tx_global(core, path, &pkt->net)) {
        return false;
    }
    pkt->tp.bth.pkey = pkey;
    return true;
}

/* Addressed to this port: a GID of ours, on IB one of our LIDs too. */
static bool vhca_tx_is_ours(const VhcaCore *core, const VhcaWirePacket *pkt)
{
    if (pkt->link == VHCA_WIRE_LINK_IB) {
        return !vhca_ib_lid_is_multicast(pkt->lrh.dlid) &&
               pkt->lrh.dlid != VHCA_IB_LID_PERMISSIVE &&
               vhca_link_ib_dlid_ours(core, &pkt->lrh, pkt->grh) &&
               (!pkt->grh || vhca_gid_is_ours(core, pkt->net.dgid));
    }
    return vhca_gid_is_ours(core, pkt->net.dgid);
}

void vhca_xmit(VhcaCore *core, uint32_t qpn, const VhcaPath *path,
               VhcaWirePacket *pkt)
{
    size_t len;
    bool ok;

    if (core->cfg.link == VHCA_LINK_IB) {
        ok = vhca_tx_headers_ib(core, qpn, path, pkt);
    } else {
        ok = vhca_tx_headers_roce(core, qpn, path, pkt);
    }
    if (!ok) {
        return;
    }
    pkt->tp.bth.dest_qpn = path->dest_qpn;

    len = vhca_wire_build(pkt, core->roce_frame, sizeof(core->roce_frame));
    if (!len) {
        /* IPv4 and IPv6 GIDs mixed in the AV: the packet cannot exist. */
        return;
    }
    vhca_count(core, VHCA_CNT_ROCE_TX_PACKETS, 1);
    /* LRH or IP header to the ICRC, as received packets count. */
    vhca_count(core, VHCA_CNT_RDMA_TX_BYTES,
               len - (pkt->link == VHCA_WIRE_LINK_IB ? VHCA_IB_VCRC_LEN
                                                    : VHCA_ETH_HLEN));
    /*
     * A packet to ourselves goes to our receive path, queued like a
     * received frame, and not to the wire: a NIC loops back traffic to
     * its own addresses internally.
     */
    if (vhca_tx_is_ours(core, pkt)) {
        vhca_tx_loopback(core, core->roce_frame, len);
        return;
    }
    /*
     * Multicast goes to the wire and, if some of our QPs joined the
     * group, to them as well (multicast loopback, as mlx5 does unless
     * the QP blocks it).
     */
    if (pkt->grh && vhca_gid_is_multicast(pkt->net.dgid) &&
        vhca_mcast_find(core, pkt->net.dgid)) {
        vhca_tx_loopback(core, core->roce_frame, len);
    }
    /* No carrier: lost on the wire; the retransmit timer recovers. */
    if (core->link_up && core->ops->send_frame) {
        core->ops->send_frame(core->opaque, core->roce_frame, len);
    }
}
