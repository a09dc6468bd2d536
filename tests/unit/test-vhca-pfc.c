/*
 * Priority flow control (IEEE 802.1Qbb clause 36; docs/specs/vhca.rst,
 * "Priority flow control"): the PFC frame's parser and builder, the pause
 * time of a quantum at the line rate, the priority of a RoCE frame, a
 * received pause stopping only its priority's QPs for its time (or until
 * an XON), and a slow receiver sending XOFF, refreshing it and sending
 * XON with hysteresis so that an RC stream into it loses nothing - where
 * without PFC the same stream loses frames and retransmits.
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
/* DSCP 24 (CS3): priority 3 untagged; DSCP 0: priority 0. */
#define TC_PRIO3        (24 << 2)
#define TC_PRIO0        0
#define PRIO3           3
#define MSG_LEN         (64 * 1024)
#define NMSGS           4

static const uint8_t pfc_da[6] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };

/* A PFC frame by hand, bytes as 802.1Qbb 36.1.3.1 lays them out. */
static size_t pfc_frame(uint8_t *buf, uint16_t vector,
                        const uint16_t time[8], uint16_t opcode)
{
    unsigned i;

    memset(buf, 0, 60);
    memcpy(buf, pfc_da, 6);
    memcpy(buf + 6, "\x52\x54\x00\xaa\xbb\xcc", 6);
    buf[12] = 0x88;
    buf[13] = 0x08;
    buf[14] = opcode >> 8;
    buf[15] = opcode & 0xff;
    buf[16] = vector >> 8;
    buf[17] = vector & 0xff;
    for (i = 0; i < 8; i++) {
        buf[18 + 2 * i] = time[i] >> 8;
        buf[19 + 2 * i] = time[i] & 0xff;
    }
    return 60;
}

/* One priority paused for @quanta (0: XON). */
static size_t pfc_one(uint8_t *buf, uint8_t prio, uint16_t quanta)
{
    uint16_t time[8] = { 0 };

    time[prio] = quanta;
    return pfc_frame(buf, 1u << prio, time, VHCA_MAC_CONTROL_PFC);
}

static uint8_t try_set_pfc(Harness *h, uint8_t enable, uint8_t rsvd)
{
    struct vhca_cc_config c;

    cc_config_default(&c);
    c.pfc_enable = enable;
    c.rsvd0[1] = rsvd;
    return rdma_cmd(h, VHCA_CMD_SET_CC, &c, sizeof(c), NULL, NULL);
}

static void set_pfc(Harness *h, uint8_t enable)
{
    g_assert_cmpuint(try_set_pfc(h, enable, 0), ==, VHCA_ST_OK);
}

static struct vhca_cc_query query_cc(Harness *h)
{
    struct vhca_cc_query q;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_QUERY_CC, NULL, sizeof(q), NULL,
                              NULL), ==, VHCA_ST_OK);
    ram_read(h, MBOX_ADDR, &q, sizeof(q));
    return q;
}

static uint64_t pfc_cnt(Harness *h, enum vhca_pfc_counter c, unsigned prio)
{
    struct vhca_cc_query q = query_cc(h);

    return GUINT64_FROM_LE(q.pfc[c][prio]);
}

/* ---------------------------------------------------------------------- */
/* The wire format                                                        */
/* ---------------------------------------------------------------------- */

