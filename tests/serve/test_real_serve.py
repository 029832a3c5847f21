#!/usr/bin/env python3
"""Serve points against vLLM itself: `vllm serve` of vLLM's CPU build (scripts/vllm-venv, a
fixture of this test in tests/CMakeLists.txt) on a tiny Llama made by tests/support/tiny_llama.py.

VllmServe.test_the_shipped_sweep: sweeps/vllm-serve.yaml as documented (one of its points): the
server started, loaded at each rate, stopped with nothing of it left (its engine-core process
too), and the percentiles, goodput and the SLA's answer in the results.

VllmServe.test_the_shipped_sweep_inside_a_slurm_allocation: the same point inside `salloc` on the
loopback SLURM cluster (tests/support/slurm_cluster.py), the server a step of its own.

VllmServe.test_ctrl_c_twice_a_kill_of_the_runner_and_a_time_limit_leave_no_vllm_behind: the
shipped sweep's point stopped in the middle of its load three ways, and nothing of vLLM left.

VllmServe.test_our_client_agrees_with_vllm_bench_serve: one `vllm serve`, loaded in alternating
rounds by our client (a serve point with serve.url) and by `vllm bench serve`, at the same rate,
request count, prompt and output lengths; each figure's median over our rounds against the median
over vLLM's, within a tolerance taken from the rounds' own spread (COMPARED, tolerance()). Each
client's own share of TTFT (vLLM's Python client adds about 2 ms more than ours) is measured in the
same run against fast-openai-standin, whose first token comes a known time after the request, and
taken off that client's TTFT before the two are compared (client_overhead()).
docs/performance.md ("Serving: our client against vllm bench serve") has the figures of a run.

Run by ctest (tests/CMakeLists.txt), one ctest per class:
    SWEEPBENCH_BIN_DIR=build/notrain/bin /usr/bin/python3 tests/serve/test_real_serve.py VllmServe
SWEEPBENCH_SERVE_ROUNDS=N sets the comparison's rounds a side (3).
"""
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import uuid

import h5py
import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from e2e import BIN, ENV, SOURCE, bench_sweep, read_json, run_tool  # noqa: E402
from slurm_cluster import LocalSlurm  # noqa: E402

SWEEP = os.path.join(SOURCE, "sweeps", "vllm-serve.yaml")
EXTRACT = os.path.join(BIN, "bench-extract")
# What every vLLM process here needs (scripts/vllm-venv's header): no model hub, no usage
# reports, a 1 GiB KV cache for the CPU build.
VLLM_ENV = dict(HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
                VLLM_CPU_KVCACHE_SPACE="1")
SERVE_FLAGS = ["--dtype", "float32", "--enforce-eager", "--max-model-len", "512"]

