/*
 * Unit tests of IBTA 1.5's memory placement extensions on RC, RDMA FLUSH
 * and ATOMIC WRITE, between two engines back to back (as
 * test-vhca-rc.c): execution, the responder's checks and their NAKs,
 * the responder resources that answer duplicates without executing
 * again, and the parser's refusal of a FLUSH too short for its FETH.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-internal.h"
#include "vhca-transport.h"
#include "vhca-wire.h"

#define FLUSH_ACCESS    (VHCA_ACCESS_FLUSH_GLOBAL | VHCA_ACCESS_FLUSH_PERSISTENT)

/* Both QPs enable everything, both FLUSH types included (as test_qpex). */
static ConnOpts flush_opts(void)
{
    ConnOpts o = default_opts;

    o.access |= FLUSH_ACCESS;
    return o;
}

static uint64_t settle(Pair *p)
{
    return harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

/* An MR over b's whole buffer with @access: the key. */
static uint32_t b_mr(Pair *p, uint32_t access)
{
    return rdma_create_phys_mr(p->b.h, p->b.pdn, p->b.buf,
                               DATA_PAGES * 4096ull, access);
}

static void post_flush(Node *n, uint64_t wr_id, uint64_t raddr,
                       uint32_t rkey, uint32_t len, uint8_t type,
                       uint8_t level)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_FLUSH, VHCA_WQE_SIGNALED);
    wqe_remote(&w, raddr, rkey);
    w.flush_len = GUINT32_TO_LE(len);
    w.flush_type = type;
    w.flush_level = level;
    qp_put_send_wqe(n->h, &n->qp, &w);
}

static void post_atomic_write(Node *n, uint64_t wr_id, uint64_t raddr,
                              uint32_t rkey, const uint8_t value[8])
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_ATOMIC_WRITE, VHCA_WQE_SIGNALED);
    wqe_remote(&w, raddr, rkey);
    memcpy(&w.compare_add, value, 8);
    qp_put_send_wqe(n->h, &n->qp, &w);
}

/*
 * The requester's WQE failed at the responder with NAK @nak_code: the
 * WQE completes with @status, the rest is flushed, both QPs are in ERR
 * and b posted @event.
 */
