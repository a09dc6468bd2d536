/*
 * The device under test of the shared cases (tests/common/vhca-dut.h)
 * for the qtest tier: QEMU with one vhca function, driven through
 * vhca-qdriver.c, one QEMU for all the cases of a configuration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-dut.h"

/* HPET general configuration: a stray DMA write would change it. */
#define HPET_CFG        (VHCA_TEST_HPET_ADDR + 0x10)

/*
 * One QEMU per device configuration, started by the program's main
 * process and lent to each case that names that configuration in turn.
 * Each case still runs in a child process of its own (forked here, as
 * vhca-qdriver.c's vhca_add_test() traps one for the other qtests), so
 * a failed check or a crash fails that case only; but the child starts
 * from the device reset through CTRL.RESET, as a driver's probe would,
 * not from a new QEMU: starting QEMU was most of a case's time.
 *
 * What a case leaves in the test program stays in its child and dies
 * with it: its guest allocations (the main process's allocator is as it
 * was after QEMU started, so every case gets the same addresses again,
 * and vhca_dut_alloc() and vhca_admin_setup() zero what they hand out),
 * its ring indices and stashed events.  What it leaves in the device,
 * the reset must clear (docs/specs/vhca.rst "Reset": every object,
 * the GID table, doorbell pages, MAC, MTU, counters), and
 * vhca_dut_start() checks that it did, so a reset that leaks fails the
 * next case rather than going unseen.
 *
 * No case needs a QEMU of its own: every row is a command the device
 * refuses, on the device's own state, and none touches PCI config space,
 * BAR or MSI-X set-up (the table is shared with the unit tier, which has
 * no PCI; vhca-pci-test.c and vhca-reset-test.c cover those, with a
 * QEMU per case).  A case that fails or times out may have left QEMU in
 * any state, though: its QEMU is retired, and the next case of that
 * configuration starts a new one.
 */
typedef struct DutQemu {
    VhcaDutConfig cfg;
    VhcaTestDev *d;
    char *power_on;             /* x-query-vhca of the fresh device */
    uint64_t hpet_cfg;          /* HPET_CFG of the fresh machine */
} DutQemu;

static GPtrArray *dut_qemus;    /* of DutQemu *, the main process's */
static DutQemu *dut_lent;       /* in a case's child: the case's QEMU */

typedef struct DutTest {
    VhcaDutConfig cfg;
    const void *data;
    void (*fn)(const void *data);
} DutTest;

struct VhcaDut {
    VhcaTestDev *d;
    uint64_t hpet_cfg;
};

static void dut_qemus_quit(void)
{
    while (dut_qemus && dut_qemus->len) {
        DutQemu *q = g_ptr_array_steal_index(dut_qemus, dut_qemus->len - 1);

        vhca_test_stop(q->d);
        g_free(q->power_on);
        g_free(q);
    }
}

static DutQemu *dut_qemu_for(const VhcaDutConfig *cfg)
{
    g_autofree char *opts = NULL;
    DutQemu *q;

    if (!dut_qemus) {
        dut_qemus = g_ptr_array_new();
        /* The cases' children leave with _exit(): this runs in main's. */
        atexit(dut_qemus_quit);
    }
    for (guint i = 0; i < dut_qemus->len; i++) {
        q = g_ptr_array_index(dut_qemus, i);
        /* Only uint32_t fields: no padding to compare. */
        if (!memcmp(&q->cfg, cfg, sizeof(*cfg))) {
            return q;
        }
    }

    q = g_new0(DutQemu, 1);
    q->cfg = *cfg;
    opts = g_strdup_printf("gid-table-len=%u,db-pages=%u,vectors=%u,"
                           "max-qp=%u,max-cq=%u,max-mr=%u,max-pd=%u,"
                           "max-srq=%u",
                           cfg->gid_tbl_len, cfg->db_pages, cfg->vectors,
                           cfg->max_qp, cfg->max_cq, cfg->max_mr,
                           cfg->max_pd, cfg->max_srq);
    q->d = vhca_test_start(false, opts);
    q->power_on = vhca_query_text_quiet(q->d, "vhca0");
    q->hpet_cfg = qtest_readq(q->d->qts, HPET_CFG);
    g_ptr_array_add(dut_qemus, q);
    return q;
}

/*
 * After a failed case.  QEMU may be dead (a crash is what failed the
 * case), hung or half-way through a reply: kill it outright.  libqtest's
 * own quit would abort this process on a QEMU that died of a signal,
 * ending the run, so its QTestState (two sockets, some memory) is left
 * behind until the program exits.
 */
static void dut_qemu_retire(DutQemu *q)
{
    QTestState *qts = q->d->qts;
    siginfo_t info;

    g_ptr_array_remove(dut_qemus, q);
    if (qtest_probe_child(qts)) {
        kill(qtest_pid(qts), SIGKILL);
        /* Wait without reaping: qtest_probe_child() reaps and records. */
        g_assert_cmpint(RETRY_ON_EINTR(waitid(P_PID, qtest_pid(qts), &info,
                                              WEXITED | WNOWAIT)), ==, 0);
        g_assert_false(qtest_probe_child(qts));
    }
    g_free(q->power_on);
    g_free(q);
}

