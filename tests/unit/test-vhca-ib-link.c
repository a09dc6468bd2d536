/*
 * Unit tests of the InfiniBand port's data path (link=ib,
 * docs/specs/vhca.rst "InfiniBand port"): the same transports over LRH
 * packets, two devices back to back whose ports an "SM" (the tests,
 * through MAD_IFC) made ACTIVE; and each check of the receive path in
 * its order, with the drop it counts.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-ib.h"
#include "vhca-node.h"
#include "vhca-wire.h"

#define FRAME_MAX   8192

/* A captured frame of @h (no peer set), parsed as an IB packet. */
static void parse_captured(Harness *h, unsigned i, VhcaWirePacket *pkt)
{
    g_assert_cmpuint(h->nframes, >, i);
    g_assert_cmpuint(vhca_wire_parse_lrh(h->frames[i].data,
                                         h->frames[i].len, pkt), ==,
                     VHCA_WIRE_OK);
    g_assert_cmpuint(vhca_wire_parse_ib(h->frames[i].data, h->frames[i].len,
                                        pkt), ==, VHCA_WIRE_OK);
}

static void collect_line(void *opaque, const char *line)
{
    g_string_append_printf(opaque, "%s\n", line);
}

/* vhca_core_dump()'s lines, as info vhca prints them. */
static char *dump_text(Harness *h)
{
    GString *text = g_string_new("");

    vhca_core_dump(&h->core, collect_line, text);
    return g_string_free(text, false);
}

/*
 * An IB packet from the peer (LID 2, QP @src) to node a's QP @qpn: an RC
 * SEND ONLY of 8 bytes with @lrh's VL, DLID and SL, and BTH P_Key @pkey.
 */
static size_t ib_frame(uint8_t *buf, uint8_t opcode, uint8_t vl,
                       uint16_t dlid, uint16_t pkey, uint32_t qpn,
                       uint32_t psn)
{
    static const uint8_t data[8] = "vhca-ib";
    VhcaWirePacket pkt;

    memset(&pkt, 0, sizeof(pkt));
    pkt.link = VHCA_WIRE_LINK_IB;
    pkt.lrh.vl = vl;
    pkt.lrh.sl = 3;
    pkt.lrh.dlid = dlid;
    pkt.lrh.slid = 2;
    pkt.tp.bth.opcode = opcode;
    pkt.tp.bth.pkey = pkey;
    pkt.tp.bth.dest_qpn = qpn;
    pkt.tp.bth.psn = psn;
    pkt.tp.deth.qkey = 0x11111111;
    pkt.tp.deth.src_qpn = 0x42;
    pkt.payload = data;
    pkt.payload_len = sizeof(data);
    return vhca_wire_build(&pkt, buf, FRAME_MAX);
}

/* RC over the IB link by LID: SEND, WRITE and READ complete. */
static void test_rc_by_lid(void)
{
    ConnOpts o = default_opts;
    Pair p;

    pair_init_ib(&p, &o);
    fill(&p.a, 0, 3000, 1);
    post_recv(&p.b, 1, 0, 4096);
    post(&p.a, 2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 3000, 0, 0);
    fill(&p.a, 8192, 5000, 2);
    post(&p.a, 3, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 8192, 5000,
         p.b.buf + 16384, p.b.key);
    post(&p.a, 4, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, 32768, 5000,
         p.b.buf + 16384, p.b.key);
    ring_sq(&p.a);
    harness_pair_settle(p.a.h, p.b.h, SETTLE_NS);
    expect_cqe(&p.b, &p.b.rcq, 1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 3, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 4, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_same(&p.a, 0, &p.b, 0, 3000);
    expect_same(&p.a, 8192, &p.b, 16384, 5000);
    expect_same(&p.a, 32768, &p.b, 16384, 5000);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RDMA_TX_BYTES), ==,
                     counter(p.b.h, VHCA_CNT_RDMA_RX_BYTES));
    pair_free(&p);
}

