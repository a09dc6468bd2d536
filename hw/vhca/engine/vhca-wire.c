/*
 * vhca engine: the wire formats, building and parsing RoCEv2 frames (IBTA
 * Vol 1 chapter 9 and annex A17) and InfiniBand packets (chapters 7 and
 * 8 below the same transport), and the encodings of the RC transport's
 * numbers (credits, timers, MTU, segmentation).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-internal.h"
#include "vhca-psn.h"
#include "vhca-wire.h"

#define ETH_P_IPV4              0x0800
#define ETH_P_IPV6              0x86dd
#define ETH_TYPE_OFFSET         12

#define IPV4_HLEN               20
#define IPV4_OFF_TOS            1
#define IPV4_OFF_TOT_LEN        2
#define IPV4_OFF_ID             4
#define IPV4_OFF_FRAG           6
#define IPV4_FRAG_DF            0x4000
#define IPV4_FRAG_MF_OFFSET     0x3fff  /* MF flag and fragment offset */
#define IPV4_OFF_TTL            8
#define IPV4_OFF_PROTO          9
#define IPV4_OFF_CHECK          10
#define IPV4_OFF_SADDR          12
#define IPV4_OFF_DADDR          16

#define IPV6_HLEN               40
#define IPV6_OFF_PAYLOAD_LEN    4
#define IPV6_OFF_NEXT_HDR       6
#define IPV6_OFF_HOP_LIMIT      7
#define IPV6_OFF_SADDR          8
#define IPV6_OFF_DADDR          24
#define IPV6_FLOW_LABEL_MASK    0xfffff

#define IPPROTO_UDP_NUM         17
#define UDP_HLEN                8
#define UDP_OFF_SPORT           0
#define UDP_OFF_DPORT           2
#define UDP_OFF_LEN             4
#define UDP_OFF_CHECK           6
#define UDP_MAX_LEN             0xffff

/*
 * Header layouts, in bytes (IBTA Vol 1 9.2 and 9.3):
 *
 *   BTH        0 OpCode | 1 SE:1 M:1 PadCnt:2 TVer:4 | 2-3 P_Key |
 *              4 F:1 B:1 reserved:6 | 5-7 DestQP | 8 AckReq:1 reserved:7 |
 *              9-11 PSN
 *   DETH       0-3 Q_Key | 4 reserved | 5-7 SrcQP
 *   RETH       0-7 VA | 8-11 R_Key | 12-15 DMA Length
 *   AtomicETH  0-7 VA | 8-11 R_Key | 12-19 Swap (Add) Data |
 *              20-27 Compare Data
 *   AETH       0 Syndrome | 1-3 MSN
 *   AtomicAckETH 0-7 Original Remote Data
 *   ImmDt      0-3 Immediate Data
 *   IETH       0-3 R_Key
 *   FETH       0-3 reserved:26 SelectivityLevel:2 PlacementType:4
 *              (IBTA 1.5; before the RETH of a FLUSH)
 *   XRCETH     0 reserved | 1-3 XRCSRQ (annex A14; right after the BTH
 *              of every XRC request)
 *
 * F and B are InfiniBand's congestion notification bits; RoCEv2 marks
 * congestion in the IP header's ECN field instead.
 */
#define BTH_SE                  0x80
#define BTH_MIG                 0x40
#define BTH_PAD_SHIFT           4
#define BTH_PAD_MASK            0x3
#define BTH_TVER_MASK           0xf
#define BTH_FECN                0x80
#define BTH_BECN                0x40
#define BTH_ACK_REQ             0x80
#define FETH_PLACEMENT_MASK     0x0f
#define FETH_SELECTIVITY_SHIFT  4
#define FETH_SELECTIVITY_MASK   0x3

/*
 * InfiniBand link headers, in bytes:
 *
 *   LRH (7.7)  0 VL:4 LVer:4 | 1 SL:4 reserved:2 LNH:2 | 2-3 DLID |
 *              4-5 reserved:5 PktLen:11 | 6-7 SLID
 *   GRH (8.3)  0-3 IPVer:4 TClass:8 FlowLabel:20 | 4-5 PayLen |
 *              6 NxtHdr | 7 HopLmt | 8-23 SGID | 24-39 DGID
 *
 * PktLen counts 4-byte words from the LRH through the ICRC (7.7.8);
 * PayLen bytes from after the GRH through the ICRC (8.3.1).  The GRH is
 * laid out as an IPv6 header, and the IPV6_OFF_* offsets serve for both.
 */
#define LRH_VL_SHIFT            4
#define LRH_LVER_MASK           0x0f
#define LRH_SL_SHIFT            4
#define LRH_LNH_MASK            0x3
#define LRH_OFF_DLID            2
#define LRH_OFF_PKT_LEN         4
#define LRH_OFF_SLID            6
#define LRH_PKT_LEN_MASK        0x7ff
#define LRH_VL_MAX              15
#define LRH_SL_MAX              15
#define GRH_IPVER               6

static const uint8_t vhca_ipv4_mapped_prefix[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
};

/* Network byte order loads and stores for the headers. */
static uint32_t ld_be24(const uint8_t *p)
{
    return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}

static void st_be24(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 16);
    vhca_st_be16(p + 1, (uint16_t)v);
}

/*
 * The opcode table (9.2.1 and the header layouts of 9.3): which extension
 * headers each opcode carries, in the order they follow the BTH.
 */
#define EXT_LEN(ext) \
    ((((ext) & VHCA_WIRE_EXT_FETH) ? VHCA_IB_FETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_DETH) ? VHCA_IB_DETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_RETH) ? VHCA_IB_RETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_ATOMIC_ETH) ? VHCA_IB_ATOMIC_ETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_AETH) ? VHCA_IB_AETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_ATOMIC_ACK) ? VHCA_IB_ATOMIC_ACK_ETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_IMMDT) ? VHCA_IB_IMMDT_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_IETH) ? VHCA_IB_IETH_LEN : 0) + \
     (((ext) & VHCA_WIRE_EXT_XRCETH) ? VHCA_IB_XRCETH_LEN : 0))

#define OPCODE(transport, op, ext_, flags_) \
    [VHCA_IB_OPCODE(transport, op)] = { \
        .name = #transport "_" #op, \
        .ext = (ext_), \
        .flags = (flags_), \
        .hdr_len = VHCA_IB_BTH_LEN + EXT_LEN(ext_), \
    }

#define DETH        VHCA_WIRE_EXT_DETH
#define RETH        VHCA_WIRE_EXT_RETH
#define ATOMIC_ETH  VHCA_WIRE_EXT_ATOMIC_ETH
#define AETH        VHCA_WIRE_EXT_AETH
#define ATOMIC_ACK  VHCA_WIRE_EXT_ATOMIC_ACK
#define IMMDT       VHCA_WIRE_EXT_IMMDT
#define IETH        VHCA_WIRE_EXT_IETH
#define FETH        VHCA_WIRE_EXT_FETH
#define XRCETH      VHCA_WIRE_EXT_XRCETH

/* Position in a message and direction. */
#define REQ_FIRST   (VHCA_WIRE_OPF_REQUEST | VHCA_WIRE_OPF_FIRST)
#define REQ_MIDDLE  VHCA_WIRE_OPF_REQUEST
#define REQ_LAST    (VHCA_WIRE_OPF_REQUEST | VHCA_WIRE_OPF_LAST)
#define REQ_ONLY    (REQ_FIRST | REQ_LAST)
#define RSP_FIRST   (VHCA_WIRE_OPF_RESPONSE | VHCA_WIRE_OPF_FIRST)
#define RSP_MIDDLE  VHCA_WIRE_OPF_RESPONSE
#define RSP_LAST    (VHCA_WIRE_OPF_RESPONSE | VHCA_WIRE_OPF_LAST)
#define RSP_ONLY    (RSP_FIRST | RSP_LAST)
#define DATA        VHCA_WIRE_OPF_PAYLOAD

