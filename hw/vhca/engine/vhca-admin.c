/*
 * vhca engine: the admin queue and its command table (docs/specs/vhca.rst,
 * "Admin queue" and "Commands").
 *
 * Commands are dispatched from a table indexed by opcode.  Each handler
 * sees the 32 input bytes of the entry and fills the 16 output bytes; it
 * returns a status and may set a syndrome (the offending value).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-ib.h"

#define VHCA_CMD_IN_LEN         32
#define VHCA_CMD_OUT_LEN        16

/* Output half of struct vhca_admin_cmd: status up to the end. */
#define VHCA_CMD_OUTPUT_OFFSET  offsetof(struct vhca_admin_cmd, status)
#define VHCA_CMD_OUTPUT_LEN     (sizeof(struct vhca_admin_cmd) - \
                                 VHCA_CMD_OUTPUT_OFFSET)

/* ADMQ_PI is a 16-bit free-running index (spec, BAR0 register table). */
#define VHCA_ADMQ_PI_MASK       0xffffu

/* IB speed and width codes (IBTA Vol 1, 14.2.5.6 PortInfo). */
#define VHCA_IB_SPEED_EDR       32      /* 25 Gb/s per lane */
#define VHCA_IB_WIDTH_1X        1

typedef uint8_t (*VhcaCmdHandler)(VhcaCore *core, VhcaCmdCtx *ctx);

/*
 * The handlers, by opcode; their names are vhca_admin_opcode_name()'s.
 * A command of one link layer's only is an unknown opcode on the other
 * port (docs/specs/vhca.rst, "InfiniBand port").
 */
typedef struct VhcaCmdDesc {
    VhcaCmdHandler handler;
    uint8_t link_only;              /* VHCA_CMD_ON_* */
} VhcaCmdDesc;

enum {
    VHCA_CMD_ON_ANY,
    VHCA_CMD_ON_ETH,                /* the NIC and RoCE's GID table */
    VHCA_CMD_ON_IB,                 /* the management agents */
};

static uint8_t vhca_cmd_nop(VhcaCore *core, VhcaCmdCtx *ctx)
{
    (void)core;
    (void)ctx;
    return VHCA_ST_OK;
}

static uint8_t vhca_cmd_query_device(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t attr[sizeof(struct vhca_device_attr)];
    uint64_t addr = vhca_ld_le64(ctx->in +
                                 offsetof(struct vhca_cmd_dma_in, addr));
    uint32_t len = vhca_ld_le32(ctx->in +
                                offsetof(struct vhca_cmd_dma_in, len));
    uint64_t guid = vhca_ib_node_guid(core);

    if (len < sizeof(attr)) {
        ctx->syndrome = len;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "buffer of %u bytes is smaller than %zu",
                             len, sizeof(attr));
    }

    /* The limits the device enforces (spec, "RDMA resources"). */
    memset(attr, 0, sizeof(attr));
