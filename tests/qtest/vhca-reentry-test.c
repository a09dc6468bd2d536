/*
 * vhca conformance: the engine is never entered twice at once
 * (docs/specs/vhca.rst, "Re-entrancy").
 *
 * A guest may aim an MSI-X vector at the device itself.  Each test here
 * does, at BAR0, BAR2, the MSI-X table or the function's config space
 * (through ECAM), and then drives one of the engine's entry points until
 * that vector fires from inside it: a command's completion (BAR0 write),
 * a CQ event (BAR2 doorbell), an async event (a link change from the
 * monitor), the transport timer and a received frame.  A write into BAR0
 * or BAR2 must run after the engine returns, never inside it; a write
 * into the MSI-X table or config space must not run at all; QEMU must
 * answer, and the device must be in the state the writes, run in order,
 * leave it in.  "info vhca" counts what was deferred and refused.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "vhca-qdriver.h"
#include "vhca-frame.h"
#include "vhca-qrdma.h"

#define ADMQ_LOG        4
#define AEQ_LOG         6
#define CQ_LOG          4
#define BUF_LEN         4096
#define QKEY            0x11110000u

/*
 * q35's MMCONFIG window, which the tests open at this address (the
 * firmware's choice): config space of bus 0, devfn f, offset o is at
 * ECAM_BASE + (f << 12) + o.
 */
#define ECAM_BASE               0xb0000000ull
#define MCH_PCIEXBAR            0x60
#define VHCA_PCIE_CAP           0x80    /* hw/vhca/vhca.c */

static const uint8_t own_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1,
};

typedef struct Rig {
    VhcaTestDev *d;
    uint32_t page, pdn, key;
    VhcaEq eq;
    VhcaCq cq;                  /* both queues of every QP complete here */
    VhcaQp qp;
    uint64_t buf;
} Rig;

static uint32_t msix_entry_read(VhcaTestDev *d, uint16_t v, uint32_t field)
{
    return qpci_io_readl(d->pdev, d->pdev->msix_table_bar,
                         d->pdev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE +
                         field);
}

/* The "reentry" line of info vhca. */
static void reentries(VhcaTestDev *d, uint64_t *deferred, uint64_t *refused)
{
    g_autofree char *text = vhca_query_text(d, NULL);
    const char *line = strstr(text, "reentry deferred ");

    g_assert_nonnull(line);
    g_assert_cmpint(sscanf(line, "reentry deferred %" SCNu64
                           " refused %" SCNu64, deferred, refused), ==, 2);
}

static void expect_reentries(VhcaTestDev *d, bool deferred, bool refused)
{
    uint64_t n_deferred, n_refused;

    reentries(d, &n_deferred, &n_refused);
    g_assert_cmpuint(n_deferred > 0, ==, deferred);
    g_assert_cmpuint(n_refused > 0, ==, refused);
}

/*
 * Consume async events up to the CMD_DONE of @token, which the test did
 * not run through vhca_cmd_exec(), and re-arm the AEQ.
 */
static void skip_to_cmd_done(VhcaTestDev *d, uint32_t token)
{
    struct vhca_eqe eqe;

    do {
        vhca_eq_next(d, &eqe);
    } while (eqe.type != VHCA_EQE_CMD_DONE ||
             le32_to_cpu(eqe.data[1]) != token);
    vhca_eq_ack(d, true);
}

/* The device answers commands and its registers read sanely. */
static void expect_alive(VhcaTestDev *d)
{
    g_assert_cmphex(vhca_rd(d, VHCA_REG_MAGIC), ==, VHCA_MAGIC);
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_NOP, NULL, 0, NULL), ==,
                     VHCA_ST_OK);
}

