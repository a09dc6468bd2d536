# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""ibv_rereg_mr on vhca, written in rdma-core's test framework.

test_rereg_mr.py copies this file into the guest as
tests/test_vhca_rereg.py next to rdma-core's own modules and runs it with
their run_tests.py.  rdma-core's test_mr rereg cases keep using the keys
they exchanged before the rereg, as mlx5 allows: it changes an MR in place
and keeps them.  vhca does the same (the driver creates the new device MR
at the old index with the old key tag, VHCA_MR_AT_INDEX), so these cases
check that each rereg leaves the L_Key and R_Key as they were, and that
the peer's R_Key from before the rereg works after it.
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
        # The keys did not change: the peers keep the ones they exchanged.
        self.assertEqual((self.server.mr.lkey, self.server.mr.rkey,
                          self.client.mr.lkey, self.client.mr.rkey), keys)

    def test_rereg_access_write(self):
        self.create_players(MRRes)
        self.rereg_both(flags=e.IBV_REREG_MR_CHANGE_ACCESS,
                        access=e.IBV_ACCESS_LOCAL_WRITE |
                        e.IBV_ACCESS_REMOTE_WRITE)
        u.rdma_traffic(**self.traffic_args, send_op=e.IBV_WR_RDMA_WRITE)

    def test_rereg_atomic(self):
        """upstream test_mr_rereg_atomic, with the keys checked"""
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

    def test_rereg_old_rkey_works(self):
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        self.create_players(MRRes, mr_access=access)
        u.rdma_traffic(**self.traffic_args, send_op=e.IBV_WR_RDMA_WRITE)
        # Both reregister; the peers still use the R_Keys of before.
        self.rereg_both(flags=e.IBV_REREG_MR_CHANGE_ACCESS, access=access)
        u.rdma_traffic(**self.traffic_args, send_op=e.IBV_WR_RDMA_WRITE)

    def test_rereg_pd_and_translation(self):
        self.create_players(MRRes)
        u.traffic(**self.traffic_args)
        keys = (self.server.mr.lkey, self.server.mr.rkey)
        new_pd = PD(self.server.ctx)
        self.server.rereg_mr(flags=e.IBV_REREG_MR_CHANGE_PD, pd=new_pd)
        self.assertEqual((self.server.mr.lkey, self.server.mr.rkey), keys)
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
        self.assertEqual((self.server.mr.lkey, self.server.mr.rkey), keys)
        with self.assertRaisesRegex(PyverbsRDMAError, 'Remote operation error'):
            # The receive the last traffic() left posted has the same lkey
            # but an address the new translation does not cover.
            u.traffic(**self.traffic_args)
        self.restate_qps()
        u.traffic(**self.traffic_args)
        # The MR no longer owns a buffer of its own: free ours after it.
        self.server.mr.close()
        free(buf)
