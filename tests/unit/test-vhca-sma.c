/*
 * vhca engine unit tests: the InfiniBand port's state machine and its
 * management agents (docs/specs/vhca.rst, "InfiniBand port: management
 * agents"), through the MAD_IFC and MODIFY_PORT commands as the driver
 * issues them: the SMA (IBTA 14.2), LID routed and directed route, M_Key
 * protection (14.2.4), the PMA (16.1), and MADs the agents must refuse.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-harness.h"
#include "vhca-ib.h"
#include "vhca-mad.h"

#define LID_ROUTED      VHCA_MGMT_CLASS_SUBN_LID
#define DIRECTED        VHCA_MGMT_CLASS_SUBN_DR
#define PERF            VHCA_MGMT_CLASS_PERF
#define GET             VHCA_MAD_METHOD_GET
#define SET             VHCA_MAD_METHOD_SET
#define REPLY           VHCA_MAD_RESULT_REPLY
#define CONSUMED        VHCA_MAD_RESULT_CONSUMED
#define IGNORE_MKEY     VHCA_MAD_IFC_IGNORE_MKEY
#define ST_INVALID      VHCA_MAD_STATUS_INVALID_VALUE
#define ST_UNSUP_ATTR   VHCA_MAD_STATUS_UNSUP_ATTR
#define NODE_GUID       0x505400fffe123456ull   /* harness MAC */
#define PORT_GUID       0x505400fffd123456ull   /* ff:fd in the middle */

/* The async events other than CMD_DONE, as the driver would see them. */
typedef struct Event {
    uint8_t type, subtype;
} Event;

static Event events[64];
static unsigned nevents;

static void drain_events(Harness *h)
{
    uint32_t pi = reg_read(h, VHCA_REG_AEQ_PI);

    for (; h->aeq_ci != pi; h->aeq_ci++) {
        struct vhca_eqe eqe = aeq_entry(h, h->aeq_ci);

        if (eqe.type != VHCA_EQE_CMD_DONE) {
            g_assert_cmpuint(GUINT32_FROM_LE(eqe.data[0]), ==, 1);
            g_assert_cmpuint(nevents, <, G_N_ELEMENTS(events));
            events[nevents].type = eqe.type;
            events[nevents].subtype = eqe.subtype;
            nevents++;
        }
    }
    reg_write(h, VHCA_REG_AEQ_DB, pi);
}

static void assert_events(Harness *h, const Event *want, unsigned n)
{
    drain_events(h);
    g_assert_cmpuint(nevents, ==, n);
    for (unsigned i = 0; i < n; i++) {
        g_assert_cmpuint(events[i].type, ==, want[i].type);
        g_assert_cmpuint(events[i].subtype, ==, want[i].subtype);
    }
    nevents = 0;
}

static void assert_no_events(Harness *h)
{
    assert_events(h, NULL, 0);
}

#define PORT_EV(state)  { VHCA_EQE_PORT_CHANGE, VHCA_PORT_##state }
#define MGMT_EV(what)   { VHCA_EQE_PORT_MGMT, VHCA_EVENT_##what }

/* An IB device, enabled, with the cable in: the port is INIT. */
static Harness *ib_new(void)
{
    VhcaCoreConfig cfg = harness_default_cfg;
    Harness *h;

    cfg.link = VHCA_LINK_IB;
    h = harness_new(&cfg);
    vhca_ib_port_reset(&h->core);
    harness_enable(h);
    nevents = 0;
    return h;
}

static void mad_init(uint8_t *mad, uint8_t mgmt_class, uint8_t method,
                     uint16_t attr, uint32_t mod)
{
    memset(mad, 0, VHCA_MAD_SIZE);
    mad[VHCA_MAD_BASE_VERSION] = 1;
    mad[VHCA_MAD_MGMT_CLASS] = mgmt_class;
    mad[VHCA_MAD_CLASS_VERSION] = 1;
    mad[VHCA_MAD_METHOD] = method;
    vhca_st_be64(mad + VHCA_MAD_TID, 0x1234567890abcdefull);
    vhca_st_be16(mad + VHCA_MAD_ATTR_ID, attr);
    vhca_st_be32(mad + VHCA_MAD_ATTR_MOD, mod);
    if (mgmt_class == DIRECTED) {
        /* As the kernel hands it over: the hops done, D clear. */
        mad[VHCA_MAD_HOP_PTR] = 2;
        mad[VHCA_MAD_HOP_CNT] = 1;
        vhca_st_be16(mad + 32, 0xffff);     /* DrSLID */
        mad[128 + 1] = 7;                       /* InitialPath[1] */
    }
}

/* MAD_IFC with @in; *out gets out_mad.  Returns the command status. */
static uint8_t mad_ifc_cmd(Harness *h, uint8_t port, uint8_t flags,
                           const uint8_t *in, uint8_t *out, uint8_t *result,
                           uint32_t mbox_len)
{
    struct vhca_cmd_dma_in cmd = {
        .addr = GUINT64_TO_LE(MBOX_ADDR),
        .len = GUINT32_TO_LE(mbox_len),
    };
    struct vhca_mad_ifc mbox;
    uint8_t cmd_out[16];
    uint8_t status;

    memset(&mbox, 0, sizeof(mbox));
    mbox.port = port;
    mbox.flags = flags;
    memcpy(mbox.in_mad, in, VHCA_MAD_SIZE);
    memset(mbox.out_mad, 0xee, VHCA_MAD_SIZE);
    ram_write(h, MBOX_ADDR, &mbox, sizeof(mbox));
    status = admin_cmd(h, VHCA_CMD_MAD_IFC, 0x4d41, &cmd, sizeof(cmd),
                       cmd_out);
    ram_read(h, MBOX_ADDR, &mbox, sizeof(mbox));
    if (out) {
        memcpy(out, mbox.out_mad, VHCA_MAD_SIZE);
    }
    if (result) {
        *result = cmd_out[0];
    }
    drain_events(h);
    return status;
}

/* A MAD the command takes: returns the agent's result bits. */
static uint8_t mad(Harness *h, uint8_t flags, const uint8_t *in,
                   uint8_t *out)
{
    uint8_t result;

    g_assert_cmpuint(mad_ifc_cmd(h, 1, flags, in, out, &result,
                                 sizeof(struct vhca_mad_ifc)), ==,
                     VHCA_ST_OK);
    return result;
}

static uint16_t mad_status(const uint8_t *out)
{
    return vhca_ld_be16(out + VHCA_MAD_STATUS);
}

/*
 * A Get or Set that must be answered: the response is the request with
 * method GetResp and a status (returned; D bit left out), the rest of
 * the header untouched.  @data: the attribute for a Set (@len bytes),
 * the response's data for both.
 */
static uint16_t smp(Harness *h, uint8_t mgmt_class, uint8_t flags,
                    uint8_t method, uint16_t attr, uint32_t mod,
                    uint8_t *data, size_t len)
{
    uint8_t in[VHCA_MAD_SIZE], out[VHCA_MAD_SIZE];
    size_t off = mgmt_class == PERF ? VHCA_PMA_DATA : VHCA_SMP_DATA;
    uint16_t status;

    mad_init(in, mgmt_class, method, attr, mod);
    if (method == SET || mgmt_class == PERF) {
        memcpy(in + off, data, len);
    }
    g_assert_cmpuint(mad(h, flags, in, out), ==, REPLY);
    g_assert_cmphex(out[VHCA_MAD_METHOD], ==, VHCA_MAD_METHOD_GET_RESP);
    g_assert_cmpmem(out, VHCA_MAD_METHOD, in, VHCA_MAD_METHOD);
    g_assert_cmpmem(out + 6, 18, in + 6, 18);
    g_assert_cmpmem(out + 24, 40, in + 24, 40);
    status = mad_status(out);
    if (mgmt_class == DIRECTED) {
        /* 14.2.1.2: the device sets D; the route is the kernel's. */
        g_assert_cmphex(status & VHCA_SMP_DIRECTION, ==, VHCA_SMP_DIRECTION);
        status &= ~VHCA_SMP_DIRECTION;
        g_assert_cmpmem(out + 128, 128, in + 128, 128);
    } else if (mgmt_class == LID_ROUTED) {
        g_assert_cmphex(status & VHCA_SMP_DIRECTION, ==, 0);
    }
    memcpy(data, out + off, len);
    return status;
}

