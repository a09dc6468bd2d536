/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca userspace provider: verbs that go through the kernel driver.
 */
#ifndef __VHCA_VERBS_H__
#define __VHCA_VERBS_H__

#include <infiniband/driver.h>

int vhca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int vhca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *attr);
struct ibv_pd *vhca_alloc_pd(struct ibv_context *ibctx);
int vhca_dealloc_pd(struct ibv_pd *pd);

#endif /* __VHCA_VERBS_H__ */
