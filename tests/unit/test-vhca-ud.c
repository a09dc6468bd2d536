/*
 * Unit tests of the UD transport, the GSI QP (QP1) and multicast (IBTA
 * Vol 1 9.6, 10.2.5, 10.5.2, 11.4.1.1, 13.4.6): two engines back to
 * back, as in test-vhca-rc.c.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-transport.h"

#define QKEY_A          0x11110000u
#define QKEY_B          0x22220000u
#define RECV_OFF        0x10000
#define RECV_LEN        4096
#define GRH             VHCA_GRH_AREA_LEN

/* fd00::<id>, the IPv6 GID each node has at index 1. */
static void gid6(uint8_t gid[16], uint8_t id)
{
    memset(gid, 0, 16);
    gid[0] = 0xfd;
    gid[15] = id;
}

/* 239.1.1.<n> as a GID, and its MAC (RFC 1112). */
static const uint8_t mcast_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 1, 1,
};
static const uint8_t mcast_mac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x01, 0x01 };

/* RESET -> INIT -> RTR -> RTS with Q_Key @qkey (GSI: without PORT). */
static void ud_up(Harness *h, uint32_t qpn, uint8_t type, uint32_t qkey)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    a.port = 1;
    a.qkey = qkey;
    qp_modify_ok(h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY |
                 (type == VHCA_QPT_GSI ? 0 : VHCA_QP_PORT));
    qp_modify_ok(h, &a, VHCA_QPS_RTR, 0);
    a.sq_psn = 0x42;
    qp_modify_ok(h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

typedef struct UdPair {
    Node a, b;
} UdPair;

static void ud_pair_init(UdPair *p)
{
    uint8_t gid[16];

    node_init(&p->a, 1, VHCA_QPT_UD);
    node_init(&p->b, 2, VHCA_QPT_UD);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    gid6(gid, 1);
    g_assert_cmpuint(add_gid(p->a.h, 1, VHCA_GID_TYPE_ROCE_V2_IPV6, gid), ==,
                     VHCA_ST_OK);
    gid6(gid, 2);
    g_assert_cmpuint(add_gid(p->b.h, 1, VHCA_GID_TYPE_ROCE_V2_IPV6, gid), ==,
                     VHCA_ST_OK);
    ud_up(p->a.h, p->a.qp.qpn, VHCA_QPT_UD, QKEY_A);
    ud_up(p->b.h, p->b.qp.qpn, VHCA_QPT_UD, QKEY_B);
}

static void ud_pair_free(UdPair *p)
{
    harness_free(p->a.h);
    harness_free(p->b.h);
}

static void settle(UdPair *p)
{
    harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

/* Where one datagram goes. */
typedef struct Dest {
    const uint8_t *dgid;
    const uint8_t *dmac;
    uint32_t qpn;
    uint32_t qkey;
    uint8_t sgid_index;
} Dest;

static Dest dest_of(const Node *to, uint32_t qkey)
{
    return (Dest){ to->gid, to->h->core.cfg.mac, to->qp.qpn, qkey, 0 };
}

/* A UD SEND (or SEND_WITH_IMM) of [buf + off, +len) from @n to @d. */
static void post_ud(Node *n, uint64_t wr_id, uint8_t opcode, uint32_t off,
                    uint32_t len, const Dest *d)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, opcode, VHCA_WQE_SIGNALED);
    if (len) {
        wqe_sge(&w, n->buf + off, len, n->key);
    }
    w.dest_qpn = GUINT32_TO_LE(d->qpn);
    w.qkey = GUINT32_TO_LE(d->qkey);
    memcpy(w.av.dgid, d->dgid, 16);
    memcpy(w.av.dmac, d->dmac, 6);
    w.av.sgid_index = d->sgid_index;
    w.av.hop_limit = 64;
    w.imm_or_inv = GUINT32_TO_LE(0x04030201);
    qp_put_send_wqe(n->h, &n->qp, &w);
    ring_sq(n);
}

