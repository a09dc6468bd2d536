/*
 * RoCE over a VLAN between two engines (docs/specs/vhca.rst, "RoCE over
 * a VLAN"): a GID entry's VLAN in ADD_GID, the 802.1Q tag on what is
 * sent from it (its VID, the SL as PCP) for RC requests and responses,
 * UD datagrams and CNPs, and the receive rule - a tagged frame for a GID
 * on its entry's VID, an untagged one for an untagged entry, anything
 * else dropped and counted.
 *
 * The wire between the engines records each frame's tag as sent and can
 * play a congested switch (CE on the data frames, the IPv4 checksum and
 * the ICRC fixed), so the tags checked are what was on the wire.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-transport.h"

#define VID             100
#define GID_VLAN_INDEX  1           /* each node's GID on VLAN VID */
#define ETH_TYPE        12
#define TCI             14
/* Where the BTH is in a frame with and without a tag (IPv4, UDP). */
#define BTH_TAGGED      (14 + 4 + 20 + 8)
#define BTH_UNTAGGED    (14 + 20 + 8)

#define TCI_OF(pcp, vid)    ((uint16_t)((pcp) << VHCA_VLAN_PCP_SHIFT | (vid)))

/* One direction of the wire. */
typedef struct VlanWire {
    bool mark_ce;                   /* data frames leave as CE */
    unsigned frames, tagged;
    unsigned data, cnps;
    uint16_t data_tci, cnp_tci;     /* the last one's; 0 when untagged */
    bool cnp_tagged;
} VlanWire;

/*
 * CE on a tagged or untagged IPv4 RoCE frame (RFC 3168 section 5): the
 * frame's IP datagram without the tag, so that roce_frame_fix_crcs()
 * finds the IP header where it looks; the ICRC does not cover the
 * Ethernet header (annex A17.3.3).
 */
static void mark_ce(uint8_t *frame, size_t len, bool tagged)
{
    uint8_t plain[VHCA_ETH_MAX_FRAME];
    size_t tag = tagged ? VHCA_VLAN_HLEN : 0;

    memcpy(plain, frame, ETH_TYPE);
    memcpy(plain + ETH_TYPE, frame + ETH_TYPE + tag, len - ETH_TYPE - tag);
    plain[14 + 1] |= VHCA_ECN_CE;
    roce_frame_fix_crcs(plain, len - tag);
    memcpy(frame + ETH_TYPE + tag, plain + ETH_TYPE, len - ETH_TYPE - tag);
}

static void vlan_hook(Harness *h, const uint8_t *buf, size_t len)
{
    VlanWire *w = h->tx_hook_opaque;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    bool tagged;
    uint16_t t;
    size_t bth;

    g_assert_cmpuint(len, >=, BTH_TAGGED + VHCA_IB_BTH_LEN);
    memcpy(frame, buf, len);
    tagged = (frame[ETH_TYPE] << 8 | frame[ETH_TYPE + 1]) ==
             VHCA_ETH_P_8021Q;
    t = tagged ? (uint16_t)(frame[TCI] << 8 | frame[TCI + 1]) : 0;
    bth = tagged ? BTH_TAGGED : BTH_UNTAGGED;
    if (tagged) {
        /* The tag's EtherType: IPv4 follows (IEEE 802.1Q 9.5). */
        g_assert_cmphex(frame[TCI + 2] << 8 | frame[TCI + 3], ==, 0x0800);
        g_assert_cmphex(t & VHCA_VLAN_DEI, ==, 0);
    }
    w->frames++;
    w->tagged += tagged;
    if (frame[bth] == VHCA_BTH_OPCODE_CNP) {
        w->cnps++;
        w->cnp_tci = t;
        w->cnp_tagged = tagged;
    } else {
        w->data++;
        w->data_tci = t;
        if (w->mark_ce) {
            mark_ce(frame, len, tagged);
        }
    }
    harness_deliver(h->peer, frame, len);
}

