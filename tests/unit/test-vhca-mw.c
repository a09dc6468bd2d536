/*
 * Unit tests of memory windows (IBTA Vol 1 10.6.7; docs/specs/vhca.rst,
 * "Memory windows"): ALLOC_MW and DEALLOC_MW, the BIND_MW send WQE and
 * its checks, RDMA WRITE, READ and atomics from the peer through a
 * window's key, invalidation of type 2 windows, and what each does to
 * later accesses, between two engines wired back to back.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-rdma.h"

#define MR_OFF      0x10000         /* b's MR that windows are bound to */
#define MR_LEN      0x10000
#define WIN_OFF     0x1000          /* the window, in that MR */
#define WIN_LEN     0x3000
#define SRC_OFF     0x30000         /* a's data */
#define DST_OFF     0x38000         /* where a's READs land */
#define RECV_OFF    0x2000          /* b's receive buffer (not in the MR) */

#define WIN_RIGHTS  (VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ |  \
                     VHCA_ACCESS_REMOTE_ATOMIC)

static uint64_t settle(Pair *p)
{
    return harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

/* ALLOC_MW of @type in @pdn with first tag @tag; *key from out. */
static uint8_t alloc_mw(Harness *h, uint32_t pdn, uint8_t type, uint8_t tag,
                        uint32_t *key)
{
    struct vhca_cmd_mw_in in;
    struct vhca_cmd_obj_out out;
    uint8_t status;

    memset(&in, 0, sizeof(in));
    memset(&out, 0, sizeof(out));
    in.pdn = GUINT32_TO_LE(pdn);
    in.type = type;
    in.key_tag = GUINT32_TO_LE(tag);
    status = admin_cmd(h, VHCA_CMD_ALLOC_MW, 0x7000, &in, sizeof(in), &out);
    if (status == VHCA_ST_OK) {
        g_assert_cmpuint(GUINT32_FROM_LE(out.key), ==,
                         GUINT32_FROM_LE(out.handle) << 8 | tag);
    }
    if (key) {
        *key = GUINT32_FROM_LE(out.key);
    }
    return status;
}

static uint32_t new_mw(Node *n, uint8_t type, uint8_t tag)
{
    uint32_t key = 0;

    g_assert_cmpuint(alloc_mw(n->h, n->pdn, type, tag, &key), ==,
                     VHCA_ST_OK);
    return key;
}

/* b's MR over [buf + MR_OFF, + MR_LEN), iova = its guest address. */
static uint32_t bind_mr(Node *n, uint32_t access)
{
    return rdma_create_phys_mr(n->h, n->pdn, n->buf + MR_OFF, MR_LEN, access);
}

static uint64_t mr_addr(Node *n, uint64_t off)
{
    return n->buf + MR_OFF + off;
}

/* A BIND_MW WQE: window @key gets tag @tag and MR @mr's range. */
static void wqe_bind(struct vhca_send_wqe *w, uint64_t wr_id, uint32_t key,
                     uint8_t tag, uint32_t mr, uint64_t addr, uint64_t len,
                     uint32_t access)
{
    wqe_init(w, wr_id, VHCA_WR_BIND_MW, VHCA_WQE_SIGNALED);
    w->rkey = GUINT32_TO_LE(key);
    w->imm_or_inv = GUINT32_TO_LE((key & ~0xffu) | tag);
    w->mw_mr_lkey = GUINT32_TO_LE(mr);
    w->mw_addr = GUINT64_TO_LE(addr);
    w->mw_length = GUINT64_TO_LE(len);
    w->mw_access = GUINT32_TO_LE(access);
}

/* Bind on @n's QP and run; returns the new key. */
static uint32_t bind(Pair *p, Node *n, uint64_t wr_id, uint32_t key,
                     uint8_t tag, uint32_t mr, uint64_t addr, uint64_t len,
                     uint32_t access)
{
    struct vhca_send_wqe w;

    wqe_bind(&w, wr_id, key, tag, mr, addr, len, access);
    qp_put_send_wqe(n->h, &n->qp, &w);
    ring_sq(n);
    settle(p);
    return (key & ~0xffu) | tag;
}

static void post_local_inv(Node *n, uint64_t wr_id, uint32_t key)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_LOCAL_INV, VHCA_WQE_SIGNALED);
    w.imm_or_inv = GUINT32_TO_LE(key);
    qp_put_send_wqe(n->h, &n->qp, &w);
    ring_sq(n);
}

/* a runs one WQE of @opcode at b's @raddr through @rkey, and settles. */
static void a_op(Pair *p, uint64_t wr_id, uint8_t opcode, uint32_t off,
                 uint32_t len, uint64_t raddr, uint32_t rkey)
{
    post(&p->a, wr_id, opcode, VHCA_WQE_SIGNALED, off, len, raddr, rkey);
    ring_sq(&p->a);
    settle(p);
}

static void write_b(Pair *p, uint64_t wr_id, uint64_t raddr, uint32_t len,
                    uint32_t rkey)
{
    a_op(p, wr_id, VHCA_WR_RDMA_WRITE, SRC_OFF, len, raddr, rkey);
}

