/*
 * vhca engine unit tests: the QP state machine and the Modify QP
 * attribute table (IBTA 10.3.1, 11.2.4.2; Linux ib_modify_qp_is_ok), for
 * RC, UC and UD: every valid transition with its required attributes
 * succeeds, a missing required or a forbidden attribute fails and leaves
 * the state, invalid transitions fail; attribute values are stored.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"
#include "vhca-rdma.h"

#define R   VHCA_QPS_RESET
#define I   VHCA_QPS_INIT
#define RTR VHCA_QPS_RTR
#define RTS VHCA_QPS_RTS
#define SQD VHCA_QPS_SQD
#define SQE VHCA_QPS_SQE
#define E   VHCA_QPS_ERR

#define A(x)    VHCA_QP_##x
#define ALL_ATTRS   ((1u << 21) - 1)

/* One row of IBTA Table 91-93 for one transport, written row by row. */
typedef struct Row {
    uint8_t type, cur, next;
    uint32_t req, opt;
} Row;

/* Transitions that exist for every transport with no attributes. */
static const uint8_t to_reset_or_err[][2] = {
    { R, R }, { R, E }, { I, R }, { I, E }, { RTR, R }, { RTR, E },
    { RTS, R }, { RTS, E }, { SQD, R }, { SQD, E }, { SQE, R }, { SQE, E },
    { E, R }, { E, E },
};

static const Row rows[] = {
    { VHCA_QPT_RC, R, I, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), 0 },
    { VHCA_QPT_UC, R, I, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), 0 },
    { VHCA_QPT_UD, R, I, A(PKEY_INDEX) | A(PORT) | A(QKEY), 0 },

    { VHCA_QPT_RC, I, I, 0, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
    { VHCA_QPT_UC, I, I, 0, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
    { VHCA_QPT_UD, I, I, 0, A(PKEY_INDEX) | A(PORT) | A(QKEY) },

    { VHCA_QPT_RC, I, RTR, A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
      A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
      A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) },
    { VHCA_QPT_UC, I, RTR, A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
      A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) },
    { VHCA_QPT_UD, I, RTR, 0, A(PKEY_INDEX) | A(QKEY) },

    { VHCA_QPT_RC, RTR, RTS, A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
      A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
      A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |
      A(PATH_MIG_STATE) },
    { VHCA_QPT_UC, RTR, RTS, A(SQ_PSN),
      A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE) },
    { VHCA_QPT_UD, RTR, RTS, A(SQ_PSN), A(CUR_STATE) | A(QKEY) },

    { VHCA_QPT_RC, RTS, RTS, 0, A(CUR_STATE) | A(ACCESS_FLAGS) |
      A(ALT_PATH) | A(PATH_MIG_STATE) | A(MIN_RNR_TIMER) },
    { VHCA_QPT_UC, RTS, RTS, 0, A(CUR_STATE) | A(ACCESS_FLAGS) |
      A(ALT_PATH) | A(PATH_MIG_STATE) },
    { VHCA_QPT_UD, RTS, RTS, 0, A(CUR_STATE) | A(QKEY) },

    { VHCA_QPT_RC, RTS, SQD, 0, A(EN_SQD_ASYNC_NOTIFY) },
    { VHCA_QPT_UC, RTS, SQD, 0, A(EN_SQD_ASYNC_NOTIFY) },
    { VHCA_QPT_UD, RTS, SQD, 0, A(EN_SQD_ASYNC_NOTIFY) },

    { VHCA_QPT_RC, SQD, RTS, 0, A(CUR_STATE) | A(ALT_PATH) |
      A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) | A(PATH_MIG_STATE) },
    { VHCA_QPT_UC, SQD, RTS, 0, A(CUR_STATE) | A(ALT_PATH) |
      A(ACCESS_FLAGS) | A(PATH_MIG_STATE) },
    { VHCA_QPT_UD, SQD, RTS, 0, A(CUR_STATE) | A(QKEY) },

    { VHCA_QPT_RC, SQD, SQD, 0, A(PORT) | A(AV) | A(TIMEOUT) |
      A(RETRY_CNT) | A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
      A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) | A(ACCESS_FLAGS) |
      A(PKEY_INDEX) | A(MIN_RNR_TIMER) | A(PATH_MIG_STATE) },
    { VHCA_QPT_UC, SQD, SQD, 0, A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) |
      A(PKEY_INDEX) | A(PATH_MIG_STATE) },
    { VHCA_QPT_UD, SQD, SQD, 0, A(PKEY_INDEX) | A(QKEY) },

    /* SQE -> RTS: RC never is in SQE, so it has no optional attributes. */
    { VHCA_QPT_RC, SQE, RTS, 0, 0 },
    { VHCA_QPT_UC, SQE, RTS, 0, A(CUR_STATE) | A(ACCESS_FLAGS) },
    { VHCA_QPT_UD, SQE, RTS, 0, A(CUR_STATE) | A(QKEY) },
    /*
     * GSI (QP1): UD's rows without PORT (Linux's IB_QPT_GSI column):
     * RESET -> INIT needs PKEY_INDEX and QKEY only.
     */
    { VHCA_QPT_GSI, R, I, A(PKEY_INDEX) | A(QKEY), 0 },
    { VHCA_QPT_GSI, I, I, 0, A(PKEY_INDEX) | A(QKEY) },
    { VHCA_QPT_GSI, I, RTR, 0, A(PKEY_INDEX) | A(QKEY) },
    { VHCA_QPT_GSI, RTR, RTS, A(SQ_PSN), A(CUR_STATE) | A(QKEY) },
    { VHCA_QPT_GSI, RTS, RTS, 0, A(CUR_STATE) | A(QKEY) },
    { VHCA_QPT_GSI, RTS, SQD, 0, A(EN_SQD_ASYNC_NOTIFY) },
    { VHCA_QPT_GSI, SQD, RTS, 0, A(CUR_STATE) | A(QKEY) },
    { VHCA_QPT_GSI, SQD, SQD, 0, A(PKEY_INDEX) | A(QKEY) },
    { VHCA_QPT_GSI, SQE, RTS, 0, A(CUR_STATE) | A(QKEY) },
    /*
     * XRC (annex A14; Linux's IB_QPT_XRC_INI and IB_QPT_XRC_TGT columns):
     * the initiator has no responder attributes, the target no retries.
     */
