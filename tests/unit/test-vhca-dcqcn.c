/*
 * Unit tests of DCQCN (hw/vhca/engine/vhca-dcqcn.c): the reaction point
 * step by step against Zhu et al., "Congestion Control for Large-Scale
 * RDMA Deployments", SIGCOMM 2015, section 3.1 ([DCQCN]), with ConnectX's
 * parameters; the pacer; the notification point's CNP pacing.
 *
 * Each table is a run of CNPs, timer calls and bytes sent, with the
 * RC, RT and alpha that must follow, worked out by hand from the formulas
 * cited beside them.  Rates are bytes/s, alpha 1/1024, times us.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <glib.h>
#include <string.h>

#include "vhca-dcqcn.h"
#include "vhca_hw.h"

#define US          1000ull
#define MBPS(x)     ((uint64_t)(x) * VHCA_DCQCN_MBPS)
#define NEVER       VHCA_DCQCN_NEVER

#define DEC         VHCA_DCQCN_EV_DECREASE
#define DEFER       VHCA_DCQCN_EV_DEFERRED
#define INC         VHCA_DCQCN_EV_INCREASE
#define RECOV       VHCA_DCQCN_EV_RECOVERED

#define FR          VHCA_DCQCN_FAST_RECOVERY
#define AI          VHCA_DCQCN_ADDITIVE_INCREASE
#define HI          VHCA_DCQCN_HYPER_INCREASE
#define UNLIM       VHCA_DCQCN_UNLIMITED

typedef enum StepKind {
    CNP,
    TIMER,
    SENT,
} StepKind;

/* One event at @at_us and the state that must follow it. */
typedef struct Step {
    StepKind kind;
    uint64_t at_us;
    uint32_t bytes;             /* SENT */
    unsigned ev;                /* VHCA_DCQCN_EV_* the call returns */
    uint64_t rc;
    uint64_t rt;
    uint16_t alpha;
    VhcaDcqcnStage stage;
    uint64_t deadline_us;       /* vhca_dcqcn_next_deadline(), NEVER */
} Step;

static void config(VhcaDcqcnConfig *cfg, const VhcaDcqcnParams *p,
                   uint64_t line_rate)
{
    g_assert_cmpint(vhca_dcqcn_config_init(cfg, p, line_rate), ==, 0);
}

/* A QP's reaction point, new, on a line of @line_rate bytes/s. */
static void start(VhcaDcqcn *rp, VhcaDcqcnConfig *cfg,
                  const VhcaDcqcnParams *p, uint64_t line_rate)
{
    config(cfg, p, line_rate);
    vhca_dcqcn_init(rp, cfg);
}

/*
 * Round numbers: alpha 512 and rp_gd 10 make every cut halve RC, with no
 * floor but rp_min_rate; every CNP cuts at once; alpha stays put (its
 * period is a second).
 */
static void halving_params(VhcaDcqcnParams *p)
{
    vhca_dcqcn_params_default(p);
    p->rp_initial_alpha_value = 512;
    p->rp_gd = 10;
    p->rp_min_dec_fac = 0;
    p->rp_rate_reduce_monitor_period = 0;
    p->rp_dce_tcp_rtt = 1000000;
}

static void run_steps(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                      const Step *steps, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const Step *s = &steps[i];
        uint64_t now = s->at_us * US;
        unsigned ev = 0;

        switch (s->kind) {
        case CNP:
            ev = vhca_dcqcn_on_cnp(rp, cfg, now);
            break;
        case TIMER:
            ev = vhca_dcqcn_timer(rp, cfg, now);
            break;
        case SENT:
            ev = vhca_dcqcn_on_sent(rp, cfg, s->bytes, now);
            break;
        }
        if (g_test_verbose()) {
            g_test_message("step %zu at %" G_GUINT64_FORMAT " us: ev 0x%x "
                           "rc %" G_GUINT64_FORMAT " rt %" G_GUINT64_FORMAT
                           " alpha %u %s", i, s->at_us, ev, rp->rc, rp->rt,
                           rp->alpha,
                           vhca_dcqcn_stage_name(vhca_dcqcn_stage(rp, cfg)));
        }
        g_assert_cmphex(ev, ==, s->ev);
        g_assert_cmpuint(rp->rc, ==, s->rc);
        g_assert_cmpuint(rp->rt, ==, s->rt);
        g_assert_cmpuint(rp->alpha, ==, s->alpha);
        g_assert_cmpint(vhca_dcqcn_stage(rp, cfg), ==, s->stage);
        g_assert_cmpuint(vhca_dcqcn_next_deadline(rp), ==,
                         s->deadline_us == NEVER ? NEVER
                                                 : s->deadline_us * US);
    }
}

