/*
 * vhca engine: the wire formats - RoCEv2, and InfiniBand's own link.
 *
 * RoCEv2 (IBTA Vol 1, annex A17) carries the InfiniBand transport headers
 * (chapter 9) in UDP to port 4791 over IPv4 or IPv6 on Ethernet:
 *
 *   Ethernet [802.1Q] | IPv4/IPv6 | UDP | BTH | ext. headers | payload |
 *   pad | ICRC
 *
 * This module builds such frames and parses received ones.  The parser is
 * the first code that touches a frame from the wire: it accepts any length
 * and any bytes, reads nothing outside the frame, and says why it refused
 * a frame so that the engine can count drops by reason.  It checks the
 * format only; whether a packet is acceptable to a QP (PSN, P_Key, QPN,
 * payload size against the path MTU) is the transport's business.
 *
 * The encodings follow Linux's rxe bit for bit, so that a vhca guest and an
 * rxe guest on one Ethernet segment interoperate; the unit tests check
 * frames captured from rxe.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_WIRE_H
#define HW_VHCA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhca-core.h"

/*
 * Transport header sizes (IBTA Vol 1 9.2 and 9.3).  RDETH (9.3.1) belongs
 * to Reliable Datagram, which RoCEv2 devices do not implement.
 */
#define VHCA_IB_BTH_LEN             12  /* 9.2 Base Transport Header */
#define VHCA_IB_DETH_LEN            8   /* 9.3.2 Datagram */
#define VHCA_IB_RETH_LEN            16  /* 9.3.3 RDMA */
#define VHCA_IB_ATOMIC_ETH_LEN      28  /* 9.3.4 Atomic */
#define VHCA_IB_AETH_LEN            4   /* 9.3.5 ACK */
#define VHCA_IB_ATOMIC_ACK_ETH_LEN  8   /* 9.3.6 Atomic ACK */
#define VHCA_IB_IMMDT_LEN           4   /* 9.3.7 Immediate data */
#define VHCA_IB_IETH_LEN            4   /* 9.3.8 Invalidate */
#define VHCA_IB_FETH_LEN            4   /* IBTA 1.5 FLUSH extended header */
#define VHCA_IB_ICRC_LEN            4   /* 7.8.1 Invariant CRC */
#define VHCA_IB_XRCETH_LEN          4   /* annex A14: XRC SRQ number */

/* BTH TVer: the only transport header version (9.2). */
#define VHCA_IB_BTH_TVER            0
#define VHCA_IB_QPN_MASK            0xffffff

/*
 * BTH OpCode (9.2.1, the "OpCode field" table): the top three bits select
 * the transport service, the low five the operation.
 */
#define VHCA_IB_TRANSPORT_MASK      0xe0
#define VHCA_IB_TRANSPORT_RC        0x00
#define VHCA_IB_TRANSPORT_UC        0x20
#define VHCA_IB_TRANSPORT_RD        0x40
#define VHCA_IB_TRANSPORT_UD        0x60
/* Annex A14: XRC, 101b, the RC operations with an XRCETH in requests. */
#define VHCA_IB_TRANSPORT_XRC       0xa0

enum vhca_ib_operation {
    VHCA_IB_OP_SEND_FIRST                   = 0x00,
    VHCA_IB_OP_SEND_MIDDLE                  = 0x01,
    VHCA_IB_OP_SEND_LAST                    = 0x02,
    VHCA_IB_OP_SEND_LAST_IMM                = 0x03,
    VHCA_IB_OP_SEND_ONLY                    = 0x04,
    VHCA_IB_OP_SEND_ONLY_IMM                = 0x05,
    VHCA_IB_OP_RDMA_WRITE_FIRST             = 0x06,
    VHCA_IB_OP_RDMA_WRITE_MIDDLE            = 0x07,
    VHCA_IB_OP_RDMA_WRITE_LAST              = 0x08,
    VHCA_IB_OP_RDMA_WRITE_LAST_IMM          = 0x09,
    VHCA_IB_OP_RDMA_WRITE_ONLY              = 0x0a,
    VHCA_IB_OP_RDMA_WRITE_ONLY_IMM          = 0x0b,
    VHCA_IB_OP_RDMA_READ_REQUEST            = 0x0c,
    VHCA_IB_OP_RDMA_READ_RESPONSE_FIRST     = 0x0d,
    VHCA_IB_OP_RDMA_READ_RESPONSE_MIDDLE    = 0x0e,
    VHCA_IB_OP_RDMA_READ_RESPONSE_LAST      = 0x0f,
    VHCA_IB_OP_RDMA_READ_RESPONSE_ONLY      = 0x10,
    VHCA_IB_OP_ACKNOWLEDGE                  = 0x11,
    VHCA_IB_OP_ATOMIC_ACKNOWLEDGE           = 0x12,
    VHCA_IB_OP_COMPARE_SWAP                 = 0x13,
    VHCA_IB_OP_FETCH_ADD                    = 0x14,
    VHCA_IB_OP_SEND_LAST_INV                = 0x16,
    VHCA_IB_OP_SEND_ONLY_INV                = 0x17,
    /* IBTA 1.5 memory placement extensions (RC only) */
    VHCA_IB_OP_FLUSH                        = 0x1c,
    VHCA_IB_OP_ATOMIC_WRITE                 = 0x1d,
};

