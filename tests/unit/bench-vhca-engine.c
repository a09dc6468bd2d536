/*
 * The vhca engine's own speed: two engines back to back through the unit
 * harness (no QEMU, no sockets), RC WRITE, READ and SEND of one message
 * size at one path MTU, in GB/s and messages/s.  A benchmark that prints
 * figures, not a test: scripts/bench_engine.sh runs it over the cases of
 * docs/benchmarks.rst ("Engine").  Each case runs in a child process of
 * its own, so one case's heap does not shape the next one's.
 *
 *   bench-vhca-engine [--op write|read|send|all] [--size BYTES]
 *                     [--mtu 256..4096] [--seconds S] [--max-qp N]
 *                     [--qps N] [--state]
 *
 * With --qps N, N QP pairs of their own carry the traffic: each batch
 * is BENCH_BATCH WRITEs on each QP with one doorbell per QP, as the
 * single-QP case posts on its one QP.  So each QP carries the same
 * stream whatever N, and --qps 1 against --qps 1000 says what the passes
 * lose when 1000 QPs have work at once (issue 12's scale goal: at least
 * 80%).
 *
 * With --qps N --state, instead of a stream: one batch posted on every
 * QP and half run, so that each QP holds sent and unacknowledged WRITEs
 * on one side and half-received ones on the other, then both engines
 * migrated (vhca-state.c: saved, a fresh engine loaded from the stream,
 * as the destination QEMU does), then the batch finished and every
 * completion checked.  It prints the stream's size and the save and load
 * times of the larger side: what the device's state adds to a
 * migration's downtime (issue 30 asks at most 10 ms with 1,000 QPs).
 *
 * The engine's clock is the harness's fake one and stands still: with
 * no loss no timer fires, and what is measured is the engine's work, in
 * the CPU time of the one thread that does it.
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vhca-node.h"
#include "vhca-state.h"
#include "vhca-wire.h"

/* Work requests posted per doorbell: the receive queue holds 16. */
#define BENCH_BATCH         16
/* Messages of up to 64 KiB rotate over the first 256 KiB of the buffer. */
#define BENCH_SLOTS         4

typedef struct BenchCase {
    const char *name;
    uint8_t opcode;
} BenchCase;

static const BenchCase bench_cases[] = {
    { "write", VHCA_WR_RDMA_WRITE },
    { "read", VHCA_WR_RDMA_READ },
    { "send", VHCA_WR_SEND },
};

typedef struct BenchOpts {
    uint32_t size;
    uint32_t mtu;
    double seconds;
    uint32_t max_qp;
    uint32_t qps;                   /* 0: the single-QP case */
    bool state;                     /* time a migration, not a stream */
} BenchOpts;

/* Many QPs: N QP pairs, all of a's completing to one large CQ. */
typedef struct BenchMany {
    uint32_t n;
    TestQp *qa, *qb;
    TestCq cq;
} BenchMany;

/* pair_init() with a device of @max_qp QPs (the table the passes see). */
static void bench_pair_init(Pair *p, const BenchOpts *o)
{
    ConnOpts conn = default_opts;
    VhcaCoreConfig cfg = harness_default_cfg;

    conn.mtu = vhca_ib_mtu_from_bytes(o->mtu);
    cfg.max_qp = o->max_qp;
    node_init_cfg(&p->a, 1, VHCA_QPT_RC, &cfg);
    node_init_cfg(&p->b, 2, VHCA_QPT_RC, &cfg);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    qp_connect(p->a.h, p->a.qp.qpn, p->b.gid, p->b.h->core.cfg.mac,
               p->b.qp.qpn, &conn, conn.a_psn, conn.b_psn);
    qp_connect(p->b.h, p->b.qp.qpn, p->a.gid, p->a.h->core.cfg.mac,
               p->a.qp.qpn, &conn, conn.b_psn, conn.a_psn);
}

/* Poll @n successful CQEs from @cq; a failed one ends the benchmark. */
static void bench_reap(Node *n, TestCq *cq, unsigned count)
{
    struct vhca_cqe cqe;
    unsigned i;

    for (i = 0; i < count; i++) {
        if (!cq_poll(n->h, cq, &cqe) || cqe.status != VHCA_WC_SUCCESS) {
            fprintf(stderr, "bench: completion %u of %u missing or failed "
                    "(status %u)\n", i, count, cqe.status);
            exit(1);
        }
    }
}