/*
 * [DCQCN]'s own settings: F = 5, a 55 us timer, K = 55 us, g = 1/256
 * (rp_dce_tcp_g 1020: alpha keeps 1020/1024), R_AI = 40 Mbit/s, RT = RC
 * on every CNP (rp_clamp_tgt_rate), no floor on a cut, every CNP cuts (the
 * NP paces them), no byte counter.  rp_gd 11: a cut is RC * alpha / 2.
 */
static void paper_params(VhcaDcqcnParams *p)
{
    vhca_dcqcn_params_default(p);
    p->rp_threshold = 5;
    p->rp_time_reset = 55;
    p->rp_byte_reset = 0;
    p->rp_ai_rate = 40;
    p->rp_hai_rate = 400;
    p->rp_clamp_tgt_rate = 1;
    p->rp_min_dec_fac = 0;
    p->rp_dce_tcp_g = 1020;
    p->rp_dce_tcp_rtt = 55;
    p->rp_rate_reduce_monitor_period = 0;
    p->rp_initial_alpha_value = 1023;
    p->rp_gd = 11;
}

/*
 * A 40 Gbit/s line (5e9 bytes/s).  Formulas ([DCQCN] 3.1):
 *   cut (eq. 1):  RT = RC; RC -= RC * alpha >> 11
 *   alpha (eq. 1, 2), each 55 us: alpha = alpha * 1020 / 1024 (+ 4 if a
 *                 CNP came in the period)
 *   fast recovery (eq. 3):  RC = RC + (RT - RC + 1) / 2
 *   additive (eq. 4):       RT += 5e6 (40 Mbit/s), then as eq. 3
 */
static const Step paper_steps[] = {
    /* First CNP: alpha = 1023; 5e9 * 1023 >> 11 = 2497558593. */
    { CNP,     0, 0, DEC, 2502441407u, 5000000000u, 1023, FR, 55 },
    /* T = 1..3: FR, each halving RT - RC; alpha 1019, 1015, 1011. */
    { TIMER,  55, 0, INC, 3751220704u, 5000000000u, 1019, FR, 110 },
    { TIMER, 110, 0, INC, 4375610352u, 5000000000u, 1015, FR, 165 },
    { TIMER, 165, 0, INC, 4687805176u, 5000000000u, 1011, FR, 220 },
    /* CNP: RT = RC = 4687805176; cut 4687805176 * 1011 >> 11. */
    { CNP,   200, 0, DEC, 2373659164u, 4687805176u, 1011, FR, 255 },
    /* Alpha at 220, with that CNP: 1011 * 1020 / 1024 + 4 = 1011. */
    { TIMER, 220, 0, 0,   2373659164u, 4687805176u, 1011, FR, 255 },
    /* Five fast recovery steps, T = 1..5, towards RT. */
    { TIMER, 255, 0, INC, 3530732170u, 4687805176u, 1011, FR, 310 },
    { TIMER, 310, 0, INC, 4109268673u, 4687805176u, 1007, FR, 365 },
    { TIMER, 365, 0, INC, 4398536925u, 4687805176u, 1003, FR, 420 },
    { TIMER, 420, 0, INC, 4543171051u, 4687805176u, 999, FR, 475 },
    { TIMER, 475, 0, INC, 4615488114u, 4687805176u, 995, FR, 530 },
    /* T = 6 > F: additive increase, RT + 5e6 each time. */
    { TIMER, 530, 0, INC, 4654146645u, 4692805176u, 991, AI, 585 },
    { TIMER, 585, 0, INC, 4675975911u, 4697805176u, 987, AI, 640 },
};

