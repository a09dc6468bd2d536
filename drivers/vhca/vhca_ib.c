// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RDMA half: an ib_device with one port.  A RoCEv2 port is tied to the
 * vhca net_device, so the RDMA core builds the port's GIDs from the
 * interface's IPv4 and IPv6 addresses (ib_device_set_netdev()).  An
 * InfiniBand port (VHCA_CAP_IB) has no net_device: the subnet manager
 * gives it its LID, P_Keys and GID prefix through the device's SMA, and
 * the port verbs read them back with MADs (vhca_ib_port.c, vhca_mad.c).
 * Both share every other verb; the port's own are in a set per link layer.
 *
 * The resource verbs (PD, MR, CQ, QP, AH, multicast and the kernel's data
 * path) are registered only when the device has an RDMA engine with
 * resources (QUERY_DEVICE max_qp > 0), the SRQ verbs only when it has
 * SRQs as well (max_srq > 0), the memory window verbs only when it has
 * windows (max_mw > 0).  Only with the resource verbs does the port offer
 * the MAD layer, the CM and rdma_cm a QP1, and on IB a QP0
 * (vhcad_get_port_immutable(), vhcad_ib_get_port_immutable()).
 * Without them the verbs the RDMA core calls "mandatory" are left out, the
 * core marks the device as not usable by kernel ULPs, and user space sees
 * -EOPNOTSUPP for them.
 */

#include <linux/pci.h>

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

static const struct ib_device_ops vhcad_ib_dev_ops = {
	.owner = THIS_MODULE,
	/* No rdma_driver_id is assigned to vhca; providers match by PCI ID. */
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VHCA_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = vhcad_alloc_hw_port_stats,
	.alloc_ucontext = vhcad_alloc_ucontext,
	.dealloc_ucontext = vhcad_dealloc_ucontext,
	.disassociate_ucontext = vhcad_disassociate_ucontext,
	.get_dev_fw_str = vhcad_get_dev_fw_str,
	.get_hw_stats = vhcad_get_hw_stats,
	.mmap = vhcad_mmap,
	.mmap_free = vhcad_mmap_free,
	.query_device = vhcad_query_device,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, vhca_ucontext, ibucontext),
};

/* The RoCEv2 port: GIDs from the net_device, written with ADD_GID. */
static const struct ib_device_ops vhcad_roce_port_ops = {
	.add_gid = vhcad_add_gid,
	.del_gid = vhcad_del_gid,
	.get_link_layer = vhcad_get_link_layer,
	.get_port_immutable = vhcad_get_port_immutable,
	.query_pkey = vhcad_query_pkey,
	.query_port = vhcad_query_port,
};

/*
 * The InfiniBand port: no add_gid or del_gid, so the core's GID cache
 * reads the table with query_gid; the MAD layer hands MADs to the
 * device's agents with process_mad.
 */
static const struct ib_device_ops vhcad_ib_port_ops = {
	.get_link_layer = vhcad_ib_get_link_layer,
	.get_port_immutable = vhcad_ib_get_port_immutable,
	.modify_device = vhcad_ib_modify_device,
	.modify_port = vhcad_ib_modify_port,
	.process_mad = vhcad_process_mad,
	.query_gid = vhcad_ib_query_gid,
	.query_pkey = vhcad_ib_query_pkey,
	.query_port = vhcad_ib_query_port,
};

static const struct ib_device_ops vhcad_ib_res_ops = {
	.alloc_mr = vhcad_alloc_mr,
	.alloc_pd = vhcad_alloc_pd,
	.attach_mcast = vhcad_attach_mcast,
	.create_ah = vhcad_create_ah,
	.create_cq = vhcad_create_cq,
	.create_qp = vhcad_create_qp,
	.create_user_ah = vhcad_create_ah,
	.dealloc_pd = vhcad_dealloc_pd,
	.dereg_mr = vhcad_dereg_mr,
	.destroy_ah = vhcad_destroy_ah,
	.destroy_cq = vhcad_destroy_cq,
	.destroy_qp = vhcad_destroy_qp,
	.detach_mcast = vhcad_detach_mcast,
	.get_dma_mr = vhcad_get_dma_mr,
	.map_mr_sg = vhcad_map_mr_sg,
	.modify_qp = vhcad_modify_qp,
	.poll_cq = vhcad_poll_cq,
	.post_recv = vhcad_post_recv,
	.post_send = vhcad_post_send,
	.query_ah = vhcad_query_ah,
	.query_qp = vhcad_query_qp,
	.reg_user_mr = vhcad_reg_user_mr,
	.rereg_user_mr = vhcad_rereg_user_mr,
	.req_notify_cq = vhcad_req_notify_cq,
	.resize_cq = vhcad_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, vhca_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vhca_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, vhca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vhca_qp, ibqp),
};

