/*
 * Admin commands the device must refuse (docs/specs/vhca.rst "Commands",
 * "RDMA resources"): one table, run through vhca-dut.h by both tiers.
 *
 * Each row names a command, the objects that exist before it, the
 * fields of a good input it breaks and the status the device must
 * return.  The runner starts a device per row (a fresh one, or in
 * the qtest tier one reset from an earlier row), builds the objects,
 * executes the good input with the row's edits and checks, beyond the
 * status:
 *
 *   - the syndrome, where the row gives it (the offending value);
 *   - ADMIN_COMMANDS and ADMIN_ERRORS each went up by one, and (where
 *     the tier sees them) one guest error was logged, none for
 *     NO_RESOURCES, which is not the guest's fault;
 *   - the command changed nothing: a CREATE_* created nothing (the
 *     good command gets the same handle before and after), QUERY_PORT
 *     and QUERY_QP read the same, the mailbox is unwritten;
 *   - the device still works: NOP succeeds, no ADMQ_ERROR, and the
 *     tier's own check (vhca_dut_check_intact()).
 *
 * To add a case, add a row: it runs in the unit tier
 * (test-vhca-admin-cases) and in the qtest tier (vhca-admin-cases-test).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>
#include <glib.h>

#include "vhca-dut.h"
#include "vhca-admin-cases.h"

/* ---------------------------------------------------------------------- */
/* The table's vocabulary                                                 */
/* ---------------------------------------------------------------------- */

/* Every row runs on this device unless it names another configuration. */
static const VhcaDutConfig case_cfg = {
    .gid_tbl_len = 16, .db_pages = 4, .vectors = 8,
    .max_qp = 8, .max_cq = 8, .max_mr = 8, .max_pd = 4, .max_srq = 4,
};
static const VhcaDutConfig one_gid_cfg = {
    .gid_tbl_len = 1, .db_pages = 4, .vectors = 8,
    .max_qp = 8, .max_cq = 8, .max_mr = 8, .max_pd = 4, .max_srq = 4,
};
static const VhcaDutConfig many_pages_cfg = {
    .gid_tbl_len = 16, .db_pages = 1024, .vectors = 8,
    .max_qp = 8, .max_cq = 8, .max_mr = 8, .max_pd = 4, .max_srq = 4,
};
/* Room for a full multicast group (VHCA_MAX_MCAST_QPS) and a QP more. */
static const VhcaDutConfig many_qps_cfg = {
    .gid_tbl_len = 16, .db_pages = 4, .vectors = 8,
    .max_qp = 24, .max_cq = 8, .max_mr = 8, .max_pd = 4, .max_srq = 4,
};
/* max-srq=0: the device has no SRQs. */
static const VhcaDutConfig no_srq_cfg = {
    .gid_tbl_len = 16, .db_pages = 4, .vectors = 8,
    .max_qp = 8, .max_cq = 8, .max_mr = 8, .max_pd = 4, .max_srq = 0,
};

/* A value written into a field, resolved when the case runs. */
typedef enum CaseRef {
    V_NONE,             /* unused edit; unchecked syndrome */
    V_LIT,              /* k */
    V_PAGE,             /* the user context's doorbell page */
    V_DEAD_PAGE,        /* a doorbell page allocated and freed */
    V_PDN, V_DEAD_PDN,  /* "DEAD": created, then destroyed */
    V_EQN, V_DEAD_EQN,
    V_SCQN, V_RCQN, V_DEAD_CQN,
    V_QPN, V_DEAD_QPN,
    V_UD_QPN,           /* the UD QP (W_UD) */
    V_SRQN, V_DEAD_SRQN, /* the SRQ (W_SRQ); one destroyed */
    V_SRQ_CI,           /* the good CREATE_SRQ's consumer record (+ k) */
    V_XRCDN, V_DEAD_XRCDN, /* the XRC domain (W_XRCD); one freed */
    V_XRC_SRQN,         /* the XRC SRQ (W_XRC_SRQ) */
    V_MAX_SRQ,          /* QUERY_DEVICE's max_srq (+ k) */
    V_KEY,              /* the MR's key (W_MR) */
    V_MRN,              /* the MR's index, key >> 8 (W_MR) */
    V_MAX_MR,           /* QUERY_DEVICE's max_mr (+ k) */
    /* A destroyed MR's key; with W_MR, its index is the live MR's. */
    V_DEAD_KEY,
    V_MW_KEY,           /* the memory window's key (W_MW) */
    V_DB_PAGES,         /* QUERY_DEVICE's max_uctx (+ k) */
    V_GID_TBL_LEN,      /* gid_tbl_len (+ k) */
    V_VECTORS,          /* completion vectors + 2, i.e. all of them (+ k) */
    V_RD_ATOM,          /* max_qp_rd_atom (+ k) */
    V_INIT_RD_ATOM,     /* max_qp_init_rd_atom (+ k) */
    V_MR_PAGES,         /* the good MR's first page (+ k) */
    V_ZERO_PAGE,        /* a page of zeroes in RAM (+ k) */
    V_HOLE,             /* vhca_dut_hole() of kind k: not RAM, 4 KiB aligned */
    V_NOT_RAM,          /* the case's kind of non-RAM address for k bytes */
    V_EDIT,             /* (syndrome only) the value of edit k */
} CaseRef;

typedef struct CaseValue {
    CaseRef ref;
    int64_t k;
} CaseValue;

/* Where an edit goes. */
typedef enum CaseTarget {
    T_NONE,
    T_IN,               /* the entry's inline input */
    T_MBOX,             /* the mailbox (or the QUERY_DEVICE buffer) */
    T_MR_PBL,           /* the good MR's page list in guest RAM */
    T_RESIZE_PBL,       /* the good RESIZE_CQ's page list in guest RAM */
    T_DBREC,            /* the CQs' doorbell record (both CQs share it) */
} CaseTarget;

typedef struct CaseEdit {
    uint8_t target;     /* CaseTarget */
    uint8_t size;       /* bytes, written little-endian */
    uint16_t off;
    CaseValue v;
} CaseEdit;

/* Objects besides the ones every case has (see world_build()). */
#define W_MR            (1u << 0)   /* an MR on the PD */
#define W_QP            (1u << 1)   /* an RC QP on the PD and CQs */
#define W_FULL          (1u << 2)   /* the command's object table is full */
#define W_UD            (1u << 3)   /* a UD QP */
#define W_GSI           (1u << 4)   /* the GSI QP (QP1) */
#define W_MEMBER        (1u << 5)   /* the UD QP is in the good group */
#define W_GROUP_FULL    (1u << 6)   /* the good group has all its members */
#define W_GROUPS_FULL   (1u << 7)   /* the UD QP is in every other group */
#define W_SRQ           (1u << 8)   /* an SRQ on the PD */
#define W_SRQ_QP        (1u << 9)   /* an RC QP that receives from it */
/*
 * With W_QP: the QP is moved to ERR and PENDING_CQES receive WQEs are
 * flushed to the receive CQ, which holds them unconsumed.
 */
#define W_PENDING       (1u << 10)
/* With W_QP: as W_PENDING, then enough more to overflow the receive CQ. */
#define W_CQ_ERROR      (1u << 11)

#define PENDING_CQES    3
#define W_XRCD          (1u << 12)  /* an XRC domain */
#define W_XRC_SRQ       (1u << 13)  /* an XRC SRQ in it, completing to rcqn */
#define W_XRC_TGT       (1u << 14)  /* an XRC target QP in it */
#define W_MW            (1u << 15)  /* a type 1 memory window on the PD */

typedef struct VhcaAdminCase {
    const char *name;               /* "<command>/<what>" */
    uint16_t opcode;
    const VhcaDutConfig *cfg;       /* NULL: case_cfg */
    uint16_t world;                 /* W_* */
    uint8_t qp_state;               /* with W_QP: the QP's state */
    bool each_bad_dma;              /* one test per VhcaBadDma kind */
    CaseEdit edit[6];               /* applied to the good input in order */
    uint8_t status;                 /* expected */
    CaseValue syndrome;             /* expected; V_NONE: not checked */
} VhcaAdminCase;

#define LIT(x)          { V_LIT, (int64_t)(x) }
#define REF(r, k)       { V_##r, (k) }
#define NOT_RAM(len)    { V_NOT_RAM, (len) }
#define SYN_EDIT(i)     { V_EDIT, (i) }

/*
 * The value is the variadic part: LIT() and REF() expand to braces with
 * a comma in them before these macros see them.
 */
#define FIELD_SIZE(type, field)   sizeof(((type *)0)->field)
#define EDIT(t, type, field, ...) \
    { t, FIELD_SIZE(type, field), offsetof(type, field), __VA_ARGS__ }
#define IN(type, field, ...)    EDIT(T_IN, type, field, __VA_ARGS__)
#define MB(type, field, ...)    EDIT(T_MBOX, type, field, __VA_ARGS__)

#define DMA_IN(f, ...)  IN(struct vhca_cmd_dma_in, f, __VA_ARGS__)
#define PORT_IN(...)    IN(struct vhca_cmd_port_in, port, __VA_ARGS__)
#define GID_IN(f, ...)  IN(struct vhca_cmd_gid_in, f, __VA_ARGS__)
#define MAC_IN(...)     IN(struct vhca_cmd_mac_in, mac, __VA_ARGS__)
#define MTU_IN(...)     IN(struct vhca_cmd_mtu_in, mtu, __VA_ARGS__)
#define UCTX_IN(...)    IN(struct vhca_cmd_uctx_in, db_page, __VA_ARGS__)
#define OBJ_IN(...)     IN(struct vhca_cmd_obj_in, handle, __VA_ARGS__)
#define MR(f, ...)      MB(struct vhca_mr_create, f, __VA_ARGS__)
#define EQ(f, ...)      MB(struct vhca_eq_create, f, __VA_ARGS__)
#define CQ(f, ...)      MB(struct vhca_cq_create, f, __VA_ARGS__)
#define QP(f, ...)      MB(struct vhca_qp_create, f, __VA_ARGS__)
#define ATTR(f, ...)    MB(struct vhca_qp_attr, f, __VA_ARGS__)
#define FILTER(f, ...)  MB(struct vhca_rx_filter, f, __VA_ARGS__)
#define CC(f, ...)      MB(struct vhca_cc_config, f, __VA_ARGS__)
#define RESIZE(f, ...)  MB(struct vhca_cq_resize, f, __VA_ARGS__)
#define MCAST_IN(f, ...) IN(struct vhca_cmd_mcast_in, f, __VA_ARGS__)
#define MW_IN(f, ...)   IN(struct vhca_cmd_mw_in, f, __VA_ARGS__)
#define SRQ(f, ...)     MB(struct vhca_srq_create, f, __VA_ARGS__)
#define SRQ_ATTR(f, ...) MB(struct vhca_srq_attr, f, __VA_ARGS__)
/* The good CREATE_QP, receiving from the SRQ (no RQ of its own). */
#define QP_ON_SRQ       QP(srqn, REF(SRQN, 0)), QP(rq_log_size, LIT(0)),    \
                        QP(rq_pbl_addr, LIT(0)), QP(rq_npages, LIT(0))

/* A MAC address as the little-endian number its 6 bytes make. */
#define MAC(a, b, c, d, e, f)                                               \
    ((uint64_t)(a) | (uint64_t)(b) << 8 | (uint64_t)(c) << 16 |            \
     (uint64_t)(d) << 24 | (uint64_t)(e) << 32 | (uint64_t)(f) << 40)

#define ROW(nm, op, st, ...) \
    { .name = (nm), .opcode = (op), .status = VHCA_ST_##st, __VA_ARGS__ }

/*
 * A mailbox that is too short or empty (syndrome: its length), or not
 * guest RAM (syndrome 0): BAD_ADDR.
 */
#define MAILBOX_SHORT(cmd, op, type)                                        \
    ROW(cmd "/mailbox-short", op, BAD_ADDR,                                 \
        .edit = { DMA_IN(len, LIT(sizeof(type) - 1)) },                     \
        .syndrome = SYN_EDIT(0))
#define MAILBOX_EMPTY(cmd, op)                                              \
    ROW(cmd "/mailbox-empty", op, BAD_ADDR, .edit = { DMA_IN(len, LIT(0)) }, \
        .syndrome = SYN_EDIT(0))
#define MAILBOX_NOT_RAM(cmd, op, type)                                      \
    ROW(cmd "/mailbox-not-ram", op, BAD_ADDR, .each_bad_dma = true,         \
        .edit = { DMA_IN(addr, NOT_RAM(sizeof(type))) }, .syndrome = LIT(0))

/* The required attributes of the RC bring-up (IBTA 11.2.4.2). */
#define INIT_REQ    (VHCA_QP_PKEY_INDEX | VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS)
#define RTR_REQ     (VHCA_QP_AV | VHCA_QP_PATH_MTU | VHCA_QP_DEST_QPN |     \
                     VHCA_QP_RQ_PSN | VHCA_QP_MAX_DEST_RD_ATOMIC |          \
                     VHCA_QP_MIN_RNR_TIMER)
#define RTS_REQ     (VHCA_QP_TIMEOUT | VHCA_QP_RETRY_CNT |                  \
                     VHCA_QP_RNR_RETRY | VHCA_QP_SQ_PSN |                   \
                     VHCA_QP_MAX_QP_RD_ATOMIC)

#define RESET       VHCA_QPS_RESET
#define INIT        VHCA_QPS_INIT
#define RTR         VHCA_QPS_RTR
#define RTS         VHCA_QPS_RTS
#define SQD         VHCA_QPS_SQD

/*
 * MODIFY_QP of the RC QP in state @from to @to with @mask (+ STATE) and
 * the good attributes but for @bad.
 */
#define MODIFY(nm, from, to, mask, bad, st, syn)                            \
    ROW("modify-qp/" nm, VHCA_CMD_MODIFY_QP, st, .world = W_QP,             \
        .qp_state = (from),                                                 \
        .edit = { ATTR(qp_state, LIT(to)),                                  \
                  ATTR(attr_mask, LIT(VHCA_QP_STATE | (mask))), bad },      \
        .syndrome = syn)

#define NO_SYN          { V_NONE, 0 }
#define NO_EDIT         { T_NONE, 0, 0, { V_NONE, 0 } }

/* ---------------------------------------------------------------------- */
/* The cases                                                              */
/* ---------------------------------------------------------------------- */