static void test_paper_steps(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    paper_params(&p);
    start(&rp, &cfg, &p, MBPS(40000));
    g_assert_cmpuint(vhca_dcqcn_rate(&rp, &cfg), ==, 5000000000u);
    g_assert_cmpint(vhca_dcqcn_stage(&rp, &cfg), ==, UNLIM);
    g_assert_cmpuint(vhca_dcqcn_next_deadline(&rp), ==, NEVER);
    run_steps(&rp, &cfg, paper_steps, G_N_ELEMENTS(paper_steps));
    g_assert_cmpuint(rp.decreases, ==, 2);
    g_assert_cmpuint(rp.increases, ==, 10);
    g_assert_cmpuint(vhca_dcqcn_rate(&rp, &cfg), ==, 4675975911u);
}

/*
 * A timer called late, once, does what the punctual calls did: each
 * event runs at its own time.
 */
static void test_late_timer(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn punctual, late;
    size_t i;

    paper_params(&p);
    config(&cfg, &p, MBPS(40000));
    vhca_dcqcn_init(&punctual, &cfg);
    vhca_dcqcn_init(&late, &cfg);
    for (i = 0; i < G_N_ELEMENTS(paper_steps); i++) {
        if (paper_steps[i].kind == CNP) {
            vhca_dcqcn_on_cnp(&punctual, &cfg, paper_steps[i].at_us * US);
            vhca_dcqcn_on_cnp(&late, &cfg, paper_steps[i].at_us * US);
        } else {
            vhca_dcqcn_timer(&punctual, &cfg, paper_steps[i].at_us * US);
        }
    }
    g_assert_cmphex(vhca_dcqcn_timer(&late, &cfg, 600 * US), ==, INC);
    g_assert_cmpuint(late.rc, ==, 4675975911u);
    g_assert_cmpuint(late.rt, ==, 4697805176u);
    g_assert_cmpuint(late.alpha, ==, 987);
    g_assert_true(memcmp(&late, &punctual, sizeof(late)) == 0);
}

/*
 * The byte counter and hyper increase, from ConnectX's
 * rp_rate_to_set_on_first_cnp (the first CNP sets RC = RT = 1000 Mbit/s
 * = 125e6, no cut).  F = 2, timer 100 us, an increase every 10000 bytes,
 * R_AI 10 Mbit/s = 1.25e6, R_HAI 100 Mbit/s = 12.5e6.  Stage from T and
 * BC, this increase counted ([DCQCN] 3.1): max(T, BC) <= 2 fast recovery,
 * min(T, BC) > 2 hyper, else additive.
 */
static const Step byte_steps[] = {
    { CNP,    0, 0,     DEC, 125000000, 125000000, 1023, FR, 100 },
    /* BC = 1, 2: fast recovery to RT = RC changes nothing. */
    { SENT,   1, 10000, 0,   125000000, 125000000, 1023, FR, 100 },
    { SENT,   2, 9999,  0,   125000000, 125000000, 1023, FR, 100 },
    { SENT,   3, 1,     0,   125000000, 125000000, 1023, FR, 100 },
    /* BC = 3 > F, T = 0: additive; RC = 125e6 + (1.25e6 + 1) / 2. */
    { SENT,   4, 10000, INC, 125625000, 126250000, 1023, AI, 100 },
    /* T = 1, BC = 3: still additive. */
    { TIMER, 100, 0,    INC, 126562500, 127500000, 1023, AI, 200 },
    { TIMER, 200, 0,    INC, 127656250, 128750000, 1023, AI, 300 },
    /* T = 3, BC = 3: both past F, hyper: RT + 12.5e6. */
    { TIMER, 300, 0,    INC, 134453125, 141250000, 1023, HI, 400 },
    /*
     * 25000 bytes: BC = 4 (RT 153750000, RC 144101563) and 5, 5000
     * left over.
     */
    { SENT,  301, 25000, INC, 155175782, 166250000, 1023, HI, 400 },
    /* The 5000 and 5000 more: BC = 6. */
    { SENT,  302, 5000, INC, 166962891, 178750000, 1023, HI, 400 },
};

static void test_byte_counter_hyper(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    vhca_dcqcn_params_default(&p);
    p.rp_rate_to_set_on_first_cnp = 1000;
    p.rp_threshold = 2;
    p.rp_time_reset = 100;
    p.rp_byte_reset = 10000;
    p.rp_ai_rate = 10;
    p.rp_hai_rate = 100;
    /* Alpha stays put for the run. */
    p.rp_dce_tcp_rtt = 1000000;
    start(&rp, &cfg, &p, MBPS(100000));
    run_steps(&rp, &cfg, byte_steps, G_N_ELEMENTS(byte_steps));
    g_assert_cmpuint(rp.byte_stage, ==, 6);
    g_assert_cmpuint(rp.timer_stage, ==, 3);
    g_assert_cmpuint(rp.byte_count, ==, 0);
}