static void test_parse(void)
{
    const uint16_t time[8] = { 5, 77, 0, 0x1234, 0, 0, 0, 0xffff };
    uint8_t f[64], built[64];
    VhcaWirePfc pfc;
    size_t len;

    /* Priorities 0, 3 and 7; priority 1's time is not in the vector. */
    len = pfc_frame(f, 0x0089, time, VHCA_MAC_CONTROL_PFC);
    g_assert_cmpint(vhca_wire_parse_pfc(f, len, &pfc), ==, VHCA_WIRE_OK);
    g_assert_cmphex(pfc.enable, ==, 0x89);
    g_assert_cmpuint(pfc.time[0], ==, 5);
    g_assert_cmpuint(pfc.time[1], ==, 0);
    g_assert_cmpuint(pfc.time[3], ==, 0x1234);
    g_assert_cmpuint(pfc.time[7], ==, 0xffff);
    /* Without the padding, just the 34 bytes: fine. */
    g_assert_cmpint(vhca_wire_parse_pfc(f, VHCA_PFC_FRAME_LEN, &pfc), ==,
                    VHCA_WIRE_OK);
    /* The vector's reserved high octet is ignored (36.1.3.1). */
    len = pfc_frame(f, 0xff89, time, VHCA_MAC_CONTROL_PFC);
    g_assert_cmpint(vhca_wire_parse_pfc(f, len, &pfc), ==, VHCA_WIRE_OK);
    g_assert_cmphex(pfc.enable, ==, 0x89);

    /* Short: one byte of the last time missing, or nothing at all. */
    g_assert_cmpint(vhca_wire_parse_pfc(f, VHCA_PFC_FRAME_LEN - 1, &pfc), ==,
                    VHCA_WIRE_ERR_TRUNCATED);
    g_assert_cmphex(pfc.enable, ==, 0);
    g_assert_cmpint(vhca_wire_parse_pfc(f, 0, &pfc), ==,
                    VHCA_WIRE_ERR_TRUNCATED);
    /* 802.3x PAUSE (opcode 0x0001) and an unknown opcode. */
    len = pfc_frame(f, 0x0089, time, 0x0001);
    g_assert_cmpint(vhca_wire_parse_pfc(f, len, &pfc), ==,
                    VHCA_WIRE_ERR_PFC_OPCODE);
    len = pfc_frame(f, 0x0089, time, 0x0102);
    g_assert_cmpint(vhca_wire_parse_pfc(f, len, &pfc), ==,
                    VHCA_WIRE_ERR_PFC_OPCODE);
    /* Not to the PFC address. */
    len = pfc_frame(f, 0x0089, time, VHCA_MAC_CONTROL_PFC);
    f[5] = 0x02;
    g_assert_cmpint(vhca_wire_parse_pfc(f, len, &pfc), ==,
                    VHCA_WIRE_ERR_PFC_ADDRESS);
    /* Not MAC Control at all. */
    len = pfc_frame(f, 0x0089, time, VHCA_MAC_CONTROL_PFC);
    f[13] = 0x00;
    g_assert_cmpint(vhca_wire_parse_pfc(f, len, &pfc), ==,
                    VHCA_WIRE_ERR_ETHERTYPE);

    /*
     * The builder writes what the hand-made frame holds, padded to 60,
     * with 0 for the times of priorities not in the vector.
     */
    pfc.enable = 0x89;
    memcpy(pfc.time, time, sizeof(pfc.time));
    pfc.time[1] = 0;
    len = pfc_frame(f, 0x0089, pfc.time, VHCA_MAC_CONTROL_PFC);
    pfc.time[1] = 77;
    g_assert_cmpuint(vhca_wire_build_pfc(f + 6, &pfc, built, sizeof(built)),
                     ==, 60);
    g_assert_cmpmem(built, 60, f, len);
    g_assert_cmpuint(vhca_wire_build_pfc(f + 6, &pfc, built, 59), ==, 0);
}

static void test_quanta_and_priority(void)
{
    VhcaWireNet net;

    /* 512 bit times at 25 Gb/s: 20.48 ns a quantum, rounded up. */
    g_assert_cmpuint(vhca_pfc_quanta_ns(0), ==, 0);
    g_assert_cmpuint(vhca_pfc_quanta_ns(1), ==, 21);
    g_assert_cmpuint(vhca_pfc_quanta_ns(25), ==, 512);
    g_assert_cmpuint(vhca_pfc_quanta_ns(1000), ==, 20480);
    g_assert_cmpuint(vhca_pfc_quanta_ns(0xffff), ==, 1342157);

    /* Untagged: the DSCP's class selector; ECN bits do not count. */
    memset(&net, 0, sizeof(net));
    g_assert_cmpuint(vhca_wire_priority(&net), ==, 0);
    net.traffic_class = TC_PRIO3 | VHCA_ECN_CE;
    g_assert_cmpuint(vhca_wire_priority(&net), ==, 3);
    net.traffic_class = 26 << 2;        /* AF31 */
    g_assert_cmpuint(vhca_wire_priority(&net), ==, 3);
    net.traffic_class = 46 << 2;        /* EF */
    g_assert_cmpuint(vhca_wire_priority(&net), ==, 5);
    net.traffic_class = 63 << 2;
    g_assert_cmpuint(vhca_wire_priority(&net), ==, 7);
    /* Tagged: the PCP, whatever the DSCP says. */
    net.vlan = true;
    net.vlan_tci = (6 << VHCA_VLAN_PCP_SHIFT) | VHCA_VLAN_DEI | 100;
    g_assert_cmpuint(vhca_wire_priority(&net), ==, 6);
}

