/*
 * vhca-switch: the switch's subnet management agent (IBTA Vol 1 14.2),
 * on its port 0.  The attributes a switch has beyond a CA's - SwitchInfo
 * and the forwarding tables - and the per-port ones (PortInfo, P_Key
 * table, SL2VL, VL arbitration) for each of its ports; the layouts are
 * the engine's (hw/vhca/engine/vhca-mad.h).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-switch.h"
#include "vhca-mad.h"
#include "vhca-wire.h"

#define PKEY_BLOCKS     (VHCA_SWITCH_PKEY_TBL_LEN / VHCA_SMP_PKEYS_PER_BLOCK)
#define LFT_BLOCKS      (VHCA_SWITCH_LFT_CAP / VHCA_SMP_LFT_PER_BLOCK)
#define MFT_BLOCKS      (VHCA_SWITCH_MFT_CAP / VHCA_SMP_MFT_PER_BLOCK)
#define ST_INVALID      VHCA_MAD_STATUS_INVALID_VALUE

typedef struct SwitchAttr {
    uint16_t id;
    uint16_t (*get)(VhcaSwitch *sw, const VhcaSwitchSmp *smp, uint8_t *data,
                    uint32_t mod);
    uint16_t (*set)(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                    const uint8_t *data, uint32_t mod);
} SwitchAttr;

/* 14.2.5.2 NodeDescription: read-only, the name given at start. */
static uint16_t get_node_desc(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                              uint8_t *data, uint32_t mod)
{
    (void)smp;
    memcpy(data, sw->node_desc, sizeof(sw->node_desc));
    return mod ? ST_INVALID : 0;
}

/* 14.2.5.3 NodeInfo: a switch; LocalPortNum is the port the SMP came in. */
static uint16_t get_node_info(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                              uint8_t *data, uint32_t mod)
{
    vhca_mad_set(data, VHCA_NI_BASE_VERSION, VHCA_MAD_BASE_VERSION_IB);
    vhca_mad_set(data, VHCA_NI_CLASS_VERSION, VHCA_SMP_CLASS_VERSION);
    vhca_mad_set(data, VHCA_NI_NODE_TYPE, VHCA_NODE_TYPE_SWITCH);
    vhca_mad_set(data, VHCA_NI_NUM_PORTS, sw->nports);
    vhca_st_be64(data + VHCA_NI_SYS_IMAGE_GUID, sw->guid);
    vhca_st_be64(data + VHCA_NI_NODE_GUID, sw->guid);
    vhca_st_be64(data + VHCA_NI_PORT_GUID, sw->guid);
    vhca_mad_set(data, VHCA_NI_PARTITION_CAP, VHCA_SWITCH_PKEY_TBL_LEN);
    vhca_mad_set(data, VHCA_NI_DEVICE_ID, VHCA_PCI_DEVICE_ID);
    vhca_mad_set(data, VHCA_NI_REVISION, VHCA_PCI_REVISION);
    vhca_mad_set(data, VHCA_NI_LOCAL_PORT_NUM, smp->in_port);
    vhca_mad_set(data, VHCA_NI_VENDOR_ID, VHCA_PCI_VENDOR_ID);
    return mod ? ST_INVALID : 0;
}

/* 14.2.5.4 SwitchInfo: linear and multicast tables, no random one. */
static uint16_t get_switch_info(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                                uint8_t *data, uint32_t mod)
{
    (void)smp;
    vhca_mad_set(data, VHCA_SI_LFT_CAP, VHCA_SWITCH_LFT_CAP);
    vhca_mad_set(data, VHCA_SI_RFT_CAP, 0);
    vhca_mad_set(data, VHCA_SI_MFT_CAP, VHCA_SWITCH_MFT_CAP);
    vhca_mad_set(data, VHCA_SI_LFT_TOP, sw->lft_top);
    vhca_mad_set(data, VHCA_SI_DEFAULT_PORT, sw->default_port);
    vhca_mad_set(data, VHCA_SI_DEFAULT_MCAST_PRI, sw->default_mcast_primary);
    vhca_mad_set(data, VHCA_SI_DEFAULT_MCAST_NOT,
                 sw->default_mcast_not_primary);
    vhca_mad_set(data, VHCA_SI_LIFE_TIME_VALUE, sw->life_time_value);
    vhca_mad_set(data, VHCA_SI_PORT_STATE_CHANGE, sw->port_state_change);
    vhca_mad_set(data, VHCA_SI_LIDS_PER_PORT, 1);
    /* 10.9.4: each port's P_Key table, either way. */
    vhca_mad_set(data, VHCA_SI_PARTITION_ENF_CAP, VHCA_SWITCH_PKEY_TBL_LEN);
    vhca_mad_set(data, VHCA_SI_INBOUND_ENF_CAP, 1);
    vhca_mad_set(data, VHCA_SI_OUTBOUND_ENF_CAP, 1);
    return mod ? ST_INVALID : 0;
}

