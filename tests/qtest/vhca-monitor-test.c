/*
 * vhca conformance: host-side introspection.  x-query-vhca (QMP) and
 * "info vhca" (HMP) show the device's port, counters, QPs, CQs, EQs, MRs
 * and PDs as the driver made them, select one device by ID or QOM path,
 * and leave the guest running (docs/user-guide.rst, "Looking inside the
 * device").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"

static void rig_up(VhcaRig *r)
{
    vhca_rig_build(r, vhca_test_start(true, NULL));
}

/* x-query-vhca with @id fails with @error_class. */
static void query_vhca_fails(VhcaTestDev *d, const char *id,
                             const char *error_class)
{
    QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'x-query-vhca', "
                           "'arguments': { 'id': %s } }", id);
    QDict *error = qdict_get_qdict(rsp, "error");

    g_assert_nonnull(error);
    g_assert_cmpstr(qdict_get_str(error, "class"), ==, error_class);
    qobject_unref(rsp);
}

/* @text has the line "  @fmt..." (the device's lines are indented). */
static void G_GNUC_PRINTF(3, 4) assert_has_line_at(const char *text,
                                                   const char *where,
                                                   const char *fmt, ...)
{
    g_autofree char *want = NULL;
    g_autofree char *line = NULL;
    va_list ap;

    va_start(ap, fmt);
    want = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    line = g_strdup_printf("\n%s\n", want);
    if (!strstr(text, line) &&
        !(g_str_has_prefix(text, want) && text[strlen(want)] == '\n')) {
        g_error("%s: no line \"%s\" in:\n%s", where, want, text);
    }
}
#define assert_has_line(text, ...) \
    assert_has_line_at(text, G_STRLOC, __VA_ARGS__)

/* An HMP command's output, with the monitor's "\r\n" made "\n". */
static char *hmp_text(VhcaTestDev *d, const char *cmd)
{
    g_autofree char *out = qtest_hmp(d->qts, "%s", cmd);
    g_auto(GStrv) lines = g_strsplit(out, "\r\n", -1);

    return g_strjoinv("\n", lines);
}

static bool vm_running(VhcaTestDev *d)
{
    QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'query-status' }");
    bool running = qdict_get_bool(qdict_get_qdict(rsp, "return"), "running");

    qobject_unref(rsp);
    return running;
}

/* Every object the driver made has its line, with what it holds. */
static void test_query_objects(void)
{
    VhcaRig r;
    g_autofree char *text = NULL;

    rig_up(&r);
    g_assert_true(vm_running(r.d));
    text = vhca_query_text(r.d, NULL);
    g_assert_true(vm_running(r.d));

    assert_has_line(text, "vhca0: /machine/peripheral/vhca0 pci 00:%02x.0 "
                    "netdev " VHCA_TEST_NETDEV_ID, VHCA_TEST_SLOT);
    assert_has_line(text, "  device enabled");
    assert_has_line(text, "  port mac 52:54:00:12:34:56 link up mtu 1500 "
                    "active-mtu 1024");
    assert_has_line(text, "  gid 0 192.0.2.1 type RoCEv2-IPv4");
    /* Two receives posted, none used; nothing sent from the SQ PSN yet. */
    assert_has_line(text, "  qp %u type UD state RTS pdn %u scqn %u rcqn %u "
                    "qkey 0x%x sq 0/%u sq-pi 0 rq 2/%u rq-pi 2 "
                    "sq-psn 0x%06x", r.ud.qpn, r.pdn, r.scq.cqn, r.rcq.cqn,
                    VHCA_RIG_QKEY, 1u << VHCA_RIG_QP_LOG,
                    1u << VHCA_RIG_QP_LOG, VHCA_RIG_UD_SQ_PSN);
    /*
     * One SEND out from sq_psn 0x123456, not acknowledged, so the
     * retransmit timer runs; no retry used yet, the whole window, the
     * timer at T (timeout 14: 67108 us; vhca_qp_attr_defaults).
     */
    assert_has_line(text, "  qp %u type RC state RTS pdn %u scqn %u "
                    "rcqn %u dqpn %u sq 1/%u sq-pi 1 rq 0/%u rq-pi 0 "
                    "sq-psn 0x123457 una-psn 0x123456 rq-psn 0xabcdef "
                    "retry 6/6 rnr-retry 5/5 window 256/256 "
                    "ack-timer 67108us timer-armed", r.rc.qpn, r.pdn,
                    r.scq.cqn, r.rcq.cqn, 0xc0ffee, 1u << VHCA_RIG_QP_LOG,
                    1u << VHCA_RIG_QP_LOG);
    /* Each CQ serves both QPs. */
    assert_has_line(text, "  cq %u size %u pi 0 ci 0 eqn %u armed no "
                    "users 2", r.scq.cqn, 1u << VHCA_RIG_CQ_LOG, r.eq.eqn);
    assert_has_line(text, "  eq %u size 64 pi 0 ci 0 vector %u armed yes "
                    "cqs 2", r.eq.eqn, VHCA_VECTOR_FIRST_COMP);
    assert_has_line(text, "  mr %u key 0x%x pdn %u iova 0x%" PRIx64
                    " length 4096 access local-write phys", r.mr_index,
                    r.key, r.pdn, r.buf);
    /* The MR and the two QPs. */
    assert_has_line(text, "  pd %u users 3", r.pdn);
    g_assert_nonnull(strstr(text, "\n  counter admin_commands "));
    /* The UD QP's RQ, the RC QP's SQ. */
    g_assert_nonnull(strstr(text, "\n  counter doorbells 2\n"));
    /* qtest writes with the BQL held: its doorbells run at once. */
    assert_has_line(text, "  doorbell-queue queued 0 full 0");
    assert_has_line(text, "  reentry deferred 0 refused 0");
    vhca_test_stop(r.d);
}