#define XI  VHCA_QPT_XRC_INI
#define XT  VHCA_QPT_XRC_TGT
    { XI, R, I, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), 0 },
    { XT, R, I, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), 0 },
    { XI, I, I, 0, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
    { XT, I, I, 0, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
    { XI, I, RTR, A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
      A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) },
    { XT, I, RTR, A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
      A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
      A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) },
    { XI, RTR, RTS, A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
      A(MAX_QP_RD_ATOMIC),
      A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE) },
    { XT, RTR, RTS, A(TIMEOUT) | A(SQ_PSN),
      A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |
      A(PATH_MIG_STATE) },
    { XI, RTS, RTS, 0, A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
      A(PATH_MIG_STATE) },
    { XT, RTS, RTS, 0, A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
      A(PATH_MIG_STATE) | A(MIN_RNR_TIMER) },
    { XI, RTS, SQD, 0, A(EN_SQD_ASYNC_NOTIFY) },
    { XT, RTS, SQD, 0, A(EN_SQD_ASYNC_NOTIFY) },
    { XI, SQD, RTS, 0, A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
      A(PATH_MIG_STATE) },
    { XT, SQD, RTS, 0, A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
      A(MIN_RNR_TIMER) | A(PATH_MIG_STATE) },
    { XI, SQD, SQD, 0, A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
      A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) | A(ALT_PATH) | A(ACCESS_FLAGS) |
      A(PKEY_INDEX) | A(PATH_MIG_STATE) },
    { XT, SQD, SQD, 0, A(PORT) | A(AV) | A(TIMEOUT) |
      A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) | A(ACCESS_FLAGS) |
      A(PKEY_INDEX) | A(MIN_RNR_TIMER) | A(PATH_MIG_STATE) },
    /* Never in SQE, as RC. */
    { XI, SQE, RTS, 0, 0 },
    { XT, SQE, RTS, 0, 0 },
#undef XI
#undef XT
};

/* Types test_full_table() creates QPs of (XRC QPs need more objects). */
static const uint8_t types[] = {
    VHCA_QPT_RC, VHCA_QPT_UC, VHCA_QPT_UD, VHCA_QPT_GSI,
};

/* Types whose table test_table_function() compares, XRC's too. */
static const uint8_t table_types[] = {
    VHCA_QPT_RC, VHCA_QPT_UC, VHCA_QPT_UD, VHCA_QPT_GSI,
    VHCA_QPT_XRC_INI, VHCA_QPT_XRC_TGT,
};

static bool lookup(uint8_t type, uint8_t cur, uint8_t next, Row *out)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(to_reset_or_err); i++) {
        if (to_reset_or_err[i][0] == cur && to_reset_or_err[i][1] == next) {
            *out = (Row){ type, cur, next, 0, 0 };
            return true;
        }
    }
    for (i = 0; i < G_N_ELEMENTS(rows); i++) {
        if (rows[i].type == type && rows[i].cur == cur &&
            rows[i].next == next) {
            *out = rows[i];
            return true;
        }
    }
    return false;
}

