/*
 * vhca engine: the device's objects and their services - the admin
 * queue, event queues, Ethernet rings and GID table, and the RDMA
 * resources (docs/specs/vhca.rst, "RDMA resources"): protection domains,
 * memory regions, completion EQs, CQs, QPs, SRQs, XRC domains, multicast
 * groups - and what the transport uses of them.  Engine-internal; the
 * layer above vhca-internal.h, below vhca-transport.h.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_RDMA_H
#define HW_VHCA_RDMA_H

#include "vhca-internal.h"

/* Level 2: at most a 4 KiB array of pointers to 512-entry pages. */
#define VHCA_MR_MAX_PAGES       (VHCA_PBL_ENTRIES_PER_PAGE * \
                                 VHCA_PBL_ENTRIES_PER_PAGE)

struct VhcaPd {
    uint32_t users;                 /* MRs, windows, QPs and SRQs in it */
};

struct VhcaMr {
    /*
     * core->mr_gen after the CREATE_MR that made it: unlike the key,
     * which comes back when an index and a tag are reused, it names this
     * MR and no later one.
     */
    uint64_t gen;
    uint8_t key_tag;
    uint16_t flags;                 /* VHCA_MR_* */
    uint32_t pdn;
    uint32_t access;                /* VHCA_ACCESS_* */
    uint64_t iova;
    uint64_t length;
    /* Page list, read from guest memory at each use (not copied). */
    uint64_t pbl_addr;
    uint32_t npages;
    uint8_t page_shift;
    uint8_t pbl_levels;
    uint32_t offset;
    /*
     * VHCA_MR_FAST_REG: the most pages a REG_MR may map, and whether one
     * did since the MR was made or last invalidated (IBTA 10.6.5: valid
     * or free).  Every other MR is valid from CREATE_MR to DESTROY_MR.
     */
    uint32_t max_pages;
    bool valid;
    /*
     * An MR: how many memory windows are bound to it (DESTROY_MR is BUSY
     * until none is, as rxe refuses it).
     */
    uint32_t mw_bound;
    /*
     * A memory window (vhca-mw.c, IBTA 10.6.7) lives in the MR table, so
     * that MR and window keys are one R_Key space: mw_type is its enum
     * vhca_mw_type, 0 for an MR.  A window uses gen (a new one with each
     * bind), key_tag, pdn, access (its rights, ZERO_BASED included), iova
     * and length (the bound range, in the MR's address space) and valid
     * (type 1: always; type 2: bound, not free).  It is bound to MR
     * mw_mr_index (0: none) as that MR was in generation mw_mr_gen, and a
     * type 2 window to QP mw_qpn.
     */
    uint8_t mw_type;
    uint32_t mw_mr_index;
    uint64_t mw_mr_gen;
    uint32_t mw_qpn;
};

static inline bool vhca_mr_is_window(const VhcaMr *mr)
{
    return mr->mw_type != 0;
}

/* The key of MR-table entry @index (an MR or a window) with tag @tag. */
static inline uint32_t vhca_mr_key(uint32_t index, uint8_t tag)
{
    return index << 8 | tag;
}

/* [@addr, @addr + @len) lies in [@start, @start + @length). */
static inline bool vhca_range_within(uint64_t start, uint64_t length,
                                     uint64_t addr, uint64_t len)
{
    return addr >= start && len <= length && addr - start <= length - len;
}

struct VhcaCq {
    uint64_t *pages;
    uint32_t log_size;
    uint32_t pi;                    /* CQEs produced (free running) */
    uint32_t ci;                    /* consumer index last learnt */
    uint32_t eqn;
    uint32_t db_page;
    uint64_t dbrec_addr;
    uint32_t arm;                   /* 0, VHCA_CQ_ARM_NEXT or _SOLICITED */
    bool error;                     /* overflowed: IBTA 11.4.2.1 */
    uint32_t users;                 /* QPs that complete to it */
};

/*
 * A shared receive queue (IBTA 10.2.9): a ring of receive WQEs that the
 * QPs created with its number take from, in ring order (vhca-srq.c).
 */
struct VhcaSrq {
    uint64_t *pages;
    uint32_t log_size;
    uint32_t pi;                    /* last doorbell: WQEs posted */
    uint32_t ci;                    /* WQEs taken (written to ci_addr) */
    uint32_t pdn;                   /* receive buffers are checked in it */
    uint32_t db_page;
    uint64_t ci_addr;
    uint32_t limit;                 /* armed limit, 0: disarmed */
    bool error;                     /* its ring failed: gives no WQE */
    uint32_t users;                 /* QPs that receive from it */
    /* XRC SRQ (annex A14): named by requests to XRC_TGT QPs of xrcdn. */
    uint8_t type;                   /* enum vhca_srq_type */
    uint32_t xrcdn;
    uint32_t cqn;                   /* where its receive completions go */
};

/* One work queue (SQ or RQ) of a QP. */
typedef struct VhcaWq {
    uint64_t *pages;
    uint32_t log_size;
    uint32_t stride;                /* WQE size */
    uint32_t pi;                    /* last doorbell: WQEs posted */
    uint32_t ci;                    /* WQEs completed or flushed */
} VhcaWq;

/* ---------------------------------------------------------------------- */
/* Transport state, every QP type (IBTA Vol 1 chapters 9 and 10)          */
/* ---------------------------------------------------------------------- */

