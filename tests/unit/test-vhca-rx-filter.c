/*
 * vhca engine unit tests: the multicast RX filter and SET_RX_FILTER
 * (docs/specs/vhca.rst, "RX filter").  The lists SET_RX_FILTER refuses
 * are rows of the table shared with the qtests
 * (tests/common/vhca-admin-cases.c).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"

#define ETH_ENTRIES (1u << ETH_LOG)

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 };
/* IPv4 239.7.7.7 and 239.8.8.8, IPv6 all-nodes. */
static const uint8_t mc_a[6] = { 0x01, 0x00, 0x5e, 0x07, 0x07, 0x07 };
static const uint8_t mc_b[6] = { 0x01, 0x00, 0x5e, 0x08, 0x08, 0x08 };
static const uint8_t mc_c[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };

/* A device with the admin queue running and every RX buffer posted. */
typedef struct FilterDev {
    Harness *h;
    uint32_t rx_pi;
} FilterDev;

static void filter_dev_start(FilterDev *f)
{
    f->h = harness_new(NULL);
    harness_enable(f->h);
    eth_setup(f->h, VHCA_ETH_CTRL_RX_ENABLE);
    for (f->rx_pi = 0; f->rx_pi < ETH_ENTRIES; f->rx_pi++) {
        rx_post(f->h, f->rx_pi, RX_BUF_SIZE);
    }
    reg_write(f->h, VHCA_REG_RX_PI, f->rx_pi);
}

/* Receive a frame to @dst; a delivered frame's buffer is posted again. */
static VhcaRxResult filter_dev_rx(FilterDev *f, const uint8_t dst[6])
{
    uint8_t frame[64];
    size_t len = build_eth(frame, dst, 0x88b5, 50);
    VhcaRxResult r = vhca_core_receive(&f->h->core, frame, len);

    if (r == VHCA_RX_DELIVERED) {
        rx_post(f->h, f->rx_pi, RX_BUF_SIZE);
        reg_write(f->h, VHCA_REG_RX_PI, ++f->rx_pi);
    }
    return r;
}

/* SET_RX_FILTER of @flags and the @nmacs addresses at @macs. */
static uint8_t set_filter(Harness *h, uint32_t flags,
                          const uint8_t (*macs)[6], unsigned nmacs)
{
    struct vhca_rx_filter mbox;

    memset(&mbox, 0, sizeof(mbox));
    mbox.flags = GUINT32_TO_LE(flags);
    mbox.count = GUINT32_TO_LE(nmacs);
    for (unsigned i = 0; i < nmacs; i++) {
        memcpy(mbox.mac[i], macs[i], 6);
    }
    return rdma_cmd(h, VHCA_CMD_SET_RX_FILTER, &mbox, sizeof(mbox), NULL,
                    NULL);
}

/* ---- the filter rule, one frame per case ------------------------------ */

typedef struct RxCase {
    const char *name;
    bool program;                   /* send SET_RX_FILTER { flags, mc_a } */
    uint32_t flags;
    bool promisc;
    const uint8_t *dst;
    VhcaRxResult want;
    bool counted;                   /* in RX_MCAST_FILTERED */
} RxCase;

static const RxCase rx_cases[] = {
    /* Never programmed since reset: open to every multicast. */
    { "unprogrammed/listed", false, 0, false, mc_a, VHCA_RX_DELIVERED, false },
    { "unprogrammed/unlisted", false, 0, false, mc_b, VHCA_RX_DELIVERED,
      false },
    { "unprogrammed/other-unicast", false, 0, false, other,
      VHCA_RX_FILTERED, false },
    /* A list: only its entries, broadcast and our MAC. */
    { "list/listed", true, 0, false, mc_a, VHCA_RX_DELIVERED, false },
    { "list/unlisted", true, 0, false, mc_b, VHCA_RX_FILTERED, true },
    { "list/unlisted-ipv6", true, 0, false, mc_c, VHCA_RX_FILTERED, true },
    { "list/broadcast", true, 0, false, bcast, VHCA_RX_DELIVERED, false },
    { "list/our-mac", true, 0, false, harness_mac, VHCA_RX_DELIVERED, false },
    { "list/other-unicast", true, 0, false, other, VHCA_RX_FILTERED, false },
    /* ALLMULTI: every multicast. */
    { "allmulti/unlisted", true, VHCA_RX_FILTER_ALLMULTI, false, mc_b,
      VHCA_RX_DELIVERED, false },
    { "allmulti/other-unicast", true, VHCA_RX_FILTER_ALLMULTI, false, other,
      VHCA_RX_FILTERED, false },
    /* PROMISC: everything, whatever the list. */
    { "promisc/unlisted", true, 0, true, mc_b, VHCA_RX_DELIVERED, false },
    { "promisc/other-unicast", true, 0, true, other, VHCA_RX_DELIVERED,
      false },
};