/*
 * A QP's PFC priority is the priority its frames carry: from an untagged
 * GID the DSCP >> 3, from a VLAN GID the tag's PCP, which is the SL
 * (vhca_tx_vlan_tag()), whatever the DSCP says.
 */
static void test_path_priority_vlan(void)
{
    Harness *h = harness_new(&harness_default_cfg);
    VhcaGidEntry *e = &h->core.gid_tbl[1];
    VhcaPath path;
    VhcaWirePacket pkt;

    memset(&path, 0, sizeof(path));
    path.traffic_class = TC_PRIO3;
    path.sl = 5;
    path.sgid_index = 1;
    e->valid = true;
    e->vlan = false;
    g_assert_cmpuint(vhca_pfc_path_priority(&h->core, &path), ==, 3);
    e->vlan = true;
    e->vid = 100;
    g_assert_cmpuint(vhca_pfc_path_priority(&h->core, &path), ==, 5);
    path.sl = 0;
    g_assert_cmpuint(vhca_pfc_path_priority(&h->core, &path), ==, 0);

    /* Received: the same function, through vhca_frame_vlan_priority(). */
    memset(&pkt, 0, sizeof(pkt));
    pkt.link = VHCA_WIRE_LINK_ROCE;
    pkt.net.traffic_class = TC_PRIO3;
    g_assert_cmpuint(vhca_frame_vlan_priority(&pkt), ==, 3);
    pkt.net.vlan = true;
    pkt.net.vlan_tci = (5 << VHCA_VLAN_PCP_SHIFT) | 100;
    g_assert_cmpuint(vhca_frame_vlan_priority(&pkt), ==, 5);
    harness_free(h);
}

/* ---------------------------------------------------------------------- */
/* Honour                                                                 */
/* ---------------------------------------------------------------------- */

/* Two RC QPs between two nodes: n->qp at @tc, *@qp2 at @tc2. */
typedef struct TwoQps {
    Pair p;
    TestQp a2, b2;
} TwoQps;

static void connect_tc(Harness *h, uint32_t qpn, Node *to, uint32_t dest,
                       uint8_t tc, uint32_t sq_psn, uint32_t rq_psn)
{
    struct vhca_qp_attr path;

    memset(&path, 0, sizeof(path));
    path.hop_limit = 64;
    path.traffic_class = tc;
    memcpy(path.dgid, to->gid, 16);
    memcpy(path.dmac, to->h->core.cfg.mac, 6);
    qp_connect_path(h, qpn, &path, dest, &default_opts, sq_psn, rq_psn);
}

static void two_qps_init(TwoQps *t, const VhcaCoreConfig *cfg_b)
{
    Pair *p = &t->p;

    node_init(&p->a, 1, VHCA_QPT_RC);
    node_init_cfg(&p->b, 2, VHCA_QPT_RC,
                  cfg_b ? cfg_b : &harness_default_cfg);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    connect_tc(p->a.h, p->a.qp.qpn, &p->b, p->b.qp.qpn, TC_PRIO3, 0x100,
               0x200);
    connect_tc(p->b.h, p->b.qp.qpn, &p->a, p->a.qp.qpn, TC_PRIO3, 0x200,
               0x100);
    g_assert_cmpuint(rdma_create_qp(p->a.h, &t->a2, VHCA_QPT_RC, p->a.pdn,
                                    p->a.scq.cqn, p->a.rcq.cqn, p->a.page),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(p->b.h, &t->b2, VHCA_QPT_RC, p->b.pdn,
                                    p->b.scq.cqn, p->b.rcq.cqn, p->b.page),
                     ==, VHCA_ST_OK);
    connect_tc(p->a.h, t->a2.qpn, &p->b, t->b2.qpn, TC_PRIO0, 0x300, 0x400);
    connect_tc(p->b.h, t->b2.qpn, &p->a, t->a2.qpn, TC_PRIO0, 0x400, 0x300);
}

/* An RDMA WRITE of 4 KiB on @qp of node @n to @to's buffer at @off. */
static void write_on(Node *n, TestQp *qp, Node *to, uint64_t wr_id,
                     uint32_t off)
{
    Node tmp = *n;

    tmp.qp = *qp;
    fill(&tmp, off, 4096, (uint32_t)wr_id);
    post(&tmp, wr_id, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, off, 4096,
         to->buf + off, to->key);
    ring_sq(&tmp);
    *qp = tmp.qp;
}

