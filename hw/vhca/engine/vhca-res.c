/*
 * vhca engine: what every RDMA resource command shares - handle tables,
 * mailboxes, queue page lists, doorbell page ownership, and the object
 * tables' life cycle (docs/specs/vhca.rst, "RDMA resources").
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vhca-rdma.h"

/* ---------------------------------------------------------------------- */
/* Handles                                                                */
/* ---------------------------------------------------------------------- */

int vhca_ids_init(VhcaIds *ids, uint32_t first, uint32_t last)
{
    ids->first = first;
    ids->last = last;
    ids->map = calloc(last / 64 + 1, sizeof(uint64_t));
    return ids->map ? 0 : -1;
}

void vhca_ids_destroy(VhcaIds *ids)
{
    free(ids->map);
    ids->map = NULL;
}

void vhca_ids_clear(VhcaIds *ids)
{
    memset(ids->map, 0, (ids->last / 64 + 1) * sizeof(uint64_t));
}

uint32_t vhca_ids_next(const VhcaIds *ids, uint32_t from)
{
    uint32_t word;

    if (from < ids->first) {
        from = ids->first;
    }
    for (word = from / 64; from <= ids->last && word <= ids->last / 64;
         word++) {
        uint64_t bits = ids->map[word];
        uint32_t id;

        if (word == from / 64) {
            bits &= ~0ull << (from % 64);
        }
        if (!bits) {
            continue;
        }
        id = word * 64 + (uint32_t)__builtin_ctzll(bits);
        return id <= ids->last ? id : 0;
    }
    return 0;
}

uint32_t vhca_ids_alloc_from(VhcaIds *ids, uint32_t from)
{
    uint32_t word;

    if (from < ids->first) {
        from = ids->first;
    }
    for (word = from / 64; word <= ids->last / 64; word++) {
        uint64_t free_bits = ~ids->map[word];
        uint32_t id;

        if (word == from / 64) {
            free_bits &= ~0ull << (from % 64);
        }
        if (!free_bits) {
            continue;
        }
        id = word * 64 + (uint32_t)__builtin_ctzll(free_bits);
        if (id > ids->last) {
            return 0;
        }
        ids->map[word] |= 1ull << (id % 64);
        return id;
    }
    return 0;
}

uint32_t vhca_ids_alloc(VhcaIds *ids)
{
    return vhca_ids_alloc_from(ids, ids->first);
}

bool vhca_ids_claim(VhcaIds *ids, uint32_t id)
{
    if (id < ids->first || id > ids->last || vhca_ids_used(ids, id)) {
        return false;
    }
    ids->map[id / 64] |= 1ull << (id % 64);
    return true;
}

void vhca_ids_free(VhcaIds *ids, uint32_t id)
{
    if (vhca_ids_used(ids, id)) {
        ids->map[id / 64] &= ~(1ull << (id % 64));
    }
}

/* ---------------------------------------------------------------------- */
/* Mailboxes and handles in admin commands                                */
/* ---------------------------------------------------------------------- */

static uint8_t vhca_cmd_mailbox(VhcaCore *core, VhcaCmdCtx *ctx, size_t len,
                                uint64_t *addr)
{
    uint32_t avail = vhca_ld_le32(ctx->in +
                                  offsetof(struct vhca_cmd_dma_in, len));

    *addr = vhca_ld_le64(ctx->in + offsetof(struct vhca_cmd_dma_in, addr));
    if (avail < len) {
        ctx->syndrome = avail;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "mailbox of %u bytes is smaller than %zu",
                             avail, len);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_mailbox_read(VhcaCore *core, VhcaCmdCtx *ctx, void *buf,
                              size_t len)
{
    uint64_t addr;
    uint8_t status = vhca_cmd_mailbox(core, ctx, len, &addr);

    if (status != VHCA_ST_OK) {
        return status;
    }
    if (vhca_dma_read(core, addr, buf, len)) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot read the %zu-byte mailbox at 0x%llx",
                             len, (unsigned long long)addr);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_mailbox_read_flags(VhcaCore *core, VhcaCmdCtx *ctx,
                                    void *buf, size_t len, size_t flags_off,
                                    uint32_t known, uint32_t *flags)
{
    uint8_t status = vhca_cmd_mailbox_read(core, ctx, buf, len);

    if (status != VHCA_ST_OK) {
        return status;
    }
    *flags = vhca_ld_le32((const uint8_t *)buf + flags_off);
    if (*flags & ~known) {
        ctx->syndrome = *flags;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "reserved flags in 0x%x", *flags);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_mailbox_write(VhcaCore *core, VhcaCmdCtx *ctx,
                               const void *buf, size_t len)
{
    uint64_t addr;
    uint8_t status = vhca_cmd_mailbox(core, ctx, len, &addr);

    if (status != VHCA_ST_OK) {
        return status;
    }
    if (vhca_dma_write(core, addr, buf, len)) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot write the %zu-byte mailbox at 0x%llx",
                             len, (unsigned long long)addr);
    }
    return VHCA_ST_OK;
}

