/*
 * vhca conformance: RoCEv2 congestion control (IBTA Vol 1 annex A17.9;
 * docs/specs/vhca.rst, "Congestion control") between two vhca functions
 * of one QEMU, one RC connection from function 0 (the sender, the
 * reaction point) to function 1 (the receiver, the notification point).
 *
 * The test is the segment between them (vhca-qlink) and plays the
 * congested switch: it marks function 0's data frames CE (RFC 3168
 * section 5) as a RED queue would, reads every frame with its own parser
 * (CNPs included, A17.9.3), and injects CNPs of its own, good and bad.
 * What must follow: the receiver answers marks with CNPs to the sender's
 * QP, at most one per np_min_time_between_cnps; the sender's QP takes
 * them as a DCQCN rate cut (x-query-vhca shows the rate, the frames'
 * virtual times show the pacing) or ignores them with its reaction point
 * off; ECN-capable transmission sets ECT(0) and keeps the DSCP; and the
 * counters QUERY_CC returns say all of it.
 *
 * Time is QEMU's virtual clock, stepped by the test, so intervals and
 * pacing are measured exactly; no wall-clock sleeps.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-frame.h"
#include "vhca-qlink.h"

#define ADMQ_LOG        8
#define AEQ_LOG         10
#define CQ_LOG          8
#define RAM_MIB         256
#define STEP_NS         10000           /* virtual time per wait step */
#define BUF_LEN         16384

static const unsigned fn_slot[2] = { 4, 5 };
static const char *const fn_opts[2] = {
    "mac=52:54:00:00:02:01", "mac=52:54:00:00:02:02",
};
static const uint8_t fn_mac[2][6] = {
    { 0x52, 0x54, 0x00, 0x00, 0x02, 0x01 },
    { 0x52, 0x54, 0x00, 0x00, 0x02, 0x02 },
};
static const uint8_t fn_ip[2][4] = { { 192, 0, 2, 1 }, { 192, 0, 2, 2 } };
static const uint32_t initial_psn[2] = { 0x000100, 0x020000 };

/*
 * The congestion parameters the cases set: a CNP interval long against
 * the test's own steps (100 ms, mlx5's unit is us), a CNP DSCP other
 * than the default 48 so the frame shows it is the parameter's, and for
 * the reaction point a first-CNP rate of 10 Mbit/s with no increase, so
 * a cut QP's rate is one known number.
 */
#define CNP_INTERVAL_US 100000
#define CNP_DSCP        46              /* EF */
#define FIRST_CNP_MBPS  10
/* The path's traffic class: DSCP 26 (AF31), ECN bits 00. */
#define PATH_TCLASS     (26 << VHCA_DSCP_SHIFT)
#define PEER_TCLASS     (10 << VHCA_DSCP_SHIFT)

#define SEND_ID(i)      (0x5e4d000000000000ull | (i))
#define RECV_ID(i)      (0x4ecf000000000000ull | (i))

typedef struct Side {
    unsigned idx;
    VhcaTestDev *d;
    struct vhca_device_attr dev;
    uint8_t gid[16];
    uint32_t page, pdn;
    VhcaEq eq;
    VhcaCq scq, rcq;
    VhcaQp qp;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;
} Side;

typedef struct Net {
    VhcaTestDev *devs[2];
    Side side[2];
    VhcaLink link;
    bool mark;                  /* CE-mark function 0's data frames */
} Net;

/* ---- set-up ----------------------------------------------------------- */

/* The switch: marks the sender's data packets while net->mark is set. */
static VhcaLinkVerdict congested(VhcaLink *link, const VhcaLinkFrame *f,
                                 void *opaque)
{
    Net *n = opaque;
    VhcaRocePkt p;

    if (!n->mark || f->from != 0 || vhca_roce_parse(f->data, f->len, &p) ||
        p.opcode == VHCA_RC_ACKNOWLEDGE ||
        p.opcode == VHCA_BTH_OPCODE_CNP) {
        return VHCA_LINK_PASS;
    }
    return VHCA_LINK_MARK_CE;
}

