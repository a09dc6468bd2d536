// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues (docs/specs/vhca.rst, "Shared receive queues";
 * IBTA 10.2.9): a ring of 128-byte receive WQEs that the QPs created with
 * it take their receive WQEs from, in ring order, whichever QP takes one.
 * The producer rings the SRQ doorbell with its free-running producer
 * index; the device writes the count of WQEs it has taken to the SRQ's
 * consumer record, and slot i may be written again once that count is
 * past i.  The provider owns the ring and the record of a user SRQ; the
 * driver those of a kernel SRQ, which post_srq_recv fills.
 *
 * Completions come from the QPs' receive CQs.  An SRQ's WQE carries the
 * caller's own wr_id, which the device returns in the CQE: a slot may be
 * reused before its completion is polled, so no table indexed by slot
 * could say whose completion it is.
 *
 * MODIFY_SRQ with MAX_WR moves the SRQ to a new ring: the device copies
 * the WQEs posted and not yet taken to the same indices of it.  A kernel
 * SRQ stays open for posting meanwhile: each WQE is written to both rings,
 * within the smaller of the two, so whichever ring the device reads it
 * from holds it.
 */

#include <linux/dma-mapping.h>
#include <linux/log2.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

static_assert((int)IB_SRQ_MAX_WR == (int)VHCA_SRQ_MAX_WR);
static_assert((int)IB_SRQ_LIMIT == (int)VHCA_SRQ_LIMIT);
static_assert((int)IB_SRQT_XRC == (int)VHCA_SRQT_XRC);

static u32 vhcad_srq_max_sge(struct vhca_dev *dev)
{
	return min_t(u32, dev->attr.max_srq_sge, VHCA_MAX_RECV_SGE);
}

/* A size the device and the WQE layout can hold (IBTA 11.2.3). */
static int vhcad_srq_check_attr(struct vhca_dev *dev,
				const struct ib_srq_attr *attr)
{
	if (!attr->max_wr || attr->max_wr > dev->attr.max_srq_wr ||
	    attr->max_sge > vhcad_srq_max_sge(dev))
		return -EINVAL;
	return 0;
}

static u8 vhcad_srq_log_size(u32 max_wr)
{
	return max_t(u32, 1, order_base_2(max_wr));
}

static size_t vhcad_srq_ring_size(u8 log_size)
{
	return (size_t)VHCA_RECV_WQE_SIZE << log_size;
}

/* The log size the provider chose for @max_wr WQEs, if it holds them. */
static int vhcad_srq_user_log_size(u8 log_size, u32 max_wr)
{
	if (log_size < 1 || log_size > VHCA_WQ_MAX_LOG_SIZE ||
	    BIT(log_size) < max_wr)
		return -EINVAL;
	return 0;
}

/* The provider's ring and consumer record, named in the udata. */
static int vhcad_srq_pin_user(struct vhca_dev *dev, struct vhca_srq *srq,
			      const struct ib_srq_attr *attr,
			      struct ib_udata *udata, u64 *ci_dma)
{
	struct vhca_create_srq_cmd cmd;
	int err;

	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (memchr_inv(cmd.rsvd, 0, sizeof(cmd.rsvd)) ||
	    !ib_is_udata_cleared(udata, sizeof(cmd),
				 udata->inlen - sizeof(cmd)) ||
	    !IS_ALIGNED(cmd.ci_addr, sizeof(u32)))
		return -EINVAL;
	err = vhcad_srq_user_log_size(cmd.log_size, attr->max_wr);
	if (err)
		return err;
	srq->log_size = cmd.log_size;

	err = vhcad_queue_buf_pin(dev, &srq->buf, cmd.buf_addr,
				  vhcad_srq_ring_size(srq->log_size));
	if (err)
		return err;

	err = vhcad_record_pin(dev, cmd.ci_addr, &srq->ci_umem, ci_dma);
	if (err)
		vhcad_queue_buf_free(dev, &srq->buf);
	return err;
}

/*
 * A kernel SRQ: the ring, and the consumer record apart from it, as the
 * record stays where it is when the SRQ moves to another ring.
 */
