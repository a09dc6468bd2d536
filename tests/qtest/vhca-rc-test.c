/*
 * vhca conformance: the Reliable Connection transport (IBTA Vol 1
 * chapter 9, RoCEv2 annex A17) between two vhca functions of one QEMU.
 *
 * The test is the Ethernet segment between them (vhca-qlink): it carries
 * every frame, checks each against the standard with its own parser, and
 * drops, duplicates or reorders frames to exercise the requester's
 * retransmission, the responder's duplicate detection and the RNR and
 * NAK paths.  Time is QEMU's virtual clock, stepped by the test, so
 * retransmission timeouts are measured exactly.
 *
 * Setup per case: functions 0 (slot 4, 192.0.2.1) and 1 (slot 5,
 * 192.0.2.2) with an IPv4 GID at index 0, a user context, a PD, a
 * completion EQ and send/receive CQs, and one RC QP each (or two on
 * function 0 for loopback) taken to RTS.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "vhca-qdriver.h"
#include "vhca-qrdma.h"
#include "vhca-frame.h"
#include "vhca-qlink.h"
#include "rxe-frames.h"

#define ADMQ_LOG        8
#define AEQ_LOG         10
#define CQ_LOG          10
#define RAM_MIB         256

/* Virtual time per wait step: fine enough to time ACK timeouts. */
#define STEP_NS         10000

static const unsigned fn_slot[2] = { 4, 5 };
static const char *const fn_opts[2] = {
    "mac=52:54:00:00:01:01", "mac=52:54:00:00:01:02",
};
static const uint8_t fn_mac[2][6] = {
    { 0x52, 0x54, 0x00, 0x00, 0x01, 0x01 },
    { 0x52, 0x54, 0x00, 0x00, 0x01, 0x02 },
};
static const uint8_t fn_ip[2][4] = { { 192, 0, 2, 1 }, { 192, 0, 2, 2 } };

#define ALL_REMOTE (VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ | \
                    VHCA_ACCESS_REMOTE_ATOMIC)
#define ALL_ACCESS (VHCA_ACCESS_LOCAL_WRITE | ALL_REMOTE)

/* ---- the fabric: two functions and the wire --------------------------- */

typedef struct Side {
    unsigned idx;
    VhcaTestDev *d;
    struct vhca_device_attr dev;
    uint8_t gid[16];
    uint32_t page;              /* user context owning CQs and QPs */
    uint32_t pdn;
    VhcaEq eq;
    VhcaCq scq, rcq;
} Side;

typedef struct Fabric {
    VhcaTestDev *devs[2];
    Side side[2];
    VhcaLink link;
} Fabric;

/* RC attributes of one connection (both ends alike). */
typedef struct QpConf {
    uint8_t path_mtu;
    uint8_t timeout;            /* Local ACK Timeout, 4.096 us * 2^t */
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;      /* the responder's RNR NAK timer code */
    uint32_t access;            /* qp_access_flags */
    uint8_t max_rd_atomic;      /* initiator depth, 0: the device's max */
    unsigned sq_log, rq_log;
    bool sig_all;
    uint8_t traffic_class;      /* of both ends' paths */
} QpConf;

static const QpConf conf_default = {
    .path_mtu = VHCA_IB_MTU_1024,
    .timeout = 14,              /* 67 ms: never expires without loss */
    .retry_cnt = 7,
    .rnr_retry = 7,
    .min_rnr_timer = 1,         /* 10 us */
    .access = ALL_REMOTE,
    .sq_log = 6,
    .rq_log = 6,
    .sig_all = false,
};

/* Initial PSNs: the requester of side 0 wraps 2^24 within a few packets. */
static const uint32_t initial_psn[2] = { 0xfffffd, 0x123456 };

typedef struct Conn {
    Side *s[2];
    VhcaQp qp[2];
    QpConf conf;
} Conn;

static void side_up(Fabric *f, unsigned i, unsigned eth_mtu)
{
    Side *s = &f->side[i];

    s->idx = i;
    s->d = f->devs[i];
    vhca_admin_setup(s->d, ADMQ_LOG, AEQ_LOG);
    /* RDMA commands may post CQ_ERROR / QP events among CMD_DONEs. */
    s->d->stash_events = true;
    vhca_gid_from_ipv4(s->gid, fn_ip[i]);
    g_assert_cmpuint(vhca_cmd_add_gid(s->d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      s->gid), ==, VHCA_ST_OK);
    if (eth_mtu) {
        g_assert_cmpuint(vhca_cmd_set_mtu(s->d, eth_mtu), ==, VHCA_ST_OK);
    }
    g_assert_cmpuint(vhca_cmd_query_device(s->d, &s->dev), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(s->d, &s->page), ==, VHCA_ST_OK);
    s->pdn = vhca_pd_make(s->d);
    vhca_eq_make(s->d, &s->eq, 6, VHCA_VECTOR_FIRST_COMP);
    vhca_cq_make(s->d, &s->scq, CQ_LOG, s->eq.eqn, s->page);
    vhca_cq_make(s->d, &s->rcq, CQ_LOG, s->eq.eqn, s->page);
}

/* @eth_mtu: SET_MTU on both functions first, 0 to keep 1500. */
static void fabric_up(Fabric *f, unsigned eth_mtu)
{
    memset(f, 0, sizeof(*f));
    vhca_test_start_many(2, fn_slot, fn_opts, RAM_MIB, f->devs);
    side_up(f, 0, eth_mtu);
    side_up(f, 1, eth_mtu);
    vhca_link_init(&f->link, f->devs[0], f->devs[1]);
    f->link.capture = true;
}

/*
 * Every frame either function put on the wire is a valid RoCEv2 frame
 * from its MAC and IP to the other's (IBTA A17.4.1.1: the IP addresses are
 * the GIDs of the address vector), to a QP that exists.
 */
static void check_captured_frames(Fabric *f)
{
    for (guint i = 0; i < f->link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(f->link.frames, i);
        unsigned from = fr->from, to = !fr->from;
        VhcaRocePkt p;
        const char *err = vhca_roce_parse(fr->data, fr->len, &p);

        if (err) {
            g_error("frame %" PRIu64 " from function %u (%zu bytes): %s",
                    fr->seq, from, fr->len, err);
        }
        g_assert_cmpmem(p.smac, 6, fn_mac[from], 6);
        g_assert_cmpmem(p.dmac, 6, fn_mac[to], 6);
        g_assert_cmpmem(p.sip, 4, fn_ip[from], 4);
        g_assert_cmpmem(p.dip, 4, fn_ip[to], 4);
        /* The default P_Key (pkey_index 0): full member, 0xffff. */
        g_assert_cmphex(p.pkey, ==, 0xffff);
        /* Annex A17: the UDP source port is in the dynamic range. */
        g_assert_cmphex(p.udp_sport, >=, 0xc000);
        /* At most the Ethernet MTU (IBTA payload <= path MTU below). */
        g_assert_cmpuint(fr->len, <=, VHCA_ETH_MAX_FRAME);
    }
}

static void fabric_down(Fabric *f)
{
    check_captured_frames(f);
    vhca_link_destroy(&f->link);
    vhca_test_stop_many(2, f->devs);
}

static void qp_modify_ok_at(Side *s, struct vhca_qp_attr *a, uint8_t state,
                            uint32_t mask, const char *where)
{
    vhca_qp_modify_ok_at(s->d, a, state, mask, where);
}

/* RESET -> INIT -> RTR -> RTS towards @peer's QP @dest_qpn. */
static void qp_to_rts_at(Side *s, VhcaQp *qp, const Side *peer,
                         uint32_t dest_qpn, uint32_t sq_psn, uint32_t rq_psn,
                         const QpConf *c, const char *where)
{
    VhcaRcPath p = {
        .dgid = peer->gid,
        .dmac = fn_mac[peer->idx],
        .dest_qpn = dest_qpn,
        .sq_psn = sq_psn,
        .rq_psn = rq_psn,
        .path_mtu = c->path_mtu,
        .timeout = c->timeout,
        .retry_cnt = c->retry_cnt,
        .rnr_retry = c->rnr_retry,
        .min_rnr_timer = c->min_rnr_timer,
        .access = c->access,
        .max_rd_atomic = c->max_rd_atomic ? c->max_rd_atomic
                                           : s->dev.max_qp_init_rd_atom,
        .max_dest_rd_atomic = s->dev.max_qp_rd_atom,
        .traffic_class = c->traffic_class,
    };

    vhca_qp_to_rts_at(s->d, qp->qpn, &p, where);
}

static void qp_create_at(Side *s, VhcaQp *qp, const QpConf *c,
                         const char *where)
{
    struct vhca_qp_create cr;

    vhca_qp_prepare(s->d, qp, VHCA_QPT_RC, s->pdn, s->scq.cqn, s->rcq.cqn,
                    c->sq_log, c->rq_log, s->page, &cr);
    cr.sq_sig_all = c->sig_all;
    VHCA_CHECK_EQ(where, "CREATE_QP status",
                  vhca_cmd_create_qp(s->d, &cr, &qp->qpn), VHCA_ST_OK);
}

/*
 * Connect QP 0 on @a with QP 1 on @b (@a == @b: loopback).  Side 0's
 * requester starts at initial_psn[0], side 1's at initial_psn[1].
 */
static void conn_make_at(Conn *cn, Side *a, Side *b, const QpConf *c,
                         const char *where)
{
    memset(cn, 0, sizeof(*cn));
    cn->s[0] = a;
    cn->s[1] = b;
    cn->conf = *c;
    qp_create_at(a, &cn->qp[0], c, where);
    qp_create_at(b, &cn->qp[1], c, where);
    qp_to_rts_at(a, &cn->qp[0], b, cn->qp[1].qpn, initial_psn[0],
                 initial_psn[1], c, where);
    qp_to_rts_at(b, &cn->qp[1], a, cn->qp[0].qpn, initial_psn[1],
                 initial_psn[0], c, where);
}
#define conn_make(cn, a, b, c) conn_make_at(cn, a, b, c, G_STRLOC)

static uint8_t qp_state(Side *s, VhcaQp *qp)
{
    struct vhca_qp_attr a;

    g_assert_cmpuint(vhca_cmd_query_qp(s->d, qp->qpn, &a), ==, VHCA_ST_OK);
    return a.qp_state;
}

/* ---- memory ------------------------------------------------------------ */

static uint8_t pattern_byte(size_t i, unsigned seed)
{
    return (uint8_t)(i * 131 + (i >> 9) * 7 + seed * 29 + 1);
}

static uint64_t buf_alloc(Side *s, size_t len)
{
    uint64_t addr = guest_alloc(&s->d->alloc, len);

    qtest_memset(s->d->qts, addr, 0, len);
    return addr;
}

static void buf_fill(Side *s, uint64_t addr, size_t len, unsigned seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    for (size_t i = 0; i < len; i++) {
        b[i] = pattern_byte(i, seed);
    }
    qtest_bufwrite(s->d->qts, addr, b, len);
}

static void buf_check_at(Side *s, uint64_t addr, size_t len, unsigned seed,
                         const char *where)
{
    g_autofree uint8_t *b = g_malloc(len);

    qtest_bufread(s->d->qts, addr, b, len);
    for (size_t i = 0; i < len; i++) {
        if (b[i] != pattern_byte(i, seed)) {
            g_error("%s: byte %zu of %zu at 0x%" PRIx64 " on function %u is "
                    "0x%02x, expected 0x%02x", where, i, len, addr, s->idx,
                    b[i], pattern_byte(i, seed));
        }
    }
}
#define buf_check(s, a, l, seed) buf_check_at(s, a, l, seed, G_STRLOC)

static void buf_check_zero_at(Side *s, uint64_t addr, size_t len,
                              const char *where)
{
    g_autofree uint8_t *b = g_malloc(len);

    qtest_bufread(s->d->qts, addr, b, len);
    for (size_t i = 0; i < len; i++) {
        if (b[i]) {
            g_error("%s: byte %zu at 0x%" PRIx64 " on function %u is 0x%02x, "
                    "expected untouched 0", where, i, addr, s->idx, b[i]);
        }
    }
}
#define buf_check_zero(s, a, l) buf_check_zero_at(s, a, l, G_STRLOC)

static uint8_t next_key_tag = 0x40;

/* A physical MR (iova = guest address) over [addr, addr + len). */
static uint32_t mr_phys(Side *s, uint64_t addr, uint64_t len,
                        uint32_t access)
{
    struct vhca_mr_create c;
    uint32_t key;

    vhca_mr_prepare_phys(&c, s->pdn, access, addr, len, next_key_tag++);
    g_assert_cmpuint(vhca_cmd_create_mr(s->d, &c, NULL, &key), ==,
                     VHCA_ST_OK);
    return key;
}

/*
 * A paged MR of @len bytes at @iova, which need not resemble a guest
 * address: the device must translate through the page list.  Returns the
 * key; *@addr is where iova lands in guest memory.
 */
static uint32_t mr_paged(Side *s, uint64_t iova, uint64_t len,
                         uint32_t access, uint64_t *addr)
{
    uint32_t offset = iova & (VHCA_TEST_PAGE_SIZE - 1);
    struct vhca_mr_create c;
    VhcaPages p;
    uint32_t key;

    vhca_pages_alloc(s->d, &p, offset + len);
    memset(&c, 0, sizeof(c));
    c.pdn = cpu_to_le32(s->pdn);
    c.access = cpu_to_le32(access);
    c.iova = cpu_to_le64(iova);
    c.length = cpu_to_le64(len);
    c.pbl_addr = cpu_to_le64(p.pbl);
    c.npages = cpu_to_le32(p.npages);
    c.page_shift = 12;
    c.pbl_levels = 1;
    c.offset = cpu_to_le32(offset);
    c.key_tag = cpu_to_le32(next_key_tag++);
    g_assert_cmpuint(vhca_cmd_create_mr(s->d, &c, NULL, &key), ==,
                     VHCA_ST_OK);
    *addr = p.addr + offset;
    return key;
}

/* ---- work requests ----------------------------------------------------- */

/* Write @w into the next SQ slot; the doorbell is sq_ring's. */
static void sq_write(Side *s, VhcaQp *qp, const struct vhca_send_wqe *w)
{
    vhca_qp_write_send_wqe(s->d, qp, w);
}

static void sq_ring(Side *s, VhcaQp *qp)
{
    vhca_qp_ring_sq(s->d, qp, s->page);
}

static void sq_post(Side *s, VhcaQp *qp, const struct vhca_send_wqe *w)
{
    sq_write(s, qp, w);
    sq_ring(s, qp);
}

/* One receive WQE of one SGE (none if @len is 0), and its doorbell. */
static void rq_post(Side *s, VhcaQp *qp, uint64_t wr_id, uint64_t addr,
                    uint32_t len, uint32_t lkey)
{
    vhca_qp_write_recv_sge(s->d, qp, wr_id, addr, len, lkey);
    vhca_qp_ring_rq(s->d, qp, s->page);
}

/* ---- completions ------------------------------------------------------- */

/* Wait for the next CQE of @cq, running the link; consume it. */
static void cqe_wait_at(Fabric *f, Side *s, VhcaCq *cq, struct vhca_cqe *cqe,
                        int64_t step_ns, const char *where)
{
    g_autofree char *what = g_strdup_printf("CQE %u of CQ %u on function %u",
                                            cq->ci, cq->cqn, s->idx);

    VHCA_LINK_WAIT_UNTIL_AT(&f->link, vhca_cq_peek(s->d, cq, cqe), step_ns,
                            what, where);
    cq->ci++;
    vhca_cq_update_dbrec(s->d, cq);
}

static void cqe_check_at(const struct vhca_cqe *c, uint8_t status,
                         uint8_t opcode, uint64_t wr_id, uint32_t qpn,
                         const char *where)
{
    VHCA_CHECK_EQ(where, "CQE status", c->status, status);
    VHCA_CHECK_EQ(where, "CQE wr_id", c->wr_id, wr_id);
    VHCA_CHECK_EQ(where, "CQE qpn", c->qpn, qpn);
    if (status == VHCA_WC_SUCCESS) {
        /* Opcode is defined for errors only as far as flushes go. */
        VHCA_CHECK_EQ(where, "CQE opcode", c->opcode, opcode);
    }
}

/* Next CQE of @cq, which must be as given. */
static void expect_cqe_at(Fabric *f, Side *s, VhcaCq *cq, uint8_t status,
                          uint8_t opcode, uint64_t wr_id, uint32_t qpn,
                          struct vhca_cqe *out, const char *where)
{
    struct vhca_cqe c;

    cqe_wait_at(f, s, cq, &c, STEP_NS, where);
    cqe_check_at(&c, status, opcode, wr_id, qpn, where);
    if (out) {
        *out = c;
    }
}
#define expect_cqe(f, s, cq, st, op, id, qpn, out) \
    expect_cqe_at(f, s, cq, st, op, id, qpn, out, G_STRLOC)

/* The immediate of a CQE as the number the sender put on the wire. */
static uint32_t cqe_imm(const struct vhca_cqe *c)
{
    /* vhca_cq_peek made it host order; the field holds wire bytes. */
    return be32_to_cpu(cpu_to_le32(c->imm_or_inv));
}

/*
 * Let the link run until nothing has moved for a while (or the wall
 * clock budget ends), so a check that something did NOT happen is
 * meaningful.
 */
static void settle(Fabric *f)
{
    vhca_link_settle(&f->link, STEP_NS);
}

static void expect_cq_empty_at(Fabric *f, Side *s, VhcaCq *cq,
                               const char *where)
{
    struct vhca_cqe c;

    settle(f);
    if (vhca_cq_peek(s->d, cq, &c)) {
        g_error("%s: unexpected CQE on function %u CQ %u: status %u opcode "
                "%u wr_id 0x%" PRIx64 " qpn %u", where, s->idx, cq->cqn,
                c.status, c.opcode, c.wr_id, c.qpn);
    }
}
#define expect_cq_empty(f, s, cq) expect_cq_empty_at(f, s, cq, G_STRLOC)

/* ---- captured frames --------------------------------------------------- */

/* Parse captured frame @i (known valid: check_captured_frames). */
static const VhcaLinkFrame *frame_at(Fabric *f, guint i, VhcaRocePkt *p)
{
    const VhcaLinkFrame *fr = g_ptr_array_index(f->link.frames, i);
    const char *err = vhca_roce_parse(fr->data, fr->len, p);

    if (err) {
        g_error("captured frame %u: %s", i, err);
    }
    return fr;
}

/* Forget the frames captured so far (after checking them). */
static void frames_reset(Fabric *f)
{
    check_captured_frames(f);
    vhca_link_clear_frames(&f->link);
}

static uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & 0xffffff;
}

/*
 * The packets of one message (request, or read responses) from function
 * @from, in order: the
 * opcodes IBTA 9.7 segmentation gives a @len byte message at @pmtu bytes
 * (first/middle/last or only), one PSN each from @psn, every packet but
 * the last a full path MTU, payload equal to @seed's pattern from @offset.
 * Returns the number of packets.
 */
