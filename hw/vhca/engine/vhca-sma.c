/*
 * vhca engine: the InfiniBand port (link=ib) and its subnet management
 * agent (IBTA Vol 1, 14.2), which a real HCA keeps in firmware: the
 * port's state machine (7.2), what the SM reads and sets through SMPs
 * (14.2.5: NodeDescription, NodeInfo, GUIDInfo, PortInfo, P_KeyTable,
 * SL2VLMappingTable, VLArbitrationTable), M_Key protection (14.2.4), and
 * the MAD_IFC and MODIFY_PORT commands through which the driver's
 * process_mad() and modify_port() reach the agents (docs/specs/vhca.rst,
 * "InfiniBand port: management agents").
 *
 * The kernel's MAD layer does what the SMI of a CA does around the agent
 * (drivers/infiniband/core/smi.c: directed route hop pointer and count,
 * on receive before process_mad() and on the response's way out): the
 * device answers the SMP and sets the D bit of a directed route
 * response, nothing more.  Every MAD is hostile: all of it is read from
 * a 256-byte copy, any value is checked before it is used.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-ib.h"
#include "vhca-mad.h"
#include "vhca-wire.h"

#define VHCA_IB_PORT_NUM            1

/* What the port can do (PortInfo; 14.2.5.6). */
#define VHCA_IB_WIDTH_SUPPORTED     (VHCA_PI_WIDTH_1X | VHCA_PI_WIDTH_4X)
#define VHCA_IB_SPEED_SUPPORTED     (VHCA_PI_SPEED_SDR | VHCA_PI_SPEED_DDR | \
                                     VHCA_PI_SPEED_QDR)
#define VHCA_IB_VL_CAP              VHCA_PI_VL_CAP_VL0
#define VHCA_IB_PKEY_BLOCKS         (VHCA_IB_PKEY_TBL_LEN / \
                                     VHCA_SMP_PKEYS_PER_BLOCK)
/* The highest VL a data SL may map to: VLCap VL0 only. */
#define VHCA_IB_MAX_DATA_VL         0
#define VHCA_IB_VL15                15
/*
 * RespTimeValue: 4.096 us << 18, about 1 s (13.4.6.2): a device under
 * TCG answers in milliseconds, not microseconds.
 */
#define VHCA_IB_RESP_TIME_VALUE     18
/* CapabilityMask at power-on: what the SMA implements (traps: vhca-trap.c). */
#define VHCA_IB_DEFAULT_CAP_MASK    (VHCA_PORT_CAP_TRAP | \
                                     VHCA_PORT_CAP_SYS_IMAGE_GUID | \
                                     VHCA_PORT_CAP_CAP_MASK_NOTICE | \
                                     VHCA_PORT_CAP_CLIENT_REREGISTER | \
                                     VHCA_PORT_CAP_OTHER_LOCAL_CHANGES)
#define VHCA_IB_DEFAULT_NODE_DESC   "vhca"

/* ---------------------------------------------------------------------- */
/* The port state machine (IBTA 7.2, 14.2.5.6 PortState)                  */
/* ---------------------------------------------------------------------- */

const char *vhca_ib_port_state_name(uint8_t state)
{
    static const char *const names[] = {
        [VHCA_PORT_DOWN] = "DOWN",
        [VHCA_PORT_INIT] = "INIT",
        [VHCA_PORT_ARMED] = "ARMED",
        [VHCA_PORT_ACTIVE] = "ACTIVE",
    };

    return state < sizeof(names) / sizeof(names[0]) && names[state] ?
           names[state] : "UNKNOWN";
}

static void vhca_ib_post_mgmt(VhcaCore *core, uint8_t event)
{
    vhca_aeq_post(core, VHCA_EQE_PORT_MGMT, event, VHCA_IB_PORT_NUM, 0);
}

/* Every change of the logical state is a PORT_CHANGE event. */
static void vhca_ib_port_enter(VhcaCore *core, uint8_t state)
{
    if (core->ib.state == state) {
        return;
    }
    VHCA_HOOK(core, ib_port_state, core->ib.state, state);
    core->ib.state = state;
    vhca_aeq_post(core, VHCA_EQE_PORT_CHANGE, state, VHCA_IB_PORT_NUM, 0);
}

/*
 * The link leaves LinkUp for @phys (Polling or Disabled): the port is
 * DOWN (7.2) and LinkDownedCounter counts it (16.1.3.5).  The LID, LMC
 * and master SM were the SM's assignment on this link: they are
 * forgotten, so that the port comes back in INIT with LID 0, and an SM
 * that sweeps it configures it afresh (14.4, subnet initialization)
 * instead of the port using a LID that may be someone else's now.  The
 * rest - M_Key and its protection above all (14.2.4: pulling a cable
 * must not lift it), GIDPrefix, the tables - stays.
 */
static void vhca_ib_link_lost(VhcaCore *core, uint8_t phys)
{
    VhcaIbPort *ib = &core->ib;

    if (ib->phys_state == VHCA_PORT_PHYS_LINK_UP) {
        vhca_count(core, VHCA_CNT_LINK_DOWNED, 1);
    }
    ib->phys_state = phys;
    ib->lid = 0;
    ib->lmc = 0;
    ib->sm_lid = 0;
    ib->sm_sl = 0;
    vhca_ib_port_enter(core, VHCA_PORT_DOWN);
}

/* A polling link with a cable trains at once: LinkUp, INIT (7.2). */
static void vhca_ib_link_train(VhcaCore *core)
{
    VhcaIbPort *ib = &core->ib;

    if (ib->phys_state != VHCA_PORT_PHYS_POLLING || !ib->cable_up) {
        return;
    }
    ib->phys_state = VHCA_PORT_PHYS_LINK_UP;
    vhca_ib_port_enter(core, VHCA_PORT_INIT);
}

