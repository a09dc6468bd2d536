/*
 * vhca qtest RDMA layer: the resource commands, page lists, work requests,
 * doorbells and completion/event rings of docs/specs/vhca.rst "RDMA
 * resources", on top of vhca-qdriver, written the way a guest driver uses
 * them.
 *
 * Command structures (struct vhca_*_create, struct vhca_qp_attr) are kept
 * in wire order (little-endian) everywhere, so a test can break one field
 * with cpu_to_le*() and pass the rest through unchanged.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_QRDMA_H
#define VHCA_QRDMA_H

#include "vhca-qdriver.h"

#define VHCA_TEST_PAGE_SIZE     4096u

/* A contiguous guest buffer of whole 4 KiB pages and its page list. */
typedef struct VhcaPages {
    uint64_t addr;              /* first page */
    uint32_t npages;
    uint64_t pbl;               /* npages u64 page addresses (level 1) */
} VhcaPages;

typedef struct VhcaEq {
    uint32_t eqn;
    unsigned log_size;
    uint32_t vector;
    uint32_t ci;                /* events consumed */
    VhcaPages ring;
} VhcaEq;

typedef struct VhcaCq {
    uint32_t cqn;
    unsigned log_size;
    uint32_t db_page;
    uint32_t ci;                /* completions consumed */
    uint64_t dbrec;             /* u32 consumer index record */
    VhcaPages ring;
} VhcaCq;

typedef struct VhcaQp {
    uint32_t qpn;
    uint8_t type;
    unsigned sq_log, rq_log;
    uint32_t db_page;
    uint32_t sq_pi, rq_pi;      /* WQEs written (free running) */
    VhcaPages sq, rq;
} VhcaQp;

/* ---- memory ------------------------------------------------------------ */

/* Allocate, zero and describe @bytes (rounded up to pages). */
void vhca_pages_alloc(VhcaTestDev *d, VhcaPages *p, size_t bytes);

/* ---- commands ---------------------------------------------------------- */

/*
 * Run a mailbox command: copy @mbox (@len bytes, wire order) into a fresh
 * guest buffer, execute @opcode with in = { buffer, @len }, read the
 * mailbox back into @back (may be NULL).  @out (may be NULL) receives the
 * entry's output.  Returns the status; d->last_syndrome the syndrome.
 */
uint8_t vhca_cmd_mbox_at(VhcaTestDev *d, uint16_t opcode, const void *mbox,
                         size_t len, void *back,
                         struct vhca_cmd_obj_out *out, const char *where);
#define vhca_cmd_mbox(...) vhca_cmd_mbox_at(__VA_ARGS__, G_STRLOC)

/* Mailbox command whose vhca_cmd_dma_in is given as is (bad addresses). */
uint8_t vhca_cmd_mbox_raw_at(VhcaTestDev *d, uint16_t opcode, uint64_t addr,
                             uint32_t len, const char *where);
#define vhca_cmd_mbox_raw(...) vhca_cmd_mbox_raw_at(__VA_ARGS__, G_STRLOC)

uint8_t vhca_cmd_create_pd_at(VhcaTestDev *d, uint32_t *pdn,
                              const char *where);
#define vhca_cmd_create_pd(...) vhca_cmd_create_pd_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_create_mr_at(VhcaTestDev *d, const struct vhca_mr_create *c,
                              uint32_t *index, uint32_t *key,
                              const char *where);
#define vhca_cmd_create_mr(...) vhca_cmd_create_mr_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_create_eq_at(VhcaTestDev *d, const struct vhca_eq_create *c,
                              uint32_t *eqn, const char *where);
#define vhca_cmd_create_eq(...) vhca_cmd_create_eq_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_create_cq_at(VhcaTestDev *d, const struct vhca_cq_create *c,
                              uint32_t *cqn, const char *where);
#define vhca_cmd_create_cq(...) vhca_cmd_create_cq_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_create_qp_at(VhcaTestDev *d, const struct vhca_qp_create *c,
                              uint32_t *qpn, const char *where);
#define vhca_cmd_create_qp(...) vhca_cmd_create_qp_at(__VA_ARGS__, G_STRLOC)
/* DESTROY_PD/MR/EQ/CQ/QP: struct vhca_cmd_obj_in directly in ``in``. */
uint8_t vhca_cmd_destroy_at(VhcaTestDev *d, uint16_t opcode, uint32_t handle,
                            const char *where);
#define vhca_cmd_destroy(...) vhca_cmd_destroy_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_modify_qp_at(VhcaTestDev *d, const struct vhca_qp_attr *a,
                              const char *where);
#define vhca_cmd_modify_qp(...) vhca_cmd_modify_qp_at(__VA_ARGS__, G_STRLOC)
/* QUERY_QP of @qpn; @a receives the mailbox as written back (wire order). */
uint8_t vhca_cmd_query_qp_at(VhcaTestDev *d, uint32_t qpn,
                             struct vhca_qp_attr *a, const char *where);