#define ATTR(field) (attr + offsetof(struct vhca_device_attr, field))
    vhca_st_le64(ATTR(fw_version),
                 ((uint64_t)VHCA_VERSION_MAJOR << 32) |
                 ((uint64_t)VHCA_VERSION_MINOR << 16));
    vhca_st_le64(ATTR(sys_image_guid), guid);
    vhca_st_le64(ATTR(node_guid), guid);
    vhca_st_le32(ATTR(vendor_id), VHCA_PCI_VENDOR_ID);
    vhca_st_le32(ATTR(vendor_part_id), VHCA_PCI_DEVICE_ID);
    vhca_st_le32(ATTR(hw_ver), VHCA_PCI_REVISION);
    vhca_st_le32(ATTR(max_uctx), core->cfg.num_db_pages);
    vhca_st_le32(ATTR(num_comp_vectors),
                 core->cfg.num_vectors - VHCA_VECTOR_FIRST_COMP);
    if (core->cfg.link == VHCA_LINK_IB) {
        /* GUIDInfo and P_KeyTable (IBTA 14.2.5.5, 14.2.5.7). */
        vhca_st_le32(ATTR(gid_tbl_len), VHCA_IB_GUID_TBL_LEN);
        vhca_st_le32(ATTR(max_pkeys), VHCA_IB_PKEY_TBL_LEN);
    } else {
        vhca_st_le32(ATTR(gid_tbl_len), core->cfg.gid_tbl_len);
        vhca_st_le32(ATTR(max_pkeys), 1);
    }
    /* IBTA 1.5 memory placement: no persistence (docs/specs/vhca.rst). */
    vhca_st_le32(ATTR(cap_flags),
                 VHCA_DEV_CAP_FLUSH_GLOBAL | VHCA_DEV_CAP_ATOMIC_WRITE);
    vhca_st_le64(ATTR(max_mr_size),
                 (uint64_t)VHCA_MR_MAX_PAGES << VHCA_MR_MAX_PAGE_SHIFT);
    /* Page sizes 4 KiB .. 1 GiB: bits 12..30. */
    vhca_st_le64(ATTR(page_size_cap),
                 ((2ull << VHCA_MR_MAX_PAGE_SHIFT) - 1) &
                 ~((1ull << VHCA_MR_MIN_PAGE_SHIFT) - 1));
    vhca_st_le32(ATTR(max_qp), core->cfg.max_qp);
    vhca_st_le32(ATTR(max_qp_wr), 1u << VHCA_WQ_MAX_LOG_SIZE);
    vhca_st_le32(ATTR(max_sge), VHCA_MAX_SEND_SGE);
    vhca_st_le32(ATTR(max_cq), core->cfg.max_cq);
    vhca_st_le32(ATTR(max_cqe), (1u << VHCA_CQ_MAX_LOG_SIZE) - 1);
    vhca_st_le32(ATTR(max_mr), core->cfg.max_mr);
    vhca_st_le32(ATTR(max_pd), core->cfg.max_pd);
    vhca_st_le32(ATTR(max_qp_rd_atom), VHCA_MAX_RD_ATOMIC);
    vhca_st_le32(ATTR(max_qp_init_rd_atom), VHCA_MAX_RD_ATOMIC);
    /* An SRQ is a receive ring like a QP's own (IBTA 10.2.9). */
    vhca_st_le32(ATTR(max_srq), core->cfg.max_srq);
    vhca_st_le32(ATTR(max_srq_wr), 1u << VHCA_WQ_MAX_LOG_SIZE);
    vhca_st_le32(ATTR(max_srq_sge), VHCA_MAX_RECV_SGE);
    vhca_st_le32(ATTR(max_msg_size), VHCA_MAX_MSG_SIZE);
    vhca_st_le32(ATTR(max_inline_data), VHCA_MAX_INLINE);
    /* XRC (annex A14) needs XRC SRQs: none without SRQs. */
    vhca_st_le32(ATTR(max_xrcd), core->cfg.max_srq ? VHCA_MAX_XRCD : 0);
    /* Windows take their index from the MR table (IBTA 10.6.7.1). */
    vhca_st_le32(ATTR(max_mw), core->cfg.max_mr);
#undef ATTR

    if (vhca_dma_write(core, addr, attr, sizeof(attr))) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot write %zu bytes at 0x%llx",
                             sizeof(attr), (unsigned long long)addr);
    }
    return VHCA_ST_OK;
}

static uint8_t vhca_cmd_query_port(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t port = ctx->in[offsetof(struct vhca_cmd_port_in, port)];
    uint8_t *out = ctx->out;

    if (port != 1) {
        ctx->syndrome = port;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "port %u does not exist (only port 1)", port);
    }

#define OUT(field) (offsetof(struct vhca_port_attr, field))
    out[OUT(max_mtu)] = VHCA_IB_MTU_4096;
    out[OUT(active_mtu)] = vhca_port_active_mtu(core);
    if (core->cfg.link == VHCA_LINK_IB) {
        /*
         * The logical state the SM set, and the link PortInfo reports;
         * the rest of an IB port's state is PortInfo's (MAD_IFC).
         */
        out[OUT(state)] = core->ib.state;
        out[OUT(phys_state)] = core->link_up ? VHCA_PORT_PHYS_LINK_UP
                                             : VHCA_PORT_PHYS_POLLING;
        out[OUT(active_speed)] = VHCA_IB_PORT_SPEED;
        out[OUT(active_width)] = VHCA_IB_PORT_WIDTH;
        vhca_st_le16(out + OUT(gid_tbl_len), VHCA_IB_GUID_TBL_LEN);
    } else {
        out[OUT(state)] = core->link_up ? VHCA_PORT_ACTIVE : VHCA_PORT_DOWN;
        out[OUT(phys_state)] = core->link_up ? VHCA_PORT_PHYS_LINK_UP
                                             : VHCA_PORT_PHYS_DISABLED;
        out[OUT(active_speed)] = VHCA_IB_SPEED_EDR;
        out[OUT(active_width)] = VHCA_IB_WIDTH_1X;
        vhca_st_le16(out + OUT(gid_tbl_len), (uint16_t)core->cfg.gid_tbl_len);
        vhca_st_le32(out + OUT(eth_mtu), core->mtu);
    }
