#!/usr/bin/python3
"""A learning Ethernet switch over UDP, for more than two vhca guests.

Each guest's QEMU uses -netdev dgram with remote = this hub's port.  Every
datagram is one Ethernet frame.  Frames to a learned unicast MAC go to that
port; broadcast, multicast and unknown destinations go to every other port.

    fabric_hub.py HUB_PORT PEER_PORT...     (all on 127.0.0.1)
"""

import socket
import sys


def main():
    hub_port = int(sys.argv[1])
    peers = [("127.0.0.1", int(p)) for p in sys.argv[2:]]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", hub_port))
    where = {}  # MAC -> peer address
    while True:
        frame, src = sock.recvfrom(65536)
        if len(frame) < 14 or src not in peers:
            continue
        where[frame[6:12]] = src
        dst = frame[0:6]
        out = where.get(dst) if not dst[0] & 1 else None
        for peer in ([out] if out else peers):
            if peer != src:
                sock.sendto(frame, peer)


if __name__ == "__main__":
    main()
