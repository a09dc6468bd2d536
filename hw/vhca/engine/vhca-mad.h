/*
 * vhca engine: the layouts of the MADs the InfiniBand port's management
 * agents answer (IBTA Vol 1 chapters 13, 14 and 16), defined once for
 * vhca-sma.c and vhca-pma.c.  Engine-internal.
 *
 * A MAD is 256 bytes in network byte order.  Fields narrower than a byte
 * or not byte aligned are named by their bit offset from the start of
 * their attribute and their width, as IBTA's tables give them (bit 0 is
 * the most significant bit of byte 0), in the manner of libibmad's field
 * table: one accessor reads and writes all of them, so no field is a
 * hand-written shift.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_MAD_H
#define HW_VHCA_MAD_H

#include <stdint.h>
#include <string.h>

#include "vhca-internal.h"
#include "vhca-wire.h"

/* 13.4.2 Common MAD header: byte offsets. */
#define VHCA_MAD_BASE_VERSION       0
#define VHCA_MAD_MGMT_CLASS         1
#define VHCA_MAD_CLASS_VERSION      2
#define VHCA_MAD_METHOD             3       /* R bit (7) | method */
#define VHCA_MAD_STATUS             4       /* 16 bits; DR SMP: D | 15 */
#define VHCA_MAD_HOP_PTR            6       /* DR SMP only (14.2.1.2) */
#define VHCA_MAD_HOP_CNT            7
#define VHCA_MAD_TID                8
#define VHCA_MAD_ATTR_ID            16
#define VHCA_MAD_ATTR_MOD           20
#define VHCA_MAD_HDR_LEN            24

/* 14.2.1.1/14.2.1.2 SMP: the M_Key, then (at 64) 64 bytes of data. */
#define VHCA_SMP_MKEY               24
#define VHCA_SMP_DR_SLID            32      /* directed route (14.2.1.2) */
#define VHCA_SMP_DR_DLID            34
#define VHCA_SMP_DR_INITIAL_PATH    128     /* 64 bytes, one per hop */
#define VHCA_SMP_DR_RETURN_PATH     192
#define VHCA_SMP_DATA               64
#define VHCA_SMP_DATA_LEN           64
/* 16.1.1 PMA (a GMP): 40 reserved bytes after the header, then data. */
#define VHCA_PMA_DATA               64
#define VHCA_PMA_DATA_LEN           192

#define VHCA_MAD_BASE_VERSION_IB    1       /* 13.4.2 */
#define VHCA_SMP_CLASS_VERSION      1       /* 14.2.1 */
#define VHCA_PMA_CLASS_VERSION      1       /* 16.1.1 */

/* 13.4.4 Management classes. */
#define VHCA_MGMT_CLASS_SUBN_LID    0x01    /* LID routed SMP */
#define VHCA_MGMT_CLASS_PERF        0x04    /* PerfMgt (16.1) */
#define VHCA_MGMT_CLASS_SUBN_DR     0x81    /* directed route SMP */

/* 13.4.5 Methods (Table 105). */
#define VHCA_MAD_METHOD_GET         0x01
#define VHCA_MAD_METHOD_SET         0x02
#define VHCA_MAD_METHOD_TRAP        0x05
#define VHCA_MAD_METHOD_TRAP_REPRESS 0x07
#define VHCA_MAD_METHOD_RESP        0x80    /* R bit: a response */
#define VHCA_MAD_METHOD_GET_RESP    0x81

/*
 * 13.4.7 MAD status (Table 106): bits 2-4 the invalid field code.  A DR
 * SMP's status is 15 bits; its top bit is D, the direction (14.2.1.2).
 */
#define VHCA_MAD_STATUS_BAD_VERSION     0x0004
#define VHCA_MAD_STATUS_UNSUP_METHOD    0x0008
#define VHCA_MAD_STATUS_UNSUP_ATTR      0x000c  /* method/attr combination */
#define VHCA_MAD_STATUS_INVALID_VALUE   0x001c  /* attribute or modifier */
#define VHCA_SMP_DIRECTION              0x8000

