/*
 * What the engine's fuzz targets share; see fuzz-common.h.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "vhca-rdma.h"
#include "vhca-wire.h"

static void trap_to_abort(int sig)
{
    (void)sig;
    abort();
}

void fuzz_catch_traps(void)
{
    struct sigaction old;

    if (sigaction(SIGTRAP, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        struct sigaction sa = { .sa_handler = trap_to_abort };

        sigaction(SIGTRAP, &sa, NULL);
    }
}

int fuzz_verbose(void)
{
    const char *v = g_getenv("VHCA_FUZZ_VERBOSE");

    return v ? atoi(v) : 0;
}

void fuzz_print_counters(Harness *a, Harness *b)
{
    Harness *h[2] = { a, b };
    unsigned i, c;

    for (i = 0; i < 2; i++) {
        g_printerr("node %c:", 'A' + i);
        for (c = 0; c < VHCA_CNT_MAX; c++) {
            if (h[i]->core.counters[c]) {
                g_printerr(" %s=%" G_GUINT64_FORMAT, vhca_counter_name(c),
                           h[i]->core.counters[c]);
            }
        }
        g_printerr("\n");
    }
}

void fuzz_check_counters(Harness *h)
{
    uint64_t drops = 0;
    unsigned c;

    g_assert_cmpuint(h->typed_error_calls, ==, h->guest_error_calls);
    for (c = VHCA_CNT_DROP_MALFORMED; c < VHCA_CNT_MAX; c++) {
        drops += h->core.counters[c];
    }
    g_assert_cmpuint(h->core.counters[VHCA_CNT_ROCE_RX_DROPPED], ==, drops);
    g_assert_cmpuint(h->core.counters[VHCA_CNT_ADMIN_ERRORS], <=,
                     h->core.counters[VHCA_CNT_ADMIN_COMMANDS]);
}

void fuzz_check_cqe_status(uint8_t status)
{
    g_assert_cmpuint(status, <=, VHCA_WC_RNR_RETRY_EXC_ERR);
    g_assert_true(status != 3 && (status < 7 || status > 8));
}

void fuzz_deliver(Harness *h, const uint8_t *buf, size_t len)
{
    uint8_t *copy = g_malloc(len ? len : 1);

    memcpy(copy, buf, len);
    harness_deliver(h, copy, len);
    g_free(copy);
}

bool fuzz_ram_range(uint64_t addr, size_t len)
{
    return addr >= RAM_BASE && len <= RAM_SIZE &&
           addr - RAM_BASE <= RAM_SIZE - len;
}

void fuzz_settle(Harness *a, Harness *b, uint64_t max_ns,
                 unsigned max_timers)
{
    uint64_t start = a->now_ns;

    harness_pair_settle(a, b, 0);
    while ((a->timer_armed || b->timer_armed) && max_timers-- &&
           a->now_ns - start < max_ns) {
        harness_pair_advance_to_timer(a, b);
        harness_pair_settle(a, b, 0);
    }
}

size_t fuzz_build_packet(VhcaWirePacket *pkt, uint32_t plen, uint8_t seed,
                         uint8_t fallback, uint8_t *frame, size_t size,
                         bool *unknown)
{
    static uint8_t payload[VHCA_ETH_MAX_FRAME];
    uint8_t opcode = pkt->tp.bth.opcode;
    uint32_t i;
    size_t len;

    g_assert_cmpuint(plen, <=, sizeof(payload));
    for (i = 0; i < plen; i++) {
        payload[i] = (uint8_t)(i * 7 + seed);
    }
    pkt->payload = payload;
    pkt->payload_len = plen;
    *unknown = false;
    len = vhca_wire_build(pkt, frame, size);
    if (!len) {
        /* An opcode without payload, or an unknown one: without. */
        pkt->payload_len = 0;
        len = vhca_wire_build(pkt, frame, size);
    }
    if (!len) {
        pkt->tp.bth.opcode = fallback;
        pkt->payload_len = plen;
        len = vhca_wire_build(pkt, frame, size);
        g_assert_cmpuint(len, >, 0);
        pkt->tp.bth.opcode = opcode;
        *unknown = true;
    }
    return len;
}

uint32_t fuzz_in_psn(FuzzIn *in, VhcaCore *core, uint32_t qpn,
                     bool response)
{
    VhcaQp *qp = vhca_qp_lookup(core, qpn);
    uint8_t mode = in_u8(in);
    uint32_t base = 0;

    if (qp) {
        base = response ? qp->req.una_psn : qp->resp.epsn;
    }
    if (mode < 0xc0) {
        return (base + (int8_t)in_u8(in)) & VHCA_IB_QPN_MASK;
    }
    return in_u32(in) & VHCA_IB_QPN_MASK;
}
