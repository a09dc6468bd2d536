/*
 * The vhca device's speed inside QEMU: one QEMU, one vhca function, two
 * RC QPs of that function connected to each other, so every frame goes
 * through the device's own loopback (hw/vhca/engine/vhca-tx.c) and QEMU's DMA
 * into guest RAM, but no socket and no guest.  RC WRITE, READ or SEND of
 * one message size at one path MTU, in GB/s and messages/s.  The
 * device-level half of docs/benchmarks.rst ("Device"), beside the
 * engine-only tests/unit/bench-vhca-engine.c, whose options and output
 * lines this program follows; scripts/bench_engine.sh runs both.
 *
 *   vhca-bench-loopback [--op write|read|send|all] [--size BYTES]
 *                       [--mtu 256..4096] [--seconds S]
 *
 * Needs QTEST_QEMU_BINARY.  A benchmark that prints figures, built with
 * the qtests so it keeps compiling but not registered as a test.
 *
 * What is measured is the device, not libqtest's memory protocol (one
 * socket round trip per access, which QEMU's main loop serves between
 * the device's bottom halves).  Guest RAM is shared with this process
 * (vhca_test_start_shared_ram()), so the program polls CQEs and writes
 * the CQ doorbell records in RAM, as a driver does, at no cost to QEMU;
 * only doorbells go over the socket.  The send queue is written once, and
 * since the device never modifies a WQE, each batch is re-posted by
 * ringing the SQ doorbell with the producer index one batch further
 * (free running, docs/specs/vhca.rst "Doorbell pages").  Only the last
 * WQE of a batch is SIGNALED; RC completes WQEs in order (IBTA 9.9.2), so
 * its CQE says the whole batch is done, and an error on an earlier WQE
 * would leave the QP in error and this CQE flushed.  BENCH_INFLIGHT
 * batches are posted at a time, so the device has work while the program
 * polls the oldest batch's CQE.
 *
 * The device's engine runs in a bottom half (hw/vhca/vhca.c work_bh),
 * which QEMU's main loop runs between qtest commands: the program never
 * steps the virtual clock.  With no loss no timer is needed; a wait that
 * outlives BENCH_WAIT_S of wall time (a lost frame would wait on the
 * retransmit timer, which the standing virtual clock never fires) ends
 * the program with one line saying what was missing.  Time is the wall
 * clock: the work happens in the QEMU process, not in this one.
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-frame.h"

/* WQEs per doorbell; the last one of each is signaled. */
#define BENCH_BATCH         256
/* Batches posted at a time: the send and receive rings hold them all. */
#define BENCH_INFLIGHT      4
#define BENCH_RING_LOG      10          /* BENCH_BATCH * BENCH_INFLIGHT */
#define BENCH_CQ_LOG        12
/* Messages rotate over this many slots of the source and sink buffers. */
#define BENCH_SLOTS         4
#define BENCH_MAX_SIZE      65536u
#define BENCH_WAIT_S        5
#define BENCH_WARMUP        8           /* batches before the clock starts */

#define BENCH_IP            ((const uint8_t[4]){ 192, 0, 2, 1 })
#define BENCH_PSN_A         0xfffff0u   /* wraps 2^24 early on */
#define BENCH_PSN_B         0x123456u

typedef struct BenchCase {
    const char *name;
    uint8_t opcode;             /* enum vhca_wqe_opcode */
    uint8_t wc_opcode;          /* its CQE's opcode */
} BenchCase;

static const BenchCase bench_cases[] = {
    { "write", VHCA_WR_RDMA_WRITE, VHCA_WC_RDMA_WRITE },
    { "read", VHCA_WR_RDMA_READ, VHCA_WC_RDMA_READ },
    { "send", VHCA_WR_SEND, VHCA_WC_SEND },
};

typedef struct BenchOpts {
    uint32_t size;
    uint32_t mtu;
    double seconds;
} BenchOpts;

typedef struct Bench {
    const BenchCase *c;
    const BenchOpts *o;
    VhcaTestDev *d;
    struct vhca_device_attr dev;
    uint8_t gid[16];
    uint32_t page, pdn;
    VhcaEq eq;
    VhcaCq scq, rcq;
    VhcaQp req, resp;           /* the requester posts, resp answers */
    uint32_t stride;            /* bytes between message slots */
    uint64_t src, dst;          /* BENCH_SLOTS slots each */
    uint32_t src_key, dst_key;
    uint32_t posted, reaped;    /* batches */
} Bench;

