/*
 * An RC requester facing a peer far slower than itself (issue 31: a vhca
 * guest writing to an rxe guest): the requester's loss back-off
 * (vhca-req.c, "Window and timer back-off"; docs/developer-guide.rst,
 * "Loss back-off").  The wire from a to b is a slow peer's receive path:
 * a queue of SLOW_CAP frames that the peer empties one frame every
 * SLOW_GAP_NS, tail-dropping what arrives while it is full, shared by
 * all of a's QPs - as rxe behind a virtio-net ring takes what vhca sends
 * tens of times too fast.  b's answers come back at once.
 *
 * Go-back-N resends of whole windows at full speed into such a peer lose
 * the same packets again, until a QP's retries run out (IBTA 9.7.6.1.3:
 * RETRY_EXC_ERR); with the back-off every QP completes, the counters
 * showing the window cuts and timer doublings; once the peer keeps up,
 * the window grows back to VHCA_REQ_MAX_UNACKED.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <string.h>

#include "vhca-node.h"
#include "vhca-transport.h"

#define US              1000ull
#define MS              (1000 * US)
#define NQPS            4
#define MSG_LEN         (64 * 1024)     /* 64 packets at MTU 1024 */
#define NMSGS           4               /* per QP, to the same 64 KiB */
/*
 * The slow peer: a queue of 256 frames that it empties at 5000 frames a
 * second, 51 ms for a full queue - twelve times the Local ACK Timeout
 * (10: T = 4.2 ms), as rxe in a TCG guest behind a virtio ring is to
 * ib_write_bw's 67 ms.  On main, some QP exhausts its retries with these
 * (and with 300 us, 192 frames, timeout 8 or two QPs: all were tried).
 */
#define SLOW_CAP        256
#define SLOW_GAP_NS     (200 * US)
#define TIMEOUT         10
#define MAX_FRAME       (VHCA_ETH_MAX_FRAME)

typedef struct SlowFrame {
    uint8_t data[MAX_FRAME];
    size_t len;
    uint64_t at;                    /* when the peer takes it */
} SlowFrame;

/* The slow peer's receive queue, between a and b. */
typedef struct SlowPeer {
    SlowFrame q[SLOW_CAP];
    unsigned head, count;
    uint64_t last_at;
    bool fast;                      /* deliver at once: the peer keeps up */
    uint64_t taken, dropped;
} SlowPeer;

typedef struct Flows {
    Pair p;
    TestQp a[NQPS], b[NQPS];        /* a[0], b[0]: the pair's own QPs */
} Flows;

static void slow_hook(Harness *h, const uint8_t *buf, size_t len)
{
    SlowPeer *s = h->tx_hook_opaque;
    SlowFrame *f;

    g_assert_cmpuint(len, <=, MAX_FRAME);
    if (s->fast) {
        s->taken++;
        harness_deliver(h->peer, buf, len);
        return;
    }
    if (s->count == SLOW_CAP) {
        s->dropped++;
        return;
    }
    f = &s->q[(s->head + s->count++) % SLOW_CAP];
    memcpy(f->data, buf, len);
    f->len = len;
    f->at = MAX(h->now_ns, s->last_at) + SLOW_GAP_NS;
    s->last_at = f->at;
}

/* Hand b the frames due by now. */
static void slow_deliver(SlowPeer *s, Harness *b)
{
    while (s->count && s->q[s->head].at <= b->now_ns) {
        SlowFrame *f = &s->q[s->head];

        s->head = (s->head + 1) % SLOW_CAP;
        s->count--;
        s->taken++;
        harness_deliver(b, f->data, f->len);
    }
}

/*
 * Run both engines until nothing is left to do or @max_ns passed: each
 * time both are idle, the clocks go to the next event, a timer or the
 * slow peer taking its next frame.
 */
static void slow_run(Flows *fl, SlowPeer *s, uint64_t max_ns)
{
    Harness *a = fl->p.a.h, *b = fl->p.b.h;
    uint64_t start = a->now_ns;

    for (;;) {
        uint64_t next = UINT64_MAX;

        harness_pair_settle(a, b, 0);
        if (s->count) {
            next = s->q[s->head].at;
        }
        if (a->timer_armed && a->timer_deadline < next) {
            next = a->timer_deadline;
        }
        if (b->timer_armed && b->timer_deadline < next) {
            next = b->timer_deadline;
        }
        if (next == UINT64_MAX || a->now_ns - start >= max_ns) {
            return;
        }
        next = next > a->now_ns ? next - a->now_ns : 0;
        harness_advance(a, next);
        harness_advance(b, next);
        slow_deliver(s, b);
    }
}

