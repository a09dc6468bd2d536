// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MAD interface of the InfiniBand port (include/vhca_hw.h, MAD_IFC):
 * the device's subnet management agent (the SMP classes, IBTA 14.2) and
 * performance management agent (PerfMgt, 16.1) answer MADs as a real
 * HCA's firmware does for mlx4 and mthca.  process_mad gives them the
 * MADs that reach QP0 and QP1 first, the MAD layer's "right of first
 * refusal" (drivers/infiniband/core/mad.c); what they do not handle goes
 * on to the kernel's agents and to user space (opensm through umad).
 * vhcad_smp() is the driver asking the SMA itself, for the port verbs
 * (vhca_ib_port.c).  The SMA's traps come up QP0 from SLID 0 and go on
 * to the subnet manager from the driver's own MAD agent.
 */

#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "vhca.h"
#include "vhca_verbs.h"

static_assert(sizeof(struct ib_mad) == VHCA_MAD_SIZE);
static_assert(sizeof(struct ib_smp) == VHCA_MAD_SIZE);
static_assert(sizeof(union vhca_smp_data) == IB_SMP_DATA_SIZE);

/*
 * The MADs the device's agents may take, as mlx4 and mthca choose them:
 * SMP Get, Set and TrapRepress but not SMInfo, which belongs to the
 * subnet manager (IBTA 14.4.1); PerfMgt Get and Set.
 */
static bool vhcad_mad_for_device(const struct ib_mad_hdr *hdr)
{
	if (hdr->base_version != IB_MGMT_BASE_VERSION)
		return false;

	switch (hdr->mgmt_class) {
	case IB_MGMT_CLASS_SUBN_LID_ROUTED:
	case IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE:
		if (hdr->attr_id == IB_SMP_ATTR_SM_INFO)
			return false;
		return hdr->method == IB_MGMT_METHOD_GET ||
		       hdr->method == IB_MGMT_METHOD_SET ||
		       hdr->method == IB_MGMT_METHOD_TRAP_REPRESS;
	case IB_MGMT_CLASS_PERF_MGMT:
		return hdr->method == IB_MGMT_METHOD_GET ||
		       hdr->method == IB_MGMT_METHOD_SET;
	default:
		return false;
	}
}

static void vhcad_trap_sent(struct ib_mad_agent *agent,
			    struct ib_mad_send_wc *wc)
{
	/* A MAD agent's send handler runs in process context. */
	rdma_destroy_ah(wc->send_buf->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_free_send_mad(wc->send_buf);
}

/*
 * Send the SMA's trap @trap on to the master SM, as mthca and mlx4 send
 * their firmware's (forward_trap).  The address handle is made for each
 * trap from PortInfo as it is now, so it never names an SM that has
 * gone; traps are rare.  A trap that cannot be sent is lost: the SMA
 * does not repeat it either (docs/limits.rst).
 */
static void vhcad_forward_trap(struct vhca_dev *dev, const struct ib_mad *trap)
{
	struct rdma_ah_attr ah_attr = {};
	struct ib_mad_send_buf *buf;
	union vhca_smp_data pi;
	struct ib_ah *ah;
	u16 sm_lid;

	mutex_lock(&dev->trap_lock);
	if (!dev->trap_agent ||
	    vhcad_smp(dev, IB_MGMT_METHOD_GET, IB_SMP_ATTR_PORT_INFO,
		      VHCA_PORT_NUM, &pi))
		goto out;
	sm_lid = be16_to_cpu(pi.port_info.sm_lid);
	if (!sm_lid)
		goto out;

	ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(&ah_attr, sm_lid);
	rdma_ah_set_sl(&ah_attr, pi.port_info.neighbormtu_mastersmsl & 0xf);
	rdma_ah_set_port_num(&ah_attr, VHCA_PORT_NUM);
	ah = rdma_create_ah(dev->trap_agent->qp->pd, &ah_attr,
			    RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah))
		goto out;

	buf = ib_create_send_mad(dev->trap_agent, 0, 0, 0, IB_MGMT_MAD_HDR,
				 IB_MGMT_MAD_DATA, GFP_KERNEL,
				 IB_MGMT_BASE_VERSION);
	if (IS_ERR(buf)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		goto out;
	}
	memcpy(buf->mad, trap, sizeof(*trap));
	buf->ah = ah;
	if (ib_post_send_mad(buf, NULL)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		ib_free_send_mad(buf);
	}
out:
	mutex_unlock(&dev->trap_lock);
}

/**
 * vhcad_trap_agent_register - start forwarding the SMA's traps
 * @dev: the device, an InfiniBand port whose ib_device is registered
 *
 * The MAD agent that sends them (on QP0, no classes of its own to
 * receive), as mlx4_ib_mad_init() registers its.  Without it traps are
 * dropped, which is not worth failing the device for.
 */
void vhcad_trap_agent_register(struct vhca_dev *dev)
{
	struct ib_mad_agent *agent;

	agent = ib_register_mad_agent(&dev->ibdev, VHCA_PORT_NUM, IB_QPT_SMI,
				      NULL, 0, vhcad_trap_sent, NULL, NULL, 0);
	if (IS_ERR(agent)) {
		dev_warn(&dev->pdev->dev,
			 "cannot register the MAD agent for traps (%ld): the subnet manager will not hear of local changes\n",
			 PTR_ERR(agent));
		return;
	}
	mutex_lock(&dev->trap_lock);
	dev->trap_agent = agent;
	mutex_unlock(&dev->trap_lock);
}

