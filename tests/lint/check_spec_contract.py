#!/usr/bin/python3
"""Check that the tables of docs/specs/vhca.rst agree with include/vhca_hw.h.

The spec is the contract: every enum, every set of register offsets, bits
and constants, and the layout of every shared structure the header
defines has a table in the spec, and this script compares them.  Values
come from the header itself: a small C program, compiled at test time,
includes it and prints every macro's and enumerator's value, the name
tables (vhca_counter_name() ...) and sizeof/offsetof of each struct field.

A table is tied to its subject by an rst comment right before it:

    .. contract: wc-status

(invisible in the rendered document).  TABLES below says, for each id,
what the table describes and which columns hold the name and the value.
Every ``struct vhca_*`` needs a table marked ``.. contract: struct NAME``
whose preceding text says its size (``struct vhca_cqe``, 32 bytes), with
the columns Offset, Size and Field.  Object-like macros that no other table
claims must be rows of the "constants" table.

    tests/lint/check_spec_contract.py [--results] [--spec FILE] [--header FILE]

Prints every mismatch as "docs/specs/vhca.rst:LINE: [table] ..." and exits 1
if there is any.  --results also prints "ok TABLE" or "FAIL TABLE" for each
table, the form tests/run_all.py counts as one lint test per table.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What each marked table describes.
#   kind     "enum": the enumerators of `enum` (without *_MAX);
#            "macros": the object-like macros starting with one of `prefixes`
#            (less `exclude`); "constants": every macro no other table claims.
#   name     column title of the enumerator/macro name; written with or
#            without its prefix (and with or without VHCA_).
#   value    column title of its value; bits=True: a bit number "3" or a
#            range "0-23" standing for the mask; plus=True: "0x200+" is
#            read as 0x200 (a register array).
#   group    optional column naming a register; `groups` maps its text to
#            the prefix the row's name has.
#   strings  optional (column, C function): the column holds the function's
#            string for the row's value (vhca_counter_name() ...).
#   access   optional column of RO/RW/WO, compared with the header comment.
#   counter  optional column naming the counter VHCA_CNT_DROP(value).
TABLES = [
    dict(id="registers", kind="macros", prefixes=["VHCA_REG_"],
         name="Name", value="Offset", plus=True, access="Acc."),
    dict(id="register-bits", kind="macros", bits=True,
         prefixes=["VHCA_CAP_", "VHCA_CTRL_", "VHCA_STATUS_",
                   "VHCA_ETH_CTRL_", "VHCA_EQ_DB_", "VHCA_CQ_"],
         exclude=["VHCA_CTRL_BAR_SIZE", "VHCA_CQ_MAX_LOG_SIZE"],
         name="Name", value="Bits", group="Register",
         groups={"CAPS": "VHCA_CAP_", "CTRL": "VHCA_CTRL_",
                 "STATUS": "VHCA_STATUS_", "ETH_CTRL": "VHCA_ETH_CTRL_",
                 "AEQ_DB": "VHCA_EQ_DB_", "CQ doorbell": "VHCA_CQ_"}),
    dict(id="reg-errors", kind="enum", enum="vhca_reg_error",
         name="Error", value="Value"),
    dict(id="admin-opcodes", kind="enum", enum="vhca_admin_opcode",
         name="Command", value="Op",
         strings=("Command", "vhca_admin_opcode_name")),
    dict(id="admin-status", kind="enum", enum="vhca_admin_status",
         name="Status", value="Value",
         strings=("Status", "vhca_admin_status_name")),
    dict(id="counters", kind="enum", enum="vhca_counter",
         name="Counter", value="#", strings=("Name", "vhca_counter_name")),
    dict(id="drop-reasons", kind="enum", enum="vhca_drop_reason",
         name="Reason", value="#",
         strings=("Trace name", "vhca_drop_reason_name"), counter="Counter"),
    dict(id="cc-params", kind="enum", enum="vhca_cc_param",
         prefix="VHCA_CC_PARAM_", name="Parameter", value="#"),
    dict(id="cc-counters", kind="enum", enum="vhca_cc_counter",
         prefix="VHCA_CC_CNT_", name="Counter", value="#",
         strings=("Name", "vhca_cc_counter_name")),
    dict(id="pfc-counters", kind="enum", enum="vhca_pfc_counter",
         prefix="VHCA_PFC_CNT_", name="Counter", value="#",
         strings=("Name", "vhca_pfc_counter_name")),
    dict(id="eqe-types", kind="enum", enum="vhca_eqe_type",
         name="Event", value="Type"),
    dict(id="qp-events", kind="enum", enum="vhca_qp_event",
         name="Event", value="Value"),
    dict(id="port-mgmt-events", kind="enum", enum="vhca_port_mgmt_event",
         prefix="VHCA_EVENT_", name="Event", value="Value"),
    dict(id="srq-events", kind="enum", enum="vhca_srq_event",
         prefix="VHCA_EVENT_", name="Event", value="Value"),
    dict(id="srq-types", kind="enum", enum="vhca_srq_type",
         prefix="VHCA_SRQT_", name="Type", value="Value"),
    dict(id="mw-types", kind="enum", enum="vhca_mw_type",
         prefix="VHCA_MW_", name="Type", value="Value"),
    dict(id="srq-attr-mask", kind="macros", bits=True,
         prefixes=["VHCA_SRQ_"], name="Attribute", value="Bit"),
    dict(id="port-states", kind="enum", enum="vhca_port_state",
         prefix="VHCA_PORT_", name="State", value="Value"),
    dict(id="port-phys-states", kind="enum", enum="vhca_port_phys_state",
         prefix="VHCA_PORT_PHYS_", name="State", value="Value"),
    dict(id="ib-mtu", kind="enum", enum="vhca_ib_mtu",
         prefix="VHCA_IB_MTU_", name="MTU", value="Value"),
    dict(id="gid-types", kind="enum", enum="vhca_gid_type",
         prefix="VHCA_GID_TYPE_", name="Type", value="Value"),
    dict(id="mad-results", kind="enum", enum="vhca_mad_result",
         prefix="VHCA_MAD_RESULT_", name="Result", value="Value"),
    dict(id="access-flags", kind="macros", bits=True,
         prefixes=["VHCA_ACCESS_"], name="Flag", value="Bit"),
    dict(id="mr-flags", kind="macros", bits=True, prefixes=["VHCA_MR_"],
         exclude=["VHCA_MR_MIN_PAGE_SHIFT", "VHCA_MR_MAX_PAGE_SHIFT"],
         name="Flag", value="Bit"),
    dict(id="qp-types", kind="enum", enum="vhca_qp_type",
         name="Type", value="Value"),
    dict(id="qp-states", kind="enum", enum="vhca_qp_state",
         name="State", value="Value"),
    dict(id="qp-attr-mask", kind="macros", bits=True, prefixes=["VHCA_QP_"],
         name="Attribute", value="Bit"),
    dict(id="wqe-opcodes", kind="enum", enum="vhca_wqe_opcode",
         name="Opcode", value="Value"),
    dict(id="flush-types", kind="enum", enum="vhca_flush_type",
         prefix="VHCA_FLUSH_", name="Type", value="Value"),
    dict(id="flush-levels", kind="enum", enum="vhca_flush_level",
         prefix="VHCA_FLUSH_", name="Level", value="Value"),
    dict(id="device-caps", kind="macros", bits=True,
         prefixes=["VHCA_DEV_CAP_"], name="Capability", value="Bit"),
    dict(id="wqe-flags", kind="macros", bits=True, prefixes=["VHCA_WQE_"],
         name="Flag", value="Bit"),
    dict(id="cqe-opcodes", kind="enum", enum="vhca_cqe_opcode",
         name="Opcode", value="Value"),
    dict(id="cqe-flags", kind="macros", bits=True, prefixes=["VHCA_CQE_"],
         name="Flag", value="Bit"),
    dict(id="wc-status", kind="enum", enum="vhca_wc_status",
         name="Status", value="Value"),
    dict(id="vendor-errors", kind="enum", enum="vhca_vendor_err",
         name="Name", value="Value"),
    dict(id="eth-desc-flags", kind="macros", bits=True,
         prefixes=["VHCA_ETH_DESC_"], name="Flag", value="Bit"),
    dict(id="rx-filter-flags", kind="macros", bits=True,
         prefixes=["VHCA_RX_FILTER_"], name="Flag", value="Bit"),
    dict(id="doorbells", kind="macros", prefixes=["VHCA_DB_"],
         exclude=["VHCA_DB_PAGE_SIZE", "VHCA_DB_PAGE_KERNEL_NONE"],
         name="Doorbell", value="Offset"),
    dict(id="constants", kind="constants", prefixes=["VHCA_"],
         name="Name", value="Value"),
]

# Function-like macros a table covers, and the argument they are read at.
FUNCTION_MACROS = {"VHCA_REG_EQ_DB": "0",      # registers: the first EQ_DB
                   "VHCA_CNT_DROP": None}      # drop-reasons: Counter column

MARKER = re.compile(r"^\.\. contract:\s*(.+?)\s*$")
BORDER = re.compile(r"^=+( +=+)*\s*$")


class Problems:
    """Mismatches, by table id, as "FILE:LINE: [table] text" lines."""

    def __init__(self, spec_name):
        self.spec_name = spec_name
        self.by_table = {}

    def add(self, table, line, text):
        self.by_table.setdefault(table, []).append(
            "%s:%d: [%s] %s" % (self.spec_name, line, table, text))


# --------------------------------------------------------------------------
# The header, through the compiler
# --------------------------------------------------------------------------

def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def header_enums(text):
    """{enum name: [enumerator, ...]} in declaration order."""
    enums = {}
    for m in re.finditer(r"\benum\s+(vhca_\w+)\s*\{(.*?)\}", text, re.S):
        names = []
        for item in m.group(2).split(","):
            im = re.match(r"\s*([A-Za-z_]\w*)", item)
            if im:
                names.append(im.group(1))
        enums[m.group(1)] = names
    return enums


def header_structs(text):
    """{struct name: [field, ...]}, members of anonymous unions flattened."""
    structs = {}
    for m in re.finditer(r"\bstruct\s+(vhca_\w+)\s*\{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[m.end():i - 1]
        body = re.sub(r"\b(?:union|struct)\s*\{|\}", " ", body)
        fields = []
        for decl in body.split(";"):
            dm = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", decl.strip())
            if dm:
                fields.append(dm.group(1))
        structs[m.group(1)] = fields
    return structs


def header_name_functions(text, enums):
    """{function: enum} for `const char *vhca_X_name(unsigned int)` whose
    table is sized by one of the enum's enumerators."""
    funcs = {}
    for m in re.finditer(r"const char \*(vhca_\w+_name)\s*\(unsigned int \w+\)"
                         r"\s*\{.*?names\[(\w+)\]", text, re.S):
        for enum, names in enums.items():
            if m.group(2) in names:
                funcs[m.group(1)] = enum
    return funcs


