"""fabric_relay.py's fault patterns, on the host (no guests): burst loss,
duplication storms, ACK sparing under bursts, and calm (faults that stop
so that a test's teardown runs on a clean wire)."""

import struct
import unittest

from host_common import vhca_fabric
import fabric_relay

RC_SEND_ONLY = 0x04                # IBTA 9.2.1
RC_ACKNOWLEDGE = 0x11


def roce_frame(opcode, psn, dest_qp=0x11):
    """An Ethernet/IPv4/UDP(4791) frame with a BTH; checksums not needed."""
    bth = struct.pack("!BBHII", opcode, 0, 0xffff, dest_qp, psn)
    udp = struct.pack("!HHHH", 49152, fabric_relay.ROCE_V2_UDP_PORT,
                      8 + len(bth), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(bth), 0,
                     0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    eth = bytes(6) + bytes(6) + struct.pack("!H", 0x0800)
    return eth + ip + udp + bth


class RelayPatterns(unittest.TestCase):
    def setUp(self):
        ports = vhca_fabric.free_udp_ports(4)
        self.relay = fabric_relay.Relay(ports, 0.0, 0.0, 0.0, 1, True)
        self.sent = []
        self.d = list(self.relay.directions.values())[0]
        self.d.send = self.sent.append

    def tearDown(self):
        self.relay.sock_1.close()
        self.relay.sock_2.close()

    def ctl(self, command):
        reply = fabric_relay.json.loads(self.relay.control(command.encode()))
        self.assertNotIn("error", reply)
        return reply

    def push(self, n, opcode=RC_SEND_ONLY):
        frames = [roce_frame(opcode, psn) for psn in range(n)]
        for f in frames:
            self.relay.relay(self.d, f)
        return frames

    def test_burst(self):
        self.ctl("set burst=3/10")
        frames = self.push(30)
        kept = [f for i, f in enumerate(frames) if i % 10 >= 3]
        self.assertEqual(self.sent, kept)
        self.assertEqual(self.d.counters["burst_dropped"], 9)
        self.assertEqual(self.d.counters["dropped"], 9)

    def test_burst_spares_acks(self):
        self.ctl("set burst=5/5")
        self.ctl("spare-acks 1to2")
        self.push(4, RC_ACKNOWLEDGE)
        self.push(4)
        self.assertEqual(len(self.sent), 4)
        self.assertEqual(self.d.counters["acks_spared"], 4)

    def test_storm(self):
        self.ctl("set dup=1 storm=4")
        frames = self.push(3)
        self.assertEqual(self.sent, [f for f in frames for _ in range(5)])
        self.assertEqual(self.d.counters["duplicated"], 12)

    def test_calm_after(self):
        self.ctl("set drop=1")
        self.ctl("calm-after 4")
        frames = self.push(10)
        self.assertEqual(self.sent, frames[4:])
        self.assertEqual(self.d.counters["calm"], 6)
        self.assertEqual(self.ctl("stats")["calm_in"], 0)
        self.ctl("calm off")
        self.push(2)
        self.assertEqual(len(self.sent), 6)

    def test_calm_releases_held_frame(self):
        self.ctl("set reorder=1")
        frames = self.push(1)
        self.assertEqual(self.sent, [])
        self.ctl("calm")
        self.assertEqual(self.sent, frames)

    def test_spare_gsi(self):
        self.ctl("set drop=1 burst=2/2")
        self.ctl("spare-gsi on")
        gsi = roce_frame(RC_SEND_ONLY, 0, fabric_relay.GSI_QPN)
        self.relay.relay(self.d, gsi)
        self.push(2)
        self.assertEqual(self.sent, [gsi])

    def test_bad_commands(self):
        for bad in ("set burst=4/3", "set burst=1/0", "set storm=0",
                    "calm-after x", "set burst=a/b"):
            reply = fabric_relay.json.loads(self.relay.control(bad.encode()))
            self.assertIn("error", reply, bad)


if __name__ == "__main__":
    unittest.main()
