// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Typed admin commands (docs/specs/vhca.rst, "Commands"): build each
 * command's input, run it on the admin queue and hand back its output:
 * handles and QUERY_DEVICE's answer in CPU byte order, the QUERY_PORT and
 * QUERY_QP structures as the device wrote them.
 */

#include "vhca.h"

int vhcad_cmd_query_device(struct vhca_dev *dev, struct vhca_dev_attr *attr)
{
	struct vhca_device_attr da;
	int err;

	err = vhcad_admin_exec_dma(dev, VHCA_CMD_QUERY_DEVICE, &da, sizeof(da));
	if (err)
		return err;

	attr->fw_version = le64_to_cpu(da.fw_version);
	attr->sys_image_guid = le64_to_cpu(da.sys_image_guid);
	attr->node_guid = le64_to_cpu(da.node_guid);
	attr->max_mr_size = le64_to_cpu(da.max_mr_size);
	attr->page_size_cap = le64_to_cpu(da.page_size_cap);
	attr->vendor_id = le32_to_cpu(da.vendor_id);
	attr->vendor_part_id = le32_to_cpu(da.vendor_part_id);
	attr->hw_ver = le32_to_cpu(da.hw_ver);
	attr->max_qp = le32_to_cpu(da.max_qp);
	attr->max_qp_wr = le32_to_cpu(da.max_qp_wr);
	attr->max_sge = le32_to_cpu(da.max_sge);
	attr->max_cq = le32_to_cpu(da.max_cq);
	attr->max_cqe = le32_to_cpu(da.max_cqe);
	attr->max_mr = le32_to_cpu(da.max_mr);
	attr->max_pd = le32_to_cpu(da.max_pd);
	attr->max_qp_rd_atom = le32_to_cpu(da.max_qp_rd_atom);
	attr->max_qp_init_rd_atom = le32_to_cpu(da.max_qp_init_rd_atom);
	attr->max_srq = le32_to_cpu(da.max_srq);
	attr->max_srq_wr = le32_to_cpu(da.max_srq_wr);
	attr->max_srq_sge = le32_to_cpu(da.max_srq_sge);
	attr->max_xrcd = le32_to_cpu(da.max_xrcd);
	attr->max_msg_size = le32_to_cpu(da.max_msg_size);
	attr->max_inline_data = le32_to_cpu(da.max_inline_data);
	attr->max_uctx = le32_to_cpu(da.max_uctx);
	attr->num_comp_vectors = le32_to_cpu(da.num_comp_vectors);
	attr->gid_tbl_len = le32_to_cpu(da.gid_tbl_len);
	attr->max_pkeys = le32_to_cpu(da.max_pkeys);
	attr->cap_flags = le32_to_cpu(da.cap_flags);
	attr->max_mw = le32_to_cpu(da.max_mw);
	return 0;
}

/* Returns the port's attributes in device byte order. */
int vhcad_cmd_query_port(struct vhca_dev *dev, struct vhca_port_attr *attr)
{
	struct vhca_cmd_port_in in = { .port = VHCA_PORT_NUM };

	return vhcad_admin_exec(dev, VHCA_CMD_QUERY_PORT, &in, sizeof(in), attr,
				sizeof(*attr));
}

int vhcad_cmd_add_gid(struct vhca_dev *dev, u16 index, u8 type, u16 vlan,
		      const u8 gid[16])
{
	struct vhca_cmd_gid_in in = {
		.index = cpu_to_le16(index),
		.port = VHCA_PORT_NUM,
		.type = type,
		.vlan = cpu_to_le16(vlan),
	};

	memcpy(in.gid, gid, sizeof(in.gid));
	return vhcad_admin_exec(dev, VHCA_CMD_ADD_GID, &in, sizeof(in),
				NULL, 0);
}

int vhcad_cmd_del_gid(struct vhca_dev *dev, u16 index)
{
	struct vhca_cmd_gid_in in = {
		.index = cpu_to_le16(index),
		.port = VHCA_PORT_NUM,
	};

	return vhcad_admin_exec(dev, VHCA_CMD_DEL_GID, &in, sizeof(in),
				NULL, 0);
}

int vhcad_cmd_set_mac(struct vhca_dev *dev, const u8 *mac)
{
	struct vhca_cmd_mac_in in = {};

	memcpy(in.mac, mac, ETH_ALEN);
	return vhcad_admin_exec(dev, VHCA_CMD_SET_MAC, &in, sizeof(in),
				NULL, 0);
}

