/*
 * vhca conformance: the Ethernet datapath through a -netdev socket --
 * TX and RX rings, drops, MAC filter, the multicast filter
 * (SET_RX_FILTER), MTU, link state and MSI-X vector 1 (docs/specs/vhca.rst
 * "Ethernet datapath", "RX filter", "Link state").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-frame.h"

#define ETH_ENABLE      (VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE)
#define RX_BUF_LEN      2048

static const uint8_t other_mac[6] = { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 };
static const uint8_t mcast_mac[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };

static VhcaTestDev *start_eth(uint16_t rx_buf_len, uint32_t eth_ctrl)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);

    vhca_admin_setup(d, 3, 4);
    vhca_eth_setup(d, 3, 3, rx_buf_len, eth_ctrl);
    return d;
}

/* Read the next frame from the wire and compare it with @frame. */
static void expect_on_wire(VhcaTestDev *d, const uint8_t *frame, size_t len)
{
    g_autofree uint8_t *got = g_malloc(VHCA_TEST_TX_BUF_LEN);

    g_assert_cmpuint(vhca_wire_recv(d, got, VHCA_TEST_TX_BUF_LEN), ==, len);
    g_assert_cmpmem(got, len, frame, len);
}

/* Receive the next frame from the RX ring and compare it with @frame. */
static void expect_in_ring(VhcaTestDev *d, const uint8_t *frame, size_t len)
{
    g_autofree uint8_t *got = g_malloc(VHCA_ETH_MAX_FRAME);

    g_assert_cmpuint(vhca_rx_receive(d, got, VHCA_ETH_MAX_FRAME), ==, len);
    g_assert_cmpmem(got, len, frame, len);
}

static void test_tx(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    static const size_t sizes[] = { 64, 100, 1514 };
    uint8_t frames[3][1514];
    uint64_t bytes = 0;
    size_t len;
    int i;

    len = vhca_frame_eth(frames[0], vhca_peer_mac, VHCA_ETHERTYPE_TEST,
                         46, 0x11);
    g_assert_cmphex(vhca_tx_frame(d, frames[0], len), ==, VHCA_ETH_DESC_DONE);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 1);
    expect_on_wire(d, frames[0], len);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_PACKETS), ==, 1);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_BYTES), ==, len);

    /* Three descriptors in flight: sent in ring order. */
    for (i = 0; i < 3; i++) {
        vhca_frame_eth(frames[i], vhca_peer_mac, VHCA_ETHERTYPE_TEST,
                       sizes[i] - VHCA_ETH_HLEN, 0x20 + i);
        vhca_tx_post(d, frames[i], sizes[i]);
        bytes += sizes[i];
    }
    for (i = 0; i < 3; i++) {
        g_assert_cmphex(vhca_tx_complete(d), ==, VHCA_ETH_DESC_DONE);
    }
    for (i = 0; i < 3; i++) {
        expect_on_wire(d, frames[i], sizes[i]);
    }
    g_assert_true(vhca_wire_idle(d));
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 4);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_PACKETS), ==, 4);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_BYTES), ==, len + bytes);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_ERRORS), ==, 0);
    vhca_test_stop(d);
}

/* TX ring of 8 entries, 20 frames: the ring wraps, order is kept. */
static void test_tx_wrap(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t frame[128];
    int i;

    for (i = 0; i < 20; i++) {
        size_t len = vhca_frame_eth(frame, vhca_peer_mac,
                                    VHCA_ETHERTYPE_TEST, 60 + i, i);

        g_assert_cmphex(vhca_tx_frame(d, frame, len), ==,
                        VHCA_ETH_DESC_DONE);
        expect_on_wire(d, frame, len);
    }
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 20);
    vhca_test_stop(d);
}

