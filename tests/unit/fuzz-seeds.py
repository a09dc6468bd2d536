#!/usr/bin/python3
"""Write the seed corpora of the engine's fuzz targets: fuzz-vhca.c's
into tests/unit/fuzz-corpus/, fuzz-vhca-ib.c's into
tests/unit/fuzz-corpus-ib/.

Each seed is a short program in its target's input format (see the op_*
functions of the target): for the Ethernet port, well-formed traffic on
each QP type, frames of every kind built against the connected QPs,
mutated WQEs and admin commands; for the InfiniBand port, one or a few
of each operation: packets the link takes and those it drops, MADs to
each agent, MODIFY_PORT, the cable, the SM, traffic on each QP.
regress-* inputs replay a fixed bug's scenario, which an invariant of
the target fails on if the bug comes back.  The fuzzers start from
these; crash reproducers are added next to them by hand, and grown/
holds libFuzzer's merged corpus (docs/developer-guide.rst, "Fuzzing").
Existing files other than seed-* and regress-* are kept.

    tests/unit/fuzz-seeds.py
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fuzz-corpus")
OUT_IB = os.path.join(HERE, "fuzz-corpus-ib")

OP_FRAME, OP_SEND, OP_RECV, OP_TRAFFIC, OP_ADMIN, OP_WIRE, OP_TIME, \
    OP_ETH, OP_MISC, OP_XRC, OP_MW, OP_LONG = 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, \
    11, 12
RC, UC, UD, SRQ = 0, 1, 2, 3     # SRQ: the UD QP on the node's SRQ
# op_recv_wqe on the SRQ: the commands its sel's high bits ask for.
SRQ_LIMIT, SRQ_RESIZE, SRQ_QUERY, SRQ_DESTROY, SRQ_RESIZE_LIMIT = \
    0x08, 0x10, 0x20, 0x40, 0x80
# Indexes into send_opcodes[] of fuzz-vhca.c.
WR_WRITE, WR_WRITE_IMM, WR_SEND, WR_SEND_IMM, WR_READ, WR_CAS, WR_FAA, \
    WR_SEND_INV, WR_FLUSH, WR_ATOMIC_WRITE, WR_LOCAL_INV, WR_REG_MR, \
    WR_BIND_MW = range(13)
# The XRC SRQs of the target a request names (in_srqn()): two in the
# node's PD (the second completing to the RC QP's receive CQ), one in the
# other PD, one of another XRC domain; then the node's basic SRQ.
XSRQ0, XSRQ1, XSRQ_PD2, XSRQ_DOMAIN2, BASIC_SRQ = range(5)
# op_xrc's kinds, op_mw's entries and actions, op_long's messages.
XRC_WQE, XRC_FRAME, XRC_RECV, XRC_MODIFY = range(4)
MW1, MW2, FR = range(3)
MW_BIND, MW_LOCAL_INV, MW_RDMA, MW_SEND_INV, MW_REALLOC = range(5)
L_WRITE, L_WRITE_IMM, L_SEND, L_SEND_IMM, L_READ = range(5)
# km_rdma()'s operations.
R_WRITE, R_READ, R_FAA, R_CAS, R_ATOMIC_WRITE, R_FLUSH, R_WRITE_IMM = \
    range(7)
# Rights (in_rights()).
LW, RW, RR, RA, ZERO_BASED, FLUSH_GLOBAL = 1, 2, 4, 8, 0x10, 0x20
# Which key of a window or the fast MR (in_km_key()): the live one, the
# one known dead.
LIVE, DEAD = 0, 0xa0
MTU256, MTU512, MTU1024, MTU2048, MTU4096 = range(5)


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


def frame_body(ib_op, psn_delta=0, flags=0, post=0, off=0, dma_len=0,
               key_mode=0, aeth=0, msn=0, plen=0, post_fields=b"", region=0,
               net=0, net_fields=b""):
    """frame_send()'s fields: IB opcode ib_op (low 5 bits), PSN near the
    receiver's expected one."""
    return (u8(ib_op) + u8(flags) +
            u8(post) + u8(net) + net_fields + u16(0x1234) +
            u8(0) + u8(psn_delta) +                 # PSN
            va(off, region) + key(key_mode) + u16(dma_len) +  # RETH
            va(off & ~7, region) + key(key_mode) + u64(5) + u64(0) +  # Atomic
            u8(aeth) + u32(msn) +                   # AETH
            u64(0) + u32(0x01020304) + key(0) +     # orig, imm, IETH
            u16(plen) + post_fields)


def frame(node, q, ib_op, *args, **kw):
    """A frame from node to the other one, on QP type q."""
    return u8(OP_FRAME) + u8(sel(node, q)) + frame_body(ib_op, *args, **kw)


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


def srqn(which):
    """in_srqn(): one of the target's SRQs, or (from 0x100) the number."""
    return u8(which) if which < 0x100 else u8(0xf0) + u32(which - 0x100)


def xrc_wqe(node, wr, length, srq=XSRQ0, flags=1, repost=0, remote_off=0,
            key_mode=0, inv=None, page=0, cmp=5):
    """A WQE on node's XRC initiator to the other node's target, naming
    XRC SRQ srq, one SGE of length bytes at page of node's buffer; repost:
    0 a receive WQE that fits at the SRQ, 2 none, 3 one of 64 bytes; inv:
    the key mode of a SEND with Invalidate's key."""
    mode = repost << 2 | (2 if inv is not None else 0)
    return (u8(OP_XRC) + u8(sel(node, XRC_WQE)) + u8(wr) + u8(flags) +
            u8(mode) + u16(length) + u16(page) + va(remote_off) +
            key(key_mode) + (key(inv) if inv is not None else u32(0)) +
            u64(cmp) + u64(0) + srqn(srq) + u8(0))


def xrc_frame(node, srq, ib_op, *args, **kw):
    """An XRC frame from node: a request to the other node's target, or a
    response to its initiator."""
    return (u8(OP_XRC) + u8(sel(node, XRC_FRAME)) + srqn(srq) +
            frame_body(ib_op, *args, **kw))


def xrc_recv(node, which, cmds=0, fields=b""):
    """A receive WQE that fits any message on node's XRC SRQ which, its
    doorbell, then the SRQ commands cmds asks for (op_recv_wqe()'s bits)
    with their fields."""
    return (u8(OP_XRC) + u8(sel(node, XRC_RECV)) + u8(0x80 | which) +
            u8(cmds) + u8(0) + u8(0) + fields)


