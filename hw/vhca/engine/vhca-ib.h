/*
 * vhca engine: the InfiniBand port (link=ib) - its state machine (IBTA
 * Vol 1, 7.2 and 14.2.5.6), its identity (the GUIDs), its P_Key table,
 * and the two management agents a real HCA keeps in firmware: the
 * subnet management agent (vhca-sma.c, IBTA 14.2) and the performance
 * management agent (vhca-pma.c, IBTA 16.1), which the driver reaches
 * through MAD_IFC (docs/specs/vhca.rst, "InfiniBand port: management
 * agents").  Engine-internal.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_IB_H
#define HW_VHCA_IB_H

#include "vhca-rdma.h"

/* The port's link: 4X QDR, 40 Gb/s (PortInfo LinkWidth/SpeedActive). */
#define VHCA_IB_PORT_WIDTH          2       /* IB_WIDTH_4X */
#define VHCA_IB_PORT_SPEED          4       /* IB_SPEED_QDR */

/* The default P_Key, full member of the default partition (10.9.1.2). */
#define VHCA_IB_DEFAULT_PKEY        0xffff
/* GIDPrefix of the link-local subnet, the power-on value (4.1.1). */
#define VHCA_IB_DEFAULT_GID_PREFIX  0xfe80000000000000ull

/* "DOWN", "INIT", "ARMED", "ACTIVE" (enum vhca_port_state). */
const char *vhca_ib_port_state_name(uint8_t state);

/* Admin command handlers (vhca-admin.c's table). */
uint8_t vhca_cmd_mad_ifc(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_modify_port(VhcaCore *core, VhcaCmdCtx *ctx);

/*
 * Power-on state of core->ib (device reset): DOWN, no LID, the default
 * P_Key alone at index 0, SL2VL all VL0, GIDPrefix fe80::, no M_Key,
 * and gid_tbl[0] = GIDPrefix:port GUID.  If the cable is up
 * (core->link_up, which survives a reset) the link trains again at once
 * and the port is INIT, without an event: the driver reads the state
 * when it enables the device.
 */
void vhca_ib_port_reset(VhcaCore *core);

/*
 * The cable (the backend's link status) went up or down.  Up: the link
 * trains, PortPhysicalState LinkUp, PortState INIT, PORT_CHANGE(INIT).
 * Down: the port leaves LinkUp (LinkDownedCounter + 1), PortState DOWN,
 * PORT_CHANGE(DOWN), and forgets what the SM gave it for this link
 * (LID, LMC, MasterSMLID, MasterSMSL).  A port the SM disabled
 * (PortPhysicalState Disabled) stays so.  Idempotent.
 */
void vhca_ib_port_set_link(VhcaCore *core, bool up);

/*
 * A data packet (not VL15) arrived: an ARMED port becomes ACTIVE, as on
 * the SM's Set (IBTA 7.2, "Armed").  For the receive path; does nothing
 * in other states.
 */
void vhca_ib_port_rx_data(VhcaCore *core);

/* Modified EUI-64 from a MAC (RFC 4291 appendix A), as rxe's node GUID. */
static inline uint64_t vhca_mac_to_guid(const uint8_t *mac)
{
    return ((uint64_t)(mac[0] ^ 0x02) << 56) | ((uint64_t)mac[1] << 48) |
           ((uint64_t)mac[2] << 40) | ((uint64_t)0xff << 32) |
           ((uint64_t)0xfe << 24) | ((uint64_t)mac[3] << 16) |
           ((uint64_t)mac[4] << 8) | mac[5];
}

/* NodeGUID and SystemImageGUID (NodeInfo, QUERY_DEVICE). */
static inline uint64_t vhca_ib_node_guid(const VhcaCore *core)
{
    return vhca_mac_to_guid(core->cfg.mac);
}

/*
 * PortGUID: the node GUID with ff:fd in place of the EUI-64's ff:fe.
 * IBTA 4.1.1 names a port by a GUID of its own beside the node's, and
 * tools show both (ibstat, ibnetdiscover).  ConnectX firmware uses the
 * node GUID + 1, but devices with consecutive MACs (scripts/
 * vhca_fabric.py) would then share GUIDs between one's port and the
 * next one's node; a GUID with ff:fd in the middle is never a node's,
 * so every GUID of the subnet is unique while MACs are.
 */
static inline uint64_t vhca_ib_port_guid(const VhcaCore *core)
{
    return (vhca_ib_node_guid(core) & ~(0xffull << 24)) | (0xfdull << 24);
}

/*
 * The index of the P_Key table entry that @pkey matches
 * (vhca_ib_pkey_match(), vhca-wire.h).  False if none does.
 */
bool vhca_ib_pkey_find(const VhcaCore *core, uint16_t pkey,
                       uint16_t *index);
/* Entry @index of the P_Key table; 0 (invalid) if out of range. */
uint16_t vhca_ib_pkey_at(const VhcaCore *core, uint16_t index);

/*
 * The SMA's traps to the master SM (vhca-trap.c, IBTA 14.2.5.1): 144
 * when the CapabilityMask changed (@other false) or another local
 * attribute did (@other true; @change_flags its ChangeFlags, such as
 * VHCA_TRAP144_NODE_DESC); 256 when the SMP @smp (256 bytes) failed the
 * M_Key check.  Nothing is sent unless the port is ACTIVE with a master
 * SM and the driver has its SMI QP.
 */
void vhca_ib_trap_local_changes(VhcaCore *core, bool other,
                                uint16_t change_flags);
void vhca_ib_trap_bad_mkey(VhcaCore *core, const uint8_t *smp);

/* A MAD handed to the device: the mailbox's header, and in and out. */
typedef struct VhcaMadReq {
    uint8_t flags;                  /* VHCA_MAD_IFC_* */
    uint8_t sl;
    uint16_t slid;
    const uint8_t *in;              /* VHCA_MAD_SIZE bytes */
    uint8_t *out;                   /* VHCA_MAD_SIZE bytes, = in at entry */
} VhcaMadReq;

/*
 * The agents: return VHCA_MAD_RESULT_* bits (0: not handled here); with
 * REPLY, req->out holds the response.  They never read or write past
 * the VHCA_MAD_SIZE bytes of in and out.
 */
uint8_t vhca_sma_process(VhcaCore *core, VhcaMadReq *req);
uint8_t vhca_pma_process(VhcaCore *core, VhcaMadReq *req);

/*
 * A response in place of the request in req->out: Method GetResp, and
 * @status; on a directed route SMP the D bit set as firmware does.  The
 * kernel's SMI code (drivers/infiniband/core/smi.c) does the hop pointer
 * and count; the device never touches them nor the route.
 */
uint8_t vhca_mad_reply(VhcaMadReq *req, uint16_t status);

#endif /* HW_VHCA_IB_H */
