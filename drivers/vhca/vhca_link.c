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
	if (dev->link_to_netdev)
		vhcad_netdev_set_link(dev, up);
	if (dev->link_to_ibdev && up != dev->ib_port_active) {
		dev->ib_port_active = up;
		vhcad_ib_port_event(dev, up);
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
 * Start or stop reporting link changes to the net_device.  Once this
 * returns with @enable false, the link work no longer touches it.
 */
void vhcad_link_to_netdev(struct vhca_dev *dev, bool enable)
{
	mutex_lock(&dev->link_lock);
	dev->link_to_netdev = enable;
	mutex_unlock(&dev->link_lock);

	/* Catch up with the link as it is now. */
	if (enable)
		schedule_work(&dev->link_work);
}

/*
 * Start or stop dispatching port events to the RDMA core.  @port_active is
 * the state the core saw when it registered the device.
 */
void vhcad_link_to_ibdev(struct vhca_dev *dev, bool enable, bool port_active)
{
	mutex_lock(&dev->link_lock);
	dev->link_to_ibdev = enable;
	dev->ib_port_active = port_active;
	mutex_unlock(&dev->link_lock);

	if (enable)
		schedule_work(&dev->link_work);
}
