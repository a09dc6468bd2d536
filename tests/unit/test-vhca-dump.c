/*
 * vhca engine unit tests: vhca_core_dump(), the text x-query-vhca and
 * "info vhca" show (docs/user-guide.rst, "Looking inside the device"):
 * one line per object, what each line says, and errors on QPs and CQs.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdio.h>
#include <string.h>

#include "vhca-node.h"
#include "vhca-rdma.h"

static void collect_line(void *opaque, const char *line)
{
    g_ptr_array_add(opaque, g_strdup(line));
}

static GPtrArray *dump(Harness *h)
{
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);

    vhca_core_dump(&h->core, collect_line, lines);
    for (guint i = 0; i < lines->len; i++) {
        g_test_message("%s", (const char *)lines->pdata[i]);
    }
    return lines;
}

/* The one line that starts with @prefix; fails if none or several do. */
static const char *line_at(GPtrArray *lines, const char *prefix,
                           const char *where)
{
    const char *found = NULL;

    for (guint i = 0; i < lines->len; i++) {
        const char *l = lines->pdata[i];

        if (g_str_has_prefix(l, prefix)) {
            if (found) {
                g_error("%s: two lines start with \"%s\"", where, prefix);
            }
            found = l;
        }
    }
    if (!found) {
        g_error("%s: no line starts with \"%s\"", where, prefix);
    }
    return found;
}
#define line(lines, prefix) line_at(lines, prefix, G_STRLOC)

static bool has_line_starting(GPtrArray *lines, const char *prefix)
{
    for (guint i = 0; i < lines->len; i++) {
        if (g_str_has_prefix(lines->pdata[i], prefix)) {
            return true;
        }
    }
    return false;
}

/*
 * The line for the object @expected names (its first two words, "qp 2",
 * "counter sent_pkts") is exactly @expected.
 */
static void G_GNUC_PRINTF(3, 4) assert_line_at(GPtrArray *lines,
                                               const char *where,
                                               const char *fmt, ...)
{
    g_autofree char *expected = NULL;
    g_autofree char *prefix = NULL;
    const char *space;
    va_list ap;

    va_start(ap, fmt);
    expected = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    space = strchr(expected, ' ');
    space = space ? strchr(space + 1, ' ') : NULL;
    prefix = space ? g_strndup(expected, space + 1 - expected)
                   : g_strdup(expected);
    if (strcmp(line_at(lines, prefix, where), expected)) {
        g_error("%s: line \"%s\", expected \"%s\"", where,
                line_at(lines, prefix, where), expected);
    }
}
#define assert_line(lines, ...) assert_line_at(lines, G_STRLOC, __VA_ARGS__)

/* A device the driver has not enabled: its state and port only. */
static void test_dump_idle(void)
{
    Harness *h = harness_new(NULL);
    g_autoptr(GPtrArray) lines = NULL;

    vhca_core_set_link(&h->core, false);
    lines = dump(h);
    g_assert_cmpuint(lines->len, ==, 2);
    g_assert_cmpstr(lines->pdata[0], ==, "device disabled");
    /* MTU 1500 carries RoCE packets of 1024 bytes (IBTA MTUs). */
    g_assert_cmpstr(lines->pdata[1], ==, "port mac 52:54:00:12:34:56 "
                    "link down mtu 1500 active-mtu 1024");
    harness_free(h);
}

/*
 * A node (PD, MR, EQ, two CQs, an RC QP) with the QP in RTS, receive
 * WQEs posted and two sends on the wire, unacknowledged: one line each.
 */