/* Send WQEs a QP may have fetched and not yet completed. */
#define VHCA_REQ_WINDOW         128
/* Packets a requester may have sent and not had acknowledged. */
#define VHCA_REQ_MAX_UNACKED    256
/* AckReq at least every this many packets of a long message. */
#define VHCA_REQ_ACKREQ_EVERY   32
/*
 * After a loss the RC requester sends with a smaller window that grows
 * again with the ACKs (vhca-req.c, "Window and timer back-off"): it is
 * never halved below this many packets on a sequence NAK ...
 */
#define VHCA_REQ_MIN_WINDOW     2
/*
 * ... and consecutive timeouts double the Local ACK Timeout T at most
 * this many times: 4T, the longest IBTA 9.7.6.1.3 lets the transport
 * timer run.
 */
#define VHCA_REQ_MAX_BACKOFF    2
/*
 * Received frames waiting for their QP, per QP and per device, in frames
 * and in bytes.  Each frame sits in a buffer of one of two sizes
 * (vhca_rx_buf_size(): its parsed headers and room for a datagram of up
 * to 256 bytes, or for the longest one a queue takes, about 4.4 KiB, as
 * frames with more payload than the MTU allow are dropped first), and
 * counts for its buffer's size.  Whichever bound is reached first drops
 * the frame.  Buffers a queue gives back are kept for the next frames
 * rather than freed, as long as queued and kept buffers together stay
 * within VHCA_RXQ_MAX_DEV_BYTES: at most that much heap per device,
 * whatever a peer sends.
 */
#define VHCA_RXQ_MAX_QP         256
#define VHCA_RXQ_MAX_DEV        2048
#define VHCA_RXQ_MAX_QP_BYTES   (1u << 20)
#define VHCA_RXQ_MAX_DEV_BYTES  (8u << 20)
#define VHCA_NO_DEADLINE        UINT64_MAX

/* A received RoCE frame, parsed, waiting for its QP. */
typedef struct VhcaRxFrame VhcaRxFrame;

typedef struct VhcaFrameQueue {
    VhcaRxFrame *head;
    VhcaRxFrame *tail;
    uint32_t count;
    uint32_t bytes;                 /* sum of the entries' buffer sizes */
} VhcaFrameQueue;

/*
 * Where a packet goes: a connected QP's primary path (its attributes) or
 * the address vector of one UD send WQE.
 */
typedef struct VhcaPath {
    uint8_t dgid[VHCA_GID_LEN];     /* network byte order */
    uint8_t dmac[VHCA_ETH_ALEN];
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint16_t udp_sport;             /* 0: derived from the flow */
    uint32_t flow_label;
    uint32_t dest_qpn;
    uint16_t pkey_index;            /* IB: the BTH P_Key's table entry */
    /* IB port: the LRH, and whether a GRH (the fields above) goes too */
    uint16_t dlid;
    uint8_t sl;
    uint8_t src_path_bits;
    bool grh;
} VhcaPath;

/*
 * What the requester keeps of a send WQE it fetched: everything but the
 * data and its SGEs, which are read again from the SQ at each (re)send,
 * as the retransmit queue is of WQEs, not frames.
 */
typedef struct VhcaSendMeta {
    uint64_t wr_id;
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
    uint32_t rkey;
    uint32_t imm_or_inv;            /* as the WQE holds it (LE load) */
    uint32_t len;                   /* message length */
    uint32_t first_psn;
    uint32_t npkts;                 /* PSNs the message takes */
    uint32_t done_pkts;             /* READ: response packets received */
    uint32_t vendor_err;
    uint8_t opcode;                 /* enum vhca_wqe_opcode */
    uint8_t flags;                  /* VHCA_WQE_* */
    uint8_t num_sge;
    uint8_t status;                 /* not SUCCESS: complete with it */
    uint32_t xrc_srqn;              /* XRC_INI: the target's XRC SRQ */
    uint8_t flush_type;             /* FLUSH: placement type bits */
    uint8_t flush_level;            /* FLUSH: selectivity level */
    /* UD: the destination and the Q_Key the DETH carries (10.2.5). */
    VhcaPath ud_path;
    uint32_t qkey;
} VhcaSendMeta;

typedef struct VhcaRequester {
    VhcaSendMeta *win;              /* indexed by SQ index % win_size */
    uint32_t win_size;              /* power of two */
    uint32_t fetched;               /* SQ index of the next WQE to fetch */
    uint32_t cur;                   /* SQ index of the WQE being sent */
    uint32_t cur_pkt;               /* its next packet */
    uint32_t next_psn;              /* first PSN of the next fetched WQE */
    uint32_t una_psn;               /* oldest PSN not acknowledged */
    uint32_t sent_psn;              /* one past the highest PSN sent */
    uint32_t noack_pkts;            /* sent since the last AckReq */
    uint32_t rd_atomic;             /* READ/atomic WQEs fetched, not done */
    uint8_t retry_left;
    uint8_t rnr_left;
    bool rnr_wait;                  /* RNR NAK: waiting for the timer */
    bool retrying;                  /* went back to retry_psn, no progress */
    bool probe;                     /* timed out: resend the oldest only */
    uint32_t retry_psn;
    bool sqd_notify;                /* SQD: post SQ_DRAINED when drained */
    /*
     * Loss back-off (vhca-req.c): the packets it may have unacknowledged
     * (VHCA_REQ_MAX_UNACKED until a loss), the window below which it
     * grows by the packets each ACK retires (slow start) and above which
     * by one per window's worth (additive increase), the ACKed packets
     * toward that one; how many times consecutive timeouts doubled the
     * retransmit timer.
     */
    uint32_t window;
    uint32_t ssthresh;
    uint32_t window_acked;
    uint8_t backoff;
} VhcaRequester;

