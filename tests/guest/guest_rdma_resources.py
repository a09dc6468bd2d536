#!/usr/bin/python3
"""vhca RDMA resources end to end through pyverbs and the vhca provider.

Runs inside a guest (tests/guest/test_two_guests.py copies it there, with
guest_verbs.py).
PD, MR, CQ with a completion channel, an RC QP taken RESET -> INIT -> RTR ->
RTS with a path to its own RoCEv2 GID but a destination QP that does not
exist (so the send can never complete, with or without the transport), a
receive and a send posted, then ERR: both must come back as WR_FLUSH_ERR,
announced by a CQ event.
Then RESET (indices restart) and again, to check the rings restart at 0."""
import pyverbs.enums as e
from pyverbs.cq import CQ, CompChannel
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR

from guest_verbs import PORT, connect, fail, ipv4_gid_index, vhca_context

NO_SUCH_QPN = 0xabcde


def to_rts(qp, ctx):
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = PORT
    attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)

    idx = ipv4_gid_index(ctx)
    # 4.096 us * 2^20 = 4.3 s per try: the flush comes long before the
    # retries of the unanswered send run out.
    connect(qp, idx, NO_SUCH_QPN, str(ctx.query_gid(PORT, idx)), timeout=20,
            rd_atomic=1)
    qattr, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_DEST_QPN | e.IBV_QP_AV)
    if qattr.qp_state != e.IBV_QPS_RTS or qattr.dest_qp_num != NO_SUCH_QPN:
        fail("query_qp: state %d dest %d" % (qattr.qp_state, qattr.dest_qp_num))
    return idx


def flush_round(qp, cq, ch, mr, recv_id, send_id):
    qp.post_recv(RecvWR(wr_id=recv_id, num_sge=1,
                        sg=[SGE(mr.buf, 64, mr.lkey)]))
    qp.post_send(SendWR(wr_id=send_id, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[SGE(mr.buf + 64, 64, mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED))
    cq.req_notify()
    qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)

    # The flush completes both WQEs; the armed CQ raises one event.
    ch.get_cq_event(cq)
    cq.ack_events(1)
    wcs = []
    for _ in range(100):
        n, got = cq.poll(4)
        wcs += got[:n]
        if len(wcs) >= 2:
            break
    if len(wcs) != 2:
        fail("expected 2 completions, got %d" % len(wcs))
    by_id = {wc.wr_id: wc for wc in wcs}
    if set(by_id) != {recv_id, send_id}:
        fail("wr_ids %s, expected %s" % (sorted(by_id), [recv_id, send_id]))
    for wc in wcs:
        if wc.status != e.IBV_WC_WR_FLUSH_ERR:
            fail("wr_id %d: status %d, not WR_FLUSH_ERR" % (wc.wr_id, wc.status))
        if wc.qp_num != qp.qp_num:
            fail("wr_id %d: qp_num %d" % (wc.wr_id, wc.qp_num))
    if by_id[recv_id].opcode != e.IBV_WC_RECV:
        fail("receive flush opcode %d" % by_id[recv_id].opcode)
    n, _ = cq.poll(4)
    if n:
        fail("%d completions too many" % n)
    qattr, _ = qp.query(e.IBV_QP_STATE)
    if qattr.qp_state != e.IBV_QPS_ERR:
        fail("query_qp after ERR: state %d" % qattr.qp_state)


def main():
    ctx = vhca_context()
    pd = PD(ctx)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    print("MR lkey 0x%x rkey 0x%x" % (mr.lkey, mr.rkey))
    ch = CompChannel(ctx)
    cq = CQ(ctx, 16, None, ch, 0)
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    print("QP %d, CQ of %d" % (qp.qp_num, cq.cqe))

    to_rts(qp, ctx)
    flush_round(qp, cq, ch, mr, 1, 2)

    # RESET empties the rings; the provider and the device restart at 0.
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    to_rts(qp, ctx)
    flush_round(qp, cq, ch, mr, 3, 4)

    # An MR's key changes when its index is reused (IBTA 10.6.3).
    old = mr.lkey
    mr.close()
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    if mr.lkey == old:
        fail("MR key 0x%x reused" % old)

    qp.close()
    cq.close()
    ch.close()
    mr.close()
    pd.close()
    print("PASS")


if __name__ == "__main__":
    main()