static void flow_connect(Harness *h, uint32_t qpn, Node *to, uint32_t dest,
                         const ConnOpts *o, uint32_t sq_psn, uint32_t rq_psn)
{
    qp_connect(h, qpn, to->gid, to->h->core.cfg.mac, dest, o, sq_psn,
               rq_psn);
}

/* NQPS RC QPs from a to b, timeout TIMEOUT, retry_cnt 7. */
static void flows_init(Flows *fl, SlowPeer *s)
{
    ConnOpts o = default_opts;
    Pair *p = &fl->p;
    unsigned i;

    o.timeout = TIMEOUT;
    node_init(&p->a, 1, VHCA_QPT_RC);
    node_init(&p->b, 2, VHCA_QPT_RC);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    fl->a[0] = p->a.qp;
    fl->b[0] = p->b.qp;
    for (i = 1; i < NQPS; i++) {
        g_assert_cmpuint(rdma_create_qp(p->a.h, &fl->a[i], VHCA_QPT_RC,
                                        p->a.pdn, p->a.scq.cqn,
                                        p->a.rcq.cqn, p->a.page),
                         ==, VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_qp(p->b.h, &fl->b[i], VHCA_QPT_RC,
                                        p->b.pdn, p->b.scq.cqn,
                                        p->b.rcq.cqn, p->b.page),
                         ==, VHCA_ST_OK);
    }
    for (i = 0; i < NQPS; i++) {
        uint32_t psn_a = 0x1000 * (i + 1), psn_b = 0x800000 + psn_a;

        flow_connect(p->a.h, fl->a[i].qpn, &p->b, fl->b[i].qpn, &o, psn_a,
                     psn_b);
        flow_connect(p->b.h, fl->b[i].qpn, &p->a, fl->a[i].qpn, &o, psn_b,
                     psn_a);
    }
    memset(s, 0, sizeof(*s));
    p->a.h->tx_hook = slow_hook;
    p->a.h->tx_hook_opaque = s;
}

/* @n WRITEs of @len on each QP, QP i's to b's buffer at i * MSG_LEN. */
static void flows_post(Flows *fl, unsigned n, uint32_t len, uint64_t wr_base)
{
    unsigned i, k;

    for (i = 0; i < NQPS; i++) {
        Node tmp = fl->p.a;

        tmp.qp = fl->a[i];
        fill(&tmp, i * MSG_LEN, MSG_LEN, i + 1);
        for (k = 0; k < n; k++) {
            post(&tmp, wr_base + i * 0x100 + k, VHCA_WR_RDMA_WRITE,
                 VHCA_WQE_SIGNALED, i * MSG_LEN, len,
                 fl->p.b.buf + i * MSG_LEN, fl->p.b.key);
        }
        ring_sq(&tmp);
        fl->a[i] = tmp.qp;
    }
}

/* The send CQEs, any order between QPs: how many, how many SUCCESS. */
static unsigned flows_reap(Flows *fl, unsigned *ok)
{
    struct vhca_cqe cqe;
    unsigned n = 0;

    *ok = 0;
    while (cq_poll(fl->p.a.h, &fl->p.a.scq, &cqe)) {
        n++;
        *ok += cqe.status == VHCA_WC_SUCCESS;
    }
    return n;
}

static VhcaQp *engine_qp(Harness *h, uint32_t qpn)
{
    return &h->core.qps[qpn];
}

/*
 * The slow peer takes a tenth of what a could send; every QP's WRITEs
 * complete, each QP is in RTS, every byte landed, and the counters show
 * the back-off: windows cut, timers doubled, none of it a retry
 * exhausted.  On a requester that resends whole windows at full speed
 * (main before the back-off) some QP ends RETRY_EXC_ERR here.
 */
