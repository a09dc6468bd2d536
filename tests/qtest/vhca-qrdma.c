/*
 * vhca qtest RDMA layer: resource commands, page lists, work requests,
 * doorbells, completion and event rings (docs/specs/vhca.rst "RDMA
 * resources").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "vhca-qrdma.h"

const uint8_t vhca_test_dgid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2,
};
const uint8_t vhca_test_dmac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };

/* ---- memory ------------------------------------------------------------ */

void vhca_pages_alloc(VhcaTestDev *d, VhcaPages *p, size_t bytes)
{
    uint32_t npages = DIV_ROUND_UP(bytes, VHCA_TEST_PAGE_SIZE);
    g_autofree uint64_t *pbl = g_new(uint64_t, npages);

    g_assert_cmpuint(npages, >, 0);
    /* The pc allocator hands out page-aligned, contiguous blocks. */
    p->addr = guest_alloc(&d->alloc, (size_t)npages * VHCA_TEST_PAGE_SIZE);
    g_assert_cmphex(p->addr & (VHCA_TEST_PAGE_SIZE - 1), ==, 0);
    p->npages = npages;
    qtest_memset(d->qts, p->addr, 0, (size_t)npages * VHCA_TEST_PAGE_SIZE);
    for (uint32_t i = 0; i < npages; i++) {
        pbl[i] = cpu_to_le64(p->addr + (uint64_t)i * VHCA_TEST_PAGE_SIZE);
    }
    p->pbl = guest_alloc(&d->alloc, npages * sizeof(uint64_t));
    qtest_memwrite(d->qts, p->pbl, pbl, npages * sizeof(uint64_t));
}

/* ---- commands ---------------------------------------------------------- */

uint8_t vhca_cmd_mbox_at(VhcaTestDev *d, uint16_t opcode, const void *mbox,
                         size_t len, void *back,
                         struct vhca_cmd_obj_out *out, const char *where)
{
    uint64_t buf = guest_alloc(&d->alloc, len);
    struct vhca_cmd_dma_in in = {
        .addr = cpu_to_le64(buf),
        .len = cpu_to_le32(len),
    };
    struct vhca_cmd_obj_out o;
    uint8_t status;

    qtest_memwrite(d->qts, buf, mbox, len);
    status = vhca_cmd_exec_at(d, opcode, &in, sizeof(in), &o, where);
    if (back) {
        qtest_memread(d->qts, buf, back, len);
    }
    guest_free(&d->alloc, buf);
    if (out) {
        out->handle = le32_to_cpu(o.handle);
        out->key = le32_to_cpu(o.key);
    }
    return status;
}

uint8_t vhca_cmd_mbox_raw_at(VhcaTestDev *d, uint16_t opcode, uint64_t addr,
                             uint32_t len, const char *where)
{
    struct vhca_cmd_dma_in in = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le32(len),
    };

    return vhca_cmd_exec_at(d, opcode, &in, sizeof(in), NULL, where);
}

uint8_t vhca_cmd_create_pd_at(VhcaTestDev *d, uint32_t *pdn,
                              const char *where)
{
    struct vhca_cmd_obj_out out;
    uint8_t status;

    status = vhca_cmd_exec_at(d, VHCA_CMD_CREATE_PD, NULL, 0, &out, where);
    if (pdn) {
        *pdn = le32_to_cpu(out.handle);
    }
    return status;
}

uint8_t vhca_cmd_create_mr_at(VhcaTestDev *d, const struct vhca_mr_create *c,
                              uint32_t *index, uint32_t *key,
                              const char *where)
{
    struct vhca_cmd_obj_out out;
    uint8_t status;

    status = vhca_cmd_mbox_at(d, VHCA_CMD_CREATE_MR, c, sizeof(*c), NULL,
                              &out, where);
    if (index) {
        *index = out.handle;
    }
    if (key) {
        *key = out.key;
    }
    return status;
}

static uint8_t vhca_cmd_create_obj(VhcaTestDev *d, uint16_t opcode,
                                   const void *c, size_t len,
                                   uint32_t *handle, const char *where)
{
    struct vhca_cmd_obj_out out;
    uint8_t status;

    status = vhca_cmd_mbox_at(d, opcode, c, len, NULL, &out, where);
    if (handle) {
        *handle = out.handle;
    }
    return status;
}

