/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The uverbs commands whose udata vhca extends, over the ABI header shared
 * with the kernel driver (include/vhca-abi.h).
 */
#ifndef __VHCA_ABI_H__
#define __VHCA_ABI_H__

#include <infiniband/kern-abi.h>
#include <vhca-abi.h>
#include <kernel-abi/vhca-abi.h>

DECLARE_DRV_CMD(vhca_cmd_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		empty, vhca_alloc_ucontext_resp);
DECLARE_DRV_CMD(vhca_cmd_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		vhca_create_cq_cmd, vhca_create_cq_resp);
DECLARE_DRV_CMD(vhca_cmd_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		vhca_resize_cq_cmd, empty);
DECLARE_DRV_CMD(vhca_cmd_create_qp_ex, IB_USER_VERBS_EX_CMD_CREATE_QP,
		vhca_create_qp_cmd, vhca_create_qp_resp);
DECLARE_DRV_CMD(vhca_cmd_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		vhca_create_srq_cmd, vhca_create_srq_resp);
DECLARE_DRV_CMD(vhca_cmd_create_xsrq, IB_USER_VERBS_CMD_CREATE_XSRQ,
		vhca_create_srq_cmd, vhca_create_srq_resp);
DECLARE_DRV_CMD(vhca_cmd_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		vhca_modify_srq_cmd, empty);
DECLARE_DRV_CMD(vhca_cmd_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, vhca_create_ah_resp);

#endif /* __VHCA_ABI_H__ */