static void expect_remote_error(Pair *p, uint32_t aeq_from, uint64_t wr_id,
                                uint8_t wc_opcode, uint8_t status,
                                uint8_t nak_code, uint8_t event)
{
    struct vhca_cqe cqe;

    cqe = expect_cqe(&p->a, &p->a.scq, wr_id, status, wc_opcode);
    g_assert_cmphex(GUINT32_FROM_LE(cqe.vendor_err), ==,
                    VHCA_VENDOR_ERR_NAK | nak_code);
    g_assert_cmpuint(p->a.h->ev.nak_rcvd.code, ==, nak_code);
    g_assert_cmpuint(p->b.h->ev.nak_sent.code, ==, nak_code);
    g_assert_cmpuint(qp_state(p->a.h, p->a.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_cmpuint(qp_state(p->b.h, p->b.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_true(qp_event_since(p->b.h, aeq_from, event, p->b.qp.qpn));
    /* The peer's doing, not either guest's. */
    g_assert_cmpuint(p->a.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 0);
    g_assert_cmpuint(p->b.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 0);
}

/* ---------------------------------------------------------------------- */
/* FLUSH                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * A WRITE then FLUSHes of its range and of the whole MR (whose address
 * and length do not matter), as test_qpex's flush_traffic does.
 */
static void test_flush(void)
{
    ConnOpts o = flush_opts();
    struct vhca_cqe cqe;
    uint32_t key;
    Pair p;

    pair_init(&p, &o);
    key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
    fill(&p.a, 0, 3000, 7);
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 3000,
         p.b.buf + 0x1000, key);
    post_flush(&p.a, 0xa2, p.b.buf + 0x1000, key, 3000, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_RANGE);
    post_flush(&p.a, 0xa3, 0, key, 0, VHCA_FLUSH_GLOBAL, VHCA_FLUSH_MR);
    post_flush(&p.a, 0xa4, 0xdead0000, key, 12345678, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_MR);
    /* A zero-length range inside the MR. */
    post_flush(&p.a, 0xa5, p.b.buf, key, 0, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_RANGE);
    /* MR selectivity: any length, even one no message may have. */
    post_flush(&p.a, 0xa6, 0, key, UINT32_MAX, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_MR);
    ring_sq(&p.a);
    g_assert_cmpuint(settle(&p), ==, 0);

    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    cqe = expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==, 3000);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    cqe = expect_cqe(&p.a, &p.a.scq, 0xa4, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==, 12345678);
    expect_cqe(&p.a, &p.a.scq, 0xa5, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    expect_cqe(&p.a, &p.a.scq, 0xa6, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    expect_no_cqe(&p.a, &p.a.scq);
    expect_same(&p.a, 0, &p.b, 0x1000, 3000);
    /* Nothing on b's side completes: FLUSH takes no receive WQE. */
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRIES), ==, 0);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
    pair_free(&p);
}

/*
 * The responder's FLUSH checks: the MR's FLUSH right of the placement
 * type (test_qp_ex_rc_flush_type_violate: a GLOBAL MR flushed for
 * PERSISTENT) and the range are remote access errors; a type the QP does
 * not enable, none at all, a reserved type bit or level are invalid
 * requests (as rxe).
 */
static void test_flush_errors(void)
{
    enum {
        NO_MR_RIGHT, PERSISTENT, RANGE_PAST_END, RANGE_BEFORE, BAD_KEY,
        QP_NO_RIGHT, NO_TYPE, RESERVED_TYPE, RESERVED_LEVEL, N_CASES
    };
    unsigned c;

    for (c = 0; c < N_CASES; c++) {
        ConnOpts o = flush_opts();
        uint8_t type = VHCA_FLUSH_GLOBAL, level = VHCA_FLUSH_RANGE;
        uint8_t nak = VHCA_IB_NAK_REMOTE_ACCESS;
        uint64_t raddr;
        uint32_t len = 100, key, pi;
        Pair p;

        if (c == QP_NO_RIGHT) {
            o.access &= ~VHCA_ACCESS_FLUSH_GLOBAL;
        }
        pair_init(&p, &o);
        key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
        raddr = p.b.buf + 0x2000;
        switch (c) {
        case NO_MR_RIGHT:
            key = p.b.key;                      /* ACCESS_ALL only */
            break;
        case PERSISTENT:
            type = VHCA_FLUSH_PERSISTENT;
            break;
        case RANGE_PAST_END:
            raddr = p.b.buf + DATA_PAGES * 4096ull - 50;
            break;
        case RANGE_BEFORE:
            raddr = p.b.buf - 8;
            break;
        case BAD_KEY:
            key ^= 0x100;
            break;
        case QP_NO_RIGHT:
            nak = VHCA_IB_NAK_INVALID_REQUEST;
            break;
        case NO_TYPE:
            type = 0;
            nak = VHCA_IB_NAK_INVALID_REQUEST;
            break;
        case RESERVED_TYPE:
            type = VHCA_FLUSH_GLOBAL | 4;
            nak = VHCA_IB_NAK_INVALID_REQUEST;
            break;
        case RESERVED_LEVEL:
            level = 2;
            nak = VHCA_IB_NAK_INVALID_REQUEST;
            break;
        }
        g_test_message("case %u", c);
        pi = aeq_drain(p.b.h);
        post_flush(&p.a, 0xa1, raddr, key, len, type, level);
        post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 10, 0, 0);
        ring_sq(&p.a);
        settle(&p);
        expect_remote_error(&p, pi, 0xa1, VHCA_WC_FLUSH,
                            nak == VHCA_IB_NAK_REMOTE_ACCESS ?
                            VHCA_WC_REM_ACCESS_ERR : VHCA_WC_REM_INV_REQ_ERR,
                            nak, nak == VHCA_IB_NAK_REMOTE_ACCESS ?
                            VHCA_EVENT_QP_ACCESS_ERR :
                            VHCA_EVENT_QP_REQ_ERR);
        expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);
        pair_free(&p);
    }
}

