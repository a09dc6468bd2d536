/*
 * Structure-aware fuzz target for the vhca engine.
 *
 * Two engines back to back (tests/unit/vhca-harness.c, vhca-node.c), each
 * with a connected RC, UC and UD QP and a UD QP that receives from an SRQ,
 * an IPv4 and an IPv6 GID, five MRs (one with every access, one with local
 * access only, one in another PD, two through level 1 and level 2 page
 * lists) and posted receive WQEs.  The
 * input is then read as a list of operations, each an opcode byte and its
 * fields (past its end every field reads as zero):
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
 *     transport timers; polling the CQs.
 *
 * After each operation both engines run to idle and the invariants are
 * checked: every guest error has its typed event, the drop counters add
 * up, CQEs name our QPs with a status the device defines, no DMA leaves
 * guest RAM unless the input gave the device an address outside it, and
 * the device writes the data buffers only through live MRs that allow
 * writing.  The harness's own assertions (frame sizes, interrupt vectors,
 * admin queue progress) hold throughout.  With AddressSanitizer and UBSan
 * any memory error, leak or undefined behaviour in the engine is a crash.
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

#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-wire.h"

/* ---------------------------------------------------------------------- */
/* Input                                                                  */
/* ---------------------------------------------------------------------- */

typedef struct FuzzIn {
    const uint8_t *p;
    size_t left;
} FuzzIn;

/* Past the end of the input every field reads as zero. */
static uint8_t in_u8(FuzzIn *in)
{
    if (!in->left) {
        return 0;
    }
    in->left--;
    return *in->p++;
}

static uint16_t in_u16(FuzzIn *in)
{
    uint16_t v = in_u8(in);

    return v | (uint16_t)in_u8(in) << 8;
}

static uint32_t in_u32(FuzzIn *in)
{
    uint32_t v = in_u16(in);

    return v | (uint32_t)in_u16(in) << 16;
}

static uint64_t in_u64(FuzzIn *in)
{
    uint64_t v = in_u32(in);

    return v | (uint64_t)in_u32(in) << 32;
}

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
#define MAX_KEYS        8           /* the device's max_mr */
/* The MRs through page lists: where their IOVAs start. */
#define PAGED_IOVA      0x7f0000001080ull
#define PAGED_PAGES     16
#define L2_IOVA         0x600000000000ull
#define L2_PAGES        8

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
    /* The SRQ as the driver sees it: its ring now and the spare one. */
    uint32_t srqn;
    uint64_t srq_ring[2], srq_pbl[2];
    unsigned srq_cur;
    uint8_t srq_log;
    uint32_t srq_pi;
    FuzzQp q[FQ__N];
    uint32_t pd2;                   /* a second PD */
    /*
     * Keys: [0] the node's MR over its buffer (every access), [1] local
     * access only, [2] in the other PD, [3] a level 1 page list MR at
     * PAGED_IOVA, [4] a level 2 one at L2_IOVA; then those the input
     * creates.  A destroyed MR's key stays: stale keys are inputs too.
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
} FuzzNode;

typedef struct WireMode {
    uint8_t kind;           /* 0 pass, 1 drop, 2 dup, 3 mutate, 4 reorder */
    uint8_t left;
    uint16_t offset;
    uint8_t value;
    uint8_t held[VHCA_ETH_MAX_FRAME];
    size_t held_len;                /* a frame held back (kind 4) */
    Harness *held_to;
} WireMode;

typedef struct Fuzz {
    FuzzNode node[2];
    WireMode wire;
} Fuzz;

static Fuzz *fz;

static FuzzNode *node_of(Harness *h)
{
    return fz->node[0].n.h == h ? &fz->node[0] : &fz->node[1];
}

static bool ram_range(uint64_t addr, size_t len)
{
    return addr >= RAM_BASE && len <= RAM_SIZE &&
           addr - RAM_BASE <= RAM_SIZE - len;
}

/*
 * DMA goes through the harness after this check: an access outside guest
 * RAM is allowed only once the input has given the device such an address.
 */
static const VhcaCoreOps *harness_ops;
static VhcaCoreOps fuzz_ops;

static void check_dma(Harness *h, uint64_t addr, size_t len)
{
    if (!ram_range(addr, len) && !node_of(h)->named_bad_addr) {
        g_error("DMA of %zu bytes at 0x%" G_GINT64_MODIFIER "x, outside "
                "guest RAM, with no such address in the input", len, addr);
    }
}

