/*
 * vhca qtest link: the Ethernet segment between two vhca functions of
 * one QEMU (vhca_test_start_many), played by the test.  Each function's
 * netdev is a socket the test holds; vhca_link_pump() carries the frames
 * each one sent to the other, and on the way can capture, drop,
 * duplicate, reorder or ECN-mark them: the tests' fault injection point
 * and congested switch.
 *
 * It also parses RoCEv2 frames (IBTA Vol 1 annex A17: IPv4 / UDP 4791 /
 * BTH and extension headers, chapter 9) independently of the device's
 * own parser, ICRC included, so that the tests judge the device's frames
 * by the standard and not by its own code.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_QLINK_H
#define VHCA_QLINK_H

#include "vhca-qdriver.h"

/* BTH opcodes of the RC service (IBTA Vol 1 9.2.1), transport bits 000. */
enum {
    VHCA_RC_SEND_FIRST              = 0x00,
    VHCA_RC_SEND_MIDDLE             = 0x01,
    VHCA_RC_SEND_LAST               = 0x02,
    VHCA_RC_SEND_LAST_IMM           = 0x03,
    VHCA_RC_SEND_ONLY               = 0x04,
    VHCA_RC_SEND_ONLY_IMM           = 0x05,
    VHCA_RC_WRITE_FIRST             = 0x06,
    VHCA_RC_WRITE_MIDDLE            = 0x07,
    VHCA_RC_WRITE_LAST              = 0x08,
    VHCA_RC_WRITE_LAST_IMM          = 0x09,
    VHCA_RC_WRITE_ONLY              = 0x0a,
    VHCA_RC_WRITE_ONLY_IMM          = 0x0b,
    VHCA_RC_READ_REQUEST            = 0x0c,
    VHCA_RC_READ_RESPONSE_FIRST     = 0x0d,
    VHCA_RC_READ_RESPONSE_MIDDLE    = 0x0e,
    VHCA_RC_READ_RESPONSE_LAST      = 0x0f,
    VHCA_RC_READ_RESPONSE_ONLY      = 0x10,
    VHCA_RC_ACKNOWLEDGE             = 0x11,
    VHCA_RC_ATOMIC_ACKNOWLEDGE      = 0x12,
    VHCA_RC_COMPARE_SWAP            = 0x13,
    VHCA_RC_FETCH_ADD               = 0x14,
    VHCA_RC_SEND_LAST_INV           = 0x16,
    VHCA_RC_SEND_ONLY_INV           = 0x17,
    /* IBTA 1.5 memory placement extensions */
    VHCA_RC_FLUSH                   = 0x1c,
    VHCA_RC_ATOMIC_WRITE            = 0x1d,
};

/* AETH syndrome (IBTA Vol 1 9.3.5): bits 6:5 the kind. */
#define VHCA_AETH_KIND(syn)         ((syn) & 0x60)
#define VHCA_AETH_ACK               0x00
#define VHCA_AETH_RNR_NAK           0x20
#define VHCA_AETH_NAK               0x60
#define VHCA_AETH_NAK_PSN_SEQ       0x60
#define VHCA_AETH_NAK_INVALID_REQ   0x61
#define VHCA_AETH_NAK_REMOTE_ACCESS 0x62
#define VHCA_AETH_NAK_REMOTE_OP     0x63

/* A RoCEv2 packet as vhca_roce_parse() found it (host byte order). */
typedef struct VhcaRocePkt {
    uint8_t dmac[6], smac[6];
    uint8_t sip[4], dip[4];
    uint8_t tos;                /* IPv4 TOS: DSCP 7:2, ECN 1:0 */
    uint16_t udp_sport, udp_dport;
    /* BTH */
    uint8_t opcode;
    bool se, ack_req;
    bool fecn, becn;            /* BTH byte 4, bits 7 and 6 (A17.9) */
    uint8_t pad;
    uint16_t pkey;
    uint32_t dest_qpn;
    uint32_t psn;
    /* extension headers, valid when has_* */
    bool has_feth, has_reth, has_imm, has_aeth, has_atomic_eth,
         has_atomic_ack, has_ieth;
    uint32_t feth;              /* the FETH word: type 3:0, level 5:4 */
    uint64_t reth_va;
    uint32_t reth_rkey, reth_len;
    uint32_t imm;               /* ImmDt as the big-endian number */
    uint8_t aeth_syndrome;
    uint32_t aeth_msn;
    uint64_t atomic_va, atomic_swap_add, atomic_compare;
    uint32_t atomic_rkey;
    uint64_t atomic_orig;
    uint32_t ieth_rkey;
    const uint8_t *payload;     /* into the frame; pad excluded */
    uint32_t payload_len;
} VhcaRocePkt;

/*
 * Parse an Ethernet frame as RoCEv2 over IPv4 (the tests use IPv4 GIDs)
 * and check everything a receiver checks: IPv4 header checksum and
 * lengths, UDP port and length, BTH version, the opcode being an RC one
 * or a CNP, its extension headers fitting, PadCnt, and the ICRC.  A CNP
 * (annex A17.9.3, OpCode 0x81) must also have BECN set, no pad and 16
 * reserved bytes of zero as its payload.  Returns NULL on success, else
 * what is wrong (a static string).
 */
const char *vhca_roce_parse(const uint8_t *frame, size_t len,
                            VhcaRocePkt *pkt);
/*
 * A RoCEv2 packet over IPv4 for vhca_roce_build() (host byte order): the
 * extension headers are given as the bytes that follow the BTH, so a test
 * can write any of them, or too few.
 */