def psn(value):
    """in_start_psn(): PSN value, as a distance below the wrap when near
    it."""
    if 0xffffff - value < 0x80:
        return u8(0xffffff - value)
    return u8(0xff) + u32(value)


def wire(kind, frames, skip=0, offset=0, value=0):
    """op_wire_mode(): kind (0 pass, 1 drop, 2 dup, 3 damage, 4 reorder)
    for the next frames; drop, dup and reorder let skip frames through
    first, damage flips value at offset."""
    return (u8(OP_WIRE) + u8(kind) + u8(frames) +
            u16(offset if kind == 3 else skip) + u8(value))


def reconnect(q=RC, mtu=MTU1024, psns=(0x100, 0x200000)):
    """op_reconnect(): the RC or UC pair up again from RESET."""
    return (u8(OP_MISC) + u8(3) + u8((1 if q == UC else 0) | mtu << 1) +
            psn(psns[0]) + psn(psns[1]))


def xrc_modify(node, how, fields=b""):
    """node's initiator and the other's target: how 0 up again (fields:
    MTU, initiator's and target's PSNs), 1 to ERR (| 4 the target, | 8
    SQD), 2 a mutated MODIFY_QP, 3 QUERY_QP and DEALLOC_XRCD."""
    return u8(OP_XRC) + u8(sel(node, XRC_MODIFY)) + u8(how) + fields


def km_key(mode=LIVE, extra=b""):
    return u8(mode) + extra


def mw(node, entry, action, body):
    return u8(OP_MW) + u8(node | entry << 1 | action << 3) + body


def mw_bind(node, entry, off, length, rights, tag, qp=0, mode=0,
            which=LIVE, extra=b""):
    """BIND_MW of node's window entry: new tag, MR with MW_BIND, offset
    and length in it, rights; on QP qp (0 RC, 4 UC, 5 UD, 6 initiator)."""
    return mw(node, entry, MW_BIND, u8(qp) + u8(mode) + km_key(which) +
              u8(tag) + extra + u16(off) + u16(length) + u8(rights))


def fr_reg(node, npages, tag, iova_off, length, rights, first=0, qp=0,
           mode=0):
    """REG_MR of node's fast-register MR over npages of its region."""
    return mw(node, FR, MW_BIND, u8(qp) + u8(mode) +
              u8((npages - 1) | first << 4) + km_key() + u8(tag) +
              u16(iova_off) + u16(length) + u8(rights))


def km_inv(node, entry, which=LIVE, qp=0):
    return mw(node, entry, MW_LOCAL_INV, u8(qp) + km_key(which))


def km_rdma(node, entry, op, length, off=0, which=LIVE, xrc_srq=None,
            where=0, misaligned=False):
    """From the other node, op through a key of node's entry at offset off
    of where it was bound (where 2: off itself, zero-based); an atomic's
    address as it is when misaligned."""
    how = (op | where << 4 | (8 if xrc_srq is not None else 0) |
           (0x40 if misaligned else 0))
    return mw(node, entry, MW_RDMA, u8(how) + km_key(which) + u16(length) +
              u16(off) + (srqn(xrc_srq) if xrc_srq is not None else b""))


def km_send_inv(node, entry, length, which=LIVE, xrc_srq=None, rnr=False):
    how = (1 if xrc_srq is not None else 0) | (2 if rnr else 0)
    return mw(node, entry, MW_SEND_INV, u8(how) + km_key(which) +
              u16(length) +
              (srqn(xrc_srq) if xrc_srq is not None else b""))


def km_realloc(node, entry, tag, type2=False, pd2=False):
    return mw(node, entry, MW_REALLOC,
              u8((1 if type2 else 0) | (2 if pd2 else 0)) + u8(tag))


