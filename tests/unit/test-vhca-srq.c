/*
 * Unit tests of shared receive queues (IBTA Vol 1 10.2.9, 11.2.3,
 * 11.6.3; docs/specs/vhca.rst "Shared receive queues"): two engines back
 * to back, the receiver's QPs taking their receive WQEs from one SRQ.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-wire.h"

#define MTU             1024                /* VHCA_IB_MTU_1024 */
#define RECV_OFF        0x10000             /* receive buffers on B */
#define SLOT            0x1000              /* one receive buffer */
#define QKEY            0x11111111

/* An SRQ as the test (the driver) sees it. */
typedef struct TestSrq {
    uint32_t srqn;
    uint8_t log;
    uint64_t ring;                  /* contiguous pages, in order */
    uint64_t ci_rec;                /* the u32 the device writes */
    uint32_t pi;
    uint32_t pdn;
    uint32_t key;                   /* the key of the buffers posted */
} TestSrq;

static uint32_t ring_pages(uint8_t log)
{
    uint32_t bytes = VHCA_RECV_WQE_SIZE << log;

    return (bytes + 4095) / 4096;
}

static uint8_t srq_create(Node *n, TestSrq *s, uint32_t pdn, uint8_t log,
                          uint32_t limit)
{
    struct vhca_srq_create c;
    uint32_t pages = ring_pages(log);

    memset(s, 0, sizeof(*s));
    s->log = log;
    s->pdn = pdn;
    s->key = n->key;
    s->ring = rdma_alloc(n->h, pages);
    s->ci_rec = rdma_alloc(n->h, 1) + 0x40;
    /* The device writes 0 there at creation. */
    memset(ram_ptr(n->h, s->ci_rec, 4), 0xee, 4);
    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(pdn);
    c.db_page = GUINT32_TO_LE(n->page);
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(n->h, s->ring, pages, false));
    c.npages = GUINT32_TO_LE(pages);
    c.log_size = log;
    c.ci_addr = GUINT64_TO_LE(s->ci_rec);
    c.limit = GUINT32_TO_LE(limit);
    return rdma_cmd(n->h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c), &s->srqn, NULL);
}

static uint32_t srq_ci(Node *n, const TestSrq *s)
{
    uint32_t v;

    ram_read(n->h, s->ci_rec, &v, sizeof(v));
    return GUINT32_FROM_LE(v);
}

/* A receive WQE of [buf + off, +len) at the producer index (no bell). */
static void srq_put(Node *n, TestSrq *s, uint64_t wr_id, uint32_t off,
                    uint32_t len, uint8_t num_sge)
{
    struct vhca_recv_wqe w;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(wr_id);
    w.num_sge = num_sge;
    w.sge[0].addr = GUINT64_TO_LE(n->buf + off);
    w.sge[0].length = GUINT32_TO_LE(len);
    w.sge[0].lkey = GUINT32_TO_LE(s->key);
    ram_write(n->h, s->ring + (uint64_t)(s->pi & ((1u << s->log) - 1)) *
              VHCA_RECV_WQE_SIZE, &w, sizeof(w));
    s->pi++;
}

static void srq_ring(Node *n, TestSrq *s)
{
    ring_doorbell(n->h, n->page, VHCA_DB_SRQ, s->srqn, s->pi);
}

/* Post receive WQE @wr_id of buffer slot @slot, and ring. */
static void srq_post(Node *n, TestSrq *s, uint64_t wr_id, uint32_t slot)
{
    srq_put(n, s, wr_id, RECV_OFF + slot * SLOT, SLOT, 1);
    srq_ring(n, s);
}

static struct vhca_srq_attr srq_query(Node *n, uint32_t srqn)
{
    struct vhca_srq_attr a;

    memset(&a, 0, sizeof(a));
    a.srqn = GUINT32_TO_LE(srqn);
    a.attr_mask = GUINT32_TO_LE(0xdead);    /* QUERY does not read it */
    g_assert_cmpuint(rdma_cmd(n->h, VHCA_CMD_QUERY_SRQ, &a, sizeof(a), NULL,
                              NULL), ==, VHCA_ST_OK);
    ram_read(n->h, MBOX_ADDR, &a, sizeof(a));
    g_assert_cmpuint(GUINT32_FROM_LE(a.srqn), ==, srqn);
    g_assert_cmpuint(a.attr_mask, ==, 0);
    return a;
}

static uint8_t srq_modify(Node *n, uint32_t srqn, uint32_t mask,
                          uint32_t limit, uint8_t log, uint64_t pbl,
                          uint32_t npages)
{
    struct vhca_srq_attr a;

    memset(&a, 0, sizeof(a));
    a.srqn = GUINT32_TO_LE(srqn);
    a.attr_mask = GUINT32_TO_LE(mask);
    a.limit = GUINT32_TO_LE(limit);
    a.log_size = log;
    a.pbl_addr = GUINT64_TO_LE(pbl);
    a.npages = GUINT32_TO_LE(npages);
    return rdma_cmd(n->h, VHCA_CMD_MODIFY_SRQ, &a, sizeof(a), NULL, NULL);
}

