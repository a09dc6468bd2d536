/*
 * vhca engine: register file, reset, CTRL/STATUS, counters, BAR2 doorbell
 * pages, link state (docs/specs/vhca.rst, "BAR0 registers", "Reset") and
 * the receive entry point that steers each frame to the RDMA engine or
 * the Ethernet RX ring.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vhca-internal.h"
#include "vhca-transport.h"

#define VHCA_ADMQ_ALIGN         64
#define VHCA_AEQ_ALIGN          64

static const char *const guest_error_names[VHCA_GUEST_ERR__MAX] = {
    [VHCA_GUEST_ERR_REG_ACCESS] = "reg",
    [VHCA_GUEST_ERR_REG_REFUSED] = "reg refused",
    [VHCA_GUEST_ERR_ADMQ] = "admq",
    [VHCA_GUEST_ERR_ADMIN_CMD] = "admin cmd",
    [VHCA_GUEST_ERR_AEQ] = "aeq",
    [VHCA_GUEST_ERR_TX] = "tx",
    [VHCA_GUEST_ERR_RX] = "rx",
    [VHCA_GUEST_ERR_DOORBELL] = "doorbell",
    [VHCA_GUEST_ERR_EQ] = "eq",
    [VHCA_GUEST_ERR_CQ] = "cq",
    [VHCA_GUEST_ERR_QP] = "qp",
    [VHCA_GUEST_ERR_SRQ] = "srq",
};

const char *vhca_core_guest_error_name(VhcaGuestError kind)
{
    if ((unsigned)kind >= VHCA_GUEST_ERR__MAX) {
        return "unknown";
    }
    return guest_error_names[kind];
}

const char *vhca_core_ring_name(VhcaRingId ring)
{
    static const char *const names[VHCA_RING__MAX] = {
        [VHCA_RING_ADMQ] = "admq",
        [VHCA_RING_AEQ] = "aeq",
        [VHCA_RING_EQ] = "eq",
        [VHCA_RING_TX] = "tx",
        [VHCA_RING_RX] = "rx",
        [VHCA_RING_CQ] = "cq",
        [VHCA_RING_SQ] = "sq",
        [VHCA_RING_RQ] = "rq",
        [VHCA_RING_SRQ] = "srq",
    };

    return (unsigned)ring < VHCA_RING__MAX ? names[ring] : "unknown";
}

const char *vhca_core_qp_change_name(VhcaQpChange why)
{
    static const char *const names[VHCA_QP_CHANGE__MAX] = {
        [VHCA_QP_CHANGE_COMMAND] = "command",
        [VHCA_QP_CHANGE_ERROR] = "error",
        [VHCA_QP_CHANGE_FATAL] = "fatal",
    };

    return (unsigned)why < VHCA_QP_CHANGE__MAX ? names[why] : "unknown";
}

const char *vhca_core_mw_bind_error_name(VhcaMwBindError why)
{
    static const char *const names[VHCA_MW_BIND__MAX] = {
        [VHCA_MW_BIND_BAD_KEY] = "key-names-no-window",
        [VHCA_MW_BIND_NEW_KEY] = "new-key-index-differs",
        [VHCA_MW_BIND_ACCESS] = "bad-access",
        [VHCA_MW_BIND_TYPE1_ZERO_BASED] = "type1-zero-based",
        [VHCA_MW_BIND_NOT_FREE] = "type2-not-free",
        [VHCA_MW_BIND_ZERO_LENGTH] = "type2-zero-length",
        [VHCA_MW_BIND_WINDOW_PD] = "window-pd-mismatch",
        [VHCA_MW_BIND_MR_KEY] = "mr-key-invalid",
        [VHCA_MW_BIND_MR_PD] = "mr-pd-mismatch",
        [VHCA_MW_BIND_MR_NO_BIND] = "mr-without-mw-bind",
        [VHCA_MW_BIND_MR_NO_WRITE] = "mr-without-local-write",
        [VHCA_MW_BIND_RANGE] = "range-outside-mr",
    };

    return (unsigned)why < VHCA_MW_BIND__MAX ? names[why] : "unknown";
}

const char *vhca_core_mw_invalidation_name(VhcaMwInvalidation why)
{
    static const char *const names[VHCA_MW_INV__MAX] = {
        [VHCA_MW_INV_LOCAL] = "local-inv",
        [VHCA_MW_INV_REMOTE] = "send-with-inv",
        [VHCA_MW_INV_QP_GONE] = "qp-destroyed",
    };

    return (unsigned)why < VHCA_MW_INV__MAX ? names[why] : "unknown";
}

const char *vhca_core_retry_name(VhcaRetryCause why)
{
    static const char *const names[VHCA_RETRY__MAX] = {
        [VHCA_RETRY_TIMEOUT] = "timeout",
        [VHCA_RETRY_SEQ_NAK] = "seq-nak",
        [VHCA_RETRY_IMPLIED_NAK] = "implied-nak",
    };

    return (unsigned)why < VHCA_RETRY__MAX ? names[why] : "unknown";
}

const char *vhca_core_nak_kind_name(VhcaNakKind kind)
{
    return kind == VHCA_NAK_KIND_RNR ? "rnr-nak" : "nak";
}

/* IBTA 9.7.5.2.8, Table 44. */
const char *vhca_core_nak_code_name(VhcaNakKind kind, uint8_t code)
{
    static const char *const names[] = {
        "psn-seq-error", "invalid-request", "remote-access",
        "remote-op", "invalid-rd-request",
    };

    if (kind == VHCA_NAK_KIND_RNR) {
        return "rnr-timer";
    }
    return code < sizeof(names) / sizeof(names[0]) ? names[code]
                                                    : "reserved";
}

