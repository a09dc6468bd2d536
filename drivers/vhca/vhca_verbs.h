/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vhca: the ib_device_ops the driver implements.  Until the device has an
 * RDMA engine with resources (no QP, CQ, MR or PD today) these are the
 * device and port queries, the RoCE GID table and user contexts with their
 * doorbell page.
 */

#ifndef _VHCA_VERBS_H_
#define _VHCA_VERBS_H_

#include <rdma/ib_verbs.h>

struct vhca_ucontext {
	struct ib_ucontext ibucontext;
	u32 db_page;		/* index of this context's page in BAR2 */
	struct rdma_user_mmap_entry *db_entry;
};

/* vhca_verbs.c */
int vhca_query_device(struct ib_device *ibdev, struct ib_device_attr *props,
		      struct ib_udata *udata);
int vhca_query_port(struct ib_device *ibdev, u32 port,
		    struct ib_port_attr *props);
int vhca_get_port_immutable(struct ib_device *ibdev, u32 port,
			    struct ib_port_immutable *immutable);
enum rdma_link_layer vhca_get_link_layer(struct ib_device *ibdev, u32 port);
int vhca_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
int vhca_add_gid(const struct ib_gid_attr *attr, void **context);
int vhca_del_gid(const struct ib_gid_attr *attr, void **context);
void vhca_get_dev_fw_str(struct ib_device *ibdev, char *str);

/* vhca_ucontext.c */
int vhca_alloc_ucontext(struct ib_ucontext *ibucontext,
			struct ib_udata *udata);
void vhca_dealloc_ucontext(struct ib_ucontext *ibucontext);
int vhca_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma);
void vhca_mmap_free(struct rdma_user_mmap_entry *rdma_entry);

#endif /* _VHCA_VERBS_H_ */
