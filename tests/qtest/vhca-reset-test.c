/*
 * vhca conformance: CTRL.RESET, Function Level Reset and system reset
 * each return the device to its power-on state, and it works afterwards
 * (docs/specs/vhca.rst "Reset").
 *
 * Each test takes the device away from power-on in every way the spec
 * lists (rings running, GID table, doorbell pages, MAC, MTU, counters,
 * ERROR, MSI-X vector 1 armed), resets, then checks each item.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "hw/pci/pci_regs.h"
#include "vhca-qdriver.h"
#include "vhca-frame.h"

#define DB_PAGES        4
#define ETH_ENABLE      (VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE)

static const uint8_t roce_ip[4] = { 10, 1, 2, 3 };
static const uint8_t peer_ip[4] = { 10, 1, 2, 4 };
static const uint8_t set_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };

static const uint32_t ring_regs[] = {
    VHCA_REG_ADMQ_BASE_LO, VHCA_REG_ADMQ_BASE_HI, VHCA_REG_ADMQ_LOG_SIZE,
    VHCA_REG_ADMQ_CI, VHCA_REG_AEQ_BASE_LO, VHCA_REG_AEQ_BASE_HI,
    VHCA_REG_AEQ_LOG_SIZE, VHCA_REG_AEQ_PI, VHCA_REG_TX_BASE_LO,
    VHCA_REG_TX_BASE_HI, VHCA_REG_TX_LOG_SIZE, VHCA_REG_TX_CI,
    VHCA_REG_RX_BASE_LO, VHCA_REG_RX_BASE_HI, VHCA_REG_RX_LOG_SIZE,
    VHCA_REG_RX_CI, VHCA_REG_ETH_CTRL,
};

static void dirty_device(VhcaTestDev *d)
{
    uint8_t gid[16], frame[1600];
    uint32_t page;
    size_t len;
    int i;

    vhca_admin_setup(d, 3, 4);
    vhca_gid_from_ipv4(gid, roce_ip);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      gid), ==, VHCA_ST_OK);
    for (i = 0; i < DB_PAGES; i++) {
        g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
    }
    g_assert_cmpuint(vhca_cmd_set_mac(d, set_mac), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_set_mtu(d, 9000), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_exec(d, 0xff, NULL, 0, NULL), ==,
                     VHCA_ST_BAD_OPCODE);

    vhca_eth_setup(d, 3, 3, 2048, ETH_ENABLE | VHCA_ETH_CTRL_PROMISC);
    len = vhca_frame_eth(frame, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 1586, 1);
    g_assert_cmphex(vhca_tx_frame(d, frame, len), ==, VHCA_ETH_DESC_DONE);
    g_assert_cmpuint(vhca_wire_recv(d, frame, sizeof(frame)), ==, len);
    vhca_rx_post(d, 2);
    qpci_io_writel(d->pdev, d->bar2, VHCA_DB_SQ, 1);

    /*
     * Arm vector 1: the first arm reports the TX completion at once, the
     * second leaves it armed, so the reset has an armed vector to undo.
     */
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 1);
    vhca_msix_wait(d, VHCA_VECTOR_ETH);
    vhca_wr(d, VHCA_REG_ETH_IRQ_ARM, 1);
    vhca_msix_fired(d, VHCA_VECTOR_ETH);

    /* A refused register write leaves ERROR set. */
    vhca_wr(d, VHCA_REG_ADMQ_LOG_SIZE, 5);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==,
                     VHCA_ERR_BAD_RING_CONFIG);

    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_TX_PACKETS), ==, 1);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_DOORBELLS), ==, 1);
}

static void check_power_on_registers(VhcaTestDev *d)
{
    int i;

    g_assert_cmphex(vhca_rd(d, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, 0);
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
}

/* No DMA after reset: a link change must not touch the old AEQ. */
static void check_no_dma_after_reset(VhcaTestDev *d, uint64_t old_aeq)
{
    uint8_t before[16 << 4], after[16 << 4];

    qtest_memread(d->qts, old_aeq, before, sizeof(before));
    vhca_set_link(d, false);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_LINK_UP, 0,
                  "STATUS.LINK_UP = 0");
    vhca_set_link(d, true);
    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_LINK_UP,
                  VHCA_STATUS_LINK_UP, "STATUS.LINK_UP = 1");
    qtest_memread(d->qts, old_aeq, after, sizeof(after));
    g_assert_cmpmem(before, sizeof(before), after, sizeof(after));
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));
}