static uint16_t get_attr(Harness *h, uint16_t attr, uint32_t mod,
                         uint8_t *data)
{
    memset(data, 0, VHCA_SMP_DATA_LEN);
    return smp(h, LID_ROUTED, 0, GET, attr, mod, data, VHCA_SMP_DATA_LEN);
}

static uint16_t set_attr(Harness *h, uint16_t attr, uint32_t mod,
                         uint8_t *data)
{
    return smp(h, LID_ROUTED, 0, SET, attr, mod, data, VHCA_SMP_DATA_LEN);
}

static void port_info(Harness *h, uint8_t *pi)
{
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_PORT_INFO, 0, pi), ==, 0);
}

/*
 * PortInfo as an SM (opensm, ibportstate) starts a Set from: read, with
 * PortState and PortPhysicalState 0, "no change" (14.2.5.6).
 */
static void sm_port_info(Harness *h, uint8_t *pi)
{
    port_info(h, pi);
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_PHYS_STATE, 0);
}

static uint32_t pi_field(Harness *h, VhcaMadField f)
{
    uint8_t pi[VHCA_SMP_DATA_LEN];

    port_info(h, pi);
    return vhca_mad_get(pi, f);
}

/* Get PortInfo, change one field, Set it: the response's status. */
static uint16_t pi_set(Harness *h, VhcaMadField f, uint32_t v)
{
    uint8_t pi[VHCA_SMP_DATA_LEN];

    sm_port_info(h, pi);
    vhca_mad_set(pi, f, v);
    return set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 0, pi);
}

/* ---------------------------------------------------------------------- */

static void test_eth_port_refuses(void)
{
    Harness *h = harness_new(NULL);
    struct vhca_cmd_modify_port_in mp = { .port = 1 };
    uint8_t in[VHCA_MAD_SIZE];

    harness_enable(h);
    mad_init(in, LID_ROUTED, GET, VHCA_SMP_ATTR_NODE_INFO, 0);
    g_assert_cmpuint(mad_ifc_cmd(h, 1, 0, in, NULL, NULL,
                                 sizeof(struct vhca_mad_ifc)), ==,
                     VHCA_ST_BAD_OPCODE);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_MODIFY_PORT, 1, &mp, sizeof(mp),
                               NULL), ==, VHCA_ST_BAD_OPCODE);
    g_assert_cmpuint(h->ev.err_admin_cmd.n, ==, 2);
    harness_free(h);
}

static void test_mad_ifc_command_errors(void)
{
    Harness *h = ib_new();
    struct vhca_cmd_dma_in bad = {
        .addr = GUINT64_TO_LE(BAD_ADDR),
        .len = GUINT32_TO_LE(sizeof(struct vhca_mad_ifc)),
    };
    uint8_t in[VHCA_MAD_SIZE];

    mad_init(in, LID_ROUTED, GET, VHCA_SMP_ATTR_NODE_INFO, 0);
    g_assert_cmpuint(mad_ifc_cmd(h, 1, 0, in, NULL, NULL,
                                 sizeof(struct vhca_mad_ifc) - 1), ==,
                     VHCA_ST_BAD_ADDR);
    g_assert_cmpuint(mad_ifc_cmd(h, 2, 0, in, NULL, NULL,
                                 sizeof(struct vhca_mad_ifc)), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(mad_ifc_cmd(h, 1, 0x80, in, NULL, NULL,
                                 sizeof(struct vhca_mad_ifc)), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_MAD_IFC, 1, &bad, sizeof(bad),
                               NULL), ==, VHCA_ST_BAD_ADDR);
    /* The mailbox ends past RAM: refused before anything happens. */
    bad.addr = GUINT64_TO_LE(RAM_BASE + RAM_SIZE - 300);
    g_assert_cmpuint(admin_cmd(h, VHCA_CMD_MAD_IFC, 1, &bad, sizeof(bad),
                               NULL), ==, VHCA_ST_BAD_ADDR);
    harness_free(h);
}

static void test_port_reset_and_link(void)
{
    Harness *h = ib_new();
    VhcaCore *core = &h->core;
    static const Event down[] = { PORT_EV(DOWN) };
    static const Event init[] = { PORT_EV(INIT) };
    uint16_t index = 99;

    g_assert_cmpuint(core->ib.state, ==, VHCA_PORT_INIT);
    g_assert_cmpstr(vhca_ib_port_state_name(core->ib.state), ==, "INIT");
    g_assert_cmpstr(vhca_ib_port_state_name(9), ==, "UNKNOWN");
    g_assert_cmphex(vhca_ib_node_guid(core), ==, NODE_GUID);
    g_assert_cmphex(vhca_ib_port_guid(core), ==, PORT_GUID);
    /* gid_tbl[0] = fe80::port GUID, an IB GID. */
    g_assert_true(core->gid_tbl[0].valid);
    g_assert_cmpuint(core->gid_tbl[0].type, ==, VHCA_GID_TYPE_IB);
    g_assert_cmphex(vhca_ld_be64(core->gid_tbl[0].gid), ==,
                    VHCA_IB_DEFAULT_GID_PREFIX);
    g_assert_cmphex(vhca_ld_be64(core->gid_tbl[0].gid + 8), ==,
                    PORT_GUID);
    g_assert_cmpuint(core->gid_tbl_top, ==, 1);
    g_assert_cmphex(vhca_ib_pkey_at(core, 0), ==, 0xffff);
    g_assert_cmphex(vhca_ib_pkey_at(core, 1), ==, 0);
    g_assert_cmphex(vhca_ib_pkey_at(core, 128), ==, 0);
    g_assert_true(vhca_ib_pkey_find(core, 0x7fff, &index));
    g_assert_cmpuint(index, ==, 0);

    g_assert_cmphex(pi_set(h, VHCA_PI_LID, 7), ==, 0);
    nevents = 0;
    /* Cable out: DOWN, LinkDowned, the LID forgotten; twice is once. */
    vhca_ib_port_set_link(core, false);
    vhca_ib_port_set_link(core, false);
    assert_events(h, down, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_LINK_DOWNED), ==, 1);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PORT_STATE), ==, VHCA_PORT_DOWN);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_POLLING);
    g_assert_cmpuint(pi_field(h, VHCA_PI_LID), ==, 0);
    /* ARMED only from INIT (7.2). */
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED), ==,
                    ST_INVALID);
    vhca_ib_port_set_link(core, true);
    vhca_ib_port_set_link(core, true);
    assert_events(h, init, 1);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_LINK_UP);

    /* Reset: power-on values; the cable is still in, so INIT. */
    core->ib.pkeys[5] = 0x1234;
    vhca_ib_port_reset(core);
    g_assert_cmphex(vhca_ib_pkey_at(core, 5), ==, 0);
    g_assert_cmpuint(core->ib.state, ==, VHCA_PORT_INIT);
    core->link_up = false;
    vhca_ib_port_reset(core);
    g_assert_cmpuint(core->ib.state, ==, VHCA_PORT_DOWN);
    g_assert_cmpuint(core->ib.phys_state, ==, VHCA_PORT_PHYS_POLLING);
    assert_no_events(h);
    harness_free(h);
}

static void test_node_info(void)
{
    Harness *h = ib_new();
    uint8_t classes[] = { LID_ROUTED, DIRECTED };
    uint8_t ni[VHCA_SMP_DATA_LEN];

    for (unsigned i = 0; i < G_N_ELEMENTS(classes); i++) {
        memset(ni, 0, sizeof(ni));
        g_assert_cmphex(smp(h, classes[i], 0, GET, VHCA_SMP_ATTR_NODE_INFO,
                            0, ni, sizeof(ni)), ==, 0);
        g_assert_cmpuint(vhca_mad_get(ni, VHCA_NI_BASE_VERSION), ==, 1);
        g_assert_cmpuint(vhca_mad_get(ni, VHCA_NI_CLASS_VERSION), ==, 1);
        g_assert_cmpuint(vhca_mad_get(ni, VHCA_NI_NODE_TYPE), ==, 1);
        g_assert_cmpuint(vhca_mad_get(ni, VHCA_NI_NUM_PORTS), ==, 1);
        g_assert_cmphex(vhca_ld_be64(ni + VHCA_NI_SYS_IMAGE_GUID), ==,
                        NODE_GUID);
        g_assert_cmphex(vhca_ld_be64(ni + VHCA_NI_NODE_GUID), ==,
                        NODE_GUID);
        g_assert_cmphex(vhca_ld_be64(ni + VHCA_NI_PORT_GUID), ==,
                        PORT_GUID);
        g_assert_cmpuint(vhca_mad_get(ni, VHCA_NI_PARTITION_CAP), ==, 128);
        g_assert_cmpuint(vhca_mad_get(ni, VHCA_NI_LOCAL_PORT_NUM), ==, 1);
        g_assert_cmphex(vhca_mad_get(ni, VHCA_NI_DEVICE_ID), ==,
                        VHCA_PCI_DEVICE_ID);
        g_assert_cmphex(vhca_mad_get(ni, VHCA_NI_VENDOR_ID), ==,
                        VHCA_PCI_VENDOR_ID);
    }
    /* AttributeModifier 0 only; NodeInfo is read-only. */
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_NODE_INFO, 1, ni), ==,
                    ST_INVALID);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_NODE_INFO, 0, ni), ==,
                    ST_UNSUP_ATTR);
    assert_no_events(h);
    harness_free(h);
}

