// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: posting work requests.
 *
 * post_send and post_recv write WQEs into the QP's rings (docs/specs/
 * vhca.rst, "Queue pairs") and ring the SQ or RQ doorbell of the context's
 * doorbell page with the new producer index.  Each WQE's wr_id holds its
 * index in the queue; the caller's wr_id waits in wr_ids[] until poll_cq
 * meets the CQE (see vhca_cq.c).  A ring is full when it holds as many
 * WQEs as it has slots and poll_cq has not yet seen them complete.  SRQs
 * (vhca_srq.c) post with vhca_write_recv_wqe() too.
 *
 * RC, UC and UD share the WQE; a UD WQE carries a copy of its AH's address
 * vector (vhca_ah.c), so the device never reads the AH itself.  An XRC
 * send QP's WQE is RC's plus the number of the target's XRC SRQ
 * (IBTA annex A14), which goes into each request's XRCETH.
 *
 * Memory windows (IBTA 10.6.7) are bound by BIND_MW WQEs: ibv_bind_mw()
 * posts one for a type 1 window, IBV_WR_BIND_MW and ibv_wr_bind_mw() for
 * a type 2 one; LOCAL_INV frees a type 2 window.  The device checks the
 * binding (docs/specs/vhca.rst, "Memory windows").
 */
#include <errno.h>
#include <string.h>

#include <util/udma_barrier.h>

#include "vhca.h"
#include "vhca_verbs.h"

/*
 * The send WQE builder, in three parts that post_send applies to each
 * ibv_send_wr and the ibv_wr_*() API (below) applies one call at a time:
 * the header (operation, remote address, flags), the UD destination, and
 * the data (SGEs or inline bytes).
 */

static void vhca_set_sge(struct vhca_sge *dst, const struct ibv_sge *src)
{
	dst->addr = htole64(src->addr);
	dst->length = htole32(src->length);
	dst->lkey = htole32(src->lkey);
}

/* Inline data: @len bytes at @addr, appended to the WQE's. */
static int vhca_wqe_add_inline(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			       const void *addr, size_t len)
{
	uint32_t used = le32toh(wqe->inline_len);

	if (len > qp->max_inline_data - used)
		return EINVAL;
	memcpy(wqe->inline_data + used, addr, len);
	wqe->flags |= VHCA_WQE_INLINE;
	wqe->inline_len = htole32(used + len);
	return 0;
}

static int vhca_wqe_set_sges(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			     const struct ibv_sge *sg_list, size_t num_sge)
{
	size_t i;

	if (num_sge > qp->max_send_sge)
		return EINVAL;
	wqe->flags &= ~VHCA_WQE_INLINE;
	wqe->inline_len = 0;
	wqe->num_sge = num_sge;
	for (i = 0; i < num_sge; i++)
		vhca_set_sge(&wqe->sge[i], &sg_list[i]);
	return 0;
}

/*
 * The operations each transport has (the BTH OpCode table, IBTA 9.2.3):
 * UC has no RDMA READ, atomics or SEND with invalidate, UD only SENDs;
 * XRC has RC's (annex A14); FLUSH and ATOMIC WRITE (IBTA 1.5) are RC
 * only.  The local operations, LOCAL_INV and BIND_MW, are for the QPs
 * that can be given memory windows' keys: RC, UC and XRC (IBTA 10.6.7).
 */
static bool vhca_opcode_valid(enum ibv_qp_type qp_type,
			      enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC ||
		       qp_type == IBV_QPT_XRC_SEND;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_XRC_SEND;
	case IBV_WR_FLUSH:
	case IBV_WR_ATOMIC_WRITE:
		return qp_type == IBV_QPT_RC;
	default:
		return false;
	}
}

/*
 * A UD WQE names its destination (IBTA 10.2.1): the AH's address vector,
 * the QP number, and the Q_Key as the caller gave it; the device applies
 * the "use the QP's Q_Key" rule of IBTA 10.2.5 (VHCA_QKEY_CONTROLLED).
 */
static int vhca_wqe_set_ud_dest(struct vhca_send_wqe *wqe, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	if (!ah || remote_qpn > VHCA_MCAST_QPN)
		return EINVAL;
	wqe->dest_qpn = htole32(remote_qpn);
	wqe->qkey = htole32(remote_qkey);
	wqe->av = to_vhca_ah(ah)->av;
	return 0;
}

