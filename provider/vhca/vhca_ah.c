// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: address handles for UD QPs.
 *
 * The device keeps no AH table: each UD send WQE carries its whole address
 * vector (struct vhca_ud_av).  An AH is that vector, built once here and
 * copied into the WQEs that name it (vhca_qp.c).  The kernel creates the
 * AH too: the RDMA core resolves the destination MAC through the
 * neighbour table and the driver returns it, as for mlx5 on RoCE.  On an
 * InfiniBand port the vector is the LRH's (DLID, SL, source path bits)
 * and the GRH only if the AH is global; there is no MAC to resolve.
 *
 * Fields wider than the wire's are masked as the kernel driver masks them
 * (flow label to 20 bits, SL to 4, path bits to 7), as mlx5 does; a DLID on RoCE is not
 * read (docs/developer-guide.rst, "Address vector fields").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vhca.h"
#include "vhca_abi.h"
#include "vhca_verbs.h"

/* An InfiniBand AV (IBTA 10.2.1): LID route, the GRH for a global AH. */
static void vhca_av_set_ib(struct vhca_ud_av *av,
			   const struct ibv_ah_attr *attr)
{
	av->dlid = htole16(attr->dlid);
	av->sl = attr->sl & 0xf;	/* 4 bits (IBTA 7.7.3), as the kernel */
	av->src_path_bits = attr->src_path_bits & 0x7f;
	if (!attr->is_global)
		return;
	av->ah_flags = VHCA_AH_GRH;
	memcpy(av->dgid, attr->grh.dgid.raw, sizeof(av->dgid));
	av->sgid_index = attr->grh.sgid_index;
	av->hop_limit = attr->grh.hop_limit;
	av->traffic_class = attr->grh.traffic_class;
	av->flow_label = htole32(attr->grh.flow_label & IB_GRH_FLOWLABEL_MASK);
}

struct ibv_ah *vhca_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct vhca_context *ctx = to_vhca_ctx(pd->context);
	struct vhca_cmd_create_ah_resp resp = {};
	const uint8_t no_mac[sizeof(resp.dmac)] = {};
	struct vhca_ah *ah;
	int ret;

	/* RoCE packets always carry a GRH or IP header (IBTA annex A16, A17). */
	if (!ctx->ib_port && !attr->is_global) {
		errno = EINVAL;
		return NULL;
	}

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_free;
	}

	/* The kernel checked the attributes as it made its own AH. */
	if (ctx->ib_port) {
		vhca_av_set_ib(&ah->av, attr);
		return &ah->ibv_ah;
	}

	/* A driver that does not fill the response leaves it zeroed. */
	if (!memcmp(resp.dmac, no_mac, sizeof(no_mac))) {
		verbs_err(&ctx->ibv_ctx,
			  "kernel returned no destination MAC for the AH\n");
		ibv_cmd_destroy_ah(&ah->ibv_ah);
		errno = EPROTO;
		goto err_free;
	}

	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	memcpy(ah->av.dmac, resp.dmac, sizeof(ah->av.dmac));
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.traffic_class = attr->grh.traffic_class;
	/* On a VLAN GID the SL is the 802.1Q priority of what is sent. */
	ah->av.eth_sl = attr->sl & 0xf;
	/* 0: the device derives the UDP source port from the flow. */
	ah->av.udp_sport = 0;
	ah->av.flow_label = htole32(attr->grh.flow_label &
				    IB_GRH_FLOWLABEL_MASK);
	return &ah->ibv_ah;

err_free:
	free(ah);
	return NULL;
}

int vhca_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;

	free(to_vhca_ah(ibah));
	return 0;
}
