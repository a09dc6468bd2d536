/*
 * Test harness for the vhca engine without QEMU.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-harness.h"
#include "vhca-ib.h"

const uint8_t harness_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

const VhcaCoreConfig harness_default_cfg = {
    .mac = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
    .gid_tbl_len = 16,
    .num_db_pages = 4,
    .num_vectors = 8,
    .max_qp = 8,
    .max_cq = 8,
    .max_mr = 8,
    .max_pd = 4,
    .max_srq = 4,
};

size_t harness_ram_size = RAM_SIZE;

static bool ram_range(const Harness *h, uint64_t addr, size_t len)
{
    return addr >= RAM_BASE && len <= h->ram_size &&
           addr - RAM_BASE <= h->ram_size - len;
}

static int h_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    Harness *h = opaque;

    if (!ram_range(h, addr, len)) {
        return -1;
    }
    memcpy(buf, h->ram + (addr - RAM_BASE), len);
    return 0;
}

static int h_dma_write(void *opaque, uint64_t addr, const void *buf,
                       size_t len)
{
    Harness *h = opaque;

    if (h->fail_dma_write_after && --h->fail_dma_write_after == 0) {
        return -1;
    }
    if (!ram_range(h, addr, len)) {
        return -1;
    }
    memcpy(h->ram + (addr - RAM_BASE), buf, len);
    return 0;
}

void harness_deliver(Harness *h, const uint8_t *buf, size_t len)
{
    vhca_core_receive(&h->core, buf, len);
}

static void h_send_frame(void *opaque, const uint8_t *buf, size_t len)
{
    Harness *h = opaque;

    if (h->peer) {
        g_assert_cmpuint(len, <=, VHCA_ETH_MAX_FRAME);
        h->tx_frames++;
        if (h->tx_hook) {
            h->tx_hook(h, buf, len);
        } else {
            harness_deliver(h->peer, buf, len);
        }
        return;
    }

    g_assert_cmpuint(len, <=, VHCA_ETH_MAX_FRAME);
    g_assert_cmpuint(h->nframes, <, MAX_FRAMES);
    h->frames[h->nframes].len = len;
    memcpy(h->frames[h->nframes].data, buf, len);
    h->nframes++;
}

static void h_raise_irq(void *opaque, unsigned vector)
{
    Harness *h = opaque;

    g_assert_cmpuint(vector, <, h->core.cfg.num_vectors);
    h->irqs[vector]++;
}

static void h_rx_ready(void *opaque)
{
    Harness *h = opaque;

    h->rx_ready_calls++;
}

static void h_admin_cmd_done(void *opaque, uint32_t slot, uint16_t opcode,
                             uint32_t token, uint8_t status,
                             uint32_t syndrome)
{
    Harness *h = opaque;

    (void)slot;
    (void)syndrome;
    h->admin_done_calls++;
    h->last_opcode = opcode;
    h->last_token = token;
    h->last_status = status;
}

static void h_guest_error(void *opaque, VhcaGuestError kind, const char *msg)
{
    Harness *h = opaque;

    g_assert_cmpuint(kind, <, VHCA_GUEST_ERR__MAX);
    g_assert_nonnull(msg);
    g_assert_cmpuint(strlen(msg), >, 0);
    h->guest_errors[kind]++;
    h->guest_error_calls++;
    g_strlcpy(h->last_error, msg, sizeof(h->last_error));
    if (g_test_verbose()) {
        g_test_message("guest error [%s]: %s",
                       vhca_core_guest_error_name(kind), msg);
    }
}

static uint64_t h_now_ns(void *opaque)
{
    Harness *h = opaque;

    return h->now_ns;
}

static void h_timer_arm(void *opaque, uint64_t deadline_ns)
{
    Harness *h = opaque;

    h->timer_armed = true;
    h->timer_deadline = deadline_ns;
}

static void h_timer_cancel(void *opaque)
{
    Harness *h = opaque;

    h->timer_armed = false;
}

static void h_schedule(void *opaque)
{
    Harness *h = opaque;

    h->work_scheduled = true;
}

static void h_rx_drop(void *opaque, const char *reason, const char *detail,
                      uint32_t qpn)
{
    Harness *h = opaque;

    h->rx_drops++;
    g_strlcpy(h->last_drop_reason, reason, sizeof(h->last_drop_reason));
    g_strlcpy(h->last_drop_detail, detail, sizeof(h->last_drop_detail));
    h->last_drop_qpn = qpn;
}

/* The typed trace hooks: count, and keep the last call's arguments. */

static void h_qp_state(void *opaque, uint32_t qpn, uint8_t type,
                       uint8_t from, uint8_t to, VhcaQpChange why)
{
    EvQpState *e = &((Harness *)opaque)->ev.qp_state;

    g_assert_cmpuint(from, !=, to);
    e->n++;
    e->qpn = qpn;
    e->type = type;
    e->from = from;
    e->to = to;
    e->why = why;
}

static void h_retransmit(void *opaque, uint32_t qpn, uint32_t psn,
                         VhcaRetryCause why)
{
    EvRetransmit *e = &((Harness *)opaque)->ev.retransmit;

    e->n++;
    e->qpn = qpn;
    e->psn = psn;
    e->why = why;
}

static void h_nak_sent(void *opaque, uint32_t qpn, uint32_t psn,
                       VhcaNakKind kind, uint8_t code)
{
    EvNak *e = &((Harness *)opaque)->ev.nak_sent;

    e->n++;
    e->qpn = qpn;
    e->psn = psn;
    e->kind = kind;
    e->code = code;
}

static void h_nak_rcvd(void *opaque, uint32_t qpn, uint32_t psn,
                       VhcaNakKind kind, uint8_t code)
{
    EvNak *e = &((Harness *)opaque)->ev.nak_rcvd;

    e->n++;
    e->qpn = qpn;
    e->psn = psn;
    e->kind = kind;
    e->code = code;
}

static void h_rnr_wait(void *opaque, uint32_t qpn, uint32_t psn,
                       uint64_t timer_ns)
{
    EvRnrWait *e = &((Harness *)opaque)->ev.rnr_wait;

    e->n++;
    e->qpn = qpn;
    e->psn = psn;
    e->timer_ns = timer_ns;
}

