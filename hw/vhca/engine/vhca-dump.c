/*
 * vhca engine: the device's state as text, for people - what the
 * x-query-vhca QMP command and "info vhca" show (docs/user-guide.rst,
 * "Looking inside the device").
 *
 * One line per object, "<kind> <number> key value ...", in the manner of
 * iproute2's "rdma resource show", so a line can be grepped for and read
 * on its own.  Everything here only reads the engine's state.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vhca-rdma.h"
#include "vhca-wire.h"

/* Long enough for the longest QP line with every flag. */
#define VHCA_DUMP_LINE_MAX  512

typedef struct VhcaDump {
    VhcaDumpLine *line;
    void *opaque;
    char buf[VHCA_DUMP_LINE_MAX];
    size_t len;
} VhcaDump;

static void dump_add(VhcaDump *d, const char *fmt, ...) VHCA_PRINTF(2, 3);

static void dump_add(VhcaDump *d, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(d->buf + d->len, sizeof(d->buf) - d->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        d->len += (size_t)n;
        if (d->len >= sizeof(d->buf)) {
            d->len = sizeof(d->buf) - 1;    /* truncated */
        }
    }
}

static void dump_end(VhcaDump *d)
{
    d->buf[d->len] = '\0';
    d->line(d->opaque, d->buf);
    d->len = 0;
}

static const char *vhca_qp_type_name(uint8_t type)
{
    switch (type) {
    case VHCA_QPT_SMI:
        return "SMI";
    case VHCA_QPT_GSI:
        return "GSI";
    case VHCA_QPT_RC:
        return "RC";
    case VHCA_QPT_UC:
        return "UC";
    case VHCA_QPT_UD:
        return "UD";
    case VHCA_QPT_XRC_INI:
        return "XRC_INI";
    case VHCA_QPT_XRC_TGT:
        return "XRC_TGT";
    default:
        return "?";
    }
}

