"""Read the InfiniBand packets of a fabric capture (link=ib) and check
their CRCs, independently of the device's C code.

On an InfiniBand port every datagram of the backend is one IB packet,
LRH to VCRC, and QEMU's filter-dump writes it as a pcap "frame".  The
checks follow IBTA Vol 1:

  7.8.1  ICRC: CRC-32 from the first byte of the LRH to the end of the
         pad, with the variant fields set to ones: the LRH's VL (the whole
         LRH when a GRH follows: a router rewrites it), the GRH's traffic
         class, flow label and hop limit, BTH byte 4; stored
         little-endian after the pad.
  7.8.2  VCRC: CRC-16, polynomial 0x100B (bit-reversed 0xD008), initial
         0xFFFF, complemented, over the LRH through the ICRC; stored
         little-endian, last.

tshark (Wireshark 4.0) decodes these packets with its infiniband
dissector, given the capture as a user link type: tshark_decode() does.
"""

import shutil
import struct
import subprocess
import tempfile
import zlib

from roce_capture import pcap_frames

LRH_LEN = 8
GRH_LEN = 40
LNH_LOCAL = 2
LNH_GLOBAL = 3
# Wireshark's first user link type (DLT_USER0): 147.
USER_DLT = 147
# Wireshark guesses which protocol an RC or UD payload carries (RPC over
# RDMA, SMB Direct, iSER, ...): the test programs' payloads are none of
# them, and a wrong guess reports the packet "Malformed": those
# dissectors are off.  IPoIB is recognised by its header (the
# "ethertype" heuristic), which stays.
GUESSING_PROTOCOLS = ("smc", "smb_direct", "rpcordma", "nvme-rdma", "lnet",
                       "iser", "infiniband.eoib", "infiniband_sdp", "fcoib")


def vcrc(data):
    crc = 0xffff
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xd008 if crc & 1 else crc >> 1
    return crc ^ 0xffff


def icrc(packet):
    """The ICRC of packet (LRH .. pad, no ICRC or VCRC)."""
    p = bytearray(packet)
    lnh = p[1] & 3
    if lnh == LNH_GLOBAL:
        p[0:LRH_LEN] = b"\xff" * LRH_LEN
        # IPVer stays; TClass and FlowLabel (bits 4..31), HopLmt.
        p[LRH_LEN] |= 0x0f
        p[LRH_LEN + 1:LRH_LEN + 4] = b"\xff\xff\xff"
        p[LRH_LEN + 7] = 0xff
        bth = LRH_LEN + GRH_LEN
    else:
        p[0] |= 0xf0                    # VL
        bth = LRH_LEN
    p[bth + 4] = 0xff
    return zlib.crc32(bytes(p)) & 0xffffffff


def check_packet(pkt):
    """None if pkt is a well-formed IB packet with good CRCs, else why not."""
    if len(pkt) < LRH_LEN + 12 + 4 + 2:
        return "runt of %d bytes" % len(pkt)
    lnh = pkt[1] & 3
    if lnh not in (LNH_LOCAL, LNH_GLOBAL):
        return "LNH %d is not IBA transport" % lnh
    words = struct.unpack_from("!H", pkt, 4)[0] & 0x7ff
    if words * 4 + 2 != len(pkt):
        return "PktLen %d words, datagram %d bytes" % (words, len(pkt))
    body, ic, vc = pkt[:-6], pkt[-6:-2], pkt[-2:]
    if struct.unpack("<H", vc)[0] != vcrc(pkt[:-2]):
        return "bad VCRC"
    if struct.unpack("<I", ic)[0] != icrc(body):
        return "bad ICRC"
    return None


def check_capture(path):
    """(packets checked, [problems]) of an IB fabric capture."""
    count, problems = 0, []
    for n, frame in enumerate(pcap_frames(path), 1):
        count += 1
        why = check_packet(frame)
        if why:
            problems.append("packet %d: %s" % (n, why))
    return count, problems


def tshark_decode(path):
    """tshark's one-line decode of every packet of an IB capture, through
    a copy whose pcap header names the user link type that carries the
    infiniband dissector.  Raises if tshark is missing."""
    tshark = shutil.which("tshark")
    if not tshark:
        raise FileNotFoundError("tshark is not installed "
                                "(scripts/setup-host.sh installs it)")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    endian = "<" if struct.unpack_from("<I", data)[0] in (
        0xa1b2c3d4, 0xa1b23c4d) else ">"
    struct.pack_into(endian + "I", data, 20, USER_DLT)
    with tempfile.NamedTemporaryFile(suffix=".pcap") as copy:
        copy.write(data)
        copy.flush()
        args = [tshark, "-r", copy.name, "-o",
                'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""']
        for name in GUESSING_PROTOCOLS:
            args += ["--disable-protocol", name]
        return subprocess.run(args, check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True).stdout
