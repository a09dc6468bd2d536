/*
 * Unit test helpers shared by the transport tests; see vhca-node.h.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <string.h>

#include "vhca-mad.h"
#include "vhca-node.h"
#include "vhca-wire.h"

void node_init(Node *n, uint8_t id, uint8_t qp_type)
{
    node_init_cfg(n, id, qp_type, &harness_default_cfg);
}

void node_init_cfg(Node *n, uint8_t id, uint8_t qp_type,
                   const VhcaCoreConfig *base)
{
    VhcaCoreConfig cfg = *base;

    cfg.mac[5] = 0x50 + id;
    memset(n, 0, sizeof(*n));
    n->h = harness_new(&cfg);
    harness_enable(n->h);
    if (cfg.link == VHCA_LINK_IB) {
        /* The IB port's one GID: the subnet prefix and its port GUID. */
        memcpy(n->gid, n->h->core.gid_tbl[0].gid, sizeof(n->gid));
    } else {
        gid_from_ipv4(n->gid, 10, 0, 0, id);
        g_assert_cmpuint(add_gid(n->h, 0, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                 n->gid), ==, VHCA_ST_OK);
    }
    n->page = rdma_alloc_uctx(n->h);
    n->pdn = rdma_create_pd(n->h);
    n->eqn = rdma_create_eq(n->h, 6, 2, NULL);
    g_assert_cmpuint(rdma_create_cq(n->h, &n->scq, 8, n->eqn, n->page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_cq(n->h, &n->rcq, 8, n->eqn, n->page), ==,
                     VHCA_ST_OK);
    g_assert_cmpuint(rdma_create_qp(n->h, &n->qp, qp_type, n->pdn,
                                    n->scq.cqn, n->rcq.cqn, n->page), ==,
                     VHCA_ST_OK);
    n->buf = rdma_alloc(n->h, DATA_PAGES);
    n->key = rdma_create_phys_mr(n->h, n->pdn, n->buf, DATA_PAGES * 4096,
                                 ACCESS_ALL);
}

uint32_t node_fast_mr(Node *n, uint32_t max_pages, uint8_t tag)
{
    struct vhca_mr_create c;
    uint32_t index = 0, key = 0;

    memset(&c, 0, sizeof(c));
    c.pdn = GUINT32_TO_LE(n->pdn);
    c.npages = GUINT32_TO_LE(max_pages);
    c.flags = GUINT16_TO_LE(VHCA_MR_FAST_REG);
    c.key_tag = GUINT32_TO_LE(tag);
    g_assert_cmpuint(rdma_cmd(n->h, VHCA_CMD_CREATE_MR, &c, sizeof(c),
                              &index, &key), ==, VHCA_ST_OK);
    g_assert_cmpuint(key, ==, index << 8 | tag);
    return key;
}

uint64_t wqe_reg_mr(Node *n, struct vhca_send_wqe *w, uint64_t wr_id,
                    uint32_t key, uint32_t off, uint32_t npages,
                    uint64_t iova, uint64_t len, uint32_t access)
{
    uint64_t pbl = rdma_pbl(n->h, n->buf + off, npages, false);

    wqe_init(w, wr_id, VHCA_WR_REG_MR, VHCA_WQE_SIGNALED);
    w->imm_or_inv = GUINT32_TO_LE(key);
    w->mr_iova = GUINT64_TO_LE(iova);
    w->mr_length = GUINT64_TO_LE(len);
    w->mr_pbl_addr = GUINT64_TO_LE(pbl);
    w->mr_npages = GUINT32_TO_LE(npages);
    w->mr_access = GUINT32_TO_LE(access);
    w->mr_page_shift = 12;
    return pbl;
}

static uint8_t qp_modify_to(Harness *h, struct vhca_qp_attr *a,
                            uint8_t state, uint32_t mask)
{
    a->qp_state = state;
    a->attr_mask = VHCA_QP_STATE | mask;
    return rdma_modify_qp(h, a);
}

