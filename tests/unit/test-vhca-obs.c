/*
 * Unit tests of what the device tells about itself (docs/specs/vhca.rst,
 * "Counters" and "Trace events"): one table lists every counter with a
 * scenario that moves it, another every typed trace hook with a scenario
 * that fires it and the arguments it must carry.  A scenario runs on two
 * RC nodes back to back (vhca-node.h): a is node 1, b node 2.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-mad.h"
#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-wire.h"

/*
 * DROP_NO_MEMORY needs an allocation to fail: built with
 * -Wl,--wrap=malloc, the engine's malloc() comes here first.
 */
#ifdef VHCA_WRAP_MALLOC
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);

static bool fail_next_malloc;

void *__wrap_malloc(size_t size)
{
    if (fail_next_malloc) {
        fail_next_malloc = false;
        return NULL;
    }
    return __real_malloc(size);
}
#endif

#define QKEY            0x11111111u     /* qp_good_attr()'s Q_Key */
#define UC_RQ_PSN       0x1000          /* qp_good_attr()'s rq_psn */

typedef struct World {
    Pair p;
    Wire wa, wb;                    /* what a and b send */
    uint64_t mark_a[VHCA_CNT_MAX], mark_b[VHCA_CNT_MAX];
    unsigned errors_a, errors_b;    /* guest errors at the mark */
    uint32_t object;                /* the QP, CQ... a scenario made */
} World;

typedef void Scenario(World *w);

static void world_init(World *w, const ConnOpts *o)
{
    memset(w, 0, sizeof(*w));
    pair_init(&w->p, o);
    wire_attach(&w->p.a, &w->wa);
    wire_attach(&w->p.b, &w->wb);
}

/* The same on the IB port (link=ib): LIDs 1 and 2, ports ACTIVE. */
static void world_init_ib(World *w, const ConnOpts *o)
{
    memset(w, 0, sizeof(*w));
    pair_init_ib(&w->p, o);
    wire_attach(&w->p.a, &w->wa);
    wire_attach(&w->p.b, &w->wb);
}

/*
 * Set-up done: consume the async events, remember the counters and the
 * guest errors, forget the trace hooks so far.
 */
static void world_mark(World *w)
{
    Harness *hs[] = { w->p.a.h, w->p.b.h };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(hs); i++) {
        aeq_drain(hs[i]);
        memset(&hs[i]->ev, 0, sizeof(hs[i]->ev));
        hs[i]->rx_drops = 0;
    }
    for (i = 0; i < VHCA_CNT_MAX; i++) {
        w->mark_a[i] = counter(w->p.a.h, i);
        w->mark_b[i] = counter(w->p.b.h, i);
    }
    w->errors_a = w->p.a.h->guest_error_calls;
    w->errors_b = w->p.b.h->guest_error_calls;
}

static void settle(World *w)
{
    harness_pair_settle(w->p.a.h, w->p.b.h, SETTLE_NS);
}

/* Build @pkt (its transport part filled in) as a frame from @from to @to. */
static size_t craft(const Node *from, const Node *to, VhcaWirePacket *pkt,
                    uint8_t *frame)
{
    size_t len;

    memcpy(pkt->net.dmac, to->h->core.cfg.mac, 6);
    memcpy(pkt->net.smac, from->h->core.cfg.mac, 6);
    memcpy(pkt->net.sgid, from->gid, 16);
    memcpy(pkt->net.dgid, to->gid, 16);
    pkt->net.hop_limit = 64;
    if (!pkt->tp.bth.pkey) {
        pkt->tp.bth.pkey = 0xffff;
    }
    len = vhca_wire_build(pkt, frame, VHCA_ETH_MAX_FRAME);
    g_assert_cmpuint(len, >, 0);
    return len;
}

/* An RC SEND ONLY without payload to @qpn at @psn. */
static VhcaWirePacket rc_send_only(uint32_t qpn, uint32_t psn)
{
    VhcaWirePacket pkt;

    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, SEND_ONLY);
    pkt.tp.bth.dest_qpn = qpn;
    pkt.tp.bth.psn = psn;
    return pkt;
}

/* @pkt from a to b, through b's receive path and its deferred work. */
static void a_to_b(World *w, VhcaWirePacket *pkt)
{
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len = craft(&w->p.a, &w->p.b, pkt, frame);

    harness_deliver(w->p.b.h, frame, len);
    harness_run(w->p.b.h);
}

/* ---------------------------------------------------------------------- */
/* Ethernet and control scenarios (on node a)                             */
/* ---------------------------------------------------------------------- */

static void eth_frame_to_a(World *w, const uint8_t *dst, size_t payload)
{
    uint8_t frame[128];

    harness_deliver(w->p.a.h, frame, build_eth(frame, dst, 0x88b5, payload));
}

static void s_eth_tx(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_TX_ENABLE);
    build_eth(ram_ptr(w->p.a.h, TX_BUF_ADDR, 64), harness_mac, 0x88b5, 46);
    world_mark(w);
    tx_post(w->p.a.h, 0, TX_BUF_ADDR, 60);
}

static void s_eth_tx_bad_len(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_TX_ENABLE);
    world_mark(w);
    tx_post(w->p.a.h, 0, TX_BUF_ADDR, 5);
}

static void s_eth_tx_bad_buffer(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_TX_ENABLE);
    world_mark(w);
    tx_post(w->p.a.h, 0, BAD_ADDR, 60);
}

static void s_eth_tx_disabled(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    reg_write(w->p.a.h, VHCA_REG_TX_PI, 1);
}

static void s_eth_tx_bad_config(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, 0);
    reg_write(w->p.a.h, VHCA_REG_TX_LOG_SIZE, 0);
    world_mark(w);
    reg_write(w->p.a.h, VHCA_REG_ETH_CTRL, VHCA_ETH_CTRL_TX_ENABLE);
}

static void s_eth_tx_ring_running(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_TX_ENABLE);
    world_mark(w);
    reg_write(w->p.a.h, VHCA_REG_TX_LOG_SIZE, 3);
}

static void s_eth_tx_pi_beyond(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_TX_ENABLE);
    world_mark(w);
    reg_write(w->p.a.h, VHCA_REG_TX_PI, (1u << ETH_LOG) + 1);
}

static void s_eth_rx(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_RX_ENABLE);
    rx_post(w->p.a.h, 0, RX_BUF_SIZE);
    reg_write(w->p.a.h, VHCA_REG_RX_PI, 1);
    world_mark(w);
    eth_frame_to_a(w, w->p.a.h->core.cfg.mac, 50);
}

