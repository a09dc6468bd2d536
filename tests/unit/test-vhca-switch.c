/*
 * Unit tests of the InfiniBand switch (switch/, docs/specs/vhca.rst
 * "InfiniBand switch"): directed route SMPs answered and forwarded along
 * their path (and refused for bad hop pointers and counts, C14-6/9/13),
 * the SMA's switch attributes, forwarding by the LFT and the MFT, port
 * states, and what cannot be forwarded dropped and counted.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <glib.h>
#include <string.h>

#include "vhca-switch.h"
#include "vhca-mad.h"
#include "vhca-wire.h"

#define NPORTS      4
#define GUID        0x0002c90300001234ull
#define MAX_OUT     16
#define TID         0x1234          /* the SM's requests' */

typedef struct Out {
    unsigned port;
    size_t len;
    uint8_t data[8192];
} Out;

typedef struct Sent {
    Out out[MAX_OUT];
    unsigned n;
} Sent;

static void capture(void *opaque, unsigned port, const uint8_t *pkt,
                    size_t len)
{
    Sent *s = opaque;

    g_assert_cmpuint(s->n, <, MAX_OUT);
    g_assert_cmpuint(len, <=, sizeof(s->out[0].data));
    s->out[s->n].port = port;
    s->out[s->n].len = len;
    memcpy(s->out[s->n].data, pkt, len);
    s->n++;
}

static const VhcaSwitchOps ops = { .transmit = capture };

static void switch_new(VhcaSwitch *sw, Sent *sent)
{
    unsigned i;

    memset(sent, 0, sizeof(*sent));
    vhca_switch_init(sw, NPORTS, GUID, "vhca switch 1", &ops, sent);
    for (i = 1; i <= NPORTS; i++) {
        vhca_switch_set_cable(sw, i, true);
    }
}

/* A packet of @len MAD or payload bytes, VL @vl, DLID @dlid, QP @qpn. */
static size_t packet(uint8_t *buf, uint8_t vl, uint16_t dlid, uint16_t slid,
                     uint32_t qpn, const uint8_t *payload, size_t len)
{
    VhcaWirePacket pkt;

    vhca_wire_ib_init(&pkt, vl, dlid, slid, VHCA_IB_OPCODE(UD, SEND_ONLY),
                      0xffff, qpn);
    pkt.tp.deth.qkey = 0x11111111;
    pkt.payload = payload;
    pkt.payload_len = (uint32_t)len;
    return vhca_wire_build(&pkt, buf, 8192);
}

/* A directed route SMP from the SM's CA, into @port. */
static void deliver_smp(VhcaSwitch *sw, unsigned port, const uint8_t *mad)
{
    uint8_t frame[VHCA_WIRE_SMP_LEN];
    size_t len = vhca_wire_build_smp(mad, VHCA_IB_LID_PERMISSIVE,
                                     VHCA_IB_LID_PERMISSIVE, frame,
                                     sizeof(frame));

    vhca_switch_receive(sw, port, frame, len);
}

/* The MAD of captured packet @i, which must be a well-formed SMP. */
static const uint8_t *sent_mad(Sent *s, unsigned i, VhcaWirePacket *pkt)
{
    g_assert_cmpuint(s->n, >, i);
    g_assert_cmpuint(vhca_wire_parse_lrh(s->out[i].data, s->out[i].len,
                                         pkt), ==, VHCA_WIRE_OK);
    g_assert_cmpuint(vhca_wire_parse_ib(s->out[i].data, s->out[i].len,
                                        pkt), ==, VHCA_WIRE_OK);
    g_assert_cmpuint(pkt->lrh.vl, ==, VHCA_IB_VL_SMP);
    g_assert_cmpuint(pkt->payload_len, ==, VHCA_MAD_SIZE);
    return pkt->payload;
}