#undef OUT
    return VHCA_ST_OK;
}

static bool vhca_gid_is_v4_mapped(const uint8_t *gid)
{
    static const uint8_t prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };

    return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

static uint8_t vhca_cmd_add_gid(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint16_t index = vhca_ld_le16(ctx->in +
                                  offsetof(struct vhca_cmd_gid_in, index));
    uint8_t port = ctx->in[offsetof(struct vhca_cmd_gid_in, port)];
    uint8_t type = ctx->in[offsetof(struct vhca_cmd_gid_in, type)];
    const uint8_t *gid = ctx->in + offsetof(struct vhca_cmd_gid_in, gid);
    uint16_t vlan = vhca_ld_le16(ctx->in +
                                 offsetof(struct vhca_cmd_gid_in, vlan));
    uint16_t vid = vlan & VHCA_VLAN_VID_MASK;
    VhcaGidEntry *entry;

    if (index >= core->cfg.gid_tbl_len) {
        ctx->syndrome = index;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "index %u >= gid-table-len %u",
                             index, core->cfg.gid_tbl_len);
    }
    if (port != 1) {
        ctx->syndrome = port;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "port %u does not exist (only port 1)", port);
    }
    if (type != VHCA_GID_TYPE_ROCE_V2_IPV4 &&
        type != VHCA_GID_TYPE_ROCE_V2_IPV6) {
        ctx->syndrome = type;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "unknown GID type %u", type);
    }
    /* An IPv4 RoCEv2 GID is the IPv4-mapped IPv6 address (A17.4.1.1). */
    if (type == VHCA_GID_TYPE_ROCE_V2_IPV4 && !vhca_gid_is_v4_mapped(gid)) {
        ctx->syndrome = type;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "IPv4 GID at index %u is not ::ffff:a.b.c.d",
                             index);
    }
    /*
     * The entry's VLAN: TAGGED and a VID, or nothing.  VID 4095 is
     * reserved (IEEE 802.1Q Table 9-2); VID 0 is the priority tag, the
     * port's own untagged VLAN with a PCP.
     */
    if ((vlan & ~(VHCA_GID_VLAN_TAGGED | VHCA_VLAN_VID_MASK)) ||
        (!(vlan & VHCA_GID_VLAN_TAGGED) && vid) ||
        vid == VHCA_VLAN_VID_MASK) {
        ctx->syndrome = vlan;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "GID at index %u: bad VLAN field 0x%04x",
                             index, vlan);
    }

    entry = &core->gid_tbl[index];
    entry->valid = true;
    entry->type = type;
    memcpy(entry->gid, gid, VHCA_GID_LEN);
    entry->vlan = vlan & VHCA_GID_VLAN_TAGGED;
    entry->vid = vid;
    vhca_gid_tbl_update_top(core);
    return VHCA_ST_OK;
}

static uint8_t vhca_cmd_del_gid(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint16_t index = vhca_ld_le16(ctx->in +
                                  offsetof(struct vhca_cmd_gid_in, index));

    if (index >= core->cfg.gid_tbl_len) {
        ctx->syndrome = index;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "index %u >= gid-table-len %u",
                             index, core->cfg.gid_tbl_len);
    }
    /* Deleting an empty entry succeeds: the command is idempotent. */
    memset(&core->gid_tbl[index], 0, sizeof(core->gid_tbl[index]));
    vhca_gid_tbl_update_top(core);
    return VHCA_ST_OK;
}

