/*
 * vhca engine: what the parts of the transport share, for every QP type
 * (IBTA Vol 1 chapters 9 and 10), and the receive path that feeds it:
 * link (vhca-link.c), network (vhca-net.c), the transport's demux
 * (vhca-demux.c) into per-QP queues of received frames
 * (vhca-rx-frames.c); the scheduler (vhca-sched.c) and the pass that runs
 * each QP (vhca-pass.c); the requester (vhca-req.c), the RC
 * completer (vhca-completer.c), the receivers (vhca-resp.c, vhca-uc.c,
 * vhca-ud.c, and what they share, vhca-recv.c) and transmission
 * (vhca-tx.c).  Engine-internal.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_TRANSPORT_H
#define HW_VHCA_TRANSPORT_H

#include "vhca-rdma.h"
#include "vhca-psn.h"
#include "vhca-wire.h"

/* Packets (sent or received) one QP may handle in one deferred pass. */
#define VHCA_SCHED_QP_BUDGET    64
/* Packets one deferred pass may handle in total. */
#define VHCA_SCHED_PASS_BUDGET  256
/* The default P_Key; the partition key table has only it (max_pkeys 1). */
#define VHCA_DEFAULT_PKEY       0xffff

struct VhcaRxFrame {
    VhcaRxFrame *next;
    VhcaCore *core;                 /* whose buffers it goes back to */
    uint32_t size;                  /* its buffer's: what it counts for */
    uint8_t pkey_index;             /* IB: the P_Key table entry it matched */
    VhcaWirePacket pkt;             /* payload points into data */
    uint8_t data[];                 /* the IP datagram: l3_offset is 0 */
};

/*
 * The longest IP datagram a receive queue takes: IPv4 with options (60
 * bytes, 20 more than IPv6's header), UDP, the longest IB headers, a
 * payload of the largest path MTU, its pad and the ICRC.
 */
#define VHCA_RX_DATAGRAM_MAX    (VHCA_WIRE_MAX_HEADERS + 20 + 4096 + 3)
/* Datagrams up to this long take a small receive buffer. */
#define VHCA_RX_DATAGRAM_SMALL  256

/* vhca-rx-frames.c: received frames, their queues, and the drops. */
/*
 * The size of the receive buffer an IP datagram of @len bytes takes (and
 * counts for in the queue bounds), 0 if it is longer than any.
 */
uint32_t vhca_rx_buf_size(uint32_t len);
/*
 * A buffer of @size bytes (vhca_rx_buf_size()) for a frame the queue
 * bounds admitted; NULL if the heap has none.
 */
VhcaRxFrame *vhca_rx_buf_get(VhcaCore *core, uint32_t size);
/* Free the kept buffers of size class @class (0 small, 1 large). */
void vhca_rx_buf_release(VhcaCore *core, unsigned class);
void vhca_frameq_push(VhcaCore *core, VhcaFrameQueue *q, VhcaRxFrame *f);
VhcaRxFrame *vhca_frameq_pop(VhcaCore *core, VhcaFrameQueue *q);
/* Drop every frame of @q (VHCA_DROP_QP_STATE). */
void vhca_frameq_clear(VhcaCore *core, VhcaFrameQueue *q);
/* The frame's buffer goes back to its device, for the next frame. */
void vhca_rx_frame_free(VhcaRxFrame *f);
/*
 * A received RoCE frame was dropped (enum vhca_drop_reason, in
 * include/vhca_hw.h).  Each drop counts in ROCE_RX_DROPPED and in its
 * reason's own counter, and is traced (vhca_roce_drop) with its reason and
 * QP: a frame from the wire is not the guest's doing, so never a guest
 * error.
 */
void vhca_rx_drop(VhcaCore *core, enum vhca_drop_reason reason, uint32_t qpn);
/* The same, with a detail for the trace (a parser error, a VID). */
void vhca_rx_drop_detail(VhcaCore *core, enum vhca_drop_reason reason,
                         const char *detail, uint32_t qpn);
