// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Ethernet function (docs/specs/vhca.rst, "Ethernet datapath"): one TX
 * and one RX ring of 16-byte descriptors, both completed through MSI-X
 * vector 1 and NAPI.
 */

#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <net/netdev_queues.h>

#include "vhca.h"

/* Wake a stopped TX queue once this many descriptors are free again. */
#define VHCA_TX_WAKE_THRESHOLD	((1U << VHCA_ETH_TX_LOG_SIZE) / 4)

static struct vhca_eth *to_vhca_eth(struct net_device *netdev)
{
	return netdev_priv(netdev);
}

static struct device *vhcad_eth_dma_dev(struct vhca_eth *eth)
{
	return &eth->dev->pdev->dev;
}

static u32 vhcad_ring_entries(const struct vhca_eth_ring *ring)
{
	return ring->mask + 1;
}

/* Free TX descriptors; head is written by xmit, tail by NAPI. */
static u32 vhcad_tx_free(const struct vhca_eth_ring *tx)
{
	return vhcad_ring_entries(tx) -
	       (READ_ONCE(tx->head) - READ_ONCE(tx->tail));
}

/*
 * Set and clear ETH_CTRL bits; returns the register as the device has it
 * now (it leaves an enable bit 0 when it refuses the ring configuration).
 */
static u32 vhcad_eth_ctrl_update(struct vhca_eth *eth, u32 set, u32 clear)
{
	struct vhca_dev *dev = eth->dev;
	u32 now;

	spin_lock_bh(&eth->ctrl_lock);
	eth->ctrl = (eth->ctrl & ~clear) | set;
	vhcad_reg_write(dev, VHCA_REG_ETH_CTRL, eth->ctrl);
	now = vhcad_reg_read(dev, VHCA_REG_ETH_CTRL);
	spin_unlock_bh(&eth->ctrl_lock);
	return now;
}

static int vhcad_ring_alloc(struct vhca_eth *eth, struct vhca_eth_ring *ring,
			    unsigned int log_size)
{
	u32 entries = 1U << log_size;

	ring->bufs = kcalloc(entries, sizeof(*ring->bufs), GFP_KERNEL);
	if (!ring->bufs)
		return -ENOMEM;

	ring->desc = dma_alloc_coherent(vhcad_eth_dma_dev(eth),
					entries * sizeof(*ring->desc),
					&ring->desc_dma, GFP_KERNEL);
	if (!ring->desc) {
		kfree(ring->bufs);
		ring->bufs = NULL;
		return -ENOMEM;
	}

	ring->mask = entries - 1;
	ring->head = 0;
	ring->tail = 0;
	return 0;
}

static void vhcad_ring_free(struct vhca_eth *eth, struct vhca_eth_ring *ring)
{
	dma_free_coherent(vhcad_eth_dma_dev(eth),
			  vhcad_ring_entries(ring) * sizeof(*ring->desc),
			  ring->desc, ring->desc_dma);
	kfree(ring->bufs);
	ring->desc = NULL;
	ring->bufs = NULL;
}