uint8_t vhca_cmd_create_eq_at(VhcaTestDev *d, const struct vhca_eq_create *c,
                              uint32_t *eqn, const char *where)
{
    return vhca_cmd_create_obj(d, VHCA_CMD_CREATE_EQ, c, sizeof(*c), eqn,
                               where);
}

uint8_t vhca_cmd_create_cq_at(VhcaTestDev *d, const struct vhca_cq_create *c,
                              uint32_t *cqn, const char *where)
{
    return vhca_cmd_create_obj(d, VHCA_CMD_CREATE_CQ, c, sizeof(*c), cqn,
                               where);
}

uint8_t vhca_cmd_create_qp_at(VhcaTestDev *d, const struct vhca_qp_create *c,
                              uint32_t *qpn, const char *where)
{
    return vhca_cmd_create_obj(d, VHCA_CMD_CREATE_QP, c, sizeof(*c), qpn,
                               where);
}

uint8_t vhca_cmd_destroy_at(VhcaTestDev *d, uint16_t opcode, uint32_t handle,
                            const char *where)
{
    struct vhca_cmd_obj_in in = { .handle = cpu_to_le32(handle) };

    return vhca_cmd_exec_at(d, opcode, &in, sizeof(in), NULL, where);
}

uint8_t vhca_cmd_modify_qp_at(VhcaTestDev *d, const struct vhca_qp_attr *a,
                              const char *where)
{
    return vhca_cmd_mbox_at(d, VHCA_CMD_MODIFY_QP, a, sizeof(*a), NULL, NULL,
                            where);
}

uint8_t vhca_cmd_query_qp_at(VhcaTestDev *d, uint32_t qpn,
                             struct vhca_qp_attr *a, const char *where)
{
    struct vhca_qp_attr in;

    /* Everything but qpn is garbage: the device writes the whole mailbox. */
    memset(&in, 0x5a, sizeof(in));
    in.qpn = cpu_to_le32(qpn);
    return vhca_cmd_mbox_at(d, VHCA_CMD_QUERY_QP, &in, sizeof(in), a, NULL,
                            where);
}

void vhca_cmd_batch_at(VhcaTestDev *d, unsigned n, uint16_t opcode,
                       const void *in, size_t in_len, uint8_t *statuses,
                       struct vhca_cmd_obj_out *outs, const char *where)
{
    unsigned entries = 1u << d->admq.log_size;
    unsigned chunk_max = MIN(entries, 1u << d->aeq.log_size) / 2;
    g_autofree struct vhca_admin_cmd *ring =
        g_new0(struct vhca_admin_cmd, entries);
    g_autofree struct vhca_eqe *events = g_new0(struct vhca_eqe, chunk_max);
    unsigned done = 0;

