/*
 * vhca engine unit tests: completion queues and completion EQs - the CQE
 * owner bit, the doorbell record, overflow into CQ_ERROR with the QPs
 * moved to ERR, arming, COMPLETION events on the EQ's MSI-X vector; and
 * the work queues: doorbells, their ownership, and the flush of every
 * outstanding WQE when a QP enters ERR (docs/specs/vhca.rst, "RDMA
 * resources").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"
#include "vhca-rdma.h"

#define COMP_VECTOR 5

typedef struct Fixture {
    Harness *h;
    uint32_t page, pdn, eqn;
    uint64_t eq_ring;
    uint32_t eq_ci;
} Fixture;

static void fixture_init(Fixture *f)
{
    uint8_t gid[16];

    memset(f, 0, sizeof(*f));
    f->h = harness_new(NULL);
    harness_enable(f->h);
    gid_from_ipv4(gid, 10, 0, 0, 1);
    g_assert_cmpuint(add_gid(f->h, 0, VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
    f->page = rdma_alloc_uctx(f->h);
    f->pdn = rdma_create_pd(f->h);
    f->eqn = rdma_create_eq(f->h, 3, COMP_VECTOR, &f->eq_ring);
}

/* Consume the async EQ so that what follows fits in its 8 entries. */
static uint32_t aeq_drain(Harness *h)
{
    uint32_t pi = reg_read(h, VHCA_REG_AEQ_PI);

    reg_write(h, VHCA_REG_AEQ_DB, pi);
    return pi;
}

static struct vhca_eqe eq_entry(Fixture *f, uint32_t index)
{
    struct vhca_eqe eqe;

    ram_read(f->h, f->eq_ring + 16 * (index & 7), &eqe, sizeof(eqe));
    return eqe;
}

static uint32_t eq_pi(Fixture *f)
{
    return f->h->core.comp_eqs[f->eqn].ring.pi;
}

static void post(Fixture *f, uint32_t cqn, uint64_t wr_id, uint8_t status,
                 bool solicited)
{
    VhcaCompletion wc = {
        .wr_id = wr_id, .byte_len = 100, .qpn = 2, .status = status,
        .opcode = VHCA_WC_RECV, .solicited = solicited,
    };

    g_assert_true(vhca_cq_post(&f->h->core, cqn, &wc));
}

static void test_owner_bit_wraps(void)
{
    Fixture f;
    TestCq cq;
    struct vhca_cqe cqe;
    uint32_t n;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 2, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    /* Three passes over the 4-entry CQ, consuming as we go. */
    for (n = 0; n < 12; n++) {
        post(&f, cq.cqn, 0x1000 + n, 0, false);
        g_assert_true(cq_poll(f.h, &cq, &cqe));
        g_assert_cmpuint(cqe.owner, ==, ((n >> 2) & 1) ^ 1);
        g_assert_cmphex(cqe.wr_id, ==, 0x1000 + n);
        g_assert_cmpuint(cqe.byte_len, ==, 100);
        g_assert_cmpuint(cqe.qpn, ==, 2);
        g_assert_cmpuint(cqe.opcode, ==, VHCA_WC_RECV);
        /* The slot after it still holds the last pass's entry. */
        g_assert_false(cq_poll(f.h, &cq, &cqe));
    }
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_CQ], ==, 0);
    harness_free(f.h);
}

/*
 * The largest CQ, max_cqe = 2^19 - 1 entries in the 4096 pages one
 * level-1 page list holds: libfabric's RXM asks for 128 + 128 * 1024
 * entries in one CQ (docs/user-guide.rst, "Middleware").  One page fewer
 * is refused; entries land in order across the reversed pages.
 */
static void test_largest(void)
{
    Fixture f;
    TestCq cq, small;
    struct vhca_cqe cqe;
    struct vhca_cq_create c;
    uint32_t n;

    harness_ram_size = RAM_SIZE + (40u << 20);
    fixture_init(&f);
    harness_ram_size = RAM_SIZE;
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, VHCA_CQ_MAX_LOG_SIZE, f.eqn,
                                    f.page), ==, VHCA_ST_OK);
    g_assert_cmpuint(f.h->core.cqs[cq.cqn].log_size, ==, 19);
    for (n = 0; n < 200; n++) {
        post(&f, cq.cqn, 0x5000 + n, 0, false);
        g_assert_true(cq_poll(f.h, &cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0x5000 + n);
    }
    g_assert_false(cq_poll(f.h, &cq, &cqe));

    memset(&c, 0, sizeof(c));
    small.ring = rdma_alloc(f.h, 4095);
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(f.h, small.ring, 4095, false));
    c.npages = GUINT32_TO_LE(4095);
    c.log_size = VHCA_CQ_MAX_LOG_SIZE;
    c.eqn = GUINT32_TO_LE(f.eqn);
    c.db_page = GUINT32_TO_LE(f.page);
    c.dbrec_addr = GUINT64_TO_LE(rdma_alloc(f.h, 1));
    g_assert_cmpuint(rdma_cmd(f.h, VHCA_CMD_CREATE_CQ, &c, sizeof(c),
                              &small.cqn, NULL), ==, VHCA_ST_BAD_PARAM);
    harness_free(f.h);
}

