/*
 * Unit tests of the engine's state description (issue 30; vhca-state.c,
 * docs/developer-guide.rst "Migration: the engine's state"): objects of
 * every type made through the admin commands, an RC message cut in the
 * middle on both sides, saved, loaded into fresh engines, saved again
 * byte for byte, then finished; and damaged streams, each refused with
 * the target engine unchanged.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include <libdeflate.h>

#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-state.h"

#define MSG_LEN         (16 * 1024)         /* 16 packets at MTU 1024 */
#define RECV_OFF        0x10000
#define PASS_FRAMES     5                   /* then the wire is cut */

static char err[256];

static int no_dma(void *opaque, uint64_t addr, void *buf, size_t len)
{
    (void)opaque, (void)addr, (void)buf, (void)len;
    return -1;
}

static int no_dma_write(void *opaque, uint64_t addr, const void *buf,
                        size_t len)
{
    (void)opaque, (void)addr, (void)buf, (void)len;
    return -1;
}

static const VhcaCoreOps quiet = {
    .dma_read = no_dma,
    .dma_write = no_dma_write,
};

/* The wire passes the first frames, then loses every one. */
static unsigned pass_left, cut_lost;

static void cut_hook(Harness *h, const uint8_t *buf, size_t len)
{
    if (pass_left) {
        pass_left--;
        harness_deliver(h->peer, buf, len);
    } else {
        cut_lost++;
    }
}

/* A wire to nowhere: what a loaded engine sends is counted, no more. */
static void lost_hook(Harness *h, const uint8_t *buf, size_t len)
{
    (void)h, (void)buf, (void)len;
}

static VhcaStateBuf save(Harness *h)
{
    VhcaStateBuf b = { 0 };

    g_assert_cmpint(vhca_state_save(&h->core, &b, err, sizeof(err)), ==, 0);
    g_assert_cmpuint(b.len, >, 16);
    return b;
}

static void expect_same_bytes(const VhcaStateBuf *x, const VhcaStateBuf *y)
{
    g_assert_cmpuint(x->len, ==, y->len);
    g_assert_true(memcmp(x->data, y->data, x->len) == 0);
}

/*
 * The engine's objects as structs, host pointers cleared, to compare the
 * loaded engine with the saved one field by field: a field the stream
 * forgot differs here even where the saved bytes agree.
 */
typedef struct Snap {
    VhcaCore *core;                 /* pointers and scheduler cleared */
    VhcaQp *qps;
    VhcaCq *cqs;
    VhcaSrq *srqs;
    VhcaMr *mrs;
    VhcaPd *pds;
    size_t nqp;
} Snap;

static void snap_take(Snap *s, const VhcaCore *c)
{
    size_t i;

    s->nqp = c->cfg.max_qp + VHCA_FIRST_QPN;
    s->core = g_memdup2(c, sizeof(*c));
    s->qps = g_memdup2(c->qps, s->nqp * sizeof(*c->qps));
    s->cqs = g_memdup2(c->cqs, (c->cfg.max_cq + 1) * sizeof(*c->cqs));
    s->srqs = g_memdup2(c->srqs, (c->cfg.max_srq + 1) * sizeof(*c->srqs));
    s->mrs = g_memdup2(c->mrs, (c->cfg.max_mr + 1) * sizeof(*c->mrs));
    s->pds = g_memdup2(c->pds, (c->cfg.max_pd + 1) * sizeof(*c->pds));
    for (i = 0; i < s->nqp; i++) {
        VhcaQp *qp = &s->qps[i];

        qp->sq.pages = qp->rq.pages = NULL;
        qp->req.win = NULL;
        qp->resp.res = NULL;
        memset(&qp->rxq_req, 0, sizeof(qp->rxq_req));
        memset(&qp->rxq_resp, 0, sizeof(qp->rxq_resp));
    }
    for (i = 0; i <= c->cfg.max_cq; i++) {
        s->cqs[i].pages = NULL;
    }
    for (i = 0; i <= c->cfg.max_srq; i++) {
        s->srqs[i].pages = NULL;
    }
    for (i = 0; i <= VHCA_MAX_COMP_EQS; i++) {
        s->core->comp_eqs[i].pages = NULL;
    }
}

static void snap_free(Snap *s)
{
    g_free(s->core);
    g_free(s->qps);
    g_free(s->cqs);
    g_free(s->srqs);
    g_free(s->mrs);
    g_free(s->pds);
}

