/*
 * vhca engine: the RoCEv2 Invariant CRC (IBTA Vol 1 7.8.1 and A17.3.3).
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

uint32_t vhca_icrc_extend(uint32_t icrc, const uint8_t *data, size_t len)
{
    return libdeflate_crc32(icrc, data, len);
}
