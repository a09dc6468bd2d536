// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Link state (docs/specs/vhca.rst, "Link state"): STATUS.LINK_UP drives the
 * net_device carrier and the state of the RDMA port, whose changes the
 * RDMA core learns from IB_EVENT_PORT_ACTIVE / IB_EVENT_PORT_ERR.  On the
 * InfiniBand port the RDMA port is active when the subnet manager has
 * made its logical state ACTIVE (IBTA 7.2), and the SM's other changes
 * (LID, P_Keys, SM, client reregistration, GID prefix) reach the core as
 * PORT_MGMT events, dispatched here too: only while the ib_device is
 * registered, in process context.
 */

#include "vhca.h"

bool vhcad_link_is_up(struct vhca_dev *dev)
{
	return vhcad_reg_read(dev, VHCA_REG_STATUS) & VHCA_STATUS_LINK_UP;
}

/*
 * Whether the RDMA port is active: the link on RoCE; the logical port
 * state on IB, or, if that cannot be read, what was last reported.
 */
static bool vhcad_link_ib_port_active(struct vhca_dev *dev, bool up)
{
	int state;

	if (!dev->link_ibdev->port_state)
		return up;
	state = dev->link_ibdev->port_state(dev);
	if (state < 0)
		return dev->ib_port_active;
	return state == IB_PORT_ACTIVE;
}

/*
 * PORT_CHANGE events may be coalesced or, if the EQ overflowed, lost;
 * STATUS.LINK_UP always holds the current link state, and PortInfo the
 * current logical state of an IB port.
 */
static void vhcad_link_work(struct work_struct *work)
{
	struct vhca_dev *dev = container_of(work, struct vhca_dev, link_work);
	unsigned long pending;
	unsigned int event;
	bool up, active;

	mutex_lock(&dev->link_lock);
	up = vhcad_link_is_up(dev);
	if (dev->link_netdev_notify)
		dev->link_netdev_notify(dev, up);
	if (dev->link_ibdev) {
		active = vhcad_link_ib_port_active(dev, up);
		if (active != dev->ib_port_active) {
			dev->ib_port_active = active;
			dev->link_ibdev->port_event(dev, active);
		}
		pending = xchg(&dev->port_mgmt_pending, 0);
		if (dev->link_ibdev->mgmt_event)
			for_each_set_bit(event, &pending, BITS_PER_LONG)
				dev->link_ibdev->mgmt_event(dev, event);
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
 * Start dispatching port events to the RDMA core through @ops, or stop
 * (NULL).  @port_active is the state the core saw when it registered the
 * device.  PORT_MGMT events that came while it registered are
 * dispatched then: the core may have read the port before them.
 */
void vhcad_link_to_ibdev(struct vhca_dev *dev,
			 const struct vhca_link_ibdev_ops *ops,
			 bool port_active)
{
	mutex_lock(&dev->link_lock);
	dev->link_ibdev = ops;
	dev->ib_port_active = port_active;
	mutex_unlock(&dev->link_lock);

	if (ops)
		schedule_work(&dev->link_work);
}

static bool vhcad_is_port_mgmt_event(u8 event)
{
	switch (event) {
	case VHCA_EVENT_LID_CHANGE:
	case VHCA_EVENT_PKEY_CHANGE:
	case VHCA_EVENT_SM_CHANGE:
	case VHCA_EVENT_CLIENT_REREGISTER:
	case VHCA_EVENT_GID_CHANGE:
		return true;
	default:
		return false;
	}
}

/*
 * PORT_MGMT event @event (enum vhca_port_mgmt_event, the enum
 * ib_event_type value), from the async EQ interrupt: the link work
 * dispatches it.  Events of one type coalesce: each tells consumers to
 * read the port again.
 */
void vhcad_link_port_mgmt(struct vhca_dev *dev, u8 event)
{
	if (!vhcad_is_ib(dev) || !vhcad_is_port_mgmt_event(event)) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "PORT_MGMT event %u: not a management event of this port, ignored\n",
				     event);
		return;
	}
	set_bit(event, &dev->port_mgmt_pending);
	schedule_work(&dev->link_work);
}
