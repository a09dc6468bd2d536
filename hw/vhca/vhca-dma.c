/*
 * QEMU vhca: DMA between the engine and guest RAM.
 *
 * The device may only touch guest RAM (docs/specs/vhca.rst: a buffer
 * outside guest RAM fails with BAD_ADDR or an ERROR completion).  A plain
 * pci_dma_rw() would also reach device MMIO, including this device's own
 * BARs, so the slow path checks what the bus master address space maps
 * the whole range to first, then does the access.
 *
 * That is two walks of QEMU's memory map per DMA, and a small message
 * makes several DMAs (its WQE, payload, CQE); the walks were a fifth of
 * the device's time at 64-byte messages (docs/benchmarks.rst, "Device").
 * So the device keeps, for the 2 MiB windows of guest address space it
 * used last, the host pointer of their RAM in a MemoryRegionCache (QEMU's
 * own mechanism for a device's hot ranges, as virtio's rings use), and a
 * DMA that lies in one such window is a memcpy().  A window is good while
 * the address space's flat view is the one it was made from: what changes
 * what the device can reach (bus mastering off, memory hot-plug) makes a
 * new flat view, and the windows are made again, or not at all, at the
 * next DMA; until then they keep a reference on the RAM they were made
 * for, which a reset or removal of the device drops.  Behind a vIOMMU the
 * address space is not RAM but the IOMMU's region, no window is made and
 * every DMA takes the slow path.  Everything runs under the BQL, as the
 * flat view only changes under it.  Writes go through
 * address_space_cache_invalidate(), which marks the pages dirty and
 * invalidates translated guest code on them, as address_space_write()
 * does.
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/rcu.h"
#include "system/dma.h"

#include "vhca-dma.h"
#include "trace.h"

#define VHCA_DMA_WINDOW_SIZE    (1ull << VHCA_DMA_WINDOW_SHIFT)
#define VHCA_DMA_PAGE_MASK      (~(uint64_t)4095)

/* Called in an RCU read section (the flat view is RCU-protected). */
static bool vhca_dma_range_is_ram(PCIDevice *pdev, uint64_t addr,
                                  size_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(pdev);

    if (len == 0) {
        return true;
    }
    if (addr + len - 1 < addr) {
        return false;
    }

    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen,
                                                   is_write,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (is_write && memory_region_is_rom(mr)) || plen == 0) {
            return false;
        }
        addr += plen;
        len -= MIN(plen, len);
    }
    return true;
}

/*
 * The whole range must be guest RAM, or nothing moves.  The check and the
 * access share one RCU read section: pci_dma_rw()'s own rcu_read_lock()
 * then only nests.
 */
static int vhca_dma_rw_slow(PCIDevice *pdev, uint64_t addr, void *buf,
                            size_t len, bool is_write)
{
    MemTxResult res;

    RCU_READ_LOCK_GUARD();
    if (!vhca_dma_range_is_ram(pdev, addr, len, is_write)) {
        trace_vhca_err_dma_not_ram(addr, len, is_write);
        return -1;
    }
    res = pci_dma_rw(pdev, addr, buf, len,
                     is_write ? DMA_DIRECTION_FROM_DEVICE
                              : DMA_DIRECTION_TO_DEVICE,
                     MEMTXATTRS_UNSPECIFIED);
    if (res != MEMTX_OK) {
        trace_vhca_err_dma(addr, len, is_write, res);
        return -1;
    }
    return 0;
}

/*
 * Make @w the window at guest address @start, up to the end of its 2 MiB:
 * the RAM from @start, as far as it goes.
 */
static void vhca_dma_window_make(VhcaDma *dma, VhcaDmaWindow *w,
                                 uint64_t start)
{
    uint64_t end = (start | (VHCA_DMA_WINDOW_SIZE - 1)) + 1;
    int64_t got;

    address_space_cache_destroy(&w->cache);
    got = address_space_cache_init(&w->cache,
                                   pci_get_address_space(dma->pdev), start,
                                   end - start, true);
    w->base = start;
    w->len = w->cache.ptr && got > 0 ? (uint64_t)got : 0;
    trace_vhca_dma_window(start, w->len);
}