static void s_eth_rx_no_buffer(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_RX_ENABLE);
    world_mark(w);
    eth_frame_to_a(w, w->p.a.h->core.cfg.mac, 50);
}

static void s_eth_rx_small_buffer(World *w)
{
    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_RX_ENABLE);
    rx_post(w->p.a.h, 0, 16);
    reg_write(w->p.a.h, VHCA_REG_RX_PI, 1);
    world_mark(w);
    eth_frame_to_a(w, w->p.a.h->core.cfg.mac, 50);
}

/* SET_RX_FILTER with no address and no ALLMULTI: multicast is refused. */
static void s_eth_rx_mcast_filtered(World *w)
{
    static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
    struct vhca_rx_filter mbox = { 0 };
    struct vhca_cmd_dma_in in = {
        .addr = GUINT64_TO_LE(MBOX_ADDR),
        .len = GUINT32_TO_LE(sizeof(mbox)),
    };

    world_init(w, &default_opts);
    eth_setup(w->p.a.h, VHCA_ETH_CTRL_RX_ENABLE);
    ram_write(w->p.a.h, MBOX_ADDR, &mbox, sizeof(mbox));
    g_assert_cmpuint(admin_cmd(w->p.a.h, VHCA_CMD_SET_RX_FILTER, 1, &in,
                               sizeof(in), NULL), ==, VHCA_ST_OK);
    world_mark(w);
    eth_frame_to_a(w, mcast, 50);
}

static void s_admin(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    rdma_create_pd(w->p.a.h);
}

static void s_admin_fail(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    g_assert_cmpuint(rdma_destroy(w->p.a.h, VHCA_CMD_DESTROY_PD, 0x3f), ==,
                     VHCA_ST_BAD_INDEX);
}

/* Eight NOPs fill the async EQ with CMD_DONE events; the ninth is lost. */
static void s_aeq_overflow(World *w)
{
    unsigned i;

    world_init(w, &default_opts);
    world_mark(w);
    for (i = 0; i <= 1u << AEQ_LOG; i++) {
        g_assert_cmpuint(admin_cmd(w->p.a.h, VHCA_CMD_NOP, i, NULL, 0, NULL),
                         ==, VHCA_ST_OK);
    }
}

static void s_qp_to_err(World *w)
{
    struct vhca_qp_attr a = { .qpn = 0 };

    world_init(w, &default_opts);
    world_mark(w);
    a.qpn = w->p.a.qp.qpn;
    qp_modify_ok(w->p.a.h, &a, VHCA_QPS_ERR, 0);
}

static void s_doorbell(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    ring_doorbell(w->p.a.h, w->p.a.page, VHCA_DB_CQ, w->p.a.scq.cqn, 0);
}

static void s_ub_reg_access(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    reg_write(w->p.a.h, VHCA_REG_VERSION, 5);
}

/* A doorbell on a page no user context owns. */
static void s_ub_doorbell(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    ring_doorbell(w->p.a.h, w->p.a.page + 1, VHCA_DB_SQ, w->p.a.qp.qpn, 1);
}

/* Both arm bits set. */
static void s_ub_cq_doorbell(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    ring_doorbell(w->p.a.h, w->p.a.page, VHCA_DB_CQ, w->p.a.scq.cqn,
                  3u << 30);
}

/* An SQ producer index more than the ring ahead. */
static void s_sq_pi_beyond(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    ring_doorbell(w->p.a.h, w->p.a.page, VHCA_DB_SQ, w->p.a.qp.qpn,
                  (1u << w->p.a.qp.sq_log) + 1);
}

