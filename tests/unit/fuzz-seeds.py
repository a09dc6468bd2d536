#!/usr/bin/python3
"""Write the seed corpus of fuzz-vhca.c into tests/unit/fuzz-corpus/.

Each seed is a short program in the target's input format (see the
op_* functions of fuzz-vhca.c): well-formed traffic on each QP type,
frames of every kind built against the connected QPs, mutated WQEs and
admin commands.  regress-* inputs replay a fixed bug's scenario, which an
invariant of the target fails on if the bug comes back.  The fuzzers
start from these; crash reproducers are added next to them by hand, and
grown/ holds libFuzzer's merged corpus (docs/developer-guide.rst,
"Fuzzing").  Existing files other than seed-* and regress-* are kept.

    tests/unit/fuzz-seeds.py
"""

import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz-corpus")

OP_FRAME, OP_SEND, OP_RECV, OP_TRAFFIC, OP_ADMIN, OP_WIRE, OP_TIME, \
    OP_ETH, OP_MISC = 0, 2, 3, 4, 5, 6, 7, 8, 9
RC, UC, UD, SRQ = 0, 1, 2, 3     # SRQ: the UD QP on the node's SRQ
# op_recv_wqe on the SRQ: the commands its sel's high bits ask for.
SRQ_LIMIT, SRQ_RESIZE, SRQ_QUERY, SRQ_DESTROY, SRQ_RESIZE_LIMIT = \
    0x08, 0x10, 0x20, 0x40, 0x80
# Indexes into send_opcodes[] of fuzz-vhca.c.
WR_WRITE, WR_WRITE_IMM, WR_SEND, WR_SEND_IMM, WR_READ, WR_CAS, WR_FAA, \
    WR_SEND_INV, WR_FLUSH, WR_ATOMIC_WRITE = range(10)


def u8(v):
    return struct.pack("<B", v & 0xff)


def u16(v):
    return struct.pack("<H", v & 0xffff)


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def u64(v):
    return struct.pack("<Q", v & 0xffffffffffffffff)


def sel(node, q, extra=0):
    return node | q << 1 | extra


def traffic(node, q, wr, length, page=0, repost=True):
    return u8(OP_TRAFFIC) + u8(sel(node, q, 0 if repost else 0x80)) + \
        u8(wr) + u16(length) + u16(page)


def time(exp, extra=0):
    return u8(OP_TIME) + u8(exp) + u16(extra)


def key(mode=0, xor=0):
    """Key [mode] of the node's list (0 all access, 1 local only, 2 other
    PD, 3 level 1 page list, 4 level 2), or from 0xf0 key 0 ^ xor."""
    return u8(mode) + (u32(xor) if mode >= 0xf0 else b"")


def va(off, region=0):
    """Offset @off in the buffer (0), the level 1 (0x60) or level 2 (0xa0)
    page list MR, or (0xe0) the address off itself."""
    return u8(region) + (u64(off) if region >= 0xe0 else u32(off))


def frame(node, q, ib_op, psn_delta=0, flags=0, post=0, off=0, dma_len=0,
          key_mode=0, aeth=0, msn=0, plen=0, post_fields=b"", region=0,
          net=0, net_fields=b""):
    """A frame from node to the other one, on QP type q, IB opcode ib_op
    (low 5 bits), PSN near the receiver's expected one."""
    return (u8(OP_FRAME) + u8(sel(node, q)) + u8(ib_op) + u8(flags) +
            u8(post) + u8(net) + net_fields + u16(0x1234) +
            u8(0) + u8(psn_delta) +                 # PSN
            va(off, region) + key(key_mode) + u16(dma_len) +  # RETH
            va(off & ~7, region) + key(key_mode) + u64(5) + u64(0) +  # Atomic
            u8(aeth) + u32(msn) +                   # AETH
            u64(0) + u32(0x01020304) + key(0) +     # orig, imm, IETH
            u16(plen) + post_fields)


def send_wqe(node, q, wr, nsge, sges, flags=1, remote_off=0):
    b = u8(OP_SEND) + u8(sel(node, q)) + u8(wr) + u8(nsge) + u8(flags)
    for sge in sges:
        addr_off, length, key_mode = sge[:3]
        region = sge[3] if len(sge) > 3 else 0
        b += u8(0) + va(addr_off, region) + u16(length) + key(key_mode)
    b += u32(0)                                     # imm
    if q in (UD, SRQ):
        pass
    else:
        b += va(remote_off) + key(0) + u64(0) + u64(0)
    return b + u8(0)                                # doorbell: good PI


