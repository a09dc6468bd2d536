/*
 * vhca engine: RoCEv2 congestion control - DCQCN's reaction point (the
 * sender's per-QP rate), the pacing that holds a QP to that rate, and the
 * notification point's CNP pacing.
 *
 * DCQCN is Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015, section 3.1 (the algorithm; [DCQCN] below).
 * A switch marks packets CE (RFC 3168) instead of dropping them; the
 * receiver (notification point, NP) answers a marked packet with a CNP
 * (BTH OpCode VHCA_BTH_OPCODE_CNP) to the sending QP; the sender
 * (reaction point, RP) cuts its rate on a CNP and raises it again by
 * timer and byte counter.  The parameters and their units are those of
 * NVIDIA/Mellanox ConnectX devices (Linux mlx5's cc_params,
 * drivers/infiniband/hw/mlx5/cong.c), so that a guest's knobs mean what
 * they mean on real hardware.  docs/developer-guide.rst, "Congestion
 * control (DCQCN)", describes the state machine.
 *
 * Pure state machines: no QEMU, no globals, no timers of their own.  Time
 * is the caller's nanosecond clock, passed in.  Every entry point first
 * catches up with the timer events due by @now, each at its own time, so
 * the result does not depend on how late the caller comes: the caller
 * arms its timer for vhca_dcqcn_next_deadline() and calls
 * vhca_dcqcn_timer(), or simply calls any entry point when the QP next
 * has work.
 *
 * Units: rates in bytes per second; alpha in 1/1024 (1023 is 1.0, as
 * rp_initial_alpha_value is); times in nanoseconds.  The parameters keep
 * mlx5's units (Mbit/s, microseconds, percent) and are converted once, in
 * vhca_dcqcn_config_init().
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_DCQCN_H
#define HW_VHCA_DCQCN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* No deadline: the same value as the scheduler's VHCA_NO_DEADLINE. */
#define VHCA_DCQCN_NEVER            UINT64_MAX

/* Alpha is a fraction in 1/1024; at most 1023/1024. */
#define VHCA_DCQCN_ALPHA_ONE        1024
#define VHCA_DCQCN_ALPHA_MAX        1023

/* Bytes per second in one Mbit/s, the unit of the rate parameters. */
#define VHCA_DCQCN_MBPS             125000ull

/*
 * The parameters, named and in the units of mlx5's cc_params (the
 * rp_* / np_* files of debugfs mlx5/<dev>/cc_params; the firmware's
 * RPG_* / DCE_TCP_* / *_CNP* settings).  All are uint32_t, so that one
 * table (vhca_dcqcn_param_info) gives each its unit, default and range
 * (its name is the header's, vhca_cc_param_name());
 * vhca_dcqcn_params_default() fills in the defaults.
 */
typedef struct VhcaDcqcnParams {
    /* On a CNP, RT = RC always (1), or only after an increase (0). */
    uint32_t rp_clamp_tgt_rate;
    /* With rp_clamp_tgt_rate 0: a timer increase counts too (1). */
    uint32_t rp_clamp_tgt_rate_ati;
    uint32_t rp_time_reset;         /* us: the rate-increase timer */
    uint32_t rp_byte_reset;         /* bytes: the byte counter; 0 off */
    uint32_t rp_threshold;          /* F: increases per recovery stage */
    uint32_t rp_ai_rate;            /* Mbit/s: additive increase */
    uint32_t rp_max_rate;           /* Mbit/s; 0: the line rate */
    uint32_t rp_hai_rate;           /* Mbit/s: hyper increase */
    uint32_t rp_min_dec_fac;        /* %: a cut leaves at least this */
    uint32_t rp_min_rate;           /* Mbit/s: the floor */
    uint32_t rp_rate_to_set_on_first_cnp;   /* Mbit/s; 0: max rate */
    uint32_t rp_dce_tcp_g;          /* 1/1024: alpha's weight kept */
    uint32_t rp_dce_tcp_rtt;        /* us: the alpha update period */
    uint32_t rp_rate_reduce_monitor_period; /* us: one cut per period */
    uint32_t rp_initial_alpha_value;        /* 1/1024 */
    uint32_t rp_gd;                 /* a cut is RC * alpha / 2^rp_gd */
    uint32_t np_min_time_between_cnps;      /* us */
    uint32_t np_cnp_dscp;           /* the CNP's DSCP */
    uint32_t np_cnp_prio_mode;      /* 0: np_cnp_prio; 1: the packet's */
    uint32_t np_cnp_prio;           /* the CNP's 802.1Q PCP in mode 0 */
} VhcaDcqcnParams;