/* Memory windows (IBTA 10.6.7), bound from user space only (vhca_mw.c). */
static const struct ib_device_ops vhcad_ib_mw_ops = {
	.alloc_mw = vhcad_alloc_mw,
	.dealloc_mw = vhcad_dealloc_mw,

	INIT_RDMA_OBJ_SIZE(ib_mw, vhca_mw, ibmw),
};

static const struct ib_device_ops vhcad_ib_srq_ops = {
	.create_srq = vhcad_create_srq,
	.destroy_srq = vhcad_destroy_srq,
	.modify_srq = vhcad_modify_srq,
	.post_srq_recv = vhcad_post_srq_recv,
	.query_srq = vhcad_query_srq,

	INIT_RDMA_OBJ_SIZE(ib_srq, vhca_srq, ibsrq),
};

/* XRC (annex A14): domains, and the XRC SRQs and QPs that use them. */
static const struct ib_device_ops vhcad_ib_xrc_ops = {
	.alloc_xrcd = vhcad_alloc_xrcd,
	.dealloc_xrcd = vhcad_dealloc_xrcd,

	INIT_RDMA_OBJ_SIZE(ib_xrcd, vhca_xrcd, ibxrcd),
};

static_assert((int)IB_EVENT_SRQ_ERR == (int)VHCA_EVENT_SRQ_ERR);
static_assert((int)IB_EVENT_SRQ_LIMIT_REACHED ==
	      (int)VHCA_EVENT_SRQ_LIMIT_REACHED);
static_assert((int)IB_EVENT_QP_LAST_WQE_REACHED ==
	      (int)VHCA_EVENT_QP_LAST_WQE_REACHED);

static void vhcad_ib_port_event(struct vhca_dev *dev, bool active)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = VHCA_PORT_NUM,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	ib_dispatch_event(&event);
}

/* IB port: what the subnet manager changed (VHCA_EQE_PORT_MGMT). */
static void vhcad_ib_mgmt_event(struct vhca_dev *dev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = VHCA_PORT_NUM,
		.event = type,
	};

	ib_dispatch_event(&event);
}

static const struct vhca_link_ibdev_ops vhcad_roce_link_ops = {
	.port_event = vhcad_ib_port_event,
};

/* IB port: active when the SM made it so (IBTA 7.2), not with the link. */
static const struct vhca_link_ibdev_ops vhcad_ib_link_ops = {
	.port_event = vhcad_ib_port_event,
	.port_state = vhcad_ib_port_state,
	.mgmt_event = vhcad_ib_mgmt_event,
};

static_assert((int)IB_EVENT_LID_CHANGE == (int)VHCA_EVENT_LID_CHANGE);
static_assert((int)IB_EVENT_PKEY_CHANGE == (int)VHCA_EVENT_PKEY_CHANGE);
static_assert((int)IB_EVENT_SM_CHANGE == (int)VHCA_EVENT_SM_CHANGE);
static_assert((int)IB_EVENT_CLIENT_REREGISTER ==
	      (int)VHCA_EVENT_CLIENT_REREGISTER);
static_assert((int)IB_EVENT_GID_CHANGE == (int)VHCA_EVENT_GID_CHANGE);

/* CQ_ERROR: the CQ overflowed and is in error (IBTA 11.4.2.1). */
void vhcad_ib_cq_event(struct vhca_dev *dev, u32 cqn)
{
	struct ib_event event = { .event = IB_EVENT_CQ_ERR };
	struct vhca_cq *cq;

	/* destroy_cq erases the CQ, then waits for this handler to finish. */
	cq = dev->has_rdma ? xa_load(&dev->cqs, cqn) : NULL;
	if (!cq) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "CQ_ERROR event for CQ %u, which does not exist\n",
				     cqn);
		return;
	}
	dev_err_ratelimited(&dev->pdev->dev, "CQ %u overflowed\n", cqn);
	if (cq->ibcq.event_handler) {
		event.device = cq->ibcq.device;
		event.element.cq = &cq->ibcq;
		cq->ibcq.event_handler(&event, cq->ibcq.cq_context);
	}
}