/* 14.2.5 SMP attributes (Table 145). */
#define VHCA_SMP_ATTR_NOTICE            0x0002
#define VHCA_SMP_ATTR_NODE_DESC         0x0010
#define VHCA_SMP_ATTR_NODE_INFO         0x0011
#define VHCA_SMP_ATTR_GUID_INFO         0x0014
#define VHCA_SMP_ATTR_PORT_INFO         0x0015
#define VHCA_SMP_ATTR_PKEY_TABLE        0x0016
#define VHCA_SMP_ATTR_SL2VL_TABLE       0x0017
#define VHCA_SMP_ATTR_VL_ARB_TABLE      0x0018
#define VHCA_SMP_ATTR_SWITCH_INFO       0x0012
#define VHCA_SMP_ATTR_LFT               0x0019
#define VHCA_SMP_ATTR_MFT               0x001b
#define VHCA_SMP_ATTR_SM_INFO           0x0020

/* 16.1.2 PMA attributes (Table 210), 13.4.8.1 ClassPortInfo. */
#define VHCA_PMA_ATTR_CLASS_PORT_INFO   0x0001
#define VHCA_PMA_ATTR_PORT_COUNTERS     0x0012
#define VHCA_PMA_ATTR_PORT_COUNTERS_EXT 0x001d

/* A field of an attribute: @bit from its start, @width bits (<= 32). */
typedef struct VhcaMadField {
    uint16_t bit;
    uint8_t width;
} VhcaMadField;

#define VHCA_MAD_FIELD(bit, width)  ((VhcaMadField){ (bit), (width) })

/*
 * 14.2.5.3 NodeInfo (Table 147).  The GUIDs are 64 bits: byte offsets,
 * read and written whole with vhca_mad_ld_be64 / vhca_mad_st_be64.
 */
#define VHCA_NI_BASE_VERSION        VHCA_MAD_FIELD(0, 8)
#define VHCA_NI_CLASS_VERSION       VHCA_MAD_FIELD(8, 8)
#define VHCA_NI_NODE_TYPE           VHCA_MAD_FIELD(16, 8)
#define VHCA_NI_NUM_PORTS           VHCA_MAD_FIELD(24, 8)
#define VHCA_NI_SYS_IMAGE_GUID      4       /* bytes */
#define VHCA_NI_NODE_GUID           12
#define VHCA_NI_PORT_GUID           20
#define VHCA_NI_PARTITION_CAP       VHCA_MAD_FIELD(224, 16)
#define VHCA_NI_DEVICE_ID           VHCA_MAD_FIELD(240, 16)
#define VHCA_NI_REVISION            VHCA_MAD_FIELD(256, 32)
#define VHCA_NI_LOCAL_PORT_NUM      VHCA_MAD_FIELD(288, 8)
#define VHCA_NI_VENDOR_ID           VHCA_MAD_FIELD(296, 24)
#define VHCA_NODE_TYPE_CA           1
#define VHCA_NODE_TYPE_SWITCH       2

