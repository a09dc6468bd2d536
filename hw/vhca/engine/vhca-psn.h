/*
 * vhca engine: 24-bit packet and message sequence number arithmetic.
 *
 * PSNs (IBTA Vol 1 9.7.2) and MSNs (9.7.5.1, carried in the AETH) count
 * modulo 2^24.  Two numbers are compared through their signed distance:
 * half of the space lies ahead of a PSN and half behind it, which is how
 * the responder tells a new request from a duplicate and the requester a
 * valid ACK from a stale one.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_PSN_H
#define HW_VHCA_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define VHCA_PSN_BITS       24
#define VHCA_PSN_MASK       ((1u << VHCA_PSN_BITS) - 1)
/* The distance between two PSNs is in [-VHCA_PSN_HALF, VHCA_PSN_HALF). */
#define VHCA_PSN_HALF       (1u << (VHCA_PSN_BITS - 1))

#define VHCA_MSN_MASK       VHCA_PSN_MASK

static inline uint32_t vhca_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & VHCA_PSN_MASK;
}

/* a - b, as the signed distance in [-2^23, 2^23 - 1]. */
static inline int32_t vhca_psn_diff(uint32_t a, uint32_t b)
{
    uint32_t d = (a - b) & VHCA_PSN_MASK;

    /* Sign-extend from bit 23 without relying on signed overflow. */
    return (int32_t)(d ^ VHCA_PSN_HALF) - (int32_t)VHCA_PSN_HALF;
}

/* @a comes before @b in sequence order (modulo 2^24). */
static inline bool vhca_psn_before(uint32_t a, uint32_t b)
{
    return vhca_psn_diff(a, b) < 0;
}

static inline bool vhca_psn_after(uint32_t a, uint32_t b)
{
    return vhca_psn_diff(a, b) > 0;
}

static inline uint32_t vhca_msn_add(uint32_t msn, uint32_t n)
{
    return (msn + n) & VHCA_MSN_MASK;
}

#endif /* HW_VHCA_PSN_H */
