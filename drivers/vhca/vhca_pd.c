// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains: a number from the device (CREATE_PD) that MRs and QPs
 * carry; the device checks that an access's MR and QP share it.  XRC
 * domains (IBTA annex A14) are numbers from the device too (ALLOC_XRCD),
 * which XRC SRQs and XRC target QPs carry; sharing a domain between
 * processes (ibv_open_xrcd on a file) is the RDMA core's.
 */

#include "vhca.h"
#include "vhca_verbs.h"

int vhcad_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibpd->device);

	/* No driver-specific request is defined. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	return vhcad_cmd_create_pd(dev, &to_vhca_pd(ibpd)->pdn);
}

int vhcad_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return vhcad_cmd_destroy(to_vhca_dev(ibpd->device), VHCA_CMD_DESTROY_PD,
				 to_vhca_pd(ibpd)->pdn);
}

int vhcad_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibxrcd->device);

	/* No driver-specific request is defined. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	return vhcad_cmd_alloc_xrcd(dev, &to_vhca_xrcd(ibxrcd)->xrcdn);
}

int vhcad_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return vhcad_cmd_destroy(to_vhca_dev(ibxrcd->device),
				 VHCA_CMD_DEALLOC_XRCD,
				 to_vhca_xrcd(ibxrcd)->xrcdn);
}