def header_access(raw):
    """{register macro: RO/RW/WO} from the comment on its #define line."""
    access = {}
    for m in re.finditer(r"^#define\s+(VHCA_REG_\w+)(?:\([^)]*\))?[^\n]*?"
                         r"/\*\s*(RO|RW|WO)\b", raw, re.M):
        access[m.group(1)] = m.group(2)
    return access


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)


class Header:
    """What include/vhca_hw.h defines, as the compiler sees it."""

    def __init__(self, path):
        self.path = path
        with open(path) as f:
            raw = f.read()
        text = strip_comments(raw)
        self.enums = header_enums(text)
        self.structs = header_structs(text)
        self.name_functions = header_name_functions(text, self.enums)
        self.access = header_access(raw)
        cc = shlex.split(os.environ.get("CC") or "cc")
        if not shutil.which(cc[0]):
            raise SystemExit("check_spec_contract: no C compiler (%s)" % cc[0])
        incdir, base = os.path.split(os.path.abspath(path))

        # Every object-like VHCA_ macro with a value, and the function-like
        # ones, from the preprocessor.
        proc = run(cc + ["-std=gnu11", "-dM", "-E", "-I", incdir, "-x", "c",
                    os.path.abspath(path)])
        if proc.returncode:
            raise SystemExit("check_spec_contract: %s does not preprocess:\n%s"
                             % (path, proc.stdout))
        self.macros = {}
        self.function_macros = set()
        for line in proc.stdout.splitlines():
            m = re.match(r"#define (VHCA_\w+)(\([^)]*\))?(?: (.*))?$", line)
            if not m:
                continue
            if m.group(2):
                self.function_macros.add(m.group(1))
            elif (m.group(3) or "").strip():
                self.macros[m.group(1)] = None

        # The probe: print every value the tables may name.
        out = ['#include <stddef.h>', '#include <stdio.h>',
               '#include "%s"' % base, 'int main(void)', '{']
        for name in sorted(self.macros):
            out.append('printf("M %s %%llu\\n", (unsigned long long)(%s));'
                       % (name, name))
        for name, arg in FUNCTION_MACROS.items():
            if arg is not None and name in self.function_macros:
                out.append('printf("M %s %%llu\\n", (unsigned long long)%s(%s));'
                           % (name, name, arg))
        for enum, names in self.enums.items():
            for name in names:
                out.append('printf("E %s %%lld\\n", (long long)(%s));'
                           % (name, name))
        for func, enum in self.name_functions.items():
            for name in self.enums[enum]:
                out.append('printf("N %s %s %%s\\n", %s(%s));'
                           % (func, name, func, name))
        if "VHCA_CNT_DROP" in self.function_macros and \
                "vhca_drop_reason" in self.enums:
            for name in self.enums["vhca_drop_reason"]:
                out.append('printf("D %s %%lld\\n", (long long)VHCA_CNT_DROP(%s));'
                           % (name, name))
        for struct, fields in self.structs.items():
            out.append('printf("S %s %%zu\\n", sizeof(struct %s));'
                       % (struct, struct))
            for field in fields:
                out.append('printf("F %s %s %%zu %%zu\\n", offsetof(struct %s, %s),'
                           ' sizeof(((struct %s *)0)->%s));'
                           % (struct, field, struct, field, struct, field))
        out += ['return 0;', '}', '']

        tmp = tempfile.mkdtemp(prefix="vhca-contract-")
        try:
            src = os.path.join(tmp, "probe.c")
            exe = os.path.join(tmp, "probe")
            with open(src, "w") as f:
                f.write("\n".join(out))
            proc = run(cc + ["-std=gnu11", "-Wall", "-Werror", "-I", incdir,
                        "-o", exe, src])
            if proc.returncode:
                raise SystemExit("check_spec_contract: the probe of %s does "
                                 "not compile:\n%s" % (path, proc.stdout))
            proc = run([exe])
            if proc.returncode:
                raise SystemExit("check_spec_contract: the probe failed:\n%s"
                                 % proc.stdout)
        finally:
            shutil.rmtree(tmp)

        self.values = {}            # enumerator -> value
        self.strings = {}           # (function, enumerator) -> string
        self.drop_counter = {}      # drop reason -> VHCA_CNT_DROP() value
        self.sizes = {}             # struct -> sizeof
        self.fields = {}            # (struct, field) -> (offset, size)
        for line in proc.stdout.splitlines():
            kind, rest = line.split(" ", 1)
            if kind == "M":
                name, value = rest.split()
                self.macros[name] = int(value)
            elif kind == "E":
                name, value = rest.split()
                self.values[name] = int(value)
            elif kind == "N":
                func, name, string = rest.split(" ", 2)
                self.strings[(func, name)] = string
            elif kind == "D":
                name, value = rest.split()
                self.drop_counter[name] = int(value)
            elif kind == "S":
                name, value = rest.split()
                self.sizes[name] = int(value)
            elif kind == "F":
                struct, field, offset, size = rest.split()
                self.fields[(struct, field)] = (int(offset), int(size))

    def enum_values(self, enum):
        return {n: self.values[n] for n in self.enums.get(enum, [])}


