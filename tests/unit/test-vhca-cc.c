/*
 * RoCEv2 congestion control between two engines (docs/specs/vhca.rst,
 * "Congestion control"): ECT(0) on transmit (RFC 3168 6.1.1), the
 * notification point answering CE marks with CNPs (IBTA annex A17.9.2,
 * A17.9.3), the reaction point cutting the QP's DCQCN rate on them, and
 * the drops of CNPs that are not well formed.
 *
 * The wire between the engines plays the congested switch: it rewrites
 * the ECN field of the data frames to CE (RFC 3168 section 5) and fixes
 * the IPv4 header checksum; the ICRC covers the TOS byte as ones (A17.3.3)
 * and stays valid.  It also counts what crosses it, so that every count
 * below is what was on the wire, not what the engine says it sent.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <string.h>

#include "vhca-node.h"
#include "vhca-transport.h"

/* Ethernet (no VLAN), IPv4, UDP, BTH: where the fields are. */
#define L3              14
#define TOS             (L3 + 1)
#define BTH             (L3 + 20 + 8)
#define CNP_LEN         (BTH + VHCA_IB_BTH_LEN + 16 + VHCA_IB_ICRC_LEN)
#define MAX_CNPS        16
#define MAX_DATA        256

#define US              1000ull

/* One direction of the wire. */
typedef struct CcWire {
    bool mark_ce;                   /* data frames leave as CE */
    unsigned frames;                /* RoCE frames seen */
    unsigned data;                  /* of them not CNPs */
    unsigned cnps;
    uint64_t data_bytes;            /* frame bytes of the data frames */
    uint64_t data_ns[MAX_DATA];     /* when each of the first left */
    uint32_t data_len[MAX_DATA];    /* and its length, IP to ICRC */
    unsigned tos_count[256];        /* data frames by TOS byte as sent */
    uint64_t cnp_ns[MAX_CNPS];      /* when each CNP left */
    uint8_t cnp[CNP_LEN];           /* the last CNP, as sent */
    size_t cnp_len;
} CcWire;

static void cc_hook(Harness *h, const uint8_t *buf, size_t len)
{
    CcWire *w = h->tx_hook_opaque;
    uint8_t frame[VHCA_ETH_MAX_FRAME];

    memcpy(frame, buf, len);
    g_assert_cmpuint(len, >=, BTH + VHCA_IB_BTH_LEN + VHCA_IB_ICRC_LEN);
    g_assert_cmphex(frame[12] << 8 | frame[13], ==, 0x0800);
    w->frames++;
    if (frame[BTH] == VHCA_BTH_OPCODE_CNP) {
        g_assert_cmpuint(w->cnps, <, MAX_CNPS);
        w->cnp_ns[w->cnps++] = h->now_ns;
        g_assert_cmpuint(len, ==, CNP_LEN);
        memcpy(w->cnp, frame, len);
        w->cnp_len = len;
    } else {
        if (w->data < MAX_DATA) {
            w->data_ns[w->data] = h->now_ns;
            w->data_len[w->data] = (uint32_t)(len - L3);
        }
        w->data++;
        w->data_bytes += len;
        w->tos_count[frame[TOS]]++;
        if (w->mark_ce) {
            frame[TOS] |= VHCA_ECN_CE;
            roce_frame_fix_crcs(frame, len);
        }
    }
    harness_deliver(h->peer, frame, len);
}

/*
 * Two @type nodes back to back, a's QP a second one, so that the two
 * QPNs differ and a CNP to the wrong one shows.
 */