/* A QP of @type on @n's CQs that receives from SRQ @srqn. */
static uint8_t srq_qp_create(Node *n, TestQp *qp, uint8_t type,
                             uint32_t srqn)
{
    struct vhca_qp_create c;
    uint32_t sq_pages;

    memset(qp, 0, sizeof(*qp));
    qp->sq_log = 5;
    qp->db_page = n->page;
    sq_pages = (VHCA_SEND_WQE_SIZE << qp->sq_log) / 4096;
    qp->sq = rdma_alloc(n->h, sq_pages);
    memset(&c, 0, sizeof(c));
    c.type = type;
    c.sq_log_size = qp->sq_log;
    c.pdn = GUINT32_TO_LE(n->pdn);
    c.send_cqn = GUINT32_TO_LE(n->scq.cqn);
    c.recv_cqn = GUINT32_TO_LE(n->rcq.cqn);
    /* The harness's send rings are in reversed page order. */
    c.sq_pbl_addr = GUINT64_TO_LE(rdma_pbl(n->h, qp->sq, sq_pages, true));
    c.sq_npages = GUINT32_TO_LE(sq_pages);
    c.db_page = GUINT32_TO_LE(n->page);
    c.srqn = GUINT32_TO_LE(srqn);
    return rdma_cmd(n->h, VHCA_CMD_CREATE_QP, &c, sizeof(c), &qp->qpn, NULL);
}

/*
 * Sender A with two QPs, receiver B with two QPs on one SRQ: a1 talks to
 * b1, a2 to b2.  Each "node" here is a view of its engine with one QP;
 * the CQs are the base node's (a1, b1), whichever QP completes.
 */
typedef struct SrqPair {
    Node a1, a2, b1, b2;
    TestSrq srq;
    uint8_t type;
} SrqPair;