# --------------------------------------------------------------------------
# The spec's tables
# --------------------------------------------------------------------------

class Table:
    def __init__(self, marker_line, preamble, titles, rows, line):
        self.marker_line = marker_line
        self.preamble = preamble    # text between the marker and the table
        self.titles = titles        # column titles
        self.rows = rows            # [(line number, [cell, ...])]
        self.line = line            # line of the table's first border


def parse_simple_table(lines, start):
    """The simple table whose top border is lines[start] (0-based).  Returns
    (titles, [(line number, cells)]), continuation lines (first column
    empty) joined to their row."""
    spans = [m.span() for m in re.finditer(r"=+", lines[start])]
    starts = [s for s, _ in spans]

    def cells(line):
        out = []
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(line)
            out.append(line[s:end].strip())
        return out

    borders = [start]
    i = start + 1
    while i < len(lines):
        if BORDER.match(lines[i]):
            borders.append(i)
            if i + 1 >= len(lines) or not lines[i + 1].strip():
                break
        i += 1
    if len(borders) >= 3:
        head = range(borders[0] + 1, borders[1])
        body = range(borders[1] + 1, borders[-1])
    else:
        head = range(0)
        body = range(borders[0] + 1, borders[-1])
    titles = [""] * len(starts)
    for n in head:
        titles = [(a + " " + b).strip() for a, b in zip(titles, cells(lines[n]))]
    rows = []
    for n in body:
        if not lines[n].strip():
            continue
        row = cells(lines[n])
        if row[0] or not rows:
            rows.append((n + 1, row))
        else:
            prev = rows[-1][1]
            for k, text in enumerate(row):
                if text:
                    prev[k] = (prev[k] + " " + text).strip()
    return titles, rows


