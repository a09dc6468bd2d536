#!/usr/bin/python3
"""Seed inputs for QEMU's generic-fuzz over vhca (scripts/fuzz-qemu.sh).

A random walk over the BARs rarely gets the device past its register
decode: the admin queue needs an aligned base, a size in range and
CTRL.ENABLE before a doorbell does anything.  Each seed does that set-up
and then one piece of work - an admin command (each opcode once, its
entry and mailbox served by the fuzzer's DMA patterns), the Ethernet TX
and RX rings, a user context's doorbells, the event queue doorbells -
so that the fuzzer mutates from there.

The input format is generic-fuzz's (QEMU's tests/qtest/fuzz/
generic_fuzz.c): commands separated by "FUZZ", each an opcode byte and
its arguments as the C structs lay them out.  Register offsets, opcodes
and bits come from include/vhca_hw.h, the one definition.

    scripts/fuzz-qemu-seeds.py DIR [--bar0-index N]

writes the seeds into DIR (seed-NAME, replacing any of that name).
--bar0-index: which of the device's fuzzable MemoryRegions, in address
order, is BAR0 (vhca-ctrl); BAR2 (vhca-doorbell) is taken as the next.
"""

import argparse
import os
import re
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEPARATOR = b"FUZZ"

# generic_fuzz.c: enum cmds.
OP_WRITE = 3
OP_PCI_WRITE = 5
OP_ADD_DMA_PATTERN = 7
OP_CLEAR_DMA_PATTERNS = 8
OP_CLOCK_STEP = 9
SIZE_WORD, SIZE_LONG, SIZE_QUAD = 1, 2, 3
# The device's fuzzable regions in address order: BAR0, BAR2, then BAR4's
# MSI-X table; and where qpci, which the fuzzer maps the BARs with, puts
# BAR0.  The MSI-X capability is the first in config space (hw/vhca/
# vhca.c puts the PCIe capability at 0x80 first, msix_init_exclusive_bar
# takes the first free space, 0x40).
MSIX_TABLE = 2
BAR0_ADDR = 0xe0000000
MSIX_CAP = 0x40

# Guest RAM the seeds place the device's rings and buffers in.
ADMQ_BASE = 0x100000
AEQ_BASE = 0x110000
TX_BASE = 0x120000
RX_BASE = 0x130000
MAILBOX = 0x140000
BUFFER = 0x150000


def hw_values():
    """The #define and enum values of include/vhca_hw.h, by name."""
    with open(os.path.join(ROOT, "include", "vhca_hw.h")) as f:
        text = f.read()
    values = {}
    for name, value in re.findall(
            r"^#define\s+(VHCA_\w+)\s+(0x[0-9a-fA-F]+|\d+)\b", text, re.M):
        values[name] = int(value, 0)
    for name, shift in re.findall(
            r"^#define\s+(VHCA_\w+)\s+\(1u << (\d+)\)", text, re.M):
        values[name] = 1 << int(shift)
    for name, value in re.findall(r"^\s+(VHCA_CMD_\w+)\s*=\s*(0x[0-9a-f]+)",
                                  text, re.M):
        values[name] = int(value, 0)
    # The completion EQs' doorbells: VHCA_REG_EQ_DB(eqn), BASE + 4 * eqn.
    m = re.search(r"^#define\s+VHCA_REG_EQ_DB\(eqn\)\s+\((0x[0-9a-f]+) \+ "
                  r"4 \* \(eqn\)\)", text, re.M)
    values["VHCA_REG_EQ_DB_BASE"] = int(m.group(1), 0)
    return values


HW = hw_values()


class Seed:
    def __init__(self, bar0):
        self.bar0 = bar0
        self.cmds = []

    def write(self, bar, offset, value, quad=False):
        # struct { uint8_t size, base; uint32_t offset; uint64_t value; }
        self.cmds.append(bytes([OP_WRITE]) + struct.pack(
            "<BBxxIQ", SIZE_QUAD if quad else SIZE_LONG, self.bar0 + bar,
            offset, value))

    def pci_write_word(self, offset, value):
        # struct { uint8_t size, base, offset; uint32_t value; }
        self.cmds.append(bytes([OP_PCI_WRITE]) + struct.pack(
            "<BBBxI", SIZE_WORD, 0, offset, value))

    def msix_vector(self, vector, addr, data):
        """MSI-X on, and @vector's table entry writing @data at @addr."""
        self.pci_write_word(MSIX_CAP + 2, 1 << 15)
        entry = 16 * vector
        self.write(MSIX_TABLE, entry + 0, addr & 0xffffffff)
        self.write(MSIX_TABLE, entry + 4, addr >> 32)
        self.write(MSIX_TABLE, entry + 8, data)
        self.write(MSIX_TABLE, entry + 12, 0)

    def reg(self, name, value):
        self.write(0, HW["VHCA_REG_" + name], value)

    def patterns(self, *datas):
        """The bytes the device's next DMA reads get, in turn."""
        self.cmds.append(bytes([OP_CLEAR_DMA_PATTERNS]))
        for data in datas:
            assert SEPARATOR not in data
            # struct { uint8_t index, stride; } then the pattern
            self.cmds.append(bytes([OP_ADD_DMA_PATTERN, 0, 0]) + data)

    def clock_step(self):
        self.cmds.append(bytes([OP_CLOCK_STEP]))

    def enable(self):
        """Admin queue and async EQ in guest RAM, CTRL.ENABLE."""
        self.reg("ADMQ_BASE_LO", ADMQ_BASE)
        self.reg("ADMQ_BASE_HI", 0)
        self.reg("ADMQ_LOG_SIZE", 4)
        self.reg("AEQ_BASE_LO", AEQ_BASE)
        self.reg("AEQ_BASE_HI", 0)
        self.reg("AEQ_LOG_SIZE", 4)
        self.reg("CTRL", HW["VHCA_CTRL_ENABLE"])

    def bytes(self):
        return SEPARATOR.join(self.cmds)


