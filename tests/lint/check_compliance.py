#!/usr/bin/python3
"""Check that docs/compliance.rst names only tests that exist.

The compliance table says, for each IBTA rule, which test checks it.  A
test renamed or removed would leave the table claiming coverage nobody
has, so every reference in it is checked here:

    ``tests/<dir>/<file>.c::<function>``        C: the function is defined
                                                in the file and used there
                                                again (registered, called
                                                or listed in a case table)
    ``tests/guest/<file>.py::<Class>.<method>`` Python: the class has the
                                                method
    ``tests/<dir>/<file>::"<row name>"``        a table-driven test's row:
                                                the quoted string is in
                                                the file

and the file is built and run: a C file under tests/unit or tests/qtest
is listed in its directory's meson.build, a guest module is one unittest
discovers (test_*.py).  Each table row's Status must be one of the words
the document defines, and its Rule a C-rule number or a "(section)" row.

    tests/lint/check_compliance.py [--results] [--doc FILE]

Prints every problem as "docs/compliance.rst:LINE: ..." and exits 1 if
there is any.  --results also prints "ok NAME" or "FAIL NAME" followed by
the problems, the form tests/run_all.py counts as lint tests: one for the
test references, one for the table rows.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

STATUSES = {"tested", "partial", "untested", "differs", "missing", "n/a"}

REF = re.compile(r"``(tests/[\w./-]+)::([^`]+)``")
# C-rule numbers as the IBTA writes them: C9-88, C10-93.1.1, CA17-22,
# o11-1, and ranges "CA17-34 .. CA17-38".
RULE = re.compile(r"^(?:[Co]A?\d+-\d+(?:\.\d+)*)"
                  r"(?:(?:,| \.\.) [Co]A?\d+-\d+(?:\.\d+)*)*$")


def c_function_ok(text, name):
    """Is @name defined in this C source, and used again besides?"""
    definition = re.compile(r"^(?:static\s+)?(?:const\s+)?[\w\s\*]*?\b"
                            + re.escape(name) + r"\s*\([^;]*$", re.M)
    if not definition.search(text):
        return "no function %s() is defined in it" % name
    uses = len(re.findall(r"\b%s\b" % re.escape(name), text)) - 1
    if name.startswith("s_"):
        # A scenario of a case table, named there without its s_ prefix
        # (test-vhca-obs.c's C(counter, scenario, ...) pastes it on).
        uses += len(re.findall(r"\(\s*\w+,\s*%s\b" % re.escape(name[2:]),
                               text))
    if uses < 1:
        return "%s() is defined but never registered or called" % name
    return None


def py_method_ok(text, target):
    cls, _, meth = target.partition(".")
    m = re.search(r"^class %s\b.*?:\n((?:[ \t]+.*\n|\n)*)" % re.escape(cls),
                  text, re.M)
    if not m:
        return "no class %s in it" % cls
    if meth and not re.search(r"^    def %s\(" % re.escape(meth), m.group(1),
                              re.M):
        return "class %s has no method %s" % (cls, meth)
    return None


def built(path):
    """Is the test file built and run by its suite?"""
    directory, base = os.path.split(path)
    if directory in ("tests/unit", "tests/qtest") and base.endswith(".c"):
        with open(os.path.join(ROOT, directory, "meson.build")) as f:
            build = f.read()
        stem = base[:-2]
        if not re.search(r"'%s(?:\.c)?'" % re.escape(stem), build):
            return "%s is not in %s/meson.build" % (base, directory)
    elif directory == "tests/guest":
        if not re.match(r"test_\w+\.py$", base):
            return "%s is not a module unittest discovers" % base
    elif directory != "tests/common":
        return "%s is not in a test suite's directory" % path
    return None


def check_reference(path, target):
    full = os.path.join(ROOT, path)
    if not os.path.isfile(full):
        return "%s does not exist" % path
    err = built(path)
    if err:
        return err
    with open(full) as f:
        text = f.read()
    if target.startswith('"'):
        if not target.endswith('"') or target not in text:
            return "%s holds no string %s" % (path, target)
        return None
    if path.endswith(".py"):
        return py_method_ok(text, target)
    if not re.match(r"^\w+$", target):
        return "%s: a C test is named by its function, not %r" % (path,
                                                                  target)
    return c_function_ok(text, target)


def check_rows(lines, rel):
    """Every list-table row: a known Status, a Rule that is a number or a
    section row.  Rows are '* - Rule', '- Requirement', '- Status', ..."""
    problems = []
    rows = 0
    i = 0
    while i < len(lines):
        m = re.match(r"^   \* - (.*)$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        cells = [m.group(1)]
        i += 1
        while i < len(lines) and not re.match(r"^   \* - ", lines[i]) \
                and (lines[i].startswith("     ") or not lines[i].strip()):
            c = re.match(r"^     - (.*)$", lines[i])
            if c:
                cells.append(c.group(1))
            else:
                cells[-1] += " " + lines[i].strip()
            i += 1
        if cells[0] == "Rule":
            continue
        rows += 1
        where = "%s:%d" % (rel, start + 1)
        if len(cells) != 4:
            problems.append("%s: row has %d cells, not 4" % (where,
                                                            len(cells)))
            continue
        rule, status = cells[0].strip(), cells[2].strip()
        if status not in STATUSES:
            problems.append("%s: status %r is not one of %s"
                            % (where, status, ", ".join(sorted(STATUSES))))
        if "(section" not in rule and not RULE.match(rule) and \
                not re.match(r"^[\d.]+(?:, [\d.]+)* / [Co]A?\d+-\d+$", rule):
            problems.append("%s: rule %r is neither a C-rule number nor "
                            "marked *(section)*" % (where, rule))
    if not rows:
        problems.append("%s: no table rows found" % rel)
    return problems, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", action="store_true")
    parser.add_argument("--doc", default=os.path.join(ROOT,
                                                      "docs/compliance.rst"))
    args = parser.parse_args()
    rel = os.path.relpath(args.doc, ROOT)
    with open(args.doc) as f:
        lines = f.read().splitlines()

    ref_problems = []
    refs = 0
    for n, line in enumerate(lines, 1):
        for m in REF.finditer(line):
            if "<" in m.group(2):
                continue            # the syntax explained, not a test
            refs += 1
            err = check_reference(m.group(1), m.group(2))
            if err:
                ref_problems.append("%s:%d: %s" % (rel, n, err))
    if not refs:
        ref_problems.append("%s: names no test at all" % rel)
    row_problems, rows = check_rows(lines, rel)

    for p in ref_problems + row_problems:
        print(p)
    if args.results:
        for name, problems in (("test references", ref_problems),
                               ("table rows", row_problems)):
            print("%s compliance %s" % ("FAIL" if problems else "ok", name))
            for p in problems:
                print("    " + p)
    return 1 if ref_problems or row_problems else 0


if __name__ == "__main__":
    sys.exit(main())
