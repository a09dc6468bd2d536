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
from guest_jobs import Job, finish_all, start_pair
import guest_jobs
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


# fio with every block checked (crc32c, read back once written): 16 MiB in
# 4 KiB writes, long enough for a migration to fall in the middle.
FIO_VERIFY = ("fio --name=migrate --filename=%s --offset=64m --size=16m "
              "--rw=randwrite --bs=4k --direct=1 --ioengine=psync "
              "--verify=crc32c --verify_fatal=1 --do_verify=1 "
              "--output-format=terse")


class MigrateNvmeHost(unittest.TestCase):
    def test_fio_verify_and_rxe_peer_across_migration(self):
        # Issue 30: guest 1, the NVMe-over-RDMA host of guest 2's target
        # (vhca) and guest 3's (rxe), migrated in the middle of a fio
        # --verify run on each, and of rping -V with guest 3 (an rxe
        # peer): nvme-rdma's queues, rdma_cm's connections and their
        # fast-registered MRs move with the guest.
        targets = (fabric[2], fabric[3])
        for target in targets:
            nvmeof.export(target)
        devs = [nvmeof.connect(fabric[1], target) for target in targets]
        try:
            jobs = []
            for target, dev in zip(targets, devs):
                job = Job(fabric, 1, "fio-guest%d" % target.index,
                          FIO_VERIFY % dev)
                # Under way: the namespace has completed writes (field 5
                # of the block device's stat).
                job.wait_for("[ $(awk '{print $5}' /sys/block/%s/stat) "
                             "-gt 0 ]" % dev[len("/dev/"):])
                jobs.append(job)
            jobs += start_pair(
                fabric, "rping-rxe", 3, 1,
                "rping -s -a %s -p 7191 -V -v -C 3000" % fabric[3].ipv4,
                "rping -c -a %s -p 7191 -V -v -C 3000" % fabric[3].ipv4,
                vhca_fabric.READY_RDMA_CM % {"port": 7191},
                "[ $(wc -l < %(log)s) -ge 20 ]")
            guest_jobs.migrate(self, fabric, 1, jobs)
            outs = finish_all(self, jobs, 600)
        finally:
            for target in targets:
                nvmeof.disconnect(fabric[1], target)
        self.assertEqual(outs["rping-rxe"].count("ping data: "), 3000)
        self.assertNotRegex(outs["rping-rxe"] + outs["rping-rxe-server"],
                            r"(?i)(error|fail|mismatch)")


if __name__ == "__main__":
    unittest.main()