/* The device reads the doorbell record only when the ring looks full. */
static void test_dbrec(void)
{
    Fixture f;
    TestCq cq;
    struct vhca_cqe cqe;
    uint32_t n;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 1, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    post(&f, cq.cqn, 1, 0, false);
    post(&f, cq.cqn, 2, 0, false);
    for (n = 0; n < 2; n++) {
        g_assert_true(cq_poll(f.h, &cq, &cqe));
        g_assert_cmpuint(cqe.wr_id, ==, n + 1);
    }
    /* cq_poll wrote the record: two more fit. */
    post(&f, cq.cqn, 3, 0, false);
    post(&f, cq.cqn, 4, 0, false);
    /* A record claiming more than was produced is not believed. */
    {
        uint32_t lie = GUINT32_TO_LE(100);

        ram_write(f.h, cq.dbrec, &lie, 4);
    }
    g_assert_false(vhca_cq_post(&f.h->core, cq.cqn,
                                &(VhcaCompletion){ .wr_id = 5 }));
    g_assert_true(f.h->core.cqs[cq.cqn].error);
    harness_free(f.h);
}

static void test_overflow_errors_cq_and_qps(void)
{
    Fixture f;
    TestCq small, other;
    TestQp a, b;
    struct vhca_eqe eqe;
    uint32_t pi;
    unsigned i;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &small, 1, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(f.h, &other, 4, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(f.h, &a, VHCA_QPT_RC, f.pdn, small.cqn,
                                    other.cqn, f.page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(f.h, &b, VHCA_QPT_UD, f.pdn, other.cqn,
                                    small.cqn, f.page), ==, VHCA_ST_OK);
    qp_move_to(f.h, a.qpn, VHCA_QPT_RC, VHCA_QPS_RTS);
    qp_move_to(f.h, b.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    /* B has a receive posted: it goes to the CQ that B's error flushes. */
    qp_put_recv(f.h, &b, 0xb0);
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, b.qpn, b.rq_pi);
    for (i = 0; i < 3; i++) {
        qp_put_send(f.h, &a, 0xa0 + i, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    }
    ring_doorbell(f.h, f.page, VHCA_DB_SQ, a.qpn, a.sq_pi);
    /* The deferred work never runs here: the WQEs wait. */
    g_assert_cmpuint(small.ci, ==, 0);
    g_assert_false(cq_poll(f.h, &small, &(struct vhca_cqe){ 0 }));

    pi = aeq_drain(f.h);
    qp_move_to(f.h, a.qpn, VHCA_QPT_RC, VHCA_QPS_ERR);

    /* Two flushed CQEs fit; the third overflows the CQ. */
    g_assert_cmphex(cq_entry(f.h, &small, 0).wr_id, ==, 0xa0);
    g_assert_cmphex(cq_entry(f.h, &small, 1).wr_id, ==, 0xa1);
    g_assert_true(f.h->core.cqs[small.cqn].error);
    eqe = aeq_entry(f.h, pi);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CQ_ERROR);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, small.cqn);
    /* B completes to the CQ in error: the device moves it to ERR. */
    eqe = aeq_entry(f.h, pi + 1);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_QP_EVENT);
    g_assert_cmpuint(eqe.subtype, ==, VHCA_EVENT_QP_FATAL);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, b.qpn);
    g_assert_cmpuint(aeq_entry(f.h, pi + 2).type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmpuint(qp_state(f.h, b.qpn), ==, VHCA_QPS_ERR);
    g_assert_cmpuint(qp_state(f.h, a.qpn), ==, VHCA_QPS_ERR);
    /* Traced: B's change is the last, fatal; two error CQEs written. */
    g_assert_cmpuint(f.h->ev.qp_state.qpn, ==, b.qpn);
    g_assert_cmpuint(f.h->ev.qp_state.type, ==, VHCA_QPT_UD);
    g_assert_cmpuint(f.h->ev.qp_state.from, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(f.h->ev.qp_state.to, ==, VHCA_QPS_ERR);
    g_assert_cmpuint(f.h->ev.qp_state.why, ==, VHCA_QP_CHANGE_FATAL);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_COMPLETION_ERRORS), ==, 2);
    g_assert_cmpuint(f.h->ev.cqe_error.n, ==, 2);
    g_assert_cmpuint(f.h->ev.cqe_error.cqn, ==, small.cqn);
    g_assert_cmpuint(f.h->ev.cqe_error.qpn, ==, a.qpn);
    g_assert_cmphex(f.h->ev.cqe_error.wr_id, ==, 0xa1);
    g_assert_cmpuint(f.h->ev.cqe_error.opcode, ==, VHCA_WC_SEND);
    g_assert_cmpuint(f.h->ev.cqe_error.status, ==, VHCA_WC_WR_FLUSH_ERR);
    /* B's receive had nowhere to go; nothing reached the other CQ. */
    g_assert_false(cq_poll(f.h, &other, &(struct vhca_cqe){ 0 }));
    /* A CQ in error takes no more CQEs and ignores its doorbell. */
    g_assert_false(vhca_cq_post(&f.h->core, small.cqn,
                                &(VhcaCompletion){ 0 }));
    harness_free(f.h);
}

