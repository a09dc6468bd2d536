/*
 * vhca-switch: an InfiniBand switch for the fabric of vhca guests whose
 * ports are InfiniBand (-device vhca,link=ib).  docs/specs/vhca.rst,
 * "InfiniBand switch".
 *
 * Each external port is one end of a cable: the UDP socket a guest's
 * -netdev dgram (or another switch's port) sends whole IB packets to,
 * LRH to VCRC, as between two vhcas back to back.  The switch forwards a
 * packet by its DLID through the linear forwarding table, and a
 * multicast one through the multicast forwarding table, that the subnet
 * manager programs (IBTA Vol 1 18.2.4); it forwards directed route SMPs
 * along their path and answers the SM as a switch's subnet management
 * agent does (14.2, with the switch's attributes of 14.2.5).  Its port 0
 * is the base switch management port (17.2.1.3): the switch's LID is
 * port 0's.
 *
 * This is the switch itself, without sockets: vhca_switch_receive() takes
 * a packet from a port, and ops->transmit sends one out of a port
 * (switch/vhca-switch-main.c is the process around it).  It shares the IB
 * wire code with the vhca engine (hw/vhca/engine/vhca-wire.c): one
 * parser, one definition of the headers and of the MADs.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_SWITCH_H
#define VHCA_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * External ports, 1..N (36, as a QDR switch ASIC); NumPorts counts port
 * 0 too (14.2.5.3).
 */
#define VHCA_SWITCH_MAX_PORTS       36
/* LinearFDBCap: unicast LIDs 0..1023 (the SM assigns from 1). */
#define VHCA_SWITCH_LFT_CAP         1024
/* MulticastFDBCap: MLIDs 0xC000..0xC0FF. */
#define VHCA_SWITCH_MFT_CAP         256
/* A forwarding table entry that sends nowhere (18.2.4.3.1). */
#define VHCA_SWITCH_NO_PORT         0xff
#define VHCA_SWITCH_PKEY_TBL_LEN    32

/* Why the switch dropped a packet; each is counted (vhca_switch_dump). */
typedef enum VhcaSwitchDrop {
    VHCA_SWITCH_DROP_MALFORMED,     /* the parser refused it (VCRC, LRH) */
    VHCA_SWITCH_DROP_PORT_STATE,    /* in or out port not in a state for it */
    VHCA_SWITCH_DROP_NO_ROUTE,      /* LFT/MFT: no port, or the in port */
    VHCA_SWITCH_DROP_DR,            /* a directed route SMP C14-9/13 refuse */
    VHCA_SWITCH_DROP_VL15,          /* VL15 that is not an SMP to QP0 */
    VHCA_SWITCH_DROP_MKEY,          /* an SMP with the wrong M_Key */
    VHCA_SWITCH_DROP_PKEY,          /* partition enforcement (10.9.4) */
    VHCA_SWITCH_DROP_NOT_OURS,      /* to port 0, not an SMP it takes */
    VHCA_SWITCH_DROP__MAX
} VhcaSwitchDrop;

const char *vhca_switch_drop_name(VhcaSwitchDrop why);

typedef struct VhcaSwitchOps {
    /* Send @len bytes, one whole IB packet, out of external port @port. */
    void (*transmit)(void *opaque, unsigned port, const uint8_t *pkt,
                     size_t len);
} VhcaSwitchOps;

/* One port: its PortInfo (14.2.5.6) as a switch keeps it, and counters. */
typedef struct VhcaSwitchPort {
    bool cabled;                    /* a peer is configured at the end */
    uint8_t state;                  /* enum vhca_port_state (7.2) */
    uint8_t phys_state;             /* enum vhca_port_phys_state */
    uint8_t link_down_default;
    uint8_t link_width_enabled;
    uint8_t link_speed_enabled;
    uint8_t neighbor_mtu;           /* enum vhca_ib_mtu */
    uint8_t operational_vls;
    uint8_t vl_high_limit;
    uint8_t hoq_life;
    uint8_t vl_stall_count;
    uint8_t local_phy_errors;
    uint8_t overrun_errors;
    uint16_t pkeys[VHCA_SWITCH_PKEY_TBL_LEN];   /* enforcement (10.9.4) */
    bool enforce_in;                /* PartitionEnforcementInbound */
    bool enforce_out;               /* PartitionEnforcementOutbound */
    uint8_t sl2vl[16];              /* to this port as output (14.2.5.8) */
    uint8_t vl_arb[2][8][2];        /* VLArbitrationTable, as the SM set */
    /* PMA PortCounters (16.1.3.5). */
    uint64_t xmit_pkts, rcv_pkts, xmit_data, rcv_data;
    uint64_t xmit_discards, rcv_errors, rcv_constraint_errors;
    uint64_t xmit_constraint_errors;
    uint64_t link_downed;
} VhcaSwitchPort;

