#!/usr/bin/python3
"""Serve points end to end: `bench-sweep run` of sweeps whose points start a server, load it level
by level with bench-serve's client, and stop it; read back with h5py and bench-extract.

The server is the stand-in OpenAI-compatible server (tests/support/openai_standin.py), named as
one: it is here for what a real server will not do on demand (never become ready, crash in the
middle of the load, ignore SIGTERM, leave workers in sessions of their own, answer one request at
a time so that latency grows with load). vLLM's own `vllm serve` is test_real_serve.py's.

Run by ctest (tests/CMakeLists.txt), one ctest per class:
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/serve/test_bench_serve.py Local
"""
import csv
import glob
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import h5py
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BENCH_SWEEP, BIN, ENV, SOURCE, bench_sweep, read_json, run_tool  # noqa: E402

STANDIN = os.path.join(SOURCE, "tests", "support", "openai_standin.py")
EXTRACT = os.path.join(BIN, "bench-extract")


def serve_sweep(tmp, name, standin_args, serve="", axes="", extra="", wrap=()):
    """Writes TMP/NAME.yaml: serve points whose server is the stand-in with `standin_args`
    (started by the words `wrap` when given); `serve`: more lines of the serve section (indented
    four spaces); `axes`: the axes section's lines (indented two)."""
    # The model's name marks this test's stand-ins and their workers (standin_processes).
    argv = [*wrap, "/usr/bin/python3", STANDIN, "--port", "{port}", "--model", marker(tmp),
            *standin_args]
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nbase:\n  benchmark: serve\n  serve:\n"
                f"    argv: {json.dumps(argv)}\n"
                + ("" if "prompts:" in serve else "    prompts: {input_tokens: 16, output_tokens: 8}\n")
                + f"{serve}"
                "  metrics: {sample_interval_ms: 0, system: false}\n"
                f"{extra}"
                + (f"axes:\n{axes}" if axes else ""))
    return path


def points(out):
    return read_json(os.path.join(out, "manifest.json"))["points"]


def point_dirs(out):
    return [os.path.join(out, p["tag"]) for p in points(out)]


def marker(tmp):
    """The name of a test's stand-ins' model: unique to its temporary directory."""
    return "standin-" + os.path.basename(tmp)


def standin_processes(tmp):
    """This test's stand-in servers and their workers still running, as "PID ARGS" (other tests
    may run theirs at the same time)."""
    r = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True)
    return [line.strip() for line in r.stdout.splitlines()
            if ("openai_standin.py" in line or "standin-worker" in line)
            and marker(tmp) in line.split()]


