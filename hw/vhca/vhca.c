/*
 * QEMU vhca: virtual RoCEv2 host channel adapter, PCIe and QOM glue.
 *
 * The device's behaviour lives in the engine (hw/vhca/engine),
 * which includes no QEMU header; this file connects it to the PCI bus
 * (BARs, MSI-X, DMA, FLR), the net layer, properties, reset and tracing;
 * vhca-migration.c holds its VMState.  docs/specs/vhca.rst is the contract.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qom/object.h"

#include "vhca_hw.h"
#include "vhca.h"
#include "trace.h"

/* Capability offsets in config space; MSI-X goes wherever it fits. */
#define VHCA_PCIE_CAP_OFFSET    0x80


/* ---------------------------------------------------------------------- */
/* Engine callbacks                                                       */
/* ---------------------------------------------------------------------- */

static int vhca_dma_read_cb(void *opaque, uint64_t addr, void *buf,
                            size_t len)
{
    VhcaState *s = opaque;

    return vhca_dma_rw(&s->dma, addr, buf, len, false);
}

static int vhca_dma_write_cb(void *opaque, uint64_t addr, const void *buf,
                             size_t len)
{
    VhcaState *s = opaque;

    /* vhca_dma_rw() takes a non-const buffer; it only reads it here. */
    return vhca_dma_rw(&s->dma, addr, (void *)buf, len, true);
}

static void vhca_send_frame_cb(void *opaque, const uint8_t *buf, size_t len)
{
    VhcaState *s = opaque;

    /* Unplugged from inside the engine: see vhca_exit(). */
    if (s->unrealized) {
        return;
    }
    trace_vhca_tx_frame(len);
    qemu_send_packet(qemu_get_queue(s->nic), buf, len);
}

static void vhca_raise_irq_cb(void *opaque, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);

    if (!msix_enabled(pdev)) {
        trace_vhca_irq_msix_disabled(vector);
        return;
    }
    trace_vhca_irq_msix(vector);
    msix_notify(pdev, vector);
}

/*
 * The flush hands the net layer's queued frames to vhca_nc_receive(),
 * which would enter the engine that is calling us: the work bottom half
 * does it once the engine has returned.
 */
static void vhca_rx_ready_cb(void *opaque)
{
    VhcaState *s = opaque;

    s->deferred |= VHCA_DEFER_RX_FLUSH;
}

static void vhca_admin_cmd_done_cb(void *opaque, uint32_t slot,
                                   uint16_t opcode, uint32_t token,
                                   uint8_t status, uint32_t syndrome)
{
    trace_vhca_admin_cmd(slot, opcode, vhca_admin_opcode_name(opcode),
                         token, status, syndrome);
}

static void vhca_event_posted_cb(void *opaque, uint8_t type,
                                 uint8_t subtype, uint32_t pi)
{
    trace_vhca_aeq_event(type, subtype, pi);
}

static void vhca_rx_drop_cb(void *opaque, const char *reason,
                            const char *detail, uint32_t qpn)
{
    trace_vhca_roce_drop(reason, detail, qpn);
}

static void vhca_qp_state_cb(void *opaque, uint32_t qpn, uint8_t type,
                             uint8_t from, uint8_t to, VhcaQpChange why)
{
    trace_vhca_qp_state(qpn, vhca_core_qp_type_name(type),
                        vhca_qp_state_name(from), vhca_qp_state_name(to),
                        vhca_core_qp_change_name(why));
}

static void vhca_retransmit_cb(void *opaque, uint32_t qpn, uint32_t psn,
                               VhcaRetryCause why)
{
    trace_vhca_retransmit(qpn, psn, vhca_core_retry_name(why));
}

static void vhca_nak_sent_cb(void *opaque, uint32_t qpn, uint32_t psn,
                             VhcaNakKind kind, uint8_t code)
{
    trace_vhca_nak_sent(qpn, psn, vhca_core_nak_kind_name(kind), code,
                        vhca_core_nak_code_name(kind, code));
}

static void vhca_nak_rcvd_cb(void *opaque, uint32_t qpn, uint32_t psn,
                             VhcaNakKind kind, uint8_t code)
{
    trace_vhca_nak_rcvd(qpn, psn, vhca_core_nak_kind_name(kind), code,
                        vhca_core_nak_code_name(kind, code));
}

static void vhca_rnr_wait_cb(void *opaque, uint32_t qpn, uint32_t psn,
                             uint64_t timer_ns)
{
    trace_vhca_rnr_wait(qpn, psn, timer_ns);
}

static void vhca_ack_timeout_cb(void *opaque, uint32_t qpn, uint32_t psn,
                                uint8_t retries_left)
{
    trace_vhca_ack_timeout(qpn, psn, retries_left);
}

static void vhca_window_cut_cb(void *opaque, uint32_t qpn, uint32_t from,
                               uint32_t to, VhcaRetryCause why)
{
    trace_vhca_window_cut(qpn, from, to, vhca_core_retry_name(why));
}

static void vhca_timer_backoff_cb(void *opaque, uint32_t qpn,
                                  uint64_t timer_ns, uint8_t backoff)
{
    trace_vhca_timer_backoff(qpn, timer_ns, backoff);
}

