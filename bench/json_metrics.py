#!/usr/bin/python3
"""bench-command reading JSON metrics from large files: wall time and peak memory
(docs/performance.md, "JSON metrics, read once, streamed").

Writes a vllm.json-shaped document (vllm bench serve's: per-request latency lists beside the
summary fields) of each SIZE in MB, then times `bench-command` reading 1, 10 and 40 metrics from
it (`from: json FILE, pointer: /FIELD`; the program is `true`), ROUNDS times. Beside it, in the
same run and alternating with it: Python's json.load of the same file reading the same fields
(what a user's own script would do), and, with --baseline-bin, another build's bench-command
(before issue 51 the document was parsed again for every metric).

Also times fairseq2's parser on one metric record followed by LINES rich-wrapped continuation
lines (a record rich wrapped into millions of lines was read at 3.2 MB/s).

Goal (issue 51): 4.5 MB in under 1 s, memory bounded. Writes bench/results/json_metrics.json.

Usage: bench/json_metrics.py [--bin build/release/bin] [--baseline-bin DIR] [--sizes 1,4.5,10,100]
                             [--rounds 3] [--lines 3000000] [--cases documents,wrapped]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIELDS = ["duration", "completed", "request_throughput", "output_throughput",
          "total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
          "mean_tpot_ms", "median_tpot_ms"]


def write_document(path, megabytes):
    """A vllm bench serve result of about `megabytes` MB: summary fields and per-request lists."""
    target = int(megabytes * 1e6)
    # 40 distinct summary fields, the first 1000.0.
    doc_fields = {f"{name}_{k}": 1000.0 + i + k for k in range(4) for i, name in enumerate(FIELDS)}
    with open(path, "w") as f:
        f.write("{")
        for name, value in doc_fields.items():
            f.write(f'"{name}": {value}, ')
        f.write('"ttfts": [')
        written, i = f.tell(), 0
        # Each request's inter-token latencies: lists of 16 numbers.
        while written < target:
            item = "[" + ", ".join(f"{0.001 * ((i * 7 + j) % 997):.6f}" for j in range(16)) + "]"
            f.write(("" if i == 0 else ", ") + item)
            written += len(item) + 2
            i += 1
        f.write("]}")
    return list(doc_fields)


def config_for(tmp, doc, names):
    metrics = "".join(f"      - {{name: m{k}, from: json {doc}, pointer: /{name}}}\n"
                      for k, name in enumerate(names))
    path = os.path.join(tmp, f"config-{len(names)}.yaml")
    with open(path, "w") as f:
        f.write("benchmark: command\ncommand:\n  argv: [\"true\"]\n  metrics:\n" + metrics)
    return path


def run_measured(cmd):
    """Wall seconds, peak RSS (MiB), exit code, stdout and stderr of one run of cmd. Its output
    goes to files: bench-command echoes its program's output, which would fill a pipe."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return (wall, usage.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status),
                out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def bench_command(binary, config, tmp):
    out_dir = os.path.join(tmp, f"out-{time.monotonic_ns()}")
    wall, rss, code, out, err = run_measured([binary, "--config", config, "--out", out_dir])
    if code != 0:
        sys.exit(f"{binary} --config {config}: exit {code}\n{out}\n{err}")
    with open(os.path.join(out_dir, "summary.json")) as f:
        metrics = json.load(f)["metrics"]
    return wall, rss, metrics


def python_reader(doc, names):
    code = ("import json, sys\nd = json.load(open(sys.argv[1]))\n"
            "print(sum(d[n] for n in sys.argv[2:]))\n")
    wall, rss, code_, out, err = run_measured([sys.executable, "-c", code, doc, *names])
    if code_ != 0:
        sys.exit(err)
    return wall, rss


def wrapped_log(path, lines):
    """One fairseq2 0.8 metric record, then `lines` continuation lines rich would indent."""
    with open(path, "w") as f:
        f.write("[11/29/26 05:00:00] INFO     fairseq2 - Train Metrics (step 50) - NLL Loss: "
                "5.62308 | Elements per Second: 9,546 | Wall Time: 11s\n")
        piece = " " * 28 + "continued text of the record\n"
        for _ in range(lines):
            f.write(piece)
    return os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--baseline-bin", help="another build's bin/ (bench-command), e.g. before "
                                           "issue 51; run on the sizes up to 4.5 MB")
    ap.add_argument("--sizes", default="1,4.5,10,100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lines", type=int, default=3_000_000)
    ap.add_argument("--cases", default="documents,wrapped",
                    help="documents (the vllm.json sizes), wrapped (fairseq2's lines), or both")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "json_metrics.json"))
    a = ap.parse_args()
    ours = os.path.join(a.bin, "bench-command")
    base = os.path.join(a.baseline_bin, "bench-command") if a.baseline_bin else None
    results = {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
               "date": time.strftime("%Y-%m-%d"), "rounds": a.rounds, "documents": [],
               "wrapped": None}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/var/tmp")) as tmp:
        sizes = [float(s) for s in a.sizes.split(",")] if "documents" in a.cases else []
        for size in sizes:
            doc = os.path.join(tmp, f"vllm-{size}.json")
            names = write_document(doc, size)
            actual_mb = os.path.getsize(doc) / 1e6
            for count in (1, 10, 40):
                config = config_for(tmp, doc, names[:count])
                sides = {"bench-command": [], "python json.load": []}
                if base and size <= 4.5:
                    sides["baseline bench-command"] = []
                for r in range(a.rounds):
                    # Sides alternate, each round in another order.
                    order = list(sides)
                    if r % 2:
                        order.reverse()
                    for side in order:
                        if side == "bench-command":
                            wall, rss, metrics = bench_command(ours, config, tmp)
                            assert metrics["m0"] == 1000.0, metrics
                        elif side == "baseline bench-command":
                            wall, rss, metrics = bench_command(base, config, tmp)
                        else:
                            wall, rss = python_reader(doc, names[:count])
                        sides[side].append({"wall_s": wall, "peak_rss_mib": rss})
                row = {"megabytes": round(actual_mb, 2), "metrics": count}
                for side, runs in sides.items():
                    row[side] = {"median_wall_s": statistics.median(x["wall_s"] for x in runs),
                                 "runs_s": [round(x["wall_s"], 3) for x in runs],
                                 "peak_rss_mib": max(x["peak_rss_mib"] for x in runs)}
                results["documents"].append(row)
                print(json.dumps(row), flush=True)
            os.remove(doc)
        if "wrapped" in a.cases:
            log = os.path.join(tmp, "fairseq2.log")
            size = wrapped_log(log, a.lines)
            config = os.path.join(tmp, "fairseq2.yaml")
            with open(config, "w") as f:
                f.write(f"benchmark: command\ncommand:\n  argv: [cat, {log}]\n"
                        "  parser: fairseq2\n")
            wrapped = {"lines": a.lines, "megabytes": round(size / 1e6, 1)}
            for side, binary in (("bench-command", ours), ("baseline bench-command", base)):
                if binary is None:
                    continue
                runs = [bench_command(binary, config, tmp)[:2]
                        for r in range(a.rounds if side == "bench-command" else 1)]
                wall = statistics.median(w for w, _ in runs)
                wrapped[side] = {"median_wall_s": wall, "runs_s": [round(w, 3) for w, _ in runs],
                                 "mb_per_s": round(size / 1e6 / wall, 1),
                                 "peak_rss_mib": max(r for _, r in runs)}
            results["wrapped"] = wrapped
            print(json.dumps(wrapped), flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".tmp", "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(a.out + ".tmp", a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
