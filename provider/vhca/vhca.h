/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca userspace provider: device and user context.
 */
#ifndef __VHCA_H__
#define __VHCA_H__

#include <stddef.h>

#include <infiniband/driver.h>
#include <util/util.h>

struct vhca_device {
	struct verbs_device ibv_dev;
};

struct vhca_context {
	struct verbs_context ibv_ctx;

	/*
	 * This context's doorbell page in BAR2, mapped write-only.  The data
	 * path rings its queues through it, at the VHCA_DB_* offsets.
	 */
	void *db;
	size_t db_size;
};

static inline struct vhca_context *to_vhca_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct vhca_context, ibv_ctx.context);
}

#endif /* __VHCA_H__ */
