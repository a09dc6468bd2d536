/*
 * vhca engine unit tests: RDMA resource commands - PD, MR, EQ, CQ and QP
 * creation and destruction, the MR access checks and page walk, and reset
 * (docs/specs/vhca.rst, "RDMA resources").  The commands the device must
 * refuse are one table shared with the qtests
 * (tests/common/vhca-admin-cases.c, run by test-vhca-admin-cases).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"
#include "vhca-rdma.h"

static Harness *setup(void)
{
    Harness *h = harness_new(NULL);

    harness_enable(h);
    return h;
}

/* ---------------------------------------------------------------------- */
/* PD                                                                     */
/* ---------------------------------------------------------------------- */

static void test_pd(void)
{
    Harness *h = setup();

    /* Handles start at 1 and reuse the lowest free one. */
    g_assert_cmpuint(rdma_create_pd(h), ==, 1);
    g_assert_cmpuint(rdma_create_pd(h), ==, 2);
    g_assert_cmpuint(rdma_create_pd(h), ==, 3);
    g_assert_cmpuint(rdma_create_pd(h), ==, 4);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, 2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_pd(h), ==, 2);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, 4), ==,
                     VHCA_ST_OK);
    harness_free(h);
}

/* ---------------------------------------------------------------------- */
/* MR                                                                     */
/* ---------------------------------------------------------------------- */

static struct vhca_mr_create mr_desc(uint32_t pdn, uint32_t access,
                                     uint64_t iova, uint64_t length,
                                     uint64_t pbl, uint32_t npages,
                                     uint32_t offset, uint8_t tag)
{
    struct vhca_mr_create c;

    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(pdn);
    c.access = GUINT32_TO_LE(access);
    c.iova = GUINT64_TO_LE(iova);
    c.length = GUINT64_TO_LE(length);
    c.pbl_addr = GUINT64_TO_LE(pbl);
    c.npages = GUINT32_TO_LE(npages);
    c.page_shift = 12;
    c.pbl_levels = 1;
    c.offset = GUINT32_TO_LE(offset);
    c.key_tag = GUINT32_TO_LE(tag);
    return c;
}

static uint8_t create_mr(Harness *h, const struct vhca_mr_create *c,
                         uint32_t *key)
{
    uint32_t index = 0;
    uint8_t status = rdma_cmd(h, VHCA_CMD_CREATE_MR, c, sizeof(*c), &index,
                              key);

    if (status == VHCA_ST_OK) {
        g_assert_cmphex(*key, ==, index << 8 | (c->key_tag & 0xff));
    }
    return status;
}

static void test_mr_create(void)
{
    Harness *h = setup();
    uint32_t pdn = rdma_create_pd(h);
    uint64_t pages = rdma_alloc(h, 4);
    uint64_t pbl = rdma_pbl(h, pages, 4, true);
    uint32_t rw = VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE;
    struct vhca_mr_create c;
    uint32_t key;

    c = mr_desc(pdn, rw, 0x7000, 4 * 4096 - 0x100, pbl, 4, 0x100, 0x5a);
    g_assert_cmpuint(create_mr(h, &c, &key), ==, VHCA_ST_OK);
    g_assert_cmphex(key, ==, 0x15a);
    harness_free(h);
}

static void test_mr_keys(void)
{
    Harness *h = setup();
    uint32_t pdn = rdma_create_pd(h);
    uint32_t key, key2;
    struct vhca_mr_create c = mr_desc(pdn, 0, 0x100000, 0x1000, 0, 0, 0,
                                      0x01);

    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    g_assert_cmpuint(create_mr(h, &c, &key), ==, VHCA_ST_OK);
    g_assert_cmphex(key, ==, 0x101);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, key), ==,
                     VHCA_ST_OK);

    /* Index 1 again, with the driver's new tag: the old key is dead. */
    c.key_tag = GUINT32_TO_LE(0x02);
    g_assert_cmpuint(create_mr(h, &c, &key2), ==, VHCA_ST_OK);
    g_assert_cmphex(key2, ==, 0x102);
    g_assert_cmpuint(vhca_mr_check(&h->core, key, pdn, 0, 0x100000, 8, 0,
                                   NULL), ==,
                     VHCA_MR_BAD_KEY);
    g_assert_cmpuint(vhca_mr_check(&h->core, key2, pdn, 0, 0x100000, 8, 0,
                                   NULL), ==,
                     VHCA_MR_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, key2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, pdn), ==,
                     VHCA_ST_OK);
    harness_free(h);
}

