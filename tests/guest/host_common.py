"""What the host side of the guest tests shares.

It puts scripts/ on sys.path and imports vhca_fabric from there, so a
test module starts with

    from host_common import vhca_fabric

and can import the other modules of scripts/ (fabric_relay, nvmeof)
after that.  It also holds the values the guest_*.py scripts report as
plain numbers (rdma-core's enums: the host has no pyverbs), RoCE v2's UDP
port, and ScriptFifo, the test's side of a guest_*.py script that reads
its commands from a FIFO.

Runs on the host only; a script inside a guest has guest_verbs.py instead.
tests/guest is no package: unittest discovers it with itself as the top
level (tests/run_all.py), so every module here is imported by its own name.
"""

import os
import sys

import guest_scripts

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.normpath(os.path.join(HERE, "../../scripts"))
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)
import vhca_fabric  # noqa: E402 (scripts/vhca_fabric.py)

__all__ = ["SCRIPTS", "vhca_fabric", "ROCE_UDP_PORT",
           "IBV_WC_SUCCESS", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_REM_ACCESS_ERR",
           "IBV_WC_RETRY_EXC_ERR",
           "IBV_WC_SEND", "IBV_WC_RDMA_WRITE", "IBV_WC_RDMA_READ",
           "IBV_WC_FETCH_ADD", "IBV_WC_BIND_MW", "IBV_WC_LOCAL_INV",
           "IBV_WC_FLUSH", "IBV_WC_ATOMIC_WRITE", "IBV_WC_RECV",
           "IBV_WC_WITH_INV", "ScriptFifo"]

# IBTA Vol 1 annex A17 (RoCE v2): the UDP destination port of every
# RoCE v2 packet.
ROCE_UDP_PORT = 4791

# rdma-core's enum ibv_wc_status.
IBV_WC_SUCCESS = 0
IBV_WC_WR_FLUSH_ERR = 5
IBV_WC_REM_ACCESS_ERR = 10
IBV_WC_RETRY_EXC_ERR = 12

# rdma-core's enum ibv_wc_opcode.
IBV_WC_SEND = 0
IBV_WC_RDMA_WRITE = 1
IBV_WC_RDMA_READ = 2
IBV_WC_FETCH_ADD = 4
IBV_WC_BIND_MW = 5
IBV_WC_LOCAL_INV = 6
IBV_WC_FLUSH = 8
IBV_WC_ATOMIC_WRITE = 9
IBV_WC_RECV = 128

# rdma-core's enum ibv_wc_flags.
IBV_WC_WITH_INV = 1 << 3


class ScriptFifo:
    """A TestCase mixin for a guest_*.py script that runs in the
    background in a guest, reads its commands from FIFO, prints to LOG,
    and whose process id is in PID (paths in the guest, set by the
    TestCase)."""

    FIFO = None
    LOG = None
    PID = None

    def launch(self, guest, script, args):
        """Copy script (with guest_verbs.py) into guest and start it
        there with args, at most 300 s."""
        path = guest_scripts.put(guest, script)
        guest.run("rm -f %s %s; mkfifo %s; timeout 300 python3 %s %s "
                  "> %s 2>&1 < /dev/null & echo $! > %s"
                  % (self.FIFO, self.LOG, self.FIFO, path, args, self.LOG,
                     self.PID))

    def kill_script(self, guests):
        """Stop the script in each of guests, if it still runs."""
        for g in guests:
            g.exec("kill $(cat %s) 2>/dev/null; true" % self.PID)

    def expect(self, guest, prefix, timeout=120):
        """The script's first line starting with prefix, once printed."""
        return guest.run(
            "for i in $(seq %d); do "
            "grep -m1 '^%s' %s && exit 0; "
            "kill -0 $(cat %s) 2>/dev/null || break; sleep 0.1; done; "
            "echo 'no \"%s\" from the script:'; cat %s; exit 1"
            % (timeout * 10, prefix, self.LOG, self.PID, prefix, self.LOG),
            timeout + 30).strip()

    def tell(self, guest, line):
        """Write line into the script's FIFO."""
        guest.run("timeout 60 sh -c 'echo %s > %s'" % (line, self.FIFO), 90)