def long_msgs(node, msgs, wire=(0, 0, 0), reconnect=None):
    """Messages (op, length) on the second RC pair from node; wire: kind
    (0 pass, 1 drop, 2 dup, 3 reorder), frames, frames let through first;
    reconnect: (MTU, PSN mode of node 0, of node 1)."""
    kind, left, skip = wire
    b = (u8(OP_LONG) + u8(node | (len(msgs) - 1) << 1 |
                          (8 if reconnect else 0)) +
         u8(kind | left << 2 | skip << 5))
    if reconnect:
        b += u8(reconnect[0]) + psn(reconnect[1]) + psn(reconnect[2])
    for op, length in msgs:
        b += u8(op) + u16(length)
    return b


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
    # A WRITE's middle packets lost (the first two frames go through);
    # the RC and UC pairs up again from other PSNs, at MTU 256.
    "wire-drop-middle": wire(1, 2, skip=2) +
    traffic(0, RC, WR_WRITE, 8000) + time(30) + time(30) +
    reconnect(RC, MTU256, (0xfffffe, 0x10)) +
    traffic(1, RC, WR_SEND, 3000) + reconnect(UC, MTU512, (5, 6)) +
    traffic(0, UC, WR_WRITE, 3000) + time(20),

    # XRC (annex A14): SENDs of one and several packets to the target's
    # SRQs (the second completes to the RC QP's receive CQ), with
    # immediate, up to 16 KiB.
    "xrc-send": xrc_wqe(0, WR_SEND, 100) +
    xrc_wqe(0, WR_SEND_IMM, 3 * 1024 + 5, srq=XSRQ1) +
    xrc_wqe(1, WR_SEND, 16384, page=40) + time(20),
    # RDMA and atomics over XRC, checked in the named SRQ's PD (the other
    # PD's SRQ with the other PD's MR).
    "xrc-rdma": xrc_wqe(0, WR_WRITE, 5000, remote_off=0x8000) +
    xrc_wqe(0, WR_READ, 3000, srq=XSRQ1, remote_off=0x8000, page=8) +
    xrc_wqe(1, WR_CAS, 8, remote_off=0x100) +
    xrc_wqe(1, WR_FAA, 8, srq=XSRQ1, remote_off=0x108) +
    xrc_wqe(0, WR_WRITE_IMM, 2000, srq=XSRQ_PD2, remote_off=0x11000,
            key_mode=2) + time(20),
    # What the target refuses: an SRQ of another domain, a basic SRQ, no
    # SRQ, a key of another PD than the SRQ's; the pair up again after
    # each.
    "xrc-refused": xrc_wqe(0, WR_SEND, 64, srq=XSRQ_DOMAIN2) + time(20) +
    xrc_modify(0, 0, u8(MTU1024) + psn(0x700) + psn(0x800)) +
    xrc_wqe(0, WR_SEND, 64, srq=BASIC_SRQ) + time(20) +
    xrc_modify(0, 0, u8(MTU1024) + psn(0x900) + psn(0xa00)) +
    xrc_wqe(0, WR_WRITE, 64, srq=0x100 + 77) + time(20) +
    xrc_modify(0, 0, u8(MTU1024) + psn(0xb00) + psn(0xc00)) +
    xrc_wqe(0, WR_WRITE, 64, srq=XSRQ_PD2, remote_off=0x8000) + time(20),
    # An empty XRC SRQ: RNR NAKs until a receive WQE comes.
    "xrc-rnr": xrc_wqe(0, WR_SEND, 10, repost=2) * 3 + time(16) +
    xrc_recv(1, XSRQ0) + time(24),
    # The SRQ destroyed (and made again) while the target holds one of
    # its WQEs for a SEND whose other packets were lost.
    "xrc-srq-destroyed": wire(1, 4, skip=1) +
    xrc_wqe(0, WR_SEND, 3000, srq=XSRQ1) +
    xrc_recv(1, XSRQ1, SRQ_DESTROY) + time(30) + time(30),
    # The pair at path MTU 256 from PSNs near the wrap: a 16 KiB SEND (64
    # packets) and a READ cross it while frames are lost.
    "xrc-mtu-wrap": xrc_modify(0, 0, u8(MTU256) + psn(0xfffff0) +
                               psn(0xffffe0)) +
    wire(1, 2, skip=5) + xrc_wqe(0, WR_SEND, 16384) +
    xrc_wqe(0, WR_READ, 5000, srq=XSRQ1, remote_off=0x8000, page=8) +
    time(30) + time(30),
    # Frames from the wire: requests to the target naming its SRQs (one
    # of another domain), an ACK nobody asked for to the initiator.
    "xrc-frames": xrc_frame(0, XSRQ0, 0x04, plen=100) +
    xrc_frame(0, XSRQ1, 0x0a, off=0x100, dma_len=64, plen=64) +
    xrc_frame(0, XSRQ_DOMAIN2, 0x04, plen=8) + xrc_frame(1, XSRQ0, 0x11),
    # The target to ERR while it holds a SEND's WQE; the initiator to
    # SQD; a mutated MODIFY_QP; QUERY_QP, DEALLOC_XRCD of domains in use;
    # the pair up again.
    "xrc-states": wire(1, 4, skip=1) + xrc_wqe(0, WR_SEND, 3000) +
    xrc_modify(0, 1 | 4) + xrc_modify(1, 1 | 8) +
    xrc_modify(0, 2, u8(1) + u8(3) + u32(1) + u8(3) + u32(0) + u32(0) +
               u8(4) + u8(0)) +
    xrc_modify(0, 3) + xrc_modify(0, 3 | 4 | 8) +
    xrc_modify(0, 0, u8(MTU1024) + psn(0x100) + psn(0x200)) +
    xrc_wqe(0, WR_SEND, 100) + time(20),

    # Memory windows (IBTA 10.6.7).  Type 1, bound on node 1's RC QP:
    # node 0 writes (5 packets), reads, adds through it, over RC and XRC;
    # bound again under another tag, the old key must fail; unbound
    # (length 0), its key must fail.
    "mw-type1": mw_bind(1, MW1, 0x1000, 0x3000, RW | RR | RA, 0x12) +
    km_rdma(1, MW1, R_WRITE, 5000, 100) + km_rdma(1, MW1, R_READ, 3000) +
    km_rdma(1, MW1, R_FAA, 8, 8) +
    km_rdma(1, MW1, R_CAS, 8, 16, xrc_srq=XSRQ0) +
    mw_bind(1, MW1, 0x1000, 0x3000, RW | RR, 0x13) +
    km_rdma(1, MW1, R_WRITE, 64, which=DEAD) + time(20) + reconnect() +
    mw_bind(1, MW1, 0, 0, 0, 0x14) +
    km_rdma(1, MW1, R_READ, 64) + time(20),
    # Type 2B, zero-based: LOCAL_INV frees it, the key must fail; bound
    # again, the peer's SEND with Invalidate frees it, the key must fail;
    # bound again, over XRC (tied to the RC QP, not the target: refused).
    "mw-type2": mw_bind(1, MW2, 0, 0x4000, RW | RR | ZERO_BASED, 0x23) +
    km_rdma(1, MW2, R_WRITE, 3000, 0x100) +
    km_rdma(1, MW2, R_READ, 2000, 0x200, where=2) +
    km_inv(1, MW2) + km_rdma(1, MW2, R_WRITE, 8, which=DEAD) + time(20) +
    reconnect() + mw_bind(1, MW2, 0, 0x4000, RW, 0x24) +
    km_send_inv(1, MW2, 100) + km_rdma(1, MW2, R_WRITE, 8, which=DEAD) +
    time(20) + reconnect() + mw_bind(1, MW2, 0, 0x4000, RW, 0x25) +
    km_rdma(1, MW2, R_WRITE, 64, xrc_srq=XSRQ0) + time(20),
    # The fast-register MR: registered over 4 of its pages, written and
    # read through (RC, XRC), invalidated by a SEND with Invalidate over
    # XRC (in the SRQ's PD), then the key must fail; registered again
    # under another tag, invalidated locally.
    "fr-reg-inv": fr_reg(1, 4, 0x34, 0x80, 0x3000, LW | RW | RR) +
    km_rdma(1, FR, R_WRITE, 5000, 0x10) +
    km_rdma(1, FR, R_READ, 2000, xrc_srq=XSRQ0) +
    km_send_inv(1, FR, 64, xrc_srq=XSRQ0) +
    km_rdma(1, FR, R_WRITE, 8, which=DEAD) + time(20) + reconnect() +
    fr_reg(1, 8, 0x35, 0, 0x8000, LW | RW) + km_rdma(1, FR, R_WRITE, 100) +
    km_inv(1, FR) + km_rdma(1, FR, R_WRITE, 8, which=DEAD) + time(20),
    # Binds refused (IBTA 10.6.7.2): a zero-based type 1, an MR without
    # MW_BIND, a range past the MR, on a UD QP, a window of the other PD;
    # then one on the XRC initiator, used over XRC.
    "mw-bind-refused": mw_bind(1, MW1, 0, 0x100, RR | ZERO_BASED, 0x15) +
    reconnect() + mw_bind(1, MW1, 0, 0x100, RR, 0x16, mode=2,
                          extra=key(0)) +
    reconnect() + mw_bind(1, MW1, 0x7f00, 0x200, RR, 0x17) + reconnect() +
    mw_bind(1, MW2, 0, 0x100, RR, 0x18, qp=5) +
    km_realloc(1, MW2, 0x40, type2=True, pd2=True) +
    mw_bind(1, MW2, 0, 0x100, RR, 0x41) + reconnect() +
    mw_bind(1, MW1, 0, 0x100, RR, 0x19, qp=6) +
    km_rdma(1, MW1, R_READ, 64, xrc_srq=XSRQ0) + time(20),
    # A window's own checks (IBTA 10.6.7.2, 10.6.7.3): binds refused for
    # an MR without LOCAL_WRITE (a writable window), an MR of the other
    # PD, a type 2 window bound already; accesses refused for a right the
    # window lacks, past its end, a misaligned atomic (the address, and
    # a zero-based window's start), a target whose SRQ is of another PD;
    # a type 2 window freed with the QP it is bound to.
    "mw-access-checks":
    admin(1, 2, u8(0) + u8(RR | 0x10) + u16(0x2000) + u32(0x4000) +
          u32(0x70)) +
    mw_bind(1, MW1, 0, 0x100, RW, 0x61, mode=2, extra=key(9)) +
    reconnect() +
    admin(1, 2, u8(1) + u8(0x1f) + u16(0x2000) + u32(0x4000) + u32(0x71)) +
    mw_bind(1, MW1, 0, 0x100, RW, 0x62, mode=2, extra=key(10)) +
    reconnect() + mw_bind(1, MW2, 0, 0x1000, RW, 0x63) +
    mw_bind(1, MW2, 0, 0x1000, RW, 0x64) + reconnect() +
    km_rdma(1, MW2, R_READ, 64) + time(20) + reconnect() +
    km_rdma(1, MW2, R_WRITE, 0x100, 0xf80) + time(20) + reconnect() +
    mw_bind(1, MW1, 4, 64, RA | RW, 0x65) +
    km_rdma(1, MW1, R_FAA, 8, misaligned=True) + time(20) + reconnect() +
    km_inv(1, MW2) + mw_bind(1, MW2, 4, 64, RA | ZERO_BASED, 0x66) +
    km_rdma(1, MW2, R_FAA, 8, 8, where=2) + time(20) + reconnect() +
    km_rdma(1, MW1, R_WRITE, 8, xrc_srq=XSRQ_PD2) + time(20) +
    km_inv(1, MW2) + mw_bind(1, MW2, 0, 0x100, RW, 0x67, qp=4) +
    admin(1, 3, u8(2) + u32(1)),
    # A request from the wire moves the responder's expected PSN on: the
    # WRITE through an invalidated key that follows is a duplicate,
    # acknowledged and not executed (IBTA 9.7.5.2.2), so it succeeds; the
    # target must not take that for an access the key granted.
    "mw-dead-key-duplicate": fr_reg(1, 4, 0x34, 0x80, 0x3000, LW | RW | RR) +
    km_inv(1, FR) + frame(0, RC, 0x04, plen=4) +
    km_rdma(1, FR, R_WRITE, 64, which=DEAD) + time(20),
    # DEALLOC_MW and ALLOC_MW again (the other type), DESTROY_MR and
    # CREATE_MR of the fast-register MR: the old keys must fail.
    "mw-realloc": mw_bind(1, MW1, 0, 0x1000, RW, 0x1a) +
    km_realloc(1, MW1, 0x50, type2=True) +
    km_rdma(1, MW1, R_WRITE, 8, which=DEAD) + time(20) + reconnect() +
    mw_bind(1, MW1, 0, 0x1000, RW, 0x51) + km_rdma(1, MW1, R_WRITE, 100) +
    fr_reg(1, 2, 0x36, 0, 0x2000, LW | RW) + km_realloc(1, FR, 0x60) +
    km_rdma(1, FR, R_WRITE, 8, which=DEAD) + time(20),

    # The second RC pair: four 16 KiB WRITEs pipelined at MTU 1024 (64
    # packets), four frames lost after the fifth; SENDs, READs and
    # immediates with frames duplicated; from PSNs near the wrap at MTU
    # 256, frames reordered; at MTU 4096; messages of no length.
    "long-write-loss": long_msgs(0, [(L_WRITE, 16384)] * 4, wire=(1, 4, 5)),
    "long-mixed-dup": long_msgs(1, [(L_SEND, 16384), (L_READ, 10000),
                                    (L_WRITE_IMM, 5000), (L_SEND_IMM, 1)],
                                wire=(2, 4, 3)),
    "long-wrap-reorder": long_msgs(0, [(L_SEND, 16384), (L_READ, 16384),
                                       (L_WRITE, 3000)], wire=(3, 4, 7),
                                   reconnect=(MTU256, 0xfffff0, 0xffffe8)),
    "long-mtu4096": long_msgs(1, [(L_WRITE_IMM, 16384), (L_READ, 8192)],
                              wire=(1, 2, 1),
                              reconnect=(MTU4096, 0x10, 0x20)) +
    long_msgs(0, [(L_SEND, 0), (L_WRITE, 0), (L_READ, 0),
                  (L_SEND_IMM, 4096)]),
}


