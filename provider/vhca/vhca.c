// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca userspace provider: device matching and user contexts.
 *
 * vhca is the virtual RoCEv2 (or InfiniBand) HCA of docs/specs/vhca.rst.
 * Its kernel driver (drivers/vhca) is out of tree and has no rdma_driver_id
 * of its own, so libibverbs finds the device by its PCI ID, and uverbs
 * ioctls carry RDMA_DRIVER_UNKNOWN, the id the kernel binds to such a
 * driver.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <vhca_hw.h>

#include "vhca.h"
#include "vhca_abi.h"
#include "vhca_verbs.h"

static void vhca_free_context(struct ibv_context *ibctx);

/*
 * Without RDMA resources (or memory windows) on the device the kernel
 * driver refuses the resource (or window) verbs with EOPNOTSUPP itself.
 * Multicast attach and detach are the kernel's business alone: the
 * provider keeps no state for them.
 */
static const struct verbs_context_ops vhca_context_ops = {
	.alloc_mw = vhca_alloc_mw,
	.alloc_pd = vhca_alloc_pd,
	.bind_mw = vhca_bind_mw,
	.attach_mcast = ibv_cmd_attach_mcast,
	.close_xrcd = vhca_close_xrcd,
	.create_ah = vhca_create_ah,
	.create_cq = vhca_create_cq,
	.create_cq_ex = vhca_create_cq_ex,
	.create_qp = vhca_create_qp,
	.create_qp_ex = vhca_create_qp_ex,
	.create_srq = vhca_create_srq,
	.create_srq_ex = vhca_create_srq_ex,
	.dealloc_mw = vhca_dealloc_mw,
	.dealloc_pd = vhca_dealloc_pd,
	.dereg_mr = vhca_dereg_mr,
	.destroy_ah = vhca_destroy_ah,
	.destroy_cq = vhca_destroy_cq,
	.destroy_qp = vhca_destroy_qp,
	.destroy_srq = vhca_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = vhca_free_context,
	.get_srq_num = vhca_get_srq_num,
	.modify_qp = vhca_modify_qp,
	.modify_srq = vhca_modify_srq,
	.open_qp = vhca_open_qp,
	.open_xrcd = vhca_open_xrcd,
	.poll_cq = vhca_poll_cq,
	.post_recv = vhca_post_recv,
	.post_send = vhca_post_send,
	.post_srq_recv = vhca_post_srq_recv,
	.query_device_ex = vhca_query_device_ex,
	.query_port = vhca_query_port,
	.query_qp = vhca_query_qp,
	.query_srq = vhca_query_srq,
	.reg_mr = vhca_reg_mr,
	.rereg_mr = vhca_rereg_mr,
	.req_notify_cq = vhca_arm_cq,
	.resize_cq = vhca_resize_cq,
};

/*
 * The device's queue limits, for sizing CQs, QPs and SRQs, and its one
 * port's link layer.
 */
static int vhca_read_limits(struct vhca_context *ctx)
{
	struct ibv_port_attr port_attr;
	struct ibv_device_attr attr;
	int err;

	err = ibv_query_device(&ctx->ibv_ctx.context, &attr);
	if (err)
		return err;
	err = ibv_query_port(&ctx->ibv_ctx.context, 1, &port_attr);
	if (err)
		return err;

	ctx->ib_port = port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND;

	ctx->max_qp_wr = attr.max_qp_wr;
	ctx->max_cqe = attr.max_cqe;
	ctx->max_srq_wr = attr.max_srq_wr;
	ctx->max_srq_sge = attr.max_srq_sge < VHCA_MAX_RECV_SGE ?
			   attr.max_srq_sge : VHCA_MAX_RECV_SGE;
	/*
	 * max_sge is the smaller of the send and receive limits; a send WQE
	 * holds VHCA_MAX_SEND_SGE, and the kernel checks the device's own.
	 */
	ctx->max_send_sge = VHCA_MAX_SEND_SGE;
	ctx->max_inline_data = VHCA_MAX_INLINE;
	return 0;
}

static struct verbs_context *vhca_alloc_context(struct ibv_device *ibdev,
						int cmd_fd,
						void *private_data)
{
	struct vhca_cmd_alloc_ucontext_resp resp = {};
	struct vhca_cmd_alloc_ucontext cmd = {};
	struct vhca_context *ctx;
	int err;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	err = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(&ctx->ibv_ctx, "ibv_cmd_get_context failed: %s\n",
			  strerror(err));
		goto err_free;
	}

	/*
	 * The queue doorbells sit at fixed offsets in a VHCA_DB_PAGE_SIZE
	 * page; a smaller mapping would turn a doorbell write into SIGBUS.
	 */
	if (resp.db_page_size < VHCA_DB_PAGE_SIZE) {
		verbs_err(&ctx->ibv_ctx,
			  "kernel offers a %u byte doorbell page, need %u\n",
			  resp.db_page_size, VHCA_DB_PAGE_SIZE);
		err = EPROTO;
		goto err_free;
	}

	ctx->db_size = resp.db_page_size;
	ctx->db = mmap(NULL, ctx->db_size, PROT_WRITE, MAP_SHARED, cmd_fd,
		       resp.db_mmap_offset);
	if (ctx->db == MAP_FAILED) {
		err = errno;
		verbs_err(&ctx->ibv_ctx,
			  "mmap of doorbell page %u failed: %s\n",
			  resp.db_page, strerror(err));
		goto err_free;
	}

	verbs_set_ops(&ctx->ibv_ctx, &vhca_context_ops);

	err = vhca_read_limits(ctx);
	if (err) {
		verbs_err(&ctx->ibv_ctx, "query device or port failed: %s\n",
			  strerror(err));
		goto err_unmap;
	}
	pthread_mutex_init(&ctx->qp_table_mutex, NULL);

	return &ctx->ibv_ctx;

err_unmap:
	munmap(ctx->db, ctx->db_size);
err_free:
	/* Closes cmd_fd, which frees the kernel's context and its page. */
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = err;
	return NULL;
}

static void vhca_free_context(struct ibv_context *ibctx)
{
	struct vhca_context *ctx = to_vhca_ctx(ibctx);

	pthread_mutex_destroy(&ctx->qp_table_mutex);
	munmap(ctx->db, ctx->db_size);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *vhca_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct vhca_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	return &dev->ibv_dev;
}

static void vhca_device_free(struct verbs_device *vdev)
{
	struct vhca_device *dev = container_of(vdev, struct vhca_device,
					       ibv_dev);

	free(dev);
}

static const struct verbs_match_ent vhca_match_table[] = {
	VERBS_PCI_MATCH(VHCA_PCI_VENDOR_ID, VHCA_PCI_DEVICE_ID, NULL),
	{}
};

static const struct verbs_device_ops vhca_dev_ops = {
	.name = "vhca",
	.match_min_abi_version = VHCA_UVERBS_ABI_VERSION,
	.match_max_abi_version = VHCA_UVERBS_ABI_VERSION,
	.match_table = vhca_match_table,
	.alloc_device = vhca_device_alloc,
	.uninit_device = vhca_device_free,
	.alloc_context = vhca_alloc_context,
};

PROVIDER_DRIVER(vhca, vhca_dev_ops);