/* "info vhca [id]" prints the same text; a bad ID is an error message. */
static void test_hmp_info(void)
{
    VhcaRig r;
    g_autofree char *qmp_all = NULL;
    g_autofree char *hmp_all = NULL;
    g_autofree char *hmp_one = NULL;
    g_autofree char *hmp_bad = NULL;

    rig_up(&r);
    qmp_all = vhca_query_text(r.d, NULL);
    hmp_all = hmp_text(r.d, "info vhca");
    hmp_one = hmp_text(r.d, "info vhca vhca0");
    g_assert_cmpstr(hmp_all, ==, qmp_all);
    g_assert_cmpstr(hmp_one, ==, qmp_all);
    hmp_bad = hmp_text(r.d, "info vhca nosuch");
    g_assert_nonnull(strstr(hmp_bad, "Device 'nosuch' is not a vhca "
                            "device"));
    g_assert_true(vm_running(r.d));
    vhca_test_stop(r.d);
}

/* Two functions: all of them by default, one by ID or by QOM path. */
static void test_query_select(void)
{
    static const unsigned slots[2] = { 4, 5 };
    static const char *const opts[2] = {
        "mac=52:54:00:12:34:56", "mac=52:54:00:12:34:57",
    };
    VhcaTestDev *devs[2];
    VhcaRig r;
    g_autofree char *all = NULL;
    g_autofree char *by_id = NULL;
    g_autofree char *by_path = NULL;

    vhca_test_start_many(2, slots, opts, 128, devs);
    vhca_rig_build(&r, devs[1]);
    all = vhca_query_text(devs[0], NULL);
    assert_has_line(all, "vhca0: /machine/peripheral/vhca0 pci 00:04.0 "
                    "netdev hs0");
    assert_has_line(all, "vhca1: /machine/peripheral/vhca1 pci 00:05.0 "
                    "netdev hs1");
    /* vhca0 was not enabled, so its lines are only the first ones. */
    assert_has_line(all, "  device disabled");
    assert_has_line(all, "  device enabled");

    by_id = vhca_query_text(devs[0], "vhca1");
    by_path = vhca_query_text(devs[0], "/machine/peripheral/vhca1");
    g_assert_cmpstr(by_id, ==, by_path);
    g_assert_true(g_str_has_prefix(by_id, "vhca1: "));
    g_assert_null(strstr(by_id, "vhca0"));
    g_assert_nonnull(strstr(all, by_id));
    assert_has_line(by_id, "  port mac 52:54:00:12:34:57 link up mtu 1500 "
                    "active-mtu 1024");
    assert_has_line(by_id, "  pd %u users 3", r.pdn);

    query_vhca_fails(devs[0], "nosuch", "DeviceNotFound");
    query_vhca_fails(devs[0], "/machine", "DeviceNotFound");
    query_vhca_fails(devs[0], "hs0", "DeviceNotFound");
    vhca_test_stop_many(2, devs);
}

int main(int argc, char **argv)
{
    vhca_test_init(&argc, &argv);
    vhca_add_test("/vhca/monitor/query-objects", test_query_objects);
    vhca_add_test("/vhca/monitor/hmp-info", test_hmp_info);
    vhca_add_test("/vhca/monitor/query-select", test_query_select);
    return g_test_run();
}
