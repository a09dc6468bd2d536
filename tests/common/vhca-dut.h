/*
 * The vhca device under test, as the test cases shared by both tiers see
 * it: start a device with its admin queue running, execute an admin
 * command, reach guest memory, read a register.  Each tier implements
 * these functions over its own driver code, and links the shared cases
 * (vhca-admin-cases.c) with them:
 *
 *   tests/unit/vhca-harness-dut.c   the engine in-process (vhca-harness.c)
 *   tests/qtest/vhca-qdut.c         QEMU through libqtest (vhca-qdriver.c)
 *
 * Nothing here is specific to one tier: a case written against this
 * header runs, unchanged, in both.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_DUT_H
#define VHCA_DUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhca_hw.h"

typedef struct VhcaDut VhcaDut;

/* The device's properties (QEMU: -device vhca,gid-table-len=...,...). */
typedef struct VhcaDutConfig {
    uint32_t gid_tbl_len;
    uint32_t db_pages;
    uint32_t vectors;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
} VhcaDutConfig;

/*
 * DMA addresses that are not guest RAM, which the device must refuse
 * (spec: "outside guest RAM").  The first three are holes the tier
 * provides (vhca_dut_hole()); the last two are relative to the end of
 * RAM and to 2^64, for a buffer of a given length.
 */
typedef enum VhcaBadDma {
    VHCA_BAD_DMA_UNMAPPED,      /* nothing there */
    VHCA_BAD_DMA_OWN_BAR0,      /* the device's own registers */
    VHCA_BAD_DMA_OTHER_MMIO,    /* another device's registers (HPET) */
    VHCA_BAD_DMA_ACROSS_RAM_END,/* starts in RAM, ends past it */
    VHCA_BAD_DMA_WRAPS,         /* addr + len wraps around 2^64 */
    VHCA_BAD_DMA_MAX
} VhcaBadDma;

static inline const char *vhca_bad_dma_kind_name(VhcaBadDma kind)
{
    switch (kind) {
    case VHCA_BAD_DMA_UNMAPPED:
        return "unmapped";
    case VHCA_BAD_DMA_OWN_BAR0:
        return "own-bar0";
    case VHCA_BAD_DMA_OTHER_MMIO:
        return "other-mmio";
    case VHCA_BAD_DMA_ACROSS_RAM_END:
        return "across-ram-end";
    case VHCA_BAD_DMA_WRAPS:
        return "wraps";
    default:
        return "?";
    }
}

/*
 * Start a device with @cfg, its admin queue and async EQ enabled (as
 * vhca_test_start() + vhca_admin_setup() or harness_new() +
 * harness_enable() do), and nothing else set up: no object, no GID.
 * The qtest tier may hand out a device that ran an earlier case, reset.
 */
VhcaDut *vhca_dut_start(const VhcaDutConfig *cfg);
void vhca_dut_stop(VhcaDut *dut);

/*
 * Execute one admin command the way a driver does: post it, wait for
 * done, consume its CMD_DONE event (any other event is kept aside, never
 * an error).  @in_len <= 32.  Returns the status; @out (16 bytes, may be
 * NULL) gets the entry's output and @syndrome (may be NULL) its syndrome.
 */
uint8_t vhca_dut_cmd(VhcaDut *dut, uint16_t opcode, const void *in,
                     size_t in_len, void *out, uint32_t *syndrome);

/* Zeroed guest RAM: @len bytes rounded up to whole 4 KiB pages, aligned. */
uint64_t vhca_dut_alloc(VhcaDut *dut, size_t len);
void vhca_dut_write(VhcaDut *dut, uint64_t addr, const void *buf,
                    size_t len);
void vhca_dut_read(VhcaDut *dut, uint64_t addr, void *buf, size_t len);

uint32_t vhca_dut_reg(VhcaDut *dut, uint32_t reg);
/*
 * One 64-bit doorbell write at @offset (VHCA_DB_*) of doorbell page @page
 * in BAR2: @object in the low half, @value in the high half.
 */
void vhca_dut_doorbell(VhcaDut *dut, uint32_t page, uint32_t offset,
                       uint32_t object, uint32_t value);
uint64_t vhca_dut_counter(VhcaDut *dut, enum vhca_counter c);

/* The first address past guest RAM (RAM below it is all usable as DMA). */
uint64_t vhca_dut_ram_end(VhcaDut *dut);
/* UNMAPPED, OWN_BAR0 or OTHER_MMIO: an address of that kind. */
uint64_t vhca_dut_hole(VhcaDut *dut, VhcaBadDma kind);

/*
 * Guest errors the device reported so far (LOG_GUEST_ERROR), or -1 if
 * this tier cannot see them.
 */
int vhca_dut_guest_errors(VhcaDut *dut);

/*
 * What only this tier can check after a refused command: nothing was
 * written where it must not be (qtest: another device's registers).
 */
void vhca_dut_check_intact(VhcaDut *dut);

/*
 * Register a test case whose vhca_dut_start() asks for @cfg.  The qtest
 * tier runs each in a child process of its own, so a failure or a QEMU
 * crash fails that case only; it keeps one QEMU per configuration for
 * all the cases that name it, and vhca_dut_start() resets the device
 * through CTRL.RESET (tests/qtest/vhca-qdut.c).
 */
void vhca_dut_add_test(const char *path, const VhcaDutConfig *cfg,
                       const void *data, void (*fn)(const void *data));

#endif /* VHCA_DUT_H */
