// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: shared receive queues.
 *
 * An SRQ (docs/specs/vhca.rst, "Shared receive queues"; IBTA 10.2.9) is a
 * ring of 128-byte receive WQEs that every QP created with it takes its
 * receive WQEs from, in ring order.  post_srq_recv writes WQE i into slot
 * i & (size - 1) and rings the SRQ doorbell with the free-running producer
 * index; the device writes the count of WQEs it has taken to the SRQ's
 * consumer record, and slot i is free again once that count is past i.
 *
 * An SRQ's WQE carries the caller's own wr_id, which the device returns in
 * the CQE (vhca_cq.c): a slot may be reused before its completion is
 * polled, so no table indexed by slot could say whose completion it is.
 *
 * Resizing (ibv_modify_srq with IBV_SRQ_MAX_WR) hands the kernel a new
 * ring; the device copies the WQEs posted and not yet taken to the same
 * indices of it.  Posting waits on the SRQ's lock meanwhile, so no WQE is
 * written to the ring the device is leaving.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <util/udma_barrier.h>

#include "vhca.h"
#include "vhca_abi.h"
#include "vhca_verbs.h"

static size_t vhca_srq_ring_size(uint8_t log_size)
{
	return align((size_t)VHCA_RECV_WQE_SIZE << log_size, vhca_page_size());
}

/* A size the device and the WQE layout can hold (IBTA 11.2.3). */
static int vhca_srq_check_size(struct vhca_context *ctx, uint32_t max_wr)
{
	if (!max_wr || max_wr > ctx->max_srq_wr ||
	    vhca_log_size(max_wr) > VHCA_WQ_MAX_LOG_SIZE)
		return EINVAL;
	return 0;
}

/*
 * A basic SRQ (ibv_create_srq) or, with @attr_ex, an XRC SRQ in domain
 * attr_ex->xrcd whose completions go to attr_ex->cq (annex A14).
 */
static struct ibv_srq *vhca_srq_new(struct ibv_pd *pd,
				    struct ibv_srq_init_attr *attr,
				    struct ibv_srq_init_attr_ex *attr_ex)
{
	struct vhca_context *ctx = to_vhca_ctx(pd->context);
	struct vhca_cmd_create_xsrq_resp xresp = {};
	struct vhca_cmd_create_xsrq xcmd = {};
	struct vhca_cmd_create_srq_resp resp = {};
	struct vhca_cmd_create_srq cmd = {};
	struct ibv_srq_attr *sattr = attr_ex ? &attr_ex->attr : &attr->attr;
	struct vhca_srq *srq;
	int ret;

	ret = vhca_srq_check_size(ctx, sattr->max_wr);
	if (!ret && sattr->max_sge > ctx->max_srq_sge)
		ret = EINVAL;
	if (ret) {
		errno = ret;
		return NULL;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	srq->log_size = vhca_log_size(sattr->max_wr);
	srq->ring_size = vhca_srq_ring_size(srq->log_size);
	srq->ring = vhca_alloc_queue_mem(srq->ring_size);
	if (!srq->ring)
		goto err_free_srq;
	/* The record stays where it is when the SRQ moves to another ring. */
	srq->ci_rec = vhca_alloc_queue_mem(vhca_page_size());
	if (!srq->ci_rec)
		goto err_free_ring;
	if (pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE))
		goto err_free_rec;

	if (attr_ex) {
		xcmd.buf_addr = (uintptr_t)srq->ring;
		xcmd.ci_addr = (uintptr_t)srq->ci_rec;
		xcmd.log_size = srq->log_size;
		ret = ibv_cmd_create_srq_ex(pd->context, &srq->vsrq, attr_ex,
					    &xcmd.ibv_cmd, sizeof(xcmd),
					    &xresp.ibv_resp, sizeof(xresp));
		srq->srqn = xresp.srqn;
	} else {
		cmd.buf_addr = (uintptr_t)srq->ring;
		cmd.ci_addr = (uintptr_t)srq->ci_rec;
		cmd.log_size = srq->log_size;
		ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr,
					 &cmd.ibv_cmd, sizeof(cmd),
					 &resp.ibv_resp, sizeof(resp));
		srq->srqn = resp.srqn;
	}
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "create SRQ of %u WQEs failed: %s\n",
			  sattr->max_wr, strerror(ret));
		errno = ret;
		goto err_destroy_lock;
	}
	/* The command returned the size and SGEs the kernel granted. */
	srq->max_sge = sattr->max_sge;
	return &srq->vsrq.srq;

err_destroy_lock:
	pthread_spin_destroy(&srq->lock);
err_free_rec:
	free(srq->ci_rec);
err_free_ring:
	free(srq->ring);
err_free_srq:
	free(srq);
	return NULL;
}

struct ibv_srq *vhca_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	return vhca_srq_new(pd, attr, NULL);
}

/*
 * An XRC SRQ (annex A14): XRC requests name it by number; its receive
 * completions go to its CQ, with the number of a target QP that may be
 * another process's, so that CQ learns to take them without their QP.
 */
