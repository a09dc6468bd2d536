/*
 * What the engine's fuzz targets share (fuzz-vhca.c for the Ethernet
 * port, fuzz-vhca-ib.c for the InfiniBand port): the input reader, the
 * invariants every engine keeps whatever its port, frames handed over on
 * the heap, and the reporting.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhca-harness.h"
#include "vhca-wire.h"

/*
 * The input, read as the fields of a list of operations.  Past its end
 * every field reads as zero, so that every input is a valid program.
 */
typedef struct FuzzIn {
    const uint8_t *p;
    size_t left;
} FuzzIn;

static inline uint8_t in_u8(FuzzIn *in)
{
    if (!in->left) {
        return 0;
    }
    in->left--;
    return *in->p++;
}

static inline uint16_t in_u16(FuzzIn *in)
{
    uint16_t v = in_u8(in);

    return v | (uint16_t)in_u8(in) << 8;
}

static inline uint32_t in_u32(FuzzIn *in)
{
    uint32_t v = in_u16(in);

    return v | (uint32_t)in_u16(in) << 16;
}

static inline uint64_t in_u64(FuzzIn *in)
{
    uint64_t v = in_u32(in);

    return v | (uint64_t)in_u32(in) << 32;
}

/*
 * g_error(), the invariants' report, raises SIGTRAP, which libFuzzer
 * does not catch: turn it into an abort, which it does (and saves the
 * input), unless a handler is there already (fuzz-driver.c's).
 */
void fuzz_catch_traps(void);

/* VHCA_FUZZ_VERBOSE: 1 the counters after each input, 2 every CQE too. */
int fuzz_verbose(void);

/* Every counter of @a and @b that is not 0, one line per engine. */
void fuzz_print_counters(Harness *a, Harness *b);

/*
 * What holds of any engine after any input: every guest error came with
 * its typed event, rcvd_dropped is the sum of the drop_* counters, admin
 * errors do not exceed admin commands.
 */
void fuzz_check_counters(Harness *h);

/*
 * A CQE's status is one the device defines (no EEC, bad response or
 * local access errors: those are RD's).
 */
void fuzz_check_cqe_status(uint8_t status);

/* Hand @h exactly @len bytes on the heap, so ASan sees overruns. */
void fuzz_deliver(Harness *h, const uint8_t *buf, size_t len);

/* Is [@addr, +@len) guest RAM? */
bool fuzz_ram_range(uint64_t addr, size_t len);

/*
 * Run two engines back to back to idle; then, for at most @max_ns of
 * fake time and @max_timers expiries (an RNR NAK loop with infinite
 * retries never ends on its own), jump to the next timer deadline and
 * run again.
 */
void fuzz_settle(Harness *a, Harness *b, uint64_t max_ns,
                 unsigned max_timers);

/*
 * Build @pkt (its payload @plen bytes of a pattern @seed makes) into
 * @frame, as the input asked where it can: without the payload if its
 * opcode carries none; an opcode the builder does not know is built as
 * @fallback and *@unknown set, for the caller to write the opcode over
 * it and make the CRCs right again.  Returns the frame's length.
 */
size_t fuzz_build_packet(VhcaWirePacket *pkt, uint32_t plen, uint8_t seed,
                         uint8_t fallback, uint8_t *frame, size_t size,
                         bool *unknown);

/*
 * A PSN near the one QP @qpn of @core expects (its responder's for a
 * request, the oldest unacknowledged for a @response), or any.
 */
uint32_t fuzz_in_psn(FuzzIn *in, VhcaCore *core, uint32_t qpn,
                     bool response);

#endif /* FUZZ_COMMON_H */