/* Unmap and free what the device never completed; its ring is stopped. */
static void vhcad_tx_drain(struct vhca_eth *eth)
{
	struct vhca_eth_ring *tx = &eth->tx;

	for (; tx->tail != tx->head; tx->tail++) {
		struct vhca_eth_buf *buf = &tx->bufs[tx->tail & tx->mask];

		dma_unmap_single(vhcad_eth_dma_dev(eth), buf->dma, buf->len,
				 DMA_TO_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
	netdev_tx_reset_queue(netdev_get_tx_queue(eth->netdev, 0));
}

static int vhcad_rx_buf_alloc(struct vhca_eth *eth, struct vhca_eth_buf *buf,
			      bool in_napi)
{
	struct device *dma_dev = vhcad_eth_dma_dev(eth);
	struct sk_buff *skb;
	dma_addr_t dma;

	if (in_napi)
		skb = napi_alloc_skb(&eth->napi, eth->rx_buf_size);
	else
		skb = netdev_alloc_skb_ip_align(eth->netdev, eth->rx_buf_size);
	if (!skb)
		return -ENOMEM;

	dma = dma_map_single(dma_dev, skb->data, eth->rx_buf_size,
			     DMA_FROM_DEVICE);
	if (dma_mapping_error(dma_dev, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}

	buf->skb = skb;
	buf->dma = dma;
	buf->len = eth->rx_buf_size;
	return 0;
}

static void vhcad_rx_buf_free(struct vhca_eth *eth, struct vhca_eth_buf *buf)
{
	dma_unmap_single(vhcad_eth_dma_dev(eth), buf->dma, buf->len,
			 DMA_FROM_DEVICE);
	dev_kfree_skb_any(buf->skb);
	buf->skb = NULL;
}

/* Hand the buffer in the slot at head to the device (with RX_PI later). */
static void vhcad_rx_post(struct vhca_eth_ring *rx)
{
	u32 slot = rx->head & rx->mask;
	struct vhca_eth_desc *desc = &rx->desc[slot];
	struct vhca_eth_buf *buf = &rx->bufs[slot];

	desc->addr = cpu_to_le64(buf->dma);
	desc->len = cpu_to_le16(buf->len);
	desc->flags = 0;
	desc->rsvd = 0;
	rx->head++;
}

/*
 * The RX ring is kept full: every slot always holds a posted buffer, so
 * the slot the driver consumes at tail is the slot it posts next at head.
 */
static int vhcad_rx_fill(struct vhca_eth *eth)
{
	struct vhca_eth_ring *rx = &eth->rx;
	u32 i;
	int err;

	for (i = 0; i < vhcad_ring_entries(rx); i++) {
		err = vhcad_rx_buf_alloc(eth, &rx->bufs[i], false);
		if (err)
			goto err_free;
		vhcad_rx_post(rx);
	}
	return 0;

err_free:
	while (i--)
		vhcad_rx_buf_free(eth, &rx->bufs[i]);
	return err;
}

static void vhcad_rx_drain(struct vhca_eth *eth)
{
	struct vhca_eth_ring *rx = &eth->rx;
	u32 i;

	for (i = 0; i < vhcad_ring_entries(rx); i++)
		vhcad_rx_buf_free(eth, &rx->bufs[i]);
}

static void vhcad_tx_complete(struct vhca_eth *eth, int budget)
{
	struct netdev_queue *txq = netdev_get_tx_queue(eth->netdev, 0);
	struct vhca_eth_ring *tx = &eth->tx;
	unsigned int pkts = 0, bytes = 0, errors = 0, sent_bytes = 0;
	u32 head = READ_ONCE(tx->head);
	u32 tail = tx->tail;

	while (tail != head) {
		u32 slot = tail & tx->mask;
		struct vhca_eth_buf *buf = &tx->bufs[slot];
		u16 flags;

		flags = le16_to_cpu(READ_ONCE(tx->desc[slot].flags));
		if (!(flags & VHCA_ETH_DESC_DONE))
			break;
		/* Nothing of this slot is read before its DONE. */
		dma_rmb();

		dma_unmap_single(vhcad_eth_dma_dev(eth), buf->dma, buf->len,
				 DMA_TO_DEVICE);
		if (flags & VHCA_ETH_DESC_ERROR)
			errors++;
		else
			sent_bytes += buf->len;
		pkts++;
		bytes += buf->len;
		napi_consume_skb(buf->skb, budget);
		buf->skb = NULL;
		tail++;
	}

	if (!pkts)
		return;

	u64_stats_update_begin(&tx->stats.syncp);
	u64_stats_add(&tx->stats.packets, pkts - errors);
	u64_stats_add(&tx->stats.bytes, sent_bytes);
	u64_stats_add(&tx->stats.errors, errors);
	u64_stats_update_end(&tx->stats.syncp);

	WRITE_ONCE(tx->tail, tail);
	netif_txq_completed_wake(txq, pkts, bytes, vhcad_tx_free(tx),
				 VHCA_TX_WAKE_THRESHOLD);
}

static int vhcad_rx_receive(struct vhca_eth *eth, int budget)
{
	struct vhca_eth_ring *rx = &eth->rx;
	unsigned int pkts = 0, bytes = 0, errors = 0;
	int done = 0;

	while (done < budget) {
		u32 slot = rx->tail & rx->mask;
		struct vhca_eth_desc *desc = &rx->desc[slot];
		struct vhca_eth_buf *buf = &rx->bufs[slot];
		struct vhca_eth_buf fresh;
		struct sk_buff *skb;
		u16 flags, len;

		flags = le16_to_cpu(READ_ONCE(desc->flags));
		if (!(flags & VHCA_ETH_DESC_DONE))
			break;

		/* The device writes len before flags. */
		dma_rmb();
		len = le16_to_cpu(desc->len);
		rx->tail++;
		done++;

		if (unlikely((flags & VHCA_ETH_DESC_ERROR) || len < ETH_HLEN ||
			     len > buf->len)) {
			errors++;
			goto repost;
		}

		/* Without a replacement buffer, drop and reuse this one. */
		if (unlikely(vhcad_rx_buf_alloc(eth, &fresh, true))) {
			dev_core_stats_rx_dropped_inc(eth->netdev);
			goto repost;
		}

		skb = buf->skb;
		dma_unmap_single(vhcad_eth_dma_dev(eth), buf->dma, buf->len,
				 DMA_FROM_DEVICE);
		*buf = fresh;

		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, eth->netdev);
		pkts++;
		bytes += len;
		napi_gro_receive(&eth->napi, skb);
repost:
		vhcad_rx_post(rx);
	}

	if (!done)
		return 0;

	vhcad_reg_write(eth->dev, VHCA_REG_RX_PI, rx->head);

	u64_stats_update_begin(&rx->stats.syncp);
	u64_stats_add(&rx->stats.packets, pkts);
	u64_stats_add(&rx->stats.bytes, bytes);
	u64_stats_add(&rx->stats.errors, errors);
	u64_stats_update_end(&rx->stats.syncp);
	return done;
}

static int vhcad_napi_poll(struct napi_struct *napi, int budget)
{
	struct vhca_eth *eth = container_of(napi, struct vhca_eth, napi);
	int done;

	vhcad_tx_complete(eth, budget);
	done = vhcad_rx_receive(eth, budget);

	/*
	 * Arming vector 1 interrupts at once if anything completed since the
	 * last poll, so nothing is missed between the poll and the arm.
	 */
	if (done < budget && napi_complete_done(napi, done))
		vhcad_reg_write(eth->dev, VHCA_REG_ETH_IRQ_ARM, 1);

	return done;
}

static irqreturn_t vhcad_eth_irq(int irq, void *data)
{
	struct vhca_eth *eth = data;

	/* The device disarmed the vector when it sent this interrupt. */
	napi_schedule_irqoff(&eth->napi);
	return IRQ_HANDLED;
}

/* Rings and RX buffers for the current MTU. */
static int vhcad_eth_alloc(struct vhca_eth *eth)
{
	int err;

	/* Frames are up to MTU + 18 bytes: Ethernet header and a VLAN tag. */
	eth->rx_buf_size = eth->netdev->mtu + ETH_HLEN + VLAN_HLEN;

	err = vhcad_ring_alloc(eth, &eth->tx, VHCA_ETH_TX_LOG_SIZE);
	if (err)
		goto err_log;
	err = vhcad_ring_alloc(eth, &eth->rx, VHCA_ETH_RX_LOG_SIZE);
	if (err)
		goto err_free_tx;
	err = vhcad_rx_fill(eth);
	if (err)
		goto err_free_rx;
	return 0;

err_free_rx:
	vhcad_ring_free(eth, &eth->rx);
err_free_tx:
	vhcad_ring_free(eth, &eth->tx);
err_log:
	netdev_err(eth->netdev, "cannot allocate the Ethernet rings\n");
	return err;
}

/* The device must have stopped the rings. */
static void vhcad_eth_free(struct vhca_eth *eth)
{
	vhcad_tx_drain(eth);
	vhcad_rx_drain(eth);
	vhcad_ring_free(eth, &eth->rx);
	vhcad_ring_free(eth, &eth->tx);
}

static int vhcad_eth_up(struct vhca_eth *eth)
{
	struct net_device *netdev = eth->netdev;
	struct vhca_dev *dev = eth->dev;
	u32 enable = VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE;
	u32 ctrl;
	int err;

	err = vhcad_eth_alloc(eth);
	if (err)
		return err;

	vhcad_reg_write64(dev, VHCA_REG_TX_BASE_LO, eth->tx.desc_dma);
	vhcad_reg_write(dev, VHCA_REG_TX_LOG_SIZE, VHCA_ETH_TX_LOG_SIZE);
	vhcad_reg_write64(dev, VHCA_REG_RX_BASE_LO, eth->rx.desc_dma);
	vhcad_reg_write(dev, VHCA_REG_RX_LOG_SIZE, VHCA_ETH_RX_LOG_SIZE);

	napi_enable(&eth->napi);

	/* Enabling resets the ring indices: post the buffers after it. */
	ctrl = vhcad_eth_ctrl_update(eth, enable, 0);
	if ((ctrl & enable) != enable) {
		netdev_err(netdev, "device refused the Ethernet rings (ERROR %u)\n",
			   vhcad_reg_read(dev, VHCA_REG_ERROR));
		vhcad_eth_ctrl_update(eth, 0, enable);
		napi_disable(&eth->napi);
		vhcad_eth_free(eth);
		return -EIO;
	}
	vhcad_reg_write(dev, VHCA_REG_RX_PI, eth->rx.head);

	netdev_tx_reset_queue(netdev_get_tx_queue(netdev, 0));
	netif_tx_start_all_queues(netdev);
	vhcad_reg_write(dev, VHCA_REG_ETH_IRQ_ARM, 1);
	eth->rings_up = true;
	return 0;
}

static void vhcad_eth_down(struct vhca_eth *eth)
{
	if (!eth->rings_up)
		return;
	eth->rings_up = false;

	netif_tx_disable(eth->netdev);
	napi_disable(&eth->napi);
	/* Stops the rings: the device no longer touches their memory. */
	vhcad_eth_ctrl_update(eth, 0, VHCA_ETH_CTRL_TX_ENABLE |
				     VHCA_ETH_CTRL_RX_ENABLE);

	vhcad_eth_free(eth);
}

/* Whether ndo_set_rx_mode may queue the filter work from now on. */
static void vhcad_rx_filter_set_live(struct vhca_eth *eth, bool live)
{
	netif_addr_lock_bh(eth->netdev);
	eth->rx_filter_live = live;
	netif_addr_unlock_bh(eth->netdev);
}

static int vhcad_open(struct net_device *netdev)
{
	struct vhca_eth *eth = to_vhca_eth(netdev);
	int err;

	err = vhcad_eth_up(eth);
	if (err)
		return err;

	/* The core calls ndo_set_rx_mode once the interface is up. */
	vhcad_rx_filter_set_live(eth, true);
	return 0;
}

static int vhcad_stop(struct net_device *netdev)
{
	struct vhca_eth *eth = to_vhca_eth(netdev);

	/*
	 * ndo_set_rx_mode may still run (dev_mc_add needs no RTNL): once it
	 * sees rx_filter_live false nothing queues the work again.
	 */
	vhcad_rx_filter_set_live(eth, false);
	cancel_work_sync(&eth->rx_filter_work);
	vhcad_eth_down(eth);
	return 0;
}

static netdev_tx_t vhcad_start_xmit(struct sk_buff *skb,
				    struct net_device *netdev)
{
	struct netdev_queue *txq = netdev_get_tx_queue(netdev, 0);
	struct vhca_eth *eth = to_vhca_eth(netdev);
	struct device *dma_dev = vhcad_eth_dma_dev(eth);
	struct vhca_eth_ring *tx = &eth->tx;
	struct vhca_eth_desc *desc;
	struct vhca_eth_buf *buf;
	unsigned int len;
	dma_addr_t dma;
	u32 slot;

	if (unlikely(!vhcad_tx_free(tx))) {
		/* The queue stops before the ring fills: not reached. */
		netif_tx_stop_queue(txq);
		return NETDEV_TX_BUSY;
	}

	/* No NETIF_F_SG: the stack hands us linear skbs; be sure. */
	if (skb_linearize(skb) || skb->len > VHCA_ETH_MAX_FRAME)
		goto drop;

	len = skb->len;
	dma = dma_map_single(dma_dev, skb->data, len, DMA_TO_DEVICE);
	if (dma_mapping_error(dma_dev, dma))
		goto drop;

	slot = tx->head & tx->mask;
	buf = &tx->bufs[slot];
	buf->skb = skb;
	buf->dma = dma;
	buf->len = len;

	desc = &tx->desc[slot];
	desc->addr = cpu_to_le64(dma);
	desc->len = cpu_to_le16(len);
	desc->flags = 0;
	desc->rsvd = 0;

	skb_tx_timestamp(skb);
	WRITE_ONCE(tx->head, tx->head + 1);

	netif_txq_maybe_stop(txq, vhcad_tx_free(tx), 1, VHCA_TX_WAKE_THRESHOLD);
	/* writel() orders the descriptor in memory before the doorbell. */
	if (__netdev_tx_sent_queue(txq, len, netdev_xmit_more()))
		vhcad_reg_write(eth->dev, VHCA_REG_TX_PI, tx->head);
	return NETDEV_TX_OK;

drop:
	dev_core_stats_tx_dropped_inc(netdev);
	dev_kfree_skb_any(skb);
	/* Earlier skbs of an xmit_more batch may still wait for the doorbell. */
	vhcad_reg_write(eth->dev, VHCA_REG_TX_PI, tx->head);
	return NETDEV_TX_OK;
}

/*
 * Send the multicast list as it is now (docs/specs/vhca.rst, "RX
 * filter"): every run takes the latest list, so a burst of changes ends
 * with the device holding the last one.
 */
static void vhcad_rx_filter_work(struct work_struct *work)
{
	struct vhca_eth *eth = container_of(work, struct vhca_eth,
					    rx_filter_work);
	struct vhca_rx_filter *filter = &eth->rx_filter;
	struct net_device *netdev = eth->netdev;
	struct netdev_hw_addr *ha;
	u32 flags = 0, count = 0;
	int err;

	memset(filter, 0, sizeof(*filter));
	netif_addr_lock_bh(netdev);
	if (netdev->flags & IFF_ALLMULTI) {
		flags = VHCA_RX_FILTER_ALLMULTI;
	} else {
		netdev_for_each_mc_addr(ha, netdev) {
			/* The device refuses a list with a unicast entry. */
			if (!is_multicast_ether_addr(ha->addr))
				continue;
			if (count == VHCA_MAX_MCAST_MACS) {
				flags = VHCA_RX_FILTER_ALLMULTI;
				count = 0;
				break;
			}
			ether_addr_copy(filter->mac[count++], ha->addr);
		}
	}
	netif_addr_unlock_bh(netdev);

	filter->flags = cpu_to_le32(flags);
	filter->count = cpu_to_le32(count);
	/* On failure the device keeps the filter it had. */
	err = vhcad_cmd_set_rx_filter(eth->dev, filter);
	if (err && net_ratelimit())
		netdev_warn(netdev, "cannot program the multicast filter: %d\n",
			    err);
}

/* Called with the netdev's address lock held, bottom halves off. */
static void vhcad_set_rx_mode(struct net_device *netdev)
{
	struct vhca_eth *eth = to_vhca_eth(netdev);

	/*
	 * With secondary unicast addresses the core turns on IFF_PROMISC (no
	 * IFF_UNICAST_FLT).
	 */
	if (netdev->flags & IFF_PROMISC)
		vhcad_eth_ctrl_update(eth, VHCA_ETH_CTRL_PROMISC, 0);
	else
		vhcad_eth_ctrl_update(eth, 0, VHCA_ETH_CTRL_PROMISC);

	if (eth->rx_filter_live)
		schedule_work(&eth->rx_filter_work);
}

static int vhcad_set_mac_address(struct net_device *netdev, void *p)
{
	struct vhca_eth *eth = to_vhca_eth(netdev);
	struct sockaddr *addr = p;
	int err;

	err = eth_prepare_mac_addr_change(netdev, p);
	if (err)
		return err;

	err = vhcad_cmd_set_mac(eth->dev, addr->sa_data);
	if (err)
		return err;

	eth_commit_mac_addr_change(netdev, p);
	return 0;
}

static int vhcad_change_mtu(struct net_device *netdev, int new_mtu)
{
	struct vhca_eth *eth = to_vhca_eth(netdev);
	bool running = netif_running(netdev);
	int err;

	err = vhcad_cmd_set_mtu(eth->dev, new_mtu);
	if (err)
		return err;

	/* RX buffers are sized for the MTU: restart the rings. */
	if (running)
		vhcad_eth_down(eth);
	WRITE_ONCE(netdev->mtu, new_mtu);
	if (running)
		return vhcad_eth_up(eth);
	return 0;
}

static void vhcad_ring_stats(const struct vhca_eth_stats *stats, u64 *packets,
			     u64 *bytes, u64 *errors)
{
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&stats->syncp);
		*packets = u64_stats_read(&stats->packets);
		*bytes = u64_stats_read(&stats->bytes);
		*errors = u64_stats_read(&stats->errors);
	} while (u64_stats_fetch_retry(&stats->syncp, start));
}