static void test_node_description(void)
{
    Harness *h = ib_new();
    uint8_t nd[VHCA_SMP_DATA_LEN];
    uint8_t name[VHCA_SMP_DATA_LEN] = "guest1 vhca_0";

    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_NODE_DESC, 0, nd), ==, 0);
    g_assert_cmpstr((char *)nd, ==, "vhca");
    /* The SM may not set it (14.2.5.2)... */
    memcpy(nd, name, sizeof(nd));
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_NODE_DESC, 0, nd), ==,
                    ST_UNSUP_ATTR);
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_NODE_DESC, 0, nd), ==, 0);
    g_assert_cmpstr((char *)nd, ==, "vhca");
    /* ...the driver does, with IGNORE_MKEY: the kernel's node_desc. */
    memcpy(nd, name, sizeof(nd));
    g_assert_cmphex(smp(h, DIRECTED, IGNORE_MKEY, SET,
                        VHCA_SMP_ATTR_NODE_DESC, 0, nd, sizeof(nd)), ==, 0);
    g_assert_cmpmem(nd, sizeof(nd), name, sizeof(name));
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_NODE_DESC, 0, nd), ==, 0);
    g_assert_cmpstr((char *)nd, ==, "guest1 vhca_0");
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_NODE_DESC, 3, nd), ==,
                    ST_INVALID);
    harness_free(h);
}

static void test_guid_info(void)
{
    Harness *h = ib_new();
    uint8_t gi[VHCA_SMP_DATA_LEN];
    static const uint8_t zero[56];

    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_GUID_INFO, 0, gi), ==, 0);
    g_assert_cmphex(vhca_ld_be64(gi), ==, PORT_GUID);
    g_assert_cmpmem(gi + 8, 56, zero, sizeof(zero));
    /* GUIDCap 1: index 0 is read-only, there is no block 1. */
    memset(gi, 0x42, sizeof(gi));
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_GUID_INFO, 0, gi), ==, 0);
    g_assert_cmphex(vhca_ld_be64(gi), ==, PORT_GUID);
    g_assert_cmpmem(gi + 8, 56, zero, sizeof(zero));
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_GUID_INFO, 1, gi), ==,
                    ST_INVALID);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_GUID_INFO, 1, gi), ==,
                    ST_INVALID);
    assert_no_events(h);
    harness_free(h);
}

static void test_port_info_get(void)
{
    Harness *h = ib_new();
    uint8_t pi[VHCA_SMP_DATA_LEN];

    memset(pi, 0, sizeof(pi));
    g_assert_cmphex(smp(h, DIRECTED, 0, GET, VHCA_SMP_ATTR_PORT_INFO, 1, pi,
                        sizeof(pi)), ==, 0);
    g_assert_cmphex(vhca_ld_be64(pi + VHCA_PI_MKEY), ==, 0);
    g_assert_cmphex(vhca_ld_be64(pi + VHCA_PI_GID_PREFIX), ==,
                    VHCA_IB_DEFAULT_GID_PREFIX);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LID), ==, 0);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_MASTER_SM_LID), ==, 0);
    g_assert_cmphex(vhca_mad_get(pi, VHCA_PI_CAP_MASK), ==,
                    VHCA_PORT_CAP_TRAP | VHCA_PORT_CAP_SYS_IMAGE_GUID |
                    VHCA_PORT_CAP_CAP_MASK_NOTICE |
                    VHCA_PORT_CAP_CLIENT_REREGISTER |
                    VHCA_PORT_CAP_OTHER_LOCAL_CHANGES);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LOCAL_PORT_NUM), ==, 1);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_WIDTH_SUPPORTED), ==, 3);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_WIDTH_ENABLED), ==, 3);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_WIDTH_ACTIVE), ==,
                     VHCA_IB_PORT_WIDTH);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_SPEED_SUPPORTED), ==, 7);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_SPEED_ACTIVE), ==,
                     VHCA_IB_PORT_SPEED);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_PORT_STATE), ==,
                     VHCA_PORT_INIT);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_LINK_UP);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_DOWN_DEFAULT), ==, 2);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_NEIGHBOR_MTU), ==, 5);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_MTU_CAP), ==, 5);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_VL_CAP), ==, 1);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_OPERATIONAL_VLS), ==, 1);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_VL_ARB_HIGH_CAP), ==, 8);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_VL_ARB_LOW_CAP), ==, 8);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_GUID_CAP), ==, 1);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_RESP_TIME_VALUE), ==, 18);
    /* AttributeModifier: the port, 0 or 1. */
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_PORT_INFO, 2, pi), ==,
                    ST_INVALID);
    harness_free(h);
}

static void test_port_info_set(void)
{
    Harness *h = ib_new();
    static const Event want[] = {
        MGMT_EV(SM_CHANGE), MGMT_EV(LID_CHANGE), MGMT_EV(GID_CHANGE),
        MGMT_EV(CLIENT_REREGISTER),
    };
    static const Event rereg[] = { MGMT_EV(CLIENT_REREGISTER) };
    uint8_t pi[VHCA_SMP_DATA_LEN];

    sm_port_info(h, pi);
    vhca_mad_set(pi, VHCA_PI_LID, 0x21);
    vhca_mad_set(pi, VHCA_PI_LMC, 2);
    vhca_mad_set(pi, VHCA_PI_MASTER_SM_LID, 1);
    vhca_mad_set(pi, VHCA_PI_MASTER_SM_SL, 3);
    vhca_st_be64(pi + VHCA_PI_GID_PREFIX, 0xfec0000000000001ull);
    vhca_mad_set(pi, VHCA_PI_CLIENT_REREGISTER, 1);
    vhca_mad_set(pi, VHCA_PI_SUBNET_TIMEOUT, 18);
    vhca_mad_set(pi, VHCA_PI_NEIGHBOR_MTU, VHCA_IB_MTU_2048);
    vhca_mad_set(pi, VHCA_PI_LINK_WIDTH_ENABLED, VHCA_PI_WIDTH_1X);
    vhca_mad_set(pi, VHCA_PI_LINK_SPEED_ENABLED, 3);
    vhca_mad_set(pi, VHCA_PI_LOCAL_PHY_ERRORS, 8);
    vhca_mad_set(pi, VHCA_PI_CAP_MASK, 0xffffffff);     /* read-only */
    vhca_mad_set(pi, VHCA_PI_MKEY_LEASE_PERIOD, 60);
    g_assert_cmphex(smp(h, DIRECTED, 0, SET, VHCA_SMP_ATTR_PORT_INFO, 0, pi,
                        sizeof(pi)), ==, 0);
    assert_events(h, want, G_N_ELEMENTS(want));
    /* The response is the new PortInfo; ClientReregister reads 0. */
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LID), ==, 0x21);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LMC), ==, 2);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_MASTER_SM_LID), ==, 1);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_MASTER_SM_SL), ==, 3);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_CLIENT_REREGISTER), ==, 0);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_SUBNET_TIMEOUT), ==, 18);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_NEIGHBOR_MTU), ==, 4);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_WIDTH_ACTIVE), ==,
                     VHCA_PI_WIDTH_1X);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_SPEED_ACTIVE), ==,
                     VHCA_PI_SPEED_DDR);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LOCAL_PHY_ERRORS), ==, 8);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_MKEY_LEASE_PERIOD), ==, 60);
    g_assert_cmphex(vhca_mad_get(pi, VHCA_PI_CAP_MASK), ==,
                    VHCA_PORT_CAP_TRAP | VHCA_PORT_CAP_SYS_IMAGE_GUID |
                    VHCA_PORT_CAP_CAP_MASK_NOTICE |
                    VHCA_PORT_CAP_CLIENT_REREGISTER |
                    VHCA_PORT_CAP_OTHER_LOCAL_CHANGES);
    g_assert_cmpuint(h->core.ib.lid, ==, 0x21);
    g_assert_cmphex(vhca_ld_be64(h->core.gid_tbl[0].gid), ==,
                    0xfec0000000000001ull);
    g_assert_cmphex(vhca_ld_be64(h->core.gid_tbl[0].gid + 8), ==,
                    PORT_GUID);

    /* The same again: only the reregistration is news. */
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_PHYS_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_CLIENT_REREGISTER, 1);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 1, pi), ==, 0);
    assert_events(h, rereg, 1);
    /* All ones: every width and speed supported. */
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_PHYS_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_LINK_WIDTH_ENABLED, 0xff);
    vhca_mad_set(pi, VHCA_PI_LINK_SPEED_ENABLED, 0xf);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 1, pi), ==, 0);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_WIDTH_ENABLED), ==, 3);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_SPEED_ENABLED), ==, 7);
    /* 0: no change. */
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_PHYS_STATE, 0);
    vhca_mad_set(pi, VHCA_PI_LINK_WIDTH_ENABLED, 0);
    vhca_mad_set(pi, VHCA_PI_OPERATIONAL_VLS, 0);
    vhca_mad_set(pi, VHCA_PI_LINK_DOWN_DEFAULT, 0);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 1, pi), ==, 0);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_WIDTH_ENABLED), ==, 3);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_OPERATIONAL_VLS), ==, 1);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_LINK_DOWN_DEFAULT), ==, 2);
    assert_no_events(h);
    harness_free(h);
}

