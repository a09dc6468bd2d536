/*
 * vhca engine: memory windows - ALLOC_MW / DEALLOC_MW, the BIND_MW send
 * WQE, invalidation, and the checks of a remote access through a
 * window's key (docs/specs/vhca.rst, "Memory windows"; IBTA Vol 1
 * 10.6.7).  Type 1 and type 2B windows, modelled on Linux rxe
 * (rxe_mw.c).
 *
 * A window is an entry of the MR table (VhcaMr with mw_type set), so MR
 * and window keys are one R_Key space.  It names a range of one MR in
 * the MR's generation at bind time, and moves to a new generation of its
 * own at each bind: a message under way stops when the window is rebound,
 * invalidated or deallocated, or the MR beneath re-registered
 * (vhca_sg_copy_one()).  The data itself moves through the MR
 * (vhca_mr_resolve() in vhca-mr.c), never a copy of its own.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-rdma.h"

#define WQE_OFF(f)          offsetof(struct vhca_send_wqe, f)
#define MW_IN_OFF(f)        offsetof(struct vhca_cmd_mw_in, f)

/*
 * The rights a bind may grant (rxe's RXE_ACCESS_SUPPORTED_MW).  Local
 * write is accepted, as ibv_bind_mw passes the MR's flags along, and
 * grants nothing: a window is reached from the wire only.
 */
#define VHCA_MW_ACCESS_ALL  (VHCA_ACCESS_LOCAL_WRITE |                      \
                             VHCA_ACCESS_REMOTE_WRITE |                     \
                             VHCA_ACCESS_REMOTE_READ |                      \
                             VHCA_ACCESS_REMOTE_ATOMIC |                    \
                             VHCA_ACCESS_FLUSH_GLOBAL |                     \
                             VHCA_ACCESS_ZERO_BASED)

static uint32_t vhca_mw_key(const VhcaCore *core, const VhcaMr *mw)
{
    return vhca_mr_key((uint32_t)(mw - core->mrs), mw->key_tag);
}

/* Window @mw lets go of its MR (and QP): it grants nothing. */
static void vhca_mw_unbind(VhcaCore *core, VhcaMr *mw)
{
    if (mw->mw_mr_index) {
        core->mrs[mw->mw_mr_index].mw_bound--;
    }
    mw->mw_mr_index = 0;
    mw->mw_mr_gen = 0;
    mw->mw_qpn = 0;
    mw->access = 0;
    mw->iova = 0;
    mw->length = 0;
}

/* ---------------------------------------------------------------------- */
/* ALLOC_MW, DEALLOC_MW                                                   */
/* ---------------------------------------------------------------------- */

uint8_t vhca_cmd_alloc_mw(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t pdn = vhca_ld_le32(ctx->in + MW_IN_OFF(pdn));
    uint8_t type = ctx->in[MW_IN_OFF(type)];
    uint8_t tag = (uint8_t)vhca_ld_le32(ctx->in + MW_IN_OFF(key_tag));
    uint32_t index;
    VhcaMr *mw;

    if (!vhca_pd_lookup(core, pdn)) {
        ctx->syndrome = pdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "PD %u does not exist", pdn);
    }
    if (type != VHCA_MW_TYPE_1 && type != VHCA_MW_TYPE_2) {
        ctx->syndrome = type;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "memory window type %u is neither 1 nor 2",
                             type);
    }
    /* IBTA 10.6.7.1: one R_Key space, the MR table's. */
    index = vhca_ids_alloc(&core->mr_ids);
    if (!index) {
        return VHCA_ST_NO_RESOURCES;
    }
    mw = &core->mrs[index];
    memset(mw, 0, sizeof(*mw));
    mw->mw_type = type;
    mw->gen = ++core->mr_gen;
    mw->key_tag = tag;
    mw->pdn = pdn;
    /* Type 1 is valid and bound to nothing, type 2 free (as rxe). */
    mw->valid = type == VHCA_MW_TYPE_1;
    core->pds[pdn].users++;
    vhca_cmd_set_handle_out(ctx, index, vhca_mw_key(core, mw));
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_dealloc_mw(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t key = vhca_cmd_handle_in(ctx);
    uint32_t index = key >> 8;
    VhcaMr *mw;

    /* The index names it: a type 2 window's tag moves with each bind. */
    if (!vhca_ids_used(&core->mr_ids, index) ||
        !vhca_mr_is_window(&core->mrs[index])) {
        ctx->syndrome = key;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "key 0x%x names no memory window", key);
    }
    mw = &core->mrs[index];
    vhca_mw_unbind(core, mw);
    core->pds[mw->pdn].users--;
    memset(mw, 0, sizeof(*mw));
    vhca_ids_free(&core->mr_ids, index);
    return VHCA_ST_OK;
}