int vhcad_cmd_set_mtu(struct vhca_dev *dev, u32 mtu)
{
	struct vhca_cmd_mtu_in in = { .mtu = cpu_to_le32(mtu) };

	return vhcad_admin_exec(dev, VHCA_CMD_SET_MTU, &in, sizeof(in),
				NULL, 0);
}

/* @filter in device byte order; it replaces the device's whole list. */
int vhcad_cmd_set_rx_filter(struct vhca_dev *dev,
			    struct vhca_rx_filter *filter)
{
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_SET_RX_FILTER, filter,
				     sizeof(*filter), NULL, 0);
}

int vhcad_cmd_alloc_uctx(struct vhca_dev *dev, u32 *db_page)
{
	struct vhca_cmd_uctx_out out;
	int err;

	err = vhcad_admin_exec(dev, VHCA_CMD_ALLOC_UCTX, NULL, 0, &out,
			       sizeof(out));
	if (err)
		return err;

	*db_page = le32_to_cpu(out.db_page);
	return 0;
}

int vhcad_cmd_dealloc_uctx(struct vhca_dev *dev, u32 db_page)
{
	struct vhca_cmd_uctx_in in = { .db_page = cpu_to_le32(db_page) };

	return vhcad_admin_exec(dev, VHCA_CMD_DEALLOC_UCTX, &in, sizeof(in),
				NULL, 0);
}

/*
 * RDMA resources (docs/specs/vhca.rst, "RDMA resources").  The CREATE
 * commands take their structure in device byte order, as the caller built
 * it, and return the new object's handle in CPU order.
 */
static int vhcad_cmd_create(struct vhca_dev *dev, u16 opcode, void *mbox,
			    size_t len, u32 *handle, u32 *key)
{
	struct vhca_cmd_obj_out out;
	int err;

	err = vhcad_admin_exec_mbox(dev, opcode, mbox, len, &out, sizeof(out));
	if (err)
		return err;

	*handle = le32_to_cpu(out.handle);
	if (key)
		*key = le32_to_cpu(out.key);
	return 0;
}

/*
 * DESTROY_PD, _MR (by key), _EQ, _CQ, _QP, _SRQ and DEALLOC_MW (by key)
 * all name just the object.
 */
int vhcad_cmd_destroy(struct vhca_dev *dev, u16 opcode, u32 handle)
{
	struct vhca_cmd_obj_in in = { .handle = cpu_to_le32(handle) };

	return vhcad_admin_exec(dev, opcode, &in, sizeof(in), NULL, 0);
}

/* A command with no input that answers with a handle: PD, XRC domain. */
static int vhcad_cmd_alloc_handle(struct vhca_dev *dev, u16 opcode,
				  u32 *handle)
{
	struct vhca_cmd_obj_out out;
	int err;

	err = vhcad_admin_exec(dev, opcode, NULL, 0, &out, sizeof(out));
	if (err)
		return err;

	*handle = le32_to_cpu(out.handle);
	return 0;
}

int vhcad_cmd_create_pd(struct vhca_dev *dev, u32 *pdn)
{
	return vhcad_cmd_alloc_handle(dev, VHCA_CMD_CREATE_PD, pdn);
}

int vhcad_cmd_alloc_xrcd(struct vhca_dev *dev, u32 *xrcdn)
{
	return vhcad_cmd_alloc_handle(dev, VHCA_CMD_ALLOC_XRCD, xrcdn);
}

int vhcad_cmd_create_mr(struct vhca_dev *dev, struct vhca_mr_create *mr,
			u32 *key)
{
	u32 index;

	return vhcad_cmd_create(dev, VHCA_CMD_CREATE_MR, mr, sizeof(*mr),
				&index, key);
}

/* ALLOC_MW: its input inline, out.key the window's first key. */
int vhcad_cmd_alloc_mw(struct vhca_dev *dev, u32 pdn, u8 type, u32 key_tag,
		       u32 *key)
{
	struct vhca_cmd_mw_in in = {
		.pdn = cpu_to_le32(pdn),
		.type = type,
		.key_tag = cpu_to_le32(key_tag),
	};
	struct vhca_cmd_obj_out out;
	int err;

	err = vhcad_admin_exec(dev, VHCA_CMD_ALLOC_MW, &in, sizeof(in), &out,
			       sizeof(out));
	if (err)
		return err;

	*key = le32_to_cpu(out.key);
	return 0;
}

