/*
 * Unit tests of the RC transport (IBTA Vol 1 chapter 9): two engines
 * wired back to back through their send_frame hooks, with a fake clock,
 * and frame loss, duplication and reordering injected on the wire.
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

static uint64_t settle(Pair *p)
{
    return harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

static void post_atomic(Node *n, uint64_t wr_id, uint8_t opcode,
                        uint32_t off, uint64_t raddr, uint32_t rkey,
                        uint64_t compare_add, uint64_t swap)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, opcode, VHCA_WQE_SIGNALED);
    wqe_sge(&w, n->buf + off, 8, n->key);
    wqe_remote(&w, raddr, rkey);
    w.compare_add = GUINT64_TO_LE(compare_add);
    w.swap = GUINT64_TO_LE(swap);
    qp_put_send_wqe(n->h, &n->qp, &w);
}

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

/* ---------------------------------------------------------------------- */
/* Tests                                                                  */
/* ---------------------------------------------------------------------- */

static void test_send_recv(void)
{
    Pair p;
    struct vhca_cqe cqe;
    struct vhca_send_wqe w;
    const uint8_t imm[4] = { 0xde, 0xad, 0xbe, 0xef };
    uint32_t inv_key;

    pair_init(&p, &default_opts);
    inv_key = node_fast_mr(&p.b, 1, 0x34);
    post_recv(&p.b, 0xb1, 0x10000, 8192);
    post_recv(&p.b, 0xb2, 0x20000, 64);
    post_recv(&p.b, 0xb3, 0x30000, 64);
    post_recv(&p.b, 0xb4, 0x30000, 0);
    fill(&p.a, 0, 3000, 1);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 3000, 0, 0);
    /* SEND with immediate: the CQE carries the bytes in wire order. */
    wqe_init(&w, 0xa2, VHCA_WR_SEND_WITH_IMM,
             VHCA_WQE_SIGNALED | VHCA_WQE_SOLICITED);
    wqe_sge(&w, p.a.buf + 100, 40, p.a.key);
    memcpy(&w.imm_or_inv, imm, 4);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    wqe_init(&w, 0xa3, VHCA_WR_SEND_WITH_INV, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf + 200, 8, p.a.key);
    w.imm_or_inv = GUINT32_TO_LE(inv_key);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    /* A zero-length SEND. */
    post(&p.a, 0xa4, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 0, 0, 0);
    ring_sq(&p.a);
    /* The doorbell only schedules: nothing is sent inside the MMIO write. */
    g_assert_cmpuint(p.a.h->tx_frames, ==, 0);
    g_assert_true(p.a.h->work_scheduled);
    settle(&p);

    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 0xa4, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);

    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(cqe.flags, ==, 0);
    expect_same(&p.a, 0, &p.b, 0x10000, 3000);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.byte_len, ==, 40);
    g_assert_cmpuint(cqe.flags, ==, VHCA_CQE_WITH_IMM);
    g_assert_cmpmem(&cqe.imm_or_inv, 4, imm, 4);
    expect_same(&p.a, 100, &p.b, 0x20000, 40);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb3, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.flags, ==, VHCA_CQE_WITH_INV);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.imm_or_inv), ==, inv_key);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb4, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    expect_no_cqe(&p.b, &p.b.rcq);

    /* 3 + 1 + 1 + 1 request packets; their ACKs were coalesced. */
    g_assert_cmpuint(p.a.h->tx_frames, ==, 6);
    g_assert_cmpuint(p.b.h->tx_frames, ==, 1);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_PACKETS), ==, 6);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_TX_PACKETS), ==, 6);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_TX_PACKETS), ==, 1);
    g_assert_false(p.a.h->timer_armed);
    /* RESET -> INIT -> RTR -> RTS, each by a command; nothing went wrong. */
    g_assert_cmpuint(p.a.h->ev.qp_state.n, ==, 3);
    g_assert_cmpuint(p.a.h->ev.qp_state.qpn, ==, p.a.qp.qpn);
    g_assert_cmpuint(p.a.h->ev.qp_state.type, ==, VHCA_QPT_RC);
    g_assert_cmpuint(p.a.h->ev.qp_state.from, ==, VHCA_QPS_RTR);
    g_assert_cmpuint(p.a.h->ev.qp_state.to, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(p.a.h->ev.qp_state.why, ==, VHCA_QP_CHANGE_COMMAND);
    g_assert_cmpuint(p.a.h->ev.retransmit.n + p.a.h->ev.nak_rcvd.n +
                     p.b.h->ev.nak_sent.n + p.a.h->ev.cqe_error.n, ==, 0);
    pair_free(&p);
}

/* SEND, WRITE and READ of lengths around each path MTU. */
static void test_segmentation(void)
{
    uint8_t mtu;

    for (mtu = VHCA_IB_MTU_256; mtu <= VHCA_IB_MTU_4096; mtu++) {
        ConnOpts o = default_opts;
        uint32_t m = 128u << mtu;
        uint32_t lens[] = { 0, 1, m - 1, m, m + 1, 3 * m, 3 * m + 5 };
        Pair p;
        unsigned i;

        o.mtu = mtu;
        pair_init(&p, &o);
        for (i = 0; i < G_N_ELEMENTS(lens); i++) {
            uint32_t len = lens[i];
            uint32_t npkts = len ? (len + m - 1) / m : 1;
            unsigned a_tx = p.a.h->tx_frames, b_tx;
            struct vhca_cqe cqe;

            fill(&p.a, 0, len, i + mtu);
            post_recv(&p.b, 0x100 + i, 0x10000, 0x10000);
            post(&p.a, 0x200 + i, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, len,
                 0, 0);
            ring_sq(&p.a);
            settle(&p);
            g_assert_cmpuint(p.a.h->tx_frames - a_tx, ==, npkts);
            expect_cqe(&p.a, &p.a.scq, 0x200 + i, VHCA_WC_SUCCESS,
                       VHCA_WC_SEND);
            cqe = expect_cqe(&p.b, &p.b.rcq, 0x100 + i, VHCA_WC_SUCCESS,
                             VHCA_WC_RECV);
            g_assert_cmpuint(cqe.byte_len, ==, len);
            expect_same(&p.a, 0, &p.b, 0x10000, len);

            fill(&p.a, 0x20000, len, i + 50);
            a_tx = p.a.h->tx_frames;
            post(&p.a, 0x300 + i, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED,
                 0x20000, len, p.b.buf + 0x20000, p.b.key);
            ring_sq(&p.a);
            settle(&p);
            g_assert_cmpuint(p.a.h->tx_frames - a_tx, ==, npkts);
            cqe = expect_cqe(&p.a, &p.a.scq, 0x300 + i, VHCA_WC_SUCCESS,
                             VHCA_WC_RDMA_WRITE);
            g_assert_cmpuint(cqe.byte_len, ==, len);
            expect_same(&p.a, 0x20000, &p.b, 0x20000, len);

            /* READ it back elsewhere: npkts response packets. */
            fill(&p.b, 0x30000, len, i + 90);
            a_tx = p.a.h->tx_frames;
            b_tx = p.b.h->tx_frames;
            post(&p.a, 0x400 + i, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED,
                 0x30000, len, p.b.buf + 0x30000, p.b.key);
            ring_sq(&p.a);
            settle(&p);
            g_assert_cmpuint(p.a.h->tx_frames - a_tx, ==, 1);
            g_assert_cmpuint(p.b.h->tx_frames - b_tx, ==, npkts);
            cqe = expect_cqe(&p.a, &p.a.scq, 0x400 + i, VHCA_WC_SUCCESS,
                             VHCA_WC_RDMA_READ);
            g_assert_cmpuint(cqe.byte_len, ==, len);
            expect_same(&p.a, 0x30000, &p.b, 0x30000, len);
        }
        expect_no_cqe(&p.a, &p.a.scq);
        expect_no_cqe(&p.b, &p.b.rcq);
        g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED) +
                         counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
        pair_free(&p);
    }
}

static void test_write_imm_and_atomics(void)
{
    Pair p;
    struct vhca_send_wqe w;
    struct vhca_cqe cqe;
    const uint8_t imm[4] = { 1, 2, 3, 4 };

    pair_init(&p, &default_opts);
    fill(&p.a, 0, 5000, 3);
    post_recv(&p.b, 0xb0, 0, 0);
    wqe_init(&w, 0xa0, VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf, 2000, p.a.key);
    wqe_sge(&w, p.a.buf + 3000, 2000, p.a.key);  /* two SGEs gathered */
    wqe_remote(&w, p.b.buf + 0x8000, p.b.key);
    memcpy(&w.imm_or_inv, imm, 4);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);

    st64(&p.b, 0x100, 5);
    post_atomic(&p.a, 0xa1, VHCA_WR_ATOMIC_CMP_AND_SWP, 0x6000,
                p.b.buf + 0x100, p.b.key, 5, 9);
    post_atomic(&p.a, 0xa2, VHCA_WR_ATOMIC_CMP_AND_SWP, 0x6008,
                p.b.buf + 0x100, p.b.key, 5, 11);
    post_atomic(&p.a, 0xa3, VHCA_WR_ATOMIC_FETCH_AND_ADD, 0x6010,
                p.b.buf + 0x100, p.b.key, 3, 0);
    ring_sq(&p.a);
    settle(&p);

    cqe = expect_cqe(&p.a, &p.a.scq, 0xa0, VHCA_WC_SUCCESS,
                     VHCA_WC_RDMA_WRITE);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb0, VHCA_WC_SUCCESS,
                     VHCA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(cqe.byte_len, ==, 4000);
    g_assert_cmpuint(cqe.flags, ==, VHCA_CQE_WITH_IMM);
    g_assert_cmpmem(&cqe.imm_or_inv, 4, imm, 4);
    expect_same(&p.a, 0, &p.b, 0x8000, 2000);
    expect_same(&p.a, 3000, &p.b, 0x8000 + 2000, 2000);

    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_COMP_SWAP);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_COMP_SWAP);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_FETCH_ADD);
    g_assert_cmpuint(ld64(&p.a, 0x6000), ==, 5);   /* swapped 5 -> 9 */
    g_assert_cmpuint(ld64(&p.a, 0x6008), ==, 9);   /* 9 != 5: no swap */
    g_assert_cmpuint(ld64(&p.a, 0x6010), ==, 9);   /* 9 + 3 */
    g_assert_cmpuint(ld64(&p.b, 0x100), ==, 12);
    pair_free(&p);
}

/* Unsignaled WQEs complete silently; sq_sig_all is not set here. */
static void test_unsignaled(void)
{
    Pair p;

    pair_init(&p, &default_opts);
    post_recv(&p.b, 0xb1, 0, 64);
    post_recv(&p.b, 0xb2, 64, 64);
    post(&p.a, 0xa1, VHCA_WR_SEND, 0, 0, 10, 0, 0);
    post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 10, 0, 0);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(p.a.h->core.qps[p.a.qp.qpn].sq.ci, ==, 2);
    pair_free(&p);
}