static void vhcad_get_stats64(struct net_device *netdev,
			      struct rtnl_link_stats64 *stats)
{
	struct vhca_eth *eth = to_vhca_eth(netdev);
	struct vhca_dev *dev = eth->dev;

	vhcad_ring_stats(&eth->tx.stats, &stats->tx_packets, &stats->tx_bytes,
			 &stats->tx_errors);
	vhcad_ring_stats(&eth->rx.stats, &stats->rx_packets, &stats->rx_bytes,
			 &stats->rx_errors);

	/* Frames the device dropped before they reached the RX ring. */
	stats->rx_missed_errors = vhcad_read_counter(dev,
						     VHCA_CNT_RX_NO_BUFFER);
	stats->rx_length_errors = vhcad_read_counter(dev, VHCA_CNT_RX_ERRORS);
	stats->rx_errors += stats->rx_length_errors;
}

static const struct net_device_ops vhcad_netdev_ops = {
	.ndo_open		= vhcad_open,
	.ndo_stop		= vhcad_stop,
	.ndo_start_xmit		= vhcad_start_xmit,
	.ndo_set_rx_mode	= vhcad_set_rx_mode,
	.ndo_set_mac_address	= vhcad_set_mac_address,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_change_mtu		= vhcad_change_mtu,
	.ndo_get_stats64	= vhcad_get_stats64,
};