static const VhcaAdminCase cases[] = {
    /* Opcodes: unknown ones, past the table or in its gaps. */
    ROW("bad-opcode/0x0a", 0x0a, BAD_OPCODE, .syndrome = LIT(0x0a)),
    ROW("bad-opcode/max", VHCA_CMD_MAX, BAD_OPCODE,
        .syndrome = LIT(VHCA_CMD_MAX)),
    ROW("bad-opcode/0x77", 0x77, BAD_OPCODE, .syndrome = LIT(0x77)),
    ROW("bad-opcode/0x7f", 0x7f, BAD_OPCODE, .syndrome = LIT(0x7f)),
    ROW("bad-opcode/0x80", 0x80, BAD_OPCODE, .syndrome = LIT(0x80)),
    ROW("bad-opcode/0x100", 0x100, BAD_OPCODE, .syndrome = LIT(0x100)),
    ROW("bad-opcode/0xffff", 0xffff, BAD_OPCODE, .syndrome = LIT(0xffff)),

    /* QUERY_DEVICE: a buffer of at least 256 bytes, in guest RAM. */
    ROW("query-device/len-255", VHCA_CMD_QUERY_DEVICE, BAD_ADDR,
        .edit = { DMA_IN(len, LIT(255)) }),
    ROW("query-device/len-0", VHCA_CMD_QUERY_DEVICE, BAD_ADDR,
        .edit = { DMA_IN(len, LIT(0)) }),
    ROW("query-device/not-ram", VHCA_CMD_QUERY_DEVICE, BAD_ADDR,
        .each_bad_dma = true,
        .edit = { DMA_IN(addr, NOT_RAM(sizeof(struct vhca_device_attr))) }),

    /* QUERY_PORT: port 1 only. */
    ROW("query-port/port-0", VHCA_CMD_QUERY_PORT, BAD_PARAM,
        .edit = { PORT_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("query-port/port-2", VHCA_CMD_QUERY_PORT, BAD_PARAM,
        .edit = { PORT_IN(LIT(2)) }, .syndrome = SYN_EDIT(0)),
    ROW("query-port/port-255", VHCA_CMD_QUERY_PORT, BAD_PARAM,
        .edit = { PORT_IN(LIT(255)) }, .syndrome = SYN_EDIT(0)),

    /* ADD_GID, DEL_GID: index below gid-table-len, port 1, a type. */
    ROW("add-gid/index-past-table", VHCA_CMD_ADD_GID, BAD_INDEX,
        .edit = { GID_IN(index, REF(GID_TBL_LEN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("add-gid/index-0xffff", VHCA_CMD_ADD_GID, BAD_INDEX,
        .edit = { GID_IN(index, LIT(0xffff)) }, .syndrome = SYN_EDIT(0)),
    ROW("add-gid/index-1-of-1", VHCA_CMD_ADD_GID, BAD_INDEX,
        .cfg = &one_gid_cfg, .edit = { GID_IN(index, LIT(1)) },
        .syndrome = SYN_EDIT(0)),
    ROW("add-gid/port-0", VHCA_CMD_ADD_GID, BAD_PARAM,
        .edit = { GID_IN(port, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("add-gid/port-2", VHCA_CMD_ADD_GID, BAD_PARAM,
        .edit = { GID_IN(port, LIT(2)) }, .syndrome = SYN_EDIT(0)),
    ROW("add-gid/type-0", VHCA_CMD_ADD_GID, BAD_PARAM,
        .edit = { GID_IN(type, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("add-gid/type-3", VHCA_CMD_ADD_GID, BAD_PARAM,
        .edit = { GID_IN(type, LIT(3)) }, .syndrome = SYN_EDIT(0)),
    /* An IPv4 GID must be ::ffff:a.b.c.d: break the ffff. */
    ROW("add-gid/ipv4-not-mapped", VHCA_CMD_ADD_GID, BAD_PARAM,
        .edit = { { T_IN, 1, offsetof(struct vhca_cmd_gid_in, gid) + 10,
                    LIT(0) } }),
    ROW("del-gid/index-past-table", VHCA_CMD_DEL_GID, BAD_INDEX,
        .edit = { GID_IN(index, REF(GID_TBL_LEN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("del-gid/index-0xffff", VHCA_CMD_DEL_GID, BAD_INDEX,
        .edit = { GID_IN(index, LIT(0xffff)) }, .syndrome = SYN_EDIT(0)),

    /* SET_MAC: unicast, not zero. */
    ROW("set-mac/zero", VHCA_CMD_SET_MAC, BAD_PARAM,
        .edit = { MAC_IN(LIT(0)) }),
    ROW("set-mac/multicast", VHCA_CMD_SET_MAC, BAD_PARAM,
        .edit = { MAC_IN(LIT(MAC(0x01, 0x00, 0x5e, 0x00, 0x00, 0x01))) }),
    ROW("set-mac/ipv6-multicast", VHCA_CMD_SET_MAC, BAD_PARAM,
        .edit = { MAC_IN(LIT(MAC(0x33, 0x33, 0x00, 0x00, 0x00, 0x01))) }),
    ROW("set-mac/broadcast", VHCA_CMD_SET_MAC, BAD_PARAM,
        .edit = { MAC_IN(LIT(MAC(0xff, 0xff, 0xff, 0xff, 0xff, 0xff))) }),

    /* SET_MTU: 68..9000. */
    ROW("set-mtu/0", VHCA_CMD_SET_MTU, BAD_PARAM,
        .edit = { MTU_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("set-mtu/67", VHCA_CMD_SET_MTU, BAD_PARAM,
        .edit = { MTU_IN(LIT(67)) }, .syndrome = SYN_EDIT(0)),
    ROW("set-mtu/9001", VHCA_CMD_SET_MTU, BAD_PARAM,
        .edit = { MTU_IN(LIT(9001)) }, .syndrome = SYN_EDIT(0)),
    ROW("set-mtu/65536", VHCA_CMD_SET_MTU, BAD_PARAM,
        .edit = { MTU_IN(LIT(65536)) }, .syndrome = SYN_EDIT(0)),
    ROW("set-mtu/0xffffffff", VHCA_CMD_SET_MTU, BAD_PARAM,
        .edit = { MTU_IN(LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),

    /*
     * SET_RX_FILTER (the good one: three groups): flags ALLMULTI only,
     * count up to 64, every listed address multicast.
     */
    ROW("set-rx-filter/flag-1", VHCA_CMD_SET_RX_FILTER, BAD_PARAM,
        .edit = { FILTER(flags, LIT(1u << 1)) }, .syndrome = SYN_EDIT(0)),
    ROW("set-rx-filter/allmulti-and-flag-31", VHCA_CMD_SET_RX_FILTER,
        BAD_PARAM,
        .edit = { FILTER(flags, LIT(VHCA_RX_FILTER_ALLMULTI | 1u << 31)) },
        .syndrome = SYN_EDIT(0)),
    ROW("set-rx-filter/count-65", VHCA_CMD_SET_RX_FILTER, BAD_PARAM,
        .edit = { FILTER(count, LIT(VHCA_MAX_MCAST_MACS + 1)) },
        .syndrome = SYN_EDIT(0)),
    ROW("set-rx-filter/count-0xffffffff", VHCA_CMD_SET_RX_FILTER, BAD_PARAM,
        .edit = { FILTER(count, LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    /* Syndrome: the index of the entry that is not multicast. */
    ROW("set-rx-filter/unicast-first", VHCA_CMD_SET_RX_FILTER, BAD_PARAM,
        .edit = { FILTER(mac[0], LIT(MAC(0x52, 0x54, 0x00, 1, 2, 3))) },
        .syndrome = LIT(0)),
    ROW("set-rx-filter/unicast-last", VHCA_CMD_SET_RX_FILTER, BAD_PARAM,
        .edit = { FILTER(mac[2], LIT(MAC(0x52, 0x54, 0x00, 1, 2, 3))) },
        .syndrome = LIT(2)),
    MAILBOX_SHORT("set-rx-filter", VHCA_CMD_SET_RX_FILTER,
                  struct vhca_rx_filter),
    MAILBOX_EMPTY("set-rx-filter", VHCA_CMD_SET_RX_FILTER),
    MAILBOX_NOT_RAM("set-rx-filter", VHCA_CMD_SET_RX_FILTER,
                    struct vhca_rx_filter),

    /*
     * SET_CC (the good one: everything off, parameters in range): no
     * reserved flag, every parameter in its range (syndrome: its index).
     */
    ROW("set-cc/flag-3", VHCA_CMD_SET_CC, BAD_PARAM,
        .edit = { CC(flags, LIT(1u << 3)) }, .syndrome = SYN_EDIT(0)),
    ROW("set-cc/all-and-flag-31", VHCA_CMD_SET_CC, BAD_PARAM,
        .edit = { CC(flags, LIT(VHCA_CC_ECN_TX | VHCA_CC_NP | VHCA_CC_RP |
                               1u << 31)) },
        .syndrome = SYN_EDIT(0)),
    ROW("set-cc/rp-min-rate-0", VHCA_CMD_SET_CC, BAD_PARAM,
        .edit = { CC(params[VHCA_CC_PARAM_RP_MIN_RATE], LIT(0)) },
        .syndrome = LIT(VHCA_CC_PARAM_RP_MIN_RATE)),
    ROW("set-cc/rp-min-dec-fac-101", VHCA_CMD_SET_CC, BAD_PARAM,
        .edit = { CC(params[VHCA_CC_PARAM_RP_MIN_DEC_FAC], LIT(101)) },
        .syndrome = LIT(VHCA_CC_PARAM_RP_MIN_DEC_FAC)),
    ROW("set-cc/np-cnp-dscp-64", VHCA_CMD_SET_CC, BAD_PARAM,
        .edit = { CC(params[VHCA_CC_PARAM_NP_CNP_DSCP], LIT(64)) },
        .syndrome = LIT(VHCA_CC_PARAM_NP_CNP_DSCP)),
    ROW("set-cc/np-cnp-prio-0xffffffff", VHCA_CMD_SET_CC, BAD_PARAM,
        .edit = { CC(params[VHCA_CC_PARAM_NP_CNP_PRIO], LIT(UINT32_MAX)) },
        .syndrome = LIT(VHCA_CC_PARAM_NP_CNP_PRIO)),
    MAILBOX_SHORT("set-cc", VHCA_CMD_SET_CC, struct vhca_cc_config),
    MAILBOX_EMPTY("set-cc", VHCA_CMD_SET_CC),
    MAILBOX_NOT_RAM("set-cc", VHCA_CMD_SET_CC, struct vhca_cc_config),
    MAILBOX_SHORT("query-cc", VHCA_CMD_QUERY_CC, struct vhca_cc_query),
    MAILBOX_EMPTY("query-cc", VHCA_CMD_QUERY_CC),
    MAILBOX_NOT_RAM("query-cc", VHCA_CMD_QUERY_CC, struct vhca_cc_query),

    /* User contexts (doorbell pages). */
    ROW("alloc-uctx/table-full", VHCA_CMD_ALLOC_UCTX, NO_RESOURCES,
        .world = W_FULL),
    ROW("alloc-uctx/table-of-1024-full", VHCA_CMD_ALLOC_UCTX, NO_RESOURCES,
        .cfg = &many_pages_cfg, .world = W_FULL),
    ROW("dealloc-uctx/freed", VHCA_CMD_DEALLOC_UCTX, BAD_STATE,
        .edit = { UCTX_IN(REF(DEAD_PAGE, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-uctx/never-allocated", VHCA_CMD_DEALLOC_UCTX, BAD_STATE,
        .edit = { UCTX_IN(REF(DB_PAGES, -1)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-uctx/past-table", VHCA_CMD_DEALLOC_UCTX, BAD_INDEX,
        .edit = { UCTX_IN(REF(DB_PAGES, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-uctx/0xffffffff", VHCA_CMD_DEALLOC_UCTX, BAD_INDEX,
        .edit = { UCTX_IN(LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-uctx/owns-cqs", VHCA_CMD_DEALLOC_UCTX, BUSY,
        .edit = { UCTX_IN(REF(PAGE, 0)) }),

    /* Protection domains. */
    ROW("create-pd/table-full", VHCA_CMD_CREATE_PD, NO_RESOURCES,
        .world = W_FULL),
    ROW("destroy-pd/0", VHCA_CMD_DESTROY_PD, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-pd/destroyed", VHCA_CMD_DESTROY_PD, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_PDN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-pd/past-table", VHCA_CMD_DESTROY_PD, BAD_INDEX,
        .edit = { OBJ_IN(LIT(5)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-pd/0xffffff", VHCA_CMD_DESTROY_PD, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0xffffff)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-pd/0xffffffff", VHCA_CMD_DESTROY_PD, BAD_INDEX,
        .edit = { OBJ_IN(LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-pd/has-mr", VHCA_CMD_DESTROY_PD, BUSY, .world = W_MR),
    ROW("destroy-pd/has-qp", VHCA_CMD_DESTROY_PD, BUSY, .world = W_QP),

    /* Memory regions (the good one: 4 pages through a level 1 list). */
    ROW("create-mr/table-full", VHCA_CMD_CREATE_MR, NO_RESOURCES,
        .world = W_FULL),
    ROW("create-mr/pd-0", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(pdn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/pd-destroyed", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(pdn, REF(DEAD_PDN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/pd-never-created", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(pdn, LIT(3)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/pd-0xfffff", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(pdn, LIT(0xfffff)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/phys-pd-destroyed", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(flags, LIT(VHCA_MR_PHYS)), MR(pdn, REF(DEAD_PDN, 0)) },
        .syndrome = SYN_EDIT(1)),
    /* ZERO_BASED is a window's right only (IBTA 10.6.7.2.3). */
    ROW("create-mr/access-zero-based", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(access, LIT(VHCA_ACCESS_LOCAL_WRITE |
                                 VHCA_ACCESS_ZERO_BASED)) }),
    ROW("create-mr/access-bit-6", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(access, LIT(0x40)) }),
    /* No persistence placement type: the device makes nothing durable. */
    ROW("create-mr/access-flush-persistent", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(access, LIT(VHCA_ACCESS_LOCAL_WRITE |
                                 VHCA_ACCESS_FLUSH_PERSISTENT)) }),
    /* Remote write or atomic need local write (IBTA 10.6.3.1). */
    ROW("create-mr/remote-write-alone", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(access, LIT(VHCA_ACCESS_REMOTE_WRITE)) }),
    ROW("create-mr/remote-atomic-alone", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(access, LIT(VHCA_ACCESS_REMOTE_ATOMIC)) }),
    ROW("create-mr/flags-0x8000", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(flags, LIT(0x8000)) }),
    ROW("create-mr/flags-bit-3", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(flags, LIT(1u << 3)) }, .syndrome = SYN_EDIT(0)),
    /* A fast-register MR: 1..512 pages, FAST_REG alone (IBTA 10.6.3.2). */
    ROW("create-mr/fast-reg-npages-0", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(flags, LIT(VHCA_MR_FAST_REG)), MR(npages, LIT(0)) },
        .syndrome = SYN_EDIT(1)),
    ROW("create-mr/fast-reg-npages-past-max", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(flags, LIT(VHCA_MR_FAST_REG)),
                  MR(npages, LIT(VHCA_FAST_REG_MAX_PAGES + 1)) },
        .syndrome = SYN_EDIT(1)),
    ROW("create-mr/fast-reg-with-phys", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(flags, LIT(VHCA_MR_FAST_REG | VHCA_MR_PHYS)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-mr/fast-reg-at-index", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(flags, LIT(VHCA_MR_FAST_REG | VHCA_MR_AT_INDEX)),
                  MR(mrn, LIT(7)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-mr/fast-reg-pd-destroyed", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(flags, LIT(VHCA_MR_FAST_REG)),
                  MR(pdn, REF(DEAD_PDN, 0)) },
        .syndrome = SYN_EDIT(1)),
    /* AT_INDEX takes exactly the index it names, or nothing. */
    ROW("create-mr/at-index-busy", VHCA_CMD_CREATE_MR, BUSY, .world = W_MR,
        .edit = { MR(flags, LIT(VHCA_MR_AT_INDEX)), MR(mrn, REF(MRN, 0)) },
        .syndrome = SYN_EDIT(1)),
    ROW("create-mr/at-index-0", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(flags, LIT(VHCA_MR_AT_INDEX)), MR(mrn, LIT(0)) },
        .syndrome = SYN_EDIT(1)),
    ROW("create-mr/at-index-past-table", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(flags, LIT(VHCA_MR_AT_INDEX)), MR(mrn, REF(MAX_MR, 1)) },
        .syndrome = SYN_EDIT(1)),
    ROW("create-mr/at-index-0xffffffff", VHCA_CMD_CREATE_MR, BAD_INDEX,
        .edit = { MR(flags, LIT(VHCA_MR_AT_INDEX)),
                  MR(mrn, LIT(0xffffffffu)) },
        .syndrome = SYN_EDIT(1)),
    ROW("create-mr/iova-wraps", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(iova, LIT(UINT64_MAX - 10)) }),
    ROW("create-mr/length-past-pages", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(length, LIT(4 * 4096 + 1)) }),
    ROW("create-mr/offset-past-pages", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(offset, LIT(1)) }),
    ROW("create-mr/offset-page-size", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(offset, LIT(4096)), MR(length, LIT(4096)) }),
    ROW("create-mr/npages-0", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(npages, LIT(0)) }),
    ROW("create-mr/npages-0-length-0", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(npages, LIT(0)), MR(length, LIT(0)) }),
    ROW("create-mr/npages-past-level-1", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(npages, LIT(VHCA_PBL_MAX_L1_ENTRIES + 1)) }),
    ROW("create-mr/pages-past-level-1", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(npages, LIT(VHCA_PBL_MAX_L1_ENTRIES + 1)),
                  MR(length, LIT((VHCA_PBL_MAX_L1_ENTRIES + 1) * 4096ull)) }),
    ROW("create-mr/pages-past-level-2", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(pbl_levels, LIT(2)),
                  MR(npages, LIT(VHCA_PBL_ENTRIES_PER_PAGE * 512 + 1)),
                  MR(length, LIT((VHCA_PBL_ENTRIES_PER_PAGE * 512 + 1) *
                                 4096ull)) }),
    ROW("create-mr/level-2-npages-0xffffffff", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(pbl_levels, LIT(2)), MR(npages, LIT(UINT32_MAX)) }),
    ROW("create-mr/page-shift-11", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(page_shift, LIT(11)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/page-shift-31", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(page_shift, LIT(31)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/levels-0", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(pbl_levels, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/levels-3", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { MR(pbl_levels, LIT(3)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-mr/pbl-not-ram", VHCA_CMD_CREATE_MR, BAD_ADDR,
        .each_bad_dma = true, .edit = { MR(pbl_addr, NOT_RAM(4 * 8)) }),
    /* Page list entries must be 4 KiB aligned. */
    ROW("create-mr/page-not-aligned", VHCA_CMD_CREATE_MR, BAD_PARAM,
        .edit = { { T_MR_PBL, 8, 0, REF(MR_PAGES, 0x10) } }),
    MAILBOX_SHORT("create-mr", VHCA_CMD_CREATE_MR, struct vhca_mr_create),
    MAILBOX_EMPTY("create-mr", VHCA_CMD_CREATE_MR),
    MAILBOX_NOT_RAM("create-mr", VHCA_CMD_CREATE_MR, struct vhca_mr_create),
    ROW("destroy-mr/destroyed", VHCA_CMD_DESTROY_MR, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_KEY, 0)) }, .syndrome = SYN_EDIT(0)),
    /* IBTA 10.6.3: a reused index has a new key; the old one is dead. */
    ROW("destroy-mr/stale-key", VHCA_CMD_DESTROY_MR, BAD_INDEX,
        .world = W_MR, .edit = { OBJ_IN(REF(DEAD_KEY, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("destroy-mr/wrong-tag", VHCA_CMD_DESTROY_MR, BAD_INDEX,
        .world = W_MR, .edit = { OBJ_IN(REF(KEY, 0x80)) },
        .syndrome = SYN_EDIT(0)),
    ROW("destroy-mr/index-past-table", VHCA_CMD_DESTROY_MR, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0x3f01)) }, .syndrome = SYN_EDIT(0)),
    /* A window's key names no MR (spec "Memory windows"). */
    ROW("destroy-mr/window-key", VHCA_CMD_DESTROY_MR, BAD_INDEX,
        .world = W_MW, .edit = { OBJ_IN(REF(MW_KEY, 0)) },
        .syndrome = SYN_EDIT(0)),

    /*
     * Memory windows (IBTA 10.6.7; spec "Memory windows"): the good
     * ALLOC_MW is type 2 in the PD; windows take MR table entries.
     */
    ROW("alloc-mw/table-full", VHCA_CMD_ALLOC_MW, NO_RESOURCES,
        .world = W_FULL),
    ROW("create-mr/table-full-with-window", VHCA_CMD_CREATE_MR, NO_RESOURCES,
        .world = W_FULL | W_MW),
    ROW("alloc-mw/pd-0", VHCA_CMD_ALLOC_MW, BAD_INDEX,
        .edit = { MW_IN(pdn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("alloc-mw/pd-destroyed", VHCA_CMD_ALLOC_MW, BAD_INDEX,
        .edit = { MW_IN(pdn, REF(DEAD_PDN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("alloc-mw/pd-0xffffffff", VHCA_CMD_ALLOC_MW, BAD_INDEX,
        .edit = { MW_IN(pdn, LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    ROW("alloc-mw/type-0", VHCA_CMD_ALLOC_MW, BAD_PARAM,
        .edit = { MW_IN(type, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("alloc-mw/type-3", VHCA_CMD_ALLOC_MW, BAD_PARAM,
        .edit = { MW_IN(type, LIT(3)) }, .syndrome = SYN_EDIT(0)),
    ROW("alloc-mw/type-0xff", VHCA_CMD_ALLOC_MW, BAD_PARAM,
        .edit = { MW_IN(type, LIT(0xff)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-mw/0", VHCA_CMD_DEALLOC_MW, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-mw/freed-index", VHCA_CMD_DEALLOC_MW, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_KEY, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-mw/index-past-table", VHCA_CMD_DEALLOC_MW, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0x3f01)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-mw/0xffffffff", VHCA_CMD_DEALLOC_MW, BAD_INDEX,
        .edit = { OBJ_IN(LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    /* An MR's key names no window: MRs go by DESTROY_MR. */
    ROW("dealloc-mw/mr-key", VHCA_CMD_DEALLOC_MW, BAD_INDEX,
        .world = W_MR | W_MW, .edit = { OBJ_IN(REF(KEY, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("destroy-pd/has-mw", VHCA_CMD_DESTROY_PD, BUSY, .world = W_MW),

    /* Completion EQs (the good one: 2^9 entries in 2 pages, vector 2). */
    ROW("create-eq/table-full", VHCA_CMD_CREATE_EQ, NO_RESOURCES,
        .world = W_FULL),
    ROW("create-eq/vector-async", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(vector, LIT(VHCA_VECTOR_ASYNC)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-eq/vector-eth", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(vector, LIT(VHCA_VECTOR_ETH)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-eq/vector-past-table", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(vector, REF(VECTORS, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-eq/log-size-0", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(log_size, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-eq/log-size-17", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(log_size, LIT(17)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-eq/npages-too-few", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(npages, LIT(1)) }),
    ROW("create-eq/npages-0", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(npages, LIT(0)) }),
    ROW("create-eq/npages-past-level-1", VHCA_CMD_CREATE_EQ, BAD_PARAM,
        .edit = { EQ(npages, LIT(VHCA_PBL_MAX_L1_ENTRIES + 1)) }),
    ROW("create-eq/pbl-not-ram", VHCA_CMD_CREATE_EQ, BAD_ADDR,
        .each_bad_dma = true, .edit = { EQ(pbl_addr, NOT_RAM(2 * 8)) }),
    MAILBOX_SHORT("create-eq", VHCA_CMD_CREATE_EQ, struct vhca_eq_create),
    MAILBOX_EMPTY("create-eq", VHCA_CMD_CREATE_EQ),
    MAILBOX_NOT_RAM("create-eq", VHCA_CMD_CREATE_EQ, struct vhca_eq_create),
    ROW("destroy-eq/0", VHCA_CMD_DESTROY_EQ, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-eq/destroyed", VHCA_CMD_DESTROY_EQ, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_EQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-eq/past-table", VHCA_CMD_DESTROY_EQ, BAD_INDEX,
        .edit = { OBJ_IN(LIT(VHCA_MAX_COMP_EQS + 1)) },
        .syndrome = SYN_EDIT(0)),
    ROW("destroy-eq/has-cqs", VHCA_CMD_DESTROY_EQ, BUSY),

    /* CQs (the good one: 2^8 entries in 2 pages, on the user context). */
    ROW("create-cq/table-full", VHCA_CMD_CREATE_CQ, NO_RESOURCES,
        .world = W_FULL),
    ROW("create-cq/log-size-0", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(log_size, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-cq/log-size-20", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(log_size, LIT(20)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-cq/npages-too-few", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(npages, LIT(1)) }),
    /* EQ 0 is the async EQ: not a completion EQ. */
    ROW("create-cq/eq-0", VHCA_CMD_CREATE_CQ, BAD_INDEX,
        .edit = { CQ(eqn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-cq/eq-destroyed", VHCA_CMD_CREATE_CQ, BAD_INDEX,
        .edit = { CQ(eqn, REF(DEAD_EQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-cq/eq-never-created", VHCA_CMD_CREATE_CQ, BAD_INDEX,
        .edit = { CQ(eqn, LIT(30)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-cq/db-page-freed", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(db_page, REF(DEAD_PAGE, 0)) }),
    ROW("create-cq/db-page-never-allocated", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(db_page, REF(DB_PAGES, -1)) }),
    ROW("create-cq/db-page-past-table", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(db_page, REF(DB_PAGES, 0)) }),
    ROW("create-cq/db-page-1000", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(db_page, LIT(1000)) }),
    ROW("create-cq/dbrec-not-aligned", VHCA_CMD_CREATE_CQ, BAD_PARAM,
        .edit = { CQ(dbrec_addr, REF(ZERO_PAGE, 2)) }),
    ROW("create-cq/dbrec-not-ram", VHCA_CMD_CREATE_CQ, BAD_ADDR,
        .each_bad_dma = true, .edit = { CQ(dbrec_addr, NOT_RAM(4)) }),
    ROW("create-cq/pbl-not-ram", VHCA_CMD_CREATE_CQ, BAD_ADDR,
        .each_bad_dma = true, .edit = { CQ(pbl_addr, NOT_RAM(2 * 8)) }),
    MAILBOX_SHORT("create-cq", VHCA_CMD_CREATE_CQ, struct vhca_cq_create),
    MAILBOX_EMPTY("create-cq", VHCA_CMD_CREATE_CQ),
    MAILBOX_NOT_RAM("create-cq", VHCA_CMD_CREATE_CQ, struct vhca_cq_create),
    ROW("destroy-cq/0", VHCA_CMD_DESTROY_CQ, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-cq/destroyed", VHCA_CMD_DESTROY_CQ, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_CQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-cq/send-cq-of-qp", VHCA_CMD_DESTROY_CQ, BUSY,
        .world = W_QP, .edit = { OBJ_IN(REF(SCQN, 0)) }),
    ROW("destroy-cq/recv-cq-of-qp", VHCA_CMD_DESTROY_CQ, BUSY,
        .world = W_QP, .edit = { OBJ_IN(REF(RCQN, 0)) }),

    /*
     * RESIZE_CQ (the good one: the send CQ to a fresh 2^8-entry ring).
     * Beyond the runner's checks, a refused resize leaves both CQs'
     * rings and record as they were, and the receive CQ's CQEs still
     * move on a good resize after it (check_cqs_intact()).
     */
    ROW("resize-cq/cq-0", VHCA_CMD_RESIZE_CQ, BAD_INDEX,
        .edit = { RESIZE(cqn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/cq-destroyed", VHCA_CMD_RESIZE_CQ, BAD_INDEX,
        .edit = { RESIZE(cqn, REF(DEAD_CQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/cq-never-created", VHCA_CMD_RESIZE_CQ, BAD_INDEX,
        .edit = { RESIZE(cqn, LIT(7)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/cq-in-error", VHCA_CMD_RESIZE_CQ, BAD_STATE,
        .world = W_QP | W_CQ_ERROR, .qp_state = INIT,
        .edit = { RESIZE(cqn, REF(RCQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/log-size-0", VHCA_CMD_RESIZE_CQ, BAD_PARAM,
        .edit = { RESIZE(log_size, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/log-size-20", VHCA_CMD_RESIZE_CQ, BAD_PARAM,
        .edit = { RESIZE(log_size, LIT(20)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/too-small", VHCA_CMD_RESIZE_CQ, BAD_PARAM,
        .world = W_QP | W_PENDING, .qp_state = INIT,
        .edit = { RESIZE(cqn, REF(RCQN, 0)), RESIZE(log_size, LIT(1)) },
        .syndrome = LIT(PENDING_CQES)),
    ROW("resize-cq/dbrec-past-producer", VHCA_CMD_RESIZE_CQ, BAD_PARAM,
        .world = W_QP | W_PENDING, .qp_state = INIT,
        .edit = { RESIZE(cqn, REF(RCQN, 0)),
                  { T_DBREC, 4, 0, LIT(PENDING_CQES + 1) } },
        .syndrome = SYN_EDIT(1)),
    ROW("resize-cq/npages-too-few", VHCA_CMD_RESIZE_CQ, BAD_PARAM,
        .edit = { RESIZE(npages, LIT(1)) }, .syndrome = SYN_EDIT(0)),
    ROW("resize-cq/pbl-entry-0", VHCA_CMD_RESIZE_CQ, BAD_PARAM,
        .edit = { RESIZE(pbl_addr, REF(ZERO_PAGE, 0)) }, .syndrome = LIT(0)),
    ROW("resize-cq/pbl-not-ram", VHCA_CMD_RESIZE_CQ, BAD_ADDR,
        .each_bad_dma = true, .edit = { RESIZE(pbl_addr, NOT_RAM(2 * 8)) }),
    ROW("resize-cq/ring-unmapped", VHCA_CMD_RESIZE_CQ, BAD_ADDR,
        .world = W_QP | W_PENDING, .qp_state = INIT,
        .edit = { RESIZE(cqn, REF(RCQN, 0)),
                  { T_RESIZE_PBL, 8, 0, REF(HOLE, VHCA_BAD_DMA_UNMAPPED) } },
        .syndrome = LIT(0)),
    ROW("resize-cq/ring-own-bar0", VHCA_CMD_RESIZE_CQ, BAD_ADDR,
        .world = W_QP | W_PENDING, .qp_state = INIT,
        .edit = { RESIZE(cqn, REF(RCQN, 0)),
                  { T_RESIZE_PBL, 8, 0, REF(HOLE, VHCA_BAD_DMA_OWN_BAR0) } },
        .syndrome = LIT(0)),
    ROW("resize-cq/ring-other-mmio", VHCA_CMD_RESIZE_CQ, BAD_ADDR,
        .world = W_QP | W_PENDING, .qp_state = INIT,
        .edit = { RESIZE(cqn, REF(RCQN, 0)),
                  { T_RESIZE_PBL, 8, 0, REF(HOLE, VHCA_BAD_DMA_OTHER_MMIO) } },
        .syndrome = LIT(0)),
    MAILBOX_SHORT("resize-cq", VHCA_CMD_RESIZE_CQ, struct vhca_cq_resize),
    MAILBOX_EMPTY("resize-cq", VHCA_CMD_RESIZE_CQ),
    MAILBOX_NOT_RAM("resize-cq", VHCA_CMD_RESIZE_CQ, struct vhca_cq_resize),

    /* QPs (the good one: RC, 2^5 send WQEs in 2 pages, 2^5 receive). */
    ROW("create-qp/table-full", VHCA_CMD_CREATE_QP, NO_RESOURCES,
        .world = W_FULL),
    ROW("create-qp/type-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/type-5", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(5)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/type-8", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(8)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/type-11", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(11)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/type-0xff", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(0xff)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/sq-log-size-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(sq_log_size, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/sq-log-size-15", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(sq_log_size, LIT(15)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/rq-log-size-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(rq_log_size, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/rq-log-size-15", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(rq_log_size, LIT(15)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/sq-npages-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(sq_npages, LIT(0)) }),
    ROW("create-qp/rq-npages-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(rq_npages, LIT(0)) }),
    ROW("create-qp/sq-npages-too-few", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(sq_npages, LIT(1)) }),
    /* 2^14 send WQEs are 4 MiB: 1024 pages, the list has 2. */
    ROW("create-qp/sq-log-size-14-in-2-pages", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(sq_log_size, LIT(14)) }),
    ROW("create-qp/pd-0", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(pdn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/pd-destroyed", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(pdn, REF(DEAD_PDN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/pd-never-created", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(pdn, LIT(4)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/send-cq-0", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(send_cqn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/send-cq-never-created", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(send_cqn, LIT(7)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/send-cq-destroyed", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(send_cqn, REF(DEAD_CQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/recv-cq-0", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(recv_cqn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/recv-cq-0x7777", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(recv_cqn, LIT(0x7777)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-qp/db-page-never-allocated", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(db_page, REF(DB_PAGES, -1)) }),
    ROW("create-qp/db-page-past-table", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(db_page, REF(DB_PAGES, 0)) }),
    /* Page list entries must be non-zero. */
    ROW("create-qp/rq-pbl-entry-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(rq_pbl_addr, REF(ZERO_PAGE, 0)) }),
    ROW("create-qp/sq-pbl-not-ram", VHCA_CMD_CREATE_QP, BAD_ADDR,
        .each_bad_dma = true, .edit = { QP(sq_pbl_addr, NOT_RAM(2 * 8)) }),
    ROW("create-qp/rq-pbl-not-ram", VHCA_CMD_CREATE_QP, BAD_ADDR,
        .each_bad_dma = true, .edit = { QP(rq_pbl_addr, NOT_RAM(8)) }),
    MAILBOX_SHORT("create-qp", VHCA_CMD_CREATE_QP, struct vhca_qp_create),
    MAILBOX_EMPTY("create-qp", VHCA_CMD_CREATE_QP),
    MAILBOX_NOT_RAM("create-qp", VHCA_CMD_CREATE_QP, struct vhca_qp_create),
    ROW("destroy-qp/0", VHCA_CMD_DESTROY_QP, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    /* QP1 is the GSI QP's number: it exists only once created. */
    ROW("destroy-qp/1", VHCA_CMD_DESTROY_QP, BAD_INDEX,
        .edit = { OBJ_IN(LIT(1)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-qp/destroyed", VHCA_CMD_DESTROY_QP, BAD_INDEX,
        .world = W_QP, .edit = { OBJ_IN(REF(DEAD_QPN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("query-qp/0", VHCA_CMD_QUERY_QP, BAD_INDEX, .world = W_QP,
        .edit = { ATTR(qpn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("query-qp/1", VHCA_CMD_QUERY_QP, BAD_INDEX, .world = W_QP,
        .edit = { ATTR(qpn, LIT(1)) }, .syndrome = SYN_EDIT(0)),
    ROW("query-qp/destroyed", VHCA_CMD_QUERY_QP, BAD_INDEX, .world = W_QP,
        .edit = { ATTR(qpn, REF(DEAD_QPN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("query-qp/never-created", VHCA_CMD_QUERY_QP, BAD_INDEX,
        .world = W_QP, .edit = { ATTR(qpn, LIT(9)) },
        .syndrome = SYN_EDIT(0)),
    MAILBOX_SHORT("query-qp", VHCA_CMD_QUERY_QP, struct vhca_qp_attr),
    MAILBOX_EMPTY("query-qp", VHCA_CMD_QUERY_QP),
    MAILBOX_NOT_RAM("query-qp", VHCA_CMD_QUERY_QP, struct vhca_qp_attr),
    MODIFY("qpn-destroyed", RESET, VHCA_QPS_ERR, 0,
           ATTR(qpn, REF(DEAD_QPN, 0)), BAD_INDEX, SYN_EDIT(2)),
    MODIFY("qpn-never-created", RESET, VHCA_QPS_ERR, 0, ATTR(qpn, LIT(9)),
           BAD_INDEX, SYN_EDIT(2)),
    MODIFY("qpn-77", RESET, VHCA_QPS_ERR, 0, ATTR(qpn, LIT(77)), BAD_INDEX,
           SYN_EDIT(2)),
    MAILBOX_SHORT("modify-qp", VHCA_CMD_MODIFY_QP, struct vhca_qp_attr),
    MAILBOX_EMPTY("modify-qp", VHCA_CMD_MODIFY_QP),
    MAILBOX_NOT_RAM("modify-qp", VHCA_CMD_MODIFY_QP, struct vhca_qp_attr),

    /*
     * Shared receive queues (the good CREATE_SRQ: 16 WQEs in one page,
     * limit 0; the good MODIFY_SRQ arms the limit at 1 and names a new
     * ring of 16 for MAX_WR).
     */
    ROW("create-srq/table-full", VHCA_CMD_CREATE_SRQ, NO_RESOURCES,
        .world = W_FULL),
    ROW("create-srq/max-srq-0", VHCA_CMD_CREATE_SRQ, NO_RESOURCES,
        .cfg = &no_srq_cfg, .world = W_FULL),
    ROW("create-srq/pd-0", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .edit = { SRQ(pdn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/pd-destroyed", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .edit = { SRQ(pdn, REF(DEAD_PDN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/pd-0xffffffff", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .edit = { SRQ(pdn, LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/log-size-0", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(log_size, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/log-size-15", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(log_size, LIT(15)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/log-size-255", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(log_size, LIT(255)) }, .syndrome = SYN_EDIT(0)),
    /* 2^14 receive WQEs are 2 MiB: 512 pages, the list has 1. */
    ROW("create-srq/log-size-14-in-1-page", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(log_size, LIT(14)) }),
    ROW("create-srq/db-page-never-allocated", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(db_page, REF(DB_PAGES, -1)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-srq/db-page-freed", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(db_page, REF(DEAD_PAGE, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-srq/db-page-past-table", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(db_page, REF(DB_PAGES, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/ci-addr-not-ram", VHCA_CMD_CREATE_SRQ, BAD_ADDR,
        .each_bad_dma = true, .edit = { SRQ(ci_addr, NOT_RAM(4)) }),
    ROW("create-srq/ci-addr-unaligned", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(ci_addr, REF(SRQ_CI, 2)) }),
    /* IBTA 11.2.3: the limit is at most the SRQ's size (16). */
    ROW("create-srq/limit-17", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(limit, LIT(17)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/limit-0xffffffff", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(limit, LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/npages-0", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(npages, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/npages-past-level-1", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(npages, LIT(VHCA_PBL_MAX_L1_ENTRIES + 1)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-srq/pbl-entry-0", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(pbl_addr, REF(ZERO_PAGE, 0)) }),
    ROW("create-srq/pbl-not-ram", VHCA_CMD_CREATE_SRQ, BAD_ADDR,
        .each_bad_dma = true, .edit = { SRQ(pbl_addr, NOT_RAM(8)) }),
    MAILBOX_SHORT("create-srq", VHCA_CMD_CREATE_SRQ, struct vhca_srq_create),
    MAILBOX_EMPTY("create-srq", VHCA_CMD_CREATE_SRQ),
    MAILBOX_NOT_RAM("create-srq", VHCA_CMD_CREATE_SRQ,
                    struct vhca_srq_create),
    ROW("destroy-srq/0", VHCA_CMD_DESTROY_SRQ, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-srq/destroyed", VHCA_CMD_DESTROY_SRQ, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_SRQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-srq/past-table", VHCA_CMD_DESTROY_SRQ, BAD_INDEX,
        .edit = { OBJ_IN(REF(MAX_SRQ, 1)) }, .syndrome = SYN_EDIT(0)),
    ROW("destroy-srq/0xffffffff", VHCA_CMD_DESTROY_SRQ, BAD_INDEX,
        .edit = { OBJ_IN(LIT(UINT32_MAX)) }, .syndrome = SYN_EDIT(0)),
    /* IBTA 11.2.3.4: not while a QP receives from it. */
    ROW("destroy-srq/has-qp", VHCA_CMD_DESTROY_SRQ, BUSY,
        .world = W_SRQ | W_SRQ_QP, .syndrome = REF(SRQN, 0)),
    ROW("destroy-pd/has-srq", VHCA_CMD_DESTROY_PD, BUSY, .world = W_SRQ),

    /*
     * XRC (annex A14; spec "XRC"): domains, XRC SRQs, XRC QPs.  The good
     * XRC SRQ is the good SRQ with type XRC, the domain and the receive
     * CQ; the good target QP is type 10 in the domain with nothing else.
     */
    ROW("alloc-xrcd/table-full", VHCA_CMD_ALLOC_XRCD, NO_RESOURCES,
        .world = W_FULL),
    /* No SRQs, no XRC: max_xrcd is 0. */
    ROW("alloc-xrcd/max-srq-0", VHCA_CMD_ALLOC_XRCD, NO_RESOURCES,
        .cfg = &no_srq_cfg, .world = W_FULL),
    ROW("dealloc-xrcd/0", VHCA_CMD_DEALLOC_XRCD, BAD_INDEX,
        .edit = { OBJ_IN(LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-xrcd/freed", VHCA_CMD_DEALLOC_XRCD, BAD_INDEX,
        .edit = { OBJ_IN(REF(DEAD_XRCDN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-xrcd/past-table", VHCA_CMD_DEALLOC_XRCD, BAD_INDEX,
        .edit = { OBJ_IN(LIT(VHCA_MAX_XRCD + 1)) }, .syndrome = SYN_EDIT(0)),
    ROW("dealloc-xrcd/has-xrc-srq", VHCA_CMD_DEALLOC_XRCD, BUSY,
        .world = W_XRCD | W_XRC_SRQ, .syndrome = REF(XRCDN, 0)),
    ROW("dealloc-xrcd/has-target-qp", VHCA_CMD_DEALLOC_XRCD, BUSY,
        .world = W_XRCD | W_XRC_TGT, .syndrome = REF(XRCDN, 0)),
    ROW("create-srq/type-2", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(type, LIT(2)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/basic-with-xrcd", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .world = W_XRCD, .edit = { SRQ(xrcdn, REF(XRCDN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-srq/basic-with-cq", VHCA_CMD_CREATE_SRQ, BAD_PARAM,
        .edit = { SRQ(cqn, REF(RCQN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("create-srq/xrc-xrcd-0", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .edit = { SRQ(type, LIT(VHCA_SRQT_XRC)), SRQ(cqn, REF(RCQN, 0)) },
        .syndrome = LIT(0)),
    ROW("create-srq/xrc-xrcd-freed", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .edit = { SRQ(type, LIT(VHCA_SRQT_XRC)), SRQ(cqn, REF(RCQN, 0)),
                  SRQ(xrcdn, REF(DEAD_XRCDN, 0)) },
        .syndrome = SYN_EDIT(2)),
    ROW("create-srq/xrc-cq-0", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .world = W_XRCD,
        .edit = { SRQ(type, LIT(VHCA_SRQT_XRC)),
                  SRQ(xrcdn, REF(XRCDN, 0)) },
        .syndrome = LIT(0)),
    ROW("create-srq/xrc-cq-destroyed", VHCA_CMD_CREATE_SRQ, BAD_INDEX,
        .world = W_XRCD,
        .edit = { SRQ(type, LIT(VHCA_SRQT_XRC)), SRQ(xrcdn, REF(XRCDN, 0)),
                  SRQ(cqn, REF(DEAD_CQN, 0)) },
        .syndrome = SYN_EDIT(2)),
    ROW("destroy-cq/cq-of-xrc-srq", VHCA_CMD_DESTROY_CQ, BUSY,
        .world = W_XRCD | W_XRC_SRQ, .edit = { OBJ_IN(REF(RCQN, 0)) }),
    ROW("destroy-pd/has-xrc-srq", VHCA_CMD_DESTROY_PD, BUSY,
        .world = W_XRCD | W_XRC_SRQ),
    /* No QP is created on an XRC SRQ: only XRC requests reach it. */
    ROW("create-qp/on-xrc-srq", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_XRCD | W_XRC_SRQ,
        .edit = { QP(srqn, REF(XRC_SRQN, 0)), QP(rq_log_size, LIT(0)),
                  QP(rq_pbl_addr, LIT(0)), QP(rq_npages, LIT(0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("create-qp/rc-with-xrcd", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_XRCD, .edit = { QP(xrcdn, REF(XRCDN, 0)) },
        .syndrome = SYN_EDIT(0)),
    /* An XRC initiator receives nothing: no receive CQ, RQ or SRQ. */
    ROW("create-qp/xrc-ini-recv-cq", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(VHCA_QPT_XRC_INI)), QP(rq_log_size, LIT(0)),
                  QP(rq_pbl_addr, LIT(0)), QP(rq_npages, LIT(0)) },
        .syndrome = REF(RCQN, 0)),
    ROW("create-qp/xrc-ini-rq", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .edit = { QP(type, LIT(VHCA_QPT_XRC_INI)), QP(recv_cqn, LIT(0)) },
        .syndrome = LIT(0)),
    ROW("create-qp/xrc-ini-srq", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_SRQ,
        .edit = { QP_ON_SRQ, QP(type, LIT(VHCA_QPT_XRC_INI)),
                  QP(recv_cqn, LIT(0)) },
        .syndrome = REF(SRQN, 0)),
    ROW("create-qp/xrc-ini-with-xrcd", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_XRCD,
        .edit = { QP(type, LIT(VHCA_QPT_XRC_INI)), QP(recv_cqn, LIT(0)),
                  QP(rq_log_size, LIT(0)), QP(rq_pbl_addr, LIT(0)),
                  QP(rq_npages, LIT(0)), QP(xrcdn, REF(XRCDN, 0)) },
        .syndrome = SYN_EDIT(5)),
    ROW("create-qp/xrc-tgt-xrcd-0", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(type, LIT(VHCA_QPT_XRC_TGT)) }, .syndrome = LIT(0)),
    ROW("create-qp/xrc-tgt-xrcd-freed", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .edit = { QP(type, LIT(VHCA_QPT_XRC_TGT)),
                  QP(xrcdn, REF(DEAD_XRCDN, 0)) },
        .syndrome = SYN_EDIT(1)),
    /* A target has no PD, CQs or queues (the good RC QP has them all). */
    ROW("create-qp/xrc-tgt-with-queues", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_XRCD,
        .edit = { QP(type, LIT(VHCA_QPT_XRC_TGT)),
                  QP(xrcdn, REF(XRCDN, 0)) },
        .syndrome = SYN_EDIT(1)),
    ROW("query-srq/0", VHCA_CMD_QUERY_SRQ, BAD_INDEX, .world = W_SRQ,
        .edit = { SRQ_ATTR(srqn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("query-srq/destroyed", VHCA_CMD_QUERY_SRQ, BAD_INDEX, .world = W_SRQ,
        .edit = { SRQ_ATTR(srqn, REF(DEAD_SRQN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("query-srq/never-created", VHCA_CMD_QUERY_SRQ, BAD_INDEX,
        .world = W_SRQ, .edit = { SRQ_ATTR(srqn, LIT(3)) },
        .syndrome = SYN_EDIT(0)),
    MAILBOX_SHORT("query-srq", VHCA_CMD_QUERY_SRQ, struct vhca_srq_attr),
    MAILBOX_EMPTY("query-srq", VHCA_CMD_QUERY_SRQ),
    MAILBOX_NOT_RAM("query-srq", VHCA_CMD_QUERY_SRQ, struct vhca_srq_attr),
    ROW("modify-srq/srqn-0", VHCA_CMD_MODIFY_SRQ, BAD_INDEX, .world = W_SRQ,
        .edit = { SRQ_ATTR(srqn, LIT(0)) }, .syndrome = SYN_EDIT(0)),
    ROW("modify-srq/srqn-destroyed", VHCA_CMD_MODIFY_SRQ, BAD_INDEX,
        .world = W_SRQ, .edit = { SRQ_ATTR(srqn, REF(DEAD_SRQN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("modify-srq/srqn-past-table", VHCA_CMD_MODIFY_SRQ, BAD_INDEX,
        .world = W_SRQ, .edit = { SRQ_ATTR(srqn, REF(MAX_SRQ, 1)) },
        .syndrome = SYN_EDIT(0)),
    ROW("modify-srq/mask-bit-2", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ, .edit = { SRQ_ATTR(attr_mask, LIT(1u << 2)) },
        .syndrome = SYN_EDIT(0)),
    ROW("modify-srq/limit-and-bit-31", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_LIMIT | 1u << 31)) },
        .syndrome = SYN_EDIT(0)),
    ROW("modify-srq/limit-17", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ, .edit = { SRQ_ATTR(limit, LIT(17)) },
        .syndrome = SYN_EDIT(0)),
    ROW("modify-srq/max-wr-log-size-0", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_MAX_WR)),
                  SRQ_ATTR(log_size, LIT(0)) },
        .syndrome = SYN_EDIT(1)),
    ROW("modify-srq/max-wr-log-size-15", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_MAX_WR)),
                  SRQ_ATTR(log_size, LIT(15)) },
        .syndrome = SYN_EDIT(1)),
    ROW("modify-srq/max-wr-npages-0", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_MAX_WR)),
                  SRQ_ATTR(npages, LIT(0)) },
        .syndrome = SYN_EDIT(1)),
    ROW("modify-srq/max-wr-pbl-entry-0", VHCA_CMD_MODIFY_SRQ, BAD_PARAM,
        .world = W_SRQ,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_MAX_WR)),
                  SRQ_ATTR(pbl_addr, REF(ZERO_PAGE, 0)) }),
    ROW("modify-srq/max-wr-pbl-not-ram", VHCA_CMD_MODIFY_SRQ, BAD_ADDR,
        .world = W_SRQ, .each_bad_dma = true,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_MAX_WR)),
                  SRQ_ATTR(pbl_addr, NOT_RAM(8)) }),
    /* The limit is checked against the new ring's size (2 here). */
    ROW("modify-srq/max-wr-limit-past-new-size", VHCA_CMD_MODIFY_SRQ,
        BAD_PARAM, .world = W_SRQ,
        .edit = { SRQ_ATTR(attr_mask, LIT(VHCA_SRQ_MAX_WR | VHCA_SRQ_LIMIT)),
                  SRQ_ATTR(log_size, LIT(1)), SRQ_ATTR(limit, LIT(3)) },
        .syndrome = SYN_EDIT(2)),
    MAILBOX_SHORT("modify-srq", VHCA_CMD_MODIFY_SRQ, struct vhca_srq_attr),
    MAILBOX_EMPTY("modify-srq", VHCA_CMD_MODIFY_SRQ),
    MAILBOX_NOT_RAM("modify-srq", VHCA_CMD_MODIFY_SRQ, struct vhca_srq_attr),
    /* CREATE_QP with srqn: the SRQ exists, RC/UC/UD, no RQ of its own. */
    ROW("create-qp/srq-destroyed", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(srqn, REF(DEAD_SRQN, 0)) },
        .syndrome = SYN_EDIT(4)),
    ROW("create-qp/srq-never-created", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(srqn, LIT(3)) },
        .syndrome = SYN_EDIT(4)),
    ROW("create-qp/srq-0xffffffff", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(srqn, LIT(UINT32_MAX)) },
        .syndrome = SYN_EDIT(4)),
    ROW("create-qp/srq-gsi", VHCA_CMD_CREATE_QP, BAD_PARAM, .world = W_SRQ,
        .edit = { QP_ON_SRQ, QP(type, LIT(VHCA_QPT_GSI)) },
        .syndrome = REF(SRQN, 0)),
    ROW("create-qp/srq-with-rq-log-size", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(rq_log_size, LIT(5)) },
        .syndrome = REF(SRQN, 0)),
    ROW("create-qp/srq-with-rq-pbl", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_SRQ,
        .edit = { QP_ON_SRQ, QP(rq_pbl_addr, REF(ZERO_PAGE, 0)) },
        .syndrome = REF(SRQN, 0)),
    ROW("create-qp/srq-with-rq-npages", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(rq_npages, LIT(1)) },
        .syndrome = REF(SRQN, 0)),
    /* The other checks still apply to a QP on an SRQ. */
    ROW("create-qp/srq-pd-destroyed", VHCA_CMD_CREATE_QP, BAD_INDEX,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(pdn, REF(DEAD_PDN, 0)) },
        .syndrome = SYN_EDIT(4)),
    ROW("create-qp/srq-sq-log-size-0", VHCA_CMD_CREATE_QP, BAD_PARAM,
        .world = W_SRQ, .edit = { QP_ON_SRQ, QP(sq_log_size, LIT(0)) },
        .syndrome = SYN_EDIT(4)),
    /* The GSI QP: one per device; its RESET -> INIT takes no PORT. */
    ROW("create-qp/second-gsi", VHCA_CMD_CREATE_QP, BUSY, .world = W_GSI,
        .edit = { QP(type, LIT(VHCA_QPT_GSI)) }),
    ROW("modify-qp/gsi-reset-init-port", VHCA_CMD_MODIFY_QP, BAD_PARAM,
        .world = W_QP | W_GSI,
        .edit = { ATTR(qpn, LIT(VHCA_GSI_QPN)),
                  ATTR(qp_state, LIT(INIT)),
                  ATTR(attr_mask, LIT(VHCA_QP_STATE | VHCA_QP_PKEY_INDEX |
                                      VHCA_QP_QKEY | VHCA_QP_PORT)) }),

    /*
     * ATTACH_MCAST, DETACH_MCAST (the good one: the UD QP and the group
     * ::ffff:239.1.2.3): UD QPs only (syndrome: the type), multicast
     * GIDs, members only for DETACH, 16 QPs a group, 64 groups.
     */
    ROW("attach-mcast/rc-qp", VHCA_CMD_ATTACH_MCAST, BAD_PARAM,
        .world = W_QP | W_UD, .edit = { MCAST_IN(qpn, REF(QPN, 0)) },
        .syndrome = LIT(VHCA_QPT_RC)),
    ROW("attach-mcast/gsi-qp", VHCA_CMD_ATTACH_MCAST, BAD_PARAM,
        .world = W_GSI | W_UD, .edit = { MCAST_IN(qpn, LIT(VHCA_GSI_QPN)) },
        .syndrome = LIT(VHCA_QPT_GSI)),
    ROW("attach-mcast/qpn-destroyed", VHCA_CMD_ATTACH_MCAST, BAD_INDEX,
        .world = W_UD, .edit = { MCAST_IN(qpn, REF(DEAD_QPN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("attach-mcast/qpn-0x4242", VHCA_CMD_ATTACH_MCAST, BAD_INDEX,
        .world = W_UD, .edit = { MCAST_IN(qpn, LIT(0x4242)) },
        .syndrome = SYN_EDIT(0)),
    /* ::ffff:10.1.2.3 */
    ROW("attach-mcast/unicast-gid", VHCA_CMD_ATTACH_MCAST, BAD_PARAM,
        .world = W_UD,
        .edit = { { T_IN, 1, offsetof(struct vhca_cmd_mcast_in, gid) + 12,
                    LIT(10) } }),
    ROW("attach-mcast/group-full", VHCA_CMD_ATTACH_MCAST, NO_RESOURCES,
        .cfg = &many_qps_cfg, .world = W_UD | W_GROUP_FULL,
        .syndrome = LIT(VHCA_MAX_MCAST_QPS)),
    ROW("attach-mcast/groups-full", VHCA_CMD_ATTACH_MCAST, NO_RESOURCES,
        .world = W_UD | W_GROUPS_FULL,
        .syndrome = LIT(VHCA_MAX_MCAST_GROUPS)),
    ROW("detach-mcast/not-a-member", VHCA_CMD_DETACH_MCAST, BAD_PARAM,
        .world = W_UD, .syndrome = REF(UD_QPN, 0)),
    /* ff0e::1, a group nobody joined. */
    ROW("detach-mcast/ipv6-group-not-joined", VHCA_CMD_DETACH_MCAST,
        BAD_PARAM, .world = W_UD | W_MEMBER,
        .edit = { { T_IN, 8, offsetof(struct vhca_cmd_mcast_in, gid),
                    LIT(0x0eff) },
                  { T_IN, 8, offsetof(struct vhca_cmd_mcast_in, gid) + 8,
                    LIT(1ull << 56) } },
        .syndrome = REF(UD_QPN, 0)),
    ROW("detach-mcast/other-qp-is-the-member", VHCA_CMD_DETACH_MCAST,
        BAD_PARAM, .world = W_QP | W_UD | W_MEMBER,
        .edit = { MCAST_IN(qpn, REF(QPN, 0)) }, .syndrome = SYN_EDIT(0)),
    ROW("detach-mcast/qpn-destroyed", VHCA_CMD_DETACH_MCAST, BAD_INDEX,
        .world = W_UD | W_MEMBER, .edit = { MCAST_IN(qpn, REF(DEAD_QPN, 0)) },
        .syndrome = SYN_EDIT(0)),
    ROW("detach-mcast/qpn-0x777", VHCA_CMD_DETACH_MCAST, BAD_INDEX,
        .world = W_UD | W_MEMBER, .edit = { MCAST_IN(qpn, LIT(0x777)) },
        .syndrome = SYN_EDIT(0)),

    /*
     * MODIFY_QP values out of range on transitions that allow the
     * attribute (spec "MODIFY_QP values").
     */
    MODIFY("reset-init/port-0", RESET, INIT, INIT_REQ, ATTR(port, LIT(0)),
           BAD_PARAM, NO_SYN),
    MODIFY("reset-init/port-2", RESET, INIT, INIT_REQ, ATTR(port, LIT(2)),
           BAD_PARAM, NO_SYN),
    /* One P_Key (max_pkeys = 1). */
    MODIFY("reset-init/pkey-index-1", RESET, INIT, INIT_REQ,
           ATTR(pkey_index, LIT(1)), BAD_PARAM, NO_SYN),
    MODIFY("init-rtr/path-mtu-0", INIT, RTR, RTR_REQ,
           ATTR(path_mtu, LIT(0)), BAD_PARAM, NO_SYN),
    MODIFY("init-rtr/path-mtu-6", INIT, RTR, RTR_REQ,
           ATTR(path_mtu, LIT(VHCA_IB_MTU_4096 + 1)), BAD_PARAM, NO_SYN),
    MODIFY("init-rtr/sgid-index-past-table", INIT, RTR, RTR_REQ,
           ATTR(sgid_index, REF(GID_TBL_LEN, 0)), BAD_PARAM, NO_SYN),
    MODIFY("init-rtr/dest-qpn-2^24", INIT, RTR, RTR_REQ,
           ATTR(dest_qp_num, LIT(1u << 24)), BAD_PARAM, NO_SYN),
    MODIFY("init-rtr/min-rnr-timer-32", INIT, RTR, RTR_REQ,
           ATTR(min_rnr_timer, LIT(32)), BAD_PARAM, NO_SYN),
    MODIFY("init-rtr/max-dest-rd-atomic-past-max", INIT, RTR, RTR_REQ,
           ATTR(max_dest_rd_atomic, REF(RD_ATOM, 1)), BAD_PARAM, NO_SYN),
    MODIFY("rtr-rts/timeout-32", RTR, RTS, RTS_REQ, ATTR(timeout, LIT(32)),
           BAD_PARAM, NO_SYN),
    MODIFY("rtr-rts/retry-cnt-8", RTR, RTS, RTS_REQ,
           ATTR(retry_cnt, LIT(8)), BAD_PARAM, NO_SYN),
    MODIFY("rtr-rts/rnr-retry-8", RTR, RTS, RTS_REQ,
           ATTR(rnr_retry, LIT(8)), BAD_PARAM, NO_SYN),
    MODIFY("rtr-rts/max-rd-atomic-past-max", RTR, RTS, RTS_REQ,
           ATTR(max_rd_atomic, REF(INIT_RD_ATOM, 1)), BAD_PARAM, NO_SYN),
    /* CUR_STATE must name the state the QP is in. */
    MODIFY("rtr-rts/cur-state-not-current", RTR, RTS,
           RTS_REQ | VHCA_QP_CUR_STATE, ATTR(cur_qp_state, LIT(SQD)),
           BAD_STATE, NO_SYN),
    MODIFY("sqd-rts/cur-state-not-current", SQD, RTS, VHCA_QP_CUR_STATE,
           ATTR(cur_qp_state, LIT(RTS)), BAD_STATE, NO_SYN),
    /* A state that does not exist. */
    MODIFY("rts/state-7", RTS, VHCA_QPS_ERR + 1, 0, NO_EDIT, BAD_PARAM,
           NO_SYN),
    MODIFY("rts/state-0xff", RTS, 0xff, 0, NO_EDIT, BAD_PARAM, NO_SYN),
    MODIFY("sqd/state-7", SQD, VHCA_QPS_ERR + 1, 0, NO_EDIT, BAD_PARAM,
           NO_SYN),
    /* SQD -> SQD, one attribute with a bad value each. */
    MODIFY("sqd-sqd/timeout-32", SQD, SQD, VHCA_QP_TIMEOUT,
           ATTR(timeout, LIT(32)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/retry-cnt-8", SQD, SQD, VHCA_QP_RETRY_CNT,
           ATTR(retry_cnt, LIT(8)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/rnr-retry-8", SQD, SQD, VHCA_QP_RNR_RETRY,
           ATTR(rnr_retry, LIT(8)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/min-rnr-timer-32", SQD, SQD, VHCA_QP_MIN_RNR_TIMER,
           ATTR(min_rnr_timer, LIT(32)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/max-rd-atomic-129", SQD, SQD, VHCA_QP_MAX_QP_RD_ATOMIC,
           ATTR(max_rd_atomic, LIT(VHCA_MAX_RD_ATOMIC + 1)), BAD_PARAM,
           NO_SYN),
    MODIFY("sqd-sqd/max-dest-rd-atomic-129", SQD, SQD,
           VHCA_QP_MAX_DEST_RD_ATOMIC,
           ATTR(max_dest_rd_atomic, LIT(VHCA_MAX_RD_ATOMIC + 1)),
           BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/port-0", SQD, SQD, VHCA_QP_PORT, ATTR(port, LIT(0)),
           BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/port-2", SQD, SQD, VHCA_QP_PORT, ATTR(port, LIT(2)),
           BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/pkey-index-1", SQD, SQD, VHCA_QP_PKEY_INDEX,
           ATTR(pkey_index, LIT(1)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/access-bit-4", SQD, SQD, VHCA_QP_ACCESS_FLAGS,
           ATTR(qp_access_flags, LIT(0x10)), BAD_PARAM, NO_SYN),
    /* Below the highest flag (FLUSH_PERSISTENT) but no flag. */
    MODIFY("sqd-sqd/access-bit-7", SQD, SQD, VHCA_QP_ACCESS_FLAGS,
           ATTR(qp_access_flags, LIT(0x80)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/sgid-index-empty", SQD, SQD, VHCA_QP_AV,
           ATTR(sgid_index, LIT(1)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/sgid-index-200", SQD, SQD, VHCA_QP_AV,
           ATTR(sgid_index, LIT(200)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/flow-label-2^20", SQD, SQD, VHCA_QP_AV,
           ATTR(flow_label, LIT(1u << 20)), BAD_PARAM, NO_SYN),
    /* Attributes SQD -> SQD does not take, with bad values too. */
    MODIFY("sqd-sqd/path-mtu-0", SQD, SQD, VHCA_QP_PATH_MTU,
           ATTR(path_mtu, LIT(0)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/path-mtu-6", SQD, SQD, VHCA_QP_PATH_MTU,
           ATTR(path_mtu, LIT(6)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/rq-psn-2^24", SQD, SQD, VHCA_QP_RQ_PSN,
           ATTR(rq_psn, LIT(1u << 24)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/sq-psn-2^24", SQD, SQD, VHCA_QP_SQ_PSN,
           ATTR(sq_psn, LIT(1u << 24)), BAD_PARAM, NO_SYN),
    MODIFY("sqd-sqd/dest-qpn-2^24", SQD, SQD, VHCA_QP_DEST_QPN,
           ATTR(dest_qp_num, LIT(1u << 24)), BAD_PARAM, NO_SYN),
};

/* ---------------------------------------------------------------------- */
/* The world a case runs in                                               */
/* ---------------------------------------------------------------------- */

typedef enum ObjKind {
    OBJ_UCTX, OBJ_PD, OBJ_MR, OBJ_EQ, OBJ_CQ, OBJ_QP, OBJ_SRQ, OBJ_XRCD,
    OBJ_MW,
    OBJ_N,
    OBJ_NONE = OBJ_N
} ObjKind;

typedef struct World {
    VhcaDut *dut;
    const VhcaAdminCase *row;
    VhcaBadDma bad_dma;
    struct vhca_device_attr dev;    /* host byte order */
    uint32_t live[OBJ_N];           /* objects of each kind that exist */

    uint32_t page, dead_page;
    uint32_t pdn, dead_pdn;
    uint32_t eqn, dead_eqn;
    uint32_t scqn, rcqn, dead_cqn;
    uint32_t qpn, dead_qpn, ud_qpn;
    uint32_t srqn, dead_srqn, srq_qpn;
    uint32_t xrcdn, dead_xrcdn, xrc_srqn, tgt_qpn;
    uint32_t key, dead_key, mw_key;

    /* Guest memory the good inputs name. */
    uint64_t zero_page;
    uint64_t mr_pages, mr_pbl;
    uint64_t eq_pbl, cq_pbl, cq_dbrec, sq_pbl, rq_pbl, rq_pages;
    uint64_t cq_pages, resize_pbl;
    uint64_t srq_pbl, srq_ci, srq_new_pbl;
} World;

/* One command: inline input and the guest buffer it names, if any. */
typedef struct Cmd {
    uint16_t opcode;
    uint8_t in[32];
    size_t in_len;
    uint64_t mbox_addr;             /* 0: no mailbox */
    uint8_t *mbox;                  /* what the mailbox holds */
    size_t mbox_len;
} Cmd;

static const uint8_t local_gid[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 10, [13] = 0, [14] = 0, [15] = 1,
};
static const uint8_t remote_gid[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 10, [13] = 0, [14] = 0, [15] = 2,
};
/* The group of the good ATTACH_MCAST / DETACH_MCAST: ::ffff:239.1.2.3. */
static const uint8_t group_gid[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 239, [13] = 1, [14] = 2, [15] = 3,
};

static ObjKind created_kind(uint16_t opcode)
{
    switch (opcode) {
    case VHCA_CMD_ALLOC_UCTX:
        return OBJ_UCTX;
    case VHCA_CMD_CREATE_PD:
        return OBJ_PD;
    case VHCA_CMD_CREATE_MR:
        return OBJ_MR;
    case VHCA_CMD_CREATE_EQ:
        return OBJ_EQ;
    case VHCA_CMD_CREATE_CQ:
        return OBJ_CQ;
    case VHCA_CMD_CREATE_QP:
        return OBJ_QP;
    case VHCA_CMD_CREATE_SRQ:
        return OBJ_SRQ;
    case VHCA_CMD_ALLOC_XRCD:
        return OBJ_XRCD;
    case VHCA_CMD_ALLOC_MW:
        return OBJ_MW;
    default:
        return OBJ_NONE;
    }
}

static uint16_t destroy_opcode(ObjKind kind)
{
    static const uint16_t op[OBJ_N] = {
        [OBJ_UCTX] = VHCA_CMD_DEALLOC_UCTX, [OBJ_PD] = VHCA_CMD_DESTROY_PD,
        [OBJ_MR] = VHCA_CMD_DESTROY_MR, [OBJ_EQ] = VHCA_CMD_DESTROY_EQ,
        [OBJ_CQ] = VHCA_CMD_DESTROY_CQ, [OBJ_QP] = VHCA_CMD_DESTROY_QP,
        [OBJ_SRQ] = VHCA_CMD_DESTROY_SRQ, [OBJ_XRCD] = VHCA_CMD_DEALLOC_XRCD,
        [OBJ_MW] = VHCA_CMD_DEALLOC_MW,
    };

    return op[kind];
}

/* How many objects of @kind the device holds (QUERY_DEVICE, the spec). */
static uint32_t table_size(World *w, ObjKind kind)
{
    switch (kind) {
    case OBJ_UCTX:
        return w->dev.max_uctx;
    case OBJ_PD:
        return w->dev.max_pd;
    /* MRs and windows share one table (spec "Memory windows"). */
    case OBJ_MR:
        return w->dev.max_mr - w->live[OBJ_MW];
    case OBJ_MW:
        return w->dev.max_mw - w->live[OBJ_MR];
    case OBJ_EQ:
        return VHCA_MAX_COMP_EQS;
    case OBJ_CQ:
        return w->dev.max_cq;
    case OBJ_QP:
        return w->dev.max_qp;
    case OBJ_SRQ:
        return w->dev.max_srq;
    case OBJ_XRCD:
        return w->dev.max_xrcd;
    default:
        g_assert_not_reached();
    }
}

static void cmd_free(Cmd *c)
{
    g_free(c->mbox);
    c->mbox = NULL;
}

/* Execute @c, its mailbox written to guest memory first. */
static uint8_t cmd_run(World *w, const Cmd *c, struct vhca_cmd_obj_out *out,
                       uint32_t *syndrome)
{
    struct vhca_cmd_obj_out o;
    uint8_t status;

    if (c->mbox_addr) {
        vhca_dut_write(w->dut, c->mbox_addr, c->mbox, c->mbox_len);
    }
    status = vhca_dut_cmd(w->dut, c->opcode, c->in, c->in_len, &o,
                          syndrome);
    if (out) {
        out->handle = GUINT32_FROM_LE(o.handle);
        out->key = GUINT32_FROM_LE(o.key);
    }
    return status;
}

/* A command whose input is @len bytes of @in. */
static void cmd_inline(Cmd *c, uint16_t opcode, const void *in, size_t len)
{
    memset(c, 0, sizeof(*c));
    c->opcode = opcode;
    g_assert_cmpuint(len, <=, sizeof(c->in));
    if (len) {
        /* Commands with no input pass NULL: memcpy's argument is nonnull. */
        memcpy(c->in, in, len);
    }
    c->in_len = len;
}

/* A command whose mailbox (fresh guest memory) holds @len bytes of @mbox. */
static void cmd_mailbox(World *w, Cmd *c, uint16_t opcode, const void *mbox,
                        size_t len)
{
    struct vhca_cmd_dma_in in;

    memset(c, 0, sizeof(*c));
    c->opcode = opcode;
    c->mbox_addr = vhca_dut_alloc(w->dut, len);
    c->mbox = g_malloc(len);
    memcpy(c->mbox, mbox, len);
    c->mbox_len = len;
    in.addr = GUINT64_TO_LE(c->mbox_addr);
    in.len = GUINT32_TO_LE((uint32_t)len);
    in.rsvd = 0;
    memcpy(c->in, &in, sizeof(in));
    c->in_len = sizeof(in);
}

/* Run a command the world needs; it must succeed. */
static struct vhca_cmd_obj_out must(World *w, Cmd *c, const char *what)
{
    struct vhca_cmd_obj_out out;
    uint8_t status = cmd_run(w, c, &out, NULL);

    if (status != VHCA_ST_OK) {
        g_error("setting up the case: %s failed with status %u", what,
                status);
    }
    cmd_free(c);
    return out;
}

static uint32_t must_inline(World *w, uint16_t opcode, const void *in,
                            size_t len, const char *what)
{
    Cmd c;

    cmd_inline(&c, opcode, in, len);
    return must(w, &c, what).handle;
}

static void must_destroy(World *w, ObjKind kind, uint32_t handle)
{
    struct vhca_cmd_obj_in in = { .handle = GUINT32_TO_LE(handle) };

    must_inline(w, destroy_opcode(kind), &in, sizeof(in), "destroy");
    w->live[kind]--;
}

/* @npages zeroed pages and a level 1 list naming them; returns the list. */
static uint64_t pages_with_list(World *w, uint32_t npages, uint64_t *first)
{
    uint64_t pages = vhca_dut_alloc(w->dut, (size_t)npages * 4096);
    uint64_t pbl = vhca_dut_alloc(w->dut, npages * sizeof(uint64_t));

    for (uint32_t i = 0; i < npages; i++) {
        uint64_t entry = GUINT64_TO_LE(pages + (uint64_t)i * 4096);

        vhca_dut_write(w->dut, pbl + i * sizeof(entry), &entry,
                       sizeof(entry));
    }
    if (first) {
        *first = pages;
    }
    return pbl;
}

/* ---- the good input of every command --------------------------------- */

static void good_mr(World *w, struct vhca_mr_create *c)
{
    memset(c, 0, sizeof(*c));
    c->pdn = GUINT32_TO_LE(w->pdn);
    c->access = GUINT32_TO_LE(VHCA_ACCESS_LOCAL_WRITE |
                              VHCA_ACCESS_REMOTE_WRITE);
    c->iova = GUINT64_TO_LE(0x10000);
    c->length = GUINT64_TO_LE(4 * 4096);
    c->pbl_addr = GUINT64_TO_LE(w->mr_pbl);
    c->npages = GUINT32_TO_LE(4);
    c->page_shift = 12;
    c->pbl_levels = 1;
    c->key_tag = GUINT32_TO_LE(0x5a);
}

/* A physical MR (no page list) with key tag @tag. */
static void phys_mr(World *w, struct vhca_mr_create *c, uint8_t tag)
{
    memset(c, 0, sizeof(*c));
    c->pdn = GUINT32_TO_LE(w->pdn);
    c->access = GUINT32_TO_LE(VHCA_ACCESS_LOCAL_WRITE);
    c->iova = GUINT64_TO_LE(w->zero_page);
    c->length = GUINT64_TO_LE(4096);
    c->flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    c->key_tag = GUINT32_TO_LE(tag);
}

static void good_eq(World *w, struct vhca_eq_create *c)
{
    memset(c, 0, sizeof(*c));
    c->pbl_addr = GUINT64_TO_LE(w->eq_pbl);
    c->npages = GUINT32_TO_LE(2);
    c->log_size = 9;
    c->vector = GUINT32_TO_LE(VHCA_VECTOR_FIRST_COMP);
}

static void good_cq(World *w, struct vhca_cq_create *c)
{
    memset(c, 0, sizeof(*c));
    c->pbl_addr = GUINT64_TO_LE(w->cq_pbl);
    c->npages = GUINT32_TO_LE(2);
    c->log_size = 8;
    c->eqn = GUINT32_TO_LE(w->eqn);
    c->db_page = GUINT32_TO_LE(w->page);
    c->dbrec_addr = GUINT64_TO_LE(w->cq_dbrec);
}

/* The send CQ (which never holds a CQE) to a fresh ring of 2^8 entries. */
static void good_resize(World *w, struct vhca_cq_resize *c)
{
    memset(c, 0, sizeof(*c));
    c->cqn = GUINT32_TO_LE(w->scqn);
    c->log_size = 8;
    c->pbl_addr = GUINT64_TO_LE(w->resize_pbl);
    c->npages = GUINT32_TO_LE(2);
}

static void good_qp(World *w, struct vhca_qp_create *c)
{
    memset(c, 0, sizeof(*c));
    c->type = VHCA_QPT_RC;
    c->sq_log_size = 5;
    c->rq_log_size = 5;
    c->pdn = GUINT32_TO_LE(w->pdn);
    c->send_cqn = GUINT32_TO_LE(w->scqn);
    c->recv_cqn = GUINT32_TO_LE(w->rcqn);
    c->sq_pbl_addr = GUINT64_TO_LE(w->sq_pbl);
    c->rq_pbl_addr = GUINT64_TO_LE(w->rq_pbl);
    c->sq_npages = GUINT32_TO_LE(2);
    c->rq_npages = GUINT32_TO_LE(1);
    c->db_page = GUINT32_TO_LE(w->page);
}

static void good_srq(World *w, struct vhca_srq_create *c)
{
    memset(c, 0, sizeof(*c));
    c->pdn = GUINT32_TO_LE(w->pdn);
    c->db_page = GUINT32_TO_LE(w->page);
    c->pbl_addr = GUINT64_TO_LE(w->srq_pbl);
    c->npages = GUINT32_TO_LE(1);
    c->log_size = 4;
    c->ci_addr = GUINT64_TO_LE(w->srq_ci);
}

/*
 * MODIFY_SRQ arming the limit at 1 (QUERY_SRQ: the SRQ alone); the
 * fields of a MAX_WR to a new ring of 16 are there for the rows that
 * set that bit.
 */
static void good_srq_attr(World *w, struct vhca_srq_attr *a, uint16_t opcode)
{
    memset(a, 0, sizeof(*a));
    a->srqn = GUINT32_TO_LE(w->srqn);
    if (opcode == VHCA_CMD_MODIFY_SRQ) {
        a->attr_mask = GUINT32_TO_LE(VHCA_SRQ_LIMIT);
        a->limit = GUINT32_TO_LE(1);
        a->log_size = 4;
        a->pbl_addr = GUINT64_TO_LE(w->srq_new_pbl);
        a->npages = GUINT32_TO_LE(1);
    }
}

/* Valid values for every attribute, the QP staying in @state. */
static void good_attr(World *w, struct vhca_qp_attr *a, uint8_t state)
{
    static const uint8_t dmac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

    memset(a, 0, sizeof(*a));
    a->qpn = GUINT32_TO_LE(w->qpn);
    a->attr_mask = GUINT32_TO_LE(VHCA_QP_STATE);
    a->qp_state = state;
    a->cur_qp_state = state;
    a->path_mtu = VHCA_IB_MTU_1024;
    a->timeout = 14;
    a->retry_cnt = 7;
    a->rnr_retry = 7;
    a->min_rnr_timer = 12;
    a->max_rd_atomic = 1;
    a->max_dest_rd_atomic = 1;
    a->sgid_index = 0;
    a->hop_limit = 64;
    a->port = 1;
    a->qp_access_flags = GUINT32_TO_LE(VHCA_ACCESS_REMOTE_WRITE |
                                       VHCA_ACCESS_REMOTE_READ);
    a->dest_qp_num = GUINT32_TO_LE(0x123);
    a->rq_psn = GUINT32_TO_LE(0x1000);
    a->sq_psn = GUINT32_TO_LE(0x2000);
    a->qkey = GUINT32_TO_LE(0x11111111);
    memcpy(a->dgid, remote_gid, sizeof(a->dgid));
    memcpy(a->dmac, dmac, sizeof(a->dmac));
}

/* The command of @opcode with good input, as the world allows. */
static void good_command(World *w, uint16_t opcode, Cmd *c)
{
    switch (opcode) {
    case VHCA_CMD_QUERY_DEVICE: {
        /* A page that shows whatever the device writes into it. */
        struct vhca_cmd_dma_in in;

        memset(c, 0, sizeof(*c));
        c->opcode = opcode;
        c->mbox_len = 4096;
        c->mbox_addr = vhca_dut_alloc(w->dut, c->mbox_len);
        c->mbox = g_malloc(c->mbox_len);
        memset(c->mbox, 0xaa, c->mbox_len);
        in.addr = GUINT64_TO_LE(c->mbox_addr);
        in.len = GUINT32_TO_LE(sizeof(struct vhca_device_attr));
        in.rsvd = 0;
        memcpy(c->in, &in, sizeof(in));
        c->in_len = sizeof(in);
        return;
    }
    case VHCA_CMD_QUERY_PORT: {
        struct vhca_cmd_port_in in = { .port = 1 };

        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_ADD_GID:
    case VHCA_CMD_DEL_GID: {
        struct vhca_cmd_gid_in in = {
            .index = GUINT16_TO_LE(1),
            .port = 1,
            .type = VHCA_GID_TYPE_ROCE_V2_IPV4,
        };

        memcpy(in.gid, remote_gid, sizeof(in.gid));
        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_SET_MAC: {
        struct vhca_cmd_mac_in in = {
            .mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },
        };

        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_SET_MTU: {
        struct vhca_cmd_mtu_in in = { .mtu = GUINT32_TO_LE(1500) };

        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_SET_RX_FILTER: {
        /* Three groups: 01:00:5e:07:07:00, ..:01, ..:02. */
        struct vhca_rx_filter f;

        memset(&f, 0, sizeof(f));
        f.count = GUINT32_TO_LE(3);
        for (unsigned i = 0; i < 3; i++) {
            static const uint8_t mac[6] = { 0x01, 0x00, 0x5e, 7, 7, 0 };

            memcpy(f.mac[i], mac, sizeof(mac));
            f.mac[i][5] = i;
        }
        cmd_mailbox(w, c, opcode, &f, sizeof(f));
        return;
    }
    case VHCA_CMD_SET_CC:
    case VHCA_CMD_QUERY_CC: {
        /* Off, and the three parameters that may not be 0 at 1. */
        struct vhca_cc_query q;

        memset(&q, 0, sizeof(q));
        q.config.params[VHCA_CC_PARAM_RP_TIME_RESET] = GUINT32_TO_LE(1);
        q.config.params[VHCA_CC_PARAM_RP_MIN_RATE] = GUINT32_TO_LE(1);
        q.config.params[VHCA_CC_PARAM_RP_DCE_TCP_RTT] = GUINT32_TO_LE(1);
        cmd_mailbox(w, c, opcode, &q, opcode == VHCA_CMD_SET_CC ?
                    sizeof(q.config) : sizeof(q));
        return;
    }
    case VHCA_CMD_ATTACH_MCAST:
    case VHCA_CMD_DETACH_MCAST: {
        struct vhca_cmd_mcast_in in = { .qpn = GUINT32_TO_LE(w->ud_qpn) };

        memcpy(in.gid, group_gid, sizeof(in.gid));
        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_ALLOC_MW: {
        struct vhca_cmd_mw_in in = {
            .pdn = GUINT32_TO_LE(w->pdn),
            .type = VHCA_MW_TYPE_2,
            .key_tag = GUINT32_TO_LE(0x12),
        };

        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_DEALLOC_UCTX: {
        struct vhca_cmd_uctx_in in = { .db_page = GUINT32_TO_LE(w->page) };

        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_DESTROY_PD:
    case VHCA_CMD_DESTROY_MR:
    case VHCA_CMD_DESTROY_EQ:
    case VHCA_CMD_DESTROY_CQ:
    case VHCA_CMD_DESTROY_QP:
    case VHCA_CMD_DESTROY_SRQ:
    case VHCA_CMD_DEALLOC_XRCD:
    case VHCA_CMD_DEALLOC_MW: {
        uint32_t handle = opcode == VHCA_CMD_DEALLOC_XRCD ? w->xrcdn :
                          opcode == VHCA_CMD_DEALLOC_MW ? w->mw_key :
                          opcode == VHCA_CMD_DESTROY_PD ? w->pdn :
                          opcode == VHCA_CMD_DESTROY_MR ? w->key :
                          opcode == VHCA_CMD_DESTROY_EQ ? w->eqn :
                          opcode == VHCA_CMD_DESTROY_CQ ? w->scqn :
                          opcode == VHCA_CMD_DESTROY_SRQ ? w->srqn : w->qpn;
        struct vhca_cmd_obj_in in = { .handle = GUINT32_TO_LE(handle) };

        cmd_inline(c, opcode, &in, sizeof(in));
        return;
    }
    case VHCA_CMD_CREATE_MR: {
        struct vhca_mr_create m;

        good_mr(w, &m);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_CREATE_EQ: {
        struct vhca_eq_create m;

        good_eq(w, &m);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_CREATE_CQ: {
        struct vhca_cq_create m;

        good_cq(w, &m);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_CREATE_QP: {
        struct vhca_qp_create m;

        good_qp(w, &m);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_CREATE_SRQ: {
        struct vhca_srq_create m;

        good_srq(w, &m);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_MODIFY_SRQ:
    case VHCA_CMD_QUERY_SRQ: {
        struct vhca_srq_attr m;

        good_srq_attr(w, &m, opcode);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_RESIZE_CQ: {
        struct vhca_cq_resize m;

        good_resize(w, &m);
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    case VHCA_CMD_MODIFY_QP:
    case VHCA_CMD_QUERY_QP: {
        struct vhca_qp_attr m;

        good_attr(w, &m, w->row->qp_state);
        if (opcode == VHCA_CMD_QUERY_QP) {
            memset(&m, 0, sizeof(m));
            m.qpn = GUINT32_TO_LE(w->qpn);
        }
        cmd_mailbox(w, c, opcode, &m, sizeof(m));
        return;
    }
    default:
        /*
         * NOP, ALLOC_UCTX, CREATE_PD, ALLOC_XRCD, unknown opcodes: no
         * input.
         */
        cmd_inline(c, opcode, NULL, 0);
        return;
    }
}

/* ---- building it ------------------------------------------------------ */

static void modify_qp(World *w, uint8_t from, uint8_t to, uint32_t mask)
{
    struct vhca_qp_attr a;
    Cmd c;

    good_attr(w, &a, from);
    a.qp_state = to;
    a.attr_mask = GUINT32_TO_LE(VHCA_QP_STATE | mask);
    cmd_mailbox(w, &c, VHCA_CMD_MODIFY_QP, &a, sizeof(a));
    must(w, &c, "MODIFY_QP on the way to the case's state");
}

/* Walk the RC QP from RESET to @state (RESET, INIT, RTR, RTS or SQD). */
static void qp_bring_to(World *w, uint8_t state)
{
    static const uint32_t req[] = {
        [INIT] = INIT_REQ, [RTR] = RTR_REQ, [RTS] = RTS_REQ, [SQD] = 0,
    };

    g_assert_cmpuint(state, <=, SQD);
    for (uint8_t s = INIT; s <= state; s++) {
        modify_qp(w, s - 1, s, req[s]);
    }
}

/*
 * Move the RC QP to ERR and flush @count receive WQEs (wr_id 0x100 + i)
 * to the receive CQ, which nobody polls: a RQ doorbell on a QP in ERR
 * completes what it posts at once (spec, "Queue pairs").
 */
static void flush_recvs(World *w, uint32_t count)
{
    uint32_t pi = 0;

    modify_qp(w, w->row->qp_state, VHCA_QPS_ERR, 0);
    for (uint32_t i = 0; i < 32; i++) {
        uint64_t wr_id = GUINT64_TO_LE(0x100 + i);

        vhca_dut_write(w->dut, w->rq_pages +
                       i * sizeof(struct vhca_recv_wqe) +
                       offsetof(struct vhca_recv_wqe, wr_id), &wr_id,
                       sizeof(wr_id));
    }
    while (pi < count) {
        pi += MIN(count - pi, 32);      /* the RQ holds 2^5 */
        vhca_dut_doorbell(w->dut, w->page, VHCA_DB_RQ, w->qpn, pi);
    }
}

/* Create one object of @kind with the good command; returns its handle. */
static uint32_t create(World *w, uint16_t opcode, uint32_t *key)
{
    struct vhca_cmd_obj_out out;
    Cmd c;

    good_command(w, opcode, &c);
    out = must(w, &c, "a create");
    w->live[created_kind(opcode)]++;
    if (key) {
        *key = out.key;
    }
    return out.handle;
}

static uint32_t create_qp_of_type(World *w, uint8_t type)
{
    struct vhca_qp_create q;
    Cmd c;

    good_qp(w, &q);
    q.type = type;
    cmd_mailbox(w, &c, VHCA_CMD_CREATE_QP, &q, sizeof(q));
    w->live[OBJ_QP]++;
    return must(w, &c, "CREATE_QP").handle;
}

static void attach(World *w, uint32_t qpn, const uint8_t gid[16])
{
    struct vhca_cmd_mcast_in in = { .qpn = GUINT32_TO_LE(qpn) };

    memcpy(in.gid, gid, sizeof(in.gid));
    must_inline(w, VHCA_CMD_ATTACH_MCAST, &in, sizeof(in), "ATTACH_MCAST");
}

static uint32_t create_mr_tagged(World *w, uint8_t tag, uint32_t *key)
{
    struct vhca_mr_create m;
    struct vhca_cmd_obj_out out;
    Cmd c;

    phys_mr(w, &m, tag);
    cmd_mailbox(w, &c, VHCA_CMD_CREATE_MR, &m, sizeof(m));
    out = must(w, &c, "CREATE_MR");
    w->live[OBJ_MR]++;
    *key = out.key;
    return out.handle;
}

/*
 * Every case has: GID 0, a user context, a PD, a completion EQ, a send
 * and a receive CQ, and one destroyed object of each kind (their handles
 * are the "DEAD" values); the good inputs' memory.  The row adds an MR,
 * an RC QP in a given state, or fills the table its command creates in.
 */
static void world_build(World *w)
{
    const VhcaAdminCase *row = w->row;
    struct vhca_cmd_dma_in qd;
    struct vhca_cmd_gid_in gid = {
        .index = 0, .port = 1, .type = VHCA_GID_TYPE_ROCE_V2_IPV4,
    };
    uint64_t buf;
    Cmd c;

    w->dut = vhca_dut_start(row->cfg ? row->cfg : &case_cfg);

    buf = vhca_dut_alloc(w->dut, sizeof(w->dev));
    qd.addr = GUINT64_TO_LE(buf);
    qd.len = GUINT32_TO_LE(sizeof(w->dev));
    qd.rsvd = 0;
    must_inline(w, VHCA_CMD_QUERY_DEVICE, &qd, sizeof(qd), "QUERY_DEVICE");
    vhca_dut_read(w->dut, buf, &w->dev, sizeof(w->dev));
#define TO_HOST(f) w->dev.f = GUINT32_FROM_LE(w->dev.f)
    TO_HOST(max_qp);
    TO_HOST(max_cq);
    TO_HOST(max_mr);
    TO_HOST(max_pd);
    TO_HOST(max_qp_rd_atom);
    TO_HOST(max_qp_init_rd_atom);
    TO_HOST(max_uctx);
    TO_HOST(num_comp_vectors);
    TO_HOST(gid_tbl_len);
    TO_HOST(max_srq);
    TO_HOST(max_xrcd);
    TO_HOST(max_mw);
#undef TO_HOST

    memcpy(gid.gid, local_gid, sizeof(gid.gid));
    must_inline(w, VHCA_CMD_ADD_GID, &gid, sizeof(gid), "ADD_GID 0");

    w->zero_page = vhca_dut_alloc(w->dut, 4096);
    w->mr_pbl = pages_with_list(w, 4, &w->mr_pages);
    w->eq_pbl = pages_with_list(w, 2, NULL);
    w->cq_pbl = pages_with_list(w, 2, &w->cq_pages);
    w->cq_dbrec = vhca_dut_alloc(w->dut, 4);
    w->sq_pbl = pages_with_list(w, 2, NULL);
    w->rq_pbl = pages_with_list(w, 1, &w->rq_pages);
    w->resize_pbl = pages_with_list(w, 2, NULL);
    w->srq_pbl = pages_with_list(w, 1, NULL);
    w->srq_new_pbl = pages_with_list(w, 1, NULL);
    w->srq_ci = vhca_dut_alloc(w->dut, 4);

    w->page = create(w, VHCA_CMD_ALLOC_UCTX, NULL);
    w->pdn = create(w, VHCA_CMD_CREATE_PD, NULL);
    {
        struct vhca_eq_create e;

        /* Its own ring: the good CREATE_EQ's may be made again and again. */
        good_eq(w, &e);
        e.pbl_addr = GUINT64_TO_LE(pages_with_list(w, 1, NULL));
        e.npages = GUINT32_TO_LE(1);
        e.log_size = 4;
        cmd_mailbox(w, &c, VHCA_CMD_CREATE_EQ, &e, sizeof(e));
        w->eqn = must(w, &c, "CREATE_EQ").handle;
        w->live[OBJ_EQ]++;
    }
    w->scqn = create(w, VHCA_CMD_CREATE_CQ, NULL);
    w->rcqn = create(w, VHCA_CMD_CREATE_CQ, NULL);

    /* An MR index freed, then (W_MR) taken again under another tag. */
    create_mr_tagged(w, 0x41, &w->dead_key);
    must_destroy(w, OBJ_MR, w->dead_key);
    if (row->world & W_MR) {
        create_mr_tagged(w, 0x42, &w->key);
        g_assert_cmphex(w->key >> 8, ==, w->dead_key >> 8);
    }
    if (row->world & W_MW) {
        struct vhca_cmd_mw_in in = {
            .pdn = GUINT32_TO_LE(w->pdn),
            .type = VHCA_MW_TYPE_1,
            .key_tag = GUINT32_TO_LE(0x43),
        };
        Cmd mw;

        cmd_inline(&mw, VHCA_CMD_ALLOC_MW, &in, sizeof(in));
        w->mw_key = must(w, &mw, "ALLOC_MW").key;
        w->live[OBJ_MW]++;
    }
    if (row->world & W_QP) {
        w->qpn = create(w, VHCA_CMD_CREATE_QP, NULL);
        qp_bring_to(w, row->qp_state);
    }
    if (row->world & W_SRQ) {
        w->srqn = create(w, VHCA_CMD_CREATE_SRQ, NULL);
    }
    if (row->world & W_SRQ_QP) {
        struct vhca_qp_create q;

        good_qp(w, &q);
        g_assert_cmpuint(w->srqn, !=, 0);
        q.srqn = GUINT32_TO_LE(w->srqn);
        q.rq_log_size = 0;
        q.rq_pbl_addr = 0;
        q.rq_npages = 0;
        cmd_mailbox(w, &c, VHCA_CMD_CREATE_QP, &q, sizeof(q));
        w->srq_qpn = must(w, &c, "CREATE_QP on the SRQ").handle;
        w->live[OBJ_QP]++;
    }
    if (row->world & W_XRCD) {
        w->xrcdn = create(w, VHCA_CMD_ALLOC_XRCD, NULL);
    }
    if (row->world & W_XRC_SRQ) {
        struct vhca_srq_create q;

        good_srq(w, &q);
        q.type = VHCA_SRQT_XRC;
        g_assert_cmpuint(w->xrcdn, !=, 0);
        q.xrcdn = GUINT32_TO_LE(w->xrcdn);
        q.cqn = GUINT32_TO_LE(w->rcqn);
        cmd_mailbox(w, &c, VHCA_CMD_CREATE_SRQ, &q, sizeof(q));
        w->xrc_srqn = must(w, &c, "CREATE_SRQ of an XRC SRQ").handle;
        w->live[OBJ_SRQ]++;
    }
    if (row->world & W_XRC_TGT) {
        struct vhca_qp_create q;

        memset(&q, 0, sizeof(q));
        q.type = VHCA_QPT_XRC_TGT;
        g_assert_cmpuint(w->xrcdn, !=, 0);
        q.xrcdn = GUINT32_TO_LE(w->xrcdn);
        cmd_mailbox(w, &c, VHCA_CMD_CREATE_QP, &q, sizeof(q));
        w->tgt_qpn = must(w, &c, "CREATE_QP of an XRC target").handle;
        w->live[OBJ_QP]++;
    }
    if (row->world & W_GSI) {
        g_assert_cmpuint(create_qp_of_type(w, VHCA_QPT_GSI), ==,
                         VHCA_GSI_QPN);
    }
    if (row->world & W_UD) {
        w->ud_qpn = create_qp_of_type(w, VHCA_QPT_UD);
    }
    if (row->world & W_MEMBER) {
        attach(w, w->ud_qpn, group_gid);
    }
    if (row->world & W_GROUP_FULL) {
        for (unsigned i = 0; i < VHCA_MAX_MCAST_QPS; i++) {
            attach(w, create_qp_of_type(w, VHCA_QPT_UD), group_gid);
        }
    }
    if (row->world & W_GROUPS_FULL) {
        for (unsigned i = 0; i < VHCA_MAX_MCAST_GROUPS; i++) {
            uint8_t gid[16];

            memcpy(gid, group_gid, sizeof(gid));
            gid[13] = 2;                    /* ::ffff:239.2.0.i */
            gid[14] = 0;
            gid[15] = i;
            attach(w, w->ud_qpn, gid);
        }
    }

    /* Objects that existed: their handles name nothing now. */
    w->dead_page = create(w, VHCA_CMD_ALLOC_UCTX, NULL);
    must_destroy(w, OBJ_UCTX, w->dead_page);
    w->dead_pdn = create(w, VHCA_CMD_CREATE_PD, NULL);
    must_destroy(w, OBJ_PD, w->dead_pdn);
    w->dead_eqn = create(w, VHCA_CMD_CREATE_EQ, NULL);
    must_destroy(w, OBJ_EQ, w->dead_eqn);
    w->dead_cqn = create(w, VHCA_CMD_CREATE_CQ, NULL);
    must_destroy(w, OBJ_CQ, w->dead_cqn);
    w->dead_qpn = create(w, VHCA_CMD_CREATE_QP, NULL);
    must_destroy(w, OBJ_QP, w->dead_qpn);
    if (w->dev.max_srq > w->live[OBJ_SRQ]) {
        w->dead_srqn = create(w, VHCA_CMD_CREATE_SRQ, NULL);
        must_destroy(w, OBJ_SRQ, w->dead_srqn);
    }
    if (w->dev.max_xrcd > w->live[OBJ_XRCD]) {
        w->dead_xrcdn = create(w, VHCA_CMD_ALLOC_XRCD, NULL);
        must_destroy(w, OBJ_XRCD, w->dead_xrcdn);
    }

    /* Last: the receive CQ's CQEs must not meet the dead QP's creation. */
    if (row->world & W_PENDING) {
        flush_recvs(w, PENDING_CQES);
    }
    if (row->world & W_CQ_ERROR) {
        /* One more than the 2^8 entries: the receive CQ overflows. */
        flush_recvs(w, 257);
    }

    if (row->world & W_FULL) {
        ObjKind kind = created_kind(row->opcode);

        g_assert(kind != OBJ_NONE);
        while (w->live[kind] < table_size(w, kind)) {
            create(w, row->opcode, NULL);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Running a case                                                         */
/* ---------------------------------------------------------------------- */

static uint32_t need(uint32_t value, const char *what)
{
    if (!value) {
        g_error("the case uses %s, which its world does not have", what);
    }
    return value;
}

static uint64_t not_ram(World *w, uint64_t len)
{
    g_assert_cmpuint(len, >=, 2);
    switch (w->bad_dma) {
    case VHCA_BAD_DMA_ACROSS_RAM_END:
        return vhca_dut_ram_end(w->dut) - len / 2;
    case VHCA_BAD_DMA_WRAPS:
        return -(len / 2);
    default:
        return vhca_dut_hole(w->dut, w->bad_dma);
    }
}

static uint64_t resolve(World *w, CaseValue v)
{
    uint64_t k = v.k;

    switch (v.ref) {
    case V_LIT:
        return k;
    case V_PAGE:
        return w->page + k;
    case V_DEAD_PAGE:
        return need(w->dead_page, "a freed page") + k;
    case V_PDN:
        return w->pdn + k;
    case V_DEAD_PDN:
        return w->dead_pdn + k;
    case V_EQN:
        return w->eqn + k;
    case V_DEAD_EQN:
        return w->dead_eqn + k;
    case V_SCQN:
        return w->scqn + k;
    case V_RCQN:
        return w->rcqn + k;
    case V_DEAD_CQN:
        return w->dead_cqn + k;
    case V_QPN:
        return need(w->qpn, "the QP (W_QP)") + k;
    case V_DEAD_QPN:
        return w->dead_qpn + k;
    case V_UD_QPN:
        return need(w->ud_qpn, "the UD QP (W_UD)") + k;
    case V_SRQN:
        return need(w->srqn, "the SRQ (W_SRQ)") + k;
    case V_DEAD_SRQN:
        return need(w->dead_srqn, "a destroyed SRQ") + k;
    case V_SRQ_CI:
        return w->srq_ci + k;
    case V_XRCDN:
        return need(w->xrcdn, "the XRC domain (W_XRCD)") + k;
    case V_DEAD_XRCDN:
        return need(w->dead_xrcdn, "a freed XRC domain") + k;
    case V_XRC_SRQN:
        return need(w->xrc_srqn, "the XRC SRQ (W_XRC_SRQ)") + k;
    case V_MAX_SRQ:
        return w->dev.max_srq + k;
    case V_KEY:
        return need(w->key, "the MR (W_MR)") + k;
    case V_MRN:
        return (need(w->key, "the MR (W_MR)") >> 8) + k;
    case V_MAX_MR:
        return w->dev.max_mr + k;
    case V_DEAD_KEY:
        return w->dead_key + k;
    case V_MW_KEY:
        return need(w->mw_key, "the memory window (W_MW)") + k;
    case V_DB_PAGES:
        return w->dev.max_uctx + k;
    case V_GID_TBL_LEN:
        return w->dev.gid_tbl_len + k;
    case V_VECTORS:
        return w->dev.num_comp_vectors + VHCA_VECTOR_FIRST_COMP + k;
    case V_RD_ATOM:
        return w->dev.max_qp_rd_atom + k;
    case V_INIT_RD_ATOM:
        return w->dev.max_qp_init_rd_atom + k;
    case V_MR_PAGES:
        return w->mr_pages + k;
    case V_ZERO_PAGE:
        return w->zero_page + k;
    case V_HOLE:
        return vhca_dut_hole(w->dut, (VhcaBadDma)k);
    case V_NOT_RAM:
        return not_ram(w, k);
    default:
        g_error("case value %d cannot be resolved here", v.ref);
    }
}

/* Write @value little-endian into @size bytes at @p. */
static void store_le(uint8_t *p, unsigned size, uint64_t value)
{
    for (unsigned i = 0; i < size; i++) {
        p[i] = value >> (8 * i);
    }
}

/* Apply the row's edits to @c; returns the values written, in order. */
static void apply_edits(World *w, Cmd *c, uint64_t values[6],
                        uint8_t saved_pbl[8])
{
    const VhcaAdminCase *row = w->row;

    for (unsigned i = 0; i < G_N_ELEMENTS(row->edit); i++) {
        const CaseEdit *e = &row->edit[i];
        uint8_t bytes[8];

        values[i] = 0;
        if (e->target == T_NONE) {
            continue;
        }
        values[i] = resolve(w, e->v);
        g_assert_cmpuint(e->size, <=, sizeof(bytes));
        store_le(bytes, e->size, values[i]);
        switch (e->target) {
        case T_IN:
            g_assert_cmpuint(e->off + e->size, <=, c->in_len);
            memcpy(c->in + e->off, bytes, e->size);
            break;
        case T_MBOX:
            g_assert_cmpuint(e->off + e->size, <=, c->mbox_len);
            memcpy(c->mbox + e->off, bytes, e->size);
            break;
        case T_MR_PBL:
            g_assert_cmpuint(e->off + e->size, <=, 8);
            vhca_dut_read(w->dut, w->mr_pbl, saved_pbl, 8);
            vhca_dut_write(w->dut, w->mr_pbl + e->off, bytes, e->size);
            break;
        case T_RESIZE_PBL:
            /* A list only this command uses: it needs no restoring. */
            g_assert_cmpuint(e->off + e->size, <=, 16);
            vhca_dut_write(w->dut, w->resize_pbl + e->off, bytes, e->size);
            break;
        case T_DBREC:
            g_assert_cmpuint(e->off + e->size, <=, 4);
            vhca_dut_write(w->dut, w->cq_dbrec + e->off, bytes, e->size);
            break;
        default:
            g_assert_not_reached();
        }
    }
}

/*
 * For a CREATE_* / ALLOC_UCTX: the handle the good command gets now
 * (then freed again).  Handles are the lowest free ones, so if a failed
 * command had created something, the probe after it gets another.
 */
static uint32_t probe_handle(World *w)
{
    ObjKind kind = created_kind(w->row->opcode);
    struct vhca_cmd_obj_out out;
    Cmd c;

    good_command(w, w->row->opcode, &c);
    out = must(w, &c, "the good command");
    /* MRs and windows go by their key. */
    must_destroy(w, kind, kind == OBJ_MR || kind == OBJ_MW ? out.key
                                                           : out.handle);
    w->live[kind]++;            /* must_destroy took one off */
    return out.handle;
}

static void query_port(World *w, struct vhca_port_attr *attr)
{
    struct vhca_cmd_port_in in = { .port = 1 };

    g_assert_cmpuint(vhca_dut_cmd(w->dut, VHCA_CMD_QUERY_PORT, &in,
                                  sizeof(in), attr, NULL), ==, VHCA_ST_OK);
}

static void query_srq(World *w, struct vhca_srq_attr *a)
{
    Cmd c;

    good_command(w, VHCA_CMD_QUERY_SRQ, &c);
    g_assert_cmpuint(cmd_run(w, &c, NULL, NULL), ==, VHCA_ST_OK);
    vhca_dut_read(w->dut, c.mbox_addr, a, sizeof(*a));
    cmd_free(&c);
}

static void query_qp(World *w, struct vhca_qp_attr *a)
{
    Cmd c;

    good_command(w, VHCA_CMD_QUERY_QP, &c);
    g_assert_cmpuint(cmd_run(w, &c, NULL, NULL), ==, VHCA_ST_OK);
    vhca_dut_read(w->dut, c.mbox_addr, a, sizeof(*a));
    cmd_free(&c);
}

/* The CQs' ring pages (both CQs share them) and their doorbell record. */
typedef struct CqMemory {
    uint8_t ring[2 * 4096];
    uint32_t dbrec;
} CqMemory;

static void cq_memory(World *w, CqMemory *m)
{
    vhca_dut_read(w->dut, w->cq_pages, m->ring, sizeof(m->ring));
    vhca_dut_read(w->dut, w->cq_dbrec, &m->dbrec, sizeof(m->dbrec));
}

/*
 * After a refused RESIZE_CQ: the device still has the receive CQ where it
 * was, its CQEs unconsumed: a good resize to a fresh ring moves them all
 * (or, in error, is refused again); the send CQ resizes with nothing.
 */
static void check_cqs_intact(World *w)
{
    uint32_t pending = w->row->world & W_PENDING ? PENDING_CQES : 0;
    struct vhca_cmd_obj_out out;
    struct vhca_cq_resize r;
    uint64_t ring;
    Cmd c;

    good_resize(w, &r);
    cmd_mailbox(w, &c, VHCA_CMD_RESIZE_CQ, &r, sizeof(r));
    g_assert_cmpuint(cmd_run(w, &c, &out, NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(out.handle, ==, 0);
    cmd_free(&c);

    r.cqn = GUINT32_TO_LE(w->rcqn);
    r.pbl_addr = GUINT64_TO_LE(pages_with_list(w, 2, &ring));
    cmd_mailbox(w, &c, VHCA_CMD_RESIZE_CQ, &r, sizeof(r));
    if (w->row->world & W_CQ_ERROR) {
        g_assert_cmpuint(cmd_run(w, &c, NULL, NULL), ==, VHCA_ST_BAD_STATE);
        cmd_free(&c);
        return;
    }
    g_assert_cmpuint(cmd_run(w, &c, &out, NULL), ==, VHCA_ST_OK);
    g_assert_cmpuint(out.handle, ==, pending);
    cmd_free(&c);
    for (uint32_t i = 0; i < pending; i++) {
        struct vhca_cqe cqe;

        vhca_dut_read(w->dut, ring + i * sizeof(cqe), &cqe, sizeof(cqe));
        g_assert_cmphex(GUINT64_FROM_LE(cqe.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(cqe.status, ==, VHCA_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(cqe.owner, ==, 1);
    }
}

typedef struct CaseRun {
    const VhcaAdminCase *row;
    VhcaBadDma bad_dma;
} CaseRun;

static void run_case(const void *data)
{
    const CaseRun *run = data;
    const VhcaAdminCase *row = run->row;
    World w = { .row = row, .bad_dma = run->bad_dma };
    bool probe = created_kind(row->opcode) != OBJ_NONE &&
                 !(row->world & W_FULL);
    struct vhca_port_attr port_before, port_after;
    struct vhca_qp_attr qp_before, qp_after;
    struct vhca_srq_attr srq_before, srq_after;
    g_autofree CqMemory *cq_before = g_new0(CqMemory, 1);
    g_autofree CqMemory *cq_after = g_new0(CqMemory, 1);
    uint64_t commands, errors, values[6];
    uint8_t saved_pbl[8];
    uint32_t handle = 0, syndrome;
    int guest_errors;
    uint8_t status;
    Cmd c;

    world_build(&w);
    if (probe) {
        handle = probe_handle(&w);
    }
    good_command(&w, row->opcode, &c);
    apply_edits(&w, &c, values, saved_pbl);
    cq_memory(&w, cq_before);

    query_port(&w, &port_before);
    if (row->world & W_QP) {
        query_qp(&w, &qp_before);
    }
    if (row->world & W_SRQ) {
        query_srq(&w, &srq_before);
    }
    commands = vhca_dut_counter(w.dut, VHCA_CNT_ADMIN_COMMANDS);
    errors = vhca_dut_counter(w.dut, VHCA_CNT_ADMIN_ERRORS);
    guest_errors = vhca_dut_guest_errors(w.dut);

    status = cmd_run(&w, &c, NULL, &syndrome);

    g_assert_cmpuint(status, ==, row->status);
    if (row->syndrome.ref == V_EDIT) {
        g_assert_cmphex(syndrome, ==, (uint32_t)values[row->syndrome.k]);
    } else if (row->syndrome.ref != V_NONE) {
        g_assert_cmphex(syndrome, ==, (uint32_t)resolve(&w, row->syndrome));
    }
    g_assert_cmpuint(vhca_dut_counter(w.dut, VHCA_CNT_ADMIN_COMMANDS), ==,
                     commands + 1);
    g_assert_cmpuint(vhca_dut_counter(w.dut, VHCA_CNT_ADMIN_ERRORS), ==,
                     errors + 1);
    if (guest_errors >= 0) {
        /*
         * Running out of objects (the tables QUERY_DEVICE sizes) is not
         * the guest's fault; everything else is.
         */
        g_assert_cmpint(vhca_dut_guest_errors(w.dut) - guest_errors, ==,
                        row->world & W_FULL ? 0 : 1);
    }

    /* A failed command changes nothing (spec "RDMA resources"). */
    if (c.mbox_addr) {
        g_autofree uint8_t *now = g_malloc(c.mbox_len);

        vhca_dut_read(w.dut, c.mbox_addr, now, c.mbox_len);
        g_assert_cmpmem(now, c.mbox_len, c.mbox, c.mbox_len);
    }
    query_port(&w, &port_after);
    g_assert_cmpmem(&port_after, sizeof(port_after), &port_before,
                    sizeof(port_before));
    if (row->world & W_QP) {
        query_qp(&w, &qp_after);
        g_assert_cmpmem(&qp_after, sizeof(qp_after), &qp_before,
                        sizeof(qp_before));
    }
    if (row->world & W_SRQ) {
        query_srq(&w, &srq_after);
        g_assert_cmpmem(&srq_after, sizeof(srq_after), &srq_before,
                        sizeof(srq_before));
    }
    if (row->edit[0].target == T_MR_PBL) {
        vhca_dut_write(w.dut, w.mr_pbl, saved_pbl, 8);
    }
    /* No CQE moved, none written, the record as it was (RESIZE_CQ). */
    cq_memory(&w, cq_after);
    g_assert_cmpmem(cq_after, sizeof(*cq_after), cq_before,
                    sizeof(*cq_before));
    if (row->opcode == VHCA_CMD_RESIZE_CQ) {
        uint32_t zero = 0;

        vhca_dut_write(w.dut, w.cq_dbrec, &zero, sizeof(zero));
        check_cqs_intact(&w);
    }
    if (probe) {
        g_assert_cmpuint(probe_handle(&w), ==, handle);
    }

    /* The device still works. */
    g_assert_cmpuint(vhca_dut_cmd(w.dut, VHCA_CMD_NOP, NULL, 0, NULL, NULL),
                     ==, VHCA_ST_OK);
    g_assert_cmphex(vhca_dut_reg(w.dut, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    g_assert_cmphex(vhca_dut_reg(w.dut, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);
    g_assert_cmphex(vhca_dut_reg(w.dut, VHCA_REG_STATUS) &
                    VHCA_STATUS_ADMQ_ERROR, ==, 0);
    vhca_dut_check_intact(w.dut);

    cmd_free(&c);
    vhca_dut_stop(w.dut);
}

unsigned vhca_admin_cases_register(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        const VhcaAdminCase *row = &cases[i];
        unsigned kinds = row->each_bad_dma ? VHCA_BAD_DMA_MAX : 1;

        /* Every row is a command the device must refuse. */
        g_assert_cmpuint(row->status, !=, VHCA_ST_OK);
        for (unsigned k = 0; k < kinds; k++) {
            CaseRun *run = g_new0(CaseRun, 1);
            g_autofree char *path = NULL;

            run->row = row;
            run->bad_dma = k;
            if (row->each_bad_dma) {
                path = g_strdup_printf("/vhca/admin-cases/%s/%s", row->name,
                                       vhca_bad_dma_kind_name(k));
            } else {
                path = g_strdup_printf("/vhca/admin-cases/%s", row->name);
            }
            /* Registered tests live as long as the program: run too. */
            vhca_dut_add_test(path, row->cfg ? row->cfg : &case_cfg, run,
                              run_case);
            n++;
        }
    }
    return n;
}