    g_assert_cmpuint(chunk_max, >=, 64);
    g_assert_cmpuint(in_len, <=, sizeof(ring[0].in));
    while (done < n) {
        unsigned chunk = MIN(chunk_max, n - done);
        uint32_t first_slot = d->admq.pi & (entries - 1);
        uint32_t first_token = d->next_token;

        /* Whole entries, then one doorbell, as a batching driver does. */
        for (unsigned i = 0; i < chunk; i++) {
            uint32_t slot = (first_slot + i) & (entries - 1);

            memset(&ring[slot], 0, sizeof(ring[slot]));
            ring[slot].opcode = cpu_to_le16(opcode);
            ring[slot].token = cpu_to_le32(first_token + i);
            memcpy(ring[slot].in, in, in_len);
        }
        for (unsigned i = 0; i < chunk;) {
            uint32_t slot = (first_slot + i) & (entries - 1);
            unsigned run = MIN(chunk - i, entries - slot);

            qtest_memwrite(d->qts, d->admq.addr + slot * sizeof(ring[0]),
                           &ring[slot], run * sizeof(ring[0]));
            i += run;
        }
        d->admq.pi += chunk;
        d->next_token += chunk;
        vhca_cmd_ring(d);
        d->admq.ci += chunk;
        vhca_wait_reg_at(d, VHCA_REG_ADMQ_CI, 0xffff, d->admq.ci & 0xffff,
                         "ADMQ_CI after a batch", where);

        for (unsigned i = 0; i < chunk;) {
            uint32_t slot = (first_slot + i) & (entries - 1);
            unsigned run = MIN(chunk - i, entries - slot);

            qtest_memread(d->qts, d->admq.addr + slot * sizeof(ring[0]),
                          &ring[slot], run * sizeof(ring[0]));
            i += run;
        }
        for (unsigned i = 0; i < chunk; i++) {
            struct vhca_admin_cmd *e = &ring[(first_slot + i) & (entries - 1)];

            VHCA_CHECK_EQ(where, "batched command done byte", e->done, 1);
            VHCA_CHECK_EQ(where, "batched command token",
                          le32_to_cpu(e->token), first_token + i);
            statuses[done + i] = e->status;
            if (outs) {
                memcpy(&outs[done + i], e->out, sizeof(outs[0]));
                outs[done + i].handle = le32_to_cpu(outs[done + i].handle);
                outs[done + i].key = le32_to_cpu(outs[done + i].key);
            }
        }
        for (unsigned i = 0; i < chunk; i++) {
            vhca_eq_next_at(d, &events[i], where);
            VHCA_CHECK_EQ(where, "batched event type", events[i].type,
                          VHCA_EQE_CMD_DONE);
            VHCA_CHECK_EQ(where, "batched CMD_DONE token",
                          le32_to_cpu(events[i].data[1]), first_token + i);
            VHCA_CHECK_EQ(where, "batched CMD_DONE status",
                          events[i].subtype, statuses[done + i]);
        }
        vhca_eq_ack(d, true);
        done += chunk;
    }
}

/* ---- objects ----------------------------------------------------------- */

void vhca_eq_prepare(VhcaTestDev *d, VhcaEq *eq, unsigned log_size,
                     uint32_t vector, struct vhca_eq_create *c)
{
    memset(eq, 0, sizeof(*eq));
    eq->log_size = log_size;
    eq->vector = vector;
    vhca_pages_alloc(d, &eq->ring, sizeof(struct vhca_eqe) << log_size);
    memset(c, 0, sizeof(*c));
    c->pbl_addr = cpu_to_le64(eq->ring.pbl);
    c->npages = cpu_to_le32(eq->ring.npages);
    c->log_size = log_size;
    c->vector = cpu_to_le32(vector);
}

void vhca_cq_prepare(VhcaTestDev *d, VhcaCq *cq, unsigned log_size,
                     uint32_t eqn, uint32_t db_page,
                     struct vhca_cq_create *c)
{
    memset(cq, 0, sizeof(*cq));
    cq->log_size = log_size;
    cq->db_page = db_page;
    vhca_pages_alloc(d, &cq->ring, sizeof(struct vhca_cqe) << log_size);
    cq->dbrec = guest_alloc(&d->alloc, sizeof(uint32_t));
    qtest_writel(d->qts, cq->dbrec, 0);
    memset(c, 0, sizeof(*c));
    c->pbl_addr = cpu_to_le64(cq->ring.pbl);
    c->npages = cpu_to_le32(cq->ring.npages);
    c->log_size = log_size;
    c->eqn = cpu_to_le32(eqn);
    c->db_page = cpu_to_le32(db_page);
    c->dbrec_addr = cpu_to_le64(cq->dbrec);
}

void vhca_qp_prepare(VhcaTestDev *d, VhcaQp *qp, uint8_t type, uint32_t pdn,
                     uint32_t send_cqn, uint32_t recv_cqn, unsigned sq_log,
                     unsigned rq_log, uint32_t db_page,
                     struct vhca_qp_create *c)
{
    memset(qp, 0, sizeof(*qp));
    qp->type = type;
    qp->sq_log = sq_log;
    qp->rq_log = rq_log;
    qp->db_page = db_page;
    vhca_pages_alloc(d, &qp->sq, (size_t)VHCA_SEND_WQE_SIZE << sq_log);
    vhca_pages_alloc(d, &qp->rq, (size_t)VHCA_RECV_WQE_SIZE << rq_log);
    memset(c, 0, sizeof(*c));
    c->type = type;
    c->sq_log_size = sq_log;
    c->rq_log_size = rq_log;
    c->pdn = cpu_to_le32(pdn);
    c->send_cqn = cpu_to_le32(send_cqn);
    c->recv_cqn = cpu_to_le32(recv_cqn);
    c->sq_pbl_addr = cpu_to_le64(qp->sq.pbl);
    c->rq_pbl_addr = cpu_to_le64(qp->rq.pbl);
    c->sq_npages = cpu_to_le32(qp->sq.npages);
    c->rq_npages = cpu_to_le32(qp->rq.npages);
    c->db_page = cpu_to_le32(db_page);
}

