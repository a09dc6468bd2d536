/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca userspace provider: device, user context, and the queues the data
 * path works on.
 */
#ifndef __VHCA_H__
#define __VHCA_H__

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <util/mmio.h>
#include <util/util.h>

#include <vhca_hw.h>

/* QP numbers are 24 bits: a two-level table of 4096 x 4096 entries. */
#define VHCA_QPN_MASK		0x00ffffffu
/*
 * ibv_wc.sl of a UD receive on RoCE: the packet type, as mlx5's provider
 * reports it (vhca_cq.c).
 */
#define VHCA_WC_SL_ROCE_UDP	0x8
#define VHCA_WC_SL_ROCE_IPV6	0x1
#define VHCA_WC_SL_ROCE_IPV4	0x2
#define VHCA_QP_TABLE_SHIFT	12
#define VHCA_QP_TABLE_SIZE	(1 << VHCA_QP_TABLE_SHIFT)
#define VHCA_QP_TABLE_MASK	(VHCA_QP_TABLE_SIZE - 1)

struct vhca_device {
	struct verbs_device ibv_dev;
};

struct vhca_context {
	struct verbs_context ibv_ctx;

	/*
	 * This context's doorbell page in BAR2, mapped write-only.  The data
	 * path rings its queues through it, at the VHCA_DB_* offsets.
	 */
	void *db;
	size_t db_size;

	/* The device's limits (QUERY_DEVICE), for sizing queues. */
	uint32_t max_qp_wr;
	uint32_t max_cqe;
	uint32_t max_send_sge;
	uint32_t max_inline_data;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;

	/*
	 * The port is InfiniBand (its link layer, fixed for the device's
	 * life): LID-routed AHs without MACs, LRH fields in UD completions.
	 */
	bool ib_port;

	/*
	 * QPs by number, for poll_cq.  Changed under qp_table_mutex and the
	 * locks of the QP's CQs, so a poller holding its CQ's lock sees a
	 * stable entry for every QP that completes to that CQ.
	 */
	pthread_mutex_t qp_table_mutex;
	struct {
		struct vhca_qp **table;
		int refcnt;
	} qp_table[VHCA_QP_TABLE_SIZE];
};

struct vhca_cq {
	struct verbs_cq vcq;		/* ibv_cq, or ibv_cq_ex for create_cq_ex */
	pthread_spinlock_t lock;	/* ci and the consumer side of the ring */
	void *buf;			/* the ring, then the doorbell record */
	size_t buf_size;
	void *resized_ring;		/* after a resize: the ring, alone */
	struct vhca_cqe *ring;
	uint32_t *dbrec;		/* ci, read by the device when full */
	uint32_t cqn;
	uint8_t log_size;
	uint32_t ci;			/* free running */
	/* XRC SRQs reporting here: receive CQEs of QPs not in the table. */
	uint32_t xrc_srqs;
	/*
	 * The extended poll API (ibv_start_poll .. ibv_end_poll): the current
	 * completion, decoded by the same code as poll_cq's, and ci when the
	 * poll started.  Valid with the lock held, between the two calls.
	 */
	struct ibv_wc ex_wc;
	uint32_t ex_start_ci;
};

/* A send or receive queue. */
struct vhca_wq {
	pthread_spinlock_t lock;	/* pi, ci and the producer side */
	void *ring;
	size_t ring_size;
	uint8_t log_size;
	uint32_t pi;			/* WQEs posted, free running */
	uint32_t ci;			/* WQEs known complete */
	uint64_t *wr_ids;		/* the caller's wr_id of each slot */
};

struct vhca_qp {
	struct verbs_qp vqp;
	struct vhca_wq sq;
	struct vhca_wq rq;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	bool sq_sig_all;
	/*
	 * The extended post API (ibv_wr_start .. ibv_wr_complete), with the
	 * send queue's lock held: the WQE the last ibv_wr_*() builder wrote,
	 * the producer index at ibv_wr_start(), whether a UD WQE still waits for
 * ibv_wr_set_ud_addr(), and the first error, which
	 * ibv_wr_complete() returns after dropping the whole batch.
	 */
	struct vhca_send_wqe *ex_wqe;
	uint32_t ex_start_pi;
	int ex_err;
	bool ex_need_dest;		/* UD: ex_wqe has no destination yet */
};

/*
 * A shared receive queue (vhca_srq.c): a ring of receive WQEs and the
 * consumer record where the device counts the WQEs it has taken.
 */
struct vhca_srq {
	struct verbs_srq vsrq;
	pthread_spinlock_t lock;	/* pi, the ring and moving it */
	void *ring;
	size_t ring_size;
	uint8_t log_size;
	uint32_t pi;			/* WQEs posted, free running */
	uint32_t taken;			/* the record's count when last read */
	uint32_t *ci_rec;		/* WQEs taken (LE), written by the device */
	uint32_t max_sge;
	uint32_t srqn;
};

/* A UD address handle: the address vector its send WQEs carry. */
struct vhca_ah {
	struct ibv_ah ibv_ah;
	struct vhca_ud_av av;		/* little-endian, as in the WQE */
};

static inline struct vhca_context *to_vhca_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct vhca_context, ibv_ctx.context);
}

static inline struct vhca_cq *to_vhca_cq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct vhca_cq, vcq.cq);
}

static inline struct vhca_cq *to_vhca_cq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct vhca_cq, vcq.cq_ex);
}

static inline struct vhca_qp *to_vhca_qp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct vhca_qp, vqp.qp);
}

static inline struct vhca_qp *to_vhca_qp_ex(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct vhca_qp, vqp.qp_ex);
}

static inline struct vhca_srq *to_vhca_srq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct vhca_srq, vsrq.srq);
}

static inline struct vhca_ah *to_vhca_ah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct vhca_ah, ibv_ah);
}

/*
 * A doorbell (docs/specs/vhca.rst, "Doorbell pages"): one 64-bit write of
 * the object (low half) and the value (high half).  Callers order the
 * queue entries before it with udma_to_device_barrier().
 */
static inline void vhca_ring_doorbell(struct vhca_context *ctx,
				      uint32_t offset, uint32_t object,
				      uint32_t value)
{
	mmio_write64_le((uint8_t *)ctx->db + offset,
			htole64((uint64_t)value << 32 | object));
}

/* The QP table (vhca_verbs.c fills it) that poll_cq looks QPs up in. */
static inline struct vhca_qp *vhca_find_qp(struct vhca_context *ctx,
					   uint32_t qpn)
{
	uint32_t top = (qpn >> VHCA_QP_TABLE_SHIFT) & VHCA_QP_TABLE_MASK;

	if (!ctx->qp_table[top].refcnt)
		return NULL;
	return ctx->qp_table[top].table[qpn & VHCA_QP_TABLE_MASK];
}

#endif /* __VHCA_H__ */