static int vhcad_srq_alloc_kernel(struct vhca_dev *dev, struct vhca_srq *srq,
				  const struct ib_srq_attr *attr)
{
	int err;

	srq->log_size = vhcad_srq_log_size(attr->max_wr);
	err = vhcad_queue_buf_alloc(dev, &srq->buf,
				    vhcad_srq_ring_size(srq->log_size));
	if (err)
		return err;

	srq->ci_rec = dma_alloc_coherent(&dev->pdev->dev, sizeof(*srq->ci_rec),
					 &srq->ci_dma, GFP_KERNEL);
	if (!srq->ci_rec) {
		vhcad_queue_buf_free(dev, &srq->buf);
		return -ENOMEM;
	}
	srq->pi = 0;
	srq->taken = 0;
	return 0;
}

static void vhcad_srq_free_bufs(struct vhca_dev *dev, struct vhca_srq *srq)
{
	if (srq->ci_rec)
		dma_free_coherent(&dev->pdev->dev, sizeof(*srq->ci_rec),
				  srq->ci_rec, srq->ci_dma);
	srq->ci_rec = NULL;
	ib_umem_release(srq->ci_umem);
	srq->ci_umem = NULL;
	vhcad_queue_buf_free(dev, &srq->buf);
}

int vhcad_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		     struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibsrq->device);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	struct ib_srq_attr *attr = &init_attr->attr;
	struct vhca_create_srq_resp resp = {};
	struct vhca_srq_create create = {};
	struct vhca_ucontext *uctx;
	u64 ci_dma;
	u32 db_page;
	int err;

	/* No tag matching; XRC SRQs with the XRC ops only (annex A14). */
	if (init_attr->srq_type != IB_SRQT_BASIC &&
	    (init_attr->srq_type != IB_SRQT_XRC || !dev->attr.max_xrcd))
		return -EOPNOTSUPP;
	err = vhcad_srq_check_attr(dev, attr);
	if (err)
		return err;

	mutex_init(&srq->mutex);
	spin_lock_init(&srq->lock);
	if (udata) {
		uctx = rdma_udata_to_drv_context(udata, struct vhca_ucontext,
						 ibucontext);
		db_page = uctx->db_page;
		err = vhcad_srq_pin_user(dev, srq, attr, udata, &ci_dma);
	} else {
		db_page = dev->kernel_db_page;
		err = vhcad_srq_alloc_kernel(dev, srq, attr);
		ci_dma = srq->ci_dma;
	}
	if (err)
		goto err_mutex;

	/* The limit is armed at creation if given (IBTA 10.2.9.5), as rxe. */
	if (attr->srq_limit > BIT(srq->log_size)) {
		err = -EINVAL;
		goto err_free_bufs;
	}

	create.pdn = cpu_to_le32(to_vhca_pd(ibsrq->pd)->pdn);
	create.db_page = cpu_to_le32(db_page);
	create.pbl_addr = cpu_to_le64(vhcad_pbl_addr(&srq->buf.pbl));
	create.npages = cpu_to_le32(srq->buf.pbl.npages);
	create.log_size = srq->log_size;
	create.ci_addr = cpu_to_le64(ci_dma);
	create.limit = cpu_to_le32(attr->srq_limit);
	/* An XRC SRQ: its domain, and the CQ of its completions (annex A14). */
	if (init_attr->srq_type == IB_SRQT_XRC) {
		create.type = VHCA_SRQT_XRC;
		create.xrcdn =
			cpu_to_le32(to_vhca_xrcd(init_attr->ext.xrc.xrcd)->xrcdn);
		create.cqn = cpu_to_le32(to_vhca_cq(init_attr->ext.cq)->cqn);
	}
	err = vhcad_cmd_create_srq(dev, &create, &srq->srqn);
	if (err)
		goto err_free_bufs;
	/* XRC requests name it by this number (XRCETH), as uverbs reports. */
	if (init_attr->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;
	vhcad_queue_buf_created(dev, &srq->buf);

	err = xa_insert_irq(&dev->srqs, srq->srqn, srq, GFP_KERNEL);
	if (err)
		goto err_destroy;

	/* What the ring holds: one WQE per slot, the record tells them apart. */
	srq->max_sge = vhcad_srq_max_sge(dev);
	attr->max_wr = BIT(srq->log_size);
	attr->max_sge = srq->max_sge;

	if (udata) {
		resp.srqn = srq->srqn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&dev->srqs, srq->srqn);
err_destroy:
	vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_SRQ, srq->srqn);