# fuzz-vhca-ib.c: its operations (the opcode byte % 10; 9 and an even
# byte drains the async events, an odd one lets time pass).
IB_FRAME, IB_RAW, IB_MAD, IB_MODIFY_PORT, IB_LINK, IB_SM, IB_TRAFFIC, \
    IB_RECV, IB_MISC = 0, 2, 3, 4, 5, 6, 7, 8, 9
A, B = 0, 1
# frame_opcodes[]
F_RC_SEND, F_RC_SEND_FIRST, F_RC_SEND_MIDDLE, F_RC_SEND_LAST, \
    F_RC_SEND_IMM, F_RC_WRITE, F_RC_WRITE_FIRST, F_RC_READ, F_RC_ACK, \
    F_RC_READ_RESP, F_RC_ATOMIC_ACK, F_RC_CAS, F_RC_FAA, F_RC_SEND_INV, \
    F_UC_SEND, F_UC_WRITE, F_UD_SEND, F_UD_SEND_IMM = range(18)
# in_dest_qpn(), in_dlid(), in_slid(), in_grh() modes; in_pkey()'s P_Keys
D_NATURAL, D_QP0, D_QP1, D_SMI_HANDLE, D_RC, D_UD, D_MCAST, D_ANY = range(8)
L_OURS, L_PATH_BITS, L_PERMISSIVE, L_MCAST, L_ANY, L_ZERO, L_PEER = range(7)
S_PEER, S_ZERO, S_PERMISSIVE, S_ANY = range(4)
G_OURS, G_MGID, G_SENDER, G_ANY = range(4)
P_DEFAULT, P_DEFAULT_LIMITED, P_UD, P_UD_LIMITED, P_LIMITED, \
    P_LIMITED_FULL, P_INVALID, P_INVALID_FULL = range(8)
