/*
 * vhca conformance: RDMA resources (docs/specs/vhca.rst "RDMA resources"):
 * PD, MR, EQ, CQ and QP commands, the limits QUERY_DEVICE reports against
 * the ones the device enforces, the QP state machine of IBTA 10.3.1 with
 * the Modify QP attribute table of IBTA 11.2.4.2 (as Linux's
 * qp_state_table encodes it), flushing to the error state, doorbell
 * ownership, CQ overflow and reset.  Malformed commands (bad fields,
 * missing objects, mailboxes and page lists outside RAM) are one table
 * shared with the engine unit tests (tests/common/vhca-admin-cases.c, run
 * by vhca-admin-cases-test).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-frame.h"

#define ADMQ_LOG        8
#define AEQ_LOG         10
#define DB_PAGES        64      /* the db-pages default */
#define NUM_VECTORS     8       /* the vectors default */

static const uint8_t local_ip[4] = { 10, 0, 0, 1 };

/* A device with an admin queue, a GID, a user context, a PD, an EQ, CQs. */
typedef struct Rig {
    VhcaTestDev *d;
    struct vhca_device_attr dev;
    uint32_t page;              /* the user context owning the queues */
    uint32_t pdn;
    VhcaEq eq;
    VhcaCq scq, rcq;
} Rig;

/* Admin queues and a source GID on a started @d. */
static VhcaTestDev *rdma_setup(VhcaTestDev *d)
{
    uint8_t gid[16];

    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    /* RDMA commands may post CQ_ERROR / QP events among CMD_DONEs. */
    d->stash_events = true;
    /* A RoCEv2 source GID at index 0 for address vectors (sgid_index 0). */
    vhca_gid_from_ipv4(gid, local_ip);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      gid), ==, VHCA_ST_OK);
    return d;
}

static VhcaTestDev *start_rdma(const char *opts)
{
    return rdma_setup(vhca_test_start(true, opts));
}

/* A context, a PD, an EQ and two CQs on @d from rdma_setup(). */
static void rig_setup(Rig *r, VhcaTestDev *d)
{
    memset(r, 0, sizeof(*r));
    r->d = d;
    g_assert_cmpuint(vhca_cmd_query_device(r->d, &r->dev), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(r->d, &r->page), ==, VHCA_ST_OK);
    r->pdn = vhca_pd_make(r->d);
    vhca_eq_make(r->d, &r->eq, 6, VHCA_VECTOR_FIRST_COMP);
    vhca_cq_make(r->d, &r->scq, 6, r->eq.eqn, r->page);
    vhca_cq_make(r->d, &r->rcq, 6, r->eq.eqn, r->page);
}

static void rig_up(Rig *r)
{
    rig_setup(r, start_rdma(NULL));
}

static void check_nop(VhcaTestDev *d)
{
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
}

/*
 * A command that names an object that does not exist.  The spec pins the
 * failure (the command fails, the offending value in syndrome) but not
 * which of BAD_INDEX / BAD_STATE / BAD_PARAM it is, so any of the three.
 */
static void assert_no_object_at(VhcaTestDev *d, uint8_t status,
                                uint32_t handle, const char *where)
{
    if (status != VHCA_ST_BAD_INDEX && status != VHCA_ST_BAD_STATE &&
        status != VHCA_ST_BAD_PARAM) {
        g_error("%s: status %u for a missing object 0x%x, expected "
                "BAD_INDEX, BAD_STATE or BAD_PARAM", where, status, handle);
    }
    VHCA_CHECK_EQ(where, "syndrome (the offending handle)", d->last_syndrome,
                  handle);
}
#define assert_no_object(d, st, h) assert_no_object_at(d, st, h, G_STRLOC)

static uint32_t stashed_events_of_type(VhcaTestDev *d, uint8_t type)
{
    uint32_t n = 0;

    for (guint i = 0; i < d->stashed_events->len; i++) {
        n += g_array_index(d->stashed_events, struct vhca_eqe, i).type == type;
    }
    return n;
}

/* ======================================================================= */
/* QUERY_DEVICE                                                            */
/* ======================================================================= */

static void test_query_device_limits(void)
{
    VhcaTestDev *d = start_rdma(NULL);
    struct vhca_device_attr a;

    g_assert_cmpuint(vhca_cmd_query_device(d, &a), ==, VHCA_ST_OK);
    g_test_message("max_pd %u max_mr %u max_cq %u max_qp %u rd_atom %u/%u",
                   a.max_pd, a.max_mr, a.max_cq, a.max_qp, a.max_qp_rd_atom,
                   a.max_qp_init_rd_atom);
    g_assert_cmpuint(a.max_pd, >, 0);
    g_assert_cmpuint(a.max_mr, >, 0);
    g_assert_cmpuint(a.max_cq, >, 0);
    g_assert_cmpuint(a.max_qp, >, 0);
    /* Handles are 24-bit numbers; QPNs start at 2. */
    g_assert_cmpuint(a.max_pd, <, 1u << 24);
    g_assert_cmpuint(a.max_mr, <, 1u << 24);
    g_assert_cmpuint(a.max_cq, <, 1u << 24);
    g_assert_cmpuint(a.max_qp, <, (1u << 24) - 2);

    /* The values the spec fixes ("Limits"). */
    g_assert_cmpuint(a.max_qp_wr, ==, 16384);
    g_assert_cmpuint(a.max_sge, ==, VHCA_MAX_SEND_SGE);
    g_assert_cmpuint(a.max_srq_sge, ==, VHCA_MAX_RECV_SGE);
    g_assert_cmpuint(a.max_srq_wr, ==, 16384);
    /* max-srq's default. */
    g_assert_cmpuint(a.max_srq, ==, 256);
    g_assert_cmpuint(a.max_inline_data, ==, VHCA_MAX_INLINE);
    g_assert_cmpuint(a.max_cqe, ==, (1u << 19) - 1);

    /* MR pages are 2^12 .. 2^30 bytes; 4 KiB must be among them. */
    g_assert_cmphex(a.page_size_cap & (1ull << 12), !=, 0);
    g_assert_cmphex(a.page_size_cap & ~0x7ffff000ull, ==, 0);
    g_assert_cmpuint(a.max_mr_size, >, 0);
    /* QP attributes carry the read/atomic depths in 8 bits. */
    g_assert_cmpuint(a.max_qp_rd_atom, <=, 255);
    g_assert_cmpuint(a.max_qp_init_rd_atom, <=, 255);

    /* Unchanged from issue 2. */
    g_assert_cmpuint(a.max_uctx, ==, DB_PAGES);
    g_assert_cmpuint(a.num_comp_vectors, ==, NUM_VECTORS - 2);
    vhca_test_stop(d);
}

/*
 * max-srq sizes the SRQ table: QUERY_DEVICE reports it, CREATE_SRQ stops
 * there; 0 means no SRQs at all.
 */
static void test_max_srq(const void *data)
{
    uint32_t max = GPOINTER_TO_UINT(data);
    g_autofree char *opts = g_strdup_printf("max-srq=%u", max);
    VhcaTestDev *d = start_rdma(opts);
    struct vhca_device_attr a;
    struct vhca_srq_create c;
    uint32_t page, pdn, srqn;
    VhcaPages ring;
    uint64_t ci;

    g_assert_cmpuint(vhca_cmd_query_device(d, &a), ==, VHCA_ST_OK);
    g_assert_cmpuint(a.max_srq, ==, max);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
    pdn = vhca_pd_make(d);
    vhca_pages_alloc(d, &ring, 4096);
    ci = guest_alloc(&d->alloc, 4);
    memset(&c, 0, sizeof(c));
    c.pdn = cpu_to_le32(pdn);
    c.db_page = cpu_to_le32(page);
    c.pbl_addr = cpu_to_le64(ring.pbl);
    c.npages = cpu_to_le32(ring.npages);
    c.log_size = 5;
    c.ci_addr = cpu_to_le64(ci);
    for (uint32_t i = 1; i <= max; i++) {
        struct vhca_cmd_obj_out out;

        g_assert_cmpuint(vhca_cmd_mbox(d, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                                       NULL, &out), ==, VHCA_ST_OK);
        srqn = le32_to_cpu(out.handle);
        /* SRQ numbers from 1. */
        g_assert_cmpuint(srqn, ==, i);
    }
    g_assert_cmpuint(vhca_cmd_mbox(d, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                                   NULL, NULL), ==, VHCA_ST_NO_RESOURCES);
    check_nop(d);
    vhca_test_stop(d);
}

/* ======================================================================= */
/* Protection domains                                                      */
/* ======================================================================= */

static void test_pd(void)
{
    VhcaTestDev *d = start_rdma(NULL);
    uint8_t junk[32];
    uint32_t pd1, pd2, pd3;

    pd1 = vhca_pd_make(d);
    /* CREATE_PD ignores ``in``. */
    memset(junk, 0xa5, sizeof(junk));
    {
        struct vhca_cmd_obj_out out;

        g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_CREATE_PD, junk,
                                       sizeof(junk), &out), ==, VHCA_ST_OK);
        pd2 = le32_to_cpu(out.handle);
    }
    g_assert_cmpuint(pd1, >=, 1);
    g_assert_cmpuint(pd2, >=, 1);
    g_assert_cmpuint(pd1, !=, pd2);
    g_assert_cmpuint(pd1, <, 1u << 24);

    g_assert_cmpuint(vhca_cmd_destroy(d, VHCA_CMD_DESTROY_PD, pd1), ==,
                     VHCA_ST_OK);
    pd3 = vhca_pd_make(d);
    g_assert_cmpuint(pd3, !=, pd2);
    g_assert_cmpuint(vhca_cmd_destroy(d, VHCA_CMD_DESTROY_PD, pd2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(d, VHCA_CMD_DESTROY_PD, pd3), ==,
                     VHCA_ST_OK);
    check_nop(d);
    vhca_test_stop(d);
}