/* Stop forwarding traps; before the ib_device is unregistered. */
void vhcad_trap_agent_unregister(struct vhca_dev *dev)
{
	struct ib_mad_agent *agent;

	mutex_lock(&dev->trap_lock);
	agent = dev->trap_agent;
	dev->trap_agent = NULL;
	mutex_unlock(&dev->trap_lock);
	if (agent)
		ib_unregister_mad_agent(agent);
}

/* A trap the device's SMA raised: it came from SLID 0, which no wire has. */
static bool vhcad_mad_is_local_trap(const struct ib_wc *in_wc,
				    const struct ib_mad_hdr *hdr)
{
	return in_wc && !in_wc->slid &&
	       hdr->mgmt_class == IB_MGMT_CLASS_SUBN_LID_ROUTED &&
	       hdr->method == IB_MGMT_METHOD_TRAP;
}

int vhcad_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
		      const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		      const struct ib_mad *in, struct ib_mad *out,
		      size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	struct vhca_mad_ifc *mad;
	u8 result;
	int ret;

	if (port_num != VHCA_PORT_NUM)
		return IB_MAD_RESULT_SUCCESS;
	if (vhcad_mad_is_local_trap(in_wc, &in->mad_hdr)) {
		vhcad_forward_trap(dev, in);
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	}
	if (!vhcad_mad_for_device(&in->mad_hdr))
		return IB_MAD_RESULT_SUCCESS;
	if (*out_mad_size < VHCA_MAD_SIZE)
		return IB_MAD_RESULT_FAILURE;

	mad = kzalloc(sizeof(*mad), GFP_KERNEL);
	if (!mad)
		return IB_MAD_RESULT_FAILURE;

	mad->port = VHCA_PORT_NUM;
	if (mad_flags & IB_MAD_IGNORE_MKEY)
		mad->flags |= VHCA_MAD_IFC_IGNORE_MKEY;
	/*
	 * Where it came from: a receive on QP0 or QP1, or the MAD layer's
	 * own completion for a directed route SMP to this node.  Without
	 * one it was made here (sysfs counters, the driver's queries).
	 */
	if (in_wc) {
		mad->sl = in_wc->sl;
		mad->slid = cpu_to_le16(ib_lid_cpu16(in_wc->slid));
		mad->pkey_index = cpu_to_le16(in_wc->pkey_index);
		mad->src_qp = cpu_to_le32(in_wc->src_qp & IB_QPN_MASK);
	} else {
		mad->flags |= VHCA_MAD_IFC_LOCAL;
	}
	memcpy(mad->in_mad, in, VHCA_MAD_SIZE);

	if (vhcad_cmd_mad_ifc(dev, mad, &result)) {
		ret = IB_MAD_RESULT_FAILURE;
		goto out;
	}

	/* A reply is the end of the MAD: nobody else answers it too. */
	if (result & VHCA_MAD_RESULT_REPLY) {
		/* The SMA set a directed route response's D bit (14.2.2). */
		memcpy(out, mad->out_mad, VHCA_MAD_SIZE);
		ret = IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
	} else if (result & VHCA_MAD_RESULT_CONSUMED) {
		ret = IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	} else {
		ret = IB_MAD_RESULT_SUCCESS;
	}
out:
	kfree(mad);
	return ret;
}

/**
 * vhcad_smp - Get or Set an attribute of the port's own SMA
 * @dev: the device
 * @method: IB_MGMT_METHOD_GET or IB_MGMT_METHOD_SET
 * @attr_id: IB_SMP_ATTR_*
 * @attr_mod: the attribute modifier (port, block)
 * @data: a Set's attribute data; the response's on success
 *
 * A LID routed SMP made on this node (no work completion) that the M_Key
 * does not guard, as mlx4 reads its port (IB_MAD_IGNORE_MKEY).  Sleeps.
 *
 * Return: 0, -EIO if the SMA did not answer with status 0, or the
 * command's error.
 */
int vhcad_smp(struct vhca_dev *dev, u8 method, __be16 attr_id, u32 attr_mod,
	      union vhca_smp_data *data)
{
	struct vhca_mad_ifc *mad;
	struct ib_smp *smp;
	u8 result;
	int err;

	mad = kzalloc(sizeof(*mad), GFP_KERNEL);
	if (!mad)
		return -ENOMEM;

	mad->port = VHCA_PORT_NUM;
	mad->flags = VHCA_MAD_IFC_LOCAL | VHCA_MAD_IFC_IGNORE_MKEY;
	smp = (struct ib_smp *)mad->in_mad;
	ib_init_query_mad(smp);
	smp->method = method;
	smp->attr_id = attr_id;
	smp->attr_mod = cpu_to_be32(attr_mod);
	if (method == IB_MGMT_METHOD_SET)
		memcpy(smp->data, data, sizeof(*data));

	err = vhcad_cmd_mad_ifc(dev, mad, &result);
	if (err)
		goto out;

	smp = (struct ib_smp *)mad->out_mad;
	if (!(result & VHCA_MAD_RESULT_REPLY) || smp->status) {
		dev_err_ratelimited(&dev->pdev->dev,
				    "SMA %s of attribute 0x%04x (modifier 0x%x): %s, MAD status 0x%04x\n",
				    method == IB_MGMT_METHOD_SET ? "Set" : "Get",
				    be16_to_cpu(attr_id), attr_mod,
				    result & VHCA_MAD_RESULT_REPLY ? "replied" :
								     "no reply",
				    be16_to_cpu(smp->status));
		err = -EIO;
		goto out;
	}
	memcpy(data, smp->data, sizeof(*data));
out:
	kfree(mad);
	return err;
}
