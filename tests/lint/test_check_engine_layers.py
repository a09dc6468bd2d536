#!/usr/bin/python3
"""check_engine_layers.py must fail on what breaks the layering: an engine
file that includes a QEMU header, a circle of calls through more than six
engine files, a receive-path file that calls back up.  Each case builds a
small engine tree (the receive path's files, calling top-down) in a
temporary directory, breaks it one way and runs the checker on it."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "check_engine_layers.py")
sys.path.insert(0, os.path.dirname(CHECKER))
import check_engine_layers  # noqa: E402

HEAD = '#include <stdint.h>\n#include "vhca-internal.h"\n\n'


def function(name, calls=()):
    body = "".join("    %s();\n" % c for c in calls)
    return "void %s(void)\n{\n%s}\n\n" % (name, body)


class EngineLayers(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp(prefix="engine-layers-")
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        engine = os.path.join(root, "hw", "vhca", "engine")
        os.makedirs(engine)
        with open(os.path.join(engine, "vhca-internal.h"), "w") as f:
            f.write("#include <stdbool.h>\n")
        for name, text in files.items():
            with open(os.path.join(engine, name), "w") as f:
                f.write(text)
        return root

    def receive_path(self):
        """The receive path's files, each calling the next one down."""
        path = check_engine_layers.RECEIVE_PATH
        files = {}
        for i, name in enumerate(path):
            fn = "vhca_" + re.sub(r"\W", "_", name[5:-2])
            below = (["vhca_" + re.sub(r"\W", "_", path[i + 1][5:-2])]
                     if i + 1 < len(path) else [])
            files[name] = HEAD + function(fn, below)
        return files

    def check(self, root):
        proc = subprocess.run([sys.executable, CHECKER, "--results",
                               "--root", root],
                              stdout=subprocess.PIPE, text=True)
        return proc.returncode, proc.stdout

    def test_clean_tree_passes(self):
        code, out = self.check(self.tree(self.receive_path()))
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("\nok ") + out.startswith("ok "), 3, out)

    def test_qemu_header_fails(self):
        files = self.receive_path()
        files["vhca-net.c"] = '#include "qemu/osdep.h"\n' + files["vhca-net.c"]
        code, out = self.check(self.tree(files))
        self.assertEqual(code, 1)
        self.assertIn("FAIL layers engine-includes", out)
        self.assertIn("vhca-net.c includes \"qemu/osdep.h\"", out)

    def test_circle_of_seven_fails(self):
        files = self.receive_path()
        ring = ["vhca-a%d.c" % i for i in range(7)]
        for i, name in enumerate(ring):
            files[name] = HEAD + function("vhca_a%d" % i,
                                          ["vhca_a%d" % ((i + 1) % 7)])
        code, out = self.check(self.tree(files))
        self.assertEqual(code, 1)
        self.assertIn("FAIL layers engine-circles", out)
        self.assertIn("7 engine files call each other in a circle", out)

    def test_circle_of_six_passes(self):
        files = self.receive_path()
        ring = ["vhca-a%d.c" % i for i in range(6)]
        for i, name in enumerate(ring):
            files[name] = HEAD + function("vhca_a%d" % i,
                                          ["vhca_a%d" % ((i + 1) % 6)])
        code, out = self.check(self.tree(files))
        self.assertEqual(code, 0, out)

    def test_call_back_up_fails(self):
        files = self.receive_path()
        files["vhca-recv.c"] += function("vhca_recv_peek", ["vhca_net"])
        code, out = self.check(self.tree(files))
        self.assertEqual(code, 1)
        self.assertIn("FAIL layers receive-order", out)
        self.assertIn("vhca-recv.c calls back up into vhca-net.c "
                      "(vhca_net)", out)


if __name__ == "__main__":
    unittest.main()