/* The next CQE of @n's send CQ: its QPN, wr_id and status. */
static bool next_cqe(Node *n, struct vhca_cqe *cqe)
{
    return cq_poll(n->h, &n->scq, cqe);
}

static void dump_line(void *opaque, const char *line)
{
    g_string_append_printf(opaque, "%s\n", line);
}

/* Does the device's dump (x-query-vhca) hold the line @want? */
static bool dump_has(Harness *h, const char *want)
{
    GString *out = g_string_new("");
    bool found;

    vhca_core_dump(&h->core, dump_line, out);
    found = strstr(out->str, want) != NULL;
    g_string_free(out, TRUE);
    return found;
}

static void run_pair(Pair *p)
{
    harness_pair_settle(p->a.h, p->b.h, 0);
}

/*
 * A pause for priority 3 holds the QP whose traffic class maps to it and
 * no other: the priority-0 QP's WRITE completes at once, the priority-3
 * one sends nothing until the pause time has passed, then completes.
 * The counters and the hooks say what happened.
 */
static void test_pause_one_priority(void)
{
    TwoQps t;
    Pair *p = &t.p;
    Harness *a;
    struct vhca_cqe cqe;
    uint8_t f[64];
    unsigned sent;

    two_qps_init(&t, NULL);
    a = p->a.h;
    set_pfc(a, 1u << PRIO3);
    harness_deliver(a, f, pfc_one(f, PRIO3, 1000));     /* 20.48 us */
    g_assert_cmpuint(a->ev.pfc.rcvd[PRIO3], ==, 1);
    g_assert_true(a->ev.pfc.rcvd_paused[PRIO3]);
    g_assert_true(a->timer_armed);
    g_assert_cmpuint(a->timer_deadline, ==, a->now_ns + 20480);

    sent = a->tx_frames;
    write_on(&p->a, &p->a.qp, &p->b, 1, 0);
    write_on(&p->a, &t.a2, &p->b, 2, 0x8000);
    run_pair(p);
    /* Only the priority-0 WRITE went, and completed. */
    g_assert_cmpuint(a->tx_frames - sent, ==, 4);
    g_assert_true(next_cqe(&p->a, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 2);
    g_assert_cmpuint(cqe.qpn, ==, t.a2.qpn);
    g_assert_cmpuint(cqe.status, ==, VHCA_WC_SUCCESS);
    g_assert_false(next_cqe(&p->a, &cqe));
    g_assert_cmpuint(a->ev.pfc.resumed[PRIO3], ==, 0);
    g_assert_cmphex(query_cc(a).pfc_paused, ==, 1u << PRIO3);
    g_assert_true(dump_has(a, "pfc enable 0x08 dropped 0\n"));
    g_assert_true(dump_has(a, "pfc-prio 3 paused left-us 20 rx-frames 0"));
    g_assert_true(dump_has(a, " pfc-wait 0x08"));

    /* Not yet at the end: still nothing. */
    harness_advance(a, 20000);
    harness_advance(p->b.h, 20000);
    run_pair(p);
    g_assert_false(next_cqe(&p->a, &cqe));
    /* The end of the pause: the held QP sends, woken by the timer. */
    harness_pair_advance_to_timer(a, p->b.h);
    g_assert_cmpuint(a->ev.pfc.resumed[PRIO3], ==, 1);
    g_assert_cmpuint(a->ev.pfc.resumed_paused_ns[PRIO3], ==, 20480);
    run_pair(p);
    g_assert_true(next_cqe(&p->a, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 1);
    g_assert_cmpuint(cqe.qpn, ==, p->a.qp.qpn);
    g_assert_cmpuint(cqe.status, ==, VHCA_WC_SUCCESS);
    expect_same(&p->a, 0, &p->b, 0, 4096);
    expect_same(&p->a, 0x8000, &p->b, 0x8000, 4096);

    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE, PRIO3), ==, 1);
    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE_DURATION, PRIO3), ==,
                     20);
    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE_TRANSITION, PRIO3), ==,
                     1);
    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE, 0), ==, 0);
    g_assert_cmphex(query_cc(a).pfc_paused, ==, 0);
    g_assert_false(dump_has(a, "pfc-prio 3"));
    pair_free(p);
}