/* Another @type QP on @base's engine with its own CQs, in RTS. */
static void node_add_qp(const Node *base, Node *out, uint8_t type,
                        uint32_t qkey)
{
    *out = *base;
    g_assert_cmpuint(rdma_create_cq(base->h, &out->scq, 4, base->eqn,
                                    base->page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(base->h, &out->rcq, 4, base->eqn,
                                    base->page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(base->h, &out->qp, type, base->pdn,
                                    out->scq.cqn, out->rcq.cqn, base->page),
                     ==, VHCA_ST_OK);
    ud_up(base->h, out->qp.qpn, type, qkey);
}

static uint16_t ipv4_csum(const uint8_t *p)
{
    uint32_t sum = 0;
    unsigned i;

    for (i = 0; i < 20; i += 2) {
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)sum;
}

/* ---------------------------------------------------------------------- */
/* Send and receive, GRH area                                             */
/* ---------------------------------------------------------------------- */

typedef struct SendCase {
    bool ipv6;
    uint8_t opcode;
    uint32_t len;
} SendCase;

static const SendCase send_cases[] = {
    { false, VHCA_WR_SEND, 0 },
    { false, VHCA_WR_SEND, 1 },
    { false, VHCA_WR_SEND_WITH_IMM, 1024 },     /* one path MTU */
    { true, VHCA_WR_SEND, 100 },
    { true, VHCA_WR_SEND_WITH_IMM, 1024 },
};

static void test_send_recv(void)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(send_cases); i++) {
        const SendCase *c = &send_cases[i];
        uint8_t sgid[16], dgid[16], grh[GRH];
        struct vhca_cqe cqe;
        UdPair p;
        Dest d;

        ud_pair_init(&p);
        d = dest_of(&p.b, QKEY_B);
        if (c->ipv6) {
            gid6(sgid, 1);
            gid6(dgid, 2);
            d.dgid = dgid;
            d.sgid_index = 1;
        }
        fill(&p.a, 0, c->len, i);
        post_recv(&p.b, 0xb0 + i, RECV_OFF, RECV_LEN);
        post_ud(&p.a, 0xa0 + i, c->opcode, 0, c->len, &d);
        settle(&p);

        cqe = expect_cqe(&p.a, &p.a.scq, 0xa0 + i, VHCA_WC_SUCCESS,
                         VHCA_WC_SEND);
        g_assert_cmpuint(cqe.byte_len, ==, c->len);
        cqe = expect_cqe(&p.b, &p.b.rcq, 0xb0 + i, VHCA_WC_SUCCESS,
                         VHCA_WC_RECV);
        g_assert_cmpuint(cqe.byte_len, ==, GRH + c->len);
        g_assert_cmpuint(cqe.src_qp, ==, p.a.qp.qpn);
        g_assert_cmpuint(cqe.flags, ==,
                         VHCA_CQE_GRH |
                         (c->ipv6 ? VHCA_CQE_NET_IPV6 : VHCA_CQE_NET_IPV4) |
                         (c->opcode == VHCA_WR_SEND_WITH_IMM ?
                          VHCA_CQE_WITH_IMM : 0));
        if (c->opcode == VHCA_WR_SEND_WITH_IMM) {
            g_assert_cmphex(GUINT32_FROM_LE(cqe.imm_or_inv), ==, 0x04030201);
        }
        expect_same(&p.a, 0, &p.b, RECV_OFF + GRH, c->len);

        /* The GRH area: the network header as received (rxe, mlx5). */
        ram_read(p.b.h, p.b.buf + RECV_OFF, grh, GRH);
        if (c->ipv6) {
            g_assert_cmpuint(grh[0] >> 4, ==, 6);
            g_assert_cmpuint(grh[6], ==, 17);           /* next: UDP */
            g_assert_cmpuint(grh[7], ==, 64);           /* hop limit */
            g_assert_cmpmem(grh + 8, 16, sgid, 16);
            g_assert_cmpmem(grh + 24, 16, dgid, 16);
        } else {
            static const uint8_t zero[20];

            g_assert_cmpmem(grh, 20, zero, 20);
            g_assert_cmphex(grh[20], ==, 0x45);
            g_assert_cmpuint(grh[20 + 9], ==, 17);
            g_assert_cmpmem(grh + 20 + 12, 4, p.a.gid + 12, 4);
            g_assert_cmpmem(grh + 20 + 16, 4, p.b.gid + 12, 4);
            /* Linux's ib_get_gids_from_rdma_hdr() checks it. */
            g_assert_cmphex(ipv4_csum(grh + 20), ==, 0xffff);
        }
        g_assert_cmpuint(counter(p.a.h, VHCA_CNT_UD_TX_PACKETS), ==, 1);
        g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UD_RX_PACKETS), ==, 1);
        /* No ACK for a datagram. */
        g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
        expect_no_cqe(&p.b, &p.b.rcq);
        ud_pair_free(&p);
    }
}