void vhca_ib_port_set_link(VhcaCore *core, bool up)
{
    VhcaIbPort *ib = &core->ib;

    if (core->cfg.link != VHCA_LINK_IB) {
        return;
    }
    ib->cable_up = up;
    if (up) {
        vhca_ib_link_train(core);
    } else if (ib->phys_state == VHCA_PORT_PHYS_LINK_UP) {
        vhca_ib_link_lost(core, VHCA_PORT_PHYS_POLLING);
    }
}

void vhca_ib_port_rx_data(VhcaCore *core)
{
    if (core->ib.state == VHCA_PORT_ARMED) {
        vhca_ib_port_enter(core, VHCA_PORT_ACTIVE);
    }
}

/* gid_tbl[0] is GIDPrefix:PortGUID (4.1.1), the port's only GID. */
static void vhca_ib_gid_update(VhcaCore *core)
{
    VhcaGidEntry *entry = &core->gid_tbl[0];

    entry->valid = true;
    entry->type = VHCA_GID_TYPE_IB;
    vhca_st_be64(entry->gid, core->ib.gid_prefix);
    vhca_st_be64(entry->gid + 8, vhca_ib_port_guid(core));
    vhca_gid_tbl_update_top(core);
}

void vhca_ib_port_reset(VhcaCore *core)
{
    VhcaIbPort *ib = &core->ib;

    memset(ib, 0, sizeof(*ib));
    if (core->cfg.link != VHCA_LINK_IB) {
        return;
    }
    ib->state = VHCA_PORT_DOWN;
    ib->phys_state = VHCA_PORT_PHYS_POLLING;
    ib->gid_prefix = VHCA_IB_DEFAULT_GID_PREFIX;
    ib->cap_mask = VHCA_IB_DEFAULT_CAP_MASK;
    ib->resp_time_value = VHCA_IB_RESP_TIME_VALUE;
    ib->neighbor_mtu = VHCA_IB_MTU_4096;
    ib->operational_vls = VHCA_IB_VL_CAP;
    ib->link_down_default = VHCA_PI_LINK_DOWN_POLLING;
    ib->link_width_enabled = VHCA_IB_WIDTH_SUPPORTED;
    ib->link_speed_enabled = VHCA_IB_SPEED_SUPPORTED;
    ib->pkeys[0] = VHCA_IB_DEFAULT_PKEY;
    memcpy(ib->node_desc, VHCA_IB_DEFAULT_NODE_DESC,
           sizeof(VHCA_IB_DEFAULT_NODE_DESC) - 1);
    vhca_ib_gid_update(core);

    /* The AEQ is stopped: no event, the driver reads the state. */
    ib->cable_up = core->link_up;
    if (ib->cable_up) {
        ib->phys_state = VHCA_PORT_PHYS_LINK_UP;
        ib->state = VHCA_PORT_INIT;
    }
}

/* ---------------------------------------------------------------------- */
/* P_Keys (IBTA 10.9)                                                     */
/* ---------------------------------------------------------------------- */

bool vhca_ib_pkey_find(const VhcaCore *core, uint16_t pkey,
                       uint16_t *index)
{
    uint16_t i;

    for (i = 0; i < VHCA_IB_PKEY_TBL_LEN; i++) {
        if (vhca_ib_pkey_match(core->ib.pkeys[i], pkey)) {
            *index = i;
            return true;
        }
    }
    return false;
}

uint16_t vhca_ib_pkey_at(const VhcaCore *core, uint16_t index)
{
    return index < VHCA_IB_PKEY_TBL_LEN ? core->ib.pkeys[index] : 0;
}

/* ---------------------------------------------------------------------- */
/* Responses and the M_Key (IBTA 13.4.7, 14.2.4)                          */
/* ---------------------------------------------------------------------- */

uint8_t vhca_mad_reply(VhcaMadReq *req, uint16_t status)
{
    vhca_mad_make_response(req->out, status);
    return VHCA_MAD_RESULT_REPLY;
}

static bool vhca_ib_have_clock(const VhcaCore *core)
{
    return core->ops->now_ns != NULL;
}

/*
 * 14.2.4.2: the lease runs from a violation while no MAD with the right
 * M_Key comes; when it ends, M_KeyProtectBits become 0 (protection off,
 * so a new SM can take the port over).  Optional: without a clock (or
 * with M_KeyLeasePeriod 0, "never") there is no lease.
 */
static void vhca_ib_mkey_lease_check(VhcaCore *core)
{
    VhcaIbPort *ib = &core->ib;

    if (ib->mkey_lease_deadline_ns && vhca_ib_have_clock(core) &&
        core->ops->now_ns(core->opaque) >= ib->mkey_lease_deadline_ns) {
        ib->mkey_lease_deadline_ns = 0;
        ib->mkey_protect = 0;
    }
}

static void vhca_ib_mkey_violation(VhcaCore *core)
{
    VhcaIbPort *ib = &core->ib;

    if (ib->mkey_violations != UINT16_MAX) {
        ib->mkey_violations++;
    }
    if (!ib->mkey_lease_deadline_ns && ib->mkey_lease_period &&
        vhca_ib_have_clock(core)) {
        ib->mkey_lease_deadline_ns = core->ops->now_ns(core->opaque) +
                                     ib->mkey_lease_period * 1000000000ull;
    }
}

/* The MAD carries the port's M_Key, or the check does not apply. */
static bool vhca_sma_mkey_matches(const VhcaCore *core,
                                  const VhcaMadReq *req)
{
    return (req->flags & VHCA_MAD_IFC_IGNORE_MKEY) || core->ib.mkey == 0 ||
           vhca_ld_be64(req->in + VHCA_SMP_MKEY) == core->ib.mkey;
}

/*
 * 14.2.4.1, protection levels (M_KeyProtectBits): a Set or TrapRepress
 * with the wrong M_Key always fails; a Get fails only at levels 2 and 3
 * (vhca_sma_mkey_passes(); level 1 hides PortInfo:M_Key instead; level
 * 3 is as 2 for an SMA, as in qib and hfi1).  A failed check is an
 * M_Key violation: counted, the lease starts, the SMP is discarded
 * without a response, and the SM hears of it by a Bad M_Key trap
 * (14.2.4.2, trap 256).
 */