/* An XON (time 0) resumes at once; a new time replaces the old one. */
static void test_xon_and_replace(void)
{
    TwoQps t;
    Pair *p = &t.p;
    Harness *a;
    struct vhca_cqe cqe;
    uint8_t f[64];

    two_qps_init(&t, NULL);
    a = p->a.h;
    set_pfc(a, 0xff);
    harness_deliver(a, f, pfc_one(f, PRIO3, 0xffff));
    write_on(&p->a, &p->a.qp, &p->b, 1, 0);
    run_pair(p);
    g_assert_false(next_cqe(&p->a, &cqe));
    /* Shortened to 10 quanta: the timer follows. */
    harness_deliver(a, f, pfc_one(f, PRIO3, 10));
    g_assert_cmpuint(a->timer_deadline, ==, a->now_ns + 205);
    /* And then XON, without time passing: it goes now. */
    harness_deliver(a, f, pfc_one(f, PRIO3, 0));
    g_assert_cmpuint(a->ev.pfc.resumed[PRIO3], ==, 1);
    run_pair(p);
    g_assert_true(next_cqe(&p->a, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 1);
    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE, PRIO3), ==, 3);
    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE_TRANSITION, PRIO3), ==,
                     1);
    /* An XON for a priority that is not paused changes nothing. */
    harness_deliver(a, f, pfc_one(f, PRIO3, 0));
    g_assert_cmpuint(a->ev.pfc.resumed[PRIO3], ==, 1);
    pair_free(p);
}

/*
 * PFC off for a priority: its pause frames are counted and ignored
 * (36.1.3.2).  Frames that are not PFC frames we take are dropped and
 * counted, never given to the guest's RX ring, and pause nothing.
 */
static void test_disabled_and_malformed(void)
{
    TwoQps t;
    Pair *p = &t.p;
    Harness *a;
    struct vhca_cqe cqe;
    uint16_t time[8] = { 0 };
    uint8_t f[64];
    size_t len;

    two_qps_init(&t, NULL);
    a = p->a.h;
    set_pfc(a, 1u << 0);
    harness_deliver(a, f, pfc_one(f, PRIO3, 0xffff));
    g_assert_cmpuint(a->ev.pfc.rcvd[PRIO3], ==, 1);
    g_assert_false(a->ev.pfc.rcvd_paused[PRIO3]);
    write_on(&p->a, &p->a.qp, &p->b, 1, 0);
    run_pair(p);
    g_assert_true(next_cqe(&p->a, &cqe));
    g_assert_cmpuint(pfc_cnt(a, VHCA_PFC_CNT_RX_PAUSE, PRIO3), ==, 1);
    g_assert_cmphex(query_cc(a).pfc_paused, ==, 0);

    /* Malformed: short, 802.3x PAUSE, wrong address; each for prio 0. */
    time[0] = 0xffff;
    len = pfc_frame(f, 1, time, VHCA_MAC_CONTROL_PFC);
    harness_deliver(a, f, VHCA_PFC_FRAME_LEN - 2);
    len = pfc_frame(f, 1, time, 0x0001);
    harness_deliver(a, f, len);
    len = pfc_frame(f, 1, time, VHCA_MAC_CONTROL_PFC);
    f[0] = 0xff;
    harness_deliver(a, f, len);
    g_assert_cmpuint(GUINT64_FROM_LE(query_cc(a).pfc_dropped), ==, 3);
    g_assert_cmpuint(counter(a, VHCA_CNT_RX_ERRORS), ==, 3);
    g_assert_cmpstr(a->last_drop_reason, ==, "pfc");
    g_assert_cmpstr(a->last_drop_detail, ==, "pfc-address");
    g_assert_cmpuint(a->ev.pfc.rcvd[0], ==, 0);
    g_assert_cmphex(query_cc(a).pfc_paused, ==, 0);
    pair_free(p);
}

/*
 * The NIC's own frames: an IPv4 frame of DSCP 24 (priority 3) waits at
 * the head of the TX ring while priority 3 is paused, one of DSCP 0 goes;
 * the XON lets the held one go from the next pass.
 */