static void vhca_mad_cb(void *opaque, uint8_t mgmt_class, uint8_t method,
                        uint16_t attr_id, uint32_t attr_mod, uint16_t status,
                        uint8_t result)
{
    trace_vhca_mad(mgmt_class, method, attr_id, attr_mod, status, result);
}

static void vhca_ib_port_state_cb(void *opaque, uint8_t from, uint8_t to)
{
    trace_vhca_ib_port_state(from, to);
}

static void vhca_ib_trap_cb(void *opaque, uint16_t trap, uint16_t sm_lid,
                            bool sent)
{
    trace_vhca_ib_trap(trap, sm_lid, sent);
}

static void vhca_cc_cnp_sent_cb(void *opaque, uint32_t qpn,
                                uint32_t dest_qpn)
{
    trace_vhca_cc_cnp_sent(qpn, dest_qpn);
}

static void vhca_cc_cnp_rcvd_cb(void *opaque, uint32_t qpn, bool handled)
{
    trace_vhca_cc_cnp_rcvd(qpn, handled);
}

static void vhca_cc_rate_cb(void *opaque, uint32_t qpn, uint64_t rate,
                            uint64_t target, uint16_t alpha, uint8_t stage)
{
    trace_vhca_cc_rate(qpn, rate, target, alpha, stage);
}

static void vhca_pfc_pause_rcvd_cb(void *opaque, uint8_t prio, uint16_t quanta,
                                   bool paused)
{
    trace_vhca_pfc_pause_rcvd(prio, quanta, paused);
}

static void vhca_pfc_pause_sent_cb(void *opaque, uint8_t prio, uint16_t quanta,
                                   uint32_t rx_frames, uint32_t rx_bytes)
{
    trace_vhca_pfc_pause_sent(prio, quanta, rx_frames, rx_bytes);
}

static void vhca_pfc_resumed_cb(void *opaque, uint8_t prio, uint64_t paused_ns)
{
    trace_vhca_pfc_resumed(prio, paused_ns);
}

static void vhca_cqe_error_cb(void *opaque, uint32_t cqn, uint32_t qpn,
                              uint64_t wr_id, uint8_t opcode, uint8_t status,
                              uint32_t vendor_err)
{
    trace_vhca_cqe_error(cqn, qpn, wr_id, opcode, status, vendor_err);
}

static void vhca_mw_bind_refused_cb(void *opaque, uint32_t qpn, uint32_t key,
                                    VhcaMwBindError why)
{
    trace_vhca_mw_bind_refused(qpn, key, vhca_core_mw_bind_error_name(why));
}

static void vhca_mw_invalidated_cb(void *opaque, uint32_t qpn, uint32_t key,
                                   VhcaMwInvalidation why)
{
    trace_vhca_mw_invalidated(qpn, key, vhca_core_mw_invalidation_name(why));
}

static void vhca_srq_limit_cb(void *opaque, uint32_t srqn, uint32_t limit,
                              uint32_t wqes)
{
    trace_vhca_srq_limit(srqn, limit, wqes);
}

/*
 * A guest error: the engine has called its typed hook (the trace event
 * with the numbers) and now gives the sentence for LOG_GUEST_ERROR, as
 * NVME_GUEST_ERR in hw/nvme/ctrl.c pairs a trace event with a message.
 */
static void vhca_guest_error_cb(void *opaque, VhcaGuestError kind,
                                const char *msg)
{
    qemu_log_mask(LOG_GUEST_ERROR, "vhca: %s: %s\n",
                  vhca_core_guest_error_name(kind), msg);
}

static void vhca_ub_reg_access_cb(void *opaque, bool write, uint64_t offset,
                                  unsigned size, uint64_t value)
{
    trace_vhca_ub_reg_access(write, offset, size, value);
}

static void vhca_ub_doorbell_cb(void *opaque, uint64_t page, uint32_t offset,
                                unsigned size, uint32_t object)
{
    trace_vhca_ub_doorbell(page, offset, size, object);
}

static void vhca_ub_ring_doorbell_cb(void *opaque, VhcaRingId ring,
                                     uint32_t object, uint32_t value)
{
    trace_vhca_ub_ring_doorbell(vhca_core_ring_name(ring), object, value);
}

static void vhca_ub_cq_doorbell_cb(void *opaque, uint32_t cqn,
                                   uint32_t value, uint32_t ci, uint32_t pi)
{
    trace_vhca_ub_cq_doorbell(cqn, value, ci, pi);
}

static void vhca_err_doorbell_index_cb(void *opaque, VhcaRingId ring,
                                       uint32_t object, uint32_t index,
                                       uint32_t low, uint32_t high)
{
    trace_vhca_err_doorbell_index(vhca_core_ring_name(ring), object, index,
                                  low, high);
}

static void vhca_err_ring_config_cb(void *opaque, VhcaRingId ring,
                                    uint64_t base, uint32_t log_size)
{
    trace_vhca_err_ring_config(vhca_core_ring_name(ring), base, log_size);
}

static void vhca_err_ring_running_cb(void *opaque, VhcaRingId ring,
                                     uint32_t reg, uint32_t value)
{
    trace_vhca_err_ring_running(vhca_core_ring_name(ring), reg, value);
}