/* PSNs wrap modulo 2^24 in the middle of messages. */
static void test_psn_wrap(void)
{
    ConnOpts o = default_opts;
    Pair p;
    unsigned i;

    o.a_psn = 0xfffffe;
    o.b_psn = 0xffffff;
    pair_init(&p, &o);
    for (i = 0; i < 4; i++) {
        fill(&p.a, i * 0x4000, 3000, i);
        post_recv(&p.b, 0xb0 + i, i * 0x4000, 0x4000);
        post(&p.a, 0xa0 + i, VHCA_WR_SEND, VHCA_WQE_SIGNALED, i * 0x4000,
             3000, 0, 0);
        /* READ from b across b's... a's PSN space (3 response PSNs). */
        fill(&p.b, 0x20000 + i * 0x1000, 2500, i + 9);
        post(&p.a, 0xc0 + i, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED,
             0x20000 + i * 0x1000, 2500, p.b.buf + 0x20000 + i * 0x1000,
             p.b.key);
    }
    ring_sq(&p.a);
    settle(&p);
    for (i = 0; i < 4; i++) {
        expect_cqe(&p.a, &p.a.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        expect_cqe(&p.a, &p.a.scq, 0xc0 + i, VHCA_WC_SUCCESS,
                   VHCA_WC_RDMA_READ);
        expect_cqe(&p.b, &p.b.rcq, 0xb0 + i, VHCA_WC_SUCCESS, VHCA_WC_RECV);
        expect_same(&p.a, i * 0x4000, &p.b, i * 0x4000, 3000);
        expect_same(&p.a, 0x20000 + i * 0x1000, &p.b, 0x20000 + i * 0x1000,
                    2500);
    }
    /* 4 * (3 + 3) PSNs from 0xfffffe. */
    g_assert_cmphex(p.a.h->core.qps[p.a.qp.qpn].req.next_psn, ==,
                    (0xfffffe + 24) & 0xffffff);
    g_assert_cmphex(p.b.h->core.qps[p.b.qp.qpn].resp.epsn, ==,
                    (0xfffffe + 24) & 0xffffff);
    pair_free(&p);
}

/* A lost request packet: the next one draws a NAK sequence error. */
static void test_loss_request(void)
{
    Pair p;
    Wire wa = { .drop_nth = 2 };
    uint64_t t;

    pair_init(&p, &default_opts);
    wire_attach(&p.a, &wa);
    post_recv(&p.b, 0xb1, 0x10000, 0x8000);
    fill(&p.a, 0, 5000, 7);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 5000, 0, 0);
    ring_sq(&p.a);
    t = settle(&p);
    /* Recovered by the NAK, without waiting for the timer. */
    g_assert_cmpuint(t, ==, 0);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_same(&p.a, 0, &p.b, 0x10000, 5000);
    /* 5 packets, one lost; the NAK'd one and what followed it again. */
    g_assert_cmpuint(wa.count, ==, 5 + 4);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ROCE_TX_PACKETS), ==, 9);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 4);
    /* Packets 3, 4 and 5 were ahead of the PSN b expected: one NAK. */
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_OUT_OF_SEQ_REQUEST), ==, 3);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_SEQ_NAK_SENT), ==, 1);
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 1);
    g_assert_cmpuint(p.b.h->ev.nak_sent.qpn, ==, p.b.qp.qpn);
    g_assert_cmphex(p.b.h->ev.nak_sent.psn, ==, default_opts.a_psn + 1);
    g_assert_cmpuint(p.b.h->ev.nak_sent.kind, ==, VHCA_NAK_KIND_NAK);
    g_assert_cmpuint(p.b.h->ev.nak_sent.code, ==, VHCA_IB_NAK_PSN_SEQ_ERROR);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_SEQ_NAK_RCVD), ==, 1);
    g_assert_cmpuint(p.a.h->ev.nak_rcvd.n, ==, 1);
    g_assert_cmpuint(p.a.h->ev.nak_rcvd.qpn, ==, p.a.qp.qpn);
    g_assert_cmphex(p.a.h->ev.nak_rcvd.psn, ==, default_opts.a_psn + 1);
    g_assert_cmpuint(p.a.h->ev.nak_rcvd.kind, ==, VHCA_NAK_KIND_NAK);
    g_assert_cmpuint(p.a.h->ev.nak_rcvd.code, ==, VHCA_IB_NAK_PSN_SEQ_ERROR);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRIES), ==, 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, ==, 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.qpn, ==, p.a.qp.qpn);
    g_assert_cmphex(p.a.h->ev.retransmit.psn, ==, default_opts.a_psn + 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.why, ==, VHCA_RETRY_SEQ_NAK);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ACK_TIMEOUTS), ==, 0);
    pair_free(&p);
}

/* A lost ACK: the requester times out and sends again; a duplicate. */
static void test_loss_ack(void)
{
    Pair p;
    Wire wb = { .drop_nth = 1 };
    uint64_t t;

    pair_init(&p, &default_opts);
    wire_attach(&p.b, &wb);
    post_recv(&p.b, 0xb1, 0x10000, 0x8000);
    post_recv(&p.b, 0xb2, 0x10000, 0x8000);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&p.a);
    t = settle(&p);
    g_assert_cmpuint(t, >=, 4096ull << 14);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    /* The duplicate was acknowledged, not received twice. */
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpuint(wb.count, ==, 2);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 1);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ACK_TIMEOUTS), ==, 1);
    g_assert_cmpuint(p.a.h->ev.ack_timeout.n, ==, 1);
    g_assert_cmpuint(p.a.h->ev.ack_timeout.qpn, ==, p.a.qp.qpn);
    g_assert_cmphex(p.a.h->ev.ack_timeout.psn, ==, default_opts.a_psn);
    g_assert_cmpuint(p.a.h->ev.ack_timeout.retries_left, ==,
                     default_opts.retry_cnt);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRIES), ==, 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, ==, 1);
    g_assert_cmphex(p.a.h->ev.retransmit.psn, ==, default_opts.a_psn);
    g_assert_cmpuint(p.a.h->ev.retransmit.why, ==, VHCA_RETRY_TIMEOUT);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 1);
    pair_free(&p);
}

/* Every frame twice: READ replayed, atomics answered, not re-executed. */
static void test_duplicates(void)
{
    Pair p;
    Wire wa = { .dup_all = true }, wb = { .dup_all = true };

    pair_init(&p, &default_opts);
    wire_attach(&p.a, &wa);
    wire_attach(&p.b, &wb);
    st64(&p.b, 0x40, 100);
    fill(&p.b, 0x1000, 4000, 4);
    fill(&p.a, 0x8000, 3000, 5);
    post_recv(&p.b, 0xb1, 0x10000, 0x8000);
    post_atomic(&p.a, 0xa1, VHCA_WR_ATOMIC_FETCH_AND_ADD, 0x100,
                p.b.buf + 0x40, p.b.key, 1, 0);
    post(&p.a, 0xa2, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, 0x1000, 4000,
         p.b.buf + 0x1000, p.b.key);
    post(&p.a, 0xa3, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0x8000, 3000, 0, 0);
    post_atomic(&p.a, 0xa4, VHCA_WR_ATOMIC_CMP_AND_SWP, 0x108,
                p.b.buf + 0x40, p.b.key, 101, 500);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_FETCH_ADD);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 0xa4, VHCA_WC_SUCCESS, VHCA_WC_COMP_SWAP);
    expect_no_cqe(&p.a, &p.a.scq);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpuint(ld64(&p.a, 0x100), ==, 100);
    g_assert_cmpuint(ld64(&p.a, 0x108), ==, 101);
    g_assert_cmpuint(ld64(&p.b, 0x40), ==, 500);    /* 100 + 1, swapped */
    expect_same(&p.a, 0x1000, &p.b, 0x1000, 4000);
    expect_same(&p.a, 0x8000, &p.b, 0x10000, 3000);
    /* Each of the 1 + 1 + 3 + 1 request packets came twice. */
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 6);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 0);
    pair_free(&p);
}

/*
 * A lost READ response packet: the next one implies the loss (IBTA
 * 9.7.5.1.2) and the READ is asked again from the missing PSN.
 */
static void test_implied_nak(void)
{
    Pair p;
    Wire wb = { .drop_nth = 2 };

    pair_init(&p, &default_opts);
    wire_attach(&p.b, &wb);
    fill(&p.b, 0x1000, 3000, 6);
    post(&p.a, 0xa1, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, 0, 3000,
         p.b.buf + 0x1000, p.b.key);
    ring_sq(&p.a);
    g_assert_cmpuint(settle(&p), ==, 0);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    expect_same(&p.a, 0, &p.b, 0x1000, 3000);
    g_assert_cmpuint(p.a.h->ev.retransmit.n, ==, 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.qpn, ==, p.a.qp.qpn);
    g_assert_cmphex(p.a.h->ev.retransmit.psn, ==, default_opts.a_psn + 1);
    g_assert_cmpuint(p.a.h->ev.retransmit.why, ==, VHCA_RETRY_IMPLIED_NAK);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRIES), ==, 1);
    /* The READ request went again, for the rest of the data. */
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 1);
    /* b answers it as a duplicate from its responder resources. */
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DUPLICATE_REQUEST), ==, 1);
    pair_free(&p);
}

/* Two packets swapped: NAK sequence error, then recovery. */
static void test_reorder(void)
{
    Pair p;
    Wire wa = { .hold_nth = 1 };

    pair_init(&p, &default_opts);
    wire_attach(&p.a, &wa);
    post_recv(&p.b, 0xb1, 0x10000, 0x8000);
    fill(&p.a, 0, 4096, 8);
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 4096,
         p.b.buf + 0x20000, p.b.key);
    post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_same(&p.a, 0, &p.b, 0x20000, 4096);
    g_assert_cmpuint(wa.count, >, 5);
    pair_free(&p);
}

static void test_rnr(void)
{
    Pair p;
    Wire wb = { 0 };
    VhcaWirePacket pkt;

    pair_init(&p, &default_opts);
    wire_attach(&p.b, &wb);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 2000, 0, 0);
    ring_sq(&p.a);
    harness_pair_settle(p.a.h, p.b.h, 0);
    /* No receive WQE: RNR NAK with the QP's min_rnr_timer. */
    g_assert_cmpint(vhca_wire_parse(wb.last, wb.last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    g_assert_cmphex(pkt.tp.aeth.syndrome, ==, vhca_aeth_rnr_nak(1));
    g_assert_cmphex(pkt.tp.bth.psn, ==, default_opts.a_psn);
    g_assert_true(p.a.h->timer_armed);
    g_assert_cmpuint(p.a.h->timer_deadline - p.a.h->now_ns, ==, 10000);
    expect_no_cqe(&p.a, &p.a.scq);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_RNR_NAK_SENT), ==, 1);
    g_assert_cmpuint(p.b.h->ev.nak_sent.n, ==, 1);
    g_assert_cmpuint(p.b.h->ev.nak_sent.qpn, ==, p.b.qp.qpn);
    g_assert_cmphex(p.b.h->ev.nak_sent.psn, ==, default_opts.a_psn);
    g_assert_cmpuint(p.b.h->ev.nak_sent.kind, ==, VHCA_NAK_KIND_RNR);
    g_assert_cmpuint(p.b.h->ev.nak_sent.code, ==, 1);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RNR_NAK_RCVD), ==, 1);
    g_assert_cmpuint(p.a.h->ev.nak_rcvd.kind, ==, VHCA_NAK_KIND_RNR);
    g_assert_cmpuint(p.a.h->ev.nak_rcvd.code, ==, 1);
    g_assert_cmpuint(p.a.h->ev.rnr_wait.n, ==, 1);
    g_assert_cmpuint(p.a.h->ev.rnr_wait.qpn, ==, p.a.qp.qpn);
    g_assert_cmphex(p.a.h->ev.rnr_wait.psn, ==, default_opts.a_psn);
    g_assert_cmpuint(p.a.h->ev.rnr_wait.timer_ns, ==, 10000);
    /* Waiting out an RNR NAK is not a retry. */
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRIES), ==, 0);
    /* The receiver posts a buffer; the retry after 10 us succeeds. */
    post_recv(&p.b, 0xb1, 0x10000, 0x8000);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    expect_same(&p.a, 0, &p.b, 0x10000, 2000);
    pair_free(&p);
}