static void uc_connect(Node *n, const Node *dest)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = n->qp.qpn;
    a.port = 1;
    a.qp_access_flags = VHCA_ACCESS_REMOTE_WRITE;
    qp_modify_ok(n->h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                 VHCA_QP_ACCESS_FLAGS);
    a.hop_limit = 64;
    memcpy(a.dgid, dest->gid, 16);
    memcpy(a.dmac, dest->h->core.cfg.mac, 6);
    a.path_mtu = VHCA_IB_MTU_1024;
    a.dest_qp_num = dest->qp.qpn;
    a.rq_psn = 0x300;
    qp_modify_ok(n->h, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                 VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN);
    a.sq_psn = 0x300;
    qp_modify_ok(n->h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

static void ud_up(Node *n)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = n->qp.qpn;
    a.port = 1;
    a.qkey = QKEY;
    qp_modify_ok(n->h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY |
                 VHCA_QP_PORT);
    qp_modify_ok(n->h, &a, VHCA_QPS_RTR, 0);
    a.sq_psn = 0x42;
    qp_modify_ok(n->h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

static void connect(const SrqPair *p, Node *x, const Node *y)
{
    switch (p->type) {
    case VHCA_QPT_RC:
        qp_connect(x->h, x->qp.qpn, y->gid, y->h->core.cfg.mac, y->qp.qpn,
                   &default_opts, 0x100, 0x100);
        break;
    case VHCA_QPT_UC:
        uc_connect(x, y);
        break;
    default:
        ud_up(x);
        break;
    }
}

/*
 * The SRQ of @log entries armed at @limit, in B's PD or (@own_pd) in a
 * second PD of B's.
 */
static void srq_pair_init_full(SrqPair *p, uint8_t type, uint8_t log,
                               uint32_t limit, bool own_pd)
{
    uint32_t own_rq_qpn, srq_pdn;

    memset(p, 0, sizeof(*p));
    p->type = type;
    node_init(&p->a1, 1, type);
    node_init(&p->b1, 2, type);
    p->a1.h->peer = p->b1.h;
    p->b1.h->peer = p->a1.h;
    srq_pdn = own_pd ? rdma_create_pd(p->b1.h) : p->b1.pdn;
    g_assert_cmpuint(srq_create(&p->b1, &p->srq, srq_pdn, log, limit), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(p->srq.srqn, ==, 1);
    /* B's QPs receive from the SRQ; the one node_init made goes. */
    own_rq_qpn = p->b1.qp.qpn;
    g_assert_cmpuint(srq_qp_create(&p->b1, &p->b1.qp, type, p->srq.srqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(p->b1.h, VHCA_CMD_DESTROY_QP, own_rq_qpn),
                     ==, VHCA_ST_OK);
    p->b2 = p->b1;
    g_assert_cmpuint(srq_qp_create(&p->b2, &p->b2.qp, type, p->srq.srqn), ==,
                     VHCA_ST_OK);
    p->a2 = p->a1;
    g_assert_cmpuint(rdma_create_qp(p->a2.h, &p->a2.qp, type, p->a2.pdn,
                                    p->a2.scq.cqn, p->a2.rcq.cqn,
                                    p->a2.page), ==, VHCA_ST_OK);
    connect(p, &p->a1, &p->b1);
    connect(p, &p->b1, &p->a1);
    connect(p, &p->a2, &p->b2);
    connect(p, &p->b2, &p->a2);
}

static void srq_pair_init(SrqPair *p, uint8_t type)
{
    srq_pair_init_full(p, type, 4, 0, false);
}

static void srq_pair_free(SrqPair *p)
{
    harness_free(p->a1.h);
    harness_free(p->b1.h);
}

static void settle(SrqPair *p)
{
    harness_pair_settle(p->a1.h, p->b1.h, SETTLE_NS);
}

/* A SEND of @len bytes at A's offset @off from @from to its peer. */
static void send_msg(SrqPair *p, Node *from, const Node *to, uint64_t wr_id,
                     uint32_t off, uint32_t len)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&w, from->buf + off, len, from->key);
    if (p->type == VHCA_QPT_UD) {
        w.dest_qpn = GUINT32_TO_LE(to->qp.qpn);
        w.qkey = GUINT32_TO_LE(QKEY);
        memcpy(w.av.dgid, to->gid, 16);
        memcpy(w.av.dmac, to->h->core.cfg.mac, 6);
        w.av.hop_limit = 64;
    }
    qp_put_send_wqe(from->h, &from->qp, &w);
    ring_sq(from);
}

/* The next receive completion on B's CQ: @wr_id, taken by @qp. */
static struct vhca_cqe expect_recv_op(SrqPair *p, const Node *qp,
                                      uint64_t wr_id, uint8_t status,
                                      uint8_t opcode)
{
    struct vhca_cqe cqe;

    g_assert_true(cq_poll(p->b1.h, &p->b1.rcq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmpuint(cqe.qpn, ==, qp->qp.qpn);
    if (status == VHCA_WC_SUCCESS) {
        g_assert_cmpuint(cqe.opcode, ==, opcode);
    }
    return cqe;
}

static struct vhca_cqe expect_recv(SrqPair *p, const Node *qp,
                                   uint64_t wr_id, uint8_t status)
{
    return expect_recv_op(p, qp, wr_id, status, VHCA_WC_RECV);
}

/* How many SRQ events of @subtype for @srqn are in B's AEQ from @from. */
static unsigned srq_events_since(Harness *h, uint32_t from, uint8_t subtype,
                                 uint32_t srqn)
{
    uint32_t pi = reg_read(h, VHCA_REG_AEQ_PI);
    unsigned n = 0;

    g_assert_cmpuint(pi - from, <=, 1u << AEQ_LOG);
    for (; from != pi; from++) {
        struct vhca_eqe e = aeq_entry(h, from);

        if (e.type == VHCA_EQE_SRQ_EVENT && e.subtype == subtype &&
            GUINT32_FROM_LE(e.data[0]) == srqn) {
            n++;
        }
    }
    return n;
}

/* ---------------------------------------------------------------------- */
/* RC                                                                     */
/* ---------------------------------------------------------------------- */

/*
 * Two QPs take the SRQ's WQEs in ring order, whichever QP the message is
 * for (IBTA 10.2.9.1); one-packet and multi-packet SENDs; the CQE names
 * the QP that took the WQE; the consumer record counts the takes; each
 * ACK carries the invalid credit code.
 */
static void test_rc_two_qps(void)
{
    static const struct {
        bool second;
        uint32_t len;
    } msgs[] = {
        { false, 100 }, { true, 3 * MTU + 5 }, { true, MTU },
        { false, 2 * MTU }, { true, 1 },
    };
    SrqPair p;
    Wire wb = { 0 };
    VhcaWirePacket pkt;
    struct vhca_srq_attr q;
    unsigned i;

    srq_pair_init(&p, VHCA_QPT_RC);
    wire_attach(&p.b1, &wb);
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 0);
    for (i = 0; i < G_N_ELEMENTS(msgs) + 1; i++) {
        srq_post(&p.b1, &p.srq, 0xb0 + i, i);
    }
    for (i = 0; i < G_N_ELEMENTS(msgs); i++) {
        Node *from = msgs[i].second ? &p.a2 : &p.a1;
        Node *to = msgs[i].second ? &p.b2 : &p.b1;
        struct vhca_cqe cqe;

        fill(&p.a1, i * SLOT, msgs[i].len, i + 1);
        send_msg(&p, from, to, 0xa0 + i, i * SLOT, msgs[i].len);
        settle(&p);
        expect_cqe(from, &p.a1.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        cqe = expect_recv(&p, to, 0xb0 + i, VHCA_WC_SUCCESS);
        g_assert_cmpuint(cqe.byte_len, ==, msgs[i].len);
        expect_same(&p.a1, i * SLOT, &p.b1, RECV_OFF + i * SLOT,
                    msgs[i].len);
        g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, i + 1);
        /* IBTA 9.7.7.2.4: no credits to count on an SRQ. */
        g_assert_cmpint(vhca_wire_parse(wb.last, wb.last_len, &pkt), ==,
                        VHCA_WIRE_OK);
        g_assert_cmphex(pkt.tp.bth.opcode, ==,
                        VHCA_IB_OPCODE(RC, ACKNOWLEDGE));
        g_assert_cmphex(pkt.tp.aeth.syndrome, ==, vhca_aeth_ack(0x1f));
    }
    expect_no_cqe(&p.b1, &p.b1.rcq);
    q = srq_query(&p.b1, p.srq.srqn);
    g_assert_cmpuint(GUINT32_FROM_LE(q.wqes), ==, 1);
    g_assert_cmpuint(q.log_size, ==, 4);
    g_assert_cmpuint(GUINT32_FROM_LE(q.limit), ==, 0);
    srq_pair_free(&p);
}

/* An empty SRQ is an empty RQ: RNR NAK, then success once posted. */
static void test_rc_rnr(void)
{
    SrqPair p;

    srq_pair_init(&p, VHCA_QPT_RC);
    fill(&p.a1, 0, 1500, 9);
    send_msg(&p, &p.a2, &p.b2, 0xa1, 0, 1500);
    harness_pair_settle(p.a1.h, p.b1.h, 0);
    g_assert_cmpuint(counter(p.b1.h, VHCA_CNT_RNR_NAK_SENT), ==, 1);
    g_assert_cmpuint(p.b1.h->ev.nak_sent.kind, ==, VHCA_NAK_KIND_RNR);
    g_assert_cmpuint(p.b1.h->ev.nak_sent.qpn, ==, p.b2.qp.qpn);
    expect_no_cqe(&p.a1, &p.a1.scq);
    srq_post(&p.b1, &p.srq, 0xb1, 0);
    settle(&p);
    expect_cqe(&p.a2, &p.a1.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_recv(&p, &p.b2, 0xb1, VHCA_WC_SUCCESS);
    expect_same(&p.a1, 0, &p.b1, RECV_OFF, 1500);
    srq_pair_free(&p);
}

/*
 * An RDMA WRITE with immediate takes its WQE from the SRQ at its last
 * packet, before placing that packet's data: RNR NAK while the SRQ is
 * empty, then the whole WRITE lands and the WQE completes with the
 * immediate.
 */
static void test_rc_write_imm(void)
{
    enum { LEN = 2 * MTU + 100, WOFF = 0x30000 };
    struct vhca_send_wqe w;
    struct vhca_cqe cqe;
    SrqPair p;

    srq_pair_init(&p, VHCA_QPT_RC);
    fill(&p.a1, 0, LEN, 11);
    wqe_init(&w, 0xa1, VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a1.buf, LEN, p.a1.key);
    wqe_remote(&w, p.b1.buf + WOFF, p.b1.key);
    w.imm_or_inv = GUINT32_TO_LE(0x44332211);
    qp_put_send_wqe(p.a2.h, &p.a2.qp, &w);
    ring_sq(&p.a2);
    harness_pair_settle(p.a1.h, p.b1.h, 0);
    g_assert_cmpuint(counter(p.b1.h, VHCA_CNT_RNR_NAK_SENT), ==, 1);
    expect_no_cqe(&p.b1, &p.b1.rcq);
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 0);

    srq_post(&p.b1, &p.srq, 0xb7, 0);
    settle(&p);
    expect_cqe(&p.a2, &p.a1.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    cqe = expect_recv_op(&p, &p.b2, 0xb7, VHCA_WC_SUCCESS,
                         VHCA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(cqe.byte_len, ==, LEN);
    g_assert_cmphex(cqe.flags & VHCA_CQE_WITH_IMM, ==, VHCA_CQE_WITH_IMM);
    expect_same(&p.a1, 0, &p.b1, WOFF, LEN);
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 1);
    srq_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* UD and UC                                                              */
/* ---------------------------------------------------------------------- */

static void unreliable_case(uint8_t type)
{
    uint32_t hdr = type == VHCA_QPT_UD ? VHCA_GRH_AREA_LEN : 0;
    uint32_t len = type == VHCA_QPT_UD ? 500 : 2 * MTU + 3;
    SrqPair p;
    struct vhca_cqe cqe;

    srq_pair_init(&p, type);
    /* Nothing posted: dropped and counted (no RNR NAK on UD or UC). */
    send_msg(&p, &p.a1, &p.b1, 0xa0, 0, 64);
    settle(&p);
    expect_no_cqe(&p.b1, &p.b1.rcq);
    g_assert_cmpuint(counter(p.b1.h, VHCA_CNT_DROP(VHCA_DROP_NO_RWQE)), >=,
                     1);

    srq_post(&p.b1, &p.srq, 0xb0, 0);
    srq_post(&p.b1, &p.srq, 0xb1, 1);
    fill(&p.a1, 0, len, 3);
    fill(&p.a1, SLOT, len, 4);
    send_msg(&p, &p.a2, &p.b2, 0xa1, 0, len);
    settle(&p);
    send_msg(&p, &p.a1, &p.b1, 0xa2, SLOT, len);
    settle(&p);
    cqe = expect_recv(&p, &p.b2, 0xb0, VHCA_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, hdr + len);
    cqe = expect_recv(&p, &p.b1, 0xb1, VHCA_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, hdr + len);
    expect_same(&p.a1, 0, &p.b1, RECV_OFF + hdr, len);
    expect_same(&p.a1, SLOT, &p.b1, RECV_OFF + SLOT + hdr, len);
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 2);
    srq_pair_free(&p);
}

static void test_ud(void)
{
    unreliable_case(VHCA_QPT_UD);
}

static void test_uc(void)
{
    unreliable_case(VHCA_QPT_UC);
}

/* ---------------------------------------------------------------------- */
/* Limit, query, resize                                                   */
/* ---------------------------------------------------------------------- */

/*
 * IBTA 10.2.9.5 / 11.5.2.4: the first take that leaves fewer than the
 * limit posts SRQ_LIMIT_REACHED once and disarms; MODIFY_SRQ re-arms.
 */
static void test_limit(void)
{
    SrqPair p;
    uint32_t from;
    unsigned i;

    srq_pair_init_full(&p, VHCA_QPT_UD, 3, 3, false);
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).limit), ==, 3);
    for (i = 0; i < 5; i++) {
        srq_post(&p.b1, &p.srq, 0xb0 + i, i);
    }
    from = aeq_drain(p.b1.h);
    /* 5 posted: after two takes 3 are left, not fewer than 3. */
    for (i = 0; i < 2; i++) {
        send_msg(&p, &p.a1, &p.b1, 0xa0 + i, 0, 8);
        settle(&p);
    }
    g_assert_cmpuint(p.b1.h->ev.srq_limit.n, ==, 0);
    g_assert_cmpuint(srq_events_since(p.b1.h, from,
                                      VHCA_EVENT_SRQ_LIMIT_REACHED, 1), ==,
                     0);
    send_msg(&p, &p.a1, &p.b1, 0xa2, 0, 8);
    settle(&p);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.n, ==, 1);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.srqn, ==, 1);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.limit, ==, 3);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.wqes, ==, 2);
    g_assert_cmpuint(srq_events_since(p.b1.h, from,
                                      VHCA_EVENT_SRQ_LIMIT_REACHED, 1), ==,
                     1);
    /* Disarmed: QUERY says 0 and the next take posts nothing. */
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).limit), ==, 0);
    send_msg(&p, &p.a2, &p.b2, 0xa3, 0, 8);
    settle(&p);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.n, ==, 1);
    g_assert_cmpuint(srq_events_since(p.b1.h, from,
                                      VHCA_EVENT_SRQ_LIMIT_REACHED, 1), ==,
                     1);
    /* Re-armed at 2 with one left: the next take (0 left) fires. */
    g_assert_cmpuint(srq_modify(&p.b1, 1, VHCA_SRQ_LIMIT, 2, 0, 0, 0), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).limit), ==, 2);
    send_msg(&p, &p.a1, &p.b1, 0xa4, 0, 8);
    settle(&p);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.n, ==, 2);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.wqes, ==, 0);
    for (i = 0; i < 5; i++) {
        expect_recv(&p, i == 3 ? &p.b2 : &p.b1, 0xb0 + i, VHCA_WC_SUCCESS);
    }
    /* A limit above the ring's size is refused and changes nothing. */
    g_assert_cmpuint(srq_modify(&p.b1, 1, VHCA_SRQ_LIMIT, 9, 0, 0, 0), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).limit), ==, 0);
    srq_pair_free(&p);
}