#define VHCA_IB_OPCODE(transport, op) \
    ((uint8_t)(VHCA_IB_TRANSPORT_ ## transport | VHCA_IB_OP_ ## op))

/* Which extension headers an opcode carries (VhcaWireOpcodeInfo.ext). */
enum {
    VHCA_WIRE_EXT_DETH          = 1u << 0,
    VHCA_WIRE_EXT_RETH          = 1u << 1,
    VHCA_WIRE_EXT_ATOMIC_ETH    = 1u << 2,
    VHCA_WIRE_EXT_AETH          = 1u << 3,
    VHCA_WIRE_EXT_ATOMIC_ACK    = 1u << 4,
    VHCA_WIRE_EXT_IMMDT         = 1u << 5,
    VHCA_WIRE_EXT_IETH          = 1u << 6,
    VHCA_WIRE_EXT_FETH          = 1u << 7,  /* before RETH */
    VHCA_WIRE_EXT_XRCETH        = 1u << 8,  /* right after the BTH */
};

/* Properties of an opcode (VhcaWireOpcodeInfo.flags). */
enum {
    VHCA_WIRE_OPF_PAYLOAD       = 1u << 0,  /* may carry data */
    VHCA_WIRE_OPF_FIRST         = 1u << 1,  /* starts a message */
    VHCA_WIRE_OPF_LAST          = 1u << 2,  /* ends a message */
    VHCA_WIRE_OPF_REQUEST       = 1u << 3,  /* requester to responder */
    VHCA_WIRE_OPF_RESPONSE      = 1u << 4,  /* responder to requester */
};

typedef struct VhcaWireOpcodeInfo {
    const char *name;
    uint16_t ext;           /* VHCA_WIRE_EXT_* */
    uint8_t flags;          /* VHCA_WIRE_OPF_* */
    uint8_t hdr_len;        /* BTH plus the extension headers */
} VhcaWireOpcodeInfo;

/*
 * NULL if the parser does not know @opcode.  It knows the RC, UC, UD and
 * XRC opcodes, IBTA 1.5's RC FLUSH and ATOMIC_WRITE included, and the
 * RoCEv2 CNP (VHCA_BTH_OPCODE_CNP: a BTH and 16 reserved bytes of
 * payload, neither request nor response); RD is unknown.
 */
const VhcaWireOpcodeInfo *vhca_wire_opcode_info(uint8_t opcode);

/*
 * AETH Syndrome (9.3.5, the "AETH Syndrome field" table): bit 7 reserved,
 * bits 6:5 the kind, bits 4:0 a credit count, an RNR timer or a NAK code.
 */
#define VHCA_IB_AETH_KIND_MASK      0x60
#define VHCA_IB_AETH_KIND_ACK       0x00
#define VHCA_IB_AETH_KIND_RNR_NAK   0x20
#define VHCA_IB_AETH_KIND_RESERVED  0x40
#define VHCA_IB_AETH_KIND_NAK       0x60
#define VHCA_IB_AETH_VALUE_MASK     0x1f

enum vhca_ib_nak_code {
    VHCA_IB_NAK_PSN_SEQ_ERROR       = 0,
    VHCA_IB_NAK_INVALID_REQUEST     = 1,
    VHCA_IB_NAK_REMOTE_ACCESS       = 2,
    VHCA_IB_NAK_REMOTE_OP           = 3,
    VHCA_IB_NAK_INVALID_RD_REQUEST  = 4,
};

/* Credit code 31: the responder does not do end-to-end flow control. */
#define VHCA_IB_CREDIT_CODE_INVALID 31
#define VHCA_IB_CREDITS_UNLIMITED   UINT32_MAX

static inline uint8_t vhca_aeth_ack(uint8_t credit_code)
{
    return VHCA_IB_AETH_KIND_ACK | (credit_code & VHCA_IB_AETH_VALUE_MASK);
}

static inline uint8_t vhca_aeth_rnr_nak(uint8_t timer_code)
{
    return VHCA_IB_AETH_KIND_RNR_NAK | (timer_code & VHCA_IB_AETH_VALUE_MASK);
}

static inline uint8_t vhca_aeth_nak(enum vhca_ib_nak_code code)
{
    return VHCA_IB_AETH_KIND_NAK | (code & VHCA_IB_AETH_VALUE_MASK);
}

/*
 * End-to-end flow control credits (9.7.7, the "Credit Count Encoding"
 * table): the receive WQEs a 5-bit credit code stands for, and
 * VHCA_IB_CREDITS_UNLIMITED for code 31.  Only the low five bits of @code
 * are used.
 */
uint32_t vhca_aeth_credits(uint8_t code);
/* The largest code whose count does not exceed @wqes (never 31). */
uint8_t vhca_aeth_credit_code(uint32_t wqes);

/*
 * RNR NAK timer (9.7, the "RNR NAK Timer Field Encodings" table): the delay
 * in microseconds a 5-bit code asks for; code 0 is the longest, 655.36 ms.
 */
uint32_t vhca_ib_rnr_timer_us(uint8_t code);

/*
 * Local ACK Timeout (9.7.6.1): 4.096 us * 2^timeout for the 5-bit QP
 * attribute, in nanoseconds; 0 disables the timer (VHCA_IB_TIMEOUT_NONE).
 */
#define VHCA_IB_TIMEOUT_NONE        UINT64_MAX
uint64_t vhca_ib_local_ack_timeout_ns(uint8_t timeout);

/*
 * Path MTU in bytes for enum vhca_ib_mtu, 0 if @mtu is not one.  Inline:
 * segmenting, receiving and scheduling ask it several times a packet.
 */
static inline uint32_t vhca_ib_mtu_bytes(uint8_t mtu)
{
    if (mtu < VHCA_IB_MTU_256 || mtu > VHCA_IB_MTU_4096) {
        return 0;
    }
    return 256u << (mtu - VHCA_IB_MTU_256);
}

/*
 * Segmentation of a message into packets (ch. 9.7, and the FIRST, MIDDLE,
 * LAST, ONLY opcode sequences): every packet but the last carries exactly
 * one path MTU of data.
 */
#define VHCA_IB_MAX_MSG_LEN         (1u << 31)

typedef enum VhcaWireMsg {
    VHCA_WIRE_MSG_SEND,
    VHCA_WIRE_MSG_SEND_IMM,
    VHCA_WIRE_MSG_SEND_INV,         /* RC only */
    VHCA_WIRE_MSG_WRITE,
    VHCA_WIRE_MSG_WRITE_IMM,
    VHCA_WIRE_MSG_READ_RESPONSE,    /* RC only */
} VhcaWireMsg;

typedef struct VhcaWireSegment {
    uint8_t opcode;
    uint32_t offset;                /* of this packet's data in the message */
    uint32_t len;                   /* data bytes in this packet */
} VhcaWireSegment;

/*
 * Packets needed for a @msg_len byte message at path MTU @mtu (enum
 * vhca_ib_mtu): at least one, 0 if the message is too long or @mtu is not
 * an MTU encoding.
 */
uint32_t vhca_wire_packet_count(uint32_t msg_len, uint8_t mtu);

/*
 * Packet @index of a message of kind @msg on @transport
 * (VHCA_IB_TRANSPORT_RC, _UC, _UD or _XRC).  Returns false, leaving @seg
 * untouched, if the message cannot be sent that way: bad MTU, length,
 * index, or a kind the service lacks (UD sends a single packet only).
 */
bool vhca_wire_segment(uint8_t transport, VhcaWireMsg msg, uint32_t msg_len,
                       uint8_t mtu, uint32_t index, VhcaWireSegment *seg);

/* Base Transport Header (9.2). */
typedef struct VhcaWireBth {
    uint8_t opcode;
    bool solicited;                 /* SE */
    bool mig_req;                   /* M */
    uint8_t pad;                    /* PadCnt: set by parse and by build */
    uint8_t tver;                   /* set by parse; build writes 0 */
    uint16_t pkey;
    bool fecn;                      /* byte 4 bit 7 (F) */
    bool becn;                      /* byte 4 bit 6 (B) */
    uint32_t dest_qpn;
    bool ack_req;                   /* A */
    uint32_t psn;
} VhcaWireBth;

typedef struct VhcaWireReth {
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
} VhcaWireReth;

typedef struct VhcaWireAtomicEth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;              /* swap or add data */
    uint64_t compare;
} VhcaWireAtomicEth;

/*
 * FLUSH Extended Transport Header (IBTA 1.5 memory placement extensions):
 * bits 3:0 the placement type, 5:4 the selectivity level, the rest
 * reserved (ignored on receive, 0 on send).  The values are
 * enum vhca_flush_type bits and enum vhca_flush_level.
 */
typedef struct VhcaWireFeth {
    uint8_t placement;              /* 4 bits */
    uint8_t selectivity;            /* 2 bits */
} VhcaWireFeth;

typedef struct VhcaWireAeth {
    uint8_t syndrome;               /* vhca_aeth_ack() and friends */
    uint32_t msn;
} VhcaWireAeth;

typedef struct VhcaWireDeth {
    uint32_t qkey;
    uint32_t src_qpn;
} VhcaWireDeth;

/*
 * The InfiniBand part of a packet.  An extension header's member is
 * meaningful only if the opcode carries it (VhcaWireOpcodeInfo.ext).
 * Multi-byte fields are host values of the big-endian wire fields;
 * imm_data keeps the wire's byte order semantics of ImmDt (an opaque
 * 32-bit value, __be32 in verbs): write it back with a big-endian store.
 */
typedef struct VhcaWireTransport {
    VhcaWireBth bth;
    VhcaWireFeth feth;
    VhcaWireDeth deth;
    VhcaWireReth reth;
    VhcaWireAtomicEth atomic;
    VhcaWireAeth aeth;
    uint64_t atomic_orig;           /* AtomicAckETH OrigRemData */
    uint32_t imm_data;              /* ImmDt */
    uint32_t inv_rkey;              /* IETH */
    uint32_t xrc_srqn;              /* XRCETH XRCSRQ (24 bits) */
} VhcaWireTransport;

/*
 * Ethernet, IP and UDP.  Addresses are GIDs (network byte order): an
 * IPv4-mapped GID (::ffff:a.b.c.d, A17.4.1.1) is IPv4, anything else IPv6.
 */
typedef struct VhcaWireNet {
    uint8_t dmac[VHCA_ETH_ALEN];
    uint8_t smac[VHCA_ETH_ALEN];
    bool vlan;                      /* one 802.1Q tag */
    uint16_t vlan_tci;
    uint8_t sgid[VHCA_GID_LEN];
    uint8_t dgid[VHCA_GID_LEN];
    /*
     * IPv4 TOS, IPv6 Traffic Class: DSCP << 2 | ECN (RFC 3168 section
     * 5); vhca_wire_ecn() reads the ECN codepoint of a received packet.
     */
    uint8_t traffic_class;
    uint8_t hop_limit;              /* IPv4 TTL */
    uint32_t flow_label;            /* IPv6 only */
    uint16_t ip_id;                 /* IPv4 only */
    uint16_t udp_sport;             /* vhca_wire_udp_sport() */
} VhcaWireNet;

/*
 * The InfiniBand link (link=ib, IBTA chapter 7): a packet is
 *
 *   LRH | [GRH] | BTH | ext. headers | payload | pad | ICRC | VCRC
 *
 * carried whole as one datagram of the backend.  The GRH (8.3) is there
 * when LNH says so (VHCA_IB_LNH_GLOBAL); its fields are VhcaWireNet's
 * sgid, dgid, traffic_class, flow_label and hop_limit.
 */
#define VHCA_IB_LRH_LEN             8   /* 7.7 Local Route Header */
#define VHCA_IB_GRH_LEN             40  /* 8.3 Global Route Header */
#define VHCA_IB_VCRC_LEN            2   /* 7.8.2 Variant CRC */
#define VHCA_IB_GRH_NEXT_HEADER     0x1b    /* 8.3.1: IBA transport */
#define VHCA_IB_LID_PERMISSIVE      0xffff  /* 7.11.1.2 */
#define VHCA_IB_LID_MCAST_FIRST     0xc000  /* 7.11.1.1, to 0xfffe */
#define VHCA_IB_VL_SMP              15      /* 7.6.5: VL15, QP0 only */

/* LRH LNH, Link Next Header (7.7.4). */
enum vhca_ib_lnh {
    VHCA_IB_LNH_RAW             = 0,    /* raw: no IBA transport */
    VHCA_IB_LNH_IP_NONIBA       = 1,    /* raw IPv6 */
    VHCA_IB_LNH_LOCAL           = 2,    /* IBA local: BTH follows */
    VHCA_IB_LNH_GLOBAL          = 3,    /* IBA global: GRH, then BTH */
};

typedef struct VhcaWireLrh {
    uint8_t vl;                     /* 4 bits */
    uint8_t lver;                   /* set by parse; build writes 0 */
    uint8_t sl;                     /* 4 bits */
    uint8_t lnh;                    /* enum vhca_ib_lnh; set by build */
    uint16_t dlid;
    uint16_t slid;
    uint16_t pkt_len;               /* 11 bits, words: set by both */
} VhcaWireLrh;

/* Which link a VhcaWirePacket travels on. */
typedef enum VhcaWireLink {
    VHCA_WIRE_LINK_ROCE,            /* Ethernet, IP, UDP 4791 */
    VHCA_WIRE_LINK_IB,              /* LRH, VCRC */
} VhcaWireLink;

typedef struct VhcaWirePacket {
    VhcaWireLink link;
    VhcaWireLrh lrh;                /* link == VHCA_WIRE_LINK_IB */
    /*
     * The packet has a global route header: always on RoCE (the IP
     * header stands for it), on IB when LNH is GLOBAL.  Build: set it.
     */
    bool grh;
    VhcaWireNet net;
    VhcaWireTransport tp;
    const uint8_t *payload;         /* pad excluded */
    uint32_t payload_len;

    /*
     * Set by the parser only: where the layers start.  On IB, ipv6 is
     * grh (a GRH has the IPv6 header's layout), l3_offset is the end of
     * the LRH (the GRH or the BTH) and l4_offset the BTH.
     */
    bool ipv6;
    uint32_t l3_offset;
    uint32_t l4_offset;             /* the UDP header */
    uint32_t l4_len;                /* IP payload the IP header vouches */
    uint32_t bth_offset;
    uint32_t payload_offset;
} VhcaWirePacket;

/* Ethernet (with a tag) + IPv6 + UDP + the longest IB headers + ICRC. */
#define VHCA_WIRE_MAX_HEADERS   (18 + 40 + 8 + VHCA_IB_BTH_LEN + \
                                 VHCA_IB_XRCETH_LEN + \
                                 VHCA_IB_ATOMIC_ETH_LEN + VHCA_IB_ICRC_LEN)