static void test_arm_and_events(void)
{
    Fixture f;
    TestCq cq;
    struct vhca_eqe eqe;
    struct vhca_cqe cqe;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 4, f.eqn, f.page), ==,
                     VHCA_ST_OK);

    /* Not armed: no event. */
    post(&f, cq.cqn, 1, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 0);
    g_assert_true(cq_poll(f.h, &cq, &cqe));

    /* ARM_NEXT: one event at the next completion, on the EQ's vector. */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_NEXT | cq.ci);
    g_assert_cmpuint(eq_pi(&f), ==, 0);
    post(&f, cq.cqn, 2, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 1);
    eqe = eq_entry(&f, 0);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_COMPLETION);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, cq.cqn);
    g_assert_cmpuint(eqe.owner, ==, 1);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 1);
    g_assert_cmpuint(f.h->irqs[2], ==, 0);
    /* One shot: the next completion is silent. */
    post(&f, cq.cqn, 3, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 1);
    g_assert_true(cq_poll(f.h, &cq, &cqe));
    g_assert_true(cq_poll(f.h, &cq, &cqe));

    /* ARM_SOLICITED: an unsolicited success does not fire... */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_SOLICITED | cq.ci);
    post(&f, cq.cqn, 4, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 1);
    /* ...a solicited one does... */
    post(&f, cq.cqn, 5, 0, true);
    g_assert_cmpuint(eq_pi(&f), ==, 2);
    /* ...and so does an error (IBTA 11.4.2.2). */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_SOLICITED | (cq.ci + 2));
    post(&f, cq.cqn, 6, VHCA_WC_WR_FLUSH_ERR, false);
    g_assert_cmpuint(eq_pi(&f), ==, 3);

    /*
     * Arming behind the producer (IBTA 11.4.2.2): the CQEs already there
     * raise nothing, the next one does.  A consumer that waits, re-arms
     * before polling and polls once (perftest -e) must not be handed an
     * event for a CQE it is about to poll.
     */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_NEXT | (cq.ci + 2));
    g_assert_cmpuint(eq_pi(&f), ==, 3);
    post(&f, cq.cqn, 8, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 4);
    /* The EQ was disarmed by its first event: one interrupt so far. */
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 1);

    /*
     * Bad doorbells: both arm bits, a CI past the producer, a CI moving
     * backwards.
     */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn, 3u << 30);
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_NEXT | (cq.ci + 100));
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_NEXT | cq.ci);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_CQ], ==, 3);
    post(&f, cq.cqn, 7, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 4);
    harness_free(f.h);
}

static void test_comp_eq_doorbell(void)
{
    Fixture f;
    TestCq cq;
    uint32_t n;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 4, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    /* EQ_DB is write-only; EQ_DB(0) and EQ_DB of no EQ do nothing. */
    g_assert_cmpuint(reg_read(f.h, VHCA_REG_EQ_DB(f.eqn)), ==, 0);
    reg_write(f.h, VHCA_REG_EQ_DB(0), VHCA_EQ_DB_ARM);
    reg_write(f.h, VHCA_REG_EQ_DB(f.eqn + 1), VHCA_EQ_DB_ARM);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_EQ], ==, 1);

    for (n = 0; n < 3; n++) {
        ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                      VHCA_CQ_ARM_NEXT | cq.ci);
        post(&f, cq.cqn, n, 0, false);
    }
    g_assert_cmpuint(eq_pi(&f), ==, 3);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 1);
    /* A CI beyond the producer is refused as a whole, ARM included. */
    reg_write(f.h, VHCA_REG_EQ_DB(f.eqn), VHCA_EQ_DB_ARM | 4);
    g_assert_cmpuint(reg_read(f.h, VHCA_REG_ERROR), ==,
                     VHCA_ERR_AEQ_DOORBELL);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 1);
    /* Arming with unconsumed events interrupts at once. */
    reg_write(f.h, VHCA_REG_EQ_DB(f.eqn), VHCA_EQ_DB_ARM | 2);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 2);
    reg_write(f.h, VHCA_REG_EQ_DB(f.eqn), VHCA_EQ_DB_ARM | 3);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 2);
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn, VHCA_CQ_ARM_NEXT | 3);
    post(&f, cq.cqn, 9, 0, false);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 3);

    /* Overflow: 8 entries, the 9th event is lost and counted. */
    for (n = 0; n < 8; n++) {
        ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                      VHCA_CQ_ARM_NEXT | f.h->core.cqs[cq.cqn].pi);
        post(&f, cq.cqn, n, 0, false);
    }
    g_assert_cmpuint(eq_pi(&f), ==, 3 + 8);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_EQ_OVERFLOWS), ==, 1);
    /* Owner parity flipped on the second pass. */
    g_assert_cmpuint(eq_entry(&f, 8).owner, ==, 0);
    harness_free(f.h);
}