/*
 * BIND_MW: the window by its current key, its new key (same index, the
 * tag the consumer chose) and the binding, in the SGE area.  A type 1
 * unbind, of length 0, may name no MR.  The device checks the rest
 * (docs/specs/vhca.rst, "Memory windows").
 */
static_assert(IBV_ACCESS_LOCAL_WRITE == VHCA_ACCESS_LOCAL_WRITE, "access");
static_assert(IBV_ACCESS_REMOTE_WRITE == VHCA_ACCESS_REMOTE_WRITE, "access");
static_assert(IBV_ACCESS_REMOTE_READ == VHCA_ACCESS_REMOTE_READ, "access");
static_assert(IBV_ACCESS_REMOTE_ATOMIC == VHCA_ACCESS_REMOTE_ATOMIC, "access");
static_assert(IBV_ACCESS_ZERO_BASED == VHCA_ACCESS_ZERO_BASED, "access");
static_assert(IBV_ACCESS_FLUSH_GLOBAL == VHCA_ACCESS_FLUSH_GLOBAL, "access");

static int vhca_wqe_set_bind(struct vhca_send_wqe *wqe,
			     const struct ibv_mw *mw, uint32_t new_rkey,
			     const struct ibv_mw_bind_info *info)
{
	if (!mw || (!info->mr && info->length))
		return EINVAL;
	memset(wqe->sge, 0, sizeof(wqe->sge));
	wqe->rkey = htole32(mw->rkey);
	wqe->imm_or_inv = htole32(new_rkey);
	wqe->mw_addr = htole64(info->addr);
	wqe->mw_length = htole64(info->length);
	wqe->mw_mr_lkey = htole32(info->mr ? info->mr->lkey : 0);
	wqe->mw_access = htole32(info->mw_access_flags);
	return 0;
}

/*
 * The header of the WQE for @wr, the WQE at @index of the queue: all but
 * the UD destination and the data.  Only wr's opcode, send_flags, imm_data
 * or invalidate_rkey and its rdma, atomic or bind_mw part are read.
 */
static int vhca_wqe_set_header(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			       const struct ibv_send_wr *wr, uint32_t index)
{
	if (!vhca_opcode_valid(qp->vqp.qp.qp_type, wr->opcode))
		return EINVAL;

	memset(wqe, 0, offsetof(struct vhca_send_wqe, sge));
	wqe->wr_id = htole64(index);

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
		/* The immediate stays in network byte order. */
		wqe->imm_or_inv = (uint32_t)wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		wqe->imm_or_inv = htole32(wr->invalidate_rkey);
		break;
	case IBV_WR_BIND_MW: {
		int err = vhca_wqe_set_bind(wqe, wr->bind_mw.mw,
					    wr->bind_mw.rkey,
					    &wr->bind_mw.bind_info);

		if (err)
			return err;
		break;
	}
	case IBV_WR_SEND:
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->imm_or_inv = (uint32_t)wr->imm_data;
		SWITCH_FALLTHROUGH;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
	case IBV_WR_FLUSH:
	case IBV_WR_ATOMIC_WRITE:
		/* The builders of the last two fill in their operands. */
		wqe->remote_addr = htole64(wr->wr.rdma.remote_addr);
		wqe->rkey = htole32(wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->rkey = htole32(wr->wr.atomic.rkey);
		wqe->compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->swap = htole64(wr->wr.atomic.swap);
		break;
	default:
		return EINVAL;
	}
	/* enum ibv_wr_opcode and enum vhca_wqe_opcode share their values. */
	wqe->opcode = wr->opcode;

	if (wr->send_flags & IBV_SEND_SIGNALED || qp->sq_sig_all)
		wqe->flags |= VHCA_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_FENCE)
		wqe->flags |= VHCA_WQE_FENCE;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= VHCA_WQE_SOLICITED;
	return 0;
}

/* The local operations have no data: their SGE area holds other fields. */
static bool vhca_opcode_is_local(uint8_t opcode)
{
	return opcode == IBV_WR_LOCAL_INV || opcode == IBV_WR_BIND_MW;
}

/* Only sends and RDMA writes carry data of their own inline. */
static bool vhca_opcode_has_inline(uint8_t opcode)
{
	return !vhca_opcode_is_local(opcode) &&
	       opcode != IBV_WR_RDMA_READ &&
	       opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	       opcode != IBV_WR_ATOMIC_FETCH_AND_ADD &&
	       opcode != IBV_WR_FLUSH && opcode != IBV_WR_ATOMIC_WRITE;
}