static void side_up(Net *n, unsigned i)
{
    Side *s = &n->side[i];
    struct vhca_qp_create cr;
    struct vhca_mr_create mr;

    s->idx = i;
    s->d = n->devs[i];
    vhca_admin_setup(s->d, ADMQ_LOG, AEQ_LOG);
    s->d->stash_events = true;
    vhca_gid_from_ipv4(s->gid, fn_ip[i]);
    g_assert_cmpuint(vhca_cmd_add_gid(s->d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      s->gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_query_device(s->d, &s->dev), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(s->d, &s->page), ==, VHCA_ST_OK);
    s->pdn = vhca_pd_make(s->d);
    vhca_eq_make(s->d, &s->eq, 6, VHCA_VECTOR_FIRST_COMP);
    vhca_cq_make(s->d, &s->scq, CQ_LOG, s->eq.eqn, s->page);
    vhca_cq_make(s->d, &s->rcq, CQ_LOG, s->eq.eqn, s->page);
    vhca_qp_prepare(s->d, &s->qp, VHCA_QPT_RC, s->pdn, s->scq.cqn,
                    s->rcq.cqn, 6, 6, s->page, &cr);
    g_assert_cmpuint(vhca_cmd_create_qp(s->d, &cr, &s->qp.qpn), ==,
                     VHCA_ST_OK);
    s->sbuf = guest_alloc(&s->d->alloc, BUF_LEN);
    s->rbuf = guest_alloc(&s->d->alloc, BUF_LEN);
    vhca_mr_prepare_phys(&mr, s->pdn, 0, s->sbuf, BUF_LEN, 0x50 + i);
    g_assert_cmpuint(vhca_cmd_create_mr(s->d, &mr, NULL, &s->skey), ==,
                     VHCA_ST_OK);
    vhca_mr_prepare_phys(&mr, s->pdn, VHCA_ACCESS_LOCAL_WRITE, s->rbuf,
                         BUF_LEN, 0x60 + i);
    g_assert_cmpuint(vhca_cmd_create_mr(s->d, &mr, NULL, &s->rkey), ==,
                     VHCA_ST_OK);
}

/* Side @i's QP to RTS towards the other's, with traffic class @tclass. */
static void side_connect(Net *n, unsigned i, uint8_t tclass)
{
    Side *s = &n->side[i], *peer = &n->side[!i];
    VhcaRcPath p = {
        .dgid = peer->gid,
        .dmac = fn_mac[!i],
        .dest_qpn = peer->qp.qpn,
        .sq_psn = initial_psn[i],
        .rq_psn = initial_psn[!i],
        .path_mtu = VHCA_IB_MTU_1024,
        .timeout = 14,          /* 67 ms: never expires without loss */
        .retry_cnt = 7,
        .rnr_retry = 7,
        .min_rnr_timer = 1,
        .access = VHCA_ACCESS_REMOTE_WRITE,
        .max_rd_atomic = s->dev.max_qp_init_rd_atom,
        .max_dest_rd_atomic = s->dev.max_qp_rd_atom,
        .traffic_class = tclass,
    };

    vhca_qp_to_rts(s->d, s->qp.qpn, &p);
}

/* Two functions, one RC connection; function 0's path has PATH_TCLASS. */
static void net_up(Net *n)
{
    memset(n, 0, sizeof(*n));
    vhca_test_start_many(2, fn_slot, fn_opts, RAM_MIB, n->devs);
    side_up(n, 0);
    side_up(n, 1);
    side_connect(n, 0, PATH_TCLASS);
    side_connect(n, 1, PEER_TCLASS);
    vhca_link_init(&n->link, n->devs[0], n->devs[1]);
    n->link.capture = true;
    n->link.filter = congested;
    n->link.filter_opaque = n;
}

/*
 * Every frame on the wire is a valid RoCEv2 frame (a CNP included, by
 * the parser's A17.9.3 checks) from one function's MAC and IP to the
 * other's.
 */
static void check_frames(Net *n)
{
    for (guint i = 0; i < n->link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(n->link.frames, i);
        VhcaRocePkt p;
        const char *err = vhca_roce_parse(fr->data, fr->len, &p);

        if (err) {
            g_error("frame %" PRIu64 " from function %u (%zu bytes): %s",
                    fr->seq, fr->from, fr->len, err);
        }
        g_assert_cmpmem(p.smac, 6, fn_mac[fr->from], 6);
        g_assert_cmpmem(p.dmac, 6, fn_mac[!fr->from], 6);
        g_assert_cmpmem(p.sip, 4, fn_ip[fr->from], 4);
        g_assert_cmpmem(p.dip, 4, fn_ip[!fr->from], 4);
        g_assert_cmphex(p.pkey, ==, 0xffff);
    }
}

static void net_down(Net *n)
{
    check_frames(n);
    vhca_link_destroy(&n->link);
    vhca_test_stop_many(2, n->devs);
}

/* Pump until nothing moved for a while: a "nothing happens" is real. */
static void settle(Net *n)
{
    vhca_link_settle(&n->link, STEP_NS);
}

/* ---- congestion control commands ------------------------------------ */

static void cc_query_at(Side *s, struct vhca_cc_query *q, const char *where)
{
    memset(q, 0, sizeof(*q));
    VHCA_CHECK_EQ(where, "QUERY_CC status",
                  vhca_cmd_mbox_at(s->d, VHCA_CMD_QUERY_CC, q, sizeof(*q), q,
                                   NULL, where), VHCA_ST_OK);
}

static uint64_t cc_counter_at(Side *s, enum vhca_cc_counter c,
                              const char *where)
{
    struct vhca_cc_query q;

    cc_query_at(s, &q, where);
    return le64_to_cpu(q.counters[c]);
}
#define cc_counter(s, c) cc_counter_at(s, c, G_STRLOC)

/* The counters of @s must be @want, by enum vhca_cc_counter. */
static void cc_expect_at(Side *s, const uint64_t want[VHCA_CC_CNT_MAX],
                         const char *where)
{
    struct vhca_cc_query q;

    cc_query_at(s, &q, where);
    for (unsigned c = 0; c < VHCA_CC_CNT_MAX; c++) {
        if (le64_to_cpu(q.counters[c]) != want[c]) {
            g_error("%s: function %u %s is %" PRIu64 ", expected %" PRIu64,
                    where, s->idx, vhca_cc_counter_name(c),
                    (uint64_t)le64_to_cpu(q.counters[c]), want[c]);
        }
    }
}
#define cc_expect(s, ...) \
    cc_expect_at(s, (const uint64_t[VHCA_CC_CNT_MAX]) __VA_ARGS__, G_STRLOC)

/*
 * SET_CC with @flags and the defaults but for the test's parameters; the
 * flags QUERY_CC reads back must be those set.
 */
static void cc_set_at(Side *s, uint32_t flags, const char *where)
{
    struct vhca_cc_query q;
    struct vhca_cc_config c;

    cc_query_at(s, &q, where);
    c = q.config;
    c.flags = cpu_to_le32(flags);
    c.params[VHCA_CC_PARAM_NP_MIN_TIME_BETWEEN_CNPS] =
        cpu_to_le32(CNP_INTERVAL_US);
    c.params[VHCA_CC_PARAM_NP_CNP_DSCP] = cpu_to_le32(CNP_DSCP);
    c.params[VHCA_CC_PARAM_RP_RATE_TO_SET_ON_FIRST_CNP] =
        cpu_to_le32(FIRST_CNP_MBPS);
    c.params[VHCA_CC_PARAM_RP_AI_RATE] = 0;
    c.params[VHCA_CC_PARAM_RP_HAI_RATE] = 0;
    VHCA_CHECK_EQ(where, "SET_CC status",
                  vhca_cmd_mbox_at(s->d, VHCA_CMD_SET_CC, &c, sizeof(c), NULL,
                                   NULL, where), VHCA_ST_OK);
    cc_query_at(s, &q, where);
    VHCA_CHECK_EQ(where, "QUERY_CC flags", le32_to_cpu(q.config.flags),
                  flags);
}
#define cc_set(s, flags) cc_set_at(s, flags, G_STRLOC)

/*
 * Function 0's QP line of x-query-vhca (g_free it): where its DCQCN
 * state shows (docs/user-guide.rst).
 */
static char *qp_dump_line(Side *s)
{
    g_autofree char *id = g_strdup_printf("vhca%u", s->idx);
    g_autofree char *text = vhca_query_text(s->d, id);
    g_autofree char *key = g_strdup_printf("qp %u type ", s->qp.qpn);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (unsigned i = 0; lines[i]; i++) {
        if (strstr(lines[i], key)) {
            return g_strdup(lines[i]);
        }
    }
    g_error("x-query-vhca of %s has no line for QP %u", id, s->qp.qpn);
}

/* ---- traffic ---------------------------------------------------------- */

static uint8_t pattern_byte(size_t i, unsigned seed)
{
    return (uint8_t)(i * 131 + (i >> 9) * 7 + seed * 29 + 1);
}

/* The next completion of @cq on @s, with the link running; consumed. */
static void cqe_take_at(Net *n, Side *s, VhcaCq *cq, struct vhca_cqe *c,
                        uint64_t wr_id, const char *where)
{
    VHCA_LINK_WAIT_UNTIL_AT(&n->link, vhca_cq_peek(s->d, cq, c), STEP_NS,
                            "a completion", where);
    cq->ci++;
    vhca_cq_update_dbrec(s->d, cq);
    VHCA_CHECK_EQ(where, "CQE status", c->status, VHCA_WC_SUCCESS);
    VHCA_CHECK_EQ(where, "CQE wr_id", c->wr_id, wr_id);
}

/*
 * One SEND of @len bytes from function 0 to function 1, run to both
 * completions with the link running, the data checked.
 */
static void send_msg_at(Net *n, unsigned round, uint32_t len,
                        const char *where)
{
    Side *a = &n->side[0], *b = &n->side[1];
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);
    struct vhca_send_wqe w;
    struct vhca_cqe c;

    g_assert_cmpuint(len, <=, BUF_LEN);
    for (uint32_t i = 0; i < len; i++) {
        data[i] = pattern_byte(i, round);
    }
    qtest_bufwrite(a->d->qts, a->sbuf, data, len);
    qtest_memset(b->d->qts, b->rbuf, 0, len);
    vhca_qp_write_recv_sge(b->d, &b->qp, RECV_ID(round), b->rbuf, len,
                           b->rkey);
    vhca_qp_ring_rq(b->d, &b->qp, b->page);
    vhca_wqe_init(&w, SEND_ID(round), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, a->sbuf, len, a->skey);
    vhca_qp_write_send_wqe(a->d, &a->qp, &w);
    vhca_qp_ring_sq(a->d, &a->qp, a->page);

    cqe_take_at(n, b, &b->rcq, &c, RECV_ID(round), where);
    VHCA_CHECK_EQ(where, "receive CQE byte_len", c.byte_len, len);
    cqe_take_at(n, a, &a->scq, &c, SEND_ID(round), where);
    qtest_bufread(b->d->qts, b->rbuf, got, len);
    if (memcmp(got, data, len)) {
        g_error("%s: round %u: the data arrived wrong", where, round);
    }
}
#define send_msg(n, round, len) send_msg_at(n, round, len, G_STRLOC)

