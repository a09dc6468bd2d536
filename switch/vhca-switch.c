/*
 * vhca-switch: forwarding (IBTA Vol 1 18.2.4) and directed route SMPs
 * (14.2.2), the switch's side of both.  A packet from a port goes, in
 * order, through: the link's integrity (VCRC, LRH: the engine's parser),
 * the in port's state (7.2), then for VL15 the subnet management
 * interface (directed route along its path, LID routed to port 0 or by
 * the LFT) and for data the forwarding tables by DLID.  What cannot go
 * anywhere is dropped and counted by reason.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdio.h>
#include <string.h>

#include "vhca-switch.h"
#include "vhca-mad.h"
#include "vhca-wire.h"

#define SMP_MAX_HOPS        64      /* C14-6: hop counts 0..63 */

const char *vhca_switch_drop_name(VhcaSwitchDrop why)
{
    static const char *const names[VHCA_SWITCH_DROP__MAX] = {
        [VHCA_SWITCH_DROP_MALFORMED] = "malformed",
        [VHCA_SWITCH_DROP_PORT_STATE] = "port-state",
        [VHCA_SWITCH_DROP_NO_ROUTE] = "no-route",
        [VHCA_SWITCH_DROP_DR] = "directed-route",
        [VHCA_SWITCH_DROP_VL15] = "vl15",
        [VHCA_SWITCH_DROP_MKEY] = "mkey",
        [VHCA_SWITCH_DROP_PKEY] = "pkey",
        [VHCA_SWITCH_DROP_NOT_OURS] = "not-ours",
    };

    return why < VHCA_SWITCH_DROP__MAX ? names[why] : "unknown";
}

static void vhca_switch_drop(VhcaSwitch *sw, VhcaSwitchDrop why)
{
    sw->drops[why]++;
}

void vhca_switch_port_enter(VhcaSwitch *sw, unsigned port, uint8_t state)
{
    VhcaSwitchPort *p = &sw->port[port];
    uint8_t old = p->state;

    if (old == state) {
        return;
    }
    p->state = state;
    /*
     * 14.2.5.4 PortStateChange: set when an external port goes from Down
     * to Initialize or from any state to Down - a link came or went, not
     * the SM's own INIT -> ARMED -> ACTIVE; the SM reads it in its light
     * sweep and looks closer.
     */
    if (port && (old == VHCA_PORT_DOWN || state == VHCA_PORT_DOWN)) {
        sw->port_state_change = true;
    }
}

void vhca_switch_init(VhcaSwitch *sw, unsigned nports, uint64_t guid,
                      const char *node_desc, const VhcaSwitchOps *ops,
                      void *opaque)
{
    unsigned i;

    memset(sw, 0, sizeof(*sw));
    sw->ops = ops;
    sw->opaque = opaque;
    sw->nports = nports > VHCA_SWITCH_MAX_PORTS ? VHCA_SWITCH_MAX_PORTS :
                 nports;
    sw->guid = guid;
    /* NodeDescription (14.2.5.2): 64 bytes, NUL-padded, not terminated. */
    memcpy(sw->node_desc, node_desc,
           strnlen(node_desc, sizeof(sw->node_desc)));
    sw->gid_prefix = 0xfe80000000000000ull;
    sw->resp_time_value = 18;       /* about 1 s: the host may be busy */
    sw->life_time_value = 18;
    memset(sw->lft, VHCA_SWITCH_NO_PORT, sizeof(sw->lft));
    sw->default_port = VHCA_SWITCH_NO_PORT;
    sw->default_mcast_primary = VHCA_SWITCH_NO_PORT;
    sw->default_mcast_not_primary = VHCA_SWITCH_NO_PORT;
    for (i = 0; i <= sw->nports; i++) {
        VhcaSwitchPort *p = &sw->port[i];

        p->state = i ? VHCA_PORT_DOWN : VHCA_PORT_INIT;
        p->phys_state = i ? VHCA_PORT_PHYS_POLLING : VHCA_PORT_PHYS_LINK_UP;
        p->link_down_default = 2;   /* Polling */
        p->link_width_enabled = 0x03;   /* 1X, 4X */
        p->link_speed_enabled = 0x7;    /* SDR, DDR, QDR */
        p->neighbor_mtu = VHCA_IB_MTU_4096;
        p->operational_vls = 1;     /* VL0 */
        p->pkeys[0] = 0xffff;
    }
}