const char *vhca_core_qp_type_name(uint8_t type)
{
    switch (type) {
    case VHCA_QPT_GSI:
        return "gsi";
    case VHCA_QPT_RC:
        return "rc";
    case VHCA_QPT_UC:
        return "uc";
    case VHCA_QPT_UD:
        return "ud";
    case VHCA_QPT_XRC_INI:
        return "xrc-ini";
    case VHCA_QPT_XRC_TGT:
        return "xrc-tgt";
    default:
        return "unknown";
    }
}

static void VHCA_PRINTF(3, 0)
vhca_guest_error_va(VhcaCore *core, VhcaGuestError kind, const char *fmt,
                    va_list ap)
{
    char msg[192];

    if (!core->ops->guest_error) {
        return;
    }
    vsnprintf(msg, sizeof(msg), fmt, ap);
    core->ops->guest_error(core->opaque, kind, msg);
}

void vhca_guest_error(VhcaCore *core, VhcaGuestError kind,
                      const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vhca_guest_error_va(core, kind, fmt, ap);
    va_end(ap);
}

void vhca_reg_refuse(VhcaCore *core, enum vhca_reg_error error,
                     const char *fmt, ...)
{
    va_list ap;

    core->error = error;
    va_start(ap, fmt);
    vhca_guest_error_va(core, VHCA_GUEST_ERR_REG_REFUSED, fmt, ap);
    va_end(ap);
}

bool vhca_ring_config_ok(const VhcaRing *ring, uint32_t align,
                         uint32_t max_log_size)
{
    uint64_t base = vhca_ring_base(ring);

    return base != 0 && (base & (align - 1)) == 0 &&
           ring->log_size >= 1 && ring->log_size <= max_log_size;
}