static void cc_nodes_init(Pair *p, uint8_t type)
{
    node_init(&p->a, 1, type);
    node_init(&p->b, 2, type);
    g_assert_cmpuint(rdma_create_qp(p->a.h, &p->a.qp, type, p->a.pdn,
                                    p->a.scq.cqn, p->a.rcq.cqn, p->a.page),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(p->a.qp.qpn, !=, p->b.qp.qpn);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
}

/* Two RC nodes whose paths carry traffic class @tc_a and @tc_b. */
static void cc_pair_init(Pair *p, uint8_t tc_a, uint8_t tc_b)
{
    const ConnOpts *o = &default_opts;
    struct vhca_qp_attr path;

    cc_nodes_init(p, VHCA_QPT_RC);
    memset(&path, 0, sizeof(path));
    path.hop_limit = 64;
    path.traffic_class = tc_a;
    memcpy(path.dgid, p->b.gid, 16);
    memcpy(path.dmac, p->b.h->core.cfg.mac, 6);
    qp_connect_path(p->a.h, p->a.qp.qpn, &path, p->b.qp.qpn, o, o->a_psn,
                    o->b_psn);
    path.traffic_class = tc_b;
    memcpy(path.dgid, p->a.gid, 16);
    memcpy(path.dmac, p->a.h->core.cfg.mac, 6);
    qp_connect_path(p->b.h, p->b.qp.qpn, &path, p->a.qp.qpn, o, o->b_psn,
                    o->a_psn);
}

static void cc_attach(Pair *p, CcWire *wa, CcWire *wb)
{
    p->a.h->tx_hook = cc_hook;
    p->a.h->tx_hook_opaque = wa;
    p->b.h->tx_hook = cc_hook;
    p->b.h->tx_hook_opaque = wb;
}

/*
 * An RC pair on the counting wire, congestion control on both sides with
 * @over on top of DCQCN's defaults; returns a's QP.
 */
static VhcaQp *cc_pair_up(Pair *p, CcWire *wa, CcWire *wb,
                          const CcParam *over, unsigned n)
{
    const uint32_t all = VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP;

    cc_pair_init(p, 0, 0);
    cc_attach(p, wa, wb);
    set_cc(p->a.h, all, over, n);
    set_cc(p->b.h, all, over, n);
    return &p->a.h->core.qps[p->a.qp.qpn];
}

static uint64_t settle(Pair *p)
{
    return harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

/* Move both clocks to @t (ns since the pair was made), timers firing. */
static void advance_to(Pair *p, uint64_t t)
{
    Harness *a = p->a.h, *b = p->b.h;

    for (;;) {
        uint64_t next = t;

        harness_pair_settle(a, b, 0);
        if (a->timer_armed && a->timer_deadline < next) {
            next = a->timer_deadline;
        }
        if (b->timer_armed && b->timer_deadline < next) {
            next = b->timer_deadline;
        }
        g_assert_cmpuint(next, >=, a->now_ns);
        harness_advance(a, next - a->now_ns);
        harness_advance(b, next - b->now_ns);
        if (next == t) {
            harness_pair_settle(a, b, 0);
            return;
        }
    }
}

/* An RDMA WRITE of @len bytes from a's buffer at @off to b's at @off. */
static void write_msg(Pair *p, uint64_t wr_id, uint32_t off, uint32_t len)
{
    fill(&p->a, off, len, (uint32_t)wr_id);
    post(&p->a, wr_id, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, off, len,
         p->b.buf + off, p->b.key);
    ring_sq(&p->a);
}

static void expect_written(Pair *p, uint64_t wr_id, uint32_t off,
                           uint32_t len)
{
    expect_cqe(&p->a, &p->a.scq, wr_id, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&p->a, off, &p->b, off, len);
}

static VhcaQp *qp_of(Node *n)
{
    return &n->h->core.qps[n->qp.qpn];
}

/*
 * ECN on: every RoCE packet leaves ECT(0) with the path's DSCP, whatever
 * ECN bits the traffic class carried (RFC 3168 6.1.1); ECN off: the TOS
 * byte is the traffic class as given, as before congestion control.  A
 * receiver counts the CE marks it gets, and with the NP off sends no CNP.
 */
static void test_ecn_transmit(void)
{
    CcWire wa = { 0 }, wb = { 0 };
    Pair p;

    /* a: DSCP 46 with both ECN bits set (CE); b: DSCP 26, Not-ECT. */
    cc_pair_init(&p, 0xbb, 0x68);
    cc_attach(&p, &wa, &wb);
    set_cc(p.a.h, VHCA_CC_ECN_TX, NULL, 0);
    write_msg(&p, 1, 0, 8 * 1024);
    settle(&p);
    expect_written(&p, 1, 0, 8 * 1024);
    g_assert_cmpuint(wa.data, ==, 8);
    g_assert_cmpuint(wa.tos_count[46 << 2 | VHCA_ECN_ECT0], ==, 8);
    /* b's ACKs: ECN off there, the traffic class as given. */
    g_assert_cmpuint(wb.data, >=, 1);
    g_assert_cmpuint(wb.tos_count[0x68], ==, wb.data);
    g_assert_cmpuint(cc_counter(p.b.h, VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS),
                     ==, 0);

    /* b's ECN on too: its ACKs are ECT(0), DSCP 26. */
    set_cc(p.b.h, VHCA_CC_ECN_TX, NULL, 0);
    memset(&wb, 0, sizeof(wb));
    write_msg(&p, 2, 0x10000, 4 * 1024);
    settle(&p);
    expect_written(&p, 2, 0x10000, 4 * 1024);
    g_assert_cmpuint(wb.data, >=, 1);
    g_assert_cmpuint(wb.tos_count[26 << 2 | VHCA_ECN_ECT0], ==, wb.data);

    /*
     * a's ECN off again: 0xbb as given, which says CE; b counts each as
     * a mark, and with its NP off answers none with a CNP.
     */
    set_cc(p.a.h, 0, NULL, 0);
    memset(&wa, 0, sizeof(wa));
    write_msg(&p, 3, 0x20000, 5 * 1024);
    settle(&p);
    expect_written(&p, 3, 0x20000, 5 * 1024);
    g_assert_cmpuint(wa.data, ==, 5);
    g_assert_cmpuint(wa.tos_count[0xbb], ==, 5);
    g_assert_cmpuint(cc_counter(p.b.h, VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS),
                     ==, 5);
    g_assert_cmpuint(cc_counter(p.b.h, VHCA_CC_CNT_NP_CNP_SENT), ==, 0);
    g_assert_cmpuint(wb.cnps, ==, 0);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS),
                     ==, 0);
    pair_free(&p);
}

