/*
 * vhca engine unit tests: Ethernet TX/RX rings, the RX filter, MTU limits
 * and vector 1 interrupts (docs/specs/vhca.rst, "Ethernet datapath").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"

#define ETH_ENTRIES (1u << ETH_LOG)
#define BOTH (VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE)

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 };
static const uint8_t mcast[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };

/* Put a frame of @len bytes at TX_BUF_ADDR + @slot * 16 KiB. */
static uint64_t tx_frame(Harness *h, unsigned slot, size_t len)
{
    uint64_t addr = TX_BUF_ADDR + slot * 0x4000ull;
    uint8_t *p = ram_ptr(h, addr, len);

    g_assert_cmpuint(len, >=, 14);
    build_eth(p, other, 0x88b5, len - 14);
    p[14] = (uint8_t)slot;
    return addr;
}

static void test_enable_validation(void)
{
    Harness *h = harness_new(NULL);

    /* Nothing programmed: both enables refused, PROMISC still taken. */
    reg_write(h, VHCA_REG_ETH_CTRL, BOTH | VHCA_ETH_CTRL_PROMISC);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==,
                    VHCA_ETH_CTRL_PROMISC);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==,
                     VHCA_ERR_BAD_RING_CONFIG);

    reg_write(h, VHCA_REG_TX_BASE_LO, (uint32_t)TX_RING_ADDR + 8);
    reg_write(h, VHCA_REG_TX_LOG_SIZE, 2);
    reg_write(h, VHCA_REG_RX_BASE_LO, (uint32_t)RX_RING_ADDR);
    reg_write(h, VHCA_REG_RX_LOG_SIZE, 16);
    reg_write(h, VHCA_REG_ETH_CTRL, BOTH);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 4);

    /* Each ring on its own: TX valid, RX still bad. */
    reg_write(h, VHCA_REG_TX_BASE_LO, (uint32_t)TX_RING_ADDR);
    reg_write(h, VHCA_REG_ETH_CTRL, BOTH);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==,
                    VHCA_ETH_CTRL_TX_ENABLE);
    reg_write(h, VHCA_REG_RX_LOG_SIZE, 15);
    reg_write(h, VHCA_REG_ETH_CTRL, BOTH);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==, BOTH);
    /* Reserved bits do not stick. */
    reg_write(h, VHCA_REG_ETH_CTRL, 0xfffffff8 | BOTH);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==, BOTH);
    harness_free(h);
}

static void test_tx_basic(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_eth_desc d;
    uint64_t addr;

    eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE);
    addr = tx_frame(h, 0, 60);
    tx_post(h, 0, addr, 60);

    g_assert_cmpuint(h->nframes, ==, 1);
    g_assert_cmpuint(h->frames[0].len, ==, 60);
    g_assert_cmpmem(h->frames[0].data, 60, ram_ptr(h, addr, 60), 60);
    d = tx_desc(h, 0);
    g_assert_cmphex(d.flags, ==, VHCA_ETH_DESC_DONE);
    g_assert_cmpuint(d.len, ==, 60);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_PACKETS), ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_BYTES), ==, 60);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_ERRORS), ==, 0);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_tx_wrap(void)
{
    Harness *h = harness_new(NULL);
    uint32_t i;

    eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE);
    /* 4-entry ring: 11 frames in batches of up to 4. */
    for (i = 0; i < 11; i++) {
        struct vhca_eth_desc d = {
            .addr = GUINT64_TO_LE(tx_frame(h, i % 4, 64 + i)),
            .len = GUINT16_TO_LE(64 + i),
        };

        ram_write(h, TX_RING_ADDR + (i % ETH_ENTRIES) * 16, &d, sizeof(d));
        if (i % 4 == 3 || i == 10) {
            reg_write(h, VHCA_REG_TX_PI, i + 1);
            g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, i + 1);
        }
    }
    g_assert_cmpuint(h->nframes, ==, 11);
    for (i = 0; i < 11; i++) {
        g_assert_cmpuint(h->frames[i].len, ==, 64 + i);
        g_assert_cmpuint(h->frames[i].data[14], ==, i % 4);
    }
    /* Exactly a ring's worth ahead is fine; one more is refused. */
    reg_write(h, VHCA_REG_TX_PI, 11 + ETH_ENTRIES + 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==, VHCA_ERR_ETH_DOORBELL);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 11);
    g_assert_cmpuint(h->nframes, ==, 11);
    harness_free(h);
}

