/*
 * Structure-aware fuzz target for the vhca engine's InfiniBand port
 * (link=ib; docs/specs/vhca.rst, "InfiniBand port").
 *
 * Two IB engines back to back (pair_init_ib(): ports ACTIVE with LIDs 1
 * and 2, the master SM at LID 1, the RC QPs connected by LID), each with
 * its SMI QP (QP0), the GSI QP (QP1) and a UD QP in the partition of
 * P_Key 0x8001, a few receive WQEs posted on all four; node B's UD QP
 * joined a multicast group, and B's P_Key table holds a limited member
 * (0x0002) too.  The input is a list of operations, each an opcode byte and its
 * fields (past its end every field reads as zero), at most 256 of them:
 *
 *   - an IB packet from the wire, built by vhca_wire_build() (valid ICRC
 *     and VCRC) with the input's VL (15 included), SL, GRH and DGID, DLID
 *     (the port's, with path bits, permissive, multicast, any, 0), SLID
 *     (the peer's, 0, permissive, any), BTH opcode (RC, UC and UD ones, or
 *     raw), P_Key (the tables' entries, full and limited, invalid ones,
 *     any), DestQP (QP0, QP1, the SMI QP's handle, our QPs, multicast,
 *     any), PSN, Q_Key, extension headers and payload length; then
 *     PadCnt, LVer, LNH, PktLen or any byte changed, the frame truncated
 *     or lengthened, its CRCs made valid again or not;
 *   - a raw datagram of the input's bytes, its CRCs made valid or not;
 *   - MAD_IFC with an SMP (LID routed or directed route), a PMA MAD or a
 *     MAD of any class: base and class version, method, attribute (those
 *     the agents know, SMInfo and Notice, or any), modifier, M_Key, the
 *     directed route's hop pointer and count and LIDs, the data (the
 *     input's bytes, or the attribute as a Get read it with some bytes
 *     changed), the flags, the port, the work completion fields, the
 *     mailbox's address and length;
 *   - MODIFY_PORT with any port, flags and CapabilityMask bits;
 *   - the cable pulled or plugged in, a device reset; the SM bringing a
 *     port back (PortInfo Sets of the LID, the SM's LID, PortState ARMED
 *     and ACTIVE, the P_Key table, none of which need succeed) and the RC
 *     pair connected again by LID;
 *   - traffic: RC SEND, WRITE and READ between the nodes; UD datagrams
 *     (to the peer's UD QP, QP1, QP0, our own, any; by LID, our own LID,
 *     the permissive LID or a multicast one; any SL and Q_Key), SMPs on
 *     the SMI QP and MADs on the GSI QP; receive WQEs (too short, with a
 *     bad key);
 *   - time passing, which fires the transport timers and ends M_Key
 *     leases; the async events drained.
 *
 * After each operation both engines run to idle, their CQs are polled
 * and the invariants are checked: every guest error has its typed event,
 * the drop counters add up to rcvd_dropped, admin errors do not exceed
 * admin commands; each CQE names a QP of ours with a status the device
 * defines, and a queue completes no more WQEs than were posted on it;
 * the port is DOWN, INIT, ARMED or ACTIVE, and DOWN exactly when its
 * link is not up (IBTA 7.2); its LID and its master SM's are unicast or
 * 0 and its LMC at most 7 (7.11.1); the SMI QP completes receives only
 * for VL15 packets to QP0 and for the SMA's traps (7.6.5, 14.2.4.1).  A
 * MAD_IFC command fails only for a bad mailbox, port or flags, with the
 * status they call for, and its result has only the REPLY and CONSUMED
 * bits; a reply is a response (Method's R bit, the request's TID, on a
 * directed route the D bit; 13.4.5, 14.2.1.2) and without one the device
 * writes nothing to out_mad.  MODIFY_PORT fails exactly when its port,
 * flags or CapabilityMask bits are not allowed.  The harness's own
 * assertions hold throughout; with AddressSanitizer and UBSan any memory
 * error, leak or undefined behaviour is a crash.
 *
 * Built as fuzz-vhca.c is: with fuzz-driver.c (the test command's
 * bounded run) or libFuzzer; see docs/developer-guide.rst, "Fuzzing".
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "fuzz-common.h"
#include "fuzz-target.h"
#include "vhca-ib.h"
#include "vhca-mad.h"
#include "vhca-node.h"
#include "vhca-wire.h"

/* A node's QPs; all complete to the node's two CQs. */
enum { IQ_RC, IQ_UD, IQ_GSI, IQ_SMI, IQ__N };

#define UD_QKEY         0x11110000u
#define UD_PKEY         0x8001
#define UD_PKEY_INDEX   1
#define LIMITED_PKEY    0x0002      /* B's table, index 2 */
#define SM_LID          1
#define FRAME_MAX       8192
#define PAYLOAD_MAX     (4096 + 128)    /* past the largest MTU */
/*
 * The node's buffer: receive WQEs in [0, 16 * RECV_LEN) (one slot per
 * ring index; the QPs share them), what it sends from SEND_OFF, what the
 * peer writes and reads at RDMA_OFF.
 */
#define RECV_LEN        0x1100      /* the GRH area and 4096 bytes, more */
#define SEND_OFF        0x20000
#define RDMA_OFF        0x30000
#define MSG_MAX         0x8000
/* Receive WQEs at the start: room for the input's after them. */
#define RECV_START      4
/* The MAD_IFC mailbox moves around in these pages. */
#define MBOX_PAGES      3
#define MBOX_LEN        sizeof(struct vhca_mad_ifc)
#define OUT_MAD_FILL    0xee

/* ff12:601b:ffff::1, the group B's UD QP joined. */
static const uint8_t mgid[16] = {
    0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1
};

typedef struct IbNode {
    Node *n;
    TestQp smi, gsi, ud;
    TestQp *qp[IQ__N];
    /* WQEs posted and not completed yet, per queue. */
    unsigned sq_busy[IQ__N], rq_busy[IQ__N];
    uint16_t lid;                   /* the one the SM gives it */
    uint64_t mbox;                  /* MBOX_PAGES */
    uint64_t wr_id, tid;
    /*
     * VL15 packets to QP0 that reached the node, or may have (its own
     * SMI QP's sends loop back to its own LID); the SMA's traps counted
     * before a device reset cleared the counters; the receive
     * completions of its SMI QP that a packet caused.
     */
    unsigned smi_packets, smi_recvs;
    uint64_t old_traps;
} IbNode;

typedef struct IbFuzz {
    Pair p;
    IbNode node[2];
} IbFuzz;

static IbFuzz *fz;
static int verbose;                 /* VHCA_FUZZ_VERBOSE */

static char node_name(const IbNode *fn)
{
    return fn == &fz->node[0] ? 'A' : 'B';
}

static IbNode *peer_of(const IbNode *fn)
{
    return &fz->node[fn == &fz->node[0]];
}

static VhcaCore *core_of(const IbNode *fn)
{
    return &fn->n->h->core;
}

/* ---------------------------------------------------------------------- */
/* Queues                                                                 */
/* ---------------------------------------------------------------------- */

