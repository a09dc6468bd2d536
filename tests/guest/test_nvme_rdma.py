"""Kernel NVMe over RDMA (nvme-rdma, nvmet-rdma) between guests.

nvme-rdma needs IB_DEVICE_MEM_MGT_EXTENSIONS: the host registers every I/O
buffer with an IB_WR_REG_MR fast registration, the target moves the data
with RDMA READ (host writes) and RDMA WRITE (host reads) through that
R_Key and answers with a SEND with Invalidate naming it, which must free
the MR at the host (nvme-rdma compares the invalidated key with its MR's
and fails the I/O on a "bogus remote invalidation").  A verified round
trip therefore exercises fast registration and remote invalidation
(docs/specs/vhca.rst, "Fast registration and invalidation").

Guests 1 and 2 have a vhca, guest 3 rxe (scripts/vhca_fabric.py).  Each
target exports a RAM-backed null_blk namespace with nvmet over configfs
(scripts/nvmeof.py); the host connects with `nvme connect -t rdma`, writes
1 MiB of random data in 64 KiB direct I/Os, reads it back and compares,
runs a small fio job with --verify=crc32c, and disconnects.  Sizes are
small: the guests run under TCG.
"""

import unittest

from host_common import vhca_fabric
import nvmeof

fabric = vhca_fabric.ModuleFabric("nvme-rdma", count=3,
                                  nics=["vhca", "vhca", "rxe"])
setUpModule = fabric.start


def tearDownModule():
    # The guests may serve the next module (vhca_fabric.ModuleFabric).
    try:
        for index in (1, 2, 3):
            nvmeof.unexport(fabric[index])
    except BaseException:
        fabric.discard()
        raise
    fabric.stop()


class NvmeOverRdma(unittest.TestCase):
    """One host connects to one target, writes, reads back, verifies."""

    def round_trip(self, target, host):
        nvmeof.export(target)
        dev = nvmeof.connect(host, target)
        self.assertRegex(dev, r"^/dev/nvme\d+n\d+$")
        try:
            out = host.run(nvmeof.VERIFY % {"dev": dev}, timeout=900)
        finally:
            left = nvmeof.disconnect(host, target)
        self.assertIn("dd round trip verified", out)
        self.assertIn("fio verify passed", out)
        # Disconnected: no controller of that subsystem is left.
        self.assertNotIn(nvmeof.nqn(target), left)

    def test_vhca_host_vhca_target(self):
        self.round_trip(fabric[2], fabric[1])

    def test_vhca_host_rxe_target(self):
        self.round_trip(fabric[3], fabric[1])

    def test_rxe_host_vhca_target(self):
        self.round_trip(fabric[1], fabric[3])


if __name__ == "__main__":
    unittest.main()