/* ADD_GID with the VLAN field @vlan; its status. */
static uint8_t add_gid_vlan(Harness *h, uint16_t index, const uint8_t *gid,
                            uint16_t vlan)
{
    struct vhca_cmd_gid_in in = {
        .index = GUINT16_TO_LE(index),
        .port = 1,
        .type = VHCA_GID_TYPE_ROCE_V2_IPV4,
        .vlan = GUINT16_TO_LE(vlan),
    };

    memcpy(in.gid, gid, 16);
    return admin_cmd(h, VHCA_CMD_ADD_GID, 0x7600 + index, &in, sizeof(in),
                     NULL);
}

/* 10.0.100.<id>, on VLAN VID, at GID_VLAN_INDEX of @n. */
static void node_vlan_gid(Node *n, uint8_t id, uint8_t *gid)
{
    gid_from_ipv4(gid, 10, 0, VID, id);
    g_assert_cmpuint(add_gid_vlan(n->h, GID_VLAN_INDEX, gid,
                                  VHCA_GID_VLAN_TAGGED | VID), ==,
                     VHCA_ST_OK);
}

typedef struct VlanPair {
    Pair p;
    VlanWire wa, wb;                /* what a and b send */
    uint8_t gid_a[16], gid_b[16];   /* their VLAN GIDs */
} VlanPair;

static void vlan_nodes_init(VlanPair *v, uint8_t type)
{
    memset(v, 0, sizeof(*v));
    node_init(&v->p.a, 1, type);
    node_init(&v->p.b, 2, type);
    v->p.a.h->peer = v->p.b.h;
    v->p.b.h->peer = v->p.a.h;
    node_vlan_gid(&v->p.a, 1, v->gid_a);
    node_vlan_gid(&v->p.b, 2, v->gid_b);
    v->p.a.h->tx_hook = vlan_hook;
    v->p.a.h->tx_hook_opaque = &v->wa;
    v->p.b.h->tx_hook = vlan_hook;
    v->p.b.h->tx_hook_opaque = &v->wb;
}

/* RC QPs connected from their VLAN GIDs, a's path at SL @sl_a, b's @sl_b. */
static void vlan_rc_init(VlanPair *v, uint8_t sl_a, uint8_t sl_b)
{
    const ConnOpts *o = &default_opts;
    struct vhca_qp_attr path;

    vlan_nodes_init(v, VHCA_QPT_RC);
    memset(&path, 0, sizeof(path));
    path.hop_limit = 64;
    path.sgid_index = GID_VLAN_INDEX;
    path.sl = sl_a;
    memcpy(path.dgid, v->gid_b, 16);
    memcpy(path.dmac, v->p.b.h->core.cfg.mac, 6);
    qp_connect_path(v->p.a.h, v->p.a.qp.qpn, &path, v->p.b.qp.qpn, o,
                    o->a_psn, o->b_psn);
    path.sl = sl_b;
    memcpy(path.dgid, v->gid_a, 16);
    memcpy(path.dmac, v->p.a.h->core.cfg.mac, 6);
    qp_connect_path(v->p.b.h, v->p.b.qp.qpn, &path, v->p.a.qp.qpn, o,
                    o->b_psn, o->a_psn);
}

static void vlan_pair_free(VlanPair *v)
{
    pair_free(&v->p);
}

static void settle(VlanPair *v)
{
    harness_pair_settle(v->p.a.h, v->p.b.h, SETTLE_NS);
}

static void write_msg(VlanPair *v, uint64_t wr_id, uint32_t len)
{
    fill(&v->p.a, 0, len, (uint32_t)wr_id);
    post(&v->p.a, wr_id, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, len,
         v->p.b.buf, v->p.b.key);
    ring_sq(&v->p.a);
}

/*
 * The VLAN field of ADD_GID: TAGGED with a VID (0 is a priority tag),
 * or 0; a VID without TAGGED, VID 4095 (IEEE 802.1Q Table 9-2) and the
 * reserved bits fail BAD_PARAM and leave the entry as it was.
 */