/* A WRITE that must fail: remote access error, both QPs in ERR. */
static void write_refused(Pair *p, uint64_t wr_id, uint64_t raddr,
                          uint32_t len, uint32_t rkey)
{
    uint64_t naks = counter(p->b.h, VHCA_CNT_REM_ACCESS_NAK_SENT);

    write_b(p, wr_id, raddr, len, rkey);
    expect_cqe(&p->a, &p->a.scq, wr_id, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(counter(p->b.h, VHCA_CNT_REM_ACCESS_NAK_SENT), ==,
                     naks + 1);
    g_assert_cmpuint(qp_state(p->a.h, p->a.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_cmpuint(qp_state(p->b.h, p->b.qp.qpn), ==, VHCA_QPS_ERR);
}

/* A second RC QP on @n, in @n's PD, in RTS (it sends nothing here). */
static Node second_qp(Node *n, Node *peer)
{
    Node x = *n;

    g_assert_cmpuint(rdma_create_qp(x.h, &x.qp, VHCA_QPT_RC, x.pdn,
                                    x.scq.cqn, x.rcq.cqn, x.page), ==,
                     VHCA_ST_OK);
    qp_connect(x.h, x.qp.qpn, peer->gid, peer->h->core.cfg.mac,
               peer->qp.qpn, &default_opts, 0, 0);
    return x;
}

/* ---------------------------------------------------------------------- */

/* ALLOC_MW / DEALLOC_MW: the MR table's keys, PD users, refusals. */
static void test_alloc_dealloc(void)
{
    Node n;
    uint32_t k1, k2, pd2, k3;

    node_init(&n, 1, VHCA_QPT_RC);
    k1 = new_mw(&n, VHCA_MW_TYPE_1, 0x11);
    k2 = new_mw(&n, VHCA_MW_TYPE_2, 0x22);
    /* One key space with the MRs: neither collides with the node's MR. */
    g_assert_cmpuint(k1 >> 8, !=, n.key >> 8);
    g_assert_cmpuint(k2 >> 8, !=, n.key >> 8);
    g_assert_cmpuint(k1 >> 8, !=, k2 >> 8);
    /* A new window grants nothing, type 1 (valid, length 0) or 2 (free). */
    g_assert_cmpint(vhca_mr_check(&n.h->core, k1, n.pdn, n.qp.qpn, 0, 0x10,
                                  VHCA_ACCESS_REMOTE_WRITE, NULL), ==,
                    VHCA_MR_NOT_VALID);
    g_assert_cmpint(vhca_mr_check(&n.h->core, k2, n.pdn, n.qp.qpn, 0, 0x10,
                                  VHCA_ACCESS_REMOTE_WRITE, NULL), ==,
                    VHCA_MR_NOT_VALID);

    /* The window counts as a user of its PD. */
    pd2 = rdma_create_pd(n.h);
    g_assert_cmpuint(alloc_mw(n.h, pd2, VHCA_MW_TYPE_2, 0x33, &k3), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DESTROY_PD, pd2), ==,
                     VHCA_ST_BUSY);
    /* DEALLOC_MW names it by index: any tag. */
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DEALLOC_MW, k3 ^ 0xff), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DESTROY_PD, pd2), ==,
                     VHCA_ST_OK);

    /* An MR is no window, a window no MR. */
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DEALLOC_MW, n.key), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DESTROY_MR, k1), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DEALLOC_MW, k1), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DEALLOC_MW, k1), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DEALLOC_MW, k2), ==,
                     VHCA_ST_OK);
    /* Refusals: no PD, bad type. */
    g_assert_cmpuint(alloc_mw(n.h, 0, VHCA_MW_TYPE_1, 0, NULL), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(alloc_mw(n.h, pd2, VHCA_MW_TYPE_1, 0, NULL), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(alloc_mw(n.h, n.pdn, 0, 0, NULL), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(alloc_mw(n.h, n.pdn, 3, 0, NULL), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DESTROY_MR, n.key), ==,
                     VHCA_ST_OK);
    harness_free(n.h);
}

/* The MR table full of windows: ALLOC_MW and CREATE_MR share it. */
static void test_table_shared(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    Harness *h;
    uint32_t pdn, key, i;

    cfg.max_mr = 4;
    h = harness_new(&cfg);
    harness_enable(h);
    pdn = rdma_create_pd(h);
    for (i = 0; i < cfg.max_mr; i++) {
        g_assert_cmpuint(alloc_mw(h, pdn, VHCA_MW_TYPE_1, i, &key), ==,
                         VHCA_ST_OK);
    }
    g_assert_cmpuint(alloc_mw(h, pdn, VHCA_MW_TYPE_2, 0, NULL), ==,
                     VHCA_ST_NO_RESOURCES);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DEALLOC_MW, key), ==,
                     VHCA_ST_OK);
    key = rdma_create_phys_mr(h, pdn, RAM_BASE, 4096, 0);
    g_assert_cmpuint(alloc_mw(h, pdn, VHCA_MW_TYPE_2, 0, NULL), ==,
                     VHCA_ST_NO_RESOURCES);
    harness_free(h);
}

/* Type 1: bind, then the peer's WRITE, READ and atomic through it. */
static void test_type1_access(void)
{
    Pair p;
    struct vhca_cqe cqe;
    struct vhca_send_wqe w;
    uint32_t mr, mw, key;
    uint64_t v;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_1, 0x10);
    key = bind(&p, &p.b, 0xb1, mw, 0x11, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               WIN_RIGHTS);
    cqe = expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    /* A local operation: no packet. */
    g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
    g_assert_cmpuint(p.b.h->ev.mw_bind_refused.n, ==, 0);

    /* Five packets at MTU 1024, 100 bytes into the window. */
    fill(&p.a, SRC_OFF, 5000, 7);
    write_b(&p, 0xa1, mr_addr(&p.b, WIN_OFF + 100), 5000, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&p.a, SRC_OFF, &p.b, MR_OFF + WIN_OFF + 100, 5000);

    fill(&p.b, MR_OFF + WIN_OFF, WIN_LEN, 9);
    a_op(&p, 0xa2, VHCA_WR_RDMA_READ, DST_OFF, WIN_LEN,
         mr_addr(&p.b, WIN_OFF), key);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_same(&p.b, MR_OFF + WIN_OFF, &p.a, DST_OFF, WIN_LEN);

    v = GUINT64_TO_LE(40);
    ram_write(p.b.h, mr_addr(&p.b, WIN_OFF + 8), &v, 8);
    wqe_init(&w, 0xa3, VHCA_WR_ATOMIC_FETCH_AND_ADD, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf + DST_OFF, 8, p.a.key);
    wqe_remote(&w, mr_addr(&p.b, WIN_OFF + 8), key);
    w.compare_add = GUINT64_TO_LE(2);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_FETCH_ADD);
    ram_read(p.a.h, p.a.buf + DST_OFF, &v, 8);
    g_assert_cmpuint(GUINT64_FROM_LE(v), ==, 40);
    ram_read(p.b.h, mr_addr(&p.b, WIN_OFF + 8), &v, 8);
    g_assert_cmpuint(GUINT64_FROM_LE(v), ==, 42);

    /* The key the window was made with names nothing any more. */
    write_refused(&p, 0xa4, mr_addr(&p.b, WIN_OFF), 8, mw);
    pair_free(&p);
}