static bool vhca_sma_mkey_ok(VhcaCore *core, const VhcaMadReq *req,
                             uint8_t method)
{
    VhcaIbPort *ib = &core->ib;
    bool matches;

    vhca_ib_mkey_lease_check(core);
    matches = vhca_sma_mkey_matches(core, req);
    if (matches) {
        ib->mkey_lease_deadline_ns = 0;
    }
    if (vhca_sma_mkey_passes(matches, method, ib->mkey_protect)) {
        return true;
    }
    vhca_ib_mkey_violation(core);
    vhca_ib_trap_bad_mkey(core, req->in);
    return false;
}

/* P_Key/Q_Key violations: the value last written + drops since. */
static uint16_t vhca_ib_violations(const VhcaCore *core, uint16_t written,
                                   uint64_t base, enum vhca_counter counter)
{
    uint64_t now = core->counters[counter];
    uint64_t v = written + (now > base ? now - base : 0);

    return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

/* ---------------------------------------------------------------------- */
/* SMP attributes (IBTA 14.2.5)                                           */
/* ---------------------------------------------------------------------- */

/*
 * get fills the 64 bytes of SMP data (zeroed) and returns a MAD status;
 * set checks every field of @data first and changes nothing unless all
 * are valid (status INVALID_VALUE then), and the response shows the
 * attribute as get reads it afterwards.
 */
typedef struct VhcaSmaAttr {
    uint16_t id;
    uint16_t (*get)(VhcaCore *core, const VhcaMadReq *req, uint8_t *data,
                    uint32_t mod);
    uint16_t (*set)(VhcaCore *core, const VhcaMadReq *req,
                    const uint8_t *data, uint32_t mod);
} VhcaSmaAttr;

/* 14.2.5.2 NodeDescription: AttributeModifier 0. */
static uint16_t vhca_sma_get_node_desc(VhcaCore *core, const VhcaMadReq *req,
                                       uint8_t *data, uint32_t mod)
{
    (void)req;
    if (mod) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    memcpy(data, core->ib.node_desc, sizeof(core->ib.node_desc));
    return 0;
}

/*
 * The node description is the kernel's (ib_device node_desc, which
 * ib_modify_device(IB_DEVICE_MODIFY_NODE_DESC) changes), and a Set from
 * the driver (IGNORE_MKEY, which only the driver can set) is how it
 * hands it to the device, so that SMs read the same name; a new one is
 * told to the SM by trap 144 (14.2.5.1).  For anyone else the attribute
 * is read-only (14.2.5.2).
 */
static uint16_t vhca_sma_set_node_desc(VhcaCore *core, const VhcaMadReq *req,
                                       const uint8_t *data, uint32_t mod)
{
    if (!(req->flags & VHCA_MAD_IFC_IGNORE_MKEY)) {
        return VHCA_MAD_STATUS_UNSUP_ATTR;
    }
    if (mod) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    if (memcmp(core->ib.node_desc, data, sizeof(core->ib.node_desc))) {
        memcpy(core->ib.node_desc, data, sizeof(core->ib.node_desc));
        vhca_ib_trap_local_changes(core, true, VHCA_TRAP144_NODE_DESC);
    }
    return 0;
}

/* 14.2.5.3 NodeInfo: a CA with one port. */
static uint16_t vhca_sma_get_node_info(VhcaCore *core, const VhcaMadReq *req,
                                       uint8_t *data, uint32_t mod)
{
    (void)req;
    if (mod) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    vhca_mad_set(data, VHCA_NI_BASE_VERSION, VHCA_MAD_BASE_VERSION_IB);
    vhca_mad_set(data, VHCA_NI_CLASS_VERSION, VHCA_SMP_CLASS_VERSION);
    vhca_mad_set(data, VHCA_NI_NODE_TYPE, VHCA_NODE_TYPE_CA);
    vhca_mad_set(data, VHCA_NI_NUM_PORTS, 1);
    vhca_st_be64(data + VHCA_NI_SYS_IMAGE_GUID, vhca_ib_node_guid(core));
    vhca_st_be64(data + VHCA_NI_NODE_GUID, vhca_ib_node_guid(core));
    vhca_st_be64(data + VHCA_NI_PORT_GUID, vhca_ib_port_guid(core));
    vhca_mad_set(data, VHCA_NI_PARTITION_CAP, VHCA_IB_PKEY_TBL_LEN);
    vhca_mad_set(data, VHCA_NI_DEVICE_ID, VHCA_PCI_DEVICE_ID);
    vhca_mad_set(data, VHCA_NI_REVISION, VHCA_PCI_REVISION);
    vhca_mad_set(data, VHCA_NI_LOCAL_PORT_NUM, VHCA_IB_PORT_NUM);
    /* The vendor QUERY_DEVICE reports, so both views agree. */
    vhca_mad_set(data, VHCA_NI_VENDOR_ID, VHCA_PCI_VENDOR_ID);
    return 0;
}

/*
 * 14.2.5.5 GUIDInfo: GUIDCap is 1, so block 0 holds the port GUID at
 * index 0, which is read-only, and nothing else; a Set changes nothing
 * and answers with the table.
 */
static uint16_t vhca_sma_get_guid_info(VhcaCore *core, const VhcaMadReq *req,
                                       uint8_t *data, uint32_t mod)
{
    (void)req;
    if (mod) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    vhca_st_be64(data, vhca_ib_port_guid(core));
    return 0;
}

static uint16_t vhca_sma_set_guid_info(VhcaCore *core, const VhcaMadReq *req,
                                       const uint8_t *data, uint32_t mod)
{
    (void)core;
    (void)req;
    (void)data;
    return mod ? VHCA_MAD_STATUS_INVALID_VALUE : 0;
}

/* PortInfo's AttributeModifier: the port, 0 for the one it came in on. */
static bool vhca_sma_port_ok(uint32_t mod)
{
    return mod == 0 || mod == VHCA_IB_PORT_NUM;
}

/* The widest width / fastest speed enabled is the one the link runs. */
static uint8_t vhca_ib_highest_bit(uint8_t bits)
{
    uint8_t top = 0x80;

    while (top && !(bits & top)) {
        top >>= 1;
    }
    return top;
}

/* 14.2.5.6 PortInfo (Table 155). */
static uint16_t vhca_sma_get_port_info(VhcaCore *core, const VhcaMadReq *req,
                                       uint8_t *data, uint32_t mod)
{
    const VhcaIbPort *ib = &core->ib;
    bool hide_mkey;

    if (!vhca_sma_port_ok(mod)) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    /* 14.2.4.1: level 1 shows the M_Key only to who knows it. */
    hide_mkey = req->in[VHCA_MAD_METHOD] == VHCA_MAD_METHOD_GET &&
                ib->mkey_protect == 1 && !vhca_sma_mkey_matches(core, req);
    vhca_st_be64(data + VHCA_PI_MKEY, hide_mkey ? 0 : ib->mkey);
    vhca_st_be64(data + VHCA_PI_GID_PREFIX, ib->gid_prefix);
    vhca_mad_set(data, VHCA_PI_LID, ib->lid);
    vhca_mad_set(data, VHCA_PI_MASTER_SM_LID, ib->sm_lid);
    vhca_mad_set(data, VHCA_PI_CAP_MASK, ib->cap_mask);
    vhca_mad_set(data, VHCA_PI_MKEY_LEASE_PERIOD, ib->mkey_lease_period);
    vhca_mad_set(data, VHCA_PI_LOCAL_PORT_NUM, VHCA_IB_PORT_NUM);
    vhca_mad_set(data, VHCA_PI_LINK_WIDTH_ENABLED, ib->link_width_enabled);
    vhca_mad_set(data, VHCA_PI_LINK_WIDTH_SUPPORTED,
                 VHCA_IB_WIDTH_SUPPORTED);
    vhca_mad_set(data, VHCA_PI_LINK_WIDTH_ACTIVE,
                 vhca_ib_highest_bit(ib->link_width_enabled));
    vhca_mad_set(data, VHCA_PI_LINK_SPEED_SUPPORTED,
                 VHCA_IB_SPEED_SUPPORTED);
    vhca_mad_set(data, VHCA_PI_PORT_STATE, ib->state);
    vhca_mad_set(data, VHCA_PI_PHYS_STATE, ib->phys_state);
    vhca_mad_set(data, VHCA_PI_LINK_DOWN_DEFAULT, ib->link_down_default);
    vhca_mad_set(data, VHCA_PI_MKEY_PROTECT, ib->mkey_protect);
    vhca_mad_set(data, VHCA_PI_LMC, ib->lmc);
    vhca_mad_set(data, VHCA_PI_LINK_SPEED_ACTIVE,
                 vhca_ib_highest_bit(ib->link_speed_enabled));
    vhca_mad_set(data, VHCA_PI_LINK_SPEED_ENABLED, ib->link_speed_enabled);
    vhca_mad_set(data, VHCA_PI_NEIGHBOR_MTU, ib->neighbor_mtu);
    vhca_mad_set(data, VHCA_PI_MASTER_SM_SL, ib->sm_sl);
    vhca_mad_set(data, VHCA_PI_VL_CAP, VHCA_IB_VL_CAP);
    vhca_mad_set(data, VHCA_PI_VL_HIGH_LIMIT, ib->vl_high_limit);
    vhca_mad_set(data, VHCA_PI_VL_ARB_HIGH_CAP, VHCA_IB_VL_ARB_CAP);
    vhca_mad_set(data, VHCA_PI_VL_ARB_LOW_CAP, VHCA_IB_VL_ARB_CAP);
    vhca_mad_set(data, VHCA_PI_INIT_TYPE_REPLY, ib->init_type_reply);
    vhca_mad_set(data, VHCA_PI_MTU_CAP, VHCA_IB_MTU_4096);
    vhca_mad_set(data, VHCA_PI_OPERATIONAL_VLS, ib->operational_vls);
    vhca_mad_set(data, VHCA_PI_MKEY_VIOLATIONS, ib->mkey_violations);
    vhca_mad_set(data, VHCA_PI_PKEY_VIOLATIONS,
                 vhca_ib_violations(core, ib->pkey_violations,
                                    ib->pkey_violations_base,
                                    VHCA_CNT_DROP_PKEY));
    vhca_mad_set(data, VHCA_PI_QKEY_VIOLATIONS,
                 vhca_ib_violations(core, ib->qkey_violations,
                                    ib->qkey_violations_base,
                                    VHCA_CNT_DROP_QKEY));
    vhca_mad_set(data, VHCA_PI_GUID_CAP, VHCA_IB_GUID_TBL_LEN);
    vhca_mad_set(data, VHCA_PI_SUBNET_TIMEOUT, ib->subnet_timeout);
    vhca_mad_set(data, VHCA_PI_RESP_TIME_VALUE, ib->resp_time_value);
    vhca_mad_set(data, VHCA_PI_LOCAL_PHY_ERRORS, ib->local_phy_errors);
    vhca_mad_set(data, VHCA_PI_OVERRUN_ERRORS, ib->overrun_errors);
    return 0;
}

/* 7.11.1: a unicast LID, 0x0001..0xBFFF. */
static bool vhca_ib_lid_is_unicast(uint16_t lid)
{
    return lid != 0 && lid < VHCA_IB_LID_MCAST_FIRST;
}

/*
 * LinkWidthEnabled / LinkSpeedEnabled (14.2.5.6): 0 no change, all ones
 * the supported set, otherwise a non-empty subset of it.  Returns the
 * new value, or 0 if @v is invalid (then *ok is false).
 */
static uint8_t vhca_ib_enabled_value(uint8_t v, uint8_t all, uint8_t cur,
                                     uint8_t supported, bool *ok)
{
    if (v == 0) {
        return cur;
    }
    if (v == all) {
        return supported;
    }
    if (v & ~supported) {
        *ok = false;
        return cur;
    }
    return v;
}

static uint16_t vhca_sma_set_port_info(VhcaCore *core, const VhcaMadReq *req,
                                       const uint8_t *pi, uint32_t mod)
{
    VhcaIbPort *ib = &core->ib;
    uint16_t lid = vhca_mad_get(pi, VHCA_PI_LID);
    uint16_t sm_lid = vhca_mad_get(pi, VHCA_PI_MASTER_SM_LID);
    uint8_t lmc = vhca_mad_get(pi, VHCA_PI_LMC);
    uint8_t sm_sl = vhca_mad_get(pi, VHCA_PI_MASTER_SM_SL);
    uint8_t state = vhca_mad_get(pi, VHCA_PI_PORT_STATE);
    uint8_t phys = vhca_mad_get(pi, VHCA_PI_PHYS_STATE);
    uint8_t link_down = vhca_mad_get(pi, VHCA_PI_LINK_DOWN_DEFAULT);
    uint8_t mtu = vhca_mad_get(pi, VHCA_PI_NEIGHBOR_MTU);
    uint8_t vls = vhca_mad_get(pi, VHCA_PI_OPERATIONAL_VLS);
    uint64_t gid_prefix = vhca_ld_be64(pi + VHCA_PI_GID_PREFIX);
    bool ok = true;
    uint8_t width, speed;
    bool lid_changed, sm_changed;

    (void)req;
    width = vhca_ib_enabled_value(vhca_mad_get(pi,
                                               VHCA_PI_LINK_WIDTH_ENABLED),
                                  VHCA_PI_WIDTH_SET_SUPPORTED,
                                  ib->link_width_enabled,
                                  VHCA_IB_WIDTH_SUPPORTED, &ok);
    speed = vhca_ib_enabled_value(vhca_mad_get(pi,
                                               VHCA_PI_LINK_SPEED_ENABLED),
                                  VHCA_PI_SPEED_SET_SUPPORTED,
                                  ib->link_speed_enabled,
                                  VHCA_IB_SPEED_SUPPORTED, &ok);
    /*
     * Check everything before changing anything (13.4.7: a Set with an
     * invalid value fails whole).  LID and MasterSMLID are unicast LIDs
     * (7.11.1); 0, a port's value before the SM assigns one, is
     * accepted only unchanged, for the Get-modify-Set of tools such as
     * ibportstate on a port without a LID.
     */
    if (!vhca_sma_port_ok(mod) || !ok ||
        (!vhca_ib_lid_is_unicast(lid) && lid != ib->lid) ||
        (!vhca_ib_lid_is_unicast(sm_lid) && sm_lid != ib->sm_lid) ||
        !vhca_sma_port_state_set_ok(ib->state, state) ||
        (phys != 0 && phys != VHCA_PORT_PHYS_POLLING &&
         phys != VHCA_PORT_PHYS_DISABLED) ||
        link_down > VHCA_PI_LINK_DOWN_POLLING ||
        mtu < VHCA_IB_MTU_256 || mtu > VHCA_IB_MTU_4096 ||
        vls > VHCA_IB_VL_CAP) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }

    /*
     * The link first: PortState Down (and PortPhysicalState Disabled)
     * take it down, so that the values of this Set apply to the port as
     * it comes back.  With the cable in, a downed link retrains at once
     * to INIT, as a real link does from Polling.
     */
    if (phys == VHCA_PORT_PHYS_DISABLED) {
        vhca_ib_link_lost(core, VHCA_PORT_PHYS_DISABLED);
    } else if (phys == VHCA_PORT_PHYS_POLLING &&
               ib->phys_state == VHCA_PORT_PHYS_DISABLED) {
        ib->phys_state = VHCA_PORT_PHYS_POLLING;
        vhca_ib_link_train(core);
    }
    if (state == VHCA_PORT_DOWN &&
        ib->phys_state == VHCA_PORT_PHYS_LINK_UP) {
        vhca_ib_link_lost(core, VHCA_PORT_PHYS_POLLING);
        vhca_ib_link_train(core);
    }

    lid_changed = lid != ib->lid || lmc != ib->lmc;
    sm_changed = sm_lid != ib->sm_lid || sm_sl != ib->sm_sl;
    ib->mkey = vhca_ld_be64(pi + VHCA_PI_MKEY);
    ib->lid = lid;
    ib->lmc = lmc;
    ib->sm_lid = sm_lid;
    ib->sm_sl = sm_sl;
    ib->mkey_lease_period = vhca_mad_get(pi, VHCA_PI_MKEY_LEASE_PERIOD);
    ib->mkey_protect = vhca_mad_get(pi, VHCA_PI_MKEY_PROTECT);
    ib->link_width_enabled = width;
    ib->link_speed_enabled = speed;
    if (link_down) {
        ib->link_down_default = link_down;
    }
    ib->neighbor_mtu = mtu;
    if (vls) {
        ib->operational_vls = vls;
    }
    ib->vl_high_limit = vhca_mad_get(pi, VHCA_PI_VL_HIGH_LIMIT);
    ib->init_type_reply = vhca_mad_get(pi, VHCA_PI_INIT_TYPE_REPLY);
    /*
     * The violation counters: the SM clears them by writing 0; another
     * value keeps them counting (as qib), so that an SM writing back a
     * PortInfo it read a moment ago loses none.
     */
    if (!vhca_mad_get(pi, VHCA_PI_MKEY_VIOLATIONS)) {
        ib->mkey_violations = 0;
    }
    if (!vhca_mad_get(pi, VHCA_PI_PKEY_VIOLATIONS)) {
        ib->pkey_violations = 0;
        ib->pkey_violations_base = core->counters[VHCA_CNT_DROP_PKEY];
    }
    if (!vhca_mad_get(pi, VHCA_PI_QKEY_VIOLATIONS)) {
        ib->qkey_violations = 0;
        ib->qkey_violations_base = core->counters[VHCA_CNT_DROP_QKEY];
    }
    ib->subnet_timeout = vhca_mad_get(pi, VHCA_PI_SUBNET_TIMEOUT);
    ib->local_phy_errors = vhca_mad_get(pi, VHCA_PI_LOCAL_PHY_ERRORS);
    ib->overrun_errors = vhca_mad_get(pi, VHCA_PI_OVERRUN_ERRORS);

    /*
     * The events the kernel's caches and ULPs wait for (ib_event_type),
     * as ConnectX firmware's port management change events; the SM
     * first, so that the driver can address it when the rest arrive.
     */
    if (sm_changed) {
        vhca_ib_post_mgmt(core, VHCA_EVENT_SM_CHANGE);
    }
    if (lid_changed) {
        vhca_ib_post_mgmt(core, VHCA_EVENT_LID_CHANGE);
    }
    if (gid_prefix != ib->gid_prefix) {
        ib->gid_prefix = gid_prefix;
        vhca_ib_gid_update(core);
        vhca_ib_post_mgmt(core, VHCA_EVENT_GID_CHANGE);
    }
    if (vhca_mad_get(pi, VHCA_PI_CLIENT_REREGISTER)) {
        vhca_ib_post_mgmt(core, VHCA_EVENT_CLIENT_REREGISTER);
    }
    /*
     * ARMED and ACTIVE need the link up (7.2): if this Set disabled it,
     * the port stays DOWN whatever PortState asked (a Get-modify-Set
     * that changes PortPhysicalState alone writes the state it read).
     */
    if ((state == VHCA_PORT_ARMED || state == VHCA_PORT_ACTIVE) &&
        vhca_sma_port_state_set_ok(ib->state, state)) {
        vhca_ib_port_enter(core, state);
    }
    return 0;
}