static int vhca_build_send_wqe(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			       const struct ibv_send_wr *wr, uint32_t index)
{
	int err;
	int i;

	if (wr->num_sge < 0)
		return EINVAL;
	/* struct ibv_send_wr has no room for their operands: ibv_wr_*() only. */
	if (wr->opcode == IBV_WR_FLUSH || wr->opcode == IBV_WR_ATOMIC_WRITE)
		return EINVAL;
	err = vhca_wqe_set_header(qp, wqe, wr, index);
	if (err)
		return err;

	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		err = vhca_wqe_set_ud_dest(wqe, wr->wr.ud.ah,
					   wr->wr.ud.remote_qpn,
					   wr->wr.ud.remote_qkey);
		if (err)
			return err;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND)
		wqe->xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn);

	/* Their sg_list and num_sge mean nothing, as for rxe. */
	if (vhca_opcode_is_local(wqe->opcode))
		return 0;
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return vhca_wqe_set_sges(qp, wqe, wr->sg_list, wr->num_sge);

	if (!vhca_opcode_has_inline(wqe->opcode))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		err = vhca_wqe_add_inline(qp, wqe,
					  (void *)(uintptr_t)wr->sg_list[i].addr,
					  wr->sg_list[i].length);
		if (err)
			return err;
	}
	return 0;
}

/* IBTA 10.8.2: no send requests before RTS. */
static bool vhca_qp_can_send(struct ibv_qp *ibqp)
{
	return ibqp->state != IBV_QPS_RESET && ibqp->state != IBV_QPS_INIT &&
	       ibqp->state != IBV_QPS_RTR;
}

int vhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct vhca_context *ctx = to_vhca_ctx(ibqp->context);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	struct vhca_wq *sq = &qp->sq;
	uint32_t entries = 1u << sq->log_size;
	struct vhca_send_wqe *wqe;
	uint32_t start, slot;
	int err = 0;

	if (!vhca_qp_can_send(ibqp)) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&sq->lock);
	start = sq->pi;
	for (; wr; wr = wr->next) {
		if (sq->pi - sq->ci >= entries) {
			err = ENOMEM;
			break;
		}
		slot = sq->pi & (entries - 1);
		wqe = (struct vhca_send_wqe *)sq->ring + slot;
		err = vhca_build_send_wqe(qp, wqe, wr, sq->pi);
		if (err)
			break;
		sq->wr_ids[slot] = wr->wr_id;
		sq->pi++;
	}
	if (sq->pi != start) {
		/* The WQEs reach memory before the device hears of them. */
		udma_to_device_barrier();
		vhca_ring_doorbell(ctx, VHCA_DB_SQ, ibqp->qp_num, sq->pi);
	}
	pthread_spin_unlock(&sq->lock);

	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * Bind a type 1 window (ibv_bind_mw(), which checked the type and that
 * the MR is in the window's PD): a BIND_MW WQE with the next key, which
 * the window has from now on; the consumer puts the old key back if the
 * bind completes in error (man ibv_bind_mw), as with rxe and mlx5.
 */
int vhca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	struct ibv_send_wr *bad_wr;
	int err;

	/* IBTA o10-36.2.2: a type 1 window is never zero based. */
	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED) {
		errno = EINVAL;
		return EINVAL;
	}
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	err = vhca_post_send(ibqp, &wr, &bad_wr);
	if (err) {
		errno = err;
		return err;
	}
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/*
 * A receive WQE (the QP's or an SRQ's) for @wr, naming @wr_id; the caller
 * checked num_sge.
 */
void vhca_write_recv_wqe(struct vhca_recv_wqe *wqe,
			 const struct ibv_recv_wr *wr, uint64_t wr_id)
{
	int i;

	memset(wqe, 0, offsetof(struct vhca_recv_wqe, sge));
	wqe->wr_id = htole64(wr_id);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		vhca_set_sge(&wqe->sge[i], &wr->sg_list[i]);
}

