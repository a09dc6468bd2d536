/*
 * vhca qtest link: the segment between two vhca functions, with fault
 * injection, and an independent RoCEv2 parser (IBTA Vol 1 chapter 9 and
 * annex A17).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <zlib.h>
#include "qemu/bswap.h"
#include "vhca-qlink.h"

/* ---- RoCEv2 parsing ---------------------------------------------------- */

#define ETH_HLEN                14
#define ETHERTYPE_IPV4          0x0800
#define IPV4_HLEN               20
#define UDP_HLEN                8
#define BTH_LEN                 12
#define RETH_LEN                16
#define IMMDT_LEN               4
#define AETH_LEN                4
#define ATOMIC_ETH_LEN          28
#define ATOMIC_ACK_ETH_LEN      8
#define IETH_LEN                4
#define FETH_LEN                4
#define ICRC_LEN                4
#define CNP_PAYLOAD_LEN         16

enum {
    EXT_RETH        = 1 << 0,
    EXT_IMM         = 1 << 1,
    EXT_AETH        = 1 << 2,
    EXT_ATOMIC      = 1 << 3,
    EXT_ATOMIC_ACK  = 1 << 4,
    EXT_IETH        = 1 << 5,
    HAS_PAYLOAD     = 1 << 6,
    EXT_FETH        = 1 << 7,   /* before the RETH */
};

typedef struct RcOpcode {
    const char *name;
    unsigned flags;
} RcOpcode;

/* IBTA Vol 1 9.2.1 (OpCode field) and 9.3 (which headers each carries). */
static const RcOpcode rc_opcodes[] = {
    [VHCA_RC_SEND_FIRST] = { "SEND_FIRST", HAS_PAYLOAD },
    [VHCA_RC_SEND_MIDDLE] = { "SEND_MIDDLE", HAS_PAYLOAD },
    [VHCA_RC_SEND_LAST] = { "SEND_LAST", HAS_PAYLOAD },
    [VHCA_RC_SEND_LAST_IMM] = { "SEND_LAST_IMM", EXT_IMM | HAS_PAYLOAD },
    [VHCA_RC_SEND_ONLY] = { "SEND_ONLY", HAS_PAYLOAD },
    [VHCA_RC_SEND_ONLY_IMM] = { "SEND_ONLY_IMM", EXT_IMM | HAS_PAYLOAD },
    [VHCA_RC_WRITE_FIRST] = { "WRITE_FIRST", EXT_RETH | HAS_PAYLOAD },
    [VHCA_RC_WRITE_MIDDLE] = { "WRITE_MIDDLE", HAS_PAYLOAD },
    [VHCA_RC_WRITE_LAST] = { "WRITE_LAST", HAS_PAYLOAD },
    [VHCA_RC_WRITE_LAST_IMM] = { "WRITE_LAST_IMM", EXT_IMM | HAS_PAYLOAD },
    [VHCA_RC_WRITE_ONLY] = { "WRITE_ONLY", EXT_RETH | HAS_PAYLOAD },
    [VHCA_RC_WRITE_ONLY_IMM] = { "WRITE_ONLY_IMM",
                                 EXT_RETH | EXT_IMM | HAS_PAYLOAD },
    [VHCA_RC_READ_REQUEST] = { "READ_REQUEST", EXT_RETH },
    [VHCA_RC_READ_RESPONSE_FIRST] = { "READ_RESPONSE_FIRST",
                                      EXT_AETH | HAS_PAYLOAD },
    [VHCA_RC_READ_RESPONSE_MIDDLE] = { "READ_RESPONSE_MIDDLE", HAS_PAYLOAD },
    [VHCA_RC_READ_RESPONSE_LAST] = { "READ_RESPONSE_LAST",
                                     EXT_AETH | HAS_PAYLOAD },
    [VHCA_RC_READ_RESPONSE_ONLY] = { "READ_RESPONSE_ONLY",
                                     EXT_AETH | HAS_PAYLOAD },
    [VHCA_RC_ACKNOWLEDGE] = { "ACKNOWLEDGE", EXT_AETH },
    [VHCA_RC_ATOMIC_ACKNOWLEDGE] = { "ATOMIC_ACKNOWLEDGE",
                                     EXT_AETH | EXT_ATOMIC_ACK },
    [VHCA_RC_COMPARE_SWAP] = { "COMPARE_SWAP", EXT_ATOMIC },
    [VHCA_RC_FETCH_ADD] = { "FETCH_ADD", EXT_ATOMIC },
    [VHCA_RC_SEND_LAST_INV] = { "SEND_LAST_INV", EXT_IETH | HAS_PAYLOAD },
    [VHCA_RC_SEND_ONLY_INV] = { "SEND_ONLY_INV", EXT_IETH | HAS_PAYLOAD },
    /* IBTA 1.5 memory placement extensions, as Linux rxe lays them out. */
    [VHCA_RC_FLUSH] = { "FLUSH", EXT_FETH | EXT_RETH },
    [VHCA_RC_ATOMIC_WRITE] = { "ATOMIC_WRITE", EXT_RETH | HAS_PAYLOAD },
};

