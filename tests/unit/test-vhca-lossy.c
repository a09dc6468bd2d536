/*
 * The RC transport over a hostile wire, table-driven: every RC opcode
 * (SEND, SEND with immediate, SEND with invalidate, RDMA WRITE, RDMA
 * WRITE with immediate, RDMA READ, CMP_SWAP, FETCH_ADD) times each fault
 * pattern (bursts of consecutive losses in either direction, 10% random
 * loss, heavy reordering, duplication storms and their combinations).
 * Messages span many packets; every byte that lands is compared with
 * its source, every atomic's returned value and the final target value
 * are checked, and the QPs stay in RTS with exactly one CQE per WQE.
 *
 * Each case is seeded from its name, so a run is deterministic: the
 * engine's clock is the harness's fake clock.
 *
 * The reliability rules exercised are IBTA Vol 1 9.7.4.1 (requester
 * retry on timeout and NAK, go-back-N), 9.7.5.1.2 (responder: duplicate
 * requests are re-acknowledged, duplicate RDMA READs re-executed) and
 * 9.4.5 / o9-28 (duplicate atomics answered from the saved result, not
 * executed twice).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"

#define ROUNDS          3
#define PER_ROUND       10              /* receive queue holds 16 */
#define SLOT            0x1800          /* 6 KiB: 12 packets at MTU 512 */
#define SRC_OFF         0x0000          /* a: what is sent or written */
#define DST_OFF         0x10000         /* b: where it lands; a: READ data */
#define RD_OFF          0x20000         /* b: what is read */
#define ATOMIC_OFF      0x38000         /* b: the atomic target */
#define RESULT_OFF      0x39000         /* a: atomic results */

typedef struct Fault {
    const char *name;
    unsigned burst_len, burst_every;    /* per direction, see below */
    bool burst_req, burst_resp;         /* a->b, b->a */
    double loss;
    unsigned reorder;
    unsigned dup;
} Fault;

/*
 * A burst longer than the retry budget (retry_cnt 7: eight transmissions
 * of a lone packet) may rightly end in RETRY_EXC_ERR, and with bursts in
 * both directions one attempt may fail in either, so bursts hitting both
 * directions are kept to three frames.
 */
static const Fault faults[] = {
    { "burst6-req", .burst_len = 6, .burst_every = 29, .burst_req = true },
    { "burst6-resp", .burst_len = 6, .burst_every = 29, .burst_resp = true },
    { "burst3-both", .burst_len = 3, .burst_every = 13, .burst_req = true,
      .burst_resp = true },
    { "loss10", .loss = 0.10 },
    { "reorder4", .reorder = 4 },
    { "reorder16", .reorder = 16 },
    { "dup3", .dup = 3 },
    { "dup8-storm", .dup = 8 },
    { "loss10-reorder8-dup2", .loss = 0.10, .reorder = 8, .dup = 2 },
    { "burst3-reorder4-dup1", .burst_len = 3, .burst_every = 19,
      .burst_req = true, .burst_resp = true, .reorder = 4, .dup = 1 },
};

#define MIXED           0xff

typedef struct Op {
    const char *name;
    uint8_t wr;
    uint8_t wc;                         /* requester's completion */
    bool recv;                          /* consumes a receive WQE */
    uint8_t recv_wc;
    uint8_t recv_flags;
} Op;