static uint8_t vhca_cmd_set_mac(VhcaCore *core, VhcaCmdCtx *ctx)
{
    static const uint8_t zero_mac[VHCA_ETH_ALEN];
    const uint8_t *mac = ctx->in + offsetof(struct vhca_cmd_mac_in, mac);

    if (mac[0] & 1) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "%02x:%02x:%02x:%02x:%02x:%02x is multicast",
                             mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    }
    if (!memcmp(mac, zero_mac, VHCA_ETH_ALEN)) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "the MAC address is all zero");
    }
    memcpy(core->mac, mac, VHCA_ETH_ALEN);
    return VHCA_ST_OK;
}

static uint8_t vhca_cmd_set_mtu(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t mtu = vhca_ld_le32(ctx->in +
                                offsetof(struct vhca_cmd_mtu_in, mtu));

    if (mtu < VHCA_MIN_MTU || mtu > VHCA_MAX_MTU) {
        ctx->syndrome = mtu;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "MTU %u outside %u..%u",
                             mtu, VHCA_MIN_MTU, VHCA_MAX_MTU);
    }
    /* The port stays active: no PORT_CHANGE event (spec, SET_MTU). */
    core->mtu = mtu;
    return VHCA_ST_OK;
}

static bool vhca_uctx_allocated(const VhcaCore *core, uint32_t page)
{
    return core->uctx_map[page / 64] & (1ull << (page % 64));
}

static uint8_t vhca_cmd_alloc_uctx(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t page;

    for (page = 0; page < core->cfg.num_db_pages; page++) {
        if (!vhca_uctx_allocated(core, page)) {
            core->uctx_map[page / 64] |= 1ull << (page % 64);
            vhca_st_le32(ctx->out +
                         offsetof(struct vhca_cmd_uctx_out, db_page), page);
            return VHCA_ST_OK;
        }
    }
    /* Running out is not a guest mistake: no guest error report. */
    return VHCA_ST_NO_RESOURCES;
}

static uint8_t vhca_cmd_dealloc_uctx(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t page = vhca_ld_le32(ctx->in +
                                 offsetof(struct vhca_cmd_uctx_in, db_page));

    if (page >= core->cfg.num_db_pages) {
        ctx->syndrome = page;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "doorbell page %u >= db-pages %u",
                             page, core->cfg.num_db_pages);
    }
    if (!vhca_uctx_allocated(core, page)) {
        ctx->syndrome = page;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_STATE,
                             "doorbell page %u is not allocated", page);
    }
    /* Its next owner must not be able to ring another context's queues. */
    if (core->uctx_users[page]) {
        ctx->syndrome = page;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "doorbell page %u still owns %u CQs and QPs",
                             page, core->uctx_users[page]);
    }
    core->uctx_map[page / 64] &= ~(1ull << (page % 64));
    return VHCA_ST_OK;
}