int vhca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct vhca_context *ctx = to_vhca_ctx(ibqp->context);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	struct vhca_wq *rq = &qp->rq;
	uint32_t entries = 1u << rq->log_size;
	struct vhca_recv_wqe *wqe;
	uint32_t start, slot;
	int err = 0;

	/*
	 * IBTA 10.8.2: receive requests from INIT on; a QP on an SRQ
	 * receives into the SRQ's WQEs (10.2.9).
	 */
	if (ibqp->state == IBV_QPS_RESET || ibqp->srq) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&rq->lock);
	start = rq->pi;
	for (; wr; wr = wr->next) {
		if (rq->pi - rq->ci >= entries) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->max_recv_sge) {
			err = EINVAL;
			break;
		}
		slot = rq->pi & (entries - 1);
		wqe = (struct vhca_recv_wqe *)rq->ring + slot;
		vhca_write_recv_wqe(wqe, wr, rq->pi);
		rq->wr_ids[slot] = wr->wr_id;
		rq->pi++;
	}
	if (rq->pi != start) {
		udma_to_device_barrier();
		vhca_ring_doorbell(ctx, VHCA_DB_RQ, ibqp->qp_num, rq->pi);
	}
	pthread_spin_unlock(&rq->lock);

	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * The extended post API (man ibv_wr_post): ibv_wr_start() takes the send
 * queue's lock, each builder (ibv_wr_send(), ibv_wr_rdma_write(), ...)
 * writes the header of the next WQE with vhca_wqe_set_header(), the
 * setters that follow fill its UD destination and data, and
 * ibv_wr_complete() rings the doorbell once for the batch.  The first
 * error drops the whole batch: ibv_wr_complete() returns it and the
 * device never sees the WQEs, as after ibv_wr_abort().
 */
static void vhca_wr_start(struct ibv_qp_ex *ibqp)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->ex_start_pi = qp->sq.pi;
	qp->ex_wqe = NULL;
	qp->ex_need_dest = false;
	qp->ex_err = 0;
}

/* A UD WQE goes nowhere without ibv_wr_set_ud_addr() (IBTA 10.2.1). */
static void vhca_wr_check_dest(struct vhca_qp *qp)
{
	if (qp->ex_need_dest && !qp->ex_err)
		qp->ex_err = EINVAL;
}

static int vhca_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct vhca_context *ctx = to_vhca_ctx(ibqp->qp_base.context);
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_wq *sq = &qp->sq;
	int err;

	vhca_wr_check_dest(qp);
	err = qp->ex_err;
	if (!err && !vhca_qp_can_send(&ibqp->qp_base))
		err = EINVAL;
	if (err) {
		sq->pi = qp->ex_start_pi;
	} else if (sq->pi != qp->ex_start_pi) {
		/* The WQEs reach memory before the device hears of them. */
		udma_to_device_barrier();
		vhca_ring_doorbell(ctx, VHCA_DB_SQ, ibqp->qp_base.qp_num,
				   sq->pi);
	}
	qp->ex_wqe = NULL;
	pthread_spin_unlock(&sq->lock);
	return err;
}

static void vhca_wr_abort(struct ibv_qp_ex *ibqp)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);

	qp->sq.pi = qp->ex_start_pi;
	qp->ex_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/*
 * A builder: the next WQE, for @wr (opcode and operation fields) with the
 * wr_id and flags of the ibv_qp_ex.
 */
static void vhca_wr_build(struct ibv_qp_ex *ibqp, struct ibv_send_wr *wr)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_wq *sq = &qp->sq;
	uint32_t entries = 1u << sq->log_size;
	struct vhca_send_wqe *wqe;
	uint32_t slot;
	int err;

	vhca_wr_check_dest(qp);
	qp->ex_wqe = NULL;
	if (qp->ex_err)
		return;
	if (sq->pi - sq->ci >= entries) {
		qp->ex_err = ENOMEM;
		return;
	}
	slot = sq->pi & (entries - 1);
	wqe = (struct vhca_send_wqe *)sq->ring + slot;
	wr->send_flags = ibqp->wr_flags;
	err = vhca_wqe_set_header(qp, wqe, wr, sq->pi);
	if (err) {
		qp->ex_err = err;
		return;
	}
	sq->wr_ids[slot] = ibqp->wr_id;
	sq->pi++;
	qp->ex_wqe = wqe;
	qp->ex_need_dest = qp->vqp.qp.qp_type == IBV_QPT_UD;
}

/* A setter without a builder before it is the caller's error. */
static struct vhca_send_wqe *vhca_wr_cur(struct vhca_qp *qp)
{
	if (!qp->ex_wqe && !qp->ex_err)
		qp->ex_err = EINVAL;
	return qp->ex_err ? NULL : qp->ex_wqe;
}