/*
 * The SM sets LinearFDBTop, the default ports and LifeTimeValue; it
 * clears PortStateChange by writing 1 to it (14.2.5.4).
 */
static uint16_t set_switch_info(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                                const uint8_t *data, uint32_t mod)
{
    uint16_t top = vhca_mad_get(data, VHCA_SI_LFT_TOP);

    (void)smp;
    if (mod || top >= VHCA_SWITCH_LFT_CAP) {
        return ST_INVALID;
    }
    sw->lft_top = top;
    sw->default_port = vhca_mad_get(data, VHCA_SI_DEFAULT_PORT);
    sw->default_mcast_primary = vhca_mad_get(data, VHCA_SI_DEFAULT_MCAST_PRI);
    sw->default_mcast_not_primary = vhca_mad_get(data,
                                                 VHCA_SI_DEFAULT_MCAST_NOT);
    sw->life_time_value = vhca_mad_get(data, VHCA_SI_LIFE_TIME_VALUE);
    if (vhca_mad_get(data, VHCA_SI_PORT_STATE_CHANGE)) {
        sw->port_state_change = false;
    }
    return 0;
}

/* 14.2.5.5 GUIDInfo: port 0 has one GUID, the switch's. */
static uint16_t get_guid_info(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                              uint8_t *data, uint32_t mod)
{
    (void)smp;
    vhca_st_be64(data, sw->guid);
    return mod ? ST_INVALID : 0;
}

/* 14.2.5.6 PortInfo of port @mod: port 0's LID fields, every port's link. */
static uint16_t get_port_info(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                              uint8_t *data, uint32_t mod)
{
    const VhcaSwitchPort *p;

    (void)smp;
    if (mod > sw->nports) {
        return ST_INVALID;
    }
    p = &sw->port[mod];
    if (mod == 0) {
        vhca_st_be64(data + VHCA_PI_MKEY, sw->mkey);
        vhca_st_be64(data + VHCA_PI_GID_PREFIX, sw->gid_prefix);
        vhca_mad_set(data, VHCA_PI_LID, sw->lid);
        vhca_mad_set(data, VHCA_PI_MASTER_SM_LID, sw->sm_lid);
        vhca_mad_set(data, VHCA_PI_CAP_MASK, sw->cap_mask);
        vhca_mad_set(data, VHCA_PI_MKEY_LEASE_PERIOD, sw->mkey_lease_period);
        vhca_mad_set(data, VHCA_PI_MKEY_PROTECT, sw->mkey_protect);
        vhca_mad_set(data, VHCA_PI_LMC, sw->lmc);
        vhca_mad_set(data, VHCA_PI_MASTER_SM_SL, sw->sm_sl);
        vhca_mad_set(data, VHCA_PI_MKEY_VIOLATIONS, sw->mkey_violations);
        vhca_mad_set(data, VHCA_PI_SUBNET_TIMEOUT, sw->subnet_timeout);
        vhca_mad_set(data, VHCA_PI_RESP_TIME_VALUE, sw->resp_time_value);
    }
    vhca_mad_set(data, VHCA_PI_LOCAL_PORT_NUM, smp->in_port);
    vhca_mad_set(data, VHCA_PI_LINK_WIDTH_ENABLED, p->link_width_enabled);
    vhca_mad_set(data, VHCA_PI_LINK_WIDTH_SUPPORTED, 0x03);
    vhca_mad_set(data, VHCA_PI_LINK_WIDTH_ACTIVE, 0x02);   /* 4X */
    vhca_mad_set(data, VHCA_PI_LINK_SPEED_SUPPORTED, 0x7);
    vhca_mad_set(data, VHCA_PI_PORT_STATE, p->state);
    vhca_mad_set(data, VHCA_PI_PHYS_STATE, p->phys_state);
    vhca_mad_set(data, VHCA_PI_LINK_DOWN_DEFAULT, p->link_down_default);
    vhca_mad_set(data, VHCA_PI_LINK_SPEED_ACTIVE, 0x4);    /* QDR */
    vhca_mad_set(data, VHCA_PI_LINK_SPEED_ENABLED, p->link_speed_enabled);
    vhca_mad_set(data, VHCA_PI_NEIGHBOR_MTU, p->neighbor_mtu);
    vhca_mad_set(data, VHCA_PI_VL_CAP, VHCA_PI_VL_CAP_VL0);
    vhca_mad_set(data, VHCA_PI_VL_HIGH_LIMIT, p->vl_high_limit);
    vhca_mad_set(data, VHCA_PI_VL_ARB_HIGH_CAP, 8);
    vhca_mad_set(data, VHCA_PI_VL_ARB_LOW_CAP, 8);
    vhca_mad_set(data, VHCA_PI_MTU_CAP, VHCA_IB_MTU_4096);
    vhca_mad_set(data, VHCA_PI_VL_STALL_COUNT, p->vl_stall_count);
    vhca_mad_set(data, VHCA_PI_HOQ_LIFE, p->hoq_life);
    vhca_mad_set(data, VHCA_PI_OPERATIONAL_VLS, p->operational_vls);
    vhca_mad_set(data, VHCA_PI_PART_ENF_INBOUND, p->enforce_in);
    vhca_mad_set(data, VHCA_PI_PART_ENF_OUTBOUND, p->enforce_out);
    vhca_mad_set(data, VHCA_PI_GUID_CAP, mod == 0 ? 1 : 0);
    vhca_mad_set(data, VHCA_PI_LOCAL_PHY_ERRORS, p->local_phy_errors);
    vhca_mad_set(data, VHCA_PI_OVERRUN_ERRORS, p->overrun_errors);
    return 0;
}

