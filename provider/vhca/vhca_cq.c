// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: polling and arming CQs.
 *
 * A CQ is a ring of 32-byte CQEs the device writes with an owner bit that
 * flips on each pass (docs/specs/vhca.rst, "Event and completion queues");
 * the consumer index goes to the doorbell record, which the device reads
 * when the ring looks full.
 *
 * How a CQE finds its work request: the provider writes each WQE's index
 * in its queue (free running, vhca_qp.c) into the WQE's wr_id, and keeps
 * the caller's wr_id in the queue's wr_ids[] slot.  The device returns the
 * WQE's wr_id in the CQE, so the CQE names its WQE exactly.  Completions of
 * one queue come in order (IBTA 10.8.3), so a CQE for WQE i also says that
 * WQEs before i are done, signalled or not: the queue's consumer index
 * becomes i + 1.  That is what frees ring slots for post_send/post_recv.
 */
#include <errno.h>
#include <stdatomic.h>

#include <util/udma_barrier.h>

#include "vhca.h"
#include "vhca_verbs.h"

/* The CQE at @index if the device has written it. */
static struct vhca_cqe *vhca_cq_peek(struct vhca_cq *cq, uint32_t index)
{
	struct vhca_cqe *cqe =
		&cq->ring[index & ((1u << cq->log_size) - 1)];
	uint8_t owner = ((index >> cq->log_size) & 1) ^ 1;

	if ((atomic_load_explicit((_Atomic(uint8_t) *)&cqe->owner,
				  memory_order_relaxed) & 1) != owner)
		return NULL;
	return cqe;
}

static enum ibv_wc_opcode vhca_wc_opcode(uint8_t opcode)
{
	switch (opcode) {
	case VHCA_WC_SEND:
		return IBV_WC_SEND;
	case VHCA_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case VHCA_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case VHCA_WC_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case VHCA_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case VHCA_WC_BIND_MW:
		return IBV_WC_BIND_MW;
	case VHCA_WC_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case VHCA_WC_FLUSH:
		return IBV_WC_FLUSH;
	case VHCA_WC_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case VHCA_WC_RECV_RDMA_WITH_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	default:
		return IBV_WC_RECV;
	}
}

/*
 * Fill @wc from @cqe.  Returns false for a CQE that reports nothing: its QP
 * is gone or was reset (vhca_cq_clean), or it names no posted WQE.
 */
static bool vhca_cqe_to_wc(struct vhca_cq *cq, const struct vhca_cqe *cqe,
			   struct ibv_wc *wc)
{
	struct vhca_context *ctx = to_vhca_ctx(cq->vcq.cq.context);
	uint32_t qpn = le32toh(cqe->qpn);
	bool is_recv = cqe->opcode & VHCA_WC_RECV;
	uint32_t index, mask;
	struct vhca_qp *qp;
	struct vhca_wq *wq;

	qp = qpn ? vhca_find_qp(ctx, qpn) : NULL;
	/*
	 * An XRC SRQ's receive completion names the target QP (annex
	 * A14), which may be another process's or a receive QP that is
	 * in no table: the WQE's wr_id is the caller's, as for any SRQ.
	 */
	if (!qp && qpn && is_recv && cq->xrc_srqs) {
		wc->wr_id = le64toh(cqe->wr_id);
	} else if (!qp) {
		return false;
	} else if (is_recv && qp->vqp.qp.srq) {
		/* An SRQ's WQE carries the caller's wr_id (vhca_srq.c). */
		wc->wr_id = le64toh(cqe->wr_id);
	} else {
		wq = is_recv ? &qp->rq : &qp->sq;
		mask = (1u << wq->log_size) - 1;
		index = (uint32_t)le64toh(cqe->wr_id);

		pthread_spin_lock(&wq->lock);
		if (index - wq->ci > mask ||
		    index - wq->ci >= wq->pi - wq->ci) {
			pthread_spin_unlock(&wq->lock);
			verbs_warn(&ctx->ibv_ctx,
				   "CQ %u: CQE of QP %u names %s WQE %u, not outstanding\n",
				   cq->cqn, qpn, is_recv ? "receive" : "send",
				   index);
			return false;
		}
		wc->wr_id = wq->wr_ids[index & mask];
		wq->ci = index + 1;
		pthread_spin_unlock(&wq->lock);
	}