static void test_dump_objects(void)
{
    Node n;
    g_autoptr(GPtrArray) lines = NULL;

    node_init(&n, 1, VHCA_QPT_RC);
    /* qp_good_attr: dest QP 0x123, rq_psn 0x1000, sq_psn 0x2000, 7/7. */
    {
        /* A GID of a VLAN interface shows its VLAN. */
        struct vhca_cmd_gid_in in = {
            .index = GUINT16_TO_LE(1),
            .port = 1,
            .type = VHCA_GID_TYPE_ROCE_V2_IPV4,
            .vlan = GUINT16_TO_LE(VHCA_GID_VLAN_TAGGED | 100),
        };

        gid_from_ipv4(in.gid, 10, 0, 100, 1);
        g_assert_cmpuint(admin_cmd(n.h, VHCA_CMD_ADD_GID, 0x6101, &in,
                                   sizeof(in), NULL), ==, VHCA_ST_OK);
    }
    qp_move_to(n.h, n.qp.qpn, VHCA_QPT_RC, VHCA_QPS_RTS);
    post_recv(&n, 0xb1, 0, 64);
    post_recv(&n, 0xb2, 64, 64);
    post_recv(&n, 0xb3, 128, 64);
    post(&n, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 16, 0, 0);
    post(&n, 0xa2, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 16, 16, 0, 0);
    ring_sq(&n);
    harness_run(n.h);
    /* Nobody answers: both stay outstanding, the retransmit timer runs. */
    g_assert_cmpuint(n.h->nframes, ==, 2);

    lines = dump(n.h);
    g_assert_cmpstr(lines->pdata[0], ==, "device enabled");
    assert_line(lines, "port mac 52:54:00:12:34:51 link up mtu 1500 "
                "active-mtu 1024");
    assert_line(lines, "gid 0 10.0.0.1 type RoCEv2-IPv4");
    assert_line(lines, "gid 1 10.0.100.1 type RoCEv2-IPv4 vlan 100");

    /*
     * Non-zero counters only, by the names the guest's hw_counters use:
     * three RQ and one SQ doorbell; the harness leaves the CMD_DONE
     * events of its 8-entry AEQ unread.
     */
    assert_line(lines, "counter doorbells 4");
    line(lines, "counter admin_commands ");
    line(lines, "counter eq_overflows ");
    g_assert_false(has_line_starting(lines, "counter rcvd_pkts "));
    g_assert_false(has_line_starting(lines, "counter admin_errors "));

    assert_line(lines, "qp %u type RC state RTS pdn %u scqn %u rcqn %u "
                "dqpn 291 sq 2/%u sq-pi 2 rq 3/%u rq-pi 3 sq-psn 0x002002 "
                "una-psn 0x002000 rq-psn 0x001000 retry 7/7 rnr-retry 7/7 "
                "window 256/256 ack-timer 67108us timer-armed", n.qp.qpn,
                n.pdn, n.scq.cqn, n.rcq.cqn,
                1u << n.qp.sq_log, 1u << n.qp.rq_log);
    /* A CQE is written only when a WQE completes: none yet. */
    assert_line(lines, "cq %u size 256 pi 0 ci 0 eqn %u armed no users 1",
                n.scq.cqn, n.eqn);
    assert_line(lines, "cq %u size 256 pi 0 ci 0 eqn %u armed no users 1",
                n.rcq.cqn, n.eqn);
    assert_line(lines, "eq %u size 64 pi 0 ci 0 vector 2 armed yes cqs 2",
                n.eqn);
    /* The full AEQ: eight events unread, the others lost. */
    assert_line(lines, "eq 0 size 8 pi 8 ci 0 vector 0 armed no async "
                "overflow");
    assert_line(lines, "mr %u key 0x%x pdn %u iova 0x%" G_GINT64_MODIFIER
                "x length %u access local-write|remote-write|remote-read|"
                "remote-atomic phys", n.key >> 8, n.key, n.pdn, n.buf,
                DATA_PAGES * 4096);
    /* The MR and the QP are in it. */
    assert_line(lines, "pd %u users 2", n.pdn);
    harness_free(n.h);
}

/*
 * An SRQ: one line with its PD, size, indices, limit and users; the QP
 * that receives from it names it instead of an RQ.
 */
static void test_dump_srq(void)
{
    struct vhca_srq_create c;
    struct vhca_qp_create q;
    g_autoptr(GPtrArray) lines = NULL;
    g_autoptr(GPtrArray) after = NULL;
    uint64_t ring, sq;
    uint32_t srqn, qpn;
    char prefix[32];
    Node n;

    node_init(&n, 1, VHCA_QPT_RC);
    ring = rdma_alloc(n.h, 1);
    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(n.pdn);
    c.db_page = GUINT32_TO_LE(n.page);
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(n.h, ring, 1, false));
    c.npages = GUINT32_TO_LE(1);
    c.log_size = 4;
    c.ci_addr = GUINT64_TO_LE(rdma_alloc(n.h, 1));
    c.limit = GUINT32_TO_LE(3);
    g_assert_cmpuint(rdma_cmd(n.h, VHCA_CMD_CREATE_SRQ, &c, sizeof(c), &srqn,
                              NULL), ==, VHCA_ST_OK);
    sq = rdma_alloc(n.h, 2);
    memset(&q, 0, sizeof(q));
    q.type = VHCA_QPT_UD;
    q.sq_log_size = 5;
    q.pdn = GUINT32_TO_LE(n.pdn);
    q.send_cqn = GUINT32_TO_LE(n.scq.cqn);
    q.recv_cqn = GUINT32_TO_LE(n.rcq.cqn);
    q.sq_pbl_addr = GUINT64_TO_LE(rdma_pbl(n.h, sq, 2, true));
    q.sq_npages = GUINT32_TO_LE(2);
    q.db_page = GUINT32_TO_LE(n.page);
    q.srqn = GUINT32_TO_LE(srqn);
    g_assert_cmpuint(rdma_cmd(n.h, VHCA_CMD_CREATE_QP, &q, sizeof(q), &qpn,
                              NULL), ==, VHCA_ST_OK);
    ring_doorbell(n.h, n.page, VHCA_DB_SRQ, srqn, 2);

    lines = dump(n.h);
    assert_line(lines, "srq %u pdn %u size 16 pi 2 ci 0 limit 3 users 1",
                srqn, n.pdn);
    snprintf(prefix, sizeof(prefix), "qp %u ", qpn);
    g_assert_nonnull(strstr(line(lines, prefix), " srqn 1 "));
    g_assert_null(strstr(line(lines, prefix), " rq "));
    /* The SRQ and the QPs and MR are in the PD. */
    assert_line(lines, "pd %u users 4", n.pdn);

    n.h->core.srqs[srqn].error = true;
    after = dump(n.h);
    assert_line(after, "srq %u pdn %u size 16 pi 2 ci 0 limit 3 users 1 "
                "error", srqn, n.pdn);
    harness_free(n.h);
}