const char *vhca_rc_opcode_name(uint8_t opcode)
{
    if (opcode == VHCA_BTH_OPCODE_CNP) {
        return "CNP";
    }
    if (opcode < ARRAY_SIZE(rc_opcodes) && rc_opcodes[opcode].name) {
        return rc_opcodes[opcode].name;
    }
    return "(not an RC opcode)";
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/*
 * ICRC (IBTA Vol 1 7.8.1, A17.3.3): CRC-32 over eight 0xff bytes for the
 * LRH, then IP header, UDP header, BTH, extension headers, payload and pad,
 * with the variant fields (IPv4 TOS, TTL, header checksum; UDP checksum;
 * BTH byte 4) replaced by ones.  RoCE NICs and rxe store it little-endian.
 */
static uint32_t roce_icrc(const uint8_t *ip, size_t len)
{
    static const uint8_t ones[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    uint8_t hdr[IPV4_HLEN + UDP_HLEN + BTH_LEN];
    uint32_t crc;

    memcpy(hdr, ip, sizeof(hdr));
    hdr[1] = 0xff;                      /* TOS */
    hdr[8] = 0xff;                      /* TTL */
    hdr[10] = hdr[11] = 0xff;           /* header checksum */
    hdr[IPV4_HLEN + 6] = hdr[IPV4_HLEN + 7] = 0xff;  /* UDP checksum */
    hdr[IPV4_HLEN + UDP_HLEN + 4] = 0xff;            /* BTH F, B, resv */
    crc = crc32(0, ones, sizeof(ones));
    crc = crc32(crc, hdr, sizeof(hdr));
    return crc32(crc, ip + sizeof(hdr), len - sizeof(hdr));
}

const char *vhca_roce_parse(const uint8_t *f, size_t len, VhcaRocePkt *p)
{
    const uint8_t *ip = f + ETH_HLEN, *udp, *bth, *h, *end;
    uint16_t ip_total, udp_len;
    unsigned flags;
    uint32_t icrc;

    memset(p, 0, sizeof(*p));
    if (len < ETH_HLEN + IPV4_HLEN + UDP_HLEN + BTH_LEN + ICRC_LEN) {
        return "frame too short for RoCEv2 over IPv4";
    }
    memcpy(p->dmac, f, 6);
    memcpy(p->smac, f + 6, 6);
    if (lduw_be_p(f + 12) != ETHERTYPE_IPV4) {
        return "ethertype is not IPv4 (802.1Q tags are not expected)";
    }
    if (ip[0] != 0x45) {
        return "not IPv4 with a 20-byte header";
    }
    if (ip_checksum(ip, IPV4_HLEN) != 0) {
        return "bad IPv4 header checksum";
    }
    if ((lduw_be_p(ip + 6) & 0x3fff) != 0) {
        return "IPv4 fragment";
    }
    if (ip[9] != 17) {
        return "IPv4 protocol is not UDP";
    }
    ip_total = lduw_be_p(ip + 2);
    if (ip_total < IPV4_HLEN + UDP_HLEN || ETH_HLEN + ip_total > len) {
        return "IPv4 total length does not fit the frame";
    }
    p->tos = ip[1];
    memcpy(p->sip, ip + 12, 4);
    memcpy(p->dip, ip + 16, 4);
    udp = ip + IPV4_HLEN;
    p->udp_sport = lduw_be_p(udp);
    p->udp_dport = lduw_be_p(udp + 2);
    if (p->udp_dport != VHCA_ROCE_V2_UDP_PORT) {
        return "UDP destination port is not 4791";
    }
    udp_len = lduw_be_p(udp + 4);
    if (udp_len != ip_total - IPV4_HLEN) {
        return "UDP length does not match the IPv4 payload";
    }
    if (udp_len < UDP_HLEN + BTH_LEN + ICRC_LEN) {
        return "UDP datagram too short for BTH and ICRC";
    }
    /* A17.3.2.4: the UDP checksum is 0 or correct; the tests demand 0. */
    if (lduw_be_p(udp + 6) != 0) {
        return "UDP checksum is not 0";
    }
    end = udp + udp_len - ICRC_LEN;

    bth = udp + UDP_HLEN;
    p->opcode = bth[0];
    p->se = bth[1] & 0x80;
    p->pad = (bth[1] >> 4) & 3;
    if (bth[1] & 0x0f) {
        return "BTH TVer is not 0";
    }
    p->pkey = lduw_be_p(bth + 2);
    p->fecn = bth[4] & 0x80;
    p->becn = bth[4] & 0x40;
    p->dest_qpn = ldl_be_p(bth + 4) & 0xffffff;
    p->ack_req = bth[8] & 0x80;
    p->psn = ldl_be_p(bth + 8) & 0xffffff;
    if (p->opcode == VHCA_BTH_OPCODE_CNP) {
        /* A17.9.3: the BTH, 16 reserved bytes, the ICRC. */
        flags = HAS_PAYLOAD;
    } else if (p->opcode >= ARRAY_SIZE(rc_opcodes) ||
               !rc_opcodes[p->opcode].name) {
        return "BTH opcode is neither an RC opcode nor CNP";
    } else {
        flags = rc_opcodes[p->opcode].flags;
    }

    h = bth + BTH_LEN;
#define TAKE(n) ({                                                          \
        const uint8_t *at_ = h;                                             \
        if (end - h < (n)) {                                                \
            return "extension headers do not fit the packet";              \
        }                                                                   \
        h += (n);                                                           \
        at_;                                                                \
    })
    if (flags & EXT_FETH) {
        p->has_feth = true;
        p->feth = ldl_be_p(TAKE(FETH_LEN));
    }
    if (flags & EXT_RETH) {
        const uint8_t *x = TAKE(RETH_LEN);

        p->has_reth = true;
        p->reth_va = ldq_be_p(x);
        p->reth_rkey = ldl_be_p(x + 8);
        p->reth_len = ldl_be_p(x + 12);
    }
    if (flags & EXT_AETH) {
        const uint8_t *x = TAKE(AETH_LEN);

        p->has_aeth = true;
        p->aeth_syndrome = x[0];
        p->aeth_msn = ldl_be_p(x) & 0xffffff;
    }
    if (flags & EXT_ATOMIC) {
        const uint8_t *x = TAKE(ATOMIC_ETH_LEN);

        p->has_atomic_eth = true;
        p->atomic_va = ldq_be_p(x);
        p->atomic_rkey = ldl_be_p(x + 8);
        p->atomic_swap_add = ldq_be_p(x + 12);
        p->atomic_compare = ldq_be_p(x + 20);
    }
    if (flags & EXT_ATOMIC_ACK) {
        const uint8_t *x = TAKE(ATOMIC_ACK_ETH_LEN);

        p->has_atomic_ack = true;
        p->atomic_orig = ldq_be_p(x);
    }
    if (flags & EXT_IMM) {
        p->has_imm = true;
        p->imm = ldl_be_p(TAKE(IMMDT_LEN));
    }
    if (flags & EXT_IETH) {
        p->has_ieth = true;
        p->ieth_rkey = ldl_be_p(TAKE(IETH_LEN));
    }
#undef TAKE
    if ((end - h) % 4) {
        return "payload plus pad is not a multiple of 4 bytes";
    }
    if (p->pad > end - h) {
        return "PadCnt exceeds the payload";
    }
    p->payload = h;
    p->payload_len = end - h - p->pad;
    if (p->payload_len && !(flags & HAS_PAYLOAD)) {
        return "payload on an opcode that carries none";
    }
    for (unsigned i = 0; i < p->pad; i++) {
        if (h[p->payload_len + i]) {
            return "pad bytes are not zero";
        }
    }
    icrc = ldl_le_p(end);
    if (icrc != roce_icrc(ip, end - ip)) {
        return "bad ICRC";
    }
    if (p->opcode == VHCA_BTH_OPCODE_CNP) {
        /* A17.9.3: BECN set, no pad, 16 reserved bytes of zero. */
        if (!p->becn) {
            return "CNP without BECN";
        }
        if (p->pad || p->payload_len != CNP_PAYLOAD_LEN) {
            return "CNP payload is not 16 bytes without pad";
        }
        for (unsigned i = 0; i < CNP_PAYLOAD_LEN; i++) {
            if (p->payload[i]) {
                return "CNP reserved bytes are not zero";
            }
        }
    }
    return NULL;
}

