/*
 * The device under test of the shared cases (tests/common/vhca-dut.h)
 * for the unit tier: the engine in-process, through vhca-harness.c.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"
#include "vhca-dut.h"

struct VhcaDut {
    Harness *h;
    uint32_t token;
};

VhcaDut *vhca_dut_start(const VhcaDutConfig *cfg)
{
    VhcaCoreConfig core_cfg = harness_default_cfg;
    VhcaDut *dut = g_new0(VhcaDut, 1);

    core_cfg.gid_tbl_len = cfg->gid_tbl_len;
    core_cfg.num_db_pages = cfg->db_pages;
    core_cfg.num_vectors = cfg->vectors;
    core_cfg.max_qp = cfg->max_qp;
    core_cfg.max_cq = cfg->max_cq;
    core_cfg.max_mr = cfg->max_mr;
    core_cfg.max_pd = cfg->max_pd;
    core_cfg.max_srq = cfg->max_srq;
    dut->h = harness_new(&core_cfg);
    harness_enable(dut->h);
    dut->token = 0xd0700000;
    return dut;
}

void vhca_dut_stop(VhcaDut *dut)
{
    harness_free(dut->h);
    g_free(dut);
}

uint8_t vhca_dut_cmd(VhcaDut *dut, uint16_t opcode, const void *in,
                     size_t in_len, void *out, uint32_t *syndrome)
{
    Harness *h = dut->h;
    uint32_t token = dut->token++;
    uint8_t status = admin_cmd(h, opcode, token, in, in_len, out);
    uint32_t slot = (h->admq_pi - 1) & ((1u << ADMQ_LOG) - 1);
    uint32_t aeq_pi = reg_read(h, VHCA_REG_AEQ_PI);
    struct vhca_eqe eqe;

    if (syndrome) {
        *syndrome = GUINT32_FROM_LE(admin_entry(h, slot).syndrome);
    }
    /* The command's CMD_DONE is its last event: slot, token, status. */
    g_assert_cmpuint(aeq_pi, !=, h->aeq_ci);
    eqe = aeq_entry(h, aeq_pi - 1);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmpuint(eqe.subtype, ==, status);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, slot);
    g_assert_cmphex(GUINT32_FROM_LE(eqe.data[1]), ==, token);
    /* Events are consumed; what the command deferred runs now. */
    h->aeq_ci = aeq_pi;
    reg_write(h, VHCA_REG_AEQ_DB, aeq_pi);
    harness_run(h);
    return status;
}

void vhca_dut_doorbell(VhcaDut *dut, uint32_t page, uint32_t offset,
                       uint32_t object, uint32_t value)
{
    ring_doorbell(dut->h, page, offset, object, value);
    harness_run(dut->h);
}

uint64_t vhca_dut_alloc(VhcaDut *dut, size_t len)
{
    return rdma_alloc(dut->h, (len + 4095) / 4096);
}

void vhca_dut_write(VhcaDut *dut, uint64_t addr, const void *buf,
                    size_t len)
{
    ram_write(dut->h, addr, buf, len);
}

void vhca_dut_read(VhcaDut *dut, uint64_t addr, void *buf, size_t len)
{
    ram_read(dut->h, addr, buf, len);
}

uint32_t vhca_dut_reg(VhcaDut *dut, uint32_t reg)
{
    return reg_read(dut->h, reg);
}

uint64_t vhca_dut_counter(VhcaDut *dut, enum vhca_counter c)
{
    return counter(dut->h, c);
}

uint64_t vhca_dut_ram_end(VhcaDut *dut G_GNUC_UNUSED)
{
    return RAM_BASE + RAM_SIZE;
}

/*
 * The harness has guest RAM and nothing else: every address outside it
 * fails DMA alike.  These are where q35 would have the kinds of holes
 * the qtest tier names.
 */
uint64_t vhca_dut_hole(VhcaDut *dut G_GNUC_UNUSED, VhcaBadDma kind)
{
    switch (kind) {
    case VHCA_BAD_DMA_UNMAPPED:
        return BAD_ADDR;
    case VHCA_BAD_DMA_OWN_BAR0:
        return 0xfebf0000ull;
    case VHCA_BAD_DMA_OTHER_MMIO:
        return 0xfed00000ull;
    default:
        g_assert_not_reached();
    }
    return 0;
}

int vhca_dut_guest_errors(VhcaDut *dut)
{
    return guest_errors_total(dut->h);
}

/* DMA outside guest RAM never reaches anything here: nothing to check. */
void vhca_dut_check_intact(VhcaDut *dut G_GNUC_UNUSED)
{
}

/* A harness is cheap: each case makes its own (@cfg is the case's). */
void vhca_dut_add_test(const char *path,
                       const VhcaDutConfig *cfg G_GNUC_UNUSED,
                       const void *data, void (*fn)(const void *data))
{
    g_test_add_data_func(path, data, fn);
}