static void test_tx_bad_descriptors(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    g_autofree uint8_t *big = g_malloc(VHCA_TEST_TX_BUF_LEN);
    uint8_t min[VHCA_ETH_HLEN], marker[64];
    size_t len;

    vhca_frame_eth(big, vhca_peer_mac, VHCA_ETHERTYPE_TEST,
                   VHCA_TEST_TX_BUF_LEN - VHCA_ETH_HLEN, 0x42);
    vhca_frame_eth(min, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 0, 0);

    /* 14 .. MTU + 18 bytes go out. */
    g_assert_cmphex(vhca_tx_frame(d, min, sizeof(min)), ==,
                    VHCA_ETH_DESC_DONE);
    g_assert_cmphex(vhca_tx_frame(d, big, 1518), ==, VHCA_ETH_DESC_DONE);

    /* Out of range lengths and buffers outside RAM complete with ERROR. */
    g_assert_cmphex(vhca_tx_frame(d, min, 13), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_cmphex(vhca_tx_frame(d, big, 1519), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_cmphex(vhca_tx_frame(d, big, 0), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    vhca_tx_post_desc(d, VHCA_TEST_BAD_DMA_ADDR, 60);
    g_assert_cmphex(vhca_tx_complete(d), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);

    len = vhca_frame_eth(marker, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 9);
    g_assert_cmphex(vhca_tx_frame(d, marker, len), ==, VHCA_ETH_DESC_DONE);

    /* Only the good frames reached the wire, in order. */
    expect_on_wire(d, min, sizeof(min));
    expect_on_wire(d, big, 1518);
    expect_on_wire(d, marker, len);
    g_assert_true(vhca_wire_idle(d));
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_ERRORS), ==, 4);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_PACKETS), ==, 3);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 7);

    /* SET_MTU moves the limit to MTU + 18. */
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 9000), ==, VHCA_ST_OK);
    g_assert_cmphex(vhca_tx_frame(d, big, 9018), ==, VHCA_ETH_DESC_DONE);
    g_assert_cmphex(vhca_tx_frame(d, big, 9019), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    expect_on_wire(d, big, 9018);
    g_assert_true(vhca_wire_idle(d));
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_ERRORS), ==, 5);
    vhca_test_stop(d);
}

/* A TX buffer that is not guest RAM: DONE|ERROR, nothing on the wire. */
static void test_tx_buffer_not_ram(const void *data)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint64_t addr = vhca_bad_dma_addr(d, GPOINTER_TO_INT(data));
    uint8_t marker[64];
    size_t len;

    vhca_tx_post_desc(d, addr, 60);
    g_assert_cmphex(vhca_tx_complete(d), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_ERRORS), ==, 1);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_PACKETS), ==, 0);

    /* The next good frame is the first one on the wire. */
    len = vhca_frame_eth(marker, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 9);
    g_assert_cmphex(vhca_tx_frame(d, marker, len), ==, VHCA_ETH_DESC_DONE);
    expect_on_wire(d, marker, len);
    g_assert_true(vhca_wire_idle(d));
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL), ==, ETH_ENABLE);
    vhca_test_stop(d);
}

static void test_rx(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t ucast[64], bcast[60], mcast[80], other[70], last[66];
    size_t n_u, n_b, n_m, n_o, n_l;

    n_u = vhca_frame_eth(ucast, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 1);
    n_b = vhca_frame_eth(bcast, vhca_bcast_mac, VHCA_ETHERTYPE_TEST, 46, 2);
    n_m = vhca_frame_eth(mcast, mcast_mac, VHCA_ETHERTYPE_TEST, 66, 3);
    n_o = vhca_frame_eth(other, other_mac, VHCA_ETHERTYPE_TEST, 56, 4);
    n_l = vhca_frame_eth(last, vhca_test_mac, VHCA_ETHERTYPE_TEST, 52, 5);

    vhca_rx_post(d, 4);
    vhca_wire_send(d, ucast, n_u);
    vhca_wire_send(d, bcast, n_b);
    vhca_wire_send(d, mcast, n_m);
    expect_in_ring(d, ucast, n_u);
    expect_in_ring(d, bcast, n_b);
    expect_in_ring(d, mcast, n_m);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 3);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, 3);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_BYTES), ==, n_u + n_b + n_m);

    /* Another station's unicast is filtered; ours behind it arrives. */
    vhca_wire_send(d, other, n_o);
    vhca_wire_send(d, last, n_l);
    expect_in_ring(d, last, n_l);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 4);

    /* PROMISC accepts it. */
    vhca_wr(d, VHCA_REG_ETH_CTRL, ETH_ENABLE | VHCA_ETH_CTRL_PROMISC);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL), ==,
                    ETH_ENABLE | VHCA_ETH_CTRL_PROMISC);
    vhca_rx_post(d, 1);
    vhca_wire_send(d, other, n_o);
    expect_in_ring(d, other, n_o);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, 5);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_ERRORS), ==, 0);
    vhca_test_stop(d);
}

