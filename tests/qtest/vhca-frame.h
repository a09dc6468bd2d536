/*
 * Ethernet / IPv4 / IPv6 / UDP frame builders for the vhca qtests: the
 * frames the tests inject into the device and expect from it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_FRAME_H
#define VHCA_FRAME_H

#define VHCA_ETH_HLEN           14
#define VHCA_ETHERTYPE_IPV4     0x0800
#define VHCA_ETHERTYPE_IPV6     0x86dd
#define VHCA_ETHERTYPE_TEST     0x88b5  /* IEEE local experimental */

extern const uint8_t vhca_peer_mac[6];
extern const uint8_t vhca_bcast_mac[6];

/*
 * Ethernet header + @payload_len bytes of a pattern derived from @seed, so
 * two frames built with different seeds differ.  Returns the frame length.
 */
size_t vhca_frame_eth(uint8_t *buf, const uint8_t dst[6],
                      uint16_t ethertype, size_t payload_len, uint8_t seed);

/*
 * UDP over IPv4 / IPv6 from vhca_peer_mac to @dst_mac, with valid IP and
 * UDP checksums.  To UDP port 4791 the payload starts with a RoCEv2 BTH
 * (IBTA Vol 1 9.2) and ends with a 4-byte ICRC field.
 */
size_t vhca_frame_udp4(uint8_t *buf, const uint8_t dst_mac[6],
                       const uint8_t src_ip[4], const uint8_t dst_ip[4],
                       uint16_t dport, size_t payload_len);
size_t vhca_frame_udp6(uint8_t *buf, const uint8_t dst_mac[6],
                       const uint8_t src_ip[16], const uint8_t dst_ip[16],
                       uint16_t dport, size_t payload_len);

/* RoCEv2 GID of an IPv4 address: IPv4-mapped ::ffff:a.b.c.d (RFC 4291). */
void vhca_gid_from_ipv4(uint8_t gid[16], const uint8_t ip[4]);

#endif /* VHCA_FRAME_H */
