/*
 * vhca engine: DCQCN's reaction point, pacing, and the notification
 * point's CNP pacing (vhca-dcqcn.h; docs/developer-guide.rst, "Congestion
 * control (DCQCN)").
 *
 * [DCQCN]: Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015, section 3.1.  Where the paper leaves the
 * details to the NIC, this follows ConnectX's parameters (mlx5 cc_params)
 * and the meaning Linux gives the same names in include/uapi/linux/
 * dcbnl.h (struct ieee_qcn: rpg_time_reset, rpg_byte_reset,
 * rpg_threshold, rpg_ai_rate, rpg_hai_rate, rpg_min_dec_fac, rpg_gd).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-dcqcn.h"
#include "vhca_hw.h"

#define NS_PER_US               1000ull
#define NS_PER_S                1000000000ull

/*
 * The largest line rate: UINT32_MAX Mbit/s, the largest rp_max_rate, so
 * that RC * alpha and RC * 100 fit in 64 bits.
 */
#define VHCA_DCQCN_MAX_LINE_RATE    (UINT32_MAX * VHCA_DCQCN_MBPS)

/*
 * Defaults: the ConnectX firmware's (mlxconfig RPG_*, DCE_TCP_*,
 * *_CNP* settings), which mlx5's cc_params read back.  [DCQCN]'s own
 * choices differ in places (F = 5, g = 1/256, a 55 us timer, CNPs every
 * 50 us); the unit tests set those where they check the paper.
 */
/*
 * In the order of the header's enum vhca_cc_param, which is the wire's
 * (struct vhca_cc_config) and VhcaDcqcnParams': the names are the
 * header's (vhca_cc_param_name()), defined once for the driver's devlink
 * parameters and the engine's messages.
 */
#define PARAM(field, unit, def, min, max) \
    { unit, offsetof(VhcaDcqcnParams, field), def, min, max }

const VhcaDcqcnParamInfo vhca_dcqcn_param_info[] = {
    PARAM(rp_clamp_tgt_rate, "bool", 0, 0, 1),
    PARAM(rp_clamp_tgt_rate_ati, "bool", 1, 0, 1),
    PARAM(rp_time_reset, "us", 300, 1, UINT32_MAX),
    PARAM(rp_byte_reset, "bytes", 32767, 0, UINT32_MAX),
    /* Bounded so that catching up costs at most a few hundred steps. */
    PARAM(rp_threshold, "increases", 1, 0, 255),
    PARAM(rp_ai_rate, "Mbit/s", 5, 0, UINT32_MAX),
    PARAM(rp_max_rate, "Mbit/s", 0, 0, UINT32_MAX),
    PARAM(rp_hai_rate, "Mbit/s", 50, 0, UINT32_MAX),
    PARAM(rp_min_dec_fac, "%", 50, 0, 100),
    /* Not 0: a rate of 0 would never send again. */
    PARAM(rp_min_rate, "Mbit/s", 1, 1, UINT32_MAX),
    PARAM(rp_rate_to_set_on_first_cnp, "Mbit/s", 0, 0, UINT32_MAX),
    PARAM(rp_dce_tcp_g, "1/1024", 1019, 0, VHCA_DCQCN_ALPHA_MAX),
    PARAM(rp_dce_tcp_rtt, "us", 1, 1, UINT32_MAX),
    PARAM(rp_rate_reduce_monitor_period, "us", 4, 0, UINT32_MAX),
    PARAM(rp_initial_alpha_value, "1/1024", VHCA_DCQCN_ALPHA_MAX, 0,
          VHCA_DCQCN_ALPHA_MAX),
    PARAM(rp_gd, "log2", 11, 0, 31),
    PARAM(np_min_time_between_cnps, "us", 2, 0, UINT32_MAX),
    PARAM(np_cnp_dscp, "DSCP", 48, 0, 63),
    PARAM(np_cnp_prio_mode, "mode", 1, 0, 1),
    PARAM(np_cnp_prio, "PCP", 6, 0, 7),
};

const size_t vhca_dcqcn_param_count =
    sizeof(vhca_dcqcn_param_info) / sizeof(vhca_dcqcn_param_info[0]);