/*
 * MAX_WR: the WQEs posted and not taken keep their indices in the new
 * ring and are taken in order afterwards; a ring too small for them is
 * refused and the SRQ keeps its old one.
 */
static void test_resize(void)
{
    SrqPair p;
    struct vhca_srq_attr q;
    uint64_t ring, pbl;
    unsigned i;

    srq_pair_init_full(&p, VHCA_QPT_UD, 2, 0, false);
    /* Indices 0..2, two taken, then 3 and 4 (slot 0 again). */
    for (i = 0; i < 3; i++) {
        srq_post(&p.b1, &p.srq, 0xb0 + i, i);
    }
    for (i = 0; i < 2; i++) {
        send_msg(&p, &p.a1, &p.b1, 0xa0 + i, 0, 8);
        settle(&p);
        expect_recv(&p, &p.b1, 0xb0 + i, VHCA_WC_SUCCESS);
    }
    srq_post(&p.b1, &p.srq, 0xb3, 3);
    srq_post(&p.b1, &p.srq, 0xb4, 4);
    q = srq_query(&p.b1, 1);
    g_assert_cmpuint(GUINT32_FROM_LE(q.wqes), ==, 3);

    /* 3 pending do not fit in 2. */
    ring = rdma_alloc(p.b1.h, 1);
    pbl = rdma_pbl(p.b1.h, ring, 1, false);
    g_assert_cmpuint(srq_modify(&p.b1, 1, VHCA_SRQ_MAX_WR, 0, 1, pbl, 1), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(srq_modify(&p.b1, 1, VHCA_SRQ_MAX_WR, 0, 15, pbl, 1),
                     ==, VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(srq_modify(&p.b1, 1, VHCA_SRQ_MAX_WR | 4, 0, 3, pbl, 1),
                     ==, VHCA_ST_BAD_PARAM);
    q = srq_query(&p.b1, 1);
    g_assert_cmpuint(q.log_size, ==, 2);
    g_assert_cmpuint(GUINT32_FROM_LE(q.wqes), ==, 3);

    /* To 8 entries, with a limit in the same command. */
    g_assert_cmpuint(srq_modify(&p.b1, 1, VHCA_SRQ_MAX_WR | VHCA_SRQ_LIMIT,
                                1, 3, pbl, 1), ==, VHCA_ST_OK);
    p.srq.ring = ring;
    p.srq.log = 3;
    q = srq_query(&p.b1, 1);
    g_assert_cmpuint(q.log_size, ==, 3);
    g_assert_cmpuint(GUINT32_FROM_LE(q.wqes), ==, 3);
    g_assert_cmpuint(GUINT32_FROM_LE(q.limit), ==, 1);
    /* The moved WQEs sit at their indices: 2, 3, 4 of 8. */
    for (i = 2; i <= 4; i++) {
        struct vhca_recv_wqe w;

        ram_read(p.b1.h, ring + i * VHCA_RECV_WQE_SIZE, &w, sizeof(w));
        g_assert_cmphex(GUINT64_FROM_LE(w.wr_id), ==, 0xb0 + i);
    }
    srq_post(&p.b1, &p.srq, 0xb5, 5);
    srq_post(&p.b1, &p.srq, 0xb6, 6);
    for (i = 2; i <= 6; i++) {
        send_msg(&p, &p.a2, &p.b2, 0xa0 + i, 0, 8);
        settle(&p);
        expect_recv(&p, &p.b2, 0xb0 + i, VHCA_WC_SUCCESS);
    }
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 7);
    g_assert_cmpuint(p.b1.h->ev.srq_limit.n, ==, 1);
    srq_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Errors                                                                 */
/* ---------------------------------------------------------------------- */

/* Deliver only the first frame A sends, as if the rest were lost. */
static void first_frame_only(Harness *h, const uint8_t *buf, size_t len)
{
    unsigned *count = h->tx_hook_opaque;

    if ((*count)++ == 0) {
        harness_deliver(h->peer, buf, len);
    }
}

/*
 * A QP that goes to ERR in the middle of a message flushes the WQE it
 * took and nothing of the SRQ's (IBTA 10.3.1, 11.2.3), then posts Last
 * WQE Reached (11.6.3.1); the other QP goes on with the SRQ's next WQE.
 */
static void test_qp_error_mid_message(void)
{
    struct vhca_qp_attr attr;
    unsigned count = 0;
    uint32_t from;
    SrqPair p;

    srq_pair_init(&p, VHCA_QPT_RC);
    srq_post(&p.b1, &p.srq, 0xb0, 0);
    srq_post(&p.b1, &p.srq, 0xb1, 1);
    srq_post(&p.b1, &p.srq, 0xb2, 2);
    p.a1.h->tx_hook = first_frame_only;
    p.a1.h->tx_hook_opaque = &count;
    send_msg(&p, &p.a1, &p.b1, 0xa0, 0, 3 * MTU);
    harness_run(p.a1.h);
    harness_run(p.b1.h);
    g_assert_cmpuint(count, ==, 3);
    /* b1 took WQE 0 for the FIRST packet. */
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 1);
    expect_no_cqe(&p.b1, &p.b1.rcq);

    from = aeq_drain(p.b1.h);
    memset(&attr, 0, sizeof(attr));
    attr.qpn = p.b1.qp.qpn;
    qp_modify_ok(p.b1.h, &attr, VHCA_QPS_ERR, 0);
    expect_recv(&p, &p.b1, 0xb0, VHCA_WC_WR_FLUSH_ERR);
    expect_no_cqe(&p.b1, &p.b1.rcq);
    g_assert_true(qp_event_since(p.b1.h, from,
                                 VHCA_EVENT_QP_LAST_WQE_REACHED,
                                 p.b1.qp.qpn));
    g_assert_false(qp_event_since(p.b1.h, from,
                                  VHCA_EVENT_QP_LAST_WQE_REACHED,
                                  p.b2.qp.qpn));
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).wqes), ==, 2);

    /* The SRQ's next WQE goes to the other QP. */
    p.a1.h->tx_hook = NULL;
    send_msg(&p, &p.a2, &p.b2, 0xa1, 0, 200);
    settle(&p);
    expect_recv(&p, &p.b2, 0xb1, VHCA_WC_SUCCESS);
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 2);

    /* A QP the device moves to ERR posts it too: a bad WQE (8 SGEs). */
    from = aeq_drain(p.b1.h);
    srq_put(&p.b1, &p.srq, 0xb3, RECV_OFF, SLOT, VHCA_MAX_RECV_SGE + 1);
    srq_put(&p.b1, &p.srq, 0xb4, RECV_OFF, SLOT, 1);
    srq_ring(&p.b1, &p.srq);
    send_msg(&p, &p.a2, &p.b2, 0xa2, 0, 200);
    settle(&p);
    /* WQE 2 (posted first) is the good one; the bad one is next. */
    expect_recv(&p, &p.b2, 0xb2, VHCA_WC_SUCCESS);
    send_msg(&p, &p.a2, &p.b2, 0xa3, 0, 200);
    settle(&p);
    expect_recv(&p, &p.b2, 0xb3, VHCA_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(p.b1.h->ev.err_wqe.queue, ==, VHCA_RING_SRQ);
    g_assert_cmpuint(p.b1.h->ev.err_wqe.index, ==, 3);
    g_assert_cmpuint(qp_state(p.b1.h, p.b2.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_true(qp_event_since(p.b1.h, from,
                                 VHCA_EVENT_QP_LAST_WQE_REACHED,
                                 p.b2.qp.qpn));
    /* The SRQ goes on: its last WQE is still there. */
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).wqes), ==, 1);
    g_assert_false(p.b1.h->core.srqs[1].error);
    srq_pair_free(&p);
}