typedef struct Fixture {
    Harness *h;
    uint32_t pdn, cqn, page;
} Fixture;

static void fixture_init(Fixture *f)
{
    uint8_t gid[16];
    TestCq cq;

    f->h = harness_new(NULL);
    harness_enable(f->h);
    gid_from_ipv4(gid, 10, 0, 0, 1);
    g_assert_cmpuint(add_gid(f->h, 0, VHCA_GID_TYPE_ROCE_V2_IPV4, gid), ==,
                     VHCA_ST_OK);
    f->page = rdma_alloc_uctx(f->h);
    f->pdn = rdma_create_pd(f->h);
    g_assert_cmpuint(rdma_create_cq(f->h, &cq, 6,
                                    rdma_create_eq(f->h, 6, 2, NULL),
                                    f->page), ==, VHCA_ST_OK);
    f->cqn = cq.cqn;
}

/* Put the QP in @state; SQE is entered by the device only, so poke it. */
static void set_state(Fixture *f, uint32_t qpn, uint8_t type, uint8_t state)
{
    qp_move_to(f->h, qpn, type, VHCA_QPS_RESET);
    if (state == SQE) {
        qp_move_to(f->h, qpn, type, RTS);
        f->h->core.qps[qpn].state = SQE;
    } else {
        qp_move_to(f->h, qpn, type, state);
    }
    g_assert_cmpuint(qp_state(f->h, qpn), ==, state);
}

static uint8_t try_modify(Fixture *f, uint32_t qpn, uint8_t cur,
                          uint8_t next, uint32_t mask)
{
    struct vhca_qp_attr attr;

    qp_good_attr(&attr, qpn);
    attr.attr_mask = mask;
    attr.qp_state = next;
    attr.cur_qp_state = cur;
    return rdma_modify_qp(f->h, &attr);
}

static void check_transition(Fixture *f, uint32_t qpn, uint8_t type,
                             uint8_t cur, uint8_t next)
{
    Row row;
    uint32_t bit;

    set_state(f, qpn, type, cur);
    if (!lookup(type, cur, next, &row)) {
        g_assert_cmpuint(try_modify(f, qpn, cur, next,
                                    A(STATE) |
                                    qp_required_mask(type, cur, next)),
                         ==, VHCA_ST_BAD_STATE);
        g_assert_cmpuint(qp_state(f->h, qpn), ==, cur);
        return;
    }

    /* Each required attribute missing: refused, state unchanged. */
    for (bit = 1; bit <= ALL_ATTRS; bit <<= 1) {
        if (row.req & bit) {
            g_assert_cmpuint(try_modify(f, qpn, cur, next,
                                        A(STATE) | (row.req & ~bit)),
                             ==, VHCA_ST_BAD_PARAM);
            g_assert_cmpuint(qp_state(f->h, qpn), ==, cur);
        }
    }
    /* Each attribute neither required nor optional: refused. */
    for (bit = 2; bit <= ALL_ATTRS; bit <<= 1) {
        if (!((row.req | row.opt) & bit)) {
            g_assert_cmpuint(try_modify(f, qpn, cur, next,
                                        A(STATE) | row.req | bit),
                             ==, VHCA_ST_BAD_PARAM);
            g_assert_cmpuint(qp_state(f->h, qpn), ==, cur);
        }
    }
    /* Each optional one is accepted (no alternate paths: refused). */
    for (bit = 2; bit <= ALL_ATTRS; bit <<= 1) {
        if (!(row.opt & bit)) {
            continue;
        }
        if (bit == A(ALT_PATH)) {
            g_assert_cmpuint(try_modify(f, qpn, cur, next,
                                        A(STATE) | row.req | bit),
                             ==, VHCA_ST_BAD_PARAM);
            g_assert_cmpuint(qp_state(f->h, qpn), ==, cur);
            continue;
        }
        g_assert_cmpuint(try_modify(f, qpn, cur, next,
                                    A(STATE) | row.req | bit),
                         ==, VHCA_ST_OK);
        g_assert_cmpuint(qp_state(f->h, qpn), ==, next);
        set_state(f, qpn, type, cur);
    }
    /* All of them together, and without the STATE bit when cur == next. */
    g_assert_cmpuint(try_modify(f, qpn, cur, next,
                                A(STATE) | row.req |
                                (row.opt & ~A(ALT_PATH))), ==, VHCA_ST_OK);
    g_assert_cmpuint(qp_state(f->h, qpn), ==, next);
    if (cur == next) {
        g_assert_cmpuint(try_modify(f, qpn, cur, 0xee, row.req), ==,
                         VHCA_ST_OK);
        g_assert_cmpuint(qp_state(f->h, qpn), ==, cur);
    }
}

