"""NVMe over RDMA between vhca_fabric guests: export and connect.

A target guest exports a RAM-backed null_blk namespace through the kernel
NVMe target (nvmet, nvmet-rdma) configured over configfs, on its IPv4
address; a host guest connects with nvme-cli and finds the namespace's
block device.  Used by tests/guest/test_nvme_rdma.py and
scripts/bench_nvme.py; docs/user-guide.rst, "NVMe over RDMA", shows the
same steps by hand.
"""

PORT = 4420
NVMET = "/sys/kernel/config/nvmet"

# The host's check of a connected namespace (%(dev)s): 1 MiB of random
# data written and read back in 64 KiB direct I/Os (16 pages: one fast
# registration each), then a small fio job with --verify=crc32c.
VERIFY = r"""
set -e
dev=%(dev)s
dd if=/dev/urandom of=/tmp/pattern bs=64k count=16 status=none
dd if=/tmp/pattern of=$dev bs=64k count=16 oflag=direct status=none
dd if=$dev of=/tmp/back bs=64k count=16 iflag=direct status=none
cmp /tmp/pattern /tmp/back
echo "dd round trip verified"
fio --name=verify --filename=$dev --offset=8m --size=1m --rw=randwrite \
    --bs=4k --direct=1 --ioengine=psync --verify=crc32c --verify_fatal=1 \
    --do_verify=1 --output-format=terse > /tmp/fio.out
echo "fio verify passed"
"""


def nqn(guest):
    """The subsystem NQN guest exports."""
    return "nqn.2026-12.io.vhca:guest%d" % guest.index


def export(guest, size_gb=1):
    """Export a null_blk of size_gb GiB from guest at its IPv4 address,
    port 4420, to any host; once per guest (later calls do nothing).
    null_blk's memory_backed mode allocates a page on its first write."""
    guest.run(
        "set -e\n"
        "[ -d %(cfg)s/subsystems/%(n)s ] && exit 0\n"
        "modprobe null_blk nr_devices=1 memory_backed=1 gb=%(gb)d\n"
        "modprobe nvmet\n"
        "modprobe nvmet-rdma\n"
        "mountpoint -q /sys/kernel/config ||"
        " mount -t configfs configfs /sys/kernel/config\n"
        "for i in $(seq 50); do [ -b /dev/nullb0 ] && break; sleep 0.2; done\n"
        "s=%(cfg)s/subsystems/%(n)s\n"
        "mkdir $s\n"
        "echo 1 > $s/attr_allow_any_host\n"
        "mkdir $s/namespaces/1\n"
        "echo -n /dev/nullb0 > $s/namespaces/1/device_path\n"
        "echo 1 > $s/namespaces/1/enable\n"
        "p=%(cfg)s/ports/1\n"
        "mkdir $p\n"
        "echo rdma > $p/addr_trtype\n"
        "echo ipv4 > $p/addr_adrfam\n"
        "echo %(ip)s > $p/addr_traddr\n"
        "echo %(port)d > $p/addr_trsvcid\n"
        "ln -s $s $p/subsystems/%(n)s\n"
        % {"cfg": NVMET, "n": nqn(guest), "ip": guest.ipv4, "port": PORT,
           "gb": size_gb},
        timeout=180)


def unexport(guest):
    """Undo export(): the port, the subsystem, the modules, so that the
    guest is as it booted (a later test may configure nvmet itself)."""
    guest.run(
        "s=%(cfg)s/subsystems/%(n)s; p=%(cfg)s/ports/1\n"
        "if [ -d $s ]; then\n"
        "  rm -f $p/subsystems/%(n)s && rmdir $p\n"
        "  echo 0 > $s/namespaces/1/enable && rmdir $s/namespaces/1\n"
        "  rmdir $s || exit 1\n"
        "fi\n"
        "modprobe -r nvmet-rdma nvmet null_blk\n"
        % {"cfg": NVMET, "n": nqn(guest)},
        timeout=120)


def connect(host, target):
    """nvme connect -t rdma from host to target's subsystem; return the
    namespace's block device (/dev/nvmeXnY).  The guest has no udev: the
    node is devtmpfs's, found through sysfs: the block device whose
    device (the controller, or with native multipath the subsystem) has
    target's NQN."""
    out = host.run(
        "set -e\n"
        "modprobe nvme-rdma\n"
        "nvme connect -t rdma -a %(ip)s -s %(port)d -n %(n)s\n"
        "for i in $(seq 150); do\n"
        "  for b in /sys/block/nvme*n*; do\n"
        "    [ \"$(cat $b/device/subsysnqn 2>/dev/null)\" = %(n)s ] &&\n"
        "      [ -b /dev/${b##*/} ] && echo device /dev/${b##*/} && exit 0\n"
        "  done\n"
        "  sleep 0.2\n"
        "done\n"
        "echo 'no namespace of %(n)s appeared'; exit 1\n"
        % {"ip": target.ipv4, "port": PORT, "n": nqn(target)},
        timeout=300)
    return out.split("device ", 1)[1].split()[0]


def disconnect(host, target):
    """nvme disconnect from target's subsystem; return the NQNs of the
    controllers host still has."""
    host.run("nvme disconnect -n %s" % nqn(target), timeout=120)
    return host.run("cat /sys/class/nvme/nvme*/subsysnqn 2>/dev/null "
                    "|| true")
