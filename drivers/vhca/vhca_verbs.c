// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Device and port queries and the RoCE GID table.  The limits reported are
 * the device's own (QUERY_DEVICE); without an RDMA engine with resources
 * they are 0, and the driver claims nothing the device cannot do: no QP1,
 * so no MAD layer, CM or rdma_cm on the port.
 */

#include <linux/if_vlan.h>
#include <linux/limits.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "vhca.h"
#include "vhca_verbs.h"

/* ib_device_attr counts are int: keep a hostile u32 from turning negative. */
static int vhcad_limit(u32 value)
{
	return min_t(u32, value, INT_MAX);
}

int vhcad_query_device(struct ib_device *ibdev, struct ib_device_attr *props,
		       struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	const struct vhca_dev_attr *attr = &dev->attr;

	/* No driver-specific input is defined; refuse what we don't know. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	memset(props, 0, sizeof(*props));
	props->fw_ver = attr->fw_version;
	props->sys_image_guid = cpu_to_be64(attr->sys_image_guid);
	props->max_mr_size = attr->max_mr_size;
	props->page_size_cap = attr->page_size_cap;
	props->vendor_id = attr->vendor_id;
	props->vendor_part_id = attr->vendor_part_id;
	props->hw_ver = attr->hw_ver;
	props->max_qp = vhcad_limit(attr->max_qp);
	props->max_qp_wr = vhcad_limit(attr->max_qp_wr);
	props->max_send_sge = vhcad_limit(attr->max_sge);
	/* A receive WQE holds fewer SGEs; the device reports them here. */
	props->max_recv_sge = vhcad_limit(attr->max_srq_sge);
	props->max_cq = vhcad_limit(attr->max_cq);
	props->max_cqe = vhcad_limit(attr->max_cqe);
	props->max_mr = vhcad_limit(attr->max_mr);
	props->max_pd = vhcad_limit(attr->max_pd);
	props->max_qp_rd_atom = vhcad_limit(attr->max_qp_rd_atom);
	props->max_qp_init_rd_atom = vhcad_limit(attr->max_qp_init_rd_atom);
	props->max_srq = vhcad_limit(attr->max_srq);
	props->max_srq_wr = vhcad_limit(attr->max_srq_wr);
	props->max_srq_sge = vhcad_limit(attr->max_srq_sge);
	props->max_pkeys = min_t(u32, attr->max_pkeys, U16_MAX);
	/*
	 * The device executes atomics by DMA: atomic against other atomics
	 * through the HCA, not against the CPUs (IBTA 10.2.1.1 ATOMIC_HCA).
	 */
	props->atomic_cap = attr->max_qp ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	props->masked_atomic_cap = IB_ATOMIC_NONE;
	if (!dev->has_rdma)
		return 0;

	/*
	 * A READ scatters its response over the WQE's SGEs like any other
	 * WQE; the kernel's RDMA R/W API divides by this.
	 */
	props->max_sge_rd = props->max_send_sge;
	/* AHs live in the driver and the provider only (vhca_ah.c). */
	props->max_ah = INT_MAX;
	props->max_mcast_grp = VHCA_MAX_MCAST_GROUPS;
	props->max_mcast_qp_attach = VHCA_MAX_MCAST_QPS;
	props->max_total_mcast_qp_attach = VHCA_MAX_MCAST_GROUPS *
					   VHCA_MAX_MCAST_QPS;
	/*
	 * The device counts Q_Key and P_Key violations (IBTA 16.1.3.5), and
	 * has fast registration and invalidation (IBTA 10.6.3.2, 10.6.5):
	 * IB_WR_REG_MR, IB_WR_LOCAL_INV, SEND with Invalidate.
	 */
	props->device_cap_flags = IB_DEVICE_BAD_PKEY_CNTR |
				  IB_DEVICE_BAD_QKEY_CNTR |
				  IB_DEVICE_MEM_MGT_EXTENSIONS;
	props->max_fast_reg_page_list_len = VHCA_FAST_REG_MAX_PAGES;
	/*
	 * IBTA 1.5 memory placement extensions, as far as the device
	 * executes them: the core then lets MRs and QPs ask for FLUSH of
	 * the global visibility type (ib_check_mr_access()).
	 */
	if (attr->cap_flags & VHCA_DEV_CAP_FLUSH_GLOBAL)
		props->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL;
	if (attr->cap_flags & VHCA_DEV_CAP_ATOMIC_WRITE)
		props->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
	/* MODIFY_SRQ moves an SRQ to a ring of another size (IBTA 11.2.3). */
	if (attr->max_srq)
		props->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
	/*
	 * Memory windows of type 1 and 2B (IBTA 10.6.7), as rxe; not 2A,
	 * which would let any QP of the PD use a type 2 window.
	 */
	if (attr->max_mw) {
		props->max_mw = vhcad_limit(attr->max_mw);
		props->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
					   IB_DEVICE_MEM_WINDOW_TYPE_2B;
	}
	/* XRC domains, XRC SRQs and XRC QPs (annex A14). */
	if (attr->max_srq && attr->max_xrcd)
		props->device_cap_flags |= IB_DEVICE_XRC;
	return 0;
}