bool vhca_wire_gid_is_ipv4(const uint8_t gid[VHCA_GID_LEN]);

/*
 * The ECN field (RFC 3168 section 5) of a parsed RoCE packet, VHCA_ECN_*;
 * an IB packet's GRH TClass carries none (IB marks FECN in the BTH).
 */
static inline uint8_t vhca_wire_ecn(const VhcaWirePacket *pkt)
{
    return pkt->link == VHCA_WIRE_LINK_ROCE ?
           pkt->net.traffic_class & VHCA_ECN_MASK : VHCA_ECN_NOT_ECT;
}

/*
 * The priority (IEEE 802.1Q, 0..7) a RoCE frame travels at, the one a
 * PFC frame pauses (802.1Qbb): the PCP of its 802.1Q tag if it has one,
 * otherwise its DSCP's class selector, DSCP >> 3, as mlx5 maps an
 * untagged frame in DSCP trust mode.  The one place a RoCE frame's
 * priority is decided, for what we send and what we receive.
 */
static inline uint8_t vhca_wire_priority(const VhcaWireNet *net)
{
    if (net->vlan) {
        return (uint8_t)(net->vlan_tci >> VHCA_VLAN_PCP_SHIFT);
    }
    return (uint8_t)(net->traffic_class >> (VHCA_DSCP_SHIFT + 3));
}