Q_UD, Q_GSI, Q_ZERO = range(3)
# in_plen(): 8, 0, 256, 1024, 4096, 4097, 3, 2048 bytes
PL_8, PL_0, PL_256, PL_1024, PL_4096, PL_4097, PL_3, PL_2048 = range(8)
# frame_damage()'s bits, in the order their fields follow
DMG_PAD, DMG_BYTE, DMG_LVER, DMG_LNH, DMG_PKT_LEN, DMG_TRUNCATE, \
    DMG_EXTRA, DMG_KEEP_CRCS = (1 << i for i in range(8))
# op_mad(): classes, mad_methods[], mad_attrs[], M_Key and flags modes
C_LID, C_DR, C_PERF, C_ANY = range(4)
M_GET, M_SET, M_TRAP_REPRESS, M_TRAP, M_GET_RESP, M_SET_RESP = range(6)
A_NODE_DESC, A_NODE_INFO, A_GUID_INFO, A_PORT_INFO, A_PKEY_TABLE, \
    A_SL2VL, A_VL_ARB, A_SM_INFO, A_NOTICE, A_CLASS_PORT_INFO, \
    A_PORT_COUNTERS, A_PORT_COUNTERS_EXT = range(12)
K_ZERO, K_PORTS, K_ANY, K_FLIPPED = range(4)
FL_LOCAL, FL_IGNORE_MKEY, FL_WIRE, FL_ANY = range(4)
# op_mad()'s how: which other fields the input gives
H_VERSIONS, H_MOD32, H_DR, H_GET_MODIFY, H_PORT, H_ADDR, H_LEN = \
    (1 << i for i in range(7))
# in_mbox_addr()
MB_PAGES, MB_RAM_END, MB_OUTSIDE, MB_ZERO_OR_BAD = range(4)
# op_traffic() kinds, op_link() kinds, op_recv() QPs
T_RC, T_UD, T_SMI, T_GSI = 0, 2, 3, 4
LINK_DOWN, LINK_UP, LINK_BOUNCE, LINK_RESET = range(4)
QP_RC, QP_UD, QP_GSI, QP_SMI = range(4)
R_SEND, R_SEND_IMM, R_WRITE, R_WRITE_IMM, R_READ = range(5)
# in_av(): by the peer's LID, ours, permissive, multicast (with the
# group's GRH), any
AV_PEER, AV_OURS, AV_PERMISSIVE, AV_MCAST, AV_ANY = range(5)
# PortInfo (IBTA 14.2.5.6) byte offsets in the SMP data; a Get reads
# PortPhysicalState LinkUp, which a Set may not write: a Get-modify-Set
# writes 0 there ("no change", LinkDownDefaultState Polling beside it).
PI_LID, PI_MASTER_SM_LID, PI_LEASE, PI_WIDTH_ENABLED, PI_STATE, PI_PHYS, \
    PI_PROTECT, PI_SPEED_ENABLED, PI_CLIENT_REREGISTER = \
    16, 18, 26, 29, 32, 33, 34, 35, 51
PI_NO_PHYS_CHANGE = (PI_PHYS, 0x02)


def ib_frame(node, op, dest=D_NATURAL, dlid=L_OURS, dlid_field=b"",
             slid=S_PEER, grh=None, vl=None, sl=0, flags=0, pkey=P_DEFAULT,
             psn_delta=0, qkey=None, plen=PL_8, damage=None):
    """op_frame(): an IB packet from node to the other, opcode op of
    frame_opcodes[], its PSN psn_delta past the one the RC QP expects;
    vl None: VL15 to QP0, else VL0; damage: frame_damage()'s byte and
    fields."""
    lids = dlid | slid << 3
    grh_fields = b""
    if grh is not None:
        lids |= 0x20 | grh << 6
        grh_fields = (bytes(16) if grh == G_ANY else b"") + u8(64) + u8(0) + \
            u32(0)
    vlsel = 0xc0 | vl if vl is not None else sl << 4
    qpsel = dest | (8 if qkey is not None else 0)
    b = (u8(IB_FRAME) + u8(node) + u8(op) + u8(qpsel) + u8(lids) +
         u8(vlsel) + u8(flags | (0x40 if damage is not None else 0)) +
         dlid_field + grh_fields + u8(pkey) + u8(0) + u8(psn_delta))
    if qkey is not None:
        b += u8(qkey)
    b += (u16(0) + u8(0) + u16(0) + u8(0) +        # RETH, AtomicETH
          u64(5) + u64(0) + u8(0) + u32(0) +      # AETH
          u32(0x01020304) + u8(0) + u8(plen))     # ImmDt, IETH
    return b + (damage if damage is not None else b"")


