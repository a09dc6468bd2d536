/*
 * Unit tests of XRC (IBTA Vol 1 annex A14; docs/specs/vhca.rst "XRC"):
 * two engines back to back, an XRC initiator QP on A reaching two XRC
 * SRQs behind one XRC target QP on B.
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
#define TARGET_OFF      0x20000             /* RDMA and atomics on B */
#define INI_PSN         0x500
#define TGT_PSN         0x900

/* An SRQ as the test (the driver) sees it. */
typedef struct TestSrq {
    uint32_t srqn;
    uint64_t ring;                  /* one page: 32 WQEs */
    uint64_t ci_rec;
    uint32_t pi;
} TestSrq;

#define SRQ_LOG         5

/* CREATE_SRQ of @type in @pdn; XRC: in @xrcdn, completing to @cqn. */
static uint8_t srq_create(Node *n, TestSrq *s, uint8_t type, uint32_t pdn,
                          uint32_t xrcdn, uint32_t cqn)
{
    struct vhca_srq_create c;

    memset(s, 0, sizeof(*s));
    s->ring = rdma_alloc(n->h, 1);
    s->ci_rec = rdma_alloc(n->h, 1);
    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(pdn);
    c.db_page = GUINT32_TO_LE(n->page);
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(n->h, s->ring, 1, false));
    c.npages = GUINT32_TO_LE(1);
    c.log_size = SRQ_LOG;
    c.ci_addr = GUINT64_TO_LE(s->ci_rec);
    c.type = type;
    c.xrcdn = GUINT32_TO_LE(xrcdn);
    c.cqn = GUINT32_TO_LE(cqn);
    return rdma_cmd(n->h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c), &s->srqn, NULL);
}

static uint32_t srq_taken(Node *n, const TestSrq *s)
{
    uint32_t v;

    ram_read(n->h, s->ci_rec, &v, sizeof(v));
    return GUINT32_FROM_LE(v);
}

/* Post receive WQE @wr_id of buffer slot @slot through @lkey, and ring. */
static void srq_post_lkey(Node *n, TestSrq *s, uint64_t wr_id, uint32_t slot,
                          uint32_t lkey)
{
    struct vhca_recv_wqe w;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(wr_id);
    w.num_sge = 1;
    w.sge[0].addr = GUINT64_TO_LE(n->buf + RECV_OFF + slot * SLOT);
    w.sge[0].length = GUINT32_TO_LE(SLOT);
    w.sge[0].lkey = GUINT32_TO_LE(lkey);
    ram_write(n->h, s->ring + (uint64_t)(s->pi & ((1u << SRQ_LOG) - 1)) *
              VHCA_RECV_WQE_SIZE, &w, sizeof(w));
    s->pi++;
    ring_doorbell(n->h, n->page, VHCA_DB_SRQ, s->srqn, s->pi);
}

/* The same through the node's MR (its PD's). */
static void srq_post(Node *n, TestSrq *s, uint64_t wr_id, uint32_t slot)
{
    srq_post_lkey(n, s, wr_id, slot, n->key);
}

static uint32_t xrcd_alloc(Harness *h)
{
    uint32_t xrcdn = 0;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_ALLOC_XRCD, NULL, 0, &xrcdn, NULL),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(xrcdn, !=, 0);
    return xrcdn;
}

/* The initiator: an SQ on @n's send CQ, nothing to receive with. */
static uint8_t ini_create(Node *n, TestQp *qp)
{
    struct vhca_qp_create c;
    uint32_t sq_pages;

    memset(qp, 0, sizeof(*qp));
    qp->sq_log = 5;
    qp->db_page = n->page;
    sq_pages = (VHCA_SEND_WQE_SIZE << qp->sq_log) / 4096;
    qp->sq = rdma_alloc(n->h, sq_pages);
    memset(&c, 0, sizeof(c));
    c.type = VHCA_QPT_XRC_INI;
    c.sq_log_size = qp->sq_log;
    c.pdn = GUINT32_TO_LE(n->pdn);
    c.send_cqn = GUINT32_TO_LE(n->scq.cqn);
    c.sq_pbl_addr = GUINT64_TO_LE(rdma_pbl(n->h, qp->sq, sq_pages, true));
    c.sq_npages = GUINT32_TO_LE(sq_pages);
    c.db_page = GUINT32_TO_LE(n->page);
    return rdma_cmd(n->h, VHCA_CMD_CREATE_QP, &c, sizeof(c), &qp->qpn, NULL);
}

/* ALLOC_MW of @type in @pdn (tag 0); *key from out. */
static uint8_t alloc_mw_in(Harness *h, uint32_t pdn, uint8_t type,
                           uint32_t *key)
{
    struct vhca_cmd_mw_in in;
    struct vhca_cmd_obj_out out;
    uint8_t status;

    memset(&in, 0, sizeof(in));
    in.pdn = GUINT32_TO_LE(pdn);
    in.type = type;
    status = admin_cmd(h, VHCA_CMD_ALLOC_MW, 0x7100, &in, sizeof(in), &out);
    *key = GUINT32_FROM_LE(out.key);
    return status;
}

/* The target: a domain, and nothing else. */
static uint8_t tgt_create(Harness *h, uint32_t xrcdn, uint32_t *qpn)
{
    struct vhca_qp_create c;

    memset(&c, 0, sizeof(c));
    c.type = VHCA_QPT_XRC_TGT;
    c.xrcdn = GUINT32_TO_LE(xrcdn);
    /* Ignored: a target has no doorbell. */
    c.db_page = GUINT32_TO_LE(0x1234);
    return rdma_cmd(h, VHCA_CMD_CREATE_QP, &c, sizeof(c), qpn, NULL);
}

/*
 * Linux's IB_QPT_XRC_INI and IB_QPT_XRC_TGT rows of the Modify QP table:
 * the initiator has no responder attributes, the target no retries.
 */
static void xrc_connect(Harness *h, uint32_t qpn, bool target,
                        const Node *dest, uint32_t dest_qpn, uint32_t sq_psn,
                        uint32_t rq_psn, uint8_t timeout)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    a.port = 1;
    a.qp_access_flags = ACCESS_ALL & ~VHCA_ACCESS_LOCAL_WRITE;
    qp_modify_ok(h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                 VHCA_QP_ACCESS_FLAGS);
    a.hop_limit = 64;
    memcpy(a.dgid, dest->gid, 16);
    memcpy(a.dmac, dest->h->core.cfg.mac, 6);
    a.path_mtu = VHCA_IB_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    qp_modify_ok(h, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                 VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                 (target ? VHCA_QP_MAX_DEST_RD_ATOMIC |
                           VHCA_QP_MIN_RNR_TIMER : 0));
    a.timeout = timeout;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = 16;
    qp_modify_ok(h, &a, VHCA_QPS_RTS, VHCA_QP_TIMEOUT | VHCA_QP_SQ_PSN |
                 (target ? 0 : VHCA_QP_RETRY_CNT | VHCA_QP_RNR_RETRY |
                               VHCA_QP_MAX_QP_RD_ATOMIC));
}

