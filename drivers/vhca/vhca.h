/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca: driver for the vhca virtual RoCEv2 HCA (docs/specs/vhca.rst).
 *
 * One PCI function carries an Ethernet NIC (a net_device) and a RoCEv2
 * RDMA engine (an ib_device tied to that net_device).  Both are driven
 * through BAR0 registers, an admin queue and an async event queue.  With
 * VHCA_CAP_IB the port is InfiniBand instead: the same RDMA engine on an
 * IB link, no net_device (IPoIB is the kernel's), and the port's subnet
 * management and performance agents behind MAD_IFC (vhca_mad.c).
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
#include <linux/xarray.h>
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

/* The counters the RDMA port shows (vhca_hw_counters.c): RoCE onwards. */
#define VHCA_HW_STATS_FIRST	VHCA_CNT_ROCE_TX_PACKETS
#define VHCA_HW_STATS_NUM	(VHCA_CNT_MAX - VHCA_HW_STATS_FIRST)
/* QUERY_CC's counters: congestion control's, then PFC's per priority. */
#define VHCA_PFC_STATS_NUM	(VHCA_PFC_CNT_MAX * VHCA_PFC_PRIORITIES)
#define VHCA_CC_STATS_NUM	(VHCA_CC_CNT_MAX + VHCA_PFC_STATS_NUM)

/* QUERY_DEVICE's answer (struct vhca_device_attr) in CPU byte order. */
struct vhca_dev_attr {
	u64 fw_version;		/* major << 32 | minor << 16 | sub */
	u64 sys_image_guid;
	u64 node_guid;
	u64 max_mr_size;
	u64 page_size_cap;
	u32 vendor_id;
	u32 vendor_part_id;
	u32 hw_ver;
	u32 max_qp;
	u32 max_qp_wr;
	u32 max_sge;
	u32 max_cq;
	u32 max_cqe;
	u32 max_mr;
	u32 max_pd;
	u32 max_qp_rd_atom;
	u32 max_qp_init_rd_atom;
	u32 max_srq;
	u32 max_srq_wr;
	u32 max_srq_sge;
	u32 max_xrcd;
	u32 max_msg_size;
	u32 max_inline_data;
	u32 max_uctx;
	u32 num_comp_vectors;
	u32 gid_tbl_len;
	u32 max_pkeys;
	u32 cap_flags;		/* VHCA_DEV_CAP_* */
	u32 max_mw;		/* memory windows; 0: none */
};

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

/*
 * A page list the device reads (docs/specs/vhca.rst, "RDMA resources"): npages
 * u64 page addresses in coherent memory, behind a directory of 4 KiB pages
 * at level 2.  An MR's list lives as long as the MR (the device reads it at
 * each access); a queue's goes once the device has created the queue.
 */
struct vhca_pbl {
	__le64 *entries;
	dma_addr_t entries_dma;
	size_t entries_size;
	__le64 *dir;		/* level 2 only: the 4 KiB pages of entries */
	dma_addr_t dir_dma;
	u32 npages;
	u8 levels;		/* 1 or 2 */
};

/*
 * A queue ring on 4 KiB pages: coherent memory for the kernel's own queues,
 * or the pinned pages of a ring the provider allocated.
 */
struct vhca_queue_buf {
	void *kva;		/* kernel queues */
	dma_addr_t dma;
	size_t size;		/* bytes allocated (kernel) or pinned (user) */
	struct ib_umem *umem;	/* user queues */
	struct vhca_pbl pbl;	/* until the queue is created */
};

/* A completion event queue on one MSI-X vector (vhca_ceq.c). */
struct vhca_ceq {
	struct vhca_dev *dev;
	struct vhca_queue_buf buf;
	u32 eqn;
	u32 ci;
	u8 log_size;
	int irq;
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
	/*
	 * ndo_set_rx_mode runs atomically and admin commands sleep: the work
	 * sends the multicast list.  rx_filter_live (under the netdev's
	 * address lock) says whether it may be queued: from open to stop.
	 */
	struct work_struct rx_filter_work;
	bool rx_filter_live;
	struct vhca_rx_filter rx_filter;	/* the work's mailbox */
};

struct vhca_dev;

/*
 * What the link work tells the RDMA port (vhcad_link_to_ibdev()), in
 * process context under link_lock.
 */
struct vhca_link_ibdev_ops {
	/* The port became active, or stopped being active. */
	void (*port_event)(struct vhca_dev *dev, bool active);
	/*
	 * IB: the logical port state (enum ib_port_state) the subnet
	 * manager set, or a negative errno if it cannot be read; NULL:
	 * the port is active when the link is up (RoCE).
	 */
	int (*port_state)(struct vhca_dev *dev);
	/* IB: a PORT_MGMT event, an enum ib_event_type for the port. */
	void (*mgmt_event)(struct vhca_dev *dev, enum ib_event_type event);
};

struct vhca_dev {
	struct ib_device ibdev;	/* first: allocated by ib_alloc_device() */
	struct pci_dev *pdev;
	void __iomem *regs;	/* BAR0, mapped by the PCI binding */
	phys_addr_t db_bar_start;	/* BAR2: one doorbell page per uctx */
	u32 num_db_pages;
	u32 caps;		/* VHCA_CAP_* */
	unsigned int num_vectors;	/* MSI-X vectors allocated */

	struct vhca_admin_queue admq;
	struct vhca_eq aeq;
	struct vhca_dev_attr attr;
	u8 perm_addr[ETH_ALEN];

	struct net_device *netdev;

	/*
	 * Link changes arrive as PORT_CHANGE events in interrupt context; the
	 * work applies STATUS.LINK_UP to the net_device carrier and to the
	 * RDMA port, through what each registered (vhcad_link_to_netdev(),
	 * vhcad_link_to_ibdev()): the link sits below both and calls neither
	 * by name.  NULL: that one is not told.  On the IB port the logical
	 * port state makes the RDMA port active, and PORT_MGMT events wait
	 * in port_mgmt_pending (one bit per enum ib_event_type) for the work.
	 */
	struct work_struct link_work;
	struct mutex link_lock;	/* the hooks below and link reporting */
	void (*link_netdev_notify)(struct vhca_dev *dev, bool up);
	const struct vhca_link_ibdev_ops *link_ibdev;
	bool ib_port_active;	/* last state reported to the RDMA core */
	unsigned long port_mgmt_pending;

	/* IB port: Set(NodeDescription) and ibdev.node_desc, together. */
	struct mutex node_desc_lock;
	/* IB port: the MAD agent that sends the SMA's traps (vhca_mad.c). */
	struct mutex trap_lock;
	struct ib_mad_agent *trap_agent;

	spinlock_t counter_lock;	/* COUNTERS: LO read latches HI */
	/*
	 * The names of the port's hw_counters, as long as the ib_device:
	 * the COUNTERS registers from RoCE on, then (has_cc) the congestion
	 * counters QUERY_CC returns, PFC's included (named in pfc_names).
	 */
	struct rdma_stat_desc hw_stat_descs[VHCA_HW_STATS_NUM +
					    VHCA_CC_STATS_NUM];
	char pfc_names[VHCA_PFC_STATS_NUM][ETH_GSTRING_LEN];
	unsigned int num_hw_stats;

	/*
	 * RoCE congestion control (vhca_cc.c): the device's SET_CC
	 * configuration as last set, behind devlink runtime parameters.
	 */
	bool has_cc;
	struct mutex cc_lock;	/* cc and the SET_CC that changes it */
	struct vhca_cc_config cc;
	struct devlink *devlink;
	struct devlink_param *cc_params;

	/*
	 * RDMA resources, when the device has them (QUERY_DEVICE max_qp > 0):
	 * one completion EQ per completion vector, a doorbell page of the
	 * driver's own for kernel queues, and the CQs, QPs and SRQs that
	 * events name.  Lookups happen in interrupt context.
	 */
	bool has_rdma;
	struct vhca_ceq *ceqs;
	unsigned int num_ceqs;
	u32 kernel_db_page;
	void __iomem *kernel_db;
	struct xarray cqs;
	struct xarray qps;
	struct xarray srqs;
	/*
	 * Key tags of MRs and memory windows: a new tag for each, so a stale
	 * key never matches.
	 */
	atomic_t mr_key_tag;
};

static inline struct vhca_dev *to_vhca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vhca_dev, ibdev);
}