static unsigned check_message_frames_at(Fabric *f, unsigned from,
                                        uint32_t dest_qpn, uint8_t first,
                                        uint8_t middle, uint8_t last,
                                        uint8_t only, uint32_t psn,
                                        uint32_t len, uint32_t pmtu,
                                        unsigned seed, const char *where)
{
    unsigned npkts = len ? DIV_ROUND_UP(len, pmtu) : 1, k = 0;
    uint32_t off = 0;

    for (guint i = 0; i < f->link.frames->len && k < npkts; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(f, i, &p);
        uint8_t want;
        uint32_t want_len;

        if (fr->from != from) {
            continue;
        }
        want = npkts == 1 ? only : k == 0 ? first : k + 1 == npkts ? last
                                                                   : middle;
        want_len = k + 1 == npkts ? len - off : pmtu;
        if (p.opcode != want) {
            g_error("%s: packet %u of %u: opcode %s, expected %s", where, k,
                    npkts, vhca_rc_opcode_name(p.opcode),
                    vhca_rc_opcode_name(want));
        }
        VHCA_CHECK_EQ(where, "BTH DestQP", p.dest_qpn, dest_qpn);
        VHCA_CHECK_EQ(where, "BTH PSN", p.psn, psn_add(psn, k));
        VHCA_CHECK_EQ(where, "payload length", p.payload_len, want_len);
        for (uint32_t b = 0; b < p.payload_len; b++) {
            if (p.payload[b] != pattern_byte(off + b, seed)) {
                g_error("%s: packet %u payload byte %u wrong", where, k, b);
            }
        }
        off += want_len;
        k++;
    }
    VHCA_CHECK_EQ(where, "request packets on the wire", k, npkts);
    return npkts;
}
#define check_message_frames(...) \
    check_message_frames_at(__VA_ARGS__, G_STRLOC)

static unsigned count_frames(Fabric *f, unsigned from, uint8_t opcode)
{
    unsigned n = 0;

    for (guint i = 0; i < f->link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(f, i, &p);

        n += fr->from == from && p.opcode == opcode;
    }
    return n;
}

/* ======================================================================= */
/* The operations                                                          */
/* ======================================================================= */

#define SEND_ID(i)      (0x5e4d000000000000ull | (i))
#define RECV_ID(i)      (0x4ecf000000000000ull | (i))
#define IMM             0x12345678u

/* SEND and SEND_WITH_IMM of one packet: data, both CQEs, the wire. */
static void test_send(const void *data)
{
    bool with_imm = GPOINTER_TO_INT(data);
    enum { LEN = 200, RBUF = 512 };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    VhcaRocePkt p;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;
    bool seen_ack = false;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], sbuf, LEN, 1);
    skey = mr_phys(&f.side[0], sbuf, LEN, 0);
    rbuf = buf_alloc(&f.side[1], RBUF);
    rkey = mr_phys(&f.side[1], rbuf, RBUF, VHCA_ACCESS_LOCAL_WRITE);

    rq_post(&f.side[1], &cn.qp[1], RECV_ID(7), rbuf, RBUF, rkey);
    vhca_wqe_init(&w, SEND_ID(1),
                  with_imm ? VHCA_WR_SEND_WITH_IMM : VHCA_WR_SEND,
                  VHCA_WQE_SIGNALED);
    w.imm_or_inv = cpu_to_be32(IMM);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);

    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(7), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    if (with_imm) {
        g_assert_cmphex(c.flags & VHCA_CQE_WITH_IMM, ==, VHCA_CQE_WITH_IMM);
        g_assert_cmphex(cqe_imm(&c), ==, IMM);
    } else {
        g_assert_cmphex(c.flags & VHCA_CQE_WITH_IMM, ==, 0);
    }
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    buf_check(&f.side[1], rbuf, LEN, 1);
    buf_check_zero(&f.side[1], rbuf + LEN, RBUF - LEN);

    /* Nothing else completes anywhere. */
    expect_cq_empty(&f, &f.side[0], &f.side[0].scq);
    expect_cq_empty(&f, &f.side[0], &f.side[0].rcq);
    expect_cq_empty(&f, &f.side[1], &f.side[1].scq);
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);

    /* The wire: SEND_ONLY[_IMM] at the initial PSN, then its ACK. */
    check_message_frames(&f, 0, cn.qp[1].qpn, 0, 0, 0,
                         with_imm ? VHCA_RC_SEND_ONLY_IMM : VHCA_RC_SEND_ONLY,
                         initial_psn[0], LEN, 1024, 1);
    for (guint i = 0; i < f.link.frames->len; i++) {
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0) {
            g_assert_cmpuint(p.has_imm, ==, with_imm);
            if (with_imm) {
                g_assert_cmphex(p.imm, ==, IMM);
            }
        } else {
            g_assert_cmpuint(p.opcode, ==, VHCA_RC_ACKNOWLEDGE);
            g_assert_cmpuint(p.dest_qpn, ==, cn.qp[0].qpn);
            g_assert_cmphex(VHCA_AETH_KIND(p.aeth_syndrome), ==,
                            VHCA_AETH_ACK);
            g_assert_cmphex(p.psn, ==, initial_psn[0]);
            /* MSN: the responder completed one message (IBTA 9.7.5, AETH). */
            g_assert_cmpuint(p.aeth_msn, ==, 1);
            seen_ack = true;
        }
    }
    g_assert_true(seen_ack);
    /* Both QPs carry on in RTS. */
    g_assert_cmpuint(qp_state(&f.side[0], &cn.qp[0]), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&f.side[1], &cn.qp[1]), ==, VHCA_QPS_RTS);
    fabric_down(&f);
}

/* RDMA WRITE (and WITH_IMM) into a paged MR at an arbitrary iova. */
static void test_rdma_write(const void *data)
{
    bool with_imm = GPOINTER_TO_INT(data);
    enum { LEN = 700, SLACK = 64 };
    const uint64_t iova = 0x7f0000001230ull;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, raddr, rrecv;
    uint32_t skey, rkey, rrecv_key;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], sbuf, LEN, 2);
    skey = mr_phys(&f.side[0], sbuf, LEN, 0);
    rkey = mr_paged(&f.side[1], iova, LEN + 2 * SLACK,
                    VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE, &raddr);
    rrecv = buf_alloc(&f.side[1], 64);
    rrecv_key = mr_phys(&f.side[1], rrecv, 64, VHCA_ACCESS_LOCAL_WRITE);
    /* A receive WQE: WRITE_WITH_IMM consumes it, plain WRITE must not. */
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(3), rrecv, 64, rrecv_key);

    vhca_wqe_init(&w, SEND_ID(2), with_imm ? VHCA_WR_RDMA_WRITE_WITH_IMM
                                           : VHCA_WR_RDMA_WRITE,
                  VHCA_WQE_SIGNALED);
    w.imm_or_inv = cpu_to_be32(IMM);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, iova + SLACK, rkey);
    sq_post(&f.side[0], &cn.qp[0], &w);

    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(2), cn.qp[0].qpn, NULL);
    /* Acknowledged means placed (IBTA 9.7.5). */
    buf_check_zero(&f.side[1], raddr, SLACK);
    buf_check(&f.side[1], raddr + SLACK, LEN, 2);
    buf_check_zero(&f.side[1], raddr + SLACK + LEN, SLACK);
    if (with_imm) {
        expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS,
                   VHCA_WC_RECV_RDMA_WITH_IMM, RECV_ID(3), cn.qp[1].qpn, &c);
        g_assert_cmphex(c.flags & VHCA_CQE_WITH_IMM, ==, VHCA_CQE_WITH_IMM);
        g_assert_cmphex(cqe_imm(&c), ==, IMM);
        /* The length written, as rxe and mlx5 report it. */
        g_assert_cmpuint(c.byte_len, ==, LEN);
        /* The receive buffer itself is not written. */
        buf_check_zero(&f.side[1], rrecv, 64);
    }
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    expect_cq_empty(&f, &f.side[0], &f.side[0].scq);

    check_message_frames(&f, 0, cn.qp[1].qpn, 0, 0, 0,
                         with_imm ? VHCA_RC_WRITE_ONLY_IMM
                                  : VHCA_RC_WRITE_ONLY,
                         initial_psn[0], LEN, 1024, 2);
    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0) {
            g_assert_true(p.has_reth);
            g_assert_cmphex(p.reth_va, ==, iova + SLACK);
            g_assert_cmphex(p.reth_rkey, ==, rkey);
            g_assert_cmpuint(p.reth_len, ==, LEN);
        }
    }
    fabric_down(&f);
}

/*
 * Fast registration through the PCI device (IBTA 10.6.3.2, 10.6.5): side 1
 * registers a fast-register MR with a REG_MR WQE, side 0 writes through
 * the new R_Key, then frees it with a SEND with Invalidate; a WRITE after
 * that fails with a remote access error.
 */
static void test_fast_reg(void)
{
    enum { LEN = 700, PAGES = 2 };
    const uint64_t iova = 0x7f0000000f00ull;    /* crosses a page */
    struct vhca_mr_create mc;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    VhcaPages p;
    uint64_t sbuf, rrecv;
    uint32_t skey, free_key, key, rrecv_key;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], sbuf, LEN, 5);
    skey = mr_phys(&f.side[0], sbuf, LEN, 0);
    rrecv = buf_alloc(&f.side[1], 64);
    rrecv_key = mr_phys(&f.side[1], rrecv, 64, VHCA_ACCESS_LOCAL_WRITE);

    memset(&mc, 0, sizeof(mc));
    mc.pdn = cpu_to_le32(f.side[1].pdn);
    mc.npages = cpu_to_le32(8);
    mc.flags = cpu_to_le16(VHCA_MR_FAST_REG);
    mc.key_tag = cpu_to_le32(0x21);
    g_assert_cmpuint(vhca_cmd_create_mr(f.side[1].d, &mc, NULL, &free_key),
                     ==, VHCA_ST_OK);
    key = (free_key & ~0xffu) | 0x22;
    vhca_pages_alloc(f.side[1].d, &p, PAGES * VHCA_TEST_PAGE_SIZE);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_REG_MR, VHCA_WQE_SIGNALED);
    w.imm_or_inv = cpu_to_le32(key);
    w.mr_iova = cpu_to_le64(iova);
    w.mr_length = cpu_to_le64(LEN);
    w.mr_pbl_addr = cpu_to_le64(p.pbl);
    w.mr_npages = cpu_to_le32(PAGES);
    w.mr_access = cpu_to_le32(VHCA_ACCESS_LOCAL_WRITE |
                              VHCA_ACCESS_REMOTE_WRITE);
    w.mr_page_shift = 12;
    sq_post(&f.side[1], &cn.qp[1], &w);
    expect_cqe(&f, &f.side[1], &f.side[1].scq, VHCA_WC_SUCCESS,
               VHCA_WC_REG_MR, SEND_ID(1), cn.qp[1].qpn, NULL);

    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, iova, key);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(2), cn.qp[0].qpn, NULL);
    buf_check(&f.side[1], p.addr + 0xf00, LEN, 5);

    rq_post(&f.side[1], &cn.qp[1], RECV_ID(3), rrecv, 64, rrecv_key);
    vhca_wqe_init(&w, SEND_ID(4), VHCA_WR_SEND_WITH_INV, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 16, skey);
    w.imm_or_inv = cpu_to_le32(key);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_SEND, SEND_ID(4), cn.qp[0].qpn, NULL);
    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS,
               VHCA_WC_RECV, RECV_ID(3), cn.qp[1].qpn, &c);
    g_assert_cmphex(c.flags, ==, VHCA_CQE_WITH_INV);
    g_assert_cmphex(c.imm_or_inv, ==, key);

    vhca_wqe_init(&w, SEND_ID(5), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 8, skey);
    vhca_wqe_remote(&w, iova, key);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE, SEND_ID(5), cn.qp[0].qpn, NULL);
    fabric_down(&f);
}

/*
 * A type 2 memory window through the PCI device (IBTA 10.6.7,
 * docs/specs/vhca.rst "Memory windows"): side 1 allocates a window,
 * binds it to part of an MR with a BIND_MW WQE on its QP, side 0 writes
 * through the window's key and the bytes land in the window only; after
 * side 1's LOCAL_INV of the key, a WRITE fails with a remote access error.
 */
static void test_mw_type2(void)
{
    enum { LEN = 700, MR_LEN = 4096, WIN_OFF = 0x400, WIN_LEN = 0x800 };
    Fabric f;
    Conn cn;
    struct vhca_cmd_mw_in in;
    struct vhca_cmd_obj_out out;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf;
    uint32_t skey, mr, mw, key;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], sbuf, LEN, 6);
    skey = mr_phys(&f.side[0], sbuf, LEN, 0);
    rbuf = buf_alloc(&f.side[1], MR_LEN);
    mr = mr_phys(&f.side[1], rbuf, MR_LEN,
                 VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_MW_BIND);

    memset(&in, 0, sizeof(in));
    in.pdn = cpu_to_le32(f.side[1].pdn);
    in.type = VHCA_MW_TYPE_2;
    in.key_tag = cpu_to_le32(0x30);
    g_assert_cmpuint(vhca_cmd_exec(f.side[1].d, VHCA_CMD_ALLOC_MW, &in,
                                   sizeof(in), &out), ==, VHCA_ST_OK);
    mw = le32_to_cpu(out.key);
    g_assert_cmphex(mw, ==, le32_to_cpu(out.handle) << 8 | 0x30);
    g_assert_cmphex(mw >> 8, !=, mr >> 8);
    key = (mw & ~0xffu) | 0x31;

    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_BIND_MW, VHCA_WQE_SIGNALED);
    w.rkey = cpu_to_le32(mw);
    w.imm_or_inv = cpu_to_le32(key);
    w.mw_mr_lkey = cpu_to_le32(mr);
    w.mw_addr = cpu_to_le64(rbuf + WIN_OFF);
    w.mw_length = cpu_to_le64(WIN_LEN);
    w.mw_access = cpu_to_le32(VHCA_ACCESS_REMOTE_WRITE);
    sq_post(&f.side[1], &cn.qp[1], &w);
    expect_cqe(&f, &f.side[1], &f.side[1].scq, VHCA_WC_SUCCESS,
               VHCA_WC_BIND_MW, SEND_ID(1), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, 0);
    /* The MR is in use while the window is bound to it. */
    g_assert_cmpuint(vhca_cmd_destroy(f.side[1].d, VHCA_CMD_DESTROY_MR, mr),
                     ==, VHCA_ST_BUSY);

    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, rbuf + WIN_OFF + 8, key);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(2), cn.qp[0].qpn, NULL);
    buf_check_zero(&f.side[1], rbuf, WIN_OFF + 8);
    buf_check(&f.side[1], rbuf + WIN_OFF + 8, LEN, 6);
    buf_check_zero(&f.side[1], rbuf + WIN_OFF + 8 + LEN,
                   MR_LEN - WIN_OFF - 8 - LEN);

    vhca_wqe_init(&w, SEND_ID(3), VHCA_WR_LOCAL_INV, VHCA_WQE_SIGNALED);
    w.imm_or_inv = cpu_to_le32(key);
    sq_post(&f.side[1], &cn.qp[1], &w);
    expect_cqe(&f, &f.side[1], &f.side[1].scq, VHCA_WC_SUCCESS,
               VHCA_WC_LOCAL_INV, SEND_ID(3), cn.qp[1].qpn, NULL);

    vhca_wqe_init(&w, SEND_ID(4), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 8, skey);
    vhca_wqe_remote(&w, rbuf + WIN_OFF, key);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_REM_ACCESS_ERR,
               VHCA_WC_RDMA_WRITE, SEND_ID(4), cn.qp[0].qpn, NULL);
    buf_check_zero(&f.side[1], rbuf, WIN_OFF + 8);

    /* Free, the window holds the MR no more; then it goes itself. */
    g_assert_cmpuint(vhca_cmd_destroy(f.side[1].d, VHCA_CMD_DESTROY_MR, mr),
                     ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_destroy(f.side[1].d, VHCA_CMD_DEALLOC_MW, key),
                     ==, VHCA_ST_OK);
    fabric_down(&f);
}

/* RDMA READ of several packets: READ_RESPONSE_FIRST/MIDDLE/LAST. */
static void test_rdma_read(void)
{
    enum { LEN = 4 * 1024 + 300 };
    const uint64_t iova = 0x100000000ull;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t lbuf, raddr;
    uint32_t lkey, rkey;
    unsigned nresp = 0;
    uint32_t msn = 0;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    lbuf = buf_alloc(&f.side[0], LEN);
    lkey = mr_phys(&f.side[0], lbuf, LEN, VHCA_ACCESS_LOCAL_WRITE);
    rkey = mr_paged(&f.side[1], iova, LEN, VHCA_ACCESS_REMOTE_READ, &raddr);
    buf_fill(&f.side[1], raddr, LEN, 3);

    vhca_wqe_init(&w, SEND_ID(3), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, lbuf, LEN, lkey);
    vhca_wqe_remote(&w, iova, rkey);
    sq_post(&f.side[0], &cn.qp[0], &w);

    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_READ, SEND_ID(3), cn.qp[0].qpn, NULL);
    buf_check(&f.side[0], lbuf, LEN, 3);
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    expect_cq_empty(&f, &f.side[1], &f.side[1].scq);

    /*
     * One READ_REQUEST; the responses carry its PSN onwards, one per
     * path MTU (IBTA 9.7: a read consumes a PSN per response packet).
     */
    g_assert_cmpuint(count_frames(&f, 0, VHCA_RC_READ_REQUEST), ==, 1);
    check_message_frames(&f, 1, cn.qp[0].qpn, VHCA_RC_READ_RESPONSE_FIRST,
                         VHCA_RC_READ_RESPONSE_MIDDLE,
                         VHCA_RC_READ_RESPONSE_LAST,
                         VHCA_RC_READ_RESPONSE_ONLY, initial_psn[0], LEN,
                         1024, 3);
    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0) {
            g_assert_cmpuint(p.opcode, ==, VHCA_RC_READ_REQUEST);
            g_assert_cmphex(p.psn, ==, initial_psn[0]);
            g_assert_cmphex(p.reth_va, ==, iova);
            g_assert_cmphex(p.reth_rkey, ==, rkey);
            g_assert_cmpuint(p.reth_len, ==, LEN);
            g_assert_cmpuint(p.payload_len, ==, 0);
        } else {
            nresp++;
            if (p.has_aeth) {
                msn = p.aeth_msn;
            }
        }
    }
    g_assert_cmpuint(nresp, ==, DIV_ROUND_UP(LEN, 1024));
    g_assert_cmpuint(msn, ==, 1);
    fabric_down(&f);
}