static const VhcaWireOpcodeInfo vhca_wire_opcodes[256] = {
    OPCODE(RC, SEND_FIRST,                  0,              DATA | REQ_FIRST),
    OPCODE(RC, SEND_MIDDLE,                 0,              DATA | REQ_MIDDLE),
    OPCODE(RC, SEND_LAST,                   0,              DATA | REQ_LAST),
    OPCODE(RC, SEND_LAST_IMM,               IMMDT,          DATA | REQ_LAST),
    OPCODE(RC, SEND_ONLY,                   0,              DATA | REQ_ONLY),
    OPCODE(RC, SEND_ONLY_IMM,               IMMDT,          DATA | REQ_ONLY),
    OPCODE(RC, RDMA_WRITE_FIRST,            RETH,           DATA | REQ_FIRST),
    OPCODE(RC, RDMA_WRITE_MIDDLE,           0,              DATA | REQ_MIDDLE),
    OPCODE(RC, RDMA_WRITE_LAST,             0,              DATA | REQ_LAST),
    OPCODE(RC, RDMA_WRITE_LAST_IMM,         IMMDT,          DATA | REQ_LAST),
    OPCODE(RC, RDMA_WRITE_ONLY,             RETH,           DATA | REQ_ONLY),
    OPCODE(RC, RDMA_WRITE_ONLY_IMM,         RETH | IMMDT,   DATA | REQ_ONLY),
    OPCODE(RC, RDMA_READ_REQUEST,           RETH,           REQ_ONLY),
    OPCODE(RC, RDMA_READ_RESPONSE_FIRST,    AETH,           DATA | RSP_FIRST),
    OPCODE(RC, RDMA_READ_RESPONSE_MIDDLE,   0,              DATA | RSP_MIDDLE),
    OPCODE(RC, RDMA_READ_RESPONSE_LAST,     AETH,           DATA | RSP_LAST),
    OPCODE(RC, RDMA_READ_RESPONSE_ONLY,     AETH,           DATA | RSP_ONLY),
    OPCODE(RC, ACKNOWLEDGE,                 AETH,           RSP_ONLY),
    OPCODE(RC, ATOMIC_ACKNOWLEDGE,          AETH | ATOMIC_ACK, RSP_ONLY),
    OPCODE(RC, COMPARE_SWAP,                ATOMIC_ETH,     REQ_ONLY),
    OPCODE(RC, FETCH_ADD,                   ATOMIC_ETH,     REQ_ONLY),
    OPCODE(RC, SEND_LAST_INV,               IETH,           DATA | REQ_LAST),
    OPCODE(RC, SEND_ONLY_INV,               IETH,           DATA | REQ_ONLY),
    /*
     * IBTA 1.5 memory placement extensions, laid out as rxe does: FLUSH
     * is FETH and RETH without data, ATOMIC WRITE a RETH and 8 bytes
     * (the responder checks the length).
     */
    OPCODE(RC, FLUSH,                       FETH | RETH,    REQ_ONLY),
    OPCODE(RC, ATOMIC_WRITE,                RETH,           DATA | REQ_ONLY),
    /* UC: the SEND and RDMA WRITE subset of RC. */
    OPCODE(UC, SEND_FIRST,                  0,              DATA | REQ_FIRST),
    OPCODE(UC, SEND_MIDDLE,                 0,              DATA | REQ_MIDDLE),
    OPCODE(UC, SEND_LAST,                   0,              DATA | REQ_LAST),
    OPCODE(UC, SEND_LAST_IMM,               IMMDT,          DATA | REQ_LAST),
    OPCODE(UC, SEND_ONLY,                   0,              DATA | REQ_ONLY),
    OPCODE(UC, SEND_ONLY_IMM,               IMMDT,          DATA | REQ_ONLY),
    OPCODE(UC, RDMA_WRITE_FIRST,            RETH,           DATA | REQ_FIRST),
    OPCODE(UC, RDMA_WRITE_MIDDLE,           0,              DATA | REQ_MIDDLE),
    OPCODE(UC, RDMA_WRITE_LAST,             0,              DATA | REQ_LAST),
    OPCODE(UC, RDMA_WRITE_LAST_IMM,         IMMDT,          DATA | REQ_LAST),
    OPCODE(UC, RDMA_WRITE_ONLY,             RETH,           DATA | REQ_ONLY),
    OPCODE(UC, RDMA_WRITE_ONLY_IMM,         RETH | IMMDT,   DATA | REQ_ONLY),
    /* UD: SENDs of a single packet, addressed by the DETH. */
    OPCODE(UD, SEND_ONLY,                   DETH,           DATA | REQ_ONLY),
    OPCODE(UD, SEND_ONLY_IMM,               DETH | IMMDT,   DATA | REQ_ONLY),
    /*
     * XRC (annex A14): the RC operations; every request carries an
     * XRCETH naming the target's XRC SRQ, responses do not.
     */
    OPCODE(XRC, SEND_FIRST,             XRCETH,         DATA | REQ_FIRST),
    OPCODE(XRC, SEND_MIDDLE,            XRCETH,         DATA | REQ_MIDDLE),
    OPCODE(XRC, SEND_LAST,              XRCETH,         DATA | REQ_LAST),
    OPCODE(XRC, SEND_LAST_IMM,          XRCETH | IMMDT, DATA | REQ_LAST),
    OPCODE(XRC, SEND_ONLY,              XRCETH,         DATA | REQ_ONLY),
    OPCODE(XRC, SEND_ONLY_IMM,          XRCETH | IMMDT, DATA | REQ_ONLY),
    OPCODE(XRC, RDMA_WRITE_FIRST,       XRCETH | RETH,  DATA | REQ_FIRST),
    OPCODE(XRC, RDMA_WRITE_MIDDLE,      XRCETH,         DATA | REQ_MIDDLE),
    OPCODE(XRC, RDMA_WRITE_LAST,        XRCETH,         DATA | REQ_LAST),
    OPCODE(XRC, RDMA_WRITE_LAST_IMM,    XRCETH | IMMDT, DATA | REQ_LAST),
    OPCODE(XRC, RDMA_WRITE_ONLY,        XRCETH | RETH,  DATA | REQ_ONLY),
    OPCODE(XRC, RDMA_WRITE_ONLY_IMM,    XRCETH | RETH | IMMDT,
           DATA | REQ_ONLY),
    OPCODE(XRC, RDMA_READ_REQUEST,      XRCETH | RETH,  REQ_ONLY),
    OPCODE(XRC, RDMA_READ_RESPONSE_FIRST,   AETH,       DATA | RSP_FIRST),
    OPCODE(XRC, RDMA_READ_RESPONSE_MIDDLE,  0,          DATA | RSP_MIDDLE),
    OPCODE(XRC, RDMA_READ_RESPONSE_LAST,    AETH,       DATA | RSP_LAST),
    OPCODE(XRC, RDMA_READ_RESPONSE_ONLY,    AETH,       DATA | RSP_ONLY),
    OPCODE(XRC, ACKNOWLEDGE,            AETH,           RSP_ONLY),
    OPCODE(XRC, ATOMIC_ACKNOWLEDGE,     AETH | ATOMIC_ACK, RSP_ONLY),
    OPCODE(XRC, COMPARE_SWAP,           XRCETH | ATOMIC_ETH, REQ_ONLY),
    OPCODE(XRC, FETCH_ADD,              XRCETH | ATOMIC_ETH, REQ_ONLY),
    OPCODE(XRC, SEND_LAST_INV,          XRCETH | IETH,  DATA | REQ_LAST),
    OPCODE(XRC, SEND_ONLY_INV,          XRCETH | IETH,  DATA | REQ_ONLY),
    /*
     * RoCEv2's Congestion Notification Packet (annex A17.9.3): a BTH,
     * 16 reserved bytes, the ICRC; the receive path takes it before the
     * transport (vhca-cc.c checks the length).
     */
    [VHCA_BTH_OPCODE_CNP] = {
        .name = "CNP", .ext = 0, .flags = DATA, .hdr_len = VHCA_IB_BTH_LEN,
    },
};

const VhcaWireOpcodeInfo *vhca_wire_opcode_info(uint8_t opcode)
{
    const VhcaWireOpcodeInfo *info = &vhca_wire_opcodes[opcode];

    return info->name ? info : NULL;
}

/*
 * End-to-end credit count encoding (9.7.7): codes 0..30 stand for these
 * numbers of receive WQEs, roughly doubling every two codes; 31 means
 * the responder does not limit the requester.
 */
static const uint32_t vhca_credit_counts[VHCA_IB_CREDIT_CODE_INVALID] = {
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
    512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768,
};

uint32_t vhca_aeth_credits(uint8_t code)
{
    code &= VHCA_IB_AETH_VALUE_MASK;
    if (code == VHCA_IB_CREDIT_CODE_INVALID) {
        return VHCA_IB_CREDITS_UNLIMITED;
    }
    return vhca_credit_counts[code];
}

uint8_t vhca_aeth_credit_code(uint32_t wqes)
{
    uint8_t code = 0;

    /* Never advertise more than the responder has: round down. */
    while (code + 1 < VHCA_IB_CREDIT_CODE_INVALID &&
           vhca_credit_counts[code + 1] <= wqes) {
        code++;
    }
    return code;
}

