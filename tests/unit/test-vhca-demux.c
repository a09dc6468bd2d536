/*
 * vhca engine unit tests: the RoCEv2 receive demux against the GID table,
 * with well-formed, truncated and garbage frames (docs/specs/vhca.rst,
 * "Receive demux (RoCEv2)").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"

#define ROCE VHCA_ROCE_V2_UDP_PORT

static const uint8_t our_v4[4] = { 10, 0, 0, 1 };
static const uint8_t our_v6[16] = {
    0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11
};

/* A device with both GIDs and 4 RX buffers posted. */
static Harness *demux_harness(void)
{
    Harness *h = harness_new(NULL);
    uint8_t gid[16];

    harness_enable(h);
    gid_from_ipv4(gid, our_v4[0], our_v4[1], our_v4[2], our_v4[3]);
    g_assert_cmpuint(add_gid(h, 5, VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(add_gid(h, 9, VHCA_GID_TYPE_ROCE_V2_IPV6, our_v6), ==,
                     VHCA_ST_OK);
    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    for (uint32_t i = 0; i < 4; i++) {
        rx_post(h, i, RX_BUF_SIZE);
    }
    reg_write(h, VHCA_REG_RX_PI, 4);
    return h;
}

static void expect_roce(Harness *h, const uint8_t *frame, size_t len)
{
    uint64_t roce = counter(h, VHCA_CNT_ROCE_RX_PACKETS);
    uint32_t rx_ci = reg_read(h, VHCA_REG_RX_CI);

    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_ROCE);
    g_assert_cmpuint(counter(h, VHCA_CNT_ROCE_RX_PACKETS), ==, roce + 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_ROCE_RX_DROPPED), ==, roce + 1);
    /* Never reaches the Ethernet ring. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, rx_ci);
}

static void expect_ring(Harness *h, const uint8_t *frame, size_t len)
{
    uint64_t roce = counter(h, VHCA_CNT_ROCE_RX_PACKETS);
    uint32_t rx_ci = reg_read(h, VHCA_REG_RX_CI);

    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    g_assert_cmpuint(counter(h, VHCA_CNT_ROCE_RX_PACKETS), ==, roce);
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, rx_ci + 1);
    /* Keep the ring topped up. */
    rx_post(h, rx_ci, RX_BUF_SIZE);
    reg_write(h, VHCA_REG_RX_PI, rx_ci + 1 + 4);
}