/*
 * Alpha without CNPs ([DCQCN] 3.1 eq. 2): alpha = alpha * 1020 / 1024
 * each K = 55 us, 1023 1019 1015 1011 ...; a CNP in a period adds
 * 1024 - 1020.  Caught up in one call or period by period, the same; a
 * long quiet spell ends at 0.
 */
static void test_alpha_decay(void)
{
    static const uint16_t expect[] = { 1023, 1019, 1015, 1011, 1007, 1003 };
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp, once;
    size_t i;

    paper_params(&p);
    /* No rate timer in the way: only alpha moves. */
    p.rp_time_reset = 1000000;
    start(&rp, &cfg, &p, MBPS(40000));
    vhca_dcqcn_on_cnp(&rp, &cfg, 0);
    once = rp;
    for (i = 0; i < G_N_ELEMENTS(expect); i++) {
        vhca_dcqcn_timer(&rp, &cfg, i * 55 * US);
        g_assert_cmpuint(rp.alpha, ==, expect[i]);
        /* Just before the next update, nothing moves. */
        vhca_dcqcn_timer(&rp, &cfg, (i + 1) * 55 * US - 1);
        g_assert_cmpuint(rp.alpha, ==, expect[i]);
    }
    vhca_dcqcn_timer(&once, &cfg, 5 * 55 * US);
    g_assert_cmpuint(once.alpha, ==, 1003);
    g_assert_cmpuint(once.alpha_next_ns, ==, rp.alpha_next_ns);

    /* A CNP at 290 us (period 275..330): 1003 * 1020 / 1024 + 4 = 1003. */
    vhca_dcqcn_on_cnp(&rp, &cfg, 290 * US);
    vhca_dcqcn_timer(&rp, &cfg, 330 * US);
    g_assert_cmpuint(rp.alpha, ==, 1003);
    vhca_dcqcn_timer(&rp, &cfg, 385 * US);
    g_assert_cmpuint(rp.alpha, ==, 999);

    /* One second later alpha has decayed to nothing. */
    vhca_dcqcn_timer(&rp, &cfg, 1000000 * US);
    g_assert_cmpuint(rp.alpha, ==, 0);
    g_assert_cmpuint(rp.alpha_next_ns, ==, 1000010 * US);
}

/*
 * Cuts stop at rp_min_rate.  Line 1000 Mbit/s, alpha 512 and rp_gd 10
 * (a cut of RC * 512 / 1024: half), floor 100 Mbit/s = 12.5e6; RT kept
 * (no increase between the cuts, rp_clamp_tgt_rate 0).
 */
static const Step min_rate_steps[] = {
    { CNP, 0, 0, DEC, 62500000, 125000000, 512, FR, 300 },
    { CNP, 1, 0, DEC, 31250000, 125000000, 512, FR, 301 },
    { CNP, 2, 0, DEC, 15625000, 125000000, 512, FR, 302 },
    /* 7812500 is below the floor. */
    { CNP, 3, 0, DEC, 12500000, 125000000, 512, FR, 303 },
    { CNP, 4, 0, DEC, 12500000, 125000000, 512, FR, 304 },
};

static void test_min_rate(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    halving_params(&p);
    p.rp_min_rate = 100;
    start(&rp, &cfg, &p, MBPS(1000));
    run_steps(&rp, &cfg, min_rate_steps, G_N_ELEMENTS(min_rate_steps));
    g_assert_cmpuint(vhca_dcqcn_rate(&rp, &cfg), ==, MBPS(100));
}

/*
 * rp_min_dec_fac: a cut leaves at least that percent of RC.  Alpha 1023
 * with rp_gd 10 would cut RC * 1023 / 1024; 50% keeps half, 80% four
 * fifths.
 */
