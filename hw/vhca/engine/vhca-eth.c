/*
 * vhca engine: the Ethernet datapath, TX and RX descriptor rings, the RX
 * address filter (SET_RX_FILTER) and interrupt moderation of vector 1
 * (docs/specs/vhca.rst, "Ethernet datapath").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-transport.h"

#define VHCA_ETH_RING_ALIGN     16
#define VHCA_DESC_SIZE          sizeof(struct vhca_eth_desc)
#define VHCA_DESC_LEN_OFFSET    offsetof(struct vhca_eth_desc, len)
#define VHCA_DESC_FLAGS_OFFSET  offsetof(struct vhca_eth_desc, flags)

static bool vhca_tx_enabled(const VhcaCore *core)
{
    return core->eth_ctrl & VHCA_ETH_CTRL_TX_ENABLE;
}

static bool vhca_rx_enabled(const VhcaCore *core)
{
    return core->eth_ctrl & VHCA_ETH_CTRL_RX_ENABLE;
}

static uint32_t vhca_max_frame(const VhcaCore *core)
{
    return core->mtu + VHCA_ETH_OVERHEAD;
}

/*
 * Completions happened: interrupt now if armed, else remember them so that
 * the next ETH_IRQ_ARM interrupts at once (NAPI re-arms after polling).
 */
static void vhca_eth_completed(VhcaCore *core)
{
    if (core->eth_irq_armed) {
        core->eth_irq_armed = false;
        vhca_raise_irq(core, VHCA_VECTOR_ETH);
    } else {
        core->eth_irq_pending = true;
    }
}

void vhca_eth_irq_arm(VhcaCore *core)
{
    if (core->eth_irq_pending) {
        core->eth_irq_pending = false;
        vhca_raise_irq(core, VHCA_VECTOR_ETH);
        return;
    }
    core->eth_irq_armed = true;
}

/* Start @ring if its configuration is valid; returns whether it started. */
static bool vhca_eth_ring_start(VhcaCore *core, VhcaRing *ring,
                                const char *name)
{
    if (!vhca_ring_config_ok(ring, VHCA_ETH_RING_ALIGN,
                             VHCA_ETH_MAX_LOG_SIZE)) {
        VHCA_HOOK(core, err_ring_config,
                  ring == &core->tx ? VHCA_RING_TX : VHCA_RING_RX,
                  vhca_ring_base(ring), ring->log_size);
        vhca_reg_refuse(core, VHCA_ERR_BAD_RING_CONFIG,
                        "%s enable refused: base 0x%llx log_size %u (need "
                        "non-zero, %u-byte aligned, 1..%u)", name,
                        (unsigned long long)vhca_ring_base(ring),
                        ring->log_size, VHCA_ETH_RING_ALIGN,
                        VHCA_ETH_MAX_LOG_SIZE);
        return false;
    }
    ring->pi = 0;
    ring->ci = 0;
    return true;
}

void vhca_eth_ctrl_write(VhcaCore *core, uint32_t value)
{
    uint32_t old = core->eth_ctrl;
    uint32_t ctrl = value & VHCA_ETH_CTRL_PROMISC;

    if (value & VHCA_ETH_CTRL_TX_ENABLE) {
        if ((old & VHCA_ETH_CTRL_TX_ENABLE) ||
            vhca_eth_ring_start(core, &core->tx, "TX")) {
            ctrl |= VHCA_ETH_CTRL_TX_ENABLE;
        }
    }
    if (value & VHCA_ETH_CTRL_RX_ENABLE) {
        if ((old & VHCA_ETH_CTRL_RX_ENABLE) ||
            vhca_eth_ring_start(core, &core->rx, "RX")) {
            ctrl |= VHCA_ETH_CTRL_RX_ENABLE;
        }
    }
    core->eth_ctrl = ctrl;

    /* Stopping RX, or starting it, changes what the backend may send. */
    if (((old ^ ctrl) & VHCA_ETH_CTRL_RX_ENABLE) && core->ops->rx_ready) {
        core->ops->rx_ready(core->opaque);
    }
}

/*
 * A producer index may run at most a ring's worth ahead of the consumer
 * index; anything else is a driver bug, refused as a whole.
 */