void vhca_mr_prepare_phys(struct vhca_mr_create *c, uint32_t pdn,
                          uint32_t access, uint64_t iova, uint64_t length,
                          uint8_t key_tag)
{
    memset(c, 0, sizeof(*c));
    c->pdn = cpu_to_le32(pdn);
    c->access = cpu_to_le32(access);
    c->iova = cpu_to_le64(iova);
    c->length = cpu_to_le64(length);
    c->flags = cpu_to_le16(VHCA_MR_PHYS);
    c->key_tag = cpu_to_le32(key_tag);
}

uint32_t vhca_pd_make_at(VhcaTestDev *d, const char *where)
{
    uint32_t pdn = 0;

    VHCA_CHECK_EQ(where, "CREATE_PD status",
                  vhca_cmd_create_pd_at(d, &pdn, where), VHCA_ST_OK);
    return pdn;
}

void vhca_eq_make_at(VhcaTestDev *d, VhcaEq *eq, unsigned log_size,
                     uint32_t vector, const char *where)
{
    struct vhca_eq_create c;

    vhca_eq_prepare(d, eq, log_size, vector, &c);
    VHCA_CHECK_EQ(where, "CREATE_EQ status",
                  vhca_cmd_create_eq_at(d, &c, &eq->eqn, where), VHCA_ST_OK);
}

void vhca_cq_make_at(VhcaTestDev *d, VhcaCq *cq, unsigned log_size,
                     uint32_t eqn, uint32_t db_page, const char *where)
{
    struct vhca_cq_create c;

    vhca_cq_prepare(d, cq, log_size, eqn, db_page, &c);
    VHCA_CHECK_EQ(where, "CREATE_CQ status",
                  vhca_cmd_create_cq_at(d, &c, &cq->cqn, where), VHCA_ST_OK);
}

void vhca_qp_make_at(VhcaTestDev *d, VhcaQp *qp, uint8_t type, uint32_t pdn,
                     uint32_t send_cqn, uint32_t recv_cqn, unsigned sq_log,
                     unsigned rq_log, uint32_t db_page, const char *where)
{
    struct vhca_qp_create c;

    vhca_qp_prepare(d, qp, type, pdn, send_cqn, recv_cqn, sq_log, rq_log,
                    db_page, &c);
    VHCA_CHECK_EQ(where, "CREATE_QP status",
                  vhca_cmd_create_qp_at(d, &c, &qp->qpn, where), VHCA_ST_OK);
}

/* ---- QP attributes ----------------------------------------------------- */

void vhca_qp_attr_defaults(struct vhca_qp_attr *a, uint32_t qpn,
                           const struct vhca_device_attr *dev)
{
    memset(a, 0, sizeof(*a));
    a->qpn = cpu_to_le32(qpn);
    a->path_mtu = VHCA_IB_MTU_1024;
    a->timeout = 14;
    a->retry_cnt = 6;
    a->rnr_retry = 5;
    a->min_rnr_timer = 12;
    a->max_rd_atomic = dev->max_qp_init_rd_atom;
    a->max_dest_rd_atomic = dev->max_qp_rd_atom;
    a->sgid_index = 0;
    a->hop_limit = 64;
    a->traffic_class = 0x68;
    a->port = 1;
    a->en_sqd_async_notify = 0;
    a->qp_access_flags = cpu_to_le32(VHCA_ACCESS_REMOTE_WRITE |
                                     VHCA_ACCESS_REMOTE_READ);
    a->dest_qp_num = cpu_to_le32(0x00c0ffee & 0xffffff);
    a->rq_psn = cpu_to_le32(0x00abcdef);
    a->sq_psn = cpu_to_le32(0x00123456);
    a->qkey = cpu_to_le32(0x11112222);
    a->flow_label = cpu_to_le32(0x12345);
    a->pkey_index = 0;
    memcpy(a->dgid, vhca_test_dgid, sizeof(a->dgid));
    memcpy(a->dmac, vhca_test_dmac, sizeof(a->dmac));
}