typedef struct VhcaRoceOut {
    uint8_t dmac[6], smac[6];
    uint8_t sip[4], dip[4];
    uint8_t opcode;
    uint32_t dest_qpn;
    uint32_t psn;
    bool ack_req;
    uint8_t ext[32];
    size_t ext_len;
    const uint8_t *payload;
    uint32_t payload_len;
} VhcaRoceOut;

/*
 * Build @o as a complete frame (Ethernet, IPv4 with DF and checksum, UDP
 * to 4791 with checksum 0, BTH with P_Key 0xffff, the extension bytes,
 * payload, zero pad, ICRC) into @buf; returns its length, which must fit
 * @cap.
 */
size_t vhca_roce_build(uint8_t *buf, size_t cap, const VhcaRoceOut *o);
/*
 * After a test changed fields of a frame vhca_roce_build() made: write
 * the IPv4 header checksum again, and the ICRC where the UDP length puts
 * it, if that is inside the @len bytes of the frame.
 */
void vhca_roce_reseal(uint8_t *frame, size_t len);

/* Name of an RC opcode, for messages. */
const char *vhca_rc_opcode_name(uint8_t opcode);

/* What the link does with one frame. */
typedef enum VhcaLinkVerdict {
    VHCA_LINK_PASS,
    VHCA_LINK_DROP,
    VHCA_LINK_DUPLICATE,        /* deliver it twice */
    VHCA_LINK_HOLD,             /* deliver it after the next one */
    VHCA_LINK_CORRUPT,          /* flip a bit of its last data byte */
    /*
     * A congested switch's mark (RFC 3168 section 5): the IPv4 ECN field
     * becomes CE (11) and the header checksum is written again; the ICRC
     * stays valid, since it covers the TOS byte as ones (IBTA Vol 1
     * 7.8.1, annex A17.3.3).  Frames that are not IPv4 pass unchanged.
     */
    VHCA_LINK_MARK_CE,
} VhcaLinkVerdict;

typedef struct VhcaLinkFrame {
    unsigned from;              /* 0 or 1: which function sent it */
    uint64_t seq;               /* frames the link saw before this one */
    int64_t clock_ns;           /* virtual time the link saw it */
    VhcaLinkVerdict verdict;
    size_t len;
    uint8_t *data;
} VhcaLinkFrame;

typedef struct VhcaLink VhcaLink;
/* Decide the fate of @f (its verdict field is PASS on entry). */
typedef VhcaLinkVerdict (*VhcaLinkFilter)(VhcaLink *link,
                                          const VhcaLinkFrame *f,
                                          void *opaque);

struct VhcaLink {
    VhcaTestDev *dev[2];
    VhcaLinkFilter filter;      /* NULL: pass everything */
    void *filter_opaque;
    bool capture;               /* keep a copy of every frame in @frames, */
                                /* as its sender sent it */
    bool trace;                 /* log every frame (VHCA_LINK_TRACE set) */
    GPtrArray *frames;          /* of VhcaLinkFrame, when capturing */
    uint64_t seen[2];           /* frames each function sent */
    uint64_t delivered[2];      /* frames delivered to each function */
    uint64_t dropped;
    uint64_t marked_ce;         /* frames MARK_CE rewrote */
    VhcaLinkFrame *held[2];     /* HOLD, per direction */
    int64_t clock_ns;           /* the virtual clock, as last stepped */
                                /* (frames are stamped with it) */
};

void vhca_link_init(VhcaLink *link, VhcaTestDev *a, VhcaTestDev *b);
void vhca_link_destroy(VhcaLink *link);
/* Forget the captured frames (checked already, say). */
void vhca_link_clear_frames(VhcaLink *link);
/*
 * Carry every frame that is waiting in either direction through the
 * filter; a held frame waits for the next frame its way, or for the
 * next call.  Returns the number of frames it read.
 */
unsigned vhca_link_pump(VhcaLink *link);
/* Step the virtual clock by @ns (> 0) and record the time in clock_ns. */
void vhca_link_clock_step(VhcaLink *link, int64_t ns);
/*
 * Refresh clock_ns (by a 1 ns step: qtest cannot read the clock) after
 * something else stepped it, such as the admin queue's waits.
 */
void vhca_link_sync_clock(VhcaLink *link);

/*
 * Let the link run, stepping the clock by @step_ns, until nothing has
 * moved for 50 steps (or a second of wall time passed), so that a check
 * that something did NOT happen is meaningful.
 */
void vhca_link_settle(VhcaLink *link, int64_t step_ns);

/*
 * Bounded waiting with the link running: pump, test @cond, step the
 * clock by @step_ns, until @cond holds or VHCA_TEST_TIMEOUT_S of wall time
 * pass, which fails the test naming @what and @where.
 */
#define VHCA_LINK_WAIT_UNTIL_AT(link, cond, step_ns, what, where)           \
    do {                                                                    \
        gint64 vhca_deadline_ = g_get_monotonic_time() +                    \
            VHCA_TEST_TIMEOUT_S * G_TIME_SPAN_SECOND;                       \
        vhca_link_sync_clock(link);                                         \
        for (;;) {                                                          \
            vhca_link_pump(link);                                           \
            if (cond) {                                                     \
                break;                                                      \
            }                                                               \
            if (g_get_monotonic_time() > vhca_deadline_) {                  \
                g_error("%s: timed out waiting for %s", (where), (what));   \
            }                                                               \
            vhca_link_clock_step(link, step_ns);                            \
        }                                                                   \
    } while (0)

#define VHCA_LINK_WAIT_UNTIL(link, cond, step_ns, what) \
    VHCA_LINK_WAIT_UNTIL_AT(link, cond, step_ns, what, G_STRLOC)

#endif /* VHCA_QLINK_H */