static bool vhca_eth_doorbell_ok(VhcaCore *core, const VhcaRing *ring,
                                 bool enabled, const char *name,
                                 VhcaGuestError kind, uint32_t pi)
{
    VhcaRingId id = kind == VHCA_GUEST_ERR_TX ? VHCA_RING_TX : VHCA_RING_RX;
    uint32_t entries;

    if (!enabled) {
        VHCA_HOOK(core, ub_ring_doorbell, id, 0, pi);
        vhca_guest_error(core, kind, "%s_PI 0x%x written while the ring is "
                         "disabled, ignoring", name, pi);
        return false;
    }
    /* Only enabling the ring checks its LOG_SIZE: until then, any value. */
    entries = vhca_ring_entries(ring);
    if (pi - ring->ci > entries) {
        VHCA_HOOK(core, err_doorbell_index, id, 0, pi, ring->ci,
                  ring->ci + entries);
        vhca_reg_refuse(core, VHCA_ERR_ETH_DOORBELL,
                        "%s_PI 0x%x is beyond %s_CI 0x%x plus the %u ring "
                        "entries", name, pi, name, ring->ci, entries);
        return false;
    }
    return true;
}

static int vhca_desc_write_flags(VhcaCore *core, uint64_t desc_addr,
                                 uint16_t flags)
{
    uint8_t buf[2];

    vhca_st_le16(buf, flags);
    return vhca_dma_write(core, desc_addr + VHCA_DESC_FLAGS_OFFSET, buf,
                          sizeof(buf));
}

/*
 * Transmit the descriptor at TX_CI.  Returns false if the descriptor itself
 * cannot be read or completed: then TX stops until the next doorbell.
 */
static bool vhca_eth_tx_one(VhcaCore *core)
{
    uint8_t desc[VHCA_DESC_SIZE];
    uint64_t desc_addr = vhca_ring_slot_addr(&core->tx, core->tx.ci,
                                             VHCA_DESC_SIZE);
    uint64_t buf_addr;
    uint16_t len;
    uint16_t flags = VHCA_ETH_DESC_DONE;

    if (vhca_dma_read(core, desc_addr, desc, sizeof(desc))) {
        vhca_count(core, VHCA_CNT_TX_ERRORS, 1);
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_TX, 0, core->tx.ci,
                  desc_addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_TX,
                         "cannot read TX descriptor %u at 0x%llx (not guest "
                         "RAM), TX stopped", core->tx.ci,
                         (unsigned long long)desc_addr);
        return false;
    }
    buf_addr = vhca_ld_le64(desc + offsetof(struct vhca_eth_desc, addr));
    len = vhca_ld_le16(desc + VHCA_DESC_LEN_OFFSET);

    if (len < VHCA_ETH_HLEN || len > vhca_max_frame(core)) {
        flags |= VHCA_ETH_DESC_ERROR;
        vhca_count(core, VHCA_CNT_TX_ERRORS, 1);
        VHCA_HOOK(core, err_frame_len, VHCA_RING_TX, core->tx.ci, len,
                  VHCA_ETH_HLEN, vhca_max_frame(core));
        vhca_guest_error(core, VHCA_GUEST_ERR_TX,
                         "TX descriptor %u: frame length %u outside %u..%u",
                         core->tx.ci, len, VHCA_ETH_HLEN,
                         vhca_max_frame(core));
    } else if (vhca_dma_read(core, buf_addr, core->tx_frame, len)) {
        flags |= VHCA_ETH_DESC_ERROR;
        vhca_count(core, VHCA_CNT_TX_ERRORS, 1);
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_TX, 0, core->tx.ci,
                  buf_addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_TX,
                         "TX descriptor %u: cannot read %u bytes at 0x%llx "
                         "(not guest RAM)", core->tx.ci, len,
                         (unsigned long long)buf_addr);
    } else if (core->link_up) {
        vhca_count(core, VHCA_CNT_TX_PACKETS, 1);
        vhca_count(core, VHCA_CNT_TX_BYTES, len);
        if (core->ops->send_frame) {
            core->ops->send_frame(core->opaque, core->tx_frame, len);
        }
    }
    /* else: no carrier, the frame completes and is dropped. */

    if (vhca_desc_write_flags(core, desc_addr, flags)) {
        vhca_count(core, VHCA_CNT_TX_ERRORS, 1);
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_TX, 0, core->tx.ci,
                  desc_addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_TX,
                         "cannot complete TX descriptor %u at 0x%llx, TX "
                         "stopped", core->tx.ci,
                         (unsigned long long)desc_addr);
        return false;
    }
    core->tx.ci++;
    return true;
}

/*
 * Is the frame at TX_CI of a priority the link partner paused (802.1Qbb)?
 * Then the ring waits for the pause to end: one ring, so what is behind
 * it waits too.  A descriptor or buffer that cannot be read is not held:
 * vhca_eth_tx_one() reports it.
 */