/* ---- building frames --------------------------------------------------- */

void vhca_roce_reseal(uint8_t *f, size_t len)
{
    uint8_t *ip = f + ETH_HLEN;
    size_t udp_len;

    g_assert_cmpuint(len, >=, ETH_HLEN + IPV4_HLEN + UDP_HLEN);
    stw_be_p(ip + 10, 0);
    stw_be_p(ip + 10, ip_checksum(ip, IPV4_HLEN));
    udp_len = lduw_be_p(ip + IPV4_HLEN + 4);
    if (udp_len >= UDP_HLEN + BTH_LEN + ICRC_LEN &&
        ETH_HLEN + IPV4_HLEN + udp_len <= len) {
        size_t covered = IPV4_HLEN + udp_len - ICRC_LEN;

        stl_le_p(ip + covered, roce_icrc(ip, covered));
    }
}

size_t vhca_roce_build(uint8_t *f, size_t cap, const VhcaRoceOut *o)
{
    uint8_t pad = -o->payload_len & 3;
    size_t udp_len = UDP_HLEN + BTH_LEN + o->ext_len + o->payload_len +
                     pad + ICRC_LEN;
    size_t len = ETH_HLEN + IPV4_HLEN + udp_len;
    uint8_t *ip = f + ETH_HLEN, *udp = ip + IPV4_HLEN, *bth = udp + UDP_HLEN;
    uint8_t *p = bth + BTH_LEN;

    g_assert_cmpuint(len, <=, cap);
    g_assert_cmpuint(o->ext_len, <=, sizeof(o->ext));
    memset(f, 0, len);
    memcpy(f, o->dmac, 6);
    memcpy(f + 6, o->smac, 6);
    stw_be_p(f + 12, ETHERTYPE_IPV4);
    ip[0] = 0x45;
    stw_be_p(ip + 2, IPV4_HLEN + udp_len);
    stw_be_p(ip + 6, 0x4000);               /* DF */
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, o->sip, 4);
    memcpy(ip + 16, o->dip, 4);
    stw_be_p(udp, 0xc000);
    stw_be_p(udp + 2, VHCA_ROCE_V2_UDP_PORT);
    stw_be_p(udp + 4, udp_len);
    bth[0] = o->opcode;
    bth[1] = pad << 4;
    stw_be_p(bth + 2, 0xffff);
    stl_be_p(bth + 4, o->dest_qpn & 0xffffff);
    stl_be_p(bth + 8, (o->ack_req ? 0x80000000u : 0) | (o->psn & 0xffffff));
    memcpy(p, o->ext, o->ext_len);
    p += o->ext_len;
    if (o->payload_len) {
        memcpy(p, o->payload, o->payload_len);
    }
    vhca_roce_reseal(f, len);
    return len;
}