/* 14.2.5.6 PortInfo (Table 155).  M_Key and GIDPrefix: byte offsets. */
#define VHCA_PI_MKEY                0
#define VHCA_PI_GID_PREFIX          8
#define VHCA_PI_LID                 VHCA_MAD_FIELD(128, 16)
#define VHCA_PI_MASTER_SM_LID       VHCA_MAD_FIELD(144, 16)
#define VHCA_PI_CAP_MASK            VHCA_MAD_FIELD(160, 32)
#define VHCA_PI_DIAG_CODE           VHCA_MAD_FIELD(192, 16)
#define VHCA_PI_MKEY_LEASE_PERIOD   VHCA_MAD_FIELD(208, 16)
#define VHCA_PI_LOCAL_PORT_NUM      VHCA_MAD_FIELD(224, 8)
#define VHCA_PI_LINK_WIDTH_ENABLED  VHCA_MAD_FIELD(232, 8)
#define VHCA_PI_LINK_WIDTH_SUPPORTED VHCA_MAD_FIELD(240, 8)
#define VHCA_PI_LINK_WIDTH_ACTIVE   VHCA_MAD_FIELD(248, 8)
#define VHCA_PI_LINK_SPEED_SUPPORTED VHCA_MAD_FIELD(256, 4)
#define VHCA_PI_PORT_STATE          VHCA_MAD_FIELD(260, 4)
#define VHCA_PI_PHYS_STATE          VHCA_MAD_FIELD(264, 4)
#define VHCA_PI_LINK_DOWN_DEFAULT   VHCA_MAD_FIELD(268, 4)
#define VHCA_PI_MKEY_PROTECT        VHCA_MAD_FIELD(272, 2)
#define VHCA_PI_LMC                 VHCA_MAD_FIELD(277, 3)
#define VHCA_PI_LINK_SPEED_ACTIVE   VHCA_MAD_FIELD(280, 4)
#define VHCA_PI_LINK_SPEED_ENABLED  VHCA_MAD_FIELD(284, 4)
#define VHCA_PI_NEIGHBOR_MTU        VHCA_MAD_FIELD(288, 4)
#define VHCA_PI_MASTER_SM_SL        VHCA_MAD_FIELD(292, 4)
#define VHCA_PI_VL_CAP              VHCA_MAD_FIELD(296, 4)
#define VHCA_PI_INIT_TYPE           VHCA_MAD_FIELD(300, 4)
#define VHCA_PI_VL_HIGH_LIMIT       VHCA_MAD_FIELD(304, 8)
#define VHCA_PI_VL_ARB_HIGH_CAP     VHCA_MAD_FIELD(312, 8)
#define VHCA_PI_VL_ARB_LOW_CAP      VHCA_MAD_FIELD(320, 8)
#define VHCA_PI_INIT_TYPE_REPLY     VHCA_MAD_FIELD(328, 4)
#define VHCA_PI_MTU_CAP             VHCA_MAD_FIELD(332, 4)
#define VHCA_PI_VL_STALL_COUNT      VHCA_MAD_FIELD(336, 3)
#define VHCA_PI_HOQ_LIFE            VHCA_MAD_FIELD(339, 5)
#define VHCA_PI_OPERATIONAL_VLS     VHCA_MAD_FIELD(344, 4)
#define VHCA_PI_PART_ENF_INBOUND    VHCA_MAD_FIELD(348, 1)  /* switches */
#define VHCA_PI_PART_ENF_OUTBOUND   VHCA_MAD_FIELD(349, 1)
#define VHCA_PI_MKEY_VIOLATIONS     VHCA_MAD_FIELD(352, 16)
#define VHCA_PI_PKEY_VIOLATIONS     VHCA_MAD_FIELD(368, 16)
#define VHCA_PI_QKEY_VIOLATIONS     VHCA_MAD_FIELD(384, 16)
#define VHCA_PI_GUID_CAP            VHCA_MAD_FIELD(400, 8)
#define VHCA_PI_CLIENT_REREGISTER   VHCA_MAD_FIELD(408, 1)
#define VHCA_PI_SUBNET_TIMEOUT      VHCA_MAD_FIELD(411, 5)
#define VHCA_PI_RESP_TIME_VALUE     VHCA_MAD_FIELD(419, 5)
#define VHCA_PI_LOCAL_PHY_ERRORS    VHCA_MAD_FIELD(424, 4)
#define VHCA_PI_OVERRUN_ERRORS      VHCA_MAD_FIELD(428, 4)

/* PortInfo CapabilityMask bits (14.2.5.6, Table 156). */
#define VHCA_PORT_CAP_IS_SM                 (1u << 1)
#define VHCA_PORT_CAP_TRAP                  (1u << 3)
#define VHCA_PORT_CAP_SYS_IMAGE_GUID        (1u << 11)
#define VHCA_PORT_CAP_CAP_MASK_NOTICE       (1u << 22)
#define VHCA_PORT_CAP_CLIENT_REREGISTER     (1u << 25)
#define VHCA_PORT_CAP_OTHER_LOCAL_CHANGES   (1u << 26)

/*
 * 13.4.8.2 Notice, the data of a Trap SMP (64 bytes: an SMP has no room
 * for IssuerGID), and the two traps the SMA sends (14.2.5.1, Table 131):
 * 144, the port's CapabilityMask or another local attribute changed
 * (the other-changes bit and ChangeFlags say which), and 256, Bad M_Key.
 * Their DataDetails start at bit 80.
 */
