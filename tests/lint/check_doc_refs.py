#!/usr/bin/python3
"""What README.md and docs/ cite must exist in the tree.

Three checks, each a line "ok NAME" or "FAIL NAME" followed by what is
wrong, indented:

  doc refs FILE       every vhca_* / vhcad_* identifier FILE names occurs
                      in the code (a pattern such as ``vhca_err_*``: some
                      identifier with that prefix), and every path of the
                      project's own it names (hw/vhca/..., tests/unit/...,
                      scripts/..., docs/...) exists (globs allowed)
  doc limits summary  README.md's "Limits today" says what the summary at
                      the top of docs/limits.rst says, word for word: the
                      README copies it, so the two cannot contradict

    tests/lint/check_doc_refs.py [--root DIR] [FILE...]

FILE defaults to README.md and every docs/**/*.rst under DIR (default:
this checkout).  Exits 1 if a check fails.  tests/lint/test_check_doc_refs.py
shows it failing on a renamed function.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

# The identifiers of the project: functions, types, trace events, hooks.
IDENT = re.compile(r"(?<![\w-])(vhcad?_[a-z0-9_]*[a-z0-9])(_?\*)?")
# Paths of the project's own, from the top of the tree.  A path that
# starts elsewhere (QEMU's tests/qtest/fuzz/..., the kernel's include/uapi,
# a cache's /var/cache/vhca/...) is not the tree's and is not checked.
PATH = re.compile(
    r"(?<![\w/.$-])((?:hw/vhca|drivers/vhca|provider/vhca|include/vhca"
    r"|tests/(?:unit|guest|lint|common|data)|tests/qtest/vhca-"
    r"|scripts/|images/|docs/|qemu-patches/|\.ci/)[\w.*+/-]*)")
# Paths of the same shape that are other projects' (QEMU's, the kernel's).
FOREIGN = ("docs/devel/", "scripts/checkpatch.pl")
# Where identifiers are looked for: the code and scripts, not the docs.
CODE_DIRS = ("hw", "drivers", "provider", "include", "tests", "scripts",
             "images", "qemu-patches", ".ci", "meson.build")


def tree_files(root):
    """The files git tracks and the untracked ones it does not ignore."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-co",
                          "--exclude-standard"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return [f for f in out.splitlines() if os.path.isfile(
        os.path.join(root, f))]


def code_words(root, files):
    words = set()
    for f in files:
        if not f.startswith(CODE_DIRS) or "fuzz-corpus" in f:
            continue
        try:
            with open(os.path.join(root, f), errors="replace") as fh:
                words.update(re.findall(r"[A-Za-z0-9_]+", fh.read()))
        except OSError:
            continue
    return words


def path_exists(root, path):
    """A path, a glob, or the start of a name (qemu-patches/0006, a
    program named after its source, hw/vhca/engine/vhca-core for .c and
    .h); a placeholder in capitals (crash-NAME, qemu-KEY) stands for any."""
    path = path.rstrip(".,:;/")
    if path.startswith(FOREIGN) or re.search(r"[A-Z]{3,}", path):
        return True
    full = os.path.join(root, path)
    return bool(glob.glob(full) or glob.glob(full + "*"))


def check_refs(root, doc, words, word_list):
    with open(os.path.join(root, doc)) as f:
        text = f.read()
    problems = []
    for m in sorted(set(IDENT.findall(text))):
        name, star = m
        if star:
            if not any(w.startswith(name) for w in word_list):
                problems.append("no identifier starts with %s" % name)
        elif name not in words:
            problems.append("%s is not in the code" % name)
    for path in sorted(set(PATH.findall(text))):
        if not path_exists(root, path):
            problems.append("%s does not exist" % path.rstrip(".,:;"))
    return problems


def plain(text):
    """Prose without markup: rst ``x`` and md `x`, links, line breaks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("``", "`")
    return " ".join(text.split())


def limits_summary(root):
    """The paragraph under "In short" in docs/limits.rst."""
    with open(os.path.join(root, "docs/limits.rst")) as f:
        text = f.read()
    m = re.search(r"^In short\n=+\n\n(.*?)\n\n", text, re.M | re.S)
    return m.group(1) if m else None


def readme_limits(root):
    with open(os.path.join(root, "README.md")) as f:
        text = f.read()
    m = re.search(r"^## Limits today\n\n(.*?)\n\n", text, re.M | re.S)
    return m.group(1) if m else None


def check_limits(root):
    summary, readme = limits_summary(root), readme_limits(root)
    if summary is None:
        return ["docs/limits.rst has no 'In short' section"]
    if readme is None:
        return ["README.md has no '## Limits today' paragraph"]
    if plain(summary) != plain(readme):
        return ["README.md's 'Limits today' is not docs/limits.rst's "
                "'In short': copy it over",
                "README:  " + plain(readme), "limits:  " + plain(summary)]
    return []


def report(name, problems):
    print("%s %s" % ("FAIL" if problems else "ok", name))
    for p in problems:
        print("    " + p)
    return bool(problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--results", action="store_true",
                    help="accepted for tests/run_all.py; the output is "
                    "always one line per check")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    root = args.root
    files = tree_files(root)
    words = code_words(root, files)
    word_list = sorted(words)
    docs = args.files or (["README.md"] + sorted(
        f for f in files if f.startswith("docs/") and f.endswith(".rst")))
    failed = False
    for doc in docs:
        failed |= report("doc refs " + doc,
                         check_refs(root, doc, words, word_list))
    if not args.files:
        failed |= report("doc limits summary", check_limits(root))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
