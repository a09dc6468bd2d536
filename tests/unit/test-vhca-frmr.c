/*
 * Unit tests of fast registration and invalidation (IBTA Vol 1 10.6.3.2,
 * 10.6.5, 10.7; docs/specs/vhca.rst, "Fast registration and
 * invalidation"): REG_MR and LOCAL_INV send WQEs, SEND with Invalidate at
 * the receiver, and what each does to later accesses, between two
 * engines wired back to back.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-rdma.h"

#define REG_OFF     0x8000          /* b's pages the fast MR maps */
#define REG_PAGES   4
#define REG_IOVA    0x7000000123ull /* offset 0x123 in its first page */
#define REG_LEN     (3 * 4096)
#define SRC_OFF     0x20000         /* a's data */
#define DST_OFF     0x30000         /* where a's READs land */

static uint64_t settle(Pair *p)
{
    return harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

/* b's fast-register MR, made valid by a REG_MR with tag @tag. */
static uint32_t reg_b(Pair *p, uint32_t free_key, uint8_t tag,
                      uint64_t wr_id)
{
    struct vhca_send_wqe w;
    uint32_t key = (free_key & ~0xffu) | tag;

    wqe_reg_mr(&p->b, &w, wr_id, key, REG_OFF, REG_PAGES, REG_IOVA, REG_LEN,
               ACCESS_ALL);
    qp_put_send_wqe(p->b.h, &p->b.qp, &w);
    ring_sq(&p->b);
    settle(p);
    return key;
}

static void post_local_inv(Node *n, uint64_t wr_id, uint32_t key)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_LOCAL_INV, VHCA_WQE_SIGNALED);
    w.imm_or_inv = GUINT32_TO_LE(key);
    qp_put_send_wqe(n->h, &n->qp, &w);
    ring_sq(n);
}

/* a writes @len bytes at b's @iova + @at through @rkey, and settles. */
static void write_b(Pair *p, uint64_t wr_id, uint64_t at, uint32_t len,
                    uint32_t rkey)
{
    post(&p->a, wr_id, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, SRC_OFF, len,
         REG_IOVA + at, rkey);
    ring_sq(&p->a);
    settle(p);
}

/* REG_MR, then the peer WRITEs and READs through the new R_Key. */
static void test_reg_write_read(void)
{
    Pair p;
    struct vhca_cqe cqe;
    uint32_t free_key, key;

    pair_init(&p, &default_opts);
    free_key = node_fast_mr(&p.b, 8, 0x10);
    /* Free: the key grants nothing yet. */
    write_b(&p, 0xa0, 0, 8, free_key);
    expect_cqe(&p.a, &p.a.scq, 0xa0, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    pair_free(&p);

    pair_init(&p, &default_opts);
    free_key = node_fast_mr(&p.b, 8, 0x10);
    key = reg_b(&p, free_key, 0x11, 0xb1);
    cqe = expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    /* No packet for a local operation. */
    g_assert_cmpuint(p.b.h->tx_frames, ==, 0);

    /* Across pages: iova + 100 is page 0 + 0x123 + 100. */
    fill(&p.a, SRC_OFF, 5000, 7);
    write_b(&p, 0xa1, 100, 5000, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&p.a, SRC_OFF, &p.b, REG_OFF + 0x123 + 100, 5000);

    fill(&p.b, REG_OFF + 0x123, REG_LEN, 9);
    post(&p.a, 0xa2, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, DST_OFF, REG_LEN,
         REG_IOVA, key);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_same(&p.b, REG_OFF + 0x123, &p.a, DST_OFF, REG_LEN);

    /* One byte past the registered length is out of bounds. */
    write_b(&p, 0xa3, REG_LEN - 4, 8, key);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    pair_free(&p);
}

/* The new L_Key serves the WQEs posted right after the REG_MR. */
static void test_reg_then_local_use(void)
{
    Pair p;
    struct vhca_send_wqe w;
    struct vhca_cqe cqe;
    uint32_t key;

    pair_init(&p, &default_opts);
    key = (node_fast_mr(&p.b, REG_PAGES, 0x20) & ~0xffu) | 0x21;
    fill(&p.b, REG_OFF + 0x123, 3000, 3);
    post_recv(&p.a, 0xa1, DST_OFF, 4096);
    wqe_reg_mr(&p.b, &w, 0xb1, key, REG_OFF, REG_PAGES, REG_IOVA, REG_LEN,
               VHCA_ACCESS_LOCAL_WRITE);
    w.flags = 0;                        /* unsignaled: no CQE */
    qp_put_send_wqe(p.b.h, &p.b.qp, &w);
    wqe_init(&w, 0xb2, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&w, REG_IOVA, 3000, key);
    qp_put_send_wqe(p.b.h, &p.b.qp, &w);
    ring_sq(&p.b);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.b, &p.b.scq);
    cqe = expect_cqe(&p.a, &p.a.rcq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    expect_same(&p.b, REG_OFF + 0x123, &p.a, DST_OFF, 3000);
    pair_free(&p);
}

/* LOCAL_INV frees the MR: the peer's next access fails. */
static void test_local_inv(void)
{
    Pair p;
    uint32_t key;

    pair_init(&p, &default_opts);
    key = reg_b(&p, node_fast_mr(&p.b, 8, 0x30), 0x31, 0xb1);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    write_b(&p, 0xa1, 0, 64, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);

    post_local_inv(&p.b, 0xb2, key);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_LOCAL_INV);
    write_b(&p, 0xa2, 0, 64, key);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    pair_free(&p);
}