static void test_rx_rule(const void *data)
{
    const RxCase *c = data;
    uint32_t ctrl = VHCA_ETH_CTRL_RX_ENABLE |
                    (c->promisc ? VHCA_ETH_CTRL_PROMISC : 0);
    FilterDev f;

    filter_dev_start(&f);
    reg_write(f.h, VHCA_REG_ETH_CTRL, ctrl);
    if (c->program) {
        g_assert_cmpuint(set_filter(f.h, c->flags, &mc_a, 1), ==,
                         VHCA_ST_OK);
    }
    g_assert_cmpint(filter_dev_rx(&f, c->dst), ==, c->want);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_MCAST_FILTERED), ==,
                     c->counted ? 1 : 0);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_PACKETS), ==,
                     c->want == VHCA_RX_DELIVERED ? 1 : 0);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_ERRORS), ==, 0);
    g_assert_cmpuint(guest_errors_total(f.h), ==, 0);
    harness_free(f.h);
}

/* ---- a refused SET_RX_FILTER ------------------------------------------- */

/*
 * A refused list leaves the filter as it was, even when the bad entry is
 * the last one, read after the good ones.  (Which lists are refused, with
 * which status and syndrome, are rows of the shared table,
 * tests/common/vhca-admin-cases.c.)
 */
static void test_refused_keeps_filter(void)
{
    const uint8_t macs[3][6] = {
        { 0x01, 0x00, 0x5e, 0x08, 0x08, 0x08 },     /* mc_b */
        { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 },     /* mc_c */
        { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 },     /* unicast */
    };
    FilterDev f;

    filter_dev_start(&f);
    g_assert_cmpuint(set_filter(f.h, 0, &mc_a, 1), ==, VHCA_ST_OK);
    g_assert_cmpuint(set_filter(f.h, VHCA_RX_FILTER_ALLMULTI, macs, 3), ==,
                     VHCA_ST_BAD_PARAM);

    /* The filter is the one before: mc_a only, not ALLMULTI. */
    g_assert_cmpint(filter_dev_rx(&f, mc_a), ==, VHCA_RX_DELIVERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_b), ==, VHCA_RX_FILTERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_c), ==, VHCA_RX_FILTERED);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_MCAST_FILTERED), ==, 2);
    harness_free(f.h);
}

/* ---- the list as a whole ---------------------------------------------- */

/* A new list replaces the old one; an empty list passes no multicast. */
static void test_replace(void)
{
    static const uint8_t ab[2][6] = {
        { 0x01, 0x00, 0x5e, 0x07, 0x07, 0x07 },
        { 0x01, 0x00, 0x5e, 0x08, 0x08, 0x08 },
    };
    FilterDev f;

    filter_dev_start(&f);
    g_assert_cmpuint(set_filter(f.h, 0, ab, 2), ==, VHCA_ST_OK);
    g_assert_cmpint(filter_dev_rx(&f, mc_a), ==, VHCA_RX_DELIVERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_b), ==, VHCA_RX_DELIVERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_c), ==, VHCA_RX_FILTERED);

    g_assert_cmpuint(set_filter(f.h, 0, &mc_c, 1), ==, VHCA_ST_OK);
    g_assert_cmpint(filter_dev_rx(&f, mc_a), ==, VHCA_RX_FILTERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_b), ==, VHCA_RX_FILTERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_c), ==, VHCA_RX_DELIVERED);

    /* ALLMULTI with a list, then the list alone again. */
    g_assert_cmpuint(set_filter(f.h, VHCA_RX_FILTER_ALLMULTI, &mc_c, 1), ==,
                     VHCA_ST_OK);
    g_assert_cmpint(filter_dev_rx(&f, mc_a), ==, VHCA_RX_DELIVERED);
    g_assert_cmpuint(set_filter(f.h, 0, &mc_c, 1), ==, VHCA_ST_OK);
    g_assert_cmpint(filter_dev_rx(&f, mc_a), ==, VHCA_RX_FILTERED);

    g_assert_cmpuint(set_filter(f.h, 0, NULL, 0), ==, VHCA_ST_OK);
    g_assert_cmpint(filter_dev_rx(&f, mc_c), ==, VHCA_RX_FILTERED);
    g_assert_cmpint(filter_dev_rx(&f, bcast), ==, VHCA_RX_DELIVERED);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_MCAST_FILTERED), ==, 5);
    g_assert_cmpuint(guest_errors_total(f.h), ==, 0);
    harness_free(f.h);
}

