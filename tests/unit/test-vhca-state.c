/*
 * Unit tests of the engine's state description (issue 30; vhca-state.c,
 * docs/developer-guide.rst "Migration: the engine's state"): objects of
 * every type made through the admin commands, an RC message cut in the
 * middle on both sides, saved, loaded into fresh engines, saved again
 * byte for byte, then finished; and damaged streams, each refused with
 * the target engine unchanged.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include <libdeflate.h>

#include "vhca-node.h"
#include "vhca-rdma.h"
#include "vhca-state.h"

#define MSG_LEN         (16 * 1024)         /* 16 packets at MTU 1024 */
#define RECV_OFF        0x10000
#define PASS_FRAMES     5                   /* then the wire is cut */

static char err[256];

/* The wire passes the first frames, then loses every one. */
static unsigned pass_left, cut_lost;

static void cut_hook(Harness *h, const uint8_t *buf, size_t len)
{
    if (pass_left) {
        pass_left--;
        harness_deliver(h->peer, buf, len);
    } else {
        cut_lost++;
    }
}

static VhcaStateBuf save(Harness *h)
{
    VhcaStateBuf b = { 0 };

    g_assert_cmpint(vhca_state_save(&h->core, &b, err, sizeof(err)), ==, 0);
    g_assert_cmpuint(b.len, >, 16);
    return b;
}

static void expect_same_bytes(const VhcaStateBuf *x, const VhcaStateBuf *y)
{
    g_assert_cmpuint(x->len, ==, y->len);
    g_assert_true(memcmp(x->data, y->data, x->len) == 0);
}

/*
 * Migrate @h's engine: save it, replace it by a fresh engine of the same
 * config (what the destination QEMU realizes), load the stream into it,
 * and check that saving again gives the same bytes.  Guest RAM stays,
 * as QEMU migrates it beside the device.
 */
static void migrate(Harness *h)
{
    VhcaStateBuf before = save(h), after;
    const VhcaCoreOps *ops = h->core.ops;
    VhcaCoreConfig cfg = h->core.cfg;
    bool link = h->core.link_up;

    vhca_core_cleanup(&h->core);
    g_assert_cmpint(vhca_core_init(&h->core, &cfg, ops, h), ==, 0);
    h->core.link_up = link;         /* the backend's, set by the glue */
    if (vhca_state_load(&h->core, before.data, before.len, err,
                        sizeof(err))) {
        g_error("load: %s", err);
    }
    after = save(h);
    expect_same_bytes(&before, &after);
    vhca_state_buf_free(&before);
    vhca_state_buf_free(&after);
}

static void test_tables(void)
{
    if (vhca_state_self_check(err, sizeof(err))) {
        g_error("%s", err);
    }
}

/* ---------------------------------------------------------------------- */
/* Every object type                                                      */
/* ---------------------------------------------------------------------- */

static uint32_t xrcd_alloc(Harness *h)
{
    uint32_t xrcdn = 0;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_ALLOC_XRCD, NULL, 0, &xrcdn, NULL),
                     ==, VHCA_ST_OK);
    return xrcdn;
}

static uint32_t srq_create(Node *n, uint8_t type, uint32_t xrcdn,
                           uint32_t cqn)
{
    struct vhca_srq_create c;
    uint32_t srqn = 0;

    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(n->pdn);
    c.db_page = GUINT32_TO_LE(n->page);
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(n->h, rdma_alloc(n->h, 1), 1,
                                        false));
    c.npages = GUINT32_TO_LE(1);
    c.log_size = 5;
    c.ci_addr = GUINT64_TO_LE(rdma_alloc(n->h, 1));
    c.limit = GUINT32_TO_LE(3);
    c.type = type;
    c.xrcdn = GUINT32_TO_LE(xrcdn);
    c.cqn = GUINT32_TO_LE(cqn);
    g_assert_cmpuint(rdma_cmd(n->h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                              &srqn, NULL), ==, VHCA_ST_OK);
    return srqn;
}