static void test_full_table(void)
{
    Fixture f;
    unsigned t;

    fixture_init(&f);
    for (t = 0; t < G_N_ELEMENTS(types); t++) {
        TestQp qp;
        uint8_t cur, next;

        g_assert_cmpuint(rdma_create_qp(f.h, &qp, types[t], f.pdn, f.cqn,
                                        f.cqn, f.page), ==, VHCA_ST_OK);
        for (cur = R; cur <= E; cur++) {
            for (next = R; next <= E; next++) {
                g_test_message("type %u: %s -> %s", types[t],
                               vhca_qp_state_name(cur),
                               vhca_qp_state_name(next));
                check_transition(&f, qp.qpn, types[t], cur, next);
            }
        }
    }
    harness_free(f.h);
}

/* The engine's own table agrees with the test's, cell by cell. */
static void test_table_function(void)
{
    unsigned t;
    uint8_t cur, next;
    uint32_t bad;

    for (t = 0; t < G_N_ELEMENTS(table_types); t++) {
        for (cur = R; cur <= E; cur++) {
            for (next = R; next <= E; next++) {
                uint8_t type = table_types[t];
                Row row;
                bool valid = lookup(type, cur, next, &row);
                uint32_t mask = A(STATE) | (valid ? row.req | row.opt : 0);

                g_assert_cmpuint(vhca_qp_modify_is_ok(type, cur, next, mask,
                                                      &bad),
                                 ==, valid ? VHCA_QP_MODIFY_OK
                                           : VHCA_QP_MODIFY_BAD_TRANSITION);
                if (!valid) {
                    continue;
                }
                /* Each required bit is required, each other one refused. */
                for (uint32_t b = A(CUR_STATE); b & ALL_ATTRS; b <<= 1) {
                    if (row.opt & b) {
                        continue;
                    }
                    g_assert_cmpuint(vhca_qp_modify_is_ok(type, cur, next,
                                                          mask ^ b, &bad),
                                     ==, (row.req & b) ?
                                     VHCA_QP_MODIFY_MISSING_ATTR :
                                     VHCA_QP_MODIFY_EXTRA_ATTR);
                }
            }
        }
    }
    /* Unknown type or state (type 7 is no QP type). */
    g_assert_cmpuint(vhca_qp_modify_is_ok(7, R, I, 0, &bad), ==,
                     VHCA_QP_MODIFY_BAD_TRANSITION);
    /* The SMI QP (QP0, IB port) follows the GSI QP's table, as in Linux. */
    g_assert_cmpuint(vhca_qp_modify_is_ok(VHCA_QPT_SMI, R, I,
                                          VHCA_QP_STATE | VHCA_QP_PKEY_INDEX |
                                          VHCA_QP_QKEY, &bad), ==,
                     VHCA_QP_MODIFY_OK);
    g_assert_cmpuint(vhca_qp_modify_is_ok(VHCA_QPT_SMI, R, I,
                                          VHCA_QP_STATE | VHCA_QP_PKEY_INDEX |
                                          VHCA_QP_QKEY | VHCA_QP_AV, &bad),
                     ==, VHCA_QP_MODIFY_EXTRA_ATTR);
    g_assert_cmpuint(vhca_qp_modify_is_ok(VHCA_QPT_RC, 7, R, 0, &bad), ==,
                     VHCA_QP_MODIFY_BAD_TRANSITION);
    g_assert_cmpuint(vhca_qp_modify_is_ok(VHCA_QPT_RC, R, 200, 0, &bad), ==,
                     VHCA_QP_MODIFY_BAD_TRANSITION);
    /* The syndrome names the missing attributes. */
    g_assert_cmpuint(vhca_qp_modify_is_ok(VHCA_QPT_RC, R, I,
                                          A(STATE) | A(PORT), &bad), ==,
                     VHCA_QP_MODIFY_MISSING_ATTR);
    g_assert_cmphex(bad, ==, A(PKEY_INDEX) | A(ACCESS_FLAGS));
}

/*
 * The bring-up's values are stored, SQD -> SQD changes one, RESET forgets
 * them all.  (Values out of range are rows of the shared table,
 * tests/common/vhca-admin-cases.c.)
 */