/* 14.2.5.7 P_KeyTable: AttributeModifier 15:0 the block (31:16 switch). */
static uint16_t vhca_sma_get_pkeys(VhcaCore *core, const VhcaMadReq *req,
                                   uint8_t *data, uint32_t mod)
{
    uint32_t block = mod & 0xffff;
    unsigned i;

    (void)req;
    if (block >= VHCA_IB_PKEY_BLOCKS) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    for (i = 0; i < VHCA_SMP_PKEYS_PER_BLOCK; i++) {
        vhca_st_be16(data + 2 * i,
                         core->ib.pkeys[block * VHCA_SMP_PKEYS_PER_BLOCK + i]);
    }
    return 0;
}

/* Any value is a P_Key: those of base 0 are invalid entries (10.9.1.2). */
static uint16_t vhca_sma_set_pkeys(VhcaCore *core, const VhcaMadReq *req,
                                   const uint8_t *data, uint32_t mod)
{
    uint32_t block = mod & 0xffff;
    uint16_t *pkeys = core->ib.pkeys + block * VHCA_SMP_PKEYS_PER_BLOCK;
    bool changed = false;
    unsigned i;

    (void)req;
    if (block >= VHCA_IB_PKEY_BLOCKS) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    for (i = 0; i < VHCA_SMP_PKEYS_PER_BLOCK; i++) {
        uint16_t pkey = vhca_ld_be16(data + 2 * i);

        changed |= pkeys[i] != pkey;
        pkeys[i] = pkey;
    }
    if (changed) {
        vhca_ib_post_mgmt(core, VHCA_EVENT_PKEY_CHANGE);
    }
    return 0;
}