/* A type 1 bind of length 0 unbinds: the next access fails. */
static void test_type1_unbind(void)
{
    Pair p;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_1, 0x20);
    key = bind(&p, &p.b, 0xb1, mw, 0x21, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               WIN_RIGHTS);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    write_b(&p, 0xa1, mr_addr(&p.b, WIN_OFF), 64, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);

    /* The MR is in use while bound (as rxe). */
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, mr), ==,
                     VHCA_ST_BUSY);
    key = bind(&p, &p.b, 0xb2, key, 0x22, 0, 0, 0, 0);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, mr), ==,
                     VHCA_ST_OK);
    write_refused(&p, 0xa2, mr_addr(&p.b, WIN_OFF), 64, key);
    pair_free(&p);
}

/* Type 2: bound to b's QP, then LOCAL_INV frees it. */
static void test_type2_local_inv(void)
{
    Pair p;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_2, 0x30);
    key = bind(&p, &p.b, 0xb1, mw, 0x31, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               VHCA_ACCESS_REMOTE_WRITE);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    fill(&p.a, SRC_OFF, 2000, 3);
    write_b(&p, 0xa1, mr_addr(&p.b, WIN_OFF + WIN_LEN - 2000), 2000, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&p.a, SRC_OFF, &p.b, MR_OFF + WIN_OFF + WIN_LEN - 2000,
                2000);

    post_local_inv(&p.b, 0xb2, key);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_LOCAL_INV);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.n, ==, 1);
    g_assert_cmphex(p.b.h->ev.mw_invalidated.key, ==, key);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.why, ==, VHCA_MW_INV_LOCAL);
    /* Free: the MR is no longer in use. */
    g_assert_cmpuint(p.b.h->core.mrs[mr >> 8].mw_bound, ==, 0);
    write_refused(&p, 0xa2, mr_addr(&p.b, WIN_OFF), 8, key);
    pair_free(&p);
}

/* Type 2: a SEND with Invalidate to the QP it is tied to frees it. */
static void test_type2_send_with_inv(void)
{
    Pair p;
    struct vhca_send_wqe w;
    struct vhca_cqe cqe;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_2, 0x40);
    key = bind(&p, &p.b, 0xb1, mw, 0x41, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               VHCA_ACCESS_REMOTE_WRITE);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    post_recv(&p.b, 0xb2, RECV_OFF, 4096);
    wqe_init(&w, 0xa1, VHCA_WR_SEND_WITH_INV, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf + SRC_OFF, 100, p.a.key);
    w.imm_or_inv = GUINT32_TO_LE(key);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.flags, ==, VHCA_CQE_WITH_INV);
    g_assert_cmphex(GUINT32_FROM_LE(cqe.imm_or_inv), ==, key);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.n, ==, 1);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.why, ==, VHCA_MW_INV_REMOTE);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.qpn, ==, p.b.qp.qpn);
    write_refused(&p, 0xa2, mr_addr(&p.b, WIN_OFF), 8, key);
    pair_free(&p);
}

/*
 * A SEND with Invalidate of a window it cannot free (type 1, type 2 tied
 * to another QP) is an invalid request; the window stays bound.
 */
static void test_send_with_inv_refused(void)
{
    unsigned type2;

    for (type2 = 0; type2 < 2; type2++) {
        Pair p;
        Node x;
        struct vhca_send_wqe w;
        uint32_t mr, mw, key;

        pair_init(&p, &default_opts);
        mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
        x = second_qp(&p.b, &p.a);
        mw = new_mw(&p.b, type2 ? VHCA_MW_TYPE_2 : VHCA_MW_TYPE_1, 0x50);
        /* Type 2 is bound through the other QP, x. */
        key = bind(&p, type2 ? &x : &p.b, 0xb1, mw, 0x51, mr,
                   mr_addr(&p.b, WIN_OFF), WIN_LEN,
                   VHCA_ACCESS_REMOTE_WRITE);
        /* x completes to b's send CQ. */
        expect_cqe(type2 ? &x : &p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS,
                   VHCA_WC_BIND_MW);
        post_recv(&p.b, 0xb2, RECV_OFF, 4096);
        wqe_init(&w, 0xa1, VHCA_WR_SEND_WITH_INV, VHCA_WQE_SIGNALED);
        wqe_sge(&w, p.a.buf + SRC_OFF, 16, p.a.key);
        w.imm_or_inv = GUINT32_TO_LE(key);
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_INV_REQ_ERR,
                   VHCA_WC_SEND);
        expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_REM_INV_REQ_ERR,
                   VHCA_WC_RECV);
        g_assert_cmpuint(p.b.h->ev.mw_invalidated.n, ==, 0);
        g_assert_cmpint(vhca_mr_check(&p.b.h->core, key, p.b.pdn,
                                      type2 ? x.qp.qpn : p.b.qp.qpn,
                                      mr_addr(&p.b, WIN_OFF), 8,
                                      VHCA_ACCESS_REMOTE_WRITE, NULL), ==,
                        VHCA_MR_OK);
        pair_free(&p);
    }
}

