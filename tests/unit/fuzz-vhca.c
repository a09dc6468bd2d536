/*
 * Structure-aware fuzz target for the vhca engine.
 *
 * Two engines back to back (tests/unit/vhca-harness.c, vhca-node.c), each
 * with a connected RC, UC and UD QP and a UD QP that receives from an SRQ,
 * an IPv4 and an IPv6 GID, five MRs (one with every access, one with local
 * access only, one in another PD, two through level 1 and level 2 page
 * lists) and posted receive WQEs; an XRC initiator towards the other
 * engine's XRC target, which serves four XRC SRQs (two in the node's PD,
 * one in the other PD, one of another XRC domain); a type 1 and a type 2B
 * memory window and an MR with MW_BIND for them, and a fast-register MR;
 * and a second RC pair in a PD of its own that only well-formed messages
 * use.  The input is then read as a list of operations, each an opcode
 * byte and its fields (past its end every field reads as zero):
 *
 *   - a frame from the wire, built from a template (any RC/UC/UD opcode,
 *     or a raw one) with the input's PSN, QPN, P_Key, lengths, R_Key, VA,
 *     AETH, atomics, DETH, PadCnt, VLAN, multicast group and truncation,
 *     and a recomputed valid ICRC and IP checksum, so that it reaches the
 *     responder and the completer;
 *   - a send or receive WQE with mutated fields and SG list in a guest
 *     ring (for the SRQ's QP: the SRQ's ring), and its doorbell (with a
 *     mutated producer index or QPN), then for the SRQ MODIFY_SRQ (limit,
 *     resize), QUERY_SRQ or DESTROY_SRQ;
 *   - a well-formed message on a QP, and a mode for the wire between the
 *     engines: drop, duplicate, reorder, or damage the next frames in
 *     flight (again with a valid ICRC);
 *   - an admin command with mutated fields (MODIFY_QP, QUERY_QP, CREATE_MR,
 *     DESTROY_*, ATTACH/DETACH_MCAST, any opcode with a raw mailbox or a
 *     raw command entry);
 *   - Ethernet frames to send, receive buffers, register accesses, a
 *     device reset; BAR2 and CQ doorbells; time passing, which fires the
 *     transport timers; polling the CQs;
 *   - XRC: a WQE on the initiator (any opcode, up to 16 KiB, naming one of
 *     the target's SRQs, a basic SRQ, another domain's or any number), an
 *     XRC frame from the wire, receive WQEs and commands on the XRC SRQs
 *     (DESTROY_SRQ mid-message, and again CREATE_SRQ), the pair brought
 *     up again or moved to ERR, mutated MODIFY_QP;
 *   - windows and the fast-register MR: BIND_MW (type 1 and 2B, every
 *     field mutated or not), REG_MR, LOCAL_INV, DEALLOC_MW and ALLOC_MW
 *     again, and from the other engine RDMA and atomics through their
 *     keys (live, invalidated, mutated) over RC or XRC, and SEND with
 *     Invalidate naming them;
 *   - up to four well-formed messages of up to 16 KiB (WRITE, WRITE with
 *     immediate, SEND, SEND with immediate, READ) pipelined on the second
 *     RC pair, at any path MTU and starting PSN (the pair is brought up
 *     again), with frames dropped, duplicated or reordered on the way.
 *
 * After each operation both engines run to idle and the invariants are
 * checked: every guest error has its typed event, the drop counters add
 * up, CQEs name our QPs with a status the device defines (an XRC SRQ's
 * receive completions name the target, the initiator's send completions
 * the initiator), no DMA leaves guest RAM unless the input gave the
 * device an address outside it, and the device writes the data buffers
 * only through live MRs that allow writing.  A window or fast-register
 * key seen invalidated, unbound or replaced grants nothing, and RDMA
 * through it never succeeds (while no frame of the input's could have
 * acknowledged it, or made it a duplicate).  While nothing else can
 * reach the second RC pair, every message on it completes once,
 * successfully, with its data in place, whatever the wire did.  The
 * harness's own assertions (frame sizes, interrupt vectors, admin queue
 * progress) hold throughout.  With AddressSanitizer and UBSan any memory
 * error, leak or undefined behaviour in the engine is a crash.
 *
 * Built two ways from this file: with clang's libFuzzer
 * (-fsanitize=fuzzer, scripts/fuzz-engine.sh), and with any compiler and
 * fuzz-driver.c, which replays a corpus and runs a seeded mutator (the
 * test command's bounded run).  See docs/developer-guide.rst, "Fuzzing".
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "fuzz-common.h"
#include "fuzz-target.h"
#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-wire.h"

/* ---------------------------------------------------------------------- */
/* The world                                                              */
/* ---------------------------------------------------------------------- */

/* FQ_SRQ: a UD QP whose receive WQEs come from the node's SRQ. */
enum { FQ_RC, FQ_UC, FQ_UD, FQ_SRQ, FQ__N };

/* The SRQ's two rings (MAX_WR moves it from one to the other). */
#define SRQ_RING_PAGES  2
#define SRQ_MAX_LOG     6           /* 64 WQEs: 8 KiB */

static bool fq_ud(unsigned q)
{
    return q == FQ_UD || q == FQ_SRQ;
}

#define UD_QKEY         0x11110000u
#define RWQE_SIZE       0x1000u
#define RWQES           8
#define WIRE_FRAMES     4           /* a wire mode lasts this many frames */
/* The device's MR table (MRs and windows), twice the harness default. */
#define MAX_KEYS        16
/* The MRs through page lists: where their IOVAs start. */
#define PAGED_IOVA      0x7f0000001080ull
#define PAGED_PAGES     16
#define L2_IOVA         0x600000000000ull
#define L2_PAGES        8

/*
 * A second data buffer per node, XBUF_PAGES: the long pair's message
 * slots (its own MR, in its own PD), the MR windows are bound in, and
 * the pages REG_MR gives the fast-register MR.
 */
#define XBUF_PAGES      32
#define LONG_SLOT       0x4000      /* one message, up to 16 KiB */
#define LONG_SLOTS      4
#define LONG_LEN        (LONG_SLOTS * LONG_SLOT)
#define MW_OFF          LONG_LEN
#define MW_LEN          0x8000
#define FR_OFF          (MW_OFF + MW_LEN)
#define FR_PAGES        8
#define FR_IOVA         0x5000000000ull
/*
 * XRC receive buffers in the node's buffer: two of XRC_RECV_LEN per SRQ
 * (from page 48 for the node's PD, from page 16 in the other PD's MR).
 */
#define XRC_RECV_LEN    0x4000
#define XSRQ_N          4           /* PD, PD, other PD, other domain */
#define XRC_MSG_MAX     (4 * 4096)  /* XRC messages: up to 16 KiB */

typedef struct FuzzQp {
    TestQp *qp;
    TestCq *scq, *rcq;
    uint32_t qpn;                   /* as created; the QP may be gone */
} FuzzQp;

/* Where an MR's bytes are in guest RAM, and whether the device may write. */
typedef struct ShadowMr {
    uint32_t key;
    uint64_t start, end;            /* guest physical [start, end) */
    bool writable;                  /* LOCAL_WRITE, REMOTE_WRITE or ATOMIC */
    bool live;
} ShadowMr;

#define MAX_SHADOW      32

/* An SRQ as the driver sees it: its ring now and the spare one. */
typedef struct FuzzSrq {
    uint32_t srqn;
    uint64_t ring[2], pbl[2];
    unsigned cur;
    uint8_t log;
    uint32_t pi;
    /* XRC: how CREATE_SRQ made it (to make it again), its buffers. */
    uint32_t pdn, xrcdn, cqn;
    uint64_t ci_addr;
    uint64_t rbuf;                  /* two of XRC_RECV_LEN */
    uint32_t lkey;
} FuzzSrq;

/*
 * A window or the fast-register MR as the node's own WQEs and the
 * completions seen so far left it: the key it answers to, and one it no
 * longer answers to (invalidated, unbound, or replaced by a bind or a
 * registration under another tag), which must grant nothing.  While a
 * WQE of ours that changes it has not completed, or once the input did
 * something the model does not follow (KeyModels.off), nothing is
 * checked.
 */
enum { KM_MW1, KM_MW2, KM_FR, KM__N };

typedef struct KeyModel {
    uint32_t key;                   /* 0: gone */
    uint32_t dead;                  /* 0: none known */
    unsigned kidx;                  /* its slot in FuzzNode.keys */
    uint8_t type;                   /* VHCA_MW_TYPE_*, 0: the MR */
    uint64_t va;                    /* where it was last bound */
    bool zero_based;
    uint64_t wr_id;                 /* our WQE changing it, or 0 */
    uint8_t wr_op;                  /* its opcode */
    uint32_t wr_key;                /* the key it names or gives */
    uint64_t wr_va;                 /* BIND_MW: where, how */
    bool wr_zero_based, wr_unbind;
    unsigned epoch;                 /* moves at each change */
} KeyModel;

/* An RDMA of ours through a key known dead: it must not succeed. */
typedef struct DeadAccess {
    uint64_t wr_id;
    unsigned km;                    /* the owner's KeyModel */
    unsigned epoch;                 /* as it was at the post */
    bool xrc;                       /* over XRC, else the RC pair */
    uint32_t key;
} DeadAccess;

typedef struct FuzzNode {
    Node n;
    /*
     * The device writes the node's data buffer only through a live MR
     * that allows writes; unknown once the input made MRs or rings whose
     * pages the target does not follow (raw commands, page lists).
     */
    ShadowMr shadow[MAX_SHADOW];
    unsigned nshadow;
    bool shadow_unknown;
    uint8_t gid6[16];               /* an IPv6 GID at index 1 */
    TestQp uc, ud, srq_qp;
    TestCq uc_cq, ud_cq;
    FuzzSrq srq;                    /* the basic SRQ of srq_qp */
    FuzzQp q[FQ__N];
    uint32_t pd2;                   /* a second PD */
    /*
     * Keys: [0] the node's MR over its buffer (every access), [1] local
     * access only, [2] in the other PD, [3] a level 1 page list MR at
     * PAGED_IOVA, [4] a level 2 one at L2_IOVA, [5] the MR windows are
     * bound in (MW_BIND), [6] the type 1 window, [7] the type 2 window,
     * [8] the fast-register MR (the last three as the model knows them);
     * then those the input creates.  A destroyed MR's key stays: stale
     * keys are inputs too.
     */
    uint32_t keys[MAX_KEYS];
    unsigned nkeys;
    uint64_t pbl[2];                /* the page lists of keys [3] and [4] */
    uint64_t wr_id;
    /* DMA outside guest RAM is a device bug until the input names it. */
    bool named_bad_addr;
    /* QPs the input created with raw commands: their CQEs are fine. */
    uint32_t more_qpns[8];
    unsigned n_more_qpns;
    bool eth_up;                    /* Ethernet rings set up */
    uint32_t tx_pi, rx_pi;

    uint64_t xbuf;                  /* XBUF_PAGES more data */
    /* XRC: the initiator towards the peer's target; our target, SRQs. */
    uint32_t xrcdn, xrcdn2;
    TestQp ini;
    uint32_t tgt_qpn;
    TestCq xrc_cq;                  /* ini's sends, xsrq 0, 2, 3 */
    FuzzSrq xsrq[XSRQ_N];
    /* Windows and the fast-register MR. */
    uint32_t mw_mr;
    KeyModel km[KM__N];
    bool km_off;                    /* the model no longer follows */
    uint64_t fr_pbl;                /* REG_MR's page list */
    bool fr_shadowed;
    DeadAccess dead_access[4];
    /* The second RC pair: QP, CQ (both queues), PD and MR. */
    TestQp lqp;
    TestCq long_cq;
    uint32_t pd3, long_key;
    bool long_overlap;              /* an MR of another reached its slots */
} FuzzNode;

typedef struct WireMode {
    uint8_t kind;           /* 0 pass, 1 drop, 2 dup, 3 mutate, 4 reorder */
    uint8_t left;
    uint8_t skip;                   /* frames let through first */
    uint16_t offset;
    uint8_t value;
    uint8_t held[VHCA_ETH_MAX_FRAME];
    size_t held_len;                /* a frame held back (kind 4) */
    Harness *held_to;
} WireMode;

typedef struct Fuzz {
    FuzzNode node[2];
    WireMode wire;
    /*
     * The second RC pair is trusted while only op_long() has used it
     * (long_tainted: something else may have) and its state is known
     * (long_ok: every message it carried completed; bringing the pair up
     * again restores it).
     */
    bool long_tainted;
    bool long_ok;
    /*
     * Frames from the input rather than the engines (op_frame(), raw
     * Ethernet, a damaged one): an ACK or a response among them may
     * complete a request its responder refused, and a request may move
     * a responder's expected PSN on, so that the requester's next one is
     * a duplicate, acknowledged without being executed (IBTA 9.7.5.2.2).
     * The count when the RC pair and each XRC pair (by its initiator's
     * node) were last brought up: no such frame since, if it is the same.
     */
    unsigned forged;
    unsigned rc_clean, xrc_clean[2];
} Fuzz;

static Fuzz *fz;

static FuzzNode *node_of(Harness *h)
{
    return fz->node[0].n.h == h ? &fz->node[0] : &fz->node[1];
}

/*
 * DMA goes through the harness after this check: an access outside guest
 * RAM is allowed only once the input has given the device such an address.
 */
static const VhcaCoreOps *harness_ops;
static VhcaCoreOps fuzz_ops;

static void check_dma(Harness *h, uint64_t addr, size_t len)
{
    if (!fuzz_ram_range(addr, len) && !node_of(h)->named_bad_addr) {
        g_error("DMA of %zu bytes at 0x%" G_GINT64_MODIFIER "x, outside "
                "guest RAM, with no such address in the input", len, addr);
    }
}

static void shadow_add(FuzzNode *fn, uint32_t key, uint64_t start,
                       uint64_t len, uint32_t access)
{
    /* Another MR over the long pair's slots: its data is not its own. */
    if (fn->xbuf && key != fn->long_key && start < fn->xbuf + LONG_LEN &&
        start + len > fn->xbuf) {
        fn->long_overlap = true;
    }
    if (fn->nshadow == MAX_SHADOW) {
        fn->shadow_unknown = true;
        return;
    }
    fn->shadow[fn->nshadow++] = (ShadowMr){
        key, start, start + len,
        (access & (VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE |
                   VHCA_ACCESS_REMOTE_ATOMIC)) != 0, true,
    };
}

static void shadow_destroyed(FuzzNode *fn, uint32_t key)
{
    unsigned i;

    for (i = 0; i < fn->nshadow; i++) {
        if (fn->shadow[i].key == key) {
            fn->shadow[i].live = false;
        }
    }
}

/*
 * A DMA write that touches a data buffer must lie in live MRs that allow
 * writing (IBTA 10.6.3: an access is checked against the MR it names; a
 * destroyed MR names nothing).
 */
static void check_dma_write(Harness *h, uint64_t addr, size_t len)
{
    FuzzNode *fn = node_of(h);
    uint64_t lo = fn->n.buf, hi = fn->n.buf + DATA_PAGES * 4096ull;
    uint64_t xlo = fn->xbuf, xhi = fn->xbuf + XBUF_PAGES * 4096ull;
    uint64_t end = addr + len;

    if (fn->shadow_unknown || ((end <= lo || addr >= hi) &&
                               (end <= xlo || addr >= xhi))) {
        return;
    }
    while (addr < end) {
        uint64_t reach = addr;
        unsigned i;

        for (i = 0; i < fn->nshadow; i++) {
            const ShadowMr *m = &fn->shadow[i];

            if (m->live && m->writable && m->start <= addr && addr < m->end) {
                reach = MAX(reach, MIN(m->end, end));
            }
        }
        if (reach == addr) {
            g_error("DMA write of %zu bytes at 0x%" G_GINT64_MODIFIER "x: "
                    "0x%" G_GINT64_MODIFIER "x is in no live MR that "
                    "allows writes", len, end - len, addr);
        }
        addr = reach;
    }
}

static int fuzz_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    check_dma(opaque, addr, len);
    return harness_ops->dma_read(opaque, addr, buf, len);
}