static void test_rnr_exhausted(void)
{
    ConnOpts o = default_opts;
    Pair p;
    Wire wb = { 0 };

    o.rnr_retry = 2;
    pair_init(&p, &o);
    wire_attach(&p.b, &wb);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    post(&p.a, 0xa2, VHCA_WR_SEND, 0, 0, 100, 0, 0);
    ring_sq(&p.a);
    settle(&p);
    /* The first try and two retries, each RNR NAK'd. */
    g_assert_cmpuint(wb.count, ==, 3);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_RNR_RETRY_EXC_ERR,
               VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);
    g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
    /* The responder did nothing wrong. */
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_RNR_NAK_SENT), ==, 3);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RNR_NAK_RCVD), ==, 3);
    g_assert_cmpuint(p.a.h->ev.rnr_wait.n, ==, 2);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RNR_RETRY_EXCEEDED), ==, 1);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRY_EXCEEDED), ==, 0);
    /* The WQE that failed and the one flushed behind it. */
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_COMPLETION_ERRORS), ==, 2);
    g_assert_cmpuint(p.a.h->ev.qp_state.qpn, ==, p.a.qp.qpn);
    g_assert_cmpuint(p.a.h->ev.qp_state.from, ==, VHCA_QPS_RTS);
    g_assert_cmpuint(p.a.h->ev.qp_state.to, ==, VHCA_QPS_ERR);
    g_assert_cmpuint(p.a.h->ev.qp_state.why, ==, VHCA_QP_CHANGE_ERROR);
    pair_free(&p);
}

/* The peer is gone: the retry counter runs out. */
static void test_retry_exhausted(void)
{
    ConnOpts o = default_opts;
    Pair p;
    Wire wa = { .drop_all = true };
    uint64_t t;

    o.retry_cnt = 2;
    o.timeout = 10;
    pair_init(&p, &o);
    wire_attach(&p.a, &wa);
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 100,
         p.b.buf, p.b.key);
    post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&p.a);
    t = settle(&p);
    /*
     * T, then 2T and 4T: each timeout after a timeout doubles the timer,
     * within the 4T IBTA 9.7.6.1.3 allows (vhca_req_timer_backoff()).
     */
    g_assert_cmpuint(t, ==, (1 + 2 + 4) * (4096ull << 10));
    /* Both WQEs went out, then each timeout resent the oldest only. */
    g_assert_cmpuint(wa.count, ==, 2 + 2);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_RETRY_EXC_ERR,
               VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);
    g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_false(p.a.h->timer_armed);
    /* Three timeouts: two retries, then none left. */
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_ACK_TIMEOUTS), ==, 3);
    g_assert_cmpuint(p.a.h->ev.ack_timeout.n, ==, 3);
    g_assert_cmphex(p.a.h->ev.ack_timeout.psn, ==, default_opts.a_psn);
    g_assert_cmpuint(p.a.h->ev.ack_timeout.retries_left, ==, 0);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRIES), ==, 2);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRANSMITTED_PKTS), ==, 2);
    g_assert_cmpuint(counter(p.a.h, VHCA_CNT_RETRY_EXCEEDED), ==, 1);
    /* Two doublings, then the third timeout fails the WQE. */
    g_assert_cmpuint(cc_counter(p.a.h, VHCA_CC_CNT_REQ_TIMER_BACKOFFS), ==,
                     2);
    g_assert_cmpuint(p.a.h->ev.timer_backoff.n, ==, 2);
    g_assert_cmpuint(p.a.h->ev.timer_backoff.timer_ns, ==, 4 * (4096ull << 10));
    g_assert_cmpuint(p.a.h->ev.cqe_error.n, ==, 2);
    g_assert_cmphex(p.a.h->ev.cqe_error.wr_id, ==, 0xa2);
    g_assert_cmpuint(p.a.h->ev.cqe_error.status, ==, VHCA_WC_WR_FLUSH_ERR);
    pair_free(&p);
}

/* Bad rkey, bounds and rights: NAK remote access, both QPs in ERR. */
static void test_remote_access_errors(void)
{
    unsigned variant;

    for (variant = 0; variant < 4; variant++) {
        Pair p;
        uint32_t pi, rkey;
        uint64_t raddr;
        uint8_t op = VHCA_WR_RDMA_WRITE;
        struct vhca_cqe cqe;

        pair_init(&p, &default_opts);
        raddr = p.b.buf;
        rkey = p.b.key;
        switch (variant) {
        case 0:
            rkey ^= 0x100;                      /* another MR index */
            break;
        case 1:
            raddr += DATA_PAGES * 4096 - 50;    /* runs past the end */
            op = VHCA_WR_RDMA_READ;
            break;
        case 2:
            /* An MR without REMOTE_WRITE. */
            rkey = rdma_create_phys_mr(p.b.h, p.b.pdn, p.b.buf, 4096,
                                       VHCA_ACCESS_LOCAL_WRITE |
                                       VHCA_ACCESS_REMOTE_READ);
            break;
        case 3:
            /* A key of another PD. */
            rkey = rdma_create_phys_mr(p.b.h, rdma_create_pd(p.b.h),
                                       p.b.buf, 4096, ACCESS_ALL);
            break;
        }
        pi = aeq_drain(p.b.h);
        post(&p.a, 0xa1, op, VHCA_WQE_SIGNALED, 0, 100, raddr, rkey);
        post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 10, 0, 0);
        ring_sq(&p.a);
        settle(&p);
        cqe = expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
                         op == VHCA_WR_RDMA_READ ? VHCA_WC_RDMA_READ :
                         VHCA_WC_RDMA_WRITE);
        /* The peer's check failed: its NAK code is in vendor_err. */
        g_assert_cmphex(GUINT32_FROM_LE(cqe.vendor_err), ==,
                        VHCA_VENDOR_ERR_NAK | VHCA_IB_NAK_REMOTE_ACCESS);
        g_assert_cmpuint(p.a.h->ev.cqe_error.n, ==, 2);
        g_assert_cmpuint(p.a.h->ev.cqe_error.status, ==,
                         VHCA_WC_WR_FLUSH_ERR);
        expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_WR_FLUSH_ERR,
                   VHCA_WC_SEND);
        g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
        /* IBTA 9.9.3.1.3: the responder QP goes to ERR, with an event. */
        g_assert_true(qp_event_since(p.b.h, pi, VHCA_EVENT_QP_ACCESS_ERR,
                                     p.b.qp.qpn));
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
        g_assert_cmpuint(counter(p.b.h, VHCA_CNT_REM_ACCESS_NAK_SENT), ==,
                         1);
        g_assert_cmpuint(counter(p.a.h, VHCA_CNT_REM_ACCESS_NAK_RCVD), ==,
                         1);
        g_assert_cmpuint(p.a.h->ev.nak_rcvd.code, ==,
                         VHCA_IB_NAK_REMOTE_ACCESS);
        g_assert_cmphex(p.a.h->ev.nak_rcvd.psn, ==, default_opts.a_psn);
        g_assert_cmpuint(p.b.h->ev.qp_state.qpn, ==, p.b.qp.qpn);
        g_assert_cmpuint(p.b.h->ev.qp_state.to, ==, VHCA_QPS_ERR);
        g_assert_cmpuint(p.b.h->ev.qp_state.why, ==, VHCA_QP_CHANGE_ERROR);
        /* The peer's mistake, not either guest's: no guest error. */
        g_assert_cmpuint(p.a.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 0);
        g_assert_cmpuint(p.b.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 0);
        pair_free(&p);
    }
}

/* Bad WQEs complete with local errors, and the rest is flushed. */
static void test_local_errors(void)
{
    static const struct {
        uint8_t status;
        uint8_t wc_opcode;
    } expect[] = {
        { VHCA_WC_LOC_PROT_ERR, VHCA_WC_SEND },
        { VHCA_WC_LOC_QP_OP_ERR, VHCA_WC_SEND },
        { VHCA_WC_LOC_QP_OP_ERR, VHCA_WC_SEND },
        { VHCA_WC_LOC_LEN_ERR, VHCA_WC_SEND },
        { VHCA_WC_LOC_PROT_ERR, VHCA_WC_RDMA_READ },
        { VHCA_WC_LOC_QP_OP_ERR, VHCA_WC_FETCH_ADD },
        { VHCA_WC_LOC_LEN_ERR, VHCA_WC_COMP_SWAP },
    };
    unsigned variant;

    for (variant = 0; variant < G_N_ELEMENTS(expect); variant++) {
        Pair p;
        struct vhca_send_wqe w;
        uint32_t ro_key;

        pair_init(&p, &default_opts);
        post_recv(&p.b, 0xb1, 0, 64);
        /* A good WQE first: it completes before the bad one. */
        post(&p.a, 0xa0, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 10, 0, 0);
        wqe_init(&w, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        switch (variant) {
        case 0:
            wqe_sge(&w, p.a.buf, 10, p.a.key + 0x100);  /* bad lkey */
            break;
        case 1:
            w.opcode = 10;                              /* TSO: none */
            break;
        case 2:
            w.num_sge = VHCA_MAX_SEND_SGE + 1;
            break;
        case 3:
            w.flags |= VHCA_WQE_INLINE;
            w.inline_len = GUINT32_TO_LE(VHCA_MAX_INLINE + 1);
            break;
        case 4:
            /* READ into memory the MR does not let the device write. */
            ro_key = rdma_create_phys_mr(p.a.h, p.a.pdn, p.a.buf, 4096, 0);
            w.opcode = VHCA_WR_RDMA_READ;
            wqe_sge(&w, p.a.buf, 10, ro_key);
            wqe_remote(&w, p.b.buf, p.b.key);
            break;
        case 5:
            w.opcode = VHCA_WR_ATOMIC_FETCH_AND_ADD;
            wqe_sge(&w, p.a.buf, 8, p.a.key);
            wqe_remote(&w, p.b.buf + 4, p.b.key);       /* misaligned */
            break;
        case 6:
            w.opcode = VHCA_WR_ATOMIC_CMP_AND_SWP;
            wqe_sge(&w, p.a.buf, 4, p.a.key);           /* not 8 bytes */
            wqe_remote(&w, p.b.buf, p.b.key);
            break;
        }
        qp_put_send_wqe(p.a.h, &p.a.qp, &w);
        post(&p.a, 0xa2, VHCA_WR_SEND, 0, 0, 10, 0, 0);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 0xa0, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        expect_cqe(&p.a, &p.a.scq, 0xa1, expect[variant].status,
                   expect[variant].wc_opcode);
        expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_WR_FLUSH_ERR,
                   VHCA_WC_SEND);
        expect_no_cqe(&p.a, &p.a.scq);
        g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
        /* Only the good SEND reached the wire. */
        g_assert_cmpuint(p.a.h->tx_frames, ==, 1);
        pair_free(&p);
    }
}

