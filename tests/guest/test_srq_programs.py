"""Unmodified RDMA programs on shared receive queues (IBTA 10.2.9).

Three guests on one fabric: guests 1 and 2 have a vhca, guest 3 a
virtio-net NIC with Linux's soft-RoCE (rxe0).  Each program runs between
the two vhca guests, and between vhca and rxe with each as the server, so
an independent implementation is the peer of vhca's SRQ receive side (and
of the AETH credit code "invalid" an RC responder on an SRQ sends).

ibv_srq_pingpong (rdma-core) connects 16 RC QPs that all receive from one
SRQ of 500 WQEs and refills it as it drains, so the 1600 messages a side
takes wrap the ring three times; -c checks every buffer received.
ib_send_bw --use-srq (perftest) receives its stream through an SRQ.
"""

import unittest

from host_common import vhca_fabric
import datagram_cases

fabric = vhca_fabric.ModuleFabric("srq", count=3,
                                  nics=["vhca", "vhca", "rxe"])
setUpModule, tearDownModule = fabric.start, fabric.stop

CASES = {c.name: c for c in [
    datagram_cases.Case(
        "srq_pingpong",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -n 100",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -n 100 %(srv)s",
        18515, datagram_cases.TCP, datagram_cases.pingpong_ok),
    # Messages of three packets at the 1024-byte path MTU: FIRST, MIDDLE
    # and LAST take one SRQ WQE together.
    datagram_cases.Case(
        "srq_pingpong_multi_packet",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -q 4 -s 3000 -n 100",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -q 4 -s 3000 -n 100 "
        "%(srv)s",
        18515, datagram_cases.TCP, datagram_cases.pingpong_ok),
    datagram_cases.Case(
        "send_bw_srq",
        "ib_send_bw -d %(dev)s -x %(gid)s -F --use-srq -s 4096 -n 200",
        "ib_send_bw -d %(dev)s -x %(gid)s -F --use-srq -s 4096 -n 200 "
        "%(srv)s",
        18515, datagram_cases.TCP, datagram_cases.perftest_ok(4096, 200)),
]}


def vhca_guests():
    return fabric[1], fabric[2]


def rxe_guest():
    return fabric[3]


class VhcaServesVhca(unittest.TestCase):
    """Guest 2 serves, guest 1 is the client."""


class VhcaServesRxe(unittest.TestCase):
    pass


class RxeServesVhca(unittest.TestCase):
    pass


def _add(case):
    def vhca_serves_vhca(self):
        client, server = vhca_guests()
        datagram_cases.run_case(self, case, server, client)

    def vhca_serves_rxe(self):
        datagram_cases.run_case(self, case, vhca_guests()[0], rxe_guest())

    def rxe_serves_vhca(self):
        datagram_cases.run_case(self, case, rxe_guest(), vhca_guests()[0])
    setattr(VhcaServesVhca, "test_" + case.name, vhca_serves_vhca)
    setattr(VhcaServesRxe, "test_" + case.name, vhca_serves_rxe)
    setattr(RxeServesVhca, "test_" + case.name, rxe_serves_vhca)


for _case in CASES.values():
    _add(_case)


class DeviceAttributes(unittest.TestCase):
    """What programs size their SRQs by: the device's SRQ limits, and
    that it resizes SRQs (IB_DEVICE_SRQ_RESIZE)."""

    def test_device_reports_srqs(self):
        out = vhca_guests()[0].run("ibv_devinfo -v -d vhca0")
        self.assertRegex(out, r"max_srq:\s+[1-9]")
        self.assertRegex(out, r"max_srq_wr:\s+16384")
        self.assertRegex(out, r"max_srq_sge:\s+7")
        self.assertIn("SRQ_RESIZE", out)


NQN = "srq-test"
NVMET = "/sys/kernel/config/nvmet"