static void vhca_err_guest_ram_cb(void *opaque, VhcaRingId ring,
                                  uint32_t object, uint32_t index,
                                  uint64_t addr)
{
    trace_vhca_err_guest_ram(vhca_core_ring_name(ring), object, index, addr);
}

static void vhca_err_frame_len_cb(void *opaque, VhcaRingId ring,
                                  uint32_t index, uint32_t len, uint32_t min,
                                  uint32_t max)
{
    trace_vhca_err_frame_len(vhca_core_ring_name(ring), index, len, min,
                             max);
}

static void vhca_err_queue_overflow_cb(void *opaque, VhcaRingId ring,
                                       uint32_t object, uint32_t pi,
                                       uint32_t ci)
{
    trace_vhca_err_queue_overflow(vhca_core_ring_name(ring), object, pi, ci);
}

static void vhca_err_wqe_cb(void *opaque, uint32_t qpn, VhcaRingId queue,
                            uint32_t index, uint8_t opcode, uint8_t status,
                            uint32_t vendor_err)
{
    trace_vhca_err_wqe(qpn, vhca_core_ring_name(queue), index, opcode, status,
                       vendor_err);
}

static void vhca_err_admin_cmd_cb(void *opaque, uint16_t opcode,
                                  uint8_t status, uint32_t syndrome)
{
    trace_vhca_err_admin_cmd(opcode, vhca_admin_opcode_name(opcode), status,
                             syndrome);
}