#define vhca_cmd_query_qp(...) vhca_cmd_query_qp_at(__VA_ARGS__, G_STRLOC)

/*
 * Execute @n copies of one command as fast as a driver batching them
 * would (many entries per ADMQ_PI doorbell), checking done, tokens and
 * CMD_DONE events.  statuses[i] / outs[i] (outs may be NULL) receive each
 * result.  Needs an admin queue and an AEQ of at least 2^7 entries.
 */
void vhca_cmd_batch_at(VhcaTestDev *d, unsigned n, uint16_t opcode,
                       const void *in, size_t in_len, uint8_t *statuses,
                       struct vhca_cmd_obj_out *outs, const char *where);
#define vhca_cmd_batch(...) vhca_cmd_batch_at(__VA_ARGS__, G_STRLOC)

/* ---- objects: prepare (memory, create structure), make (+ create) ----- */

void vhca_eq_prepare(VhcaTestDev *d, VhcaEq *eq, unsigned log_size,
                     uint32_t vector, struct vhca_eq_create *c);
void vhca_cq_prepare(VhcaTestDev *d, VhcaCq *cq, unsigned log_size,
                     uint32_t eqn, uint32_t db_page,
                     struct vhca_cq_create *c);
void vhca_qp_prepare(VhcaTestDev *d, VhcaQp *qp, uint8_t type, uint32_t pdn,
                     uint32_t send_cqn, uint32_t recv_cqn, unsigned sq_log,
                     unsigned rq_log, uint32_t db_page,
                     struct vhca_qp_create *c);
/* A VHCA_MR_PHYS region over [iova, iova + length) of guest RAM. */
void vhca_mr_prepare_phys(struct vhca_mr_create *c, uint32_t pdn,
                          uint32_t access, uint64_t iova, uint64_t length,
                          uint8_t key_tag);

uint32_t vhca_pd_make_at(VhcaTestDev *d, const char *where);
#define vhca_pd_make(...) vhca_pd_make_at(__VA_ARGS__, G_STRLOC)
void vhca_eq_make_at(VhcaTestDev *d, VhcaEq *eq, unsigned log_size,
                     uint32_t vector, const char *where);
#define vhca_eq_make(...) vhca_eq_make_at(__VA_ARGS__, G_STRLOC)
void vhca_cq_make_at(VhcaTestDev *d, VhcaCq *cq, unsigned log_size,
                     uint32_t eqn, uint32_t db_page, const char *where);
#define vhca_cq_make(...) vhca_cq_make_at(__VA_ARGS__, G_STRLOC)
void vhca_qp_make_at(VhcaTestDev *d, VhcaQp *qp, uint8_t type, uint32_t pdn,
                     uint32_t send_cqn, uint32_t recv_cqn, unsigned sq_log,
                     unsigned rq_log, uint32_t db_page, const char *where);
#define vhca_qp_make(...) vhca_qp_make_at(__VA_ARGS__, G_STRLOC)

/* ---- QP attributes ------------------------------------------------------ */

/*
 * Valid values for every attribute (wire order), distinct from 0 where
 * the field allows it, so QUERY_QP shows whether each was stored.  The
 * read-atomic depths are the device's maxima from @dev.
 */
void vhca_qp_attr_defaults(struct vhca_qp_attr *a, uint32_t qpn,
                           const struct vhca_device_attr *dev);
/* Convert a QUERY_QP result to host order in place. */
void vhca_qp_attr_to_host(struct vhca_qp_attr *a);

/* The destination GID / MAC vhca_qp_attr_defaults uses. */
extern const uint8_t vhca_test_dgid[16];
extern const uint8_t vhca_test_dmac[6];

/* ---- RC connections ---------------------------------------------------- */

/* What one end of an RC connection needs to reach RTS (host order). */
typedef struct VhcaRcPath {
    const uint8_t *dgid;        /* the peer's GID (16 bytes) */
    const uint8_t *dmac;        /* the peer's MAC (6 bytes) */
    uint32_t dest_qpn;
    uint32_t sq_psn;            /* this end's first request PSN */
    uint32_t rq_psn;            /* the peer's first request PSN */
    uint8_t path_mtu;           /* VHCA_IB_MTU_* */
    uint8_t timeout;            /* Local ACK Timeout, 4.096 us * 2^t */
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;      /* this responder's RNR NAK timer code */
    uint32_t access;            /* qp_access_flags */
    uint8_t max_rd_atomic;      /* initiator depth */
    uint8_t max_dest_rd_atomic; /* responder depth */
    uint8_t traffic_class;      /* AV: DSCP << 2 | ECN; priority DSCP >> 3 */
} VhcaRcPath;

/* MODIFY_QP to @state with VHCA_QP_STATE | @mask, which must succeed. */
void vhca_qp_modify_ok_at(VhcaTestDev *d, struct vhca_qp_attr *a,
                          uint8_t state, uint32_t mask, const char *where);