static void test_add_gid_vlan_field(void)
{
    static const struct {
        uint16_t vlan;
        uint8_t status;
    } cases[] = {
        { 0, VHCA_ST_OK },
        { VHCA_GID_VLAN_TAGGED | 1, VHCA_ST_OK },
        { VHCA_GID_VLAN_TAGGED | 4094, VHCA_ST_OK },
        { VHCA_GID_VLAN_TAGGED, VHCA_ST_OK },
        { VHCA_GID_VLAN_TAGGED | 4095, VHCA_ST_BAD_PARAM },
        { 100, VHCA_ST_BAD_PARAM },
        { VHCA_GID_VLAN_TAGGED | 0x1000 | 100, VHCA_ST_BAD_PARAM },
        { 0x4000, VHCA_ST_BAD_PARAM },
    };
    Node n;
    uint8_t gid[16];
    unsigned i;

    node_init(&n, 1, VHCA_QPT_RC);
    gid_from_ipv4(gid, 10, 0, VID, 1);
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        const VhcaGidEntry *e = &n.h->core.gid_tbl[GID_VLAN_INDEX];

        g_test_message("vlan field 0x%04x", cases[i].vlan);
        g_assert_cmpuint(add_gid_vlan(n.h, GID_VLAN_INDEX, gid, 0), ==,
                         VHCA_ST_OK);
        g_assert_cmpuint(add_gid_vlan(n.h, GID_VLAN_INDEX, gid,
                                      cases[i].vlan), ==, cases[i].status);
        if (cases[i].status == VHCA_ST_OK) {
            g_assert_cmpuint(e->vlan, ==,
                             !!(cases[i].vlan & VHCA_GID_VLAN_TAGGED));
            g_assert_cmpuint(e->vid, ==, cases[i].vlan & VHCA_VLAN_VID_MASK);
        } else {
            g_assert_false(e->vlan);
        }
    }
    harness_free(n.h);
}

/*
 * RC between VLAN GIDs: every request carries VID 100 and the path's SL
 * as PCP, every ACK VID 100 and the responder's path's SL (IEEE 802.1Q
 * 9.6; the SL is the Ethernet priority, as on mlx5); an SL above 7 gives
 * its low three bits.  Nothing is dropped, the data arrives.
 */
