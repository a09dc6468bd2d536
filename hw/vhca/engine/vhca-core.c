/*
 * vhca engine: the base every other engine file builds on - the names the
 * trace events print, the reports of guest mistakes, the checks of the
 * device's configuration and of a ring's registers, the port's active
 * MTU and the clock.  It calls no other engine file but the wire format's.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vhca-internal.h"
#include "vhca-wire.h"

/*
 * Bytes a RoCEv2 packet adds around its payload in the worst case, as the
 * Linux RDMA core counts them in iboe_get_mtu(): GRH/IPv6 40, UDP 8,
 * BTH 12, XRCETH 4, AtomicETH 28, ICRC 4.  The device picks the active MTU
 * the same way so that it and the driver agree.
 */
#define VHCA_ROCE_MAX_OVERHEAD  (40 + 8 + 12 + 4 + 28 + 4)

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
    case VHCA_QPT_SMI:
        return "smi";
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
    VHCA_LIMIT("x-rx-frame-rate", rx_frame_rate, 0,
               VHCA_CORE_RX_FRAME_RATE_MAX),
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

/* ---------------------------------------------------------------------- */
/* The port and the clock                                                 */
/* ---------------------------------------------------------------------- */

/*
 * The port's active MTU (IBTA encoding), which also bounds UD messages
 * (IBTA 10.2.1): on Ethernet the largest whose packets fit the MTU.
 */
uint8_t vhca_port_active_mtu(const VhcaCore *core)
{
    uint32_t eth_mtu = core->mtu;
    static const struct {
        uint32_t bytes;
        uint8_t code;
    } ib_mtus[] = {
        { 4096, VHCA_IB_MTU_4096 },
        { 2048, VHCA_IB_MTU_2048 },
        { 1024, VHCA_IB_MTU_1024 },
        { 512, VHCA_IB_MTU_512 },
        { 256, VHCA_IB_MTU_256 },
    };
    size_t i;

    /*
     * The IB port has no Ethernet MTU: its active MTU is NeighborMTU,
     * what the SM enabled on the link (IBTA 14.2.5.6), 4096 until then.
     */
    if (core->cfg.link == VHCA_LINK_IB) {
        return core->ib.neighbor_mtu ? core->ib.neighbor_mtu
                                     : VHCA_IB_MTU_4096;
    }
    for (i = 0; i < sizeof(ib_mtus) / sizeof(ib_mtus[0]); i++) {
        if (eth_mtu >= ib_mtus[i].bytes + VHCA_ROCE_MAX_OVERHEAD) {
            return ib_mtus[i].code;
        }
    }
    /* Not even 256 bytes fit: like rxe, report 0 (no usable IB MTU). */
    return 0;
}

uint64_t vhca_now(VhcaCore *core)
{
    return core->ops->now_ns ? core->ops->now_ns(core->opaque) : 0;
}