#define VHCA_NOTICE_IS_GENERIC      VHCA_MAD_FIELD(0, 1)
#define VHCA_NOTICE_TYPE            VHCA_MAD_FIELD(1, 7)
#define VHCA_NOTICE_PRODUCER_TYPE   VHCA_MAD_FIELD(8, 24)
#define VHCA_NOTICE_TRAP_NUMBER     VHCA_MAD_FIELD(32, 16)
#define VHCA_NOTICE_ISSUER_LID      VHCA_MAD_FIELD(48, 16)
#define VHCA_NOTICE_TOGGLE_COUNT    VHCA_MAD_FIELD(64, 16)
#define VHCA_NOTICE_TYPE_SECURITY   2
#define VHCA_NOTICE_TYPE_INFO       4
#define VHCA_NOTICE_PRODUCER_CA     1
#define VHCA_TRAP_LOCAL_CHANGES     144
#define VHCA_TRAP_BAD_MKEY          256
#define VHCA_TRAP144_LID            VHCA_MAD_FIELD(96, 16)
#define VHCA_TRAP144_OTHER_CHANGES  VHCA_MAD_FIELD(127, 1)
#define VHCA_TRAP144_CAP_MASK       VHCA_MAD_FIELD(128, 32)
#define VHCA_TRAP144_CHANGE_FLAGS   VHCA_MAD_FIELD(160, 16)
#define VHCA_TRAP144_NODE_DESC      0x0001  /* ChangeFlags: NodeDescription */
#define VHCA_TRAP256_LID            VHCA_MAD_FIELD(96, 16)
#define VHCA_TRAP256_DR_SLID        VHCA_MAD_FIELD(112, 16)
#define VHCA_TRAP256_METHOD         VHCA_MAD_FIELD(128, 8)
#define VHCA_TRAP256_ATTR_ID        VHCA_MAD_FIELD(144, 16)
#define VHCA_TRAP256_ATTR_MOD       VHCA_MAD_FIELD(160, 32)
#define VHCA_TRAP256_MKEY           24      /* byte offset, 64 bits */
#define VHCA_TRAP256_DR_NOTICE      VHCA_MAD_FIELD(264, 1)
#define VHCA_TRAP256_DR_TRUNCATED   VHCA_MAD_FIELD(265, 1)
#define VHCA_TRAP256_DR_HOP_COUNT   VHCA_MAD_FIELD(266, 6)
#define VHCA_TRAP256_DR_RETURN_PATH 34      /* byte offset, 30 bytes */
#define VHCA_TRAP256_DR_PATH_MAX    30

/* PortInfo encodings (14.2.5.6): LinkWidth*, LinkSpeed*, VLCap. */
#define VHCA_PI_WIDTH_1X            0x01
#define VHCA_PI_WIDTH_4X            0x02
#define VHCA_PI_WIDTH_SET_SUPPORTED 0xff    /* LinkWidthEnabled 255 */
#define VHCA_PI_SPEED_SDR           0x1
#define VHCA_PI_SPEED_DDR           0x2
#define VHCA_PI_SPEED_QDR           0x4
#define VHCA_PI_SPEED_SET_SUPPORTED 0xf     /* LinkSpeedEnabled 15 */
#define VHCA_PI_VL_CAP_VL0          1       /* VLCap/OperationalVLs: VL0 */
#define VHCA_PI_LINK_DOWN_SLEEP     1
#define VHCA_PI_LINK_DOWN_POLLING   2

/*
 * 14.2.5.4 SwitchInfo; 14.2.5.10 LinearForwardingTable (a port per LID,
 * blocks of 64); 14.2.5.11 MulticastForwardingTable (a 16-bit port mask
 * per MLID, blocks of 32, AttributeModifier 31:28 the mask's position).
 */
#define VHCA_SI_LFT_CAP             VHCA_MAD_FIELD(0, 16)
#define VHCA_SI_RFT_CAP             VHCA_MAD_FIELD(16, 16)
#define VHCA_SI_MFT_CAP             VHCA_MAD_FIELD(32, 16)
#define VHCA_SI_LFT_TOP             VHCA_MAD_FIELD(48, 16)
#define VHCA_SI_DEFAULT_PORT        VHCA_MAD_FIELD(64, 8)
#define VHCA_SI_DEFAULT_MCAST_PRI   VHCA_MAD_FIELD(72, 8)
#define VHCA_SI_DEFAULT_MCAST_NOT   VHCA_MAD_FIELD(80, 8)
#define VHCA_SI_LIFE_TIME_VALUE     VHCA_MAD_FIELD(88, 5)
#define VHCA_SI_PORT_STATE_CHANGE   VHCA_MAD_FIELD(93, 1)
#define VHCA_SI_LIDS_PER_PORT       VHCA_MAD_FIELD(96, 16)
#define VHCA_SI_PARTITION_ENF_CAP   VHCA_MAD_FIELD(112, 16)
#define VHCA_SI_INBOUND_ENF_CAP     VHCA_MAD_FIELD(128, 1)
#define VHCA_SI_OUTBOUND_ENF_CAP    VHCA_MAD_FIELD(129, 1)
#define VHCA_SMP_LFT_PER_BLOCK      64
#define VHCA_SMP_MFT_PER_BLOCK      32
#define VHCA_SMP_MFT_PORTS_PER_POS  16