def srq_recv(node, extra=0, fields=b""):
    """A receive WQE of one SGE (64 bytes at offset 0, key 0) on node's
    SRQ, its doorbell at the good index, then the SRQ commands @extra
    asks for, with @fields (limit, log size)."""
    return (u8(OP_RECV) + u8(sel(node, SRQ, extra)) + u8(1) + u8(0) +
            va(0x30000) + u16(64) + key(0) + u8(0) + fields)


def admin(node, kind, body):
    return u8(OP_ADMIN) + u8(node | kind << 1) + body


SEEDS = {
    "rc-send": traffic(0, RC, WR_SEND, 100) + time(20),
    "rc-write-multi": traffic(0, RC, WR_WRITE, 5000, 2) + time(20),
    "rc-read": traffic(1, RC, WR_READ, 3000, 4) + time(20),
    "rc-atomics": traffic(0, RC, WR_CAS, 8) + traffic(0, RC, WR_FAA, 8),
    "rc-send-imm-inv": traffic(0, RC, WR_SEND_IMM, 10) +
    traffic(1, RC, WR_SEND_INV, 10) + traffic(0, RC, WR_WRITE_IMM, 2048),
    # Use up the peer's 8 receive WQEs: RNR NAK, RNR timer, then a receive
    # WQE lets the SEND through.
    "rc-rnr": traffic(0, RC, WR_SEND, 16, repost=False) * 9 + time(16) +
    traffic(0, RC, WR_SEND, 16) + time(24),
    "uc-write": traffic(0, UC, WR_WRITE, 3000) + traffic(1, UC, WR_SEND, 9),
    "ud-send": traffic(0, UD, WR_SEND, 512) + traffic(1, UD, WR_SEND, 0),
    # The SRQ: datagrams take its WQEs; empty it (limit event, drops),
    # post again, arm the limit, resize with WQEs pending, query.
    "srq-ud": traffic(0, SRQ, WR_SEND, 300) + traffic(1, SRQ, WR_SEND, 20) +
    traffic(0, SRQ, WR_SEND, 16, repost=False) * 9 +
    srq_recv(1, SRQ_LIMIT | SRQ_QUERY, u8(2)) + traffic(0, SRQ, WR_SEND, 8) +
    srq_recv(1, SRQ_RESIZE | SRQ_QUERY, u8(2)) +
    traffic(0, SRQ, WR_SEND, 8) +
    srq_recv(1, SRQ_RESIZE | SRQ_RESIZE_LIMIT | SRQ_DESTROY, u8(0)),
    "srq-frames": frame(0, SRQ, 0x04, plen=100) +
    frame(0, SRQ, 0x05, plen=10, flags=0x20) +
    srq_recv(1, SRQ_RESIZE, u8(0)) + frame(0, SRQ, 0x04, plen=40),
    # Lose, duplicate and damage frames of a multi-packet message.
    "wire-drop": u8(OP_WIRE) + u8(1) + u8(1) + u16(0) + u8(0) +
    traffic(0, RC, WR_WRITE, 4000) + time(30) + time(30),
    "wire-dup": u8(OP_WIRE) + u8(2) + u8(4) + u16(0) + u8(0) +
    traffic(0, RC, WR_READ, 4000) + time(30),
    "wire-mutate": u8(OP_WIRE) + u8(3) + u8(2) + u16(13) + u8(0x41) +
    traffic(1, RC, WR_SEND, 3000) + time(30),
    # Requests straight to the responder.
    "frame-send-only": frame(0, RC, 0x04, plen=64) + frame(0, RC, 0x04, 1),
    "frame-send-first-last": frame(0, RC, 0x00, plen=1024) +
    frame(0, RC, 0x01, 1, plen=1024) + frame(0, RC, 0x02, 2, plen=10),
    "frame-write-only": frame(0, RC, 0x0a, off=0x100, dma_len=200,
                              plen=200),
    "frame-write-paged": frame(0, RC, 0x0a, off=0xf80, dma_len=300,
                               plen=300, key_mode=3, region=0x60) +
    frame(0, RC, 0x0c, 1, off=0x1000, dma_len=3000, key_mode=4,
          region=0xa0),
    "frame-write-first": frame(1, RC, 0x06, off=0x2000, dma_len=3000,
                               plen=1024) +
    frame(1, RC, 0x08, 1, off=0, plen=1024),
    "frame-write-badkey": frame(0, RC, 0x0a, dma_len=16, plen=16,
                                key_mode=1) +
    frame(0, RC, 0x0a, dma_len=16, plen=16, key_mode=2),
    "frame-read-req": frame(0, RC, 0x0c, off=0x3000, dma_len=2500, flags=2),
    "frame-cas": frame(0, RC, 0x13, off=0x40) + frame(0, RC, 0x14, 1,
                                                      off=0x48),
    # IBTA 1.5: FLUSH (FETH zero: no placement type) and ATOMIC WRITE.
    "frame-flush": frame(0, RC, 0x1c, off=0x100, dma_len=64) +
    frame(0, RC, 0x1d, 1, off=0x108, dma_len=8, plen=8),
    "traffic-placement": traffic(0, RC, WR_WRITE, 100) +
    traffic(0, RC, WR_FLUSH, 100) + traffic(1, RC, WR_ATOMIC_WRITE, 0) +
    time(30),
    "frame-psn-ahead": frame(0, RC, 0x04, 50, plen=4) +
    frame(0, RC, 0x04, 0x80, plen=4),
    "frame-ipv6-vlan": frame(0, RC, 0x04, plen=30, net=1) +
    frame(0, RC, 0x04, 1, plen=30, net=3, net_fields=u16(5)) +
    frame(0, UD, 0x04, plen=30, net=5, net_fields=u32(0x12345)),
    "wire-reorder": u8(OP_WIRE) + u8(4) + u8(4) + u16(0) + u8(0) +
    traffic(0, RC, WR_WRITE, 5000) + time(30),
    "mcast": admin(1, 6, u8(0) + u8(2) + u8(1) + u32(0)) +
    admin(1, 6, u8(0) + u8(0) + u8(1) + u32(0)) +
    frame(0, UD, 0x04, plen=40, net=8, net_fields=u8(1)) +
    frame(0, UD, 0x05, plen=40, net=8, net_fields=u8(1)) +
    admin(1, 6, u8(1) + u8(2) + u8(1) + u32(0)) +
    frame(0, UD, 0x04, plen=40, net=8, net_fields=u8(1)),
    "frame-uc": frame(0, UC, 0x0a, off=0x10, dma_len=32, plen=32) +
    frame(0, UC, 0x04, plen=8),
    "frame-ud": frame(0, UD, 0x04, plen=100) +
    frame(0, UD, 0x04, plen=100, flags=0x80),
    # Responses nobody asked for, and ACKs after real traffic.
    "frame-ack-unasked": frame(1, RC, 0x11, aeth=0) +
    frame(1, RC, 0x10, plen=16) + frame(1, RC, 0x12),
    "frame-ack-after-send": u8(OP_WIRE) + u8(1) + u8(4) + u16(0) + u8(0) +
    traffic(0, RC, WR_WRITE, 3000) + frame(1, RC, 0x11, 1) +
    frame(1, RC, 0x11, 2, aeth=0x60) + time(28),
    "frame-read-resp": u8(OP_WIRE) + u8(1) + u8(4) + u16(0) + u8(0) +
    traffic(0, RC, WR_READ, 2500) + frame(1, RC, 0x0d, 0, plen=1024) +
    frame(1, RC, 0x0e, 1, plen=1024) + frame(1, RC, 0x0f, 2, plen=452),
    "frame-rnr-nak": u8(OP_WIRE) + u8(1) + u8(1) + u16(0) + u8(0) +
    traffic(0, RC, WR_SEND, 10) + frame(1, RC, 0x11, 0, aeth=0x21) +
    time(16) + time(24),
    "frame-post-mutate": frame(0, RC, 0x04, plen=20, post=0x07,
                               post_fields=u8(0x30) + u16(5) + u8(0x10) +
                               u16(7)),
    "frame-bad-icrc": frame(0, RC, 0x04, plen=20, post=0x12,
                            post_fields=u16(3) + u8(4)),
    # Work requests: SG lists, keys, lengths.
    "wqe-sg": send_wqe(0, RC, WR_SEND, 3, [(0, 100, 0), (0x1000, 200, 0),
                                          (0x2000, 300, 1)]) + time(20),
    "wqe-badkey": send_wqe(0, RC, WR_WRITE, 1, [(0, 100, 2)]) +
    send_wqe(1, UC, WR_SEND, 1, [(0, 100, 3)]),
    "wqe-recv": u8(OP_RECV) + u8(sel(1, RC)) + u8(2) + u8(0) + va(0) +
    u16(64) + key(0) + u8(1) + va(4) + u32(0xffff) + key(1) +
    u8(0) + traffic(0, RC, WR_SEND, 50),
    "wqe-paged": send_wqe(0, RC, WR_WRITE, 2, [(0, 100, 0), (0x40, 5000, 3, 0x60)],
                          remote_off=0) + time(20),
    # Admin commands on live QPs and MRs.
    "admin-modify-err": admin(0, 0, u8(0) + u8(0) + u8(0) + u8(0) +
                              u8(6) + u32(1) + u8(3) + u32(0) + u32(0)) +
    traffic(1, RC, WR_SEND, 10) + time(20),
    "admin-destroy-mr": traffic(0, RC, WR_WRITE, 3000) +
    admin(1, 3, u8(0) + u32(0)) + admin(1, 2, u8(0) + u8(0x1f) + u16(0) +
                                        u32(0x40000) + u32(0)),
    "admin-destroy-qp": admin(0, 3, u8(2) + u32(0)) +
    traffic(1, RC, WR_SEND, 10) + time(30),
    "admin-raw": admin(0, 4, u8(0x18) + u8(16) + bytes(range(16))) +
    admin(1, 5, u8(0x16) + bytes(32) + u32(7)),
    "eth": u8(OP_ETH) + u8(1 << 1) + u16(2048) + u8(OP_ETH) + u8(1 << 1) +
    u16(2048) + u8(OP_ETH) + u8(1 | 1 << 1) + u16(2048) +
    u8(OP_ETH) + u8(0) + u8(50) + u16(0) + u16(0x0800) + bytes(50) +
    u8(OP_ETH) + u8(1) + u8(20) + u16(0) + u16(0x86dd) + bytes(20) +
    u8(OP_ETH) + u8(3 << 1) + u16(0x200) + u8(2) +
    u8(OP_ETH) + u8(2 << 1) + u16(0x144) + u32(1),
    # Arm the receive CQs, then traffic that completes on them; overflow
    # the small UD CQ.
    "cq-arm": u8(OP_MISC) + u8(2) + u8(1 | 1 << 1) + u8(OP_MISC) + u8(2) +
    u8(1 | 3 << 1 | 0x40) + traffic(0, RC, WR_SEND, 10) +
    traffic(0, UD, WR_SEND, 10),
    "cq-overflow": traffic(0, UD, WR_SEND, 1) * 12 + time(20),
    # Issue 11, bug 1: a WRITE's first packet through key 0, the MR
    # destroyed and a read-only one made with the same index and tag,
    # then the next packet.  The device must NAK it, not write: the
    # target's shadow of the MRs fails on any write there.
    "regress-write-mr-replaced":
    frame(0, RC, 0x06, off=0x38000, dma_len=3000, plen=1024) +
    admin(1, 3, u8(0) + u32(0)) +
    admin(1, 2, u8(0) + u8(4) + u16(0x3800) + u32(0x8000) + u32(0x5a)) +
    frame(0, RC, 0x07, plen=1024),
    # A device reset in the middle of a multi-packet WRITE and a READ.
    "reset-mid-traffic": u8(OP_WIRE) + u8(4) + u8(2) + u16(0) + u8(0) +
    traffic(0, RC, WR_READ, 3000) + traffic(1, RC, WR_WRITE, 3000) +
    u8(OP_ETH) + u8(1 | 4 << 1) + time(30) + traffic(0, RC, WR_SEND, 8) +
    time(30),
    "doorbells": u8(OP_MISC) + u8(1) + u8(0) + u16(0x1010) + u64(3 << 32) +
    u8(OP_MISC) + u8(0),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        if not name.startswith("regress-"):
            name = "seed-" + name
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