typedef struct VhcaSwitch {
    const VhcaSwitchOps *ops;
    void *opaque;
    unsigned nports;                /* external ports: 1..nports */
    uint64_t guid;                  /* node, system image and port 0 GUID */
    uint8_t node_desc[64];

    /* Port 0 (the SMA's): the switch's LID and what the SM told it. */
    uint16_t lid;
    uint8_t lmc;
    uint16_t sm_lid;
    uint8_t sm_sl;
    uint64_t mkey;
    uint8_t mkey_protect;
    uint16_t mkey_lease_period;
    uint16_t mkey_violations;
    uint64_t gid_prefix;
    uint8_t subnet_timeout;
    uint8_t resp_time_value;
    uint32_t cap_mask;

    /* SwitchInfo (14.2.5.4) and the forwarding tables (14.2.5.10/11). */
    uint16_t lft_top;               /* LinearFDBTop */
    uint8_t default_port;
    uint8_t default_mcast_primary;
    uint8_t default_mcast_not_primary;
    uint8_t life_time_value;
    bool port_state_change;         /* PortStateChange, the SM clears it */
    uint8_t lft[VHCA_SWITCH_LFT_CAP];
    uint64_t mft[VHCA_SWITCH_MFT_CAP];      /* port bit masks, 0..47 */

    VhcaSwitchPort port[VHCA_SWITCH_MAX_PORTS + 1];
    uint64_t drops[VHCA_SWITCH_DROP__MAX];
    uint64_t forwarded;
    uint64_t smps;                  /* SMPs the SMA answered */
} VhcaSwitch;

/*
 * Power on a switch of @nports external ports (1..VHCA_SWITCH_MAX_PORTS)
 * named @guid: every table empty (no route), port 0 INIT without a LID,
 * the external ports DOWN until vhca_switch_set_cable().
 */
void vhca_switch_init(VhcaSwitch *sw, unsigned nports, uint64_t guid,
                      const char *node_desc, const VhcaSwitchOps *ops,
                      void *opaque);

/*
 * External port @port has a peer at the other end of its cable (@up) or
 * no longer: the link trains to INIT, or goes DOWN (PortStateChange,
 * 14.2.5.4).
 */
void vhca_switch_set_cable(VhcaSwitch *sw, unsigned port, bool up);

/*
 * One datagram of @len bytes arrived on external port @port: forward it,
 * answer it, or drop it and count why.  Any bytes are accepted.
 */
void vhca_switch_receive(VhcaSwitch *sw, unsigned port, const uint8_t *pkt,
                         size_t len);

/* The switch's state, one line at a time (the fabric's "info"). */
void vhca_switch_dump(const VhcaSwitch *sw,
                      void (*line)(void *opaque, const char *text),
                      void *opaque);

/* The SMA (vhca-switch-sma.c): answer SMP @mad (256 bytes) in place. */
typedef struct VhcaSwitchSmp {
    uint8_t *mad;                   /* request in, response out */
    unsigned in_port;               /* where it came in (LocalPortNum) */
} VhcaSwitchSmp;

/*
 * Process the SMP: false if it is to be dropped without an answer (M_Key
 * violation, not a request); true with the response in smp->mad.
 */
bool vhca_switch_sma(VhcaSwitch *sw, VhcaSwitchSmp *smp);

/*
 * The PMA (vhca-switch-pma.c): answer PerfMgt MAD @mad (256 bytes) in
 * place; false if it is not to be answered (a response).
 */
bool vhca_switch_pma(VhcaSwitch *sw, uint8_t *mad);

/* PortState, and what a new one does (PortStateChange, counters). */
void vhca_switch_port_enter(VhcaSwitch *sw, unsigned port, uint8_t state);

#endif /* VHCA_SWITCH_H */