static const VhcaCmdDesc vhca_admin_cmds[VHCA_CMD_MAX] = {
    [VHCA_CMD_NOP] = { vhca_cmd_nop, VHCA_CMD_ON_ANY },
    [VHCA_CMD_QUERY_DEVICE] = { vhca_cmd_query_device, VHCA_CMD_ON_ANY },
    [VHCA_CMD_QUERY_PORT] = { vhca_cmd_query_port, VHCA_CMD_ON_ANY },
    [VHCA_CMD_ADD_GID] = { vhca_cmd_add_gid, VHCA_CMD_ON_ETH },
    [VHCA_CMD_DEL_GID] = { vhca_cmd_del_gid, VHCA_CMD_ON_ETH },
    [VHCA_CMD_SET_MAC] = { vhca_cmd_set_mac, VHCA_CMD_ON_ETH },
    [VHCA_CMD_SET_MTU] = { vhca_cmd_set_mtu, VHCA_CMD_ON_ETH },
    [VHCA_CMD_ALLOC_UCTX] = { vhca_cmd_alloc_uctx, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DEALLOC_UCTX] = { vhca_cmd_dealloc_uctx, VHCA_CMD_ON_ANY },
    [VHCA_CMD_SET_RX_FILTER] = { vhca_cmd_set_rx_filter, VHCA_CMD_ON_ETH },
    [VHCA_CMD_CREATE_PD] = { vhca_cmd_create_pd, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DESTROY_PD] = { vhca_cmd_destroy_pd, VHCA_CMD_ON_ANY },
    [VHCA_CMD_CREATE_MR] = { vhca_cmd_create_mr, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DESTROY_MR] = { vhca_cmd_destroy_mr, VHCA_CMD_ON_ANY },
    [VHCA_CMD_CREATE_EQ] = { vhca_cmd_create_eq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DESTROY_EQ] = { vhca_cmd_destroy_eq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_CREATE_CQ] = { vhca_cmd_create_cq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DESTROY_CQ] = { vhca_cmd_destroy_cq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_CREATE_QP] = { vhca_cmd_create_qp, VHCA_CMD_ON_ANY },
    [VHCA_CMD_MODIFY_QP] = { vhca_cmd_modify_qp, VHCA_CMD_ON_ANY },
    [VHCA_CMD_QUERY_QP] = { vhca_cmd_query_qp, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DESTROY_QP] = { vhca_cmd_destroy_qp, VHCA_CMD_ON_ANY },
    [VHCA_CMD_ATTACH_MCAST] = { vhca_cmd_attach_mcast, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DETACH_MCAST] = { vhca_cmd_detach_mcast, VHCA_CMD_ON_ANY },
    [VHCA_CMD_CREATE_SRQ] = { vhca_cmd_create_srq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_MODIFY_SRQ] = { vhca_cmd_modify_srq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_QUERY_SRQ] = { vhca_cmd_query_srq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DESTROY_SRQ] = { vhca_cmd_destroy_srq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_RESIZE_CQ] = { vhca_cmd_resize_cq, VHCA_CMD_ON_ANY },
    [VHCA_CMD_ALLOC_XRCD] = { vhca_cmd_alloc_xrcd, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DEALLOC_XRCD] = { vhca_cmd_dealloc_xrcd, VHCA_CMD_ON_ANY },
    [VHCA_CMD_ALLOC_MW] = { vhca_cmd_alloc_mw, VHCA_CMD_ON_ANY },
    [VHCA_CMD_DEALLOC_MW] = { vhca_cmd_dealloc_mw, VHCA_CMD_ON_ANY },
    [VHCA_CMD_MAD_IFC] = { vhca_cmd_mad_ifc, VHCA_CMD_ON_ANY },
    [VHCA_CMD_MODIFY_PORT] = { vhca_cmd_modify_port, VHCA_CMD_ON_ANY },
    [VHCA_CMD_SET_CC] = { vhca_cmd_set_cc, VHCA_CMD_ON_ETH },
    [VHCA_CMD_QUERY_CC] = { vhca_cmd_query_cc, VHCA_CMD_ON_ETH },
};

static uint8_t vhca_admin_dispatch(VhcaCore *core, VhcaCmdCtx *ctx)
{
    const VhcaCmdDesc *d;
    bool ib = core->cfg.link == VHCA_LINK_IB;

    if (ctx->opcode >= VHCA_CMD_MAX || !vhca_admin_cmds[ctx->opcode].handler) {
        ctx->syndrome = ctx->opcode;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_OPCODE,
                             "unknown opcode 0x%x", ctx->opcode);
    }
    d = &vhca_admin_cmds[ctx->opcode];
    if ((d->link_only == VHCA_CMD_ON_ETH && ib) ||
        (d->link_only == VHCA_CMD_ON_IB && !ib)) {
        ctx->syndrome = ctx->opcode;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_OPCODE,
                             "a command of the %s port only; this port is "
                             "%s (the link property)",
                             ib ? "Ethernet" : "InfiniBand",
                             ib ? "InfiniBand" : "Ethernet");
    }
    return d->handler(core, ctx);
}

/*
 * Execute the command at ADMQ_CI.  Returns false if it could not be read,
 * in which case the queue stops until the next doorbell.
 */
