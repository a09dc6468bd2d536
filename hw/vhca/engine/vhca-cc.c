/*
 * vhca engine: RoCEv2 congestion control in the data path
 * (docs/specs/vhca.rst, "Congestion control") - the SET_CC and QUERY_CC
 * commands, the notification point that answers CE-marked packets with
 * CNPs, and the reaction point that takes CNPs in and cuts the QP's rate.
 * The state machines themselves are vhca-dcqcn.c's; this file ties them
 * to the QPs, the wire and the counters.
 *
 * ECN is RFC 3168; the CNP is RoCEv2's (IBTA Vol 1 annex A17.9.3): a
 * BTH with OpCode 0x81, DestQP the QP whose packet was marked, BECN set,
 * then 16 reserved bytes and the ICRC; the notification point sends at
 * most one per QP per np_min_time_between_cnps (A17.9.2, mlx5's
 * DCE_CNP interval).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

/*
 * The port's line rate for DCQCN's maximum: QUERY_PORT reports EDR
 * (25 Gb/s) at width 1X on the Ethernet port.
 */
#define VHCA_CC_LINE_RATE       (25000ull * VHCA_DCQCN_MBPS)

/* A CNP's payload: 16 reserved bytes (A17.9.3). */
#define VHCA_CC_CNP_PAYLOAD     16

/*
 * Bytes a paced QP may send back to back after a pause: one packet at the
 * largest path MTU (4096) with the largest RoCE headers it counts (IPv6,
 * UDP, BTH, 28 bytes of AtomicETH or RETH + ImmDt, ICRC), so that a QP
 * that waited a while saves up the time of one packet and no more.  The
 * Ethernet MTU (VHCA_MAX_MTU) is not it: RoCE packets stop at 4096.
 */
#define VHCA_CC_BURST           (4096 + 40 + 8 + VHCA_IB_BTH_LEN + 28 + \
                                 VHCA_IB_ICRC_LEN)

#define VHCA_CC_FLAGS_ALL       (VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP)