/*
 * A responder resource (IBTA 9.7.5.1.3): a READ, atomic, FLUSH or ATOMIC
 * WRITE to replay.
 */
typedef struct VhcaRdRes {
    uint8_t kind;                   /* VHCA_RES_* */
    uint32_t first_psn;
    uint32_t last_psn;
    uint64_t va;
    uint32_t rkey;
    uint64_t gen;                   /* the MR @rkey named (vhca_mr_check) */
    uint32_t pdn;                   /* the PD it was checked in */
    uint32_t len;
    uint64_t orig;                  /* atomic: original remote data */
} VhcaRdRes;

typedef struct VhcaResponder {
    uint32_t epsn;                  /* expected PSN */
    uint32_t msn;
    bool nak_sent;                  /* in a PSN error (or RNR) episode */
    bool uc_drop;                   /* UC: discard until FIRST or ONLY */
    bool comm_est;                  /* COMM_EST posted */
    uint8_t cur;                    /* message in progress: VHCA_RESP_* */
    uint32_t cur_len;               /* its bytes so far */
    /* RDMA WRITE in progress */
    uint64_t write_va;
    uint32_t write_rkey;
    uint64_t write_gen;             /* the MR the FIRST packet checked */
    uint32_t write_len;
    /*
     * The receive WQE the message in progress fills, from the QP's RQ
     * (at rq.ci, which moves on when it completes) or taken from its SRQ
     * (IBTA 10.2.9: the QP owns it from the take); vhca_rq_take().
     */
    bool rwqe_held;
    uint32_t rwqe_srqn;             /* the SRQ it came from, 0: the RQ */
    uint32_t rwqe_index;            /* its RQ or SRQ index, for traces */
    uint32_t rwqe_pdn;              /* the PD its buffer is checked in */
    uint64_t rwqe_wr_id;
    uint8_t rwqe_nsge;
    struct vhca_sge rwqe_sge[VHCA_MAX_RECV_SGE];  /* host byte order */
    uint64_t rwqe_cap;
    /*
     * Responder resources, VHCA_MAX_RD_ATOMIC of them, allocated with a
     * reliable QP (NULL otherwise); max_dest_rd_atomic of them are used.
     */
    VhcaRdRes *res;
    uint32_t res_next;
    /* The READ response stream being sent. */
    bool read_active;
    uint64_t read_va;
    uint32_t read_rkey;
    uint64_t read_gen;              /* the MR the READ request checked */
    uint32_t read_pdn;              /* and the PD it was checked in */
    uint32_t read_len;
    uint32_t read_psn;              /* PSN of the stream's first packet */
    uint32_t read_idx;              /* next packet of the stream */
    /*
     * XRC_TGT: the XRC SRQ the request being executed named (annex A14),
     * checked for each packet; a SEND's packets all name the same.
     */
    uint32_t xrc_srqn;
    /* Coalesced ACK, sent at the end of a pass. */
    bool ack_pending;
    uint32_t ack_psn;
} VhcaResponder;

enum { VHCA_RESP_NONE, VHCA_RESP_SEND, VHCA_RESP_WRITE };
/*
 * VHCA_RES_PLACEMENT: a FLUSH or ATOMIC WRITE, executed once; a duplicate
 * gets its zero-length READ response again (IBTA 1.5, as rxe).
 */
enum { VHCA_RES_FREE, VHCA_RES_READ, VHCA_RES_ATOMIC, VHCA_RES_PLACEMENT };

/*
 * Why the device, not the driver, moved a QP to ERR or SQE: the first
 * failure since the QP last entered RESET or RTS, for people looking at
 * the device from the host (vhca_core_dump()).
 */
typedef struct VhcaQpError {
    uint8_t status;                 /* VHCA_WC_* of the failed WR */
    uint32_t vendor_err;
    bool fatal;                     /* QP_FATAL: a CQ of it overflowed */
} VhcaQpError;

struct VhcaQp {
    uint8_t type;                   /* enum vhca_qp_type */
    uint8_t state;                  /* enum vhca_qp_state */
    bool sq_sig_all;
    uint32_t pdn;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    uint32_t db_page;
    uint32_t srqn;                  /* 0, or the SRQ it receives from */
    uint32_t xrcdn;                 /* XRC_TGT: its XRC domain */
    VhcaWq sq;
    VhcaWq rq;                      /* empty (no pages) with an SRQ */
    /* What MODIFY_QP set, in host byte order; QUERY_QP returns it. */
    struct vhca_qp_attr attr;
    /* RC and UC: where packets go, from attr (vhca_qp_apply). */
    VhcaPath path;

