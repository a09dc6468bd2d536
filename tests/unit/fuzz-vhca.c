/*
 * libFuzzer entry point for the vhca engine: the input drives register
 * writes, admin commands and received frames against a 1 MiB guest RAM
 * the input also fills.  Run it with, e.g.:
 *   ./fuzz-vhca -max_total_time=60
 * Built only with clang (-fsanitize=fuzzer,address,undefined).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdlib.h>
#include <string.h>

#include "vhca-core.h"

#define FUZZ_RAM_BASE   0x10000ull
#define FUZZ_RAM_SIZE   (1u << 20)

typedef struct FuzzInput {
    const uint8_t *p;
    size_t left;
} FuzzInput;

static uint8_t ram[FUZZ_RAM_SIZE];

static bool take(FuzzInput *in, void *buf, size_t n)
{
    if (in->left < n) {
        return false;
    }
    memcpy(buf, in->p, n);
    in->p += n;
    in->left -= n;
    return true;
}

static bool in_ram(uint64_t addr, size_t len)
{
    return addr >= FUZZ_RAM_BASE && len <= FUZZ_RAM_SIZE &&
           addr - FUZZ_RAM_BASE <= FUZZ_RAM_SIZE - len;
}

static int fuzz_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    (void)opaque;
    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(buf, ram + (addr - FUZZ_RAM_BASE), len);
    return 0;
}

static int fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    (void)opaque;
    if (!in_ram(addr, len)) {
        return -1;
    }
    memcpy(ram + (addr - FUZZ_RAM_BASE), buf, len);
    return 0;
}

static void fuzz_send_frame(void *opaque, const uint8_t *buf, size_t len)
{
    (void)opaque;
    if (len < VHCA_ETH_HLEN || len > VHCA_ETH_MAX_FRAME) {
        abort();        /* the engine must never send such a frame */
    }
    (void)buf;
}

static void fuzz_raise_irq(void *opaque, unsigned vector)
{
    VhcaCore *core = opaque;

    if (vector >= core->cfg.num_vectors) {
        abort();
    }
}

/* The transport's clock, timer and deferred work, driven by the input. */
static uint64_t fuzz_now;
static uint64_t fuzz_deadline = UINT64_MAX;
static bool fuzz_work;

static uint64_t fuzz_now_ns(void *opaque)
{
    (void)opaque;
    return fuzz_now;
}

static void fuzz_timer_arm(void *opaque, uint64_t deadline_ns)
{
    (void)opaque;
    fuzz_deadline = deadline_ns;
}

static void fuzz_timer_cancel(void *opaque)
{
    (void)opaque;
    fuzz_deadline = UINT64_MAX;
}

static void fuzz_schedule(void *opaque)
{
    (void)opaque;
    fuzz_work = true;
}

static const VhcaCoreOps fuzz_ops = {
    .dma_read = fuzz_dma_read,
    .dma_write = fuzz_dma_write,
    .send_frame = fuzz_send_frame,
    .raise_irq = fuzz_raise_irq,
    .now_ns = fuzz_now_ns,
    .timer_arm = fuzz_timer_arm,
    .timer_cancel = fuzz_timer_cancel,
    .schedule = fuzz_schedule,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static VhcaCore core;
    static const VhcaCoreConfig cfg = {
        .mac = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
        .gid_tbl_len = 4,
        .num_db_pages = 8,
        .num_vectors = 4,
        .max_qp = 4,
        .max_cq = 4,
        .max_mr = 4,
        .max_pd = 4,
    };
    FuzzInput in = { data, size };
    uint8_t op;

    memset(ram, 0, sizeof(ram));
    fuzz_now = 0;
    fuzz_deadline = UINT64_MAX;
    fuzz_work = false;
    if (vhca_core_init(&core, &cfg, &fuzz_ops, &core)) {
        return 0;
    }
    core.link_up = true;

    while (take(&in, &op, 1)) {
        /* A bottom half runs between any two guest or wire events. */
        if (fuzz_work) {
            fuzz_work = false;
            vhca_core_run_deferred(&core);
        }
        switch (op % 6) {
        case 0: {               /* register access of any size */
            uint16_t offset;
            uint32_t value;
            uint8_t size_sel;

            if (!take(&in, &offset, 2) || !take(&in, &value, 4) ||
                !take(&in, &size_sel, 1)) {
                goto out;
            }
            vhca_core_reg_write(&core, offset % VHCA_CTRL_BAR_SIZE, value,
                                1u << (size_sel % 4));
            break;
        }
        case 1: {               /* fill guest RAM */
            uint32_t offset;
            uint8_t len;
            uint8_t buf[255];

            if (!take(&in, &offset, 4) || !take(&in, &len, 1) ||
                !take(&in, buf, len)) {
                goto out;
            }
            offset %= FUZZ_RAM_SIZE - sizeof(buf);
            memcpy(ram + offset, buf, len);
            break;
        }
        case 2: {               /* a frame from the wire */
            uint16_t len;
            uint8_t *frame;

            if (!take(&in, &len, 2)) {
                goto out;
            }
            len %= VHCA_ETH_MAX_FRAME + 64;
            if (len > in.left) {
                len = (uint16_t)in.left;
            }
            /* Exactly len bytes on the heap, so ASan sees overruns. */
            frame = malloc(len ? len : 1);
            take(&in, frame, len);
            vhca_core_receive(&core, frame, len);
            free(frame);
            break;
        }
        case 3: {               /* register read */
            uint16_t offset;

            if (!take(&in, &offset, 2)) {
                goto out;
            }
            vhca_core_reg_read(&core, offset % VHCA_CTRL_BAR_SIZE, 4);
            break;
        }
        case 4: {               /* BAR2 doorbell, link flap */
            uint16_t offset;
            uint64_t value;

            if (!take(&in, &offset, 2) || !take(&in, &value, 8)) {
                goto out;
            }
            vhca_core_doorbell_write(&core, offset * 8u, value,
                                     offset & 0x8000 ? 4 : 8);
            vhca_core_set_link(&core, offset & 1);
            break;
        }
        case 5: {               /* time passes; the timer may fire */
            uint32_t ns;

            if (!take(&in, &ns, 4)) {
                goto out;
            }
            fuzz_now += ns;
            if (fuzz_deadline <= fuzz_now) {
                fuzz_deadline = UINT64_MAX;
                vhca_core_timer_expired(&core);
            }
            break;
        }
        }
    }
out:
    /* Tables are allocated per input: free them so leaks show. */
    vhca_core_cleanup(&core);
    return 0;
}