/* The wire's parameter ids are VhcaDcqcnParams' fields, in order. */
#define CC_PARAM_AT(id, field)                                              \
    _Static_assert(offsetof(VhcaDcqcnParams, field) ==                      \
                   VHCA_CC_PARAM_##id * sizeof(uint32_t),                   \
                   "VHCA_CC_PARAM_" #id " is " #field)
CC_PARAM_AT(RP_CLAMP_TGT_RATE, rp_clamp_tgt_rate);
CC_PARAM_AT(RP_CLAMP_TGT_RATE_ATI, rp_clamp_tgt_rate_ati);
CC_PARAM_AT(RP_TIME_RESET, rp_time_reset);
CC_PARAM_AT(RP_BYTE_RESET, rp_byte_reset);
CC_PARAM_AT(RP_THRESHOLD, rp_threshold);
CC_PARAM_AT(RP_AI_RATE, rp_ai_rate);
CC_PARAM_AT(RP_MAX_RATE, rp_max_rate);
CC_PARAM_AT(RP_HAI_RATE, rp_hai_rate);
CC_PARAM_AT(RP_MIN_DEC_FAC, rp_min_dec_fac);
CC_PARAM_AT(RP_MIN_RATE, rp_min_rate);
CC_PARAM_AT(RP_RATE_TO_SET_ON_FIRST_CNP, rp_rate_to_set_on_first_cnp);
CC_PARAM_AT(RP_DCE_TCP_G, rp_dce_tcp_g);
CC_PARAM_AT(RP_DCE_TCP_RTT, rp_dce_tcp_rtt);
CC_PARAM_AT(RP_RATE_REDUCE_MONITOR_PERIOD, rp_rate_reduce_monitor_period);
CC_PARAM_AT(RP_INITIAL_ALPHA_VALUE, rp_initial_alpha_value);
CC_PARAM_AT(RP_GD, rp_gd);
CC_PARAM_AT(NP_MIN_TIME_BETWEEN_CNPS, np_min_time_between_cnps);
CC_PARAM_AT(NP_CNP_DSCP, np_cnp_dscp);
CC_PARAM_AT(NP_CNP_PRIO_MODE, np_cnp_prio_mode);
CC_PARAM_AT(NP_CNP_PRIO, np_cnp_prio);
_Static_assert(VHCA_CC_PARAM_MAX * sizeof(uint32_t) ==
               sizeof(VhcaDcqcnParams), "one VHCA_CC_PARAM_* per parameter");

void vhca_cc_qp_init(VhcaCore *core, VhcaQp *qp)
{
    vhca_dcqcn_init(&qp->rp, &core->cc);
    vhca_pacer_init(&qp->pacer);
    /* Not waiting for a rate it no longer has (the pass syncs the heap). */
    qp->pace_ns = VHCA_NO_DEADLINE;
    qp->cnps_handled = 0;
    vhca_np_init(&qp->np);
}

void vhca_cc_reset(VhcaCore *core)
{
    VhcaDcqcnParams params;

    /* Off, as a device that never heard of SET_CC behaves. */
    core->cc_flags = 0;
    memset(core->cc_counters, 0, sizeof(core->cc_counters));
    vhca_pfc_reset(core);
    vhca_dcqcn_params_default(&params);
    if (vhca_dcqcn_config_init(&core->cc, &params, VHCA_CC_LINE_RATE)) {
        /* The defaults are in range: cannot happen. */
        memset(&core->cc, 0, sizeof(core->cc));
    }
}

static void vhca_cc_params_from_wire(const uint8_t *raw,
                                     VhcaDcqcnParams *params)
{
    uint32_t *p = (uint32_t *)params;
    const uint8_t *in = raw + offsetof(struct vhca_cc_config, params);
    unsigned i;

    for (i = 0; i < VHCA_CC_PARAM_MAX; i++) {
        p[i] = vhca_ld_le32(in + 4 * i);
    }
}

uint8_t vhca_cmd_set_cc(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_cc_config)];
    const VhcaDcqcnParamInfo *bad;
    VhcaDcqcnParams params;
    VhcaDcqcnConfig cfg;
    uint32_t flags, value, qpn;
    uint8_t status;
    unsigned i;

    status = vhca_cmd_mailbox_read_flags(core, ctx, raw, sizeof(raw),
                                         offsetof(struct vhca_cc_config,
                                                  flags),
                                         VHCA_CC_FLAGS_ALL, &flags);
    if (status != VHCA_ST_OK) {
        return status;
    }
    /* Reserved bytes beside pfc_enable: a newer driver's, refused. */
    for (i = offsetof(struct vhca_cc_config, rsvd0);
         i < offsetof(struct vhca_cc_config, params); i++) {
        if (raw[i]) {
            ctx->syndrome = i;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "reserved byte %u of the configuration "
                                 "is 0x%x", i, raw[i]);
        }
    }
    vhca_cc_params_from_wire(raw, &params);
    bad = vhca_dcqcn_params_violation(&params, &value);
    if (bad || vhca_dcqcn_config_init(&cfg, &params, VHCA_CC_LINE_RATE)) {
        ctx->syndrome = bad ? (uint32_t)(bad - vhca_dcqcn_param_info) : 0;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "%s %u outside %u..%u",
                             bad ? vhca_dcqcn_param_name(bad) : "parameter",
                             value,
                             bad ? bad->min : 0, bad ? bad->max : 0);
    }
    core->cc_flags = flags;
    core->cc = cfg;
    vhca_pfc_set_enable(core, raw[offsetof(struct vhca_cc_config,
                                           pfc_enable)]);
    /*
     * Every QP starts over at the new maximum: a rate cut under the old
     * parameters (or with the reaction point now off) must not linger.
     */
    for (qpn = vhca_ids_next(&core->qp_ids, 0); qpn;
         qpn = vhca_ids_next(&core->qp_ids, qpn + 1)) {
        vhca_cc_qp_init(core, &core->qps[qpn]);
        vhca_sched_kick(core, qpn);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_query_cc(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_cc_query)];
    const uint32_t *p = (const uint32_t *)&core->cc.params;
    uint8_t *out = raw + offsetof(struct vhca_cc_query, config.params);
    uint8_t *cnt = raw + offsetof(struct vhca_cc_query, counters);
    uint8_t *pfc = raw + offsetof(struct vhca_cc_query, pfc);
    unsigned i;

    memset(raw, 0, sizeof(raw));
    vhca_st_le32(raw + offsetof(struct vhca_cc_query, config.flags),
                 core->cc_flags);
    for (i = 0; i < VHCA_CC_PARAM_MAX; i++) {
        vhca_st_le32(out + 4 * i, p[i]);
    }
    for (i = 0; i < VHCA_CC_CNT_MAX; i++) {
        vhca_st_le64(cnt + 8 * i, core->cc_counters[i]);
    }
    raw[offsetof(struct vhca_cc_query, config.pfc_enable)] = core->pfc.enable;
    for (i = 0; i < VHCA_PFC_CNT_MAX * VHCA_PFC_PRIORITIES; i++) {
        vhca_st_le64(pfc + 8 * i,
                     vhca_pfc_counter(core, i / VHCA_PFC_PRIORITIES,
                                      (uint8_t)(i % VHCA_PFC_PRIORITIES)));
    }
    vhca_st_le64(raw + offsetof(struct vhca_cc_query, pfc_dropped),
                 core->pfc.dropped);
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        if (vhca_pfc_paused(core, (uint8_t)i, vhca_now(core))) {
            raw[offsetof(struct vhca_cc_query, pfc_paused)] |=
                (uint8_t)(1u << i);
        }
    }
    return vhca_cmd_mailbox_write(core, ctx, raw, sizeof(raw));
}

