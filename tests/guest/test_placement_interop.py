"""RDMA FLUSH and ATOMIC WRITE (IBTA 1.5 memory placement extensions)
between vhca and Linux's soft-RoCE (rdma_rxe), each as requester.

Guest 1 has a vhca, guest 2 rxe0 on a virtio-net NIC, on one fabric (as
test_interop_rxe.py).  No unmodified program does these operations, so
guest_placement.py runs on both sides: an RDMA WRITE, a FLUSH of its range
and of the whole MR, an ATOMIC WRITE, and a FLUSH for persistence that the
responder's MR does not allow.  The completions and the responder's bytes
show that the FETH, the ATOMIC WRITE payload and the zero-length READ
responses are what the other implementation sends and expects.

rxe (Linux 6.12) computes a FLUSH's ICRC over its headers twice (see
vhca-wire.c): vhca accepts that, but rxe drops every FLUSH with the ICRC
IBTA defines, so a vhca requester's FLUSH never reaches an rxe responder
(docs/limits.rst).  That direction runs the WRITE and the ATOMIC WRITE.
"""

import json
import unittest

import host_common
from host_common import (IBV_WC_ATOMIC_WRITE, IBV_WC_FLUSH,
                         IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR,
                         IBV_WC_SUCCESS, vhca_fabric)

fabric = vhca_fabric.ModuleFabric("placement-rxe",
                                  nics=["vhca", "rxe"])
setUpModule, tearDownModule = fabric.start, fabric.stop

DATA = bytes(range(0x40, 0x50)).hex()
ATOMIC = b"ATOMICWR".hex()
# guest_placement.py's operations, in order, and what each must give.
OPS = ["write", "flush", "flush_mr", "atomic_write", "flush_persistent"]
EXPECT = {
    "write": (IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE),
    "flush": (IBV_WC_SUCCESS, IBV_WC_FLUSH),
    "flush_mr": (IBV_WC_SUCCESS, IBV_WC_FLUSH),
    "atomic_write": (IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE),
    "flush_persistent": (IBV_WC_REM_ACCESS_ERR, IBV_WC_FLUSH),
}


class Placement(host_common.ScriptFifo, unittest.TestCase):
    FIFO = "/tmp/placement.fifo"
    LOG = "/tmp/placement.log"
    PID = "/tmp/placement.pid"

    def tearDown(self):
        self.kill_script((fabric[1], fabric[2]))

    def start(self, guest, role, ops=""):
        self.launch(guest, "guest_placement.py", "%s %s %s %s"
                    % (role, guest.rdma_dev, self.FIFO, ops))

    def run_pair(self, requester, responder, ops):
        self.start(responder, "responder")
        self.start(requester, "requester", ",".join(ops))
        req = self.expect(requester, "LOCAL").split(maxsplit=1)[1]
        resp = self.expect(responder, "LOCAL").split(maxsplit=1)[1]
        self.tell(responder, req)
        self.expect(responder, "CONNECTED")
        self.tell(requester, resp)
        result = json.loads(self.expect(requester, "RESULT").split(
            maxsplit=1)[1])
        want = [(OPS.index(op) + 1, EXPECT[op][0]) for op in ops]
        self.assertEqual([(wc["wr_id"], wc["status"]) for wc in result],
                         want, json.dumps(result))
        self.assertEqual([wc["opcode"] for wc in result
                          if wc["status"] == IBV_WC_SUCCESS],
                         [EXPECT[op][1] for op in ops
                          if EXPECT[op][0] == IBV_WC_SUCCESS],
                         json.dumps(result))
        self.tell(responder, "check")
        self.assertEqual(self.expect(responder, "MEM"),
                         "MEM %s %s" % (DATA, ATOMIC))
        self.expect(responder, "DONE")
        self.expect(requester, "DONE")

    def test_vhca_requester_rxe_responder(self):
        self.run_pair(fabric[1], fabric[2], ["write", "atomic_write"])

    def test_rxe_requester_vhca_responder(self):
        self.run_pair(fabric[2], fabric[1], OPS)


if __name__ == "__main__":
    unittest.main()