    /*
     * Transport (vhca-req.c, vhca-completer.c, vhca-resp.c, vhca-uc.c,
     * vhca-ud.c, vhca-recv.c, vhca-sched.c); UC and UD use the requester
     * and receiver parts, RC all of it.
     */
    VhcaRequester req;
    VhcaResponder resp;
    VhcaFrameQueue rxq_req;         /* requests, for the responder */
    VhcaFrameQueue rxq_resp;        /* responses, for the completer */
    uint64_t deadline;              /* retransmit or RNR timer */
    VhcaQpError err;
    /*
     * Congestion control (vhca-cc.c): the reaction point's rate and the
     * pacer that holds the requester to it, the notification point's
     * CNP pacing.
     */
    VhcaDcqcn rp;
    VhcaPacer pacer;
    /*
     * When the paced requester may send again, VHCA_NO_DEADLINE if it is
     * not waiting for its rate: a deadline of its own, beside the
     * retransmit or RNR timer, so that the timer never mistakes one for
     * the other.
     */
    uint64_t pace_ns;
    uint32_t cnps_handled;          /* by the reaction point, since init */
    VhcaCnpPacer np;
    bool cnp_pending;               /* a CNP to send, to cnp_path */
    VhcaPath cnp_path;
    /*
     * PFC (vhca-pfc.c): the priorities whose pause holds the requester
     * (bit i: priority i), its pace_ns their end; a resume kicks it.
     */
    uint8_t pfc_wait;
};

/*
 * The requester's loss back-off at rest (vhca-req.c): the whole window,
 * the timer at T.
 */
static inline void vhca_req_window_init(VhcaRequester *req)
{
    req->window = VHCA_REQ_MAX_UNACKED;
    req->ssthresh = VHCA_REQ_MAX_UNACKED;
    req->window_acked = 0;
    req->backoff = 0;
}

/* RC and both halves of XRC run the reliable transport (9.7, A14). */
static inline bool vhca_qp_is_reliable(const VhcaQp *qp)
{
    return qp->type == VHCA_QPT_RC || qp->type == VHCA_QPT_XRC_INI ||
           qp->type == VHCA_QPT_XRC_TGT;
}

/*
 * The datagram QPs (9.8.4 UD): UD, the GSI QP, and on the IB port the
 * SMI QP (14.2.4.1).
 */
static inline bool vhca_qp_is_datagram(const VhcaQp *qp)
{
    return qp->type == VHCA_QPT_UD || qp->type == VHCA_QPT_GSI ||
           qp->type == VHCA_QPT_SMI;
}

static inline bool vhca_qp_is_xrc(const VhcaQp *qp)
{
    return qp->type == VHCA_QPT_XRC_INI || qp->type == VHCA_QPT_XRC_TGT;
}

/*
 * The QP's receive WQEs come from an SRQ: the one it was created on, or
 * for an XRC_TGT QP the one each request names (annex A14).
 */
static inline bool vhca_qp_on_srq(const VhcaQp *qp)
{
    return qp->srqn || qp->type == VHCA_QPT_XRC_TGT;
}

/* What vhca_mr_check() found (IBTA 10.6.3). */
typedef enum VhcaMrStatus {
    VHCA_MR_OK,
    VHCA_MR_BAD_KEY,                /* no MR, destroyed, or stale tag */
    VHCA_MR_PD_MISMATCH,
    VHCA_MR_OUT_OF_BOUNDS,
    VHCA_MR_NO_ACCESS,              /* a right the MR does not grant */
    VHCA_MR_MISALIGNED,             /* atomic not 8-byte aligned/sized */
    VHCA_MR_NOT_VALID,              /* fast-register MR or window, free */
    VHCA_MR_QP_MISMATCH,            /* type 2 window tied to another QP */
} VhcaMrStatus;

/* A command's view of its admin queue entry (vhca-admin.c). */
typedef struct VhcaCmdCtx {
    uint16_t opcode;
    const uint8_t *in;              /* 32 bytes */
    uint8_t *out;                   /* 16 bytes, zeroed */
    uint32_t syndrome;
} VhcaCmdCtx;

/*
 * Report a failed command the way hw/nvme does: one place, with the
 * command's name, so the glue can trace it and log a guest error.
 */
