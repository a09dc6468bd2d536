/*
 * vhca engine: save and load the device's state (issue 30; the format is
 * docs/developer-guide.rst, "Migration: the engine's state").
 *
 * Each structure the state is made of has a table of its fields
 * (VhcaStateDesc): the saver walks it to write each field little-endian
 * at its width, the loader to read it back, and vhca_state_self_check()
 * to find gaps wider than padding, so a field added to a struct and
 * forgotten here fails the unit tests rather than silently not
 * migrating.  Host pointers (page list copies, the
 * requester's window, the responder resources) are not fields: the
 * per-object code writes what they point to, sized.  Counts of users
 * (a PD's, a CQ's, ...) are derived and rebuilt from the references on
 * load, so they cannot disagree with them.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "vhca-state.h"
#include "vhca-psn.h"
#include "vhca-transport.h"

/* ---------------------------------------------------------------------- */
/* Field tables                                                           */
/* ---------------------------------------------------------------------- */

enum {
    VHCA_SF_INT,                    /* unsigned, 1, 2, 4 or 8 bytes */
    VHCA_SF_BOOL,                   /* one byte, 0 or 1 */
    VHCA_SF_TIME,                   /* uint64_t ns of ops->now_ns() */
    VHCA_SF_SUB,                    /* a structure with its own table */
    VHCA_SF_SKIP,                   /* not in the stream (see its why) */
};

/*
 * What a save reserves before it writes: the device record, the tables
 * but the QPs (a few KB on a device in use), and about what an idle RC
 * QP takes (790 bytes: docs/benchmarks.rst, "Migration: what the device
 * adds to the downtime"); a stream that outgrows it grows as before.
 */
#define VHCA_STATE_BASE_BYTES   (64u * 1024)
#define VHCA_STATE_QP_BYTES     1024u

typedef struct VhcaStateDesc VhcaStateDesc;

typedef struct VhcaStateField {
    const char *name;
    uint32_t offset;
    uint32_t size;                  /* of one element */
    uint32_t count;                 /* elements; > 1: an array, sized */
    uint8_t kind;
    const VhcaStateDesc *sub;
} VhcaStateField;

struct VhcaStateDesc {
    const char *name;
    size_t size;
    size_t align;
    const VhcaStateField *fields;
    size_t nfields;
};

#define DEF_DESC(var, name, T, tbl)                                         \
    static const VhcaStateDesc var = {                                      \
        name, sizeof(T), _Alignof(T), tbl, sizeof(tbl) / sizeof(tbl[0])     \
    }

#define FSZ(T, f)       sizeof(((T *)0)->f)
/* A scalar, or an array of @E flattened (multi-dimensional too). */
#define F_INT(T, f)     { #f, offsetof(T, f), FSZ(T, f), 1, VHCA_SF_INT, NULL }
#define F_ARR(T, f, E)  { #f, offsetof(T, f), sizeof(E), \
                          FSZ(T, f) / sizeof(E), VHCA_SF_INT, NULL }
#define F_BOOL(T, f)    { #f, offsetof(T, f), 1, 1, VHCA_SF_BOOL, NULL }
#define F_TIME(T, f)    { #f, offsetof(T, f), 8, 1, VHCA_SF_TIME, NULL }
#define F_SUB(T, f, D)  { #f, offsetof(T, f), sizeof(((T *)0)->f), 1, \
                          VHCA_SF_SUB, &(D) }
#define F_SUBA(T, f, D, E) { #f, offsetof(T, f), sizeof(E), \
                             FSZ(T, f) / sizeof(E), VHCA_SF_SUB, &(D) }
#define F_SKIP(T, f)    { #f, offsetof(T, f), FSZ(T, f), 1, VHCA_SF_SKIP, \
                          NULL }

static const VhcaStateField ring_fields[] = {
    F_INT(VhcaRing, base_lo), F_INT(VhcaRing, base_hi),
    F_INT(VhcaRing, log_size), F_INT(VhcaRing, pi), F_INT(VhcaRing, ci),
};
DEF_DESC(ring_desc, "ring", VhcaRing, ring_fields);

static const VhcaStateField eq_fields[] = {
    F_SUB(VhcaEq, ring, ring_desc),
    F_SKIP(VhcaEq, pages),          /* written by the EQ record, sized */
    F_INT(VhcaEq, vector), F_BOOL(VhcaEq, armed), F_BOOL(VhcaEq, overflow),
    F_SKIP(VhcaEq, users),          /* derived: the CQs on it */
};
DEF_DESC(eq_desc, "eq", VhcaEq, eq_fields);

static const VhcaStateField cfg_fields[] = {
    F_INT(VhcaCoreConfig, link), F_ARR(VhcaCoreConfig, mac, uint8_t),
    F_INT(VhcaCoreConfig, gid_tbl_len), F_INT(VhcaCoreConfig, num_db_pages),
    F_INT(VhcaCoreConfig, num_vectors), F_INT(VhcaCoreConfig, max_qp),
    F_INT(VhcaCoreConfig, max_cq), F_INT(VhcaCoreConfig, max_mr),
    F_INT(VhcaCoreConfig, max_pd), F_INT(VhcaCoreConfig, max_srq),
    F_INT(VhcaCoreConfig, rx_frame_rate),
};
DEF_DESC(cfg_desc, "config", VhcaCoreConfig, cfg_fields);

static const VhcaStateField ib_fields[] = {
    F_INT(VhcaIbPort, state), F_INT(VhcaIbPort, lid), F_INT(VhcaIbPort, lmc),
    F_INT(VhcaIbPort, sm_lid), F_INT(VhcaIbPort, sm_sl),
    F_INT(VhcaIbPort, gid_prefix), F_INT(VhcaIbPort, mkey),
    F_INT(VhcaIbPort, mkey_lease_period), F_INT(VhcaIbPort, mkey_protect),
    F_INT(VhcaIbPort, cap_mask), F_INT(VhcaIbPort, subnet_timeout),
    F_INT(VhcaIbPort, resp_time_value), F_INT(VhcaIbPort, neighbor_mtu),
    F_INT(VhcaIbPort, operational_vls), F_INT(VhcaIbPort, init_type_reply),
    F_INT(VhcaIbPort, local_phy_errors), F_INT(VhcaIbPort, overrun_errors),
    F_INT(VhcaIbPort, mkey_violations), F_INT(VhcaIbPort, pkey_violations),
    F_INT(VhcaIbPort, qkey_violations), F_ARR(VhcaIbPort, pkeys, uint16_t),
    F_ARR(VhcaIbPort, sl2vl, uint8_t), F_INT(VhcaIbPort, phys_state),
    F_BOOL(VhcaIbPort, cable_up), F_INT(VhcaIbPort, link_down_default),
    F_INT(VhcaIbPort, link_width_enabled),
    F_INT(VhcaIbPort, link_speed_enabled), F_INT(VhcaIbPort, vl_high_limit),
    F_TIME(VhcaIbPort, mkey_lease_deadline_ns),
    F_INT(VhcaIbPort, pkey_violations_base),
    F_INT(VhcaIbPort, qkey_violations_base),
    F_ARR(VhcaIbPort, vl_arb, uint8_t), F_ARR(VhcaIbPort, node_desc, uint8_t),
    F_ARR(VhcaIbPort, pma_base, uint64_t), F_INT(VhcaIbPort, trap_tid),
};
DEF_DESC(ib_desc, "ib-port", VhcaIbPort, ib_fields);

static const VhcaStateField gid_fields[] = {
    F_BOOL(VhcaGidEntry, valid), F_INT(VhcaGidEntry, type),
    F_ARR(VhcaGidEntry, gid, uint8_t), F_BOOL(VhcaGidEntry, vlan),
    F_INT(VhcaGidEntry, vid),
};
DEF_DESC(gid_desc, "gid", VhcaGidEntry, gid_fields);

static const VhcaStateField mcast_fields[] = {
    F_ARR(VhcaMcastGroup, gid, uint8_t), F_INT(VhcaMcastGroup, nqps),
    F_ARR(VhcaMcastGroup, qpns, uint32_t),
};
DEF_DESC(mcast_desc, "mcast-group", VhcaMcastGroup, mcast_fields);

static const VhcaStateField cc_fields[] = {
    /* VhcaDcqcnParams is uint32_t fields only: one array of them. */
    F_ARR(VhcaDcqcnConfig, params, uint32_t),
    F_INT(VhcaDcqcnConfig, line_rate), F_INT(VhcaDcqcnConfig, max_rate),
    F_INT(VhcaDcqcnConfig, min_rate), F_INT(VhcaDcqcnConfig, first_cnp_rate),
    F_INT(VhcaDcqcnConfig, ai_rate), F_INT(VhcaDcqcnConfig, hai_rate),
    F_INT(VhcaDcqcnConfig, time_reset_ns),
    F_INT(VhcaDcqcnConfig, alpha_period_ns),
    F_INT(VhcaDcqcnConfig, monitor_period_ns),
    F_INT(VhcaDcqcnConfig, cnp_interval_ns),
};
DEF_DESC(cc_desc, "dcqcn-config", VhcaDcqcnConfig, cc_fields);

static const VhcaStateField pfc_prio_fields[] = {
    F_BOOL(VhcaPfcPrio, paused), F_TIME(VhcaPfcPrio, paused_since),
    F_TIME(VhcaPfcPrio, paused_until), F_INT(VhcaPfcPrio, rx_frames),
    F_INT(VhcaPfcPrio, rx_bytes), F_BOOL(VhcaPfcPrio, xoff),
    F_BOOL(VhcaPfcPrio, xoff_told), F_TIME(VhcaPfcPrio, xoff_since),
    F_TIME(VhcaPfcPrio, refresh_at),
};
DEF_DESC(pfc_prio_desc, "pfc-prio", VhcaPfcPrio, pfc_prio_fields);