/*
 * A key that comes back (same index, same tag) names a new generation:
 * a copy pinned to the old MR's generation does not reach the new one.
 */
static void test_mr_generation(void)
{
    Harness *h = setup();
    uint32_t pdn = rdma_create_pd(h);
    uint64_t page = rdma_alloc(h, 1);
    struct vhca_mr_create c = mr_desc(pdn, VHCA_ACCESS_LOCAL_WRITE, page,
                                      0x1000, 0, 0, 0, 0x33);
    uint64_t gen1 = VHCA_MR_GEN_ANY, gen2 = VHCA_MR_GEN_ANY;
    uint32_t key, key2;
    uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    g_assert_cmpuint(create_mr(h, &c, &key), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_mr_check(&h->core, key, pdn, 0, page, 8, 0,
                                   &gen1), ==, VHCA_MR_OK);
    g_assert_cmpuint(gen1, !=, VHCA_MR_GEN_ANY);
    g_assert_cmpuint(vhca_sg_copy_one(&h->core, VHCA_SG_SCATTER, key, gen1,
                                      page, buf, 8, pdn, 0,
                                      VHCA_ACCESS_LOCAL_WRITE), ==,
                     VHCA_WC_SUCCESS);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, key), ==,
                     VHCA_ST_OK);
    /* The same tag again: the same key, another MR. */
    g_assert_cmpuint(create_mr(h, &c, &key2), ==, VHCA_ST_OK);
    g_assert_cmphex(key2, ==, key);
    g_assert_cmpuint(vhca_mr_check(&h->core, key2, pdn, 0, page, 8, 0,
                                   &gen2), ==, VHCA_MR_OK);
    g_assert_cmpuint(gen2, >, gen1);
    memset(ram_ptr(h, page, 8), 0, 8);
    g_assert_cmpuint(vhca_sg_copy_one(&h->core, VHCA_SG_SCATTER, key, gen1,
                                      page, buf, 8, pdn, 0,
                                      VHCA_ACCESS_LOCAL_WRITE), ==,
                     VHCA_WC_LOC_PROT_ERR);
    g_assert_cmpuint(vhca_sg_copy_one(&h->core, VHCA_SG_GATHER, key, gen1,
                                      page, buf, 8, pdn, 0, 0), ==,
                     VHCA_WC_LOC_PROT_ERR);
    g_assert_cmpuint(*(uint8_t *)ram_ptr(h, page, 8), ==, 0);
    g_assert_cmpuint(vhca_sg_copy_one(&h->core, VHCA_SG_SCATTER, key, gen2,
                                      page, buf, 8, pdn, 0,
                                      VHCA_ACCESS_LOCAL_WRITE), ==,
                     VHCA_WC_SUCCESS);
    g_assert_cmpmem(ram_ptr(h, page, 8), 8, buf, 8);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, key2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, pdn), ==,
                     VHCA_ST_OK);
    harness_free(h);
}

/*
 * VHCA_MR_AT_INDEX: the MR takes the index named, so the driver's rereg
 * keeps the key; an index in use or outside the table is refused.
 */
