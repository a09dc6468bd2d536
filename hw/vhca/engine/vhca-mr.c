/*
 * vhca engine: memory regions - CREATE_MR/DESTROY_MR, the checks of every
 * access through a key, and the one routine that moves data between the
 * device and guest memory through MRs, a scatter/gather list at a time
 * (docs/specs/vhca.rst, "Memory regions"; IBTA 10.6).
 *
 * An MR's page list stays in guest memory and is read at each use: the
 * device keeps no copy of it, so an MR costs the device a few bytes
 * whatever its size.  The driver keeps the list in place until
 * DESTROY_MR.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-rdma.h"

/*
 * FLUSH_PERSISTENT is not among them: the device cannot make guest memory
 * durable, so no MR offers the persistence placement type.  ZERO_BASED
 * is a window's (vhca-mw.c), never an MR's.
 */
#define VHCA_ACCESS_ALL     (VHCA_ACCESS_LOCAL_WRITE |                      \
                             VHCA_ACCESS_REMOTE_WRITE |                     \
                             VHCA_ACCESS_REMOTE_READ |                      \
                             VHCA_ACCESS_REMOTE_ATOMIC |                    \
                             VHCA_ACCESS_MW_BIND |                          \
                             VHCA_ACCESS_FLUSH_GLOBAL)
/* Entries of the page list read per DMA while checking it. */
#define VHCA_PBL_CHUNK      VHCA_PBL_ENTRIES_PER_PAGE

/*
 * The MR (or memory window) a key names, or NULL if none does any more
 * (stale tag).
 */
VhcaMr *vhca_mr_by_key(VhcaCore *core, uint32_t key)
{
    uint32_t index = key >> 8;

    if (!vhca_ids_used(&core->mr_ids, index) ||
        core->mrs[index].key_tag != (key & 0xff)) {
        return NULL;
    }
    return &core->mrs[index];
}

static uint64_t vhca_mr_page_size(const VhcaMr *mr)
{
    return 1ull << mr->page_shift;
}

static bool vhca_mr_page_addr_ok(const VhcaMr *mr, uint64_t addr)
{
    return addr != 0 && (addr & (vhca_mr_page_size(mr) - 1)) == 0;
}

/* ---------------------------------------------------------------------- */
/* CREATE_MR                                                              */
/* ---------------------------------------------------------------------- */

static void vhca_mr_create_parse(const uint8_t *raw,
                                 struct vhca_mr_create *c)
{
#define LD(f, bits) \
    (c->f = vhca_ld_le##bits(raw + offsetof(struct vhca_mr_create, f)))
    LD(pdn, 32);
    LD(access, 32);
    LD(iova, 64);
    LD(length, 64);
    LD(pbl_addr, 64);
    LD(npages, 32);
    LD(flags, 16);
    LD(offset, 32);
    LD(key_tag, 32);
    LD(mrn, 32);
#undef LD
    c->page_shift = raw[offsetof(struct vhca_mr_create, page_shift)];
    c->pbl_levels = raw[offsetof(struct vhca_mr_create, pbl_levels)];
}

typedef enum VhcaPblScan {
    VHCA_PBL_OK,
    VHCA_PBL_UNREADABLE,            /* *@bad: the first entry not read */
    VHCA_PBL_MISALIGNED,            /* *@bad: the entry */
} VhcaPblScan;

/*
 * Read @n u64 page list entries at @addr and check each is a non-zero
 * address aligned to @align: CREATE_MR's and REG_MR's check.
 */
static VhcaPblScan vhca_mr_scan_entries(VhcaCore *core, uint64_t addr,
                                        uint32_t n, uint64_t align,
                                        uint32_t *bad, uint64_t *bad_page)
{
    uint8_t raw[VHCA_PBL_CHUNK * 8];
    uint32_t done, i;

    for (done = 0; done < n; done += VHCA_PBL_CHUNK) {
        uint32_t count = n - done < VHCA_PBL_CHUNK ? n - done
                                                   : VHCA_PBL_CHUNK;

        *bad = done;
        if (vhca_dma_read(core, addr + 8ull * done, raw, 8u * count)) {
            return VHCA_PBL_UNREADABLE;
        }
        for (i = 0; i < count; i++) {
            uint64_t page = vhca_ld_le64(raw + 8 * i);

            if (page == 0 || (page & (align - 1))) {
                *bad = done + i;
                *bad_page = page;
                return VHCA_PBL_MISALIGNED;
            }
        }
    }
    return VHCA_PBL_OK;
}

static uint8_t vhca_mr_check_entries(VhcaCore *core, VhcaCmdCtx *ctx,
                                     uint64_t addr, uint32_t n,
                                     uint64_t align)
{
    uint64_t page = 0;
    uint32_t bad = 0;

    switch (vhca_mr_scan_entries(core, addr, n, align, &bad, &page)) {
    case VHCA_PBL_UNREADABLE:
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot read page list entries from %u at "
                             "0x%llx", bad,
                             (unsigned long long)(addr + 8ull * bad));
    case VHCA_PBL_MISALIGNED:
        ctx->syndrome = bad;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "page list entry %u (0x%llx) is not "
                             "aligned to %llu bytes", bad,
                             (unsigned long long)page,
                             (unsigned long long)align);
    default:
        return VHCA_ST_OK;
    }
}