static void h_ack_timeout(void *opaque, uint32_t qpn, uint32_t psn,
                          uint8_t retries_left)
{
    EvAckTimeout *e = &((Harness *)opaque)->ev.ack_timeout;

    e->n++;
    e->qpn = qpn;
    e->psn = psn;
    e->retries_left = retries_left;
}

static void h_window_cut(void *opaque, uint32_t qpn, uint32_t from,
                         uint32_t to, VhcaRetryCause why)
{
    EvWindowCut *e = &((Harness *)opaque)->ev.window_cut;

    g_assert_cmpuint(to, <, from);
    g_assert_cmpuint(to, >=, 1);
    if (!e->n || to < e->min_to) {
        e->min_to = to;
    }
    e->n++;
    e->qpn = qpn;
    e->from = from;
    e->to = to;
    e->why = why;
}

static void h_timer_backoff(void *opaque, uint32_t qpn, uint64_t timer_ns,
                            uint8_t backoff)
{
    EvTimerBackoff *e = &((Harness *)opaque)->ev.timer_backoff;

    g_assert_cmpuint(backoff, >=, 1);
    g_assert_cmpuint(backoff, <=, 2);
    e->n++;
    e->qpn = qpn;
    e->timer_ns = timer_ns;
    e->backoff = backoff;
}

static void h_cqe_error(void *opaque, uint32_t cqn, uint32_t qpn,
                        uint64_t wr_id, uint8_t opcode, uint8_t status,
                        uint32_t vendor_err)
{
    EvCqeError *e = &((Harness *)opaque)->ev.cqe_error;

    g_assert_cmpuint(status, !=, VHCA_WC_SUCCESS);
    e->n++;
    e->cqn = cqn;
    e->qpn = qpn;
    e->wr_id = wr_id;
    e->opcode = opcode;
    e->status = status;
    e->vendor_err = vendor_err;
}

static void h_srq_limit(void *opaque, uint32_t srqn, uint32_t limit,
                        uint32_t wqes)
{
    EvSrqLimit *e = &((Harness *)opaque)->ev.srq_limit;

    g_assert_cmpuint(wqes, <, limit);
    e->n++;
    e->srqn = srqn;
    e->limit = limit;
    e->wqes = wqes;
}

static void h_mw_bind_refused(void *opaque, uint32_t qpn, uint32_t key,
                              VhcaMwBindError why)
{
    EvMwBindRefused *e = &((Harness *)opaque)->ev.mw_bind_refused;

    g_assert_cmpuint(why, <, VHCA_MW_BIND__MAX);
    e->n++;
    e->qpn = qpn;
    e->key = key;
    e->why = why;
}

static void h_mw_invalidated(void *opaque, uint32_t qpn, uint32_t key,
                             VhcaMwInvalidation why)
{
    EvMwInvalidated *e = &((Harness *)opaque)->ev.mw_invalidated;

    g_assert_cmpuint(why, <, VHCA_MW_INV__MAX);
    e->n++;
    e->qpn = qpn;
    e->key = key;
    e->why = why;
}

static void h_ub_reg_access(void *opaque, bool write, uint64_t offset,
                            unsigned size, uint64_t value)
{
    EvUbRegAccess *e = &((Harness *)opaque)->ev.ub_reg_access;

    ((Harness *)opaque)->typed_error_calls++;
    e->n++;
    e->write = write;
    e->offset = offset;
    e->size = size;
    e->value = value;
}

static void h_ub_doorbell(void *opaque, uint64_t page, uint32_t offset,
                          unsigned size, uint32_t object)
{
    EvUbDoorbell *e = &((Harness *)opaque)->ev.ub_doorbell;

    ((Harness *)opaque)->typed_error_calls++;
    e->n++;
    e->page = page;
    e->offset = offset;
    e->size = size;
    e->object = object;
}

static void h_ub_ring_doorbell(void *opaque, VhcaRingId ring,
                               uint32_t object, uint32_t value)
{
    EvUbRingDoorbell *e = &((Harness *)opaque)->ev.ub_ring_doorbell;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(ring, <, VHCA_RING__MAX);
    e->n++;
    e->ring = ring;
    e->object = object;
    e->value = value;
}

static void h_ub_cq_doorbell(void *opaque, uint32_t cqn, uint32_t value,
                             uint32_t ci, uint32_t pi)
{
    EvUbCqDoorbell *e = &((Harness *)opaque)->ev.ub_cq_doorbell;

    ((Harness *)opaque)->typed_error_calls++;
    e->n++;
    e->cqn = cqn;
    e->value = value;
    e->ci = ci;
    e->pi = pi;
}

static void h_err_doorbell_index(void *opaque, VhcaRingId ring,
                                 uint32_t object, uint32_t index,
                                 uint32_t low, uint32_t high)
{
    EvErrDoorbellIndex *e = &((Harness *)opaque)->ev.err_doorbell_index;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(ring, <, VHCA_RING__MAX);
    e->n++;
    e->ring = ring;
    e->object = object;
    e->index = index;
    e->low = low;
    e->high = high;
}

static void h_err_ring_config(void *opaque, VhcaRingId ring, uint64_t base,
                              uint32_t log_size)
{
    EvErrRingConfig *e = &((Harness *)opaque)->ev.err_ring_config;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(ring, <, VHCA_RING__MAX);
    e->n++;
    e->ring = ring;
    e->base = base;
    e->log_size = log_size;
}

static void h_err_ring_running(void *opaque, VhcaRingId ring, uint32_t reg,
                               uint32_t value)
{
    EvErrRingRunning *e = &((Harness *)opaque)->ev.err_ring_running;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(ring, <, VHCA_RING__MAX);
    e->n++;
    e->ring = ring;
    e->reg = reg;
    e->value = value;
}

static void h_err_guest_ram(void *opaque, VhcaRingId ring, uint32_t object,
                            uint32_t index, uint64_t addr)
{
    EvErrGuestRam *e = &((Harness *)opaque)->ev.err_guest_ram;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(ring, <, VHCA_RING__MAX);
    e->n++;
    e->ring = ring;
    e->object = object;
    e->index = index;
    e->addr = addr;
}