/* ---- the link ---------------------------------------------------------- */

/* Largest frame a vhca sends (9000 MTU + header + tag) with room to spare. */
#define LINK_FRAME_MAX          (VHCA_ETH_MAX_FRAME + 64)
/* Frames read in one pump call at most, so a pump always returns. */
#define LINK_PUMP_MAX           4096

void vhca_link_init(VhcaLink *link, VhcaTestDev *a, VhcaTestDev *b)
{
    memset(link, 0, sizeof(*link));
    link->dev[0] = a;
    link->dev[1] = b;
    link->frames = g_ptr_array_new();
    link->trace = g_getenv("VHCA_LINK_TRACE") != NULL;
    link->clock_ns = qtest_clock_step(a->qts, 1);
}

static void link_frame_free(VhcaLinkFrame *f)
{
    if (f) {
        g_free(f->data);
        g_free(f);
    }
}

void vhca_link_clear_frames(VhcaLink *link)
{
    for (guint i = 0; i < link->frames->len; i++) {
        link_frame_free(g_ptr_array_index(link->frames, i));
    }
    g_ptr_array_set_size(link->frames, 0);
}

void vhca_link_destroy(VhcaLink *link)
{
    vhca_link_clear_frames(link);
    g_ptr_array_free(link->frames, true);
    for (int dir = 0; dir < 2; dir++) {
        link_frame_free(link->held[dir]);
    }
}