/* Level 2: each pointer names a 4 KiB page of up to 512 entries. */
static uint8_t vhca_mr_check_pbl_l2(VhcaCore *core, VhcaCmdCtx *ctx,
                                    const VhcaMr *mr)
{
    uint32_t l1_count = (mr->npages + VHCA_PBL_ENTRIES_PER_PAGE - 1) /
                        VHCA_PBL_ENTRIES_PER_PAGE;
    uint8_t raw[8];
    uint32_t i;
    uint8_t status;

    status = vhca_mr_check_entries(core, ctx, mr->pbl_addr, l1_count,
                                   VHCA_QUEUE_PAGE_SIZE);
    for (i = 0; i < l1_count && status == VHCA_ST_OK; i++) {
        uint32_t left = mr->npages - i * VHCA_PBL_ENTRIES_PER_PAGE;

        if (vhca_dma_read(core, mr->pbl_addr + 8ull * i, raw, 8)) {
            return VHCA_ST_BAD_ADDR;
        }
        status = vhca_mr_check_entries(core, ctx, vhca_ld_le64(raw),
                                       left < VHCA_PBL_ENTRIES_PER_PAGE ?
                                       left : VHCA_PBL_ENTRIES_PER_PAGE,
                                       vhca_mr_page_size(mr));
    }
    return status;
}

static uint8_t vhca_mr_check_layout(VhcaCore *core, VhcaCmdCtx *ctx,
                                    const struct vhca_mr_create *c)
{
    uint32_t max_pages = c->pbl_levels == 2 ? VHCA_MR_MAX_PAGES
                                            : VHCA_PBL_MAX_L1_ENTRIES;

    if (c->page_shift < VHCA_MR_MIN_PAGE_SHIFT ||
        c->page_shift > VHCA_MR_MAX_PAGE_SHIFT) {
        ctx->syndrome = c->page_shift;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "page_shift %u outside %u..%u", c->page_shift,
                             VHCA_MR_MIN_PAGE_SHIFT, VHCA_MR_MAX_PAGE_SHIFT);
    }
    if (c->pbl_levels != 1 && c->pbl_levels != 2) {
        ctx->syndrome = c->pbl_levels;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "pbl_levels %u is neither 1 nor 2",
                             c->pbl_levels);
    }
    if (c->npages == 0 || c->npages > max_pages) {
        ctx->syndrome = c->npages;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "npages %u outside 1..%u", c->npages,
                             max_pages);
    }
    /* Both sides are below 2^49: no overflow. */
    if (c->offset >= (1ull << c->page_shift) ||
        c->length > ((uint64_t)c->npages << c->page_shift) - c->offset) {
        ctx->syndrome = c->offset;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "offset %u + length %llu do not fit %u pages "
                             "of %u bytes", c->offset,
                             (unsigned long long)c->length, c->npages,
                             1u << c->page_shift);
    }
    return VHCA_ST_OK;
}