/* Every outstanding WQE completes in order with WR_FLUSH_ERR. */
static void test_flush_on_err(void)
{
    static const struct {
        uint8_t wr, wc, flags;
    } sends[] = {
        { VHCA_WR_RDMA_WRITE, VHCA_WC_RDMA_WRITE, VHCA_WQE_SIGNALED },
        { VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WC_RDMA_WRITE, 0 },
        { VHCA_WR_SEND, VHCA_WC_SEND, 0 },
        { VHCA_WR_SEND_WITH_IMM, VHCA_WC_SEND, VHCA_WQE_SOLICITED },
        { VHCA_WR_RDMA_READ, VHCA_WC_RDMA_READ, VHCA_WQE_SIGNALED },
        { VHCA_WR_ATOMIC_CMP_AND_SWP, VHCA_WC_COMP_SWAP, 0 },
        { VHCA_WR_ATOMIC_FETCH_AND_ADD, VHCA_WC_FETCH_ADD, 0 },
        { VHCA_WR_SEND_WITH_INV, VHCA_WC_SEND, 0 },
        { 0x42, VHCA_WC_SEND, 0 },
    };
    Fixture f;
    TestCq scq, rcq;
    TestQp qp;
    struct vhca_cqe cqe;
    unsigned i;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &scq, 5, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(f.h, &rcq, 5, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(f.h, &qp, VHCA_QPT_RC, f.pdn, scq.cqn,
                                    rcq.cqn, f.page), ==, VHCA_ST_OK);
    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, VHCA_QPS_INIT);
    for (i = 0; i < 3; i++) {
        qp_put_recv(f.h, &qp, 0x7700 + i);
    }
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, qp.rq_pi);
    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, VHCA_QPS_RESET);
    /* RESET emptied the RQ: those three are gone for good. */
    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, VHCA_QPS_RTS);
    qp.rq_pi = 0;
    for (i = 0; i < 2; i++) {
        qp_put_recv(f.h, &qp, 0x8800 + i);
    }
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, qp.rq_pi);
    /* 30 WQEs wrap the 32-entry SQ's pages in reverse order. */
    for (i = 0; i < 30; i++) {
        qp_put_send(f.h, &qp, 0x5500 + i, sends[i % 9].wr,
                    sends[i % 9].flags);
    }
    ring_doorbell(f.h, f.page, VHCA_DB_SQ, qp.qpn, qp.sq_pi);
    g_assert_false(cq_poll(f.h, &scq, &cqe));

    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, VHCA_QPS_ERR);
    for (i = 0; i < 30; i++) {
        g_assert_true(cq_poll(f.h, &scq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0x5500 + i);
        g_assert_cmpuint(cqe.status, ==, VHCA_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(cqe.opcode, ==, sends[i % 9].wc);
        g_assert_cmpuint(cqe.qpn, ==, qp.qpn);
    }
    g_assert_false(cq_poll(f.h, &scq, &cqe));
    for (i = 0; i < 2; i++) {
        g_assert_true(cq_poll(f.h, &rcq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0x8800 + i);
        g_assert_cmpuint(cqe.status, ==, VHCA_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(cqe.opcode, ==, VHCA_WC_RECV);
    }
    g_assert_false(cq_poll(f.h, &rcq, &cqe));

    /* In ERR, what is posted is flushed at once. */
    qp_put_send(f.h, &qp, 0x99, VHCA_WR_RDMA_READ, 0);
    ring_doorbell(f.h, f.page, VHCA_DB_SQ, qp.qpn, qp.sq_pi);
    g_assert_true(cq_poll(f.h, &scq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0x99);
    g_assert_cmpuint(cqe.opcode, ==, VHCA_WC_RDMA_READ);
    qp_put_recv(f.h, &qp, 0x98);
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, qp.rq_pi);
    g_assert_true(cq_poll(f.h, &rcq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0x98);

    /* ERR -> ERR flushes nothing twice. */
    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, VHCA_QPS_ERR);
    g_assert_false(cq_poll(f.h, &scq, &cqe));
    g_assert_false(cq_poll(f.h, &rcq, &cqe));
    harness_free(f.h);
}

/* A WQE that cannot be read back still completes, with vendor_err. */
static void test_flush_unreadable_wqe(void)
{
    Fixture f;
    TestCq cq;
    TestQp qp;
    struct vhca_cqe cqe;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 4, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(f.h, &qp, VHCA_QPT_UC, f.pdn, cq.cqn,
                                    cq.cqn, f.page), ==, VHCA_ST_OK);
    /* RTR: the WQE waits, unfetched, until the flush (an RTS UC QP
     * would send it before the MODIFY_QP: vhca_qp_drain_unreliable). */
    qp_move_to(f.h, qp.qpn, VHCA_QPT_UC, VHCA_QPS_RTR);
    qp_put_send(f.h, &qp, 0x11, VHCA_WR_SEND, 0);
    ring_doorbell(f.h, f.page, VHCA_DB_SQ, qp.qpn, 1);
    /* The guest unmaps the ring page (the device kept the page list). */
    f.h->core.qps[qp.qpn].sq.pages[0] = BAD_ADDR;
    qp_move_to(f.h, qp.qpn, VHCA_QPT_UC, VHCA_QPS_ERR);
    g_assert_true(cq_poll(f.h, &cq, &cqe));
    g_assert_cmpuint(cqe.status, ==, VHCA_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(cqe.wr_id, ==, 0);
    g_assert_cmpuint(cqe.vendor_err, ==, VHCA_VENDOR_ERR_WQE_DMA);
    harness_free(f.h);
}

static void test_doorbell_rules(void)
{
    Fixture f;
    TestCq cq;
    TestQp qp, other_page_qp;
    uint32_t page2;
    struct vhca_cqe cqe;

    fixture_init(&f);
    page2 = rdma_alloc_uctx(f.h);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 4, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(f.h, &qp, VHCA_QPT_RC, f.pdn, cq.cqn,
                                    cq.cqn, f.page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(f.h, &other_page_qp, VHCA_QPT_RC,
                                    f.pdn, cq.cqn, cq.cqn, page2), ==,
                     VHCA_ST_OK);

    /* RESET: the doorbell is ignored (IBTA 10.8.2). */
    qp_put_recv(f.h, &qp, 1);
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, 1);
    g_assert_cmpuint(f.h->core.qps[qp.qpn].rq.pi, ==, 0);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 1);

    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, VHCA_QPS_INIT);
    qp_move_to(f.h, other_page_qp.qpn, VHCA_QPT_RC, VHCA_QPS_INIT);
    /* The wrong page: counted, ignored. */
    ring_doorbell(f.h, page2, VHCA_DB_RQ, qp.qpn, 1);
    ring_doorbell(f.h, f.page, VHCA_DB_SQ, other_page_qp.qpn, 1);
    ring_doorbell(f.h, page2, VHCA_DB_CQ, cq.cqn, VHCA_CQ_ARM_NEXT);
    g_assert_cmpuint(f.h->core.qps[qp.qpn].rq.pi, ==, 0);
    g_assert_cmpuint(f.h->core.qps[other_page_qp.qpn].sq.pi, ==, 0);
    g_assert_cmpuint(f.h->core.cqs[cq.cqn].arm, ==, 0);
    g_assert_cmpuint(counter(f.h, VHCA_CNT_DOORBELLS), ==, 4);
    /* Not a 64-bit write: ignored. */
    vhca_core_doorbell_write(&f.h->core,
                             (uint64_t)f.page * VHCA_DB_PAGE_SIZE +
                             VHCA_DB_RQ, qp.qpn, 4);
    g_assert_cmpuint(f.h->core.qps[qp.qpn].rq.pi, ==, 0);
    /* More than the ring holds: ignored. */
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, 17);
    g_assert_cmpuint(f.h->core.qps[qp.qpn].rq.pi, ==, 0);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_DOORBELL], ==, 4);

    /* The right page works; a destroyed QP drops its WQEs silently. */
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, 1);
    g_assert_cmpuint(f.h->core.qps[qp.qpn].rq.pi, ==, 1);
    g_assert_cmpuint(rdma_destroy(f.h, VHCA_CMD_DESTROY_QP, qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_false(cq_poll(f.h, &cq, &cqe));
    ring_doorbell(f.h, f.page, VHCA_DB_RQ, qp.qpn, 1);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_DOORBELL], ==, 5);
    harness_free(f.h);
}

