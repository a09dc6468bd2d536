# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""Address handles and QP paths with the fields middleware passes, in
rdma-core's framework.

test_ah_fields.py copies this file into the guest as
tests/test_vhca_ah.py next to rdma-core's own modules and runs it with
their run_tests.py (--gid: the IPv4 RoCE v2 GID).  UCX builds a RoCE
peer's address with a flow label of 0xffffffff, a DLID of 0xc000 and
traffic class 106; libfabric and librdmacm pass a flow label of 0 and the
hop limit and traffic class of their route.  What vhca does with each
field is the table in docs/developer-guide.rst ("Address vector fields"):
the flow label is masked to its 20 bits (IBTA 8.3.1) as mlx5 does, the
DLID on RoCE is not read, the traffic class and hop limit go into the IP
header.  Every AH is created through the real verbs (provider and kernel
driver); the UD and RC cases then send through it and read the IPv4
header the receiver finds in its GRH area (IBTA 11.4.1.1, annex A17.4.5.2).
"""

from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.wr import SendWR
import pyverbs.enums as e

from tests.base import RCResources, RDMATestCase, UDResources
import tests.base as b
import tests.utils as u

UCX_DLID = 0xc000
FLOW_LABELS = (0xffffffff, 0, 0x12345)
HOP_LIMITS = (0, 1, 64, 255)
TRAFFIC_CLASSES = (0, 106, 255)
# The IPv4 header's offset in the 40-byte GRH area (annex A17.4.5.2: its
# last 20 bytes), and its TOS and TTL bytes (RFC 791).
IPV4_IN_GRH = 20
IPV4_TOS = 1
IPV4_TTL = 8
IPV4_PROTO = 9


def ah_attr(res, flow_label, hop_limit, traffic_class, sl=0):
    """The AHAttr UCX builds for res's own GID: a GRH with the given
    fields and a DLID of 0xc000 on a RoCE port."""
    gr = GlobalRoute(dgid=res.ctx.query_gid(res.ib_port, res.gid_index),
                     sgid_index=res.gid_index, flow_label=flow_label,
                     hop_limit=hop_limit, traffic_class=traffic_class)
    return AHAttr(port_num=res.ib_port, is_global=1, gr=gr, dlid=UCX_DLID,
                  sl=sl)


class PathRC(RCResources):
    """RC QPs whose path (modify_qp IBV_QP_AV) carries UCX's fields."""
    flow_label = 0xffffffff
    traffic_class = 106
    hop_limit = 64

    def to_rts(self):
        """RCResources.to_rts() with UCX's path instead of a plain one."""
        attr = self.create_qp_attr()
        attr.path_mtu = b.PATH_MTU
        attr.max_dest_rd_atomic = b.MAX_DEST_RD_ATOMIC
        b.set_rnr_attributes(attr)
        attr.max_rd_atomic = b.MAX_RD_ATOMIC
        attr.ah_attr = ah_attr(self, self.flow_label, self.hop_limit,
                               self.traffic_class)
        for i in range(self.qp_count):
            attr.dest_qp_num = self.rqps_num[i]
            attr.rq_psn = self.psns[i]
            attr.sq_psn = self.rpsns[i]
            self.qps[i].to_rts(attr)


class VhcaAhFieldsTest(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 4

    def ud_pair(self):
        self.create_players(UDResources)

    def ip_header(self):
        """The IPv4 header the server's last UD receive holds."""
        hdr = self.server.mr.read(IPV4_IN_GRH, IPV4_IN_GRH)
        self.assertEqual(hdr[0] >> 4, 4, "no IPv4 header in the GRH area")
        self.assertEqual(hdr[IPV4_PROTO], 17, "not UDP")
        return hdr

    def ud_send(self, ah):
        """One UD SEND from the client to the server through ah; the
        IPv4 header the server received it with."""
        recv_wr = u.get_recv_wr(self.server)
        u.post_recv(self.server, recv_wr)
        _, sge = u.get_send_elements(self.client, False)
        wr = SendWR(num_sge=1, sg=[sge])
        wr.set_wr_ud(ah, self.server.qps_num[0], self.server.UD_QKEY)
        self.client.qp.post_send(wr)
        u.poll_cq(self.client.cq)
        wcs = u.poll_cq(self.server.cq)
        self.assertTrue(wcs[0].wc_flags & e.IBV_WC_GRH)
        return self.ip_header()

    def test_create_ah_every_combination(self):
        """ibv_create_ah succeeds for every flow label, hop limit and
        traffic class middleware passes, with UCX's DLID and SLs 0..15:
        nothing of them is refused (mlx5 and rxe refuse none)."""
        self.ud_pair()
        for fl in FLOW_LABELS:
            for hl in HOP_LIMITS:
                for tc in TRAFFIC_CLASSES:
                    with self.subTest(flow_label=fl, hop_limit=hl,
                                      traffic_class=tc):
                        AH(self.client.pd, attr=ah_attr(self.client, fl, hl,
                                                        tc)).close()
        for sl in (0, 3, 7, 15):
            with self.subTest(sl=sl):
                AH(self.client.pd,
                   attr=ah_attr(self.client, 0, 64, 0, sl=sl)).close()

    def test_ud_traffic_class_and_flow_label(self):
        """A UD SEND through UCX's AH (flow label 0xffffffff, DLID 0xc000)
        arrives, and the IPv4 TOS is the AH's traffic class, for each of
        0, 106 and 255 (vhca sends all 8 bits as rxe does)."""
        self.ud_pair()
        for tc in TRAFFIC_CLASSES:
            with self.subTest(traffic_class=tc):
                ah = AH(self.client.pd,
                        attr=ah_attr(self.client, 0xffffffff, 64, tc))
                hdr = self.ud_send(ah)
                self.assertEqual(hdr[IPV4_TOS], tc)
                ah.close()

    def test_ud_hop_limit(self):
        """The IPv4 TTL of a UD SEND is the AH's hop limit, for each of 0,
        1, 64 and 255: the provider builds the user AH's vector from the
        consumer's attributes, as mlx5's provider does (the kernel's copy,
        whose hop limit ib_resolve_eth_dmac() may replace, only gives the
        MAC)."""
        self.ud_pair()
        for hl in HOP_LIMITS:
            with self.subTest(hop_limit=hl):
                ah = AH(self.client.pd,
                        attr=ah_attr(self.client, 0x12345, hl, 0))
                self.assertEqual(self.ud_send(ah)[IPV4_TTL], hl)
                ah.close()

    def test_rc_path_ucx_fields(self):
        """modify_qp(IBV_QP_AV) with UCX's path (flow label 0xffffffff,
        DLID 0xc000, traffic class 106) reaches RTS, traffic passes, and
        query_qp reports the flow label's 20 bits, as mlx5 does."""
        self.create_players(PathRC)
        u.traffic(**self.traffic_args)
        qp_attr, _ = self.client.qp.query(e.IBV_QP_AV)
        self.assertEqual(qp_attr.ah_attr.flow_label, 0xfffff)
        self.assertEqual(qp_attr.ah_attr.traffic_class, 106)
