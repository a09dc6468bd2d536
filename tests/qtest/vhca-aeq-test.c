/*
 * vhca conformance: the async event queue (EQ 0) and its MSI-X vector 0
 * (docs/specs/vhca.rst "Async event queue (EQ 0)").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "vhca-qdriver.h"

/* Post a NOP, wait for its done byte; the event is left to the caller. */
static void nop_no_event(VhcaTestDev *d, uint32_t token)
{
    struct vhca_admin_cmd entry;
    uint32_t slot = vhca_cmd_post(d, VHCA_CMD_NOP, NULL, 0, token);

    vhca_cmd_wait_done(d, slot, &entry);
    g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
    d->admq.ci++;
    vhca_wait_reg(d, VHCA_REG_ADMQ_CI, ~0u, d->admq.ci, "ADMQ_CI");
}

static void check_cmd_done(const struct vhca_eqe *eqe, uint8_t status,
                           uint32_t slot, uint32_t token)
{
    g_assert_cmpuint(eqe->type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmpuint(eqe->subtype, ==, status);
    g_assert_cmpuint(le32_to_cpu(eqe->data[0]), ==, slot);
    g_assert_cmphex(le32_to_cpu(eqe->data[1]), ==, token);
}

static void test_cmd_done_event(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_cmd_mtu_in bad_mtu = { .mtu = cpu_to_le32(1) };
    struct vhca_admin_cmd entry;
    struct vhca_eqe eqe;
    uint32_t slot;

    vhca_admin_setup(d, 3, 4);

    slot = vhca_cmd_post(d, VHCA_CMD_NOP, NULL, 0, 0xdeadbeef);
    vhca_cmd_wait_done(d, slot, &entry);
    vhca_eq_next(d, &eqe);
    check_cmd_done(&eqe, VHCA_ST_OK, 0, 0xdeadbeef);
    g_assert_cmpuint(eqe.owner & 1, ==, 1);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 1);

    /* A failing command: subtype carries the status. */
    slot = vhca_cmd_post(d, VHCA_CMD_SET_MTU, &bad_mtu, sizeof(bad_mtu), 7);
    vhca_cmd_wait_done(d, slot, &entry);
    g_assert_cmpuint(entry.status, ==, VHCA_ST_BAD_PARAM);
    vhca_eq_next(d, &eqe);
    check_cmd_done(&eqe, VHCA_ST_BAD_PARAM, 1, 7);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 2);
    vhca_eq_ack(d, false);
    g_assert_false(vhca_eq_peek(d, NULL));
    vhca_test_stop(d);
}

/* A 4-entry EQ wraps three times: owner parity flips on every pass. */
static void test_owner_parity_wrap(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_eqe eqe;
    uint32_t i;

    vhca_admin_setup(d, 1, 2);
    for (i = 0; i < 13; i++) {
        uint32_t token = 0x5000 + i;
        uint32_t slot = vhca_cmd_post(d, VHCA_CMD_NOP, NULL, 0, token);
        struct vhca_admin_cmd entry;
        struct vhca_eqe raw;

        vhca_cmd_wait_done(d, slot, &entry);
        vhca_eq_next(d, &eqe);
        check_cmd_done(&eqe, VHCA_ST_OK, slot, token);
        /* Pass 0 writes owner 1, pass 1 writes 0, pass 2 writes 1 ... */
        g_assert_cmpuint(eqe.owner & 1, ==, ((i >> 2) & 1) ^ 1);
        g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, i + 1);

        /* The entry sits in slot i % 4 of the ring. */
        qtest_memread(d->qts, d->aeq.addr + (i % 4) * sizeof(raw),
                      &raw, sizeof(raw));
        g_assert_cmphex(le32_to_cpu(raw.data[1]), ==, token);
        vhca_eq_ack(d, true);
    }
    vhca_test_stop(d);
}

/*
 * The driver does not consume: after 'entries' events the EQ is full,
 * further events are lost and counted, commands still complete, and the
 * next AEQ_DB write clears AEQ_OVERFLOW.
 */