/*
 * Do P_Keys @a and @b let their holders talk (IBTA 10.9.3, C10-113)?
 * The low 15 bits are equal and at least one of the two is a full
 * member (bit 15 set); a key with the low 15 bits zero (0x0000, 0x8000)
 * is invalid and matches nothing.  For the HCA's P_Key table and QPs,
 * and the switch's partition enforcement.
 */
static inline bool vhca_ib_pkey_match(uint16_t a, uint16_t b)
{
    return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) &&
           ((a | b) & 0x8000);
}

/* 7.11.1.1: a multicast LID, 0xC000..0xFFFE (not the permissive LID). */
static inline bool vhca_ib_lid_is_multicast(uint16_t lid)
{
    return lid >= VHCA_IB_LID_MCAST_FIRST && lid != VHCA_IB_LID_PERMISSIVE;
}

/*
 * UDP source port of a flow (annex A17.3.2.1: one port per flow):
 * the convention of Linux's RoCE drivers, rxe included
 * (rdma_get_udp_sport()): the 20-bit IPv6 flow label, or when it is 0 a
 * symmetric hash of the two QPNs, folded into 0xc000..0xffff.
 */
uint16_t vhca_wire_udp_sport(uint32_t flow_label, uint32_t lqpn,
                             uint32_t rqpn);