uint32_t vhca_cmd_handle_in(const VhcaCmdCtx *ctx)
{
    return vhca_ld_le32(ctx->in + offsetof(struct vhca_cmd_obj_in, handle));
}

void vhca_cmd_set_handle_out(VhcaCmdCtx *ctx, uint32_t handle, uint32_t key)
{
    vhca_st_le32(ctx->out + offsetof(struct vhca_cmd_obj_out, handle),
                 handle);
    vhca_st_le32(ctx->out + offsetof(struct vhca_cmd_obj_out, key), key);
}

/* ---------------------------------------------------------------------- */
/* Queue page lists                                                       */
/* ---------------------------------------------------------------------- */

/*
 * Queues (EQs, CQs, SQs, RQs) are read through a copy of their page list
 * taken at creation, so the hot path costs one DMA per entry and the
 * driver may free the list after the command.  The copy is at most
 * 1024 entries (a 4 MiB send queue).
 */
uint8_t vhca_queue_pages_read(VhcaCore *core, VhcaCmdCtx *ctx,
                              uint64_t pbl_addr, uint32_t npages,
                              uint64_t bytes, uint64_t **pages)
{
    uint32_t need = (uint32_t)((bytes + VHCA_QUEUE_PAGE_SIZE - 1) >>
                               VHCA_QUEUE_PAGE_SHIFT);
    uint64_t *list;
    uint32_t i;

    if (npages < need || npages > VHCA_PBL_MAX_L1_ENTRIES) {
        ctx->syndrome = npages;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "%u pages for a queue of %llu bytes (need "
                             "%u..%u)", npages, (unsigned long long)bytes,
                             need, VHCA_PBL_MAX_L1_ENTRIES);
    }
    list = calloc(need, sizeof(*list));
    if (!list) {
        return VHCA_ST_NO_RESOURCES;
    }
    /* The list the queue uses is read whole, then checked entry by entry. */
    if (vhca_dma_read(core, pbl_addr, list, need * sizeof(*list))) {
        free(list);
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot read the %u-entry page list at 0x%llx",
                             need, (unsigned long long)pbl_addr);
    }
    for (i = 0; i < need; i++) {
        uint64_t page = vhca_ld_le64((const uint8_t *)&list[i]);

        if (page == 0 || (page & (VHCA_QUEUE_PAGE_SIZE - 1))) {
            free(list);
            ctx->syndrome = i;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "page list entry %u (0x%llx) is not a "
                                 "4 KiB aligned page", i,
                                 (unsigned long long)page);
        }
        list[i] = page;
    }
    *pages = list;
    return VHCA_ST_OK;
}

uint64_t vhca_queue_addr(const uint64_t *pages, uint32_t log_size,
                         uint32_t index, uint32_t stride)
{
    uint64_t off = (uint64_t)(index & ((1u << log_size) - 1)) * stride;

    return pages[off >> VHCA_QUEUE_PAGE_SHIFT] +
           (off & (VHCA_QUEUE_PAGE_SIZE - 1));
}

/* ---------------------------------------------------------------------- */
/* Doorbell page ownership                                                */
/* ---------------------------------------------------------------------- */

bool vhca_db_page_ok(const VhcaCore *core, uint32_t db_page)
{
    return db_page == VHCA_DB_PAGE_KERNEL_NONE ||
           (db_page < core->cfg.num_db_pages &&
            (core->uctx_map[db_page / 64] & (1ull << (db_page % 64))));
}

void vhca_db_page_get(VhcaCore *core, uint32_t db_page)
{
    if (db_page < core->cfg.num_db_pages) {
        core->uctx_users[db_page]++;
    }
}

void vhca_db_page_put(VhcaCore *core, uint32_t db_page)
{
    if (db_page < core->cfg.num_db_pages && core->uctx_users[db_page]) {
        core->uctx_users[db_page]--;
    }
}

/* ---------------------------------------------------------------------- */
/* Look-up                                                                */
/* ---------------------------------------------------------------------- */

VhcaPd *vhca_pd_lookup(VhcaCore *core, uint32_t pdn)
{
    return vhca_ids_used(&core->pd_ids, pdn) ? &core->pds[pdn] : NULL;
}

VhcaEq *vhca_comp_eq_lookup(VhcaCore *core, uint32_t eqn)
{
    return vhca_ids_used(&core->eq_ids, eqn) ? &core->comp_eqs[eqn] : NULL;
}

VhcaCq *vhca_cq_lookup(VhcaCore *core, uint32_t cqn)
{
    return vhca_ids_used(&core->cq_ids, cqn) ? &core->cqs[cqn] : NULL;
}

VhcaQp *vhca_qp_lookup(VhcaCore *core, uint32_t qpn)
{
    return vhca_ids_used(&core->qp_ids, qpn) ? &core->qps[qpn] : NULL;
}

VhcaSrq *vhca_srq_lookup(VhcaCore *core, uint32_t srqn)
{
    return vhca_ids_used(&core->srq_ids, srqn) ? &core->srqs[srqn] : NULL;
}