/*
 * LOCAL_INV waits for every earlier WQE; it completes after them, in
 * order, and a local WQE alone at the head completes with no traffic.
 */
static void test_local_inv_waits(void)
{
    Pair p;
    uint32_t key;

    pair_init(&p, &default_opts);
    key = reg_b(&p, node_fast_mr(&p.b, 8, 0x40), 0x41, 0xb1);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    post_recv(&p.a, 0xa1, DST_OFF, 64);
    post_recv(&p.a, 0xa2, DST_OFF, 8192);
    fill(&p.b, REG_OFF + 0x123, 5000, 4);
    post(&p.b, 0xb2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 0, 0, 0);
    {
        struct vhca_send_wqe w;

        wqe_init(&w, 0xb3, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        wqe_sge(&w, REG_IOVA, 5000, key);
        qp_put_send_wqe(p.b.h, &p.b.qp, &w);
    }
    post_local_inv(&p.b, 0xb4, key);
    /* b alone, before any ACK: the SENDs are out, nothing completed. */
    harness_run(p.b.h);
    g_assert_cmpuint(p.b.h->tx_frames, >, 0);
    expect_no_cqe(&p.b, &p.b.scq);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.scq, 0xb3, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.scq, 0xb4, VHCA_WC_SUCCESS, VHCA_WC_LOCAL_INV);
    expect_no_cqe(&p.b, &p.b.scq);
    expect_cqe(&p.a, &p.a.rcq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_cqe(&p.a, &p.a.rcq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_same(&p.b, REG_OFF + 0x123, &p.a, DST_OFF, 5000);
    pair_free(&p);
}

/* SEND with Invalidate frees the MR at the receiver, and says so. */
static void test_send_with_inv(void)
{
    Pair p;
    struct vhca_send_wqe w;
    struct vhca_cqe cqe;
    uint32_t key;

    pair_init(&p, &default_opts);
    key = reg_b(&p, node_fast_mr(&p.b, 8, 0x50), 0x51, 0xb1);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    post_recv(&p.b, 0xb2, 0x1000, 4096);
    fill(&p.a, SRC_OFF, 2000, 5);
    wqe_init(&w, 0xa1, VHCA_WR_SEND_WITH_INV, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf + SRC_OFF, 2000, p.a.key);
    w.imm_or_inv = GUINT32_TO_LE(key);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.flags, ==, VHCA_CQE_WITH_INV);
    g_assert_cmphex(GUINT32_FROM_LE(cqe.imm_or_inv), ==, key);
    g_assert_cmpuint(cqe.byte_len, ==, 2000);

    write_b(&p, 0xa2, 0, 64, key);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    pair_free(&p);
}

/*
 * IBTA 10.6.5: a key that names an ordinary MR (or nothing) cannot be
 * invalidated: NAK invalid request, both sides complete in error.
 */
static void test_send_with_inv_bad_key(void)
{
    static const struct {
        const char *what;
        bool ordinary;
        uint32_t key;
    } cases[] = {
        { "ordinary MR", true, 0 },
        { "no MR", false, 0x3f00 | 0x12 },
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        Pair p;
        struct vhca_send_wqe w;
        uint64_t before;

        g_test_message("%s", cases[i].what);
        pair_init(&p, &default_opts);
        post_recv(&p.b, 0xb1, 0x1000, 4096);
        wqe_init(&w, 0xa1, VHCA_WR_SEND_WITH_INV, VHCA_WQE_SIGNALED);
        wqe_sge(&w, p.a.buf + SRC_OFF, 16, p.a.key);
        w.imm_or_inv = GUINT32_TO_LE(cases[i].ordinary ? p.b.key
                                                       : cases[i].key);
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        before = counter(p.b.h, VHCA_CNT_INV_REQ_NAK_SENT);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_INV_REQ_ERR,
                   VHCA_WC_SEND);
        expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_REM_INV_REQ_ERR,
                   VHCA_WC_RECV);
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
        g_assert_cmpuint(counter(p.b.h, VHCA_CNT_INV_REQ_NAK_SENT), ==,
                         before + 1);
        /* The ordinary MR is still there. */
        if (cases[i].ordinary) {
            g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR,
                                          p.b.key), ==, VHCA_ST_OK);
        }
        pair_free(&p);
    }
}