static int fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    check_dma(opaque, addr, len);
    check_dma_write(opaque, addr, len);
    return harness_ops->dma_write(opaque, addr, buf, len);
}

static void fuzz_wire_hook(Harness *h, const uint8_t *buf, size_t len);

static void uc_up(FuzzNode *fn, const FuzzNode *peer)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = fn->uc.qpn;
    a.port = 1;
    a.qp_access_flags = VHCA_ACCESS_REMOTE_WRITE;
    qp_modify_ok(fn->n.h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                 VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS);
    a.hop_limit = 64;
    memcpy(a.dgid, peer->n.gid, 16);
    memcpy(a.dmac, peer->n.h->core.cfg.mac, 6);
    a.path_mtu = VHCA_IB_MTU_1024;
    a.dest_qp_num = peer->uc.qpn;
    a.rq_psn = 0x300;
    qp_modify_ok(fn->n.h, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                 VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN);
    a.sq_psn = 0x300;
    qp_modify_ok(fn->n.h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

static void ud_up(FuzzNode *fn, uint32_t qpn)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    a.port = 1;
    a.qkey = UD_QKEY;
    qp_modify_ok(fn->n.h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                 VHCA_QP_QKEY | VHCA_QP_PORT);
    qp_modify_ok(fn->n.h, &a, VHCA_QPS_RTR, 0);
    a.sq_psn = 0x42;
    qp_modify_ok(fn->n.h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

/* An SRQ's two rings and their page lists. */
static void srq_rings(Harness *h, FuzzSrq *srq)
{
    unsigned i;

    for (i = 0; i < 2; i++) {
        srq->ring[i] = rdma_alloc(h, SRQ_RING_PAGES);
        srq->pbl[i] = rdma_pbl(h, srq->ring[i], SRQ_RING_PAGES, false);
    }
}

/*
 * CREATE_SRQ of @srq (16 WQEs in its first ring, limit 4): basic, or XRC
 * in its domain when srq->xrcdn is set.
 */
static uint8_t srq_make(FuzzNode *fn, FuzzSrq *srq)
{
    struct vhca_srq_create c;

    srq->cur = 0;
    srq->log = 4;
    srq->pi = 0;
    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(srq->pdn);
    c.db_page = GUINT32_TO_LE(fn->n.page);
    c.pbl_addr = GUINT64_TO_LE(srq->pbl[0]);
    c.npages = GUINT32_TO_LE(SRQ_RING_PAGES);
    c.log_size = srq->log;
    c.ci_addr = GUINT64_TO_LE(srq->ci_addr);
    c.limit = GUINT32_TO_LE(4);
    if (srq->xrcdn) {
        c.type = VHCA_SRQT_XRC;
        c.xrcdn = GUINT32_TO_LE(srq->xrcdn);
        c.cqn = GUINT32_TO_LE(srq->cqn);
    }
    return rdma_cmd(fn->n.h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c), &srq->srqn,
                    NULL);
}

/*
 * The SRQ (16 WQEs, limit 4) and a UD QP on it, completing to the UD CQ;
 * made after the other QPs, so their numbers stay as they were.
 */
static void srq_create(FuzzNode *fn)
{
    Harness *h = fn->n.h;
    struct vhca_qp_create q;
    uint64_t sq = rdma_alloc(h, 2);

    srq_rings(h, &fn->srq);
    fn->srq.pdn = fn->n.pdn;
    fn->srq.ci_addr = rdma_alloc(h, 1);
    g_assert_cmpuint(srq_make(fn, &fn->srq), ==, VHCA_ST_OK);
    memset(&fn->srq_qp, 0, sizeof(fn->srq_qp));
    fn->srq_qp.sq_log = 5;
    fn->srq_qp.sq = sq;
    fn->srq_qp.db_page = fn->n.page;
    memset(&q, 0, sizeof(q));
    q.type = VHCA_QPT_UD;
    q.sq_log_size = 5;
    q.pdn = GUINT32_TO_LE(fn->n.pdn);
    q.send_cqn = GUINT32_TO_LE(fn->ud_cq.cqn);
    q.recv_cqn = GUINT32_TO_LE(fn->ud_cq.cqn);
    /* Reversed page order, as the harness's other send rings. */
    q.sq_pbl_addr = GUINT64_TO_LE(rdma_pbl(h, sq, 2, true));
    q.sq_npages = GUINT32_TO_LE(2);
    q.db_page = GUINT32_TO_LE(fn->n.page);
    q.srqn = GUINT32_TO_LE(fn->srq.srqn);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_QP, &q, sizeof(q),
                              &fn->srq_qp.qpn, NULL), ==, VHCA_ST_OK);
}

/* Write @w at the SRQ's producer index (no doorbell). */
static void srq_put(FuzzNode *fn, FuzzSrq *srq, const struct vhca_recv_wqe *w)
{
    uint32_t slot = srq->pi++ & ((1u << srq->log) - 1);

    ram_write(fn->n.h, srq->ring[srq->cur] +
              (uint64_t)slot * VHCA_RECV_WQE_SIZE, w, sizeof(*w));
}

static void srq_ring(FuzzNode *fn, const FuzzSrq *srq)
{
    ring_doorbell(fn->n.h, fn->n.page, VHCA_DB_SRQ, srq->srqn, srq->pi);
}

static uint32_t recv_pi(FuzzNode *fn, unsigned q)
{
    return q == FQ_SRQ ? fn->srq.pi : fn->q[q].qp->rq_pi;
}

/* The doorbell of QP kind @q's receive queue (its RQ or the SRQ). */
static void ring_recv(FuzzNode *fn, unsigned q)
{
    if (q == FQ_SRQ) {
        srq_ring(fn, &fn->srq);
    } else {
        ring_doorbell(fn->n.h, fn->n.page, VHCA_DB_RQ, fn->q[q].qpn,
                      fn->q[q].qp->rq_pi);
    }
}

static void recv_wqe(FuzzNode *fn, unsigned q, uint32_t slot)
{
    struct vhca_recv_wqe w;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(++fn->wr_id);
    w.num_sge = 1;
    w.sge[0].addr = GUINT64_TO_LE(fn->n.buf + (uint64_t)slot * RWQE_SIZE);
    w.sge[0].length = GUINT32_TO_LE(RWQE_SIZE);
    w.sge[0].lkey = GUINT32_TO_LE(fn->keys[0]);
    if (q == FQ_SRQ) {
        srq_put(fn, &fn->srq, &w);
    } else {
        qp_put_recv_wqe(fn->n.h, fn->q[q].qp, &w);
    }
}

/* A receive WQE of XRC SRQ @k's buffer @slot (of two), rung. */
static void xrc_recv_wqe(FuzzNode *fn, unsigned k, unsigned slot)
{
    FuzzSrq *srq = &fn->xsrq[k];
    struct vhca_recv_wqe w;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(++fn->wr_id);
    w.num_sge = 1;
    w.sge[0].addr = GUINT64_TO_LE(srq->rbuf + (slot & 1) * XRC_RECV_LEN);
    w.sge[0].length = GUINT32_TO_LE(XRC_RECV_LEN);
    w.sge[0].lkey = GUINT32_TO_LE(srq->lkey);
    srq_put(fn, srq, &w);
    srq_ring(fn, srq);
}

/*
 * An MR with every access over @npages pages of the node's buffer from
 * page @first, in reverse order, through a page list of @levels levels.
 */
static uint32_t create_paged_mr(FuzzNode *fn, uint32_t first, uint32_t npages,
                                uint8_t levels, uint64_t iova)
{
    Harness *h = fn->n.h;
    uint64_t pbl = rdma_pbl(h, fn->n.buf + first * 4096ull, npages, true);
    struct vhca_mr_create c;
    uint32_t key = 0;

    if (levels == 2) {
        uint64_t l1 = rdma_alloc(h, 1), le = GUINT64_TO_LE(pbl);

        ram_write(h, l1, &le, 8);
        pbl = l1;
    }
    fn->pbl[levels - 1] = pbl;
    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(fn->n.pdn);
    c.access = GUINT32_TO_LE(ACCESS_ALL);
    c.iova = GUINT64_TO_LE(iova);
    c.offset = GUINT32_TO_LE(iova & 4095);
    c.length = GUINT64_TO_LE(npages * 4096ull - (iova & 4095));
    c.pbl_addr = GUINT64_TO_LE(pbl);
    c.npages = GUINT32_TO_LE(npages);
    c.page_shift = 12;
    c.pbl_levels = levels;
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_MR, &c, sizeof(c), NULL,
                              &key), ==, VHCA_ST_OK);
    return key;
}

/* ALLOC_MW of @type in @pdn with first tag @tag: its key, or 0. */
static uint32_t alloc_mw(Harness *h, uint32_t pdn, uint8_t type, uint8_t tag)
{
    struct vhca_cmd_mw_in in;
    struct vhca_cmd_obj_out out;

    memset(&in, 0, sizeof(in));
    memset(&out, 0, sizeof(out));
    in.pdn = GUINT32_TO_LE(pdn);
    in.type = type;
    in.key_tag = GUINT32_TO_LE(tag);
    if (admin_cmd(h, VHCA_CMD_ALLOC_MW, 0x7100, &in, sizeof(in), &out) !=
        VHCA_ST_OK) {
        return 0;
    }
    return GUINT32_FROM_LE(out.key);
}

/* A fast-register MR of FR_PAGES in the node's PD, tag @tag: its key. */
static uint32_t create_fast_mr(FuzzNode *fn, uint8_t tag)
{
    struct vhca_mr_create c;
    uint32_t key = 0;

    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(fn->n.pdn);
    c.npages = GUINT32_TO_LE(FR_PAGES);
    c.flags = GUINT16_TO_LE(VHCA_MR_FAST_REG);
    c.key_tag = GUINT32_TO_LE(tag);
    if (rdma_cmd(fn->n.h, VHCA_CMD_CREATE_MR, &c, sizeof(c), NULL, &key) !=
        VHCA_ST_OK) {
        return 0;
    }
    return key;
}

static void km_init(FuzzNode *fn, unsigned km, uint32_t key, uint8_t type)
{
    g_assert_cmpuint(key, !=, 0);
    fn->km[km] = (KeyModel){ .key = key, .kidx = fn->nkeys, .type = type };
    fn->keys[fn->nkeys++] = key;
}

/*
 * The windows, the MR they are bound in (every access and MW_BIND), the
 * fast-register MR and the page list its REG_MR WQEs use.
 */
static void mw_objects(FuzzNode *fn)
{
    Harness *h = fn->n.h;

    fn->mw_mr = rdma_create_phys_mr(h, fn->n.pdn, fn->xbuf + MW_OFF, MW_LEN,
                                    ACCESS_ALL | VHCA_ACCESS_MW_BIND);
    fn->keys[fn->nkeys++] = fn->mw_mr;
    shadow_add(fn, fn->mw_mr, fn->xbuf + MW_OFF, MW_LEN, ACCESS_ALL);
    km_init(fn, KM_MW1, alloc_mw(h, fn->n.pdn, VHCA_MW_TYPE_1, 0x11),
            VHCA_MW_TYPE_1);
    km_init(fn, KM_MW2, alloc_mw(h, fn->n.pdn, VHCA_MW_TYPE_2, 0x22),
            VHCA_MW_TYPE_2);
    km_init(fn, KM_FR, create_fast_mr(fn, 0x33), 0);
    fn->fr_pbl = rdma_alloc(h, 1);
}

/* The XRC domains, the target and its SRQs, the initiator. */
static void xrc_objects(FuzzNode *fn)
{
    Harness *h = fn->n.h;
    struct vhca_qp_create c;
    unsigned k;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_ALLOC_XRCD, NULL, 0, &fn->xrcdn,
                              NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_ALLOC_XRCD, NULL, 0, &fn->xrcdn2,
                              NULL), ==, VHCA_ST_OK);
    /* Small, so that inputs can overflow it. */
    g_assert_cmpuint(rdma_create_cq(h, &fn->xrc_cq, 4, fn->n.eqn,
                                    fn->n.page), ==, VHCA_ST_OK);
    memset(&c, 0, sizeof(c));
    c.type = VHCA_QPT_XRC_TGT;
    c.xrcdn = GUINT32_TO_LE(fn->xrcdn);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_QP, &c, sizeof(c),
                              &fn->tgt_qpn, NULL), ==, VHCA_ST_OK);
    /*
     * Two SRQs of the node's PD (one completing to the RC QP's receive
     * CQ), one of the other PD (its buffers in the other PD's MR), one
     * of another domain, which the target may not use.
     */
    for (k = 0; k < XSRQ_N; k++) {
        FuzzSrq *srq = &fn->xsrq[k];

        srq_rings(h, srq);
        srq->ci_addr = rdma_alloc(h, 1);
        srq->xrcdn = k == 3 ? fn->xrcdn2 : fn->xrcdn;
        srq->pdn = k == 2 ? fn->pd2 : fn->n.pdn;
        srq->cqn = k == 1 ? fn->n.rcq.cqn : fn->xrc_cq.cqn;
        srq->rbuf = fn->n.buf + 4096ull * (k == 2 ? 16 : 48 + 8 * (k & 1));
        srq->lkey = fn->keys[k == 2 ? 2 : 0];
        g_assert_cmpuint(srq_make(fn, srq), ==, VHCA_ST_OK);
    }
    memset(&fn->ini, 0, sizeof(fn->ini));
    fn->ini.sq_log = 5;
    fn->ini.db_page = fn->n.page;
    fn->ini.sq = rdma_alloc(h, 2);
    memset(&c, 0, sizeof(c));
    c.type = VHCA_QPT_XRC_INI;
    c.sq_log_size = 5;
    c.pdn = GUINT32_TO_LE(fn->n.pdn);
    c.send_cqn = GUINT32_TO_LE(fn->xrc_cq.cqn);
    c.sq_pbl_addr = GUINT64_TO_LE(rdma_pbl(h, fn->ini.sq, 2, true));
    c.sq_npages = GUINT32_TO_LE(2);
    c.db_page = GUINT32_TO_LE(fn->n.page);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_QP, &c, sizeof(c),
                              &fn->ini.qpn, NULL), ==, VHCA_ST_OK);
}