/* Each bad field fails the whole Set: nothing changes, no event. */
static void test_port_info_invalid_values(void)
{
    static const struct {
        VhcaMadField field;
        uint32_t value;
    } bad[] = {
        { VHCA_PI_LID, 0xc000 },                /* multicast */
        { VHCA_PI_LID, 0xffff },                /* permissive */
        { VHCA_PI_LID, 0 },                     /* once a LID is set */
        { VHCA_PI_MASTER_SM_LID, 0xc001 },
        { VHCA_PI_PORT_STATE, VHCA_PORT_INIT },
        { VHCA_PI_PORT_STATE, VHCA_PORT_ACTIVE },   /* from INIT */
        { VHCA_PI_PORT_STATE, 5 },
        { VHCA_PI_PHYS_STATE, 1 },              /* Sleep */
        { VHCA_PI_PHYS_STATE, 5 },
        { VHCA_PI_LINK_DOWN_DEFAULT, 3 },
        { VHCA_PI_NEIGHBOR_MTU, 0 },
        { VHCA_PI_NEIGHBOR_MTU, 6 },
        { VHCA_PI_OPERATIONAL_VLS, 2 },         /* VLCap is VL0 */
        { VHCA_PI_LINK_WIDTH_ENABLED, 0x04 },   /* 8X */
        { VHCA_PI_LINK_SPEED_ENABLED, 0x8 },
    };
    Harness *h = ib_new();
    uint8_t pi[VHCA_SMP_DATA_LEN], before[VHCA_SMP_DATA_LEN];

    g_assert_cmphex(pi_set(h, VHCA_PI_LID, 9), ==, 0);
    nevents = 0;
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        port_info(h, before);
        sm_port_info(h, pi);
        vhca_mad_set(pi, bad[i].field, bad[i].value);
        /* A valid change in the same MAD must not happen either. */
        vhca_mad_set(pi, VHCA_PI_SUBNET_TIMEOUT, 31);
        vhca_mad_set(pi, VHCA_PI_CLIENT_REREGISTER, 1);
        g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 0, pi), ==,
                        ST_INVALID);
        /* The response shows the attribute as it is. */
        g_assert_cmpmem(pi, sizeof(pi), before, sizeof(before));
        port_info(h, pi);
        g_assert_cmpmem(pi, sizeof(pi), before, sizeof(before));
        assert_no_events(h);
    }
    sm_port_info(h, pi);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 2, pi), ==,
                    ST_INVALID);
    harness_free(h);
}

static void test_port_states(void)
{
    Harness *h = ib_new();
    static const Event armed[] = { PORT_EV(ARMED) };
    static const Event active[] = { PORT_EV(ACTIVE) };
    static const Event bounce[] = {
        PORT_EV(DOWN), PORT_EV(INIT), MGMT_EV(LID_CHANGE),
    };
    static const Event down[] = { PORT_EV(DOWN) };
    static const Event init[] = { PORT_EV(INIT) };
    uint8_t pi[VHCA_SMP_DATA_LEN];

    /* A port without a LID may still be Set with LID 0 (unchanged). */
    g_assert_cmphex(pi_set(h, VHCA_PI_SUBNET_TIMEOUT, 3), ==, 0);
    g_assert_cmphex(pi_set(h, VHCA_PI_LID, 3), ==, 0);
    nevents = 0;
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ACTIVE), ==,
                    ST_INVALID);
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED), ==, 0);
    assert_events(h, armed, 1);
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED), ==, 0);
    assert_no_events(h);
    /* A data packet activates an ARMED port (7.2). */
    vhca_ib_port_rx_data(&h->core);
    assert_events(h, active, 1);
    vhca_ib_port_rx_data(&h->core);
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ACTIVE), ==, 0);
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED), ==,
                    ST_INVALID);
    assert_no_events(h);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PORT_STATE), ==, VHCA_PORT_ACTIVE);

    /*
     * Down: the link goes down and retrains, and the Set's values apply
     * to the port that comes back: its LID (forgotten, then 4).
     */
    sm_port_info(h, pi);
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, VHCA_PORT_DOWN);
    vhca_mad_set(pi, VHCA_PI_LID, 4);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 0, pi), ==, 0);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_PORT_STATE), ==,
                     VHCA_PORT_INIT);
    assert_events(h, bounce, G_N_ELEMENTS(bounce));
    g_assert_cmpuint(h->core.ib.lid, ==, 4);
    g_assert_cmpuint(counter(h, VHCA_CNT_LINK_DOWNED), ==, 1);

    /* ARMED, then the cable goes: DOWN. */
    g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED), ==, 0);
    vhca_ib_port_set_link(&h->core, false);
    assert_events(h, (Event[]){ PORT_EV(ARMED), PORT_EV(DOWN) }, 2);

    /* Disabled by the SM: the cable does not bring it back... */
    vhca_ib_port_set_link(&h->core, true);
    assert_events(h, init, 1);
    g_assert_cmphex(pi_set(h, VHCA_PI_PHYS_STATE, VHCA_PORT_PHYS_DISABLED),
                    ==, 0);
    assert_events(h, down, 1);
    g_assert_cmpuint(counter(h, VHCA_CNT_LINK_DOWNED), ==, 3);
    vhca_ib_port_set_link(&h->core, false);
    vhca_ib_port_set_link(&h->core, true);
    assert_no_events(h);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_DISABLED);
    /* ...Polling does (only the driver can still reach the SMA). */
    g_assert_cmphex(pi_set(h, VHCA_PI_PHYS_STATE, VHCA_PORT_PHYS_POLLING),
                    ==, 0);
    assert_events(h, init, 1);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PHYS_STATE), ==,
                     VHCA_PORT_PHYS_LINK_UP);
    harness_free(h);
}

/*
 * One Set asking for PortPhysicalState Disabled and PortState ARMED or
 * ACTIVE (as a Get-modify-Set that changes PortPhysicalState alone
 * does): the link goes down first, and a port whose link is not up is
 * DOWN (7.2), whatever PortState asked.  It once became ACTIVE again on
 * the disabled link.  Found by fuzz-vhca-ib.
 */