static void test_slow_peer_completes(void)
{
    SlowPeer *s = g_new0(SlowPeer, 1);
    Flows fl;
    unsigned i, n, ok;

    flows_init(&fl, s);
    flows_post(&fl, NMSGS, MSG_LEN, 0xa000);
    slow_run(&fl, s, 60000 * MS);
    n = flows_reap(&fl, &ok);
    g_test_message("slow peer: %u/%u WQEs SUCCESS, %" PRIu64 " taken, %"
                   PRIu64 " dropped, %" PRIu64 " ACK timeouts, %" PRIu64
                   " retries, %" PRIu64 " window cuts (down to %u), %"
                   PRIu64 " timer back-offs, %" PRIu64 " ms",
                   ok, NQPS * NMSGS, s->taken, s->dropped,
                   counter(fl.p.a.h, VHCA_CNT_ACK_TIMEOUTS),
                   counter(fl.p.a.h, VHCA_CNT_RETRIES),
                   cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS),
                   fl.p.a.h->ev.window_cut.min_to,
                   cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_TIMER_BACKOFFS),
                   (uint64_t)(fl.p.a.h->now_ns / MS));
    g_assert_cmpuint(counter(fl.p.a.h, VHCA_CNT_RETRY_EXCEEDED), ==, 0);
    g_assert_cmpuint(n, ==, NQPS * NMSGS);
    g_assert_cmpuint(ok, ==, NQPS * NMSGS);
    for (i = 0; i < NQPS; i++) {
        Node tmp = fl.p.a;

        g_assert_cmpuint(qp_state(fl.p.a.h, fl.a[i].qpn), ==, VHCA_QPS_RTS);
        tmp.qp = fl.a[i];
        expect_same(&tmp, i * MSG_LEN, &fl.p.b, i * MSG_LEN, MSG_LEN);
    }
    /* The peer did drop most of what came: the back-off was needed. */
    g_assert_cmpuint(s->dropped, >, 0);
    g_assert_cmpuint(cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS), >,
                     0);
    g_assert_cmpuint(fl.p.a.h->ev.window_cut.n, ==,
                     cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS));
    g_assert_cmpuint(fl.p.a.h->ev.window_cut.min_to, <, SLOW_CAP / NQPS);
    g_assert_cmpuint(fl.p.a.h->ev.timer_backoff.n, ==,
                     cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_TIMER_BACKOFFS));
    /* The responder never erred: drops are the wire's, not b's. */
    for (i = 0; i < NQPS; i++) {
        g_assert_cmpuint(qp_state(fl.p.b.h, fl.b[i].qpn), ==, VHCA_QPS_RTS);
    }
    pair_free(&fl.p);
    g_free(s);
}

/*
 * After the losses, a peer that keeps up: each QP's window grows back,
 * slow start then one packet per window, to VHCA_REQ_MAX_UNACKED, and
 * the timer is T again; nothing more is cut.
 */
static void test_window_grows_back(void)
{
    SlowPeer *s = g_new0(SlowPeer, 1);
    Flows fl;
    uint64_t cuts;
    unsigned i, round, n, ok;
    bool all_max = false;

    flows_init(&fl, s);
    flows_post(&fl, NMSGS, MSG_LEN, 0xa000);
    slow_run(&fl, s, 60000 * MS);
    g_assert_cmpuint(flows_reap(&fl, &ok), ==, NQPS * NMSGS);
    g_assert_cmpuint(ok, ==, NQPS * NMSGS);
    for (i = 0; i < NQPS; i++) {
        g_assert_cmpuint(engine_qp(fl.p.a.h, fl.a[i].qpn)->req.window, <,
                         VHCA_REQ_MAX_UNACKED);
    }
    cuts = cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS);

    s->fast = true;
    /*
     * From ssthresh, one packet more per window's worth ACKed: from 2,
     * the smallest, to 256 is about 256^2 / 2 packets, some 32768 - 512
     * WRITEs of 64 packets per QP at most; it stops as soon as every
     * window is back.
     */
    for (round = 0; round < 600 && !all_max; round++) {
        flows_post(&fl, 1, MSG_LEN, 0xb000);
        slow_run(&fl, s, 60000 * MS);
        n = flows_reap(&fl, &ok);
        g_assert_cmpuint(n, ==, NQPS);
        g_assert_cmpuint(ok, ==, NQPS);
        all_max = true;
        for (i = 0; i < NQPS; i++) {
            const VhcaQp *qp = engine_qp(fl.p.a.h, fl.a[i].qpn);

            g_assert_cmpuint(qp->req.window, <=, VHCA_REQ_MAX_UNACKED);
            g_assert_cmpuint(qp->req.backoff, ==, 0);
            all_max &= qp->req.window == VHCA_REQ_MAX_UNACKED;
        }
    }
    g_test_message("windows back at %u after %u rounds", VHCA_REQ_MAX_UNACKED,
                   round);
    g_assert_true(all_max);
    g_assert_cmpuint(cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS), ==,
                     cuts);
    pair_free(&fl.p);
    g_free(s);
}