static void test_overflow(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_eqe eqe;
    uint32_t i;

    vhca_admin_setup(d, 3, 2);
    for (i = 0; i < 4; i++) {
        nop_no_event(d, 0x600 + i);
    }
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 4);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_AEQ_OVERFLOW,
                    ==, 0);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_EQ_OVERFLOWS), ==, 0);

    nop_no_event(d, 0x604);
    nop_no_event(d, 0x605);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_CI), ==, 6);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 4);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_AEQ_OVERFLOW,
                    ==, VHCA_STATUS_AEQ_OVERFLOW);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_EQ_OVERFLOWS), ==, 2);

    /* The four events written before the overflow are intact. */
    for (i = 0; i < 4; i++) {
        vhca_eq_next(d, &eqe);
        check_cmd_done(&eqe, VHCA_ST_OK, i, 0x600 + i);
    }
    g_assert_false(vhca_eq_peek(d, NULL));

    vhca_eq_ack(d, true);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_AEQ_OVERFLOW,
                    ==, 0);

    /* Events resume on the second pass (owner 0) at slot 0. */
    nop_no_event(d, 0x606);
    vhca_eq_next(d, &eqe);
    check_cmd_done(&eqe, VHCA_ST_OK, 6 % 8, 0x606);
    g_assert_cmpuint(eqe.owner & 1, ==, 0);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 5);
    vhca_eq_ack(d, true);
    g_assert_cmpuint(vhca_counter(d, VHCA_CNT_EQ_OVERFLOWS), ==, 2);
    vhca_test_stop(d);
}

static void test_doorbell_beyond_pi(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_eqe eqe;

    vhca_admin_setup(d, 3, 4);
    nop_no_event(d, 1);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 1);

    vhca_wr(d, VHCA_REG_AEQ_DB, 2 | VHCA_EQ_DB_ARM);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ERROR), ==, VHCA_ERR_AEQ_DOORBELL);

    /* The refused CI did not consume anything: the event is still there. */
    vhca_eq_next(d, &eqe);
    check_cmd_done(&eqe, VHCA_ST_OK, 0, 1);
    vhca_eq_ack(d, true);
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
    vhca_test_stop(d);
}

/* CTRL.ENABLE arms the EQ; each interrupt disarms; AEQ_DB ARM re-arms. */
static void test_msix_vector0(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_eqe eqe;

    vhca_admin_setup(d, 3, 4);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));

    nop_no_event(d, 1);
    vhca_eq_next(d, &eqe);
    vhca_msix_wait(d, VHCA_VECTOR_ASYNC);

    /* Disarmed by that interrupt: the event is written, no message. */
    nop_no_event(d, 2);
    vhca_eq_next(d, &eqe);
    check_cmd_done(&eqe, VHCA_ST_OK, 1, 2);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));

    /* Consumer index without ARM: still no interrupt. */
    vhca_eq_ack(d, false);
    nop_no_event(d, 3);
    vhca_eq_next(d, &eqe);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));

    /* ARM: the next event interrupts, once. */
    vhca_eq_ack(d, true);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));
    nop_no_event(d, 4);
    vhca_eq_next(d, &eqe);
    vhca_msix_wait(d, VHCA_VECTOR_ASYNC);
    nop_no_event(d, 5);
    vhca_eq_next(d, &eqe);
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));

    /* Admin events never use the Ethernet vector. */
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ETH));
    vhca_test_stop(d);
}

/* A masked vector leaves its message pending in the PBA (PCI MSI-X). */
static void test_msix_vector0_masked(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);
    uint64_t ctrl = d->pdev->msix_table_off +
        VHCA_VECTOR_ASYNC * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL;
    struct vhca_eqe eqe;

    vhca_admin_setup(d, 3, 4);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar, ctrl,
                   PCI_MSIX_ENTRY_CTRL_MASKBIT);
    nop_no_event(d, 1);
    vhca_eq_next(d, &eqe);
    VHCA_WAIT_UNTIL(d, qpci_msix_pending(d->pdev, VHCA_VECTOR_ASYNC),
                    "vector 0 pending in the PBA");
    g_assert_false(vhca_msix_fired(d, VHCA_VECTOR_ASYNC));

    /* Unmasking delivers it. */
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar, ctrl, 0);
    vhca_msix_wait(d, VHCA_VECTOR_ASYNC);
    g_assert_false(qpci_msix_pending(d->pdev, VHCA_VECTOR_ASYNC));
    vhca_test_stop(d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/aeq/cmd-done-event", test_cmd_done_event);
    vhca_add_test("/vhca/aeq/owner-parity-wrap", test_owner_parity_wrap);
    vhca_add_test("/vhca/aeq/overflow", test_overflow);
    vhca_add_test("/vhca/aeq/doorbell-beyond-pi", test_doorbell_beyond_pi);
    vhca_add_test("/vhca/aeq/msix-vector0", test_msix_vector0);
    vhca_add_test("/vhca/aeq/msix-vector0-masked", test_msix_vector0_masked);

    return g_test_run();
}