/* A send WQE with an opcode RC does not have. */
static void s_bad_wqe(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    /* 10: TSO, which vhca has not. */
    post(&w->p.a, 0xa1, 10, VHCA_WQE_SIGNALED, 0, 10, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

/*
 * Flushing QP x overflows a two-entry CQ that UD QP y receives to: the
 * CQ goes into error and y with it (QP_FATAL).
 */
static void s_cq_overflow(World *w)
{
    Harness *h;
    TestCq small;
    TestQp x, y;
    unsigned i;

    world_init(w, &default_opts);
    h = w->p.a.h;
    g_assert_cmpuint(rdma_create_cq(h, &small, 1, w->p.a.eqn, w->p.a.page),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(h, &x, VHCA_QPT_RC, w->p.a.pdn,
                                    small.cqn, w->p.a.rcq.cqn, w->p.a.page),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(h, &y, VHCA_QPT_UD, w->p.a.pdn,
                                    w->p.a.scq.cqn, small.cqn, w->p.a.page),
                     ==, VHCA_ST_OK);
    qp_move_to(h, x.qpn, VHCA_QPT_RC, VHCA_QPS_RTS);
    qp_move_to(h, y.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    for (i = 0; i < 3; i++) {
        qp_put_send(h, &x, 0xc0 + i, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    }
    ring_doorbell(h, w->p.a.page, VHCA_DB_SQ, x.qpn, x.sq_pi);
    w->object = y.qpn;
    world_mark(w);
    qp_move_to(h, x.qpn, VHCA_QPT_RC, VHCA_QPS_ERR);
}

/* ---------------------------------------------------------------------- */
/* RC scenarios                                                           */
/* ---------------------------------------------------------------------- */

static void s_rc_send(World *w)
{
    world_init(w, &default_opts);
    post_recv(&w->p.b, 0xb1, 0x10000, 4096);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

/* The first of two packets is lost: the second draws a sequence NAK. */
static void s_rc_lost_request(World *w)
{
    world_init(w, &default_opts);
    w->wa.drop_nth = 1;
    post_recv(&w->p.b, 0xb1, 0x10000, 4096);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 2000, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

/* The ACK is lost: a times out and resends, b sees a duplicate. */
static void s_rc_lost_ack(World *w)
{
    world_init(w, &default_opts);
    w->wb.drop_nth = 1;
    post_recv(&w->p.b, 0xb1, 0x10000, 4096);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

/* The second READ response packet is lost: the third implies it. */
static void s_rc_implied_nak(World *w)
{
    world_init(w, &default_opts);
    w->wb.drop_nth = 2;
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, 0, 3000,
         w->p.b.buf + 0x1000, w->p.b.key);
    ring_sq(&w->p.a);
    settle(w);
}

/* No receive WQE: RNR NAK; no time passes, a waits. */
static void s_rc_rnr(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    harness_pair_settle(w->p.a.h, w->p.b.h, 0);
}

static void s_rc_rnr_exceeded(World *w)
{
    ConnOpts o = default_opts;

    o.rnr_retry = 0;
    world_init(w, &o);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

static void s_rc_retry_exceeded(World *w)
{
    ConnOpts o = default_opts;

    o.retry_cnt = 0;
    o.timeout = 10;
    world_init(w, &o);
    w->wa.drop_all = true;
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

/* A WRITE to a QP that does not enable remote writes. */
static void s_rc_invalid_request(World *w)
{
    ConnOpts o = default_opts;

    o.access = VHCA_ACCESS_REMOTE_READ;
    world_init(w, &o);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 100,
         w->p.b.buf, w->p.b.key);
    ring_sq(&w->p.a);
    settle(w);
}

/* A WRITE with an R_Key of no MR. */
static void s_rc_remote_access(World *w)
{
    world_init(w, &default_opts);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 100,
         w->p.b.buf, w->p.b.key ^ 0x100);
    ring_sq(&w->p.a);
    settle(w);
}

/* b's guest posted a receive buffer the device may not write. */
static void s_rc_remote_op(World *w)
{
    struct vhca_recv_wqe r;

    world_init(w, &default_opts);
    memset(&r, 0, sizeof(r));
    r.wr_id = GUINT64_TO_LE(0xb1);
    r.num_sge = 1;
    r.sge[0].addr = GUINT64_TO_LE(w->p.b.buf);
    r.sge[0].length = GUINT32_TO_LE(4096);
    r.sge[0].lkey = GUINT32_TO_LE(rdma_create_phys_mr(w->p.b.h, w->p.b.pdn,
                                                      w->p.b.buf, 4096, 0));
    qp_put_recv_wqe(w->p.b.h, &w->p.b.qp, &r);
    ring_doorbell(w->p.b.h, w->p.b.page, VHCA_DB_RQ, w->p.b.qp.qpn,
                  w->p.b.qp.rq_pi);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
}

/* ---------------------------------------------------------------------- */
/* UD and UC scenarios                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A UD QP on node a sends one datagram to itself (loopback) with @qkey;
 * @recv: a receive WQE is posted.
 */
static void ud_loopback_len(World *w, uint32_t qkey, bool recv,
                            uint32_t len)
{
    Node *n = &w->p.a;
    struct vhca_send_wqe s;
    TestQp u;

    world_init(w, &default_opts);
    g_assert_cmpuint(rdma_create_qp(n->h, &u, VHCA_QPT_UD, n->pdn,
                                    n->scq.cqn, n->rcq.cqn, n->page), ==,
                     VHCA_ST_OK);
    qp_move_to(n->h, u.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    if (recv) {
        struct vhca_recv_wqe r;

        memset(&r, 0, sizeof(r));
        r.num_sge = 1;
        r.sge[0].addr = GUINT64_TO_LE(n->buf + 0x1000);
        r.sge[0].length = GUINT32_TO_LE(4096);
        r.sge[0].lkey = GUINT32_TO_LE(n->key);
        qp_put_recv_wqe(n->h, &u, &r);
        ring_doorbell(n->h, n->page, VHCA_DB_RQ, u.qpn, u.rq_pi);
    }
    wqe_init(&s, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&s, n->buf, len, n->key);
    s.dest_qpn = GUINT32_TO_LE(u.qpn);
    s.qkey = GUINT32_TO_LE(qkey);
    memcpy(s.av.dgid, n->gid, 16);
    memcpy(s.av.dmac, n->h->core.cfg.mac, 6);
    s.av.hop_limit = 64;
    qp_put_send_wqe(n->h, &u, &s);
    w->object = u.qpn;
    world_mark(w);
    ring_doorbell(n->h, n->page, VHCA_DB_SQ, u.qpn, u.sq_pi);
    harness_run(n->h);
}

static void ud_loopback(World *w, uint32_t qkey, bool recv)
{
    ud_loopback_len(w, qkey, recv, 100);
}

/* Longer than the active MTU (1024): completed, not sent (C10-93.1.1). */
static void s_ud_too_long(World *w)
{
    ud_loopback_len(w, QKEY, true, 2000);
}

static void s_ud_loopback(World *w)
{
    ud_loopback(w, QKEY, true);
}

static void s_ud_wrong_qkey(World *w)
{
    ud_loopback(w, QKEY + 1, true);
}

static void s_ud_no_rwqe(World *w)
{
    ud_loopback(w, QKEY, false);
}

/* A UC MIDDLE packet with no message begun: the message is dropped. */
static void s_uc_no_first(World *w)
{
    static const uint8_t payload[1024];
    VhcaWirePacket pkt;
    TestQp c;

    world_init(w, &default_opts);
    g_assert_cmpuint(rdma_create_qp(w->p.b.h, &c, VHCA_QPT_UC, w->p.b.pdn,
                                    w->p.b.scq.cqn, w->p.b.rcq.cqn,
                                    w->p.b.page), ==, VHCA_ST_OK);
    qp_move_to(w->p.b.h, c.qpn, VHCA_QPT_UC, VHCA_QPS_RTR);
    world_mark(w);
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(UC, SEND_MIDDLE);
    pkt.tp.bth.dest_qpn = c.qpn;
    pkt.tp.bth.psn = UC_RQ_PSN;
    pkt.payload = payload;
    pkt.payload_len = sizeof(payload);
    a_to_b(w, &pkt);
}

/* ---------------------------------------------------------------------- */
/* Frames the transport drops (at b)                                      */
/* ---------------------------------------------------------------------- */

static void s_drop_malformed(World *w)
{
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    len = craft(&w->p.a, &w->p.b, &pkt, frame);
    frame[VHCA_ETH_HLEN + 10] ^= 0xff;          /* IPv4 header checksum */
    harness_deliver(w->p.b.h, frame, len);
}

static void s_drop_bad_icrc(World *w)
{
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    len = craft(&w->p.a, &w->p.b, &pkt, frame);
    frame[len - 1] ^= 1;
    harness_deliver(w->p.b.h, frame, len);
}

static void s_drop_pkey(World *w)
{
    VhcaWirePacket pkt;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    pkt.tp.bth.pkey = 0x1234;
    a_to_b(w, &pkt);
}

/* Tagged with VID 100 to b's GID, which is untagged. */
static void s_drop_vlan(World *w)
{
    VhcaWirePacket pkt;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    pkt.net.vlan = true;
    pkt.net.vlan_tci = 100;
    a_to_b(w, &pkt);
}

static void s_drop_no_qp(World *w)
{
    VhcaWirePacket pkt;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(0x777, 0);
    a_to_b(w, &pkt);
}

/* A request for an RC QP still in RESET. */
static void s_drop_qp_state(World *w)
{
    VhcaWirePacket pkt;
    TestQp d;

    world_init(w, &default_opts);
    g_assert_cmpuint(rdma_create_qp(w->p.b.h, &d, VHCA_QPT_RC, w->p.b.pdn,
                                    w->p.b.scq.cqn, w->p.b.rcq.cqn,
                                    w->p.b.page), ==, VHCA_ST_OK);
    world_mark(w);
    pkt = rc_send_only(d.qpn, 0);
    a_to_b(w, &pkt);
}

/* More frames for one QP than it queues before its deferred work runs. */
static void s_drop_queue_full(World *w)
{
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;
    unsigned i;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    len = craft(&w->p.a, &w->p.b, &pkt, frame);
    for (i = 0; i <= VHCA_RXQ_MAX_QP; i++) {
        harness_deliver(w->p.b.h, frame, len);
    }
}

/* A SEND ONLY with more payload than b's path and port MTU (1024). */
static void s_drop_oversize(World *w)
{
    static uint8_t payload[4096];
    VhcaWirePacket pkt;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    pkt.payload = payload;
    pkt.payload_len = sizeof(payload);
    a_to_b(w, &pkt);
}

static void s_drop_no_memory(World *w)
{
#ifdef VHCA_WRAP_MALLOC
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    world_init(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    len = craft(&w->p.a, &w->p.b, &pkt, frame);
    fail_next_malloc = true;
    harness_deliver(w->p.b.h, frame, len);
    g_assert_false(fail_next_malloc);
#else
    (void)w;
    g_assert_not_reached();
#endif
}

/* A datagram for DestQP 0xFFFFFF from @from to b's unicast GID. */
static void mcast_qpn_to_b(World *w, const Node *from)
{
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    world_init(w, &default_opts);
    world_mark(w);
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(UD, SEND_ONLY);
    pkt.tp.bth.dest_qpn = VHCA_MCAST_QPN;
    pkt.tp.deth.qkey = QKEY;
    pkt.tp.deth.src_qpn = 0x42;
    len = craft(from, &w->p.b, &pkt, frame);
    harness_deliver(w->p.b.h, frame, len);
}

/* b's own MAC: a multicast datagram of its own, echoed by the backend. */
static void s_drop_mcast_echo(World *w)
{
    mcast_qpn_to_b(w, &w->p.b);
}

/* DestQP 0xFFFFFF to a GID that is no multicast group. */
static void s_drop_mcast_no_member(World *w)
{
    mcast_qpn_to_b(w, &w->p.a);
}

/* An ACK for a PSN a never sent. */
static void s_drop_stale_response(World *w)
{
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    world_init(w, &default_opts);
    world_mark(w);
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, ACKNOWLEDGE);
    pkt.tp.bth.dest_qpn = w->p.a.qp.qpn;
    pkt.tp.bth.psn = default_opts.a_psn;
    len = craft(&w->p.b, &w->p.a, &pkt, frame);
    harness_deliver(w->p.a.h, frame, len);
    harness_run(w->p.a.h);
}

/* An ACK with the reserved AETH kind for a PSN a has outstanding. */
static void s_drop_bad_response(World *w)
{
    VhcaWirePacket pkt;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    world_init(w, &default_opts);
    w->wa.drop_all = true;
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    harness_run(w->p.a.h);
    world_mark(w);
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, ACKNOWLEDGE);
    pkt.tp.bth.dest_qpn = w->p.a.qp.qpn;
    pkt.tp.bth.psn = default_opts.a_psn;
    pkt.tp.aeth.syndrome = VHCA_IB_AETH_KIND_RESERVED;
    len = craft(&w->p.b, &w->p.a, &pkt, frame);
    harness_deliver(w->p.a.h, frame, len);
    harness_run(w->p.a.h);
}

/* A READ request b executed no READ at: a duplicate it cannot replay. */
static void s_drop_dup_too_old(World *w)
{
    VhcaWirePacket pkt;

    world_init(w, &default_opts);
    post_recv(&w->p.b, 0xb1, 0x10000, 4096);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    settle(w);
    world_mark(w);
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, RDMA_READ_REQUEST);
    pkt.tp.bth.dest_qpn = w->p.b.qp.qpn;
    pkt.tp.bth.psn = default_opts.a_psn;
    pkt.tp.reth.va = w->p.b.buf;
    pkt.tp.reth.rkey = w->p.b.key;
    pkt.tp.reth.dma_len = 8;
    a_to_b(w, &pkt);
}

/* ---------------------------------------------------------------------- */
/* InfiniBand port scenarios (docs/specs/vhca.rst, "InfiniBand port")     */
/* ---------------------------------------------------------------------- */

/* An IB packet from a (LID 1) to b: @pkt's transport, LRH @vl, @dlid. */
static void ib_a_to_b(World *w, VhcaWirePacket *pkt, uint8_t vl,
                      uint16_t dlid, bool corrupt_vcrc)
{
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    size_t len;

    pkt->link = VHCA_WIRE_LINK_IB;
    pkt->lrh.vl = vl;
    pkt->lrh.dlid = dlid;
    pkt->lrh.slid = 1;
    if (!pkt->tp.bth.pkey) {
        pkt->tp.bth.pkey = 0xffff;
    }
    len = vhca_wire_build(pkt, frame, sizeof(frame));
    g_assert_cmpuint(len, >, 0);
    if (corrupt_vcrc) {
        frame[len - 1] ^= 0x80;
    }
    harness_deliver(w->p.b.h, frame, len);
    harness_run(w->p.b.h);
}

/* b's cable is pulled: its port leaves LinkUp. */
static void s_ib_link_downed(World *w)
{
    world_init_ib(w, &default_opts);
    world_mark(w);
    vhca_core_set_link(&w->p.b.h->core, false);
}

/* An SM starts on b (IsSM): b's SMA tells the master SM (trap 144). */
static void s_ib_sma_trap(World *w)
{
    struct vhca_cmd_modify_port_in in = {
        .port = 1,
        .set_cap_mask = GUINT32_TO_LE(VHCA_PORT_CAP_IS_SM),
    };
    TestQp smi;

    world_init_ib(w, &default_opts);
    node_ib_smi_qp(&w->p.b, &smi);
    world_mark(w);
    g_assert_cmpuint(admin_cmd(w->p.b.h, VHCA_CMD_MODIFY_PORT, 0x4d50, &in,
                               sizeof(in), NULL), ==, VHCA_ST_OK);
    harness_run(w->p.b.h);
}

/* b's port is back in INIT (cable pulled, put back): its data waits. */
static void s_ib_xmit_discard(World *w)
{
    world_init_ib(w, &default_opts);
    vhca_core_set_link(&w->p.a.h->core, false);
    vhca_core_set_link(&w->p.a.h->core, true);
    world_mark(w);
    post(&w->p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&w->p.a);
    harness_run(w->p.a.h);
}

static void s_ib_bad_vcrc(World *w)
{
    VhcaWirePacket pkt;

    world_init_ib(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    ib_a_to_b(w, &pkt, 0, 2, true);
}

static void s_ib_dlid(World *w)
{
    VhcaWirePacket pkt;

    world_init_ib(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    ib_a_to_b(w, &pkt, 0, 7, false);
}

/* An RC packet on VL15, which is QP0's alone. */
static void s_ib_vl15(World *w)
{
    VhcaWirePacket pkt;

    world_init_ib(w, &default_opts);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    ib_a_to_b(w, &pkt, VHCA_IB_VL_SMP, 2, false);
}

static void s_ib_port_state(World *w)
{
    VhcaWirePacket pkt;

    world_init_ib(w, &default_opts);
    vhca_core_set_link(&w->p.b.h->core, false);
    vhca_core_set_link(&w->p.b.h->core, true);
    world_mark(w);
    pkt = rc_send_only(w->p.b.qp.qpn, default_opts.a_psn);
    ib_a_to_b(w, &pkt, 0, 2, false);
}

/* ---------------------------------------------------------------------- */
/* Every counter moves                                                    */
/* ---------------------------------------------------------------------- */

typedef struct CounterCase {
    enum vhca_counter counter;
    Scenario *scenario;
    bool on_b;                      /* it moves on b, not on a */
    bool peer_only;                 /* neither guest did anything wrong */
} CounterCase;

#define C(cnt, s, node, peer) \
    { VHCA_CNT_##cnt, s_##s, node == 'b', peer }

static const CounterCase counter_cases[] = {
    C(TX_PACKETS, eth_tx, 'a', true),
    C(TX_BYTES, eth_tx, 'a', true),
    C(TX_ERRORS, eth_tx_bad_len, 'a', false),
    C(RX_PACKETS, eth_rx, 'a', true),
    C(RX_BYTES, eth_rx, 'a', true),
    C(RX_NO_BUFFER, eth_rx_no_buffer, 'a', true),
    C(RX_ERRORS, eth_rx_small_buffer, 'a', false),
    C(RX_MCAST_FILTERED, eth_rx_mcast_filtered, 'a', true),
    C(ADMIN_COMMANDS, admin, 'a', true),
    C(ADMIN_ERRORS, admin_fail, 'a', false),
    C(EQ_OVERFLOWS, aeq_overflow, 'a', false),
    C(DOORBELLS, doorbell, 'a', true),
    C(ROCE_TX_PACKETS, rc_send, 'a', true),
    C(ROCE_RX_PACKETS, rc_send, 'b', true),
    C(ROCE_RX_DROPPED, drop_pkey, 'b', true),
    C(RDMA_TX_BYTES, rc_send, 'a', true),
    C(RDMA_RX_BYTES, rc_send, 'b', true),
    C(LINK_DOWNED, ib_link_downed, 'b', true),
    C(XMIT_DISCARDS, ib_xmit_discard, 'a', true),
    C(SMA_TRAPS, ib_sma_trap, 'b', true),
    C(DROP_BAD_VCRC, ib_bad_vcrc, 'b', true),
    C(DROP_DLID, ib_dlid, 'b', true),
    C(DROP_VL15, ib_vl15, 'b', true),
    C(DROP_PORT_STATE, ib_port_state, 'b', true),
    C(DROP_VLAN, drop_vlan, 'b', true),
    C(UD_TX_PACKETS, ud_loopback, 'a', true),
    C(UD_RX_PACKETS, ud_loopback, 'a', true),
    C(UD_TX_TOO_LONG, ud_too_long, 'a', true),
    C(DUPLICATE_REQUEST, rc_lost_ack, 'b', true),
    C(OUT_OF_SEQ_REQUEST, rc_lost_request, 'b', true),
    C(SEQ_NAK_SENT, rc_lost_request, 'b', true),
    C(SEQ_NAK_RCVD, rc_lost_request, 'a', true),
    C(RNR_NAK_SENT, rc_rnr, 'b', true),
    C(RNR_NAK_RCVD, rc_rnr, 'a', true),
    C(INV_REQ_NAK_SENT, rc_invalid_request, 'b', true),
    C(INV_REQ_NAK_RCVD, rc_invalid_request, 'a', true),
    C(REM_ACCESS_NAK_SENT, rc_remote_access, 'b', true),
    C(REM_ACCESS_NAK_RCVD, rc_remote_access, 'a', true),
    C(REM_OP_NAK_SENT, rc_remote_op, 'b', false),
    C(REM_OP_NAK_RCVD, rc_remote_op, 'a', false),
    C(ACK_TIMEOUTS, rc_lost_ack, 'a', true),
    C(RETRIES, rc_lost_request, 'a', true),
    C(RETRANSMITTED_PKTS, rc_lost_request, 'a', true),
    C(RETRY_EXCEEDED, rc_retry_exceeded, 'a', true),
    C(RNR_RETRY_EXCEEDED, rc_rnr_exceeded, 'a', true),
    C(UC_MSGS_DROPPED, uc_no_first, 'b', true),
    C(COMPLETION_ERRORS, rc_remote_access, 'a', true),
    C(DROP_MALFORMED, drop_malformed, 'b', true),
    C(DROP_BAD_ICRC, drop_bad_icrc, 'b', true),
    C(DROP_PKEY, drop_pkey, 'b', true),
    C(DROP_NO_QP, drop_no_qp, 'b', true),
    C(DROP_QP_STATE, drop_qp_state, 'b', true),
    C(DROP_QUEUE_FULL, drop_queue_full, 'b', true),
    C(DROP_NO_MEMORY, drop_no_memory, 'b', true),
    C(DROP_MCAST_ECHO, drop_mcast_echo, 'b', true),
    C(DROP_MCAST_NO_MEMBER, drop_mcast_no_member, 'b', true),
    C(DROP_QKEY, ud_wrong_qkey, 'a', true),
    C(DROP_NO_RWQE, ud_no_rwqe, 'a', true),
    C(DROP_UC_MSG, uc_no_first, 'b', true),
    C(DROP_STALE_RESPONSE, drop_stale_response, 'a', true),
    C(DROP_BAD_RESPONSE, drop_bad_response, 'a', true),
    C(DROP_DUP_TOO_OLD, drop_dup_too_old, 'b', true),
    C(DROP_OVERSIZE, drop_oversize, 'b', true),
};

#undef C

static void test_counter(gconstpointer data)
{
    const CounterCase *c = data;
    World w;
    Harness *h;
    const uint64_t *mark;

#ifndef VHCA_WRAP_MALLOC
    if (c->scenario == s_drop_no_memory) {
        g_test_skip("needs -Wl,--wrap=malloc to fail an allocation");
        return;
    }
#endif
    c->scenario(&w);
    h = c->on_b ? w.p.b.h : w.p.a.h;
    mark = c->on_b ? w.mark_b : w.mark_a;
    g_assert_cmpuint(counter(h, c->counter), >, mark[c->counter]);
    if (c->counter >= VHCA_CNT_DROP(0)) {
        /* Each drop counts in its reason's counter and in the sum. */
        g_assert_cmpuint(counter(h, VHCA_CNT_ROCE_RX_DROPPED) -
                         mark[VHCA_CNT_ROCE_RX_DROPPED], ==,
                         counter(h, c->counter) - mark[c->counter]);
    }
    if (c->peer_only) {
        /* What a peer or the wire did is never a guest error. */
        g_assert_cmpuint(w.p.a.h->guest_error_calls, ==, w.errors_a);
        g_assert_cmpuint(w.p.b.h->guest_error_calls, ==, w.errors_b);
    }
    pair_free(&w.p);
}

/* The table names every counter once. */
static void test_counter_table(void)
{
    unsigned seen[VHCA_CNT_MAX] = { 0 };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(counter_cases); i++) {
        seen[counter_cases[i].counter]++;
    }
    for (i = 0; i < VHCA_CNT_MAX; i++) {
        if (seen[i] != 1) {
            g_error("counter %s is in the table %u times",
                    vhca_counter_name(i), seen[i]);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Every typed trace hook fires, with its arguments                       */
/* ---------------------------------------------------------------------- */

static void check_qp_state_command(World *w)
{
    EvQpState *e = &w->p.a.h->ev.qp_state;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmpuint(e->type, ==, VHCA_QPT_RC);
    g_assert_cmpuint(e->from, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(e->to, ==, VHCA_QPS_ERR);
    g_assert_cmpuint(e->why, ==, VHCA_QP_CHANGE_COMMAND);
}

static void check_qp_state_error(World *w)
{
    EvQpState *e = &w->p.b.h->ev.qp_state;

    g_assert_cmpuint(e->qpn, ==, w->p.b.qp.qpn);
    g_assert_cmpuint(e->type, ==, VHCA_QPT_RC);
    g_assert_cmpuint(e->from, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(e->to, ==, VHCA_QPS_ERR);
    g_assert_cmpuint(e->why, ==, VHCA_QP_CHANGE_ERROR);
}

static void check_qp_state_fatal(World *w)
{
    EvQpState *e = &w->p.a.h->ev.qp_state;

    g_assert_cmpuint(e->qpn, ==, w->object);
    g_assert_cmpuint(e->type, ==, VHCA_QPT_UD);
    g_assert_cmpuint(e->from, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(e->to, ==, VHCA_QPS_ERR);
    g_assert_cmpuint(e->why, ==, VHCA_QP_CHANGE_FATAL);
}

static void check_retransmit(World *w, uint32_t psn, VhcaRetryCause why)
{
    EvRetransmit *e = &w->p.a.h->ev.retransmit;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmphex(e->psn, ==, psn);
    g_assert_cmpuint(e->why, ==, why);
}

static void check_retransmit_timeout(World *w)
{
    check_retransmit(w, default_opts.a_psn, VHCA_RETRY_TIMEOUT);
}

static void check_retransmit_seq_nak(World *w)
{
    check_retransmit(w, default_opts.a_psn, VHCA_RETRY_SEQ_NAK);
}

static void check_retransmit_implied_nak(World *w)
{
    check_retransmit(w, default_opts.a_psn + 1, VHCA_RETRY_IMPLIED_NAK);
}

static void check_nak(const EvNak *e, uint32_t qpn, uint32_t psn,
                      VhcaNakKind kind, uint8_t code)
{
    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, qpn);
    g_assert_cmphex(e->psn, ==, psn);
    g_assert_cmpuint(e->kind, ==, kind);
    g_assert_cmpuint(e->code, ==, code);
}

static void check_nak_sent_seq(World *w)
{
    check_nak(&w->p.b.h->ev.nak_sent, w->p.b.qp.qpn, default_opts.a_psn,
              VHCA_NAK_KIND_NAK, VHCA_IB_NAK_PSN_SEQ_ERROR);
}

static void check_nak_sent_rnr(World *w)
{
    check_nak(&w->p.b.h->ev.nak_sent, w->p.b.qp.qpn, default_opts.a_psn,
              VHCA_NAK_KIND_RNR, default_opts.min_rnr_timer);
}

static void check_nak_rcvd_access(World *w)
{
    check_nak(&w->p.a.h->ev.nak_rcvd, w->p.a.qp.qpn, default_opts.a_psn,
              VHCA_NAK_KIND_NAK, VHCA_IB_NAK_REMOTE_ACCESS);
}

static void check_nak_rcvd_rnr(World *w)
{
    check_nak(&w->p.a.h->ev.nak_rcvd, w->p.a.qp.qpn, default_opts.a_psn,
              VHCA_NAK_KIND_RNR, default_opts.min_rnr_timer);
}

static void check_rnr_wait(World *w)
{
    EvRnrWait *e = &w->p.a.h->ev.rnr_wait;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmphex(e->psn, ==, default_opts.a_psn);
    g_assert_cmpuint(e->timer_ns, ==, 10000);      /* timer code 1 */
}

static void check_ack_timeout(World *w)
{
    EvAckTimeout *e = &w->p.a.h->ev.ack_timeout;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmphex(e->psn, ==, default_opts.a_psn);
    g_assert_cmpuint(e->retries_left, ==, default_opts.retry_cnt);
}

static void check_ack_timeout_last(World *w)
{
    EvAckTimeout *e = &w->p.a.h->ev.ack_timeout;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->retries_left, ==, 0);
}

/* A timeout: the window of 256 packets restarts at one (the probe). */
static void check_window_cut_timeout(World *w)
{
    EvWindowCut *e = &w->p.a.h->ev.window_cut;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmpuint(e->from, ==, VHCA_REQ_MAX_UNACKED);
    g_assert_cmpuint(e->to, ==, 1);
    g_assert_cmpuint(e->why, ==, VHCA_RETRY_TIMEOUT);
    g_assert_cmpuint(cc_counter(w->p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS), ==,
                     1);
}

/* A sequence NAK: the window is halved. */
static void check_window_cut_seq_nak(World *w)
{
    EvWindowCut *e = &w->p.a.h->ev.window_cut;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmpuint(e->from, ==, VHCA_REQ_MAX_UNACKED);
    g_assert_cmpuint(e->to, ==, VHCA_REQ_MAX_UNACKED / 2);
    g_assert_cmpuint(e->why, ==, VHCA_RETRY_SEQ_NAK);
    g_assert_cmpuint(cc_counter(w->p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS), ==,
                     1);
}

/* The timeout doubles the timer for the resend: 2T (timeout 14). */
static void check_timer_backoff(World *w)
{
    EvTimerBackoff *e = &w->p.a.h->ev.timer_backoff;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmpuint(e->timer_ns, ==, 2 * (4096ull << default_opts.timeout));
    g_assert_cmpuint(e->backoff, ==, 1);
    g_assert_cmpuint(cc_counter(w->p.a.h, VHCA_CC_CNT_REQ_TIMER_BACKOFFS), ==,
                     1);
}

static void check_cqe_error(World *w)
{
    EvCqeError *e = &w->p.a.h->ev.cqe_error;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->cqn, ==, w->p.a.scq.cqn);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmphex(e->wr_id, ==, 0xa1);
    g_assert_cmpuint(e->opcode, ==, VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(e->status, ==, VHCA_WC_REM_ACCESS_ERR);
    g_assert_cmphex(e->vendor_err, ==,
                    VHCA_VENDOR_ERR_NAK | VHCA_IB_NAK_REMOTE_ACCESS);
}

static void check_rx_drop(World *w)
{
    Harness *h = w->p.b.h;

    g_assert_cmpuint(h->rx_drops, ==, 1);
    g_assert_cmpstr(h->last_drop_reason, ==, "pkey");
    g_assert_cmpuint(h->last_drop_qpn, ==, w->p.b.qp.qpn);
}

static void check_admin_cmd_done(World *w)
{
    Harness *h = w->p.a.h;

    g_assert_cmpuint(h->last_opcode, ==, VHCA_CMD_DESTROY_PD);
    g_assert_cmpuint(h->last_status, ==, VHCA_ST_BAD_INDEX);
}

static void check_ub_reg_access(World *w)
{
    EvUbRegAccess *e = &w->p.a.h->ev.ub_reg_access;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_true(e->write);
    g_assert_cmphex(e->offset, ==, VHCA_REG_VERSION);
    g_assert_cmpuint(e->size, ==, 4);
    g_assert_cmphex(e->value, ==, 5);
}

static void check_ub_doorbell(World *w)
{
    EvUbDoorbell *e = &w->p.a.h->ev.ub_doorbell;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->page, ==, w->p.a.page + 1);
    g_assert_cmphex(e->offset, ==, VHCA_DB_SQ);
    g_assert_cmpuint(e->size, ==, 8);
    g_assert_cmpuint(e->object, ==, w->p.a.qp.qpn);
}

static void check_ub_ring_doorbell(World *w)
{
    EvUbRingDoorbell *e = &w->p.a.h->ev.ub_ring_doorbell;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_TX);
    g_assert_cmpuint(e->object, ==, 0);
    g_assert_cmpuint(e->value, ==, 1);
}

static void check_ub_cq_doorbell(World *w)
{
    EvUbCqDoorbell *e = &w->p.a.h->ev.ub_cq_doorbell;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->cqn, ==, w->p.a.scq.cqn);
    g_assert_cmphex(e->value, ==, 3u << 30);
    g_assert_cmpuint(e->ci, ==, 0);
    g_assert_cmpuint(e->pi, ==, 0);
}

static void check_err_doorbell_index_sq(World *w)
{
    EvErrDoorbellIndex *e = &w->p.a.h->ev.err_doorbell_index;
    uint32_t size = 1u << w->p.a.qp.sq_log;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_SQ);
    g_assert_cmpuint(e->object, ==, w->p.a.qp.qpn);
    g_assert_cmpuint(e->index, ==, size + 1);
    g_assert_cmpuint(e->low, ==, 0);
    g_assert_cmpuint(e->high, ==, size);
}

static void check_err_doorbell_index_tx(World *w)
{
    EvErrDoorbellIndex *e = &w->p.a.h->ev.err_doorbell_index;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_TX);
    g_assert_cmpuint(e->index, ==, (1u << ETH_LOG) + 1);
    g_assert_cmpuint(e->low, ==, 0);
    g_assert_cmpuint(e->high, ==, 1u << ETH_LOG);
}

static void check_err_ring_config(World *w)
{
    EvErrRingConfig *e = &w->p.a.h->ev.err_ring_config;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_TX);
    g_assert_cmphex(e->base, ==, TX_RING_ADDR);
    g_assert_cmpuint(e->log_size, ==, 0);
}

static void check_err_ring_running(World *w)
{
    EvErrRingRunning *e = &w->p.a.h->ev.err_ring_running;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_TX);
    g_assert_cmphex(e->reg, ==, VHCA_REG_TX_LOG_SIZE - VHCA_REG_TX_BASE_LO);
    g_assert_cmpuint(e->value, ==, 3);
}

static void check_err_guest_ram(World *w)
{
    EvErrGuestRam *e = &w->p.a.h->ev.err_guest_ram;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_TX);
    g_assert_cmpuint(e->index, ==, 0);
    g_assert_cmphex(e->addr, ==, BAD_ADDR);
}

static void check_err_frame_len(World *w)
{
    EvErrFrameLen *e = &w->p.a.h->ev.err_frame_len;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_TX);
    g_assert_cmpuint(e->index, ==, 0);
    g_assert_cmpuint(e->len, ==, 5);
    g_assert_cmpuint(e->min, ==, VHCA_ETH_HLEN);
    g_assert_cmpuint(e->max, ==, VHCA_CORE_DEFAULT_MTU + VHCA_ETH_OVERHEAD);
}

static void check_err_frame_len_rx(World *w)
{
    EvErrFrameLen *e = &w->p.a.h->ev.err_frame_len;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_RX);
    g_assert_cmpuint(e->len, ==, VHCA_ETH_HLEN + 50);
    g_assert_cmpuint(e->max, ==, 16);
}

static void check_err_queue_overflow_aeq(World *w)
{
    EvErrQueueOverflow *e = &w->p.a.h->ev.err_queue_overflow;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_AEQ);
    g_assert_cmpuint(e->object, ==, 0);
    g_assert_cmpuint(e->pi - e->ci, ==, 1u << AEQ_LOG);
}