/* An SM's Get or Set of the switch, one hop away, answered: the data. */
static uint16_t sm_request(VhcaSwitch *sw, Sent *s, unsigned port,
                           uint8_t method, uint16_t attr, uint32_t mod,
                           const uint8_t *set_data, uint8_t *data)
{
    uint8_t mad[VHCA_MAD_SIZE];
    const uint8_t *resp;
    VhcaWirePacket pkt;
    unsigned before = s->n;

    vhca_smp_init_dr(mad, method, attr, mod, TID, 1, NULL);
    if (set_data) {
        memcpy(mad + VHCA_SMP_DATA, set_data, VHCA_SMP_DATA_LEN);
    }
    deliver_smp(sw, port, mad);
    g_assert_cmpuint(s->n, ==, before + 1);
    g_assert_cmpuint(s->out[before].port, ==, port);
    resp = sent_mad(s, before, &pkt);
    g_assert_cmphex(resp[VHCA_MAD_METHOD], ==, VHCA_MAD_METHOD_GET_RESP);
    /* C14-13:1: the responder took the hop pointer back to the count. */
    g_assert_cmpuint(resp[VHCA_MAD_HOP_PTR], ==, 1);
    g_assert_cmpuint(resp[VHCA_SMP_DR_RETURN_PATH + 1], ==, port);
    g_assert_cmphex(vhca_ld_be64(resp + VHCA_MAD_TID), ==, TID);
    if (data) {
        memcpy(data, resp + VHCA_SMP_DATA, VHCA_SMP_DATA_LEN);
    }
    return vhca_ld_be16(resp + VHCA_MAD_STATUS);
}

/* What an SM does to a switch: LID 7 on port 0, every port ACTIVE. */
static void sm_configure(VhcaSwitch *sw, Sent *s)
{
    uint8_t pi[VHCA_SMP_DATA_LEN];
    unsigned port;
    uint8_t state;

    for (state = VHCA_PORT_ARMED; state <= VHCA_PORT_ACTIVE; state++) {
        for (port = 0; port <= NPORTS; port++) {
            memset(pi, 0, sizeof(pi));
            if (port == 0) {
                vhca_mad_set(pi, VHCA_PI_LID, 7);
                vhca_mad_set(pi, VHCA_PI_MASTER_SM_LID, 1);
            }
            vhca_mad_set(pi, VHCA_PI_PORT_STATE, state);
            g_assert_cmphex(sm_request(sw, s, 1, VHCA_MAD_METHOD_SET,
                                       VHCA_SMP_ATTR_PORT_INFO, port, pi,
                                       NULL), ==, VHCA_SMP_DIRECTION);
        }
    }
    g_assert_cmpuint(sw->lid, ==, 7);
    s->n = 0;
}

/* LID @lid leaves by @port, and LinearFDBTop covers it (as opensm). */
static void set_lft(VhcaSwitch *sw, Sent *s, uint16_t lid, uint8_t port)
{
    uint8_t block[VHCA_SMP_DATA_LEN], si[VHCA_SMP_DATA_LEN];

    memcpy(block, sw->lft + (lid / 64) * 64, sizeof(block));
    block[lid % 64] = port;
    g_assert_cmphex(sm_request(sw, s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_LFT, lid / 64, block, NULL), ==,
                    VHCA_SMP_DIRECTION);
    if (lid > sw->lft_top) {
        sm_request(sw, s, 1, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_SWITCH_INFO,
                   0, NULL, si);
        vhca_mad_set(si, VHCA_SI_LFT_TOP, lid);
        vhca_mad_set(si, VHCA_SI_PORT_STATE_CHANGE, 0);
        sm_request(sw, s, 1, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_SWITCH_INFO,
                   0, si, NULL);
    }
    s->n = 0;
}

