/*
 * vhca engine: completion queues - the CQE producer with its owner bit,
 * the doorbell record, overflow into the error state, arming and
 * COMPLETION events (docs/specs/vhca.rst, "Event and completion queues";
 * IBTA 11.4.2, 11.2.8.3).  The commands are in vhca-cq-cmd.c.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vhca-rdma.h"

#define VHCA_CQ_ARM_MASK    (3u << 30)

static uint32_t vhca_cq_entries(const VhcaCq *cq)
{
    return 1u << cq->log_size;
}

/*
 * Learn a consumer index (low 24 bits, from the doorbell record or a CQ
 * doorbell).  It may only move forward, up to what the device produced.
 */
static bool vhca_cq_update_ci(VhcaCq *cq, uint32_t ci24)
{
    uint32_t advance = (ci24 - cq->ci) & VHCA_CQ_CI_MASK;

    if (advance > cq->pi - cq->ci) {
        return false;
    }
    cq->ci += advance;
    return true;
}

/* Room for one more CQE?  The doorbell record is read only when full. */
static bool vhca_cq_has_room(VhcaCore *core, VhcaCq *cq)
{
    uint8_t raw[4];

    if (cq->pi - cq->ci < vhca_cq_entries(cq)) {
        return true;
    }
    if (vhca_dma_read(core, cq->dbrec_addr, raw, sizeof(raw)) == 0) {
        vhca_cq_update_ci(cq, vhca_ld_le32(raw) & VHCA_CQ_CI_MASK);
    }
    return cq->pi - cq->ci < vhca_cq_entries(cq);
}

/*
 * IBTA 11.4.2.1 / 10.10.2: a CQ that overflows is in error; its QPs go
 * to the error state (vhca_cq_errors_settle) and the consumer learns it
 * from a CQ_ERROR event.
 */
static void vhca_cq_set_error(VhcaCore *core, uint32_t cqn, VhcaCq *cq,
                              const char *why)
{
    cq->error = true;
    cq->arm = 0;
    core->cq_error_pending = true;
    vhca_guest_error(core, VHCA_GUEST_ERR_CQ, "CQ %u %s: the CQ is in error",
                     cqn, why);
    vhca_aeq_post(core, VHCA_EQE_CQ_ERROR, 0, cqn, 0);
}

static void vhca_cq_build(uint8_t *cqe, const VhcaCompletion *wc)
{
    memset(cqe, 0, sizeof(struct vhca_cqe));
    vhca_st_le64(cqe + offsetof(struct vhca_cqe, wr_id), wc->wr_id);
    vhca_st_le32(cqe + offsetof(struct vhca_cqe, byte_len), wc->byte_len);
    vhca_st_le32(cqe + offsetof(struct vhca_cqe, imm_or_inv),
                 wc->imm_or_inv);
    vhca_st_le32(cqe + offsetof(struct vhca_cqe, qpn), wc->qpn);
    vhca_st_le32(cqe + offsetof(struct vhca_cqe, src_qp), wc->src_qp);
    vhca_st_le32(cqe + offsetof(struct vhca_cqe, vendor_err),
                 wc->vendor_err);
    cqe[offsetof(struct vhca_cqe, status)] = wc->status;
    cqe[offsetof(struct vhca_cqe, opcode)] = wc->opcode;
    cqe[offsetof(struct vhca_cqe, flags)] = wc->flags;
}

static void vhca_cq_event(VhcaCore *core, uint32_t cqn, VhcaCq *cq)
{
    cq->arm = 0;
    vhca_eq_post(core, &core->comp_eqs[cq->eqn], VHCA_GUEST_ERR_EQ,
                 VHCA_EQE_COMPLETION, 0, cqn, 0);
}

/*
 * Write @cqe (built, owner byte aside) at @index of the ring on @pages
 * with the owner bit of @index's pass.  The owner byte goes last: it
 * tells the consumer the CQE is valid.  Returns non-zero if the ring is
 * not guest RAM; *addr gets the slot's address.
 */
int vhca_cq_write_cqe(VhcaCore *core, const uint64_t *pages,
                      uint32_t log_size, uint32_t index,
                      const uint8_t *cqe, uint64_t *addr)
{
    uint8_t owner = ((index >> log_size) & 1) ^ 1;

    *addr = vhca_queue_addr(pages, log_size, index, sizeof(struct vhca_cqe));
    if (vhca_dma_write(core, *addr, cqe, offsetof(struct vhca_cqe, owner))) {
        return -1;
    }
    return vhca_dma_write(core, *addr + offsetof(struct vhca_cqe, owner),
                          &owner, 1);
}

