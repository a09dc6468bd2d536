#!/usr/bin/python3
"""One side of an RC connection through which a peer reaches memory by a
memory window's key (IBTA 10.6.7), on any RDMA device (vhca or rxe).

Runs inside a guest (tests/guest/test_mw_interop.py copies it there, with
guest_verbs.py), as

    guest_mw.py owner|peer DEVICE CONTROL_FIFO [TYPE]

Both sides print "LOCAL <qpn> <gid>"; the test writes the other side's
line (without LOCAL) into CONTROL_FIFO, which connects the QP, and each
side prints "CONNECTED".  Then each reads commands from the FIFO, one a
line.

The owner (TYPE 1 or 2) registers a 4 KiB MR with LOCAL_WRITE and
MW_BIND only, fills it with i & 0xff, allocates a window of TYPE and binds
it (type 1 with ibv_bind_mw(), type 2 with ibv_wr_bind_mw() and a key of
its choosing) to WINDOW bytes at WINDOW_OFFSET with remote write, read
and atomic rights, and prints "WINDOW <addr> <rkey> <json of the bind's
completion>".  Its commands:

    check       print "MEM <hex>": the window's first DATA bytes and the
                8 at ATOMIC_OFFSET in it
    invalidate  type 1: bind the window again with length 0 (unbind);
                type 2: LOCAL_INV of its key; print "INVALIDATED <json>"
    await-inv   (type 2) wait for the receive a SEND with Invalidate of
                the window's key completes, print "INVALIDATED <json>"
                with its wc_flags and invalidated key
    exit

The peer's commands:

    access ADDR RKEY OPS   post OPS (comma separated: write, read,
                atomic) one at a time at ADDR through RKEY, polling each:
                "write" DATA at ADDR, "read" DATA's length from
                ADDR + READ_OFFSET, "atomic" fetch and add 1 at ADDR +
                ATOMIC_OFFSET; print "RESULT <json>" of the completions
                with the bytes read and the atomic's original value
    inv RKEY    a SEND with Invalidate of RKEY; print "SENT <json>"
    exit

Each side prints "DONE" when it exits.
"""
import json
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.base import inc_rkey
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QPAttr, QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SGE, RecvWR

from guest_verbs import (PORT, connect, context, fail, local_address,
                         read_command)

BUF = 4096
WINDOW_OFFSET = 0x200
WINDOW = 0x100
READ_OFFSET = 0x40
ATOMIC_OFFSET = 0x80
DATA = bytes(range(0xa0, 0xb0))
WAIT_SECONDS = 60
REMOTE = (e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ |
          e.IBV_ACCESS_REMOTE_ATOMIC)


def out(line):
    print(line, flush=True)