static void test_tx_ring_held(void)
{
    static const uint8_t dst[4] = { 10, 0, 0, 2 };
    Harness *h = harness_new(&harness_default_cfg);
    uint8_t frame[128], f[64];
    size_t len;

    harness_enable(h);
    eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE);
    set_pfc(h, 1u << PRIO3);
    harness_deliver(h, f, pfc_one(f, PRIO3, 0xffff));

    len = build_udp4(frame, dst, 9, 32);
    ram_write(h, TX_BUF_ADDR, frame, len);
    tx_post(h, 0, TX_BUF_ADDR, (uint16_t)len);
    g_assert_cmpuint(h->nframes, ==, 1);
    g_assert_cmpuint(vhca_wire_frame_priority(frame, len), ==, 0);

    frame[14 + 1] = TC_PRIO3;           /* IPv4 TOS: DSCP 24 */
    ram_write(h, TX_BUF_ADDR + 0x100, frame, len);
    tx_post(h, 1, TX_BUF_ADDR + 0x100, (uint16_t)len);
    harness_run(h);
    g_assert_cmpuint(h->nframes, ==, 1);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 1);
    g_assert_true(h->core.pfc.ring_held);

    harness_deliver(h, f, pfc_one(f, PRIO3, 0));
    g_assert_cmpuint(h->nframes, ==, 1);    /* not from the receive call */
    harness_run(h);
    g_assert_cmpuint(h->nframes, ==, 2);
    g_assert_cmpuint(h->frames[1].data[15], ==, TC_PRIO3);
    g_assert_cmpuint(reg_read(h, VHCA_REG_TX_CI), ==, 2);
    g_assert_false(h->core.pfc.ring_held);
    harness_free(h);
}

/* SET_CC: pfc_enable read back; reserved bytes refused, nothing changes. */
static void test_set_cc(void)
{
    Node n;
    struct vhca_cc_query q;

    node_init(&n, 1, VHCA_QPT_RC);
    q = query_cc(n.h);
    g_assert_cmphex(q.config.pfc_enable, ==, 0);
    set_pfc(n.h, 0x28);
    g_assert_cmphex(query_cc(n.h).config.pfc_enable, ==, 0x28);
    g_assert_cmpuint(try_set_pfc(n.h, 0x01, 0x5a), ==, VHCA_ST_BAD_PARAM);
    g_assert_cmphex(query_cc(n.h).config.pfc_enable, ==, 0x28);
    g_assert_cmpuint(n.h->ev.err_admin_cmd.syndrome, ==,
                     offsetof(struct vhca_cc_config, rsvd0) + 1);
    harness_free(n.h);
}

/* ---------------------------------------------------------------------- */
/* Send: a receiver that cannot keep up                                   */
/* ---------------------------------------------------------------------- */

#define MAX_PFC_SENT    256

/* What crossed the wire: b's PFC frames, a's data against a's pause. */
typedef struct SlowWire {
    unsigned npfc;
    uint64_t pfc_ns[MAX_PFC_SENT];
    uint16_t pfc_quanta[MAX_PFC_SENT];
    unsigned sent_while_paused;     /* a's priority-3 frames in a pause */
    uint32_t max_rx_frames;         /* b's priority 3 queue, at its top */
} SlowWire;

static void slow_hook_a(Harness *h, const uint8_t *buf, size_t len)
{
    SlowWire *w = h->tx_hook_opaque;
    const VhcaPfcPrio *pp = &h->core.pfc.prio[PRIO3];

    if (pp->paused && pp->paused_until > h->now_ns) {
        w->sent_while_paused++;
    }
    harness_deliver(h->peer, buf, len);
}

static void slow_hook_b(Harness *h, const uint8_t *buf, size_t len)
{
    SlowWire *w = h->tx_hook_opaque;
    VhcaWirePfc pfc;

    if (buf[12] == 0x88 && buf[13] == 0x08) {
        g_assert_cmpint(vhca_wire_parse_pfc(buf, len, &pfc), ==,
                        VHCA_WIRE_OK);
        g_assert_cmphex(pfc.enable, ==, 1u << PRIO3);
        g_assert_cmpuint(w->npfc, <, MAX_PFC_SENT);
        w->pfc_ns[w->npfc] = h->now_ns;
        w->pfc_quanta[w->npfc++] = pfc.time[PRIO3];
    }
    harness_deliver(h->peer, buf, len);
}

/*
 * The two engines' passes take turns, one each, as two QEMU processes
 * run side by side; with @burst the sender runs until it is idle before
 * the receiver's turn (harness_pair_settle() does), so a whole window
 * reaches the receiver before it can answer.  When both are idle the
 * clocks go to the next deadline.
 */