static void test_rc_tagged(void)
{
    VlanPair v;

    vlan_rc_init(&v, 5, 11);
    write_msg(&v, 1, 4096);
    settle(&v);
    expect_cqe(&v.p.a, &v.p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_same(&v.p.a, 0, &v.p.b, 0, 4096);
    g_assert_cmpuint(v.wa.frames, ==, 4);           /* MTU 1024 */
    g_assert_cmpuint(v.wa.tagged, ==, v.wa.frames);
    g_assert_cmphex(v.wa.data_tci, ==, TCI_OF(5, VID));
    g_assert_cmpuint(v.wb.frames, >=, 1);
    g_assert_cmpuint(v.wb.tagged, ==, v.wb.frames);
    g_assert_cmphex(v.wb.data_tci, ==, TCI_OF(11 & 7, VID));
    g_assert_cmpuint(counter(v.p.b.h, VHCA_CNT_DROP(VHCA_DROP_VLAN)), ==, 0);
    g_assert_cmpuint(counter(v.p.a.h, VHCA_CNT_DROP(VHCA_DROP_VLAN)), ==, 0);
    vlan_pair_free(&v);
}

/* The same QPs from the untagged GIDs (index 0): no tag at all. */
static void test_rc_untagged_gid(void)
{
    const ConnOpts *o = &default_opts;
    VlanPair v;

    vlan_nodes_init(&v, VHCA_QPT_RC);
    qp_connect(v.p.a.h, v.p.a.qp.qpn, v.p.b.gid, v.p.b.h->core.cfg.mac,
               v.p.b.qp.qpn, o, o->a_psn, o->b_psn);
    qp_connect(v.p.b.h, v.p.b.qp.qpn, v.p.a.gid, v.p.a.h->core.cfg.mac,
               v.p.a.qp.qpn, o, o->b_psn, o->a_psn);
    write_msg(&v, 1, 2048);
    settle(&v);
    expect_cqe(&v.p.a, &v.p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(v.wa.frames, ==, 2);
    g_assert_cmpuint(v.wa.tagged + v.wb.tagged, ==, 0);
    vlan_pair_free(&v);
}

/* A frame from a to b's GID @dgid, tagged with @t when @tagged. */
static void deliver_send(VlanPair *v, const uint8_t *dgid, bool tagged,
                         uint16_t t)
{
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    VhcaWirePacket pkt;
    size_t len;

    memset(&pkt, 0, sizeof(pkt));
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(UD, SEND_ONLY);
    pkt.tp.bth.dest_qpn = v->p.b.qp.qpn;
    pkt.tp.bth.pkey = 0xffff;
    pkt.tp.deth.qkey = 0x11111111u;
    pkt.tp.deth.src_qpn = v->p.a.qp.qpn;
    memcpy(pkt.net.dmac, v->p.b.h->core.cfg.mac, 6);
    memcpy(pkt.net.smac, v->p.a.h->core.cfg.mac, 6);
    memcpy(pkt.net.sgid, v->gid_a, 16);
    memcpy(pkt.net.dgid, dgid, 16);
    pkt.net.hop_limit = 64;
    pkt.net.vlan = tagged;
    pkt.net.vlan_tci = t;
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    g_assert_cmpuint(len, >, 0);
    harness_deliver(v->p.b.h, frame, len);
    harness_run(v->p.b.h);
}

/*
 * The receive rule (IEEE 802.1Q-2018 8.6.2): a frame to a VLAN GID must
 * be tagged with its VID, a frame to an untagged GID untagged or
 * priority-tagged (VID 0, 9.6); anything else is dropped as "vlan" -
 * not the transport's drop, and not handed to the Ethernet ring.  The
 * same GID on two VLANs takes either VLAN's frames.
 */
static void test_rx_vlan_rule(void)
{
    static const struct {
        bool to_vlan_gid;
        bool tagged;
        uint16_t tci;
        bool taken;
    } cases[] = {
        { true, true, TCI_OF(3, VID), true },
        { true, true, TCI_OF(0, VID + 1), false },
        { true, false, 0, false },
        { true, true, TCI_OF(6, 0), false },       /* priority tag */
        { false, false, 0, true },
        { false, true, TCI_OF(6, 0), true },
        { false, true, TCI_OF(0, VID), false },
    };
    VlanPair v;
    unsigned i;

    vlan_nodes_init(&v, VHCA_QPT_UD);
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        Harness *b = v.p.b.h;
        uint64_t drops = counter(b, VHCA_CNT_DROP(VHCA_DROP_VLAN));
        uint64_t all = counter(b, VHCA_CNT_ROCE_RX_DROPPED);
        uint64_t eth = counter(b, VHCA_CNT_RX_PACKETS);
        const uint8_t *dgid = v.p.b.gid;

        if (cases[i].to_vlan_gid) {
            dgid = v.gid_b;
        }
        g_test_message("case %u", i);
        deliver_send(&v, dgid, cases[i].tagged, cases[i].tci);
        /* The QP is in RESET: a taken datagram drops as qp-state. */
        g_assert_cmpuint(counter(b, VHCA_CNT_DROP(VHCA_DROP_VLAN)) - drops,
                         ==, !cases[i].taken);
        g_assert_cmpuint(counter(b, VHCA_CNT_ROCE_RX_DROPPED) - all, ==, 1);
        g_assert_cmpuint(counter(b, VHCA_CNT_RX_PACKETS), ==, eth);
        if (!cases[i].taken) {
            g_assert_cmpstr(b->last_drop_reason, ==, "vlan");
        }
    }
    /* b's untagged GID also on VLAN VID: both VLANs' frames are taken. */
    g_assert_cmpuint(add_gid_vlan(v.p.b.h, 2, v.p.b.gid,
                                  VHCA_GID_VLAN_TAGGED | VID), ==,
                     VHCA_ST_OK);
    deliver_send(&v, v.p.b.gid, true, TCI_OF(0, VID));
    deliver_send(&v, v.p.b.gid, false, 0);
    g_assert_cmpuint(counter(v.p.b.h, VHCA_CNT_DROP(VHCA_DROP_VLAN)), ==, 4);
    vlan_pair_free(&v);
}

/*
 * UD over the VLAN: the AV's SL is the PCP, the datagram is delivered
 * and its CQE carries the tag (VHCA_CQE_VLAN, vlan_tci).
 */
static void test_ud_tagged(void)
{
    struct vhca_send_wqe w;
    struct vhca_qp_attr a;
    struct vhca_cqe cqe;
    VlanPair v;
    Node *n;

    vlan_nodes_init(&v, VHCA_QPT_UD);
    for (n = &v.p.a; n; n = n == &v.p.a ? &v.p.b : NULL) {
        memset(&a, 0, sizeof(a));
        a.qpn = n->qp.qpn;
        a.port = 1;
        a.qkey = 0x11111111u;
        qp_modify_ok(n->h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                     VHCA_QP_QKEY | VHCA_QP_PORT);
        qp_modify_ok(n->h, &a, VHCA_QPS_RTR, 0);
        qp_modify_ok(n->h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
    }
    post_recv(&v.p.b, 7, 0, VHCA_GRH_AREA_LEN + 64);
    fill(&v.p.a, 0, 64, 9);
    wqe_init(&w, 1, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&w, v.p.a.buf, 64, v.p.a.key);
    w.dest_qpn = GUINT32_TO_LE(v.p.b.qp.qpn);
    w.qkey = GUINT32_TO_LE(0x11111111u);
    memcpy(w.av.dgid, v.gid_b, 16);
    memcpy(w.av.dmac, v.p.b.h->core.cfg.mac, 6);
    w.av.sgid_index = GID_VLAN_INDEX;
    w.av.hop_limit = 64;
    w.av.eth_sl = 4;
    qp_put_send_wqe(v.p.a.h, &v.p.a.qp, &w);
    ring_sq(&v.p.a);
    settle(&v);
    expect_cqe(&v.p.a, &v.p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    cqe = expect_cqe(&v.p.b, &v.p.b.rcq, 7, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    /* The receiver learns the tag: the kernel answers on its VLAN. */
    g_assert_cmphex(cqe.flags & VHCA_CQE_VLAN, ==, VHCA_CQE_VLAN);
    g_assert_cmphex(GUINT16_FROM_LE(cqe.vlan_tci), ==, TCI_OF(4, VID));
    g_assert_cmpuint(v.wa.frames, ==, 1);
    g_assert_cmpuint(v.wa.tagged, ==, 1);
    g_assert_cmphex(v.wa.data_tci, ==, TCI_OF(4, VID));
    vlan_pair_free(&v);
}

/*
 * The CNP for a CE-marked packet on the VLAN goes back tagged with the
 * VID: PCP np_cnp_prio in np_cnp_prio_mode 0, the marked packet's PCP
 * in mode 1.
 */
static void cnp_case(uint32_t mode, uint16_t expect_pcp)
{
    const uint32_t flags = VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP;
    const CcParam over[] = {
        { VHCA_CC_PARAM_NP_CNP_PRIO_MODE, mode },
        { VHCA_CC_PARAM_NP_CNP_PRIO, 2 },
    };
    VlanPair v;

    vlan_rc_init(&v, 5, 1);
    set_cc(v.p.a.h, flags, over, G_N_ELEMENTS(over));
    set_cc(v.p.b.h, flags, over, G_N_ELEMENTS(over));
    v.wa.mark_ce = true;
    write_msg(&v, 1, 1024);
    settle(&v);
    expect_cqe(&v.p.a, &v.p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(v.wb.cnps, ==, 1);
    g_assert_true(v.wb.cnp_tagged);
    g_assert_cmphex(v.wb.cnp_tci, ==, TCI_OF(expect_pcp, VID));
    vlan_pair_free(&v);
}

static void test_cnp_prio_fixed(void)
{
    cnp_case(0, 2);
}

static void test_cnp_prio_of_packet(void)
{
    cnp_case(1, 5);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/vlan/add-gid-field", test_add_gid_vlan_field);
    g_test_add_func("/vhca/vlan/rc-tagged", test_rc_tagged);
    g_test_add_func("/vhca/vlan/rc-untagged-gid", test_rc_untagged_gid);
    g_test_add_func("/vhca/vlan/rx-rule", test_rx_vlan_rule);
    g_test_add_func("/vhca/vlan/ud-tagged", test_ud_tagged);
    g_test_add_func("/vhca/vlan/cnp-prio-fixed", test_cnp_prio_fixed);
    g_test_add_func("/vhca/vlan/cnp-prio-of-packet", test_cnp_prio_of_packet);
    return g_test_run();
}
