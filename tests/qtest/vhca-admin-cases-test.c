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
    vhca_test_init(&argc, &argv);
    vhca_admin_cases_register();
    return g_test_run();
}