static void vhca_wr_send(struct ibv_qp_ex *ibqp)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };

	vhca_wr_build(ibqp, &wr);
}

static void vhca_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = imm_data,
	};

	vhca_wr_build(ibqp, &wr);
}

static void vhca_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND_WITH_INV,
		.invalidate_rkey = invalidate_rkey,
	};

	vhca_wr_build(ibqp, &wr);
}

/*
 * A type 2 window's bind (type 1 has ibv_bind_mw()): @rkey is the new
 * key.  As with IBV_WR_BIND_MW, the consumer keeps the key: @mw's stays
 * as it is, as rxe leaves it.
 */
static void vhca_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			    uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_BIND_MW,
		.bind_mw = { .mw = mw, .rkey = rkey },
	};

	if (info)
		wr.bind_mw.bind_info = *info;
	vhca_wr_build(ibqp, &wr);
}

static void vhca_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_LOCAL_INV,
		.invalidate_rkey = invalidate_rkey,
	};

	vhca_wr_build(ibqp, &wr);
}

static void vhca_wr_rdma(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode,
			 uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr wr = {
		.opcode = opcode,
		.imm_data = imm_data,
		.wr.rdma = { .remote_addr = remote_addr, .rkey = rkey },
	};

	vhca_wr_build(ibqp, &wr);
}

static void vhca_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	vhca_wr_rdma(ibqp, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void vhca_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm_data)
{
	vhca_wr_rdma(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		     imm_data);
}

static void vhca_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr)
{
	vhca_wr_rdma(ibqp, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void vhca_wr_atomic(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode,
			   uint32_t rkey, uint64_t remote_addr,
			   uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr wr = {
		.opcode = opcode,
		.wr.atomic = {
			.remote_addr = remote_addr,
			.compare_add = compare_add,
			.swap = swap,
			.rkey = rkey,
		},
	};

	vhca_wr_build(ibqp, &wr);
}

static void vhca_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	vhca_wr_atomic(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
		       compare, swap);
}

static void vhca_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	vhca_wr_atomic(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
		       add, 0);
}

/*
 * IBTA 1.5 memory placement extensions.  ATOMIC WRITE's 8 bytes go to the
 * WQE as they are in memory, and from there to the target unchanged (as
 * rxe copies them); FLUSH's length, placement type and selectivity level
 * have their own WQE fields.  Neither has SGEs.
 */
static void vhca_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				 uint64_t remote_addr, const void *atomic_wr)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);

	vhca_wr_rdma(ibqp, IBV_WR_ATOMIC_WRITE, rkey, remote_addr, 0);
	if (qp->ex_wqe)
		memcpy(&qp->ex_wqe->compare_add, atomic_wr,
		       sizeof(qp->ex_wqe->compare_add));
}

static void vhca_wr_flush(struct ibv_qp_ex *ibqp, uint32_t rkey,
			  uint64_t remote_addr, size_t len, uint8_t type,
			  uint8_t level)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_send_wqe *wqe;

	vhca_wr_rdma(ibqp, IBV_WR_FLUSH, rkey, remote_addr, 0);
	wqe = qp->ex_wqe;
	if (!wqe)
		return;
	/* The RETH DMA length is 32 bits wide. */
	if (len > UINT32_MAX) {
		qp->ex_err = EINVAL;
		return;
	}
	wqe->flush_len = htole32(len);
	wqe->flush_type = type;
	wqe->flush_level = level;
}

static void vhca_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_send_wqe *wqe = vhca_wr_cur(qp);

	if (!wqe)
		return;
	qp->ex_err = vhca_wqe_set_ud_dest(wqe, ah, remote_qpn, remote_qkey);
	qp->ex_need_dest = false;
}

/* The target's XRC SRQ the request names (XRCETH, annex A14). */
static void vhca_wr_set_xrc_srqn(struct ibv_qp_ex *ibqp, uint32_t remote_srqn)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_send_wqe *wqe = vhca_wr_cur(qp);

	if (wqe)
		wqe->xrc_srqn = htole32(remote_srqn);
}

static void vhca_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_send_wqe *wqe = vhca_wr_cur(qp);

	if (!wqe)
		return;
	if (vhca_opcode_is_local(wqe->opcode))
		qp->ex_err = EINVAL;
	else
		qp->ex_err = vhca_wqe_set_sges(qp, wqe, sg_list, num_sge);
}

