/*
 * QEMU vhca: live migration, the glue half (issue 30).
 *
 * The engine saves its whole state as a versioned, CRC-checked record
 * stream (hw/vhca/engine/vhca-state.c); this file carries that stream in
 * the device's VMState as one sized buffer, next to the PCI config space,
 * MSI-X and what the glue itself holds: the doorbells a vCPU rang that the
 * main loop has not run yet (vhca-doorbell.c).  docs/developer-guide.rst,
 * "Migration: the glue", says why each piece is where it is.
 *
 * Copyright (c) 2026 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "migration/vmstate.h"
#include "net/queue.h"
#include "system/runstate.h"

#include "vhca.h"
#include "vhca-state.h"
#include "trace.h"

/*
 * The length field comes from the stream, before the buffer it sizes is
 * allocated: refuse what no device could save (a stream of 16384 QPs with
 * full windows is tens of MiB) rather than allocate up to 4 GiB for it.
 */
#define VHCA_MIG_STATE_MAX      (512u << 20)

/*
 * Rounds of "hand the engine what the fabric queued, run the engine" when
 * the VM stops: one empties the queue unless the engine's own receive
 * queue was full; a few more cover a queue that a full engine refused.
 */
#define VHCA_STOP_DRAIN_ROUNDS  8

/*
 * The VM stops - for a migration's last pass, a savevm, or a 'stop': the
 * device runs dry before it is saved, as it would have a moment later.
 * This runs before the last pass of guest RAM (migration_completion()
 * stops the VM, then qemu_savevm_state_complete_precopy() sends RAM and
 * then the devices, all under the BQL), so the engine may still write
 * guest RAM here, where pre_save may not.  What goes through it:
 *
 * - the frames the fabric delivered, including one a netdev read and
 *   queued for the device after the VM had stopped (qemu_can_send_packet()
 *   is false then), which would otherwise stay in the source process and
 *   be lost;
 * - the doorbells the vCPUs queued, and the ACKs, responses and sends
 *   all of it makes.  Those the net layer holds back for the same reason
 *   (qemu_send_packet() queues them in the netdev's queue while the VM is
 *   stopped) go out now, through the netdev's own flush.
 *
 * So the saved device holds no received frame.  The source's dgram
 * netdev reads nothing more from the fabric socket it shares with the
 * target while the VM is stopped (qemu-patches/0007), so none stays
 * behind in the source (docs/developer-guide.rst, "Migration: the glue").
 */
static void vhca_vm_state_change(void *opaque, bool running, RunState state)
{
    VhcaState *s = opaque;
    NetClientState *nc = qemu_get_queue(s->nic);
    bool emptied = false;
    unsigned round;

    if (running || s->unrealized) {
        return;
    }
    for (round = 1; round <= VHCA_STOP_DRAIN_ROUNDS && !emptied; round++) {
        /* A frame the engine refused disabled receiving until a flush. */
        nc->receive_disabled = 0;
        emptied = qemu_net_queue_flush(nc->incoming_queue);
        /* Never nested: inside the engine it defers itself (vhca.c). */
        vhca_work_bh(s);
        if (nc->peer) {
            qemu_flush_queued_packets(nc->peer);
        }
    }
    trace_vhca_vm_stop_drain(round - 1, emptied);
}

void vhca_migration_realize(VhcaState *s)
{
    s->vm_stop_entry = qemu_add_vm_change_state_handler(vhca_vm_state_change,
                                                        s);
}

void vhca_migration_unrealize(VhcaState *s)
{
    if (s->vm_stop_entry) {
        qemu_del_vm_change_state_handler(s->vm_stop_entry);
        s->vm_stop_entry = NULL;
    }
}

/*
 * pre_save runs with the BQL held and the VM stopped, after the RAM's last
 * pass has been written: the engine must not run here (a pass would write
 * guest RAM that is no longer sent), it is only read.  The VM's stop ran
 * it dry (vhca_vm_state_change()); doorbells queued since - none, unless
 * that run had to defer itself - go with the state and run on the
 * target, after the load, as the first thing its engine does.
 */
static int vhca_pre_save(void *opaque)
{
    VhcaState *s = opaque;
    VhcaDoorbell db;
    char err[256];
    uint32_t n = 0;
    unsigned i;

    if (!vhca_engine_enter(s)) {
        /* Unreachable with the BQL held by the saver, but never nested. */
        error_report("vhca: cannot save the device while its engine runs");
        return -EBUSY;
    }
    vhca_state_buf_free(&s->mig_save);
    if (vhca_state_save(&s->core, &s->mig_save, err, sizeof(err))) {
        vhca_state_buf_free(&s->mig_save);
        vhca_engine_leave(s);
        error_report("vhca: %s", err);
        return -ENOMEM;
    }
    /* Copied out and back in order: the source may yet resume. */
    while (vhca_doorbell_queue_pop(&s->doorbells, &db)) {
        s->mig_doorbell[n++] = db;
    }
    for (i = 0; i < n; i++) {
        bool first;

        vhca_doorbell_queue_push(&s->doorbells, &s->mig_doorbell[i], &first);
    }
    s->mig_doorbells = n;
    s->mig_state = s->mig_save.data;
    s->mig_state_len = s->mig_save.len;
    vhca_engine_leave(s);
    trace_vhca_migration_save(s->mig_state_len, s->mig_doorbells);
    return 0;
}