/*
 * Between two vhca with no loss nothing changes: the window stays at
 * VHCA_REQ_MAX_UNACKED, nothing is cut, the timer is never doubled,
 * nothing is sent twice.  (16 KiB WRITEs: the harness hands b a whole
 * burst before b runs, and 256 frames of 1 KiB would overflow b's
 * queue, VHCA_RXQ_MAX_QP_BYTES, where two QEMU processes run side by
 * side.)
 */
static void test_no_loss_no_backoff(void)
{
    SlowPeer *s = g_new0(SlowPeer, 1);
    Flows fl;
    unsigned i, ok;

    flows_init(&fl, s);
    s->fast = true;
    flows_post(&fl, NMSGS, MSG_LEN / 4, 0xa000);
    slow_run(&fl, s, 60000 * MS);
    g_assert_cmpuint(flows_reap(&fl, &ok), ==, NQPS * NMSGS);
    g_assert_cmpuint(ok, ==, NQPS * NMSGS);
    g_assert_cmpuint(counter(fl.p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(fl.p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 0);
    g_assert_cmpuint(cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_WINDOW_CUTS), ==,
                     0);
    g_assert_cmpuint(cc_counter(fl.p.a.h, VHCA_CC_CNT_REQ_TIMER_BACKOFFS), ==,
                     0);
    for (i = 0; i < NQPS; i++) {
        g_assert_cmpuint(engine_qp(fl.p.a.h, fl.a[i].qpn)->req.window, ==,
                         VHCA_REQ_MAX_UNACKED);
    }
    pair_free(&fl.p);
    g_free(s);
}

/*
 * A window cut below 64 asks for an ACK every half window: responders
 * (vhca's, rxe's) acknowledge only AckReq'd packets, and a window of 8
 * that asked every 32 packets would wait for its timer each window.  So
 * a 64 KiB WRITE through a window of 8 to a peer that keeps up takes no
 * timeout and a fraction of T.
 */
static void test_small_window_asks_for_acks(void)
{
    SlowPeer *s = g_new0(SlowPeer, 1);
    VhcaRequester *req;
    Flows fl;
    unsigned ok;

    flows_init(&fl, s);
    s->fast = true;
    req = &engine_qp(fl.p.a.h, fl.a[0].qpn)->req;
    req->window = req->ssthresh = 8;
    fill(&fl.p.a, 0, MSG_LEN, 7);
    post(&fl.p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, MSG_LEN,
         fl.p.b.buf, fl.p.b.key);
    ring_sq(&fl.p.a);
    slow_run(&fl, s, 60000 * MS);
    g_assert_cmpuint(flows_reap(&fl, &ok), ==, 1);
    g_assert_cmpuint(ok, ==, 1);
    expect_same(&fl.p.a, 0, &fl.p.b, 0, MSG_LEN);
    g_assert_cmpuint(counter(fl.p.a.h, VHCA_CNT_ACK_TIMEOUTS), ==, 0);
    g_assert_cmpuint(fl.p.a.h->now_ns, <, 4096ull << TIMEOUT);
    /* Slow start's cap: 8 is ssthresh, so additive increase from there. */
    g_assert_cmpuint(req->window, >, 8);
    g_assert_cmpuint(req->window, <, 16);
    pair_free(&fl.p);
    g_free(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/backoff/slow-peer-completes",
                    test_slow_peer_completes);
    g_test_add_func("/vhca/backoff/window-grows-back", test_window_grows_back);
    g_test_add_func("/vhca/backoff/no-loss-no-backoff",
                    test_no_loss_no_backoff);
    g_test_add_func("/vhca/backoff/small-window-asks-for-acks",
                    test_small_window_asks_for_acks);
    return g_test_run();
}
