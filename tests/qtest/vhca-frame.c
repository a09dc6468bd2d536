/*
 * Frame builders for the vhca qtests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca_hw.h"
#include "vhca-frame.h"

const uint8_t vhca_peer_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
const uint8_t vhca_bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

#define IPV4_HLEN       20
#define IPV6_HLEN       40
#define UDP_HLEN        8
#define BTH_LEN         12
#define ICRC_LEN        4
#define IPPROTO_UDP_NUM 17

static size_t eth_header(uint8_t *buf, const uint8_t dst[6],
                         uint16_t ethertype)
{
    memcpy(buf, dst, 6);
    memcpy(buf + 6, vhca_peer_mac, 6);
    stw_be_p(buf + 12, ethertype);
    return VHCA_ETH_HLEN;
}

static void fill_pattern(uint8_t *p, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = seed + i * 7;
    }
}

size_t vhca_frame_eth(uint8_t *buf, const uint8_t dst[6],
                      uint16_t ethertype, size_t payload_len, uint8_t seed)
{
    size_t hlen = eth_header(buf, dst, ethertype);

    fill_pattern(buf + hlen, payload_len, seed);
    return hlen + payload_len;
}

/* One's complement sum (RFC 1071), folded at the end by the caller. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += lduw_be_p(p + i);
    }
    if (len & 1) {
        sum += p[len - 1] << 8;
    }
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

/* UDP header and payload at @udp; pseudo-header sum supplied. */
static void udp_fill(uint8_t *udp, uint32_t pseudo_sum, uint16_t dport,
                     size_t payload_len)
{
    uint16_t udp_len = UDP_HLEN + payload_len;
    uint8_t *payload = udp + UDP_HLEN;
    uint16_t csum;

    stw_be_p(udp, 49152);
    stw_be_p(udp + 2, dport);
    stw_be_p(udp + 4, udp_len);
    stw_be_p(udp + 6, 0);
    fill_pattern(payload, payload_len, 0x3c);
    if (dport == VHCA_ROCE_V2_UDP_PORT && payload_len >= BTH_LEN + ICRC_LEN) {
        /* BTH: RC SEND_ONLY, P_Key 0xffff, dest QP 1, PSN 0. */
        memset(payload, 0, BTH_LEN);
        payload[0] = 0x04;
        stw_be_p(payload + 2, 0xffff);
        stl_be_p(payload + 4, 1);
    }
    csum = csum_fold(csum_add(pseudo_sum + IPPROTO_UDP_NUM + udp_len,
                              udp, udp_len));
    stw_be_p(udp + 6, csum ? csum : 0xffff);
}

size_t vhca_frame_udp4(uint8_t *buf, const uint8_t dst_mac[6],
                       const uint8_t src_ip[4], const uint8_t dst_ip[4],
                       uint16_t dport, size_t payload_len)
{
    uint8_t *ip = buf + eth_header(buf, dst_mac, VHCA_ETHERTYPE_IPV4);
    uint16_t total = IPV4_HLEN + UDP_HLEN + payload_len;
    uint32_t pseudo = 0;

    memset(ip, 0, IPV4_HLEN);
    ip[0] = 0x45;                       /* version 4, IHL 5 */
    stw_be_p(ip + 2, total);
    stw_be_p(ip + 6, 0x4000);           /* DF, as RoCEv2 requires */
    ip[8] = 64;                         /* TTL */
    ip[9] = IPPROTO_UDP_NUM;
    memcpy(ip + 12, src_ip, 4);
    memcpy(ip + 16, dst_ip, 4);
    stw_be_p(ip + 10, csum_fold(csum_add(0, ip, IPV4_HLEN)));

    pseudo = csum_add(pseudo, src_ip, 4);
    pseudo = csum_add(pseudo, dst_ip, 4);
    udp_fill(ip + IPV4_HLEN, pseudo, dport, payload_len);
    return VHCA_ETH_HLEN + total;
}

size_t vhca_frame_udp6(uint8_t *buf, const uint8_t dst_mac[6],
                       const uint8_t src_ip[16], const uint8_t dst_ip[16],
                       uint16_t dport, size_t payload_len)
{
    uint8_t *ip = buf + eth_header(buf, dst_mac, VHCA_ETHERTYPE_IPV6);
    uint16_t plen = UDP_HLEN + payload_len;
    uint32_t pseudo = 0;

    memset(ip, 0, IPV6_HLEN);
    ip[0] = 0x60;                       /* version 6 */
    stw_be_p(ip + 4, plen);
    ip[6] = IPPROTO_UDP_NUM;            /* next header */
    ip[7] = 64;                         /* hop limit */
    memcpy(ip + 8, src_ip, 16);
    memcpy(ip + 24, dst_ip, 16);

    pseudo = csum_add(pseudo, src_ip, 16);
    pseudo = csum_add(pseudo, dst_ip, 16);
    udp_fill(ip + IPV6_HLEN, pseudo, dport, payload_len);
    return VHCA_ETH_HLEN + IPV6_HLEN + plen;
}

void vhca_gid_from_ipv4(uint8_t gid[16], const uint8_t ip[4])
{
    memset(gid, 0, 10);
    gid[10] = 0xff;
    gid[11] = 0xff;
    memcpy(gid + 12, ip, 4);
}