/*
 * 14.2.5.8 SL2VLMappingTable.  The AttributeModifier names input and
 * output ports of a switch; a CA has one table and ignores it.
 */
static uint16_t vhca_sma_get_sl2vl(VhcaCore *core, const VhcaMadReq *req,
                                   uint8_t *data, uint32_t mod)
{
    unsigned sl;

    (void)req;
    (void)mod;
    for (sl = 0; sl < 16; sl++) {
        vhca_mad_set(data, VHCA_SMP_SL2VL_FIELD(sl), core->ib.sl2vl[sl]);
    }
    return 0;
}

/* A data VL the port has (VLCap), or VL15: the SL's packets drop (7.6.6). */
static uint16_t vhca_sma_set_sl2vl(VhcaCore *core, const VhcaMadReq *req,
                                   const uint8_t *data, uint32_t mod)
{
    unsigned sl;

    (void)req;
    (void)mod;
    for (sl = 0; sl < 16; sl++) {
        uint8_t vl = vhca_mad_get(data, VHCA_SMP_SL2VL_FIELD(sl));

        if (vl > VHCA_IB_MAX_DATA_VL && vl != VHCA_IB_VL15) {
            return VHCA_MAD_STATUS_INVALID_VALUE;
        }
    }
    for (sl = 0; sl < 16; sl++) {
        core->ib.sl2vl[sl] = vhca_mad_get(data, VHCA_SMP_SL2VL_FIELD(sl));
    }
    return 0;
}

