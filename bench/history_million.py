#!/usr/bin/python3
"""bench-history over a million stored runs: how long its queries take (docs/performance.md).

Ingests a tree of POINTS points (bench/history_speed.py's results_tree: bench/make_results_tree)
into a fresh SQLite store with bench-history, then copies those runs COPIES times in SQL, each
copy a day later with its own run keys: POINTS x (COPIES + 1) runs. The tree's points are 100
configurations of POINTS / 100 repeats, so one configuration is (POINTS / 100) x (COPIES + 1)
runs (10,000 by default). The copies keep three metrics each (training throughput with its
interval, step time, loss) rather than every one, so that a million runs fit a few GB of disk;
the first POINTS keep all of theirs. Then times, ROUNDS times each, as a user runs them:
  - `series train_tokens_per_second --config-hash H`: one configuration's runs among all;
  - `runs --last 100`;
  - `runs --sweep S --since D --until D2 --status ok --format csv`: one day's runs of a sweep;
  - `check --config-hash H`: change points of one configuration's series;
  - `report --config-hash H -o PAGE`: its page.
Writes bench/results/history_million.json.

Usage: bench/history_million.py [--bin build/release/bin] [--tree /var/tmp/sweepbench-history]
                                [--points 10000] [--copies 99] [--rounds 3]
"""
import argparse
import json
import os
import platform
import sqlite3
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

KEPT = ("train_tokens_per_second", "step_time_median_s", "train_loss")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--tree", default="/var/tmp/sweepbench-history")
    p.add_argument("--points", type=int, default=10000)
    p.add_argument("--copies", type=int, default=99)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    tree = results_tree(args.bin, args.tree, args.points)
    history = os.path.join(args.bin, "bench-history")
    with tempfile.TemporaryDirectory(dir=args.tree) as tmp:
        store = os.path.join(tmp, "history.sqlite")
        subprocess.run([history, "ingest", tree, "--store", store], check=True,
                       stderr=subprocess.DEVNULL)
        start = time.monotonic()
        with sqlite3.connect(store) as db:
            cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
            base_seq = db.execute("SELECT max(seq) FROM runs").fetchone()[0]
            for k in range(1, args.copies + 1):
                select = ", ".join(
                    f"run_key || '-{k}'" if c == "run_key" else
                    f"strftime('%Y-%m-%dT%H:%M:%SZ', {c}, '+{k} days')" if c in ("started", "ended")
                    else f"seq + {k * (base_seq + 1)}" if c == "seq" else c for c in cols)
                db.execute(f"INSERT INTO runs ({', '.join(cols)}) SELECT {select} FROM runs "
                           "WHERE run_key NOT LIKE '%-%'")
                # A copy's metrics are keyed by its seq (schema 3).
                db.execute("INSERT INTO metrics SELECT run_seq + ?, name, value * (1 + 0.01 * "
                           "((abs(random()) % 200) - 100) / 100.0), ci_low, ci_high, unit FROM "
                           "metrics WHERE run_seq <= ? AND name IN (?, ?, ?)",
                           (k * (base_seq + 1), base_seq, *KEPT))
                db.execute("INSERT INTO run_labels SELECT run_key || ?, name, value FROM "
                           "run_labels WHERE run_key NOT LIKE '%-%'", (f"-{k}",))
            db.commit()
            runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
            metrics = db.execute("SELECT count(*) FROM metrics").fetchone()[0]
            config, sweep = db.execute("SELECT config_hash, sweep FROM runs LIMIT 1").fetchone()
            day = db.execute("SELECT substr(min(started), 1, 10) FROM runs").fetchone()[0]
        fill = time.monotonic() - start
        size = os.path.getsize(store)
        print(f"# store: {runs:,} runs, {metrics:,} metric values, {size / 1e9:.2f} GB "
              f"(copied in {fill:.0f} s)")
        page = os.path.join(tmp, "series.html")
        cases = {
            "series of one configuration": ["series", "train_tokens_per_second",
                                            "--config-hash", config, "--format", "csv"],
            "runs --last 100": ["runs", "--last", "100", "--format", "csv"],
            "one day of one sweep": ["runs", "--sweep", sweep, "--since", day, "--until",
                                     day + "T23:59:59Z", "--status", "ok", "--format", "csv"],
            "check one configuration": ["check", "--config-hash", config, "--format", "csv"],
            "report one configuration": ["report", "--config-hash", config, "-o", page, "-f"],
        }
        rows = []
        for name, cmd in cases.items():
            walls, peak = [], 0.0
            for _ in range(args.rounds):
                wall, rss = timed([history, *cmd, "--store", store], False)
                walls.append(wall)
                peak = max(peak, rss)
            median = statistics.median(walls)
            rows.append({"case": name, "wall_s": walls, "median_wall_s": median,
                         "peak_rss_mib": peak})
            print(f"{name}: median {median:.2f} s ({', '.join(f'{w:.2f}' for w in walls)}), "
                  f"peak RSS {peak:.0f} MiB")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "history_million.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                   "machine": platform.processor() or platform.machine(), "runs": runs,
                   "metric_values": metrics, "store_bytes": size, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
