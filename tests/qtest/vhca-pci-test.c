/*
 * vhca conformance: PCI identity, BARs, capabilities, BAR0 register
 * rules, device properties, BAR2 doorbells and no migration blocker
 * (docs/specs/vhca.rst "Command line", "PCI identity", "BAR0 registers",
 * "Doorbell pages", "Migration").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include "qemu/host-utils.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "vhca-qdriver.h"

/* Size a memory BAR the way firmware does; returns its low dword flags. */
static uint64_t bar_size(VhcaTestDev *d, int bar, uint32_t *flags)
{
    uint8_t reg = PCI_BASE_ADDRESS_0 + 4 * bar;
    uint32_t lo = qpci_config_readl(d->pdev, reg);
    uint32_t hi = 0, size_lo, size_hi = ~0u;
    bool is64 = (lo & PCI_BASE_ADDRESS_MEM_TYPE_MASK) ==
                PCI_BASE_ADDRESS_MEM_TYPE_64;

    *flags = lo & ~PCI_BASE_ADDRESS_MEM_MASK;
    qpci_config_writel(d->pdev, reg, ~0u);
    size_lo = qpci_config_readl(d->pdev, reg) & PCI_BASE_ADDRESS_MEM_MASK;
    qpci_config_writel(d->pdev, reg, lo);
    if (is64) {
        hi = qpci_config_readl(d->pdev, reg + 4);
        qpci_config_writel(d->pdev, reg + 4, ~0u);
        size_hi = qpci_config_readl(d->pdev, reg + 4);
        qpci_config_writel(d->pdev, reg + 4, hi);
    }
    return ~(((uint64_t)size_hi << 32) | size_lo) + 1;
}

static void test_identity(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);

    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_VENDOR_ID), ==,
                    VHCA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_DEVICE_ID), ==,
                    VHCA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(d->pdev, PCI_REVISION_ID), ==,
                    VHCA_PCI_REVISION);
    /* Class code 0x020000: Ethernet, programming interface 0. */
    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_CLASS_DEVICE), ==,
                    VHCA_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(d->pdev, PCI_CLASS_PROG), ==, 0);
    g_assert_cmphex(qpci_config_readb(d->pdev, PCI_HEADER_TYPE) & 0x7f, ==,
                    PCI_HEADER_TYPE_NORMAL);
    vhca_test_stop(d);
}

