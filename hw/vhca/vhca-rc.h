/*
 * vhca engine: what the parts of the RC transport share (IBTA Vol 1
 * chapter 9): the requester (vhca-req.c), the completer (vhca-comp.c),
 * the responder (vhca-resp.c) and the scheduler that runs them, owns the
 * timers and the receive queues (vhca-sched.c).  Engine-internal.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_VHCA_RC_H
#define HW_VHCA_RC_H

#include "vhca-internal.h"
#include "vhca-psn.h"
#include "vhca-wire.h"

/* Packets (sent or received) one QP may handle in one deferred pass. */
#define VHCA_RC_QP_BUDGET       64
/* Packets one deferred pass may handle in total. */
#define VHCA_RC_PASS_BUDGET     256
/* The default P_Key; the partition key table has only it (max_pkeys 1). */
#define VHCA_DEFAULT_PKEY       0xffff

struct VhcaRxFrame {
    VhcaRxFrame *next;
    VhcaWirePacket pkt;             /* payload points into data */
    uint8_t data[];
};

/* vhca-sched.c */
VhcaRxFrame *vhca_frameq_pop(VhcaCore *core, VhcaFrameQueue *q);
void vhca_rc_frame_free(VhcaRxFrame *f);
/* A received packet the transport does not take: ROCE_RX_DROPPED. */
void vhca_rc_drop(VhcaCore *core);
/*
 * Send @pkt (its transport part filled in) to @qp's destination: the
 * network part comes from the QP's address vector.  A destination GID of
 * our own is looped back to our receive path.
 */
void vhca_rc_xmit(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                  VhcaWirePacket *pkt);
/* The QP's path MTU in bytes (IBTA 9.7.4: 256..4096). */
uint32_t vhca_rc_mtu(const VhcaQp *qp);
/* Post a QP affiliated asynchronous event (IBTA 11.6.3). */
void vhca_rc_qp_event(VhcaCore *core, uint32_t qpn, uint8_t event);

/* vhca-req.c */
bool vhca_req_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                  unsigned *budget);
/* Go back N: send again from @psn (IBTA 9.7.5.1.x). */
void vhca_req_rewind(VhcaQp *qp, uint32_t psn);
VhcaSendMeta *vhca_req_head(VhcaQp *qp);
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

/* vhca-comp.c */
bool vhca_comp_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   unsigned *budget);
/* The QP's deadline passed: retransmit timeout or RNR wait over. */
void vhca_comp_timer(VhcaCore *core, uint32_t qpn, VhcaQp *qp);

/* vhca-resp.c */
bool vhca_resp_run(VhcaCore *core, uint32_t qpn, VhcaQp *qp,
                   unsigned *budget);

#endif /* HW_VHCA_RC_H */