/* ======================================================================= */
/* Limits: QUERY_DEVICE's maxima are what CREATE_* enforces                */
/* ======================================================================= */

typedef enum LimitKind { LIMIT_PD, LIMIT_MR, LIMIT_EQ, LIMIT_CQ, LIMIT_QP }
    LimitKind;

static const char *const limit_name[] = {
    [LIMIT_PD] = "pd", [LIMIT_MR] = "mr", [LIMIT_EQ] = "eq",
    [LIMIT_CQ] = "cq", [LIMIT_QP] = "qp",
};

static void test_limit(const void *data)
{
    LimitKind kind = GPOINTER_TO_INT(data);
    VhcaTestDev *d = vhca_test_start(true, NULL);
    struct vhca_device_attr dev;
    struct vhca_cmd_dma_in in = { 0 };
    uint16_t create_op, destroy_op;
    uint64_t mbox = 0;
    uint32_t max, pdn = 0, page;
    g_autofree uint8_t *st = NULL;
    g_autofree struct vhca_cmd_obj_out *out = NULL;
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    uint32_t min_handle = kind == LIMIT_QP ? 2 : 1;
    struct vhca_cmd_obj_out one;
    VhcaEq eq;
    VhcaCq cq;

    /* A big admin queue and AEQ: batches of 2048 commands. */
    vhca_admin_setup(d, 12, 13);
    g_assert_cmpuint(vhca_cmd_query_device(d, &dev), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
    if (kind != LIMIT_PD && kind != LIMIT_EQ) {
        pdn = vhca_pd_make(d);
    }
    if (kind == LIMIT_CQ || kind == LIMIT_QP) {
        vhca_eq_make(d, &eq, 6, VHCA_VECTOR_FIRST_COMP);
    }
    if (kind == LIMIT_QP) {
        vhca_cq_make(d, &cq, 6, eq.eqn, page);
    }

    /* Every object of the kind is created from the same mailbox. */
    switch (kind) {
    case LIMIT_PD:
        create_op = VHCA_CMD_CREATE_PD;
        destroy_op = VHCA_CMD_DESTROY_PD;
        max = dev.max_pd;
        break;
    case LIMIT_MR: {
        struct vhca_mr_create c;

        vhca_mr_prepare_phys(&c, pdn, VHCA_ACCESS_LOCAL_WRITE, 0x100000,
                             0x1000, 0x01);
        mbox = guest_alloc(&d->alloc, sizeof(c));
        qtest_memwrite(d->qts, mbox, &c, sizeof(c));
        in.len = cpu_to_le32(sizeof(c));
        create_op = VHCA_CMD_CREATE_MR;
        destroy_op = VHCA_CMD_DESTROY_MR;
        max = dev.max_mr;
        break;
    }
    case LIMIT_EQ: {
        struct vhca_eq_create c;
        VhcaEq shared;

        vhca_eq_prepare(d, &shared, 2, VHCA_VECTOR_FIRST_COMP, &c);
        mbox = guest_alloc(&d->alloc, sizeof(c));
        qtest_memwrite(d->qts, mbox, &c, sizeof(c));
        in.len = cpu_to_le32(sizeof(c));
        create_op = VHCA_CMD_CREATE_EQ;
        destroy_op = VHCA_CMD_DESTROY_EQ;
        /* One EQ_DB register per completion EQ: eqn 1..62. */
        max = VHCA_MAX_COMP_EQS;
        break;
    }
    case LIMIT_CQ: {
        struct vhca_cq_create c;
        VhcaCq shared;

        vhca_cq_prepare(d, &shared, 2, eq.eqn, page, &c);
        mbox = guest_alloc(&d->alloc, sizeof(c));
        qtest_memwrite(d->qts, mbox, &c, sizeof(c));
        in.len = cpu_to_le32(sizeof(c));
        create_op = VHCA_CMD_CREATE_CQ;
        destroy_op = VHCA_CMD_DESTROY_CQ;
        max = dev.max_cq;
        break;
    }
    case LIMIT_QP: {
        struct vhca_qp_create c;
        VhcaQp shared;

        vhca_qp_prepare(d, &shared, VHCA_QPT_RC, pdn, cq.cqn, cq.cqn, 1, 1,
                        page, &c);
        mbox = guest_alloc(&d->alloc, sizeof(c));
        qtest_memwrite(d->qts, mbox, &c, sizeof(c));
        in.len = cpu_to_le32(sizeof(c));
        create_op = VHCA_CMD_CREATE_QP;
        destroy_op = VHCA_CMD_DESTROY_QP;
        max = dev.max_qp;
        break;
    }
    default:
        g_assert_not_reached();
    }
    in.addr = cpu_to_le64(mbox);
    g_test_message("%s limit %u", limit_name[kind], max);
    g_assert_cmpuint(max, >, 0);
    g_assert_cmpuint(max, <=, 1u << 20);

    /* Exactly max of them fit (QUERY_DEVICE counts what CREATE enforces). */
    st = g_malloc(max);
    out = g_new(struct vhca_cmd_obj_out, max);
    vhca_cmd_batch(d, max, create_op, &in, sizeof(in), st, out);
    for (uint32_t i = 0; i < max; i++) {
        if (st[i] != VHCA_ST_OK) {
            g_error("%s %u of %u: status %u", limit_name[kind], i + 1, max,
                    st[i]);
        }
        g_assert_cmpuint(out[i].handle, >=, min_handle);
        g_assert_cmpuint(out[i].handle, <, 1u << 24);
        g_assert_false(g_hash_table_contains(seen,
                                             GUINT_TO_POINTER(out[i].handle)));
        g_hash_table_add(seen, GUINT_TO_POINTER(out[i].handle));
        if (kind == LIMIT_MR) {
            g_assert_cmphex(out[i].key, ==, out[i].handle << 8 | 0x01);
        }
    }
    /* One more: NO_RESOURCES. */
    g_assert_cmpuint(vhca_cmd_exec(d, create_op, &in, sizeof(in), &one), ==,
                     VHCA_ST_NO_RESOURCES);
    /* Free one and its slot is available again. */
    g_assert_cmpuint(vhca_cmd_destroy(d, destroy_op,
                                      kind == LIMIT_MR ? out[max / 2].key :
                                      out[max / 2].handle), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_exec(d, create_op, &in, sizeof(in), &one), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_exec(d, create_op, &in, sizeof(in), &one), ==,
                     VHCA_ST_NO_RESOURCES);
    check_nop(d);
    vhca_test_stop(d);
}

/* ======================================================================= */
/* Memory regions                                                          */
/* ======================================================================= */

static void test_mr_phys(void)
{
    Rig r;
    struct vhca_mr_create c;
    uint32_t index, key;

    rig_up(&r);
    vhca_mr_prepare_phys(&c, r.pdn, VHCA_ACCESS_LOCAL_WRITE |
                         VHCA_ACCESS_REMOTE_READ, 0, VHCA_TEST_RAM_END, 0x5c);
    g_assert_cmpuint(vhca_cmd_create_mr(r.d, &c, &index, &key), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(index, >=, 1);
    /* key = index << 8 | key_tag & 0xff (lkey == rkey). */
    g_assert_cmphex(key, ==, index << 8 | 0x5c);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_MR, key), ==,
                     VHCA_ST_OK);

    /* Only the low 8 bits of key_tag are the tag. */
    vhca_mr_prepare_phys(&c, r.pdn, VHCA_ACCESS_LOCAL_WRITE, 0x1000, 0x1000,
                         0);
    c.key_tag = cpu_to_le32(0xabcd12);
    g_assert_cmpuint(vhca_cmd_create_mr(r.d, &c, &index, &key), ==,
                     VHCA_ST_OK);
    g_assert_cmphex(key, ==, index << 8 | 0x12);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_MR, key), ==,
                     VHCA_ST_OK);
    vhca_test_stop(r.d);
}