/* The second RC pair's side: PD, CQ, QP, and the MR over its slots. */
static void long_objects(FuzzNode *fn)
{
    Harness *h = fn->n.h;

    fn->pd3 = rdma_create_pd(h);
    g_assert_cmpuint(rdma_create_cq(h, &fn->long_cq, 6, fn->n.eqn,
                                    fn->n.page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(h, &fn->lqp, VHCA_QPT_RC, fn->pd3,
                                    fn->long_cq.cqn, fn->long_cq.cqn,
                                    fn->n.page), ==, VHCA_ST_OK);
    fn->long_key = rdma_create_phys_mr(h, fn->pd3, fn->xbuf, LONG_LEN,
                                       ACCESS_ALL);
    shadow_add(fn, fn->long_key, fn->xbuf, LONG_LEN, ACCESS_ALL);
}

/*
 * Linux's IB_QPT_XRC_INI and IB_QPT_XRC_TGT rows of the Modify QP table
 * (test-vhca-xrc.c): the initiator has no responder attributes, the
 * target no retries.  @qpn of @fn towards @dest_qpn of @dest.
 */
static uint8_t xrc_connect(FuzzNode *fn, uint32_t qpn, bool target,
                           const FuzzNode *dest, uint32_t dest_qpn,
                           uint32_t sq_psn, uint32_t rq_psn, uint8_t mtu)
{
    struct vhca_qp_attr a;
    uint8_t st;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    a.port = 1;
    a.qp_access_flags = ACCESS_ALL & ~VHCA_ACCESS_LOCAL_WRITE;
    a.qp_state = VHCA_QPS_INIT;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                  VHCA_QP_ACCESS_FLAGS;
    st = rdma_modify_qp(fn->n.h, &a);
    a.hop_limit = 64;
    memcpy(a.dgid, dest->n.gid, 16);
    memcpy(a.dmac, dest->n.h->core.cfg.mac, 6);
    a.path_mtu = mtu;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    a.qp_state = VHCA_QPS_RTR;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_AV | VHCA_QP_PATH_MTU |
                  VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                  (target ? VHCA_QP_MAX_DEST_RD_ATOMIC |
                            VHCA_QP_MIN_RNR_TIMER : 0);
    st |= rdma_modify_qp(fn->n.h, &a);
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = 16;
    a.qp_state = VHCA_QPS_RTS;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_TIMEOUT | VHCA_QP_SQ_PSN |
                  (target ? 0 : VHCA_QP_RETRY_CNT | VHCA_QP_RNR_RETRY |
                                VHCA_QP_MAX_QP_RD_ATOMIC);
    return st | rdma_modify_qp(fn->n.h, &a);
}

/* MODIFY_QP @qpn of @h to RESET (the driver's indices start again). */
/* The device of the fuzz target: room for its objects, and the input's. */
static VhcaCoreConfig fuzz_cfg(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;

    cfg.max_qp = 16;
    cfg.max_cq = 16;
    cfg.max_mr = MAX_KEYS;
    cfg.max_srq = 8;
    return cfg;
}

static void world_init(Fuzz *f)
{
    VhcaCoreConfig cfg = fuzz_cfg();
    unsigned i, q, s, k;

    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i];

        node_init_cfg(&fn->n, 1 + i, VHCA_QPT_RC, &cfg);
        fn->gid6[0] = 0xfd;
        fn->gid6[15] = 1 + i;
        g_assert_cmpuint(add_gid(fn->n.h, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                 fn->gid6), ==, VHCA_ST_OK);
        aeq_drain(fn->n.h);
        /* Small, so that inputs can overflow them. */
        g_assert_cmpuint(rdma_create_cq(fn->n.h, &fn->uc_cq, 3, fn->n.eqn,
                                        fn->n.page), ==, VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_cq(fn->n.h, &fn->ud_cq, 3, fn->n.eqn,
                                        fn->n.page), ==, VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_qp(fn->n.h, &fn->uc, VHCA_QPT_UC,
                                        fn->n.pdn, fn->uc_cq.cqn,
                                        fn->uc_cq.cqn, fn->n.page), ==,
                         VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_qp(fn->n.h, &fn->ud, VHCA_QPT_UD,
                                        fn->n.pdn, fn->ud_cq.cqn,
                                        fn->ud_cq.cqn, fn->n.page), ==,
                         VHCA_ST_OK);
        fn->q[FQ_RC] = (FuzzQp){ &fn->n.qp, &fn->n.scq, &fn->n.rcq,
                                 fn->n.qp.qpn };
        fn->q[FQ_UC] = (FuzzQp){ &fn->uc, &fn->uc_cq, &fn->uc_cq,
                                 fn->uc.qpn };
        fn->q[FQ_UD] = (FuzzQp){ &fn->ud, &fn->ud_cq, &fn->ud_cq,
                                 fn->ud.qpn };
        srq_create(fn);
        fn->q[FQ_SRQ] = (FuzzQp){ &fn->srq_qp, &fn->ud_cq, &fn->ud_cq,
                                  fn->srq_qp.qpn };
        fn->keys[fn->nkeys++] = fn->n.key;
        shadow_add(fn, fn->n.key, fn->n.buf, DATA_PAGES * 4096, ACCESS_ALL);
        fn->keys[fn->nkeys] = rdma_create_phys_mr(fn->n.h, fn->n.pdn,
                                                  fn->n.buf, 16 * 4096,
                                                  VHCA_ACCESS_LOCAL_WRITE);
        shadow_add(fn, fn->keys[fn->nkeys++], fn->n.buf, 16 * 4096,
                   VHCA_ACCESS_LOCAL_WRITE);
        fn->pd2 = rdma_create_pd(fn->n.h);
        fn->keys[fn->nkeys] = rdma_create_phys_mr(fn->n.h, fn->pd2,
                                                  fn->n.buf + 16 * 4096,
                                                  16 * 4096, ACCESS_ALL);
        shadow_add(fn, fn->keys[fn->nkeys++], fn->n.buf + 16 * 4096,
                   16 * 4096, ACCESS_ALL);
        /* The page lists name pages 32..47 and 48..55 (in any order). */
        fn->keys[fn->nkeys] = create_paged_mr(fn, 32, PAGED_PAGES, 1,
                                              PAGED_IOVA);
        shadow_add(fn, fn->keys[fn->nkeys++], fn->n.buf + 32 * 4096,
                   PAGED_PAGES * 4096, ACCESS_ALL);
        fn->keys[fn->nkeys] = create_paged_mr(fn, 48, L2_PAGES, 2, L2_IOVA);
        shadow_add(fn, fn->keys[fn->nkeys++], fn->n.buf + 48 * 4096,
                   L2_PAGES * 4096, ACCESS_ALL);
        /* Made after the objects above: their numbers stay as they were. */
        fn->xbuf = rdma_alloc(fn->n.h, XBUF_PAGES);
        long_objects(fn);
        mw_objects(fn);
        xrc_objects(fn);
        fn->n.h->tx_hook = fuzz_wire_hook;
    }
    f->node[0].n.h->peer = f->node[1].n.h;
    f->node[1].n.h->peer = f->node[0].n.h;
    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i], *peer = &f->node[!i];

        qp_connect(fn->n.h, fn->n.qp.qpn, peer->n.gid,
                   peer->n.h->core.cfg.mac, peer->n.qp.qpn, &default_opts,
                   i ? default_opts.b_psn : default_opts.a_psn,
                   i ? default_opts.a_psn : default_opts.b_psn);
        aeq_drain(fn->n.h);
        uc_up(fn, peer);
        ud_up(fn, fn->ud.qpn);
        ud_up(fn, fn->srq_qp.qpn);
        qp_connect(fn->n.h, fn->lqp.qpn, peer->n.gid,
                   peer->n.h->core.cfg.mac, peer->lqp.qpn, &default_opts,
                   0x10 + i, 0x11 - i);
        g_assert_cmpuint(xrc_connect(fn, fn->ini.qpn, false, peer,
                                     peer->tgt_qpn, 0x500, 0x900,
                                     VHCA_IB_MTU_1024), ==, VHCA_ST_OK);
        g_assert_cmpuint(xrc_connect(peer, peer->tgt_qpn, true, fn,
                                     fn->ini.qpn, 0x900, 0x500,
                                     VHCA_IB_MTU_1024), ==, VHCA_ST_OK);
        aeq_drain(fn->n.h);
        for (q = 0; q < FQ__N; q++) {
            for (s = 0; s < RWQES; s++) {
                recv_wqe(fn, q, q * RWQES + s);
            }
            ring_recv(fn, q);
        }
        for (k = 0; k < XSRQ_N; k++) {
            xrc_recv_wqe(fn, k, 0);
            xrc_recv_wqe(fn, k, 1);
        }
        aeq_drain(fn->n.h);
    }
    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i];

        aeq_drain(fn->n.h);
        /* The engine's DMA now goes through check_dma(). */
        harness_ops = fn->n.h->core.ops;
        fuzz_ops = *harness_ops;
        fuzz_ops.dma_read = fuzz_dma_read;
        fuzz_ops.dma_write = fuzz_dma_write;
        fn->n.h->core.ops = &fuzz_ops;
    }
    f->long_ok = true;
}

/* ---------------------------------------------------------------------- */
/* Invariants                                                             */
/* ---------------------------------------------------------------------- */

/*
 * Does @key grant nothing, to any QP of ours in either PD?  (IBTA 10.6.5,
 * 10.6.7: a key invalidated, or replaced by a bind or a registration
 * under another tag, names nothing the wire may reach.)
 */
static bool key_grants_nothing(FuzzNode *fn, uint32_t key)
{
    static const uint32_t rights[] = {
        VHCA_ACCESS_REMOTE_WRITE, VHCA_ACCESS_REMOTE_READ,
        VHCA_ACCESS_FLUSH_GLOBAL,
    };
    const uint32_t qpns[] = {
        0, fn->n.qp.qpn, fn->uc.qpn, fn->ini.qpn, fn->tgt_qpn,
    };
    const uint32_t pdns[] = { fn->n.pdn, fn->pd2 };
    unsigned r, q, p;

    for (r = 0; r < G_N_ELEMENTS(rights); r++) {
        for (q = 0; q < G_N_ELEMENTS(qpns); q++) {
            for (p = 0; p < G_N_ELEMENTS(pdns); p++) {
                if (vhca_mr_check_whole(&fn->n.h->core, key, pdns[p], qpns[q],
                                        rights[r]) == VHCA_MR_OK) {
                    return false;
                }
            }
        }
    }
    return true;
}

static void check_node(FuzzNode *fn)
{
    unsigned c;

    fuzz_check_counters(fn->n.h);
    /* A key seen invalidated or replaced stays so until we change it. */
    for (c = 0; c < KM__N && !fn->km_off; c++) {
        const KeyModel *m = &fn->km[c];

        if (m->dead && !m->wr_id && !key_grants_nothing(fn, m->dead)) {
            g_error("key 0x%x, invalidated or replaced, grants access",
                    m->dead);
        }
    }
}

/* Both engines to idle, the timers perhaps (fuzz_settle()), and checked. */
static void settle(Fuzz *f, uint64_t max_ns, unsigned max_timers)
{
    fuzz_settle(f->node[0].n.h, f->node[1].n.h, max_ns, max_timers);
    check_node(&f->node[0]);
    check_node(&f->node[1]);
}

static void run_pair(Fuzz *f)
{
    settle(f, 0, 0);
}

static bool qpn_known(const FuzzNode *fn, uint32_t qpn)
{
    unsigned i;

    for (i = 0; i < FQ__N; i++) {
        if (fn->q[i].qpn == qpn) {
            return true;
        }
    }
    for (i = 0; i < fn->n_more_qpns; i++) {
        if (fn->more_qpns[i] == qpn) {
            return true;
        }
    }
    return qpn == fn->ini.qpn || qpn == fn->tgt_qpn || qpn == fn->lqp.qpn;
}

static void note_created(FuzzNode *fn, uint16_t opcode, uint8_t status,
                         uint32_t handle)
{
    if (opcode == VHCA_CMD_CREATE_QP && status == VHCA_ST_OK &&
        fn->n_more_qpns < G_N_ELEMENTS(fn->more_qpns)) {
        fn->more_qpns[fn->n_more_qpns++] = handle;
    }
}

/* ---------------------------------------------------------------------- */
/* The model of the windows and the fast-register MR                     */
/* ---------------------------------------------------------------------- */

/* The entry of the object MR table index @key >> 8 holds, or KM__N. */
static unsigned km_of(const FuzzNode *fn, uint32_t key)
{
    unsigned i;

    for (i = 0; i < KM__N; i++) {
        if (fn->km[i].key && fn->km[i].key >> 8 == key >> 8) {
            return i;
        }
    }
    return KM__N;
}

/* Entry @km answers to @key now: the key it answered to no longer does. */
static void km_set_key(FuzzNode *fn, unsigned km, uint32_t key)
{
    KeyModel *m = &fn->km[km];

    if (m->key && m->key != key) {
        m->dead = m->key;
    }
    if (m->dead == key) {
        m->dead = 0;
    }
    m->key = key;
    fn->keys[m->kidx] = key;
    m->epoch++;
}

/* Our WQE @wr_id of @opcode on @key (its new key @new_key) is posted. */
static void km_posted(FuzzNode *fn, uint64_t wr_id, uint8_t opcode,
                      uint32_t key, uint32_t new_key)
{
    unsigned km = km_of(fn, key);

    if (km == KM__N) {
        return;
    }
    /*
     * A second WQE before the first completed: the model cannot tell
     * their order from the CQEs it may miss (a full CQ); it gives up.
     */
    if (fn->km[km].wr_id) {
        fn->km_off = true;
    }
    fn->km[km].wr_id = wr_id;
    fn->km[km].wr_op = opcode;
    fn->km[km].wr_key = new_key;
    fn->km[km].epoch++;
}

/* What a completion of @fn tells the model. */
static void km_cqe(FuzzNode *fn, const struct vhca_cqe *cqe)
{
    FuzzNode *peer = &fz->node[fn == &fz->node[0]];
    bool ok = cqe->status == VHCA_WC_SUCCESS;
    unsigned i;

    /* A SEND with Invalidate took a key of ours away (IBTA 9.4.1.1). */
    if (ok && (cqe->flags & VHCA_CQE_WITH_INV)) {
        uint32_t key = GUINT32_FROM_LE(cqe->imm_or_inv);

        i = km_of(fn, key);
        if (i < KM__N && fn->km[i].key == key) {
            fn->km[i].dead = key;
            fn->km[i].epoch++;
        }
    }
    for (i = 0; i < KM__N; i++) {
        KeyModel *m = &fn->km[i];

        if (!m->wr_id || m->wr_id != cqe->wr_id) {
            continue;
        }
        m->wr_id = 0;
        m->epoch++;
        if (!ok) {
            continue;               /* a failed one changes nothing */
        }
        if (m->wr_op == VHCA_WR_LOCAL_INV) {
            m->dead = m->wr_key;
            continue;
        }
        km_set_key(fn, i, m->wr_key);
        m->va = m->wr_va;
        m->zero_based = m->wr_zero_based;
        /* A type 1 window bound with length 0 grants nothing. */
        if (m->wr_unbind) {
            m->dead = m->wr_key;
        }
    }
    /* An RDMA of ours through a key of the peer's known dead. */
    for (i = 0; i < G_N_ELEMENTS(fn->dead_access); i++) {
        DeadAccess *d = &fn->dead_access[i];
        unsigned clean = d->xrc ? fz->xrc_clean[fn == &fz->node[1]]
                                : fz->rc_clean;

        if (!d->wr_id || d->wr_id != cqe->wr_id) {
            continue;
        }
        if (ok && !peer->km_off && !fn->km_off &&
            peer->km[d->km].epoch == d->epoch && fz->forged == clean) {
            g_error("an access through key 0x%x, invalidated or replaced, "
                    "succeeded (wr_id %" G_GUINT64_FORMAT ")", d->key,
                    d->wr_id);
        }
        d->wr_id = 0;
    }
}

/*
 * Which QPs complete to @cq, when the input made no QP of its own: an
 * XRC SRQ's receive completions name the target (as ConnectX reports
 * them), the initiator's send completions the initiator.
 */
static void check_cqe_qp(FuzzNode *fn, const TestCq *cq,
                         const struct vhca_cqe *cqe)
{
    bool recv = cqe->opcode >= VHCA_WC_RECV;

    if (fn->n_more_qpns) {
        return;
    }
    if (cq == &fn->xrc_cq) {
        g_assert_cmpuint(cqe->qpn, ==, recv ? fn->tgt_qpn : fn->ini.qpn);
    } else if (cq == &fn->n.rcq) {
        g_assert_true(recv);
        g_assert_true(cqe->qpn == fn->n.qp.qpn || cqe->qpn == fn->tgt_qpn);
    } else if (cq == &fn->long_cq) {
        g_assert_cmpuint(cqe->qpn, ==, fn->lqp.qpn);
    }
}

static bool long_trusted(const Fuzz *f);

/*
 * A completion of @fn's CQ @cq: it names a QP of ours and a status the
 * device defines; and what it tells the key model.
 */
static int verbose;                 /* VHCA_FUZZ_VERBOSE */

static void check_cqe(FuzzNode *fn, const TestCq *cq,
                      const struct vhca_cqe *cqe)
{
    if (verbose > 1) {
        g_printerr("node %c cq %u: qpn %u wr_id %" G_GUINT64_FORMAT
                   " opcode %u status %u len %u flags %u inv/imm 0x%x\n",
                   fn == &fz->node[0] ? 'A' : 'B', cq->cqn, cqe->qpn,
                   cqe->wr_id, cqe->opcode, cqe->status, cqe->byte_len,
                   cqe->flags, GUINT32_FROM_LE(cqe->imm_or_inv));
    }
    g_assert_true(qpn_known(fn, GUINT32_FROM_LE(cqe->qpn)));
    fuzz_check_cqe_status(cqe->status);
    check_cqe_qp(fn, cq, cqe);
    km_cqe(fn, cqe);
}