static void test_bars(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint32_t flags;
    uint64_t size;

    size = bar_size(d, VHCA_BAR_CTRL, &flags);
    g_assert_cmphex(flags & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(flags & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(size, ==, VHCA_CTRL_BAR_SIZE);

    /* Default db-pages = 64: 256 KiB, 64-bit prefetchable. */
    size = bar_size(d, VHCA_BAR_DOORBELL, &flags);
    g_assert_cmphex(flags & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(flags & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(flags & PCI_BASE_ADDRESS_MEM_PREFETCH, ==,
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmphex(size, ==, 64 * VHCA_DB_PAGE_SIZE);

    size = bar_size(d, VHCA_BAR_MSIX, &flags);
    g_assert_cmphex(flags & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(size, !=, 0);
    vhca_test_stop(d);
}

static void test_capabilities(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint8_t exp, msix;
    uint16_t flags, type;

    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_STATUS) &
                    PCI_STATUS_CAP_LIST, ==, PCI_STATUS_CAP_LIST);

    exp = qpci_find_capability(d->pdev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(exp, !=, 0);
    flags = qpci_config_readw(d->pdev, exp + PCI_EXP_FLAGS);
    type = (flags & PCI_EXP_FLAGS_TYPE) >> 4;
    /* On pcie.0 QEMU makes an endpoint a root complex integrated one. */
    g_assert_true(type == PCI_EXP_TYPE_ENDPOINT ||
                  type == PCI_EXP_TYPE_RC_END);
    /* Function Level Reset is advertised. */
    g_assert_cmphex(qpci_config_readl(d->pdev, exp + PCI_EXP_DEVCAP) &
                    PCI_EXP_DEVCAP_FLR, ==, PCI_EXP_DEVCAP_FLR);

    msix = qpci_find_capability(d->pdev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmphex(msix, !=, 0);
    g_assert_cmpuint(qpci_msix_table_size(d->pdev), ==, 8);
    g_assert_cmpuint(qpci_config_readl(d->pdev, msix + PCI_MSIX_TABLE) &
                     PCI_MSIX_TABLE_BIR, ==, VHCA_BAR_MSIX);
    g_assert_cmpuint(qpci_config_readl(d->pdev, msix + PCI_MSIX_PBA) &
                     PCI_MSIX_PBA_BIR, ==, VHCA_BAR_MSIX);
    vhca_test_stop(d);
}

static const uint32_t ring_regs[] = {
    VHCA_REG_ADMQ_BASE_LO, VHCA_REG_ADMQ_BASE_HI, VHCA_REG_ADMQ_LOG_SIZE,
    VHCA_REG_ADMQ_CI, VHCA_REG_AEQ_BASE_LO, VHCA_REG_AEQ_BASE_HI,
    VHCA_REG_AEQ_LOG_SIZE, VHCA_REG_AEQ_PI, VHCA_REG_TX_BASE_LO,
    VHCA_REG_TX_BASE_HI, VHCA_REG_TX_LOG_SIZE, VHCA_REG_TX_CI,
    VHCA_REG_RX_BASE_LO, VHCA_REG_RX_BASE_HI, VHCA_REG_RX_LOG_SIZE,
    VHCA_REG_RX_CI, VHCA_REG_ETH_CTRL,
};

static void test_registers_power_on(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint32_t caps;
    int i;

    g_assert_cmphex(vhca_rd(d, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_VERSION), ==, 0x00010000);
    caps = vhca_rd(d, VHCA_REG_CAPS);
    g_assert_cmphex(caps & VHCA_CAP_ETH, ==, VHCA_CAP_ETH);
    g_assert_cmphex(caps & ~(VHCA_CAP_ETH | VHCA_CAP_ROCE), ==, 0);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_NUM_VECTORS), ==, 8);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_NUM_DB_PAGES), ==, 64);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, 0);
    /* The socket netdev's link is up: only LINK_UP. */
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS), ==, VHCA_STATUS_LINK_UP);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_NONE);
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        g_autofree char *what = g_strdup_printf("register 0x%03x",
                                                ring_regs[i]);

        VHCA_CHECK_EQ(G_STRLOC, what, vhca_rd(d, ring_regs[i]), 0);
    }
    for (i = 0; i < VHCA_CNT_MAX; i++) {
        g_autofree char *what = g_strdup_printf("counter %d", i);

        VHCA_CHECK_EQ(G_STRLOC, what, vhca_counter(d, i), 0);
    }
    vhca_test_stop(d);
}