static bool vhcad_is_qp_event(u8 type)
{
	switch (type) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_PATH_MIG:
	case IB_EVENT_PATH_MIG_ERR:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

/* QP_EVENT: subtype is the enum ib_event_type value. */
void vhcad_ib_qp_event(struct vhca_dev *dev, u32 qpn, u8 type)
{
	struct ib_event event = { .event = type };
	struct vhca_qp *qp;

	qp = dev->has_rdma ? xa_load(&dev->qps, qpn) : NULL;
	if (!qp || !vhcad_is_qp_event(type)) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "QP event %u for QP %u: no such QP or event, ignored\n",
				     type, qpn);
		return;
	}
	/* These move the QP to the error state (IBTA 11.6.3). */
	if (type == IB_EVENT_QP_FATAL || type == IB_EVENT_QP_REQ_ERR ||
	    type == IB_EVENT_QP_ACCESS_ERR)
		WRITE_ONCE(qp->state, IB_QPS_ERR);
	if (qp->ibqp.event_handler) {
		event.device = qp->ibqp.device;
		event.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
	}
}

/*
 * SRQ_EVENT: subtype is the enum ib_event_type value.  The limit event
 * has disarmed the limit (IBTA 10.2.9.5); an SRQ in error gives no more
 * WQEs (IBTA 11.6.3).
 */
void vhcad_ib_srq_event(struct vhca_dev *dev, u32 srqn, u8 type)
{
	struct ib_event event = { .event = type };
	struct vhca_srq *srq;

	/* destroy_srq erases the SRQ, then waits for this handler to finish. */
	srq = dev->has_rdma ? xa_load(&dev->srqs, srqn) : NULL;
	if (!srq || (type != IB_EVENT_SRQ_LIMIT_REACHED &&
		     type != IB_EVENT_SRQ_ERR)) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "SRQ event %u for SRQ %u: no such SRQ or event, ignored\n",
				     type, srqn);
		return;
	}
	if (type == IB_EVENT_SRQ_ERR)
		dev_err_ratelimited(&dev->pdev->dev, "SRQ %u is in error\n",
				    srqn);
	if (srq->ibsrq.event_handler) {
		event.device = srq->ibsrq.device;
		event.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&event, srq->ibsrq.srq_context);
	}
}

/*
 * The doorbell page the kernel's own queues ring, and a completion EQ per
 * completion vector.
 */
static int vhcad_rdma_init(struct vhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int err;

	xa_init_flags(&dev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srqs, XA_FLAGS_LOCK_IRQ);
	atomic_set(&dev->mr_key_tag, get_random_u8());

	err = vhcad_cmd_alloc_uctx(dev, &dev->kernel_db_page);
	if (err)
		return err;
	if (dev->kernel_db_page >= dev->num_db_pages) {
		dev_err(&pdev->dev, "ALLOC_UCTX returned doorbell page %u of %u\n",
			dev->kernel_db_page, dev->num_db_pages);
		err = -EIO;
		goto err_dealloc;
	}

	dev->kernel_db = pci_iomap_range(pdev, VHCA_BAR_DOORBELL,
					 (unsigned long)dev->kernel_db_page *
					 VHCA_DB_PAGE_SIZE,
					 VHCA_DB_PAGE_SIZE);
	if (!dev->kernel_db) {
		dev_err(&pdev->dev, "cannot map doorbell page %u\n",
			dev->kernel_db_page);
		err = -ENOMEM;
		goto err_dealloc;
	}

	err = vhcad_ceqs_create(dev, dev->ibdev.num_comp_vectors);
	if (err)
		goto err_unmap;

	dev->has_rdma = true;
	return 0;

err_unmap:
	pci_iounmap(pdev, dev->kernel_db);
err_dealloc:
	vhcad_cmd_dealloc_uctx(dev, dev->kernel_db_page);
	return err;
}

/* Every resource is gone: the RDMA core destroyed them at unregister. */
static void vhcad_rdma_fini(struct vhca_dev *dev)
{
	if (!dev->has_rdma)
		return;

	dev->has_rdma = false;
	vhcad_ceqs_destroy(dev);
	pci_iounmap(dev->pdev, dev->kernel_db);
	vhcad_cmd_dealloc_uctx(dev, dev->kernel_db_page);
	WARN_ON(!xa_empty(&dev->cqs) || !xa_empty(&dev->qps) ||
		!xa_empty(&dev->srqs));
	xa_destroy(&dev->cqs);
	xa_destroy(&dev->qps);
	xa_destroy(&dev->srqs);
}