static void shadow_add(FuzzNode *fn, uint32_t key, uint64_t start,
                       uint64_t len, uint32_t access)
{
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
 * A DMA write that touches the data buffer must lie in live MRs that
 * allow writing (IBTA 10.6.3: an access is checked against the MR it
 * names; a destroyed MR names nothing).
 */
static void check_dma_write(Harness *h, uint64_t addr, size_t len)
{
    FuzzNode *fn = node_of(h);
    uint64_t lo = fn->n.buf, hi = fn->n.buf + DATA_PAGES * 4096ull;
    uint64_t end = addr + len;

    if (fn->shadow_unknown || end <= lo || addr >= hi) {
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

/*
 * The SRQ (16 WQEs, limit 4) and a UD QP on it, completing to the UD CQ;
 * made after the other QPs, so their numbers stay as they were.
 */
static void srq_create(FuzzNode *fn)
{
    Harness *h = fn->n.h;
    struct vhca_srq_create c;
    struct vhca_qp_create q;
    uint64_t sq = rdma_alloc(h, 2);
    unsigned i;

    for (i = 0; i < 2; i++) {
        fn->srq_ring[i] = rdma_alloc(h, SRQ_RING_PAGES);
        fn->srq_pbl[i] = rdma_pbl(h, fn->srq_ring[i], SRQ_RING_PAGES, false);
    }
    fn->srq_log = 4;
    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(fn->n.pdn);
    c.db_page = GUINT32_TO_LE(fn->n.page);
    c.pbl_addr = GUINT64_TO_LE(fn->srq_pbl[0]);
    c.npages = GUINT32_TO_LE(SRQ_RING_PAGES);
    c.log_size = fn->srq_log;
    c.ci_addr = GUINT64_TO_LE(rdma_alloc(h, 1));
    c.limit = GUINT32_TO_LE(4);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                              &fn->srqn, NULL), ==, VHCA_ST_OK);
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
    q.srqn = GUINT32_TO_LE(fn->srqn);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_QP, &q, sizeof(q),
                              &fn->srq_qp.qpn, NULL), ==, VHCA_ST_OK);
}

/* Write @w at the SRQ's producer index (no doorbell). */
static void srq_put(FuzzNode *fn, const struct vhca_recv_wqe *w)
{
    uint32_t slot = fn->srq_pi++ & ((1u << fn->srq_log) - 1);

    ram_write(fn->n.h, fn->srq_ring[fn->srq_cur] +
              (uint64_t)slot * VHCA_RECV_WQE_SIZE, w, sizeof(*w));
}

static uint32_t recv_pi(FuzzNode *fn, unsigned q)
{
    return q == FQ_SRQ ? fn->srq_pi : fn->q[q].qp->rq_pi;
}