def mad(node, cls, method, attr, mod=0, data=b"", mkey=K_ZERO,
        flags=FL_LOCAL, how=0, changes=(), versions=None, extra=b""):
    """op_mad(): a MAD of class cls (C_*), method and attribute indexes,
    modifier 0..3, base and class versions; data, or with H_GET_MODIFY
    the attribute as a Get reads it with (offset, value) changes; extra:
    the fields how, the M_Key and flags modes ask for after the data."""
    if versions:
        how |= H_VERSIONS
    b = (u8(IB_MAD) + u8(node | cls << 1 | mkey << 3 | flags << 5) +
         u8(how) + u8(method) + u8(attr) + u8(mod))
    if versions:
        b += u8(versions[0]) + u8(versions[1])
    if how & H_GET_MODIFY:
        b += u8(len(changes))
        for off, val in changes:
            b += u8(off) + u8(val)
    else:
        b += u8(len(data)) + data
    return b + extra


def modify_port(node, set_bits, clr_bits, port=None, flags=None,
                reset_qkey=False, any_bits=False):
    sel = (node | (2 if port is not None else 0) |
           (4 if flags is not None else 0) | (8 if reset_qkey else 0) |
           (0x10 if any_bits else 0))
    return (u8(IB_MODIFY_PORT) + u8(sel) +
            (u8(port) if port is not None else b"") +
            (u8(flags) if flags is not None else b"") + u32(set_bits) +
            u32(clr_bits))


def link(node, kind):
    return u8(IB_LINK) + u8(node | kind << 1)


def sm(node, active=True, cable=False, pkeys=False, reconnect=None,
       lid=None):
    """op_sm(): the SM brings node's port back (to ACTIVE, or ARMED);
    reconnect: the RC pair again from these PSNs."""
    sel = (node | (2 if cable else 0) | (4 if lid is not None else 0) |
           (8 if active else 0) | (0x10 if pkeys else 0) |
           (0x20 if reconnect else 0))
    b = u8(IB_SM) + u8(sel) + (u16(lid) if lid is not None else b"")
    if reconnect:
        b += u32(reconnect[0]) + u32(reconnect[1])
    return b


def ib_traffic(node, kind, fields, repost=False, imm=False, big=False):
    return (u8(IB_TRAFFIC) + u8(node | kind << 1 | (0x20 if imm else 0) |
                                (0x40 if big else 0) |
                                (0x80 if repost else 0)) + fields)


def rc(node, op, length, repost=True):
    return ib_traffic(node, T_RC, u8(op) + u32(0x1234) + u16(length),
                      repost=repost, big=length > 0x1100)


def ud(node, dest, qkey, av, length, sl=0):
    """A UD datagram: dest 0 the peer's UD QP, 1 QP1, 2 QP0, 3 our own, 4
    a multicast group's (0xffffff)."""
    return ib_traffic(node, T_UD, u8(dest) + u8(qkey) + u8(av) + u8(sl) +
                      u16(length))


def ib_recv(node, qp, n, length=None, bad_key=False):
    sel = node | qp << 1 | (n - 1) << 3 | (0x80 if length is not None else 0)
    return (u8(IB_RECV) + u8(sel) +
            (u16(length) if length is not None else b"") +
            (u8(0xff) + u32(0xdead) if bad_key else u8(0)))


def ib_time(exp):
    return u8(IB_MISC) + u8(1) + u8(exp) + u16(0)


def ib_drain():
    return u8(IB_MISC) + u8(0)