static uint8_t vhca_mr_check_create(VhcaCore *core, VhcaCmdCtx *ctx,
                                    const struct vhca_mr_create *c)
{
    if (!vhca_pd_lookup(core, c->pdn)) {
        ctx->syndrome = c->pdn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "PD %u does not exist", c->pdn);
    }
    if (c->flags & ~(VHCA_MR_PHYS | VHCA_MR_AT_INDEX | VHCA_MR_FAST_REG)) {
        ctx->syndrome = c->flags;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "unknown flags 0x%x", c->flags);
    }
    /*
     * A fast-register MR has no pages, rights or range until a REG_MR
     * WQE gives them (IBTA 10.6.3.2): only its size counts here.
     */
    if (c->flags & VHCA_MR_FAST_REG) {
        if (c->flags != VHCA_MR_FAST_REG) {
            ctx->syndrome = c->flags;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "flags 0x%x: FAST_REG goes alone",
                                 c->flags);
        }
        if (c->npages == 0 || c->npages > VHCA_FAST_REG_MAX_PAGES) {
            ctx->syndrome = c->npages;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                                 "fast-register npages %u outside 1..%u",
                                 c->npages, VHCA_FAST_REG_MAX_PAGES);
        }
        return VHCA_ST_OK;
    }
    if (c->access & ~VHCA_ACCESS_ALL) {
        ctx->syndrome = c->access;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "unknown access flags 0x%x", c->access);
    }
    /* IBTA 10.6.3.1: remote write or atomic needs local write too. */
    if ((c->access & (VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_ATOMIC))
        && !(c->access & VHCA_ACCESS_LOCAL_WRITE)) {
        ctx->syndrome = c->access;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "access 0x%x: remote write/atomic without "
                             "local write", c->access);
    }
    if (c->flags & VHCA_MR_AT_INDEX) {
        if (c->mrn < core->mr_ids.first || c->mrn > core->mr_ids.last) {
            ctx->syndrome = c->mrn;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                                 "MR index %u out of range", c->mrn);
        }
        if (vhca_ids_used(&core->mr_ids, c->mrn)) {
            ctx->syndrome = c->mrn;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                                 "MR index %u in use", c->mrn);
        }
    }
    if (c->length > UINT64_MAX - c->iova) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "iova 0x%llx + length 0x%llx wraps",
                             (unsigned long long)c->iova,
                             (unsigned long long)c->length);
    }
    if (c->flags & VHCA_MR_PHYS) {
        return VHCA_ST_OK;
    }
    return vhca_mr_check_layout(core, ctx, c);
}

