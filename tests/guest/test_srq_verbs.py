"""SRQ verbs on vhca0, in rdma-core's test framework.

rdma-core's own test_srq (run by test_pyverbs.py) passes traffic through
an SRQ, resizes an empty one and checks that the limit event reaches user
space.  pyverbs_srq.py checks the rest, in one guest with rdma-core
56.1's tests/ next to it: a resize up and down moves the WQEs posted and
not yet taken, in order; a ring too small for them, or a limit past the
size, is refused and changes nothing; the SRQ is full at its size, by the
device's count of the WQEs it took; too many SGEs, and posting to the
receive queue of a QP on an SRQ, are refused.
"""

import unittest

import rdma_core_tests

guest = rdma_core_tests.OneGuest("pyverbs_srq.py")
setUpModule, tearDownModule = guest.start, guest.stop


class SrqVerbs(unittest.TestCase):
    def test_srq_verbs(self):
        guest.run_all_cases(self)


if __name__ == "__main__":
    unittest.main()