/* A SEND longer than the receive buffer; a receive buffer not writable. */
static void test_responder_receive_errors(void)
{
    unsigned variant;

    for (variant = 0; variant < 2; variant++) {
        Pair p;
        struct vhca_recv_wqe r;
        struct vhca_cqe cqe;

        pair_init(&p, &default_opts);
        memset(&r, 0, sizeof(r));
        r.wr_id = GUINT64_TO_LE(0xb1);
        r.num_sge = 1;
        r.sge[0].addr = GUINT64_TO_LE(p.b.buf);
        r.sge[0].length = GUINT32_TO_LE(variant ? 4096 : 100);
        r.sge[0].lkey = GUINT32_TO_LE(variant ?
            rdma_create_phys_mr(p.b.h, p.b.pdn, p.b.buf, 4096, 0) :
            p.b.key);
        qp_put_recv_wqe(p.b.h, &p.b.qp, &r);
        ring_doorbell(p.b.h, p.b.page, VHCA_DB_RQ, p.b.qp.qpn,
                      p.b.qp.rq_pi);
        post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 200, 0, 0);
        ring_sq(&p.a);
        settle(&p);
        /*
         * Too long: NAK invalid request, LOC_LEN_ERR on the receive side.
         * Not writable: NAK remote operational error, LOC_PROT_ERR.
         */
        cqe = expect_cqe(&p.a, &p.a.scq, 0xa1, variant ? VHCA_WC_REM_OP_ERR :
                         VHCA_WC_REM_INV_REQ_ERR, VHCA_WC_SEND);
        g_assert_cmphex(GUINT32_FROM_LE(cqe.vendor_err), ==,
                        VHCA_VENDOR_ERR_NAK | (variant ?
                        VHCA_IB_NAK_REMOTE_OP : VHCA_IB_NAK_INVALID_REQUEST));
        g_assert_cmphex(p.a.h->ev.cqe_error.wr_id, ==, 0xa1);
        g_assert_cmphex(p.a.h->ev.cqe_error.vendor_err, ==,
                        GUINT32_FROM_LE(cqe.vendor_err));
        cqe = expect_cqe(&p.b, &p.b.rcq, 0xb1, variant ?
                         VHCA_WC_LOC_PROT_ERR : VHCA_WC_LOC_LEN_ERR,
                         VHCA_WC_RECV);
        (void)cqe;
        g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
        g_assert_cmpuint(counter(p.b.h, variant ?
                                 VHCA_CNT_REM_OP_NAK_SENT :
                                 VHCA_CNT_INV_REQ_NAK_SENT), ==, 1);
        g_assert_cmpuint(counter(p.a.h, variant ?
                                 VHCA_CNT_REM_OP_NAK_RCVD :
                                 VHCA_CNT_INV_REQ_NAK_RCVD), ==, 1);
        g_assert_cmpuint(p.b.h->ev.nak_sent.code, ==, variant ?
                         VHCA_IB_NAK_REMOTE_OP : VHCA_IB_NAK_INVALID_REQUEST);
        /* b's guest posted a buffer it may not write: its mistake. */
        g_assert_cmpuint(p.b.h->guest_errors[VHCA_GUEST_ERR_QP], ==,
                         variant ? 1 : 0);
        g_assert_cmpuint(p.a.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 0);
        pair_free(&p);
    }
}

/* One coalesced ACK per pass, with credits and MSN. */
static void test_ack_coalescing_and_credits(void)
{
    Pair p;
    Wire wb = { 0 };
    VhcaWirePacket pkt;
    unsigned i;

    pair_init(&p, &default_opts);
    wire_attach(&p.b, &wb);
    for (i = 0; i < 12; i++) {
        post_recv(&p.b, 0xb0 + i, i * 64, 64);
    }
    for (i = 0; i < 8; i++) {
        post(&p.a, 0xa0 + i, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 32, 0, 0);
    }
    ring_sq(&p.a);
    settle(&p);
    for (i = 0; i < 8; i++) {
        expect_cqe(&p.a, &p.a.scq, 0xa0 + i, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        expect_cqe(&p.b, &p.b.rcq, 0xb0 + i, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    }
    g_assert_cmpuint(p.a.h->tx_frames, ==, 8);
    g_assert_cmpuint(wb.count, ==, 1);
    g_assert_cmpint(vhca_wire_parse(wb.last, wb.last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    g_assert_cmphex(pkt.tp.bth.opcode, ==, VHCA_IB_OPCODE(RC, ACKNOWLEDGE));
    g_assert_cmphex(pkt.tp.bth.psn, ==, default_opts.a_psn + 7);
    g_assert_cmpuint(pkt.tp.aeth.msn, ==, 8);
    /* Four receive WQEs left: the credit code standing for 4. */
    g_assert_cmphex(pkt.tp.aeth.syndrome, ==, vhca_aeth_ack(4));
    g_assert_cmpuint(vhca_aeth_credits(pkt.tp.aeth.syndrome), ==, 4);
    pair_free(&p);
}

/* Many messages through a lossy wire, every byte checked. */
static void random_loss(double loss, uint32_t seed)
{
    ConnOpts o = default_opts;
    Pair p;
    Wire wa = { .loss = loss }, wb = { .loss = loss };
    GRand *rand = g_rand_new_with_seed(seed);
    unsigned round, i, done = 0;

    o.timeout = 8;                          /* 1 ms */
    o.mtu = VHCA_IB_MTU_512;
    pair_init(&p, &o);
    wa.rand = g_rand_new_with_seed(seed + 1);
    wb.rand = g_rand_new_with_seed(seed + 2);
    wire_attach(&p.a, &wa);
    wire_attach(&p.b, &wb);
    for (round = 0; round < 20; round++) {
        uint32_t lens[10];
        uint8_t ops[10];

        for (i = 0; i < 10; i++) {
            uint32_t off = i * 0x1800;

            lens[i] = g_rand_int_range(rand, 0, 0x1800);
            ops[i] = (uint8_t[]){ VHCA_WR_SEND, VHCA_WR_RDMA_WRITE,
                                  VHCA_WR_RDMA_READ }[g_rand_int_range(rand,
                                                                       0, 3)];
            fill(&p.a, off, lens[i], round * 10 + i);
            fill(&p.b, 0x20000 + off, lens[i], round * 10 + i + 5);
            if (ops[i] == VHCA_WR_SEND) {
                post_recv(&p.b, 0xb00 + i, off, 0x1800);
                post(&p.a, 0xa00 + i, ops[i], VHCA_WQE_SIGNALED, off,
                     lens[i], 0, 0);
            } else if (ops[i] == VHCA_WR_RDMA_WRITE) {
                post(&p.a, 0xa00 + i, ops[i], VHCA_WQE_SIGNALED, off,
                     lens[i], p.b.buf + off, p.b.key);
            } else {
                post(&p.a, 0xa00 + i, ops[i], VHCA_WQE_SIGNALED, off,
                     lens[i], p.b.buf + 0x20000 + off, p.b.key);
            }
        }
        ring_sq(&p.a);
        settle(&p);
        for (i = 0; i < 10; i++) {
            uint32_t off = i * 0x1800;

            expect_cqe(&p.a, &p.a.scq, 0xa00 + i, VHCA_WC_SUCCESS,
                       ops[i] == VHCA_WR_SEND ? VHCA_WC_SEND :
                       ops[i] == VHCA_WR_RDMA_WRITE ? VHCA_WC_RDMA_WRITE :
                       VHCA_WC_RDMA_READ);
            if (ops[i] == VHCA_WR_SEND) {
                struct vhca_cqe cqe = expect_cqe(&p.b, &p.b.rcq, 0xb00 + i,
                                                 VHCA_WC_SUCCESS,
                                                 VHCA_WC_RECV);

                g_assert_cmpuint(cqe.byte_len, ==, lens[i]);
                expect_same(&p.a, off, &p.b, off, lens[i]);
            } else if (ops[i] == VHCA_WR_RDMA_WRITE) {
                expect_same(&p.a, off, &p.b, off, lens[i]);
            } else {
                expect_same(&p.a, off, &p.b, 0x20000 + off, lens[i]);
            }
            done++;
        }
        expect_no_cqe(&p.a, &p.a.scq);
        expect_no_cqe(&p.b, &p.b.rcq);
    }
    g_assert_cmpuint(done, ==, 200);
    g_assert_cmpuint(wa.dropped + wb.dropped, >, 0);
    g_test_message("loss %.0f%%: %u + %u frames, %u + %u dropped", loss * 100,
                   wa.count, wb.count, wa.dropped, wb.dropped);
    g_rand_free(wa.rand);
    g_rand_free(wb.rand);
    g_rand_free(rand);
    pair_free(&p);
}

/*
 * Periodic loss in both directions (one wire counter): every third frame
 * goes.  Each retry must still make progress.
 */
static void test_periodic_loss(void)
{
    ConnOpts o = default_opts;
    Pair p;
    Wire w = { .drop_every = 3 };
    unsigned i;

    o.timeout = 8;
    o.a_psn = 0xfffffd;
    pair_init(&p, &o);
    wire_attach(&p.a, &w);
    wire_attach(&p.b, &w);
    st64(&p.b, 0x30000, 0);
    for (i = 0; i < 28; i++) {
        uint32_t off = i * 2500;

        switch (i % 4) {
        case 0:
            fill(&p.a, off, 2500, i);
            post_recv(&p.b, 0xb00 + i, off, 2500);
            post(&p.a, 0xa00 + i, VHCA_WR_SEND, VHCA_WQE_SIGNALED, off,
                 2500, 0, 0);
            break;
        case 1:
            fill(&p.a, off, 2500, i);
            post(&p.a, 0xa00 + i, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, off,
                 2500, p.b.buf + 0x10000 + off, p.b.key);
            break;
        case 2:
            post(&p.a, 0xa00 + i, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED,
                 0x10000 + off, 2500, p.b.buf + 0x10000 + off - 2500,
                 p.b.key);
            break;
        default:
            post_atomic(&p.a, 0xa00 + i, VHCA_WR_ATOMIC_FETCH_AND_ADD,
                        0x30000 + 8 * i, p.b.buf + 0x30000, p.b.key, i, 0);
            break;
        }
    }
    ring_sq(&p.a);
    settle(&p);
    for (i = 0; i < 28; i++) {
        static const uint8_t op[4] = {
            VHCA_WC_SEND, VHCA_WC_RDMA_WRITE, VHCA_WC_RDMA_READ,
            VHCA_WC_FETCH_ADD,
        };

        expect_cqe(&p.a, &p.a.scq, 0xa00 + i, VHCA_WC_SUCCESS, op[i % 4]);
    }
    g_assert_cmpuint(ld64(&p.b, 0x30000), ==, 3 + 7 + 11 + 15 + 19 + 23 + 27);
    pair_free(&p);
}

static void test_loss_1(void)
{
    random_loss(0.01, 1);
}

static void test_loss_5(void)
{
    random_loss(0.05, 2);
}

/* Two QPs of one device talking through its own GID: loopback. */
static void test_loopback(void)
{
    Node n;
    TestQp q2;
    struct vhca_cqe cqe;

    node_init(&n, 1, VHCA_QPT_RC);
    g_assert_cmpuint(rdma_create_qp(n.h, &q2, VHCA_QPT_RC, n.pdn, n.scq.cqn,
                                    n.rcq.cqn, n.page), ==, VHCA_ST_OK);
    qp_connect(n.h, n.qp.qpn, n.gid, n.h->core.cfg.mac, q2.qpn,
               &default_opts, 0x10, 0x20);
    qp_connect(n.h, q2.qpn, n.gid, n.h->core.cfg.mac, n.qp.qpn,
               &default_opts, 0x20, 0x10);
    fill(&n, 0, 3000, 11);
    {
        struct vhca_recv_wqe r;

        memset(&r, 0, sizeof(r));
        r.wr_id = GUINT64_TO_LE(0xb1);
        r.num_sge = 1;
        r.sge[0].addr = GUINT64_TO_LE(n.buf + 0x10000);
        r.sge[0].length = GUINT32_TO_LE(0x1000);
        r.sge[0].lkey = GUINT32_TO_LE(n.key);
        qp_put_recv_wqe(n.h, &q2, &r);
        ring_doorbell(n.h, n.page, VHCA_DB_RQ, q2.qpn, q2.rq_pi);
    }
    post(&n, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 3000, 0, 0);
    post(&n, 0xa2, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, 0x20000, 3000,
         n.buf, n.key);
    ring_sq(&n);
    harness_run(n.h);
    expect_cqe(&n, &n.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&n, &n.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ);
    g_assert_true(cq_poll(n.h, &n.rcq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.qpn, ==, q2.qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    expect_same(&n, 0, &n, 0x10000, 3000);
    expect_same(&n, 0, &n, 0x20000, 3000);
    /* Nothing went to the wire. */
    g_assert_cmpuint(n.h->nframes, ==, 0);
    g_assert_cmpuint(counter(n.h, VHCA_CNT_ROCE_RX_PACKETS), >, 0);
    harness_free(n.h);
}

/* Frames the transport does not take are dropped and counted. */
static void test_rx_drops(void)
{
    Pair p;
    VhcaWirePacket pkt;
    uint8_t frame[256];
    size_t len;
    uint64_t dropped;

    pair_init(&p, &default_opts);
    memset(&pkt, 0, sizeof(pkt));
    memcpy(pkt.net.dmac, p.b.h->core.cfg.mac, 6);
    memcpy(pkt.net.sgid, p.a.gid, 16);
    memcpy(pkt.net.dgid, p.b.gid, 16);
    pkt.net.hop_limit = 64;
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, SEND_ONLY);
    pkt.tp.bth.pkey = 0xffff;
    pkt.tp.bth.dest_qpn = 0x777;                    /* no such QP */
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    g_assert_cmpuint(len, >, 0);
    dropped = counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED);
    g_assert_cmpint(vhca_core_receive(&p.b.h->core, frame, len), ==,
                    VHCA_RX_ROCE);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     dropped + 1);
    /* A UD opcode to an RC QP. */
    pkt.tp.bth.dest_qpn = p.b.qp.qpn;
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(UD, SEND_ONLY);
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    vhca_core_receive(&p.b.h->core, frame, len);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     dropped + 2);
    /* A damaged ICRC. */
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, SEND_ONLY);
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    frame[len - 1] ^= 1;
    vhca_core_receive(&p.b.h->core, frame, len);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     dropped + 3);
    /* A response to a requester that sent nothing: a ghost. */
    pkt.tp.bth.opcode = VHCA_IB_OPCODE(RC, ACKNOWLEDGE);
    pkt.tp.bth.psn = default_opts.b_psn;
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    vhca_core_receive(&p.b.h->core, frame, len);
    harness_run(p.b.h);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     dropped + 4);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
    pair_free(&p);
}