static void vhca_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	vhca_wr_set_sge_list(ibqp, 1, &sge);
}

/* The bytes are copied now: the caller may reuse its buffers at once. */
static void vhca_wr_set_inline_data_list(struct ibv_qp_ex *ibqp,
					 size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct vhca_qp *qp = to_vhca_qp_ex(ibqp);
	struct vhca_send_wqe *wqe = vhca_wr_cur(qp);
	size_t i;

	if (!wqe)
		return;
	if (!vhca_opcode_has_inline(wqe->opcode)) {
		qp->ex_err = EINVAL;
		return;
	}
	wqe->num_sge = 0;
	wqe->inline_len = 0;
	for (i = 0; i < num_buf && !qp->ex_err; i++)
		qp->ex_err = vhca_wqe_add_inline(qp, wqe, buf_list[i].addr,
						 buf_list[i].length);
}

static void vhca_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				    size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	vhca_wr_set_inline_data_list(ibqp, 1, &buf);
}

/*
 * The operations each transport has (vhca_opcode_valid()); the others are
 * refused at QP creation.
 */
#define VHCA_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define VHCA_UC_SEND_OPS						\
	(VHCA_UD_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE |			\
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV |	\
	 IBV_QP_EX_WITH_BIND_MW)
#define VHCA_XRC_SEND_OPS						\
	(VHCA_UC_SEND_OPS | IBV_QP_EX_WITH_RDMA_READ |			\
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |				\
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV)
#define VHCA_RC_SEND_OPS						\
	(VHCA_XRC_SEND_OPS | IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE)

int vhca_qp_ex_set_ops(struct vhca_qp *qp, enum ibv_qp_type qp_type,
		       uint64_t send_ops_flags)
{
	struct ibv_qp_ex *ex = &qp->vqp.qp_ex;
	uint64_t supported;

	switch (qp_type) {
	case IBV_QPT_RC:
		supported = VHCA_RC_SEND_OPS;
		break;
	case IBV_QPT_UC:
		supported = VHCA_UC_SEND_OPS;
		break;
	case IBV_QPT_UD:
		supported = VHCA_UD_SEND_OPS;
		break;
	case IBV_QPT_XRC_SEND:
		supported = VHCA_XRC_SEND_OPS;
		break;
	default:
		return EOPNOTSUPP;
	}
	if (send_ops_flags & ~supported)
		return EOPNOTSUPP;

	if (send_ops_flags & IBV_QP_EX_WITH_SEND)
		ex->wr_send = vhca_wr_send;
	if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ex->wr_send_imm = vhca_wr_send_imm;
	if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		ex->wr_send_inv = vhca_wr_send_inv;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE)
		ex->wr_rdma_write = vhca_wr_rdma_write;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ex->wr_rdma_write_imm = vhca_wr_rdma_write_imm;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_READ)
		ex->wr_rdma_read = vhca_wr_rdma_read;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ex->wr_atomic_cmp_swp = vhca_wr_atomic_cmp_swp;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ex->wr_atomic_fetch_add = vhca_wr_atomic_fetch_add;
	if (send_ops_flags & IBV_QP_EX_WITH_FLUSH)
		ex->wr_flush = vhca_wr_flush;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ex->wr_atomic_write = vhca_wr_atomic_write;
	if (send_ops_flags & IBV_QP_EX_WITH_LOCAL_INV)
		ex->wr_local_inv = vhca_wr_local_inv;
	if (send_ops_flags & IBV_QP_EX_WITH_BIND_MW)
		ex->wr_bind_mw = vhca_wr_bind_mw;
	ex->wr_set_sge = vhca_wr_set_sge;
	ex->wr_set_sge_list = vhca_wr_set_sge_list;
	ex->wr_set_inline_data = vhca_wr_set_inline_data;
	ex->wr_set_inline_data_list = vhca_wr_set_inline_data_list;
	if (qp_type == IBV_QPT_UD)
		ex->wr_set_ud_addr = vhca_wr_set_ud_addr;
	if (qp_type == IBV_QPT_XRC_SEND)
		ex->wr_set_xrc_srqn = vhca_wr_set_xrc_srqn;
	ex->wr_start = vhca_wr_start;
	ex->wr_complete = vhca_wr_complete;
	ex->wr_abort = vhca_wr_abort;
	return 0;
}
