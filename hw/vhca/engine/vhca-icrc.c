/*
 * vhca engine: the CRCs of the wire - the Invariant CRC of RoCEv2 and of
 * InfiniBand packets (IBTA Vol 1 7.8.1 and A17.3.3), and InfiniBand's
 * Variant CRC (7.8.2).
 *
 * The ICRC covers the fields no router or switch may change.  RoCEv2
 * keeps the InfiniBand rule by computing it over a pseudo packet: 8 bytes
 * of ones in place of the LRH, then the IP, UDP and transport headers with
 * their variant fields set to ones, then the rest of the packet.  This is
 * the computation of Linux's rxe (rxe_icrc.c) byte for byte: rxe starts
 * crc32_le() from 0xdebb20e3, the CRC register after the 8 bytes of ones,
 * and stores the complement in host (little-endian) order, which is
 * the IEEE CRC-32 of the whole pseudo packet (zlib's crc32()) stored
 * little-endian.
 *
 * The CRC is libdeflate's libdeflate_crc32(), the same CRC with the same
 * conventions as zlib's crc32() (initial value 0, chained by passing the
 * last result) but folded with carry-less multiplication (PCLMULQDQ) where
 * the CPU has it: every packet is covered twice (sent and received), and
 * zlib's table-driven loop was the engine's largest cost per byte.
 *
 * On the InfiniBand link the ICRC is the same CRC over the packet itself,
 * from the LRH, with the variant fields set to ones (7.8.1): the LRH's VL
 * in a local packet (LNH IBA local), the whole LRH in a global one (a
 * router rewrites it: hence RoCE's 8 bytes of ones), the GRH's TClass,
 * FlowLabel and HopLmt, and the BTH's byte 4 (F, B, reserved).  The
 * LRH's reserved bits, LNH, PktLen and LIDs, the GRH's IPVer, PayLen,
 * NxtHdr and GIDs, and the BTH's other reserved bits are covered as they
 * are.  It is stored little-endian, bits 7:0 of the CRC first, as on
 * RoCE.  This is what Mellanox's packet generator for its HCAs' tests
 * (MPGA, update_ICRC() and append_ICRC()) computes, and the unit tests
 * check its RDMA WRITE vector.
 *
 * The VCRC protects one link hop, LRH through ICRC, and is recomputed by
 * every switch (which may change the VL).  It is CRC-16 with the
 * polynomial 0x100B (x^16 + x^12 + x^3 + x + 1), processed least
 * significant bit first (reflected: 0xD008), initial value 0xFFFF and the
 * result complemented, stored little-endian like the ICRC: the VCRC of
 * MPGA (update_VCRC(), append_VCRC()) and of Endace's DAG capture cards'
 * InfiniBand support (dagcrc_infiniband_vcrc16_r()).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>
#include <libdeflate.h>

#include "vhca-wire.h"

#define UDP_HLEN                8
#define UDP_OFF_CHECK           6

#define IPV4_MAX_HLEN           60
#define IPV4_OFF_TOS            1
#define IPV4_OFF_TTL            8
#define IPV4_OFF_CHECK          10

#define IPV6_OFF_HOP_LIMIT      7

/* The LRH a RoCEv2 packet has not, covered as 8 bytes of ones. */
#define MASKED_LRH_LEN          8

/* BTH byte 4: F, B and six reserved bits (resv8a before IBTA 1.3). */
#define BTH_OFF_RESV8A          4

/* LRH byte 0: VL in bits 7:4, LVer in 3:0. */
#define LRH_VL_MASK             0xf0

