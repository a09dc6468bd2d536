/*
 * vhca engine: the link layer of the receive path, where every frame
 * from the backend enters (docs/specs/vhca.rst, "Receive demux
 * (RoCEv2)").  On the Ethernet port a frame is RoCEv2 for the network
 * layer (vhca-net.c) or plain Ethernet for the NIC's RX ring
 * (vhca-eth.c).  On the InfiniBand port every datagram is an IB packet
 * for the IB link layer (vhca-link-ib.c).  This is the seam: nothing
 * above it knows which link a packet came over.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vhca-transport.h"

bool vhca_core_can_receive(const VhcaCore *core)
{
    /*
     * Never hold frames back in the backend: RoCE frames must not wait
     * behind an empty Ethernet ring, and a NIC without a buffer drops.
     */
    (void)core;
    return true;
}

VhcaRxResult vhca_core_receive(VhcaCore *core, const uint8_t *buf,
                               size_t len)
{
    VhcaWirePacket pkt;

    if (core->cfg.link == VHCA_LINK_IB) {
        vhca_link_ib_receive(core, buf, len);
        return VHCA_RX_ROCE;
    }
    /* Bad frames from the wire are counted, not logged as guest errors. */
    if (len < VHCA_ETH_HLEN) {
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        return VHCA_RX_ERROR;
    }

    /*
     * MAC Control (IEEE 802.3 annex 31A), never tagged: PFC frames
     * (802.1Qbb) for the MAC, which consumes every one of them.
     */
    if (vhca_ld_be16(buf + 2 * VHCA_ETH_ALEN) == VHCA_ETH_P_MAC_CONTROL) {
        return vhca_pfc_receive(core, buf, len);
    }

    /*
     * The frame is parsed once, into @pkt: up to the UDP port here, the
     * rest by the transport's receive path if the packet is ours.
     */
    if (vhca_wire_parse_net(buf, len, &pkt) == VHCA_WIRE_OK &&
        vhca_net_receive(core, buf, len, &pkt)) {
        return VHCA_RX_ROCE;
    }
    return vhca_eth_receive(core, buf, len);
}