static const CcParam np_rp_params[] = {
    { VHCA_CC_PARAM_NP_MIN_TIME_BETWEEN_CNPS, 10 },     /* us */
    { VHCA_CC_PARAM_RP_BYTE_RESET, 0 },                 /* timer only */
};

/*
 * The notification point: CE-marked data gets one CNP per QP per
 * np_min_time_between_cnps (A17.9.2), to the sending QP, in the form of
 * A17.9.3; the reaction point takes each and cuts the rate (the first
 * from the line rate by alpha / 2, [DCQCN] eq. 1), as a reference
 * reaction point fed the same CNPs at the same times does.
 */
static void test_cnp_per_interval(void)
{
    CcWire wa = { .mark_ce = true }, wb = { 0 };
    VhcaDcqcn ref;
    VhcaQp *qa;
    const uint8_t *cnp = wb.cnp;
    Pair p;
    unsigned i;

    qa = cc_pair_up(&p, &wa, &wb, np_rp_params, G_N_ELEMENTS(np_rp_params));
    g_assert_cmpuint(qa->rp.rc, ==, 3125000000ull);     /* 25 Gbit/s */

    /* Eight marked packets at t = 0: one CNP. */
    write_msg(&p, 1, 0, 8 * 1024);
    advance_to(&p, 0);
    g_assert_cmpuint(wa.data, ==, 8);
    g_assert_cmpuint(wb.cnps, ==, 1);
    g_assert_cmpuint(wb.cnp_ns[0], ==, 0);
    /* RC - RC * 1023 / 2^11, above rp_min_dec_fac's 50%. */
    g_assert_cmpuint(qa->rp.rc, ==, 3125000000ull -
                     (3125000000ull * 1023 >> 11));
    g_assert_cmpuint(qa->rp.rt, ==, 3125000000ull);
    g_assert_cmpuint(vhca_dcqcn_stage(&qa->rp, &p.a.h->core.cc), ==,
                     VHCA_DCQCN_FAST_RECOVERY);

    /* A CNP as A17.9.3 has it, from b's QP to a's. */
    g_assert_cmpuint(wb.cnp_len, ==, CNP_LEN);
    g_assert_cmphex(cnp[TOS], ==, 48 << 2 | VHCA_ECN_NOT_ECT);
    g_assert_cmphex(cnp[BTH + 1] & 0x30, ==, 0);            /* no pad */
    g_assert_cmphex(cnp[BTH + 2] << 8 | cnp[BTH + 3], ==, 0xffff);
    g_assert_cmphex(cnp[BTH + 4] & 0x40, ==, 0x40);         /* BECN */
    g_assert_cmphex(cnp[BTH + 5] << 16 | cnp[BTH + 6] << 8 | cnp[BTH + 7],
                    ==, p.a.qp.qpn);
    g_assert_cmpmem(cnp, 6, p.a.h->core.cfg.mac, 6);
    g_assert_cmpmem(cnp + L3 + 16, 4, p.a.gid + 12, 4);      /* dst IP */
    for (i = 0; i < 16; i++) {
        g_assert_cmphex(cnp[BTH + VHCA_IB_BTH_LEN + i], ==, 0);
    }

    /* Just inside the interval: marked, no CNP. */
    advance_to(&p, 10 * US - 1);
    write_msg(&p, 2, 0x10000, 1024);
    advance_to(&p, 10 * US - 1);
    g_assert_cmpuint(wa.data, ==, 9);
    g_assert_cmpuint(wb.cnps, ==, 1);
    /* At its end: a CNP again. */
    advance_to(&p, 10 * US);
    write_msg(&p, 3, 0x20000, 2048);
    advance_to(&p, 10 * US);
    g_assert_cmpuint(wa.data, ==, 11);
    g_assert_cmpuint(wb.cnps, ==, 2);
    g_assert_cmpuint(wb.cnp_ns[1], ==, 10 * US);
    settle(&p);
    expect_written(&p, 1, 0, 8 * 1024);
    expect_written(&p, 2, 0x10000, 1024);
    expect_written(&p, 3, 0x20000, 2048);

    /* The counters say what the wire saw. */
    g_assert_cmpuint(cc_counter(p.b.h, VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS),
                     ==, wa.data);
    g_assert_cmpuint(cc_counter(p.b.h, VHCA_CC_CNT_NP_CNP_SENT), ==, 2);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_HANDLED), ==, 2);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_IGNORED), ==, 0);
    /* The second came after the monitor period (4 us): a second cut. */
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_RATE_DECREASES), ==, 2);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_NP_CNP_SENT), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED) +
                     counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 0);

    /* The QP's state is the reference's, fed the CNPs the wire carried. */
    vhca_dcqcn_init(&ref, &p.a.h->core.cc);
    for (i = 0; i < wb.cnps; i++) {
        vhca_dcqcn_on_cnp(&ref, &p.a.h->core.cc, wb.cnp_ns[i]);
    }
    vhca_dcqcn_timer(&ref, &p.a.h->core.cc, p.a.h->now_ns);
    vhca_dcqcn_timer(&qa->rp, &p.a.h->core.cc, p.a.h->now_ns);
    g_assert_cmpuint(qa->rp.rc, ==, ref.rc);
    g_assert_cmpuint(qa->rp.rt, ==, ref.rt);
    g_assert_cmpuint(qa->rp.alpha, ==, ref.alpha);
    g_assert_cmpuint(qa->rp.decreases, ==, 2);
    g_assert_cmpuint(qa->rp.rc, <, 3125000000ull / 2);
    pair_free(&p);
}