err_free_bufs:
	vhcad_srq_free_bufs(dev, srq);
err_mutex:
	mutex_destroy(&srq->mutex);
	return err;
}

/*
 * The ring MODIFY_SRQ moves the SRQ to: allocated here for a kernel SRQ,
 * the provider's (named in the udata) for a user SRQ.
 */
static int vhcad_srq_new_ring(struct vhca_dev *dev, struct vhca_srq *srq,
			      const struct ib_srq_attr *attr,
			      const struct vhca_modify_srq_cmd *cmd,
			      struct vhca_queue_buf *buf, u8 *log_size)
{
	int err;

	if (!attr->max_wr || attr->max_wr > dev->attr.max_srq_wr)
		return -EINVAL;

	if (!cmd) {
		*log_size = vhcad_srq_log_size(attr->max_wr);
		return vhcad_queue_buf_alloc(dev, buf,
					     vhcad_srq_ring_size(*log_size));
	}

	err = vhcad_srq_user_log_size(cmd->log_size, attr->max_wr);
	if (err)
		return err;
	*log_size = cmd->log_size;
	return vhcad_queue_buf_pin(dev, buf, cmd->buf_addr,
				   vhcad_srq_ring_size(*log_size));
}

/*
 * A kernel SRQ about to move: posts go to both rings from now on.  The
 * new ring must hold what is posted and not taken (IBTA 11.2.3), which
 * the device checks too.
 */
static int vhcad_srq_start_move(struct vhca_srq *srq,
				struct vhca_queue_buf *buf, u8 log_size)
{
	int err = 0;

	spin_lock_irq(&srq->lock);
	srq->taken = le32_to_cpu(READ_ONCE(*srq->ci_rec));
	if (srq->pi - srq->taken > BIT(log_size)) {
		err = -EINVAL;
	} else {
		srq->moving_to = buf;
		srq->moving_log_size = log_size;
	}
	spin_unlock_irq(&srq->lock);
	return err;
}

/* After MODIFY_SRQ: the ring the device reads now stays, the other goes. */
static void vhcad_srq_end_move(struct vhca_dev *dev, struct vhca_srq *srq,
			       struct vhca_queue_buf *buf, u8 log_size,
			       bool moved)
{
	struct vhca_queue_buf old;

	spin_lock_irq(&srq->lock);
	if (moved) {
		old = srq->buf;
		srq->buf = *buf;
		srq->log_size = log_size;
	} else {
		old = *buf;
	}
	srq->moving_to = NULL;
	spin_unlock_irq(&srq->lock);

	vhcad_queue_buf_free(dev, &old);
}

static int vhcad_srq_modify_cmd(struct ib_udata *udata,
				enum ib_srq_attr_mask attr_mask,
				struct vhca_modify_srq_cmd *cmd)
{
	int err;

	memset(cmd, 0, sizeof(*cmd));
	if (!udata->inlen && !(attr_mask & IB_SRQ_MAX_WR))
		return 0;
	if (udata->inlen < sizeof(*cmd))
		return -EINVAL;
	err = ib_copy_from_udata(cmd, udata, sizeof(*cmd));
	if (err)
		return err;
	if (memchr_inv(cmd->rsvd, 0, sizeof(cmd->rsvd)) ||
	    !ib_is_udata_cleared(udata, sizeof(*cmd),
				 udata->inlen - sizeof(*cmd)))
		return -EINVAL;
	return 0;
}