/* RNR NAK timer field encodings, in microseconds (0.01 ms .. 655.36 ms). */
static const uint32_t vhca_rnr_timer_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
    61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint32_t vhca_ib_rnr_timer_us(uint8_t code)
{
    return vhca_rnr_timer_us[code & VHCA_IB_AETH_VALUE_MASK];
}

uint64_t vhca_ib_local_ack_timeout_ns(uint8_t timeout)
{
    timeout &= 0x1f;
    if (timeout == 0) {
        return VHCA_IB_TIMEOUT_NONE;
    }
    /* 4.096 us = 4096 ns; 31 gives about 2.4 hours, well inside 64 bits. */
    return 4096ull << timeout;
}

uint32_t vhca_wire_packet_count(uint32_t msg_len, uint8_t mtu)
{
    uint32_t mtu_bytes = vhca_ib_mtu_bytes(mtu);

    if (!mtu_bytes || msg_len > VHCA_IB_MAX_MSG_LEN) {
        return 0;
    }
    if (msg_len == 0) {
        return 1;               /* an ONLY packet without data */
    }
    return (uint32_t)(((uint64_t)msg_len + mtu_bytes - 1) / mtu_bytes);
}

enum { SEG_FIRST, SEG_MIDDLE, SEG_LAST, SEG_ONLY, SEG__MAX };

static const uint8_t vhca_seg_ops[][SEG__MAX] = {
    [VHCA_WIRE_MSG_SEND] = {
        VHCA_IB_OP_SEND_FIRST, VHCA_IB_OP_SEND_MIDDLE,
        VHCA_IB_OP_SEND_LAST, VHCA_IB_OP_SEND_ONLY,
    },
    [VHCA_WIRE_MSG_SEND_IMM] = {
        VHCA_IB_OP_SEND_FIRST, VHCA_IB_OP_SEND_MIDDLE,
        VHCA_IB_OP_SEND_LAST_IMM, VHCA_IB_OP_SEND_ONLY_IMM,
    },
    [VHCA_WIRE_MSG_SEND_INV] = {
        VHCA_IB_OP_SEND_FIRST, VHCA_IB_OP_SEND_MIDDLE,
        VHCA_IB_OP_SEND_LAST_INV, VHCA_IB_OP_SEND_ONLY_INV,
    },
    [VHCA_WIRE_MSG_WRITE] = {
        VHCA_IB_OP_RDMA_WRITE_FIRST, VHCA_IB_OP_RDMA_WRITE_MIDDLE,
        VHCA_IB_OP_RDMA_WRITE_LAST, VHCA_IB_OP_RDMA_WRITE_ONLY,
    },
    [VHCA_WIRE_MSG_WRITE_IMM] = {
        VHCA_IB_OP_RDMA_WRITE_FIRST, VHCA_IB_OP_RDMA_WRITE_MIDDLE,
        VHCA_IB_OP_RDMA_WRITE_LAST_IMM, VHCA_IB_OP_RDMA_WRITE_ONLY_IMM,
    },
    [VHCA_WIRE_MSG_READ_RESPONSE] = {
        VHCA_IB_OP_RDMA_READ_RESPONSE_FIRST,
        VHCA_IB_OP_RDMA_READ_RESPONSE_MIDDLE,
        VHCA_IB_OP_RDMA_READ_RESPONSE_LAST,
        VHCA_IB_OP_RDMA_READ_RESPONSE_ONLY,
    },
};

/* Can @transport carry a message of kind @msg in @npkts packets? */
static bool vhca_seg_allowed(uint8_t transport, VhcaWireMsg msg,
                             uint32_t npkts)
{
    switch (transport) {
    case VHCA_IB_TRANSPORT_RC:
    case VHCA_IB_TRANSPORT_XRC:
        return true;
    case VHCA_IB_TRANSPORT_UC:
        return msg != VHCA_WIRE_MSG_SEND_INV &&
               msg != VHCA_WIRE_MSG_READ_RESPONSE;
    case VHCA_IB_TRANSPORT_UD:
        /* Datagrams are SENDs of a single packet. */
        return (msg == VHCA_WIRE_MSG_SEND || msg == VHCA_WIRE_MSG_SEND_IMM) &&
               npkts == 1;
    default:
        return false;
    }
}

bool vhca_wire_segment(uint8_t transport, VhcaWireMsg msg, uint32_t msg_len,
                       uint8_t mtu, uint32_t index, VhcaWireSegment *seg)
{
    uint32_t npkts = vhca_wire_packet_count(msg_len, mtu);
    uint32_t mtu_bytes = vhca_ib_mtu_bytes(mtu);
    unsigned pos;

    if ((unsigned)msg >= sizeof(vhca_seg_ops) / sizeof(vhca_seg_ops[0]) ||
        npkts == 0 || index >= npkts ||
        !vhca_seg_allowed(transport, msg, npkts)) {
        return false;
    }
    if (npkts == 1) {
        pos = SEG_ONLY;
    } else if (index == 0) {
        pos = SEG_FIRST;
    } else if (index == npkts - 1) {
        pos = SEG_LAST;
    } else {
        pos = SEG_MIDDLE;
    }
    seg->opcode = transport | vhca_seg_ops[msg][pos];
    /* index < npkts <= 2^31 / 256: the offset fits and is <= msg_len. */
    seg->offset = index * mtu_bytes;
    seg->len = msg_len - seg->offset < mtu_bytes ? msg_len - seg->offset
                                                 : mtu_bytes;
    return true;
}

bool vhca_wire_gid_is_ipv4(const uint8_t gid[VHCA_GID_LEN])
{
    return !memcmp(gid, vhca_ipv4_mapped_prefix,
                   sizeof(vhca_ipv4_mapped_prefix));
}

uint32_t vhca_wire_flow_label(uint32_t lqpn, uint32_t rqpn)
{
    /* Symmetric: both ends of a connection get the same label. */
    uint64_t v = (uint64_t)lqpn * rqpn;

    v ^= v >> 20;
    v ^= v >> 40;
    return (uint32_t)(v & IPV6_FLOW_LABEL_MASK);
}

uint16_t vhca_wire_udp_sport(uint32_t flow_label, uint32_t lqpn,
                             uint32_t rqpn)
{
    uint32_t low, high;

    flow_label &= IPV6_FLOW_LABEL_MASK;
    if (!flow_label) {
        flow_label = vhca_wire_flow_label(lqpn, rqpn);
    }
    /* Fold 20 bits into 14 and put them in the dynamic port range. */
    low = flow_label & 0x3fff;
    high = flow_label & 0xfc000;
    low ^= high >> 14;
    return (uint16_t)(0xc000 | low);
}

/*
 * RFC 1071 one's complement sum of big-endian 16-bit words, added up 32
 * bits at a time (RFC 1071 2.(C) "Parallel Summation"): the carries out of
 * each half are folded back by vhca_csum_fold(), which gives the sum of
 * the 16-bit words with half the additions.
 */
static uint64_t vhca_csum_add(uint64_t sum, const uint8_t *p, size_t len)
{
    size_t i;

    for (i = 0; i + 4 <= len; i += 4) {
        sum += vhca_ld_be32(p + i);
    }
    if (len & 2) {
        sum += vhca_ld_be16(p + i);
        i += 2;
    }
    if (len & 1) {
        sum += (uint32_t)p[i] << 8;
    }
    return sum;
}

static uint16_t vhca_csum_fold(uint64_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)sum;
}

/* Is the UDP checksum of @udp (@udp_len bytes) right for these addresses? */
static bool vhca_udp_checksum_ok(const uint8_t *ip, bool ipv6,
                                 const uint8_t *udp, uint16_t udp_len)
{
    uint64_t sum;

    if (ipv6) {
        sum = vhca_csum_add(0, ip + IPV6_OFF_SADDR, 2 * VHCA_GID_LEN);
    } else {
        sum = vhca_csum_add(0, ip + IPV4_OFF_SADDR, 8);
    }
    sum += IPPROTO_UDP_NUM + (uint32_t)udp_len;
    sum = vhca_csum_add(sum, udp, udp_len);
    return vhca_csum_fold(sum) == 0xffff;
}

