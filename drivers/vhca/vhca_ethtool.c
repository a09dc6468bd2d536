// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ethtool: driver information, link, and the device's COUNTERS registers
 * as statistics, named by vhca_counter_name() (include/vhca_hw.h), then
 * the congestion counters (vhca_cc.c).
 */

#include <linux/ethtool.h>

#include "vhca.h"

static struct vhca_dev *vhcad_ethtool_dev(struct net_device *netdev)
{
	struct vhca_eth *eth = netdev_priv(netdev);

	return eth->dev;
}

static void vhcad_get_drvinfo(struct net_device *netdev,
			      struct ethtool_drvinfo *info)
{
	struct vhca_dev *dev = vhcad_ethtool_dev(netdev);

	strscpy(info->driver, DRV_MODULE_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(dev->pdev), sizeof(info->bus_info));
	vhcad_fw_version_str(dev, info->fw_version, sizeof(info->fw_version));
}

/*
 * The spec gives the port 25 Gb/s, one lane: its IB speed and width are
 * EDR 1X, which is what ib_get_eth_speed() derives from 25 Gb/s.
 */
static int vhcad_get_link_ksettings(struct net_device *netdev,
				    struct ethtool_link_ksettings *cmd)
{
	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	cmd->base.port = PORT_OTHER;
	cmd->base.autoneg = AUTONEG_DISABLE;
	if (netif_carrier_ok(netdev)) {
		cmd->base.speed = SPEED_25000;
		cmd->base.duplex = DUPLEX_FULL;
	} else {
		cmd->base.speed = SPEED_UNKNOWN;
		cmd->base.duplex = DUPLEX_UNKNOWN;
	}
	return 0;
}

/*
 * The COUNTERS registers, then (has_cc) the congestion counters and the
 * PFC counters per priority (rx_prio3_pause, ...), as mlx5 names them.
 */
static unsigned int vhcad_stats_count(struct vhca_dev *dev)
{
	return VHCA_CNT_MAX + (dev->has_cc ? VHCA_CC_STATS_NUM : 0);
}

static int vhcad_get_sset_count(struct net_device *netdev, int sset)
{
	if (sset == ETH_SS_STATS)
		return vhcad_stats_count(vhcad_ethtool_dev(netdev));
	return -EOPNOTSUPP;
}

static void vhcad_get_strings(struct net_device *netdev, u32 sset, u8 *data)
{
	struct vhca_dev *dev = vhcad_ethtool_dev(netdev);
	unsigned int i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < VHCA_CNT_MAX; i++)
		ethtool_puts(&data, vhca_counter_name(i));
	for (i = VHCA_CNT_MAX; i < vhcad_stats_count(dev); i++)
		ethtool_puts(&data, vhcad_cc_stat_name(dev, i - VHCA_CNT_MAX));
}

static void vhcad_get_ethtool_stats(struct net_device *netdev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct vhca_dev *dev = vhcad_ethtool_dev(netdev);
	unsigned int i;

	for (i = 0; i < VHCA_CNT_MAX; i++)
		data[i] = vhcad_read_counter(dev, i);
	if (dev->has_cc)
		vhcad_cc_read_counters(dev, &data[VHCA_CNT_MAX]);
}

const struct ethtool_ops vhcad_ethtool_ops = {
	.get_drvinfo		= vhcad_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= vhcad_get_link_ksettings,
	.get_sset_count		= vhcad_get_sset_count,
	.get_strings		= vhcad_get_strings,
	.get_ethtool_stats	= vhcad_get_ethtool_stats,
};
