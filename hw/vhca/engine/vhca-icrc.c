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
 * The VCRC, sixteen bytes a step ("slicing by 16", as libdeflate's
 * portable CRC-32): table[0][n] is the reflected CRC register after
 * shifting the byte n through it, (r >> 1) ^ (r & 1 ? 0xD008 : 0) eight
 * times, and table[k][n] the same followed by k zero bytes.  Every
 * packet is covered on transmit and on receive, and again by every
 * switch on its way: one byte a step took 9.5 us for a 4 KiB packet,
 * eight 1.5 us, sixteen 0.8 us (docs/benchmarks.rst, "InfiniBand
 * port"); where the CPU multiplies without carries (below), 0.1 us.
 * The tables are computed once, at the first use: a device is realized,
 * and its first packet built, in QEMU's main thread.
 */
#define VCRC_POLY               0x100b
#define VCRC_POLY_REFLECTED     0xd008
#define VCRC_SLICES             16

static uint16_t vhca_vcrc_tables[VCRC_SLICES][256];
static bool vhca_vcrc_ready;

/* The CRC register after @len bytes at @p from register @crc. */
static uint16_t vhca_vcrc_sliced(uint16_t crc, const uint8_t *p, size_t len)
{
    const uint16_t (*t)[256] = vhca_vcrc_tables;

    for (; len >= VCRC_SLICES; p += VCRC_SLICES, len -= VCRC_SLICES) {
        crc = t[15][(crc ^ p[0]) & 0xff] ^ t[14][((crc >> 8) ^ p[1]) & 0xff] ^
              t[13][p[2]] ^ t[12][p[3]] ^ t[11][p[4]] ^ t[10][p[5]] ^
              t[9][p[6]] ^ t[8][p[7]] ^ t[7][p[8]] ^ t[6][p[9]] ^
              t[5][p[10]] ^ t[4][p[11]] ^ t[3][p[12]] ^ t[2][p[13]] ^
              t[1][p[14]] ^ t[0][p[15]];
    }
    for (; len; p++, len--) {
        crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xff];
    }
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * The VCRC by folding with carry-less multiplication (PCLMULQDQ), the
 * method of Intel's "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ Instruction" (2009) that libdeflate's CRC-32 uses, for a
 * polynomial with no instruction of its own.
 *
 * Bit-reflected, a 16-byte block loaded little-endian is a polynomial
 * of degree < 128 whose bit k is the coefficient of x^(127 - k): its
 * low 64 bits L are the first eight bytes, worth L * x^64, the high H
 * the next eight.  A block followed by D more bits of message is worth
 * (L * x^(64 + D) + H * x^D) mod P, and a 64 x 64 multiplication of
 * reflected operands yields the product times x: so L times
 * (x^(64 + D - 1) mod P), xor H times (x^(D - 1) mod P), is a 128-bit
 * block congruent to it, which is xored into the block D bits on.  Four
 * chains 64 bytes apart keep the multiplier busy; they are folded into
 * one, that one over the rest of the 16-byte blocks, and what is left,
 * 16 bytes that stand for everything before and the tail, goes through
 * the table: the CRC of a message depends on its start only modulo P.
 * The initial value 0xFFFF is the same as the first two bytes
 * complemented and a register of 0.
 */
static __m128i vhca_vcrc_fold_4, vhca_vcrc_fold_1;
static bool vhca_vcrc_has_clmul;

/* x^n mod P, as a reflected 64-bit multiplier: x^d at bit 63 - d. */
static uint64_t vhca_vcrc_xpow(unsigned n)
{
    uint32_t r = 1;
    uint64_t out = 0;
    unsigned d;

    while (n--) {
        r <<= 1;
        if (r & 0x10000) {
            r ^= 0x10000 | VCRC_POLY;
        }
    }
    for (d = 0; d < 16; d++) {
        if (r & (1u << d)) {
            out |= 1ull << (63 - d);
        }
    }
    return out;
}

static void vhca_vcrc_clmul_init(void)
{
    __builtin_cpu_init();
    vhca_vcrc_has_clmul = __builtin_cpu_supports("pclmul") &&
                          __builtin_cpu_supports("sse4.1");
    /* _mm_set_epi64x takes the high half (for H) first. */
    vhca_vcrc_fold_4 = _mm_set_epi64x(vhca_vcrc_xpow(512 - 1),
                                      vhca_vcrc_xpow(64 + 512 - 1));
    vhca_vcrc_fold_1 = _mm_set_epi64x(vhca_vcrc_xpow(128 - 1),
                                      vhca_vcrc_xpow(64 + 128 - 1));
}

__attribute__((target("pclmul,sse4.1")))
static inline __m128i vhca_vcrc_fold(__m128i x, __m128i k, __m128i next)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)),
                         next);
}