_Static_assert(sizeof(vhca_dcqcn_param_info) /
               sizeof(vhca_dcqcn_param_info[0]) * sizeof(uint32_t) ==
               sizeof(VhcaDcqcnParams),
               "one vhca_dcqcn_param_info entry per parameter");
_Static_assert(sizeof(vhca_dcqcn_param_info) /
               sizeof(vhca_dcqcn_param_info[0]) == VHCA_CC_PARAM_MAX,
               "one vhca_dcqcn_param_info entry per enum vhca_cc_param");

const char *vhca_dcqcn_param_name(const VhcaDcqcnParamInfo *info)
{
    return vhca_cc_param_name((unsigned)(info - vhca_dcqcn_param_info));
}

static uint32_t *vhca_dcqcn_param(VhcaDcqcnParams *params,
                                  const VhcaDcqcnParamInfo *info)
{
    return (uint32_t *)((char *)params + info->offset);
}

static uint32_t vhca_dcqcn_param_value(const VhcaDcqcnParams *params,
                                       const VhcaDcqcnParamInfo *info)
{
    return *(const uint32_t *)((const char *)params + info->offset);
}

void vhca_dcqcn_params_default(VhcaDcqcnParams *params)
{
    size_t i;

    for (i = 0; i < vhca_dcqcn_param_count; i++) {
        *vhca_dcqcn_param(params, &vhca_dcqcn_param_info[i]) =
            vhca_dcqcn_param_info[i].def;
    }
}

const VhcaDcqcnParamInfo *
vhca_dcqcn_params_violation(const VhcaDcqcnParams *params, uint32_t *value)
{
    size_t i;

    for (i = 0; i < vhca_dcqcn_param_count; i++) {
        const VhcaDcqcnParamInfo *info = &vhca_dcqcn_param_info[i];
        uint32_t v = vhca_dcqcn_param_value(params, info);

        if (v < info->min || v > info->max) {
            *value = v;
            return info;
        }
    }
    return NULL;
}

static uint64_t vhca_dcqcn_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Deadlines saturate at VHCA_DCQCN_NEVER rather than wrap. */
static uint64_t vhca_dcqcn_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void vhca_dcqcn_count(uint32_t *stage)
{
    if (*stage != UINT32_MAX) {
        (*stage)++;
    }
}