static void h_err_frame_len(void *opaque, VhcaRingId ring, uint32_t index,
                            uint32_t len, uint32_t min, uint32_t max)
{
    EvErrFrameLen *e = &((Harness *)opaque)->ev.err_frame_len;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_true(len < min || len > max);
    e->n++;
    e->ring = ring;
    e->index = index;
    e->len = len;
    e->min = min;
    e->max = max;
}

static void h_err_queue_overflow(void *opaque, VhcaRingId ring,
                                 uint32_t object, uint32_t pi, uint32_t ci)
{
    EvErrQueueOverflow *e = &((Harness *)opaque)->ev.err_queue_overflow;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(ring, <, VHCA_RING__MAX);
    e->n++;
    e->ring = ring;
    e->object = object;
    e->pi = pi;
    e->ci = ci;
}

static void h_err_wqe(void *opaque, uint32_t qpn, VhcaRingId queue,
                      uint32_t index, uint8_t opcode, uint8_t status,
                      uint32_t vendor_err)
{
    EvErrWqe *e = &((Harness *)opaque)->ev.err_wqe;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_true(queue == VHCA_RING_SQ || queue == VHCA_RING_RQ ||
                  queue == VHCA_RING_SRQ);
    e->n++;
    e->qpn = qpn;
    e->queue = queue;
    e->index = index;
    e->opcode = opcode;
    e->status = status;
    e->vendor_err = vendor_err;
}

static void h_err_admin_cmd(void *opaque, uint16_t opcode, uint8_t status,
                            uint32_t syndrome)
{
    EvErrAdminCmd *e = &((Harness *)opaque)->ev.err_admin_cmd;

    ((Harness *)opaque)->typed_error_calls++;
    g_assert_cmpuint(status, !=, VHCA_ST_OK);
    e->n++;
    e->opcode = opcode;
    e->status = status;
    e->syndrome = syndrome;
}

static void h_pfc_pause_rcvd(void *opaque, uint8_t prio, uint16_t quanta,
                             bool paused)
{
    EvPfc *e = &((Harness *)opaque)->ev.pfc;

    g_assert_cmpuint(prio, <, 8);
    e->rcvd[prio]++;
    e->rcvd_quanta[prio] = quanta;
    e->rcvd_paused[prio] = paused;
}

static void h_pfc_pause_sent(void *opaque, uint8_t prio, uint16_t quanta,
                             uint32_t rx_frames, uint32_t rx_bytes)
{
    EvPfc *e = &((Harness *)opaque)->ev.pfc;

    g_assert_cmpuint(prio, <, 8);
    g_assert_true(rx_bytes >= rx_frames);
    e->sent[prio]++;
    e->sent_quanta[prio] = quanta;
}

static void h_pfc_resumed(void *opaque, uint8_t prio, uint64_t paused_ns)
{
    EvPfc *e = &((Harness *)opaque)->ev.pfc;

    g_assert_cmpuint(prio, <, 8);
    e->resumed[prio]++;
    e->resumed_paused_ns[prio] = paused_ns;
}

static const VhcaCoreOps harness_ops = {
    .dma_read = h_dma_read,
    .dma_write = h_dma_write,
    .send_frame = h_send_frame,
    .raise_irq = h_raise_irq,
    .rx_ready = h_rx_ready,
    .admin_cmd_done = h_admin_cmd_done,
    .guest_error = h_guest_error,
    .rx_drop = h_rx_drop,
    .qp_state = h_qp_state,
    .retransmit = h_retransmit,
    .nak_sent = h_nak_sent,
    .nak_rcvd = h_nak_rcvd,
    .rnr_wait = h_rnr_wait,
    .ack_timeout = h_ack_timeout,
    .window_cut = h_window_cut,
    .timer_backoff = h_timer_backoff,
    .cqe_error = h_cqe_error,
    .srq_limit = h_srq_limit,
    .mw_bind_refused = h_mw_bind_refused,
    .mw_invalidated = h_mw_invalidated,
    .ub_reg_access = h_ub_reg_access,
    .ub_doorbell = h_ub_doorbell,
    .ub_ring_doorbell = h_ub_ring_doorbell,
    .ub_cq_doorbell = h_ub_cq_doorbell,
    .err_doorbell_index = h_err_doorbell_index,
    .err_ring_config = h_err_ring_config,
    .err_ring_running = h_err_ring_running,
    .err_guest_ram = h_err_guest_ram,
    .err_frame_len = h_err_frame_len,
    .err_queue_overflow = h_err_queue_overflow,
    .err_wqe = h_err_wqe,
    .err_admin_cmd = h_err_admin_cmd,
    .pfc_pause_rcvd = h_pfc_pause_rcvd,
    .pfc_pause_sent = h_pfc_pause_sent,
    .pfc_resumed = h_pfc_resumed,
    .now_ns = h_now_ns,
    .timer_arm = h_timer_arm,
    .timer_cancel = h_timer_cancel,
    .schedule = h_schedule,
};

void harness_run(Harness *h)
{
    unsigned passes = 0;

    while (h->work_scheduled) {
        h->work_scheduled = false;
        vhca_core_run_deferred(&h->core);
        g_assert_cmpuint(++passes, <, 1000000);
    }
}

void harness_advance(Harness *h, uint64_t ns)
{
    h->now_ns += ns;
    if (h->timer_armed && h->timer_deadline <= h->now_ns) {
        h->timer_armed = false;
        vhca_core_timer_expired(&h->core);
    }
}

void harness_pair_advance_to_timer(Harness *a, Harness *b)
{
    uint64_t next = UINT64_MAX;

    if (a->timer_armed) {
        next = a->timer_deadline;
    }
    if (b->timer_armed && b->timer_deadline < next) {
        next = b->timer_deadline;
    }
    /* The clocks run together. */
    next = next > a->now_ns ? next - a->now_ns : 0;
    harness_advance(a, next);
    harness_advance(b, next);
}