void vhca_qp_attr_to_host(struct vhca_qp_attr *a)
{
    a->qpn = le32_to_cpu(a->qpn);
    a->attr_mask = le32_to_cpu(a->attr_mask);
    a->qp_access_flags = le32_to_cpu(a->qp_access_flags);
    a->dest_qp_num = le32_to_cpu(a->dest_qp_num);
    a->rq_psn = le32_to_cpu(a->rq_psn);
    a->sq_psn = le32_to_cpu(a->sq_psn);
    a->qkey = le32_to_cpu(a->qkey);
    a->flow_label = le32_to_cpu(a->flow_label);
    a->pkey_index = le16_to_cpu(a->pkey_index);
    a->udp_sport = le16_to_cpu(a->udp_sport);
    a->max_send_wr = le32_to_cpu(a->max_send_wr);
    a->max_recv_wr = le32_to_cpu(a->max_recv_wr);
    a->max_send_sge = le32_to_cpu(a->max_send_sge);
    a->max_recv_sge = le32_to_cpu(a->max_recv_sge);
    a->max_inline_data = le32_to_cpu(a->max_inline_data);
}

/* ---- RC connections ---------------------------------------------------- */

void vhca_qp_modify_ok_at(VhcaTestDev *d, struct vhca_qp_attr *a,
                          uint8_t state, uint32_t mask, const char *where)
{
    a->qp_state = state;
    a->attr_mask = cpu_to_le32(VHCA_QP_STATE | mask);
    VHCA_CHECK_EQ(where, "MODIFY_QP status",
                  vhca_cmd_modify_qp_at(d, a, where), VHCA_ST_OK);
}

void vhca_qp_to_rts_at(VhcaTestDev *d, uint32_t qpn, const VhcaRcPath *p,
                       const char *where)
{
    struct vhca_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(qpn);
    a.port = 1;
    a.pkey_index = 0;
    a.qp_access_flags = cpu_to_le32(p->access);
    vhca_qp_modify_ok_at(d, &a, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                         VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS, where);

    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(qpn);
    a.path_mtu = p->path_mtu;
    a.dest_qp_num = cpu_to_le32(p->dest_qpn);
    a.rq_psn = cpu_to_le32(p->rq_psn);
    a.max_dest_rd_atomic = p->max_dest_rd_atomic;
    a.min_rnr_timer = p->min_rnr_timer;
    memcpy(a.dgid, p->dgid, sizeof(a.dgid));
    memcpy(a.dmac, p->dmac, sizeof(a.dmac));
    a.sgid_index = 0;
    a.hop_limit = 64;
    a.traffic_class = p->traffic_class;
    vhca_qp_modify_ok_at(d, &a, VHCA_QPS_RTR, VHCA_QP_AV | VHCA_QP_PATH_MTU |
                         VHCA_QP_DEST_QPN | VHCA_QP_RQ_PSN |
                         VHCA_QP_MAX_DEST_RD_ATOMIC | VHCA_QP_MIN_RNR_TIMER,
                         where);

    memset(&a, 0, sizeof(a));
    a.qpn = cpu_to_le32(qpn);
    a.sq_psn = cpu_to_le32(p->sq_psn);
    a.timeout = p->timeout;
    a.retry_cnt = p->retry_cnt;
    a.rnr_retry = p->rnr_retry;
    a.max_rd_atomic = p->max_rd_atomic;
    vhca_qp_modify_ok_at(d, &a, VHCA_QPS_RTS, VHCA_QP_SQ_PSN |
                         VHCA_QP_TIMEOUT | VHCA_QP_RETRY_CNT |
                         VHCA_QP_RNR_RETRY | VHCA_QP_MAX_QP_RD_ATOMIC, where);
}

/* ---- work requests and doorbells --------------------------------------- */

void vhca_wqe_init(struct vhca_send_wqe *w, uint64_t wr_id, uint8_t opcode,
                   uint8_t flags)
{
    memset(w, 0, sizeof(*w));
    w->wr_id = cpu_to_le64(wr_id);
    w->opcode = opcode;
    w->flags = flags;
}

