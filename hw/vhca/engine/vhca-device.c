/*
 * vhca engine: the device as a whole - its creation and end, reset to
 * the power-on state (docs/specs/vhca.rst, "Reset") and the link state
 * the backend reports - and the RDMA object tables it owns.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdlib.h>
#include <string.h>

#include "vhca-ib.h"
#include "vhca-transport.h"

static void vhca_core_reset_device(VhcaCore *core);

int vhca_core_init(VhcaCore *core, const VhcaCoreConfig *cfg,
                   const VhcaCoreOps *ops, void *opaque)
{
    memset(core, 0, sizeof(*core));
    core->ops = ops;
    core->opaque = opaque;
    core->cfg = *cfg;
    core->link_up = false;
    core->sched_timer = VHCA_NO_DEADLINE;
    if (vhca_rdma_init(core)) {
        return -1;
    }
    /*
     * The object tables come zeroed from calloc(), as vhca_rdma_reset()
     * leaves them: clearing them again would write every page of them
     * (2.5 MB of QPs at max-qp 2048), which a migration's destination
     * pays in the downtime, as it loads into a new engine
     * (docs/benchmarks.rst, "Migration: what the device adds to the
     * downtime").
     */
    vhca_core_reset_device(core);
    return 0;
}

void vhca_core_cleanup(VhcaCore *core)
{
    vhca_rdma_cleanup(core);
}

void vhca_core_reset(VhcaCore *core)
{
    vhca_rdma_reset(core);
    vhca_core_reset_device(core);
}

/* A reset of everything but the object tables (vhca_rdma_reset()). */
static void vhca_core_reset_device(VhcaCore *core)
{
    static const VhcaRing stopped_ring;
    static const VhcaEq stopped_eq;

    core->enabled = false;
    core->status = 0;
    core->error = VHCA_ERR_NONE;

    core->admq = stopped_ring;
    core->aeq = stopped_eq;

    core->tx = stopped_ring;
    core->rx = stopped_ring;
    core->eth_ctrl = 0;
    core->eth_irq_armed = false;
    core->eth_irq_pending = false;

    memcpy(core->mac, core->cfg.mac, sizeof(core->mac));
    core->mtu = VHCA_CORE_DEFAULT_MTU;
    /* A driver that never programs the filter still gets multicast. */
    core->rx_filter_flags = VHCA_RX_FILTER_ALLMULTI;
    core->rx_mcast_count = 0;

    memset(core->gid_tbl, 0, sizeof(core->gid_tbl));
    core->gid_tbl_top = 0;
    memset(core->uctx_map, 0, sizeof(core->uctx_map));
    vhca_cc_reset(core);
    memset(core->counters, 0, sizeof(core->counters));
    memset(core->counter_hi_latch, 0, sizeof(core->counter_hi_latch));
    /*
     * The IB port forgets what the SM set, as a reset HCA's firmware
     * does, and retrains: INIT again if the cable is there (IBTA 7.2).
     */
    if (core->cfg.link == VHCA_LINK_IB) {
        vhca_ib_port_reset(core);
    }

    /* RX is now disabled: frames the backend queued can be dropped. */
    if (core->ops->rx_ready) {
        core->ops->rx_ready(core->opaque);
    }
}

void vhca_core_set_link(VhcaCore *core, bool up)
{
    if (core->link_up == up) {
        return;
    }
    core->link_up = up;
    /* The IB port's logical state is the SM's business (vhca-sma.c). */
    if (core->cfg.link == VHCA_LINK_IB) {
        vhca_ib_port_set_link(core, up);
        return;
    }
    vhca_aeq_post(core, VHCA_EQE_PORT_CHANGE,
                  up ? VHCA_PORT_ACTIVE : VHCA_PORT_DOWN, 1, 0);
}

