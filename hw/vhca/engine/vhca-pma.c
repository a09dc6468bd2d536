/*
 * vhca engine: the InfiniBand port's performance management agent (IBTA
 * Vol 1, 16.1): ClassPortInfo, PortCounters (16.1.3.5) and
 * PortCountersExtended (16.1.4.1), read from the device's own counters
 * (core->counters, enum vhca_counter).
 *
 * The driver shows those counters too (rdma statistic), so a PMA reset
 * (Set with CounterSelect) never clears them: it takes a baseline, and
 * the PMA shows the counter minus its baseline, saturated to the width
 * of its PortCounters field (16.1.3.5: a counter stops at all ones).
 * PortCounters and PortCountersExtended show the same four data and
 * packet counters, and resetting one resets both, as in qib.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-ib.h"
#include "vhca-mad.h"

#define VHCA_PMA_PORT_NUM           1
#define VHCA_PMA_MAX_SOURCES        3
/* ClassPortInfo RespTimeValue, as PortInfo's (vhca-sma.c). */
#define VHCA_PMA_RESP_TIME_VALUE    18

/*
 * A PMA counter the device feeds: its PortCounters field and
 * CounterSelect bit, its PortCountersExtended field (byte offset of a
 * 64-bit counter, 0: not there) and CounterSelect bit, and the device
 * counters whose sum it is (in octets when @words: shown / 4).
 * PortCounters fields no device counter feeds (SymbolErrorCounter,
 * LinkErrorRecoveryCounter, PortRcvRemotePhysicalErrors,
 * PortRcvSwitchRelayErrors, PortXmitDiscards, PortXmitConstraintErrors,
 * LocalLinkIntegrityErrors, ExcessiveBufferOverrunErrors,
 * PortXmitWait) read 0: a virtual link has no symbols, buffers or relay.
 */
typedef struct VhcaPmaCounter {
    VhcaMadField field;
    uint16_t select;
    uint8_t ext_byte;
    uint16_t ext_select;
    bool words;
    uint8_t nsources;
    uint8_t sources[VHCA_PMA_MAX_SOURCES];
} VhcaPmaCounter;

/* In the order of ib->pma_base[]. */
static const VhcaPmaCounter vhca_pma_counters[] = {
    {   /* LinkDownedCounter: the port left LinkUp */
        VHCA_PC_LINK_DOWNED, 0x0004, 0, 0, false,
        1, { VHCA_CNT_LINK_DOWNED },
    },
    {   /* PortRcvErrors: malformed packets, bad ICRC or VCRC */
        VHCA_PC_RCV_ERRORS, 0x0008, 0, 0, false,
        3, { VHCA_CNT_DROP_MALFORMED, VHCA_CNT_DROP_BAD_ICRC,
             VHCA_CNT_DROP_BAD_VCRC },
    },
    {   /* PortRcvConstraintErrors: the P_Key check refused it */
        VHCA_PC_RCV_CONSTRAINT, 0x0100, 0, 0, false,
        1, { VHCA_CNT_DROP_PKEY },
    },
    {   /* VL15Dropped */
        VHCA_PC_VL15_DROPPED, 0x0800, 0, 0, false,
        1, { VHCA_CNT_DROP_VL15 },
    },
    {   /* PortXmitData: LRH to ICRC, in 4-octet words */
        VHCA_PC_XMIT_DATA, 0x1000, VHCA_PCE_XMIT_DATA, 0x0001, true,
        1, { VHCA_CNT_RDMA_TX_BYTES },
    },
    {   /* PortRcvData */
        VHCA_PC_RCV_DATA, 0x2000, VHCA_PCE_RCV_DATA, 0x0002, true,
        1, { VHCA_CNT_RDMA_RX_BYTES },
    },
    {   /* PortXmitPkts */
        VHCA_PC_XMIT_PKTS, 0x4000, VHCA_PCE_XMIT_PKTS, 0x0004, false,
        1, { VHCA_CNT_ROCE_TX_PACKETS },
    },
    {   /* PortRcvPkts */
        VHCA_PC_RCV_PKTS, 0x8000, VHCA_PCE_RCV_PKTS, 0x0008, false,
        1, { VHCA_CNT_ROCE_RX_PACKETS },
    },
};