SEEDS_IB = {
    # Packets the link and the demux take: RC to B's QP at the expected
    # PSN, UD to its UD QP in the 0x8001 partition, to QP1 in any, to the
    # multicast group (LID and MGID), with a GRH to its GID.
    "frame-rc": ib_frame(A, F_RC_SEND) + ib_frame(A, F_RC_WRITE, psn_delta=1,
                                                  plen=PL_1024) +
    ib_frame(A, F_RC_READ, psn_delta=2, flags=2) +
    ib_frame(B, F_RC_SEND_FIRST, plen=PL_1024) +
    ib_frame(B, F_RC_SEND_LAST, psn_delta=1, plen=PL_3),
    "frame-ud": ib_frame(A, F_UD_SEND, pkey=P_UD, plen=PL_256) +
    ib_frame(A, F_UD_SEND_IMM, pkey=P_UD_LIMITED) +
    ib_frame(A, F_UD_SEND, dest=D_QP1, qkey=Q_GSI, pkey=P_LIMITED,
             plen=PL_256) +
    ib_frame(A, F_UD_SEND, dest=D_MCAST, dlid=L_MCAST, dlid_field=u8(1),
             grh=G_MGID, pkey=P_UD) +
    ib_frame(A, F_UD_SEND, grh=G_OURS, pkey=P_UD, plen=PL_4096) +
    ib_frame(A, F_UD_SEND, pkey=P_UD, plen=PL_4097),
    # VL15 to QP0 by LID and by the permissive LID; QP0 on a data VL,
    # VL15 to another QP, QP0 by the SMI QP's handle.
    "frame-smp": ib_frame(A, F_UD_SEND, dest=D_QP0, plen=PL_256) +
    ib_frame(A, F_UD_SEND, dest=D_QP0, dlid=L_PERMISSIVE,
             slid=S_PERMISSIVE, plen=PL_256) +
    ib_frame(A, F_UD_SEND, dest=D_QP0, vl=0) +
    ib_frame(A, F_UD_SEND, vl=15, pkey=P_UD) +
    ib_frame(A, F_UD_SEND, dest=D_SMI_HANDLE, pkey=P_UD, plen=PL_256),
    # What the link drops (IBTA 7.11.1, 10.9.3): another LID, the
    # permissive LID on VL0, a multicast LID without a GRH, SLID 0, P_Keys
    # not in the table or not the QP's partition, two limited members.
    "frame-dropped": ib_frame(A, F_RC_SEND, dlid=L_PEER) +
    ib_frame(A, F_RC_SEND, dlid=L_PERMISSIVE) +
    ib_frame(A, F_UD_SEND, dest=D_MCAST, dlid=L_MCAST, dlid_field=u8(1),
             pkey=P_UD) +
    ib_frame(A, F_RC_SEND, slid=S_ZERO) +
    ib_frame(A, F_RC_SEND, pkey=P_INVALID_FULL) +
    ib_frame(A, F_RC_SEND, pkey=P_UD) +
    ib_frame(A, F_UD_SEND, pkey=P_LIMITED, qkey=Q_UD) +
    ib_frame(A, F_RC_SEND, dlid=L_ZERO) +
    ib_frame(A, F_UD_SEND, grh=G_SENDER, pkey=P_UD),
    # The link's integrity and header checks, the CRCs made right after
    # each change: LVer, LNH raw, PktLen, PadCnt, a byte, truncated,
    # lengthened, and a VCRC left wrong.
    "frame-damaged": ib_frame(A, F_RC_SEND, damage=u8(DMG_LVER) + u8(1)) +
    ib_frame(A, F_RC_SEND, damage=u8(DMG_LNH) + u8(0)) +
    ib_frame(A, F_RC_SEND, damage=u8(DMG_PKT_LEN) + u16(3)) +
    ib_frame(A, F_RC_SEND, damage=u8(DMG_PAD) + u8(0x30)) +
    ib_frame(A, F_UD_SEND, pkey=P_UD,
             damage=u8(DMG_BYTE) + u16(9) + u8(0x40)) +
    ib_frame(A, F_RC_SEND, damage=u8(DMG_TRUNCATE) + u16(10)) +
    ib_frame(A, F_RC_SEND, damage=u8(DMG_EXTRA) + u8(12) + u8(0)) +
    ib_frame(A, F_RC_SEND, damage=u8(DMG_BYTE | DMG_KEEP_CRCS) + u16(0) +
             u8(0x10)),
    # Responses nobody asked for, and ACKs after real traffic.
    "frame-responses": ib_frame(B, F_RC_ACK) +
    ib_frame(B, F_RC_READ_RESP, plen=PL_256) + ib_frame(B, F_RC_ATOMIC_ACK) +
    rc(A, R_WRITE, 3000) + ib_frame(B, F_RC_ACK, psn_delta=1),
    "raw": u8(IB_RAW) + u8(B) + u8(0) + u8(IB_RAW) + u8(B | 4) + u8(40) +
    bytes([0xf0, 0x02, 0, 2, 0, 10, 0, 1]) + bytes(32) +
    u8(IB_RAW) + u8(A | 2 | 4) + u16(300) + bytes(range(256)) + bytes(44),
    # The SMA: Gets of each attribute, LID routed and directed route;
    # SMInfo and Notice (not the SMA's); a response; a bad version.
    "mad-sma-get": mad(B, C_LID, M_GET, A_NODE_INFO) +
    mad(B, C_LID, M_GET, A_PORT_INFO, 1) +
    mad(B, C_DR, M_GET, A_PKEY_TABLE, how=H_DR,
        extra=u8(1) + u8(1) + u16(0xffff) + u16(0xffff)) +
    mad(B, C_DR, M_GET, A_GUID_INFO) + mad(B, C_LID, M_GET, A_SL2VL) +
    mad(B, C_LID, M_GET, A_VL_ARB, 1) + mad(B, C_LID, M_GET, A_NODE_DESC) +
    mad(B, C_LID, M_GET, A_SM_INFO) + mad(B, C_LID, M_TRAP, A_NOTICE) +
    mad(B, C_LID, M_GET_RESP, A_PORT_INFO) +
    mad(B, C_LID, M_GET, A_PORT_INFO, versions=(1, 2)),
    # The SMA's Sets, as Get-modify-Set: PortInfo's LID, the P_Key table,
    # SL2VL (an SL to VL15), NodeDescription (the driver's: trap 144; an
    # SM's: refused), VLArbitration.
    "mad-sma-set": mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
                       changes=[PI_NO_PHYS_CHANGE, (PI_LID + 1, 7)],
                       flags=FL_IGNORE_MKEY) +
    mad(B, C_LID, M_SET, A_PKEY_TABLE, how=H_GET_MODIFY,
        changes=[(6, 0x80), (7, 0x05)]) +
    mad(B, C_LID, M_SET, A_SL2VL, how=H_GET_MODIFY, changes=[(0, 0x0f)]) +
    mad(B, C_LID, M_SET, A_NODE_DESC, data=b"fuzz", flags=FL_IGNORE_MKEY) +
    mad(B, C_LID, M_SET, A_NODE_DESC, data=b"sm") +
    mad(B, C_DR, M_SET, A_VL_ARB, 2, how=H_GET_MODIFY,
        changes=[(1, 0x40)]) +
    sm(B, reconnect=(0x100, 0x200)) + rc(A, R_SEND, 100),
    # M_Key protection (14.2.4): B's M_Key set with protection 2 and a
    # lease of 1 s; a Set and a Get without it fail (trap 256 to B's SMI
    # QP), one with it passes; the lease runs out.
    "mad-mkey": mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
                    changes=[PI_NO_PHYS_CHANGE, (7, 0x42), (PI_LEASE + 1, 1),
                             (PI_PROTECT, 0x80)]) +
    mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
        changes=[PI_NO_PHYS_CHANGE, (PI_LID + 1, 9)]) +
    mad(B, C_DR, M_GET, A_PORT_INFO, 1, flags=FL_WIRE,
        extra=u8(0) + u16(1) + u8(0) + u8(0)) +
    mad(B, C_LID, M_SET, A_NODE_DESC, data=b"x", mkey=K_PORTS) +
    mad(B, C_LID, M_TRAP_REPRESS, A_NOTICE, mkey=K_FLIPPED,
        extra=u8(3)) +
    mad(B, C_DR, M_SET, A_NODE_DESC, data=b"z", how=H_DR,
        extra=u8(1) + u8(40) + u16(0xffff) + u16(0xffff)) +
    ib_time(31) + mad(B, C_LID, M_SET, A_NODE_DESC, data=b"y"),
    # PortInfo's link fields: PortState Down (the link bounces), the
    # widths and speeds supported (all ones) and one not, ClientReregister,
    # Disabled then Polling.
    "mad-port-link": mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
                         changes=[PI_NO_PHYS_CHANGE, (PI_STATE, 0x41)]) +
    sm(B) + mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
                changes=[PI_NO_PHYS_CHANGE, (PI_WIDTH_ENABLED, 0xff),
                         (PI_SPEED_ENABLED, 0x0f),
                         (PI_CLIENT_REREGISTER, 0x80)]) +
    mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
        changes=[PI_NO_PHYS_CHANGE, (PI_WIDTH_ENABLED, 0x04)]) +
    mad(B, C_LID, M_SET, A_PORT_INFO, 1, how=H_GET_MODIFY,
        changes=[(PI_STATE, 0x40), (PI_PHYS, 0x32)]) +
    sm(B, reconnect=(0x10, 0x20)) + rc(A, R_SEND, 10),
    # The PMA: ClassPortInfo, PortCounters and the extended ones, a
    # counter reset, a bad PortSelect.
    "mad-pma": rc(A, R_WRITE, 2000) + mad(B, C_PERF, M_GET,
                                          A_CLASS_PORT_INFO) +
    mad(B, C_PERF, M_GET, A_PORT_COUNTERS, data=bytes([0, 1])) +
    mad(B, C_PERF, M_GET, A_PORT_COUNTERS_EXT, data=bytes([0, 1])) +
    mad(B, C_PERF, M_SET, A_PORT_COUNTERS, data=bytes([0, 1, 0xff, 0xff])) +
    mad(B, C_PERF, M_SET, A_PORT_COUNTERS_EXT,
        data=bytes([0, 1, 0xff, 0xff])) +
    mad(B, C_PERF, M_GET, A_PORT_COUNTERS, data=bytes([0, 7])),
    # The command's own checks: a port other than 1, unknown flags, a
    # short mailbox, one past the end of RAM, outside RAM, at 0; and one
    # moved inside its pages.
    "mad-mailbox": mad(A, C_LID, M_GET, A_NODE_INFO, how=H_PORT,
                       extra=u8(2)) +
    mad(A, C_LID, M_GET, A_NODE_INFO, flags=FL_ANY, extra=u8(4)) +
    mad(A, C_LID, M_GET, A_NODE_INFO, how=H_LEN, extra=u16(543)) +
    mad(A, C_LID, M_GET, A_NODE_INFO, how=H_ADDR,
        extra=u8(MB_RAM_END) + u16(100)) +
    mad(A, C_LID, M_GET, A_NODE_INFO, how=H_ADDR,
        extra=u8(MB_OUTSIDE) + u64(0x123456789)) +
    mad(A, C_LID, M_GET, A_NODE_INFO, how=H_ADDR,
        extra=u8(MB_ZERO_OR_BAD) + u8(1)) +
    mad(A, C_LID, M_GET, A_NODE_INFO, how=H_ADDR,
        extra=u8(MB_PAGES) + u16(4095)),
    # MODIFY_PORT: IsSM set (trap 144 to B's SMI QP) and cleared, the
    # Q_Key counter reset; a bad port, unknown flags, the device's bits.
    "modify-port": modify_port(B, 1 << 1, 0) + modify_port(B, 0, 1 << 1,
                                                            reset_qkey=True) +
    modify_port(B, 0, 0, port=0) + modify_port(B, 0, 0, flags=2) +
    modify_port(B, 1, 0, any_bits=True),
    # The cable out and in: the port DOWN, then INIT; RC traffic meanwhile
    # is discarded; the SM brings the port back and the pair again.
    "link": link(B, LINK_DOWN) + rc(A, R_SEND, 10) + ib_time(28) +
    link(B, LINK_UP) + ib_frame(A, F_UD_SEND, dest=D_QP0, plen=PL_256) +
    sm(B, active=False) + ib_frame(A, F_RC_SEND) +
    sm(A, reconnect=(5, 6)) + sm(B, reconnect=(7, 8)) +
    rc(A, R_SEND, 100) + link(A, LINK_BOUNCE) + ib_time(30) + ib_drain(),
    # A device reset under traffic: the port INIT without an event, its
    # objects gone; the SM's Sets after it.
    "device-reset": rc(A, R_WRITE, 4000) + link(B, LINK_RESET) +
    rc(A, R_SEND, 10) + sm(B, pkeys=True, reconnect=(1, 2)) + ib_time(30),
    # Traffic on each QP: RC of each kind, UD to the peer, QP1, QP0, our
    # own LID, a multicast group; SMPs by LID and the permissive LID;
    # GSI MADs in each partition.
    "traffic": rc(A, R_SEND, 100) + rc(B, R_SEND_IMM, 4000) +
    rc(A, R_WRITE, 20000) + rc(A, R_WRITE_IMM, 10) + rc(B, R_READ, 9000) +
    ud(A, 0, 0, AV_PEER, 300) + ud(A, 1, 1, AV_PEER, 256) +
    ud(A, 4, 2, AV_MCAST, 100) + ud(B, 3, 0, AV_OURS, 64) +
    ud(A, 0, 0, AV_PEER, 4097) + ud(A, 0, 0, AV_PEER, 10, sl=5) +
    ib_traffic(A, T_SMI, u8(AV_PEER) + u8(0)) +
    ib_traffic(B, T_SMI, u8(AV_PERMISSIVE) + u8(0)) +
    ib_traffic(A, T_GSI, u8(1) + u8(AV_PEER) + u8(0)) + ib_time(25),
    # Receive WQEs too short for what comes, and with a bad key, after
    # the four each QP starts with.
    "recv": ib_recv(B, QP_UD, 2, length=20) + ud(A, 0, 0, AV_PEER, 100) * 5 +
    ib_recv(B, QP_SMI, 1, bad_key=True) +
    ib_traffic(A, T_SMI, u8(AV_PEER) + u8(0)) * 5 +
    ib_recv(B, QP_RC, 3, length=8) + rc(A, R_SEND, 100, repost=False) * 5 +
    ib_time(30),
    # A packet on VL0 to the SMI QP's handle reached QP0 (fixed: no-qp).
    "regress-smi-handle": ib_frame(A, F_UD_SEND, dest=D_SMI_HANDLE,
                                   plen=PL_256),
    # PortPhysicalState Disabled with the PortState a Get read, ACTIVE,
    # in one Set left the port ACTIVE on a disabled link (fixed: DOWN).
    "regress-port-disabled-active": mad(B, C_LID, M_SET, A_PORT_INFO, 1,
                                        how=H_GET_MODIFY,
                                        changes=[(PI_PHYS, 0x32)]),
}


def write(out, seeds):
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        if not name.startswith("regress-"):
            name = "seed-" + name
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), out))


def main():
    write(OUT, SEEDS)
    write(OUT_IB, SEEDS_IB)


if __name__ == "__main__":
    main()