def wait_for_no_standin(test, tmp, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not standin_processes(tmp):
            return
        time.sleep(0.2)
    test.fail("stand-in processes outlived their point: %s" % standin_processes(tmp))


def run_one_ok_point(test, tmp, path, out_name, env=None):
    """Runs the one-point sweep `path` into TMP/OUT_NAME, waits for its stand-ins to end, and
    asserts it ran ok: its directory, summary.json and the run's result."""
    out = os.path.join(tmp, out_name)
    r = bench_sweep("run", path, "-o", out, check=0, timeout=300, env=env)
    wait_for_no_standin(test, tmp)
    [d] = point_dirs(out)
    summary = read_json(os.path.join(d, "summary.json"))
    test.assertEqual(summary["status"], "ok", r.stdout + r.stderr)
    return d, summary, r


def extract_rows(*args):
    r = run_tool(EXTRACT, *args, "--format", "csv")
    return list(csv.DictReader(io.StringIO(r.stdout)))


class Local(unittest.TestCase):
    """Two points across request rates and one at concurrencies with the SLA search, on the
    stand-in: each level's figures in the rank file, summary.json and bench-extract's table."""

    def test_levels_percentiles_goodput_and_the_sla_answer(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Serial answers of 10 chunks, 40 ms apart: ~0.38 s a request, one at a time in the
            # order they came, so at concurrency k a request waits for the k - 1 before it:
            # TTFT ~0.02 s at 1, ~0.40 at 2, ~0.78 at 3, ~1.16 at 4. The SLA, 590 ms, lies about
            # 190 ms from 2's and from 3's: with 20 ms chunks and 100 ms of margin, a p99 TTFT of
            # 322 ms at 2 (the other ctest lane unpacking a venv, CI 2026-11-30) failed it.
            path = serve_sweep(
                tmp, "sla", ["--serial", "--chunks", "10", "--delay", "0.04", "--first-delay",
                             "0.02", "--workers", "2"],
                serve="    load: {mode: concurrency, levels: [1, 2, 4], requests: 12,"
                      " warmup_requests: 1}\n"
                      "    prompts: {input_tokens: 16, output_tokens: 10}\n"
                      "    sla: {ttft_ms: 590, search: 2}\n")
            d, summary, r = run_one_ok_point(self, tmp, path, "out")
            out = os.path.dirname(d)
            levels = [lv["level"] for lv in summary["levels"]]
            # The plan's three, then the search between 2 (met) and 4 (not): 3, which did not.
            self.assertEqual(levels, [1, 2, 4, 3], summary["levels"])
            self.assertEqual([lv["searched"] for lv in summary["levels"]],
                             [False, False, False, True])
            self.assertEqual(summary["sla"]["max_level"], 2)
            self.assertEqual(summary["sla"]["max_level_above"], 3)
            # 12 good of 12 cannot clearly meet 99% (its 95% Wilson interval is [0.758, 1]); a
            # failing level of 12 requests is clearly below it (11 of 12 reaches only 0.985).
            self.assertIs(summary["sla"]["max_level_clearly_meets"], False)
            self.assertIs(summary["sla"]["max_level_above_clearly_fails"], True)
            for lv in summary["levels"]:
                self.assertLessEqual(lv["sla_attainment_low"], lv["sla_attainment"], lv)
                self.assertLessEqual(lv["sla_attainment"], lv["sla_attainment_high"], lv)
                self.assertLessEqual(lv["sla_attainment_high"], 1, lv)
            m = summary["metrics"]
            self.assertEqual(m["sla_max_level"], 2)
            self.assertEqual(m["concurrency"], 2)  # the headline: the SLA's answer
            self.assertIsNone(m["request_rate"])
            self.assertEqual(m["requests"], 12)
            self.assertEqual(m["failed"], 0)
            self.assertEqual(m["levels"], 4)
            self.assertEqual(summary["units"]["ttft_p99_ms"], "ms")
            self.assertEqual(summary["units"]["sla_max_level"], "requests")
            # TTFT grows with the load as the serial server makes it.
            by_level = {lv["level"]: lv for lv in summary["levels"]}
            self.assertLess(by_level[1]["ttft_p50_ms"], 150)
            self.assertGreater(by_level[4]["ttft_p50_ms"], 500)
            self.assertLess(by_level[4]["sla_attainment"], 0.99)
            # Each request and each chunk in the rank file.
            with h5py.File(os.path.join(d, "rank-00000.h5"), "r") as f:
                self.assertEqual(f.attrs["benchmark"], "serve")
                req = f["serve/requests"]
                level = req["level"][:]
                self.assertEqual(int((level == -1).sum()), 1)  # the warm-up request
                self.assertEqual(len(level), 1 + 4 * 12)
                self.assertTrue(all(e == b"" or e == "" for e in req["error"][:]))
                self.assertEqual(list(req["output_tokens"][:]), [10] * len(level))
                self.assertEqual(len(f["serve/chunks/request"]), 10 * len(level))
                self.assertEqual(list(f["serve/levels/level"][:]), [1, 2, 4, 3])
                names = [n.decode() if isinstance(n, bytes) else n
                         for n in f["serve/levels/metric_names"][:]]
                self.assertIn("ttft_p99_ms", names)
                self.assertEqual(f["command"].attrs["stderr_log"], "logs/server.stderr.txt")
            with open(os.path.join(d, "logs", "server.stderr.txt")) as f:
                self.assertIn("stand-in: ready on port", f.read())
            with open(os.path.join(d, "logs", "stdout.txt")) as f:
                log = f.read()
            self.assertIn("# SLA (TTFT <= 590 ms for 99% of requests): 2 in flight, below 3 in "
                          "flight (which did not meet it); good requests: 2 in flight 100% [75.8%, "
                          "100%] of 12, not clearly at or above 99%; 3 in flight", log)
            self.assertRegex(log, r"3 in flight [0-9.]+% \[[0-9.]+%, [0-9.]+%\] of 12, clearly "
                                  r"below 99%")
            # The server was stopped, and its worker in a session of its own ended too.
            self.assertIn("ended on SIGTERM", summary["server"]["stop"])
            self.assertIn("ended 1 process it left", summary["server"]["stop"])
            self.assertNotIn("still in use", summary["server"]["stop"])

            rows = extract_rows("-i", out)
            self.assertEqual(len(rows), 1)
            self.assertEqual(float(rows[0]["sla_max_level"]), 2)
            self.assertEqual(float(rows[0]["concurrency"]), 2)
            self.assertEqual(rows[0]["status"], "ok")
            levels_rows = extract_rows("-i", out, "--series", "levels")
            self.assertEqual([float(x["level"]) for x in levels_rows], [1, 2, 4, 3])
            self.assertEqual([x["searched"] for x in levels_rows],
                             ["false", "false", "false", "true"])
            self.assertTrue(all(float(x["requests"]) == 12 for x in levels_rows))

    def test_a_sweep_across_request_rates(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = serve_sweep(
                tmp, "rates", ["--chunks", "8", "--delay", "0.005", "--first-delay", "0.01"],
                serve="    load: {mode: poisson, requests: 30, warmup_requests: 2}\n"
                      "    sla: {ttft_ms: 2000, tpot_ms: 200}\n"
                      "    body: {ignore_eos: true, temperature: 0}\n",
                axes="  serve.load.levels: [4, 16]\n", extra="  params: {server: standin}\n")
            out = os.path.join(tmp, "out")
            r = bench_sweep("run", path, "-o", out, check=0, timeout=300)
            wait_for_no_standin(self, tmp)
            tags = [p["tag"] for p in points(out)]
            self.assertEqual(len(tags), 2, r.stdout)
            rows = extract_rows("-i", out)
            self.assertEqual(sorted(float(x["request_rate"]) for x in rows), [4, 16])
            for row in rows:
                self.assertEqual(row["status"], "ok")
                self.assertEqual(float(row["requests"]), 30)
                self.assertEqual(float(row["failed"]), 0)
                self.assertEqual(float(row["sla_attainment"]), 1)
                self.assertEqual(float(row["goodput"]), float(row["request_throughput"]))
                # Poisson arrivals at the rate: the achieved throughput is near it (30 requests
                # give a mean gap within about 40% of 1 / rate).
                self.assertGreater(float(row["request_throughput"]),
                                   0.55 * float(row["request_rate"]))
                # 8 chunks of one token: TPOT is the gap between them.
                self.assertGreater(float(row["tpot_p50_ms"]), 4)
                self.assertLess(float(row["ttft_p50_ms"]), 500)
                units = yaml.safe_load(row["units"])
                self.assertEqual(units["output_tokens_per_second"], "tokens/s")
                # serve.body's fields a column each, as params' (once every free map got
                # params' names: serve.body.server, empty, and no serve.body.ignore_eos).
                self.assertEqual(row["serve.body.ignore_eos"], "true")
                self.assertEqual(float(row["serve.body.temperature"]), 0)
                self.assertEqual(row["params.server"], "standin")
                self.assertNotIn("serve.body.server", row)
            levels = extract_rows("-i", out, "--series", "levels")
            self.assertEqual(len(levels), 2)
            for row in levels:
                self.assertEqual(row["serve.body.ignore_eos"], "true")
                self.assertEqual(row["params.server"], "standin")


    def test_gamma_arrivals_on_the_chat_endpoint_from_a_sharegpt_file_and_a_ramp(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Two conversations: prompts of 20 words; answers of 40 and 64 bytes, so max_tokens
            # of 10 and 16 (4 bytes a token), which the stand-in honours up to its 64 chunks.
            data = os.path.join(tmp, "sharegpt.json")
            with open(data, "w") as f:
                json.dump([{"id": "a", "conversations": [
                               {"from": "human", "value": "word " * 19 + "word"},
                               {"from": "gpt", "value": "x" * 40}]},
                           {"id": "b", "conversations": [
                               {"from": "human", "value": "tell me " * 9 + "tell me"},
                               {"from": "gpt", "value": "y" * 64}]}], f)
            path = serve_sweep(
                tmp, "gamma", ["--chunks", "64", "--delay", "0.002", "--first-delay", "0.005"],
                serve="    api: chat\n"
                      "    load: {mode: gamma, burstiness: 0.5, levels: [20], requests: 16,"
                      " seed: 7}\n"
                      f"    prompts: {{dataset: {json.dumps(data)}}}\n")
            d, summary, r = run_one_ok_point(self, tmp, path, "out")
            m = summary["metrics"]
            self.assertEqual((m["requests"], m["failed"], m["request_rate"]), (16, 0, 20))
            with h5py.File(os.path.join(d, "rank-00000.h5"), "r") as f:
                outputs = list(f["serve/requests/output_tokens"][:])
                prompts = list(f["serve/requests/prompt_tokens"][:])
            # Each request's max_tokens from its conversation's answer, both conversations used;
            # the stand-in counts a chat prompt's words, 20 each.
            self.assertEqual(set(outputs), {10, 16}, outputs)
            self.assertEqual(set(prompts), {20}, prompts)

            # A ramp from 4 to 40 requests/s over 3 s: its last second sends more than its first
            # (the integral of the rate: 34 against 10 requests), the seed fixing the draws.
            path = serve_sweep(
                tmp, "ramp", ["--chunks", "4", "--delay", "0.002", "--first-delay", "0.005"],
                serve="    load: {mode: ramp, levels: [4, 40], duration_s: 3, requests: 500,"
                      " seed: 3}\n")
            d, summary, r = run_one_ok_point(self, tmp, path, "ramp-out")
            self.assertEqual(summary["metrics"]["request_rate"], 22)  # the ramp's mean
            with h5py.File(os.path.join(d, "rank-00000.h5"), "r") as f:
                level = f["serve/requests/level"][:]
                sends = sorted(s for s, lv in zip(f["serve/requests/send_s"][:], level)
                               if lv >= 0)
            first = sum(1 for s in sends if s < 1)
            last = sum(1 for s in sends if s >= 2)
            self.assertGreater(last, 1.5 * first, sends)

    def test_the_sla_search_between_rates_prints_its_levels_short(self):
        with tempfile.TemporaryDirectory() as tmp:
            # The serial stand-in takes ~0.2 s a request (5 a second): 1.5 req/s meets a TTFT of
            # 1 s, 16 req/s does not; the search measures the geometric midpoint sqrt(24).
            path = serve_sweep(
                tmp, "search", ["--serial", "--chunks", "10", "--delay", "0.02", "--first-delay",
                                "0.02", "--workers", "2"],
                serve="    load: {mode: poisson, levels: [1.5, 16], requests: 12,"
                      " warmup_requests: 1}\n"
                      "    prompts: {input_tokens: 16, output_tokens: 10}\n"
                      "    sla: {ttft_ms: 1000, search: 1}\n")
            d, summary, r = run_one_ok_point(self, tmp, path, "out")
            levels = [lv["level"] for lv in summary["levels"]]
            self.assertEqual(levels[:2], [1.5, 16])
            self.assertAlmostEqual(levels[2], 24 ** 0.5, places=12)  # exact in the results
            with open(os.path.join(d, "logs", "stdout.txt")) as f:
                log = f.read()
            # For people: 4.899, not 4.898979485566356, so that the table keeps its columns.
            self.assertIn("# level 2: 4.899 req/s (SLA search)", log)
            self.assertNotIn("4.89897", log)
            self.assertNotIn("4.89897", summary["sla"]["answer"])
            rows = [line for line in log.splitlines() if line.startswith("  ")]
            self.assertEqual(len(rows), 3, log)
            self.assertEqual(len({len(line.split()) for line in rows}), 1, rows)
            [header] = [line for line in log.splitlines()
                        if line.startswith("# level ") and ":" not in line]
            self.assertEqual(rows[2].index("4.899") + len("4.899"),
                             header.index("req/s") + len("req/s"), log)

    def test_a_server_already_running_by_serve_url(self):
        # serve.url loads a server the point does not start: checked by GET /health (the
        # default), or with serve.ready.path null loaded at once; never started, never stopped.
        with tempfile.TemporaryDirectory() as tmp:
            server = subprocess.Popen(["/usr/bin/python3", STANDIN, "--model", marker(tmp),
                                       "--never-ready", "--chunks", "4"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                url = f"http://127.0.0.1:{int(server.stdout.readline())}"
                for name, ready in (("unchecked", "    ready: {path: null}\n"),
                                    ("by-stats", "    ready: {path: /stats}\n")):
                    path = os.path.join(tmp, name + ".yaml")
                    with open(path, "w") as f:
                        f.write(f"name: {name}\nbase:\n  benchmark: serve\n  serve:\n"
                                f"    url: {url}\n{ready}"
                                "    load: {levels: 20, requests: 6, warmup_requests: 0}\n"
                                "    prompts: {input_tokens: 16, output_tokens: 4}\n"
                                "  metrics: {sample_interval_ms: 0, system: false}\n")
                    out = os.path.join(tmp, name)
                    bench_sweep("run", path, "-o", out, check=0)
                    [d] = point_dirs(out)
                    summary = read_json(os.path.join(d, "summary.json"))
                    self.assertEqual(summary["status"], "ok", summary["reason"])
                    self.assertEqual(summary["server"]["stop"], "not ours to stop (serve.url)")
                    self.assertEqual(summary["levels"][0]["failed"], 0)
                # Its /health answers 503 (--never-ready): the default check says so in time.
                path = os.path.join(tmp, "checked.yaml")
                with open(path, "w") as f:
                    f.write(f"name: checked\nbase:\n  benchmark: serve\n  serve:\n"
                            f"    url: {url}\n    ready: {{timeout_s: 1}}\n"
                            "    load: {levels: 20, requests: 6}\n"
                            "  metrics: {sample_interval_ms: 0, system: false}\n")
                bench_sweep("run", path, "-o", os.path.join(tmp, "checked"), check=1)
                [d] = point_dirs(os.path.join(tmp, "checked"))
                self.assertIn("the server was not ready after 1.0 s (serve.ready.timeout_s; "
                              "GET /health: HTTP status 503)",
                              read_json(os.path.join(d, "summary.json"))["reason"])
                # A log line cannot say a server the point did not start is ready.
                with open(path, "w") as f:
                    f.write(f"name: checked\nbase:\n  benchmark: serve\n  serve:\n"
                            f"    url: {url}\n    ready: {{log: ready}}\n"
                            "    load: {levels: 20}\n")
                r = bench_sweep("plan", path, check=2)
                self.assertIn("serve.ready.log: reads the output of a server the point starts",
                              r.stderr)
                self.assertEqual(server.poll(), None)  # still running: not ours to stop
            finally:
                server.kill()
                server.wait()
                server.stdout.close()

    def test_the_gpus_memory_given_back_or_named_as_held(self):
        # No GPU here, so nvidia-smi is a stand-in: a script first on PATH, logging each call,
        # that lists GPU 0 (GPU-aaa) using 100 MiB, 5000 more while a process of this test's
        # stand-in server lives (the driver frees a process's memory as it ends), plus the MiB
        # that the file LEAK holds (memory of a process outside the server's tree, which
        # outlives the stop); and GPU 1 (GPU-bbb) using 999 MiB.
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "bin", "nvidia-smi")
            os.makedirs(os.path.dirname(fake))
            leak, calls = os.path.join(tmp, "LEAK"), os.path.join(tmp, "calls")
            with open(fake, "w") as f:
                f.write(f"""#!/bin/sh
echo "$*" >> {calls}
[ "$*" = "--query-gpu=index,uuid,memory.used --format=csv,noheader,nounits" ] || exit 9
used=100
if pgrep -f -- '--model {marker(tmp)}' >/dev/null; then used=$((used + 5000)); fi
if [ -f {leak} ]; then used=$((used + $(cat {leak}))); fi
echo "0, GPU-aaa, $used"
echo "1, GPU-bbb, 999"
""")
            os.chmod(fake, 0o755)

            def run(name, env, serve="", extra="", wrap=()):
                load = ("    load: {mode: concurrency, levels: [1], requests: 4,"
                        " warmup_requests: 1}\n")
                path = serve_sweep(tmp, name, ["--chunks", "2"], serve=load + serve, extra=extra,
                                   wrap=wrap)
                d, summary, r = run_one_ok_point(self, tmp, path, name, env=env)
                return d, summary["server"]

            env = dict(ENV, PATH=os.path.dirname(fake) + ":" + ENV["PATH"],
                       CUDA_VISIBLE_DEVICES="0")
            # CUDA_VISIBLE_DEVICES=0: GPU 0 only, given back.
            d, server = run("given", env)
            self.assertEqual(server["gpu_memory"], {"0": {"before_mib": 100, "after_mib": 100}})
            self.assertNotIn("GPU", server["stop"])
            # A server whose start leaves 3000 MiB held after it: named, after waiting 10 s.
            d, server = run("held", env, wrap=["sh", "-c", f'echo 3000 > {leak}; exec "$@"', "sh"])
            os.remove(leak)
            self.assertEqual(server["gpu_memory"], {"0": {"before_mib": 100, "after_mib": 3100}})
            self.assertRegex(server["stop"], r"; GPU 0 held 3100 MiB 1\d\.\d s after the stop, "
                                             r"100 MiB before the server$")
            with open(os.path.join(d, "logs", "stdout.txt")) as f:
                self.assertIn("GPU 0 held 3100 MiB", f.read())
            # A point that asks for no GPU (no CUDA_VISIBLE_DEVICES, launch.gpus_per_rank 0):
            # nvidia-smi is not asked, so that other jobs' use of a node's GPUs is never named as
            # this server's.
            del env["CUDA_VISIBLE_DEVICES"]
            with open(calls) as f:
                asked = len(f.readlines())
            d, server = run("no-gpu", env)
            self.assertNotIn("gpu_memory", server)
            with open(calls) as f:
                self.assertEqual(len(f.readlines()), asked)
            # One that asks for a GPU without naming it: every GPU nvidia-smi lists.
            d, server = run("gpus", env, extra="  launch: {gpus_per_rank: 1}\n")
            self.assertEqual(server["gpu_memory"], {"0": {"before_mib": 100, "after_mib": 100},
                                                    "1": {"before_mib": 999, "after_mib": 999}})
            # The server's own CUDA_VISIBLE_DEVICES (serve.env), a UUID: that GPU.
            d, server = run("uuid", env, serve="    env: {CUDA_VISIBLE_DEVICES: GPU-bbb}\n")
            self.assertEqual(server["gpu_memory"], {"1": {"before_mib": 999, "after_mib": 999}})

    def test_hostile_values_reach_the_server_and_its_requests_verbatim(self):
        # A value from the sweep (an axis, a path, a model name) goes into the server's argv and
        # environment and into every request's JSON as it is: no shell ever sees it, and the
        # JSON holds it escaped.
        hostile = "a'b \"c\" `touch BT` $(touch DS) ; touch SC | x & y\nz\\ $HOME * \t{}:,"
        with tempfile.TemporaryDirectory() as tmp:
            record = os.path.join(tmp, "record.jsonl")
            path = serve_sweep(
                tmp, "hostile", ["--chunks", "2", "--record", record, "--label={params.evil}"],
                serve=f"    env: {{HOSTILE: '{{params.evil}}'}}\n"
                      f"    model: {json.dumps(hostile)}\n"
                      f"    body: {{user: {json.dumps(hostile)}}}\n"
                      "    load: {levels: 20, requests: 3, warmup_requests: 1}\n",
                extra=f"  params: {{evil: {json.dumps(hostile)}}}\n")
            out = os.path.join(tmp, "out")
            r = bench_sweep("run", path, "-o", out, check=0, timeout=300, cwd=tmp)
            wait_for_no_standin(self, tmp)
            [d] = point_dirs(out)
            summary = read_json(os.path.join(d, "summary.json"))
            self.assertEqual(summary["status"], "ok", r.stdout + r.stderr)
            with open(record) as f:
                started, *requests = [json.loads(line) for line in f]
            self.assertIn("--label=" + hostile, started["argv"])
            self.assertEqual(started["env"]["HOSTILE"], hostile)
            self.assertEqual(len(requests), 4)  # the warm-up and the level's three
            for req in requests:
                self.assertEqual(req["body"]["model"], hostile)
                self.assertEqual(req["body"]["user"], hostile)
            for planted in ("BT", "DS", "SC"):
                for where in (tmp, d):
                    self.assertFalse(os.path.exists(os.path.join(where, planted)), planted)


class Failures(unittest.TestCase):
    """A server that never becomes ready, dies in the middle of the load, is not there at all,
    starts slowly, or ignores SIGTERM; and configs refused before anything starts."""

    def run_one(self, tmp, name, standin_args, serve="", check=1):
        path = serve_sweep(tmp, name, standin_args, serve=serve)
        out = os.path.join(tmp, name)
        r = bench_sweep("run", path, "-o", out, timeout=300)
        wait_for_no_standin(self, tmp)
        [d] = point_dirs(out)
        summary = read_json(os.path.join(d, "summary.json"))
        # Everything the point said, should it end otherwise than the test expects.
        self.assertEqual(r.returncode, check, f"{r.stdout}\n{r.stderr}\n"
                         f"{json.dumps({k: summary.get(k) for k in ('status', 'reason', 'server', 'levels')}, indent=1)}")
        return summary, d, r

    def test_never_ready(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary, d, _ = self.run_one(
                tmp, "never", ["--never-ready"],
                serve="    ready: {timeout_s: 2}\n    load: {levels: 4, requests: 5}\n")
            self.assertEqual(summary["status"], "failed")
            self.assertIn("the server was not ready after 2.0 s (serve.ready.timeout_s; GET "
                          "/health: HTTP status 503)", summary["reason"])
            self.assertIn("stand-in: ready on port", summary["reason"])  # its last words
            self.assertEqual(summary["levels"], [])

    def test_a_crash_in_the_middle_of_the_load(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary, d, _ = self.run_one(
                tmp, "crash", ["--exit-after", "8", "--chunks", "4", "--delay", "0.01"],
                serve="    load: {mode: concurrency, levels: [1, 2], requests: 10,"
                      " warmup_requests: 2}\n")
            self.assertEqual(summary["status"], "failed")
            self.assertIn("the server exited with code 3 during level 0 (1 in flight)",
                          summary["reason"])
            self.assertIn("RuntimeError: the stand-in crashed on purpose after 8 requests",
                          summary["reason"])
            # What it measured before is kept: level 0's requests, the failed ones counted.
            [level] = summary["levels"]
            self.assertEqual(level["requests"], 10)
            self.assertEqual(level["succeeded"], 6)
            self.assertEqual(level["errors_connect"], 4)

    def test_a_server_that_is_not_there(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "missing.yaml")
            with open(path, "w") as f:
                f.write("name: missing\nbase:\n  benchmark: serve\n  serve:\n"
                        "    argv: [/nonexistent/vllm, serve]\n    load: {levels: 1}\n"
                        "  metrics: {sample_interval_ms: 0, system: false}\n")
            out = os.path.join(tmp, "out")
            bench_sweep("run", path, "-o", out, check=1)
            [d] = point_dirs(out)
            summary = read_json(os.path.join(d, "summary.json"))
            self.assertEqual(summary["status"], "failed")
            self.assertIn("the server exited with code 127 before it was ready",
                          summary["reason"])
            self.assertIn("/nonexistent/vllm: cannot start it: No such file or directory",
                          summary["reason"])

    def test_a_slow_start_and_a_server_that_ignores_sigterm(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary, d, _ = self.run_one(
                tmp, "slow", ["--start-delay", "2", "--ignore-term", "--chunks", "2"],
                serve="    stop_grace_s: 1\n    ready: {log: 'ready on port [0-9]+'}\n"
                      "    load: {levels: 20, requests: 5, warmup_requests: 0}\n", check=0)
            self.assertEqual(summary["status"], "ok", summary["reason"])
            self.assertGreaterEqual(summary["server"]["ready_s"], 2)
            self.assertIn("was killed with SIGKILL after", summary["server"]["stop"])
            self.assertIn("(its grace period: 1.0 s)", summary["server"]["stop"])

    def test_configs_refused_before_anything_starts(self):
        with tempfile.TemporaryDirectory() as tmp:
            cases = [
                ("    load: {mode: concurrency, levels: [1, 2.5]}\n",
                 "serve.load.levels: a concurrency must be a whole number of requests, got "
                 "the float 2.5"),
                ("    load: {mode: ramp, levels: [1, 2, 3], duration_s: 10}\n",
                 "a ramp goes from one rate to another, so it needs two levels, got 3"),
                ("    load: {levels: [1]}\n    sla: {search: 2}\n",
                 "serve.sla.search: is 2, but no SLA bound is set"),
                ("    load: {levels: []}\n", "serve.load.levels: is empty, but benchmark is serve"),
                ("    load: {levels: [1, -2]}\n", "serve.load.levels: each item must be > 0"),
                ("    load: {levels: 1}\n    ready: {path: null}\n",
                 "nothing would say the server is ready"),
                ("    load: {levels: 1}\n    ready: {log: '(?=x)'}\n", "serve.ready.log"),
                ("    load: {levels: 1}\n    body: {model: other}\n",
                 "serve.body.model: is set by bench-serve for every request"),
            ]
            for i, (serve, message) in enumerate(cases):
                path = serve_sweep(tmp, "bad%d" % i, [], serve=serve)
                r = bench_sweep("plan", path, check=2)
                self.assertIn(message, r.stderr, serve)
                self.assertIn("bad%d.yaml:" % i, r.stderr)
            path = serve_sweep(tmp, "ranks", [], serve="    load: {levels: 1}\n",
                               extra="  launch: {ranks: 2}\n")
            r = bench_sweep("plan", path, check=2)
            self.assertIn("launch.ranks: is 2, but a serve point is one server and one load "
                          "client", r.stderr)
            # A point in a container runs its server in the image, beside the client: no step of
            # its own on another node (tests/launch/test_containers.py runs one through srun).
            path = serve_sweep(tmp, "node", [], serve="    load: {levels: 1}\n    node: 1\n",
                               extra="  container: {runtime: charliecloud, image: /none}\n")
            r = bench_sweep("plan", path, check=2)
            self.assertIn("node.yaml:", r.stderr)
            self.assertIn("serve.node: is 1, a node for the server's own SLURM step, but a point "
                          "in a container (container.runtime: charliecloud) runs its server "
                          "inside the image", r.stderr)
            self.assertIn("leave serve.node null", r.stderr)


class Stops(unittest.TestCase):
    """Ctrl-C (once and twice) and SIGKILL of bench-sweep run, and SIGUSR1 (the time limit's
    warning) to bench-serve, in the middle of a load: no server process, nor any of its workers,
    is left."""

    def start(self, tmp, name):
        path = serve_sweep(
            tmp, name, ["--chunks", "50", "--delay", "0.05", "--workers", "2"],
            serve="    load: {mode: concurrency, levels: [2, 4], requests: 200,"
                  " warmup_requests: 1}\n")
        out = os.path.join(tmp, "out")
        proc = subprocess.Popen([BENCH_SWEEP, "run", path, "-o", out], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # Wait for the load to be under way: level 0 begun.
        deadline = time.time() + 60
        while time.time() < deadline:
            logs = glob.glob(os.path.join(out, "*", "logs", "stdout.txt"))
            if logs:
                with open(logs[0]) as f:
                    if "# level 0" in f.read():
                        break
            time.sleep(0.1)
        else:
            proc.kill()
            self.fail("the load did not start")
        time.sleep(1)
        return proc, out

    def test_ctrl_c_once_stops_the_server_and_keeps_the_level(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, out = self.start(tmp, "once")
            proc.send_signal(signal.SIGINT)
            output, _ = proc.communicate(timeout=120)
            wait_for_no_standin(self, tmp)
            [d] = point_dirs(out)
            summary = read_json(os.path.join(d, "summary.json"))
            self.assertEqual(summary["status"], "cancelled", output)
            self.assertIn("stopped by SIGUSR2 after 1 level", summary["reason"])
            self.assertEqual(len(summary["levels"]), 1)
            self.assertIn("ended on SIGTERM", summary["server"]["stop"])

    def test_ctrl_c_twice(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, out = self.start(tmp, "twice")
            proc.send_signal(signal.SIGINT)
            time.sleep(1.2)
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)
            wait_for_no_standin(self, tmp)

    def test_sigkill_of_the_runner(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, out = self.start(tmp, "kill")
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            wait_for_no_standin(self, tmp, seconds=60)
            [d] = point_dirs(out)
            # bench-serve, left without its runner, stopped the load and the server itself.
            deadline = time.time() + 30
            while time.time() < deadline and not os.path.exists(os.path.join(d, "summary.json")):
                time.sleep(0.2)
            summary = read_json(os.path.join(d, "summary.json"))
            self.assertEqual(summary["status"], "cancelled")

    def test_the_time_limits_warning(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, out = self.start(tmp, "limit")
            # What SLURM sends before a time limit (slurm.signal_seconds): bench-serve's own
            # process, as the batch step's srun passes it on.
            [d] = point_dirs(out)
            r = subprocess.run(["pgrep", "-f", "bench-serve --config " + out], capture_output=True,
                               text=True)
            pids = [int(p) for p in r.stdout.split()]
            self.assertEqual(len(pids), 1, r.stdout)
            os.kill(pids[0], signal.SIGUSR1)
            proc.communicate(timeout=120)
            wait_for_no_standin(self, tmp)
            summary = read_json(os.path.join(d, "summary.json"))
            self.assertEqual(summary["status"], "timeout")
            self.assertIn("stopped by SIGUSR1 after 1 level", summary["reason"])


if __name__ == "__main__":
    unittest.main()