_Static_assert(sizeof(vhca_pma_counters) / sizeof(vhca_pma_counters[0]) <=
               VHCA_IB_PMA_BASES, "VHCA_IB_PMA_BASES too small");

#define VHCA_PMA_NCOUNTERS \
    (sizeof(vhca_pma_counters) / sizeof(vhca_pma_counters[0]))

static uint64_t vhca_pma_raw(const VhcaCore *core, const VhcaPmaCounter *c)
{
    uint64_t sum = 0;
    unsigned i;

    for (i = 0; i < c->nsources; i++) {
        sum += core->counters[c->sources[i]];
    }
    return sum;
}

/* The counter since its baseline, in its unit, not yet saturated. */
static uint64_t vhca_pma_value(const VhcaCore *core, unsigned i)
{
    const VhcaPmaCounter *c = &vhca_pma_counters[i];
    uint64_t raw = vhca_pma_raw(core, c);
    uint64_t base = core->ib.pma_base[i];
    uint64_t v = raw > base ? raw - base : 0;

    return c->words ? v / 4 : v;
}

static void vhca_pma_clear(VhcaCore *core, unsigned i)
{
    core->ib.pma_base[i] = vhca_pma_raw(core, &vhca_pma_counters[i]);
}

/* 16.1.3.1: the one port, or all (0xFF, ClassPortInfo AllPortSelect). */
static bool vhca_pma_port_ok(const uint8_t *data)
{
    uint8_t port = vhca_mad_get(data, VHCA_PMA_PORT_SELECT);

    return port == VHCA_PMA_PORT_NUM || port == VHCA_PMA_ALL_PORTS;
}

/* 16.1.2 ClassPortInfo: no redirection, no traps. */
static uint16_t vhca_pma_get_class_port_info(VhcaCore *core, uint8_t *data)
{
    (void)core;
    vhca_mad_set(data, VHCA_CPI_BASE_VERSION, VHCA_MAD_BASE_VERSION_IB);
    vhca_mad_set(data, VHCA_CPI_CLASS_VERSION, VHCA_PMA_CLASS_VERSION);
    /*
     * PortCountersExtended without the IETF unicast and multicast
     * counters, which the device does not count: the kernel's sysfs
     * then shows the 64-bit data and packet counters.
     */
    vhca_mad_set(data, VHCA_CPI_CAP_MASK,
                 VHCA_PMA_CAP_ALL_PORT_SELECT |
                 VHCA_PMA_CAP_EXT_WIDTH_NOIETF);
    vhca_mad_set(data, VHCA_CPI_RESP_TIME_VALUE, VHCA_PMA_RESP_TIME_VALUE);
    return 0;
}

static uint16_t vhca_pma_get_counters(VhcaCore *core, uint8_t *data)
{
    unsigned i;

    for (i = 0; i < VHCA_PMA_NCOUNTERS; i++) {
        const VhcaPmaCounter *c = &vhca_pma_counters[i];
        uint64_t max = (1ull << c->field.width) - 1;
        uint64_t v = vhca_pma_value(core, i);

        vhca_mad_set(data, c->field, (uint32_t)(v > max ? max : v));
    }
    return 0;
}

/*
 * Set: the counters CounterSelect names start again from 0 (16.1.3.5;
 * the values in the MAD are not used: 0 is the only one SMs write).
 * @ext: PortCountersExtended's CounterSelect bits, else PortCounters'.
 */
static uint16_t vhca_pma_clear_selected(VhcaCore *core, const uint8_t *data,
                                        bool ext)
{
    uint16_t select = vhca_mad_get(data, VHCA_PMA_COUNTER_SELECT);
    unsigned i;

    for (i = 0; i < VHCA_PMA_NCOUNTERS; i++) {
        if (select & (ext ? vhca_pma_counters[i].ext_select
                          : vhca_pma_counters[i].select)) {
            vhca_pma_clear(core, i);
        }
    }
    return 0;
}

static uint16_t vhca_pma_set_counters(VhcaCore *core, const uint8_t *data)
{
    return vhca_pma_clear_selected(core, data, false);
}

