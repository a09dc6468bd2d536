/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca: driver for the vhca virtual RoCEv2 HCA (docs/specs/vhca.rst).
 *
 * One PCI function carries an Ethernet NIC (a net_device) and a RoCEv2
 * RDMA engine (an ib_device tied to that net_device).  Both are driven
 * through BAR0 registers, an admin queue and an async event queue.
 */

#ifndef _VHCA_H_
#define _VHCA_H_

#include <linux/completion.h>
#include <linux/interrupt.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "vhca_hw.h"

#define DRV_MODULE_NAME		"vhca"

#define VHCA_IRQ_NAME_SIZE	32

/* Ring sizes the driver configures (log2 of entries). */
#define VHCA_ADMQ_LOG_SIZE	6
#define VHCA_AEQ_LOG_SIZE	8
#define VHCA_ETH_TX_LOG_SIZE	8
#define VHCA_ETH_RX_LOG_SIZE	8

/* How long an admin command may take before the driver gives up on it. */
#define VHCA_ADMIN_TIMEOUT_MS	5000

/* The device's only port. */
#define VHCA_PORT_NUM		1

/*
 * vhca_hw.h declares every multi-byte field as a plain integer so that the
 * device model, the provider and this driver share one definition; the
 * device is little-endian.  These helpers make the byte-order conversion
 * explicit (and sparse-clean) at every access.
 */
static inline u16 vhca_cpu_to_dev16(u16 v)
{
	return (__force u16)cpu_to_le16(v);
}

static inline u32 vhca_cpu_to_dev32(u32 v)
{
	return (__force u32)cpu_to_le32(v);
}

static inline u64 vhca_cpu_to_dev64(u64 v)
{
	return (__force u64)cpu_to_le64(v);
}

static inline u16 vhca_dev_to_cpu16(u16 v)
{
	return le16_to_cpu((__force __le16)v);
}

static inline u32 vhca_dev_to_cpu32(u32 v)
{
	return le32_to_cpu((__force __le32)v);
}

static inline u64 vhca_dev_to_cpu64(u64 v)
{
	return le64_to_cpu((__force __le64)v);
}

struct vhca_admin_slot {
	struct completion done;
	u32 token;		/* token of the command waiting in this slot */
	bool waiting;
};

struct vhca_admin_queue {
	struct vhca_admin_cmd *ring;
	dma_addr_t ring_dma;
	/* Buffer the device fills for commands that return data by DMA. */
	void *dma_buf;
	dma_addr_t dma_buf_dma;
	struct vhca_admin_slot *slots;
	spinlock_t slot_lock;	/* slots[].waiting and .token vs. the AEQ */
	struct mutex lock;	/* one command at a time: pi, token, dma_buf */
	u32 pi;
	u32 next_token;
};

struct vhca_eq {
	struct vhca_eqe *ring;
	dma_addr_t ring_dma;
	u32 ci;
	char irq_name[VHCA_IRQ_NAME_SIZE];
};

struct vhca_eth_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;		/* bytes mapped */
};

struct vhca_eth_stats {
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t errors;
	struct u64_stats_sync syncp;
};

/* A TX or RX descriptor ring; head and tail are free-running indices. */
struct vhca_eth_ring {
	struct vhca_eth_desc *desc;
	dma_addr_t desc_dma;
	struct vhca_eth_buf *bufs;
	u32 mask;		/* entries - 1 */
	u32 head;		/* next descriptor the driver posts */
	u32 tail;		/* next descriptor the device completes */
	struct vhca_eth_stats stats;	/* kept across ring restarts */
};

/* netdev_priv() of the vhca net_device. */
struct vhca_eth {
	struct vhca_dev *dev;
	struct net_device *netdev;
	struct napi_struct napi;
	struct vhca_eth_ring tx;
	struct vhca_eth_ring rx;
	u32 rx_buf_size;
	bool rings_up;
	spinlock_t ctrl_lock;	/* ctrl and the ETH_CTRL register */
	u32 ctrl;
	int irq;
	char irq_name[VHCA_IRQ_NAME_SIZE];
};

