// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows (IBTA 10.6.7; docs/specs/vhca.rst, "Memory windows"):
 * type 1 and type 2B, as rxe has them.  The driver only makes and frees
 * them; user space binds them with BIND_MW work requests the provider
 * posts (ibv_bind_mw() for type 1, IBV_WR_BIND_MW for type 2), and the
 * device checks each bind and each access.  Kernel ULPs have no verb to
 * bind a window with, so windows are for user space only.
 */

#include "vhca.h"
#include "vhca_verbs.h"

static_assert((int)IB_MW_TYPE_1 == (int)VHCA_MW_TYPE_1);
static_assert((int)IB_MW_TYPE_2 == (int)VHCA_MW_TYPE_2);

int vhcad_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibmw->device);
	u32 key;
	int err;

	/* No driver-specific input is defined; refuse what we don't know. */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	/* The core checked the type; the device checks it again. */
	err = vhcad_alloc_mw_key(dev, to_vhca_pd(ibmw->pd)->pdn, ibmw->type,
				 &key);
	if (err)
		return err;

	/* A type 1 window starts bound to nothing, a type 2 one free. */
	ibmw->rkey = key;
	return 0;
}

/*
 * The device ends the window's binding with it: accesses through its key
 * fail from now on, in flight too.  It names the window by its index: a
 * type 2 window's tag may be one of a bind the driver never saw.
 */
int vhcad_dealloc_mw(struct ib_mw *ibmw)
{
	struct vhca_dev *dev = to_vhca_dev(ibmw->device);

	return vhcad_cmd_destroy(dev, VHCA_CMD_DEALLOC_MW, ibmw->rkey);
}