/* IBTA encodings the port attributes must use (MTU 1..5, state 1..4). */
static bool vhcad_port_attr_valid(const struct vhca_port_attr *pa)
{
	return pa->state >= VHCA_PORT_DOWN && pa->state <= VHCA_PORT_ACTIVE &&
	       pa->max_mtu >= VHCA_IB_MTU_256 &&
	       pa->max_mtu <= VHCA_IB_MTU_4096 &&
	       pa->active_mtu >= VHCA_IB_MTU_256 &&
	       pa->active_mtu <= pa->max_mtu;
}

int vhcad_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *props)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	struct vhca_port_attr pa;
	int err;

	err = vhcad_cmd_query_port(dev, &pa);
	if (err)
		return err;

	if (!vhcad_port_attr_valid(&pa)) {
		dev_err_ratelimited(&dev->pdev->dev,
				    "QUERY_PORT returned invalid state %u or MTU %u/%u\n",
				    pa.state, pa.active_mtu, pa.max_mtu);
		return -EIO;
	}

	/* The core zeroed props: no LID, SM or VLs on a RoCE port. */
	props->state = pa.state;
	props->phys_state = pa.phys_state;
	props->max_mtu = pa.max_mtu;
	props->active_mtu = pa.active_mtu;
	props->active_speed = pa.active_speed;
	props->active_width = pa.active_width;
	props->gid_tbl_len = le16_to_cpu(pa.gid_tbl_len);
	props->pkey_tbl_len = 1;
	/* Ethernet carries one lane of traffic: VL0 only (VLCap 1). */
	props->max_vl_num = 1;
	props->max_msg_sz = dev->attr.max_msg_size;
	/* RoCEv2 GIDs are IP addresses (IBTA Annex A17). */
	props->ip_gids = true;
	/*
	 * Without QPs there is no QP1, so no CM or management class can be
	 * served: port_cap_flags stays 0.
	 */
	if (!dev->has_rdma)
		return 0;

	/* The kernel CM answers on QP1 (PortInfo:CapabilityMask.IsCMSupported). */
	props->port_cap_flags = IB_PORT_CM_SUP;
	/* 16-bit saturating counters (PortInfo Q_Key/P_Key violations). */
	props->qkey_viol_cntr = min_t(u64, U16_MAX,
				      vhcad_read_counter(dev, VHCA_CNT_DROP_QKEY));
	props->bad_pkey_cntr = min_t(u64, U16_MAX,
				     vhcad_read_counter(dev, VHCA_CNT_DROP_PKEY));
	return 0;
}

int vhcad_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);

	/*
	 * With QPs the port has QP1: the MAD layer opens it, and the CM and
	 * rdma_cm (including AF_IB) run over it, as on rxe and mlx5.
	 * Without, RoCEv2 only, and no MADs: max_mad_size stays 0.
	 */
	if (dev->has_rdma) {
		immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
		immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	} else {
		immutable->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP;
	}
	immutable->gid_tbl_len = min_t(u32, dev->attr.gid_tbl_len, INT_MAX);
	immutable->pkey_tbl_len = 1;
	return 0;
}

enum rdma_link_layer vhcad_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/* RoCE has no partitions: one entry, the default full-member P_Key. */
int vhcad_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index > 0)
		return -EINVAL;

	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

int vhcad_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vhca_dev *dev = to_vhca_dev(attr->device);
	u16 vlan_id = 0xffff;
	u16 vlan = 0;
	int err;
	u8 type;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	/*
	 * A GID of a VLAN interface above our netdev: the device tags what
	 * it sends from this entry and takes only that VLAN's frames for it.
	 */
	err = rdma_read_gid_l2_fields(attr, &vlan_id, NULL);
	if (err)
		return err;
	if (vlan_id < VLAN_N_VID)
		vlan = VHCA_GID_VLAN_TAGGED | vlan_id;

	/* An IPv4 address is the RoCEv2 GID ::ffff:a.b.c.d. */
	if (ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw))
		type = VHCA_GID_TYPE_ROCE_V2_IPV4;
	else
		type = VHCA_GID_TYPE_ROCE_V2_IPV6;

	return vhcad_cmd_add_gid(dev, attr->index, type, vlan, attr->gid.raw);
}

int vhcad_del_gid(const struct ib_gid_attr *attr, void **context)
{
	return vhcad_cmd_del_gid(to_vhca_dev(attr->device), attr->index);
}

void vhcad_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	vhcad_fw_version_str(to_vhca_dev(ibdev), str, IB_FW_VERSION_NAME_MAX);
}
