/*
 * vhca engine: the device's state as a versioned, endian-neutral
 * description for live migration (issue 30; docs/developer-guide.rst,
 * "Migration: the engine's state").  Not a memory dump: a header, then
 * one record per object (type, version, index, length, CRC), fields
 * little-endian at fixed widths, timers as time relative to the clock,
 * page lists as the guest addresses they are, never a host pointer.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_STATE_H
#define HW_VHCA_STATE_H

#include "vhca-core.h"

/* "VHCASTAT", then the format version (docs/developer-guide.rst). */
#define VHCA_STATE_MAGIC            "VHCASTAT"
#define VHCA_STATE_FORMAT_VERSION   1

/* Record types; each has its own version (VHCA_STATE_V_*). */
enum vhca_state_rec {
    VHCA_STATE_REC_DEVICE = 1,      /* registers, config, port, counters */
    VHCA_STATE_REC_PD = 2,
    VHCA_STATE_REC_XRCD = 3,
    VHCA_STATE_REC_EQ = 4,          /* completion EQs (EQ 0 is in DEVICE) */
    VHCA_STATE_REC_CQ = 5,
    VHCA_STATE_REC_SRQ = 6,
    VHCA_STATE_REC_MR = 7,          /* MRs and memory windows */
    VHCA_STATE_REC_QP = 8,
    VHCA_STATE_REC_END = 0xffff,    /* the number of records before it */
};

/* A growable byte buffer the saver appends to. */
typedef struct VhcaStateBuf {
    uint8_t *data;
    size_t len;
    size_t cap;
    bool oom;
} VhcaStateBuf;

void vhca_state_buf_free(VhcaStateBuf *b);

/*
 * Append the state of @core to @out (which the caller frees with
 * vhca_state_buf_free()).  Returns 0, or -1 with a sentence in @err.
 * Only reads the engine (and its clock), between two engine calls.
 */
int vhca_state_save(const VhcaCore *core, VhcaStateBuf *out, char *err,
                    size_t err_len);

/*
 * Replace the state of @core by the one in @buf.  The stream is decoded
 * and checked whole into a fresh engine first: on any fault (truncated,
 * corrupted, unknown version, a value an admin command would refuse, a
 * reference to an object that is not there, another device config) it
 * returns -1 with a sentence in @err and @core is unchanged.  On success
 * @core's objects are the stream's, its link state (the backend's) is
 * kept, received frames it had queued are gone, and its transport is
 * rescheduled (ops->schedule, ops->timer_arm).
 */
int vhca_state_load(VhcaCore *core, const uint8_t *buf, size_t len,
                    char *err, size_t err_len);

/*
 * Check the engine's own field tables: in order, no overlap, and no gap
 * between two fields (or at the end) wider than alignment can leave, so
 * that a field added to a struct and not to its table fails here.  A
 * field small enough to hide in what looks like padding is caught by
 * the unit tests' save-load-save round trips instead.  0, or -1 with
 * the first gap.
 */
int vhca_state_self_check(char *err, size_t err_len);

#endif /* HW_VHCA_STATE_H */