void qp_modify_ok(Harness *h, struct vhca_qp_attr *a, uint8_t state,
                  uint32_t mask)
{
    g_assert_cmpuint(qp_modify_to(h, a, state, mask), ==, VHCA_ST_OK);
}

void qp_reset(Harness *h, uint32_t qpn, TestQp *qp)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    if (qp_modify_to(h, &a, VHCA_QPS_RESET, 0) == VHCA_ST_OK && qp) {
        qp->sq_pi = qp->rq_pi = 0;
    }
}

/* ---------------------------------------------------------------------- */
/* Two connected RC nodes                                                 */
/* ---------------------------------------------------------------------- */

const ConnOpts default_opts = {
    .mtu = VHCA_IB_MTU_1024,
    .a_psn = 0x100,
    .b_psn = 0x200000,
    .timeout = 14,                  /* 67 ms */
    .retry_cnt = 7,
    .rnr_retry = 7,
    .min_rnr_timer = 1,             /* 10 us */
    .max_rd = 16,
    .max_dest_rd = 16,
    .access = VHCA_ACCESS_REMOTE_WRITE | VHCA_ACCESS_REMOTE_READ |
              VHCA_ACCESS_REMOTE_ATOMIC,
};

/*
 * RESET -> INIT -> RTR -> RTS with the path @path carries (its AV
 * fields: RoCE's GID and MAC, or the IB port's LID).  Returns the status
 * of the first step that failed, VHCA_ST_OK if none did.
 */
static uint8_t qp_try_connect_path(Harness *h, uint32_t qpn,
                                   const struct vhca_qp_attr *path,
                                   uint32_t dest_qpn, const ConnOpts *o,
                                   uint32_t sq_psn, uint32_t rq_psn)
{
    struct vhca_qp_attr a;
    uint8_t st;

    memset(&a, 0, sizeof(a));
    a.qpn = qpn;
    a.port = 1;
    a.qp_access_flags = o->access;
    st = qp_modify_to(h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                      VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS);
    if (st != VHCA_ST_OK) {
        return st;
    }
    a.sgid_index = path->sgid_index;
    a.hop_limit = path->hop_limit;
    a.traffic_class = path->traffic_class;
    a.sl = path->sl;
    memcpy(a.dgid, path->dgid, sizeof(a.dgid));
    memcpy(a.dmac, path->dmac, sizeof(a.dmac));
    a.dlid = path->dlid;
    a.path_mtu = o->mtu;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = o->max_dest_rd;
    a.min_rnr_timer = o->min_rnr_timer;
    st = qp_modify_to(h, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                      VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                      VHCA_QP_MAX_DEST_RD_ATOMIC | VHCA_QP_MIN_RNR_TIMER);
    if (st != VHCA_ST_OK) {
        return st;
    }
    a.timeout = o->timeout;
    a.retry_cnt = o->retry_cnt;
    a.rnr_retry = o->rnr_retry;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = o->max_rd;
    return qp_modify_to(h, &a, VHCA_QPS_RTS, VHCA_QP_TIMEOUT |
                        VHCA_QP_RETRY_CNT | VHCA_QP_RNR_RETRY |
                        VHCA_QP_SQ_PSN | VHCA_QP_MAX_QP_RD_ATOMIC);
}

void qp_connect_path(Harness *h, uint32_t qpn,
                     const struct vhca_qp_attr *path, uint32_t dest_qpn,
                     const ConnOpts *o, uint32_t sq_psn, uint32_t rq_psn)
{
    g_assert_cmpuint(qp_try_connect_path(h, qpn, path, dest_qpn, o, sq_psn,
                                         rq_psn), ==, VHCA_ST_OK);
}

void qp_connect(Harness *h, uint32_t qpn, const uint8_t *dgid,
                const uint8_t *dmac, uint32_t dest_qpn, const ConnOpts *o,
                uint32_t sq_psn, uint32_t rq_psn)
{
    struct vhca_qp_attr path;

    memset(&path, 0, sizeof(path));
    path.hop_limit = 64;
    memcpy(path.dgid, dgid, sizeof(path.dgid));
    memcpy(path.dmac, dmac, sizeof(path.dmac));
    qp_connect_path(h, qpn, &path, dest_qpn, o, sq_psn, rq_psn);
}