static const Op ops[] = {
    { "send", VHCA_WR_SEND, VHCA_WC_SEND, true, VHCA_WC_RECV, 0 },
    { "send-imm", VHCA_WR_SEND_WITH_IMM, VHCA_WC_SEND, true, VHCA_WC_RECV,
      VHCA_CQE_WITH_IMM },
    { "send-inv", VHCA_WR_SEND_WITH_INV, VHCA_WC_SEND, true, VHCA_WC_RECV,
      VHCA_CQE_WITH_INV },
    { "write", VHCA_WR_RDMA_WRITE, VHCA_WC_RDMA_WRITE, false, 0, 0 },
    { "write-imm", VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WC_RDMA_WRITE, true,
      VHCA_WC_RECV_RDMA_WITH_IMM, VHCA_CQE_WITH_IMM },
    { "read", VHCA_WR_RDMA_READ, VHCA_WC_RDMA_READ, false, 0, 0 },
    { "cmp-swap", VHCA_WR_ATOMIC_CMP_AND_SWP, VHCA_WC_COMP_SWAP, false, 0,
      0 },
    { "fetch-add", VHCA_WR_ATOMIC_FETCH_AND_ADD, VHCA_WC_FETCH_ADD, false, 0,
      0 },
    /* Message i of a case is ops[i % 8]: all of them interleaved. */
    { "mixed", MIXED, 0, false, 0, 0 },
};

typedef struct Case {
    const Fault *f;
    const Op *op;
    char *path;
} Case;

static uint64_t ld64(Node *n, uint32_t off)
{
    uint64_t v;

    ram_read(n->h, n->buf + off, &v, 8);
    return GUINT64_FROM_LE(v);
}

static void st64(Node *n, uint32_t off, uint64_t v)
{
    v = GUINT64_TO_LE(v);
    ram_write(n->h, n->buf + off, &v, 8);
}

/*
 * Run both engines until nothing is in flight.  Frames held for
 * reordering are released whenever both engines are idle, before the
 * clock moves: reordering shuffles what is on the wire at one time and
 * does not by itself stand for loss.
 */
static void lossy_settle(Pair *p, Wire *wa, Wire *wb)
{
    uint64_t start = p->a.h->now_ns;

    for (;;) {
        Harness *a = p->a.h, *b = p->b.h;

        harness_pair_settle(a, b, 0);   /* run until quiet */
        if (wire_flush(wa) + wire_flush(wb)) {
            continue;
        }
        if (!a->timer_armed && !b->timer_armed) {
            break;
        }
        g_assert_cmpuint(a->now_ns - start, <, SETTLE_NS);
        harness_pair_advance_to_timer(a, b);
    }
}

static void wire_setup(Wire *w, const Fault *f, bool burst, uint32_t seed)
{
    memset(w, 0, sizeof(*w));
    w->rand = g_rand_new_with_seed(seed);
    w->loss = f->loss;
    w->reorder = f->reorder;
    w->dup = f->dup;
    if (burst) {
        w->burst_len = f->burst_len;
        w->burst_every = f->burst_every;
        w->burst_phase = 0;             /* ACKs are few: lose the first */
    }
}

static const Op *msg_op(const Op *op, unsigned i)
{
    return op->wr == MIXED ? &ops[i % (G_N_ELEMENTS(ops) - 1)] : op;
}

/* Lengths: edges around the MTU of 512, then seeded random ones. */
static uint32_t msg_len(const Op *op, GRand *r, unsigned i)
{
    static const uint32_t edge[] = { 0, 1, 511, 512, 513, 4096, SLOT };

    if (op->wr == VHCA_WR_ATOMIC_CMP_AND_SWP ||
        op->wr == VHCA_WR_ATOMIC_FETCH_AND_ADD) {
        return 8;
    }
    if (i < G_N_ELEMENTS(edge)) {
        return edge[i];
    }
    return g_rand_int_range(r, 1, SLOT + 1);
}