uint8_t vhca_cmd_create_mr(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t raw[sizeof(struct vhca_mr_create)];
    struct vhca_mr_create c;
    VhcaMr mr;
    uint32_t index;
    uint8_t status;

    status = vhca_cmd_mailbox_read(core, ctx, raw, sizeof(raw));
    if (status != VHCA_ST_OK) {
        return status;
    }
    vhca_mr_create_parse(raw, &c);
    status = vhca_mr_check_create(core, ctx, &c);
    if (status != VHCA_ST_OK) {
        return status;
    }

    memset(&mr, 0, sizeof(mr));
    mr.gen = ++core->mr_gen;
    mr.key_tag = (uint8_t)c.key_tag;
    mr.flags = c.flags & ~VHCA_MR_AT_INDEX;
    mr.pdn = c.pdn;
    mr.access = c.access;
    mr.iova = c.iova;
    mr.length = c.length;
    mr.valid = true;
    if (c.flags & VHCA_MR_FAST_REG) {
        /* Free: nothing until REG_MR (vhca_mr_fast_reg()). */
        mr.access = 0;
        mr.iova = 0;
        mr.length = 0;
        mr.max_pages = c.npages;
        mr.valid = false;
    } else if (!(c.flags & VHCA_MR_PHYS)) {
        mr.pbl_addr = c.pbl_addr;
        mr.npages = c.npages;
        mr.page_shift = c.page_shift;
        mr.pbl_levels = c.pbl_levels;
        mr.offset = c.offset;
        status = mr.pbl_levels == 1 ?
                 vhca_mr_check_entries(core, ctx, mr.pbl_addr,
                                       mr.npages, vhca_mr_page_size(&mr)) :
                 vhca_mr_check_pbl_l2(core, ctx, &mr);
        if (status != VHCA_ST_OK) {
            return status;
        }
    }

    /*
     * VHCA_MR_AT_INDEX lets the driver reregister an MR in place: the
     * same index and key tag give the same L_Key/R_Key (IBTA 11.2.8,
     * Reregister Memory Region).
     * The index was checked free above and nothing ran since.
     */
    if (c.flags & VHCA_MR_AT_INDEX) {
        index = c.mrn;
        if (!vhca_ids_claim(&core->mr_ids, index)) {
            return VHCA_ST_BUSY;
        }
    } else {
        index = vhca_ids_alloc(&core->mr_ids);
        if (!index) {
            return VHCA_ST_NO_RESOURCES;
        }
    }
    core->mrs[index] = mr;
    core->pds[mr.pdn].users++;
    vhca_cmd_set_handle_out(ctx, index, vhca_mr_key(index, mr.key_tag));
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_destroy_mr(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t key = vhca_cmd_handle_in(ctx);
    VhcaMr *mr = vhca_mr_by_key(core, key);

    /*
     * A fast-register MR's tag changes with each REG_MR, and the driver
     * cannot know whether its last one ran: the index names it.
     */
    if (!mr && vhca_ids_used(&core->mr_ids, key >> 8) &&
        (core->mrs[key >> 8].flags & VHCA_MR_FAST_REG)) {
        mr = &core->mrs[key >> 8];
    }

    if (!mr || vhca_mr_is_window(mr)) {
        ctx->syndrome = key;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "key 0x%x names no MR", key);
    }
    /* As rxe: the windows bound to it would name freed memory. */
    if (mr->mw_bound) {
        ctx->syndrome = key;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "MR 0x%x has %u memory windows bound to it",
                             key, mr->mw_bound);
    }
    core->pds[mr->pdn].users--;
    vhca_ids_free(&core->mr_ids, key >> 8);
    return VHCA_ST_OK;
}

/* ---------------------------------------------------------------------- */
/* Access checks and data movement (the transport's interface)            */
/* ---------------------------------------------------------------------- */

static bool vhca_mr_in_bounds(const VhcaMr *mr, uint64_t addr, uint64_t len)
{
    return vhca_range_within(mr->iova, mr->length, addr, len);
}

/*
 * IBTA 10.6.3 and 9.7.5.2 (R_Key): key, PD, bounds, rights, in order.  @mr is
 * what the key names, NULL if nothing.
 */
static VhcaMrStatus vhca_mr_check_access(const VhcaMr *mr, uint32_t pdn,
                                         uint64_t addr, uint64_t len,
                                         uint32_t access)
{
    if (!mr) {
        return VHCA_MR_BAD_KEY;
    }
    /* IBTA 10.6.5: a free (invalidated) MR grants nothing. */
    if (!mr->valid) {
        return VHCA_MR_NOT_VALID;
    }
    if (mr->pdn != pdn) {
        return VHCA_MR_PD_MISMATCH;
    }
    if (!vhca_mr_in_bounds(mr, addr, len)) {
        return VHCA_MR_OUT_OF_BOUNDS;
    }
    if (access & ~mr->access) {
        return VHCA_MR_NO_ACCESS;
    }
    /* IBTA 9.4.5: atomics act on one naturally aligned 64-bit word. */
    if ((access & VHCA_ACCESS_REMOTE_ATOMIC) && ((addr & 7) || len != 8)) {
        return VHCA_MR_MISALIGNED;
    }
    return VHCA_MR_OK;
}

/*
 * What @key names for an access asking @access, in generation @pin
 * (VHCA_MR_GEN_ANY: any), checked: an MR, or for a remote right a
 * memory window, checked and resolved to the MR beneath (*@addr
 * translated into the MR's space).  @whole: the whole MR or window, from
 * *@addr for *@len.  *@out gets the MR, *@gen the generation of what the
 * key named.
 */