/* CMP_AND_SWP (hit and miss) and FETCH_AND_ADD (with carry). */
static void test_atomics(void)
{
    const uint64_t iova = 0x5550000ull;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t lbuf, raddr;
    uint32_t lkey, rkey;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    lbuf = buf_alloc(&f.side[0], 64);
    lkey = mr_phys(&f.side[0], lbuf, 64, VHCA_ACCESS_LOCAL_WRITE);
    rkey = mr_paged(&f.side[1], iova, 64,
                    VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_ATOMIC,
                    &raddr);
    qtest_writeq(f.side[1].d->qts, raddr + 8, 0x1111222233334444ull);
    qtest_writeq(f.side[1].d->qts, raddr + 16, 0x00000000fffffffeull);

    /* Compare matches: swapped; the original comes back. */
    vhca_wqe_init(&w, SEND_ID(10), VHCA_WR_ATOMIC_CMP_AND_SWP,
                  VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, lbuf, 8, lkey);
    vhca_wqe_remote(&w, iova + 8, rkey);
    w.compare_add = cpu_to_le64(0x1111222233334444ull);
    w.swap = cpu_to_le64(0xaaaabbbbccccddddull);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_COMP_SWAP, SEND_ID(10), cn.qp[0].qpn, NULL);
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, raddr + 8), ==,
                    0xaaaabbbbccccddddull);
    g_assert_cmphex(qtest_readq(f.side[0].d->qts, lbuf), ==,
                    0x1111222233334444ull);

    /* Compare differs: memory unchanged; the original comes back. */
    vhca_wqe_init(&w, SEND_ID(11), VHCA_WR_ATOMIC_CMP_AND_SWP,
                  VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, lbuf + 8, 8, lkey);
    vhca_wqe_remote(&w, iova + 8, rkey);
    w.compare_add = cpu_to_le64(0x1111222233334444ull);
    w.swap = cpu_to_le64(0x9999999999999999ull);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_COMP_SWAP, SEND_ID(11), cn.qp[0].qpn, NULL);
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, raddr + 8), ==,
                    0xaaaabbbbccccddddull);
    g_assert_cmphex(qtest_readq(f.side[0].d->qts, lbuf + 8), ==,
                    0xaaaabbbbccccddddull);

    /* Fetch and add, carrying into the high half. */
    vhca_wqe_init(&w, SEND_ID(12), VHCA_WR_ATOMIC_FETCH_AND_ADD,
                  VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, lbuf + 16, 8, lkey);
    vhca_wqe_remote(&w, iova + 16, rkey);
    w.compare_add = cpu_to_le64(3);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_FETCH_ADD, SEND_ID(12), cn.qp[0].qpn, NULL);
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, raddr + 16), ==,
                    0x0000000100000001ull);
    g_assert_cmphex(qtest_readq(f.side[0].d->qts, lbuf + 16), ==,
                    0x00000000fffffffeull);
    /* Neighbours untouched. */
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, raddr), ==, 0);
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, raddr + 24), ==, 0);
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);

    /* On the wire: AtomicETH out, ATOMIC_ACKNOWLEDGE with OrigRemData. */
    g_assert_cmpuint(count_frames(&f, 0, VHCA_RC_COMPARE_SWAP), ==, 2);
    g_assert_cmpuint(count_frames(&f, 0, VHCA_RC_FETCH_ADD), ==, 1);
    g_assert_cmpuint(count_frames(&f, 1, VHCA_RC_ATOMIC_ACKNOWLEDGE), ==, 3);
    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0 && p.opcode == VHCA_RC_FETCH_ADD) {
            g_assert_cmphex(p.atomic_va, ==, iova + 16);
            g_assert_cmphex(p.atomic_rkey, ==, rkey);
            g_assert_cmphex(p.atomic_swap_add, ==, 3);
            g_assert_cmphex(p.psn, ==, psn_add(initial_psn[0], 2));
        } else if (fr->from == 1 && p.psn == psn_add(initial_psn[0], 2)) {
            g_assert_cmpuint(p.opcode, ==, VHCA_RC_ATOMIC_ACKNOWLEDGE);
            g_assert_cmphex(p.atomic_orig, ==, 0x00000000fffffffeull);
        }
    }
    fabric_down(&f);
}

/*
 * IBTA 1.5 memory placement extensions through the whole device: an
 * RDMA WRITE, a FLUSH of its range (global visibility, FETH then RETH, no
 * payload) and an ATOMIC WRITE (RETH and 8 bytes), each answered by an
 * RDMA READ Response Only without data, as Linux rxe lays them out.
 */
static void test_placement_ops(void)
{
    enum { LEN = 300 };
    static const uint8_t value[8] = { 'c', 1, 2, 3, 4, 5, 6, 'c' };
    const uint64_t iova = 0x6660000ull;
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, raddr;
    uint32_t skey, rkey;
    unsigned flushes = 0, writes = 0, responses = 0;
    uint8_t got[8];

    conf.access |= VHCA_ACCESS_FLUSH_GLOBAL;
    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], sbuf, LEN, 4);
    skey = mr_phys(&f.side[0], sbuf, LEN, 0);
    rkey = mr_paged(&f.side[1], iova, 1024,
                    VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE |
                    VHCA_ACCESS_FLUSH_GLOBAL, &raddr);

    vhca_wqe_init(&w, SEND_ID(20), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, iova, rkey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    vhca_wqe_init(&w, SEND_ID(21), VHCA_WR_FLUSH, VHCA_WQE_SIGNALED);
    vhca_wqe_remote(&w, iova, rkey);
    w.flush_len = cpu_to_le32(LEN);
    w.flush_type = VHCA_FLUSH_GLOBAL;
    w.flush_level = VHCA_FLUSH_RANGE;
    sq_post(&f.side[0], &cn.qp[0], &w);
    vhca_wqe_init(&w, SEND_ID(22), VHCA_WR_ATOMIC_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_remote(&w, iova + 512, rkey);
    memcpy(&w.compare_add, value, 8);
    sq_post(&f.side[0], &cn.qp[0], &w);

    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(20), cn.qp[0].qpn, NULL);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_FLUSH, SEND_ID(21), cn.qp[0].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_ATOMIC_WRITE, SEND_ID(22), cn.qp[0].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, 8);
    buf_check(&f.side[1], raddr, LEN, 4);
    qtest_memread(f.side[1].d->qts, raddr + 512, got, 8);
    g_assert_cmpmem(got, 8, value, 8);
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, raddr + 520), ==, 0);
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);

    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0 && p.opcode == VHCA_RC_FLUSH) {
            flushes++;
            g_assert_true(p.has_feth && p.has_reth);
            /* Selectivity level 0 (range) in bits 5:4, type in 3:0. */
            g_assert_cmphex(p.feth, ==, VHCA_FLUSH_GLOBAL);
            g_assert_cmphex(p.reth_va, ==, iova);
            g_assert_cmphex(p.reth_rkey, ==, rkey);
            g_assert_cmpuint(p.reth_len, ==, LEN);
            g_assert_cmpuint(p.payload_len, ==, 0);
            g_assert_true(p.ack_req);
        } else if (fr->from == 0 && p.opcode == VHCA_RC_ATOMIC_WRITE) {
            writes++;
            g_assert_cmphex(p.reth_va, ==, iova + 512);
            g_assert_cmpuint(p.reth_len, ==, 8);
            g_assert_cmpuint(p.payload_len, ==, 8);
            g_assert_cmpmem(p.payload, 8, value, 8);
        } else if (fr->from == 1 && p.opcode == VHCA_RC_READ_RESPONSE_ONLY) {
            responses++;
            g_assert_cmpuint(p.payload_len, ==, 0);
            g_assert_cmphex(VHCA_AETH_KIND(p.aeth_syndrome), ==,
                            VHCA_AETH_ACK);
        }
    }
    g_assert_cmpuint(flushes, ==, 1);
    g_assert_cmpuint(writes, ==, 1);
    g_assert_cmpuint(responses, ==, 2);
    fabric_down(&f);
}

/*
 * Multi-packet SEND, WRITE and READ at each path MTU (IBTA 9.7
 * segmentation): FIRST/MIDDLE/LAST opcodes, PSNs across the 2^24 wrap,
 * full-MTU packets, correct data.  PMTU 4096 needs Ethernet MTU 9000.
 */
static void test_multi_packet(const void *data)
{
    uint8_t mtu = GPOINTER_TO_INT(data);
    uint32_t pmtu = 128u << mtu;
    uint32_t len = 3 * pmtu + 100;
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf, wbuf, lbuf;
    uint32_t skey, rkey, wkey, lkey;
    uint32_t npkts = DIV_ROUND_UP(len, pmtu);

    conf.path_mtu = mtu;
    fabric_up(&f, mtu == VHCA_IB_MTU_4096 ? 9000 : 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], len);
    buf_fill(&f.side[0], sbuf, len, 4);
    skey = mr_phys(&f.side[0], sbuf, len, 0);
    lbuf = buf_alloc(&f.side[0], len);
    lkey = mr_phys(&f.side[0], lbuf, len, VHCA_ACCESS_LOCAL_WRITE);
    rbuf = buf_alloc(&f.side[1], len);
    rkey = mr_phys(&f.side[1], rbuf, len, VHCA_ACCESS_LOCAL_WRITE);
    wbuf = buf_alloc(&f.side[1], len);
    wkey = mr_phys(&f.side[1], wbuf, len, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ);

    /* SEND */
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, len, rkey);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, len, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(1), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, len);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    buf_check(&f.side[1], rbuf, len, 4);
    check_message_frames(&f, 0, cn.qp[1].qpn, VHCA_RC_SEND_FIRST,
                         VHCA_RC_SEND_MIDDLE, VHCA_RC_SEND_LAST,
                         VHCA_RC_SEND_ONLY, initial_psn[0], len, pmtu, 4);
    settle(&f);
    frames_reset(&f);

    /* RDMA WRITE of the same data, PSNs continuing */
    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, len, skey);
    vhca_wqe_remote(&w, wbuf, wkey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(2), cn.qp[0].qpn, NULL);
    buf_check(&f.side[1], wbuf, len, 4);
    check_message_frames(&f, 0, cn.qp[1].qpn, VHCA_RC_WRITE_FIRST,
                         VHCA_RC_WRITE_MIDDLE, VHCA_RC_WRITE_LAST,
                         VHCA_RC_WRITE_ONLY, psn_add(initial_psn[0], npkts),
                         len, pmtu, 4);
    settle(&f);
    frames_reset(&f);

    /* RDMA READ it back */
    vhca_wqe_init(&w, SEND_ID(3), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, lbuf, len, lkey);
    vhca_wqe_remote(&w, wbuf, wkey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_READ, SEND_ID(3), cn.qp[0].qpn, NULL);
    buf_check(&f.side[0], lbuf, len, 4);
    check_message_frames(&f, 1, cn.qp[0].qpn, VHCA_RC_READ_RESPONSE_FIRST,
                         VHCA_RC_READ_RESPONSE_MIDDLE,
                         VHCA_RC_READ_RESPONSE_LAST,
                         VHCA_RC_READ_RESPONSE_ONLY,
                         psn_add(initial_psn[0], 2 * npkts), len, pmtu, 4);
    fabric_down(&f);
}

/* A 1 MiB SEND and a 1 MiB RDMA WRITE (256 packets each at 4096). */
static void test_one_mib(void)
{
    enum { LEN = 1 << 20 };
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf, wbuf;
    uint32_t skey, rkey, wkey;

    conf.path_mtu = VHCA_IB_MTU_4096;
    fabric_up(&f, 9000);
    f.link.capture = false;
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], sbuf, LEN, 5);
    skey = mr_phys(&f.side[0], sbuf, LEN, 0);
    rbuf = buf_alloc(&f.side[1], LEN);
    rkey = mr_phys(&f.side[1], rbuf, LEN, VHCA_ACCESS_LOCAL_WRITE);
    wbuf = buf_alloc(&f.side[1], LEN);
    wkey = mr_phys(&f.side[1], wbuf, LEN, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_WRITE);

    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, LEN, rkey);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    sq_write(&f.side[0], &cn.qp[0], &w);
    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, wbuf, wkey);
    sq_write(&f.side[0], &cn.qp[0], &w);
    sq_ring(&f.side[0], &cn.qp[0]);

    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(1), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(2), cn.qp[0].qpn, NULL);
    buf_check(&f.side[1], rbuf, LEN, 5);
    buf_check(&f.side[1], wbuf, LEN, 5);
    /* 256 packets each way, nothing lost: no retransmission needed. */
    g_assert_cmpuint(f.link.seen[0], >=, 2 * LEN / 4096);
    fabric_down(&f);
}

/* Several SGEs gathered on send and scattered on receive. */
static void test_sge_lists(void)
{
    enum { N = 5, PIECE = 300 };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_recv_wqe rw;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf[3];
    uint32_t skey, rkey[3];
    const uint32_t rlen[3] = { 100, 700, 1000 };
    uint32_t off = 0;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    /* One pattern cut into N pieces, 64 bytes apart in memory. */
    sbuf = buf_alloc(&f.side[0], N * (PIECE + 64));
    skey = mr_phys(&f.side[0], sbuf, N * (PIECE + 64), 0);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    for (int i = 0; i < N; i++) {
        g_autofree uint8_t *b = g_malloc(PIECE);

        for (int j = 0; j < PIECE; j++) {
            b[j] = pattern_byte(i * PIECE + j, 6);
        }
        qtest_bufwrite(f.side[0].d->qts, sbuf + i * (PIECE + 64), b, PIECE);
        vhca_wqe_sge(&w, sbuf + i * (PIECE + 64), PIECE, skey);
    }
    memset(&rw, 0, sizeof(rw));
    rw.wr_id = cpu_to_le64(RECV_ID(1));
    rw.num_sge = 3;
    for (int i = 0; i < 3; i++) {
        rbuf[i] = buf_alloc(&f.side[1], rlen[i]);
        rkey[i] = mr_phys(&f.side[1], rbuf[i], rlen[i],
                          VHCA_ACCESS_LOCAL_WRITE);
        rw.sge[i].addr = cpu_to_le64(rbuf[i]);
        rw.sge[i].length = cpu_to_le32(rlen[i]);
        rw.sge[i].lkey = cpu_to_le32(rkey[i]);
    }
    qtest_memwrite(f.side[1].d->qts, cn.qp[1].rq.addr, &rw, sizeof(rw));
    cn.qp[1].rq_pi++;
    vhca_qp_ring_rq(f.side[1].d, &cn.qp[1], f.side[1].page);
    sq_post(&f.side[0], &cn.qp[0], &w);

    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(1), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, N * PIECE);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    for (int i = 0; i < 3; i++) {
        g_autofree uint8_t *b = g_malloc(rlen[i]);
        uint32_t n = MIN(rlen[i], N * PIECE - off);

        qtest_bufread(f.side[1].d->qts, rbuf[i], b, rlen[i]);
        for (uint32_t j = 0; j < n; j++) {
            g_assert_cmphex(b[j], ==, pattern_byte(off + j, 6));
        }
        for (uint32_t j = n; j < rlen[i]; j++) {
            g_assert_cmphex(b[j], ==, 0);
        }
        off += n;
    }
    fabric_down(&f);
}

/* Inline data: the payload comes from the WQE itself. */
static void test_inline_send(void)
{
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t rbuf, wbuf;
    uint32_t rkey, wkey;
    const uint32_t lens[2] = { 37, VHCA_MAX_INLINE };

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    rbuf = buf_alloc(&f.side[1], 2 * 256);
    rkey = mr_phys(&f.side[1], rbuf, 2 * 256, VHCA_ACCESS_LOCAL_WRITE);
    wbuf = buf_alloc(&f.side[1], 256);
    wkey = mr_phys(&f.side[1], wbuf, 256,
                   VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE);

    for (int i = 0; i < 2; i++) {
        rq_post(&f.side[1], &cn.qp[1], RECV_ID(i), rbuf + 256 * i, 256, rkey);
        vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_SEND,
                      VHCA_WQE_SIGNALED | VHCA_WQE_INLINE);
        w.inline_len = cpu_to_le32(lens[i]);
        for (uint32_t j = 0; j < lens[i]; j++) {
            w.inline_data[j] = pattern_byte(j, 7 + i);
        }
        sq_post(&f.side[0], &cn.qp[0], &w);
        expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS,
                   VHCA_WC_RECV, RECV_ID(i), cn.qp[1].qpn, &c);
        g_assert_cmpuint(c.byte_len, ==, lens[i]);
        expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
                   VHCA_WC_SEND, SEND_ID(i), cn.qp[0].qpn, NULL);
        buf_check(&f.side[1], rbuf + 256 * i, lens[i], 7 + i);
        buf_check_zero(&f.side[1], rbuf + 256 * i + lens[i], 256 - lens[i]);
    }

    /* Inline RDMA WRITE too. */
    vhca_wqe_init(&w, SEND_ID(9), VHCA_WR_RDMA_WRITE,
                  VHCA_WQE_SIGNALED | VHCA_WQE_INLINE);
    w.inline_len = cpu_to_le32(100);
    for (uint32_t j = 0; j < 100; j++) {
        w.inline_data[j] = pattern_byte(j, 9);
    }
    vhca_wqe_remote(&w, wbuf + 8, wkey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(9), cn.qp[0].qpn, NULL);
    buf_check_zero(&f.side[1], wbuf, 8);
    buf_check(&f.side[1], wbuf + 8, 100, 9);
    buf_check_zero(&f.side[1], wbuf + 108, 256 - 108);
    fabric_down(&f);
}

/*
 * Unsignalled WQEs complete silently (IBTA 10.8: a CQE only when
 * signalled, or sq_sig_all); the signalled ones complete in order.
 */
static void test_unsignalled(void)
{
    enum { N = 6 };
    static const bool signalled[N] = { false, false, true, false, false,
                                       true };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], N * 64);
    skey = mr_phys(&f.side[0], sbuf, N * 64, 0);
    rbuf = buf_alloc(&f.side[1], N * 64);
    rkey = mr_phys(&f.side[1], rbuf, N * 64, VHCA_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < N; i++) {
        buf_fill(&f.side[0], sbuf + 64 * i, 64, 20 + i);
        rq_post(&f.side[1], &cn.qp[1], RECV_ID(i), rbuf + 64 * i, 64, rkey);
        vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_SEND,
                      signalled[i] ? VHCA_WQE_SIGNALED : 0);
        vhca_wqe_sge(&w, sbuf + 64 * i, 64, skey);
        sq_write(&f.side[0], &cn.qp[0], &w);
    }
    sq_ring(&f.side[0], &cn.qp[0]);
    for (int i = 0; i < N; i++) {
        expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS,
                   VHCA_WC_RECV, RECV_ID(i), cn.qp[1].qpn, &c);
        g_assert_cmpuint(c.byte_len, ==, 64);
        buf_check(&f.side[1], rbuf + 64 * i, 64, 20 + i);
    }
    for (int i = 0; i < N; i++) {
        if (signalled[i]) {
            expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
                       VHCA_WC_SEND, SEND_ID(i), cn.qp[0].qpn, NULL);
        }
    }
    expect_cq_empty(&f, &f.side[0], &f.side[0].scq);
    fabric_down(&f);
}

/* ======================================================================= */
/* Errors                                                                  */
/* ======================================================================= */

/*
 * After an error completion the QP is in ERR, what was posted behind the
 * failed WQE and what is posted later flushes (IBTA 10.8.3.3, 11.4.3).
 */
