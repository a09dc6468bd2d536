/*
 * Unit tests of the UC transport (IBTA Vol 1 9.8, 9.9.4): two engines
 * back to back, with loss injected on the wire, as in test-vhca-rc.c.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-wire.h"

#define MTU             1024                /* VHCA_IB_MTU_1024 */
#define A_PSN           0x100
#define B_PSN           0xfffffe            /* wraps during the tests */
#define RECV_OFF        0x10000
#define WRITE_OFF       0x20000

typedef struct UcPair {
    Node a, b;
    Wire wa;                        /* what A sends */
} UcPair;

/* RESET -> RTS towards @dest (UC: no timeout, retries or RD atomics). */
static void uc_connect(Node *n, const Node *dest, uint32_t sq_psn,
                       uint32_t rq_psn)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = n->qp.qpn;
    a.port = 1;
    a.qp_access_flags = VHCA_ACCESS_REMOTE_WRITE;
    qp_modify_ok(n->h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                 VHCA_QP_ACCESS_FLAGS);
    a.hop_limit = 64;
    memcpy(a.dgid, dest->gid, 16);
    memcpy(a.dmac, dest->h->core.cfg.mac, 6);
    a.path_mtu = VHCA_IB_MTU_1024;
    a.dest_qp_num = dest->qp.qpn;
    a.rq_psn = rq_psn;
    qp_modify_ok(n->h, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                 VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN);
    a.sq_psn = sq_psn;
    qp_modify_ok(n->h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

static void uc_pair_init(UcPair *p)
{
    memset(&p->wa, 0, sizeof(p->wa));
    node_init(&p->a, 1, VHCA_QPT_UC);
    node_init(&p->b, 2, VHCA_QPT_UC);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    wire_attach(&p->a, &p->wa);
    uc_connect(&p->a, &p->b, A_PSN, B_PSN);
    uc_connect(&p->b, &p->a, B_PSN, A_PSN);
}

static void uc_pair_free(UcPair *p)
{
    harness_free(p->a.h);
    harness_free(p->b.h);
}

static void settle(UcPair *p)
{
    harness_pair_settle(p->a.h, p->b.h, SETTLE_NS);
}

static void post_write_imm(Node *n, uint64_t wr_id, uint32_t off,
                           uint32_t len, uint64_t raddr, uint32_t rkey,
                           uint32_t imm)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, VHCA_WR_RDMA_WRITE_WITH_IMM, VHCA_WQE_SIGNALED);
    wqe_sge(&w, n->buf + off, len, n->key);
    wqe_remote(&w, raddr, rkey);
    w.imm_or_inv = GUINT32_TO_LE(imm);
    qp_put_send_wqe(n->h, &n->qp, &w);
}

/* ---------------------------------------------------------------------- */
/* Messages of several packets                                            */
/* ---------------------------------------------------------------------- */

typedef struct MsgCase {
    uint8_t opcode;
    uint32_t len;
} MsgCase;

static const MsgCase msg_cases[] = {
    { VHCA_WR_SEND, 0 },
    { VHCA_WR_SEND, MTU },
    { VHCA_WR_SEND, 3 * MTU + 7 },
    { VHCA_WR_SEND_WITH_IMM, 2 * MTU },
    { VHCA_WR_RDMA_WRITE, 1 },
    { VHCA_WR_RDMA_WRITE, 4 * MTU },
    { VHCA_WR_RDMA_WRITE_WITH_IMM, 2 * MTU + 1 },
    { VHCA_WR_RDMA_WRITE_WITH_IMM, 0 },
};