static uint16_t set_port_info(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                              const uint8_t *data, uint32_t mod)
{
    uint8_t state = vhca_mad_get(data, VHCA_PI_PORT_STATE);
    uint8_t phys = vhca_mad_get(data, VHCA_PI_PHYS_STATE);
    uint8_t mtu = vhca_mad_get(data, VHCA_PI_NEIGHBOR_MTU);
    uint8_t vls = vhca_mad_get(data, VHCA_PI_OPERATIONAL_VLS);
    uint16_t lid = vhca_mad_get(data, VHCA_PI_LID);
    VhcaSwitchPort *p;

    (void)smp;
    if (mod > sw->nports) {
        return ST_INVALID;
    }
    p = &sw->port[mod];
    /* Check everything first (13.4.7): an invalid Set changes nothing. */
    if (!vhca_sma_port_state_set_ok(p->state, state) ||
        (phys != 0 && phys != VHCA_PORT_PHYS_POLLING &&
         phys != VHCA_PORT_PHYS_DISABLED) ||
        (mtu && (mtu < VHCA_IB_MTU_256 || mtu > VHCA_IB_MTU_4096)) ||
        vls > VHCA_PI_VL_CAP_VL0 ||
        (mod == 0 && lid >= VHCA_IB_LID_MCAST_FIRST)) {
        return ST_INVALID;
    }
    if (mod == 0) {
        sw->mkey = vhca_ld_be64(data + VHCA_PI_MKEY);
        sw->gid_prefix = vhca_ld_be64(data + VHCA_PI_GID_PREFIX);
        sw->lid = lid;
        sw->sm_lid = vhca_mad_get(data, VHCA_PI_MASTER_SM_LID);
        sw->mkey_lease_period = vhca_mad_get(data,
                                             VHCA_PI_MKEY_LEASE_PERIOD);
        sw->mkey_protect = vhca_mad_get(data, VHCA_PI_MKEY_PROTECT);
        sw->lmc = vhca_mad_get(data, VHCA_PI_LMC);
        sw->sm_sl = vhca_mad_get(data, VHCA_PI_MASTER_SM_SL);
        sw->subnet_timeout = vhca_mad_get(data, VHCA_PI_SUBNET_TIMEOUT);
        if (!vhca_mad_get(data, VHCA_PI_MKEY_VIOLATIONS)) {
            sw->mkey_violations = 0;
        }
    }
    if (mtu) {
        p->neighbor_mtu = mtu;
    }
    if (vls) {
        p->operational_vls = vls;
    }
    if (mod) {
        p->enforce_in = vhca_mad_get(data, VHCA_PI_PART_ENF_INBOUND);
        p->enforce_out = vhca_mad_get(data, VHCA_PI_PART_ENF_OUTBOUND);
    }
    p->vl_high_limit = vhca_mad_get(data, VHCA_PI_VL_HIGH_LIMIT);
    p->hoq_life = vhca_mad_get(data, VHCA_PI_HOQ_LIFE);
    p->vl_stall_count = vhca_mad_get(data, VHCA_PI_VL_STALL_COUNT);
    p->local_phy_errors = vhca_mad_get(data, VHCA_PI_LOCAL_PHY_ERRORS);
    p->overrun_errors = vhca_mad_get(data, VHCA_PI_OVERRUN_ERRORS);
    if (vhca_mad_get(data, VHCA_PI_LINK_WIDTH_ENABLED)) {
        p->link_width_enabled = 0x03;
    }
    if (vhca_mad_get(data, VHCA_PI_LINK_SPEED_ENABLED)) {
        p->link_speed_enabled = 0x7;
    }
    if (vhca_mad_get(data, VHCA_PI_LINK_DOWN_DEFAULT)) {
        p->link_down_default = vhca_mad_get(data, VHCA_PI_LINK_DOWN_DEFAULT);
    }

    /* Port 0 has no link: it is as ACTIVE as the SM says. */
    if (mod && phys == VHCA_PORT_PHYS_DISABLED) {
        p->phys_state = VHCA_PORT_PHYS_DISABLED;
        vhca_switch_port_enter(sw, mod, VHCA_PORT_DOWN);
    } else if (mod && phys == VHCA_PORT_PHYS_POLLING &&
               p->phys_state == VHCA_PORT_PHYS_DISABLED) {
        p->phys_state = VHCA_PORT_PHYS_POLLING;
        vhca_switch_set_cable(sw, mod, p->cabled);
    }
    if (state == VHCA_PORT_DOWN && mod) {
        /* The link goes down and, cabled, trains again (7.2). */
        vhca_switch_port_enter(sw, mod, VHCA_PORT_DOWN);
        vhca_switch_set_cable(sw, mod, p->cabled);
    } else if (state == VHCA_PORT_ARMED || state == VHCA_PORT_ACTIVE) {
        vhca_switch_port_enter(sw, mod, state);
    }
    return 0;
}