def spec_tables(lines):
    """{marker id: [Table, ...]} for every marked table."""
    tables = {}
    for n, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        j = n + 1
        while j < len(lines) and not BORDER.match(lines[j]) \
                and not MARKER.match(lines[j]):
            j += 1
        if j >= len(lines) or MARKER.match(lines[j]):
            tables.setdefault(m.group(1), []).append(
                Table(n + 1, "", [], [], n + 1))
            continue
        titles, rows = parse_simple_table(lines, j)
        preamble = " ".join(l.strip() for l in lines[n + 1:j])
        tables.setdefault(m.group(1), []).append(
            Table(n + 1, preamble, titles, rows, j + 1))
    return tables


def literal(cell):
    """A cell's text without rst inline markup."""
    return re.sub(r"``|\*", "", cell).strip()


def parse_int(cell, allow_plus=False):
    m = re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)(\+?)", literal(cell))
    if not m or (m.group(2) and not allow_plus):
        return None
    return int(m.group(1), 16 if m.group(1).startswith("0x") else 10)


def parse_bits(cell):
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", literal(cell))
    if not m:
        return None
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if hi < lo:
        return None
    return ((1 << (hi + 1)) - 1) & ~((1 << lo) - 1)


def bits_text(mask):
    lo = (mask & -mask).bit_length() - 1
    hi = mask.bit_length() - 1
    if mask != ((1 << (hi + 1)) - 1) & ~((1 << lo) - 1):
        return "0x%x" % mask
    return str(lo) if lo == hi else "%d-%d" % (lo, hi)