static void test_mr_at_index(void)
{
    Harness *h = setup();
    uint32_t pdn = rdma_create_pd(h), pd2 = rdma_create_pd(h);
    uint32_t rw = VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE;
    uint32_t ka, kb, kc, kd, busy = 0;
    struct vhca_mr_create c = mr_desc(pdn, 0, 0x100000, 0x1000, 0, 0, 0,
                                      0x11);

    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    g_assert_cmpuint(create_mr(h, &c, &ka), ==, VHCA_ST_OK);
    g_assert_cmphex(ka, ==, 0x111);
    c.key_tag = GUINT32_TO_LE(0x22);
    g_assert_cmpuint(create_mr(h, &c, &kb), ==, VHCA_ST_OK);
    g_assert_cmphex(kb, ==, 0x222);

    /* Index 2 is B's: refused, and B is untouched. */
    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS | VHCA_MR_AT_INDEX);
    c.mrn = GUINT32_TO_LE(2);
    c.key_tag = GUINT32_TO_LE(0x33);
    g_assert_cmpuint(create_mr(h, &c, &busy), ==, VHCA_ST_BUSY);
    g_assert_cmpuint(vhca_mr_check(&h->core, kb, pdn, 0, 0x100000, 8, 0,
                                   NULL), ==, VHCA_MR_OK);
    g_assert_cmpuint(vhca_mr_check(&h->core, 0x233, pdn, 0, 0x100000, 8, 0,
                                   NULL), ==, VHCA_MR_BAD_KEY);

    /* Outside 1..max_mr. */
    c.mrn = GUINT32_TO_LE(0);
    g_assert_cmpuint(create_mr(h, &c, &busy), ==, VHCA_ST_BAD_INDEX);
    c.mrn = GUINT32_TO_LE(h->core.mr_ids.last + 1);
    g_assert_cmpuint(create_mr(h, &c, &busy), ==, VHCA_ST_BAD_INDEX);

    /*
     * Rereg: A destroyed, then created again at index 1 with its tag and
     * new rights and PD.  The key is A's; the rights and PD are new.
     */
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, ka), ==,
                     VHCA_ST_OK);
    c = mr_desc(pd2, rw, 0x100000, 0x1000, 0, 0, 0, 0x11);
    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS | VHCA_MR_AT_INDEX);
    c.mrn = GUINT32_TO_LE(1);
    g_assert_cmpuint(create_mr(h, &c, &kc), ==, VHCA_ST_OK);
    g_assert_cmphex(kc, ==, ka);
    g_assert_cmpuint(vhca_mr_check(&h->core, ka, pd2, 0, 0x100000, 8,
                                   VHCA_ACCESS_REMOTE_WRITE, NULL), ==,
                     VHCA_MR_OK);
    g_assert_cmpuint(vhca_mr_check(&h->core, ka, pdn, 0, 0x100000, 8, 0, NULL),
                     ==, VHCA_MR_PD_MISMATCH);

    /* A free index that is not the lowest: taken as named. */
    c.mrn = GUINT32_TO_LE(5);
    c.key_tag = GUINT32_TO_LE(0x55);
    g_assert_cmpuint(create_mr(h, &c, &kd), ==, VHCA_ST_OK);
    g_assert_cmphex(kd, ==, 0x555);
    /* Without the flag, mrn is ignored and the lowest free index taken. */
    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    c.key_tag = GUINT32_TO_LE(0x66);
    g_assert_cmpuint(create_mr(h, &c, &busy), ==, VHCA_ST_OK);
    g_assert_cmphex(busy, ==, 0x366);
    harness_free(h);
}