/* The one table of property limits: the glue reports from it too. */
static const VhcaConfigLimit vhca_config_limits[] = {
#define VHCA_LIMIT(prop, field, lo, hi) \
    { prop, offsetof(VhcaCoreConfig, field), lo, hi }
    VHCA_LIMIT("gid-table-len", gid_tbl_len, VHCA_CORE_GID_TBL_LEN_MIN,
               VHCA_CORE_GID_TBL_LEN_MAX),
    VHCA_LIMIT("db-pages", num_db_pages, VHCA_CORE_DB_PAGES_MIN,
               VHCA_CORE_DB_PAGES_MAX),
    VHCA_LIMIT("vectors", num_vectors, VHCA_CORE_VECTORS_MIN,
               VHCA_CORE_VECTORS_MAX),
    VHCA_LIMIT("max-qp", max_qp, VHCA_CORE_MAX_QP_MIN, VHCA_CORE_MAX_QP_MAX),
    VHCA_LIMIT("max-cq", max_cq, VHCA_CORE_MAX_CQ_MIN, VHCA_CORE_MAX_CQ_MAX),
    VHCA_LIMIT("max-mr", max_mr, VHCA_CORE_MAX_MR_MIN, VHCA_CORE_MAX_MR_MAX),
    VHCA_LIMIT("max-pd", max_pd, VHCA_CORE_MAX_PD_MIN, VHCA_CORE_MAX_PD_MAX),
    VHCA_LIMIT("max-srq", max_srq, VHCA_CORE_MAX_SRQ_MIN,
               VHCA_CORE_MAX_SRQ_MAX),
#undef VHCA_LIMIT
};

const VhcaConfigLimit *vhca_core_config_violation(const VhcaCoreConfig *cfg,
                                                  uint32_t *value)
{
    size_t i;

    for (i = 0; i < sizeof(vhca_config_limits) /
                    sizeof(vhca_config_limits[0]); i++) {
        const VhcaConfigLimit *l = &vhca_config_limits[i];
        uint32_t v;

        memcpy(&v, (const uint8_t *)cfg + l->offset, sizeof(v));
        if (v < l->min || v > l->max) {
            *value = v;
            return l;
        }
    }
    return NULL;
}

const char *vhca_core_config_check(const VhcaCoreConfig *cfg)
{
    uint32_t value;
    const VhcaConfigLimit *bad = vhca_core_config_violation(cfg, &value);

    return bad ? bad->prop : NULL;
}

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
    vhca_core_reset(core);
    return 0;
}

void vhca_core_cleanup(VhcaCore *core)
{
    vhca_rdma_cleanup(core);
}

void vhca_core_reset(VhcaCore *core)
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
    vhca_rdma_reset(core);
    memset(core->counters, 0, sizeof(core->counters));
    memset(core->counter_hi_latch, 0, sizeof(core->counter_hi_latch));

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
    vhca_aeq_post(core, VHCA_EQE_PORT_CHANGE,
                  up ? VHCA_PORT_ACTIVE : VHCA_PORT_DOWN, 1, 0);
}

static uint32_t vhca_status(const VhcaCore *core)
{
    return core->status |
           (core->aeq.overflow ? VHCA_STATUS_AEQ_OVERFLOW : 0) |
           (core->enabled ? VHCA_STATUS_READY : 0) |
           (core->link_up ? VHCA_STATUS_LINK_UP : 0);
}

static void vhca_ctrl_write(VhcaCore *core, uint32_t value)
{
    if (value & VHCA_CTRL_RESET) {
        vhca_core_reset(core);
        return;
    }

    if (!(value & VHCA_CTRL_ENABLE)) {
        core->enabled = false;
        return;
    }
    if (core->enabled) {
        return;
    }
    if (!vhca_ring_config_ok(&core->admq, VHCA_ADMQ_ALIGN,
                             VHCA_ADMQ_MAX_LOG_SIZE)) {
        VHCA_HOOK(core, err_ring_config, VHCA_RING_ADMQ,
                  vhca_ring_base(&core->admq), core->admq.log_size);
        vhca_reg_refuse(core, VHCA_ERR_BAD_RING_CONFIG,
                        "CTRL.ENABLE refused: admin queue base 0x%llx "
                        "log_size %u (need non-zero, %u-byte aligned, 1..%u)",
                        (unsigned long long)vhca_ring_base(&core->admq),
                        core->admq.log_size, VHCA_ADMQ_ALIGN,
                        VHCA_ADMQ_MAX_LOG_SIZE);
        return;
    }
    if (!vhca_ring_config_ok(&core->aeq.ring, VHCA_AEQ_ALIGN,
                             VHCA_AEQ_MAX_LOG_SIZE)) {
        VHCA_HOOK(core, err_ring_config, VHCA_RING_AEQ,
                  vhca_ring_base(&core->aeq.ring), core->aeq.ring.log_size);
        vhca_reg_refuse(core, VHCA_ERR_BAD_RING_CONFIG,
                        "CTRL.ENABLE refused: async EQ base 0x%llx "
                        "log_size %u (need non-zero, %u-byte aligned, 1..%u)",
                        (unsigned long long)vhca_ring_base(&core->aeq.ring),
                        core->aeq.ring.log_size, VHCA_AEQ_ALIGN,
                        VHCA_AEQ_MAX_LOG_SIZE);
        return;
    }

    core->admq.pi = 0;
    core->admq.ci = 0;
    core->status &= ~VHCA_STATUS_ADMQ_ERROR;
    vhca_aeq_start(core);
    core->enabled = true;
}