/* The frame on the wire: UD SEND_ONLY with DETH, PSN from sq_psn. */
static void test_wire_format(void)
{
    UdPair p;
    Dest d;
    VhcaWirePacket pkt;
    Wire w = { 0 };

    ud_pair_init(&p);
    wire_attach(&p.a, &w);
    d = dest_of(&p.b, QKEY_B);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 10, &d);
    post_ud(&p.a, 2, VHCA_WR_SEND_WITH_IMM, 0, 10, &d);
    settle(&p);
    g_assert_cmpuint(w.count, ==, 2);
    g_assert_cmpint(vhca_wire_parse(w.last, w.last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    g_assert_cmphex(pkt.tp.bth.opcode, ==, VHCA_IB_OPCODE(UD, SEND_ONLY_IMM));
    g_assert_cmphex(pkt.tp.bth.psn, ==, 0x43);
    g_assert_cmphex(pkt.tp.bth.pkey, ==, 0xffff);
    g_assert_false(pkt.tp.bth.ack_req);
    g_assert_cmphex(pkt.tp.bth.dest_qpn, ==, p.b.qp.qpn);
    g_assert_cmphex(pkt.tp.deth.qkey, ==, QKEY_B);
    g_assert_cmphex(pkt.tp.deth.src_qpn, ==, p.a.qp.qpn);
    g_assert_cmpmem(pkt.net.dmac, 6, p.b.h->core.cfg.mac, 6);
    ud_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Address vector fields on the wire (docs/developer-guide.rst,          */
/* "Address vector fields")                                               */
/* ---------------------------------------------------------------------- */

/*
 * The AV fields UCX, libfabric and librdmacm pass, as a provider writes
 * them into the WQE (udp_sport 0: the device derives it).  A flow label
 * wider than 20 bits is masked by the device as by the driver (IBTA
 * 8.3.1), so 0xffffffff sends as 0xfffff would; the traffic class is the
 * IPv4 TOS and the hop limit the TTL, all 8 bits of each.
 */
typedef struct AvCase {
    uint32_t flow_label;
    uint8_t hop_limit;
    uint8_t traffic_class;
} AvCase;

static const AvCase av_cases[] = {
    { 0xffffffff, 64, 106 },        /* UCX's RoCE address */
    { 0, 64, 0 },                   /* libfabric, librdmacm */
    { 0x12345, 1, 255 },
    { 0xfffff, 255, 106 },
    { 0x100000, 0, 0 },             /* only bit 20: its 20 bits are 0 */
};

static void test_av_fields(void)
{
    UdPair p;
    Dest d;
    VhcaWirePacket pkt;
    Wire w = { 0 };
    struct vhca_send_wqe wqe;

    ud_pair_init(&p);
    wire_attach(&p.a, &w);
    d = dest_of(&p.b, QKEY_B);
    for (unsigned i = 0; i < G_N_ELEMENTS(av_cases); i++) {
        const AvCase *c = &av_cases[i];
        uint32_t fl = c->flow_label & 0xfffff;

        wqe_init(&wqe, i, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        wqe_sge(&wqe, p.a.buf, 10, p.a.key);
        wqe.dest_qpn = GUINT32_TO_LE(d.qpn);
        wqe.qkey = GUINT32_TO_LE(d.qkey);
        memcpy(wqe.av.dgid, d.dgid, 16);
        memcpy(wqe.av.dmac, d.dmac, 6);
        wqe.av.hop_limit = c->hop_limit;
        wqe.av.traffic_class = c->traffic_class;
        wqe.av.flow_label = GUINT32_TO_LE(c->flow_label);
        qp_put_send_wqe(p.a.h, &p.a.qp, &wqe);
        ring_sq(&p.a);
        settle(&p);
        g_assert_cmpuint(w.count, ==, i + 1);
        g_assert_cmpint(vhca_wire_parse(w.last, w.last_len, &pkt), ==,
                        VHCA_WIRE_OK);
        g_assert_false(pkt.ipv6);
        g_assert_cmpuint(pkt.net.traffic_class, ==, c->traffic_class);
        g_assert_cmpuint(pkt.net.hop_limit, ==, c->hop_limit);
        /* The flow label's 20 bits pick the port; none: the QPNs. */
        g_assert_cmphex(pkt.net.udp_sport, ==,
                        vhca_wire_udp_sport(fl, p.a.qp.qpn, d.qpn));
        if (fl) {
            g_assert_cmphex(pkt.net.udp_sport, ==,
                            0xc000 | ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)));
        }
    }
    ud_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Q_Key (IBTA 10.2.5)                                                    */
/* ---------------------------------------------------------------------- */

typedef struct QkeyCase {
    uint32_t wr_qkey;               /* in the WQE */
    uint32_t sender_qkey;           /* the sending QP's Q_Key attribute */
    uint32_t receiver_qkey;
    bool delivered;
} QkeyCase;

static const QkeyCase qkey_cases[] = {
    /* The WR's key is used as it is... */
    { 0x1234, 0x5678, 0x1234, true },
    { 0x1234, 0x1234, 0x5678, false },
    /* ...unless its high bit is set: then the QP's own. */
    { 0x80000000, 0x5678, 0x5678, true },
    { 0xdeadbeef, 0x5678, 0x5678, true },
    { 0x80000000, 0x5678, 0x80000000, false },
};

static void test_qkey(void)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(qkey_cases); i++) {
        const QkeyCase *c = &qkey_cases[i];
        UdPair p;
        Dest d;

        node_init(&p.a, 1, VHCA_QPT_UD);
        node_init(&p.b, 2, VHCA_QPT_UD);
        p.a.h->peer = p.b.h;
        p.b.h->peer = p.a.h;
        ud_up(p.a.h, p.a.qp.qpn, VHCA_QPT_UD, c->sender_qkey);
        ud_up(p.b.h, p.b.qp.qpn, VHCA_QPT_UD, c->receiver_qkey);
        d = dest_of(&p.b, c->wr_qkey);
        post_recv(&p.b, 0xb0, RECV_OFF, RECV_LEN);
        post_ud(&p.a, 0xa0, VHCA_WR_SEND, 0, 8, &d);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa0, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        if (c->delivered) {
            expect_cqe(&p.b, &p.b.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
        } else {
            /* Silently dropped, the receive WQE stays for the next one. */
            expect_no_cqe(&p.b, &p.b.rcq);
            g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_QKEY), ==,
                             1);
            g_assert_cmpuint(p.b.h->core.qps[p.b.qp.qpn].rq.ci, ==, 0);
            /* Traced with its reason and QP (trace event vhca_roce_drop). */
            g_assert_cmpuint(p.b.h->rx_drops, ==, 1);
            g_assert_cmpstr(p.b.h->last_drop_reason, ==, "qkey");
            g_assert_cmpuint(p.b.h->last_drop_qpn, ==, p.b.qp.qpn);
        }
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
        ud_pair_free(&p);
    }
}