static void test_node_info(void)
{
    uint8_t d[VHCA_SMP_DATA_LEN];
    VhcaSwitch sw;
    Sent s;

    switch_new(&sw, &s);
    g_assert_cmphex(sm_request(&sw, &s, 3, VHCA_MAD_METHOD_GET,
                               VHCA_SMP_ATTR_NODE_INFO, 0, NULL, d), ==,
                    VHCA_SMP_DIRECTION);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_NI_NODE_TYPE), ==,
                     VHCA_NODE_TYPE_SWITCH);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_NI_NUM_PORTS), ==, NPORTS);
    g_assert_cmphex(vhca_ld_be64(d + VHCA_NI_NODE_GUID), ==, GUID);
    g_assert_cmphex(vhca_ld_be64(d + VHCA_NI_PORT_GUID), ==, GUID);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_NI_LOCAL_PORT_NUM), ==, 3);
    g_assert_cmphex(sm_request(&sw, &s, 3, VHCA_MAD_METHOD_GET,
                               VHCA_SMP_ATTR_NODE_DESC, 0, NULL, d), ==,
                    VHCA_SMP_DIRECTION);
    g_assert_cmpstr((char *)d, ==, "vhca switch 1");
    /* A CA's attribute the switch lacks, a method it has not. */
    g_assert_cmphex(sm_request(&sw, &s, 3, VHCA_MAD_METHOD_GET,
                               VHCA_SMP_ATTR_SM_INFO, 0, NULL, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_UNSUP_ATTR);
    g_assert_cmphex(sm_request(&sw, &s, 3, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_NODE_INFO, 0, d, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_UNSUP_ATTR);
    g_assert_cmphex(sm_request(&sw, &s, 3, 0x10, VHCA_SMP_ATTR_NODE_INFO, 0,
                               NULL, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_UNSUP_METHOD);
}

/* PortInfo of each port; states as the SM moves them; the switch's LID. */
static void test_port_info(void)
{
    uint8_t d[VHCA_SMP_DATA_LEN];
    VhcaSwitch sw;
    Sent s;

    switch_new(&sw, &s);
    vhca_switch_set_cable(&sw, 4, false);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_PORT_INFO, 2,
               NULL, d);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_PORT_STATE), ==,
                     VHCA_PORT_INIT);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_LINK_UP);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_LOCAL_PORT_NUM), ==, 1);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_PORT_INFO, 4,
               NULL, d);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_PORT_STATE), ==,
                     VHCA_PORT_DOWN);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_POLLING);
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_GET,
                               VHCA_SMP_ATTR_PORT_INFO, NPORTS + 1, NULL, d),
                    ==, VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_INVALID_VALUE);
    /* ACTIVE straight from INIT is not a transition (7.2). */
    memset(d, 0, sizeof(d));
    vhca_mad_set(d, VHCA_PI_PORT_STATE, VHCA_PORT_ACTIVE);
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_PORT_INFO, 2, d, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_INVALID_VALUE);
    vhca_switch_set_cable(&sw, 4, true);
    sm_configure(&sw, &s);
    g_assert_cmpuint(sw.port[2].state, ==, VHCA_PORT_ACTIVE);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_PORT_INFO, 0,
               NULL, d);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_LID), ==, 7);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PI_MASTER_SM_LID), ==, 1);
}

/* 14.2.5.4: PortStateChange follows the external ports; 1 clears it. */
static void test_switch_info(void)
{
    uint8_t d[VHCA_SMP_DATA_LEN];
    VhcaSwitch sw;
    Sent s;

    switch_new(&sw, &s);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_SWITCH_INFO, 0,
               NULL, d);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_SI_LFT_CAP), ==,
                     VHCA_SWITCH_LFT_CAP);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_SI_MFT_CAP), ==,
                     VHCA_SWITCH_MFT_CAP);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_SI_PORT_STATE_CHANGE), ==, 1);
    vhca_mad_set(d, VHCA_SI_LFT_TOP, 100);
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_SWITCH_INFO, 0, d, d), ==,
                    VHCA_SMP_DIRECTION);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_SI_PORT_STATE_CHANGE), ==, 0);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_SI_LFT_TOP), ==, 100);
    vhca_switch_set_cable(&sw, 3, false);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_SWITCH_INFO, 0,
               NULL, d);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_SI_PORT_STATE_CHANGE), ==, 1);
    g_assert_cmpuint(sw.port[3].link_downed, ==, 1);
    /* LinearFDBTop past LinearFDBCap. */
    vhca_mad_set(d, VHCA_SI_LFT_TOP, VHCA_SWITCH_LFT_CAP);
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_SWITCH_INFO, 0, d, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_INVALID_VALUE);
}