static void test_port_state_with_link_disabled(void)
{
    /* The LID, forgotten with the link, is the Set's again (as Down). */
    static const Event down[] = { PORT_EV(DOWN), MGMT_EV(LID_CHANGE) };
    Harness *h = ib_new();
    uint8_t pi[VHCA_SMP_DATA_LEN];
    uint8_t state;

    for (state = VHCA_PORT_ARMED; state <= VHCA_PORT_ACTIVE; state++) {
        g_assert_cmphex(pi_set(h, VHCA_PI_LID, 3), ==, 0);
        g_assert_cmphex(pi_set(h, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED), ==,
                        0);
        if (state == VHCA_PORT_ACTIVE) {
            vhca_ib_port_rx_data(&h->core);
        }
        g_assert_cmpuint(h->core.ib.state, ==, state);
        drain_events(h);
        nevents = 0;
        sm_port_info(h, pi);
        vhca_mad_set(pi, VHCA_PI_PORT_STATE, state);
        vhca_mad_set(pi, VHCA_PI_PHYS_STATE, VHCA_PORT_PHYS_DISABLED);
        g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 0, pi), ==, 0);
        g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_PORT_STATE), ==,
                         VHCA_PORT_DOWN);
        g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_PHYS_STATE), ==,
                         VHCA_PORT_PHYS_DISABLED);
        g_assert_cmpuint(h->core.ib.state, ==, VHCA_PORT_DOWN);
        assert_events(h, down, G_N_ELEMENTS(down));
        /* Polling brings it back to INIT, for the next round. */
        g_assert_cmphex(pi_set(h, VHCA_PI_PHYS_STATE,
                               VHCA_PORT_PHYS_POLLING), ==, 0);
        g_assert_cmpuint(h->core.ib.state, ==, VHCA_PORT_INIT);
        drain_events(h);
        nevents = 0;
    }
    harness_free(h);
}

static void test_mkey_protection(void)
{
    Harness *h = ib_new();
    const uint64_t key = 0x1122334455667788ull;
    uint8_t in[VHCA_MAD_SIZE], out[VHCA_MAD_SIZE];
    uint8_t pi[VHCA_SMP_DATA_LEN];

    /* M_Key set, level 0: Gets see it; a Set needs it. */
    sm_port_info(h, pi);
    vhca_st_be64(pi + VHCA_PI_MKEY, key);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PORT_INFO, 0, pi), ==, 0);
    g_assert_cmphex(vhca_ld_be64(pi + VHCA_PI_MKEY), ==, key);
    sm_port_info(h, pi);
    g_assert_cmphex(vhca_ld_be64(pi + VHCA_PI_MKEY), ==, key);

    mad_init(in, LID_ROUTED, SET, VHCA_SMP_ATTR_PORT_INFO, 0);
    memcpy(in + VHCA_SMP_DATA, pi, sizeof(pi));
    vhca_mad_set(in + VHCA_SMP_DATA, VHCA_PI_LID, 0x55);
    /* Not 0: the Sets below do not clear the count. */
    vhca_mad_set(in + VHCA_SMP_DATA, VHCA_PI_MKEY_VIOLATIONS, 0xffff);
    /* Wrong key: discarded without a response, counted. */
    g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
    g_assert_cmphex(out[0], ==, 0xee);      /* out_mad not written */
    g_assert_cmpuint(h->core.ib.lid, ==, 0);
    g_assert_cmpuint(pi_field(h, VHCA_PI_MKEY_VIOLATIONS), ==, 1);
    /* TrapRepress too (14.2.4.1). */
    in[VHCA_MAD_METHOD] = VHCA_MAD_METHOD_TRAP_REPRESS;
    g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
    g_assert_cmpuint(pi_field(h, VHCA_PI_MKEY_VIOLATIONS), ==, 2);
    in[VHCA_MAD_METHOD] = SET;
    /* The right key, or the driver's IGNORE_MKEY. */
    vhca_st_be64(in + VHCA_SMP_MKEY, key);
    g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
    g_assert_cmpuint(h->core.ib.lid, ==, 0x55);
    vhca_st_be64(in + VHCA_SMP_MKEY, 0);
    vhca_mad_set(in + VHCA_SMP_DATA, VHCA_PI_LID, 0x56);
    g_assert_cmpuint(mad(h, IGNORE_MKEY, in, out), ==, REPLY);
    g_assert_cmpuint(h->core.ib.lid, ==, 0x56);

    /* Level 1: a Get without the key succeeds but sees M_Key 0. */
    vhca_mad_set(in + VHCA_SMP_DATA, VHCA_PI_MKEY_PROTECT, 1);
    g_assert_cmpuint(mad(h, IGNORE_MKEY, in, out), ==, REPLY);
    port_info(h, pi);
    g_assert_cmphex(vhca_ld_be64(pi + VHCA_PI_MKEY), ==, 0);
    g_assert_cmpuint(vhca_mad_get(pi, VHCA_PI_MKEY_PROTECT), ==, 1);
    mad_init(in, LID_ROUTED, GET, VHCA_SMP_ATTR_PORT_INFO, 0);
    vhca_st_be64(in + VHCA_SMP_MKEY, key);
    g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
    g_assert_cmphex(vhca_ld_be64(out + VHCA_SMP_DATA + VHCA_PI_MKEY), ==,
                    key);
    g_assert_cmpuint(pi_field(h, VHCA_PI_MKEY_VIOLATIONS), ==, 2);

    /* Levels 2 and 3: a Get without the key is a violation too. */
    for (unsigned level = 2; level <= 3; level++) {
        h->core.ib.mkey_protect = level;
        mad_init(in, DIRECTED, GET, VHCA_SMP_ATTR_NODE_INFO, 0);
        g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
        vhca_st_be64(in + VHCA_SMP_MKEY, key);
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmpuint(mad(h, IGNORE_MKEY, in, out), ==, REPLY);
    }
    g_assert_cmpuint(h->core.ib.mkey_violations, ==, 4);
    /* SMInfo is not the SMA's: no M_Key check, not handled. */
    mad_init(in, LID_ROUTED, GET, VHCA_SMP_ATTR_SM_INFO, 0);
    g_assert_cmpuint(mad(h, 0, in, out), ==, 0);
    g_assert_cmpuint(h->core.ib.mkey_violations, ==, 4);
    harness_free(h);
}

static void test_mkey_lease(void)
{
    Harness *h = ib_new();
    const uint64_t key = 0xabcdefull;
    uint8_t in[VHCA_MAD_SIZE], out[VHCA_MAD_SIZE];

    h->core.ib.mkey = key;
    h->core.ib.mkey_protect = 2;
    h->core.ib.mkey_lease_period = 2;       /* seconds */
    mad_init(in, LID_ROUTED, GET, VHCA_SMP_ATTR_NODE_INFO, 0);

    /* A violation starts the lease; the right key stops it. */
    g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
    harness_advance(h, 1500000000ull);
    vhca_st_be64(in + VHCA_SMP_MKEY, key);
    g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
    harness_advance(h, 1000000000ull);
    vhca_st_be64(in + VHCA_SMP_MKEY, 0);
    g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
    /* Unanswered for the lease period: protection lapses (14.2.4.2). */
    harness_advance(h, 1999999999ull);
    g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
    harness_advance(h, 1);
    g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
    g_assert_cmpuint(h->core.ib.mkey_protect, ==, 0);
    g_assert_cmphex(h->core.ib.mkey, ==, key);
    g_assert_cmpuint(h->core.ib.mkey_violations, ==, 3);
    harness_free(h);
}