static void pair_run(Harness *a, Harness *b)
{
    unsigned passes = 0;

    while (a->work_scheduled || b->work_scheduled) {
        harness_run(a);
        harness_run(b);
        g_assert_cmpuint(++passes, <, 1000000);
    }
}

uint64_t harness_pair_settle(Harness *a, Harness *b, uint64_t max_ns)
{
    uint64_t start = a->now_ns;

    pair_run(a, b);
    while ((a->timer_armed || b->timer_armed) &&
           a->now_ns - start < max_ns) {
        harness_pair_advance_to_timer(a, b);
        pair_run(a, b);
    }
    return a->now_ns - start;
}

/*
 * Guest RAMs freed, kept for the next harnesses of their size: a process
 * that makes and frees harnesses by the thousand (the fuzz target, two
 * per input) would otherwise spend most of its time faulting in fresh
 * pages and, under AddressSanitizer, poisoning and unpoisoning their
 * shadow.  They stay reachable, so LeakSanitizer does not count them.
 */
static struct {
    uint8_t *ram;
    size_t size;
} spare_ram[2];

static uint8_t *ram_new(size_t size)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(spare_ram); i++) {
        uint8_t *ram = spare_ram[i].ram;

        if (ram && spare_ram[i].size == size) {
            spare_ram[i].ram = NULL;
            memset(ram, 0, size);
            return ram;
        }
    }
    return g_malloc0(size);
}

static void ram_free(uint8_t *ram, size_t size)
{
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(spare_ram); i++) {
        if (!spare_ram[i].ram) {
            spare_ram[i].ram = ram;
            spare_ram[i].size = size;
            return;
        }
    }
    g_free(ram);
}

Harness *harness_new(const VhcaCoreConfig *cfg)
{
    Harness *h = g_new0(Harness, 1);

    h->ram_size = harness_ram_size;
    h->ram = ram_new(h->ram_size);
    g_assert_null(vhca_core_config_check(cfg ? cfg : &harness_default_cfg));
    g_assert_cmpint(vhca_core_init(&h->core,
                                   cfg ? cfg : &harness_default_cfg,
                                   &harness_ops, h), ==, 0);
    h->core.link_up = true;
    /* The IB port trains on the cable: INIT, as after a reset. */
    if (h->core.cfg.link == VHCA_LINK_IB) {
        vhca_ib_port_reset(&h->core);
    }
    h->rx_ready_calls = 0;
    return h;
}

void harness_free(Harness *h)
{
    /* Each guest error was reported with its numbers and its sentence. */
    g_assert_cmpuint(h->typed_error_calls, ==, h->guest_error_calls);
    vhca_core_cleanup(&h->core);
    ram_free(h->ram, h->ram_size);
    g_free(h);
}

void *ram_ptr(Harness *h, uint64_t addr, size_t len)
{
    g_assert_true(ram_range(h, addr, len));
    return h->ram + (addr - RAM_BASE);
}

void ram_write(Harness *h, uint64_t addr, const void *buf, size_t len)
{
    memcpy(ram_ptr(h, addr, len), buf, len);
}

void ram_read(Harness *h, uint64_t addr, void *buf, size_t len)
{
    memcpy(buf, ram_ptr(h, addr, len), len);
}

uint32_t reg_read(Harness *h, uint32_t offset)
{
    return (uint32_t)vhca_core_reg_read(&h->core, offset, 4);
}

void reg_write(Harness *h, uint32_t offset, uint32_t value)
{
    vhca_core_reg_write(&h->core, offset, value, 4);
}

uint64_t counter(Harness *h, enum vhca_counter c)
{
    uint32_t lo = reg_read(h, VHCA_REG_COUNTERS + 8 * c);
    uint32_t hi = reg_read(h, VHCA_REG_COUNTERS + 8 * c + 4);

    return ((uint64_t)hi << 32) | lo;
}

unsigned guest_errors_total(const Harness *h)
{
    unsigned i, n = 0;

    for (i = 0; i < VHCA_GUEST_ERR__MAX; i++) {
        n += h->guest_errors[i];
    }
    return n;
}

void harness_enable(Harness *h)
{
    reg_write(h, VHCA_REG_ADMQ_BASE_LO, (uint32_t)ADMQ_ADDR);
    reg_write(h, VHCA_REG_ADMQ_BASE_HI, (uint32_t)(ADMQ_ADDR >> 32));
    reg_write(h, VHCA_REG_ADMQ_LOG_SIZE, ADMQ_LOG);
    reg_write(h, VHCA_REG_AEQ_BASE_LO, (uint32_t)AEQ_ADDR);
    reg_write(h, VHCA_REG_AEQ_BASE_HI, (uint32_t)(AEQ_ADDR >> 32));
    reg_write(h, VHCA_REG_AEQ_LOG_SIZE, AEQ_LOG);
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_READY, ==,
                    VHCA_STATUS_READY);
    h->admq_pi = 0;
    h->aeq_ci = 0;
}

void admin_post(Harness *h, uint32_t pi, uint16_t opcode, uint32_t token,
                const void *in, size_t in_len)
{
    struct vhca_admin_cmd cmd;
    uint32_t slot = pi & ((1u << ADMQ_LOG) - 1);

    g_assert_cmpuint(in_len, <=, sizeof(cmd.in));
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = GUINT16_TO_LE(opcode);
    cmd.token = GUINT32_TO_LE(token);
    if (in_len) {
        memcpy(cmd.in, in, in_len);
    }
    /* Garbage in the output half: the device must overwrite all of it. */
    memset(&cmd.status, 0xa5, sizeof(cmd) - offsetof(struct vhca_admin_cmd,
                                                     status));
    cmd.done = 0;
    ram_write(h, ADMQ_ADDR + slot * sizeof(cmd), &cmd, sizeof(cmd));
}

struct vhca_admin_cmd admin_entry(Harness *h, uint32_t slot)
{
    struct vhca_admin_cmd cmd;

    ram_read(h, ADMQ_ADDR + (slot & ((1u << ADMQ_LOG) - 1)) * sizeof(cmd),
             &cmd, sizeof(cmd));
    return cmd;
}