/* What the program is doing, for the one line a failure prints. */
static Bench *bench_current;

static void G_GNUC_PRINTF(1, 2) G_GNUC_NORETURN bench_fail(const char *fmt,
                                                           ...)
{
    Bench *b = bench_current;
    va_list ap;

    fprintf(stderr, "qtest-loopback rc %s %u B mtu %u: ", b->c->name,
            b->o->size, b->o->mtu);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    qtest_quit(b->d->qts);
    exit(1);
}

static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)(i * 131 + (i >> 9) * 7 + 1);
}

static uint32_t bench_mr(Bench *b, uint64_t addr, uint64_t len,
                         uint32_t access, uint8_t key_tag)
{
    struct vhca_mr_create c;
    uint32_t key;

    vhca_mr_prepare_phys(&c, b->pdn, access, addr, len, key_tag);
    g_assert_cmpuint(vhca_cmd_create_mr(b->d, &c, NULL, &key), ==,
                     VHCA_ST_OK);
    return key;
}

/* @qp's end of the loop: its peer is @peer, on the same GID and MAC. */
static void bench_to_rts(Bench *b, VhcaQp *qp, const VhcaQp *peer,
                         uint32_t sq_psn, uint32_t rq_psn)
{
    VhcaRcPath p = {
        .dgid = b->gid,
        .dmac = vhca_test_mac,
        .dest_qpn = peer->qpn,
        .sq_psn = sq_psn,
        .rq_psn = rq_psn,
        .path_mtu = vhca_ib_mtu_from_bytes(b->o->mtu),
        .timeout = 14,
        .retry_cnt = 7,
        .rnr_retry = 7,
        .min_rnr_timer = 1,
        .access = VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ,
        .max_rd_atomic = b->dev.max_qp_init_rd_atom,
        .max_dest_rd_atomic = b->dev.max_qp_rd_atom,
    };

    vhca_qp_to_rts(b->d, qp->qpn, &p);
}

/*
 * One function with an IPv4 GID, jumbo frames (path MTU 4096 needs an
 * Ethernet MTU above 4096 plus headers), a user context, a PD, a
 * completion EQ, send and receive CQs, a source and a sink buffer with
 * their MRs, and two RC QPs connected to each other, at RTS.
 */