/* Consume the CQEs of @fn: each names a QP of ours and a known status. */
static void poll_all(FuzzNode *fn)
{
    TestCq *cqs[] = {
        &fn->n.scq, &fn->n.rcq, &fn->uc_cq, &fn->ud_cq, &fn->xrc_cq,
        &fn->long_cq,
    };
    struct vhca_cqe cqe;
    unsigned i, n;

    for (i = 0; i < G_N_ELEMENTS(cqs); i++) {
        for (n = 0; n < (1u << cqs[i]->log) && cq_poll(fn->n.h, cqs[i], &cqe);
             n++) {
            check_cqe(fn, cqs[i], &cqe);
            /* op_long() takes every completion of a pair it trusts. */
            if (cqs[i] == &fn->long_cq && long_trusted(fz)) {
                g_error("a completion on the second RC pair after its "
                        "messages completed (wr_id %" G_GUINT64_FORMAT ")",
                        cqe.wr_id);
            }
        }
    }
    /* And the async events, as the driver's EQ handler does. */
    aeq_drain(fn->n.h);
}

/* ---------------------------------------------------------------------- */
/* Frames                                                                 */
/* ---------------------------------------------------------------------- */

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

/*
 * After a change past the UDP header, make the frame valid again: IP and
 * UDP lengths, the IPv4 header checksum, a zero UDP checksum, the ICRC.
 */
static void frame_fixup(uint8_t *frame, size_t len)
{
    VhcaWirePacket pkt;
    uint8_t *ip, *udp, *icrc;
    size_t ip_hlen, total;
    uint32_t sum = 0, crc;
    size_t i;

    /* Headers the parser can still find: Ethernet, VLAN, IP version. */
    memset(&pkt, 0, sizeof(pkt));
    if (len < 14 + 4 + 40) {
        return;
    }
    pkt.l3_offset = frame[12] == 0x81 && frame[13] == 0 ? 18 : 14;
    ip = frame + pkt.l3_offset;
    pkt.ipv6 = (ip[0] >> 4) == 6;
    ip_hlen = pkt.ipv6 ? 40 : (ip[0] & 0xf) * 4u;
    total = len - pkt.l3_offset;
    if (ip_hlen < 20 ||
        total < ip_hlen + 8 + VHCA_IB_BTH_LEN + VHCA_IB_ICRC_LEN) {
        return;
    }
    if (pkt.ipv6) {
        put_be16(ip + 4, total - ip_hlen);
    } else {
        put_be16(ip + 2, total);
        put_be16(ip + 10, 0);
        for (i = 0; i < ip_hlen; i += 2) {
            sum += ip[i] << 8 | ip[i + 1];
        }
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        put_be16(ip + 10, ~sum);
    }
    udp = ip + ip_hlen;
    put_be16(udp + 4, total - ip_hlen);
    put_be16(udp + 6, 0);
    icrc = frame + len - VHCA_IB_ICRC_LEN;
    crc = vhca_icrc(ip, ip_hlen, pkt.ipv6, total - VHCA_IB_ICRC_LEN);
    icrc[0] = crc;
    icrc[1] = crc >> 8;
    icrc[2] = crc >> 16;
    icrc[3] = crc >> 24;
}

/* Where the BTH starts in a frame we built (or 0 if it cannot be found). */
static size_t bth_offset(const uint8_t *frame, size_t len)
{
    VhcaWirePacket pkt;

    if (vhca_wire_parse_net(frame, len, &pkt) != VHCA_WIRE_OK) {
        return 0;
    }
    return pkt.l4_offset + 8;
}

/*
 * A frame the input made or damaged, for @to: if its BTH (at @bth) names
 * the second RC pair's QP there, that pair is no longer its own.
 */
static void long_taint(Harness *to, const uint8_t *frame, size_t len,
                       size_t bth)
{
    if (len >= bth + 8 &&
        (uint32_t)(frame[bth + 5] << 16 | frame[bth + 6] << 8 |
                   frame[bth + 7]) == node_of(to)->lqp.qpn) {
        fz->long_tainted = true;
    }
}

static void fuzz_wire_hook(Harness *h, const uint8_t *buf, size_t len)
{
    WireMode *w = &fz->wire;
    uint8_t frame[VHCA_ETH_MAX_FRAME];

    if (w->left && w->skip) {
        /* Let through before the mode applies (op_long()). */
        w->skip--;
        fuzz_deliver(h->peer, buf, len);
        return;
    }
    if (!w->left) {
        fuzz_deliver(h->peer, buf, len);
        return;
    }
    w->left--;
    switch (w->kind) {
    case 1:
        return;
    case 2:
        fuzz_deliver(h->peer, buf, len);
        fuzz_deliver(h->peer, buf, len);
        return;
    case 3: {
        /* One byte of the IB headers or payload, then a valid ICRC. */
        size_t bth = bth_offset(buf, len);

        fz->forged++;

        memcpy(frame, buf, len);
        if (bth && len > bth + VHCA_IB_ICRC_LEN) {
            frame[bth + w->offset % (len - bth - VHCA_IB_ICRC_LEN)] ^=
                w->value;
            frame_fixup(frame, len);
            long_taint(h->peer, frame, len, bth);
        }
        fuzz_deliver(h->peer, frame, len);
        return;
    }
    case 4:
        /* Reorder: this frame goes after the next one. */
        if (!w->held_len) {
            memcpy(w->held, buf, len);
            w->held_len = len;
            w->held_to = h->peer;
            return;
        }
        fuzz_deliver(h->peer, buf, len);
        fuzz_deliver(w->held_to, w->held, w->held_len);
        w->held_len = 0;
        return;
    default:
        fuzz_deliver(h->peer, buf, len);
    }
}

/* 239.1.1.(n % 4) as a GID. */
static void mcast_gid(uint8_t gid[16], uint8_t n)
{
    gid_from_ipv4(gid, 239, 1, 1, n % 4);
}

static const uint8_t transports[FQ__N] = {
    VHCA_IB_TRANSPORT_RC, VHCA_IB_TRANSPORT_UC, VHCA_IB_TRANSPORT_UD,
    VHCA_IB_TRANSPORT_UD,
};

/*
 * A virtual address in one of @target's MRs (and a little around it), or
 * any.  A VA is not a guest physical address: whatever it is, the MR
 * checks must keep the device's DMA inside the MR.
 */
static uint64_t in_va(FuzzIn *in, FuzzNode *target)
{
    uint8_t mode = in_u8(in);

    if (mode < 0x60) {
        return target->n.buf + (in_u32(in) % (DATA_PAGES * 4096u));
    } else if (mode < 0xa0) {
        return PAGED_IOVA - 64 + in_u32(in) % ((PAGED_PAGES + 1) * 4096u);
    } else if (mode < 0xe0) {
        return L2_IOVA - 64 + in_u32(in) % ((L2_PAGES + 1) * 4096u);
    }
    return in_u64(in);
}

/* One of @fn's keys, live or destroyed, or a mutated one. */
static uint32_t in_key(FuzzIn *in, FuzzNode *fn)
{
    uint8_t mode = in_u8(in);

    if (mode < 0xf0) {
        return fn->keys[mode % fn->nkeys];
    }
    return fn->keys[0] ^ in_u32(in);
}

/*
 * Where a frame goes: its transport, the QP a request or a response is
 * for (whose PSNs it follows), the QP flag 0x20 sends it to instead, the
 * source QP in a DETH, and the XRC SRQ an XRC request names.
 */
typedef struct FrameTo {
    uint8_t transport;
    uint32_t req_qpn, rsp_qpn, alt_qpn;
    uint32_t src_qpn;
    uint32_t xrc_srqn;
} FrameTo;

static void frame_send(Fuzz *f, FuzzIn *in, uint8_t sel, const FrameTo *to);

static void op_frame(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *src = &f->node[sel & 1], *dst = &f->node[!(sel & 1)];
    unsigned q = ((sel >> 1) & 3) % FQ__N;
    FrameTo to = {
        .transport = transports[q],
        .req_qpn = dst->q[q].qpn,
        .rsp_qpn = dst->q[q].qpn,
        .alt_qpn = dst->q[(q + 1) % FQ__N].qpn,
        .src_qpn = src->q[q].qpn,
    };

    frame_send(f, in, sel, &to);
}

/* A frame from node sel & 1 to the other, as @to says. */
static void frame_send(Fuzz *f, FuzzIn *in, uint8_t sel, const FrameTo *to)
{
    FuzzNode *src = &f->node[sel & 1], *dst = &f->node[!(sel & 1)];
    uint8_t opsel = in_u8(in), flags = in_u8(in), post = in_u8(in);
    uint8_t net = in_u8(in);
    uint8_t frame[VHCA_ETH_MAX_FRAME + 64];
    VhcaWirePacket pkt;
    size_t len, bth;
    bool response, unknown;

    /* A requester may now complete what its responder never did. */
    f->forged++;
    memset(&pkt, 0, sizeof(pkt));
    memcpy(pkt.net.dmac, dst->n.h->core.cfg.mac, 6);
    memcpy(pkt.net.smac, src->n.h->core.cfg.mac, 6);
    /*
     * IPv4 (GID 0) or IPv6 (GID 1), with a VLAN tag or not; the groups
     * are IPv4, and so is their sender.
     */
    if (net & 8) {
        net &= ~1;
    }
    memcpy(pkt.net.sgid, net & 1 ? src->gid6 : src->n.gid, 16);
    memcpy(pkt.net.dgid, net & 1 ? dst->gid6 : dst->n.gid, 16);
    pkt.net.vlan = net & 2;
    pkt.net.vlan_tci = net & 2 ? in_u16(in) : 0;
    pkt.net.flow_label = net & 4 ? in_u32(in) & 0xfffff : 0;
    pkt.net.traffic_class = net >> 4;
    if (net & 8) {
        /* To a multicast group 239.1.1.n (RFC 1112 MAC), QPN 0xffffff. */
        static const uint8_t mcast_mac[5] = { 0x01, 0x00, 0x5e, 0x01, 0x01 };

        mcast_gid(pkt.net.dgid, in_u8(in));
        memcpy(pkt.net.dmac, mcast_mac, 5);
        pkt.net.dmac[5] = pkt.net.dgid[15];
    }
    pkt.net.hop_limit = 64;
    pkt.net.udp_sport = 0xc000 | in_u16(in);

    pkt.tp.bth.opcode = opsel < 0xe0 ? to->transport | (opsel % 0x18) :
                        in_u8(in);
    response = (pkt.tp.bth.opcode & 0x1f) >=
               VHCA_IB_OP_RDMA_READ_RESPONSE_FIRST &&
               (pkt.tp.bth.opcode & 0x1f) <= VHCA_IB_OP_ATOMIC_ACKNOWLEDGE;
    pkt.tp.bth.solicited = flags & 1;
    pkt.tp.bth.ack_req = flags & 2;
    pkt.tp.bth.mig_req = flags & 4;
    pkt.tp.bth.pkey = flags & 8 ? in_u16(in) : 0xffff;
    pkt.tp.bth.dest_qpn = flags & 0x10 ? in_u32(in) & VHCA_IB_QPN_MASK :
                          net & 8 ? VHCA_IB_QPN_MASK :
                          flags & 0x20 ? to->alt_qpn :
                          response ? to->rsp_qpn : to->req_qpn;
    pkt.tp.bth.psn = fuzz_in_psn(in, &dst->n.h->core,
                                 response ? to->rsp_qpn : to->req_qpn,
                                 response);
    pkt.tp.xrc_srqn = to->xrc_srqn;
    pkt.tp.reth.va = in_va(in, dst);
    pkt.tp.reth.rkey = in_key(in, dst);
    pkt.tp.reth.dma_len = flags & 0x40 ? in_u32(in) : in_u16(in);
    pkt.tp.atomic.va = in_va(in, dst) & ~7ull;
    pkt.tp.atomic.rkey = in_key(in, dst);
    pkt.tp.atomic.swap_add = in_u64(in);
    pkt.tp.atomic.compare = in_u64(in);
    pkt.tp.aeth.syndrome = in_u8(in);
    pkt.tp.aeth.msn = in_u32(in) & VHCA_IB_QPN_MASK;
    pkt.tp.deth.qkey = flags & 0x80 ? in_u32(in) : UD_QKEY;
    pkt.tp.deth.src_qpn = to->src_qpn;
    pkt.tp.atomic_orig = in_u64(in);
    pkt.tp.imm_data = in_u32(in);
    pkt.tp.inv_rkey = in_key(in, dst);
    len = fuzz_build_packet(&pkt, in_u16(in) % (1024 + 64 + 1), sel,
                            to->transport | VHCA_IB_OP_SEND_ONLY, frame,
                            sizeof(frame), &unknown);
    if (unknown) {
        frame[bth_offset(frame, len)] = pkt.tp.bth.opcode;
        frame_fixup(frame, len);
    }
    bth = bth_offset(frame, len);
    g_assert_cmpuint(bth, >, 0);

    /* Afterwards: PadCnt, a byte of the headers, truncation, the ICRC. */
    if (post & 1) {
        frame[bth + 1] = (frame[bth + 1] & ~0x30) | (in_u8(in) & 0x30);
    }
    if (post & 2) {
        uint16_t off = in_u16(in);
        uint8_t val = in_u8(in);

        if (len > bth + VHCA_IB_ICRC_LEN) {
            frame[bth + off % (len - bth - VHCA_IB_ICRC_LEN)] ^= val | 1;
        }
    }
    if (post & 4) {
        len -= in_u16(in) % (len + 1);
    }
    if (post & 8) {
        /* Ethernet padding after the datagram, which the parser skips. */
        uint8_t extra = in_u8(in) % 64;

        memset(frame + len, 0xee, extra);
        len += extra;
    } else if (!(post & 0x10)) {
        frame_fixup(frame, len);
    }
    /* post & 0x10: keep the ICRC as it is, right or wrong. */
    long_taint(dst->n.h, frame, len, bth);
    fuzz_deliver(dst->n.h, frame, len);
    run_pair(f);
}

/* ---------------------------------------------------------------------- */
/* Work requests                                                          */
/* ---------------------------------------------------------------------- */

static const uint8_t send_opcodes[] = {
    VHCA_WR_RDMA_WRITE, VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WR_SEND,
    VHCA_WR_SEND_WITH_IMM, VHCA_WR_RDMA_READ, VHCA_WR_ATOMIC_CMP_AND_SWP,
    VHCA_WR_ATOMIC_FETCH_AND_ADD, VHCA_WR_SEND_WITH_INV, VHCA_WR_FLUSH,
    VHCA_WR_ATOMIC_WRITE, VHCA_WR_LOCAL_INV, VHCA_WR_REG_MR,
    VHCA_WR_BIND_MW,
};

/* An SGE in one of our MRs (any length), or anywhere. */
static void in_sge(FuzzIn *in, FuzzNode *fn, struct vhca_sge *s)
{
    uint8_t mode = in_u8(in);
    uint64_t addr = in_va(in, fn);
    uint32_t len;

    len = mode & 1 ? in_u32(in) : in_u16(in) % 8192;
    s->addr = GUINT64_TO_LE(addr);
    s->length = GUINT32_TO_LE(len);
    s->lkey = GUINT32_TO_LE(in_key(in, fn));
}

/*
 * Ring @reg of @object at @pi, or at an index or for an object the input
 * mutated.  A mutated send queue index may run old WQEs again (a BIND_MW
 * or REG_MR the key model did not see); a raw object may be the second
 * RC pair's.
 */
static void ring(FuzzNode *fn, FuzzIn *in, uint32_t reg, uint32_t object,
                 uint32_t pi)
{
    uint8_t mode = in_u8(in);

    if (mode >= 0xf0) {
        pi += (int8_t)in_u8(in);
        fn->km_off |= reg == VHCA_DB_SQ;
    }
    if (mode == 0xff) {
        object = in_u32(in);
        if (reg != VHCA_DB_SRQ && object == fn->lqp.qpn) {
            fz->long_tainted = true;
        }
    }
    ring_doorbell(fn->n.h, fn->n.page, reg, object, pi);
}