/*
 * Ring base and size registers: writable only while the ring is stopped.
 * @reg is the offset from the ring's BASE_LO register.
 */
static void vhca_ring_reg_write(VhcaCore *core, VhcaRing *ring,
                                bool running, const char *name,
                                uint64_t reg, uint32_t value)
{
    if (running) {
        VHCA_HOOK(core, err_ring_running,
                  ring == &core->admq ? VHCA_RING_ADMQ :
                  ring == &core->aeq.ring ? VHCA_RING_AEQ :
                  ring == &core->tx ? VHCA_RING_TX : VHCA_RING_RX,
                  (uint32_t)reg, value);
        vhca_reg_refuse(core, VHCA_ERR_BAD_RING_CONFIG,
                        "%s ring register +0x%llx written while running",
                        name, (unsigned long long)reg);
        return;
    }
    switch (reg) {
    case 0x0:
        ring->base_lo = value;
        break;
    case 0x4:
        ring->base_hi = value;
        break;
    case 0x8:
        ring->log_size = value;
        break;
    }
}

static bool vhca_counter_reg(uint64_t offset, unsigned *index, bool *hi)
{
    uint64_t rel;

    if (offset < VHCA_REG_COUNTERS ||
        offset >= VHCA_REG_COUNTERS + 8 * (uint64_t)VHCA_CNT_MAX) {
        return false;
    }
    rel = offset - VHCA_REG_COUNTERS;
    *index = (unsigned)(rel / 8);
    *hi = (rel & 4) != 0;
    return true;
}

static bool vhca_reg_access_ok(VhcaCore *core, bool write, uint64_t offset,
                               unsigned size, uint64_t value)
{
    if (size == 4 && (offset & 3) == 0 && offset < VHCA_CTRL_BAR_SIZE) {
        return true;
    }
    VHCA_HOOK(core, ub_reg_access, write, offset, size, value);
    vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                     "%s of %u bytes at 0x%llx: only aligned 32-bit "
                     "accesses are supported, ignoring",
                     write ? "write" : "read", size,
                     (unsigned long long)offset);
    return false;
}

