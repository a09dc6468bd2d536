// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Link state (docs/specs/vhca.rst, "Link state"): STATUS.LINK_UP drives the
 * net_device carrier and the state of the RDMA port, whose changes the
 * RDMA core learns from IB_EVENT_PORT_ACTIVE / IB_EVENT_PORT_ERR.
 */

#include "vhca.h"

bool vhcad_link_is_up(struct vhca_dev *dev)
{
	return vhcad_reg_read(dev, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP;
}

/*
 * PORT_CHANGE events may be coalesced or, if the EQ overflowed, lost;
 * STATUS.LINK_UP always holds the current link state.
 */
static void vhcad_link_work(struct work_struct *work)
{
	struct vhca_dev *dev = container_of(work, struct vhca_dev, link_work);
	bool up;

	mutex_lock(&dev->link_lock);
	up = vhcad_link_is_up(dev);
	if (dev->link_netdev_notify)
		dev->link_netdev_notify(dev, up);
	if (dev->link_ibdev_notify && up != dev->ib_port_active) {
		dev->ib_port_active = up;
		dev->link_ibdev_notify(dev, up);
	}
	mutex_unlock(&dev->link_lock);
}

void vhcad_link_init(struct vhca_dev *dev)
{
	mutex_init(&dev->link_lock);
	INIT_WORK(&dev->link_work, vhcad_link_work);
}

/* Once the async EQ interrupt is gone, nothing queues the work again. */
void vhcad_link_fini(struct vhca_dev *dev)
{
	cancel_work_sync(&dev->link_work);
	mutex_destroy(&dev->link_lock);
}

/*
 * Start reporting link changes to the net_device through @notify, or stop
 * (NULL).  Once this returns with NULL, the link work no longer calls it.
 */
void vhcad_link_to_netdev(struct vhca_dev *dev,
			  void (*notify)(struct vhca_dev *dev, bool up))
{
	mutex_lock(&dev->link_lock);
	dev->link_netdev_notify = notify;
	mutex_unlock(&dev->link_lock);

	/* Catch up with the link as it is now. */
	if (notify)
		schedule_work(&dev->link_work);
}

/*
 * Start dispatching port events to the RDMA core through @notify, or stop
 * (NULL).  @port_active is the state the core saw when it registered the
 * device.
 */
void vhcad_link_to_ibdev(struct vhca_dev *dev,
			 void (*notify)(struct vhca_dev *dev, bool up),
			 bool port_active)
{
	mutex_lock(&dev->link_lock);
	dev->link_ibdev_notify = notify;
	dev->ib_port_active = port_active;
	mutex_unlock(&dev->link_lock);

	if (notify)
		schedule_work(&dev->link_work);
}