/* The port is InfiniBand (VHCA_CAP_IB), not Ethernet. */
static inline bool vhcad_is_ib(const struct vhca_dev *dev)
{
	return dev->caps & VHCA_CAP_IB;
}

static inline u32 vhcad_reg_read(struct vhca_dev *dev, u32 reg)
{
	return readl(dev->regs + reg);
}

static inline void vhcad_reg_write(struct vhca_dev *dev, u32 reg, u32 val)
{
	writel(val, dev->regs + reg);
}

static inline void vhcad_reg_write64(struct vhca_dev *dev, u32 reg_lo, u64 val)
{
	vhcad_reg_write(dev, reg_lo, lower_32_bits(val));
	vhcad_reg_write(dev, reg_lo + 4, upper_32_bits(val));
}

/* vhca_hw_counters.c: the device's counters, for every user. */
u64 vhcad_read_counter(struct vhca_dev *dev, enum vhca_counter counter);

/* vhca_cc.c: RoCE congestion control's devlink parameters and counters. */
int vhcad_cc_init(struct vhca_dev *dev);
void vhcad_cc_fini(struct vhca_dev *dev);
int vhcad_cmd_query_cc(struct vhca_dev *dev, struct vhca_cc_query *query);
int vhcad_cc_read_counters(struct vhca_dev *dev, u64 *values);
const char *vhcad_cc_stat_name(struct vhca_dev *dev, unsigned int i);
int vhcad_cc_set_pfc(struct vhca_dev *dev, u8 enable);
int vhcad_cc_query_pfc(struct vhca_dev *dev, u64 *tx_pause, u64 *rx_pause);