/* DEALLOC_MW of a bound type 2 window: the next access fails. */
static void test_type2_dealloc(void)
{
    Pair p;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_2, 0x60);
    key = bind(&p, &p.b, 0xb1, mw, 0x61, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               VHCA_ACCESS_REMOTE_WRITE);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    write_b(&p, 0xa1, mr_addr(&p.b, WIN_OFF), 8, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, mr), ==,
                     VHCA_ST_BUSY);
    /* By the key it was made with: the index names it. */
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DEALLOC_MW, mw), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, mr), ==,
                     VHCA_ST_OK);
    write_refused(&p, 0xa2, mr_addr(&p.b, WIN_OFF), 8, key);
    pair_free(&p);
}

/* ZERO_BASED type 2: the peer's address is an offset in the window. */
static void test_type2_zero_based(void)
{
    Pair p;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_2, 0x70);
    key = bind(&p, &p.b, 0xb1, mw, 0x71, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ |
               VHCA_ACCESS_ZERO_BASED);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    fill(&p.a, SRC_OFF, 3000, 11);
    write_b(&p, 0xa1, 0x100, 3000, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&p.a, SRC_OFF, &p.b, MR_OFF + WIN_OFF + 0x100, 3000);
    a_op(&p, 0xa2, VHCA_WR_RDMA_READ, DST_OFF, 3000, 0x100, key);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_same(&p.b, MR_OFF + WIN_OFF + 0x100, &p.a, DST_OFF, 3000);
    /* The MR's own address is outside [0, WIN_LEN). */
    write_refused(&p, 0xa3, mr_addr(&p.b, WIN_OFF), 8, key);
    pair_free(&p);
}

/*
 * IBTA 1.5's FLUSH and ATOMIC WRITE through a window: each needs its
 * right in the window (FLUSH_GLOBAL, REMOTE_WRITE), not in the MR; an
 * MR-level FLUSH covers the window.
 */
static void test_placement(void)
{
    ConnOpts o = default_opts;
    unsigned granted;

    o.access |= VHCA_ACCESS_FLUSH_GLOBAL;
    for (granted = 0; granted < 2; granted++) {
        uint8_t status = granted ? VHCA_WC_SUCCESS : VHCA_WC_REM_ACCESS_ERR;
        struct vhca_send_wqe w;
        uint64_t v;
        uint32_t mr, mw, key;
        Pair p;

        g_test_message("window %s the rights", granted ? "grants" : "lacks");
        pair_init(&p, &o);
        /* The MR grants neither: the window does. */
        mr = bind_mr(&p.b, VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_MW_BIND);
        mw = new_mw(&p.b, VHCA_MW_TYPE_1, 0x50);
        key = bind(&p, &p.b, 0xb1, mw, 0x51, mr, mr_addr(&p.b, WIN_OFF),
                   WIN_LEN, granted ? VHCA_ACCESS_REMOTE_WRITE |
                                      VHCA_ACCESS_FLUSH_GLOBAL
                                    : VHCA_ACCESS_REMOTE_READ);
        expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);

        wqe_init(&w, 0xa1, VHCA_WR_ATOMIC_WRITE, VHCA_WQE_SIGNALED);
        wqe_remote(&w, mr_addr(&p.b, WIN_OFF + 16), key);
        w.compare_add = GUINT64_TO_LE(0x1122334455667788ull);
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa1, status, VHCA_WC_ATOMIC_WRITE);
        ram_read(p.b.h, mr_addr(&p.b, WIN_OFF + 16), &v, 8);
        g_assert_cmphex(GUINT64_FROM_LE(v), ==,
                        granted ? 0x1122334455667788ull : 0);
        if (!granted) {
            pair_free(&p);
            continue;
        }
        wqe_init(&w, 0xa2, VHCA_WR_FLUSH, VHCA_WQE_SIGNALED);
        wqe_remote(&w, mr_addr(&p.b, WIN_OFF), key);
        w.flush_len = GUINT32_TO_LE(WIN_LEN);
        w.flush_type = VHCA_FLUSH_GLOBAL;
        w.flush_level = VHCA_FLUSH_RANGE;
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        w.wr_id = GUINT64_TO_LE(0xa3);
        w.flush_level = VHCA_FLUSH_MR;
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        /* One byte past the window. */
        w.wr_id = GUINT64_TO_LE(0xa4);
        w.flush_len = GUINT32_TO_LE(WIN_LEN + 1);
        w.flush_level = VHCA_FLUSH_RANGE;
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
        expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
        expect_cqe(&p.a, &p.a.scq, 0xa4, VHCA_WC_REM_ACCESS_ERR,
                   VHCA_WC_FLUSH);
        pair_free(&p);
    }
}

/*
 * An atomic at an aligned offset of a zero-based window that starts
 * off a word boundary would act on a misaligned word: refused.
 */
static void test_zero_based_atomic_misaligned(void)
{
    Pair p;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_2, 0x78);
    key = bind(&p, &p.b, 0xb1, mw, 0x79, mr, mr_addr(&p.b, WIN_OFF + 4), 64,
               VHCA_ACCESS_REMOTE_ATOMIC | VHCA_ACCESS_ZERO_BASED);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    a_op(&p, 0xa1, VHCA_WR_ATOMIC_FETCH_AND_ADD, DST_OFF, 8, 8, key);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_FETCH_ADD);
    g_assert_cmpint(vhca_mr_check(&p.b.h->core, key, p.b.pdn, p.b.qp.qpn, 8,
                                  8, VHCA_ACCESS_REMOTE_ATOMIC, NULL), ==,
                    VHCA_MR_MISALIGNED);
    pair_free(&p);
}