/*
 * IBTA 10.2.9: an SRQ's receive buffers are checked in the SRQ's PD, not
 * in the PD of the QP that took the WQE.
 */
static void test_pd(void)
{
    SrqPair p;
    uint32_t pd2, key2;

    /* The SRQ in B's second PD; the QPs and B's MR are in the first. */
    srq_pair_init_full(&p, VHCA_QPT_UD, 4, 0, true);
    pd2 = p.srq.pdn;
    g_assert_cmpuint(pd2, !=, p.b1.pdn);
    key2 = rdma_create_phys_mr(p.b1.h, pd2, p.b1.buf, DATA_PAGES * 4096,
                               ACCESS_ALL);
    p.srq.key = key2;
    srq_post(&p.b1, &p.srq, 0xb0, 0);
    p.srq.key = p.b1.key;           /* an MR of the QP's PD, not the SRQ's */
    srq_post(&p.b1, &p.srq, 0xb1, 1);
    fill(&p.a1, 0, 64, 5);
    send_msg(&p, &p.a1, &p.b1, 0xa0, 0, 64);
    settle(&p);
    expect_recv(&p, &p.b1, 0xb0, VHCA_WC_SUCCESS);
    expect_same(&p.a1, 0, &p.b1, RECV_OFF + VHCA_GRH_AREA_LEN, 64);
    send_msg(&p, &p.a1, &p.b1, 0xa1, 0, 64);
    settle(&p);
    expect_recv(&p, &p.b1, 0xb1, VHCA_WC_LOC_PROT_ERR);
    g_assert_cmpuint(qp_state(p.b1.h, p.b1.qp.qpn), ==, VHCA_QPS_ERR);
    srq_pair_free(&p);
}