def admin_entry(opcode, inline=b""):
    """A struct vhca_admin_cmd: opcode, token, 32 bytes of input."""
    entry = struct.pack("<HHI", opcode, 0, 0x5eed0000 | opcode)
    entry += inline.ljust(32, b"\0") + bytes(24)
    return entry


def mailbox_in(length=4096):
    """A struct vhca_cmd_dma_in naming the seeds' mailbox."""
    return struct.pack("<QII", MAILBOX, length, 0)


def seeds(bar0):
    out = {}
    commands = sorted((v, n) for n, v in HW.items()
                      if n.startswith("VHCA_CMD_") and n != "VHCA_CMD_MAX"
                      and re.match(r"VHCA_CMD_[A-Z_0-9]+$", n)
                      and v < 0x100)
    for opcode, name in commands:
        s = Seed(bar0)
        # The entry, then the mailbox (its words small and non-zero, so
        # handles and sizes are plausible), then whatever else is read.
        s.patterns(admin_entry(opcode, mailbox_in()),
                   struct.pack("<16I", *([1, 4, 1, 0] * 4)),
                   bytes(64))
        s.enable()
        s.reg("ADMQ_PI", 1)
        s.clock_step()
        out["admin-" + name[len("VHCA_CMD_"):].lower()] = s.bytes()

    # Ethernet: a TX descriptor naming a 64-byte frame, an RX buffer.
    s = Seed(bar0)
    s.patterns(struct.pack("<QHHI", BUFFER, 64, 0, 0),
               bytes.fromhex("ffffffffffff525400123456") + b"\x08\x00" +
               bytes(50))
    s.enable()
    s.reg("TX_BASE_LO", TX_BASE)
    s.reg("TX_LOG_SIZE", 4)
    s.reg("RX_BASE_LO", RX_BASE)
    s.reg("RX_LOG_SIZE", 4)
    s.reg("ETH_CTRL", HW["VHCA_ETH_CTRL_TX_ENABLE"] |
          HW["VHCA_ETH_CTRL_RX_ENABLE"])
    s.reg("TX_PI", 1)
    s.reg("RX_PI", 1)
    s.reg("ETH_IRQ_ARM", 1)
    s.clock_step()
    out["eth-rings"] = s.bytes()

    # A user context, then a doorbell of each kind on its page.
    s = Seed(bar0)
    s.patterns(admin_entry(HW["VHCA_CMD_ALLOC_UCTX"]), bytes(64))
    s.enable()
    s.reg("ADMQ_PI", 1)
    for offset in ("VHCA_DB_SQ", "VHCA_DB_RQ", "VHCA_DB_CQ", "VHCA_DB_SRQ"):
        s.write(1, HW[offset], 1 << 32 | 2, quad=True)
    s.clock_step()
    out["doorbells"] = s.bytes()

    # Event queue doorbells: the async EQ's and a completion EQ's.
    s = Seed(bar0)
    s.patterns(admin_entry(HW["VHCA_CMD_NOP"]), bytes(64))
    s.enable()
    s.reg("ADMQ_PI", 1)
    s.reg("AEQ_DB", 1 << 31)
    s.write(0, HW["VHCA_REG_EQ_DB_BASE"] + 4 * 1, 1 << 31)
    s.clock_step()
    out["eq-doorbells"] = s.bytes()

    # Interrupts on: a command's completion event raises vector 0, at RAM
    # first, then at the device's own admin queue doorbell - the
    # re-entrancy class (docs/specs/vhca.rst, "Re-entrancy"), which must
    # be deferred, never run nested.
    for name, addr in (("msix", MAILBOX + 0x800),
                       ("msix-reentry",
                        BAR0_ADDR + HW["VHCA_REG_ADMQ_PI"])):
        s = Seed(bar0)
        s.patterns(admin_entry(HW["VHCA_CMD_NOP"]), bytes(64))
        s.msix_vector(HW["VHCA_VECTOR_ASYNC"], addr, 2)
        s.enable()
        s.reg("AEQ_DB", 1 << 31)
        s.reg("ADMQ_PI", 1)
        s.clock_step()
        out[name] = s.bytes()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--bar0-index", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    for name, data in seeds(args.bar0_index).items():
        with open(os.path.join(args.dir, "seed-" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
