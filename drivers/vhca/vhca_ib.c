// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RDMA half: an ib_device with one RoCEv2 port tied to the vhca
 * net_device, so the RDMA core builds the port's GIDs from the interface's
 * IPv4 and IPv6 addresses (ib_device_set_netdev()).
 *
 * The device has no QP, CQ, MR or PD yet; the verbs the RDMA core calls
 * "mandatory" are therefore left out, the core marks the device as not
 * usable by kernel ULPs, and user space sees -EOPNOTSUPP for them.
 */

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

static const struct ib_device_ops vhca_ib_dev_ops = {
	.owner = THIS_MODULE,
	/* No rdma_driver_id is assigned to vhca; providers match by PCI ID. */
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VHCA_UVERBS_ABI_VERSION,

	.add_gid = vhca_add_gid,
	.alloc_ucontext = vhca_alloc_ucontext,
	.dealloc_ucontext = vhca_dealloc_ucontext,
	.del_gid = vhca_del_gid,
	.get_dev_fw_str = vhca_get_dev_fw_str,
	.get_link_layer = vhca_get_link_layer,
	.get_port_immutable = vhca_get_port_immutable,
	.mmap = vhca_mmap,
	.mmap_free = vhca_mmap_free,
	.query_device = vhca_query_device,
	.query_pkey = vhca_query_pkey,
	.query_port = vhca_query_port,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, vhca_ucontext, ibucontext),
};

void vhca_ib_port_event(struct vhca_dev *dev, bool active)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = VHCA_PORT_NUM,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	ib_dispatch_event(&event);
}

int vhca_ib_register(struct vhca_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	bool port_active;
	int err;

	if (!dev->attr.gid_tbl_len) {
		dev_err(&dev->pdev->dev, "device reports an empty GID table\n");
		return -EIO;
	}

	/* sysfs places the device under its PCI function; providers match it. */
	ibdev->dev.parent = &dev->pdev->dev;
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->node_guid = cpu_to_be64(dev->attr.node_guid);
	strscpy(ibdev->node_desc, "vhca RoCEv2 HCA", sizeof(ibdev->node_desc));
	/* Vectors past the async and Ethernet ones serve completions. */
	ibdev->num_comp_vectors = min(dev->attr.num_comp_vectors,
				      dev->num_vectors - VHCA_VECTOR_FIRST_COMP);
	ib_set_device_ops(ibdev, &vhca_ib_dev_ops);

	err = ib_device_set_netdev(ibdev, dev->netdev, VHCA_PORT_NUM);
	if (err) {
		dev_err(&dev->pdev->dev, "cannot tie the RDMA port to %s: %d\n",
			netdev_name(dev->netdev), err);
		return err;
	}

	/* The state the core reads while registering; changes come after. */
	port_active = vhca_link_is_up(dev);
	err = ib_register_device(ibdev, "vhca%d", &dev->pdev->dev);
	if (err) {
		dev_err(&dev->pdev->dev, "cannot register the RDMA device: %d\n",
			err);
		/* Drop the net_device reference before it is unregistered. */
		ib_device_set_netdev(ibdev, NULL, VHCA_PORT_NUM);
		return err;
	}

	vhca_link_to_ibdev(dev, true, port_active);
	return 0;
}

void vhca_ib_unregister(struct vhca_dev *dev)
{
	vhca_link_to_ibdev(dev, false, false);
	ib_unregister_device(&dev->ibdev);
}