/* ---------------------------------------------------------------------- */
/* RESIZE_CQ (IBTA 11.2.8.3)                                              */
/* ---------------------------------------------------------------------- */

/*
 * RESIZE_CQ of @cq to a fresh ring of 2^@log entries (its pages in
 * reverse, as rdma_create_cq lays them out).  On success @cq follows it:
 * the consumer starts again at index 0.  *moved gets out[0..3].
 */
static uint8_t resize(Fixture *f, TestCq *cq, uint8_t log, uint32_t *moved)
{
    uint32_t pages = ((32u << log) + 4095) / 4096;
    uint64_t ring = rdma_alloc(f->h, pages);
    struct vhca_cq_resize r;
    uint32_t out = 0xdeadbeef;
    uint8_t status;

    memset(&r, 0, sizeof(r));
    r.cqn = GUINT32_TO_LE(cq->cqn);
    r.log_size = log;
    r.pbl_addr = GUINT64_TO_LE(rdma_pbl(f->h, ring, pages, true));
    r.npages = GUINT32_TO_LE(pages);
    status = rdma_cmd(f->h, VHCA_CMD_RESIZE_CQ, &r, sizeof(r), &out, NULL);
    if (moved) {
        *moved = out;
    }
    if (status == VHCA_ST_OK) {
        cq->ring = ring;
        cq->log = log;
        cq->ci = 0;
    }
    return status;
}

/* RESIZE_CQ with a page list of @npages at @pbl; the CQ stays put. */
static uint8_t resize_raw(Fixture *f, uint32_t cqn, uint8_t log,
                          uint64_t pbl, uint32_t npages, uint32_t *syndrome)
{
    struct vhca_cq_resize r;
    uint8_t status;

    memset(&r, 0, sizeof(r));
    r.cqn = GUINT32_TO_LE(cqn);
    r.log_size = log;
    r.pbl_addr = GUINT64_TO_LE(pbl);
    r.npages = GUINT32_TO_LE(npages);
    status = rdma_cmd(f->h, VHCA_CMD_RESIZE_CQ, &r, sizeof(r), NULL, NULL);
    *syndrome = GUINT32_FROM_LE(admin_entry(f->h, (f->h->admq_pi - 1) &
                                            ((1u << ADMQ_LOG) - 1)).syndrome);
    return status;
}

static uint32_t dbrec_read(Fixture *f, const TestCq *cq)
{
    uint32_t le;

    ram_read(f->h, cq->dbrec, &le, 4);
    return GUINT32_FROM_LE(le);
}

static void dbrec_write(Fixture *f, const TestCq *cq, uint32_t value)
{
    uint32_t le = GUINT32_TO_LE(value);

    ram_write(f->h, cq->dbrec, &le, 4);
}