static void run_turns(Pair *p, SlowWire *w, uint64_t max_ns, bool burst)
{
    Harness *a = p->a.h, *b = p->b.h;
    uint64_t start = a->now_ns;
    unsigned guard = 0;

    for (;;) {
        while (a->work_scheduled || b->work_scheduled) {
            do {
                if (a->work_scheduled) {
                    a->work_scheduled = false;
                    vhca_core_run_deferred(&a->core);
                }
            } while (burst && a->work_scheduled);
            if (b->core.pfc.prio[PRIO3].rx_frames > w->max_rx_frames) {
                w->max_rx_frames = b->core.pfc.prio[PRIO3].rx_frames;
            }
            if (b->work_scheduled) {
                b->work_scheduled = false;
                vhca_core_run_deferred(&b->core);
            }
            g_assert_cmpuint(++guard, <, 10000000);
        }
        if (!(a->timer_armed || b->timer_armed) ||
            a->now_ns - start >= max_ns) {
            return;
        }
        harness_pair_advance_to_timer(a, b);
    }
}

/*
 * NMSGS WRITEs of 64 KiB (256 packets of 1 KiB, the requester's whole
 * window) into b, which takes 20000 requests a second (x-rx-frame-rate):
 * far more than its queue holds arrive before it has taken any.
 */
static void slow_stream(bool pfc, bool burst, SlowWire *w, Pair *p)
{
    VhcaCoreConfig cfg_b = harness_default_cfg;
    TwoQps t;
    unsigned i;

    cfg_b.rx_frame_rate = 20000;
    two_qps_init(&t, &cfg_b);
    *p = t.p;
    memset(w, 0, sizeof(*w));
    p->a.h->tx_hook = slow_hook_a;
    p->a.h->tx_hook_opaque = w;
    p->b.h->tx_hook = slow_hook_b;
    p->b.h->tx_hook_opaque = w;
    if (pfc) {
        set_pfc(p->a.h, 1u << PRIO3);
        set_pfc(p->b.h, 1u << PRIO3);
    }
    for (i = 0; i < NMSGS; i++) {
        fill(&p->a, i * MSG_LEN, MSG_LEN, i + 1);
        post(&p->a, i + 1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED,
             i * MSG_LEN, MSG_LEN, p->b.buf + i * MSG_LEN, p->b.key);
    }
    ring_sq(&p->a);
    run_turns(p, w, 2000 * 1000 * US, burst);
    for (i = 0; i < NMSGS; i++) {
        expect_cqe(&p->a, &p->a.scq, i + 1, VHCA_WC_SUCCESS,
                   VHCA_WC_RDMA_WRITE);
    }
    expect_same(&p->a, 0, &p->b, 0, NMSGS * MSG_LEN);
}

/*
 * Without PFC the slow receiver's queue overflows: frames drop and the
 * sender goes back, on a NAK of the gap or its ACK timeout (IBTA
 * 9.7.5.1.1, 9.7.6.1.3).
 */
static void test_slow_receiver_without_pfc(void)
{
    SlowWire w;
    Pair p;

    slow_stream(false, false, &w, &p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP(VHCA_DROP_QUEUE_FULL)), >,
                     0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), >, 0);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, >, 0);
    g_assert_cmpuint(w.npfc, ==, 0);
    g_test_message("without PFC: %" PRIu64 " dropped, %" PRIu64
                   " retransmitted, queue top %u",
                   counter(p.b.h, VHCA_CNT_DROP(VHCA_DROP_QUEUE_FULL)),
                   counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS),
                   w.max_rx_frames);
    pair_free(&p);
}

/*
 * With PFC the receiver pauses the sender before its queue is full:
 * nothing drops, nothing is NAKed or sent twice.  Its PFC frames: an
 * XOFF when the queue passes XOFF, the same again every half pause time
 * while it stays above XON (a refresh, so the sender never runs out),
 * an XON once below; never one per received frame; the last one an XON.
 */