uint64_t vhca_core_reg_read(VhcaCore *core, uint64_t offset, unsigned size)
{
    unsigned index;
    bool hi;

    if (!vhca_reg_access_ok(core, false, offset, size, 0)) {
        return 0;
    }

    switch (offset) {
    case VHCA_REG_MAGIC:
        return VHCA_MAGIC;
    case VHCA_REG_VERSION:
        return VHCA_VERSION;
    case VHCA_REG_CAPS:
        return VHCA_CAP_ETH | VHCA_CAP_ROCE;
    case VHCA_REG_NUM_VECTORS:
        return core->cfg.num_vectors;
    case VHCA_REG_NUM_DB_PAGES:
        return core->cfg.num_db_pages;
    case VHCA_REG_CTRL:
        return core->enabled ? VHCA_CTRL_ENABLE : 0;
    case VHCA_REG_STATUS:
        return vhca_status(core);
    case VHCA_REG_ERROR:
        return core->error;

    case VHCA_REG_ADMQ_BASE_LO:
        return core->admq.base_lo;
    case VHCA_REG_ADMQ_BASE_HI:
        return core->admq.base_hi;
    case VHCA_REG_ADMQ_LOG_SIZE:
        return core->admq.log_size;
    case VHCA_REG_ADMQ_CI:
        return core->admq.ci;

    case VHCA_REG_AEQ_BASE_LO:
        return core->aeq.ring.base_lo;
    case VHCA_REG_AEQ_BASE_HI:
        return core->aeq.ring.base_hi;
    case VHCA_REG_AEQ_LOG_SIZE:
        return core->aeq.ring.log_size;
    case VHCA_REG_AEQ_PI:
        return core->aeq.ring.pi;

    case VHCA_REG_TX_BASE_LO:
        return core->tx.base_lo;
    case VHCA_REG_TX_BASE_HI:
        return core->tx.base_hi;
    case VHCA_REG_TX_LOG_SIZE:
        return core->tx.log_size;
    case VHCA_REG_TX_CI:
        return core->tx.ci;

    case VHCA_REG_RX_BASE_LO:
        return core->rx.base_lo;
    case VHCA_REG_RX_BASE_HI:
        return core->rx.base_hi;
    case VHCA_REG_RX_LOG_SIZE:
        return core->rx.log_size;
    case VHCA_REG_RX_CI:
        return core->rx.ci;

    case VHCA_REG_ETH_CTRL:
        return core->eth_ctrl;

    case VHCA_REG_ADMQ_PI:
    case VHCA_REG_AEQ_DB:
    case VHCA_REG_TX_PI:
    case VHCA_REG_RX_PI:
    case VHCA_REG_ETH_IRQ_ARM:
        VHCA_HOOK(core, ub_reg_access, false, offset, size, 0);
        vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                         "read of write-only register 0x%llx, returning 0",
                         (unsigned long long)offset);
        return 0;
    }

    if (vhca_reg_is_eq_db(offset, &index)) {
        VHCA_HOOK(core, ub_reg_access, false, offset, size, 0);
        vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                         "read of write-only register EQ_DB(%u), "
                         "returning 0", index);
        return 0;
    }

    if (vhca_counter_reg(offset, &index, &hi)) {
        if (hi) {
            return core->counter_hi_latch[index];
        }
        /* Reading LO latches HI so that LO, HI is a consistent pair. */
        core->counter_hi_latch[index] =
            (uint32_t)(core->counters[index] >> 32);
        return (uint32_t)core->counters[index];
    }

    VHCA_HOOK(core, ub_reg_access, false, offset, size, 0);
    vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                     "read of unassigned register 0x%llx, returning 0",
                     (unsigned long long)offset);
    return 0;
}