static uint64_t vhca_now_ns_cb(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void vhca_timer_arm_cb(void *opaque, uint64_t deadline_ns)
{
    VhcaState *s = opaque;

    trace_vhca_timer_arm(deadline_ns);
    timer_mod(s->timer, (int64_t)MIN(deadline_ns, (uint64_t)INT64_MAX));
}

static void vhca_timer_cancel_cb(void *opaque)
{
    VhcaState *s = opaque;

    timer_del(s->timer);
}

static void vhca_schedule_cb(void *opaque)
{
    VhcaState *s = opaque;

    /*
     * The work bottom half runs the doorbells and then the pass they ask
     * for: scheduling it again from there would only cost the main loop
     * an extra wake-up (an eventfd write) and an empty pass.
     */
    if (!s->running_doorbells) {
        qemu_bh_schedule(s->work_bh);
    }
}

/* ---------------------------------------------------------------------- */
/* Re-entrancy                                                            */
/* ---------------------------------------------------------------------- */

/*
 * The engine is never entered twice at once (docs/specs/vhca.rst,
 * "Re-entrancy").  What it does can reach the device again before it
 * returns: the guest may aim an MSI-X vector at the device's own BAR0,
 * BAR2, MSI-X table or config space (through ECAM), or at another device
 * whose handler writes back into this one; a peer NIC in the same QEMU
 * may answer a frame at once; another device's drain may poll the main
 * loop and run this device's timer or bottom half.  Run nested, any of
 * them would change the engine's state under the frame that is using it
 * (a DESTROY_QP freeing the QP being sent from).  So every entry into the
 * engine is bracketed by vhca_engine_enter() and vhca_engine_leave(),
 * which mark the engine busy and engage the device's re-entrancy guard
 * (QEMU's memory core then turns away MMIO into the MSI-X table, as for
 * any device: BAR0 and BAR2 opt out, to post their writes), and what
 * arrives while it is busy waits for it to return:
 *
 *  - a write into BAR0 or BAR2 is posted to the doorbell queue, in order,
 *    as PCIe posts writes, and runs after the engine returns; a read of
 *    BAR0 returns all ones (an Unsupported Request) and is refused;
 *  - a received frame stays in the net layer's queue (receive returns 0)
 *    until the work bottom half flushes it;
 *  - the timer, the bottom half and a link change run from the bottom half;
 *  - a reset (FLR, bus reset) runs as the outermost entry leaves, before
 *    anything else; an unplug frees the engine from a bottom half;
 *  - a config space write is refused.
 */
bool vhca_engine_enter(VhcaState *s)
{
    MemReentrancyGuard *guard = &DEVICE(s)->mem_reentrancy_guard;

    if (s->engine_busy) {
        return false;
    }
    s->engine_busy = true;
    s->engine_saved_guard = guard->engaged_in_io;
    guard->engaged_in_io = true;
    return true;
}

/* Something reached the device while the engine ran: run it later. */
static void vhca_defer(VhcaState *s, unsigned what, const char *entry)
{
    s->deferred |= what;
    s->nested_deferred++;
    trace_vhca_nested_deferred(entry);
}

static void vhca_refuse(VhcaState *s, const char *entry)
{
    s->nested_refused++;
    trace_vhca_nested_refused(entry);
    qemu_log_mask(LOG_GUEST_ERROR, "vhca: %s arrived while the device was "
                  "busy (an MSI-X vector aimed at the device?): refused\n",
                  entry);
}

/* A write into BAR0 or BAR2 while the engine runs: post it. */
static void vhca_post_nested_write(VhcaState *s, bool ctrl, hwaddr addr,
                                   uint64_t val, unsigned size,
                                   const char *entry)
{
    VhcaDoorbell db = {
        .value = val, .offset = addr, .size = size, .ctrl = ctrl,
    };
    bool first;

    if (!vhca_doorbell_queue_push(&s->doorbells, &db, &first)) {
        vhca_refuse(s, entry);
        return;
    }
    /* vhca_engine_leave() schedules the bottom half that runs it. */
    vhca_defer(s, 0, entry);
}

static void vhca_engine_reset(VhcaState *s)
{
    trace_vhca_reset();
    s->deferred &= ~VHCA_DEFER_TIMER;
    vhca_doorbell_queue_clear(&s->doorbells);
    vhca_core_reset(&s->core);
    vhca_dma_cleanup(&s->dma);
}

static void vhca_free_timer(VhcaState *s)
{
    timer_free(s->timer);
    s->timer = NULL;
}

bool vhca_link_is_up(VhcaState *s)
{
    NetClientState *nc = qemu_get_queue(s->nic);

    /* Without a backend there is no carrier (spec, "netdev"). */
    return nc->peer && !nc->link_down;
}

/* What vhca_exit() frees; not while the engine runs. */
static void vhca_engine_release(VhcaState *s)
{
    qemu_del_nic(s->nic);
    s->nic = NULL;
    vhca_core_cleanup(&s->core);
    vhca_free_timer(s);
    vhca_dma_cleanup(&s->dma);
}

/*
 * An unplug that arrived inside the engine (vhca_exit()): by now every
 * entry has returned, the net layer's delivery into the NIC included.
 */
static void vhca_release_bh(void *opaque)
{
    VhcaState *s = opaque;

    vhca_engine_release(s);
    object_unref(OBJECT(s));
}

void vhca_engine_leave(VhcaState *s)
{
    if (s->deferred & VHCA_DEFER_RESET) {
        /* Still busy: whatever the reset raises is deferred in turn. */
        s->deferred &= ~VHCA_DEFER_RESET;
        vhca_engine_reset(s);
    }
    DEVICE(s)->mem_reentrancy_guard.engaged_in_io = s->engine_saved_guard;
    s->engine_busy = false;
    if (s->unrealized) {        /* vhca_release_bh() follows */
        return;
    }
    if (s->deferred || vhca_doorbell_queue_pending(&s->doorbells)) {
        qemu_bh_schedule(s->work_bh);
    }
}

/*
 * Run the doorbells the vCPUs queued (vhca-doorbell.c), oldest first.
 * Every entry into the engine does this before its own work, so that the
 * engine sees a doorbell before anything the guest did after ringing it:
 * a register access, and any frame a peer sent because of what the guest
 * did next (a receive posted before the peer was told to send is there
 * when the SEND arrives).  BQL held.
 */
static void vhca_doorbells_run(VhcaState *s)
{
    VhcaDoorbell db;

    while (vhca_doorbell_queue_pop(&s->doorbells, &db)) {
        if (db.ctrl) {
            vhca_core_reg_write(&s->core, db.offset, db.value, db.size);
            continue;
        }
        s->doorbells_queued++;
        vhca_core_doorbell_write(&s->core, db.offset, db.value, db.size);
    }
}

/*
 * The engine's passes and received frames run in one RCU read section, so
 * that the DMAs they make (vhca-dma.c) nest in it instead of each paying
 * for its own; MMIO from a vCPU already runs in the one cpu_exec() holds.
 */
void vhca_work_bh(void *opaque)
{
    VhcaState *s = opaque;
    bool flush;

    if (s->unrealized) {        /* see vhca_instance_init() */
        return;
    }
    RCU_READ_LOCK_GUARD();
    if (!vhca_engine_enter(s)) {
        /* Run by another device's aio_poll inside the engine. */
        vhca_defer(s, VHCA_DEFER_WORK, "bottom half");
        return;
    }
    s->deferred &= ~VHCA_DEFER_WORK;
    s->running_doorbells = true;
    vhca_doorbells_run(s);
    s->running_doorbells = false;
    if (s->deferred & VHCA_DEFER_TIMER) {
        s->deferred &= ~VHCA_DEFER_TIMER;
        vhca_core_timer_expired(&s->core);
    }
    if (s->deferred & VHCA_DEFER_LINK) {
        s->deferred &= ~VHCA_DEFER_LINK;
        vhca_core_set_link(&s->core, vhca_link_is_up(s));
    }
    vhca_core_run_deferred(&s->core);
    flush = s->deferred & VHCA_DEFER_RX_FLUSH;
    s->deferred &= ~VHCA_DEFER_RX_FLUSH;
    vhca_engine_leave(s);
    if (flush && !s->unrealized) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

static void vhca_timer_cb(void *opaque)
{
    VhcaState *s = opaque;

    if (s->unrealized) {        /* unplugged inside the engine */
        return;
    }
    trace_vhca_timer_expired();
    if (!vhca_engine_enter(s)) {
        vhca_defer(s, VHCA_DEFER_TIMER, "timer");
        return;
    }
    vhca_doorbells_run(s);
    vhca_core_timer_expired(&s->core);
    vhca_engine_leave(s);
}

static const VhcaCoreOps vhca_core_ops = {
    .dma_read = vhca_dma_read_cb,
    .dma_write = vhca_dma_write_cb,
    .send_frame = vhca_send_frame_cb,
    .raise_irq = vhca_raise_irq_cb,
    .rx_ready = vhca_rx_ready_cb,
    .admin_cmd_done = vhca_admin_cmd_done_cb,
    .event_posted = vhca_event_posted_cb,
    .guest_error = vhca_guest_error_cb,
    .rx_drop = vhca_rx_drop_cb,
    .qp_state = vhca_qp_state_cb,
    .retransmit = vhca_retransmit_cb,
    .nak_sent = vhca_nak_sent_cb,
    .nak_rcvd = vhca_nak_rcvd_cb,
    .rnr_wait = vhca_rnr_wait_cb,
    .ack_timeout = vhca_ack_timeout_cb,
    .window_cut = vhca_window_cut_cb,
    .timer_backoff = vhca_timer_backoff_cb,
    .cqe_error = vhca_cqe_error_cb,
    .mad = vhca_mad_cb,
    .ib_port_state = vhca_ib_port_state_cb,
    .ib_trap = vhca_ib_trap_cb,
    .cc_cnp_sent = vhca_cc_cnp_sent_cb,
    .cc_cnp_rcvd = vhca_cc_cnp_rcvd_cb,
    .cc_rate = vhca_cc_rate_cb,
    .pfc_pause_rcvd = vhca_pfc_pause_rcvd_cb,
    .pfc_pause_sent = vhca_pfc_pause_sent_cb,
    .pfc_resumed = vhca_pfc_resumed_cb,
    .srq_limit = vhca_srq_limit_cb,
    .mw_bind_refused = vhca_mw_bind_refused_cb,
    .mw_invalidated = vhca_mw_invalidated_cb,
    .ub_reg_access = vhca_ub_reg_access_cb,
    .ub_doorbell = vhca_ub_doorbell_cb,
    .ub_ring_doorbell = vhca_ub_ring_doorbell_cb,
    .ub_cq_doorbell = vhca_ub_cq_doorbell_cb,
    .err_doorbell_index = vhca_err_doorbell_index_cb,
    .err_ring_config = vhca_err_ring_config_cb,
    .err_ring_running = vhca_err_ring_running_cb,
    .err_guest_ram = vhca_err_guest_ram_cb,
    .err_frame_len = vhca_err_frame_len_cb,
    .err_queue_overflow = vhca_err_queue_overflow_cb,
    .err_wqe = vhca_err_wqe_cb,
    .err_admin_cmd = vhca_err_admin_cmd_cb,
    .now_ns = vhca_now_ns_cb,
    .timer_arm = vhca_timer_arm_cb,
    .timer_cancel = vhca_timer_cancel_cb,
    .schedule = vhca_schedule_cb,
};

/* ---------------------------------------------------------------------- */
/* BARs                                                                   */
/* ---------------------------------------------------------------------- */

static uint64_t vhca_ctrl_read(void *opaque, hwaddr addr, unsigned size)
{
    VhcaState *s = opaque;
    uint64_t val;

    if (!vhca_engine_enter(s)) {
        vhca_refuse(s, "BAR0 read");
        return MAKE_64BIT_MASK(0, size * 8);
    }
    /* A read does not pass the writes before it (PCIe ordering rules). */
    vhca_doorbells_run(s);
    val = vhca_core_reg_read(&s->core, addr, size);
    vhca_engine_leave(s);
    trace_vhca_mmio_read(addr, size, val);
    return val;
}

static void vhca_ctrl_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    VhcaState *s = opaque;

    trace_vhca_mmio_write(addr, size, val);
    if (!vhca_engine_enter(s)) {
        vhca_post_nested_write(s, true, addr, val, size, "BAR0 write");
        return;
    }
    vhca_doorbells_run(s);
    vhca_core_reg_write(&s->core, addr, val, size);
    vhca_engine_leave(s);
}

/*
 * Every size and alignment reaches the engine, which accepts only aligned
 * 32-bit accesses and logs the rest: QEMU must not split or merge them.
 */
static const MemoryRegionOps vhca_ctrl_ops = {
    .read = vhca_ctrl_read,
    .write = vhca_ctrl_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

static uint64_t vhca_doorbell_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0;
}

/* A doorbell that runs at once, under the BQL. */
static void vhca_doorbell_write_locked(VhcaState *s, hwaddr addr,
                                       uint64_t val, unsigned size,
                                       bool queue_was_full)
{
    if (s->unrealized) {        /* see vhca_instance_init() */
        return;
    }
    if (!vhca_engine_enter(s)) {
        vhca_post_nested_write(s, false, addr, val, size, "BAR2 write");
        return;
    }
    s->doorbells_queue_full += queue_was_full;
    vhca_doorbells_run(s);
    vhca_core_doorbell_write(&s->core, addr, val, size);
    vhca_engine_leave(s);
}

/*
 * BAR2 runs without the BQL (qemu-patches/0006): a vCPU ringing an SQ
 * doorbell queues it and wakes the work bottom half, which sends, and
 * does not wait for the main loop to finish its pass.  The others run at
 * once, under the BQL, behind the queue.  A CQ doorbell arms the CQ for
 * the next completion (IBTA 11.4.2.2) and the program polls once more
 * after it: the arm must be in place before that poll, or a completion
 * between the two would raise no event.  An RQ or SRQ doorbell asks
 * nothing of the main loop until a frame comes (which runs the queue
 * first), and queued it would wake an idle loop for nothing (measured:
 * 64-byte SENDs lost a third, docs/benchmarks.rst).  So do the doorbells
 * of a caller that holds the BQL already (qtest) and of a vCPU that finds
 * the queue full.
 */
static void vhca_doorbell_write(void *opaque, hwaddr addr, uint64_t val,
                                unsigned size)
{
    VhcaState *s = opaque;
    uint32_t reg = addr % VHCA_DB_PAGE_SIZE;
    VhcaDoorbell db = { .value = val, .offset = addr, .size = size };
    bool locked = bql_locked();
    bool full = false;
    bool first;

    trace_vhca_doorbell(addr / VHCA_DB_PAGE_SIZE, reg, size, val);
    if (!locked && reg == VHCA_DB_SQ) {
        if (vhca_doorbell_queue_push(&s->doorbells, &db, &first)) {
            /*
             * Each qemu_bh_schedule() notifies the main loop, an eventfd
             * write while it is awake: once per batch of doorbells is
             * enough, as the bottom half runs the queue until it is empty.
             */
            if (first) {
                qemu_bh_schedule(s->work_bh);
            }
            return;
        }
        trace_vhca_doorbell_queue_full(VHCA_DOORBELL_QUEUE_LEN);
        full = true;
    }
    if (!locked) {
        bql_lock();
    }
    vhca_doorbell_write_locked(s, addr, val, size, full);
    if (!locked) {
        bql_unlock();
    }
}

static const MemoryRegionOps vhca_doorbell_ops = {
    .read = vhca_doorbell_read,
    .write = vhca_doorbell_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/* ---------------------------------------------------------------------- */
/* Net client                                                             */
/* ---------------------------------------------------------------------- */

static bool vhca_nc_can_receive(NetClientState *nc)
{
    VhcaState *s = qemu_get_nic_opaque(nc);

    return vhca_core_can_receive(&s->core);
}

static ssize_t vhca_nc_receive(NetClientState *nc, const uint8_t *buf,
                               size_t size)
{
    VhcaState *s = qemu_get_nic_opaque(nc);
    VhcaRxResult res;

    if (s->unrealized) {        /* unplugged inside the engine */
        return size;
    }
    RCU_READ_LOCK_GUARD();
    if (!vhca_engine_enter(s)) {
        /* A peer answered at once: the net layer keeps the frame. */
        vhca_defer(s, VHCA_DEFER_RX_FLUSH, "received frame");
        return 0;
    }
    vhca_doorbells_run(s);
    res = vhca_core_receive(&s->core, buf, size);
    vhca_engine_leave(s);

    trace_vhca_rx_frame(size, res);
    /* Taken or dropped (RX_NO_BUFFER): never left with the net layer. */
    return size;
}

static void vhca_nc_link_status_changed(NetClientState *nc)
{
    VhcaState *s = qemu_get_nic_opaque(nc);
    bool up = vhca_link_is_up(s);

    trace_vhca_link_status(up);
    if (!vhca_engine_enter(s)) {
        vhca_defer(s, VHCA_DEFER_LINK, "link change");
        return;
    }
    vhca_core_set_link(&s->core, up);
    vhca_engine_leave(s);
}

static NetClientInfo vhca_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = vhca_nc_can_receive,
    .receive = vhca_nc_receive,
    .link_status_changed = vhca_nc_link_status_changed,
};

/* ---------------------------------------------------------------------- */
/* PCI device                                                             */
/* ---------------------------------------------------------------------- */

static void vhca_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    VhcaState *s = VHCA(pdev);

    /* Through ECAM, by the device's own MSI-X write: see "Re-entrancy". */
    if (s->engine_busy) {
        vhca_refuse(s, "config space write");
        return;
    }
    pci_default_write_config(pdev, addr, val, len);
    pcie_cap_flr_write_config(pdev, addr, val, len);
}