/*
 * The parser refused a frame: traced with the parser's reason, counted
 * as a bad ICRC or VCRC, or as malformed.
 */
void vhca_rx_drop_malformed(VhcaCore *core, VhcaWireError err);

/* vhca-link-ib.c: the InfiniBand link layer of the receive path. */
/* One IB packet, LRH to VCRC, off the backend (link=ib). */
void vhca_link_ib_receive(VhcaCore *core, const uint8_t *buf, size_t len);
/*
 * Is @lrh's DLID one of our LIDs (with the LMC's path bits), the
 * permissive LID on VL15, or a multicast LID of a packet with a GRH?
 */
bool vhca_link_ib_dlid_ours(const VhcaCore *core, const VhcaWireLrh *lrh,
                            bool grh);

/* vhca-net.c: the network layer of the receive path. */
/*
 * A frame the link layer parsed into @pkt up to the UDP port: if it is
 * RoCEv2 to one of our GIDs or multicast groups, it goes to the
 * transport (vhca_rx_packet()) and the answer is true; for our GID on
 * another VLAN it is dropped (VHCA_DROP_VLAN), true too; false: not ours.
 */
bool vhca_net_receive(VhcaCore *core, const uint8_t *frame, size_t len,
                      VhcaWirePacket *pkt);
/*
 * The priority a received RoCE packet travels at, vhca_wire_priority():
 * its 802.1Q tag's PCP (IEEE 802.1Q-2018 6.9.1), else its DSCP >> 3
 * (mlx5's DSCP trust mode); 0 on the IB link.
 */
uint8_t vhca_frame_vlan_priority(const VhcaWirePacket *pkt);
/*
 * The GID entry a received RoCE packet is addressed to: its destination
 * GID on the frame's VLAN (an untagged frame: an untagged entry).  Not
 * found: VHCA_GID_RX_OTHER_VLAN if the GID is ours on another VLAN,
 * else VHCA_GID_RX_NOT_OURS.
 */
#define VHCA_GID_RX_NOT_OURS        (-1)
#define VHCA_GID_RX_OTHER_VLAN      (-2)
int vhca_gid_rx_index(const VhcaCore *core, const VhcaWirePacket *pkt);

/* vhca-demux.c: the transport's demux. */
/*
 * A RoCEv2 frame for one of our GIDs or multicast groups, from the wire
 * (vhca_net_receive()) or looped back by vhca_xmit() (@looped), its
 * network part parsed into @pkt by vhca_wire_parse_net().  The parse is
 * finished in place, the packet checked as far as it can be without its
 * QP's progress and queued on its QP with @pkt.
 */
void vhca_rx_packet(VhcaCore *core, const uint8_t *frame, size_t len,
                    VhcaWirePacket *pkt, bool looped);

/* vhca-cc.c: RoCE congestion control (docs/specs/vhca.rst). */
/* Power-on: everything off, DCQCN's default parameters. */
void vhca_cc_reset(VhcaCore *core);
/* A new or reset QP: full rate, nothing paced, no CNP sent yet. */
void vhca_cc_qp_init(VhcaCore *core, VhcaQp *qp);
/*
 * The notification point: @pkt, accepted for @qp, was marked CE; a CNP
 * goes to its sender if the NP is on and none went lately.
 */
