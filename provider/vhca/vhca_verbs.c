// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: verbs that go through the kernel driver.
 *
 * None of these is on the data path: each is one uverbs command, and the
 * kernel driver does the work (or refuses it) with the device's admin
 * queue.  CQs and QPs live in memory allocated here, which the kernel
 * driver pins and describes to the device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ccan/array_size.h>
#include <ccan/ilog.h>

#include "vhca.h"
#include "vhca_abi.h"
#include "vhca_verbs.h"

int vhca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw_ver;
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	/* The device reports major << 32 | minor << 16 | sub_minor. */
	fw_ver = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw_ver >> 32) & 0xffff,
		 (unsigned int)(fw_ver >> 16) & 0xffff,
		 (unsigned int)fw_ver & 0xffff);

	return 0;
}

int vhca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *vhca_alloc_pd(struct ibv_context *ibctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd = {};
	struct ibv_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	/* On failure errno holds the kernel's answer, EOPNOTSUPP included. */
	if (ibv_cmd_alloc_pd(ibctx, pd, &cmd, sizeof(cmd), &resp,
			     sizeof(resp))) {
		free(pd);
		return NULL;
	}

	return pd;
}

int vhca_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;

	free(pd);
	return 0;
}

/*
 * XRC domains (IBTA annex A14): the kernel shares one between the
 * processes that open the same file (attr->fd) and numbers it.
 */
struct ibv_xrcd *vhca_open_xrcd(struct ibv_context *ibctx,
				struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;

	ret = ibv_cmd_open_xrcd(ibctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

int vhca_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;

	free(xrcd);
	return 0;
}

struct ibv_mr *vhca_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}

	return &vmr->ibv_mr;
}

/*
 * The kernel driver reregisters the MR in place and its lkey and rkey stay
 * the same; ibv_cmd_rereg_mr() stores them in @vmr (drivers/vhca/vhca_mr.c).
 */
int vhca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int vhca_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

/*
 * Memory windows (IBTA 10.6.7): the kernel driver makes and frees them
 * (ALLOC_MW, DEALLOC_MW); binding is a work request (vhca_qp.c).  The
 * device has type 1 and type 2B; the kernel refuses any other type with
 * EINVAL.
 */
struct ibv_mw *vhca_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;

	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int vhca_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;

	free(mw);
	return 0;
}

size_t vhca_page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

void *vhca_alloc_queue_mem(size_t size)
{
	void *buf;

	if (posix_memalign(&buf, vhca_page_size(), size))
		return NULL;
	memset(buf, 0, size);
	return buf;
}

/* log2 of the smallest power of two >= n, at least 1 (two entries). */
uint8_t vhca_log_size(uint32_t n)
{
	return n <= 2 ? 1 : ilog32(n - 1);
}

/*
 * What a CQE carries (struct vhca_cqe): the SLID, SL and DLID path bits
 * are 0 on RoCE, as rxe reports them.  The device does not time its
 * completions, so IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and the others are
 * refused.
 */
#define VHCA_SUP_WC_FLAGS						\
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |			\
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |			\
	 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |			\
	 IBV_WC_EX_WITH_DLID_PATH_BITS)

/*
 * A single-threaded CQ is a hint the provider may ignore: its lock costs
 * little uncontended.  libibverbs does not pass it to the kernel.
 */
#define VHCA_SUP_CQ_CREATE_FLAGS	IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static struct vhca_cq *
vhca_create_cq_common(struct ibv_context *ibctx,
		      const struct ibv_cq_init_attr_ex *attr)
{
	struct vhca_context *ctx = to_vhca_ctx(ibctx);
	struct vhca_cmd_create_cq_ex_resp resp = {};
	struct vhca_cmd_create_cq_ex cmd = {};
	size_t ring_size;
	struct vhca_cq *cq;
	int ret;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     attr->flags & ~(uint32_t)VHCA_SUP_CQ_CREATE_FLAGS) ||
	    attr->wc_flags & ~(uint64_t)VHCA_SUP_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	/* One entry stays free: the ring holds cqe + 1 entries or more. */
	if (attr->cqe < 1 || attr->cqe > ctx->max_cqe) {
		errno = EINVAL;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	cq->log_size = vhca_log_size(attr->cqe + 1);
	if (cq->log_size > VHCA_CQ_MAX_LOG_SIZE) {
		errno = EINVAL;
		goto err_free_cq;
	}
	ring_size = sizeof(struct vhca_cqe) << cq->log_size;
	cq->buf_size = align(ring_size + sizeof(*cq->dbrec),
			     vhca_page_size());
	cq->buf = vhca_alloc_queue_mem(cq->buf_size);
	if (!cq->buf)
		goto err_free_cq;
	cq->ring = cq->buf;
	cq->dbrec = (uint32_t *)((uint8_t *)cq->buf + ring_size);

	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE))
		goto err_free_buf;

	cmd.buf_addr = (uintptr_t)cq->ring;
	cmd.dbrec_addr = (uintptr_t)cq->dbrec;
	cmd.log_size = cq->log_size;
	ret = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "create CQ of %u entries failed: %s\n",
			  attr->cqe, strerror(ret));
		errno = ret;
		goto err_destroy_lock;
	}
	cq->cqn = resp.cqn;
	return cq;

