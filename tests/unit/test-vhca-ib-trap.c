/*
 * Unit tests of the SMA's traps (hw/vhca/engine/vhca-trap.c,
 * docs/specs/vhca.rst "Traps"): what raises trap 144 and trap 256, the
 * Trap SMP the driver receives on QP0 from SLID 0 and its Notice, when
 * no trap is sent, and that no packet from the wire can pass for one.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-ib.h"
#include "vhca-mad.h"
#include "vhca-node.h"
#include "vhca-wire.h"

#define OUR_LID     4
#define SM_LID      1
#define RECV_OFF    0x4000          /* where the SMI QP receives */

typedef struct TrapNode {
    Node n;
    TestQp data_qp;
} TrapNode;

/*
 * An IB node whose port an SM at SM_LID brought to @state with OUR_LID,
 * with its SMI QP in RTS (as n.qp, so that post_recv() and expect_cqe()
 * are its) and one receive posted.
 */
static void trap_node_init_state(TrapNode *t, uint8_t state)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    TestQp smi;

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&t->n, 1, VHCA_QPT_UD, &cfg);
    node_ib_set_port(&t->n, OUR_LID, SM_LID, state);
    node_ib_smi_qp(&t->n, &smi);
    t->data_qp = t->n.qp;
    t->n.qp = smi;
    post_recv(&t->n, 1, RECV_OFF, 512);
}

static void trap_node_init(TrapNode *t)
{
    trap_node_init_state(t, VHCA_PORT_ACTIVE);
}

static uint8_t modify_port(Node *n, uint32_t set, uint32_t clr)
{
    struct vhca_cmd_modify_port_in in = {
        .port = 1,
        .set_cap_mask = GUINT32_TO_LE(set),
        .clr_cap_mask = GUINT32_TO_LE(clr),
    };

    return admin_cmd(n->h, VHCA_CMD_MODIFY_PORT, 0x4d50, &in, sizeof(in),
                     NULL);
}

/* The driver's Set(NodeDescription) (IGNORE_MKEY, as vhcad_smp()). */
static void set_node_desc(Node *n, const char *desc)
{
    uint8_t data[VHCA_SMP_DATA_LEN] = { 0 };

    memcpy(data, desc, strlen(desc));
    node_ib_smp_set(n, VHCA_MAD_IFC_LOCAL | VHCA_MAD_IFC_IGNORE_MKEY,
                    VHCA_SMP_ATTR_NODE_DESC, 0, data);
}

/*
 * The next receive completion is a trap: a UD receive on the SMI QP from
 * QP0 at SLID 0, SL 0, P_Key index 0, whose buffer holds the GRH area
 * and a LID routed Trap(Notice) SMP with a new non-zero TID.  Returns
 * its Notice (the SMP's 64 bytes of data).
 */