static void test_pkey_table(void)
{
    Harness *h = ib_new();
    static const Event changed[] = { MGMT_EV(PKEY_CHANGE) };
    VhcaCore *core = &h->core;
    uint8_t tbl[VHCA_SMP_DATA_LEN];
    uint16_t index;

    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_PKEY_TABLE, 0, tbl), ==, 0);
    g_assert_cmphex(vhca_ld_be16(tbl), ==, 0xffff);
    g_assert_cmphex(vhca_ld_be16(tbl + 2), ==, 0);

    /* Block 1 = entries 32..63; switch port bits 31:16 ignored. */
    memset(tbl, 0, sizeof(tbl));
    vhca_st_be16(tbl + 0, 0x8001);      /* full member of 1 */
    vhca_st_be16(tbl + 2, 0x0002);      /* limited member of 2 */
    vhca_st_be16(tbl + 4, 0x8000);      /* invalid */
    vhca_st_be16(tbl + 62, 0x7fff);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PKEY_TABLE, 0x50001, tbl), ==,
                    0);
    assert_events(h, changed, 1);
    g_assert_cmphex(vhca_ib_pkey_at(core, 32), ==, 0x8001);
    g_assert_cmphex(vhca_ib_pkey_at(core, 63), ==, 0x7fff);
    g_assert_cmphex(smp(h, DIRECTED, 0, SET, VHCA_SMP_ATTR_PKEY_TABLE, 1,
                        tbl, sizeof(tbl)), ==, 0);
    assert_no_events(h);
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_PKEY_TABLE, 1, tbl), ==, 0);
    g_assert_cmphex(vhca_ld_be16(tbl + 2), ==, 0x0002);

    /* 10.9.3: same partition, at least one full member. */
    g_assert_true(vhca_ib_pkey_find(core, 0x8001, &index));
    g_assert_cmpuint(index, ==, 32);
    g_assert_true(vhca_ib_pkey_find(core, 0x0001, &index));
    g_assert_cmpuint(index, ==, 32);
    g_assert_true(vhca_ib_pkey_find(core, 0x8002, &index));
    g_assert_cmpuint(index, ==, 33);
    g_assert_false(vhca_ib_pkey_find(core, 0x0002, &index));
    g_assert_false(vhca_ib_pkey_find(core, 0x8003, &index));
    g_assert_false(vhca_ib_pkey_find(core, 0x8000, &index));
    g_assert_false(vhca_ib_pkey_find(core, 0x0000, &index));
    /* Index 0 (0xffff) comes before 63 (0x7fff). */
    g_assert_true(vhca_ib_pkey_find(core, 0x7fff, &index));
    g_assert_cmpuint(index, ==, 0);
    core->ib.pkeys[0] = 0x7fff;
    g_assert_false(vhca_ib_pkey_find(core, 0x7fff, &index));
    g_assert_true(vhca_ib_pkey_find(core, 0xffff, &index));
    g_assert_cmpuint(index, ==, 0);

    /* PartitionCap 128: blocks 0..3. */
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_PKEY_TABLE, 3, tbl), ==, 0);
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_PKEY_TABLE, 4, tbl), ==,
                    ST_INVALID);
    memset(tbl, 0xff, sizeof(tbl));
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_PKEY_TABLE, 0xffff, tbl), ==,
                    ST_INVALID);
    assert_no_events(h);
    harness_free(h);
}

static void test_sl2vl(void)
{
    Harness *h = ib_new();
    uint8_t t[VHCA_SMP_DATA_LEN];
    static const uint8_t zero[8];

    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_SL2VL_TABLE, 0, t), ==, 0);
    g_assert_cmpmem(t, 8, zero, 8);
    /* VL0 or VL15 (drop, 7.6.6) for each SL: VLCap is VL0. */
    memset(t, 0, sizeof(t));
    vhca_mad_set(t, VHCA_SMP_SL2VL_FIELD(3), 15);
    vhca_mad_set(t, VHCA_SMP_SL2VL_FIELD(14), 15);
    g_assert_cmphex(smp(h, DIRECTED, 0, SET, VHCA_SMP_ATTR_SL2VL_TABLE, 0,
                        t, sizeof(t)), ==, 0);
    g_assert_cmphex(t[1], ==, 0x0f);
    g_assert_cmphex(t[7], ==, 0xf0);
    g_assert_cmpuint(h->core.ib.sl2vl[3], ==, 15);
    g_assert_cmpuint(h->core.ib.sl2vl[14], ==, 15);
    vhca_mad_set(t, VHCA_SMP_SL2VL_FIELD(0), 1);
    vhca_mad_set(t, VHCA_SMP_SL2VL_FIELD(3), 0);
    g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_SL2VL_TABLE, 0, t), ==,
                    ST_INVALID);
    g_assert_cmpuint(h->core.ib.sl2vl[0], ==, 0);
    g_assert_cmpuint(h->core.ib.sl2vl[3], ==, 15);
    assert_no_events(h);
    harness_free(h);
}

static void test_vl_arbitration(void)
{
    Harness *h = ib_new();
    uint8_t t[VHCA_SMP_DATA_LEN];
    static const uint8_t zero[48];

    for (uint32_t block = 1; block <= 2; block++) {
        memset(t, 0, sizeof(t));
        for (unsigned i = 0; i < 32; i++) {
            t[2 * i] = 0xf0 | (i & 0xf);
            t[2 * i + 1] = (uint8_t)(block * 16 + i);
        }
        g_assert_cmphex(set_attr(h, VHCA_SMP_ATTR_VL_ARB_TABLE, block, t),
                        ==, 0);
        /* Eight entries (VLArb*Cap); reserved bits read 0. */
        g_assert_cmphex(t[0], ==, 0x00);
        g_assert_cmphex(t[1], ==, block * 16);
        g_assert_cmphex(t[14], ==, 0x07);
        g_assert_cmphex(t[15], ==, block * 16 + 7);
        g_assert_cmpmem(t + 16, 48, zero, sizeof(zero));
    }
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_VL_ARB_TABLE, 1, t), ==, 0);
    g_assert_cmphex(t[3], ==, 17);
    for (uint32_t block = 0; block <= 5; block += 3) {
        g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_VL_ARB_TABLE, block, t),
                        ==, ST_INVALID);
    }
    g_assert_cmphex(get_attr(h, VHCA_SMP_ATTR_VL_ARB_TABLE, 4, t), ==,
                    ST_INVALID);
    harness_free(h);
}