static void check_err_queue_overflow_cq(World *w)
{
    EvErrQueueOverflow *e = &w->p.a.h->ev.err_queue_overflow;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->ring, ==, VHCA_RING_CQ);
    g_assert_cmpuint(e->pi - e->ci, ==, 2);
}

static void check_err_wqe(World *w)
{
    EvErrWqe *e = &w->p.a.h->ev.err_wqe;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.a.qp.qpn);
    g_assert_cmpuint(e->queue, ==, VHCA_RING_SQ);
    g_assert_cmpuint(e->index, ==, 0);
    g_assert_cmpuint(e->opcode, ==, VHCA_WC_SEND);
    g_assert_cmpuint(e->status, ==, VHCA_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(e->vendor_err, ==, 0);
}

static void check_err_wqe_rq(World *w)
{
    EvErrWqe *e = &w->p.b.h->ev.err_wqe;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->qpn, ==, w->p.b.qp.qpn);
    g_assert_cmpuint(e->queue, ==, VHCA_RING_RQ);
    g_assert_cmpuint(e->opcode, ==, VHCA_WC_RECV);
    g_assert_cmpuint(e->status, ==, VHCA_WC_LOC_PROT_ERR);
}

static void check_err_admin_cmd(World *w)
{
    EvErrAdminCmd *e = &w->p.a.h->ev.err_admin_cmd;

    g_assert_cmpuint(e->n, ==, 1);
    g_assert_cmpuint(e->opcode, ==, VHCA_CMD_DESTROY_PD);
    g_assert_cmpuint(e->status, ==, VHCA_ST_BAD_INDEX);
    g_assert_cmphex(e->syndrome, ==, 0x3f);
}