/*
 * A FLUSH WQE whose placement type or selectivity level is wider than its
 * FETH field is the guest's mistake: a local QP operation error, nothing
 * sent.
 */
static void test_flush_local_errors(void)
{
    static const struct { uint8_t type, level; } cases[] = {
        { 0x10, VHCA_FLUSH_RANGE }, { VHCA_FLUSH_GLOBAL, 4 },
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        ConnOpts o = flush_opts();
        Wire wa = { 0 };
        Pair p;

        pair_init(&p, &o);
        wire_attach(&p.a, &wa);
        post_flush(&p.a, 0xa1, p.b.buf, p.b.key, 8, cases[i].type,
                   cases[i].level);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_LOC_QP_OP_ERR,
                   VHCA_WC_FLUSH);
        g_assert_cmpuint(wa.count, ==, 0);
        g_assert_cmpuint(p.a.h->ev.err_wqe.n, ==, 1);
        g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
        pair_free(&p);
    }
}

/* ---------------------------------------------------------------------- */
/* ATOMIC WRITE                                                           */
/* ---------------------------------------------------------------------- */

/* The 8 bytes land as the WQE holds them, and nothing around them. */
static void test_atomic_write(void)
{
    static const uint8_t value[8] = { 'c', 'c', 1, 2, 3, 4, 0xfe, 0xff };
    uint8_t got[24], want[24];
    struct vhca_cqe cqe;
    Pair p;

    pair_init(&p, &default_opts);
    memset(want, 's', sizeof(want));
    ram_write(p.b.h, p.b.buf + 0x100 - 8, want, sizeof(want));
    memcpy(want + 8, value, 8);
    post_atomic_write(&p.a, 0xa1, p.b.buf + 0x100, p.b.key, value);
    ring_sq(&p.a);
    g_assert_cmpuint(settle(&p), ==, 0);
    cqe = expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS,
                     VHCA_WC_ATOMIC_WRITE);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==, 8);
    expect_no_cqe(&p.a, &p.a.scq);
    expect_no_cqe(&p.b, &p.b.rcq);
    ram_read(p.b.h, p.b.buf + 0x100 - 8, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 0);
    pair_free(&p);
}

/*
 * ATOMIC WRITE checks: misaligned is an invalid request (as rxe); an MR
 * without REMOTE_WRITE or a range past the MR a remote access error; a
 * QP without REMOTE_WRITE an invalid request.  Nothing is written.
 */