static VhcaMrStatus vhca_mr_resolve(VhcaCore *core, uint32_t key,
                                    uint64_t pin, uint32_t pdn, uint32_t qpn,
                                    uint64_t *addr, uint64_t *len,
                                    uint32_t access, bool whole,
                                    const VhcaMr **out, uint64_t *gen)
{
    const VhcaMr *mr = vhca_mr_by_key(core, key);
    VhcaMrStatus status;

    /* Another MR behind the same key is no MR of this message. */
    if (!mr || (pin != VHCA_MR_GEN_ANY && mr->gen != pin)) {
        return VHCA_MR_BAD_KEY;
    }
    *gen = mr->gen;
    if (vhca_mr_is_window(mr)) {
        /* IBTA 10.6.7: a window grants remote access only, no L_Key. */
        if (!(access & VHCA_ACCESS_REMOTE_ANY)) {
            return VHCA_MR_BAD_KEY;
        }
        status = vhca_mw_check(core, mr, pdn, qpn, addr, len, access, whole,
                               &mr);
        if (status != VHCA_MR_OK) {
            return status;
        }
        /* The window granted the rights: the MR's own are not asked. */
        access = 0;
    } else if (whole) {
        *addr = mr->iova;
        *len = mr->length;
    }
    *out = mr;
    return vhca_mr_check_access(mr, pdn, *addr, *len, access);
}

VhcaMrStatus vhca_mr_check(VhcaCore *core, uint32_t key, uint32_t pdn,
                           uint32_t qpn, uint64_t addr, uint64_t len,
                           uint32_t access, uint64_t *gen)
{
    const VhcaMr *mr;
    uint64_t checked;
    VhcaMrStatus status = vhca_mr_resolve(core, key, VHCA_MR_GEN_ANY, pdn,
                                          qpn, &addr, &len, access, false,
                                          &mr, &checked);

    if (status == VHCA_MR_OK && gen) {
        *gen = checked;
    }
    return status;
}

VhcaMrStatus vhca_mr_check_whole(VhcaCore *core, uint32_t key, uint32_t pdn,
                                 uint32_t qpn, uint32_t access)
{
    const VhcaMr *mr;
    uint64_t addr = 0, len = 0, checked;

    return vhca_mr_resolve(core, key, VHCA_MR_GEN_ANY, pdn, qpn, &addr, &len,
                           access, true, &mr, &checked);
}

const char *vhca_mr_status_name(VhcaMrStatus status)
{
    static const char *const names[] = {
        [VHCA_MR_OK] = "ok",
        [VHCA_MR_BAD_KEY] = "bad key",
        [VHCA_MR_PD_MISMATCH] = "PD mismatch",
        [VHCA_MR_OUT_OF_BOUNDS] = "out of bounds",
        [VHCA_MR_NO_ACCESS] = "access right missing",
        [VHCA_MR_MISALIGNED] = "misaligned atomic",
        [VHCA_MR_NOT_VALID] = "invalidated",
        [VHCA_MR_QP_MISMATCH] = "window tied to another QP",
    };

    if ((unsigned)status >= sizeof(names) / sizeof(names[0])) {
        return "unknown";
    }
    return names[status];
}

/* ---------------------------------------------------------------------- */
/* Fast registration and invalidation (IBTA 10.6.3.2, 10.6.5, 10.7)       */
/* ---------------------------------------------------------------------- */

#define WQE_OFF(f)          offsetof(struct vhca_send_wqe, f)