static void expect_qp_error_flushes_at(Fabric *f, Side *s, VhcaQp *qp,
                                       uint64_t behind_id,
                                       const char *where)
{
    struct vhca_send_wqe w;
    struct vhca_cqe c;

    VHCA_CHECK_EQ(where, "QP state after the error", qp_state(s, qp),
                  VHCA_QPS_ERR);
    if (behind_id) {
        cqe_wait_at(f, s, &s->scq, &c, STEP_NS, where);
        cqe_check_at(&c, VHCA_WC_WR_FLUSH_ERR, 0, behind_id, qp->qpn, where);
    }
    vhca_wqe_init(&w, SEND_ID(0xf1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    sq_post(s, qp, &w);
    cqe_wait_at(f, s, &s->scq, &c, STEP_NS, where);
    cqe_check_at(&c, VHCA_WC_WR_FLUSH_ERR, 0, SEND_ID(0xf1), qp->qpn, where);
    VHCA_CHECK_EQ(where, "flush CQE opcode", c.opcode, VHCA_WC_SEND);
}
#define expect_qp_error_flushes(f, s, qp, id) \
    expect_qp_error_flushes_at(f, s, qp, id, G_STRLOC)

/* Post @bad then a good SEND behind it; @bad fails with @status. */
static void post_failing_at(Fabric *f, Conn *cn, struct vhca_send_wqe *bad,
                            const uint8_t *statuses, unsigned nstatuses,
                            const char *where)
{
    Side *s = cn->s[0];
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    bool ok = false;

    sq_write(s, &cn->qp[0], bad);
    vhca_wqe_init(&w, SEND_ID(0xbe), VHCA_WR_SEND, 0);
    sq_write(s, &cn->qp[0], &w);
    sq_ring(s, &cn->qp[0]);

    cqe_wait_at(f, s, &s->scq, &c, STEP_NS, where);
    for (unsigned i = 0; i < nstatuses; i++) {
        ok |= c.status == statuses[i];
    }
    if (!ok) {
        g_error("%s: CQE status %u (vendor_err %u), expected %u%s", where,
                c.status, c.vendor_err, statuses[0],
                nstatuses > 1 ? " or another listed one" : "");
    }
    VHCA_CHECK_EQ(where, "error CQE wr_id", c.wr_id, le64_to_cpu(bad->wr_id));
    VHCA_CHECK_EQ(where, "error CQE qpn", c.qpn, cn->qp[0].qpn);
    /* The unsignalled WQE behind it flushes: errors always complete. */
    expect_qp_error_flushes_at(f, s, &cn->qp[0], SEND_ID(0xbe), where);
}

/* A local key that names no MR, or one of another PD: LOC_PROT_ERR. */
static void test_bad_lkey(void)
{
    static const uint8_t want[] = { VHCA_WC_LOC_PROT_ERR };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], 256);
    skey = mr_phys(&f.side[0], sbuf, 256, 0);
    rbuf = buf_alloc(&f.side[1], 256);
    rkey = mr_phys(&f.side[1], rbuf, 256, VHCA_ACCESS_LOCAL_WRITE);
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, 256, rkey);

    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    /* Right index, wrong tag: a stale key (IBTA 10.6.3). */
    vhca_wqe_sge(&w, sbuf, 256, skey ^ 0x5a);
    post_failing_at(&f, &cn, &w, want, 1, G_STRLOC);
    /* The receiver saw nothing. */
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    buf_check_zero(&f.side[1], rbuf, 256);
    fabric_down(&f);
}

/* RDMA READ into a local MR without LOCAL_WRITE: LOC_PROT_ERR too. */
static void test_read_into_readonly(void)
{
    static const uint8_t want[] = { VHCA_WC_LOC_PROT_ERR };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t lbuf, rbuf;
    uint32_t lkey, rkey;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    lbuf = buf_alloc(&f.side[0], 256);
    lkey = mr_phys(&f.side[0], lbuf, 256, 0);
    rbuf = buf_alloc(&f.side[1], 256);
    buf_fill(&f.side[1], rbuf, 256, 8);
    rkey = mr_phys(&f.side[1], rbuf, 256, VHCA_ACCESS_REMOTE_READ);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, lbuf, 256, lkey);
    vhca_wqe_remote(&w, rbuf, rkey);
    post_failing_at(&f, &cn, &w, want, 1, G_STRLOC);
    buf_check_zero(&f.side[0], lbuf, 256);
    fabric_down(&f);
}

typedef enum RemoteFault {
    RF_BAD_RKEY,            /* key names no MR */
    RF_OUT_OF_BOUNDS,       /* runs past the MR's end */
    RF_NO_MR_RIGHT,         /* MR lacks REMOTE_WRITE */
    RF_NO_QP_RIGHT,         /* responder QP lacks REMOTE_WRITE */
    RF_READ_NO_RIGHT,       /* READ of an MR without REMOTE_READ */
    RF_ATOMIC_NO_RIGHT,     /* atomic on an MR without REMOTE_ATOMIC */
    RF_MAX
} RemoteFault;

static const char *const remote_fault_name[RF_MAX] = {
    [RF_BAD_RKEY] = "bad-rkey",
    [RF_OUT_OF_BOUNDS] = "out-of-bounds",
    [RF_NO_MR_RIGHT] = "mr-no-remote-write",
    [RF_NO_QP_RIGHT] = "qp-no-remote-write",
    [RF_READ_NO_RIGHT] = "mr-no-remote-read",
    [RF_ATOMIC_NO_RIGHT] = "mr-no-remote-atomic",
};

/*
 * The responder refuses (IBTA 9.7.5.2 NAK Remote Access Error, class C
 * of 9.9.3): the requester completes REM_ACCESS_ERR and goes to ERR;
 * remote memory is unchanged.
 */
static void test_remote_access(const void *data)
{
    RemoteFault k = GPOINTER_TO_INT(data);
    /*
     * An operation the responder QP is not enabled for is an Invalid
     * Request, not an access violation of a memory region: NAK Invalid
     * Request, REM_INV_REQ_ERR (IBTA 9.7.5.2; rxe and ConnectX agree).
     */
    const uint8_t want[] = {
        k == RF_NO_QP_RIGHT ? VHCA_WC_REM_INV_REQ_ERR
                            : VHCA_WC_REM_ACCESS_ERR,
    };
    const uint8_t want_nak = k == RF_NO_QP_RIGHT
        ? VHCA_AETH_NAK_INVALID_REQ : VHCA_AETH_NAK_REMOTE_ACCESS;
    enum { LEN = 256 };
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t lbuf, rbuf;
    uint32_t lkey, rkey;
    uint32_t mr_access = VHCA_ACCESS_LOCAL_WRITE | ALL_REMOTE;
    bool saw_nak = false;

    if (k == RF_NO_MR_RIGHT) {
        mr_access = VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_READ;
    } else if (k == RF_READ_NO_RIGHT || k == RF_ATOMIC_NO_RIGHT) {
        mr_access = VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE;
    }
    if (k == RF_NO_QP_RIGHT) {
        conf.access = VHCA_ACCESS_REMOTE_READ;
    }
    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    lbuf = buf_alloc(&f.side[0], LEN);
    buf_fill(&f.side[0], lbuf, LEN, 9);
    lkey = mr_phys(&f.side[0], lbuf, LEN, VHCA_ACCESS_LOCAL_WRITE);
    rbuf = buf_alloc(&f.side[1], 2 * LEN);
    rkey = mr_phys(&f.side[1], rbuf, LEN, mr_access);

    switch (k) {
    case RF_READ_NO_RIGHT:
        vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
        break;
    case RF_ATOMIC_NO_RIGHT:
        vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_ATOMIC_FETCH_AND_ADD,
                      VHCA_WQE_SIGNALED);
        w.compare_add = cpu_to_le64(1);
        break;
    default:
        vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
        break;
    }
    vhca_wqe_sge(&w, lbuf, k == RF_ATOMIC_NO_RIGHT ? 8 : LEN, lkey);
    vhca_wqe_remote(&w, k == RF_OUT_OF_BOUNDS ? rbuf + 8 : rbuf,
                    k == RF_BAD_RKEY ? (rkey + 0x100) : rkey);
    post_failing_at(&f, &cn, &w, want, 1, G_STRLOC);
    buf_check_zero(&f.side[1], rbuf, 2 * LEN);
    if (k == RF_READ_NO_RIGHT) {
        /* Nothing came back into the local buffer either. */
        buf_check(&f.side[0], lbuf, LEN, 9);
    }

    /* The responder said so with a NAK (IBTA 9.7.5.2), at the request's PSN. */
    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 1 && p.has_aeth && p.aeth_syndrome == want_nak) {
            g_assert_cmphex(p.psn, ==, initial_psn[0]);
            saw_nak = true;
        }
    }
    g_assert_true(saw_nak);
    /* Class C: the responder QP goes to ERR as well (IBTA 9.9.3). */
    g_assert_cmpuint(qp_state(&f.side[1], &cn.qp[1]), ==, VHCA_QPS_ERR);
    fabric_down(&f);
}

typedef enum Malformed {
    MF_TOO_MANY_SGES,
    MF_BAD_OPCODE,
    MF_INLINE_TOO_LONG,
    MF_MAX
} Malformed;

static const char *const malformed_name[MF_MAX] = {
    [MF_TOO_MANY_SGES] = "too-many-sges",
    [MF_BAD_OPCODE] = "bad-opcode",
    [MF_INLINE_TOO_LONG] = "inline-too-long",
};

/*
 * A WQE the device cannot execute (spec: "a WQE with a bad opcode or too
 * many SGEs completes in error"): LOC_LEN_ERR or LOC_QP_OP_ERR
 * (IBTA 11.4.2.1: local QP operation error).
 */
static void test_malformed_wqe(const void *data)
{
    static const uint8_t want[] = {
        VHCA_WC_LOC_QP_OP_ERR, VHCA_WC_LOC_LEN_ERR,
    };
    Malformed k = GPOINTER_TO_INT(data);
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t sbuf;
    uint32_t skey;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], 64);
    skey = mr_phys(&f.side[0], sbuf, 64, 0);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    switch (k) {
    case MF_TOO_MANY_SGES:
        for (int i = 0; i < VHCA_MAX_SEND_SGE; i++) {
            vhca_wqe_sge(&w, sbuf, 4, skey);
        }
        w.num_sge = VHCA_MAX_SEND_SGE + 1;
        break;
    case MF_BAD_OPCODE:
        w.opcode = 10;          /* ibv_wr_opcode 10 is TSO: not ours */
        vhca_wqe_sge(&w, sbuf, 4, skey);
        break;
    case MF_INLINE_TOO_LONG:
        w.flags |= VHCA_WQE_INLINE;
        w.inline_len = cpu_to_le32(VHCA_MAX_INLINE + 1);
        break;
    default:
        g_assert_not_reached();
    }
    post_failing_at(&f, &cn, &w, want, ARRAY_SIZE(want), G_STRLOC);
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    fabric_down(&f);
}

/*
 * A SEND longer than the receive WQE's buffers: the responder completes
 * that receive with LOC_LEN_ERR and NAKs Invalid Request (IBTA 9.7.5.2,
 * class C of 9.9.3), the requester completes REM_INV_REQ_ERR.
 */
static void test_recv_too_small(void)
{
    static const uint8_t want[] = { VHCA_WC_REM_INV_REQ_ERR };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], 2000);
    buf_fill(&f.side[0], sbuf, 2000, 14);
    skey = mr_phys(&f.side[0], sbuf, 2000, 0);
    rbuf = buf_alloc(&f.side[1], 2048);
    rkey = mr_phys(&f.side[1], rbuf, 2048, VHCA_ACCESS_LOCAL_WRITE);
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, 1000, rkey);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 2000, skey);
    post_failing_at(&f, &cn, &w, want, 1, G_STRLOC);
    cqe_wait_at(&f, &f.side[1], &f.side[1].rcq, &c, STEP_NS, G_STRLOC);
    cqe_check_at(&c, VHCA_WC_LOC_LEN_ERR, 0, RECV_ID(1), cn.qp[1].qpn,
                 G_STRLOC);
    /* Not a byte past the buffer. */
    buf_check_zero(&f.side[1], rbuf + 1000, 1048);
    /* Class C: the responder QP goes to ERR (IBTA 9.9.3). */
    g_assert_cmpuint(qp_state(&f.side[1], &cn.qp[1]), ==, VHCA_QPS_ERR);
    fabric_down(&f);
}

/* ---- RNR ---------------------------------------------------------------- */

/* RNR NAK timer code used by the responder: 0.32 ms (IBTA Table 45). */
#define RNR_TIMER_CODE  10
#define RNR_TIMER_NS    320000

/*
 * No receive WQE at the responder: RNR NAK (IBTA 9.7.5.2); the requester
 * waits at least the NAK's timer and retries rnr_retry times, then
 * completes RNR_RETRY_EXC_ERR (IBTA 11.4.2.1) and goes to ERR.
 */
static void test_rnr_exceeded(const void *data)
{
    uint8_t rnr_retry = GPOINTER_TO_INT(data);
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf;
    uint32_t skey;
    unsigned sends = 0, naks = 0;
    int64_t last_nak_ns = -1;

    conf.rnr_retry = rnr_retry;
    conf.min_rnr_timer = RNR_TIMER_CODE;
    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], 64);
    skey = mr_phys(&f.side[0], sbuf, 64, 0);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 64, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);

    cqe_wait_at(&f, &f.side[0], &f.side[0].scq, &c, STEP_NS, G_STRLOC);
    cqe_check_at(&c, VHCA_WC_RNR_RETRY_EXC_ERR, 0, SEND_ID(1),
                 cn.qp[0].qpn, G_STRLOC);
    expect_qp_error_flushes(&f, &f.side[0], &cn.qp[0], 0);
    /* RNR is not an error for the responder (9.9.3: class B). */
    g_assert_cmpuint(qp_state(&f.side[1], &cn.qp[1]), ==, VHCA_QPS_RTS);

    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0 && p.opcode == VHCA_RC_SEND_ONLY) {
            g_assert_cmphex(p.psn, ==, initial_psn[0]);
            if (last_nak_ns >= 0) {
                /*
                 * Not before the RNR NAK timer ran out.  The NAK's stamp
                 * is when the link delivered it, no later than the
                 * requester got it: the bound is exact.
                 */
                g_assert_cmpint(fr->clock_ns - last_nak_ns, >=,
                                RNR_TIMER_NS);
            }
            sends++;
        } else if (fr->from == 1) {
            g_assert_cmpuint(p.opcode, ==, VHCA_RC_ACKNOWLEDGE);
            g_assert_cmphex(p.aeth_syndrome, ==,
                            VHCA_AETH_RNR_NAK | RNR_TIMER_CODE);
            g_assert_cmphex(p.psn, ==, initial_psn[0]);
            last_nak_ns = fr->clock_ns;
            naks++;
        }
    }
    /* The first try plus rnr_retry retries, each refused. */
    g_assert_cmpuint(sends, ==, rnr_retry + 1u);
    g_assert_cmpuint(naks, ==, rnr_retry + 1u);
    fabric_down(&f);
}

/* rnr_retry 7 retries for ever: a receive posted late still succeeds. */
static void test_rnr_recovers(void)
{
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;

    conf.rnr_retry = 7;
    conf.min_rnr_timer = RNR_TIMER_CODE;
    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], 3000);
    buf_fill(&f.side[0], sbuf, 3000, 11);
    skey = mr_phys(&f.side[0], sbuf, 3000, 0);
    rbuf = buf_alloc(&f.side[1], 3000);
    rkey = mr_phys(&f.side[1], rbuf, 3000, VHCA_ACCESS_LOCAL_WRITE);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 3000, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);

    /* More RNR NAKs than any finite rnr_retry (6) would allow. */
    VHCA_LINK_WAIT_UNTIL(&f.link,
                         count_frames(&f, 1, VHCA_RC_ACKNOWLEDGE) >= 8,
                         STEP_NS, "eight RNR NAKs");
    g_assert_false(vhca_cq_peek(f.side[0].d, &f.side[0].scq, NULL));
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, 3000, rkey);
    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(1), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, 3000);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    buf_check(&f.side[1], rbuf, 3000, 11);
    g_assert_cmpuint(qp_state(&f.side[0], &cn.qp[0]), ==, VHCA_QPS_RTS);
    fabric_down(&f);
}

/* ---- retransmission timeout ------------------------------------------- */

static VhcaLinkVerdict drop_all(VhcaLink *link, const VhcaLinkFrame *f,
                                void *opaque)
{
    return VHCA_LINK_DROP;
}

/* 4.096 us * 2^timeout (IBTA 9.7.6.1). */
static int64_t local_ack_timeout_ns(uint8_t timeout)
{
    return 4096ll << timeout;
}

/*
 * The peer is gone (the link drops everything): the requester sends the
 * request 1 + retry_cnt times, each after the Local ACK Timeout (between
 * T and 4T, IBTA 9.7.6.1), then completes RETRY_EXC_ERR and goes to ERR.
 */
static void test_retry_exceeded(const void *data)
{
    uint8_t retry_cnt = GPOINTER_TO_INT(data);
    QpConf conf = conf_default;
    const int64_t t_ns = local_ack_timeout_ns(10);     /* 4.19 ms */
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf;
    uint32_t skey;
    int64_t t0, t_err, prev = -1;
    unsigned sends = 0;

    conf.timeout = 10;
    conf.retry_cnt = retry_cnt;
    fabric_up(&f, 0);
    f.link.filter = drop_all;
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], 64);
    skey = mr_phys(&f.side[0], sbuf, 64, 0);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 64, skey);
    vhca_link_sync_clock(&f.link);
    t0 = f.link.clock_ns;
    sq_post(&f.side[0], &cn.qp[0], &w);

    /* Steps of 50 us: fine against T, quick in wall time. */
    cqe_wait_at(&f, &f.side[0], &f.side[0].scq, &c, 50000, G_STRLOC);
    t_err = f.link.clock_ns;
    cqe_check_at(&c, VHCA_WC_RETRY_EXC_ERR, 0, SEND_ID(1), cn.qp[0].qpn,
                 G_STRLOC);
    g_test_message("RETRY_EXC_ERR after %" PRId64 " us (T = %" PRId64
                   " us, retry_cnt %u)", (t_err - t0) / 1000, t_ns / 1000,
                   retry_cnt);
    g_assert_cmpint(t_err - t0, >=, (retry_cnt + 1) * t_ns);
    g_assert_cmpint(t_err - t0, <=, (retry_cnt + 1) * 4 * t_ns + 1000000);

    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        g_assert_cmpuint(fr->from, ==, 0);
        g_assert_cmpuint(p.opcode, ==, VHCA_RC_SEND_ONLY);
        g_assert_cmphex(p.psn, ==, initial_psn[0]);
        if (prev >= 0) {
            /*
             * A frame is stamped when the link reads it, a step or two
             * after the timer sent it: allow three steps of slack.  Each
             * timeout after a timeout doubled the timer, up to 4T
             * (docs/specs/vhca.rst, "Loss back-off").
             */
            int64_t want = t_ns << (sends - 1 < 2 ? sends - 1 : 2);

            g_assert_cmpint(fr->clock_ns - prev, >=, want - 3 * 50000);
            g_assert_cmpint(fr->clock_ns - prev, <=, want + 3 * 50000);
        }
        prev = fr->clock_ns;
        sends++;
    }
    g_assert_cmpuint(sends, ==, retry_cnt + 1u);
    expect_qp_error_flushes(&f, &f.side[0], &cn.qp[0], 0);
    fabric_down(&f);
}