static struct ibv_srq *vhca_create_xrc_srq(struct ibv_context *ibctx,
					   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t needed = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
				IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct vhca_cq *cq;
	struct ibv_srq *ibsrq;

	if ((attr->comp_mask & needed) != needed || !attr->pd ||
	    !attr->xrcd || !attr->cq || attr->pd->context != ibctx ||
	    attr->cq->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	cq = to_vhca_cq(attr->cq);
	ibsrq = vhca_srq_new(attr->pd, NULL, attr);
	if (!ibsrq)
		return NULL;
	pthread_spin_lock(&cq->lock);
	cq->xrc_srqs++;
	pthread_spin_unlock(&cq->lock);
	return ibsrq;
}

/*
 * ibv_create_srq_ex(): basic and XRC SRQs.  libibverbs itself sends a
 * basic SRQ with no other attributes to create_srq; tag matching SRQs
 * need tag matching, which the device does not have.
 */
struct ibv_srq *vhca_create_srq_ex(struct ibv_context *ibctx,
				   struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr base = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
	};
	struct ibv_srq *ibsrq;

	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type == IBV_SRQT_XRC) {
		if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD |
						  IBV_SRQ_INIT_ATTR_TYPE |
						  IBV_SRQ_INIT_ATTR_XRCD |
						  IBV_SRQ_INIT_ATTR_CQ)) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		return vhca_create_xrc_srq(ibctx, attr);
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD |
					  IBV_SRQ_INIT_ATTR_TYPE) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}

	ibsrq = vhca_create_srq(attr->pd, &base);
	if (!ibsrq)
		return NULL;
	/* What ibv_create_srq() sets after the provider's create_srq. */
	ibsrq->srq_context = attr->srq_context;
	ibsrq->pd = attr->pd;
	ibsrq->events_completed = 0;
	attr->attr = base.attr;
	return ibsrq;
}

/* The number XRC senders name this SRQ by (annex A14). */
int vhca_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct vhca_srq *srq = to_vhca_srq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	*srq_num = srq->srqn;
	return 0;
}

/*
 * IBV_SRQ_MAX_WR moves the SRQ to a new ring, IBV_SRQ_LIMIT arms the limit
 * event (IBTA 10.2.9.5; the kernel refuses a limit past the size).  The
 * device refuses a ring too small for the WQEs posted and not yet taken.
 */
int vhca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask)
{
	struct vhca_context *ctx = to_vhca_ctx(ibsrq->context);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	struct vhca_cmd_modify_srq cmd = {};
	size_t ring_size = 0;
	uint8_t log_size = 0;
	void *ring = NULL;
	int ret;

	if (attr_mask & IBV_SRQ_MAX_WR) {
		ret = vhca_srq_check_size(ctx, attr->max_wr);
		if (ret)
			return ret;
		log_size = vhca_log_size(attr->max_wr);
		ring_size = vhca_srq_ring_size(log_size);
		ring = vhca_alloc_queue_mem(ring_size);
		if (!ring)
			return ENOMEM;
		cmd.buf_addr = (uintptr_t)ring;
		cmd.log_size = log_size;
	}

	pthread_spin_lock(&srq->lock);
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (!ret && ring) {
		void *old = srq->ring;

		srq->ring = ring;
		srq->ring_size = ring_size;
		srq->log_size = log_size;
		ring = old;
	}
	pthread_spin_unlock(&srq->lock);

	/* The kernel has let go of the ring the device no longer reads. */
	free(ring);
	return ret;
}

int vhca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int vhca_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	if (srq->vsrq.srq_type == IBV_SRQT_XRC) {
		struct vhca_cq *cq = to_vhca_cq(srq->vsrq.cq);

		pthread_spin_lock(&cq->lock);
		cq->xrc_srqs--;
		pthread_spin_unlock(&cq->lock);
	}
	pthread_spin_destroy(&srq->lock);
	free(srq->ci_rec);
	free(srq->ring);
	free(srq);
	return 0;
}

/*
 * Whether slot pi is free: the device has taken the WQE that was there.
 * The record is read again only when the count last read says full; the
 * device read the WQEs it counted, so their slots may be written after.
 */
static bool vhca_srq_has_room(struct vhca_srq *srq)
{
	uint32_t size = 1u << srq->log_size;

	if (srq->pi - srq->taken < size)
		return true;
	srq->taken = le32toh(atomic_load_explicit((_Atomic(uint32_t) *)
						  srq->ci_rec,
						  memory_order_acquire));
	return srq->pi - srq->taken < size;
}

int vhca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct vhca_context *ctx = to_vhca_ctx(ibsrq->context);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	struct vhca_recv_wqe *wqe;
	uint32_t start;
	int err = 0;

	pthread_spin_lock(&srq->lock);
	start = srq->pi;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > srq->max_sge) {
			err = EINVAL;
			break;
		}
		if (!vhca_srq_has_room(srq)) {
			err = ENOMEM;
			break;
		}
		wqe = (struct vhca_recv_wqe *)srq->ring +
		      (srq->pi & ((1u << srq->log_size) - 1));
		vhca_write_recv_wqe(wqe, wr, wr->wr_id);
		srq->pi++;
	}
	if (srq->pi != start) {
		/* The WQEs reach memory before the device hears of them. */
		udma_to_device_barrier();
		vhca_ring_doorbell(ctx, VHCA_DB_SRQ, srq->srqn, srq->pi);
	}
	pthread_spin_unlock(&srq->lock);

	if (err)
		*bad_wr = wr;
	return err;
}