/* A receive WQE of @len bytes in the receive area, with @lkey. */
static bool recv_wqe(IbNode *fn, unsigned q, uint32_t len, uint32_t lkey)
{
    TestQp *qp = fn->qp[q];
    struct vhca_recv_wqe w;

    if (fn->rq_busy[q] >= 1u << qp->rq_log) {
        return false;
    }
    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(++fn->wr_id);
    w.num_sge = 1;
    w.sge[0].addr = GUINT64_TO_LE(fn->n->buf + (qp->rq_pi % 16) * RECV_LEN);
    w.sge[0].length = GUINT32_TO_LE(len);
    w.sge[0].lkey = GUINT32_TO_LE(lkey);
    qp_put_recv_wqe(fn->n->h, qp, &w);
    fn->rq_busy[q]++;
    return true;
}

static void ring_rq(IbNode *fn, unsigned q)
{
    ring_doorbell(fn->n->h, fn->n->page, VHCA_DB_RQ, fn->qp[q]->qpn,
                  fn->qp[q]->rq_pi);
}

/* Every free slot of @q's receive queue with a WQE that fits anything. */
static void fill_rq(IbNode *fn, unsigned q)
{
    while (recv_wqe(fn, q, RECV_LEN, fn->n->key)) {
        /* next */
    }
    ring_rq(fn, q);
}

