/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca userspace provider: the verbs it implements.
 */
#ifndef __VHCA_VERBS_H__
#define __VHCA_VERBS_H__

#include <infiniband/driver.h>

#include "vhca.h"

/* vhca_verbs.c: resource set-up through the kernel driver */
int vhca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int vhca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *attr);
struct ibv_pd *vhca_alloc_pd(struct ibv_context *ibctx);
int vhca_dealloc_pd(struct ibv_pd *pd);
struct ibv_xrcd *vhca_open_xrcd(struct ibv_context *ibctx,
				struct ibv_xrcd_init_attr *attr);
int vhca_close_xrcd(struct ibv_xrcd *ibxrcd);
struct ibv_qp *vhca_open_qp(struct ibv_context *ibctx,
			    struct ibv_qp_open_attr *attr);
struct ibv_mr *vhca_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int vhca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
int vhca_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *vhca_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int vhca_dealloc_mw(struct ibv_mw *mw);
struct ibv_cq *vhca_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_cq_ex *vhca_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr);
int vhca_destroy_cq(struct ibv_cq *ibcq);
int vhca_resize_cq(struct ibv_cq *ibcq, int cqe);
struct ibv_qp *vhca_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr);
struct ibv_qp *vhca_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr);
int vhca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask);
int vhca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr);
int vhca_destroy_qp(struct ibv_qp *ibqp);
/* Page-aligned, zeroed memory the kernel driver pins for a queue. */
void *vhca_alloc_queue_mem(size_t size);
size_t vhca_page_size(void);
uint8_t vhca_log_size(uint32_t n);

/* vhca_srq.c: shared receive queues */
struct ibv_srq *vhca_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
struct ibv_srq *vhca_create_srq_ex(struct ibv_context *ibctx,
				   struct ibv_srq_init_attr_ex *attr);
int vhca_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
int vhca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask);
int vhca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int vhca_destroy_srq(struct ibv_srq *ibsrq);
int vhca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

/* vhca_ah.c: UD address handles */
struct ibv_ah *vhca_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int vhca_destroy_ah(struct ibv_ah *ibah);

/* vhca_cq.c: the completion side of the data path */
int vhca_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int vhca_arm_cq(struct ibv_cq *ibcq, int solicited_only);
void vhca_cq_clean(struct vhca_cq *cq, uint32_t qpn);
void vhca_cq_ex_set_ops(struct vhca_cq *cq, uint64_t wc_flags);

/* vhca_qp.c: the posting side of the data path */
int vhca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
int vhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int vhca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
void vhca_write_recv_wqe(struct vhca_recv_wqe *wqe,
			 const struct ibv_recv_wr *wr, uint64_t wr_id);
int vhca_qp_ex_set_ops(struct vhca_qp *qp, enum ibv_qp_type qp_type,
		       uint64_t send_ops_flags);

#endif /* __VHCA_VERBS_H__ */