static void test_tx_errors(void)
{
    Harness *h = harness_new(NULL);
    uint64_t addr = tx_frame(h, 0, 1518);

    eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE);
    tx_post(h, 0, addr, 13);                        /* runt */
    tx_post(h, 1, addr, 1519);                      /* > MTU + 18 */
    tx_post(h, 2, BAD_ADDR, 64);                    /* not guest RAM */
    tx_post(h, 3, RAM_BASE + RAM_SIZE - 10, 64);    /* straddles the end */
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmphex(tx_desc(h, i).flags, ==,
                        VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    }
    g_assert_cmpuint(h->nframes, ==, 0);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 4);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_ERRORS), ==, 4);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_PACKETS), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_TX], ==, 4);

    /* 14 and MTU + 18 are the inclusive limits. */
    tx_post(h, 4, addr, 14);
    tx_post(h, 5, addr, 1518);
    g_assert_cmpuint(h->nframes, ==, 2);
    g_assert_cmphex(tx_desc(h, 5).flags, ==, VHCA_ETH_DESC_DONE);
    harness_free(h);
}

static void test_tx_mtu(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_cmd_mtu_in in = { .mtu = GUINT32_TO_LE(9000) };
    uint64_t addr = tx_frame(h, 0, 9018);

    harness_enable(h);
    eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE);
    tx_post(h, 0, addr, 9018);
    g_assert_cmphex(tx_desc(h, 0).flags, ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_SET_MTU, 1, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    tx_post(h, 1, addr, 9018);
    g_assert_cmphex(tx_desc(h, 1).flags, ==, VHCA_ETH_DESC_DONE);
    tx_post(h, 2, addr, 9019);
    g_assert_cmphex(tx_desc(h, 2).flags, ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    /* A length field can claim 65535: still refused, nothing read. */
    tx_post(h, 3, addr, 0xffff);
    g_assert_cmphex(tx_desc(h, 3).flags, ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_cmpuint(h->nframes, ==, 1);
    g_assert_cmpuint(h->frames[0].len, ==, 9018);
    harness_free(h);
}

static void test_tx_link_down(void)
{
    Harness *h = harness_new(NULL);
    uint64_t addr = tx_frame(h, 0, 100);

    eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE);
    vhca_core_set_link(&h->core, false);
    tx_post(h, 0, addr, 100);
    /* No carrier: completes, is not sent, is not an error. */
    g_assert_cmphex(tx_desc(h, 0).flags, ==, VHCA_ETH_DESC_DONE);
    g_assert_cmpuint(h->nframes, ==, 0);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_ERRORS), ==, 0);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 1);
    vhca_core_set_link(&h->core, true);
    tx_post(h, 1, addr, 100);
    g_assert_cmpuint(h->nframes, ==, 1);
    harness_free(h);
}

static void test_tx_bad_ring(void)
{
    Harness *h = harness_new(NULL);

    reg_write(h, VHCA_REG_TX_BASE_LO, (uint32_t)BAD_ADDR);
    reg_write(h, VHCA_REG_TX_LOG_SIZE, ETH_LOG);
    reg_write(h, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_TX_ENABLE);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==,
                    VHCA_ETH_CTRL_TX_ENABLE);
    reg_write(h, VHCA_REG_TX_PI, 2);
    /* The descriptor cannot be read: TX stops, CI stays. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 0);
    g_assert_cmpuint(counter(h, VHCA_CNT_TX_ERRORS), ==, 1);
    g_assert_cmpuint(h->nframes, ==, 0);
    harness_free(h);
}

static void test_tx_disabled(void)
{
    Harness *h = harness_new(NULL);
    uint64_t addr = tx_frame(h, 0, 100);

    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    tx_post(h, 0, addr, 100);
    g_assert_cmpuint(h->nframes, ==, 0);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_TX], ==, 1);

    /* Enabling resets the indices; the doorbell then works. */
    reg_write(h, VHCA_REG_ETH_CTRL, BOTH);
    tx_post(h, 0, addr, 100);
    g_assert_cmpuint(h->nframes, ==, 1);

    /* Disable and re-enable: TX_CI back to 0. */
    reg_write(h, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_RX_ENABLE);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 1);
    reg_write(h, VHCA_REG_ETH_CTRL, BOTH);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 0);
    harness_free(h);
}