static void op_send_wqe(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    unsigned q = ((sel >> 1) & 3) % FQ__N;
    uint8_t opsel = in_u8(in), nsge = in_u8(in);
    uint8_t opcode = opsel < 0xf0 ?
                     send_opcodes[opsel % G_N_ELEMENTS(send_opcodes)] :
                     in_u8(in);
    struct vhca_send_wqe w;
    unsigned i;

    /* The opcode's byte, then the flags' (in this order, any compiler). */
    wqe_init(&w, ++fn->wr_id, opcode, in_u8(in));
    /*
     * REG_MR reads its registration from the SGE area: whatever the SGEs
     * below hold, so its pages may be anywhere.
     */
    if (w.opcode == VHCA_WR_REG_MR) {
        fn->named_bad_addr = true;
        fn->shadow_unknown = true;
    }
    /* A bind or a registration the key model does not follow. */
    if (w.opcode == VHCA_WR_REG_MR || w.opcode == VHCA_WR_BIND_MW) {
        fn->km_off = true;
    }
    w.num_sge = nsge < 0xf0 ? nsge % (VHCA_MAX_SEND_SGE + 1) : nsge;
    for (i = 0; i < MIN(w.num_sge, VHCA_MAX_SEND_SGE); i++) {
        in_sge(in, fn, &w.sge[i]);
    }
    w.imm_or_inv = GUINT32_TO_LE(sel & 0x80 ? in_key(in, peer) : in_u32(in));
    if (fq_ud(q)) {
        w.dest_qpn = GUINT32_TO_LE(sel & 0x40 ? in_u32(in) :
                                   peer->q[q].qpn);
        w.qkey = GUINT32_TO_LE(sel & 0x20 ? in_u32(in) : UD_QKEY);
        memcpy(w.av.dgid, peer->n.gid, 16);
        memcpy(w.av.dmac, peer->n.h->core.cfg.mac, 6);
        w.av.sgid_index = sel & 0x10 ? in_u8(in) : 0;
        w.av.hop_limit = 64;
    } else {
        w.remote_addr = GUINT64_TO_LE(in_va(in, peer));
        /* BIND_MW names a window of ours (ALLOC_MW added its key). */
        w.rkey = GUINT32_TO_LE(in_key(in, w.opcode == VHCA_WR_BIND_MW ? fn
                                                                      : peer));
        w.compare_add = GUINT64_TO_LE(in_u64(in));
        w.swap = GUINT64_TO_LE(in_u64(in));
    }
    if (w.flags & VHCA_WQE_INLINE) {
        w.inline_len = GUINT32_TO_LE(in_u16(in));
    }
    qp_put_send_wqe(fn->n.h, fn->q[q].qp, &w);
    ring(fn, in, VHCA_DB_SQ, fn->q[q].qpn, fn->q[q].qp->sq_pi);
    run_pair(f);
}

/*
 * SRQ commands after a receive WQE on an SRQ, as @sel's high bits ask:
 * arm the limit (perhaps past the size), move to the spare ring with a
 * new size (perhaps too small for what is posted), query, destroy (the
 * basic SRQ: BUSY while its QP lives; an XRC SRQ goes, perhaps in the
 * middle of a message, and is made again).
 */
static void srq_commands(FuzzNode *fn, FuzzSrq *srq, FuzzIn *in, uint8_t sel)
{
    Harness *h = fn->n.h;
    struct vhca_srq_attr a;

    memset(&a, 0, sizeof(a));
    a.srqn = GUINT32_TO_LE(srq->srqn);
    if (sel & 0x08) {
        a.attr_mask = GUINT32_TO_LE(VHCA_SRQ_LIMIT);
        a.limit = GUINT32_TO_LE(in_u8(in) % 24);
        rdma_cmd(h, VHCA_CMD_MODIFY_SRQ, &a, sizeof(a), NULL, NULL);
    }
    if (sel & 0x10) {
        uint8_t log = 1 + in_u8(in) % SRQ_MAX_LOG;

        a.attr_mask = GUINT32_TO_LE(VHCA_SRQ_MAX_WR | (sel & 0x80 ?
                                                       VHCA_SRQ_LIMIT : 0));
        a.log_size = log;
        a.pbl_addr = GUINT64_TO_LE(srq->pbl[!srq->cur]);
        a.npages = GUINT32_TO_LE(SRQ_RING_PAGES);
        if (rdma_cmd(h, VHCA_CMD_MODIFY_SRQ, &a, sizeof(a), NULL, NULL) ==
            VHCA_ST_OK) {
            srq->cur = !srq->cur;
            srq->log = log;
        }
    }
    if (sel & 0x20) {
        rdma_cmd(h, VHCA_CMD_QUERY_SRQ, &a, sizeof(a), NULL, NULL);
    }
    if (sel & 0x40) {
        if (rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, srq->srqn) == VHCA_ST_OK &&
            srq->xrcdn) {
            srq_make(fn, srq);
        }
    }
}

static void op_recv_wqe(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in), nsge = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1];
    unsigned q = ((sel >> 1) & 3) % FQ__N;
    struct vhca_recv_wqe w;
    unsigned i;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(++fn->wr_id);
    w.num_sge = nsge < 0xf0 ? nsge % (VHCA_MAX_RECV_SGE + 1) : nsge;
    for (i = 0; i < MIN(w.num_sge, VHCA_MAX_RECV_SGE); i++) {
        in_sge(in, fn, &w.sge[i]);
    }
    if (q != FQ_SRQ) {
        qp_put_recv_wqe(fn->n.h, fn->q[q].qp, &w);
        ring(fn, in, VHCA_DB_RQ, fn->q[q].qpn, fn->q[q].qp->rq_pi);
    } else {
        srq_put(fn, &fn->srq, &w);
        ring(fn, in, VHCA_DB_SRQ, fn->srq.srqn, fn->srq.pi);
        srq_commands(fn, &fn->srq, in, sel);
    }
    run_pair(f);
}

/* A well-formed message on a QP, to have traffic to mutate in flight. */
static void op_traffic(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    unsigned q = ((sel >> 1) & 3) % FQ__N;
    uint8_t opcode = send_opcodes[in_u8(in) % G_N_ELEMENTS(send_opcodes)];
    uint32_t len = in_u16(in) % (4 * 4096 + 1);
    uint32_t off = (in_u16(in) % 32) * 4096;
    struct vhca_send_wqe w;

    if (fq_ud(q)) {
        opcode = VHCA_WR_SEND;
        len %= 1025;
    }
    if (opcode == VHCA_WR_ATOMIC_CMP_AND_SWP ||
        opcode == VHCA_WR_ATOMIC_FETCH_AND_ADD) {
        len = 8;
    }
    wqe_init(&w, ++fn->wr_id, opcode, VHCA_WQE_SIGNALED);
    wqe_sge(&w, fn->n.buf + off, len, fn->keys[0]);
    if (opcode == VHCA_WR_FLUSH) {
        /* Global visibility; the length's low bit picks the level. */
        w.flush_len = GUINT32_TO_LE(len);
        w.flush_type = VHCA_FLUSH_GLOBAL;
        w.flush_level = len & 1 ? VHCA_FLUSH_MR : VHCA_FLUSH_RANGE;
    } else if (opcode == VHCA_WR_ATOMIC_WRITE) {
        w.compare_add = GUINT64_TO_LE(0x0123456789abcdefull ^ len);
    }
    if (fq_ud(q)) {
        w.dest_qpn = GUINT32_TO_LE(peer->q[q].qpn);
        w.qkey = GUINT32_TO_LE(UD_QKEY);
        memcpy(w.av.dgid, peer->n.gid, 16);
        memcpy(w.av.dmac, peer->n.h->core.cfg.mac, 6);
        w.av.hop_limit = 64;
    } else {
        wqe_remote(&w, peer->n.buf + off, peer->keys[0]);
    }
    qp_put_send_wqe(fn->n.h, fn->q[q].qp, &w);
    ring_doorbell(fn->n.h, fn->n.page, VHCA_DB_SQ, fn->q[q].qpn,
                  fn->q[q].qp->sq_pi);
    /* Keep the peer's receive queue stocked, unless RNR is the point. */
    if (!(sel & 0x80)) {
        recv_wqe(peer, q, q * RWQES + recv_pi(peer, q) % RWQES);
        ring_recv(peer, q);
    }
    run_pair(f);
}

/* ---------------------------------------------------------------------- */
/* Admin commands                                                         */
/* ---------------------------------------------------------------------- */

static uint32_t in_qpn(FuzzIn *in, FuzzNode *fn)
{
    uint8_t mode = in_u8(in);

    return mode < 0xf0 ? fn->q[mode % FQ__N].qpn : in_u32(in);
}

/*
 * A MODIFY_QP's state, mask, MTU and PSNs from the input, then @n bytes
 * anywhere in the structure (op_admin() and op_xrc()).
 */
static void mutate_modify_qp(FuzzIn *in, struct vhca_qp_attr *a, uint8_t n)
{
    uint8_t *raw = (uint8_t *)a;

    a->qp_state = in_u8(in) % (VHCA_QPS_ERR + 2);
    a->attr_mask = in_u32(in);
    a->path_mtu = in_u8(in) % 7;
    a->sq_psn = in_u32(in) & VHCA_IB_QPN_MASK;
    a->rq_psn = in_u32(in) & VHCA_IB_QPN_MASK;
    while (n--) {
        uint8_t off = in_u8(in) % sizeof(*a);

        raw[off] = in_u8(in);
    }
}

static void op_admin(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    Harness *h = fn->n.h;

    switch ((sel >> 1) % 7) {
    case 0: {                   /* MODIFY_QP, fields near the good ones */
        struct vhca_qp_attr a;
        uint8_t n = in_u8(in) % 8;

        qp_good_attr(&a, in_qpn(in, fn));
        a.qpn = in_qpn(in, fn);
        memcpy(a.dgid, peer->n.gid, 16);
        memcpy(a.dmac, peer->n.h->core.cfg.mac, 6);
        a.dest_qp_num = peer->q[in_u8(in) % FQ__N].qpn;
        mutate_modify_qp(in, &a, n);
        if (a.qpn == fn->lqp.qpn) {
            f->long_tainted = true;
        }
        /*
         * RESET empties the rings: the driver's producer indices no
         * longer match, and its next doorbell runs old WQEs again.
         */
        if (rdma_modify_qp(h, &a) == VHCA_ST_OK &&
            (a.attr_mask & VHCA_QP_STATE) && a.qp_state == VHCA_QPS_RESET) {
            fn->km_off = true;
        }
        break;
    }
    case 1: {                   /* QUERY_QP */
        struct vhca_qp_attr a;

        rdma_query_qp(h, in_qpn(in, fn), &a);
        break;
    }
    case 2: {                   /* CREATE_MR over our buffer, or anywhere */
        struct vhca_mr_create c;
        uint8_t mode = in_u8(in);
        uint32_t key = 0;

        memset(&c, 0, sizeof(c));
        c.pdn = GUINT32_TO_LE(mode & 1 ? fn->pd2 : fn->n.pdn);
        c.access = GUINT32_TO_LE(in_u8(in) & 0x1f);
        if (mode & 4) {
            /*
             * Through a page list: the first one's, with other sizes.
             * Past its end the list is whatever RAM holds, which may name
             * any address.
             */
            fn->named_bad_addr = true;
            fn->shadow_unknown = true;
            c.iova = GUINT64_TO_LE(in_u64(in));
            c.offset = GUINT32_TO_LE(in_u16(in));
            c.length = GUINT64_TO_LE(mode & 8 ? in_u64(in) : in_u32(in));
            c.pbl_addr = GUINT64_TO_LE(mode & 0x10 ? in_u64(in) :
                                       fn->pbl[in_u8(in) & 1]);
            c.npages = GUINT32_TO_LE(in_u16(in));
            c.page_shift = in_u8(in);
            c.pbl_levels = in_u8(in) % 4;
            c.flags = GUINT16_TO_LE(mode & 2 ? in_u16(in) :
                                    mode & 0x20 ? VHCA_MR_FAST_REG : 0);
        } else if (mode < 0xe0) {
            c.iova = GUINT64_TO_LE(fn->n.buf + in_u16(in) * 16ull);
            c.length = GUINT64_TO_LE(in_u32(in) % (DATA_PAGES * 4096));
            c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
        } else {
            fn->named_bad_addr = true;
            c.iova = GUINT64_TO_LE(in_u64(in));
            c.length = GUINT64_TO_LE(in_u64(in));
            c.flags = GUINT16_TO_LE(mode & 2 ? in_u16(in) : VHCA_MR_PHYS);
        }
        c.key_tag = GUINT32_TO_LE(in_u32(in));
        if (rdma_cmd(h, VHCA_CMD_CREATE_MR, &c, sizeof(c), NULL, &key) ==
            VHCA_ST_OK) {
            if (fn->nkeys < MAX_KEYS) {
                fn->keys[fn->nkeys++] = key;
            }
            if (GUINT16_FROM_LE(c.flags) == VHCA_MR_PHYS) {
                shadow_add(fn, key, GUINT64_FROM_LE(c.iova),
                           GUINT64_FROM_LE(c.length),
                           GUINT32_FROM_LE(c.access));
            } else {
                fn->shadow_unknown = true;
            }
        }
        break;
    }
    case 3: {                   /* DESTROY_MR, _CQ, _QP of ours or any */
        static const uint16_t ops[] = {
            VHCA_CMD_DESTROY_MR, VHCA_CMD_DESTROY_CQ, VHCA_CMD_DESTROY_QP,
            VHCA_CMD_DESTROY_PD,
        };
        uint8_t which = in_u8(in);
        uint32_t handle = in_u32(in);

        if (which % 4 == 0 && !(which & 0x80)) {
            handle = fn->keys[handle % fn->nkeys];
        } else if (which % 4 == 2 && !(which & 0x80)) {
            handle = fn->q[handle % FQ__N].qpn;
        } else if (!(which & 0x80)) {
            handle %= 16;
        }
        if (handle == fn->lqp.qpn || handle == fn->long_cq.cqn ||
            handle == fn->pd3 || handle >> 8 == fn->long_key >> 8) {
            f->long_tainted = true;
        }
        if (rdma_destroy(h, ops[which % 4], handle) == VHCA_ST_OK &&
            ops[which % 4] == VHCA_CMD_DESTROY_MR) {
            unsigned km = km_of(fn, handle);

            shadow_destroyed(fn, handle);
            /* Its index may name another MR soon: no key to watch. */
            if (km < KM__N) {
                fn->km[km].key = fn->km[km].dead = 0;
                fn->km[km].epoch++;
            }
        }
        break;
    }
    case 4: {                   /* any command, its mailbox from the input */
        uint8_t mbox[256];
        uint16_t opcode = in_u8(in) % (VHCA_CMD_MAX + 2);
        size_t len = in_u8(in), i;

        /* Mailbox contents are addresses too. */
        fn->named_bad_addr = true;
        fn->shadow_unknown = true;
        /* And handles: windows, MRs at an index, the second pair's. */
        fn->km_off = true;
        f->long_tainted = true;
        for (i = 0; i < len; i++) {
            mbox[i] = in_u8(in);
        }
        {
            uint32_t handle = 0;
            uint8_t st = rdma_cmd(h, opcode, mbox, len, &handle, NULL);

            note_created(fn, opcode, st, handle);
        }
        break;
    }
    case 6: {                   /* ATTACH or DETACH_MCAST, ours or any */
        struct vhca_cmd_mcast_in c;
        uint8_t mode = in_u8(in);

        memset(&c, 0, sizeof(c));
        c.qpn = GUINT32_TO_LE(in_qpn(in, fn));
        if (mode & 2) {
            for (unsigned i = 0; i < 16; i++) {
                c.gid[i] = in_u8(in);
            }
        } else {
            mcast_gid(c.gid, in_u8(in));
        }
        admin_cmd(h, mode & 1 ? VHCA_CMD_DETACH_MCAST : VHCA_CMD_ATTACH_MCAST,
                  in_u32(in), &c, sizeof(c), NULL);
        break;
    }
    default: {                  /* the command entry itself */
        uint8_t cmdin[sizeof(((struct vhca_admin_cmd *)0)->in)];
        uint16_t opcode = in_u8(in) % (VHCA_CMD_MAX + 2);
        size_t i;

        fn->named_bad_addr = true;
        fn->shadow_unknown = true;
        fn->km_off = true;
        f->long_tainted = true;
        for (i = 0; i < sizeof(cmdin); i++) {
            cmdin[i] = in_u8(in);
        }
        {
            struct vhca_cmd_obj_out out;
            uint8_t st = admin_cmd(h, opcode, in_u32(in), cmdin,
                                   sizeof(cmdin), &out);

            note_created(fn, opcode, st, GUINT32_FROM_LE(out.handle));
            /* A window: its key for BIND_MW, and peers' RDMA, to name. */
            if (opcode == VHCA_CMD_ALLOC_MW && st == VHCA_ST_OK &&
                fn->nkeys < MAX_KEYS) {
                fn->keys[fn->nkeys++] = GUINT32_FROM_LE(out.key);
            }
        }
        break;
    }
    }
    run_pair(f);
}