void vhca_core_reg_write(VhcaCore *core, uint64_t offset, uint64_t value64,
                         unsigned size)
{
    uint32_t value = (uint32_t)value64;

    if (!vhca_reg_access_ok(core, true, offset, size, value64)) {
        return;
    }

    switch (offset) {
    case VHCA_REG_CTRL:
        vhca_ctrl_write(core, value);
        return;

    case VHCA_REG_ADMQ_BASE_LO:
    case VHCA_REG_ADMQ_BASE_HI:
    case VHCA_REG_ADMQ_LOG_SIZE:
        vhca_ring_reg_write(core, &core->admq, core->enabled, "admin queue",
                            offset - VHCA_REG_ADMQ_BASE_LO, value);
        return;
    case VHCA_REG_ADMQ_PI:
        vhca_admq_doorbell(core, value);
        return;

    case VHCA_REG_AEQ_BASE_LO:
    case VHCA_REG_AEQ_BASE_HI:
    case VHCA_REG_AEQ_LOG_SIZE:
        vhca_ring_reg_write(core, &core->aeq.ring, core->enabled,
                            "async EQ",
                            offset - VHCA_REG_AEQ_BASE_LO, value);
        return;
    case VHCA_REG_AEQ_DB:
        vhca_aeq_doorbell(core, value);
        return;

    case VHCA_REG_TX_BASE_LO:
    case VHCA_REG_TX_BASE_HI:
    case VHCA_REG_TX_LOG_SIZE:
        vhca_ring_reg_write(core, &core->tx,
                            core->eth_ctrl & VHCA_ETH_CTRL_TX_ENABLE, "TX",
                            offset - VHCA_REG_TX_BASE_LO, value);
        return;
    case VHCA_REG_TX_PI:
        vhca_eth_tx_doorbell(core, value);
        return;

    case VHCA_REG_RX_BASE_LO:
    case VHCA_REG_RX_BASE_HI:
    case VHCA_REG_RX_LOG_SIZE:
        vhca_ring_reg_write(core, &core->rx,
                            core->eth_ctrl & VHCA_ETH_CTRL_RX_ENABLE, "RX",
                            offset - VHCA_REG_RX_BASE_LO, value);
        return;
    case VHCA_REG_RX_PI:
        vhca_eth_rx_doorbell(core, value);
        return;

    case VHCA_REG_ETH_CTRL:
        vhca_eth_ctrl_write(core, value);
        return;
    case VHCA_REG_ETH_IRQ_ARM:
        vhca_eth_irq_arm(core);
        return;

    case VHCA_REG_MAGIC:
    case VHCA_REG_VERSION:
    case VHCA_REG_CAPS:
    case VHCA_REG_NUM_VECTORS:
    case VHCA_REG_NUM_DB_PAGES:
    case VHCA_REG_STATUS:
    case VHCA_REG_ERROR:
    case VHCA_REG_ADMQ_CI:
    case VHCA_REG_AEQ_PI:
    case VHCA_REG_TX_CI:
    case VHCA_REG_RX_CI:
        VHCA_HOOK(core, ub_reg_access, true, offset, size, value);
        vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                         "write 0x%x to read-only register 0x%llx, ignoring",
                         value, (unsigned long long)offset);
        return;
    }

    {
        unsigned index;
        uint32_t eqn;
        bool hi;

        if (vhca_reg_is_eq_db(offset, &eqn)) {
            vhca_comp_eq_doorbell(core, eqn, value);
            return;
        }
        if (vhca_counter_reg(offset, &index, &hi)) {
            VHCA_HOOK(core, ub_reg_access, true, offset, size, value);
            vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                             "write 0x%x to read-only counter %u, ignoring",
                             value, index);
            return;
        }
    }

    VHCA_HOOK(core, ub_reg_access, true, offset, size, value);
    vhca_guest_error(core, VHCA_GUEST_ERR_REG_ACCESS,
                     "write 0x%x to unassigned register 0x%llx, ignoring",
                     value, (unsigned long long)offset);
}

/*
 * BAR2: a doorbell is one aligned 64-bit write, low 32 bits the object,
 * high 32 bits the value (vhca_hw.h, "Doorbell pages").  Every write to a
 * doorbell page is counted, as hardware counts what reaches it; only the
 * well-formed ones on a page that owns the object do anything.
 */
