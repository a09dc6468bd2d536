"""A memory window's life between two guests (IBTA 10.6.7), for any two
RDMA devices that can reach each other: vhca and rxe on RoCE
(test_mw_interop.py), two vhcas on an InfiniBand port by LID
(test_ib_link.py).

guest_mw.py runs on both sides of an RC connection: the owner binds a
window of type 1 (ibv_bind_mw()) or type 2 (ibv_wr_bind_mw()) on part of
an MR that grants no remote rights itself; the peer does an RDMA WRITE,
an RDMA READ and a fetch-and-add through the window's key, and the bytes
on both sides show that each went where the window says.  Then the owner
unbinds the type 1 window (a bind of length 0) or invalidates the type 2
one (LOCAL_INV, or the peer's SEND with Invalidate), and the peer's next
access through the key completes with a remote access error.

WindowScenario is a mixin for a unittest.TestCase whose guests() names
every guest a script may run in.
"""

import json

from host_common import (IBV_WC_BIND_MW, IBV_WC_FETCH_ADD, IBV_WC_LOCAL_INV,
                         IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE, IBV_WC_RECV,
                         IBV_WC_REM_ACCESS_ERR, IBV_WC_SEND, IBV_WC_SUCCESS,
                         IBV_WC_WITH_INV)
import guest_scripts

# The kernel's enum ib_wc_flags value that rxe passes on for
# IBV_WC_WITH_INV.
IB_WC_WITH_INVALIDATE = 1 << 2

# guest_mw.py's layout: the owner's MR holds i & 0xff at offset i.
WINDOW_OFFSET = 0x200
READ_OFFSET = 0x40
ATOMIC_OFFSET = 0x80
DATA = bytes(range(0xa0, 0xb0))


def owner_bytes(offset, length):
    return bytes((offset + i) & 0xff for i in range(length))