static void poll_expect(Fixture *f, TestCq *cq, uint64_t wr_id)
{
    struct vhca_cqe cqe;
    uint8_t owner = ((cq->ci >> cq->log) & 1) ^ 1;

    g_assert_true(cq_poll(f->h, cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.owner, ==, owner);
    g_assert_cmpuint(cqe.byte_len, ==, 100);
    g_assert_cmpuint(cqe.qpn, ==, 2);
}

/* What RESIZE_CQ must leave alone when it fails. */
typedef struct CqSnapshot {
    VhcaCq state;
    uint64_t page0;
    uint32_t dbrec;
} CqSnapshot;

static void cq_snapshot(Fixture *f, const TestCq *cq, CqSnapshot *s)
{
    s->state = f->h->core.cqs[cq->cqn];
    s->page0 = s->state.pages[0];
    s->dbrec = dbrec_read(f, cq);
}

static void cq_assert_unchanged(Fixture *f, const TestCq *cq,
                                const CqSnapshot *s)
{
    const VhcaCq *now = &f->h->core.cqs[cq->cqn];

    g_assert_true(now->pages == s->state.pages);
    g_assert_cmphex(now->pages[0], ==, s->page0);
    g_assert_cmpuint(now->log_size, ==, s->state.log_size);
    g_assert_cmpuint(now->pi, ==, s->state.pi);
    g_assert_cmpuint(now->ci, ==, s->state.ci);
    g_assert_cmpuint(now->arm, ==, s->state.arm);
    g_assert_cmpuint(now->error, ==, s->state.error);
    g_assert_cmphex(dbrec_read(f, cq), ==, s->dbrec);
}

/*
 * The CQEs not consumed move in order to the start of the new ring with
 * its first-pass owner bit; the record becomes 0; the producer goes on
 * in the new ring, through its wrap.  The old ring had wrapped, and the
 * free-running indices cross 2^24 (the record's 24 bits) on the way.
 */
static void test_resize_moves_pending(void)
{
    Fixture f;
    TestCq cq;
    uint32_t moved, n;
    uint64_t next = 0x100;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 2, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    /* Start at a first pass (owner 1) of the ring just under 2^24. */
    f.h->core.cqs[cq.cqn].pi = f.h->core.cqs[cq.cqn].ci = 0x00fffff8;
    cq.ci = 0x00fffff8;
    for (n = 0; n < 6; n++) {
        post(&f, cq.cqn, next, 0, false);
        poll_expect(&f, &cq, next++);
    }
    /* Four more fill the ring; one is consumed: three stay, across 2^24. */
    for (n = 0; n < 4; n++) {
        post(&f, cq.cqn, next + n, 0, false);
    }
    poll_expect(&f, &cq, next++);
    g_assert_cmphex(dbrec_read(&f, &cq), ==, 0x00ffffff);
    g_assert_cmphex(f.h->core.cqs[cq.cqn].pi, ==, 0x01000002);

    g_assert_cmpuint(resize(&f, &cq, 3, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 3);
    g_assert_cmphex(dbrec_read(&f, &cq), ==, 0);
    g_assert_cmpuint(f.h->core.cqs[cq.cqn].pi, ==, 3);
    g_assert_cmpuint(f.h->core.cqs[cq.cqn].ci, ==, 0);
    g_assert_cmpuint(f.h->core.cqs[cq.cqn].log_size, ==, 3);
    for (n = 0; n < 3; n++) {
        g_assert_cmpuint(cq_entry(f.h, &cq, n).owner, ==, 1);
    }
    /* Past them the new ring is as the consumer left it: not valid. */
    g_assert_cmpuint(cq_entry(f.h, &cq, 3).owner, ==, 0);

    /* The producer goes on at index 3: five more fill the 8 entries... */
    for (n = 0; n < 5; n++) {
        post(&f, cq.cqn, next + 3 + n, 0, false);
    }
    for (n = 0; n < 8; n++) {
        poll_expect(&f, &cq, next++);
    }
    g_assert_false(cq_poll(f.h, &cq, &(struct vhca_cqe){ 0 }));
    /* ...and wrap the new ring, owner 0 on its second pass. */
    for (n = 0; n < 6; n++) {
        post(&f, cq.cqn, next + n, 0, false);
    }
    for (n = 0; n < 6; n++) {
        poll_expect(&f, &cq, next++);
    }
    g_assert_cmpuint(cq_entry(f.h, &cq, 9).owner, ==, 0);
    g_assert_false(f.h->core.cqs[cq.cqn].error);

    /* Shrinking with nothing pending moves nothing. */
    g_assert_cmpuint(resize(&f, &cq, 1, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 0);
    post(&f, cq.cqn, next, 0, false);
    poll_expect(&f, &cq, next++);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_CQ], ==, 0);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_ADMIN_CMD], ==, 0);
    harness_free(f.h);
}

/*
 * A ring too small for the CQEs pending is refused and nothing changes;
 * one that holds exactly them is accepted, with the fullness rule of the
 * producer: it is full.
 */
