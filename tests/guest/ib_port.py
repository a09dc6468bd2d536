"""A guest's InfiniBand port (-device vhca,link=ib) as its sysfs shows it:
what the tests of the IB port (test_ib_link.py) and of a subnet
(test_ib_subnet.py) read of it."""

PORT_DIR = "/sys/class/infiniband/vhca0/ports/1"


def port_attr(guest, name):
    """A port attribute from sysfs (lid, sm_lid, state, gids/0, ...)."""
    return guest.run("cat %s/%s" % (PORT_DIR, name)).strip()


def lid(guest):
    return int(port_attr(guest, "lid"), 16)


def port_guid(guest):
    """The port GUID, as opensm's partitions.conf names ports (hex)."""
    return port_attr(guest, "gids/0").replace(":", "")[16:]


def pkey_index(guest, pkey):
    """The index of @pkey in the guest's P_Key table, or None."""
    out = guest.run("cd %s/pkeys && grep -H . * | sed 's/:/ /'" % PORT_DIR)
    for line in out.splitlines():
        index, value = line.split()
        if int(value, 16) == pkey:
            return int(index)
    return None