static void test_case(gconstpointer data)
{
    const Case *c = data;
    ConnOpts o = default_opts;
    uint32_t seed = g_str_hash(c->path);
    GRand *r = g_rand_new_with_seed(seed);
    Wire wa, wb;
    Pair p;
    unsigned round, i, n = 0;
    uint64_t target = 0x1000, expect_ret[PER_ROUND];
    uint32_t inv_key;

    o.mtu = VHCA_IB_MTU_512;
    o.timeout = 8;                      /* 1 ms */
    o.a_psn = 0xffffff - 40;            /* the PSNs wrap in the first round */
    pair_init(&p, &o);
    wire_setup(&wa, c->f, c->f->burst_req, seed + 1);
    wire_setup(&wb, c->f, c->f->burst_resp, seed + 2);
    wire_attach(&p.a, &wa);
    wire_attach(&p.b, &wb);
    st64(&p.b, ATOMIC_OFF, target);
    /* What SEND with Invalidate names: a free MR stays free. */
    inv_key = node_fast_mr(&p.b, 1, 0x77);

    for (round = 0; round < ROUNDS; round++) {
        uint32_t lens[PER_ROUND], imm[PER_ROUND];

        for (i = 0; i < PER_ROUND; i++) {
            uint32_t off = i * SLOT;
            struct vhca_send_wqe w;
            const Op *op = msg_op(c->op, n + i);

            lens[i] = msg_len(op, r, round * PER_ROUND + i);
            imm[i] = g_rand_int(r);
            /* Drawn all the same: the seeded sequence stays as it was. */
            if (op->wr == VHCA_WR_SEND_WITH_INV) {
                imm[i] = inv_key;
            }
            fill(&p.a, SRC_OFF + off, lens[i], seed + n + i);
            fill(&p.b, RD_OFF + off, lens[i], seed + n + i + 1);
            /* Stale bytes where data lands, to be overwritten. */
            memset(ram_ptr(p.b.h, p.b.buf + DST_OFF + off, SLOT), 0xee,
                   SLOT);
            memset(ram_ptr(p.a.h, p.a.buf + DST_OFF + off, SLOT), 0xee,
                   SLOT);
            if (op->recv) {
                post_recv(&p.b, 0xb000 + n + i, DST_OFF + off, SLOT);
            }
            wqe_init(&w, 0xa000 + n + i, op->wr, VHCA_WQE_SIGNALED);
            switch (op->wr) {
            case VHCA_WR_RDMA_READ:
                if (lens[i]) {
                    wqe_sge(&w, p.a.buf + DST_OFF + off, lens[i], p.a.key);
                }
                wqe_remote(&w, p.b.buf + RD_OFF + off, p.b.key);
                break;
            case VHCA_WR_ATOMIC_CMP_AND_SWP:
                /* Every third compare fails and returns the value. */
                wqe_sge(&w, p.a.buf + RESULT_OFF + 8 * i, 8, p.a.key);
                wqe_remote(&w, p.b.buf + ATOMIC_OFF, p.b.key);
                w.compare_add = GUINT64_TO_LE(i % 3 == 2 ? ~target : target);
                w.swap = GUINT64_TO_LE(target * 3 + i + 1);
                expect_ret[i] = target;
                if (i % 3 != 2) {
                    target = target * 3 + i + 1;
                }
                break;
            case VHCA_WR_ATOMIC_FETCH_AND_ADD:
                wqe_sge(&w, p.a.buf + RESULT_OFF + 8 * i, 8, p.a.key);
                wqe_remote(&w, p.b.buf + ATOMIC_OFF, p.b.key);
                w.compare_add = GUINT64_TO_LE((uint64_t)imm[i] << 8 | i);
                expect_ret[i] = target;
                target += (uint64_t)imm[i] << 8 | i;
                break;
            default:
                if (lens[i]) {
                    wqe_sge(&w, p.a.buf + SRC_OFF + off, lens[i], p.a.key);
                }
                wqe_remote(&w, p.b.buf + DST_OFF + off, p.b.key);
                w.imm_or_inv = GUINT32_TO_LE(imm[i]);
                break;
            }
            qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        }
        ring_sq(&p.a);
        lossy_settle(&p, &wa, &wb);

        for (i = 0; i < PER_ROUND; i++) {
            uint32_t off = i * SLOT;
            struct vhca_cqe cqe;
            const Op *op = msg_op(c->op, n + i);

            expect_cqe(&p.a, &p.a.scq, 0xa000 + n + i, VHCA_WC_SUCCESS,
                       op->wc);
            if (op->recv) {
                cqe = expect_cqe(&p.b, &p.b.rcq, 0xb000 + n + i,
                                 VHCA_WC_SUCCESS, op->recv_wc);
                g_assert_cmpuint(cqe.byte_len, ==, lens[i]);
                g_assert_cmpuint(cqe.flags, ==, op->recv_flags);
                if (op->recv_flags) {
                    g_assert_cmphex(GUINT32_FROM_LE(cqe.imm_or_inv), ==,
                                    imm[i]);
                }
            }
            switch (op->wr) {
            case VHCA_WR_RDMA_READ:
                expect_same(&p.b, RD_OFF + off, &p.a, DST_OFF + off, lens[i]);
                if (lens[i] < SLOT) {       /* not a byte more */
                    g_assert_cmphex(*(uint8_t *)ram_ptr(p.a.h, p.a.buf +
                                        DST_OFF + off + lens[i], 1), ==, 0xee);
                }
                break;
            case VHCA_WR_ATOMIC_CMP_AND_SWP:
            case VHCA_WR_ATOMIC_FETCH_AND_ADD:
                g_assert_cmphex(ld64(&p.a, RESULT_OFF + 8 * i), ==,
                                expect_ret[i]);
                break;
            default:
                expect_same(&p.a, SRC_OFF + off, &p.b, DST_OFF + off,
                            lens[i]);
                if (lens[i] < SLOT) {       /* not a byte more */
                    g_assert_cmphex(*(uint8_t *)ram_ptr(p.b.h, p.b.buf +
                                        DST_OFF + off + lens[i], 1), ==, 0xee);
                }
                break;
            }
        }
        expect_no_cqe(&p.a, &p.a.scq);
        expect_no_cqe(&p.b, &p.b.rcq);
        expect_no_cqe(&p.b, &p.b.scq);
        n += PER_ROUND;
    }
    /* Each atomic executed exactly once, whatever was duplicated. */
    g_assert_cmphex(ld64(&p.b, ATOMIC_OFF), ==, target);
    g_assert_cmpuint(p.a.h->ev.cqe_error.n + p.b.h->ev.cqe_error.n, ==, 0);
    g_test_message("%s: a->b %u frames (%u dropped, %u dup, %u reordered), "
                   "b->a %u (%u, %u, %u), %" G_GUINT64_FORMAT " ms",
                   c->path, wa.count, wa.dropped, wa.duplicated,
                   wa.reordered, wb.count, wb.dropped, wb.duplicated,
                   wb.reordered, p.a.h->now_ns / 1000000);
    /* The faults happened. */
    g_assert_cmpuint(wa.dropped + wb.dropped + wa.duplicated + wb.duplicated +
                     wa.reordered + wb.reordered, >, 0);
    if (c->f->loss || c->f->burst_len) {
        g_assert_cmpuint(wa.dropped + wb.dropped, >, 0);
    }
    if (c->f->dup) {
        g_assert_cmpuint(wa.duplicated + wb.duplicated, >, 0);
    }
    if (c->f->reorder) {
        g_assert_cmpuint(wa.reordered + wb.reordered, >, 0);
    }
    wire_free(&wa);
    wire_free(&wb);
    g_rand_free(wa.rand);
    g_rand_free(wb.rand);
    g_rand_free(r);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    static Case cases[G_N_ELEMENTS(faults) * G_N_ELEMENTS(ops)];
    unsigned f, o, n = 0;

    g_test_init(&argc, &argv, NULL);
    for (f = 0; f < G_N_ELEMENTS(faults); f++) {
        for (o = 0; o < G_N_ELEMENTS(ops); o++) {
            Case *c = &cases[n++];

            c->f = &faults[f];
            c->op = &ops[o];
            c->path = g_strdup_printf("/vhca/lossy/%s/%s", faults[f].name,
                                      ops[o].name);
            g_test_add_data_func(c->path, c, test_case);
        }
    }
    return g_test_run();
}
