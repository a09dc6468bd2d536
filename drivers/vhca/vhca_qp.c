// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs (docs/specs/vhca.rst, "Queue pairs"): RC, UC and UD QPs, and
 * the General Services QP (QP1) of the kernel's MAD layer, on an
 * InfiniBand port its Subnet Management QP (QP0) too, each with a send
 * ring of 256-byte and a receive ring of 128-byte WQEs, owned by a doorbell
 * page: the process's for user QPs (the provider allocates the rings), the
 * driver's own for kernel QPs.  An RC, UC or UD QP may instead take its
 * receive WQEs from a shared receive queue (vhca_srq.c): it has no receive
 * ring then.  XRC (annex A14): an initiator (XRC_INI, user space only, as
 * the kernel has no way to name the target's SRQ in a send) has a send
 * ring only; a target (XRC_TGT, which the RDMA core creates on an XRC
 * domain without udata) has no rings, no CQs and no doorbell, its
 * requests going to the XRC SRQs they name.  MODIFY_QP follows the IBTA
 * 10.3.1 state machine; the driver checks a transition with
 * ib_modify_qp_is_ok() before the device checks it again.
 */

#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

/*
 * Attributes vhca_qp_attr carries, and PATH_MIG_STATE, which has no field
 * (always MIGRATED); alternate paths are not supported (no APM).
 */
#define VHCA_QP_ATTR_MASK	(IB_QP_STATE | IB_QP_CUR_STATE | \
				 IB_QP_EN_SQD_ASYNC_NOTIFY | \
				 IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | \
				 IB_QP_PORT | IB_QP_QKEY | IB_QP_AV | \
				 IB_QP_PATH_MTU | IB_QP_TIMEOUT | \
				 IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | \
				 IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC | \
				 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | \
				 IB_QP_MAX_DEST_RD_ATOMIC | \
				 IB_QP_PATH_MIG_STATE | IB_QP_DEST_QPN)

/*
 * Both FLUSH types may be enabled on a QP, as on rxe: the MR's rights
 * decide (no MR has FLUSH_PERSISTENT, see vhca_mr.c).
 */
#define VHCA_QP_REMOTE_ACCESS	(IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_FLUSH_GLOBAL | \
				 IB_ACCESS_FLUSH_PERSISTENT)

static_assert((int)IB_QP_STATE == (int)VHCA_QP_STATE);
static_assert((int)IB_QP_AV == (int)VHCA_QP_AV);
static_assert((int)IB_QP_DEST_QPN == (int)VHCA_QP_DEST_QPN);
static_assert((int)IB_QPS_ERR == (int)VHCA_QPS_ERR);
static_assert((int)IB_QPT_SMI == (int)VHCA_QPT_SMI);
static_assert((int)IB_QPT_GSI == (int)VHCA_QPT_GSI);
static_assert((int)IB_QPT_RC == (int)VHCA_QPT_RC);
static_assert((int)IB_QPT_UC == (int)VHCA_QPT_UC);
static_assert((int)IB_QPT_UD == (int)VHCA_QPT_UD);
static_assert((int)IB_QPT_XRC_INI == (int)VHCA_QPT_XRC_INI);
static_assert((int)IB_QPT_XRC_TGT == (int)VHCA_QPT_XRC_TGT);

static u8 vhcad_wq_log_size(u32 max_wr)
{
	return max_t(u32, 1, order_base_2(max_wr));
}

/*
 * The QP types the device has.  RoCE has no QP0 (annex A17.6), an
 * InfiniBand port has; QP0 and QP1 are the kernel MAD layer's alone (user
 * space reaches them through umad).
 */
static bool vhcad_qp_type_supported(struct vhca_dev *dev,
				    enum ib_qp_type type, bool user)
{
	switch (type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		return true;
	case IB_QPT_GSI:
		return !user;
	case IB_QPT_SMI:
		return !user && vhcad_is_ib(dev);
	case IB_QPT_XRC_INI:
		return user && dev->attr.max_xrcd;
	case IB_QPT_XRC_TGT:
		return !!dev->attr.max_xrcd;
	default:
		return false;
	}
}