/*
 * 14.2.5.9 VLArbitrationTable: block 1 the low priority entries 0-31, 2
 * the high; 3 and 4 (entries 32-63) are past VLArb*Cap (8) and do not
 * exist.  Entries past the cap read 0 and are ignored on Set.  With one
 * data VL there is nothing to arbitrate: the table is kept for the SM.
 */
static uint16_t vhca_sma_vl_arb_block(uint32_t mod, unsigned *prio)
{
    uint32_t block = mod & 0xffff;

    if (block != 1 && block != 2) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    *prio = block - 1;
    return 0;
}

static uint16_t vhca_sma_get_vl_arb(VhcaCore *core, const VhcaMadReq *req,
                                    uint8_t *data, uint32_t mod)
{
    unsigned prio, i;

    (void)req;
    if (vhca_sma_vl_arb_block(mod, &prio)) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    for (i = 0; i < VHCA_IB_VL_ARB_CAP; i++) {
        data[2 * i] = core->ib.vl_arb[prio][i][0];
        data[2 * i + 1] = core->ib.vl_arb[prio][i][1];
    }
    return 0;
}

static uint16_t vhca_sma_set_vl_arb(VhcaCore *core, const VhcaMadReq *req,
                                    const uint8_t *data, uint32_t mod)
{
    unsigned prio, i;

    (void)req;
    if (vhca_sma_vl_arb_block(mod, &prio)) {
        return VHCA_MAD_STATUS_INVALID_VALUE;
    }
    for (i = 0; i < VHCA_IB_VL_ARB_CAP; i++) {
        core->ib.vl_arb[prio][i][0] = data[2 * i] & 0x0f;
        core->ib.vl_arb[prio][i][1] = data[2 * i + 1];
    }
    return 0;
}