void vhca_switch_set_cable(VhcaSwitch *sw, unsigned port, bool up)
{
    VhcaSwitchPort *p;

    if (port == 0 || port > sw->nports) {
        return;
    }
    p = &sw->port[port];
    p->cabled = up;
    if (up && p->phys_state != VHCA_PORT_PHYS_DISABLED) {
        p->phys_state = VHCA_PORT_PHYS_LINK_UP;
        if (p->state == VHCA_PORT_DOWN) {
            vhca_switch_port_enter(sw, port, VHCA_PORT_INIT);
        }
    } else if (!up) {
        if (p->phys_state == VHCA_PORT_PHYS_LINK_UP) {
            p->link_downed++;
            p->phys_state = VHCA_PORT_PHYS_POLLING;
        }
        vhca_switch_port_enter(sw, port, VHCA_PORT_DOWN);
    }
}

/* ---------------------------------------------------------------------- */
/* Out of a port                                                          */
/* ---------------------------------------------------------------------- */

/*
 * 7.2: an ACTIVE port sends everything, an ARMED or INIT one SMPs only
 * (VL15), a DOWN one nothing.
 */
static bool vhca_switch_port_sends(const VhcaSwitchPort *p, bool vl15)
{
    switch (p->state) {
    case VHCA_PORT_ACTIVE:
        return true;
    case VHCA_PORT_INIT:
    case VHCA_PORT_ARMED:
        return vl15;
    default:
        return false;
    }
}

static void vhca_switch_send(VhcaSwitch *sw, unsigned port,
                             const uint8_t *pkt, size_t len, bool vl15)
{
    VhcaSwitchPort *p = &sw->port[port];

    if (port == 0 || port > sw->nports || !p->cabled) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_NO_ROUTE);
        return;
    }
    if (!vhca_switch_port_sends(p, vl15)) {
        p->xmit_discards++;
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_PORT_STATE);
        return;
    }
    p->xmit_pkts++;
    p->xmit_data += len - VHCA_IB_VCRC_LEN;
    sw->ops->transmit(sw->opaque, port, pkt, len);
}

/*
 * An SMP the switch sends or passes on, rebuilt whole: the MAD changed
 * (hop pointer, return path, a response), so its ICRC and VCRC must be
 * computed again.
 */
static void vhca_switch_send_smp(VhcaSwitch *sw, unsigned port,
                                 uint16_t dlid, uint16_t slid,
                                 const uint8_t *mad)
{
    uint8_t frame[VHCA_WIRE_SMP_LEN];
    size_t len = vhca_wire_build_smp(mad, dlid, slid, frame, sizeof(frame));

    if (len) {
        vhca_switch_send(sw, port, frame, len, true);
    }
}

/*
 * 10.9.4, partition enforcement: a port whose SM turned it on (PortInfo
 * PartitionEnforcementInbound/Outbound) passes only packets whose BTH
 * P_Key matches an entry of its table, as the CA at its other end
 * would (vhca_ib_pkey_match); the refused count as constraint errors.
 */
static bool vhca_switch_pkey_ok(const VhcaSwitchPort *p, uint16_t pkey)
{
    unsigned i;

    for (i = 0; i < VHCA_SWITCH_PKEY_TBL_LEN; i++) {
        if (vhca_ib_pkey_match(p->pkeys[i], pkey)) {
            return true;
        }
    }
    return false;
}

/* A data packet out of @port, unless its partition may not go there. */
static void vhca_switch_send_data(VhcaSwitch *sw, unsigned port,
                                  const uint8_t *pkt, size_t len,
                                  uint16_t pkey)
{
    VhcaSwitchPort *p = &sw->port[port];

    if (port <= sw->nports && p->enforce_out &&
        !vhca_switch_pkey_ok(p, pkey)) {
        p->xmit_constraint_errors++;
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_PKEY);
        return;
    }
    vhca_switch_send(sw, port, pkt, len, false);
}