/*
 * 64 entries fit (the last one is matched); entries' reserved bytes are
 * ignored; broadcast may be listed.
 */
static void test_full_list(void)
{
    struct vhca_rx_filter mbox;
    struct vhca_cmd_dma_in in = {
        .addr = GUINT64_TO_LE(MBOX_ADDR),
        .len = GUINT32_TO_LE(sizeof(mbox)),
    };
    uint8_t last[6];
    FilterDev f;

    filter_dev_start(&f);
    memset(&mbox, 0, sizeof(mbox));
    mbox.count = GUINT32_TO_LE(VHCA_MAX_MCAST_MACS);
    for (unsigned i = 0; i < VHCA_MAX_MCAST_MACS; i++) {
        memcpy(mbox.mac[i], mc_c, 6);
        mbox.mac[i][5] = (uint8_t)(0x80 + i);
        mbox.mac[i][6] = 0xa5;
        mbox.mac[i][7] = 0x5a;
    }
    memcpy(mbox.mac[0], bcast, 6);
    memcpy(last, mbox.mac[VHCA_MAX_MCAST_MACS - 1], 6);
    ram_write(f.h, MBOX_ADDR, &mbox, sizeof(mbox));
    g_assert_cmpuint(admin_cmd(f.h, VHCA_CMD_SET_RX_FILTER, 1, &in,
                               sizeof(in), NULL), ==, VHCA_ST_OK);

    g_assert_cmpint(filter_dev_rx(&f, last), ==, VHCA_RX_DELIVERED);
    g_assert_cmpint(filter_dev_rx(&f, bcast), ==, VHCA_RX_DELIVERED);
    g_assert_cmpint(filter_dev_rx(&f, mc_c), ==, VHCA_RX_FILTERED);
    harness_free(f.h);
}

/* CTRL.RESET opens the filter again (ALLMULTI until programmed). */
static void test_reset_opens(void)
{
    FilterDev f;

    filter_dev_start(&f);
    g_assert_cmpuint(set_filter(f.h, 0, &mc_a, 1), ==, VHCA_ST_OK);
    g_assert_cmpint(filter_dev_rx(&f, mc_b), ==, VHCA_RX_FILTERED);

    reg_write(f.h, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    harness_enable(f.h);
    eth_setup(f.h, VHCA_ETH_CTRL_RX_ENABLE);
    for (f.rx_pi = 0; f.rx_pi < ETH_ENTRIES; f.rx_pi++) {
        rx_post(f.h, f.rx_pi, RX_BUF_SIZE);
    }
    reg_write(f.h, VHCA_REG_RX_PI, f.rx_pi);
    g_assert_cmpint(filter_dev_rx(&f, mc_b), ==, VHCA_RX_DELIVERED);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_MCAST_FILTERED), ==, 0);
    harness_free(f.h);
}

/*
 * RoCEv2 to one of our GIDs goes to the engine before the filter looks
 * at the destination MAC: a multicast MAC the list does not name does not
 * stop it, and it is not counted as filtered.
 */
static void test_roce_before_filter(void)
{
    static const uint8_t ip[4] = { 10, 0, 0, 1 };
    uint8_t gid[16];
    uint8_t frame[128];
    size_t len;
    FilterDev f;

    filter_dev_start(&f);
    gid_from_ipv4(gid, ip[0], ip[1], ip[2], ip[3]);
    g_assert_cmpuint(add_gid(f.h, 0, VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(set_filter(f.h, 0, &mc_a, 1), ==, VHCA_ST_OK);

    len = build_udp4(frame, ip, VHCA_ROCE_V2_UDP_PORT, 40);
    memcpy(frame, mc_b, 6);
    g_assert_cmpint(vhca_core_receive(&f.h->core, frame, len), ==,
                    VHCA_RX_ROCE);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_ROCE_RX_PACKETS), ==, 1);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_RX_MCAST_FILTERED), ==, 0);
    harness_free(f.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    for (size_t i = 0; i < G_N_ELEMENTS(rx_cases); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/rx-filter/rule/%s",
                                                rx_cases[i].name);

        g_test_add_data_func(path, &rx_cases[i], test_rx_rule);
    }
    g_test_add_func("/vhca/rx-filter/refused-keeps-filter",
                    test_refused_keeps_filter);
    g_test_add_func("/vhca/rx-filter/replace", test_replace);
    g_test_add_func("/vhca/rx-filter/full-list", test_full_list);
    g_test_add_func("/vhca/rx-filter/reset-opens", test_reset_opens);
    g_test_add_func("/vhca/rx-filter/roce-before-filter",
                    test_roce_before_filter);
    return g_test_run();
}