/* RX ring of 8 entries, 20 frames, buffers re-posted: the ring wraps. */
static void test_rx_wrap(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t frame[128];
    int i;

    vhca_rx_post(d, 8);
    for (i = 0; i < 20; i++) {
        size_t len = vhca_frame_eth(frame, vhca_test_mac,
                                    VHCA_ETHERTYPE_TEST, 60 + i, i);

        vhca_wire_send(d, frame, len);
        expect_in_ring(d, frame, len);
        vhca_rx_post(d, 1);
    }
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 20);
    vhca_test_stop(d);
}

static void test_rx_drops(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    g_autofree uint8_t *frame = g_malloc(3000);
    uint8_t runt[10];

    memcpy(runt, vhca_test_mac, 6);
    memset(runt + 6, 0x77, 4);
    vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST,
                   3000 - VHCA_ETH_HLEN, 0x33);
    vhca_rx_post(d, 2);

    /* Shorter than an Ethernet header. */
    vhca_wire_send(d, runt, sizeof(runt));
    vhca_wait_counter(d, VHCA_CNT_RX_ERRORS, 1, "RX_ERRORS = 1 (runt)");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 0);

    /* Larger than MTU + 18 (buffer is big enough). */
    vhca_wire_send(d, frame, 1519);
    vhca_wait_counter(d, VHCA_CNT_RX_ERRORS, 2, "RX_ERRORS = 2 (> MTU)");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 0);

    /* The largest frame the MTU allows lands in the first buffer. */
    vhca_wire_send(d, frame, 1518);
    expect_in_ring(d, frame, 1518);

    /* Larger than the buffer (but within MTU 9000). */
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 9000), ==, VHCA_ST_OK);
    vhca_wire_send(d, frame, 3000);
    vhca_wait_counter(d, VHCA_CNT_RX_ERRORS, 3, "RX_ERRORS = 3 (> buffer)");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 1);

    vhca_wire_send(d, frame, 100);
    expect_in_ring(d, frame, 100);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, 2);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_ERRORS), ==, 3);
    vhca_test_stop(d);
}

static void test_rx_jumbo(void)
{
    VhcaTestDev *d = start_eth(9216, ETH_ENABLE);
    g_autofree uint8_t *frame = g_malloc(9019);

    vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST,
                   9019 - VHCA_ETH_HLEN, 0x44);
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 9000), ==, VHCA_ST_OK);
    vhca_rx_post(d, 2);
    vhca_wire_send(d, frame, 9019);
    vhca_wait_counter(d, VHCA_CNT_RX_ERRORS, 1, "RX_ERRORS = 1 (> MTU)");
    vhca_wire_send(d, frame, 9018);
    expect_in_ring(d, frame, 9018);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_BYTES), ==, 9018);
    vhca_test_stop(d);
}

/*
 * An RX buffer that cannot take the frame (not guest RAM, or too small):
 * the frame is dropped and counted, nothing is written, the device keeps
 * working.
 */