static void test_atomic_write_errors(void)
{
    enum { MISALIGNED, MR_NO_WRITE, PAST_END, QP_NO_WRITE, N_CASES };
    static const uint8_t value[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    unsigned c;

    for (c = 0; c < N_CASES; c++) {
        ConnOpts o = default_opts;
        uint8_t nak = VHCA_IB_NAK_REMOTE_ACCESS, zero[16] = { 0 }, got[16];
        uint64_t raddr;
        uint32_t key, pi;
        Pair p;

        if (c == QP_NO_WRITE) {
            o.access &= ~VHCA_ACCESS_REMOTE_WRITE;
        }
        pair_init(&p, &o);
        key = p.b.key;
        raddr = p.b.buf + 0x200;
        switch (c) {
        case MISALIGNED:
            raddr += 4;
            nak = VHCA_IB_NAK_INVALID_REQUEST;
            break;
        case MR_NO_WRITE:
            key = b_mr(&p, VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_READ |
                           VHCA_ACCESS_REMOTE_ATOMIC);
            break;
        case PAST_END:
            raddr = p.b.buf + DATA_PAGES * 4096ull;
            break;
        case QP_NO_WRITE:
            nak = VHCA_IB_NAK_INVALID_REQUEST;
            break;
        }
        g_test_message("case %u", c);
        pi = aeq_drain(p.b.h);
        post_atomic_write(&p.a, 0xa1, raddr, key, value);
        ring_sq(&p.a);
        settle(&p);
        expect_remote_error(&p, pi, 0xa1, VHCA_WC_ATOMIC_WRITE,
                            nak == VHCA_IB_NAK_REMOTE_ACCESS ?
                            VHCA_WC_REM_ACCESS_ERR : VHCA_WC_REM_INV_REQ_ERR,
                            nak, nak == VHCA_IB_NAK_REMOTE_ACCESS ?
                            VHCA_EVENT_QP_ACCESS_ERR :
                            VHCA_EVENT_QP_REQ_ERR);
        ram_read(p.b.h, p.b.buf + 0x200, got, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
        pair_free(&p);
    }
}

/*
 * A frame made up by a peer: ATOMIC WRITE with a payload other than 8
 * bytes, or a RETH length other than 8, is an invalid request (IBTA 1.5
 * oA19-28, as rxe).
 */
static size_t peer_frame(Pair *p, const VhcaWireTransport *tp,
                         const uint8_t *payload, uint32_t plen,
                         uint8_t *frame, size_t size)
{
    VhcaWirePacket pkt;
    size_t len;

    memset(&pkt, 0, sizeof(pkt));
    memcpy(pkt.net.dmac, p->b.h->core.cfg.mac, 6);
    memcpy(pkt.net.smac, p->a.h->core.cfg.mac, 6);
    memcpy(pkt.net.sgid, p->a.gid, 16);
    memcpy(pkt.net.dgid, p->b.gid, 16);
    pkt.net.hop_limit = 64;
    pkt.tp = *tp;
    pkt.tp.bth.pkey = 0xffff;
    pkt.tp.bth.dest_qpn = p->b.qp.qpn;
    pkt.payload = payload;
    pkt.payload_len = plen;
    len = vhca_wire_build(&pkt, frame, size);
    g_assert_cmpuint(len, >, 0);
    return len;
}

static void test_atomic_write_length(void)
{
    static const uint8_t payload[16] = { 9, 9, 9, 9, 9, 9, 9, 9,
                                         9, 9, 9, 9, 9, 9, 9, 9 };
    static const struct { uint32_t plen, dma_len; } cases[] = {
        { 16, 16 }, { 4, 4 }, { 8, 16 }, { 8, 0 },
    };
    uint8_t frame[256];
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        uint8_t zero[16] = { 0 }, got[16];
        VhcaWireTransport tp;
        Pair p;
        size_t len;

        pair_init(&p, &default_opts);
        memset(&tp, 0, sizeof(tp));
        tp.bth.opcode = VHCA_IB_OPCODE(RC, ATOMIC_WRITE);
        tp.bth.psn = default_opts.a_psn;
        tp.bth.ack_req = true;
        tp.reth.va = p.b.buf + 0x300;
        tp.reth.rkey = p.b.key;
        tp.reth.dma_len = cases[i].dma_len;
        len = peer_frame(&p, &tp, payload, cases[i].plen, frame,
                         sizeof(frame));
        harness_deliver(p.b.h, frame, len);
        harness_run(p.b.h);
        g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 1);
        g_assert_cmpuint(p.b.h->ev.nak_sent.code, ==,
                         VHCA_IB_NAK_INVALID_REQUEST);
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
        ram_read(p.b.h, p.b.buf + 0x300, got, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
        pair_free(&p);
    }
}

/* ---------------------------------------------------------------------- */
/* Hostile frames                                                         */
/* ---------------------------------------------------------------------- */

/*
 * A FLUSH whose FETH and RETH do not fit (a READ request relabelled) is
 * malformed: dropped by the parser and counted, no NAK, the QP goes on.
 */
static void test_flush_truncated_feth(void)
{
    uint8_t frame[256];
    VhcaWireTransport tp;
    size_t len, bth;
    Pair p;

    pair_init(&p, &default_opts);
    memset(&tp, 0, sizeof(tp));
    tp.bth.opcode = VHCA_IB_OPCODE(RC, RDMA_READ_REQUEST);
    tp.bth.psn = default_opts.a_psn;
    tp.reth.va = p.b.buf;
    tp.reth.rkey = p.b.key;
    tp.reth.dma_len = 8;
    len = peer_frame(&p, &tp, NULL, 0, frame, sizeof(frame));
    /* IPv4 (10.0.0.x GIDs): BTH after Ethernet, IP and UDP headers. */
    bth = 14 + 20 + 8;
    frame[bth] = VHCA_IB_OPCODE(RC, FLUSH);
    /* The ICRC covers the opcode: recompute it over the changed frame. */
    {
        uint32_t icrc = vhca_icrc(frame + 14, 20, false, len - 14 - 4);

        vhca_st_le32(frame + len - 4, icrc);
    }
    harness_deliver(p.b.h, frame, len);
    harness_run(p.b.h);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_MALFORMED), ==, 1);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 1);
    g_assert_cmpstr(p.b.h->last_drop_detail, ==, "ext-header-length");
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 0);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);

    /* The connection still works: the PSN was not consumed. */
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 64,
         p.b.buf, p.b.key);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Retransmission and responder resources                                 */