err_destroy_lock:
	pthread_spin_destroy(&cq->lock);
err_free_buf:
	free(cq->buf);
err_free_cq:
	free(cq);
	return NULL;
}

struct ibv_cq *vhca_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.channel = channel,
		.comp_vector = comp_vector,
	};
	struct vhca_cq *cq;

	if (cqe < 1) {
		errno = EINVAL;
		return NULL;
	}
	cq = vhca_create_cq_common(ibctx, &attr);
	return cq ? &cq->vcq.cq : NULL;
}

struct ibv_cq_ex *vhca_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct vhca_cq *cq;

	cq = vhca_create_cq_common(ibctx, attr);
	if (!cq)
		return NULL;
	vhca_cq_ex_set_ops(cq, attr->wc_flags);
	return &cq->vcq.cq_ex;
}

int vhca_destroy_cq(struct ibv_cq *ibcq)
{
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	pthread_spin_destroy(&cq->lock);
	free(cq->resized_ring);
	free(cq->buf);
	free(cq);
	return 0;
}

/*
 * ibv_resize_cq (IBTA 11.2.8.3): the device moves the completions not yet
 * polled to the start of a new ring and writes 0 to the doorbell record,
 * which stays where it is (in cq->buf, with the first ring).  Polling waits
 * on the CQ's lock meanwhile, and then starts again at index 0.  Works
 * alike for CQs from ibv_create_cq and ibv_create_cq_ex.
 */
int vhca_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct vhca_context *ctx = to_vhca_ctx(ibcq->context);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	struct ib_uverbs_resize_cq_resp resp = {};
	struct vhca_cmd_resize_cq cmd = {};
	uint8_t log_size;
	void *ring;
	int ret;

	if (cqe < 1 || (uint32_t)cqe > ctx->max_cqe)
		return EINVAL;
	log_size = vhca_log_size(cqe + 1);
	if (log_size > VHCA_CQ_MAX_LOG_SIZE)
		return EINVAL;
	ring = vhca_alloc_queue_mem(align(sizeof(struct vhca_cqe) << log_size,
					  vhca_page_size()));
	if (!ring)
		return ENOMEM;
	cmd.buf_addr = (uintptr_t)ring;
	cmd.log_size = log_size;

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd), &resp,
				sizeof(resp));
	if (ret) {
		pthread_spin_unlock(&cq->lock);
		free(ring);
		return ret;
	}
	/* The first ring shares its allocation with the record: it stays. */
	free(cq->resized_ring);
	cq->resized_ring = ring;
	cq->ring = ring;
	cq->log_size = log_size;
	cq->ci = 0;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

static int vhca_store_qp(struct vhca_context *ctx, uint32_t qpn,
			 struct vhca_qp *qp)
{
	uint32_t top = (qpn >> VHCA_QP_TABLE_SHIFT) & VHCA_QP_TABLE_MASK;

	if (!ctx->qp_table[top].refcnt) {
		ctx->qp_table[top].table = calloc(VHCA_QP_TABLE_SIZE,
						  sizeof(struct vhca_qp *));
		if (!ctx->qp_table[top].table)
			return ENOMEM;
	}
	ctx->qp_table[top].refcnt++;
	ctx->qp_table[top].table[qpn & VHCA_QP_TABLE_MASK] = qp;
	return 0;
}

static void vhca_clear_qp(struct vhca_context *ctx, uint32_t qpn)
{
	uint32_t top = (qpn >> VHCA_QP_TABLE_SHIFT) & VHCA_QP_TABLE_MASK;

	if (!--ctx->qp_table[top].refcnt) {
		free(ctx->qp_table[top].table);
		ctx->qp_table[top].table = NULL;
	} else {
		ctx->qp_table[top].table[qpn & VHCA_QP_TABLE_MASK] = NULL;
	}
}

/*
 * The CQ of a QP's receive completions: an XRC send QP receives nothing
 * (annex A14), its send CQ stands in.
 */
static struct vhca_cq *vhca_qp_recv_cq(struct ibv_qp *ibqp)
{
	if (ibqp->qp_type == IBV_QPT_XRC_SEND || !ibqp->recv_cq)
		return to_vhca_cq(ibqp->send_cq);
	return to_vhca_cq(ibqp->recv_cq);
}

/*
 * Take the locks of a QP's CQs, always in the same (address) order so two
 * threads working on QPs that share CQs cannot deadlock.
 */