/* COMM_EST on the first packet in RTR; SQ_DRAINED once nothing flies. */
static void test_events(void)
{
    Pair p;
    Wire wa = { .drop_all = true };
    struct vhca_qp_attr a;
    uint32_t pi;

    node_init(&p.a, 1, VHCA_QPT_RC);
    node_init(&p.b, 2, VHCA_QPT_RC);
    p.a.h->peer = p.b.h;
    p.b.h->peer = p.a.h;
    qp_connect(p.a.h, p.a.qp.qpn, p.b.gid, p.b.h->core.cfg.mac, p.b.qp.qpn,
               &default_opts, 1, 2);
    /* b only to RTR: it receives, and says so once. */
    memset(&a, 0, sizeof(a));
    a.qpn = p.b.qp.qpn;
    a.port = 1;
    a.qp_access_flags = default_opts.access;
    qp_modify_ok(p.b.h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                 VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS);
    memcpy(a.dgid, p.a.gid, 16);
    memcpy(a.dmac, p.a.h->core.cfg.mac, 6);
    a.hop_limit = 64;
    a.path_mtu = default_opts.mtu;
    a.dest_qp_num = p.a.qp.qpn;
    a.rq_psn = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    qp_modify_ok(p.b.h, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                 VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                 VHCA_QP_MAX_DEST_RD_ATOMIC | VHCA_QP_MIN_RNR_TIMER);
    pi = aeq_drain(p.b.h);
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 10, p.b.buf,
         p.b.key);
    post(&p.a, 0xa2, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 10, p.b.buf,
         p.b.key);
    ring_sq(&p.a);
    settle(&p);
    g_assert_true(qp_event_since(p.b.h, pi, VHCA_EVENT_COMM_EST,
                                 p.b.qp.qpn));
    g_assert_cmpuint(reg_read(p.b.h, VHCA_REG_AEQ_PI) - pi, ==, 1);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);

    /* A WRITE in flight (its frames lost) when a enters SQD. */
    wire_attach(&p.a, &wa);
    post(&p.a, 0xa3, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 10, p.b.buf,
         p.b.key);
    ring_sq(&p.a);
    harness_pair_settle(p.a.h, p.b.h, 0);
    pi = aeq_drain(p.a.h);
    memset(&a, 0, sizeof(a));
    a.qpn = p.a.qp.qpn;
    a.en_sqd_async_notify = 1;
    qp_modify_ok(p.a.h, &a, VHCA_QPS_SQD, VHCA_QP_EN_SQD_ASYNC_NOTIFY);
    g_assert_false(qp_event_since(p.a.h, pi, VHCA_EVENT_SQ_DRAINED,
                                  p.a.qp.qpn));
    g_assert_cmpuint(rdma_query_qp(p.a.h, p.a.qp.qpn, &a), ==, VHCA_ST_OK);
    g_assert_cmpuint(a.sq_draining, ==, 1);
    /* A WQE posted in SQD waits. */
    post(&p.a, 0xa4, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 10, p.b.buf,
         p.b.key);
    ring_sq(&p.a);
    wa.drop_all = false;
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa3, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_no_cqe(&p.a, &p.a.scq);
    g_assert_true(qp_event_since(p.a.h, pi, VHCA_EVENT_SQ_DRAINED,
                                 p.a.qp.qpn));
    g_assert_cmpuint(rdma_query_qp(p.a.h, p.a.qp.qpn, &a), ==, VHCA_ST_OK);
    g_assert_cmpuint(a.sq_draining, ==, 0);
    /* Back to RTS: the waiting WQE goes. */
    memset(&a, 0, sizeof(a));
    a.qpn = p.a.qp.qpn;
    qp_modify_ok(p.a.h, &a, VHCA_QPS_RTS, 0);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 0xa4, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    pair_free(&p);
}

/*
 * A wire that queues every frame instead of delivering it, so a test can
 * hand them over one at a time and act between two of them.
 */
typedef struct FrameQueue {
    unsigned count;
    size_t len[32];
    uint8_t data[32][VHCA_ETH_MAX_FRAME];
} FrameQueue;

static void queue_hook(Harness *h, const uint8_t *buf, size_t len)
{
    FrameQueue *q = h->tx_hook_opaque;

    g_assert_cmpuint(q->count, <, G_N_ELEMENTS(q->len));
    q->len[q->count] = len;
    memcpy(q->data[q->count], buf, len);
    q->count++;
}

static void queue_deliver(Harness *to, const FrameQueue *q, unsigned i)
{
    g_assert_cmpuint(i, <, q->count);
    harness_deliver(to, q->data[i], q->len[i]);
}

/* Records the NAKs a responder sends, and passes every frame on. */
typedef struct NakLog {
    unsigned naks;
    uint8_t syndrome;
    uint32_t psn;
} NakLog;

static void nak_log_hook(Harness *h, const uint8_t *buf, size_t len)
{
    NakLog *log = h->tx_hook_opaque;
    VhcaWirePacket pkt;

    g_assert_cmpint(vhca_wire_parse(buf, len, &pkt), ==, VHCA_WIRE_OK);
    if ((pkt.tp.bth.opcode == VHCA_IB_OPCODE(RC, ACKNOWLEDGE)) &&
        (pkt.tp.aeth.syndrome & VHCA_IB_AETH_KIND_MASK) ==
        VHCA_IB_AETH_KIND_NAK) {
        log->naks++;
        log->syndrome = pkt.tp.aeth.syndrome;
        log->psn = pkt.tp.bth.psn;
    }
    harness_deliver(h->peer, buf, len);
}

/*
 * A frame for @qpn of b from a: @opcode at @psn with @plen bytes of
 * payload, and @trailer bytes after the IP datagram (as a backend may
 * deliver).  Returns the frame length.
 */
static size_t peer_frame(Pair *p, uint8_t opcode, uint32_t qpn,
                         uint32_t psn, uint32_t plen, size_t trailer,
                         uint8_t *frame, size_t size)
{
    static uint8_t payload[8192];
    VhcaWirePacket pkt;
    size_t len;

    memset(&pkt, 0, sizeof(pkt));
    memcpy(pkt.net.dmac, p->b.h->core.cfg.mac, 6);
    memcpy(pkt.net.smac, p->a.h->core.cfg.mac, 6);
    memcpy(pkt.net.sgid, p->a.gid, 16);
    memcpy(pkt.net.dgid, p->b.gid, 16);
    pkt.net.hop_limit = 64;
    pkt.tp.bth.opcode = opcode;
    pkt.tp.bth.pkey = 0xffff;
    pkt.tp.bth.dest_qpn = qpn;
    pkt.tp.bth.psn = psn;
    g_assert_cmpuint(plen, <=, sizeof(payload));
    memset(payload, 0x6b, plen);
    pkt.payload = payload;
    pkt.payload_len = plen;
    len = vhca_wire_build(&pkt, frame, size);
    g_assert_cmpuint(len, >, 0);
    g_assert_cmpuint(len + trailer, <=, size);
    memset(frame + len, 0xee, trailer);
    return len + trailer;
}

static size_t peer_send_frame(Pair *p, uint32_t qpn, uint32_t psn,
                              uint32_t plen, size_t trailer, uint8_t *frame,
                              size_t size)
{
    return peer_frame(p, VHCA_IB_OPCODE(RC, SEND_ONLY), qpn, psn, plen,
                      trailer, frame, size);
}

/*
 * A payload over both the path MTU and the port's MTU is dropped before
 * it is queued (DROP_OVERSIZE), whatever the QP; one over the path MTU
 * only reaches the responder, which NAKs it as an invalid request (IBTA
 * 9.7.5.2.4).
 */
static void test_rx_oversize(void)
{
    ConnOpts o = default_opts;
    Pair p;
    g_autofree uint8_t *frame = g_malloc(16384);
    uint32_t port_mtu;
    size_t len;
    NakLog log = { 0 };

    o.mtu = VHCA_IB_MTU_256;
    pair_init(&p, &o);
    port_mtu = vhca_ib_mtu_bytes(vhca_port_active_mtu(&p.b.h->core));
    g_assert_cmpuint(port_mtu, ==, 1024);
    p.b.h->tx_hook = nak_log_hook;
    p.b.h->tx_hook_opaque = &log;

    len = peer_send_frame(&p, p.b.qp.qpn, o.a_psn, port_mtu + 4, 0, frame,
                          16384);
    harness_deliver(p.b.h, frame, len);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_OVERSIZE), ==, 1);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 1);
    g_assert_cmpstr(p.b.h->last_drop_reason, ==, "oversize");
    g_assert_cmpuint(p.b.h->core.rx_queued, ==, 0);
    g_assert_cmpuint(p.b.h->core.rx_queued_bytes, ==, 0);
    harness_run(p.b.h);
    g_assert_cmpuint(log.naks, ==, 0);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);

    /* Over the path MTU (256), within the port's (1024). */
    post_recv(&p.b, 0xb1, 0, 4096);
    len = peer_send_frame(&p, p.b.qp.qpn, o.a_psn, 512, 0, frame, 16384);
    harness_deliver(p.b.h, frame, len);
    g_assert_cmpuint(p.b.h->core.rx_queued, ==, 1);
    harness_run(p.b.h);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_OVERSIZE), ==, 1);
    g_assert_cmpuint(log.naks, ==, 1);
    g_assert_cmphex(log.syndrome, ==,
                    VHCA_IB_AETH_KIND_NAK | VHCA_IB_NAK_INVALID_REQUEST);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    pair_free(&p);
}

