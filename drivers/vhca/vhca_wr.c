// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's data path on its own QPs: post_send and post_recv write WQEs
 * into the rings and ring the SQ or RQ doorbell on the driver's doorbell
 * page with the new producer index.  UD and GSI send WQEs carry their
 * destination: the address vector of the work request's AH, the remote QP
 * and Q_Key.
 *
 * Each WQE's wr_id carries its index in the queue, and the caller's wr_id
 * waits in wr_ids[] for the completion (vhca_cq.c): that is how a CQE tells
 * which WQE it completes, and with it, that all earlier ones are done,
 * signalled or not.  An SRQ's WQEs (vhca_srq.c) carry the caller's wr_id
 * instead.  The Subnet Management QP of an InfiniBand port (QP0) sends as
 * GSI and UD QPs do.
 */

#include "vhca.h"
#include "vhca_verbs.h"

static_assert((int)IB_WR_RDMA_WRITE == (int)VHCA_WR_RDMA_WRITE);
static_assert((int)IB_WR_RDMA_WRITE_WITH_IMM == (int)VHCA_WR_RDMA_WRITE_WITH_IMM);
static_assert((int)IB_WR_SEND == (int)VHCA_WR_SEND);
static_assert((int)IB_WR_SEND_WITH_IMM == (int)VHCA_WR_SEND_WITH_IMM);
static_assert((int)IB_WR_RDMA_READ == (int)VHCA_WR_RDMA_READ);
static_assert((int)IB_WR_ATOMIC_CMP_AND_SWP == (int)VHCA_WR_ATOMIC_CMP_AND_SWP);
static_assert((int)IB_WR_ATOMIC_FETCH_AND_ADD == (int)VHCA_WR_ATOMIC_FETCH_AND_ADD);
static_assert((int)IB_WR_SEND_WITH_INV == (int)VHCA_WR_SEND_WITH_INV);
static_assert((int)IB_WR_LOCAL_INV == (int)VHCA_WR_LOCAL_INV);
static_assert((int)IB_WR_REG_MR == (int)VHCA_WR_REG_MR);
/*
 * FLUSH and ATOMIC WRITE keep their values, but struct ib_send_wr has no
 * room for their operands: kernel users cannot post them (as on rxe).
 */
static_assert((int)IB_WR_FLUSH == (int)VHCA_WR_FLUSH);
static_assert((int)IB_WR_ATOMIC_WRITE == (int)VHCA_WR_ATOMIC_WRITE);

static void vhcad_set_sge(struct vhca_sge *dst, const struct ib_sge *src)
{
	dst->addr = cpu_to_le64(src->addr);
	dst->length = cpu_to_le32(src->length);
	dst->lkey = cpu_to_le32(src->lkey);
}

/* Kernel inline data: the SGEs hold kernel virtual addresses. */
static int vhcad_set_inline(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			    const struct ib_send_wr *wr)
{
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > qp->max_inline_data - len)
			return -EINVAL;
		memcpy(wqe->inline_data + len, (void *)(uintptr_t)sge->addr,
		       sge->length);
		len += sge->length;
	}
	wqe->flags |= VHCA_WQE_INLINE;
	wqe->inline_len = cpu_to_le32(len);
	return 0;
}

/*
 * The operations each transport has (IBTA 9.4, Table 38 and 10.2.3): UD
 * only sends, UC also RDMA writes and the local memory operations; RC
 * has them all.
 */
static bool vhcad_wr_opcode_valid(enum ib_qp_type type, enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_LOCAL_INV:
	case IB_WR_REG_MR:
		return type == IB_QPT_RC || type == IB_QPT_UC;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return type == IB_QPT_RC;
	default:
		return false;
	}
}

/*
 * A datagram's destination (IBTA 10.2.5): the AH's address vector, the
 * remote QP and the Q_Key as the caller gave it; the device applies the
 * rule that a Q_Key with the high bit set means the QP's own.  On an
 * InfiniBand port the GSI QP sends each MAD with the P_Key its work
 * request names (IBTA 13.4.6.2: a response goes with the request's).
 */
static int vhcad_set_ud(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
			const struct ib_send_wr *wr)
{
	struct vhca_dev *dev = to_vhca_dev(qp->ibqp.device);
	const struct ib_ud_wr *ud = ud_wr(wr);

	if (!ud->ah || ud->remote_qpn > IB_QPN_MASK)
		return -EINVAL;
	wqe->dest_qpn = cpu_to_le32(ud->remote_qpn);
	wqe->qkey = cpu_to_le32(ud->remote_qkey);
	wqe->av = to_vhca_ah(ud->ah)->av;
	if (qp->ibqp.qp_type == IB_QPT_GSI && vhcad_is_ib(dev)) {
		if (ud->pkey_index >= VHCA_IB_PKEY_TBL_LEN)
			return -EINVAL;
		wqe->pkey_index = cpu_to_le32(ud->pkey_index);
	}
	return 0;
}