/*
 * One parameter: its unit, default and valid range; its name (mlx5's)
 * is vhca_dcqcn_param_name().
 */
typedef struct VhcaDcqcnParamInfo {
    const char *unit;
    size_t offset;                  /* of its uint32_t in VhcaDcqcnParams */
    uint32_t def;
    uint32_t min;
    uint32_t max;
} VhcaDcqcnParamInfo;

/* Every parameter, in VhcaDcqcnParams' order. */
extern const VhcaDcqcnParamInfo vhca_dcqcn_param_info[];
extern const size_t vhca_dcqcn_param_count;

/* The name of an entry of vhca_dcqcn_param_info: vhca_cc_param_name()'s. */
const char *vhca_dcqcn_param_name(const VhcaDcqcnParamInfo *info);

void vhca_dcqcn_params_default(VhcaDcqcnParams *params);

/*
 * NULL if every parameter is in its range, otherwise the first that is
 * not, with its value in *@value.
 */
const VhcaDcqcnParamInfo *
vhca_dcqcn_params_violation(const VhcaDcqcnParams *params, uint32_t *value);

/*
 * The parameters of one port in the units the state machines use.  One
 * per device, shared by its QPs and passed to every call, so that a
 * parameter change (or a link speed change) takes effect for all QPs at
 * once and the per-QP state holds no pointer.
 */
typedef struct VhcaDcqcnConfig {
    VhcaDcqcnParams params;         /* as given */
    uint64_t line_rate;             /* bytes/s */
    uint64_t max_rate;              /* line rate, or rp_max_rate below it */
    uint64_t min_rate;              /* rp_min_rate, at most max_rate */
    uint64_t first_cnp_rate;        /* rp_rate_to_set_on_first_cnp */
    uint64_t ai_rate;               /* bytes/s */
    uint64_t hai_rate;              /* bytes/s */
    uint64_t time_reset_ns;
    uint64_t alpha_period_ns;
    uint64_t monitor_period_ns;
    uint64_t cnp_interval_ns;
} VhcaDcqcnConfig;

/*
 * @line_rate in bytes/s, not 0.  Returns 0, or -1 if a parameter is out
 * of range (vhca_dcqcn_params_violation() says which) or @line_rate is 0;
 * @cfg is then unchanged.
 */
int vhca_dcqcn_config_init(VhcaDcqcnConfig *cfg,
                           const VhcaDcqcnParams *params, uint64_t line_rate);

/*
 * The reaction point's stage: what the last rate increase was ([DCQCN]
 * 3.1; fast recovery right after a cut).  UNLIMITED: no CNP yet, or the
 * rate is back at the maximum; nothing is paced and no timer runs.
 */
typedef enum VhcaDcqcnStage {
    VHCA_DCQCN_UNLIMITED,
    VHCA_DCQCN_FAST_RECOVERY,
    VHCA_DCQCN_ADDITIVE_INCREASE,
    VHCA_DCQCN_HYPER_INCREASE,
} VhcaDcqcnStage;

/* What a call did, for the caller's counters and trace events. */
enum {
    VHCA_DCQCN_EV_DECREASE      = 1u << 0,  /* RC was cut */
    VHCA_DCQCN_EV_DEFERRED      = 1u << 1,  /* the cut waits for the period */
    VHCA_DCQCN_EV_INCREASE      = 1u << 2,  /* RC (or RT) went up */
    VHCA_DCQCN_EV_RECOVERED     = 1u << 3,  /* back at max: UNLIMITED */
};

/*
 * One QP's reaction point.  The fields are the state [DCQCN] names (RC,
 * RT, alpha, T, BC) and the times of its three timers; the caller may
 * read them (introspection, migration) but changes them only through the
 * functions below.
 */
