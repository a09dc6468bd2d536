// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The InfiniBand port's verbs (VHCA_CAP_IB).  What the port is, the
 * subnet manager sets in the device's SMA (IBTA 14.2.5); query_port,
 * query_pkey and query_gid read it back with SMPs (vhcad_smp()), as
 * mlx4 reads its firmware's.  The GID table is one entry, GIDPrefix and
 * the port GUID (GUIDCap 1): the RDMA core's GID cache reads it with
 * query_gid, there being no add_gid on this port.  modify_port changes
 * what PortInfo leaves to the node (CapabilityMask bits such as IsSM and
 * IsCM, the Q_Key violation counter), modify_device the NodeDescription.
 */

#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "vhca.h"
#include "vhca_verbs.h"

/* PortInfo of our port. */
static int vhcad_port_info(struct vhca_dev *dev, union vhca_smp_data *data)
{
	return vhcad_smp(dev, IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO,
			 VHCA_PORT_NUM, data);
}

/* The logical port state (enum ib_port_state), or a negative errno. */
int vhcad_ib_port_state(struct vhca_dev *dev)
{
	union vhca_smp_data data;
	int err;

	err = vhcad_port_info(dev, &data);
	if (err)
		return err;
	return data.port_info.linkspeed_portstate & 0xf;
}

int vhcad_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *props)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	const struct ib_port_info *pi;
	union vhca_smp_data data;
	u8 state;
	int err;

	err = vhcad_port_info(dev, &data);
	if (err)
		return err;

	pi = &data.port_info;
	state = pi->linkspeed_portstate & 0xf;
	if (state < IB_PORT_DOWN || state > IB_PORT_ACTIVE) {
		dev_err_ratelimited(&dev->pdev->dev,
				    "PortInfo has invalid PortState %u\n", state);
		return -EIO;
	}

	/* The core zeroed props.  The fields' places: IBTA 14.2.5.6. */
	props->state = state;
	props->phys_state = pi->portphysstate_linkdown >> 4;
	props->lid = be16_to_cpu(pi->lid);
	props->lmc = pi->mkeyprot_resv_lmc & 0x7;
	props->sm_lid = be16_to_cpu(pi->sm_lid);
	props->sm_sl = pi->neighbormtu_mastersmsl & 0xf;
	props->subnet_prefix = be64_to_cpu(pi->gid_prefix);
	props->port_cap_flags = be32_to_cpu(pi->cap_mask);
	props->max_mtu = pi->inittypereply_mtucap & 0xf;
	props->active_mtu = pi->neighbormtu_mastersmsl >> 4;
	props->init_type_reply = pi->inittypereply_mtucap >> 4;
	props->subnet_timeout = pi->clientrereg_resv_subnetto & 0x1f;
	props->active_width = pi->link_width_active;
	props->active_speed = pi->linkspeedactive_enabled >> 4;
	/* VLCap's code, as mlx4 reports it (1: VL0, 2: VL0-1, ...). */
	props->max_vl_num = pi->vlcap_inittype >> 4;
	props->bad_pkey_cntr = be16_to_cpu(pi->pkey_violations);
	props->qkey_viol_cntr = be16_to_cpu(pi->qkey_violations);
	props->max_msg_sz = dev->attr.max_msg_size;
	props->gid_tbl_len = VHCA_IB_GUID_TBL_LEN;
	props->pkey_tbl_len = VHCA_IB_PKEY_TBL_LEN;
	return 0;
}

int vhcad_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			u16 *pkey)
{
	union vhca_smp_data data;
	int err;

	if (index >= VHCA_IB_PKEY_TBL_LEN)
		return -EINVAL;

	err = vhcad_smp(to_vhca_dev(ibdev), IB_MGMT_METHOD_GET,
			IB_SMP_ATTR_PKEY_TABLE, index / VHCA_SMP_PKEYS_PER_BLOCK,
			&data);
	if (err)
		return err;
	*pkey = be16_to_cpu(data.pkeys[index % VHCA_SMP_PKEYS_PER_BLOCK]);
	return 0;
}