static bool vhca_eth_tx_head_paused(VhcaCore *core)
{
    uint8_t desc[VHCA_DESC_SIZE];
    uint8_t head[VHCA_ETH_HLEN + VHCA_VLAN_HLEN + 2];
    uint64_t desc_addr = vhca_ring_slot_addr(&core->tx, core->tx.ci,
                                             VHCA_DESC_SIZE);
    uint16_t len;

    if (!core->pfc.enable ||
        vhca_dma_read(core, desc_addr, desc, sizeof(desc))) {
        return false;
    }
    len = vhca_ld_le16(desc + VHCA_DESC_LEN_OFFSET);
    if (len > sizeof(head)) {
        len = sizeof(head);
    }
    if (vhca_dma_read(core, vhca_ld_le64(desc + offsetof(struct vhca_eth_desc,
                                                         addr)),
                      head, len)) {
        return false;
    }
    return vhca_pfc_paused(core, vhca_wire_frame_priority(head, len),
                           vhca_now(core));
}

/* Send what the TX ring holds, from TX_CI to TX_PI. */
static void vhca_eth_tx_run(VhcaCore *core)
{
    uint32_t completed = 0;

    /* send_frame may re-enter through the backend: re-check each time. */
    while (vhca_tx_enabled(core) && core->tx.ci != core->tx.pi) {
        if (vhca_eth_tx_head_paused(core)) {
            core->pfc.ring_held = true;
            break;
        }
        if (!vhca_eth_tx_one(core)) {
            break;
        }
        completed++;
    }
    if (completed) {
        vhca_eth_completed(core);
    }
}

void vhca_eth_tx_doorbell(VhcaCore *core, uint32_t pi)
{
    if (!vhca_eth_doorbell_ok(core, &core->tx, vhca_tx_enabled(core), "TX",
                              VHCA_GUEST_ERR_TX, pi)) {
        return;
    }
    core->tx.pi = pi;
    vhca_eth_tx_run(core);
}

void vhca_eth_tx_resume(VhcaCore *core)
{
    core->pfc.ring_held = false;
    vhca_eth_tx_run(core);
}

void vhca_eth_rx_doorbell(VhcaCore *core, uint32_t pi)
{
    uint32_t old_pi = core->rx.pi;

    if (!vhca_eth_doorbell_ok(core, &core->rx, vhca_rx_enabled(core), "RX",
                              VHCA_GUEST_ERR_RX, pi)) {
        return;
    }
    core->rx.pi = pi;
    if (pi != old_pi && core->ops->rx_ready) {
        core->ops->rx_ready(core->opaque);
    }
}

static bool vhca_eth_mcast_listed(const VhcaCore *core, const uint8_t *dst)
{
    uint32_t i;

    for (i = 0; i < core->rx_mcast_count; i++) {
        if (!memcmp(dst, core->rx_mcast[i], VHCA_ETH_ALEN)) {
            return true;
        }
    }
    return false;
}

/*
 * RX filter: anything when PROMISC; unicast to our MAC; broadcast; other
 * multicast with ALLMULTI or when SET_RX_FILTER listed it.
 */
static bool vhca_eth_rx_accept(const VhcaCore *core, const uint8_t *frame)
{
    static const uint8_t broadcast[VHCA_ETH_ALEN] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff
    };

    if (core->eth_ctrl & VHCA_ETH_CTRL_PROMISC) {
        return true;
    }
    if (!(frame[0] & 1)) {
        return !memcmp(frame, core->mac, VHCA_ETH_ALEN);
    }
    return !memcmp(frame, broadcast, VHCA_ETH_ALEN) ||
           (core->rx_filter_flags & VHCA_RX_FILTER_ALLMULTI) ||
           vhca_eth_mcast_listed(core, frame);
}

/*
 * The list is checked as a whole before any of it is taken, so a refused
 * command leaves the previous filter in place.
 */
uint8_t vhca_cmd_set_rx_filter(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_rx_filter)];
    const uint8_t *macs = raw + offsetof(struct vhca_rx_filter, mac);
    uint32_t flags, count, i;
    uint8_t status;

    status = vhca_cmd_mailbox_read_flags(core, ctx, raw, sizeof(raw),
                                         offsetof(struct vhca_rx_filter,
                                                  flags),
                                         VHCA_RX_FILTER_ALLMULTI, &flags);
    if (status != VHCA_ST_OK) {
        return status;
    }
    count = vhca_ld_le32(raw + offsetof(struct vhca_rx_filter, count));

    if (count > VHCA_MAX_MCAST_MACS) {
        ctx->syndrome = count;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "%u addresses, more than %u", count,
                             VHCA_MAX_MCAST_MACS);
    }
    for (i = 0; i < count; i++) {
        const uint8_t *mac = macs + 8 * i;

        if (!(mac[0] & 1)) {
            ctx->syndrome = i;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "entry %u, %02x:%02x:%02x:%02x:%02x:%02x, "
                                 "is not multicast", i, mac[0], mac[1],
                                 mac[2], mac[3], mac[4], mac[5]);
        }
    }

    core->rx_filter_flags = flags;
    core->rx_mcast_count = count;
    for (i = 0; i < count; i++) {
        memcpy(core->rx_mcast[i], macs + 8 * i, VHCA_ETH_ALEN);
    }
    return VHCA_ST_OK;
}