def common_prefix(names):
    prefix = os.path.commonprefix(names)
    return prefix[:prefix.rfind("_") + 1] if "_" in prefix else ""


def resolve(cell, prefixes, known):
    """The one name of `known` that `cell` spells, with or without one of
    `prefixes` or VHCA_; None if none or several."""
    name = literal(cell)
    if not re.fullmatch(r"\w+", name):
        return None
    found = {c for c in [name, "VHCA_" + name] + [p + name for p in prefixes]
             if c in known}
    return found.pop() if len(found) == 1 else None


def column(table, title, problems, tid):
    if title in table.titles:
        return table.titles.index(title)
    problems.add(tid, table.line, "no column %r (columns: %s)"
                 % (title, ", ".join(repr(t) for t in table.titles)))
    return None


# --------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------

def claims(header):
    """The macros each "macros" table claims; the rest go to constants."""
    claimed = {}
    for t in TABLES:
        if t["kind"] != "macros":
            continue
        names = {m for m in header.macros
                 if any(m.startswith(p) for p in t["prefixes"])
                 and m not in t.get("exclude", [])}
        names |= {m for m in FUNCTION_MACROS
                  if FUNCTION_MACROS[m] is not None and m in header.macros
                  and any(m.startswith(p) for p in t["prefixes"])}
        for other, theirs in claimed.items():
            if names & theirs:
                raise SystemExit("check_spec_contract: tables %s and %s both "
                                 "claim %s" % (other, t["id"],
                                               ", ".join(sorted(names & theirs))))
        claimed[t["id"]] = names
    rest = set(header.macros) - set().union(*claimed.values())
    rest -= set(FUNCTION_MACROS)
    for t in TABLES:
        if t["kind"] == "constants":
            claimed[t["id"]] = rest
    return claimed