void vhca_core_doorbell_write(VhcaCore *core, uint64_t offset,
                              uint64_t value, unsigned size)
{
    uint64_t page = offset / VHCA_DB_PAGE_SIZE;
    uint32_t reg = (uint32_t)(offset % VHCA_DB_PAGE_SIZE);
    uint32_t object = (uint32_t)value;
    uint32_t arg = (uint32_t)(value >> 32);

    if (page >= core->cfg.num_db_pages) {
        /* BAR2 is rounded up to a power of two: the rest is padding. */
        VHCA_HOOK(core, ub_doorbell, page, reg, size, object);
        vhca_guest_error(core, VHCA_GUEST_ERR_DOORBELL,
                         "write to offset 0x%llx, past the %u doorbell "
                         "pages, ignoring", (unsigned long long)offset,
                         core->cfg.num_db_pages);
        return;
    }
    vhca_count(core, VHCA_CNT_DOORBELLS, 1);
    if (!(core->uctx_map[page / 64] & (1ull << (page % 64)))) {
        VHCA_HOOK(core, ub_doorbell, page, reg, size, object);
        vhca_guest_error(core, VHCA_GUEST_ERR_DOORBELL,
                         "write to doorbell page %llu, which no user "
                         "context owns, ignoring",
                         (unsigned long long)page);
        return;
    }
    if (size != 8 || (reg != VHCA_DB_SQ && reg != VHCA_DB_RQ &&
                      reg != VHCA_DB_CQ && reg != VHCA_DB_SRQ)) {
        VHCA_HOOK(core, ub_doorbell, page, reg, size, object);
        vhca_guest_error(core, VHCA_GUEST_ERR_DOORBELL,
                         "%u-byte write at offset 0x%x of doorbell page "
                         "%llu: doorbells are 64-bit writes at 0x0, 0x8, "
                         "0x10 and 0x18, ignoring", size, reg,
                         (unsigned long long)page);
        return;
    }

    switch (reg) {
    case VHCA_DB_SQ:
        vhca_qp_sq_doorbell(core, (uint32_t)page, object, arg);
        break;
    case VHCA_DB_RQ:
        vhca_qp_rq_doorbell(core, (uint32_t)page, object, arg);
        break;
    case VHCA_DB_CQ:
        vhca_cq_doorbell(core, (uint32_t)page, object, arg);
        break;
    case VHCA_DB_SRQ:
        vhca_srq_doorbell(core, (uint32_t)page, object, arg);
        break;
    }
}

/* ---------------------------------------------------------------------- */
/* Receive demux (docs/specs/vhca.rst, "Receive demux (RoCEv2)")           */
/* ---------------------------------------------------------------------- */

void vhca_gid_tbl_update_top(VhcaCore *core)
{
    uint32_t top = core->cfg.gid_tbl_len;

    while (top && !core->gid_tbl[top - 1].valid) {
        top--;
    }
    core->gid_tbl_top = top;
}

bool vhca_gid_is_ours(const VhcaCore *core,
                      const uint8_t gid[VHCA_GID_LEN])
{
    uint32_t i;

    for (i = 0; i < core->gid_tbl_top; i++) {
        if (core->gid_tbl[i].valid &&
            !memcmp(core->gid_tbl[i].gid, gid, VHCA_GID_LEN)) {
            return true;
        }
    }
    return false;
}

/*
 * A RoCEv2 packet is ours when its destination address is one of our
 * GIDs (an IPv4 address as the GID ::ffff:a.b.c.d, IBTA A17.4.1.1) or a
 * multicast group one of our UD QPs joined (ATTACH_MCAST).
 */
static bool vhca_demux_is_ours(const VhcaCore *core,
                               const VhcaWirePacket *pkt)
{
    return vhca_gid_is_ours(core, pkt->net.dgid) ||
           (vhca_gid_is_multicast(pkt->net.dgid) &&
            vhca_mcast_find(core, pkt->net.dgid));
}

bool vhca_core_can_receive(const VhcaCore *core)
{
    /*
     * Never hold frames back in the backend: RoCE frames must not wait
     * behind an empty Ethernet ring, and a NIC without a buffer drops.
     */
    (void)core;
    return true;
}

VhcaRxResult vhca_core_receive(VhcaCore *core, const uint8_t *buf,
                               size_t len)
{
    VhcaWirePacket pkt;

    /* Bad frames from the wire are counted, not logged as guest errors. */
    if (len < VHCA_ETH_HLEN) {
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        return VHCA_RX_ERROR;
    }

    /*
     * The frame is parsed once, into @pkt: up to the UDP port here, the
     * rest by the transport's receive path if the packet is ours.
     */
    if (vhca_wire_parse_net(buf, len, &pkt) == VHCA_WIRE_OK &&
        vhca_demux_is_ours(core, &pkt)) {
        vhca_count(core, VHCA_CNT_ROCE_RX_PACKETS, 1);
        vhca_rx_packet(core, buf, len, &pkt, false);
        return VHCA_RX_ROCE;
    }
    return vhca_eth_receive(core, buf, len);
}