/* Page-list MRs: level 1 with an offset, 2 MiB pages, level 2. */
static void test_mr_pbl(void)
{
    Rig r;
    struct vhca_mr_create c;
    VhcaPages pages;
    uint32_t index, key, key2, key3;

    rig_up(&r);
    vhca_pages_alloc(r.d, &pages, 4 * VHCA_TEST_PAGE_SIZE);
    memset(&c, 0, sizeof(c));
    c.pdn = cpu_to_le32(r.pdn);
    c.access = cpu_to_le32(VHCA_ACCESS_LOCAL_WRITE |
                           VHCA_ACCESS_REMOTE_WRITE);
    c.iova = cpu_to_le64(0x7f0012340800ull);
    c.offset = cpu_to_le32(0x800);
    c.length = cpu_to_le64(4 * VHCA_TEST_PAGE_SIZE - 0x800);
    c.pbl_addr = cpu_to_le64(pages.pbl);
    c.npages = cpu_to_le32(4);
    c.page_shift = 12;
    c.pbl_levels = 1;
    c.key_tag = cpu_to_le32(0x01);
    g_assert_cmpuint(vhca_cmd_create_mr(r.d, &c, &index, &key), ==,
                     VHCA_ST_OK);
    g_assert_cmphex(key, ==, index << 8 | 0x01);

    /* Two 2 MiB pages. */
    {
        uint64_t buf = guest_alloc(&r.d->alloc, 6 << 20);
        uint64_t base = ROUND_UP(buf, 2 << 20);
        uint64_t pbl = guest_alloc(&r.d->alloc, 16);

        qtest_writeq(r.d->qts, pbl, base);
        qtest_writeq(r.d->qts, pbl + 8, base + (2 << 20));
        c.iova = cpu_to_le64(0x40000000);
        c.offset = 0;
        c.length = cpu_to_le64(4 << 20);
        c.pbl_addr = cpu_to_le64(pbl);
        c.npages = cpu_to_le32(2);
        c.page_shift = 21;
        c.key_tag = cpu_to_le32(0x02);
        g_assert_cmpuint(vhca_cmd_create_mr(r.d, &c, &index, &key2), ==,
                         VHCA_ST_OK);
        g_assert_cmphex(key2 & 0xff, ==, 0x02);
    }

    /* Level 2: 600 pages, two pages of 512 entries. */
    {
        VhcaPages data, l2a, l2b;
        g_autofree uint64_t *entries = g_new0(uint64_t, 1024);
        uint64_t top = guest_alloc(&r.d->alloc, 16);

        vhca_pages_alloc(r.d, &data, 600 * VHCA_TEST_PAGE_SIZE);
        vhca_pages_alloc(r.d, &l2a, VHCA_TEST_PAGE_SIZE);
        vhca_pages_alloc(r.d, &l2b, VHCA_TEST_PAGE_SIZE);
        for (int i = 0; i < 600; i++) {
            entries[i] = cpu_to_le64(data.addr +
                                     (uint64_t)i * VHCA_TEST_PAGE_SIZE);
        }
        qtest_memwrite(r.d->qts, l2a.addr, entries, VHCA_TEST_PAGE_SIZE);
        qtest_memwrite(r.d->qts, l2b.addr, entries + 512,
                       VHCA_TEST_PAGE_SIZE);
        qtest_writeq(r.d->qts, top, l2a.addr);
        qtest_writeq(r.d->qts, top + 8, l2b.addr);
        c.iova = cpu_to_le64(0x1000000);
        c.offset = 0;
        c.length = cpu_to_le64(600ull * VHCA_TEST_PAGE_SIZE);
        c.pbl_addr = cpu_to_le64(top);
        c.npages = cpu_to_le32(600);
        c.page_shift = 12;
        c.pbl_levels = 2;
        c.key_tag = cpu_to_le32(0x03);
        g_assert_cmpuint(vhca_cmd_create_mr(r.d, &c, &index, &key3), ==,
                         VHCA_ST_OK);
        g_assert_cmphex(key3 & 0xff, ==, 0x03);
    }

    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_MR, key), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_MR, key2), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_MR, key3), ==,
                     VHCA_ST_OK);
    vhca_test_stop(r.d);
}

/* ======================================================================= */
/* Completion EQs and CQs                                                  */
/* ======================================================================= */

static void test_eq(void)
{
    VhcaTestDev *d = start_rdma(NULL);
    struct vhca_eq_create good;
    VhcaEq eq, eq2;
    uint32_t eqn;

    vhca_eq_make(d, &eq, 4, VHCA_VECTOR_FIRST_COMP);
    vhca_eq_make(d, &eq2, 16, NUM_VECTORS - 1);
    g_assert_cmpuint(eq.eqn, >=, 1);
    g_assert_cmpuint(eq.eqn, <=, VHCA_MAX_COMP_EQS);
    g_assert_cmpuint(eq2.eqn, >=, 1);
    g_assert_cmpuint(eq2.eqn, <=, VHCA_MAX_COMP_EQS);
    g_assert_cmpuint(eq.eqn, !=, eq2.eqn);

    /* 2^9 entries of 16 bytes in two pages. */
    vhca_eq_prepare(d, &eq, 9, VHCA_VECTOR_FIRST_COMP, &good);
    g_assert_cmpuint(vhca_cmd_create_eq(d, &good, &eqn), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(d, VHCA_CMD_DESTROY_EQ, eqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(d, VHCA_CMD_DESTROY_EQ, eq2.eqn), ==,
                     VHCA_ST_OK);
    check_nop(d);
    vhca_test_stop(d);
}

static void test_cq(void)
{
    Rig r;
    struct vhca_cq_create good;
    VhcaCq cq, big;
    uint32_t cqn;

    rig_up(&r);
    g_assert_cmpuint(r.scq.cqn, >=, 1);
    g_assert_cmpuint(r.rcq.cqn, >=, 1);
    g_assert_cmpuint(r.scq.cqn, !=, r.rcq.cqn);

    /* 2^16 entries hold max_cqe (65535) completions. */
    vhca_cq_make(r.d, &big, 16, r.eq.eqn, r.page);

    /* 2^8 entries of 32 bytes in two pages. */
    vhca_cq_prepare(r.d, &cq, 8, r.eq.eqn, r.page, &good);
    g_assert_cmpuint(vhca_cmd_create_cq(r.d, &good, &cqn), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_CQ, cqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_CQ, big.cqn), ==,
                     VHCA_ST_OK);
    check_nop(r.d);
    vhca_test_stop(r.d);
}

/* ======================================================================= */
/* Queue pairs: create, query                                              */
/* ======================================================================= */

static void test_qp_create(void)
{
    Rig r;
    struct vhca_qp_create good, c;
    VhcaQp qp, big;
    uint32_t qpn;
    static const uint8_t types[] = { VHCA_QPT_RC, VHCA_QPT_UC, VHCA_QPT_UD };

    rig_up(&r);
    for (int i = 0; i < ARRAY_SIZE(types); i++) {
        vhca_qp_make(r.d, &qp, types[i], r.pdn, r.scq.cqn, r.rcq.cqn, 3, 3,
                     r.page);
        /* IBTA reserves QP0 and QP1. */
        g_assert_cmpuint(qp.qpn, >=, 2);
        g_assert_cmpuint(qp.qpn, <, 1u << 24);
        g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_QP, qp.qpn),
                         ==, VHCA_ST_OK);
    }
    /* max_qp_wr = 2^14 send and receive WQEs. */
    vhca_qp_make(r.d, &big, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 14, 14,
                 r.page);

    vhca_qp_prepare(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 5,
                    r.page, &good);
    /* Send and receive CQ may be the same CQ. */
    c = good;
    c.recv_cqn = c.send_cqn;
    g_assert_cmpuint(vhca_cmd_create_qp(r.d, &c, &qpn), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_QP, qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_QP, big.qpn), ==,
                     VHCA_ST_OK);
    check_nop(r.d);
    vhca_test_stop(r.d);
}

/* QUERY_QP of a new QP: RESET, and the queue capacities. */
static void test_qp_query_caps(void)
{
    Rig r;
    VhcaQp qp;
    struct vhca_qp_attr a;

    rig_up(&r);
    vhca_qp_make(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 6, 3,
                 r.page);
    g_assert_cmpuint(vhca_cmd_query_qp(r.d, qp.qpn, &a), ==, VHCA_ST_OK);
    vhca_qp_attr_to_host(&a);
    g_assert_cmpuint(a.qpn, ==, qp.qpn);
    g_assert_cmpuint(a.qp_state, ==, VHCA_QPS_RESET);
    g_assert_cmpuint(a.max_send_wr, ==, 1u << 6);
    g_assert_cmpuint(a.max_recv_wr, ==, 1u << 3);
    g_assert_cmpuint(a.max_send_sge, ==, VHCA_MAX_SEND_SGE);
    g_assert_cmpuint(a.max_recv_sge, ==, VHCA_MAX_RECV_SGE);
    g_assert_cmpuint(a.max_inline_data, ==, VHCA_MAX_INLINE);
    vhca_test_stop(r.d);
}

/* ======================================================================= */
/* The QP state machine (IBTA 10.3.1, Modify QP table of IBTA 11.2.4.2)    */
/* ======================================================================= */

#define QPS_N   (VHCA_QPS_ERR + 1)

static const char *const qps_name[QPS_N] = {
    "reset", "init", "rtr", "rts", "sqd", "sqe", "err",
};

/* Attributes a QP can carry in struct vhca_qp_attr. */
#define ALL_ATTRS       0x1ffffe
/*
 * Alternate paths (APM) have no fields in struct vhca_qp_attr and Linux
 * bans them for RoCE (_ib_modify_qp): never expected to succeed here.
 */
#define APM_ATTRS       (VHCA_QP_ALT_PATH | VHCA_QP_PATH_MIG_STATE)

typedef struct QpTransition {
    uint32_t req, opt;
} QpTransition;

typedef enum { T_RC, T_UC, T_UD, T_N } TypeIndex;

static const uint8_t type_of[T_N] = { VHCA_QPT_RC, VHCA_QPT_UC, VHCA_QPT_UD };
static const char *const type_name[T_N] = { "rc", "uc", "ud" };

/* .valid transitions and their per-type required / optional attributes. */
typedef struct QpTableEntry {
    bool valid;
    QpTransition t[T_N];
} QpTableEntry;

#define RC_RTR_REQ (VHCA_QP_AV | VHCA_QP_PATH_MTU | VHCA_QP_DEST_QPN |      \
                    VHCA_QP_RQ_PSN | VHCA_QP_MAX_DEST_RD_ATOMIC |           \
                    VHCA_QP_MIN_RNR_TIMER)
#define UC_RTR_REQ (VHCA_QP_AV | VHCA_QP_PATH_MTU | VHCA_QP_DEST_QPN |      \
                    VHCA_QP_RQ_PSN)
#define RC_RTS_REQ (VHCA_QP_TIMEOUT | VHCA_QP_RETRY_CNT | VHCA_QP_RNR_RETRY | \
                    VHCA_QP_SQ_PSN | VHCA_QP_MAX_QP_RD_ATOMIC)

/*
 * Linux's qp_state_table (drivers/infiniband/core/verbs.c) for RC, UC and
 * UD, plus what the vhca spec adds: "Any state may go to RESET or ERR",
 * which includes RESET -> ERR (IBTA Figure 123; Linux's table omits it).
 */
