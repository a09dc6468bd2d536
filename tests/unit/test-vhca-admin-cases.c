/*
 * vhca engine unit tests: the admin commands the device must refuse, the
 * table shared with the qtests (tests/common/vhca-admin-cases.c), run on
 * the engine in-process.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <glib.h>

#include "vhca-admin-cases.h"

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    vhca_admin_cases_register();
    return g_test_run();
}