static void test_messages(void)
{
    UcPair p;
    unsigned i;
    unsigned frames = 0;

    uc_pair_init(&p);
    for (i = 0; i < G_N_ELEMENTS(msg_cases); i++) {
        const MsgCase *c = &msg_cases[i];
        bool write = c->opcode == VHCA_WR_RDMA_WRITE ||
                     c->opcode == VHCA_WR_RDMA_WRITE_WITH_IMM;
        bool recv = c->opcode != VHCA_WR_RDMA_WRITE;
        uint32_t npkts = c->len ? (c->len + MTU - 1) / MTU : 1;
        struct vhca_cqe cqe;

        fill(&p.a, 0, c->len, i);
        if (recv) {
            post_recv(&p.b, 0xb0 + i, RECV_OFF, 0x8000);
        }
        if (c->opcode == VHCA_WR_RDMA_WRITE_WITH_IMM) {
            post_write_imm(&p.a, 0xa0 + i, 0, c->len, p.b.buf + WRITE_OFF,
                           p.b.key, 0x1234);
        } else {
            post(&p.a, 0xa0 + i, c->opcode, VHCA_WQE_SIGNALED, 0, c->len,
                 p.b.buf + WRITE_OFF, p.b.key);
        }
        ring_sq(&p.a);
        settle(&p);
        frames += npkts;
        g_assert_cmpuint(p.wa.count, ==, frames);
        cqe = expect_cqe(&p.a, &p.a.scq, 0xa0 + i, VHCA_WC_SUCCESS,
                         vhca_send_wc_opcode(c->opcode));
        g_assert_cmpuint(cqe.byte_len, ==, c->len);
        if (recv) {
            cqe = expect_cqe(&p.b, &p.b.rcq, 0xb0 + i, VHCA_WC_SUCCESS,
                             write ? VHCA_WC_RECV_RDMA_WITH_IMM
                                   : VHCA_WC_RECV);
            g_assert_cmpuint(cqe.byte_len, ==, c->len);
            g_assert_cmpuint(cqe.src_qp, ==, 0);
        }
        expect_same(&p.a, 0, &p.b, write ? WRITE_OFF : RECV_OFF, c->len);
        expect_no_cqe(&p.b, &p.b.rcq);
    }
    /* UC never acknowledges: not one frame came back. */
    g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
    g_assert_false(p.a.h->timer_armed);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    uc_pair_free(&p);
}

/* The packets on the wire: UC opcodes, consecutive PSNs, no AckReq. */
static void test_wire_format(void)
{
    VhcaWirePacket pkt;
    UcPair p;

    uc_pair_init(&p);
    post_recv(&p.b, 1, RECV_OFF, 0x8000);
    post(&p.a, 2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 2 * MTU, 0, 0);
    ring_sq(&p.a);
    settle(&p);
    g_assert_cmpint(vhca_wire_parse(p.wa.last, p.wa.last_len, &pkt), ==,
                    VHCA_WIRE_OK);
    g_assert_cmphex(pkt.tp.bth.opcode, ==, VHCA_IB_OPCODE(UC, SEND_LAST));
    g_assert_cmphex(pkt.tp.bth.psn, ==, A_PSN + 1);
    g_assert_false(pkt.tp.bth.ack_req);
    g_assert_cmphex(pkt.tp.bth.dest_qpn, ==, p.b.qp.qpn);
    uc_pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* PSN gaps (IBTA 9.8.3, rxe check_psn)                                   */
/* ---------------------------------------------------------------------- */

typedef struct GapCase {
    const char *what;
    uint8_t opcode;                 /* of the first message */
    unsigned drop_nth;              /* frame lost (1-based) */
} GapCase;

static const GapCase gap_cases[] = {
    { "SEND loses its MIDDLE", VHCA_WR_SEND, 2 },
    { "SEND loses its LAST", VHCA_WR_SEND, 3 },
    { "SEND loses its FIRST", VHCA_WR_SEND, 1 },
    { "WRITE loses its MIDDLE", VHCA_WR_RDMA_WRITE, 2 },
};

static void test_psn_gap(void)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(gap_cases); i++) {
        const GapCase *c = &gap_cases[i];
        struct vhca_cqe cqe;
        UcPair p;

        g_test_message("%s", c->what);
        uc_pair_init(&p);
        p.wa.drop_nth = c->drop_nth;
        post_recv(&p.b, 0xb1, RECV_OFF, 0x8000);
        post_recv(&p.b, 0xb2, RECV_OFF + 0x8000, 0x8000);
        /* Message 1: three packets, one lost. */
        fill(&p.a, 0, 3 * MTU, 1);
        post(&p.a, 0xa1, c->opcode, VHCA_WQE_SIGNALED, 0, 3 * MTU,
             p.b.buf + WRITE_OFF, p.b.key);
        /* Message 2: two packets, intact. */
        fill(&p.a, 0x4000, 2 * MTU, 2);
        post(&p.a, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0x4000, 2 * MTU,
             0, 0);
        ring_sq(&p.a);
        settle(&p);
        /* The sender knows nothing of it. */
        expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS,
                   vhca_send_wc_opcode(c->opcode));
        expect_cqe(&p.a, &p.a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        /* Message 2 lands in the first receive WQE, intact. */
        cqe = expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS,
                         VHCA_WC_RECV);
        g_assert_cmpuint(cqe.byte_len, ==, 2 * MTU);
        expect_same(&p.a, 0x4000, &p.b, RECV_OFF, 2 * MTU);
        expect_no_cqe(&p.b, &p.b.rcq);
        /* A lost FIRST: the rest of it is discarded, one message. */
        g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UC_MSGS_DROPPED), ==, 1);
        g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
        if (c->opcode == VHCA_WR_RDMA_WRITE) {
            /* The first packet was placed and stays, as on hardware. */
            expect_same(&p.a, 0, &p.b, WRITE_OFF, MTU);
        }
        g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
        uc_pair_free(&p);
    }
}