static void test_resize_too_small(void)
{
    Fixture f;
    TestCq cq;
    CqSnapshot before;
    uint32_t moved, syndrome, n;
    uint64_t ring, pbl;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 3, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    for (n = 0; n < 5; n++) {
        post(&f, cq.cqn, 0x10 + n, 0, false);
    }
    poll_expect(&f, &cq, 0x10);
    cq_snapshot(&f, &cq, &before);

    ring = rdma_alloc(f.h, 1);
    pbl = rdma_pbl(f.h, ring, 1, false);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 1, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(syndrome, ==, 4);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_ADMIN_CMD], ==, 1);
    cq_assert_unchanged(&f, &cq, &before);
    /* Nothing was written into the refused ring. */
    for (n = 0; n < 2; n++) {
        struct vhca_cqe cqe;

        ram_read(f.h, ring + 32 * n, &cqe, sizeof(cqe));
        g_assert_cmpuint(cqe.wr_id, ==, 0);
        g_assert_cmpuint(cqe.owner, ==, 0);
    }
    /* The CQ still works: the next CQE lands after the others. */
    post(&f, cq.cqn, 0x15, 0, false);
    poll_expect(&f, &cq, 0x11);

    /* Five pending, four entries: refused. */
    post(&f, cq.cqn, 0x16, 0, false);
    g_assert_cmpuint(resize(&f, &cq, 2, &moved), ==, VHCA_ST_BAD_PARAM);
    /* Four in four entries: accepted, and full. */
    poll_expect(&f, &cq, 0x12);
    g_assert_cmpuint(resize(&f, &cq, 2, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 4);
    g_assert_false(vhca_cq_post(&f.h->core, cq.cqn,
                                &(VhcaCompletion){ .wr_id = 0x99 }));
    g_assert_true(f.h->core.cqs[cq.cqn].error);
    for (n = 0; n < 4; n++) {
        poll_expect(&f, &cq, 0x13 + n);
    }
    harness_free(f.h);
}

/* IBTA 11.4.2.1: a CQ in error is refused; so are bad inputs. */
static void test_resize_refused(void)
{
    Fixture f;
    TestCq cq, broken;
    CqSnapshot before;
    uint32_t syndrome;
    uint64_t pbl;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 2, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(f.h, &broken, 1, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    post(&f, broken.cqn, 1, 0, false);
    post(&f, broken.cqn, 2, 0, false);
    g_assert_false(vhca_cq_post(&f.h->core, broken.cqn,
                                &(VhcaCompletion){ .wr_id = 3 }));
    g_assert_true(f.h->core.cqs[broken.cqn].error);
    cq_snapshot(&f, &broken, &before);
    g_assert_cmpuint(resize(&f, &broken, 4, NULL), ==, VHCA_ST_BAD_STATE);
    cq_assert_unchanged(&f, &broken, &before);

    post(&f, cq.cqn, 0x20, 0, false);
    post(&f, cq.cqn, 0x21, 0, false);
    cq_snapshot(&f, &cq, &before);
    pbl = rdma_pbl(f.h, rdma_alloc(f.h, 1), 1, false);
    /* No such CQ; log_size out of range; too few pages. */
    g_assert_cmpuint(resize_raw(&f, cq.cqn + 5, 2, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(syndrome, ==, cq.cqn + 5);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 0, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(syndrome, ==, 0);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, VHCA_CQ_MAX_LOG_SIZE + 1, pbl, 1,
                                &syndrome), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(syndrome, ==, VHCA_CQ_MAX_LOG_SIZE + 1);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 8, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(syndrome, ==, 1);
    /* A record past the producer, or behind what the device learnt. */
    dbrec_write(&f, &cq, 3);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 2, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(syndrome, ==, 3);
    dbrec_write(&f, &cq, 0);
    cq_assert_unchanged(&f, &cq, &before);
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn, VHCA_CQ_ARM_NEXT | 1);
    g_assert_cmpuint(f.h->core.cqs[cq.cqn].ci, ==, 1);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 2, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(syndrome, ==, 0);

    /* The new ring is not guest RAM: refused, nothing changed. */
    dbrec_write(&f, &cq, 1);
    cq_snapshot(&f, &cq, &before);
    pbl = rdma_pbl(f.h, BAD_ADDR, 1, false);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 2, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_ADDR);
    g_assert_cmpuint(syndrome, ==, 0);
    g_assert_cmpuint(f.h->ev.err_admin_cmd.status, ==, VHCA_ST_BAD_ADDR);
    cq_assert_unchanged(&f, &cq, &before);
    /* Its page list is not guest RAM: the same. */
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 2, BAD_ADDR, 1, &syndrome), ==,
                     VHCA_ST_BAD_ADDR);
    cq_assert_unchanged(&f, &cq, &before);
    /* The old ring went away under the device: its CQE cannot be read. */
    f.h->core.cqs[cq.cqn].pages[0] = BAD_ADDR;
    before.page0 = BAD_ADDR;
    pbl = rdma_pbl(f.h, rdma_alloc(f.h, 1), 1, false);
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 2, pbl, 1, &syndrome), ==,
                     VHCA_ST_BAD_ADDR);
    g_assert_cmpuint(syndrome, ==, 0);
    cq_assert_unchanged(&f, &cq, &before);
    harness_free(f.h);
}

/*
 * The new ring fails half way (its second page is not guest RAM): the
 * command is refused after copying into the first page, and the CQ goes
 * on in its old ring as if nothing had happened.
 */