/* Admin queue, a GID, a user context, a PD, an MR, a CEQ and a CQ. */
static void rig_up(Rig *r, bool netdev)
{
    struct vhca_mr_create c;

    r->d = vhca_test_start(netdev, "mac=52:54:00:12:34:56");
    vhca_admin_setup(r->d, ADMQ_LOG, AEQ_LOG);
    r->d->stash_events = true;
    g_assert_cmpuint(vhca_cmd_add_gid(r->d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      own_gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(r->d, &r->page), ==, VHCA_ST_OK);
    r->pdn = vhca_pd_make(r->d);
    r->buf = guest_alloc(&r->d->alloc, BUF_LEN);
    qtest_memset(r->d->qts, r->buf, 0x5a, BUF_LEN);
    vhca_mr_prepare_phys(&c, r->pdn, VHCA_ACCESS_LOCAL_WRITE, r->buf,
                         BUF_LEN, 0x21);
    g_assert_cmpuint(vhca_cmd_create_mr(r->d, &c, NULL, &r->key), ==,
                     VHCA_ST_OK);
    vhca_eq_make(r->d, &r->eq, 4, VHCA_VECTOR_FIRST_COMP);
    vhca_cq_make(r->d, &r->cq, CQ_LOG, r->eq.eqn, r->page);
}

/* A UD QP in RTS that sends to itself (loopback inside the device). */
static void ud_qp_up(Rig *r)
{
    struct vhca_qp_attr a;

    vhca_qp_make(r->d, &r->qp, VHCA_QPT_UD, r->pdn, r->cq.cqn, r->cq.cqn,
                 3, 3, r->page);
    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(r->qp.qpn);
    a.port = 1;
    a.qkey = cpu_to_le32(QKEY);
    vhca_qp_modify_ok_at(r->d, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                         VHCA_QP_PORT | VHCA_QP_QKEY, G_STRLOC);
    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(r->qp.qpn);
    vhca_qp_modify_ok_at(r->d, &a, VHCA_QPS_RTR, 0, G_STRLOC);
    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(r->qp.qpn);
    vhca_qp_modify_ok_at(r->d, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN, G_STRLOC);
}

/* Arm the CQ: its next completion raises the CEQ's vector. */
static void cq_arm(Rig *r)
{
    vhca_cq_arm(r->d, &r->cq, VHCA_CQ_ARM_NEXT);
}

/*
 * A 64-byte UD SEND to the QP itself with a receive posted for it, rung
 * by the test (a BAR2 write under the BQL, as from a vCPU that found the
 * doorbell queue full): its completions raise the CEQ's vector from
 * inside the doorbell.
 */
static void ud_send_to_self(Rig *r)
{
    struct vhca_send_wqe w;

    vhca_qp_write_recv_sge(r->d, &r->qp, 0x4ec, r->buf + 1024,
                           VHCA_GRH_AREA_LEN + 64, r->key);
    vhca_qp_ring_rq(r->d, &r->qp, r->page);
    memset(&w, 0, sizeof(w));
    w.wr_id = cpu_to_le64(0x5e0d);
    w.opcode = VHCA_WR_SEND;
    w.flags = VHCA_WQE_SIGNALED;
    w.num_sge = 1;
    w.sge[0].addr = cpu_to_le64(r->buf);
    w.sge[0].length = cpu_to_le32(64);
    w.sge[0].lkey = cpu_to_le32(r->key);
    w.dest_qpn = cpu_to_le32(r->qp.qpn);
    w.qkey = cpu_to_le32(QKEY);
    memcpy(w.av.dgid, own_gid, 16);
    memcpy(w.av.dmac, vhca_test_mac, 6);
    w.av.hop_limit = 64;
    vhca_qp_write_send_wqe(r->d, &r->qp, &w);
    vhca_qp_ring_sq(r->d, &r->qp, r->page);
}

/* Both completions of ud_send_to_self(), successful, in some order. */
static void expect_ud_completions(Rig *r)
{
    struct vhca_cqe c;
    unsigned seen = 0;

    for (int i = 0; i < 2; i++) {
        vhca_cq_next(r->d, &r->cq, &c);
        g_assert_cmpuint(c.status, ==, VHCA_WC_SUCCESS);
        seen |= c.wr_id == 0x5e0d ? 1 : c.wr_id == 0x4ec ? 2 : 4;
    }
    g_assert_cmpuint(seen, ==, 3);
    vhca_cq_update_dbrec(r->d, &r->cq);
}

/* ---- a command's completion ------------------------------------------- */

/*
 * The first command's CMD_DONE (vector 0) rings ADMQ_PI for a second one
 * the test staged but never rang.  The write is posted: the second
 * command runs after the first's entry returns, so both complete, in
 * order, each with its own event.
 */
static void test_cmd_done_rings_admq(void)
{
    VhcaTestDev *d = vhca_test_start(false, NULL);
    struct vhca_admin_cmd entry;
    struct vhca_eqe eqe;
    uint32_t first, staged;

    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    first = vhca_cmd_write(d, VHCA_CMD_NOP, NULL, 0, 0xf1);
    staged = vhca_cmd_write(d, VHCA_CMD_NOP, NULL, 0, 0xf2);
    vhca_msix_aim(d, VHCA_VECTOR_ASYNC, d->bar0.addr + VHCA_REG_ADMQ_PI,
                  d->admq.pi);
    vhca_wr(d, VHCA_REG_ADMQ_PI, d->admq.pi - 1);

    vhca_cmd_wait_done(d, first, &entry);
    g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
    vhca_cmd_wait_done(d, staged, &entry);
    g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
    d->admq.ci = d->admq.pi;
    vhca_wait_reg(d, VHCA_REG_ADMQ_CI, ~0u, d->admq.ci, "ADMQ_CI");
    vhca_eq_next(d, &eqe);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmphex(le32_to_cpu(eqe.data[1]), ==, 0xf1);
    vhca_eq_next(d, &eqe);
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_CMD_DONE);
    g_assert_cmphex(le32_to_cpu(eqe.data[1]), ==, 0xf2);
    vhca_eq_ack(d, true);
    expect_reentries(d, true, false);

    vhca_msix_aim(d, VHCA_VECTOR_ASYNC, d->msi_addr, VHCA_TEST_MSI_DATA(0));
    expect_alive(d);
    vhca_test_stop(d);
}