def check_values(t, tables, header, known, expected, problems):
    """Rows of an enum, macros or constants table: name -> value."""
    tid = t["id"]
    seen = {}
    for table in tables:
        ncol = column(table, t["name"], problems, tid)
        vcol = column(table, t["value"], problems, tid)
        gcol = column(table, t["group"], problems, tid) if "group" in t else None
        scol = (column(table, t["strings"][0], problems, tid)
                if "strings" in t else None)
        ccol = column(table, t["counter"], problems, tid) if "counter" in t else None
        acol = column(table, t["access"], problems, tid) if "access" in t else None
        if ncol is None or vcol is None:
            continue
        for line, cells in table.rows:
            prefixes = t.get("prefixes", [])
            if "prefix" in t:
                prefixes = [t["prefix"]]
            if gcol is not None:
                group = literal(cells[gcol])
                if group not in t["groups"]:
                    problems.add(tid, line, "register %r is not one of %s"
                                 % (group, ", ".join(t["groups"])))
                    continue
                prefixes = [t["groups"][group]]
            name = resolve(cells[ncol], prefixes, known)
            if name is None:
                problems.add(tid, line, "%r names nothing the header defines "
                             "here (%s)" % (literal(cells[ncol]),
                                            " or ".join(p + "*" for p in prefixes)))
                continue
            if name in seen:
                problems.add(tid, line, "%s again (first at line %d)"
                             % (name, seen[name]))
                continue
            seen[name] = line
            want = known[name]
            if t.get("bits"):
                got = parse_bits(cells[vcol])
                shown = bits_text(want)
            else:
                got = parse_int(cells[vcol], allow_plus=t.get("plus", False))
                shown = "0x%x" % want if literal(cells[vcol]).startswith("0x") \
                    else str(want)
            if got is None:
                problems.add(tid, line, "%s: cannot read %r %r"
                             % (name, t["value"], cells[vcol]))
            elif got != want:
                problems.add(tid, line, "%s is %s in the header, %s here"
                             % (name, shown, literal(cells[vcol])))
            if scol is not None:
                func = t["strings"][1]
                string = header.strings.get((func, name))
                if literal(cells[scol]) != string:
                    problems.add(tid, line, "%s: %s() says %r, here %r"
                                 % (name, func, string, literal(cells[scol])))
            if ccol is not None:
                counter = resolve(cells[ccol], ["VHCA_CNT_"],
                                  header.enum_values("vhca_counter"))
                want_cnt = header.drop_counter.get(name)
                if counter is None or header.values[counter] != want_cnt:
                    names = [n for n in header.enums.get("vhca_counter", [])
                             if header.values[n] == want_cnt]
                    problems.add(tid, line, "%s counts in %s (VHCA_CNT_DROP), "
                                 "here %r" % (name, names[0] if names else "?",
                                              literal(cells[ccol])))
            if acol is not None and name in header.access:
                if literal(cells[acol]) != header.access[name]:
                    problems.add(tid, line, "%s is %s in the header, %r here"
                                 % (name, header.access[name],
                                    literal(cells[acol])))
    for name in sorted(set(expected) - set(seen), key=lambda n: known[n]):
        value = known[name]
        shown = bits_text(value) if t.get("bits") else "%d = 0x%x" % (value, value)
        problems.add(tid, tables[0].line if tables else 1,
                     "no row for %s (%s %s)" % (name, t["value"], shown))