static const VhcaSmaAttr vhca_sma_attrs[] = {
    { VHCA_SMP_ATTR_NODE_DESC, vhca_sma_get_node_desc,
      vhca_sma_set_node_desc },
    { VHCA_SMP_ATTR_NODE_INFO, vhca_sma_get_node_info, NULL },
    { VHCA_SMP_ATTR_GUID_INFO, vhca_sma_get_guid_info,
      vhca_sma_set_guid_info },
    { VHCA_SMP_ATTR_PORT_INFO, vhca_sma_get_port_info,
      vhca_sma_set_port_info },
    { VHCA_SMP_ATTR_PKEY_TABLE, vhca_sma_get_pkeys, vhca_sma_set_pkeys },
    { VHCA_SMP_ATTR_SL2VL_TABLE, vhca_sma_get_sl2vl, vhca_sma_set_sl2vl },
    { VHCA_SMP_ATTR_VL_ARB_TABLE, vhca_sma_get_vl_arb, vhca_sma_set_vl_arb },
};

static const VhcaSmaAttr *vhca_sma_attr_lookup(uint16_t id)
{
    size_t i;

    for (i = 0; i < sizeof(vhca_sma_attrs) / sizeof(vhca_sma_attrs[0]);
         i++) {
        if (vhca_sma_attrs[i].id == id) {
            return &vhca_sma_attrs[i];
        }
    }
    return NULL;
}

/*
 * One SMP, LID routed or directed route (14.2.1): the methods of the SM
 * class (13.4.5, 14.2.5.1) and M_Key check first, then the attribute.
 * The checks are every SMA's (vhca_sma_check(), vhca-mad.h, which says
 * why the attribute dispatch is this agent's own).
 */
uint8_t vhca_sma_process(VhcaCore *core, VhcaMadReq *req)
{
    uint8_t method = req->in[VHCA_MAD_METHOD];
    uint16_t attr_id = vhca_ld_be16(req->in + VHCA_MAD_ATTR_ID);
    uint32_t mod = vhca_ld_be32(req->in + VHCA_MAD_ATTR_MOD);
    const uint8_t *in_data = req->in + VHCA_SMP_DATA;
    uint8_t *data = req->out + VHCA_SMP_DATA;
    const VhcaSmaAttr *attr;
    VhcaSmaCheck check;
    uint16_t status;
    uint16_t get_status;

    /*
     * Responses and Traps are for an SM or another agent: not handled
     * here, the kernel passes them on.
     */
    check = vhca_sma_check(req->in, &status);
    if (check == VHCA_SMA_NOT_OURS) {
        return 0;
    }
    /*
     * SMInfo is the SM's attribute, not the SMA's (14.4.1): a subnet
     * manager in user space answers it, or the kernel refuses it,
     * whatever its method; of another version, it is answered
     * BAD_VERSION as any SMP.
     */
    if (attr_id == VHCA_SMP_ATTR_SM_INFO &&
        status != VHCA_MAD_STATUS_BAD_VERSION) {
        return 0;
    }
    if (check == VHCA_SMA_ANSWER) {
        return vhca_mad_reply(req, status);
    }
    if (!vhca_sma_mkey_ok(core, req, method)) {
        /* 14.2.4.2: discarded, no response. */
        return VHCA_MAD_RESULT_CONSUMED;
    }
    /*
     * TrapRepress is the SM's answer to a Trap (13.4.5, 14.2.5.1): it is
     * never answered, and as traps are not repeated (vhca-trap.c) there
     * is nothing to stop.
     */
    if (method == VHCA_MAD_METHOD_TRAP_REPRESS) {
        return VHCA_MAD_RESULT_CONSUMED;
    }

    attr = vhca_sma_attr_lookup(attr_id);
    status = vhca_sma_attr_status(attr != NULL, attr && attr->set, method);
    if (status) {
        return vhca_mad_reply(req, status);
    }
    if (method == VHCA_MAD_METHOD_SET) {
        status = attr->set(core, req, in_data, mod);
        if (status == VHCA_MAD_STATUS_UNSUP_ATTR) {
            return vhca_mad_reply(req, status);
        }
    }
    memset(data, 0, VHCA_SMP_DATA_LEN);
    get_status = attr->get(core, req, data, mod);
    return vhca_mad_reply(req, status ? status : get_status);
}

/* ---------------------------------------------------------------------- */
/* The commands                                                           */
/* ---------------------------------------------------------------------- */

/*
 * MAD_IFC and MODIFY_PORT exist only on the IB port.  On the Ethernet
 * port they fail BAD_OPCODE, as any opcode without a handler does: the
 * device then lacks the capability (CAPS has no VHCA_CAP_IB) and no
 * state of it would make the command work, which BAD_STATE would imply.
 */