void vhca_cc_rx_marked(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                       const VhcaWirePacket *pkt);
/* vhca-cnp.c: send the CNP vhca_cc_rx_marked() left on @qp, if any. */
void vhca_cc_send_pending(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/* The reaction point: a parsed CNP (BTH OpCode 0x81) arrived. */
void vhca_cc_rx_cnp(VhcaCore *core, const VhcaWirePacket *pkt);
/*
 * The requester's pacing: may @qp start a packet now?  If not, its
 * pace_ns says when it may, and the scheduler wakes it then.
 */
bool vhca_cc_may_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/* @qp sent a packet of @bytes: the pacer and DCQCN's byte counter. */
void vhca_cc_sent(VhcaCore *core, uint32_t qpn, VhcaQp *qp, uint64_t bytes);

/*
 * vhca-sched.c: which QPs have work, and their deadlines (the kick and
 * the QP's transport state are in vhca-rdma.h, for the commands).
 */
/* A pass starts: the number of QPs queued for it. */
uint32_t vhca_sched_pass_begin(VhcaCore *core);
/* The next queued QP into *@qpn, unmarked; false if it has no work now. */
bool vhca_sched_take(VhcaCore *core, uint32_t *qpn);
/* The QP has work left: it queues again behind the others. */
void vhca_sched_requeue(VhcaCore *core, uint32_t qpn);
/* The pass is over: ask for another if work is left, arm the timer. */
void vhca_sched_pass_end(VhcaCore *core);
/* The @i-th queued QP (i < sched_count) into *@qpn; true if it has work. */
bool vhca_sched_queued_at(const VhcaCore *core, uint32_t i, uint32_t *qpn);
/* The QP's deadline may have changed: its heap entry follows. */
void vhca_sched_deadline_sync(VhcaCore *core, uint32_t qpn,
                              const VhcaQp *qp);
/* Arm (or cancel) the device timer for the earliest deadline. */
void vhca_sched_timer_update(VhcaCore *core);
/* The timer fired: the number of deadlines to look at. */
uint32_t vhca_sched_timer_begin(VhcaCore *core);
/* The QP of the earliest deadline, if it is at or before @now. */
bool vhca_sched_take_due(VhcaCore *core, uint64_t now, uint32_t *qpn);
/* Ask the glue for a pass (ops->schedule()) if none is outstanding. */
void vhca_sched_request(VhcaCore *core);
/* The QPs with a deadline, and the QPN of the @i-th (heap order). */
uint32_t vhca_sched_deadlines(const VhcaCore *core);
uint32_t vhca_sched_deadline_qpn(const VhcaCore *core, uint32_t i);

/* vhca-pfc.c: priority flow control (IEEE 802.1Qbb), vhca-pfc.h. */
/* A pause of @quanta (512 bit times each) at the line rate, in ns. */
uint64_t vhca_pfc_quanta_ns(uint16_t quanta);
/* Power-on: PFC off, nothing paused, counters 0. */
void vhca_pfc_reset(VhcaCore *core);
/* SET_CC's pfc_enable; priorities turned off resume and release the peer. */
void vhca_pfc_set_enable(VhcaCore *core, uint8_t enable);
/* A MAC Control frame (EtherType 0x8808) from the wire. */
VhcaRxResult vhca_pfc_receive(VhcaCore *core, const uint8_t *buf,
                              size_t len);
/*
 * A source GID on a VLAN interface sends tagged (IEEE 802.1Q-2018 9.6):
 * its VID, and the path's SL as the PCP - on RoCE the SL is the
 * Ethernet priority, as mlx5 has it (the kernel's rdma_cm derives it
 * from the ToS through the VLAN device's egress map, iboe_tos_to_sl()).
 * An untagged GID sends untagged frames.  vhca_tx_headers_roce() writes
 * it; vhca_pfc_path_priority() reads the priority from it, so PFC pauses
 * what this tags.  Inline here so that the PFC layer needs no call into
 * vhca-tx.c (engine-circles).
 */
static inline void vhca_tx_vlan_tag(const VhcaCore *core,
                                    const VhcaPath *path,
                                    VhcaWireNet *net)
{
    const VhcaGidEntry *sgid = &core->gid_tbl[path->sgid_index %
                                              VHCA_CORE_GID_TBL_LEN_MAX];

    net->vlan = sgid->vlan;
    net->vlan_tci = sgid->vlan ?
                    (uint16_t)(((path->sl & VHCA_VLAN_PCP_MAX) <<
                                VHCA_VLAN_PCP_SHIFT) | sgid->vid) : 0;
}

/*
 * The priority the packets of @path travel at: vhca_wire_priority() of
 * the tag vhca_tx_vlan_tag() gives them and the path's traffic class, so
 * the SL (the PCP) from a VLAN GID, else the DSCP >> 3.
 */
uint8_t vhca_pfc_path_priority(const VhcaCore *core, const VhcaPath *path);
/*
 * May @qp send a packet on @path now?  If its priority is paused, no:
 * its pace_ns is the pause's end and a resume kicks it.
 */
bool vhca_pfc_may_send(VhcaCore *core, VhcaQp *qp, const VhcaPath *path);
/* Is @prio paused at @now (resuming it if its time ran out)? */
bool vhca_pfc_paused(VhcaCore *core, uint8_t prio, uint64_t now);
/* @prio's pause is over (time 0, its time ran out, or PFC turned off). */
void vhca_pfc_resume(VhcaCore *core, uint8_t prio, uint64_t now);
/* Is @pkt of a priority with PFC on (a QP's queue has headroom for it)? */
bool vhca_pfc_lossless(const VhcaCore *core, const VhcaWirePacket *pkt);
/* Frame @f joins (@in) or leaves a receive queue: XOFF/XON decisions. */
void vhca_pfc_rx_queued(VhcaCore *core, const VhcaRxFrame *f, bool in);
/* Send the PFC frame the decisions above asked for, if any. */
void vhca_pfc_send_pending(VhcaCore *core);
/* The earliest pause end or XOFF refresh, VHCA_NO_DEADLINE if none. */
uint64_t vhca_pfc_deadline(const VhcaCore *core);
/* The device timer fired: pauses that ran out, XOFFs to refresh. */
void vhca_pfc_timer(VhcaCore *core, uint64_t now);
/* A counter as QUERY_CC reports it: enum vhca_pfc_counter, in us. */
uint64_t vhca_pfc_counter(VhcaCore *core, unsigned counter, uint8_t prio);

/*
 * vhca-rx-rate.c: the x-rx-frame-rate limit on received requests (a
 * receiver that cannot keep up); runs the QP's receiver within it.
 */
bool vhca_rx_rate_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                      unsigned *budget);
/* vhca-pass.c: the QP's receiver for its type (responder, UC, UD). */
bool vhca_recv_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   unsigned *budget);