uint8_t node_ib_mad(Node *n, uint8_t flags, const uint8_t *in, uint8_t *out)
{
    const uint64_t mbox_addr = rdma_alloc(n->h, 1);
    struct vhca_cmd_dma_in cmd = {
        .addr = GUINT64_TO_LE(mbox_addr),
        .len = GUINT32_TO_LE(sizeof(struct vhca_mad_ifc)),
    };
    struct vhca_mad_ifc mbox;
    uint8_t result[16];

    memset(&mbox, 0, sizeof(mbox));
    mbox.port = 1;
    mbox.flags = flags;
    memcpy(mbox.in_mad, in, VHCA_MAD_SIZE);
    ram_write(n->h, mbox_addr, &mbox, sizeof(mbox));
    g_assert_cmpuint(admin_cmd(n->h, VHCA_CMD_MAD_IFC, 0x534d, &cmd,
                               sizeof(cmd), result), ==, VHCA_ST_OK);
    ram_read(n->h, mbox_addr, &mbox, sizeof(mbox));
    memcpy(out, mbox.out_mad, VHCA_MAD_SIZE);
    return result[0];
}

void node_ib_smp_set(Node *n, uint8_t flags, uint16_t attr, uint32_t mod,
                     const uint8_t *data)
{
    uint8_t mad[VHCA_MAD_SIZE] = { 0 };
    uint8_t out[VHCA_MAD_SIZE];

    mad[VHCA_MAD_BASE_VERSION] = VHCA_MAD_BASE_VERSION_IB;
    mad[VHCA_MAD_MGMT_CLASS] = 0x01;            /* SMP, LID routed */
    mad[VHCA_MAD_CLASS_VERSION] = 1;
    mad[VHCA_MAD_METHOD] = VHCA_MAD_METHOD_SET;
    vhca_st_be16(mad + VHCA_MAD_ATTR_ID, attr);
    vhca_st_be32(mad + VHCA_MAD_ATTR_MOD, mod);
    memcpy(mad + VHCA_SMP_DATA, data, VHCA_SMP_DATA_LEN);
    g_assert_cmpuint(node_ib_mad(n, flags, mad, out), ==,
                     VHCA_MAD_RESULT_REPLY);
    g_assert_cmphex(vhca_ld_be16(out + VHCA_MAD_STATUS), ==, 0);
}

void node_ib_smi_qp(Node *n, TestQp *smi)
{
    struct vhca_qp_attr a;

    g_assert_cmpuint(rdma_create_qp(n->h, smi, VHCA_QPT_SMI, n->pdn,
                                    n->scq.cqn, n->rcq.cqn, n->page), ==,
                     VHCA_ST_OK);
    memset(&a, 0, sizeof(a));
    a.qpn = smi->qpn;
    qp_modify_ok(n->h, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX | VHCA_QP_QKEY);
    qp_modify_ok(n->h, &a, VHCA_QPS_RTR, 0);
    qp_modify_ok(n->h, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN);
}

void node_ib_set_port(Node *n, uint16_t lid, uint16_t sm_lid, uint8_t state)
{
    uint8_t pi[VHCA_SMP_DATA_LEN];

    /* 14.2.5.6: PortState and PortPhysicalState 0 mean "no change". */
    memset(pi, 0, sizeof(pi));
    vhca_mad_set(pi, VHCA_PI_LID, lid);
    vhca_mad_set(pi, VHCA_PI_MASTER_SM_LID, sm_lid);
    vhca_mad_set(pi, VHCA_PI_NEIGHBOR_MTU, VHCA_IB_MTU_4096);
    vhca_mad_set(pi, VHCA_PI_OPERATIONAL_VLS, 1);
    vhca_mad_set(pi, VHCA_PI_PORT_STATE, VHCA_PORT_ARMED);
    node_ib_smp_set(n, VHCA_MAD_IFC_LOCAL, VHCA_SMP_ATTR_PORT_INFO, 1, pi);
    if (state == VHCA_PORT_ACTIVE) {
        vhca_mad_set(pi, VHCA_PI_PORT_STATE, VHCA_PORT_ACTIVE);
        node_ib_smp_set(n, VHCA_MAD_IFC_LOCAL, VHCA_SMP_ATTR_PORT_INFO, 1,
                        pi);
    }
    g_assert_cmpuint(n->h->core.ib.state, ==, state);
    g_assert_cmpuint(n->h->core.ib.lid, ==, lid);
}