static void check_rx_bad_buffer(uint64_t (*addr_of)(VhcaTestDev *d,
                                                    int kind),
                                int kind, uint16_t buf_len)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint32_t eth_ctrl = vhca_rd(d, VHCA_REG_ETH_CTRL);
    /* HPET general configuration: a stray DMA write would change it. */
    uint64_t hpet_cfg = qtest_readq(d->qts, VHCA_TEST_HPET_ADDR + 0x10);
    uint8_t frame[64];
    size_t len;

    len = vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 1);
    vhca_rx_post_desc(d, addr_of(d, kind), buf_len);
    vhca_wire_send(d, frame, len);
    vhca_wait_counter(d, VHCA_CNT_RX_ERRORS, 1, "RX_ERRORS = 1");
    g_assert_cmphex(qtest_readq(d->qts, VHCA_TEST_HPET_ADDR + 0x10), ==,
                    hpet_cfg);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, 0);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL), ==, eth_ctrl);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
    vhca_test_stop(d);
}

static uint64_t bad_dma_addr(VhcaTestDev *d, int kind)
{
    return vhca_bad_dma_addr(d, kind);
}

static uint64_t good_buffer(VhcaTestDev *d, int kind)
{
    return d->rx_bufs[0];
}

static void test_rx_buffer_not_ram(const void *data)
{
    check_rx_bad_buffer(bad_dma_addr, GPOINTER_TO_INT(data), RX_BUF_LEN);
}

static void test_rx_buffer_too_small(void)
{
    check_rx_bad_buffer(good_buffer, 0, 63);
}

static void test_rx_buffer_empty(void)
{
    check_rx_bad_buffer(good_buffer, 0, 0);
}

/* Rings that point outside guest RAM: no crash, the device lives on. */
static void test_rings_outside_ram(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint8_t frame[64];
    size_t len;

    vhca_admin_setup(d, 3, 4);
    vhca_wr_base(d, VHCA_REG_TX_BASE_LO, VHCA_TEST_BAD_DMA_ADDR);
    vhca_wr(d, VHCA_REG_TX_LOG_SIZE, 3);
    vhca_wr_base(d, VHCA_REG_RX_BASE_LO, d->bar0.addr);
    vhca_wr(d, VHCA_REG_RX_LOG_SIZE, 3);
    vhca_wr(d, VHCA_REG_ETH_CTRL, ETH_ENABLE);
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 1);
    vhca_wr(d, VHCA_REG_TX_PI, 4);
    vhca_wr(d, VHCA_REG_RX_PI, 4);
    len = vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 1);
    vhca_wire_send(d, frame, len);
    vhca_wire_send(d, frame, len);

    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_LOG_SIZE), ==, 3);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);
    vhca_test_stop(d);
}

/*
 * With no buffer posted the device drops frames and counts them in
 * RX_NO_BUFFER, as a NIC does: nothing waits in the backend (RoCE frames
 * must not queue behind an empty Ethernet ring).  Later frames land in
 * buffers posted afterwards.
 */
static void test_rx_no_buffer_drops(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t a[64], b[80], c[72];
    size_t n_a, n_b, n_c;

    n_a = vhca_frame_eth(a, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 0xa);
    n_b = vhca_frame_eth(b, vhca_test_mac, VHCA_ETHERTYPE_TEST, 66, 0xb);
    n_c = vhca_frame_eth(c, vhca_test_mac, VHCA_ETHERTYPE_TEST, 58, 0xc);
    vhca_wire_send(d, a, n_a);
    vhca_wire_send(d, b, n_b);
    vhca_wait_counter(d, VHCA_CNT_RX_NO_BUFFER, 2,
                      "RX_NO_BUFFER to count both frames");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 0);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_ERRORS), ==, 0);

    vhca_rx_post(d, 2);
    vhca_wire_send(d, c, n_c);
    expect_in_ring(d, c, n_c);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 1);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_PACKETS), ==, 1);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_NO_BUFFER), ==, 2);
    vhca_test_stop(d);
}

static void test_rx_set_mac(void)
{
    static const uint8_t new_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t old_f[64], new_f[64];
    size_t n_old, n_new;

    g_assert_cmpuint(vhca_cmd_set_mac(d, new_mac), ==, VHCA_ST_OK);
    n_old = vhca_frame_eth(old_f, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 1);
    n_new = vhca_frame_eth(new_f, new_mac, VHCA_ETHERTYPE_TEST, 50, 2);
    vhca_rx_post(d, 2);
    vhca_wire_send(d, old_f, n_old);
    vhca_wire_send(d, new_f, n_new);
    expect_in_ring(d, new_f, n_new);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 1);
    vhca_test_stop(d);
}