#define SAME(x, y, what)                                                    \
    do {                                                                    \
        if (memcmp(&(x), &(y), sizeof(x))) {                                \
            g_error("%s differs after the load", what);                     \
        }                                                                   \
    } while (0)

static void snap_compare(const Snap *a, const Snap *b, const VhcaCore *src,
                         const VhcaCore *dst)
{
    const VhcaCore *x = a->core, *y = b->core;
    size_t i;

    for (i = 0; i < a->nqp; i++) {
        SAME(a->qps[i], b->qps[i], "a QP");
        const VhcaQp *sq = &src->qps[i], *dq = &dst->qps[i];
        uint32_t k;

        /*
         * What is live: the send WQEs fetched and not completed, the
         * responder resources in use (the stream holds no more).
         */
        for (k = sq->sq.ci; sq->req.win && k != sq->req.fetched; k++) {
            uint32_t slot = k & (sq->req.win_size - 1);

            g_assert_true(memcmp(&sq->req.win[slot], &dq->req.win[slot],
                                 sizeof(VhcaSendMeta)) == 0);
        }
        for (k = 0; sq->resp.res && k < VHCA_MAX_RD_ATOMIC; k++) {
            if (sq->resp.res[k].kind == VHCA_RES_FREE) {
                g_assert_cmpuint(dq->resp.res[k].kind, ==, VHCA_RES_FREE);
            } else {
                g_assert_true(memcmp(&sq->resp.res[k], &dq->resp.res[k],
                                     sizeof(VhcaRdRes)) == 0);
            }
        }
    }
    g_assert_true(memcmp(a->cqs, b->cqs,
                         (x->cfg.max_cq + 1) * sizeof(*a->cqs)) == 0);
    g_assert_true(memcmp(a->srqs, b->srqs,
                         (x->cfg.max_srq + 1) * sizeof(*a->srqs)) == 0);
    g_assert_true(memcmp(a->mrs, b->mrs,
                         (x->cfg.max_mr + 1) * sizeof(*a->mrs)) == 0);
    g_assert_true(memcmp(a->pds, b->pds,
                         (x->cfg.max_pd + 1) * sizeof(*a->pds)) == 0);
    SAME(x->comp_eqs, y->comp_eqs, "the completion EQs");
    SAME(x->cfg, y->cfg, "the config");
    SAME(x->enabled, y->enabled, "enabled");
    SAME(x->status, y->status, "STATUS");
    SAME(x->error, y->error, "ERROR");
    SAME(x->admq, y->admq, "the admin queue");
    SAME(x->aeq, y->aeq, "the async EQ");
    SAME(x->tx, y->tx, "the TX ring");
    SAME(x->rx, y->rx, "the RX ring");
    SAME(x->eth_ctrl, y->eth_ctrl, "ETH_CTRL");
    SAME(x->eth_irq_armed, y->eth_irq_armed, "eth_irq_armed");
    SAME(x->eth_irq_pending, y->eth_irq_pending, "eth_irq_pending");
    SAME(x->mac, y->mac, "the MAC");
    SAME(x->mtu, y->mtu, "the MTU");
    SAME(x->rx_filter_flags, y->rx_filter_flags, "the RX filter");
    SAME(x->rx_mcast_count, y->rx_mcast_count, "the multicast MACs");
    SAME(x->rx_mcast, y->rx_mcast, "the multicast MACs");
    SAME(x->ib, y->ib, "the IB port");
    SAME(x->smi_qpn, y->smi_qpn, "the SMI QP");
    SAME(x->gid_tbl, y->gid_tbl, "the GID table");
    SAME(x->gid_tbl_top, y->gid_tbl_top, "the GID table top");
    SAME(x->uctx_map, y->uctx_map, "the doorbell pages");
    SAME(x->uctx_users, y->uctx_users, "the doorbell pages' users");
    SAME(x->xrcd_users, y->xrcd_users, "the XRC domains' users");
    SAME(x->mr_gen, y->mr_gen, "the MR generation");
    SAME(x->cq_error_pending, y->cq_error_pending, "cq_error_pending");
    SAME(x->mcast, y->mcast, "the multicast groups");
    SAME(x->roce_ip_id, y->roce_ip_id, "the IPv4 ID");
    SAME(x->cc_flags, y->cc_flags, "the CC flags");
    SAME(x->cc, y->cc, "the DCQCN config");
    SAME(x->cc_counters, y->cc_counters, "the CC counters");
    SAME(x->pfc, y->pfc, "PFC");
    SAME(x->rx_rate_next_ns, y->rx_rate_next_ns, "the RX rate limiter");
    SAME(x->counters, y->counters, "the counters");
    SAME(x->counter_hi_latch, y->counter_hi_latch, "the counter latches");
    for (i = 0; i < a->nqp; i++) {
        g_assert_cmpint(vhca_ids_used(&src->qp_ids, i), ==,
                        vhca_ids_used(&dst->qp_ids, i));
    }
}