/* ---------------------------------------------------------------------- */

/* Records every frame a sends, and passes it on. */
typedef struct Recorder {
    unsigned count;
    size_t len[16];
    uint8_t data[16][VHCA_ETH_MAX_FRAME];
} Recorder;

static void record_hook(Harness *h, const uint8_t *buf, size_t len)
{
    Recorder *r = h->tx_hook_opaque;

    if (r->count < G_N_ELEMENTS(r->len)) {
        r->len[r->count] = len;
        memcpy(r->data[r->count], buf, len);
    }
    r->count++;
    harness_deliver(h->peer, buf, len);
}

/*
 * A FLUSH or ATOMIC WRITE request that comes again after it executed
 * (its response lost, the requester retrying) is answered from the
 * responder resources, not executed again (IBTA 1.5 oA19-14/15, as
 * rxe): an RDMA WRITE after the ATOMIC WRITE keeps its bytes.  Once
 * max_dest_rd_atomic newer requests have taken the resources, the old
 * one is too old and dropped (9.7.5.1.3).
 */
static void test_duplicates_replayed(void)
{
    static const uint8_t value[8] = { 0xa5, 1, 2, 3, 4, 5, 6, 0x5a };
    ConnOpts o = flush_opts();
    static Recorder rec;
    uint8_t got[8], later[8];
    uint32_t key, sent;
    unsigned i;
    Pair p;

    memset(&rec, 0, sizeof(rec));
    pair_init(&p, &o);
    key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
    p.a.h->tx_hook = record_hook;
    p.a.h->tx_hook_opaque = &rec;
    post_atomic_write(&p.a, 0xa1, p.b.buf + 0x400, key, value);
    post_flush(&p.a, 0xa2, p.b.buf, key, 4096, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_RANGE);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_ATOMIC_WRITE);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    g_assert_cmpuint(rec.count, ==, 2);

    /* Another value over the ATOMIC WRITE's target. */
    fill(&p.a, 0x10, 8, 3);
    ram_read(p.a.h, p.a.buf + 0x10, later, 8);
    post(&p.a, 0xa3, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0x10, 8,
         p.b.buf + 0x400, key);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);

    /* Both old requests again: answered, each once, not executed. */
    sent = p.b.h->tx_frames;
    for (i = 0; i < 2; i++) {
        harness_deliver(p.b.h, rec.data[i], rec.len[i]);
        settle(&p);
    }
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 2);
    g_assert_cmpuint(p.b.h->tx_frames - sent, ==, 2);
    /* a has nothing outstanding: the answers are stale there. */
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_DROP_STALE_RESPONSE), ==, 2);
    ram_read(p.b.h, p.b.buf + 0x400, got, 8);
    g_assert_cmpmem(got, 8, later, 8);
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 0);
    expect_no_cqe(&p.a, &p.a.scq);

    /*
     * b keeps max_dest_rd_atomic (16) resources and has used two: 15
     * newer FLUSHes reuse the ATOMIC WRITE's, which is then too old.
     */
    for (i = 0; i < 15; i++) {
        post_flush(&p.a, 0xa4 + i, 0, key, 0, VHCA_FLUSH_GLOBAL,
                   VHCA_FLUSH_MR);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa4 + i, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    }
    sent = p.b.h->tx_frames;
    harness_deliver(p.b.h, rec.data[0], rec.len[0]);
    settle(&p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_DUP_TOO_OLD), ==, 1);
    g_assert_cmpuint(p.b.h->tx_frames, ==, sent);
    ram_read(p.b.h, p.b.buf + 0x400, got, 8);
    g_assert_cmpmem(got, 8, later, 8);
    pair_free(&p);
}

