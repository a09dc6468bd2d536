/*
 * vhca engine unit tests: the admin queue and every admin command
 * (docs/specs/vhca.rst, "Admin queue", "Commands").  The commands the
 * device must refuse are one table shared with the qtests
 * (tests/common/vhca-admin-cases.c, run by test-vhca-admin-cases).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"
#include "vhca-rdma.h"

static void test_nop_and_event(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_admin_cmd cmd;
    struct vhca_eqe eqe;

    harness_enable(h);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_NOP, 0xcafe0001, NULL, 0, NULL),
                     ==, VHCA_ST_OK);
    cmd = admin_entry(h, 0);
    g_assert_cmpuint(cmd.syndrome, ==, 0);
    for (unsigned i = 0; i < sizeof(cmd.out); i++) {
        g_assert_cmpuint(cmd.out[i], ==, 0);
    }
    g_assert_cmpuint(cmd.rsvd1, ==, 0);

    /* CMD_DONE: subtype = status, data[0] = slot, data[1] = token. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 1);
    eqe = aeq_entry(h, 0);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmpuint(eqe.subtype, ==, VHCA_ST_OK);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, 0);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[1]), ==, 0xcafe0001);
    g_assert_cmpuint(eqe.owner, ==, 1);
    /* The EQ was armed by ENABLE: one interrupt, then disarmed. */
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_NOP, 2, NULL, 0, NULL), ==, 0);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);

    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_COMMANDS), ==, 2);
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_ERRORS), ==, 0);
    g_assert_cmpuint(h->admin_done_calls, ==, 2);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_opcode_names(void)
{
    g_assert_cmpstr(vhca_admin_opcode_name(0xffff), ==, "UNKNOWN");
    g_assert_cmpstr(vhca_admin_opcode_name(VHCA_CMD_MAX), ==, "UNKNOWN");
    g_assert_cmpstr(vhca_admin_opcode_name(VHCA_CMD_ADD_GID), ==,
                    "ADD_GID");
}

static void test_query_device(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    struct vhca_cmd_dma_in in = {
        .addr = GUINT64_TO_LE(DATA_ADDR),
        .len = GUINT32_TO_LE(4096),
    };
    struct vhca_device_attr attr;
    uint8_t *after;
    Harness *h;

    cfg.gid_tbl_len = 100;
    cfg.num_db_pages = 1000;
    cfg.num_vectors = 20;
    cfg.max_srq = 77;
    h = harness_new(&cfg);
    harness_enable(h);
    memset(ram_ptr(h, DATA_ADDR, 512), 0xee, 512);

    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_QUERY_DEVICE, 1, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    ram_read(h, DATA_ADDR, &attr, sizeof(attr));
    /* 52:54:00:12:34:56 -> 50:54:00:ff:fe:12:34:56 (U/L bit flipped). */
    g_assert_cmphex(GUINT64_FROM_LE(attr.node_guid), ==,
                    0x505400fffe123456ull);
    g_assert_cmphex(GUINT64_FROM_LE(attr.sys_image_guid), ==,
                    0x505400fffe123456ull);
    g_assert_cmphex(GUINT64_FROM_LE(attr.fw_version), ==, 1ull << 32);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.vendor_part_id), ==,
                     VHCA_PCI_DEVICE_ID);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_uctx), ==, 1000);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.gid_tbl_len), ==, 100);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.num_comp_vectors), ==, 18);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_pkeys), ==, 1);
    g_assert_cmphex(GUINT32_FROM_LE(attr.cap_flags), ==,
                    VHCA_DEV_CAP_FLUSH_GLOBAL | VHCA_DEV_CAP_ATOMIC_WRITE);
    /* The RDMA limits the device enforces (spec, "RDMA resources"). */
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_qp), ==, cfg.max_qp);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_cq), ==, cfg.max_cq);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_mr), ==, cfg.max_mr);
    /* Windows share the MR table (spec, "Memory windows"). */
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_mw), ==, cfg.max_mr);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_pd), ==, cfg.max_pd);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_srq), ==, cfg.max_srq);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_srq_wr), ==, 16384);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_qp_wr), ==, 16384);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_sge), ==, 12);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_srq_sge), ==, 7);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_cqe), ==, (1u << 19) - 1);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_inline_data), ==, 192);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_qp_rd_atom), ==, 128);
    g_assert_cmphex(GUINT64_FROM_LE(attr.page_size_cap), ==, 0x7ffff000);
    g_assert_cmphex(GUINT64_FROM_LE(attr.max_mr_size), ==, 1ull << 48);
    for (unsigned i = 0; i < G_N_ELEMENTS(attr.rsvd); i++) {
        g_assert_cmpuint(attr.rsvd[i], ==, 0);
    }
    /* Exactly 256 bytes written, even with a bigger buffer. */
    after = ram_ptr(h, DATA_ADDR + 256, 1);
    g_assert_cmphex(*after, ==, 0xee);
    harness_free(h);
}