/* ---------------------------------------------------------------------- */
/* Receive side drops and errors                                          */
/* ---------------------------------------------------------------------- */

static void test_no_rwqe_drop(void)
{
    UdPair p;
    Dest d;

    ud_pair_init(&p);
    d = dest_of(&p.b, QKEY_B);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 8, &d);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_NO_RWQE), ==, 1);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 1);
    /* UD has no RNR NAK: nothing goes back, the QP carries on. */
    g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
    post_recv(&p.b, 2, RECV_OFF, RECV_LEN);
    post_ud(&p.a, 3, VHCA_WR_SEND, 0, 8, &d);
    settle(&p);
    expect_cqe(&p.b, &p.b.rcq, 2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    ud_pair_free(&p);
}

/* Buffer one byte short of GRH area + payload: LOC_LEN_ERR, QP to ERR. */
static void test_recv_buffer_too_small(void)
{
    UdPair p;
    Dest d;

    ud_pair_init(&p);
    d = dest_of(&p.b, QKEY_B);
    post_recv(&p.b, 0xb1, RECV_OFF, GRH + 99);
    post_recv(&p.b, 0xb2, RECV_OFF, RECV_LEN);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 100, &d);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_LOC_LEN_ERR, VHCA_WC_RECV);
    expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_RECV);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    ud_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Send side errors: the WQE completes in error, the QP goes to SQE      */
/* ---------------------------------------------------------------------- */

typedef struct SendErrCase {
    const char *what;
    uint8_t opcode;
    uint32_t len;
    uint8_t sgid_index;
    bool ipv6_dgid;
    uint8_t status;
} SendErrCase;

static const SendErrCase send_err_cases[] = {
    { "sgid index of an empty entry", VHCA_WR_SEND, 8, 5, false,
      VHCA_WC_LOC_QP_OP_ERR },
    { "sgid index past the table", VHCA_WR_SEND, 8, 200, false,
      VHCA_WC_LOC_QP_OP_ERR },
    { "IPv4 source, IPv6 destination", VHCA_WR_SEND, 8, 0, true,
      VHCA_WC_LOC_QP_OP_ERR },
    { "RDMA WRITE on UD", VHCA_WR_RDMA_WRITE, 8, 0, false,
      VHCA_WC_LOC_QP_OP_ERR },
    { "RDMA READ on UD", VHCA_WR_RDMA_READ, 8, 0, false,
      VHCA_WC_LOC_QP_OP_ERR },
    { "atomic on UD", VHCA_WR_ATOMIC_FETCH_AND_ADD, 8, 0, false,
      VHCA_WC_LOC_QP_OP_ERR },
    { "SEND with invalidate on UD", VHCA_WR_SEND_WITH_INV, 8, 0, false,
      VHCA_WC_LOC_QP_OP_ERR },
};

static void test_send_errors(void)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(send_err_cases); i++) {
        const SendErrCase *c = &send_err_cases[i];
        struct vhca_qp_attr a;
        uint8_t dgid[16];
        UdPair p;
        Dest d;

        g_test_message("%s", c->what);
        ud_pair_init(&p);
        d = dest_of(&p.b, QKEY_B);
        d.sgid_index = c->sgid_index;
        if (c->ipv6_dgid) {
            gid6(dgid, 2);
            d.dgid = dgid;
        }
        post_recv(&p.b, 0xb0, RECV_OFF, RECV_LEN);
        post_ud(&p.a, 1, c->opcode, 0, c->len, &d);
        /* Behind it: flushed, as the QP is in SQE then. */
        d = dest_of(&p.b, QKEY_B);
        post_ud(&p.a, 2, VHCA_WR_SEND, 0, 8, &d);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 1, c->status,
                   vhca_send_wc_opcode(c->opcode));
        expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);
        g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_SQE);
        g_assert_cmpuint(p.a.h->tx_frames, ==, 0);
        /* Posting in SQE flushes at once. */
        post_ud(&p.a, 3, VHCA_WR_SEND, 0, 8, &d);
        expect_cqe(&p.a, &p.a.scq, 3, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);

        /* SQE -> RTS (what Linux's MAD layer does on QP1): sends again. */
        memset(&a, 0, sizeof(a));
        a.qpn = p.a.qp.qpn;
        a.cur_qp_state = VHCA_QPS_SQE;
        qp_modify_ok(p.a.h, &a, VHCA_QPS_RTS, VHCA_QP_CUR_STATE);
        post_ud(&p.a, 4, VHCA_WR_SEND, 0, 8, &d);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 4, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        expect_cqe(&p.b, &p.b.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
        ud_pair_free(&p);
    }
}

/*
 * Longer than the port's active MTU (1024 at Ethernet MTU 1500): IBTA
 * 10.2.1, C10-93.1.1 says send nothing and report no error.  The WQE
 * completes SUCCESS, the QP stays in RTS, UD_TX_TOO_LONG counts it.
 */