/* ---------------------------------------------------------------------- */
/* XRC                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * The XRC SRQ a request to @tgt's target names: one of its XRC SRQs
 * (*@k, or XSRQ_N for none: its basic SRQ, or any number).
 */
static uint32_t in_srqn(FuzzIn *in, FuzzNode *tgt, unsigned *k)
{
    uint8_t mode = in_u8(in);

    *k = XSRQ_N;
    if (mode >= 0xf0) {
        return in_u32(in);
    }
    if (mode % (XSRQ_N + 1) == XSRQ_N) {
        return tgt->srq.srqn;
    }
    *k = mode % (XSRQ_N + 1);
    return tgt->xsrq[*k].srqn;
}

/*
 * A receive WQE for a message of @len to @fn's XRC SRQ @k (XSRQ_N: none),
 * as @mode asks: one that fits, none (RNR), or one of 64 bytes.
 */
static void xrc_repost(FuzzNode *fn, unsigned k, uint8_t mode, uint32_t len)
{
    FuzzSrq *srq = &fn->xsrq[k];
    struct vhca_recv_wqe w;

    if (k == XSRQ_N || mode == 2) {
        return;
    }
    if (mode < 2 || !len) {
        xrc_recv_wqe(fn, k, srq->pi);
        return;
    }
    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(++fn->wr_id);
    w.num_sge = 1;
    w.sge[0].addr = GUINT64_TO_LE(srq->rbuf);
    w.sge[0].length = GUINT32_TO_LE(64);
    w.sge[0].lkey = GUINT32_TO_LE(srq->lkey);
    srq_put(fn, srq, &w);
    srq_ring(fn, srq);
}

/*
 * A WQE on @fn's initiator: any opcode and flags, up to 16 KiB (several
 * packets), one SGE well-formed or mutated, the peer's keys (windows and
 * the fast-register MR among them) to reach or invalidate, and the XRC
 * SRQ it names, with a receive WQE there or not.
 */
static void xrc_wqe(FuzzNode *fn, FuzzNode *peer, FuzzIn *in)
{
    uint8_t opsel = in_u8(in), flags = in_u8(in), mode = in_u8(in);
    uint32_t len = in_u16(in) % (XRC_MSG_MAX + 1);
    uint32_t off = (in_u16(in) % 48) * 4096;
    struct vhca_send_wqe w;
    unsigned k;

    wqe_init(&w, ++fn->wr_id,
             opsel < 0xf0 ? send_opcodes[opsel % G_N_ELEMENTS(send_opcodes)]
                          : in_u8(in), flags);
    /* As op_send_wqe(): the registration is whatever the SGE area holds. */
    if (w.opcode == VHCA_WR_REG_MR) {
        fn->named_bad_addr = true;
        fn->shadow_unknown = true;
    }
    if (w.opcode == VHCA_WR_REG_MR || w.opcode == VHCA_WR_BIND_MW) {
        fn->km_off = true;
    }
    if (mode & 1) {
        w.num_sge = 1;
        in_sge(in, fn, &w.sge[0]);
    } else if (len) {
        wqe_sge(&w, fn->n.buf + off, len, fn->keys[0]);
    }
    if (w.flags & VHCA_WQE_INLINE) {
        w.inline_len = GUINT32_TO_LE(len);
    }
    w.remote_addr = GUINT64_TO_LE(in_va(in, peer));
    w.rkey = GUINT32_TO_LE(in_key(in, peer));
    w.imm_or_inv = GUINT32_TO_LE(mode & 2 ? in_key(in, peer) : in_u32(in));
    w.compare_add = GUINT64_TO_LE(in_u64(in));
    w.swap = GUINT64_TO_LE(in_u64(in));
    w.xrc_srqn = GUINT32_TO_LE(in_srqn(in, peer, &k));
    qp_put_send_wqe(fn->n.h, &fn->ini, &w);
    ring(fn, in, VHCA_DB_SQ, fn->ini.qpn, fn->ini.sq_pi);
    xrc_repost(peer, k, (mode >> 2) & 3, len);
}

/*
 * An XRC frame from the wire: a request to the peer's target naming one
 * of its SRQs (or any), or a response to its initiator.
 */
static void xrc_frame(Fuzz *f, FuzzIn *in, uint8_t sel)
{
    FuzzNode *src = &f->node[sel & 1], *dst = &f->node[!(sel & 1)];
    FrameTo to = {
        .transport = VHCA_IB_TRANSPORT_XRC,
        .req_qpn = dst->tgt_qpn,
        .rsp_qpn = dst->ini.qpn,
        /* An RC QP, to which XRC opcodes mean nothing. */
        .alt_qpn = dst->n.qp.qpn,
        .src_qpn = src->ini.qpn,
    };
    unsigned k;

    /* 24 bits, or vhca_wire_build() refuses the frame. */
    to.xrc_srqn = in_srqn(in, dst, &k) & VHCA_IB_QPN_MASK;
    frame_send(f, in, sel, &to);
}

/*
 * A receive WQE on one of @fn's XRC SRQs (SG list mutated, or one that
 * fits any message), its doorbell, then the SRQ commands @cmds asks for.
 */
static void xrc_recv(FuzzNode *fn, FuzzIn *in)
{
    uint8_t which = in_u8(in), cmds = in_u8(in), nsge = in_u8(in);
    FuzzSrq *srq = &fn->xsrq[which % XSRQ_N];
    struct vhca_recv_wqe w;
    unsigned i;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(++fn->wr_id);
    if (which & 0x80) {
        w.num_sge = 1;
        w.sge[0].addr = GUINT64_TO_LE(srq->rbuf);
        w.sge[0].length = GUINT32_TO_LE(XRC_RECV_LEN);
        w.sge[0].lkey = GUINT32_TO_LE(srq->lkey);
    } else {
        w.num_sge = nsge < 0xf0 ? nsge % (VHCA_MAX_RECV_SGE + 1) : nsge;
        for (i = 0; i < MIN(w.num_sge, VHCA_MAX_RECV_SGE); i++) {
            in_sge(in, fn, &w.sge[i]);
        }
    }
    srq_put(fn, srq, &w);
    ring(fn, in, VHCA_DB_SRQ, srq->srqn, srq->pi);
    srq_commands(fn, srq, in, cmds);
}

/* A PSN near the end of the 24-bit space (to wrap), or any. */
static uint32_t in_start_psn(FuzzIn *in)
{
    uint8_t mode = in_u8(in);

    return mode < 0x80 ? VHCA_IB_QPN_MASK - (uint32_t)mode
                       : in_u32(in) & VHCA_IB_QPN_MASK;
}

/*
 * The XRC pair of @fn's initiator and the peer's target: brought up
 * again from RESET (path MTU, PSNs), a side moved to ERR or SQD, a
 * mutated MODIFY_QP, QUERY_QP, DEALLOC_XRCD of a domain in use.
 */
static void xrc_modify(Fuzz *f, FuzzNode *fn, FuzzNode *peer, FuzzIn *in)
{
    uint8_t how = in_u8(in);
    FuzzNode *side = how & 4 ? peer : fn;
    uint32_t qpn = how & 4 ? peer->tgt_qpn : fn->ini.qpn;
    struct vhca_qp_attr a;

    switch (how & 3) {
    case 0: {
        uint8_t mtu = VHCA_IB_MTU_256 + in_u8(in) % 5;
        uint32_t ini_psn = in_start_psn(in), tgt_psn = in_start_psn(in);

        /* A frame held back on the wire belongs to the old connection. */
        f->wire.held_len = 0;
        qp_reset(fn->n.h, fn->ini.qpn, &fn->ini);
        qp_reset(peer->n.h, peer->tgt_qpn, NULL);
        xrc_connect(fn, fn->ini.qpn, false, peer, peer->tgt_qpn, ini_psn,
                    tgt_psn, mtu);
        xrc_connect(peer, peer->tgt_qpn, true, fn, fn->ini.qpn, tgt_psn,
                    ini_psn, mtu);
        f->xrc_clean[fn == &f->node[1]] = f->forged;
        break;
    }
    case 1:
        memset(&a, 0, sizeof(a));
        a.qpn = qpn;
        a.attr_mask = VHCA_QP_STATE;
        if (how & 8) {
            a.qp_state = VHCA_QPS_SQD;
            a.attr_mask |= VHCA_QP_EN_SQD_ASYNC_NOTIFY;
            a.en_sqd_async_notify = 1;
        } else {
            a.qp_state = VHCA_QPS_ERR;
        }
        rdma_modify_qp(side->n.h, &a);
        break;
    case 2: {
        uint8_t n = in_u8(in) % 4;

        qp_good_attr(&a, qpn);
        memcpy(a.dgid, (how & 4 ? fn : peer)->n.gid, 16);
        memcpy(a.dmac, (how & 4 ? fn : peer)->n.h->core.cfg.mac, 6);
        a.dest_qp_num = how & 4 ? fn->ini.qpn : peer->tgt_qpn;
        mutate_modify_qp(in, &a, n);
        if (a.qpn == side->lqp.qpn) {
            f->long_tainted = true;
        }
        /* RESET: the initiator's send queue starts again (op_admin()). */
        if (rdma_modify_qp(side->n.h, &a) == VHCA_ST_OK &&
            (a.attr_mask & VHCA_QP_STATE) && a.qp_state == VHCA_QPS_RESET) {
            side->km_off = true;
        }
        break;
    }
    default:
        rdma_query_qp(side->n.h, qpn, &a);
        /* BUSY: the target and the SRQs use them. */
        rdma_destroy(side->n.h, VHCA_CMD_DEALLOC_XRCD,
                     how & 8 ? side->xrcdn2 : side->xrcdn);
        break;
    }
}

static void op_xrc(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];

    switch ((sel >> 1) & 3) {
    case 0:
        xrc_wqe(fn, peer, in);
        break;
    case 1:
        xrc_frame(f, in, sel);
        return;
    case 2:
        xrc_recv(fn, in);
        break;
    default:
        xrc_modify(f, fn, peer, in);
        break;
    }
    run_pair(f);
}

/* ---------------------------------------------------------------------- */
/* Memory windows and the fast-register MR                                */
/* ---------------------------------------------------------------------- */

/*
 * A key for model entry @m: the one it answers to, one it no longer
 * does (or the next tag), another tag of its index, or a mutated one.
 */
static uint32_t in_km_key(FuzzIn *in, const KeyModel *m)
{
    uint8_t mode = in_u8(in);

    if (mode < 0xa0) {
        return m->key;
    } else if (mode < 0xc0) {
        return m->dead ? m->dead : m->key ^ 1;
    } else if (mode < 0xe0) {
        return (m->key & ~0xffu) | in_u8(in);
    }
    return m->key ^ in_u32(in);
}

/* Rights from one byte: the low four, ZERO_BASED, FLUSH_GLOBAL. */
static uint32_t in_rights(FuzzIn *in)
{
    uint8_t acc = in_u8(in);

    return (acc & 0x0f) | (acc & 0x10 ? VHCA_ACCESS_ZERO_BASED : 0) |
           (acc & 0x20 ? VHCA_ACCESS_FLUSH_GLOBAL : 0) |
           (acc & 0x40 ? VHCA_ACCESS_MW_BIND : 0);
}

/* A local WQE's QP: mostly the RC QP; the UC, UD or XRC initiator. */
static TestQp *local_qp(FuzzNode *fn, uint8_t n)
{
    switch (n % 8) {
    case 4:
        return &fn->uc;
    case 5:
        return &fn->ud;
    case 6:
        return &fn->ini;
    default:
        return &fn->n.qp;
    }
}

static void post_local(FuzzNode *fn, TestQp *qp, const struct vhca_send_wqe *w)
{
    qp_put_send_wqe(fn->n.h, qp, w);
    ring_doorbell(fn->n.h, fn->n.page, VHCA_DB_SQ, qp->qpn, qp->sq_pi);
}

/*
 * BIND_MW of window @m: the key it is named by, its new tag (or another
 * index), the MR (the one with MW_BIND, another key, a mutated one), the
 * range (in that MR, or any), the rights (ZERO_BASED too), on a QP.
 */
static void mw_bind(FuzzNode *fn, KeyModel *m, FuzzIn *in)
{
    uint8_t qsel = in_u8(in), mode = in_u8(in);
    uint32_t key = in_km_key(in, m);
    uint32_t new_key = mode & 0x80 ? in_u32(in)
                                   : (key & ~0xffu) | in_u8(in);
    struct vhca_send_wqe w;
    uint32_t mr = fn->mw_mr;
    uint64_t addr, len;
    uint32_t access;
    unsigned km;

    if ((mode & 3) == 2) {
        mr = in_key(in, fn);
    } else if ((mode & 3) == 3) {
        mr ^= in_u32(in);
    }
    addr = mode & 4 ? in_u64(in)
                    : fn->xbuf + MW_OFF + in_u16(in) % MW_LEN;
    len = mode & 8 ? in_u64(in) : in_u16(in) % (MW_LEN + 1);
    access = mode & 0x10 ? in_u32(in) : in_rights(in);
    wqe_init(&w, ++fn->wr_id, VHCA_WR_BIND_MW,
             VHCA_WQE_SIGNALED | (qsel & 0x40 ? VHCA_WQE_FENCE : 0));
    w.rkey = GUINT32_TO_LE(key);
    w.imm_or_inv = GUINT32_TO_LE(new_key);
    w.mw_mr_lkey = GUINT32_TO_LE(mr);
    w.mw_addr = GUINT64_TO_LE(addr);
    w.mw_length = GUINT64_TO_LE(len);
    w.mw_access = GUINT32_TO_LE(access);
    km_posted(fn, fn->wr_id, VHCA_WR_BIND_MW, key, new_key);
    km = km_of(fn, key);
    if (km < KM__N) {
        fn->km[km].wr_va = addr;
        fn->km[km].wr_zero_based = access & VHCA_ACCESS_ZERO_BASED;
        fn->km[km].wr_unbind = !len;
    }
    post_local(fn, local_qp(fn, qsel), &w);
}

/*
 * REG_MR of the fast-register MR: the pages of the region its page list
 * names (some of FR_PAGES, from any of them, in either order), the IOVA,
 * length, rights, a new tag, on a QP; or counts and a page size the
 * input gives.
 */