static void test_register_access_rules(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    static const uint32_t ro_regs[] = {
        VHCA_REG_MAGIC, VHCA_REG_VERSION, VHCA_REG_CAPS,
        VHCA_REG_NUM_VECTORS, VHCA_REG_NUM_DB_PAGES, VHCA_REG_STATUS,
        VHCA_REG_ERROR, VHCA_REG_ADMQ_CI, VHCA_REG_AEQ_PI, VHCA_REG_TX_CI,
        VHCA_REG_RX_CI, VHCA_REG_COUNTERS, VHCA_REG_COUNTERS + 4,
        VHCA_REG_COUNTERS + 8 * VHCA_CNT_DOORBELLS,
    };
    static const uint32_t unassigned[] = {
        0x020, 0x03c, 0x054, 0x074, 0x0fc, 0x114, 0x134, 0x148, 0x1fc,
        VHCA_REG_COUNTERS + 8 * VHCA_CNT_MAX, 0x800, 0xffc,
    };
    uint32_t before[ARRAY_SIZE(ro_regs)];
    int i;

    /* RO registers ignore writes. */
    for (i = 0; i < ARRAY_SIZE(ro_regs); i++) {
        before[i] = vhca_rd(d, ro_regs[i]);
    }
    for (i = 0; i < ARRAY_SIZE(ro_regs); i++) {
        vhca_wr(d, ro_regs[i], 0xa5a5a5a5);
    }
    for (i = 0; i < ARRAY_SIZE(ro_regs); i++) {
        g_assert_cmphex(vhca_rd(d, ro_regs[i]), ==, before[i]);
    }

    /* Unassigned offsets read 0, before and after a write. */
    for (i = 0; i < ARRAY_SIZE(unassigned); i++) {
        g_assert_cmphex(vhca_rd(d, unassigned[i]), ==, 0);
        vhca_wr(d, unassigned[i], 0xdeadbeef);
        g_assert_cmphex(vhca_rd(d, unassigned[i]), ==, 0);
    }

    /* RW ring registers take naturally aligned 32-bit writes only. */
    vhca_wr(d, VHCA_REG_ADMQ_BASE_LO, 0x12345640);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_LO), ==, 0x12345640);
    vhca_wr(d, VHCA_REG_ADMQ_BASE_HI, 0x1);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_HI), ==, 0x1);
    qpci_io_writew(d->pdev, d->bar0, VHCA_REG_ADMQ_BASE_LO, 0xffff);
    qpci_io_writeb(d->pdev, d->bar0, VHCA_REG_ADMQ_BASE_LO + 1, 0xff);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_LO), ==, 0x12345640);
    qpci_io_writew(d->pdev, d->bar0, VHCA_REG_ADMQ_BASE_HI + 2, 0xffff);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_HI), ==, 0x1);
    /* A misaligned 32-bit write straddling LO and HI is ignored. */
    qpci_io_writel(d->pdev, d->bar0, VHCA_REG_ADMQ_BASE_LO + 2, 0xffffffff);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_LO), ==, 0x12345640);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_HI), ==, 0x1);
    /*
     * With rings that CTRL.ENABLE would accept, a sub-word write of
     * ENABLE must still do nothing.
     */
    vhca_wr(d, VHCA_REG_ADMQ_LOG_SIZE, 3);
    vhca_wr_base(d, VHCA_REG_AEQ_BASE_LO, 0x100000);
    vhca_wr(d, VHCA_REG_AEQ_LOG_SIZE, 2);
    qpci_io_writeb(d->pdev, d->bar0, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    qpci_io_writew(d->pdev, d->bar0, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, 0);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_READY, ==, 0);
    /* ... while the same value as a 32-bit write is accepted. */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);
    vhca_wr(d, VHCA_REG_CTRL, 0);

    /* The device still identifies itself: nothing above broke it. */
    g_assert_cmphex(vhca_rd(d, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    vhca_test_stop(d);
}

/* The admin queue works with the device's current configuration. */
static void check_nop(VhcaTestDev *d)
{
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
}

static void test_properties_small(void)
{
    VhcaTestDev *d = vhca_test_start(true, "db-pages=3,vectors=2,"
                                     "gid-table-len=1");
    static const uint8_t gid[16] = { 0xfe, 0x80, [15] = 1 };
    struct vhca_device_attr attr;
    struct vhca_port_attr port;
    uint32_t flags, page, i;

    g_assert_cmpuint(vhca_rd(d, VHCA_REG_NUM_VECTORS), ==, 2);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_NUM_DB_PAGES), ==, 3);
    g_assert_cmpuint(qpci_msix_table_size(d->pdev), ==, 2);
    /* 3 pages: a BAR covers them, rounded up to a power of two. */
    g_assert_cmphex(bar_size(d, VHCA_BAR_DOORBELL, &flags), ==,
                    pow2ceil(3 * VHCA_DB_PAGE_SIZE));

    vhca_admin_setup(d, 3, 4);
    check_nop(d);
    g_assert_cmpuint(vhca_cmd_query_device(d, &attr), ==, VHCA_ST_OK);
    g_assert_cmpuint(attr.max_uctx, ==, 3);
    g_assert_cmpuint(attr.num_comp_vectors, ==, 0);
    g_assert_cmpuint(attr.gid_tbl_len, ==, 1);
    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.gid_tbl_len, ==, 1);

    g_assert_cmpuint(vhca_cmd_add_gid(d, 1, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      gid), ==, VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      gid), ==, VHCA_ST_OK);
    for (i = 0; i < 3; i++) {
        g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
        g_assert_cmpuint(page, <, 3);
    }
    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_NO_RESOURCES);
    vhca_test_stop(d);
}