/* The flow label Linux derives from two QPNs (rdma_calc_flow_label()). */
uint32_t vhca_wire_flow_label(uint32_t lqpn, uint32_t rqpn);

/*
 * Write @pkt as a complete frame into @buf: headers, payload, a zero pad
 * to a multiple of 4 bytes (PadCnt), and the ICRC.  IPv4 frames have DF
 * set and a header checksum; the UDP checksum is 0 over IPv4 and IPv6, as
 * rxe sends it (the ICRC protects the packet; RFC 6935/6936 allow a zero
 * UDP checksum over IPv6 for tunnels, and rxe's receive socket accepts
 * it).
 *
 * With @pkt->link VHCA_WIRE_LINK_IB the packet is an InfiniBand one
 * instead: LRH (lrh.vl, sl, dlid, slid; LNH from pkt->grh, PktLen
 * computed), the GRH if pkt->grh (PayLen computed, NxtHdr 0x1B, IPVer
 * 6), the transport as above, ICRC over the invariant fields (7.8.1),
 * then the VCRC (7.8.2); net.dmac, smac, vlan, ip_id and udp_sport are
 * not used.
 *
 * Returns the frame length, or 0 if the packet is malformed (unknown
 * opcode, payload on an opcode without one, a field wider than its wire
 * field, IPv4 and IPv6 GIDs mixed) or @size is too small.
 */