/* Each BIND_MW check that fails: MW_BIND_ERR, nothing changes, QP ERR. */
static void test_bind_refused(void)
{
    enum { GOOD, STALE_KEY, MR_KEY, NEW_INDEX, BAD_ACCESS, MW_BIND_ACCESS,
           T1_ZERO_BASED, T2_NOT_FREE, T2_LENGTH_0, WINDOW_PD, MR_PD,
           MR_NO_BIND, MR_NO_WRITE, RANGE_BEFORE, RANGE_PAST, MR_IS_WINDOW,
           UD_QP, UC_GOOD };
    static const struct {
        const char *what;
        VhcaMwBindError why;
    } cases[] = {
        [GOOD] = { "the good bind the others differ from" },
        [STALE_KEY] = { "window named by a stale tag", VHCA_MW_BIND_BAD_KEY },
        [MR_KEY] = { "rkey names an MR", VHCA_MW_BIND_BAD_KEY },
        [NEW_INDEX] = { "new key of another index", VHCA_MW_BIND_NEW_KEY },
        [BAD_ACCESS] = { "access bit 6", VHCA_MW_BIND_ACCESS },
        [MW_BIND_ACCESS] = { "MW_BIND in a window's access",
                             VHCA_MW_BIND_ACCESS },
        [T1_ZERO_BASED] = { "type 1 zero-based",
                            VHCA_MW_BIND_TYPE1_ZERO_BASED },
        [T2_NOT_FREE] = { "type 2 bound already", VHCA_MW_BIND_NOT_FREE },
        [T2_LENGTH_0] = { "type 2 of length 0", VHCA_MW_BIND_ZERO_LENGTH },
        [WINDOW_PD] = { "window in another PD", VHCA_MW_BIND_WINDOW_PD },
        [MR_PD] = { "MR in another PD", VHCA_MW_BIND_MR_PD },
        [MR_NO_BIND] = { "MR without MW_BIND", VHCA_MW_BIND_MR_NO_BIND },
        [MR_NO_WRITE] = { "writable window, MR without LOCAL_WRITE",
                          VHCA_MW_BIND_MR_NO_WRITE },
        [RANGE_BEFORE] = { "range starts before the MR", VHCA_MW_BIND_RANGE },
        [RANGE_PAST] = { "range ends past the MR", VHCA_MW_BIND_RANGE },
        [MR_IS_WINDOW] = { "mw_mr_lkey names a window",
                           VHCA_MW_BIND_MR_KEY },
        [UD_QP] = { "BIND_MW on a UD QP" },
        [UC_GOOD] = { "BIND_MW on a UC QP" },
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        uint8_t qpt = i == UD_QP ? VHCA_QPT_UD :
                      i == UC_GOOD ? VHCA_QPT_UC : VHCA_QPT_RC;
        uint8_t type = i == T2_NOT_FREE || i == T2_LENGTH_0 ?
                       VHCA_MW_TYPE_2 : VHCA_MW_TYPE_1;
        uint32_t access = VHCA_ACCESS_REMOTE_READ;
        uint8_t status = VHCA_WC_MW_BIND_ERR;
        uint32_t mr, mw, pd2, other;
        struct vhca_send_wqe w;
        uint64_t addr, len = WIN_LEN;
        Node n;

        g_test_message("%s", cases[i].what);
        node_init(&n, 1, qpt);
        qp_move_to(n.h, n.qp.qpn, qpt, VHCA_QPS_RTS);
        pd2 = rdma_create_pd(n.h);
        mr = bind_mr(&n, (i == MR_NO_WRITE ? VHCA_ACCESS_REMOTE_READ
                                           : ACCESS_ALL) |
                         (i == MR_NO_BIND ? 0 : VHCA_ACCESS_MW_BIND));
        if (i == MR_PD) {
            mr = rdma_create_phys_mr(n.h, pd2, n.buf + MR_OFF, MR_LEN,
                                     ACCESS_ALL | VHCA_ACCESS_MW_BIND);
        }
        g_assert_cmpuint(alloc_mw(n.h, i == WINDOW_PD ? pd2 : n.pdn, type,
                                  0x80, &mw), ==, VHCA_ST_OK);
        addr = mr_addr(&n, WIN_OFF);
        if (i == T2_NOT_FREE) {
            wqe_bind(&w, 0xc0, mw, 0x81, mr, addr, len, access);
            qp_put_send_wqe(n.h, &n.qp, &w);
            ring_sq(&n);
            harness_run(n.h);
            expect_cqe(&n, &n.scq, 0xc0, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
            mw = (mw & ~0xffu) | 0x81;
        }
        switch (i) {
        case BAD_ACCESS:
            access |= 1u << 6;
            break;
        case MW_BIND_ACCESS:
            access |= VHCA_ACCESS_MW_BIND;
            break;
        case T1_ZERO_BASED:
            access |= VHCA_ACCESS_ZERO_BASED;
            break;
        case T2_LENGTH_0:
            len = 0;
            break;
        case MR_NO_WRITE:
            access |= VHCA_ACCESS_REMOTE_WRITE;
            break;
        case RANGE_BEFORE:
            addr = mr_addr(&n, 0) - 1;
            break;
        case RANGE_PAST:
            addr = mr_addr(&n, MR_LEN - WIN_LEN + 1);
            break;
        }
        wqe_bind(&w, 0xc1, mw, 0x82, mr, addr, len, access);
        switch (i) {
        case STALE_KEY:
            w.rkey = GUINT32_TO_LE(mw ^ 1);
            break;
        case MR_KEY:
            w.rkey = GUINT32_TO_LE(mr);
            w.imm_or_inv = GUINT32_TO_LE(mr);
            break;
        case NEW_INDEX:
            w.imm_or_inv = GUINT32_TO_LE(mw + 0x100);
            break;
        case MR_IS_WINDOW:
            g_assert_cmpuint(alloc_mw(n.h, n.pdn, VHCA_MW_TYPE_1, 0x90,
                                      &other), ==, VHCA_ST_OK);
            w.mw_mr_lkey = GUINT32_TO_LE(other);
            break;
        case GOOD:
        case UC_GOOD:
            status = VHCA_WC_SUCCESS;
            break;
        case UD_QP:
            status = VHCA_WC_LOC_QP_OP_ERR;
            break;
        }
        qp_put_send_wqe(n.h, &n.qp, &w);
        ring_sq(&n);
        harness_run(n.h);
        expect_cqe(&n, &n.scq, 0xc1, status, VHCA_WC_BIND_MW);
        g_assert_cmpuint(n.h->ev.err_wqe.n, ==, status != VHCA_WC_SUCCESS);
        g_assert_cmpuint(n.h->ev.mw_bind_refused.n, ==,
                         status == VHCA_WC_MW_BIND_ERR);
        if (status == VHCA_WC_MW_BIND_ERR) {
            g_assert_cmpuint(n.h->ev.mw_bind_refused.why, ==,
                             cases[i].why);
            g_assert_cmpuint(n.h->ev.mw_bind_refused.qpn, ==, n.qp.qpn);
        }
        g_assert_cmpuint(qp_state(n.h, n.qp.qpn), ==,
                         status == VHCA_WC_SUCCESS ? VHCA_QPS_RTS :
                         qpt == VHCA_QPT_RC ? VHCA_QPS_ERR : VHCA_QPS_SQE);
        /* A failed bind changed nothing: the MR is not in use. */
        if (status != VHCA_WC_SUCCESS) {
            g_assert_cmpuint(n.h->core.mrs[mr >> 8].mw_bound, ==,
                             i == T2_NOT_FREE);
        } else {
            g_assert_cmpint(vhca_mr_check(&n.h->core, (mw & ~0xffu) | 0x82,
                                          n.pdn, n.qp.qpn, addr, len,
                                          access, NULL), ==, VHCA_MR_OK);
        }
        harness_free(n.h);
    }
}

/* A UC QP's failed bind moves it to SQE, not ERR (IBTA 10.3.1). */
static void test_bind_refused_uc(void)
{
    Node n;
    struct vhca_send_wqe w;
    uint32_t mw;

    node_init(&n, 1, VHCA_QPT_UC);
    qp_move_to(n.h, n.qp.qpn, VHCA_QPT_UC, VHCA_QPS_RTS);
    mw = new_mw(&n, VHCA_MW_TYPE_2, 0x10);
    /* The node's MR has no MW_BIND. */
    wqe_bind(&w, 0xc1, mw, 0x11, n.key, n.buf, 4096, VHCA_ACCESS_REMOTE_READ);
    qp_put_send_wqe(n.h, &n.qp, &w);
    ring_sq(&n);
    harness_run(n.h);
    expect_cqe(&n, &n.scq, 0xc1, VHCA_WC_MW_BIND_ERR, VHCA_WC_BIND_MW);
    g_assert_cmpuint(n.h->ev.mw_bind_refused.why, ==,
                     VHCA_MW_BIND_MR_NO_BIND);
    g_assert_cmpuint(qp_state(n.h, n.qp.qpn), ==, VHCA_QPS_SQE);
    harness_free(n.h);
}

/* Remote access checks through a bound window. */
static void test_access_checks(void)
{
    enum { OUT_BEFORE, OUT_PAST, NO_RIGHT, ATOMIC_NO_RIGHT, OTHER_QP };
    static const char *const names[] = {
        "before the window", "past the window", "WRITE, window grants READ",
        "atomic, window grants READ", "type 2 window of another QP",
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        Pair p;
        Node x;
        uint32_t mr, mw, key;
        uint64_t raddr = 0;
        uint32_t len = 8;
        uint8_t op = VHCA_WR_RDMA_WRITE;

        g_test_message("%s", names[i]);
        pair_init(&p, &default_opts);
        mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
        x = second_qp(&p.b, &p.a);
        mw = new_mw(&p.b, i == OTHER_QP ? VHCA_MW_TYPE_2 : VHCA_MW_TYPE_1,
                    0xa0);
        key = bind(&p, i == OTHER_QP ? &x : &p.b, 0xb1, mw, 0xa1, mr,
                   mr_addr(&p.b, WIN_OFF), WIN_LEN,
                   i == OTHER_QP ? WIN_RIGHTS : VHCA_ACCESS_REMOTE_READ);
        expect_cqe(i == OTHER_QP ? &x : &p.b, &p.b.scq, 0xb1,
                   VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
        switch (i) {
        case OUT_BEFORE:
            op = VHCA_WR_RDMA_READ;
            raddr = mr_addr(&p.b, WIN_OFF - 8);
            len = 16;
            break;
        case OUT_PAST:
            op = VHCA_WR_RDMA_READ;
            raddr = mr_addr(&p.b, WIN_OFF + WIN_LEN - 8);
            len = 9;
            break;
        case NO_RIGHT:
        case OTHER_QP:
            raddr = mr_addr(&p.b, WIN_OFF);
            break;
        case ATOMIC_NO_RIGHT:
            op = VHCA_WR_ATOMIC_FETCH_AND_ADD;
            raddr = mr_addr(&p.b, WIN_OFF);
            break;
        }
        a_op(&p, 0xa1, op, DST_OFF, len, raddr, key);
        expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
                   op == VHCA_WR_RDMA_WRITE ? VHCA_WC_RDMA_WRITE :
                   op == VHCA_WR_RDMA_READ ? VHCA_WC_RDMA_READ
                                           : VHCA_WC_FETCH_ADD);
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
        if (i == OTHER_QP) {
            /* ...which x itself would be granted. */
            g_assert_cmpint(vhca_mr_check(&p.b.h->core, key, p.b.pdn,
                                          x.qp.qpn, raddr, 8,
                                          VHCA_ACCESS_REMOTE_WRITE, NULL),
                            ==, VHCA_MR_OK);
            g_assert_cmpint(vhca_mr_check(&p.b.h->core, key, p.b.pdn,
                                          p.b.qp.qpn, raddr, 8,
                                          VHCA_ACCESS_REMOTE_WRITE, NULL),
                            ==, VHCA_MR_QP_MISMATCH);
        }
        pair_free(&p);
    }
}

/* A window's key in a local SGE: LOC_PROT_ERR (windows are remote only). */
static void test_window_as_lkey(void)
{
    Pair p;
    struct vhca_send_wqe w;
    uint32_t mr, mw, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_1, 0xb0);
    key = bind(&p, &p.b, 0xb1, mw, 0xb1, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
               WIN_RIGHTS | VHCA_ACCESS_LOCAL_WRITE);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    post_recv(&p.a, 0xa1, DST_OFF, 4096);
    wqe_init(&w, 0xb2, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&w, mr_addr(&p.b, WIN_OFF), 64, key);
    qp_put_send_wqe(p.b.h, &p.b.qp, &w);
    ring_sq(&p.b);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_LOC_PROT_ERR, VHCA_WC_SEND);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    /* Nor for the local write of a receive or a READ response. */
    g_assert_cmpint(vhca_mr_check(&p.b.h->core, key, p.b.pdn, p.b.qp.qpn,
                                  mr_addr(&p.b, WIN_OFF), 8,
                                  VHCA_ACCESS_LOCAL_WRITE, NULL), ==,
                    VHCA_MR_BAD_KEY);
    pair_free(&p);
}