/* ---------------------------------------------------------------------- */
/* BIND_MW (IBTA 10.6.7.2, rxe_check_bind_mw())                           */
/* ---------------------------------------------------------------------- */

typedef struct VhcaMwBind {
    uint32_t key;                   /* the window's current key */
    uint32_t new_key;
    uint64_t addr;
    uint64_t length;
    uint32_t mr_key;
    uint32_t access;
} VhcaMwBind;

/* The checks, in the spec's order; VHCA_MW_BIND__MAX if all pass. */
static VhcaMwBindError vhca_mw_bind_check(VhcaCore *core, uint32_t pdn,
                                          const VhcaMwBind *b,
                                          VhcaMr **mw_out, VhcaMr **mr_out)
{
    VhcaMr *mw = vhca_mr_by_key(core, b->key);
    VhcaMr *mr;

    if (!mw || !vhca_mr_is_window(mw)) {
        return VHCA_MW_BIND_BAD_KEY;
    }
    if (b->new_key >> 8 != b->key >> 8) {
        return VHCA_MW_BIND_NEW_KEY;
    }
    if (b->access & ~VHCA_MW_ACCESS_ALL) {
        return VHCA_MW_BIND_ACCESS;
    }
    if (mw->mw_type == VHCA_MW_TYPE_1 &&
        (b->access & VHCA_ACCESS_ZERO_BASED)) {
        return VHCA_MW_BIND_TYPE1_ZERO_BASED;
    }
    if (mw->mw_type == VHCA_MW_TYPE_2 && mw->valid) {
        return VHCA_MW_BIND_NOT_FREE;
    }
    if (mw->mw_type == VHCA_MW_TYPE_2 && !b->length) {
        return VHCA_MW_BIND_ZERO_LENGTH;
    }
    if (mw->pdn != pdn) {
        return VHCA_MW_BIND_WINDOW_PD;
    }
    *mw_out = mw;
    *mr_out = NULL;
    /* A type 1 bind of length 0 unbinds: no MR to check. */
    if (!b->length) {
        return VHCA_MW_BIND__MAX;
    }
    mr = vhca_mr_by_key(core, b->mr_key);
    if (!mr || vhca_mr_is_window(mr) || !mr->valid) {
        return VHCA_MW_BIND_MR_KEY;
    }
    if (mr->pdn != pdn) {
        return VHCA_MW_BIND_MR_PD;
    }
    if (!(mr->access & VHCA_ACCESS_MW_BIND)) {
        return VHCA_MW_BIND_MR_NO_BIND;
    }
    if ((b->access & (VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & VHCA_ACCESS_LOCAL_WRITE)) {
        return VHCA_MW_BIND_MR_NO_WRITE;
    }
    /* In the MR's address space, ZERO_BASED or not. */
    if (!vhca_range_within(mr->iova, mr->length, b->addr, b->length)) {
        return VHCA_MW_BIND_RANGE;
    }
    *mr_out = mr;
    return VHCA_MW_BIND__MAX;
}

uint8_t vhca_mw_bind(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                     const uint8_t *wqe)
{
    VhcaMwBind b = {
        .key = vhca_ld_le32(wqe + WQE_OFF(rkey)),
        .new_key = vhca_ld_le32(wqe + WQE_OFF(imm_or_inv)),
        .addr = vhca_ld_le64(wqe + WQE_OFF(mw_addr)),
        .length = vhca_ld_le64(wqe + WQE_OFF(mw_length)),
        .mr_key = vhca_ld_le32(wqe + WQE_OFF(mw_mr_lkey)),
        .access = vhca_ld_le32(wqe + WQE_OFF(mw_access)),
    };
    VhcaMr *mw = NULL, *mr = NULL;
    VhcaMwBindError why = vhca_mw_bind_check(core, pdn, &b, &mw, &mr);

    /* A failed bind changes nothing (rxe); err_wqe follows. */
    if (why != VHCA_MW_BIND__MAX) {
        VHCA_HOOK(core, mw_bind_refused, qpn, b.key, why);
        return VHCA_WC_MW_BIND_ERR;
    }
    vhca_mw_unbind(core, mw);
    mw->key_tag = b.new_key & 0xff;
    mw->gen = ++core->mr_gen;
    mw->access = b.access;
    mw->iova = b.addr;
    mw->length = b.length;
    if (mr) {
        mw->mw_mr_index = (uint32_t)(mr - core->mrs);
        mw->mw_mr_gen = mr->gen;
        mr->mw_bound++;
    }
    /* Type 2B: tied to the QP that bound it (IBTA 10.6.7.2.2). */
    if (mw->mw_type == VHCA_MW_TYPE_2) {
        mw->valid = true;
        mw->mw_qpn = qpn;
    }
    return VHCA_WC_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Remote access (rxe's rxe_lookup_mw() and check_rkey())                 */
/* ---------------------------------------------------------------------- */

VhcaMrStatus vhca_mw_check(VhcaCore *core, const VhcaMr *mw, uint32_t pdn,
                           uint32_t qpn, uint64_t *addr, uint64_t *len,
                           uint32_t access, bool whole, const VhcaMr **mr)
{
    /* ZERO_BASED: the remote address is an offset in the window. */
    uint64_t start = (mw->access & VHCA_ACCESS_ZERO_BASED) ? 0 : mw->iova;
    const VhcaMr *target;

    if (!mw->valid || !mw->length || !mw->mw_mr_index) {
        return VHCA_MR_NOT_VALID;
    }
    if (mw->pdn != pdn) {
        return VHCA_MR_PD_MISMATCH;
    }
    if (mw->mw_type == VHCA_MW_TYPE_2 && mw->mw_qpn != qpn) {
        return VHCA_MR_QP_MISMATCH;
    }
    if (whole) {
        *addr = start;
        *len = mw->length;
    }
    if (!vhca_range_within(start, mw->length, *addr, *len)) {
        return VHCA_MR_OUT_OF_BOUNDS;
    }
    if (access & ~mw->access) {
        return VHCA_MR_NO_ACCESS;
    }
    /* IBTA 9.4.5: atomics act on one naturally aligned 64-bit word. */
    if ((access & VHCA_ACCESS_REMOTE_ATOMIC) && ((*addr & 7) || *len != 8)) {
        return VHCA_MR_MISALIGNED;
    }
    /* The MR bound, as it was then: not re-registered since. */
    target = &core->mrs[mw->mw_mr_index];
    if (!vhca_ids_used(&core->mr_ids, mw->mw_mr_index) ||
        target->gen != mw->mw_mr_gen) {
        return VHCA_MR_NOT_VALID;
    }
    *addr = *addr - start + mw->iova;
    /* A zero-based window may start anywhere: the word itself too. */
    if ((access & VHCA_ACCESS_REMOTE_ATOMIC) && (*addr & 7)) {
        return VHCA_MR_MISALIGNED;
    }
    *mr = target;
    return VHCA_MR_OK;
}

/* ---------------------------------------------------------------------- */
/* Invalidation                                                           */
/* ---------------------------------------------------------------------- */

static void vhca_mw_free(VhcaCore *core, VhcaMr *mw, uint32_t qpn,
                         VhcaMwInvalidation why)
{
    VHCA_HOOK(core, mw_invalidated, qpn, vhca_mw_key(core, mw), why);
    vhca_mw_unbind(core, mw);
    mw->valid = false;
}

bool vhca_mw_invalidate(VhcaCore *core, VhcaMr *mw, uint32_t qpn,
                        uint32_t pdn, bool remote)
{
    /* o10-37.2.26: a type 1 window cannot be invalidated. */
    if (mw->mw_type != VHCA_MW_TYPE_2 || mw->pdn != pdn) {
        return false;
    }
    /* Type 2B: a SEND with Invalidate through the QP it is tied to. */
    if (remote && (!mw->valid || mw->mw_qpn != qpn)) {
        return false;
    }
    /* Invalidating a free window changes nothing, as for an MR. */
    if (mw->valid) {
        vhca_mw_free(core, mw, qpn,
                     remote ? VHCA_MW_INV_REMOTE : VHCA_MW_INV_LOCAL);
    }
    return true;
}

void vhca_mw_qp_gone(VhcaCore *core, uint32_t qpn)
{
    uint32_t index;

    for (index = vhca_ids_next(&core->mr_ids, 0); index;
         index = vhca_ids_next(&core->mr_ids, index + 1)) {
        VhcaMr *mw = &core->mrs[index];

        if (mw->mw_type == VHCA_MW_TYPE_2 && mw->valid &&
            mw->mw_qpn == qpn) {
            vhca_mw_free(core, mw, qpn, VHCA_MW_INV_QP_GONE);
        }
    }
}