/*
 * Where a CNP for @pkt, received by @qp, goes: RC, UC and XRC to the
 * QP's remote QP on its path; UD to the datagram's source QP, back the
 * way it came.  False for QPs that have no sender to tell.
 */
static bool vhca_cc_cnp_path(const VhcaCore *core, const VhcaQp *qp,
                             const VhcaWirePacket *pkt, VhcaPath *path)
{
    int index;

    switch (qp->type) {
    case VHCA_QPT_RC:
    case VHCA_QPT_UC:
    case VHCA_QPT_XRC_TGT:
        *path = qp->path;
        return true;
    case VHCA_QPT_UD:
        /* Back from the entry (and VLAN) the datagram came to. */
        index = vhca_gid_rx_index(core, pkt);
        if (index < 0) {
            return false;           /* multicast: no one sender */
        }
        memset(path, 0, sizeof(*path));
        memcpy(path->dgid, pkt->net.sgid, VHCA_GID_LEN);
        memcpy(path->dmac, pkt->net.smac, VHCA_ETH_ALEN);
        path->sgid_index = (uint8_t)index;
        path->hop_limit = 64;
        path->dest_qpn = pkt->tp.deth.src_qpn;
        return true;
    default:
        return false;
    }
}

void vhca_cc_rx_marked(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                       const VhcaWirePacket *pkt)
{
    VhcaPath path;

    if (!(core->cc_flags & VHCA_CC_NP) ||
        !vhca_cc_cnp_path(core, qp, pkt, &path) ||
        !vhca_np_should_send_cnp(&qp->np, &core->cc, vhca_now(core))) {
        return;
    }
    /*
     * The CNP goes out from the QP's next pass (vhca-cnp.c), not from
     * the receive path: transmission may loop back into it.  Its
     * priority in np_cnp_prio_mode 1 is the marked packet's.
     */
    path.sl = vhca_frame_vlan_priority(pkt);
    qp->cnp_path = path;
    qp->cnp_pending = true;
    vhca_sched_kick(core, qpn);
}