static void fr_register(FuzzNode *fn, KeyModel *m, FuzzIn *in)
{
    uint8_t qsel = in_u8(in), mode = in_u8(in), pages = in_u8(in);
    uint32_t key = in_km_key(in, m);
    uint32_t new_key = (key & ~0xffu) | in_u8(in);
    uint32_t npages = 1 + pages % FR_PAGES, first = pages >> 4, j;
    struct vhca_send_wqe w;
    uint64_t iova;

    for (j = 0; j < npages; j++) {
        uint32_t page = (first + (mode & 0x20 ? npages - 1 - j : j)) %
                        FR_PAGES;
        uint64_t le = GUINT64_TO_LE(fn->xbuf + FR_OFF + page * 4096ull);

        ram_write(fn->n.h, fn->fr_pbl + 8ull * j, &le, 8);
    }
    iova = mode & 4 ? in_u64(in) : FR_IOVA + in_u16(in) % 4096;
    wqe_init(&w, ++fn->wr_id, VHCA_WR_REG_MR,
             VHCA_WQE_SIGNALED | (qsel & 0x40 ? VHCA_WQE_FENCE : 0));
    w.imm_or_inv = GUINT32_TO_LE(new_key);
    w.mr_iova = GUINT64_TO_LE(iova);
    w.mr_length = GUINT64_TO_LE(mode & 8 ? in_u64(in)
                                         : in_u16(in) % (npages * 4096 + 1));
    w.mr_pbl_addr = GUINT64_TO_LE(fn->fr_pbl);
    w.mr_npages = GUINT32_TO_LE(mode & 0x40 ? in_u32(in) : npages);
    w.mr_access = GUINT32_TO_LE(mode & 0x10 ? in_u32(in) : in_rights(in));
    w.mr_page_shift = 12;
    if (mode & 0x80) {
        /*
         * Larger pages over the region's 4 KiB ones reach past it,
         * perhaps past guest RAM.
         */
        w.mr_page_shift = in_u8(in);
        fn->named_bad_addr = true;
        fn->shadow_unknown = true;
    }
    /*
     * From now on the device may write the region (while the MR is
     * valid, whichever MR it is: key 0 is no MR's, none destroys it).
     */
    if (!fn->fr_shadowed) {
        shadow_add(fn, 0, fn->xbuf + FR_OFF, FR_PAGES * 4096ull,
                   VHCA_ACCESS_LOCAL_WRITE);
        fn->fr_shadowed = true;
    }
    km_posted(fn, fn->wr_id, VHCA_WR_REG_MR, key, new_key);
    if (km_of(fn, key) < KM__N) {
        fn->km[km_of(fn, key)].wr_va = iova;
        fn->km[km_of(fn, key)].wr_zero_based = false;
        fn->km[km_of(fn, key)].wr_unbind = false;
    }
    post_local(fn, local_qp(fn, qsel), &w);
}

/* LOCAL_INV of a key of @m's, on a QP. */
static void km_local_inv(FuzzNode *fn, KeyModel *m, FuzzIn *in)
{
    uint8_t qsel = in_u8(in);
    uint32_t key = in_km_key(in, m);
    struct vhca_send_wqe w;

    wqe_init(&w, ++fn->wr_id, VHCA_WR_LOCAL_INV,
             VHCA_WQE_SIGNALED | (qsel & 0x40 ? VHCA_WQE_FENCE : 0));
    w.imm_or_inv = GUINT32_TO_LE(key);
    km_posted(fn, fn->wr_id, VHCA_WR_LOCAL_INV, key, key);
    post_local(fn, local_qp(fn, qsel), &w);
}

/*
 * The peer's RDMA or atomic through a key of @fn's entry @km (as it is,
 * invalidated, mutated), over RC or XRC (naming an SRQ), at the address
 * it was bound at, an offset (zero-based), or any; up to 16 KiB.  One
 * through a key known dead is remembered: it must not succeed.
 */
static void km_rdma(FuzzNode *fn, FuzzNode *peer, unsigned km, FuzzIn *in)
{
    static const uint8_t ops[] = {
        VHCA_WR_RDMA_WRITE, VHCA_WR_RDMA_READ, VHCA_WR_ATOMIC_FETCH_AND_ADD,
        VHCA_WR_ATOMIC_CMP_AND_SWP, VHCA_WR_ATOMIC_WRITE, VHCA_WR_FLUSH,
        VHCA_WR_RDMA_WRITE_WITH_IMM,
    };
    KeyModel *m = &fn->km[km];
    uint8_t how = in_u8(in);
    uint8_t opcode = ops[(how & 7) % G_N_ELEMENTS(ops)];
    uint32_t key = in_km_key(in, m);
    uint32_t len = in_u16(in) % (XRC_MSG_MAX + 1);
    uint32_t off = in_u16(in) % MW_LEN;
    bool xrc = how & 8, atomic;
    TestQp *qp = xrc ? &peer->ini : &peer->n.qp;
    struct vhca_send_wqe w;
    uint64_t va;
    unsigned k = XSRQ_N, i;

    switch ((how >> 4) & 3) {
    case 0:
        va = (m->zero_based ? 0 : m->va) + off;
        break;
    case 1:
        va = m->va + off;
        break;
    case 2:
        va = off;
        break;
    default:
        va = in_u64(in);
        break;
    }
    atomic = opcode == VHCA_WR_ATOMIC_FETCH_AND_ADD ||
             opcode == VHCA_WR_ATOMIC_CMP_AND_SWP ||
             opcode == VHCA_WR_ATOMIC_WRITE;
    if (atomic) {
        len = 8;
        va &= how & 0x40 ? ~0ull : ~7ull;
    }
    wqe_init(&w, ++peer->wr_id, opcode, VHCA_WQE_SIGNALED);
    if (opcode == VHCA_WR_FLUSH) {
        w.flush_len = GUINT32_TO_LE(len);
        w.flush_type = VHCA_FLUSH_GLOBAL;
        w.flush_level = how & 0x80 ? VHCA_FLUSH_MR : VHCA_FLUSH_RANGE;
    } else if (opcode == VHCA_WR_ATOMIC_WRITE) {
        w.compare_add = GUINT64_TO_LE(0x0123456789abcdefull ^ off);
    } else {
        if (len) {
            wqe_sge(&w, peer->n.buf + 0x30000, len, peer->keys[0]);
        }
        w.compare_add = GUINT64_TO_LE(off);
        w.swap = GUINT64_TO_LE(len);
    }
    wqe_remote(&w, va, key);
    if (xrc) {
        w.xrc_srqn = GUINT32_TO_LE(in_srqn(in, fn, &k));
    }
    qp_put_send_wqe(peer->n.h, qp, &w);
    ring_doorbell(peer->n.h, peer->n.page, VHCA_DB_SQ, qp->qpn, qp->sq_pi);
    /* WRITE with immediate takes a receive WQE. */
    if (opcode == VHCA_WR_RDMA_WRITE_WITH_IMM) {
        if (xrc) {
            xrc_repost(fn, k, 0, len);
        } else {
            recv_wqe(fn, FQ_RC, FQ_RC * RWQES + recv_pi(fn, FQ_RC) % RWQES);
            ring_recv(fn, FQ_RC);
        }
    }
    /*
     * IBTA 10.6.5, 10.6.7: no access through a key that names nothing
     * valid (zero-length RDMA names no key; FLUSH's rules differ).
     */
    if (!fn->km_off && m->dead && m->dead == key && !m->wr_id &&
        opcode != VHCA_WR_FLUSH && (atomic || len)) {
        for (i = 0; i < G_N_ELEMENTS(peer->dead_access); i++) {
            if (!peer->dead_access[i].wr_id) {
                peer->dead_access[i] = (DeadAccess){
                    peer->wr_id, km, m->epoch, xrc, key,
                };
                break;
            }
        }
    }
}

/*
 * The peer's SEND with Invalidate naming a key of @m's (as it is,
 * invalidated, mutated), over RC or XRC, with a receive WQE for it or
 * not.
 */
static void km_send_inv(FuzzNode *fn, FuzzNode *peer, KeyModel *m,
                        FuzzIn *in)
{
    uint8_t how = in_u8(in);
    uint32_t key = in_km_key(in, m);
    uint32_t len = in_u16(in) % (how & 1 ? XRC_MSG_MAX + 1 : RWQE_SIZE + 1);
    TestQp *qp = how & 1 ? &peer->ini : &peer->n.qp;
    struct vhca_send_wqe w;
    unsigned k = XSRQ_N;

    wqe_init(&w, ++peer->wr_id, VHCA_WR_SEND_WITH_INV,
             VHCA_WQE_SIGNALED | (how & 4 ? VHCA_WQE_SOLICITED : 0));
    if (len) {
        wqe_sge(&w, peer->n.buf + 0x30000, len, peer->keys[0]);
    }
    w.imm_or_inv = GUINT32_TO_LE(key);
    if (how & 1) {
        w.xrc_srqn = GUINT32_TO_LE(in_srqn(in, fn, &k));
    }
    qp_put_send_wqe(peer->n.h, qp, &w);
    ring_doorbell(peer->n.h, peer->n.page, VHCA_DB_SQ, qp->qpn, qp->sq_pi);
    if (how & 2) {
        return;                     /* no receive WQE: RNR */
    }
    if (how & 1) {
        xrc_repost(fn, k, 0, len);
    } else {
        recv_wqe(fn, FQ_RC, FQ_RC * RWQES + recv_pi(fn, FQ_RC) % RWQES);
        ring_recv(fn, FQ_RC);
    }
}

/*
 * DEALLOC_MW and ALLOC_MW again (in the node's PD or the other, of
 * either type or any, with a tag), or DESTROY_MR and CREATE_MR of the
 * fast-register MR: the entry's index may change, its key does.
 */
static void km_realloc(FuzzNode *fn, unsigned km, FuzzIn *in)
{
    KeyModel *m = &fn->km[km];
    uint8_t how = in_u8(in), tag = in_u8(in);
    uint32_t old = m->key, key;
    uint8_t type;

    if (!old) {
        return;
    }
    if (m->type) {
        if (rdma_destroy(fn->n.h, VHCA_CMD_DEALLOC_MW, old) != VHCA_ST_OK) {
            return;
        }
        type = how & 0x80 ? in_u8(in) : 1 + (how & 1);
        key = alloc_mw(fn->n.h, how & 2 ? fn->pd2 : fn->n.pdn, type, tag);
    } else {
        if (rdma_destroy(fn->n.h, VHCA_CMD_DESTROY_MR, old) != VHCA_ST_OK) {
            return;
        }
        shadow_destroyed(fn, old);
        type = 0;
        key = create_fast_mr(fn, tag);
    }
    /* A WQE of ours on the old one, still to complete, is lost to us. */
    if (m->wr_id) {
        fn->km_off = true;
        m->wr_id = 0;
    }
    m->va = 0;
    m->zero_based = false;
    if (key) {
        m->type = type ? type : m->type;
    }
    if (key && key >> 8 == old >> 8) {
        km_set_key(fn, km, key);
    } else {
        /* Another index: what the old one holds next is not watched. */
        m->key = key;
        m->dead = 0;
        m->epoch++;
        if (key) {
            fn->keys[m->kidx] = key;
        }
    }
}

static void op_mw(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    unsigned km = ((sel >> 1) & 3) % KM__N;
    KeyModel *m = &fn->km[km];

    /* The completions so far first: the model follows them in order. */
    poll_all(fn);
    poll_all(peer);
    switch ((sel >> 3) % 5) {
    case 0:
        if (km == KM_FR) {
            fr_register(fn, m, in);
        } else {
            mw_bind(fn, m, in);
        }
        break;
    case 1:
        km_local_inv(fn, m, in);
        break;
    case 2:
        km_rdma(fn, peer, km, in);
        break;
    case 3:
        km_send_inv(fn, peer, m, in);
        break;
    default:
        km_realloc(fn, km, in);
        break;
    }
    run_pair(f);
    poll_all(fn);
    poll_all(peer);
}

/* ---------------------------------------------------------------------- */
/* The second RC pair: long messages                                      */
/* ---------------------------------------------------------------------- */

static bool long_trusted(const Fuzz *f)
{
    unsigned i;

    if (!f->long_ok || f->long_tainted) {
        return false;
    }
    for (i = 0; i < 2; i++) {
        if (f->node[i].shadow_unknown || f->node[i].long_overlap) {
            return false;
        }
    }
    return true;
}

/*
 * As qp_connect() (RC, default_opts) or uc_up() (UC), with the status
 * rather than an assertion: the input may have destroyed the QP.
 */
static uint8_t pair_connect(FuzzNode *fn, uint32_t qpn, bool uc,
                            const FuzzNode *peer, uint32_t dest_qpn,
                            uint8_t mtu, uint32_t sq_psn, uint32_t rq_psn)
{
    struct vhca_qp_attr a;
    uint8_t st;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    a.port = 1;
    a.qp_access_flags = uc ? VHCA_ACCESS_REMOTE_WRITE : default_opts.access;
    a.qp_state = VHCA_QPS_INIT;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                  VHCA_QP_ACCESS_FLAGS;
    st = rdma_modify_qp(fn->n.h, &a);
    a.hop_limit = 64;
    memcpy(a.dgid, peer->n.gid, 16);
    memcpy(a.dmac, peer->n.h->core.cfg.mac, 6);
    a.path_mtu = mtu;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = default_opts.max_dest_rd;
    a.min_rnr_timer = default_opts.min_rnr_timer;
    a.qp_state = VHCA_QPS_RTR;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_AV | VHCA_QP_PATH_MTU |
                  VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                  (uc ? 0 : VHCA_QP_MAX_DEST_RD_ATOMIC |
                            VHCA_QP_MIN_RNR_TIMER);
    st |= rdma_modify_qp(fn->n.h, &a);
    a.timeout = default_opts.timeout;
    a.retry_cnt = default_opts.retry_cnt;
    a.rnr_retry = default_opts.rnr_retry;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = default_opts.max_rd;
    a.qp_state = VHCA_QPS_RTS;
    a.attr_mask = VHCA_QP_STATE | VHCA_QP_SQ_PSN |
                  (uc ? 0 : VHCA_QP_TIMEOUT | VHCA_QP_RETRY_CNT |
                            VHCA_QP_RNR_RETRY | VHCA_QP_MAX_QP_RD_ATOMIC);
    return st | rdma_modify_qp(fn->n.h, &a);
}

/*
 * The pair again from RESET at path MTU @mtu, node i sending from PSN
 * @psn[i]: whatever it carried is gone, its state known again.
 */
static void long_connect(Fuzz *f, uint8_t mtu, const uint32_t psn[2])
{
    uint8_t st = 0;
    unsigned i, n;

    /* A frame held back on the wire belongs to the old connection. */
    f->wire.held_len = 0;
    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i];
        struct vhca_cqe cqe;

        qp_reset(fn->n.h, fn->lqp.qpn, &fn->lqp);
        for (n = 0; n < (1u << fn->long_cq.log) &&
             cq_poll(fn->n.h, &fn->long_cq, &cqe); n++) {
            /* What the old connection completed. */
        }
    }
    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i], *peer = &f->node[!i];

        st |= pair_connect(fn, fn->lqp.qpn, false, peer, peer->lqp.qpn, mtu,
                           psn[i], psn[!i]);
    }
    f->long_ok = st == VHCA_ST_OK;
}

/* Bytes @seed makes, over @len at guest address @addr of @fn. */
static void long_fill(FuzzNode *fn, uint64_t addr, uint32_t len,
                      uint8_t seed)
{
    uint8_t *p = ram_ptr(fn->n.h, addr, LONG_SLOT);
    uint32_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(i * 131 + seed + (i >> 8));
    }
}

typedef struct LongMsg {
    uint8_t opcode;
    uint32_t len;
    uint64_t send_wr, recv_wr;      /* recv_wr 0: no receive WQE */
    uint32_t imm;
} LongMsg;

/* Take @fn's long CQ completions into @cqes (at most @max); how many. */
static unsigned long_collect(FuzzNode *fn, struct vhca_cqe *cqes,
                             unsigned have, unsigned max)
{
    struct vhca_cqe cqe;

    while (have < max && cq_poll(fn->n.h, &fn->long_cq, &cqe)) {
        check_cqe(fn, &fn->long_cq, &cqe);
        cqes[have++] = cqe;
    }
    return have;
}

/*
 * Every message completed once, successfully, in order, with its data
 * where it was to go (IBTA 9.7: RC is reliable, in order, exactly once,
 * whatever was lost, duplicated or reordered on the way).
 */