uint8_t admin_cmd(Harness *h, uint16_t opcode, uint32_t token,
                  const void *in, size_t in_len, void *out)
{
    uint32_t pi = h->admq_pi;
    struct vhca_admin_cmd cmd;

    admin_post(h, pi, opcode, token, in, in_len);
    h->admq_pi++;
    reg_write(h, VHCA_REG_ADMQ_PI, h->admq_pi);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, h->admq_pi);

    cmd = admin_entry(h, pi);
    g_assert_cmpuint(cmd.done, ==, 1);
    g_assert_cmpuint(cmd.token, ==, GUINT32_TO_LE(token));
    g_assert_cmpuint(cmd.opcode, ==, GUINT16_TO_LE(opcode));
    if (out) {
        memcpy(out, cmd.out, sizeof(cmd.out));
    }
    return cmd.status;
}

struct vhca_eqe aeq_entry(Harness *h, uint32_t index)
{
    struct vhca_eqe eqe;

    ram_read(h, AEQ_ADDR + (index & ((1u << AEQ_LOG) - 1)) * sizeof(eqe),
             &eqe, sizeof(eqe));
    return eqe;
}

void gid_from_ipv4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
                   uint8_t d)
{
    memset(gid, 0, 16);
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12] = a;
    gid[13] = b;
    gid[14] = c;
    gid[15] = d;
}

uint8_t add_gid(Harness *h, uint16_t index, uint8_t type,
                const uint8_t gid[16])
{
    struct vhca_cmd_gid_in in = {
        .index = GUINT16_TO_LE(index),
        .port = 1,
        .type = type,
    };

    memcpy(in.gid, gid, 16);
    return admin_cmd(h, VHCA_CMD_ADD_GID, 0x6100 + index, &in, sizeof(in),
                     NULL);
}

void eth_setup(Harness *h, uint32_t eth_ctrl)
{
    reg_write(h, VHCA_REG_TX_BASE_LO, (uint32_t)TX_RING_ADDR);
    reg_write(h, VHCA_REG_TX_BASE_HI, (uint32_t)(TX_RING_ADDR >> 32));
    reg_write(h, VHCA_REG_TX_LOG_SIZE, ETH_LOG);
    reg_write(h, VHCA_REG_RX_BASE_LO, (uint32_t)RX_RING_ADDR);
    reg_write(h, VHCA_REG_RX_BASE_HI, (uint32_t)(RX_RING_ADDR >> 32));
    reg_write(h, VHCA_REG_RX_LOG_SIZE, ETH_LOG);
    reg_write(h, VHCA_REG_ETH_CTRL, eth_ctrl);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==, eth_ctrl);
}

static void desc_write(Harness *h, uint64_t ring, uint32_t index,
                       uint64_t addr, uint16_t len)
{
    struct vhca_eth_desc d = {
        .addr = GUINT64_TO_LE(addr),
        .len = GUINT16_TO_LE(len),
        .flags = 0,
    };

    ram_write(h, ring + (index & ((1u << ETH_LOG) - 1)) * sizeof(d), &d,
              sizeof(d));
}

static struct vhca_eth_desc desc_read(Harness *h, uint64_t ring,
                                      uint32_t index)
{
    struct vhca_eth_desc d;

    ram_read(h, ring + (index & ((1u << ETH_LOG) - 1)) * sizeof(d), &d,
             sizeof(d));
    d.addr = GUINT64_FROM_LE(d.addr);
    d.len = GUINT16_FROM_LE(d.len);
    d.flags = GUINT16_FROM_LE(d.flags);
    return d;
}

void tx_post(Harness *h, uint32_t index, uint64_t addr, uint16_t len)
{
    desc_write(h, TX_RING_ADDR, index, addr, len);
    reg_write(h, VHCA_REG_TX_PI, index + 1);
}

struct vhca_eth_desc tx_desc(Harness *h, uint32_t index)
{
    return desc_read(h, TX_RING_ADDR, index);
}

void rx_post(Harness *h, uint32_t index, uint16_t size)
{
    uint64_t buf = RX_BUF_ADDR +
                   (uint64_t)(index & ((1u << ETH_LOG) - 1)) * RX_BUF_SIZE;

    desc_write(h, RX_RING_ADDR, index, buf, size);
}

struct vhca_eth_desc rx_desc(Harness *h, uint32_t index)
{
    return desc_read(h, RX_RING_ADDR, index);
}