/*
 * The reaction point off: a CNP is counted as ignored and the QP's rate
 * stays at the maximum, unlimited.
 */
static void test_rp_off(void)
{
    CcWire wa = { .mark_ce = true }, wb = { 0 };
    VhcaQp *qa;
    Pair p;

    cc_pair_init(&p, 0, 0);
    cc_attach(&p, &wa, &wb);
    set_cc(p.a.h, VHCA_CC_ECN_TX, NULL, 0);
    set_cc(p.b.h, VHCA_CC_NP, NULL, 0);
    write_msg(&p, 1, 0, 3 * 1024);
    settle(&p);
    expect_written(&p, 1, 0, 3 * 1024);
    g_assert_cmpuint(wb.cnps, ==, 1);
    qa = qp_of(&p.a);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_IGNORED), ==, 1);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_HANDLED), ==, 0);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_RATE_DECREASES), ==, 0);
    g_assert_false(qa->rp.started);
    g_assert_cmpuint(qa->rp.rc, ==, p.a.h->core.cc.max_rate);
    g_assert_cmpuint(vhca_dcqcn_stage(&qa->rp, &p.a.h->core.cc), ==,
                     VHCA_DCQCN_UNLIMITED);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    pair_free(&p);
}

/* A CNP changed by @edit, delivered to a: dropped for @reason. */
typedef struct BadCnp {
    const char *name;
    enum vhca_drop_reason reason;
    int grow;                       /* payload bytes added (or removed) */
    uint8_t pad;                    /* BTH PadCnt */
    int qpn_delta;                  /* added to DestQP */
    bool break_icrc;
} BadCnp;