/* ---- loss, duplication, reordering ------------------------------------- */

/*
 * Which packets suffer: a hash of (direction, opcode, PSN) picks one in
 * N of them, and only their first transmission, so that the choice does
 * not depend on how the device's frames interleave in real time, and a
 * retransmission always gets through.  (Dropping every Nth frame of the
 * stream instead can fall in step with go-back-N rounds and drop the same
 * packet every round; exhausting retry_cnt is then what IBTA requires.)
 */
typedef struct Faults {
    const char *name;
    unsigned drop_every;        /* 0: never */
    unsigned dup_every;
    unsigned hold_every;
} Faults;

static const Faults fault_sets[] = {
    { "drop-1-in-7", 7, 0, 0 },
    { "drop-1-in-3", 3, 0, 0 },
    { "duplicate-1-in-4", 0, 4, 0 },
    { "reorder-1-in-5", 0, 0, 5 },
    { "mixed", 11, 6, 5 },
};

typedef struct FaultState {
    const Faults *fs;
    GHashTable *seen;           /* packet keys transmitted before */
} FaultState;

/* splitmix64's finaliser: spreads a packet key over 64 bits. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static bool picked(uint64_t key, unsigned salt, unsigned every)
{
    return every && mix64(key ^ ((uint64_t)salt << 56)) % every == 0;
}

static VhcaLinkVerdict inject_faults(VhcaLink *link, const VhcaLinkFrame *f,
                                     void *opaque)
{
    FaultState *st = opaque;
    VhcaRocePkt p;
    uint64_t key;

    if (vhca_roce_parse(f->data, f->len, &p)) {
        return VHCA_LINK_PASS;  /* check_captured_frames reports it */
    }
    key = (uint64_t)f->from << 40 | (uint64_t)p.opcode << 24 | p.psn;
    if (!g_hash_table_add(st->seen, g_memdup2(&key, sizeof(key)))) {
        return VHCA_LINK_PASS;  /* a retransmission */
    }
    if (picked(key, 1, st->fs->drop_every)) {
        return VHCA_LINK_DROP;
    }
    if (picked(key, 2, st->fs->dup_every)) {
        return VHCA_LINK_DUPLICATE;
    }
    if (picked(key, 3, st->fs->hold_every)) {
        return VHCA_LINK_HOLD;
    }
    return VHCA_LINK_PASS;
}

/*
 * Many messages of every kind through a faulty link: all complete
 * successfully, in order, exactly once, with the right data (IBTA 9.7:
 * PSN checking, duplicate detection, NAK sequence error, retransmission).
 */
static void test_faults(const void *data)
{
    enum { N = 36, LEN = 2500 };
    FaultState st = {
        .fs = data,
        .seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                      NULL),
    };
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, lbuf, rbuf, wbuf, abuf, aret;
    uint32_t skey, lkey, rkey, wkey, akey, aret_key;
    uint64_t adds = 0;
    unsigned nsend = 0;

    conf.timeout = 8;           /* 1 ms */
    conf.retry_cnt = 7;
    conf.rnr_retry = 7;
    fabric_up(&f, 0);
    f.link.capture = false;
    f.link.filter = inject_faults;
    f.link.filter_opaque = &st;
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], N * LEN);
    skey = mr_phys(&f.side[0], sbuf, N * LEN, 0);
    lbuf = buf_alloc(&f.side[0], N * LEN);
    lkey = mr_phys(&f.side[0], lbuf, N * LEN, VHCA_ACCESS_LOCAL_WRITE);
    aret = buf_alloc(&f.side[0], N * 8);
    aret_key = mr_phys(&f.side[0], aret, N * 8, VHCA_ACCESS_LOCAL_WRITE);
    rbuf = buf_alloc(&f.side[1], N * LEN);
    rkey = mr_phys(&f.side[1], rbuf, N * LEN, VHCA_ACCESS_LOCAL_WRITE);
    wbuf = buf_alloc(&f.side[1], N * LEN);
    wkey = mr_phys(&f.side[1], wbuf, N * LEN, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ);
    abuf = buf_alloc(&f.side[1], 8);
    akey = mr_phys(&f.side[1], abuf, 8, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_ATOMIC);

    /*
     * Message i: SEND (i % 4 == 0), RDMA WRITE (1), RDMA READ of the
     * area message i - 1 wrote (2), FETCH_AND_ADD of i (3).
     */
    for (unsigned i = 0; i < N; i++) {
        uint64_t off = (uint64_t)i * LEN;

        switch (i % 4) {
        case 0:
            buf_fill(&f.side[0], sbuf + off, LEN, 100 + i);
            rq_post(&f.side[1], &cn.qp[1], RECV_ID(i), rbuf + off, LEN,
                    rkey);
            vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
            vhca_wqe_sge(&w, sbuf + off, LEN, skey);
            break;
        case 1:
            buf_fill(&f.side[0], sbuf + off, LEN, 100 + i);
            vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_RDMA_WRITE,
                          VHCA_WQE_SIGNALED);
            vhca_wqe_sge(&w, sbuf + off, LEN, skey);
            vhca_wqe_remote(&w, wbuf + off, wkey);
            break;
        case 2:
            /* Reads wait for the write before them (IBTA 10.8.2 order). */
            vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
            vhca_wqe_sge(&w, lbuf + off, LEN, lkey);
            vhca_wqe_remote(&w, wbuf + off - LEN, wkey);
            break;
        default:
            vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_ATOMIC_FETCH_AND_ADD,
                          VHCA_WQE_SIGNALED);
            vhca_wqe_sge(&w, aret + 8 * i, 8, aret_key);
            vhca_wqe_remote(&w, abuf, akey);
            w.compare_add = cpu_to_le64(i);
            break;
        }
        sq_write(&f.side[0], &cn.qp[0], &w);
    }
    sq_ring(&f.side[0], &cn.qp[0]);

    for (unsigned i = 0; i < N; i++) {
        static const uint8_t op[4] = {
            VHCA_WC_SEND, VHCA_WC_RDMA_WRITE, VHCA_WC_RDMA_READ,
            VHCA_WC_FETCH_ADD,
        };

        cqe_wait_at(&f, &f.side[0], &f.side[0].scq, &c, 20000, G_STRLOC);
        cqe_check_at(&c, VHCA_WC_SUCCESS, op[i % 4], SEND_ID(i),
                     cn.qp[0].qpn, G_STRLOC);
    }
    for (unsigned i = 0; i < N; i += 4) {
        cqe_wait_at(&f, &f.side[1], &f.side[1].rcq, &c, 20000, G_STRLOC);
        cqe_check_at(&c, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(i),
                     cn.qp[1].qpn, G_STRLOC);
        g_assert_cmpuint(c.byte_len, ==, LEN);
        nsend++;
    }
    /* Duplicates must not complete twice. */
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    expect_cq_empty(&f, &f.side[0], &f.side[0].scq);

    for (unsigned i = 0; i < N; i++) {
        uint64_t off = (uint64_t)i * LEN;

        switch (i % 4) {
        case 0:
            buf_check(&f.side[1], rbuf + off, LEN, 100 + i);
            break;
        case 1:
            buf_check(&f.side[1], wbuf + off, LEN, 100 + i);
            break;
        case 2:
            buf_check(&f.side[0], lbuf + off, LEN, 100 + i - 1);
            break;
        default:
            /* Each add exactly once, even when its request repeated. */
            g_assert_cmphex(qtest_readq(f.side[0].d->qts, aret + 8 * i), ==,
                            adds);
            adds += i;
            break;
        }
    }
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, abuf), ==, adds);
    g_assert_cmpuint(nsend, ==, N / 4);
    g_test_message("%" PRIu64 " frames, %" PRIu64 " dropped",
                   f.link.seen[0] + f.link.seen[1], f.link.dropped);
    /* The faults did happen. */
    if (st.fs->drop_every) {
        g_assert_cmpuint(f.link.dropped, >, 0);
    }
    if (st.fs->dup_every) {
        g_assert_cmpuint(f.link.delivered[0] + f.link.delivered[1], >,
                         f.link.seen[0] + f.link.seen[1] - f.link.dropped);
    }
    g_hash_table_destroy(st.seen);
    g_assert_cmpuint(qp_state(&f.side[0], &cn.qp[0]), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&f.side[1], &cn.qp[1]), ==, VHCA_QPS_RTS);
    fabric_down(&f);
}

/*
 * A duplicate of an already executed request (IBTA 9.7.5.1: the
 * responder re-ACKs a duplicate SEND/WRITE without executing it again
 * and replays a duplicate atomic's saved result).  The link duplicates
 * every request; each SEND consumes exactly one receive WQE.
 */
static VhcaLinkVerdict dup_requests(VhcaLink *link, const VhcaLinkFrame *f,
                                    void *opaque)
{
    return f->from == 0 ? VHCA_LINK_DUPLICATE : VHCA_LINK_PASS;
}

static void test_duplicate_requests(void)
{
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t sbuf, rbuf, abuf, aret;
    uint32_t skey, rkey, akey, aret_key;

    fabric_up(&f, 0);
    f.link.filter = dup_requests;
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], 128);
    buf_fill(&f.side[0], sbuf, 128, 12);
    skey = mr_phys(&f.side[0], sbuf, 128, 0);
    aret = buf_alloc(&f.side[0], 16);
    aret_key = mr_phys(&f.side[0], aret, 16, VHCA_ACCESS_LOCAL_WRITE);
    rbuf = buf_alloc(&f.side[1], 256);
    rkey = mr_phys(&f.side[1], rbuf, 256, VHCA_ACCESS_LOCAL_WRITE);
    abuf = buf_alloc(&f.side[1], 8);
    akey = mr_phys(&f.side[1], abuf, 8, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_ATOMIC);
    qtest_writeq(f.side[1].d->qts, abuf, 100);

    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, 128, rkey);
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(2), rbuf + 128, 128, rkey);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 128, skey);
    sq_write(&f.side[0], &cn.qp[0], &w);
    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_ATOMIC_FETCH_AND_ADD,
                  VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, aret, 8, aret_key);
    vhca_wqe_remote(&w, abuf, akey);
    w.compare_add = cpu_to_le64(5);
    sq_write(&f.side[0], &cn.qp[0], &w);
    sq_ring(&f.side[0], &cn.qp[0]);

    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_FETCH_ADD, SEND_ID(2), cn.qp[0].qpn, NULL);
    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(1), cn.qp[1].qpn, NULL);
    /* The duplicate SEND did not consume the second receive WQE. */
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    buf_check_zero(&f.side[1], rbuf + 128, 128);
    /* The add happened once; the original value came back. */
    g_assert_cmphex(qtest_readq(f.side[1].d->qts, abuf), ==, 105);
    g_assert_cmphex(qtest_readq(f.side[0].d->qts, aret), ==, 100);
    g_assert_cmpuint(qp_state(&f.side[0], &cn.qp[0]), ==, VHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&f.side[1], &cn.qp[1]), ==, VHCA_QPS_RTS);
    fabric_down(&f);
}

/*
 * A packet damaged on the wire fails the ICRC: the receiver drops it
 * silently (IBTA 7.8.1; ROCE_RX_DROPPED counts it) and the requester's
 * timeout recovers, for a request and for an ACK alike.
 */
typedef struct CorruptOnce {
    unsigned from;
    uint8_t opcode;
    bool done;
} CorruptOnce;

static VhcaLinkVerdict corrupt_once(VhcaLink *link, const VhcaLinkFrame *f,
                                    void *opaque)
{
    CorruptOnce *c = opaque;
    VhcaRocePkt p;

    if (!c->done && f->from == c->from &&
        !vhca_roce_parse(f->data, f->len, &p) && p.opcode == c->opcode) {
        c->done = true;
        return VHCA_LINK_CORRUPT;
    }
    return VHCA_LINK_PASS;
}

static void test_corrupt(const void *data)
{
    bool ack = GPOINTER_TO_INT(data);
    CorruptOnce co = {
        .from = ack ? 1 : 0,
        .opcode = ack ? VHCA_RC_ACKNOWLEDGE : VHCA_RC_SEND_ONLY,
    };
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;
    uint64_t dropped_before;

    conf.timeout = 8;
    fabric_up(&f, 0);
    f.link.filter = corrupt_once;
    f.link.filter_opaque = &co;
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    sbuf = buf_alloc(&f.side[0], 100);
    buf_fill(&f.side[0], sbuf, 100, 15);
    skey = mr_phys(&f.side[0], sbuf, 100, 0);
    rbuf = buf_alloc(&f.side[1], 2 * 100);
    rkey = mr_phys(&f.side[1], rbuf, 2 * 100, VHCA_ACCESS_LOCAL_WRITE);
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(1), rbuf, 100, rkey);
    rq_post(&f.side[1], &cn.qp[1], RECV_ID(2), rbuf + 100, 100, rkey);
    dropped_before = vhca_counter(f.side[co.from ^ 1].d,
                                  VHCA_CNT_ROCE_RX_DROPPED);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 100, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);

    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
               SEND_ID(1), cn.qp[0].qpn, NULL);
    expect_cqe(&f, &f.side[1], &f.side[1].rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
               RECV_ID(1), cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, 100);
    g_assert_true(co.done);
    buf_check(&f.side[1], rbuf, 100, 15);
    /* Exactly once: the retransmission did not use the second receive. */
    expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
    buf_check_zero(&f.side[1], rbuf + 100, 100);
    g_assert_cmpuint(vhca_counter(f.side[co.from ^ 1].d,
                                  VHCA_CNT_ROCE_RX_DROPPED), >,
                     dropped_before);
    fabric_down(&f);
}

/*
 * The initiator depth (max_rd_atomic, IBTA 9.5 / 11.2.4.2): while the
 * responder's answers are held back, the requester has at most that many
 * RDMA READ and atomic requests outstanding; once they flow, all
 * complete.
 */
static VhcaLinkVerdict drop_responses(VhcaLink *link, const VhcaLinkFrame *f,
                                      void *opaque)
{
    bool *dropping = opaque;

    return *dropping && f->from == 1 ? VHCA_LINK_DROP : VHCA_LINK_PASS;
}

static void test_initiator_depth(void)
{
    enum { N = 8, DEPTH = 2, LEN = 64 };
    QpConf conf = conf_default;
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t lbuf, rbuf;
    uint32_t lkey, rkey;
    bool dropping = true;
    int64_t until;
    GHashTable *psns = g_hash_table_new(NULL, NULL);

    conf.max_rd_atomic = DEPTH;
    conf.timeout = 12;          /* 16.8 ms: no retransmission meanwhile */
    fabric_up(&f, 0);
    f.link.filter = drop_responses;
    f.link.filter_opaque = &dropping;
    conn_make(&cn, &f.side[0], &f.side[1], &conf);
    lbuf = buf_alloc(&f.side[0], N * LEN);
    lkey = mr_phys(&f.side[0], lbuf, N * LEN, VHCA_ACCESS_LOCAL_WRITE);
    rbuf = buf_alloc(&f.side[1], N * LEN);
    buf_fill(&f.side[1], rbuf, N * LEN, 16);
    rkey = mr_phys(&f.side[1], rbuf, N * LEN, VHCA_ACCESS_REMOTE_READ);
    for (int i = 0; i < N; i++) {
        vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
        vhca_wqe_sge(&w, lbuf + i * LEN, LEN, lkey);
        vhca_wqe_remote(&w, rbuf + i * LEN, rkey);
        sq_write(&f.side[0], &cn.qp[0], &w);
    }
    sq_ring(&f.side[0], &cn.qp[0]);

    /* 5 ms of answers lost, well inside the 16.8 ms timeout. */
    vhca_link_sync_clock(&f.link);
    until = f.link.clock_ns + 5000000;
    VHCA_LINK_WAIT_UNTIL(&f.link, f.link.clock_ns >= until, 50000,
                         "5 ms of virtual time");
    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (fr->from == 0 && p.opcode == VHCA_RC_READ_REQUEST) {
            g_hash_table_add(psns, GUINT_TO_POINTER(p.psn));
        }
    }
    g_assert_cmpuint(g_hash_table_size(psns), ==, DEPTH);
    g_assert_false(vhca_cq_peek(f.side[0].d, &f.side[0].scq, NULL));

    dropping = false;
    for (int i = 0; i < N; i++) {
        expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
                   VHCA_WC_RDMA_READ, SEND_ID(i), cn.qp[0].qpn, NULL);
    }
    buf_check(&f.side[0], lbuf, N * LEN, 16);
    g_hash_table_destroy(psns);
    fabric_down(&f);
}

/*
 * Completion events (IBTA 11.4.2.2): a CQ armed for solicited
 * completions raises COMPLETION on its EQ for a receive whose SEND had
 * the solicited event bit, not for one without; ARM_NEXT for any.
 */
static void test_solicited_event(void)
{
    Fabric f;
    Conn cn;
    Side *r;
    struct vhca_send_wqe w;
    struct vhca_eqe eqe;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;

    fabric_up(&f, 0);
    r = &f.side[1];
    conn_make(&cn, &f.side[0], r, &conf_default);
    sbuf = buf_alloc(&f.side[0], 64);
    skey = mr_phys(&f.side[0], sbuf, 64, 0);
    rbuf = buf_alloc(r, 4 * 64);
    rkey = mr_phys(r, rbuf, 4 * 64, VHCA_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < 3; i++) {
        rq_post(r, &cn.qp[1], RECV_ID(i), rbuf + 64 * i, 64, rkey);
    }
    vhca_ceq_ack(r->d, &r->eq, true);

    /* Armed for solicited: an unsolicited SEND raises nothing. */
    vhca_cq_arm(r->d, &r->rcq, VHCA_CQ_ARM_SOLICITED);
    vhca_wqe_init(&w, SEND_ID(0), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 64, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, r, &r->rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(0),
               cn.qp[1].qpn, NULL);
    settle(&f);
    g_assert_false(vhca_ceq_peek(r->d, &r->eq, NULL));

    /* A solicited one does. */
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND,
                  VHCA_WQE_SIGNALED | VHCA_WQE_SOLICITED);
    vhca_wqe_sge(&w, sbuf, 64, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, r, &r->rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(1),
               cn.qp[1].qpn, NULL);
    VHCA_LINK_WAIT_UNTIL(&f.link, vhca_ceq_peek(r->d, &r->eq, &eqe), STEP_NS,
                         "COMPLETION event");
    r->eq.ci++;
    g_assert_cmpuint(eqe.type, ==, VHCA_EQE_COMPLETION);
    g_assert_cmpuint(eqe.data[0], ==, r->rcq.cqn);
    vhca_ceq_ack(r->d, &r->eq, true);

    /* ARM_NEXT: any completion. */
    vhca_cq_arm(r->d, &r->rcq, VHCA_CQ_ARM_NEXT);
    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 64, skey);
    sq_post(&f.side[0], &cn.qp[0], &w);
    expect_cqe(&f, r, &r->rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(2),
               cn.qp[1].qpn, NULL);
    VHCA_LINK_WAIT_UNTIL(&f.link, vhca_ceq_peek(r->d, &r->eq, &eqe), STEP_NS,
                         "COMPLETION event");
    g_assert_cmpuint(eqe.data[0], ==, r->rcq.cqn);
    fabric_down(&f);
}