static const uint8_t *expect_trap(Node *n, uint64_t wr_id, uint16_t trap,
                                  uint64_t *last_tid)
{
    const uint8_t *mad = ram_ptr(n->h, n->buf + RECV_OFF + VHCA_GRH_AREA_LEN,
                                 VHCA_MAD_SIZE);
    struct vhca_cqe cqe;
    uint64_t tid;

    cqe = expect_cqe(n, &n->rcq, wr_id, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    g_assert_cmpuint(GUINT32_FROM_LE(cqe.byte_len), ==,
                     VHCA_GRH_AREA_LEN + VHCA_MAD_SIZE);
    g_assert_cmphex(GUINT32_FROM_LE(cqe.src_qp), ==, VHCA_SMI_QPN);
    g_assert_cmphex(GUINT16_FROM_LE(cqe.slid), ==, 0);
    g_assert_cmpuint(cqe.sl, ==, 0);
    g_assert_cmphex(cqe.flags & VHCA_CQE_GRH, ==, 0);

    g_assert_cmpuint(mad[VHCA_MAD_BASE_VERSION], ==, 1);
    g_assert_cmphex(mad[VHCA_MAD_MGMT_CLASS], ==, VHCA_MGMT_CLASS_SUBN_LID);
    g_assert_cmpuint(mad[VHCA_MAD_CLASS_VERSION], ==, 1);
    g_assert_cmphex(mad[VHCA_MAD_METHOD], ==, VHCA_MAD_METHOD_TRAP);
    g_assert_cmphex(vhca_ld_be16(mad + VHCA_MAD_STATUS), ==, 0);
    g_assert_cmphex(vhca_ld_be16(mad + VHCA_MAD_ATTR_ID), ==,
                    VHCA_SMP_ATTR_NOTICE);
    g_assert_cmphex(vhca_ld_be64(mad + VHCA_SMP_MKEY), ==, 0);
    tid = vhca_ld_be64(mad + VHCA_MAD_TID);
    g_assert_cmphex(tid, !=, 0);
    g_assert_cmphex(tid, !=, *last_tid);
    *last_tid = tid;

    mad += VHCA_SMP_DATA;
    g_assert_cmpuint(vhca_mad_get(mad, VHCA_NOTICE_IS_GENERIC), ==, 1);
    g_assert_cmpuint(vhca_mad_get(mad, VHCA_NOTICE_PRODUCER_TYPE), ==,
                     VHCA_NOTICE_PRODUCER_CA);
    g_assert_cmpuint(vhca_mad_get(mad, VHCA_NOTICE_TRAP_NUMBER), ==, trap);
    g_assert_cmphex(vhca_mad_get(mad, VHCA_NOTICE_ISSUER_LID), ==, OUR_LID);
    g_assert_cmpuint(vhca_mad_get(mad, VHCA_NOTICE_TOGGLE_COUNT), ==, 0);
    return mad;
}

/* The port says it sends traps 144 of both kinds (14.2.5.6). */
static void test_capability_mask(void)
{
    TrapNode t;
    uint32_t cap;

    trap_node_init(&t);
    cap = t.n.h->core.ib.cap_mask;
    g_assert_cmphex(cap & VHCA_PORT_CAP_TRAP, !=, 0);
    g_assert_cmphex(cap & VHCA_PORT_CAP_CAP_MASK_NOTICE, !=, 0);
    g_assert_cmphex(cap & VHCA_PORT_CAP_OTHER_LOCAL_CHANGES, !=, 0);
    harness_free(t.n.h);
}

/* 144: MODIFY_PORT changed the CapabilityMask (an SM started here). */
static void test_cap_mask_change(void)
{
    uint64_t tid = 0;
    const uint8_t *notice;
    TrapNode t;

    trap_node_init(&t);
    g_assert_cmpuint(modify_port(&t.n, VHCA_PORT_CAP_IS_SM, 0), ==,
                     VHCA_ST_OK);
    harness_run(t.n.h);
    notice = expect_trap(&t.n, 1, VHCA_TRAP_LOCAL_CHANGES, &tid);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_NOTICE_TYPE), ==,
                     VHCA_NOTICE_TYPE_INFO);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP144_LID), ==, OUR_LID);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP144_OTHER_CHANGES), ==,
                     0);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP144_CAP_MASK), ==,
                    t.n.h->core.ib.cap_mask);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP144_CAP_MASK) &
                    VHCA_PORT_CAP_IS_SM, !=, 0);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 1);

    /* The same bits again change nothing: no trap. */
    post_recv(&t.n, 2, RECV_OFF, 512);
    g_assert_cmpuint(modify_port(&t.n, VHCA_PORT_CAP_IS_SM, 0), ==,
                     VHCA_ST_OK);
    harness_run(t.n.h);
    expect_no_cqe(&t.n, &t.n.rcq);
    /* Clearing IsSM (the SM stopped) is a change. */
    g_assert_cmpuint(modify_port(&t.n, 0, VHCA_PORT_CAP_IS_SM), ==,
                     VHCA_ST_OK);
    harness_run(t.n.h);
    notice = expect_trap(&t.n, 2, VHCA_TRAP_LOCAL_CHANGES, &tid);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP144_CAP_MASK) &
                    VHCA_PORT_CAP_IS_SM, ==, 0);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 2);
    harness_free(t.n.h);
}

/* 144: the node description changed (OtherLocalChanges, ChangeFlags). */
static void test_node_desc_change(void)
{
    uint64_t tid = 0;
    const uint8_t *notice;
    TrapNode t;

    trap_node_init(&t);
    set_node_desc(&t.n, "guest2 vhca0");
    harness_run(t.n.h);
    notice = expect_trap(&t.n, 1, VHCA_TRAP_LOCAL_CHANGES, &tid);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP144_OTHER_CHANGES), ==,
                     1);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP144_CHANGE_FLAGS), ==,
                    VHCA_TRAP144_NODE_DESC);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP144_CAP_MASK), ==,
                    t.n.h->core.ib.cap_mask);

    /* Written again unchanged: nothing to tell. */
    post_recv(&t.n, 2, RECV_OFF, 512);
    set_node_desc(&t.n, "guest2 vhca0");
    harness_run(t.n.h);
    expect_no_cqe(&t.n, &t.n.rcq);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 1);
    harness_free(t.n.h);
}

