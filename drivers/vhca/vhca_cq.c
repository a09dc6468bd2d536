// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues (docs/specs/vhca.rst, "Event and completion queues"):
 * a ring of 32-byte CQEs with an owner bit, and a doorbell record where the
 * consumer keeps its consumer index.  The provider polls user CQs itself;
 * the driver polls the kernel's.  A resize moves the ring, never the
 * doorbell record: the device copies the CQEs not yet polled across.
 *
 * A CQE names its work request by the index of its WQE in the queue, which
 * the driver writes into the WQE's wr_id (vhca_wr.c): the index finds the
 * caller's wr_id and tells how far the queue has been consumed, signalled
 * or not.
 */

#include <linux/if_vlan.h>
#include <linux/log2.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

static u32 vhcad_cq_ring_size(u8 log_size)
{
	return sizeof(struct vhca_cqe) << log_size;
}

/* The CQE at @index if the device has written it (owner bit rule). */
static struct vhca_cqe *vhcad_cq_peek(struct vhca_cq *cq, u32 index)
{
	struct vhca_cqe *cqe = (struct vhca_cqe *)cq->buf.kva +
			       (index & (BIT(cq->log_size) - 1));
	u8 owner = ((index >> cq->log_size) & 1) ^ 1;

	if ((READ_ONCE(cqe->owner) & 1) != owner)
		return NULL;
	return cqe;
}

static struct vhca_ceq *vhcad_cq_ceq(struct vhca_dev *dev, int comp_vector)
{
	return &dev->ceqs[(unsigned int)comp_vector % dev->num_ceqs];
}

/* The provider's ring and doorbell record, named in the udata. */
static int vhcad_cq_pin_user(struct vhca_dev *dev, struct vhca_cq *cq,
			     const struct ib_cq_init_attr *attr,
			     struct ib_udata *udata, u64 *dbrec_dma)
{
	struct vhca_create_cq_cmd cmd;
	int err;

	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (memchr_inv(cmd.rsvd, 0, sizeof(cmd.rsvd)) ||
	    !ib_is_udata_cleared(udata, sizeof(cmd),
				 udata->inlen - sizeof(cmd)))
		return -EINVAL;

	/* One entry stays free, as max_cqe = 2^n - 1 says. */
	if (cmd.log_size < 1 || cmd.log_size > VHCA_CQ_MAX_LOG_SIZE ||
	    BIT(cmd.log_size) - 1 < attr->cqe ||
	    !IS_ALIGNED(cmd.dbrec_addr, sizeof(u32)))
		return -EINVAL;
	cq->log_size = cmd.log_size;

	err = vhcad_queue_buf_pin(dev, &cq->buf, cmd.buf_addr,
				  vhcad_cq_ring_size(cq->log_size));
	if (err)
		return err;

	err = vhcad_record_pin(dev, cmd.dbrec_addr, &cq->dbrec_umem, dbrec_dma);
	if (err)
		vhcad_queue_buf_free(dev, &cq->buf);
	return err;
}

/*
 * A kernel CQ's ring is one coherent, physically contiguous buffer: at
 * most 4 MiB (2^17 entries of 32 bytes), the largest block the page
 * allocator hands out (MAX_PAGE_ORDER 10).  User CQs, pinned page by
 * page, go up to max_cqe (2^19 - 1).
 */
#define VHCAD_KERNEL_CQ_MAX_LOG_SIZE	17U
static_assert(VHCAD_KERNEL_CQ_MAX_LOG_SIZE <= VHCA_CQ_MAX_LOG_SIZE);

/*
 * A kernel CQ's ring size for @cqe entries: one more, as max_cqe =
 * 2^n - 1 says, rounded up to a power of two.  0 if too many.
 */
static u8 vhcad_cq_kernel_log_size(int cqe)
{
	u32 log_size = max_t(u32, 1, order_base_2(cqe + 1));

	return log_size > VHCAD_KERNEL_CQ_MAX_LOG_SIZE ? 0 : log_size;
}

/*
 * A kernel CQ: the ring and the doorbell record in coherent memory, apart,
 * as a resize moves the ring and keeps the record.
 */