/*
 * Only the IP datagram is queued: bytes a backend delivers after it
 * (here 12 KiB) cost nothing, and the packet is delivered intact.
 */
static void test_rx_copies_datagram(void)
{
    enum { PLEN = 1000, TRAILER = 12000 };
    Pair p;
    g_autofree uint8_t *frame = g_malloc(16384);
    size_t len, datagram;

    pair_init(&p, &default_opts);
    post_recv(&p.b, 0xb1, 0, 4096);
    len = peer_send_frame(&p, p.b.qp.qpn, default_opts.a_psn, PLEN,
                          TRAILER, frame, 16384);
    datagram = len - TRAILER - VHCA_ETH_HLEN;
    harness_deliver(p.b.h, frame, len);
    g_assert_cmpuint(p.b.h->core.rx_queued, ==, 1);
    g_assert_cmpuint(p.b.h->core.rx_queued_bytes, ==,
                     vhca_rx_buf_size(datagram));
    g_assert_cmpuint(p.b.h->core.qps[p.b.qp.qpn].rxq_req.bytes, ==,
                     vhca_rx_buf_size(datagram));
    harness_run(p.b.h);
    g_assert_cmpuint(p.b.h->core.rx_queued_bytes, ==, 0);
    g_assert_cmpuint(expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS,
                                VHCA_WC_RECV).byte_len, ==, PLEN);
    g_assert_cmpmem(ram_ptr(p.b.h, p.b.buf, PLEN), PLEN, frame +
                    VHCA_ETH_HLEN + 20 + 8 + VHCA_IB_BTH_LEN, PLEN);
    pair_free(&p);
}

/* An RC QP of b in RTR/RTS towards a's QP (frames only: never run). */
static uint32_t extra_qp(Pair *p, const ConnOpts *o)
{
    TestQp qp;

    g_assert_cmpuint(rdma_create_qp(p->b.h, &qp, VHCA_QPT_RC, p->b.pdn,
                                    p->b.scq.cqn, p->b.rcq.cqn, p->b.page),
                     ==, VHCA_ST_OK);
    qp_connect(p->b.h, qp.qpn, p->a.gid, p->a.h->core.cfg.mac, p->a.qp.qpn,
               o, o->b_psn, o->a_psn);
    return qp.qpn;
}

/*
 * The receive queues are bounded in bytes, per QP and per device: with a
 * 4096-byte MTU the byte bounds bind before the frame bounds.  The
 * frames are delivered without running the deferred work, as a flood
 * between two passes would be: requests and responses (each QP has a
 * queue of each) to several QPs.
 */
static void test_rx_queue_byte_bounds(void)
{
    enum { PLEN = 4096, NQPS = 6 };
    static const uint8_t opcodes[] = {
        VHCA_IB_OPCODE(RC, SEND_ONLY),
        VHCA_IB_OPCODE(RC, RDMA_READ_RESPONSE_ONLY),
    };
    ConnOpts o = default_opts;
    Pair p;
    g_autofree uint8_t *frame = g_malloc(16384);
    VhcaCore *core;
    VhcaFrameQueue *q;
    uint32_t qpns[NQPS], size, max_size = 0, per_qp, queued = 0, kept;
    uint32_t delivered = 0;
    size_t len;
    unsigned i, j, k;

    o.mtu = VHCA_IB_MTU_4096;
    pair_init(&p, &o);
    core = &p.b.h->core;
    qpns[0] = p.b.qp.qpn;
    for (i = 1; i < NQPS; i++) {
        qpns[i] = extra_qp(&p, &o);
    }
    len = peer_send_frame(&p, qpns[0], o.a_psn, PLEN, 0, frame, 16384);
    size = vhca_rx_buf_size((uint32_t)(len - VHCA_ETH_HLEN));
    per_qp = VHCA_RXQ_MAX_QP_BYTES / size;
    g_assert_cmpuint(per_qp, <, VHCA_RXQ_MAX_QP);

    /* One QP: the per-QP byte bound. */
    for (i = 0; i < VHCA_RXQ_MAX_QP; i++) {
        harness_deliver(p.b.h, frame, len);
    }
    delivered += VHCA_RXQ_MAX_QP;
    q = &core->qps[qpns[0]].rxq_req;
    g_assert_cmpuint(q->count, ==, per_qp);
    g_assert_cmpuint(q->bytes, ==, per_qp * size);
    g_assert_cmpuint(q->bytes, <=, VHCA_RXQ_MAX_QP_BYTES);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_QUEUE_FULL), ==,
                     VHCA_RXQ_MAX_QP - per_qp);

    /* Many QPs: the device's byte bound, before its frame bound. */
    for (j = 0; j < NQPS; j++) {
        for (k = 0; k < G_N_ELEMENTS(opcodes); k++) {
            if (j == 0 && k == 0) {
                continue;
            }
            len = peer_frame(&p, opcodes[k], qpns[j], o.a_psn, PLEN, 0,
                             frame, 16384);
            size = vhca_rx_buf_size((uint32_t)(len - VHCA_ETH_HLEN));
            max_size = MAX(max_size, size);
            for (i = 0; i < VHCA_RXQ_MAX_QP; i++) {
                harness_deliver(p.b.h, frame, len);
            }
            delivered += VHCA_RXQ_MAX_QP;
        }
    }
    for (j = 0; j < NQPS; j++) {
        queued += core->qps[qpns[j]].rxq_req.count +
                  core->qps[qpns[j]].rxq_resp.count;
        g_assert_cmpuint(core->qps[qpns[j]].rxq_req.bytes, <=,
                         VHCA_RXQ_MAX_QP_BYTES);
        g_assert_cmpuint(core->qps[qpns[j]].rxq_resp.bytes, <=,
                         VHCA_RXQ_MAX_QP_BYTES);
    }
    g_assert_cmpuint(core->rx_queued, ==, queued);
    g_assert_cmpuint(queued, <, VHCA_RXQ_MAX_DEV);
    g_assert_cmpuint(core->rx_queued_bytes, <=, VHCA_RXQ_MAX_DEV_BYTES);
    g_assert_cmpuint(core->rx_queued_bytes + max_size, >,
                     VHCA_RXQ_MAX_DEV_BYTES);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_QUEUE_FULL), ==,
                     delivered - queued);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==,
                     delivered - queued);

    /*
     * The QPs take their frames; the device keeps the buffers.  Small
     * frames then need buffers of the other size: while they fit beside
     * the kept ones nothing is given up; the first that does not fit
     * makes the device give up the large ones kept, so that it stays
     * within its byte bound.  (A QP takes one small frame at each PSN:
     * the same PSN again is a duplicate, queued all the same.)
     */
    kept = core->rx_queued_bytes;
    harness_run(p.b.h);
    g_assert_cmpuint(core->rx_queued, ==, 0);
    g_assert_cmpuint(core->rx_free_bytes, ==, kept);
    len = peer_send_frame(&p, qpns[1], o.a_psn, 8, 0, frame, 16384);
    size = vhca_rx_buf_size((uint32_t)(len - VHCA_ETH_HLEN));
    for (i = 1; core->rx_free[1]; i++) {
        bool fits = (uint64_t)kept + i * size <= VHCA_RXQ_MAX_DEV_BYTES;

        g_assert_cmpuint(i, <=, VHCA_RXQ_MAX_QP);
        harness_deliver(p.b.h, frame, len);
        g_assert_cmpuint(core->rx_queued, ==, i);
        g_assert_cmpuint(core->rx_free_bytes, ==, fits ? kept : 0);
        g_assert_cmpuint((uint64_t)core->rx_queued_bytes +
                         core->rx_free_bytes, <=, VHCA_RXQ_MAX_DEV_BYTES);
    }
    g_assert_null(core->rx_free[0]);
    pair_free(&p);
}

/* Packets QP @qpn of @h has sent since its first PSN @psn. */
static uint32_t sent_since(Harness *h, uint32_t qpn, uint32_t psn)
{
    return (h->core.qps[qpn].req.sent_psn - psn) & 0xffffff;
}

/*
 * A deferred pass runs the QPs with work in the order they got it, each
 * once and for at most VHCA_SCHED_QP_BUDGET packets, until the pass has
 * done VHCA_SCHED_PASS_BUDGET; a QP with work left queues again behind
 * the others, so the one the last pass did not reach goes first.
 */
