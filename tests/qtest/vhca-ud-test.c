/*
 * vhca conformance: the datagram and unreliable transports through the
 * real device - UD (GRH area, CQE fields, Q_Key, datagram length), the
 * GSI QP (QP1), UC, and the ATTACH_MCAST / DETACH_MCAST commands with
 * multicast delivery (docs/specs/vhca.rst, "UD, UC, GSI and multicast").
 *
 * One function, and traffic to its own GIDs: the device loops it back
 * inside (as for RC in vhca-rc-test.c), so no link is needed.  GID 0 is
 * 192.0.2.1, GID 1 fd00::1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"

#define ADMQ_LOG        6
#define AEQ_LOG         8
#define CQ_LOG          6
#define GRH             VHCA_GRH_AREA_LEN
#define BUF_LEN         (64 * 1024)
#define QKEY            0x12340000u

static const uint8_t gid4[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1,
};
static const uint8_t gid6[16] = { 0xfd, [15] = 1 };
static const uint8_t mgid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3,
};
static const uint8_t mmac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
static const uint8_t own_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

typedef struct Rig {
    VhcaTestDev *d;
    uint32_t page, pdn, key;
    VhcaEq eq;
    uint64_t buf;               /* BUF_LEN, one MR (key) over it */
} Rig;

/* A QP with its own CQs. */
typedef struct Ep {
    VhcaQp qp;
    VhcaCq scq, rcq;
} Ep;

static void rig_up(Rig *r)
{
    struct vhca_mr_create c;

    r->d = vhca_test_start(false, "mac=52:54:00:12:34:56");
    vhca_admin_setup(r->d, ADMQ_LOG, AEQ_LOG);
    r->d->stash_events = true;
    g_assert_cmpuint(vhca_cmd_add_gid(r->d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      gid4), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_add_gid(r->d, 1, 1, VHCA_GID_TYPE_ROCE_V2_IPV6,
                                      gid6), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(r->d, &r->page), ==, VHCA_ST_OK);
    r->pdn = vhca_pd_make(r->d);
    vhca_eq_make(r->d, &r->eq, 6, VHCA_VECTOR_FIRST_COMP);
    r->buf = guest_alloc(&r->d->alloc, BUF_LEN);
    qtest_memset(r->d->qts, r->buf, 0, BUF_LEN);
    vhca_mr_prepare_phys(&c, r->pdn, VHCA_ACCESS_LOCAL_WRITE |
                         VHCA_ACCESS_REMOTE_WRITE, r->buf, BUF_LEN, 0x33);
    g_assert_cmpuint(vhca_cmd_create_mr(r->d, &c, NULL, &r->key), ==,
                     VHCA_ST_OK);
}

static void modify_ok(Rig *r, uint32_t qpn, uint8_t state, uint32_t mask,
                      struct vhca_qp_attr *a)
{
    a->qpn = cpu_to_le32(qpn);
    a->qp_state = state;
    a->attr_mask = cpu_to_le32(VHCA_QP_STATE | mask);
    g_assert_cmpuint(vhca_cmd_modify_qp(r->d, a), ==, VHCA_ST_OK);
}