/*
 * An SRQ whose ring is not guest RAM when a WQE is taken is in error:
 * SRQ_ERR once, no more WQEs (RC answers RNR NAK as for an empty one).
 */
static void test_ring_not_ram(void)
{
    SrqPair p;
    uint32_t from;

    srq_pair_init(&p, VHCA_QPT_RC);
    srq_post(&p.b1, &p.srq, 0xb0, 0);
    srq_post(&p.b1, &p.srq, 0xb1, 1);
    from = aeq_drain(p.b1.h);
    /* The guest unmaps the ring (the device kept the page list). */
    p.b1.h->core.srqs[1].pages[0] = BAD_ADDR;
    send_msg(&p, &p.a1, &p.b1, 0xa0, 0, 100);
    harness_pair_settle(p.a1.h, p.b1.h, 0);
    g_assert_true(p.b1.h->core.srqs[1].error);
    g_assert_cmpuint(srq_events_since(p.b1.h, from, VHCA_EVENT_SRQ_ERR, 1),
                     ==, 1);
    g_assert_cmpuint(p.b1.h->ev.err_guest_ram.n, ==, 1);
    g_assert_cmpuint(p.b1.h->ev.err_guest_ram.ring, ==, VHCA_RING_SRQ);
    g_assert_cmpuint(p.b1.h->ev.err_guest_ram.object, ==, 1);
    g_assert_cmpuint(p.b1.h->guest_errors[VHCA_GUEST_ERR_SRQ], ==, 1);
    g_assert_cmpuint(counter(p.b1.h, VHCA_CNT_RNR_NAK_SENT), ==, 1);
    g_assert_cmpuint(srq_ci(&p.b1, &p.srq), ==, 0);
    /* The resend meets the same SRQ: RNR again, no second event. */
    harness_pair_advance_to_timer(p.a1.h, p.b1.h);
    harness_pair_settle(p.a1.h, p.b1.h, 0);
    g_assert_cmpuint(counter(p.b1.h, VHCA_CNT_RNR_NAK_SENT), ==, 2);
    g_assert_cmpuint(srq_events_since(p.b1.h, from, VHCA_EVENT_SRQ_ERR, 1),
                     ==, 1);
    expect_no_cqe(&p.b1, &p.b1.rcq);
    srq_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Commands and doorbells                                                 */
/* ---------------------------------------------------------------------- */

static void test_objects(void)
{
    SrqPair p;
    struct vhca_qp_attr qa;
    Harness *h;
    uint32_t pd2 = 0;
    unsigned errors;
    TestSrq s2;

    srq_pair_init(&p, VHCA_QPT_RC);
    h = p.b1.h;
    /* QUERY_QP: no receive ring of its own. */
    g_assert_cmpuint(rdma_query_qp(h, p.b1.qp.qpn, &qa), ==, VHCA_ST_OK);
    g_assert_cmpuint(GUINT32_FROM_LE(qa.max_recv_wr), ==, 0);
    /* In use: DESTROY_SRQ and DESTROY_PD are BUSY. */
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, 1), ==,
                     VHCA_ST_BUSY);
    /* An RQ doorbell to a QP on an SRQ is ignored and logged. */
    errors = guest_errors_total(h);
    ring_doorbell(h, p.b1.page, VHCA_DB_RQ, p.b1.qp.qpn, 1);
    g_assert_cmpuint(guest_errors_total(h), ==, errors + 1);
    g_assert_cmpuint(h->ev.ub_ring_doorbell.ring, ==, VHCA_RING_RQ);
    /* SRQ doorbells: foreign page, unknown SRQ, PI past the ring. */
    ring_doorbell(h, p.b1.page + 1, VHCA_DB_SRQ, 1, 1);
    g_assert_cmpuint(guest_errors_total(h), ==, errors + 2);
    ring_doorbell(h, p.b1.page, VHCA_DB_SRQ, 3, 1);
    g_assert_cmpuint(guest_errors_total(h), ==, errors + 3);
    g_assert_cmpuint(h->ev.ub_doorbell.offset, ==, VHCA_DB_SRQ);
    g_assert_cmpuint(h->ev.ub_doorbell.object, ==, 3);
    ring_doorbell(h, p.b1.page, VHCA_DB_SRQ, 1, 17);
    g_assert_cmpuint(guest_errors_total(h), ==, errors + 4);
    g_assert_cmpuint(h->ev.err_doorbell_index.ring, ==, VHCA_RING_SRQ);
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).wqes), ==, 0);
    ring_doorbell(h, p.b1.page, VHCA_DB_SRQ, 1, 16);
    g_assert_cmpuint(GUINT32_FROM_LE(srq_query(&p.b1, 1).wqes), ==, 16);

    /* A second SRQ in another PD: the PD is busy until it goes. */
    pd2 = rdma_create_pd(h);
    g_assert_cmpuint(srq_create(&p.b1, &s2, pd2, 1, 2), ==, VHCA_ST_OK);
    g_assert_cmpuint(s2.srqn, ==, 2);
    g_assert_cmpuint(srq_ci(&p.b1, &s2), ==, 0);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, pd2), ==,
                     VHCA_ST_BUSY);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, 2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, 2), ==,
                     VHCA_ST_BAD_INDEX);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, pd2), ==,
                     VHCA_ST_OK);

    /* Without its QPs the SRQ goes; reset would have taken it too. */
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_QP, p.b1.qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, 1), ==,
                     VHCA_ST_BUSY);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_QP, p.b2.qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, 1), ==,
                     VHCA_ST_OK);
    srq_pair_free(&p);
}