static void test_min_dec_fac(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    vhca_dcqcn_params_default(&p);
    p.rp_gd = 10;
    p.rp_min_dec_fac = 50;
    start(&rp, &cfg, &p, MBPS(1000));
    g_assert_cmphex(vhca_dcqcn_on_cnp(&rp, &cfg, 0), ==, DEC);
    g_assert_cmpuint(rp.rc, ==, 62500000);

    p.rp_min_dec_fac = 80;
    start(&rp, &cfg, &p, MBPS(1000));
    vhca_dcqcn_on_cnp(&rp, &cfg, 0);
    g_assert_cmpuint(rp.rc, ==, 100000000);

    /*
     * 0: no limit: 125e6 - (125e6 * 1023 >> 10) = 122071, below
     * rp_min_rate 1 Mbit/s = 125000.
     */
    p.rp_min_dec_fac = 0;
    p.rp_min_rate = 1;
    start(&rp, &cfg, &p, MBPS(1000));
    vhca_dcqcn_on_cnp(&rp, &cfg, 0);
    g_assert_cmpuint(rp.rc, ==, 125000);
}

/*
 * The rate never goes above the line rate (nor rp_max_rate): RT is
 * clamped, RC reaches it, and the QP is unlimited again.  Line 1000
 * Mbit/s, rp_max_rate 800 = 1e8; first CNP halves (alpha 512, rp_gd
 * 10): RC 5e7, RT 1e8.  F = 0, R_AI 100 Mbit/s: every timer step is
 * additive, RT already at the maximum.
 */
static const Step max_rate_steps[] = {
    { CNP,     0, 0, DEC,         50000000, 100000000, 512, FR, 10 },
    { TIMER,  10, 0, INC,         75000000, 100000000, 512, AI, 20 },
    { TIMER,  20, 0, INC,         87500000, 100000000, 512, AI, 30 },
    { TIMER,  30, 0, INC,         93750000, 100000000, 512, AI, 40 },
    /* ... halving the gap, rounded up, until RC = RT = max. */
    { TIMER, 300, 0, INC | RECOV, 100000000, 100000000, 512, UNLIM, NEVER },
    /* Unlimited: nothing more happens. */
    { TIMER, 900, 0, 0,           100000000, 100000000, 512, UNLIM, NEVER },
};

static void test_max_rate(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    halving_params(&p);
    p.rp_threshold = 0;
    p.rp_time_reset = 10;
    p.rp_ai_rate = 100;
    p.rp_max_rate = 800;
    start(&rp, &cfg, &p, MBPS(1000));
    g_assert_cmpuint(cfg.max_rate, ==, 100000000);
    g_assert_cmpuint(vhca_dcqcn_rate(&rp, &cfg), ==, 100000000);
    run_steps(&rp, &cfg, max_rate_steps, G_N_ELEMENTS(max_rate_steps));
    g_assert_cmpuint(vhca_dcqcn_rate(&rp, &cfg), ==, 100000000);

    /* A later CNP cuts from the maximum again. */
    g_assert_cmphex(vhca_dcqcn_on_cnp(&rp, &cfg, 1000 * US), ==, DEC);
    g_assert_cmpuint(rp.rc, ==, 50000000);

    /* The line slows to 400 Mbit/s: RT and RC follow at the next call. */
    config(&cfg, &p, MBPS(400));
    vhca_dcqcn_timer(&rp, &cfg, 1001 * US);
    g_assert_cmpuint(rp.rt, ==, 50000000);
    g_assert_cmpuint(rp.rc, ==, 50000000);
}

/*
 * At most one cut per rp_rate_reduce_monitor_period (50 us here): CNPs
 * inside the period wait, and however many came, one cut follows when
 * it ends.  Alpha 512, rp_gd 10: each cut halves; RT kept (no increase).
 */
static const Step monitor_steps[] = {
    { CNP,     0, 0, DEC,   50000000, 100000000, 512, FR, 300 },
    { CNP,    10, 0, DEFER, 50000000, 100000000, 512, FR, 50 },
    { CNP,    20, 0, DEFER, 50000000, 100000000, 512, FR, 50 },
    { TIMER,  49, 0, 0,     50000000, 100000000, 512, FR, 50 },
    { TIMER,  50, 0, DEC,   25000000, 100000000, 512, FR, 350 },
    { TIMER,  99, 0, 0,     25000000, 100000000, 512, FR, 350 },
    /* A period after the last cut, a CNP cuts at once. */
    { CNP,   100, 0, DEC,   12500000, 100000000, 512, FR, 400 },
};