void node_ib_pkey(Node *n, uint16_t index, uint16_t pkey)
{
    uint8_t block[VHCA_SMP_DATA_LEN];
    unsigned i;

    /* A block of 32 entries (14.2.5.7): the others as they are. */
    for (i = 0; i < 32; i++) {
        vhca_st_be16(block + 2 * i,
                     n->h->core.ib.pkeys[(index & ~31u) + i]);
    }
    vhca_st_be16(block + 2 * (index & 31), pkey);
    node_ib_smp_set(n, VHCA_MAD_IFC_LOCAL, VHCA_SMP_ATTR_PKEY_TABLE,
                    index / 32, block);
}

uint8_t qp_try_connect_lid(Harness *h, uint32_t qpn, uint16_t dlid,
                           uint32_t dest_qpn, const ConnOpts *o,
                           uint32_t sq_psn, uint32_t rq_psn)
{
    struct vhca_qp_attr path;

    memset(&path, 0, sizeof(path));
    path.dlid = dlid;
    return qp_try_connect_path(h, qpn, &path, dest_qpn, o, sq_psn, rq_psn);
}

void qp_connect_lid(Harness *h, uint32_t qpn, uint16_t dlid,
                    uint32_t dest_qpn, const ConnOpts *o, uint32_t sq_psn,
                    uint32_t rq_psn)
{
    g_assert_cmpuint(qp_try_connect_lid(h, qpn, dlid, dest_qpn, o, sq_psn,
                                        rq_psn), ==, VHCA_ST_OK);
}

void ib_frame_fix_crcs(uint8_t *frame, size_t len)
{
    uint32_t icrc;
    uint16_t vcrc;

    if (len < VHCA_IB_LRH_LEN + VHCA_IB_BTH_LEN + VHCA_IB_ICRC_LEN +
              VHCA_IB_VCRC_LEN) {
        return;
    }
    icrc = vhca_ib_icrc(frame, (frame[1] & 3) == VHCA_IB_LNH_GLOBAL,
                        len - VHCA_IB_ICRC_LEN - VHCA_IB_VCRC_LEN);
    frame[len - 6] = icrc;
    frame[len - 5] = icrc >> 8;
    frame[len - 4] = icrc >> 16;
    frame[len - 3] = icrc >> 24;
    vcrc = vhca_vcrc(frame, len - VHCA_IB_VCRC_LEN);
    frame[len - 2] = vcrc;
    frame[len - 1] = vcrc >> 8;
}

void roce_frame_fix_crcs(uint8_t *frame, size_t len)
{
    const size_t l3 = 14;
    uint8_t *ip = frame + l3;
    bool ipv6;
    size_t ip_hlen;
    uint32_t sum = 0, icrc;
    size_t i;

    if (len < l3 + 40 || (ip[0] >> 4 != 4 && ip[0] >> 4 != 6)) {
        return;
    }
    ipv6 = ip[0] >> 4 == 6;
    ip_hlen = ipv6 ? 40 : (size_t)(ip[0] & 0xf) * 4;
    if (ip_hlen < 20 || len < l3 + ip_hlen + 8 + VHCA_IB_BTH_LEN +
                              VHCA_IB_ICRC_LEN) {
        return;
    }
    if (!ipv6) {
        /* RFC 791 header checksum, RFC 1071's sum. */
        ip[10] = ip[11] = 0;
        for (i = 0; i < ip_hlen; i += 2) {
            sum += (uint32_t)ip[i] << 8 | ip[i + 1];
        }
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10] = (uint8_t)(~sum >> 8);
        ip[11] = (uint8_t)~sum;
    }
    icrc = vhca_icrc(ip, ip_hlen, ipv6, len - l3 - VHCA_IB_ICRC_LEN);
    frame[len - 4] = icrc;
    frame[len - 3] = icrc >> 8;
    frame[len - 2] = icrc >> 16;
    frame[len - 1] = icrc >> 24;
}