static struct vhca_port_attr query_port(Harness *h, uint8_t *status,
                                        uint8_t port)
{
    struct vhca_cmd_port_in in = { .port = port };
    struct vhca_port_attr attr;

    *status = admin_cmd(h, VHCA_CMD_QUERY_PORT, 0x9000 + port, &in,
                        sizeof(in), &attr);
    return attr;
}

static uint8_t set_mtu(Harness *h, uint32_t mtu)
{
    struct vhca_cmd_mtu_in in = { .mtu = GUINT32_TO_LE(mtu) };

    return admin_cmd(h, VHCA_CMD_SET_MTU, mtu, &in, sizeof(in), NULL);
}

static void test_query_port(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_port_attr attr;
    uint8_t st;

    harness_enable(h);
    attr = query_port(h, &st, 1);
    g_assert_cmpuint(st, ==, VHCA_ST_OK);
    g_assert_cmpuint(attr.state, ==, VHCA_PORT_ACTIVE);
    g_assert_cmpuint(attr.phys_state, ==, VHCA_PORT_PHYS_LINK_UP);
    g_assert_cmpuint(attr.max_mtu, ==, VHCA_IB_MTU_4096);
    g_assert_cmpuint(attr.active_mtu, ==, VHCA_IB_MTU_1024);
    g_assert_cmpuint(attr.active_speed, ==, 32);        /* IB_SPEED_EDR */
    g_assert_cmpuint(attr.active_width, ==, 1);         /* IB_WIDTH_1X */
    g_assert_cmpuint(GUINT16_FROM_LE(attr.gid_tbl_len), ==, 16);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.eth_mtu), ==, 1500);

    vhca_core_set_link(&h->core, false);
    attr = query_port(h, &st, 1);
    g_assert_cmpuint(attr.state, ==, VHCA_PORT_DOWN);
    g_assert_cmpuint(attr.phys_state, ==, VHCA_PORT_PHYS_DISABLED);
    harness_free(h);
}

static void test_active_mtu(void)
{
    /* Same worst-case overhead as the kernel's iboe_get_mtu(): 96 bytes. */
    static const struct {
        uint32_t eth_mtu;
        uint8_t ib_mtu;
    } cases[] = {
        { 9000, VHCA_IB_MTU_4096 }, { 4192, VHCA_IB_MTU_4096 },
        { 4191, VHCA_IB_MTU_2048 }, { 2144, VHCA_IB_MTU_2048 },
        { 2143, VHCA_IB_MTU_1024 }, { 1500, VHCA_IB_MTU_1024 },
        { 1120, VHCA_IB_MTU_1024 }, { 1119, VHCA_IB_MTU_512 },
        { 608, VHCA_IB_MTU_512 }, { 607, VHCA_IB_MTU_256 },
        { 352, VHCA_IB_MTU_256 }, { 351, 0 }, { 68, 0 },
    };
    Harness *h = harness_new(NULL);
    struct vhca_port_attr attr;
    uint8_t st;

    harness_enable(h);
    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_assert_cmpuint(set_mtu(h, cases[i].eth_mtu), ==, VHCA_ST_OK);
        attr = query_port(h, &st, 1);
        g_assert_cmpuint(st, ==, VHCA_ST_OK);
        g_assert_cmpuint(GUINT32_FROM_LE(attr.eth_mtu), ==, cases[i].eth_mtu);
        g_assert_cmpuint(attr.active_mtu, ==, cases[i].ib_mtu);
        /* SET_MTU raises no PORT_CHANGE: only CMD_DONE events. */
        g_assert_cmpuint(aeq_entry(h, reg_read(h, VHCA_REG_AEQ_PI) - 2).type,
                         ==, VHCA_EQE_CMD_DONE);
        /* Keep the 8-entry EQ from overflowing. */
        reg_write(h, VHCA_REG_AEQ_DB, reg_read(h, VHCA_REG_AEQ_PI));
    }
    g_assert_cmpuint(counter(h, VHCA_CNT_EQ_OVERFLOWS), ==, 0);
    harness_free(h);
}