class WindowScenario:
    FIFO = "/tmp/mw-%s.fifo"
    LOG = "/tmp/mw-%s.log"
    PID = "/tmp/mw-%s.pid"

    def setUp(self):
        self.seen = {}

    def stop_scripts(self):
        for g in self.guests():
            g.exec("for r in owner peer; do "
                   "kill $(cat /tmp/mw-$r.pid) 2>/dev/null; done; true")

    tearDown = stop_scripts

    def start(self, guest, role, args=""):
        self.seen[role] = {}
        script = guest_scripts.put(guest, "guest_mw.py")
        guest.run("rm -f %s %s; mkfifo %s; timeout 300 python3 %s %s %s %s "
                  "%s > %s 2>&1 < /dev/null & echo $! > %s"
                  % (self.FIFO % role, self.LOG % role, self.FIFO % role,
                     script, role, guest.rdma_dev, self.FIFO % role, args,
                     self.LOG % role, self.PID % role))

    def expect(self, guest, role, prefix, timeout=120):
        """The script's next line starting with prefix (the first not
        returned before), once printed, without the prefix."""
        n = self.seen[role].get(prefix, 0) + 1
        line = guest.run(
            "for i in $(seq %d); do "
            "grep '^%s' %s | sed -n %dp | grep . && exit 0; "
            "kill -0 $(cat %s) 2>/dev/null || break; sleep 0.1; done; "
            "echo 'no \"%s\" (#%d) from the script:'; cat %s; exit 1"
            % (timeout * 10, prefix, self.LOG % role, n, self.PID % role,
               prefix, n, self.LOG % role), timeout + 30).strip()
        self.seen[role][prefix] = n
        return line[len(prefix):].strip()

    def tell(self, guest, role, line):
        status, out = guest.exec("timeout 60 sh -c 'echo %s > %s'"
                                 % (line, self.FIFO % role), 90)
        if status:
            self.fail("the %s script read no '%s' in 60 s; its output:\n%s"
                      % (role, line, guest.exec("cat %s" % (self.LOG % role),
                                                30)[1]))

    def access(self, peer, addr, rkey, ops):
        self.tell(peer, "peer", "access %d %d %s" % (addr, rkey,
                                                     ",".join(ops)))
        return json.loads(self.expect(peer, "peer", "RESULT"))

    def scenario(self, owner, peer, mw_type, invalidation, failing_op):
        """One window's life: bind, use, invalidation ("unbind",
        "local" or "remote"), refused use by failing_op."""
        # What a failed scenario before left running reads the new FIFOs.
        self.stop_scripts()
        self.start(owner, "owner", str(mw_type))
        self.start(peer, "peer")
        owner_line = self.expect(owner, "owner", "LOCAL")
        peer_line = self.expect(peer, "peer", "LOCAL")
        self.tell(owner, "owner", peer_line)
        self.tell(peer, "peer", owner_line)
        self.expect(owner, "owner", "CONNECTED")
        self.expect(peer, "peer", "CONNECTED")

        addr, rkey, bind = self.expect(owner, "owner", "WINDOW").split(
            maxsplit=2)
        addr, rkey, bind = int(addr), int(rkey), json.loads(bind)
        self.assertEqual((bind["status"], bind["opcode"]),
                         (IBV_WC_SUCCESS, IBV_WC_BIND_MW), bind)

        result = self.access(peer, addr, rkey, ["write", "read", "atomic"])
        self.assertEqual([(wc["status"], wc["opcode"])
                          for wc in result["wcs"]],
                         [(IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE),
                          (IBV_WC_SUCCESS, IBV_WC_RDMA_READ),
                          (IBV_WC_SUCCESS, IBV_WC_FETCH_ADD)], result)
        self.assertEqual(result["read"], owner_bytes(
            WINDOW_OFFSET + READ_OFFSET, len(DATA)).hex())
        atomic_old = int.from_bytes(
            owner_bytes(WINDOW_OFFSET + ATOMIC_OFFSET, 8), "little")
        self.assertEqual(result["atomic_old"], atomic_old)
        self.tell(owner, "owner", "check")
        self.assertEqual(self.expect(owner, "owner", "MEM"), "%s %s" % (
            DATA.hex(), ((atomic_old + 1) % 2**64).to_bytes(
                8, "little").hex()))

        if invalidation == "remote":
            self.tell(owner, "owner", "await-inv")
            self.tell(peer, "peer", "inv %d" % rkey)
            sent = json.loads(self.expect(peer, "peer", "SENT"))
            self.assertEqual((sent["status"], sent["opcode"]),
                             (IBV_WC_SUCCESS, IBV_WC_SEND), sent)
            inv = json.loads(self.expect(owner, "owner", "INVALIDATED"))
            # rxe (Linux 6.12) hands user space the kernel's
            # IB_WC_WITH_INVALIDATE (1 << 2) for IBV_WC_WITH_INV (1 << 3).
            flag = IBV_WC_WITH_INV if owner.rdma_dev.startswith("vhca") \
                else IB_WC_WITH_INVALIDATE
            self.assertEqual((inv["status"], inv["opcode"],
                              inv["wc_flags"] & flag, inv["invalidated"]),
                             (IBV_WC_SUCCESS, IBV_WC_RECV, flag, rkey), inv)
        else:
            self.tell(owner, "owner", "invalidate")
            inv = json.loads(self.expect(owner, "owner", "INVALIDATED"))
            want = IBV_WC_BIND_MW if invalidation == "unbind" \
                else IBV_WC_LOCAL_INV
            self.assertEqual((inv["status"], inv["opcode"]),
                             (IBV_WC_SUCCESS, want), inv)

        result = self.access(peer, addr, rkey, [failing_op])
        self.assertEqual([wc["status"] for wc in result["wcs"]],
                         [IBV_WC_REM_ACCESS_ERR], result)
        for guest, role in ((peer, "peer"), (owner, "owner")):
            self.tell(guest, role, "exit")
            self.expect(guest, role, "DONE")

    def windows(self, owner, peer):
        with self.subTest("type 1, unbound"):
            self.scenario(owner, peer, 1, "unbind", "write")
        with self.subTest("type 2, LOCAL_INV"):
            self.scenario(owner, peer, 2, "local", "read")
        with self.subTest("type 2, SEND with Invalidate"):
            self.scenario(owner, peer, 2, "remote", "atomic")