/* Write the extension headers @ext in wire order; returns their end. */
static uint8_t *vhca_wire_put_ext(uint8_t *p, uint16_t ext,
                                  const VhcaWireTransport *tp)
{
    if (ext & VHCA_WIRE_EXT_XRCETH) {
        p[0] = 0;
        st_be24(p + 1, tp->xrc_srqn);
        p += VHCA_IB_XRCETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_FETH) {
        vhca_st_be32(p, (uint32_t)tp->feth.placement |
                   (uint32_t)tp->feth.selectivity << FETH_SELECTIVITY_SHIFT);
        p += VHCA_IB_FETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_DETH) {
        vhca_st_be32(p, tp->deth.qkey);
        p[4] = 0;
        st_be24(p + 5, tp->deth.src_qpn);
        p += VHCA_IB_DETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_RETH) {
        vhca_st_be64(p, tp->reth.va);
        vhca_st_be32(p + 8, tp->reth.rkey);
        vhca_st_be32(p + 12, tp->reth.dma_len);
        p += VHCA_IB_RETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_ATOMIC_ETH) {
        vhca_st_be64(p, tp->atomic.va);
        vhca_st_be32(p + 8, tp->atomic.rkey);
        vhca_st_be64(p + 12, tp->atomic.swap_add);
        vhca_st_be64(p + 20, tp->atomic.compare);
        p += VHCA_IB_ATOMIC_ETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_AETH) {
        p[0] = tp->aeth.syndrome;
        st_be24(p + 1, tp->aeth.msn);
        p += VHCA_IB_AETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_ATOMIC_ACK) {
        vhca_st_be64(p, tp->atomic_orig);
        p += VHCA_IB_ATOMIC_ACK_ETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_IMMDT) {
        vhca_st_be32(p, tp->imm_data);
        p += VHCA_IB_IMMDT_LEN;
    }
    if (ext & VHCA_WIRE_EXT_IETH) {
        vhca_st_be32(p, tp->inv_rkey);
        p += VHCA_IB_IETH_LEN;
    }
    return p;
}

/* The caller has checked that the opcode's headers are all there. */
static void vhca_wire_get_ext(const uint8_t *p, uint16_t ext,
                              VhcaWireTransport *tp)
{
    if (ext & VHCA_WIRE_EXT_XRCETH) {
        tp->xrc_srqn = ld_be24(p + 1);
        p += VHCA_IB_XRCETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_FETH) {
        uint32_t feth = vhca_ld_be32(p);

        tp->feth.placement = feth & FETH_PLACEMENT_MASK;
        tp->feth.selectivity = (feth >> FETH_SELECTIVITY_SHIFT) &
                               FETH_SELECTIVITY_MASK;
        p += VHCA_IB_FETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_DETH) {
        tp->deth.qkey = vhca_ld_be32(p);
        tp->deth.src_qpn = ld_be24(p + 5);
        p += VHCA_IB_DETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_RETH) {
        tp->reth.va = vhca_ld_be64(p);
        tp->reth.rkey = vhca_ld_be32(p + 8);
        tp->reth.dma_len = vhca_ld_be32(p + 12);
        p += VHCA_IB_RETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_ATOMIC_ETH) {
        tp->atomic.va = vhca_ld_be64(p);
        tp->atomic.rkey = vhca_ld_be32(p + 8);
        tp->atomic.swap_add = vhca_ld_be64(p + 12);
        tp->atomic.compare = vhca_ld_be64(p + 20);
        p += VHCA_IB_ATOMIC_ETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_AETH) {
        tp->aeth.syndrome = p[0];
        tp->aeth.msn = ld_be24(p + 1);
        p += VHCA_IB_AETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_ATOMIC_ACK) {
        tp->atomic_orig = vhca_ld_be64(p);
        p += VHCA_IB_ATOMIC_ACK_ETH_LEN;
    }
    if (ext & VHCA_WIRE_EXT_IMMDT) {
        tp->imm_data = vhca_ld_be32(p);
        p += VHCA_IB_IMMDT_LEN;
    }
    if (ext & VHCA_WIRE_EXT_IETH) {
        tp->inv_rkey = vhca_ld_be32(p);
    }
}

static void vhca_wire_put_bth(uint8_t *p, const VhcaWireBth *bth,
                              uint8_t pad)
{
    p[0] = bth->opcode;
    p[1] = (bth->solicited ? BTH_SE : 0) | (bth->mig_req ? BTH_MIG : 0) |
           (uint8_t)(pad << BTH_PAD_SHIFT) | VHCA_IB_BTH_TVER;
    vhca_st_be16(p + 2, bth->pkey);
    p[4] = (bth->fecn ? BTH_FECN : 0) | (bth->becn ? BTH_BECN : 0);
    st_be24(p + 5, bth->dest_qpn);
    p[8] = bth->ack_req ? BTH_ACK_REQ : 0;
    st_be24(p + 9, bth->psn);
}

static void vhca_wire_get_bth(const uint8_t *p, VhcaWireBth *bth)
{
    bth->opcode = p[0];
    bth->solicited = p[1] & BTH_SE;
    bth->mig_req = p[1] & BTH_MIG;
    bth->pad = (p[1] >> BTH_PAD_SHIFT) & BTH_PAD_MASK;
    bth->tver = p[1] & BTH_TVER_MASK;
    bth->pkey = vhca_ld_be16(p + 2);
    bth->fecn = p[4] & BTH_FECN;
    bth->becn = p[4] & BTH_BECN;
    bth->dest_qpn = ld_be24(p + 5);
    bth->ack_req = p[8] & BTH_ACK_REQ;
    bth->psn = ld_be24(p + 9);
}

/* Fields wider than their place on the wire are the caller's bug. */
static bool vhca_wire_fields_fit(const VhcaWirePacket *pkt)
{
    const VhcaWireTransport *tp = &pkt->tp;

    return tp->bth.dest_qpn <= VHCA_IB_QPN_MASK &&
           tp->bth.psn <= VHCA_PSN_MASK &&
           tp->aeth.msn <= VHCA_MSN_MASK &&
           tp->deth.src_qpn <= VHCA_IB_QPN_MASK &&
           tp->feth.placement <= FETH_PLACEMENT_MASK &&
           tp->feth.selectivity <= FETH_SELECTIVITY_MASK &&
           tp->xrc_srqn <= VHCA_IB_QPN_MASK &&
           pkt->net.flow_label <= IPV6_FLOW_LABEL_MASK;
}

/* What both links refuse to build, before anything is written. */
static bool vhca_wire_build_ok(const VhcaWirePacket *pkt,
                               const VhcaWireOpcodeInfo *info)
{
    return info &&
           (!pkt->payload_len || (info->flags & VHCA_WIRE_OPF_PAYLOAD)) &&
           (!pkt->payload_len || pkt->payload) &&
           vhca_wire_fields_fit(pkt);
}

/* Bytes from the BTH through the ICRC. */
static size_t vhca_wire_tp_len(const VhcaWirePacket *pkt,
                               const VhcaWireOpcodeInfo *info, uint8_t pad)
{
    return (size_t)info->hdr_len + pkt->payload_len + pad +
           VHCA_IB_ICRC_LEN;
}

/*
 * The transport part, the same on both links: BTH, extension headers,
 * payload and a zero pad at @bth.  Returns where the ICRC goes.
 */
static uint8_t *vhca_wire_put_transport(uint8_t *bth,
                                        const VhcaWirePacket *pkt,
                                        const VhcaWireOpcodeInfo *info,
                                        uint8_t pad)
{
    uint8_t *p;

    vhca_wire_put_bth(bth, &pkt->tp.bth, pad);
    p = vhca_wire_put_ext(bth + VHCA_IB_BTH_LEN, info->ext, &pkt->tp);
    if (pkt->payload_len) {
        memcpy(p, pkt->payload, pkt->payload_len);
        p += pkt->payload_len;
    }
    memset(p, 0, pad);
    return p + pad;
}

