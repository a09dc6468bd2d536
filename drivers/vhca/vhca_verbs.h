/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca: the ib_device_ops the driver implements: the device and port
 * queries, the RoCE GID table or the InfiniBand port's management (MADs,
 * P_Keys, GIDs), user contexts with their doorbell page, and, when the
 * device has an RDMA engine with resources, PDs, MRs, CQs, memory
 * windows, RC, UC, UD, GSI and (IB) SMI QPs, shared receive queues,
 * address handles, multicast attachment and the kernel's data path.
 */

#ifndef _VHCA_VERBS_H_
#define _VHCA_VERBS_H_

#include <rdma/ib_smi.h>
#include <rdma/ib_verbs.h>

#include "vhca.h"

struct vhca_ucontext {
	struct ib_ucontext ibucontext;
	u32 db_page;		/* index of this context's page in BAR2 */
	struct rdma_user_mmap_entry *db_entry;
};

struct vhca_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* An XRC domain (annex A14): a number from the device (ALLOC_XRCD). */
struct vhca_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;
};

struct vhca_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;	/* user MRs */
	struct vhca_pbl pbl;	/* user MRs: the device reads it on access */
	int access;		/* user MRs: IB_ACCESS_* as registered */
	bool invalid;		/* a failed rereg destroyed the device MR */
	/*
	 * Fast-register MRs: pbl holds up to pbl.npages pages, of which
	 * map_mr_sg filled npages for the next IB_WR_REG_MR to name.
	 */
	bool fast_reg;
	u32 npages;
};

/* A memory window (vhca_mw.c): the device holds all of its state. */
struct vhca_mw {
	struct ib_mw ibmw;
};

struct vhca_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u8 log_size;
	struct vhca_ceq *ceq;	/* where its COMPLETION events arrive */
	struct vhca_queue_buf buf;	/* the ring */
	struct ib_umem *dbrec_umem;	/* user CQs: the provider's dbrec */
	struct mutex resize_mutex;	/* one resize at a time; vs. clean */
	/* kernel CQs */
	spinlock_t lock;	/* ci, the ring's consumer side, resizing */
	u32 ci;			/* free running */
	__le32 *dbrec;		/* ci, read by the device when full */
	dma_addr_t dbrec_dma;	/* apart from the ring, which resize swaps */
	bool resizing;		/* RESIZE_CQ runs: no polling, no arming */
	u32 arm_pending;	/* VHCA_CQ_ARM_* asked for while resizing */
};

/* An address handle: the AV each UD send WQE carries (vhca_ah.c). */
struct vhca_ah {
	struct ib_ah ibah;
	struct vhca_ud_av av;	/* device byte order, ready to copy */
};

/* A kernel QP's send or receive queue. */
struct vhca_wq {
	spinlock_t lock;	/* pi and posting */
	u32 pi;			/* WQEs posted, free running */
	u32 ci;			/* WQEs completed: written under the CQ lock */
	u64 *wr_ids;		/* the caller's wr_id of each slot */
};

/*
 * A shared receive queue (vhca_srq.c): a ring of receive WQEs and the
 * consumer record where the device counts the WQEs it has taken.
 */
struct vhca_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	u32 max_sge;
	struct mutex mutex;	/* modify_srq and query_srq, one at a time */
	u8 log_size;		/* of the ring the device reads */
	struct vhca_queue_buf buf;	/* the ring */
	struct ib_umem *ci_umem;	/* user SRQs: the provider's record */
	/* kernel SRQs */
	spinlock_t lock;	/* pi, the ring (and the one it moves to) */
	u32 pi;			/* WQEs posted, free running */
	u32 taken;		/* the record's count when last read */
	__le32 *ci_rec;		/* WQEs taken, written by the device */
	dma_addr_t ci_dma;
	/* While MODIFY_SRQ moves the SRQ: the new ring, posted to as well. */
	struct vhca_queue_buf *moving_to;
	u8 moving_log_size;
};

struct vhca_qp {
	struct ib_qp ibqp;
	u32 qpn;
	struct mutex mutex;	/* state vs. modify_qp */
	enum ib_qp_state state;
	u8 sq_log_size;
	u8 rq_log_size;
	bool sq_sig_all;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline_data;
	u32 dest_qpn;		/* for the RoCEv2 UDP source port */
	struct vhca_queue_buf sq_buf;
	struct vhca_queue_buf rq_buf;
	/* kernel QPs */
	struct vhca_wq sq;
	struct vhca_wq rq;
};

static inline struct vhca_pd *to_vhca_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct vhca_pd, ibpd);
}

static inline struct vhca_xrcd *to_vhca_xrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct vhca_xrcd, ibxrcd);
}

static inline struct vhca_mr *to_vhca_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct vhca_mr, ibmr);
}

static inline struct vhca_cq *to_vhca_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct vhca_cq, ibcq);
}

static inline struct vhca_qp *to_vhca_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct vhca_qp, ibqp);
}

static inline struct vhca_srq *to_vhca_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct vhca_srq, ibsrq);
}

static inline struct vhca_ah *to_vhca_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct vhca_ah, ibah);
}

/* vhca_verbs.c */
int vhcad_query_device(struct ib_device *ibdev, struct ib_device_attr *props,
		       struct ib_udata *udata);