typedef struct VhcaDcqcn {
    uint64_t rc;                    /* current rate, bytes/s */
    uint64_t rt;                    /* target rate, bytes/s */
    uint16_t alpha;                 /* congestion estimate, 1/1024 */
    bool started;                   /* a CNP came: alpha's timer runs */
    bool limited;                   /* RC below max: rate timer, bytes */
    bool cnp_in_period;             /* a CNP since the last alpha update */
    bool decrease_pending;          /* a CNP waits for decrease_ok_ns */
    uint32_t timer_stage;           /* T: timer increases since the cut */
    uint32_t byte_stage;            /* BC: byte-counter increases */
    uint64_t byte_count;            /* bytes toward the next BC */
    uint64_t alpha_next_ns;         /* next alpha update */
    uint64_t increase_next_ns;      /* next timer increase, if limited */
    uint64_t decrease_ok_ns;        /* no cut before (monitor period) */
    uint32_t decreases;             /* cuts since init */
    uint32_t increases;             /* increase events since init */
} VhcaDcqcn;

/* A new QP's (or a reset one's): UNLIMITED at the maximum rate. */
void vhca_dcqcn_init(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg);

/*
 * A CNP for this QP arrived at @now.  The first cuts RC at once; another
 * within rp_rate_reduce_monitor_period of the last cut is folded into one
 * cut at the period's end (VHCA_DCQCN_EV_DEFERRED).  Returns
 * VHCA_DCQCN_EV_*.
 */
unsigned vhca_dcqcn_on_cnp(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                           uint64_t now);

/* The QP sent a packet of @bytes at @now: the byte counter. */
unsigned vhca_dcqcn_on_sent(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                            uint32_t bytes, uint64_t now);

/* Run the timer events due by @now (each at its own time). */
unsigned vhca_dcqcn_timer(VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg,
                          uint64_t now);

/*
 * The next time a timer event changes the rate (a deferred cut or a
 * timer increase), VHCA_DCQCN_NEVER if none.  Alpha's own updates are
 * not deadlines: alpha is read only at a cut, and is caught up then.
 */
uint64_t vhca_dcqcn_next_deadline(const VhcaDcqcn *rp);

/* The rate to pace the QP at, bytes/s (the maximum when UNLIMITED). */
uint64_t vhca_dcqcn_rate(const VhcaDcqcn *rp, const VhcaDcqcnConfig *cfg);

VhcaDcqcnStage vhca_dcqcn_stage(const VhcaDcqcn *rp,
                                const VhcaDcqcnConfig *cfg);
/* "unlimited", "fast-recovery", "additive-increase", "hyper-increase". */
const char *vhca_dcqcn_stage_name(VhcaDcqcnStage stage);

/*
 * Pacing: "next send time".  A QP may start a packet once @now reaches
 * next_ns; sending it moves next_ns on by the packet's time at the rate.
 * An idle QP saves up at most @burst bytes' worth of time, a token bucket
 * of that depth.  The remainder of each packet's time below a nanosecond
 * is carried over, so the long-run rate is exact.
 */
typedef struct VhcaPacer {
    uint64_t next_ns;
    uint64_t rem;                   /* carried over, in 1/rem_rate ns */
    uint64_t rem_rate;              /* the rate rem was computed at */
} VhcaPacer;

void vhca_pacer_init(VhcaPacer *pacer);

/* When the next packet may start: at or after now it may go. */
static inline uint64_t vhca_pacer_next(const VhcaPacer *pacer)
{
    return pacer->next_ns;
}

/*
 * A packet of @bytes started at @now, at @rate bytes/s (0: unpaced).
 * @burst: the bytes an idle QP may send back to back.
 */
void vhca_pacer_sent(VhcaPacer *pacer, uint64_t now, uint32_t bytes,
                     uint64_t rate, uint32_t burst);

/*
 * The notification point of one QP: at most one CNP per
 * np_min_time_between_cnps.
 */
typedef struct VhcaCnpPacer {
    uint64_t next_ok_ns;            /* no CNP before this */
} VhcaCnpPacer;

void vhca_np_init(VhcaCnpPacer *np);

/*
 * A CE-marked packet for the QP arrived at @now: true if a CNP is to be
 * sent for it now (and counts it as sent), false if one went less than
 * np_min_time_between_cnps ago.
 */
bool vhca_np_should_send_cnp(VhcaCnpPacer *np, const VhcaDcqcnConfig *cfg,
                             uint64_t now);

#endif /* HW_VHCA_DCQCN_H */