bool vhca_cq_post(VhcaCore *core, uint32_t cqn, const VhcaCompletion *wc)
{
    VhcaCq *cq = vhca_cq_lookup(core, cqn);
    uint8_t cqe[sizeof(struct vhca_cqe)];
    uint64_t addr;

    if (!cq || cq->error) {
        return false;
    }
    if (!vhca_cq_has_room(core, cq)) {
        VHCA_HOOK(core, err_queue_overflow, VHCA_RING_CQ, cqn, cq->pi,
                  cq->ci);
        vhca_cq_set_error(core, cqn, cq, "overflowed");
        return false;
    }

    vhca_cq_build(cqe, wc);
    if (vhca_cq_write_cqe(core, cq->pages, cq->log_size, cq->pi, cqe,
                          &addr)) {
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_CQ, cqn, cq->pi, addr);
        vhca_cq_set_error(core, cqn, cq, "ring is not guest RAM");
        return false;
    }
    cq->pi++;
    if (wc->status != VHCA_WC_SUCCESS) {
        vhca_count(core, VHCA_CNT_COMPLETION_ERRORS, 1);
        VHCA_HOOK(core, cqe_error, cqn, wc->qpn, wc->wr_id, wc->opcode,
                  wc->status, wc->vendor_err);
    }

    /*
     * IBTA 11.4.2.2: a solicited arm also fires for a completion in
     * error, so the consumer learns about it without polling.
     */
    if (cq->arm == VHCA_CQ_ARM_NEXT ||
        (cq->arm == VHCA_CQ_ARM_SOLICITED &&
         (wc->solicited || wc->status != VHCA_WC_SUCCESS))) {
        vhca_cq_event(core, cqn, cq);
    }
    return true;
}

void vhca_cq_doorbell(VhcaCore *core, uint32_t page, uint32_t cqn,
                      uint32_t value)
{
    VhcaCq *cq = vhca_cq_lookup(core, cqn);
    uint32_t arm = value & VHCA_CQ_ARM_MASK;
    uint32_t ci24 = value & VHCA_CQ_CI_MASK;

    if (!cq || cq->db_page != page) {
        VHCA_HOOK(core, ub_doorbell, page, VHCA_DB_CQ, 8, cqn);
        vhca_guest_error(core, VHCA_GUEST_ERR_DOORBELL,
                         "CQ doorbell on page %u for CQ %u, which the page "
                         "does not own, ignoring", page, cqn);
        return;
    }
    if (arm == VHCA_CQ_ARM_MASK || cq->error ||
        !vhca_cq_update_ci(cq, ci24)) {
        VHCA_HOOK(core, ub_cq_doorbell, cqn, value, cq->ci, cq->pi);
        vhca_guest_error(core, VHCA_GUEST_ERR_CQ,
                         "CQ %u doorbell 0x%x: bad arm bits, CQ in error or "
                         "consumer index beyond 0x%x, ignoring", cqn, value,
                         cq->pi);
        return;
    }
    /*
     * IBTA 11.4.2.2 (and ibv_req_notify_cq(3)): the event is for the next
     * completion added after the request.  Those already in the CQ are
     * the consumer's to poll, which it does after arming; an event for
     * them would belong to no new completion, and a consumer that waits
     * for one event per completion (perftest's -e latency loop: wait,
     * re-arm, poll once) would take it for the next one.
     */
    if (arm && cq->arm != VHCA_CQ_ARM_NEXT) {
        cq->arm = arm;
    }
}

void vhca_cq_errors_settle(VhcaCore *core)
{
    /*
     * Moving a QP to ERR flushes its WQEs, which may overflow another CQ:
     * loop until no CQ error is left unhandled.  Each pass moves at least
     * one QP to ERR, so this ends.
     */
    while (core->cq_error_pending) {
        uint32_t qpn;

        core->cq_error_pending = false;
        for (qpn = core->qp_ids.first; qpn <= core->qp_ids.last; qpn++) {
            VhcaQp *qp = vhca_qp_lookup(core, qpn);

            if (qp && qp->state != VHCA_QPS_ERR &&
                (core->cqs[qp->send_cqn].error ||
                 core->cqs[qp->recv_cqn].error)) {
                vhca_qp_fatal(core, qpn);
            }
        }
    }
}