static void test_properties_max(void)
{
    VhcaTestDev *d = vhca_test_start(true, "db-pages=1024,vectors=64,"
                                     "gid-table-len=128");
    static const uint8_t gid[16] = { 0xfe, 0x80, [15] = 2 };
    struct vhca_device_attr attr;
    uint32_t flags;

    g_assert_cmpuint(vhca_rd(d, VHCA_REG_NUM_VECTORS), ==, 64);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_NUM_DB_PAGES), ==, 1024);
    g_assert_cmpuint(qpci_msix_table_size(d->pdev), ==, 64);
    g_assert_cmphex(bar_size(d, VHCA_BAR_DOORBELL, &flags), ==,
                    1024 * VHCA_DB_PAGE_SIZE);

    vhca_admin_setup(d, 3, 4);
    g_assert_cmpuint(vhca_cmd_query_device(d, &attr), ==, VHCA_ST_OK);
    g_assert_cmpuint(attr.max_uctx, ==, 1024);
    g_assert_cmpuint(attr.num_comp_vectors, ==, 62);
    g_assert_cmpuint(attr.gid_tbl_len, ==, 128);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 127, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 128, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      gid), ==, VHCA_ST_BAD_INDEX);

    /* The last doorbell page is decoded. */
    qpci_io_writel(d->pdev, d->bar2, 1023 * VHCA_DB_PAGE_SIZE + VHCA_DB_CQ, 1);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_DOORBELLS), ==, 1);
    vhca_test_stop(d);
}

/*
 * Run QEMU with @prop=@value and expect it to refuse to start with an
 * error naming the property and what it may be: @lo_s and @hi_s, the
 * ends of its range or its two values.
 */
static void expect_bad_property_words(const char *prop, const char *value,
                                      const char *lo_s, const char *hi_s)
{
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    g_autofree char *dev = g_strdup_printf("vhca,mac=52:54:00:12:34:56,"
                                           "%s=%s", prop, value);
    /*
     * Through sh, as libqtest starts QEMU: QTEST_QEMU_BINARY may be a
     * command with arguments (scripts/sanitize.sh's env wrapper).
     */
    const char *argv[] = {
        "/bin/sh", "-c", "exec $QTEST_QEMU_BINARY \"$@\"", "sh",
        "-machine", "q35", "-accel", "qtest", "-display", "none",
        "-nodefaults", "-device", dev, NULL,
    };
    g_autoptr(GError) err = NULL;
    g_autoptr(GString) out = g_string_new("");
    gint64 deadline = g_get_monotonic_time() +
        VHCA_TEST_TIMEOUT_S * G_TIME_SPAN_SECOND;
    int err_fd, wstatus;
    GPid pid;

    g_assert_nonnull(qemu);
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD |
                                           G_SPAWN_STDOUT_TO_DEV_NULL,
                                           NULL, NULL, &pid, NULL, NULL,
                                           &err_fd, &err));

    /* Collect stderr until QEMU exits (EOF) or the deadline passes. */
    for (;;) {
        struct pollfd pfd = { .fd = err_fd, .events = POLLIN };
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
        char buf[512];
        ssize_t n;

        if (left_ms <= 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            close(err_fd);
            g_error("QEMU kept running with -device %s", dev);
        }
        if (poll(&pfd, 1, left_ms) <= 0) {
            continue;
        }
        n = read(err_fd, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        g_string_append_len(out, buf, n);
    }
    close(err_fd);
    g_assert_cmpint(waitpid(pid, &wstatus, 0), ==, pid);
    g_spawn_close_pid(pid);

    g_test_message("-device %s: %s", dev, out->str);
    g_assert_true(WIFEXITED(wstatus));
    g_assert_cmpint(WEXITSTATUS(wstatus), !=, 0);
    g_assert_nonnull(strstr(out->str, prop));
    g_assert_nonnull(strstr(out->str, lo_s));
    g_assert_nonnull(strstr(out->str, hi_s));
}

/* The same for a number outside @lo..@hi. */
static void expect_bad_property(const char *prop, const char *value,
                                unsigned lo, unsigned hi)
{
    g_autofree char *lo_s = g_strdup_printf("%u", lo);
    g_autofree char *hi_s = g_strdup_printf("%u", hi);

    expect_bad_property_words(prop, value, lo_s, hi_s);
}

static void test_bad_properties(void)
{
    expect_bad_property("gid-table-len", "0", 1, 128);
    expect_bad_property("gid-table-len", "129", 1, 128);
    expect_bad_property("db-pages", "0", 1, 1024);
    expect_bad_property("db-pages", "1025", 1, 1024);
    expect_bad_property("vectors", "1", 2, 64);
    expect_bad_property("vectors", "65", 2, 64);
    expect_bad_property("max-srq", "65537", 0, 65536);
    expect_bad_property_words("link", "roce", "'eth'", "'ib'");
}