uint8_t vhca_mr_fast_reg(VhcaCore *core, uint32_t pdn, const uint8_t *wqe)
{
    uint32_t key = vhca_ld_le32(wqe + WQE_OFF(imm_or_inv));
    uint64_t iova = vhca_ld_le64(wqe + WQE_OFF(mr_iova));
    uint64_t length = vhca_ld_le64(wqe + WQE_OFF(mr_length));
    uint64_t pbl_addr = vhca_ld_le64(wqe + WQE_OFF(mr_pbl_addr));
    uint32_t npages = vhca_ld_le32(wqe + WQE_OFF(mr_npages));
    uint32_t access = vhca_ld_le32(wqe + WQE_OFF(mr_access));
    uint8_t shift = wqe[WQE_OFF(mr_page_shift)];
    uint32_t index = key >> 8;
    uint64_t offset, bad_page;
    uint32_t bad;
    VhcaMr *mr;

    /* The key carries the new tag: the index alone names the MR. */
    if (!vhca_ids_used(&core->mr_ids, index)) {
        return VHCA_WC_LOC_PROT_ERR;
    }
    mr = &core->mrs[index];
    /* IBTA 10.7.2: a fast-register MR of the QP's PD, and not valid. */
    if (!(mr->flags & VHCA_MR_FAST_REG) || mr->pdn != pdn || mr->valid) {
        return VHCA_WC_LOC_PROT_ERR;
    }
    if (shift < VHCA_MR_MIN_PAGE_SHIFT || shift > VHCA_MR_MAX_PAGE_SHIFT ||
        npages == 0 || npages > mr->max_pages ||
        (access & ~VHCA_ACCESS_ALL) ||
        ((access & (VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_ATOMIC)) &&
         !(access & VHCA_ACCESS_LOCAL_WRITE)) ||
        length > UINT64_MAX - iova) {
        return VHCA_WC_LOC_PROT_ERR;
    }
    /* Both sides are below 2^40: no overflow. */
    offset = iova & ((1ull << shift) - 1);
    if (length > ((uint64_t)npages << shift) - offset) {
        return VHCA_WC_LOC_PROT_ERR;
    }
    if (vhca_mr_scan_entries(core, pbl_addr, npages, 1ull << shift, &bad,
                             &bad_page) != VHCA_PBL_OK) {
        return VHCA_WC_LOC_PROT_ERR;
    }

    mr->key_tag = key & 0xff;
    mr->gen = ++core->mr_gen;
    mr->access = access;
    mr->iova = iova;
    mr->length = length;
    mr->pbl_addr = pbl_addr;
    mr->npages = npages;
    mr->page_shift = shift;
    mr->pbl_levels = 1;
    mr->offset = (uint32_t)offset;
    mr->valid = true;
    return VHCA_WC_SUCCESS;
}

/*
 * IBTA 10.6.5: only MRs allocated for fast registration and type 2
 * memory windows (vhca_mw_invalidate()) can be invalidated, through their
 * current key and from a QP of their PD.  Invalidating a free MR changes
 * nothing.
 */
static bool vhca_mr_invalidate(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                               uint32_t key, bool remote)
{
    VhcaMr *mr = vhca_mr_by_key(core, key);

    if (mr && vhca_mr_is_window(mr)) {
        return vhca_mw_invalidate(core, mr, qpn, pdn, remote);
    }
    if (!mr || !(mr->flags & VHCA_MR_FAST_REG) || mr->pdn != pdn) {
        return false;
    }
    mr->valid = false;
    return true;
}

uint8_t vhca_mr_local_inv(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                          uint32_t key)
{
    return vhca_mr_invalidate(core, qpn, pdn, key, false) ?
           VHCA_WC_SUCCESS : VHCA_WC_LOC_PROT_ERR;
}

bool vhca_mr_remote_invalidate(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                               uint32_t key)
{
    return vhca_mr_invalidate(core, qpn, pdn, key, true);
}

/* Guest physical address of page @index of a paged MR, or 0. */
static uint64_t vhca_mr_page(VhcaCore *core, const VhcaMr *mr,
                             uint64_t index)
{
    uint64_t entry_addr = mr->pbl_addr + 8 * index;
    uint8_t raw[8];
    uint64_t page;

    if (mr->pbl_levels == 2) {
        if (vhca_dma_read(core, mr->pbl_addr +
                          8 * (index / VHCA_PBL_ENTRIES_PER_PAGE), raw, 8)) {
            return 0;
        }
        page = vhca_ld_le64(raw);
        if (page == 0 || (page & (VHCA_QUEUE_PAGE_SIZE - 1))) {
            return 0;
        }
        entry_addr = page + 8 * (index % VHCA_PBL_ENTRIES_PER_PAGE);
    }
    if (vhca_dma_read(core, entry_addr, raw, 8)) {
        return 0;
    }
    /* The driver may have rewritten the list since CREATE_MR. */
    page = vhca_ld_le64(raw);
    return vhca_mr_page_addr_ok(mr, page) ? page : 0;
}