static const VhcaStateField pfc_fields[] = {
    F_INT(VhcaPfc, enable), F_INT(VhcaPfc, pending),
    F_BOOL(VhcaPfc, ring_held), F_BOOL(VhcaPfc, ring_kick),
    F_SUBA(VhcaPfc, prio, pfc_prio_desc, VhcaPfcPrio),
    F_ARR(VhcaPfc, counters, uint64_t), F_INT(VhcaPfc, dropped),
};
DEF_DESC(pfc_desc, "pfc", VhcaPfc, pfc_fields);

static const VhcaStateField core_fields[] = {
    F_SKIP(VhcaCore, ops), F_SKIP(VhcaCore, opaque),
    F_SUB(VhcaCore, cfg, cfg_desc),
    F_SKIP(VhcaCore, link_up),      /* the backend's, not the guest's */
    F_BOOL(VhcaCore, enabled), F_INT(VhcaCore, status),
    F_INT(VhcaCore, error), F_SUB(VhcaCore, admq, ring_desc),
    F_SUB(VhcaCore, aeq, eq_desc), F_SUB(VhcaCore, tx, ring_desc),
    F_SUB(VhcaCore, rx, ring_desc), F_INT(VhcaCore, eth_ctrl),
    F_BOOL(VhcaCore, eth_irq_armed), F_BOOL(VhcaCore, eth_irq_pending),
    F_ARR(VhcaCore, mac, uint8_t), F_INT(VhcaCore, mtu),
    F_INT(VhcaCore, rx_filter_flags), F_INT(VhcaCore, rx_mcast_count),
    F_ARR(VhcaCore, rx_mcast, uint8_t), F_SUB(VhcaCore, ib, ib_desc),
    F_INT(VhcaCore, smi_qpn),
    F_SUBA(VhcaCore, gid_tbl, gid_desc, VhcaGidEntry),
    F_INT(VhcaCore, gid_tbl_top), F_ARR(VhcaCore, uctx_map, uint64_t),
    F_SKIP(VhcaCore, uctx_users),   /* derived */
    /* The tables: one record per object in use. */
    F_SKIP(VhcaCore, pd_ids), F_SKIP(VhcaCore, mr_ids),
    F_SKIP(VhcaCore, eq_ids), F_SKIP(VhcaCore, cq_ids),
    F_SKIP(VhcaCore, qp_ids), F_SKIP(VhcaCore, srq_ids),
    F_SKIP(VhcaCore, xrcd_ids), F_SKIP(VhcaCore, xrcd_users),
    F_SKIP(VhcaCore, pds), F_SKIP(VhcaCore, mrs),
    F_SKIP(VhcaCore, comp_eqs), F_SKIP(VhcaCore, cqs),
    F_SKIP(VhcaCore, qps), F_SKIP(VhcaCore, srqs),
    F_INT(VhcaCore, mr_gen), F_BOOL(VhcaCore, cq_error_pending),
    F_SUBA(VhcaCore, mcast, mcast_desc, VhcaMcastGroup),
    /* The scheduler is rebuilt from the QPs on load. */
    F_SKIP(VhcaCore, sched_slots), F_SKIP(VhcaCore, sched_flags),
    F_SKIP(VhcaCore, sched_fifo), F_SKIP(VhcaCore, sched_head),
    F_SKIP(VhcaCore, sched_count), F_SKIP(VhcaCore, sched_heap),
    F_SKIP(VhcaCore, sched_heap_pos), F_SKIP(VhcaCore, sched_heap_len),
    F_SKIP(VhcaCore, sched_requested), F_SKIP(VhcaCore, sched_timer),
    /* Received frames are not migrated (lost, as on a wire). */
    F_SKIP(VhcaCore, rx_queued), F_SKIP(VhcaCore, rx_queued_bytes),
    F_SKIP(VhcaCore, rx_free), F_SKIP(VhcaCore, rx_free_bytes),
    F_INT(VhcaCore, roce_ip_id), F_INT(VhcaCore, cc_flags),
    F_SUB(VhcaCore, cc, cc_desc), F_ARR(VhcaCore, cc_counters, uint64_t),
    F_SUB(VhcaCore, pfc, pfc_desc), F_TIME(VhcaCore, rx_rate_next_ns),
    /* Bounce buffers: scratch for one packet, nothing between calls. */
    F_SKIP(VhcaCore, roce_payload), F_SKIP(VhcaCore, roce_frame),
    F_ARR(VhcaCore, counters, uint64_t),
    F_ARR(VhcaCore, counter_hi_latch, uint32_t),
    F_SKIP(VhcaCore, tx_frame),
};
DEF_DESC(core_desc, "device", VhcaCore, core_fields);

static const VhcaStateField pd_fields[] = {
    F_SKIP(VhcaPd, users),          /* derived */
};
DEF_DESC(pd_desc, "pd", VhcaPd, pd_fields);

static const VhcaStateField mr_fields[] = {
    F_INT(VhcaMr, gen), F_INT(VhcaMr, key_tag), F_INT(VhcaMr, flags),
    F_INT(VhcaMr, pdn), F_INT(VhcaMr, access), F_INT(VhcaMr, iova),
    F_INT(VhcaMr, length), F_INT(VhcaMr, pbl_addr), F_INT(VhcaMr, npages),
    F_INT(VhcaMr, page_shift), F_INT(VhcaMr, pbl_levels),
    F_INT(VhcaMr, offset), F_INT(VhcaMr, max_pages), F_BOOL(VhcaMr, valid),
    F_SKIP(VhcaMr, mw_bound),       /* derived: windows bound to it */
    F_INT(VhcaMr, mw_type), F_INT(VhcaMr, mw_mr_index),
    F_INT(VhcaMr, mw_mr_gen), F_INT(VhcaMr, mw_qpn),
};
DEF_DESC(mr_desc, "mr", VhcaMr, mr_fields);

static const VhcaStateField cq_fields[] = {
    F_SKIP(VhcaCq, pages),          /* written sized by the CQ record */
    F_INT(VhcaCq, log_size), F_INT(VhcaCq, pi), F_INT(VhcaCq, ci),
    F_INT(VhcaCq, eqn), F_INT(VhcaCq, db_page), F_INT(VhcaCq, dbrec_addr),
    F_INT(VhcaCq, arm), F_BOOL(VhcaCq, error),
    F_SKIP(VhcaCq, users),          /* derived */
};
DEF_DESC(cq_desc, "cq", VhcaCq, cq_fields);

static const VhcaStateField srq_fields[] = {
    F_SKIP(VhcaSrq, pages),
    F_INT(VhcaSrq, log_size), F_INT(VhcaSrq, pi), F_INT(VhcaSrq, ci),
    F_INT(VhcaSrq, pdn), F_INT(VhcaSrq, db_page), F_INT(VhcaSrq, ci_addr),
    F_INT(VhcaSrq, limit), F_BOOL(VhcaSrq, error),
    F_SKIP(VhcaSrq, users),         /* derived */
    F_INT(VhcaSrq, type), F_INT(VhcaSrq, xrcdn), F_INT(VhcaSrq, cqn),
};
DEF_DESC(srq_desc, "srq", VhcaSrq, srq_fields);

static const VhcaStateField wq_fields[] = {
    F_SKIP(VhcaWq, pages),
    F_INT(VhcaWq, log_size), F_INT(VhcaWq, stride), F_INT(VhcaWq, pi),
    F_INT(VhcaWq, ci),
};
DEF_DESC(wq_desc, "wq", VhcaWq, wq_fields);

#define QA(f) F_INT(struct vhca_qp_attr, f)
static const VhcaStateField attr_fields[] = {
    QA(qpn), QA(attr_mask), QA(qp_state), QA(cur_qp_state), QA(path_mtu),
    QA(timeout), QA(retry_cnt), QA(rnr_retry), QA(min_rnr_timer),
    QA(max_rd_atomic), QA(max_dest_rd_atomic), QA(sgid_index),
    QA(hop_limit), QA(traffic_class), QA(port), QA(sq_draining),
    QA(en_sqd_async_notify), QA(rsvd0), QA(qp_access_flags),
    QA(dest_qp_num), QA(rq_psn), QA(sq_psn), QA(qkey), QA(flow_label),
    QA(pkey_index), QA(udp_sport),
    F_ARR(struct vhca_qp_attr, dgid, uint8_t),
    F_ARR(struct vhca_qp_attr, dmac, uint8_t),
    F_ARR(struct vhca_qp_attr, rsvd1, uint8_t),
    QA(max_send_wr), QA(max_recv_wr), QA(max_send_sge), QA(max_recv_sge),
    QA(max_inline_data), QA(dlid), QA(sl), QA(src_path_bits), QA(ah_flags),
    F_ARR(struct vhca_qp_attr, rsvd2, uint8_t),
};
#undef QA
DEF_DESC(attr_desc, "qp-attr", struct vhca_qp_attr, attr_fields);

static const VhcaStateField path_fields[] = {
    F_ARR(VhcaPath, dgid, uint8_t), F_ARR(VhcaPath, dmac, uint8_t),
    F_INT(VhcaPath, sgid_index), F_INT(VhcaPath, hop_limit),
    F_INT(VhcaPath, traffic_class), F_INT(VhcaPath, udp_sport),
    F_INT(VhcaPath, flow_label), F_INT(VhcaPath, dest_qpn),
    F_INT(VhcaPath, pkey_index), F_INT(VhcaPath, dlid), F_INT(VhcaPath, sl),
    F_INT(VhcaPath, src_path_bits), F_BOOL(VhcaPath, grh),
};
DEF_DESC(path_desc, "path", VhcaPath, path_fields);

