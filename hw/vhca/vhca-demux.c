/*
 * vhca engine: the receive demux that steers RoCEv2 frames to the RDMA
 * engine (docs/specs/vhca.rst, "Receive demux (RoCEv2)").
 *
 * A frame is RoCEv2 for us when it is IPv4 or IPv6 (optionally behind one
 * 802.1Q tag), carries UDP to port 4791 (IBTA Vol 1 A17.2.1) and its
 * destination address is one of our GIDs (an IPv4 address as the GID
 * ::ffff:a.b.c.d, IBTA A17.8) or a multicast group one of our UD QPs
 * joined (ATTACH_MCAST).  Frames come from the wire: every header
 * field is checked against the bytes actually received before it is used.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-internal.h"

#define ETH_P_IPV4              0x0800
#define ETH_P_IPV6              0x86dd
#define ETH_P_8021Q             0x8100
#define VLAN_HLEN               4

#define IPV4_MIN_HLEN           20
#define IPV4_OFF_TOT_LEN        2
#define IPV4_OFF_FRAG           6
#define IPV4_FRAG_MF_OFFSET     0x3fff  /* MF flag and fragment offset */
#define IPV4_OFF_PROTO          9
#define IPV4_OFF_DADDR          16

#define IPV6_HLEN               40
#define IPV6_OFF_PAYLOAD_LEN    4
#define IPV6_OFF_NEXT_HDR       6
#define IPV6_OFF_DADDR          24

#define IPPROTO_UDP_NUM         17
#define UDP_HLEN                8
#define UDP_OFF_DPORT           2

/*
 * Find the L3 payload: on success *l4 points to the UDP header, *l4_len is
 * the UDP length the IP header vouches for, and dst holds the destination
 * address as a GID.
 */
static bool vhca_demux_ipv4(const uint8_t *ip, size_t avail,
                            const uint8_t **l4, size_t *l4_len,
                            uint8_t dst[VHCA_GID_LEN])
{
    size_t ihl, tot_len;

    if (avail < IPV4_MIN_HLEN || (ip[0] >> 4) != 4) {
        return false;
    }
    ihl = (size_t)(ip[0] & 0x0f) * 4;
    tot_len = vhca_ld_be16(ip + IPV4_OFF_TOT_LEN);
    if (ihl < IPV4_MIN_HLEN || tot_len < ihl || tot_len > avail) {
        return false;
    }
    /* Only a first, unfragmented datagram has a UDP header to look at. */
    if (vhca_ld_be16(ip + IPV4_OFF_FRAG) & IPV4_FRAG_MF_OFFSET) {
        return false;
    }
    if (ip[IPV4_OFF_PROTO] != IPPROTO_UDP_NUM) {
        return false;
    }
    memset(dst, 0, 10);
    dst[10] = 0xff;
    dst[11] = 0xff;
    memcpy(dst + 12, ip + IPV4_OFF_DADDR, 4);
    *l4 = ip + ihl;
    *l4_len = tot_len - ihl;
    return true;
}

static bool vhca_demux_ipv6(const uint8_t *ip, size_t avail,
                            const uint8_t **l4, size_t *l4_len,
                            uint8_t dst[VHCA_GID_LEN])
{
    size_t payload_len;

    if (avail < IPV6_HLEN || (ip[0] >> 4) != 6) {
        return false;
    }
    payload_len = vhca_ld_be16(ip + IPV6_OFF_PAYLOAD_LEN);
    if (payload_len > avail - IPV6_HLEN) {
        return false;
    }
    /* RoCEv2 puts UDP right after the IPv6 header: no extension headers. */
    if (ip[IPV6_OFF_NEXT_HDR] != IPPROTO_UDP_NUM) {
        return false;
    }
    memcpy(dst, ip + IPV6_OFF_DADDR, VHCA_GID_LEN);
    *l4 = ip + IPV6_HLEN;
    *l4_len = payload_len;
    return true;
}

bool vhca_gid_is_ours(const VhcaCore *core,
                      const uint8_t gid[VHCA_GID_LEN])
{
    uint32_t i;

    for (i = 0; i < core->cfg.gid_tbl_len; i++) {
        if (core->gid_tbl[i].valid &&
            !memcmp(core->gid_tbl[i].gid, gid, VHCA_GID_LEN)) {
            return true;
        }
    }
    return false;
}

bool vhca_demux_is_roce(const VhcaCore *core, const uint8_t *frame,
                        size_t len)
{
    uint8_t dst[VHCA_GID_LEN];
    const uint8_t *l4;
    size_t l4_len;
    size_t off = 12;
    uint16_t ethertype;
    bool ok;

    if (len < VHCA_ETH_HLEN) {
        return false;
    }
    ethertype = vhca_ld_be16(frame + off);
    off += 2;
    if (ethertype == ETH_P_8021Q) {
        if (len < off + VLAN_HLEN) {
            return false;
        }
        ethertype = vhca_ld_be16(frame + off + 2);
        off += VLAN_HLEN;
    }

    switch (ethertype) {
    case ETH_P_IPV4:
        ok = vhca_demux_ipv4(frame + off, len - off, &l4, &l4_len, dst);
        break;
    case ETH_P_IPV6:
        ok = vhca_demux_ipv6(frame + off, len - off, &l4, &l4_len, dst);
        break;
    default:
        return false;
    }

    if (!ok || l4_len < UDP_HLEN ||
        vhca_ld_be16(l4 + UDP_OFF_DPORT) != VHCA_ROCE_V2_UDP_PORT) {
        return false;
    }
    return vhca_gid_is_ours(core, dst) ||
           (vhca_gid_is_multicast(dst) && vhca_mcast_find(core, dst));
}