static int vhcad_build_send_wqe(struct vhca_qp *qp, struct vhca_send_wqe *wqe,
				const struct ib_send_wr *wr, u32 index)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	bool is_ud = type == IB_QPT_UD || type == IB_QPT_GSI ||
		     type == IB_QPT_SMI;
	int err;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > qp->max_send_sge ||
	    !vhcad_wr_opcode_valid(type, wr->opcode))
		return -EINVAL;

	memset(wqe, 0, offsetof(struct vhca_send_wqe, sge));
	wqe->wr_id = cpu_to_le64(index);
	wqe->opcode = wr->opcode;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
		/* The immediate keeps its network byte order, bytes as is. */
		wqe->imm_or_inv = (__force __le32)wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
		wqe->imm_or_inv = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	case IB_WR_SEND:
		break;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		wqe->imm_or_inv = (__force __le32)wr->ex.imm_data;
		fallthrough;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ:
		wqe->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case IB_WR_LOCAL_INV:
		wqe->imm_or_inv = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	case IB_WR_REG_MR:
		err = vhcad_set_reg_mr_wqe(wqe, reg_wr(wr));
		if (err)
			return err;
		break;
	default:
		return -EINVAL;
	}

	if (is_ud) {
		err = vhcad_set_ud(qp, wqe, wr);
		if (err)
			return err;
	}

	if (wr->send_flags & IB_SEND_SIGNALED || qp->sq_sig_all)
		wqe->flags |= VHCA_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= VHCA_WQE_FENCE;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= VHCA_WQE_SOLICITED;

	/* The local operations carry no data (REG_MR's fields fill sge[]). */
	if (wr->opcode == IB_WR_LOCAL_INV || wr->opcode == IB_WR_REG_MR)
		return 0;

	/* Only sends and RDMA writes carry data from the WQE itself. */
	if (wr->send_flags & IB_SEND_INLINE &&
	    wr->opcode != IB_WR_RDMA_READ &&
	    wr->opcode != IB_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IB_WR_ATOMIC_FETCH_AND_ADD)
		return vhcad_set_inline(qp, wqe, wr);

	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		vhcad_set_sge(&wqe->sge[i], &wr->sg_list[i]);
	return 0;
}

/*
 * A receive WQE (the QP's or an SRQ's) for @wr, naming @wr_id; the caller
 * checked num_sge.
 */
void vhcad_write_recv_wqe(struct vhca_recv_wqe *wqe,
			  const struct ib_recv_wr *wr, u64 wr_id)
{
	int i;

	memset(wqe, 0, offsetof(struct vhca_recv_wqe, sge));
	wqe->wr_id = cpu_to_le64(wr_id);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		vhcad_set_sge(&wqe->sge[i], &wr->sg_list[i]);
}

/*
 * IBTA 10.8.2: work requests posted to a QP in RESET, or send requests in
 * INIT or RTR, fail at once.
 */
static bool vhcad_qp_can_post(struct vhca_qp *qp, bool send)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state == IB_QPS_RESET)
		return false;
	return !send || (state != IB_QPS_INIT && state != IB_QPS_RTR);
}

int vhcad_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vhca_dev *dev = to_vhca_dev(ibqp->device);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	u32 entries = BIT(qp->sq_log_size);
	struct vhca_wq *sq = &qp->sq;
	struct vhca_send_wqe *wqe;
	unsigned long flags;
	u32 start, slot;
	int err = 0;

	if (!vhcad_qp_can_post(qp, true)) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&sq->lock, flags);
	start = sq->pi;
	for (; wr; wr = wr->next) {
		if (sq->pi - READ_ONCE(sq->ci) >= entries) {
			err = -ENOMEM;
			break;
		}
		slot = sq->pi & (entries - 1);
		wqe = (struct vhca_send_wqe *)qp->sq_buf.kva + slot;
		err = vhcad_build_send_wqe(qp, wqe, wr, sq->pi);
		if (err)
			break;
		sq->wr_ids[slot] = wr->wr_id;
		sq->pi++;
	}
	if (sq->pi != start)
		vhcad_kernel_doorbell(dev, VHCA_DB_SQ, qp->qpn, sq->pi);
	spin_unlock_irqrestore(&sq->lock, flags);

	if (err)
		*bad_wr = wr;
	return err;
}

int vhcad_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct vhca_dev *dev = to_vhca_dev(ibqp->device);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	u32 entries = BIT(qp->rq_log_size);
	struct vhca_wq *rq = &qp->rq;
	struct vhca_recv_wqe *wqe;
	unsigned long flags;
	u32 start, slot;
	int err = 0;

	/* A QP on an SRQ receives into the SRQ's WQEs (IBTA 10.2.9). */
	if (ibqp->srq || !vhcad_qp_can_post(qp, false)) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&rq->lock, flags);
	start = rq->pi;
	for (; wr; wr = wr->next) {
		if (rq->pi - READ_ONCE(rq->ci) >= entries) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > qp->max_recv_sge) {
			err = -EINVAL;
			break;
		}
		slot = rq->pi & (entries - 1);
		wqe = (struct vhca_recv_wqe *)qp->rq_buf.kva + slot;
		vhcad_write_recv_wqe(wqe, wr, rq->pi);
		rq->wr_ids[slot] = wr->wr_id;
		rq->pi++;
	}
	if (rq->pi != start)
		vhcad_kernel_doorbell(dev, VHCA_DB_RQ, qp->qpn, rq->pi);
	spin_unlock_irqrestore(&rq->lock, flags);

	if (err)
		*bad_wr = wr;
	return err;
}