/* IBTA 10.7.2: REG_MR on a valid MR fails; the QP goes to ERR. */
static void test_reg_on_valid(void)
{
    Pair p;
    uint32_t free_key, key;

    pair_init(&p, &default_opts);
    free_key = node_fast_mr(&p.b, 8, 0x60);
    key = reg_b(&p, free_key, 0x61, 0xb1);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    reg_b(&p, free_key, 0x62, 0xb2);
    post_local_inv(&p.b, 0xb3, key);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_LOC_PROT_ERR, VHCA_WC_REG_MR);
    /* What follows is flushed, with its own opcode. */
    expect_cqe(&p.b, &p.b.scq, 0xb3, VHCA_WC_WR_FLUSH_ERR,
               VHCA_WC_LOCAL_INV);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    /* The first registration stands (the QP cannot tell: it is in ERR). */
    g_assert_cmpint(vhca_mr_check(&p.b.h->core, key, p.b.pdn, 0, REG_IOVA,
                                  REG_LEN, VHCA_ACCESS_REMOTE_WRITE, NULL),
                    ==, VHCA_MR_OK);
    g_assert_cmpint(vhca_mr_check(&p.b.h->core, (key & ~0xffu) | 0x62,
                                  p.b.pdn, 0, REG_IOVA, 8, 0, NULL),
                    ==, VHCA_MR_BAD_KEY);
    pair_free(&p);
}

