/*
 * vhca engine unit tests: the async event queue, its owner bit, arming,
 * overflow and PORT_CHANGE (docs/specs/vhca.rst, "Async event queue",
 * "Link state").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"

#define AEQ_ENTRIES (1u << AEQ_LOG)

static void nop(Harness *h, uint32_t token)
{
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_NOP, token, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
}

static void test_owner_bit_wraps(void)
{
    Harness *h = harness_new(NULL);
    uint32_t n;

    harness_enable(h);
    /* Three passes over the 8-entry EQ, consuming as we go. */
    for (n = 0; n < 3 * AEQ_ENTRIES; n++) {
        struct vhca_eqe eqe;
        uint8_t expect_owner = ((n >> AEQ_LOG) & 1) ^ 1;

        nop(h, 1000 + n);
        g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, n + 1);
        eqe = aeq_entry(h, n);
        g_assert_cmpuint(eqe.owner, ==, expect_owner);
        g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CMD_DONE);
        g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==,
                         n & ((1u << ADMQ_LOG) - 1));
        g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[1]), ==, 1000 + n);
        g_assert_cmpuint(eqe.rsvd0, ==, 0);
        g_assert_cmpuint(eqe.rsvd1[0] | eqe.rsvd1[1] | eqe.rsvd1[2], ==, 0);
        /*
         * The next slot holds the previous pass's entry: its owner is not
         * what the driver expects for index n + 1, so it is not taken.
         */
        if (n + 1 >= AEQ_ENTRIES) {
            g_assert_cmpuint(aeq_entry(h, n + 1).owner, !=,
                             (((n + 1) >> AEQ_LOG) & 1) ^ 1);
        }
        reg_write(h, VHCA_REG_AEQ_DB, n + 1);
    }
    g_assert_cmpuint(counter(h, VHCA_CNT_EQ_OVERFLOWS), ==, 0);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

static void test_overflow(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_admin_cmd cmd;

    harness_enable(h);
    for (uint32_t n = 0; n < AEQ_ENTRIES; n++) {
        nop(h, n);
    }
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, AEQ_ENTRIES);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_AEQ_OVERFLOW,
                    ==, 0);

    /* Full: the event is lost but the command still completes. */
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_NOP, 0xdead, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
    cmd = admin_entry(h, AEQ_ENTRIES);
    g_assert_cmpuint(cmd.done, ==, 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, AEQ_ENTRIES);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_AEQ_OVERFLOW,
                    ==, VHCA_STATUS_AEQ_OVERFLOW);
    g_assert_cmpuint(counter(h, VHCA_CNT_EQ_OVERFLOWS), ==, 1);
    /* Slot 0 was not overwritten. */
    g_assert_cmpuint(GUINT32_FROM_LE(aeq_entry(h, 0).data[1]), ==, 0);
    g_assert_cmpuint(aeq_entry(h, 0).owner, ==, 1);

    /* A link change is lost too. */
    vhca_core_set_link(&h->core, false);
    g_assert_cmpuint(counter(h, VHCA_CNT_EQ_OVERFLOWS), ==, 2);

    /* Consuming one entry clears AEQ_OVERFLOW and makes room for one. */
    reg_write(h, VHCA_REG_AEQ_DB, 1);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_AEQ_OVERFLOW,
                    ==, 0);
    nop(h, 0xbeef);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, AEQ_ENTRIES + 1);
    g_assert_cmpuint(aeq_entry(h, AEQ_ENTRIES).owner, ==, 0);
    g_assert_cmpuint(GUINT32_FROM_LE(aeq_entry(h, AEQ_ENTRIES).data[1]), ==,
                     0xbeef);
    nop(h, 0xf00d);
    g_assert_cmpuint(counter(h, VHCA_CNT_EQ_OVERFLOWS), ==, 3);
    harness_free(h);
}

static void test_arm(void)
{
    Harness *h = harness_new(NULL);

    harness_enable(h);
    /* ENABLE arms: the first event interrupts, then the EQ is disarmed. */
    nop(h, 1);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);
    nop(h, 2);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);

    /* Consume without ARM: still quiet. */
    reg_write(h, VHCA_REG_AEQ_DB, 2);
    nop(h, 3);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);

    /* Consume everything and arm: the next event interrupts. */
    reg_write(h, VHCA_REG_AEQ_DB, 3 | VHCA_EQ_DB_ARM);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);
    nop(h, 4);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 2);

    /*
     * Arm with an event still unconsumed: interrupt at once, so a driver
     * that re-arms after its last poll cannot miss it.
     */
    reg_write(h, VHCA_REG_AEQ_DB, 3 | VHCA_EQ_DB_ARM);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 3);
    nop(h, 5);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 3);

    /* Only vector 0 was ever used. */
    for (unsigned v = 1; v < 8; v++) {
        g_assert_cmpuint(h->irqs[v], ==, 0);
    }
    harness_free(h);
}

