/*
 * Unit test helpers shared by the transport tests (test-vhca-rc.c,
 * test-vhca-ud.c, test-vhca-uc.c, test-vhca-obs.c): a "node" is one
 * engine with a PD, a completion EQ, a send and a receive CQ, one QP and
 * a data buffer covered by one MR; helpers connect two RC nodes, post
 * WQEs, poll CQEs and inject faults on the wire between two nodes.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_NODE_H
#define VHCA_NODE_H

#include "vhca-harness.h"

#define DATA_PAGES      64                  /* 256 KiB per device */
#define ACCESS_ALL      (VHCA_ACCESS_LOCAL_WRITE | VHCA_ACCESS_REMOTE_WRITE | \
                         VHCA_ACCESS_REMOTE_READ | VHCA_ACCESS_REMOTE_ATOMIC)
#define SETTLE_NS       (1000ull * 1000 * 1000 * 1000)  /* 1000 s */

typedef struct Node {
    Harness *h;
    uint8_t gid[16];
    uint32_t page, pdn, eqn, key;
    TestCq scq, rcq;
    TestQp qp;
    uint64_t buf;                   /* DATA_PAGES of data, key covers it */
} Node;

/* Engine @id (MAC ..:50+id, GID 10.0.0.id at index 0) with a @qp_type QP. */
void node_init(Node *n, uint8_t id, uint8_t qp_type);
/* The same on a device configured as @base (its MAC replaced). */
void node_init_cfg(Node *n, uint8_t id, uint8_t qp_type,
                   const VhcaCoreConfig *base);
/* MODIFY_QP @a to @state with STATE | @mask, asserting success. */
void qp_modify_ok(Harness *h, struct vhca_qp_attr *a, uint8_t state,
                  uint32_t mask);
/*
 * QP @qpn to RESET, whatever its state, without asserting (the input of
 * a fuzz target may have destroyed it); if that worked and @qp is given,
 * its rings start again from index 0, as the driver's would.
 */
void qp_reset(Harness *h, uint32_t qpn, TestQp *qp);

void wqe_init(struct vhca_send_wqe *w, uint64_t wr_id, uint8_t opcode,
              uint8_t flags);
void wqe_sge(struct vhca_send_wqe *w, uint64_t addr, uint32_t len,
             uint32_t lkey);
void wqe_remote(struct vhca_send_wqe *w, uint64_t addr, uint32_t rkey);
/* A fast-register MR of @max_pages in @n's PD, free; returns its key. */
uint32_t node_fast_mr(Node *n, uint32_t max_pages, uint8_t tag);
/*
 * A REG_MR WQE giving the fast-register MR @key (new tag included) the
 * @npages 4 KiB pages of @n's buffer from @off, through a page list it
 * writes in guest memory (returned), iova = @iova, @len bytes, @access.
 */
uint64_t wqe_reg_mr(Node *n, struct vhca_send_wqe *w, uint64_t wr_id,
                    uint32_t key, uint32_t off, uint32_t npages,
                    uint64_t iova, uint64_t len, uint32_t access);
/* A WQE with one SGE of [n->buf + off, +len) and the remote address. */
void post(Node *n, uint64_t wr_id, uint8_t opcode, uint8_t flags,
          uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey);
void ring_sq(Node *n);
/* A receive WQE of [n->buf + off, +len), rung. */
void post_recv(Node *n, uint64_t wr_id, uint32_t off, uint32_t len);
struct vhca_cqe expect_cqe(Node *n, TestCq *cq, uint64_t wr_id,
                           uint8_t status, uint8_t opcode);
void expect_no_cqe(Node *n, TestCq *cq);
void fill(Node *n, uint32_t off, uint32_t len, uint32_t seed);
void expect_same(Node *x, uint32_t xoff, Node *y, uint32_t yoff,
                 uint32_t len);

/* Consume every async event so far; returns the producer index. */
uint32_t aeq_drain(Harness *h);
/* Was QP event @event for @qpn posted at or after @from? */
bool qp_event_since(Harness *h, uint32_t from, uint8_t event, uint32_t qpn);

/* Two RC nodes connected to each other (node 1 and node 2). */
typedef struct ConnOpts {
    uint8_t mtu;
    uint32_t a_psn, b_psn;          /* each side's first send PSN */
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
    uint8_t max_rd;                 /* initiator depth */
    uint8_t max_dest_rd;            /* responder resources */
    uint32_t access;                /* QP access flags of both sides */
} ConnOpts;

typedef struct Pair {
    Node a, b;
} Pair;

/* MTU 1024, timeout 67 ms, retries 7, RNR timer 10 us, all access. */
extern const ConnOpts default_opts;

/*
 * Bring RC QP @qpn of @h to RTS towards @dest_qpn on @path (its AV
 * fields: dgid, dmac, sgid_index, hop_limit, traffic_class, ...).
 */
void qp_connect_path(Harness *h, uint32_t qpn,
                     const struct vhca_qp_attr *path, uint32_t dest_qpn,
                     const ConnOpts *o, uint32_t sq_psn, uint32_t rq_psn);
/* Bring RC QP @qpn of @h to RTS towards @dest_qpn at @dgid, @dmac. */
void qp_connect(Harness *h, uint32_t qpn, const uint8_t *dgid,
                const uint8_t *dmac, uint32_t dest_qpn, const ConnOpts *o,
                uint32_t sq_psn, uint32_t rq_psn);