/* Captured frames from @from with @opcode (-1: any), from index @start. */
static unsigned count_frames(Net *n, guint start, unsigned from, int opcode)
{
    unsigned k = 0;

    for (guint i = start; i < n->link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(n->link.frames, i);
        VhcaRocePkt p;

        if (fr->from == from && !vhca_roce_parse(fr->data, fr->len, &p) &&
            (opcode < 0 || p.opcode == opcode)) {
            k++;
        }
    }
    return k;
}

/* The @k-th captured frame from @from with @opcode, parsed into @p. */
static const VhcaLinkFrame *nth_frame(Net *n, unsigned from, uint8_t opcode,
                                      unsigned k, VhcaRocePkt *p)
{
    for (guint i = 0; i < n->link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(n->link.frames, i);

        if (fr->from == from && !vhca_roce_parse(fr->data, fr->len, p) &&
            p->opcode == opcode && k-- == 0) {
            return fr;
        }
    }
    g_error("no frame %s number %u from function %u",
            vhca_rc_opcode_name(opcode), k, from);
}

/* A CNP as function 1 would send it to function 0's QP @qpn. */
static size_t cnp_build(uint8_t *f, size_t cap, uint32_t qpn,
                        uint32_t payload_len)
{
    static const uint8_t zeros[64];
    VhcaRoceOut o;
    size_t len;

    g_assert_cmpuint(payload_len, <=, sizeof(zeros));
    memset(&o, 0, sizeof(o));
    memcpy(o.dmac, fn_mac[0], 6);
    memcpy(o.smac, fn_mac[1], 6);
    memcpy(o.sip, fn_ip[1], 4);
    memcpy(o.dip, fn_ip[0], 4);
    o.opcode = VHCA_BTH_OPCODE_CNP;
    o.dest_qpn = qpn;
    o.payload = zeros;
    o.payload_len = payload_len;
    len = vhca_roce_build(f, cap, &o);
    /* BECN (A17.9.3); the ICRC covers BTH byte 4 as ones, reseal anyway. */
    f[VHCA_ETH_HLEN + 20 + 8 + 4] |= 0x40;
    vhca_roce_reseal(f, len);
    return len;
}