/*
 * Migrate @h's engine: save it, replace it by a fresh engine of the same
 * config (what the destination QEMU realizes), load the stream into it,
 * and check that saving again gives the same bytes.  Guest RAM stays,
 * as QEMU migrates it beside the device.
 */
static void migrate(Harness *h)
{
    VhcaStateBuf before = save(h), after;
    const VhcaCoreOps *ops = h->core.ops;
    VhcaCoreConfig cfg = h->core.cfg;
    bool link = h->core.link_up;
    VhcaCore *old = g_memdup2(&h->core, sizeof(h->core));
    Snap sa, sb;

    /*
     * The old engine stays allocated until the comparison (its copy
     * owns its tables); the harness gets a fresh one.
     */
    snap_take(&sa, old);
    g_assert_cmpint(vhca_core_init(&h->core, &cfg, ops, h), ==, 0);
    h->core.link_up = link;         /* the backend's, set by the glue */
    if (vhca_state_load(&h->core, before.data, before.len, err,
                        sizeof(err))) {
        g_error("load: %s", err);
    }
    after = save(h);
    expect_same_bytes(&before, &after);
    snap_take(&sb, &h->core);
    snap_compare(&sa, &sb, old, &h->core);
    snap_free(&sa);
    snap_free(&sb);
    /* The old engine's ops would cancel the new one's timer: keep none. */
    old->ops = &quiet;
    vhca_core_cleanup(old);
    g_free(old);
    vhca_state_buf_free(&before);
    vhca_state_buf_free(&after);
}

static void test_tables(void)
{
    if (vhca_state_self_check(err, sizeof(err))) {
        g_error("%s", err);
    }
}

/* ---------------------------------------------------------------------- */
/* Every object type                                                      */
/* ---------------------------------------------------------------------- */

static uint32_t xrcd_alloc(Harness *h)
{
    uint32_t xrcdn = 0;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_ALLOC_XRCD, NULL, 0, &xrcdn, NULL),
                     ==, VHCA_ST_OK);
    return xrcdn;
}

static uint32_t srq_create(Node *n, uint8_t type, uint32_t xrcdn,
                           uint32_t cqn)
{
    struct vhca_srq_create c;
    uint32_t srqn = 0;

    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(n->pdn);
    c.db_page = GUINT32_TO_LE(n->page);
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(n->h, rdma_alloc(n->h, 1), 1,
                                        false));
    c.npages = GUINT32_TO_LE(1);
    c.log_size = 5;
    c.ci_addr = GUINT64_TO_LE(rdma_alloc(n->h, 1));
    c.limit = GUINT32_TO_LE(3);
    c.type = type;
    c.xrcdn = GUINT32_TO_LE(xrcdn);
    c.cqn = GUINT32_TO_LE(cqn);
    g_assert_cmpuint(rdma_cmd(n->h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                              &srqn, NULL), ==, VHCA_ST_OK);
    return srqn;
}

static uint32_t mw_alloc(Harness *h, uint32_t pdn, uint8_t type)
{
    struct vhca_cmd_mw_in in;
    struct vhca_cmd_obj_out out;

    memset(&in, 0, sizeof(in));
    in.pdn = GUINT32_TO_LE(pdn);
    in.type = type;
    in.key_tag = GUINT32_TO_LE(0x5a);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ALLOC_MW, 0x7000, &in, sizeof(in),
                               &out), ==, VHCA_ST_OK);
    return GUINT32_FROM_LE(out.key);
}

/*
 * Beside the node's PD, EQ, CQs, RC QP and MR: a second GID, an SRQ, an
 * XRC domain with an XRC SRQ and target QP, a UD QP in a multicast group,
 * windows of both types, a fast-register MR, congestion control on.
 */
