/*
 * vhca engine: the network layer of the receive path - our addresses
 * (the GID table; IBTA A17.4.1.1 maps IPv4 addresses into it) and the
 * check that a packet is for one of them - between the link layer
 * (vhca-link.c) and the transport's demux (vhca-demux.c).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdio.h>
#include <string.h>

#include "vhca-transport.h"

void vhca_gid_tbl_update_top(VhcaCore *core)
{
    uint32_t top = core->cfg.gid_tbl_len;

    while (top && !core->gid_tbl[top - 1].valid) {
        top--;
    }
    core->gid_tbl_top = top;
}

bool vhca_gid_is_ours(const VhcaCore *core,
                      const uint8_t gid[VHCA_GID_LEN])
{
    uint32_t i;

    for (i = 0; i < core->gid_tbl_top; i++) {
        if (core->gid_tbl[i].valid &&
            !memcmp(core->gid_tbl[i].gid, gid, VHCA_GID_LEN)) {
            return true;
        }
    }
    return false;
}

/*
 * The VLAN of a frame and of a GID entry, as one number: the VID, 0 for
 * the port's untagged VLAN.  A frame with VID 0 carries a priority tag
 * and belongs to the untagged VLAN (IEEE 802.1Q-2018 9.6, Table 9-2),
 * so an untagged entry takes it, and a priority-tagged entry (a VLAN
 * interface with VID 0) takes untagged frames too.
 */
static uint16_t vhca_frame_vid(const VhcaWireNet *net)
{
    return net->vlan ? (net->vlan_tci & VHCA_VLAN_VID_MASK) : 0;
}

static uint16_t vhca_gid_vid(const VhcaGidEntry *entry)
{
    return entry->vlan ? entry->vid : 0;
}

uint8_t vhca_frame_vlan_priority(const VhcaWirePacket *pkt)
{
    if (pkt->link != VHCA_WIRE_LINK_ROCE) {
        return 0;
    }
    return vhca_wire_priority(&pkt->net);
}

/*
 * A GID may be in the table more than once, on different VLANs (an
 * IPv6 link-local address is the same on eth0 and eth0.100, both having
 * the port's MAC): the frame's entry is the one with its GID on its
 * VLAN.
 */
int vhca_gid_rx_index(const VhcaCore *core, const VhcaWirePacket *pkt)
{
    uint16_t vid = vhca_frame_vid(&pkt->net);
    int match = VHCA_GID_RX_NOT_OURS;
    uint32_t i;

    for (i = 0; i < core->gid_tbl_top; i++) {
        const VhcaGidEntry *entry = &core->gid_tbl[i];

        if (entry->valid &&
            !memcmp(entry->gid, pkt->net.dgid, VHCA_GID_LEN)) {
            if (vhca_gid_vid(entry) == vid) {
                return (int)i;
            }
            match = VHCA_GID_RX_OTHER_VLAN;
        }
    }
    return match;
}

/*
 * A RoCEv2 packet is ours when its destination address is one of our
 * GIDs (an IPv4 address as the GID ::ffff:a.b.c.d, IBTA A17.4.1.1) or a
 * multicast group one of our UD QPs joined (ATTACH_MCAST).  A unicast
 * packet must come on its GID entry's VLAN (IEEE 802.1Q-2018 8.6.2:
 * a VLAN's frames reach only that VLAN's members): tagged with the
 * entry's VID, or untagged for an untagged entry.  One for our GID on
 * another VLAN is dropped and counted, not passed to the Ethernet ring,
 * which would not take it either.  Multicast groups are not bound to a
 * VLAN (ATTACH_MCAST names none): taken tagged or not.
 */
bool vhca_net_receive(VhcaCore *core, const uint8_t *frame, size_t len,
                      VhcaWirePacket *pkt)
{
    char detail[24];

    if (vhca_gid_is_multicast(pkt->net.dgid)) {
        if (!vhca_mcast_find(core, pkt->net.dgid)) {
            return false;
        }
    } else {
        switch (vhca_gid_rx_index(core, pkt)) {
        case VHCA_GID_RX_NOT_OURS:
            return false;
        case VHCA_GID_RX_OTHER_VLAN:
            vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
            snprintf(detail, sizeof(detail), "frame VID %u",
                     vhca_frame_vid(&pkt->net));
            vhca_rx_drop_detail(core, VHCA_DROP_VLAN,
                                pkt->net.vlan ? detail : "untagged frame", 0);
            return true;
        default:
            break;
        }
    }
    vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
    vhca_rx_packet(core, frame, len, pkt, false);
    return true;
}
