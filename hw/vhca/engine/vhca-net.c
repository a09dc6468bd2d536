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
 * A RoCEv2 packet is ours when its destination address is one of our
 * GIDs (an IPv4 address as the GID ::ffff:a.b.c.d, IBTA A17.4.1.1) or a
 * multicast group one of our UD QPs joined (ATTACH_MCAST).
 */
static bool vhca_demux_is_ours(const VhcaCore *core,
                               const VhcaWirePacket *pkt)
{
    return vhca_gid_is_ours(core, pkt->net.dgid) ||
           (vhca_gid_is_multicast(pkt->net.dgid) &&
            vhca_mcast_find(core, pkt->net.dgid));
}

bool vhca_net_receive(VhcaCore *core, const uint8_t *frame, size_t len,
                      VhcaWirePacket *pkt)
{
    if (!vhca_demux_is_ours(core, pkt)) {
        return false;
    }
    vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
    vhca_rx_packet(core, frame, len, pkt, false);
    return true;
}