/*
 * 256: a directed route Set with the wrong M_Key, from the wire (no
 * IGNORE_MKEY): discarded without a response, and the trap names it,
 * its DrSLID and its return path.
 */
static void test_bad_mkey(void)
{
    uint8_t smp[VHCA_MAD_SIZE];
    uint8_t out[VHCA_MAD_SIZE];
    uint64_t tid = 0;
    const uint8_t *notice;
    TrapNode t;
    unsigned i;

    trap_node_init(&t);
    t.n.h->core.ib.mkey = 0x1122334455667788ull;
    t.n.h->core.ib.mkey_protect = 1;

    vhca_mad_init(smp, VHCA_MGMT_CLASS_SUBN_DR, VHCA_MAD_METHOD_SET,
                  VHCA_SMP_ATTR_PORT_INFO, 1, 0);
    smp[VHCA_MAD_HOP_PTR] = 2;
    smp[VHCA_MAD_HOP_CNT] = 2;
    vhca_st_be64(smp + VHCA_SMP_MKEY, 0xbad);
    vhca_st_be16(smp + VHCA_SMP_DR_SLID, 0xffff);
    for (i = 0; i < 3; i++) {
        smp[VHCA_SMP_DR_RETURN_PATH + i] = (uint8_t)(0x10 + i);
    }
    g_assert_cmpuint(node_ib_mad(&t.n, 0, smp, out), ==,
                     VHCA_MAD_RESULT_CONSUMED);
    g_assert_cmpuint(t.n.h->core.ib.mkey_violations, ==, 1);
    harness_run(t.n.h);

    notice = expect_trap(&t.n, 1, VHCA_TRAP_BAD_MKEY, &tid);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_NOTICE_TYPE), ==,
                     VHCA_NOTICE_TYPE_SECURITY);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP256_LID), ==, OUR_LID);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP256_DR_SLID), ==, 0xffff);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP256_METHOD), ==,
                    VHCA_MAD_METHOD_SET);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP256_ATTR_ID), ==,
                    VHCA_SMP_ATTR_PORT_INFO);
    g_assert_cmphex(vhca_mad_get(notice, VHCA_TRAP256_ATTR_MOD), ==, 1);
    g_assert_cmphex(vhca_ld_be64(notice + VHCA_TRAP256_MKEY), ==, 0xbad);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP256_DR_NOTICE), ==, 1);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP256_DR_TRUNCATED), ==, 0);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP256_DR_HOP_COUNT), ==, 2);
    g_assert_cmphex(notice[VHCA_TRAP256_DR_RETURN_PATH], ==, 0x10);
    g_assert_cmphex(notice[VHCA_TRAP256_DR_RETURN_PATH + 1], ==, 0x11);
    g_assert_cmphex(notice[VHCA_TRAP256_DR_RETURN_PATH + 2], ==, 0);

    /* A path longer than the Notice holds: truncated, flagged. */
    post_recv(&t.n, 2, RECV_OFF, 512);
    smp[VHCA_MAD_HOP_CNT] = 63;
    g_assert_cmpuint(node_ib_mad(&t.n, 0, smp, out), ==,
                     VHCA_MAD_RESULT_CONSUMED);
    harness_run(t.n.h);
    notice = expect_trap(&t.n, 2, VHCA_TRAP_BAD_MKEY, &tid);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP256_DR_TRUNCATED), ==, 1);
    g_assert_cmpuint(vhca_mad_get(notice, VHCA_TRAP256_DR_HOP_COUNT), ==,
                     VHCA_TRAP256_DR_PATH_MAX);

    /* The SM's TrapRepress with the right M_Key: taken, not answered. */
    smp[VHCA_MAD_MGMT_CLASS] = VHCA_MGMT_CLASS_SUBN_LID;
    smp[VHCA_MAD_METHOD] = VHCA_MAD_METHOD_TRAP_REPRESS;
    vhca_st_be16(smp + VHCA_MAD_ATTR_ID, VHCA_SMP_ATTR_NOTICE);
    vhca_st_be64(smp + VHCA_SMP_MKEY, t.n.h->core.ib.mkey);
    g_assert_cmpuint(node_ib_mad(&t.n, 0, smp, out), ==,
                     VHCA_MAD_RESULT_CONSUMED);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 2);
    harness_free(t.n.h);
}