int vhcad_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask attr_mask, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibsrq->device);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	bool resize = attr_mask & IB_SRQ_MAX_WR;
	struct vhca_modify_srq_cmd cmd;
	struct vhca_queue_buf buf = {};
	struct vhca_srq_attr va = {};
	u8 log_size;
	int err;

	if (attr_mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (udata) {
		err = vhcad_srq_modify_cmd(udata, attr_mask, &cmd);
		if (err)
			return err;
	}

	mutex_lock(&srq->mutex);
	log_size = srq->log_size;
	if (resize) {
		err = vhcad_srq_new_ring(dev, srq, attr, udata ? &cmd : NULL,
					 &buf, &log_size);
		if (err)
			goto out;
	}
	/* IBTA 10.2.9.5: a limit past the SRQ's size is an error. */
	if ((attr_mask & IB_SRQ_LIMIT) && attr->srq_limit > BIT(log_size)) {
		err = -EINVAL;
		goto out_free_ring;
	}

	va.srqn = cpu_to_le32(srq->srqn);
	va.attr_mask = cpu_to_le32(attr_mask);
	if (attr_mask & IB_SRQ_LIMIT)
		va.limit = cpu_to_le32(attr->srq_limit);
	if (resize) {
		va.log_size = log_size;
		va.pbl_addr = cpu_to_le64(vhcad_pbl_addr(&buf.pbl));
		va.npages = cpu_to_le32(buf.pbl.npages);
		if (srq->ci_rec) {
			err = vhcad_srq_start_move(srq, &buf, log_size);
			if (err)
				goto out_free_ring;
		}
	}

	err = vhcad_cmd_modify_srq(dev, &va);
	if (resize) {
		vhcad_queue_buf_created(dev, &buf);
		vhcad_srq_end_move(dev, srq, &buf, log_size, !err);
	}
	goto out;

out_free_ring:
	vhcad_queue_buf_free(dev, &buf);
out:
	mutex_unlock(&srq->mutex);
	return err;
}

int vhcad_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vhca_dev *dev = to_vhca_dev(ibsrq->device);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	struct vhca_srq_attr va;
	int err;

	mutex_lock(&srq->mutex);
	err = vhcad_cmd_query_srq(dev, srq->srqn, &va);
	if (!err) {
		attr->max_wr = BIT(srq->log_size);
		attr->max_sge = srq->max_sge;
		/* 0 once the limit event has disarmed it (IBTA 10.2.9.5). */
		attr->srq_limit = le32_to_cpu(va.limit);
	}
	mutex_unlock(&srq->mutex);
	return err;
}

int vhcad_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibsrq->device);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	int err;

	/* The RDMA core keeps an SRQ with QPs on it (usecnt): none is left. */
	err = vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_SRQ, srq->srqn);
	if (err)
		return err;

	/* No async event handler may still be looking at it. */
	xa_erase_irq(&dev->srqs, srq->srqn);
	synchronize_irq(pci_irq_vector(dev->pdev, VHCA_VECTOR_ASYNC));

	vhcad_srq_free_bufs(dev, srq);
	mutex_destroy(&srq->mutex);
	return 0;
}

static struct vhca_recv_wqe *vhcad_srq_wqe(struct vhca_queue_buf *buf,
					   u8 log_size, u32 index)
{
	return (struct vhca_recv_wqe *)buf->kva + (index & (BIT(log_size) - 1));
}

/*
 * Whether slot pi is free: the device has taken the WQE that was there.
 * The record is read again only when the count last read says full.
 */
static bool vhcad_srq_has_room(struct vhca_srq *srq)
{
	u32 size = BIT(srq->log_size);

	if (srq->moving_to)
		size = min_t(u32, size, BIT(srq->moving_log_size));
	if (srq->pi - srq->taken < size)
		return true;
	srq->taken = le32_to_cpu(READ_ONCE(*srq->ci_rec));
	/* The device read the slots it counted: write them only after. */
	dma_mb();
	return srq->pi - srq->taken < size;
}

int vhcad_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vhca_dev *dev = to_vhca_dev(ibsrq->device);
	struct vhca_srq *srq = to_vhca_srq(ibsrq);
	unsigned long flags;
	int err = 0;
	u32 start;

	spin_lock_irqsave(&srq->lock, flags);
	start = srq->pi;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (!vhcad_srq_has_room(srq)) {
			err = -ENOMEM;
			break;
		}
		vhcad_write_recv_wqe(vhcad_srq_wqe(&srq->buf, srq->log_size,
						   srq->pi), wr, wr->wr_id);
		if (srq->moving_to)
			vhcad_write_recv_wqe(vhcad_srq_wqe(srq->moving_to,
							   srq->moving_log_size,
							   srq->pi),
					     wr, wr->wr_id);
		srq->pi++;
	}
	if (srq->pi != start)
		vhcad_kernel_doorbell(dev, VHCA_DB_SRQ, srq->srqn, srq->pi);
	spin_unlock_irqrestore(&srq->lock, flags);

	if (err)
		*bad_wr = wr;
	return err;
}