/* ---- loopback ---------------------------------------------------------- */

/*
 * Two QPs of one function, addressed to its own GID and MAC: the device
 * loops the traffic back itself (a switch would not send a frame back out
 * of its ingress port), so the link drops everything.
 */
static void test_loopback(void)
{
    enum { LEN = 3000 };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    Side *s;
    uint64_t sbuf, rbuf, wbuf;
    uint32_t skey, rkey, wkey;

    fabric_up(&f, 0);
    f.link.filter = drop_all;
    s = &f.side[0];
    conn_make(&cn, s, s, &conf_default);
    sbuf = buf_alloc(s, LEN);
    buf_fill(s, sbuf, LEN, 13);
    skey = mr_phys(s, sbuf, LEN, 0);
    rbuf = buf_alloc(s, LEN);
    rkey = mr_phys(s, rbuf, LEN, VHCA_ACCESS_LOCAL_WRITE);
    wbuf = buf_alloc(s, LEN);
    wkey = mr_phys(s, wbuf, LEN, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_WRITE);

    rq_post(s, &cn.qp[1], RECV_ID(1), rbuf, LEN, rkey);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND_WITH_IMM, VHCA_WQE_SIGNALED);
    w.imm_or_inv = cpu_to_be32(IMM);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    sq_write(s, &cn.qp[0], &w);
    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, wbuf, wkey);
    sq_write(s, &cn.qp[0], &w);
    sq_ring(s, &cn.qp[0]);

    /* Both QPs complete to the same CQs: receive first, then sends. */
    expect_cqe(&f, s, &s->rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(1),
               cn.qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    g_assert_cmphex(cqe_imm(&c), ==, IMM);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_SEND, SEND_ID(1),
               cn.qp[0].qpn, NULL);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE,
               SEND_ID(2), cn.qp[0].qpn, NULL);
    buf_check(s, rbuf, LEN, 13);
    buf_check(s, wbuf, LEN, 13);
    /* Nothing of it reached the wire (rxe and ConnectX do the same). */
    g_assert_cmpuint(f.link.seen[0], ==, 0);
    fabric_down(&f);
}

/* ---- shared receive queue ---------------------------------------------- */

typedef struct Srq {
    uint32_t srqn;
    unsigned log_size;
    VhcaPages ring;
    uint64_t ci_rec;            /* the count of WQEs the device took */
    uint32_t pi;
} Srq;

static void srq_make(Side *s, Srq *q, unsigned log_size)
{
    struct vhca_srq_create c;
    struct vhca_cmd_obj_out out;

    memset(q, 0, sizeof(*q));
    q->log_size = log_size;
    vhca_pages_alloc(s->d, &q->ring, VHCA_RECV_WQE_SIZE << log_size);
    q->ci_rec = buf_alloc(s, 4);
    qtest_writel(s->d->qts, q->ci_rec, 0xeeeeeeee);
    memset(&c, 0, sizeof(c));
    c.pdn = cpu_to_le32(s->pdn);
    c.db_page = cpu_to_le32(s->page);
    c.pbl_addr = cpu_to_le64(q->ring.pbl);
    c.npages = cpu_to_le32(q->ring.npages);
    c.log_size = log_size;
    c.ci_addr = cpu_to_le64(q->ci_rec);
    g_assert_cmpuint(vhca_cmd_mbox(s->d, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                                   NULL, &out), ==, VHCA_ST_OK);
    q->srqn = le32_to_cpu(out.handle);
    /* The device starts the consumer record at 0. */
    g_assert_cmphex(qtest_readl(s->d->qts, q->ci_rec), ==, 0);
}

/* One receive WQE of one SGE into the SRQ, and its doorbell. */
static void srq_post(Side *s, Srq *q, uint64_t wr_id, uint64_t addr,
                     uint32_t len, uint32_t lkey)
{
    struct vhca_recv_wqe w;
    uint32_t slot = q->pi & ((1u << q->log_size) - 1);

    memset(&w, 0, sizeof(w));
    w.wr_id = cpu_to_le64(wr_id);
    w.num_sge = 1;
    w.sge[0].addr = cpu_to_le64(addr);
    w.sge[0].length = cpu_to_le32(len);
    w.sge[0].lkey = cpu_to_le32(lkey);
    qtest_memwrite(s->d->qts, q->ring.addr + slot * VHCA_RECV_WQE_SIZE, &w,
                   sizeof(w));
    q->pi++;
    vhca_db_write(s->d, s->page, VHCA_DB_SRQ, q->srqn, q->pi);
}

/* An RC QP with no RQ of its own, receiving from @q. */
static void srq_qp_create(Side *s, VhcaQp *qp, const Srq *q)
{
    struct vhca_qp_create cr;

    vhca_qp_prepare(s->d, qp, VHCA_QPT_RC, s->pdn, s->scq.cqn, s->rcq.cqn,
                    conf_default.sq_log, 1, s->page, &cr);
    cr.rq_log_size = 0;
    cr.rq_pbl_addr = 0;
    cr.rq_npages = 0;
    cr.srqn = cpu_to_le32(q->srqn);
    g_assert_cmpuint(vhca_cmd_create_qp(s->d, &cr, &qp->qpn), ==,
                     VHCA_ST_OK);
}

/*
 * RC SENDs to two QPs of one function that share an SRQ (IBTA 10.2.9),
 * in loopback: each message takes the SRQ's next WQE in ring order,
 * whichever QP it is for; the CQE names the QP that took it, and the
 * device counts the takes in the consumer record.
 */
static void test_srq_loopback(void)
{
    static const struct {
        unsigned qp;
        uint32_t len;
    } msgs[] = { { 0, 3000 }, { 1, 100 }, { 0, 1024 }, { 1, 2049 } };
    enum { SLOT = 4096 };
    Fabric f;
    Side *s;
    Srq q;
    VhcaQp req[2], resp[2];
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    struct vhca_qp_attr a;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;

    fabric_up(&f, 0);
    f.link.filter = drop_all;
    s = &f.side[0];
    srq_make(s, &q, 3);
    for (unsigned i = 0; i < 2; i++) {
        qp_create_at(s, &req[i], &conf_default, G_STRLOC);
        srq_qp_create(s, &resp[i], &q);
        qp_to_rts_at(s, &req[i], s, resp[i].qpn, initial_psn[0],
                     initial_psn[1], &conf_default, G_STRLOC);
        qp_to_rts_at(s, &resp[i], s, req[i].qpn, initial_psn[1],
                     initial_psn[0], &conf_default, G_STRLOC);
    }
    /* QUERY_QP: no receive ring of its own. */
    g_assert_cmpuint(vhca_cmd_query_qp(s->d, resp[0].qpn, &a), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(le32_to_cpu(a.max_recv_wr), ==, 0);

    sbuf = buf_alloc(s, G_N_ELEMENTS(msgs) * SLOT);
    skey = mr_phys(s, sbuf, G_N_ELEMENTS(msgs) * SLOT, 0);
    rbuf = buf_alloc(s, G_N_ELEMENTS(msgs) * SLOT);
    rkey = mr_phys(s, rbuf, G_N_ELEMENTS(msgs) * SLOT,
                   VHCA_ACCESS_LOCAL_WRITE);
    for (unsigned i = 0; i < G_N_ELEMENTS(msgs); i++) {
        srq_post(s, &q, RECV_ID(i), rbuf + i * SLOT, SLOT, rkey);
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(msgs); i++) {
        unsigned k = msgs[i].qp;

        buf_fill(s, sbuf + i * SLOT, msgs[i].len, 20 + i);
        vhca_wqe_init(&w, SEND_ID(i), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
        vhca_wqe_sge(&w, sbuf + i * SLOT, msgs[i].len, skey);
        sq_post(s, &req[k], &w);
        expect_cqe(&f, s, &s->rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV,
                   RECV_ID(i), resp[k].qpn, &c);
        g_assert_cmpuint(c.byte_len, ==, msgs[i].len);
        expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_SEND,
                   SEND_ID(i), req[k].qpn, NULL);
        buf_check(s, rbuf + i * SLOT, msgs[i].len, 20 + i);
        g_assert_cmpuint(qtest_readl(s->d->qts, q.ci_rec), ==, i + 1);
    }
    expect_cq_empty(&f, s, &s->rcq);
    /* The SRQ cannot go while QPs receive from it. */
    g_assert_cmpuint(vhca_cmd_destroy(s->d, VHCA_CMD_DESTROY_SRQ, q.srqn), ==,
                     VHCA_ST_BUSY);
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(vhca_cmd_destroy(s->d, VHCA_CMD_DESTROY_QP,
                                          resp[i].qpn), ==, VHCA_ST_OK);
    }
    g_assert_cmpuint(vhca_cmd_destroy(s->d, VHCA_CMD_DESTROY_SRQ, q.srqn), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(f.link.seen[0], ==, 0);
    fabric_down(&f);
}

/* ---- XRC ---------------------------------------------------------------- */

/* An XRC SRQ of @log_size in domain @xrcdn, completing to @cqn. */
static void xrc_srq_make(Side *s, Srq *q, unsigned log_size, uint32_t xrcdn,
                         uint32_t cqn)
{
    struct vhca_srq_create c;
    struct vhca_cmd_obj_out out;

    memset(q, 0, sizeof(*q));
    q->log_size = log_size;
    vhca_pages_alloc(s->d, &q->ring, VHCA_RECV_WQE_SIZE << log_size);
    q->ci_rec = buf_alloc(s, 4);
    memset(&c, 0, sizeof(c));
    c.pdn = cpu_to_le32(s->pdn);
    c.db_page = cpu_to_le32(s->page);
    c.pbl_addr = cpu_to_le64(q->ring.pbl);
    c.npages = cpu_to_le32(q->ring.npages);
    c.log_size = log_size;
    c.ci_addr = cpu_to_le64(q->ci_rec);
    c.type = VHCA_SRQT_XRC;
    c.xrcdn = cpu_to_le32(xrcdn);
    c.cqn = cpu_to_le32(cqn);
    g_assert_cmpuint(vhca_cmd_mbox(s->d, VHCA_CMD_CREATE_SRQ, &c, sizeof(c),
                                   NULL, &out), ==, VHCA_ST_OK);
    q->srqn = le32_to_cpu(out.handle);
}

/*
 * Linux's XRC rows of the Modify QP table: the initiator has no responder
 * attributes, the target no retries.
 */
static void xrc_to_rts(Side *s, uint32_t qpn, bool target, uint32_t dest_qpn,
                       uint32_t sq_psn, uint32_t rq_psn)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(qpn);
    a.port = 1;
    a.qp_access_flags = cpu_to_le32(ALL_REMOTE);
    qp_modify_ok_at(s, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_PORT |
                    VHCA_QP_ACCESS_FLAGS, G_STRLOC);
    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(qpn);
    a.path_mtu = VHCA_IB_MTU_1024;
    a.dest_qp_num = cpu_to_le32(dest_qpn);
    a.rq_psn = cpu_to_le32(rq_psn);
    a.max_dest_rd_atomic = s->dev.max_qp_rd_atom;
    a.min_rnr_timer = 1;
    memcpy(a.dgid, s->gid, sizeof(a.dgid));
    memcpy(a.dmac, fn_mac[s->idx], sizeof(a.dmac));
    a.hop_limit = 64;
    qp_modify_ok_at(s, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                    VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                    (target ? VHCA_QP_MAX_DEST_RD_ATOMIC |
                              VHCA_QP_MIN_RNR_TIMER : 0), G_STRLOC);
    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(qpn);
    a.sq_psn = cpu_to_le32(sq_psn);
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = s->dev.max_qp_init_rd_atom;
    qp_modify_ok_at(s, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN | VHCA_QP_TIMEOUT |
                    (target ? 0 : VHCA_QP_RETRY_CNT | VHCA_QP_RNR_RETRY |
                                  VHCA_QP_MAX_QP_RD_ATOMIC), G_STRLOC);
}

/*
 * XRC (annex A14) in loopback: an initiator and a target of one function,
 * the target's domain holding two XRC SRQs that complete to two CQs.
 * Each SEND lands in the SRQ its WQE names and completes to that SRQ's
 * CQ under the target's QPN; RDMA WRITE, READ and an atomic go through
 * the target too; a request naming no XRC SRQ of the domain is refused
 * with a remote access error.
 */