/* A receive ring of its own: not on an SRQ, not XRC. */
static bool vhcad_qp_has_rq(const struct ib_qp_init_attr *init_attr)
{
	return !init_attr->srq && init_attr->qp_type != IB_QPT_XRC_INI &&
	       init_attr->qp_type != IB_QPT_XRC_TGT;
}

/* The device's limits, and the WQE layout's, for the requested queues. */
static int vhcad_qp_check_cap(struct vhca_dev *dev,
			      const struct ib_qp_init_attr *init_attr,
			      bool user)
{
	const struct ib_qp_cap *cap = &init_attr->cap;
	const struct vhca_dev_attr *attr = &dev->attr;

	if (!vhcad_qp_type_supported(dev, init_attr->qp_type, user) ||
	    init_attr->create_flags)
		return -EOPNOTSUPP;
	/* An XRC target has no queues: the core gives it none. */
	if (init_attr->qp_type == IB_QPT_XRC_TGT)
		return init_attr->xrcd ? 0 : -EINVAL;
	/* An XRC initiator receives nothing (annex A14). */
	if (init_attr->qp_type == IB_QPT_XRC_INI) {
		if (init_attr->recv_cq || init_attr->srq)
			return -EINVAL;
	} else if (!init_attr->recv_cq) {
		return -EINVAL;
	}
	/* The MAD layer's QP0 and QP1 have receive queues of their own. */
	if (init_attr->srq && (init_attr->qp_type == IB_QPT_GSI ||
			       init_attr->qp_type == IB_QPT_SMI ||
			       init_attr->srq->srq_type != IB_SRQT_BASIC))
		return -EOPNOTSUPP;
	if (!init_attr->send_cq)
		return -EINVAL;
	if (cap->max_send_wr > attr->max_qp_wr ||
	    cap->max_send_sge > min_t(u32, attr->max_sge, VHCA_MAX_SEND_SGE) ||
	    cap->max_inline_data > min_t(u32, attr->max_inline_data,
					 VHCA_MAX_INLINE))
		return -EINVAL;
	/* With an SRQ the receive queue's caps are ignored (IBTA 11.2.4.1). */
	if (vhcad_qp_has_rq(init_attr) &&
	    (cap->max_recv_wr > attr->max_qp_wr ||
	     cap->max_recv_sge > VHCA_MAX_RECV_SGE))
		return -EINVAL;
	return 0;
}

/* The provider's rings, named in the udata, sized for the requested caps. */
static int vhcad_qp_pin_user(struct vhca_dev *dev, struct vhca_qp *qp,
			     const struct ib_qp_init_attr *init_attr,
			     struct ib_udata *udata)
{
	struct vhca_create_qp_cmd cmd;
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

	if (cmd.sq_log_size < 1 || cmd.sq_log_size > VHCA_WQ_MAX_LOG_SIZE ||
	    BIT(cmd.sq_log_size) < init_attr->cap.max_send_wr)
		return -EINVAL;
	if (!vhcad_qp_has_rq(init_attr)) {
		if (cmd.rq_log_size || cmd.rq_buf_addr)
			return -EINVAL;
	} else if (cmd.rq_log_size < 1 ||
		   cmd.rq_log_size > VHCA_WQ_MAX_LOG_SIZE ||
		   BIT(cmd.rq_log_size) < init_attr->cap.max_recv_wr) {
		return -EINVAL;
	}
	qp->sq_log_size = cmd.sq_log_size;
	qp->rq_log_size = cmd.rq_log_size;

	err = vhcad_queue_buf_pin(dev, &qp->sq_buf, cmd.sq_buf_addr,
				  VHCA_SEND_WQE_SIZE << qp->sq_log_size);
	if (err || !vhcad_qp_has_rq(init_attr))
		return err;
	err = vhcad_queue_buf_pin(dev, &qp->rq_buf, cmd.rq_buf_addr,
				  VHCA_RECV_WQE_SIZE << qp->rq_log_size);
	if (err)
		vhcad_queue_buf_free(dev, &qp->sq_buf);
	return err;
}