/*
 * IBTA 10.3.1: the receive side works from RTR on; RC stops in SQE (it
 * never gets there), UC and UD go on receiving in SQE.
 */
static inline bool vhca_qp_receives(const VhcaQp *qp)
{
    return qp->state >= VHCA_QPS_RTR &&
           qp->state <= (vhca_qp_is_reliable(qp) ? VHCA_QPS_SQD
                                                 : VHCA_QPS_SQE);
}

/*
 * The opcode @qp sends for the RC opcode @opcode: XRC QPs send the same
 * operations with the XRC transport bits (annex A14).
 */
static inline uint8_t vhca_qp_wire_opcode(const VhcaQp *qp, uint8_t opcode)
{
    if (!vhca_qp_is_xrc(qp)) {
        return opcode;
    }
    return (uint8_t)((opcode & ~VHCA_IB_TRANSPORT_MASK) |
                     VHCA_IB_TRANSPORT_XRC);
}

/* The QP's path MTU in bytes (IBTA 9.7.4: 256..4096). */
static inline uint32_t vhca_qp_mtu(const VhcaQp *qp)
{
    uint32_t mtu = vhca_ib_mtu_bytes(qp->attr.path_mtu);

    return mtu ? mtu : 256;
}

/* vhca-tx.c */
/*
 * Send @pkt (its transport part filled in) from QP @qpn along @path: the
 * network part and BTH DestQP come from the path.  A destination GID of
 * our own is looped back to our receive path, a multicast one both to
 * the wire and to our QPs in its group.
 */
void vhca_xmit(VhcaCore *core, uint32_t qpn, const VhcaPath *path,
               VhcaWirePacket *pkt);