/*
 * A responder given all VHCA_MAX_RD_ATOMIC resources keeps that many
 * requests to answer again (9.7.5.1.3): the oldest of 128 FLUSHes is
 * answered, not dropped; one FLUSH more reuses its resource, and then it
 * is too old.
 */
static void test_all_responder_resources(void)
{
    ConnOpts o = flush_opts();
    static Recorder rec;
    uint32_t key, sent, wr_id = 0;
    unsigned i;
    Pair p;

    memset(&rec, 0, sizeof(rec));
    o.max_rd = VHCA_MAX_RD_ATOMIC;
    o.max_dest_rd = VHCA_MAX_RD_ATOMIC;
    pair_init(&p, &o);
    key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
    p.a.h->tx_hook = record_hook;
    p.a.h->tx_hook_opaque = &rec;
    /* In rounds of 16: the SQ holds 32. */
    while (wr_id < VHCA_MAX_RD_ATOMIC) {
        for (i = 0; i < 16; i++) {
            post_flush(&p.a, wr_id + i, 0, key, 0, VHCA_FLUSH_GLOBAL,
                       VHCA_FLUSH_MR);
        }
        ring_sq(&p.a);
        settle(&p);
        for (i = 0; i < 16; i++, wr_id++) {
            expect_cqe(&p.a, &p.a.scq, wr_id, VHCA_WC_SUCCESS,
                       VHCA_WC_FLUSH);
        }
    }

    sent = p.b.h->tx_frames;
    harness_deliver(p.b.h, rec.data[0], rec.len[0]);
    settle(&p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 1);
    g_assert_cmpuint(p.b.h->tx_frames - sent, ==, 1);

    post_flush(&p.a, wr_id, 0, key, 0, VHCA_FLUSH_GLOBAL, VHCA_FLUSH_MR);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, wr_id, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    sent = p.b.h->tx_frames;
    harness_deliver(p.b.h, rec.data[0], rec.len[0]);
    settle(&p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_DUP_TOO_OLD), ==, 1);
    g_assert_cmpuint(p.b.h->tx_frames, ==, sent);
    pair_free(&p);
}

/*
 * The response to a FLUSH and to an ATOMIC WRITE lost: the requester
 * times out and sends each again; the responder answers from its
 * resources and both complete once.
 */