# The comparison's load: Poisson arrivals at RATE, REQUESTS a round, prompts of INPUT_LEN random
# token ids, OUTPUT_LEN tokens each (ignore_eos). Well below what the server can take (about
# 40 req/s here with 32-token prompts), so that neither client's figures are of a saturated
# queue.
RATE, REQUESTS, INPUT_LEN, OUTPUT_LEN = 4, 48, 64, 32
ROUNDS = int(os.environ.get("SWEEPBENCH_SERVE_ROUNDS", "3"))
# (name, our summary.json level key, vLLM's --save-result key, absolute floor of the tolerance,
# whether each client's own share is taken off first, whether ours may be the lower by more than
# the tolerance): the figures both define alike (docs/serving.md, "Load metrics" and "Against
# vLLM"; check_like_with_like checks what could make them differ here).
# The mean TTFT is held one way only. On 2 busy cores (the other ctest lane installing a venv)
# vLLM's Python client waited for a core on a few requests in two of its three rounds, and its
# mean TTFT came out 36, 36 and 18 ms against ours 13, 12 and 10 ms, with the medians 16, 16,
# 12 against 11, 11, 9 (CI, 2026-11-30): a tail of its own client, which the stand-in's quiet
# rounds do not measure. Ours above vLLM's would be ours adding latency, and fails.
COMPARED = [
    ("request throughput (req/s)", "request_throughput", "request_throughput", 0, False, False),
    ("output tokens/s", "output_tokens_per_second", "output_throughput", 0, False, False),
    ("mean TTFT (ms)", "ttft_mean_ms", "mean_ttft_ms", 1, True, True),
    ("median TTFT (ms)", "ttft_p50_ms", "median_ttft_ms", 1, True, False),
    ("median TPOT (ms)", "tpot_p50_ms", "median_tpot_ms", 1, False, False),
    ("median ITL (ms)", "itl_p50_ms", "median_itl_ms", 1, False, False),
]
# What a client adds to TTFT itself: both clients load fast-openai-standin (tests/support/
# fast_openai_standin.cc: one epoll thread, next to no cost of its own) with the same load, and it
# sends each request's first token exactly STANDIN_FIRST_MS after the request came and the others
# STANDIN_GAP_MS apart (about what the tiny Llama takes here); a client's TTFT there less
# STANDIN_FIRST_MS is its own share (and the stand-in's timer lateness, the same for both).
STANDIN = os.path.join(BIN, "fast-openai-standin")
STANDIN_FIRST_MS, STANDIN_GAP_MS = 10, 5
# The part of the tolerance that is not the rounds' spread: a share of the larger median.
FLOOR = 0.10


def vllm_venv():
    return subprocess.run([os.path.join(SOURCE, "scripts", "vllm-venv")], check=True,
                          capture_output=True, text=True, timeout=1200).stdout.strip()


def make_model(venv, path):
    subprocess.run([os.path.join(venv, "bin", "python"),
                    os.path.join(SOURCE, "tests", "support", "tiny_llama.py"), path],
                   check=True, capture_output=True, timeout=300)


def marked_processes(mark):
    """The processes whose environment holds SWEEPBENCH_TEST_MARK=mark, as "PID ARGS": those a
    test started and everything they started (`vllm serve` starts its engine core and
    multiprocessing's helpers), and no other engineer's vLLM on the same machine."""
    found = []
    needle = f"SWEEPBENCH_TEST_MARK={mark}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid} {args}")
        except OSError:  # gone, or not ours to read
            continue
    return found