static int vhca_post_save(void *opaque)
{
    VhcaState *s = opaque;

    s->mig_state = NULL;
    s->mig_state_len = 0;
    s->mig_doorbells = 0;
    vhca_state_buf_free(&s->mig_save);
    return 0;
}

static int vhca_pre_load(void *opaque)
{
    VhcaState *s = opaque;

    /* VMS_ALLOC allocates the buffer afresh: the pointer must be free. */
    g_free(s->mig_state);
    s->mig_state = NULL;
    s->mig_state_len = 0;
    s->mig_doorbells = 0;
    return 0;
}

static bool vhca_mig_state_len_valid(void *opaque, int version_id)
{
    VhcaState *s = opaque;

    if (s->mig_state_len > VHCA_MIG_STATE_MAX) {
        error_report("vhca: device state of %" PRIu32 " bytes is larger "
                     "than any device saves (%u)", s->mig_state_len,
                     VHCA_MIG_STATE_MAX);
        return false;
    }
    return true;
}

static bool vhca_mig_doorbells_valid(void *opaque, int version_id)
{
    VhcaState *s = opaque;

    if (s->mig_doorbells > VHCA_DOORBELL_QUEUE_LEN) {
        error_report("vhca: %" PRIu32 " queued doorbells in the stream, "
                     "the queue holds %u", s->mig_doorbells,
                     VHCA_DOORBELL_QUEUE_LEN);
        return false;
    }
    return true;
}

/*
 * post_load runs in the incoming coroutine, in the main loop, with the BQL
 * and the VM stopped.  vhca_state_load() checks the whole stream into a
 * fresh engine and swaps it in only if all of it is good, within this one
 * call: no bottom half or timer of the device runs between the check and
 * the swap.  What the new engine schedules (a pass for every running QP,
 * its timer for the earliest deadline) runs once this returns; the frames
 * it sends wait in the net layer until the VM runs (qemu_can_send_packet()),
 * its DMAs land on the RAM already loaded (RAM comes first in the stream).
 */
static int vhca_post_load(void *opaque, int version_id)
{
    VhcaState *s = opaque;
    char err[256];
    uint32_t i;
    int ret = 0;

    if (!vhca_engine_enter(s)) {
        error_report("vhca: cannot load the device while its engine runs");
        ret = -EBUSY;
        goto out;
    }
    if (vhca_state_load(&s->core, s->mig_state, s->mig_state_len, err,
                        sizeof(err))) {
        vhca_engine_leave(s);
        trace_vhca_migration_load_refused(err);
        error_report("vhca: %s", err);
        ret = -EINVAL;
        goto out;
    }
    /*
     * The link is the target's backend's (developer guide, "Migration:
     * the engine's state"): a port whose cable went away during the
     * downtime goes down, with the event the driver expects.
     */
    vhca_core_set_link(&s->core, vhca_link_is_up(s));
    /*
     * The source's queued doorbells, in order, before anything of the
     * target's: vhca_engine_leave() schedules the bottom half that runs
     * them.  The queue is empty (the VM never ran here) or, for loadvm,
     * holds doorbells of the state the load replaces: they go.
     */
    vhca_doorbell_queue_clear(&s->doorbells);
    for (i = 0; i < s->mig_doorbells; i++) {
        bool first;

        vhca_doorbell_queue_push(&s->doorbells, &s->mig_doorbell[i], &first);
    }
    vhca_dma_cleanup(&s->dma);
    vhca_engine_leave(s);
    trace_vhca_migration_load(s->mig_state_len, s->mig_doorbells,
                              s->core.link_up);
out:
    g_free(s->mig_state);
    s->mig_state = NULL;
    s->mig_state_len = 0;
    return ret;
}

static const VMStateDescription vmstate_vhca_doorbell = {
    .name = "vhca/doorbell",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(value, VhcaDoorbell),
        VMSTATE_UINT32(offset, VhcaDoorbell),
        VMSTATE_UINT8(size, VhcaDoorbell),
        VMSTATE_BOOL(ctrl, VhcaDoorbell),
        VMSTATE_END_OF_LIST()
    },
};

static bool vhca_mig_doorbells_needed(void *opaque)
{
    VhcaState *s = opaque;

    return s->mig_doorbells > 0;
}

/* Only in the stream when a vCPU rang a doorbell the loop had not run. */
static const VMStateDescription vmstate_vhca_doorbells = {
    .name = "vhca/doorbells",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = vhca_mig_doorbells_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mig_doorbells, VhcaState),
        VMSTATE_VALIDATE("vhca doorbell count", vhca_mig_doorbells_valid),
        VMSTATE_STRUCT_VARRAY_UINT32(mig_doorbell, VhcaState, mig_doorbells,
                                     1, vmstate_vhca_doorbell, VhcaDoorbell),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_vhca = {
    .name = "vhca",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = vhca_pre_save,
    .post_save = vhca_post_save,
    .pre_load = vhca_pre_load,
    .post_load = vhca_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, VhcaState),
        VMSTATE_MSIX(parent_obj, VhcaState),
        VMSTATE_UINT32(mig_state_len, VhcaState),
        VMSTATE_VALIDATE("vhca state length", vhca_mig_state_len_valid),
        VMSTATE_VBUFFER_ALLOC_UINT32(mig_state, VhcaState, 1, NULL,
                                     mig_state_len),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_vhca_doorbells,
        NULL
    },
};