static uint32_t mw_alloc(Harness *h, uint32_t pdn, uint8_t type)
{
    struct vhca_cmd_mw_in in;
    struct vhca_cmd_obj_out out;

    memset(&in, 0, sizeof(in));
    in.pdn = GUINT32_TO_LE(pdn);
    in.type = type;
    in.key_tag = GUINT32_TO_LE(0x5a);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ALLOC_MW, 0x7000, &in, sizeof(in),
                               &out), ==, VHCA_ST_OK);
    return GUINT32_FROM_LE(out.key);
}

/*
 * Beside the node's PD, EQ, CQs, RC QP and MR: a second GID, an SRQ, an
 * XRC domain with an XRC SRQ and target QP, a UD QP in a multicast group,
 * windows of both types, a fast-register MR, congestion control on.
 */
static void add_every_type(Node *n)
{
    static const uint8_t mgid[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 1, 1,
    };
    struct vhca_cmd_mcast_in in;
    struct vhca_qp_create c;
    uint8_t gid[16];
    uint32_t xrcdn, qpn = 0;
    TestQp ud;

    gid_from_ipv4(gid, 10, 0, 1, 9);
    g_assert_cmpuint(add_gid(n->h, 1, VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
    srq_create(n, VHCA_SRQT_BASIC, 0, 0);
    xrcdn = xrcd_alloc(n->h);
    srq_create(n, VHCA_SRQT_XRC, xrcdn, n->rcq.cqn);
    memset(&c, 0, sizeof(c));
    c.type = VHCA_QPT_XRC_TGT;
    c.xrcdn = GUINT32_TO_LE(xrcdn);
    g_assert_cmpuint(rdma_cmd(n->h, VHCA_CMD_CREATE_QP, &c, sizeof(c), &qpn,
                              NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(n->h, &ud, VHCA_QPT_UD, n->pdn,
                                    n->scq.cqn, n->rcq.cqn, n->page), ==,
                     VHCA_ST_OK);
    memset(&in, 0, sizeof(in));
    in.qpn = GUINT32_TO_LE(ud.qpn);
    memcpy(in.gid, mgid, 16);
    g_assert_cmpuint(admin_cmd(n->h, VHCA_CMD_ATTACH_MCAST, 0x77, &in,
                               sizeof(in), NULL), ==, VHCA_ST_OK);
    mw_alloc(n->h, n->pdn, VHCA_MW_TYPE_1);
    mw_alloc(n->h, n->pdn, VHCA_MW_TYPE_2);
    node_fast_mr(n, 4, 0x21);
    set_cc(n->h, VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP, NULL, 0);
}

static void test_every_type(void)
{
    Node n;

    node_init(&n, 1, VHCA_QPT_RC);
    add_every_type(&n);
    /* Something in the counters and the rings' indices. */
    post_recv(&n, 0x1, 0, 64);
    migrate(n.h);
    g_assert_cmpuint(vhca_ids_next(&n.h->core.xrcd_ids, 0), !=, 0);
    g_assert_cmpuint(n.h->core.mcast[0].nqps, ==, 1);
    harness_free(n.h);
}

/* ---------------------------------------------------------------------- */
/* An RC message cut in the middle, on both sides                         */
/* ---------------------------------------------------------------------- */

static void test_rc_mid_message(void)
{
    Pair p;
    struct vhca_cqe cqe;
    const VhcaQp *qa, *qb;

    pair_init(&p, &default_opts);
    add_every_type(&p.a);
    post_recv(&p.b, 0xb1, RECV_OFF, MSG_LEN);
    fill(&p.a, 0, MSG_LEN, 7);
    post(&p.a, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, MSG_LEN, 0, 0);
    pass_left = PASS_FRAMES;
    cut_lost = 0;
    p.a.h->tx_hook = cut_hook;
    ring_sq(&p.a);
    harness_run(p.a.h);
    harness_run(p.b.h);

    /* The requester has sent more than got through, nothing acked... */
    qa = &p.a.h->core.qps[p.a.qp.qpn];
    g_assert_cmpuint(cut_lost, >, 0);
    g_assert_cmpuint(qa->req.sent_psn, !=, qa->req.una_psn);
    g_assert_cmpuint(qa->deadline, !=, VHCA_NO_DEADLINE);
    /* ... and the responder holds a SEND half placed. */
    qb = &p.b.h->core.qps[p.b.qp.qpn];
    g_assert_cmpuint(qb->resp.cur, ==, VHCA_RESP_SEND);
    g_assert_cmpuint(qb->resp.cur_len, ==, PASS_FRAMES * 1024);
    g_assert_true(qb->resp.rwqe_held);

    migrate(p.a.h);
    migrate(p.b.h);
    qa = &p.a.h->core.qps[p.a.qp.qpn];
    qb = &p.b.h->core.qps[p.b.qp.qpn];
    g_assert_cmpuint(qb->resp.cur_len, ==, PASS_FRAMES * 1024);
    g_assert_cmpuint(qa->deadline, !=, VHCA_NO_DEADLINE);

    /* The wire is back: the retransmit timer finishes the message. */
    p.a.h->tx_hook = NULL;
    harness_pair_settle(p.a.h, p.b.h, SETTLE_NS);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_SEND);
    expect_no_cqe(&p.a, &p.a.scq);
    cqe = expect_cqe(&p.b, &p.b.rcq, 0xb1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==, MSG_LEN);
    expect_same(&p.a, 0, &p.b, RECV_OFF, MSG_LEN);
    pair_free(&p);
}

/* ---------------------------------------------------------------------- */
/* Damaged streams                                                        */
/* ---------------------------------------------------------------------- */

/* Recompute the CRC of the record at @off (after a deliberate change). */
static void fix_crc(uint8_t *s, size_t off)
{
    uint32_t len = s[off + 8] | s[off + 9] << 8 | s[off + 10] << 16 |
                   (uint32_t)s[off + 11] << 24;
    uint32_t crc;

    memset(s + off + 12, 0, 4);
    crc = libdeflate_crc32(0, s + off, 16 + len);
    s[off + 12] = (uint8_t)crc;
    s[off + 13] = (uint8_t)(crc >> 8);
    s[off + 14] = (uint8_t)(crc >> 16);
    s[off + 15] = (uint8_t)(crc >> 24);
}

static uint32_t rec_len(const uint8_t *s, size_t off)
{
    return s[off + 8] | s[off + 9] << 8 | s[off + 10] << 16 |
           (uint32_t)s[off + 11] << 24;
}

/* The offset of the first record of @type, or 0. */
static size_t find_rec(const VhcaStateBuf *b, uint16_t type)
{
    size_t off = 16;

    while (off + 16 <= b->len) {
        if ((b->data[off] | b->data[off + 1] << 8) == type) {
            return off;
        }
        off += 16 + rec_len(b->data, off);
    }
    return 0;
}

typedef struct Damage {
    Harness *target;
    VhcaStateBuf ref;               /* the target's state before */
    unsigned refused;
} Damage;

/* Loading @s (@len bytes) must fail with a message naming @want. */
static void expect_refused(Damage *d, const uint8_t *s, size_t len,
                           const char *want)
{
    err[0] = 0;
    g_assert_cmpint(vhca_state_load(&d->target->core, s, len, err,
                                    sizeof(err)), ==, -1);
    g_assert_true(strncmp(err, "vhca state: ", 12) == 0);
    if (want && !strstr(err, want)) {
        g_error("expected \"%s\" in: %s", want, err);
    }
    d->refused++;
}

static void expect_target_unchanged(Damage *d)
{
    VhcaStateBuf now = save(d->target);

    expect_same_bytes(&d->ref, &now);
    vhca_state_buf_free(&now);
}

static void test_damaged(void)
{
    /* Small tables: a load is quick, and the stream short. */
    VhcaCoreConfig cfg = harness_default_cfg;
    Node src, dst;
    Damage d = { 0 };
    VhcaStateBuf b;
    uint8_t *s;
    size_t len, off;
    unsigned i;

    cfg.max_qp = 8;
    cfg.max_cq = 8;
    cfg.max_mr = 16;
    cfg.max_pd = 4;
    cfg.max_srq = 4;
    node_init_cfg(&src, 1, VHCA_QPT_RC, &cfg);
    add_every_type(&src);
    /* The target: the same device, with a state of its own. */
    node_init_cfg(&dst, 1, VHCA_QPT_UD, &cfg);
    d.target = dst.h;
    d.ref = save(dst.h);
    b = save(src.h);
    s = g_memdup2(b.data, b.len);
    len = b.len;

    /* Truncated at every length. */
    for (off = 0; off < len; off++) {
        expect_refused(&d, s, off, NULL);
    }
    expect_target_unchanged(&d);

    /* A flipped byte in each record's header, and in its payload. */
    off = 16;
    while (off < len) {
        size_t next = off + 16 + rec_len(s, off);

        for (i = 0; i < 16; i++) {
            s[off + i] ^= 0x80;
            expect_refused(&d, s, len, NULL);
            s[off + i] ^= 0x80;
        }
        if (next > off + 16) {
            s[next - 1] ^= 0x01;
            expect_refused(&d, s, len, "CRC");
            s[next - 1] ^= 0x01;
        }
        off = next;
    }
    expect_target_unchanged(&d);

    /* Trailing bytes, another format version, another record version. */
    {
        uint8_t *longer = g_malloc(len + 1);

        memcpy(longer, s, len);
        longer[len] = 0;
        expect_refused(&d, longer, len + 1, "after the end");
        g_free(longer);
    }
    s[8] = 2;
    expect_refused(&d, s, len, "format version");
    s[8] = VHCA_STATE_FORMAT_VERSION;
    off = find_rec(&b, VHCA_STATE_REC_QP);
    g_assert_cmpuint(off, !=, 0);
    s[off + 2] = 2;
    fix_crc(s, off);
    expect_refused(&d, s, len, "version 2");
    s[off + 2] = 1;

    /* An index out of range; the same QP twice. */
    s[off + 4] = 200;
    fix_crc(s, off);
    expect_refused(&d, s, len, "out of range");
    s[off + 4] = (uint8_t)src.qp.qpn;
    fix_crc(s, off);

    /* A QP state no command leaves. */
    s[off + 16 + 1] = 9;
    fix_crc(s, off);
    expect_refused(&d, s, len, "state 9");
    s[off + 16 + 1] = VHCA_QPS_RESET;
    fix_crc(s, off);

    /* A CQ moved to another handle: the QPs name one that is not there. */
    off = find_rec(&b, VHCA_STATE_REC_CQ);
    g_assert_cmpuint(off, !=, 0);
    s[off + 4] = 7;
    fix_crc(s, off);
    expect_refused(&d, s, len, "does not exist");
    memcpy(s, b.data, len);

    /* The intact stream loads (so every refusal above was the damage). */
    expect_target_unchanged(&d);
    g_assert_cmpint(vhca_state_load(&dst.h->core, s, len, err, sizeof(err)),
                    ==, 0);
    {
        VhcaStateBuf again = save(dst.h);

        expect_same_bytes(&b, &again);
        vhca_state_buf_free(&again);
    }
    g_assert_cmpuint(d.refused, >, len);

    g_free(s);
    vhca_state_buf_free(&b);
    vhca_state_buf_free(&d.ref);
    harness_free(src.h);
    harness_free(dst.h);
}

/* Another device config is refused by name. */
static void test_other_config(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    Node a, b;
    VhcaStateBuf s;

    node_init(&a, 1, VHCA_QPT_RC);
    cfg.max_qp = 64;
    node_init_cfg(&b, 1, VHCA_QPT_RC, &cfg);
    s = save(a.h);
    g_assert_cmpint(vhca_state_load(&b.h->core, s.data, s.len, err,
                                    sizeof(err)), ==, -1);
    g_assert_nonnull(strstr(err, "configured otherwise"));
    vhca_state_buf_free(&s);
    harness_free(a.h);
    harness_free(b.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/state/tables", test_tables);
    g_test_add_func("/vhca/state/every-type", test_every_type);
    g_test_add_func("/vhca/state/rc-mid-message", test_rc_mid_message);
    g_test_add_func("/vhca/state/damaged", test_damaged);
    g_test_add_func("/vhca/state/other-config", test_other_config);
    return g_test_run();
}
