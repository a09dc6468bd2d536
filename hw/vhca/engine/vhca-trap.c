/*
 * vhca engine: the SMA's traps (IBTA Vol 1 14.2.5.1, 13.4.8.2 Notice).
 *
 * A trap is an unsolicited SMP, Method Trap and attribute Notice, from a
 * port's SMA to the master SM (PortInfo MasterSMLID and MasterSMSL).
 * The SMA here sends two, those whose CapabilityMask bits it sets:
 *  - 144, local changes: the CapabilityMask changed (MODIFY_PORT: IsSM
 *    when an SM starts, IsCM when the kernel's CM loads), or the
 *    NodeDescription did (the OtherLocalChanges bit and ChangeFlags say
 *    so); opensm reads the new NodeDescription at once;
 *  - 256, Bad M_Key: an SMP failed the M_Key check (14.2.4.2).
 *
 * As ConnectX and InfiniHost firmware do, the device does not send a
 * trap on the wire itself: it hands it to the driver as an SMP received
 * on QP0 from SLID 0, which no packet from the wire has
 * (vhca_link_ib_receive drops those), and the driver sends it on to the
 * SM from the kernel's MAD layer (drivers/vhca/vhca_mad.c; mthca's and
 * mlx4's forward_trap).  The SM answers with a TrapRepress, which the
 * SMA takes (vhca_sma_process) and does not answer.
 *
 * A trap is sent once, when the port is ACTIVE and knows its SM (o14-3.2.1,
 * as hfi1); it is not repeated until repressed (docs/limits.rst).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-ib.h"
#include "vhca-mad.h"
#include "vhca-transport.h"

/* A Notice (13.4.8.2) of a generic trap from this CA port. */
static void vhca_trap_notice(const VhcaCore *core, uint8_t *notice,
                             uint8_t type, uint16_t trap)
{
    vhca_mad_set(notice, VHCA_NOTICE_IS_GENERIC, 1);
    vhca_mad_set(notice, VHCA_NOTICE_TYPE, type);
    vhca_mad_set(notice, VHCA_NOTICE_PRODUCER_TYPE, VHCA_NOTICE_PRODUCER_CA);
    vhca_mad_set(notice, VHCA_NOTICE_TRAP_NUMBER, trap);
    vhca_mad_set(notice, VHCA_NOTICE_ISSUER_LID, core->ib.lid);
}

/*
 * Hand the Trap SMP @mad to the driver: an IB packet on VL15 from SLID 0
 * to QP0, built and parsed as every packet is and received above the
 * link layer, so that it takes the SMI QP's path to a receive WQE (or is
 * dropped as NO_RWQE if none is posted).
 */
static void vhca_trap_deliver(VhcaCore *core, const uint8_t *mad)
{
    uint8_t frame[VHCA_WIRE_SMP_LEN];
    VhcaWirePacket pkt;
    size_t len;

    len = vhca_wire_build_smp(mad, core->ib.lid, 0, frame, sizeof(frame));
    if (!len || vhca_wire_parse_lrh(frame, len, &pkt) != VHCA_WIRE_OK) {
        return;                     /* cannot happen: built right here */
    }
    vhca_rx_packet(core, frame, len, &pkt, true);
}

/*
 * Send the trap whose Notice is @notice (64 bytes), if the port may:
 * ACTIVE, with a master SM, and the driver has its SMI QP.
 */
static void vhca_trap_send(VhcaCore *core, const uint8_t *notice)
{
    VhcaIbPort *ib = &core->ib;
    uint8_t mad[VHCA_MAD_SIZE];
    uint16_t trap = vhca_mad_get(notice, VHCA_NOTICE_TRAP_NUMBER);
    bool sent = ib->state == VHCA_PORT_ACTIVE && ib->sm_lid &&
                core->smi_qpn;

    VHCA_HOOK(core, ib_trap, trap, ib->sm_lid, sent);
    if (!sent) {
        return;
    }
    /* A new TID for each trap (13.4.6.4); never 0. */
    if (++ib->trap_tid == 0) {
        ib->trap_tid = 1;
    }
    vhca_mad_init(mad, VHCA_MGMT_CLASS_SUBN_LID, VHCA_MAD_METHOD_TRAP,
                  VHCA_SMP_ATTR_NOTICE, 0, ib->trap_tid);
    /* M_Key 0 (o14-1, as hfi1): the SM does not check a trap's. */
    memcpy(mad + VHCA_SMP_DATA, notice, VHCA_SMP_DATA_LEN);
    vhca_trap_deliver(core, mad);
    vhca_count(core, VHCA_CNT_SMA_TRAPS, 1);
}

void vhca_ib_trap_local_changes(VhcaCore *core, bool other,
                                uint16_t change_flags)
{
    uint8_t notice[VHCA_SMP_DATA_LEN] = { 0 };

    vhca_trap_notice(core, notice, VHCA_NOTICE_TYPE_INFO,
                     VHCA_TRAP_LOCAL_CHANGES);
    vhca_mad_set(notice, VHCA_TRAP144_LID, core->ib.lid);
    vhca_mad_set(notice, VHCA_TRAP144_OTHER_CHANGES, other);
    vhca_mad_set(notice, VHCA_TRAP144_CAP_MASK, core->ib.cap_mask);
    vhca_mad_set(notice, VHCA_TRAP144_CHANGE_FLAGS, change_flags);
    vhca_trap_send(core, notice);
}

/*
 * 14.2.4.2 and Table 131: what the SMP that failed the check asked, its
 * M_Key, and for a directed route SMP its DrSLID and the path back (as
 * far as 30 hops fit, DRPathTruncated beyond).
 */
void vhca_ib_trap_bad_mkey(VhcaCore *core, const uint8_t *smp)
{
    uint8_t notice[VHCA_SMP_DATA_LEN] = { 0 };
    uint8_t hops = smp[VHCA_MAD_HOP_CNT] & 0x3f;

    vhca_trap_notice(core, notice, VHCA_NOTICE_TYPE_SECURITY,
                     VHCA_TRAP_BAD_MKEY);
    vhca_mad_set(notice, VHCA_TRAP256_LID, core->ib.lid);
    vhca_mad_set(notice, VHCA_TRAP256_METHOD, smp[VHCA_MAD_METHOD]);
    vhca_mad_set(notice, VHCA_TRAP256_ATTR_ID,
                 vhca_ld_be16(smp + VHCA_MAD_ATTR_ID));
    vhca_mad_set(notice, VHCA_TRAP256_ATTR_MOD,
                 vhca_ld_be32(smp + VHCA_MAD_ATTR_MOD));
    memcpy(notice + VHCA_TRAP256_MKEY, smp + VHCA_SMP_MKEY, 8);
    if (smp[VHCA_MAD_MGMT_CLASS] == VHCA_MGMT_CLASS_SUBN_DR) {
        vhca_mad_set(notice, VHCA_TRAP256_DR_SLID,
                     vhca_ld_be16(smp + VHCA_SMP_DR_SLID));
        vhca_mad_set(notice, VHCA_TRAP256_DR_NOTICE, 1);
        if (hops > VHCA_TRAP256_DR_PATH_MAX) {
            vhca_mad_set(notice, VHCA_TRAP256_DR_TRUNCATED, 1);
            hops = VHCA_TRAP256_DR_PATH_MAX;
        }
        vhca_mad_set(notice, VHCA_TRAP256_DR_HOP_COUNT, hops);
        memcpy(notice + VHCA_TRAP256_DR_RETURN_PATH,
               smp + VHCA_SMP_DR_RETURN_PATH, hops);
    }
    vhca_trap_send(core, notice);
}