struct vhca_dev {
	struct ib_device ibdev;	/* first: allocated by ib_alloc_device() */
	struct pci_dev *pdev;
	void __iomem *regs;	/* BAR0 */
	phys_addr_t db_bar_start;	/* BAR2: one doorbell page per uctx */
	u32 num_db_pages;
	u32 caps;		/* VHCA_CAP_* */
	unsigned int num_vectors;	/* MSI-X vectors allocated */

	struct vhca_admin_queue admq;
	struct vhca_eq aeq;
	/* QUERY_DEVICE answer, converted to CPU byte order. */
	struct vhca_device_attr attr;
	u8 perm_addr[ETH_ALEN];

	struct net_device *netdev;

	/*
	 * Link changes arrive as PORT_CHANGE events in interrupt context; the
	 * work applies STATUS.LINK_UP to the net_device carrier and to the
	 * RDMA port.  The flags say which of the two may be touched.
	 */
	struct work_struct link_work;
	struct mutex link_lock;	/* the flags below and link reporting */
	bool link_to_netdev;
	bool link_to_ibdev;
	bool ib_port_active;	/* last state reported to the RDMA core */

	spinlock_t counter_lock;	/* COUNTERS: LO read latches HI */
};

static inline struct vhca_dev *to_vhca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vhca_dev, ibdev);
}

static inline u32 vhca_reg_read(struct vhca_dev *dev, u32 reg)
{
	return readl(dev->regs + reg);
}

static inline void vhca_reg_write(struct vhca_dev *dev, u32 reg, u32 val)
{
	writel(val, dev->regs + reg);
}

static inline void vhca_reg_write64(struct vhca_dev *dev, u32 reg_lo, u64 val)
{
	vhca_reg_write(dev, reg_lo, lower_32_bits(val));
	vhca_reg_write(dev, reg_lo + 4, upper_32_bits(val));
}

/* vhca_main.c */
u64 vhca_read_counter(struct vhca_dev *dev, enum vhca_counter counter);
void vhca_fw_version_str(struct vhca_dev *dev, char *str, size_t len);

/* vhca_admin.c */
int vhca_admin_create(struct vhca_dev *dev);
void vhca_admin_destroy(struct vhca_dev *dev);
void vhca_admin_complete(struct vhca_dev *dev, u32 slot, u32 token);
int vhca_admin_exec(struct vhca_dev *dev, u16 opcode, const void *in,
		    size_t in_len, void *out, size_t out_len);
int vhca_admin_exec_dma(struct vhca_dev *dev, u16 opcode, void *buf,
			size_t len);

/* vhca_cmd.c */
int vhca_cmd_query_device(struct vhca_dev *dev, struct vhca_device_attr *attr);
int vhca_cmd_query_port(struct vhca_dev *dev, struct vhca_port_attr *attr);
int vhca_cmd_add_gid(struct vhca_dev *dev, u16 index, u8 type,
		     const u8 gid[16]);
int vhca_cmd_del_gid(struct vhca_dev *dev, u16 index);
int vhca_cmd_set_mac(struct vhca_dev *dev, const u8 *mac);
int vhca_cmd_set_mtu(struct vhca_dev *dev, u32 mtu);
int vhca_cmd_alloc_uctx(struct vhca_dev *dev, u32 *db_page);
int vhca_cmd_dealloc_uctx(struct vhca_dev *dev, u32 db_page);

/* vhca_eq.c */
int vhca_aeq_create(struct vhca_dev *dev);
void vhca_aeq_destroy(struct vhca_dev *dev);

/* vhca_link.c */
void vhca_link_init(struct vhca_dev *dev);
void vhca_link_fini(struct vhca_dev *dev);
bool vhca_link_is_up(struct vhca_dev *dev);
void vhca_link_to_netdev(struct vhca_dev *dev, bool enable);
void vhca_link_to_ibdev(struct vhca_dev *dev, bool enable, bool port_active);

/* vhca_netdev.c */
int vhca_netdev_create(struct vhca_dev *dev);
void vhca_netdev_destroy(struct vhca_dev *dev);
void vhca_netdev_set_link(struct vhca_dev *dev, bool up);

/* vhca_ethtool.c */
extern const struct ethtool_ops vhca_ethtool_ops;

/* vhca_ib.c */
int vhca_ib_register(struct vhca_dev *dev);
void vhca_ib_unregister(struct vhca_dev *dev);
void vhca_ib_port_event(struct vhca_dev *dev, bool active);

#endif /* _VHCA_H_ */