/* The port the LFT (or for a multicast LID the MFT's first) names. */
static unsigned vhca_switch_lft_port(const VhcaSwitch *sw, uint16_t dlid)
{
    if (dlid >= VHCA_SWITCH_LFT_CAP || dlid > sw->lft_top) {
        return VHCA_SWITCH_NO_PORT;
    }
    return sw->lft[dlid];
}

/* ---------------------------------------------------------------------- */
/* Directed route SMPs (14.2.2)                                           */
/* ---------------------------------------------------------------------- */

/*
 * The switch's half of C14-9 (outgoing, D = 0) and C14-13 (returning,
 * D = 1), as drivers/infiniband/core/smi.c reads them for a switch: a
 * DR SMP received on @in_port either ends here (*local: for our SMA, or
 * for an SM we do not have) or goes on out of *out_port, with its hop
 * pointer and return path updated.  False: refused (C14-6, C14-9:5,
 * C14-13:5, a path naming a port we lack).
 */
static bool vhca_switch_dr_route(const VhcaSwitch *sw, uint8_t *mad,
                                 unsigned in_port, bool *local,
                                 unsigned *out_port)
{
    uint8_t *hop_ptr = &mad[VHCA_MAD_HOP_PTR];
    uint8_t hop_cnt = mad[VHCA_MAD_HOP_CNT];
    const uint8_t *initial = mad + VHCA_SMP_DR_INITIAL_PATH;
    uint8_t *ret = mad + VHCA_SMP_DR_RETURN_PATH;
    bool returning = vhca_ld_be16(mad + VHCA_MAD_STATUS) & VHCA_SMP_DIRECTION;
    bool dlid_permissive = vhca_ld_be16(mad + VHCA_SMP_DR_DLID) ==
                           VHCA_IB_LID_PERMISSIVE;

    *local = false;
    if (hop_cnt >= SMP_MAX_HOPS) {
        return false;                           /* C14-6 */
    }
    if (!returning) {
        if (*hop_ptr == 0 || *hop_ptr > hop_cnt + 1) {
            return false;                       /* C14-9:1, :5 */
        }
        if (*hop_ptr == hop_cnt + 1) {
            *local = true;                      /* C14-9:4 */
            return true;
        }
        ret[*hop_ptr] = (uint8_t)in_port;       /* C14-9:2, :3 */
        if (*hop_ptr == hop_cnt) {
            /*
             * C14-9:3: the directed route part ends here.  With a
             * permissive DrDLID the SMP is ours; else it would go on by
             * LID to DrDLID, which opensm never asks of a switch.
             */
            (*hop_ptr)++;
            *local = dlid_permissive;
            return dlid_permissive;
        }
        (*hop_ptr)++;                           /* C14-9:2: next hop */
        *out_port = initial[*hop_ptr];
        return *out_port >= 1 && *out_port <= sw->nports;
    }
    if (*hop_ptr >= 2 && *hop_ptr <= hop_cnt) {    /* C14-13:2 */
        (*hop_ptr)--;
        *out_port = ret[*hop_ptr];
        return *out_port >= 1 && *out_port <= sw->nports;
    }
    /*
     * C14-13:1 (hop_ptr = hop_cnt + 1) is the responder's own step when
     * it sends (below); C14-13:3 and :4 end at the SM, which is never a
     * switch here.
     */
    return false;
}

/* A response of our SMA to the DR SMP @mad that came in on @in_port. */
static void vhca_switch_dr_respond(VhcaSwitch *sw, uint8_t *mad)
{
    uint8_t hop_cnt = mad[VHCA_MAD_HOP_CNT];
    unsigned port;

    /* C14-13:1: back one hop, out of the port it came in by. */
    if (hop_cnt == 0 || mad[VHCA_MAD_HOP_PTR] != hop_cnt + 1) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_DR);
        return;
    }
    mad[VHCA_MAD_HOP_PTR]--;
    port = mad[VHCA_SMP_DR_RETURN_PATH + hop_cnt];
    vhca_switch_send_smp(sw, port, VHCA_IB_LID_PERMISSIVE,
                         sw->lid ? sw->lid : VHCA_IB_LID_PERMISSIVE, mad);
}