/* From the link work, under dev->link_lock. */
static void vhcad_netdev_set_link(struct vhca_dev *dev, bool up)
{
	if (up)
		netif_carrier_on(dev->netdev);
	else
		netif_carrier_off(dev->netdev);
}

int vhcad_netdev_create(struct vhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	struct net_device *netdev;
	struct vhca_eth *eth;
	int err;

	netdev = alloc_etherdev(sizeof(*eth));
	if (!netdev)
		return -ENOMEM;
	SET_NETDEV_DEV(netdev, &pdev->dev);

	eth = to_vhca_eth(netdev);
	eth->dev = dev;
	eth->netdev = netdev;
	spin_lock_init(&eth->ctrl_lock);
	INIT_WORK(&eth->rx_filter_work, vhcad_rx_filter_work);
	u64_stats_init(&eth->tx.stats.syncp);
	u64_stats_init(&eth->rx.stats.syncp);

	netdev->netdev_ops = &vhcad_netdev_ops;
	netdev->ethtool_ops = &vhcad_ethtool_ops;
	vhcad_dcb_init(dev, netdev);
	netdev->min_mtu = VHCA_MIN_MTU;
	netdev->max_mtu = VHCA_MAX_MTU;
	netdev->priv_flags |= IFF_LIVE_ADDR_CHANGE;
	/* The device comes out of reset with its permanent MAC and MTU 1500. */
	eth_hw_addr_set(netdev, dev->perm_addr);
	ether_addr_copy(netdev->perm_addr, dev->perm_addr);

	netif_napi_add(netdev, &eth->napi, vhcad_napi_poll);
	netif_carrier_off(netdev);

	eth->irq = pci_irq_vector(pdev, VHCA_VECTOR_ETH);
	snprintf(eth->irq_name, sizeof(eth->irq_name), "vhca-eth@pci:%s",
		 pci_name(pdev));
	err = request_irq(eth->irq, vhcad_eth_irq, 0, eth->irq_name, eth);
	if (err) {
		dev_err(&pdev->dev, "cannot request the Ethernet interrupt: %d\n",
			err);
		goto err_free_netdev;
	}

	err = register_netdev(netdev);
	if (err) {
		dev_err(&pdev->dev, "cannot register the net_device: %d\n", err);
		goto err_free_irq;
	}

	dev->netdev = netdev;
	vhcad_link_to_netdev(dev, vhcad_netdev_set_link);
	return 0;

err_free_irq:
	free_irq(eth->irq, eth);
err_free_netdev:
	free_netdev(netdev);
	return err;
}

void vhcad_netdev_destroy(struct vhca_dev *dev)
{
	struct net_device *netdev = dev->netdev;
	struct vhca_eth *eth = to_vhca_eth(netdev);

	vhcad_link_to_netdev(dev, NULL);
	/* Closes the interface: vhcad_stop() cancels the filter work. */
	unregister_netdev(netdev);
	free_irq(eth->irq, eth);
	free_netdev(netdev);
	dev->netdev = NULL;
}