static const BadCnp bad_cnps[] = {
    { "long", VHCA_DROP_MALFORMED, .grow = 4 },
    { "short", VHCA_DROP_MALFORMED, .grow = -4 },
    { "empty", VHCA_DROP_MALFORMED, .grow = -16 },
    { "pad", VHCA_DROP_MALFORMED, .pad = 1 },
    { "pad3", VHCA_DROP_MALFORMED, .pad = 3 },
    { "bad-icrc", VHCA_DROP_BAD_ICRC, .break_icrc = true },
    { "no-qp", VHCA_DROP_NO_QP, .qpn_delta = 100 },
    { "qp-0", VHCA_DROP_NO_QP, .qpn_delta = -1 },
};

static size_t forge_cnp(const CcWire *w, const BadCnp *b, uint8_t *f)
{
    size_t len = (size_t)((int)w->cnp_len + b->grow);
    size_t payload = BTH + VHCA_IB_BTH_LEN;
    uint32_t qpn;

    memset(f, 0, VHCA_ETH_MAX_FRAME);
    memcpy(f, w->cnp, payload);
    f[L3 + 2] = (uint8_t)((len - L3) >> 8);             /* IP length */
    f[L3 + 3] = (uint8_t)(len - L3);
    f[L3 + 20 + 4] = (uint8_t)((len - L3 - 20) >> 8);   /* UDP length */
    f[L3 + 20 + 5] = (uint8_t)(len - L3 - 20);
    f[BTH + 1] = (uint8_t)((f[BTH + 1] & ~0x30) | b->pad << 4);
    qpn = (uint32_t)(f[BTH + 5] << 16 | f[BTH + 6] << 8 | f[BTH + 7]);
    qpn = b->qpn_delta < 0 ? 0 : qpn + (uint32_t)b->qpn_delta;
    f[BTH + 5] = (uint8_t)(qpn >> 16);
    f[BTH + 6] = (uint8_t)(qpn >> 8);
    f[BTH + 7] = (uint8_t)qpn;
    roce_frame_fix_crcs(f, len);
    if (b->break_icrc) {
        f[len - 1] ^= 0x01;
    }
    return len;
}

/*
 * CNPs that are not A17.9.3's (a payload other than 16 bytes, a pad
 * count), that fail the ICRC, or that name no QP of ours are dropped and
 * counted by reason, and leave the rate alone; the untouched CNP they
 * were forged from is taken.
 */