/* ---------------------------------------------------------------------- */
/* Receive                                                                */
/* ---------------------------------------------------------------------- */

/* 7.2 for a receiving port: INIT and ARMED take SMPs only. */
static bool vhca_switch_port_takes(VhcaSwitch *sw, unsigned port, bool vl15)
{
    VhcaSwitchPort *p = &sw->port[port];

    switch (p->state) {
    case VHCA_PORT_ACTIVE:
        return true;
    case VHCA_PORT_ARMED:
        /* 7.2: an ARMED port's first data packet makes it ACTIVE. */
        if (!vl15) {
            vhca_switch_port_enter(sw, port, VHCA_PORT_ACTIVE);
        }
        return true;
    case VHCA_PORT_INIT:
        return vl15;
    default:
        return false;
    }
}

/*
 * A GMP to port 0 (QP1, 13.5.1): the PMA answers PerfMgt MADs, as a UD
 * datagram back to the requester's QP by the LFT (or by @in_port before
 * there is a route), on its SL and P_Key; other classes are not ours.
 */
static void vhca_switch_gmp(VhcaSwitch *sw, unsigned in_port,
                            const uint8_t *frame, size_t len,
                            VhcaWirePacket *pkt)
{
    uint8_t mad[VHCA_MAD_SIZE], out[VHCA_WIRE_GMP_LEN];
    unsigned out_port;
    size_t out_len;

    if (vhca_wire_parse_ib(frame, len, pkt) != VHCA_WIRE_OK ||
        pkt->tp.bth.dest_qpn != 1 ||
        pkt->tp.bth.opcode != VHCA_IB_OPCODE(UD, SEND_ONLY) ||
        pkt->tp.deth.qkey != VHCA_GSI_QKEY ||
        pkt->payload_len != VHCA_MAD_SIZE ||
        pkt->payload[VHCA_MAD_MGMT_CLASS] != VHCA_MGMT_CLASS_PERF) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_NOT_OURS);
        return;
    }
    memcpy(mad, pkt->payload, sizeof(mad));
    if (!vhca_switch_pma(sw, mad)) {
        return;
    }
    out_len = vhca_wire_build_gmp(mad, pkt->lrh.sl, pkt->lrh.slid, sw->lid,
                                  pkt->tp.bth.pkey, pkt->tp.deth.src_qpn,
                                  out, sizeof(out));
    out_port = vhca_switch_lft_port(sw, pkt->lrh.slid);
    if (out_len) {
        vhca_switch_send(sw, out_port == VHCA_SWITCH_NO_PORT ? in_port :
                         out_port, out, out_len, false);
    }
}