/* 14.2.5.7 P_KeyTable: 15:0 the block, 31:16 the port. */
static uint16_t get_pkeys(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                          uint8_t *data, uint32_t mod)
{
    unsigned block = mod & 0xffff, port = mod >> 16, i;

    (void)smp;
    if (block >= PKEY_BLOCKS || port > sw->nports) {
        return ST_INVALID;
    }
    for (i = 0; i < VHCA_SMP_PKEYS_PER_BLOCK; i++) {
        vhca_st_be16(data + 2 * i, sw->port[port].pkeys[
                     block * VHCA_SMP_PKEYS_PER_BLOCK + i]);
    }
    return 0;
}

static uint16_t set_pkeys(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                          const uint8_t *data, uint32_t mod)
{
    unsigned block = mod & 0xffff, port = mod >> 16, i;

    (void)smp;
    if (block >= PKEY_BLOCKS || port > sw->nports) {
        return ST_INVALID;
    }
    for (i = 0; i < VHCA_SMP_PKEYS_PER_BLOCK; i++) {
        sw->port[port].pkeys[block * VHCA_SMP_PKEYS_PER_BLOCK + i] =
            vhca_ld_be16(data + 2 * i);
    }
    return 0;
}

/*
 * 14.2.5.8 SL2VLMappingTable: 15:8 the input port, 7:0 the output
 * port.  One data VL: the table is kept per output port.
 */
static uint16_t get_sl2vl(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                          uint8_t *data, uint32_t mod)
{
    unsigned in = (mod >> 8) & 0xff, out = mod & 0xff, sl;

    (void)smp;
    if (in > sw->nports || out > sw->nports) {
        return ST_INVALID;
    }
    for (sl = 0; sl < 16; sl++) {
        vhca_mad_set(data, VHCA_SMP_SL2VL_FIELD(sl), sw->port[out].sl2vl[sl]);
    }
    return 0;
}