/*
 * The two devices take turns, one deferred pass each, as two QEMUs
 * running at once would; a loss (a full receive queue) is recovered by
 * the retransmit timer on the fake clock, and counted.
 */
static void bench_pair_run(Pair *p)
{
    Harness *a = p->a.h, *b = p->b.h;

    while (a->work_scheduled || b->work_scheduled) {
        if (a->work_scheduled) {
            a->work_scheduled = false;
            vhca_core_run_deferred(&a->core);
        }
        if (b->work_scheduled) {
            b->work_scheduled = false;
            vhca_core_run_deferred(&b->core);
        }
    }
    if (a->timer_armed || b->timer_armed) {
        harness_pair_settle(a, b, SETTLE_NS);
    }
}

static void bench_many_init(Pair *p, BenchMany *m, const BenchOpts *o)
{
    ConnOpts conn = default_opts;
    uint8_t log = 1;
    uint32_t i;

    conn.mtu = vhca_ib_mtu_from_bytes(o->mtu);
    while ((1u << log) < o->qps * BENCH_BATCH) {
        log++;
    }
    m->n = o->qps;
    m->qa = g_new0(TestQp, m->n);
    m->qb = g_new0(TestQp, m->n);
    g_assert_cmpuint(rdma_create_cq(p->a.h, &m->cq, log, p->a.eqn,
                                    p->a.page), ==, VHCA_ST_OK);
    for (i = 0; i < m->n; i++) {
        g_assert_cmpuint(rdma_create_qp(p->a.h, &m->qa[i], VHCA_QPT_RC,
                                        p->a.pdn, m->cq.cqn, p->a.rcq.cqn,
                                        p->a.page), ==, VHCA_ST_OK);
        g_assert_cmpuint(rdma_create_qp(p->b.h, &m->qb[i], VHCA_QPT_RC,
                                        p->b.pdn, p->b.scq.cqn,
                                        p->b.rcq.cqn, p->b.page), ==,
                         VHCA_ST_OK);
        qp_connect(p->a.h, m->qa[i].qpn, p->b.gid, p->b.h->core.cfg.mac,
                   m->qb[i].qpn, &conn, conn.a_psn, conn.b_psn);
        qp_connect(p->b.h, m->qb[i].qpn, p->a.gid, p->a.h->core.cfg.mac,
                   m->qa[i].qpn, &conn, conn.b_psn, conn.a_psn);
    }
}

/* BENCH_BATCH WRITEs posted on each of the N QPs, one doorbell per QP. */
static void bench_many_post(Pair *p, BenchMany *m, uint32_t size,
                            uint64_t *seq)
{
    struct vhca_send_wqe w;
    uint32_t i, j;

    for (i = 0; i < m->n; i++) {
        for (j = 0; j < BENCH_BATCH; j++) {
            uint32_t off = (j % BENCH_SLOTS) * 4096;

            wqe_init(&w, *seq + i * BENCH_BATCH + j, VHCA_WR_RDMA_WRITE,
                     VHCA_WQE_SIGNALED);
            wqe_sge(&w, p->a.buf + off, size, p->a.key);
            wqe_remote(&w, p->b.buf + off, p->b.key);
            qp_put_send_wqe(p->a.h, &m->qa[i], &w);
        }
        ring_doorbell(p->a.h, p->a.page, VHCA_DB_SQ, m->qa[i].qpn,
                      m->qa[i].sq_pi);
    }
    *seq += m->n * BENCH_BATCH;
}

/* A batch on every QP, run to the end, every CQE reaped. */
static void bench_many_batch(Pair *p, BenchMany *m, uint32_t size,
                             uint64_t *seq)
{
    bench_many_post(p, m, size, seq);
    bench_pair_run(p);
    bench_reap(&p->a, &m->cq, m->n * BENCH_BATCH);
}

/* One batch of @opcode: posted, run to the end, every CQE reaped. */
static void bench_batch(Pair *p, uint8_t opcode, uint32_t size,
                        uint64_t *seq)
{
    uint32_t stride = size < 4096 ? 4096 : size;
    unsigned i;

    if (opcode == VHCA_WR_SEND) {
        for (i = 0; i < BENCH_BATCH; i++) {
            post_recv(&p->b, *seq + i, (i % BENCH_SLOTS) * stride, size);
        }
    }
    for (i = 0; i < BENCH_BATCH; i++) {
        uint32_t off = (i % BENCH_SLOTS) * stride;

        post(&p->a, *seq + i, opcode, VHCA_WQE_SIGNALED, off, size,
             p->b.buf + off, p->b.key);
    }
    ring_sq(&p->a);
    bench_pair_run(p);
    bench_reap(&p->a, &p->a.scq, BENCH_BATCH);
    if (opcode == VHCA_WR_SEND) {
        bench_reap(&p->b, &p->b.rcq, BENCH_BATCH);
    }
    *seq += BENCH_BATCH;
}

