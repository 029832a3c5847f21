#!/usr/bin/env python3
"""Every point of every shipped sweep (sweeps/*.yaml) keeps its tag and config_hash.

A point's tag names its directory and its config_hash finds its results: a change to either
orphans results users already have. tests/sweep/data/example_tags.tsv holds them as bench-sweep
planned them; this check plans every sweep again and compares. After a change meant to rename
points (said in CHANGELOG.md), write the file again with --write.

  check_example_tags.py BENCH_SWEEP SOURCE_DIR [--write]
"""
import json
import os
import subprocess
import sys


def planned(bench_sweep, source):
    rows = []
    sweeps = sorted(f for f in os.listdir(os.path.join(source, "sweeps")) if f.endswith(".yaml"))
    for name in sweeps:
        path = os.path.join("sweeps", name)
        out = subprocess.run([bench_sweep, "plan", path, "--format", "json"], cwd=source,
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.exit(f"bench-sweep plan {path} failed ({out.returncode}):\n{out.stderr}")
        for point in json.loads(out.stdout)["points"]:
            rows.append(f"{path}\t{point['tag']}\t{point['config_hash']}")
    return rows


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--write"):
        sys.exit(__doc__)
    bench_sweep, source = os.path.abspath(sys.argv[1]), sys.argv[2]
    stored = os.path.join(source, "tests", "sweep", "data", "example_tags.tsv")
    rows = planned(bench_sweep, source)
    if len(sys.argv) == 4:
        with open(stored + ".partial", "w", encoding="utf-8") as f:
            f.write("".join(r + "\n" for r in rows))
        os.replace(stored + ".partial", stored)
        print(f"wrote {len(rows)} points to {stored}")
        return
    with open(stored, encoding="utf-8") as f:
        expected = f.read().splitlines()
    if rows != expected:
        gone = [r for r in expected if r not in rows]
        new = [r for r in rows if r not in expected]
        print(f"{len(gone)} stored point(s) changed or went, {len(new)} new:", file=sys.stderr)
        for r in gone[:20]:
            print("  - " + r, file=sys.stderr)
        for r in new[:20]:
            print("  + " + r, file=sys.stderr)
        sys.exit(1)
    print(f"{len(rows)} points of the shipped sweeps keep their tags and hashes")


if __name__ == "__main__":
    main()