static void test_bad_cnps(void)
{
    CcWire wa = { .mark_ce = true }, wb = { 0 };
    uint8_t f[VHCA_ETH_MAX_FRAME];
    VhcaDcqcn before;
    VhcaQp *qa;
    Pair p;
    unsigned i;

    qa = cc_pair_up(&p, &wa, &wb, NULL, 0);
    write_msg(&p, 1, 0, 1024);
    settle(&p);
    expect_written(&p, 1, 0, 1024);
    g_assert_cmpuint(wb.cnps, ==, 1);
    before = qa->rp;

    for (i = 0; i < G_N_ELEMENTS(bad_cnps); i++) {
        const BadCnp *b = &bad_cnps[i];
        uint64_t drops = counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED);
        uint64_t why = counter(p.a.h, VHCA_CNT_DROP(b->reason));
        size_t len = forge_cnp(&wb, b, f);

        g_test_message("%s", b->name);
        harness_deliver(p.a.h, f, len);
        settle(&p);
        g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                         drops + 1);
        g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP(b->reason)), ==,
                         why + 1);
        g_assert_cmpstr(p.a.h->last_drop_reason, ==,
                        vhca_drop_reason_name(b->reason));
        g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_HANDLED), ==,
                         1);
        g_assert_cmpmem(&qa->rp, sizeof(qa->rp), &before, sizeof(before));
    }
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_IGNORED), ==, 0);
    g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_RTS);

    /* The CNP itself, again: taken (grow 0 and no edit forge it as is). */
    {
        static const BadCnp same = { .name = "same" };
        size_t len = forge_cnp(&wb, &same, f);

        g_assert_cmpmem(f, len, wb.cnp, wb.cnp_len);
        harness_deliver(p.a.h, f, len);
        settle(&p);
        g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_HANDLED), ==,
                         2);
    }
    pair_free(&p);
}

/*
 * UD: a CE-marked datagram gets a CNP back to the QP that sent it (its
 * DETH source QP, the packet's source GID and MAC), which takes it.
 */
static void test_ud_cnp(void)
{
    CcWire wa = { .mark_ce = true }, wb = { 0 };
    const uint32_t all = VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP;
    struct vhca_send_wqe w;
    struct vhca_qp_attr attr;
    Pair p;

    cc_nodes_init(&p, VHCA_QPT_UD);
    qp_move_to(p.a.h, p.a.qp.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    qp_move_to(p.b.h, p.b.qp.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    g_assert_cmpuint(rdma_query_qp(p.b.h, p.b.qp.qpn, &attr), ==,
                     VHCA_ST_OK);
    cc_attach(&p, &wa, &wb);
    set_cc(p.a.h, all, NULL, 0);
    set_cc(p.b.h, all, NULL, 0);

    post_recv(&p.b, 0xb1, 0x10000, 4096);
    fill(&p.a, 0, 512, 5);
    wqe_init(&w, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf, 512, p.a.key);
    w.dest_qpn = GUINT32_TO_LE(p.b.qp.qpn);
    w.qkey = attr.qkey;
    memcpy(w.av.dgid, p.b.gid, 16);
    memcpy(w.av.dmac, p.b.h->core.cfg.mac, 6);
    w.av.hop_limit = 64;
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    ring_sq(&p.a);
    harness_pair_settle(p.a.h, p.b.h, SETTLE_NS);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(wa.data, ==, 1);
    g_assert_cmpuint(wb.cnps, ==, 1);
    g_assert_cmpuint(wb.frames, ==, 1);
    g_assert_cmphex(wb.cnp[BTH + 5] << 16 | wb.cnp[BTH + 6] << 8 |
                    wb.cnp[BTH + 7], ==, p.a.qp.qpn);
    g_assert_cmpmem(wb.cnp, 6, p.a.h->core.cfg.mac, 6);
    g_assert_cmpmem(wb.cnp + L3 + 16, 4, p.a.gid + 12, 4);
    g_assert_cmpmem(wb.cnp + L3 + 12, 4, p.b.gid + 12, 4);
    g_assert_cmpuint(cc_counter(p.b.h, VHCA_CC_CNT_NP_CNP_SENT), ==, 1);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_CNP_HANDLED), ==, 1);
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_RP_RATE_DECREASES), ==, 1);
    g_assert_cmpuint(qp_of(&p.a)->rp.rc, <, p.a.h->core.cc.max_rate);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    pair_free(&p);
}