static void G_GNUC_NORETURN dut_case_child(DutQemu *q, const DutTest *t)
{
    /*
     * stdout is the main process's TAP stream, and GLib reports a failed
     * assertion there as "Bail out!", which would end the whole
     * program's results: the child writes to stderr only (as
     * g_test_trap_subprocess() keeps a child's stdout apart).
     */
    g_assert_cmpint(dup2(STDERR_FILENO, STDOUT_FILENO), ==, STDOUT_FILENO);
    /*
     * The QEMUs are the main process's: a failure here must not kill
     * them (libqtest's SIGABRT hook would); main retires the case's.
     */
    for (guint i = 0; i < dut_qemus->len; i++) {
        DutQemu *other = g_ptr_array_index(dut_qemus, i);

        qtest_remove_abrt_handler(other->d->qts);
    }
    dut_lent = q;
    /* The child dies of SIGALRM if the case outlives its budget. */
    alarm(VHCA_TEST_CASE_TIMEOUT_S);
    t->fn(t->data);
    fflush(stdout);
    fflush(stderr);
    /* Assertions are fatal here; a g_test_fail() is not. */
    _exit(g_test_failed() ? 1 : 0);
}

static void dut_run_case(const void *opaque)
{
    const DutTest *t = opaque;
    DutQemu *q = dut_qemu_for(&t->cfg);
    int status;
    pid_t pid;

    fflush(stdout);             /* nothing buffered is written twice */
    fflush(stderr);
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        dut_case_child(q, t);
    }
    g_assert_cmpint(RETRY_ON_EINTR(waitpid(pid, &status, 0)), ==, pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        g_test_message("the case took longer than %d s",
                       VHCA_TEST_CASE_TIMEOUT_S);
    } else if (WIFSIGNALED(status)) {
        g_test_message("the case died of signal %d (%s)", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
    } else {
        g_test_message("the case exited with status %d",
                       WEXITSTATUS(status));
    }
    g_test_fail();
    dut_qemu_retire(q);
}

/*
 * In a case's child: the lent QEMU's device, back to its power-on state
 * and checked to be there, then enabled.
 */
VhcaDut *vhca_dut_start(const VhcaDutConfig *cfg)
{
    struct vhca_cmd_uctx_in uctx = { .db_page = 0 };
    VhcaDut *dut = g_new0(VhcaDut, 1);
    g_autofree char *now = NULL;
    VhcaTestDev *d;

    /* Only a case registered with vhca_dut_add_test(), with its @cfg. */
    g_assert_nonnull(dut_lent);
    g_assert_true(!memcmp(cfg, &dut_lent->cfg, sizeof(*cfg)));
    d = dut->d = dut_lent->d;

    /* Whatever an earlier case left: spec "Reset". */
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_RESET);
    vhca_forget_rings(d);
    /*
     * Reset leaves nothing: x-query-vhca, which lists every object, GID
     * entry, non-zero counter and the port's MAC and MTU, reads as on
     * the fresh device, and nothing was written to the HPET.
     */
    now = vhca_query_text_quiet(d, "vhca0");
    g_assert_cmpstr(now, ==, dut_lent->power_on);
    g_assert_cmphex(qtest_readq(d->qts, HPET_CFG), ==, dut_lent->hpet_cfg);
    /* No interrupt an earlier case's device sent is taken for this one's. */
    qtest_memset(d->qts, d->msi_addr, 0, 4 * d->vectors);

    vhca_admin_setup(d, 6, 8);
    /* RDMA commands may post QP or CQ events among the CMD_DONEs. */
    d->stash_events = true;
    /*
     * Doorbell pages are not in x-query-vhca: the first one, which every
     * case's world allocates, is free again (DEALLOC_UCTX of a free page
     * fails BAD_STATE, spec "Commands").
     */
    g_assert_cmpuint(vhca_cmd_exec(d, VHCA_CMD_DEALLOC_UCTX, &uctx,
                                   sizeof(uctx), NULL), ==, VHCA_ST_BAD_STATE);
    dut->hpet_cfg = dut_lent->hpet_cfg;
    return dut;
}

/* The QEMU is the main process's: the next case resets the device. */
void vhca_dut_stop(VhcaDut *dut)
{
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

void vhca_dut_add_test(const char *path, const VhcaDutConfig *cfg,
                       const void *data, void (*fn)(const void *data))
{
    DutTest *t = g_new(DutTest, 1);

    t->cfg = *cfg;
    t->data = data;
    t->fn = fn;
    /* Registered tests live as long as the program: t is never freed. */
    qtest_add_data_func(path, t, dut_run_case);
}