static const QpTableEntry qp_table[QPS_N][QPS_N] = {
    [VHCA_QPS_RESET] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
        [VHCA_QPS_INIT] = { true, {
            [T_RC] = { VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                       VHCA_QP_ACCESS_FLAGS },
            [T_UC] = { VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                       VHCA_QP_ACCESS_FLAGS },
            [T_UD] = { VHCA_QP_PKEY_INDEX | VHCA_QP_PORT | VHCA_QP_QKEY },
        } },
    },
    [VHCA_QPS_INIT] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
        [VHCA_QPS_INIT] = { true, {
            [T_RC] = { 0, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                       VHCA_QP_ACCESS_FLAGS },
            [T_UC] = { 0, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                       VHCA_QP_ACCESS_FLAGS },
            [T_UD] = { 0, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                       VHCA_QP_QKEY },
        } },
        [VHCA_QPS_RTR] = { true, {
            [T_RC] = { RC_RTR_REQ, VHCA_QP_ALT_PATH | VHCA_QP_ACCESS_FLAGS |
                       VHCA_QP_PKEY_INDEX },
            [T_UC] = { UC_RTR_REQ, VHCA_QP_ALT_PATH | VHCA_QP_ACCESS_FLAGS |
                       VHCA_QP_PKEY_INDEX },
            [T_UD] = { 0, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY },
        } },
    },
    [VHCA_QPS_RTR] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
        [VHCA_QPS_RTS] = { true, {
            [T_RC] = { RC_RTS_REQ, VHCA_QP_CUR_STATE | VHCA_QP_ALT_PATH |
                       VHCA_QP_ACCESS_FLAGS | VHCA_QP_MIN_RNR_TIMER |
                       VHCA_QP_PATH_MIG_STATE },
            [T_UC] = { VHCA_QP_SQ_PSN, VHCA_QP_CUR_STATE | VHCA_QP_ALT_PATH |
                       VHCA_QP_ACCESS_FLAGS | VHCA_QP_PATH_MIG_STATE },
            [T_UD] = { VHCA_QP_SQ_PSN, VHCA_QP_CUR_STATE | VHCA_QP_QKEY },
        } },
    },
    [VHCA_QPS_RTS] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
        [VHCA_QPS_RTS] = { true, {
            [T_RC] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_ACCESS_FLAGS |
                       VHCA_QP_ALT_PATH | VHCA_QP_PATH_MIG_STATE |
                       VHCA_QP_MIN_RNR_TIMER },
            [T_UC] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_ACCESS_FLAGS |
                       VHCA_QP_ALT_PATH | VHCA_QP_PATH_MIG_STATE },
            [T_UD] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_QKEY },
        } },
        [VHCA_QPS_SQD] = { true, {
            [T_RC] = { 0, VHCA_QP_EN_SQD_ASYNC_NOTIFY },
            [T_UC] = { 0, VHCA_QP_EN_SQD_ASYNC_NOTIFY },
            [T_UD] = { 0, VHCA_QP_EN_SQD_ASYNC_NOTIFY },
        } },
    },
    [VHCA_QPS_SQD] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
        [VHCA_QPS_RTS] = { true, {
            [T_RC] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_ALT_PATH |
                       VHCA_QP_ACCESS_FLAGS | VHCA_QP_MIN_RNR_TIMER |
                       VHCA_QP_PATH_MIG_STATE },
            [T_UC] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_ALT_PATH |
                       VHCA_QP_ACCESS_FLAGS | VHCA_QP_PATH_MIG_STATE },
            [T_UD] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_QKEY },
        } },
        [VHCA_QPS_SQD] = { true, {
            [T_RC] = { 0, VHCA_QP_PORT | VHCA_QP_AV | VHCA_QP_TIMEOUT |
                       VHCA_QP_RETRY_CNT | VHCA_QP_RNR_RETRY |
                       VHCA_QP_MAX_QP_RD_ATOMIC |
                       VHCA_QP_MAX_DEST_RD_ATOMIC | VHCA_QP_ALT_PATH |
                       VHCA_QP_ACCESS_FLAGS | VHCA_QP_PKEY_INDEX |
                       VHCA_QP_MIN_RNR_TIMER | VHCA_QP_PATH_MIG_STATE },
            [T_UC] = { 0, VHCA_QP_AV | VHCA_QP_ALT_PATH |
                       VHCA_QP_ACCESS_FLAGS | VHCA_QP_PKEY_INDEX |
                       VHCA_QP_PATH_MIG_STATE },
            [T_UD] = { 0, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY },
        } },
    },
    [VHCA_QPS_SQE] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
        [VHCA_QPS_RTS] = { true, {
            [T_UC] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_ACCESS_FLAGS },
            [T_UD] = { 0, VHCA_QP_CUR_STATE | VHCA_QP_QKEY },
        } },
    },
    [VHCA_QPS_ERR] = {
        [VHCA_QPS_RESET] = { true },
        [VHCA_QPS_ERR] = { true },
    },
};

typedef struct QpRig {
    Rig r;
    TypeIndex t;
    VhcaQp qp;
    struct vhca_qp_attr base;   /* vhca_qp_attr_defaults */
} QpRig;

/* Modify with @mask | STATE to @next using @attrs; returns the status. */
static uint8_t qp_modify(QpRig *q, const struct vhca_qp_attr *attrs,
                         uint8_t next, uint32_t mask)
{
    struct vhca_qp_attr a = *attrs;

    a.qpn = cpu_to_le32(q->qp.qpn);
    a.qp_state = next;
    a.attr_mask = cpu_to_le32(mask | VHCA_QP_STATE);
    return vhca_cmd_modify_qp(q->r.d, &a);
}

static void qp_query_at(QpRig *q, struct vhca_qp_attr *a, const char *where)
{
    VHCA_CHECK_EQ(where, "QUERY_QP status",
                  vhca_cmd_query_qp_at(q->r.d, q->qp.qpn, a, where),
                  VHCA_ST_OK);
    vhca_qp_attr_to_host(a);
    /* attr_mask is MODIFY's input: whatever QUERY leaves there is noise. */
    a->attr_mask = 0;
}

/* Walk a QP from wherever it is to @state with required attributes only. */
static void qp_bring_to_at(QpRig *q, uint8_t state, const char *where)
{
    const QpTransition *t;
    struct vhca_qp_attr a;

    VHCA_CHECK_EQ(where, "modify to RESET",
                  qp_modify(q, &q->base, VHCA_QPS_RESET, 0), VHCA_ST_OK);
    if (state == VHCA_QPS_RESET) {
        goto check;
    }
    t = &qp_table[VHCA_QPS_RESET][VHCA_QPS_INIT].t[q->t];
    VHCA_CHECK_EQ(where, "modify RESET -> INIT",
                  qp_modify(q, &q->base, VHCA_QPS_INIT, t->req), VHCA_ST_OK);
    if (state == VHCA_QPS_ERR) {
        VHCA_CHECK_EQ(where, "modify INIT -> ERR",
                      qp_modify(q, &q->base, VHCA_QPS_ERR, 0), VHCA_ST_OK);
        goto check;
    }
    if (state == VHCA_QPS_INIT) {
        goto check;
    }
    t = &qp_table[VHCA_QPS_INIT][VHCA_QPS_RTR].t[q->t];
    VHCA_CHECK_EQ(where, "modify INIT -> RTR",
                  qp_modify(q, &q->base, VHCA_QPS_RTR, t->req), VHCA_ST_OK);
    if (state == VHCA_QPS_RTR) {
        goto check;
    }
    t = &qp_table[VHCA_QPS_RTR][VHCA_QPS_RTS].t[q->t];
    VHCA_CHECK_EQ(where, "modify RTR -> RTS",
                  qp_modify(q, &q->base, VHCA_QPS_RTS, t->req), VHCA_ST_OK);
    if (state == VHCA_QPS_RTS) {
        goto check;
    }
    g_assert_cmpuint(state, ==, VHCA_QPS_SQD);
    VHCA_CHECK_EQ(where, "modify RTS -> SQD",
                  qp_modify(q, &q->base, VHCA_QPS_SQD, 0), VHCA_ST_OK);
check:
    qp_query_at(q, &a, where);
    VHCA_CHECK_EQ(where, "qp_state after the walk", a.qp_state, state);
}
#define qp_bring_to(q, s) qp_bring_to_at(q, s, G_STRLOC)