static void test_ipv4(void)
{
    Harness *h = demux_harness();
    uint8_t frame[256];
    uint8_t other[4] = { 10, 0, 0, 2 };
    size_t len;

    len = build_udp4(frame, our_v4, ROCE, 40);
    expect_roce(h, frame, len);
    /* Trailing padding after the IP datagram is fine. */
    expect_roce(h, frame, len + 20);
    /* Broadcast or someone else's MAC: the IP address decides. */
    memset(frame, 0xff, 6);
    expect_roce(h, frame, len);

    len = build_udp4(frame, other, ROCE, 40);
    expect_ring(h, frame, len);
    len = build_udp4(frame, our_v4, ROCE + 1, 40);
    expect_ring(h, frame, len);
    /* 4791 in the wrong byte order. */
    len = build_udp4(frame, our_v4, 0xb712, 40);
    expect_ring(h, frame, len);
    /* The source port does not matter, only the destination. */
    len = build_udp4(frame, other, 1234, 40);
    frame[14 + 20] = ROCE >> 8;
    frame[14 + 21] = ROCE & 0xff;
    expect_ring(h, frame, len);
    /* TCP to 4791. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14 + 9] = 6;
    expect_ring(h, frame, len);
    /* IPv4 options: the UDP header moves. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    memmove(frame + 14 + 24, frame + 14 + 20, len - 34);
    memset(frame + 14 + 20, 1, 4);      /* four NOP options */
    frame[14] = 0x46;
    frame[14 + 3] += 4;
    expect_roce(h, frame, len + 4);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_ipv6(void)
{
    Harness *h = demux_harness();
    uint8_t frame[256];
    uint8_t other[16];
    uint8_t mapped[16];
    size_t len;

    len = build_udp6(frame, our_v6, ROCE, 40);
    expect_roce(h, frame, len);

    memcpy(other, our_v6, 16);
    other[15] ^= 1;
    len = build_udp6(frame, other, ROCE, 40);
    expect_ring(h, frame, len);
    len = build_udp6(frame, our_v6, 4790, 40);
    expect_ring(h, frame, len);
    /* Extension header (next header 0): not what RoCEv2 sends. */
    len = build_udp6(frame, our_v6, ROCE, 40);
    frame[14 + 6] = 0;
    expect_ring(h, frame, len);
    /* Empty table entries match nothing, not even the all-zero GID. */
    memset(other, 0, sizeof(other));
    len = build_udp6(frame, other, ROCE, 40);
    expect_ring(h, frame, len);
    /* Our IPv4 GID as an IPv6 destination is still our GID. */
    gid_from_ipv4(mapped, our_v4[0], our_v4[1], our_v4[2], our_v4[3]);
    len = build_udp6(frame, mapped, ROCE, 40);
    expect_roce(h, frame, len);
    harness_free(h);
}

static void test_vlan(void)
{
    Harness *h = demux_harness();
    uint8_t plain[256], frame[260];
    size_t len = build_udp4(plain, our_v4, ROCE, 40);

    /* One 802.1Q tag between the MACs and the IPv4 ethertype. */
    memcpy(frame, plain, 12);
    frame[12] = 0x81;
    frame[13] = 0x00;
    frame[14] = 0x00;
    frame[15] = 0x05;
    memcpy(frame + 16, plain + 12, len - 12);
    expect_roce(h, frame, len + 4);
    /* Tag only, no room for the inner ethertype. */
    expect_ring(h, frame, 16);
    harness_free(h);
}

static void test_gid_changes(void)
{
    Harness *h = demux_harness();
    struct vhca_cmd_gid_in del = { .index = GUINT16_TO_LE(5) };
    uint8_t frame[256];
    size_t len = build_udp4(frame, our_v4, ROCE, 40);

    expect_roce(h, frame, len);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_DEL_GID, 1, &del, sizeof(del),
                               NULL), ==, VHCA_ST_OK);
    expect_ring(h, frame, len);
    harness_free(h);
}

static void test_roce_ignores_rx_state(void)
{
    Harness *h = demux_harness();
    uint8_t frame[256];
    size_t len = build_udp4(frame, our_v4, ROCE, 40);

    /* RoCE frames go to the engine whether or not RX is enabled. */
    reg_write(h, VHCA_REG_ETH_CTRL, 0);
    expect_roce(h, frame, len);
    harness_free(h);
}

static void test_truncated(void)
{
    Harness *h = demux_harness();
    uint8_t frame[256];
    size_t len, cut;

    /*
     * Every truncation of a RoCE frame short of its UDP header, or short
     * of the length the IP header claims, is not RoCE: the host stack
     * gets it (and drops it).  Nothing is read past the frame (ASan).
     */
    len = build_udp4(frame, our_v4, ROCE, 40);
    for (cut = 14; cut < len; cut++) {
        uint8_t *copy = g_memdup2(frame, cut);

        expect_ring(h, copy, cut);
        g_free(copy);
    }
    len = build_udp6(frame, our_v6, ROCE, 40);
    for (cut = 14; cut < len; cut++) {
        uint8_t *copy = g_memdup2(frame, cut);

        expect_ring(h, copy, cut);
        g_free(copy);
    }
    g_assert_cmpuint(counter(h, VHCA_CNT_ROCE_RX_PACKETS), ==, 0);
    harness_free(h);
}

