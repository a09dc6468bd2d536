/*
 * The device under test of the shared cases (tests/common/vhca-dut.h)
 * for the qtest tier: QEMU with one vhca function, driven through
 * vhca-qdriver.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-dut.h"

/* HPET general configuration: a stray DMA write would change it. */
#define HPET_CFG        (VHCA_TEST_HPET_ADDR + 0x10)

struct VhcaDut {
    VhcaTestDev *d;
    uint64_t hpet_cfg;
};

VhcaDut *vhca_dut_start(const VhcaDutConfig *cfg)
{
    VhcaDut *dut = g_new0(VhcaDut, 1);
    g_autofree char *opts =
        g_strdup_printf("gid-table-len=%u,db-pages=%u,vectors=%u,max-qp=%u,"
                        "max-cq=%u,max-mr=%u,max-pd=%u,max-srq=%u",
                        cfg->gid_tbl_len, cfg->db_pages, cfg->vectors,
                        cfg->max_qp, cfg->max_cq, cfg->max_mr, cfg->max_pd,
                        cfg->max_srq);

    dut->d = vhca_test_start(true, opts);
    vhca_admin_setup(dut->d, 6, 8);
    /* RDMA commands may post QP or CQ events among the CMD_DONEs. */
    dut->d->stash_events = true;
    dut->hpet_cfg = qtest_readq(dut->d->qts, HPET_CFG);
    return dut;
}

void vhca_dut_stop(VhcaDut *dut)
{
    vhca_test_stop(dut->d);
    g_free(dut);
}

uint8_t vhca_dut_cmd(VhcaDut *dut, uint16_t opcode, const void *in,
                     size_t in_len, void *out, uint32_t *syndrome)
{
    uint8_t status = vhca_cmd_exec(dut->d, opcode, in, in_len, out);

    if (syndrome) {
        *syndrome = dut->d->last_syndrome;
    }
    return status;
}

uint64_t vhca_dut_alloc(VhcaDut *dut, size_t len)
{
    size_t bytes = ROUND_UP(MAX(len, 1), 4096);
    uint64_t addr = guest_alloc(&dut->d->alloc, bytes);

    g_assert_cmphex(addr & 4095, ==, 0);
    qtest_memset(dut->d->qts, addr, 0, bytes);
    return addr;
}

void vhca_dut_write(VhcaDut *dut, uint64_t addr, const void *buf,
                    size_t len)
{
    qtest_memwrite(dut->d->qts, addr, buf, len);
}

void vhca_dut_read(VhcaDut *dut, uint64_t addr, void *buf, size_t len)
{
    qtest_memread(dut->d->qts, addr, buf, len);
}

uint32_t vhca_dut_reg(VhcaDut *dut, uint32_t reg)
{
    return vhca_rd(dut->d, reg);
}

void vhca_dut_doorbell(VhcaDut *dut, uint32_t page, uint32_t offset,
                       uint32_t object, uint32_t value)
{
    vhca_db_write(dut->d, page, offset, object, value);
}

uint64_t vhca_dut_counter(VhcaDut *dut, enum vhca_counter c)
{
    return vhca_counter(dut->d, c);
}

uint64_t vhca_dut_ram_end(VhcaDut *dut)
{
    return VHCA_TEST_RAM_END;
}

uint64_t vhca_dut_hole(VhcaDut *dut, VhcaBadDma kind)
{
    g_assert(kind == VHCA_BAD_DMA_UNMAPPED || kind == VHCA_BAD_DMA_OWN_BAR0 ||
             kind == VHCA_BAD_DMA_OTHER_MMIO);
    return vhca_bad_dma_addr(dut->d, kind);
}

/* LOG_GUEST_ERROR goes to QEMU's log, which the test does not read. */
int vhca_dut_guest_errors(VhcaDut *dut)
{
    return -1;
}

/* Nothing landed in another device's registers, or in our own. */
void vhca_dut_check_intact(VhcaDut *dut)
{
    VhcaTestDev *d = dut->d;

    g_assert_cmphex(qtest_readq(d->qts, HPET_CFG), ==, dut->hpet_cfg);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_ADMQ_BASE_LO), ==,
                    (uint32_t)d->admq.addr);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_ADMQ_LOG_SIZE), ==,
                     d->admq.log_size);
    g_assert_cmphex(vhca_rd(d, VHCA_REG_AEQ_BASE_LO), ==,
                    (uint32_t)d->aeq.addr);
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_LOG_SIZE), ==, d->aeq.log_size);
}

void vhca_dut_add_test(const char *path, const void *data,
                       void (*fn)(const void *data))
{
    vhca_add_data_test(path, data, fn);
}