static const VhcaStateField meta_fields[] = {
    F_INT(VhcaSendMeta, wr_id), F_INT(VhcaSendMeta, remote_addr),
    F_INT(VhcaSendMeta, compare_add), F_INT(VhcaSendMeta, swap),
    F_INT(VhcaSendMeta, rkey), F_INT(VhcaSendMeta, imm_or_inv),
    F_INT(VhcaSendMeta, len), F_INT(VhcaSendMeta, first_psn),
    F_INT(VhcaSendMeta, npkts), F_INT(VhcaSendMeta, done_pkts),
    F_INT(VhcaSendMeta, vendor_err), F_INT(VhcaSendMeta, opcode),
    F_INT(VhcaSendMeta, flags), F_INT(VhcaSendMeta, num_sge),
    F_INT(VhcaSendMeta, status), F_INT(VhcaSendMeta, xrc_srqn),
    F_INT(VhcaSendMeta, flush_type), F_INT(VhcaSendMeta, flush_level),
    F_SUB(VhcaSendMeta, ud_path, path_desc), F_INT(VhcaSendMeta, qkey),
};
DEF_DESC(meta_desc, "send-wqe", VhcaSendMeta, meta_fields);

static const VhcaStateField req_fields[] = {
    F_SKIP(VhcaRequester, win),     /* written sized by the QP record */
    F_INT(VhcaRequester, win_size), F_INT(VhcaRequester, fetched),
    F_INT(VhcaRequester, cur), F_INT(VhcaRequester, cur_pkt),
    F_INT(VhcaRequester, next_psn), F_INT(VhcaRequester, una_psn),
    F_INT(VhcaRequester, sent_psn), F_INT(VhcaRequester, noack_pkts),
    F_INT(VhcaRequester, rd_atomic), F_INT(VhcaRequester, retry_left),
    F_INT(VhcaRequester, rnr_left), F_BOOL(VhcaRequester, rnr_wait),
    F_BOOL(VhcaRequester, retrying), F_BOOL(VhcaRequester, probe),
    F_INT(VhcaRequester, retry_psn), F_BOOL(VhcaRequester, sqd_notify),
    F_INT(VhcaRequester, window), F_INT(VhcaRequester, ssthresh),
    F_INT(VhcaRequester, window_acked), F_INT(VhcaRequester, backoff),
};
DEF_DESC(req_desc, "requester", VhcaRequester, req_fields);

static const VhcaStateField rdres_fields[] = {
    F_INT(VhcaRdRes, kind), F_INT(VhcaRdRes, first_psn),
    F_INT(VhcaRdRes, last_psn), F_INT(VhcaRdRes, va), F_INT(VhcaRdRes, rkey),
    F_INT(VhcaRdRes, gen), F_INT(VhcaRdRes, pdn), F_INT(VhcaRdRes, len),
    F_INT(VhcaRdRes, orig),
};
DEF_DESC(rdres_desc, "rd-res", VhcaRdRes, rdres_fields);

static const VhcaStateField sge_fields[] = {
    F_INT(struct vhca_sge, addr), F_INT(struct vhca_sge, length),
    F_INT(struct vhca_sge, lkey),
};
DEF_DESC(sge_desc, "sge", struct vhca_sge, sge_fields);

static const VhcaStateField resp_fields[] = {
    F_INT(VhcaResponder, epsn), F_INT(VhcaResponder, msn),
    F_BOOL(VhcaResponder, nak_sent), F_BOOL(VhcaResponder, uc_drop),
    F_BOOL(VhcaResponder, comm_est), F_INT(VhcaResponder, cur),
    F_INT(VhcaResponder, cur_len), F_INT(VhcaResponder, write_va),
    F_INT(VhcaResponder, write_rkey), F_INT(VhcaResponder, write_gen),
    F_INT(VhcaResponder, write_len), F_BOOL(VhcaResponder, rwqe_held),
    F_INT(VhcaResponder, rwqe_srqn), F_INT(VhcaResponder, rwqe_index),
    F_INT(VhcaResponder, rwqe_pdn), F_INT(VhcaResponder, rwqe_wr_id),
    F_INT(VhcaResponder, rwqe_nsge),
    F_SUBA(VhcaResponder, rwqe_sge, sge_desc, struct vhca_sge),
    F_INT(VhcaResponder, rwqe_cap),
    F_SKIP(VhcaResponder, res),     /* written sized by the QP record */
    F_INT(VhcaResponder, res_next), F_BOOL(VhcaResponder, read_active),
    F_INT(VhcaResponder, read_va), F_INT(VhcaResponder, read_rkey),
    F_INT(VhcaResponder, read_gen), F_INT(VhcaResponder, read_pdn),
    F_INT(VhcaResponder, read_len), F_INT(VhcaResponder, read_psn),
    F_INT(VhcaResponder, read_idx), F_INT(VhcaResponder, xrc_srqn),
    F_BOOL(VhcaResponder, ack_pending), F_INT(VhcaResponder, ack_psn),
};
DEF_DESC(resp_desc, "responder", VhcaResponder, resp_fields);

static const VhcaStateField qperr_fields[] = {
    F_INT(VhcaQpError, status), F_INT(VhcaQpError, vendor_err),
    F_BOOL(VhcaQpError, fatal),
};
DEF_DESC(qperr_desc, "qp-error", VhcaQpError, qperr_fields);

static const VhcaStateField dcqcn_fields[] = {
    F_INT(VhcaDcqcn, rc), F_INT(VhcaDcqcn, rt), F_INT(VhcaDcqcn, alpha),
    F_BOOL(VhcaDcqcn, started), F_BOOL(VhcaDcqcn, limited),
    F_BOOL(VhcaDcqcn, cnp_in_period), F_BOOL(VhcaDcqcn, decrease_pending),
    F_INT(VhcaDcqcn, timer_stage), F_INT(VhcaDcqcn, byte_stage),
    F_INT(VhcaDcqcn, byte_count), F_TIME(VhcaDcqcn, alpha_next_ns),
    F_TIME(VhcaDcqcn, increase_next_ns), F_TIME(VhcaDcqcn, decrease_ok_ns),
    F_INT(VhcaDcqcn, decreases), F_INT(VhcaDcqcn, increases),
};
DEF_DESC(dcqcn_desc, "dcqcn", VhcaDcqcn, dcqcn_fields);

static const VhcaStateField pacer_fields[] = {
    F_TIME(VhcaPacer, next_ns), F_INT(VhcaPacer, rem),
    F_INT(VhcaPacer, rem_rate),
};
DEF_DESC(pacer_desc, "pacer", VhcaPacer, pacer_fields);

static const VhcaStateField np_fields[] = {
    F_TIME(VhcaCnpPacer, next_ok_ns),
};
DEF_DESC(np_desc, "cnp-pacer", VhcaCnpPacer, np_fields);

static const VhcaStateField qp_fields[] = {
    F_INT(VhcaQp, type), F_INT(VhcaQp, state), F_BOOL(VhcaQp, sq_sig_all),
    F_INT(VhcaQp, pdn), F_INT(VhcaQp, send_cqn), F_INT(VhcaQp, recv_cqn),
    F_INT(VhcaQp, db_page), F_INT(VhcaQp, srqn), F_INT(VhcaQp, xrcdn),
    F_SUB(VhcaQp, sq, wq_desc), F_SUB(VhcaQp, rq, wq_desc),
    F_SUB(VhcaQp, attr, attr_desc), F_SUB(VhcaQp, path, path_desc),
    F_SUB(VhcaQp, req, req_desc), F_SUB(VhcaQp, resp, resp_desc),
    /* Received frames are not migrated (lost, as on a wire). */
    F_SKIP(VhcaQp, rxq_req), F_SKIP(VhcaQp, rxq_resp),
    F_TIME(VhcaQp, deadline), F_SUB(VhcaQp, err, qperr_desc),
    F_SUB(VhcaQp, rp, dcqcn_desc), F_SUB(VhcaQp, pacer, pacer_desc),
    F_TIME(VhcaQp, pace_ns), F_INT(VhcaQp, cnps_handled),
    F_SUB(VhcaQp, np, np_desc), F_BOOL(VhcaQp, cnp_pending),
    F_SUB(VhcaQp, cnp_path, path_desc), F_INT(VhcaQp, pfc_wait),
};
DEF_DESC(qp_desc, "qp", VhcaQp, qp_fields);

/* ---------------------------------------------------------------------- */
/* Writing                                                                */
/* ---------------------------------------------------------------------- */