/* ======================================================================= */
/* Notification point                                                      */
/* ======================================================================= */

/*
 * (a) With the notification point on at the receiver, a CE-marked RC
 * data packet makes it send exactly one CNP to the sender's QP (A17.9.3:
 * OpCode 0x81, DestQP the sender's QP, BECN, PSN 0, 16 zero bytes; the
 * IP header with DSCP np_cnp_dscp and Not-ECT); a second mark within
 * np_min_time_between_cnps makes none, one after the interval makes one
 * more (A17.9.2).  The receiver counts every mark, the CNPs it sent; the
 * sender, whose reaction point is off, counts them ignored.
 */
static void test_np_cnp(void)
{
    const int64_t interval_ns = CNP_INTERVAL_US * 1000ll;
    const VhcaLinkFrame *fr, *data1, *data2, *data3, *cnp1;
    VhcaRocePkt p;
    Net n;

    net_up(&n);
    cc_set(&n.side[1], VHCA_CC_NP);
    n.mark = true;

    send_msg(&n, 1, 200);
    VHCA_LINK_WAIT_UNTIL(&n.link,
                         count_frames(&n, 0, 1, VHCA_BTH_OPCODE_CNP) >= 1,
                         STEP_NS, "the first CNP");
    send_msg(&n, 2, 200);
    settle(&n);
    check_frames(&n);
    g_assert_cmpuint(n.link.marked_ce, ==, 2);
    g_assert_cmpuint(count_frames(&n, 0, 1, VHCA_BTH_OPCODE_CNP), ==, 1);

    /* The CNP, field by field. */
    cnp1 = nth_frame(&n, 1, VHCA_BTH_OPCODE_CNP, 0, &p);
    g_assert_cmpuint(p.dest_qpn, ==, n.side[0].qp.qpn);
    g_assert_true(p.becn);
    g_assert_false(p.fecn);
    g_assert_cmphex(p.psn, ==, 0);
    g_assert_false(p.ack_req);
    g_assert_cmpuint(p.payload_len, ==, 16);
    g_assert_cmphex(p.tos, ==, CNP_DSCP << VHCA_DSCP_SHIFT | VHCA_ECN_NOT_ECT);
    /* It answered the first mark; the second came within the interval. */
    data1 = nth_frame(&n, 0, VHCA_RC_SEND_ONLY, 0, &p);
    data2 = nth_frame(&n, 0, VHCA_RC_SEND_ONLY, 1, &p);
    g_assert_cmpint(cnp1->clock_ns, >=, data1->clock_ns);
    g_assert_cmpint(cnp1->clock_ns, <, data2->clock_ns);
    g_assert_cmpint(data2->clock_ns - data1->clock_ns, <, interval_ns);
    cc_expect(&n.side[1], { [VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS] = 2,
                            [VHCA_CC_CNT_NP_CNP_SENT] = 1 });
    cc_expect(&n.side[0], { [VHCA_CC_CNT_RP_CNP_IGNORED] = 1 });

    /* Past the interval since the first mark: the next one is answered. */
    vhca_link_clock_step(&n.link, interval_ns);
    send_msg(&n, 3, 200);
    VHCA_LINK_WAIT_UNTIL(&n.link,
                         count_frames(&n, 0, 1, VHCA_BTH_OPCODE_CNP) >= 2,
                         STEP_NS, "the second CNP");
    settle(&n);
    g_assert_cmpuint(count_frames(&n, 0, 1, VHCA_BTH_OPCODE_CNP), ==, 2);
    data3 = nth_frame(&n, 0, VHCA_RC_SEND_ONLY, 2, &p);
    g_assert_cmpint(data3->clock_ns - data1->clock_ns, >=, interval_ns);
    fr = nth_frame(&n, 1, VHCA_BTH_OPCODE_CNP, 1, &p);
    g_assert_cmpint(fr->clock_ns, >=, data3->clock_ns);
    g_assert_cmpuint(p.dest_qpn, ==, n.side[0].qp.qpn);
    g_assert_cmpuint(n.link.marked_ce, ==, 3);
    cc_expect(&n.side[1], { [VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS] = 3,
                            [VHCA_CC_CNT_NP_CNP_SENT] = 2 });
    cc_expect(&n.side[0], { [VHCA_CC_CNT_RP_CNP_IGNORED] = 2 });
    /* Nothing else changed in the connection: both QPs carry on. */
    send_msg(&n, 4, 200);
    net_down(&n);
}