/* Retries run out: the QP line says ERR and why. */
static void test_dump_qp_error(void)
{
    Node n;
    g_autoptr(GPtrArray) lines = NULL;
    g_autoptr(GPtrArray) after_reset = NULL;
    g_autoptr(GPtrArray) backed_off = NULL;
    struct vhca_qp_attr a;
    unsigned i;

    node_init(&n, 1, VHCA_QPT_RC);
    qp_move_to(n.h, n.qp.qpn, VHCA_QPT_RC, VHCA_QPS_RTS);
    post(&n, 0xa1, VHCA_WR_SEND, VHCA_WQE_SIGNALED, 0, 16, 0, 0);
    ring_sq(&n);
    harness_run(n.h);
    /*
     * The first timeout (67 ms, timeout 14): the window is one packet,
     * the timer doubled (vhca-req.c, "Window and timer back-off").
     */
    harness_advance(n.h, 100 * 1000 * 1000);
    harness_run(n.h);
    backed_off = dump(n.h);
    g_assert_nonnull(strstr(line(backed_off, "qp "), " retry 6/7 rnr-retry "
                            "7/7 window 1/256 ack-timer 134217us backoff 1 "));
    assert_line(backed_off, "counter req_window_cuts 1");
    assert_line(backed_off, "counter req_timer_backoffs 1");
    /*
     * Six more retries, the timer 4T from the second on (268 ms), then
     * RETRY_EXC_ERR.
     */
    for (i = 0; i < 40 && qp_state(n.h, n.qp.qpn) != VHCA_QPS_ERR; i++) {
        harness_advance(n.h, 100 * 1000 * 1000);
        harness_run(n.h);
    }
    expect_cqe(&n, &n.scq, 0xa1, VHCA_WC_RETRY_EXC_ERR, VHCA_WC_SEND);

    lines = dump(n.h);
    g_assert_nonnull(strstr(line(lines, "qp "), " state ERR "));
    g_assert_true(g_str_has_suffix(line(lines, "qp "),
                                   " error RETRY_EXC_ERR vendor-err 0x0"));

    /* RESET: the QP starts over, the old failure is gone. */
    qp_good_attr(&a, n.qp.qpn);
    qp_modify_ok(n.h, &a, VHCA_QPS_RESET, 0);
    after_reset = dump(n.h);
    g_assert_null(strstr(line(after_reset, "qp "), "error"));
    harness_free(n.h);
}

/* A switch on the wire from a: every frame leaves marked CE. */
static void mark_ce(Harness *h, const uint8_t *buf, size_t len)
{
    uint8_t frame[VHCA_ETH_MAX_FRAME];

    memcpy(frame, buf, len);
    frame[14 + 1] |= VHCA_ECN_CE;
    roce_frame_fix_crcs(frame, len);
    harness_deliver(h->peer, frame, len);
}

/*
 * A QP whose DCQCN reaction point took a CNP shows its stage, rate,
 * target, alpha and CNPs; one that never took one shows nothing of it.
 */