static void add_every_type(Node *n)
{
    static const uint8_t mgid[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 1, 1,
    };
    struct vhca_cmd_mcast_in in;
    struct vhca_qp_create c;
    uint8_t gid[16];
    uint32_t xrcdn, qpn = 0;
    TestQp ud;

    gid_from_ipv4(gid, 10, 0, 1, 9);
    g_assert_cmpuint(add_gid(n->h, 1, VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
    srq_create(n, VHCA_SRQT_BASIC, 0, 0);
    xrcdn = xrcd_alloc(n->h);
    srq_create(n, VHCA_SRQT_XRC, xrcdn, n->rcq.cqn);
    memset(&c, 0, sizeof(c));
    c.type = VHCA_QPT_XRC_TGT;
    c.xrcdn = GUINT32_TO_LE(xrcdn);
    g_assert_cmpuint(rdma_cmd(n->h, VHCA_CMD_CREATE_QP, &c, sizeof(c), &qpn,
                              NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(n->h, &ud, VHCA_QPT_UD, n->pdn,
                                    n->scq.cqn, n->rcq.cqn, n->page), ==,
                     VHCA_ST_OK);
    memset(&in, 0, sizeof(in));
    in.qpn = GUINT32_TO_LE(ud.qpn);
    memcpy(in.gid, mgid, 16);
    g_assert_cmpuint(admin_cmd(n->h, VHCA_CMD_ATTACH_MCAST, 0x77, &in,
                               sizeof(in), NULL), ==, VHCA_ST_OK);
    mw_alloc(n->h, n->pdn, VHCA_MW_TYPE_1);
    mw_alloc(n->h, n->pdn, VHCA_MW_TYPE_2);
    node_fast_mr(n, 4, 0x21);
    set_cc(n->h, VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP, NULL, 0);
}

static void test_every_type(void)
{
    Node n;

    node_init(&n, 1, VHCA_QPT_RC);
    add_every_type(&n);
    /* Something in the counters and the rings' indices. */
    post_recv(&n, 0x1, 0, 64);
    migrate(n.h);
    g_assert_cmpuint(vhca_ids_next(&n.h->core.xrcd_ids, 0), !=, 0);
    g_assert_cmpuint(n.h->core.mcast[0].nqps, ==, 1);
    harness_free(n.h);
}

/* ---------------------------------------------------------------------- */
/* An RC message cut in the middle, on both sides                         */
/* ---------------------------------------------------------------------- */

static void test_rc_mid_message(void)
{
    Pair p;
    struct vhca_cqe cqe;
    const VhcaQp *qa, *qb;

    pair_init(&p, &default_opts);
    add_every_type(&p.a);
    post_recv(&p.b, 0xb1, RECV_OFF, MSG_LEN);
    fill(&p.a, 0, MSG_LEN, 7);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, MSG_LEN, 0, 0);
    pass_left = PASS_FRAMES;
    cut_lost = 0;
    p.a.h->tx_hook = cut_hook;
    ring_sq(&p.a);
    harness_run(p.a.h);
    harness_run(p.b.h);

    /* The requester has sent more than got through, nothing acked... */
    qa = &p.a.h->core.qps[p.a.qp.qpn];
    g_assert_cmpuint(cut_lost, >, 0);
    g_assert_cmpuint(qa->req.sent_psn, !=, qa->req.una_psn);
    g_assert_cmpuint(qa->deadline, !=, VHCA_NO_DEADLINE);
    /* ... and the responder holds a SEND half placed. */
    qb = &p.b.h->core.qps[p.b.qp.qpn];
    g_assert_cmpuint(qb->resp.cur, ==, VHCA_RESP_SEND);
    g_assert_cmpuint(qb->resp.cur_len, ==, PASS_FRAMES * 1024);
    g_assert_true(qb->resp.rwqe_held);

    migrate(p.a.h);
    migrate(p.b.h);
    qa = &p.a.h->core.qps[p.a.qp.qpn];
    qb = &p.b.h->core.qps[p.b.qp.qpn];
    g_assert_cmpuint(qb->resp.cur_len, ==, PASS_FRAMES * 1024);
    g_assert_cmpuint(qa->deadline, !=, VHCA_NO_DEADLINE);

    /* The wire is back: the retransmit timer finishes the message. */
    p.a.h->tx_hook = NULL;
    harness_pair_settle(p.a.h, p.b.h, SETTLE_NS);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==, MSG_LEN);
    expect_same(&p.a, 0, &p.b, RECV_OFF, MSG_LEN);
    pair_free(&p);
}

/*
 * The same with an RDMA WRITE (the responder in the middle of placing
 * it), an RDMA READ (the responder's READ stream cut: the requester
 * holds part of the response, the responder the resource to replay) and
 * on the InfiniBand port (the subnet manager's port state migrates too).
 */
static void mid_message(Pair *p, uint8_t opcode)
{
    Harness *cut = opcode == VHCA_WR_RDMA_READ ? p->b.h : p->a.h;
    const VhcaQp *qa, *qb;
    struct vhca_cqe cqe;
    uint8_t wc = opcode == VHCA_WR_RDMA_READ ? VHCA_WC_RDMA_READ :
                 opcode == VHCA_WR_SEND ? VHCA_WC_SEND : VHCA_WC_RDMA_WRITE;

    /*
     * One message whole first: the stream holds only live state (the
     * WQEs in flight, the resources in use), so leave a completed WQE
     * in the window and, for a READ, a resource used before.
     */
    if (opcode == VHCA_WR_SEND) {
        post_recv(&p->b, 0xb0, RECV_OFF, MSG_LEN);
    }
    post(&p->a, 0xa0, opcode, VHCA_WQE_SIGNALED, 0, MSG_LEN,
         p->b.buf + RECV_OFF, p->b.key);
    ring_sq(&p->a);
    harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
    expect_cqe(&p->a, &p->a.scq, 0xa0, VHCA_WC_SUCCESS, wc);
    if (opcode == VHCA_WR_SEND) {
        expect_cqe(&p->b, &p->b.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    }

    fill(&p->a, 0, MSG_LEN, 11);
    fill(&p->b, RECV_OFF, MSG_LEN, 12);
    if (opcode == VHCA_WR_SEND) {
        post_recv(&p->b, 0xb1, RECV_OFF, MSG_LEN);
    }
    post(&p->a, 0xa1, opcode, VHCA_WQE_SIGNALED, 0, MSG_LEN,
         p->b.buf + RECV_OFF, p->b.key);
    pass_left = PASS_FRAMES;
    cut_lost = 0;
    cut->tx_hook = cut_hook;
    ring_sq(&p->a);
    harness_run(p->a.h);
    harness_run(p->b.h);
    harness_run(p->a.h);
    g_assert_cmpuint(cut_lost, >, 0);
    qa = &p->a.h->core.qps[p->a.qp.qpn];
    qb = &p->b.h->core.qps[p->b.qp.qpn];
    if (opcode == VHCA_WR_RDMA_READ) {
        g_assert_cmpuint(qa->req.win[qa->sq.ci % qa->req.win_size]
                         .done_pkts, ==, PASS_FRAMES);
        g_assert_cmpuint(qb->resp.res[0].kind, ==, VHCA_RES_READ);
        g_assert_cmpuint(qb->resp.res[1].kind, ==, VHCA_RES_READ);
    } else {
        g_assert_cmpuint(qb->resp.cur, ==, opcode == VHCA_WR_SEND ?
                         VHCA_RESP_SEND : VHCA_RESP_WRITE);
        g_assert_cmpuint(qb->resp.cur_len, ==, PASS_FRAMES * 1024);
    }
    g_assert_cmpuint(qa->deadline, !=, VHCA_NO_DEADLINE);

    migrate(p->a.h);
    migrate(p->b.h);
    cut->tx_hook = NULL;
    harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
    expect_cqe(&p->a, &p->a.scq, 0xa1, VHCA_WC_SUCCESS, wc);
    expect_no_cqe(&p->a, &p->a.scq);
    if (opcode == VHCA_WR_SEND) {
        cqe = expect_cqe(&p->b, &p->b.rcq, 0xb1, VHCA_WC_SUCCESS,
                         VHCA_WC_RECV);
        g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==, MSG_LEN);
    }
    expect_same(&p->a, 0, &p->b, RECV_OFF, MSG_LEN);
}

static void test_rc_mid_write(void)
{
    Pair p;

    pair_init(&p, &default_opts);
    mid_message(&p, VHCA_WR_RDMA_WRITE);
    pair_free(&p);
}

static void test_rc_mid_read(void)
{
    Pair p;

    pair_init(&p, &default_opts);
    mid_message(&p, VHCA_WR_RDMA_READ);
    pair_free(&p);
}

static void test_ib_mid_message(void)
{
    Pair p;

    pair_init_ib(&p, &default_opts);
    mid_message(&p, VHCA_WR_SEND);
    g_assert_cmpuint(p.a.h->core.ib.lid, !=, 0);
    pair_free(&p);
}

/*
 * PFC: the receive queues' frames stay behind, so a priority we paused
 * the peer for is resumed on the target: no queued frames counted, the
 * XOFF lifted, and an XON sent by the first pass (IEEE 802.1Qbb clause
 * 36.1.3.3: a pause time of 0 resumes at once).
 */
static void test_pfc_xoff_resumed(void)
{
    Node n;
    VhcaStateBuf b;
    const VhcaCoreOps *ops;
    VhcaCoreConfig cfg;
    VhcaPfcPrio *p;
    bool link;
    unsigned i, before;
    bool xon = false;

    node_init(&n, 1, VHCA_QPT_RC);
    /* As if 7 frames of priority 3 had filled a queue past XOFF. */
    n.h->core.pfc.enable = 1u << 3;
    p = &n.h->core.pfc.prio[3];
    p->xoff = p->xoff_told = true;
    p->rx_frames = 7;
    p->rx_bytes = 7 * 4096;
    b = save(n.h);

    ops = n.h->core.ops;
    cfg = n.h->core.cfg;
    link = n.h->core.link_up;
    vhca_core_cleanup(&n.h->core);
    g_assert_cmpint(vhca_core_init(&n.h->core, &cfg, ops, n.h), ==, 0);
    n.h->core.link_up = link;
    n.h->work_scheduled = false;
    g_assert_cmpint(vhca_state_load(&n.h->core, b.data, b.len, err,
                                    sizeof(err)), ==, 0);
    p = &n.h->core.pfc.prio[3];
    g_assert_false(p->xoff);
    g_assert_cmpuint(p->rx_frames, ==, 0);
    g_assert_cmpuint(p->rx_bytes, ==, 0);
    g_assert_cmphex(n.h->core.pfc.pending, ==, 1u << 3);
    g_assert_true(n.h->work_scheduled);
    before = n.h->nframes;
    harness_run(n.h);
    for (i = before; i < n.h->nframes; i++) {
        const uint8_t *f = n.h->frames[i].data;

        xon |= f[12] == 0x88 && f[13] == 0x08;
    }
    g_assert_true(xon);
    g_assert_false(n.h->core.pfc.prio[3].xoff_told);
    vhca_state_buf_free(&b);
    harness_free(n.h);
}

/* ---------------------------------------------------------------------- */
/* Damaged streams                                                        */
/* ---------------------------------------------------------------------- */

/* Recompute the CRC of the record at @off (after a deliberate change). */
static void fix_crc(uint8_t *s, size_t off)
{
    uint32_t len = s[off + 8] | s[off + 9] << 8 | s[off + 10] << 16 |
                   (uint32_t)s[off + 11] << 24;
    uint32_t crc;

    memset(s + off + 12, 0, 4);
    crc = libdeflate_crc32(0, s + off, 16 + len);
    s[off + 12] = (uint8_t)crc;
    s[off + 13] = (uint8_t)(crc >> 8);
    s[off + 14] = (uint8_t)(crc >> 16);
    s[off + 15] = (uint8_t)(crc >> 24);
}

static uint32_t rec_len(const uint8_t *s, size_t off)
{
    return s[off + 8] | s[off + 9] << 8 | s[off + 10] << 16 |
           (uint32_t)s[off + 11] << 24;
}

/* The offset of the first record of @type, or 0. */
static size_t find_rec(const VhcaStateBuf *b, uint16_t type)
{
    size_t off = 16;

    while (off + 16 <= b->len) {
        if ((b->data[off] | b->data[off + 1] << 8) == type) {
            return off;
        }
        off += 16 + rec_len(b->data, off);
    }
    return 0;
}

typedef struct Damage {
    Harness *target;
    VhcaStateBuf ref;               /* the target's state before */
    unsigned refused;
} Damage;

/* Loading @s (@len bytes) must fail with a message naming @want. */
static void expect_refused(Damage *d, const uint8_t *s, size_t len,
                           const char *want)
{
    err[0] = 0;
    g_assert_cmpint(vhca_state_load(&d->target->core, s, len, err,
                                    sizeof(err)), ==, -1);
    g_assert_true(strncmp(err, "vhca state: ", 12) == 0);
    if (want && !strstr(err, want)) {
        g_error("expected \"%s\" in: %s", want, err);
    }
    d->refused++;
}

static void expect_target_unchanged(Damage *d)
{
    VhcaStateBuf now = save(d->target);

    expect_same_bytes(&d->ref, &now);
    vhca_state_buf_free(&now);
}

static void test_damaged(void)
{
    /* Small tables: a load is quick, and the stream short. */
    VhcaCoreConfig cfg = harness_default_cfg;
    Node src, dst;
    Damage d = { 0 };
    VhcaStateBuf b;
    uint8_t *s;
    size_t len, off;
    unsigned i;

    cfg.max_qp = 8;
    cfg.max_cq = 8;
    cfg.max_mr = 16;
    cfg.max_pd = 4;
    cfg.max_srq = 4;
    node_init_cfg(&src, 1, VHCA_QPT_RC, &cfg);
    add_every_type(&src);
    /* The target: the same device, with a state of its own. */
    node_init_cfg(&dst, 1, VHCA_QPT_UD, &cfg);
    d.target = dst.h;
    d.ref = save(dst.h);
    b = save(src.h);
    s = g_memdup2(b.data, b.len);
    len = b.len;

    /* Truncated at every length. */
    for (off = 0; off < len; off++) {
        expect_refused(&d, s, off, NULL);
    }
    expect_target_unchanged(&d);

    /* A flipped byte in each record's header, and in its payload. */
    off = 16;
    while (off < len) {
        size_t next = off + 16 + rec_len(s, off);

        for (i = 0; i < 16; i++) {
            s[off + i] ^= 0x80;
            expect_refused(&d, s, len, NULL);
            s[off + i] ^= 0x80;
        }
        if (next > off + 16) {
            s[next - 1] ^= 0x01;
            expect_refused(&d, s, len, "CRC");
            s[next - 1] ^= 0x01;
        }
        off = next;
    }
    expect_target_unchanged(&d);

    /* Trailing bytes, another format version, another record version. */
    {
        uint8_t *longer = g_malloc(len + 1);

        memcpy(longer, s, len);
        longer[len] = 0;
        expect_refused(&d, longer, len + 1, "after the end");
        g_free(longer);
    }
    s[8] = 2;
    expect_refused(&d, s, len, "format version");
    s[8] = VHCA_STATE_FORMAT_VERSION;
    off = find_rec(&b, VHCA_STATE_REC_QP);
    g_assert_cmpuint(off, !=, 0);
    s[off + 2] = 2;
    fix_crc(s, off);
    expect_refused(&d, s, len, "version 2");
    s[off + 2] = 1;

    /* An index out of range; the same QP twice. */
    s[off + 4] = 200;
    fix_crc(s, off);
    expect_refused(&d, s, len, "out of range");
    s[off + 4] = (uint8_t)src.qp.qpn;
    fix_crc(s, off);

    /* A QP state no command leaves. */
    s[off + 16 + 1] = 9;
    fix_crc(s, off);
    expect_refused(&d, s, len, "state 9");
    s[off + 16 + 1] = VHCA_QPS_RESET;
    fix_crc(s, off);

    /* A CQ moved to another handle: the QPs name one that is not there. */
    off = find_rec(&b, VHCA_STATE_REC_CQ);
    g_assert_cmpuint(off, !=, 0);
    s[off + 4] = 7;
    fix_crc(s, off);
    expect_refused(&d, s, len, "does not exist");
    memcpy(s, b.data, len);

    /* The intact stream loads (so every refusal above was the damage). */
    expect_target_unchanged(&d);
    g_assert_cmpint(vhca_state_load(&dst.h->core, s, len, err, sizeof(err)),
                    ==, 0);
    {
        VhcaStateBuf again = save(dst.h);

        expect_same_bytes(&b, &again);
        vhca_state_buf_free(&again);
    }
    g_assert_cmpuint(d.refused, >, len);

    g_free(s);
    vhca_state_buf_free(&b);
    vhca_state_buf_free(&d.ref);
    harness_free(src.h);
    harness_free(dst.h);
}

/*
 * Hostile values with good CRCs (a stream made to pass the integrity
 * checks): each mutated stream is refused, or loaded and then run -
 * doorbells, the timer, a pass - without a crash (the -san build checks
 * memory and arithmetic).
 */
static void test_hostile_values(void)
{
    Pair p;
    Node dst;
    VhcaStateBuf b;
    GRand *rnd = g_rand_new_with_seed(30);
    unsigned i, loaded = 0, refused = 0;
    uint8_t *s;

    /* The source: node A of an RC pair in the middle of a SEND. */
    pair_init(&p, &default_opts);
    add_every_type(&p.a);
    post_recv(&p.b, 0xb1, RECV_OFF, MSG_LEN);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, MSG_LEN, 0, 0);
    pass_left = PASS_FRAMES;
    p.a.h->tx_hook = cut_hook;
    ring_sq(&p.a);
    harness_run(p.a.h);
    harness_run(p.b.h);
    node_init(&dst, 1, VHCA_QPT_RC);
    dst.h->peer = dst.h;
    dst.h->tx_hook = lost_hook;
    b = save(p.a.h);
    s = g_malloc(b.len);
    for (i = 0; i < 400; i++) {
        size_t off = 16, pick;
        unsigned n = 0, k, nrec = 0;

        memcpy(s, b.data, b.len);
        /* A record at random, one to four of its payload bytes. */
        while (off < b.len) {
            nrec++;
            off += 16 + rec_len(s, off);
        }
        /* Half the time the QPs' records, the transport's state. */
        pick = g_rand_int_range(rnd, 0, nrec);
        if (g_rand_boolean(rnd)) {
            pick = nrec - 2 - g_rand_int_range(rnd, 0, 3);
        }
        for (off = 16; n < pick; n++) {
            off += 16 + rec_len(s, off);
        }
        if (rec_len(s, off) == 0) {
            continue;
        }
        for (k = g_rand_int_range(rnd, 1, 5); k; k--) {
            s[off + 16 + g_rand_int_range(rnd, 0, rec_len(s, off))] =
                (uint8_t)g_rand_int_range(rnd, 0, 256);
        }
        fix_crc(s, off);
        if (vhca_state_load(&dst.h->core, s, b.len, err, sizeof(err))) {
            refused++;
            continue;
        }
        loaded++;
        /* Run what the loaded state holds: rings, passes, the timer. */
        ring_sq(&dst);
        harness_run(dst.h);
        harness_advance(dst.h, 1000ull * 1000 * 1000);
        harness_run(dst.h);
    }
    g_test_message("%u loaded, %u refused", loaded, refused);
    g_assert_cmpuint(loaded, >, 0);
    g_assert_cmpuint(refused, >, 0);
    g_free(s);
    g_rand_free(rnd);
    vhca_state_buf_free(&b);
    pair_free(&p);
    harness_free(dst.h);
}