int vhcad_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *props);
int vhcad_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable);
enum rdma_link_layer vhcad_get_link_layer(struct ib_device *ibdev, u32 port);
int vhcad_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
int vhcad_add_gid(const struct ib_gid_attr *attr, void **context);
int vhcad_del_gid(const struct ib_gid_attr *attr, void **context);
void vhcad_get_dev_fw_str(struct ib_device *ibdev, char *str);

/* vhca_mad.c: the attribute data of an SMP (IBTA 14.2.5) */
#define VHCA_SMP_PKEYS_PER_BLOCK	32	/* P_KeyTable (14.2.5.7) */
#define VHCA_SMP_GUIDS_PER_BLOCK	8	/* GUIDInfo (14.2.5.5) */

union vhca_smp_data {
	u8 raw[IB_SMP_DATA_SIZE];
	struct ib_port_info port_info;
	__be16 pkeys[VHCA_SMP_PKEYS_PER_BLOCK];
	__be64 guids[VHCA_SMP_GUIDS_PER_BLOCK];
	char node_desc[IB_DEVICE_NODE_DESC_MAX];	/* NodeDescription */
};

void vhcad_trap_agent_register(struct vhca_dev *dev);
void vhcad_trap_agent_unregister(struct vhca_dev *dev);
int vhcad_smp(struct vhca_dev *dev, u8 method, __be16 attr_id, u32 attr_mod,
	      union vhca_smp_data *data);
int vhcad_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
		      const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		      const struct ib_mad *in, struct ib_mad *out,
		      size_t *out_mad_size, u16 *out_mad_pkey_index);

/* vhca_ib_port.c: the port verbs on the InfiniBand port */
int vhcad_ib_port_state(struct vhca_dev *dev);
int vhcad_ib_read_node_desc(struct vhca_dev *dev);
int vhcad_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *props);
int vhcad_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			u16 *pkey);
int vhcad_ib_query_gid(struct ib_device *ibdev, u32 port, int index,
		       union ib_gid *gid);
int vhcad_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			 struct ib_port_modify *props);
int vhcad_ib_modify_device(struct ib_device *ibdev, int mask,
			   struct ib_device_modify *props);
int vhcad_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *immutable);
enum rdma_link_layer vhcad_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port);

/* vhca_ucontext.c */
int vhcad_alloc_ucontext(struct ib_ucontext *ibucontext,
			 struct ib_udata *udata);
void vhcad_dealloc_ucontext(struct ib_ucontext *ibucontext);
void vhcad_disassociate_ucontext(struct ib_ucontext *ibucontext);
int vhcad_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma);
void vhcad_mmap_free(struct rdma_user_mmap_entry *rdma_entry);

/* vhca_pd.c */
int vhcad_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int vhcad_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int vhcad_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int vhcad_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* vhca_mr.c */
struct ib_mr *vhcad_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *vhcad_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata);
struct ib_mr *vhcad_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 virt_addr, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int vhcad_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *vhcad_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			     u32 max_num_sg);
int vhcad_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int vhcad_set_reg_mr_wqe(struct vhca_send_wqe *wqe,
			 const struct ib_reg_wr *reg);
int vhcad_alloc_mw_key(struct vhca_dev *dev, u32 pdn, u8 type, u32 *key);

/* vhca_mw.c */
int vhcad_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int vhcad_dealloc_mw(struct ib_mw *ibmw);

/* vhca_cq.c */
int vhcad_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs);
int vhcad_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int vhcad_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int vhcad_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int vhcad_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
void vhcad_cq_clean(struct vhca_cq *cq, u32 qpn);

/* vhca_qp.c */
int vhcad_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata);
int vhcad_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int attr_mask, struct ib_udata *udata);
int vhcad_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_qp_init_attr *init_attr);
int vhcad_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* vhca_srq.c */
int vhcad_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		     struct ib_udata *udata);
int vhcad_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask attr_mask, struct ib_udata *udata);
int vhcad_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int vhcad_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int vhcad_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

/* vhca_ah.c */
int vhcad_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int vhcad_destroy_ah(struct ib_ah *ibah, u32 flags);
int vhcad_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr);
/* The RoCEv2 rdma_ah_attr of a path (query_ah, query_qp). */
void vhcad_roce_ah_attr(struct rdma_ah_attr *ah_attr, const u8 *dgid,
			const u8 *dmac, u32 flow_label, u8 sgid_index,
			u8 hop_limit, u8 traffic_class);
/* The InfiniBand rdma_ah_attr of a path (query_ah, query_qp). */
void vhcad_ib_ah_attr(struct rdma_ah_attr *ah_attr, const struct vhca_ud_av *av);

/* vhca_mcast.c */
int vhcad_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int vhcad_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);

/* vhca_hw_counters.c */
void vhcad_hw_stats_init(struct vhca_dev *dev);
struct rdma_hw_stats *vhcad_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
int vhcad_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

/* vhca_wr.c */
int vhcad_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vhcad_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
void vhcad_write_recv_wqe(struct vhca_recv_wqe *wqe,
			  const struct ib_recv_wr *wr, u64 wr_id);

#endif /* _VHCA_VERBS_H_ */