void cc_config_default(struct vhca_cc_config *c)
{
    VhcaDcqcnParams params;
    const uint32_t *p = (const uint32_t *)&params;
    unsigned i;

    memset(c, 0, sizeof(*c));
    vhca_dcqcn_params_default(&params);
    for (i = 0; i < VHCA_CC_PARAM_MAX; i++) {
        c->params[i] = GUINT32_TO_LE(p[i]);
    }
}

void set_cc(Harness *h, uint32_t flags, const CcParam *over,
                   unsigned n)
{
    struct vhca_cc_config c;
    unsigned i;

    cc_config_default(&c);
    c.flags = GUINT32_TO_LE(flags);
    for (i = 0; i < n; i++) {
        c.params[over[i].id] = GUINT32_TO_LE(over[i].value);
    }
    g_assert_cmpuint(rdma_cmd(h, VHCA_CMD_SET_CC, &c, sizeof(c), NULL, NULL),
                     ==, VHCA_ST_OK);
}

void pair_init_ib(Pair *p, const ConnOpts *o)
{
    VhcaCoreConfig cfg = harness_default_cfg;

    cfg.link = VHCA_LINK_IB;
    node_init_cfg(&p->a, 1, VHCA_QPT_RC, &cfg);
    node_init_cfg(&p->b, 2, VHCA_QPT_RC, &cfg);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    node_ib_set_port(&p->a, 1, 1, VHCA_PORT_ACTIVE);
    node_ib_set_port(&p->b, 2, 1, VHCA_PORT_ACTIVE);
    qp_connect_lid(p->a.h, p->a.qp.qpn, 2, p->b.qp.qpn, o, o->a_psn,
                   o->b_psn);
    qp_connect_lid(p->b.h, p->b.qp.qpn, 1, p->a.qp.qpn, o, o->b_psn,
                   o->a_psn);
}

void pair_init(Pair *p, const ConnOpts *o)
{
    node_init(&p->a, 1, VHCA_QPT_RC);
    node_init(&p->b, 2, VHCA_QPT_RC);
    p->a.h->peer = p->b.h;
    p->b.h->peer = p->a.h;
    qp_connect(p->a.h, p->a.qp.qpn, p->b.gid, p->b.h->core.cfg.mac,
               p->b.qp.qpn, o, o->a_psn, o->b_psn);
    qp_connect(p->b.h, p->b.qp.qpn, p->a.gid, p->a.h->core.cfg.mac,
               p->a.qp.qpn, o, o->b_psn, o->a_psn);
}

void pair_free(Pair *p)
{
    harness_free(p->a.h);
    harness_free(p->b.h);
}

/* ---------------------------------------------------------------------- */
/* Work requests and completions                                          */
/* ---------------------------------------------------------------------- */

void wqe_init(struct vhca_send_wqe *w, uint64_t wr_id, uint8_t opcode,
              uint8_t flags)
{
    memset(w, 0, sizeof(*w));
    w->wr_id = GUINT64_TO_LE(wr_id);
    w->opcode = opcode;
    w->flags = flags;
}

void wqe_sge(struct vhca_send_wqe *w, uint64_t addr, uint32_t len,
             uint32_t lkey)
{
    struct vhca_sge *s = &w->sge[w->num_sge++];

    s->addr = GUINT64_TO_LE(addr);
    s->length = GUINT32_TO_LE(len);
    s->lkey = GUINT32_TO_LE(lkey);
}