/* A DR SMP through the switch to a node behind port 3, and back. */
static void test_dr_forwarding(void)
{
    static const uint8_t path[] = { 3 };
    uint8_t mad[VHCA_MAD_SIZE];
    const uint8_t *fwd;
    VhcaWirePacket pkt;
    VhcaSwitch sw;
    Sent s;

    switch_new(&sw, &s);
    vhca_smp_init_dr(mad, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_NODE_INFO, 0,
                     TID, 2, path);
    deliver_smp(&sw, 1, mad);
    g_assert_cmpuint(s.n, ==, 1);
    g_assert_cmpuint(s.out[0].port, ==, 3);
    fwd = sent_mad(&s, 0, &pkt);
    /* C14-9:2: the return path remembers the way in, the pointer moves. */
    g_assert_cmpuint(fwd[VHCA_MAD_HOP_PTR], ==, 2);
    g_assert_cmpuint(fwd[VHCA_SMP_DR_RETURN_PATH + 1], ==, 1);
    g_assert_cmphex(fwd[VHCA_MAD_METHOD], ==, VHCA_MAD_METHOD_GET);
    g_assert_cmphex(pkt.lrh.dlid, ==, VHCA_IB_LID_PERMISSIVE);

    /* The node's response (it took the pointer to 2, C14-13:1). */
    memcpy(mad, fwd, VHCA_MAD_SIZE);
    vhca_mad_make_response(mad, 0);
    deliver_smp(&sw, 3, mad);
    g_assert_cmpuint(s.n, ==, 2);
    g_assert_cmpuint(s.out[1].port, ==, 1);
    fwd = sent_mad(&s, 1, &pkt);
    g_assert_cmpuint(fwd[VHCA_MAD_HOP_PTR], ==, 1);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_DR], ==, 0);
}

/* C14-6, C14-9:5, C14-13:5 and paths naming no port: dropped, counted. */
static void test_dr_refused(void)
{
    static const uint8_t no_port[] = { NPORTS + 1 };
    static const uint8_t port0[] = { 0 };
    uint8_t mad[VHCA_MAD_SIZE];
    VhcaSwitch sw;
    Sent s;

    switch_new(&sw, &s);
    vhca_smp_init_dr(mad, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_NODE_INFO, 0,
                     TID, 64, NULL);
    deliver_smp(&sw, 1, mad);
    vhca_smp_init_dr(mad, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_NODE_INFO, 0,
                     TID, 1, NULL);
    mad[VHCA_MAD_HOP_PTR] = 0;
    deliver_smp(&sw, 1, mad);
    mad[VHCA_MAD_HOP_PTR] = 3;
    deliver_smp(&sw, 1, mad);
    vhca_smp_init_dr(mad, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_NODE_INFO, 0,
                     TID, 2, no_port);
    deliver_smp(&sw, 1, mad);
    vhca_smp_init_dr(mad, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_NODE_INFO, 0,
                     TID, 2, port0);
    deliver_smp(&sw, 1, mad);
    /* A returning SMP whose pointer is not on a hop of ours. */
    vhca_smp_init_dr(mad, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_NODE_INFO, 0,
                     TID, 2, NULL);
    vhca_mad_make_response(mad, 0);
    mad[VHCA_MAD_HOP_PTR] = 1;
    deliver_smp(&sw, 1, mad);
    mad[VHCA_MAD_HOP_PTR] = 9;
    deliver_smp(&sw, 1, mad);
    g_assert_cmpuint(s.n, ==, 0);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_DR], ==, 7);
}

/* Data by DLID through the LFT the SM wrote; the rest dropped, counted. */
static void test_lft_forwarding(void)
{
    uint8_t frame[1024], payload[64] = { 0 };
    uint8_t d[VHCA_SMP_DATA_LEN];
    VhcaSwitch sw;
    size_t len;
    Sent s;

    switch_new(&sw, &s);
    /* Ports not ACTIVE yet: INIT takes SMPs only. */
    len = packet(frame, 0, 5, 1, 0x42, payload, sizeof(payload));
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_PORT_STATE], ==, 1);

    sm_configure(&sw, &s);
    set_lft(&sw, &s, 5, 2);
    memset(d, 0, sizeof(d));
    vhca_mad_set(d, VHCA_SI_LFT_TOP, 63);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_SWITCH_INFO, 0,
               d, NULL);
    s.n = 0;
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(s.n, ==, 1);
    g_assert_cmpuint(s.out[0].port, ==, 2);
    g_assert_cmpmem(s.out[0].data, s.out[0].len, frame, len);

    /* No entry; back out of its own port; to the switch's own LID. */
    len = packet(frame, 0, 6, 1, 0x42, payload, sizeof(payload));
    vhca_switch_receive(&sw, 1, frame, len);
    len = packet(frame, 0, 5, 1, 0x42, payload, sizeof(payload));
    vhca_switch_receive(&sw, 2, frame, len);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_NO_ROUTE], ==, 2);
    len = packet(frame, 0, 7, 1, 0x42, payload, sizeof(payload));
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_NOT_OURS], ==, 1);
    g_assert_cmpuint(s.n, ==, 1);

    /* A block past LinearFDBCap. */
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_LFT, VHCA_SWITCH_LFT_CAP / 64,
                               d, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_INVALID_VALUE);
    /* A damaged packet: the VCRC. */
    len = packet(frame, 0, 5, 1, 0x42, payload, sizeof(payload));
    frame[len - 1] ^= 1;
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_MALFORMED], ==, 1);
    g_assert_cmpuint(sw.port[1].rcv_errors, ==, 1);
}

