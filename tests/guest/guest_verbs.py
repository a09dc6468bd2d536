"""What every pyverbs script that runs inside a guest needs: the vhca
device, the GID of its IPv4 address, and a failure exit.

Runs inside a guest only (it imports pyverbs); guest_scripts.put() copies
it next to the script that imports it."""
import sys

import pyverbs.device as d

PORT = 1


def fail(msg):
    """Report a failure the test looks for, and exit."""
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def vhca_context():
    """A context on the guest's vhca RDMA device."""
    for dev in d.get_device_list():
        name = dev.name.decode()
        if name.startswith("vhca"):
            return d.Context(name=name)
    fail("no vhca RDMA device")


def ipv4_gid_index(ctx):
    """The GID table index of the interface's IPv4 address, ::ffff:a.b.c.d
    (IBTA A17.4.1.1; every GID of a vhca is a RoCE v2 GID)."""
    for idx in range(ctx.query_port(PORT).gid_tbl_len):
        if str(ctx.query_gid(PORT, idx)).startswith(
                "0000:0000:0000:0000:0000:ffff:"):
            return idx
    fail("no IPv4 RoCEv2 GID on port %d" % PORT)