/* Post @w on @q and ring; false if the send queue is full. */
static bool send_wqe(IbNode *fn, unsigned q, const struct vhca_send_wqe *w)
{
    TestQp *qp = fn->qp[q];

    if (fn->sq_busy[q] >= 1u << qp->sq_log) {
        return false;
    }
    qp_put_send_wqe(fn->n->h, qp, w);
    fn->sq_busy[q]++;
    ring_doorbell(fn->n->h, fn->n->page, VHCA_DB_SQ, qp->qpn, qp->sq_pi);
    /* An SMP to our own LID loops back to our SMI QP. */
    if (q == IQ_SMI) {
        fn->smi_packets++;
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* Invariants                                                             */
/* ---------------------------------------------------------------------- */

static void check_cqe(IbNode *fn, const struct vhca_cqe *cqe)
{
    uint32_t qpn = GUINT32_FROM_LE(cqe->qpn);
    bool recv = cqe->opcode >= VHCA_WC_RECV;
    unsigned q, *busy;

    if (verbose > 1) {
        g_printerr("node %c: qpn %u wr_id %" G_GUINT64_FORMAT " opcode %u "
                   "status %u len %u flags %u\n", node_name(fn), qpn,
                   cqe->wr_id, cqe->opcode, cqe->status,
                   GUINT32_FROM_LE(cqe->byte_len), cqe->flags);
    }
    fuzz_check_cqe_status(cqe->status);
    for (q = 0; q < IQ__N && fn->qp[q]->qpn != qpn; q++) {
        /* find it */
    }
    if (q == IQ__N) {
        g_error("node %c: a CQE names QP %u, not one of ours",
                node_name(fn), qpn);
    }
    busy = recv ? &fn->rq_busy[q] : &fn->sq_busy[q];
    if (!*busy) {
        g_error("node %c: a %s completion on QP %u with no WQE posted",
                node_name(fn), recv ? "receive" : "send", qpn);
    }
    (*busy)--;
    /* A flushed WQE took no packet. */
    if (q == IQ_SMI && recv && cqe->status != VHCA_WC_WR_FLUSH_ERR) {
        fn->smi_recvs++;
    }
}

static void poll_node(IbNode *fn)
{
    TestCq *cqs[] = { &fn->n->scq, &fn->n->rcq };
    struct vhca_cqe cqe;
    unsigned i, n;

    for (i = 0; i < G_N_ELEMENTS(cqs); i++) {
        for (n = 0; n < (1u << cqs[i]->log) &&
             cq_poll(fn->n->h, cqs[i], &cqe); n++) {
            check_cqe(fn, &cqe);
        }
    }
}

static void check_node(IbNode *fn)
{
    const VhcaCore *core = core_of(fn);
    const VhcaIbPort *ib = &core->ib;
    uint64_t traps = fn->old_traps + core->counters[VHCA_CNT_SMA_TRAPS];

    fuzz_check_counters(fn->n->h);
    if (ib->state < VHCA_PORT_DOWN || ib->state > VHCA_PORT_ACTIVE ||
        (ib->phys_state != VHCA_PORT_PHYS_POLLING &&
         ib->phys_state != VHCA_PORT_PHYS_DISABLED &&
         ib->phys_state != VHCA_PORT_PHYS_LINK_UP)) {
        g_error("node %c: PortState %u, PortPhysicalState %u",
                node_name(fn), ib->state, ib->phys_state);
    }
    /* IBTA 7.2: a port is above DOWN exactly while its link is up. */
    if ((ib->state == VHCA_PORT_DOWN) !=
        (ib->phys_state != VHCA_PORT_PHYS_LINK_UP)) {
        g_error("node %c: PortState %s with PortPhysicalState %u",
                node_name(fn), vhca_ib_port_state_name(ib->state),
                ib->phys_state);
    }
    /* 7.11.1: the SM gives a port unicast LIDs. */
    if (ib->lid >= VHCA_IB_LID_MCAST_FIRST ||
        ib->sm_lid >= VHCA_IB_LID_MCAST_FIRST || ib->lmc > 7) {
        g_error("node %c: LID 0x%x, MasterSMLID 0x%x, LMC %u",
                node_name(fn), ib->lid, ib->sm_lid, ib->lmc);
    }
    /* 7.6.5, 14.2.4.1: QP0 takes VL15 packets to QP0, and the traps. */
    if (fn->smi_recvs > fn->smi_packets + traps) {
        g_error("node %c: %u receive completions on the SMI QP for %u VL15 "
                "packets to QP0 and %" G_GUINT64_FORMAT " traps",
                node_name(fn), fn->smi_recvs, fn->smi_packets, traps);
    }
}

/* Both engines to idle, the timers perhaps; their CQEs, and checked. */
static void settle(IbFuzz *f, uint64_t max_ns, unsigned max_timers)
{
    unsigned i;

    fuzz_settle(f->p.a.h, f->p.b.h, max_ns, max_timers);
    for (i = 0; i < 2; i++) {
        poll_node(&f->node[i]);
        check_node(&f->node[i]);
    }
}

static void run_pair(IbFuzz *f)
{
    settle(f, 0, 0);
}

/* ---------------------------------------------------------------------- */
/* The world                                                              */
/* ---------------------------------------------------------------------- */

/* Count a VL15 packet to QP0 that reaches @to, as the engine parses it. */
static void note_packet(IbNode *to, const uint8_t *frame, size_t len)
{
    VhcaWirePacket pkt;

    if (vhca_wire_parse_lrh(frame, len, &pkt) == VHCA_WIRE_OK &&
        vhca_wire_parse_ib(frame, len, &pkt) == VHCA_WIRE_OK &&
        pkt.lrh.vl == VHCA_IB_VL_SMP &&
        pkt.tp.bth.dest_qpn == VHCA_SMI_QPN) {
        to->smi_packets++;
    }
}

static void send_to(IbNode *to, const uint8_t *frame, size_t len)
{
    note_packet(to, frame, len);
    fuzz_deliver(to->n->h, frame, len);
}

static void ib_wire_hook(Harness *h, const uint8_t *buf, size_t len)
{
    send_to(fz->node[0].n->h == h ? &fz->node[1] : &fz->node[0], buf, len);
}

/*
 * A datagram QP to RTS: the UD QP in the partition of UD_PKEY with
 * UD_QKEY; the GSI QP with 0x80010000, as the kernel's MAD layer sets it
 * (its sends' Q_Key, which has the controlled bit, is the QP's).
 */
static void datagram_up(IbNode *fn, TestQp *qp, bool gsi)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = qp->qpn;
    a.port = 1;
    a.pkey_index = gsi ? 0 : UD_PKEY_INDEX;
    a.qkey = gsi ? VHCA_GSI_QKEY : UD_QKEY;
    qp_modify_ok(fn->n->h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                 (gsi ? 0 : VHCA_QP_PORT) | VHCA_QP_QKEY);
    qp_modify_ok(fn->n->h, &a, VHCA_QPS_RTR, 0);
    qp_modify_ok(fn->n->h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

static void world_init(IbFuzz *f)
{
    struct vhca_cmd_mcast_in join;
    unsigned i, q;

    pair_init_ib(&f->p, &default_opts);
    for (i = 0; i < 2; i++) {
        IbNode *fn = &f->node[i];
        Node *n = i ? &f->p.b : &f->p.a;

        fn->n = n;
        fn->lid = 1 + i;
        node_ib_pkey(n, UD_PKEY_INDEX, UD_PKEY);
        if (i) {
            node_ib_pkey(n, 2, LIMITED_PKEY);
        }
        node_ib_smi_qp(n, &fn->smi);
        g_assert_cmpuint(rdma_create_qp(n->h, &fn->gsi, VHCA_QPT_GSI, n->pdn,
                                        n->scq.cqn, n->rcq.cqn, n->page), ==,
                         VHCA_ST_OK);
        datagram_up(fn, &fn->gsi, true);
        g_assert_cmpuint(rdma_create_qp(n->h, &fn->ud, VHCA_QPT_UD, n->pdn,
                                        n->scq.cqn, n->rcq.cqn, n->page), ==,
                         VHCA_ST_OK);
        datagram_up(fn, &fn->ud, false);
        fn->qp[IQ_RC] = &n->qp;
        fn->qp[IQ_UD] = &fn->ud;
        fn->qp[IQ_GSI] = &fn->gsi;
        fn->qp[IQ_SMI] = &fn->smi;
        fn->mbox = rdma_alloc(n->h, MBOX_PAGES);
        for (q = 0; q < IQ__N; q++) {
            unsigned k;

            for (k = 0; k < RECV_START; k++) {
                recv_wqe(fn, q, RECV_LEN, n->key);
            }
            ring_rq(fn, q);
        }
        n->h->tx_hook = ib_wire_hook;
        aeq_drain(n->h);
    }
    memset(&join, 0, sizeof(join));
    join.qpn = GUINT32_TO_LE(f->node[1].ud.qpn);
    memcpy(join.gid, mgid, sizeof(mgid));
    g_assert_cmpuint(admin_cmd(f->p.b.h, VHCA_CMD_ATTACH_MCAST, 1, &join,
                               sizeof(join), NULL), ==, VHCA_ST_OK);
    aeq_drain(f->p.b.h);
}

/* ---------------------------------------------------------------------- */
/* Packets from the wire                                                  */
/* ---------------------------------------------------------------------- */

static const uint8_t frame_opcodes[] = {
    VHCA_IB_OPCODE(RC, SEND_ONLY), VHCA_IB_OPCODE(RC, SEND_FIRST),
    VHCA_IB_OPCODE(RC, SEND_MIDDLE), VHCA_IB_OPCODE(RC, SEND_LAST),
    VHCA_IB_OPCODE(RC, SEND_ONLY_IMM), VHCA_IB_OPCODE(RC, RDMA_WRITE_ONLY),
    VHCA_IB_OPCODE(RC, RDMA_WRITE_FIRST),
    VHCA_IB_OPCODE(RC, RDMA_READ_REQUEST), VHCA_IB_OPCODE(RC, ACKNOWLEDGE),
    VHCA_IB_OPCODE(RC, RDMA_READ_RESPONSE_ONLY),
    VHCA_IB_OPCODE(RC, ATOMIC_ACKNOWLEDGE), VHCA_IB_OPCODE(RC, COMPARE_SWAP),
    VHCA_IB_OPCODE(RC, FETCH_ADD), VHCA_IB_OPCODE(RC, SEND_ONLY_INV),
    VHCA_IB_OPCODE(UC, SEND_ONLY), VHCA_IB_OPCODE(UC, RDMA_WRITE_ONLY),
    VHCA_IB_OPCODE(UD, SEND_ONLY), VHCA_IB_OPCODE(UD, SEND_ONLY_IMM),
};

/* DestQP: as the opcode's transport would have it, or another. */
static uint32_t in_dest_qpn(FuzzIn *in, uint8_t mode, const IbNode *to,
                            bool ud)
{
    switch (mode % 8) {
    case 1:
        return VHCA_SMI_QPN;
    case 2:
        return VHCA_GSI_QPN;
    case 3:
        /* The SMI QP's handle: QP0 on the wire is 0, not this. */
        return to->smi.qpn;
    case 4:
        return to->qp[IQ_RC]->qpn;
    case 5:
        return to->ud.qpn;
    case 6:
        return VHCA_MCAST_QPN;
    case 7:
        return in_u32(in) & VHCA_IB_QPN_MASK;
    default:
        return ud ? to->ud.qpn : to->qp[IQ_RC]->qpn;
    }
}

/* A DLID for @to: its LID (path bits too), or one of another kind. */
static uint16_t in_dlid(FuzzIn *in, uint8_t mode, const IbNode *to)
{
    uint16_t lid = core_of(to)->ib.lid;

    switch (mode % 8) {
    case 1:
        return lid | (in_u8(in) & 7);
    case 2:
        return VHCA_IB_LID_PERMISSIVE;
    case 3:
        return VHCA_IB_LID_MCAST_FIRST | in_u8(in);
    case 4:
        return in_u16(in);
    case 5:
        return 0;
    case 6:
        return core_of(peer_of(to))->ib.lid;
    default:
        return lid;
    }
}

/* A SLID from @from: its LID (permissive while it has none), or not. */
static uint16_t in_slid(FuzzIn *in, uint8_t mode, const IbNode *from)
{
    uint16_t lid = core_of(from)->ib.lid;

    switch (mode % 4) {
    case 1:
        return 0;
    case 2:
        return VHCA_IB_LID_PERMISSIVE;
    case 3:
        return in_u16(in);
    default:
        return lid ? lid : VHCA_IB_LID_PERMISSIVE;
    }
}

/* The tables' P_Keys, the same partitions' other membership, invalid. */
static uint16_t in_pkey(FuzzIn *in)
{
    static const uint16_t pkeys[] = {
        0xffff, 0x7fff, UD_PKEY, 0x0001, LIMITED_PKEY, 0x8002, 0x0000,
        0x8000,
    };
    uint8_t mode = in_u8(in);

    return mode < 0xe0 ? pkeys[mode % G_N_ELEMENTS(pkeys)] : in_u16(in);
}

static uint32_t in_qkey(FuzzIn *in)
{
    switch (in_u8(in) % 4) {
    case 1:
        return VHCA_GSI_QKEY;
    case 2:
        return 0;
    case 3:
        return in_u32(in);
    default:
        return UD_QKEY;
    }
}

/* Payload lengths around the MTUs, or any up to PAYLOAD_MAX. */
static uint32_t in_plen(FuzzIn *in)
{
    static const uint16_t sizes[] = { 8, 0, 256, 1024, 4096, 4097, 3, 2048 };
    uint8_t mode = in_u8(in);

    return mode < 0xc0 ? sizes[mode % G_N_ELEMENTS(sizes)] :
           in_u16(in) % (PAYLOAD_MAX + 1);
}

/* An R_Key of @to, or any. */
static uint32_t in_rkey(FuzzIn *in, const IbNode *to)
{
    return in_u8(in) < 0xf0 ? to->n->key : in_u32(in);
}

/* The GRH: from @from's GID to @to's, the group's, @from's or any. */
static void in_grh(FuzzIn *in, uint8_t mode, const IbNode *from,
                   const IbNode *to, VhcaWirePacket *pkt)
{
    unsigned i;

    memcpy(pkt->net.sgid, from->n->gid, VHCA_GID_LEN);
    switch (mode % 4) {
    case 1:
        memcpy(pkt->net.dgid, mgid, VHCA_GID_LEN);
        break;
    case 2:
        memcpy(pkt->net.dgid, from->n->gid, VHCA_GID_LEN);
        break;
    case 3:
        for (i = 0; i < VHCA_GID_LEN; i++) {
            pkt->net.dgid[i] = in_u8(in);
        }
        break;
    default:
        memcpy(pkt->net.dgid, core_of(to)->gid_tbl[0].gid, VHCA_GID_LEN);
        break;
    }
    pkt->net.hop_limit = in_u8(in);
    pkt->net.traffic_class = in_u8(in);
    pkt->net.flow_label = in_u32(in) & 0xfffff;
}

/*
 * The packet's headers changed after the build, where the link layer
 * looks (IBTA 7.7: LVer, LNH, PktLen; 9.2: PadCnt), its length, and its
 * CRCs made valid again unless the input says not to.
 */
static size_t frame_damage(FuzzIn *in, uint8_t *frame, size_t len,
                           size_t bth)
{
    uint8_t post = in_u8(in);

    if (post & 1) {
        frame[bth + 1] = (frame[bth + 1] & ~0x30) | (in_u8(in) & 0x30);
    }
    if (post & 2) {
        uint16_t off = in_u16(in);

        frame[off % len] ^= in_u8(in) | 1;
    }
    if (post & 4) {
        frame[0] = (frame[0] & 0xf0) | (1 + in_u8(in) % 15);
    }
    if (post & 8) {
        frame[1] = (frame[1] & ~3) | (in_u8(in) & 3);
    }
    if (post & 0x10) {
        uint16_t pkt_len = in_u16(in) & 0x7ff;

        frame[4] = (frame[4] & ~7) | pkt_len >> 8;
        frame[5] = pkt_len;
    }
    if (post & 0x20) {
        len -= in_u16(in) % (len + 1);
    }
    if (post & 0x40) {
        uint8_t extra = in_u8(in) % 64;

        memset(frame + len, in_u8(in), extra);
        len += extra;
    }
    if (!(post & 0x80)) {
        ib_frame_fix_crcs(frame, len);
    }
    return len;
}

/* An IB packet from node sel & 1 to the other. */
static void op_frame(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in), opsel = in_u8(in), qpsel = in_u8(in);
    uint8_t lids = in_u8(in), vlsel = in_u8(in), flags = in_u8(in);
    IbNode *from = &f->node[sel & 1], *to = &f->node[!(sel & 1)];
    const VhcaWireOpcodeInfo *info;
    uint8_t frame[FRAME_MAX];
    VhcaWirePacket pkt;
    uint32_t plen;
    size_t len, bth;
    bool response, unknown;

    memset(&pkt, 0, sizeof(pkt));
    pkt.link = VHCA_WIRE_LINK_IB;
    pkt.tp.bth.opcode = opsel < 0xe0 ?
                        frame_opcodes[opsel % G_N_ELEMENTS(frame_opcodes)] :
                        in_u8(in);
    info = vhca_wire_opcode_info(pkt.tp.bth.opcode);
    response = info && (info->flags & VHCA_WIRE_OPF_RESPONSE);
    pkt.tp.bth.dest_qpn = in_dest_qpn(in, qpsel, to,
                                      (pkt.tp.bth.opcode &
                                       VHCA_IB_TRANSPORT_MASK) ==
                                      VHCA_IB_TRANSPORT_UD);
    /* VL15 for QP0's packets, VL0 for the others, or any VL. */
    pkt.lrh.vl = vlsel < 0xc0 ?
                 (pkt.tp.bth.dest_qpn == VHCA_SMI_QPN ? VHCA_IB_VL_SMP : 0) :
                 vlsel & 0xf;
    pkt.lrh.sl = vlsel >> 4;
    pkt.lrh.dlid = in_dlid(in, lids, to);
    pkt.lrh.slid = in_slid(in, lids >> 3, from);
    pkt.grh = lids & 0x20;
    if (pkt.grh) {
        in_grh(in, lids >> 6, from, to, &pkt);
    }
    pkt.tp.bth.solicited = flags & 1;
    pkt.tp.bth.ack_req = flags & 2;
    pkt.tp.bth.mig_req = flags & 4;
    pkt.tp.bth.fecn = flags & 8;
    pkt.tp.bth.becn = flags & 0x10;
    pkt.tp.bth.pkey = in_pkey(in);
    pkt.tp.bth.psn = fuzz_in_psn(in, core_of(to), to->qp[IQ_RC]->qpn,
                                 response);
    pkt.tp.deth.qkey = qpsel & 0x08 ? in_qkey(in) : UD_QKEY;
    pkt.tp.deth.src_qpn = qpsel & 0x10 ? in_u32(in) & VHCA_IB_QPN_MASK :
                          from->ud.qpn;
    pkt.tp.reth.va = to->n->buf + RDMA_OFF + in_u16(in) % MSG_MAX;
    pkt.tp.reth.rkey = in_rkey(in, to);
    pkt.tp.atomic.va = (to->n->buf + RDMA_OFF + in_u16(in) % MSG_MAX) & ~7ull;
    pkt.tp.atomic.rkey = in_rkey(in, to);
    pkt.tp.atomic.swap_add = in_u64(in);
    pkt.tp.atomic.compare = in_u64(in);
    pkt.tp.aeth.syndrome = in_u8(in);
    pkt.tp.aeth.msn = in_u32(in) & VHCA_IB_QPN_MASK;
    pkt.tp.imm_data = in_u32(in);
    pkt.tp.inv_rkey = in_rkey(in, to);
    plen = in_plen(in);
    pkt.tp.reth.dma_len = flags & 0x20 ? in_u32(in) : plen;
    len = fuzz_build_packet(&pkt, plen, sel, VHCA_IB_OPCODE(UD, SEND_ONLY),
                            frame, sizeof(frame), &unknown);
    bth = VHCA_IB_LRH_LEN + (pkt.grh ? VHCA_IB_GRH_LEN : 0);
    if (unknown) {
        frame[bth] = pkt.tp.bth.opcode;
        ib_frame_fix_crcs(frame, len);
    }
    if (flags & 0x40) {
        len = frame_damage(in, frame, len, bth);
    }
    send_to(to, frame, len);
    run_pair(f);
}

/* A datagram of the input's bytes, its CRCs made right or not. */
static void op_raw(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    IbNode *to = &f->node[sel & 1];
    uint8_t frame[FRAME_MAX];
    size_t len = sel & 2 ? in_u16(in) % (FRAME_MAX + 1) : in_u8(in);
    size_t i;

    for (i = 0; i < len; i++) {
        frame[i] = in_u8(in);
    }
    if (sel & 4) {
        ib_frame_fix_crcs(frame, len);
    }
    send_to(to, frame, len);
    run_pair(f);
}

/* ---------------------------------------------------------------------- */
/* Management: MAD_IFC, MODIFY_PORT, the SM                               */
/* ---------------------------------------------------------------------- */

/*
 * MAD_IFC of @mbox (out_mad filled with OUT_MAD_FILL) written at guest
 * address @addr if that is RAM, the command naming @addr and @len bytes.
 * Checks the status against what the mailbox calls for, and the result
 * and out_mad (read back into mbox->out_mad) against the request.
 * Returns the result bits, 0 if the command failed.
 */
static uint8_t mad_ifc(IbNode *fn, struct vhca_mad_ifc *mbox, uint64_t addr,
                       uint32_t len)
{
    Harness *h = fn->n->h;
    struct vhca_cmd_dma_in cmd = {
        .addr = GUINT64_TO_LE(addr),
        .len = GUINT32_TO_LE(len),
    };
    bool in_ram = fuzz_ram_range(addr, MBOX_LEN);
    const uint8_t *req = mbox->in_mad, *out = mbox->out_mad;
    uint8_t want = VHCA_ST_OK, st, result, out_cmd[16];
    unsigned i;

    memset(mbox->out_mad, OUT_MAD_FILL, VHCA_MAD_SIZE);
    if (in_ram) {
        ram_write(h, addr, mbox, MBOX_LEN);
    }
    if (len < MBOX_LEN || !in_ram) {
        want = VHCA_ST_BAD_ADDR;
    } else if (mbox->port != 1 ||
               (mbox->flags & ~(VHCA_MAD_IFC_LOCAL |
                                VHCA_MAD_IFC_IGNORE_MKEY))) {
        want = VHCA_ST_BAD_PARAM;
    }
    st = admin_cmd(h, VHCA_CMD_MAD_IFC, 0x534d, &cmd, sizeof(cmd), out_cmd);
    if (st != want) {
        g_error("node %c: MAD_IFC at 0x%" G_GINT64_MODIFIER "x, %u bytes, "
                "port %u, flags 0x%x: status %u, not %u", node_name(fn),
                addr, len, mbox->port, mbox->flags, st, want);
    }
    if (st != VHCA_ST_OK) {
        return 0;
    }
    result = out_cmd[0];
    ram_read(h, addr + offsetof(struct vhca_mad_ifc, out_mad), mbox->out_mad,
             VHCA_MAD_SIZE);
    if (result & ~(VHCA_MAD_RESULT_REPLY | VHCA_MAD_RESULT_CONSUMED)) {
        g_error("node %c: MAD_IFC result 0x%x", node_name(fn), result);
    }
    if (!(result & VHCA_MAD_RESULT_REPLY)) {
        for (i = 0; i < VHCA_MAD_SIZE; i++) {
            if (out[i] != OUT_MAD_FILL) {
                g_error("node %c: out_mad written (byte %u) without a "
                        "reply", node_name(fn), i);
            }
        }
        return result;
    }
    /* 13.4.5: a response; 14.2.1.2: on a directed route, D set. */
    if (!(out[VHCA_MAD_METHOD] & VHCA_MAD_METHOD_RESP) ||
        memcmp(out + VHCA_MAD_TID, req + VHCA_MAD_TID, 8) ||
        out[VHCA_MAD_MGMT_CLASS] != req[VHCA_MAD_MGMT_CLASS] ||
        (req[VHCA_MAD_MGMT_CLASS] == VHCA_MGMT_CLASS_SUBN_DR &&
         !(vhca_ld_be16(out + VHCA_MAD_STATUS) & VHCA_SMP_DIRECTION))) {
        g_error("node %c: the reply to class 0x%x method 0x%x attribute "
                "0x%x has method 0x%x, status 0x%x, class 0x%x",
                node_name(fn), req[VHCA_MAD_MGMT_CLASS],
                req[VHCA_MAD_METHOD], vhca_ld_be16(req + VHCA_MAD_ATTR_ID),
                out[VHCA_MAD_METHOD], vhca_ld_be16(out + VHCA_MAD_STATUS),
                out[VHCA_MAD_MGMT_CLASS]);
    }
    return result;
}

/* A MAD's header, as the kernel's MAD layer hands it over (LOCAL). */
static void mad_header(IbNode *fn, struct vhca_mad_ifc *mbox, uint8_t cls,
                       uint8_t method, uint16_t attr, uint32_t mod)
{
    uint8_t *mad = mbox->in_mad;

    memset(mbox, 0, sizeof(*mbox));
    mbox->port = 1;
    mbox->flags = VHCA_MAD_IFC_LOCAL;
    mad[VHCA_MAD_BASE_VERSION] = VHCA_MAD_BASE_VERSION_IB;
    mad[VHCA_MAD_MGMT_CLASS] = cls;
    mad[VHCA_MAD_CLASS_VERSION] = 1;
    mad[VHCA_MAD_METHOD] = method;
    vhca_st_be64(mad + VHCA_MAD_TID, ++fn->tid);
    vhca_st_be16(mad + VHCA_MAD_ATTR_ID, attr);
    vhca_st_be32(mad + VHCA_MAD_ATTR_MOD, mod);
    if (cls == VHCA_MGMT_CLASS_SUBN_DR) {
        vhca_st_be16(mad + VHCA_SMP_DR_SLID, VHCA_IB_LID_PERMISSIVE);
        vhca_st_be16(mad + VHCA_SMP_DR_SLID + 2, VHCA_IB_LID_PERMISSIVE);
    }
}

/* The SM's Set of SMP attribute @attr with its M_Key: the result. */
static uint8_t sm_set(IbNode *fn, uint16_t attr, uint32_t mod,
                      const uint8_t *data)
{
    struct vhca_mad_ifc mbox;

    mad_header(fn, &mbox, VHCA_MGMT_CLASS_SUBN_LID, VHCA_MAD_METHOD_SET,
               attr, mod);
    vhca_st_be64(mbox.in_mad + VHCA_SMP_MKEY, core_of(fn)->ib.mkey);
    memcpy(mbox.in_mad + VHCA_SMP_DATA, data, VHCA_SMP_DATA_LEN);
    return mad_ifc(fn, &mbox, fn->mbox, MBOX_LEN);
}

static const uint8_t mad_classes[] = {
    VHCA_MGMT_CLASS_SUBN_LID, VHCA_MGMT_CLASS_SUBN_DR, VHCA_MGMT_CLASS_PERF,
};

static const uint8_t mad_methods[] = {
    VHCA_MAD_METHOD_GET, VHCA_MAD_METHOD_SET, VHCA_MAD_METHOD_TRAP_REPRESS,
    VHCA_MAD_METHOD_TRAP, VHCA_MAD_METHOD_GET_RESP,
    VHCA_MAD_METHOD_RESP | VHCA_MAD_METHOD_SET,
};

static const uint16_t mad_attrs[] = {
    VHCA_SMP_ATTR_NODE_DESC, VHCA_SMP_ATTR_NODE_INFO,
    VHCA_SMP_ATTR_GUID_INFO, VHCA_SMP_ATTR_PORT_INFO,
    VHCA_SMP_ATTR_PKEY_TABLE, VHCA_SMP_ATTR_SL2VL_TABLE,
    VHCA_SMP_ATTR_VL_ARB_TABLE, VHCA_SMP_ATTR_SM_INFO, VHCA_SMP_ATTR_NOTICE,
    VHCA_PMA_ATTR_CLASS_PORT_INFO, VHCA_PMA_ATTR_PORT_COUNTERS,
    VHCA_PMA_ATTR_PORT_COUNTERS_EXT,
};

/* Where the mailbox is: its pages, the end of RAM, outside RAM. */
static uint64_t in_mbox_addr(FuzzIn *in, const IbNode *fn)
{
    uint64_t addr;

    switch (in_u8(in) % 4) {
    case 1:
        return RAM_BASE + RAM_SIZE - in_u16(in) % 1024;
    case 2:
        addr = in_u64(in);
        /* Outside RAM: the mailbox would overwrite the rings. */
        return fuzz_ram_range(addr, 1) ||
               fuzz_ram_range(addr + MBOX_LEN - 1, 1) ?
               addr | 1ull << 63 : addr;
    case 3:
        return in_u8(in) & 1 ? 0 : BAD_ADDR;
    default:
        return fn->mbox + in_u16(in) % ((MBOX_PAGES - 1) * 4096);
    }
}

/*
 * MAD_IFC with a MAD of the input's: sel & 1 the node, (sel >> 1) & 3
 * the class, (sel >> 3) & 3 the M_Key, (sel >> 5) & 3 the flags; how
 * says which other fields the input gives.
 */
static void op_mad(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in), how = in_u8(in), msel = in_u8(in);
    uint8_t asel = in_u8(in);
    IbNode *fn = &f->node[sel & 1];
    uint64_t mkey = core_of(fn)->ib.mkey, addr = fn->mbox;
    struct vhca_mad_ifc mbox;
    uint8_t *mad = mbox.in_mad;
    uint8_t cls = (sel >> 1) & 3, method;
    uint32_t len = MBOX_LEN, mod;
    uint16_t attr;
    unsigned i, n;

    /* The fields in the order the input gives them. */
    cls = cls < G_N_ELEMENTS(mad_classes) ? mad_classes[cls] : in_u8(in);
    method = msel < 0xe0 ? mad_methods[msel % G_N_ELEMENTS(mad_methods)] :
             in_u8(in);
    attr = asel < 0xf0 ? mad_attrs[asel % G_N_ELEMENTS(mad_attrs)] :
           in_u16(in);
    mod = how & 0x02 ? in_u32(in) : in_u8(in) % 4;
    mad_header(fn, &mbox, cls, method, attr, mod);
    if (how & 0x01) {
        mad[VHCA_MAD_BASE_VERSION] = in_u8(in);
        mad[VHCA_MAD_CLASS_VERSION] = in_u8(in);
    }
    /* The data: the attribute as it is, some bytes changed; or any. */
    if (how & 0x08) {
        struct vhca_mad_ifc get;

        mad_header(fn, &get, cls, VHCA_MAD_METHOD_GET,
                   vhca_ld_be16(mad + VHCA_MAD_ATTR_ID),
                   vhca_ld_be32(mad + VHCA_MAD_ATTR_MOD));
        get.flags |= VHCA_MAD_IFC_IGNORE_MKEY;
        if (mad_ifc(fn, &get, fn->mbox, MBOX_LEN) & VHCA_MAD_RESULT_REPLY) {
            memcpy(mad + VHCA_SMP_DATA, get.out_mad + VHCA_SMP_DATA,
                   VHCA_PMA_DATA_LEN);
        }
        for (n = in_u8(in) % 8; n; n--) {
            i = in_u8(in) % (cls == VHCA_MGMT_CLASS_PERF ? VHCA_PMA_DATA_LEN :
                             VHCA_SMP_DATA_LEN);
            mad[VHCA_SMP_DATA + i] = in_u8(in);
        }
    } else {
        n = in_u8(in) % (VHCA_PMA_DATA_LEN + 1);
        for (i = 0; i < n; i++) {
            mad[VHCA_SMP_DATA + i] = in_u8(in);
        }
    }
    /* 14.2.1.2: the directed route's hops and LIDs. */
    if (how & 0x04) {
        mad[VHCA_MAD_HOP_PTR] = in_u8(in);
        mad[VHCA_MAD_HOP_CNT] = in_u8(in);
        vhca_st_be16(mad + VHCA_SMP_DR_SLID, in_u16(in));
        vhca_st_be16(mad + VHCA_SMP_DR_SLID + 2, in_u16(in));
    }
    switch ((sel >> 3) & 3) {
    case 1:
        vhca_st_be64(mad + VHCA_SMP_MKEY, mkey);
        break;
    case 2:
        vhca_st_be64(mad + VHCA_SMP_MKEY, in_u64(in));
        break;
    case 3:
        vhca_st_be64(mad + VHCA_SMP_MKEY, mkey ^ 1ull << (in_u8(in) % 64));
        break;
    default:
        break;
    }
    switch ((sel >> 5) & 3) {
    case 1:
        mbox.flags |= VHCA_MAD_IFC_IGNORE_MKEY;
        break;
    case 2:
        /* From the wire: the work completion's fields. */
        mbox.flags = 0;
        mbox.sl = in_u8(in);
        mbox.slid = GUINT16_TO_LE(in_u16(in));
        mbox.pkey_index = GUINT16_TO_LE(in_u8(in));
        mbox.src_qp = GUINT32_TO_LE(in_u8(in) & 1);
        break;
    case 3:
        mbox.flags = in_u8(in);
        break;
    default:
        break;
    }
    if (how & 0x10) {
        mbox.port = in_u8(in);
    }
    if (how & 0x20) {
        addr = in_mbox_addr(in, fn);
    }
    if (how & 0x40) {
        len = in_u16(in) % 1024;
    }
    mad_ifc(fn, &mbox, addr, len);
    run_pair(f);
}

/* MODIFY_PORT: the status is BAD_PARAM exactly when it must be. */
static void op_modify_port(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    IbNode *fn = &f->node[sel & 1];
    struct vhca_cmd_modify_port_in c;
    uint8_t want = VHCA_ST_OK, st;
    uint32_t set, clr;

    memset(&c, 0, sizeof(c));
    c.port = sel & 2 ? in_u8(in) : 1;
    c.flags = sel & 4 ? in_u8(in) :
              sel & 8 ? VHCA_MODIFY_PORT_RESET_QKEY_CNTR : 0;
    set = in_u32(in);
    clr = in_u32(in);
    if (!(sel & 0x10)) {
        set &= VHCA_PORT_CAP_MODIFIABLE;
        clr &= VHCA_PORT_CAP_MODIFIABLE;
    }
    c.set_cap_mask = GUINT32_TO_LE(set);
    c.clr_cap_mask = GUINT32_TO_LE(clr);
    if (c.port != 1 || (c.flags & ~VHCA_MODIFY_PORT_RESET_QKEY_CNTR) ||
        ((set | clr) & ~VHCA_PORT_CAP_MODIFIABLE)) {
        want = VHCA_ST_BAD_PARAM;
    }
    st = admin_cmd(fn->n->h, VHCA_CMD_MODIFY_PORT, 0x4d50, &c, sizeof(c),
                   NULL);
    if (st != want) {
        g_error("node %c: MODIFY_PORT port %u flags 0x%x set 0x%x clear "
                "0x%x: status %u, not %u", node_name(fn), c.port, c.flags,
                set, clr, st, want);
    }
    run_pair(f);
}

/*
 * The RC pair again from RESET, connected by the LIDs the ports have
 * now, from PSNs of the input's; its receive queues stocked.
 */
static void rc_reconnect(IbFuzz *f, FuzzIn *in)
{
    uint32_t psn[2];
    unsigned i;

    psn[0] = in_u32(in) & VHCA_IB_QPN_MASK;
    psn[1] = in_u32(in) & VHCA_IB_QPN_MASK;
    for (i = 0; i < 2; i++) {
        IbNode *fn = &f->node[i];

        /* What completed before the reset is counted against the WQEs. */
        poll_node(fn);
        qp_reset(fn->n->h, fn->qp[IQ_RC]->qpn, fn->qp[IQ_RC]);
        fn->sq_busy[IQ_RC] = fn->rq_busy[IQ_RC] = 0;
    }
    for (i = 0; i < 2; i++) {
        IbNode *fn = &f->node[i], *peer = peer_of(fn);

        qp_try_connect_lid(fn->n->h, fn->qp[IQ_RC]->qpn,
                           core_of(peer)->ib.lid, peer->qp[IQ_RC]->qpn,
                           &default_opts, psn[i], psn[!i]);
        fill_rq(fn, IQ_RC);
    }
}

/*
 * The SM brings the port back as it sweeps (IBTA 14.4): PortInfo Sets
 * with the port's LID and the master SM's, PortPhysicalState Polling
 * for a disabled link, then PortState ARMED and ACTIVE, the P_Key table,
 * each with the port's M_Key as the SM that set it would have.  None
 * needs to succeed (the cable may be out, the state wrong); the MAD_IFC
 * commands themselves must.
 */
static void op_sm(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    IbNode *fn = &f->node[sel & 1];
    uint8_t pi[VHCA_SMP_DATA_LEN], pkeys[VHCA_SMP_DATA_LEN];

    if (sel & 2) {
        vhca_core_set_link(&fn->n->h->core, true);
    }
    memset(pi, 0, sizeof(pi));
    vhca_st_be64(pi + VHCA_PI_MKEY, core_of(fn)->ib.mkey);
    vhca_mad_set(pi, VHCA_PI_LID, sel & 4 ? in_u16(in) : fn->lid);
    vhca_mad_set(pi, VHCA_PI_MASTER_SM_LID, SM_LID);
    vhca_mad_set(pi, VHCA_PI_NEIGHBOR_MTU, VHCA_IB_MTU_4096);
    vhca_mad_set(pi, VHCA_PI_OPERATIONAL_VLS, 1);
    vhca_mad_set(pi, VHCA_PI_PHYS_STATE, VHCA_PORT_PHYS_POLLING);
    sm_set(fn, VHCA_SMP_ATTR_PORT_INFO, 1, pi);
    vhca_mad_set(pi, VHCA_PI_PHYS_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED);
    sm_set(fn, VHCA_SMP_ATTR_PORT_INFO, 1, pi);
    if (sel & 8) {
        vhca_mad_set(pi, VHCA_PI_PORT_STATE, VHCA_PORT_ACTIVE);
        sm_set(fn, VHCA_SMP_ATTR_PORT_INFO, 1, pi);
    }
    if (sel & 0x10) {
        memset(pkeys, 0, sizeof(pkeys));
        vhca_st_be16(pkeys, 0xffff);
        vhca_st_be16(pkeys + 2 * UD_PKEY_INDEX, UD_PKEY);
        if (fn == &f->node[1]) {
            vhca_st_be16(pkeys + 4, LIMITED_PKEY);
        }
        sm_set(fn, VHCA_SMP_ATTR_PKEY_TABLE, 0, pkeys);
    }
    if (sel & 0x20) {
        rc_reconnect(f, in);
    }
    run_pair(f);
}

/* The cable out or in (or both), or a device reset as a driver's. */
static void op_link(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    IbNode *fn = &f->node[sel & 1];
    Harness *h = fn->n->h;

    switch ((sel >> 1) & 3) {
    case 0:
        vhca_core_set_link(&h->core, false);
        break;
    case 1:
        vhca_core_set_link(&h->core, true);
        break;
    case 2:
        vhca_core_set_link(&h->core, false);
        run_pair(f);
        vhca_core_set_link(&h->core, true);
        break;
    default:
        /* Every object is gone, the counters cleared. */
        fn->old_traps += h->core.counters[VHCA_CNT_SMA_TRAPS];
        reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_RESET);
        harness_enable(h);
        break;
    }
    run_pair(f);
}

