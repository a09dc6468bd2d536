/*
 * vhca engine: the registers the guest reads and writes - BAR0 (CTRL,
 * STATUS, the rings' registers, the counters, the admin queue and EQ
 * doorbells) and the BAR2 doorbell pages - and where each write goes
 * (docs/specs/vhca.rst, "BAR0 registers", "Doorbell pages").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

#define VHCA_ADMQ_ALIGN         64
#define VHCA_AEQ_ALIGN          64

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

/*
 * The Ethernet NIC's registers (TX and RX rings, ETH_CTRL, ETH_IRQ_ARM)
 * do not exist on the InfiniBand port: CAPS has no VHCA_CAP_ETH there.
 */
static bool vhca_reg_absent(const VhcaCore *core, uint64_t offset)
{
    return core->cfg.link == VHCA_LINK_IB &&
           offset >= VHCA_REG_TX_BASE_LO && offset <= VHCA_REG_ETH_IRQ_ARM;
}

uint64_t vhca_core_reg_read(VhcaCore *core, uint64_t offset, unsigned size)
{
    unsigned index;
    bool hi;

    if (!vhca_reg_access_ok(core, false, offset, size, 0)) {
        return 0;
    }
    if (vhca_reg_absent(core, offset)) {
        goto unassigned;
    }

    switch (offset) {
    case VHCA_REG_MAGIC:
        return VHCA_MAGIC;
    case VHCA_REG_VERSION:
        return VHCA_VERSION;
    case VHCA_REG_CAPS:
        return core->cfg.link == VHCA_LINK_IB ? VHCA_CAP_IB
                                              : VHCA_CAP_ETH | VHCA_CAP_ROCE;
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

unassigned:
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
    if (vhca_reg_absent(core, offset)) {
        goto unassigned;
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

unassigned:
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