/* DESTROY_QP frees the type 2 windows tied to it, not the others. */
static void test_destroy_qp_frees_type2(void)
{
    Pair p;
    Node x;
    uint32_t mr, mw_x, mw_b, key_x, key_b;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    x = second_qp(&p.b, &p.a);
    mw_x = new_mw(&p.b, VHCA_MW_TYPE_2, 0xc0);
    mw_b = new_mw(&p.b, VHCA_MW_TYPE_2, 0xd0);
    key_x = bind(&p, &x, 0xb1, mw_x, 0xc1, mr, mr_addr(&p.b, WIN_OFF),
                 WIN_LEN, VHCA_ACCESS_REMOTE_WRITE);
    key_b = bind(&p, &p.b, 0xb2, mw_b, 0xd1, mr, mr_addr(&p.b, WIN_OFF),
                 WIN_LEN, VHCA_ACCESS_REMOTE_WRITE);
    expect_cqe(&x, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    g_assert_cmpuint(p.b.h->core.mrs[mr >> 8].mw_bound, ==, 2);

    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_QP, x.qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.n, ==, 1);
    g_assert_cmpuint(p.b.h->ev.mw_invalidated.why, ==, VHCA_MW_INV_QP_GONE);
    g_assert_cmphex(p.b.h->ev.mw_invalidated.key, ==, key_x);
    g_assert_cmpuint(p.b.h->core.mrs[mr >> 8].mw_bound, ==, 1);
    g_assert_cmpint(vhca_mr_check(&p.b.h->core, key_x, p.b.pdn, x.qp.qpn,
                                  mr_addr(&p.b, WIN_OFF), 8,
                                  VHCA_ACCESS_REMOTE_WRITE, NULL), ==,
                    VHCA_MR_NOT_VALID);
    /* b's window still works. */
    write_b(&p, 0xa1, mr_addr(&p.b, WIN_OFF), 8, key_b);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    pair_free(&p);
}