size_t vhca_wire_build(const VhcaWirePacket *pkt, uint8_t *buf, size_t size);

/*
 * Make @pkt an InfiniBand packet without a GRH for vhca_wire_build():
 * LRH on VL @vl from @slid to @dlid, BTH @opcode to QP @dest_qpn with
 * P_Key @pkey, every other field 0 (the caller adds what its opcode
 * carries: DETH, RETH, the payload).  The SMP and GMP builders below
 * start from it, and so do the tests and the switch's bench.
 */
void vhca_wire_ib_init(VhcaWirePacket *pkt, uint8_t vl, uint16_t dlid,
                       uint16_t slid, uint8_t opcode, uint16_t pkey,
                       uint32_t dest_qpn);

/*
 * An SMP as an IB packet (14.2.2): LRH on VL15 from @slid to @dlid, a
 * UD SEND ONLY from QP0 to QP0 with the default P_Key, the 256-byte
 * @mad, ICRC and VCRC.  For the SMA's traps (vhca-trap.c) and the
 * switch (switch/vhca-switch.c).  Returns the length, 0 if @size is too
 * small.
 */
#define VHCA_WIRE_SMP_LEN   (VHCA_IB_LRH_LEN + VHCA_IB_BTH_LEN + \
                             VHCA_IB_DETH_LEN + VHCA_MAD_SIZE + \
                             VHCA_IB_ICRC_LEN + VHCA_IB_VCRC_LEN)
size_t vhca_wire_build_smp(const uint8_t *mad, uint16_t dlid, uint16_t slid,
                           uint8_t *buf, size_t size);

/*
 * A GMP as an IB packet (13.5.1, 13.5.3): LRH on VL0 and SL @sl from
 * @slid to @dlid, a UD SEND ONLY from QP1 (the GSI) to QP @dest_qpn with
 * P_Key @pkey and the GSI's Q_Key (VHCA_GSI_QKEY), the 256-byte @mad,
 * ICRC and VCRC; no GRH.  For a GSI agent's replies (the switch's PMA,
 * switch/vhca-switch.c: back to the requester's QP, on its SL and
 * P_Key) and the requests of the tests.  Returns the length, 0 if @size
 * is too small.  The same length as an SMP's: the headers are the same.
 */
#define VHCA_WIRE_GMP_LEN   (VHCA_IB_LRH_LEN + VHCA_IB_BTH_LEN + \
                             VHCA_IB_DETH_LEN + VHCA_MAD_SIZE + \
                             VHCA_IB_ICRC_LEN + VHCA_IB_VCRC_LEN)
size_t vhca_wire_build_gmp(const uint8_t *mad, uint8_t sl, uint16_t dlid,
                           uint16_t slid, uint16_t pkey, uint32_t dest_qpn,
                           uint8_t *buf, size_t size);