/* What the requester puts on the wire: LRH from the path, no GRH. */
static void test_lrh_on_the_wire(void)
{
    ConnOpts o = default_opts;
    VhcaWirePacket pkt;
    Pair p;

    pair_init_ib(&p, &o);
    p.a.h->peer = NULL;             /* capture a's frames */
    post(&p.a, 1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 64, 0, 0);
    ring_sq(&p.a);
    harness_run(p.a.h);
    parse_captured(p.a.h, 0, &pkt);
    g_assert_cmpuint(pkt.link, ==, VHCA_WIRE_LINK_IB);
    g_assert_false(pkt.grh);
    g_assert_cmpuint(pkt.lrh.dlid, ==, 2);
    g_assert_cmpuint(pkt.lrh.slid, ==, 1);
    g_assert_cmpuint(pkt.lrh.vl, ==, 0);
    g_assert_cmphex(pkt.tp.bth.pkey, ==, 0xffff);
    g_assert_cmpuint(pkt.tp.bth.dest_qpn, ==, p.b.qp.qpn);
    g_assert_cmpuint(pkt.payload_len, ==, 64);
    pair_free(&p);
}

/* IBTA 7.2: an INIT or ARMED port sends no data and takes none in INIT. */
static void test_port_state_gates(void)
{
    ConnOpts o = default_opts;
    uint8_t frame[FRAME_MAX];
    size_t len;
    Pair p;

    pair_init_ib(&p, &o);
    /* b's cable is pulled and back: INIT, then the SM arms it again. */
    vhca_core_set_link(&p.b.h->core, false);
    vhca_core_set_link(&p.b.h->core, true);
    node_ib_set_port(&p.b, 2, 1, VHCA_PORT_ARMED);
    g_assert_cmpuint(p.b.h->core.ib.state, ==, VHCA_PORT_ARMED);
    /* ARMED sends SMPs only: b's data is discarded and counted. */
    p.b.h->peer = NULL;
    post(&p.b, 1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 64, 0, 0);
    ring_sq(&p.b);
    harness_run(p.b.h);
    g_assert_cmpuint(p.b.h->nframes, ==, 0);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_XMIT_DISCARDS), ==, 1);

    /* INIT takes VL15 only. */
    vhca_core_set_link(&p.a.h->core, false);
    vhca_core_set_link(&p.a.h->core, true);
    g_assert_cmpuint(p.a.h->core.ib.state, ==, VHCA_PORT_INIT);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_LINK_DOWNED), ==, 1);
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 1, 0xffff,
                   p.a.qp.qpn, 0);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_PORT_STATE), ==, 1);
    g_assert_cmpstr(p.a.h->last_drop_reason, ==, "port-state");
    pair_free(&p);
}

/* A data packet makes an ARMED port ACTIVE (7.2). */
static void test_armed_to_active(void)
{
    ConnOpts o = default_opts;
    uint8_t frame[FRAME_MAX];
    size_t len;
    Pair p;

    pair_init_ib(&p, &o);
    vhca_core_set_link(&p.a.h->core, false);
    vhca_core_set_link(&p.a.h->core, true);
    node_ib_set_port(&p.a, 1, 1, VHCA_PORT_ARMED);
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 1, 0xffff,
                   p.a.qp.qpn, o.b_psn);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(p.a.h->core.ib.state, ==, VHCA_PORT_ACTIVE);
    pair_free(&p);
}