/* GID @index: PortInfo's GIDPrefix, then entry @index of GUIDInfo. */
int vhcad_ib_query_gid(struct ib_device *ibdev, u32 port, int index,
		       union ib_gid *gid)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	union vhca_smp_data data;
	int err;

	if (index < 0 || index >= VHCA_IB_GUID_TBL_LEN)
		return -EINVAL;

	err = vhcad_port_info(dev, &data);
	if (err)
		return err;
	gid->global.subnet_prefix = data.port_info.gid_prefix;

	err = vhcad_smp(dev, IB_MGMT_METHOD_GET, IB_SMP_ATTR_GUID_INFO,
			index / VHCA_SMP_GUIDS_PER_BLOCK, &data);
	if (err)
		return err;
	gid->global.interface_id = data.guids[index % VHCA_SMP_GUIDS_PER_BLOCK];
	return 0;
}

/*
 * CapabilityMask bits the node may change (the device applies the clear
 * bits, then the set ones; others are ignored, as on mlx4), and the
 * Q_Key violation counter reset.  Neither shutting the port down nor
 * InitType is offered.
 */
int vhcad_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			 struct ib_port_modify *props)
{
	u8 flags = 0;

	if (mask & ~IB_PORT_RESET_QKEY_CNTR)
		return -EOPNOTSUPP;
	if (mask & IB_PORT_RESET_QKEY_CNTR)
		flags |= VHCA_MODIFY_PORT_RESET_QKEY_CNTR;

	return vhcad_cmd_modify_port(to_vhca_dev(ibdev), flags,
				     props->set_port_cap_mask &
				     VHCA_PORT_CAP_MODIFIABLE,
				     props->clr_port_cap_mask &
				     VHCA_PORT_CAP_MODIFIABLE);
}

/*
 * NodeDescription (IBTA 14.2.5.2): the SMA answers the subnet with it,
 * sysfs shows ibdev->node_desc; a local Set changes both, in order.
 */
int vhcad_ib_modify_device(struct ib_device *ibdev, int mask,
			   struct ib_device_modify *props)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	union vhca_smp_data data = {};
	int err;

	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	if (!(mask & IB_DEVICE_MODIFY_NODE_DESC))
		return 0;

	memcpy(data.node_desc, props->node_desc, sizeof(data.node_desc));
	mutex_lock(&dev->node_desc_lock);
	err = vhcad_smp(dev, IB_MGMT_METHOD_SET, IB_SMP_ATTR_NODE_DESC, 0,
			&data);
	if (!err)
		memcpy(ibdev->node_desc, props->node_desc,
		       sizeof(ibdev->node_desc));
	mutex_unlock(&dev->node_desc_lock);
	return err;
}

/* At registration: the NodeDescription the device starts with. */
int vhcad_ib_read_node_desc(struct vhca_dev *dev)
{
	union vhca_smp_data data;
	int err;

	err = vhcad_smp(dev, IB_MGMT_METHOD_GET, IB_SMP_ATTR_NODE_DESC, 0,
			&data);
	if (err)
		return err;

	mutex_lock(&dev->node_desc_lock);
	memcpy(dev->ibdev.node_desc, data.node_desc,
	       sizeof(dev->ibdev.node_desc));
	mutex_unlock(&dev->node_desc_lock);
	return 0;
}

/*
 * With QPs the port has QP0 and QP1: the MAD layer opens both, and
 * the SA, CM and multicast clients run over them.  Without, no MADs.
 */
int vhcad_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *immutable)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);

	if (dev->has_rdma) {
		immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
		immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	} else {
		immutable->core_cap_flags = RDMA_CORE_CAP_PROT_IB;
	}
	immutable->gid_tbl_len = VHCA_IB_GUID_TBL_LEN;
	immutable->pkey_tbl_len = VHCA_IB_PKEY_TBL_LEN;
	return 0;
}

enum rdma_link_layer vhcad_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port)
{
	return IB_LINK_LAYER_INFINIBAND;
}