/* vhca-req.c */
/*
 * Send what the QP has to send, at most *@budget packets, at the pace
 * its DCQCN rate allows (vhca_cc_may_send()); true if the budget ran out
 * with work left.
 */
bool vhca_req_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                  unsigned *budget);
/* The same without pacing (vhca_qp_drain_unreliable()). */
bool vhca_req_run_unpaced(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                          unsigned *budget);
/* Go back N: send again from @psn (IBTA 9.7.5.1.5, 9.7.6.1). */
void vhca_req_rewind(VhcaQp *qp, uint32_t psn);
VhcaSendMeta *vhca_req_head(VhcaQp *qp);
/*
 * A send opcode that takes a responder resource at the peer (READ,
 * atomics, FLUSH, ATOMIC WRITE): counts against max_rd_atomic, waits for
 * its own response.
 */
bool vhca_wr_takes_rd_res(uint8_t op);
/* The head WQE completed successfully; a CQE if it is signaled. */
void vhca_req_complete_head(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
/* The head WQE completes with @status and the QP goes to ERR. */
void vhca_req_fail(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   uint8_t status, uint32_t vendor_err);
/*
 * Write @len bytes at @offset of the head WQE's local buffer (its SGEs,
 * LOCAL_WRITE checked): READ response data and atomic results.
 * Returns 0 or a VHCA_WC_* error status.
 */
uint8_t vhca_req_scatter(VhcaCore *core, VhcaQp *qp, const void *data,
                         uint32_t offset, uint32_t len);
/* Arm the retransmit timer if something is unacknowledged. */
void vhca_req_restart_timer(VhcaCore *core, VhcaQp *qp);
/*
 * Loss back-off (vhca-req.c; vhca_req_window_init() in vhca-rdma.h): a
 * loss (@why) cuts the window; @acked packets ACKed grow it again;
 * a timeout after a timeout doubles the timer, up to 4T; the timer's
 * current length (VHCA_IB_TIMEOUT_NONE: none).
 */
void vhca_req_window_cut(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                         VhcaRetryCause why);
void vhca_req_window_grow(VhcaQp *qp, uint32_t acked);
void vhca_req_timer_backoff(VhcaCore *core, uint32_t qpn, VhcaQp *qp);
uint64_t vhca_req_ack_timeout_ns(const VhcaQp *qp);

/* vhca-completer.c */
bool vhca_completer_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                        unsigned *budget);
/* The QP's deadline passed: retransmit timeout or RNR wait over. */
void vhca_completer_timer(VhcaCore *core, uint32_t qpn, VhcaQp *qp);

/* vhca-resp.c: the RC and XRC responder (IBTA 9.7.5). */
bool vhca_resp_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   unsigned *budget);

/* vhca-uc.c: the UC responder (IBTA 9.8.3, 9.9.4, rxe's UC rules). */
bool vhca_uc_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp, unsigned *budget);

/* vhca-ud.c: the UD and GSI responder (IBTA 10.2.5, 11.4.1.1). */
bool vhca_ud_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp, unsigned *budget);

/* vhca-recv.c: what every receiver shares. */
/*
 * The next received request of @qp, if its budget allows (else *@more);
 * NULL when there is none.  A QP that no longer receives drops what it
 * had queued.
 */
VhcaRxFrame *vhca_recv_next(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                            unsigned *budget, bool *more);
/*
 * The one source of receive WQEs of every QP type: the QP's own RQ, or
 * its SRQ (IBTA 10.2.9).  vhca_rq_has_wqe(): the QP holds one for the
 * message in progress, or could take one now.  vhca_rq_take(): the WQE
 * for a new message into resp.rwqe_* (the one held, if any), held until
 * vhca_resp_complete_recv() or the flush of the QP completes it.
 */