/* The receive path's checks, each with its drop reason and counter. */
static void test_receive_checks(void)
{
    ConnOpts o = default_opts;
    uint8_t frame[FRAME_MAX];
    uint32_t qpn;
    size_t len;
    Pair p;

    pair_init_ib(&p, &o);
    qpn = p.a.qp.qpn;

    /* Not our LID (ours is 1, LMC 0). */
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 5, 0xffff,
                   qpn, o.b_psn);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_DLID), ==, 1);
    /* The permissive LID on a data VL. */
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 0xffff, 0xffff,
                   qpn, o.b_psn);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_DLID), ==, 2);
    /* A multicast LID without a GRH: no MGID names the group. */
    len = ib_frame(frame, VHCA_IB_OPCODE(UD, SEND_ONLY), 0, 0xc001, 0xffff,
                   VHCA_MCAST_QPN, 0);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_DLID), ==, 3);

    /* Bad VCRC: its last byte. */
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 1, 0xffff,
                   qpn, o.b_psn);
    frame[len - 1] ^= 1;
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_BAD_VCRC), ==, 1);

    /* VL15 carries QP0's packets only, and QP0 takes nothing else. */
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 15, 1, 0xffff,
                   qpn, o.b_psn);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_VL15), ==, 1);
    len = ib_frame(frame, VHCA_IB_OPCODE(UD, SEND_ONLY), 0, 1, 0xffff,
                   VHCA_SMI_QPN, 0);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_VL15), ==, 2);

    /* A P_Key not in the table (14.2.5.6: P_KeyViolations counts it). */
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 1, 0x8123,
                   qpn, o.b_psn);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_PKEY), ==, 1);
    g_assert_cmpuint(p.a.h->core.ib.pkey_violations, ==, 1);
    /*
     * In the table but not the QP's partition (10.9.3): the QP is in
     * 0xFFFF's, the packet in 0x8123's.
     */
    node_ib_pkey(&p.a, 5, 0x8123);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_PKEY), ==, 2);
    /* Two limited members (0x0123 both) do not talk either. */
    node_ib_pkey(&p.a, 5, 0x0123);
    len = ib_frame(frame, VHCA_IB_OPCODE(RC, SEND_ONLY), 0, 1, 0x0123,
                   qpn, o.b_psn);
    harness_deliver(p.a.h, frame, len);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_PKEY), ==, 3);
    g_assert_cmpuint(p.a.h->core.ib.pkey_violations, ==, 3);

    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 9);
    pair_free(&p);
}

/* UD by LID: the IB completion fields, no GRH flag without a GRH. */
static void test_ud_completion_fields(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    uint8_t frame[FRAME_MAX];
    struct vhca_qp_attr a;
    struct vhca_cqe cqe;
    Node n;
    size_t len;

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&n, 1, VHCA_QPT_UD, &cfg);
    node_ib_set_port(&n, 8, 1, VHCA_PORT_ACTIVE);
    memset(&a, 0, sizeof(a));
    a.qpn = n.qp.qpn;
    a.port = 1;
    a.qkey = 0x11111111;
    qp_modify_ok(n.h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                 VHCA_QP_QKEY);
    qp_modify_ok(n.h, &a, VHCA_QPS_RTR, 0);
    post_recv(&n, 7, 0, 256);
    len = ib_frame(frame, VHCA_IB_OPCODE(UD, SEND_ONLY), 0, 8, 0xffff,
                   n.qp.qpn, 0);
    harness_deliver(n.h, frame, len);
    harness_run(n.h);
    cqe = expect_cqe(&n, &n.rcq, 7, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==,
                     VHCA_GRH_AREA_LEN + 8);
    g_assert_cmphex(GUINT32_FROM_LE(cqe.src_qp), ==, 0x42);
    g_assert_cmpuint(GUINT16_FROM_LE(cqe.slid), ==, 2);
    g_assert_cmpuint(cqe.sl, ==, 3);
    g_assert_cmpuint(cqe.dlid_path_bits, ==, 0);
    g_assert_cmphex(cqe.flags & (VHCA_CQE_GRH | VHCA_CQE_NET_IPV4 |
                                 VHCA_CQE_NET_IPV6), ==, 0);
    harness_free(n.h);
}