static size_t vhca_wire_build_roce(const VhcaWirePacket *pkt,
                                   const VhcaWireOpcodeInfo *info,
                                   uint8_t pad, uint8_t *buf, size_t size)
{
    const VhcaWireNet *net = &pkt->net;
    bool ipv6 = !vhca_wire_gid_is_ipv4(net->sgid);
    bool dst_ipv6 = !vhca_wire_gid_is_ipv4(net->dgid);
    size_t l2_len = VHCA_ETH_HLEN + (net->vlan ? VHCA_VLAN_HLEN : 0);
    size_t ip_hlen = ipv6 ? IPV6_HLEN : IPV4_HLEN;
    size_t udp_len, frame_len;
    uint8_t *ip, *udp, *p;

    if (ipv6 != dst_ipv6) {
        return 0;
    }
    udp_len = UDP_HLEN + vhca_wire_tp_len(pkt, info, pad);
    /* IPv4's total length includes its header; IPv6's does not. */
    if (udp_len + (ipv6 ? 0 : IPV4_HLEN) > UDP_MAX_LEN) {
        return 0;
    }
    frame_len = l2_len + ip_hlen + udp_len;
    if (frame_len > size) {
        return 0;
    }

    memcpy(buf, net->dmac, VHCA_ETH_ALEN);
    memcpy(buf + VHCA_ETH_ALEN, net->smac, VHCA_ETH_ALEN);
    p = buf + ETH_TYPE_OFFSET;
    if (net->vlan) {
        vhca_st_be16(p, VHCA_ETH_P_8021Q);
        vhca_st_be16(p + 2, net->vlan_tci);
        p += VHCA_VLAN_HLEN;
    }
    vhca_st_be16(p, ipv6 ? ETH_P_IPV6 : ETH_P_IPV4);

    ip = buf + l2_len;
    if (ipv6) {
        vhca_st_be32(ip, (6u << 28) | ((uint32_t)net->traffic_class << 20) |
                    net->flow_label);
        vhca_st_be16(ip + IPV6_OFF_PAYLOAD_LEN, (uint16_t)udp_len);
        ip[IPV6_OFF_NEXT_HDR] = IPPROTO_UDP_NUM;
        ip[IPV6_OFF_HOP_LIMIT] = net->hop_limit;
        memcpy(ip + IPV6_OFF_SADDR, net->sgid, VHCA_GID_LEN);
        memcpy(ip + IPV6_OFF_DADDR, net->dgid, VHCA_GID_LEN);
    } else {
        ip[0] = 0x45;
        ip[IPV4_OFF_TOS] = net->traffic_class;
        vhca_st_be16(ip + IPV4_OFF_TOT_LEN, (uint16_t)(IPV4_HLEN + udp_len));
        vhca_st_be16(ip + IPV4_OFF_ID, net->ip_id);
        /* RoCE packets must not be fragmented: DF, as rxe sets it. */
        vhca_st_be16(ip + IPV4_OFF_FRAG, IPV4_FRAG_DF);
        ip[IPV4_OFF_TTL] = net->hop_limit;
        ip[IPV4_OFF_PROTO] = IPPROTO_UDP_NUM;
        vhca_st_be16(ip + IPV4_OFF_CHECK, 0);
        memcpy(ip + IPV4_OFF_SADDR, net->sgid + 12, 4);
        memcpy(ip + IPV4_OFF_DADDR, net->dgid + 12, 4);
        vhca_st_be16(ip + IPV4_OFF_CHECK,
                (uint16_t)~vhca_csum_fold(vhca_csum_add(0, ip, IPV4_HLEN)));
    }

    udp = ip + ip_hlen;
    vhca_st_be16(udp + UDP_OFF_SPORT, net->udp_sport);
    vhca_st_be16(udp + UDP_OFF_DPORT, VHCA_ROCE_V2_UDP_PORT);
    vhca_st_be16(udp + UDP_OFF_LEN, (uint16_t)udp_len);
    vhca_st_be16(udp + UDP_OFF_CHECK, 0);

    p = vhca_wire_put_transport(udp + UDP_HLEN, pkt, info, pad);
    vhca_st_le32(p, vhca_icrc(ip, ip_hlen, ipv6, (size_t)(p - ip)));
    return frame_len;
}

/* LRH | [GRH] | transport | ICRC | VCRC (chapters 7 and 8). */
static size_t vhca_wire_build_ib(const VhcaWirePacket *pkt,
                                 const VhcaWireOpcodeInfo *info,
                                 uint8_t pad, uint8_t *buf, size_t size)
{
    const VhcaWireLrh *lrh = &pkt->lrh;
    const VhcaWireNet *net = &pkt->net;
    size_t bth_off = VHCA_IB_LRH_LEN + (pkt->grh ? VHCA_IB_GRH_LEN : 0);
    size_t tp_len = vhca_wire_tp_len(pkt, info, pad);
    size_t pkt_len = bth_off + tp_len;      /* what PktLen counts */
    uint8_t *p;

    /* Every part is a multiple of 4 bytes, so pkt_len is too. */
    if (lrh->vl > LRH_VL_MAX || lrh->sl > LRH_SL_MAX ||
        pkt_len / 4 > LRH_PKT_LEN_MASK ||
        pkt_len + VHCA_IB_VCRC_LEN > size) {
        return 0;
    }

    buf[0] = (uint8_t)(lrh->vl << LRH_VL_SHIFT);        /* LVer 0 */
    buf[1] = (uint8_t)(lrh->sl << LRH_SL_SHIFT) |
             (pkt->grh ? VHCA_IB_LNH_GLOBAL : VHCA_IB_LNH_LOCAL);
    vhca_st_be16(buf + LRH_OFF_DLID, lrh->dlid);
    vhca_st_be16(buf + LRH_OFF_PKT_LEN, (uint16_t)(pkt_len / 4));
    vhca_st_be16(buf + LRH_OFF_SLID, lrh->slid);

    if (pkt->grh) {
        uint8_t *grh = buf + VHCA_IB_LRH_LEN;

        vhca_st_be32(grh, ((uint32_t)GRH_IPVER << 28) |
                     ((uint32_t)net->traffic_class << 20) |
                     net->flow_label);
        vhca_st_be16(grh + IPV6_OFF_PAYLOAD_LEN, (uint16_t)tp_len);
        grh[IPV6_OFF_NEXT_HDR] = VHCA_IB_GRH_NEXT_HEADER;
        grh[IPV6_OFF_HOP_LIMIT] = net->hop_limit;
        memcpy(grh + IPV6_OFF_SADDR, net->sgid, VHCA_GID_LEN);
        memcpy(grh + IPV6_OFF_DADDR, net->dgid, VHCA_GID_LEN);
    }

    p = vhca_wire_put_transport(buf + bth_off, pkt, info, pad);
    vhca_st_le32(p, vhca_ib_icrc(buf, pkt->grh, (size_t)(p - buf)));
    vhca_st_le16(p + VHCA_IB_ICRC_LEN, vhca_vcrc(buf, pkt_len));
    return pkt_len + VHCA_IB_VCRC_LEN;
}

size_t vhca_wire_build(const VhcaWirePacket *pkt, uint8_t *buf, size_t size)
{
    const VhcaWireOpcodeInfo *info =
        vhca_wire_opcode_info(pkt->tp.bth.opcode);
    uint8_t pad = (uint8_t)(-pkt->payload_len & BTH_PAD_MASK);

    if (!vhca_wire_build_ok(pkt, info)) {
        return 0;
    }
    switch (pkt->link) {
    case VHCA_WIRE_LINK_ROCE:
        return vhca_wire_build_roce(pkt, info, pad, buf, size);
    case VHCA_WIRE_LINK_IB:
        return vhca_wire_build_ib(pkt, info, pad, buf, size);
    }
    return 0;
}

static const char *const vhca_wire_error_names[VHCA_WIRE_ERR__MAX] = {
    [VHCA_WIRE_OK]                  = "ok",
    [VHCA_WIRE_ERR_TRUNCATED]       = "truncated",
    [VHCA_WIRE_ERR_ETHERTYPE]       = "ethertype",
    [VHCA_WIRE_ERR_IP_VERSION]      = "ip-version",
    [VHCA_WIRE_ERR_IP_HDR_LEN]      = "ip-header-length",
    [VHCA_WIRE_ERR_IP_LEN]          = "ip-length",
    [VHCA_WIRE_ERR_IP_CHECKSUM]     = "ip-checksum",
    [VHCA_WIRE_ERR_IP_FRAGMENT]     = "ip-fragment",
    [VHCA_WIRE_ERR_NOT_UDP]         = "not-udp",
    [VHCA_WIRE_ERR_UDP_LEN]         = "udp-length",
    [VHCA_WIRE_ERR_UDP_PORT]        = "udp-port",
    [VHCA_WIRE_ERR_UDP_CHECKSUM]    = "udp-checksum",
    [VHCA_WIRE_ERR_BTH_LEN]         = "bth-length",
    [VHCA_WIRE_ERR_ICRC]            = "icrc",
    [VHCA_WIRE_ERR_TVER]            = "tver",
    [VHCA_WIRE_ERR_OPCODE]          = "opcode",
    [VHCA_WIRE_ERR_EXT_LEN]         = "ext-header-length",
    [VHCA_WIRE_ERR_PAD]             = "pad",
    [VHCA_WIRE_ERR_PAYLOAD]         = "payload",
    [VHCA_WIRE_ERR_LRH_LEN]         = "lrh-packet-length",
    [VHCA_WIRE_ERR_LVER]            = "lver",
    [VHCA_WIRE_ERR_LNH]             = "lnh",
    [VHCA_WIRE_ERR_VCRC]            = "vcrc",
    [VHCA_WIRE_ERR_GRH]             = "grh",
    [VHCA_WIRE_ERR_PFC_ADDRESS]     = "pfc-address",
    [VHCA_WIRE_ERR_PFC_OPCODE]      = "pfc-opcode",
};