/*
 * link=ib: the port is InfiniBand (docs/specs/vhca.rst, "InfiniBand
 * port"): CAPS says so alone, and the Ethernet NIC's registers do not
 * exist (a write is ignored, a read is 0).
 */
static void test_ib_port_registers(void)
{
    VhcaTestDev *d = vhca_test_start(true, "link=ib");
    int i;

    g_assert_cmphex(vhca_rd(d, VHCA_REG_CAPS), ==, VHCA_CAP_IB);
    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_CLASS_DEVICE), ==,
                    VHCA_PCI_CLASS_IB);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS), ==, VHCA_STATUS_LINK_UP);
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        if (ring_regs[i] < VHCA_REG_TX_BASE_LO) {
            continue;
        }
        vhca_wr(d, ring_regs[i], 0x1000);
        g_assert_cmphex(vhca_rd(d, ring_regs[i]), ==, 0);
    }
    vhca_test_stop(d);
}

/*
 * link=ib through QEMU: QUERY_DEVICE and QUERY_PORT report the IB port
 * (INIT until an SM runs, 128 P_Keys), and MAD_IFC reaches the subnet
 * management agent: Get(NodeInfo) is answered with the node's GUID,
 * an unknown class is not the device's (result 0), and the Ethernet
 * port has no MAD_IFC.
 */
static uint8_t mad_ifc(VhcaTestDev *d, uint8_t mgmt_class, uint16_t attr,
                       struct vhca_mad_ifc *mbox, uint8_t *result)
{
    uint64_t buf = guest_alloc(&d->alloc, sizeof(*mbox));
    struct vhca_cmd_dma_in in = {
        .addr = cpu_to_le64(buf),
        .len = cpu_to_le32(sizeof(*mbox)),
    };
    uint8_t out[16];
    uint8_t status;

    memset(mbox, 0, sizeof(*mbox));
    mbox->port = 1;
    mbox->flags = VHCA_MAD_IFC_LOCAL;
    mbox->in_mad[0] = 1;                        /* BaseVersion */
    mbox->in_mad[1] = mgmt_class;
    mbox->in_mad[2] = 1;                        /* ClassVersion */
    mbox->in_mad[3] = 0x01;                     /* Get */
    mbox->in_mad[16] = attr >> 8;               /* AttributeID */
    mbox->in_mad[17] = attr & 0xff;
    qtest_memwrite(d->qts, buf, mbox, sizeof(*mbox));
    status = vhca_cmd_exec(d, VHCA_CMD_MAD_IFC, &in, sizeof(in), out);
    qtest_memread(d->qts, buf, mbox, sizeof(*mbox));
    guest_free(&d->alloc, buf);
    *result = out[0];
    return status;
}

static void test_ib_port_mad_ifc(void)
{
    VhcaTestDev *d = vhca_test_start(true, "link=ib");
    VhcaTestDev *e;
    struct vhca_device_attr attr;
    struct vhca_port_attr port;
    struct vhca_mad_ifc mbox;
    uint64_t guid = 0;
    uint8_t result;
    int i;

    vhca_admin_setup(d, 4, 4);
    g_assert_cmpuint(vhca_cmd_query_device(d, &attr), ==, VHCA_ST_OK);
    g_assert_cmpuint(attr.max_pkeys, ==, VHCA_IB_PKEY_TBL_LEN);
    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.state, ==, VHCA_PORT_INIT);
    g_assert_cmpuint(port.phys_state, ==, VHCA_PORT_PHYS_LINK_UP);

    /* SMP class 0x01, NodeInfo (0x0011): NodeGUID at data byte 12. */
    g_assert_cmpuint(mad_ifc(d, 0x01, 0x0011, &mbox, &result), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(result, ==, VHCA_MAD_RESULT_REPLY);
    g_assert_cmphex(mbox.out_mad[3], ==, 0x81);         /* GetResp */
    g_assert_cmphex(mbox.out_mad[4] << 8 | mbox.out_mad[5], ==, 0);
    g_assert_cmpuint(mbox.out_mad[64 + 2], ==, 1);      /* NodeType CA */
    for (i = 0; i < 8; i++) {
        guid = guid << 8 | mbox.out_mad[64 + 12 + i];
    }
    g_assert_cmphex(guid, ==, attr.node_guid);
    /* The SA's class (0x03) is the subnet manager's, not the device's. */
    g_assert_cmpuint(mad_ifc(d, 0x03, 0x0001, &mbox, &result), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(result, ==, 0);
    vhca_test_stop(d);

    e = vhca_test_start(true, NULL);
    vhca_admin_setup(e, 4, 4);
    g_assert_cmpuint(mad_ifc(e, 0x01, 0x0011, &mbox, &result), ==,
                     VHCA_ST_BAD_OPCODE);
    vhca_test_stop(e);
}

static void test_no_netdev_link_down(void)
{
    VhcaTestDev *d = vhca_test_start(false, NULL);
    struct vhca_port_attr port;

    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP, ==, 0);
    vhca_admin_setup(d, 3, 4);
    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.state, ==, VHCA_PORT_DOWN);
    g_assert_cmpuint(port.phys_state, ==, VHCA_PORT_PHYS_DISABLED);
    vhca_test_stop(d);
}

