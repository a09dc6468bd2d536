"""RoCE congestion control's knobs and counters, through the kernel's
interfaces, between two vhca guests (issue 29).

The guest driver gives each vhca a devlink instance whose runtime
parameters are the device's SET_CC configuration (drivers/vhca/vhca_cc.c):
the switches roce_ecn_tx, roce_np_enable and roce_rp_enable, and DCQCN's
parameters with mlx5's names and units.  `devlink dev param` reads and
sets them; the device refuses a value out of its range and nothing
changes.  The congestion counters appear in `rdma statistic` and
`ethtool -S` under mlx5's names.  With roce_ecn_tx on, the RoCE frames a
guest sends carry ECT(0) in their IP header (RFC 3168), seen in a capture
of the fabric that QEMU's filter-dump takes for the test.

The fabric is the plain two-vhca one, shared with the other modules that
ask for it (vhca_fabric.ModuleFabric): every test puts the parameters
back as it found them.
"""

import os
import re
import unittest

from host_common import vhca_fabric
import roce_capture

fabric = vhca_fabric.ModuleFabric("congestion")
setUpModule, tearDownModule = fabric.start, fabric.stop

SWITCHES = ("roce_ecn_tx", "roce_np_enable", "roce_rp_enable")
# mlx5's cc_params names (include/vhca_hw.h, vhca_cc_param_name()).
PARAMS = ("rp_clamp_tgt_rate", "rp_clamp_tgt_rate_ati", "rp_time_reset",
          "rp_byte_reset", "rp_threshold", "rp_ai_rate", "rp_max_rate",
          "rp_hai_rate", "rp_min_dec_fac", "rp_min_rate",
          "rp_rate_to_set_on_first_cnp", "rp_dce_tcp_g", "rp_dce_tcp_rtt",
          "rp_rate_reduce_monitor_period", "rp_initial_alpha_value",
          "rp_gd", "np_min_time_between_cnps", "np_cnp_dscp",
          "np_cnp_prio_mode", "np_cnp_prio")
COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled",
            "rp_cnp_ignored", "rp_rate_decreases")
ECN_NOT_ECT, ECN_ECT0 = 0, 2


def param(guest, name):
    """A runtime parameter's value as devlink prints it."""
    out = guest.run("devlink dev param show %s name %s"
                    % (guest.devlink_handle(), name))
    m = re.search(r"cmode runtime value (\S+)", out)
    if not m:
        raise AssertionError("no runtime value for %s:\n%s" % (name, out))
    return m.group(1)


def set_param(guest, name, value):
    """(exit status, output) of setting a runtime parameter."""
    return guest.exec("devlink dev param set %s name %s value %s "
                      "cmode runtime 2>&1"
                      % (guest.devlink_handle(), name, value))


class Knobs(unittest.TestCase):
    def test_every_parameter_is_a_runtime_devlink_parameter(self):
        out = fabric[1].run("devlink dev param show %s"
                            % fabric[1].devlink_handle())
        for name in SWITCHES + PARAMS:
            self.assertRegex(out, r"(?m)^\s*name %s type driver-specific$"
                             % name)
        for name in SWITCHES:
            # Off after a reset: nothing changes for existing users.
            self.assertEqual(param(fabric[1], name), "false")

    def test_set_then_refused_value_changes_nothing(self):
        guest = fabric[1]
        before = param(guest, "rp_min_dec_fac")
        try:
            status, out = set_param(guest, "rp_min_dec_fac", 37)
            self.assertEqual(status, 0, out)
            self.assertEqual(param(guest, "rp_min_dec_fac"), "37")
            # A percentage of 101 is out of range: the device says no.
            status, out = set_param(guest, "rp_min_dec_fac", 101)
            self.assertNotEqual(status, 0)
            self.assertIn("refused", out)
            self.assertEqual(param(guest, "rp_min_dec_fac"), "37")
        finally:
            set_param(guest, "rp_min_dec_fac", before)
        self.assertEqual(param(guest, "rp_min_dec_fac"), before)


class Counters(unittest.TestCase):
    def test_rdma_statistic_and_ethtool_show_them(self):
        guest = fabric[1]
        stats = guest.run("rdma statistic show link vhca0/1")
        ethtool = guest.run("ethtool -S $(ls /sys/class/infiniband/vhca0/"
                            "device/net)")
        for name in COUNTERS:
            self.assertRegex(stats, r"\b%s \d+" % name)
            self.assertRegex(ethtool, r"(?m)^\s+%s: \d+$" % name)


class EcnCapableTransport(unittest.TestCase):
    """roce_ecn_tx on in guest 1 only: its RoCE frames are ECT(0), guest
    2's stay Not-ECT, and the traffic class (DSCP) is the program's."""

    def capture(self, path):
        guest = fabric[1]
        if os.path.exists(path):
            os.unlink(path)
        guest.qmp("object-add", **{"qom-type": "filter-dump", "id": "cc",
                                   "netdev": "fabric", "file": path})
        return guest

    def test_ect0_on_the_wire_only_from_the_sender_that_asked(self):
        g1, g2 = fabric[1], fabric[2]
        path = os.path.join(g1.dir, "ecn.pcap")
        status, out = set_param(g1, "roce_ecn_tx", "true")
        self.assertEqual(status, 0, out)
        try:
            self.capture(path)
            try:
                # Traffic class 32: DSCP 8, ECN bits 0 as given.
                cmd = "ib_send_bw -d vhca0 -x %d --tclass=32 -n 20 -s 1024"
                _, cli, srv = vhca_fabric.client_server(
                    g2, g1, cmd % g2.ipv4_gid_index(),
                    (cmd % g1.ipv4_gid_index()) + " " + g2.ipv4, 18515)
            finally:
                g1.qmp("object-del", id="cc")
        finally:
            set_param(g1, "roce_ecn_tx", "false")
        self.assertRegex(cli, r"(?m)^\s*1024\s+20\s")
        seen = {}
        for frame in roce_capture.pcap_frames(path):
            pkt = roce_capture.roce_packet(frame)
            if pkt is None or pkt[0][0] >> 4 != 4:
                continue
            ip = pkt[0]
            src = ".".join(str(b) for b in ip[12:16])
            seen.setdefault(src, set()).add((ip[1] >> 2, ip[1] & 3))
        self.assertEqual(seen.get(g1.ipv4), {(8, ECN_ECT0)}, seen)
        self.assertEqual(seen.get(g2.ipv4), {(8, ECN_NOT_ECT)}, seen)
        self.assertEqual(param(g1, "roce_ecn_tx"), "false")


if __name__ == "__main__":
    unittest.main()
