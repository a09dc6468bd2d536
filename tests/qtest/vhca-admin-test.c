/*
 * vhca conformance: the admin queue and every admin command
 * (docs/specs/vhca.rst "Admin queue", "Commands", ring rules under "BAR0
 * registers").  The commands the device must refuse are one table shared
 * with the engine unit tests (tests/common/vhca-admin-cases.c, run by
 * vhca-admin-cases-test).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "vhca-qdriver.h"

#define ADMQ_LOG        3
#define AEQ_LOG         6

static VhcaTestDev *start_enabled(const char *opts)
{
    VhcaTestDev *d = vhca_test_start(true, opts);

    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    return d;
}

static void check_nop(VhcaTestDev *d)
{
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
}

static void test_nop(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    uint8_t junk[32];
    uint8_t out[16];

    check_nop(d);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 1);

    /* Reserved input bytes are ignored. */
    memset(junk, 0xa5, sizeof(junk));
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, junk, sizeof(junk), out),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 2);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ADMIN_COMMANDS), ==, 2);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ADMIN_ERRORS), ==, 0);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, 0);
    vhca_test_stop(d);
}

/* EUI-64 of 52:54:00:12:34:56 as a 64-bit number, U/L bit aside. */
#define TEST_MAC_EUI64          0x525400fffe123456ull
#define EUI64_UL_BIT            (0x02ull << 56)

static void test_query_device(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    struct vhca_device_attr attr;

    g_assert_cmpuint(vhca_cmd_query_device(d, &attr), ==, VHCA_ST_OK);
    g_assert_cmpuint(attr.max_uctx, ==, 64);
    g_assert_cmpuint(attr.gid_tbl_len, ==, 16);
    g_assert_cmpuint(attr.max_pkeys, ==, 1);
    g_assert_cmphex(attr.cap_flags, ==,
                    VHCA_DEV_CAP_FLUSH_GLOBAL | VHCA_DEV_CAP_ATOMIC_WRITE);
    g_assert_cmpuint(attr.num_comp_vectors, ==, 8 - 2);

    /*
     * GUIDs are the EUI-64 of the permanent MAC.  The spec does not say
     * whether the universal/local bit is inverted (modified EUI-64, as
     * rxe and IPv6 do); accept either, nothing else.
     */
    g_assert_cmphex(attr.node_guid & ~EUI64_UL_BIT, ==,
                    TEST_MAC_EUI64 & ~EUI64_UL_BIT);
    g_assert_cmphex(attr.sys_image_guid, ==, attr.node_guid);

    /*
     * The RDMA resource limits are checked against what the device
     * enforces in vhca-rdma-test (/vhca/rdma/query-device-limits).
     */

    /* SET_MAC does not move the GUIDs: they come from the permanent MAC. */
    {
        static const uint8_t mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
        struct vhca_device_attr again;

        g_assert_cmpuint(vhca_cmd_set_mac(d, mac), ==, VHCA_ST_OK);
        g_assert_cmpuint(vhca_cmd_query_device(d, &again), ==, VHCA_ST_OK);
        g_assert_cmphex(again.node_guid, ==, attr.node_guid);
    }
    vhca_test_stop(d);
}

/* QUERY_DEVICE into @addr with @len; returns the status. */
static uint8_t query_device_raw(VhcaTestDev *d, uint64_t addr, uint32_t len)
{
    struct vhca_cmd_dma_in in = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le32(len),
    };

    return vhca_cmd_exec(d, VHCA_CMD_QUERY_DEVICE, &in, sizeof(in), NULL);
}

/* Offset of the first byte at @addr that is not @val, or -1. */
static int64_t first_other_byte(VhcaTestDev *d, uint64_t addr, size_t len,
                                uint8_t val)
{
    g_autofree uint8_t *buf = g_malloc(len);

    qtest_memread(d->qts, addr, buf, len);
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != val) {
            return i;
        }
    }
    return -1;
}

static void test_query_device_buffers(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    uint64_t buf = guest_alloc(&d->alloc, 4096);

    /* A larger buffer is fine; only the 256-byte structure is written. */
    qtest_memset(d->qts, buf, 0xaa, 4096);
    g_assert_cmpuint(query_device_raw(d, buf, 4096), ==, VHCA_ST_OK);
    g_assert_cmpint(first_other_byte(d, buf, 256, 0xaa), !=, -1);
    g_assert_cmpint(first_other_byte(d, buf + 256, 4096 - 256, 0xaa), ==, -1);
    vhca_test_stop(d);
}