/* REG_MR and LOCAL_INV checks that fail with LOC_PROT_ERR. */
static void test_local_op_errors(void)
{
    enum { GOOD, WRONG_PD, NOT_RAM, MISALIGNED, TOO_MANY, TOO_LONG, ORDINARY,
           INV_STALE, INV_ORDINARY, UD_QP };
    static const char *const names[] = {
        "the good REG_MR the others differ from", "REG_MR in another PD", "REG_MR page list not RAM",
        "REG_MR page not aligned", "REG_MR more pages than allocated",
        "REG_MR length past the pages", "REG_MR of an ordinary MR",
        "LOCAL_INV with a stale tag", "LOCAL_INV of an ordinary MR",
        "REG_MR on a UD QP",
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        Node n;
        struct vhca_send_wqe w;
        uint32_t key, pdn;
        uint8_t status = VHCA_WC_LOC_PROT_ERR;

        g_test_message("%s", names[i]);
        node_init(&n, 1, i == UD_QP ? VHCA_QPT_UD : VHCA_QPT_RC);
        qp_move_to(n.h, n.qp.qpn, i == UD_QP ? VHCA_QPT_UD : VHCA_QPT_RC,
                   VHCA_QPS_RTS);
        key = node_fast_mr(&n, 4, 0x70);
        if (i == WRONG_PD) {
            pdn = n.pdn;
            n.pdn = rdma_create_pd(n.h);
            key = node_fast_mr(&n, 4, 0x70);
            n.pdn = pdn;
        }
        wqe_reg_mr(&n, &w, 0xc1, key + 1, 0, 4, 0x1000, 4096 * 4,
                   ACCESS_ALL);
        switch (i) {
        case NOT_RAM:
            w.mr_pbl_addr = GUINT64_TO_LE(RAM_BASE + RAM_SIZE);
            break;
        case MISALIGNED:
            w.mr_pbl_addr = GUINT64_TO_LE(rdma_pbl(n.h, n.buf + 8, 4,
                                                   false));
            break;
        case TOO_MANY:
            w.mr_npages = GUINT32_TO_LE(5);
            break;
        case TOO_LONG:
            w.mr_iova = GUINT64_TO_LE(0x1001);
            break;
        case ORDINARY:
            w.imm_or_inv = GUINT32_TO_LE(n.key);
            break;
        case INV_STALE:
        case INV_ORDINARY:
            wqe_init(&w, 0xc1, VHCA_WR_LOCAL_INV, VHCA_WQE_SIGNALED);
            w.imm_or_inv = GUINT32_TO_LE(i == INV_STALE ? key + 1 : n.key);
            break;
        case UD_QP:
            status = VHCA_WC_LOC_QP_OP_ERR;
            break;
        case GOOD:
            status = VHCA_WC_SUCCESS;
            break;
        }
        qp_put_send_wqe(n.h, &n.qp, &w);
        ring_sq(&n);
        harness_run(n.h);
        expect_cqe(&n, &n.scq, 0xc1, status,
                   i >= INV_STALE && i <= INV_ORDINARY ? VHCA_WC_LOCAL_INV
                                                       : VHCA_WC_REG_MR);
        g_assert_cmpuint(n.h->ev.err_wqe.n, ==, i != GOOD);
        g_assert_cmpuint(qp_state(n.h, n.qp.qpn), ==,
                         i == GOOD ? VHCA_QPS_RTS :
                         i == UD_QP ? VHCA_QPS_SQE : VHCA_QPS_ERR);
        harness_free(n.h);
    }
}

/*
 * Re-registration changes the key's tag: the key of the previous
 * registration names nothing any more (ib_update_fast_reg_key()).
 */
static void test_stale_tag(void)
{
    Pair p;
    uint32_t free_key, old_key, new_key;

    pair_init(&p, &default_opts);
    free_key = node_fast_mr(&p.b, 8, 0x80);
    old_key = reg_b(&p, free_key, 0x81, 0xb1);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    post_local_inv(&p.b, 0xb2, old_key);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_LOCAL_INV);
    new_key = reg_b(&p, free_key, 0x82, 0xb3);
    expect_cqe(&p.b, &p.b.scq, 0xb3, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);

    write_b(&p, 0xa1, 0, 64, new_key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    write_b(&p, 0xa2, 0, 64, old_key);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);

    /* DESTROY_MR names a fast-register MR by its index, any tag. */
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, old_key), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, new_key), ==,
                     VHCA_ST_BAD_INDEX);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/frmr/reg-write-read", test_reg_write_read);
    g_test_add_func("/vhca/frmr/reg-then-local-use", test_reg_then_local_use);
    g_test_add_func("/vhca/frmr/local-inv", test_local_inv);
    g_test_add_func("/vhca/frmr/local-inv-waits", test_local_inv_waits);
    g_test_add_func("/vhca/frmr/send-with-inv", test_send_with_inv);
    g_test_add_func("/vhca/frmr/send-with-inv-bad-key",
                    test_send_with_inv_bad_key);
    g_test_add_func("/vhca/frmr/reg-on-valid", test_reg_on_valid);
    g_test_add_func("/vhca/frmr/local-op-errors", test_local_op_errors);
    g_test_add_func("/vhca/frmr/stale-tag", test_stale_tag);
    return g_test_run();
}