typedef struct HookCase {
    const char *path;
    Scenario *scenario;
    void (*check)(World *w);
} HookCase;

static const HookCase hook_cases[] = {
    { "qp-state/command", s_qp_to_err, check_qp_state_command },
    { "qp-state/error", s_rc_remote_access, check_qp_state_error },
    { "qp-state/fatal", s_cq_overflow, check_qp_state_fatal },
    { "retransmit/timeout", s_rc_lost_ack, check_retransmit_timeout },
    { "retransmit/seq-nak", s_rc_lost_request, check_retransmit_seq_nak },
    { "retransmit/implied-nak", s_rc_implied_nak,
      check_retransmit_implied_nak },
    { "nak-sent/seq", s_rc_lost_request, check_nak_sent_seq },
    { "nak-sent/rnr", s_rc_rnr, check_nak_sent_rnr },
    { "nak-rcvd/remote-access", s_rc_remote_access, check_nak_rcvd_access },
    { "nak-rcvd/rnr", s_rc_rnr, check_nak_rcvd_rnr },
    { "rnr-wait", s_rc_rnr, check_rnr_wait },
    { "ack-timeout", s_rc_lost_ack, check_ack_timeout },
    { "ack-timeout/last", s_rc_retry_exceeded, check_ack_timeout_last },
    { "window-cut/timeout", s_rc_lost_ack, check_window_cut_timeout },
    { "window-cut/seq-nak", s_rc_lost_request, check_window_cut_seq_nak },
    { "timer-backoff", s_rc_lost_ack, check_timer_backoff },
    { "cqe-error", s_rc_remote_access, check_cqe_error },
    { "rx-drop", s_drop_pkey, check_rx_drop },
    { "admin-cmd-done", s_admin_fail, check_admin_cmd_done },
    { "ub-reg-access", s_ub_reg_access, check_ub_reg_access },
    { "ub-doorbell", s_ub_doorbell, check_ub_doorbell },
    { "ub-ring-doorbell", s_eth_tx_disabled, check_ub_ring_doorbell },
    { "ub-cq-doorbell", s_ub_cq_doorbell, check_ub_cq_doorbell },
    { "err-doorbell-index/sq", s_sq_pi_beyond, check_err_doorbell_index_sq },
    { "err-doorbell-index/tx", s_eth_tx_pi_beyond,
      check_err_doorbell_index_tx },
    { "err-ring-config", s_eth_tx_bad_config, check_err_ring_config },
    { "err-ring-running", s_eth_tx_ring_running, check_err_ring_running },
    { "err-guest-ram", s_eth_tx_bad_buffer, check_err_guest_ram },
    { "err-frame-len/tx", s_eth_tx_bad_len, check_err_frame_len },
    { "err-frame-len/rx", s_eth_rx_small_buffer, check_err_frame_len_rx },
    { "err-queue-overflow/aeq", s_aeq_overflow,
      check_err_queue_overflow_aeq },
    { "err-queue-overflow/cq", s_cq_overflow, check_err_queue_overflow_cq },
    { "err-wqe/sq", s_bad_wqe, check_err_wqe },
    { "err-wqe/rq", s_rc_remote_op, check_err_wqe_rq },
    { "err-admin-cmd", s_admin_fail, check_err_admin_cmd },
};

static void test_hook(gconstpointer data)
{
    const HookCase *c = data;
    World w;

    c->scenario(&w);
    c->check(&w);
    pair_free(&w.p);
}

int main(int argc, char **argv)
{
    unsigned i;

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/obs/counter-table", test_counter_table);
    for (i = 0; i < G_N_ELEMENTS(counter_cases); i++) {
        g_autofree char *path =
            g_strdup_printf("/vhca/obs/counter/%s",
                            vhca_counter_name(counter_cases[i].counter));

        g_test_add_data_func(path, &counter_cases[i], test_counter);
    }
    for (i = 0; i < G_N_ELEMENTS(hook_cases); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/obs/hook/%s",
                                                hook_cases[i].path);

        g_test_add_data_func(path, &hook_cases[i], test_hook);
    }
    return g_test_run();
}
