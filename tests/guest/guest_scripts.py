"""Puts the pyverbs scripts of tests/guest (guest_*.py) into a guest.

Each such script runs inside the guest with python3 and imports
guest_verbs.py, so both go to the same folder (python3 finds a module next
to the script it runs)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
HELPER = "guest_verbs.py"


def put(guest, script, guest_dir="/tmp"):
    """Copy tests/guest/script and its helper into guest_dir of guest;
    return the script's path there."""
    for name in (HELPER, script):
        guest.put_file(os.path.join(guest_dir, name), os.path.join(HERE, name))
    return os.path.join(guest_dir, script)