/*
 * The IB port (link=ib).  node_ib_set_port() does what an SM does to a
 * port (IBTA 14.4), through MAD_IFC: a Set(PortInfo) with @lid and the
 * master SM's LID, then PortState @state (ARMED; ACTIVE goes through
 * ARMED).  node_ib_pkey() sets P_Key table entry @index.
 */
void node_ib_set_port(Node *n, uint16_t lid, uint16_t sm_lid, uint8_t state);
void node_ib_pkey(Node *n, uint16_t index, uint16_t pkey);
/*
 * MAD_IFC with @flags (VHCA_MAD_IFC_*) and the 256-byte MAD @in: returns
 * the VHCA_MAD_RESULT_* bits, the mailbox's out_mad in @out.
 */
uint8_t node_ib_mad(Node *n, uint8_t flags, const uint8_t *in, uint8_t *out);
/* A Set of @attr through MAD_IFC with @flags, asserting status 0. */
void node_ib_smp_set(Node *n, uint8_t flags, uint16_t attr, uint32_t mod,
                     const uint8_t *data);
/* The SMI QP (QP0) of @n, in RTS, on @n's CQs. */
void node_ib_smi_qp(Node *n, TestQp *smi);
/* qp_connect() by LID: the path is @dlid with no GRH. */
void qp_connect_lid(Harness *h, uint32_t qpn, uint16_t dlid,
                    uint32_t dest_qpn, const ConnOpts *o, uint32_t sq_psn,
                    uint32_t rq_psn);
/*
 * The same with the status of the first MODIFY_QP that failed (the port
 * not ACTIVE, the QP not in RESET), VHCA_ST_OK if none did.
 */
uint8_t qp_try_connect_lid(Harness *h, uint32_t qpn, uint16_t dlid,
                           uint32_t dest_qpn, const ConnOpts *o,
                           uint32_t sq_psn, uint32_t rq_psn);
/*
 * The ICRC and VCRC of the IB packet @frame (@len bytes, LRH to VCRC)
 * computed again over what it holds now, as its sender would have (LNH
 * says whether a GRH is there), so that a packet changed on purpose
 * gets past the link's integrity checks.  A frame too short for an LRH,
 * a BTH and both CRCs is left as it is.
 */
void ib_frame_fix_crcs(uint8_t *frame, size_t len);
/*
 * The same for a RoCE frame (@len bytes from the Ethernet header, IP at
 * offset 14, no VLAN tag, ICRC last): the IPv4 header checksum and the
 * ICRC over what it holds now, so that a frame changed on purpose (a
 * switch's ECN mark, a test's forgery) passes the receiver's checks.
 */
void roce_frame_fix_crcs(uint8_t *frame, size_t len);
/* SET_CC (RoCE congestion control): @flags, DCQCN's defaults but @over. */
typedef struct CcParam {
    enum vhca_cc_param id;
    uint32_t value;
} CcParam;

/* SET_CC's payload with every DCQCN parameter at its default, all off. */
void cc_config_default(struct vhca_cc_config *c);
void set_cc(Harness *h, uint32_t flags, const CcParam *over, unsigned n);

/* Two IB devices back to back, ports ACTIVE (LIDs 1, 2), QPs connected. */
void pair_init_ib(Pair *p, const ConnOpts *o);
void pair_init(Pair *p, const ConnOpts *o);
void pair_free(Pair *p);

/*
 * Wire fault injection between two nodes (see wire_hook).  Faults apply
 * to frames 1 .. calm_after (all frames when calm_after is 0); later
 * frames pass untouched, so a test can end a fault phase.
 */
typedef struct Wire {
    unsigned count;                 /* frames seen */
    unsigned drop_nth;              /* drop frame number N (1-based) */
    unsigned drop_every;            /* drop every Nth frame */
    unsigned burst_len;             /* drop burst_len consecutive frames */
    unsigned burst_every;           /*   out of every burst_every, */
    unsigned burst_phase;           /*   starting after frame burst_phase */
    bool drop_all;
    bool dup_all;                   /* one extra copy of each frame */
    unsigned dup;                   /* dup extra copies of each frame */
    unsigned reorder;               /* hold up to this many, release randomly */
    unsigned calm_after;            /* no faults after this many frames */
    unsigned hold_nth;              /* deliver frame N after frame N+1 */
    uint8_t held[VHCA_ETH_MAX_FRAME];
    size_t held_len;
    GRand *rand;                    /* random loss and reordering */
    double loss;
    unsigned dropped, duplicated, reordered;
    GPtrArray *window;              /* frames held for reordering */
    Harness *to;                    /* where held frames go */
    uint8_t last[VHCA_ETH_MAX_FRAME];   /* last frame seen */
    size_t last_len;
} Wire;

void wire_hook(Harness *h, const uint8_t *buf, size_t len);
void wire_attach(Node *n, Wire *w);
/* Deliver the frames held for reordering, in random order; how many. */
unsigned wire_flush(Wire *w);
/* Free what the wire holds (the GRand stays the caller's). */
void wire_free(Wire *w);

#endif /* VHCA_NODE_H */