/* The check matrix of spec "Memory regions": key, PD, bounds, rights. */
static void test_mr_check(void)
{
    Harness *h = setup();
    uint32_t pd1 = rdma_create_pd(h), pd2 = rdma_create_pd(h);
    uint64_t pages = rdma_alloc(h, 2);
    uint64_t pbl = rdma_pbl(h, pages, 2, false);
    uint32_t all = VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE |
                   VHCA_ACCESS_REMOTE_READ | VHCA_ACCESS_REMOTE_ATOMIC;
    struct vhca_mr_create c;
    uint32_t ro, rw;
    const uint64_t iova = 0x10000;

    c = mr_desc(pd1, 0, iova, 0x1800, pbl, 2, 0x10, 7);
    g_assert_cmpuint(create_mr(h, &c, &ro), ==, VHCA_ST_OK);
    c = mr_desc(pd1, all, iova, 0x1800, pbl, 2, 0x10, 9);
    g_assert_cmpuint(create_mr(h, &c, &rw), ==, VHCA_ST_OK);

    struct {
        uint32_t key, pdn;
        uint64_t addr, len;
        uint32_t access;
        VhcaMrStatus expect;
    } cases[] = {
        { rw, pd1, iova, 0x1800, VHCA_ACCESS_LOCAL_WRITE, VHCA_MR_OK },
        { rw, pd1, iova + 0x17f8, 8, VHCA_ACCESS_REMOTE_ATOMIC, VHCA_MR_OK },
        { rw, pd1, iova, 0, 0, VHCA_MR_OK },
        { rw ^ 1, pd1, iova, 8, 0, VHCA_MR_BAD_KEY },
        { (rw & 0xff) | 0x7f00, pd1, iova, 8, 0, VHCA_MR_BAD_KEY },
        { 0, pd1, iova, 8, 0, VHCA_MR_BAD_KEY },
        { rw, pd2, iova, 8, 0, VHCA_MR_PD_MISMATCH },
        { rw, pd1, iova - 1, 8, 0, VHCA_MR_OUT_OF_BOUNDS },
        { rw, pd1, iova + 0x17f9, 8, 0, VHCA_MR_OUT_OF_BOUNDS },
        { rw, pd1, iova, 0x1801, 0, VHCA_MR_OUT_OF_BOUNDS },
        { rw, pd1, ~0ull - 4, 8, 0, VHCA_MR_OUT_OF_BOUNDS },
        { rw, pd1, iova + 8, ~0ull, 0, VHCA_MR_OUT_OF_BOUNDS },
        { ro, pd1, iova, 8, 0, VHCA_MR_OK },
        { ro, pd1, iova, 8, VHCA_ACCESS_LOCAL_WRITE, VHCA_MR_NO_ACCESS },
        { ro, pd1, iova, 8, VHCA_ACCESS_REMOTE_READ, VHCA_MR_NO_ACCESS },
        { ro, pd1, iova, 8, VHCA_ACCESS_REMOTE_WRITE, VHCA_MR_NO_ACCESS },
        { ro, pd1, iova, 8, VHCA_ACCESS_REMOTE_ATOMIC, VHCA_MR_NO_ACCESS },
        { rw, pd1, iova + 4, 8, VHCA_ACCESS_REMOTE_ATOMIC,
          VHCA_MR_MISALIGNED },
        { rw, pd1, iova, 16, VHCA_ACCESS_REMOTE_ATOMIC, VHCA_MR_MISALIGNED },
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_message("case %u", i);
        g_assert_cmpstr(vhca_mr_status_name(
                            vhca_mr_check(&h->core, cases[i].key,
                                          cases[i].pdn, 0, cases[i].addr,
                                          cases[i].len, cases[i].access,
                                          NULL)),
                        ==, vhca_mr_status_name(cases[i].expect));
    }

    /* A destroyed MR fails every later access (IBTA 10.6.7.2). */
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, rw), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_mr_check(&h->core, rw, pd1, 0, iova, 8, 0, NULL), ==,
                     VHCA_MR_BAD_KEY);
    g_assert_cmpuint(vhca_sg_copy_one(&h->core, VHCA_SG_GATHER, rw,
                                      VHCA_MR_GEN_ANY, iova, &c, 8, pd1, 0, 0),
                     ==, VHCA_WC_LOC_PROT_ERR);
    harness_free(h);
}

/* One range of an MR through vhca_sg_copy(), as the transport uses it. */
static uint8_t scatter(Harness *h, uint32_t key, uint32_t pdn, uint64_t addr,
                       uint8_t *buf, uint32_t len)
{
    return vhca_sg_copy_one(&h->core, VHCA_SG_SCATTER, key, VHCA_MR_GEN_ANY,
                            addr, buf, len, pdn, 0, VHCA_ACCESS_LOCAL_WRITE);
}