static void test_dump_dcqcn(void)
{
    static const CcParam first = {
        VHCA_CC_PARAM_RP_RATE_TO_SET_ON_FIRST_CNP, 1000,    /* Mbit/s */
    };
    const uint32_t all = VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP;
    g_autoptr(GPtrArray) before = NULL;
    g_autoptr(GPtrArray) after = NULL;
    g_autoptr(GPtrArray) peer = NULL;
    Pair p;

    pair_init(&p, &default_opts);
    set_cc(p.a.h, all, &first, 1);
    set_cc(p.b.h, all, &first, 1);
    p.a.h->tx_hook = mark_ce;
    before = dump(p.a.h);
    g_assert_null(strstr(line(before, "qp "), "dcqcn"));

    post(&p.a, 0xa1, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED, 0, 64,
         p.b.buf, p.b.key);
    ring_sq(&p.a);
    harness_pair_settle(p.a.h, p.b.h, SETTLE_NS);
    expect_cqe(&p.a, &p.a.scq, 0xa1, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE);
    after = dump(p.a.h);
    g_assert_true(g_str_has_suffix(line(after, "qp "),
                                   " dcqcn fast-recovery rate-kbps 1000000"
                                   " target-kbps 1000000 alpha 1023"
                                   " cnps 1"));
    /* b sent the CNP; its own rate was never cut. */
    peer = dump(p.b.h);
    g_assert_null(strstr(line(peer, "qp "), "dcqcn"));
    pair_free(&p);
}

/*
 * A CQ overflows: it is in error, and a QP in RTS that uses it goes to
 * ERR on its own with QP_FATAL.  The QP whose flush overflowed it was
 * moved to ERR by the driver, so no failure is shown for it.
 */
static void test_dump_cq_error(void)
{
    Node n;
    TestCq small;
    TestQp victim;
    g_autoptr(GPtrArray) lines = NULL;
    struct vhca_qp_attr a;
    char prefix[32];

    node_init(&n, 1, VHCA_QPT_UD);
    g_assert_cmpuint(rdma_create_cq(n.h, &small, 1, n.eqn, n.page), ==,
                     VHCA_ST_OK);
    /* The node's QP is recreated on the small CQ. */
    g_assert_cmpuint(rdma_destroy(n.h, VHCA_CMD_DESTROY_QP, n.qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(n.h, &n.qp, VHCA_QPT_UD, n.pdn,
                                    small.cqn, small.cqn, n.page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(n.h, &victim, VHCA_QPT_UD, n.pdn,
                                    small.cqn, small.cqn, n.page), ==,
                     VHCA_ST_OK);
    qp_move_to(n.h, n.qp.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    qp_move_to(n.h, victim.qpn, VHCA_QPT_UD, VHCA_QPS_RTS);
    for (unsigned i = 0; i < 4; i++) {
        post_recv(&n, 0xb0 + i, 64 * i, 64);
    }
    qp_good_attr(&a, n.qp.qpn);
    qp_modify_ok(n.h, &a, VHCA_QPS_ERR, 0);

    lines = dump(n.h);
    snprintf(prefix, sizeof(prefix), "cq %u ", small.cqn);
    g_assert_true(g_str_has_suffix(line(lines, prefix), " error overflow"));
    snprintf(prefix, sizeof(prefix), "qp %u ", victim.qpn);
    g_assert_true(g_str_has_suffix(line(lines, prefix), " error QP_FATAL"));
    g_assert_nonnull(strstr(line(lines, prefix), " state ERR "));
    snprintf(prefix, sizeof(prefix), "qp %u ", n.qp.qpn);
    g_assert_null(strstr(line(lines, prefix), "error"));
    harness_free(n.h);
}

/* Objects come in handle order, and a freed handle is not listed. */
static void test_dump_many(void)
{
    Harness *h = harness_new(NULL);
    g_autoptr(GPtrArray) lines = NULL;
    uint32_t pdn[4];
    guint first_pd = 0;

    harness_enable(h);
    for (unsigned i = 0; i < 4; i++) {
        pdn[i] = rdma_create_pd(h);
    }
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, pdn[1]), ==,
                     VHCA_ST_OK);
    lines = dump(h);
    while (first_pd < lines->len &&
           !g_str_has_prefix(lines->pdata[first_pd], "pd ")) {
        first_pd++;
    }
    g_assert_cmpuint(first_pd + 3, ==, lines->len);
    g_assert_cmpstr(lines->pdata[first_pd], ==, "pd 1 users 0");
    g_assert_cmpstr(lines->pdata[first_pd + 1], ==, "pd 3 users 0");
    g_assert_cmpstr(lines->pdata[first_pd + 2], ==, "pd 4 users 0");
    harness_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/dump/idle", test_dump_idle);
    g_test_add_func("/vhca/dump/objects", test_dump_objects);
    g_test_add_func("/vhca/dump/qp-error", test_dump_qp_error);
    g_test_add_func("/vhca/dump/cq-error", test_dump_cq_error);
    g_test_add_func("/vhca/dump/many", test_dump_many);
    g_test_add_func("/vhca/dump/srq", test_dump_srq);
    g_test_add_func("/vhca/dump/dcqcn", test_dump_dcqcn);
    return g_test_run();
}