static uint16_t set_sl2vl(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                          const uint8_t *data, uint32_t mod)
{
    unsigned in = (mod >> 8) & 0xff, out = mod & 0xff, sl;

    (void)smp;
    if (in > sw->nports || out > sw->nports) {
        return ST_INVALID;
    }
    for (sl = 0; sl < 16; sl++) {
        uint8_t vl = vhca_mad_get(data, VHCA_SMP_SL2VL_FIELD(sl));

        if (vl != 0 && vl != VHCA_IB_VL_SMP) {
            return ST_INVALID;
        }
    }
    for (sl = 0; sl < 16; sl++) {
        sw->port[out].sl2vl[sl] = vhca_mad_get(data, VHCA_SMP_SL2VL_FIELD(sl));
    }
    return 0;
}

/* 14.2.5.9 VLArbitrationTable: 31:16 the port, 15:0 block 1 or 2. */
static uint16_t vl_arb_where(VhcaSwitch *sw, uint32_t mod, unsigned *port,
                             unsigned *prio)
{
    unsigned block = mod & 0xffff;

    *port = mod >> 16;
    if ((block != 1 && block != 2) || *port > sw->nports) {
        return ST_INVALID;
    }
    *prio = block - 1;
    return 0;
}

static uint16_t get_vl_arb(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                           uint8_t *data, uint32_t mod)
{
    unsigned port, prio, i;

    (void)smp;
    if (vl_arb_where(sw, mod, &port, &prio)) {
        return ST_INVALID;
    }
    for (i = 0; i < 8; i++) {
        data[2 * i] = sw->port[port].vl_arb[prio][i][0];
        data[2 * i + 1] = sw->port[port].vl_arb[prio][i][1];
    }
    return 0;
}

static uint16_t set_vl_arb(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                           const uint8_t *data, uint32_t mod)
{
    unsigned port, prio, i;

    (void)smp;
    if (vl_arb_where(sw, mod, &port, &prio)) {
        return ST_INVALID;
    }
    for (i = 0; i < 8; i++) {
        sw->port[port].vl_arb[prio][i][0] = data[2 * i] & 0x0f;
        sw->port[port].vl_arb[prio][i][1] = data[2 * i + 1];
    }
    return 0;
}

/* 14.2.5.10 LinearForwardingTable: block @mod, LIDs 64 * mod + 0..63. */
static uint16_t get_lft(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                        uint8_t *data, uint32_t mod)
{
    (void)smp;
    if (mod >= LFT_BLOCKS) {
        return ST_INVALID;
    }
    memcpy(data, sw->lft + mod * VHCA_SMP_LFT_PER_BLOCK,
           VHCA_SMP_LFT_PER_BLOCK);
    return 0;
}

/* Any port byte is kept; one past the switch's sends nowhere. */
static uint16_t set_lft(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                        const uint8_t *data, uint32_t mod)
{
    (void)smp;
    if (mod >= LFT_BLOCKS) {
        return ST_INVALID;
    }
    memcpy(sw->lft + mod * VHCA_SMP_LFT_PER_BLOCK, data,
           VHCA_SMP_LFT_PER_BLOCK);
    return 0;
}

/*
 * 14.2.5.11 MulticastForwardingTable: 8:0 the block of 32 MLIDs, 31:28
 * which 16 ports the masks are of.
 */
static uint16_t mft_where(VhcaSwitch *sw, uint32_t mod, unsigned *block,
                          unsigned *shift)
{
    unsigned position = mod >> 28;

    *block = mod & 0x1ff;
    *shift = position * VHCA_SMP_MFT_PORTS_PER_POS;
    if (*block >= MFT_BLOCKS || *shift > sw->nports) {
        return ST_INVALID;
    }
    return 0;
}

static uint16_t get_mft(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                        uint8_t *data, uint32_t mod)
{
    unsigned block, shift, i;

    (void)smp;
    if (mft_where(sw, mod, &block, &shift)) {
        return ST_INVALID;
    }
    for (i = 0; i < VHCA_SMP_MFT_PER_BLOCK; i++) {
        vhca_st_be16(data + 2 * i, (uint16_t)(sw->mft[
                     block * VHCA_SMP_MFT_PER_BLOCK + i] >> shift));
    }
    return 0;
}

