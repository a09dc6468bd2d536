"""The middleware between a vhca guest and a Linux rxe guest (issue 31),
as far as rxe supports it (docs/user-guide.rst, "Middleware: UCX,
libfabric and MPI", "Linux rxe"):

- UCX's UCT rc_verbs both ways (put bandwidth);
- UCP over RC with UD wire-up, with UCX's destination-GID check off on
  the rxe end (UCX_UD_VERBS_ETH_DGID_CHECK=n): rxe reports no RoCE packet
  type in ibv_wc.sl, so UCX on rxe would drop every IPv4 datagram;
- libfabric's verbs provider with MSG endpoints (fi_pingpong, data
  checked);
- Open MPI over UCX, one rank in each guest (tests/guest/mpi_check.py
  through scripts/vhca_mpirun.py, which gives each rank its own device
  and the rxe rank the GID check off).

RXM is left out: rxe refuses its verbs CQ (docs/limits.rst,
"Middleware").  Guest 1 is vhca0, guest 2 rxe0; the fabric is the one
test_interop_rxe.py boots.
"""

import os
import re
import unittest

from host_common import vhca_fabric
import vhca_mpirun

fabric = vhca_fabric.ModuleFabric("interop-rxe", nics=["vhca", "rxe"])
setUpModule, tearDownModule = fabric.start, fabric.stop

HERE = os.path.dirname(os.path.abspath(__file__))
UCX_PORT = 13337
FI_PINGPONG_PORT = 47592
UCX_FINAL = re.compile(r"^Final:\s+(\d+)\s", re.MULTILINE)


def ucx_env(guest):
    return "UCX_NET_DEVICES=%s:1 " % guest.rdma_dev


class UcxWithRxe(unittest.TestCase):
    def perftest(self, server, client, server_args, client_args):
        """ucx_perftest between server and client (guests); the client's
        'Final:' line, with the 1000 iterations asked for."""
        status, out, server_out = vhca_fabric.client_server(
            server, client, "%sucx_perftest -P 0 %s"
            % (ucx_env(server), server_args),
            "%sucx_perftest -P 0 %s %s" % (ucx_env(client), server.ipv4,
                                           client_args), UCX_PORT, 180)
        self.assertEqual(status, 0, "%s:\n%s\n--- server:\n%s"
                         % (client_args, out, server_out))
        final = UCX_FINAL.search(out)
        self.assertIsNotNone(final, "no 'Final:' line:\n%s" % out)
        self.assertEqual(int(final.group(1)), 1000, out)

    def test_uct_rc_verbs_both_ways(self):
        for server, client in ((fabric[2], fabric[1]),
                               (fabric[1], fabric[2])):
            with self.subTest(server=server.rdma_dev):
                self.perftest(server, client,
                              "-d %s:1 -x rc_verbs" % server.rdma_dev,
                              "-d %s:1 -x rc_verbs -t put_bw -n 1000"
                              % client.rdma_dev)

    def test_ucp_rc_with_ud_wireup(self):
        # rxe (guest 2) serves, with the GID check off (see above).
        tls = "UCX_TLS=rc_verbs,ud_verbs "
        status, out, server_out = vhca_fabric.client_server(
            fabric[2], fabric[1],
            "%s%sUCX_UD_VERBS_ETH_DGID_CHECK=n ucx_perftest -P 0"
            % (ucx_env(fabric[2]), tls),
            "%s%sucx_perftest -P 0 %s -t tag_lat -n 1000"
            % (ucx_env(fabric[1]), tls, fabric[2].ipv4), UCX_PORT, 180)
        self.assertEqual(status, 0, "%s\n--- server:\n%s"
                         % (out, server_out))
        final = UCX_FINAL.search(out)
        self.assertIsNotNone(final, "no 'Final:' line:\n%s" % out)
        self.assertEqual(int(final.group(1)), 1000, out)


class LibfabricWithRxe(unittest.TestCase):
    def test_fi_pingpong_msg(self):
        args = "fi_pingpong -p verbs -e msg -I 20 -v"
        status, out, server_out = vhca_fabric.client_server(
            fabric[2], fabric[1], args, "%s %s" % (args, fabric[2].ipv4),
            FI_PINGPONG_PORT, 180)
        self.assertEqual(status, 0, "%s\n--- server:\n%s"
                         % (out, server_out))
        # The default sizes, 64 bytes to 1 MiB, 20 iterations each, all
        # acknowledged.
        sizes = re.findall(r"^(\S+)\s+20\s+=20\s", out, re.MULTILINE)
        self.assertEqual(sizes, ["64", "256", "1k", "4k", "64k", "1m"], out)


class MpiWithRxe(unittest.TestCase):
    def test_pingpong_and_allreduce(self):
        status, out = vhca_mpirun.mpirun(
            fabric.booted(), ["python3", "/tmp/mpi_check.py"],
            put=[os.path.join(HERE, "mpi_check.py")], timeout=300)
        self.assertEqual(status, 0, out)
        self.assertIn("mpi_check: hosts guest1 guest2", out)
        self.assertRegex(out, r"mpi_check: pingpong ok 50 iterations")
        self.assertRegex(out, r"mpi_check: allreduce ok 2 ranks")


if __name__ == "__main__":
    unittest.main()