/* Why vhca_wire_parse() refused a frame; VHCA_WIRE_OK if it did not. */
typedef enum VhcaWireError {
    VHCA_WIRE_OK,
    VHCA_WIRE_ERR_TRUNCATED,        /* ends inside a header or datagram */
    VHCA_WIRE_ERR_ETHERTYPE,        /* neither IPv4 nor IPv6 */
    VHCA_WIRE_ERR_IP_VERSION,       /* does not match the ethertype */
    VHCA_WIRE_ERR_IP_HDR_LEN,       /* IPv4 IHL below 5 */
    VHCA_WIRE_ERR_IP_LEN,           /* IPv4 total length below IHL */
    VHCA_WIRE_ERR_IP_CHECKSUM,
    VHCA_WIRE_ERR_IP_FRAGMENT,
    VHCA_WIRE_ERR_NOT_UDP,          /* IPv6: no extension headers either */
    VHCA_WIRE_ERR_UDP_LEN,          /* below 8 or beyond the IP payload */
    VHCA_WIRE_ERR_UDP_PORT,         /* destination is not 4791 */
    VHCA_WIRE_ERR_UDP_CHECKSUM,     /* non-zero and wrong */
    VHCA_WIRE_ERR_BTH_LEN,          /* no room for BTH and ICRC */
    VHCA_WIRE_ERR_ICRC,
    VHCA_WIRE_ERR_TVER,
    VHCA_WIRE_ERR_OPCODE,           /* unknown or unsupported */
    VHCA_WIRE_ERR_EXT_LEN,          /* opcode's headers do not fit */
    VHCA_WIRE_ERR_PAD,              /* PadCnt > data, or data % 4 != 0 */
    VHCA_WIRE_ERR_PAYLOAD,          /* data on an opcode without payload */
    /* InfiniBand link (vhca_wire_parse_lrh) */
    VHCA_WIRE_ERR_LRH_LEN,          /* PktLen disagrees with the datagram */
    VHCA_WIRE_ERR_LVER,             /* LVer not 0 (7.7.3) */
    VHCA_WIRE_ERR_LNH,              /* raw packet: not IBA transport */
    VHCA_WIRE_ERR_VCRC,
    VHCA_WIRE_ERR_GRH,              /* IPVer, NxtHdr or PayLen wrong */
    /* MAC Control (vhca_wire_parse_pfc) */
    VHCA_WIRE_ERR_PFC_ADDRESS,      /* not to 01-80-C2-00-00-01 */
    VHCA_WIRE_ERR_PFC_OPCODE,       /* a MAC Control opcode not PFC's */
    VHCA_WIRE_ERR__MAX
} VhcaWireError;

const char *vhca_wire_error_name(VhcaWireError err);

/*
 * vhca_wire_priority() of any Ethernet frame of @len bytes, for the NIC's
 * own frames: the tag's PCP, else an IPv4 or IPv6 packet's DSCP class
 * selector, else (ARP, a frame too short to say) priority 0.
 */
uint8_t vhca_wire_frame_priority(const uint8_t *frame, size_t len);

/*
 * A priority-based flow control frame (IEEE 802.1Qbb clause 36, a MAC
 * Control frame of IEEE 802.3 annex 31D): which priorities it names
 * (bit i of @enable: time[i] is meant) and their pause times in quanta.
 */
#define VHCA_PFC_DEST_MAC       { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 }
/* Ethernet header, opcode, priority-enable vector, eight times. */
#define VHCA_PFC_FRAME_LEN      (VHCA_ETH_HLEN + 2 + 2 + \
                                 2 * VHCA_PFC_PRIORITIES)
/* The shortest Ethernet frame without its FCS (IEEE 802.3 4.4.2). */
#define VHCA_ETH_MIN_FRAME      60

typedef struct VhcaWirePfc {
    uint8_t enable;                 /* bit i: time[i] is valid */
    uint16_t time[VHCA_PFC_PRIORITIES];     /* quanta of 512 bit times */
} VhcaWirePfc;

/*
 * Parse a received MAC Control frame (EtherType 0x8808, untagged: MAC
 * Control frames carry no 802.1Q tag) as a PFC frame: room for the
 * opcode, vector and the eight times (TRUNCATED), destination
 * 01-80-C2-00-00-01 (PFC_ADDRESS), opcode 0x0101 (PFC_OPCODE; 802.3x
 * PAUSE, 0x0001, is one of those: the port does not do link-level
 * pause).  The vector's high octet is reserved and ignored on receipt
 * (802.1Qbb 36.1.3.1), as are the times of priorities not in it.
 * @pfc is cleared when it fails.
 */
VhcaWireError vhca_wire_parse_pfc(const uint8_t *frame, size_t len,
                                  VhcaWirePfc *pfc);

/*
 * Write @pfc as a PFC frame from @smac into @buf, padded to the shortest
 * Ethernet frame with zeros.  Returns its length (VHCA_ETH_MIN_FRAME), 0
 * if @size is too small.
 */
size_t vhca_wire_build_pfc(const uint8_t smac[VHCA_ETH_ALEN],
                           const VhcaWirePfc *pfc, uint8_t *buf, size_t size);

