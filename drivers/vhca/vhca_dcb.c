// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Priority flow control through DCB netlink (docs/specs/vhca.rst,
 * "Priority flow control"): the kernel's interface for a NIC's PFC, so
 * that iproute2's dcb tool (and lldpad's lldptool) configure it,
 *
 *   dcb pfc set dev eth0 prio-pfc 3:on
 *   dcb pfc show dev eth0
 *
 * IEEE 802.1Qaz mode only (the DCBX version is IEEE, the host's own, as
 * mlx5 reports with firmware DCBX off), and PFC only: ieee_getpfc shows
 * SET_CC's pfc_enable with the pause frames sent (requests) and received
 * (indications) per priority; ieee_setpfc sets pfc_enable.  The device
 * has no ETS, no buffer tuning and no DCB application table: the
 * priority of a RoCE packet is its DSCP's class selector (DSCP >> 3).
 */

#include <net/dcbnl.h>

#include "vhca.h"

#ifdef CONFIG_DCB

static struct vhca_dev *vhcad_dcb_dev(struct net_device *netdev)
{
	struct vhca_eth *eth = netdev_priv(netdev);

	return eth->dev;
}

static int vhcad_dcbnl_ieee_getpfc(struct net_device *netdev,
				   struct ieee_pfc *pfc)
{
	struct vhca_dev *dev = vhcad_dcb_dev(netdev);

	memset(pfc, 0, sizeof(*pfc));
	pfc->pfc_cap = VHCA_PFC_PRIORITIES;
	mutex_lock(&dev->cc_lock);
	pfc->pfc_en = dev->cc.pfc_enable;
	mutex_unlock(&dev->cc_lock);
	return vhcad_cc_query_pfc(dev, pfc->requests, pfc->indications);
}

static int vhcad_dcbnl_ieee_setpfc(struct net_device *netdev,
				   struct ieee_pfc *pfc)
{
	struct vhca_dev *dev = vhcad_dcb_dev(netdev);

	/* The device pauses at its own thresholds: no MBC, no delay. */
	if (pfc->mbc || pfc->delay)
		return -EOPNOTSUPP;
	return vhcad_cc_set_pfc(dev, pfc->pfc_en);
}

static u8 vhcad_dcbnl_getdcbx(struct net_device *netdev)
{
	return DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
}

/* dcbnl's setdcbx: 0 accepted, anything else refused. */
static u8 vhcad_dcbnl_setdcbx(struct net_device *netdev, u8 mode)
{
	return mode == (DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE) ? 0 : 1;
}

static const struct dcbnl_rtnl_ops vhcad_dcbnl_ops = {
	.ieee_getpfc	= vhcad_dcbnl_ieee_getpfc,
	.ieee_setpfc	= vhcad_dcbnl_ieee_setpfc,
	.getdcbx	= vhcad_dcbnl_getdcbx,
	.setdcbx	= vhcad_dcbnl_setdcbx,
};

/* Before register_netdev(): a device without SET_CC has no PFC. */
void vhcad_dcb_init(struct vhca_dev *dev, struct net_device *netdev)
{
	if (dev->has_cc)
		netdev->dcbnl_ops = &vhcad_dcbnl_ops;
}

#else

void vhcad_dcb_init(struct vhca_dev *dev, struct net_device *netdev)
{
}

#endif