static void test_slow_receiver_with_pfc(void)
{
    const uint64_t refresh = vhca_pfc_quanta_ns(VHCA_PFC_XOFF_QUANTA) / 2;
    unsigned i, xon = 0, refreshes = 0;
    SlowWire w;
    Pair p;

    slow_stream(true, false, &w, &p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP(VHCA_DROP_QUEUE_FULL)), ==,
                     0);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 0);
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 0);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, ==, 0);
    g_assert_cmpuint(w.sent_while_paused, ==, 0);
    /* Paused with room to spare: the queue never came near its cap. */
    g_assert_cmpuint(w.max_rx_frames, >=, VHCA_PFC_XOFF_FRAMES / 2);
    g_assert_cmpuint(w.max_rx_frames, <, VHCA_RXQ_MAX_QP);

    g_assert_cmpuint(w.npfc, >=, 3);
    g_assert_cmpuint(w.npfc, <, 64);
    g_assert_cmpuint(w.pfc_quanta[0], ==, VHCA_PFC_XOFF_QUANTA);
    g_assert_cmpuint(w.pfc_quanta[w.npfc - 1], ==, 0);
    for (i = 1; i < w.npfc; i++) {
        if (!w.pfc_quanta[i]) {
            /* An XON follows an XOFF, never another XON. */
            g_assert_cmpuint(w.pfc_quanta[i - 1], ==, VHCA_PFC_XOFF_QUANTA);
            xon++;
        } else if (w.pfc_quanta[i - 1]) {
            /* XOFF after XOFF: the refresh, half a pause later. */
            g_assert_cmpuint(w.pfc_ns[i] - w.pfc_ns[i - 1], ==, refresh);
            refreshes++;
        }
    }
    g_test_message("with PFC: %u PFC frames (%u XON, %u refreshes), queue "
                   "top %u", w.npfc, xon, refreshes, w.max_rx_frames);
    g_assert_cmpuint(refreshes, >=, 1);
    g_assert_cmpuint(xon, >=, 1);

    /* Both ends count the same frames; every pause ended with an XON. */
    g_assert_cmpuint(pfc_cnt(p.b.h, VHCA_PFC_CNT_TX_PAUSE, PRIO3), ==,
                     w.npfc);
    g_assert_cmpuint(pfc_cnt(p.a.h, VHCA_PFC_CNT_RX_PAUSE, PRIO3), ==,
                     w.npfc);
    g_assert_cmpuint(pfc_cnt(p.a.h, VHCA_PFC_CNT_RX_PAUSE_TRANSITION, PRIO3),
                     ==, xon);
    g_assert_cmpuint(pfc_cnt(p.a.h, VHCA_PFC_CNT_RX_PAUSE_DURATION, PRIO3),
                     >, 0);
    g_assert_cmpuint(pfc_cnt(p.b.h, VHCA_PFC_CNT_TX_PAUSE_DURATION, PRIO3),
                     >=, pfc_cnt(p.a.h, VHCA_PFC_CNT_RX_PAUSE_DURATION,
                                 PRIO3));
    g_assert_cmpuint(p.b.h->ev.pfc.sent[PRIO3], ==, w.npfc);
    g_assert_cmphex(query_cc(p.a.h).pfc_paused, ==, 0);
    g_assert_cmpuint(p.b.h->core.pfc.prio[PRIO3].rx_frames, ==, 0);
    pair_free(&p);
}

/*
 * The worst case of two QEMUs: the sender puts its whole window (256
 * packets) on the wire before the receiver has read a frame.  Past the
 * per-QP cap (234 large frames) that loses frames without PFC; with PFC
 * the priority's headroom (VHCA_PFC_RXQ_MAX_QP_BYTES) holds them all.
 */
static void test_window_burst(void)
{
    SlowWire w;
    Pair p;

    slow_stream(false, true, &w, &p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP(VHCA_DROP_QUEUE_FULL)), >,
                     0);
    pair_free(&p);

    slow_stream(true, true, &w, &p);
    g_test_message("window burst with PFC: queue top %u, %u PFC frames",
                   w.max_rx_frames, w.npfc);
    g_assert_cmpuint(w.max_rx_frames, >, VHCA_RXQ_MAX_QP_BYTES /
                     vhca_rx_buf_size(1024 + 100));
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 0);
    g_assert_cmpuint(w.sent_while_paused, ==, 0);
    g_assert_cmpuint(w.npfc, >=, 2);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/pfc/parse", test_parse);
    g_test_add_func("/vhca/pfc/quanta-and-priority",
                    test_quanta_and_priority);
    g_test_add_func("/vhca/pfc/path-priority-vlan", test_path_priority_vlan);
    g_test_add_func("/vhca/pfc/pause-one-priority", test_pause_one_priority);
    g_test_add_func("/vhca/pfc/xon-and-replace", test_xon_and_replace);
    g_test_add_func("/vhca/pfc/disabled-and-malformed",
                    test_disabled_and_malformed);
    g_test_add_func("/vhca/pfc/set-cc", test_set_cc);
    g_test_add_func("/vhca/pfc/tx-ring-held", test_tx_ring_held);
    g_test_add_func("/vhca/pfc/slow-receiver-without-pfc",
                    test_slow_receiver_without_pfc);
    g_test_add_func("/vhca/pfc/slow-receiver-with-pfc",
                    test_slow_receiver_with_pfc);
    g_test_add_func("/vhca/pfc/window-burst", test_window_burst);
    return g_test_run();
}
