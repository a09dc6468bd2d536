// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Multicast (IBTA 10.5.2, annex A17.5.6 for RoCEv2): a UD QP joins a group
 * named by its multicast GID with ATTACH_MCAST and leaves it with
 * DETACH_MCAST; the device delivers a copy of each datagram sent to the
 * group to every attached QP.  RoCE has no multicast LIDs: @lid is ignored,
 * as the RoCE annex says.  Joining the group on the network (IGMP/MLD)
 * is the IP stack's business (rdma_cm does it for its users).  On an
 * InfiniBand port the device, too, knows a group by its MGID, which the
 * group's packets carry in their GRH (multicast AVs have one: the SA's
 * MCMemberRecord gives it); the MLID, the SA's to assign, is not passed.
 */

#include <rdma/ib_addr.h>

#include "vhca.h"
#include "vhca_verbs.h"

static int vhcad_mcast_check(struct ib_qp *ibqp, union ib_gid *gid)
{
	/* The core checks these for its callers; QP1 never joins groups. */
	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)gid->raw))
		return -EINVAL;
	return 0;
}

int vhcad_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	int err;

	err = vhcad_mcast_check(ibqp, gid);
	if (err)
		return err;
	return vhcad_cmd_mcast(to_vhca_dev(ibqp->device), VHCA_CMD_ATTACH_MCAST,
			       to_vhca_qp(ibqp)->qpn, gid->raw);
}

int vhcad_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	int err;

	err = vhcad_mcast_check(ibqp, gid);
	if (err)
		return err;
	return vhcad_cmd_mcast(to_vhca_dev(ibqp->device), VHCA_CMD_DETACH_MCAST,
			       to_vhca_qp(ibqp)->qpn, gid->raw);
}