/* The doorbell of QP kind @q's receive queue (its RQ or the SRQ). */
static void ring_recv(FuzzNode *fn, unsigned q)
{
    if (q == FQ_SRQ) {
        ring_doorbell(fn->n.h, fn->n.page, VHCA_DB_SRQ, fn->srqn,
                      fn->srq_pi);
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
        srq_put(fn, &w);
    } else {
        qp_put_recv_wqe(fn->n.h, fn->q[q].qp, &w);
    }
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

static void world_init(Fuzz *f)
{
    unsigned i, q, s;

    for (i = 0; i < 2; i++) {
        FuzzNode *fn = &f->node[i];

        node_init(&fn->n, 1 + i, VHCA_QPT_RC);
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
        aeq_drain(fn->n.h);
        for (q = 0; q < FQ__N; q++) {
            for (s = 0; s < RWQES; s++) {
                recv_wqe(fn, q, q * RWQES + s);
            }
            ring_recv(fn, q);
        }
        aeq_drain(fn->n.h);
        /* The engine's DMA now goes through check_dma(). */
        harness_ops = fn->n.h->core.ops;
        fuzz_ops = *harness_ops;
        fuzz_ops.dma_read = fuzz_dma_read;
        fuzz_ops.dma_write = fuzz_dma_write;
        fn->n.h->core.ops = &fuzz_ops;
    }
}

/* ---------------------------------------------------------------------- */
/* Invariants                                                             */
/* ---------------------------------------------------------------------- */

static void check_node(FuzzNode *fn)
{
    Harness *h = fn->n.h;
    uint64_t drops = 0;
    unsigned c;

    g_assert_cmpuint(h->typed_error_calls, ==, h->guest_error_calls);
    for (c = VHCA_CNT_DROP_MALFORMED; c < VHCA_CNT_MAX; c++) {
        drops += h->core.counters[c];
    }
    g_assert_cmpuint(h->core.counters[VHCA_CNT_ROCE_RX_DROPPED], ==, drops);
    g_assert_cmpuint(h->core.counters[VHCA_CNT_ADMIN_ERRORS], <=,
                     h->core.counters[VHCA_CNT_ADMIN_COMMANDS]);
}

/*
 * Run both engines to idle; then, for at most @max_ns of fake time and
 * @max_timers expiries (an RNR NAK loop with infinite retries never ends
 * on its own), jump to the next timer deadline and run again.
 */
static void settle(Fuzz *f, uint64_t max_ns, unsigned max_timers)
{
    Harness *a = f->node[0].n.h, *b = f->node[1].n.h;
    uint64_t start = a->now_ns;

    harness_pair_settle(a, b, 0);
    while ((a->timer_armed || b->timer_armed) && max_timers-- &&
           a->now_ns - start < max_ns) {
        harness_pair_advance_to_timer(a, b);
        harness_pair_settle(a, b, 0);
    }
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
    return false;
}

static void note_created(FuzzNode *fn, uint16_t opcode, uint8_t status,
                         uint32_t handle)
{
    if (opcode == VHCA_CMD_CREATE_QP && status == VHCA_ST_OK &&
        fn->n_more_qpns < G_N_ELEMENTS(fn->more_qpns)) {
        fn->more_qpns[fn->n_more_qpns++] = handle;
    }
}

/* Consume the CQEs of @fn: each names a QP of ours and a known status. */
static void poll_all(FuzzNode *fn)
{
    TestCq *cqs[] = { &fn->n.scq, &fn->n.rcq, &fn->uc_cq, &fn->ud_cq };
    struct vhca_cqe cqe;
    unsigned i, n;

    for (i = 0; i < G_N_ELEMENTS(cqs); i++) {
        for (n = 0; n < (1u << cqs[i]->log) && cq_poll(fn->n.h, cqs[i], &cqe);
             n++) {
            g_assert_true(qpn_known(fn, GUINT32_FROM_LE(cqe.qpn)));
            /* No EEC, bad response or local access errors (RD's). */
            g_assert_cmpuint(cqe.status, <=, VHCA_WC_RNR_RETRY_EXC_ERR);
            g_assert_true(cqe.status != 3 && (cqe.status < 7 ||
                                              cqe.status > 8));
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

/* Hand the peer exactly @len bytes on the heap, so ASan sees overruns. */
static void deliver(Harness *h, const uint8_t *buf, size_t len)
{
    uint8_t *copy = g_malloc(len ? len : 1);

    memcpy(copy, buf, len);
    harness_deliver(h, copy, len);
    g_free(copy);
}

static void fuzz_wire_hook(Harness *h, const uint8_t *buf, size_t len)
{
    WireMode *w = &fz->wire;
    uint8_t frame[VHCA_ETH_MAX_FRAME];

    if (!w->left) {
        deliver(h->peer, buf, len);
        return;
    }
    w->left--;
    switch (w->kind) {
    case 1:
        return;
    case 2:
        deliver(h->peer, buf, len);
        deliver(h->peer, buf, len);
        return;
    case 3: {
        /* One byte of the IB headers or payload, then a valid ICRC. */
        size_t bth = bth_offset(buf, len);

        memcpy(frame, buf, len);
        if (bth && len > bth + VHCA_IB_ICRC_LEN) {
            frame[bth + w->offset % (len - bth - VHCA_IB_ICRC_LEN)] ^=
                w->value;
            frame_fixup(frame, len);
        }
        deliver(h->peer, frame, len);
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
        deliver(h->peer, buf, len);
        deliver(w->held_to, w->held, w->held_len);
        w->held_len = 0;
        return;
    default:
        deliver(h->peer, buf, len);
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
 * A PSN near the one the receiver expects (its responder's for requests,
 * the oldest unacknowledged for responses), or any.
 */
static uint32_t in_psn(FuzzIn *in, FuzzNode *dst, unsigned q, bool response)
{
    VhcaQp *qp = vhca_qp_lookup(&dst->n.h->core, dst->q[q].qpn);
    uint8_t mode = in_u8(in);
    uint32_t base = 0;

    if (qp) {
        base = response ? qp->req.una_psn : qp->resp.epsn;
    }
    if (mode < 0xc0) {
        return (base + (int8_t)in_u8(in)) & VHCA_IB_QPN_MASK;
    }
    return in_u32(in) & VHCA_IB_QPN_MASK;
}

static void op_frame(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *src = &f->node[sel & 1], *dst = &f->node[!(sel & 1)];
    unsigned q = ((sel >> 1) & 3) % FQ__N;
    uint8_t opsel = in_u8(in), flags = in_u8(in), post = in_u8(in);
    uint8_t net = in_u8(in);
    uint8_t frame[VHCA_ETH_MAX_FRAME + 64];
    uint8_t payload[VHCA_ETH_MAX_FRAME];
    VhcaWirePacket pkt;
    uint32_t i, plen;
    size_t len, bth;

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

    pkt.tp.bth.opcode = opsel < 0xe0 ? transports[q] | (opsel % 0x18) :
                        in_u8(in);
    pkt.tp.bth.solicited = flags & 1;
    pkt.tp.bth.ack_req = flags & 2;
    pkt.tp.bth.mig_req = flags & 4;
    pkt.tp.bth.pkey = flags & 8 ? in_u16(in) : 0xffff;
    pkt.tp.bth.dest_qpn = flags & 0x10 ? in_u32(in) & VHCA_IB_QPN_MASK :
                          net & 8 ? VHCA_IB_QPN_MASK :
                          dst->q[flags & 0x20 ? (q + 1) % FQ__N : q].qpn;
    {
        uint8_t op = pkt.tp.bth.opcode & 0x1f;
        bool response = op >= VHCA_IB_OP_RDMA_READ_RESPONSE_FIRST &&
                        op <= VHCA_IB_OP_ATOMIC_ACKNOWLEDGE;

        pkt.tp.bth.psn = in_psn(in, dst, q, response);
    }
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
    pkt.tp.deth.src_qpn = src->q[q].qpn;
    pkt.tp.atomic_orig = in_u64(in);
    pkt.tp.imm_data = in_u32(in);
    pkt.tp.inv_rkey = in_key(in, dst);
    plen = in_u16(in) % (1024 + 64 + 1);
    for (i = 0; i < plen; i++) {
        payload[i] = (uint8_t)(i * 7 + sel);
    }
    pkt.payload = payload;
    pkt.payload_len = plen;

    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    if (!len) {
        /* An opcode without payload, or an unknown one: build without. */
        pkt.payload_len = 0;
        len = vhca_wire_build(&pkt, frame, sizeof(frame));
    }
    if (!len) {
        uint8_t opcode = pkt.tp.bth.opcode;

        pkt.tp.bth.opcode = transports[q] | VHCA_IB_OP_SEND_ONLY;
        pkt.payload_len = plen;
        len = vhca_wire_build(&pkt, frame, sizeof(frame));
        g_assert_cmpuint(len, >, 0);
        frame[bth_offset(frame, len)] = opcode;
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
    deliver(dst->n.h, frame, len);
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

static void ring(FuzzNode *fn, FuzzIn *in, unsigned q, uint32_t reg,
                 uint32_t pi)
{
    uint8_t mode = in_u8(in);

    if (mode >= 0xf0) {
        pi += (int8_t)in_u8(in);
    }
    ring_doorbell(fn->n.h, fn->n.page, reg,
                  mode == 0xff ? in_u32(in) :
                  reg == VHCA_DB_SRQ ? fn->srqn : fn->q[q].qpn, pi);
}

static void op_send_wqe(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    unsigned q = ((sel >> 1) & 3) % FQ__N;
    uint8_t opsel = in_u8(in), nsge = in_u8(in);
    struct vhca_send_wqe w;
    unsigned i;

    wqe_init(&w, ++fn->wr_id,
             opsel < 0xf0 ? send_opcodes[opsel % G_N_ELEMENTS(send_opcodes)]
                          : in_u8(in), in_u8(in));
    /*
     * REG_MR reads its registration from the SGE area: whatever the SGEs
     * below hold, so its pages may be anywhere.
     */
    if (w.opcode == VHCA_WR_REG_MR) {
        fn->named_bad_addr = true;
        fn->shadow_unknown = true;
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
    ring(fn, in, q, VHCA_DB_SQ, fn->q[q].qp->sq_pi);
    run_pair(f);
}

/*
 * SRQ commands after a receive WQE on the SRQ, as @sel's high bits ask:
 * arm the limit (perhaps past the size), move to the spare ring with a
 * new size (perhaps too small for what is posted), query, destroy (BUSY
 * while its QP lives).
 */
static void srq_commands(FuzzNode *fn, FuzzIn *in, uint8_t sel)
{
    Harness *h = fn->n.h;
    struct vhca_srq_attr a;

    memset(&a, 0, sizeof(a));
    a.srqn = GUINT32_TO_LE(fn->srqn);
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
        a.pbl_addr = GUINT64_TO_LE(fn->srq_pbl[!fn->srq_cur]);
        a.npages = GUINT32_TO_LE(SRQ_RING_PAGES);
        if (rdma_cmd(h, VHCA_CMD_MODIFY_SRQ, &a, sizeof(a), NULL, NULL) ==
            VHCA_ST_OK) {
            fn->srq_cur = !fn->srq_cur;
            fn->srq_log = log;
        }
    }
    if (sel & 0x20) {
        rdma_cmd(h, VHCA_CMD_QUERY_SRQ, &a, sizeof(a), NULL, NULL);
    }
    if (sel & 0x40) {
        rdma_destroy(h, VHCA_CMD_DESTROY_SRQ, fn->srqn);
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
        ring(fn, in, q, VHCA_DB_RQ, fn->q[q].qp->rq_pi);
    } else {
        srq_put(fn, &w);
        ring(fn, in, q, VHCA_DB_SRQ, fn->srq_pi);
        srq_commands(fn, in, sel);
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

static void op_admin(Fuzz *f, FuzzIn *in)
{
    uint8_t sel = in_u8(in);
    FuzzNode *fn = &f->node[sel & 1], *peer = &f->node[!(sel & 1)];
    Harness *h = fn->n.h;

    switch ((sel >> 1) % 7) {
    case 0: {                   /* MODIFY_QP, fields near the good ones */
        struct vhca_qp_attr a;
        uint8_t *raw = (uint8_t *)&a;
        uint8_t n = in_u8(in) % 8;

        qp_good_attr(&a, in_qpn(in, fn));
        a.qpn = in_qpn(in, fn);
        memcpy(a.dgid, peer->n.gid, 16);
        memcpy(a.dmac, peer->n.h->core.cfg.mac, 6);
        a.dest_qp_num = peer->q[in_u8(in) % FQ__N].qpn;
        a.qp_state = in_u8(in) % (VHCA_QPS_ERR + 2);
        a.attr_mask = in_u32(in);
        a.path_mtu = in_u8(in) % 7;
        a.sq_psn = in_u32(in) & VHCA_IB_QPN_MASK;
        a.rq_psn = in_u32(in) & VHCA_IB_QPN_MASK;
        /* And a few bytes anywhere in the structure. */
        while (n--) {
            uint8_t off = in_u8(in) % sizeof(a);

            raw[off] = in_u8(in);
        }
        rdma_modify_qp(h, &a);
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
        if (rdma_destroy(h, ops[which % 4], handle) == VHCA_ST_OK &&
            ops[which % 4] == VHCA_CMD_DESTROY_MR) {
            shadow_destroyed(fn, handle);
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

    vhca_core_doorbell_write(&fn->n.h->core, off, value, sel & 2 ? 4 : 8);
    run_pair(f);
}

/* VHCA_FUZZ_VERBOSE=1: what an input reached, to check a seed. */
static void print_counters(Fuzz *f)
{
    unsigned i, c;

    for (i = 0; i < 2; i++) {
        g_printerr("node %c:", 'A' + i);
        for (c = 0; c < VHCA_CNT_MAX; c++) {
            if (f->node[i].n.h->core.counters[c]) {
                g_printerr(" %s=%" G_GUINT64_FORMAT, vhca_counter_name(c),
                           f->node[i].n.h->core.counters[c]);
            }
        }
        g_printerr("\n");
    }
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    Fuzz f;
    unsigned steps = 0;

    memset(&f, 0, sizeof(f));
    fz = &f;
    world_init(&f);
    while (in.left && steps++ < 256) {
        switch (in_u8(&in) % 10) {
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
        default:
            switch (in_u8(&in) % 3) {
            case 0:
                poll_all(&f.node[0]);
                poll_all(&f.node[1]);
                break;
            case 1:
                op_doorbell(&f, &in);
                break;
            default:
                op_cq_doorbell(&f, &in);
                break;
            }
            break;
        }
    }
    /* Let every timer run out, then everything is torn down. */
    settle(&f, SETTLE_NS, 64);
    poll_all(&f.node[0]);
    poll_all(&f.node[1]);
    if (g_getenv("VHCA_FUZZ_VERBOSE")) {
        print_counters(&f);
    }
    harness_free(f.node[0].n.h);
    harness_free(f.node[1].n.h);
    fz = NULL;
    return 0;
}