int vhcad_cmd_create_eq(struct vhca_dev *dev, struct vhca_eq_create *eq,
			u32 *eqn)
{
	return vhcad_cmd_create(dev, VHCA_CMD_CREATE_EQ, eq, sizeof(*eq), eqn,
				NULL);
}

int vhcad_cmd_create_cq(struct vhca_dev *dev, struct vhca_cq_create *cq,
			u32 *cqn)
{
	return vhcad_cmd_create(dev, VHCA_CMD_CREATE_CQ, cq, sizeof(*cq), cqn,
				NULL);
}

/* RESIZE_CQ answers like a CREATE: out.handle is the CQEs it moved. */
int vhcad_cmd_resize_cq(struct vhca_dev *dev, struct vhca_cq_resize *resize,
			u32 *moved)
{
	return vhcad_cmd_create(dev, VHCA_CMD_RESIZE_CQ, resize,
				sizeof(*resize), moved, NULL);
}

int vhcad_cmd_create_qp(struct vhca_dev *dev, struct vhca_qp_create *qp,
			u32 *qpn)
{
	return vhcad_cmd_create(dev, VHCA_CMD_CREATE_QP, qp, sizeof(*qp), qpn,
				NULL);
}

int vhcad_cmd_modify_qp(struct vhca_dev *dev, struct vhca_qp_attr *attr)
{
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_MODIFY_QP, attr,
				     sizeof(*attr), NULL, 0);
}

/* Returns the QP's attributes in device byte order. */
int vhcad_cmd_query_qp(struct vhca_dev *dev, u32 qpn,
		       struct vhca_qp_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->qpn = cpu_to_le32(qpn);
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_QUERY_QP, attr,
				     sizeof(*attr), NULL, 0);
}

int vhcad_cmd_create_srq(struct vhca_dev *dev, struct vhca_srq_create *srq,
			 u32 *srqn)
{
	return vhcad_cmd_create(dev, VHCA_CMD_CREATE_SRQ, srq, sizeof(*srq),
				srqn, NULL);
}

int vhcad_cmd_modify_srq(struct vhca_dev *dev, struct vhca_srq_attr *attr)
{
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_MODIFY_SRQ, attr,
				     sizeof(*attr), NULL, 0);
}

/* Returns the SRQ's attributes in device byte order. */
int vhcad_cmd_query_srq(struct vhca_dev *dev, u32 srqn,
			struct vhca_srq_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->srqn = cpu_to_le32(srqn);
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_QUERY_SRQ, attr,
				     sizeof(*attr), NULL, 0);
}

/* ATTACH_MCAST / DETACH_MCAST: inline input, no mailbox. */
int vhcad_cmd_mcast(struct vhca_dev *dev, u16 opcode, u32 qpn,
		    const u8 gid[16])
{
	struct vhca_cmd_mcast_in in = { .qpn = cpu_to_le32(qpn) };

	memcpy(in.gid, gid, sizeof(in.gid));
	return vhcad_admin_exec(dev, opcode, &in, sizeof(in), NULL, 0);
}

/*
 * MAD_IFC (IB port): @mad in device byte order, its in_mad and header
 * filled; on success out_mad holds the agent's response and @result the
 * VHCA_MAD_RESULT_* bits (0: the device does not handle this MAD).
 */
int vhcad_cmd_mad_ifc(struct vhca_dev *dev, struct vhca_mad_ifc *mad,
		      u8 *result)
{
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_MAD_IFC, mad, sizeof(*mad),
				     result, sizeof(*result));
}

/* MODIFY_PORT (IB port): VHCA_MODIFY_PORT_* @flags, CapabilityMask bits. */
int vhcad_cmd_modify_port(struct vhca_dev *dev, u8 flags, u32 set_cap_mask,
			  u32 clr_cap_mask)
{
	struct vhca_cmd_modify_port_in in = {
		.port = VHCA_PORT_NUM,
		.flags = flags,
		.set_cap_mask = cpu_to_le32(set_cap_mask),
		.clr_cap_mask = cpu_to_le32(clr_cap_mask),
	};

	return vhcad_admin_exec(dev, VHCA_CMD_MODIFY_PORT, &in, sizeof(in),
				NULL, 0);
}
