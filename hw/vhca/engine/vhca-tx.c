/*
 * vhca engine: transmission of RoCEv2 packets for every QP type: the
 * network part of a packet from its path, the frame built once
 * (vhca_wire_build), and where it goes - to the wire, or looped back to
 * our own receive path when it is addressed to one of our GIDs or to a
 * multicast group one of our QPs joined.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

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
    err = vhca_wire_parse_net(frame, len, &pkt);
    if (err != VHCA_WIRE_OK) {
        vhca_rx_drop_malformed(core, err);
        return;
    }
    vhca_rx_packet(core, frame, len, &pkt, true);
}

void vhca_xmit(VhcaCore *core, uint32_t qpn, const VhcaPath *path,
               VhcaWirePacket *pkt)
{
    const VhcaGidEntry *sgid = &core->gid_tbl[path->sgid_index %
                                              VHCA_CORE_GID_TBL_LEN_MAX];
    VhcaWireNet *net = &pkt->net;
    size_t len;

    /* The source GID was deleted since MODIFY_QP: nothing to send from. */
    if (path->sgid_index >= core->cfg.gid_tbl_len || !sgid->valid) {
        return;
    }
    memcpy(net->dmac, path->dmac, VHCA_ETH_ALEN);
    memcpy(net->smac, core->mac, VHCA_ETH_ALEN);
    memcpy(net->sgid, sgid->gid, VHCA_GID_LEN);
    memcpy(net->dgid, path->dgid, VHCA_GID_LEN);
    net->vlan = false;
    net->traffic_class = path->traffic_class;
    net->hop_limit = path->hop_limit;
    net->flow_label = path->flow_label;
    net->ip_id = core->roce_ip_id++;
    net->udp_sport = path->udp_sport ? path->udp_sport :
                     vhca_wire_udp_sport(path->flow_label, qpn,
                                         path->dest_qpn);
    pkt->tp.bth.pkey = VHCA_DEFAULT_PKEY;
    pkt->tp.bth.dest_qpn = path->dest_qpn;

    len = vhca_wire_build(pkt, core->roce_frame, sizeof(core->roce_frame));
    if (!len) {
        /* IPv4 and IPv6 GIDs mixed in the AV: the packet cannot exist. */
        return;
    }
    vhca_count(core, VHCA_CNT_ROCE_TX_PACKETS, 1);
    /*
     * A packet to one of our own GIDs goes to our receive path, queued
     * like a received frame, and not to the wire: a NIC loops back
     * traffic to its own addresses internally.
     */
    if (vhca_gid_is_ours(core, net->dgid)) {
        vhca_tx_loopback(core, core->roce_frame, len);
        return;
    }
    /*
     * Multicast goes to the wire and, if some of our QPs joined the
     * group, to them as well (multicast loopback, as mlx5 does unless
     * the QP blocks it).
     */
    if (vhca_gid_is_multicast(net->dgid) &&
        vhca_mcast_find(core, net->dgid)) {
        vhca_tx_loopback(core, core->roce_frame, len);
    }
    /* No carrier: lost on the wire; the retransmit timer recovers. */
    if (core->link_up && core->ops->send_frame) {
        core->ops->send_frame(core->opaque, core->roce_frame, len);
    }
}