static void test_sched_pass_order_and_budget(void)
{
    enum { NQPS = 5, LEN = 192 * 1024 };
    ConnOpts o = default_opts;
    TestQp qa[NQPS], qb[NQPS];
    Pair p;
    Harness *a;
    unsigned i;

    pair_init(&p, &o);
    a = p.a.h;
    for (i = 0; i < NQPS; i++) {
        g_assert_cmpuint(rdma_create_qp(a, &qa[i], VHCA_QPT_RC, p.a.pdn,
                                        p.a.scq.cqn, p.a.rcq.cqn, p.a.page),
                         ==, VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_qp(p.b.h, &qb[i], VHCA_QPT_RC, p.b.pdn,
                                        p.b.scq.cqn, p.b.rcq.cqn, p.b.page),
                         ==, VHCA_ST_OK);
        qp_connect(a, qa[i].qpn, p.b.gid, p.b.h->core.cfg.mac, qb[i].qpn,
                   &o, o.a_psn, o.b_psn);
        qp_connect(p.b.h, qb[i].qpn, p.a.gid, a->core.cfg.mac, qa[i].qpn,
                   &o, o.b_psn, o.a_psn);
    }
    /* Entering RTS queued each QP: let that pass run empty. */
    harness_run(a);
    /* Rung from the highest QPN down: the order is the rings', not QPNs'. */
    for (i = NQPS; i-- > 0;) {
        struct vhca_send_wqe w;

        wqe_init(&w, i, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
        wqe_sge(&w, p.a.buf, LEN, p.a.key);
        wqe_remote(&w, p.b.buf, p.b.key);
        qp_put_send_wqe(a, &qa[i], &w);
        ring_doorbell(a, p.a.page, VHCA_DB_SQ, qa[i].qpn, qa[i].sq_pi);
    }
    G_STATIC_ASSERT(VHCA_SCHED_PASS_BUDGET == 4 * VHCA_SCHED_QP_BUDGET);
    G_STATIC_ASSERT(LEN / 1024 > 2 * VHCA_SCHED_QP_BUDGET);

    /* Pass 1: the first four rung, 64 packets each; qa[0] waits. */
    a->work_scheduled = false;
    vhca_core_run_deferred(&a->core);
    for (i = 1; i < NQPS; i++) {
        g_assert_cmpuint(sent_since(a, qa[i].qpn, o.a_psn), ==,
                         VHCA_SCHED_QP_BUDGET);
    }
    g_assert_cmpuint(sent_since(a, qa[0].qpn, o.a_psn), ==, 0);
    g_assert_true(a->work_scheduled);

    /* Pass 2: qa[0] first, then qa[4], qa[3], qa[2] again; not qa[1]. */
    a->work_scheduled = false;
    vhca_core_run_deferred(&a->core);
    g_assert_cmpuint(sent_since(a, qa[0].qpn, o.a_psn), ==,
                     VHCA_SCHED_QP_BUDGET);
    for (i = 2; i < NQPS; i++) {
        g_assert_cmpuint(sent_since(a, qa[i].qpn, o.a_psn), ==,
                         2 * VHCA_SCHED_QP_BUDGET);
    }
    g_assert_cmpuint(sent_since(a, qa[1].qpn, o.a_psn), ==,
                     VHCA_SCHED_QP_BUDGET);
    g_assert_true(a->work_scheduled);

    /* And everything completes. */
    harness_pair_settle(a, p.b.h, SETTLE_NS);
    for (i = 0; i < NQPS; i++) {
        struct vhca_cqe cqe;

        g_assert_true(cq_poll(a, &p.a.scq, &cqe));
        g_assert_cmpuint(cqe.status, ==, VHCA_WC_SUCCESS);
    }
    pair_free(&p);
}

/*
 * The device timer follows the earliest of many QPs' deadlines, kept in
 * a heap rather than found by scanning the QP table: QPs whose packets
 * are all lost time out in the order they sent, whatever their QPNs,
 * one per timer, and each goes back in line with its next retransmit.
 */
static void test_sched_deadlines_many_qps(void)
{
    enum { NQPS = 5, SPACING_NS = 1000 * 1000 };
    ConnOpts o = default_opts;
    Wire wa = { .drop_all = true };
    TestQp qa[NQPS], qb[NQPS];
    Pair p;
    Harness *a;
    unsigned i, round, fired;

    pair_init(&p, &o);
    a = p.a.h;
    wire_attach(&p.a, &wa);
    for (i = 0; i < NQPS; i++) {
        g_assert_cmpuint(rdma_create_qp(a, &qa[i], VHCA_QPT_RC, p.a.pdn,
                                        p.a.scq.cqn, p.a.rcq.cqn, p.a.page),
                         ==, VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_qp(p.b.h, &qb[i], VHCA_QPT_RC, p.b.pdn,
                                        p.b.scq.cqn, p.b.rcq.cqn, p.b.page),
                         ==, VHCA_ST_OK);
        qp_connect(a, qa[i].qpn, p.b.gid, p.b.h->core.cfg.mac, qb[i].qpn,
                   &o, o.a_psn, o.b_psn);
        qp_connect(p.b.h, qb[i].qpn, p.a.gid, a->core.cfg.mac, qa[i].qpn,
                   &o, o.b_psn, o.a_psn);
    }
    /* The highest QPN sends first, the lowest last, 1 ms apart. */
    for (i = NQPS; i-- > 0;) {
        struct vhca_send_wqe w;

        wqe_init(&w, i, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
        wqe_sge(&w, p.a.buf, 64, p.a.key);
        wqe_remote(&w, p.b.buf, p.b.key);
        qp_put_send_wqe(a, &qa[i], &w);
        ring_doorbell(a, p.a.page, VHCA_DB_SQ, qa[i].qpn, qa[i].sq_pi);
        harness_run(a);
        g_assert_true(a->timer_armed);
        g_assert_cmpuint(a->timer_deadline, ==,
                         a->core.qps[qa[NQPS - 1].qpn].deadline);
        harness_advance(a, SPACING_NS);
        harness_advance(p.b.h, SPACING_NS);
    }
    for (round = 0; round < 2; round++) {
        for (i = NQPS; i-- > 0;) {
            fired = a->ev.retransmit.n;
            g_assert_cmpuint(a->timer_deadline, ==,
                             a->core.qps[qa[i].qpn].deadline);
            harness_pair_advance_to_timer(a, p.b.h);
            g_assert_cmpuint(a->ev.retransmit.n, ==, fired + 1);
            g_assert_cmpuint(a->ev.retransmit.qpn, ==, qa[i].qpn);
            g_assert_cmpuint(a->ev.retransmit.why, ==, VHCA_RETRY_TIMEOUT);
            harness_run(a);
            g_assert_true(a->timer_armed);
        }
    }
    /* The wire heals: every QP completes, and no deadline is left. */
    wa.drop_all = false;
    harness_pair_settle(a, p.b.h, SETTLE_NS);
    for (i = 0; i < NQPS; i++) {
        struct vhca_cqe cqe;

        g_assert_true(cq_poll(a, &p.a.scq, &cqe));
        g_assert_cmpuint(cqe.status, ==, VHCA_WC_SUCCESS);
        g_assert_cmpuint(a->core.qps[qa[i].qpn].deadline, ==,
                         VHCA_NO_DEADLINE);
    }
    g_assert_false(a->timer_armed);
    g_assert_cmpuint(a->core.sched_heap_len, ==, 0);
    pair_free(&p);
    wire_free(&wa);
}

/*
 * Receive buffers are reused, not freed: a frame's buffer goes back to
 * the device when its QP has taken the frame, and the next frame of its
 * size class gets it (test_rx_queue_byte_bounds: the buffers kept never
 * push the device past its byte bound).
 */
static void test_rx_buffers_reused(void)
{
    enum { PLEN = 4096 };
    ConnOpts o = default_opts;
    Pair p;
    g_autofree uint8_t *frame = g_malloc(16384);
    VhcaCore *core;
    VhcaRxFrame *first;
    uint32_t large, small, kept;
    size_t len;
    unsigned i;

    o.mtu = VHCA_IB_MTU_4096;
    pair_init(&p, &o);
    core = &p.b.h->core;
    len = peer_send_frame(&p, p.b.qp.qpn, o.a_psn, PLEN, 0, frame, 16384);
    large = vhca_rx_buf_size((uint32_t)(len - VHCA_ETH_HLEN));
    g_assert_cmpuint(large, >, vhca_rx_buf_size(0));
    post_recv(&p.b, 0xb1, 0, PLEN);
    harness_deliver(p.b.h, frame, len);
    first = core->qps[p.b.qp.qpn].rxq_req.head;
    g_assert_nonnull(first);
    harness_run(p.b.h);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(core->rx_queued_bytes, ==, 0);
    g_assert_cmpuint(core->rx_free_bytes, ==, large);

    /* The next one (a duplicate now) lands in the same buffer. */
    harness_deliver(p.b.h, frame, len);
    g_assert_true(core->qps[p.b.qp.qpn].rxq_req.head == first);
    g_assert_cmpuint(core->rx_free_bytes, ==, 0);
    harness_run(p.b.h);
    g_assert_cmpuint(core->rx_free_bytes, ==, large);

    /* Fill the device with large buffers, then give them all back. */
    for (i = 0; i < VHCA_RXQ_MAX_QP; i++) {
        harness_deliver(p.b.h, frame, len);
    }
    kept = core->rx_queued_bytes;
    g_assert_cmpuint(kept, >, VHCA_RXQ_MAX_QP_BYTES - large);
    harness_run(p.b.h);
    g_assert_cmpuint(core->rx_queued, ==, 0);
    g_assert_cmpuint(core->rx_free_bytes, ==, kept);

    /* Small frames reuse none of them, and they stay within the bound. */
    len = peer_send_frame(&p, p.b.qp.qpn, o.a_psn, 8, 0, frame, 16384);
    small = vhca_rx_buf_size((uint32_t)(len - VHCA_ETH_HLEN));
    g_assert_cmpuint(small, <, large);
    for (i = 0; i < VHCA_RXQ_MAX_QP; i++) {
        harness_deliver(p.b.h, frame, len);
        g_assert_cmpuint(core->rx_queued_bytes + core->rx_free_bytes, <=,
                         VHCA_RXQ_MAX_DEV_BYTES);
    }
    g_assert_cmpuint(core->rx_queued, ==, VHCA_RXQ_MAX_QP);
    g_assert_cmpuint(core->rx_queued_bytes, ==, VHCA_RXQ_MAX_QP * small);
    pair_free(&p);
}

/* What takes the place of an MR destroyed under a message. */
typedef enum MrReplacement {
    MR_GONE,                        /* nothing */
    MR_OTHER_PD,                    /* same key, another PD */
    MR_NO_ACCESS,                   /* same key and PD, right missing */
    MR_SAME,                        /* same key, PD and rights */
} MrReplacement;

/*
 * Destroy MR @key of @n and, unless @how is MR_GONE, create another at
 * the same index with the same tag (the device reuses the lowest free
 * index; the harness always uses tag 0x5a): the same key, a new MR.
 */
static void mr_replace(Node *n, uint32_t key, uint64_t iova, uint32_t len,
                       MrReplacement how, uint32_t missing)
{
    uint32_t pdn = n->pdn;

    g_assert_cmpuint(rdma_destroy(n->h, VHCA_CMD_DESTROY_MR, key), ==,
                     VHCA_ST_OK);
    switch (how) {
    case MR_GONE:
        return;
    case MR_OTHER_PD:
        pdn = rdma_create_pd(n->h);
        break;
    case MR_NO_ACCESS:
    case MR_SAME:
        break;
    }
    g_assert_cmphex(rdma_create_phys_mr(n->h, pdn, iova, len,
                                        how == MR_NO_ACCESS ?
                                        ACCESS_ALL & ~missing : ACCESS_ALL),
                    ==, key);
}

/*
 * An RDMA WRITE whose target MR is destroyed after its first packets
 * landed, and perhaps replaced by another MR under the same key: the
 * next packet is NAKed remote access error (IBTA 10.6.7.2, 9.7.5.2.4),
 * and nothing past the bytes already written changes.  The rest of the
 * message belongs to the MR its FIRST packet was checked against; a new
 * MR under the same key - in another PD, without REMOTE_WRITE, or even
 * one that would take a new WRITE - never receives it.
 */
static void mr_replaced_under_write(MrReplacement how)
{
    enum { LEN = 16384, MTU = 1024, LANDED = 4 };
    Pair p;
    FrameQueue *q = g_new0(FrameQueue, 1);
    NakLog log = { 0 };
    uint32_t rkey, pi;
    uint8_t *before;
    unsigned i;

    pair_init(&p, &default_opts);
    /* The target has an MR of its own, so destroying it spares the rest. */
    rkey = rdma_create_phys_mr(p.b.h, p.b.pdn, p.b.buf + 0x10000, LEN,
                               ACCESS_ALL);
    fill(&p.a, 0, LEN, 3);
    fill(&p.b, 0x10000, LEN, 9);
    before = g_memdup2(ram_ptr(p.b.h, p.b.buf + 0x10000, LEN), LEN);
    p.a.h->tx_hook = queue_hook;
    p.a.h->tx_hook_opaque = q;
    p.b.h->tx_hook = nak_log_hook;
    p.b.h->tx_hook_opaque = &log;
    pi = aeq_drain(p.b.h);
    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, LEN,
         p.b.buf + 0x10000, rkey);
    post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 10, 0, 0);
    ring_sq(&p.a);
    harness_run(p.a.h);
    g_assert_cmpuint(q->count, >, LANDED);

    for (i = 0; i < LANDED; i++) {
        queue_deliver(p.b.h, q, i);
    }
    harness_pair_settle(p.a.h, p.b.h, 0);
    g_assert_cmpmem(ram_ptr(p.b.h, p.b.buf + 0x10000, LANDED * MTU),
                    LANDED * MTU, ram_ptr(p.a.h, p.a.buf, LANDED * MTU),
                    LANDED * MTU);
    g_assert_cmpuint(log.naks, ==, 0);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);

    mr_replace(&p.b, rkey, p.b.buf + 0x10000, LEN, how,
               VHCA_ACCESS_REMOTE_WRITE);
    for (i = LANDED; i < q->count; i++) {
        queue_deliver(p.b.h, q, i);
    }
    /* From here the wire passes everything, retransmissions included. */
    p.a.h->tx_hook = NULL;
    settle(&p);

    g_assert_cmpuint(log.naks, ==, 1);
    g_assert_cmphex(log.syndrome, ==,
                    VHCA_IB_AETH_KIND_NAK | VHCA_IB_NAK_REMOTE_ACCESS);
    g_assert_cmphex(log.psn, ==, default_opts.a_psn + LANDED);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_true(qp_event_since(p.b.h, pi, VHCA_EVENT_QP_ACCESS_ERR,
                                 p.b.qp.qpn));
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_REM_ACCESS_NAK_SENT), ==, 1);
    /* What landed stays; the rest of the region was never written. */
    g_assert_cmpmem(ram_ptr(p.b.h, p.b.buf + 0x10000, LANDED * MTU),
                    LANDED * MTU, ram_ptr(p.a.h, p.a.buf, LANDED * MTU),
                    LANDED * MTU);
    g_assert_cmpmem(ram_ptr(p.b.h, p.b.buf + 0x10000 + LANDED * MTU,
                            LEN - LANDED * MTU), LEN - LANDED * MTU,
                    before + LANDED * MTU, LEN - LANDED * MTU);
    g_free(before);
    g_free(q);
    pair_free(&p);
}