static void test_query_port(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    struct vhca_port_attr port;

    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.state, ==, VHCA_PORT_ACTIVE);
    g_assert_cmpuint(port.phys_state, ==, VHCA_PORT_PHYS_LINK_UP);
    g_assert_cmpuint(port.max_mtu, ==, VHCA_IB_MTU_4096);
    /* 1500 - RoCEv2 headers leaves room for 1024-byte IB payloads. */
    g_assert_cmpuint(port.active_mtu, ==, VHCA_IB_MTU_1024);
    /* ib_get_eth_speed() for 25 Gb/s: IB_SPEED_EDR (32), IB_WIDTH_1X (1). */
    g_assert_cmpuint(port.active_speed, ==, 32);
    g_assert_cmpuint(port.active_width, ==, 1);
    g_assert_cmpuint(port.gid_tbl_len, ==, 16);
    g_assert_cmpuint(port.eth_mtu, ==, 1500);
    vhca_test_stop(d);
}

static void check_port_mtu(VhcaTestDev *d, uint32_t eth_mtu, uint8_t ib_mtu)
{
    struct vhca_port_attr port;

    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.eth_mtu, ==, eth_mtu);
    g_assert_cmpuint(port.active_mtu, ==, ib_mtu);
    /* SET_MTU is not a port state change: the port stays active. */
    g_assert_cmpuint(port.state, ==, VHCA_PORT_ACTIVE);
}

static void test_set_mtu(void)
{
    VhcaTestDev *d = start_enabled(NULL);

    g_assert_cmpuint(vhca_cmd_set_mtu(d, 9000), ==, VHCA_ST_OK);
    check_port_mtu(d, 9000, VHCA_IB_MTU_4096);
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 3000), ==, VHCA_ST_OK);
    check_port_mtu(d, 3000, VHCA_IB_MTU_2048);
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 400), ==, VHCA_ST_OK);
    check_port_mtu(d, 400, VHCA_IB_MTU_256);
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 68), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 1500), ==, VHCA_ST_OK);
    check_port_mtu(d, 1500, VHCA_IB_MTU_1024);

    /* vhca_cmd_exec saw only CMD_DONE events: no PORT_CHANGE either. */
    g_assert_false(vhca_eq_peek(d, NULL));
    vhca_test_stop(d);
}

static void test_set_mac(void)
{
    static const uint8_t good[][6] = {
        { 0x52, 0x54, 0x00, 0x98, 0x76, 0x54 },
        { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },         /* locally admin. */
        { 0x00, 0x00, 0x00, 0x00, 0x00, 0x01 },
    };
    VhcaTestDev *d = start_enabled(NULL);
    int i;

    for (i = 0; i < ARRAY_SIZE(good); i++) {
        g_assert_cmpuint(vhca_cmd_set_mac(d, good[i]), ==, VHCA_ST_OK);
    }
    vhca_test_stop(d);
}

static void test_gid_table(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    uint8_t gid[16] = { 0xfe, 0x80 };
    int i;

    for (i = 0; i < 16; i++) {
        gid[15] = i;
        g_assert_cmpuint(vhca_cmd_add_gid(d, i, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                          gid), ==, VHCA_ST_OK);
    }
    /* Overwrite is allowed. */
    g_assert_cmpuint(vhca_cmd_add_gid(d, 3, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      gid), ==, VHCA_ST_OK);

    /* DEL_GID is idempotent. */
    g_assert_cmpuint(vhca_cmd_del_gid(d, 5), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_del_gid(d, 5), ==, VHCA_ST_OK);
    vhca_test_stop(d);
}

static void test_uctx(void)
{
    VhcaTestDev *d = start_enabled("db-pages=8");
    bool seen[8] = { false };
    uint32_t page, again;
    int i;

    for (i = 0; i < 8; i++) {
        g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
        g_assert_cmpuint(page, <, 8);
        g_assert_false(seen[page]);
        seen[page] = true;
    }

    /* A freed page is handed out again. */
    g_assert_cmpuint(vhca_cmd_dealloc_uctx(d, 5), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &again), ==, VHCA_ST_OK);
    g_assert_cmpuint(again, ==, 5);

    /* Every page back. */
    for (i = 0; i < 8; i++) {
        g_assert_cmpuint(vhca_cmd_dealloc_uctx(d, i), ==, VHCA_ST_OK);
    }
    vhca_test_stop(d);
}