static int vhcad_wq_init(struct vhca_wq *wq, u8 log_size)
{
	spin_lock_init(&wq->lock);
	wq->pi = 0;
	wq->ci = 0;
	wq->wr_ids = kcalloc(BIT(log_size), sizeof(*wq->wr_ids), GFP_KERNEL);
	return wq->wr_ids ? 0 : -ENOMEM;
}

static void vhcad_qp_free_bufs(struct vhca_dev *dev, struct vhca_qp *qp)
{
	kfree(qp->sq.wr_ids);
	kfree(qp->rq.wr_ids);
	vhcad_queue_buf_free(dev, &qp->sq_buf);
	vhcad_queue_buf_free(dev, &qp->rq_buf);
}

static int vhcad_qp_alloc_kernel(struct vhca_dev *dev, struct vhca_qp *qp,
				 const struct ib_qp_init_attr *init_attr)
{
	bool has_rq = !init_attr->srq;
	int err;

	qp->sq_log_size = vhcad_wq_log_size(init_attr->cap.max_send_wr);
	qp->rq_log_size = has_rq ?
			  vhcad_wq_log_size(init_attr->cap.max_recv_wr) : 0;

	err = vhcad_queue_buf_alloc(dev, &qp->sq_buf,
				    VHCA_SEND_WQE_SIZE << qp->sq_log_size);
	if (!err && has_rq)
		err = vhcad_queue_buf_alloc(dev, &qp->rq_buf,
					    VHCA_RECV_WQE_SIZE << qp->rq_log_size);
	if (!err)
		err = vhcad_wq_init(&qp->sq, qp->sq_log_size);
	if (!err && has_rq)
		err = vhcad_wq_init(&qp->rq, qp->rq_log_size);
	if (err)
		vhcad_qp_free_bufs(dev, qp);
	return err;
}