static void check_works_as_new(VhcaTestDev *d)
{
    struct vhca_port_attr port;
    uint8_t frame[1600], got[2048];
    uint32_t page;
    size_t len;
    int i;

    vhca_forget_rings(d);
    vhca_admin_setup(d, 3, 4);
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);

    /* Every doorbell page is free again. */
    for (i = 0; i < DB_PAGES; i++) {
        g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
    }
    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, NULL), ==, VHCA_ST_NO_RESOURCES);

    /* MTU 1500. */
    g_assert_cmpuint(vhca_cmd_query_port(d, 1, &port), ==, VHCA_ST_OK);
    g_assert_cmpuint(port.eth_mtu, ==, 1500);
    g_assert_cmpuint(port.active_mtu, ==, VHCA_IB_MTU_1024);
    g_assert_cmpuint(port.state, ==, VHCA_PORT_ACTIVE);

    vhca_eth_setup(d, 3, 3, 2048, ETH_ENABLE);
    vhca_msix_fired(d, VHCA_VECTOR_ETH);

    /* Vector 1 unarmed: a completion does not interrupt. */
    len = vhca_frame_eth(frame, vhca_peer_mac, VHCA_ETHERTYPE_TEST, 50, 2);
    g_assert_cmphex(vhca_tx_frame(d, frame, len), ==, VHCA_ETH_DESC_DONE);
    g_assert_cmpuint(vhca_wire_recv(d, got, sizeof(got)), ==, len);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));
    /* 1519 bytes exceed MTU 1500 + 18 again. */
    g_assert_cmphex(vhca_tx_frame(d, frame, 1519), ==,
                    VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    g_assert_true(vhca_wire_idle(d));

    /*
     * MAC back to the property: a frame to the MAC set before the reset
     * is filtered, the one behind it to the permanent MAC arrives.  The
     * GID table is empty: RoCE to the old GID is ordinary traffic.
     */
    vhca_rx_post(d, 3);
    len = vhca_frame_eth(frame, set_mac, VHCA_ETHERTYPE_TEST, 50, 3);
    vhca_wire_send(d, frame, len);
    len = vhca_frame_udp4(frame, vhca_test_mac, peer_ip, roce_ip,
                          VHCA_ROCE_V2_UDP_PORT, 64);
    vhca_wire_send(d, frame, len);
    g_assert_cmpuint(vhca_rx_receive(d, got, sizeof(got)), ==, len);
    g_assert_cmpmem(got, len, frame, len);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ROCE_RX_PACKETS), ==, 0);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_RX_CI), ==, 1);
}

typedef void (*ResetFn)(VhcaTestDev *d);

static void reset_ctrl(VhcaTestDev *d)
{
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    /* RESET is write-only and reads 0 (as does ENABLE after it). */
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, 0);
}

static void reset_flr(VhcaTestDev *d)
{
    uint8_t exp = qpci_find_capability(d->pdev, PCI_CAP_ID_EXP, 0);
    uint16_t devctl;

    g_assert_cmphex(exp, !=, 0);
    g_assert_cmphex(qpci_config_readl(d->pdev, exp + PCI_EXP_DEVCAP) &
                    PCI_EXP_DEVCAP_FLR, ==, PCI_EXP_DEVCAP_FLR);
    devctl = qpci_config_readw(d->pdev, exp + PCI_EXP_DEVCTL);
    qpci_config_writew(d->pdev, exp + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
    /* FLR resets config space too: BARs, bus mastering, MSI-X. */
    g_assert_cmphex(qpci_config_readw(d->pdev, PCI_COMMAND) &
                    PCI_COMMAND_MASTER, ==, 0);
    vhca_pci_setup(d);
}

static void reset_system(VhcaTestDev *d)
{
    qtest_system_reset(d->qts);
    vhca_pci_setup(d);
}

static void run_reset_test(ResetFn reset)
{
    VhcaTestDev *d = vhca_test_start(true, "db-pages=4");
    uint64_t old_aeq;

    dirty_device(d);
    old_aeq = d->aeq.addr;
    vhca_msix_fired(d, VHCA_VECTOR_ASYNC);
    reset(d);
    check_power_on_registers(d);
    check_no_dma_after_reset(d, old_aeq);
    check_works_as_new(d);
    vhca_test_stop(d);
}

static void test_ctrl_reset(void)
{
    run_reset_test(reset_ctrl);
}

static void test_flr(void)
{
    run_reset_test(reset_flr);
}

static void test_system_reset(void)
{
    run_reset_test(reset_system);
}

/* Reset with commands still queued: none of them runs afterwards. */
static void test_reset_with_pending_commands(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_admin_cmd entry;
    uint64_t old_admq;
    int i;

    vhca_admin_setup(d, 3, 4);
    old_admq = d->admq.addr;
    for (i = 0; i < 8; i++) {
        vhca_cmd_write(d, VHCA_CMD_NOP, NULL, 0, i);
    }
    /* Doorbell and reset back to back. */
    vhca_cmd_ring(d);
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 0);

    /* Whatever ran before the reset, nothing runs after it. */
    for (i = 0; i < 8; i++) {
        qtest_memwrite(d->qts, old_admq + i * sizeof(entry) +
                       offsetof(struct vhca_admin_cmd, done), "\0", 1);
    }
    vhca_forget_rings(d);
    vhca_admin_setup(d, 3, 4);
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
    for (i = 0; i < 8; i++) {
        qtest_memread(d->qts, old_admq + i * sizeof(entry), &entry,
                      sizeof(entry));
        g_assert_cmpuint(entry.done, ==, 0);
    }
    vhca_test_stop(d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/reset/ctrl-reset", test_ctrl_reset);
    vhca_add_test("/vhca/reset/flr", test_flr);
    vhca_add_test("/vhca/reset/system-reset", test_system_reset);
    vhca_add_test("/vhca/reset/pending-commands",
                  test_reset_with_pending_commands);

    return g_test_run();
}