/*
 * (b) With the notification point off, CE-marked packets are counted
 * (np_ecn_marked_roce_packets counts with or without it) but answered
 * with nothing.
 */
static void test_np_off(void)
{
    Net n;

    net_up(&n);
    cc_set(&n.side[1], VHCA_CC_ECN_TX | VHCA_CC_RP);
    n.mark = true;
    for (unsigned r = 1; r <= 3; r++) {
        send_msg(&n, r, 3000);      /* three packets each */
    }
    settle(&n);
    g_assert_cmpuint(n.link.marked_ce, ==, 9);
    g_assert_cmpuint(count_frames(&n, 0, 1, VHCA_BTH_OPCODE_CNP), ==, 0);
    cc_expect(&n.side[1], { [VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS] = 9 });
    cc_expect(&n.side[0], { 0 });
    net_down(&n);
}

/* ======================================================================= */
/* Reaction point                                                          */
/* ======================================================================= */

/*
 * What a QP cut to FIRST_CNP_MBPS takes for message_span_ns()'s message,
 * first to last packet: 7 packets of 1068 bytes (IP header to ICRC, as
 * the pacer counts them: 20 + 8 + 12 + 1024 + 4) less the one 4188-byte
 * burst an idle QP may send at once, in ns at FIRST_CNP_MBPS.
 */