static void post_rx(Harness *h, uint32_t first, uint32_t count,
                    uint16_t size)
{
    for (uint32_t i = first; i < first + count; i++) {
        rx_post(h, i, size);
    }
    reg_write(h, VHCA_REG_RX_PI, first + count);
}

static void test_rx_basic(void)
{
    Harness *h = harness_new(NULL);
    uint8_t frame[200];
    size_t len = build_eth(frame, harness_mac, 0x88b5, 100);
    struct vhca_eth_desc d;

    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    /*
     * Enabled with no buffer: the device still takes frames (RoCE must
     * not wait behind the Ethernet ring); it drops what it cannot place.
     */
    g_assert_true(vhca_core_can_receive(&h->core));
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_NO_BUFFER);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_NO_BUFFER), ==, 1);
    h->rx_ready_calls = 0;
    post_rx(h, 0, 1, RX_BUF_SIZE);
    g_assert_cmpuint(h->rx_ready_calls, ==, 1);
    g_assert_true(vhca_core_can_receive(&h->core));

    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    d = rx_desc(h, 0);
    g_assert_cmphex(d.flags, ==, VHCA_ETH_DESC_DONE);
    g_assert_cmpuint(d.len, ==, len);
    g_assert_cmpmem(ram_ptr(h, d.addr, len), len, frame, len);
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_PACKETS), ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_BYTES), ==, len);
    g_assert_true(vhca_core_can_receive(&h->core));

    /* No buffer again: dropped and counted, the ring is untouched. */
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_NO_BUFFER);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_NO_BUFFER), ==, 2);
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, 1);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_rx_wrap(void)
{
    Harness *h = harness_new(NULL);
    uint8_t frame[200];
    uint32_t i;

    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    post_rx(h, 0, ETH_ENTRIES, RX_BUF_SIZE);
    for (i = 0; i < 3 * ETH_ENTRIES; i++) {
        size_t len = build_eth(frame, harness_mac, 0x88b5, 50 + i);
        struct vhca_eth_desc d;

        frame[14] = (uint8_t)i;
        g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                        VHCA_RX_DELIVERED);
        d = rx_desc(h, i);
        g_assert_cmpuint(d.len, ==, len);
        g_assert_cmpuint(*(uint8_t *)ram_ptr(h, d.addr + 14, 1), ==, i);
        /* Re-post the buffer just consumed. */
        rx_post(h, i, RX_BUF_SIZE);
        reg_write(h, VHCA_REG_RX_PI, i + 1 + ETH_ENTRIES);
    }
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, 3 * ETH_ENTRIES);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_PACKETS), ==, 3 * ETH_ENTRIES);

    /* More than a ring's worth of buffers claimed: refused. */
    reg_write(h, VHCA_REG_RX_PI, 3 * ETH_ENTRIES + ETH_ENTRIES + 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==, VHCA_ERR_ETH_DOORBELL);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 1);
    harness_free(h);
}