/* 14.2.5.8 SL2VLMappingTable: 16 SLs, 4 bits each. */
#define VHCA_SMP_SL2VL_FIELD(sl)    VHCA_MAD_FIELD((sl) * 4, 4)
/* 14.2.5.7 P_KeyTable: blocks of 32; 14.2.5.5 GUIDInfo: blocks of 8. */
#define VHCA_SMP_PKEYS_PER_BLOCK    32
#define VHCA_SMP_GUIDS_PER_BLOCK    8
/*
 * 14.2.5.9 VLArbitrationTable: blocks of 32 entries of 2 bytes (VL in
 * the low 4 bits of the first, Weight the second); AttributeModifier 1
 * low priority 0-31, 2 high 0-31, 3 low 32-63, 4 high 32-63.
 */
#define VHCA_SMP_VLARB_PER_BLOCK    32

/* 13.4.8.1 ClassPortInfo (PMA: 16.1.2). */
#define VHCA_CPI_BASE_VERSION       VHCA_MAD_FIELD(0, 8)
#define VHCA_CPI_CLASS_VERSION      VHCA_MAD_FIELD(8, 8)
#define VHCA_CPI_CAP_MASK           VHCA_MAD_FIELD(16, 16)
#define VHCA_CPI_RESP_TIME_VALUE    VHCA_MAD_FIELD(59, 5)
/* PMA ClassPortInfo CapabilityMask (16.1.2, Table 211). */
#define VHCA_PMA_CAP_ALL_PORT_SELECT        (1u << 8)
#define VHCA_PMA_CAP_EXT_WIDTH_NOIETF       (1u << 10)

/* 16.1.3.5 PortCounters (Table 214) and 16.1.4.1 PortCountersExtended. */
#define VHCA_PMA_PORT_SELECT        VHCA_MAD_FIELD(8, 8)
#define VHCA_PMA_COUNTER_SELECT     VHCA_MAD_FIELD(16, 16)
#define VHCA_PMA_ALL_PORTS          0xff
/* PortCounters' fields (their CounterSelect bits in the comments). */
#define VHCA_PC_LINK_DOWNED         VHCA_MAD_FIELD(56, 8)   /* 0x0004 */
#define VHCA_PC_RCV_ERRORS          VHCA_MAD_FIELD(64, 16)  /* 0x0008 */
#define VHCA_PC_XMIT_DISCARDS       VHCA_MAD_FIELD(112, 16) /* 0x0040 */
#define VHCA_PC_XMIT_CONSTRAINT     VHCA_MAD_FIELD(128, 8)  /* 0x0080 */
#define VHCA_PC_RCV_CONSTRAINT      VHCA_MAD_FIELD(136, 8)  /* 0x0100 */
#define VHCA_PC_VL15_DROPPED        VHCA_MAD_FIELD(176, 16) /* 0x0800 */
#define VHCA_PC_XMIT_DATA           VHCA_MAD_FIELD(192, 32) /* 0x1000 */
#define VHCA_PC_RCV_DATA            VHCA_MAD_FIELD(224, 32) /* 0x2000 */
#define VHCA_PC_XMIT_PKTS           VHCA_MAD_FIELD(256, 32) /* 0x4000 */
#define VHCA_PC_RCV_PKTS            VHCA_MAD_FIELD(288, 32) /* 0x8000 */
/* PortCountersExtended's 64-bit counters, byte offsets (0x1 .. 0x8). */
#define VHCA_PCE_XMIT_DATA          8
#define VHCA_PCE_RCV_DATA           16
#define VHCA_PCE_XMIT_PKTS          24
#define VHCA_PCE_RCV_PKTS           32

/*
 * Turn the request @mad into its response in place (13.4.5): Method
 * GetResp and @status, with the D bit of a directed route SMP set
 * (14.2.2).
 */