uint32_t vhca_icrc(const uint8_t *ip, size_t ip_hlen, bool ipv6, size_t len)
{
    /*
     * The pseudo header, the LRH's 8 bytes of ones first, in one buffer:
     * one CRC call for all the headers and one for the rest, as calls,
     * not bytes, are what a small packet's CRC costs.
     */
    uint8_t hdr[MASKED_LRH_LEN + IPV4_MAX_HLEN + UDP_HLEN +
                VHCA_IB_BTH_LEN];
    size_t ip_bth_len = ip_hlen + UDP_HLEN + VHCA_IB_BTH_LEN;
    uint8_t *pseudo_ip = hdr + MASKED_LRH_LEN;
    uint8_t *udp = pseudo_ip + ip_hlen;
    uint32_t crc;

    /* Callers pass a validated IP header, never longer than IPv4's 60. */
    if (MASKED_LRH_LEN + ip_bth_len > sizeof(hdr) || len < ip_bth_len) {
        return 0;
    }
    memset(hdr, 0xff, MASKED_LRH_LEN);
    memcpy(pseudo_ip, ip, ip_bth_len);
    if (ipv6) {
        /* Version stays; traffic class and flow label become ones. */
        pseudo_ip[0] |= 0x0f;
        memset(pseudo_ip + 1, 0xff, 3);
        pseudo_ip[IPV6_OFF_HOP_LIMIT] = 0xff;
    } else {
        pseudo_ip[IPV4_OFF_TOS] = 0xff;
        pseudo_ip[IPV4_OFF_TTL] = 0xff;
        pseudo_ip[IPV4_OFF_CHECK] = 0xff;
        pseudo_ip[IPV4_OFF_CHECK + 1] = 0xff;
    }
    udp[UDP_OFF_CHECK] = 0xff;
    udp[UDP_OFF_CHECK + 1] = 0xff;
    udp[UDP_HLEN + BTH_OFF_RESV8A] = 0xff;

    crc = libdeflate_crc32(0, hdr, MASKED_LRH_LEN + ip_bth_len);
    return libdeflate_crc32(crc, ip + ip_bth_len, len - ip_bth_len);
}

uint32_t vhca_ib_icrc(const uint8_t *lrh, bool grh, size_t len)
{
    /* The headers with variant fields, masked in a copy, as above. */
    uint8_t hdr[VHCA_IB_LRH_LEN + VHCA_IB_GRH_LEN + VHCA_IB_BTH_LEN];
    size_t hdr_len = VHCA_IB_LRH_LEN + (grh ? VHCA_IB_GRH_LEN : 0) +
                     VHCA_IB_BTH_LEN;
    uint8_t *bth = hdr + hdr_len - VHCA_IB_BTH_LEN;
    uint32_t crc;

    if (len < hdr_len) {
        return 0;
    }
    memcpy(hdr, lrh, hdr_len);
    if (grh) {
        uint8_t *g = hdr + VHCA_IB_LRH_LEN;

        memset(hdr, 0xff, VHCA_IB_LRH_LEN);
        /* The GRH has the IPv6 header's layout: IPVer stays. */
        g[0] |= 0x0f;
        memset(g + 1, 0xff, 3);
        g[IPV6_OFF_HOP_LIMIT] = 0xff;
    } else {
        hdr[0] |= LRH_VL_MASK;
    }
    bth[BTH_OFF_RESV8A] = 0xff;

    crc = libdeflate_crc32(0, hdr, hdr_len);
    return libdeflate_crc32(crc, lrh + hdr_len, len - hdr_len);
}

/*
 * The VCRC's table: entry n is the reflected CRC register after shifting
 * the byte n through it, (n >> 1) ^ (n & 1 ? 0xD008 : 0) eight times.
 */
