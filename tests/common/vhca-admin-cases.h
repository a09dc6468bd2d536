/*
 * Admin commands the device must refuse: one table of cases, run by the
 * engine unit tests and by the qtests alike (see vhca-dut.h).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_ADMIN_CASES_H
#define VHCA_ADMIN_CASES_H

/*
 * Register one test per row of the table under /vhca/admin-cases/ (one
 * per kind of non-RAM address for the rows that take one) with
 * vhca_dut_add_test().  Returns the number of tests registered.
 */
unsigned vhca_admin_cases_register(void);

#endif /* VHCA_ADMIN_CASES_H */
