/*
 * vhca conformance: live migration (docs/developer-guide.rst, "Migration:
 * the glue").  The device, with objects open through the admin queue and
 * an RC SEND on the wire that nobody acknowledged, is migrated to a file
 * and loaded into a second QEMU: x-query-vhca shows the same device there,
 * the SEND is retransmitted by the target from its restored timer, and the
 * admin queue goes on.  A stream with a byte of the device's state flipped,
 * or cut short, is refused with the engine's reason and the target keeps
 * its fresh device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqos/pci-pc.h"
#include "qobject/qdict.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"

/* The engine's stream starts so (hw/vhca/engine/vhca-state.h). */
#define STATE_MAGIC     "VHCASTAT"
/* Header, then the DEVICE record's header: its payload is at +32. */
#define STATE_PAYLOAD   32

/* What the migration carries, and where the stream goes. */
typedef struct Mig {
    VhcaRig rig;
    VhcaTestDev *d;             /* rig.d */
    char *dir;                  /* temporary directory */
    char *file;                 /* the migration stream */
    char *dst_log;              /* the target's stderr */
} Mig;

/* The rig (vhca-qrdma.h: objects of each kind, an RC SEND unacked). */
static void mig_build(Mig *m)
{
    memset(m, 0, sizeof(*m));
    vhca_rig_build(&m->rig, vhca_test_start(true, NULL));
    m->d = m->rig.d;
    m->dir = g_dir_make_tmp("vhca-migration-XXXXXX", NULL);
    g_assert_nonnull(m->dir);
    m->file = g_build_filename(m->dir, "stream", NULL);
    m->dst_log = g_build_filename(m->dir, "target.log", NULL);
}

static void mig_free(Mig *m)
{
    unlink(m->file);
    unlink(m->dst_log);
    rmdir(m->dir);
    g_free(m->file);
    g_free(m->dst_log);
    g_free(m->dir);
}

/* query-migrate's status, and its error if it failed (g_free both). */
static char *migrate_status(QTestState *qts, char **error)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
    QDict *ret = qdict_get_qdict(rsp, "return");
    char *status = g_strdup(qdict_haskey(ret, "status") ?
                            qdict_get_str(ret, "status") : "none");

    if (error) {
        *error = g_strdup(qdict_haskey(ret, "error-desc") ?
                          qdict_get_str(ret, "error-desc") : "");
    }
    qobject_unref(rsp);
    return status;
}

/* Poll query-migrate (bounded) until it completed or failed. */
static char *migrate_wait(QTestState *qts, char **error)
{
    gint64 deadline = g_get_monotonic_time() +
        VHCA_TEST_CASE_TIMEOUT_S / 2 * G_TIME_SPAN_SECOND;

    for (;;) {
        char *status = migrate_status(qts, error);

        if (!strcmp(status, "completed") || !strcmp(status, "failed")) {
            return status;
        }
        if (g_get_monotonic_time() > deadline) {
            g_error("migration still '%s' after %d s", status,
                    VHCA_TEST_CASE_TIMEOUT_S / 2);
        }
        g_free(status);
        if (error) {
            g_free(*error);
        }
    }
}

/* The source's whole state into m->file; the source ends paused. */
static void mig_save(Mig *m)
{
    g_autofree char *uri = g_strdup_printf("file:%s", m->file);
    g_autofree char *status = NULL;
    g_autofree char *error = NULL;

    qtest_qmp_assert_success(m->d->qts, "{ 'execute': 'migrate', "
                             "'arguments': { 'uri': %s } }", uri);
    status = migrate_wait(m->d->qts, &error);
    if (strcmp(status, "completed")) {
        g_error("saving failed: %s", error);
    }
}

/*
 * A second QEMU with the source's command line (vhca_test_start()'s) and
 * its own netdev socketpair (*@sock: the test's end), waiting for an
 * incoming stream; its stderr goes to m->dst_log.
 */
static QTestState *mig_target(Mig *m, int *sock)
{
    QTestState *qts;
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_assert_cmpint(fcntl(sv[0], F_SETFD, FD_CLOEXEC), ==, 0);
    qts = qtest_initf("-machine q35 -m %lluM -nodefaults "
                      "-netdev socket,id=%s,fd=%d "
                      "-device vhca,id=vhca0,addr=0x%x.0,"
                      "mac=52:54:00:12:34:56,netdev=%s "
                      "-incoming defer 2>%s",
                      VHCA_TEST_RAM_END >> 20, VHCA_TEST_NETDEV_ID, sv[1],
                      VHCA_TEST_SLOT, VHCA_TEST_NETDEV_ID, m->dst_log);
    close(sv[1]);
    *sock = sv[0];
    return qts;
}

/* Load m->file into @qts; the migration status (g_free it). */
static char *mig_load(Mig *m, QTestState *qts)
{
    g_autofree char *uri = g_strdup_printf("file:%s", m->file);

    /* A failed load leaves the target for the test to look at. */
    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate-incoming', "
                             "'arguments': { 'uri': %s, "
                             "'exit-on-error': false } }", uri);
    return migrate_wait(qts, NULL);
}

/*
 * x-query-vhca without the glue's own counters of this QEMU process (the
 * doorbell queue and re-entrancy lines), which do not migrate.
 */
static char *device_text(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'x-query-vhca' }");
    const char *text = qdict_get_str(qdict_get_qdict(rsp, "return"),
                                     "human-readable-text");
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    GString *out = g_string_new("");

    for (unsigned i = 0; lines[i]; i++) {
        if (!g_str_has_prefix(lines[i], "  doorbell-queue ") &&
            !g_str_has_prefix(lines[i], "  reentry ")) {
            g_string_append_printf(out, "%s\n", lines[i]);
        }
    }
    qobject_unref(rsp);
    return g_string_free(out, false);
}

