// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The port's hardware counters for the RDMA core ("rdma statistic show
 * link vhca0/1", /sys/class/infiniband/vhca0/ports/1/hw_counters/): the
 * device's RoCE transport counters, VHCA_CNT_ROCE_TX_PACKETS to the last
 * drop reason, named by vhca_counter_name() (include/vhca_hw.h) as
 * ethtool -S names them, and the congestion and PFC counters of
 * QUERY_CC (vhca_cc.c; mlx5's names, as its hw_counters and ethtool -S
 * show them).  The
 * Ethernet, admin queue and doorbell counters before them belong to the
 * net_device: ethtool -S shows every counter.
 */

#include "vhca.h"
#include "vhca_verbs.h"

/* The device's counter @counter, for every user (ethtool, netdev, RDMA). */
u64 vhcad_read_counter(struct vhca_dev *dev, enum vhca_counter counter)
{
	u32 reg = VHCA_REG_COUNTERS + 8 * counter;
	unsigned long flags;
	u32 lo, hi;

	/* Reading LO latches HI: keep each pair of reads together. */
	spin_lock_irqsave(&dev->counter_lock, flags);
	lo = vhcad_reg_read(dev, reg);
	hi = vhcad_reg_read(dev, reg + 4);
	spin_unlock_irqrestore(&dev->counter_lock, flags);

	return (u64)hi << 32 | lo;
}

/*
 * QUERY_CC's counters but the RC requester's loss back-off ones
 * (req_window_cuts, req_timer_backoffs): iproute2's rdma reads a port's
 * counters in one 8 KiB netlink message, which they overflow ("Error:
 * Message too long").  ethtool -S and the device dump show them.
 */
static bool vhcad_cc_stat_in_rdma(unsigned int i)
{
	return i < VHCA_CC_CNT_REQ_WINDOW_CUTS || i >= VHCA_CC_CNT_MAX;
}

/* Called before the device is registered: the core keeps @descs. */
void vhcad_hw_stats_init(struct vhca_dev *dev)
{
	unsigned int i;

	for (i = 0; i < VHCA_HW_STATS_NUM; i++)
		dev->hw_stat_descs[i].name =
			vhca_counter_name(VHCA_HW_STATS_FIRST + i);
	dev->num_hw_stats = VHCA_HW_STATS_NUM;
	if (!dev->has_cc)
		return;
	for (i = 0; i < VHCA_CC_STATS_NUM; i++)
		if (vhcad_cc_stat_in_rdma(i))
			dev->hw_stat_descs[dev->num_hw_stats++].name =
				vhcad_cc_stat_name(dev, i);
}

struct rdma_hw_stats *vhcad_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);

	return rdma_alloc_hw_stats_struct(dev->hw_stat_descs,
					  dev->num_hw_stats,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* Reads every counter, whichever @index the core asks for. */
int vhcad_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct vhca_dev *dev = to_vhca_dev(ibdev);
	u64 cc[VHCA_CC_STATS_NUM];
	unsigned int i, n;

	if (port != VHCA_PORT_NUM || stats->num_counters != dev->num_hw_stats)
		return -EINVAL;

	for (i = 0; i < VHCA_HW_STATS_NUM; i++)
		stats->value[i] = vhcad_read_counter(dev,
						     VHCA_HW_STATS_FIRST + i);
	if (!dev->has_cc)
		return dev->num_hw_stats;
	vhcad_cc_read_counters(dev, cc);
	n = VHCA_HW_STATS_NUM;
	for (i = 0; i < VHCA_CC_STATS_NUM; i++)
		if (vhcad_cc_stat_in_rdma(i))
			stats->value[n++] = cc[i];
	return dev->num_hw_stats;
}