/*
 * The doorbell queue and the work bottom half live as long as the object,
 * not the realized device: a vCPU may still be inside
 * vhca_doorbell_write(), which takes no BQL, when the device is
 * unrealized.  The object is finalized only once no vCPU can be there:
 * the memory map holds a reference on BAR2's owner until RCU reclaims the
 * map, after every vCPU has left the read section it dispatched in.
 * Unrealized, the bottom half and the doorbell handler do nothing.
 */
static void vhca_instance_init(Object *obj)
{
    VhcaState *s = VHCA(obj);

    vhca_doorbell_queue_init(&s->doorbells);
}

static void vhca_instance_finalize(Object *obj)
{
    VhcaState *s = VHCA(obj);

    if (s->work_bh) {
        qemu_bh_delete(s->work_bh);
    }
    vhca_doorbell_queue_destroy(&s->doorbells);
}

static void vhca_realize(PCIDevice *pdev, Error **errp)
{
    VhcaState *s = VHCA(pdev);
    DeviceState *dev = DEVICE(pdev);
    VhcaCoreConfig cfg = { 0 };
    const VhcaConfigLimit *bad;
    uint32_t value;
    unsigned i;

    if (!s->link || !strcmp(s->link, "eth")) {
        cfg.link = VHCA_LINK_ETH;
    } else if (!strcmp(s->link, "ib")) {
        cfg.link = VHCA_LINK_IB;
    } else {
        error_setg(errp, "vhca: property 'link' must be 'eth' or 'ib', "
                   "got '%s'", s->link);
        return;
    }
    /* An InfiniBand controller, as ConnectX functions in IB mode. */
    if (cfg.link == VHCA_LINK_IB) {
        pci_config_set_class(pdev->config, VHCA_PCI_CLASS_IB);
    }
    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(cfg.mac, s->conf.macaddr.a, sizeof(cfg.mac));
    cfg.gid_tbl_len = s->gid_tbl_len;
    cfg.num_db_pages = s->db_pages;
    cfg.num_vectors = s->vectors;
    cfg.max_qp = s->max_qp;
    cfg.max_cq = s->max_cq;
    cfg.max_mr = s->max_mr;
    cfg.max_pd = s->max_pd;
    cfg.max_srq = s->max_srq;
    cfg.rx_frame_rate = s->rx_frame_rate;
    bad = vhca_core_config_violation(&cfg, &value);
    if (bad) {
        error_setg(errp, "vhca: property '%s' must be in %" PRIu32 "..%"
                   PRIu32 ", got %" PRIu32, bad->prop, bad->min, bad->max,
                   value);
        return;
    }

    if (pcie_endpoint_cap_init(pdev, VHCA_PCIE_CAP_OFFSET) < 0) {
        error_setg(errp, "vhca: cannot add the PCIe capability");
        return;
    }
    pcie_cap_flr_init(pdev);

    memory_region_init_io(&s->ctrl_bar, OBJECT(s), &vhca_ctrl_ops, s,
                          "vhca-ctrl", VHCA_CTRL_BAR_SIZE);
    /* Nested writes are posted, not refused: see "Re-entrancy". */
    s->ctrl_bar.disable_reentrancy_guard = true;
    pci_register_bar(pdev, VHCA_BAR_CTRL, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->ctrl_bar);

    /*
     * A BAR is a power of two: with a db-pages that is not, the pages past
     * the last doorbell page exist but belong to nobody (writes are
     * ignored and logged).
     */
    memory_region_init_io(&s->doorbell_bar, OBJECT(s), &vhca_doorbell_ops, s,
                          "vhca-doorbell",
                          pow2ceil((uint64_t)s->db_pages * VHCA_DB_PAGE_SIZE));
    memory_region_enable_lockless_io(&s->doorbell_bar);
    pci_register_bar(pdev, VHCA_BAR_DOORBELL, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->doorbell_bar);

    if (msix_init_exclusive_bar(pdev, s->vectors, VHCA_BAR_MSIX, errp)) {
        pcie_cap_exit(pdev);
        return;
    }
    /* The driver may use every vector; nothing is allocated on demand. */
    for (i = 0; i < s->vectors; i++) {
        msix_vector_use(pdev, i);
    }

    vhca_dma_init(&s->dma, pdev);
    /* Before vhca_core_init(): its reset may cancel the timer. */
    s->work_bh = qemu_bh_new_guarded(vhca_work_bh, s,
                                     &dev->mem_reentrancy_guard);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, vhca_timer_cb, s);

    if (vhca_core_init(&s->core, &cfg, &vhca_core_ops, s)) {
        error_setg(errp, "vhca: cannot allocate the RDMA object tables");
        vhca_free_timer(s);
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        pcie_cap_exit(pdev);
        return;
    }

    s->nic = qemu_new_nic(&vhca_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    vhca_migration_realize(s);
    /* The device is not enabled yet: no PORT_CHANGE event is posted. */
    vhca_core_set_link(&s->core, vhca_link_is_up(s));

    trace_vhca_realize(s->gid_tbl_len, s->db_pages, s->vectors,
                       s->core.link_up);
}

