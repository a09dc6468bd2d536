"""The middleware HPC and AI software runs on, between two vhca guests
(issue 31): UCX, libfabric's verbs provider, and Open MPI over UCX.

Debian's own packages in the guests (images/build-image.sh), unmodified,
with the environment docs/user-guide.rst, "Middleware", gives:

- UCX: ``ucx_info -d`` lists vhca0's rc_verbs and ud_verbs; ucx_perftest
  UCT tests over rc_verbs (put/get bandwidth, active messages, atomics)
  and ud_verbs (active messages), and UCP tests (tag matching, active
  messages, RMA, atomics) on RC with UD wire-up and on UD alone;
- libfabric: ``fi_info -p verbs`` lists vhca0; ``fi_pingpong`` with MSG
  endpoints and with RDM endpoints through RXM ("verbs;ofi_rxm", whose
  CQ of 128 + 128 * 1024 entries needs max_cqe above 2^17); RMA and
  atomics through RXM with tests/guest/fi_rma_check.c (built here
  against Debian's libfabric-dev, copied into the guests);
- MPI: tests/guest/mpi_check.py (ping-pong and allreduce, results
  checked) as one rank per guest, launched by scripts/vhca_mpirun.py,
  over UCX and over libfabric (Open MPI's OFI MTL: tagged messages
  through "verbs;ofi_rxm").

Every test asserts on the figure or line the program prints and on its
exit status.  One fabric of two vhca guests, shared with the other
modules that ask for the default one.
"""

import os
import re
import subprocess
import tempfile
import unittest

from host_common import vhca_fabric
import vhca_mpirun

fabric = vhca_fabric.ModuleFabric("middleware")
setUpModule, tearDownModule = fabric.start, fabric.stop

HERE = os.path.dirname(os.path.abspath(__file__))
UCX_PORT = 13337         # ucx_perftest's default
FI_PINGPONG_PORT = 47592  # fi_pingpong's default control port
FI_RMA_CHECK_PORT = 47593  # fi_rma_check.c's default control port
UCX_DEV = "UCX_NET_DEVICES=vhca0:1 "
# The line ucx_perftest prints last for a test that ran to its end:
# "Final:  <iterations>  <latency or overhead figures> ...".
UCX_FINAL = re.compile(r"^Final:\s+(\d+)\s", re.MULTILINE)
# UCT over rc_verbs: put and get bandwidth, active messages, the atomics
# verbs has (no swap: only mlx5's direct verbs give UCX that one); get
# takes a copy (-D bcopy), as rc_verbs has no short get.
UCT_RC_TESTS = ("put_bw", "get_bw -D bcopy", "am_lat", "add_lat", "fadd",
                "cswap")
# UCT over ud_verbs: active messages only (UD has no RDMA).
UCT_UD_TESTS = ("am_lat", "am_bw")
# UCP over RC with UD for wire-up: tag matching, active messages, RMA,
# atomics (UCP takes verbs' atomics on RC).
UCP_TESTS = ("tag_lat", "tag_bw", "ucp_am_lat", "ucp_put_bw", "ucp_get",
             "ucp_add")
# UCP over UD alone: RMA emulated over active messages.
UCP_UD_TESTS = ("tag_lat", "ucp_am_lat", "ucp_put_bw")


def pair(server_cmd, client_cmd, port, timeout=180):
    """Server in guest 2, client in guest 1 (vhca_fabric.client_server)."""
    return vhca_fabric.client_server(fabric[2], fabric[1], server_cmd,
                                     client_cmd, port, timeout)


class Ucx(unittest.TestCase):
    def perftest(self, env, test, uct=""):
        """ucx_perftest server and client with env (and for a UCT test the
        device and transport, uct, on both ends); the client's output,
        checked to have run its iterations.  -P 0: not under mpirun
        (docs/user-guide.rst, "Middleware")."""
        server = "%sucx_perftest -P 0 %s" % (env, uct)
        status, out, server_out = pair(
            server, "%sucx_perftest -P 0 %s %s -t %s -n 1000"
            % (env, uct, fabric[2].ipv4, test), UCX_PORT)
        self.assertEqual(status, 0, "ucx_perftest -t %s:\n%s\n--- server:"
                         "\n%s" % (test, out, server_out))
        final = UCX_FINAL.search(out)
        self.assertIsNotNone(final, "no 'Final:' line:\n%s" % out)
        self.assertEqual(int(final.group(1)), 1000, out)
        return out

    def test_ucx_info_lists_vhca_transports(self):
        out = fabric[1].run("ucx_info -d")
        # ucx_info -d prints "#      Transport: rc_verbs" then
        # "#         Device: vhca0:1" for each transport on each device.
        found = set(re.findall(r"Transport: (\w+)\s*\n#\s+Device: vhca0:1",
                               out))
        self.assertTrue({"rc_verbs", "ud_verbs"} <= found,
                        "vhca0:1 transports %s:\n%s" % (found, out))

    def test_uct_rc_verbs(self):
        for test in UCT_RC_TESTS:
            with self.subTest(test=test):
                self.perftest(UCX_DEV, test, "-d vhca0:1 -x rc_verbs")

    def test_uct_ud_verbs(self):
        for test in UCT_UD_TESTS:
            with self.subTest(test=test):
                self.perftest(UCX_DEV, test, "-d vhca0:1 -x ud_verbs")

    def test_ucp_rc_with_ud_wireup(self):
        for test in UCP_TESTS:
            with self.subTest(test=test):
                self.perftest(UCX_DEV + "UCX_TLS=rc_verbs,ud_verbs ", test)

    def test_ucp_ud_alone(self):
        for test in UCP_UD_TESTS:
            with self.subTest(test=test):
                self.perftest(UCX_DEV + "UCX_TLS=ud_verbs ", test)