/* An SMP (VL15, QP0): directed route, for us, or on by the LFT. */
static void vhca_switch_smp(VhcaSwitch *sw, unsigned in_port,
                            const uint8_t *frame, size_t len,
                            const VhcaWirePacket *pkt)
{
    uint8_t mad[VHCA_MAD_SIZE];
    VhcaSwitchSmp smp = { .mad = mad, .in_port = in_port };
    unsigned out_port = VHCA_SWITCH_NO_PORT;
    bool local;

    if (pkt->tp.bth.dest_qpn != 0 ||
        pkt->tp.bth.opcode != VHCA_IB_OPCODE(UD, SEND_ONLY) ||
        pkt->payload_len != VHCA_MAD_SIZE) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_VL15);
        return;
    }
    memcpy(mad, pkt->payload, sizeof(mad));

    if (mad[VHCA_MAD_MGMT_CLASS] == VHCA_MGMT_CLASS_SUBN_DR) {
        if (!vhca_switch_dr_route(sw, mad, in_port, &local, &out_port)) {
            vhca_switch_drop(sw, VHCA_SWITCH_DROP_DR);
            return;
        }
        if (!local) {
            sw->forwarded++;
            vhca_switch_send_smp(sw, out_port, pkt->lrh.dlid, pkt->lrh.slid,
                                 mad);
            return;
        }
        if (vhca_switch_sma(sw, &smp)) {
            vhca_switch_dr_respond(sw, mad);
        }
        return;
    }
    if (mad[VHCA_MAD_MGMT_CLASS] != VHCA_MGMT_CLASS_SUBN_LID) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_VL15);
        return;
    }
    /* LID routed (14.2.2.1): to port 0's LID, or on as any packet. */
    if (sw->lid && pkt->lrh.dlid == sw->lid) {
        if (vhca_switch_sma(sw, &smp)) {
            out_port = vhca_switch_lft_port(sw, pkt->lrh.slid);
            vhca_switch_send_smp(sw, out_port == VHCA_SWITCH_NO_PORT ?
                                 in_port : out_port,
                                 pkt->lrh.slid, sw->lid, mad);
        }
        return;
    }
    out_port = vhca_switch_lft_port(sw, pkt->lrh.dlid);
    if (out_port == VHCA_SWITCH_NO_PORT || out_port == in_port) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_NO_ROUTE);
        return;
    }
    sw->forwarded++;
    vhca_switch_send(sw, out_port, frame, len, true);
}

/*
 * 18.2.4.3: a multicast packet goes out of every port of its MLID's
 * entry but the one it came in on.
 */
static void vhca_switch_mcast(VhcaSwitch *sw, unsigned in_port,
                              const uint8_t *frame, size_t len,
                              uint16_t dlid, uint16_t pkey)
{
    uint32_t index = dlid - VHCA_IB_LID_MCAST_FIRST;
    uint64_t mask;
    unsigned port;

    mask = index < VHCA_SWITCH_MFT_CAP ? sw->mft[index] : 0;
    mask &= ~(1ull << in_port);
    if (!mask) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_NO_ROUTE);
        return;
    }
    sw->forwarded++;
    for (port = 1; port <= sw->nports; port++) {
        if (mask & (1ull << port)) {
            vhca_switch_send_data(sw, port, frame, len, pkey);
        }
    }
}

void vhca_switch_receive(VhcaSwitch *sw, unsigned in_port,
                         const uint8_t *frame, size_t len)
{
    VhcaSwitchPort *p;
    VhcaWirePacket pkt;
    unsigned out_port;
    uint16_t pkey;
    bool vl15;

    if (in_port == 0 || in_port > sw->nports) {
        return;
    }
    p = &sw->port[in_port];
    if (vhca_wire_parse_lrh(frame, len, &pkt) != VHCA_WIRE_OK) {
        p->rcv_errors++;
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_MALFORMED);
        return;
    }
    vl15 = pkt.lrh.vl == VHCA_IB_VL_SMP;
    if (!vhca_switch_port_takes(sw, in_port, vl15)) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_PORT_STATE);
        return;
    }
    p->rcv_pkts++;
    p->rcv_data += len - VHCA_IB_VCRC_LEN;

    if (vl15) {
        /* A switch reads an SMP's transport: the ICRC too (7.8.1). */
        if (vhca_wire_parse_ib(frame, len, &pkt) != VHCA_WIRE_OK) {
            p->rcv_errors++;
            vhca_switch_drop(sw, VHCA_SWITCH_DROP_MALFORMED);
            return;
        }
        vhca_switch_smp(sw, in_port, frame, len, &pkt);
        return;
    }
    /* Data: the P_Key of its BTH, for partition enforcement. */
    if (pkt.bth_offset + VHCA_IB_BTH_LEN > len) {
        p->rcv_errors++;
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_MALFORMED);
        return;
    }
    pkey = vhca_ld_be16(frame + pkt.bth_offset + 2);
    if (p->enforce_in && !vhca_switch_pkey_ok(p, pkey)) {
        p->rcv_constraint_errors++;
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_PKEY);
        return;
    }
    if (vhca_ib_lid_is_multicast(pkt.lrh.dlid)) {
        vhca_switch_mcast(sw, in_port, frame, len, pkt.lrh.dlid, pkey);
        return;
    }
    /* To port 0 by LID: its GSI (the PMA). */
    if (sw->lid && pkt.lrh.dlid == sw->lid) {
        vhca_switch_gmp(sw, in_port, frame, len, &pkt);
        return;
    }
    out_port = vhca_switch_lft_port(sw, pkt.lrh.dlid);
    if (out_port == VHCA_SWITCH_NO_PORT || out_port == 0 ||
        out_port == in_port) {
        vhca_switch_drop(sw, VHCA_SWITCH_DROP_NO_ROUTE);
        return;
    }
    sw->forwarded++;
    vhca_switch_send_data(sw, out_port, frame, len, pkey);
}