int vhcad_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibqp->device);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	struct vhca_create_qp_resp resp = {};
	struct vhca_qp_create create = {};
	struct ib_qp_cap *cap = &init_attr->cap;
	struct vhca_ucontext *uctx;
	u32 db_page;
	int err;

	err = vhcad_qp_check_cap(dev, init_attr, !!udata);
	if (err)
		return err;

	if (init_attr->qp_type == IB_QPT_XRC_TGT) {
		db_page = VHCA_DB_PAGE_KERNEL_NONE;
	} else if (udata) {
		uctx = rdma_udata_to_drv_context(udata, struct vhca_ucontext,
						 ibucontext);
		db_page = uctx->db_page;
		err = vhcad_qp_pin_user(dev, qp, init_attr, udata);
	} else {
		db_page = dev->kernel_db_page;
		err = vhcad_qp_alloc_kernel(dev, qp, init_attr);
	}
	if (err)
		return err;

	create.type = init_attr->qp_type;
	create.sq_log_size = qp->sq_log_size;
	create.rq_log_size = qp->rq_log_size;
	if (init_attr->qp_type == IB_QPT_XRC_TGT) {
		create.xrcdn = cpu_to_le32(to_vhca_xrcd(init_attr->xrcd)->xrcdn);
	} else {
		qp->sq_sig_all = init_attr->sq_sig_type == IB_SIGNAL_ALL_WR;
		create.sq_sig_all = qp->sq_sig_all;
		create.pdn = cpu_to_le32(to_vhca_pd(ibqp->pd)->pdn);
		create.send_cqn =
			cpu_to_le32(to_vhca_cq(init_attr->send_cq)->cqn);
	}
	if (init_attr->recv_cq)
		create.recv_cqn =
			cpu_to_le32(to_vhca_cq(init_attr->recv_cq)->cqn);
	create.sq_pbl_addr = cpu_to_le64(vhcad_pbl_addr(&qp->sq_buf.pbl));
	create.rq_pbl_addr = cpu_to_le64(vhcad_pbl_addr(&qp->rq_buf.pbl));
	create.sq_npages = cpu_to_le32(qp->sq_buf.pbl.npages);
	create.rq_npages = cpu_to_le32(qp->rq_buf.pbl.npages);
	create.db_page = cpu_to_le32(db_page);
	if (init_attr->srq)
		create.srqn = cpu_to_le32(to_vhca_srq(init_attr->srq)->srqn);
	err = vhcad_cmd_create_qp(dev, &create, &qp->qpn);
	if (err)
		goto err_free_bufs;
	vhcad_queue_buf_created(dev, &qp->sq_buf);
	vhcad_queue_buf_created(dev, &qp->rq_buf);

	/* The MAD layer and its peers know QP1 by number (IBTA 13.4.6). */
	if (init_attr->qp_type == IB_QPT_GSI && qp->qpn != VHCA_GSI_QPN) {
		dev_err(&dev->pdev->dev, "CREATE_QP of the GSI QP returned QP %u\n",
			qp->qpn);
		err = -EIO;
		goto err_destroy;
	}

	err = xa_insert_irq(&dev->qps, qp->qpn, qp, GFP_KERNEL);
	if (err)
		goto err_destroy;

	mutex_init(&qp->mutex);
	qp->state = IB_QPS_RESET;
	qp->dest_qpn = 0;
	/*
	 * The SMI QP is QP0 to the MAD layer and on the wire; the device
	 * knows it by its handle (vhca_hw.h, VHCA_QPT_SMI), as mlx4 does.
	 */
	ibqp->qp_num = init_attr->qp_type == IB_QPT_SMI ? VHCA_SMI_QPN :
							    qp->qpn;

	/*
	 * What every QP of this device can hold; on an SRQ or XRC, no
	 * receive queue; an XRC target, no queue at all.
	 */
	if (init_attr->qp_type == IB_QPT_XRC_TGT) {
		memset(cap, 0, sizeof(*cap));
	} else {
		cap->max_send_wr = BIT(qp->sq_log_size);
		cap->max_send_sge = min_t(u32, dev->attr.max_sge,
					  VHCA_MAX_SEND_SGE);
		cap->max_inline_data = min_t(u32, dev->attr.max_inline_data,
					     VHCA_MAX_INLINE);
		cap->max_recv_wr = vhcad_qp_has_rq(init_attr) ?
				   BIT(qp->rq_log_size) : 0;
		cap->max_recv_sge = vhcad_qp_has_rq(init_attr) ?
				    VHCA_MAX_RECV_SGE : 0;
	}
	qp->max_send_sge = cap->max_send_sge;
	qp->max_recv_sge = cap->max_recv_sge;
	qp->max_inline_data = cap->max_inline_data;

	if (udata) {
		resp.qpn = qp->qpn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	mutex_destroy(&qp->mutex);
	xa_erase_irq(&dev->qps, qp->qpn);
err_destroy:
	vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_QP, qp->qpn);
err_free_bufs:
	vhcad_qp_free_bufs(dev, qp);
	return err;
}

/* The GRH of a path (IBTA 8.3): a RoCEv2 path's always, an IB path's maybe. */
static int vhcad_qp_attr_set_grh(const struct rdma_ah_attr *ah,
				 struct vhca_qp_attr *va)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);

	if (grh->sgid_index > U8_MAX)
		return -EINVAL;

	va->sgid_index = grh->sgid_index;
	va->hop_limit = grh->hop_limit;
	va->traffic_class = grh->traffic_class;
	/* 20 bits on the wire (IBTA 8.3.1): masked, as create_ah does. */
	va->flow_label = cpu_to_le32(grh->flow_label & IB_GRH_FLOWLABEL_MASK);
	memcpy(va->dgid, grh->dgid.raw, sizeof(va->dgid));
	return 0;
}