static void vhca_lock_cqs(struct ibv_qp *ibqp)
{
	struct vhca_cq *send_cq = to_vhca_cq(ibqp->send_cq);
	struct vhca_cq *recv_cq = vhca_qp_recv_cq(ibqp);

	if (send_cq == recv_cq) {
		pthread_spin_lock(&send_cq->lock);
	} else if (send_cq < recv_cq) {
		pthread_spin_lock(&send_cq->lock);
		pthread_spin_lock(&recv_cq->lock);
	} else {
		pthread_spin_lock(&recv_cq->lock);
		pthread_spin_lock(&send_cq->lock);
	}
}

static void vhca_unlock_cqs(struct ibv_qp *ibqp)
{
	struct vhca_cq *send_cq = to_vhca_cq(ibqp->send_cq);
	struct vhca_cq *recv_cq = vhca_qp_recv_cq(ibqp);

	pthread_spin_unlock(&send_cq->lock);
	if (send_cq != recv_cq)
		pthread_spin_unlock(&recv_cq->lock);
}

/* Drop the QP's completions still waiting in its CQs; CQ locks held. */
static void vhca_clean_cqs(struct vhca_qp *qp)
{
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct vhca_cq *send_cq = to_vhca_cq(ibqp->send_cq);
	struct vhca_cq *recv_cq = vhca_qp_recv_cq(ibqp);

	vhca_cq_clean(send_cq, ibqp->qp_num);
	if (recv_cq != send_cq)
		vhca_cq_clean(recv_cq, ibqp->qp_num);
}

static int vhca_wq_alloc(struct vhca_wq *wq, uint8_t log_size,
			 size_t wqe_size)
{
	wq->log_size = log_size;
	wq->ring_size = align(wqe_size << log_size, vhca_page_size());
	wq->ring = vhca_alloc_queue_mem(wq->ring_size);
	if (!wq->ring)
		return ENOMEM;
	wq->wr_ids = calloc(1u << log_size, sizeof(*wq->wr_ids));
	if (!wq->wr_ids)
		goto err_free_ring;
	if (pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE))
		goto err_free_wr_ids;
	return 0;

err_free_wr_ids:
	free(wq->wr_ids);
err_free_ring:
	free(wq->ring);
	return ENOMEM;
}

static void vhca_wq_free(struct vhca_wq *wq)
{
	/* A QP on an SRQ has no receive queue of its own. */
	if (!wq->ring)
		return;
	pthread_spin_destroy(&wq->lock);
	free(wq->wr_ids);
	free(wq->ring);
}

/* A receive ring of its own: not on an SRQ, not XRC (annex A14). */
static bool vhca_qp_has_rq(const struct ibv_qp_init_attr_ex *attr)
{
	return !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND &&
	       attr->qp_type != IBV_QPT_XRC_RECV;
}

/*
 * The transports the device runs, and what the queues will hold.  A UD
 * send WQE keeps its address vector in the header (struct vhca_send_wqe),
 * so UD QPs have the same SGE and inline limits as RC and UC.
 */
static int vhca_check_qp_attr(struct vhca_context *ctx,
			      const struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_qp_cap *cap = &attr->cap;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_XRC_SEND:
		/* An initiator receives nothing (annex A14). */
		if (attr->srq)
			return EINVAL;
		break;
	default:
		return EOPNOTSUPP;
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS &&
	    attr->create_flags)
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if (cap->max_send_wr > ctx->max_qp_wr ||
	    cap->max_send_sge > ctx->max_send_sge ||
	    cap->max_inline_data > ctx->max_inline_data)
		return EINVAL;
	/* With an SRQ the receive queue's caps are ignored (IBTA 11.2.4.1). */
	if (vhca_qp_has_rq(attr) && (cap->max_recv_wr > ctx->max_qp_wr ||
				     cap->max_recv_sge > VHCA_MAX_RECV_SGE))
		return EINVAL;
	return 0;
}

/*
 * An XRC receive QP (the XRC target, annex A14): it has no queues and no
 * CQs, and the kernel creates it on the domain with no udata of ours.
 * Its requests receive into the XRC SRQs they name, whose CQs report the
 * completions, so no CQ needs to find it: it stays out of the QP table.
 */