def check_struct(struct, tables, header, problems):
    tid = "struct " + struct
    fields = header.structs[struct]
    seen = {}
    for table in tables:
        size = header.sizes[struct]
        m = re.search(r"(\d+) bytes", table.preamble)
        if "``struct %s``" % struct not in table.preamble or not m:
            problems.add(tid, table.marker_line, "the text before the table "
                         "must name ``struct %s`` and its size (%d bytes)"
                         % (struct, size))
        elif int(m.group(1)) != size:
            problems.add(tid, table.marker_line, "struct %s is %d bytes in the "
                         "header, %s here" % (struct, size, m.group(1)))
        ocol = column(table, "Offset", problems, tid)
        scol = column(table, "Size", problems, tid)
        fcol = column(table, "Field", problems, tid)
        if None in (ocol, scol, fcol):
            continue
        for line, cells in table.rows:
            fm = re.match(r"([A-Za-z_]\w*)", literal(cells[fcol]))
            field = fm.group(1) if fm else None
            if field not in fields:
                problems.add(tid, line, "struct %s has no field %r"
                             % (struct, literal(cells[fcol])))
                continue
            if field in seen:
                problems.add(tid, line, "%s again (first at line %d)"
                             % (field, seen[field]))
                continue
            seen[field] = line
            offset, fsize = header.fields[(struct, field)]
            got_off = parse_int(cells[ocol])
            got_size = parse_int(cells[scol])
            if got_off != offset:
                problems.add(tid, line, "%s is at offset %d in the header, "
                             "%s here" % (field, offset, literal(cells[ocol])))
            if got_size != fsize:
                problems.add(tid, line, "%s is %d bytes in the header, %s "
                             "here" % (field, fsize, literal(cells[scol])))
    for field in fields:
        if field not in seen:
            offset, fsize = header.fields[(struct, field)]
            problems.add(tid, tables[0].line if tables else 1,
                         "no row for %s (offset %d, %d bytes)"
                         % (field, offset, fsize))


def check(spec_path, header_path, spec_name):
    header = Header(header_path)
    with open(spec_path) as f:
        lines = f.read().split("\n")
    tables = spec_tables(lines)
    problems = Problems(spec_name)
    claimed = claims(header)
    ids = []

    for t in TABLES:
        tid = t["id"]
        ids.append(tid)
        marked = tables.get(tid)
        if not marked:
            problems.add(tid, 1, "no table marked '.. contract: %s'" % tid)
            continue
        if t["kind"] == "enum":
            enum = t["enum"]
            if enum not in header.enums:
                problems.add(tid, marked[0].marker_line,
                             "the header has no enum %s" % enum)
                continue
            names = [n for n in header.enums[enum] if not n.endswith("_MAX")]
            t.setdefault("prefix", common_prefix(names))
            known = {n: header.values[n] for n in names}
            check_values(t, marked, header, known, names, problems)
        else:
            known = {n: header.macros[n] for n in claimed[tid]}
            check_values(t, marked, header, known, claimed[tid], problems)

    # Every enum has a table, every struct a layout table.
    covered = {t["enum"] for t in TABLES if t["kind"] == "enum"}
    for enum in header.enums:
        if enum not in covered:
            problems.add("coverage", 1, "enum %s has no table: add one to the "
                         "spec and to TABLES in %s" % (enum,
                                                       os.path.relpath(__file__, ROOT)))
    ids.append("coverage")
    for struct in header.structs:
        tid = "struct " + struct
        ids.append(tid)
        if tid not in tables:
            problems.add(tid, 1, "no layout table marked '.. contract: %s'"
                         % tid)
            continue
        check_struct(struct, tables[tid], header, problems)
    for tid, marked in tables.items():
        if tid not in ids:
            problems.add("coverage", marked[0].marker_line,
                         "'.. contract: %s' names no table this script knows"
                         % tid)
    return ids, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", default=os.path.join(ROOT, "docs/specs/vhca.rst"))
    parser.add_argument("--header", default=os.path.join(ROOT, "include/vhca_hw.h"))
    parser.add_argument("--results", action="store_true",
                        help='print "ok TABLE" / "FAIL TABLE" for each table')
    args = parser.parse_args()
    spec_name = os.path.relpath(args.spec, ROOT) \
        if os.path.abspath(args.spec).startswith(ROOT + os.sep) else args.spec
    ids, problems = check(args.spec, args.header, spec_name)
    failed = 0
    for tid in ids:
        lines = problems.by_table.get(tid, [])
        failed += bool(lines)
        if args.results:
            print("%s %s" % ("FAIL" if lines else "ok", tid))
        for line in lines:
            print(line)
    if not args.results:
        print("%d tables checked, %d disagree with %s"
              % (len(ids), failed, os.path.relpath(args.header, ROOT)),
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