	wc->status = cqe->status <= IBV_WC_GENERAL_ERR ? cqe->status :
							 IBV_WC_GENERAL_ERR;
	wc->opcode = vhca_wc_opcode(cqe->opcode);
	wc->vendor_err = le32toh(cqe->vendor_err);
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = qpn;
	/* Bits 31:24 of a UD receive's src_qp: its P_Key index (IB). */
	wc->src_qp = le32toh(cqe->src_qp) & VHCA_QPN_MASK;
	wc->wc_flags = 0;
	wc->imm_data = 0;
	/*
	 * RoCE has no LIDs and the device has one P_Key: 0, as rxe reports
	 * them.  A UD receive on RoCE says whether it came over IPv4 or IPv6
	 * (IBTA annex A17.4.5.1), and ibv_wc has no field for it: its sl
	 * carries the RoCE packet type, as mlx5's provider reports it (the
	 * CQE's sl bits on RoCE: bit 3 UDP, bits 2:0 the L3 header).  UCX's
	 * UD transport reads it to find the destination address in the GRH
	 * area, and drops a datagram not addressed to one of its GIDs.  The
	 * kernel driver reports a tagged frame's PCP as the SL instead, as
	 * mlx5_ib does.
	 */
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;
	if (!ctx->ib_port && (cqe->flags & VHCA_CQE_VLAN))
		wc->vendor_err = 0;
	if (!ctx->ib_port && (cqe->flags & VHCA_CQE_NET_IPV4))
		wc->sl = VHCA_WC_SL_ROCE_UDP | VHCA_WC_SL_ROCE_IPV4;
	else if (!ctx->ib_port && (cqe->flags & VHCA_CQE_NET_IPV6))
		wc->sl = VHCA_WC_SL_ROCE_UDP | VHCA_WC_SL_ROCE_IPV6;
	/*
	 * A successful UD receive on an InfiniBand port (IBTA 11.4.2.1):
	 * the LRH's SLID and SL, the DLID's path bits and the P_Key index
	 * it matched, in place of vendor_err.
	 */
	if (ctx->ib_port && is_recv && qp && qp->vqp.qp.qp_type == IBV_QPT_UD &&
	    wc->status == IBV_WC_SUCCESS) {
		wc->vendor_err = 0;
		wc->pkey_index = le32toh(cqe->src_qp) >> 24;
		wc->slid = le16toh(cqe->slid);
		wc->sl = cqe->sl;
		wc->dlid_path_bits = cqe->dlid_path_bits;
	}
	/*
	 * A UD receive starts with the GRH area (IBTA 11.4.1.1).  ibv_wc has
	 * no field for the network header type (VHCA_CQE_NET_IPV4/IPV6):
	 * libibverbs' ibv_init_ah_from_wc() reads it from the area itself.
	 * On an InfiniBand port the area holds a GRH only if the packet had
	 * one.
	 */
	if (cqe->flags & VHCA_CQE_GRH)
		wc->wc_flags |= IBV_WC_GRH;
	if (cqe->flags & VHCA_CQE_WITH_IMM) {
		/* The immediate stays in network byte order, as ibv_wc has it. */
		wc->imm_data = (__be32)cqe->imm_or_inv;
		wc->wc_flags |= IBV_WC_WITH_IMM;
	} else if (cqe->flags & VHCA_CQE_WITH_INV) {
		wc->invalidated_rkey = le32toh(cqe->imm_or_inv);
		wc->wc_flags |= IBV_WC_WITH_INV;
	}
	return true;
}

/*
 * The next completion that reports something, into @wc; false when the
 * ring holds no more.  Every entry passed is consumed (ci moves on); the
 * caller tells the device with vhca_cq_update_dbrec().  CQ lock held.
 */
static bool vhca_cq_poll_one(struct vhca_cq *cq, struct ibv_wc *wc)
{
	struct vhca_cqe *entry;
	struct vhca_cqe cqe;

	while ((entry = vhca_cq_peek(cq, cq->ci))) {
		/* Read the entry only after its owner byte. */
		udma_from_device_barrier();
		cqe = *entry;
		cq->ci++;
		if (vhca_cqe_to_wc(cq, &cqe, wc))
			return true;
	}
	return false;
}

/*
 * Release: the entries are read before the device learns it may write over
 * them.  CQ lock held.
 */
static void vhca_cq_update_dbrec(struct vhca_cq *cq, uint32_t start)
{
	if (cq->ci != start)
		atomic_store_explicit((_Atomic(uint32_t) *)cq->dbrec,
				      htole32(cq->ci), memory_order_release);
}

/*
 * The CQ was empty: say so to the CPU, as a spin-wait loop does (x86
 * PAUSE, Arm YIELD).  Programs that poll call this in a tight loop, and
 * vhca's completions are written by a host thread that may be waiting
 * for the very core this vCPU spins on.  Under TCG a PAUSE gives the host
 * CPU away (qemu-patches/0003), so a polling program lets the device run
 * at once instead of after the host scheduler's time slice; on hardware
 * virtualisation it is what pause-loop exiting looks for.  On a real CPU
 * it delays only an empty poll, by ten to about 140 cycles depending on
 * the core, which a loop that found nothing can spare.
 */
static inline void vhca_cq_empty_hint(void)
{
#if defined(__i386__) || defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	asm volatile("yield" ::: "memory");
#endif
}