static void test_doorbell_beyond_pi(void)
{
    Harness *h = harness_new(NULL);

    harness_enable(h);
    nop(h, 1);
    nop(h, 2);
    /* CI 3 > PI 2: refused, ARM ignored with it. */
    reg_write(h, VHCA_REG_AEQ_DB, 3 | VHCA_EQ_DB_ARM);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ERROR), ==, VHCA_ERR_AEQ_DOORBELL);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 1);
    nop(h, 3);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);
    /* Valid doorbells still work, moving forward only. */
    reg_write(h, VHCA_REG_AEQ_DB, 2);
    reg_write(h, VHCA_REG_AEQ_DB, 1);   /* backwards: beyond PI mod 2^24 */
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 2);
    reg_write(h, VHCA_REG_AEQ_DB, 3 | VHCA_EQ_DB_ARM);
    nop(h, 4);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 2);
    /* Bits 24..30 are not part of the index. */
    reg_write(h, VHCA_REG_AEQ_DB, 0x7f000004);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 2);

    /* Not enabled: ignored. */
    reg_write(h, VHCA_REG_CTRL, 0);
    reg_write(h, VHCA_REG_AEQ_DB, 4);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_AEQ], ==, 1);
    harness_free(h);
}

static void test_ci_24bit_wrap(void)
{
    Harness *h = harness_new(NULL);

    harness_enable(h);
    /* Free-running indices near the 24-bit doorbell field's wrap. */
    h->core.aeq.ring.pi = 0x00fffffe;
    h->core.aeq.ring.ci = 0x00fffffe;
    h->core.admq.ci = 0;
    for (unsigned i = 0; i < 4; i++) {
        nop(h, i);
    }
    g_assert_cmphex(reg_read(h, VHCA_REG_AEQ_PI), ==, 0x01000002);
    reg_write(h, VHCA_REG_AEQ_DB, 0x000001 | VHCA_EQ_DB_ARM);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 0);
    g_assert_cmphex(h->core.aeq.ring.ci, ==, 0x01000001);
    /* One still outstanding: the ARM interrupts at once. */
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 2);
    reg_write(h, VHCA_REG_AEQ_DB, 0x000003);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_REG_REFUSED], ==, 1);
    harness_free(h);
}

static void test_bad_eq_address(void)
{
    Harness *h = harness_new(NULL);

    reg_write(h, VHCA_REG_ADMQ_BASE_LO, (uint32_t)ADMQ_ADDR);
    reg_write(h, VHCA_REG_ADMQ_LOG_SIZE, ADMQ_LOG);
    reg_write(h, VHCA_REG_AEQ_BASE_LO, (uint32_t)BAD_ADDR);
    reg_write(h, VHCA_REG_AEQ_LOG_SIZE, AEQ_LOG);
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(reg_read(h, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);

    /* The command runs; its event cannot be written. */
    nop(h, 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 0);
    g_assert_cmpuint(h->guest_errors[VHCA_GUEST_ERR_AEQ], ==, 1);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 0);
    harness_free(h);
}

static void test_port_change(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_eqe eqe;

    /* Before ENABLE there is no EQ: nothing is written. */
    vhca_core_set_link(&h->core, false);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP, ==,
                    0);
    vhca_core_set_link(&h->core, true);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP, ==,
                    VHCA_STATUS_LINK_UP);

    harness_enable(h);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 0);

    vhca_core_set_link(&h->core, false);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP, ==,
                    0);
    eqe = aeq_entry(h, 0);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_PORT_CHANGE);
    g_assert_cmpuint(eqe.subtype, ==, VHCA_PORT_DOWN);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, 1);
    g_assert_cmpuint(eqe.owner, ==, 1);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 1);

    /* No change, no event. */
    vhca_core_set_link(&h->core, false);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 1);

    vhca_core_set_link(&h->core, true);
    eqe = aeq_entry(h, 1);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_PORT_CHANGE);
    g_assert_cmpuint(eqe.subtype, ==, VHCA_PORT_ACTIVE);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 2);
    harness_free(h);
}

static void test_reenable_resets_indices(void)
{
    Harness *h = harness_new(NULL);

    harness_enable(h);
    nop(h, 1);
    nop(h, 2);
    reg_write(h, VHCA_REG_AEQ_DB, 1);
    reg_write(h, VHCA_REG_CTRL, 0);
    /* Stopped: the queues keep their indices until re-enabled. */
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 2);
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmpuint(reg_read(h, VHCA_REG_AEQ_PI), ==, 0);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, 0);
    h->admq_pi = 0;
    /* Re-armed by ENABLE; owner restarts at 1. */
    memset(ram_ptr(h, AEQ_ADDR, 16 * AEQ_ENTRIES), 0, 16 * AEQ_ENTRIES);
    nop(h, 3);
    g_assert_cmpuint(aeq_entry(h, 0).owner, ==, 1);
    g_assert_cmpuint(h->irqs[VHCA_VECTOR_ASYNC], ==, 2);
    harness_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/eq/owner-bit-wraps", test_owner_bit_wraps);
    g_test_add_func("/vhca/eq/overflow", test_overflow);
    g_test_add_func("/vhca/eq/arm", test_arm);
    g_test_add_func("/vhca/eq/doorbell-beyond-pi", test_doorbell_beyond_pi);
    g_test_add_func("/vhca/eq/ci-24bit-wrap", test_ci_24bit_wrap);
    g_test_add_func("/vhca/eq/bad-address", test_bad_eq_address);
    g_test_add_func("/vhca/eq/port-change", test_port_change);
    g_test_add_func("/vhca/eq/reenable-resets-indices",
                    test_reenable_resets_indices);
    return g_test_run();
}