void vhca_wire_ib_init(VhcaWirePacket *pkt, uint8_t vl, uint16_t dlid,
                       uint16_t slid, uint8_t opcode, uint16_t pkey,
                       uint32_t dest_qpn)
{
    memset(pkt, 0, sizeof(*pkt));
    pkt->link = VHCA_WIRE_LINK_IB;
    pkt->lrh.vl = vl;
    pkt->lrh.dlid = dlid;
    pkt->lrh.slid = slid;
    pkt->tp.bth.opcode = opcode;
    pkt->tp.bth.pkey = pkey;
    pkt->tp.bth.dest_qpn = dest_qpn;
}

size_t vhca_wire_build_smp(const uint8_t *mad, uint16_t dlid, uint16_t slid,
                           uint8_t *buf, size_t size)
{
    VhcaWirePacket pkt;

    /* 14.2.2: SMPs carry the default P_Key, QP0 to QP0. */
    vhca_wire_ib_init(&pkt, VHCA_IB_VL_SMP, dlid, slid,
                      VHCA_IB_OPCODE(UD, SEND_ONLY), 0xffff, VHCA_SMI_QPN);
    pkt.payload = mad;
    pkt.payload_len = VHCA_MAD_SIZE;
    return vhca_wire_build(&pkt, buf, size);
}

size_t vhca_wire_build_gmp(const uint8_t *mad, uint8_t sl, uint16_t dlid,
                           uint16_t slid, uint16_t pkey, uint32_t dest_qpn,
                           uint8_t *buf, size_t size)
{
    VhcaWirePacket pkt;

    vhca_wire_ib_init(&pkt, 0, dlid, slid, VHCA_IB_OPCODE(UD, SEND_ONLY),
                      pkey, dest_qpn);
    pkt.lrh.sl = sl;
    /* 13.5.1: the GSI is QP1 and uses the well-known Q_Key. */
    pkt.tp.deth.qkey = VHCA_GSI_QKEY;
    pkt.tp.deth.src_qpn = VHCA_GSI_QPN;
    pkt.payload = mad;
    pkt.payload_len = VHCA_MAD_SIZE;
    return vhca_wire_build(&pkt, buf, size);
}

const char *vhca_wire_error_name(VhcaWireError err)
{
    if ((unsigned)err >= VHCA_WIRE_ERR__MAX) {
        return "unknown";
    }
    return vhca_wire_error_names[err];
}

/*
 * Validate the IPv4 header at @ip (@avail bytes to the end of the frame),
 * all but its checksum (vhca_wire_parse_ib() checks that).  On success
 * *ip_hlen is its length and *l4_len the datagram's payload.
 */
static VhcaWireError vhca_wire_parse_ipv4(const uint8_t *ip, size_t avail,
                                          VhcaWirePacket *pkt,
                                          size_t *ip_hlen, size_t *l4_len)
{
    size_t ihl, tot_len;

    if (avail < IPV4_HLEN) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    if ((ip[0] >> 4) != 4) {
        return VHCA_WIRE_ERR_IP_VERSION;
    }
    ihl = (size_t)(ip[0] & 0x0f) * 4;
    if (ihl < IPV4_HLEN) {
        return VHCA_WIRE_ERR_IP_HDR_LEN;
    }
    tot_len = vhca_ld_be16(ip + IPV4_OFF_TOT_LEN);
    if (tot_len < ihl) {
        return VHCA_WIRE_ERR_IP_LEN;
    }
    if (tot_len > avail) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    /* Only a whole datagram carries a whole RoCE packet. */
    if (vhca_ld_be16(ip + IPV4_OFF_FRAG) & IPV4_FRAG_MF_OFFSET) {
        return VHCA_WIRE_ERR_IP_FRAGMENT;
    }
    if (ip[IPV4_OFF_PROTO] != IPPROTO_UDP_NUM) {
        return VHCA_WIRE_ERR_NOT_UDP;
    }
    pkt->net.traffic_class = ip[IPV4_OFF_TOS];
    pkt->net.hop_limit = ip[IPV4_OFF_TTL];
    pkt->net.ip_id = vhca_ld_be16(ip + IPV4_OFF_ID);
    memcpy(pkt->net.sgid, vhca_ipv4_mapped_prefix, 12);
    memcpy(pkt->net.sgid + 12, ip + IPV4_OFF_SADDR, 4);
    memcpy(pkt->net.dgid, vhca_ipv4_mapped_prefix, 12);
    memcpy(pkt->net.dgid + 12, ip + IPV4_OFF_DADDR, 4);
    *ip_hlen = ihl;
    *l4_len = tot_len - ihl;
    return VHCA_WIRE_OK;
}

static VhcaWireError vhca_wire_parse_ipv6(const uint8_t *ip, size_t avail,
                                          VhcaWirePacket *pkt,
                                          size_t *ip_hlen, size_t *l4_len)
{
    uint32_t vtf;
    size_t payload_len;

    if (avail < IPV6_HLEN) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    if ((ip[0] >> 4) != 6) {
        return VHCA_WIRE_ERR_IP_VERSION;
    }
    payload_len = vhca_ld_be16(ip + IPV6_OFF_PAYLOAD_LEN);
    if (payload_len > avail - IPV6_HLEN) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    /* RoCEv2 puts UDP right after the IPv6 header: no extension headers. */
    if (ip[IPV6_OFF_NEXT_HDR] != IPPROTO_UDP_NUM) {
        return VHCA_WIRE_ERR_NOT_UDP;
    }
    vtf = vhca_ld_be32(ip);
    pkt->net.traffic_class = (uint8_t)(vtf >> 20);
    pkt->net.flow_label = vtf & IPV6_FLOW_LABEL_MASK;
    pkt->net.hop_limit = ip[IPV6_OFF_HOP_LIMIT];
    memcpy(pkt->net.sgid, ip + IPV6_OFF_SADDR, VHCA_GID_LEN);
    memcpy(pkt->net.dgid, ip + IPV6_OFF_DADDR, VHCA_GID_LEN);
    *ip_hlen = IPV6_HLEN;
    *l4_len = payload_len;
    return VHCA_WIRE_OK;
}

/*
 * Linux rxe (6.12 and earlier) computes the ICRC of an RC FLUSH wrongly:
 * its opcode table gives FLUSH no payload offset, so after the IBTA
 * 7.8.1 computation it runs the CRC once more over the whole transport
 * part (BTH, FETH, RETH, unmasked) as if it were payload.  vhca sends the
 * right ICRC and accepts that one too on a FLUSH (@icrc is the right
 * one's value, @bth the @tp_len transport bytes, ICRC included), so an
 * rxe requester's FLUSH executes; rxe drops vhca's (docs/limits.rst).
 * Four bytes of CRC still guard the packet either way.
 */
static bool vhca_wire_rxe_flush_icrc_ok(uint32_t icrc, const uint8_t *bth,
                                        size_t tp_len)
{
    return bth[0] == VHCA_IB_OPCODE(RC, FLUSH) &&
           vhca_icrc_extend(icrc, bth, tp_len - VHCA_IB_ICRC_LEN) ==
           vhca_ld_le32(bth + tp_len - VHCA_IB_ICRC_LEN);
}

/* Everything from the BTH on: @tp_len bytes at @bth, ICRC included. */
static VhcaWireError vhca_wire_parse_transport(const uint8_t *bth,
                                               size_t tp_len,
                                               VhcaWirePacket *pkt)
{
    const VhcaWireOpcodeInfo *info;
    VhcaWireBth *b = &pkt->tp.bth;
    size_t data_len;

    vhca_wire_get_bth(bth, b);
    if (b->tver != VHCA_IB_BTH_TVER) {
        return VHCA_WIRE_ERR_TVER;
    }
    info = vhca_wire_opcode_info(b->opcode);
    if (!info) {
        return VHCA_WIRE_ERR_OPCODE;
    }
    if (tp_len - VHCA_IB_ICRC_LEN < info->hdr_len) {
        return VHCA_WIRE_ERR_EXT_LEN;
    }
    /* Payload and pad; the headers are all multiples of 4 bytes. */
    data_len = tp_len - VHCA_IB_ICRC_LEN - info->hdr_len;
    if (b->pad > data_len || (data_len & 3)) {
        return VHCA_WIRE_ERR_PAD;
    }
    if (data_len && !(info->flags & VHCA_WIRE_OPF_PAYLOAD)) {
        return VHCA_WIRE_ERR_PAYLOAD;
    }
    vhca_wire_get_ext(bth + VHCA_IB_BTH_LEN, info->ext, &pkt->tp);
    pkt->payload_offset = pkt->bth_offset + info->hdr_len;
    pkt->payload_len = (uint32_t)(data_len - b->pad);
    return VHCA_WIRE_OK;
}