/* The RoCEv2 path: GRH fields, the next hop's MAC and the UDP source port. */
static int vhcad_qp_attr_set_av(struct vhca_qp *qp,
				const struct ib_qp_attr *attr, int attr_mask,
				struct vhca_qp_attr *va)
{
	const struct rdma_ah_attr *ah = &attr->ah_attr;
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);
	u32 dest_qpn;
	int err;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	err = vhcad_qp_attr_set_grh(ah, va);
	if (err)
		return err;
	memcpy(va->dmac, ah->roce.dmac, sizeof(va->dmac));
	/*
	 * On a VLAN GID the SL is the 802.1Q priority of what is sent; its
	 * low 4 bits are kept, as vhca_ah.c keeps them (mlx5 masks too).
	 */
	va->sl = rdma_ah_get_sl(ah) & 0xf;

	/* As the RDMA core computes it for RoCEv2 (rdma_get_udp_sport()). */
	dest_qpn = attr_mask & IB_QP_DEST_QPN ? attr->dest_qp_num : qp->dest_qpn;
	va->udp_sport = cpu_to_le16(rdma_get_udp_sport(grh->flow_label &
						       IB_GRH_FLOWLABEL_MASK,
						       qp->qpn, dest_qpn));
	return 0;
}

/*
 * The InfiniBand path: the LRH's DLID, SL and the source path bits
 * (IBTA 7.7), and the GRH if the path leaves the subnet or asks for one.
 */
static int vhcad_qp_attr_set_ib_av(const struct rdma_ah_attr *ah,
				   struct vhca_qp_attr *va)
{
	if (ah->type != RDMA_AH_ATTR_TYPE_IB ||
	    rdma_ah_get_dlid(ah) > U16_MAX)
		return -EINVAL;

	va->dlid = cpu_to_le16(rdma_ah_get_dlid(ah));
	va->sl = rdma_ah_get_sl(ah) & 0xf;
	/* Masked as vhca_ah.c masks them (IBTA 7.11.1: 7 bits at most). */
	va->src_path_bits = rdma_ah_get_path_bits(ah) &
			    (BIT(VHCA_IB_MAX_LMC) - 1);
	if (!(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return 0;
	va->ah_flags = VHCA_AH_GRH;
	return vhcad_qp_attr_set_grh(ah, va);
}

static int vhcad_qp_attr_from_ib(struct vhca_qp *qp,
				 const struct ib_qp_attr *attr, int attr_mask,
				 struct vhca_qp_attr *va)
{
	memset(va, 0, sizeof(*va));
	va->qpn = cpu_to_le32(qp->qpn);
	va->attr_mask = cpu_to_le32(attr_mask);

	if (attr_mask & IB_QP_STATE)
		va->qp_state = attr->qp_state;
	if (attr_mask & IB_QP_CUR_STATE)
		va->cur_qp_state = attr->cur_qp_state;
	if (attr_mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		va->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (attr_mask & IB_QP_ACCESS_FLAGS)
		va->qp_access_flags = cpu_to_le32(attr->qp_access_flags &
						  VHCA_QP_REMOTE_ACCESS);
	if (attr_mask & IB_QP_PKEY_INDEX)
		va->pkey_index = cpu_to_le16(attr->pkey_index);
	if (attr_mask & IB_QP_PORT)
		va->port = attr->port_num;
	if (attr_mask & IB_QP_QKEY)
		va->qkey = cpu_to_le32(attr->qkey);
	if (attr_mask & IB_QP_PATH_MTU)
		va->path_mtu = attr->path_mtu;
	if (attr_mask & IB_QP_TIMEOUT)
		va->timeout = attr->timeout;
	if (attr_mask & IB_QP_RETRY_CNT)
		va->retry_cnt = attr->retry_cnt;
	if (attr_mask & IB_QP_RNR_RETRY)
		va->rnr_retry = attr->rnr_retry;
	if (attr_mask & IB_QP_RQ_PSN)
		va->rq_psn = cpu_to_le32(attr->rq_psn);
	if (attr_mask & IB_QP_MAX_QP_RD_ATOMIC)
		va->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IB_QP_MIN_RNR_TIMER)
		va->min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IB_QP_SQ_PSN)
		va->sq_psn = cpu_to_le32(attr->sq_psn);
	if (attr_mask & IB_QP_MAX_DEST_RD_ATOMIC)
		va->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IB_QP_DEST_QPN)
		va->dest_qp_num = cpu_to_le32(attr->dest_qp_num);
	if ((attr_mask & IB_QP_AV) && vhcad_is_ib(to_vhca_dev(qp->ibqp.device)))
		return vhcad_qp_attr_set_ib_av(&attr->ah_attr, va);
	if (attr_mask & IB_QP_AV)
		return vhcad_qp_attr_set_av(qp, attr, attr_mask, va);
	return 0;
}