static void test_resize_ring_dma_fails(void)
{
    Fixture f;
    TestCq cq;
    CqSnapshot before;
    uint32_t syndrome, moved, n;
    uint64_t ring, pbl, list[2];

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 8, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    for (n = 0; n < 131; n++) {
        post(&f, cq.cqn, 0x1000 + n, 0, false);
    }
    poll_expect(&f, &cq, 0x1000);
    cq_snapshot(&f, &cq, &before);

    ring = rdma_alloc(f.h, 1);
    pbl = rdma_alloc(f.h, 1);
    list[0] = GUINT64_TO_LE(ring);
    list[1] = GUINT64_TO_LE(BAD_ADDR);
    ram_write(f.h, pbl, list, sizeof(list));
    g_assert_cmpuint(resize_raw(&f, cq.cqn, 8, pbl, 2, &syndrome), ==,
                     VHCA_ST_BAD_ADDR);
    g_assert_cmpuint(syndrome, ==, 128);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_ADMIN_CMD], ==, 1);
    cq_assert_unchanged(&f, &cq, &before);
    g_assert_false(f.h->core.cqs[cq.cqn].error);

    /* The old ring still takes CQEs and gives them back in order. */
    post(&f, cq.cqn, 0x1000 + 131, 0, false);
    for (n = 1; n < 100; n++) {
        poll_expect(&f, &cq, 0x1000 + n);
    }
    /* A good ring now: 32 left to move. */
    g_assert_cmpuint(resize(&f, &cq, 6, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 32);
    for (n = 100; n < 132; n++) {
        poll_expect(&f, &cq, 0x1000 + n);
    }
    g_assert_false(cq_poll(f.h, &cq, &(struct vhca_cqe){ 0 }));
    harness_free(f.h);
}

/* Arming belongs to the CQ, not to its ring: a resize keeps it. */
static void test_resize_keeps_arming(void)
{
    Fixture f;
    TestCq cq;
    uint32_t moved;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_cq(f.h, &cq, 2, f.eqn, f.page), ==,
                     VHCA_ST_OK);
    /* ARM_NEXT on an empty CQ, then a resize: the next CQE fires. */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_NEXT | cq.ci);
    g_assert_cmpuint(resize(&f, &cq, 4, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 0);
    g_assert_cmpuint(eq_pi(&f), ==, 0);
    post(&f, cq.cqn, 1, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 1);
    g_assert_cmpuint(GUINT32_FROM_LE(eq_entry(&f, 0).data[0]), ==, cq.cqn);
    g_assert_cmpuint(f.h->irqs[COMP_VECTOR], ==, 1);

    /* ARM_SOLICITED with an unsolicited CQE pending: kept as well. */
    poll_expect(&f, &cq, 1);
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn,
                  VHCA_CQ_ARM_SOLICITED | cq.ci);
    post(&f, cq.cqn, 2, 0, false);
    g_assert_cmpuint(resize(&f, &cq, 2, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 1);
    post(&f, cq.cqn, 3, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 1);
    post(&f, cq.cqn, 4, 0, true);
    g_assert_cmpuint(eq_pi(&f), ==, 2);
    /*
     * Arming counts in the new ring's indices: 0, with three CQEs there,
     * is accepted; they raise nothing, the next CQE does.
     */
    ring_doorbell(f.h, f.page, VHCA_DB_CQ, cq.cqn, VHCA_CQ_ARM_NEXT | 0);
    g_assert_cmpuint(f.h->guest_errors[VHCA_GUEST_ERR_CQ], ==, 0);
    g_assert_cmpuint(eq_pi(&f), ==, 2);
    for (uint32_t n = 2; n <= 4; n++) {
        poll_expect(&f, &cq, n);
    }
    post(&f, cq.cqn, 5, 0, false);
    g_assert_cmpuint(eq_pi(&f), ==, 3);
    harness_free(f.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/cq/owner-bit-wraps", test_owner_bit_wraps);
    g_test_add_func("/vhca/cq/dbrec", test_dbrec);
    g_test_add_func("/vhca/cq/largest", test_largest);
    g_test_add_func("/vhca/cq/overflow-errors-cq-and-qps",
                    test_overflow_errors_cq_and_qps);
    g_test_add_func("/vhca/cq/arm-and-events", test_arm_and_events);
    g_test_add_func("/vhca/cq/comp-eq-doorbell", test_comp_eq_doorbell);
    g_test_add_func("/vhca/qp/flush-on-err", test_flush_on_err);
    g_test_add_func("/vhca/qp/flush-unreadable-wqe",
                    test_flush_unreadable_wqe);
    g_test_add_func("/vhca/qp/doorbell-rules", test_doorbell_rules);
    g_test_add_func("/vhca/cq/resize/moves-pending",
                    test_resize_moves_pending);
    g_test_add_func("/vhca/cq/resize/too-small", test_resize_too_small);
    g_test_add_func("/vhca/cq/resize/refused", test_resize_refused);
    g_test_add_func("/vhca/cq/resize/ring-dma-fails",
                    test_resize_ring_dma_fails);
    g_test_add_func("/vhca/cq/resize/keeps-arming",
                    test_resize_keeps_arming);
    return g_test_run();
}