/* One line per frame: VHCA_LINK_TRACE=1 in the environment. */
static void link_trace(const VhcaLinkFrame *f)
{
    static const char *const verdict[] = {
        [VHCA_LINK_PASS] = "pass", [VHCA_LINK_DROP] = "DROP",
        [VHCA_LINK_DUPLICATE] = "DUP", [VHCA_LINK_HOLD] = "HOLD",
        [VHCA_LINK_CORRUPT] = "CORRUPT", [VHCA_LINK_MARK_CE] = "CE",
    };
    VhcaRocePkt p;
    const char *err = vhca_roce_parse(f->data, f->len, &p);

    if (err) {
        g_printerr("link %" PRIu64 " t=%" PRId64 " %u->%u %s: %s\n",
                       f->seq, f->clock_ns, f->from, !f->from,
                       verdict[f->verdict], err);
        return;
    }
    g_printerr("link %" PRIu64 " t=%" PRId64 " %u->%u %s: %s qp %u "
                   "psn 0x%06x%s len %u aeth 0x%02x msn %u\n", f->seq,
                   f->clock_ns, f->from, !f->from, verdict[f->verdict],
                   vhca_rc_opcode_name(p.opcode), p.dest_qpn, p.psn,
                   p.ack_req ? " A" : "", p.payload_len,
                   p.has_aeth ? p.aeth_syndrome : 0,
                   p.has_aeth ? p.aeth_msn : 0);
}

static void link_deliver(VhcaLink *link, const VhcaLinkFrame *f)
{
    vhca_wire_send(link->dev[!f->from], f->data, f->len);
    link->delivered[!f->from]++;
}

/*
 * MARK_CE: what a RED queue does to an ECN-capable packet instead of
 * dropping it (RFC 3168 section 5; Linux net/sched/sch_red.c's
 * INET_ECN_set_ce), whether or not the packet said ECT - the test plays
 * a switch that marks anything, so that a receiver's answer to a mark
 * does not depend on its peer's ECN setting.  Only the IPv4 header
 * checksum changes with it: the ICRC covers the TOS byte as ones (IBTA
 * Vol 1 7.8.1, annex A17.3.3), so a marked packet keeps its ICRC, as on
 * a real fabric.  Untagged IPv4 only, as the parser above.
 */
static void link_mark_ce(VhcaLink *link, VhcaLinkFrame *f)
{
    uint8_t *ip = f->data + ETH_HLEN;
    size_t ihl;

    if (f->len < ETH_HLEN + IPV4_HLEN ||
        lduw_be_p(f->data + 12) != ETHERTYPE_IPV4 || (ip[0] >> 4) != 4) {
        return;
    }
    ihl = (ip[0] & 0x0f) * 4u;
    if (ihl < IPV4_HLEN || ETH_HLEN + ihl > f->len) {
        return;
    }
    ip[1] |= VHCA_ECN_CE;
    stw_be_p(ip + 10, 0);
    stw_be_p(ip + 10, ip_checksum(ip, ihl));
    link->marked_ce++;
}