static void test_xrc_loopback(void)
{
    enum { LEN = 3000, SLOT = 4096 };
    Fabric f;
    Side *s;
    Srq q[2];
    VhcaCq cq2;
    VhcaQp ini;
    struct vhca_qp_create cr;
    struct vhca_cmd_obj_out out;
    struct vhca_send_wqe w;
    struct vhca_cqe c;
    struct vhca_qp_attr a;
    uint64_t sbuf, rbuf, tbuf;
    uint32_t skey, rkey, tkey, xrcdn, tgt;

    fabric_up(&f, 0);
    f.link.filter = drop_all;
    s = &f.side[0];
    g_assert_cmpuint(le32_to_cpu(s->dev.max_xrcd), ==, VHCA_MAX_XRCD);
    g_assert_cmpuint(vhca_cmd_exec(s->d, VHCA_CMD_ALLOC_XRCD, NULL, 0, &out),
                     ==, VHCA_ST_OK);
    xrcdn = le32_to_cpu(out.handle);
    g_assert_cmpuint(xrcdn, ==, 1);
    vhca_cq_make(s->d, &cq2, CQ_LOG, s->eq.eqn, s->page);
    xrc_srq_make(s, &q[0], 3, xrcdn, s->rcq.cqn);
    xrc_srq_make(s, &q[1], 3, xrcdn, cq2.cqn);

    /* The initiator: a send queue only. */
    vhca_qp_prepare(s->d, &ini, VHCA_QPT_XRC_INI, s->pdn, s->scq.cqn, 0,
                    conf_default.sq_log, 1, s->page, &cr);
    cr.rq_log_size = 0;
    cr.rq_pbl_addr = 0;
    cr.rq_npages = 0;
    g_assert_cmpuint(vhca_cmd_create_qp(s->d, &cr, &ini.qpn), ==,
                     VHCA_ST_OK);
    /* The target: its domain, nothing else. */
    memset(&cr, 0, sizeof(cr));
    cr.type = VHCA_QPT_XRC_TGT;
    cr.xrcdn = cpu_to_le32(xrcdn);
    g_assert_cmpuint(vhca_cmd_create_qp(s->d, &cr, &tgt), ==, VHCA_ST_OK);
    xrc_to_rts(s, ini.qpn, false, tgt, initial_psn[0], initial_psn[1]);
    xrc_to_rts(s, tgt, true, ini.qpn, initial_psn[1], initial_psn[0]);
    g_assert_cmpuint(vhca_cmd_query_qp(s->d, tgt, &a), ==, VHCA_ST_OK);
    g_assert_cmpuint(le32_to_cpu(a.max_send_wr), ==, 0);
    g_assert_cmpuint(le32_to_cpu(a.max_recv_wr), ==, 0);

    sbuf = buf_alloc(s, 4 * SLOT);
    skey = mr_phys(s, sbuf, 4 * SLOT, VHCA_ACCESS_LOCAL_WRITE);
    rbuf = buf_alloc(s, 4 * SLOT);
    rkey = mr_phys(s, rbuf, 4 * SLOT, VHCA_ACCESS_LOCAL_WRITE);
    tbuf = buf_alloc(s, SLOT);
    tkey = mr_phys(s, tbuf, SLOT, ALL_ACCESS);
    srq_post(s, &q[0], RECV_ID(0), rbuf, SLOT, rkey);
    srq_post(s, &q[1], RECV_ID(1), rbuf + SLOT, SLOT, rkey);

    /* A SEND to each SRQ, the second one first. */
    buf_fill(s, sbuf, LEN, 31);
    buf_fill(s, sbuf + SLOT, LEN, 32);
    vhca_wqe_init(&w, SEND_ID(1), VHCA_WR_SEND_WITH_IMM, VHCA_WQE_SIGNALED);
    w.imm_or_inv = cpu_to_be32(IMM);
    w.xrc_srqn = cpu_to_le32(q[1].srqn);
    vhca_wqe_sge(&w, sbuf + SLOT, LEN, skey);
    sq_post(s, &ini, &w);
    expect_cqe(&f, s, &cq2, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(1), tgt,
               &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    g_assert_cmphex(cqe_imm(&c), ==, IMM);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_SEND, SEND_ID(1),
               ini.qpn, NULL);
    vhca_wqe_init(&w, SEND_ID(0), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    w.xrc_srqn = cpu_to_le32(q[0].srqn);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    sq_post(s, &ini, &w);
    expect_cqe(&f, s, &s->rcq, VHCA_WC_SUCCESS, VHCA_WC_RECV, RECV_ID(0), tgt,
               &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_SEND, SEND_ID(0),
               ini.qpn, NULL);
    buf_check(s, rbuf, LEN, 31);
    buf_check(s, rbuf + SLOT, LEN, 32);
    g_assert_cmpuint(qtest_readl(s->d->qts, q[0].ci_rec), ==, 1);
    g_assert_cmpuint(qtest_readl(s->d->qts, q[1].ci_rec), ==, 1);

    /* RDMA WRITE, READ back, FETCH_ADD through the target. */
    vhca_wqe_init(&w, SEND_ID(2), VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    w.xrc_srqn = cpu_to_le32(q[0].srqn);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    vhca_wqe_remote(&w, tbuf, tkey);
    sq_post(s, &ini, &w);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_RDMA_WRITE,
               SEND_ID(2), ini.qpn, NULL);
    buf_check(s, tbuf, LEN, 31);
    vhca_wqe_init(&w, SEND_ID(3), VHCA_WR_RDMA_READ, VHCA_WQE_SIGNALED);
    w.xrc_srqn = cpu_to_le32(q[1].srqn);
    vhca_wqe_sge(&w, sbuf + 2 * SLOT, LEN, skey);
    vhca_wqe_remote(&w, tbuf, tkey);
    sq_post(s, &ini, &w);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_RDMA_READ,
               SEND_ID(3), ini.qpn, NULL);
    buf_check(s, sbuf + 2 * SLOT, LEN, 31);
    qtest_writeq(s->d->qts, tbuf + 3584, 1000);
    vhca_wqe_init(&w, SEND_ID(4), VHCA_WR_ATOMIC_FETCH_AND_ADD,
                  VHCA_WQE_SIGNALED);
    w.xrc_srqn = cpu_to_le32(q[0].srqn);
    w.compare_add = cpu_to_le64(24);
    vhca_wqe_sge(&w, sbuf + 3 * SLOT, 8, skey);
    vhca_wqe_remote(&w, tbuf + 3584, tkey);
    sq_post(s, &ini, &w);
    expect_cqe(&f, s, &s->scq, VHCA_WC_SUCCESS, VHCA_WC_FETCH_ADD,
               SEND_ID(4), ini.qpn, NULL);
    g_assert_cmpuint(qtest_readq(s->d->qts, sbuf + 3 * SLOT), ==, 1000);
    g_assert_cmpuint(qtest_readq(s->d->qts, tbuf + 3584), ==, 1024);

    /* The domain is in use; an SRQ it does not have is refused. */
    g_assert_cmpuint(vhca_cmd_destroy(s->d, VHCA_CMD_DEALLOC_XRCD, xrcdn), ==,
                     VHCA_ST_BUSY);
    vhca_wqe_init(&w, SEND_ID(5), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    w.xrc_srqn = cpu_to_le32(99);
    vhca_wqe_sge(&w, sbuf, 8, skey);
    sq_post(s, &ini, &w);
    expect_cqe(&f, s, &s->scq, VHCA_WC_REM_ACCESS_ERR, VHCA_WC_SEND,
               SEND_ID(5), ini.qpn, &c);
    g_assert_cmphex(c.vendor_err, ==, VHCA_VENDOR_ERR_NAK | 2);
    g_assert_cmpuint(vhca_cmd_query_qp(s->d, tgt, &a), ==, VHCA_ST_OK);
    g_assert_cmpuint(a.qp_state, ==, VHCA_QPS_ERR);
    expect_cq_empty(&f, s, &s->rcq);
    expect_cq_empty(&f, s, &cq2);
    g_assert_cmpuint(f.link.seen[0], ==, 0);
    fabric_down(&f);
}

/* ---- wire format -------------------------------------------------------- */

/*
 * A conversation both ways, every frame checked by the independent
 * parser (check_captured_frames, ICRC included), plus what stays
 * constant within a connection: the UDP source port of each direction
 * (annex A17: one flow), and MSNs that count completed messages.
 */
static void test_wire_format(void)
{
    enum { LEN = 1500 };
    Fabric f;
    Conn cn;
    struct vhca_send_wqe w;
    uint64_t sbuf[2], rbuf[2];
    uint32_t skey[2], rkey[2];
    int sport[2] = { -1, -1 };
    uint32_t last_msn[2] = { 0, 0 };

    fabric_up(&f, 0);
    conn_make(&cn, &f.side[0], &f.side[1], &conf_default);
    for (int i = 0; i < 2; i++) {
        sbuf[i] = buf_alloc(&f.side[i], LEN);
        buf_fill(&f.side[i], sbuf[i], LEN, 30 + i);
        skey[i] = mr_phys(&f.side[i], sbuf[i], LEN, 0);
        rbuf[i] = buf_alloc(&f.side[i], 4 * LEN);
        rkey[i] = mr_phys(&f.side[i], rbuf[i], 4 * LEN,
                          VHCA_ACCESS_LOCAL_WRITE);
    }
    /* Three messages each way, interleaved. */
    for (int m = 0; m < 3; m++) {
        for (int i = 0; i < 2; i++) {
            rq_post(&f.side[!i], &cn.qp[!i], RECV_ID(m), rbuf[!i] + m * LEN,
                    LEN, rkey[!i]);
            vhca_wqe_init(&w, SEND_ID(m), m == 1 ? VHCA_WR_SEND_WITH_IMM
                                                 : VHCA_WR_SEND,
                          VHCA_WQE_SIGNALED |
                          (m == 2 ? VHCA_WQE_SOLICITED : 0));
            w.imm_or_inv = cpu_to_be32(IMM + m);
            vhca_wqe_sge(&w, sbuf[i], LEN, skey[i]);
            sq_post(&f.side[i], &cn.qp[i], &w);
        }
    }
    for (int m = 0; m < 3; m++) {
        for (int i = 0; i < 2; i++) {
            expect_cqe(&f, &f.side[i], &f.side[i].scq, VHCA_WC_SUCCESS,
                       VHCA_WC_SEND, SEND_ID(m), cn.qp[i].qpn, NULL);
            expect_cqe(&f, &f.side[i], &f.side[i].rcq, VHCA_WC_SUCCESS,
                       VHCA_WC_RECV, RECV_ID(m), cn.qp[i].qpn, NULL);
        }
    }
    settle(&f);
    for (guint i = 0; i < f.link.frames->len; i++) {
        VhcaRocePkt p;
        const VhcaLinkFrame *fr = frame_at(&f, i, &p);

        if (sport[fr->from] < 0) {
            sport[fr->from] = p.udp_sport;
        }
        g_assert_cmphex(p.udp_sport, ==, sport[fr->from]);
        g_assert_cmpuint(p.dest_qpn, ==, cn.qp[!fr->from].qpn);
        if (p.opcode == VHCA_RC_ACKNOWLEDGE) {
            g_assert_cmphex(VHCA_AETH_KIND(p.aeth_syndrome), ==,
                            VHCA_AETH_ACK);
            /* MSNs never go backwards. */
            g_assert_cmpuint(p.aeth_msn, >=, last_msn[fr->from]);
            last_msn[fr->from] = p.aeth_msn;
        } else if (p.opcode == VHCA_RC_SEND_LAST ||
                   p.opcode == VHCA_RC_SEND_LAST_IMM) {
            /* The SOLICITED flag rides on the last packet (IBTA 9.2). */
            g_assert_cmpuint(p.se, ==, p.psn == psn_add(initial_psn[fr->from],
                                                        5));
        }
    }
    /* Each responder ACKed all three of its messages. */
    g_assert_cmpuint(last_msn[0], ==, 3);
    g_assert_cmpuint(last_msn[1], ==, 3);
    for (int i = 0; i < 2; i++) {
        for (int m = 0; m < 3; m++) {
            buf_check(&f.side[!i], rbuf[!i] + m * LEN, LEN, 30 + i);
        }
    }
    fabric_down(&f);
}

/* ---- the link itself, with plain Ethernet frames ----------------------- */

typedef struct LinkScript {
    VhcaLinkVerdict verdict[4];     /* for frames 0..3 from function 0 */
} LinkScript;

static VhcaLinkVerdict scripted(VhcaLink *link, const VhcaLinkFrame *f,
                                void *opaque)
{
    const LinkScript *s = opaque;

    return f->from == 0 && f->seq < 4 ? s->verdict[f->seq] : VHCA_LINK_PASS;
}

/*
 * The fault injection the RC tests rely on, checked with Ethernet frames
 * from function 0's TX ring to function 1's RX ring: frame 0 passes,
 * 1 is dropped, 2 duplicated, 3 held behind 4.  Received: 0, 2, 2, 4, 3.
 */
static void test_link_faults(void)
{
    static const LinkScript script = { {
        VHCA_LINK_PASS, VHCA_LINK_DROP, VHCA_LINK_DUPLICATE, VHCA_LINK_HOLD,
    } };
    static const unsigned expect_seed[] = { 0, 2, 2, 4, 3 };
    VhcaTestDev *devs[2];
    VhcaLink link;
    uint8_t frame[128], got[256];

    vhca_test_start_many(2, fn_slot, fn_opts, RAM_MIB, devs);
    for (int i = 0; i < 2; i++) {
        vhca_admin_setup(devs[i], 4, 4);
        vhca_eth_setup(devs[i], 4, 4, 256, VHCA_ETH_CTRL_TX_ENABLE |
                       VHCA_ETH_CTRL_RX_ENABLE);
    }
    vhca_rx_post(devs[1], 8);
    vhca_link_init(&link, devs[0], devs[1]);
    link.filter = scripted;
    link.filter_opaque = (void *)&script;
    for (unsigned seed = 0; seed < 5; seed++) {
        size_t len = vhca_frame_eth(frame, fn_mac[1], VHCA_ETHERTYPE_TEST,
                                    64, seed);

        vhca_tx_frame(devs[0], frame, len);
        vhca_link_pump(&link);
    }
    VHCA_LINK_WAIT_UNTIL(&link, vhca_rd(devs[1], VHCA_REG_RX_CI) >= 5,
                         STEP_NS, "five frames at function 1");
    for (unsigned i = 0; i < ARRAY_SIZE(expect_seed); i++) {
        size_t len = vhca_frame_eth(frame, fn_mac[1], VHCA_ETHERTYPE_TEST,
                                    64, expect_seed[i]);

        g_assert_cmpuint(vhca_rx_receive(devs[1], got, sizeof(got)), ==,
                         len);
        g_assert_cmpmem(got, len, frame, len);
    }
    for (int i = 0; i < 20; i++) {
        vhca_link_pump(&link);
        vhca_link_clock_step(&link, STEP_NS);
    }
    g_assert_cmpuint(vhca_rd(devs[1], VHCA_REG_RX_CI), ==, 5);
    g_assert_cmpuint(link.seen[0], ==, 5);
    g_assert_cmpuint(link.delivered[1], ==, 5);
    g_assert_cmpuint(link.dropped, ==, 1);
    vhca_link_destroy(&link);
    vhca_test_stop_many(2, devs);
}

/* ---- the test's own parser against Linux rxe ---------------------------- */

/*
 * The parser that judges the device must accept the frames Linux rxe
 * sent (tests/data/rxe-frames.h, also the unit tests' known vectors), and
 * must refuse them corrupted.
 */
static void test_parser_knows_rxe(void)
{
    static const struct {
        const uint8_t *frame;
        size_t len;
        uint8_t opcode;
        uint32_t psn;
    } v[] = {
        { rxe_v4_send_only, sizeof(rxe_v4_send_only),
          VHCA_RC_SEND_ONLY, 0x0351dc },
        { rxe_v4_ack, sizeof(rxe_v4_ack), VHCA_RC_ACKNOWLEDGE, 0x0351dc },
        { rxe_v4_fetch_add, sizeof(rxe_v4_fetch_add), VHCA_RC_FETCH_ADD,
          0x9b75dd },
        { rxe_v4_atomic_ack, sizeof(rxe_v4_atomic_ack),
          VHCA_RC_ATOMIC_ACKNOWLEDGE, 0x9b75dd },
        { rxe_v4_write_last_imm, sizeof(rxe_v4_write_last_imm),
          VHCA_RC_WRITE_LAST_IMM, 0x01df26 },
    };
    VhcaRocePkt p;

    for (unsigned i = 0; i < ARRAY_SIZE(v); i++) {
        g_autofree uint8_t *bad = g_memdup2(v[i].frame, v[i].len);
        const char *err = vhca_roce_parse(v[i].frame, v[i].len, &p);

        g_assert_null(err);
        g_assert_cmphex(p.opcode, ==, v[i].opcode);
        g_assert_cmphex(p.psn, ==, v[i].psn);
        g_assert_cmphex(p.pkey, ==, 0xffff);
        /* One bit of the last payload/header byte before the ICRC. */
        bad[v[i].len - 5] ^= 0x01;
        g_assert_cmpstr(vhca_roce_parse(bad, v[i].len, &p), ==, "bad ICRC");
    }
    vhca_roce_parse(rxe_v4_ack, sizeof(rxe_v4_ack), &p);
    g_assert_cmphex(p.aeth_syndrome, ==, 0x1f);
    g_assert_cmpuint(p.aeth_msn, ==, 1);
    vhca_roce_parse(rxe_v4_fetch_add, sizeof(rxe_v4_fetch_add), &p);
    g_assert_true(p.has_atomic_eth);
    g_assert_cmphex(p.atomic_swap_add, ==, 1);
    vhca_roce_parse(rxe_v4_write_last_imm, sizeof(rxe_v4_write_last_imm),
                    &p);
    g_assert_true(p.has_imm);
    g_assert_cmphex(p.imm, ==, 0);         /* ib_write_bw sends 0 */
    g_assert_cmpuint(p.payload_len, ==, 52);
    g_assert_true(p.ack_req);
}

/* ---- hostile frames from the network ----------------------------------- */

/*
 * Malformed and unexpected frames injected into function 1 from the
 * network, one kind per case: each is dropped and counted where the spec
 * says (the Ethernet path for what is not RoCEv2, a DROP_* reason or a
 * NAK counter for what is), the QP it names ends in the state IBTA
 * prescribes (QUERY_QP), and QEMU goes on: a SEND on another connection
 * completes after every case.
 */
typedef enum Hostile {
    H_ETH_TRUNC,            /* shorter than an Ethernet header */
    H_IP_TRUNC,             /* ends inside the IPv4 header */
    H_UDP_TRUNC,            /* the IP datagram ends inside UDP */
    H_IP_LEN_LONG,          /* IP total length past the frame's end */
    H_BTH_TRUNC,            /* UDP to 4791 without room for BTH + ICRC */
    H_RETH_TRUNC,           /* WRITE ONLY with half a RETH */
    H_IP_LEN_SHORT,         /* IP total length short of the UDP length */
    H_UDP_LEN_SHORT,        /* UDP length short: the ICRC is not there */
    H_BAD_ICRC,
    H_UNKNOWN_OPCODE,       /* RC opcode 0x1f: reserved */
    H_UD_OPCODE,            /* a UD SEND to an RC QP */
    H_OVERSIZE,             /* payload over path and port MTU */
    H_PSN_AHEAD,            /* far ahead of the expected PSN */
    H_PSN_BEHIND,           /* far behind: a duplicate */
    H_READ_RESP_UNASKED,    /* a READ response nobody asked for */
    H_ACK_UNSENT,           /* an ACK for a PSN never sent */
    H_WRITE_BAD_RKEY,       /* WRITE ONLY with an R_Key of no MR */
    H_MAX
} Hostile;

typedef struct HostileCase {
    const char *name;
    enum vhca_counter counter;  /* moves by exactly one */
    bool roce;                  /* taken as RoCEv2 (ROCE_RX_PACKETS) */
    uint8_t state;              /* of the QP the frame names, afterwards */
} HostileCase;

static const HostileCase hostile_cases[H_MAX] = {
    [H_ETH_TRUNC] = { "eth-truncated", VHCA_CNT_RX_ERRORS, false,
                      VHCA_QPS_RTS },
    /* Not RoCEv2: the Ethernet ring's, which has no buffer posted. */
    [H_IP_TRUNC] = { "ip-truncated", VHCA_CNT_RX_NO_BUFFER, false,
                     VHCA_QPS_RTS },
    [H_UDP_TRUNC] = { "udp-truncated", VHCA_CNT_RX_NO_BUFFER, false,
                      VHCA_QPS_RTS },
    [H_IP_LEN_LONG] = { "ip-length-long", VHCA_CNT_RX_NO_BUFFER, false,
                        VHCA_QPS_RTS },
    [H_BTH_TRUNC] = { "bth-truncated", VHCA_CNT_DROP_MALFORMED, true,
                      VHCA_QPS_RTS },
    [H_RETH_TRUNC] = { "reth-truncated", VHCA_CNT_DROP_MALFORMED, true,
                       VHCA_QPS_RTS },
    [H_IP_LEN_SHORT] = { "ip-length-short", VHCA_CNT_DROP_MALFORMED, true,
                         VHCA_QPS_RTS },
    [H_UDP_LEN_SHORT] = { "udp-length-short", VHCA_CNT_DROP_BAD_ICRC, true,
                          VHCA_QPS_RTS },
    [H_BAD_ICRC] = { "bad-icrc", VHCA_CNT_DROP_BAD_ICRC, true,
                     VHCA_QPS_RTS },
    [H_UNKNOWN_OPCODE] = { "unknown-opcode", VHCA_CNT_DROP_MALFORMED, true,
                           VHCA_QPS_RTS },
    /* IBTA 9.6.1: a service the QP does not run. */
    [H_UD_OPCODE] = { "ud-opcode-to-rc", VHCA_CNT_DROP_NO_QP, true,
                      VHCA_QPS_RTS },
    [H_OVERSIZE] = { "oversize", VHCA_CNT_DROP_OVERSIZE, true,
                     VHCA_QPS_RTS },
    /* 9.7.5.2.1: class A, one sequence error NAK, no state change. */
    [H_PSN_AHEAD] = { "psn-far-ahead", VHCA_CNT_SEQ_NAK_SENT, true,
                      VHCA_QPS_RTS },
    /* 9.7.5.2.2: a duplicate, acknowledged again. */
    [H_PSN_BEHIND] = { "psn-far-behind", VHCA_CNT_DUPLICATE_REQUEST, true,
                       VHCA_QPS_RTS },
    /* 9.7.6.1.x: responses to nothing outstanding are dropped. */
    [H_READ_RESP_UNASKED] = { "read-response-unasked",
                              VHCA_CNT_DROP_STALE_RESPONSE, true,
                              VHCA_QPS_RTS },
    [H_ACK_UNSENT] = { "ack-for-psn-never-sent",
                       VHCA_CNT_DROP_STALE_RESPONSE, true, VHCA_QPS_RTS },
    /* 9.7.5.2.4, 9.9.3.1.3: class C, NAK remote access error, ERR. */
    [H_WRITE_BAD_RKEY] = { "write-bad-rkey", VHCA_CNT_REM_ACCESS_NAK_SENT,
                           true, VHCA_QPS_ERR },
};

/* The frame of case @k to function 1's QP @qpn, from function 0. */
static size_t hostile_frame(Hostile k, uint32_t qpn, uint8_t *f, size_t cap)
{
    static uint8_t payload[2048];
    VhcaRoceOut o;
    uint8_t *ip = f + VHCA_ETH_HLEN, *udp = ip + 20;
    size_t len;

    memset(&o, 0, sizeof(o));
    memcpy(o.dmac, fn_mac[1], 6);
    memcpy(o.smac, fn_mac[0], 6);
    memcpy(o.sip, fn_ip[0], 4);
    memcpy(o.dip, fn_ip[1], 4);
    o.opcode = VHCA_RC_SEND_ONLY;
    o.dest_qpn = qpn;
    o.psn = initial_psn[0];         /* what the responder expects */
    o.ack_req = true;
    memset(payload, 0xa5, sizeof(payload));
    o.payload = payload;
    o.payload_len = 64;

    switch (k) {
    case H_RETH_TRUNC:
        o.opcode = VHCA_RC_WRITE_ONLY;
        o.ext_len = 8;              /* of 16 */
        o.payload_len = 0;
        break;
    case H_UNKNOWN_OPCODE:
        o.opcode = 0x1f;
        break;
    case H_UD_OPCODE:
        o.opcode = 0x64;            /* UD SEND ONLY, with a DETH */
        stl_be_p(o.ext, 0x11111111);
        stl_be_p(o.ext + 4, 1);
        o.ext_len = 8;
        break;
    case H_OVERSIZE:
        o.payload_len = 2048;       /* path and port MTU: 1024 */
        break;
    case H_PSN_AHEAD:
        o.psn = psn_add(initial_psn[0], 1000);
        break;
    case H_PSN_BEHIND:
        o.psn = psn_add(initial_psn[0], 0x1000000 - 1000);
        break;
    case H_READ_RESP_UNASKED:
        o.opcode = VHCA_RC_READ_RESPONSE_ONLY;
        o.psn = initial_psn[1];     /* function 1's requester's PSNs */
        o.ack_req = false;
        o.ext_len = 4;              /* AETH: ACK, MSN 1 */
        stl_be_p(o.ext, 1);
        break;
    case H_ACK_UNSENT:
        o.opcode = VHCA_RC_ACKNOWLEDGE;
        o.psn = psn_add(initial_psn[1], 100);
        o.ack_req = false;
        o.ext_len = 4;
        stl_be_p(o.ext, 1);
        o.payload_len = 0;
        break;
    case H_WRITE_BAD_RKEY:
        o.opcode = VHCA_RC_WRITE_ONLY;
        stq_be_p(o.ext, 0x100000);  /* VA */
        stl_be_p(o.ext + 8, 0x00dead5a);    /* R_Key of no MR */
        stl_be_p(o.ext + 12, o.payload_len);
        o.ext_len = 16;
        break;
    default:
        break;
    }
    len = vhca_roce_build(f, cap, &o);

    switch (k) {
    case H_ETH_TRUNC:
        return 10;
    case H_IP_TRUNC:
        return VHCA_ETH_HLEN + 10;
    case H_UDP_TRUNC:
        stw_be_p(ip + 2, 20 + 4);
        vhca_roce_reseal(f, len);
        return VHCA_ETH_HLEN + 20 + 4;
    case H_IP_LEN_LONG:
        stw_be_p(ip + 2, lduw_be_p(ip + 2) + 64);
        vhca_roce_reseal(f, len);
        return len;
    case H_BTH_TRUNC:
        stw_be_p(ip + 2, 20 + 8 + 8);
        stw_be_p(udp + 4, 8 + 8);
        vhca_roce_reseal(f, len);
        return VHCA_ETH_HLEN + 20 + 8 + 8;
    case H_IP_LEN_SHORT:
        stw_be_p(ip + 2, lduw_be_p(ip + 2) - 8);
        vhca_roce_reseal(f, len);
        return len;
    case H_UDP_LEN_SHORT:
        /* Not resealed: the ICRC stays where the packet really ends. */
        stw_be_p(udp + 4, lduw_be_p(udp + 4) - 8);
        return len;
    case H_BAD_ICRC:
        f[len - 1] ^= 0x01;
        return len;
    default:
        return len;
    }
}

static void hostile_bystander_send(Fabric *f, Conn *cn, unsigned round,
                                   uint64_t sbuf, uint32_t skey,
                                   uint64_t rbuf, uint32_t rkey)
{
    enum { LEN = 300 };
    struct vhca_send_wqe w;
    struct vhca_cqe c;

    buf_fill(&f->side[0], sbuf, LEN, round);
    rq_post(&f->side[1], &cn->qp[1], RECV_ID(round), rbuf, LEN, rkey);
    vhca_wqe_init(&w, SEND_ID(round), VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, LEN, skey);
    sq_post(&f->side[0], &cn->qp[0], &w);
    expect_cqe(f, &f->side[1], &f->side[1].rcq, VHCA_WC_SUCCESS,
               VHCA_WC_RECV, RECV_ID(round), cn->qp[1].qpn, &c);
    g_assert_cmpuint(c.byte_len, ==, LEN);
    expect_cqe(f, &f->side[0], &f->side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_SEND, SEND_ID(round), cn->qp[0].qpn, NULL);
    buf_check(&f->side[1], rbuf, LEN, round);
}

/* ---- priority flow control (IEEE 802.1Qbb) ---------------------------- */

/* DSCP 24 (CS3): untagged RoCE at priority 3 (DSCP >> 3). */
#define PFC_TC3         (24 << 2)
#define PFC_PRIO        3

/* SET_CC on @s: what QUERY_CC says, PFC on for the priorities @enable. */
static void pfc_enable(Side *s, uint8_t enable)
{
    struct vhca_cc_query q;

    memset(&q, 0, sizeof(q));
    g_assert_cmpuint(vhca_cmd_mbox(s->d, VHCA_CMD_QUERY_CC, &q, sizeof(q),
                                   &q, NULL), ==, VHCA_ST_OK);
    q.config.pfc_enable = enable;
    g_assert_cmpuint(vhca_cmd_mbox(s->d, VHCA_CMD_SET_CC, &q.config,
                                   sizeof(q.config), NULL, NULL), ==,
                     VHCA_ST_OK);
}

static uint64_t pfc_counter(Side *s, unsigned counter, unsigned prio)
{
    struct vhca_cc_query q;

    memset(&q, 0, sizeof(q));
    g_assert_cmpuint(vhca_cmd_mbox(s->d, VHCA_CMD_QUERY_CC, &q, sizeof(q),
                                   &q, NULL), ==, VHCA_ST_OK);
    return le64_to_cpu(q.pfc[counter][prio]);
}

/*
 * A PFC frame (802.1Qbb 36.1.3.1) for priority @prio with @quanta, from a
 * peer MAC of its own, straight into @s's netdev (the link's socket).
 */
static void pfc_inject(Side *s, uint16_t quanta)
{
    uint8_t f[60] = {
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01,     /* 01-80-C2-00-00-01 */
        0x52, 0x54, 0x00, 0x00, 0x01, 0x99,
        0x88, 0x08,                             /* MAC Control */
        0x01, 0x01,                             /* PFC */
        0x00, 1u << PFC_PRIO,
    };

    f[18 + 2 * PFC_PRIO] = quanta >> 8;
    f[19 + 2 * PFC_PRIO] = quanta & 0xff;
    vhca_wire_send(s->d, f, sizeof(f));
}

/* Frames of QP @dest_qpn the link carried from function @from. */
static unsigned frames_to_qp(Fabric *f, unsigned from, uint32_t dest_qpn,
                             int64_t *first_ns)
{
    unsigned n = 0;

    for (guint i = 0; i < f->link.frames->len; i++) {
        VhcaLinkFrame *fr = g_ptr_array_index(f->link.frames, i);
        VhcaRocePkt p;

        if (fr->from == from && !vhca_roce_parse(fr->data, fr->len, &p) &&
            p.dest_qpn == dest_qpn) {
            if (!n && first_ns) {
                *first_ns = fr->clock_ns;
            }
            n++;
        }
    }
    return n;
}

/* A 4 KiB RDMA WRITE on @cn from side 0 to side 1, signalled. */
static void pfc_write(Conn *cn, uint64_t wr_id, uint64_t sbuf, uint32_t skey,
                      uint64_t rbuf, uint32_t rkey)
{
    struct vhca_send_wqe w;

    vhca_wqe_init(&w, wr_id, VHCA_WR_RDMA_WRITE, VHCA_WQE_SIGNALED);
    vhca_wqe_sge(&w, sbuf, 4096, skey);
    vhca_wqe_remote(&w, rbuf, rkey);
    sq_post(cn->s[0], &cn->qp[0], &w);
}

/*
 * A PFC frame for priority 3 stops function 0's QP whose traffic class
 * maps to priority 3 and not the one at priority 0; an XON lets it go at
 * once; a pause of 1000 quanta (20.48 us at 25 Gb/s) holds it that long
 * and not longer (its first frame is no earlier on the virtual clock).
 */
static void test_pfc_pause(void)
{
    QpConf c3 = conf_default;
    Fabric f;
    Conn p3, p0;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;
    int64_t t0, first = 0;

    c3.traffic_class = PFC_TC3;
    fabric_up(&f, 0);
    conn_make(&p3, &f.side[0], &f.side[1], &c3);
    conn_make(&p0, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], 4 * 4096);
    buf_fill(&f.side[0], sbuf, 4 * 4096, 11);
    skey = mr_phys(&f.side[0], sbuf, 4 * 4096, 0);
    rbuf = buf_alloc(&f.side[1], 4 * 4096);
    rkey = mr_phys(&f.side[1], rbuf, 4 * 4096, VHCA_ACCESS_LOCAL_WRITE |
                   VHCA_ACCESS_REMOTE_WRITE);
    pfc_enable(&f.side[0], 1u << PFC_PRIO);

    /* The longest pause (1.34 ms); taken before anything is posted. */
    pfc_inject(&f.side[0], 0xffff);
    VHCA_LINK_WAIT_UNTIL(&f.link, pfc_counter(&f.side[0],
                                              VHCA_PFC_CNT_RX_PAUSE,
                                              PFC_PRIO) == 1,
                         1, "the pause frame");
    t0 = f.link.clock_ns;
    pfc_write(&p3, SEND_ID(3), sbuf, skey, rbuf, rkey);
    pfc_write(&p0, SEND_ID(0), sbuf + 4096, skey, rbuf + 4096, rkey);
    /* Priority 0 goes; priority 3 sends nothing meanwhile. */
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(0), p0.qp[0].qpn, NULL);
    g_assert_cmpint(f.link.clock_ns - t0, <, 1342157);
    g_assert_cmpuint(frames_to_qp(&f, 0, p3.qp[1].qpn, NULL), ==, 0);
    g_assert_cmpuint(frames_to_qp(&f, 0, p0.qp[1].qpn, NULL), ==, 4);
    /* XON: at once. */
    pfc_inject(&f.side[0], 0);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(3), p3.qp[0].qpn, NULL);
    g_assert_cmpuint(frames_to_qp(&f, 0, p3.qp[1].qpn, NULL), ==, 4);
    buf_check(&f.side[1], rbuf, 2 * 4096, 11);
    g_assert_cmpuint(pfc_counter(&f.side[0], VHCA_PFC_CNT_RX_PAUSE_TRANSITION,
                                 PFC_PRIO), ==, 1);

    /* 1000 quanta: held 20.48 us of virtual time, then by itself. */
    vhca_link_clear_frames(&f.link);
    vhca_link_sync_clock(&f.link);
    pfc_inject(&f.side[0], 1000);
    VHCA_LINK_WAIT_UNTIL(&f.link, pfc_counter(&f.side[0],
                                              VHCA_PFC_CNT_RX_PAUSE,
                                              PFC_PRIO) == 3,
                         1, "the second pause frame");
    t0 = f.link.clock_ns;
    pfc_write(&p3, SEND_ID(4), sbuf + 2 * 4096, skey, rbuf + 2 * 4096, rkey);
    expect_cqe(&f, &f.side[0], &f.side[0].scq, VHCA_WC_SUCCESS,
               VHCA_WC_RDMA_WRITE, SEND_ID(4), p3.qp[0].qpn, NULL);
    g_assert_cmpuint(frames_to_qp(&f, 0, p3.qp[1].qpn, &first), ==, 4);
    g_assert_cmpint(first - t0, >=, 20480);
    g_assert_cmpuint(pfc_counter(&f.side[0], VHCA_PFC_CNT_RX_PAUSE_TRANSITION,
                                 PFC_PRIO), ==, 2);
    /* Both pauses took time: 20 us and more in all. */
    g_assert_cmpuint(pfc_counter(&f.side[0], VHCA_PFC_CNT_RX_PAUSE_DURATION,
                                 PFC_PRIO), >=, 20);
    fabric_down(&f);
}