/* The ends of 68..9000 are accepted. */
static void test_set_mtu_range(void)
{
    Harness *h = harness_new(NULL);

    harness_enable(h);
    g_assert_cmpuint(set_mtu(h, 68), ==, VHCA_ST_OK);
    g_assert_cmpuint(set_mtu(h, 9000), ==, VHCA_ST_OK);
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_ERRORS), ==, 0);
    harness_free(h);
}

static uint8_t gid_cmd(Harness *h, uint16_t op, uint16_t index, uint8_t port,
                       uint8_t type, const uint8_t gid[16])
{
    struct vhca_cmd_gid_in in = {
        .index = GUINT16_TO_LE(index),
        .port = port,
        .type = type,
    };

    if (gid) {
        memcpy(in.gid, gid, 16);
    }
    return admin_cmd(h, op, index, &in, sizeof(in), NULL);
}

static void test_gid_table(void)
{
    Harness *h = harness_new(NULL);
    uint8_t v4[16], v6[16] = { 0xfe, 0x80, [15] = 0x42 };

    harness_enable(h);
    gid_from_ipv4(v4, 192, 168, 1, 7);
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 0, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV4, v4), ==, VHCA_ST_OK);
    g_assert_true(h->core.gid_tbl[0].valid);
    g_assert_cmpmem(h->core.gid_tbl[0].gid, 16, v4, 16);
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 15, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV6, v6), ==, VHCA_ST_OK);
    /* ADD_GID overwrites. */
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 0, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV6, v6), ==, VHCA_ST_OK);
    g_assert_cmpmem(h->core.gid_tbl[0].gid, 16, v6, 16);
    g_assert_cmpuint(h->core.gid_tbl[0].type, ==, VHCA_GID_TYPE_ROCE_V2_IPV6);

    /* DEL_GID ignores port, type and gid; deleting twice is fine. */
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_DEL_GID, 15, 0, 0, NULL), ==,
                     VHCA_ST_OK);
    g_assert_false(h->core.gid_tbl[15].valid);
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_DEL_GID, 15, 0, 0, NULL), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);

    /* A refused ADD_GID leaves the entry empty. */
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 1, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV4, v6), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_false(h->core.gid_tbl[1].valid);
    harness_free(h);
}

/*
 * The receive demux and the loopback test find a GID wherever it sits in
 * the table, also above empty entries and after the top one is deleted
 * (the lookup stops at the highest valid entry).
 */
static void test_gid_lookup(void)
{
    Harness *h = harness_new(NULL);
    uint8_t v4[16], v6[16] = { 0xfe, 0x80, [15] = 0x42 };

    harness_enable(h);
    gid_from_ipv4(v4, 192, 168, 1, 7);
    g_assert_false(vhca_gid_is_ours(&h->core, v6));
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 15, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV6, v6), ==, VHCA_ST_OK);
    g_assert_true(vhca_gid_is_ours(&h->core, v6));
    g_assert_false(vhca_gid_is_ours(&h->core, v4));
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 3, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV4, v4), ==, VHCA_ST_OK);
    g_assert_true(vhca_gid_is_ours(&h->core, v4));
    g_assert_true(vhca_gid_is_ours(&h->core, v6));

    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_DEL_GID, 15, 0, 0, NULL), ==,
                     VHCA_ST_OK);
    g_assert_false(vhca_gid_is_ours(&h->core, v6));
    g_assert_true(vhca_gid_is_ours(&h->core, v4));
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_DEL_GID, 3, 0, 0, NULL), ==,
                     VHCA_ST_OK);
    g_assert_false(vhca_gid_is_ours(&h->core, v4));
    /* Re-adding below the old top is found again. */
    g_assert_cmpuint(gid_cmd(h, VHCA_CMD_ADD_GID, 1, 1,
                             VHCA_GID_TYPE_ROCE_V2_IPV6, v6), ==, VHCA_ST_OK);
    g_assert_true(vhca_gid_is_ours(&h->core, v6));
    harness_free(h);
}

static uint8_t set_mac(Harness *h, const uint8_t mac[6])
{
    struct vhca_cmd_mac_in in;

    memset(&in, 0, sizeof(in));
    memcpy(in.mac, mac, 6);
    return admin_cmd(h, VHCA_CMD_SET_MAC, 0x3ac, &in, sizeof(in), NULL);
}