/*
 * The process's CPU time, not the wall clock: the engine runs on one
 * thread, and on a machine shared with other work its CPU time is what
 * stays comparable from run to run.
 */
static double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run one case and print its line. */
static void bench_run(const BenchCase *c, const BenchOpts *o)
{
    uint64_t seq = 1, messages = 0;
    unsigned per_batch = o->qps ? o->qps * BENCH_BATCH : BENCH_BATCH;
    double start, elapsed;
    BenchMany many = { 0 };
    Pair p;

    if (o->qps) {
        /* About 20 KiB of rings and page lists per QP, and the CQ. */
        harness_ram_size = RAM_SIZE + (size_t)o->qps * 48 * 1024;
    }
    bench_pair_init(&p, o);
    if (o->qps) {
        bench_many_init(&p, &many, o);
    }
    /* Warm up: the heap, the caches, the first PSNs. */
    for (unsigned i = 0; i < 8; i++) {
        if (o->qps) {
            bench_many_batch(&p, &many, o->size, &seq);
        } else {
            bench_batch(&p, c->opcode, o->size, &seq);
        }
    }
    start = bench_now();
    do {
        for (unsigned i = 0; i < 16; i++) {
            if (o->qps) {
                bench_many_batch(&p, &many, o->size, &seq);
            } else {
                bench_batch(&p, c->opcode, o->size, &seq);
            }
            messages += per_batch;
        }
        elapsed = bench_now() - start;
    } while (elapsed < o->seconds);
    printf("%-5s %6u B  mtu %4u  max-qp %5u  %7.3f GB/s  %9.0f msg/s"
           "  drops %" G_GUINT64_FORMAT "%s",
           c->name, o->size, o->mtu, o->max_qp,
           (double)messages * o->size / elapsed / 1e9, messages / elapsed,
           counter(p.a.h, VHCA_CNT_ROCE_RX_DROPPED) +
           counter(p.b.h, VHCA_CNT_ROCE_RX_DROPPED),
           o->qps ? "" : "\n");
    if (o->qps) {
        printf("  qps %u\n", o->qps);
    }
    fflush(stdout);
    g_free(many.qa);
    g_free(many.qb);
    pair_free(&p);
}

/*
 * Migrate @h's engine as the two QEMUs do: the source's pre_save saves
 * it; the destination realized a fresh engine of the same config before
 * the migration began, and its post_load loads the stream into it.  The
 * save and the load are what the device adds to the downtime; their CPU
 * times (bench_now(), as the stream figures) go to @save_s and @load_s.
 */
static void bench_migrate(Harness *h, size_t *bytes, double *save_s,
                          double *load_s)
{
    VhcaStateBuf buf = { 0 };
    VhcaCoreConfig cfg = h->core.cfg;
    const VhcaCoreOps *ops = h->core.ops;
    bool link = h->core.link_up;
    char err[256];
    double t0;

    t0 = bench_now();
    if (vhca_state_save(&h->core, &buf, err, sizeof(err))) {
        fprintf(stderr, "bench: save: %s\n", err);
        exit(1);
    }
    *save_s = bench_now() - t0;
    vhca_core_cleanup(&h->core);
    if (vhca_core_init(&h->core, &cfg, ops, h)) {
        fprintf(stderr, "bench: a fresh engine would not start\n");
        exit(1);
    }
    h->core.link_up = link;     /* the backend's, reported by the glue */
    t0 = bench_now();
    if (vhca_state_load(&h->core, buf.data, buf.len, err, sizeof(err))) {
        fprintf(stderr, "bench: load: %s\n", err);
        exit(1);
    }
    *load_s = bench_now() - t0;
    *bytes = buf.len;
    vhca_state_buf_free(&buf);
}