/*
 * Requester pacing: cut to R by a CNP, the QP sends at R ([DCQCN] 3.1,
 * the RP sends at RC).  The bytes sent before each packet of a long
 * message are R times the time since the first, plus at most the burst
 * an idle QP saves (one 4 KiB-MTU packet), never a packet less;
 * the message completes intact with no retransmission.  Without the cut
 * the same message leaves at once.
 */
#define PACE_RATE       125000000ull    /* 1000 Mbit/s in bytes/s */
#define PACE_BURST      4188            /* vhca-cc.c's VHCA_CC_BURST */
#define PACE_MSG        (64 * 1024)     /* 64 packets at MTU 1024 */

static const CcParam pace_params[] = {
    { VHCA_CC_PARAM_RP_RATE_TO_SET_ON_FIRST_CNP, 1000 },  /* Mbit/s */
    { VHCA_CC_PARAM_RP_TIME_RESET, 1000000 },   /* us: no increase */
    { VHCA_CC_PARAM_RP_BYTE_RESET, 0 },
};

static void pace_run(bool cut)
{
    CcWire wa = { .mark_ce = cut }, wb = { 0 };
    const uint64_t t0 = 1000 * US;
    uint64_t sent = 0, t;
    unsigned i;
    VhcaQp *qa;
    Pair p;

    qa = cc_pair_up(&p, &wa, &wb, pace_params, G_N_ELEMENTS(pace_params));
    /* One marked packet: the CNP sets the rate to R. */
    write_msg(&p, 1, 0, 1024);
    settle(&p);
    expect_written(&p, 1, 0, 1024);
    g_assert_cmpuint(wb.cnps, ==, cut ? 1 : 0);
    g_assert_cmpuint(qa->rp.rc, ==, cut ? PACE_RATE : 3125000000ull);

    wa = (CcWire){ 0 };
    advance_to(&p, t0);
    write_msg(&p, 2, 0x10000, PACE_MSG);
    t = settle(&p);
    expect_written(&p, 2, 0x10000, PACE_MSG);
    g_assert_cmpuint(wa.data, ==, 64);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ACK_TIMEOUTS), ==, 0);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, ==, 0);
    if (!cut) {
        /* Unlimited: all of it at t0, nothing waits. */
        g_assert_cmpuint(t, ==, 0);
        g_assert_cmpuint(wa.data_ns[63], ==, t0);
        pair_free(&p);
        return;
    }
    g_assert_cmpuint(qa->rp.rc, ==, PACE_RATE);
    for (i = 0; i < wa.data; i++) {
        /* What R allows by this packet's start, in bytes * 10^9. */
        uint64_t allowed = (wa.data_ns[i] - t0) * PACE_RATE;

        g_assert_cmpuint(sent * 1000000000ull, <=,
                         allowed + PACE_BURST * 1000000000ull);
        g_assert_cmpuint(sent * 1000000000ull + wa.data_len[i] *
                         1000000000ull, >=, allowed);
        sent += wa.data_len[i];
    }
    /* The whole message took its bytes' time at R, less the burst. */
    t = wa.data_ns[wa.data - 1] - t0;
    g_assert_cmpuint(t, >=, (sent - wa.data_len[wa.data - 1] - PACE_BURST) *
                     1000000000ull / PACE_RATE);
    g_assert_cmpuint(t, <=, (sent - wa.data_len[wa.data - 1]) *
                     1000000000ull / PACE_RATE);
    pair_free(&p);
}

static void test_pacing(void)
{
    pace_run(true);
}

static void test_pacing_control(void)
{
    pace_run(false);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/cc/ecn-transmit", test_ecn_transmit);
    g_test_add_func("/vhca/cc/cnp-per-interval", test_cnp_per_interval);
    g_test_add_func("/vhca/cc/rp-off", test_rp_off);
    g_test_add_func("/vhca/cc/bad-cnps", test_bad_cnps);
    g_test_add_func("/vhca/cc/ud-cnp", test_ud_cnp);
    g_test_add_func("/vhca/cc/pacing", test_pacing);
    g_test_add_func("/vhca/cc/pacing-unlimited", test_pacing_control);
    return g_test_run();
}