/* ---------------------------------------------------------------------- */
/* Responder errors                                                       */
/* ---------------------------------------------------------------------- */

/* Bad R_Key, out of bounds, WRITE not enabled: silently dropped. */
static void test_write_errors_silent(void)
{
    struct vhca_qp_attr a;
    UcPair p;

    uc_pair_init(&p);
    fill(&p.a, 0, 2 * MTU, 3);
    post(&p.a, 1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 2 * MTU,
         p.b.buf + WRITE_OFF, p.b.key ^ 0x100);
    post(&p.a, 2, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 2 * MTU,
         p.b.buf + DATA_PAGES * 4096 - MTU, p.b.key);
    post_write_imm(&p.a, 3, 0, 100, p.b.buf + WRITE_OFF, p.b.key ^ 0x100,
                   7);
    post(&p.a, 4, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 2 * MTU,
         p.b.buf + WRITE_OFF, p.b.key);
    ring_sq(&p.a);
    post_recv(&p.b, 0xb0, RECV_OFF, 0x8000);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 3, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    expect_cqe(&p.a, &p.a.scq, 4, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    /* No CQE, no event, no state change, no frame back. */
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UC_MSGS_DROPPED), ==, 3);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
    /* The good one after them arrived. */
    expect_same(&p.a, 0, &p.b, WRITE_OFF, 2 * MTU);

    /* RDMA WRITE not enabled on the QP: dropped too. */
    memset(&a, 0, sizeof(a));
    a.qpn = p.b.qp.qpn;
    a.qp_access_flags = 0;
    qp_modify_ok(p.b.h, &a, VHCA_QPS_RTS, VHCA_QP_ACCESS_FLAGS);
    post(&p.a, 5, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 8,
         p.b.buf + WRITE_OFF, p.b.key);
    ring_sq(&p.a);
    settle(&p);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UC_MSGS_DROPPED), ==, 4);
    uc_pair_free(&p);
}

/* Keeps every frame A sends, for the test to hand over one at a time. */
static void keep_hook(Harness *h, const uint8_t *buf, size_t len)
{
    g_ptr_array_add(h->tx_hook_opaque, g_bytes_new(buf, len));
}

/*
 * A UC RDMA WRITE whose target MR is destroyed after its first packets
 * and re-created under the same key, PD and rights: the rest of the
 * message belongs to the MR its FIRST packet was checked against, so it
 * is dropped whole (IBTA 9.8.3, 10.6.7.2), silently, and the new MR
 * keeps its bytes.
 */
static void test_mr_replaced_under_write(void)
{
    enum { LEN = 8 * MTU, LANDED = 3 };
    g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    g_autofree uint8_t *before = NULL;
    uint64_t target;
    uint32_t rkey;
    UcPair p;
    unsigned i;

    uc_pair_init(&p);
    target = p.b.buf + WRITE_OFF;
    rkey = rdma_create_phys_mr(p.b.h, p.b.pdn, target, LEN, ACCESS_ALL);
    fill(&p.a, 0, LEN, 3);
    fill(&p.b, WRITE_OFF, LEN, 8);
    before = g_memdup2(ram_ptr(p.b.h, target, LEN), LEN);
    p.a.h->tx_hook = keep_hook;
    p.a.h->tx_hook_opaque = frames;
    post(&p.a, 1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, LEN, target,
         rkey);
    ring_sq(&p.a);
    harness_run(p.a.h);
    g_assert_cmpuint(frames->len, ==, LEN / MTU);

    for (i = 0; i < LANDED; i++) {
        GBytes *f = g_ptr_array_index(frames, i);

        harness_deliver(p.b.h, g_bytes_get_data(f, NULL),
                        g_bytes_get_size(f));
    }
    harness_run(p.b.h);
    expect_same(&p.a, 0, &p.b, WRITE_OFF, LANDED * MTU);

    g_assert_cmpuint(rdma_destroy(p.b.h, VHCA_CMD_DESTROY_MR, rkey), ==,
                     VHCA_ST_OK);
    g_assert_cmphex(rdma_create_phys_mr(p.b.h, p.b.pdn, target, LEN,
                                        ACCESS_ALL), ==, rkey);
    for (i = LANDED; i < frames->len; i++) {
        GBytes *f = g_ptr_array_index(frames, i);

        harness_deliver(p.b.h, g_bytes_get_data(f, NULL),
                        g_bytes_get_size(f));
    }
    harness_run(p.b.h);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_UC_MSGS_DROPPED), ==, 1);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(p.b.h->tx_frames, ==, 0);
    expect_no_cqe(&p.b, &p.b.rcq);
    g_assert_cmpmem(ram_ptr(p.b.h, target + LANDED * MTU, LEN - LANDED * MTU),
                    LEN - LANDED * MTU, before + LANDED * MTU,
                    LEN - LANDED * MTU);
    p.a.h->tx_hook = NULL;
    uc_pair_free(&p);
}

