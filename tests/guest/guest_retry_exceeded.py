#!/usr/bin/python3
"""One side of an RC connection whose peer goes away (IBTA 9.7.6.1.3).

Runs inside a guest (tests/guest/test_lossy_fabric.py copies it there, with
guest_verbs.py), as

    guest_retry_exceeded.py requester|responder CONTROL_FIFO [TIMEOUT RETRY]

Both sides create an RC QP and print "LOCAL <qpn> <gid>"; the test reads
that, and writes the other side's "<qpn> <gid>" into CONTROL_FIFO, which
connects the QP (RTR, RTS with the given Local ACK Timeout and retry count).

The responder then receives one SEND, checks its contents and waits for
"exit" on the FIFO.  The requester sends that SEND (the connection works),
then waits for "go" (the test has made the fabric drop everything) and
posts two more: the first must complete with RETRY_EXC_ERR after the retry
count is spent, the second with WR_FLUSH_ERR, and the QP must be in ERR.
It prints what happened as "RESULT <json>" for the test to judge.
"""
import json
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from guest_verbs import PORT, connect, fail, ipv4_gid_index, vhca_context

MSG = 1024
WAIT_SECONDS = 60


def out(line):
    print(line, flush=True)


def read_control(fifo):
    """One line the test writes into the FIFO (opened anew for each)."""
    with open(fifo) as f:
        return f.readline().split()


def pattern(seed):
    return bytes((seed + i * 7) & 0xff for i in range(MSG))


def poll(cq, count, deadline):
    """Up to count completions, each with the monotonic time it was seen."""
    wcs = []
    while len(wcs) < count and time.monotonic() < deadline:
        n, got = cq.poll(count - len(wcs))
        now = time.monotonic()
        wcs += [(wc, now) for wc in got[:n]]
        if not n:
            time.sleep(0.001)
    return wcs


def send(qp, mr, wr_id, offset):
    qp.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[SGE(mr.buf + offset, MSG, mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED))


def requester(qp, cq, mr, fifo):
    mr.write(pattern(1), MSG, 0)
    send(qp, mr, 1, 0)
    wcs = poll(cq, 1, time.monotonic() + WAIT_SECONDS)
    if len(wcs) != 1 or wcs[0][0].status != e.IBV_WC_SUCCESS:
        fail("the first SEND did not complete: %s"
             % [(wc.wr_id, wc.status) for wc, _ in wcs])
    out("SENT")

    if read_control(fifo) != ["go"]:
        fail("expected 'go'")
    start = time.monotonic()
    send(qp, mr, 2, 0)
    send(qp, mr, 3, MSG)
    wcs = poll(cq, 2, start + WAIT_SECONDS)
    state = qp.query(e.IBV_QP_STATE)[0].qp_state
    out("RESULT " + json.dumps({
        "completions": [{"wr_id": wc.wr_id, "status": wc.status,
                         "seconds": t - start} for wc, t in wcs],
        "qp_state": state}))


def responder(qp, cq, mr, fifo):
    wcs = poll(cq, 1, time.monotonic() + WAIT_SECONDS)
    if len(wcs) != 1:
        fail("no SEND arrived")
    wc = wcs[0][0]
    if wc.status != e.IBV_WC_SUCCESS or wc.byte_len != MSG:
        fail("receive: status %d, %d bytes" % (wc.status, wc.byte_len))
    if mr.read(MSG, 0) != pattern(1):
        fail("received data differs from what was sent")
    out("RECEIVED")
    if read_control(fifo) != ["exit"]:
        fail("expected 'exit'")
    # Nothing got through while the fabric dropped everything.
    n, _ = cq.poll(4)
    out("LATE %d" % n)


def main():
    role, fifo = sys.argv[1], sys.argv[2]
    timeout = int(sys.argv[3]) if len(sys.argv) > 3 else 14
    retry_cnt = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    if role not in ("requester", "responder"):
        fail("role must be requester or responder")

    ctx = vhca_context()
    pd = PD(ctx)
    mr = MR(pd, 2 * MSG, e.IBV_ACCESS_LOCAL_WRITE)
    cq = CQ(ctx, 16, None, None, 0)
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = PORT
    attr.qp_access_flags = 0
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)
    if role == "responder":
        for i in range(2):
            qp.post_recv(RecvWR(wr_id=100 + i, num_sge=1,
                                sg=[SGE(mr.buf + i * MSG, MSG, mr.lkey)]))
    sgid_index = ipv4_gid_index(ctx)
    out("LOCAL %d %s" % (qp.qp_num, ctx.query_gid(PORT, sgid_index)))

    peer = read_control(fifo)
    if len(peer) != 2:
        fail("expected '<qpn> <gid>', got %r" % peer)
    connect(qp, sgid_index, int(peer[0]), peer[1], timeout=timeout,
            retry_cnt=retry_cnt, rd_atomic=1)
    out("CONNECTED")
    (requester if role == "requester" else responder)(qp, cq, mr, fifo)

    qp.close()
    cq.close()
    mr.close()
    pd.close()
    out("DONE")


if __name__ == "__main__":
    main()