#define PACED_SPAN_NS   ((7 * 1068 - 4188) * 8000ll / FIRST_CNP_MBPS)

/*
 * Virtual time between the first and the last packet of an 8-packet
 * message function 0 sends after 10 ms idle: long enough for a paced QP
 * to have saved up its whole burst.
 */
static int64_t message_span_ns(Net *n, unsigned round)
{
    enum { PACKETS = 8 };
    guint start = n->link.frames->len;
    int64_t first = -1, last = -1;
    unsigned k = 0;

    vhca_link_clock_step(&n->link, 10 * 1000 * 1000);
    send_msg(n, round, PACKETS * 1024);
    for (guint i = start; i < n->link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(n->link.frames, i);
        VhcaRocePkt p;

        if (fr->from != 0 || vhca_roce_parse(fr->data, fr->len, &p) ||
            p.opcode > VHCA_RC_SEND_ONLY) {
            continue;
        }
        if (first < 0) {
            first = fr->clock_ns;
        }
        last = fr->clock_ns;
        g_test_message("packet %u (PSN 0x%06x) at +%" PRId64 " ns", k, p.psn,
                       last - first);
        k++;
    }
    g_assert_cmpuint(k, ==, PACKETS);
    return last - first;
}

/*
 * (c) A CNP the test injects for the sender's QP: with the reaction
 * point on, DCQCN cuts the QP's rate (here to rp_rate_to_set_on_first_cnp,
 * 10 Mbit/s, with no increase), x-query-vhca shows it, rp_cnp_handled and
 * rp_rate_decreases count, and the next message's packets leave paced at
 * that rate; with it off the CNP counts in rp_cnp_ignored, the QP has no
 * DCQCN state and sends at line rate.
 */
static void test_rp(const void *data)
{
    bool rp = GPOINTER_TO_INT(data);
    enum vhca_cc_counter taken = rp ? VHCA_CC_CNT_RP_CNP_HANDLED
                                    : VHCA_CC_CNT_RP_CNP_IGNORED;
    uint8_t frame[128];
    g_autofree char *line = NULL;
    int64_t span;
    size_t len;
    Net n;

    net_up(&n);
    cc_set(&n.side[0], rp ? VHCA_CC_RP : 0);
    /* Before any CNP the QP is not limited: a message goes out at once. */
    span = message_span_ns(&n, 1);
    g_assert_cmpint(span, <, 1000000);

    len = cnp_build(frame, sizeof(frame), n.side[0].qp.qpn, 16);
    g_assert_null(vhca_roce_parse(frame, len, &(VhcaRocePkt){ 0 }));
    vhca_wire_send(n.side[0].d, frame, len);
    VHCA_LINK_WAIT_UNTIL(&n.link, cc_counter(&n.side[0], taken), STEP_NS,
                         "the CNP taken");
    line = qp_dump_line(&n.side[0]);
    if (rp) {
        cc_expect(&n.side[0], { [VHCA_CC_CNT_RP_CNP_HANDLED] = 1,
                                [VHCA_CC_CNT_RP_RATE_DECREASES] = 1 });
        g_assert_nonnull(strstr(line, " dcqcn "));
        g_assert_nonnull(strstr(line, " cnps 1"));
        if (!strstr(line, " rate-kbps 10000 ")) {
            g_error("QP not cut to 10 Mbit/s: %s", line);
        }
    } else {
        cc_expect(&n.side[0], { [VHCA_CC_CNT_RP_CNP_IGNORED] = 1 });
        if (strstr(line, "dcqcn")) {
            g_error("QP with the reaction point off has DCQCN state: %s",
                    line);
        }
    }

    /*
     * The pacing: 8 packets of 1024 bytes, each 1068 bytes from the IP
     * header to the ICRC.  The pacer lets an idle QP send one 4188-byte
     * burst, so packet 8 leaves no earlier than (7 * 1068 - 4188) bytes
     * at 10 Mbit/s = 2.63 ms after packet 1, and no later than the
     * link's steps allow.  Unpaced, all go within a step or so.
     */
    span = message_span_ns(&n, 2);
    g_test_message("8 packets took %" PRId64 " ns", span);
    if (rp) {
        g_assert_cmpint(span, >=, PACED_SPAN_NS - STEP_NS);
        g_assert_cmpint(span, <=, PACED_SPAN_NS + 10 * STEP_NS);
    } else {
        g_assert_cmpint(span, <, 1000000);
    }
    /* A reset of the parameters (SET_CC) returns the QP to line rate. */
    cc_set(&n.side[0], rp ? VHCA_CC_RP : 0);
    g_free(line);
    line = qp_dump_line(&n.side[0]);
    g_assert_null(strstr(line, "dcqcn"));
    g_assert_cmpint(message_span_ns(&n, 3), <, 1000000);
    net_down(&n);
}