/*
 * No trap without somewhere to send it: a port not ACTIVE (o14-3.2.1),
 * one with no master SM, or no SMI QP; and with no receive posted the
 * trap is the SMI QP's NO_RWQE drop.
 */
static void test_when_not_sent(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    TrapNode t;
    Node n;

    trap_node_init_state(&t, VHCA_PORT_ARMED);
    g_assert_cmpuint(modify_port(&t.n, VHCA_PORT_CAP_IS_SM, 0), ==,
                     VHCA_ST_OK);
    harness_run(t.n.h);
    expect_no_cqe(&t.n, &t.n.rcq);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 0);
    harness_free(t.n.h);

    /* ACTIVE but the SM never said where it is (MasterSMLID 0). */
    trap_node_init(&t);
    t.n.h->core.ib.sm_lid = 0;
    set_node_desc(&t.n, "no SM");
    harness_run(t.n.h);
    expect_no_cqe(&t.n, &t.n.rcq);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 0);
    harness_free(t.n.h);

    /* No SMI QP: the driver is not listening. */
    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&n, 1, VHCA_QPT_UD, &cfg);
    node_ib_set_port(&n, OUR_LID, SM_LID, VHCA_PORT_ACTIVE);
    g_assert_cmpuint(modify_port(&n, VHCA_PORT_CAP_IS_SM, 0), ==,
                     VHCA_ST_OK);
    harness_run(n.h);
    g_assert_cmpuint(counter(n.h, VHCA_CNT_SMA_TRAPS), ==, 0);
    g_assert_cmpuint(counter(n.h, VHCA_CNT_ROCE_RX_DROPPED), ==, 0);
    harness_free(n.h);

    /* The SMI QP with no receive WQE: handed over, and dropped there. */
    trap_node_init(&t);
    set_node_desc(&t.n, "one");
    set_node_desc(&t.n, "two");
    harness_run(t.n.h);
    expect_trap(&t.n, 1, VHCA_TRAP_LOCAL_CHANGES, &(uint64_t){ 0 });
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_SMA_TRAPS), ==, 2);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_DROP_NO_RWQE), ==, 1);
    harness_free(t.n.h);
}

/*
 * A packet from the wire with SLID 0 would pass for the SMA's trap:
 * LID 0 is reserved (7.11.1), and the link drops it as malformed.
 */
static void test_wire_slid_zero_dropped(void)
{
    uint8_t mad[VHCA_MAD_SIZE];
    uint8_t frame[VHCA_WIRE_SMP_LEN];
    TrapNode t;
    size_t len;

    trap_node_init(&t);
    vhca_mad_init(mad, VHCA_MGMT_CLASS_SUBN_LID, VHCA_MAD_METHOD_TRAP, 0, 0,
                  0);
    len = vhca_wire_build_smp(mad, OUR_LID, 0, frame, sizeof(frame));
    g_assert_cmpuint(len, >, 0);
    harness_deliver(t.n.h, frame, len);
    harness_run(t.n.h);
    expect_no_cqe(&t.n, &t.n.rcq);
    g_assert_cmpuint(counter(t.n.h, VHCA_CNT_DROP_MALFORMED), ==, 1);

    /* The same from SLID 2 is an SMP like any other. */
    len = vhca_wire_build_smp(mad, OUR_LID, 2, frame, sizeof(frame));
    harness_deliver(t.n.h, frame, len);
    harness_run(t.n.h);
    expect_cqe(&t.n, &t.n.rcq, 1, VHCA_WC_SUCCESS, VHCA_WC_RECV);
    harness_free(t.n.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/ib-trap/capability-mask", test_capability_mask);
    g_test_add_func("/vhca/ib-trap/cap-mask-change", test_cap_mask_change);
    g_test_add_func("/vhca/ib-trap/node-desc-change", test_node_desc_change);
    g_test_add_func("/vhca/ib-trap/bad-mkey", test_bad_mkey);
    g_test_add_func("/vhca/ib-trap/when-not-sent", test_when_not_sent);
    g_test_add_func("/vhca/ib-trap/wire-slid-zero-dropped",
                    test_wire_slid_zero_dropped);
    return g_test_run();
}