void vhca_wqe_sge(struct vhca_send_wqe *w, uint64_t addr, uint32_t len,
                  uint32_t lkey)
{
    g_assert_cmpuint(w->num_sge, <, VHCA_MAX_SEND_SGE);
    w->sge[w->num_sge].addr = cpu_to_le64(addr);
    w->sge[w->num_sge].length = cpu_to_le32(len);
    w->sge[w->num_sge].lkey = cpu_to_le32(lkey);
    w->num_sge++;
}

void vhca_wqe_remote(struct vhca_send_wqe *w, uint64_t remote_addr,
                     uint32_t rkey)
{
    w->remote_addr = cpu_to_le64(remote_addr);
    w->rkey = cpu_to_le32(rkey);
}


void vhca_db_write(VhcaTestDev *d, uint32_t page, uint32_t offset,
                   uint32_t obj, uint32_t value)
{
    qpci_io_writeq(d->pdev, d->bar2,
                   (uint64_t)page * VHCA_DB_PAGE_SIZE + offset,
                   (uint64_t)value << 32 | obj);
}

void vhca_qp_write_send_wqe(VhcaTestDev *d, VhcaQp *qp,
                            const struct vhca_send_wqe *wqe)
{
    uint32_t slot = qp->sq_pi & ((1u << qp->sq_log) - 1);

    qtest_memwrite(d->qts, qp->sq.addr + (uint64_t)slot * sizeof(*wqe),
                   wqe, sizeof(*wqe));
    qp->sq_pi++;
}

void vhca_qp_write_send(VhcaTestDev *d, VhcaQp *qp, uint64_t wr_id,
                        uint8_t opcode, uint8_t flags)
{
    struct vhca_send_wqe wqe;

    memset(&wqe, 0, sizeof(wqe));
    wqe.wr_id = cpu_to_le64(wr_id);
    wqe.opcode = opcode;
    wqe.flags = flags;
    vhca_qp_write_send_wqe(d, qp, &wqe);
}

void vhca_qp_write_recv_sge(VhcaTestDev *d, VhcaQp *qp, uint64_t wr_id,
                            uint64_t addr, uint32_t len, uint32_t lkey)
{
    uint32_t slot = qp->rq_pi & ((1u << qp->rq_log) - 1);
    struct vhca_recv_wqe wqe;

    memset(&wqe, 0, sizeof(wqe));
    wqe.wr_id = cpu_to_le64(wr_id);
    if (len) {
        wqe.num_sge = 1;
        wqe.sge[0].addr = cpu_to_le64(addr);
        wqe.sge[0].length = cpu_to_le32(len);
        wqe.sge[0].lkey = cpu_to_le32(lkey);
    }
    qtest_memwrite(d->qts, qp->rq.addr + (uint64_t)slot * sizeof(wqe),
                   &wqe, sizeof(wqe));
    qp->rq_pi++;
}

void vhca_qp_write_recv(VhcaTestDev *d, VhcaQp *qp, uint64_t wr_id)
{
    vhca_qp_write_recv_sge(d, qp, wr_id, 0, 0, 0);
}

void vhca_qp_ring_sq(VhcaTestDev *d, VhcaQp *qp, uint32_t page)
{
    vhca_db_write(d, page, VHCA_DB_SQ, qp->qpn, qp->sq_pi);
}

void vhca_qp_ring_rq(VhcaTestDev *d, VhcaQp *qp, uint32_t page)
{
    vhca_db_write(d, page, VHCA_DB_RQ, qp->qpn, qp->rq_pi);
}

/* ---- completion queues and completion EQs ------------------------------ */

uint8_t vhca_ring_owner(uint32_t idx, unsigned log_size)
{
    return ((idx >> log_size) & 1) ^ 1;
}