/* A 2-entry admin queue wraps many times: slots alternate, CI counts. */
static void test_ring_wrap(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    int i;

    vhca_admin_setup(d, 1, 2);
    for (i = 0; i < 11; i++) {
        check_nop(d);
        g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, i + 1);
    }
    vhca_test_stop(d);
}

/* Filling every entry with one doorbell is allowed (PI - CI == entries). */
static void test_full_ring_batch(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_admin_cmd entry;
    struct vhca_eqe eqe;
    uint32_t i;

    vhca_admin_setup(d, 2, 4);
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(vhca_cmd_write(d, VHCA_CMD_NOP, NULL, 0, 0x100 + i),
                         ==, i);
    }
    vhca_cmd_ring(d);
    for (i = 0; i < 4; i++) {
        vhca_cmd_wait_done(d, i, &entry);
        g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
    }
    vhca_wait_reg(d, VHCA_REG_ADMQ_CI, ~0u, 4, "ADMQ_CI = 4");
    /* Executed in order: events in slot order. */
    for (i = 0; i < 4; i++) {
        vhca_eq_next(d, &eqe);
        g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CMD_DONE);
        g_assert_cmpuint(le32_to_cpu(eqe.data[0]), ==, i);
        g_assert_cmphex(le32_to_cpu(eqe.data[1]), ==, 0x100 + i);
    }
    vhca_eq_ack(d, true);
    d->admq.ci = 4;
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, 0);
    check_nop(d);
    vhca_test_stop(d);
}

/*
 * PI more than 'entries' ahead of CI: the doorbell is refused, and a
 * later valid one is accepted and clears ADMQ_ERROR.
 */
static void test_ring_full_doorbell(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_admin_cmd entry;
    struct vhca_eqe eqe;
    uint32_t i;

    vhca_admin_setup(d, 2, 4);
    for (i = 0; i < 4; i++) {
        vhca_cmd_write(d, VHCA_CMD_NOP, NULL, 0, 0x200 + i);
    }
    vhca_wr(d, VHCA_REG_ADMQ_PI, 5);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_ADMQ_ERROR,
                  VHCA_STATUS_ADMQ_ERROR, "STATUS.ADMQ_ERROR");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DOORBELL);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 0);
    for (i = 0; i < 4; i++) {
        qtest_memread(d->qts, d->admq.addr + i * sizeof(entry), &entry,
                      sizeof(entry));
        g_assert_cmpuint(entry.done, ==, 0);
    }
    g_assert_false(vhca_eq_peek(d, NULL));

    /* A PI far behind CI (negative distance) is just as bad. */
    vhca_wr(d, VHCA_REG_ADMQ_PI, 0xfff0);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DOORBELL);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 0);

    /* The valid doorbell: exactly the four commands run. */
    vhca_cmd_ring(d);
    for (i = 0; i < 4; i++) {
        vhca_cmd_wait_done(d, i, &entry);
        g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
        vhca_eq_next(d, &eqe);
        g_assert_cmphex(le32_to_cpu(eqe.data[1]), ==, 0x200 + i);
    }
    vhca_eq_ack(d, true);
    d->admq.ci = 4;
    vhca_wait_reg(d, VHCA_REG_ADMQ_CI, ~0u, 4, "ADMQ_CI = 4");
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, 0);
    g_assert_false(vhca_eq_peek(d, NULL));
    check_nop(d);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 5);
    vhca_test_stop(d);
}

typedef struct RingConfig {
    const char *what;
    int64_t admq_offset;        /* added to a good, page-aligned base */
    bool admq_zero;
    uint32_t admq_log;
    int64_t aeq_offset;
    bool aeq_zero;
    uint32_t aeq_log;
} RingConfig;

