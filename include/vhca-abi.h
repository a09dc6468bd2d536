/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vhca user-verbs ABI: the udata the guest kernel driver (drivers/vhca) and
 * the rdma-core provider (provider/vhca) exchange.  Bump VHCA_UVERBS_ABI_VERSION
 * on any incompatible change; the provider refuses other versions.
 */
#ifndef VHCA_ABI_USER_H
#define VHCA_ABI_USER_H

#include <linux/types.h>

#define VHCA_UVERBS_ABI_VERSION 1

/* IB_USER_VERBS_CMD_GET_CONTEXT response. */
struct vhca_alloc_ucontext_resp {
	__u32 db_page;		/* this context's page in BAR2 */
	__u32 db_page_size;	/* bytes to mmap at db_mmap_offset */
	__aligned_u64 db_mmap_offset;	/* mmap offset of the doorbell page */
};

#endif /* VHCA_ABI_USER_H */
