/*
 * vhca engine: multicast groups - ATTACH_MCAST / DETACH_MCAST and the
 * table the receive path fans a multicast datagram out with
 * (docs/specs/vhca.rst, "Multicast"; IBTA 10.5.2, 11.3.1).
 *
 * On RoCE there is no subnet manager to join: a group is its GID (an IPv6
 * multicast address, or an IPv4 one as ::ffff:224.x.y.z, annex A17.4.1.1),
 * and the guest's IGMP/MLD membership and the MAC filter are the
 * Ethernet side's business.  The device only needs to know which of its
 * UD QPs take the datagrams sent to a group.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-rdma.h"

bool vhca_gid_is_multicast(const uint8_t gid[VHCA_GID_LEN])
{
    static const uint8_t v4_prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
    };

    if (gid[0] == 0xff) {
        return true;
    }
    return !memcmp(gid, v4_prefix, sizeof(v4_prefix)) &&
           (gid[12] & 0xf0) == 0xe0;
}

/* The slot of group @gid, or -1 if none of our QPs joined it. */
static int vhca_mcast_index(const VhcaCore *core, const uint8_t *gid)
{
    unsigned i;

    for (i = 0; i < VHCA_MAX_MCAST_GROUPS; i++) {
        const VhcaMcastGroup *g = &core->mcast[i];

        if (g->nqps && !memcmp(g->gid, gid, VHCA_GID_LEN)) {
            return (int)i;
        }
    }
    return -1;
}

static VhcaMcastGroup *vhca_mcast_lookup(VhcaCore *core, const uint8_t *gid)
{
    int i = vhca_mcast_index(core, gid);

    return i < 0 ? NULL : &core->mcast[i];
}

const VhcaMcastGroup *vhca_mcast_find(const VhcaCore *core,
                                      const uint8_t gid[VHCA_GID_LEN])
{
    int i = vhca_mcast_index(core, gid);

    return i < 0 ? NULL : &core->mcast[i];
}

static int vhca_mcast_member(const VhcaMcastGroup *g, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < g->nqps; i++) {
        if (g->qpns[i] == qpn) {
            return (int)i;
        }
    }
    return -1;
}

static void vhca_mcast_remove(VhcaMcastGroup *g, int slot)
{
    /* Order does not matter: the last member takes the freed place. */
    g->qpns[slot] = g->qpns[g->nqps - 1];
    g->nqps--;
    if (!g->nqps) {
        memset(g, 0, sizeof(*g));
    }
}

/* The command's QP and GID, into *qpn and *gid, checked. */
static uint8_t vhca_mcast_check(VhcaCore *core, VhcaCmdCtx *ctx,
                                uint32_t *qpn, const uint8_t **gid)
{
    VhcaQp *qp;

    *qpn = vhca_ld_le32(ctx->in + offsetof(struct vhca_cmd_mcast_in, qpn));
    *gid = ctx->in + offsetof(struct vhca_cmd_mcast_in, gid);
    qp = vhca_qp_lookup(core, *qpn);
    if (!qp) {
        ctx->syndrome = *qpn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "QP %u does not exist", *qpn);
    }
    /* IBTA 10.5.2.1: only UD QPs join; QP1 never does. */
    if (qp->type != VHCA_QPT_UD) {
        ctx->syndrome = qp->type;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u is of type %u, not UD", *qpn, qp->type);
    }
    if (!vhca_gid_is_multicast(*gid)) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u: the GID is not a multicast address",
                             *qpn);
    }
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_attach_mcast(VhcaCore *core, VhcaCmdCtx *ctx)
{
    const uint8_t *gid;
    VhcaMcastGroup *g;
    uint32_t qpn;
    uint8_t status;
    unsigned i;

    status = vhca_mcast_check(core, ctx, &qpn, &gid);
    if (status != VHCA_ST_OK) {
        return status;
    }
    g = vhca_mcast_lookup(core, gid);
    if (!g) {
        for (i = 0; i < VHCA_MAX_MCAST_GROUPS && !g; i++) {
            if (!core->mcast[i].nqps) {
                g = &core->mcast[i];
            }
        }
        if (!g) {
            ctx->syndrome = VHCA_MAX_MCAST_GROUPS;
            return VHCA_CMD_FAIL(core, ctx, VHCA_ST_NO_RESOURCES,
                                 "QP %u: all %u multicast groups are in use",
                                 qpn, VHCA_MAX_MCAST_GROUPS);
        }
        memcpy(g->gid, gid, VHCA_GID_LEN);
    }
    /* Attaching again is not an error (ibv_attach_mcast is idempotent). */
    if (vhca_mcast_member(g, qpn) >= 0) {
        return VHCA_ST_OK;
    }
    if (g->nqps >= VHCA_MAX_MCAST_QPS) {
        ctx->syndrome = VHCA_MAX_MCAST_QPS;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_NO_RESOURCES,
                             "QP %u: the group has %u QPs already", qpn,
                             VHCA_MAX_MCAST_QPS);
    }
    g->qpns[g->nqps++] = qpn;
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_detach_mcast(VhcaCore *core, VhcaCmdCtx *ctx)
{
    const uint8_t *gid;
    VhcaMcastGroup *g;
    uint32_t qpn;
    uint8_t status;
    int slot;

    status = vhca_mcast_check(core, ctx, &qpn, &gid);
    if (status != VHCA_ST_OK) {
        return status;
    }
    g = vhca_mcast_lookup(core, gid);
    slot = g ? vhca_mcast_member(g, qpn) : -1;
    if (slot < 0) {
        ctx->syndrome = qpn;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "QP %u is not attached to the group", qpn);
    }
    vhca_mcast_remove(g, slot);
    return VHCA_ST_OK;
}

void vhca_mcast_qp_gone(VhcaCore *core, uint32_t qpn)
{
    unsigned i;

    for (i = 0; i < VHCA_MAX_MCAST_GROUPS; i++) {
        VhcaMcastGroup *g = &core->mcast[i];
        int slot = g->nqps ? vhca_mcast_member(g, qpn) : -1;

        if (slot >= 0) {
            vhca_mcast_remove(g, slot);
        }
    }
}

void vhca_mcast_reset(VhcaCore *core)
{
    memset(core->mcast, 0, sizeof(core->mcast));
}