static void test_no_rwqe(void)
{
    UcPair p;

    uc_pair_init(&p);
    post(&p.a, 1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 3 * MTU, 0, 0);
    post_write_imm(&p.a, 2, 0, 2 * MTU, p.b.buf + WRITE_OFF, p.b.key, 9);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    g_assert_cmpuint(counter(p.b.h, VHCA_CNT_DROP_NO_RWQE), ==, 2);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_RTS);
    /* Then one arrives normally. */
    post_recv(&p.b, 0xb0, RECV_OFF, 0x8000);
    post(&p.a, 3, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 100, 0, 0);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.b, &p.b.rcq, 0xb0, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    uc_pair_free(&p);
}

/* A SEND longer than the receive buffer: LOC_LEN_ERR, QP to ERR. */
static void test_recv_too_long(void)
{
    UcPair p;

    uc_pair_init(&p);
    post_recv(&p.b, 0xb1, RECV_OFF, 2 * MTU);
    post_recv(&p.b, 0xb2, RECV_OFF, 2 * MTU);
    post(&p.a, 1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 2 * MTU + 1, 0, 0);
    ring_sq(&p.a);
    settle(&p);
    expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_LOC_LEN_ERR, VHCA_WC_RECV);
    expect_cqe(&p.b, &p.b.rcq, 0xb2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_RECV);
    g_assert_cmpuint(qp_state(p.b.h, p.b.qp.qpn), ==, VHCA_QPS_ERR);
    /* What the peer sent did not fit: traced, not a guest error. */
    g_assert_cmpuint(p.b.h->guest_errors[VHCA_GUEST_ERR_QP], ==, 0);
    g_assert_cmpuint(p.b.h->ev.qp_state.why, ==, VHCA_QP_CHANGE_ERROR);
    uc_pair_free(&p);
}

/* READ, atomics, SEND with invalidate: LOC_QP_OP_ERR, QP to SQE. */
static void test_bad_opcodes(void)
{
    static const uint8_t ops[] = {
        VHCA_WR_RDMA_READ, VHCA_WR_ATOMIC_CMP_AND_SWP,
        VHCA_WR_ATOMIC_FETCH_AND_ADD, VHCA_WR_SEND_WITH_INV, 0x7f,
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(ops); i++) {
        struct vhca_qp_attr a;
        UcPair p;

        uc_pair_init(&p);
        post(&p.a, 1, ops[i], VHCA_WQE_SIGNALED, 0, 8, p.b.buf, p.b.key);
        post(&p.a, 2, VHCA_WR_SEND, 0, 0, 8, 0, 0);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 1, VHCA_WC_LOC_QP_OP_ERR,
                   vhca_send_wc_opcode(ops[i]));
        expect_cqe(&p.a, &p.a.scq, 2, VHCA_WC_WR_FLUSH_ERR, VHCA_WC_SEND);
        g_assert_cmpuint(qp_state(p.a.h, p.a.qp.qpn), ==, VHCA_QPS_SQE);
        g_assert_cmpuint(p.wa.count, ==, 0);
        /* SQE -> RTS: the PSNs go on where they were. */
        memset(&a, 0, sizeof(a));
        a.qpn = p.a.qp.qpn;
        qp_modify_ok(p.a.h, &a, VHCA_QPS_RTS, 0);
        post_recv(&p.b, 0xb0, RECV_OFF, 0x8000);
        post(&p.a, 3, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 8, 0, 0);
        ring_sq(&p.a);
        settle(&p);
        expect_cqe(&p.a, &p.a.scq, 3, VHCA_WC_SUCCESS, VHCA_WC_SEND);
        uc_pair_free(&p);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/uc/messages", test_messages);
    g_test_add_func("/vhca/uc/wire-format", test_wire_format);
    g_test_add_func("/vhca/uc/psn-gap", test_psn_gap);
    g_test_add_func("/vhca/uc/write-errors-silent", test_write_errors_silent);
    g_test_add_func("/vhca/uc/mr-replaced-under-write",
                    test_mr_replaced_under_write);
    g_test_add_func("/vhca/uc/no-rwqe", test_no_rwqe);
    g_test_add_func("/vhca/uc/recv-too-long", test_recv_too_long);
    g_test_add_func("/vhca/uc/bad-opcodes", test_bad_opcodes);
    return g_test_run();
}