static void test_malformed_headers(void)
{
    Harness *h = demux_harness();
    uint8_t frame[256];
    size_t len;

    /* IPv4 header length below 20. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14] = 0x44;
    expect_ring(h, frame, len);
    /* IHL pointing past the datagram. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14] = 0x4f;
    expect_ring(h, frame, len);
    /* Total length shorter than the header. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14 + 2] = 0;
    frame[14 + 3] = 19;
    expect_ring(h, frame, len);
    /* Total length leaves no room for UDP. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14 + 2] = 0;
    frame[14 + 3] = 27;
    expect_ring(h, frame, len);
    /* Wrong version under the IPv4 ethertype. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14] = 0x65;
    expect_ring(h, frame, len);
    /* A non-first fragment: the "UDP header" is payload. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14 + 6] = 0x00;
    frame[14 + 7] = 0x10;
    expect_ring(h, frame, len);
    /* A first fragment (MF). */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[14 + 6] = 0x20;
    expect_ring(h, frame, len);
    /* IPv6 payload length beyond the frame. */
    len = build_udp6(frame, our_v6, ROCE, 40);
    frame[14 + 4] = 0xff;
    expect_ring(h, frame, len);
    /* IPv6 payload too short for UDP. */
    len = build_udp6(frame, our_v6, ROCE, 40);
    frame[14 + 4] = 0;
    frame[14 + 5] = 7;
    expect_ring(h, frame, len);
    /* IPv6 ethertype, IPv4 header. */
    len = build_udp4(frame, our_v4, ROCE, 40);
    frame[12] = 0x86;
    frame[13] = 0xdd;
    expect_ring(h, frame, len);
    harness_free(h);
}

static void test_garbage(void)
{
    Harness *h = demux_harness();
    GRand *rand = g_rand_new_with_seed(0x7668);
    uint8_t frame[512];
    uint64_t delivered = 0, roce = 0, other = 0;

    /*
     * Random frames, half of them starting from a valid RoCE frame with
     * a few bytes flipped: the engine must classify each one without
     * reading out of bounds, and account for every frame exactly once.
     */
    for (unsigned i = 0; i < 20000; i++) {
        size_t len = g_rand_int_range(rand, 0, sizeof(frame) + 1);
        VhcaRxResult res;

        if (i & 1) {
            size_t base = (i & 2) ? build_udp4(frame, our_v4, ROCE, 100)
                                  : build_udp6(frame, our_v6, ROCE, 100);
            for (unsigned f = 0; f < 3; f++) {
                frame[g_rand_int_range(rand, 12, base)] =
                    (uint8_t)g_rand_int(rand);
            }
            len = MIN(len, base);
        } else {
            for (size_t b = 0; b < len; b++) {
                frame[b] = (uint8_t)g_rand_int(rand);
            }
        }
        /* A heap copy of exactly len bytes, so ASan sees any overrun. */
        {
            uint8_t *copy = g_memdup2(frame, len ? len : 1);

            res = vhca_core_receive(&h->core, copy, len);
            g_free(copy);
        }
        switch (res) {
        case VHCA_RX_DELIVERED:
            delivered++;
            rx_post(h, reg_read(h, VHCA_REG_RX_CI) - 1, RX_BUF_SIZE);
            reg_write(h, VHCA_REG_RX_PI, reg_read(h, VHCA_REG_RX_CI) + 4);
            break;
        case VHCA_RX_ROCE:
            roce++;
            break;
        default:
            other++;
            break;
        }
    }
    g_assert_cmpuint(delivered + roce + other, ==, 20000);
    g_assert_cmpuint(counter(h, VHCA_CNT_ROCE_RX_PACKETS), ==, roce);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_PACKETS), ==, delivered);
    /* Some corrupted frames are still RoCE for us; most are not. */
    g_assert_cmpuint(roce, >, 0);
    g_assert_cmpuint(delivered, >, 0);
    g_rand_free(rand);
    harness_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/demux/ipv4", test_ipv4);
    g_test_add_func("/vhca/demux/ipv6", test_ipv6);
    g_test_add_func("/vhca/demux/vlan", test_vlan);
    g_test_add_func("/vhca/demux/gid-changes", test_gid_changes);
    g_test_add_func("/vhca/demux/roce-ignores-rx-state",
                    test_roce_ignores_rx_state);
    g_test_add_func("/vhca/demux/truncated", test_truncated);
    g_test_add_func("/vhca/demux/malformed-headers", test_malformed_headers);
    g_test_add_func("/vhca/demux/garbage", test_garbage);
    return g_test_run();
}