static uint16_t vhca_pma_set_counters_ext(VhcaCore *core,
                                          const uint8_t *data)
{
    return vhca_pma_clear_selected(core, data, true);
}

/* 16.1.4.1: 64 bits, no saturation to speak of. */
static uint16_t vhca_pma_get_counters_ext(VhcaCore *core, uint8_t *data)
{
    unsigned i;

    for (i = 0; i < VHCA_PMA_NCOUNTERS; i++) {
        if (vhca_pma_counters[i].ext_byte) {
            vhca_st_be64(data + vhca_pma_counters[i].ext_byte,
                         vhca_pma_value(core, i));
        }
    }
    return 0;
}

/*
 * The PMA's attributes (16.1.2, Table 210): get fills the 192 bytes of
 * data (zeroed but for PortSelect), set acts on the request's data; the
 * counters' have a PortSelect.
 */
typedef struct VhcaPmaAttr {
    uint16_t id;
    bool port_select;
    uint16_t (*get)(VhcaCore *core, uint8_t *data);
    uint16_t (*set)(VhcaCore *core, const uint8_t *data);
} VhcaPmaAttr;

static const VhcaPmaAttr vhca_pma_attrs[] = {
    { VHCA_PMA_ATTR_CLASS_PORT_INFO, false, vhca_pma_get_class_port_info,
      NULL },
    { VHCA_PMA_ATTR_PORT_COUNTERS, true, vhca_pma_get_counters,
      vhca_pma_set_counters },
    { VHCA_PMA_ATTR_PORT_COUNTERS_EXT, true, vhca_pma_get_counters_ext,
      vhca_pma_set_counters_ext },
};

uint8_t vhca_pma_process(VhcaCore *core, VhcaMadReq *req)
{
    uint8_t method = req->in[VHCA_MAD_METHOD];
    uint16_t attr_id = vhca_ld_be16(req->in + VHCA_MAD_ATTR_ID);
    const uint8_t *in_data = req->in + VHCA_PMA_DATA;
    uint8_t *data = req->out + VHCA_PMA_DATA;
    const VhcaPmaAttr *attr = NULL;
    uint16_t status;
    size_t i;

    /* Responses are for a performance manager on this node. */
    if (method & VHCA_MAD_METHOD_RESP) {
        return 0;
    }
    if (req->in[VHCA_MAD_BASE_VERSION] != VHCA_MAD_BASE_VERSION_IB ||
        req->in[VHCA_MAD_CLASS_VERSION] != VHCA_PMA_CLASS_VERSION) {
        return vhca_mad_reply(req, VHCA_MAD_STATUS_BAD_VERSION);
    }
    /* 16.1.1: a PMA takes Get and Set (no traps: none are sent). */
    if (method != VHCA_MAD_METHOD_GET && method != VHCA_MAD_METHOD_SET) {
        return vhca_mad_reply(req, VHCA_MAD_STATUS_UNSUP_METHOD);
    }
    for (i = 0; i < sizeof(vhca_pma_attrs) / sizeof(vhca_pma_attrs[0]);
         i++) {
        if (vhca_pma_attrs[i].id == attr_id) {
            attr = &vhca_pma_attrs[i];
            break;
        }
    }
    if (!attr || (method == VHCA_MAD_METHOD_SET && !attr->set)) {
        return vhca_mad_reply(req, VHCA_MAD_STATUS_UNSUP_ATTR);
    }

    memset(data, 0, VHCA_PMA_DATA_LEN);
    if (attr->port_select) {
        vhca_mad_set(data, VHCA_PMA_PORT_SELECT,
                     vhca_mad_get(in_data, VHCA_PMA_PORT_SELECT));
        if (!vhca_pma_port_ok(in_data)) {
            return vhca_mad_reply(req, VHCA_MAD_STATUS_INVALID_VALUE);
        }
    }
    if (method == VHCA_MAD_METHOD_SET) {
        status = attr->set(core, in_data);
        if (status) {
            return vhca_mad_reply(req, status);
        }
    }
    return vhca_mad_reply(req, attr->get(core, data));
}