/*
 * (c) end to end: the receiver's CNP for a marked packet, carried by the
 * link, cuts the sender's rate.
 */
static void test_rp_forwarded(void)
{
    g_autofree char *line = NULL;
    Net n;

    net_up(&n);
    cc_set(&n.side[0], VHCA_CC_ECN_TX | VHCA_CC_RP);
    cc_set(&n.side[1], VHCA_CC_NP);
    n.mark = true;
    send_msg(&n, 1, 200);
    VHCA_LINK_WAIT_UNTIL(&n.link,
                         cc_counter(&n.side[0], VHCA_CC_CNT_RP_CNP_HANDLED),
                         STEP_NS, "the CNP handled");
    settle(&n);
    cc_expect(&n.side[1], { [VHCA_CC_CNT_NP_ECN_MARKED_ROCE_PACKETS] = 1,
                            [VHCA_CC_CNT_NP_CNP_SENT] = 1 });
    cc_expect(&n.side[0], { [VHCA_CC_CNT_RP_CNP_HANDLED] = 1,
                            [VHCA_CC_CNT_RP_RATE_DECREASES] = 1 });
    line = qp_dump_line(&n.side[0]);
    if (!strstr(line, " rate-kbps 10000 ")) {
        g_error("QP not cut to 10 Mbit/s: %s", line);
    }
    n.mark = false;
    g_assert_cmpint(message_span_ns(&n, 2), >=, PACED_SPAN_NS - STEP_NS);
    net_down(&n);
}

/* ======================================================================= */
/* ECN on transmit                                                         */
/* ======================================================================= */

/*
 * (d) With VHCA_CC_ECN_TX the sender's RoCE packets carry ECT(0) with the
 * path's DSCP kept (RFC 3168 section 6.1.1; the DSCP is the address
 * vector's, CA17-4); without it the TOS is the traffic class as given,
 * Not-ECT.  The receiver, ECN off, ACKs with its own path's Not-ECT TOS.
 */
static void test_ecn_tx(const void *data)
{
    bool on = GPOINTER_TO_INT(data);
    uint8_t want = PATH_TCLASS | (on ? VHCA_ECN_ECT0 : VHCA_ECN_NOT_ECT);
    unsigned seen[2] = { 0, 0 };
    Net n;

    net_up(&n);
    if (on) {
        cc_set(&n.side[0], VHCA_CC_ECN_TX);
    }
    send_msg(&n, 1, 3000);
    settle(&n);
    check_frames(&n);
    for (guint i = 0; i < n.link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(n.link.frames, i);
        VhcaRocePkt p;

        g_assert_null(vhca_roce_parse(fr->data, fr->len, &p));
        if (fr->from == 0) {
            g_assert_cmphex(p.tos, ==, want);
        } else {
            g_assert_cmphex(p.tos, ==, PEER_TCLASS | VHCA_ECN_NOT_ECT);
        }
        seen[fr->from]++;
    }
    g_assert_cmpuint(seen[0], ==, 3);
    g_assert_cmpuint(seen[1], >=, 1);
    cc_expect(&n.side[1], { 0 });
    net_down(&n);
}