static void vhca_exit(PCIDevice *pdev)
{
    VhcaState *s = VHCA(pdev);

    s->unrealized = true;
    vhca_migration_unrealize(s);
    /* A loaded stream not yet consumed; a saved one is mig_save's. */
    if (s->mig_state != s->mig_save.data) {
        g_free(s->mig_state);
    }
    s->mig_state = NULL;
    vhca_state_buf_free(&s->mig_save);
    if (s->engine_busy) {
        /*
         * Unplugged by the engine's own MSI-X write (to a hot-plug slot's
         * control register): the engine, the net client that may be
         * delivering to it and the object outlive the entries on the
         * stack, until a bottom half of the main loop's own.
         */
        vhca_defer(s, VHCA_DEFER_EXIT, "unplug");
        object_ref(OBJECT(s));
        aio_bh_schedule_oneshot(qemu_get_aio_context(), vhca_release_bh, s);
    } else {
        vhca_engine_release(s);
    }
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
    pcie_cap_exit(pdev);
}

/* System reset, FLR (pci_device_reset) and CTRL.RESET all end up here. */
static void vhca_reset_hold(Object *obj, ResetType type)
{
    VhcaState *s = VHCA(obj);

    if (!vhca_engine_enter(s)) {
        vhca_defer(s, VHCA_DEFER_RESET, "reset");
        return;
    }
    vhca_engine_reset(s);
    vhca_engine_leave(s);
}