/*
 * Parse a received Ethernet frame (no FCS) of @len bytes into @pkt, in
 * two stages over the one descriptor, so that the receive path walks a
 * frame once whatever it turns out to be.  Trailing bytes after the IP
 * datagram (Ethernet padding) are ignored.  Each stage clears @pkt when
 * it fails.
 *
 * vhca_wire_parse_net() recognises RoCEv2 (A17.3): Ethernet with at most
 * one 802.1Q tag, a whole IPv4 datagram or an IPv6 packet without
 * extension headers, UDP to port 4791.  It fills @pkt->net (addresses as
 * GIDs), ipv6 and the layer offsets; the receive demux decides from
 * pkt->net.dgid whether the packet is ours.  It does not look past the
 * UDP ports: a frame it accepts may still be damaged.
 *
 * vhca_wire_parse_ib() continues on the same @frame and @pkt: integrity
 * (IPv4 header checksum, UDP length and checksum, ICRC), then the BTH,
 * the extension headers and the payload, which then points into @frame.
 *
 * vhca_wire_parse() is both stages.
 */
VhcaWireError vhca_wire_parse_net(const uint8_t *frame, size_t len,
                                  VhcaWirePacket *pkt);
VhcaWireError vhca_wire_parse_ib(const uint8_t *frame, size_t len,
                                 VhcaWirePacket *pkt);
VhcaWireError vhca_wire_parse(const uint8_t *frame, size_t len,
                              VhcaWirePacket *pkt);

/*
 * The InfiniBand link's first stage, in place of vhca_wire_parse_net():
 * @frame is one whole IB packet, LRH to VCRC.  Checks, in this order:
 * room for an LRH and a VCRC (TRUNCATED), the VCRC, the datagram's last
 * two bytes (VCRC), LVer (LVER), LNH IBA local or global (LNH), that
 * PktLen covers the datagram exactly, LRH to ICRC with the VCRC after it
 * (LRH_LEN), room for the GRH (TRUNCATED), and the GRH if there is one:
 * IPVer 6, NxtHdr 0x1B, PayLen (GRH).  LRH reserved bits are ignored.
 * Fills pkt->link, lrh, grh, net (from the GRH; cleared without one),
 * ipv6 (= grh), l3_offset (8, the end of the LRH), l4_offset and
 * bth_offset (the BTH) and l4_len (BTH through ICRC).
 * vhca_wire_parse_ib() continues from there: on link IB its integrity
 * stage is the ICRC of an IB packet (BTH_LEN if there is no room for
 * BTH and ICRC), then the transport as on RoCE; the payload ends before
 * the pad, the ICRC and the VCRC.
 */
VhcaWireError vhca_wire_parse_lrh(const uint8_t *frame, size_t len,
                                  VhcaWirePacket *pkt);

/*
 * VCRC (7.8.2): CRC-16 over the @len bytes of the packet from the LRH
 * through the ICRC: polynomial 0x100B reflected, initial value 0xFFFF,
 * complemented; stored little-endian after the ICRC.  vhca-icrc.c.
 */
uint16_t vhca_vcrc(const uint8_t *lrh, size_t len);
/*
 * The two ways vhca_vcrc() computes it, for the tests: the table, on
 * any CPU, and carry-less multiplication, false if this CPU or build has
 * none (vhca_vcrc() takes it where it may).
 */
uint16_t vhca_vcrc_table(const uint8_t *lrh, size_t len);
bool vhca_vcrc_clmul(const uint8_t *lrh, size_t len, uint16_t *vcrc);

/*
 * ICRC (IBTA 7.8.1, A17.3.3): CRC-32 over 8 bytes of ones standing for the
 * LRH, then from the IP header to the end of the payload and pad with the
 * variant fields set to ones: IPv4 TOS, TTL and header checksum, IPv6
 * traffic class, flow label and hop limit, the UDP checksum, and BTH
 * byte 4 (F, B and the reserved bits).  Stored little-endian after the
 * pad, as rxe does.
 *
 * @ip points at the IP header, @ip_hlen long (at most 60), followed by
 * UDP and a BTH; the @len bytes from @ip (at least ip_hlen + 8 +
 * VHCA_IB_BTH_LEN, or the result is 0) are covered.  vhca-icrc.c.
 */
uint32_t vhca_icrc(const uint8_t *ip, size_t ip_hlen, bool ipv6, size_t len);
/*
 * ICRC of an InfiniBand packet (7.8.1): the same CRC over the @len bytes
 * from the LRH at @lrh to the end of the pad, with @grh (LNH IBA global)
 * saying whether a GRH follows the LRH.  Variant fields count as ones:
 * the LRH's VL, or the whole LRH when there is a GRH; the GRH's TClass,
 * FlowLabel and HopLmt; BTH byte 4.  Stored little-endian.  0 if @len does
 * not cover the LRH, GRH and BTH.
 */
uint32_t vhca_ib_icrc(const uint8_t *lrh, bool grh, size_t len);
/* @icrc, a vhca_icrc() result, continued over @len more bytes at @data. */
uint32_t vhca_icrc_extend(uint32_t icrc, const uint8_t *data, size_t len);

#endif /* HW_VHCA_WIRE_H */
