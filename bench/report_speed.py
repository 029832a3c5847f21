#!/usr/bin/python3
"""bench-report on a big sweep: the page's size, the time to write it, and the time a real
browser (headless Chromium) takes to open it (docs/performance.md, "Reports").

Makes (once) a results tree of POINTS points with bench/make_results_tree (as
bench/history_speed.py does), then ROUNDS times: `bench-report -i TREE -o PAGE` (wall time, peak
RSS) and Chromium opening the page from the file system: the page's own script records when it
has run (performance.now() at its end: the HTML parsed, every figure and row in the DOM, the
table ready to sort) as data-ready-ms, read from the DOM Chromium prints. Writes
bench/results/report_speed.json.

Usage: bench/report_speed.py [--bin build/release/bin] [--tree /var/tmp/sweepbench-history]
                             [--points 10000] [--rounds 3]
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from extract_speed import timed  # noqa: E402
from history_speed import results_tree  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--tree", default="/var/tmp/sweepbench-history")
    p.add_argument("--points", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    tree = results_tree(args.bin, args.tree, args.points)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("report_speed: no chromium (scripts/install-deps installs Debian's)")
    writes, loads, opens, rss = [], [], [], 0.0
    with tempfile.TemporaryDirectory(dir=args.tree) as tmp:
        page = os.path.join(tmp, "report.html")
        for _ in range(args.rounds):
            wall, peak = timed([os.path.join(args.bin, "bench-report"), "-i", tree, "-o", page,
                                "-f"], False)
            writes.append(wall)
            rss = max(rss, peak)
            start = time.monotonic()
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                "--dump-dom", "file://" + page], capture_output=True, text=True,
                               timeout=600)
            opens.append(time.monotonic() - start)
            m = re.search(r'data-ready-ms="([0-9]+)"', r.stdout)
            assert m and "data-error" not in r.stdout[:2000], r.stderr[-2000:]
            loads.append(int(m.group(1)) / 1000)
            rows = r.stdout.count("<tr>")
        size = os.path.getsize(page)
    result = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
              "machine": platform.processor() or platform.machine(), "points": args.points,
              "page_bytes": size, "table_rows": rows, "write_s": writes, "peak_rss_mib": rss,
              "load_s": loads, "chromium_wall_s": opens}
    print(f"page: {size / 2**20:.1f} MiB, {rows} table rows")
    print(f"bench-report: median {statistics.median(writes):.2f} s "
          f"({', '.join(f'{w:.2f}' for w in writes)}), peak RSS {rss:.0f} MiB")
    print(f"Chromium, the page ready: median {statistics.median(loads):.2f} s "
          f"({', '.join(f'{w:.2f}' for w in loads)}); whole headless run "
          f"{statistics.median(opens):.2f} s")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "report_speed.json"), "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