/* SET_RX_FILTER with @flags and the @n addresses at @macs. */
static uint8_t set_rx_filter(VhcaTestDev *d, uint32_t flags, uint32_t count,
                             const uint8_t (*macs)[6], unsigned n)
{
    struct vhca_rx_filter f;
    unsigned i;

    memset(&f, 0, sizeof(f));
    f.flags = cpu_to_le32(flags);
    f.count = cpu_to_le32(count);
    for (i = 0; i < n; i++) {
        memcpy(f.mac[i], macs[i], 6);
    }
    return vhca_cmd_mbox(d, VHCA_CMD_SET_RX_FILTER, &f, sizeof(f), NULL,
                         NULL);
}

/*
 * The multicast filter through the real device: open until programmed,
 * then only the listed groups (and broadcast), ALLMULTI, a refused list
 * that changes nothing, and a reset that opens it again.  Frames arrive
 * in order, so a frame in the ring means the ones before it were judged.
 */
static void test_rx_mcast_filter(void)
{
    static const uint8_t joined[1][6] = {
        { 0x01, 0x00, 0x5e, 0x07, 0x07, 0x07 },     /* 239.7.7.7 */
    };
    static const uint8_t unicast[1][6] = {
        { 0x52, 0x54, 0x00, 0x01, 0x02, 0x03 },
    };
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t in_list[64], not_in[64], bcast[64];
    size_t n_in, n_not, n_b;

    n_in = vhca_frame_eth(in_list, joined[0], VHCA_ETHERTYPE_TEST, 50, 1);
    n_not = vhca_frame_eth(not_in, mcast_mac, VHCA_ETHERTYPE_TEST, 50, 2);
    n_b = vhca_frame_eth(bcast, vhca_bcast_mac, VHCA_ETHERTYPE_TEST, 50, 3);
    vhca_rx_post(d, 8);

    /* Never programmed: every multicast passes. */
    vhca_wire_send(d, not_in, n_not);
    expect_in_ring(d, not_in, n_not);

    /* Only the listed group and broadcast. */
    g_assert_cmpuint(set_rx_filter(d, 0, 1, joined, 1), ==, VHCA_ST_OK);
    vhca_wire_send(d, not_in, n_not);
    vhca_wire_send(d, in_list, n_in);
    vhca_wire_send(d, bcast, n_b);
    expect_in_ring(d, in_list, n_in);
    expect_in_ring(d, bcast, n_b);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_MCAST_FILTERED), ==, 1);

    /*
     * A refused list leaves it as it was.  (Which lists are refused:
     * tests/common's table.)
     */
    g_assert_cmpuint(set_rx_filter(d, 0, 1, unicast, 1), ==,
                     VHCA_ST_BAD_PARAM);
    vhca_wire_send(d, not_in, n_not);
    vhca_wire_send(d, in_list, n_in);
    expect_in_ring(d, in_list, n_in);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_MCAST_FILTERED), ==, 2);

    /* ALLMULTI. */
    g_assert_cmpuint(set_rx_filter(d, VHCA_RX_FILTER_ALLMULTI, 0, NULL, 0),
                     ==, VHCA_ST_OK);
    vhca_wire_send(d, not_in, n_not);
    expect_in_ring(d, not_in, n_not);

    /* An empty list: no multicast but broadcast. */
    g_assert_cmpuint(set_rx_filter(d, 0, 0, NULL, 0), ==, VHCA_ST_OK);
    vhca_wire_send(d, in_list, n_in);
    vhca_wire_send(d, bcast, n_b);
    expect_in_ring(d, bcast, n_b);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_MCAST_FILTERED), ==, 3);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_ERRORS), ==, 0);

    /* A reset opens it again. */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_forget_rings(d);
    vhca_admin_setup(d, 3, 4);
    vhca_eth_setup(d, 3, 3, RX_BUF_LEN, ETH_ENABLE);
    vhca_rx_post(d, 1);
    vhca_wire_send(d, not_in, n_not);
    expect_in_ring(d, not_in, n_not);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_RX_MCAST_FILTERED), ==, 0);
    vhca_test_stop(d);
}