/* Reset frees every window: the MR table is empty after it. */
static void test_reset_frees(void)
{
    Node n;
    uint32_t mw;

    node_init(&n, 1, VHCA_QPT_RC);
    mw = new_mw(&n, VHCA_MW_TYPE_1, 0x10);
    g_assert_true(vhca_ids_used(&n.h->core.mr_ids, mw >> 8));
    vhca_core_reset(&n.h->core);
    g_assert_false(vhca_ids_used(&n.h->core.mr_ids, mw >> 8));
    g_assert_cmpuint(n.h->core.mrs[mw >> 8].mw_type, ==, 0);
    harness_free(n.h);
}

static void collect_line(void *opaque, const char *line)
{
    g_string_append_printf(opaque, "%s\n", line);
}

/* "info vhca" shows each window: free, unbound, or what it is bound to. */
static void test_dump(void)
{
    Pair p;
    g_autoptr(GString) text = g_string_new("");
    g_autofree char *free2 = NULL, *bound1 = NULL, *unbound = NULL;
    uint32_t mr, mw1, mw2, key;

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw1 = new_mw(&p.b, VHCA_MW_TYPE_1, 0x10);
    mw2 = new_mw(&p.b, VHCA_MW_TYPE_2, 0x20);
    unbound = g_strdup_printf("mw %u key 0x%x type 1 pdn %u unbound\n",
                              mw1 >> 8, mw1, p.b.pdn);
    free2 = g_strdup_printf("mw %u key 0x%x type 2 pdn %u free\n",
                            mw2 >> 8, mw2, p.b.pdn);
    vhca_core_dump(&p.b.h->core, collect_line, text);
    g_assert_nonnull(strstr(text->str, unbound));
    g_assert_nonnull(strstr(text->str, free2));

    key = bind(&p, &p.b, 0xb1, mw2, 0x21, mr, mr_addr(&p.b, WIN_OFF),
               WIN_LEN, VHCA_ACCESS_REMOTE_READ | VHCA_ACCESS_ZERO_BASED);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    bound1 = g_strdup_printf("mw %u key 0x%x type 2 pdn %u mr %u addr "
                             "0x%" G_GINT64_MODIFIER "x length %u access "
                             "remote-read|zero-based qpn %u\n", key >> 8,
                             key, p.b.pdn, mr >> 8, mr_addr(&p.b, WIN_OFF),
                             WIN_LEN, p.b.qp.qpn);
    g_string_truncate(text, 0);
    vhca_core_dump(&p.b.h->core, collect_line, text);
    g_assert_nonnull(strstr(text->str, bound1));
    pair_free(&p);
}