/* Another device config is refused by name. */
static void test_other_config(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    Node a, b;
    VhcaStateBuf s;

    node_init(&a, 1, VHCA_QPT_RC);
    cfg.max_qp = 64;
    node_init_cfg(&b, 1, VHCA_QPT_RC, &cfg);
    s = save(a.h);
    g_assert_cmpint(vhca_state_load(&b.h->core, s.data, s.len, err,
                                    sizeof(err)), ==, -1);
    g_assert_nonnull(strstr(err, "configured otherwise"));
    vhca_state_buf_free(&s);
    harness_free(a.h);
    harness_free(b.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/state/tables", test_tables);
    g_test_add_func("/vhca/state/every-type", test_every_type);
    g_test_add_func("/vhca/state/rc-mid-message", test_rc_mid_message);
    g_test_add_func("/vhca/state/rc-mid-write", test_rc_mid_write);
    g_test_add_func("/vhca/state/rc-mid-read", test_rc_mid_read);
    g_test_add_func("/vhca/state/ib-mid-message", test_ib_mid_message);
    g_test_add_func("/vhca/state/pfc-xoff-resumed", test_pfc_xoff_resumed);
    g_test_add_func("/vhca/state/damaged", test_damaged);
    g_test_add_func("/vhca/state/hostile-values", test_hostile_values);
    g_test_add_func("/vhca/state/other-config", test_other_config);
    return g_test_run();
}