/* MADs the agents refuse, answer with a status, or leave to others. */
static void test_malformed_mads(void)
{
    Harness *h = ib_new();
    uint8_t in[VHCA_MAD_SIZE], out[VHCA_MAD_SIZE];
    uint8_t classes[] = { LID_ROUTED, DIRECTED, PERF };

    for (unsigned c = 0; c < G_N_ELEMENTS(classes); c++) {
        uint16_t attr = classes[c] == PERF ? VHCA_PMA_ATTR_PORT_COUNTERS
                                           : VHCA_SMP_ATTR_NODE_INFO;
        uint16_t d = classes[c] == DIRECTED ? VHCA_SMP_DIRECTION : 0;

        mad_init(in, classes[c], GET, attr, 0);
        in[VHCA_PMA_DATA + 1] = 1;
        in[VHCA_MAD_BASE_VERSION] = 2;
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmphex(mad_status(out), ==,
                        d | VHCA_MAD_STATUS_BAD_VERSION);
        in[VHCA_MAD_BASE_VERSION] = 1;
        in[VHCA_MAD_CLASS_VERSION] = 0x80;
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmphex(mad_status(out), ==,
                        d | VHCA_MAD_STATUS_BAD_VERSION);
        in[VHCA_MAD_CLASS_VERSION] = 1;
        /* Send, and an unknown method: not a method of the class. */
        in[VHCA_MAD_METHOD] = 0x03;
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmphex(mad_status(out), ==,
                        d | VHCA_MAD_STATUS_UNSUP_METHOD);
        g_assert_cmphex(out[VHCA_MAD_METHOD], ==, 0x81);
        in[VHCA_MAD_METHOD] = 0x7f;
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmphex(mad_status(out), ==,
                        d | VHCA_MAD_STATUS_UNSUP_METHOD);
        /* Responses and traps are for someone else. */
        in[VHCA_MAD_METHOD] = VHCA_MAD_METHOD_GET_RESP;
        g_assert_cmpuint(mad(h, 0, in, out), ==, 0);
        in[VHCA_MAD_METHOD] = VHCA_MAD_METHOD_TRAP;
        g_assert_cmpuint(mad(h, 0, in, out), ==,
                         classes[c] == PERF ? REPLY : 0);
        /* An attribute the agent does not have. */
        in[VHCA_MAD_METHOD] = GET;
        vhca_st_be16(in + VHCA_MAD_ATTR_ID, 0x1234);
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmphex(mad_status(out), ==, d | ST_UNSUP_ATTR);
        in[VHCA_MAD_METHOD] = SET;
        g_assert_cmpuint(mad(h, 0, in, out), ==, REPLY);
        g_assert_cmphex(mad_status(out), ==, d | ST_UNSUP_ATTR);
    }
    /* TrapRepress: accepted, never answered. */
    mad_init(in, LID_ROUTED, VHCA_MAD_METHOD_TRAP_REPRESS,
             VHCA_SMP_ATTR_NOTICE, 0);
    g_assert_cmpuint(mad(h, 0, in, out), ==, CONSUMED);
    g_assert_cmphex(out[0], ==, 0xee);
    /* Classes the device has no agent for: SA, CM, vendor. */
    for (unsigned cls = 0; cls < 256; cls++) {
        if (cls == LID_ROUTED || cls == DIRECTED || cls == PERF) {
            continue;
        }
        mad_init(in, cls, GET, 0x10, 0);
        g_assert_cmpuint(mad(h, 0, in, out), ==, 0);
        g_assert_cmphex(out[0], ==, 0xee);
    }
    assert_no_events(h);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

/* Any bytes: answered or not, never a crash, never past 256 bytes. */
static void test_hostile_mads(void)
{
    Harness *h = ib_new();
    uint8_t in[VHCA_MAD_SIZE], out[VHCA_MAD_SIZE];
    uint8_t classes[] = { LID_ROUTED, DIRECTED, PERF };
    GRand *rand = g_rand_new_with_seed(0x5a5a);

    for (unsigned n = 0; n < 4000; n++) {
        uint8_t result;

        for (unsigned i = 0; i < VHCA_MAD_SIZE; i++) {
            in[i] = (uint8_t)g_rand_int(rand);
        }
        if (n % 4) {
            in[VHCA_MAD_BASE_VERSION] = 1;
            in[VHCA_MAD_CLASS_VERSION] = 1;
            in[VHCA_MAD_MGMT_CLASS] = classes[n % 3];
            in[VHCA_MAD_METHOD] = 1 + g_rand_int_range(rand, 0, 2);
            vhca_st_be16(in + VHCA_MAD_ATTR_ID,
                             g_rand_boolean(rand) ? 0x15 :
                             0x10 + g_rand_int_range(rand, 0, 9));
            if (g_rand_boolean(rand)) {
                vhca_st_be32(in + VHCA_MAD_ATTR_MOD,
                                 g_rand_int_range(rand, 0, 5));
            }
        }
        g_assert_cmpuint(mad_ifc_cmd(h, 1, g_rand_int_range(rand, 0, 4), in,
                                     out, &result,
                                     sizeof(struct vhca_mad_ifc)), ==,
                         VHCA_ST_OK);
        g_assert_cmpuint(result & ~(REPLY | CONSUMED), ==, 0);
        if (result & REPLY) {
            g_assert_cmphex(out[VHCA_MAD_METHOD], ==, 0x81);
            g_assert_cmpmem(out + VHCA_MAD_TID, 8, in + VHCA_MAD_TID, 8);
        } else {
            g_assert_cmphex(out[0], ==, 0xee);
        }
        nevents = 0;
        /* Keep the port reachable for the SMPs that follow. */
        h->core.ib.mkey_protect = 0;
        h->core.ib.mkey = 0;
    }
    g_rand_free(rand);
    g_assert_cmpuint(guest_errors_total(h), ==, 0);
    harness_free(h);
}

/* ---------------------------------------------------------------------- */
/* PMA                                                                    */
/* ---------------------------------------------------------------------- */

static uint16_t pma(Harness *h, uint8_t method, uint16_t attr,
                    uint8_t port_select, uint16_t select, uint8_t *data)
{
    memset(data, 0, VHCA_PMA_DATA_LEN);
    vhca_mad_set(data, VHCA_PMA_PORT_SELECT, port_select);
    vhca_mad_set(data, VHCA_PMA_COUNTER_SELECT, select);
    return smp(h, PERF, IGNORE_MKEY, method, attr, 0, data,
               VHCA_PMA_DATA_LEN);
}

#define PC(bit, width)  vhca_mad_get(d, VHCA_MAD_FIELD(bit, width))

static void test_pma_class_port_info(void)
{
    Harness *h = ib_new();
    uint8_t d[VHCA_PMA_DATA_LEN];

    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_CLASS_PORT_INFO, 0, 0, d), ==,
                    0);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_CPI_BASE_VERSION), ==, 1);
    g_assert_cmpuint(vhca_mad_get(d, VHCA_CPI_CLASS_VERSION), ==, 1);
    g_assert_cmphex(vhca_mad_get(d, VHCA_CPI_CAP_MASK), ==,
                    VHCA_PMA_CAP_ALL_PORT_SELECT |
                    VHCA_PMA_CAP_EXT_WIDTH_NOIETF);
    g_assert_cmphex(pma(h, SET, VHCA_PMA_ATTR_CLASS_PORT_INFO, 0, 0, d), ==,
                    ST_UNSUP_ATTR);
    harness_free(h);
}

static void test_pma_port_counters(void)
{
    Harness *h = ib_new();
    uint64_t *cnt = h->core.counters;
    uint8_t d[VHCA_PMA_DATA_LEN];
    static const uint8_t zero[VHCA_PMA_DATA_LEN];

    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 1, 0, d), ==,
                    0);
    g_assert_cmpuint(d[1], ==, 1);
    g_assert_cmpmem(d + 2, sizeof(d) - 2, zero, sizeof(zero) - 2);

    cnt[VHCA_CNT_RDMA_TX_BYTES] += 4003;
    cnt[VHCA_CNT_RDMA_RX_BYTES] += 800;
    cnt[VHCA_CNT_ROCE_TX_PACKETS] += 7;
    cnt[VHCA_CNT_ROCE_RX_PACKETS] += 5;
    cnt[VHCA_CNT_DROP_MALFORMED] += 1;
    cnt[VHCA_CNT_DROP_BAD_ICRC] += 2;
    cnt[VHCA_CNT_DROP_BAD_VCRC] += 3;
    cnt[VHCA_CNT_DROP_PKEY] += 4;
    cnt[VHCA_CNT_DROP_VL15] += 6;
    cnt[VHCA_CNT_LINK_DOWNED] += 300;       /* an 8-bit field */
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 0xff, 0, d), ==,
                    0);
    g_assert_cmpuint(PC(56, 8), ==, 255);       /* LinkDownedCounter */
    g_assert_cmpuint(PC(64, 16), ==, 6);        /* PortRcvErrors */
    g_assert_cmpuint(PC(136, 8), ==, 4);        /* PortRcvConstraintErrors */
    g_assert_cmpuint(PC(176, 16), ==, 6);       /* VL15Dropped */
    g_assert_cmpuint(PC(192, 32), ==, 1000);    /* PortXmitData, words */
    g_assert_cmpuint(PC(224, 32), ==, 200);
    g_assert_cmpuint(PC(256, 32), ==, 7);
    g_assert_cmpuint(PC(288, 32), ==, 5);
    g_assert_cmpuint(PC(32, 16), ==, 0);        /* SymbolErrorCounter */

    /* Saturation at the field's width (16.1.3.5). */
    cnt[VHCA_CNT_RDMA_TX_BYTES] += 1ull << 40;
    cnt[VHCA_CNT_DROP_VL15] += 70000;
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 1, 0, d), ==,
                    0);
    g_assert_cmphex(PC(192, 32), ==, 0xffffffff);
    g_assert_cmphex(PC(176, 16), ==, 0xffff);

    /* Set resets what CounterSelect names, not the device counters. */
    g_assert_cmphex(pma(h, SET, VHCA_PMA_ATTR_PORT_COUNTERS, 1,
                        0x1000 | 0x0800 | 0x0004, d), ==, 0);
    g_assert_cmpuint(PC(192, 32), ==, 0);
    g_assert_cmpuint(PC(176, 16), ==, 0);
    g_assert_cmpuint(PC(56, 8), ==, 0);
    g_assert_cmpuint(PC(224, 32), ==, 200);
    g_assert_cmpuint(PC(64, 16), ==, 6);
    g_assert_cmpuint(counter(h, VHCA_CNT_DROP_VL15), ==, 70006);
    cnt[VHCA_CNT_RDMA_TX_BYTES] += 40;
    cnt[VHCA_CNT_LINK_DOWNED] += 1;
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 1, 0, d), ==,
                    0);
    g_assert_cmpuint(PC(192, 32), ==, 10);
    g_assert_cmpuint(PC(56, 8), ==, 1);

    /* PortSelect: port 1 or all, nothing else. */
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 2, 0, d), ==,
                    ST_INVALID);
    g_assert_cmphex(pma(h, SET, VHCA_PMA_ATTR_PORT_COUNTERS, 0, 0xffff, d),
                    ==, ST_INVALID);
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 1, 0, d), ==,
                    0);
    g_assert_cmpuint(PC(224, 32), ==, 200);
    harness_free(h);
}

