#!/usr/bin/python3
"""One side of an RC connection that runs IBTA 1.5's memory placement
operations, RDMA FLUSH and ATOMIC WRITE, against any RDMA device (vhca or
rxe): no unmodified program does them, so this one does.

Runs inside a guest (tests/guest/test_placement_interop.py copies it
there, with guest_verbs.py), as

    guest_placement.py requester|responder DEVICE CONTROL_FIFO [OPS]

Both sides print "LOCAL <qpn> <gid> <addr> <rkey>" (the responder's
buffer and key; the requester's are 0); the test writes the other side's
line (without LOCAL) into CONTROL_FIFO, which connects the QP.

The responder registers a 4 KiB buffer with REMOTE_WRITE and FLUSH_GLOBAL
and enables both FLUSH types on its QP, then waits for "check" on the
FIFO and prints "MEM <hex>" of its first 16 bytes and of the 8 at 0x100.
The requester posts, through ibv_wr_*(), one at a time, the operations
OPS names (comma separated, default all, in this order): "write" an RDMA
WRITE of 16 bytes, "flush" a FLUSH of that range (global), "flush_mr" a
FLUSH of the whole MR, "atomic_write" an ATOMIC WRITE of 8 bytes at
0x100, "flush_persistent" a FLUSH for persistence, which the MR does not
allow (remote access error, as test_qpex's type violation).  It prints
"RESULT <json>" of the completions.
"""
import json
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QPAttr, QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SGE

from guest_verbs import (PORT, connect, context, fail, ipv4_gid_index,
                         read_command)

BUF = 4096
DATA = bytes(range(0x40, 0x50))
ATOMIC = b"ATOMICWR"
WAIT_SECONDS = 60


def out(line):
    print(line, flush=True)








def poll(cq, count):
    wcs = []
    deadline = time.monotonic() + WAIT_SECONDS
    while len(wcs) < count and time.monotonic() < deadline:
        n, got = cq.poll(count - len(wcs))
        wcs += got[:n]
        if not n:
            time.sleep(0.001)
    return wcs


OPS = ["write", "flush", "flush_mr", "atomic_write", "flush_persistent"]


def requester(qp, cq, mr, peer_addr, peer_rkey, ops):
    mr.write(DATA, len(DATA), 0)
    builders = {
        "write": lambda: (qp.wr_rdma_write(peer_rkey, peer_addr),
                          qp.wr_set_sge(SGE(mr.buf, len(DATA), mr.lkey))),
        "flush": lambda: qp.wr_flush(peer_rkey, peer_addr, len(DATA),
                                     e.IBV_FLUSH_GLOBAL, e.IBV_FLUSH_RANGE),
        "flush_mr": lambda: qp.wr_flush(peer_rkey, 0, 0, e.IBV_FLUSH_GLOBAL,
                                        e.IBV_FLUSH_MR),
        "atomic_write": lambda: qp.wr_atomic_write(peer_rkey,
                                                   peer_addr + 0x100, ATOMIC),
        "flush_persistent": lambda: qp.wr_flush(peer_rkey, peer_addr,
                                                len(DATA),
                                                e.IBV_FLUSH_PERSISTENT,
                                                e.IBV_FLUSH_RANGE),
    }
    posts = [(OPS.index(op) + 1, builders[op]) for op in ops]
    wcs = []
    for wr_id, build in posts:
        qp.wr_start()
        qp.wr_id = wr_id
        qp.wr_flags = e.IBV_SEND_SIGNALED
        build()
        qp.wr_complete()
        # One at a time: each completion shows its own operation's fate.
        wcs += poll(cq, 1)
    out("RESULT " + json.dumps([{"wr_id": wc.wr_id, "status": wc.status,
                                 "opcode": wc.opcode} for wc in wcs]))


def main():
    role, dev, fifo = sys.argv[1], sys.argv[2], sys.argv[3]
    ops = sys.argv[4].split(",") if len(sys.argv) > 4 else OPS
    if role not in ("requester", "responder"):
        fail("role must be requester or responder")
    if set(ops) - set(OPS):
        fail("unknown operations %s" % ",".join(set(ops) - set(OPS)))

    ctx = context(dev)
    pd = PD(ctx)
    access = e.IBV_ACCESS_LOCAL_WRITE
    if role == "responder":
        access |= e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_FLUSH_GLOBAL
    mr = MR(pd, BUF, access)
    mr.write(bytes(BUF), BUF, 0)
    cq = CQ(ctx, 16, None, None, 0)
    cap = QPCap(max_send_wr=8, max_recv_wr=1, max_send_sge=1,
                max_recv_sge=1)
    qia = QPInitAttrEx(cap=cap, qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, pd=pd,
                       send_ops_flags=e.IBV_QP_EX_WITH_RDMA_WRITE |
                       e.IBV_QP_EX_WITH_FLUSH | e.IBV_QP_EX_WITH_ATOMIC_WRITE,
                       comp_mask=e.IBV_QP_INIT_ATTR_PD |
                       e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
    qp = QPEx(ctx, qia)
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = PORT
    attr.qp_access_flags = (e.IBV_ACCESS_REMOTE_WRITE |
                            e.IBV_ACCESS_FLUSH_GLOBAL |
                            e.IBV_ACCESS_FLUSH_PERSISTENT)
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)
    sgid_index = ipv4_gid_index(ctx)
    if role == "responder":
        out("LOCAL %d %s %d %d" % (qp.qp_num, ctx.query_gid(PORT, sgid_index),
                                   mr.buf, mr.rkey))
    else:
        out("LOCAL %d %s 0 0" % (qp.qp_num, ctx.query_gid(PORT, sgid_index)))

    peer = read_command(fifo)
    if len(peer) != 4:
        fail("expected '<qpn> <gid> <addr> <rkey>', got %r" % peer)
    connect(qp, sgid_index, int(peer[0]), peer[1])
    out("CONNECTED")
    if role == "requester":
        requester(qp, cq, mr, int(peer[2]), int(peer[3]), ops)
    else:
        if read_command(fifo) != ["check"]:
            fail("expected 'check'")
        out("MEM %s %s" % (mr.read(len(DATA), 0).hex(),
                           mr.read(len(ATOMIC), 0x100).hex()))
    out("DONE")


if __name__ == "__main__":
    main()