static uint8_t gather(Harness *h, uint32_t key, uint32_t pdn, uint64_t addr,
                      uint8_t *buf, uint32_t len)
{
    return vhca_sg_copy_one(&h->core, VHCA_SG_GATHER, key, VHCA_MR_GEN_ANY,
                            addr, buf, len, pdn, 0, 0);
}

/* The page walk: reversed pages, an offset, level 1 and level 2. */
static void test_mr_dma(void)
{
    Harness *h = setup();
    uint32_t pdn = rdma_create_pd(h);
    uint64_t pages = rdma_alloc(h, 3);
    uint64_t pbl = rdma_pbl(h, pages, 3, true);
    uint64_t l2 = rdma_pbl(h, pbl, 1, false);
    uint8_t in[3 * 4096], out[3 * 4096];
    struct vhca_mr_create c;
    uint32_t k1, k2, kphys;
    unsigned i;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (uint8_t)(i * 13 + 1);
    }
    c = mr_desc(pdn, VHCA_ACCESS_LOCAL_WRITE, 0x5000, 3 * 4096 - 0x80, pbl,
                3, 0x80, 1);
    g_assert_cmpuint(create_mr(h, &c, &k1), ==, VHCA_ST_OK);
    c.pbl_addr = GUINT64_TO_LE(l2);
    c.pbl_levels = 2;
    g_assert_cmpuint(create_mr(h, &c, &k2), ==, VHCA_ST_OK);

    /* Write through the level 1 MR, across both page boundaries. */
    g_assert_cmpuint(scatter(h, k1, pdn, 0x5000 + 0x10, in, 2 * 4096 + 0x100),
                     ==, VHCA_WC_SUCCESS);
    /* iova 0x5010 is byte 0x90 of the first listed page, the last one. */
    g_assert_cmpmem(ram_ptr(h, pages + 2 * 4096 + 0x90, 16), 16, in, 16);
    g_assert_cmpmem(ram_ptr(h, pages + 4096, 4096), 4096,
                    in + 4096 - 0x90, 4096);
    g_assert_cmpmem(ram_ptr(h, pages, 16), 16, in + 2 * 4096 - 0x90, 16);
    /* Read it back through the level 2 MR. */
    g_assert_cmpuint(gather(h, k2, pdn, 0x5000 + 0x10, out, 2 * 4096 + 0x100),
                     ==, VHCA_WC_SUCCESS);
    g_assert_cmpmem(out, 2 * 4096 + 0x100, in, 2 * 4096 + 0x100);
    /* Past the end of the MR: refused. */
    g_assert_cmpuint(gather(h, k2, pdn, 0x5000, out, 3 * 4096), ==,
                     VHCA_WC_LOC_PROT_ERR);

    /* A page list entry rewritten to point outside RAM fails the walk. */
    {
        uint64_t bad = GUINT64_TO_LE(BAD_ADDR);

        ram_write(h, pbl + 8, &bad, 8);
        g_assert_cmpuint(gather(h, k1, pdn, 0x5000, out, 4096), ==,
                         VHCA_WC_LOC_PROT_ERR);
    }

    /* A physical MR: iova = guest physical, RAM only. */
    c = mr_desc(pdn, VHCA_ACCESS_LOCAL_WRITE, 0, ~0ull, 0, 0, 0, 3);
    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    g_assert_cmpuint(create_mr(h, &c, &kphys), ==, VHCA_ST_OK);
    g_assert_cmpuint(scatter(h, kphys, pdn, DATA_ADDR, in, 100), ==,
                     VHCA_WC_SUCCESS);
    g_assert_cmpmem(ram_ptr(h, DATA_ADDR, 100), 100, in, 100);
    g_assert_cmpuint(scatter(h, kphys, pdn, BAD_ADDR, in, 100), ==,
                     VHCA_WC_LOC_PROT_ERR);
    harness_free(h);
}