bool vhca_cq_peek(VhcaTestDev *d, VhcaCq *cq, struct vhca_cqe *cqe)
{
    uint32_t slot = cq->ci & ((1u << cq->log_size) - 1);
    uint64_t addr = cq->ring.addr + slot * sizeof(struct vhca_cqe);
    uint8_t owner = vhca_ring_owner(cq->ci, cq->log_size);
    struct vhca_cqe e;

    if (d->ram) {
        const struct vhca_cqe *in_ram = vhca_test_ram(d, addr, sizeof(e));

        /* The device writes the owner byte last: read it first. */
        if ((qatomic_load_acquire(&in_ram->owner) & 1) != owner) {
            return false;
        }
        e = *in_ram;
    } else {
        qtest_memread(d->qts, addr, &e, sizeof(e));
        if ((e.owner & 1) != owner) {
            return false;
        }
    }
    if (cqe) {
        *cqe = e;
        cqe->wr_id = le64_to_cpu(e.wr_id);
        cqe->byte_len = le32_to_cpu(e.byte_len);
        cqe->imm_or_inv = le32_to_cpu(e.imm_or_inv);
        cqe->qpn = le32_to_cpu(e.qpn);
        cqe->src_qp = le32_to_cpu(e.src_qp);
        cqe->vendor_err = le32_to_cpu(e.vendor_err);
    }
    return true;
}

void vhca_cq_next_at(VhcaTestDev *d, VhcaCq *cq, struct vhca_cqe *cqe,
                     const char *where)
{
    g_autofree char *what = g_strdup_printf("CQE %u of CQ %u", cq->ci,
                                            cq->cqn);

    VHCA_WAIT_UNTIL_AT(d, vhca_cq_peek(d, cq, cqe), what, where);
    cq->ci++;
}

void vhca_cq_update_dbrec(VhcaTestDev *d, VhcaCq *cq)
{
    if (d->ram) {
        uint32_t *dbrec = vhca_test_ram(d, cq->dbrec, sizeof(*dbrec));

        /* After the CQEs were read, as a driver orders it. */
        qatomic_store_release(dbrec, cpu_to_le32(cq->ci));
        return;
    }
    /* qtest_writel stores in guest (little-endian) order. */
    qtest_writel(d->qts, cq->dbrec, cq->ci);
}

void vhca_cq_arm(VhcaTestDev *d, VhcaCq *cq, uint32_t arm)
{
    vhca_db_write(d, cq->db_page, VHCA_DB_CQ, cq->cqn,
                  arm | (cq->ci & VHCA_CQ_CI_MASK));
}

bool vhca_ceq_peek(VhcaTestDev *d, VhcaEq *eq, struct vhca_eqe *eqe)
{
    uint32_t slot = eq->ci & ((1u << eq->log_size) - 1);
    struct vhca_eqe e;

    qtest_memread(d->qts, eq->ring.addr + slot * sizeof(e), &e, sizeof(e));
    if ((e.owner & 1) != vhca_ring_owner(eq->ci, eq->log_size)) {
        return false;
    }
    if (eqe) {
        *eqe = e;
        eqe->data[0] = le32_to_cpu(e.data[0]);
        eqe->data[1] = le32_to_cpu(e.data[1]);
    }
    return true;
}

void vhca_ceq_next_at(VhcaTestDev *d, VhcaEq *eq, struct vhca_eqe *eqe,
                      const char *where)
{
    g_autofree char *what = g_strdup_printf("event %u of EQ %u", eq->ci,
                                            eq->eqn);

    VHCA_WAIT_UNTIL_AT(d, vhca_ceq_peek(d, eq, eqe), what, where);
    eq->ci++;
}

void vhca_ceq_ack(VhcaTestDev *d, VhcaEq *eq, bool arm)
{
    vhca_wr(d, VHCA_REG_EQ_DB(eq->eqn),
            (eq->ci & VHCA_EQ_DB_CI_MASK) | (arm ? VHCA_EQ_DB_ARM : 0));
}

/* ---- a device with objects open ---------------------------------------- */

static const uint8_t vhca_rig_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1,
};

#define VHCA_RIG_RTR_REQ (VHCA_QP_AV | VHCA_QP_PATH_MTU | VHCA_QP_DEST_QPN | \
                          VHCA_QP_RQ_PSN | VHCA_QP_MAX_DEST_RD_ATOMIC |      \
                          VHCA_QP_MIN_RNR_TIMER)
#define VHCA_RIG_RTS_REQ (VHCA_QP_TIMEOUT | VHCA_QP_RETRY_CNT |               \
                          VHCA_QP_RNR_RETRY | VHCA_QP_SQ_PSN |               \
                          VHCA_QP_MAX_QP_RD_ATOMIC)