/*
 * A rebind between the packets of one WRITE, with the same key: the
 * rest of the message is pinned to the old generation and stops.
 */
static void hold_frame(Harness *h, const uint8_t *buf, size_t len)
{
    g_ptr_array_add(h->tx_hook_opaque,
                    g_byte_array_append(g_byte_array_new(), buf, len));
}

static void test_rebind_under_write(void)
{
    Pair p;
    GPtrArray *held_frames;
    struct vhca_send_wqe w;
    uint32_t mr, mw, key;
    unsigned i;
    uint8_t zero[1024];

    pair_init(&p, &default_opts);
    mr = bind_mr(&p.b, ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    mw = new_mw(&p.b, VHCA_MW_TYPE_1, 0xe0);
    key = bind(&p, &p.b, 0xb1, mw, 0xe1, mr, mr_addr(&p.b, WIN_OFF),
               WIN_LEN, VHCA_ACCESS_REMOTE_WRITE);
    expect_cqe(&p.b, &p.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);

    held_frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    p.a.h->tx_hook = hold_frame;
    p.a.h->tx_hook_opaque = held_frames;
    fill(&p.a, SRC_OFF, 3072, 5);
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, SRC_OFF, 3072,
         mr_addr(&p.b, WIN_OFF), key);
    ring_sq(&p.a);
    harness_run(p.a.h);
    g_assert_cmpuint(held_frames->len, ==, 3);

    /* The FIRST packet lands. */
    harness_deliver(p.b.h, ((GByteArray *)held_frames->pdata[0])->data,
                    ((GByteArray *)held_frames->pdata[0])->len);
    harness_run(p.b.h);
    expect_same(&p.a, SRC_OFF, &p.b, MR_OFF + WIN_OFF, 1024);
    /*
     * Rebound with the same tag: the same key, a new generation.  b
     * alone runs: a's timer must not resend into the held frames.
     */
    wqe_bind(&w, 0xb2, key, 0xe1, mr, mr_addr(&p.b, WIN_OFF), WIN_LEN,
             VHCA_ACCESS_REMOTE_WRITE);
    qp_put_send_wqe(p.b.h, &p.b.qp, &w);
    ring_sq(&p.b);
    harness_run(p.b.h);
    expect_cqe(&p.b, &p.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    for (i = 1; i < held_frames->len; i++) {
        GByteArray *f = held_frames->pdata[i];

        harness_deliver(p.b.h, f->data, f->len);
    }
    harness_run(p.b.h);
    p.a.h->tx_hook = NULL;
    settle(&p);
    g_ptr_array_free(held_frames, true);

    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    /* Nothing of the MIDDLE and LAST packets was placed. */
    memset(zero, 0, sizeof(zero));
    g_assert_cmpmem(ram_ptr(p.b.h, mr_addr(&p.b, WIN_OFF + 1024), 1024),
                    1024, zero, sizeof(zero));
    g_assert_cmpmem(ram_ptr(p.b.h, mr_addr(&p.b, WIN_OFF + 2048), 1024),
                    1024, zero, sizeof(zero));
    pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/mw/alloc-dealloc", test_alloc_dealloc);
    g_test_add_func("/vhca/mw/table-shared", test_table_shared);
    g_test_add_func("/vhca/mw/type1-access", test_type1_access);
    g_test_add_func("/vhca/mw/type1-unbind", test_type1_unbind);
    g_test_add_func("/vhca/mw/type2-local-inv", test_type2_local_inv);
    g_test_add_func("/vhca/mw/type2-send-with-inv",
                    test_type2_send_with_inv);
    g_test_add_func("/vhca/mw/send-with-inv-refused",
                    test_send_with_inv_refused);
    g_test_add_func("/vhca/mw/type2-dealloc", test_type2_dealloc);
    g_test_add_func("/vhca/mw/type2-zero-based", test_type2_zero_based);
    g_test_add_func("/vhca/mw/placement", test_placement);
    g_test_add_func("/vhca/mw/zero-based-atomic-misaligned",
                    test_zero_based_atomic_misaligned);
    g_test_add_func("/vhca/mw/bind-refused", test_bind_refused);
    g_test_add_func("/vhca/mw/bind-refused-uc", test_bind_refused_uc);
    g_test_add_func("/vhca/mw/access-checks", test_access_checks);
    g_test_add_func("/vhca/mw/window-as-lkey", test_window_as_lkey);
    g_test_add_func("/vhca/mw/destroy-qp-frees-type2",
                    test_destroy_qp_frees_type2);
    g_test_add_func("/vhca/mw/reset-frees", test_reset_frees);
    g_test_add_func("/vhca/mw/dump", test_dump);
    g_test_add_func("/vhca/mw/rebind-under-write", test_rebind_under_write);
    return g_test_run();
}