/*
 * A: an initiator.  B: XRC domain xrcdn, target tgt_qpn in it, XRC SRQs
 * srq1 (completing to B's rcq) and srq2 (completing to rcq2), both in
 * B's PD, which B's MR is in too.
 */
typedef struct Xrc {
    Node a, b;                      /* a.qp: the initiator */
    uint32_t xrcdn, tgt_qpn;
    TestSrq srq1, srq2;
    TestCq rcq2;
    Wire wa, wb;                    /* frames A sends, B sends */
} Xrc;

static void xrc_init(Xrc *x, uint8_t timeout)
{
    memset(x, 0, sizeof(*x));
    node_init(&x->a, 1, VHCA_QPT_RC);
    node_init(&x->b, 2, VHCA_QPT_RC);
    x->a.h->peer = x->b.h;
    x->b.h->peer = x->a.h;
    /* The initiator takes the place of the RC QP node_init made. */
    g_assert_cmpuint(rdma_destroy(x->a.h, VHCA_CMD_DESTROY_QP, x->a.qp.qpn),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(ini_create(&x->a, &x->a.qp), ==, VHCA_ST_OK);
    x->xrcdn = xrcd_alloc(x->b.h);
    g_assert_cmpuint(tgt_create(x->b.h, x->xrcdn, &x->tgt_qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(x->b.h, &x->rcq2, 8, x->b.eqn,
                                    x->b.page), ==, VHCA_ST_OK);
    g_assert_cmpuint(srq_create(&x->b, &x->srq1, VHCA_SRQT_XRC, x->b.pdn,
                                x->xrcdn, x->b.rcq.cqn), ==, VHCA_ST_OK);
    g_assert_cmpuint(srq_create(&x->b, &x->srq2, VHCA_SRQT_XRC, x->b.pdn,
                                x->xrcdn, x->rcq2.cqn), ==, VHCA_ST_OK);
    xrc_connect(x->a.h, x->a.qp.qpn, false, &x->b, x->tgt_qpn, INI_PSN,
                TGT_PSN, timeout);
    xrc_connect(x->b.h, x->tgt_qpn, true, &x->a, x->a.qp.qpn, TGT_PSN,
                INI_PSN, timeout);
    wire_attach(&x->a, &x->wa);
    wire_attach(&x->b, &x->wb);
}

static void xrc_free(Xrc *x)
{
    wire_free(&x->wa);
    wire_free(&x->wb);
    harness_free(x->a.h);
    harness_free(x->b.h);
}

static void settle(Xrc *x)
{
    harness_pair_settle(x->a.h, x->b.h, SETTLE_NS);
}

/*
 * An XRC WQE of @opcode naming XRC SRQ @srqn, one SGE of A's buffer;
 * @rkey: the remote key, or for SEND_WITH_INV the key to invalidate.
 */
static void ini_post_key(Xrc *x, uint64_t wr_id, uint8_t opcode,
                         uint32_t srqn, uint32_t off, uint32_t len,
                         uint64_t raddr, uint32_t rkey)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, opcode, VHCA_WQE_SIGNALED);
    wqe_sge(&w, x->a.buf + off, len, x->a.key);
    wqe_remote(&w, raddr, rkey);
    if (opcode == VHCA_WR_SEND_WITH_INV) {
        w.imm_or_inv = GUINT32_TO_LE(rkey);
    }
    w.xrc_srqn = GUINT32_TO_LE(srqn);
    qp_put_send_wqe(x->a.h, &x->a.qp, &w);
    ring_doorbell(x->a.h, x->a.qp.db_page, VHCA_DB_SQ, x->a.qp.qpn,
                  x->a.qp.sq_pi);
}

/* The same through B's MR. */
static void ini_post(Xrc *x, uint64_t wr_id, uint8_t opcode, uint32_t srqn,
                     uint32_t off, uint32_t len, uint64_t raddr)
{
    ini_post_key(x, wr_id, opcode, srqn, off, len, raddr, x->b.key);
}

static void ini_atomic(Xrc *x, uint64_t wr_id, uint8_t opcode, uint32_t srqn,
                       uint32_t off, uint64_t raddr, uint64_t cmp_add,
                       uint64_t swap)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, opcode, VHCA_WQE_SIGNALED);
    wqe_sge(&w, x->a.buf + off, 8, x->a.key);
    wqe_remote(&w, raddr, x->b.key);
    w.compare_add = GUINT64_TO_LE(cmp_add);
    w.swap = GUINT64_TO_LE(swap);
    w.xrc_srqn = GUINT32_TO_LE(srqn);
    qp_put_send_wqe(x->a.h, &x->a.qp, &w);
    ring_doorbell(x->a.h, x->a.qp.db_page, VHCA_DB_SQ, x->a.qp.qpn,
                  x->a.qp.sq_pi);
}