/* Frames sent while the link is down complete with DONE and vanish. */
static void test_tx_link_down(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t lost[64], sent[64];
    size_t n_lost, n_sent;
    struct vhca_eqe eqe;

    n_lost = vhca_frame_eth(lost, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 1);
    n_sent = vhca_frame_eth(sent, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 2);

    vhca_set_link(d, false);
    vhca_eq_next(d, &eqe);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_PORT_CHANGE);
    vhca_eq_ack(d, true);
    g_assert_cmphex(vhca_tx_frame(d, lost, n_lost), ==, VHCA_ETH_DESC_DONE);
    g_assert_true(vhca_wire_idle(d));

    vhca_set_link(d, true);
    vhca_eq_next(d, &eqe);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_PORT_CHANGE);
    vhca_eq_ack(d, true);
    g_assert_cmphex(vhca_tx_frame(d, sent, n_sent), ==, VHCA_ETH_DESC_DONE);
    expect_on_wire(d, sent, n_sent);
    g_assert_true(vhca_wire_idle(d));
    vhca_test_stop(d);
}

static void expect_port_change(VhcaTestDev *d, uint8_t state)
{
    struct vhca_eqe eqe;

    vhca_eq_next(d, &eqe);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_PORT_CHANGE);
    g_assert_cmpuint(eqe.subtype, ==, state);
    g_assert_cmpuint(le32_to_cpu(eqe.data[0]), ==, 1);
    vhca_eq_ack(d, true);
}

static void expect_port_state(VhcaTestDev *d, uint8_t state, uint8_t phys)
{
    struct vhca_port_attr port;

    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.state, ==, state);
    g_assert_cmpuint(port.phys_state, ==, phys);
}

static void test_link_state(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);

    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP, ==,
                    VHCA_STATUS_LINK_UP);
    expect_port_state(d, VHCA_PORT_ACTIVE, VHCA_PORT_PHYS_LINK_UP);
    vhca_msix_fired(d, VHCA_VECTOR_ASYNC);

    vhca_set_link(d, false);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_LINK_UP, 0,
                  "STATUS.LINK_UP = 0");
    expect_port_change(d, VHCA_PORT_DOWN);
    vhca_msix_wait(d, VHCA_VECTOR_ASYNC);
    expect_port_state(d, VHCA_PORT_DOWN, VHCA_PORT_PHYS_DISABLED);

    /* Down again is no change: the next event is the command's own. */
    vhca_set_link(d, false);
    expect_port_state(d, VHCA_PORT_DOWN, VHCA_PORT_PHYS_DISABLED);

    vhca_msix_fired(d, VHCA_VECTOR_ASYNC);
    vhca_set_link(d, true);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_LINK_UP,
                  VHCA_STATUS_LINK_UP, "STATUS.LINK_UP = 1");
    expect_port_change(d, VHCA_PORT_ACTIVE);
    vhca_msix_wait(d, VHCA_VECTOR_ASYNC);
    expect_port_state(d, VHCA_PORT_ACTIVE, VHCA_PORT_PHYS_LINK_UP);
    g_assert_false(vhca_eq_peek(d, NULL));
    vhca_test_stop(d);
}

/*
 * Vector 1: each interrupt disarms it; ETH_IRQ_ARM re-arms and, if work
 * completed meanwhile, interrupts at once (so NAPI never misses one).
 */