static void test_rx_size_limits(void)
{
    Harness *h = harness_new(NULL);
    static uint8_t frame[VHCA_ETH_MAX_FRAME + 100];
    struct vhca_cmd_mtu_in in = { .mtu = GUINT32_TO_LE(9000) };
    size_t len;

    harness_enable(h);
    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    post_rx(h, 0, 2, 200);

    /* Runt. */
    len = build_eth(frame, harness_mac, 0x88b5, 0);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, 13), ==,
                    VHCA_RX_ERROR);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, 0), ==,
                    VHCA_RX_ERROR);
    /* Bigger than the buffer: dropped, the buffer stays posted. */
    len = build_eth(frame, harness_mac, 0x88b5, 201 - 14);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_ERROR);
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_RX], ==, 1);
    /* Exactly the buffer size fits. */
    len = build_eth(frame, harness_mac, 0x88b5, 200 - 14);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_ERRORS), ==, 3);

    /* Larger than MTU + 18 even with a big buffer. */
    reg_write(h, VHCA_REG_ETH_CTRL, 0);
    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    post_rx(h, 0, 1, RX_BUF_SIZE);
    len = build_eth(frame, harness_mac, 0x88b5, 1519 - 14);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_ERROR);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len - 1), ==,
                    VHCA_RX_DELIVERED);
    post_rx(h, 1, 1, RX_BUF_SIZE);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_SET_MTU, 1, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    len = build_eth(frame, harness_mac, 0x88b5, 9018 - 14);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    post_rx(h, 2, 1, RX_BUF_SIZE);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len + 1), ==,
                    VHCA_RX_ERROR);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, sizeof(frame)), ==,
                    VHCA_RX_ERROR);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_ERRORS), ==, 6);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_PACKETS), ==, 3);
    harness_free(h);
}

static void test_rx_bad_buffer(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_eth_desc d = {
        .addr = GUINT64_TO_LE(BAD_ADDR),
        .len = GUINT16_TO_LE(2048),
    };
    uint8_t frame[100];
    size_t len = build_eth(frame, harness_mac, 0x88b5, 50);

    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    ram_write(h, RX_RING_ADDR, &d, sizeof(d));
    rx_post(h, 1, RX_BUF_SIZE);
    reg_write(h, VHCA_REG_RX_PI, 2);

    /* The bad buffer completes with ERROR; the ring moves on. */
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_ERROR);
    d = rx_desc(h, 0);
    g_assert_cmphex(d.flags, ==, VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_cmpuint(d.len, ==, 0);
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, 1);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_ERRORS), ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_PACKETS), ==, 1);
    harness_free(h);
}

static void test_rx_bad_ring(void)
{
    Harness *h = harness_new(NULL);
    uint8_t frame[100];
    size_t len = build_eth(frame, harness_mac, 0x88b5, 50);

    reg_write(h, VHCA_REG_RX_BASE_LO, (uint32_t)BAD_ADDR);
    reg_write(h, VHCA_REG_RX_LOG_SIZE, ETH_LOG);
    reg_write(h, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_RX_ENABLE);
    reg_write(h, VHCA_REG_RX_PI, 1);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_ERROR);
    g_assert_cmpuint(reg_read(h, VHCA_REG_RX_CI), ==, 0);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_ERRORS), ==, 1);
    harness_free(h);
}

static void test_rx_filter(void)
{
    Harness *h = harness_new(NULL);
    static const uint8_t new_mac[6] = { 0x02, 0, 0, 0, 0, 7 };
    struct vhca_cmd_mac_in in;
    uint8_t frame[100];
    size_t len;

    harness_enable(h);
    eth_setup(h, VHCA_ETH_CTRL_RX_ENABLE);
    post_rx(h, 0, ETH_ENTRIES, RX_BUF_SIZE);

    len = build_eth(frame, other, 0x88b5, 50);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_FILTERED);
    len = build_eth(frame, bcast, 0x88b5, 50);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    len = build_eth(frame, mcast, 0x88b5, 50);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);

    /* SET_MAC moves the filter. */
    memset(&in, 0, sizeof(in));
    memcpy(in.mac, new_mac, 6);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_SET_MAC, 1, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    len = build_eth(frame, harness_mac, 0x88b5, 50);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_FILTERED);
    len = build_eth(frame, new_mac, 0x88b5, 50);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);

    /* PROMISC takes everything. */
    reg_write(h, VHCA_REG_ETH_CTRL,
              VHCA_ETH_CTRL_RX_ENABLE | VHCA_ETH_CTRL_PROMISC);
    len = build_eth(frame, other, 0x88b5, 50);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_PACKETS), ==, 4);
    /* Filtered frames are neither errors nor guest errors. */
    g_assert_cmpuint(counter(h, VHCA_CNT_RX_ERRORS), ==, 0);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);

    /* RX disabled: frames are dropped, not queued. */
    reg_write(h, VHCA_REG_ETH_CTRL, 0);
    g_assert_true(vhca_core_can_receive(&h->core));
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_FILTERED);
    harness_free(h);
}

