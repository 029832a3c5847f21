#!/usr/bin/env python3
"""Every program's --help, and every subcommand's, reads as written: it exits 0 and prints
something, no default shows as a binary float's digits (`0.050000000000000003` for 0.05), and no
word is doubled across a wrapped line or within one ("with its 95%\\n95% interval").

    check_help.py --bin build/release/bin

Run by ctest (tests/CMakeLists.txt, help_texts). Prints each problem as PROGRAM: problem.
"""
import argparse
import os
import re
import subprocess
import sys

# A number printed with a binary float's full digits: six or more 0s or 9s and a digit after.
FLOAT_DIGITS = re.compile(r"\d\.\d*(?:0{6,}|9{6,})\d")
# A word (letters, or a number with %) and the same word after white space (a line break too).
DOUBLED = re.compile(r"(?<![\w%.-])([A-Za-z]{2,}|\d+(?:\.\d+)?%)\s+\1(?![\w%])")
# The programs with subcommands, and where their --help lists them.
SUBCOMMANDS = {"bench-sweep": ["plan", "run", "submit", "status", "keys"],
               "bench-history": ["ingest", "runs", "series", "check", "export", "report"]}


def problems_of(text):
    found = []
    for m in FLOAT_DIGITS.finditer(text):
        found.append(f"a float's digits: {m.group(0)!r} (give default_value a text)")
    for m in DOUBLED.finditer(text):
        found.append(f"a doubled word: {m.group(0)!r}")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--self-test", action="store_true",
                    help="check that the checks catch what they are for, then stop")
    args = ap.parse_args()
    if args.self_test:
        assert problems_of("--alpha arg (=0.050000000000000003)"), "float digits"
        assert problems_of("--x arg (=0.94999999999999996)"), "float digits (9s)"
        assert problems_of("with its 95%\n   95% interval"), "doubled across a line"
        assert problems_of("the the"), "doubled in a line"
        assert not problems_of("--alpha arg (=0.05) 1000000 steps, 2 2-rank runs, -- --"), \
            "no false alarm"
        print("check_help: self-test ok")
        return 0
    programs = sorted(p for p in os.listdir(args.bin) if p.startswith("bench-"))
    if not programs:
        print(f"check_help: no bench-* program in {args.bin}", file=sys.stderr)
        return 1
    bad = 0
    for program in programs:
        runs = [[program, "--help"]]
        runs += [[program, sub, "--help"] for sub in SUBCOMMANDS.get(program, [])]
        for argv in runs:
            name = " ".join(argv)
            r = subprocess.run([os.path.join(args.bin, argv[0]), *argv[1:]], capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 0 or not r.stdout.strip():
                print(f"{name}: exit {r.returncode}, {len(r.stdout)} characters on stdout"
                      f"\n{r.stderr[-2000:]}")
                bad += 1
                continue
            for p in problems_of(r.stdout):
                print(f"{name}: {p}")
                bad += 1
    print(f"check_help: {len(programs)} programs, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