/* A LID routed SMP to the switch's LID, answered by the LFT's way back. */
static void test_lid_routed_smp(void)
{
    uint8_t frame[1024], mad[VHCA_MAD_SIZE];
    const uint8_t *resp;
    VhcaWirePacket pkt;
    VhcaSwitch sw;
    size_t len;
    Sent s;

    switch_new(&sw, &s);
    sm_configure(&sw, &s);
    set_lft(&sw, &s, 1, 3);
    vhca_mad_init(mad, VHCA_MGMT_CLASS_SUBN_LID, VHCA_MAD_METHOD_GET,
                  VHCA_SMP_ATTR_NODE_INFO, 0, 0);
    len = vhca_wire_build_smp(mad, 7, 1, frame, sizeof(frame));
    vhca_switch_receive(&sw, 3, frame, len);
    g_assert_cmpuint(s.n, ==, 1);
    g_assert_cmpuint(s.out[0].port, ==, 3);
    resp = sent_mad(&s, 0, &pkt);
    g_assert_cmphex(resp[VHCA_MAD_METHOD], ==, VHCA_MAD_METHOD_GET_RESP);
    g_assert_cmphex(pkt.lrh.dlid, ==, 1);
    g_assert_cmphex(pkt.lrh.slid, ==, 7);
    /* VL15 that is not an SMP to QP0. */
    len = packet(frame, VHCA_IB_VL_SMP, 7, 1, 1, mad, sizeof(mad));
    vhca_switch_receive(&sw, 3, frame, len);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_VL15], ==, 1);
}

/* 18.2.4.3: every port of the MLID's entry but the one it came in on. */
static void test_mft_forwarding(void)
{
    uint8_t frame[1024], payload[64] = { 0 };
    uint8_t block[VHCA_SMP_DATA_LEN] = { 0 };
    uint8_t d[VHCA_SMP_DATA_LEN];
    VhcaSwitch sw;
    size_t len;
    Sent s;

    switch_new(&sw, &s);
    sm_configure(&sw, &s);
    /* MLID 0xC001: ports 1, 2 and 4 (bits of position 0). */
    vhca_st_be16(block + 2, (1 << 1) | (1 << 2) | (1 << 4));
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_MFT, 0, block, d), ==,
                    VHCA_SMP_DIRECTION);
    g_assert_cmphex(vhca_ld_be16(d + 2), ==, 0x16);
    /* Position 1 is ports 16-31: this switch has none. */
    g_assert_cmphex(sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET,
                               VHCA_SMP_ATTR_MFT, 1u << 28, block, d), ==,
                    VHCA_SMP_DIRECTION | VHCA_MAD_STATUS_INVALID_VALUE);
    s.n = 0;
    len = packet(frame, 0, 0xc001, 1, 0xffffff, payload, sizeof(payload));
    vhca_switch_receive(&sw, 2, frame, len);
    g_assert_cmpuint(s.n, ==, 2);
    g_assert_cmpuint(s.out[0].port, ==, 1);
    g_assert_cmpuint(s.out[1].port, ==, 4);
    /* An MLID nobody joined. */
    len = packet(frame, 0, 0xc002, 1, 0xffffff, payload, sizeof(payload));
    vhca_switch_receive(&sw, 2, frame, len);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_NO_ROUTE], ==, 1);
}