static void test_hostile_frames(void)
{
    Fabric f;
    Conn by;
    uint64_t sbuf, rbuf;
    uint32_t skey, rkey;
    g_autofree uint8_t *frame = g_malloc(VHCA_ETH_MAX_FRAME);

    fabric_up(&f, 0);
    /* Function 1 takes Ethernet frames, with no buffer to put them in. */
    vhca_eth_setup(f.side[1].d, 3, 3, 2048,
                   VHCA_ETH_CTRL_TX_ENABLE | VHCA_ETH_CTRL_RX_ENABLE);
    conn_make(&by, &f.side[0], &f.side[1], &conf_default);
    sbuf = buf_alloc(&f.side[0], 4096);
    skey = mr_phys(&f.side[0], sbuf, 4096, 0);
    rbuf = buf_alloc(&f.side[1], 4096);
    rkey = mr_phys(&f.side[1], rbuf, 4096, VHCA_ACCESS_LOCAL_WRITE);

    for (unsigned k = 0; k < H_MAX; k++) {
        const HostileCase *hc = &hostile_cases[k];
        VhcaTestDev *d = f.side[1].d;
        uint64_t before[VHCA_CNT_MAX];
        uint64_t dropped, roce;
        Conn v;
        size_t len;

        g_test_message("case %s", hc->name);
        /* A fresh connection for each case: its QP is the target. */
        conn_make(&v, &f.side[0], &f.side[1], &conf_default);
        settle(&f);
        for (unsigned c = 0; c < VHCA_CNT_MAX; c++) {
            before[c] = vhca_counter(d, c);
        }
        len = hostile_frame(k, v.qp[1].qpn, frame, VHCA_ETH_MAX_FRAME);
        vhca_wire_send(d, frame, len);
        VHCA_LINK_WAIT_UNTIL(&f.link,
                             vhca_counter(d, hc->counter) > before[hc->counter],
                             STEP_NS, hc->name);
        settle(&f);

        g_assert_cmpuint(vhca_counter(d, hc->counter) - before[hc->counter],
                         ==, 1);
        roce = vhca_counter(d, VHCA_CNT_ROCE_RX_PACKETS) -
               before[VHCA_CNT_ROCE_RX_PACKETS];
        dropped = vhca_counter(d, VHCA_CNT_ROCE_RX_DROPPED) -
                  before[VHCA_CNT_ROCE_RX_DROPPED];
        g_assert_cmpuint(roce, ==, hc->roce);
        /* A DROP_* reason counts in the sum too; the rest drop nothing. */
        g_assert_cmpuint(dropped, ==,
                         hc->counter >= VHCA_CNT_DROP(0) ? 1 : 0);
        g_assert_cmpuint(qp_state(&f.side[1], &v.qp[1]), ==, hc->state);
        /* The frame completed nothing on function 1. */
        expect_cq_empty(&f, &f.side[1], &f.side[1].rcq);
        expect_cq_empty(&f, &f.side[1], &f.side[1].scq);

        hostile_bystander_send(&f, &by, k + 1, sbuf, skey, rbuf, rkey);
        g_assert_cmpuint(qp_state(&f.side[1], &by.qp[1]), ==, VHCA_QPS_RTS);
        frames_reset(&f);
    }
    fabric_down(&f);
}

int main(int argc, char **argv)
{
    static const uint8_t mtus[] = {
        VHCA_IB_MTU_256, VHCA_IB_MTU_1024, VHCA_IB_MTU_4096,
    };
    static const uint8_t rnr_retries[] = { 0, 1, 3 };
    static const uint8_t retry_cnts[] = { 0, 2 };

    vhca_test_init(&argc, &argv);
    vhca_add_test("/vhca/rc/link/parser-knows-rxe", test_parser_knows_rxe);
    vhca_add_test("/vhca/rc/link/faults", test_link_faults);
    vhca_add_data_test("/vhca/rc/send", GINT_TO_POINTER(0), test_send);
    vhca_add_data_test("/vhca/rc/send-with-imm", GINT_TO_POINTER(1),
                       test_send);
    vhca_add_data_test("/vhca/rc/rdma-write", GINT_TO_POINTER(0),
                       test_rdma_write);
    vhca_add_data_test("/vhca/rc/rdma-write-with-imm", GINT_TO_POINTER(1),
                       test_rdma_write);
    vhca_add_test("/vhca/rc/rdma-read", test_rdma_read);
    vhca_add_test("/vhca/rc/fast-reg", test_fast_reg);
    vhca_add_test("/vhca/rc/mw-type2", test_mw_type2);
    vhca_add_test("/vhca/rc/atomics", test_atomics);
    vhca_add_test("/vhca/rc/flush-atomic-write", test_placement_ops);
    for (unsigned i = 0; i < ARRAY_SIZE(mtus); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/rc/multi-packet/%u",
                                                128u << mtus[i]);

        vhca_add_data_test(path, GINT_TO_POINTER(mtus[i]),
                           test_multi_packet);
    }
    vhca_add_test("/vhca/rc/one-mib", test_one_mib);
    vhca_add_test("/vhca/rc/sge-lists", test_sge_lists);
    vhca_add_test("/vhca/rc/inline", test_inline_send);
    vhca_add_test("/vhca/rc/unsignalled", test_unsignalled);
    vhca_add_test("/vhca/rc/error/bad-lkey", test_bad_lkey);
    vhca_add_test("/vhca/rc/error/read-into-readonly",
                  test_read_into_readonly);
    for (int k = 0; k < RF_MAX; k++) {
        g_autofree char *path = g_strdup_printf("/vhca/rc/error/remote/%s",
                                                remote_fault_name[k]);

        vhca_add_data_test(path, GINT_TO_POINTER(k), test_remote_access);
    }
    vhca_add_test("/vhca/rc/error/recv-too-small", test_recv_too_small);
    for (int k = 0; k < MF_MAX; k++) {
        g_autofree char *path = g_strdup_printf("/vhca/rc/error/malformed/%s",
                                                malformed_name[k]);

        vhca_add_data_test(path, GINT_TO_POINTER(k), test_malformed_wqe);
    }
    for (unsigned i = 0; i < ARRAY_SIZE(rnr_retries); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/rc/rnr/retry-%u",
                                                rnr_retries[i]);

        vhca_add_data_test(path, GINT_TO_POINTER(rnr_retries[i]),
                           test_rnr_exceeded);
    }
    vhca_add_test("/vhca/rc/rnr/recovers", test_rnr_recovers);
    for (unsigned i = 0; i < ARRAY_SIZE(retry_cnts); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/rc/timeout/retry-%u",
                                                retry_cnts[i]);

        vhca_add_data_test(path, GINT_TO_POINTER(retry_cnts[i]),
                           test_retry_exceeded);
    }
    for (unsigned i = 0; i < ARRAY_SIZE(fault_sets); i++) {
        g_autofree char *path = g_strdup_printf("/vhca/rc/faults/%s",
                                                fault_sets[i].name);

        vhca_add_data_test(path, &fault_sets[i], test_faults);
    }
    vhca_add_test("/vhca/rc/duplicate-requests", test_duplicate_requests);
    vhca_add_data_test("/vhca/rc/corrupt/request", GINT_TO_POINTER(0),
                       test_corrupt);
    vhca_add_data_test("/vhca/rc/corrupt/ack", GINT_TO_POINTER(1),
                       test_corrupt);
    vhca_add_test("/vhca/rc/initiator-depth", test_initiator_depth);
    vhca_add_test("/vhca/rc/solicited-event", test_solicited_event);
    vhca_add_test("/vhca/rc/loopback", test_loopback);
    vhca_add_test("/vhca/rc/srq-loopback", test_srq_loopback);
    vhca_add_test("/vhca/rc/xrc-loopback", test_xrc_loopback);
    vhca_add_test("/vhca/rc/wire-format", test_wire_format);
    vhca_add_test("/vhca/rc/hostile-frames", test_hostile_frames);
    vhca_add_test("/vhca/rc/pfc-pause", test_pfc_pause);
    return g_test_run();
}