/* A @type QP in RTS; UC QPs are connected to @peer_qpn (here). */
static void ep_make(Rig *r, Ep *e, uint8_t type, uint32_t qkey,
                    uint32_t peer_qpn)
{
    struct vhca_qp_attr a;
    bool uc = type == VHCA_QPT_UC;

    vhca_cq_make(r->d, &e->scq, CQ_LOG, r->eq.eqn, r->page);
    vhca_cq_make(r->d, &e->rcq, CQ_LOG, r->eq.eqn, r->page);
    vhca_qp_make(r->d, &e->qp, type, r->pdn, e->scq.cqn, e->rcq.cqn, 5, 5,
                 r->page);
    if (uc && !peer_qpn) {
        return;                 /* connected by ep_connect_uc later */
    }
    memset(&a, 0, sizeof(a));
    a.port = 1;
    a.qkey = cpu_to_le32(qkey);
    a.qp_access_flags = cpu_to_le32(VHCA_ACCESS_REMOTE_WRITE);
    modify_ok(r, e->qp.qpn, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
              (type == VHCA_QPT_GSI ? 0 : VHCA_QP_PORT) |
              (uc ? VHCA_QP_ACCESS_FLAGS : VHCA_QP_QKEY), &a);
    memset(&a, 0, sizeof(a));
    if (uc) {
        memcpy(a.dgid, gid4, 16);
        memcpy(a.dmac, own_mac, 6);
        a.hop_limit = 64;
        a.path_mtu = VHCA_IB_MTU_1024;
        a.dest_qp_num = cpu_to_le32(peer_qpn);
        a.rq_psn = cpu_to_le32(0x777);
    }
    modify_ok(r, e->qp.qpn, VHCA_QPS_RTR, uc ? VHCA_QP_AV | VHCA_QP_PATH_MTU |
              VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN : 0, &a);
    memset(&a, 0, sizeof(a));
    a.sq_psn = cpu_to_le32(0x777);
    modify_ok(r, e->qp.qpn, VHCA_QPS_RTS, VHCA_QP_SQ_PSN, &a);
}

static uint8_t query_state(Rig *r, uint32_t qpn)
{
    struct vhca_qp_attr a;

    g_assert_cmpuint(vhca_cmd_query_qp(r->d, qpn, &a), ==, VHCA_ST_OK);
    return a.qp_state;
}

/* A send WQE of [buf + off, +len); UD: to @dgid / @dest_qpn / @qkey. */
static void post_send(Rig *r, Ep *e, uint64_t wr_id, uint8_t opcode,
                      uint32_t off, uint32_t len, const uint8_t *dgid,
                      uint8_t sgid_index, uint32_t dest_qpn, uint32_t qkey)
{
    struct vhca_send_wqe w;

    memset(&w, 0, sizeof(w));
    w.wr_id = cpu_to_le64(wr_id);
    w.opcode = opcode;
    w.flags = VHCA_WQE_SIGNALED;
    w.imm_or_inv = cpu_to_be32(0xcafe0001);
    if (len) {
        w.num_sge = 1;
        w.sge[0].addr = cpu_to_le64(r->buf + off);
        w.sge[0].length = cpu_to_le32(len);
        w.sge[0].lkey = cpu_to_le32(r->key);
    }
    if (e->qp.type == VHCA_QPT_UC) {
        w.remote_addr = cpu_to_le64(r->buf + dest_qpn);   /* an offset */
        w.rkey = cpu_to_le32(r->key);
    } else {
        w.dest_qpn = cpu_to_le32(dest_qpn);
        w.qkey = cpu_to_le32(qkey);
        memcpy(w.av.dgid, dgid, 16);
        memcpy(w.av.dmac, memcmp(dgid, mgid, 16) ? own_mac : mmac, 6);
        w.av.sgid_index = sgid_index;
        w.av.hop_limit = 64;
    }
    vhca_qp_write_send_wqe(r->d, &e->qp, &w);
    vhca_qp_ring_sq(r->d, &e->qp, r->page);
}

static void post_recv(Rig *r, Ep *e, uint64_t wr_id, uint32_t off,
                      uint32_t len)
{
    vhca_qp_write_recv_sge(r->d, &e->qp, wr_id, r->buf + off, len, r->key);
    vhca_qp_ring_rq(r->d, &e->qp, r->page);
}

static struct vhca_cqe next_cqe(Rig *r, VhcaCq *cq, uint64_t wr_id,
                                uint8_t status, uint8_t opcode)
{
    struct vhca_cqe c;

    vhca_cq_next(r->d, cq, &c);
    vhca_cq_update_dbrec(r->d, cq);
    g_assert_cmphex(c.wr_id, ==, wr_id);
    g_assert_cmpuint(c.status, ==, status);
    if (status == VHCA_WC_SUCCESS) {
        g_assert_cmpuint(c.opcode, ==, opcode);
    }
    return c;
}

/* Nothing more on @cq after the device had time to run. */
static void cq_empty(Rig *r, VhcaCq *cq)
{
    qtest_clock_step(r->d->qts, 1000000);
    g_assert_false(vhca_cq_peek(r->d, cq, NULL));
}