static void test_lost_responses(void)
{
    static const uint8_t value[8] = { 'c', 'c', 'c', 'c', 'c', 'c', 'c', 'c' };
    ConnOpts o = flush_opts();
    Wire wb = { .drop_all = true, .calm_after = 2 };
    uint32_t key;
    uint8_t got[8];
    Pair p;

    pair_init(&p, &o);
    key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
    wire_attach(&p.b, &wb);
    /* Both responses are lost; what comes later goes through. */
    post_flush(&p.a, 0xa1, p.b.buf, key, 64, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_RANGE);
    post_atomic_write(&p.a, 0xa2, p.b.buf + 0x800, key, value);
    ring_sq(&p.a);
    g_assert_cmpuint(settle(&p), >=, 4096ull << o.timeout);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_ATOMIC_WRITE);
    expect_no_cqe(&p.a, &p.a.scq);
    g_assert_cmpuint(wb.dropped, ==, 2);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ACK_TIMEOUTS), ==, 1);
    /* Each executed once, answered twice. */
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 2);
    ram_read(p.b.h, p.b.buf + 0x800, got, 8);
    g_assert_cmpmem(got, 8, value, 8);
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 0);
    pair_free(&p);
}

/*
 * A FLUSH's response lost but the ACK of a SEND after it arrives: the
 * FLUSH does not complete on that ACK; it is retried (implied NAK, IBTA
 * 9.7.5.1.2, as for a READ) and answered again.
 */
static void test_implied_nak(void)
{
    ConnOpts o = flush_opts();
    Wire wb = { .drop_nth = 1 };
    uint32_t key;
    Pair p;

    pair_init(&p, &o);
    key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
    wire_attach(&p.b, &wb);
    post_recv(&p.b, 0xb1, 0x10000, 0x1000);
    post_flush(&p.a, 0xa1, p.b.buf, key, 64, VHCA_FLUSH_GLOBAL,
               VHCA_FLUSH_RANGE);
    post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&p.a);
    g_assert_cmpuint(settle(&p), ==, 0);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_FLUSH);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, ==, 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.why, ==, VHCA_RETRY_IMPLIED_NAK);
    g_assert_cmphex(p.a.h->ev.retransmit.psn, ==, o.a_psn);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 2);
    pair_free(&p);
}

/*
 * FLUSH and ATOMIC WRITE take a responder resource at the peer: at most
 * max_rd_atomic of them are outstanding, as READs and atomics.
 */
static void test_rd_atomic_limit(void)
{
    static const uint8_t value[8] = { 0 };
    ConnOpts o = flush_opts();
    Wire wa = { .drop_all = true };
    uint32_t key;
    Pair p;

    o.max_rd = 2;
    pair_init(&p, &o);
    key = b_mr(&p, ACCESS_ALL | VHCA_ACCESS_FLUSH_GLOBAL);
    wire_attach(&p.a, &wa);
    post_flush(&p.a, 0xa1, 0, key, 0, VHCA_FLUSH_GLOBAL, VHCA_FLUSH_MR);
    post_atomic_write(&p.a, 0xa2, p.b.buf, key, value);
    post_flush(&p.a, 0xa3, 0, key, 0, VHCA_FLUSH_GLOBAL, VHCA_FLUSH_MR);
    ring_sq(&p.a);
    harness_run(p.a.h);
    g_assert_cmpuint(wa.count, ==, 2);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/placement/flush", test_flush);
    g_test_add_func("/vhca/placement/flush-errors", test_flush_errors);
    g_test_add_func("/vhca/placement/flush-local-errors",
                    test_flush_local_errors);
    g_test_add_func("/vhca/placement/flush-truncated-feth",
                    test_flush_truncated_feth);
    g_test_add_func("/vhca/placement/atomic-write", test_atomic_write);
    g_test_add_func("/vhca/placement/atomic-write-errors",
                    test_atomic_write_errors);
    g_test_add_func("/vhca/placement/atomic-write-length",
                    test_atomic_write_length);
    g_test_add_func("/vhca/placement/duplicates-replayed",
                    test_duplicates_replayed);
    g_test_add_func("/vhca/placement/all-responder-resources",
                    test_all_responder_resources);
    g_test_add_func("/vhca/placement/lost-responses", test_lost_responses);
    g_test_add_func("/vhca/placement/implied-nak", test_implied_nak);
    g_test_add_func("/vhca/placement/rd-atomic-limit", test_rd_atomic_limit);
    return g_test_run();
}