static void vhca_rig_modify(VhcaRig *r, uint32_t qpn, uint8_t state,
                            uint32_t mask, struct vhca_qp_attr *a)
{
    a->qpn = cpu_to_le32(qpn);
    vhca_qp_modify_ok_at(r->d, a, state, mask, G_STRLOC);
}

void vhca_rig_build(VhcaRig *r, VhcaTestDev *d)
{
    struct vhca_device_attr dev;
    struct vhca_mr_create c;
    struct vhca_qp_attr a;
    uint8_t frame[VHCA_ETH_MAX_FRAME];

    memset(r, 0, sizeof(*r));
    r->d = d;
    vhca_admin_setup(d, VHCA_RIG_ADMQ_LOG, VHCA_RIG_AEQ_LOG);
    d->stash_events = true;
    g_assert_cmpuint(vhca_cmd_add_gid(d, 0, 1, VHCA_GID_TYPE_ROCE_V2_IPV4,
                                      vhca_rig_gid), ==, VHCA_ST_OK);
    g_assert_cmpuint(vhca_cmd_alloc_uctx(d, &r->page), ==, VHCA_ST_OK);
    r->pdn = vhca_pd_make(d);
    r->buf = guest_alloc(&d->alloc, 4096);
    vhca_mr_prepare_phys(&c, r->pdn, VHCA_ACCESS_LOCAL_WRITE, r->buf, 4096,
                         0x33);
    g_assert_cmpuint(vhca_cmd_create_mr(d, &c, &r->mr_index, &r->key), ==,
                     VHCA_ST_OK);
    vhca_eq_make(d, &r->eq, 6, VHCA_VECTOR_FIRST_COMP);
    vhca_cq_make(d, &r->scq, VHCA_RIG_CQ_LOG, r->eq.eqn, r->page);
    vhca_cq_make(d, &r->rcq, VHCA_RIG_CQ_LOG, r->eq.eqn, r->page);

    vhca_qp_make(d, &r->ud, VHCA_QPT_UD, r->pdn, r->scq.cqn, r->rcq.cqn,
                 VHCA_RIG_QP_LOG, VHCA_RIG_QP_LOG, r->page);
    memset(&a, 0, sizeof(a));
    a.port = 1;
    a.qkey = cpu_to_le32(VHCA_RIG_QKEY);
    vhca_rig_modify(r, r->ud.qpn, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                    VHCA_QP_PORT | VHCA_QP_QKEY, &a);
    memset(&a, 0, sizeof(a));
    vhca_rig_modify(r, r->ud.qpn, VHCA_QPS_RTR, 0, &a);
    a.sq_psn = cpu_to_le32(VHCA_RIG_UD_SQ_PSN);
    vhca_rig_modify(r, r->ud.qpn, VHCA_QPS_RTS, VHCA_QP_SQ_PSN, &a);
    vhca_qp_write_recv_sge(d, &r->ud, 0x51, r->buf, 2048, r->key);
    vhca_qp_write_recv_sge(d, &r->ud, 0x52, r->buf + 2048, 2048, r->key);
    vhca_qp_ring_rq(d, &r->ud, r->page);

    vhca_qp_make(d, &r->rc, VHCA_QPT_RC, r->pdn, r->scq.cqn, r->rcq.cqn,
                 VHCA_RIG_QP_LOG, VHCA_RIG_QP_LOG, r->page);
    g_assert_cmpuint(vhca_cmd_query_device(d, &dev), ==, VHCA_ST_OK);
    vhca_qp_attr_defaults(&a, r->rc.qpn, &dev);
    vhca_rig_modify(r, r->rc.qpn, VHCA_QPS_INIT, VHCA_QP_PKEY_INDEX |
                    VHCA_QP_PORT | VHCA_QP_ACCESS_FLAGS, &a);
    vhca_rig_modify(r, r->rc.qpn, VHCA_QPS_RTR, VHCA_RIG_RTR_REQ, &a);
    vhca_rig_modify(r, r->rc.qpn, VHCA_QPS_RTS, VHCA_RIG_RTS_REQ, &a);
    vhca_qp_write_send(d, &r->rc, 0x5e, VHCA_WR_SEND, VHCA_WQE_SIGNALED);
    vhca_qp_ring_sq(d, &r->rc, r->page);
    g_assert_cmpuint(vhca_wire_recv(d, frame, sizeof(frame)), >, 0);
}
