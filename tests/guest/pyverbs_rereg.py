# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""ibv_rereg_mr on vhca, written in rdma-core's test framework.

test_pyverbs.py's test_rereg_mr copies this file into the guest as
tests/test_vhca_rereg.py next to rdma-core's own modules and runs it with
their run_tests.py.  rdma-core's test_mr rereg cases keep using the keys
they exchanged before the rereg (mlx5 changes an MR in place and keeps
them); vhca registers the region anew and the MR gets new keys, which the
IBTA's Reregister Memory Region allows and which ibv_rereg_mr() stores in
the MR.  These cases exchange the keys again after each rereg, and check
that the old R_Key stops working.
"""

from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.mem_alloc import posix_memalign, free
from pyverbs.qp import QPAttr
from pyverbs.pd import PD
import pyverbs.enums as e

from tests.base import RDMATestCase
from tests.test_mr import MRRes
import tests.utils as u


class VhcaReregTest(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 10
        self.server = None
        self.client = None

    def create_players(self, resource, **kwargs):
        super().create_players(resource, **kwargs)
        # Queried in RTS: a QP in ERR reports no transport state.
        self.rts_attrs = [side.qp.query(0x1ffffff)[0]
                          for side in (self.server, self.client)]

    def restate_qps(self):
        for side, attr in zip((self.server, self.client), self.rts_attrs):
            side.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
            side.qp.to_rts(attr)

    def rereg_both(self, **kwargs):
        keys = (self.server.mr.lkey, self.server.mr.rkey,
                self.client.mr.lkey, self.client.mr.rkey)
        self.server.rereg_mr(**kwargs)
        self.client.rereg_mr(**kwargs)
        # Each MR has keys of its own again, and new ones.
        self.assertEqual(self.server.mr.lkey, self.server.mr.rkey)
        self.assertNotEqual(self.server.mr.rkey, keys[1])
        self.assertNotEqual(self.client.mr.rkey, keys[3])
        self.sync_remote_attr()

    def test_rereg_access_write(self):
        self.create_players(MRRes)
        self.rereg_both(flags=e.IBV_REREG_MR_CHANGE_ACCESS,
                        access=e.IBV_ACCESS_LOCAL_WRITE |
                        e.IBV_ACCESS_REMOTE_WRITE)
        u.rdma_traffic(**self.traffic_args, send_op=e.IBV_WR_RDMA_WRITE)

    def test_rereg_atomic(self):
        """upstream test_mr_rereg_atomic, with the keys exchanged again"""
        atomic = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC
        self.create_players(MRRes, mr_access=atomic)
        self.rereg_both(flags=e.IBV_REREG_MR_CHANGE_ACCESS,
                        access=e.IBV_ACCESS_LOCAL_WRITE)
        with self.assertRaisesRegex(PyverbsRDMAError, 'Remote access error'):
            u.atomic_traffic(**self.traffic_args,
                             send_op=e.IBV_WR_ATOMIC_FETCH_AND_ADD)
        self.restate_qps()
        self.rereg_both(flags=e.IBV_REREG_MR_CHANGE_ACCESS, access=atomic)
        u.atomic_traffic(**self.traffic_args,
                         send_op=e.IBV_WR_ATOMIC_FETCH_AND_ADD)

    def test_rereg_old_rkey_fails(self):
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        self.create_players(MRRes, mr_access=access)
        u.rdma_traffic(**self.traffic_args, send_op=e.IBV_WR_RDMA_WRITE)
        # Same access, so only the keys change: the peer still has the old.
        self.server.rereg_mr(flags=e.IBV_REREG_MR_CHANGE_ACCESS,
                             access=access)
        with self.assertRaisesRegex(PyverbsRDMAError, 'Remote access error'):
            u.rdma_traffic(**self.traffic_args, send_op=e.IBV_WR_RDMA_WRITE)

    def test_rereg_pd_and_translation(self):
        self.create_players(MRRes)
        u.traffic(**self.traffic_args)
        new_pd = PD(self.server.ctx)
        self.server.rereg_mr(flags=e.IBV_REREG_MR_CHANGE_PD, pd=new_pd)
        with self.assertRaisesRegex(PyverbsRDMAError, 'Remote operation error'):
            u.traffic(**self.traffic_args)
        self.restate_qps()
        self.server.rereg_mr(flags=e.IBV_REREG_MR_CHANGE_PD,
                             pd=self.server.pd)
        u.traffic(**self.traffic_args)
        buf = posix_memalign(self.server.msg_size)
        self.server.rereg_mr(flags=e.IBV_REREG_MR_CHANGE_TRANSLATION |
                             e.IBV_REREG_MR_CHANGE_ACCESS, addr=buf,
                             length=self.server.msg_size,
                             access=e.IBV_ACCESS_LOCAL_WRITE)
        self.assertEqual(self.server.mr.buf, buf)
        with self.assertRaisesRegex(PyverbsRDMAError, 'Remote operation error'):
            # The receive the last traffic() left posted has the old lkey.
            u.traffic(**self.traffic_args)
        self.restate_qps()
        u.traffic(**self.traffic_args)
        # The MR no longer owns a buffer of its own: free ours after it.
        self.server.mr.close()
        free(buf)