/* A kernel QP back in RESET: empty rings, indices from 0 (as the device). */
static void vhcad_qp_reset_kernel(struct vhca_qp *qp)
{
	struct vhca_wq *wqs[] = { &qp->sq, &qp->rq };
	unsigned int i;

	if (!qp->sq.wr_ids)
		return;

	vhcad_cq_clean(to_vhca_cq(qp->ibqp.send_cq), qp->qpn);
	if (qp->ibqp.recv_cq != qp->ibqp.send_cq)
		vhcad_cq_clean(to_vhca_cq(qp->ibqp.recv_cq), qp->qpn);
	for (i = 0; i < ARRAY_SIZE(wqs); i++) {
		/* A QP on an SRQ has no receive queue of its own. */
		if (!wqs[i]->wr_ids)
			continue;
		spin_lock_irq(&wqs[i]->lock);
		wqs[i]->pi = 0;
		WRITE_ONCE(wqs[i]->ci, 0);
		spin_unlock_irq(&wqs[i]->lock);
	}
}

int vhcad_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int attr_mask, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibqp->device);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	enum ib_qp_state cur_state, new_state;
	struct vhca_qp_attr va;
	int err;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (attr_mask & ~VHCA_QP_ATTR_MASK)
		return -EOPNOTSUPP;

	mutex_lock(&qp->mutex);
	cur_state = attr_mask & IB_QP_CUR_STATE ? attr->cur_qp_state :
						  qp->state;
	new_state = attr_mask & IB_QP_STATE ? attr->qp_state : cur_state;
	/* IBTA 11.2.4.2: required and allowed attributes per transition. */
	if (!ib_modify_qp_is_ok(cur_state, new_state, ibqp->qp_type,
				attr_mask)) {
		err = -EINVAL;
		goto out;
	}
	if ((attr_mask & IB_QP_PORT) && attr->port_num != VHCA_PORT_NUM) {
		err = -EINVAL;
		goto out;
	}

	err = vhcad_qp_attr_from_ib(qp, attr, attr_mask, &va);
	if (err)
		goto out;
	err = vhcad_cmd_modify_qp(dev, &va);
	if (err)
		goto out;

	qp->state = new_state;
	if (attr_mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (new_state == IB_QPS_RESET)
		vhcad_qp_reset_kernel(qp);
out:
	mutex_unlock(&qp->mutex);
	return err;
}

/* A connected QP's path as QUERY_QP returned it, in @ah_attr. */
static void vhcad_qp_path(struct vhca_dev *dev, const struct vhca_qp_attr *va,
			  struct rdma_ah_attr *ah_attr)
{
	struct vhca_ud_av av = {};

	if (!vhcad_is_ib(dev)) {
		vhcad_roce_ah_attr(ah_attr, va->dgid, va->dmac,
				   le32_to_cpu(va->flow_label),
				   va->sgid_index, va->hop_limit,
				   va->traffic_class);
		rdma_ah_set_sl(ah_attr, va->sl);
		return;
	}