static void test_monitor_period(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    halving_params(&p);
    p.rp_rate_reduce_monitor_period = 50;
    start(&rp, &cfg, &p, MBPS(800));
    run_steps(&rp, &cfg, monitor_steps, G_N_ELEMENTS(monitor_steps));
    g_assert_cmpuint(rp.decreases, ==, 3);
}

/*
 * RT on a cut ([DCQCN] eq. 1 sets RT = RC; ConnectX only if the rate
 * went up since the last cut): with the defaults (rp_clamp_tgt_rate 0,
 * rp_clamp_tgt_rate_ati 1) a timer or byte-counter increase between two
 * cuts moves RT to RC; without, RT stays; with rp_clamp_tgt_rate_ati 0
 * only the byte counter counts.
 */
static void test_clamp_target(void)
{
    /* Between a first cut at 0 (RC 5e7, RT 1e8) and a second one. */
    enum { NOTHING, TIMER_INC, BYTE_INC };
    static const struct {
        uint32_t clamp, ati;
        int between;
        uint64_t second_cnp_us;
        uint64_t rt, rc;            /* after the second cut */
    } cases[] = {
        /* No increase between: RT stays 1e8. */
        { 0, 1, NOTHING,   5,  100000000, 25000000 },
        /* A timer increase at 10 us (RC 7.5e7): RT = 7.5e7. */
        { 0, 1, TIMER_INC, 10, 75000000,  37500000 },
        /* Without rp_clamp_tgt_rate_ati a timer increase does not... */
        { 0, 0, TIMER_INC, 10, 100000000, 37500000 },
        /* ... but a byte-counter increase does. */
        { 0, 0, BYTE_INC,  2,  75000000,  37500000 },
        /* rp_clamp_tgt_rate: always, as the paper. */
        { 1, 1, NOTHING,   5,  50000000,  25000000 },
    };
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        halving_params(&p);
        p.rp_time_reset = 10;
        p.rp_byte_reset = 1000;
        p.rp_clamp_tgt_rate = cases[i].clamp;
        p.rp_clamp_tgt_rate_ati = cases[i].ati;
        start(&rp, &cfg, &p, MBPS(800));
        vhca_dcqcn_on_cnp(&rp, &cfg, 0);
        if (cases[i].between == BYTE_INC) {
            vhca_dcqcn_on_sent(&rp, &cfg, 1000, 1 * US);
            g_assert_cmpuint(rp.rc, ==, 75000000);
        }
        vhca_dcqcn_on_cnp(&rp, &cfg, cases[i].second_cnp_us * US);
        g_assert_cmpuint(rp.rt, ==, cases[i].rt);
        g_assert_cmpuint(rp.rc, ==, cases[i].rc);
    }
}

/* Bytes sent while unlimited count for nothing. */
static void test_bytes_unlimited(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;

    vhca_dcqcn_params_default(&p);
    start(&rp, &cfg, &p, MBPS(1000));
    g_assert_cmphex(vhca_dcqcn_on_sent(&rp, &cfg, 100000, 0), ==, 0);
    g_assert_cmpuint(rp.byte_count, ==, 0);
    g_assert_cmpuint(rp.byte_stage, ==, 0);
    g_assert_false(rp.started);
}

/*
 * The notification point: one CNP per np_min_time_between_cnps (50 us
 * here, [DCQCN]'s N) however many marked packets come; 0: one each.
 */
static void test_cnp_pacing(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaCnpPacer np;

    vhca_dcqcn_params_default(&p);
    p.np_min_time_between_cnps = 50;
    config(&cfg, &p, MBPS(1000));
    vhca_np_init(&np);
    g_assert_true(vhca_np_should_send_cnp(&np, &cfg, 0));
    g_assert_false(vhca_np_should_send_cnp(&np, &cfg, 0));
    g_assert_false(vhca_np_should_send_cnp(&np, &cfg, 10 * US));
    g_assert_false(vhca_np_should_send_cnp(&np, &cfg, 50 * US - 1));
    g_assert_true(vhca_np_should_send_cnp(&np, &cfg, 50 * US));
    g_assert_false(vhca_np_should_send_cnp(&np, &cfg, 60 * US));
    g_assert_true(vhca_np_should_send_cnp(&np, &cfg, 200 * US));
    g_assert_false(vhca_np_should_send_cnp(&np, &cfg, 249 * US));

    p.np_min_time_between_cnps = 0;
    config(&cfg, &p, MBPS(1000));
    vhca_np_init(&np);
    g_assert_true(vhca_np_should_send_cnp(&np, &cfg, 5));
    g_assert_true(vhca_np_should_send_cnp(&np, &cfg, 5));
}