static const RingConfig bad_configs[] = {
    { "ADMQ base 8-byte aligned", 8, false, 3, 0, false, 4 },
    { "ADMQ base 32-byte aligned", 32, false, 3, 0, false, 4 },
    { "ADMQ base zero", 0, true, 3, 0, false, 4 },
    { "ADMQ log size 0", 0, false, 0, 0, false, 4 },
    { "ADMQ log size 13", 0, false, 13, 0, false, 4 },
    { "AEQ base 16-byte aligned", 0, false, 3, 16, false, 4 },
    { "AEQ base zero", 0, false, 3, 0, true, 4 },
    { "AEQ log size 0", 0, false, 3, 0, false, 0 },
    { "AEQ log size 17", 0, false, 3, 0, false, 17 },
};

/* Enabling with a misconfigured ring is refused with BAD_RING_CONFIG. */
static void test_ring_config_refused(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint64_t admq = guest_alloc(&d->alloc, 64 << 12);
    uint64_t aeq = guest_alloc(&d->alloc, 16 << 17);
    int i;

    for (i = 0; i < ARRAY_SIZE(bad_configs); i++) {
        const RingConfig *c = &bad_configs[i];

        g_test_message("%s", c->what);
        vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
        g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_NONE);
        vhca_wr_base(d, VHCA_REG_ADMQ_BASE_LO,
                     c->admq_zero ? 0 : admq + c->admq_offset);
        vhca_wr(d, VHCA_REG_ADMQ_LOG_SIZE, c->admq_log);
        vhca_wr_base(d, VHCA_REG_AEQ_BASE_LO,
                     c->aeq_zero ? 0 : aeq + c->aeq_offset);
        vhca_wr(d, VHCA_REG_AEQ_LOG_SIZE, c->aeq_log);
        vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
        g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, 0);
        g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_READY, ==, 0);
        g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==,
                         VHCA_ERR_BAD_RING_CONFIG);
    }

    /* The largest sizes are accepted (log 12 and 16). */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_admin_setup(d, VHCA_ADMQ_MAX_LOG_SIZE, VHCA_AEQ_MAX_LOG_SIZE);
    check_nop(d);
    vhca_test_stop(d);
}

/* Ring registers are frozen while the queues run. */
static void test_ring_config_while_running(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    uint64_t other = guest_alloc(&d->alloc, 4096);
    static const uint32_t frozen[] = {
        VHCA_REG_ADMQ_BASE_LO, VHCA_REG_ADMQ_BASE_HI, VHCA_REG_ADMQ_LOG_SIZE,
        VHCA_REG_AEQ_BASE_LO, VHCA_REG_AEQ_BASE_HI, VHCA_REG_AEQ_LOG_SIZE,
    };
    uint32_t before[ARRAY_SIZE(frozen)];
    int i;

    check_nop(d);
    for (i = 0; i < ARRAY_SIZE(frozen); i++) {
        before[i] = vhca_rd(d, frozen[i]);
    }
    for (i = 0; i < ARRAY_SIZE(frozen); i++) {
        /* LO gets another aligned ring, HI 1, LOG_SIZE 2. */
        vhca_wr(d, frozen[i], i % 3 == 0 ? (uint32_t)other : i % 3);
        g_assert_cmphex(vhca_rd(d, frozen[i]), ==, before[i]);
        g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==,
                         VHCA_ERR_BAD_RING_CONFIG);
    }
    /* Still running on the original rings. */
    check_nop(d);

    /* Stop, move the admin queue, start again: indices restart at 0. */
    vhca_wr(d, VHCA_REG_CTRL, 0);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_READY, ==, 0);
    vhca_admin_setup(d, 2, 3);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 0);
    check_nop(d);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 1);
    vhca_test_stop(d);
}

/* An admin queue the device cannot read: ADMQ_DMA, and no crash. */
static void test_admq_dma_error(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint64_t aeq = guest_alloc(&d->alloc, 16 << 4);

    qtest_memset(d->qts, aeq, 0, 16 << 4);
    vhca_wr_base(d, VHCA_REG_ADMQ_BASE_LO, VHCA_TEST_BAD_DMA_ADDR);
    vhca_wr(d, VHCA_REG_ADMQ_LOG_SIZE, 3);
    vhca_wr_base(d, VHCA_REG_AEQ_BASE_LO, aeq);
    vhca_wr(d, VHCA_REG_AEQ_LOG_SIZE, 4);
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    /* Aligned and non-zero: accepted; the address is only used on DMA. */
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);

    vhca_wr(d, VHCA_REG_ADMQ_PI, 1);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_ADMQ_ERROR,
                  VHCA_STATUS_ADMQ_ERROR, "STATUS.ADMQ_ERROR");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DMA);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 0);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 0);

    /* Stop, give it a real ring, and it works again. */
    vhca_wr(d, VHCA_REG_CTRL, 0);
    vhca_admin_setup(d, 3, 4);
    check_nop(d);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_ADMQ_ERROR,
                    ==, 0);
    vhca_test_stop(d);
}

