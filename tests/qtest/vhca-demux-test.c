/*
 * vhca conformance: the RoCEv2 receive demux.  UDP to port 4791 for an
 * address in the GID table belongs to the RDMA engine (counted; these
 * frames name no QP, so the transport drops them) and never reaches the
 * Ethernet RX ring;
 * everything else does (docs/specs/vhca.rst "Receive demux (RoCEv2)").
 *
 * Every test injects the RoCE frame first and an ordinary frame after
 * it: the ordinary frame landing in RX slot 0 proves the RoCE frame was
 * taken out, without waiting on time.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "vhca-qdriver.h"
#include "vhca-frame.h"

#define ROCE_PAYLOAD    64      /* BTH + data + ICRC */

static const uint8_t our_ip4[4] = { 10, 0, 0, 1 };
static const uint8_t other_ip4[4] = { 10, 0, 0, 2 };
static const uint8_t peer_ip4[4] = { 10, 0, 0, 9 };
static const uint8_t our_ip6[16] = { 0xfd, 0x00, [15] = 1 };
static const uint8_t other_ip6[16] = { 0xfd, 0x00, [15] = 2 };
static const uint8_t peer_ip6[16] = { 0xfd, 0x00, [15] = 9 };

static VhcaTestDev *start_demux(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);

    vhca_admin_setup(d, 3, 5);
    vhca_eth_setup(d, 2, 4, 2048,
                   VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE);
    vhca_rx_post(d, 8);
    return d;
}

static void add_ipv4_gid(VhcaTestDev *d, uint16_t index, const uint8_t ip[4])
{
    uint8_t gid[16];

    vhca_gid_from_ipv4(gid, ip);
    g_assert_cmpuint(vhca_cmd_add_gid(d, index, 1,
                                      VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
}

/* Inject @frame and expect the RDMA engine to take it. */
static void expect_roce(VhcaTestDev *d, const uint8_t *frame, size_t len)
{
    uint64_t seen = vhca_counter(d, VHCA_CNT_ROCE_RX_PACKETS);
    uint64_t dropped = vhca_counter(d, VHCA_CNT_ROCE_RX_DROPPED);
    uint64_t rx_packets = vhca_counter(d, VHCA_CNT_RX_PACKETS);
    uint32_t rx_ci = vhca_rd(d, VHCA_REG_RX_CI);

    vhca_wire_send(d, frame, len);
    vhca_wait_counter(d, VHCA_CNT_ROCE_RX_PACKETS, seen + 1,
                      "ROCE_RX_PACKETS to count the frame");
    /* No QP takes it (not a valid packet for one): dropped and counted. */
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     dropped + 1);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, rx_ci);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, rx_packets);
}

/* Inject @frame and expect it in the next RX descriptor. */
static void expect_ethernet(VhcaTestDev *d, const uint8_t *frame, size_t len)
{
    uint64_t seen = vhca_counter(d, VHCA_CNT_ROCE_RX_PACKETS);
    uint8_t got[2048];

    vhca_wire_send(d, frame, len);
    g_assert_cmpuint(vhca_rx_receive(d, got, sizeof(got)), ==, len);
    g_assert_cmpmem(got, len, frame, len);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ROCE_RX_PACKETS), ==, seen);
}

static void test_ipv4(void)
{
    VhcaTestDev *d = start_demux();
    uint8_t frame[256];
    size_t len;

    add_ipv4_gid(d, 3, our_ip4);

    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, our_ip4,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_roce(d, frame, len);

    /* Same port, an address we do not own: ordinary traffic. */
    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, other_ip4,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_ethernet(d, frame, len);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 1);

    /* Our address, another UDP port: ordinary traffic. */
    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, our_ip4,
                          VHCA_ROCE_V2_UDP_PORT + 1, ROCE_PAYLOAD);
    expect_ethernet(d, frame, len);

    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, our_ip4,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD + 100);
    expect_roce(d, frame, len);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ROCE_RX_PACKETS), ==, 2);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, 2);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_ERRORS), ==, 0);
    vhca_test_stop(d);
}

static void test_ipv6(void)
{
    VhcaTestDev *d = start_demux();
    uint8_t frame[256];
    size_t len;

    g_assert_cmpuint(vhca_cmd_add_gid(d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      our_ip6), ==, VHCA_ST_OK);

    len = vhca_frame_udp6(frame, vhca_test_mac, peer_ip6, our_ip6,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_roce(d, frame, len);

    len = vhca_frame_udp6(frame, vhca_test_mac, peer_ip6, other_ip6,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_ethernet(d, frame, len);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 1);

    len = vhca_frame_udp6(frame, vhca_test_mac, peer_ip6, our_ip6,
                          53, ROCE_PAYLOAD);
    expect_ethernet(d, frame, len);
    vhca_test_stop(d);
}

/* IPv4 and IPv6 GIDs side by side; each matches its own family. */
static void test_both_families(void)
{
    VhcaTestDev *d = start_demux();
    uint8_t frame[256];
    size_t len;

    add_ipv4_gid(d, 0, our_ip4);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 1, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      our_ip6), ==, VHCA_ST_OK);

    /* Both families reach the engine when their GID is present. */
    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, our_ip4,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_roce(d, frame, len);
    len = vhca_frame_udp6(frame, vhca_test_mac, peer_ip6, our_ip6,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_roce(d, frame, len);

    /* The IPv6 GID's last four bytes, as an IPv4 address: not ours. */
    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, our_ip6 + 12,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    expect_ethernet(d, frame, len);
    vhca_test_stop(d);
}

static void test_del_gid(void)
{
    VhcaTestDev *d = start_demux();
    uint8_t frame[256];
    size_t len;

    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip4, our_ip4,
                          VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    /* Not in the table yet: Ethernet. */
    expect_ethernet(d, frame, len);
    add_ipv4_gid(d, 7, our_ip4);
    expect_roce(d, frame, len);
    g_assert_cmpuint(vhca_cmd_del_gid(d, 7), ==, VHCA_ST_OK);
    expect_ethernet(d, frame, len);
    vhca_test_stop(d);
}

static void test_overwrite_gid(void)
{
    VhcaTestDev *d = start_demux();
    uint8_t to_first[256], to_second[256];
    size_t n_first, n_second;

    n_first = vhca_frame_udp4(to_first, vhca_test_mac, peer_ip4, our_ip4,
                              VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    n_second = vhca_frame_udp4(to_second, vhca_test_mac, peer_ip4, other_ip4,
                               VHCA_ROCE_V2_UDP_PORT, ROCE_PAYLOAD);
    add_ipv4_gid(d, 2, our_ip4);
    add_ipv4_gid(d, 2, other_ip4);
    expect_roce(d, to_second, n_second);
    expect_ethernet(d, to_first, n_first);
    vhca_test_stop(d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/demux/ipv4", test_ipv4);
    vhca_add_test("/vhca/demux/ipv6", test_ipv6);
    vhca_add_test("/vhca/demux/both-families", test_both_families);
    vhca_add_test("/vhca/demux/del-gid", test_del_gid);
    vhca_add_test("/vhca/demux/overwrite-gid", test_overwrite_gid);

    return g_test_run();
}