/*
 * 10.9.4: with enforcement on, a port passes only its partitions' packets
 * - inbound from its CA, outbound to it - and counts the others.
 */
static void test_partition_enforcement(void)
{
    uint8_t frame[1024], payload[64] = { 0 };
    uint8_t pi[VHCA_SMP_DATA_LEN], pkeys[VHCA_SMP_DATA_LEN] = { 0 };
    VhcaWirePacket pkt;
    VhcaSwitch sw;
    size_t len;
    Sent s;

    switch_new(&sw, &s);
    sm_configure(&sw, &s);
    set_lft(&sw, &s, 5, 2);
    set_lft(&sw, &s, 6, 1);
    /* Port 1: default and 0x8001; port 2: 0x8001 only; both enforce. */
    vhca_st_be16(pkeys, 0xffff);
    vhca_st_be16(pkeys + 2, 0x8001);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_PKEY_TABLE,
               1u << 16, pkeys, NULL);
    vhca_st_be16(pkeys, 0x8001);
    vhca_st_be16(pkeys + 2, 0);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_PKEY_TABLE,
               2u << 16, pkeys, NULL);
    memset(pi, 0, sizeof(pi));
    vhca_mad_set(pi, VHCA_PI_PART_ENF_INBOUND, 1);
    vhca_mad_set(pi, VHCA_PI_PART_ENF_OUTBOUND, 1);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_PORT_INFO, 1,
               pi, NULL);
    sm_request(&sw, &s, 1, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_PORT_INFO, 2,
               pi, pi);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_PART_ENF_OUTBOUND), ==, 1);
    s.n = 0;

    /* In port 1's partitions, in port 2's: through. */
    vhca_wire_ib_init(&pkt, 0, 5, 6, VHCA_IB_OPCODE(RC, SEND_ONLY), 0x8001,
                      0x42);
    pkt.payload = payload;
    pkt.payload_len = sizeof(payload);
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(s.n, ==, 1);
    /* Not port 1's: refused coming in. */
    pkt.tp.bth.pkey = 0x8002;
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(sw.port[1].rcv_constraint_errors, ==, 1);
    /* Port 1's, not port 2's: refused going out. */
    pkt.tp.bth.pkey = 0xffff;
    len = vhca_wire_build(&pkt, frame, sizeof(frame));
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmpuint(sw.port[2].xmit_constraint_errors, ==, 1);
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_PKEY], ==, 2);
    g_assert_cmpuint(s.n, ==, 1);
}

/* A PerfMgt Get of port @port's counters, LID routed to the switch. */
static uint16_t pma_get(VhcaSwitch *sw, Sent *s, uint16_t attr,
                        uint8_t port, uint8_t *data)
{
    uint8_t frame[VHCA_WIRE_GMP_LEN], mad[VHCA_MAD_SIZE];
    VhcaWirePacket pkt;
    size_t len;

    vhca_mad_init(mad, VHCA_MGMT_CLASS_PERF, VHCA_MAD_METHOD_GET, attr, 0,
                  0);
    vhca_mad_set(mad + VHCA_PMA_DATA, VHCA_PMA_PORT_SELECT, port);
    /* From the performance manager's QP1 at LID 1. */
    len = vhca_wire_build_gmp(mad, 0, 7, 1, 0xffff, VHCA_GSI_QPN, frame,
                              sizeof(frame));
    s->n = 0;
    vhca_switch_receive(sw, 3, frame, len);
    g_assert_cmpuint(s->n, ==, 1);
    g_assert_cmpuint(s->out[0].port, ==, 3);        /* LFT: LID 1 */
    g_assert_cmpuint(vhca_wire_parse_lrh(s->out[0].data, s->out[0].len,
                                         &pkt), ==, VHCA_WIRE_OK);
    g_assert_cmpuint(vhca_wire_parse_ib(s->out[0].data, s->out[0].len,
                                        &pkt), ==, VHCA_WIRE_OK);
    g_assert_cmpuint(pkt.lrh.vl, ==, 0);
    g_assert_cmphex(pkt.lrh.dlid, ==, 1);
    g_assert_cmphex(pkt.lrh.slid, ==, 7);
    g_assert_cmpuint(pkt.tp.bth.dest_qpn, ==, 1);
    g_assert_cmphex(pkt.tp.deth.qkey, ==, VHCA_GSI_QKEY);
    g_assert_cmphex(pkt.payload[VHCA_MAD_METHOD], ==,
                    VHCA_MAD_METHOD_GET_RESP);
    memcpy(data, pkt.payload + VHCA_PMA_DATA, VHCA_PMA_DATA_LEN);
    s->n = 0;
    return vhca_ld_be16(pkt.payload + VHCA_MAD_STATUS);
}