static VhcaWireError vhca_wire_do_parse_net(const uint8_t *frame, size_t len,
                                            VhcaWirePacket *pkt)
{
    VhcaWireError err;
    const uint8_t *ip, *udp;
    size_t off = VHCA_ETH_HLEN;
    size_t ip_hlen, l4_len;
    uint16_t ethertype;

    if (len < VHCA_ETH_HLEN) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    memcpy(pkt->net.dmac, frame, VHCA_ETH_ALEN);
    memcpy(pkt->net.smac, frame + VHCA_ETH_ALEN, VHCA_ETH_ALEN);
    ethertype = vhca_ld_be16(frame + ETH_TYPE_OFFSET);
    if (ethertype == VHCA_ETH_P_8021Q) {
        if (len < VHCA_ETH_HLEN + VHCA_VLAN_HLEN) {
            return VHCA_WIRE_ERR_TRUNCATED;
        }
        pkt->net.vlan = true;
        pkt->net.vlan_tci = vhca_ld_be16(frame + VHCA_ETH_HLEN);
        ethertype = vhca_ld_be16(frame + VHCA_ETH_HLEN + 2);
        off += VHCA_VLAN_HLEN;
    }

    ip = frame + off;
    switch (ethertype) {
    case ETH_P_IPV4:
        err = vhca_wire_parse_ipv4(ip, len - off, pkt, &ip_hlen, &l4_len);
        break;
    case ETH_P_IPV6:
        pkt->ipv6 = true;
        err = vhca_wire_parse_ipv6(ip, len - off, pkt, &ip_hlen, &l4_len);
        break;
    default:
        return VHCA_WIRE_ERR_ETHERTYPE;
    }
    if (err != VHCA_WIRE_OK) {
        return err;
    }

    /* From here on, lengths are bounded by what the IP header vouched. */
    if (l4_len < UDP_HLEN) {
        return VHCA_WIRE_ERR_UDP_LEN;
    }
    udp = ip + ip_hlen;
    if (vhca_ld_be16(udp + UDP_OFF_DPORT) != VHCA_ROCE_V2_UDP_PORT) {
        return VHCA_WIRE_ERR_UDP_PORT;
    }
    pkt->net.udp_sport = vhca_ld_be16(udp + UDP_OFF_SPORT);
    pkt->grh = true;                /* the IP header stands for it */
    pkt->l3_offset = (uint32_t)off;
    pkt->l4_offset = (uint32_t)(off + ip_hlen);
    pkt->l4_len = (uint32_t)l4_len;
    return VHCA_WIRE_OK;
}

/*
 * The RoCE half of vhca_wire_parse_ib(): IPv4 header checksum, UDP length
 * and checksum, ICRC.  Leaves the BTH's offset in @pkt and its length,
 * ICRC included, in *tp_len.
 */
static VhcaWireError vhca_wire_roce_integrity(const uint8_t *frame,
                                              size_t len,
                                              VhcaWirePacket *pkt,
                                              size_t *tp_len)
{
    const uint8_t *ip = frame + pkt->l3_offset;
    const uint8_t *udp = frame + pkt->l4_offset;
    size_t ip_hlen = pkt->l4_offset - pkt->l3_offset;
    size_t udp_len;
    uint32_t icrc;

    /* Not what vhca_wire_parse_net() left for this frame: read nothing. */
    if (pkt->l3_offset < VHCA_ETH_HLEN || pkt->l4_offset <= pkt->l3_offset ||
        pkt->l4_len < UDP_HLEN ||
        (size_t)pkt->l4_offset + pkt->l4_len > len) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    if (!pkt->ipv6 &&
        vhca_csum_fold(vhca_csum_add(0, ip, ip_hlen)) != 0xffff) {
        return VHCA_WIRE_ERR_IP_CHECKSUM;
    }
    udp_len = vhca_ld_be16(udp + UDP_OFF_LEN);
    if (udp_len < UDP_HLEN || udp_len > pkt->l4_len) {
        return VHCA_WIRE_ERR_UDP_LEN;
    }
    /* 0 means "no checksum", which RoCEv2 senders use (see build). */
    if (vhca_ld_be16(udp + UDP_OFF_CHECK) &&
        !vhca_udp_checksum_ok(ip, pkt->ipv6, udp, (uint16_t)udp_len)) {
        return VHCA_WIRE_ERR_UDP_CHECKSUM;
    }

    *tp_len = udp_len - UDP_HLEN;
    if (*tp_len < VHCA_IB_BTH_LEN + VHCA_IB_ICRC_LEN) {
        return VHCA_WIRE_ERR_BTH_LEN;
    }
    pkt->bth_offset = pkt->l4_offset + UDP_HLEN;

    /* Integrity first: a damaged header must not pass for a bad field. */
    icrc = vhca_icrc(ip, ip_hlen, pkt->ipv6,
                     ip_hlen + udp_len - VHCA_IB_ICRC_LEN);
    if (icrc != vhca_ld_le32(udp + udp_len - VHCA_IB_ICRC_LEN) &&
        !vhca_wire_rxe_flush_icrc_ok(icrc, udp + UDP_HLEN, *tp_len)) {
        return VHCA_WIRE_ERR_ICRC;
    }
    return VHCA_WIRE_OK;
}

/*
 * The InfiniBand half: the ICRC of an IB packet (7.8.1).  The VCRC, LRH
 * and GRH are vhca_wire_parse_lrh()'s; there is no IP or UDP.
 */
static VhcaWireError vhca_wire_ib_integrity(const uint8_t *frame, size_t len,
                                            VhcaWirePacket *pkt,
                                            size_t *tp_len)
{
    size_t bth_off = VHCA_IB_LRH_LEN + (pkt->grh ? VHCA_IB_GRH_LEN : 0);
    size_t icrc_off;

    /* Not what vhca_wire_parse_lrh() left for this frame: read nothing. */
    if (pkt->l3_offset != VHCA_IB_LRH_LEN || pkt->l4_offset != bth_off ||
        bth_off + pkt->l4_len + VHCA_IB_VCRC_LEN > len) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    *tp_len = pkt->l4_len;
    if (*tp_len < VHCA_IB_BTH_LEN + VHCA_IB_ICRC_LEN) {
        return VHCA_WIRE_ERR_BTH_LEN;
    }
    pkt->bth_offset = (uint32_t)bth_off;

    icrc_off = bth_off + *tp_len - VHCA_IB_ICRC_LEN;
    if (vhca_ib_icrc(frame, pkt->grh, icrc_off) !=
        vhca_ld_le32(frame + icrc_off)) {
        return VHCA_WIRE_ERR_ICRC;
    }
    return VHCA_WIRE_OK;
}

