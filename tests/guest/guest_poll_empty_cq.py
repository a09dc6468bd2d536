#!/usr/bin/python3
"""Polls an empty CQ of an RDMA device until a file appears.

Runs inside a guest (tests/guest/test_two_guests.py copies it there), as

    guest_poll_empty_cq.py DEVICE STOP_FILE

It prints "polling" before its first poll and, once STOP_FILE exists,
"polls N" with the number of polls made; every one must find the CQ
empty.  The test watches the vCPU thread from the host meanwhile.
"""

import os
import sys

from pyverbs.cq import CQ
from pyverbs.device import Context


def main():
    device, stop_file = sys.argv[1:3]
    cq = CQ(Context(name=device), 16)
    print("polling", flush=True)
    polls = 0
    while not os.path.exists(stop_file):
        for _ in range(100):
            npolled, _wcs = cq.poll(1)
            assert npolled == 0, npolled
        polls += 100
    print("polls", polls, flush=True)


if __name__ == "__main__":
    main()