static bool vm_running(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-status' }");
    bool running = qdict_get_bool(qdict_get_qdict(rsp, "return"), "running");

    qobject_unref(rsp);
    return running;
}

/* Byte offset of the engine's stream in m->file. */
static size_t stream_offset(Mig *m, char **data, size_t *len)
{
    char *at;

    g_assert_true(g_file_get_contents(m->file, data, len, NULL));
    at = memmem(*data, *len, STATE_MAGIC, strlen(STATE_MAGIC));
    g_assert_nonnull(at);
    return at - *data;
}

/* The test driver's device, now on @qts with @sock as its wire. */
static void switch_to_target(VhcaTestDev *d, QTestState *qts, int sock)
{
    qpci_free_pc(d->bus);
    g_free(d->pdev);
    qtest_quit(d->qts);
    close(d->sock);
    d->qts = qts;
    d->sock = sock;
    d->bus = qpci_new_pc(qts, NULL);
    d->pdev = qpci_device_find(d->bus, VHCA_TEST_DEVFN);
    g_assert_nonnull(d->pdev);
    /* BAR addresses, MSI-X table and guest memory came with the VM. */
}

/*
 * Saved and loaded: the same objects, QP states, PSNs and armed timer on
 * the target; the unacknowledged SEND goes out again from there (its
 * timer kept its remaining time), and the admin queue goes on.
 */
static void test_round_trip(void)
{
    g_autofree char *before = NULL;
    g_autofree char *after = NULL;
    g_autofree char *status = NULL;
    uint8_t frame[VHCA_ETH_MAX_FRAME];
    QTestState *dst;
    uint32_t pdn;
    int sock;
    Mig m;

    mig_build(&m);
    before = device_text(m.d->qts);
    g_assert_nonnull(strstr(before, "timer-armed"));
    mig_save(&m);

    dst = mig_target(&m, &sock);
    status = mig_load(&m, dst);
    g_assert_cmpstr(status, ==, "completed");
    after = device_text(dst);
    g_test_message("target:");
    g_test_message("%s", after);
    g_assert_cmpstr(after, ==, before);

    switch_to_target(m.d, dst, sock);
    /* Running already if the source was (QEMU's global state). */
    if (!vm_running(dst)) {
        qtest_qmp_assert_success(dst, "{ 'execute': 'cont' }");
    }
    /* Nothing acknowledged the SEND: the target's timer resends it. */
    for (unsigned ms = 0; vhca_wire_idle(m.d); ms++) {
        g_assert_cmpuint(ms, <, 1000);
        qtest_clock_step(dst, 1000 * 1000);
    }
    g_assert_cmpuint(vhca_wire_recv(m.d, frame, sizeof(frame)), >, 0);
    pdn = vhca_pd_make(m.d);
    g_assert_cmpuint(pdn, !=, m.rig.pdn);
    vhca_test_stop(m.d);
    mig_free(&m);
}

/*
 * A stream the target must refuse: it says why on stderr, the migration
 * fails, the VM does not run and the device is the target's fresh one.
 */
static void assert_refused(Mig *m, const char *reason)
{
    g_autofree char *status = NULL;
    g_autofree char *text = NULL;
    g_autofree char *log = NULL;
    QTestState *dst;
    int sock;

    dst = mig_target(m, &sock);
    status = mig_load(m, dst);
    g_assert_cmpstr(status, ==, "failed");
    g_assert_true(g_file_get_contents(m->dst_log, &log, NULL, NULL));
    g_test_message("target said: %s", log);
    if (!strstr(log, reason)) {
        g_error("the target's stderr has no \"%s\":\n%s", reason, log);
    }
    g_assert_false(vm_running(dst));
    text = device_text(dst);
    g_test_message("target:");
    g_test_message("%s", text);
    g_assert_null(strstr(text, "\n  qp "));
    g_assert_null(strstr(text, "\n  pd "));
    g_assert_null(strstr(text, "\n  gid "));
    qtest_quit(dst);
    close(sock);
}

/* A damage done to the saved file, and what the target says. */
typedef struct Damage {
    const char *name;
    size_t at;                  /* from the engine's magic */
    uint8_t flip;               /* XORed into that byte, or */
    bool cut;                   /* the file ends before it */
    const char *reason;         /* in the target's stderr */
} Damage;

static const Damage damages[] = {
    /* A byte of the DEVICE record: its CRC refuses it. */
    { "corrupted", STATE_PAYLOAD + 8, 0x40, false, "vhca: vhca state: " },
    /* Not the engine's stream at all: refused whole. */
    { "bad-magic", 0, 0x20, false, "vhca: vhca state: " },
    /* Cut in the device's state: QEMU's loader finds the buffer short. */
    { "truncated", STATE_PAYLOAD + 100, 0, true, "vhca" },
};

static void test_damaged(const void *data)
{
    const Damage *dmg = data;
    g_autofree char *bytes = NULL;
    size_t len, at;
    Mig m;

    mig_build(&m);
    mig_save(&m);
    at = stream_offset(&m, &bytes, &len) + dmg->at;
    g_assert_cmpuint(at, <, len);
    bytes[at] ^= dmg->flip;
    g_assert_true(g_file_set_contents(m.file, bytes, dmg->cut ? at : len,
                                      NULL));
    assert_refused(&m, dmg->reason);
    vhca_test_stop(m.d);
    mig_free(&m);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);
    vhca_add_test("/vhca/migration/round-trip", test_round_trip);
    for (unsigned i = 0; i < ARRAY_SIZE(damages); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/migration/%s",
                                                damages[i].name);

        vhca_add_data_test(path, &damages[i], test_damaged);
    }
    return g_test_run();
}