static int vhcad_cq_alloc_kernel(struct vhca_dev *dev, struct vhca_cq *cq,
				 const struct ib_cq_init_attr *attr,
				 u64 *dbrec_dma)
{
	int err;

	cq->log_size = vhcad_cq_kernel_log_size(attr->cqe);
	if (!cq->log_size)
		return -EINVAL;

	err = vhcad_queue_buf_alloc(dev, &cq->buf,
				    vhcad_cq_ring_size(cq->log_size));
	if (err)
		return err;
	cq->dbrec = dma_alloc_coherent(&dev->pdev->dev, sizeof(*cq->dbrec),
				       &cq->dbrec_dma, GFP_KERNEL);
	if (!cq->dbrec) {
		vhcad_queue_buf_free(dev, &cq->buf);
		return -ENOMEM;
	}
	*dbrec_dma = cq->dbrec_dma;
	cq->ci = 0;
	spin_lock_init(&cq->lock);
	return 0;
}

static void vhcad_cq_free_bufs(struct vhca_dev *dev, struct vhca_cq *cq)
{
	ib_umem_release(cq->dbrec_umem);
	if (cq->dbrec)
		dma_free_coherent(&dev->pdev->dev, sizeof(*cq->dbrec),
				  cq->dbrec, cq->dbrec_dma);
	vhcad_queue_buf_free(dev, &cq->buf);
}

int vhcad_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct vhca_dev *dev = to_vhca_dev(ibcq->device);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	struct vhca_create_cq_resp resp = {};
	struct vhca_cq_create create = {};
	struct vhca_ucontext *uctx;
	u64 dbrec_dma;
	u32 db_page;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > dev->attr.max_cqe)
		return -EINVAL;

	if (udata) {
		uctx = rdma_udata_to_drv_context(udata, struct vhca_ucontext,
						 ibucontext);
		db_page = uctx->db_page;
		err = vhcad_cq_pin_user(dev, cq, attr, udata, &dbrec_dma);
	} else {
		db_page = dev->kernel_db_page;
		err = vhcad_cq_alloc_kernel(dev, cq, attr, &dbrec_dma);
	}
	if (err)
		return err;
	mutex_init(&cq->resize_mutex);

	create.pbl_addr = cpu_to_le64(vhcad_pbl_addr(&cq->buf.pbl));
	create.npages = cpu_to_le32(cq->buf.pbl.npages);
	create.log_size = cq->log_size;
	cq->ceq = vhcad_cq_ceq(dev, attr->comp_vector);
	create.eqn = cpu_to_le32(cq->ceq->eqn);
	create.db_page = cpu_to_le32(db_page);
	create.dbrec_addr = cpu_to_le64(dbrec_dma);
	err = vhcad_cmd_create_cq(dev, &create, &cq->cqn);
	if (err)
		goto err_free_bufs;
	vhcad_queue_buf_created(dev, &cq->buf);

	err = xa_insert_irq(&dev->cqs, cq->cqn, cq, GFP_KERNEL);
	if (err)
		goto err_destroy;

	ibcq->cqe = BIT(cq->log_size) - 1;
	if (udata) {
		resp.cqn = cq->cqn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&dev->cqs, cq->cqn);
err_destroy:
	vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_CQ, cq->cqn);
err_free_bufs:
	mutex_destroy(&cq->resize_mutex);
	vhcad_cq_free_bufs(dev, cq);
	return err;
}

int vhcad_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibcq->device);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	int err;

	/* Until the device lets go of it, the ring must stay. */
	err = vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_CQ, cq->cqn);
	if (err)
		return err;

	/* No event handler may still be looking at it. */
	xa_erase_irq(&dev->cqs, cq->cqn);
	synchronize_irq(cq->ceq->irq);
	synchronize_irq(pci_irq_vector(dev->pdev, VHCA_VECTOR_ASYNC));

	mutex_destroy(&cq->resize_mutex);
	vhcad_cq_free_bufs(dev, cq);
	return 0;
}

/*
 * The QP number vhcad_cq_clean() gives a CQE to drop: none, QP numbers
 * being 24 bits (QPN 0 is a QP on an InfiniBand port: the SMI QP).
 */
#define VHCA_CQE_QPN_DROPPED	U32_MAX

/*
 * Drop the completions of QP @qpn still in a kernel CQ, as the QP goes to
 * RESET or away: their indices would name the wrong WQEs.  The device does
 * not write entries the consumer has not passed, so rewriting the QP
 * number of an unconsumed entry is safe.
 */