static const uint16_t vhca_vcrc_table[256] = {
    0x0000, 0x1ba1, 0x3742, 0x2ce3, 0x6e84, 0x7525, 0x59c6, 0x4267,
    0xdd08, 0xc6a9, 0xea4a, 0xf1eb, 0xb38c, 0xa82d, 0x84ce, 0x9f6f,
    0x1a01, 0x01a0, 0x2d43, 0x36e2, 0x7485, 0x6f24, 0x43c7, 0x5866,
    0xc709, 0xdca8, 0xf04b, 0xebea, 0xa98d, 0xb22c, 0x9ecf, 0x856e,
    0x3402, 0x2fa3, 0x0340, 0x18e1, 0x5a86, 0x4127, 0x6dc4, 0x7665,
    0xe90a, 0xf2ab, 0xde48, 0xc5e9, 0x878e, 0x9c2f, 0xb0cc, 0xab6d,
    0x2e03, 0x35a2, 0x1941, 0x02e0, 0x4087, 0x5b26, 0x77c5, 0x6c64,
    0xf30b, 0xe8aa, 0xc449, 0xdfe8, 0x9d8f, 0x862e, 0xaacd, 0xb16c,
    0x6804, 0x73a5, 0x5f46, 0x44e7, 0x0680, 0x1d21, 0x31c2, 0x2a63,
    0xb50c, 0xaead, 0x824e, 0x99ef, 0xdb88, 0xc029, 0xecca, 0xf76b,
    0x7205, 0x69a4, 0x4547, 0x5ee6, 0x1c81, 0x0720, 0x2bc3, 0x3062,
    0xaf0d, 0xb4ac, 0x984f, 0x83ee, 0xc189, 0xda28, 0xf6cb, 0xed6a,
    0x5c06, 0x47a7, 0x6b44, 0x70e5, 0x3282, 0x2923, 0x05c0, 0x1e61,
    0x810e, 0x9aaf, 0xb64c, 0xaded, 0xef8a, 0xf42b, 0xd8c8, 0xc369,
    0x4607, 0x5da6, 0x7145, 0x6ae4, 0x2883, 0x3322, 0x1fc1, 0x0460,
    0x9b0f, 0x80ae, 0xac4d, 0xb7ec, 0xf58b, 0xee2a, 0xc2c9, 0xd968,
    0xd008, 0xcba9, 0xe74a, 0xfceb, 0xbe8c, 0xa52d, 0x89ce, 0x926f,
    0x0d00, 0x16a1, 0x3a42, 0x21e3, 0x6384, 0x7825, 0x54c6, 0x4f67,
    0xca09, 0xd1a8, 0xfd4b, 0xe6ea, 0xa48d, 0xbf2c, 0x93cf, 0x886e,
    0x1701, 0x0ca0, 0x2043, 0x3be2, 0x7985, 0x6224, 0x4ec7, 0x5566,
    0xe40a, 0xffab, 0xd348, 0xc8e9, 0x8a8e, 0x912f, 0xbdcc, 0xa66d,
    0x3902, 0x22a3, 0x0e40, 0x15e1, 0x5786, 0x4c27, 0x60c4, 0x7b65,
    0xfe0b, 0xe5aa, 0xc949, 0xd2e8, 0x908f, 0x8b2e, 0xa7cd, 0xbc6c,
    0x2303, 0x38a2, 0x1441, 0x0fe0, 0x4d87, 0x5626, 0x7ac5, 0x6164,
    0xb80c, 0xa3ad, 0x8f4e, 0x94ef, 0xd688, 0xcd29, 0xe1ca, 0xfa6b,
    0x6504, 0x7ea5, 0x5246, 0x49e7, 0x0b80, 0x1021, 0x3cc2, 0x2763,
    0xa20d, 0xb9ac, 0x954f, 0x8eee, 0xcc89, 0xd728, 0xfbcb, 0xe06a,
    0x7f05, 0x64a4, 0x4847, 0x53e6, 0x1181, 0x0a20, 0x26c3, 0x3d62,
    0x8c0e, 0x97af, 0xbb4c, 0xa0ed, 0xe28a, 0xf92b, 0xd5c8, 0xce69,
    0x5106, 0x4aa7, 0x6644, 0x7de5, 0x3f82, 0x2423, 0x08c0, 0x1361,
    0x960f, 0x8dae, 0xa14d, 0xbaec, 0xf88b, 0xe32a, 0xcfc9, 0xd468,
    0x4b07, 0x50a6, 0x7c45, 0x67e4, 0x2583, 0x3e22, 0x12c1, 0x0960,
};

uint16_t vhca_vcrc(const uint8_t *lrh, size_t len)
{
    uint16_t crc = 0xffff;

    for (size_t i = 0; i < len; i++) {
        crc = (crc >> 8) ^ vhca_vcrc_table[(crc ^ lrh[i]) & 0xff];
    }
    return (uint16_t)~crc;
}

uint32_t vhca_icrc_extend(uint32_t icrc, const uint8_t *data, size_t len)
{
    return libdeflate_crc32(icrc, data, len);
}