/*
 * vhca_sg_copy(): a list of entries in two MRs, zero-length entries, an
 * offset into the list, a list too short, and every entry checked (key,
 * PD, rights) as it is used.
 */
static void test_sg_copy(void)
{
    Harness *h = setup();
    uint32_t pdn = rdma_create_pd(h), pd2 = rdma_create_pd(h);
    uint64_t pages = rdma_alloc(h, 2);
    uint64_t pbl = rdma_pbl(h, pages, 2, false);
    uint8_t in[600], out[600];
    struct vhca_mr_create c;
    uint32_t kpaged, kphys, kro;
    unsigned i;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (uint8_t)(i * 7 + 3);
    }
    c = mr_desc(pdn, VHCA_ACCESS_LOCAL_WRITE, 0x8000, 2 * 4096, pbl, 2, 0,
                1);
    g_assert_cmpuint(create_mr(h, &c, &kpaged), ==, VHCA_ST_OK);
    c = mr_desc(pdn, VHCA_ACCESS_LOCAL_WRITE, 0, ~0ull, 0, 0, 0, 2);
    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    g_assert_cmpuint(create_mr(h, &c, &kphys), ==, VHCA_ST_OK);
    c = mr_desc(pdn, 0, 0x8000, 2 * 4096, pbl, 2, 0, 3);
    g_assert_cmpuint(create_mr(h, &c, &kro), ==, VHCA_ST_OK);

    {
        /* 100 bytes across a page boundary, nothing, 200 bytes, 300. */
        const struct vhca_sge sgl[] = {
            { .addr = 0x8000 + 4096 - 50, .length = 100, .lkey = kpaged },
            { .addr = 0x8000, .length = 0, .lkey = 0 },
            { .addr = DATA_ADDR, .length = 200, .lkey = kphys },
            { .addr = 0x8000 + 300, .length = 300, .lkey = kpaged },
        };

        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_SCATTER, sgl, 4, 0,
                                      in, 600, pdn,
                                      VHCA_ACCESS_LOCAL_WRITE), ==,
                         VHCA_WC_SUCCESS);
        g_assert_cmpmem(ram_ptr(h, pages + 4096 - 50, 50), 50, in, 50);
        g_assert_cmpmem(ram_ptr(h, pages + 4096, 50), 50, in + 50, 50);
        g_assert_cmpmem(ram_ptr(h, DATA_ADDR, 200), 200, in + 100, 200);
        g_assert_cmpmem(ram_ptr(h, pages + 300, 300), 300, in + 300, 300);

        /* From an offset inside the second non-empty entry. */
        memset(out, 0, sizeof(out));
        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_GATHER, sgl, 4, 150,
                                      out, 450, pdn, 0), ==,
                         VHCA_WC_SUCCESS);
        g_assert_cmpmem(out, 450, in + 150, 450);
        /* One byte more than the list holds. */
        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_GATHER, sgl, 4, 150,
                                      out, 451, pdn, 0), ==,
                         VHCA_WC_LOC_LEN_ERR);
        /* Another PD's list, or one the access is not granted to. */
        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_GATHER, sgl, 4, 0,
                                      out, 600, pd2, 0), ==,
                         VHCA_WC_LOC_PROT_ERR);
        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_GATHER, sgl, 4, 0,
                                      out, 100, pdn,
                                      VHCA_ACCESS_REMOTE_READ), ==,
                         VHCA_WC_LOC_PROT_ERR);
    }
    {
        /* A read-only MR: gathered from, never scattered to. */
        const struct vhca_sge ro = {
            .addr = 0x8000, .length = 64, .lkey = kro,
        };

        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_GATHER, &ro, 1, 0,
                                      out, 64, pdn, 0), ==,
                         VHCA_WC_SUCCESS);
        g_assert_cmpuint(vhca_sg_copy(&h->core, VHCA_SG_SCATTER, &ro, 1, 0,
                                      in, 64, pdn,
                                      VHCA_ACCESS_LOCAL_WRITE), ==,
                         VHCA_WC_LOC_PROT_ERR);
    }
    /* An MR destroyed: its key fails at the next use. */
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_MR, kpaged), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(gather(h, kpaged, pdn, 0x8000, out, 8), ==,
                     VHCA_WC_LOC_PROT_ERR);
    harness_free(h);
}