/*
 * x-rx-frame-rate may change while the device runs (qom-set), so that a
 * test slows a booted guest's receiver down and back (docs/specs/vhca.rst,
 * "Priority flow control"); the engine reads it at each pass.
 */
static void vhca_get_rx_frame_rate(Object *obj, Visitor *v, const char *name,
                                   void *opaque, Error **errp)
{
    visit_type_uint32(v, name, &VHCA(obj)->rx_frame_rate, errp);
}

static void vhca_set_rx_frame_rate(Object *obj, Visitor *v, const char *name,
                                   void *opaque, Error **errp)
{
    VhcaState *s = VHCA(obj);
    uint32_t value;

    if (!visit_type_uint32(v, name, &value, errp)) {
        return;
    }
    if (value > VHCA_CORE_RX_FRAME_RATE_MAX) {
        error_setg(errp, "vhca: property '%s' must be in 0..%u, got %" PRIu32,
                   name, VHCA_CORE_RX_FRAME_RATE_MAX, value);
        return;
    }
    s->rx_frame_rate = value;
    if (DEVICE(obj)->realized) {
        s->core.cfg.rx_frame_rate = value;
    }
}

static void vhca_set_default_rx_frame_rate(ObjectProperty *op,
                                           const Property *prop)
{
    object_property_set_default_uint(op, prop->defval.u);
}