static void test_set_mac(void)
{
    Harness *h = harness_new(NULL);
    static const uint8_t good[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };
    static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0, 0, 1 };

    harness_enable(h);
    g_assert_cmpuint(set_mac(h, good), ==, VHCA_ST_OK);
    g_assert_cmpmem(h->core.mac, 6, good, 6);
    /* A refused MAC leaves the current one. */
    g_assert_cmpuint(set_mac(h, mcast), ==, VHCA_ST_BAD_PARAM);
    g_assert_cmpmem(h->core.mac, 6, good, 6);
    /* The node GUID stays derived from the permanent MAC. */
    g_assert_cmpmem(h->core.cfg.mac, 6, harness_mac, 6);
    harness_free(h);
}

/* Pages are handed out lowest first; a freed one is handed out again. */
static void test_uctx(void)
{
    Harness *h = harness_new(NULL);     /* 4 doorbell pages */
    struct vhca_cmd_uctx_in in = { .db_page = 0 };
    struct vhca_cmd_uctx_out out;

    harness_enable(h);
    for (uint32_t i = 0; i < 4; i++) {
        g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ALLOC_UCTX, i, NULL, 0, &out),
                         ==, VHCA_ST_OK);
        g_assert_cmpuint(GUINT32_FROM_LE(out.db_page), ==, i);
    }
    in.db_page = GUINT32_TO_LE(2);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_DEALLOC_UCTX, 10, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ALLOC_UCTX, 12, NULL, 0, &out),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(GUINT32_FROM_LE(out.db_page), ==, 2);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_uctx_1024_pages(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    struct vhca_cmd_uctx_in in;
    struct vhca_cmd_uctx_out out;
    Harness *h;

    cfg.num_db_pages = 1024;
    h = harness_new(&cfg);
    harness_enable(h);
    for (uint32_t i = 0; i < 1024; i++) {
        g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ALLOC_UCTX, i, NULL, 0, &out),
                         ==, VHCA_ST_OK);
        g_assert_cmpuint(GUINT32_FROM_LE(out.db_page), ==, i);
        reg_write(h, VHCA_REG_AEQ_DB, reg_read(h, VHCA_REG_AEQ_PI));
    }
    in.db_page = GUINT32_TO_LE(1023);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_DEALLOC_UCTX, 1, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    harness_free(h);
}

static void test_batch_and_wrap(void)
{
    Harness *h = harness_new(NULL);     /* 8-entry admin queue */
    uint32_t pi = 0;

    harness_enable(h);
    /*
     * Ten full rings' worth, eight commands per doorbell, crossing the
     * 16-bit ADMQ_PI wrap too: start just below it.
     */
    h->core.admq.ci = 0xfff0;
    pi = 0xfff0;
    for (unsigned round = 0; round < 10; round++) {
        for (unsigned i = 0; i < 8; i++) {
            admin_post(h, pi + i, VHCA_CMD_NOP, (pi + i) * 3, NULL, 0);
        }
        pi += 8;
        /* A driver keeping a 16-bit index. */
        reg_write(h, VHCA_REG_ADMQ_PI, pi & 0xffff);
        g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI) & 0xffff, ==,
                         pi & 0xffff);
        for (unsigned i = 0; i < 8; i++) {
            struct vhca_admin_cmd cmd = admin_entry(h, pi - 8 + i);

            g_assert_cmpuint(cmd.done, ==, 1);
            g_assert_cmpuint(cmd.status, ==, VHCA_ST_OK);
            g_assert_cmpuint(GUINT32_FROM_LE(cmd.token), ==,
                             (pi - 8 + i) * 3);
        }
        reg_write(h, VHCA_REG_AEQ_DB, reg_read(h, VHCA_REG_AEQ_PI));
    }
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_COMMANDS), ==, 80);
    g_assert_cmpuint(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                     ==, 0);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_ring_full_doorbell(void)
{
    Harness *h = harness_new(NULL);     /* 8-entry admin queue */

    harness_enable(h);
    /* Nine commands claimed in an eight-entry ring: refused. */
    reg_write(h, VHCA_REG_ADMQ_PI, 9);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 0);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, VHCA_STATUS_ADMQ_ERROR);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DOORBELL);
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_COMMANDS), ==, 0);
    /* "Behind" CI is far ahead modulo 2^16: refused as well. */
    reg_write(h, VHCA_REG_ADMQ_PI, 0xffff);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 2);

    /* Exactly a full ring is fine, and clears ADMQ_ERROR. */
    for (unsigned i = 0; i < 8; i++) {
        admin_post(h, i, VHCA_CMD_NOP, i, NULL, 0);
    }
    reg_write(h, VHCA_REG_ADMQ_PI, 8);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 8);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, 0);
    /* ERROR keeps the reason of the last refusal. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DOORBELL);
    harness_free(h);
}

static void test_doorbell_while_disabled(void)
{
    Harness *h = harness_new(NULL);

    admin_post(h, 0, VHCA_CMD_NOP, 1, NULL, 0);
    reg_write(h, VHCA_REG_ADMQ_PI, 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_ADMQ], ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_COMMANDS), ==, 0);
    harness_free(h);
}

static void test_admq_bad_dma(void)
{
    Harness *h = harness_new(NULL);

    /* The ring's second slot lies past the end of guest RAM. */
    reg_write(h, VHCA_REG_ADMQ_BASE_LO,
              (uint32_t)(RAM_BASE + RAM_SIZE - 64));
    reg_write(h, VHCA_REG_ADMQ_LOG_SIZE, 2);
    reg_write(h, VHCA_REG_AEQ_BASE_LO, (uint32_t)AEQ_ADDR);
    reg_write(h, VHCA_REG_AEQ_LOG_SIZE, AEQ_LOG);
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(reg_read(h, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);

    memset(ram_ptr(h, RAM_BASE + RAM_SIZE - 64, 64), 0, 64);
    reg_write(h, VHCA_REG_ADMQ_PI, 3);
    /* Slot 0 ran, slot 1 could not be read: the queue stops there. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DMA);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, VHCA_STATUS_ADMQ_ERROR);
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_COMMANDS), ==, 1);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_ADMQ], ==, 1);

    /* Next doorbell: retried from CI, fails again, nothing else runs. */
    reg_write(h, VHCA_REG_ADMQ_PI, 3);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 1);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_ADMQ], ==, 2);
    harness_free(h);
}