/*
 * The pacer: a packet's time at the rate, sub-nanosecond remainders
 * carried (1 byte at 3 bytes/s: 333333333 ns, then 666666666, then
 * exactly 1 s); an idle QP saves up @burst bytes' worth.
 */
static void test_pacer(void)
{
    VhcaPacer pc;

    vhca_pacer_init(&pc);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 0);
    vhca_pacer_sent(&pc, 0, 1, 3, 0);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 333333333);
    vhca_pacer_sent(&pc, 333333333, 1, 3, 0);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 666666666);
    vhca_pacer_sent(&pc, 666666666, 1, 3, 0);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 1000000000);

    /* 1000 bytes at 1e6 bytes/s: 1 ms each. */
    vhca_pacer_init(&pc);
    vhca_pacer_sent(&pc, 0, 1000, 1000000, 0);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 1000000);
    /* Sent late: the next one is a packet time after it, no saving. */
    vhca_pacer_sent(&pc, 5000000, 1000, 1000000, 0);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 6000000);

    /* Burst 3000 bytes: after a pause, 4 packets go at once. */
    vhca_pacer_sent(&pc, 20000000, 1000, 1000000, 3000);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 18000000);
    vhca_pacer_sent(&pc, 20000000, 1000, 1000000, 3000);
    vhca_pacer_sent(&pc, 20000000, 1000, 1000000, 3000);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 20000000);
    vhca_pacer_sent(&pc, 20000000, 1000, 1000000, 3000);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 21000000);

    /* Rate 0: not paced. */
    vhca_pacer_sent(&pc, 30000000, 1000, 0, 0);
    g_assert_cmpuint(vhca_pacer_next(&pc), ==, 30000000);
}

/* The DCQCN rate drives the pacer: 64 packets at the cut rate. */
static void test_pacer_at_dcqcn_rate(void)
{
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    VhcaDcqcn rp;
    VhcaPacer pc;
    uint64_t now = 0;
    int i;

    halving_params(&p);
    p.rp_byte_reset = 0;
    p.rp_time_reset = 1000000;
    start(&rp, &cfg, &p, MBPS(800));
    vhca_pacer_init(&pc);
    vhca_dcqcn_on_cnp(&rp, &cfg, 0);
    /* 5e7 bytes/s: 1000 bytes every 20 us. */
    for (i = 0; i < 64; i++) {
        g_assert_cmpuint(vhca_pacer_next(&pc), <=, now);
        vhca_pacer_sent(&pc, now, 1000, vhca_dcqcn_rate(&rp, &cfg), 0);
        now = vhca_pacer_next(&pc);
    }
    g_assert_cmpuint(now, ==, 64 * 20 * US);
}

