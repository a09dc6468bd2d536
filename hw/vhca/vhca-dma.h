/*
 * QEMU vhca: DMA between the engine and guest RAM (vhca-dma.c).
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_DMA_H
#define HW_VHCA_DMA_H

#include "exec/memory.h"
#include "hw/pci/pci_device.h"

/* Windows of guest address space whose RAM host pointer is kept. */
#define VHCA_DMA_WINDOW_SHIFT   21              /* 2 MiB */
#define VHCA_DMA_WINDOWS        64              /* direct-mapped, 128 MiB */

typedef struct VhcaDmaWindow {
    MemoryRegionCache cache;    /* cache.ptr: the window's RAM, or unused */
    uint64_t base;              /* guest address of the cache's byte 0 */
    uint64_t len;               /* bytes of RAM from base in the cache */
} VhcaDmaWindow;

typedef struct VhcaDma {
    PCIDevice *pdev;
    FlatView *fv;               /* the one the windows were made from */
    bool write_unfenced;        /* a write since the last full barrier */
    VhcaDmaWindow window[VHCA_DMA_WINDOWS];
} VhcaDma;

void vhca_dma_init(VhcaDma *dma, PCIDevice *pdev);
/* Drop every window (reset, exit); the next DMA makes them again. */
void vhca_dma_cleanup(VhcaDma *dma);
/*
 * Copy @len bytes between @buf and guest address @addr: 0, or -1 if any
 * part of the range is not guest RAM (then nothing is written).
 */
int vhca_dma_rw(VhcaDma *dma, uint64_t addr, void *buf, size_t len,
                bool is_write);

#endif /* HW_VHCA_DMA_H */