size_t build_eth(uint8_t *buf, const uint8_t dst[6], uint16_t ethertype,
                 size_t payload_len)
{
    static const uint8_t src[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
    size_t i;

    memcpy(buf, dst, 6);
    memcpy(buf + 6, src, 6);
    buf[12] = ethertype >> 8;
    buf[13] = ethertype & 0xff;
    for (i = 0; i < payload_len; i++) {
        buf[14 + i] = (uint8_t)(i * 7 + 3);
    }
    return 14 + payload_len;
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

size_t build_udp4(uint8_t *buf, const uint8_t daddr[4], uint16_t dport,
                  size_t payload_len)
{
    static const uint8_t saddr[4] = { 10, 0, 0, 99 };
    size_t len = build_eth(buf, harness_mac, 0x0800,
                           20 + 8 + payload_len);
    uint8_t *ip = buf + 14;
    uint8_t *udp = ip + 20;

    memset(ip, 0, 28);
    ip[0] = 0x45;
    put_be16(ip + 2, (uint16_t)(20 + 8 + payload_len));
    ip[6] = 0x40;                       /* DF */
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, saddr, 4);
    memcpy(ip + 16, daddr, 4);
    put_be16(udp, 0xc000);
    put_be16(udp + 2, dport);
    put_be16(udp + 4, (uint16_t)(8 + payload_len));
    return len;
}

size_t build_udp6(uint8_t *buf, const uint8_t daddr[16], uint16_t dport,
                  size_t payload_len)
{
    size_t len = build_eth(buf, harness_mac, 0x86dd,
                           40 + 8 + payload_len);
    uint8_t *ip = buf + 14;
    uint8_t *udp = ip + 40;

    memset(ip, 0, 48);
    ip[0] = 0x60;
    put_be16(ip + 4, (uint16_t)(8 + payload_len));
    ip[6] = 17;
    ip[7] = 64;
    ip[8] = 0xfe;
    ip[9] = 0x80;
    ip[23] = 1;
    memcpy(ip + 24, daddr, 16);
    put_be16(udp, 0xc000);
    put_be16(udp + 2, dport);
    put_be16(udp + 4, (uint16_t)(8 + payload_len));
    return len;
}

/* ---------------------------------------------------------------------- */
/* RDMA resources                                                         */
/* ---------------------------------------------------------------------- */

uint64_t rdma_alloc(Harness *h, uint32_t npages)
{
    uint64_t addr;

    if (h->rdma_next == 0) {
        h->rdma_next = RDMA_MEM_BASE;
    }
    addr = h->rdma_next;
    h->rdma_next += (uint64_t)npages * 4096;
    g_assert_cmpuint(h->rdma_next, <=, RAM_BASE + h->ram_size);
    memset(ram_ptr(h, addr, (size_t)npages * 4096), 0,
           (size_t)npages * 4096);
    return addr;
}

uint64_t rdma_pbl(Harness *h, uint64_t first, uint32_t npages, bool reverse)
{
    uint64_t pbl = rdma_alloc(h, (npages * 8 + 4095) / 4096);
    uint32_t i;

    for (i = 0; i < npages; i++) {
        uint64_t page = first + 4096ull * (reverse ? npages - 1 - i : i);
        uint64_t le = GUINT64_TO_LE(page);

        ram_write(h, pbl + 8ull * i, &le, 8);
    }
    return pbl;
}

uint8_t rdma_cmd(Harness *h, uint16_t opcode, const void *mbox, size_t len,
                 uint32_t *handle, uint32_t *key)
{
    struct vhca_cmd_dma_in in = {
        .addr = GUINT64_TO_LE(MBOX_ADDR),
        .len = GUINT32_TO_LE((uint32_t)len),
    };
    struct vhca_cmd_obj_out out;
    uint8_t status;

    if (mbox) {
        ram_write(h, MBOX_ADDR, mbox, len);
    }
    status = admin_cmd(h, opcode, 0x5000 + opcode, &in, sizeof(in), &out);
    if (handle) {
        *handle = GUINT32_FROM_LE(out.handle);
    }
    if (key) {
        *key = GUINT32_FROM_LE(out.key);
    }
    return status;
}

uint64_t cc_counter(Harness *h, enum vhca_cc_counter c)
{
    struct vhca_cc_query q;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_QUERY_CC, NULL, sizeof(q), NULL,
                              NULL), ==, VHCA_ST_OK);
    ram_read(h, MBOX_ADDR, &q, sizeof(q));
    return GUINT64_FROM_LE(q.counters[c]);
}

uint8_t rdma_destroy(Harness *h, uint16_t opcode, uint32_t handle)
{
    struct vhca_cmd_obj_in in = { .handle = GUINT32_TO_LE(handle) };

    return admin_cmd(h, opcode, 0x6000 + opcode, &in, sizeof(in), NULL);
}

uint32_t rdma_alloc_uctx(Harness *h)
{
    struct vhca_cmd_uctx_out out;

    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_ALLOC_UCTX, 7, NULL, 0, &out),
                     ==, VHCA_ST_OK);
    return GUINT32_FROM_LE(out.db_page);
}

uint32_t rdma_create_pd(Harness *h)
{
    uint32_t pdn = 0;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_PD, NULL, 0, &pdn, NULL),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(pdn, >=, 1);
    return pdn;
}

uint32_t rdma_create_eq(Harness *h, uint8_t log, uint32_t vector,
                        uint64_t *ring)
{
    uint32_t pages = ((16u << log) + 4095) / 4096;
    uint64_t mem = rdma_alloc(h, pages);
    struct vhca_eq_create c = {
        .pbl_addr = GUINT64_TO_LE(rdma_pbl(h, mem, pages, false)),
        .npages = GUINT32_TO_LE(pages),
        .log_size = log,
        .vector = GUINT32_TO_LE(vector),
    };
    uint32_t eqn = 0;

    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_EQ, &c, sizeof(c), &eqn,
                              NULL), ==, VHCA_ST_OK);
    if (ring) {
        *ring = mem;
    }
    return eqn;
}

uint8_t rdma_create_cq(Harness *h, TestCq *cq, uint8_t log, uint32_t eqn,
                       uint32_t db_page)
{
    /* Out-of-range sizes (tests of refusal) get one page. */
    uint32_t pages = log <= VHCA_CQ_MAX_LOG_SIZE ?
                     ((32u << log) + 4095) / 4096 : 1;
    struct vhca_cq_create c;

    memset(cq, 0, sizeof(*cq));
    cq->log = log;
    cq->ring = rdma_alloc(h, pages);
    cq->dbrec = rdma_alloc(h, 1);
    memset(&c, 0, sizeof(c));
    c.pbl_addr = GUINT64_TO_LE(rdma_pbl(h, cq->ring, pages, true));
    c.npages = GUINT32_TO_LE(pages);
    c.log_size = log;
    c.eqn = GUINT32_TO_LE(eqn);
    c.db_page = GUINT32_TO_LE(db_page);
    c.dbrec_addr = GUINT64_TO_LE(cq->dbrec);
    return rdma_cmd(h, VHCA_CMD_CREATE_CQ, &c, sizeof(c), &cq->cqn, NULL);
}

/* Byte offset of entry @index in a ring laid out on reversed pages. */
static uint64_t reversed_ring_addr(uint64_t base, uint32_t npages,
                                   uint32_t index, uint32_t log,
                                   uint32_t stride)
{
    uint64_t off = (uint64_t)(index & ((1u << log) - 1)) * stride;

    return base + 4096ull * (npages - 1 - off / 4096) + off % 4096;
}

struct vhca_cqe cq_entry(Harness *h, const TestCq *cq, uint32_t index)
{
    struct vhca_cqe cqe;
    uint32_t pages = ((32u << cq->log) + 4095) / 4096;