static const PropertyInfo vhca_prop_rx_frame_rate = {
    .type = "uint32",
    .description = "received RoCE requests handled per second, 0: no limit",
    .get = vhca_get_rx_frame_rate,
    .set = vhca_set_rx_frame_rate,
    .set_default_value = vhca_set_default_rx_frame_rate,
    .realized_set_allowed = true,
};

static const Property vhca_properties[] = {
    DEFINE_NIC_PROPERTIES(VhcaState, conf),
    DEFINE_PROP_STRING("link", VhcaState, link),
    DEFINE_PROP_UINT32("gid-table-len", VhcaState, gid_tbl_len,
                       VHCA_CORE_GID_TBL_LEN_DEFAULT),
    DEFINE_PROP_UINT32("db-pages", VhcaState, db_pages,
                       VHCA_CORE_DB_PAGES_DEFAULT),
    DEFINE_PROP_UINT32("vectors", VhcaState, vectors,
                       VHCA_CORE_VECTORS_DEFAULT),
    DEFINE_PROP_UINT32("max-qp", VhcaState, max_qp,
                       VHCA_CORE_MAX_QP_DEFAULT),
    DEFINE_PROP_UINT32("max-cq", VhcaState, max_cq,
                       VHCA_CORE_MAX_CQ_DEFAULT),
    DEFINE_PROP_UINT32("max-mr", VhcaState, max_mr,
                       VHCA_CORE_MAX_MR_DEFAULT),
    DEFINE_PROP_UINT32("max-pd", VhcaState, max_pd,
                       VHCA_CORE_MAX_PD_DEFAULT),
    DEFINE_PROP_UINT32("max-srq", VhcaState, max_srq,
                       VHCA_CORE_MAX_SRQ_DEFAULT),
    /* A receiver that cannot keep up (PFC experiment): 0, no limit. */
    DEFINE_PROP("x-rx-frame-rate", VhcaState, rx_frame_rate,
                vhca_prop_rx_frame_rate, uint32_t, .set_default = true,
                .defval.u = 0),
};

static void vhca_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->realize = vhca_realize;
    pc->exit = vhca_exit;
    pc->config_write = vhca_write_config;
    pc->vendor_id = VHCA_PCI_VENDOR_ID;
    pc->device_id = VHCA_PCI_DEVICE_ID;
    pc->revision = VHCA_PCI_REVISION;
    pc->class_id = VHCA_PCI_CLASS;

    rc->phases.hold = vhca_reset_hold;

    dc->vmsd = &vmstate_vhca;

    dc->desc = "Virtual InfiniBand/RoCEv2 host channel adapter";
    device_class_set_props(dc, vhca_properties);
    object_class_property_set_description(klass, "link",
        "the port's link layer: eth (RoCEv2, default) or ib (InfiniBand: "
        "the netdev is the cable, a subnet manager brings the port up)");
    object_class_property_set_description(klass, "gid-table-len",
        "RoCE GID table entries (1..128)");
    object_class_property_set_description(klass, "db-pages",
        "4 KiB doorbell pages in BAR2, one per user context (1..1024)");
    object_class_property_set_description(klass, "vectors",
        "MSI-X vectors: 0 async, 1 Ethernet, 2.. completion (2..64)");
    object_class_property_set_description(klass, "max-qp",
        "queue pairs the device can hold (1..16384)");
    object_class_property_set_description(klass, "max-cq",
        "completion queues the device can hold (1..65536)");
    object_class_property_set_description(klass, "max-mr",
        "memory regions the device can hold (1..65536)");
    object_class_property_set_description(klass, "max-pd",
        "protection domains the device can hold (1..65536)");
    object_class_property_set_description(klass, "max-srq",
        "shared receive queues the device can hold (0..65536, 0: none)");
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo vhca_info = {
    .name = TYPE_VHCA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(VhcaState),
    .instance_init = vhca_instance_init,
    .instance_finalize = vhca_instance_finalize,
    .class_init = vhca_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void vhca_register_types(void)
{
    type_register_static(&vhca_info);
}

type_init(vhca_register_types)
