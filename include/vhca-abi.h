/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vhca user-verbs ABI: the udata the guest kernel driver (drivers/vhca) and
 * the rdma-core provider (provider/vhca) exchange.  Bump VHCA_UVERBS_ABI_VERSION
 * on any incompatible change; the provider refuses other versions.
 */
#ifndef VHCA_ABI_USER_H
#define VHCA_ABI_USER_H

#include <linux/types.h>

#define VHCA_UVERBS_ABI_VERSION 1

/* IB_USER_VERBS_CMD_GET_CONTEXT response. */
struct vhca_alloc_ucontext_resp {
	__u32 db_page;		/* this context's page in BAR2 */
	__u32 db_page_size;	/* bytes to mmap at db_mmap_offset */
	__aligned_u64 db_mmap_offset;	/* mmap offset of the doorbell page */
};

/*
 * IB_USER_VERBS_CMD_CREATE_CQ.  The provider allocates the CQ ring
 * (2^log_size struct vhca_cqe, page aligned) and a u32 doorbell record
 * where it stores its consumer index; the driver pins both.
 */
struct vhca_create_cq_cmd {
	__aligned_u64 buf_addr;
	__aligned_u64 dbrec_addr;
	__u8 log_size;
	__u8 rsvd[7];
};

struct vhca_create_cq_resp {
	__u32 cqn;
	__u32 rsvd;
};

/*
 * IB_USER_VERBS_CMD_RESIZE_CQ.  The provider allocates the new ring
 * (2^log_size struct vhca_cqe, page aligned, zeroed); the driver pins it
 * and the device moves the CQEs not yet polled to its start.  The
 * doorbell record stays the one CREATE_CQ named.
 */
struct vhca_resize_cq_cmd {
	__aligned_u64 buf_addr;
	__u8 log_size;
	__u8 rsvd[7];
};

/*
 * IB_USER_VERBS_CMD_CREATE_QP.  The provider allocates the send ring
 * (2^sq_log_size struct vhca_send_wqe) and receive ring (2^rq_log_size
 * struct vhca_recv_wqe), page aligned; the driver pins them.  A QP that
 * receives from an SRQ has no receive ring: rq_buf_addr and rq_log_size
 * are 0.
 */
struct vhca_create_qp_cmd {
	__aligned_u64 sq_buf_addr;
	__aligned_u64 rq_buf_addr;
	__u8 sq_log_size;
	__u8 rq_log_size;
	__u8 rsvd[6];
};

struct vhca_create_qp_resp {
	__u32 qpn;
	__u32 rsvd;
};

/*
 * IB_USER_VERBS_CMD_CREATE_SRQ.  The provider allocates the ring
 * (2^log_size struct vhca_recv_wqe, page aligned) and a u32 consumer
 * record, where the device writes the count of WQEs it has taken; the
 * driver pins both.
 */
struct vhca_create_srq_cmd {
	__aligned_u64 buf_addr;
	__aligned_u64 ci_addr;
	__u8 log_size;
	__u8 rsvd[7];
};

struct vhca_create_srq_resp {
	__u32 srqn;
	__u32 rsvd;
};

/*
 * IB_USER_VERBS_CMD_MODIFY_SRQ.  With IB_SRQ_MAX_WR: the new ring the
 * provider allocated (2^log_size struct vhca_recv_wqe, page aligned),
 * which the device moves the SRQ to; 0s otherwise.
 */
struct vhca_modify_srq_cmd {
	__aligned_u64 buf_addr;
	__u8 log_size;
	__u8 rsvd[7];
};

/*
 * IB_USER_VERBS_CMD_CREATE_AH.  The RDMA core resolves the destination
 * MAC of a RoCE AH in the kernel (ib_resolve_eth_dmac()); the driver
 * returns it so the provider can put it into its UD send WQEs, as mlx5
 * does.
 */
struct vhca_create_ah_resp {
	__u8 dmac[6];
	__u8 rsvd[2];
};

#endif /* VHCA_ABI_USER_H */