int vhca_rdma_init(VhcaCore *core)
{
    const VhcaCoreConfig *cfg = &core->cfg;
    uint32_t last_qpn = cfg->max_qp + VHCA_FIRST_QPN - 1;

    core->pds = calloc(cfg->max_pd + 1, sizeof(*core->pds));
    core->mrs = calloc(cfg->max_mr + 1, sizeof(*core->mrs));
    core->cqs = calloc(cfg->max_cq + 1, sizeof(*core->cqs));
    core->qps = calloc(last_qpn + 1, sizeof(*core->qps));
    core->srqs = calloc(cfg->max_srq + 1, sizeof(*core->srqs));
    if (!core->pds || !core->mrs || !core->cqs || !core->qps ||
        !core->srqs ||
        vhca_ids_init(&core->pd_ids, 1, cfg->max_pd) ||
        vhca_ids_init(&core->mr_ids, 1, cfg->max_mr) ||
        vhca_ids_init(&core->eq_ids, 1, VHCA_MAX_COMP_EQS) ||
        vhca_ids_init(&core->cq_ids, 1, cfg->max_cq) ||
        /* max_srq 0: no handle is ever free. */
        vhca_ids_init(&core->srq_ids, 1, cfg->max_srq) ||
        vhca_ids_init(&core->xrcd_ids, 1, VHCA_MAX_XRCD) ||
        /* QPN 1 (GSI) has a slot too; CREATE_QP hands it out alone. */
        vhca_ids_init(&core->qp_ids, VHCA_GSI_QPN, last_qpn) ||
        vhca_sched_init(core, last_qpn + 1)) {
        vhca_rdma_cleanup(core);
        return -1;
    }
    return 0;
}

static void vhca_rdma_free_queues(VhcaCore *core)
{
    uint32_t i;

    vhca_sched_cleanup(core);
    for (i = 1; i <= VHCA_MAX_COMP_EQS; i++) {
        free(core->comp_eqs[i].pages);
    }
    /* Those that exist: DESTROY_CQ and DESTROY_QP free their own. */
    if (core->cqs && core->cq_ids.map) {
        for (i = vhca_ids_next(&core->cq_ids, 0); i;
             i = vhca_ids_next(&core->cq_ids, i + 1)) {
            free(core->cqs[i].pages);
        }
    }
    if (core->qps && core->qp_ids.map) {
        for (i = vhca_ids_next(&core->qp_ids, 0); i;
             i = vhca_ids_next(&core->qp_ids, i + 1)) {
            free(core->qps[i].sq.pages);
            free(core->qps[i].rq.pages);
        }
    }
}

/* Reset: every object is gone, handles start again from the first. */
void vhca_rdma_reset(VhcaCore *core)
{
    const VhcaCoreConfig *cfg = &core->cfg;

    vhca_rdma_free_queues(core);
    vhca_srq_reset(core);
    vhca_xrcd_reset(core);
    memset(core->comp_eqs, 0, sizeof(core->comp_eqs));
    memset(core->pds, 0, (cfg->max_pd + 1) * sizeof(*core->pds));
    memset(core->mrs, 0, (cfg->max_mr + 1) * sizeof(*core->mrs));
    memset(core->cqs, 0, (cfg->max_cq + 1) * sizeof(*core->cqs));
    memset(core->qps, 0,
           (cfg->max_qp + VHCA_FIRST_QPN) * sizeof(*core->qps));
    vhca_ids_clear(&core->pd_ids);
    vhca_ids_clear(&core->mr_ids);
    vhca_ids_clear(&core->eq_ids);
    vhca_ids_clear(&core->cq_ids);
    vhca_ids_clear(&core->qp_ids);
    core->smi_qpn = 0;
    vhca_mcast_reset(core);
    memset(core->uctx_users, 0, sizeof(core->uctx_users));
    core->cq_error_pending = false;
}

void vhca_rdma_cleanup(VhcaCore *core)
{
    vhca_rdma_free_queues(core);
    if (core->srqs && core->srq_ids.map) {
        vhca_srq_free_queues(core);
    }
    free(core->srqs);
    core->srqs = NULL;
    vhca_ids_destroy(&core->srq_ids);
    vhca_ids_destroy(&core->xrcd_ids);
    free(core->pds);
    free(core->mrs);
    free(core->cqs);
    free(core->qps);
    core->pds = NULL;
    core->mrs = NULL;
    core->cqs = NULL;
    core->qps = NULL;
    vhca_ids_destroy(&core->pd_ids);
    vhca_ids_destroy(&core->mr_ids);
    vhca_ids_destroy(&core->eq_ids);
    vhca_ids_destroy(&core->cq_ids);
    vhca_ids_destroy(&core->qp_ids);
    vhca_sched_destroy(core);
}