    g_assert_cmpuint(cq->log, <=, VHCA_CQ_MAX_LOG_SIZE);

    ram_read(h, reversed_ring_addr(cq->ring, pages, index, cq->log, 32),
             &cqe, sizeof(cqe));
    cqe.wr_id = GUINT64_FROM_LE(cqe.wr_id);
    cqe.byte_len = GUINT32_FROM_LE(cqe.byte_len);
    cqe.qpn = GUINT32_FROM_LE(cqe.qpn);
    cqe.vendor_err = GUINT32_FROM_LE(cqe.vendor_err);
    return cqe;
}

bool cq_poll(Harness *h, TestCq *cq, struct vhca_cqe *cqe)
{
    struct vhca_cqe e = cq_entry(h, cq, cq->ci);
    uint32_t ci_le;

    if ((e.owner & 1) != (((cq->ci >> cq->log) & 1) ^ 1)) {
        return false;
    }
    *cqe = e;
    cq->ci++;
    ci_le = GUINT32_TO_LE(cq->ci);
    ram_write(h, cq->dbrec, &ci_le, 4);
    return true;
}

uint8_t rdma_create_qp(Harness *h, TestQp *qp, uint8_t type, uint32_t pdn,
                       uint32_t send_cqn, uint32_t recv_cqn,
                       uint32_t db_page)
{
    struct vhca_qp_create c;
    uint32_t sq_pages, rq_pages;

    memset(qp, 0, sizeof(*qp));
    qp->sq_log = 5;                     /* 32 x 256 = 2 pages */
    qp->rq_log = 4;                     /* 16 x 128 = 1 page (half) */
    qp->db_page = db_page;
    sq_pages = (VHCA_SEND_WQE_SIZE << qp->sq_log) / 4096;
    rq_pages = 1;
    qp->sq = rdma_alloc(h, sq_pages);
    qp->rq = rdma_alloc(h, rq_pages);
    memset(&c, 0, sizeof(c));
    c.type = type;
    c.sq_log_size = qp->sq_log;
    c.rq_log_size = qp->rq_log;
    c.pdn = GUINT32_TO_LE(pdn);
    c.send_cqn = GUINT32_TO_LE(send_cqn);
    c.recv_cqn = GUINT32_TO_LE(recv_cqn);
    c.sq_pbl_addr = GUINT64_TO_LE(rdma_pbl(h, qp->sq, sq_pages, true));
    c.rq_pbl_addr = GUINT64_TO_LE(rdma_pbl(h, qp->rq, rq_pages, false));
    c.sq_npages = GUINT32_TO_LE(sq_pages);
    c.rq_npages = GUINT32_TO_LE(rq_pages);
    c.db_page = GUINT32_TO_LE(db_page);
    return rdma_cmd(h, VHCA_CMD_CREATE_QP, &c, sizeof(c), &qp->qpn, NULL);
}

void qp_put_send(Harness *h, TestQp *qp, uint64_t wr_id, uint8_t opcode,
                 uint8_t flags)
{
    uint32_t pages = (VHCA_SEND_WQE_SIZE << qp->sq_log) / 4096;
    struct vhca_send_wqe wqe;

    memset(&wqe, 0, sizeof(wqe));
    wqe.wr_id = GUINT64_TO_LE(wr_id);
    wqe.opcode = opcode;
    wqe.flags = flags;
    ram_write(h, reversed_ring_addr(qp->sq, pages, qp->sq_pi, qp->sq_log,
                                    VHCA_SEND_WQE_SIZE), &wqe, sizeof(wqe));
    qp->sq_pi++;
}

void qp_put_recv(Harness *h, TestQp *qp, uint64_t wr_id)
{
    struct vhca_recv_wqe wqe;

    memset(&wqe, 0, sizeof(wqe));
    wqe.wr_id = GUINT64_TO_LE(wr_id);
    ram_write(h, qp->rq + (uint64_t)(qp->rq_pi & ((1u << qp->rq_log) - 1)) *
              VHCA_RECV_WQE_SIZE, &wqe, sizeof(wqe));
    qp->rq_pi++;
}

void qp_put_send_wqe(Harness *h, TestQp *qp, const struct vhca_send_wqe *wqe)
{
    uint32_t pages = (VHCA_SEND_WQE_SIZE << qp->sq_log) / 4096;

    ram_write(h, reversed_ring_addr(qp->sq, pages, qp->sq_pi, qp->sq_log,
                                    VHCA_SEND_WQE_SIZE), wqe, sizeof(*wqe));
    qp->sq_pi++;
}

void qp_put_recv_wqe(Harness *h, TestQp *qp, const struct vhca_recv_wqe *wqe)
{
    ram_write(h, qp->rq + (uint64_t)(qp->rq_pi & ((1u << qp->rq_log) - 1)) *
              VHCA_RECV_WQE_SIZE, wqe, sizeof(*wqe));
    qp->rq_pi++;
}

uint32_t rdma_create_phys_mr(Harness *h, uint32_t pdn, uint64_t iova,
                             uint64_t len, uint32_t access)
{
    struct vhca_mr_create c;
    uint32_t index = 0, key = 0;

    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(pdn);
    c.access = GUINT32_TO_LE(access);
    c.iova = GUINT64_TO_LE(iova);
    c.length = GUINT64_TO_LE(len);
    c.flags = GUINT16_TO_LE(VHCA_MR_PHYS);
    c.key_tag = GUINT32_TO_LE(0x5a);
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_CREATE_MR, &c, sizeof(c), &index,
                              &key), ==, VHCA_ST_OK);
    return key;
}

void ring_doorbell(Harness *h, uint32_t page, uint32_t reg, uint32_t object,
                   uint32_t value)
{
    vhca_core_doorbell_write(&h->core, (uint64_t)page * VHCA_DB_PAGE_SIZE +
                             reg, (uint64_t)value << 32 | object, 8);
}