/*
 * The port's identity: a RoCEv2 port needs a GID table to fill; an IB
 * port's NodeDescription is the one its SMA answers with.
 */
static int vhcad_ib_port_init(struct vhca_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;

	if (vhcad_is_ib(dev))
		return vhcad_ib_read_node_desc(dev);

	if (!dev->attr.gid_tbl_len) {
		dev_err(&dev->pdev->dev, "device reports an empty GID table\n");
		return -EIO;
	}
	strscpy(ibdev->node_desc, "vhca RoCEv2 HCA", sizeof(ibdev->node_desc));
	return 0;
}

/* Whether the port is active now: the link, or on IB the SM's doing. */
static bool vhcad_ib_port_is_active(struct vhca_dev *dev)
{
	if (vhcad_is_ib(dev))
		return vhcad_ib_port_state(dev) == IB_PORT_ACTIVE;
	return vhcad_link_is_up(dev);
}

int vhcad_ib_register(struct vhca_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	bool is_ib = vhcad_is_ib(dev);
	bool port_active;
	int err;

	mutex_init(&dev->node_desc_lock);
	mutex_init(&dev->trap_lock);
	err = vhcad_ib_port_init(dev);
	if (err)
		goto err_destroy_lock;

	/* sysfs places the device under its PCI function; providers match it. */
	ibdev->dev.parent = &dev->pdev->dev;
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->node_guid = cpu_to_be64(dev->attr.node_guid);
	/* Vectors past the async and Ethernet ones serve completions. */
	ibdev->num_comp_vectors = min3(dev->attr.num_comp_vectors,
				       dev->num_vectors - VHCA_VECTOR_FIRST_COMP,
				       (u32)VHCA_MAX_COMP_EQS);
	ib_set_device_ops(ibdev, &vhcad_ib_dev_ops);
	ib_set_device_ops(ibdev, is_ib ? &vhcad_ib_port_ops :
					 &vhcad_roce_port_ops);
	vhcad_hw_stats_init(dev);

	if (dev->attr.max_qp && !ibdev->num_comp_vectors) {
		dev_warn(&dev->pdev->dev,
			 "no MSI-X vector for completions: RDMA resources disabled\n");
	} else if (dev->attr.max_qp) {
		err = vhcad_rdma_init(dev);
		if (err)
			goto err_destroy_lock;
		ib_set_device_ops(ibdev, &vhcad_ib_res_ops);
		if (dev->attr.max_mw)
			ib_set_device_ops(ibdev, &vhcad_ib_mw_ops);
		if (dev->attr.max_srq)
			ib_set_device_ops(ibdev, &vhcad_ib_srq_ops);
		if (dev->attr.max_srq && dev->attr.max_xrcd)
			ib_set_device_ops(ibdev, &vhcad_ib_xrc_ops);
	}

	if (!is_ib) {
		err = ib_device_set_netdev(ibdev, dev->netdev, VHCA_PORT_NUM);
		if (err) {
			dev_err(&dev->pdev->dev,
				"cannot tie the RDMA port to %s: %d\n",
				netdev_name(dev->netdev), err);
			goto err_rdma_fini;
		}
	}

	/* The state the core reads while registering; changes come after. */
	port_active = vhcad_ib_port_is_active(dev);
	err = ib_register_device(ibdev, "vhca%d", &dev->pdev->dev);
	if (err) {
		dev_err(&dev->pdev->dev, "cannot register the RDMA device: %d\n",
			err);
		/* Drop the net_device reference before it is unregistered. */
		if (!is_ib)
			ib_device_set_netdev(ibdev, NULL, VHCA_PORT_NUM);
		goto err_rdma_fini;
	}

	/* The MAD layer has its QP0 now: the SMA's traps can go out. */
	if (is_ib)
		vhcad_trap_agent_register(dev);
	vhcad_link_to_ibdev(dev, is_ib ? &vhcad_ib_link_ops :
					 &vhcad_roce_link_ops, port_active);
	return 0;

err_rdma_fini:
	vhcad_rdma_fini(dev);
err_destroy_lock:
	mutex_destroy(&dev->trap_lock);
	mutex_destroy(&dev->node_desc_lock);
	return err;
}

void vhcad_ib_unregister(struct vhca_dev *dev)
{
	vhcad_link_to_ibdev(dev, NULL, false);
	vhcad_trap_agent_unregister(dev);
	ib_unregister_device(&dev->ibdev);
	vhcad_rdma_fini(dev);
	mutex_destroy(&dev->trap_lock);
	mutex_destroy(&dev->node_desc_lock);
}