static uint8_t vhca_ib_cmd_check(VhcaCore *core, VhcaCmdCtx *ctx,
                                 uint8_t port)
{
    if (core->cfg.link != VHCA_LINK_IB) {
        ctx->syndrome = ctx->opcode;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_OPCODE,
                             "the port is Ethernet (link=eth), not "
                             "InfiniBand");
    }
    if (port != VHCA_IB_PORT_NUM) {
        ctx->syndrome = port;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "port %u does not exist (only port 1)", port);
    }
    return VHCA_ST_OK;
}

typedef uint8_t (*VhcaMadAgent)(VhcaCore *core, VhcaMadReq *req);

/* The agents in the device, by management class (13.4.4). */
static const struct {
    uint8_t mgmt_class;
    VhcaMadAgent agent;
} vhca_mad_agents[] = {
    { VHCA_MGMT_CLASS_SUBN_LID, vhca_sma_process },
    { VHCA_MGMT_CLASS_SUBN_DR, vhca_sma_process },
    { VHCA_MGMT_CLASS_PERF, vhca_pma_process },
};

uint8_t vhca_cmd_mad_ifc(VhcaCore *core, VhcaCmdCtx *ctx)
{
    uint8_t mbox[sizeof(struct vhca_mad_ifc)];
    uint64_t addr = vhca_ld_le64(ctx->in +
                                 offsetof(struct vhca_cmd_dma_in, addr));
    uint32_t len = vhca_ld_le32(ctx->in +
                                offsetof(struct vhca_cmd_dma_in, len));
    VhcaMadReq req;
    uint8_t result = 0;
    uint8_t status;
    size_t i;

    if (core->cfg.link != VHCA_LINK_IB) {
        return vhca_ib_cmd_check(core, ctx, 0);
    }
    if (len < sizeof(mbox)) {
        ctx->syndrome = len;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "mailbox of %u bytes is smaller than %zu",
                             len, sizeof(mbox));
    }
    /* The whole mailbox, out_mad too: the response's place is RAM. */
    if (vhca_dma_read(core, addr, mbox, sizeof(mbox))) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot read the %zu-byte mailbox at 0x%llx",
                             sizeof(mbox), (unsigned long long)addr);
    }
    status = vhca_ib_cmd_check(core, ctx,
                               mbox[offsetof(struct vhca_mad_ifc, port)]);
    if (status != VHCA_ST_OK) {
        return status;
    }
    req.flags = mbox[offsetof(struct vhca_mad_ifc, flags)];
    if (req.flags & ~(VHCA_MAD_IFC_LOCAL | VHCA_MAD_IFC_IGNORE_MKEY)) {
        ctx->syndrome = req.flags;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "unknown flags 0x%x", req.flags);
    }
    req.sl = mbox[offsetof(struct vhca_mad_ifc, sl)];
    req.slid = vhca_ld_le16(mbox + offsetof(struct vhca_mad_ifc, slid));
    req.in = mbox + offsetof(struct vhca_mad_ifc, in_mad);
    req.out = mbox + offsetof(struct vhca_mad_ifc, out_mad);
    memcpy(req.out, req.in, VHCA_MAD_SIZE);

    for (i = 0; i < sizeof(vhca_mad_agents) / sizeof(vhca_mad_agents[0]);
         i++) {
        if (vhca_mad_agents[i].mgmt_class == req.in[VHCA_MAD_MGMT_CLASS]) {
            result = vhca_mad_agents[i].agent(core, &req);
            break;
        }
    }

    VHCA_HOOK(core, mad, req.in[VHCA_MAD_MGMT_CLASS],
              req.in[VHCA_MAD_METHOD],
              vhca_ld_be16(req.in + VHCA_MAD_ATTR_ID),
              vhca_ld_be32(req.in + VHCA_MAD_ATTR_MOD),
              (result & VHCA_MAD_RESULT_REPLY) ?
              vhca_ld_be16(req.out + VHCA_MAD_STATUS) : 0, result);
    if ((result & VHCA_MAD_RESULT_REPLY) &&
        vhca_dma_write(core, addr + offsetof(struct vhca_mad_ifc, out_mad),
                       req.out, VHCA_MAD_SIZE)) {
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_ADDR,
                             "cannot write out_mad of the mailbox at 0x%llx",
                             (unsigned long long)addr);
    }
    ctx->out[0] = result;
    return VHCA_ST_OK;
}

uint8_t vhca_cmd_modify_port(VhcaCore *core, VhcaCmdCtx *ctx)
{
#define IN(field) (ctx->in + offsetof(struct vhca_cmd_modify_port_in, field))
    uint8_t flags = *IN(flags);
    uint32_t set = vhca_ld_le32(IN(set_cap_mask));
    uint32_t clr = vhca_ld_le32(IN(clr_cap_mask));
    uint8_t status = vhca_ib_cmd_check(core, ctx, *IN(port));
#undef IN
    VhcaIbPort *ib = &core->ib;

    if (status != VHCA_ST_OK) {
        return status;
    }
    if (flags & ~VHCA_MODIFY_PORT_RESET_QKEY_CNTR) {
        ctx->syndrome = flags;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "unknown flags 0x%x", flags);
    }
    if ((set | clr) & ~VHCA_PORT_CAP_MODIFIABLE) {
        ctx->syndrome = (set | clr) & ~VHCA_PORT_CAP_MODIFIABLE;
        return VHCA_CMD_FAIL(core, ctx, VHCA_ST_BAD_PARAM,
                             "CapabilityMask bits 0x%x are the device's",
                             ctx->syndrome);
    }
    /* The SM learns of a new IsSM or IsCM by trap 144 (14.2.5.1). */
    if (((ib->cap_mask & ~clr) | set) != ib->cap_mask) {
        ib->cap_mask = (ib->cap_mask & ~clr) | set;
        vhca_ib_trap_local_changes(core, false, 0);
    }
    if (flags & VHCA_MODIFY_PORT_RESET_QKEY_CNTR) {
        ib->qkey_violations = 0;
        ib->qkey_violations_base = core->counters[VHCA_CNT_DROP_QKEY];
    }
    return VHCA_ST_OK;
}