/* vhca_dcb.c: PFC through DCB netlink (dcb pfc, lldptool). */
void vhcad_dcb_init(struct vhca_dev *dev, struct net_device *netdev);

/* vhca_main.c */
void vhcad_fw_version_str(struct vhca_dev *dev, char *str, size_t len);

/* vhca_admin.c */
int vhcad_admin_create(struct vhca_dev *dev);
void vhcad_admin_destroy(struct vhca_dev *dev);
void vhcad_admin_complete(struct vhca_dev *dev, u32 slot, u32 token);
int vhcad_admin_exec(struct vhca_dev *dev, u16 opcode, const void *in,
		     size_t in_len, void *out, size_t out_len);
int vhcad_admin_exec_dma(struct vhca_dev *dev, u16 opcode, void *buf,
			 size_t len);
int vhcad_admin_exec_mbox(struct vhca_dev *dev, u16 opcode, void *mbox,
			  size_t len, void *out, size_t out_len);

/* vhca_cmd.c */
int vhcad_cmd_query_device(struct vhca_dev *dev, struct vhca_dev_attr *attr);
int vhcad_cmd_query_port(struct vhca_dev *dev, struct vhca_port_attr *attr);
int vhcad_cmd_add_gid(struct vhca_dev *dev, u16 index, u8 type, u16 vlan,
		      const u8 gid[16]);
int vhcad_cmd_del_gid(struct vhca_dev *dev, u16 index);
int vhcad_cmd_set_mac(struct vhca_dev *dev, const u8 *mac);
int vhcad_cmd_set_mtu(struct vhca_dev *dev, u32 mtu);
int vhcad_cmd_set_rx_filter(struct vhca_dev *dev,
			    struct vhca_rx_filter *filter);
int vhcad_cmd_alloc_uctx(struct vhca_dev *dev, u32 *db_page);
int vhcad_cmd_dealloc_uctx(struct vhca_dev *dev, u32 db_page);
int vhcad_cmd_destroy(struct vhca_dev *dev, u16 opcode, u32 handle);
int vhcad_cmd_create_pd(struct vhca_dev *dev, u32 *pdn);
int vhcad_cmd_alloc_xrcd(struct vhca_dev *dev, u32 *xrcdn);
int vhcad_cmd_alloc_mw(struct vhca_dev *dev, u32 pdn, u8 type, u32 key_tag,
		       u32 *key);
int vhcad_cmd_create_mr(struct vhca_dev *dev, struct vhca_mr_create *mr,
			u32 *key);
int vhcad_cmd_create_eq(struct vhca_dev *dev, struct vhca_eq_create *eq,
			u32 *eqn);
int vhcad_cmd_create_cq(struct vhca_dev *dev, struct vhca_cq_create *cq,
			u32 *cqn);
int vhcad_cmd_resize_cq(struct vhca_dev *dev, struct vhca_cq_resize *resize,
			u32 *moved);
