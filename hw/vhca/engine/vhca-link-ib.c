/*
 * vhca engine: the InfiniBand link layer of the receive path (link=ib,
 * IBTA Vol 1 chapter 7).  Every datagram of the backend is one whole IB
 * packet, LRH to VCRC (docs/specs/vhca.rst, "InfiniBand port").  Here it
 * is checked as a port checks what comes off its link - integrity, the
 * port's state, the destination LID - before the network layer
 * (vhca-net.c, for a packet with a GRH) or the transport's demux
 * (vhca-demux.c) sees it.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vhca-ib.h"
#include "vhca-transport.h"

/*
 * IBTA 7.2, the port states: a DOWN port takes nothing; INIT takes
 * subnet management packets (VL15) only; ARMED takes everything but
 * sends SMPs only (vhca_xmit); ACTIVE does all.
 */
static bool vhca_link_ib_state_takes(const VhcaCore *core,
                                     const VhcaWireLrh *lrh)
{
    switch (core->ib.state) {
    case VHCA_PORT_INIT:
        return lrh->vl == VHCA_IB_VL_SMP;
    case VHCA_PORT_ARMED:
    case VHCA_PORT_ACTIVE:
        return true;
    default:
        return false;
    }
}

/*
 * IBTA 7.11.1: our LIDs are LID .. LID + 2^LMC - 1 (the low LMC bits are
 * path bits, 7.11.1.3).  The permissive LID reaches any port, for
 * subnet management only (7.11.1.2); a multicast LID (7.11.1.1) is ours
 * if one of our QPs joined the group its GRH names - vhca keys groups by
 * MGID, so a multicast packet without a GRH is not taken
 * (docs/limits.rst).
 */
bool vhca_link_ib_dlid_ours(const VhcaCore *core, const VhcaWireLrh *lrh,
                            bool grh)
{
    uint16_t path_mask = (uint16_t)((1u << core->ib.lmc) - 1);

    if (lrh->dlid == VHCA_IB_LID_PERMISSIVE) {
        return lrh->vl == VHCA_IB_VL_SMP;
    }
    if (vhca_ib_lid_is_multicast(lrh->dlid)) {
        return grh;
    }
    return core->ib.lid && (lrh->dlid & ~path_mask) == core->ib.lid;
}

void vhca_link_ib_receive(VhcaCore *core, const uint8_t *buf, size_t len)
{
    VhcaWirePacket pkt;
    VhcaWireError err;

    err = vhca_wire_parse_lrh(buf, len, &pkt);
    if (err != VHCA_WIRE_OK) {
        vhca_rx_drop_malformed(core, err);
        return;
    }
    /*
     * 7.11.1: LID 0 is reserved.  Only the SMA's own traps come from
     * SLID 0 (vhca-trap.c), and never off the link.
     */
    if (!pkt.lrh.slid) {
        vhca_rx_drop(core, VHCA_DROP_MALFORMED, 0);
        return;
    }
    if (!vhca_link_ib_state_takes(core, &pkt.lrh)) {
        vhca_rx_drop(core, VHCA_DROP_PORT_STATE, 0);
        return;
    }
    if (!vhca_link_ib_dlid_ours(core, &pkt.lrh, pkt.grh)) {
        vhca_rx_drop(core, VHCA_DROP_DLID, 0);
        return;
    }
    /* 7.2: the first data packet makes an ARMED port ACTIVE. */
    if (pkt.lrh.vl != VHCA_IB_VL_SMP) {
        vhca_ib_port_rx_data(core);
    }
    /* A GRH names a destination GID: the network layer checks it. */
    if (pkt.grh) {
        if (!vhca_net_receive(core, buf, len, &pkt)) {
            vhca_rx_drop(core, VHCA_DROP_DLID, 0);
        }
        return;
    }
    vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
    vhca_rx_packet(core, buf, len, &pkt, false);
}