/* ---- the transport timer ----------------------------------------------- */

/* An RC QP in RTS towards a peer that never answers, retry_cnt 0. */
static void rc_qp_up(Rig *r)
{
    VhcaRcPath path = {
        .dgid = vhca_test_dgid, .dmac = vhca_test_dmac,
        .dest_qpn = 0x99, .sq_psn = 0x100, .rq_psn = 0x200,
        .path_mtu = VHCA_IB_MTU_1024,
        .timeout = 8,                   /* 1 ms */
        .retry_cnt = 0, .rnr_retry = 0,
        .max_rd_atomic = 1, .max_dest_rd_atomic = 1,
    };

    vhca_qp_make(r->d, &r->qp, VHCA_QPT_RC, r->pdn, r->cq.cqn, r->cq.cqn,
                 3, 3, r->page);
    vhca_qp_to_rts(r->d, r->qp.qpn, &path);
    cq_arm(r);
}

/* A SEND nobody acknowledges: the ACK timer ends it with RETRY_EXC_ERR. */
static void rc_send_unacked(Rig *r)
{
    vhca_qp_write_send(r->d, &r->qp, 0x7e, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_qp_ring_sq(r->d, &r->qp, r->page);
}

static void expect_retry_exceeded(Rig *r)
{
    struct vhca_cqe c;

    vhca_cq_next(r->d, &r->cq, &c);
    g_assert_cmphex(c.wr_id, ==, 0x7e);
    g_assert_cmpuint(c.status, ==, VHCA_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(vhca_counter(r->d, VHCA_CNT_RETRY_EXCEEDED), ==, 1);
}

/*
 * The case that hung QEMU: the WQE's error completion (from the timer)
 * raises the CQ event, whose vector rings ADMQ_PI for a staged
 * DESTROY_QP of that very QP.  Run inside the timer it would free the QP
 * under the requester; posted, it runs after, and destroys a QP that is
 * in ERR with nothing in use.
 */
static void test_timer_destroys_qp(void)
{
    Rig r;
    struct vhca_cmd_obj_in destroy;
    struct vhca_admin_cmd entry;
    struct vhca_qp_attr a;
    uint32_t staged;

    rig_up(&r, true);
    rc_qp_up(&r);
    memset(&destroy, 0, sizeof(destroy));
    destroy.handle = cpu_to_le32(r.qp.qpn);
    staged = vhca_cmd_write(r.d, VHCA_CMD_DESTROY_QP, &destroy,
                            sizeof(destroy), 0xd0);
    vhca_msix_aim(r.d, VHCA_VECTOR_FIRST_COMP,
                  r.d->bar0.addr + VHCA_REG_ADMQ_PI, r.d->admq.pi);
    rc_send_unacked(&r);

    vhca_cmd_wait_done(r.d, staged, &entry);
    g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
    r.d->admq.ci = r.d->admq.pi;
    vhca_wait_reg(r.d, VHCA_REG_ADMQ_CI, ~0u, r.d->admq.ci, "ADMQ_CI");
    expect_retry_exceeded(&r);
    skip_to_cmd_done(r.d, 0xd0);
    expect_reentries(r.d, true, false);

    /* The QP is gone; the device goes on. */
    vhca_msix_aim(r.d, VHCA_VECTOR_FIRST_COMP,
                  r.d->msi_addr + 4 * VHCA_VECTOR_FIRST_COMP,
                  VHCA_TEST_MSI_DATA(VHCA_VECTOR_FIRST_COMP));
    g_assert_cmpuint(vhca_cmd_query_qp(r.d, r.qp.qpn, &a), !=, VHCA_ST_OK);
    expect_alive(r.d);
    vhca_test_stop(r.d);
}

/*
 * The timer's CQ event writes into the MSI-X table (another vector's
 * data): QEMU's memory core refuses it, as the device runs under its
 * re-entrancy guard, so the entry keeps its data.
 */
static void test_timer_writes_msix_table(void)
{
    Rig r;
    enum { VICTIM = 5 };
    uint64_t victim;

    rig_up(&r, true);
    rc_qp_up(&r);
    victim = r.d->pdev->msix_table_bar.addr + r.d->pdev->msix_table_off +
             VICTIM * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_DATA;
    vhca_msix_aim(r.d, VHCA_VECTOR_FIRST_COMP, victim, 0xbad0bad0);
    rc_send_unacked(&r);

    expect_retry_exceeded(&r);
    g_assert_cmphex(msix_entry_read(r.d, VICTIM, PCI_MSIX_ENTRY_DATA), ==,
                    VHCA_TEST_MSI_DATA(VICTIM));
    expect_alive(r.d);
    vhca_test_stop(r.d);
}

/* ---- an async event (a link change from the monitor) ------------------- */

/*
 * set_link raises PORT_CHANGE on the async EQ, whose vector writes
 * CTRL.RESET.  The reset is posted: it runs after the link change's
 * entry has returned, and leaves the device as a reset does.
 */
static void test_link_change_resets(void)
{
    VhcaTestDev *d = vhca_test_start(true, NULL);

    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    vhca_msix_aim(d, VHCA_VECTOR_ASYNC, d->bar0.addr + VHCA_REG_CTRL,
                  VHCA_CTRL_RESET);
    vhca_set_link(d, false);

    vhca_wait_reg(d, VHCA_REG_STATUS, VHCA_STATUS_READY, 0,
                  "STATUS.READY cleared by the posted reset");
    g_assert_cmphex(vhca_rd(d, VHCA_REG_CTRL), ==, 0);
    /* The reset cleared the AEQ: nothing points there now. */
    g_assert_cmpuint(vhca_rd(d, VHCA_REG_AEQ_PI), ==, 0);
    expect_reentries(d, true, false);

    vhca_forget_rings(d);
    vhca_msix_aim(d, VHCA_VECTOR_ASYNC, d->msi_addr, VHCA_TEST_MSI_DATA(0));
    vhca_admin_setup(d, ADMQ_LOG, AEQ_LOG);
    expect_alive(d);
    vhca_test_stop(d);
}

/* ---- a received frame ---------------------------------------------------- */

/*
 * A frame from the wire lands in the Ethernet RX ring, and its vector
 * writes into the device: with @data, ADMQ_PI for a NOP the test staged,
 * which runs after the receive returns; without, a (32-bit, so
 * malformed) SQ doorbell in BAR2, which the device counts and ignores
 * after the receive returns.
 */
static void test_rx_frame_rings(const void *data)
{
    bool bar0 = GPOINTER_TO_INT(data);
    Rig r;
    struct vhca_admin_cmd entry;
    uint8_t frame[64];
    uint64_t doorbells;
    uint32_t staged = 0;
    size_t len;

    rig_up(&r, true);
    vhca_eth_setup(r.d, 3, 3, 2048, VHCA_ETH_CTRL_TX_ENABLE |
                   VHCA_ETH_CTRL_RX_ENABLE);
    vhca_rx_post(r.d, 4);
    vhca_wr(r.d, VHCA_REG_ETH_IRQ_ARM, 1);
    doorbells = vhca_counter(r.d, VHCA_CNT_DOORBELLS);
    if (bar0) {
        staged = vhca_cmd_write(r.d, VHCA_CMD_NOP, NULL, 0, 0xe7);
        vhca_msix_aim(r.d, VHCA_VECTOR_ETH,
                      r.d->bar0.addr + VHCA_REG_ADMQ_PI, r.d->admq.pi);
    } else {
        vhca_msix_aim(r.d, VHCA_VECTOR_ETH, r.d->bar2.addr +
                      (uint64_t)r.page * VHCA_DB_PAGE_SIZE + VHCA_DB_SQ,
                      0x1234);
    }

    len = vhca_frame_eth(frame, vhca_test_mac, VHCA_ETHERTYPE_TEST, 50, 7);
    vhca_wire_send(r.d, frame, len);
    g_assert_cmpuint(vhca_rx_receive(r.d, frame, sizeof(frame)), ==, len);
    if (bar0) {
        vhca_cmd_wait_done(r.d, staged, &entry);
        g_assert_cmpuint(entry.status, ==, VHCA_ST_OK);
        r.d->admq.ci = r.d->admq.pi;
        skip_to_cmd_done(r.d, 0xe7);
    } else {
        VHCA_WAIT_UNTIL(r.d, vhca_counter(r.d, VHCA_CNT_DOORBELLS) ==
                        doorbells + 1, "the posted doorbell");
    }
    expect_reentries(r.d, true, false);
    expect_alive(r.d);
    vhca_test_stop(r.d);
}

/* ---- a CQ event: config space ------------------------------------------ */

/*
 * The completion event writes Initiate FLR into the function's own PCIe
 * Device Control register through ECAM.  A reset inside the doorbell
 * would free what the doorbell is using: the config write is refused,
 * and the device keeps its state.
 */
static void test_cq_event_writes_flr(void)
{
    Rig r;
    QPCIDevice *mch;
    uint64_t devctl;

    rig_up(&r, false);
    ud_qp_up(&r);
    mch = qpci_device_find(r.d->bus, QPCI_DEVFN(0, 0));
    g_assert_nonnull(mch);
    qpci_config_writel(mch, MCH_PCIEXBAR + 4, ECAM_BASE >> 32);
    qpci_config_writel(mch, MCH_PCIEXBAR, (uint32_t)ECAM_BASE | 1);
    devctl = ECAM_BASE + ((uint64_t)r.d->pdev->devfn << 12) +
             VHCA_PCIE_CAP + PCI_EXP_DEVCTL;
    /* The window reaches the function: its vendor ID reads through it. */
    g_assert_cmphex(qtest_readw(r.d->qts, ECAM_BASE +
                                ((uint64_t)r.d->pdev->devfn << 12)), ==,
                    VHCA_PCI_VENDOR_ID);
    vhca_msix_aim(r.d, VHCA_VECTOR_FIRST_COMP, devctl, PCI_EXP_DEVCTL_BCR_FLR);
    cq_arm(&r);
    ud_send_to_self(&r);

    expect_ud_completions(&r);
    expect_reentries(r.d, false, true);
    g_assert_cmphex(vhca_rd(r.d, VHCA_REG_CTRL), ==, VHCA_CTRL_ENABLE);
    g_assert_cmphex(vhca_rd(r.d, VHCA_REG_STATUS) & VHCA_STATUS_READY, ==,
                    VHCA_STATUS_READY);
    expect_alive(r.d);
    g_free(mch);
    vhca_test_stop(r.d);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);
    vhca_add_test("/vhca/reentry/cmd-done/admq-doorbell",
                  test_cmd_done_rings_admq);
    vhca_add_test("/vhca/reentry/timer/destroy-qp", test_timer_destroys_qp);
    vhca_add_test("/vhca/reentry/timer/msix-table",
                  test_timer_writes_msix_table);
    vhca_add_test("/vhca/reentry/link-change/reset", test_link_change_resets);
    vhca_add_data_test("/vhca/reentry/rx-frame/bar0-admq",
                       GINT_TO_POINTER(true), test_rx_frame_rings);
    vhca_add_data_test("/vhca/reentry/rx-frame/bar2-doorbell",
                       GINT_TO_POINTER(false), test_rx_frame_rings);
    vhca_add_test("/vhca/reentry/cq-event/flr", test_cq_event_writes_flr);
    return g_test_run();
}