/* The SMI QP: IB only, QP0 on the wire, VL15, the permissive LID. */
static void test_smi_qp(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    uint8_t frame[FRAME_MAX];
    struct vhca_qp_attr a;
    struct vhca_send_wqe w;
    VhcaWirePacket pkt;
    TestQp smi, eth_smi;
    Node n, e;
    size_t len;

    /* No SMI QP on an Ethernet port (annex A16/A17). */
    node_init(&e, 2, VHCA_QPT_UD);
    g_assert_cmpuint(rdma_create_qp(e.h, &eth_smi, VHCA_QPT_SMI, e.pdn,
                                    e.scq.cqn, e.rcq.cqn, e.page), ==,
                     VHCA_ST_BAD_PARAM);
    harness_free(e.h);

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&n, 1, VHCA_QPT_UD, &cfg);
    g_assert_cmpuint(rdma_create_qp(n.h, &smi, VHCA_QPT_SMI, n.pdn,
                                    n.scq.cqn, n.rcq.cqn, n.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(smi.qpn, !=, VHCA_SMI_QPN);
    g_assert_cmpuint(rdma_create_qp(n.h, &eth_smi, VHCA_QPT_SMI, n.pdn,
                                    n.scq.cqn, n.rcq.cqn, n.page), ==,
                     VHCA_ST_BUSY);
    memset(&a, 0, sizeof(a));
    a.qpn = smi.qpn;
    qp_modify_ok(n.h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY);
    /* The port is INIT, no LID: QP0 still goes to RTS (the MAD layer). */
    qp_modify_ok(n.h, &a, VHCA_QPS_RTR, 0);
    qp_modify_ok(n.h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);

    /* A directed-route SMP from the neighbour: permissive DLID, VL15. */
    n.qp = smi;
    post_recv(&n, 9, 0, 512);
    len = ib_frame(frame, VHCA_IB_OPCODE(UD, SEND_ONLY), 15, 0xffff,
                   0xffff, VHCA_SMI_QPN, 0);
    harness_deliver(n.h, frame, len);
    harness_run(n.h);
    expect_cqe(&n, &n.rcq, 9, VHCA_WC_SUCCESS, VHCA_WC_RECV);

    /* Its answer: VL15, SrcQP 0, from the permissive LID (no LID yet). */
    wqe_init(&w, 10, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    w.dest_qpn = GUINT32_TO_LE(VHCA_SMI_QPN);
    w.av.dlid = GUINT16_TO_LE(0xffff);
    wqe_sge(&w, n.buf, 256, n.key);
    qp_put_send_wqe(n.h, &n.qp, &w);
    ring_sq(&n);
    harness_run(n.h);
    expect_cqe(&n, &n.scq, 10, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    parse_captured(n.h, 0, &pkt);
    g_assert_cmpuint(pkt.lrh.vl, ==, VHCA_IB_VL_SMP);
    g_assert_cmphex(pkt.lrh.slid, ==, 0xffff);
    g_assert_cmphex(pkt.lrh.dlid, ==, 0xffff);
    g_assert_cmpuint(pkt.tp.deth.src_qpn, ==, VHCA_SMI_QPN);
    /* A data QP of this INIT port sends nothing. */
    g_assert_cmpuint(n.h->nframes, ==, 1);
    harness_free(n.h);
}

/*
 * The SMI QP is QP0 on the wire and nothing else (IBTA 14.2.4.1): its
 * handle, which CREATE_QP gave it for doorbells and commands, is no
 * address, or a packet on a data VL naming it would reach QP0 past the
 * VL15 rule (7.6.5) and the P_Key and Q_Key checks QP0 does without.
 * Found by fuzz-vhca-ib.
 */
/* A UD SEND ONLY from the peer on @vl to @n's LID 1, DestQP @qpn, run. */
static void deliver_ud(Node *n, uint8_t vl, uint32_t qpn)
{
    uint8_t frame[FRAME_MAX];
    size_t len = ib_frame(frame, VHCA_IB_OPCODE(UD, SEND_ONLY), vl, 1,
                          0xffff, qpn, 0);

    harness_deliver(n->h, frame, len);
    harness_run(n->h);
}

static void test_smi_handle_not_an_address(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    TestQp smi;
    Node n;

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&n, 1, VHCA_QPT_UD, &cfg);
    node_ib_set_port(&n, 1, 1, VHCA_PORT_ACTIVE);
    node_ib_smi_qp(&n, &smi);
    g_assert_cmpuint(smi.qpn, !=, VHCA_SMI_QPN);
    n.qp = smi;
    post_recv(&n, 1, 0, 512);
    deliver_ud(&n, 0, smi.qpn);
    expect_no_cqe(&n, &n.rcq);
    g_assert_cmpuint(counter(n.h, VHCA_CNT_DROP_NO_QP), ==, 1);
    /* On VL15 it is no QP0 packet either. */
    deliver_ud(&n, VHCA_IB_VL_SMP, smi.qpn);
    expect_no_cqe(&n, &n.rcq);
    g_assert_cmpuint(counter(n.h, VHCA_CNT_DROP_VL15), ==, 1);
    /* As QP0 it arrives. */
    deliver_ud(&n, VHCA_IB_VL_SMP, VHCA_SMI_QPN);
    expect_cqe(&n, &n.rcq, 1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    harness_free(n.h);
}

/* Connections need an ACTIVE port (7.2): RTR fails BAD_STATE before. */
static void test_rtr_needs_active_port(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    struct vhca_qp_attr a;
    uint8_t raw[sizeof(a)];
    Node n;

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&n, 1, VHCA_QPT_RC, &cfg);
    memset(&a, 0, sizeof(a));
    a.qpn = n.qp.qpn;
    a.port = 1;
    qp_modify_ok(n.h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                 VHCA_QP_ACCESS_FLAGS);
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_AV | VHCA_QP_PATH_MTU |
                  VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                  VHCA_QP_MAX_DEST_RD_ATOMIC | VHCA_QP_MIN_RNR_TIMER;
    a.qp_state = VHCA_QPS_RTR;
    a.dlid = 2;
    a.path_mtu = VHCA_IB_MTU_1024;
    memcpy(raw, &a, sizeof(raw));
    g_assert_cmpuint(rdma_cmd(n.h, VHCA_CMD_MODIFY_QP, raw, sizeof(raw),
                              NULL, NULL), ==, VHCA_ST_BAD_STATE);
    node_ib_set_port(&n, 1, 1, VHCA_PORT_ACTIVE);
    qp_modify_ok(n.h, &a, VHCA_QPS_RTR, a.attr_mask & ~VHCA_QP_STATE);
    harness_free(n.h);
}

/* A packet to our own LID loops back inside the device. */
static void test_loopback_by_lid(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    ConnOpts o = default_opts;
    Node n;

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&n, 1, VHCA_QPT_RC, &cfg);
    node_ib_set_port(&n, 4, 4, VHCA_PORT_ACTIVE);
    qp_connect_lid(n.h, n.qp.qpn, 4, n.qp.qpn, &o, 0, 0);
    fill(&n, 0, 100, 3);
    post_recv(&n, 1, 4096, 200);
    post(&n, 2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&n);
    harness_run(n.h);
    expect_cqe(&n, &n.rcq, 1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_cqe(&n, &n.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_same(&n, 0, &n, 4096, 100);
    g_assert_cmpuint(n.h->nframes, ==, 0);
    harness_free(n.h);
}

/* Host introspection: the port as the SM left it (info vhca). */
static void test_dump_lines(void)
{
    ConnOpts o = default_opts;
    char *text;
    Pair p;

    pair_init_ib(&p, &o);
    node_ib_pkey(&p.a, 3, 0x8005);
    text = dump_text(p.a.h);
    g_test_message("%s", text);
    g_assert_nonnull(strstr(text, "port infiniband link up"));
    g_assert_nonnull(strstr(text, "ib-port state ACTIVE lid 0x1 lmc 0 "
                                  "sm-lid 0x1 sm-sl 0"));
    g_assert_nonnull(strstr(text, "pkeys 0:0xffff 3:0x8005\n"));
    g_assert_nonnull(strstr(text, "sl2vl 0 0 0"));
    g_assert_nonnull(strstr(text, " type IB\n"));
    g_assert_nonnull(strstr(text, "dlid 0x2 sl 0"));
    g_free(text);
    pair_free(&p);
}

/* The Ethernet port's commands do not exist on the IB port. */
static void test_eth_commands_refused(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    struct vhca_cmd_mtu_in mtu = { .mtu = GUINT32_TO_LE(1500) };
    Harness *h;

    cfg.link = VHCA_LINK_IB;
    h = harness_new(&cfg);
    harness_enable(h);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_SET_MTU, 1, &mtu, sizeof(mtu),
                               NULL), ==, VHCA_ST_BAD_OPCODE);
    g_assert_cmpuint(vhca_core_reg_read(&h->core, VHCA_REG_CAPS, 4), ==,
                     VHCA_CAP_IB);
    harness_free(h);
}

/*
 * Hostile packets on the IB link: random datagrams, and valid packets
 * with random header bits flipped whose CRCs are then made right again,
 * so that they pass the link and reach the demux and the QPs.  Nothing
 * may crash (the -san build runs this too); every packet is dropped and
 * counted or taken.
 */
static void test_hostile_packets(void)
{
    ConnOpts o = default_opts;
    GRand *rand = g_rand_new_with_seed(27);
    uint8_t frame[FRAME_MAX];
    char *lines;
    unsigned i, j;
    Pair p;

    pair_init_ib(&p, &o);
    for (i = 0; i < 200; i++) {
        post_recv(&p.b, i, 0, 4096);
    }
    for (i = 0; i < 20000; i++) {
        size_t len;

        if (i % 2) {
            len = g_rand_int_range(rand, 0, 300);
            for (j = 0; j < len; j++) {
                frame[j] = g_rand_int(rand);
            }
        } else {
            static const uint8_t ops[] = {
                VHCA_IB_OPCODE(RC, SEND_ONLY), VHCA_IB_OPCODE(UD, SEND_ONLY),
                VHCA_IB_OPCODE(RC, RDMA_WRITE_ONLY),
                VHCA_IB_OPCODE(RC, ACKNOWLEDGE),
            };
            uint32_t flips = g_rand_int_range(rand, 1, 4);

            len = ib_frame(frame, ops[i / 2 % G_N_ELEMENTS(ops)], 0, 2,
                           0xffff, p.b.qp.qpn, o.a_psn + i / 2);
            for (j = 0; j < flips; j++) {
                unsigned bit = g_rand_int_range(rand, 0, 8 * 40);

                frame[bit / 8] ^= 1u << (bit % 8);
            }
            /* The CRCs over what the flips made, as a sender would. */
            ib_frame_fix_crcs(frame, len);
        }
        harness_deliver(p.b.h, frame, len);
        if (i % 64 == 0) {
            harness_run(p.b.h);
        }
    }
    harness_run(p.b.h);
    /* The device still answers, and describes itself. */
    lines = dump_text(p.b.h);
    g_assert_nonnull(strstr(lines, "ib-port state"));
    g_free(lines);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), >, 0);
    g_rand_free(rand);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/ib-link/rc-by-lid", test_rc_by_lid);
    g_test_add_func("/vhca/ib-link/lrh-on-the-wire", test_lrh_on_the_wire);
    g_test_add_func("/vhca/ib-link/port-state-gates", test_port_state_gates);
    g_test_add_func("/vhca/ib-link/armed-to-active", test_armed_to_active);
    g_test_add_func("/vhca/ib-link/receive-checks", test_receive_checks);
    g_test_add_func("/vhca/ib-link/ud-completion-fields",
                    test_ud_completion_fields);
    g_test_add_func("/vhca/ib-link/smi-qp", test_smi_qp);
    g_test_add_func("/vhca/ib-link/smi-handle-not-an-address",
                    test_smi_handle_not_an_address);
    g_test_add_func("/vhca/ib-link/rtr-needs-active-port",
                    test_rtr_needs_active_port);
    g_test_add_func("/vhca/ib-link/loopback-by-lid", test_loopback_by_lid);
    g_test_add_func("/vhca/ib-link/eth-commands-refused",
                    test_eth_commands_refused);
    g_test_add_func("/vhca/ib-link/hostile-packets", test_hostile_packets);
    g_test_add_func("/vhca/ib-link/dump-lines", test_dump_lines);
    return g_test_run();
}
