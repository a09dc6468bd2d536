"""Read the RoCEv2 frames of a fabric capture and check their ICRC.

tshark (Wireshark 4.0) dissects the InfiniBand headers but does not verify
the Invariant CRC, so the guest tests do it here, independently of the
device's C code: IBTA Vol 1 7.8.1 and annex A17.3.3, CRC-32 over eight
bytes of ones standing for the LRH, then the IP header, UDP header, BTH and
everything up to the ICRC, with the fields a router may change set to
ones (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label, hop limit;
the UDP checksum; BTH byte 4).  The ICRC goes little-endian after the pad.
"""

import struct
import zlib

from host_common import ROCE_UDP_PORT


def pcap_frames(path):
    """The frames of a classic pcap file (QEMU's filter-dump writes one)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    endian = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, off + 8)[0]
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


def roce_packet(frame):
    """(ip header, udp+ib bytes) of a RoCEv2 frame, or None."""
    off = 12
    ethertype = struct.unpack_from("!H", frame, off)[0]
    off += 2
    if ethertype == 0x8100:
        ethertype = struct.unpack_from("!H", frame, off + 2)[0]
        off += 4
    if ethertype == 0x0800 and len(frame) >= off + 20:
        ihl = (frame[off] & 0x0f) * 4
        total = struct.unpack_from("!H", frame, off + 2)[0]
        if frame[off + 9] != 17:
            return None
        ip, rest = frame[off:off + ihl], frame[off + ihl:off + total]
    elif ethertype == 0x86dd and len(frame) >= off + 40:
        plen = struct.unpack_from("!H", frame, off + 4)[0]
        if frame[off + 6] != 17:
            return None
        ip, rest = frame[off:off + 40], frame[off + 40:off + 40 + plen]
    else:
        return None
    if len(rest) < 8 + 12 + 4 or \
            struct.unpack_from("!H", rest, 2)[0] != ROCE_UDP_PORT:
        return None
    return ip, rest


def icrc_ok(ip, rest):
    ip = bytearray(ip)
    if ip[0] >> 4 == 4:
        ip[1] = 0xff                            # TOS
        ip[8] = 0xff                            # TTL
        ip[10:12] = b"\xff\xff"                 # header checksum
    else:
        ip[0] |= 0x0f                           # traffic class, high half
        ip[1:4] = b"\xff\xff\xff"               # TC low half, flow label
        ip[7] = 0xff                            # hop limit
    rest = bytearray(rest)
    rest[6:8] = b"\xff\xff"                     # UDP checksum
    rest[8 + 4] = 0xff                          # BTH F, B, reserved
    covered = b"\xff" * 8 + bytes(ip) + bytes(rest[:-4])
    return zlib.crc32(covered) == struct.unpack("<I", bytes(rest[-4:]))[0]


def check_capture(path):
    """(RoCEv2 frames, frames whose ICRC is wrong) in the capture."""
    total = bad = 0
    for frame in pcap_frames(path):
        pkt = roce_packet(frame)
        if pkt is None:
            continue
        total += 1
        if not icrc_ok(*pkt):
            bad += 1
    return total, bad