/* ---------------------------------------------------------------------- */
/* Traffic                                                                */
/* ---------------------------------------------------------------------- */

/* A UD address vector from @fn: by the peer's LID, ours, or another. */
static void in_av(FuzzIn *in, IbNode *fn, struct vhca_send_wqe *w)
{
    uint8_t mode = in_u8(in), kind = (mode & 7) % 5;
    uint16_t dlid;

    switch (kind) {
    case 1:
        dlid = core_of(fn)->ib.lid;
        break;
    case 2:
        dlid = VHCA_IB_LID_PERMISSIVE;
        break;
    case 3:
        dlid = VHCA_IB_LID_MCAST_FIRST | 1;
        break;
    case 4:
        dlid = in_u16(in);
        break;
    default:
        dlid = core_of(peer_of(fn))->ib.lid;
        break;
    }
    w->av.dlid = GUINT16_TO_LE(dlid);
    w->av.sl = in_u8(in) & 0xf;
    w->av.src_path_bits = mode >> 5;
    if (kind == 3 || (mode & 0x10)) {
        w->av.ah_flags = VHCA_AH_GRH;
        memcpy(w->av.dgid, kind == 3 ? mgid : peer_of(fn)->n->gid, 16);
        w->av.hop_limit = 64;
    }
}

static void op_traffic(IbFuzz *f, FuzzIn *in)
{
    static const uint8_t rc_ops[] = {
        VHCA_WR_SEND, VHCA_WR_SEND_WITH_IMM, VHCA_WR_RDMA_WRITE,
        VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WR_RDMA_READ,
    };
    uint8_t sel = in_u8(in);
    IbNode *fn = &f->node[sel & 1], *peer = peer_of(fn);
    struct vhca_send_wqe w;
    uint32_t len;
    unsigned q;

    /* The peer's receive queues stocked again first. */
    if (sel & 0x80) {
        for (q = 0; q < IQ__N; q++) {
            fill_rq(peer, q);
        }
    }
    switch (((sel >> 1) & 7) % 5) {
    case 0:
    case 1:
        /* Up to what a receive WQE holds, or past it. */
        wqe_init(&w, ++fn->wr_id, rc_ops[in_u8(in) % G_N_ELEMENTS(rc_ops)],
                 VHCA_WQE_SIGNALED | (sel & 0x20 ? VHCA_WQE_SOLICITED : 0));
        wqe_remote(&w, peer->n->buf + RDMA_OFF, peer->n->key);
        w.imm_or_inv = in_u32(in);
        len = in_u16(in) % ((sel & 0x40 ? MSG_MAX : RECV_LEN) + 1);
        q = IQ_RC;
        break;
    case 2: {
        /* UD: to the peer's UD QP, QP1, QP0, our own, a group, any. */
        const uint32_t dests[] = {
            peer->ud.qpn, VHCA_GSI_QPN, VHCA_SMI_QPN, fn->ud.qpn,
            VHCA_MCAST_QPN,
        };
        uint8_t dsel = in_u8(in);
        static const uint32_t qkeys[] = {
            UD_QKEY, VHCA_GSI_QKEY, VHCA_QKEY_CONTROLLED,
        };
        uint8_t ksel = in_u8(in);

        wqe_init(&w, ++fn->wr_id, sel & 0x20 ? VHCA_WR_SEND_WITH_IMM :
                 VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        w.dest_qpn = GUINT32_TO_LE(dsel < 0xf0 ?
                                   dests[dsel % G_N_ELEMENTS(dests)] :
                                   in_u32(in) & VHCA_IB_QPN_MASK);
        w.qkey = GUINT32_TO_LE(ksel < 0xf0 ?
                               qkeys[ksel % G_N_ELEMENTS(qkeys)] :
                               in_u32(in));
        in_av(in, fn, &w);
        len = in_u16(in) % (PAYLOAD_MAX + 1);
        q = IQ_UD;
        break;
    }
    case 3:
        /* An SMP (any 256 bytes) to QP0, by LID or the permissive LID. */
        wqe_init(&w, ++fn->wr_id, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        w.dest_qpn = GUINT32_TO_LE(VHCA_SMI_QPN);
        in_av(in, fn, &w);
        len = sel & 0x20 ? in_u16(in) % 1024 : VHCA_MAD_SIZE;
        q = IQ_SMI;
        break;
    default:
        /* A MAD to QP1, in any partition of the table. */
        wqe_init(&w, ++fn->wr_id, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        w.dest_qpn = GUINT32_TO_LE(VHCA_GSI_QPN);
        w.qkey = GUINT32_TO_LE(VHCA_GSI_QKEY);
        w.pkey_index = GUINT32_TO_LE(in_u8(in) % 4);
        in_av(in, fn, &w);
        len = VHCA_MAD_SIZE;
        q = IQ_GSI;
        break;
    }
    if (len) {
        wqe_sge(&w, fn->n->buf + SEND_OFF, len, fn->n->key);
    }
    send_wqe(fn, q, &w);
    run_pair(f);
}

/* Receive WQEs on a QP: up to 16, too short or with a bad key perhaps. */
static void op_recv(IbFuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    IbNode *fn = &f->node[sel & 1];
    unsigned q = (sel >> 1) & 3, n = 1 + ((sel >> 3) & 15);
    uint32_t len = sel & 0x80 ? in_u16(in) % 512 : RECV_LEN;
    uint32_t lkey = in_u8(in) < 0xf0 ? fn->n->key : in_u32(in);

    while (n-- && recv_wqe(fn, q, len, lkey)) {
        /* next */
    }
    ring_rq(fn, q);
    run_pair(f);
}

static void op_time(IbFuzz *f, FuzzIn *in)
{
    /* Up to about 70 s, on a logarithmic scale. */
    uint8_t e = in_u8(in) % 37;
    uint64_t ns = (1ull << e) + in_u16(in);
    uint64_t start = f->p.a.h->now_ns, passed;

    settle(f, ns, 16);
    /* The rest passes too: the M_Key lease runs on no timer. */
    passed = f->p.a.h->now_ns - start;
    if (passed < ns) {
        harness_advance(f->p.a.h, ns - passed);
        harness_advance(f->p.b.h, ns - passed);
        run_pair(f);
    }
}

/* Time passing, or the async events drained as the driver's handler. */
static void op_misc(IbFuzz *f, FuzzIn *in)
{
    if (in_u8(in) & 1) {
        op_time(f, in);
    } else {
        aeq_drain(f->p.a.h);
        aeq_drain(f->p.b.h);
    }
}

/* The operations, by the opcode byte (modulo their number). */
typedef void (*IbOp)(IbFuzz *f, FuzzIn *in);

static const IbOp ib_ops[] = {
    op_frame, op_frame, op_raw, op_mad, op_modify_port, op_link, op_sm,
    op_traffic, op_recv, op_misc,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    IbFuzz f;
    unsigned steps;

    fuzz_catch_traps();
    verbose = fuzz_verbose();
    memset(&f, 0, sizeof(f));
    fz = &f;
    world_init(&f);
    for (steps = 0; in.left && steps < 256; steps++) {
        ib_ops[in_u8(&in) % G_N_ELEMENTS(ib_ops)](&f, &in);
    }
    /* Let every timer run out, then everything is torn down. */
    settle(&f, SETTLE_NS, 64);
    if (verbose) {
        fuzz_print_counters(f.p.a.h, f.p.b.h);
    }
    pair_free(&f.p);
    fz = NULL;
    return 0;
}