void wqe_remote(struct vhca_send_wqe *w, uint64_t addr, uint32_t rkey)
{
    w->remote_addr = GUINT64_TO_LE(addr);
    w->rkey = GUINT32_TO_LE(rkey);
}

/* A WQE with one SGE of [n->buf + off, +len) and the remote address. */
void post(Node *n, uint64_t wr_id, uint8_t opcode, uint8_t flags,
          uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct vhca_send_wqe w;

    wqe_init(&w, wr_id, opcode, flags);
    if (len) {
        wqe_sge(&w, n->buf + off, len, n->key);
    }
    wqe_remote(&w, raddr, rkey);
    qp_put_send_wqe(n->h, &n->qp, &w);
}


void ring_sq(Node *n)
{
    ring_doorbell(n->h, n->page, VHCA_DB_SQ, n->qp.qpn, n->qp.sq_pi);
}

void post_recv(Node *n, uint64_t wr_id, uint32_t off, uint32_t len)
{
    struct vhca_recv_wqe w;

    memset(&w, 0, sizeof(w));
    w.wr_id = GUINT64_TO_LE(wr_id);
    w.num_sge = 1;
    w.sge[0].addr = GUINT64_TO_LE(n->buf + off);
    w.sge[0].length = GUINT32_TO_LE(len);
    w.sge[0].lkey = GUINT32_TO_LE(n->key);
    qp_put_recv_wqe(n->h, &n->qp, &w);
    ring_doorbell(n->h, n->page, VHCA_DB_RQ, n->qp.qpn, n->qp.rq_pi);
}

struct vhca_cqe expect_cqe(Node *n, TestCq *cq, uint64_t wr_id,
                           uint8_t status, uint8_t opcode)
{
    struct vhca_cqe cqe;

    g_assert_true(cq_poll(n->h, cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    g_assert_cmpuint(cqe.qpn, ==, n->qp.qpn);
    return cqe;
}

void expect_no_cqe(Node *n, TestCq *cq)
{
    struct vhca_cqe cqe;

    g_assert_false(cq_poll(n->h, cq, &cqe));
}

void fill(Node *n, uint32_t off, uint32_t len, uint32_t seed)
{
    uint8_t *p = ram_ptr(n->h, n->buf + off, len);
    uint32_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 8));
    }
}

void expect_same(Node *x, uint32_t xoff, Node *y, uint32_t yoff,
                 uint32_t len)
{
    g_assert_cmpmem(ram_ptr(x->h, x->buf + xoff, len), len,
                    ram_ptr(y->h, y->buf + yoff, len), len);
}


/* Consume every async event so far; returns the producer index. */
uint32_t aeq_drain(Harness *h)
{
    uint32_t pi = reg_read(h, VHCA_REG_AEQ_PI);

    reg_write(h, VHCA_REG_AEQ_DB, pi);
    return pi;
}