int vhcad_cmd_create_qp(struct vhca_dev *dev, struct vhca_qp_create *qp,
			u32 *qpn);
int vhcad_cmd_modify_qp(struct vhca_dev *dev, struct vhca_qp_attr *attr);
int vhcad_cmd_query_qp(struct vhca_dev *dev, u32 qpn,
		       struct vhca_qp_attr *attr);
int vhcad_cmd_create_srq(struct vhca_dev *dev, struct vhca_srq_create *srq,
			 u32 *srqn);
int vhcad_cmd_modify_srq(struct vhca_dev *dev, struct vhca_srq_attr *attr);
int vhcad_cmd_query_srq(struct vhca_dev *dev, u32 srqn,
			struct vhca_srq_attr *attr);
int vhcad_cmd_mcast(struct vhca_dev *dev, u16 opcode, u32 qpn,
		    const u8 gid[16]);
int vhcad_cmd_mad_ifc(struct vhca_dev *dev, struct vhca_mad_ifc *mad,
		      u8 *result);
int vhcad_cmd_modify_port(struct vhca_dev *dev, u8 flags, u32 set_cap_mask,
			  u32 clr_cap_mask);

/* vhca_eq.c */
int vhcad_aeq_create(struct vhca_dev *dev);
void vhcad_aeq_destroy(struct vhca_dev *dev);

/* vhca_ceq.c */
int vhcad_ceqs_create(struct vhca_dev *dev, unsigned int count);
void vhcad_ceqs_destroy(struct vhca_dev *dev);

/* vhca_queue.c */
int vhcad_pbl_alloc(struct vhca_dev *dev, struct vhca_pbl *pbl, u32 npages,
		    bool allow_level2);
void vhcad_pbl_free(struct vhca_dev *dev, struct vhca_pbl *pbl);
void vhcad_pbl_set(struct vhca_pbl *pbl, u32 index, u64 addr);
dma_addr_t vhcad_pbl_addr(const struct vhca_pbl *pbl);
int vhcad_queue_buf_alloc(struct vhca_dev *dev, struct vhca_queue_buf *buf,
			  size_t size);
int vhcad_queue_buf_pin(struct vhca_dev *dev, struct vhca_queue_buf *buf,
			u64 addr, size_t size);
int vhcad_record_pin(struct vhca_dev *dev, u64 addr, struct ib_umem **umem,
		     dma_addr_t *dma);
void vhcad_queue_buf_created(struct vhca_dev *dev, struct vhca_queue_buf *buf);
void vhcad_queue_buf_free(struct vhca_dev *dev, struct vhca_queue_buf *buf);

/* vhca_link.c */
void vhcad_link_init(struct vhca_dev *dev);
void vhcad_link_fini(struct vhca_dev *dev);
bool vhcad_link_is_up(struct vhca_dev *dev);
void vhcad_link_to_netdev(struct vhca_dev *dev,
			  void (*notify)(struct vhca_dev *dev, bool up));
void vhcad_link_to_ibdev(struct vhca_dev *dev,
			 const struct vhca_link_ibdev_ops *ops,
			 bool port_active);
void vhcad_link_port_mgmt(struct vhca_dev *dev, u8 event);

/* vhca_netdev.c */
int vhcad_netdev_create(struct vhca_dev *dev);
void vhcad_netdev_destroy(struct vhca_dev *dev);

/* vhca_ethtool.c */
extern const struct ethtool_ops vhcad_ethtool_ops;

/* vhca_ib.c */
int vhcad_ib_register(struct vhca_dev *dev);
void vhcad_ib_unregister(struct vhca_dev *dev);
void vhcad_ib_cq_event(struct vhca_dev *dev, u32 cqn);
void vhcad_ib_qp_event(struct vhca_dev *dev, u32 qpn, u8 type);
void vhcad_ib_srq_event(struct vhca_dev *dev, u32 srqn, u8 type);

/*
 * A doorbell (docs/specs/vhca.rst, "Doorbell pages"): one 64-bit write,
 * the object in the low half and the value in the high half.  writeq()
 * orders the queue entries written before it.
 */
static inline void vhcad_kernel_doorbell(struct vhca_dev *dev, u32 offset,
					 u32 object, u32 value)
{
	writeq((u64)value << 32 | object, dev->kernel_db + offset);
}

#endif /* _VHCA_H_ */