void vhcad_cq_clean(struct vhca_cq *cq, u32 qpn)
{
	struct vhca_cqe *cqe;
	unsigned long flags;
	u32 index;

	if (!cq->buf.kva)
		return;

	/* Not while a resize copies the entries: the copies would keep it. */
	mutex_lock(&cq->resize_mutex);
	spin_lock_irqsave(&cq->lock, flags);
	for (index = cq->ci; (cqe = vhcad_cq_peek(cq, index)); index++) {
		if (index - cq->ci >= BIT(cq->log_size))
			break;
		dma_rmb();
		if (le32_to_cpu(cqe->qpn) == qpn)
			cqe->qpn = cpu_to_le32(VHCA_CQE_QPN_DROPPED);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	mutex_unlock(&cq->resize_mutex);
}

static enum ib_wc_opcode vhcad_wc_opcode(u8 opcode)
{
	switch (opcode) {
	case VHCA_WC_SEND:
		return IB_WC_SEND;
	case VHCA_WC_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case VHCA_WC_RDMA_READ:
		return IB_WC_RDMA_READ;
	case VHCA_WC_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case VHCA_WC_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case VHCA_WC_BIND_MW:
		return IB_WC_BIND_MW;
	case VHCA_WC_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case VHCA_WC_REG_MR:
		return IB_WC_REG_MR;
	case VHCA_WC_FLUSH:
		return IB_WC_FLUSH;
	case VHCA_WC_ATOMIC_WRITE:
		return IB_WC_ATOMIC_WRITE;
	case VHCA_WC_RECV_RDMA_WITH_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	default:
		return IB_WC_RECV;
	}
}

/*
 * A datagram's receive completion (IBTA 11.4.1.1; annex A17.4.5.1 for
 * RoCEv2): the buffer starts with the 40-byte GRH area, and the network
 * header type tells ib_init_ah_attr_from_wc() how to read it, as rxe and
 * mlx5 report it.  RoCE has no LIDs or P_Keys but the default: slid and
 * pkey_index stay 0.  A tagged datagram gives its VLAN (so that the CM
 * answers from the GID of that VLAN, ib_init_ah_attr_from_wc()) and its
 * PCP as the SL, as mlx5 does; VID 0 is a priority tag, no VLAN.
 */
static void vhcad_cqe_to_wc_ud(const struct vhca_cqe *cqe, struct ib_wc *wc)
{
	if (cqe->flags & VHCA_CQE_VLAN) {
		u16 tci = le16_to_cpu(cqe->vlan_tci);

		wc->vendor_err = 0;
		wc->sl = tci >> VLAN_PRIO_SHIFT;
		if (tci & VLAN_VID_MASK) {
			wc->vlan_id = tci & VLAN_VID_MASK;
			wc->wc_flags |= IB_WC_WITH_VLAN;
		}
	}
	if (cqe->flags & VHCA_CQE_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (cqe->flags & VHCA_CQE_NET_IPV4) {
		wc->network_hdr_type = RDMA_NETWORK_IPV4;
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	} else if (cqe->flags & VHCA_CQE_NET_IPV6) {
		wc->network_hdr_type = RDMA_NETWORK_IPV6;
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	}
}

/*
 * A datagram's receive completion on an InfiniBand port (IBTA 11.4.2.1):
 * where it came from, the LRH's SLID and SL and the DLID's path bits,
 * the P_Key index it matched, and whether it had a GRH.  Those fields
 * take the place of vendor_err, which a successful completion has not.
 */
static void vhcad_cqe_to_wc_ib_ud(const struct vhca_cqe *cqe,
				  struct ib_wc *wc)
{
	wc->vendor_err = 0;
	wc->slid = le16_to_cpu(cqe->slid);
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
	wc->pkey_index = le32_to_cpu(cqe->src_qp) >> 24;
	if (cqe->flags & VHCA_CQE_GRH)
		wc->wc_flags |= IB_WC_GRH;
}

static bool vhcad_qp_is_ud(const struct vhca_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI ||
	       qp->ibqp.qp_type == IB_QPT_SMI;
}

/*
 * Fill @wc from @cqe.  Returns false for a CQE that reports nothing: its QP
 * is gone (or was reset), or it names no posted WQE.
 */
static bool vhcad_cqe_to_wc(struct vhca_dev *dev, const struct vhca_cqe *cqe,
			    struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn);
	bool is_recv = cqe->opcode & VHCA_WC_RECV;
	struct vhca_qp *qp;
	struct vhca_wq *wq;
	u32 index, ci, mask;
	u64 wr_id;

	if (qpn == VHCA_CQE_QPN_DROPPED)
		return false;
	qp = xa_load(&dev->qps, qpn);
	if (!qp)
		return false;
	if (is_recv && qp->ibqp.srq) {
		/* An SRQ's WQE carries the caller's wr_id (vhca_srq.c). */
		wr_id = le64_to_cpu(cqe->wr_id);
	} else {
		wq = is_recv ? &qp->rq : &qp->sq;
		mask = BIT(is_recv ? qp->rq_log_size : qp->sq_log_size) - 1;
		index = (u32)le64_to_cpu(cqe->wr_id);
		ci = wq->ci;
		if (!wq->wr_ids || index - ci > mask) {
			dev_warn_ratelimited(&dev->pdev->dev,
					     "CQE of QP %u names %s WQE %u, not posted (consumer index %u), ignored\n",
					     qpn, is_recv ? "receive" : "send",
					     index, ci);
			return false;
		}
		/* In order: every WQE before this one is done too. */
		WRITE_ONCE(wq->ci, index + 1);
		wr_id = wq->wr_ids[index & mask];
	}

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = min_t(u8, cqe->status, IB_WC_GENERAL_ERR);
	wc->opcode = vhcad_wc_opcode(cqe->opcode);
	wc->vendor_err = le32_to_cpu(cqe->vendor_err);
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(cqe->src_qp) & IB_QPN_MASK;
	wc->port_num = VHCA_PORT_NUM;
	if (cqe->flags & VHCA_CQE_WITH_IMM) {
		/* The immediate is kept in network byte order. */
		wc->ex.imm_data = (__force __be32)cqe->imm_or_inv;
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->flags & VHCA_CQE_WITH_INV) {
		wc->ex.invalidate_rkey = le32_to_cpu(cqe->imm_or_inv);
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (!vhcad_is_ib(dev)) {
		if (is_recv)
			vhcad_cqe_to_wc_ud(cqe, wc);
	} else if (is_recv && vhcad_qp_is_ud(qp) &&
		   wc->status == IB_WC_SUCCESS) {
		vhcad_cqe_to_wc_ib_ud(cqe, wc);
	}
	return true;
}

int vhcad_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct vhca_dev *dev = to_vhca_dev(ibcq->device);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	const struct vhca_cqe *entry;
	struct vhca_cqe cqe;
	unsigned long flags;
	u32 start;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	/* The device is moving the entries: none to take until it is done. */
	if (cq->resizing) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return 0;
	}
	start = cq->ci;
	while (n < num_entries && (entry = vhcad_cq_peek(cq, cq->ci))) {
		/* Read the entry only after its owner byte. */
		dma_rmb();
		cqe = *entry;
		cq->ci++;
		if (vhcad_cqe_to_wc(dev, &cqe, &wc[n]))
			n++;
	}
	if (cq->ci != start) {
		/* The entries are read before the device may reuse them. */
		mb();
		WRITE_ONCE(*cq->dbrec, cpu_to_le32(cq->ci));
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int vhcad_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vhca_dev *dev = to_vhca_dev(ibcq->device);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	u32 arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  VHCA_CQ_ARM_SOLICITED : VHCA_CQ_ARM_NEXT;
	unsigned long irqflags;
	int missed = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/*
	 * During a resize ci is about to count in the new ring: the arming
	 * waits for it (vhcad_cq_resize_kernel), which then reports the
	 * completions that came meanwhile.
	 */
	if (cq->resizing) {
		if (cq->arm_pending != VHCA_CQ_ARM_NEXT)
			cq->arm_pending = arm;
		spin_unlock_irqrestore(&cq->lock, irqflags);
		return 0;
	}
	/*
	 * The device raises the event for the next completion only (IBTA
	 * 11.4.2.2); callers that ask learn here of those already there.
	 */
	vhcad_kernel_doorbell(dev, VHCA_DB_CQ, cq->cqn,
			      arm | (cq->ci & VHCA_CQ_CI_MASK));
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && vhcad_cq_peek(cq, cq->ci))
		missed = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return missed;
}