static void test_output_write_fails(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_admin_cmd cmd;

    harness_enable(h);
    /* The output half of the entry cannot be written. */
    h->fail_dma_write_after = 1;
    admin_post(h, 0, VHCA_CMD_NOP, 77, NULL, 0);
    reg_write(h, VHCA_REG_ADMQ_PI, 1);
    cmd = admin_entry(h, 0);
    g_assert_cmpuint(cmd.done, ==, 0);
    /* The command still completed: CI moved, the event tells the driver. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_ADMIN_ERRORS), ==, 1);
    g_assert_cmpuint(aeq_entry(h, 0).type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmpuint(GUINT32_FROM_LE(aeq_entry(h, 0).data[1]), ==, 77);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_ADMQ], ==, 1);
    harness_free(h);
}

static void test_reserved_ignored(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_cmd_gid_in in;
    uint8_t v4[16];

    harness_enable(h);
    memset(&in, 0xff, sizeof(in));
    gid_from_ipv4(v4, 1, 2, 3, 4);
    in.index = GUINT16_TO_LE(2);
    in.port = 1;
    in.type = VHCA_GID_TYPE_ROCE_V2_IPV4;
    in.vlan = 0;                    /* a field, checked (test-vhca-eth) */
    memcpy(in.gid, v4, 16);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ADD_GID, 1, &in, sizeof(in),
                               NULL), ==, VHCA_ST_OK);
    harness_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/admin/nop-and-event", test_nop_and_event);
    g_test_add_func("/vhca/admin/opcode-names", test_opcode_names);
    g_test_add_func("/vhca/admin/query-device", test_query_device);
    g_test_add_func("/vhca/admin/query-port", test_query_port);
    g_test_add_func("/vhca/admin/active-mtu", test_active_mtu);
    g_test_add_func("/vhca/admin/set-mtu-range", test_set_mtu_range);
    g_test_add_func("/vhca/admin/gid-table", test_gid_table);
    g_test_add_func("/vhca/admin/gid-lookup", test_gid_lookup);
    g_test_add_func("/vhca/admin/set-mac", test_set_mac);
    g_test_add_func("/vhca/admin/uctx", test_uctx);
    g_test_add_func("/vhca/admin/uctx-1024-pages", test_uctx_1024_pages);
    g_test_add_func("/vhca/admin/batch-and-wrap", test_batch_and_wrap);
    g_test_add_func("/vhca/admin/ring-full-doorbell",
                    test_ring_full_doorbell);
    g_test_add_func("/vhca/admin/doorbell-while-disabled",
                    test_doorbell_while_disabled);
    g_test_add_func("/vhca/admin/bad-dma", test_admq_bad_dma);
    g_test_add_func("/vhca/admin/output-write-fails",
                    test_output_write_fails);
    g_test_add_func("/vhca/admin/reserved-ignored", test_reserved_ignored);
    return g_test_run();
}
