// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: posting work requests.
 *
 * post_send and post_recv write WQEs into the QP's rings (docs/specs/
 * vhca.rst, "Queue pairs") and ring the SQ or RQ doorbell of the context's
 * doorbell page with the new producer index.  Each WQE's wr_id holds its
 * index in the queue; the caller's wr_id waits in wr_ids[] until poll_cq
 * meets the CQE (see vhca_cq.c).  A ring is full when it holds as many
 * WQEs as it has slots and poll_cq has not yet seen them complete.
 *
 * RC, UC and UD share the WQE; a UD WQE carries a copy of its AH's address
 * vector (vhca_ah.c), so the device never reads the AH itself.
 */
#include <errno.h>
#include <string.h>

#include <util/udma_barrier.h>

#include "vhca.h"
#include "vhca_verbs.h"

static void vhca_set_sge(struct vhca_sge *dst, const struct ibv_sge *src)
{
	dst->addr = htole64(src->addr);
	dst->length = htole32(src->length);
	dst->lkey = htole32(src->lkey);
}

/* Inline data: the bytes the SGEs point at, copied into the WQE. */
static int vhca_set_inline(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			   const struct ibv_send_wr *wr)
{
	uint32_t len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *sge = &wr->sg_list[i];

		if (sge->length > qp->max_inline_data - len)
			return EINVAL;
		memcpy(wqe->inline_data + len, (void *)(uintptr_t)sge->addr,
		       sge->length);
		len += sge->length;
	}
	wqe->flags |= VHCA_WQE_INLINE;
	wqe->inline_len = htole32(len);
	return 0;
}

/*
 * The operations each transport has (the BTH OpCode table, IBTA 9.2.3):
 * UC has no RDMA READ, atomics or SEND with invalidate, UD only SENDs.
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
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
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
static int vhca_set_ud_dest(struct vhca_send_wqe *wqe,
			    const struct ibv_send_wr *wr)
{
	if (!wr->wr.ud.ah || wr->wr.ud.remote_qpn > VHCA_MCAST_QPN)
		return EINVAL;
	wqe->dest_qpn = htole32(wr->wr.ud.remote_qpn);
	wqe->qkey = htole32(wr->wr.ud.remote_qkey);
	wqe->av = to_vhca_ah(wr->wr.ud.ah)->av;
	return 0;
}

static int vhca_build_send_wqe(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			       const struct ibv_send_wr *wr, uint32_t index)
{
	enum ibv_qp_type qp_type = qp->vqp.qp.qp_type;
	int err;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	if (!vhca_opcode_valid(qp_type, wr->opcode))
		return EINVAL;

	memset(wqe, 0, offsetof(struct vhca_send_wqe, sge));
	wqe->wr_id = htole64(index);

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
		/* The immediate stays in network byte order. */
		wqe->imm_or_inv = (uint32_t)wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
		wqe->imm_or_inv = htole32(wr->invalidate_rkey);
		break;
	case IBV_WR_SEND:
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->imm_or_inv = (uint32_t)wr->imm_data;
		SWITCH_FALLTHROUGH;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
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

	if (qp_type == IBV_QPT_UD) {
		err = vhca_set_ud_dest(wqe, wr);
		if (err)
			return err;
	}

	if (wr->send_flags & IBV_SEND_SIGNALED || qp->sq_sig_all)
		wqe->flags |= VHCA_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_FENCE)
		wqe->flags |= VHCA_WQE_FENCE;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= VHCA_WQE_SOLICITED;

	if (wr->send_flags & IBV_SEND_INLINE) {
		/* Only sends and RDMA writes carry data of their own. */
		if (wr->opcode == IBV_WR_RDMA_READ ||
		    wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			return EINVAL;
		return vhca_set_inline(qp, wqe, wr);
	}

	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		vhca_set_sge(&wqe->sge[i], &wr->sg_list[i]);
	return 0;
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

	/* IBTA 10.8.2: no send requests before RTS. */
	if (ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_INIT ||
	    ibqp->state == IBV_QPS_RTR) {
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
	int i;

	/* IBTA 10.8.2: receive requests from INIT on. */
	if (ibqp->state == IBV_QPS_RESET) {
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
		memset(wqe, 0, offsetof(struct vhca_recv_wqe, sge));
		wqe->wr_id = htole64(rq->pi);
		wqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++)
			vhca_set_sge(&wqe->sge[i], &wr->sg_list[i]);
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
