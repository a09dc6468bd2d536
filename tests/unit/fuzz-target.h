/*
 * The entry point of a fuzz target, as libFuzzer calls it: run one input.
 * fuzz-driver.c calls it too, for builds without libFuzzer.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef FUZZ_TARGET_H
#define FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* FUZZ_TARGET_H */