/* The capture keeps its own copy: delivery and capture never share. */
static void link_capture(VhcaLink *link, const VhcaLinkFrame *f)
{
    VhcaLinkFrame *copy = g_memdup2(f, sizeof(*f));

    copy->data = g_memdup2(f->data, f->len);
    g_ptr_array_add(link->frames, copy);
}


unsigned vhca_link_pump(VhcaLink *link)
{
    VhcaLinkFrame *held_before[2] = { link->held[0], link->held[1] };
    unsigned n = 0;
    bool more;

    do {
        more = false;
        for (unsigned from = 0; from < 2; from++) {
            VhcaTestDev *src = link->dev[from];
            VhcaLinkFrame *f;
            uint8_t *buf;

            if (n >= LINK_PUMP_MAX || vhca_wire_idle(src)) {
                continue;
            }
            buf = g_malloc(LINK_FRAME_MAX);
            f = g_new0(VhcaLinkFrame, 1);
            f->len = vhca_wire_recv(src, buf, LINK_FRAME_MAX);
            f->data = buf;
            f->from = from;
            f->seq = link->seen[0] + link->seen[1];
            f->clock_ns = link->clock_ns;
            f->verdict = VHCA_LINK_PASS;
            link->seen[from]++;
            n++;
            more = true;
            if (link->filter) {
                f->verdict = link->filter(link, f, link->filter_opaque);
            }
            if (link->trace) {
                link_trace(f);
            }
            if (link->capture) {
                link_capture(link, f);
            }

            switch (f->verdict) {
            case VHCA_LINK_MARK_CE:
                /* Marked, then delivered as a passing frame. */
                link_mark_ce(link, f);
                /* fall through */
            case VHCA_LINK_PASS:
            case VHCA_LINK_DUPLICATE:
                link_deliver(link, f);
                if (f->verdict == VHCA_LINK_DUPLICATE) {
                    link_deliver(link, f);
                }
                if (link->held[from]) {
                    /* The held one now arrives after this one. */
                    link_deliver(link, link->held[from]);
                    link_frame_free(link->held[from]);
                    if (held_before[from] == link->held[from]) {
                        held_before[from] = NULL;
                    }
                    link->held[from] = NULL;
                }
                link_frame_free(f);
                break;
            case VHCA_LINK_DROP:
                link->dropped++;
                link_frame_free(f);
                break;
            case VHCA_LINK_CORRUPT:
                /* The byte before the 4-byte ICRC of a RoCE frame. */
                if (f->len > 4) {
                    f->data[f->len - 5] ^= 0x01;
                }
                link_deliver(link, f);
                link_frame_free(f);
                break;
            case VHCA_LINK_HOLD:
                if (link->held[from]) {
                    link_deliver(link, link->held[from]);
                    link_frame_free(link->held[from]);
                    if (held_before[from] == link->held[from]) {
                        held_before[from] = NULL;
                    }
                }
                link->held[from] = f;
                break;
            }
        }
    } while (more);

    /* Nothing came after a frame held since an earlier call: let it go. */
    for (unsigned from = 0; from < 2; from++) {
        if (held_before[from] && link->held[from] == held_before[from]) {
            link_deliver(link, link->held[from]);
            link_frame_free(link->held[from]);
            link->held[from] = NULL;
        }
    }
    return n;
}

void vhca_link_clock_step(VhcaLink *link, int64_t ns)
{
    g_assert_cmpint(ns, >, 0);
    link->clock_ns = qtest_clock_step(link->dev[0]->qts, ns);
}

void vhca_link_sync_clock(VhcaLink *link)
{
    vhca_link_clock_step(link, 1);
}

void vhca_link_settle(VhcaLink *link, int64_t step_ns)
{
    gint64 deadline = g_get_monotonic_time() + G_TIME_SPAN_SECOND;
    unsigned quiet = 0;

    vhca_link_sync_clock(link);
    while (quiet < 50 && g_get_monotonic_time() < deadline) {
        quiet = vhca_link_pump(link) ? 0 : quiet + 1;
        vhca_link_clock_step(link, step_ns);
    }
}