/* ---------------------------------------------------------------------- */
/* Introspection                                                          */
/* ---------------------------------------------------------------------- */

static const char *vhca_switch_state_name(uint8_t state)
{
    static const char *const names[] = {
        "NOP", "DOWN", "INIT", "ARMED", "ACTIVE",
    };

    return state < sizeof(names) / sizeof(names[0]) ? names[state] :
           "UNKNOWN";
}

void vhca_switch_dump(const VhcaSwitch *sw,
                      void (*line)(void *opaque, const char *text),
                      void *opaque)
{
    char buf[256];
    unsigned i, n;

    snprintf(buf, sizeof(buf),
             "switch guid 0x%016llx ports %u lid 0x%x sm-lid 0x%x "
             "lft-top 0x%x port-state-change %d forwarded %llu smps %llu",
             (unsigned long long)sw->guid, sw->nports, sw->lid, sw->sm_lid,
             sw->lft_top, sw->port_state_change,
             (unsigned long long)sw->forwarded,
             (unsigned long long)sw->smps);
    line(opaque, buf);
    for (i = 0; i <= sw->nports; i++) {
        const VhcaSwitchPort *p = &sw->port[i];

        snprintf(buf, sizeof(buf),
                 "port %u %s%s xmit %llu rcv %llu xmit-discards %llu "
                 "rcv-errors %llu pkey-enforce %s%s rcv-constraint %llu "
                 "xmit-constraint %llu", i, vhca_switch_state_name(p->state),
                 i && !p->cabled ? " (no cable)" : "",
                 (unsigned long long)p->xmit_pkts,
                 (unsigned long long)p->rcv_pkts,
                 (unsigned long long)p->xmit_discards,
                 (unsigned long long)p->rcv_errors,
                 p->enforce_in ? "in" : "", p->enforce_out ? "out" : "",
                 (unsigned long long)p->rcv_constraint_errors,
                 (unsigned long long)p->xmit_constraint_errors);
        line(opaque, buf);
    }
    /* The LFT as "lid:port" pairs, a line per 8 routed LIDs. */
    n = 0;
    buf[0] = '\0';
    for (i = 0; i < VHCA_SWITCH_LFT_CAP && i <= sw->lft_top; i++) {
        size_t used = strlen(buf);

        if (sw->lft[i] == VHCA_SWITCH_NO_PORT) {
            continue;
        }
        snprintf(buf + used, sizeof(buf) - used, "%s%u:%u",
                 n % 8 ? " " : "lft ", i, sw->lft[i]);
        if (++n % 8 == 0) {
            line(opaque, buf);
            buf[0] = '\0';
        }
    }
    if (n % 8) {
        line(opaque, buf);
    }
    for (i = 0; i < VHCA_SWITCH_MFT_CAP; i++) {
        if (sw->mft[i]) {
            snprintf(buf, sizeof(buf), "mft 0x%x ports 0x%llx",
                     VHCA_IB_LID_MCAST_FIRST + i,
                     (unsigned long long)sw->mft[i]);
            line(opaque, buf);
        }
    }
    for (i = 0; i < VHCA_SWITCH_DROP__MAX; i++) {
        snprintf(buf, sizeof(buf), "drop %s %llu", vhca_switch_drop_name(i),
                 (unsigned long long)sw->drops[i]);
        line(opaque, buf);
    }
}