uint8_t rdma_modify_qp(Harness *h, const struct vhca_qp_attr *attr)
{
    struct vhca_qp_attr le = *attr;

    le.qpn = GUINT32_TO_LE(attr->qpn);
    le.attr_mask = GUINT32_TO_LE(attr->attr_mask);
    le.qp_access_flags = GUINT32_TO_LE(attr->qp_access_flags);
    le.dest_qp_num = GUINT32_TO_LE(attr->dest_qp_num);
    le.rq_psn = GUINT32_TO_LE(attr->rq_psn);
    le.sq_psn = GUINT32_TO_LE(attr->sq_psn);
    le.qkey = GUINT32_TO_LE(attr->qkey);
    le.flow_label = GUINT32_TO_LE(attr->flow_label);
    le.pkey_index = GUINT16_TO_LE(attr->pkey_index);
    le.udp_sport = GUINT16_TO_LE(attr->udp_sport);
    return rdma_cmd(h, VHCA_CMD_MODIFY_QP, &le, sizeof(le), NULL, NULL);
}

uint8_t rdma_query_qp(Harness *h, uint32_t qpn, struct vhca_qp_attr *attr)
{
    struct vhca_qp_attr in;
    uint8_t status;

    memset(&in, 0xee, sizeof(in));
    in.qpn = GUINT32_TO_LE(qpn);
    status = rdma_cmd(h, VHCA_CMD_QUERY_QP, &in, sizeof(in), NULL, NULL);
    ram_read(h, MBOX_ADDR, attr, sizeof(*attr));
    attr->qpn = GUINT32_FROM_LE(attr->qpn);
    attr->qp_access_flags = GUINT32_FROM_LE(attr->qp_access_flags);
    attr->dest_qp_num = GUINT32_FROM_LE(attr->dest_qp_num);
    attr->rq_psn = GUINT32_FROM_LE(attr->rq_psn);
    attr->sq_psn = GUINT32_FROM_LE(attr->sq_psn);
    attr->qkey = GUINT32_FROM_LE(attr->qkey);
    attr->max_send_wr = GUINT32_FROM_LE(attr->max_send_wr);
    attr->max_recv_wr = GUINT32_FROM_LE(attr->max_recv_wr);
    return status;
}

uint8_t qp_state(Harness *h, uint32_t qpn)
{
    struct vhca_qp_attr attr;

    g_assert_cmpuint(rdma_query_qp(h, qpn, &attr), ==, VHCA_ST_OK);
    return attr.qp_state;
}

void qp_good_attr(struct vhca_qp_attr *attr, uint32_t qpn)
{
    static const uint8_t dgid[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2
    };

    memset(attr, 0, sizeof(*attr));
    attr->qpn = qpn;
    attr->qp_access_flags = VHCA_ACCESS_REMOTE_WRITE |
                            VHCA_ACCESS_REMOTE_READ;
    attr->pkey_index = 0;
    attr->port = 1;
    attr->qkey = 0x11111111;
    attr->sgid_index = 0;
    attr->hop_limit = 64;
    memcpy(attr->dgid, dgid, 16);
    attr->path_mtu = VHCA_IB_MTU_1024;
    attr->dest_qp_num = 0x123;
    attr->rq_psn = 0x1000;
    attr->max_dest_rd_atomic = 4;
    attr->min_rnr_timer = 12;
    attr->timeout = 14;
    attr->retry_cnt = 7;
    attr->rnr_retry = 7;
    attr->sq_psn = 0x2000;
    attr->max_rd_atomic = 4;
}

uint32_t qp_required_mask(uint8_t type, uint8_t cur, uint8_t next)
{
    bool ud = type == VHCA_QPT_UD || type == VHCA_QPT_GSI;

    if (cur == VHCA_QPS_RESET && next == VHCA_QPS_INIT) {
        /* The GSI QP has no PORT attribute (Linux's qp_state_table). */
        return VHCA_QP_PKEY_INDEX |
               (type == VHCA_QPT_GSI ? 0 : VHCA_QP_PORT) |
               (ud ? VHCA_QP_QKEY : VHCA_QP_ACCESS_FLAGS);
    }
    if (cur == VHCA_QPS_INIT && next == VHCA_QPS_RTR) {
        if (ud) {
            return 0;
        }
        return VHCA_QP_AV | VHCA_QP_PATH_MTU | VHCA_QP_DEST_QPN |
               VHCA_QP_RQ_PSN |
               (type == VHCA_QPT_RC ? VHCA_QP_MAX_DEST_RD_ATOMIC |
                                      VHCA_QP_MIN_RNR_TIMER : 0);
    }
    if (cur == VHCA_QPS_RTR && next == VHCA_QPS_RTS) {
        return VHCA_QP_SQ_PSN |
               (type == VHCA_QPT_RC ? VHCA_QP_TIMEOUT | VHCA_QP_RETRY_CNT |
                                      VHCA_QP_RNR_RETRY |
                                      VHCA_QP_MAX_QP_RD_ATOMIC : 0);
    }
    return 0;
}

void qp_move_to(Harness *h, uint32_t qpn, uint8_t type, uint8_t state)
{
    static const uint8_t path[] = {
        VHCA_QPS_RESET, VHCA_QPS_INIT, VHCA_QPS_RTR, VHCA_QPS_RTS,
        VHCA_QPS_SQD,
    };
    struct vhca_qp_attr attr;
    unsigned i;

    g_assert_cmpuint(state, !=, VHCA_QPS_SQE);
    if (state == VHCA_QPS_ERR || state == VHCA_QPS_RESET) {
        qp_good_attr(&attr, qpn);
        attr.attr_mask = VHCA_QP_STATE;
        attr.qp_state = state;
        g_assert_cmpuint(rdma_modify_qp(h, &attr), ==, VHCA_ST_OK);
        return;
    }
    for (i = 1; i < G_N_ELEMENTS(path) && path[i - 1] != state; i++) {
        qp_good_attr(&attr, qpn);
        attr.attr_mask = VHCA_QP_STATE |
                         qp_required_mask(type, path[i - 1], path[i]);
        attr.qp_state = path[i];
        g_assert_cmpuint(rdma_modify_qp(h, &attr), ==, VHCA_ST_OK);
    }
    g_assert_cmpuint(qp_state(h, qpn), ==, state);
}
