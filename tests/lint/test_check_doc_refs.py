#!/usr/bin/python3
"""check_doc_refs.py must fail on what drifted: a function the docs cite
that the code renamed, a file that moved, a README limits paragraph that
no longer says what docs/limits.rst says.  Each case builds a small tree
in a temporary git checkout and runs the checker on it."""

import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "check_doc_refs.py")
SUMMARY = "vhca does ``RC``.\n"


class DocRefs(unittest.TestCase):
    def tree(self, code, doc, readme_summary=SUMMARY):
        root = tempfile.mkdtemp(prefix="doc-refs-")
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        files = {
            "hw/vhca/vhca-resp.c": code,
            "docs/developer-guide.rst": doc,
            "docs/limits.rst": "Limits\n======\n\nIn short\n========\n\n"
                               + SUMMARY + "\nMore.\n",
            "README.md": "# vhca\n\n## Limits today\n\n"
                         + readme_summary.replace("``", "`") + "\nSee.\n",
        }
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)),
                        exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        subprocess.run(["git", "init", "-q", root], check=True)
        return root

    def check(self, root):
        proc = subprocess.run([sys.executable, CHECKER, "--root", root],
                              stdout=subprocess.PIPE, text=True)
        return proc.returncode, proc.stdout

    def test_cited_function_exists(self):
        rc, out = self.check(self.tree(
            "void vhca_rq_take(void) {}\n",
            "``vhca_rq_take`` reads the WQE (``hw/vhca/vhca-resp.c``).\n"))
        self.assertEqual(rc, 0, out)

    def test_renamed_function(self):
        rc, out = self.check(self.tree(
            "void vhca_rq_take(void) {}\n",
            "``vhca_resp_load_rwqe`` reads the WQE.\n"))
        self.assertEqual(rc, 1, out)
        self.assertIn("vhca_resp_load_rwqe is not in the code", out)

    def test_prefix_pattern(self):
        rc, out = self.check(self.tree(
            "void vhca_err_wqe(void) {}\n",
            "the ``vhca_err_*`` events, not ``vhca_ub_*``.\n"))
        self.assertEqual(rc, 1, out)
        self.assertIn("no identifier starts with vhca_ub", out)
        self.assertNotIn("vhca_err", out)

    def test_moved_file(self):
        rc, out = self.check(self.tree(
            "", "see ``hw/vhca/vhca-sched.c`` and QEMU's "
            "``tests/qtest/fuzz/generic_fuzz.c``.\n"))
        self.assertEqual(rc, 1, out)
        self.assertIn("hw/vhca/vhca-sched.c does not exist", out)
        self.assertNotIn("generic_fuzz", out)

    def test_limits_paragraphs_differ(self):
        rc, out = self.check(self.tree("", "nothing\n",
                                       readme_summary="vhca does UD.\n"))
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL doc limits summary", out)


if __name__ == "__main__":
    unittest.main()