static inline void vhca_mad_make_response(uint8_t *mad, uint16_t status)
{
    if (mad[VHCA_MAD_MGMT_CLASS] == VHCA_MGMT_CLASS_SUBN_DR) {
        status |= VHCA_SMP_DIRECTION;
    }
    mad[VHCA_MAD_METHOD] = VHCA_MAD_METHOD_GET_RESP;
    vhca_st_be16(mad + VHCA_MAD_STATUS, status);
}

/*
 * The rules every subnet management agent applies before its attributes,
 * the HCA's (vhca_sma_process(), vhca-sma.c) and the switch's
 * (vhca_switch_sma(), switch/vhca-switch-sma.c) alike; both answer with
 * vhca_mad_make_response().  What is not shared, and why: each keeps
 * its own attribute table, as the handlers read and write their own
 * agent (VhcaCore, with the MAD_IFC flags; VhcaSwitch, with the port
 * the SMP came in by), and one table for both would reach them through
 * void pointers; and what follows a failed M_Key differs (the HCA runs
 * the M_Key lease and sends trap 256, 14.2.4.2; the switch counts a
 * drop).
 */
typedef enum VhcaSmaCheck {
    VHCA_SMA_NOT_OURS,      /* a response or a Trap: for an SM; no answer */
    VHCA_SMA_ANSWER,        /* answer at once with the status given */
    VHCA_SMA_REQUEST,       /* Get, Set, TrapRepress: the M_Key next */
} VhcaSmaCheck;

/*
 * SMP @mad's header (13.4.7, 14.2.5.1): responses and Traps are an SM's
 * business; a BaseVersion or ClassVersion other than 1 is answered
 * BAD_VERSION, a method other than Get, Set and TrapRepress
 * UNSUP_METHOD (*status; 0 for a request).
 */
static inline VhcaSmaCheck vhca_sma_check(const uint8_t *mad,
                                          uint16_t *status)
{
    uint8_t method = mad[VHCA_MAD_METHOD];

    *status = 0;
    if ((method & VHCA_MAD_METHOD_RESP) || method == VHCA_MAD_METHOD_TRAP) {
        return VHCA_SMA_NOT_OURS;
    }
    if (mad[VHCA_MAD_BASE_VERSION] != VHCA_MAD_BASE_VERSION_IB ||
        mad[VHCA_MAD_CLASS_VERSION] != VHCA_SMP_CLASS_VERSION) {
        *status = VHCA_MAD_STATUS_BAD_VERSION;
        return VHCA_SMA_ANSWER;
    }
    if (method != VHCA_MAD_METHOD_GET && method != VHCA_MAD_METHOD_SET &&
        method != VHCA_MAD_METHOD_TRAP_REPRESS) {
        *status = VHCA_MAD_STATUS_UNSUP_METHOD;
        return VHCA_SMA_ANSWER;
    }
    return VHCA_SMA_REQUEST;
}

/*
 * 14.2.4.1, protection levels (M_KeyProtectBits @protect): an SMP whose
 * M_Key does not match (@matches false: it is not the port's, which is
 * not 0) passes only as a Get below level 2 - a Set or TrapRepress
 * never does.  A failure is an M_Key violation: no answer.
 */
static inline bool vhca_sma_mkey_passes(bool matches, uint8_t method,
                                        uint8_t protect)
{
    return matches || (method == VHCA_MAD_METHOD_GET && protect < 2);
}

/*
 * PortInfo:PortState transitions an SM may ask of a port (7.2,
 * 14.2.5.6), from @cur to @next: 0 (no change) and DOWN always, ARMED
 * from INIT or ARMED, ACTIVE from ARMED or ACTIVE; INIT is the link's,
 * not the SM's.  The HCA's port and the switch's ports alike.
 */
static inline bool vhca_sma_port_state_set_ok(uint8_t cur, uint8_t next)
{
    switch (next) {
    case 0:
    case VHCA_PORT_DOWN:
        return true;
    case VHCA_PORT_ARMED:
        return cur == VHCA_PORT_INIT || cur == VHCA_PORT_ARMED;
    case VHCA_PORT_ACTIVE:
        return cur == VHCA_PORT_ARMED || cur == VHCA_PORT_ACTIVE;
    default:
        return false;
    }
}

/*
 * After the checks, the attribute (13.4.7): one the agent lacks, or a
 * Set of one it only reads, is answered UNSUP_ATTR.
 */
