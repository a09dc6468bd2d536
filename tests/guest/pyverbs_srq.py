# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""SRQ verbs on vhca, written in rdma-core's test framework.

test_srq_verbs.py copies this file into the guest as tests/test_vhca_srq.py
next to rdma-core's own modules and runs it with their run_tests.py.
rdma-core's test_srq resizes an empty SRQ and arms its limit; these cases
check what it leaves out: a resize moves the WQEs posted and not yet taken
to the new ring (docs/specs/vhca.rst, "Shared receive queues"), in order
and with their wr_ids; a ring smaller than what it holds is refused and
the SRQ stays as it was; the SRQ is full at its size, counted by the
device's consumer record; and the verbs refuse what IBTA 10.2.9 and 11.4
say they must.
"""

import errno

from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.srq import SrqAttr
from pyverbs.wr import RecvWR, SGE
import pyverbs.enums as e

from tests.base import RCResources, RDMATestCase
import tests.utils as u


class VhcaSrqTest(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 10
        self.create_players(RCResources, qp_count=2, with_srq=True)

    def post_srq(self, wr_ids):
        mr = self.server.mr
        for wr_id in wr_ids:
            self.server.srq.post_recv(
                RecvWR(wr_id=wr_id, num_sge=1,
                       sg=[SGE(mr.buf, self.server.msg_size, mr.lkey)]))

    def receive(self, wr_ids):
        """The client sends one message per WQE, over both QPs in turn;
        the server's completions name the SRQ's WQEs in ring order."""
        for i in range(len(wr_ids)):
            send_wr, _ = u.get_send_elements(self.client, False)
            u.send(self.client, send_wr, qp_idx=i % 2)
            u.poll_cq(self.client.cq)
        wcs = u.poll_cq(self.server.cq, len(wr_ids))
        self.assertEqual([wc.wr_id for wc in wcs], list(wr_ids))
        for wc in wcs:
            self.assertEqual(wc.status, e.IBV_WC_SUCCESS)
            self.assertEqual(wc.byte_len, self.server.msg_size)
        self.assertEqual(self.server.mem_read(),
                         b'c' * self.server.msg_size)

    def assert_refused(self, err, call, *args):
        with self.assertRaises(PyverbsRDMAError) as ctx:
            call(*args)
        self.assertEqual(ctx.exception.error_code, err)

    def test_resize_keeps_posted_wqes(self):
        self.post_srq(range(100, 110))
        self.server.srq.modify(SrqAttr(max_wr=4096), e.IBV_SRQ_MAX_WR)
        self.assertEqual(self.server.srq.query().max_wr, 4096)
        self.server.srq.modify(SrqAttr(max_wr=16), e.IBV_SRQ_MAX_WR)
        self.assertEqual(self.server.srq.query().max_wr, 16)
        self.receive(range(100, 110))
        # The 16 slots are free again once the device counted them taken.
        self.post_srq(range(200, 216))
        self.assert_refused(errno.ENOMEM, self.post_srq, [216])
        self.receive(range(200, 216))

    def test_shrink_below_posted_is_refused(self):
        self.post_srq(range(100, 110))
        max_wr = self.server.srq.query().max_wr
        self.assert_refused(errno.EINVAL, self.server.srq.modify,
                            SrqAttr(max_wr=8), e.IBV_SRQ_MAX_WR)
        self.assertEqual(self.server.srq.query().max_wr, max_wr)
        self.receive(range(100, 110))

    def test_limit_past_size_is_refused(self):
        max_wr = self.server.srq.query().max_wr
        self.assert_refused(errno.EINVAL, self.server.srq.modify,
                            SrqAttr(srq_limit=max_wr + 1), e.IBV_SRQ_LIMIT)
        self.assertEqual(self.server.srq.query().srq_limit, 0)

    def test_posting_refusals(self):
        mr = self.server.mr
        sge = SGE(mr.buf, self.server.msg_size, mr.lkey)
        max_sge = self.server.srq.query().max_sge
        self.assert_refused(errno.EINVAL, self.server.srq.post_recv,
                            RecvWR(wr_id=1, num_sge=max_sge + 1,
                                   sg=[sge] * (max_sge + 1)))
        # A QP on an SRQ has no receive queue of its own (IBTA 10.2.9).
        self.assert_refused(errno.EINVAL, self.server.qp.post_recv,
                            RecvWR(wr_id=2, num_sge=1, sg=[sge]))
        self.post_srq([3])
        self.receive([3])