/* ======================================================================= */
/* Hostile CNPs                                                            */
/* ======================================================================= */

typedef struct BadCnp {
    const char *name;
    uint32_t payload_len;
    bool wrong_qp;
    bool bad_icrc;
    enum vhca_counter counter;  /* moves by exactly one */
} BadCnp;

static const BadCnp bad_cnps[] = {
    { "empty", 0, false, false, VHCA_CNT_DROP_MALFORMED },
    { "short", 8, false, false, VHCA_CNT_DROP_MALFORMED },
    { "padded", 14, false, false, VHCA_CNT_DROP_MALFORMED },
    { "long", 32, false, false, VHCA_CNT_DROP_MALFORMED },
    { "no-such-qp", 16, true, false, VHCA_CNT_DROP_NO_QP },
    { "bad-icrc", 16, false, true, VHCA_CNT_DROP_BAD_ICRC },
};

/*
 * (e) Malformed CNPs (A17.9.3's 16 bytes missing, padded or too many, for
 * no QP, with a bad ICRC) to a sender with its reaction point on: each is
 * dropped and counted once, none reaches DCQCN, the QP keeps its rate
 * and its connection; then a good one does cut the rate.
 */
static void test_hostile_cnps(void)
{
    uint8_t frame[128];
    g_autofree char *line = NULL;
    Net n;

    net_up(&n);
    cc_set(&n.side[0], VHCA_CC_RP);
    for (unsigned k = 0; k < ARRAY_SIZE(bad_cnps); k++) {
        const BadCnp *bc = &bad_cnps[k];
        VhcaTestDev *d = n.side[0].d;
        uint64_t before = vhca_counter(d, bc->counter);
        uint64_t dropped = vhca_counter(d, VHCA_CNT_ROCE_RX_DROPPED);
        size_t len;

        g_test_message("case %s", bc->name);
        len = cnp_build(frame, sizeof(frame),
                        bc->wrong_qp ? n.side[0].qp.qpn + 0x1000
                                     : n.side[0].qp.qpn, bc->payload_len);
        if (bc->bad_icrc) {
            frame[len - 1] ^= 0x01;
        }
        vhca_wire_send(d, frame, len);
        VHCA_LINK_WAIT_UNTIL(&n.link, vhca_counter(d, bc->counter) > before,
                             STEP_NS, bc->name);
        settle(&n);
        g_assert_cmpuint(vhca_counter(d, bc->counter) - before, ==, 1);
        g_assert_cmpuint(vhca_counter(d, VHCA_CNT_ROCE_RX_DROPPED) - dropped,
                         ==, 1);
        cc_expect(&n.side[0], { 0 });
        g_free(line);
        line = qp_dump_line(&n.side[0]);
        if (strstr(line, "dcqcn") || !strstr(line, "state RTS")) {
            g_error("%s: the QP changed: %s", bc->name, line);
        }
        send_msg(&n, k + 1, 300);
    }
    /* The same path with a good CNP: taken. */
    vhca_wire_send(n.side[0].d, frame,
                   cnp_build(frame, sizeof(frame), n.side[0].qp.qpn, 16));
    VHCA_LINK_WAIT_UNTIL(&n.link,
                         cc_counter(&n.side[0], VHCA_CC_CNT_RP_CNP_HANDLED),
                         STEP_NS, "the good CNP");
    cc_expect(&n.side[0], { [VHCA_CC_CNT_RP_CNP_HANDLED] = 1,
                            [VHCA_CC_CNT_RP_RATE_DECREASES] = 1 });
    net_down(&n);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);
    vhca_add_test("/vhca/cc/np/cnp", test_np_cnp);
    vhca_add_test("/vhca/cc/np/off", test_np_off);
    vhca_add_data_test("/vhca/cc/rp/on", GINT_TO_POINTER(1), test_rp);
    vhca_add_data_test("/vhca/cc/rp/off", GINT_TO_POINTER(0), test_rp);
    vhca_add_test("/vhca/cc/rp/forwarded", test_rp_forwarded);
    vhca_add_data_test("/vhca/cc/ecn-tx/on", GINT_TO_POINTER(1),
                       test_ecn_tx);
    vhca_add_data_test("/vhca/cc/ecn-tx/off", GINT_TO_POINTER(0),
                       test_ecn_tx);
    vhca_add_test("/vhca/cc/hostile-cnps", test_hostile_cnps);
    return g_test_run();
}