static void test_irq_moderation(void)
{
    Harness *h = harness_new(NULL);
    uint64_t addr = tx_frame(h, 0, 64);
    uint8_t frame[100];
    size_t len = build_eth(frame, harness_mac, 0x88b5, 50);

    eth_setup(h, BOTH);
    /* Not armed after enable: completions only set "pending". */
    tx_post(h, 0, addr, 64);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 0);
    /* Arming with completions pending interrupts at once (NAPI). */
    reg_write(h, VHCA_REG_ETH_IRQ_ARM, 0);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 1);
    /* That consumed the arm: the next completion is quiet. */
    tx_post(h, 1, addr, 64);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 1);
    reg_write(h, VHCA_REG_ETH_IRQ_ARM, 1);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 2);

    /* Armed with nothing pending: the next RX completion interrupts. */
    reg_write(h, VHCA_REG_ETH_IRQ_ARM, 1);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 2);
    post_rx(h, 0, 2, RX_BUF_SIZE);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 2);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 3);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_DELIVERED);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 3);

    /* Dropped frames complete nothing: no interrupt. */
    reg_write(h, VHCA_REG_ETH_IRQ_ARM, 1);      /* pending from 2nd RX */
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 4);
    reg_write(h, VHCA_REG_ETH_IRQ_ARM, 1);
    g_assert_cmpint(vhca_core_receive(&h->core, frame, len), ==,
                    VHCA_RX_NO_BUFFER);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ETH], ==, 4);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 0);
    harness_free(h);
}

static void test_rx_ready_on_enable_change(void)
{
    Harness *h = harness_new(NULL);

    eth_setup(h, 0);
    h->rx_ready_calls = 0;
    reg_write(h, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_RX_ENABLE);
    reg_write(h, VHCA_REG_ETH_CTRL, 0);
    g_assert_cmpuint(h->rx_ready_calls, ==, 2);
    /* The same doorbell twice: nothing new, no flush. */
    reg_write(h, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_RX_ENABLE);
    reg_write(h, VHCA_REG_RX_PI, 1);
    reg_write(h, VHCA_REG_RX_PI, 1);
    g_assert_cmpuint(h->rx_ready_calls, ==, 4);
    harness_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/eth/enable-validation", test_enable_validation);
    g_test_add_func("/vhca/eth/tx-basic", test_tx_basic);
    g_test_add_func("/vhca/eth/tx-wrap", test_tx_wrap);
    g_test_add_func("/vhca/eth/tx-errors", test_tx_errors);
    g_test_add_func("/vhca/eth/tx-mtu", test_tx_mtu);
    g_test_add_func("/vhca/eth/tx-link-down", test_tx_link_down);
    g_test_add_func("/vhca/eth/tx-bad-ring", test_tx_bad_ring);
    g_test_add_func("/vhca/eth/tx-disabled", test_tx_disabled);
    g_test_add_func("/vhca/eth/rx-basic", test_rx_basic);
    g_test_add_func("/vhca/eth/rx-wrap", test_rx_wrap);
    g_test_add_func("/vhca/eth/rx-size-limits", test_rx_size_limits);
    g_test_add_func("/vhca/eth/rx-bad-buffer", test_rx_bad_buffer);
    g_test_add_func("/vhca/eth/rx-bad-ring", test_rx_bad_ring);
    g_test_add_func("/vhca/eth/rx-filter", test_rx_filter);
    g_test_add_func("/vhca/eth/irq-moderation", test_irq_moderation);
    g_test_add_func("/vhca/eth/rx-ready-on-enable-change",
                    test_rx_ready_on_enable_change);
    return g_test_run();
}