static struct ibv_qp *vhca_create_xrc_recv_qp(struct ibv_context *ibctx,
					      struct ibv_qp_init_attr_ex *attr)
{
	struct vhca_cmd_create_qp_ex_resp resp = {};
	struct vhca_cmd_create_qp_ex cmd = {};
	struct vhca_qp *qp;
	int ret;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_XRCD |
					  IBV_QP_INIT_ATTR_PD) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp_ex2(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp,
				    sizeof(resp));
	if (ret) {
		verbs_err(verbs_get_ctx(ibctx), "create XRC QP failed: %s\n",
			  strerror(ret));
		free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

/* Open an XRC receive QP another process created on the same domain. */
struct ibv_qp *vhca_open_qp(struct ibv_context *ibctx,
			    struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd = {};
	struct vhca_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_open_qp(ibctx, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

struct ibv_qp *vhca_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct vhca_context *ctx = to_vhca_ctx(ibctx);
	struct vhca_cmd_create_qp_ex_resp resp = {};
	struct vhca_cmd_create_qp_ex cmd = {};
	struct vhca_qp *qp;
	int ret;

	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return vhca_create_xrc_recv_qp(ibctx, attr);
	ret = vhca_check_qp_attr(ctx, attr);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = vhca_qp_ex_set_ops(qp, attr->qp_type,
					 attr->send_ops_flags);
		if (ret)
			goto err_free_qp;
	}

	ret = vhca_wq_alloc(&qp->sq, vhca_log_size(attr->cap.max_send_wr),
			    VHCA_SEND_WQE_SIZE);
	if (ret)
		goto err_free_qp;
	/* A QP on an SRQ takes its receive WQEs from it (IBTA 10.2.9). */
	if (vhca_qp_has_rq(attr)) {
		ret = vhca_wq_alloc(&qp->rq,
				    vhca_log_size(attr->cap.max_recv_wr),
				    VHCA_RECV_WQE_SIZE);
		if (ret)
			goto err_free_sq;
	}
	if (qp->sq.log_size > VHCA_WQ_MAX_LOG_SIZE ||
	    qp->rq.log_size > VHCA_WQ_MAX_LOG_SIZE) {
		ret = EINVAL;
		goto err_free_rq;
	}

	cmd.sq_buf_addr = (uintptr_t)qp->sq.ring;
	cmd.rq_buf_addr = (uintptr_t)qp->rq.ring;
	cmd.sq_log_size = qp->sq.log_size;
	cmd.rq_log_size = qp->rq.log_size;
	ret = ibv_cmd_create_qp_ex2(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp,
				    sizeof(resp));
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "create QP failed: %s\n",
			  strerror(ret));
		goto err_free_rq;
	}

	/* Set after the command, which clears it: ibv_qp_to_qp_ex() works. */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		qp->vqp.comp_mask |= VERBS_QP_EX;

	/* ibv_cmd_create_qp_ex2() returned the caps the kernel granted. */
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge;
	qp->max_inline_data = attr->cap.max_inline_data;
	qp->sq_sig_all = attr->sq_sig_all;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	vhca_lock_cqs(&qp->vqp.qp);
	ret = vhca_store_qp(ctx, qp->vqp.qp.qp_num, qp);
	vhca_unlock_cqs(&qp->vqp.qp);
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	if (ret)
		goto err_destroy;

	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free_rq:
	vhca_wq_free(&qp->rq);
err_free_sq:
	vhca_wq_free(&qp->sq);
err_free_qp:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *vhca_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	qp = vhca_create_qp_ex(pd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

/* Back in RESET, both rings are empty and count from 0, as the device's. */
static void vhca_qp_reset(struct vhca_qp *qp)
{
	struct vhca_wq *wqs[] = { &qp->sq, &qp->rq };
	unsigned int i;

	vhca_lock_cqs(&qp->vqp.qp);
	vhca_clean_cqs(qp);
	for (i = 0; i < ARRAY_SIZE(wqs); i++) {
		if (!wqs[i]->ring)
			continue;
		pthread_spin_lock(&wqs[i]->lock);
		wqs[i]->pi = 0;
		wqs[i]->ci = 0;
		pthread_spin_unlock(&wqs[i]->lock);
	}
	vhca_unlock_cqs(&qp->vqp.qp);
}

int vhca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;

	/* An XRC receive QP has no rings and no CQs to clean. */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET &&
	    ibqp->qp_type != IBV_QPT_XRC_RECV)
		vhca_qp_reset(to_vhca_qp(ibqp));
	return 0;
}

int vhca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int vhca_destroy_qp(struct ibv_qp *ibqp)
{
	struct vhca_context *ctx = to_vhca_ctx(ibqp->context);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	if (ibqp->qp_type == IBV_QPT_XRC_RECV) {
		free(qp);
		return 0;
	}

	/*
	 * The device makes no more completions for it; the ones it made are
	 * dropped, and with the QP gone from the table no poller meets it.
	 */
	pthread_mutex_lock(&ctx->qp_table_mutex);
	vhca_lock_cqs(ibqp);
	vhca_clean_cqs(qp);
	vhca_clear_qp(ctx, ibqp->qp_num);
	vhca_unlock_cqs(ibqp);
	pthread_mutex_unlock(&ctx->qp_table_mutex);

	vhca_wq_free(&qp->rq);
	vhca_wq_free(&qp->sq);
	free(qp);
	return 0;
}