def poll(cq):
    """The next completion, or fail."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        time.sleep(0.001)
    fail("no completion in %d s" % WAIT_SECONDS)


def wc_json(wc, **more):
    return dict({"wr_id": wc.wr_id, "status": wc.status,
                 "opcode": wc.opcode}, **more)


def post(qp, wr_id, build):
    """One signalled work request through ibv_wr_*()."""
    qp.wr_start()
    qp.wr_id = wr_id
    qp.wr_flags = e.IBV_SEND_SIGNALED
    build()
    qp.wr_complete()


class Owner:
    def __init__(self, pd, qp, cq, mw_type):
        self.qp, self.cq, self.type = qp, cq, mw_type
        self.mr = MR(pd, BUF, e.IBV_ACCESS_LOCAL_WRITE |
                     e.IBV_ACCESS_MW_BIND)
        self.mr.write(bytes(i & 0xff for i in range(BUF)), BUF, 0)
        self.mw = MW(pd, mw_type)
        self.addr = self.mr.buf + WINDOW_OFFSET
        self.rkey = None

    def bind(self):
        if self.type == e.IBV_MW_TYPE_1:
            info = MWBindInfo(self.mr, self.addr, WINDOW, REMOTE)
            self.qp.bind_mw(self.mw, MWBind(info, e.IBV_SEND_SIGNALED))
            # ibv_bind_mw() gave the window its next key.
            self.rkey = self.mw.rkey
        else:
            self.rkey = inc_rkey(self.mw.rkey)
            info = MWBindInfo(self.mr, self.addr, WINDOW, REMOTE)
            post(self.qp, 1, lambda: self.qp.wr_bind_mw(self.mw, self.rkey,
                                                        info))
        wc = poll(self.cq)
        out("WINDOW %d %d %s" % (self.addr, self.rkey,
                                 json.dumps(wc_json(wc))))

    def check(self):
        out("MEM %s %s" % (
            self.mr.read(len(DATA), WINDOW_OFFSET).hex(),
            self.mr.read(8, WINDOW_OFFSET + ATOMIC_OFFSET).hex()))

    def invalidate(self):
        if self.type == e.IBV_MW_TYPE_1:
            info = MWBindInfo(self.mr, self.addr, 0, 0)
            self.qp.bind_mw(self.mw, MWBind(info, e.IBV_SEND_SIGNALED))
        else:
            post(self.qp, 2, lambda: self.qp.wr_local_inv(self.rkey))
        out("INVALIDATED %s" % json.dumps(wc_json(poll(self.cq))))

    def await_inv(self):
        wc = poll(self.cq)
        # struct ibv_wc's invalidated_rkey shares imm_data's place.
        out("INVALIDATED %s" % json.dumps(wc_json(
            wc, wc_flags=wc.wc_flags, invalidated=wc.imm_data)))

    def run(self, cmd):
        if cmd == ["check"]:
            self.check()
        elif cmd == ["invalidate"]:
            self.invalidate()
        elif cmd == ["await-inv"]:
            self.await_inv()
        else:
            fail("owner: unknown command %r" % cmd)


class Peer:
    def __init__(self, pd, qp, cq):
        self.qp, self.cq = qp, cq
        self.mr = MR(pd, BUF, e.IBV_ACCESS_LOCAL_WRITE)
        self.mr.write(DATA, len(DATA), 0)
        self.mr.write(bytes(BUF - len(DATA)), BUF - len(DATA), len(DATA))

    def access(self, addr, rkey, ops):
        qp, mr = self.qp, self.mr
        builders = {
            "write": lambda: (qp.wr_rdma_write(rkey, addr),
                              qp.wr_set_sge(SGE(mr.buf, len(DATA),
                                                mr.lkey))),
            "read": lambda: (qp.wr_rdma_read(rkey, addr + READ_OFFSET),
                             qp.wr_set_sge(SGE(mr.buf + 0x100, len(DATA),
                                               mr.lkey))),
            "atomic": lambda: (qp.wr_atomic_fetch_add(
                rkey, addr + ATOMIC_OFFSET, 1),
                qp.wr_set_sge(SGE(mr.buf + 0x200, 8, mr.lkey))),
        }
        result = []
        for i, op in enumerate(ops):
            if op not in builders:
                fail("peer: unknown operation %s" % op)
            post(qp, i + 1, builders[op])
            wc = poll(self.cq)
            result.append(wc_json(wc, op=op))
            if wc.status != e.IBV_WC_SUCCESS:
                break
        out("RESULT %s" % json.dumps({
            "wcs": result,
            "read": mr.read(len(DATA), 0x100).hex(),
            "atomic_old": struct.unpack("<Q", mr.read(8, 0x200))[0]}))

    def send_inv(self, rkey):
        post(self.qp, 9, lambda: (self.qp.wr_send_inv(rkey),
                                  self.qp.wr_set_sge(
                                      SGE(self.mr.buf, 4, self.mr.lkey))))
        out("SENT %s" % json.dumps(wc_json(poll(self.cq))))

    def run(self, cmd):
        if len(cmd) == 4 and cmd[0] == "access":
            self.access(int(cmd[1]), int(cmd[2]), cmd[3].split(","))
        elif len(cmd) == 2 and cmd[0] == "inv":
            self.send_inv(int(cmd[1]))
        else:
            fail("peer: unknown command %r" % cmd)


def main():
    role, dev, fifo = sys.argv[1], sys.argv[2], sys.argv[3]
    mw_type = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    if role not in ("owner", "peer") or mw_type not in (1, 2):
        fail("usage: guest_mw.py owner|peer DEVICE FIFO [1|2]")

    ctx = context(dev)
    pd = PD(ctx)
    cq = CQ(ctx, 16, None, None, 0)
    cap = QPCap(max_send_wr=8, max_recv_wr=2, max_send_sge=1,
                max_recv_sge=1)
    qia = QPInitAttrEx(cap=cap, qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, pd=pd,
                       send_ops_flags=e.IBV_QP_EX_WITH_RDMA_WRITE |
                       e.IBV_QP_EX_WITH_RDMA_READ |
                       e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
                       e.IBV_QP_EX_WITH_SEND_WITH_INV |
                       e.IBV_QP_EX_WITH_BIND_MW | e.IBV_QP_EX_WITH_LOCAL_INV,
                       comp_mask=e.IBV_QP_INIT_ATTR_PD |
                       e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
    qp = QPEx(ctx, qia)
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = PORT
    attr.qp_access_flags = REMOTE
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)
    if role == "owner":
        side = Owner(pd, qp, cq, mw_type)
        # For a SEND with Invalidate from the peer (await-inv).
        recv_mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
        qp.post_recv(RecvWR(wr_id=7, num_sge=1,
                            sg=[SGE(recv_mr.buf, 64, recv_mr.lkey)]))
    else:
        side = Peer(pd, qp, cq)
    sgid_index, address = local_address(ctx)
    out("LOCAL %d %s" % (qp.qp_num, address))

    peer = read_command(fifo)
    if len(peer) != 2:
        fail("expected '<qpn> <gid or lid:N>', got %r" % peer)
    connect(qp, sgid_index, int(peer[0]), peer[1])
    out("CONNECTED")
    if role == "owner":
        side.bind()
    while True:
        cmd = read_command(fifo)
        if cmd == ["exit"]:
            break
        side.run(cmd)
    out("DONE")


if __name__ == "__main__":
    main()
