# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""ibv_resize_cq on vhca with completions pending, in rdma-core's framework.

test_resize_cq.py copies this file into the guest as
tests/test_vhca_resize_cq.py next to rdma-core's own modules and runs it
with their run_tests.py.  rdma-core's test_cq.test_resize_cq resizes an
empty CQ and checks one refusal; these cases resize an RC CQ that holds
completions the consumer has not polled, and one that completions are
still arriving in, and check that every completion survives, in order
(IBTA 11.2.8.3: "Resize Completion Queue" keeps the CQ's contents).
"""

import errno

from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.wr import SendWR
from pyverbs.qp import QPCap
from pyverbs.cq import CQ
import pyverbs.enums as e

from tests.base import RCResources, RDMATestCase
import tests.utils as u

DEPTH = 64
SENDS = 20


class ResizeRC(RCResources):
    def create_cq(self):
        self.cq = CQ(self.ctx, DEPTH, None, None, 0)

    def create_qp_cap(self):
        # Room for SENDS sends outstanding at once.
        return QPCap(max_recv_wr=self.num_msgs, max_send_wr=2 * SENDS)


class VhcaResizeCqTest(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 10

    def post_sends(self, first, count):
        """Post <count> signalled SENDs from the client, wr_id first.."""
        _, sge = u.get_send_elements(self.client, False)
        for i in range(count):
            u.send(self.client, SendWR(wr_id=first + i, opcode=e.IBV_WR_SEND,
                                       num_sge=1, sg=[sge]))

    def post_recvs(self, side, count):
        u.post_recv(side, u.get_recv_wr(side), num_wqes=count)

    def resize(self, cqe):
        self.client.cq.resize(cqe)
        self.assertGreaterEqual(self.client.cq.cqe, cqe)

    def poll_client(self, first, sends, recvs=0):
        """Poll the client's CQ: <sends> send completions with wr_ids
        first.. in order, and <recvs> receive completions."""
        wcs = u.poll_cq(self.client.cq, sends + recvs)
        for wc in wcs:
            self.assertEqual(wc.status, e.IBV_WC_SUCCESS)
        got = [wc.wr_id for wc in wcs if wc.opcode == e.IBV_WC_SEND]
        self.assertEqual(got, list(range(first, first + sends)))
        self.assertEqual(sum(wc.opcode == e.IBV_WC_RECV for wc in wcs), recvs)
        # Nothing more: no completion was copied twice.
        self.assertEqual(self.client.cq.poll(1)[0], 0)

    def settle(self):
        """Return once the client's CQ holds its sends' completions: the
        server answers once it has them all, and its answer completes only
        after the client took it, which comes after the client's ACKs."""
        u.poll_cq(self.server.cq, SENDS)
        _, sge = u.get_send_elements(self.server, True)
        u.send(self.server, SendWR(wr_id=0x5e, opcode=e.IBV_WR_SEND,
                                   num_sge=1, sg=[sge]))
        u.poll_cq(self.server.cq, 1)

    def test_resize_with_pending(self):
        """21 completions not polled: a CQ too small for them is refused
        and nothing changes; smaller but sufficient, then larger, keep
        them all, in order; traffic goes on."""
        self.create_players(ResizeRC)
        self.post_recvs(self.server, SENDS)
        self.post_recvs(self.client, 1)
        self.post_sends(0, SENDS)
        self.settle()
        before = self.client.cq.cqe
        with self.assertRaises(PyverbsRDMAError) as ctx:
            self.client.cq.resize(4)
        self.assertEqual(ctx.exception.error_code, errno.EINVAL)
        self.assertEqual(self.client.cq.cqe, before)
        self.resize(SENDS + 4)
        self.assertLess(self.client.cq.cqe, before)
        self.resize(4 * DEPTH)
        self.poll_client(0, SENDS, recvs=1)
        u.traffic(**self.traffic_args)

    def test_resize_while_completing(self):
        """Sends still in flight while the CQ grows and shrinks: the
        completions land in whichever ring is current, none lost."""
        self.create_players(ResizeRC)
        for rnd in range(3):
            self.post_recvs(self.server, SENDS)
            self.post_sends(rnd * SENDS, SENDS)
            self.resize(4 * DEPTH)
            self.resize(SENDS + 1)
            self.resize(2 * DEPTH)
            u.poll_cq(self.server.cq, SENDS)
            self.poll_client(rnd * SENDS, SENDS)
        u.traffic(**self.traffic_args)
