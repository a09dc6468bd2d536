/*
 * vhca engine: the notification point's CNPs, sent from the QP's pass
 * (docs/specs/vhca.rst, "Congestion control"; vhca-cc.c decides when).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-transport.h"

/* A CNP's payload: 16 reserved bytes (A17.9.3). */
#define VHCA_CNP_PAYLOAD        16

/*
 * The CNP (A17.9.3): BTH OpCode 0x81, the default P_Key, DestQP the
 * sender's QP, BECN set, PSN 0, 16 reserved bytes, ICRC; the IP header's
 * DSCP np_cnp_dscp and ECN Not-ECT, so that a congested queue neither
 * marks nor drops it first (vhca_xmit() leaves a CNP's ECN alone); on a
 * VLAN, the VLAN of the GID entry the marked packet came to.
 */
void vhca_cc_send_pending(VhcaCore *core, uint32_t qpn, VhcaQp *qp)
{
    VhcaPath *path = &qp->cnp_path;
    static const uint8_t reserved[VHCA_CNP_PAYLOAD];
    VhcaWirePacket cnp;

    if (!qp->cnp_pending) {
        return;
    }
    qp->cnp_pending = false;
    memset(&cnp, 0, sizeof(cnp));
    cnp.tp.bth.opcode = VHCA_BTH_OPCODE_CNP;
    cnp.tp.bth.becn = true;
    cnp.payload = reserved;
    cnp.payload_len = sizeof(reserved);
    path->traffic_class = (uint8_t)(core->cc.params.np_cnp_dscp <<
                                    VHCA_DSCP_SHIFT);
    /*
     * On a VLAN the CNP's PCP (vhca_xmit() tags it from the SL):
     * np_cnp_prio in np_cnp_prio_mode 0, else the marked packet's, as
     * vhca_cc_rx_marked() left it.
     */
    if (!core->cc.params.np_cnp_prio_mode) {
        path->sl = (uint8_t)core->cc.params.np_cnp_prio;
    }
    vhca_xmit(core, qpn, path, &cnp);
    core->cc_counters[VHCA_CC_CNT_NP_CNP_SENT]++;
    VHCA_HOOK(core, cc_cnp_sent, qpn, path->dest_qpn);
}