/* The next receive completion on @cq of B: @wr_id, by the target. */
static struct vhca_cqe expect_recv(Xrc *x, TestCq *cq, uint64_t wr_id,
                                   uint8_t status, uint8_t opcode)
{
    struct vhca_cqe cqe;

    g_assert_true(cq_poll(x->b.h, cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    /* As ConnectX reports them: the target QP's number. */
    g_assert_cmpuint(cqe.qpn, ==, x->tgt_qpn);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    return cqe;
}

static VhcaWirePacket parse_last(const Wire *w)
{
    VhcaWirePacket pkt;

    g_assert_cmpint(vhca_wire_parse(w->last, w->last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    return pkt;
}

/* ---------------------------------------------------------------------- */
/* Data movement                                                          */
/* ---------------------------------------------------------------------- */

/*
 * SENDs from one initiator to two XRC SRQs behind one target: each
 * message takes a WQE of the SRQ its XRCETH names and completes to that
 * SRQ's CQ under the target's QPN; requests go out with XRC opcodes and
 * the SRQ number in the XRCETH, ACKs come back as XRC ACKs with the
 * invalid credit code.
 */
static void test_send_two_srqs(void)
{
    static const struct {
        bool second;
        uint8_t opcode;
        uint32_t len;
    } msgs[] = {
        { false, VHCA_WR_SEND, 100 },
        { true, VHCA_WR_SEND_WITH_IMM, 3 * MTU + 5 },
        { true, VHCA_WR_SEND, MTU },
        { false, VHCA_WR_SEND, 2 * MTU },
    };
    unsigned taken1 = 0, taken2 = 0;
    Xrc x;
    unsigned i;

    xrc_init(&x, 14);
    for (i = 0; i < G_N_ELEMENTS(msgs); i++) {
        srq_post(&x.b, &x.srq1, 0x100 + i, i);
        srq_post(&x.b, &x.srq2, 0x200 + i, 8 + i);
    }
    for (i = 0; i < G_N_ELEMENTS(msgs); i++) {
        TestSrq *srq = msgs[i].second ? &x.srq2 : &x.srq1;
        unsigned slot = msgs[i].second ? 8 + taken2 : taken1;
        uint64_t wr_id = msgs[i].second ? 0x200 + taken2 : 0x100 + taken1;
        VhcaWirePacket req, ack;
        struct vhca_cqe cqe;

        fill(&x.a, i * SLOT, msgs[i].len, i + 1);
        ini_post(&x, 0xa0 + i, msgs[i].opcode, srq->srqn, i * SLOT,
                 msgs[i].len, 0);
        settle(&x);
        expect_cqe(&x.a, &x.a.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        cqe = expect_recv(&x, msgs[i].second ? &x.rcq2 : &x.b.rcq, wr_id,
                          VHCA_WC_SUCCESS, VHCA_WC_RECV);
        g_assert_cmpuint(cqe.byte_len, ==, msgs[i].len);
        g_assert_cmpuint(cqe.flags & VHCA_CQE_WITH_IMM, ==,
                         msgs[i].opcode == VHCA_WR_SEND_WITH_IMM ?
                         VHCA_CQE_WITH_IMM : 0);
        expect_same(&x.a, i * SLOT, &x.b, RECV_OFF + slot * SLOT,
                    msgs[i].len);
        if (msgs[i].second) {
            taken2++;
        } else {
            taken1++;
        }
        g_assert_cmpuint(srq_taken(&x.b, &x.srq1), ==, taken1);
        g_assert_cmpuint(srq_taken(&x.b, &x.srq2), ==, taken2);

        /* The last request packet and the ACK, on the wire. */
        req = parse_last(&x.wa);
        g_assert_cmphex(req.tp.bth.opcode & VHCA_IB_TRANSPORT_MASK, ==,
                        VHCA_IB_TRANSPORT_XRC);
        g_assert_cmphex(req.tp.bth.opcode & ~VHCA_IB_TRANSPORT_MASK, ==,
                        msgs[i].opcode == VHCA_WR_SEND_WITH_IMM ?
                        (msgs[i].len > MTU ? VHCA_IB_OP_SEND_LAST_IMM :
                                             VHCA_IB_OP_SEND_ONLY_IMM) :
                        (msgs[i].len > MTU ? VHCA_IB_OP_SEND_LAST :
                                             VHCA_IB_OP_SEND_ONLY));
        g_assert_cmpuint(req.tp.xrc_srqn, ==, srq->srqn);
        g_assert_cmpuint(req.tp.bth.dest_qpn, ==, x.tgt_qpn);
        ack = parse_last(&x.wb);
        g_assert_cmphex(ack.tp.bth.opcode, ==,
                        VHCA_IB_OPCODE(XRC, ACKNOWLEDGE));
        g_assert_cmphex(ack.tp.aeth.syndrome, ==, vhca_aeth_ack(0x1f));
        g_assert_cmpuint(ack.tp.bth.dest_qpn, ==, x.a.qp.qpn);
    }
    expect_no_cqe(&x.b, &x.b.rcq);
    expect_no_cqe(&x.b, &x.rcq2);
    g_assert_cmpuint(counter(x.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(x.a.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    xrc_free(&x);
}

/*
 * RDMA WRITE (with immediate), READ and both atomics over XRC: checked
 * in the PD of the SRQ named (B's, which holds B's MR); WRITE with
 * immediate takes its WQE from that SRQ.
 */
static void test_rdma_and_atomics(void)
{
    uint64_t v = GUINT64_TO_LE(40), got;
    struct vhca_cqe cqe;
    Xrc x;

    xrc_init(&x, 14);
    /* WRITE of 2.5 MTU into B, then READ it back into another place. */
    fill(&x.a, 0, 2 * MTU + 512, 7);
    ini_post(&x, 0xa1, VHCA_WR_RDMA_WRITE, x.srq1.srqn, 0, 2 * MTU + 512,
             x.b.buf + TARGET_OFF);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&x.a, 0, &x.b, TARGET_OFF, 2 * MTU + 512);
    g_assert_cmphex(parse_last(&x.wa).tp.bth.opcode, ==,
                    VHCA_IB_OPCODE(XRC, RDMA_WRITE_LAST));

    ini_post(&x, 0xa2, VHCA_WR_RDMA_READ, x.srq2.srqn, 0x8000,
             2 * MTU + 512, x.b.buf + TARGET_OFF);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_same(&x.a, 0x8000, &x.b, TARGET_OFF, 2 * MTU + 512);
    g_assert_cmphex(parse_last(&x.wb).tp.bth.opcode, ==,
                    VHCA_IB_OPCODE(XRC, RDMA_READ_RESPONSE_LAST));

    /* Atomics: 40 + 2, then compare 42 and swap 7. */
    ram_write(x.b.h, x.b.buf + TARGET_OFF + 0x1000, &v, sizeof(v));
    ini_atomic(&x, 0xa3, VHCA_WR_ATOMIC_FETCH_AND_ADD, x.srq1.srqn, 0x9000,
               x.b.buf + TARGET_OFF + 0x1000, 2, 0);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_FETCH_ADD);
    ram_read(x.a.h, x.a.buf + 0x9000, &got, sizeof(got));
    g_assert_cmpuint(GUINT64_FROM_LE(got), ==, 40);
    g_assert_cmphex(parse_last(&x.wb).tp.bth.opcode, ==,
                    VHCA_IB_OPCODE(XRC, ATOMIC_ACKNOWLEDGE));
    ini_atomic(&x, 0xa4, VHCA_WR_ATOMIC_CMP_AND_SWP, x.srq2.srqn, 0x9008,
               x.b.buf + TARGET_OFF + 0x1000, 42, 7);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa4, VHCA_WC_SUCCESS, VHCA_WC_COMP_SWAP);
    ram_read(x.a.h, x.a.buf + 0x9008, &got, sizeof(got));
    g_assert_cmpuint(GUINT64_FROM_LE(got), ==, 42);
    ram_read(x.b.h, x.b.buf + TARGET_OFF + 0x1000, &got, sizeof(got));
    g_assert_cmpuint(GUINT64_FROM_LE(got), ==, 7);
    g_assert_cmpuint(parse_last(&x.wa).tp.xrc_srqn, ==, x.srq2.srqn);

    /* WRITE with immediate: a WQE of SRQ 2, completing to its CQ. */
    srq_post(&x.b, &x.srq2, 0x2f0, 3);
    ini_post(&x, 0xa5, VHCA_WR_RDMA_WRITE_WITH_IMM, x.srq2.srqn, 0,
             MTU + 1, x.b.buf + TARGET_OFF + 0x4000);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa5, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    cqe = expect_recv(&x, &x.rcq2, 0x2f0, VHCA_WC_SUCCESS,
                      VHCA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(cqe.byte_len, ==, MTU + 1);
    expect_same(&x.a, 0, &x.b, TARGET_OFF + 0x4000, MTU + 1);
    expect_no_cqe(&x.b, &x.b.rcq);
    g_assert_cmpuint(srq_taken(&x.b, &x.srq1), ==, 0);
    xrc_free(&x);
}

/* ---------------------------------------------------------------------- */
/* The target's SRQ rule                                                  */
/* ---------------------------------------------------------------------- */

/*
 * A request naming an SRQ the target may not use is NAKed remote access
 * error: the initiator's WQE completes REM_ACCESS_ERR with the peer's
 * NAK code, the target posts QP_ACCESS_ERR and goes to ERR, and no
 * receive WQE anywhere is taken.
 */
static void expect_refused(Xrc *x, uint32_t srqn, uint8_t opcode)
{
    uint32_t aeq = aeq_drain(x->b.h);
    struct vhca_cqe cqe;

    ini_post(x, 0xe1, opcode, srqn, 0, 64, x->b.buf + TARGET_OFF);
    settle(x);
    cqe = expect_cqe(&x->a, &x->a.scq, 0xe1, VHCA_WC_REM_ACCESS_ERR,
                     vhca_send_wc_opcode(opcode));
    g_assert_cmphex(cqe.vendor_err, ==,
                    VHCA_VENDOR_ERR_NAK | VHCA_IB_NAK_REMOTE_ACCESS);
    g_assert_cmpuint(counter(x->b.h, VHCA_CNT_REM_ACCESS_NAK_SENT), ==, 1);
    g_assert_cmpuint(qp_state(x->b.h, x->tgt_qpn), ==, VHCA_QPS_ERR);
    g_assert_true(qp_event_since(x->b.h, aeq, VHCA_EVENT_QP_ACCESS_ERR,
                                 x->tgt_qpn));
    expect_no_cqe(&x->b, &x->b.rcq);
    expect_no_cqe(&x->b, &x->rcq2);
    g_assert_cmpuint(srq_taken(&x->b, &x->srq1), ==, 0);
}

/* An XRC SRQ of another XRC domain (annex A14). */
static void test_wrong_domain(void)
{
    TestSrq other;
    uint32_t xrcd2;
    Xrc x;

    xrc_init(&x, 14);
    xrcd2 = xrcd_alloc(x.b.h);
    g_assert_cmpuint(srq_create(&x.b, &other, VHCA_SRQT_XRC, x.b.pdn, xrcd2,
                                x.b.rcq.cqn), ==, VHCA_ST_OK);
    srq_post(&x.b, &other, 0x301, 0);
    srq_post(&x.b, &x.srq1, 0x101, 1);
    expect_refused(&x, other.srqn, VHCA_WR_SEND);
    g_assert_cmpuint(srq_taken(&x.b, &other), ==, 0);
    xrc_free(&x);
}

/* A basic SRQ is no XRC SRQ, whatever its domain-less PD allows. */
static void test_basic_srq_named(void)
{
    TestSrq basic;
    Xrc x;

    xrc_init(&x, 14);
    g_assert_cmpuint(srq_create(&x.b, &basic, VHCA_SRQT_BASIC, x.b.pdn, 0, 0),
                     ==, VHCA_ST_OK);
    srq_post(&x.b, &basic, 0x401, 0);
    expect_refused(&x, basic.srqn, VHCA_WR_SEND);
    g_assert_cmpuint(srq_taken(&x.b, &basic), ==, 0);
    xrc_free(&x);
}

/* No SRQ at all, for an RDMA WRITE: nothing is written either. */
static void test_unknown_srq(void)
{
    static const uint8_t zero[64];
    Xrc x;

    xrc_init(&x, 14);
    fill(&x.a, 0, 64, 3);
    expect_refused(&x, 77, VHCA_WR_RDMA_WRITE);
    g_assert_cmpmem(ram_ptr(x.b.h, x.b.buf + TARGET_OFF, 64), 64, zero, 64);
    xrc_free(&x);
}

/*
 * The SRQ's PD, not anything of the target, is what memory is checked
 * in: B's MR is in B's first PD; an XRC SRQ of a second PD may not
 * reach it (remote access error), one of the first PD may.
 */
static void test_pd_of_srq(void)
{
    TestSrq other_pd;
    Xrc x;

    xrc_init(&x, 14);
    g_assert_cmpuint(srq_create(&x.b, &other_pd, VHCA_SRQT_XRC,
                                rdma_create_pd(x.b.h), x.xrcdn,
                                x.b.rcq.cqn), ==, VHCA_ST_OK);
    expect_refused(&x, other_pd.srqn, VHCA_WR_RDMA_WRITE);
    xrc_free(&x);
}

/* An empty XRC SRQ is an empty RQ: RNR NAK, then success once posted. */
static void test_rnr(void)
{
    Xrc x;

    xrc_init(&x, 14);
    fill(&x.a, 0, 1500, 9);
    ini_post(&x, 0xa1, VHCA_WR_SEND, x.srq2.srqn, 0, 1500, 0);
    harness_pair_settle(x.a.h, x.b.h, 0);
    g_assert_cmpuint(counter(x.b.h, VHCA_CNT_RNR_NAK_SENT), ==, 1);
    g_assert_cmpuint(x.b.h->ev.nak_sent.qpn, ==, x.tgt_qpn);
    expect_no_cqe(&x.a, &x.a.scq);
    srq_post(&x.b, &x.srq2, 0x2a1, 0);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_recv(&x, &x.rcq2, 0x2a1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_same(&x.a, 0, &x.b, RECV_OFF, 1500);
    xrc_free(&x);
}

/*
 * Loss between the two: a fifth of the frames either way, at random
 * (seeded), for the first 80 each way.  The RC retransmission brings
 * every SEND, WRITE and READ home, in order, to the right SRQs.
 */
static void test_loss(void)
{
    GRand *rand = g_rand_new_with_seed(0x5ac);
    Xrc x;
    unsigned i;

    xrc_init(&x, 10);               /* 4 ms local ACK timeout */
    x.wa.rand = rand;
    x.wa.loss = 0.2;
    x.wa.calm_after = 80;
    x.wb.rand = rand;
    x.wb.loss = 0.2;
    x.wb.calm_after = 80;
    for (i = 0; i < 6; i++) {
        srq_post(&x.b, i & 1 ? &x.srq2 : &x.srq1, 0x100 + i, i);
        fill(&x.a, i * SLOT, 3 * MTU + 100, 20 + i);
    }
    for (i = 0; i < 6; i++) {
        ini_post(&x, 0xa0 + i, VHCA_WR_SEND, i & 1 ? x.srq2.srqn
                                                   : x.srq1.srqn,
                 i * SLOT, 3 * MTU + 100, 0);
    }
    ini_post(&x, 0xb0, VHCA_WR_RDMA_WRITE, x.srq1.srqn, 0, 3 * MTU + 100,
             x.b.buf + TARGET_OFF);
    ini_post(&x, 0xb1, VHCA_WR_RDMA_READ, x.srq2.srqn, 0x8000,
             3 * MTU + 100, x.b.buf + TARGET_OFF);
    settle(&x);
    for (i = 0; i < 6; i++) {
        expect_cqe(&x.a, &x.a.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    }
    expect_cqe(&x.a, &x.a.scq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&x.a, &x.a.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    for (i = 0; i < 6; i += 2) {
        expect_recv(&x, &x.b.rcq, 0x100 + i, VHCA_WC_SUCCESS, VHCA_WC_RECV);
        expect_same(&x.a, i * SLOT, &x.b, RECV_OFF + i * SLOT,
                    3 * MTU + 100);
    }
    for (i = 1; i < 6; i += 2) {
        expect_recv(&x, &x.rcq2, 0x100 + i, VHCA_WC_SUCCESS, VHCA_WC_RECV);
        expect_same(&x.a, i * SLOT, &x.b, RECV_OFF + i * SLOT,
                    3 * MTU + 100);
    }
    expect_same(&x.a, 0, &x.b, TARGET_OFF, 3 * MTU + 100);
    expect_same(&x.a, 0x8000, &x.b, TARGET_OFF, 3 * MTU + 100);
    expect_no_cqe(&x.b, &x.b.rcq);
    expect_no_cqe(&x.b, &x.rcq2);
    g_assert_cmpuint(x.wa.dropped + x.wb.dropped, >, 0);
    g_assert_cmpuint(counter(x.a.h, VHCA_CNT_RETRANSMITTED_PKTS), >, 0);
    g_assert_cmpuint(counter(x.b.h, VHCA_CNT_DUPLICATE_REQUEST) +
                     counter(x.b.h, VHCA_CNT_OUT_OF_SEQ_REQUEST), >, 0);
    xrc_free(&x);
    g_rand_free(rand);
}

/*
 * The target moved to ERR in the middle of a SEND: the WQE it took from
 * the SRQ completes WR_FLUSH_ERR on that SRQ's CQ; the SRQ goes on.
 */
static void test_flush_held(void)
{
    struct vhca_qp_attr a;
    Xrc x;

    xrc_init(&x, 14);
    srq_post(&x.b, &x.srq2, 0x2b1, 0);
    srq_post(&x.b, &x.srq2, 0x2b2, 1);
    /* Only the SEND's FIRST packet arrives. */
    x.wa.burst_phase = 1;
    x.wa.burst_len = 1000;
    x.wa.burst_every = 1000;
    fill(&x.a, 0, 3 * MTU, 4);
    ini_post(&x, 0xa1, VHCA_WR_SEND, x.srq2.srqn, 0, 3 * MTU, 0);
    harness_pair_settle(x.a.h, x.b.h, 0);
    g_assert_cmpuint(srq_taken(&x.b, &x.srq2), ==, 1);
    expect_no_cqe(&x.b, &x.rcq2);
    memset(&a, 0, sizeof(a));
    a.qpn = x.tgt_qpn;
    qp_modify_ok(x.b.h, &a, VHCA_QPS_ERR, 0);
    expect_recv(&x, &x.rcq2, 0x2b1, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_RECV);
    expect_no_cqe(&x.b, &x.rcq2);
    expect_no_cqe(&x.b, &x.b.rcq);
    g_assert_cmpuint(srq_taken(&x.b, &x.srq2), ==, 1);
    xrc_free(&x);
}

/* ---------------------------------------------------------------------- */
/* Objects                                                                */
/* ---------------------------------------------------------------------- */

static void collect_line(void *opaque, const char *line)
{
    g_ptr_array_add(opaque, g_strdup(line));
}

/* Does a line of @h's dump start with @prefix and contain @part? */
static bool dump_has(Harness *h, const char *prefix, const char *part)
{
    g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
    bool found = false;

    vhca_core_dump(&h->core, collect_line, lines);
    for (guint i = 0; i < lines->len; i++) {
        const char *line = lines->pdata[i];

        found |= g_str_has_prefix(line, prefix) && strstr(line, part);
    }
    return found;
}

/*
 * Domains in use stay; the dump shows the XRC objects; QUERY_QP of the
 * XRC QPs; an initiator's RQ
 * doorbell is ignored; an XRC SRQ goes while the target lives; reset
 * frees every domain.
 */
static void test_objects(void)
{
    struct vhca_qp_attr q;
    Harness *hb;
    Xrc x;

    xrc_init(&x, 14);
    hb = x.b.h;
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DEALLOC_XRCD, x.xrcdn), ==,
                     VHCA_ST_BUSY);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DESTROY_CQ, x.rcq2.cqn), ==,
                     VHCA_ST_BUSY);
    g_assert_cmpuint(hb->core.xrcd_users[x.xrcdn], ==, 3);
    g_assert_true(dump_has(hb, "xrcd 1 ", "users 3"));
    g_assert_true(dump_has(hb, "srq 2 ", " xrc xrcdn 1 cqn 3"));
    g_assert_true(dump_has(hb, "qp 3 type XRC_TGT state RTS", " xrcdn 1"));
    g_assert_false(dump_has(hb, "qp 3 ", " sq "));
    g_assert_true(dump_has(x.a.h, "qp 2 type XRC_INI state RTS", " sq 0/32"));
    g_assert_false(dump_has(x.a.h, "qp 2 ", " rq "));

    g_assert_cmpuint(rdma_query_qp(hb, x.tgt_qpn, &q), ==, VHCA_ST_OK);
    g_assert_cmpuint(q.max_send_wr, ==, 0);
    g_assert_cmpuint(q.max_recv_wr, ==, 0);
    g_assert_cmpuint(q.qp_state, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(rdma_query_qp(x.a.h, x.a.qp.qpn, &q), ==, VHCA_ST_OK);
    g_assert_cmpuint(q.max_send_wr, ==, 32);
    g_assert_cmpuint(q.max_recv_wr, ==, 0);

    /* IBTA 1.5's FLUSH and ATOMIC WRITE are RC only. */
    ini_post(&x, 0xf1, VHCA_WR_ATOMIC_WRITE, x.srq1.srqn, 0, 0,
             x.b.buf + TARGET_OFF);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xf1, VHCA_WC_LOC_QP_OP_ERR,
               vhca_send_wc_opcode(VHCA_WR_ATOMIC_WRITE));
    g_assert_cmpuint(qp_state(x.a.h, x.a.qp.qpn), ==, VHCA_QPS_ERR);

    /* The initiator has no RQ to ring. */
    ring_doorbell(x.a.h, x.a.page, VHCA_DB_RQ, x.a.qp.qpn, 1);
    g_assert_cmpuint(x.a.h->core.qps[x.a.qp.qpn].rq.pi, ==, 0);

    /* XRC SRQs go while the target lives (none is attached to them). */
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DESTROY_SRQ, x.srq1.srqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DESTROY_SRQ, x.srq2.srqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DESTROY_CQ, x.rcq2.cqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DEALLOC_XRCD, x.xrcdn), ==,
                     VHCA_ST_BUSY);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DESTROY_QP, x.tgt_qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DEALLOC_XRCD, x.xrcdn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(hb, VHCA_CMD_DEALLOC_XRCD, x.xrcdn), ==,
                     VHCA_ST_BAD_INDEX);

    /* Reset frees the domains: the first handle comes back. */
    g_assert_cmpuint(xrcd_alloc(hb), ==, 1);
    g_assert_cmpuint(xrcd_alloc(hb), ==, 2);
    vhca_core_reset(&hb->core);
    g_assert_false(vhca_ids_used(&hb->core.xrcd_ids, 1));
    g_assert_cmpuint(hb->core.xrcd_users[1], ==, 0);
    xrc_free(&x);
}

/*
 * Destroying an XRC SRQ while the target holds one of its WQEs for a
 * SEND in progress: the WQE is dropped without a completion, and the
 * rest of the SEND names an SRQ that is gone (remote access error).
 */
static void test_srq_destroyed_mid_message(void)
{
    struct vhca_cqe cqe;
    Xrc x;

    xrc_init(&x, 10);
    srq_post(&x.b, &x.srq2, 0x2c1, 0);
    x.wa.burst_phase = 1;
    x.wa.burst_len = 1000;
    x.wa.burst_every = 1000;
    fill(&x.a, 0, 3 * MTU, 4);
    ini_post(&x, 0xa1, VHCA_WR_SEND, x.srq2.srqn, 0, 3 * MTU, 0);
    harness_pair_settle(x.a.h, x.b.h, 0);
    g_assert_true(x.b.h->core.qps[x.tgt_qpn].resp.rwqe_held);
    g_assert_cmpuint(rdma_destroy(x.b.h, VHCA_CMD_DESTROY_SRQ, x.srq2.srqn),
                     ==, VHCA_ST_OK);
    g_assert_false(x.b.h->core.qps[x.tgt_qpn].resp.rwqe_held);
    x.wa.burst_every = 0;           /* the retransmission gets through */
    settle(&x);
    cqe = expect_cqe(&x.a, &x.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
                     VHCA_WC_SEND);
    g_assert_cmphex(cqe.vendor_err, ==,
                    VHCA_VENDOR_ERR_NAK | VHCA_IB_NAK_REMOTE_ACCESS);
    g_assert_cmpuint(qp_state(x.b.h, x.tgt_qpn), ==, VHCA_QPS_ERR);
    expect_no_cqe(&x.b, &x.rcq2);
    xrc_free(&x);
}

/* The Modify QP rows: what each XRC type refuses that RC takes. */
static void test_modify_rows(void)
{
    struct vhca_qp_attr a;
    Node n;
    TestQp ini;
    uint32_t xrcdn, tgt;

    node_init(&n, 1, VHCA_QPT_RC);
    g_assert_cmpuint(ini_create(&n, &ini), ==, VHCA_ST_OK);
    xrcdn = xrcd_alloc(n.h);
    g_assert_cmpuint(tgt_create(n.h, xrcdn, &tgt), ==, VHCA_ST_OK);
    g_assert_cmpuint(n.h->core.qps[tgt].db_page, ==,
                     VHCA_DB_PAGE_KERNEL_NONE);
    qp_good_attr(&a, ini.qpn);
    a.qp_state = VHCA_QPS_INIT;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                  VHCA_QP_ACCESS_FLAGS;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_OK);
    a.qpn = tgt;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_OK);
    /* The initiator has no responder: no MAX_DEST_RD_ATOMIC. */
    a.qpn = ini.qpn;
    a.qp_state = VHCA_QPS_RTR;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_AV | VHCA_QP_PATH_MTU |
                  VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                  VHCA_QP_MAX_DEST_RD_ATOMIC;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_BAD_PARAM);
    a.attr_mask &= ~VHCA_QP_MAX_DEST_RD_ATOMIC;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_OK);
    /* The target does not retry: no RETRY_CNT. */
    a.qpn = tgt;
    a.attr_mask |= VHCA_QP_MAX_DEST_RD_ATOMIC | VHCA_QP_MIN_RNR_TIMER;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_OK);
    a.qp_state = VHCA_QPS_RTS;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_TIMEOUT | VHCA_QP_SQ_PSN |
                  VHCA_QP_RETRY_CNT;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_BAD_PARAM);
    a.attr_mask &= ~VHCA_QP_RETRY_CNT;
    g_assert_cmpuint(rdma_modify_qp(n.h, &a), ==, VHCA_ST_OK);
    harness_free(n.h);
}