int vhca_dcqcn_config_init(VhcaDcqcnConfig *cfg,
                           const VhcaDcqcnParams *params, uint64_t line_rate)
{
    VhcaDcqcnConfig c;
    uint32_t value;

    if (!line_rate || line_rate > VHCA_DCQCN_MAX_LINE_RATE ||
        vhca_dcqcn_params_violation(params, &value)) {
        return -1;
    }
    memset(&c, 0, sizeof(c));
    c.params = *params;
    c.line_rate = line_rate;
    c.max_rate = line_rate;
    if (params->rp_max_rate) {
        c.max_rate = vhca_dcqcn_min(line_rate,
                                    params->rp_max_rate * VHCA_DCQCN_MBPS);
    }
    c.min_rate = vhca_dcqcn_min(params->rp_min_rate * VHCA_DCQCN_MBPS,
                                c.max_rate);
    c.first_cnp_rate = c.max_rate;
    if (params->rp_rate_to_set_on_first_cnp) {
        c.first_cnp_rate = vhca_dcqcn_min(
            params->rp_rate_to_set_on_first_cnp * VHCA_DCQCN_MBPS,
            c.max_rate);
        if (c.first_cnp_rate < c.min_rate) {
            c.first_cnp_rate = c.min_rate;
        }
    }
    c.ai_rate = params->rp_ai_rate * VHCA_DCQCN_MBPS;
    c.hai_rate = params->rp_hai_rate * VHCA_DCQCN_MBPS;
    c.time_reset_ns = params->rp_time_reset * NS_PER_US;
    c.alpha_period_ns = params->rp_dce_tcp_rtt * NS_PER_US;
    c.monitor_period_ns = params->rp_rate_reduce_monitor_period * NS_PER_US;
    c.cnp_interval_ns = params->np_min_time_between_cnps * NS_PER_US;
    *cfg = c;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Reaction point                                                         */
/* ---------------------------------------------------------------------- */

void vhca_dcqcn_init(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg)
{
    memset(rp, 0, sizeof(*rp));
    rp->rc = rp->rt = cfg->max_rate;
    rp->alpha = cfg->params.rp_initial_alpha_value;
    rp->alpha_next_ns = VHCA_DCQCN_NEVER;
    rp->increase_next_ns = VHCA_DCQCN_NEVER;
}

/*
 * The stage of an increase, from the timer's and the byte counter's
 * counts since the last cut, this increase included ([DCQCN] 3.1, after
 * QCN): fast recovery while neither has passed F = rp_threshold, hyper
 * increase once both have, additive increase in between.
 */
static VhcaDcqcnStage vhca_dcqcn_stage_of(uint32_t t, uint32_t bc,
                                          uint32_t f)
{
    uint32_t most = t > bc ? t : bc;
    uint32_t least = t < bc ? t : bc;

    if (most <= f) {
        return VHCA_DCQCN_FAST_RECOVERY;
    }
    return least > f ? VHCA_DCQCN_HYPER_INCREASE
                     : VHCA_DCQCN_ADDITIVE_INCREASE;
}

VhcaDcqcnStage vhca_dcqcn_stage(const VhcaDcqcn *rp,
                                const VhcaDcqcnConfig *cfg)
{
    if (!rp->limited) {
        return VHCA_DCQCN_UNLIMITED;
    }
    return vhca_dcqcn_stage_of(rp->timer_stage, rp->byte_stage,
                               cfg->params.rp_threshold);
}

const char *vhca_dcqcn_stage_name(VhcaDcqcnStage stage)
{
    static const char *const names[] = {
        [VHCA_DCQCN_UNLIMITED]          = "unlimited",
        [VHCA_DCQCN_FAST_RECOVERY]      = "fast-recovery",
        [VHCA_DCQCN_ADDITIVE_INCREASE]  = "additive-increase",
        [VHCA_DCQCN_HYPER_INCREASE]     = "hyper-increase",
    };

    return (unsigned)stage < sizeof(names) / sizeof(names[0])
           ? names[stage] : "unknown";
}

/*
 * A parameter or line rate change may have lowered the maximum, or
 * raised it under a QP that is not limited.
 */
static void vhca_dcqcn_clamp(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg)
{
    if (!rp->limited) {
        rp->rc = rp->rt = cfg->max_rate;
        return;
    }
    rp->rt = vhca_dcqcn_min(rp->rt, cfg->max_rate);
    rp->rc = vhca_dcqcn_min(rp->rc, rp->rt);
}

/*
 * Alpha's updates due by @now.  [DCQCN] 3.1 updates alpha = (1 - g) alpha
 * + g on a CNP (eq. 1) and alpha = (1 - g) alpha after each K without one
 * (eq. 2); ConnectX does both once per rp_dce_tcp_rtt (the paper's K),
 * adding g's term if a CNP came in that period.  In 1/1024, with
 * rp_dce_tcp_g the weight alpha keeps (the paper's 1 - g):
 *
 *   alpha = alpha * rp_dce_tcp_g / 1024 + (CNP ? 1024 - rp_dce_tcp_g : 0)
 *
 * at most VHCA_DCQCN_ALPHA_MAX.  Without CNPs alpha only falls, so
 * catching up on a long quiet spell ends once it reaches 0 (at most about
 * a thousand steps); the periods are then skipped in one.
 */
static void vhca_dcqcn_alpha_catch_up(VhcaDcqcn *rp,
                                      const VhcaDcqcnConfig *cfg,
                                      uint64_t now)
{
    uint64_t period = cfg->alpha_period_ns;
    uint32_t keep = cfg->params.rp_dce_tcp_g;
    uint64_t updates, alpha;

    if (!rp->started || rp->alpha_next_ns > now) {
        return;
    }
    updates = (now - rp->alpha_next_ns) / period + 1;
    rp->alpha_next_ns = vhca_dcqcn_add(
        now - (now - rp->alpha_next_ns) % period, period);

    alpha = (uint64_t)rp->alpha * keep / VHCA_DCQCN_ALPHA_ONE;
    if (rp->cnp_in_period) {
        alpha = vhca_dcqcn_min(alpha + VHCA_DCQCN_ALPHA_ONE - keep,
                               VHCA_DCQCN_ALPHA_MAX);
    }
    rp->cnp_in_period = false;
    while (--updates && alpha) {
        alpha = alpha * keep / VHCA_DCQCN_ALPHA_ONE;
    }
    rp->alpha = alpha;
}

/*
 * After a cut the rate recovers from scratch: both counters and the
 * timer restart ([DCQCN] 3.1), and the next cut waits for the monitor
 * period (ConnectX's rp_rate_reduce_monitor_period).
 */
static unsigned vhca_dcqcn_cut_done(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                                    uint64_t at)
{
    rp->limited = true;
    rp->decrease_pending = false;
    rp->timer_stage = rp->byte_stage = 0;
    rp->byte_count = 0;
    rp->increase_next_ns = vhca_dcqcn_add(at, cfg->time_reset_ns);
    rp->decrease_ok_ns = vhca_dcqcn_add(at, cfg->monitor_period_ns);
    vhca_dcqcn_count(&rp->decreases);
    return VHCA_DCQCN_EV_DECREASE;
}

/*
 * The cut of [DCQCN] 3.1 eq. 1, RT = RC and RC = RC (1 - alpha / 2), in
 * ConnectX's terms: RC loses RC * alpha / 2^rp_gd (alpha in 1/1024, so
 * rp_gd 11 is the paper's alpha / 2), keeps at least rp_min_dec_fac
 * percent of itself, and stays at or above rp_min_rate.  RT takes RC's
 * value only if the rate went up since the last cut: by the byte
 * counter, or by the timer too with rp_clamp_tgt_rate_ati; always with
 * rp_clamp_tgt_rate, as the paper does.  Otherwise a second cut during
 * fast recovery keeps the older, higher target to recover to.
 */
static unsigned vhca_dcqcn_cut(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                               uint64_t at)
{
    const VhcaDcqcnParams *p = &cfg->params;
    uint64_t rc = rp->rc;
    uint64_t cut = vhca_dcqcn_min((rc * rp->alpha) >> p->rp_gd, rc);
    uint64_t keep = rc * p->rp_min_dec_fac / 100;
    uint64_t next = rc - cut;

    if (next < keep) {
        next = keep;
    }
    if (next < cfg->min_rate) {
        /* A floor raised above RC since does not raise RC. */
        next = vhca_dcqcn_min(cfg->min_rate, rc);
    }
    if (p->rp_clamp_tgt_rate || rp->byte_stage ||
        (p->rp_clamp_tgt_rate_ati && rp->timer_stage)) {
        rp->rt = rc;
    }
    rp->rc = next;
    return vhca_dcqcn_cut_done(rp, cfg, at);
}

/*
 * One increase ([DCQCN] 3.1, eqs. 3 and 4): fast recovery halves the
 * distance to RT; additive increase first raises RT by rp_ai_rate, hyper
 * increase by rp_hai_rate (a fixed step, as ConnectX's and dcbnl's
 * rpg_hai_rate is; QCN's growing i * R_HAI is not used).  RT stays at or
 * below the maximum.  The midpoint rounds up, so that RC reaches RT
 * rather than stopping a byte short.  Back at the maximum with nothing
 * pending, the QP is no longer limited: no timer, no pacing.
 */
static unsigned vhca_dcqcn_increase(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg)
{
    uint64_t rt = rp->rt;
    unsigned ev = 0;
    uint64_t rc;

    switch (vhca_dcqcn_stage_of(rp->timer_stage, rp->byte_stage,
                                cfg->params.rp_threshold)) {
    case VHCA_DCQCN_HYPER_INCREASE:
        rt += cfg->hai_rate;
        break;
    case VHCA_DCQCN_ADDITIVE_INCREASE:
        rt += cfg->ai_rate;
        break;
    default:
        break;
    }
    rt = vhca_dcqcn_min(rt, cfg->max_rate);
    rc = rp->rc + (rt - rp->rc + 1) / 2;
    if (rc != rp->rc || rt != rp->rt) {
        rp->rc = rc;
        rp->rt = rt;
        vhca_dcqcn_count(&rp->increases);
        ev = VHCA_DCQCN_EV_INCREASE;
    }
    if (rc == cfg->max_rate && !rp->decrease_pending) {
        rp->limited = false;
        rp->increase_next_ns = VHCA_DCQCN_NEVER;
        rp->byte_count = 0;
        ev |= VHCA_DCQCN_EV_RECOVERED;
    }
    return ev;
}

/*
 * The rate-increase timer expires (every rp_time_reset after a cut).  An
 * expiry that changes nothing once T is past F is followed only by more
 * of the same (the stage cannot change while BC stands still): those due
 * by @limit are counted in one step.  So a long catch-up costs the
 * increases that change the rate, at most (max - RT) / rp_ai_rate plus
 * the halvings to reach RT.
 */
static unsigned vhca_dcqcn_timer_expired(VhcaDcqcn *rp,
                                         const VhcaDcqcnConfig *cfg,
                                         uint64_t limit)
{
    uint64_t period = cfg->time_reset_ns;
    unsigned ev;
    uint64_t more;

    vhca_dcqcn_count(&rp->timer_stage);
    rp->increase_next_ns = vhca_dcqcn_add(rp->increase_next_ns, period);
    ev = vhca_dcqcn_increase(rp, cfg);
    if (ev || rp->timer_stage <= cfg->params.rp_threshold ||
        rp->increase_next_ns > limit) {
        return ev;
    }
    more = (limit - rp->increase_next_ns) / period + 1;
    rp->timer_stage = more >= UINT32_MAX - rp->timer_stage
                      ? UINT32_MAX : rp->timer_stage + (uint32_t)more;
    rp->increase_next_ns = vhca_dcqcn_add(
        limit - (limit - rp->increase_next_ns) % period, period);
    return 0;
}

/*
 * Every timer event due by @now, earliest first, each at its own time:
 * a deferred cut and the increase timer; alpha is brought up to each
 * event's time first.  At the same instant an increase goes before a
 * cut.
 */
static unsigned vhca_dcqcn_catch_up(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                                    uint64_t now)
{
    unsigned ev = 0;

    vhca_dcqcn_clamp(rp, cfg);
    for (;;) {
        uint64_t inc = rp->limited ? rp->increase_next_ns : VHCA_DCQCN_NEVER;
        uint64_t dec = rp->decrease_pending ? rp->decrease_ok_ns
                                            : VHCA_DCQCN_NEVER;
        uint64_t at = vhca_dcqcn_min(inc, dec);

        if (at == VHCA_DCQCN_NEVER || at > now) {
            break;
        }
        vhca_dcqcn_alpha_catch_up(rp, cfg, at);
        if (inc <= dec) {
            ev |= vhca_dcqcn_timer_expired(rp, cfg,
                                           vhca_dcqcn_min(now, dec));
        } else {
            ev |= vhca_dcqcn_cut(rp, cfg, at);
        }
    }
    vhca_dcqcn_alpha_catch_up(rp, cfg, now);
    return ev;
}

unsigned vhca_dcqcn_timer(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                          uint64_t now)
{
    return vhca_dcqcn_catch_up(rp, cfg, now);
}

/*
 * The first CNP starts the rate limiter and alpha's timer, alpha at
 * rp_initial_alpha_value ([DCQCN]: alpha starts at 1).  With
 * rp_rate_to_set_on_first_cnp the rate is simply set to it, as ConnectX
 * does; without, the first CNP cuts from the maximum like any other.
 * Later CNPs count for alpha's next update, and cut at once unless a cut
 * was less than the monitor period ago: then one cut follows when the
 * period ends, however many CNPs came in it.
 */
unsigned vhca_dcqcn_on_cnp(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                           uint64_t now)
{
    unsigned ev = vhca_dcqcn_catch_up(rp, cfg, now);

    if (!rp->started) {
        rp->started = true;
        rp->alpha = cfg->params.rp_initial_alpha_value;
        rp->alpha_next_ns = vhca_dcqcn_add(now, cfg->alpha_period_ns);
        rp->cnp_in_period = false;
        if (cfg->params.rp_rate_to_set_on_first_cnp) {
            rp->rc = rp->rt = cfg->first_cnp_rate;
            return ev | vhca_dcqcn_cut_done(rp, cfg, now);
        }
    } else {
        rp->cnp_in_period = true;
    }
    if (now < rp->decrease_ok_ns) {
        rp->decrease_pending = true;
        return ev | VHCA_DCQCN_EV_DEFERRED;
    }
    return ev | vhca_dcqcn_cut(rp, cfg, now);
}

/*
 * The byte counter: an increase every rp_byte_reset bytes sent while the
 * rate is limited ([DCQCN] 3.1).  As with the timer, once BC is past F
 * and an increase changes nothing, the rest change nothing either.
 */
unsigned vhca_dcqcn_on_sent(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                            uint32_t bytes, uint64_t now)
{
    unsigned ev = vhca_dcqcn_catch_up(rp, cfg, now);
    uint32_t reset = cfg->params.rp_byte_reset;

    if (!rp->limited || !reset) {
        return ev;
    }
    rp->byte_count += bytes;
    while (rp->limited && rp->byte_count >= reset) {
        unsigned step;

        rp->byte_count -= reset;
        vhca_dcqcn_count(&rp->byte_stage);
        step = vhca_dcqcn_increase(rp, cfg);
        if (!step && rp->byte_stage > cfg->params.rp_threshold) {
            uint64_t more = rp->byte_count / reset;

            rp->byte_stage = more >= UINT32_MAX - rp->byte_stage
                             ? UINT32_MAX : rp->byte_stage + (uint32_t)more;
            rp->byte_count %= reset;
            break;
        }
        ev |= step;
    }
    return ev;
}

uint64_t vhca_dcqcn_next_deadline(const VhcaDcqcn *rp)
{
    uint64_t next = rp->limited ? rp->increase_next_ns : VHCA_DCQCN_NEVER;

    if (rp->decrease_pending) {
        next = vhca_dcqcn_min(next, rp->decrease_ok_ns);
    }
    return next;
}

uint64_t vhca_dcqcn_rate(const VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg)
{
    return rp->limited ? vhca_dcqcn_min(rp->rc, cfg->max_rate)
                       : cfg->max_rate;
}

/* ---------------------------------------------------------------------- */
/* Pacing                                                                 */
/* ---------------------------------------------------------------------- */

void vhca_pacer_init(VhcaPacer *pacer)
{
    memset(pacer, 0, sizeof(*pacer));
}

void vhca_pacer_sent(VhcaPacer *pacer, uint64_t now, uint32_t bytes,
                     uint64_t rate, uint32_t burst)
{
    uint64_t start = pacer->next_ns;
    uint64_t saved, time;

    if (!rate) {
        pacer->next_ns = now;
        pacer->rem = 0;
        return;
    }
    if (rate != pacer->rem_rate) {
        pacer->rem = 0;
        pacer->rem_rate = rate;
    }
    /* Idle time counts for at most @burst bytes. */
    saved = (uint64_t)burst * NS_PER_S / rate;
    if (now > saved && start < now - saved) {
        start = now - saved;
        pacer->rem = 0;
    }
    /* bytes * 10^9 < 2^62 and rem < rate: no overflow. */
    time = (uint64_t)bytes * NS_PER_S + pacer->rem;
    pacer->next_ns = vhca_dcqcn_add(start, time / rate);
    pacer->rem = time % rate;
}

/* ---------------------------------------------------------------------- */
/* Notification point                                                     */
/* ---------------------------------------------------------------------- */

void vhca_np_init(VhcaCnpPacer *np)
{
    np->next_ok_ns = 0;
}

/*
 * [DCQCN] 3.1: the NP sends at most one CNP per N (50 us in the paper)
 * for a flow however many of its packets arrive marked;
 * np_min_time_between_cnps is ConnectX's N.
 */
bool vhca_np_should_send_cnp(VhcaCnpPacer *np, const VhcaDcqcnConfig *cfg,
                             uint64_t now)
{
    if (now < np->next_ok_ns) {
        return false;
    }
    np->next_ok_ns = vhca_dcqcn_add(now, cfg->cnp_interval_ns);
    return true;
}