static VhcaRxResult vhca_eth_rx_to_ring(VhcaCore *core, const uint8_t *buf,
                                        size_t len)
{
    uint8_t desc[VHCA_DESC_SIZE];
    uint64_t desc_addr = vhca_ring_slot_addr(&core->rx, core->rx.ci,
                                             VHCA_DESC_SIZE);
    uint64_t buf_addr;
    uint16_t buf_len;
    uint8_t len_flags[4];

    if (core->rx.pi == core->rx.ci) {
        vhca_count(core, VHCA_CNT_RX_NO_BUFFER, 1);
        return VHCA_RX_NO_BUFFER;
    }
    if (vhca_dma_read(core, desc_addr, desc, sizeof(desc))) {
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_RX, 0, core->rx.ci,
                  desc_addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_RX,
                         "cannot read RX descriptor %u at 0x%llx (not guest "
                         "RAM), frame dropped", core->rx.ci,
                         (unsigned long long)desc_addr);
        return VHCA_RX_ERROR;
    }
    buf_addr = vhca_ld_le64(desc + offsetof(struct vhca_eth_desc, addr));
    buf_len = vhca_ld_le16(desc + VHCA_DESC_LEN_OFFSET);

    if (len > buf_len) {
        /* The buffer stays posted: the next, smaller frame may fit. */
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        VHCA_HOOK(core, err_frame_len, VHCA_RING_RX, core->rx.ci,
                  (uint32_t)len, 0, buf_len);
        vhca_guest_error(core, VHCA_GUEST_ERR_RX,
                         "frame of %zu bytes does not fit RX buffer %u of "
                         "%u bytes, dropped", len, core->rx.ci, buf_len);
        return VHCA_RX_ERROR;
    }

    if (vhca_dma_write(core, buf_addr, buf, len)) {
        /*
         * Complete the descriptor with ERROR rather than retry it forever:
         * the driver learns about the bad buffer and the ring keeps going.
         */
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_RX, 0, core->rx.ci,
                  buf_addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_RX,
                         "RX descriptor %u: cannot write %zu bytes at 0x%llx "
                         "(not guest RAM)", core->rx.ci, len,
                         (unsigned long long)buf_addr);
        len = 0;
        vhca_st_le16(len_flags + 2, VHCA_ETH_DESC_DONE | VHCA_ETH_DESC_ERROR);
    } else {
        vhca_st_le16(len_flags + 2, VHCA_ETH_DESC_DONE);
    }
    vhca_st_le16(len_flags, (uint16_t)len);

    /* len first, flags last: flags tell the driver the entry is valid. */
    if (vhca_dma_write(core, desc_addr + VHCA_DESC_LEN_OFFSET, len_flags, 2) ||
        vhca_dma_write(core, desc_addr + VHCA_DESC_FLAGS_OFFSET,
                       len_flags + 2, 2)) {
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_RX, 0, core->rx.ci,
                  desc_addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_RX,
                         "cannot complete RX descriptor %u at 0x%llx, frame "
                         "dropped", core->rx.ci,
                         (unsigned long long)desc_addr);
        return VHCA_RX_ERROR;
    }
    core->rx.ci++;
    vhca_eth_completed(core);

    if (len == 0) {
        return VHCA_RX_ERROR;
    }
    vhca_count(core, VHCA_CNT_RX_PACKETS, 1);
    vhca_count(core, VHCA_CNT_RX_BYTES, len);
    return VHCA_RX_DELIVERED;
}

VhcaRxResult vhca_eth_receive(VhcaCore *core, const uint8_t *buf, size_t len)
{
    if (!vhca_rx_enabled(core)) {
        return VHCA_RX_FILTERED;
    }
    if (!vhca_eth_rx_accept(core, buf)) {
        /* Unicast for another station is not counted: it is not ours. */
        if (buf[0] & 1) {
            vhca_count(core, VHCA_CNT_RX_MCAST_FILTERED, 1);
        }
        return VHCA_RX_FILTERED;
    }
    if (len > vhca_max_frame(core)) {
        vhca_count(core, VHCA_CNT_RX_ERRORS, 1);
        return VHCA_RX_ERROR;
    }
    return vhca_eth_rx_to_ring(core, buf, len);
}
