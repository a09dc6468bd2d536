/*
 * vhca-switch: the switch's performance management agent (IBTA Vol 1
 * 16.1), on QP1 of port 0: ClassPortInfo, and PortCounters and
 * PortCountersExtended of each port from the switch's own counters, so
 * that perfquery reads every port of the subnet, the switch's too.  The
 * layouts are the engine's PMA's (vhca-mad.h).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-switch.h"
#include "vhca-mad.h"

/* 16.1.3.5: a PortCounters field stops at all ones. */
static void put_saturated(uint8_t *data, VhcaMadField f, uint64_t v)
{
    uint64_t max = (1ull << f.width) - 1;

    vhca_mad_set(data, f, (uint32_t)(v > max ? max : v));
}

/* The counters of @port, or with VHCA_PMA_ALL_PORTS their sums. */
static VhcaSwitchPort port_counts(const VhcaSwitch *sw, unsigned port)
{
    VhcaSwitchPort sum;
    unsigned i;

    if (port != VHCA_PMA_ALL_PORTS) {
        return sw->port[port];
    }
    memset(&sum, 0, sizeof(sum));
    for (i = 1; i <= sw->nports; i++) {
        const VhcaSwitchPort *p = &sw->port[i];

        sum.xmit_pkts += p->xmit_pkts;
        sum.rcv_pkts += p->rcv_pkts;
        sum.xmit_data += p->xmit_data;
        sum.rcv_data += p->rcv_data;
        sum.xmit_discards += p->xmit_discards;
        sum.rcv_errors += p->rcv_errors;
        sum.rcv_constraint_errors += p->rcv_constraint_errors;
        sum.xmit_constraint_errors += p->xmit_constraint_errors;
        sum.link_downed += p->link_downed;
    }
    return sum;
}

static void get_counters(const VhcaSwitchPort *c, uint8_t *data)
{
    put_saturated(data, VHCA_PC_LINK_DOWNED, c->link_downed);
    put_saturated(data, VHCA_PC_RCV_ERRORS, c->rcv_errors);
    put_saturated(data, VHCA_PC_XMIT_DISCARDS, c->xmit_discards);
    put_saturated(data, VHCA_PC_XMIT_CONSTRAINT, c->xmit_constraint_errors);
    put_saturated(data, VHCA_PC_RCV_CONSTRAINT, c->rcv_constraint_errors);
    put_saturated(data, VHCA_PC_XMIT_DATA, c->xmit_data / 4);
    put_saturated(data, VHCA_PC_RCV_DATA, c->rcv_data / 4);
    put_saturated(data, VHCA_PC_XMIT_PKTS, c->xmit_pkts);
    put_saturated(data, VHCA_PC_RCV_PKTS, c->rcv_pkts);
}

static void get_counters_ext(const VhcaSwitchPort *c, uint8_t *data)
{
    vhca_st_be64(data + VHCA_PCE_XMIT_DATA, c->xmit_data / 4);
    vhca_st_be64(data + VHCA_PCE_RCV_DATA, c->rcv_data / 4);
    vhca_st_be64(data + VHCA_PCE_XMIT_PKTS, c->xmit_pkts);
    vhca_st_be64(data + VHCA_PCE_RCV_PKTS, c->rcv_pkts);
}

/*
 * A Set clears what its CounterSelect names (16.1.3.5, 16.1.4.1); the
 * switch's counters are the PMA's alone, so they start again from 0.
 */
static void clear_counters(VhcaSwitchPort *p, uint16_t select, bool ext)
{
    if (ext ? select & 0x1 : select & 0x1000) {
        p->xmit_data = 0;
    }
    if (ext ? select & 0x2 : select & 0x2000) {
        p->rcv_data = 0;
    }
    if (ext ? select & 0x4 : select & 0x4000) {
        p->xmit_pkts = 0;
    }
    if (ext ? select & 0x8 : select & 0x8000) {
        p->rcv_pkts = 0;
    }
    if (!ext) {
        if (select & 0x0004) {
            p->link_downed = 0;
        }
        if (select & 0x0008) {
            p->rcv_errors = 0;
        }
        if (select & 0x0040) {
            p->xmit_discards = 0;
        }
        if (select & 0x0080) {
            p->xmit_constraint_errors = 0;
        }
        if (select & 0x0100) {
            p->rcv_constraint_errors = 0;
        }
    }
}

bool vhca_switch_pma(VhcaSwitch *sw, uint8_t *mad)
{
    uint8_t method = mad[VHCA_MAD_METHOD];
    uint16_t id = vhca_ld_be16(mad + VHCA_MAD_ATTR_ID);
    uint8_t *data = mad + VHCA_PMA_DATA;
    unsigned port = vhca_mad_get(data, VHCA_PMA_PORT_SELECT);
    uint16_t select = vhca_mad_get(data, VHCA_PMA_COUNTER_SELECT);
    bool ext = id == VHCA_PMA_ATTR_PORT_COUNTERS_EXT;
    VhcaSwitchPort counts;
    unsigned i;

    if (method & VHCA_MAD_METHOD_RESP) {
        return false;
    }
    if (mad[VHCA_MAD_BASE_VERSION] != VHCA_MAD_BASE_VERSION_IB ||
        mad[VHCA_MAD_CLASS_VERSION] != VHCA_PMA_CLASS_VERSION) {
        vhca_mad_make_response(mad, VHCA_MAD_STATUS_BAD_VERSION);
        return true;
    }
    if (method != VHCA_MAD_METHOD_GET && method != VHCA_MAD_METHOD_SET) {
        vhca_mad_make_response(mad, VHCA_MAD_STATUS_UNSUP_METHOD);
        return true;
    }
    if (id == VHCA_PMA_ATTR_CLASS_PORT_INFO && method == VHCA_MAD_METHOD_GET) {
        memset(data, 0, VHCA_PMA_DATA_LEN);
        vhca_mad_set(data, VHCA_CPI_BASE_VERSION, VHCA_MAD_BASE_VERSION_IB);
        vhca_mad_set(data, VHCA_CPI_CLASS_VERSION, VHCA_PMA_CLASS_VERSION);
        vhca_mad_set(data, VHCA_CPI_CAP_MASK, VHCA_PMA_CAP_ALL_PORT_SELECT |
                     VHCA_PMA_CAP_EXT_WIDTH_NOIETF);
        vhca_mad_set(data, VHCA_CPI_RESP_TIME_VALUE, sw->resp_time_value);
        vhca_mad_make_response(mad, 0);
        return true;
    }
    if (id != VHCA_PMA_ATTR_PORT_COUNTERS && !ext) {
        vhca_mad_make_response(mad, VHCA_MAD_STATUS_UNSUP_ATTR);
        return true;
    }
    /* 16.1.3.1: a port of the switch, or all of them (AllPortSelect). */
    if ((port == 0 || port > sw->nports) && port != VHCA_PMA_ALL_PORTS) {
        vhca_mad_make_response(mad, VHCA_MAD_STATUS_INVALID_VALUE);
        return true;
    }
    if (method == VHCA_MAD_METHOD_SET) {
        for (i = 1; i <= sw->nports; i++) {
            if (port == i || port == VHCA_PMA_ALL_PORTS) {
                clear_counters(&sw->port[i], select, ext);
            }
        }
    }
    counts = port_counts(sw, port);
    memset(data, 0, VHCA_PMA_DATA_LEN);
    vhca_mad_set(data, VHCA_PMA_PORT_SELECT, port);
    if (ext) {
        get_counters_ext(&counts, data);
    } else {
        get_counters(&counts, data);
    }
    vhca_mad_make_response(mad, 0);
    return true;
}