/* Does QUERY_QP (host order) show every attribute of @mask as in @want? */
static void check_attrs_stored_at(const struct vhca_qp_attr *got,
                                  const struct vhca_qp_attr *want_le,
                                  uint32_t mask, const char *where)
{
    struct vhca_qp_attr want = *want_le;

    vhca_qp_attr_to_host(&want);
#define CHECK_FIELD(bit, field)                                            \
    if (mask & (bit)) {                                                    \
        VHCA_CHECK_EQ(where, "stored " #field, got->field, want.field);    \
    }
    CHECK_FIELD(VHCA_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
    CHECK_FIELD(VHCA_QP_ACCESS_FLAGS, qp_access_flags);
    CHECK_FIELD(VHCA_QP_PKEY_INDEX, pkey_index);
    CHECK_FIELD(VHCA_QP_PORT, port);
    CHECK_FIELD(VHCA_QP_QKEY, qkey);
    CHECK_FIELD(VHCA_QP_AV, sgid_index);
    CHECK_FIELD(VHCA_QP_AV, hop_limit);
    CHECK_FIELD(VHCA_QP_AV, traffic_class);
    CHECK_FIELD(VHCA_QP_AV, flow_label);
    CHECK_FIELD(VHCA_QP_PATH_MTU, path_mtu);
    CHECK_FIELD(VHCA_QP_TIMEOUT, timeout);
    CHECK_FIELD(VHCA_QP_RETRY_CNT, retry_cnt);
    CHECK_FIELD(VHCA_QP_RNR_RETRY, rnr_retry);
    CHECK_FIELD(VHCA_QP_RQ_PSN, rq_psn);
    CHECK_FIELD(VHCA_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
    CHECK_FIELD(VHCA_QP_MIN_RNR_TIMER, min_rnr_timer);
    CHECK_FIELD(VHCA_QP_SQ_PSN, sq_psn);
    CHECK_FIELD(VHCA_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
    CHECK_FIELD(VHCA_QP_DEST_QPN, dest_qp_num);
#undef CHECK_FIELD
    if ((mask & VHCA_QP_AV) && memcmp(got->dgid, want.dgid, 16)) {
        g_error("%s: stored dgid differs", where);
    }
    if ((mask & VHCA_QP_AV) && memcmp(got->dmac, want.dmac, 6)) {
        g_error("%s: stored dmac differs", where);
    }
}

/* A failed MODIFY left the QP exactly as QUERY_QP showed it before. */
static void check_refused_at(QpRig *q, uint8_t status,
                             const struct vhca_qp_attr *before,
                             const char *what, const char *where)
{
    struct vhca_qp_attr after;

    if (status != VHCA_ST_BAD_PARAM && status != VHCA_ST_BAD_STATE) {
        g_error("%s: %s: status %u, expected BAD_PARAM or BAD_STATE",
                where, what, status);
    }
    qp_query_at(q, &after, where);
    if (memcmp(before, &after, sizeof(after))) {
        g_error("%s: %s: refused, but QUERY_QP changed (state %u -> %u)",
                where, what, before->qp_state, after.qp_state);
    }
}

/* Values for optional attributes that differ from the defaults. */
static void changed_attrs(QpRig *q, struct vhca_qp_attr *a, uint8_t cur)
{
    *a = q->base;
    a->cur_qp_state = cur;
    a->en_sqd_async_notify = 1;
    a->qp_access_flags = cpu_to_le32(VHCA_ACCESS_REMOTE_WRITE |
                                     VHCA_ACCESS_REMOTE_ATOMIC);
    a->qkey = cpu_to_le32(0x33334444);
    a->hop_limit = 17;
    a->traffic_class = 0x20;
    a->flow_label = cpu_to_le32(0x54321);
    a->dgid[15] = 3;
    a->dmac[5] = 0xcd;
    a->timeout = 18;
    a->retry_cnt = 3;
    a->rnr_retry = 7;
    a->min_rnr_timer = 20;
    a->max_rd_atomic = q->r.dev.max_qp_init_rd_atom / 2;
    a->max_dest_rd_atomic = q->r.dev.max_qp_rd_atom / 2;
}

static void qp_rig_up(QpRig *q, TypeIndex t)
{
    rig_up(&q->r);
    q->t = t;
    vhca_qp_make(q->r.d, &q->qp, type_of[t], q->r.pdn, q->r.scq.cqn,
                 q->r.rcq.cqn, 4, 4, q->r.page);
    vhca_qp_attr_defaults(&q->base, q->qp.qpn, &q->r.dev);
}

typedef struct StateCase {
    TypeIndex t;
    uint8_t cur;
} StateCase;

/*
 * Every transition out of one state: for a valid one, each missing
 * required attribute and each attribute the table does not allow fails
 * and changes nothing; exactly the required ones succeed and are stored;
 * required + optional succeed and are stored.  Invalid transitions fail
 * whatever attributes come with them.
 */
static void test_qp_state(const void *data)
{
    const StateCase *sc = data;
    QpRig q;
    struct vhca_qp_attr before, after, opt_attrs;

    qp_rig_up(&q, sc->t);
    for (uint8_t next = 0; next < QPS_N; next++) {
        const QpTableEntry *e = &qp_table[sc->cur][next];
        const QpTransition *t = &e->t[sc->t];

        g_test_message("%s: %s -> %s", type_name[sc->t], qps_name[sc->cur],
                       qps_name[next]);
        qp_bring_to(&q, sc->cur);
        qp_query_at(&q, &before, G_STRLOC);

        if (!e->valid) {
            check_refused_at(&q, qp_modify(&q, &q.base, next, 0), &before,
                             "invalid transition", G_STRLOC);
            /* Not even with the attributes of a valid way into @next. */
            for (uint8_t p = 0; p < QPS_N; p++) {
                uint32_t req = qp_table[p][next].t[sc->t].req;

                if (qp_table[p][next].valid && req) {
                    check_refused_at(&q, qp_modify(&q, &q.base, next, req),
                                     &before, "invalid transition with the "
                                     "attributes of a valid one", G_STRLOC);
                }
            }
            continue;
        }

        /* Each required attribute is required. */
        for (uint32_t bit = 1; bit <= t->req; bit <<= 1) {
            if (t->req & bit) {
                g_autofree char *what =
                    g_strdup_printf("missing required attribute 0x%x", bit);

                check_refused_at(&q, qp_modify(&q, &q.base, next,
                                               t->req & ~bit),
                                 &before, what, G_STRLOC);
            }
        }
        /* Each attribute the transition does not allow is refused. */
        for (uint32_t bit = VHCA_QP_CUR_STATE; bit & ALL_ATTRS; bit <<= 1) {
            if (!(bit & (t->req | t->opt))) {
                g_autofree char *what =
                    g_strdup_printf("attribute 0x%x not allowed", bit);
                struct vhca_qp_attr a = q.base;

                a.cur_qp_state = sc->cur;
                check_refused_at(&q, qp_modify(&q, &a, next, t->req | bit),
                                 &before, what, G_STRLOC);
            }
        }

        /* Exactly the required attributes. */
        g_assert_cmpuint(qp_modify(&q, &q.base, next, t->req), ==,
                         VHCA_ST_OK);
        qp_query_at(&q, &after, G_STRLOC);
        g_assert_cmpuint(after.qp_state, ==, next);
        check_attrs_stored_at(&after, &q.base, t->req, G_STRLOC);

        /* Required and every optional one (alternate paths aside). */
        if (t->opt & ~APM_ATTRS) {
            uint32_t mask = t->req | (t->opt & ~APM_ATTRS);

            qp_bring_to(&q, sc->cur);
            changed_attrs(&q, &opt_attrs, sc->cur);
            g_assert_cmpuint(qp_modify(&q, &opt_attrs, next, mask), ==,
                             VHCA_ST_OK);
            qp_query_at(&q, &after, G_STRLOC);
            g_assert_cmpuint(after.qp_state, ==, next);
            check_attrs_stored_at(&after, &opt_attrs, mask, G_STRLOC);
        }
    }
    /* The caps never move. */
    qp_query_at(&q, &after, G_STRLOC);
    g_assert_cmpuint(after.max_send_wr, ==, 16);
    g_assert_cmpuint(after.max_recv_wr, ==, 16);
    /* No CQ_ERROR came of any of it. */
    g_assert_cmpuint(stashed_events_of_type(q.r.d, VHCA_EQE_CQ_ERROR), ==, 0);
    vhca_test_stop(q.r.d);
}

/*
 * The largest values are accepted and stored.  (Values out of range are
 * rows of the shared table, tests/common/vhca-admin-cases.c.)
 */
static void test_qp_value_limits(void)
{
    QpRig q;
    struct vhca_qp_attr a, before;
    const QpTransition *rtr, *rts;

    rtr = &qp_table[VHCA_QPS_INIT][VHCA_QPS_RTR].t[T_RC];
    rts = &qp_table[VHCA_QPS_RTR][VHCA_QPS_RTS].t[T_RC];
    qp_rig_up(&q, T_RC);

    qp_bring_to(&q, VHCA_QPS_INIT);
    a = q.base;
    a.path_mtu = VHCA_IB_MTU_4096;
    a.min_rnr_timer = 31;
    a.max_dest_rd_atomic = q.r.dev.max_qp_rd_atom;
    a.dest_qp_num = cpu_to_le32(0xffffff);
    g_assert_cmpuint(qp_modify(&q, &a, VHCA_QPS_RTR, rtr->req), ==,
                     VHCA_ST_OK);
    a.timeout = 31;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = q.r.dev.max_qp_init_rd_atom;
    g_assert_cmpuint(qp_modify(&q, &a, VHCA_QPS_RTS, rts->req), ==,
                     VHCA_ST_OK);
    qp_query_at(&q, &before, G_STRLOC);
    g_assert_cmpuint(before.qp_state, ==, VHCA_QPS_RTS);
    check_attrs_stored_at(&before, &a, rtr->req | rts->req, G_STRLOC);
    vhca_test_stop(q.r.d);
}

/* Any state -> RESET and -> ERR (spec: "Any state may go to RESET or ERR"). */
static void test_qp_any_to_reset_err(void)
{
    static const uint8_t states[] = {
        VHCA_QPS_RESET, VHCA_QPS_INIT, VHCA_QPS_RTR, VHCA_QPS_RTS,
        VHCA_QPS_SQD, VHCA_QPS_ERR,
    };
    QpRig q;
    struct vhca_qp_attr a;

    qp_rig_up(&q, T_RC);
    for (int i = 0; i < ARRAY_SIZE(states); i++) {
        for (uint8_t to = VHCA_QPS_RESET; to <= VHCA_QPS_ERR;
             to += VHCA_QPS_ERR) {
            qp_bring_to(&q, states[i]);
            g_assert_cmpuint(qp_modify(&q, &q.base, to, 0), ==, VHCA_ST_OK);
            qp_query_at(&q, &a, G_STRLOC);
            g_assert_cmpuint(a.qp_state, ==, to);
        }
    }
    vhca_test_stop(q.r.d);
}

/* ======================================================================= */
/* Flush to the error state, doorbells, CQ overflow                        */
/* ======================================================================= */

/* Bring an RC QP to RTS with an infinite timeout (no retries ever). */
static void qp_to_rts(Rig *r, VhcaQp *qp)
{
    struct vhca_qp_attr a;

    vhca_qp_attr_defaults(&a, qp->qpn, &r->dev);
    a.timeout = 0;
    a.qp_state = VHCA_QPS_INIT;
    a.attr_mask = cpu_to_le32(VHCA_QP_STATE |
                              qp_table[0][1].t[T_RC].req);
    g_assert_cmpuint(vhca_cmd_modify_qp(r->d, &a), ==, VHCA_ST_OK);
    a.qp_state = VHCA_QPS_RTR;
    a.attr_mask = cpu_to_le32(VHCA_QP_STATE | RC_RTR_REQ);
    g_assert_cmpuint(vhca_cmd_modify_qp(r->d, &a), ==, VHCA_ST_OK);
    a.qp_state = VHCA_QPS_RTS;
    a.attr_mask = cpu_to_le32(VHCA_QP_STATE | RC_RTS_REQ);
    g_assert_cmpuint(vhca_cmd_modify_qp(r->d, &a), ==, VHCA_ST_OK);
}

static void qp_set_state(Rig *r, VhcaQp *qp, uint8_t state)
{
    struct vhca_qp_attr a;

    vhca_qp_attr_defaults(&a, qp->qpn, &r->dev);
    a.qp_state = state;
    a.attr_mask = cpu_to_le32(VHCA_QP_STATE);
    g_assert_cmpuint(vhca_cmd_modify_qp(r->d, &a), ==, VHCA_ST_OK);
}

static uint8_t qp_state_of(Rig *r, VhcaQp *qp)
{
    struct vhca_qp_attr a;

    g_assert_cmpuint(vhca_cmd_query_qp(r->d, qp->qpn, &a), ==, VHCA_ST_OK);
    return a.qp_state;
}

/* The next CQE is a flush of @wr_id on @qpn. */
static void expect_flush_at(Rig *r, VhcaCq *cq, uint32_t qpn, uint64_t wr_id,
                            const char *where)
{
    struct vhca_cqe cqe;

    vhca_cq_next_at(r->d, cq, &cqe, where);
    VHCA_CHECK_EQ(where, "CQE status (WR_FLUSH_ERR)", cqe.status,
                  VHCA_WC_WR_FLUSH_ERR);
    VHCA_CHECK_EQ(where, "CQE wr_id", cqe.wr_id, wr_id);
    VHCA_CHECK_EQ(where, "CQE qpn", cqe.qpn, qpn);
}
#define expect_flush(r, cq, qpn, id) expect_flush_at(r, cq, qpn, id, G_STRLOC)

#define SEND_ID(i)      (0x5e4d000000000000ull | (i))
#define RECV_ID(i)      (0x4ecf000000000000ull | (i))

/*
 * Moving to ERR flushes every fetched WQE with WR_FLUSH_ERR, in order, to
 * the QP's CQs (owner bit of the first pass), with one COMPLETION event
 * per armed CQ on its EQ and one MSI-X on the EQ's vector.
 */
static void test_flush(void)
{
    enum { N = 5, M = 3 };
    Rig r;
    VhcaQp qp;
    struct vhca_eqe eqe;
    bool seen_scq = false, seen_rcq = false;
    struct vhca_cqe cqe;

    rig_up(&r);
    vhca_qp_make(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    qp_to_rts(&r, &qp);
    for (int i = 0; i < N; i++) {
        /* Signalled or not: a WR completing in error always completes. */
        vhca_qp_write_send(r.d, &qp, SEND_ID(i), VHCA_WR_SEND,
                           i & 1 ? VHCA_WQE_SIGNALED : 0);
    }
    vhca_qp_ring_sq(r.d, &qp, r.page);
    for (int i = 0; i < M; i++) {
        vhca_qp_write_recv(r.d, &qp, RECV_ID(i));
    }
    vhca_qp_ring_rq(r.d, &qp, r.page);

    /* No peer answers and the timeout is infinite: nothing completes. */
    check_nop(r.d);
    g_assert_false(vhca_cq_peek(r.d, &r.scq, NULL));
    g_assert_false(vhca_cq_peek(r.d, &r.rcq, NULL));

    vhca_cq_arm(r.d, &r.scq, VHCA_CQ_ARM_NEXT);
    vhca_cq_arm(r.d, &r.rcq, VHCA_CQ_ARM_NEXT);
    vhca_ceq_ack(r.d, &r.eq, true);
    vhca_msix_fired(r.d, r.eq.vector);         /* forget anything earlier */

    qp_set_state(&r, &qp, VHCA_QPS_ERR);
    g_assert_cmpuint(qp_state_of(&r, &qp), ==, VHCA_QPS_ERR);
    for (int i = 0; i < N; i++) {
        expect_flush(&r, &r.scq, qp.qpn, SEND_ID(i));
    }
    for (int i = 0; i < M; i++) {
        expect_flush(&r, &r.rcq, qp.qpn, RECV_ID(i));
    }

    /* One COMPLETION per armed CQ, then one interrupt for the EQ. */
    for (int i = 0; i < 2; i++) {
        vhca_ceq_next(r.d, &r.eq, &eqe);
        g_assert_cmpuint(eqe.type, ==, VHCA_EQE_COMPLETION);
        if (eqe.data[0] == r.scq.cqn && !seen_scq) {
            seen_scq = true;
        } else if (eqe.data[0] == r.rcq.cqn && !seen_rcq) {
            seen_rcq = true;
        } else {
            g_error("unexpected COMPLETION for CQ %u", eqe.data[0]);
        }
    }
    vhca_msix_wait(r.d, r.eq.vector);
    /* The EQ disarmed itself with the first event: one interrupt. */
    g_assert_false(vhca_msix_fired(r.d, r.eq.vector));
    /* Arming is one-shot: N completions, one event. */
    g_assert_false(vhca_ceq_peek(r.d, &r.eq, NULL));
    /* Nothing more than the WQEs posted. */
    g_assert_false(vhca_cq_peek(r.d, &r.scq, &cqe));
    g_assert_false(vhca_cq_peek(r.d, &r.rcq, &cqe));
    g_assert_cmpuint(stashed_events_of_type(r.d, VHCA_EQE_CQ_ERROR), ==, 0);

    /* Destroying a QP in ERR, then its CQs, EQ, PD. */
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_QP, qp.qpn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_CQ, r.scq.cqn),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_CQ, r.rcq.cqn),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(r.d, VHCA_CMD_DESTROY_EQ, r.eq.eqn),
                     ==, VHCA_ST_OK);
    vhca_test_stop(r.d);
}

/*
 * A doorbell on a page that does not own the QP is ignored: the device
 * never fetched those WQEs, so ERR flushes only what the owner rang.  A
 * second QP flushed afterwards lands right after them, which proves the
 * ignored WQEs were not flushed in between.
 */
static void test_foreign_doorbell(void)
{
    enum { N = 3, K = 2, M = 2 };
    Rig r;
    VhcaQp qp, qp2;
    uint32_t other;
    uint64_t doorbells;

    rig_up(&r);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(r.d, &other), ==, VHCA_ST_OK);
    g_assert_cmpuint(other, !=, r.page);
    vhca_qp_make(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    vhca_qp_make(r.d, &qp2, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    qp_to_rts(&r, &qp);
    qp_to_rts(&r, &qp2);

    doorbells = vhca_counter(r.d, VHCA_CNT_DOORBELLS);
    for (int i = 0; i < N; i++) {
        vhca_qp_write_send(r.d, &qp, SEND_ID(i), VHCA_WR_SEND,
                           VHCA_WQE_SIGNALED);
    }
    vhca_qp_ring_sq(r.d, &qp, r.page);
    for (int i = 0; i < M; i++) {
        vhca_qp_write_recv(r.d, &qp, RECV_ID(i));
    }
    vhca_qp_ring_rq(r.d, &qp, r.page);
    /* K more of each, rung on the other context's page only. */
    for (int i = N; i < N + K; i++) {
        vhca_qp_write_send(r.d, &qp, SEND_ID(i), VHCA_WR_SEND,
                           VHCA_WQE_SIGNALED);
    }
    vhca_qp_ring_sq(r.d, &qp, other);
    for (int i = M; i < M + K; i++) {
        vhca_qp_write_recv(r.d, &qp, RECV_ID(i));
    }
    vhca_qp_ring_rq(r.d, &qp, other);
    /* And doorbells for objects that do not exist at all. */
    vhca_db_write(r.d, r.page, VHCA_DB_SQ, 0xabcdef, 1);
    vhca_db_write(r.d, r.page, VHCA_DB_RQ, 0, 1);
    vhca_db_write(r.d, r.page, VHCA_DB_CQ, 0xabcdef, VHCA_CQ_ARM_NEXT);
    /* Ignored doorbells are still counted. */
    g_assert_cmpuint(vhca_counter(r.d, VHCA_CNT_DOORBELLS), ==,
                     doorbells + 7);

    qp_set_state(&r, &qp, VHCA_QPS_ERR);
    vhca_qp_write_send(r.d, &qp2, SEND_ID(100), VHCA_WR_SEND, 0);
    vhca_qp_ring_sq(r.d, &qp2, r.page);
    vhca_qp_write_recv(r.d, &qp2, RECV_ID(100));
    vhca_qp_ring_rq(r.d, &qp2, r.page);
    qp_set_state(&r, &qp2, VHCA_QPS_ERR);

    for (int i = 0; i < N; i++) {
        expect_flush(&r, &r.scq, qp.qpn, SEND_ID(i));
    }
    expect_flush(&r, &r.scq, qp2.qpn, SEND_ID(100));
    for (int i = 0; i < M; i++) {
        expect_flush(&r, &r.rcq, qp.qpn, RECV_ID(i));
    }
    expect_flush(&r, &r.rcq, qp2.qpn, RECV_ID(100));
    check_nop(r.d);
    vhca_test_stop(r.d);
}

/*
 * IBTA 10.3.1 (Error state) / 11.4.1.1: work requests posted to a QP in
 * the error state complete with WR_FLUSH_ERR.  Linux's ib_drain_qp()
 * depends on it: it posts a marker WR after moving the QP to ERR and
 * waits for its completion.
 */
static void test_post_in_error(void)
{
    Rig r;
    VhcaQp qp;

    rig_up(&r);
    vhca_qp_make(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    qp_to_rts(&r, &qp);
    qp_set_state(&r, &qp, VHCA_QPS_ERR);
    vhca_qp_write_send(r.d, &qp, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_qp_write_send(r.d, &qp, SEND_ID(2), VHCA_WR_RDMA_WRITE, 0);
    vhca_qp_ring_sq(r.d, &qp, r.page);
    vhca_qp_write_recv(r.d, &qp, RECV_ID(1));
    vhca_qp_ring_rq(r.d, &qp, r.page);
    expect_flush(&r, &r.scq, qp.qpn, SEND_ID(1));
    expect_flush(&r, &r.scq, qp.qpn, SEND_ID(2));
    expect_flush(&r, &r.rcq, qp.qpn, RECV_ID(1));
    vhca_test_stop(r.d);
}

/*
 * Moving to RESET empties both rings: nothing fetched before it is
 * flushed later, and the rings start again from index 0 (a QP after
 * RESET is as new, as the Linux drivers assume).
 */
static void test_reset_empties_rings(void)
{
    Rig r;
    VhcaQp qp, qp2;

    rig_up(&r);
    vhca_qp_make(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    vhca_qp_make(r.d, &qp2, VHCA_QPT_RC, r.pdn, r.scq.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    qp_to_rts(&r, &qp);
    qp_to_rts(&r, &qp2);
    for (int i = 0; i < 3; i++) {
        vhca_qp_write_send(r.d, &qp, SEND_ID(i), VHCA_WR_SEND, 0);
        vhca_qp_write_recv(r.d, &qp, RECV_ID(i));
    }
    vhca_qp_ring_sq(r.d, &qp, r.page);
    vhca_qp_ring_rq(r.d, &qp, r.page);

    qp_set_state(&r, &qp, VHCA_QPS_RESET);
    g_assert_cmpuint(qp_state_of(&r, &qp), ==, VHCA_QPS_RESET);
    qp.sq_pi = qp.rq_pi = 0;
    qp_to_rts(&r, &qp);
    vhca_qp_write_send(r.d, &qp, SEND_ID(77), VHCA_WR_SEND, 0);
    vhca_qp_ring_sq(r.d, &qp, r.page);
    vhca_qp_write_recv(r.d, &qp, RECV_ID(77));
    vhca_qp_ring_rq(r.d, &qp, r.page);
    qp_set_state(&r, &qp, VHCA_QPS_ERR);
    vhca_qp_write_send(r.d, &qp2, SEND_ID(100), VHCA_WR_SEND, 0);
    vhca_qp_ring_sq(r.d, &qp2, r.page);
    vhca_qp_write_recv(r.d, &qp2, RECV_ID(100));
    vhca_qp_ring_rq(r.d, &qp2, r.page);
    qp_set_state(&r, &qp2, VHCA_QPS_ERR);

    expect_flush(&r, &r.scq, qp.qpn, SEND_ID(77));
    expect_flush(&r, &r.scq, qp2.qpn, SEND_ID(100));
    expect_flush(&r, &r.rcq, qp.qpn, RECV_ID(77));
    expect_flush(&r, &r.rcq, qp2.qpn, RECV_ID(100));
    vhca_test_stop(r.d);
}

/*
 * The owner bit flips on each pass over the CQ, and the device reads the
 * consumer's doorbell record before it calls a ring full.
 */
/*
 * Run with @data set, guest RAM is shared with the test, which then
 * reads CQEs and writes the doorbell record in it as a driver does
 * (vhca_test_start_shared_ram(), the device benchmark's way).
 */
static void test_cq_owner_wrap(const void *data)
{
    bool shared_ram = data != NULL;
    Rig r;
    VhcaCq small;
    VhcaQp qp1, qp2;
    struct vhca_cqe cqe;

    if (shared_ram) {
        rig_setup(&r, rdma_setup(vhca_test_start_shared_ram(true, NULL)));
    } else {
        rig_up(&r);
    }
    vhca_cq_make(r.d, &small, 1, r.eq.eqn, r.page);
    vhca_qp_make(r.d, &qp1, VHCA_QPT_RC, r.pdn, r.scq.cqn, small.cqn, 4, 4,
                 r.page);
    vhca_qp_make(r.d, &qp2, VHCA_QPT_RC, r.pdn, r.scq.cqn, small.cqn, 4, 4,
                 r.page);
    for (int round = 0; round < 2; round++) {
        VhcaQp *qp = round ? &qp2 : &qp1;

        qp_to_rts(&r, qp);
        vhca_qp_write_recv(r.d, qp, RECV_ID(2 * round));
        vhca_qp_write_recv(r.d, qp, RECV_ID(2 * round + 1));
        vhca_qp_ring_rq(r.d, qp, r.page);
        qp_set_state(&r, qp, VHCA_QPS_ERR);
        /* vhca_cq_peek checks the owner bit: 1 then 0. */
        expect_flush(&r, &small, qp->qpn, RECV_ID(2 * round));
        expect_flush(&r, &small, qp->qpn, RECV_ID(2 * round + 1));
        vhca_cq_update_dbrec(r.d, &small);
        /* QEMU sees the record where the test wrote it. */
        g_assert_cmpuint(qtest_readl(r.d->qts, small.dbrec), ==, small.ci);
    }
    g_assert_false(vhca_cq_peek(r.d, &small, &cqe));
    check_nop(r.d);
    g_assert_cmpuint(stashed_events_of_type(r.d, VHCA_EQE_CQ_ERROR), ==, 0);
    vhca_test_stop(r.d);
}

/*
 * A completion that does not fit puts the CQ in error: CQ_ERROR on the
 * AEQ, and every QP completing to that CQ goes to the error state
 * (IBTA 11.4.2.1, 10.10.2).
 */
static void test_cq_overflow(void)
{
    Rig r;
    VhcaCq small;
    VhcaQp qp1, qp2;
    struct vhca_eqe eqe;
    struct vhca_cqe cqe;
    bool found = false;

    rig_up(&r);
    vhca_cq_make(r.d, &small, 1, r.eq.eqn, r.page);
    /* qp1 receives into the small CQ; qp2 sends into it. */
    vhca_qp_make(r.d, &qp1, VHCA_QPT_RC, r.pdn, r.scq.cqn, small.cqn, 4, 4,
                 r.page);
    vhca_qp_make(r.d, &qp2, VHCA_QPT_RC, r.pdn, small.cqn, r.rcq.cqn, 4, 4,
                 r.page);
    qp_to_rts(&r, &qp1);
    qp_to_rts(&r, &qp2);
    for (int i = 0; i < 3; i++) {
        vhca_qp_write_recv(r.d, &qp1, RECV_ID(i));
    }
    vhca_qp_ring_rq(r.d, &qp1, r.page);
    qp_set_state(&r, &qp1, VHCA_QPS_ERR);

    /* The two that fit are there. */
    expect_flush(&r, &small, qp1.qpn, RECV_ID(0));
    expect_flush(&r, &small, qp1.qpn, RECV_ID(1));

    /* CQ_ERROR for the small CQ; QP events may come along with it. */
    for (int i = 0; i < 8 && !found; i++) {
        vhca_async_event_wait(r.d, &eqe);
        if (eqe.type == VHCA_EQE_CQ_ERROR) {
            g_assert_cmpuint(le32_to_cpu(eqe.data[0]), ==, small.cqn);
            found = true;
        } else {
            g_assert_cmpuint(eqe.type, ==, VHCA_EQE_QP_EVENT);
        }
    }
    g_assert_true(found);
    /* The third did not overwrite the first pass (slot 0 owner stays 1). */
    g_assert_false(vhca_cq_peek(r.d, &small, &cqe));
    /* qp2 completes to the failed CQ: it is in error now. */
    g_assert_cmpuint(qp_state_of(&r, &qp2), ==, VHCA_QPS_ERR);
    /* A QP that does not use it is not. */
    {
        VhcaQp bystander;

        vhca_qp_make(r.d, &bystander, VHCA_QPT_RC, r.pdn, r.scq.cqn,
                     r.rcq.cqn, 2, 2, r.page);
        qp_to_rts(&r, &bystander);
        g_assert_cmpuint(qp_state_of(&r, &bystander), ==, VHCA_QPS_RTS);
    }
    vhca_test_stop(r.d);
}

/* RESIZE_CQ of @cq to a fresh ring of 2^@log_size; @cq follows it. */
static uint8_t cq_resize(Rig *r, VhcaCq *cq, unsigned log_size,
                         uint32_t *moved)
{
    struct vhca_cmd_obj_out out;
    struct vhca_cq_resize c;
    VhcaPages ring;
    uint8_t status;

    vhca_pages_alloc(r->d, &ring, sizeof(struct vhca_cqe) << log_size);
    memset(&c, 0, sizeof(c));
    c.cqn = cpu_to_le32(cq->cqn);
    c.log_size = log_size;
    c.pbl_addr = cpu_to_le64(ring.pbl);
    c.npages = cpu_to_le32(ring.npages);
    status = vhca_cmd_mbox(r->d, VHCA_CMD_RESIZE_CQ, &c, sizeof(c), NULL,
                           &out);
    if (status == VHCA_ST_OK) {
        cq->ring = ring;
        cq->log_size = log_size;
        cq->ci = 0;
        *moved = le32_to_cpu(out.handle);
    }
    return status;
}

/*
 * RESIZE_CQ with completions pending (IBTA 11.2.8.3): they move in order
 * to the start of the new ring, the doorbell record reads 0, and the QP
 * goes on completing into the new ring, through its wrap.  Grow, refuse
 * a ring too small (nothing changes), shrink to exactly what it holds.
 */
static void test_cq_resize(void)
{
    Rig r;
    VhcaCq cq;
    VhcaQp qp;
    struct vhca_cqe cqe;
    uint32_t moved = 0, i;

    rig_up(&r);
    vhca_cq_make(r.d, &cq, 2, r.eq.eqn, r.page);
    vhca_qp_make(r.d, &qp, VHCA_QPT_RC, r.pdn, r.scq.cqn, cq.cqn, 4, 4,
                 r.page);
    qp_to_rts(&r, &qp);
    for (i = 0; i < 3; i++) {
        vhca_qp_write_recv(r.d, &qp, RECV_ID(i));
    }
    vhca_qp_ring_rq(r.d, &qp, r.page);
    qp_set_state(&r, &qp, VHCA_QPS_ERR);
    expect_flush(&r, &cq, qp.qpn, RECV_ID(0));
    vhca_cq_update_dbrec(r.d, &cq);

    /* Grow: the two not consumed move. */
    g_assert_cmpuint(cq_resize(&r, &cq, 4, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 2);
    g_assert_cmpuint(qtest_readl(r.d->qts, cq.dbrec), ==, 0);
    /* In ERR a receive is flushed as it is posted: into the new ring. */
    for (i = 3; i < 9; i++) {
        vhca_qp_write_recv(r.d, &qp, RECV_ID(i));
    }
    vhca_qp_ring_rq(r.d, &qp, r.page);

    /* Eight pending: four entries are too few, and nothing changes. */
    {
        VhcaCq before = cq;

        g_assert_cmpuint(cq_resize(&r, &cq, 2, &moved), ==,
                         VHCA_ST_BAD_PARAM);
        g_assert_cmpuint(r.d->last_syndrome, ==, 8);
        g_assert_cmphex(cq.ring.addr, ==, before.ring.addr);
    }
    /* Shrink to exactly eight. */
    g_assert_cmpuint(cq_resize(&r, &cq, 3, &moved), ==, VHCA_ST_OK);
    g_assert_cmpuint(moved, ==, 8);
    for (i = 1; i < 9; i++) {
        expect_flush(&r, &cq, qp.qpn, RECV_ID(i));
    }
    g_assert_false(vhca_cq_peek(r.d, &cq, &cqe));
    vhca_cq_update_dbrec(r.d, &cq);
    /* The next one wraps the new ring: second pass, owner 0. */
    vhca_qp_write_recv(r.d, &qp, RECV_ID(9));
    vhca_qp_ring_rq(r.d, &qp, r.page);
    expect_flush(&r, &cq, qp.qpn, RECV_ID(9));
    check_nop(r.d);
    g_assert_cmpuint(stashed_events_of_type(r.d, VHCA_EQE_CQ_ERROR), ==, 0);
    vhca_test_stop(r.d);
}

/* ======================================================================= */
/* Reset                                                                   */
/* ======================================================================= */

typedef struct Handles {
    uint32_t pdn, mr_key, eqn, cqn, qpn;
} Handles;

static void make_objects(VhcaTestDev *d, uint32_t page, Handles *h)
{
    struct vhca_mr_create mc;
    VhcaEq eq;
    VhcaCq cq;
    VhcaQp qp;
    uint32_t index;

    h->pdn = vhca_pd_make(d);
    vhca_mr_prepare_phys(&mc, h->pdn, VHCA_ACCESS_LOCAL_WRITE, 0x100000,
                         0x1000, 0x77);
    g_assert_cmpuint(vhca_cmd_create_mr(d, &mc, &index, &h->mr_key), ==,
                     VHCA_ST_OK);
    vhca_eq_make(d, &eq, 4, VHCA_VECTOR_FIRST_COMP);
    h->eqn = eq.eqn;
    vhca_cq_make(d, &cq, 4, eq.eqn, page);
    h->cqn = cq.cqn;
    vhca_qp_make(d, &qp, VHCA_QPT_RC, h->pdn, cq.cqn, cq.cqn, 2, 2, page);
    h->qpn = qp.qpn;
}

/*
 * CTRL.RESET returns the device to its power-on state: every object is
 * gone (old handles refused), the same creations give the same handles
 * as after power-on, and every table is empty again (all 62 EQs fit).
 */
static void test_reset_frees_objects(void)
{
    VhcaTestDev *d = start_rdma(NULL);
    Handles first, again;
    uint32_t page, page2;
    struct vhca_qp_attr a;
    uint8_t gid[16];
    VhcaEq eq;

    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page), ==, VHCA_ST_OK);
    make_objects(d, page, &first);

    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_forget_rings(d);
    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    vhca_gid_from_ipv4(gid, local_ip);
    g_assert_cmpuint(vhca_cmd_add_gid(d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      gid), ==, VHCA_ST_OK);

    assert_no_object(d, vhca_cmd_query_qp(d, first.qpn, &a), first.qpn);
    assert_no_object(d, vhca_cmd_destroy(d, VHCA_CMD_DESTROY_QP, first.qpn),
                     first.qpn);
    assert_no_object(d, vhca_cmd_destroy(d, VHCA_CMD_DESTROY_CQ, first.cqn),
                     first.cqn);
    assert_no_object(d, vhca_cmd_destroy(d, VHCA_CMD_DESTROY_EQ, first.eqn),
                     first.eqn);
    assert_no_object(d, vhca_cmd_destroy(d, VHCA_CMD_DESTROY_MR,
                                         first.mr_key), first.mr_key);
    assert_no_object(d, vhca_cmd_destroy(d, VHCA_CMD_DESTROY_PD, first.pdn),
                     first.pdn);

    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &page2), ==, VHCA_ST_OK);
    g_assert_cmpuint(page2, ==, page);
    make_objects(d, page2, &again);
    g_assert_cmpuint(again.pdn, ==, first.pdn);
    g_assert_cmphex(again.mr_key, ==, first.mr_key);
    g_assert_cmpuint(again.eqn, ==, first.eqn);
    g_assert_cmpuint(again.cqn, ==, first.cqn);
    g_assert_cmpuint(again.qpn, ==, first.qpn);

    /* Reset again and fill the EQ table: every EQ slot is free. */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_forget_rings(d);
    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    for (int i = 0; i < VHCA_MAX_COMP_EQS; i++) {
        vhca_eq_make(d, &eq, 1, VHCA_VECTOR_FIRST_COMP);
    }
    {
        struct vhca_eq_create c;

        vhca_eq_prepare(d, &eq, 1, VHCA_VECTOR_FIRST_COMP, &c);
        g_assert_cmpuint(vhca_cmd_create_eq(d, &c, NULL), ==,
                         VHCA_ST_NO_RESOURCES);
    }
    vhca_test_stop(d);
}

int main(int argc, char **argv)
{
    static const uint8_t from[] = {
        VHCA_QPS_RESET, VHCA_QPS_INIT, VHCA_QPS_RTR, VHCA_QPS_RTS,
        VHCA_QPS_SQD, VHCA_QPS_ERR,
    };

    vhca_test_init(&argc, &argv);

    vhca_add_test("/vhca/rdma/query-device-limits", test_query_device_limits);
    vhca_add_data_test("/vhca/rdma/max-srq/0", GUINT_TO_POINTER(0),
                       test_max_srq);
    vhca_add_data_test("/vhca/rdma/max-srq/3", GUINT_TO_POINTER(3),
                       test_max_srq);
    vhca_add_test("/vhca/rdma/pd/create-destroy", test_pd);
    for (int k = LIMIT_PD; k <= LIMIT_QP; k++) {
        g_autofree char *path = g_strdup_printf("/vhca/rdma/limit/%s",
                                                limit_name[k]);

        vhca_add_data_test(path, GINT_TO_POINTER(k), test_limit);
    }
    vhca_add_test("/vhca/rdma/mr/phys", test_mr_phys);
    vhca_add_test("/vhca/rdma/mr/page-lists", test_mr_pbl);
    vhca_add_test("/vhca/rdma/eq/create-destroy", test_eq);
    vhca_add_test("/vhca/rdma/cq/create-destroy", test_cq);
    vhca_add_test("/vhca/rdma/qp/create", test_qp_create);
    vhca_add_test("/vhca/rdma/qp/query-caps", test_qp_query_caps);

    for (int t = 0; t < T_N; t++) {
        for (int i = 0; i < ARRAY_SIZE(from); i++) {
            StateCase *sc = g_new(StateCase, 1);
            g_autofree char *path = NULL;

            sc->t = t;
            sc->cur = from[i];
            path = g_strdup_printf("/vhca/rdma/qp-state/%s/from-%s",
                                   type_name[t], qps_name[from[i]]);
            /* sc lives as long as the program. */
            vhca_add_data_test(path, sc, test_qp_state);
        }
    }
    vhca_add_test("/vhca/rdma/qp-state/value-limits", test_qp_value_limits);
    vhca_add_test("/vhca/rdma/qp-state/any-to-reset-err",
                  test_qp_any_to_reset_err);

    vhca_add_test("/vhca/rdma/flush/to-error", test_flush);
    vhca_add_test("/vhca/rdma/flush/foreign-doorbell", test_foreign_doorbell);
    vhca_add_test("/vhca/rdma/flush/post-in-error", test_post_in_error);
    vhca_add_test("/vhca/rdma/flush/reset-empties-rings",
                  test_reset_empties_rings);
    vhca_add_data_test("/vhca/rdma/cq/owner-wrap", NULL, test_cq_owner_wrap);
    vhca_add_data_test("/vhca/rdma/cq/owner-wrap-shared-ram", "",
                       test_cq_owner_wrap);
    vhca_add_test("/vhca/rdma/cq/overflow", test_cq_overflow);
    vhca_add_test("/vhca/rdma/cq/resize", test_cq_resize);
    vhca_add_test("/vhca/rdma/reset-frees-objects", test_reset_frees_objects);

    return g_test_run();
}