class KernelSrq(unittest.TestCase):
    """A kernel ULP on vhca's SRQs: nvmet-rdma with use_srq=1 serves a
    namespace from a vhca guest to an nvme-rdma host on rxe
    (tests/guest/test_nvme_rdma.py runs the host on vhca too).  The target
    receives every command capsule through its SRQs of 256 WQEs
    (post_srq_recv, the driver's kernel SRQ ring) and moves the data with
    RDMA READ and WRITE; the host writes 4 MiB of random data in 4 KiB
    blocks and reads it back, over 2048 commands that wrap the rings.
    Unloading nvmet-rdma destroys the SRQs."""

    def setUp(self):
        # The image carries nvme-rdma and nvmet-rdma (images/build-image.sh).
        self.target, self.host = vhca_guests()[0], rxe_guest()

    def serve(self):
        ns = "%s/subsystems/%s/namespaces/1" % (NVMET, NQN)
        port = "%s/ports/1" % NVMET
        self.target.run(
            "modprobe nvmet-rdma use_srq=1 srq_size=256 && "
            "(mountpoint -q /sys/kernel/config || "
            "mount -t configfs configfs /sys/kernel/config) && "
            "truncate -s 16M /tmp/nvmet.img && "
            "mkdir %(nvmet)s/subsystems/%(nqn)s && "
            "echo 1 > %(nvmet)s/subsystems/%(nqn)s/attr_allow_any_host && "
            "mkdir %(ns)s && echo /tmp/nvmet.img > %(ns)s/device_path && "
            "echo 1 > %(ns)s/buffered_io && echo 1 > %(ns)s/enable && "
            "mkdir %(port)s && echo rdma > %(port)s/addr_trtype && "
            "echo ipv4 > %(port)s/addr_adrfam && "
            "echo %(ip)s > %(port)s/addr_traddr && "
            "echo 4420 > %(port)s/addr_trsvcid && "
            "ln -s %(nvmet)s/subsystems/%(nqn)s %(port)s/subsystems/%(nqn)s"
            % {"nvmet": NVMET, "nqn": NQN, "ns": ns, "port": port,
               "ip": self.target.ipv4})

    def unserve(self):
        ns = "%s/subsystems/%s/namespaces/1" % (NVMET, NQN)
        port = "%s/ports/1" % NVMET
        self.target.run(
            "rm -f %(port)s/subsystems/%(nqn)s; rmdir %(port)s; "
            "echo 0 > %(ns)s/enable; rmdir %(ns)s; "
            "rmdir %(nvmet)s/subsystems/%(nqn)s; "
            "modprobe -r nvmet-rdma nvmet"
            % {"nvmet": NVMET, "nqn": NQN, "ns": ns, "port": port})

    def test_nvmet_rdma_target_on_srqs(self):
        self.serve()
        try:
            self.host.run(
                "modprobe nvme-rdma && echo transport=rdma,traddr=%s,"
                "trsvcid=4420,nqn=%s > /dev/nvme-fabrics && "
                "for i in $(seq 300); do [ -b /dev/nvme0n1 ] && exit 0; "
                "sleep 0.1; done; exit 1" % (self.target.ipv4, NQN), 180)
            srqs = self.target.run("rdma resource show srq dev vhca0")
            try:
                self.host.run(
                    "head -c 4M /dev/urandom > /tmp/sent && "
                    "dd if=/tmp/sent of=/dev/nvme0n1 bs=4k oflag=direct "
                    "status=none && "
                    "dd if=/dev/nvme0n1 of=/tmp/back bs=4k count=1024 "
                    "iflag=direct status=none && cmp /tmp/sent /tmp/back",
                    300)
            finally:
                self.host.run("echo 1 > /sys/class/nvme/nvme0/delete_controller"
                              "; modprobe -r nvme-rdma", 120)
        finally:
            self.unserve()
        # The target's queues received on SRQs the kernel made.
        self.assertRegex(srqs, r"(?m)^dev vhca0 srqn \d+ .*comm \[nvmet_rdma\]")
        self.assertNotIn("vhca0", self.target.run(
            "rdma resource show srq"))
        # Nothing the driver reports (dev_warn/dev_err), no kernel WARN.
        self.assertNotRegex(self.target.run("dmesg"),
                            r"(?m)(vhca [0-9a-f]{4}:|WARNING:|BUG:)")


if __name__ == "__main__":
    unittest.main()