static void test_doorbells(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    static const struct { uint32_t page, off; } writes[] = {
        { 0, VHCA_DB_SQ }, { 1, VHCA_DB_RQ }, { 63, VHCA_DB_CQ },
        { 5, 0x800 }, { 0, VHCA_DB_SQ },
    };
    int i;

    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_DOORBELLS), ==, 0);
    for (i = 0; i < ARRAY_SIZE(writes); i++) {
        uint64_t off = writes[i].page * VHCA_DB_PAGE_SIZE + writes[i].off;

        qpci_io_writel(d->pdev, d->bar2, off, 0x10000 + i);
        g_assert_cmpuint(vhca_counter(d, VHCA_CNT_DOORBELLS), ==, i + 1);
        /* Doorbells are write-only: reads return 0 and are not counted. */
        g_assert_cmphex(qpci_io_readl(d->pdev, d->bar2, off), ==, 0);
    }
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_DOORBELLS), ==,
                     ARRAY_SIZE(writes));
    /* Doorbells are not admin commands. */
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ADMIN_COMMANDS), ==, 0);
    vhca_test_stop(d);
}

/*
 * No migration blocker: migrate is accepted and completes (the stream
 * itself is vhca-migration-test.c's), and the device may be added to a
 * QEMU started with -only-migratable.
 */
static void test_migratable(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    gint64 deadline = g_get_monotonic_time() +
        VHCA_TEST_TIMEOUT_S * G_TIME_SPAN_SECOND;
    QTestState *qts;

    qtest_qmp_assert_success(d->qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': 'exec:cat > /dev/null' } }");
    for (;;) {
        QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'query-migrate' }");
        g_autofree char *status = g_strdup(qdict_get_str(
            qdict_get_qdict(rsp, "return"), "status"));

        qobject_unref(rsp);
        if (!strcmp(status, "completed")) {
            break;
        }
        g_assert_cmpstr(status, !=, "failed");
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
    }
    vhca_test_stop(d);

    qts = qtest_init("-machine q35 -only-migratable "
                     "-device pcie-root-port,id=rp1,chassis=1");
    qtest_qmp_assert_success(qts, "{ 'execute': 'device_add', "
                             "'arguments': { 'driver': 'vhca', "
                             "'id': 'nic', 'bus': 'rp1' } }");
    g_assert_true(qtest_qom_get_bool(qts, "/machine/peripheral/nic",
                                     "realized"));
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/pci/identity", test_identity);
    vhca_add_test("/vhca/pci/bars", test_bars);
    vhca_add_test("/vhca/pci/capabilities", test_capabilities);
    vhca_add_test("/vhca/pci/registers-power-on", test_registers_power_on);
    vhca_add_test("/vhca/pci/register-access-rules",
                  test_register_access_rules);
    vhca_add_test("/vhca/pci/properties-small", test_properties_small);
    vhca_add_test("/vhca/pci/properties-max", test_properties_max);
    vhca_add_test("/vhca/pci/bad-properties", test_bad_properties);
    vhca_add_test("/vhca/pci/ib-port-registers", test_ib_port_registers);
    vhca_add_test("/vhca/pci/ib-port-mad-ifc", test_ib_port_mad_ifc);
    vhca_add_test("/vhca/pci/no-netdev-link-down", test_no_netdev_link_down);
    vhca_add_test("/vhca/pci/doorbells", test_doorbells);
    vhca_add_test("/vhca/pci/migratable", test_migratable);

    return g_test_run();
}