static inline uint16_t vhca_sma_attr_status(bool found, bool settable,
                                            uint8_t method)
{
    return !found || (method == VHCA_MAD_METHOD_SET && !settable) ?
           VHCA_MAD_STATUS_UNSUP_ATTR : 0;
}

/*
 * A request's common MAD header (13.4.2) in the 256 bytes at @mad, the
 * rest zero: BaseVersion 1, @mgmt_class at its class version (1 for
 * SubnMgt, 14.2.1, and PerfMgt, 16.1.1), @method, @tid and the
 * attribute.  For the SMA's traps (vhca-trap.c), and for the tests and
 * the switch's bench, which play a subnet or performance manager.
 */
static inline void vhca_mad_init(uint8_t *mad, uint8_t mgmt_class,
                                 uint8_t method, uint16_t attr_id,
                                 uint32_t attr_mod, uint64_t tid)
{
    memset(mad, 0, VHCA_MAD_SIZE);
    mad[VHCA_MAD_BASE_VERSION] = VHCA_MAD_BASE_VERSION_IB;
    mad[VHCA_MAD_MGMT_CLASS] = mgmt_class;
    mad[VHCA_MAD_CLASS_VERSION] = mgmt_class == VHCA_MGMT_CLASS_PERF ?
                                  VHCA_PMA_CLASS_VERSION :
                                  VHCA_SMP_CLASS_VERSION;
    mad[VHCA_MAD_METHOD] = method;
    vhca_st_be64(mad + VHCA_MAD_TID, tid);
    vhca_st_be16(mad + VHCA_MAD_ATTR_ID, attr_id);
    vhca_st_be32(mad + VHCA_MAD_ATTR_MOD, attr_mod);
}

/*
 * A directed route SMP (14.2.2) as it leaves an SM's CA by its port 1,
 * C14-9:1 done there (hop pointer 1): @hop_cnt hops, DrSLID and DrDLID
 * permissive (directed all the way), and the initial path that port
 * then the @hop_cnt - 1 ports of @path (NULL: none given).  For the
 * tests and the switch's bench, which play the SM.
 */
static inline void vhca_smp_init_dr(uint8_t *mad, uint8_t method,
                                    uint16_t attr_id, uint32_t attr_mod,
                                    uint64_t tid, uint8_t hop_cnt,
                                    const uint8_t *path)
{
    vhca_mad_init(mad, VHCA_MGMT_CLASS_SUBN_DR, method, attr_id, attr_mod,
                  tid);
    mad[VHCA_MAD_HOP_PTR] = 1;
    mad[VHCA_MAD_HOP_CNT] = hop_cnt;
    vhca_st_be16(mad + VHCA_SMP_DR_SLID, VHCA_IB_LID_PERMISSIVE);
    vhca_st_be16(mad + VHCA_SMP_DR_DLID, VHCA_IB_LID_PERMISSIVE);
    mad[VHCA_SMP_DR_INITIAL_PATH + 1] = 1;
    if (path && hop_cnt > 1) {
        /* Initial path entries 2..63: the 64 bytes hold no more. */
        memcpy(mad + VHCA_SMP_DR_INITIAL_PATH + 2, path,
               hop_cnt - 1 < 62 ? hop_cnt - 1 : 62);
    }
}

/*
 * The field accessors (the big-endian loads and stores are
 * vhca-internal.h's).  Callers keep @attr + the field inside the 256
 * bytes of the MAD: every offset above is a constant well inside its
 * attribute's data.
 */
/* Bit by bit, MSB first: MADs are rare, and this is plainly right. */
static inline uint32_t vhca_mad_get(const uint8_t *attr, VhcaMadField f)
{
    uint32_t v = 0;
    unsigned i;

    for (i = 0; i < f.width; i++) {
        unsigned bit = f.bit + i;

        v = (v << 1) | ((attr[bit / 8] >> (7 - bit % 8)) & 1);
    }
    return v;
}

static inline void vhca_mad_set(uint8_t *attr, VhcaMadField f, uint32_t v)
{
    unsigned i;

    for (i = 0; i < f.width; i++) {
        unsigned bit = f.bit + f.width - 1 - i;
        uint8_t mask = (uint8_t)(1u << (7 - bit % 8));

        if ((v >> i) & 1) {
            attr[bit / 8] |= mask;
        } else {
            attr[bit / 8] &= (uint8_t)~mask;
        }
    }
}

#endif /* HW_VHCA_MAD_H */