/* The names of enum ibv_wc_status without IBV_WC_. */
static const char *vhca_wc_status_name(uint8_t status)
{
    static const char *const names[] = {
        [VHCA_WC_SUCCESS] = "SUCCESS",
        [VHCA_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
        [VHCA_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
        [VHCA_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
        [VHCA_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
        [VHCA_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
        [VHCA_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
        [VHCA_WC_REM_OP_ERR] = "REM_OP_ERR",
        [VHCA_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
        [VHCA_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
    };

    if (status < sizeof(names) / sizeof(names[0]) && names[status]) {
        return names[status];
    }
    return "?";
}

/* IPv4-mapped GIDs as a.b.c.d, the others as eight groups of hex. */
static void dump_gid(VhcaDump *d, const uint8_t gid[VHCA_GID_LEN])
{
    static const uint8_t v4_prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
    };
    unsigned i;

    if (!memcmp(gid, v4_prefix, sizeof(v4_prefix))) {
        dump_add(d, "%u.%u.%u.%u", gid[12], gid[13], gid[14], gid[15]);
        return;
    }
    for (i = 0; i < VHCA_GID_LEN; i += 2) {
        dump_add(d, "%s%x", i ? ":" : "", vhca_ld_be16(gid + i));
    }
}

/* Names separated by '|' for the bits of @flags, or "none". */
static void dump_flags(VhcaDump *d, uint32_t flags,
                       const char *const *names, unsigned n)
{
    bool any = false;
    unsigned i;

    for (i = 0; i < n; i++) {
        if (flags & (1u << i)) {
            dump_add(d, "%s%s", any ? "|" : "", names[i]);
            any = true;
        }
    }
    if (!any) {
        dump_add(d, "none");
    }
}

/*
 * The IB port as the SM left it (IBTA 14.2.5.6 PortInfo, 14.2.5.7
 * P_KeyTable, 14.2.5.8 SL2VL): "ib-port state ACTIVE lid 0x1 lmc 0
 * sm-lid 0x1 sm-sl 0", the valid P_Keys by index, the SL2VL table.
 */
static void dump_ib_port(VhcaDump *d, const VhcaCore *core)
{
    static const char *const states[] = {
        [VHCA_PORT_DOWN] = "DOWN", [VHCA_PORT_INIT] = "INIT",
        [VHCA_PORT_ARMED] = "ARMED", [VHCA_PORT_ACTIVE] = "ACTIVE",
    };
    const VhcaIbPort *ib = &core->ib;
    unsigned i;

    dump_add(d, "ib-port state %s lid 0x%x lmc %u sm-lid 0x%x sm-sl %u "
             "gid-prefix 0x%016" PRIx64,
             ib->state >= VHCA_PORT_DOWN && ib->state <= VHCA_PORT_ACTIVE ?
             states[ib->state] : "?", ib->lid, ib->lmc, ib->sm_lid,
             ib->sm_sl, ib->gid_prefix);
    dump_add(d, " violations m_key %u p_key %u q_key %u",
             ib->mkey_violations, ib->pkey_violations, ib->qkey_violations);
    dump_end(d);
    dump_add(d, "pkeys");
    for (i = 0; i < VHCA_IB_PKEY_TBL_LEN; i++) {
        if (ib->pkeys[i] & 0x7fff) {
            dump_add(d, " %u:0x%04x", i, ib->pkeys[i]);
        }
    }
    dump_end(d);
    dump_add(d, "sl2vl");
    for (i = 0; i < 16; i++) {
        dump_add(d, " %u", ib->sl2vl[i]);
    }
    dump_end(d);
}

static void dump_device(VhcaDump *d, const VhcaCore *core)
{
    static const unsigned ib_mtu_bytes[] = {
        [VHCA_IB_MTU_256] = 256, [VHCA_IB_MTU_512] = 512,
        [VHCA_IB_MTU_1024] = 1024, [VHCA_IB_MTU_2048] = 2048,
        [VHCA_IB_MTU_4096] = 4096,
    };
    uint8_t active = vhca_port_active_mtu(core);
    unsigned i;

    dump_add(d, "device %s", core->enabled ? "enabled" : "disabled");
    if (core->status & VHCA_STATUS_ADMQ_ERROR) {
        dump_add(d, " admq-error %u", core->error);
    }
    if (core->status & VHCA_STATUS_AEQ_OVERFLOW) {
        dump_add(d, " aeq-overflow");
    }
    dump_end(d);

    if (core->cfg.link == VHCA_LINK_IB) {
        dump_add(d, "port infiniband link %s",
                 core->link_up ? "up" : "down");
    } else {
        dump_add(d, "port mac %02x:%02x:%02x:%02x:%02x:%02x link %s mtu %u",
                 core->mac[0], core->mac[1], core->mac[2], core->mac[3],
                 core->mac[4], core->mac[5], core->link_up ? "up" : "down",
                 core->mtu);
    }
    if (active && active < sizeof(ib_mtu_bytes) / sizeof(ib_mtu_bytes[0])) {
        dump_add(d, " active-mtu %u", ib_mtu_bytes[active]);
    }
    dump_end(d);
    if (core->cfg.link == VHCA_LINK_IB) {
        dump_ib_port(d, core);
    }

    for (i = 0; i < core->cfg.gid_tbl_len; i++) {
        const VhcaGidEntry *g = &core->gid_tbl[i];

        if (!g->valid) {
            continue;
        }
        dump_add(d, "gid %u ", i);
        dump_gid(d, g->gid);
        dump_add(d, " type %s", g->type == VHCA_GID_TYPE_IB ? "IB" :
                 g->type == VHCA_GID_TYPE_ROCE_V2_IPV4 ? "RoCEv2-IPv4" :
                 "RoCEv2-IPv6");
        if (g->vlan) {
            dump_add(d, " vlan %u", g->vid);
        }
        dump_end(d);
    }
}

static void dump_counters(VhcaDump *d, const VhcaCore *core)
{
    unsigned i;

    for (i = 0; i < VHCA_CNT_MAX; i++) {
        if (core->counters[i]) {
            dump_add(d, "counter %s %" PRIu64, vhca_counter_name(i),
                     core->counters[i]);
            dump_end(d);
        }
    }
    /* QUERY_CC's (congestion and loss back-off), by the same rule. */
    for (i = 0; i < VHCA_CC_CNT_MAX; i++) {
        if (core->cc_counters[i]) {
            dump_add(d, "counter %s %" PRIu64, vhca_cc_counter_name(i),
                     core->cc_counters[i]);
            dump_end(d);
        }
    }
}

/*
 * Priority flow control (vhca-pfc.c), Ethernet port, once SET_CC turned
 * it on or a PFC frame came: the enabled priorities, then each priority
 * with something to say - paused by the peer (and for how much longer),
 * pausing the peer (xoff), frames of it waiting in the receive queues.
 */
static void dump_pfc(VhcaDump *d, const VhcaCore *core)
{
    uint64_t now = core->ops->now_ns ? core->ops->now_ns(core->opaque) : 0;
    unsigned i;

    if (!core->pfc.enable && !core->pfc.dropped) {
        return;
    }
    dump_add(d, "pfc enable 0x%02x dropped %" PRIu64, core->pfc.enable,
             core->pfc.dropped);
    dump_end(d);
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        const VhcaPfcPrio *p = &core->pfc.prio[i];

        if (!p->paused && !p->xoff_told && !p->rx_frames) {
            continue;
        }
        dump_add(d, "pfc-prio %u", i);
        if (p->paused) {
            dump_add(d, " paused left-us %" PRIu64,
                     p->paused_until > now ? (p->paused_until - now) / 1000
                                           : 0);
        }
        if (p->xoff_told) {
            dump_add(d, " xoff");
        }
        dump_add(d, " rx-frames %u rx-bytes %u", p->rx_frames, p->rx_bytes);
        dump_end(d);
    }
}

/* "sq 2/16 sq-pi 5": WQEs posted and not completed, of the ring; PI. */
static void dump_wq(VhcaDump *d, const char *name, const VhcaWq *wq)
{
    dump_add(d, " %s %u/%u %s-pi %u", name, wq->pi - wq->ci,
             1u << wq->log_size, name, wq->pi);
}

/*
 * The QP's DCQCN reaction point once a CNP started it: its stage, the
 * rate it is paced at and the target rate, in kbit/s (mlx5's rate
 * parameters are in Mbit/s, too coarse for a cut rate), alpha in 1/1024,
 * and the CNPs it took.
 */
/*
 * An RC requester's loss back-off (vhca-req.c): its window of
 * unacknowledged packets out of VHCA_REQ_MAX_UNACKED, and its ACK timer
 * as it now runs (the Local ACK Timeout, doubled by consecutive
 * timeouts: "backoff 1" or "2" then).
 */
static void dump_qp_backoff(VhcaDump *d, const VhcaQp *qp)
{
    uint64_t timer = vhca_ib_local_ack_timeout_ns(qp->attr.timeout);

    dump_add(d, " window %u/%u", qp->req.window, VHCA_REQ_MAX_UNACKED);
    if (timer == VHCA_IB_TIMEOUT_NONE) {
        dump_add(d, " ack-timer none");
        return;
    }
    dump_add(d, " ack-timer %" PRIu64 "us", (timer << qp->req.backoff) / 1000);
    if (qp->req.backoff) {
        dump_add(d, " backoff %u", qp->req.backoff);
    }
}

static void dump_qp_dcqcn(VhcaDump *d, const VhcaCore *core,
                          const VhcaQp *qp)
{
    if (!qp->rp.started) {
        return;
    }
    dump_add(d, " dcqcn %s rate-kbps %" PRIu64 " target-kbps %" PRIu64
             " alpha %u cnps %u",
             vhca_dcqcn_stage_name(vhca_dcqcn_stage(&qp->rp, &core->cc)),
             vhca_dcqcn_rate(&qp->rp, &core->cc) * 8 / 1000,
             qp->rp.rt * 8 / 1000, qp->rp.alpha, qp->cnps_handled);
}

static void dump_qp(VhcaDump *d, const VhcaCore *core, uint32_t qpn,
                    const VhcaQp *qp)
{
    bool connected = vhca_qp_is_reliable(qp) || qp->type == VHCA_QPT_UC;
    bool rc = vhca_qp_is_reliable(qp);

    dump_add(d, "qp %u type %s state %s pdn %u scqn %u rcqn %u", qpn,
             vhca_qp_type_name(qp->type), vhca_qp_state_name(qp->state),
             qp->pdn, qp->send_cqn, qp->recv_cqn);
    if (connected) {
        dump_add(d, " dqpn %u", qp->attr.dest_qp_num);
        if (qp->path.dlid) {
            dump_add(d, " dlid 0x%x sl %u", qp->path.dlid, qp->path.sl);
        }
    } else {
        dump_add(d, " qkey 0x%x", qp->attr.qkey);
    }
    /* An XRC target has no queues, an XRC initiator no RQ (A14). */
    if (qp->sq.pages) {
        dump_wq(d, "sq", &qp->sq);
    }
    if (qp->srqn) {
        dump_add(d, " srqn %u", qp->srqn);
    } else if (qp->rq.pages) {
        dump_wq(d, "rq", &qp->rq);
    }
    if (qp->type == VHCA_QPT_XRC_TGT) {
        dump_add(d, " xrcdn %u", qp->xrcdn);
    }
    /* The requester's next new PSN; the responder's expected PSN. */
    dump_add(d, " sq-psn 0x%06x", qp->req.sent_psn);
    if (rc) {
        dump_add(d, " una-psn 0x%06x", qp->req.una_psn);
    }
    if (connected) {
        dump_add(d, " rq-psn 0x%06x", qp->resp.epsn);
    }
    if (rc) {
        dump_add(d, " retry %u/%u rnr-retry %u/%u", qp->req.retry_left,
                 qp->attr.retry_cnt, qp->req.rnr_left, qp->attr.rnr_retry);
        dump_qp_backoff(d, qp);
    }
    if (qp->rxq_req.count + qp->rxq_resp.count) {
        dump_add(d, " rx-queued %u", qp->rxq_req.count + qp->rxq_resp.count);
    }
    if (qp->state == VHCA_QPS_SQD && qp->sq.ci != qp->req.fetched) {
        dump_add(d, " draining");
    }
    if (qp->req.rnr_wait) {
        dump_add(d, " rnr-wait");
    }
    if (qp->req.retrying) {
        dump_add(d, " retrying");
    }
    if (qp->deadline != VHCA_NO_DEADLINE) {
        dump_add(d, " timer-armed");
    }
    dump_qp_dcqcn(d, core, qp);
    if (qp->pace_ns != VHCA_NO_DEADLINE) {
        dump_add(d, " paced");
    }
    if (qp->pfc_wait) {
        dump_add(d, " pfc-wait 0x%02x", qp->pfc_wait);
    }
    if (qp->err.fatal) {
        dump_add(d, " error QP_FATAL");
    } else if (qp->err.status != VHCA_WC_SUCCESS) {
        dump_add(d, " error %s vendor-err 0x%x",
                 vhca_wc_status_name(qp->err.status), qp->err.vendor_err);
    }
    dump_end(d);
}

static void dump_cq(VhcaDump *d, uint32_t cqn, const VhcaCq *cq)
{
    const char *arm = cq->arm == VHCA_CQ_ARM_NEXT ? "next" :
                      cq->arm == VHCA_CQ_ARM_SOLICITED ? "solicited" : "no";

    dump_add(d, "cq %u size %u pi %u ci %u eqn %u armed %s users %u", cqn,
             1u << cq->log_size, cq->pi, cq->ci, cq->eqn, arm, cq->users);
    if (cq->error) {
        dump_add(d, " error overflow");
    }
    dump_end(d);
}

static void dump_srq(VhcaDump *d, uint32_t srqn, const VhcaSrq *srq)
{
    dump_add(d, "srq %u pdn %u size %u pi %u ci %u limit %u users %u", srqn,
             srq->pdn, 1u << srq->log_size, srq->pi, srq->ci, srq->limit,
             srq->users);
    if (srq->type == VHCA_SRQT_XRC) {
        dump_add(d, " xrc xrcdn %u cqn %u", srq->xrcdn, srq->cqn);
    }
    if (srq->error) {
        dump_add(d, " error");
    }
    dump_end(d);
}

static void dump_eq(VhcaDump *d, uint32_t eqn, const VhcaEq *eq)
{
    dump_add(d, "eq %u size %u pi %u ci %u vector %u armed %s", eqn,
             1u << eq->ring.log_size, eq->ring.pi, eq->ring.ci, eq->vector,
             eq->armed ? "yes" : "no");
    if (eqn) {
        dump_add(d, " cqs %u", eq->users);
    } else {
        dump_add(d, " async");
    }
    if (eq->overflow) {
        dump_add(d, " overflow");
    }
    dump_end(d);
}

static void dump_mr(VhcaDump *d, uint32_t index, const VhcaMr *mr)
{
    static const char *const access[] = {
        "local-write", "remote-write", "remote-read", "remote-atomic",
        "mw-bind", "zero-based",
    };

    if (vhca_mr_is_window(mr)) {
        dump_add(d, "mw %u key 0x%x type %u pdn %u", index,
                 index << 8 | mr->key_tag, mr->mw_type, mr->pdn);
        if (!mr->valid) {
            dump_add(d, " free");
        } else if (mr->mw_mr_index) {
            dump_add(d, " mr %u addr 0x%" PRIx64 " length %" PRIu64
                     " access ", mr->mw_mr_index, mr->iova, mr->length);
            dump_flags(d, mr->access, access,
                       sizeof(access) / sizeof(access[0]));
            if (mr->mw_type == VHCA_MW_TYPE_2) {
                dump_add(d, " qpn %u", mr->mw_qpn);
            }
        } else {
            dump_add(d, " unbound");
        }
        dump_end(d);
        return;
    }
    dump_add(d, "mr %u key 0x%x pdn %u iova 0x%" PRIx64 " length %" PRIu64
             " access ", index, index << 8 | mr->key_tag, mr->pdn, mr->iova,
             mr->length);
    dump_flags(d, mr->access, access, sizeof(access) / sizeof(access[0]));
    if (mr->flags & VHCA_MR_PHYS) {
        dump_add(d, " phys");
    }
    if (mr->flags & VHCA_MR_FAST_REG) {
        dump_add(d, mr->valid ? " fast-reg valid" : " fast-reg free");
    }
    dump_end(d);
}

static void dump_mcast(VhcaDump *d, const VhcaMcastGroup *g)
{
    uint32_t i;

    dump_add(d, "mcast ");
    dump_gid(d, g->gid);
    dump_add(d, " qps");
    for (i = 0; i < g->nqps && i < VHCA_MAX_MCAST_QPS; i++) {
        dump_add(d, "%s%u", i ? "," : " ", g->qpns[i]);
    }
    dump_end(d);
}

void vhca_core_dump(const VhcaCore *core, VhcaDumpLine *line, void *opaque)
{
    VhcaDump d = { .line = line, .opaque = opaque };
    uint32_t id;
    unsigned i;

    dump_device(&d, core);
    dump_counters(&d, core);
    dump_pfc(&d, core);
    for (id = vhca_ids_next(&core->qp_ids, 0); id;
         id = vhca_ids_next(&core->qp_ids, id + 1)) {
        dump_qp(&d, core, id, &core->qps[id]);
    }
    for (id = vhca_ids_next(&core->cq_ids, 0); id;
         id = vhca_ids_next(&core->cq_ids, id + 1)) {
        dump_cq(&d, id, &core->cqs[id]);
    }
    for (id = vhca_ids_next(&core->srq_ids, 0); id;
         id = vhca_ids_next(&core->srq_ids, id + 1)) {
        dump_srq(&d, id, &core->srqs[id]);
    }
    if (core->enabled) {
        dump_eq(&d, 0, &core->aeq);
    }
    for (id = vhca_ids_next(&core->eq_ids, 0); id;
         id = vhca_ids_next(&core->eq_ids, id + 1)) {
        dump_eq(&d, id, &core->comp_eqs[id]);
    }
    for (id = vhca_ids_next(&core->mr_ids, 0); id;
         id = vhca_ids_next(&core->mr_ids, id + 1)) {
        dump_mr(&d, id, &core->mrs[id]);
    }
    for (id = vhca_ids_next(&core->pd_ids, 0); id;
         id = vhca_ids_next(&core->pd_ids, id + 1)) {
        dump_add(&d, "pd %u users %u", id, core->pds[id].users);
        dump_end(&d);
    }
    for (id = vhca_ids_next(&core->xrcd_ids, 0); id;
         id = vhca_ids_next(&core->xrcd_ids, id + 1)) {
        dump_add(&d, "xrcd %u users %u", id, core->xrcd_users[id]);
        dump_end(&d);
    }
    for (i = 0; i < VHCA_MAX_MCAST_GROUPS; i++) {
        if (core->mcast[i].nqps) {
            dump_mcast(&d, &core->mcast[i]);
        }
    }
}