void vhca_state_buf_free(VhcaStateBuf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

/*
 * Room for @n bytes in all, allocated at once: a save that knows about
 * how long its stream will be does not grow the buffer a dozen times,
 * each growth a fresh copy whose pages fault in during the downtime.
 */
static void buf_reserve(VhcaStateBuf *b, size_t n)
{
    uint8_t *p;

    if (b->oom || n <= b->cap) {
        return;
    }
    p = realloc(b->data, n);
    if (p) {
        b->data = p;
        b->cap = n;
    }
}

static uint8_t *buf_room(VhcaStateBuf *b, size_t n)
{
    uint8_t *p;

    if (b->oom) {
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;

        while (cap < b->len + n) {
            cap *= 2;
        }
        p = realloc(b->data, cap);
        if (!p) {
            b->oom = true;
            return NULL;
        }
        b->data = p;
        b->cap = cap;
    }
    p = b->data + b->len;
    b->len += n;
    return p;
}

static void put_int(VhcaStateBuf *b, uint64_t v, unsigned size)
{
    uint8_t *p = buf_room(b, size);
    unsigned i;

    for (i = 0; p && i < size; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* A host integer of @size bytes at @p (a field of ours, host order). */
static uint64_t host_int(const uint8_t *p, unsigned size)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;

    switch (size) {
    case 1:
        memcpy(&u8, p, 1);
        return u8;
    case 2:
        memcpy(&u16, p, 2);
        return u16;
    case 4:
        memcpy(&u32, p, 4);
        return u32;
    default:
        memcpy(&u64, p, 8);
        return u64;
    }
}

static void set_host_int(uint8_t *p, unsigned size, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;

    switch (size) {
    case 1:
        memcpy(p, &u8, 1);
        break;
    case 2:
        memcpy(p, &u16, 2);
        break;
    case 4:
        memcpy(p, &u32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

/*
 * A time: tag 0 and the value for "none" (0 or VHCA_NO_DEADLINE), tag 1
 * and its signed distance from now otherwise, so that a deadline keeps
 * its remaining time, and a past instant its age, across the clocks.
 */
static void put_time(VhcaStateBuf *b, uint64_t v, uint64_t now)
{
    if (v == 0 || v == VHCA_NO_DEADLINE) {
        put_int(b, 0, 1);
        put_int(b, v, 8);
    } else {
        put_int(b, 1, 1);
        put_int(b, v - now, 8);
    }
}

static void put_struct(VhcaStateBuf *b, const VhcaStateDesc *d,
                       const void *obj, uint64_t now)
{
    const uint8_t *base = obj;
    size_t i;
    uint32_t k;

    for (i = 0; i < d->nfields; i++) {
        const VhcaStateField *f = &d->fields[i];
        const uint8_t *p = base + f->offset;

        if (f->kind == VHCA_SF_SKIP) {
            continue;
        }
        if (f->count > 1) {
            put_int(b, f->count, 4);    /* arrays are sized */
        }
        for (k = 0; k < f->count; k++, p += f->size) {
            switch (f->kind) {
            case VHCA_SF_INT:
                put_int(b, host_int(p, f->size), f->size);
                break;
            case VHCA_SF_BOOL:
                put_int(b, *(const bool *)p, 1);
                break;
            case VHCA_SF_TIME:
                put_time(b, host_int(p, 8), now);
                break;
            case VHCA_SF_SUB:
                put_struct(b, f->sub, p, now);
                break;
            }
        }
    }
}

static void put_pages(VhcaStateBuf *b, const uint64_t *pages, uint32_t n)
{
    uint32_t i;

    put_int(b, n, 4);
    for (i = 0; i < n; i++) {
        put_int(b, pages ? pages[i] : 0, 8);
    }
}

/* Pages of a queue of 2^@log_size entries of @entry bytes (as created). */
static uint32_t queue_npages(uint32_t log_size, uint32_t entry)
{
    uint64_t bytes = (uint64_t)entry << log_size;

    return (uint32_t)((bytes + VHCA_QUEUE_PAGE_SIZE - 1) >>
                      VHCA_QUEUE_PAGE_SHIFT);
}

typedef struct VhcaStateWriter {
    VhcaStateBuf *b;
    size_t start;
    uint32_t records;
} VhcaStateWriter;

enum { VHCA_STATE_HDR_LEN = 16, VHCA_STATE_REC_HDR_LEN = 16 };

static void rec_begin(VhcaStateWriter *w, uint16_t type, uint32_t index)
{
    w->start = w->b->len;
    put_int(w->b, type, 2);
    put_int(w->b, 1, 2);            /* every record type is at version 1 */
    put_int(w->b, index, 4);
    put_int(w->b, 0, 4);            /* length, patched by rec_end() */
    put_int(w->b, 0, 4);            /* CRC, patched by rec_end() */
}

static void rec_end(VhcaStateWriter *w)
{
    uint8_t *r;
    size_t len;

    if (w->b->oom) {
        return;
    }
    r = w->b->data + w->start;
    len = w->b->len - w->start - VHCA_STATE_REC_HDR_LEN;
    vhca_st_le32(r + 8, (uint32_t)len);
    vhca_st_le32(r + 12, 0);
    /* CRC-32 of the header (CRC field zero) and the payload. */
    vhca_st_le32(r + 12, libdeflate_crc32(0, r, w->b->len - w->start));
    w->records++;
}

static void VHCA_PRINTF(3, 4) set_err(char *err, size_t err_len,
                                      const char *fmt, ...)
{
    va_list ap;

    if (!err || !err_len) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

int vhca_state_save(const VhcaCore *core, VhcaStateBuf *out, char *err,
                    size_t err_len)
{
    uint64_t now = core->ops->now_ns ? core->ops->now_ns(core->opaque) : 0;
    VhcaStateWriter w = { .b = out };
    VhcaPfc pfc = core->pfc;
    VhcaCore *dev;
    uint32_t id, i;
    size_t nqp = 0;
    uint8_t *hdr;

    /* The QPs are the bulk: VHCA_STATE_QP_BYTES each when idle. */
    for (id = vhca_ids_next(&core->qp_ids, 0); id;
         id = vhca_ids_next(&core->qp_ids, id + 1)) {
        nqp++;
    }
    buf_reserve(out, VHCA_STATE_BASE_BYTES + nqp * VHCA_STATE_QP_BYTES);
    hdr = buf_room(out, VHCA_STATE_HDR_LEN);
    if (hdr) {
        memcpy(hdr, VHCA_STATE_MAGIC, 8);
        vhca_st_le32(hdr + 8, VHCA_STATE_FORMAT_VERSION);
        vhca_st_le32(hdr + 12, 0);
    }

    /*
     * Received frames stay behind (they are lost, as frames on a wire
     * are during the downtime): the priorities' queue occupancy the
     * target will have is none, and an XOFF we stand by is lifted there,
     * with an XON if the peer was told (IEEE 802.1Qbb clause 36.1.3.3:
     * a pause time of 0 resumes at once).
     */
    for (i = 0; i < VHCA_PFC_PRIORITIES; i++) {
        pfc.prio[i].rx_frames = 0;
        pfc.prio[i].rx_bytes = 0;
        if (pfc.prio[i].xoff) {
            pfc.prio[i].xoff = false;
            if (pfc.prio[i].xoff_told) {
                pfc.pending |= (uint8_t)(1u << i);
            }
        }
    }
    dev = malloc(sizeof(*dev));
    if (!dev) {
        set_err(err, err_len, "vhca state: out of memory");
        return -1;
    }
    memcpy(dev, core, sizeof(*dev));
    dev->pfc = pfc;
    rec_begin(&w, VHCA_STATE_REC_DEVICE, 0);
    put_struct(out, &core_desc, dev, now);
    rec_end(&w);
    free(dev);

    for (id = vhca_ids_next(&core->pd_ids, 0); id;
         id = vhca_ids_next(&core->pd_ids, id + 1)) {
        rec_begin(&w, VHCA_STATE_REC_PD, id);
        put_struct(out, &pd_desc, &core->pds[id], now);
        rec_end(&w);
    }
    for (id = vhca_ids_next(&core->xrcd_ids, 0); id;
         id = vhca_ids_next(&core->xrcd_ids, id + 1)) {
        rec_begin(&w, VHCA_STATE_REC_XRCD, id);
        rec_end(&w);
    }
    for (id = vhca_ids_next(&core->eq_ids, 0); id;
         id = vhca_ids_next(&core->eq_ids, id + 1)) {
        const VhcaEq *eq = &core->comp_eqs[id];

        rec_begin(&w, VHCA_STATE_REC_EQ, id);
        put_struct(out, &eq_desc, eq, now);
        put_pages(out, eq->pages, queue_npages(eq->ring.log_size,
                                               sizeof(struct vhca_eqe)));
        rec_end(&w);
    }
    for (id = vhca_ids_next(&core->cq_ids, 0); id;
         id = vhca_ids_next(&core->cq_ids, id + 1)) {
        const VhcaCq *cq = &core->cqs[id];

        rec_begin(&w, VHCA_STATE_REC_CQ, id);
        put_struct(out, &cq_desc, cq, now);
        put_pages(out, cq->pages, queue_npages(cq->log_size,
                                               sizeof(struct vhca_cqe)));
        rec_end(&w);
    }
    for (id = vhca_ids_next(&core->srq_ids, 0); id;
         id = vhca_ids_next(&core->srq_ids, id + 1)) {
        const VhcaSrq *srq = &core->srqs[id];

        rec_begin(&w, VHCA_STATE_REC_SRQ, id);
        put_struct(out, &srq_desc, srq, now);
        put_pages(out, srq->pages, queue_npages(srq->log_size,
                                                VHCA_RECV_WQE_SIZE));
        rec_end(&w);
    }
    for (id = vhca_ids_next(&core->mr_ids, 0); id;
         id = vhca_ids_next(&core->mr_ids, id + 1)) {
        rec_begin(&w, VHCA_STATE_REC_MR, id);
        put_struct(out, &mr_desc, &core->mrs[id], now);
        rec_end(&w);
    }
    for (id = vhca_ids_next(&core->qp_ids, 0); id;
         id = vhca_ids_next(&core->qp_ids, id + 1)) {
        const VhcaQp *qp = &core->qps[id];
        uint32_t n;

        rec_begin(&w, VHCA_STATE_REC_QP, id);
        put_struct(out, &qp_desc, qp, now);
        put_pages(out, qp->sq.pages,
                  qp->sq.stride ? queue_npages(qp->sq.log_size,
                                               qp->sq.stride) : 0);
        put_pages(out, qp->rq.pages,
                  qp->rq.stride ? queue_npages(qp->rq.log_size,
                                               qp->rq.stride) : 0);
        /*
         * Only what is live, so that the stream and the downtime grow with
         * the work in flight, not with the QPs' sizes (issue 30: 1,000 QPs
         * within 10 ms): the send WQEs fetched and not completed (SQ
         * indices ci to fetched; vhca-req.c keeps them within the window)
         * and the responder resources in use, each with its slot.
         */
        n = qp->req.win ? qp->req.fetched - qp->sq.ci : 0;
        put_int(out, n, 4);
        for (i = 0; i < n; i++) {
            put_struct(out, &meta_desc, &qp->req.win[(qp->sq.ci + i) &
                                                 (qp->req.win_size - 1)],
                       now);
        }
        n = 0;
        for (i = 0; qp->resp.res && i < VHCA_MAX_RD_ATOMIC; i++) {
            n += qp->resp.res[i].kind != VHCA_RES_FREE;
        }
        put_int(out, n, 4);
        for (i = 0; qp->resp.res && i < VHCA_MAX_RD_ATOMIC; i++) {
            if (qp->resp.res[i].kind != VHCA_RES_FREE) {
                put_int(out, i, 4);
                put_struct(out, &rdres_desc, &qp->resp.res[i], now);
            }
        }
        rec_end(&w);
    }
    rec_begin(&w, VHCA_STATE_REC_END, 0);
    put_int(out, w.records, 4);
    rec_end(&w);

    if (out->oom) {
        set_err(err, err_len, "vhca state: out of memory for the stream");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                */
/* ---------------------------------------------------------------------- */

typedef struct VhcaStateReader {
    const uint8_t *p;
    size_t len;                     /* the current record's end */
    size_t stream_len;
    size_t pos;
    uint64_t now;
    /* Where we are, for the error: record type and index, field. */
    const char *what;
    uint32_t index;
    char *err;
    size_t err_len;
    bool failed;
} VhcaStateReader;

static void VHCA_PRINTF(2, 3) rd_fail(VhcaStateReader *r, const char *fmt,
                                      ...)
{
    char msg[160];
    va_list ap;

    if (r->failed) {
        return;
    }
    r->failed = true;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    set_err(r->err, r->err_len, "vhca state: %s %u: %s",
            r->what ? r->what : "stream", r->index, msg);
}

static uint64_t get_int(VhcaStateReader *r, unsigned size, const char *name)
{
    uint64_t v = 0;
    unsigned i;

    if (r->failed) {
        return 0;
    }
    if (r->len - r->pos < size) {
        rd_fail(r, "truncated in %s", name);
        return 0;
    }
    for (i = 0; i < size; i++) {
        v |= (uint64_t)r->p[r->pos + i] << (8 * i);
    }
    r->pos += size;
    return v;
}

static uint64_t get_time(VhcaStateReader *r, const char *name)
{
    uint8_t tag = (uint8_t)get_int(r, 1, name);
    uint64_t v = get_int(r, 8, name);
    int64_t delta = (int64_t)v;

    if (tag == 0) {
        if (v != 0 && v != VHCA_NO_DEADLINE) {
            rd_fail(r, "%s: bad time 0x%llx", name, (unsigned long long)v);
        }
        return v;
    }
    if (tag != 1) {
        rd_fail(r, "%s: bad time tag %u", name, tag);
        return 0;
    }
    /* Saturate: a hostile distance must not wrap to a sentinel. */
    if (delta < 0) {
        uint64_t back = 0 - v;      /* -delta, without overflow */

        return back >= r->now ? 1 : r->now - back;
    }
    return v >= VHCA_NO_DEADLINE - 1 - r->now ? VHCA_NO_DEADLINE - 1
                                             : r->now + v;
}

static void get_struct(VhcaStateReader *r, const VhcaStateDesc *d, void *obj)
{
    uint8_t *base = obj;
    size_t i;
    uint32_t k;

    for (i = 0; i < d->nfields && !r->failed; i++) {
        const VhcaStateField *f = &d->fields[i];
        uint8_t *p = base + f->offset;

        if (f->kind == VHCA_SF_SKIP) {
            continue;
        }
        if (f->count > 1) {
            uint32_t n = (uint32_t)get_int(r, 4, f->name);

            if (!r->failed && n != f->count) {
                rd_fail(r, "%s.%s has %u entries, this device %u", d->name,
                        f->name, n, f->count);
                return;
            }
        }
        for (k = 0; k < f->count && !r->failed; k++, p += f->size) {
            uint64_t v;

            switch (f->kind) {
            case VHCA_SF_INT:
                set_host_int(p, f->size, get_int(r, f->size, f->name));
                break;
            case VHCA_SF_BOOL:
                v = get_int(r, 1, f->name);
                if (v > 1) {
                    rd_fail(r, "%s.%s is %llu, not a boolean", d->name,
                            f->name, (unsigned long long)v);
                }
                *(bool *)p = v != 0;
                break;
            case VHCA_SF_TIME:
                set_host_int(p, 8, get_time(r, f->name));
                break;
            case VHCA_SF_SUB:
                get_struct(r, f->sub, p);
                break;
            }
        }
    }
}

/*
 * A queue's page list: exactly the pages a queue of its size took at
 * creation, each a 4 KiB aligned guest address (vhca_queue_pages_read()).
 */
static uint64_t *get_pages(VhcaStateReader *r, uint32_t need,
                           const char *name)
{
    uint32_t n = (uint32_t)get_int(r, 4, name);
    uint64_t *pages;
    uint32_t i;

    if (r->failed) {
        return NULL;
    }
    if (n != need) {
        rd_fail(r, "%s: %u pages, its size takes %u", name, n, need);
        return NULL;
    }
    if (!n) {
        return NULL;
    }
    if (r->len - r->pos < (size_t)n * 8) {
        rd_fail(r, "truncated in %s", name);
        return NULL;
    }
    pages = calloc(n, sizeof(*pages));
    if (!pages) {
        rd_fail(r, "out of memory for %s", name);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        pages[i] = get_int(r, 8, name);
        if (pages[i] == 0 || (pages[i] & (VHCA_QUEUE_PAGE_SIZE - 1))) {
            rd_fail(r, "%s entry %u (0x%llx) is not a 4 KiB aligned page",
                    name, i, (unsigned long long)pages[i]);
            free(pages);
            return NULL;
        }
    }
    return pages;
}

static bool psn_ok(uint32_t psn)
{
    return psn <= VHCA_PSN_MASK;
}

static void load_ring(VhcaStateReader *r, const VhcaRing *ring,
                      uint32_t max_log, const char *name)
{
    if (ring->log_size > max_log) {
        rd_fail(r, "%s log_size %u, at most %u", name, ring->log_size,
                max_log);
    }
}

static void load_device(VhcaStateReader *r, VhcaCore *t, const VhcaCore *cur)
{
    VhcaCore *d = malloc(sizeof(*d));
    uint32_t i;

    if (!d) {
        rd_fail(r, "out of memory");
        return;
    }
    memcpy(d, t, sizeof(*d));
    get_struct(r, &core_desc, d);
    if (r->failed) {
        free(d);
        return;
    }
    /* The target must be the same device (QEMU requires the same -device). */
    if (memcmp(&d->cfg.mac, &cur->cfg.mac, sizeof(d->cfg.mac)) ||
        d->cfg.link != cur->cfg.link ||
        d->cfg.gid_tbl_len != cur->cfg.gid_tbl_len ||
        d->cfg.num_db_pages != cur->cfg.num_db_pages ||
        d->cfg.num_vectors != cur->cfg.num_vectors ||
        d->cfg.max_qp != cur->cfg.max_qp || d->cfg.max_cq != cur->cfg.max_cq ||
        d->cfg.max_mr != cur->cfg.max_mr || d->cfg.max_pd != cur->cfg.max_pd ||
        d->cfg.max_srq != cur->cfg.max_srq ||
        d->cfg.rx_frame_rate != cur->cfg.rx_frame_rate) {
        rd_fail(r, "the stream is of a device configured otherwise (link, "
                "mac, gid-table-len, db-pages, vectors, max-*, "
                "x-rx-frame-rate must be the same)");
    }
    load_ring(r, &d->admq, VHCA_ADMQ_MAX_LOG_SIZE, "admq");
    load_ring(r, &d->aeq.ring, VHCA_AEQ_MAX_LOG_SIZE, "aeq");
    load_ring(r, &d->tx, VHCA_ETH_MAX_LOG_SIZE, "tx ring");
    load_ring(r, &d->rx, VHCA_ETH_MAX_LOG_SIZE, "rx ring");
    if (d->aeq.vector >= cur->cfg.num_vectors) {
        rd_fail(r, "aeq vector %u, the device has %u", d->aeq.vector,
                cur->cfg.num_vectors);
    }
    if (d->rx_mcast_count > VHCA_MAX_MCAST_MACS) {
        rd_fail(r, "%u multicast MACs, at most %u", d->rx_mcast_count,
                VHCA_MAX_MCAST_MACS);
    }
    if (d->gid_tbl_top > cur->cfg.gid_tbl_len) {
        rd_fail(r, "GID table top %u past its %u entries", d->gid_tbl_top,
                cur->cfg.gid_tbl_len);
    }
    for (i = 0; i < VHCA_CORE_GID_TBL_LEN_MAX; i++) {
        if (d->gid_tbl[i].valid &&
            (i >= d->gid_tbl_top || d->gid_tbl[i].vid > 4095)) {
            rd_fail(r, "GID %u is valid past the table top or VID %u", i,
                    d->gid_tbl[i].vid);
        }
    }
    for (i = cur->cfg.num_db_pages; i < VHCA_CORE_DB_PAGES_MAX; i++) {
        if (d->uctx_map[i / 64] & (1ull << (i % 64))) {
            rd_fail(r, "doorbell page %u allocated, the device has %u", i,
                    cur->cfg.num_db_pages);
            break;
        }
    }
    for (i = 0; i < VHCA_MAX_MCAST_GROUPS; i++) {
        if (d->mcast[i].nqps > VHCA_MAX_MCAST_QPS) {
            rd_fail(r, "multicast group %u has %u QPs, at most %u", i,
                    d->mcast[i].nqps, VHCA_MAX_MCAST_QPS);
        }
    }
    for (i = 0; i < vhca_dcqcn_param_count; i++) {
        const VhcaDcqcnParamInfo *info = &vhca_dcqcn_param_info[i];
        uint32_t v;

        memcpy(&v, (const uint8_t *)&d->cc.params + info->offset, 4);
        if (v < info->min || v > info->max) {
            rd_fail(r, "congestion control parameter %u is %u, not in "
                    "%u..%u", i, v, info->min, info->max);
        }
    }
    if (!r->failed) {
        memcpy(t, d, sizeof(*t));
    }
    free(d);
}

static void load_eq(VhcaStateReader *r, VhcaCore *t, uint32_t eqn)
{
    VhcaEq *eq = &t->comp_eqs[eqn];

    get_struct(r, &eq_desc, eq);
    if (r->failed) {
        return;
    }
    if (eq->ring.log_size < 1 || eq->ring.log_size > VHCA_EQ_MAX_LOG_SIZE ||
        eq->vector >= t->cfg.num_vectors) {
        rd_fail(r, "log_size %u or vector %u out of range",
                eq->ring.log_size, eq->vector);
        return;
    }
    eq->pages = get_pages(r, queue_npages(eq->ring.log_size,
                                          sizeof(struct vhca_eqe)), "pages");
}

static void load_cq(VhcaStateReader *r, VhcaCore *t, uint32_t cqn)
{
    VhcaCq *cq = &t->cqs[cqn];

    get_struct(r, &cq_desc, cq);
    if (r->failed) {
        return;
    }
    if (cq->log_size < 1 || cq->log_size > VHCA_CQ_MAX_LOG_SIZE ||
        cq->pi - cq->ci > (1u << cq->log_size) ||
        (cq->arm & ~(uint32_t)(VHCA_CQ_ARM_NEXT | VHCA_CQ_ARM_SOLICITED))) {
        rd_fail(r, "log_size %u, pi %u ci %u or arm %u not legal",
                cq->log_size, cq->pi, cq->ci, cq->arm);
        return;
    }
    cq->pages = get_pages(r, queue_npages(cq->log_size,
                                          sizeof(struct vhca_cqe)), "pages");
}

static void load_srq(VhcaStateReader *r, VhcaCore *t, uint32_t srqn)
{
    VhcaSrq *srq = &t->srqs[srqn];

    get_struct(r, &srq_desc, srq);
    if (r->failed) {
        return;
    }
    if (srq->log_size < 1 || srq->log_size > VHCA_WQ_MAX_LOG_SIZE ||
        srq->pi - srq->ci > (1u << srq->log_size) ||
        srq->type > VHCA_SRQT_XRC) {
        rd_fail(r, "log_size %u, pi %u ci %u or type %u not legal",
                srq->log_size, srq->pi, srq->ci, srq->type);
        return;
    }
    srq->pages = get_pages(r, queue_npages(srq->log_size,
                                           VHCA_RECV_WQE_SIZE), "pages");
}

static void load_mr(VhcaStateReader *r, VhcaCore *t, uint32_t index)
{
    VhcaMr *mr = &t->mrs[index];

    get_struct(r, &mr_desc, mr);
    if (r->failed) {
        return;
    }
    if (mr->mw_type > VHCA_MW_TYPE_2 || mr->page_shift > 63 ||
        mr->pbl_levels > 2 || mr->npages > VHCA_MR_MAX_PAGES ||
        mr->max_pages > VHCA_MR_MAX_PAGES) {
        rd_fail(r, "window type %u, page shift %u, %u levels or %u pages "
                "not legal", mr->mw_type, mr->page_shift, mr->pbl_levels,
                mr->npages);
    }
}

/*
 * A work queue as CREATE_QP makes it: WQEs of @stride bytes, or none at
 * all (@stride 0: an XRC target's SQ, the RQ of a QP on an SRQ or of an
 * XRC QP), with the page list its size takes.
 */
static void load_wq(VhcaStateReader *r, VhcaWq *wq, uint32_t stride,
                    const char *name)
{
    uint32_t need = 0;

    if (!stride) {
        if (wq->log_size || wq->stride || wq->pi || wq->ci) {
            rd_fail(r, "%s: a queue this QP cannot have", name);
            return;
        }
    } else if (wq->stride != stride || wq->log_size > VHCA_WQ_MAX_LOG_SIZE ||
               wq->pi - wq->ci > (1u << wq->log_size)) {
        rd_fail(r, "%s: log_size %u, stride %u, pi %u ci %u not legal",
                name, wq->log_size, wq->stride, wq->pi, wq->ci);
        return;
    } else {
        need = queue_npages(wq->log_size, wq->stride);
    }
    wq->pages = get_pages(r, need, name);
}

static bool qp_type_ok(uint8_t type)
{
    switch (type) {
    case VHCA_QPT_SMI:
    case VHCA_QPT_GSI:
    case VHCA_QPT_RC:
    case VHCA_QPT_UC:
    case VHCA_QPT_UD:
    case VHCA_QPT_XRC_INI:
    case VHCA_QPT_XRC_TGT:
        return true;
    default:
        return false;
    }
}

static void load_qp(VhcaStateReader *r, VhcaCore *t, uint32_t qpn)
{
    VhcaQp *qp = &t->qps[qpn];
    VhcaRequester *q = &qp->req;
    VhcaResponder *s = &qp->resp;
    uint32_t n, i, win;

    get_struct(r, &qp_desc, qp);
    if (r->failed) {
        return;
    }
    /* As CREATE_QP and MODIFY_QP leave them (vhca-qp.c, vhca-sched.c). */
    if (!qp_type_ok(qp->type) || qp->state > VHCA_QPS_ERR ||
        (qpn == VHCA_GSI_QPN) != (qp->type == VHCA_QPT_GSI) ||
        (qp->xrcdn != 0) != (qp->type == VHCA_QPT_XRC_TGT) ||
        (qp->srqn && vhca_qp_is_xrc(qp))) {
        rd_fail(r, "type %u or state %u not legal", qp->type, qp->state);
        return;
    }
    load_wq(r, &qp->sq, qp->type == VHCA_QPT_XRC_TGT ? 0 : VHCA_SEND_WQE_SIZE,
            "sq");
    load_wq(r, &qp->rq, qp->srqn || vhca_qp_is_xrc(qp) ? 0 :
            VHCA_RECV_WQE_SIZE, "rq");
    if (r->failed) {
        return;
    }
    win = 1u << qp->sq.log_size;
    win = win < VHCA_REQ_WINDOW ? win : VHCA_REQ_WINDOW;
    if (q->win_size != win || !psn_ok(q->next_psn) || !psn_ok(q->una_psn) ||
        !psn_ok(q->sent_psn) || !psn_ok(q->retry_psn) ||
        q->rd_atomic > VHCA_MAX_RD_ATOMIC ||
        /*
         * Loss back-off (vhca-req.c): what its cuts and growth leave;
         * all 0 until the QP first reaches RTS (vhca_req_window_init()).
         */
        q->window > VHCA_REQ_MAX_UNACKED ||
        (q->window == 0 && (qp->state == VHCA_QPS_RTS ||
                            qp->state == VHCA_QPS_SQD)) ||
        q->ssthresh > VHCA_REQ_MAX_UNACKED ||
        q->window_acked >= VHCA_REQ_MAX_UNACKED ||
        q->backoff > VHCA_REQ_MAX_BACKOFF) {
        rd_fail(r, "requester window %u (%u here), SQ indices or PSNs not "
                "legal", q->win_size, win);
        return;
    }
    if (!psn_ok(s->epsn) || !psn_ok(s->ack_psn) || !psn_ok(s->read_psn) ||
        s->cur > VHCA_RESP_WRITE || s->rwqe_nsge > VHCA_MAX_RECV_SGE ||
        s->res_next >= VHCA_MAX_RD_ATOMIC ||
        qp->attr.max_dest_rd_atomic > VHCA_MAX_RD_ATOMIC ||
        qp->attr.max_rd_atomic > VHCA_MAX_RD_ATOMIC) {
        rd_fail(r, "responder PSNs, message, SGEs or resources not legal");
        return;
    }
    n = (uint32_t)get_int(r, 4, "window");
    if (!r->failed && (q->fetched - qp->sq.ci > win ||
                       n != q->fetched - qp->sq.ci)) {
        rd_fail(r, "%u send WQEs in flight, where SQ indices %u to %u in "
                "a window of %u say otherwise", n, qp->sq.ci, q->fetched,
                win);
        return;
    }
    q->win = calloc(win, sizeof(*q->win));
    if (!q->win) {
        rd_fail(r, "out of memory");
        return;
    }
    for (i = 0; i < n && !r->failed; i++) {
        VhcaSendMeta *m = &q->win[(qp->sq.ci + i) & (win - 1)];

        get_struct(r, &meta_desc, m);
        if (m->num_sge > VHCA_MAX_SEND_SGE || !psn_ok(m->first_psn)) {
            rd_fail(r, "send WQE %u: %u SGEs or PSN not legal",
                    qp->sq.ci + i, m->num_sge);
        }
    }
    n = (uint32_t)get_int(r, 4, "responder resources");
    if (r->failed) {
        return;
    }
    if (n > (vhca_qp_is_reliable(qp) ? VHCA_MAX_RD_ATOMIC : 0)) {
        rd_fail(r, "%u responder resources for a QP of type %u", n,
                qp->type);
        return;
    }
    if (vhca_qp_is_reliable(qp)) {
        s->res = calloc(VHCA_MAX_RD_ATOMIC, sizeof(*s->res));
        if (!s->res) {
            rd_fail(r, "out of memory");
            return;
        }
    }
    for (i = 0; i < n && !r->failed; i++) {
        uint32_t slot = (uint32_t)get_int(r, 4, "responder resource slot");

        if (r->failed) {
            break;
        }
        if (slot >= VHCA_MAX_RD_ATOMIC || s->res[slot].kind != VHCA_RES_FREE) {
            rd_fail(r, "responder resource slot %u out of range or given "
                    "twice", slot);
            break;
        }
        get_struct(r, &rdres_desc, &s->res[slot]);
        if (s->res[slot].kind == VHCA_RES_FREE ||
            s->res[slot].kind > VHCA_RES_PLACEMENT) {
            rd_fail(r, "responder resource %u of kind %u", slot,
                    s->res[slot].kind);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* References and derived counts                                          */
/* ---------------------------------------------------------------------- */

static bool db_page_ok(const VhcaCore *t, uint32_t page)
{
    return vhca_db_page_ok(t, page);
}

/*
 * Every reference names an object the stream holds, as the commands that
 * made it checked; then the counts of users are rebuilt from them.
 */
static void check_refs(VhcaStateReader *r, VhcaCore *t)
{
    uint32_t id, i;

    r->what = "cq";
    for (id = vhca_ids_next(&t->cq_ids, 0); id && !r->failed;
         id = vhca_ids_next(&t->cq_ids, id + 1)) {
        const VhcaCq *cq = &t->cqs[id];

        r->index = id;
        if (!vhca_ids_used(&t->eq_ids, cq->eqn) ||
            !db_page_ok(t, cq->db_page)) {
            rd_fail(r, "EQ %u or doorbell page %u does not exist", cq->eqn,
                    cq->db_page);
            break;
        }
        t->comp_eqs[cq->eqn].users++;
        vhca_db_page_get(t, cq->db_page);
    }
    r->what = "srq";
    for (id = vhca_ids_next(&t->srq_ids, 0); id && !r->failed;
         id = vhca_ids_next(&t->srq_ids, id + 1)) {
        const VhcaSrq *srq = &t->srqs[id];

        r->index = id;
        if (!vhca_ids_used(&t->pd_ids, srq->pdn) ||
            !db_page_ok(t, srq->db_page) ||
            (srq->type == VHCA_SRQT_XRC &&
             (!vhca_ids_used(&t->xrcd_ids, srq->xrcdn) ||
              !vhca_ids_used(&t->cq_ids, srq->cqn)))) {
            rd_fail(r, "PD %u, doorbell page %u, XRCD %u or CQ %u does "
                    "not exist", srq->pdn, srq->db_page, srq->xrcdn,
                    srq->cqn);
            break;
        }
        if (srq->type == VHCA_SRQT_XRC) {
            t->xrcd_users[srq->xrcdn]++;
            t->cqs[srq->cqn].users++;
        }
        t->pds[srq->pdn].users++;
        vhca_db_page_get(t, srq->db_page);
    }
    r->what = "qp";
    for (id = vhca_ids_next(&t->qp_ids, 0); id && !r->failed;
         id = vhca_ids_next(&t->qp_ids, id + 1)) {
        const VhcaQp *qp = &t->qps[id];

        r->index = id;
        if ((qp->pdn && !vhca_ids_used(&t->pd_ids, qp->pdn)) ||
            (qp->send_cqn && !vhca_ids_used(&t->cq_ids, qp->send_cqn)) ||
            (qp->recv_cqn && !vhca_ids_used(&t->cq_ids, qp->recv_cqn)) ||
            (qp->srqn && !vhca_ids_used(&t->srq_ids, qp->srqn)) ||
            (qp->xrcdn && !vhca_ids_used(&t->xrcd_ids, qp->xrcdn)) ||
            (qp->resp.rwqe_srqn &&
             !vhca_ids_used(&t->srq_ids, qp->resp.rwqe_srqn)) ||
            !db_page_ok(t, qp->db_page)) {
            rd_fail(r, "an object it uses (PD %u, CQs %u/%u, SRQ %u, XRCD "
                    "%u, doorbell page %u) does not exist", qp->pdn,
                    qp->send_cqn, qp->recv_cqn, qp->srqn, qp->xrcdn,
                    qp->db_page);
            break;
        }
        if (qp->pdn) {
            t->pds[qp->pdn].users++;
        }
        if (qp->send_cqn) {
            t->cqs[qp->send_cqn].users++;
        }
        if (qp->recv_cqn) {
            t->cqs[qp->recv_cqn].users++;
        }
        if (qp->srqn) {
            t->srqs[qp->srqn].users++;
        }
        if (qp->xrcdn) {
            t->xrcd_users[qp->xrcdn]++;
        }
        vhca_db_page_get(t, qp->db_page);
    }
    r->what = "mr";
    for (id = vhca_ids_next(&t->mr_ids, 0); id && !r->failed;
         id = vhca_ids_next(&t->mr_ids, id + 1)) {
        const VhcaMr *mr = &t->mrs[id];

        r->index = id;
        if (!vhca_ids_used(&t->pd_ids, mr->pdn) || mr->gen > t->mr_gen) {
            rd_fail(r, "PD %u does not exist or generation %llu is new",
                    mr->pdn, (unsigned long long)mr->gen);
            break;
        }
        t->pds[mr->pdn].users++;
        if (!vhca_mr_is_window(mr)) {
            continue;
        }
        if (mr->mw_mr_index) {
            const VhcaMr *to;

            if (!vhca_ids_used(&t->mr_ids, mr->mw_mr_index) ||
                vhca_mr_is_window(&t->mrs[mr->mw_mr_index]) ||
                t->mrs[mr->mw_mr_index].gen != mr->mw_mr_gen) {
                rd_fail(r, "window bound to MR %u, which is not there",
                        mr->mw_mr_index);
                break;
            }
            to = &t->mrs[mr->mw_mr_index];
            t->mrs[to - t->mrs].mw_bound++;
        }
        if (mr->mw_type == VHCA_MW_TYPE_2 && mr->valid &&
            !vhca_ids_used(&t->qp_ids, mr->mw_qpn)) {
            rd_fail(r, "window tied to QP %u, which is not there",
                    mr->mw_qpn);
        }
    }
    r->what = "device";
    r->index = 0;
    if (!r->failed && t->smi_qpn &&
        (!vhca_ids_used(&t->qp_ids, t->smi_qpn) ||
         t->qps[t->smi_qpn].type != VHCA_QPT_SMI)) {
        rd_fail(r, "SMI QP %u is not there", t->smi_qpn);
    }
    for (i = 0; i < VHCA_MAX_MCAST_GROUPS && !r->failed; i++) {
        uint32_t k;

        for (k = 0; k < t->mcast[i].nqps; k++) {
            if (!vhca_ids_used(&t->qp_ids, t->mcast[i].qpns[k])) {
                rd_fail(r, "multicast group %u: QP %u is not there", i,
                        t->mcast[i].qpns[k]);
                break;
            }
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Load                                                                   */
/* ---------------------------------------------------------------------- */

/* The fresh engine is built with no hooks: nothing reaches the glue. */
static int quiet_dma(void *opaque, uint64_t addr, void *buf, size_t len)
{
    (void)opaque, (void)addr, (void)buf, (void)len;
    return -1;
}

static int quiet_dma_write(void *opaque, uint64_t addr, const void *buf,
                           size_t len)
{
    (void)opaque, (void)addr, (void)buf, (void)len;
    return -1;
}

static const VhcaCoreOps quiet_ops = {
    .dma_read = quiet_dma,
    .dma_write = quiet_dma_write,
};

static const char *rec_name(uint16_t type)
{
    switch (type) {
    case VHCA_STATE_REC_DEVICE:
        return "device";
    case VHCA_STATE_REC_PD:
        return "pd";
    case VHCA_STATE_REC_XRCD:
        return "xrcd";
    case VHCA_STATE_REC_EQ:
        return "eq";
    case VHCA_STATE_REC_CQ:
        return "cq";
    case VHCA_STATE_REC_SRQ:
        return "srq";
    case VHCA_STATE_REC_MR:
        return "mr";
    case VHCA_STATE_REC_QP:
        return "qp";
    case VHCA_STATE_REC_END:
        return "end";
    default:
        return NULL;
    }
}

/* The handle table of record @type, NULL for DEVICE and END. */
static VhcaIds *rec_ids(VhcaCore *t, uint16_t type)
{
    switch (type) {
    case VHCA_STATE_REC_PD:
        return &t->pd_ids;
    case VHCA_STATE_REC_XRCD:
        return &t->xrcd_ids;
    case VHCA_STATE_REC_EQ:
        return &t->eq_ids;
    case VHCA_STATE_REC_CQ:
        return &t->cq_ids;
    case VHCA_STATE_REC_SRQ:
        return &t->srq_ids;
    case VHCA_STATE_REC_MR:
        return &t->mr_ids;
    case VHCA_STATE_REC_QP:
        return &t->qp_ids;
    default:
        return NULL;
    }
}

static void load_records(VhcaStateReader *r, VhcaCore *t, const VhcaCore *cur)
{
    uint32_t records = 0;
    uint16_t last = 0;

    if (r->len < VHCA_STATE_HDR_LEN || memcmp(r->p, VHCA_STATE_MAGIC, 8)) {
        rd_fail(r, "not a vhca state stream (no %s header)",
                VHCA_STATE_MAGIC);
        return;
    }
    if (vhca_ld_le32(r->p + 8) != VHCA_STATE_FORMAT_VERSION ||
        vhca_ld_le32(r->p + 12) != 0) {
        rd_fail(r, "format version %u, this device reads %u",
                vhca_ld_le32(r->p + 8), VHCA_STATE_FORMAT_VERSION);
        return;
    }
    r->pos = VHCA_STATE_HDR_LEN;
    while (!r->failed) {
        const uint8_t *h = r->p + r->pos;
        uint16_t type, version;
        uint32_t index, len, crc;
        VhcaIds *ids;
        size_t end;

        r->what = "record";
        r->index = records;
        if (r->len - r->pos < VHCA_STATE_REC_HDR_LEN) {
            rd_fail(r, "stream truncated before its end record");
            return;
        }
        type = vhca_ld_le16(h);
        version = vhca_ld_le16(h + 2);
        index = vhca_ld_le32(h + 4);
        len = vhca_ld_le32(h + 8);
        crc = vhca_ld_le32(h + 12);
        if (len > r->len - r->pos - VHCA_STATE_REC_HDR_LEN) {
            rd_fail(r, "length %u runs past the stream", len);
            return;
        }
        {
            uint8_t zero[4] = { 0 };
            uint32_t c = libdeflate_crc32(0, h, 12);

            c = libdeflate_crc32(c, zero, 4);
            c = libdeflate_crc32(c, h + VHCA_STATE_REC_HDR_LEN, len);
            if (c != crc) {
                rd_fail(r, "CRC mismatch: the stream is corrupted");
                return;
            }
        }
        if (!rec_name(type)) {
            rd_fail(r, "unknown record type %u", type);
            return;
        }
        if (version != 1) {
            rd_fail(r, "%s record version %u, this device reads 1",
                    rec_name(type), version);
            return;
        }
        /* DEVICE first, then the types in order: references point back. */
        if ((records == 0) != (type == VHCA_STATE_REC_DEVICE) ||
            type < last) {
            rd_fail(r, "%s record out of order", rec_name(type));
            return;
        }
        last = type;
        r->what = rec_name(type);
        r->index = index;
        r->pos += VHCA_STATE_REC_HDR_LEN;
        end = r->pos + len;
        /* The record's own length bounds what its fields may read. */
        r->len = end;
        ids = rec_ids(t, type);
        if (ids && !vhca_ids_claim(ids, index)) {
            rd_fail(r, "handle out of range (%u..%u) or twice", ids->first,
                    ids->last);
            return;
        }
        if (!ids && index != 0) {
            rd_fail(r, "index %u, must be 0", index);
            return;
        }
        switch (type) {
        case VHCA_STATE_REC_DEVICE:
            load_device(r, t, cur);
            break;
        case VHCA_STATE_REC_PD:
            get_struct(r, &pd_desc, &t->pds[index]);
            break;
        case VHCA_STATE_REC_XRCD:
            break;
        case VHCA_STATE_REC_EQ:
            load_eq(r, t, index);
            break;
        case VHCA_STATE_REC_CQ:
            load_cq(r, t, index);
            break;
        case VHCA_STATE_REC_SRQ:
            load_srq(r, t, index);
            break;
        case VHCA_STATE_REC_MR:
            load_mr(r, t, index);
            break;
        case VHCA_STATE_REC_QP:
            load_qp(r, t, index);
            break;
        case VHCA_STATE_REC_END:
            if ((uint32_t)get_int(r, 4, "count") != records) {
                rd_fail(r, "%u records, the end record says otherwise",
                        records);
            }
            break;
        }
        if (r->failed) {
            return;
        }
        if (r->pos != end) {
            rd_fail(r, "%zu bytes of %u left unread", end - r->pos, len);
            return;
        }
        r->len = end;
        if (type == VHCA_STATE_REC_END) {
            break;
        }
        records++;
        /* Restore the whole stream's bound for the next header. */
        r->len = r->stream_len;
    }
    if (!r->failed && r->pos != r->stream_len) {
        r->what = "stream";
        r->index = 0;
        rd_fail(r, "%zu bytes after the end record",
                r->stream_len - r->pos);
    }
}

int vhca_state_load(VhcaCore *core, const uint8_t *buf, size_t len,
                    char *err, size_t err_len)
{
    VhcaStateReader r = {
        .p = buf, .len = len, .stream_len = len,
        .err = err, .err_len = err_len,
    };
    const VhcaCoreOps *ops = core->ops;
    void *opaque = core->opaque;
    VhcaCore *t = malloc(sizeof(*t));
    uint32_t qpn;
    bool link_up;

    if (!t) {
        set_err(err, err_len, "vhca state: out of memory");
        return -1;
    }
    r.now = core->ops->now_ns ? core->ops->now_ns(core->opaque) : 0;
    if (vhca_core_init(t, &core->cfg, &quiet_ops, NULL)) {
        free(t);
        set_err(err, err_len, "vhca state: out of memory");
        return -1;
    }
    load_records(&r, t, core);
    if (!r.failed) {
        check_refs(&r, t);
    }
    if (r.failed) {
        vhca_core_cleanup(t);
        free(t);
        return -1;
    }

    /*
     * Commit: nothing can fail from here.  The old engine goes (its
     * timer cancelled, its queued frames freed), the new one takes its
     * place with the glue's hooks and the backend's link state.
     */
    link_up = core->link_up;
    vhca_core_cleanup(core);
    memcpy(core, t, sizeof(*core));
    free(t);
    core->ops = ops;
    core->opaque = opaque;
    core->link_up = link_up;
    /*
     * The scheduler from the QPs: their deadlines (retransmit, RNR,
     * pacing) into the heap, and a pass for every QP whose transport
     * runs, which finds what work it has (a pass without work is a
     * no-op); then the device timer for the earliest deadline.
     */
    for (qpn = vhca_ids_next(&core->qp_ids, 0); qpn;
         qpn = vhca_ids_next(&core->qp_ids, qpn + 1)) {
        VhcaQp *qp = &core->qps[qpn];

        vhca_sched_deadline_sync(core, qpn, qp);
        if (qp->state >= VHCA_QPS_RTR && qp->state <= VHCA_QPS_SQE) {
            vhca_sched_kick(core, qpn);
        }
    }
    /*
     * A pass also sends the XON the save asked for (vhca_state_save()),
     * resumes a held TX ring and moves the QPs of a CQ in error to ERR.
     */
    if (core->pfc.pending || core->pfc.ring_kick || core->cq_error_pending) {
        vhca_sched_request(core);
    }
    vhca_sched_timer_update(core);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The tables describe every byte                                         */
/* ---------------------------------------------------------------------- */

static const VhcaStateDesc *const all_descs[] = {
    &ring_desc, &eq_desc, &cfg_desc, &ib_desc, &gid_desc, &mcast_desc,
    &cc_desc, &pfc_prio_desc, &pfc_desc, &core_desc, &pd_desc, &mr_desc,
    &cq_desc, &srq_desc, &wq_desc, &attr_desc, &path_desc, &meta_desc,
    &req_desc, &rdres_desc, &sge_desc, &resp_desc, &qperr_desc,
    &dcqcn_desc, &pacer_desc, &np_desc, &qp_desc,
};

/* The alignment of a field: its element's (a scalar's is its size). */
static size_t field_align(const VhcaStateField *f)
{
    if (f->kind == VHCA_SF_SUB) {
        return f->sub->align;
    }
    if (f->kind == VHCA_SF_SKIP) {
        /* Its size is the whole member's: at most a pointer's alignment. */
        return f->size >= 8 ? 8 : f->size >= 4 ? 4 : f->size >= 2 ? 2 : 1;
    }
    return f->size;
}

int vhca_state_self_check(char *err, size_t err_len)
{
    size_t i, k;

    for (i = 0; i < sizeof(all_descs) / sizeof(all_descs[0]); i++) {
        const VhcaStateDesc *d = all_descs[i];
        size_t end = 0;

        for (k = 0; k < d->nfields; k++) {
            const VhcaStateField *f = &d->fields[k];
            size_t align = field_align(f);

            /* In order, and what lies between two is padding only. */
            if (f->offset < end || f->offset - end >= align) {
                set_err(err, err_len, "vhca state: %s: %zu bytes before "
                        "%s are in no field", d->name,
                        (size_t)f->offset - end, f->name);
                return -1;
            }
            if (f->kind == VHCA_SF_SUB && f->sub->size != f->size) {
                set_err(err, err_len, "vhca state: %s.%s: table of %zu "
                        "bytes for %u", d->name, f->name, f->sub->size,
                        f->size);
                return -1;
            }
            end = f->offset + (size_t)f->size * f->count;
        }
        if (end > d->size || d->size - end >= d->align) {
            set_err(err, err_len, "vhca state: %s: %zu bytes at its end "
                    "are in no field", d->name, d->size - end);
            return -1;
        }
    }
    return 0;
}