/*
 * RESIZE_CQ (docs/specs/vhca.rst, "Event and completion queues"; IBTA
 * 11.2.8.3): the device moves the CQEs not yet polled, from the doorbell
 * record's index on, to the start of @buf and writes 0 to the record.
 */
static int vhcad_cq_resize_cmd(struct vhca_dev *dev, struct vhca_cq *cq,
			       struct vhca_queue_buf *buf, u8 log_size)
{
	struct vhca_cq_resize resize = {};
	u32 moved;

	resize.cqn = cpu_to_le32(cq->cqn);
	resize.log_size = log_size;
	resize.pbl_addr = cpu_to_le64(vhcad_pbl_addr(&buf->pbl));
	resize.npages = cpu_to_le32(buf->pbl.npages);
	return vhcad_cmd_resize_cq(dev, &resize, &moved);
}

/*
 * A kernel CQ: pollers and arming stand aside while the device copies
 * (the record must not move under it, and ci must not be read against
 * the wrong ring); then the new ring replaces the old under the lock and
 * ci starts again at 0, as the record does.
 */
static int vhcad_cq_resize_kernel(struct vhca_dev *dev, struct vhca_cq *cq,
				  int cqe)
{
	u8 log_size = vhcad_cq_kernel_log_size(cqe);
	struct vhca_queue_buf buf;
	unsigned long flags;
	bool missed;
	u32 arm;
	int err;

	if (!log_size)
		return -EINVAL;
	err = vhcad_queue_buf_alloc(dev, &buf, vhcad_cq_ring_size(log_size));
	if (err)
		return err;

	spin_lock_irqsave(&cq->lock, flags);
	cq->resizing = true;
	cq->arm_pending = 0;
	spin_unlock_irqrestore(&cq->lock, flags);

	err = vhcad_cq_resize_cmd(dev, cq, &buf, log_size);

	spin_lock_irqsave(&cq->lock, flags);
	if (!err) {
		vhcad_queue_buf_created(dev, &buf);
		swap(cq->buf, buf);
		cq->log_size = log_size;
		cq->ci = 0;
	}
	cq->resizing = false;
	arm = cq->arm_pending;
	if (arm)
		vhcad_kernel_doorbell(dev, VHCA_DB_CQ, cq->cqn,
				      arm | (cq->ci & VHCA_CQ_CI_MASK));
	/*
	 * The device fires only for completions after this arming: those
	 * that came while the request waited get their event here.
	 */
	missed = arm && vhcad_cq_peek(cq, cq->ci);
	spin_unlock_irqrestore(&cq->lock, flags);
	if (missed && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);

	/* The old ring on success, the refused one otherwise. */
	vhcad_queue_buf_free(dev, &buf);
	return err;
}

