#!/usr/bin/python3
"""The code's size and shape rules (CONTRIBUTING.md item 26), read from the sources.

    check_sizes.py --source DIR

Fails, naming each file or function, when:
- a source file in src/, launch/ or postprocess/ is over 800 lines;
- a function in launch/ is over 80 lines (universal-ctags gives each function's first and last
  line; a lambda counts in the function that holds it);
- two files include each other's headers (a "two-way tie": x.cc or x.h includes y.h while y.cc
  or y.h includes x.h), beyond the ties listed in KNOWN_TIES, which are still to be made one-way
  and may only shrink: a tie on that list that is gone must leave it too.
Prints the longest functions outside launch/ (over 80 lines) as information, not as failures.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

FOLDERS = ["src", "launch", "postprocess"]
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
STRICT_FUNCTION_FOLDERS = ["launch"]

# Two-way include ties still to be cut; a unit is a file's path without its extension, relative to
# src/ for files there. None is left: issue 56 cut the last four (config/schema and schema_table,
# postprocess/extract with people_table and point_row, sweep/sweep_spec and sweep_spec_parts), so
# any tie now fails.
KNOWN_TIES = set()

INCLUDE = re.compile(r'^#include "([^"]+)\.h"', re.M)


def sources(root):
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith((".cc", ".h")):
                    yield os.path.join(dirpath, name)


def unit_of(root, path):
    rel = os.path.relpath(path, root)
    unit = rel.rsplit(".", 1)[0]
    return unit[len("src/"):] if unit.startswith("src/") else unit


def long_files(root):
    out = []
    for path in sources(root):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_FILE_LINES:
            out.append(f"{os.path.relpath(path, root)}: {n} lines (at most {MAX_FILE_LINES})")
    return out


def function_lengths(root, folder):
    """(lines, file, name) of every function in folder's .cc files, by universal-ctags."""
    files = [p for p in sources(root) if p.endswith(".cc")
             and os.path.relpath(p, root).split(os.sep)[0] == folder]
    if not files:
        return []
    out = subprocess.run(["ctags", "--fields=+ne", "--c++-kinds=f", "-o", "-"] + files,
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split("\t")
        begin = end = None
        for field in fields[3:]:
            if field.startswith("line:"):
                begin = int(field[5:])
            elif field.startswith("end:"):
                end = int(field[4:])
        if begin is not None and end is not None:
            found.append((end - begin + 1, os.path.relpath(fields[1], root), fields[0]))
    return sorted(found, reverse=True)


def ties(root):
    includes = collections.defaultdict(set)
    for path in sources(root):
        unit = unit_of(root, path)
        with open(path, encoding="utf-8") as f:
            for header in INCLUDE.findall(f.read()):
                if header != unit:
                    includes[unit].add(header)
    return {tuple(sorted((a, b))) for a in includes for b in includes[a] if a in includes.get(b, ())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    root = os.path.abspath(args.source)
    if shutil.which("ctags") is None:
        print("check_sizes: ctags is not installed (Debian's universal-ctags; scripts/install-deps)",
              file=sys.stderr)
        return 2
    problems = long_files(root)
    for folder in FOLDERS:
        for n, path, name in function_lengths(root, folder):
            if n <= MAX_FUNCTION_LINES:
                break
            if folder in STRICT_FUNCTION_FOLDERS:
                problems.append(f"{path}: {name} is {n} lines (at most {MAX_FUNCTION_LINES} in "
                                f"{folder}/): cut it into named steps")
            else:
                print(f"check_sizes: note: {path}: {name} is {n} lines")
    now = ties(root)
    for a, b in sorted(now - KNOWN_TIES):
        problems.append(f"{a} and {b} include each other's headers: make the tie one-way (move "
                        "what both need into one of them, or into a header of its own)")
    for a, b in sorted(KNOWN_TIES - now):
        problems.append(f"{a} and {b} no longer include each other: take them off KNOWN_TIES in "
                        "tests/layout/check_sizes.py")
    for p in problems:
        print("check_sizes: " + p)
    print(f"check_sizes: {len(problems)} problems; {len(now)} known two-way ties left")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
