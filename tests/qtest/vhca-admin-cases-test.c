/*
 * vhca conformance: the admin commands the device must refuse, the table
 * shared with the engine unit tests (tests/common/vhca-admin-cases.c),
 * run on QEMU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "vhca-qdriver.h"
#include "vhca-admin-cases.h"

int main(int argc, char **argv)
{
    /*
     * Not vhca_test_init(), whose non-fatal assertions serve a parent
     * that only traps children: each case here runs in a child forked
     * from this process (vhca-qdut.c), which would inherit them, and
     * must stop at its first failed check.
     */
    g_test_init(&argc, &argv, NULL);
    vhca_admin_cases_register();
    return g_test_run();
}
