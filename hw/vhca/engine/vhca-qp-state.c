/*
 * vhca engine: the QP state machine's Modify QP table - which transitions
 * exist and which attributes each requires and allows, per transport
 * (IBTA Vol 1, 10.3.1 Figure 123 and 11.2.4.2 Table 91-93).  The table is
 * the one Linux encodes in drivers/infiniband/core/verbs.c
 * (qp_state_table, ib_modify_qp_is_ok), for RC, UC, UD and the GSI QP
 * (QP1: a UD QP without the PORT attribute, whose RESET -> INIT needs no
 * port) and the two halves of XRC (annex A14: the initiator is RC without
 * the responder's attributes, the target RC without the requester's
 * retries), so the device accepts exactly what the RDMA core lets
 * through.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vhca-rdma.h"

enum { QPT_RC, QPT_UC, QPT_UD, QPT_GSI, QPT_XRC_INI, QPT_XRC_TGT, QPT__MAX };

typedef struct VhcaQpTransition {
    bool valid;
    uint32_t req[QPT__MAX];
    uint32_t opt[QPT__MAX];
} VhcaQpTransition;

#define S(x)    VHCA_QPS_##x
#define A(x)    VHCA_QP_##x

static const VhcaQpTransition qp_transitions[S(ERR) + 1][S(ERR) + 1] = {
    [S(RESET)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
        [S(INIT)] = {
            .valid = true,
            .req = {
                [QPT_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [QPT_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [QPT_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [QPT_GSI] = A(PKEY_INDEX) | A(QKEY),
                [QPT_XRC_INI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [QPT_XRC_TGT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
            },
        },
    },
    [S(INIT)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
        [S(INIT)] = {
            .valid = true,
            .opt = {
                [QPT_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [QPT_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [QPT_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [QPT_GSI] = A(PKEY_INDEX) | A(QKEY),
                [QPT_XRC_INI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [QPT_XRC_TGT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
            },
        },
        [S(RTR)] = {
            .valid = true,
            .req = {
                [QPT_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
                [QPT_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                           A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
                [QPT_XRC_INI] = A(AV) | A(PATH_MTU) | A(DEST_QPN) |
                                A(RQ_PSN),
                [QPT_XRC_TGT] = A(AV) | A(PATH_MTU) | A(DEST_QPN) |
                                A(RQ_PSN) | A(MAX_DEST_RD_ATOMIC) |
                                A(MIN_RNR_TIMER),
            },
            .opt = {
                [QPT_UD] = A(PKEY_INDEX) | A(QKEY),
                [QPT_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [QPT_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [QPT_GSI] = A(PKEY_INDEX) | A(QKEY),
                [QPT_XRC_INI] = A(ALT_PATH) | A(ACCESS_FLAGS) |
                                A(PKEY_INDEX),
                [QPT_XRC_TGT] = A(ALT_PATH) | A(ACCESS_FLAGS) |
                                A(PKEY_INDEX),
            },
        },
    },
    [S(RTR)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
        [S(RTS)] = {
            .valid = true,
            .req = {
                [QPT_UD] = A(SQ_PSN),
                [QPT_UC] = A(SQ_PSN),
                [QPT_GSI] = A(SQ_PSN),
                [QPT_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                           A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
                [QPT_XRC_INI] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                                A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
                [QPT_XRC_TGT] = A(TIMEOUT) | A(SQ_PSN),
            },
            .opt = {
                [QPT_UD] = A(CUR_STATE) | A(QKEY),
                [QPT_GSI] = A(CUR_STATE) | A(QKEY),
                [QPT_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                           A(PATH_MIG_STATE),
                [QPT_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                           A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
                [QPT_XRC_INI] = A(CUR_STATE) | A(ALT_PATH) |
                                A(ACCESS_FLAGS) | A(PATH_MIG_STATE),
                [QPT_XRC_TGT] = A(CUR_STATE) | A(ALT_PATH) |
                                A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |
                                A(PATH_MIG_STATE),
            },
        },
    },
    [S(RTS)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
        [S(RTS)] = {
            .valid = true,
            .opt = {
                [QPT_UD] = A(CUR_STATE) | A(QKEY),
                [QPT_GSI] = A(CUR_STATE) | A(QKEY),
                [QPT_UC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
                           A(PATH_MIG_STATE),
                [QPT_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
                           A(PATH_MIG_STATE) | A(MIN_RNR_TIMER),
                [QPT_XRC_INI] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                                A(ALT_PATH) | A(PATH_MIG_STATE),
                [QPT_XRC_TGT] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                                A(ALT_PATH) | A(PATH_MIG_STATE) |
                                A(MIN_RNR_TIMER),
            },
        },
        [S(SQD)] = {
            .valid = true,
            .opt = {
                [QPT_UD] = A(EN_SQD_ASYNC_NOTIFY),
                [QPT_UC] = A(EN_SQD_ASYNC_NOTIFY),
                [QPT_RC] = A(EN_SQD_ASYNC_NOTIFY),
                [QPT_GSI] = A(EN_SQD_ASYNC_NOTIFY),
                [QPT_XRC_INI] = A(EN_SQD_ASYNC_NOTIFY),
                [QPT_XRC_TGT] = A(EN_SQD_ASYNC_NOTIFY),
            },
        },
    },
    [S(SQD)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
        [S(RTS)] = {
            .valid = true,
            .opt = {
                [QPT_UD] = A(CUR_STATE) | A(QKEY),
                [QPT_GSI] = A(CUR_STATE) | A(QKEY),
                [QPT_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                           A(PATH_MIG_STATE),
                [QPT_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                           A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
                [QPT_XRC_INI] = A(CUR_STATE) | A(ALT_PATH) |
                                A(ACCESS_FLAGS) | A(PATH_MIG_STATE),
                [QPT_XRC_TGT] = A(CUR_STATE) | A(ALT_PATH) |
                                A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |
                                A(PATH_MIG_STATE),
            },
        },
        [S(SQD)] = {
            .valid = true,
            .opt = {
                [QPT_UD] = A(PKEY_INDEX) | A(QKEY),
                [QPT_GSI] = A(PKEY_INDEX) | A(QKEY),
                [QPT_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                           A(PKEY_INDEX) | A(PATH_MIG_STATE),
                [QPT_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
                           A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
                           A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
                           A(ACCESS_FLAGS) | A(PKEY_INDEX) |
                           A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
                [QPT_XRC_INI] = A(PORT) | A(AV) | A(TIMEOUT) |
                                A(RETRY_CNT) | A(RNR_RETRY) |
                                A(MAX_QP_RD_ATOMIC) | A(ALT_PATH) |
                                A(ACCESS_FLAGS) | A(PKEY_INDEX) |
                                A(PATH_MIG_STATE),
                [QPT_XRC_TGT] = A(PORT) | A(AV) | A(TIMEOUT) |
                                A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
                                A(ACCESS_FLAGS) | A(PKEY_INDEX) |
                                A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
            },
        },
    },
    [S(SQE)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
        [S(RTS)] = {
            .valid = true,
            .opt = {
                [QPT_UD] = A(CUR_STATE) | A(QKEY),
                [QPT_GSI] = A(CUR_STATE) | A(QKEY),
                [QPT_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
    },
    [S(ERR)] = {
        [S(RESET)] = { .valid = true },
        [S(ERR)] = { .valid = true },
    },
};

#undef S
#undef A

static int vhca_qpt_index(uint8_t type)
{
    switch (type) {
    case VHCA_QPT_RC:
        return QPT_RC;
    case VHCA_QPT_UC:
        return QPT_UC;
    case VHCA_QPT_UD:
        return QPT_UD;
    case VHCA_QPT_SMI:              /* the same table as GSI in Linux */
    case VHCA_QPT_GSI:
        return QPT_GSI;
    case VHCA_QPT_XRC_INI:
        return QPT_XRC_INI;
    case VHCA_QPT_XRC_TGT:
        return QPT_XRC_TGT;
    }
    return -1;
}