/* A user CQ: the provider stopped polling and allocated the new ring. */
static int vhcad_cq_resize_user(struct vhca_dev *dev, struct vhca_cq *cq,
				int cqe, struct ib_udata *udata)
{
	struct vhca_resize_cq_cmd cmd;
	struct vhca_queue_buf buf;
	int err;

	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (memchr_inv(cmd.rsvd, 0, sizeof(cmd.rsvd)) ||
	    !ib_is_udata_cleared(udata, sizeof(cmd),
				 udata->inlen - sizeof(cmd)))
		return -EINVAL;
	if (cmd.log_size < 1 || cmd.log_size > VHCA_CQ_MAX_LOG_SIZE ||
	    BIT(cmd.log_size) - 1 < cqe)
		return -EINVAL;

	err = vhcad_queue_buf_pin(dev, &buf, cmd.buf_addr,
				  vhcad_cq_ring_size(cmd.log_size));
	if (err)
		return err;
	err = vhcad_cq_resize_cmd(dev, cq, &buf, cmd.log_size);
	if (!err) {
		vhcad_queue_buf_created(dev, &buf);
		swap(cq->buf, buf);
		cq->log_size = cmd.log_size;
	}
	/* The old ring's pages on success, the refused one's otherwise. */
	vhcad_queue_buf_free(dev, &buf);
	return err;
}

int vhcad_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibcq->device);
	struct vhca_cq *cq = to_vhca_cq(ibcq);
	int err;

	if (cqe < 1 || cqe > dev->attr.max_cqe)
		return -EINVAL;

	mutex_lock(&cq->resize_mutex);
	if (udata)
		err = vhcad_cq_resize_user(dev, cq, cqe, udata);
	else
		err = vhcad_cq_resize_kernel(dev, cq, cqe);
	if (!err)
		ibcq->cqe = BIT(cq->log_size) - 1;
	mutex_unlock(&cq->resize_mutex);
	return err;
}