/* Was QP event @event for @qpn posted at or after @from? */
bool qp_event_since(Harness *h, uint32_t from, uint8_t event,
                    uint32_t qpn)
{
    uint32_t pi = reg_read(h, VHCA_REG_AEQ_PI);

    g_assert_cmpuint(pi - from, <=, 1u << AEQ_LOG);
    for (; from != pi; from++) {
        struct vhca_eqe e = aeq_entry(h, from);

        if (e.type == VHCA_EQE_QP_EVENT && e.subtype == event &&
            GUINT32_FROM_LE(e.data[0]) == qpn) {
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------- */
/* Wire fault injection                                                   */
/* ---------------------------------------------------------------------- */


/* VHCA_RC_TRACE=1: one line per frame on the wire. */
static void wire_trace(Harness *h, const uint8_t *buf, size_t len,
                       const char *verdict)
{
    VhcaWirePacket pkt;

    if (!g_getenv("VHCA_RC_TRACE") ||
        vhca_wire_parse(buf, len, &pkt) != VHCA_WIRE_OK) {
        return;
    }
    g_printerr("t=%" G_GUINT64_FORMAT " %s %s psn 0x%06x%s aeth 0x%02x "
               "len %u %s\n", h->now_ns, h->core.cfg.mac[5] == 0x51 ?
               "a->b" : "b->a",
               vhca_wire_opcode_info(pkt.tp.bth.opcode)->name,
               pkt.tp.bth.psn, pkt.tp.bth.ack_req ? " A" : "",
               pkt.tp.aeth.syndrome, pkt.payload_len, verdict);
}

static bool wire_faulty(const Wire *w)
{
    return !w->calm_after || w->count <= w->calm_after;
}

static bool wire_drops(Wire *w)
{
    if (!wire_faulty(w)) {
        return false;
    }
    return w->drop_all || w->count == w->drop_nth ||
           (w->drop_every && w->count % w->drop_every == 0) ||
           (w->burst_every && w->count > w->burst_phase &&
            (w->count - w->burst_phase - 1) % w->burst_every <
            w->burst_len) ||
           (w->rand && w->loss > 0 && g_rand_double(w->rand) < w->loss);
}

/*
 * Reordering: the frame joins the window; while the window holds more
 * than w->reorder frames, a random one of them leaves.  Removed before
 * delivery, since delivering may send (and so re-enter the hook).
 */
static void wire_reorder(Wire *w, const uint8_t *buf, size_t len)
{
    if (!w->window) {
        w->window = g_ptr_array_new_with_free_func(
            (GDestroyNotify)g_bytes_unref);
    }
    g_ptr_array_add(w->window, g_bytes_new(buf, len));
    while (w->window->len > w->reorder) {
        guint i = g_rand_int_range(w->rand, 0, w->window->len);
        GBytes *b = g_ptr_array_steal_index(w->window, i);
        gsize n;
        const uint8_t *d = g_bytes_get_data(b, &n);

        w->reordered += i != 0;         /* it overtakes the oldest */
        harness_deliver(w->to, d, n);
        g_bytes_unref(b);
    }
}

unsigned wire_flush(Wire *w)
{
    unsigned n = 0;
    unsigned keep = w->reorder;

    if (!w->window) {
        return 0;
    }
    w->reorder = 0;
    n = w->window->len;
    while (w->window->len) {
        guint i = g_rand_int_range(w->rand, 0, w->window->len);
        GBytes *b = g_ptr_array_steal_index(w->window, i);
        gsize len;
        const uint8_t *d = g_bytes_get_data(b, &len);

        w->reordered += i != 0;
        harness_deliver(w->to, d, len);
        g_bytes_unref(b);
    }
    w->reorder = keep;
    return n;
}

void wire_free(Wire *w)
{
    if (w->window) {
        g_ptr_array_free(w->window, true);
        w->window = NULL;
    }
}

void wire_hook(Harness *h, const uint8_t *buf, size_t len)
{
    Wire *w = h->tx_hook_opaque;
    unsigned copies, i;

    w->count++;
    w->to = h->peer;
    memcpy(w->last, buf, len);
    w->last_len = len;
    if (wire_drops(w)) {
        w->dropped++;
        wire_trace(h, buf, len, "DROP");
        return;
    }
    wire_trace(h, buf, len, "pass");
    if (w->count == w->hold_nth) {
        memcpy(w->held, buf, len);
        w->held_len = len;
        return;
    }
    copies = 1;
    if (wire_faulty(w)) {
        copies += w->dup + (w->dup_all ? 1 : 0);
    }
    w->duplicated += copies - 1;
    for (i = 0; i < copies; i++) {
        if (w->reorder && wire_faulty(w)) {
            g_assert_nonnull(w->rand);
            wire_reorder(w, buf, len);
        } else {
            harness_deliver(h->peer, buf, len);
        }
    }
    if (w->held_len) {
        harness_deliver(h->peer, w->held, w->held_len);
        w->held_len = 0;
    }
}

void wire_attach(Node *n, Wire *w)
{
    n->h->tx_hook = wire_hook;
    n->h->tx_hook_opaque = w;
}
