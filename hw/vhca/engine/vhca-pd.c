/*
 * vhca engine: protection domains (docs/specs/vhca.rst, "RDMA resources";
 * IBTA 10.6.3.2).  A PD is only a name that MRs and QPs share: an access
 * through an MR is allowed only for a QP of the same PD.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-rdma.h"

uint8_t vhca_cmd_create_pd(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t pdn = vhca_ids_alloc(&core->pd_ids);

    if (!pdn) {
        /* Running out is not a guest mistake: no guest error report. */
        return VHCA_ST_NO_RESOURCES;
    }
    memset(&core->pds[pdn], 0, sizeof(core->pds[pdn]));
    vhca_cmd_set_handle_out(ctx, pdn, 0);
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_destroy_pd(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint32_t pdn = vhca_cmd_handle_in(ctx);
    VhcaPd *pd = vhca_pd_lookup(core, pdn);

    ctx->syndrome = pdn;
    if (!pd) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_INDEX,
                             "PD %u does not exist", pdn);
    }
    if (pd->users) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BUSY,
                             "PD %u still has %u MRs and QPs", pdn,
                             pd->users);
    }
    vhca_ids_free(&core->pd_ids, pdn);
    ctx->syndrome = 0;
    return VHCA_ST_OK;
}