static void bench_up(Bench *b)
{
    size_t len;

    b->d = vhca_test_start_shared_ram(true, NULL);
    vhca_admin_setup(b->d, 8, 10);
    b->d->stash_events = true;
    vhca_gid_from_ipv4(b->gid, BENCH_IP);
    g_assert_cmpuint(vhca_cmd_add_gid(b->d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      b->gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_set_mtu(b->d, 9000), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_query_device(b->d, &b->dev), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(b->d, &b->page), ==, VHCA_ST_OK);
    b->pdn = vhca_pd_make(b->d);
    vhca_eq_make(b->d, &b->eq, 6, VHCA_VECTOR_FIRST_COMP);
    vhca_cq_make(b->d, &b->scq, BENCH_CQ_LOG, b->eq.eqn, b->page);
    vhca_cq_make(b->d, &b->rcq, BENCH_CQ_LOG, b->eq.eqn, b->page);

    b->stride = MAX(b->o->size, VHCA_TEST_PAGE_SIZE);
    len = (size_t)b->stride * BENCH_SLOTS;
    b->src = guest_alloc(&b->d->alloc, len);
    b->dst = guest_alloc(&b->d->alloc, len);
    {
        g_autofree uint8_t *data = g_malloc(len);

        for (size_t i = 0; i < len; i++) {
            data[i] = pattern_byte(i);
        }
        qtest_memwrite(b->d->qts, b->src, data, len);
    }
    qtest_memset(b->d->qts, b->dst, 0, len);
    /* The source is read remotely by READ; the sink written by WRITE. */
    b->src_key = bench_mr(b, b->src, len, VHCA_ACCESS_REMOTE_READ, 0x40);
    b->dst_key = bench_mr(b, b->dst, len, VHCA_ACCESS_LOCAL_WRITE |
                          VHCA_ACCESS_REMOTE_WRITE, 0x41);

    vhca_qp_make(b->d, &b->req, VHCA_QPT_RC, b->pdn, b->scq.cqn, b->rcq.cqn,
                 BENCH_RING_LOG, BENCH_RING_LOG, b->page);
    vhca_qp_make(b->d, &b->resp, VHCA_QPT_RC, b->pdn, b->scq.cqn, b->rcq.cqn,
                 BENCH_RING_LOG, BENCH_RING_LOG, b->page);
    bench_to_rts(b, &b->req, &b->resp, BENCH_PSN_A, BENCH_PSN_B);
    bench_to_rts(b, &b->resp, &b->req, BENCH_PSN_B, BENCH_PSN_A);
}

/*
 * Write every slot of the send ring once (and for SEND the receive ring):
 * slot i carries message slot i % BENCH_SLOTS, wr_id i, and is SIGNALED
 * if it ends a batch.  The rings are never written again.
 */
static void bench_fill_rings(Bench *b)
{
    unsigned ring = 1u << BENCH_RING_LOG;
    struct vhca_send_wqe w;

    for (unsigned i = 0; i < ring; i++) {
        uint64_t off = (uint64_t)(i % BENCH_SLOTS) * b->stride;
        bool last = (i + 1) % BENCH_BATCH == 0;

        vhca_wqe_init(&w, i, b->c->opcode, last ? VHCA_WQE_SIGNALED : 0);
        switch (b->c->opcode) {
        case VHCA_WR_RDMA_WRITE:
            vhca_wqe_sge(&w, b->src + off, b->o->size, b->src_key);
            vhca_wqe_remote(&w, b->dst + off, b->dst_key);
            break;
        case VHCA_WR_RDMA_READ:
            vhca_wqe_sge(&w, b->dst + off, b->o->size, b->dst_key);
            vhca_wqe_remote(&w, b->src + off, b->src_key);
            break;
        default:
            vhca_wqe_sge(&w, b->src + off, b->o->size, b->src_key);
            vhca_qp_write_recv_sge(b->d, &b->resp, i, b->dst + off,
                                   b->o->size, b->dst_key);
            break;
        }
        vhca_qp_write_send_wqe(b->d, &b->req, &w);
    }
}

/* Post the next batch: one doorbell per ring (RQ first for SEND). */
static void bench_post(Bench *b)
{
    uint32_t pi = (b->posted + 1) * BENCH_BATCH;

    if (b->c->opcode == VHCA_WR_SEND) {
        vhca_db_write(b->d, b->page, VHCA_DB_RQ, b->resp.qpn, pi);
    }
    vhca_db_write(b->d, b->page, VHCA_DB_SQ, b->req.qpn, pi);
    b->posted++;
}

/* Poll @cq's entry @ci until it is written, within BENCH_WAIT_S. */
static void bench_wait_cqe(Bench *b, VhcaCq *cq, const char *what,
                           struct vhca_cqe *cqe)
{
    gint64 deadline = g_get_monotonic_time() +
                      BENCH_WAIT_S * G_TIME_SPAN_SECOND;

    while (!vhca_cq_peek(b->d, cq, cqe)) {
        if (g_get_monotonic_time() > deadline) {
            bench_fail("no %s completion for batch %u within %d s (%" PRIu64
                       " frames dropped)", what, b->reaped, BENCH_WAIT_S,
                       vhca_counter(b->d, VHCA_CNT_ROCE_RX_DROPPED));
        }
    }
}

/* Reap the oldest batch: its signaled send CQE (and its receive CQEs). */
static void bench_reap(Bench *b)
{
    uint32_t last = (b->reaped * BENCH_BATCH + BENCH_BATCH - 1) &
                    ((1u << BENCH_RING_LOG) - 1);
    struct vhca_cqe cqe;

    if (b->c->opcode == VHCA_WR_SEND) {
        /*
         * Every receive completes; the batch's last one stands for all
         * (in order, and an error would flush those after it).
         */
        b->rcq.ci += BENCH_BATCH - 1;
        bench_wait_cqe(b, &b->rcq, "receive", &cqe);
        if (cqe.status != VHCA_WC_SUCCESS || cqe.opcode != VHCA_WC_RECV ||
            cqe.wr_id != last || cqe.byte_len != b->o->size) {
            bench_fail("receive completion: status %u opcode %u wr_id %"
                       PRIu64 " byte_len %u, expected status 0 opcode %u "
                       "wr_id %u byte_len %u", cqe.status, cqe.opcode,
                       cqe.wr_id, cqe.byte_len, VHCA_WC_RECV, last,
                       b->o->size);
        }
        b->rcq.ci++;
        vhca_cq_update_dbrec(b->d, &b->rcq);
    }
    bench_wait_cqe(b, &b->scq, "send", &cqe);
    if (cqe.status != VHCA_WC_SUCCESS || cqe.opcode != b->c->wc_opcode ||
        cqe.wr_id != last || cqe.qpn != b->req.qpn) {
        bench_fail("completion: status %u opcode %u wr_id %" PRIu64
                   " qpn %u, expected status 0 opcode %u wr_id %u qpn %u",
                   cqe.status, cqe.opcode, cqe.wr_id, cqe.qpn,
                   b->c->wc_opcode, last, b->req.qpn);
    }
    b->scq.ci++;
    vhca_cq_update_dbrec(b->d, &b->scq);
    b->reaped++;
}

/* The data really moved: message slot 1 of the sink is the source's. */
static void bench_check_data(Bench *b)
{
    uint64_t off = b->stride;
    g_autofree uint8_t *got = g_malloc(b->o->size);

    qtest_memread(b->d->qts, b->dst + off, got, b->o->size);
    for (size_t i = 0; i < b->o->size; i++) {
        if (got[i] != pattern_byte(off + i)) {
            bench_fail("byte %zu of the last message in slot 1 is 0x%02x, "
                       "expected 0x%02x", i, got[i], pattern_byte(off + i));
        }
    }
}

static void bench_run(const BenchCase *c, const BenchOpts *o)
{
    Bench b = { .c = c, .o = o };
    uint64_t messages = 0, drops;
    gint64 start, elapsed;

    bench_current = &b;
    bench_up(&b);
    bench_fill_rings(&b);
    while (b.posted < BENCH_INFLIGHT) {
        bench_post(&b);
    }
    /* Warm up: the first PSNs, QEMU's memory map caches, the heap. */
    while (b.reaped < BENCH_WARMUP) {
        bench_reap(&b);
        bench_post(&b);
    }
    start = g_get_monotonic_time();
    do {
        for (unsigned i = 0; i < 16; i++) {
            bench_reap(&b);
            bench_post(&b);
            messages += BENCH_BATCH;
        }
        elapsed = g_get_monotonic_time() - start;
    } while (elapsed < o->seconds * G_TIME_SPAN_SECOND);
    while (b.reaped < b.posted) {
        bench_reap(&b);
    }
    bench_check_data(&b);
    drops = vhca_counter(b.d, VHCA_CNT_ROCE_RX_DROPPED);
    printf("qtest-loopback %-5s %6u B  mtu %4u  max-qp %5u  %7.3f GB/s"
           "  %9.0f msg/s  drops %" PRIu64 "\n", c->name, o->size, o->mtu,
           b.dev.max_qp,
           (double)messages * o->size / elapsed * 1e6 / 1e9,
           (double)messages / elapsed * 1e6, drops);
    fflush(stdout);
    vhca_test_stop(b.d);
    bench_current = NULL;
}

static int bench_usage(void)
{
    fprintf(stderr, "usage: vhca-bench-loopback [--op write|read|send|all] "
            "[--size BYTES] [--mtu 256..4096] [--seconds S]\n"
            "  QTEST_QEMU_BINARY names the QEMU to run\n");
    return 2;
}

int main(int argc, char **argv)
{
    BenchOpts o = { .size = 65536, .mtu = 4096, .seconds = 1.0 };
    const char *op = "all";
    bool ran = false;
    int i;

    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--op")) {
            op = argv[i + 1];
        } else if (!strcmp(argv[i], "--size")) {
            o.size = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "--mtu")) {
            o.mtu = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "--seconds")) {
            o.seconds = strtod(argv[i + 1], NULL);
        } else {
            return bench_usage();
        }
    }
    if (i != argc || !vhca_ib_mtu_from_bytes(o.mtu) || !o.size ||
        o.size > BENCH_MAX_SIZE || !(o.seconds > 0) ||
        !getenv("QTEST_QEMU_BINARY")) {
        return bench_usage();
    }
    for (unsigned k = 0; k < G_N_ELEMENTS(bench_cases); k++) {
        if (!strcmp(op, "all") || !strcmp(op, bench_cases[k].name)) {
            bench_run(&bench_cases[k], &o);
            ran = true;
        }
    }
    return ran ? 0 : bench_usage();
}