static VhcaWireError vhca_wire_do_parse_ib(const uint8_t *frame, size_t len,
                                           VhcaWirePacket *pkt)
{
    VhcaWireError err;
    size_t tp_len;

    switch (pkt->link) {
    case VHCA_WIRE_LINK_ROCE:
        err = vhca_wire_roce_integrity(frame, len, pkt, &tp_len);
        break;
    case VHCA_WIRE_LINK_IB:
        err = vhca_wire_ib_integrity(frame, len, pkt, &tp_len);
        break;
    default:
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    if (err != VHCA_WIRE_OK) {
        return err;
    }
    err = vhca_wire_parse_transport(frame + pkt->bth_offset, tp_len, pkt);
    if (err != VHCA_WIRE_OK) {
        return err;
    }
    pkt->payload = frame + pkt->payload_offset;
    return VHCA_WIRE_OK;
}

/* The GRH at @grh of a packet whose PktLen leaves @payload_len after it. */
static VhcaWireError vhca_wire_parse_grh(const uint8_t *grh,
                                         size_t payload_len,
                                         VhcaWirePacket *pkt)
{
    uint32_t vtf = vhca_ld_be32(grh);

    if ((vtf >> 28) != GRH_IPVER ||
        grh[IPV6_OFF_NEXT_HDR] != VHCA_IB_GRH_NEXT_HEADER ||
        vhca_ld_be16(grh + IPV6_OFF_PAYLOAD_LEN) != payload_len) {
        return VHCA_WIRE_ERR_GRH;
    }
    pkt->net.traffic_class = (uint8_t)(vtf >> 20);
    pkt->net.flow_label = vtf & IPV6_FLOW_LABEL_MASK;
    pkt->net.hop_limit = grh[IPV6_OFF_HOP_LIMIT];
    memcpy(pkt->net.sgid, grh + IPV6_OFF_SADDR, VHCA_GID_LEN);
    memcpy(pkt->net.dgid, grh + IPV6_OFF_DADDR, VHCA_GID_LEN);
    return VHCA_WIRE_OK;
}

static VhcaWireError vhca_wire_do_parse_lrh(const uint8_t *frame, size_t len,
                                            VhcaWirePacket *pkt)
{
    VhcaWireLrh *lrh = &pkt->lrh;
    size_t pkt_len, bth_off;
    VhcaWireError err;

    pkt->link = VHCA_WIRE_LINK_IB;
    if (len < VHCA_IB_LRH_LEN + VHCA_IB_VCRC_LEN) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    /*
     * The link's own check first: the VCRC is the datagram's last two
     * bytes whatever the LRH says, and a damaged LRH must not pass for a
     * bad field.
     */
    if (vhca_vcrc(frame, len - VHCA_IB_VCRC_LEN) !=
        vhca_ld_le16(frame + len - VHCA_IB_VCRC_LEN)) {
        return VHCA_WIRE_ERR_VCRC;
    }
    lrh->vl = frame[0] >> LRH_VL_SHIFT;
    lrh->lver = frame[0] & LRH_LVER_MASK;
    lrh->sl = frame[1] >> LRH_SL_SHIFT;
    lrh->lnh = frame[1] & LRH_LNH_MASK;
    lrh->dlid = vhca_ld_be16(frame + LRH_OFF_DLID);
    lrh->pkt_len = vhca_ld_be16(frame + LRH_OFF_PKT_LEN) & LRH_PKT_LEN_MASK;
    lrh->slid = vhca_ld_be16(frame + LRH_OFF_SLID);
    if (lrh->lver != 0) {
        return VHCA_WIRE_ERR_LVER;
    }
    /* Raw packets (IPv6 or Ethertype, 7.7.4) carry no IBA transport. */
    if (lrh->lnh != VHCA_IB_LNH_LOCAL && lrh->lnh != VHCA_IB_LNH_GLOBAL) {
        return VHCA_WIRE_ERR_LNH;
    }
    /* PktLen: LRH through ICRC; the VCRC ends the datagram. */
    pkt_len = (size_t)lrh->pkt_len * 4;
    if (pkt_len != len - VHCA_IB_VCRC_LEN) {
        return VHCA_WIRE_ERR_LRH_LEN;
    }

    pkt->grh = lrh->lnh == VHCA_IB_LNH_GLOBAL;
    bth_off = VHCA_IB_LRH_LEN + (pkt->grh ? VHCA_IB_GRH_LEN : 0);
    if (pkt_len < bth_off) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    if (pkt->grh) {
        err = vhca_wire_parse_grh(frame + VHCA_IB_LRH_LEN, pkt_len - bth_off,
                                  pkt);
        if (err != VHCA_WIRE_OK) {
            return err;
        }
    }
    pkt->ipv6 = pkt->grh;
    pkt->l3_offset = VHCA_IB_LRH_LEN;
    pkt->l4_offset = (uint32_t)bth_off;
    pkt->l4_len = (uint32_t)(pkt_len - bth_off);
    pkt->bth_offset = (uint32_t)bth_off;
    return VHCA_WIRE_OK;
}

VhcaWireError vhca_wire_parse_net(const uint8_t *frame, size_t len,
                                  VhcaWirePacket *pkt)
{
    VhcaWireError err;

    memset(pkt, 0, sizeof(*pkt));
    err = vhca_wire_do_parse_net(frame, len, pkt);
    if (err != VHCA_WIRE_OK) {
        memset(pkt, 0, sizeof(*pkt));
    }
    return err;
}

VhcaWireError vhca_wire_parse_lrh(const uint8_t *frame, size_t len,
                                  VhcaWirePacket *pkt)
{
    VhcaWireError err;

    memset(pkt, 0, sizeof(*pkt));
    err = vhca_wire_do_parse_lrh(frame, len, pkt);
    if (err != VHCA_WIRE_OK) {
        memset(pkt, 0, sizeof(*pkt));
    }
    return err;
}

VhcaWireError vhca_wire_parse_ib(const uint8_t *frame, size_t len,
                                 VhcaWirePacket *pkt)
{
    VhcaWireError err = vhca_wire_do_parse_ib(frame, len, pkt);

    if (err != VHCA_WIRE_OK) {
        memset(pkt, 0, sizeof(*pkt));
    }
    return err;
}

VhcaWireError vhca_wire_parse(const uint8_t *frame, size_t len,
                              VhcaWirePacket *pkt)
{
    VhcaWireError err = vhca_wire_parse_net(frame, len, pkt);

    if (err == VHCA_WIRE_OK) {
        err = vhca_wire_parse_ib(frame, len, pkt);
    }
    return err;
}

/* ---------------------------------------------------------------------- */
/* Priority-based flow control (IEEE 802.1Qbb clause 36)                  */
/* ---------------------------------------------------------------------- */

#define PFC_OFF_OPCODE          VHCA_ETH_HLEN
#define PFC_OFF_VECTOR          (VHCA_ETH_HLEN + 2)
#define PFC_OFF_TIME            (VHCA_ETH_HLEN + 4)

static const uint8_t vhca_pfc_dest[VHCA_ETH_ALEN] = VHCA_PFC_DEST_MAC;

uint8_t vhca_wire_frame_priority(const uint8_t *frame, size_t len)
{
    VhcaWireNet net = { .vlan = false };
    size_t off = VHCA_ETH_HLEN;
    uint16_t ethertype;

    if (len < VHCA_ETH_HLEN) {
        return 0;
    }
    ethertype = vhca_ld_be16(frame + ETH_TYPE_OFFSET);
    if (ethertype == VHCA_ETH_P_8021Q && len >= off + VHCA_VLAN_HLEN) {
        net.vlan = true;
        net.vlan_tci = vhca_ld_be16(frame + off);
        ethertype = vhca_ld_be16(frame + off + 2);
        off += VHCA_VLAN_HLEN;
    }
    if (ethertype == ETH_P_IPV4 && len >= off + 2) {
        net.traffic_class = frame[off + 1];
    } else if (ethertype == ETH_P_IPV6 && len >= off + 2) {
        /* Version:4, then Traffic Class across the next two nibbles. */
        net.traffic_class = (uint8_t)((frame[off] << 4) |
                                      (frame[off + 1] >> 4));
    }
    return vhca_wire_priority(&net);
}

VhcaWireError vhca_wire_parse_pfc(const uint8_t *frame, size_t len,
                                  VhcaWirePfc *pfc)
{
    unsigned i;

    memset(pfc, 0, sizeof(*pfc));
    if (len < VHCA_PFC_FRAME_LEN) {
        return VHCA_WIRE_ERR_TRUNCATED;
    }
    if (vhca_ld_be16(frame + ETH_TYPE_OFFSET) != VHCA_ETH_P_MAC_CONTROL) {
        return VHCA_WIRE_ERR_ETHERTYPE;
    }
    if (memcmp(frame, vhca_pfc_dest, VHCA_ETH_ALEN)) {
        return VHCA_WIRE_ERR_PFC_ADDRESS;
    }
    if (vhca_ld_be16(frame + PFC_OFF_OPCODE) != VHCA_MAC_CONTROL_PFC) {
        return VHCA_WIRE_ERR_PFC_OPCODE;
    }
    pfc->enable = frame[PFC_OFF_VECTOR + 1];
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        if (pfc->enable & (1u << i)) {
            pfc->time[i] = vhca_ld_be16(frame + PFC_OFF_TIME + 2 * i);
        }
    }
    return VHCA_WIRE_OK;
}

size_t vhca_wire_build_pfc(const uint8_t smac[VHCA_ETH_ALEN],
                           const VhcaWirePfc *pfc, uint8_t *buf, size_t size)
{
    unsigned i;

    if (size < VHCA_ETH_MIN_FRAME) {
        return 0;
    }
    memset(buf, 0, VHCA_ETH_MIN_FRAME);
    memcpy(buf, vhca_pfc_dest, VHCA_ETH_ALEN);
    memcpy(buf + VHCA_ETH_ALEN, smac, VHCA_ETH_ALEN);
    vhca_st_be16(buf + ETH_TYPE_OFFSET, VHCA_ETH_P_MAC_CONTROL);
    vhca_st_be16(buf + PFC_OFF_OPCODE, VHCA_MAC_CONTROL_PFC);
    vhca_st_be16(buf + PFC_OFF_VECTOR, pfc->enable);
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        vhca_st_be16(buf + PFC_OFF_TIME + 2 * i,
                     (pfc->enable & (1u << i)) ? pfc->time[i] : 0);
    }
    return VHCA_ETH_MIN_FRAME;
}
