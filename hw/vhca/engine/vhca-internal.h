/*
 * vhca engine: the base layer's helpers - guest memory and byte order,
 * rings, counters, hooks, guest-error reports - shared by every engine
 * file (engine-internal; the RDMA objects are in vhca-rdma.h, the
 * transport in vhca-transport.h).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_INTERNAL_H
#define HW_VHCA_INTERNAL_H

#include "vhca-core.h"

#ifdef __GNUC__
#define VHCA_PRINTF(fmt_idx, arg_idx) \
    __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define VHCA_PRINTF(fmt_idx, arg_idx)
#endif

/*
 * QEMU builds with -ftrivial-auto-var-init=zero, which clears every local
 * variable on each call.  A WQE buffer on the data path is filled by its
 * DMA and read only as far as that wrote, and clearing its 128-256 bytes
 * for each packet was 5% of the device's time at 64 B (docs/benchmarks.rst,
 * "Device").  The attribute exempts such buffers, as QEMU 10.1's
 * QEMU_UNINITIALIZED does; QEMU 10.0, which the project builds, lacks it.
 */
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define VHCA_UNINITIALIZED __attribute__((uninitialized))
#endif
#endif
#ifndef VHCA_UNINITIALIZED
#define VHCA_UNINITIALIZED
#endif

/*
 * Guest-visible memory is little-endian whatever the host is: go through
 * bytes, never through host integer loads of guest data.
 */
static inline uint16_t vhca_ld_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t vhca_ld_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) |
           ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t vhca_ld_le64(const uint8_t *p)
{
    return vhca_ld_le32(p) | ((uint64_t)vhca_ld_le32(p + 4) << 32);
}

static inline void vhca_st_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void vhca_st_le32(uint8_t *p, uint32_t v)
{
    vhca_st_le16(p, (uint16_t)v);
    vhca_st_le16(p + 2, (uint16_t)(v >> 16));
}

static inline void vhca_st_le64(uint8_t *p, uint64_t v)
{
    vhca_st_le32(p, (uint32_t)v);
    vhca_st_le32(p + 4, (uint32_t)(v >> 32));
}

/* Network byte order, for frame headers and MADs. */
static inline uint16_t vhca_ld_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t vhca_ld_be32(const uint8_t *p)
{
    return ((uint32_t)vhca_ld_be16(p) << 16) | vhca_ld_be16(p + 2);
}

static inline uint64_t vhca_ld_be64(const uint8_t *p)
{
    return ((uint64_t)vhca_ld_be32(p) << 32) | vhca_ld_be32(p + 4);
}

static inline void vhca_st_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void vhca_st_be32(uint8_t *p, uint32_t v)
{
    vhca_st_be16(p, (uint16_t)(v >> 16));
    vhca_st_be16(p + 2, (uint16_t)v);
}

static inline void vhca_st_be64(uint8_t *p, uint64_t v)
{
    vhca_st_be32(p, (uint32_t)(v >> 32));
    vhca_st_be32(p + 4, (uint32_t)v);
}

static inline uint64_t vhca_ring_base(const VhcaRing *ring)
{
    return ((uint64_t)ring->base_hi << 32) | ring->base_lo;
}

static inline uint32_t vhca_ring_entries(const VhcaRing *ring)
{
    return 1u << ring->log_size;
}

/* Guest address of @index's slot; valid only once the ring is running. */
static inline uint64_t vhca_ring_slot_addr(const VhcaRing *ring,
                                           uint32_t index, uint32_t stride)
{
    return vhca_ring_base(ring) +
           (uint64_t)(index & (vhca_ring_entries(ring) - 1)) * stride;
}

/* A base and size the device may start a ring with. */
bool vhca_ring_config_ok(const VhcaRing *ring, uint32_t align,
                         uint32_t max_log_size);

static inline void vhca_count(VhcaCore *core, enum vhca_counter counter,
                              uint64_t n)
{
    core->counters[counter] += n;
}

/*
 * Call the optional VhcaCoreOps hook @hook with its arguments after the
 * opaque pointer; an expression, so it also fits in a macro's comma list.
 */
#define VHCA_HOOK(core, hook, ...)                                          \
    ((core)->ops->hook ? (core)->ops->hook((core)->opaque, __VA_ARGS__)     \
                       : (void)0)

void vhca_guest_error(VhcaCore *core, VhcaGuestError kind,
                      const char *fmt, ...) VHCA_PRINTF(3, 4);

/* Refuse a register write: set ERROR and tell the guest why. */
void vhca_reg_refuse(VhcaCore *core, enum vhca_reg_error error,
                     const char *fmt, ...) VHCA_PRINTF(3, 4);

static inline int vhca_dma_read(VhcaCore *core, uint64_t addr, void *buf,
                                size_t len)
{
    return core->ops->dma_read(core->opaque, addr, buf, len);
}

static inline int vhca_dma_write(VhcaCore *core, uint64_t addr,
                                 const void *buf, size_t len)
{
    return core->ops->dma_write(core->opaque, addr, buf, len);
}

static inline void vhca_raise_irq(VhcaCore *core, unsigned vector)
{
    if (core->ops->raise_irq && vector < core->cfg.num_vectors) {
        core->ops->raise_irq(core->opaque, vector);
    }
}

/* vhca-regs.c: BAR0 EQ_DB(eqn) registers of the completion EQs. */
static inline bool vhca_reg_is_eq_db(uint64_t offset, uint32_t *eqn)
{
    if (offset < VHCA_REG_EQ_DB(1) ||
        offset > VHCA_REG_EQ_DB(VHCA_MAX_COMP_EQS)) {
        return false;
    }
    *eqn = (uint32_t)((offset - VHCA_REG_EQ_DB(0)) / 4);
    return true;
}

#endif /* HW_VHCA_INTERNAL_H */