/*
 * RESET -> INIT (port 1, P_Key index 0) -> RTR -> RTS along @p, with
 * GID index 0; each MODIFY_QP must succeed.
 */
void vhca_qp_to_rts_at(VhcaTestDev *d, uint32_t qpn, const VhcaRcPath *p,
                       const char *where);
#define vhca_qp_to_rts(...) vhca_qp_to_rts_at(__VA_ARGS__, G_STRLOC)

/* ---- work requests and doorbells --------------------------------------- */

/* A send WQE in wire order: header, then SGEs and the remote address. */
void vhca_wqe_init(struct vhca_send_wqe *w, uint64_t wr_id, uint8_t opcode,
                   uint8_t flags);
void vhca_wqe_sge(struct vhca_send_wqe *w, uint64_t addr, uint32_t len,
                  uint32_t lkey);
void vhca_wqe_remote(struct vhca_send_wqe *w, uint64_t remote_addr,
                     uint32_t rkey);

/* One 64-bit doorbell write: low half @obj, high half @value. */
void vhca_db_write(VhcaTestDev *d, uint32_t page, uint32_t offset,
                   uint32_t obj, uint32_t value);
/* Write the next send / receive WQE (no SGE); no doorbell. */
void vhca_qp_write_send(VhcaTestDev *d, VhcaQp *qp, uint64_t wr_id,
                        uint8_t opcode, uint8_t flags);
void vhca_qp_write_recv(VhcaTestDev *d, VhcaQp *qp, uint64_t wr_id);
/* Write @wqe (wire order) as the next send WQE; no doorbell. */
void vhca_qp_write_send_wqe(VhcaTestDev *d, VhcaQp *qp,
                            const struct vhca_send_wqe *wqe);
/* The next receive WQE with one SGE (none if @len is 0); no doorbell. */
void vhca_qp_write_recv_sge(VhcaTestDev *d, VhcaQp *qp, uint64_t wr_id,
                            uint64_t addr, uint32_t len, uint32_t lkey);
/* Ring the QP's SQ / RQ doorbell on @page with its current producer index. */
void vhca_qp_ring_sq(VhcaTestDev *d, VhcaQp *qp, uint32_t page);
void vhca_qp_ring_rq(VhcaTestDev *d, VhcaQp *qp, uint32_t page);

/* ---- completion queues and completion EQs ------------------------------ */

uint8_t vhca_ring_owner(uint32_t idx, unsigned log_size);
/* Is completion @cq->ci written?  Reads it into @cqe (host order). */
bool vhca_cq_peek(VhcaTestDev *d, VhcaCq *cq, struct vhca_cqe *cqe);
void vhca_cq_next_at(VhcaTestDev *d, VhcaCq *cq, struct vhca_cqe *cqe,
                     const char *where);
#define vhca_cq_next(...) vhca_cq_next_at(__VA_ARGS__, G_STRLOC)
/* Store cq->ci in the doorbell record (what the consumer tells the device). */
void vhca_cq_update_dbrec(VhcaTestDev *d, VhcaCq *cq);
/* CQ doorbell: @arm (VHCA_CQ_ARM_*) | consumer index. */
void vhca_cq_arm(VhcaTestDev *d, VhcaCq *cq, uint32_t arm);

bool vhca_ceq_peek(VhcaTestDev *d, VhcaEq *eq, struct vhca_eqe *eqe);
void vhca_ceq_next_at(VhcaTestDev *d, VhcaEq *eq, struct vhca_eqe *eqe,
                      const char *where);
#define vhca_ceq_next(...) vhca_ceq_next_at(__VA_ARGS__, G_STRLOC)
/* EQ_DB(eqn) = consumer index, optionally ARM. */
void vhca_ceq_ack(VhcaTestDev *d, VhcaEq *eq, bool arm);

/* ---- a device with objects open (monitor and migration tests) ---------- */

#define VHCA_RIG_ADMQ_LOG       6
#define VHCA_RIG_AEQ_LOG        8
#define VHCA_RIG_CQ_LOG         6
#define VHCA_RIG_QP_LOG         5
#define VHCA_RIG_QKEY           0x12340000u
#define VHCA_RIG_UD_SQ_PSN      0x777

/*
 * What the driver made: a GID (192.0.2.1), a user context, a PD, an MR
 * over one page (buf), a completion EQ, two CQs, a UD QP in RTS with two
 * receives posted and an RC QP in RTS (vhca_qp_attr_defaults) with a
 * SEND on the wire that nobody acknowledges, so its retransmit timer runs.
 */
typedef struct VhcaRig {
    VhcaTestDev *d;
    uint32_t page, pdn, mr_index, key;
    uint64_t buf;
    VhcaEq eq;
    VhcaCq scq, rcq;
    VhcaQp ud, rc;
} VhcaRig;

/* Bring @d's admin queue up and make the rig on it (@d needs a netdev). */
void vhca_rig_build(VhcaRig *r, VhcaTestDev *d);

#endif /* VHCA_QRDMA_H */