	/* The same fields as a UD address vector's on IB. */
	memcpy(av.dgid, va->dgid, sizeof(av.dgid));
	av.dlid = va->dlid;
	av.sl = va->sl;
	av.src_path_bits = va->src_path_bits;
	av.ah_flags = va->ah_flags;
	av.sgid_index = va->sgid_index;
	av.hop_limit = va->hop_limit;
	av.traffic_class = va->traffic_class;
	av.flow_label = va->flow_label;
	vhcad_ib_ah_attr(ah_attr, &av);
}

int vhcad_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_qp_init_attr *init_attr)
{
	struct vhca_dev *dev = to_vhca_dev(ibqp->device);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	struct vhca_qp_attr va;
	int err;

	mutex_lock(&qp->mutex);
	err = vhcad_cmd_query_qp(dev, qp->qpn, &va);
	if (err)
		goto out;
	if (va.qp_state > IB_QPS_ERR) {
		dev_err_ratelimited(&dev->pdev->dev,
				    "QUERY_QP of QP %u returned state %u\n",
				    qp->qpn, va.qp_state);
		err = -EIO;
		goto out;
	}
	/* The device may have moved it to ERR since (IBTA 10.3.1). */
	qp->state = va.qp_state;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = va.qp_state;
	attr->cur_qp_state = va.qp_state;
	attr->path_mtu = va.path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(va.qkey);
	attr->rq_psn = le32_to_cpu(va.rq_psn);
	attr->sq_psn = le32_to_cpu(va.sq_psn);
	attr->dest_qp_num = le32_to_cpu(va.dest_qp_num);
	attr->qp_access_flags = le32_to_cpu(va.qp_access_flags);
	attr->pkey_index = le16_to_cpu(va.pkey_index);
	attr->en_sqd_async_notify = va.en_sqd_async_notify;
	attr->sq_draining = va.sq_draining;
	attr->max_rd_atomic = va.max_rd_atomic;
	attr->max_dest_rd_atomic = va.max_dest_rd_atomic;
	attr->min_rnr_timer = va.min_rnr_timer;
	attr->port_num = VHCA_PORT_NUM;
	attr->timeout = va.timeout;
	attr->retry_cnt = va.retry_cnt;
	attr->rnr_retry = va.rnr_retry;
	/* Only connected QPs have a path; a UD QP's is in each AH. */
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC ||
	    ibqp->qp_type == IB_QPT_XRC_INI || ibqp->qp_type == IB_QPT_XRC_TGT)
		vhcad_qp_path(dev, &va, &attr->ah_attr);
	attr->cap.max_send_wr = le32_to_cpu(va.max_send_wr);
	attr->cap.max_recv_wr = le32_to_cpu(va.max_recv_wr);
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	attr->cap.max_inline_data = qp->max_inline_data;

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->event_handler = ibqp->event_handler;
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->xrcd = ibqp->xrcd;
	init_attr->cap = attr->cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
						  IB_SIGNAL_REQ_WR;
	init_attr->port_num = VHCA_PORT_NUM;
out:
	mutex_unlock(&qp->mutex);
	return err;
}

int vhcad_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibqp->device);
	struct vhca_qp *qp = to_vhca_qp(ibqp);
	int err;

	/* IBTA 10.2.4.4: outstanding WQEs go without completions. */
	err = vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_QP, qp->qpn);
	if (err)
		return err;

	/* No async event handler may still be looking at it. */
	xa_erase_irq(&dev->qps, qp->qpn);
	synchronize_irq(pci_irq_vector(dev->pdev, VHCA_VECTOR_ASYNC));

	/* A kernel CQ poller must not meet its completions either. */
	if (qp->sq.wr_ids) {
		vhcad_cq_clean(to_vhca_cq(ibqp->send_cq), qp->qpn);
		if (ibqp->recv_cq != ibqp->send_cq)
			vhcad_cq_clean(to_vhca_cq(ibqp->recv_cq), qp->qpn);
	}

	mutex_destroy(&qp->mutex);
	vhcad_qp_free_bufs(dev, qp);
	return 0;
}