static void test_send_too_long(void)
{
    UdPair p;
    Dest d;

    ud_pair_init(&p);
    d = dest_of(&p.b, QKEY_B);
    post_recv(&p.b, 0xb0, RECV_OFF, RECV_LEN);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 1025, &d);
    post_ud(&p.a, 2, VHCA_WR_SEND, 0, 1024, &d);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_UD_TX_TOO_LONG), ==, 1);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_UD_TX_PACKETS), ==, 1);
    /* Only the second datagram arrives. */
    expect_cqe(&p.b, &p.b.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UD_RX_PACKETS), ==, 1);
    ud_pair_free(&p);
}

/* The receive side of a QP in SQE goes on (IBTA 10.3.1). */
static void test_sqe_still_receives(void)
{
    UdPair p;
    Dest d;

    ud_pair_init(&p);
    d = dest_of(&p.a, QKEY_A);
    d.sgid_index = 200;
    post_ud(&p.b, 1, VHCA_WR_SEND, 0, 8, &d);
    settle(&p);
    expect_cqe(&p.b, &p.b.scq, 1, VHCA_WC_LOC_QP_OP_ERR, VHCA_WC_SEND);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_SQE);
    post_recv(&p.b, 0xb0, RECV_OFF, RECV_LEN);
    d = dest_of(&p.b, QKEY_B);
    post_ud(&p.a, 2, VHCA_WR_SEND, 0, 8, &d);
    settle(&p);
    expect_cqe(&p.b, &p.b.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    ud_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* GSI (QP1)                                                              */
/* ---------------------------------------------------------------------- */

static void test_gsi(void)
{
    TestQp second;
    struct vhca_cqe cqe;
    UdPair p;
    Node a1, b1;
    Dest d;

    ud_pair_init(&p);
    node_add_qp(&p.a, &a1, VHCA_QPT_GSI, VHCA_GSI_QKEY);
    /* Its Q_Key attribute does not matter: QP1 takes 0x80010000 only. */
    node_add_qp(&p.b, &b1, VHCA_QPT_GSI, 0x1234);
    g_assert_cmpuint(a1.qp.qpn, ==, VHCA_GSI_QPN);
    g_assert_cmpuint(b1.qp.qpn, ==, VHCA_GSI_QPN);

    post_recv(&b1, 0xb0, RECV_OFF, RECV_LEN);
    /* From a UD QP with the QP's Q_Key attribute: dropped. */
    d = dest_of(&b1, 0x1234);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 256, &d);
    /* QP1 to QP1: 0x80010000 (controlled: QP1's own). */
    d.qkey = VHCA_GSI_QKEY;
    post_ud(&a1, 2, VHCA_WR_SEND, 0, 256, &d);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&a1, &a1.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    cqe = expect_cqe(&b1, &b1.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.src_qp, ==, 1);
    g_assert_cmpuint(cqe.byte_len, ==, GRH + 256);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_QKEY), ==, 1);

    /* QP1 to an ordinary UD QP, with that QP's key. */
    post_recv(&p.a, 0xa0, RECV_OFF, RECV_LEN);
    d = dest_of(&p.a, QKEY_A);
    post_ud(&b1, 3, VHCA_WR_SEND, 0, 16, &d);
    settle(&p);
    expect_cqe(&b1, &b1.scq, 3, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    cqe = expect_cqe(&p.a, &p.a.rcq, 0xa0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.src_qp, ==, 1);

    /* Destroyed, it can be created again, as QP1 again. */
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_QP, 1), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(p.b.h, &second, VHCA_QPT_GSI, p.b.pdn,
                                    p.b.scq.cqn, p.b.rcq.cqn, p.b.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(second.qpn, ==, 1);
    /* Ordinary QPs never get QPN 1. */
    g_assert_cmpuint(rdma_create_qp(p.b.h, &second, VHCA_QPT_UD, p.b.pdn,
                                    p.b.scq.cqn, p.b.rcq.cqn, p.b.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(second.qpn, >, 2);
    ud_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Loopback                                                               */
/* ---------------------------------------------------------------------- */

static void test_loopback(void)
{
    struct vhca_cqe cqe;
    UdPair p;
    Node b2;
    Dest d;

    ud_pair_init(&p);
    /* A second UD QP on A. */
    node_add_qp(&p.a, &b2, VHCA_QPT_UD, QKEY_B);

    post_recv(&b2, 0xb0, RECV_OFF, RECV_LEN);
    post_recv(&p.a, 0xa0, RECV_OFF + RECV_LEN, RECV_LEN);
    d = dest_of(&b2, QKEY_B);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 64, &d);
    /* To itself, too. */
    d = dest_of(&p.a, QKEY_A);
    post_ud(&p.a, 2, VHCA_WR_SEND, 0, 64, &d);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    cqe = expect_cqe(&b2, &b2.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.src_qp, ==, p.a.qp.qpn);
    expect_same(&p.a, 0, &b2, RECV_OFF + GRH, 64);
    cqe = expect_cqe(&p.a, &p.a.rcq, 0xa0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.src_qp, ==, p.a.qp.qpn);
    /* Nothing went to the wire. */
    g_assert_cmpuint(p.a.h->tx_frames, ==, 0);
    ud_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Multicast                                                              */
/* ---------------------------------------------------------------------- */

static uint8_t mcast_cmd(Harness *h, uint16_t opcode, uint32_t qpn,
                         const uint8_t gid[16])
{
    struct vhca_cmd_mcast_in in;

    memset(&in, 0, sizeof(in));
    in.qpn = GUINT32_TO_LE(qpn);
    memcpy(in.gid, gid, 16);
    return admin_cmd(h, opcode, 0x77, &in, sizeof(in), NULL);
}

static void test_mcast_deliver(void)
{
    const Dest to_group = { mcast_gid, mcast_mac, 0x123, QKEY_B, 0 };
    VhcaWirePacket pkt;
    Wire w = { 0 };
    struct vhca_cqe cqe;
    UdPair p;
    Node b2, b3;

    ud_pair_init(&p);
    wire_attach(&p.a, &w);
    node_add_qp(&p.b, &b2, VHCA_QPT_UD, QKEY_B);
    /* A third member whose Q_Key does not match: checked per QP. */
    node_add_qp(&p.b, &b3, VHCA_QPT_UD, 0x999);
    g_assert_cmpuint(mcast_cmd(p.b.h, VHCA_CMD_ATTACH_MCAST, p.b.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(p.b.h, VHCA_CMD_ATTACH_MCAST, b2.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(p.b.h, VHCA_CMD_ATTACH_MCAST, b3.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);
    /* Attaching twice is fine. */
    g_assert_cmpuint(mcast_cmd(p.b.h, VHCA_CMD_ATTACH_MCAST, b2.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);

    post_recv(&p.b, 0xb1, RECV_OFF, RECV_LEN);
    post_recv(&b2, 0xb2, RECV_OFF + RECV_LEN, RECV_LEN);
    post_recv(&b3, 0xb3, RECV_OFF + 2 * RECV_LEN, RECV_LEN);
    fill(&p.a, 0, 200, 7);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 200, &to_group);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    /* On the wire: DestQP 0xFFFFFF whatever the WQE said, dmac as given. */
    g_assert_cmpint(vhca_wire_parse(w.last, w.last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    g_assert_cmphex(pkt.tp.bth.dest_qpn, ==, VHCA_MCAST_QPN);
    g_assert_cmpmem(pkt.net.dmac, 6, mcast_mac, 6);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.src_qp, ==, p.a.qp.qpn);
    expect_same(&p.a, 0, &p.b, RECV_OFF + GRH, 200);
    expect_cqe(&b2, &b2.rcq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_same(&p.a, 0, &b2, RECV_OFF + RECV_LEN + GRH, 200);
    expect_no_cqe(&b3, &b3.rcq);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_QKEY), ==, 1);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UD_RX_PACKETS), ==, 2);

    /* Detached: B's first QP no longer gets it. */
    g_assert_cmpuint(mcast_cmd(p.b.h, VHCA_CMD_DETACH_MCAST, p.b.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);
    post_recv(&p.b, 0xb4, RECV_OFF, RECV_LEN);
    post_recv(&b2, 0xb5, RECV_OFF + RECV_LEN, RECV_LEN);
    post_ud(&p.a, 2, VHCA_WR_SEND, 0, 200, &to_group);
    settle(&p);
    expect_cqe(&b2, &b2.rcq, 0xb5, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_no_cqe(&p.b, &p.b.rcq);

    /* Destroying a QP detaches it; with no member left, the demux no
     * longer takes the group's frames for the engine. */
    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_QP, b2.qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(p.b.h, VHCA_CMD_DETACH_MCAST, b3.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);
    g_assert_null(vhca_mcast_find(&p.b.h->core, mcast_gid));
    g_assert_cmpint(vhca_core_receive(&p.b.h->core, w.last, w.last_len), !=,
                    VHCA_RX_ROCE);
    ud_pair_free(&p);
}

/* A group nobody here joined: MCAST_DROPS (frames reach the engine only
 * through the demux, so this one is handed to the receive path). */
static void test_mcast_no_member(void)
{
    const Dest to_group = { mcast_gid, mcast_mac, 0, QKEY_B, 0 };
    const Dest to_own_group = { mcast_gid, mcast_mac, 0, QKEY_A, 0 };
    VhcaWirePacket pkt;
    Wire w = { 0 };
    UdPair p;

    ud_pair_init(&p);
    wire_attach(&p.a, &w);
    w.drop_all = true;
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 8, &to_group);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    g_assert_cmpint(vhca_wire_parse_net(w.last, w.last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    vhca_rx_packet(&p.b.h->core, w.last, w.last_len, &pkt, false);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_MCAST_NO_MEMBER), ==, 1);
    g_assert_cmpstr(p.b.h->last_drop_reason, ==, "mcast-no-member");
    g_assert_cmpuint(p.b.h->last_drop_qpn, ==, VHCA_MCAST_QPN);
    /* Our own multicast echoed by the backend is not taken twice. */
    g_assert_cmpuint(mcast_cmd(p.a.h, VHCA_CMD_ATTACH_MCAST, p.a.qp.qpn,
                               mcast_gid), ==, VHCA_ST_OK);
    post_recv(&p.a, 0xa0, RECV_OFF, RECV_LEN);
    post_recv(&p.a, 0xa1, RECV_OFF, RECV_LEN);
    post_ud(&p.a, 2, VHCA_WR_SEND, 0, 8, &to_own_group);
    settle(&p);
    harness_deliver(p.a.h, w.last, w.last_len);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.rcq, 0xa0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_no_cqe(&p.a, &p.a.rcq);
    ud_pair_free(&p);
}

/*
 * ATTACH_MCAST is idempotent; IPv6 groups (ff00::/8) are groups too; a
 * group takes VHCA_MAX_MCAST_QPS members, the device
 * VHCA_MAX_MCAST_GROUPS groups; a reset forgets them.  (Refused
 * commands are rows of the shared table, tests/common.)
 */
static void test_mcast_commands(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    TestQp qps[VHCA_MAX_MCAST_QPS];
    uint8_t gid[16];
    TestCq cq;
    uint32_t page, pdn, eqn;
    Harness *h;
    unsigned i;

    cfg.max_qp = VHCA_MAX_MCAST_QPS + 4;
    h = harness_new(&cfg);
    harness_enable(h);
    page = rdma_alloc_uctx(h);
    pdn = rdma_create_pd(h);
    eqn = rdma_create_eq(h, 4, 2, NULL);
    g_assert_cmpuint(rdma_create_cq(h, &cq, 6, eqn, page), ==, VHCA_ST_OK);
    for (i = 0; i < G_N_ELEMENTS(qps); i++) {
        g_assert_cmpuint(rdma_create_qp(h, &qps[i], VHCA_QPT_UD, pdn, cq.cqn,
                                        cq.cqn, page), ==, VHCA_ST_OK);
    }

    memset(gid, 0, 16);
    gid[0] = 0xff;
    gid[1] = 0x0e;
    gid[15] = 1;
    g_assert_cmpuint(mcast_cmd(h, VHCA_CMD_ATTACH_MCAST, qps[0].qpn, gid), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(h, VHCA_CMD_ATTACH_MCAST, qps[0].qpn, gid), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(h, VHCA_CMD_DETACH_MCAST, qps[0].qpn, gid), ==,
                     VHCA_ST_OK);
    g_assert_null(vhca_mcast_find(&h->core, gid));

    for (i = 0; i < VHCA_MAX_MCAST_QPS; i++) {
        g_assert_cmpuint(mcast_cmd(h, VHCA_CMD_ATTACH_MCAST, qps[i].qpn,
                                   mcast_gid), ==, VHCA_ST_OK);
    }
    for (i = 1; i < VHCA_MAX_MCAST_GROUPS; i++) {
        gid[15] = (uint8_t)i;
        g_assert_cmpuint(mcast_cmd(h, VHCA_CMD_ATTACH_MCAST, qps[0].qpn,
                                   gid), ==, VHCA_ST_OK);
    }
    /* A reset forgets every group. */
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    g_assert_null(vhca_mcast_find(&h->core, mcast_gid));
    harness_free(h);
}

/* ---------------------------------------------------------------------- */
/* Malformed frames                                                       */
/* ---------------------------------------------------------------------- */

/* A UD SEND_ONLY whose DETH is cut short (ICRC made right): refused. */
static void test_truncated_deth(void)
{
    UdPair p;
    Wire w = { 0 };
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    VhcaWirePacket pkt;
    uint64_t dropped;
    size_t len, ip = 14, bth = 14 + 20 + 8;

    ud_pair_init(&p);
    wire_attach(&p.a, &w);
    w.drop_all = true;
    post_recv(&p.b, 0xb0, RECV_OFF, RECV_LEN);
    /* An RC SEND_ONLY with 4 bytes of data: BTH + 4 bytes + ICRC... */
    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, SEND_ONLY);
    pkt.tp.bth.pkey = 0xffff;
    pkt.tp.bth.dest_qpn = p.b.qp.qpn;
    memcpy(pkt.net.sgid, p.a.gid, 16);
    memcpy(pkt.net.dgid, p.b.gid, 16);
    memcpy(pkt.net.dmac, p.b.h->core.cfg.mac, 6);
    pkt.payload = (const uint8_t *)"\x11\x11\x00\x00";
    pkt.payload_len = 4;
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    g_assert_cmpuint(len, ==, bth + 12 + 4 + 4);
    /* ...made UD SEND_ONLY: its 8-byte DETH has 4 bytes. */
    frame[bth] = VHCA_IB_OPCODE(UD, SEND_ONLY);
    vhca_st_le32(frame + len - 4,
                 vhca_icrc(frame + ip, 20, false, len - 4 - ip));
    g_assert_cmpint(vhca_wire_parse(frame, len, &pkt), ==,
                    VHCA_WIRE_ERR_EXT_LEN);
    dropped = counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED);
    harness_deliver(p.b.h, frame, len);
    settle(&p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     dropped + 1);
    g_assert_cmpstr(p.b.h->last_drop_reason, ==, "malformed");
    g_assert_cmpstr(p.b.h->last_drop_detail, ==,
                    vhca_wire_error_name(VHCA_WIRE_ERR_EXT_LEN));
    expect_no_cqe(&p.b, &p.b.rcq);
    ud_pair_free(&p);
}

/*
 * Three receives on b, then three 16-byte datagrams rung on a (wr_ids
 * 0xb0.. and 0xa0..), and no deferred pass run: a's SQ holds all three.
 */
static void ring_three_datagrams(UdPair *p)
{
    Dest d = dest_of(&p->b, QKEY_B);
    unsigned i;

    for (i = 0; i < 3; i++) {
        post_recv(&p->b, 0xb0 + i, RECV_OFF + i * 256, 256);
    }
    for (i = 0; i < 3; i++) {
        post_ud(&p->a, 0xa0 + i, VHCA_WR_SEND, i * 16, 16, &d);
    }
    g_assert_cmpuint(counter(p->a.h, VHCA_CNT_UD_TX_PACKETS), ==, 0);
}

/*
 * Doorbells and commands are ordered: datagrams rung before DESTROY_QP
 * leave before the QP goes (mckey destroys its QP right after posting).
 */
static void test_sends_leave_before_destroy(void)
{
    UdPair p;
    unsigned i;

    ud_pair_init(&p);
    ring_three_datagrams(&p);
    g_assert_cmpuint(rdma_destroy(p.a.h, VHCA_CMD_DESTROY_QP, p.a.qp.qpn),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_UD_TX_PACKETS), ==, 3);
    settle(&p);
    for (i = 0; i < 3; i++) {
        struct vhca_cqe cqe = expect_cqe(&p.b, &p.b.rcq, 0xb0 + i,
                                         VHCA_WC_SUCCESS, VHCA_WC_RECV);

        g_assert_cmpuint(cqe.byte_len, ==, GRH + 16);
    }
    ud_pair_free(&p);
}

/*
 * ... and their completions are in the CQ before a RESIZE_CQ moves it:
 * shrinking it below them fails (rdma-core's test_resize_cq posts six
 * datagrams and resizes their CQ to one at once).
 */
static void test_sends_complete_before_resize(void)
{
    struct vhca_cq_resize r;
    uint64_t ring;
    UdPair p;
    unsigned i;

    ud_pair_init(&p);
    ring_three_datagrams(&p);
    ring = rdma_alloc(p.a.h, 1);
    memset(&r, 0, sizeof(r));
    r.cqn = GUINT32_TO_LE(p.a.scq.cqn);
    r.log_size = 1;
    r.pbl_addr = GUINT64_TO_LE(rdma_pbl(p.a.h, ring, 1, false));
    r.npages = GUINT32_TO_LE(1);
    g_assert_cmpuint(rdma_cmd(p.a.h, VHCA_CMD_RESIZE_CQ, &r, sizeof(r),
                              NULL, NULL), ==, VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_UD_TX_PACKETS), ==, 3);
    settle(&p);
    /* The CQ stayed where it was, with the three completions. */
    for (i = 0; i < 3; i++) {
        expect_cqe(&p.a, &p.a.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        expect_cqe(&p.b, &p.b.rcq, 0xb0 + i, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    }
    ud_pair_free(&p);
}

/* A UD datagram to an RC QP, an RC packet to a UD QP: dropped. */
static void test_wrong_transport(void)
{
    UdPair p;
    Node rc;
    Dest d;

    ud_pair_init(&p);
    rc = p.b;
    g_assert_cmpuint(rdma_create_qp(p.b.h, &rc.qp, VHCA_QPT_RC, p.b.pdn,
                                    p.b.scq.cqn, p.b.rcq.cqn, p.b.page), ==,
                     VHCA_ST_OK);
    qp_move_to(p.b.h, rc.qp.qpn, VHCA_QPT_RC, VHCA_QPS_RTS);
    post_recv(&rc, 0xb0, RECV_OFF, RECV_LEN);
    d = dest_of(&rc, QKEY_B);
    post_ud(&p.a, 1, VHCA_WR_SEND, 0, 8, &d);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 1);
    ud_pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/ud/send-recv", test_send_recv);
    g_test_add_func("/vhca/ud/wire-format", test_wire_format);
    g_test_add_func("/vhca/ud/av-fields", test_av_fields);
    g_test_add_func("/vhca/ud/qkey", test_qkey);
    g_test_add_func("/vhca/ud/no-rwqe-drop", test_no_rwqe_drop);
    g_test_add_func("/vhca/ud/recv-buffer-too-small",
                    test_recv_buffer_too_small);
    g_test_add_func("/vhca/ud/send-errors", test_send_errors);
    g_test_add_func("/vhca/ud/send-too-long", test_send_too_long);
    g_test_add_func("/vhca/ud/sqe-still-receives", test_sqe_still_receives);
    g_test_add_func("/vhca/ud/gsi", test_gsi);
    g_test_add_func("/vhca/ud/loopback", test_loopback);
    g_test_add_func("/vhca/ud/mcast-deliver", test_mcast_deliver);
    g_test_add_func("/vhca/ud/mcast-no-member", test_mcast_no_member);
    g_test_add_func("/vhca/ud/mcast-commands", test_mcast_commands);
    g_test_add_func("/vhca/ud/truncated-deth", test_truncated_deth);
    g_test_add_func("/vhca/ud/sends-complete-before-resize",
                    test_sends_complete_before_resize);
    g_test_add_func("/vhca/ud/wrong-transport", test_wrong_transport);
    g_test_add_func("/vhca/ud/sends-leave-before-destroy",
                    test_sends_leave_before_destroy);
    return g_test_run();
}