/* The QP's rate changed (@ev: VHCA_DCQCN_EV_*): count, trace, repace. */
static void vhca_cc_rate_changed(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                 unsigned ev)
{
    if (ev & VHCA_DCQCN_EV_DECREASE) {
        core->cc_counters[VHCA_CC_CNT_RP_RATE_DECREASES]++;
    }
    if (ev & (VHCA_DCQCN_EV_DECREASE | VHCA_DCQCN_EV_INCREASE |
              VHCA_DCQCN_EV_RECOVERED)) {
        VHCA_HOOK(core, cc_rate, qpn, vhca_dcqcn_rate(&qp->rp, &core->cc),
                  qp->rp.rt, qp->rp.alpha,
                  (uint8_t)vhca_dcqcn_stage(&qp->rp, &core->cc));
    }
}

/*
 * The reaction point's rate at work in the requester ([DCQCN] 3.1: the
 * RP sends at RC).  DCQCN's timers are caught up lazily, here, when the
 * QP next wants to send: vhca_dcqcn_timer() runs each event at its own
 * time, so a late call changes nothing.  An UNLIMITED QP is not paced.
 */
bool vhca_cc_may_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    uint64_t now = vhca_now(core);

    if (!(core->cc_flags & VHCA_CC_RP) || !qp->rp.started) {
        return true;
    }
    vhca_cc_rate_changed(core, qpn, qp,
                         vhca_dcqcn_timer(&qp->rp, &core->cc, now));
    if (vhca_dcqcn_stage(&qp->rp, &core->cc) == VHCA_DCQCN_UNLIMITED ||
        vhca_pacer_next(&qp->pacer) <= now) {
        return true;
    }
    qp->pace_ns = vhca_pacer_next(&qp->pacer);
    return false;
}

void vhca_cc_sent(VhcaCore *core, uint32_t qpn, VhcaQp *qp, uint64_t bytes)
{
    uint64_t now = vhca_now(core);
    bool limited;
    uint32_t b = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;

    if (!(core->cc_flags & VHCA_CC_RP) || !qp->rp.started || !b) {
        return;
    }
    limited = vhca_dcqcn_stage(&qp->rp, &core->cc) != VHCA_DCQCN_UNLIMITED;
    vhca_pacer_sent(&qp->pacer, now, b,
                    limited ? vhca_dcqcn_rate(&qp->rp, &core->cc) : 0,
                    VHCA_CC_BURST);
    vhca_cc_rate_changed(core, qpn, qp,
                         vhca_dcqcn_on_sent(&qp->rp, &core->cc, b, now));
}

void vhca_cc_rx_cnp(VhcaCore *core, const VhcaWirePacket *pkt)
{
    uint32_t qpn = pkt->tp.bth.dest_qpn;
    unsigned ev;
    VhcaQp *qp;

    /* InfiniBand signals congestion with FECN/BECN, not with CNPs. */
    if (pkt->link != VHCA_WIRE_LINK_ROCE ||
        pkt->payload_len != VHCA_CC_CNP_PAYLOAD || pkt->tp.bth.pad) {
        vhca_rx_drop(core, VHCA_DROP_MALFORMED, qpn);
        return;
    }
    qp = vhca_qp_lookup(core, qpn);
    /* Only a QP that sends has a rate to cut (A17.9.2). */
    if (!qp || qp->type == VHCA_QPT_XRC_TGT ||
        (vhca_qp_is_datagram(qp) && qp->type != VHCA_QPT_UD)) {
        vhca_rx_drop(core, VHCA_DROP_NO_QP, qpn);
        return;
    }
    if (!(core->cc_flags & VHCA_CC_RP)) {
        core->cc_counters[VHCA_CC_CNT_RP_CNP_IGNORED]++;
        VHCA_HOOK(core, cc_cnp_rcvd, qpn, false);
        return;
    }
    core->cc_counters[VHCA_CC_CNT_RP_CNP_HANDLED]++;
    if (qp->cnps_handled < UINT32_MAX) {
        qp->cnps_handled++;
    }
    VHCA_HOOK(core, cc_cnp_rcvd, qpn, true);
    ev = vhca_dcqcn_on_cnp(&qp->rp, &core->cc, vhca_now(core));
    vhca_cc_rate_changed(core, qpn, qp, ev);
    /* A deferred cut has a deadline now: the scheduler must know it. */
    vhca_sched_kick(core, qpn);
}