/* Both engines of @p migrated; one line of figures, the larger side's. */
static void bench_migrate_pair(Pair *p, const BenchOpts *o,
                               const char *when)
{
    size_t bytes[2];
    double save_s[2], load_s[2];
    int i;

    bench_migrate(p->a.h, &bytes[0], &save_s[0], &load_s[0]);
    bench_migrate(p->b.h, &bytes[1], &save_s[1], &load_s[1]);
    i = save_s[1] + load_s[1] > save_s[0] + load_s[0];
    printf("state  qps %u  %-9s  %7zu + %7zu bytes  save %5.2f ms  "
           "load %5.2f ms  (%s side)\n", o->qps, when, bytes[0], bytes[1],
           save_s[i] * 1e3, load_s[i] * 1e3, i ? "responder" : "requester");
    fflush(stdout);
}

/*
 * --qps N --state: the N QP pairs migrated idle (after a batch), then in
 * the middle of one: a batch posted on every QP and half run, so that
 * each requester holds BENCH_BATCH WRITEs sent and unacknowledged and
 * each responder has placed them, then the batch finished on the
 * migrated engines (the ACKs in flight were lost with the wire: the
 * retransmit timer recovers them) and every completion checked.
 */
static void bench_state(const BenchOpts *o)
{
    BenchMany m = { 0 };
    uint64_t seq = 1;
    Pair p;

    harness_ram_size = RAM_SIZE + (size_t)o->qps * 48 * 1024;
    bench_pair_init(&p, o);
    bench_many_init(&p, &m, o);
    bench_many_batch(&p, &m, o->size, &seq);
    bench_migrate_pair(&p, o, "idle");
    bench_many_post(&p, &m, o->size, &seq);
    /* One pass each: a sends, b places and answers, a has not read. */
    p.a.h->work_scheduled = false;
    vhca_core_run_deferred(&p.a.h->core);
    p.b.h->work_scheduled = false;
    vhca_core_run_deferred(&p.b.h->core);
    bench_migrate_pair(&p, o, "in flight");
    p.a.h->work_scheduled = p.b.h->work_scheduled = true;
    bench_pair_run(&p);
    bench_reap(&p.a, &m.cq, m.n * BENCH_BATCH);
    g_free(m.qa);
    g_free(m.qb);
    pair_free(&p);
}

static int bench_usage(void)
{
    fprintf(stderr, "usage: bench-vhca-engine [--op write|read|send|all] "
            "[--size BYTES] [--mtu 256..4096] [--seconds S] [--max-qp N] "
            "[--qps N] [--state]\n"
            "  --qps N: --op write, --size at most 4096, N < max-qp, "
            "N <= 4096\n"
            "  --state (with --qps): a migration's save and load times\n");
    return 2;
}

int main(int argc, char **argv)
{
    BenchOpts o = { .size = 65536, .mtu = 4096, .seconds = 1.0,
                    .max_qp = 256, .qps = 0 };
    const char *op = "all";
    unsigned i;
    int status = 0;

    for (i = 1; i < (unsigned)argc && !strcmp(argv[i], "--state"); i++) {
        o.state = true;
    }
    for (; i + 1 < (unsigned)argc; i += 2) {
        if (!strcmp(argv[i], "--op")) {
            op = argv[i + 1];
        } else if (!strcmp(argv[i], "--size")) {
            o.size = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "--mtu")) {
            o.mtu = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "--seconds")) {
            o.seconds = strtod(argv[i + 1], NULL);
        } else if (!strcmp(argv[i], "--max-qp")) {
            o.max_qp = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "--qps")) {
            o.qps = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        } else {
            return bench_usage();
        }
    }
    if (i != (unsigned)argc || !vhca_ib_mtu_from_bytes(o.mtu) || !o.size ||
        o.size > 65536 || o.max_qp < 2 || o.max_qp > VHCA_CORE_MAX_QP_MAX ||
        o.qps > o.max_qp - 1 || o.qps > 4096 ||
        (o.qps && (o.size > 4096 || strcmp(op, "write"))) ||
        (o.state && !o.qps)) {
        return bench_usage();
    }
    if (o.state) {
        bench_state(&o);
        return 0;
    }
    for (i = 0; i < G_N_ELEMENTS(bench_cases); i++) {
        const BenchCase *c = &bench_cases[i];
        pid_t pid;
        int st;

        if (strcmp(op, "all") && strcmp(op, c->name)) {
            continue;
        }
        pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            bench_run(c, &o);
            _exit(0);
        }
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
            WEXITSTATUS(st)) {
            fprintf(stderr, "bench: case %s failed\n", c->name);
            status = 1;
        }
    }
    return status;
}