/*
 * Move @len bytes between @buf and [@addr, @addr + @len) of @mr, page by
 * page; the range has passed vhca_mr_check_access().  Returns 0, or -1 if
 * a page (or page list entry) is not guest RAM.
 */
static int vhca_mr_dma(VhcaCore *core, const VhcaMr *mr, uint64_t addr,
                       uint8_t *buf, uint64_t len, VhcaSgDir dir)
{
    bool to_guest = dir == VHCA_SG_SCATTER;
    uint64_t off;

    if (mr->flags & VHCA_MR_PHYS) {
        return to_guest ? vhca_dma_write(core, addr, buf, len)
                        : vhca_dma_read(core, addr, buf, len);
    }

    off = addr - mr->iova + mr->offset;
    while (len) {
        uint64_t in_page = off & (vhca_mr_page_size(mr) - 1);
        uint64_t chunk = vhca_mr_page_size(mr) - in_page;
        uint64_t page = vhca_mr_page(core, mr, off >> mr->page_shift);
        int ret;

        if (!page) {
            return -1;
        }
        chunk = chunk < len ? chunk : len;
        ret = to_guest ? vhca_dma_write(core, page + in_page, buf, chunk)
                       : vhca_dma_read(core, page + in_page, buf, chunk);
        if (ret) {
            return -1;
        }
        buf += chunk;
        off += chunk;
        len -= chunk;
    }
    return 0;
}

/*
 * Check [@addr, @addr + @len) of key @key in generation @gen, then move
 * it: the only path from the engine to an MR's memory, windows included.
 */
static bool vhca_mr_copy_range(VhcaCore *core, VhcaSgDir dir, uint32_t key,
                               uint64_t gen, uint64_t addr, uint8_t *buf,
                               uint32_t len, uint32_t pdn, uint32_t qpn,
                               uint32_t access)
{
    uint64_t range = len, checked;
    const VhcaMr *mr;

    return vhca_mr_resolve(core, key, gen, pdn, qpn, &addr, &range, access,
                           false, &mr, &checked) == VHCA_MR_OK &&
           !vhca_mr_dma(core, mr, addr, buf, len, dir);
}

uint8_t vhca_sg_copy(VhcaCore *core, VhcaSgDir dir,
                     const struct vhca_sge *sgl, unsigned nsge,
                     uint64_t offset, void *buf, uint32_t len, uint32_t pdn,
                     uint32_t access)
{
    uint8_t *p = buf;
    unsigned i;

    for (i = 0; i < nsge && len; i++) {
        const struct vhca_sge *sge = &sgl[i];
        uint32_t chunk;

        if (offset >= sge->length) {
            offset -= sge->length;
            continue;
        }
        chunk = sge->length - offset < len ? sge->length - (uint32_t)offset
                                           : len;
        /*
         * Checked at every use: the MR may have gone, or its key been
         * given to another MR, since the WQE was checked.
         */
        /* Local access: a window's key names nothing here. */
        if (!vhca_mr_copy_range(core, dir, sge->lkey, VHCA_MR_GEN_ANY,
                                sge->addr + offset, p, chunk, pdn, 0,
                                access)) {
            return VHCA_WC_LOC_PROT_ERR;
        }
        p += chunk;
        len -= chunk;
        offset = 0;
    }
    /* The list holds less than @offset + @len bytes. */
    return len ? VHCA_WC_LOC_LEN_ERR : VHCA_WC_SUCCESS;
}

uint8_t vhca_sg_copy_one(VhcaCore *core, VhcaSgDir dir, uint32_t key,
                         uint64_t gen, uint64_t addr, void *buf,
                         uint32_t len, uint32_t pdn, uint32_t qpn,
                         uint32_t access)
{
    if (!len) {
        return VHCA_WC_SUCCESS;
    }
    return vhca_mr_copy_range(core, dir, key, gen, addr, buf, len, pdn, qpn,
                              access) ? VHCA_WC_SUCCESS
                                      : VHCA_WC_LOC_PROT_ERR;
}