VhcaQpModifyCheck vhca_qp_modify_is_ok(uint8_t type, uint8_t cur,
                                       uint8_t next, uint32_t mask,
                                       uint32_t *bad)
{
    int qpt = vhca_qpt_index(type);
    const VhcaQpTransition *t;
    uint32_t req, opt;

    *bad = (uint32_t)cur << 8 | next;
    if (qpt < 0 || cur > VHCA_QPS_ERR || next > VHCA_QPS_ERR) {
        return VHCA_QP_MODIFY_BAD_TRANSITION;
    }
    /* CUR_STATE only names a state a QP can leave on its own. */
    if ((mask & VHCA_QP_CUR_STATE) && cur != VHCA_QPS_RTR &&
        cur != VHCA_QPS_RTS && cur != VHCA_QPS_SQD && cur != VHCA_QPS_SQE) {
        *bad = VHCA_QP_CUR_STATE;
        return VHCA_QP_MODIFY_EXTRA_ATTR;
    }
    t = &qp_transitions[cur][next];
    if (!t->valid) {
        return VHCA_QP_MODIFY_BAD_TRANSITION;
    }
    req = t->req[qpt];
    opt = t->opt[qpt];
    if ((mask & req) != req) {
        *bad = req & ~mask;
        return VHCA_QP_MODIFY_MISSING_ATTR;
    }
    if (mask & ~(req | opt | VHCA_QP_STATE)) {
        *bad = mask & ~(req | opt | VHCA_QP_STATE);
        return VHCA_QP_MODIFY_EXTRA_ATTR;
    }
    *bad = 0;
    return VHCA_QP_MODIFY_OK;
}

const char *vhca_qp_state_name(uint8_t state)
{
    static const char *const names[] = {
        [VHCA_QPS_RESET] = "RESET",
        [VHCA_QPS_INIT] = "INIT",
        [VHCA_QPS_RTR] = "RTR",
        [VHCA_QPS_RTS] = "RTS",
        [VHCA_QPS_SQD] = "SQD",
        [VHCA_QPS_SQE] = "SQE",
        [VHCA_QPS_ERR] = "ERR",
    };

    return state <= VHCA_QPS_ERR ? names[state] : "?";
}