/* Reset destroys every SRQ; max-srq 0 has none to give. */
static void test_reset_and_no_srqs(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    SrqPair p;
    Node n;
    TestSrq s;

    srq_pair_init(&p, VHCA_QPT_UD);
    g_assert_true(vhca_ids_used(&p.b1.h->core.srq_ids, 1));
    vhca_core_reset(&p.b1.h->core);
    g_assert_false(vhca_ids_used(&p.b1.h->core.srq_ids, 1));
    g_assert_null(p.b1.h->core.srqs[1].pages);
    srq_pair_free(&p);

    memset(&n, 0, sizeof(n));
    cfg.max_srq = 0;
    n.h = harness_new(&cfg);
    harness_enable(n.h);
    n.page = rdma_alloc_uctx(n.h);
    n.pdn = rdma_create_pd(n.h);
    g_assert_cmpuint(srq_create(&n, &s, n.pdn, 2, 0), ==,
                     VHCA_ST_NO_RESOURCES);
    harness_free(n.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/srq/rc-two-qps", test_rc_two_qps);
    g_test_add_func("/vhca/srq/rc-rnr", test_rc_rnr);
    g_test_add_func("/vhca/srq/rc-write-imm", test_rc_write_imm);
    g_test_add_func("/vhca/srq/ud", test_ud);
    g_test_add_func("/vhca/srq/uc", test_uc);
    g_test_add_func("/vhca/srq/limit", test_limit);
    g_test_add_func("/vhca/srq/resize", test_resize);
    g_test_add_func("/vhca/srq/qp-error-mid-message",
                    test_qp_error_mid_message);
    g_test_add_func("/vhca/srq/pd", test_pd);
    g_test_add_func("/vhca/srq/ring-not-ram", test_ring_not_ram);
    g_test_add_func("/vhca/srq/objects", test_objects);
    g_test_add_func("/vhca/srq/reset-and-no-srqs", test_reset_and_no_srqs);
    return g_test_run();
}