static void test_msix_vector1(void)
{
    VhcaTestDev *d = start_eth(RX_BUF_LEN, ETH_ENABLE);
    uint8_t frame[64];
    size_t len;

    len = vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 1);
    vhca_msix_fired(d, VHCA_VECTOR_ASYNC);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));

    /* Armed with nothing completed: nothing to report. */
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 1);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));

    /* Armed: a TX completion interrupts. */
    vhca_tx_frame(d, frame, len);
    vhca_msix_wait(d, VHCA_VECTOR_ETH);
    expect_on_wire(d, frame, len);

    /* Disarmed: the next one does not. */
    vhca_tx_frame(d, frame, len);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));
    expect_on_wire(d, frame, len);

    /* Re-arming after missed work interrupts at once. */
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 1);
    vhca_msix_wait(d, VHCA_VECTOR_ETH);

    /* An RX completion while disarmed, then arming: at once again. */
    vhca_rx_post(d, 1);
    vhca_wire_send(d, frame, len);
    expect_in_ring(d, frame, len);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 0xffffffff);
    vhca_msix_wait(d, VHCA_VECTOR_ETH);

    /* Nothing new since that interrupt: arming just arms ... */
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 1);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));

    /* ... and an RX completion interrupts. */
    vhca_rx_post(d, 1);
    vhca_wire_send(d, frame, len);
    expect_in_ring(d, frame, len);
    vhca_msix_wait(d, VHCA_VECTOR_ETH);

    /* Ethernet work never uses the async vector. */
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));
    vhca_test_stop(d);
}