/*
 * DMA follows bus mastering, also for ranges the device used before
 * (hw/vhca/vhca-dma.c keeps their RAM pointers until the guest's memory
 * map changes, and turning bus mastering off changes it): with it off the
 * admin queue cannot be read, with it on again everything works.
 */
static void test_dma_follows_bus_master(void)
{
    VhcaTestDev *d = start_enabled(NULL);
    uint16_t cmd = qpci_config_readw(d->pdev, PCI_COMMAND);

    check_nop(d);
    qpci_config_writew(d->pdev, PCI_COMMAND, cmd & ~PCI_COMMAND_MASTER);
    vhca_wr(d, VHCA_REG_ADMQ_PI, vhca_rd(d, VHCA_REG_ADMQ_CI) + 1);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_ADMQ_ERROR,
                  VHCA_STATUS_ADMQ_ERROR, "STATUS.ADMQ_ERROR");
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_ADMQ_DMA);

    qpci_config_writew(d->pdev, PCI_COMMAND, cmd);
    vhca_wr(d, VHCA_REG_CTRL, 0);
    vhca_admin_setup(d, 3, 4);
    check_nop(d);
    vhca_test_stop(d);
}

/*
 * An AEQ the device cannot write: commands still execute and report in
 * their admin queue entry, and the device keeps working.
 */
static void test_aeq_dma_error(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_admin_cmd entry;
    uint32_t i;

    d->admq.log_size = 3;
    d->admq.addr = guest_alloc(&d->alloc, 64 << 3);
    qtest_memset(d->qts, d->admq.addr, 0, 64 << 3);
    vhca_wr_base(d, VHCA_REG_ADMQ_BASE_LO, d->admq.addr);
    vhca_wr(d, VHCA_REG_ADMQ_LOG_SIZE, 3);
    vhca_wr_base(d, VHCA_REG_AEQ_BASE_LO, VHCA_TEST_BAD_DMA_ADDR);
    vhca_wr(d, VHCA_REG_AEQ_LOG_SIZE, 4);
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);

    for (i = 0; i < 3; i++) {
        uint32_t slot = vhca_cmd_post(d, VHCA_CMD_NOP, NULL, 0, i);

        vhca_cmd_wait_done(d, slot, &entry);
        g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
    }
    vhca_wait_reg(d, VHCA_REG_ADMQ_CI, ~0u, 3, "ADMQ_CI = 3");
    g_assert_cmphex(vhca_rd(d, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    vhca_test_stop(d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/admin/nop", test_nop);
    vhca_add_test("/vhca/admin/query-device", test_query_device);
    vhca_add_test("/vhca/admin/query-device-buffers",
                  test_query_device_buffers);
    vhca_add_test("/vhca/admin/query-port", test_query_port);
    vhca_add_test("/vhca/admin/set-mtu", test_set_mtu);
    vhca_add_test("/vhca/admin/set-mac", test_set_mac);
    vhca_add_test("/vhca/admin/gid-table", test_gid_table);
    vhca_add_test("/vhca/admin/uctx", test_uctx);
    vhca_add_test("/vhca/admin/ring-wrap", test_ring_wrap);
    vhca_add_test("/vhca/admin/full-ring-batch", test_full_ring_batch);
    vhca_add_test("/vhca/admin/ring-full-doorbell", test_ring_full_doorbell);
    vhca_add_test("/vhca/admin/ring-config-refused", test_ring_config_refused);
    vhca_add_test("/vhca/admin/ring-config-while-running",
                  test_ring_config_while_running);
    vhca_add_test("/vhca/admin/admq-dma-error", test_admq_dma_error);
    vhca_add_test("/vhca/admin/dma-follows-bus-master",
                  test_dma_follows_bus_master);
    vhca_add_test("/vhca/admin/aeq-dma-error", test_aeq_dma_error);

    return g_test_run();
}