/* A BIND_MW on @n's QP @qp (a node's SQ), run at once. */
static void bind_mw_on(Node *n, TestQp *qp, uint64_t wr_id, uint32_t mw,
                       uint8_t tag, uint32_t mr, uint64_t addr, uint64_t len,
                       uint32_t access)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_BIND_MW, VHCA_WQE_SIGNALED);
    w.rkey = GUINT32_TO_LE(mw);
    w.imm_or_inv = GUINT32_TO_LE((mw & ~0xffu) | tag);
    w.mw_mr_lkey = GUINT32_TO_LE(mr);
    w.mw_addr = GUINT64_TO_LE(addr);
    w.mw_length = GUINT64_TO_LE(len);
    w.mw_access = GUINT32_TO_LE(access);
    qp_put_send_wqe(n->h, qp, &w);
    ring_doorbell(n->h, qp->db_page, VHCA_DB_SQ, qp->qpn, qp->sq_pi);
    harness_run(n->h);
}

/*
 * Memory windows over XRC (spec "Memory windows"): an initiator binds;
 * a target checks a window in the named SRQ's PD, and a type 2 window
 * is tied to the QP that bound it, never a target: refused.
 */
static void test_memory_windows(void)
{
    struct vhca_cqe cqe;
    struct vhca_send_wqe w;
    uint32_t mr, mw1, mw2;
    Xrc x;

    xrc_init(&x, 14);
    /* The initiator binds a window of its own. */
    mr = rdma_create_phys_mr(x.a.h, x.a.pdn, x.a.buf, 4096,
                             VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_MW_BIND);
    g_assert_cmpuint(alloc_mw_in(x.a.h, x.a.pdn, VHCA_MW_TYPE_1, &mw1), ==,
                     VHCA_ST_OK);
    bind_mw_on(&x.a, &x.a.qp, 0xa0, mw1, 0x01, mr, x.a.buf, 4096,
               VHCA_ACCESS_REMOTE_READ);
    expect_cqe(&x.a, &x.a.scq, 0xa0, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);

    /* B binds through its own RC QP: type 1 and type 2 windows. */
    qp_connect(x.b.h, x.b.qp.qpn, x.a.gid, x.a.h->core.cfg.mac, 0x99,
               &default_opts, 0, 0);
    mr = rdma_create_phys_mr(x.b.h, x.b.pdn, x.b.buf + TARGET_OFF, 4096,
                             ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    g_assert_cmpuint(alloc_mw_in(x.b.h, x.b.pdn, VHCA_MW_TYPE_1, &mw1), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(alloc_mw_in(x.b.h, x.b.pdn, VHCA_MW_TYPE_2, &mw2), ==,
                     VHCA_ST_OK);
    bind_mw_on(&x.b, &x.b.qp, 0xb1, mw1, 0x11, mr, x.b.buf + TARGET_OFF,
               4096, VHCA_ACCESS_REMOTE_WRITE);
    bind_mw_on(&x.b, &x.b.qp, 0xb2, mw2, 0x22, mr, x.b.buf + TARGET_OFF,
               4096, VHCA_ACCESS_REMOTE_WRITE);
    cqe = expect_cqe(&x.b, &x.b.scq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    expect_cqe(&x.b, &x.b.scq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_BIND_MW);

    /* A writes into B through the type 1 window's key. */
    fill(&x.a, 0, 100, 3);
    wqe_init(&w, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    wqe_sge(&w, x.a.buf, 100, x.a.key);
    wqe_remote(&w, x.b.buf + TARGET_OFF + 8, (mw1 & ~0xffu) | 0x11);
    w.xrc_srqn = GUINT32_TO_LE(x.srq1.srqn);
    qp_put_send_wqe(x.a.h, &x.a.qp, &w);
    /* Then through the type 2 window's: tied to B's RC QP, refused. */
    wqe_init(&w, 0xa2, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    wqe_sge(&w, x.a.buf, 8, x.a.key);
    wqe_remote(&w, x.b.buf + TARGET_OFF, (mw2 & ~0xffu) | 0x22);
    w.xrc_srqn = GUINT32_TO_LE(x.srq1.srqn);
    qp_put_send_wqe(x.a.h, &x.a.qp, &w);
    ring_doorbell(x.a.h, x.a.qp.db_page, VHCA_DB_SQ, x.a.qp.qpn,
                  x.a.qp.sq_pi);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&x.a, 0, &x.b, TARGET_OFF + 8, 100);
    expect_cqe(&x.a, &x.a.scq, 0xa2, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(qp_state(x.b.h, x.tgt_qpn), ==, VHCA_QPS_ERR);
    xrc_free(&x);
}

/* ---------------------------------------------------------------------- */
/* SEND with Invalidate (issue 25)                                        */
/* ---------------------------------------------------------------------- */

#define FR_OFF          0x30000             /* B's pages a fast MR maps */
#define FR_PAGES        2
#define FR_IOVA         0x6000000000ull
#define FR_LEN          (FR_PAGES * 4096)

/*
 * A fast-register MR of B's PD (that of srq1 and srq2) over FR_LEN chunk
 * @chunk of B's buffer from FR_OFF, made valid with tag @tag by a REG_MR
 * on B's RC QP (connected once, by the caller): its new key.
 */
static uint32_t reg_b(Xrc *x, uint8_t tag, uint32_t chunk, uint64_t wr_id)
{
    struct vhca_send_wqe w;
    uint32_t key = (node_fast_mr(&x->b, FR_PAGES, tag - 1) & ~0xffu) | tag;

    wqe_reg_mr(&x->b, &w, wr_id, key, FR_OFF + chunk * FR_LEN, FR_PAGES,
               FR_IOVA, FR_LEN, ACCESS_ALL);
    qp_put_send_wqe(x->b.h, &x->b.qp, &w);
    ring_sq(&x->b);
    harness_run(x->b.h);
    expect_cqe(&x->b, &x->b.scq, wr_id, VHCA_WC_SUCCESS, VHCA_WC_REG_MR);
    g_assert_cmpint(vhca_mr_check(&x->b.h->core, key, x->b.pdn, 0, FR_IOVA,
                                  FR_LEN, VHCA_ACCESS_REMOTE_WRITE, NULL),
                    ==, VHCA_MR_OK);
    return key;
}

static void connect_b_rc(Xrc *x)
{
    /* B's RC QP (node_init's, in B's PD) only registers: no peer. */
    qp_connect(x->b.h, x->b.qp.qpn, x->a.gid, x->a.h->core.cfg.mac, 0x99,
               &default_opts, 0, 0);
}

/*
 * IBTA 9.4.1.1 and annex A14: a SEND with Invalidate to an XRC target
 * invalidates a fast-register MR of the PD of the XRC SRQ it names (the
 * target has no PD of its own), one packet or several; the receive
 * completes WITH_INV and the key on that SRQ's CQ, and the key grants
 * nothing after.
 */
static void test_send_with_inv(void)
{
    static const struct {
        bool second;                /* srq2 (rcq2), else srq1 (B's rcq) */
        uint32_t len;
        uint8_t last_op;
    } msgs[] = {
        { true, 100, VHCA_IB_OP_SEND_ONLY_INV },
        { false, 2 * MTU + 100, VHCA_IB_OP_SEND_LAST_INV },
    };
    uint32_t keys[G_N_ELEMENTS(msgs)];
    Xrc x;
    unsigned i;

    xrc_init(&x, 14);
    connect_b_rc(&x);
    for (i = 0; i < G_N_ELEMENTS(msgs); i++) {
        keys[i] = reg_b(&x, 0x51 + 2 * i, i, 0xb1 + i);
    }
    for (i = 0; i < G_N_ELEMENTS(msgs); i++) {
        TestSrq *srq = msgs[i].second ? &x.srq2 : &x.srq1;
        TestCq *cq = msgs[i].second ? &x.rcq2 : &x.b.rcq;
        VhcaWirePacket req;
        struct vhca_cqe cqe;

        /* The key works through the SRQ's PD before the SEND. */
        fill(&x.a, 0x8000, 64, 30 + i);
        ini_post_key(&x, 0xc0 + i, VHCA_WR_RDMA_WRITE, srq->srqn, 0x8000, 64,
                     FR_IOVA, keys[i]);
        settle(&x);
        expect_cqe(&x.a, &x.a.scq, 0xc0 + i, VHCA_WC_SUCCESS,
                   VHCA_WC_RDMA_WRITE);
        expect_same(&x.a, 0x8000, &x.b, FR_OFF + i * FR_LEN, 64);

        srq_post(&x.b, srq, 0x100 + i, i);
        fill(&x.a, i * SLOT, msgs[i].len, 10 + i);
        ini_post_key(&x, 0xa0 + i, VHCA_WR_SEND_WITH_INV, srq->srqn,
                     i * SLOT, msgs[i].len, 0, keys[i]);
        settle(&x);
        expect_cqe(&x.a, &x.a.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        cqe = expect_recv(&x, cq, 0x100 + i, VHCA_WC_SUCCESS, VHCA_WC_RECV);
        g_assert_cmpuint(cqe.flags, ==, VHCA_CQE_WITH_INV);
        g_assert_cmphex(GUINT32_FROM_LE(cqe.imm_or_inv), ==, keys[i]);
        g_assert_cmpuint(cqe.byte_len, ==, msgs[i].len);
        expect_same(&x.a, i * SLOT, &x.b, RECV_OFF + i * SLOT, msgs[i].len);
        req = parse_last(&x.wa);
        g_assert_cmphex(req.tp.bth.opcode, ==,
                        VHCA_IB_TRANSPORT_XRC | msgs[i].last_op);
        g_assert_cmphex(req.tp.inv_rkey, ==, keys[i]);
        g_assert_cmpuint(req.tp.xrc_srqn, ==, srq->srqn);

        /* Invalidated: free, and the key grants nothing. */
        g_assert_false(x.b.h->core.mrs[keys[i] >> 8].valid);
        g_assert_cmpint(vhca_mr_check(&x.b.h->core, keys[i], x.b.pdn, 0,
                                      FR_IOVA, 8, VHCA_ACCESS_REMOTE_WRITE,
                                      NULL), !=, VHCA_MR_OK);
        g_assert_cmpuint(qp_state(x.b.h, x.tgt_qpn), ==, VHCA_QPS_RTS);
    }
    expect_no_cqe(&x.b, &x.b.rcq);
    expect_no_cqe(&x.b, &x.rcq2);
    g_assert_cmpuint(counter(x.b.h, VHCA_CNT_INV_REQ_NAK_SENT), ==, 0);

    /* An RDMA WRITE through an invalidated key: remote access error. */
    ini_post_key(&x, 0xd0, VHCA_WR_RDMA_WRITE, x.srq1.srqn, 0x8000, 8,
                 FR_IOVA, keys[0]);
    settle(&x);
    expect_cqe(&x.a, &x.a.scq, 0xd0, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(qp_state(x.b.h, x.tgt_qpn), ==, VHCA_QPS_ERR);
    xrc_free(&x);
}

/*
 * The key of an MR of B's PD through an XRC SRQ of another PD (of the
 * same domain; its receive buffer an MR of that PD): not the SRQ's PD,
 * so an invalid request, NAKed; the receive WQE completes REM_INV_REQ_ERR
 * and the MR stays valid.
 */
static void test_send_with_inv_other_pd(void)
{
    TestSrq other;
    struct vhca_cqe cqe;
    uint32_t pd2, lkey2, key;
    Xrc x;

    xrc_init(&x, 14);
    connect_b_rc(&x);
    key = reg_b(&x, 0x61, 0, 0xb1);
    pd2 = rdma_create_pd(x.b.h);
    lkey2 = rdma_create_phys_mr(x.b.h, pd2, x.b.buf + RECV_OFF, 8 * SLOT,
                                VHCA_ACCESS_LOCAL_WRITE);
    g_assert_cmpuint(srq_create(&x.b, &other, VHCA_SRQT_XRC, pd2, x.xrcdn,
                                x.b.rcq.cqn), ==, VHCA_ST_OK);
    srq_post_lkey(&x.b, &other, 0x301, 0, lkey2);
    fill(&x.a, 0, 100, 5);
    ini_post_key(&x, 0xa1, VHCA_WR_SEND_WITH_INV, other.srqn, 0, 100, 0,
                 key);
    settle(&x);
    cqe = expect_cqe(&x.a, &x.a.scq, 0xa1, VHCA_WC_REM_INV_REQ_ERR,
                     VHCA_WC_SEND);
    g_assert_cmphex(cqe.vendor_err, ==,
                    VHCA_VENDOR_ERR_NAK | VHCA_IB_NAK_INVALID_REQUEST);
    expect_recv(&x, &x.b.rcq, 0x301, VHCA_WC_REM_INV_REQ_ERR, VHCA_WC_RECV);
    g_assert_cmpuint(counter(x.b.h, VHCA_CNT_INV_REQ_NAK_SENT), ==, 1);
    g_assert_cmpuint(qp_state(x.b.h, x.tgt_qpn), ==, VHCA_QPS_ERR);
    g_assert_true(x.b.h->core.mrs[key >> 8].valid);
    g_assert_cmpint(vhca_mr_check(&x.b.h->core, key, x.b.pdn, 0, FR_IOVA,
                                  FR_LEN, VHCA_ACCESS_REMOTE_WRITE, NULL),
                    ==, VHCA_MR_OK);
    xrc_free(&x);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/xrc/send-two-srqs", test_send_two_srqs);
    g_test_add_func("/vhca/xrc/rdma-and-atomics", test_rdma_and_atomics);
    g_test_add_func("/vhca/xrc/wrong-domain", test_wrong_domain);
    g_test_add_func("/vhca/xrc/basic-srq-named", test_basic_srq_named);
    g_test_add_func("/vhca/xrc/unknown-srq", test_unknown_srq);
    g_test_add_func("/vhca/xrc/pd-of-srq", test_pd_of_srq);
    g_test_add_func("/vhca/xrc/rnr", test_rnr);
    g_test_add_func("/vhca/xrc/loss", test_loss);
    g_test_add_func("/vhca/xrc/flush-held", test_flush_held);
    g_test_add_func("/vhca/xrc/srq-destroyed-mid-message",
                    test_srq_destroyed_mid_message);
    g_test_add_func("/vhca/xrc/objects", test_objects);
    g_test_add_func("/vhca/xrc/modify-rows", test_modify_rows);
    g_test_add_func("/vhca/xrc/memory-windows", test_memory_windows);
    g_test_add_func("/vhca/xrc/send-with-inv", test_send_with_inv);
    g_test_add_func("/vhca/xrc/send-with-inv-other-pd",
                    test_send_with_inv_other_pd);
    return g_test_run();
}