static void test_mr_destroyed_under_write(void)
{
    mr_replaced_under_write(MR_GONE);
}

static void test_mr_replaced_under_write_other_pd(void)
{
    mr_replaced_under_write(MR_OTHER_PD);
}

static void test_mr_replaced_under_write_no_access(void)
{
    mr_replaced_under_write(MR_NO_ACCESS);
}

static void test_mr_replaced_under_write_same(void)
{
    mr_replaced_under_write(MR_SAME);
}

/*
 * The same for a READ answered over many packets: the responses come
 * from the MR the request was checked against, so once it is destroyed
 * (and perhaps replaced under the same key) the stream stops with a NAK
 * remote access error (IBTA 9.7.5.2.4, 10.6.7.2) and the READ completes
 * in error at the requester.
 */
static void mr_replaced_under_read(MrReplacement how)
{
    enum { LEN = 128 * 1024 };
    Pair p;
    NakLog log = { 0 };
    uint32_t rkey, sent;

    pair_init(&p, &default_opts);
    rkey = rdma_create_phys_mr(p.b.h, p.b.pdn, p.b.buf + 0x10000, LEN,
                               ACCESS_ALL);
    fill(&p.b, 0x10000, LEN, 4);
    post(&p.a, 0xa1, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED, 0, LEN,
         p.b.buf + 0x10000, rkey);
    ring_sq(&p.a);
    harness_run(p.a.h);
    /*
     * One deferred pass of b: the READ's 128 response packets take more
     * than one QP's budget, so the stream is half sent.
     */
    p.b.h->tx_hook = nak_log_hook;
    p.b.h->tx_hook_opaque = &log;
    g_assert_true(p.b.h->work_scheduled);
    p.b.h->work_scheduled = false;
    vhca_core_run_deferred(&p.b.h->core);
    sent = p.b.h->tx_frames;
    g_assert_cmpuint(sent, >, 0);
    g_assert_true(p.b.h->core.qps[p.b.qp.qpn].resp.read_active);

    mr_replace(&p.b, rkey, p.b.buf + 0x10000, LEN, how,
               VHCA_ACCESS_REMOTE_READ);
    settle(&p);

    g_assert_cmpuint(log.naks, ==, 1);
    g_assert_cmphex(log.syndrome, ==,
                    VHCA_IB_AETH_KIND_NAK | VHCA_IB_NAK_REMOTE_ACCESS);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_READ);
    expect_no_cqe(&p.a, &p.a.scq);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_REM_ACCESS_NAK_SENT), ==, 1);
    pair_free(&p);
}

static void test_mr_replaced_under_read_other_pd(void)
{
    mr_replaced_under_read(MR_OTHER_PD);
}

static void test_mr_replaced_under_read_no_access(void)
{
    mr_replaced_under_read(MR_NO_ACCESS);
}

static void test_mr_replaced_under_read_same(void)
{
    mr_replaced_under_read(MR_SAME);
}

/*
 * A SEND whose local MR is destroyed after its first pass: the packet
 * lost on the wire must be gathered again for the retransmission, and
 * the MR is gone, so the WQE fails local protection and the QP goes to
 * ERR (IBTA 10.6.7.2, 10.8.3).
 */
static void test_mr_destroyed_under_send(void)
{
    enum { LEN = 16384, LOST = 4 };
    Pair p;
    FrameQueue *q = g_new0(FrameQueue, 1);
    uint32_t lkey;
    unsigned i, sent;
    struct vhca_send_wqe w;

    pair_init(&p, &default_opts);
    lkey = rdma_create_phys_mr(p.a.h, p.a.pdn, p.a.buf, LEN, ACCESS_ALL);
    fill(&p.a, 0, LEN, 5);
    post_recv(&p.b, 0xb1, 0x10000, LEN);
    p.a.h->tx_hook = queue_hook;
    p.a.h->tx_hook_opaque = q;
    wqe_init(&w, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    wqe_sge(&w, p.a.buf, LEN, lkey);
    qp_put_send_wqe(p.a.h, &p.a.qp, &w);
    ring_sq(&p.a);
    harness_run(p.a.h);
    sent = q->count;
    g_assert_cmpuint(sent, >, LOST + 1);

    g_assert_cmpuint(rdma_destroy(p.a.h, VHCA_CMD_DESTROY_MR, lkey), ==,
                     VHCA_ST_OK);
    /* Packet LOST is lost; the next one makes b NAK a sequence error. */
    for (i = 0; i < sent; i++) {
        if (i != LOST) {
            queue_deliver(p.b.h, q, i);
        }
    }
    p.a.h->tx_hook = NULL;
    settle(&p);

    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_LOC_PROT_ERR, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_ERR);
    /* Nothing after the first pass reached the wire: no data was read. */
    g_assert_cmpuint(q->count, ==, sent);
    g_assert_cmpuint(p.a.h->tx_frames, ==, sent);
    /* The receive never completed: the message is incomplete. */
    expect_no_cqe(&p.b, &p.b.rcq);
    g_free(q);
    pair_free(&p);
}

/* READs beyond max_rd_atomic wait; a fenced WQE waits for them. */
static void test_rd_atomic_limit_and_fence(void)
{
    ConnOpts o = default_opts;
    Pair p;
    Wire wa = { 0 };
    unsigned i;

    o.max_rd = 2;
    pair_init(&p, &o);
    wire_attach(&p.a, &wa);
    for (i = 0; i < 4; i++) {
        post(&p.a, 0xa0 + i, VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED,
             i * 64, 64, p.b.buf, p.b.key);
    }
    post(&p.a, 0xa9, VHCA_WR_SEND, VHCA_WQE_SIGNALED | VHCA_WQE_FENCE, 0, 8,
         0, 0);
    post_recv(&p.b, 0xb1, 0x1000, 64);
    ring_sq(&p.a);
    /* One pass of a: two READ requests, then it waits. */
    harness_run(p.a.h);
    g_assert_cmpuint(wa.count, ==, 2);
    settle(&p);
    for (i = 0; i < 4; i++) {
        expect_cqe(&p.a, &p.a.scq, 0xa0 + i, VHCA_WC_SUCCESS,
                   VHCA_WC_RDMA_READ);
    }
    expect_cqe(&p.a, &p.a.scq, 0xa9, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/rc/send-recv", test_send_recv);
    g_test_add_func("/vhca/rc/segmentation", test_segmentation);
    g_test_add_func("/vhca/rc/write-imm-atomics", test_write_imm_and_atomics);
    g_test_add_func("/vhca/rc/unsignaled", test_unsignaled);
    g_test_add_func("/vhca/rc/psn-wrap", test_psn_wrap);
    g_test_add_func("/vhca/rc/loss-request", test_loss_request);
    g_test_add_func("/vhca/rc/loss-ack", test_loss_ack);
    g_test_add_func("/vhca/rc/duplicates", test_duplicates);
    g_test_add_func("/vhca/rc/reorder", test_reorder);
    g_test_add_func("/vhca/rc/implied-nak", test_implied_nak);
    g_test_add_func("/vhca/rc/rnr", test_rnr);
    g_test_add_func("/vhca/rc/rnr-exhausted", test_rnr_exhausted);
    g_test_add_func("/vhca/rc/retry-exhausted", test_retry_exhausted);
    g_test_add_func("/vhca/rc/remote-access-errors",
                    test_remote_access_errors);
    g_test_add_func("/vhca/rc/local-errors", test_local_errors);
    g_test_add_func("/vhca/rc/responder-receive-errors",
                    test_responder_receive_errors);
    g_test_add_func("/vhca/rc/ack-coalescing-credits",
                    test_ack_coalescing_and_credits);
    g_test_add_func("/vhca/rc/periodic-loss", test_periodic_loss);
    g_test_add_func("/vhca/rc/random-loss-1pct", test_loss_1);
    g_test_add_func("/vhca/rc/random-loss-5pct", test_loss_5);
    g_test_add_func("/vhca/rc/loopback", test_loopback);
    g_test_add_func("/vhca/rc/rx-drops", test_rx_drops);
    g_test_add_func("/vhca/rc/rx-oversize", test_rx_oversize);
    g_test_add_func("/vhca/rc/rx-copies-datagram", test_rx_copies_datagram);
    g_test_add_func("/vhca/rc/rx-queue-byte-bounds",
                    test_rx_queue_byte_bounds);
    g_test_add_func("/vhca/rc/rx-buffers-reused", test_rx_buffers_reused);
    g_test_add_func("/vhca/rc/sched-deadlines-many-qps",
                    test_sched_deadlines_many_qps);
    g_test_add_func("/vhca/rc/sched-pass-order-and-budget",
                    test_sched_pass_order_and_budget);
    g_test_add_func("/vhca/rc/events", test_events);
    g_test_add_func("/vhca/rc/rd-atomic-limit-fence",
                    test_rd_atomic_limit_and_fence);
    g_test_add_func("/vhca/rc/mr-destroyed-under-write",
                    test_mr_destroyed_under_write);
    g_test_add_func("/vhca/rc/mr-replaced-under-write/other-pd",
                    test_mr_replaced_under_write_other_pd);
    g_test_add_func("/vhca/rc/mr-replaced-under-write/no-remote-write",
                    test_mr_replaced_under_write_no_access);
    g_test_add_func("/vhca/rc/mr-replaced-under-write/same-pd-and-rights",
                    test_mr_replaced_under_write_same);
    g_test_add_func("/vhca/rc/mr-replaced-under-read/other-pd",
                    test_mr_replaced_under_read_other_pd);
    g_test_add_func("/vhca/rc/mr-replaced-under-read/no-remote-read",
                    test_mr_replaced_under_read_no_access);
    g_test_add_func("/vhca/rc/mr-replaced-under-read/same-pd-and-rights",
                    test_mr_replaced_under_read_same);
    g_test_add_func("/vhca/rc/mr-destroyed-under-send",
                    test_mr_destroyed_under_send);
    return g_test_run();
}