/* Ethernet ring configuration is checked per ring when enabling. */
static void test_eth_ring_config(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint64_t ring = guest_alloc(&d->alloc, 16 << 15);
    static const struct {
        const char *what;
        uint32_t base_lo, log_size, enable;
        int64_t offset;
    } bad[] = {
        { "TX base 8-byte aligned", VHCA_REG_TX_BASE_LO, 3,
          VHCA_ETH_CTRL_TX_ENABLE, 8 },
        { "TX log size 0", VHCA_REG_TX_BASE_LO, 0,
          VHCA_ETH_CTRL_TX_ENABLE, 0 },
        { "TX log size 16", VHCA_REG_TX_BASE_LO, 16,
          VHCA_ETH_CTRL_TX_ENABLE, 0 },
        { "TX base zero", VHCA_REG_TX_BASE_LO, 3,
          VHCA_ETH_CTRL_TX_ENABLE, -1 },
        { "RX base 4-byte aligned", VHCA_REG_RX_BASE_LO, 3,
          VHCA_ETH_CTRL_RX_ENABLE, 4 },
        { "RX log size 16", VHCA_REG_RX_BASE_LO, 16,
          VHCA_ETH_CTRL_RX_ENABLE, 0 },
        { "RX base zero", VHCA_REG_RX_BASE_LO, 3,
          VHCA_ETH_CTRL_RX_ENABLE, -1 },
    };
    uint8_t frame[64];
    size_t len;
    int i;

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_test_message("%s", bad[i].what);
        vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
        vhca_wr_base(d, bad[i].base_lo,
                     bad[i].offset < 0 ? 0 : ring + bad[i].offset);
        /* LOG_SIZE follows BASE_HI: BASE_LO + 8. */
        vhca_wr(d, bad[i].base_lo + 8, bad[i].log_size);
        vhca_wr(d, VHCA_REG_ETH_CTRL, bad[i].enable);
        g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL) & bad[i].enable, ==, 0);
        g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==,
                         VHCA_ERR_BAD_RING_CONFIG);
    }

    /* The largest ring (log 15) is accepted. */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_wr_base(d, VHCA_REG_TX_BASE_LO, ring);
    vhca_wr(d, VHCA_REG_TX_LOG_SIZE, VHCA_ETH_MAX_LOG_SIZE);
    vhca_wr(d, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_TX_ENABLE);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL), ==,
                    VHCA_ETH_CTRL_TX_ENABLE);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_NONE);

    /* Each ring on its own: a good TX ring runs next to a refused RX. */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_wr_base(d, VHCA_REG_TX_BASE_LO, ring + 16);   /* 16-byte aligned */
    vhca_wr(d, VHCA_REG_TX_LOG_SIZE, 3);
    vhca_wr_base(d, VHCA_REG_RX_BASE_LO, ring + 4096 + 8);
    vhca_wr(d, VHCA_REG_RX_LOG_SIZE, 3);
    vhca_wr(d, VHCA_REG_ETH_CTRL, ETH_ENABLE);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL), ==,
                    VHCA_ETH_CTRL_TX_ENABLE);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==,
                     VHCA_ERR_BAD_RING_CONFIG);

    /* Base and size are frozen while the ring runs. */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_forget_rings(d);
    vhca_eth_setup(d, 3, 3, RX_BUF_LEN, ETH_ENABLE);
    vhca_wr(d, VHCA_REG_TX_BASE_LO, (uint32_t)ring);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_TX_BASE_LO), ==, (uint32_t)d->tx.addr);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==,
                     VHCA_ERR_BAD_RING_CONFIG);
    vhca_wr(d, VHCA_REG_RX_LOG_SIZE, 2);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_LOG_SIZE), ==, 3);

    /* Re-enabling a ring restarts its indices at 0. */
    len = vhca_frame_eth(frame, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 6);
    g_assert_cmphex(vhca_tx_frame(d, frame, len), ==, VHCA_ETH_DESC_DONE);
    expect_on_wire(d, frame, len);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 1);
    vhca_wr(d, VHCA_REG_ETH_CTRL, 0);
    vhca_wr(d, VHCA_REG_ETH_CTRL, ETH_ENABLE);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ETH_CTRL), ==, ETH_ENABLE);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 0);
    d->tx.pi = d->tx.ci = 0;

    /* A producer index more than the ring size ahead is refused. */
    vhca_wr(d, VHCA_REG_TX_PI, 9);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_ETH_DOORBELL);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_TX_CI), ==, 0);
    vhca_wr(d, VHCA_REG_RX_PI, 9);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 0);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_ETH_DOORBELL);
    g_assert_true(vhca_wire_idle(d));

    /* And the rings still work. */
    len = vhca_frame_eth(frame, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 7);
    g_assert_cmphex(vhca_tx_frame(d, frame, len), ==, VHCA_ETH_DESC_DONE);
    expect_on_wire(d, frame, len);
    vhca_rx_post(d, 1);
    len = vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 8);
    vhca_wire_send(d, frame, len);
    expect_in_ring(d, frame, len);
    vhca_test_stop(d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/eth/tx", test_tx);
    vhca_add_test("/vhca/eth/tx-wrap", test_tx_wrap);
    vhca_add_test("/vhca/eth/tx-bad-descriptors", test_tx_bad_descriptors);
    vhca_add_bad_dma_tests("/vhca/eth/tx-buffer-not-ram",
                           test_tx_buffer_not_ram);
    vhca_add_test("/vhca/eth/tx-link-down", test_tx_link_down);
    vhca_add_test("/vhca/eth/rx", test_rx);
    vhca_add_test("/vhca/eth/rx-wrap", test_rx_wrap);
    vhca_add_test("/vhca/eth/rx-drops", test_rx_drops);
    vhca_add_test("/vhca/eth/rx-jumbo", test_rx_jumbo);
    vhca_add_bad_dma_tests("/vhca/eth/rx-buffer-not-ram",
                           test_rx_buffer_not_ram);
    vhca_add_test("/vhca/eth/rx-buffer-too-small", test_rx_buffer_too_small);
    vhca_add_test("/vhca/eth/rx-buffer-empty", test_rx_buffer_empty);
    vhca_add_test("/vhca/eth/rings-outside-ram", test_rings_outside_ram);
    vhca_add_test("/vhca/eth/rx-no-buffer-drops", test_rx_no_buffer_drops);
    vhca_add_test("/vhca/eth/rx-set-mac", test_rx_set_mac);
    vhca_add_test("/vhca/eth/rx-mcast-filter", test_rx_mcast_filter);
    vhca_add_test("/vhca/eth/link-state", test_link_state);
    vhca_add_test("/vhca/eth/msix-vector1", test_msix_vector1);
    vhca_add_test("/vhca/eth/ring-config", test_eth_ring_config);

    return g_test_run();
}