class Libfabric(unittest.TestCase):
    def test_fi_info_lists_vhca0(self):
        out = fabric[1].run("fi_info -p verbs")
        self.assertRegex(out, r"domain: vhca0\b")
        self.assertRegex(out, r"type:\s+FI_EP_MSG")

    def pingpong(self, provider, ep_type):
        args = "fi_pingpong -p '%s' -e %s -I 100 -S all -v" % (provider,
                                                              ep_type)
        status, out, server_out = pair(
            args, "%s %s" % (args, fabric[2].ipv4), FI_PINGPONG_PORT)
        self.assertEqual(status, 0, "%s:\n%s\n--- server:\n%s"
                         % (args, out, server_out))
        # fi_pingpong prints a row per size ("bytes #sent #ack total time
        # MB/sec usec/xfer Mxfers/sec"): -S all goes from 0 bytes to
        # 6 MiB, powers of two and 1.5 times them, 46 sizes, each with the
        # 100 iterations asked for, all acknowledged ("=100"); -v checks
        # every message's contents.
        sizes = re.findall(r"^(\d+(?:\.\d+)?[kmg]?)\s+100\s+=100\s", out,
                           re.MULTILINE)
        self.assertEqual(len(sizes), 46, out)
        self.assertEqual((sizes[0], sizes[-1]), ("0", "6m"), out)
        return out

    def test_fi_pingpong_msg(self):
        self.pingpong("verbs", "msg")

    def test_fi_pingpong_rdm_rxm(self):
        self.pingpong("verbs;ofi_rxm", "rdm")

    def test_rma_and_atomics_rdm_rxm(self):
        # fi_rma_check.c on the host's libfabric-dev (Debian 12's 1.17
        # API; the guests' libfabric 2.1 keeps its symbol versions).
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "fi_rma_check")
            proc = subprocess.run(
                ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", binary,
                 os.path.join(HERE, "fi_rma_check.c"), "-lfabric"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(proc.returncode, 0, "building fi_rma_check.c "
                             "(libfabric-dev: scripts/setup-host.sh):\n%s"
                             % proc.stdout)
            for g in (fabric[1], fabric[2]):
                g.put_file("/tmp/fi_rma_check", binary)
                g.run("chmod +x /tmp/fi_rma_check")
        status, out, server_out = pair(
            "/tmp/fi_rma_check", "/tmp/fi_rma_check %s" % fabric[2].ipv4,
            FI_RMA_CHECK_PORT)
        self.assertEqual(status, 0, "%s\n--- server:\n%s"
                         % (out, server_out))
        # Both ends on RXM over verbs on vhca0, not on another provider.
        for end, text in (("client", out), ("server", server_out)):
            self.assertIn("fi_rma_check: %s provider verbs;ofi_rxm domain "
                          "vhca0\n" % end, text)
        for line in ("read ok, 6 sizes of the server's pattern",
                     "write and read back ok, sizes 1 to 4194304 bytes, "
                     "10 each",
                     "atomics ok, sum 55000 fetched, swapped for 42",
                     "server checked its memory: ok"):
            self.assertIn("fi_rma_check: " + line, out)
        self.assertIn("last write of 4194304 bytes and the atomic word: ok",
                      server_out)


class Mpi(unittest.TestCase):
    def mpi_check(self, **kwargs):
        status, out = vhca_mpirun.mpirun(
            fabric.booted(), ["python3", "/tmp/mpi_check.py"],
            put=[os.path.join(HERE, "mpi_check.py")], timeout=300,
            **kwargs)
        self.assertEqual(status, 0, out)
        self.assertIn("mpi_check: hosts guest1 guest2", out)
        self.assertRegex(out, r"mpi_check: pingpong ok 50 iterations")
        self.assertRegex(out, r"mpi_check: allreduce ok 2 ranks")
        return out

    def test_pingpong_and_allreduce(self):
        self.mpi_check()

    def test_pingpong_and_allreduce_ofi_mtl(self):
        # Open MPI's OFI MTL says which provider and domain it took, once
        # a rank, with its verbosity at 1 (mtl_ofi_component.c,
        # select_ofi_provider): "mtl:ofi:provider: verbs;ofi_rxm",
        # "mtl:ofi:provider:domain: vhca0".  The CM PML is the only one
        # allowed, and it runs over the MTL alone, so the run cannot have
        # gone over UCX or TCP.
        out = self.mpi_check(transport="ofi", env={
            "OMPI_MCA_opal_common_ofi_verbose": "1"})
        self.assertEqual(re.findall(r"mtl:ofi:provider: (\S+)", out),
                         ["verbs;ofi_rxm"] * 2, out)
        self.assertEqual(re.findall(r"mtl:ofi:provider:domain: (\S+)",
                                    out), ["vhca0"] * 2, out)


if __name__ == "__main__":
    unittest.main()