/*
 * The window that holds [@addr, +@len) as RAM, made if need be, or NULL:
 * the range crosses a window's end or is not all RAM.
 */
static VhcaDmaWindow *vhca_dma_window(VhcaDma *dma, uint64_t addr,
                                      size_t len)
{
    AddressSpace *as = pci_get_address_space(dma->pdev);
    uint64_t window = addr & ~(VHCA_DMA_WINDOW_SIZE - 1);
    VhcaDmaWindow *w = &dma->window[(addr >> VHCA_DMA_WINDOW_SHIFT) %
                                    VHCA_DMA_WINDOWS];

    if (len > VHCA_DMA_WINDOW_SIZE - (addr - window)) {
        return NULL;
    }
    /* A new flat view: every window goes, and its references with it. */
    if (dma->fv != address_space_to_flatview(as)) {
        vhca_dma_cleanup(dma);
        dma->fv = address_space_to_flatview(as);
    }
    /*
     * cache.mrs.mr: the slot holds a window; one of another 2 MiB is
     * replaced.  A window starts at its 2 MiB boundary.  Where that does
     * not cover the range (the first 2 MiB of a PC: RAM to 640 KiB, the
     * VGA hole and the BIOS, RAM again from 1 MiB), it starts again at the
     * page of the address that needed it.
     */
    if (!w->cache.mrs.mr ||
        (w->base & ~(VHCA_DMA_WINDOW_SIZE - 1)) != window) {
        vhca_dma_window_make(dma, w, window);
    }
    if ((addr < w->base || addr - w->base + len > w->len) &&
        (addr & VHCA_DMA_PAGE_MASK) != w->base) {
        vhca_dma_window_make(dma, w, addr & VHCA_DMA_PAGE_MASK);
    }
    return addr >= w->base && addr - w->base + len <= w->len ? w : NULL;
}

/*
 * As dma_memory_rw(): others see the device's DMAs in the order it makes
 * them.  dma_memory_rw() puts a full barrier before each; only a read
 * after a write needs one, a write is ordered after what came before by a
 * release fence and a read after earlier reads by an acquire fence, both
 * free on x86.  The full barriers, with the two of an RCU read section
 * per write, were three quarters of vhca_dma_rw() at 64-byte messages
 * (docs/benchmarks.rst, "Device").
 */
static void vhca_dma_order(VhcaDma *dma, bool is_write)
{
    if (is_write) {
        smp_mb_release();
        dma->write_unfenced = true;
    } else if (dma->write_unfenced) {
        smp_mb();
        dma->write_unfenced = false;
    } else {
        smp_mb_acquire();
    }
}

int vhca_dma_rw(VhcaDma *dma, uint64_t addr, void *buf, size_t len,
                bool is_write)
{
    VhcaDmaWindow *w;

    if (len == 0) {
        return 0;
    }
    vhca_dma_order(dma, is_write);
    w = vhca_dma_window(dma, addr, len);
    if (!w) {
        return vhca_dma_rw_slow(dma->pdev, addr, buf, len, is_write);
    }
    if (is_write) {
        /*
         * The dirty bitmaps are RCU-protected.  Nested (a counter) in the
         * section of the engine's pass, a received frame or a vCPU's MMIO;
         * the device timer's callback has none of its own.
         */
        RCU_READ_LOCK_GUARD();
        memcpy(w->cache.ptr + (addr - w->base), buf, len);
        address_space_cache_invalidate(&w->cache, addr - w->base, len);
    } else {
        /*
         * A memcpy() too (the window's cache is direct), but one that
         * QEMU's fuzzer sees: with --enable-fuzzing it fills the bytes
         * about to be read first (fuzz_dma_read_cb), as for every DMA.
         */
        address_space_read_cached(&w->cache, addr - w->base, buf, len);
    }
    return 0;
}

void vhca_dma_init(VhcaDma *dma, PCIDevice *pdev)
{
    memset(dma, 0, sizeof(*dma));
    dma->pdev = pdev;
}

void vhca_dma_cleanup(VhcaDma *dma)
{
    unsigned i;

    for (i = 0; i < VHCA_DMA_WINDOWS; i++) {
        address_space_cache_destroy(&dma->window[i].cache);
        dma->window[i].len = 0;
    }
    dma->fv = NULL;
}