/* The parameters: mlx5's names, the ConnectX defaults, their ranges. */
static void test_params(void)
{
    static const struct {
        const char *name;
        uint32_t def;
    } defaults[] = {
        { "rp_clamp_tgt_rate", 0 }, { "rp_clamp_tgt_rate_ati", 1 },
        { "rp_time_reset", 300 }, { "rp_byte_reset", 32767 },
        { "rp_threshold", 1 }, { "rp_ai_rate", 5 }, { "rp_max_rate", 0 },
        { "rp_hai_rate", 50 }, { "rp_min_dec_fac", 50 },
        { "rp_min_rate", 1 }, { "rp_rate_to_set_on_first_cnp", 0 },
        { "rp_dce_tcp_g", 1019 }, { "rp_dce_tcp_rtt", 1 },
        { "rp_rate_reduce_monitor_period", 4 },
        { "rp_initial_alpha_value", 1023 }, { "rp_gd", 11 },
        { "np_min_time_between_cnps", 2 }, { "np_cnp_dscp", 48 },
        { "np_cnp_prio_mode", 1 }, { "np_cnp_prio", 6 },
    };
    const VhcaDcqcnParamInfo *bad;
    VhcaDcqcnParams p;
    VhcaDcqcnConfig cfg;
    uint32_t value = 0;
    size_t i;

    g_assert_cmpuint(vhca_dcqcn_param_count, ==, G_N_ELEMENTS(defaults));
    vhca_dcqcn_params_default(&p);
    for (i = 0; i < G_N_ELEMENTS(defaults); i++) {
        const VhcaDcqcnParamInfo *info = &vhca_dcqcn_param_info[i];
        uint32_t v;

        g_assert_cmpstr(vhca_dcqcn_param_name(info), ==, defaults[i].name);
        /* The guest's devlink parameters are named by the header. */
        g_assert_cmpstr(vhca_dcqcn_param_name(info), ==,
                        vhca_cc_param_name(i));
        /* Entry i is the wire's parameter i (vhca_cc_params_from_wire). */
        g_assert_cmpuint(info->offset, ==, i * sizeof(uint32_t));
        g_assert_cmpuint(info->def, ==, defaults[i].def);
        memcpy(&v, (char *)&p + info->offset, sizeof(v));
        g_assert_cmpuint(v, ==, defaults[i].def);
    }
    g_assert_null(vhca_dcqcn_params_violation(&p, &value));

    p.rp_min_dec_fac = 101;
    bad = vhca_dcqcn_params_violation(&p, &value);
    g_assert_nonnull(bad);
    g_assert_cmpstr(vhca_dcqcn_param_name(bad), ==, "rp_min_dec_fac");
    g_assert_cmpuint(value, ==, 101);
    g_assert_cmpint(vhca_dcqcn_config_init(&cfg, &p, MBPS(1000)), ==, -1);

    vhca_dcqcn_params_default(&p);
    p.rp_time_reset = 0;
    bad = vhca_dcqcn_params_violation(&p, &value);
    g_assert_cmpstr(vhca_dcqcn_param_name(bad), ==, "rp_time_reset");
    p.rp_time_reset = 300;
    p.rp_initial_alpha_value = 1024;
    bad = vhca_dcqcn_params_violation(&p, &value);
    g_assert_cmpstr(vhca_dcqcn_param_name(bad), ==,
                    "rp_initial_alpha_value");

    vhca_dcqcn_params_default(&p);
    g_assert_cmpint(vhca_dcqcn_config_init(&cfg, &p, 0), ==, -1);
    g_assert_cmpint(vhca_dcqcn_config_init(&cfg, &p, MBPS(25000)), ==, 0);
    g_assert_cmpuint(cfg.max_rate, ==, 3125000000u);
    g_assert_cmpuint(cfg.min_rate, ==, 125000);
    g_assert_cmpuint(cfg.time_reset_ns, ==, 300000);
    g_assert_cmpuint(cfg.cnp_interval_ns, ==, 2000);
    g_assert_cmpstr(vhca_dcqcn_stage_name(VHCA_DCQCN_HYPER_INCREASE), ==,
                    "hyper-increase");
    g_assert_cmpstr(vhca_dcqcn_stage_name(99), ==, "unknown");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/dcqcn/paper-steps", test_paper_steps);
    g_test_add_func("/vhca/dcqcn/late-timer", test_late_timer);
    g_test_add_func("/vhca/dcqcn/byte-counter-hyper",
                    test_byte_counter_hyper);
    g_test_add_func("/vhca/dcqcn/alpha-decay", test_alpha_decay);
    g_test_add_func("/vhca/dcqcn/min-rate", test_min_rate);
    g_test_add_func("/vhca/dcqcn/min-dec-fac", test_min_dec_fac);
    g_test_add_func("/vhca/dcqcn/max-rate", test_max_rate);
    g_test_add_func("/vhca/dcqcn/monitor-period", test_monitor_period);
    g_test_add_func("/vhca/dcqcn/clamp-target", test_clamp_target);
    g_test_add_func("/vhca/dcqcn/bytes-unlimited", test_bytes_unlimited);
    g_test_add_func("/vhca/dcqcn/cnp-pacing", test_cnp_pacing);
    g_test_add_func("/vhca/dcqcn/pacer", test_pacer);
    g_test_add_func("/vhca/dcqcn/pacer-at-dcqcn-rate",
                    test_pacer_at_dcqcn_rate);
    g_test_add_func("/vhca/dcqcn/params", test_params);
    return g_test_run();
}