/* ---------------------------------------------------------------------- */
/* EQ, CQ, QP                                                             */
/* ---------------------------------------------------------------------- */

static void test_eq_create(void)
{
    Harness *h = setup();
    uint64_t mem = rdma_alloc(h, 1);
    uint64_t pbl = rdma_pbl(h, mem, 1, false);
    struct vhca_eq_create c = {
        .pbl_addr = GUINT64_TO_LE(pbl),
        .npages = GUINT32_TO_LE(1),
        .log_size = 8,
        .vector = GUINT32_TO_LE(2),
    };
    uint32_t eqn;
    unsigned i;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_EQ, &c, sizeof(c), &eqn,
                              NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(eqn, ==, 1);

    /* 62 completion EQs, numbered in order, on the last vector too. */
    c.vector = GUINT32_TO_LE(7);
    for (i = 2; i <= VHCA_MAX_COMP_EQS; i++) {
        g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_EQ, &c, sizeof(c),
                                  &eqn, NULL), ==, VHCA_ST_OK);
        g_assert_cmpuint(eqn, ==, i);
    }
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_EQ, 62), ==,
                     VHCA_ST_OK);
    harness_free(h);
}

static void test_cq_create(void)
{
    Harness *h = setup();
    uint32_t page = rdma_alloc_uctx(h);
    uint32_t eqn = rdma_create_eq(h, 4, 2, NULL);
    TestCq cq;

    g_assert_cmpuint(rdma_create_cq(h, &cq, 4, eqn, page), ==, VHCA_ST_OK);
    g_assert_cmpuint(cq.cqn, ==, 1);
    g_assert_cmpuint(rdma_create_cq(h, &cq, 7, eqn,
                                    VHCA_DB_PAGE_KERNEL_NONE), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(cq.cqn, ==, 2);

    /* Once its CQ is gone, the page can be freed. */
    {
        struct vhca_cmd_uctx_in in = { .db_page = GUINT32_TO_LE(page) };

        g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_CQ, 1), ==,
                         VHCA_ST_OK);
        g_assert_cmpuint(admin_cmd(h, VHCA_CMD_DEALLOC_UCTX, 1, &in,
                                   sizeof(in), NULL), ==, VHCA_ST_OK);
    }
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_CQ, 2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_EQ, eqn), ==,
                     VHCA_ST_OK);
    harness_free(h);
}

static void test_qp_create(void)
{
    Harness *h = setup();
    uint32_t page = rdma_alloc_uctx(h);
    uint32_t pdn = rdma_create_pd(h);
    uint32_t eqn = rdma_create_eq(h, 4, 3, NULL);
    struct vhca_qp_attr attr;
    TestCq scq, rcq;
    TestQp qp;
    uint32_t qpn;

    g_assert_cmpuint(rdma_create_cq(h, &scq, 4, eqn, page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(h, &rcq, 4, eqn, page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(h, &qp, VHCA_QPT_RC, pdn, scq.cqn,
                                    rcq.cqn, page), ==, VHCA_ST_OK);
    /* QPNs start at 2: QP0 and QP1 are reserved. */
    g_assert_cmpuint(qp.qpn, ==, 2);
    g_assert_cmpuint(rdma_query_qp(h, qp.qpn, &attr), ==, VHCA_ST_OK);
    g_assert_cmpuint(attr.qp_state, ==, VHCA_QPS_RESET);
    g_assert_cmpuint(attr.qpn, ==, 2);
    g_assert_cmpuint(attr.max_send_wr, ==, 32);
    g_assert_cmpuint(attr.max_recv_wr, ==, 16);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_send_sge), ==, 12);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_recv_sge), ==, 7);
    g_assert_cmpuint(GUINT32_FROM_LE(attr.max_inline_data), ==, 192);

    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_QP, qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_CQ, scq.cqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_CQ, rcq.cqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_destroy(h, VHCA_CMD_DESTROY_PD, pdn), ==,
                     VHCA_ST_OK);
    /* max_qp = 8: QPNs 2..9. */
    g_assert_cmpuint(rdma_create_cq(h, &scq, 4, eqn, page), ==, VHCA_ST_OK);
    pdn = rdma_create_pd(h);
    for (qpn = 2; qpn <= 9; qpn++) {
        g_assert_cmpuint(rdma_create_qp(h, &qp, VHCA_QPT_UD, pdn, scq.cqn,
                                        scq.cqn, page), ==, VHCA_ST_OK);
        g_assert_cmpuint(qp.qpn, ==, qpn);
    }
    harness_free(h);
}