static void fill(Rig *r, uint32_t off, uint32_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    for (uint32_t i = 0; i < len; i++) {
        b[i] = (uint8_t)(i * 7 + seed);
    }
    qtest_memwrite(r->d->qts, r->buf + off, b, len);
}

static void same(Rig *r, uint32_t a, uint32_t b, uint32_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);

    qtest_memread(r->d->qts, r->buf + a, x, len);
    qtest_memread(r->d->qts, r->buf + b, y, len);
    g_assert_cmpmem(x, len, y, len);
}

static uint8_t mcast_cmd(Rig *r, uint16_t opcode, uint32_t qpn,
                         const uint8_t *gid)
{
    struct vhca_cmd_mcast_in in;

    memset(&in, 0, sizeof(in));
    in.qpn = cpu_to_le32(qpn);
    memcpy(in.gid, gid, 16);
    return vhca_cmd_exec(r->d, opcode, &in, sizeof(in), NULL);
}

/* ---- UD ----------------------------------------------------------------- */

static void test_ud_loopback(void)
{
    static const uint8_t zero[20];
    Rig r;
    Ep a, b;
    struct vhca_cqe c;
    uint8_t grh[GRH];

    rig_up(&r);
    ep_make(&r, &a, VHCA_QPT_UD, QKEY, 0);
    ep_make(&r, &b, VHCA_QPT_UD, QKEY, 0);
    fill(&r, 0, 1024, 5);

    /* IPv4: 20 zero bytes, then the IPv4 header as received. */
    post_recv(&r, &b, 0xb1, 0x4000, GRH + 1024);
    post_send(&r, &a, 0xa1, VHCA_WR_SEND_WITH_IMM, 0, 1024, gid4, 0,
              b.qp.qpn, QKEY);
    c = next_cqe(&r, &a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    g_assert_cmpuint(c.byte_len, ==, 1024);
    c = next_cqe(&r, &b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(c.qpn, ==, b.qp.qpn);
    g_assert_cmpuint(c.src_qp, ==, a.qp.qpn);
    g_assert_cmpuint(c.byte_len, ==, GRH + 1024);
    g_assert_cmphex(c.flags, ==, VHCA_CQE_GRH | VHCA_CQE_NET_IPV4 |
                    VHCA_CQE_WITH_IMM);
    g_assert_cmphex(be32_to_cpu(cpu_to_le32(c.imm_or_inv)), ==, 0xcafe0001);
    qtest_memread(r.d->qts, r.buf + 0x4000, grh, GRH);
    g_assert_cmpmem(grh, 20, zero, 20);
    g_assert_cmphex(grh[20], ==, 0x45);
    g_assert_cmpuint(grh[29], ==, 17);
    g_assert_cmpmem(grh + 32, 4, gid4 + 12, 4);
    g_assert_cmpmem(grh + 36, 4, gid4 + 12, 4);
    same(&r, 0, 0x4000 + GRH, 1024);

    /* IPv6: the IPv6 header as received. */
    post_recv(&r, &b, 0xb2, 0x8000, 4096);
    post_send(&r, &a, 0xa2, VHCA_WR_SEND, 0, 100, gid6, 1, b.qp.qpn, QKEY);
    next_cqe(&r, &a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    c = next_cqe(&r, &b.rcq, 0xb2, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmphex(c.flags, ==, VHCA_CQE_GRH | VHCA_CQE_NET_IPV6);
    g_assert_cmpuint(c.byte_len, ==, GRH + 100);
    qtest_memread(r.d->qts, r.buf + 0x8000, grh, GRH);
    g_assert_cmpuint(grh[0] >> 4, ==, 6);
    g_assert_cmpuint(grh[6], ==, 17);
    g_assert_cmpmem(grh + 8, 16, gid6, 16);
    g_assert_cmpmem(grh + 24, 16, gid6, 16);
    same(&r, 0, 0x8000 + GRH, 100);
    g_assert_cmpuint(vhca_counter(r.d, VHCA_CNT_UD_TX_PACKETS), ==, 2);
    g_assert_cmpuint(vhca_counter(r.d, VHCA_CNT_UD_RX_PACKETS), ==, 2);
    vhca_test_stop(r.d);
}

/* Silent drops and local errors, with their counters and states. */
static void test_ud_errors(void)
{
    Rig r;
    Ep a, b;
    struct vhca_qp_attr at;

    rig_up(&r);
    ep_make(&r, &a, VHCA_QPT_UD, QKEY, 0);
    ep_make(&r, &b, VHCA_QPT_UD, QKEY, 0);
    /* Q_Key mismatch: dropped, the receive WQE stays. */
    post_recv(&r, &b, 0xb1, 0x4000, 4096);
    post_send(&r, &a, 0xa1, VHCA_WR_SEND, 0, 8, gid4, 0, b.qp.qpn, 0x999);
    next_cqe(&r, &a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    vhca_wait_counter(r.d, VHCA_CNT_DROP_QKEY, 1, "Q_Key drop");
    cq_empty(&r, &b.rcq);
    /*
     * Longer than the active MTU (1024 at MTU 1500): not sent and no
     * error (IBTA 10.2.1, C10-93.1.1); the QP stays in RTS.
     */
    post_send(&r, &a, 0xa2, VHCA_WR_SEND, 0, 1025, gid4, 0, b.qp.qpn, QKEY);
    next_cqe(&r, &a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    vhca_wait_counter(r.d, VHCA_CNT_UD_TX_TOO_LONG, 1, "UD too long");
    g_assert_cmpuint(query_state(&r, a.qp.qpn), ==, VHCA_QPS_RTS);
    cq_empty(&r, &b.rcq);
    /* A bad source GID index: LOC_QP_OP_ERR, SQE; then back to RTS. */
    memset(&at, 0, sizeof(at));
    post_send(&r, &a, 0xa3, VHCA_WR_SEND, 0, 8, gid4, 9, b.qp.qpn, QKEY);
    next_cqe(&r, &a.scq, 0xa3, VHCA_WC_LOC_QP_OP_ERR, 0);
    modify_ok(&r, a.qp.qpn, VHCA_QPS_RTS, 0, &at);
    /* A receive buffer too small for GRH area + data: LOC_LEN_ERR, ERR. */
    post_send(&r, &a, 0xa4, VHCA_WR_SEND, 0, 100, gid4, 0, b.qp.qpn, QKEY);
    next_cqe(&r, &a.scq, 0xa4, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    next_cqe(&r, &b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    post_recv(&r, &b, 0xb2, 0x4000, GRH + 99);
    post_send(&r, &a, 0xa5, VHCA_WR_SEND, 0, 100, gid4, 0, b.qp.qpn, QKEY);
    next_cqe(&r, &a.scq, 0xa5, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    next_cqe(&r, &b.rcq, 0xb2, VHCA_WC_LOC_LEN_ERR, 0);
    g_assert_cmpuint(query_state(&r, b.qp.qpn), ==, VHCA_QPS_ERR);
    /* No receive WQE: dropped and counted, never an RNR NAK. */
    post_send(&r, &a, 0xa6, VHCA_WR_SEND, 0, 8, gid4, 0, a.qp.qpn, QKEY);
    next_cqe(&r, &a.scq, 0xa6, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    vhca_wait_counter(r.d, VHCA_CNT_DROP_NO_RWQE, 1, "no RWQE drop");
    vhca_test_stop(r.d);
}

/* ---- GSI ---------------------------------------------------------------- */

static void test_gsi(void)
{
    struct vhca_qp_attr at;
    struct vhca_cqe c;
    Rig r;
    Ep g, u;

    rig_up(&r);
    vhca_cq_make(r.d, &g.scq, CQ_LOG, r.eq.eqn, r.page);
    vhca_cq_make(r.d, &g.rcq, CQ_LOG, r.eq.eqn, r.page);
    vhca_qp_make(r.d, &g.qp, VHCA_QPT_GSI, r.pdn, g.scq.cqn, g.rcq.cqn, 5, 5,
                 r.page);
    g_assert_cmpuint(g.qp.qpn, ==, VHCA_GSI_QPN);
    /* Its RESET -> INIT takes no PORT (Linux's GSI row). */
    memset(&at, 0, sizeof(at));
    at.qkey = cpu_to_le32(VHCA_GSI_QKEY);
    modify_ok(&r, 1, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY, &at);
    memset(&at, 0, sizeof(at));
    modify_ok(&r, 1, VHCA_QPS_RTR, 0, &at);
    at.sq_psn = cpu_to_le32(1);
    modify_ok(&r, 1, VHCA_QPS_RTS, VHCA_QP_SQ_PSN, &at);
    ep_make(&r, &u, VHCA_QPT_UD, QKEY, 0);

    /* QP1 to QP1 with 0x80010000 (controlled: the QP's, also 0x80010000). */
    post_recv(&r, &g, 0x61, 0x4000, 4096);
    post_send(&r, &g, 0x62, VHCA_WR_SEND, 0, 256, gid4, 0, 1, VHCA_GSI_QKEY);
    next_cqe(&r, &g.scq, 0x62, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    c = next_cqe(&r, &g.rcq, 0x61, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(c.qpn, ==, 1);
    g_assert_cmpuint(c.src_qp, ==, 1);
    g_assert_cmpuint(c.byte_len, ==, GRH + 256);
    /* Any other Q_Key to QP1 is dropped. */
    post_recv(&r, &g, 0x63, 0x4000, 4096);
    post_send(&r, &u, 0x64, VHCA_WR_SEND, 0, 8, gid4, 0, 1, QKEY);
    next_cqe(&r, &u.scq, 0x64, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    vhca_wait_counter(r.d, VHCA_CNT_DROP_QKEY, 1, "Q_Key drop");
    cq_empty(&r, &g.rcq);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_QP, 1), ==,
                     VHCA_ST_OK);
    vhca_test_stop(r.d);
}

/* ---- UC ----------------------------------------------------------------- */

static void test_uc_loopback(void)
{
    Rig r;
    Ep a, b;
    struct vhca_cqe c;

    rig_up(&r);
    ep_make(&r, &a, VHCA_QPT_UC, 0, 0);
    ep_make(&r, &b, VHCA_QPT_UC, 0, a.qp.qpn);
    /* a, created unconnected, now goes to b. */
    {
        struct vhca_qp_attr at;

        memset(&at, 0, sizeof(at));
        at.port = 1;
        at.qp_access_flags = cpu_to_le32(VHCA_ACCESS_REMOTE_WRITE);
        modify_ok(&r, a.qp.qpn, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                  VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS, &at);
        memset(&at, 0, sizeof(at));
        memcpy(at.dgid, gid4, 16);
        memcpy(at.dmac, own_mac, 6);
        at.hop_limit = 64;
        at.path_mtu = VHCA_IB_MTU_1024;
        at.dest_qp_num = cpu_to_le32(b.qp.qpn);
        at.rq_psn = cpu_to_le32(0x777);
        modify_ok(&r, a.qp.qpn, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                  VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN, &at);
        memset(&at, 0, sizeof(at));
        at.sq_psn = cpu_to_le32(0x777);
        modify_ok(&r, a.qp.qpn, VHCA_QPS_RTS, VHCA_QP_SQ_PSN, &at);
    }
    fill(&r, 0, 3000, 9);
    post_recv(&r, &b, 0xb1, 0x4000, 4096);
    post_send(&r, &a, 0xa1, VHCA_WR_SEND, 0, 3000, NULL, 0, 0, 0);
    next_cqe(&r, &a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    c = next_cqe(&r, &b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(c.byte_len, ==, 3000);
    g_assert_cmpuint(c.flags, ==, 0);
    same(&r, 0, 0x4000, 3000);
    /* RDMA WRITE with immediate (remote offset 0x8000), three packets. */
    post_recv(&r, &b, 0xb2, 0, 0);
    post_send(&r, &a, 0xa2, VHCA_WR_RDMA_WRITE_WITH_IMM, 0, 2500, NULL, 0,
              0x8000, 0);
    next_cqe(&r, &a.scq, 0xa2, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    c = next_cqe(&r, &b.rcq, 0xb2, VHCA_WC_SUCCESS,
                 VHCA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(c.byte_len, ==, 2500);
    g_assert_cmphex(c.flags, ==, VHCA_CQE_WITH_IMM);
    same(&r, 0, 0x8000, 2500);
    /* A READ is not a UC operation: LOC_QP_OP_ERR, the QP to SQE. */
    post_send(&r, &a, 0xa3, VHCA_WR_RDMA_READ, 0, 8, NULL, 0, 0x8000, 0);
    next_cqe(&r, &a.scq, 0xa3, VHCA_WC_LOC_QP_OP_ERR, 0);
    g_assert_cmpuint(query_state(&r, a.qp.qpn), ==, VHCA_QPS_SQE);
    g_assert_cmpuint(vhca_counter(r.d, VHCA_CNT_UC_MSGS_DROPPED), ==, 0);
    vhca_test_stop(r.d);
}

/* ---- multicast ---------------------------------------------------------- */

static void test_mcast(void)
{
    Rig r;
    Ep s, m1, m2;
    struct vhca_cqe c;

    rig_up(&r);
    ep_make(&r, &s, VHCA_QPT_UD, QKEY, 0);
    ep_make(&r, &m1, VHCA_QPT_UD, QKEY, 0);
    ep_make(&r, &m2, VHCA_QPT_UD, QKEY, 0);

    /* Attaching twice is fine.  (Refusals: tests/common's table.) */
    g_assert_cmpuint(mcast_cmd(&r, VHCA_CMD_ATTACH_MCAST, m1.qp.qpn, mgid),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(&r, VHCA_CMD_ATTACH_MCAST, m1.qp.qpn, mgid),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(&r, VHCA_CMD_ATTACH_MCAST, m2.qp.qpn, mgid),
                     ==, VHCA_ST_OK);

    /* Both members get a copy; the device loops it back to them. */
    fill(&r, 0, 300, 3);
    post_recv(&r, &m1, 0x11, 0x4000, 4096);
    post_recv(&r, &m2, 0x21, 0x6000, 4096);
    post_send(&r, &s, 0x01, VHCA_WR_SEND, 0, 300, mgid, 0, 0, QKEY);
    next_cqe(&r, &s.scq, 0x01, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    c = next_cqe(&r, &m1.rcq, 0x11, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(c.src_qp, ==, s.qp.qpn);
    g_assert_cmpuint(c.byte_len, ==, GRH + 300);
    next_cqe(&r, &m2.rcq, 0x21, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    same(&r, 0, 0x4000 + GRH, 300);
    same(&r, 0, 0x6000 + GRH, 300);

    /* Detach one; destroying the other detaches it. */
    g_assert_cmpuint(mcast_cmd(&r, VHCA_CMD_DETACH_MCAST, m1.qp.qpn, mgid),
                     ==, VHCA_ST_OK);
    post_recv(&r, &m1, 0x12, 0x4000, 4096);
    post_recv(&r, &m2, 0x22, 0x6000, 4096);
    post_send(&r, &s, 0x02, VHCA_WR_SEND, 0, 300, mgid, 0, 0, QKEY);
    next_cqe(&r, &s.scq, 0x02, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    next_cqe(&r, &m2.rcq, 0x22, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    cq_empty(&r, &m1.rcq);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_QP, m2.qp.qpn),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(&r, VHCA_CMD_ATTACH_MCAST, m1.qp.qpn, mgid),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(mcast_cmd(&r, VHCA_CMD_DETACH_MCAST, m1.qp.qpn, mgid),
                     ==, VHCA_ST_OK);
    vhca_test_stop(r.d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);
    vhca_add_test("/vhca/ud/loopback", test_ud_loopback);
    vhca_add_test("/vhca/ud/errors", test_ud_errors);
    vhca_add_test("/vhca/gsi", test_gsi);
    vhca_add_test("/vhca/uc/loopback", test_uc_loopback);
    vhca_add_test("/vhca/mcast", test_mcast);
    return g_test_run();
}