#define VCRC_CHAIN_BYTES        64

/* The VCRC register after @len >= 64 bytes at @p, from 0xFFFF. */
__attribute__((target("pclmul,sse4.1")))
static uint16_t vhca_vcrc_by_clmul(const uint8_t *p, size_t len)
{
    const __m128i k4 = vhca_vcrc_fold_4, k1 = vhca_vcrc_fold_1;
    __m128i x0, x1, x2, x3;
    uint8_t rest[16];

    x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
                       _mm_cvtsi32_si128(0xffff));
    x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += VCRC_CHAIN_BYTES;
    len -= VCRC_CHAIN_BYTES;
    for (; len >= VCRC_CHAIN_BYTES;
         p += VCRC_CHAIN_BYTES, len -= VCRC_CHAIN_BYTES) {
        x0 = vhca_vcrc_fold(x0, k4, _mm_loadu_si128((const __m128i *)p));
        x1 = vhca_vcrc_fold(x1, k4,
                            _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = vhca_vcrc_fold(x2, k4,
                            _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = vhca_vcrc_fold(x3, k4,
                            _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    x0 = vhca_vcrc_fold(x0, k1, x1);
    x0 = vhca_vcrc_fold(x0, k1, x2);
    x0 = vhca_vcrc_fold(x0, k1, x3);
    for (; len >= 16; p += 16, len -= 16) {
        x0 = vhca_vcrc_fold(x0, k1, _mm_loadu_si128((const __m128i *)p));
    }
    _mm_storeu_si128((__m128i *)rest, x0);
    return vhca_vcrc_sliced(vhca_vcrc_sliced(0, rest, sizeof(rest)), p,
                            len);
}
#else
#define VCRC_CHAIN_BYTES        64
static const bool vhca_vcrc_has_clmul;

static void vhca_vcrc_clmul_init(void)
{
}

static uint16_t vhca_vcrc_by_clmul(const uint8_t *p, size_t len)
{
    return vhca_vcrc_sliced(0xffff, p, len);
}
#endif

static void vhca_vcrc_init(void)
{
    unsigned n, k, bit;

    for (n = 0; n < 256; n++) {
        uint16_t r = (uint16_t)n;

        for (bit = 0; bit < 8; bit++) {
            r = (r & 1) ? (r >> 1) ^ VCRC_POLY_REFLECTED : r >> 1;
        }
        vhca_vcrc_tables[0][n] = r;
    }
    for (k = 1; k < VCRC_SLICES; k++) {
        for (n = 0; n < 256; n++) {
            uint16_t r = vhca_vcrc_tables[k - 1][n];

            vhca_vcrc_tables[k][n] = (r >> 8) ^ vhca_vcrc_tables[0][r & 0xff];
        }
    }
    vhca_vcrc_clmul_init();
    vhca_vcrc_ready = true;
}

uint16_t vhca_vcrc_table(const uint8_t *lrh, size_t len)
{
    if (!vhca_vcrc_ready) {
        vhca_vcrc_init();
    }
    return (uint16_t)~vhca_vcrc_sliced(0xffff, lrh, len);
}

bool vhca_vcrc_clmul(const uint8_t *lrh, size_t len, uint16_t *vcrc)
{
    if (!vhca_vcrc_ready) {
        vhca_vcrc_init();
    }
    if (!vhca_vcrc_has_clmul) {
        return false;
    }
    *vcrc = (uint16_t)~(len >= VCRC_CHAIN_BYTES ?
                        vhca_vcrc_by_clmul(lrh, len) :
                        vhca_vcrc_sliced(0xffff, lrh, len));
    return true;
}

uint16_t vhca_vcrc(const uint8_t *lrh, size_t len)
{
    uint16_t vcrc;

    if (vhca_vcrc_clmul(lrh, len, &vcrc)) {
        return vcrc;
    }
    return vhca_vcrc_table(lrh, len);
}

uint32_t vhca_icrc_extend(uint32_t icrc, const uint8_t *data, size_t len)
{
    return libdeflate_crc32(icrc, data, len);
}