static bool vhca_admq_execute_one(VhcaCore *core)
{
    uint8_t entry[sizeof(struct vhca_admin_cmd)];
    uint8_t output[VHCA_CMD_OUTPUT_LEN];
    uint32_t slot = core->admq.ci & (vhca_ring_entries(&core->admq) - 1);
    uint64_t addr = vhca_ring_slot_addr(&core->admq, core->admq.ci,
                                        sizeof(entry));
    const uint8_t done = 1;
    VhcaCmdCtx ctx;
    uint32_t token;
    uint8_t status;
    bool output_lost;

    if (vhca_dma_read(core, addr, entry, sizeof(entry))) {
        core->status |= VHCA_STATUS_ADMQ_ERROR;
        core->error = VHCA_ERR_ADMQ_DMA;
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_ADMQ, 0, slot, addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_ADMQ,
                         "cannot read command slot %u at 0x%llx (not guest "
                         "RAM), admin queue stopped", slot,
                         (unsigned long long)addr);
        return false;
    }

    memset(output, 0, sizeof(output));
    ctx.opcode = vhca_ld_le16(entry + offsetof(struct vhca_admin_cmd,
                                               opcode));
    ctx.in = entry + offsetof(struct vhca_admin_cmd, in);
    ctx.out = output + (offsetof(struct vhca_admin_cmd, out) -
                        VHCA_CMD_OUTPUT_OFFSET);
    ctx.syndrome = 0;
    token = vhca_ld_le32(entry + offsetof(struct vhca_admin_cmd, token));

    status = vhca_admin_dispatch(core, &ctx);

    output[0] = status;
    vhca_st_le32(output + (offsetof(struct vhca_admin_cmd, syndrome) -
                           VHCA_CMD_OUTPUT_OFFSET), ctx.syndrome);

    /* done is written last, once the rest of the output is in place. */
    output_lost =
        vhca_dma_write(core, addr + VHCA_CMD_OUTPUT_OFFSET, output,
                       sizeof(output)) ||
        vhca_dma_write(core, addr + offsetof(struct vhca_admin_cmd, done),
                       &done, 1);
    if (output_lost) {
        VHCA_HOOK(core, err_guest_ram, VHCA_RING_ADMQ, 0, slot, addr);
        vhca_guest_error(core, VHCA_GUEST_ERR_ADMQ,
                         "cannot write the output of command slot %u at "
                         "0x%llx", slot, (unsigned long long)addr);
    }

    vhca_count(core, VHCA_CNT_ADMIN_COMMANDS, 1);
    if (status != VHCA_ST_OK || output_lost) {
        vhca_count(core, VHCA_CNT_ADMIN_ERRORS, 1);
    }
    core->admq.ci++;

    if (core->ops->admin_cmd_done) {
        core->ops->admin_cmd_done(core->opaque, slot, ctx.opcode, token,
                                  status, ctx.syndrome);
    }
    vhca_aeq_post(core, VHCA_EQE_CMD_DONE, status, slot, token);
    return true;
}

void vhca_admq_doorbell(VhcaCore *core, uint32_t pi)
{
    uint32_t pending = (pi - core->admq.ci) & VHCA_ADMQ_PI_MASK;
    uint32_t entries;

    if (!core->enabled) {
        VHCA_HOOK(core, ub_ring_doorbell, VHCA_RING_ADMQ, 0, pi);
        vhca_guest_error(core, VHCA_GUEST_ERR_ADMQ,
                         "ADMQ_PI 0x%x written while the device is not "
                         "enabled, ignoring", pi);
        return;
    }
    /* Only ENABLE checks ADMQ_LOG_SIZE: until then it holds any value. */
    entries = vhca_ring_entries(&core->admq);
    if (pending > entries) {
        core->status |= VHCA_STATUS_ADMQ_ERROR;
        VHCA_HOOK(core, err_doorbell_index, VHCA_RING_ADMQ, 0, pi,
                  core->admq.ci, core->admq.ci + entries);
        vhca_reg_refuse(core, VHCA_ERR_ADMQ_DOORBELL,
                        "ADMQ_PI 0x%x is %u commands ahead of ADMQ_CI 0x%x, "
                        "more than the %u the ring holds",
                        pi, pending, core->admq.ci, entries);
        return;
    }

    core->admq.pi = pi;
    core->status &= ~VHCA_STATUS_ADMQ_ERROR;

    while (core->enabled &&
           ((core->admq.pi - core->admq.ci) & VHCA_ADMQ_PI_MASK) != 0) {
        if (!vhca_admq_execute_one(core)) {
            break;
        }
    }
}