static void test_pma_port_counters_ext(void)
{
    Harness *h = ib_new();
    uint64_t *cnt = h->core.counters;
    uint8_t d[VHCA_PMA_DATA_LEN];

    cnt[VHCA_CNT_RDMA_TX_BYTES] = 4ull << 40;
    cnt[VHCA_CNT_RDMA_RX_BYTES] = 400;
    cnt[VHCA_CNT_ROCE_TX_PACKETS] = 1ull << 33;
    cnt[VHCA_CNT_ROCE_RX_PACKETS] = 9;
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS_EXT, 1, 0, d),
                    ==, 0);
    g_assert_cmphex(vhca_ld_be64(d + 8), ==, 1ull << 40);
    g_assert_cmphex(vhca_ld_be64(d + 16), ==, 100);
    g_assert_cmphex(vhca_ld_be64(d + 24), ==, 1ull << 33);
    g_assert_cmphex(vhca_ld_be64(d + 32), ==, 9);
    g_assert_cmphex(vhca_ld_be64(d + 40), ==, 0);   /* no IETF ones */

    /* Reset the received ones: PortCounters sees it too. */
    g_assert_cmphex(pma(h, SET, VHCA_PMA_ATTR_PORT_COUNTERS_EXT, 1,
                        0x0002 | 0x0008, d), ==, 0);
    g_assert_cmphex(vhca_ld_be64(d + 8), ==, 1ull << 40);
    g_assert_cmphex(vhca_ld_be64(d + 16), ==, 0);
    g_assert_cmphex(vhca_ld_be64(d + 32), ==, 0);
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS, 1, 0, d), ==,
                    0);
    g_assert_cmpuint(PC(224, 32), ==, 0);
    g_assert_cmpuint(PC(288, 32), ==, 0);
    g_assert_cmphex(PC(256, 32), ==, 0xffffffff);
    g_assert_cmphex(pma(h, GET, VHCA_PMA_ATTR_PORT_COUNTERS_EXT, 7, 0, d),
                    ==, ST_INVALID);
    harness_free(h);
}

static uint8_t modify_port(Harness *h, uint8_t port, uint8_t flags,
                           uint32_t set, uint32_t clr)
{
    struct vhca_cmd_modify_port_in in = {
        .port = port,
        .flags = flags,
        .set_cap_mask = GUINT32_TO_LE(set),
        .clr_cap_mask = GUINT32_TO_LE(clr),
    };

    return admin_cmd(h, VHCA_CMD_MODIFY_PORT, 0x4d50, &in, sizeof(in), NULL);
}

static void test_modify_port_and_violations(void)
{
    Harness *h = ib_new();
    const uint32_t base = VHCA_PORT_CAP_TRAP | VHCA_PORT_CAP_SYS_IMAGE_GUID |
                          VHCA_PORT_CAP_CAP_MASK_NOTICE |
                          VHCA_PORT_CAP_CLIENT_REREGISTER |
                          VHCA_PORT_CAP_OTHER_LOCAL_CHANGES;
    const uint32_t cm = 1u << 16;

    /* IsSM, as opensm asks when it opens the port; CM from ib_cm. */
    g_assert_cmpuint(modify_port(h, 1, 0, VHCA_PORT_CAP_IS_SM | cm, 0), ==,
                     VHCA_ST_OK);
    g_assert_cmphex(pi_field(h, VHCA_PI_CAP_MASK), ==,
                    base | VHCA_PORT_CAP_IS_SM | cm);
    /* Clear, then set. */
    g_assert_cmpuint(modify_port(h, 1, 0, cm, cm | VHCA_PORT_CAP_IS_SM),
                     ==, VHCA_ST_OK);
    g_assert_cmphex(pi_field(h, VHCA_PI_CAP_MASK), ==, base | cm);
    g_assert_cmpuint(modify_port(h, 1, 0, 1u << 31, 0), ==,
                     VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(modify_port(h, 1, 0, 0, 1), ==, VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(modify_port(h, 1, 0x10, 0, 0), ==, VHCA_ST_BAD_PARAM);
    g_assert_cmpuint(modify_port(h, 0, 0, 0, 0), ==, VHCA_ST_BAD_PARAM);
    g_assert_cmphex(pi_field(h, VHCA_PI_CAP_MASK), ==, base | cm);

    /* Q_Key and P_Key violations follow the drops. */
    h->core.counters[VHCA_CNT_DROP_QKEY] += 3;
    h->core.counters[VHCA_CNT_DROP_PKEY] += 5;
    g_assert_cmpuint(pi_field(h, VHCA_PI_QKEY_VIOLATIONS), ==, 3);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PKEY_VIOLATIONS), ==, 5);
    g_assert_cmpuint(modify_port(h, 1, VHCA_MODIFY_PORT_RESET_QKEY_CNTR, 0,
                                 0), ==, VHCA_ST_OK);
    g_assert_cmpuint(pi_field(h, VHCA_PI_QKEY_VIOLATIONS), ==, 0);
    h->core.counters[VHCA_CNT_DROP_QKEY] += 1;
    g_assert_cmpuint(pi_field(h, VHCA_PI_QKEY_VIOLATIONS), ==, 1);
    /* The SM clears them with 0; another value changes nothing. */
    g_assert_cmphex(pi_set(h, VHCA_PI_PKEY_VIOLATIONS, 0), ==, 0);
    h->core.counters[VHCA_CNT_DROP_PKEY] += 2;
    g_assert_cmpuint(pi_field(h, VHCA_PI_PKEY_VIOLATIONS), ==, 2);
    g_assert_cmphex(pi_set(h, VHCA_PI_PKEY_VIOLATIONS, 0x1234), ==, 0);
    g_assert_cmpuint(pi_field(h, VHCA_PI_PKEY_VIOLATIONS), ==, 2);
    h->core.counters[VHCA_CNT_DROP_PKEY] += 70000;
    g_assert_cmpuint(pi_field(h, VHCA_PI_PKEY_VIOLATIONS), ==, 0xffff);
    h->core.ib.mkey_violations = 5;
    g_assert_cmphex(pi_set(h, VHCA_PI_MKEY_VIOLATIONS, 0), ==, 0);
    g_assert_cmpuint(h->core.ib.mkey_violations, ==, 0);
    harness_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhca/ib/eth-port-refuses", test_eth_port_refuses);
    g_test_add_func("/vhca/ib/mad-ifc-command-errors",
                    test_mad_ifc_command_errors);
    g_test_add_func("/vhca/ib/port-reset-and-link", test_port_reset_and_link);
    g_test_add_func("/vhca/ib/sma/node-info", test_node_info);
    g_test_add_func("/vhca/ib/sma/node-description", test_node_description);
    g_test_add_func("/vhca/ib/sma/guid-info", test_guid_info);
    g_test_add_func("/vhca/ib/sma/port-info-get", test_port_info_get);
    g_test_add_func("/vhca/ib/sma/port-info-set", test_port_info_set);
    g_test_add_func("/vhca/ib/sma/port-info-invalid",
                    test_port_info_invalid_values);
    g_test_add_func("/vhca/ib/sma/port-states", test_port_states);
    g_test_add_func("/vhca/ib/sma/mkey-protection", test_mkey_protection);
    g_test_add_func("/vhca/ib/sma/mkey-lease", test_mkey_lease);
    g_test_add_func("/vhca/ib/sma/pkey-table", test_pkey_table);
    g_test_add_func("/vhca/ib/sma/sl2vl", test_sl2vl);
    g_test_add_func("/vhca/ib/sma/vl-arbitration", test_vl_arbitration);
    g_test_add_func("/vhca/ib/malformed-mads", test_malformed_mads);
    g_test_add_func("/vhca/ib/port-state-with-link-disabled",
                    test_port_state_with_link_disabled);
    g_test_add_func("/vhca/ib/hostile-mads", test_hostile_mads);
    g_test_add_func("/vhca/ib/pma/class-port-info",
                    test_pma_class_port_info);
    g_test_add_func("/vhca/ib/pma/port-counters", test_pma_port_counters);
    g_test_add_func("/vhca/ib/pma/port-counters-ext",
                    test_pma_port_counters_ext);
    g_test_add_func("/vhca/ib/modify-port", test_modify_port_and_violations);
    return g_test_run();
}