/* Reset frees every object; handles start again from the first. */
static void test_reset_frees_everything(void)
{
    Harness *h = setup();
    uint32_t page = rdma_alloc_uctx(h);
    uint32_t pdn = rdma_create_pd(h);
    uint32_t eqn = rdma_create_eq(h, 4, 2, NULL);
    struct vhca_qp_attr attr;
    TestCq cq;
    TestQp qp;

    g_assert_cmpuint(rdma_create_cq(h, &cq, 4, eqn, page), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(h, &qp, VHCA_QPT_RC, pdn, cq.cqn,
                                    cq.cqn, page), ==, VHCA_ST_OK);
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    harness_enable(h);
    g_assert_cmpuint(rdma_query_qp(h, qp.qpn, &attr), ==, VHCA_ST_BAD_INDEX);
    page = rdma_alloc_uctx(h);
    g_assert_cmpuint(page, ==, 0);
    g_assert_cmpuint(rdma_create_pd(h), ==, 1);
    g_assert_cmpuint(rdma_create_eq(h, 4, 2, NULL), ==, 1);
    g_assert_cmpuint(rdma_create_cq(h, &cq, 4, 1, page), ==, VHCA_ST_OK);
    g_assert_cmpuint(cq.cqn, ==, 1);
    g_assert_cmpuint(rdma_create_qp(h, &qp, VHCA_QPT_RC, 1, 1, 1, page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(qp.qpn, ==, 2);
    harness_free(h);
}

static void test_resource_opcodes_named(void)
{
    static const char *const names[] = {
        "CREATE_PD", "DESTROY_PD", "CREATE_MR", "DESTROY_MR", "CREATE_EQ",
        "DESTROY_EQ", "CREATE_CQ", "DESTROY_CQ", "CREATE_QP", "MODIFY_QP",
        "QUERY_QP", "DESTROY_QP",
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        g_assert_cmpstr(vhca_admin_opcode_name(VHCA_CMD_CREATE_PD + i),
                        ==, names[i]);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/res/pd", test_pd);
    g_test_add_func("/vhca/res/mr-create", test_mr_create);
    g_test_add_func("/vhca/res/mr-keys", test_mr_keys);
    g_test_add_func("/vhca/res/mr-generation", test_mr_generation);
    g_test_add_func("/vhca/res/mr-at-index", test_mr_at_index);
    g_test_add_func("/vhca/res/mr-check", test_mr_check);
    g_test_add_func("/vhca/res/mr-dma", test_mr_dma);
    g_test_add_func("/vhca/res/sg-copy", test_sg_copy);
    g_test_add_func("/vhca/res/eq-create", test_eq_create);
    g_test_add_func("/vhca/res/cq-create", test_cq_create);
    g_test_add_func("/vhca/res/qp-create", test_qp_create);
    g_test_add_func("/vhca/res/reset-frees-everything",
                    test_reset_frees_everything);
    g_test_add_func("/vhca/res/opcode-names", test_resource_opcodes_named);
    return g_test_run();
}