bool vhca_rq_has_wqe(const VhcaCore *core, const VhcaQp *qp);
typedef enum VhcaRqTake {
    VHCA_RQ_TAKEN,
    VHCA_RQ_EMPTY,                  /* none: RNR NAK, or dropped */
    VHCA_RQ_BAD,                    /* held, but unreadable or malformed */
} VhcaRqTake;
/* VHCA_RQ_BAD: *status and *vendor_err say how it completes. */
VhcaRqTake vhca_rq_take(VhcaCore *core, VhcaQp *qp, uint8_t *status,
                        uint32_t *vendor_err);
/*
 * The CQ the held receive WQE completes to: the QP's receive CQ, or for
 * an XRC target the CQ of the XRC SRQ it came from (annex A14).
 */
uint32_t vhca_resp_recv_cqn(const VhcaCore *core, const VhcaQp *qp);
/*
 * The PD the request being executed is checked in: the QP's, or for an
 * XRC target the PD of the XRC SRQ the request named (annex A14).
 */
uint32_t vhca_resp_pdn(const VhcaCore *core, const VhcaQp *qp);
/* The ring the held receive WQE came from, for the err_wqe hook. */
static inline VhcaRingId vhca_resp_rwqe_ring(const VhcaQp *qp)
{
    return vhca_qp_on_srq(qp) ? VHCA_RING_SRQ : VHCA_RING_RQ;
}
/* Write @len bytes at @offset of the held receive WQE's buffer. */
uint8_t vhca_resp_scatter(VhcaCore *core, VhcaQp *qp, uint64_t offset,
                          const uint8_t *data, uint32_t len);
/* Complete the held receive WQE with @proto's fields. */
void vhca_resp_complete_recv(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             const VhcaCompletion *proto);
/*
 * A local error on the held receive WQE (IBTA 9.9.3.1.4 class D, and
 * the same for UC and UD): it completes with @status, the QP goes to ERR.
 */
void vhca_resp_fail_rwqe(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                         uint8_t opcode, uint8_t status, uint32_t vendor_err);
/*
 * The last packet of an RDMA WRITE with immediate arrived: take its
 * receive WQE before placing the data.  VHCA_RQ_BAD: the WQE could not
 * be read, it completed in error and the QP went to ERR.
 */
VhcaRqTake vhca_resp_take_write_imm(VhcaCore *core, uint32_t qpn,
                                    VhcaQp *qp);
/*
 * Its data was placed: complete the WQE taken (RECV_RDMA_WITH_IMM,
 * @write_len).
 */
void vhca_resp_complete_write_imm(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                                  const VhcaWirePacket *pkt,
                                  uint32_t write_len);
/*
 * The last packet of a SEND (op: its BTH operation) was placed: complete
 * the receive WQE with resp.cur_len bytes and the ImmDt or IETH.
 */
void vhca_resp_complete_send(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                             const VhcaWirePacket *pkt, uint8_t op);
/* The BTH operation (opcode without its transport) carries ImmDt. */
bool vhca_op_has_imm(uint8_t op);
/* ... or an IETH: SEND with Invalidate. */
bool vhca_op_has_inv(uint8_t op);
/* What vhca_resp_check_write() found of an RDMA WRITE packet. */
typedef enum VhcaWriteCheck {
    VHCA_WRITE_OK,
    VHCA_WRITE_INVALID,             /* not enabled, too long, lengths */
    VHCA_WRITE_ACCESS,              /* R_Key, PD, bounds, MR rights */
} VhcaWriteCheck;
/*
 * The protection and length checks of an RDMA WRITE packet, the same for
 * RC and UC (IBTA 9.7.5.2, 10.6.3): a FIRST/ONLY packet's RETH names the
 * MR range and starts resp.write_*; each packet must fit in it, the last
 * fill it.  RC answers with a NAK, UC drops the message.
 */
VhcaWriteCheck vhca_resp_check_write(VhcaCore *core, uint32_t qpn,
                                     VhcaQp *qp, const VhcaWirePacket *pkt,
                                     bool first, bool last);

#endif /* HW_VHCA_TRANSPORT_H */