static uint16_t set_mft(VhcaSwitch *sw, const VhcaSwitchSmp *smp,
                        const uint8_t *data, uint32_t mod)
{
    uint64_t ports = (2ull << sw->nports) - 1;
    unsigned block, shift, i;

    (void)smp;
    if (mft_where(sw, mod, &block, &shift)) {
        return ST_INVALID;
    }
    for (i = 0; i < VHCA_SMP_MFT_PER_BLOCK; i++) {
        uint64_t *m = &sw->mft[block * VHCA_SMP_MFT_PER_BLOCK + i];

        *m &= ~(0xffffull << shift);
        *m |= ((uint64_t)vhca_ld_be16(data + 2 * i) << shift) & ports;
    }
    return 0;
}

static const SwitchAttr switch_attrs[] = {
    { VHCA_SMP_ATTR_NODE_DESC, get_node_desc, NULL },
    { VHCA_SMP_ATTR_NODE_INFO, get_node_info, NULL },
    { VHCA_SMP_ATTR_SWITCH_INFO, get_switch_info, set_switch_info },
    { VHCA_SMP_ATTR_GUID_INFO, get_guid_info, NULL },
    { VHCA_SMP_ATTR_PORT_INFO, get_port_info, set_port_info },
    { VHCA_SMP_ATTR_PKEY_TABLE, get_pkeys, set_pkeys },
    { VHCA_SMP_ATTR_SL2VL_TABLE, get_sl2vl, set_sl2vl },
    { VHCA_SMP_ATTR_VL_ARB_TABLE, get_vl_arb, set_vl_arb },
    { VHCA_SMP_ATTR_LFT, get_lft, set_lft },
    { VHCA_SMP_ATTR_MFT, get_mft, set_mft },
};

/*
 * 14.2.4: with an M_Key set, a Set (and at protection 2 and 3 a Get)
 * must carry it; a violation is counted and discarded.
 */
static bool mkey_ok(VhcaSwitch *sw, const uint8_t *mad, uint8_t method)
{
    bool matches = !sw->mkey ||
                   vhca_ld_be64(mad + VHCA_SMP_MKEY) == sw->mkey;

    if (vhca_sma_mkey_passes(matches, method, sw->mkey_protect)) {
        return true;
    }
    if (sw->mkey_violations != UINT16_MAX) {
        sw->mkey_violations++;
    }
    return false;
}

/*
 * The checks are every SMA's, the HCA's too (vhca_sma_check(),
 * vhca-mad.h, which says why the attribute dispatch is each agent's
 * own).
 */
bool vhca_switch_sma(VhcaSwitch *sw, VhcaSwitchSmp *smp)
{
    uint8_t *mad = smp->mad;
    uint8_t method = mad[VHCA_MAD_METHOD];
    uint16_t id = vhca_ld_be16(mad + VHCA_MAD_ATTR_ID);
    uint32_t mod = vhca_ld_be32(mad + VHCA_MAD_ATTR_MOD);
    uint8_t data[VHCA_SMP_DATA_LEN];
    const SwitchAttr *attr = NULL;
    uint16_t status;
    size_t i;

    /* Responses and traps are for an SM: the switch has none. */
    switch (vhca_sma_check(mad, &status)) {
    case VHCA_SMA_NOT_OURS:
        return false;
    case VHCA_SMA_ANSWER:
        vhca_mad_make_response(mad, status);
        return true;
    case VHCA_SMA_REQUEST:
        break;
    }
    if (!mkey_ok(sw, mad, method)) {
        sw->drops[VHCA_SWITCH_DROP_MKEY]++;
        return false;
    }
    if (method == VHCA_MAD_METHOD_TRAP_REPRESS) {
        return false;               /* the switch sends no traps */
    }
    for (i = 0; i < sizeof(switch_attrs) / sizeof(switch_attrs[0]); i++) {
        if (switch_attrs[i].id == id) {
            attr = &switch_attrs[i];
        }
    }
    status = vhca_sma_attr_status(attr != NULL, attr && attr->set, method);
    if (status) {
        vhca_mad_make_response(mad, status);
        return true;
    }
    sw->smps++;
    if (method == VHCA_MAD_METHOD_SET) {
        status = attr->set(sw, smp, mad + VHCA_SMP_DATA, mod);
    }
    memset(data, 0, sizeof(data));
    status |= attr->get(sw, smp, data, mod);
    memcpy(mad + VHCA_SMP_DATA, data, sizeof(data));
    vhca_mad_make_response(mad, status);
    return true;
}