int vhca_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	uint32_t start;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	start = cq->ci;
	while (n < num_entries && vhca_cq_poll_one(cq, &wc[n]))
		n++;
	vhca_cq_update_dbrec(cq, start);
	pthread_spin_unlock(&cq->lock);
	if (!n)
		vhca_cq_empty_hint();
	return n;
}

/*
 * The extended poll API (man ibv_create_cq_ex): start_poll takes the CQ's
 * lock and presents the first completion, next_poll the following ones,
 * end_poll hands the consumed entries back to the device and unlocks.  The
 * lock stays held when next_poll finds nothing: the caller still calls
 * end_poll.  Each completion is decoded once, by vhca_cqe_to_wc(), and
 * the read_* callbacks return its fields.
 */
static void vhca_cq_ex_present(struct vhca_cq *cq)
{
	cq->vcq.cq_ex.wr_id = cq->ex_wc.wr_id;
	cq->vcq.cq_ex.status = cq->ex_wc.status;
}

static int vhca_start_poll(struct ibv_cq_ex *ibcq,
			   struct ibv_poll_cq_attr *attr)
{
	struct vhca_cq *cq = to_vhca_cq_ex(ibcq);

	if (attr->comp_mask)
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	cq->ex_start_ci = cq->ci;
	if (!vhca_cq_poll_one(cq, &cq->ex_wc)) {
		/* Entries that reported nothing are still consumed. */
		vhca_cq_update_dbrec(cq, cq->ex_start_ci);
		pthread_spin_unlock(&cq->lock);
		vhca_cq_empty_hint();
		return ENOENT;
	}
	vhca_cq_ex_present(cq);
	return 0;
}

static int vhca_next_poll(struct ibv_cq_ex *ibcq)
{
	struct vhca_cq *cq = to_vhca_cq_ex(ibcq);

	if (!vhca_cq_poll_one(cq, &cq->ex_wc))
		return ENOENT;
	vhca_cq_ex_present(cq);
	return 0;
}

static void vhca_end_poll(struct ibv_cq_ex *ibcq)
{
	struct vhca_cq *cq = to_vhca_cq_ex(ibcq);

	vhca_cq_update_dbrec(cq, cq->ex_start_ci);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode vhca_wc_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.opcode;
}

static uint32_t vhca_wc_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.vendor_err;
}

static unsigned int vhca_wc_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.wc_flags;
}

static uint32_t vhca_wc_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.byte_len;
}

/*
 * The immediate in network byte order, or for IBV_WC_WITH_INV the
 * invalidated R_Key (ibv_wc keeps both in one union, as the CQE does).
 */
static __be32 vhca_wc_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.imm_data;
}

static uint32_t vhca_wc_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.qp_num;
}

static uint32_t vhca_wc_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.src_qp;
}

static uint32_t vhca_wc_read_slid(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.slid;
}

static uint8_t vhca_wc_read_sl(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.sl;
}

static uint8_t vhca_wc_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return to_vhca_cq_ex(ibcq)->ex_wc.dlid_path_bits;
}

/* The callbacks of an extended CQ, for the fields @wc_flags asks for. */
void vhca_cq_ex_set_ops(struct vhca_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;

	ex->start_poll = vhca_start_poll;
	ex->next_poll = vhca_next_poll;
	ex->end_poll = vhca_end_poll;
	ex->read_opcode = vhca_wc_read_opcode;
	ex->read_vendor_err = vhca_wc_read_vendor_err;
	ex->read_wc_flags = vhca_wc_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = vhca_wc_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = vhca_wc_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = vhca_wc_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = vhca_wc_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = vhca_wc_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = vhca_wc_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = vhca_wc_read_dlid_path_bits;
}

int vhca_arm_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vhca_context *ctx = to_vhca_ctx(ibcq->context);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	uint32_t value;

	pthread_spin_lock(&cq->lock);
	value = (solicited_only ? VHCA_CQ_ARM_SOLICITED : VHCA_CQ_ARM_NEXT) |
		(cq->ci & VHCA_CQ_CI_MASK);
	pthread_spin_unlock(&cq->lock);

	/* The event is for the next completion; the caller polls after this. */
	vhca_ring_doorbell(ctx, VHCA_DB_CQ, cq->cqn, value);
	return 0;
}

/*
 * Drop the completions of QP @qpn still in the CQ, as the QP goes to RESET
 * or away: their indices would name the wrong WQEs.  The device does not
 * write entries the consumer has not passed, so rewriting the QP number of
 * an unconsumed entry is safe; QPN 0 is never a vhca QP.  CQ lock held.
 */
void vhca_cq_clean(struct vhca_cq *cq, uint32_t qpn)
{
	struct vhca_cqe *cqe;
	uint32_t index;

	for (index = cq->ci; (cqe = vhca_cq_peek(cq, index)); index++) {
		if (index - cq->ci >= (1u << cq->log_size))
			break;
		udma_from_device_barrier();
		if (le32toh(cqe->qpn) == qpn)
			cqe->qpn = 0;
	}
}