static void long_check(FuzzNode *s, FuzzNode *d, const LongMsg *msg,
                       unsigned n, const struct vhca_cqe *scqe,
                       const struct vhca_cqe *dcqe)
{
    unsigned i, r = 0;

    for (i = 0; i < n; i++) {
        const LongMsg *m = &msg[i];
        bool read = m->opcode == VHCA_WR_RDMA_READ;
        FuzzNode *from = read ? d : s, *to = read ? s : d;
        uint64_t slot = i * (uint64_t)LONG_SLOT;

        g_assert_cmpuint(scqe[i].wr_id, ==, m->send_wr);
        g_assert_cmpuint(scqe[i].status, ==, VHCA_WC_SUCCESS);
        g_assert_cmpuint(scqe[i].opcode, ==, vhca_send_wc_opcode(m->opcode));
        if (m->recv_wr) {
            const struct vhca_cqe *c = &dcqe[r++];
            bool imm = m->opcode != VHCA_WR_SEND;

            g_assert_cmpuint(c->wr_id, ==, m->recv_wr);
            g_assert_cmpuint(c->status, ==, VHCA_WC_SUCCESS);
            g_assert_cmpuint(c->opcode, ==,
                             m->opcode == VHCA_WR_RDMA_WRITE_WITH_IMM ?
                             VHCA_WC_RECV_RDMA_WITH_IMM : VHCA_WC_RECV);
            g_assert_cmpuint(c->byte_len, ==, m->len);
            g_assert_cmpuint(c->flags, ==, imm ? VHCA_CQE_WITH_IMM : 0);
            if (imm) {
                g_assert_cmphex(GUINT32_FROM_LE(c->imm_or_inv), ==, m->imm);
            }
        }
        g_assert_cmpmem(ram_ptr(to->n.h, to->xbuf + slot, m->len), m->len,
                        ram_ptr(from->n.h, from->xbuf + slot, m->len),
                        m->len);
    }
}

/*
 * Up to LONG_SLOTS well-formed messages of up to 16 KiB, pipelined from
 * one node's second RC QP to the other's (the pair perhaps brought up
 * again first, at any path MTU and PSN), while the wire drops,
 * duplicates or reorders frames from one of the first few on.  While
 * the pair is trusted, everything about the outcome is checked.
 */
static void op_long(Fuzz *f, FuzzIn *in)
{
    static const uint8_t ops[] = {
        VHCA_WR_RDMA_WRITE, VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WR_SEND,
        VHCA_WR_SEND_WITH_IMM, VHCA_WR_RDMA_READ,
    };
    static const uint8_t kinds[] = { 0, 1, 2, 4 };
    uint8_t sel = in_u8(in), wire = in_u8(in);
    FuzzNode *s = &f->node[sel & 1], *d = &f->node[!(sel & 1)];
    Harness *a = f->node[0].n.h, *b = f->node[1].n.h;
    unsigned n = 1 + ((sel >> 1) & 3), nrecv = 0, ns = 0, nd = 0, i;
    struct vhca_cqe scqe[LONG_SLOTS + 1], dcqe[LONG_SLOTS + 1];
    LongMsg msg[LONG_SLOTS];
    uint64_t start;
    bool trusted;

    if (sel & 0x08) {
        uint8_t mtu = VHCA_IB_MTU_256 + in_u8(in) % 5;
        uint32_t psn[2];

        psn[0] = in_start_psn(in);
        psn[1] = in_start_psn(in);
        long_connect(f, mtu, psn);
    }
    /* Never a mutated frame: the data must arrive as it was sent. */
    f->wire.held_len = 0;
    f->wire.kind = kinds[wire & 3];
    f->wire.left = ((wire >> 2) & 7) % (WIRE_FRAMES + 1);
    f->wire.skip = wire >> 5;
    trusted = long_trusted(f);
    for (i = 0; i < n; i++) {
        LongMsg *m = &msg[i];
        uint8_t op = in_u8(in);
        bool read;
        uint64_t slot = i * (uint64_t)LONG_SLOT;
        struct vhca_send_wqe w;

        m->opcode = ops[op % G_N_ELEMENTS(ops)];
        m->len = in_u16(in) % (LONG_SLOT + 1);
        m->imm = 0x1c000000u | op << 8 | i;
        read = m->opcode == VHCA_WR_RDMA_READ;
        /* The source holds the message, the destination something else. */
        long_fill(read ? d : s, (read ? d : s)->xbuf + slot, LONG_SLOT, op);
        long_fill(read ? s : d, (read ? s : d)->xbuf + slot, LONG_SLOT,
                  op ^ 0x5a);
        m->recv_wr = 0;
        if (m->opcode != VHCA_WR_RDMA_WRITE && !read) {
            struct vhca_recv_wqe r;

            memset(&r, 0, sizeof(r));
            m->recv_wr = ++d->wr_id;
            r.wr_id = GUINT64_TO_LE(m->recv_wr);
            r.num_sge = 1;
            r.sge[0].addr = GUINT64_TO_LE(d->xbuf + slot);
            r.sge[0].length = GUINT32_TO_LE(LONG_SLOT);
            r.sge[0].lkey = GUINT32_TO_LE(d->long_key);
            qp_put_recv_wqe(d->n.h, &d->lqp, &r);
            nrecv++;
        }
        m->send_wr = ++s->wr_id;
        wqe_init(&w, m->send_wr, m->opcode, VHCA_WQE_SIGNALED);
        if (m->len) {
            wqe_sge(&w, s->xbuf + slot, m->len, s->long_key);
        }
        wqe_remote(&w, d->xbuf + slot, d->long_key);
        w.imm_or_inv = GUINT32_TO_LE(m->imm);
        qp_put_send_wqe(s->n.h, &s->lqp, &w);
    }
    if (nrecv) {
        ring_doorbell(d->n.h, d->n.page, VHCA_DB_RQ, d->lqp.qpn,
                      d->lqp.rq_pi);
    }
    ring_doorbell(s->n.h, s->n.page, VHCA_DB_SQ, s->lqp.qpn, s->lqp.sq_pi);

    /*
     * Run until every completion is in, the timers permitting (another
     * QP's RNR NAK loop may keep them busy): a frame lost costs one
     * local ACK timeout, 67 ms.
     */
    start = a->now_ns;
    harness_pair_settle(a, b, 0);
    for (i = 0; i < 512; i++) {
        ns = long_collect(s, scqe, ns, G_N_ELEMENTS(scqe));
        nd = long_collect(d, dcqe, nd, G_N_ELEMENTS(dcqe));
        if ((ns >= n && nd >= nrecv) || a->now_ns - start > 2000000000ull) {
            break;
        }
        if (f->wire.held_len && !a->timer_armed && !b->timer_armed) {
            /* Reordered after a frame that never came: it comes now. */
            fuzz_deliver(f->wire.held_to, f->wire.held, f->wire.held_len);
            f->wire.held_len = 0;
        } else if (!a->timer_armed && !b->timer_armed) {
            break;
        } else {
            harness_pair_advance_to_timer(a, b);
        }
        harness_pair_settle(a, b, 0);
    }
    check_node(&f->node[0]);
    check_node(&f->node[1]);
    if (!trusted) {
        return;
    }
    if (ns > n || nd > nrecv) {
        g_error("%u send and %u receive completions on the second RC pair "
                "for %u messages, %u with receive WQEs", ns, nd, n, nrecv);
    }
    if (ns < n || nd < nrecv) {
        /*
         * Nothing left to happen: the requester must be waiting on its
         * local ACK timer for what it has not been acknowledged
         * (IBTA 9.7.6.1.3), or the pair would never complete.
         */
        if (!a->timer_armed && !b->timer_armed && !f->wire.held_len) {
            g_error("the second RC pair stopped with %u of %u messages "
                    "and %u of %u receives completed", ns, n, nd, nrecv);
        }
        /* Still under way (the time ran out): unknown from now on. */
        f->long_ok = false;
        return;
    }
    long_check(s, d, msg, n, scqe, dcqe);
}

/* ---------------------------------------------------------------------- */
/* The operations                                                         */
/* ---------------------------------------------------------------------- */

static void op_wire_mode(Fuzz *f, FuzzIn *in)
{
    /* A frame still held back is lost. */
    f->wire.held_len = 0;
    f->wire.kind = in_u8(in) % 5;
    f->wire.left = in_u8(in) % (WIRE_FRAMES + 1);
    f->wire.offset = in_u16(in);
    f->wire.value = in_u8(in) | 1;
    /*
     * Only damage takes an offset; the other modes let as many frames
     * through first: a message's middle and last packets are lost too.
     */
    f->wire.skip = f->wire.kind != 3 ? f->wire.offset % 8 : 0;
}

static void op_time(Fuzz *f, FuzzIn *in)
{
    /* Up to about 70 s, on a logarithmic scale. */
    uint8_t e = in_u8(in) % 37;
    uint64_t ns = (1ull << e) + in_u16(in);

    settle(f, ns, 16);
}

/*
 * Registers the admin path does not depend on (the harness plays the
 * driver with the admin queue and async EQ as they were set up).
 */
static bool reg_fuzzable(uint32_t off)
{
    return off != VHCA_REG_CTRL &&
           (off < VHCA_REG_ADMQ_BASE_LO || off > VHCA_REG_AEQ_LOG_SIZE);
}

/* Ethernet rings and register accesses. */
static void op_eth(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    Harness *h = fn->n.h;

    if (!fn->eth_up) {
        eth_setup(h, VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE);
        fn->eth_up = true;
    }
    switch ((sel >> 1) % 5) {
    case 0: {                   /* a frame to send, to the peer's MAC */
        f->forged++;
        uint8_t frame[14 + 255];
        uint8_t n = in_u8(in);
        uint16_t len = in_u16(in);
        uint64_t addr = TX_BUF_ADDR;
        uint32_t i;

        memcpy(frame, peer->n.h->core.cfg.mac, 6);
        memcpy(frame + 6, h->core.cfg.mac, 6);
        for (i = 12; i < 14u + n; i++) {
            frame[i] = in_u8(in);
        }
        ram_write(h, TX_BUF_ADDR, frame, 14 + n);
        if (sel & 0x80) {
            fn->named_bad_addr = true;
            addr = in_u64(in);
        }
        len = sel & 0x40 ? len : 14 + n;
        {
            struct vhca_eth_desc d = {
                .addr = GUINT64_TO_LE(addr),
                .len = GUINT16_TO_LE(len),
            };

            ram_write(h, TX_RING_ADDR + (fn->tx_pi & ((1u << ETH_LOG) - 1)) *
                      sizeof(d), &d, sizeof(d));
        }
        fn->tx_pi++;
        reg_write(h, VHCA_REG_TX_PI, fn->tx_pi);
        break;
    }
    case 1: {                   /* receive buffers */
        uint16_t size = in_u16(in) % (RX_BUF_SIZE + 1);

        rx_post(h, fn->rx_pi++, size);
        reg_write(h, VHCA_REG_RX_PI, fn->rx_pi);
        break;
    }
    case 2: {                   /* a register write */
        uint32_t off = (in_u16(in) % VHCA_CTRL_BAR_SIZE) & ~3u;
        uint32_t value = in_u32(in);

        if (reg_fuzzable(off)) {
            /* Ring bases are guest physical addresses. */
            fn->named_bad_addr = true;
            vhca_core_reg_write(&h->core, off, value, 4);
        }
        break;
    }
    case 3: {                   /* a register read of any size */
        uint32_t off = in_u16(in) % VHCA_CTRL_BAR_SIZE;

        vhca_core_reg_read(&h->core, off, 1u << (in_u8(in) % 4));
        break;
    }
    default: {                  /* device reset mid-traffic, as a driver's */
        unsigned i;

        reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_RESET);
        harness_enable(h);
        /* Every object is gone: its handles may name new ones. */
        fn->km_off = true;
        f->long_tainted = true;
        for (i = 0; i < fn->nshadow; i++) {
            fn->shadow[i].live = false;
        }
        fn->eth_up = false;
        fn->tx_pi = fn->rx_pi = 0;
        break;
    }
    }
    run_pair(f);
}

static void op_doorbell(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1];
    uint32_t off = in_u16(in) % (VHCA_DB_PAGE_SIZE * 5);
    uint64_t value = in_u64(in);

    /* Only 64-bit writes ring (vhca_core_doorbell_write()). */
    if (!(sel & 2)) {
        /* A send queue index moved: old WQEs may run again. */
        fn->km_off |= off % VHCA_DB_PAGE_SIZE == VHCA_DB_SQ;
        if ((uint32_t)value == fn->lqp.qpn ||
            (uint32_t)value == fn->long_cq.cqn) {
            f->long_tainted = true;
        }
    }
    vhca_core_doorbell_write(&fn->n.h->core, off, value, sel & 2 ? 4 : 8);
    run_pair(f);
}

/* Arm a CQ, or move its consumer index, as the driver's doorbell does. */
static void op_cq_doorbell(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1];
    TestCq *cqs[] = { &fn->n.scq, &fn->n.rcq, &fn->uc_cq, &fn->ud_cq };
    TestCq *cq = cqs[(sel >> 1) % G_N_ELEMENTS(cqs)];
    uint32_t value;

    if (sel & 0x80) {
        value = in_u32(in);
    } else {
        /* Consume what is there, then arm (solicited or next). */
        poll_all(fn);
        value = (cq->ci & VHCA_CQ_CI_MASK) |
                (sel & 0x40 ? VHCA_CQ_ARM_SOLICITED : VHCA_CQ_ARM_NEXT);
    }
    ring_doorbell(fn->n.h, fn->n.page, VHCA_DB_CQ, cq->cqn, value);
    run_pair(f);
}

/*
 * The RC or the UC pair up again from RESET at a path MTU and from PSNs
 * of the input's, whatever state it was left in, and its receive queues
 * stocked again: an error no longer ends what a long input can reach.
 */
static void op_reconnect(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    unsigned q = sel & 1 ? FQ_UC : FQ_RC, i, s;
    uint8_t mtu = VHCA_IB_MTU_256 + (sel >> 1) % 5;
    uint32_t psn[2];

    psn[0] = in_start_psn(in);
    psn[1] = in_start_psn(in);
    /* A frame held back on the wire belongs to the old connection. */
    f->wire.held_len = 0;
    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i];

        qp_reset(fn->n.h, fn->q[q].qpn, fn->q[q].qp);
        /* What was in flight on it never completes. */
        memset(fn->dead_access, 0, sizeof(fn->dead_access));
    }
    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i], *peer = &f->node[!i];

        pair_connect(fn, fn->q[q].qpn, q == FQ_UC, peer, peer->q[q].qpn, mtu,
                     psn[i], psn[!i]);
        for (s = 0; s < RWQES; s++) {
            recv_wqe(fn, q, q * RWQES + s);
        }
        ring_recv(fn, q);
    }
    if (q == FQ_RC) {
        f->rc_clean = f->forged;
    }
    run_pair(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    Fuzz f;
    unsigned steps = 0;

    fuzz_catch_traps();
    memset(&f, 0, sizeof(f));
    fz = &f;
    /* 1: the counters at the end; 2: every completion too. */
    verbose = fuzz_verbose();
    world_init(&f);
    while (in.left && steps++ < 256) {
        switch (in_u8(&in) % 13) {
        case 0:
        case 1:
            op_frame(&f, &in);
            break;
        case 2:
            op_send_wqe(&f, &in);
            break;
        case 3:
            op_recv_wqe(&f, &in);
            break;
        case 4:
            op_traffic(&f, &in);
            break;
        case 5:
            op_admin(&f, &in);
            break;
        case 6:
            op_wire_mode(&f, &in);
            break;
        case 7:
            op_time(&f, &in);
            break;
        case 8:
            op_eth(&f, &in);
            break;
        case 10:
            op_xrc(&f, &in);
            break;
        case 11:
            op_mw(&f, &in);
            break;
        case 12:
            op_long(&f, &in);
            break;
        default:
            switch (in_u8(&in) % 4) {
            case 0:
                poll_all(&f.node[0]);
                poll_all(&f.node[1]);
                break;
            case 1:
                op_doorbell(&f, &in);
                break;
            case 2:
                op_cq_doorbell(&f, &in);
                break;
            default:
                op_reconnect(&f, &in);
                break;
            }
            break;
        }
    }
    /* Let every timer run out, then everything is torn down. */
    settle(&f, SETTLE_NS, 64);
    poll_all(&f.node[0]);
    poll_all(&f.node[1]);
    if (verbose) {
        fuzz_print_counters(f.node[0].n.h, f.node[1].n.h);
    }
    harness_free(f.node[0].n.h);
    harness_free(f.node[1].n.h);
    fz = NULL;
    return 0;
}
