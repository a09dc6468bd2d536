#!/usr/bin/python3
"""Check the layering of the device model's two halves.

hw/vhca holds the QEMU glue and hw/vhca/engine the engine, which runs in
QEMU and, without it, in tests/unit.  Three rules keep the line visible
(docs/developer-guide.rst, "Layout"):

    engine-includes  a file of hw/vhca/engine includes only the C library,
                     the engine's own headers and include/ (vhca_hw.h),
                     libdeflate and the compiler's intrinsics (the
                     VCRC's carry-less multiply): never a QEMU header,
                     nor the glue's
    engine-circles   between the engine's C files (file A calls a
                     function file B defines), no circle of calls takes in
                     more than MAX_CIRCLE files
    receive-order    the receive path's files (RECEIVE_PATH) read top-down,
                     link, network, transport, as a frame travels: a file
                     calls only files listed after it, never one before
                     it (what runs back up goes through a hook table, as
                     transmission goes through VhcaCoreOps.send_frame)

    tests/lint/check_engine_layers.py [--results] [--graph] [--root DIR]

Prints every problem and exits 1 if there is any.  --results prints one
"ok NAME" or "FAIL NAME" line per rule, the form tests/run_all.py counts
as lint tests.  --graph prints the call graph between the engine's files
(one "A -> B: names" line per pair) and its circles.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ENGINE = os.path.join(ROOT, "hw", "vhca", "engine")

MAX_CIRCLE = 6

# The receive path, top-down as a frame travels (docs/developer-guide.rst,
# "A SEND, doorbell to CQE", step 4).  A file may call those listed after
# it, never one listed before it.
RECEIVE_PATH = [
    "vhca-link.c",          # link: the frame's link header; the seam
    "vhca-link-ib.c",       # link: InfiniBand's LRH, VCRC, port, DLID
    "vhca-net.c",           # network: is the packet for one of our GIDs?
    "vhca-demux.c",         # transport: BTH, P_Key, QP; queue on the QP
    "vhca-pass.c",          # transport: the pass runs each QP's receiver
    "vhca-completer.c",     # transport: RC responses, at the requester
    "vhca-resp.c",          # transport: RC and XRC requests
    "vhca-uc.c",            # transport: UC requests
    "vhca-ud.c",            # transport: UD and GSI datagrams
    "vhca-recv.c",          # transport: receive WQEs, scatter, CQE
]

ALLOWED_SYSTEM = {"stdarg.h", "stdbool.h", "stddef.h", "stdint.h",
                  "stdio.h", "stdlib.h", "string.h", "inttypes.h",
                  "libdeflate.h", "immintrin.h"}
ALLOWED_PROJECT = {"vhca_hw.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
# A function definition in QEMU style: type and name at column 0, not
# static, the parameter list then a "{" line at column 0.
DEFINITION = re.compile(r"^(?!static\b)(?:[A-Za-z_][\w \*]*?[\s\*])"
                        r"(vhca_\w+)\(([^;{]*?)\)\s*\n\{", re.M)
IDENT = re.compile(r"\bvhca_\w+\b")


def engine_files(ext):
    return sorted(f for f in os.listdir(ENGINE) if f.endswith(ext))


def read(name):
    with open(os.path.join(ENGINE, name), encoding="utf-8") as f:
        return f.read()


def check_includes():
    problems = []
    headers = set(engine_files(".h"))
    for name in engine_files(".c") + engine_files(".h"):
        for m in INCLUDE.finditer(read(name)):
            kind, path = m.group(1), m.group(2)
            ok = (path in ALLOWED_SYSTEM if kind == "<"
                  else path in headers or path in ALLOWED_PROJECT)
            if not ok:
                problems.append("hw/vhca/engine/%s includes %s%s%s: the "
                                "engine may include only the C library, "
                                "its own headers and include/"
                                % (name, kind, path,
                                   ">" if kind == "<" else '"'))
    return problems


def call_graph():
    """{file: {other file: sorted names it calls there}}"""
    defined = {}
    uses = {}
    for name in engine_files(".c"):
        text = read(name)
        for m in DEFINITION.finditer(text):
            defined.setdefault(m.group(1), name)
        code = STRING.sub('""', COMMENT.sub(" ", text))
        uses[name] = set(IDENT.findall(code))
    graph = {}
    for name, idents in uses.items():
        for ident in idents:
            home = defined.get(ident)
            if home and home != name:
                graph.setdefault(name, {}).setdefault(home, set()).add(ident)
    return {a: {b: sorted(n) for b, n in e.items()} for a, e in graph.items()}


def circles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    nodes = set(graph) | {b for e in graph.values() for b in e}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_circles(graph):
    problems = []
    for c in circles(graph):
        if len(c) > MAX_CIRCLE:
            problems.append("%d engine files call each other in a circle "
                            "(at most %d may): %s"
                            % (len(c), MAX_CIRCLE, ", ".join(c)))
    return problems


def check_receive_order(graph):
    problems = []
    for f in RECEIVE_PATH:
        if not os.path.exists(os.path.join(ENGINE, f)):
            problems.append("hw/vhca/engine/%s, a layer of the receive "
                            "path, does not exist" % f)
    for i, upper in enumerate(RECEIVE_PATH):
        for lower in RECEIVE_PATH[i + 1:]:
            names = graph.get(lower, {}).get(upper)
            if names:
                problems.append("hw/vhca/engine/%s calls back up into %s "
                                "(%s): the receive path runs top-down"
                                % (lower, upper, ", ".join(names)))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", action="store_true")
    parser.add_argument("--graph", action="store_true")
    parser.add_argument("--root", default=ROOT,
                        help="the checkout to check (default: this one)")
    args = parser.parse_args()
    global ENGINE
    ENGINE = os.path.join(args.root, "hw", "vhca", "engine")

    graph = call_graph()
    if args.graph:
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print("%s -> %s: %s" % (a, b, ", ".join(graph[a][b])))
        for c in circles(graph):
            print("circle of %d: %s" % (len(c), ", ".join(c)))
        return 0

    checks = [("engine-includes", check_includes()),
              ("engine-circles", check_circles(graph)),
              ("receive-order", check_receive_order(graph))]
    failed = False
    for name, problems in checks:
        failed = failed or bool(problems)
        if args.results:
            print("%s layers %s" % ("FAIL" if problems else "ok", name))
        for p in problems:
            print(p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