#define VHCA_CMD_FAIL(core, ctx, status, fmt, ...)                          \
    (VHCA_HOOK((core), err_admin_cmd, (ctx)->opcode, (status),              \
               (ctx)->syndrome),                                            \
     vhca_guest_error((core), VHCA_GUEST_ERR_ADMIN_CMD, "%s: " fmt,         \
                      vhca_admin_opcode_name((ctx)->opcode),           \
                      ## __VA_ARGS__),                                      \
     (status))

/* vhca-res.c: handles, mailboxes, page lists, object look-up. */
int vhca_ids_init(VhcaIds *ids, uint32_t first, uint32_t last);
void vhca_ids_destroy(VhcaIds *ids);
void vhca_ids_clear(VhcaIds *ids);
/* Lowest free handle, now in use; 0 if none is free. */
uint32_t vhca_ids_alloc(VhcaIds *ids);
/* The same among the handles >= @from. */
uint32_t vhca_ids_alloc_from(VhcaIds *ids, uint32_t from);
/* Take handle @id; false if it is out of range or in use. */
bool vhca_ids_claim(VhcaIds *ids, uint32_t id);
void vhca_ids_free(VhcaIds *ids, uint32_t id);
/* Inline: every QP, CQ and MR lookup of every packet asks it. */
static inline bool vhca_ids_used(const VhcaIds *ids, uint32_t id)
{
    return id >= ids->first && id <= ids->last &&
           (ids->map[id / 64] & (1ull << (id % 64)));
}
/* Lowest handle in use that is >= @from; 0 if there is none. */
uint32_t vhca_ids_next(const VhcaIds *ids, uint32_t from);

uint8_t vhca_cmd_mailbox_read(VhcaCore *core, VhcaCmdCtx *ctx, void *buf,
                              size_t len);
/*
 * The same for a mailbox with a le32 flags word at @flags_off, returned
 * in *@flags: a flag outside @known fails BAD_PARAM with the flags as the
 * syndrome (SET_RX_FILTER, SET_CC).
 */
uint8_t vhca_cmd_mailbox_read_flags(VhcaCore *core, VhcaCmdCtx *ctx,
                                    void *buf, size_t len, size_t flags_off,
                                    uint32_t known, uint32_t *flags);
uint8_t vhca_cmd_mailbox_write(VhcaCore *core, VhcaCmdCtx *ctx,
                               const void *buf, size_t len);
uint32_t vhca_cmd_handle_in(const VhcaCmdCtx *ctx);
void vhca_cmd_set_handle_out(VhcaCmdCtx *ctx, uint32_t handle, uint32_t key);

/*
 * Read a queue's level 1 page list (@npages entries at @pbl_addr) and keep
 * the first @need pages.  Returns a status; *pages is malloc'ed on success.
 */
uint8_t vhca_queue_pages_read(VhcaCore *core, VhcaCmdCtx *ctx,
                              uint64_t pbl_addr, uint32_t npages,
                              uint64_t bytes, uint64_t **pages);
uint64_t vhca_queue_addr(const uint64_t *pages, uint32_t log_size,
                         uint32_t index, uint32_t stride);

/* An owner page for a new CQ/QP: allocated uctx or KERNEL_NONE. */
bool vhca_db_page_ok(const VhcaCore *core, uint32_t db_page);
void vhca_db_page_get(VhcaCore *core, uint32_t db_page);
void vhca_db_page_put(VhcaCore *core, uint32_t db_page);

VhcaPd *vhca_pd_lookup(VhcaCore *core, uint32_t pdn);
VhcaEq *vhca_comp_eq_lookup(VhcaCore *core, uint32_t eqn);
VhcaCq *vhca_cq_lookup(VhcaCore *core, uint32_t cqn);
VhcaQp *vhca_qp_lookup(VhcaCore *core, uint32_t qpn);
VhcaSrq *vhca_srq_lookup(VhcaCore *core, uint32_t srqn);

/* vhca-device.c: the object tables. */
int vhca_rdma_init(VhcaCore *core);
void vhca_rdma_reset(VhcaCore *core);
void vhca_rdma_cleanup(VhcaCore *core);

/* vhca-admin.c */
void vhca_admq_doorbell(VhcaCore *core, uint32_t pi);

/* vhca-eq.c */
void vhca_aeq_start(VhcaCore *core);
void vhca_aeq_doorbell(VhcaCore *core, uint32_t value);
void vhca_aeq_post(VhcaCore *core, uint8_t type, uint8_t subtype,
                   uint32_t data0, uint32_t data1);

/* vhca-eth.c */
void vhca_eth_ctrl_write(VhcaCore *core, uint32_t value);
void vhca_eth_tx_doorbell(VhcaCore *core, uint32_t pi);
/* A pause (802.1Qbb) that held the TX ring ended: send what it holds. */
void vhca_eth_tx_resume(VhcaCore *core);
void vhca_eth_rx_doorbell(VhcaCore *core, uint32_t pi);
void vhca_eth_irq_arm(VhcaCore *core);
/*
 * A received frame that is not RoCEv2 for us (at least an Ethernet
 * header long): RX filter, then the RX ring.
 */
VhcaRxResult vhca_eth_receive(VhcaCore *core, const uint8_t *buf,
                              size_t len);

/* vhca-net.c: after SET_GID or DEL_GID, where vhca_gid_is_ours() stops. */
void vhca_gid_tbl_update_top(VhcaCore *core);
/* vhca-net.c: is @gid a valid entry of our GID table? */
bool vhca_gid_is_ours(const VhcaCore *core,
                      const uint8_t gid[VHCA_GID_LEN]);

/* The admin command handlers, one file per object. */
/* vhca-eth.c: the admin command that programs the RX filter. */
uint8_t vhca_cmd_set_rx_filter(VhcaCore *core, VhcaCmdCtx *ctx);

/* vhca-cc.c: RoCE congestion control's configuration. */
uint8_t vhca_cmd_set_cc(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_query_cc(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_create_pd(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_destroy_pd(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_create_mr(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_destroy_mr(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_create_eq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_destroy_eq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_create_cq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_destroy_cq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_resize_cq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_create_qp(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_modify_qp(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_query_qp(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_destroy_qp(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_attach_mcast(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_detach_mcast(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_create_srq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_modify_srq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_query_srq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_destroy_srq(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_alloc_xrcd(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_dealloc_xrcd(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_alloc_mw(VhcaCore *core, VhcaCmdCtx *ctx);
uint8_t vhca_cmd_dealloc_mw(VhcaCore *core, VhcaCmdCtx *ctx);

/* vhca-xrc.c: XRC domains and the target's SRQ rule (annex A14). */
bool vhca_xrcd_exists(const VhcaCore *core, uint32_t xrcdn);
void vhca_xrcd_reset(VhcaCore *core);
/*
 * The XRC SRQ a request to XRC_TGT QP @qp names: NULL unless @srqn is an
 * XRC SRQ in the QP's domain.
 */
VhcaSrq *vhca_xrc_request_srq(VhcaCore *core, const VhcaQp *qp,
                              uint32_t srqn);
/*
 * XRC SRQ @srqn is destroyed: XRC_TGT QPs holding one of its WQEs for a
 * message in progress drop it without a completion (no QP is attached
 * to an XRC SRQ to keep it alive); the rest of that message fails.
 */
void vhca_xrc_srq_gone(VhcaCore *core, uint32_t srqn);

/* vhca-srq.c: shared receive queues (IBTA 10.2.9, 11.2.3). */
void vhca_srq_doorbell(VhcaCore *core, uint32_t page, uint32_t srqn,
                       uint32_t pi);
/* Does SRQ @srqn have a WQE to give (posted, not taken, not in error)? */
bool vhca_srq_has_wqe(const VhcaCore *core, uint32_t srqn);
/*
 * Take the SRQ's next WQE (VHCA_RECV_WQE_SIZE bytes into @raw): the
 * consumer count moves on and is written to ci_addr, then the limit is
 * checked.  *@index gets the WQE's index.  False if there is none, or
 * the ring is not guest RAM (the SRQ enters error).
 */
bool vhca_srq_take(VhcaCore *core, uint32_t srqn, uint8_t *raw,
                   uint32_t *index);
/*
 * QP @qpn, attached to an SRQ, entered ERR and its held WQE was flushed:
 * post LAST_WQE_REACHED (IBTA 11.6.3.1), as it takes no more WQEs.
 */
void vhca_srq_qp_error(VhcaCore *core, uint32_t qpn);
void vhca_srq_reset(VhcaCore *core);
void vhca_srq_free_queues(VhcaCore *core);

/* vhca-mcast.c: multicast groups (IBTA 10.5.2). */
/* ff00::/8, or IPv4-mapped 224.0.0.0/4 (::ffff:e0.0.0.0/100). */
bool vhca_gid_is_multicast(const uint8_t gid[VHCA_GID_LEN]);
/* The group @gid if at least one of our QPs joined it, else NULL. */
const VhcaMcastGroup *vhca_mcast_find(const VhcaCore *core,
                                      const uint8_t gid[VHCA_GID_LEN]);
/* DESTROY_QP: the QP leaves every group (IBTA 11.3.1: detached). */
void vhca_mcast_qp_gone(VhcaCore *core, uint32_t qpn);
void vhca_mcast_reset(VhcaCore *core);

/* vhca-core.c: the port's active MTU (enum vhca_ib_mtu, 0 if none). */
uint8_t vhca_port_active_mtu(const VhcaCore *core);

/*
 * An MR generation that pins nothing: whichever MR the key names when the
 * data moves.  Every real generation is above it.
 */
#define VHCA_MR_GEN_ANY     0

/*
 * The rights that only a peer's request asks for.  A key is resolved as a
 * memory window's only for them: windows grant remote access alone
 * (IBTA 10.6.7), and a window's key in a local SGE names no MR.
 */
#define VHCA_ACCESS_REMOTE_ANY  (VHCA_ACCESS_REMOTE_WRITE |                 \
                                 VHCA_ACCESS_REMOTE_READ |                  \
                                 VHCA_ACCESS_REMOTE_ATOMIC |                \
                                 VHCA_ACCESS_FLUSH_GLOBAL |                 \
                                 VHCA_ACCESS_FLUSH_PERSISTENT)

/*
 * vhca-mr.c: what the transport calls for every memory access.  Checks
 * @key, PD @pdn, the bounds and @access (IBTA 10.6.3); if @gen is not
 * NULL and the check passes, stores the generation of the MR checked, for
 * the data movements of the same message to pin (vhca_sg_copy_one()).
 * When @access asks for a remote right and @key names a memory window,
 * the window's checks come first (vhca_mw_check(); @qpn is the QP the
 * request came to, for type 2 windows), then the MR's bounds at the
 * translated address, and *@gen is the window's generation.
 */
VhcaMrStatus vhca_mr_check(VhcaCore *core, uint32_t key, uint32_t pdn,
                           uint32_t qpn, uint64_t addr, uint64_t len,
                           uint32_t access, uint64_t *gen);
/*
 * The same checks for the whole MR (or window) @key names, whatever its
 * range: an MR-level FLUSH (IBTA 1.5) names no range.
 */
VhcaMrStatus vhca_mr_check_whole(VhcaCore *core, uint32_t key, uint32_t pdn,
                                 uint32_t qpn, uint32_t access);
const char *vhca_mr_status_name(VhcaMrStatus status);

/*
 * Fast registration (IBTA 10.6.3.2, 10.7): the REG_MR and LOCAL_INV send
 * WQEs of QP @qpn in PD @pdn (@wqe: the raw 256 bytes), and the
 * invalidation a SEND with Invalidate to QP @qpn asks for.  Each returns
 * VHCA_WC_SUCCESS or the status its WQE completes with;
 * vhca_mr_remote_invalidate() returns false if @key cannot be
 * invalidated.  Both invalidations take a type 2 window's key too
 * (vhca_mw_invalidate()).
 */
uint8_t vhca_mr_fast_reg(VhcaCore *core, uint32_t pdn, const uint8_t *wqe);
uint8_t vhca_mr_local_inv(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                          uint32_t key);
bool vhca_mr_remote_invalidate(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                               uint32_t key);
/* The MR or window @key names now (index and tag), or NULL. */
VhcaMr *vhca_mr_by_key(VhcaCore *core, uint32_t key);

/*
 * vhca-mw.c: memory windows (IBTA 10.6.7; docs/specs/vhca.rst, "Memory
 * windows").  vhca_mw_bind() executes the BIND_MW WQE @wqe of QP @qpn in
 * PD @pdn: VHCA_WC_SUCCESS or VHCA_WC_MW_BIND_ERR.
 */
uint8_t vhca_mw_bind(VhcaCore *core, uint32_t qpn, uint32_t pdn,
                     const uint8_t *wqe);
/*
 * Remote access through window @mw (the key named it, tag included) by
 * a request to QP @qpn in PD @pdn: the window's checks of
 * [*@addr, *@addr + @len) and @access; on VHCA_MR_OK, *@addr is the
 * address in the MR's space and *@mr the MR, still the one bound (its
 * own bounds are the caller's to check; its rights are not needed).
 * @whole: the whole window, whatever *@addr and @len (MR-level FLUSH).
 */
VhcaMrStatus vhca_mw_check(VhcaCore *core, const VhcaMr *mw, uint32_t pdn,
                           uint32_t qpn, uint64_t *addr, uint64_t *len,
                           uint32_t access, bool whole, const VhcaMr **mr);
/*
 * LOCAL_INV (@remote false) or SEND with Invalidate to QP @qpn in PD
 * @pdn of window @mw: false if it cannot be invalidated.
 */
bool vhca_mw_invalidate(VhcaCore *core, VhcaMr *mw, uint32_t qpn,
                        uint32_t pdn, bool remote);
/* DESTROY_QP: the type 2 windows tied to QP @qpn become free. */
void vhca_mw_qp_gone(VhcaCore *core, uint32_t qpn);

/* Which way vhca_sg_copy() moves the data. */
typedef enum VhcaSgDir {
    VHCA_SG_GATHER,                 /* guest memory to @buf */
    VHCA_SG_SCATTER,                /* @buf to guest memory */
} VhcaSgDir;

/*
 * The one copy between the device and guest memory through memory
 * regions, for every user: a send WQE's data (gather), a receive WQE's
 * buffer, a READ response's or an atomic's local buffer (scatter), and
 * RDMA WRITE, READ and atomics through an R_Key (vhca_sg_copy_one()).
 * Nothing else in the engine reaches an MR's memory, so no caller can
 * skip a check.
 *
 * Copies @len bytes between @buf and bytes [@offset, @offset + @len) of
 * the buffer that the @nsge entries of @sgl describe (host byte order;
 * zero-length entries hold nothing).  Each piece is checked before it
 * moves (key, PD @pdn, bounds, @access, as vhca_mr_check()), then copied
 * page by page.  Returns VHCA_WC_SUCCESS, VHCA_WC_LOC_PROT_ERR if a check
 * fails or a page is not guest RAM, or VHCA_WC_LOC_LEN_ERR if the list
 * holds fewer than @offset + @len bytes.  What was copied before a
 * failure stays copied.
 */
uint8_t vhca_sg_copy(VhcaCore *core, VhcaSgDir dir,
                     const struct vhca_sge *sgl, unsigned nsge,
                     uint64_t offset, void *buf, uint32_t len, uint32_t pdn,
                     uint32_t access);

/*
 * vhca_sg_copy() of the one range [@addr, @addr + @len) of key @key, in
 * the MR (or window) of generation @gen only (VHCA_MR_GEN_ANY: whatever
 * the key names now), for a request to QP @qpn (vhca_mr_check()).  The
 * packets after the first of a multi-packet RDMA WRITE, and the response
 * packets of a READ, pass the generation their request checked: if the
 * MR was destroyed and its index and tag reused since, or the window
 * rebound, invalidated or deallocated, the key names something else and
 * the data does not move (as rxe holds a reference to the MR for the
 * message; IBTA 10.6.7.2).
 */
uint8_t vhca_sg_copy_one(VhcaCore *core, VhcaSgDir dir, uint32_t key,
                         uint64_t gen, uint64_t addr, void *buf,
                         uint32_t len, uint32_t pdn, uint32_t qpn,
                         uint32_t access);

/* vhca-eq.c: the producer shared by EQ 0 and the completion EQs. */
bool vhca_eq_post(VhcaCore *core, VhcaEq *eq, VhcaGuestError kind,
                  uint8_t type, uint8_t subtype, uint32_t data0,
                  uint32_t data1);
void vhca_comp_eq_doorbell(VhcaCore *core, uint32_t eqn, uint32_t value);

/* vhca-cq.c */
typedef struct VhcaCompletion {
    uint64_t wr_id;
    uint32_t byte_len;
    uint32_t imm_or_inv;
    uint32_t qpn;
    uint32_t src_qp;
    uint32_t vendor_err;
    uint8_t status;                 /* VHCA_WC_* (enum ibv_wc_status) */
    uint8_t opcode;                 /* enum vhca_cqe_opcode */
    uint8_t flags;                  /* VHCA_CQE_* */
    bool solicited;                 /* for ARM_SOLICITED */
} VhcaCompletion;

/*
 * Write a CQE.  Returns false if the CQ is in error or goes into error
 * now (overflow, ring not in RAM); the QPs that use it are then moved to
 * ERR by vhca_cq_errors_settle().
 */
bool vhca_cq_post(VhcaCore *core, uint32_t cqn, const VhcaCompletion *wc);
/*
 * Write CQE @cqe at @index of the ring on @pages, owner byte last;
 * non-zero if the slot is not guest RAM (*@addr: its address).
 */
int vhca_cq_write_cqe(VhcaCore *core, const uint64_t *pages,
                      uint32_t log_size, uint32_t index,
                      const uint8_t *cqe, uint64_t *addr);
void vhca_cq_doorbell(VhcaCore *core, uint32_t page, uint32_t cqn,
                      uint32_t value);
/* Move every QP whose CQ is in error to ERR; call after posting CQEs. */
void vhca_cq_errors_settle(VhcaCore *core);

/* vhca-qp.c: the QP doorbells (and the QP commands above). */
void vhca_qp_sq_doorbell(VhcaCore *core, uint32_t page, uint32_t qpn,
                         uint32_t pi);
void vhca_qp_rq_doorbell(VhcaCore *core, uint32_t page, uint32_t qpn,
                         uint32_t pi);

/* vhca-qp-error.c: work queues, flush and the error states. */
/* Read the WQE at @index of a work queue (its first @len bytes). */
int vhca_wq_fetch(VhcaCore *core, const VhcaWq *wq, uint32_t index,
                  void *buf, size_t len);
/* The completion opcode of a send WQE opcode. */
uint8_t vhca_send_wc_opcode(uint8_t wr_opcode);
/* Complete every outstanding WQE of @wq with WR_FLUSH_ERR to CQ @cqn. */
void vhca_qp_flush_wq(VhcaCore *core, uint32_t qpn, VhcaWq *wq,
                      uint32_t cqn, bool is_sq);
/* The device moves @qp to ERR on its own (IBTA 10.3.1): QP_FATAL. */
void vhca_qp_fatal(VhcaCore *core, uint32_t qpn);
/*
 * Move @qp to ERR: stop its transport and flush its WQEs (IBTA 10.3.1,
 * 10.8.3.3).  No event: callers post one where the spec asks for it.
 */
void vhca_qp_set_error(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/*
 * UC and UD: a send WQE completed in error; @qp goes to SQE, the rest of
 * its SQ is flushed, its receive side goes on (IBTA 10.3.1 "Send Queue
 * Error").
 */
void vhca_qp_set_sq_error(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/* A WR of @qp failed with @status: remember it as why the QP fails. */
void vhca_qp_note_error(VhcaQp *qp, uint8_t status, uint32_t vendor_err);

/* vhca-req.c: SQD: post SQ_DRAINED if asked for and nothing is in flight. */
void vhca_req_sqd_check(VhcaCore *core, uint32_t qpn, VhcaQp *qp);

/* vhca-core.c: the clock (VhcaCoreOps.now_ns). */
uint64_t vhca_now(VhcaCore *core);

/* vhca-eq.c: post a QP affiliated asynchronous event (IBTA 11.6.3). */
void vhca_qp_event(VhcaCore *core, uint32_t qpn, uint8_t event);

/* vhca-sched.c: the per-QP state of the scheduler and the transport. */
/* @qpn has work: run it in the next deferred pass. */
void vhca_sched_kick(VhcaCore *core, uint32_t qpn);
/* Forget the QP's transport state: queued frames, timers, progress. */
void vhca_qp_transport_reset(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/* Allocate / free what a QP's transport needs (CREATE/DESTROY_QP). */
int vhca_qp_transport_init(VhcaQp *qp);
void vhca_qp_transport_free(VhcaCore *core, VhcaQp *qp);
/* Entering a state: RTR sets up the responder, RTS the requester. */
void vhca_qp_transport_enter(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             uint8_t prev, uint8_t next);
/* Drop every QP's queued frames, work and deadline (reset, cleanup). */
void vhca_sched_cleanup(VhcaCore *core);
/* The scheduler's per-QPN state for QPNs below @slots; 0 or -1. */
int vhca_sched_init(VhcaCore *core, uint32_t slots);
void vhca_sched_destroy(VhcaCore *core);

/* vhca-pass.c: the pass, for commands that must see doorbells run. */
/*
 * Doorbells before commands: run @qp's UD or UC send WQEs now, before the
 * command that calls this (vhca-pass.c tells why).
 */
void vhca_qp_drain_unreliable(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/*
 * Run now the UD and UC send WQEs rung for QPs that complete into CQ
 * @cqn, as a command after those doorbells must see them
 * (vhca_qp_drain_unreliable()).
 */
void vhca_pass_drain_senders(VhcaCore *core, uint32_t cqn);

/* vhca-qp-state.c: the Modify QP table (IBTA 11.2.4.2, Linux verbs.c). */
typedef enum VhcaQpModifyCheck {
    VHCA_QP_MODIFY_OK,
    VHCA_QP_MODIFY_BAD_TRANSITION,  /* *bad = cur << 8 | next */
    VHCA_QP_MODIFY_MISSING_ATTR,    /* *bad = required bits absent */
    VHCA_QP_MODIFY_EXTRA_ATTR,      /* *bad = bits not allowed */
} VhcaQpModifyCheck;

VhcaQpModifyCheck vhca_qp_modify_is_ok(uint8_t type, uint8_t cur,
                                       uint8_t next, uint32_t mask,
                                       uint32_t *bad);

#endif /* HW_VHCA_RDMA_H */