def wait_for_none(test, mark, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not marked_processes(mark):
            return
        time.sleep(0.5)
    test.fail("vLLM processes outlived their point: %s" % marked_processes(mark))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_health(url, proc, seconds=300):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"vllm serve exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"vllm serve was not ready after {seconds} s")


def tolerance(ours, theirs, floor_ms=0):
    """How far apart the two sides' medians may be and still count as equal within noise: the
    larger of the two sides' ranges over their rounds (max - min: what the same client gave on
    the same server at the same load, so a difference no bigger than that is no difference we
    can see), plus FLOOR of the larger median (with three rounds a side a range underestimates
    the spread, and the two clients' arrival draws differ: vLLM rescales its gaps to N / rate,
    ours are not), and never less than `floor_ms` for a latency: when tokens come in bursts the
    median ITL is the few microseconds each client takes to parse the next chunk of a burst, a
    property of the client and not of the server, and below a millisecond neither client on a
    busy 2-core machine resolves the server (issue 54 allows a client 1 ms of TTFT)."""
    spread = max(max(ours) - min(ours), max(theirs) - min(theirs))
    return max(spread + FLOOR * max(statistics.median(ours), statistics.median(theirs)), floor_ms)


def client_overhead(rounds, key):
    """A client's own share of the figure `key` (a TTFT, ms) from its rounds against the stand-in:
    the median over rounds of the figure less STANDIN_FIRST_MS, and the rounds' range (how well it
    is known)."""
    over = [r[key] - STANDIN_FIRST_MS for r in rounds]
    return statistics.median(over), max(over) - min(over)


def our_round(tmp, url, model, seed, label="ours", ready="/health"):
    """One round of our client: a serve point loading the server at `url` (serve.url), which is
    ready when GET `ready` answers 200; the level's figures from summary.json."""
    path = os.path.join(tmp, f"{label}-{seed}.yaml")
    with open(path, "w") as f:
        f.write("name: ours\nbase:\n  benchmark: serve\n  serve:\n"
                f"    url: {url}\n    model: {model}\n    body: {{ignore_eos: true}}\n"
                f"    ready: {{path: {ready}}}\n"
                f"    load: {{mode: poisson, levels: [{RATE}], requests: {REQUESTS},"
                f" warmup_requests: 1, seed: {seed}}}\n"
                f"    prompts: {{input_tokens: {INPUT_LEN}, output_tokens: {OUTPUT_LEN},"
                " token_ids: [1000, 9000]}\n"
                "  metrics: {sample_interval_ms: 0, system: false}\n")
    out = os.path.join(tmp, f"{label}-{seed}")
    r = bench_sweep("run", path, "--out", out, check=0, timeout=600)
    [point] = read_json(os.path.join(out, "manifest.json"))["points"]
    d = os.path.join(out, point["tag"])
    summary = read_json(os.path.join(d, "summary.json"))
    if summary["status"] != "ok":
        raise AssertionError(f"{label} round {seed}: {summary['status']}: {summary.get('reason')}\n"
                             f"{r.stdout}")
    [level] = summary["levels"]
    return level, d


def vllm_round(tmp, venv, url, model, seed, label="vllm"):
    """One round of `vllm bench serve` against the server at `url`: its --save-result JSON."""
    name = f"{label}-{seed}.json"
    argv = [os.path.join(venv, "bin", "vllm"), "bench", "serve", "--backend", "vllm",
            "--base-url", url, "--model", model, "--dataset-name", "random",
            "--random-input-len", str(INPUT_LEN), "--random-output-len", str(OUTPUT_LEN),
            "--num-prompts", str(REQUESTS), "--request-rate", str(RATE), "--ignore-eos",
            "--seed", str(seed), "--save-result", "--save-detailed", "--result-dir", tmp,
            "--result-filename", name]
    r = subprocess.run(argv, env=dict(ENV, **VLLM_ENV), capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"vllm bench serve: exit {r.returncode}\n{r.stdout[-3000:]}\n"
                             f"{r.stderr[-3000:]}")
    return read_json(os.path.join(tmp, name))


class VllmServe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.venv = vllm_venv()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.tmp.name, "tiny-llama")
        make_model(cls.venv, cls.model)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_shipped_sweep(self):
        mark = uuid.uuid4().hex
        out = os.path.join(self.tmp.name, "sweep")
        env = dict(ENV, SWEEPBENCH_TEST_MARK=mark)
        # One of its two points: prompts of 32 tokens, four rates. Watched while it runs, so that
        # "nothing left afterwards" is known to be about processes that were there.
        argv = [os.path.join(BIN, "bench-sweep"), "run", SWEEP, "--out", out, "--set",
                f"params.vllm={self.venv}/bin/vllm", "--set", f"params.model={self.model}",
                "--only", "0"]
        seen = set()
        log = os.path.join(self.tmp.name, "sweep.log")
        with open(log, "w") as f, subprocess.Popen(argv, env=env, cwd=self.tmp.name, stdout=f,
                                                   stderr=subprocess.STDOUT) as run:
            deadline = time.time() + 900
            while run.poll() is None and time.time() < deadline:
                seen.update(p.split(" ", 1)[1] for p in marked_processes(mark))
                time.sleep(0.5)
            if run.poll() is None:
                run.kill()
        with open(log, errors="replace") as f:
            output = f.read()
        self.assertEqual(run.returncode, 0, output)
        # The server and the processes it started: its engine core, by multiprocessing's spawn.
        self.assertTrue(any(" serve " in p for p in seen), seen)
        self.assertTrue(any("multiprocessing.spawn" in p for p in seen), seen)
        wait_for_none(self, mark)
        rows = [row for row in json.loads(run_tool(EXTRACT, "-i", out, "--format", "json").stdout)
                if row["index"] == 0]
        [row] = rows
        self.assertEqual(row["status"], "ok", output)
        d = os.path.join(out, row["tag"])
        summary = read_json(os.path.join(d, "summary.json"))
        plan = [lv for lv in summary["levels"] if not lv["searched"]]
        self.assertEqual([lv["level"] for lv in plan], [8, 16, 32, 64])
        self.assertLessEqual(len(summary["levels"]), 6)  # and at most 2 of the SLA search
        for lv in summary["levels"]:
            self.assertEqual(lv["requests"], 32)
            self.assertEqual(lv["failed"], 0, lv)
            for m in ("ttft", "tpot", "itl", "e2el"):
                for p in ("mean", "p50", "p90", "p99"):
                    # An ITL percentile may be 0.0 to the microsecond (merged bursts).
                    self.assertGreaterEqual(lv[f"{m}_{p}_ms"], 0, (m, p, lv))
                self.assertGreater(lv[f"{m}_p99_ms"], 0, (m, lv))
            self.assertGreater(lv["ttft_p50_ms"], 0)
            # Goodput: the good requests (the SLA's attainment of the 32) a second.
            self.assertAlmostEqual(lv["goodput"], lv["sla_attainment"] * 32 / lv["duration_s"],
                                   delta=1e-9 * lv["goodput"] + 1e-12)
            # Every request got its 32 tokens (ignore_eos): 32 x 32 over the duration.
            self.assertAlmostEqual(lv["output_tokens_per_second"],
                                   32 * 32 / lv["duration_s"], delta=1e-6 * 32 * 32)
        self.assertGreater(plan[0]["goodput"], 0)  # 8 req/s: TPOT ~5 ms, TTFT ~15 ms here
        # The SLA's answer: which rate depends on the machine (none when even 8 req/s fails it
        # on a loaded one), but it is the definition's (docs/serving.md, "The SLA's answer")
        # applied to the levels measured: the highest that met it below the lowest that failed.
        self.assertIn("sla", summary)
        m = summary["metrics"]
        by_level = sorted(summary["levels"], key=lambda lv: lv["level"])
        failed = [lv["level"] for lv in by_level if lv["sla_attainment"] < 0.99]
        met = [lv["level"] for lv in by_level
               if lv["sla_attainment"] >= 0.99 and (not failed or lv["level"] < failed[0])]
        self.assertEqual(m["sla_max_level"], met[-1] if met else None, by_level)
        if m["sla_max_level"] is not None:
            self.assertEqual(m["request_rate"], m["sla_max_level"])
        self.assertIn("sla_max_level", row)
        self.assertEqual(row["levels"], len(summary["levels"]))
        # The server stopped, its engine core too, and its log kept.
        self.assertNotIn("killed", summary["server"]["stop"])
        with open(os.path.join(d, "logs", "server.stderr.txt"), errors="replace") as f:
            self.assertIn("Application startup complete", f.read())
        levels = json.loads(run_tool(EXTRACT, "-i", out, "--series", "levels", "--format",
                                     "json").stdout)
        self.assertEqual([x["level"] for x in levels], [lv["level"] for lv in summary["levels"]])

    def test_the_shipped_sweep_inside_a_slurm_allocation(self):
        # The same point inside `salloc` on the loopback cluster (one node): bench-serve is the
        # point's step, `vllm serve` a step of its own (srun --overlap), cancelled when stopped;
        # two rates, no search, so that it costs a server's start and little more.
        mark = uuid.uuid4().hex
        out = os.path.join(self.tmp.name, "slurm")
        with LocalSlurm(nodes=1) as cluster:
            env = dict(cluster.env, SWEEPBENCH_BIN_DIR=BIN, SWEEPBENCH_TEST_MARK=mark)
            r = cluster.run("salloc", "-N", "1", "--exclusive", os.path.join(BIN, "bench-sweep"),
                            "run", SWEEP, "--out", out, "--only", "0",
                            "--set", f"params.vllm={self.venv}/bin/vllm",
                            "--set", f"params.model={self.model}",
                            "--set", "serve.load.levels=[8, 16]", "--set", "serve.sla.search=0",
                            env=env, cwd=self.tmp.name, check=False, timeout=900)
            point = read_json(os.path.join(out, "manifest.json"))["points"][0]
            d = os.path.join(out, point["tag"])
            summary = read_json(os.path.join(d, "summary.json"))
            self.assertEqual(r.returncode, 0, f"{r.stdout}\n{r.stderr}\n{summary.get('reason')}")
            self.assertEqual(summary["status"], "ok", summary.get("reason"))
            self.assertTrue(summary["server"]["slurm_step"].startswith("sweepbench-serve-"),
                            summary["server"])
            self.assertEqual([lv["level"] for lv in summary["levels"]], [8, 16])
            for lv in summary["levels"]:
                self.assertEqual((lv["requests"], lv["failed"]), (32, 0), lv)
                self.assertGreater(lv["ttft_p99_ms"], 0)
            self.assertIn("sla_max_level", summary["metrics"])
            with open(os.path.join(d, "logs", "server.stderr.txt"), errors="replace") as f:
                self.assertIn("Application startup complete", f.read())
            wait_for_none(self, mark)
            # Nothing of the point's left in SLURM either: its steps ended with it.
            steps = cluster.run("squeue", "-h", "-s", "-o", "%i %j").stdout
            self.assertNotIn("sweepbench-serve", steps)

    def start_loaded(self, name):
        """bench-sweep run of the shipped sweep's first point, with one long level (4 req/s, 400
        requests: 100 s), returned once the load is under way: `vllm serve`, its engine core
        and bench-serve all running. (the runner, the point's directory, the test's mark)"""
        mark = uuid.uuid4().hex
        out = os.path.join(self.tmp.name, name)
        argv = [os.path.join(BIN, "bench-sweep"), "run", SWEEP, "--out", out, "--only", "0",
                "--set", f"params.vllm={self.venv}/bin/vllm", "--set",
                f"params.model={self.model}", "--set", "serve.load.levels=[4]",
                "--set", "serve.load.requests=400", "--set", "serve.sla.search=0"]
        run = subprocess.Popen(argv, env=dict(ENV, SWEEPBENCH_TEST_MARK=mark), cwd=self.tmp.name,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tag = None
        deadline = time.time() + 300
        while time.time() < deadline and run.poll() is None:
            if tag is None and os.path.exists(os.path.join(out, "manifest.json")):
                tag = read_json(os.path.join(out, "manifest.json"))["points"][0]["tag"]
            log = os.path.join(out, tag or "-", "logs", "stdout.txt")
            if os.path.exists(log):
                with open(log, errors="replace") as f:
                    if "# level 0" in f.read():
                        break
            time.sleep(0.2)
        else:
            run.kill()
            self.fail("the load did not start: %s" % run.communicate()[0][-3000:])
        time.sleep(2)
        seen = marked_processes(mark)
        if not (any(" serve " in p for p in seen) and any("bench-serve" in p for p in seen)):
            run.kill()
            self.fail("vllm serve or bench-serve is not running: %s" % seen)
        return run, os.path.join(out, tag), mark

    def test_ctrl_c_twice_a_kill_of_the_runner_and_a_time_limit_leave_no_vllm_behind(self):
        # What the stand-in's Stops tests (tests/serve/test_bench_serve.py) do, with `vllm
        # serve` itself and the processes it starts (multiprocessing's helpers).
        run, d, mark = self.start_loaded("ctrl-c")
        run.send_signal(signal.SIGINT)
        time.sleep(1.2)
        run.send_signal(signal.SIGINT)
        output = run.communicate(timeout=120)[0]
        wait_for_none(self, mark)
        summary = read_json(os.path.join(d, "summary.json"))
        self.assertEqual(summary["status"], "cancelled", output[-3000:])

        run, d, mark = self.start_loaded("sigkill")
        run.kill()
        run.communicate(timeout=60)
        # bench-serve, left without its runner, stops the load and the server itself.
        wait_for_none(self, mark, seconds=60)
        summary = read_json(os.path.join(d, "summary.json"))
        self.assertEqual(summary["status"], "cancelled")

        # A time limit's warning: SIGUSR1 to bench-serve (what srun passes on to a point's step).
        run, d, mark = self.start_loaded("time-limit")
        [client] = [int(p.split(" ", 1)[0]) for p in marked_processes(mark) if "bench-serve" in p]
        os.kill(client, signal.SIGUSR1)
        output = run.communicate(timeout=120)[0]
        wait_for_none(self, mark)
        summary = read_json(os.path.join(d, "summary.json"))
        self.assertEqual(summary["status"], "timeout", output[-3000:])
        self.assertIn("stopped by SIGUSR1", summary["reason"])
        # vLLM ends on SIGTERM (with code 0), within the grace period: nothing killed.
        self.assertIn("on SIGTERM", summary["server"]["stop"])
        self.assertNotIn("kill", summary["server"]["stop"])

    def test_our_client_agrees_with_vllm_bench_serve(self):
        mark = uuid.uuid4().hex
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(os.path.join(self.tmp.name, "vllm-serve.log"), "w")
        server = subprocess.Popen(
            [os.path.join(self.venv, "bin", "vllm"), "serve", self.model, "--host", "127.0.0.1",
             "--port", str(port), *SERVE_FLAGS],
            env=dict(ENV, SWEEPBENCH_TEST_MARK=mark, **VLLM_ENV), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        standin = subprocess.Popen(
            [STANDIN, "--first-delay", str(STANDIN_FIRST_MS / 1000), "--delay",
             str(STANDIN_GAP_MS / 1000), "--chunks", str(OUTPUT_LEN)], stdout=subprocess.PIPE,
            text=True)
        try:
            standin_url = f"http://127.0.0.1:{int(standin.stdout.readline())}"
            wait_for_health(url, server)
            ours, theirs, ours_alone, theirs_alone = [], [], [], []
            # Alternating rounds, ours first: a drift of the machine (another job starting on
            # the shared cores) falls on both sides alike. Each round its own seed, the same on
            # both sides: its own arrival times and prompts. Then the same load on the stand-in,
            # alternating too, for each client's own share of TTFT.
            for seed in range(1, ROUNDS + 1):
                level, d = our_round(self.tmp.name, url, self.model, seed)
                ours.append(level)
                theirs.append(vllm_round(self.tmp.name, self.venv, url, self.model, seed))
                self.check_like_with_like(level, d, theirs[-1])
                # The stand-in has no /health; /stats answers 200.
                ours_alone.append(our_round(self.tmp.name, standin_url, self.model, seed,
                                            "ours-standin", "/stats")[0])
                theirs_alone.append(vllm_round(self.tmp.name, self.venv, standin_url,
                                               self.model, seed, "vllm-standin"))
                self.assertEqual((ours_alone[-1]["requests"], ours_alone[-1]["failed"]),
                                 (REQUESTS, 0))
                self.assertEqual(theirs_alone[-1]["completed"], REQUESTS)
        finally:
            standin.kill()
            standin.wait()
            standin.stdout.close()
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
            log.close()
        wait_for_none(self, mark)

        # Each figure: the two sides' rounds, less each client's own share where it is taken
        # off; the tolerance of the rounds' spread, plus how well the two shares are known.
        rows = []
        for name, our_key, their_key, floor_ms, own_share, ours_may_be_lower in COMPARED:
            a = [lv[our_key] for lv in ours]
            b = [res[their_key] for res in theirs]
            a_own = b_own = (0.0, 0.0)
            if own_share:
                a_own = client_overhead(ours_alone, our_key)
                b_own = client_overhead(theirs_alone, their_key)
            a_net = [x - a_own[0] for x in a]
            b_net = [x - b_own[0] for x in b]
            diff = statistics.median(a_net) - statistics.median(b_net)
            tol = tolerance(a_net, b_net, floor_ms) + max(a_own[1], b_own[1])
            held = diff <= tol if ours_may_be_lower else abs(diff) <= tol
            rows.append((name, a, b, a_own[0] if own_share else None,
                         b_own[0] if own_share else None, diff, tol, held,
                         ours_may_be_lower and diff < -tol))
        print(f"\n# our client against vllm bench serve: {ROUNDS} rounds a side, alternating;"
              f" Poisson {RATE} req/s, {REQUESTS} requests, {INPUT_LEN} prompt tokens,"
              f" {OUTPUT_LEN} output tokens; {platform.machine()}, {os.cpu_count()} cores;"
              f" own: the client's own share, the same figure against a stand-in whose first"
              f" token comes at {STANDIN_FIRST_MS} ms, less {STANDIN_FIRST_MS} ms (median of"
              f" rounds); diff: of the medians, each side less its own share")
        print("# %-28s %-26s %-26s %7s %7s %9s %9s" % (
            "figure", "ours (rounds)", "vllm (rounds)", "own", "own", "diff", "tolerance"))
        for name, a, b, a_own, b_own, diff, tol, held, lower in rows:
            print("  %-28s %-26s %-26s %7s %7s %+9.3f %9.3f  %s" % (
                name, " ".join("%.3f" % x for x in a), " ".join("%.3f" % x for x in b),
                "" if a_own is None else "%.3f" % a_own, "" if b_own is None else "%.3f" % b_own,
                diff, tol, "ok, ours lower (held one way)" if lower
                else "ok" if held else "DIFFERS"))
        with open(os.path.join(os.environ.get("SWEEPBENCH_SERVE_TABLE", self.tmp.name),
                               "serve-comparison.json"), "w") as f:
            json.dump({"ours": ours, "vllm": theirs, "ours_standin": ours_alone,
                       "vllm_standin": theirs_alone}, f, default=str)
        for name, a, b, a_own, b_own, diff, tol, held, lower in rows:
            self.assertTrue(held, f"{name}: ours {a} (own share {a_own}), vLLM's {b} (own share"
                                  f" {b_own}): a difference of {diff:+.3f}, tolerance {tol:.3f}")

    def check_like_with_like(self, level, d, theirs):
        """The two rounds measured the same thing: every request succeeded and got its tokens,
        and the prompts were as long on both sides."""
        self.assertEqual(level["requests"], REQUESTS)
        self.assertEqual(level["failed"], 0)
        self.assertEqual(theirs["completed"], REQUESTS)
        self.assertEqual(theirs["total_output_tokens"], REQUESTS * OUTPUT_LEN)
        self.assertAlmostEqual(level["output_tokens_per_second"] * level["duration_s"],
                               REQUESTS * OUTPUT_LEN, delta=1e-6 * REQUESTS * OUTPUT_LEN)
        # Both clients time chunks, not tokens: a chunk that carried text is one ITL gap on both
        # sides. A chunk may carry more than one token (vLLM's server merges the tokens a slow
        # reader has not taken yet, as it does on a busy 2-core machine), so a request may have
        # fewer than OUTPUT_LEN chunks on either side; the tokens are the usage's on both.
        # Chunks without text (a special token) would count for vLLM's client and not for ours;
        # their absence is checked by the chunk counts: never more chunks than tokens.
        with h5py.File(os.path.join(d, "rank-00000.h5"), "r") as f:
            measured = numpy.flatnonzero(f["serve/requests/level"][:] == 0)
            chunks = f["serve/chunks/request"][:]
        ours = [int((chunks == i).sum()) for i in measured]
        self.assertTrue(all(1 <= n <= OUTPUT_LEN for n in ours), ours)
        theirs_chunks = [len(x) + 1 for x in theirs["itls"]]
        self.assertTrue(all(1 <= n <= OUTPUT_LEN for n in theirs_chunks), theirs_chunks)
        # vLLM's random prompts: INPUT_LEN tokens with the BOS its tokenizer adds; ours exactly
        # INPUT_LEN ids, sent as ids (nothing added).
        self.assertTrue(all(abs(n - INPUT_LEN) <= 1 for n in theirs["input_lens"]),
                        theirs["input_lens"])


if __name__ == "__main__":
    unittest.main()