static void test_attr_values(void)
{
    Fixture f;
    TestQp qp;
    struct vhca_qp_attr attr, got;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_qp(f.h, &qp, VHCA_QPT_RC, f.pdn, f.cqn,
                                    f.cqn, f.page), ==, VHCA_ST_OK);
    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, SQD);

    /* QUERY returns what the bring-up set. */
    g_assert_cmpuint(rdma_query_qp(f.h, qp.qpn, &got), ==, VHCA_ST_OK);
    g_assert_cmpuint(got.qp_state, ==, SQD);
    g_assert_cmpuint(got.cur_qp_state, ==, SQD);
    g_assert_cmpuint(got.path_mtu, ==, VHCA_IB_MTU_1024);
    g_assert_cmpuint(got.timeout, ==, 14);
    g_assert_cmpuint(got.dest_qp_num, ==, 0x123);
    g_assert_cmpuint(got.rq_psn, ==, 0x1000);
    g_assert_cmpuint(got.sq_psn, ==, 0x2000);
    g_assert_cmpuint(got.port, ==, 1);
    g_assert_cmpuint(got.qp_access_flags, ==,
                     VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ);
    g_assert_cmpuint(got.hop_limit, ==, 64);
    g_assert_cmpuint(got.dgid[15], ==, 2);
    /* QKEY is not an RC attribute: never set. */
    g_assert_cmpuint(got.qkey, ==, 0);

    /* SQD -> SQD changes the path; RESET forgets everything. */
    qp_good_attr(&attr, qp.qpn);
    attr.attr_mask = A(TIMEOUT);
    attr.timeout = 20;
    g_assert_cmpuint(rdma_modify_qp(f.h, &attr), ==, VHCA_ST_OK);
    g_assert_cmpuint(rdma_query_qp(f.h, qp.qpn, &got), ==, VHCA_ST_OK);
    g_assert_cmpuint(got.timeout, ==, 20);
    qp_move_to(f.h, qp.qpn, VHCA_QPT_RC, R);
    g_assert_cmpuint(rdma_query_qp(f.h, qp.qpn, &got), ==, VHCA_ST_OK);
    g_assert_cmpuint(got.timeout, ==, 0);
    g_assert_cmpuint(got.dest_qp_num, ==, 0);
    harness_free(f.h);
}

/* RTS -> SQD with EN_SQD_ASYNC_NOTIFY: SQ_DRAINED at once (nothing runs). */
static void test_sqd_drained_event(void)
{
    Fixture f;
    TestQp qp;
    struct vhca_qp_attr attr;
    uint32_t pi;
    struct vhca_eqe eqe;

    fixture_init(&f);
    g_assert_cmpuint(rdma_create_qp(f.h, &qp, VHCA_QPT_UC, f.pdn, f.cqn,
                                    f.cqn, f.page), ==, VHCA_ST_OK);
    qp_move_to(f.h, qp.qpn, VHCA_QPT_UC, RTS);
    qp_good_attr(&attr, qp.qpn);
    attr.attr_mask = A(STATE) | A(EN_SQD_ASYNC_NOTIFY);
    attr.qp_state = SQD;
    attr.en_sqd_async_notify = 1;
    /* Consume the async EQ so the events fit. */
    pi = reg_read(f.h, VHCA_REG_AEQ_PI);
    reg_write(f.h, VHCA_REG_AEQ_DB, pi);
    g_assert_cmpuint(rdma_modify_qp(f.h, &attr), ==, VHCA_ST_OK);
    /* The event comes before the command's CMD_DONE. */
    eqe = aeq_entry(f.h, pi);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_QP_EVENT);
    g_assert_cmpuint(eqe.subtype, ==, VHCA_EVENT_SQ_DRAINED);
    g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, qp.qpn);
    g_assert_cmpuint(aeq_entry(f.h, pi + 1).type, ==, VHCA_EQE_CMD_DONE);

    /* Without the flag: no event. */
    qp_move_to(f.h, qp.qpn, VHCA_QPT_UC, R);
    qp_move_to(f.h, qp.qpn, VHCA_QPT_UC, RTS);
    pi = reg_read(f.h, VHCA_REG_AEQ_PI);
    reg_write(f.h, VHCA_REG_AEQ_DB, pi);
    g_assert_cmpuint(try_modify(&f, qp.qpn, RTS, SQD, A(STATE)), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(aeq_entry(f.h, pi).type, ==, VHCA_EQE_CMD_DONE);
    harness_free(f.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/qp-state/table-function", test_table_function);
    g_test_add_func("/vhca/qp-state/full-table", test_full_table);
    g_test_add_func("/vhca/qp-state/attr-values", test_attr_values);
    g_test_add_func("/vhca/qp-state/sqd-drained-event",
                    test_sqd_drained_event);
    return g_test_run();
}