/* perfquery of a switch port: PortCounters and PortCountersExtended. */
static void test_pma(void)
{
    uint8_t frame[1024], payload[100] = { 0 }, d[VHCA_PMA_DATA_LEN];
    VhcaSwitch sw;
    size_t len;
    Sent s;

    switch_new(&sw, &s);
    sm_configure(&sw, &s);
    set_lft(&sw, &s, 1, 3);
    set_lft(&sw, &s, 5, 2);
    len = packet(frame, 0, 5, 1, 0x42, payload, sizeof(payload));
    vhca_switch_receive(&sw, 1, frame, len);
    vhca_switch_receive(&sw, 1, frame, len);
    g_assert_cmphex(pma_get(&sw, &s, VHCA_PMA_ATTR_PORT_COUNTERS, 2, d), ==,
                    0);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PMA_PORT_SELECT), ==, 2);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PC_XMIT_PKTS), ==, 2);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PC_XMIT_DATA), ==,
                     2 * (len - VHCA_IB_VCRC_LEN) / 4);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_PC_RCV_PKTS), ==, 0);
    g_assert_cmphex(pma_get(&sw, &s, VHCA_PMA_ATTR_PORT_COUNTERS_EXT, 1, d),
                    ==, 0);
    g_assert_cmpuint(vhca_ld_be64(d + VHCA_PCE_RCV_PKTS), >=, 2);
    g_assert_cmphex(pma_get(&sw, &s, VHCA_PMA_ATTR_PORT_COUNTERS,
                            NPORTS + 1, d), ==,
                    VHCA_MAD_STATUS_INVALID_VALUE);
    g_assert_cmphex(pma_get(&sw, &s, VHCA_PMA_ATTR_CLASS_PORT_INFO, 0, d), ==,
                    0);
    g_assert_cmphex(pma_get(&sw, &s, 0x0099, 1, d), ==,
                    VHCA_MAD_STATUS_UNSUP_ATTR);
}

/* Garbage of every length from a port: dropped, counted, never a crash. */
static void test_hostile_bytes(void)
{
    uint8_t frame[600];
    VhcaSwitch sw;
    GRand *r = g_rand_new_with_seed(27);
    unsigned i, j;
    Sent s;

    switch_new(&sw, &s);
    for (i = 0; i < 2000; i++) {
        size_t len = g_rand_int_range(r, 0, sizeof(frame));

        for (j = 0; j < len; j++) {
            frame[j] = g_rand_int(r);
        }
        vhca_switch_receive(&sw, 1 + i % NPORTS, frame, len);
        vhca_switch_receive(&sw, 0, frame, len);
        vhca_switch_receive(&sw, NPORTS + 1, frame, len);
    }
    g_assert_cmpuint(sw.drops[VHCA_SWITCH_DROP_MALFORMED], ==, 2000);
    g_assert_cmpuint(s.n, ==, 0);
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/switch/node-info", test_node_info);
    g_test_add_func("/vhca/switch/port-info", test_port_info);
    g_test_add_func("/vhca/switch/switch-info", test_switch_info);
    g_test_add_func("/vhca/switch/dr-forwarding", test_dr_forwarding);
    g_test_add_func("/vhca/switch/dr-refused", test_dr_refused);
    g_test_add_func("/vhca/switch/lft-forwarding", test_lft_forwarding);
    g_test_add_func("/vhca/switch/lid-routed-smp", test_lid_routed_smp);
    g_test_add_func("/vhca/switch/mft-forwarding", test_mft_forwarding);
    g_test_add_func("/vhca/switch/partition-enforcement",
                    test_partition_enforcement);
    g_test_add_func("/vhca/switch/pma", test_pma);
    g_test_add_func("/vhca/switch/hostile-bytes", test_hostile_bytes);
    return g_test_run();
}
