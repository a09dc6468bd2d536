// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles (docs/specs/vhca.rst, "Queue pairs"): the device keeps no
 * AH table, so an AH is the address vector (IBTA 10.2.1; annex A17.4.2 for
 * RoCEv2) that vhca_wr.c copies into every UD send WQE.  Creating one
 * issues no command and never sleeps: the CM creates AHs under a spinlock
 * (rdma_create_ah() without RDMA_CREATE_AH_SLEEPABLE).
 *
 * The RDMA core resolves the destination MAC before create_ah: for kernel
 * AHs the caller did (ib_init_ah_attr_from_wc(), the CM's path), for user
 * AHs rdma_create_user_ah() did with ib_resolve_eth_dmac().  The driver
 * returns it to the provider, which builds its own WQEs, as mlx5 does.
 * On an InfiniBand port the vector is the LRH's DLID, SL and source path
 * bits, and the GRH only if the AH has one; there is no MAC.
 */

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

/*
 * The GRH flow label is 20 bits (IBTA 8.3.1).  Wider values are masked, not
 * refused: UCX passes 0xffffffff, mlx5 keeps the low 20 bits and rxe does
 * not look (docs/developer-guide.rst, "Address vector fields").
 */
#define VHCA_FLOW_LABEL_MASK	IB_GRH_FLOWLABEL_MASK

/*
 * The SL is 4 bits (IBTA 7.7.3, LRH); mlx5 keeps the low bits of a wider
 * value (on RoCE its 3-bit priority), rxe ignores it on RoCE: mask it too.
 */
#define VHCA_SL_MASK		0xf

/* An InfiniBand AV (IBTA 10.2.1): LID route, the GRH when it has one. */
static int vhcad_ah_set_ib_av(struct vhca_ud_av *av,
			      const struct rdma_ah_attr *ah_attr)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah_attr);
	bool global = rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_IB ||
	    rdma_ah_get_port_num(ah_attr) != VHCA_PORT_NUM ||
	    rdma_ah_get_dlid(ah_attr) > U16_MAX)
		return -EINVAL;
	if (global && grh->sgid_index >= VHCA_IB_GUID_TBL_LEN)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->dlid = cpu_to_le16(rdma_ah_get_dlid(ah_attr));
	av->sl = rdma_ah_get_sl(ah_attr) & VHCA_SL_MASK;
	/* The LMC's at most 7 path bits (IBTA 7.11.1), masked as by mlx5. */
	av->src_path_bits = rdma_ah_get_path_bits(ah_attr) &
			    (BIT(VHCA_IB_MAX_LMC) - 1);
	if (!global)
		return 0;
	av->ah_flags = VHCA_AH_GRH;
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = cpu_to_le32(grh->flow_label & VHCA_FLOW_LABEL_MASK);
	return 0;
}

static int vhcad_ah_set_av(struct vhca_dev *dev, struct vhca_ud_av *av,
			   const struct rdma_ah_attr *ah_attr)
{
	const struct ib_global_route *grh;
	u32 flow_label;
	u16 sport = 0;

	/*
	 * RoCE has no LIDs: every packet carries the GRH (annex A17.4.2).
	 * A DLID the consumer passes (UCX: 0xc000) never reaches here: a
	 * RoCE rdma_ah_attr has no DLID, uverbs and the CM drop it.
	 */
	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH))
		return -EINVAL;
	if (rdma_ah_get_port_num(ah_attr) != VHCA_PORT_NUM)
		return -EINVAL;

	grh = rdma_ah_read_grh(ah_attr);
	/* RoCEv2 only: the GID table holds no RoCEv1 or IB GIDs. */
	if (!grh->sgid_attr ||
	    grh->sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	if (grh->sgid_index >= dev->attr.gid_tbl_len ||
	    grh->sgid_index > U8_MAX)
		return -EINVAL;
	flow_label = grh->flow_label & VHCA_FLOW_LABEL_MASK;

	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	/* All-zero if nothing resolved it: sent as is, never dereferenced. */
	memcpy(av->dmac, ah_attr->roce.dmac, sizeof(av->dmac));
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = cpu_to_le32(flow_label);
	/* On a VLAN GID the SL is the 802.1Q priority of what is sent. */
	av->eth_sl = rdma_ah_get_sl(ah_attr) & VHCA_SL_MASK;
	/*
	 * A flow label picks the UDP source port as every RoCEv2 device
	 * does (rdma_flow_label_to_udp_sport()); without one the device
	 * derives it from the QP.
	 */
	if (flow_label)
		sport = rdma_flow_label_to_udp_sport(flow_label);
	av->udp_sport = cpu_to_le16(sport);
	return 0;
}

int vhcad_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibah->device);
	struct vhca_ah *ah = to_vhca_ah(ibah);
	struct vhca_create_ah_resp resp = {};
	int err;

	/* No request is defined; refuse input we would silently ignore. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	if (vhcad_is_ib(dev))
		err = vhcad_ah_set_ib_av(&ah->av, init_attr->ah_attr);
	else
		err = vhcad_ah_set_av(dev, &ah->av, init_attr->ah_attr);
	if (err)
		return err;

	if (udata) {
		/* An InfiniBand port has no MACs: the response stays zero. */
		if (!vhcad_is_ib(dev))
			memcpy(resp.dmac, ah->av.dmac, sizeof(resp.dmac));
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			return err;
	}
	return 0;
}

int vhcad_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	/* Nothing of it lives in the device; the core frees the memory. */
	return 0;
}

void vhcad_roce_ah_attr(struct rdma_ah_attr *ah_attr, const u8 *dgid,
			const u8 *dmac, u32 flow_label, u8 sgid_index,
			u8 hop_limit, u8 traffic_class)
{
	union ib_gid gid;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah_attr, VHCA_PORT_NUM);
	memcpy(gid.raw, dgid, sizeof(gid.raw));
	rdma_ah_set_grh(ah_attr, &gid, flow_label, sgid_index, hop_limit,
			traffic_class);
	memcpy(ah_attr->roce.dmac, dmac, ETH_ALEN);
}

/* The InfiniBand rdma_ah_attr of an AV (query_ah, query_qp). */
void vhcad_ib_ah_attr(struct rdma_ah_attr *ah_attr, const struct vhca_ud_av *av)
{
	union ib_gid gid;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(ah_attr, VHCA_PORT_NUM);
	rdma_ah_set_dlid(ah_attr, le16_to_cpu(av->dlid));
	rdma_ah_set_sl(ah_attr, av->sl);
	rdma_ah_set_path_bits(ah_attr, av->src_path_bits);
	if (!(av->ah_flags & VHCA_AH_GRH))
		return;
	memcpy(gid.raw, av->dgid, sizeof(gid.raw));
	rdma_ah_set_grh(ah_attr, &gid, le32_to_cpu(av->flow_label),
			av->sgid_index, av->hop_limit, av->traffic_class);
}

int vhcad_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr)
{
	const struct vhca_ud_av *av = &to_vhca_ah(ibah)->av;

	if (vhcad_is_ib(to_vhca_dev(ibah->device))) {
		vhcad_ib_ah_attr(ah_attr, av);
		return 0;
	}
	vhcad_roce_ah_attr(ah_attr, av->dgid, av->dmac,
			   le32_to_cpu(av->flow_label), av->sgid_index,
			   av->hop_limit, av->traffic_class);
	rdma_ah_set_sl(ah_attr, av->eth_sl);
	return 0;
}
