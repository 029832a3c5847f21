#!/usr/bin/python3
"""Hostile inputs and faults, round 3 (issue 51), end to end through the real binaries: the
results tree as untrusted input (claims, attempts/, links, manifest tags, reserved names), a
runner whose reader goes away, the runner's decisions after faults (a lost rank file, a retried
out-of-memory point, a second runner, a killed runner), one direction per metric, arithmetic at
the extremes, messages, and JSON at scale. Each test failed before its fix (docs/security.md).

    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/launch/test_trust_round3.py -v
"""
import csv
import io
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, BENCH_SWEEP, ENV, bench_sweep, read_json  # noqa: E402
from test_trust import tool  # noqa: E402  (rounds 1 and 2's: a binary of ours, bounded)

# Each command here must end in seconds; a hang is the failure these tests look for.
QUICK = 60


def sweep(tmp, name, script, values=(1, 2), metrics=None, extra=""):
    """TMP/NAME.yaml: a command point per value of params.n, each running `script` with sh
    ($1 the point directory, $2 the value)."""
    with open(os.path.join(tmp, name + ".sh"), "w") as f:
        f.write(script + "\n")
    metrics = metrics or ["{name: value, regex: 'value ([0-9]+)'}"]
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nbase:\n  benchmark: command\n  params: {{n: 0}}\n  command:\n"
                f"    argv: [sh, {os.path.join(tmp, name + '.sh')}, '{{out}}', '{{params.n}}']\n"
                f"    metrics:\n" + "".join(f"      - {m}\n" for m in metrics) + extra +
                f"axes:\n  params.n: {json.dumps(list(values))}\n")
    return path


def ran(tmp, name, script, **kw):
    """The sweep `sweep()` writes, run once into TMP/out (every point ok); (sweep, out)."""
    s = sweep(tmp, name, script, **kw)
    out = os.path.join(tmp, "out")
    bench_sweep("run", s, "--out", out, check=0, timeout=QUICK)
    return s, out


def wait_until_running(test, out, n, seconds=20):
    """Until the `n` points of OUT all say running in their status.json."""
    deadline = time.time() + seconds
    while True:
        try:
            if [status_of(d)["status"] for d in points(out)] == ["running"] * n:
                return
        except (OSError, ValueError, KeyError):
            pass  # the plan or a record being written
        test.assertLess(time.time(), deadline, "the points did not start")
        time.sleep(0.05)


def points(out):
    manifest = read_json(os.path.join(out, "manifest.json"))
    return [os.path.join(out, p["tag"]) for p in manifest["points"]]


def status_of(point):
    return read_json(os.path.join(point, "status.json"))


class UntrustedTree(unittest.TestCase):
    """Deliver 1 and 3: every name taken from the tree is a plain entry inside --out."""

    def test_a_claim_that_is_a_fifo_is_refused_without_blocking(self):
        # Case 1: run --force (with or without --jobs 2), status and bench-extract blocked for
        # ever opening the FIFO, and ignored SIGTERM.
        with tempfile.TemporaryDirectory() as tmp:
            s, out = ran(tmp, "fifo", "echo value $2")
            first, second = points(out)
            claim = os.path.join(first, ".claim")
            os.mkfifo(claim)
            for jobs in ("1", "2"):
                r = bench_sweep("run", s, "--out", out, "--force", "--jobs", jobs, check=4,
                                timeout=QUICK)
                self.assertIn(f"not run     {os.path.basename(first)}  {claim}: is a FIFO, not a "
                              "regular file", r.stdout)
                self.assertIn("1 point not run: its directory holds what sweepbench cannot use "
                              "(exit 4)", r.stdout)
                self.assertNotIn("# OK", r.stdout)
            # The other point ran again each time; the first was not touched.
            self.assertEqual(status_of(second)["attempt"], 3)
            self.assertEqual(status_of(first)["attempt"], 1)
            self.assertFalse(os.path.exists(os.path.join(first, "attempts")))
            r = bench_sweep("status", out, check=0, timeout=QUICK)
            self.assertIn(f"{claim} is a FIFO, not a regular file", r.stdout)
            r = tool("bench-extract", "-i", out, check=0)
            rows = list(csv.DictReader(io.StringIO(r.stdout)))
            self.assertEqual([row["status"] for row in rows], ["ok", "ok"])

    def test_a_dangling_claim_link_with_force_is_refused_not_reported_ok(self):
        # Case 15: "running elsewhere: claimed by :0", then "# OK" and exit 0 without a rerun.
        with tempfile.TemporaryDirectory() as tmp:
            s, out = ran(tmp, "dangle", "echo value $2", values=[1])
            (point,) = points(out)
            os.symlink(os.path.join(tmp, "nowhere"), os.path.join(point, ".claim"))
            r = bench_sweep("run", s, "--out", out, "--force", check=4, timeout=QUICK)
            self.assertIn(f".claim: is a symbolic link (to {tmp}/nowhere): sweepbench never "
                          "follows a link inside a results tree", r.stdout)
            self.assertNotIn("claimed by :0", r.stdout)
            self.assertIn("# NOT ALL OK", r.stdout)

    def test_tags_that_are_sweepbenchs_own_names_are_refused_at_plan(self):
        # Case 4: tag.format submit, attempts or logs ran ok and bench-extract printed 0 rows;
        # manifest.json passed plan, then the run made DIR/manifest.json/ and died.
        with tempfile.TemporaryDirectory() as tmp:
            for fmt in ("submit", "attempts", "logs", "manifest.json", "'{params.n}'"):
                s = sweep(tmp, "reserved", "echo value 1", values=["logs"] if "{" in fmt else [1],
                          extra=f"tag: {{format: {fmt}}}\n")
                out = os.path.join(tmp, "out")
                r = bench_sweep("plan", s, "--out", out, check=2, timeout=QUICK)
                name = "logs" if "{" in fmt else fmt
                self.assertIn(f"gives '{name}' for", r.stderr)
                self.assertIn(f"'{name}' is a name sweepbench gives its own files and directories",
                              r.stderr)
                self.assertFalse(os.path.exists(out), fmt)

    def test_attempts_linked_out_of_the_tree_moves_nothing(self):
        # Case 5: run --force moved the previous attempt through the link, out of --out, exit 0.
        with tempfile.TemporaryDirectory() as tmp:
            s, out = ran(tmp, "attempts", "echo value $2", values=[1])
            (point,) = points(out)
            before = sorted(os.listdir(point))
            elsewhere = os.path.join(tmp, "elsewhere")
            os.mkdir(elsewhere)
            os.symlink(elsewhere, os.path.join(point, "attempts"))
            r = bench_sweep("run", s, "--out", out, "--force", check=4, timeout=QUICK)
            self.assertIn(f"{point}/attempts: is a symbolic link (to {elsewhere})", r.stdout)
            self.assertIn("the previous attempt was not moved, and the point did not run", r.stdout)
            self.assertEqual(os.listdir(elsewhere), [])
            self.assertEqual(sorted(os.listdir(point)), sorted(before + ["attempts"]))
            self.assertEqual(status_of(point)["attempt"], 1)

    def test_manifest_tags_that_leave_the_tree_are_refused(self):
        # Case 6: tags ../victim, an absolute path, "." or "" were read and listed as ok points.
        with tempfile.TemporaryDirectory() as tmp:
            s, out = ran(tmp, "tags", "echo value $2", values=[1])
            victim = os.path.join(tmp, "victim")
            os.mkdir(victim)
            with open(os.path.join(victim, "status.json"), "w") as f:
                json.dump({"status": "ok", "reason": ""}, f)
            manifest_path = os.path.join(out, "manifest.json")
            original = read_json(manifest_path)
            for tag in ("../victim", victim, ".", ""):
                m = json.loads(json.dumps(original))
                m["points"][0]["tag"] = tag
                with open(manifest_path, "w") as f:
                    json.dump(m, f)
                r = bench_sweep("status", out, check=4, timeout=QUICK)
                self.assertIn(f"manifest.json: error: points[0].tag {json.dumps(tag)} cannot name "
                              "a point directory inside this directory", r.stderr)
                self.assertNotIn("victim", r.stdout)

    def test_an_ok_point_whose_rank_file_is_gone_or_cut_runs_again(self):
        # Case 7: status and extract said incomplete, but run kept it ("kept: ok", "# OK", exit 0).
        with tempfile.TemporaryDirectory() as tmp:
            s, out = ran(tmp, "lost", "echo value $2")
            first, second = points(out)
            os.remove(os.path.join(first, "rank-00000.h5"))
            os.truncate(os.path.join(second, "rank-00000.h5"), 4096)
            r = bench_sweep("run", s, "--out", out, check=0, timeout=QUICK)
            self.assertIn("status.json says ok, but its results do not read back (no rank files",
                          r.stdout)
            self.assertIn("rank-00000.h5 is cut short", r.stdout)
            for p in (first, second):
                self.assertEqual((status_of(p)["status"], status_of(p)["attempt"]), ("ok", 2))
            self.assertTrue(os.path.exists(os.path.join(second, "attempts", "1", "rank-00000.h5")))
            r = bench_sweep("status", out, check=0, timeout=QUICK)
            self.assertNotIn("incomplete", r.stdout)

    def test_a_config_linked_or_edited_is_named_as_the_plans(self):
        # Case 15: "(config_hash unreadable, the info's is ...) (... info into another --out)".
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "config", "echo value $2", values=[1])
            out = os.path.join(tmp, "out")
            bench_sweep("plan", s, "--out", out, check=0, timeout=QUICK)
            (point,) = points(out)
            config = os.path.join(point, "config.yaml")
            os.remove(config)
            os.symlink("/etc/passwd", config)
            r = bench_sweep("run", s, "--out", out, check=4, timeout=QUICK)
            self.assertIn("config.yaml: error: is a symbolic link (to /etc/passwd)", r.stderr)
            os.remove(config)
            with open(config, "w") as f:
                f.write("not: a config\n")
            r = bench_sweep("run", s, "--out", out, check=3, timeout=QUICK)
            self.assertIn("holds no config this plan can compare (no config_hash line, and it does "
                          "not read as a config; the plan's is ", r.stderr)
            self.assertIn("plan into another --out", r.stderr)
            self.assertNotIn("info", r.stderr)


class Terminal(unittest.TestCase):
    """Deliver 2: SIGPIPE and write errors on standard output never stop the points."""

    def test_a_runner_whose_reader_goes_away_runs_and_records_every_point(self):
        # Case 2: `run --jobs 2 | head -1` died of SIGPIPE (141), its points left running.
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "pipe", "sleep 0.5; yes | head -1 > /dev/null; echo value $2",
                      values=[1, 2, 3, 4])
            out = os.path.join(tmp, "out")
            p = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"], env=ENV,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            p.stdout.readline()
            p.stdout.close()  # as `| head -1` does
            err = p.stderr.read().decode()
            self.assertEqual(p.wait(timeout=QUICK), 4, err)
            self.assertIn("bench-sweep: error: standard output: cannot write: Broken pipe", err)
            for point in points(out):
                self.assertEqual(status_of(point)["status"], "ok", point)
                # The points' programs get SIGPIPE's default back: `yes` ends quietly.
                with open(os.path.join(point, "logs", "stderr.txt")) as f:
                    self.assertNotIn("Broken pipe", f.read())

    def test_bench_extract_into_a_closed_pipe_exits_4(self):
        # Case 2: `bench-extract ... | head -1` died with 141 where docs/extract.md says 4.
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "extract", "echo value $2", values=list(range(1, 41)))
            out = os.path.join(tmp, "out")
            bench_sweep("run", s, "--out", out, "--jobs", "2", check=0, timeout=120)
            for args in (("-i", out), ("-i", out, "--format", "table")):
                p = subprocess.Popen([os.path.join(BIN, "bench-extract"), *args], env=ENV,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                p.stdout.close()  # the reader is gone before the first row
                err = p.stderr.read().decode()
                self.assertEqual(p.wait(timeout=QUICK), 4, err)
                self.assertIn("Broken pipe", err)


class Runner(unittest.TestCase):
    """Deliver 4: pruning and summaries follow this run and the disk; orphans are waited for."""

    def test_a_retried_out_of_memory_point_beside_the_larger_ones_prunes_nothing(self):
        # Case 8: run --retry-failed --jobs 2 pruned the larger points by the old OOM of a point
        # being retried beside them, which then ended ok.
        with tempfile.TemporaryDirectory() as tmp:
            fits = os.path.join(tmp, "fits")
            s = sweep(tmp, "oom", f"if [ $2 -ge 2 ] && [ ! -e {fits} ]; then "
                                  "echo 'CUDA out of memory' >&2; exit 1; fi; sleep 0.3; "
                                  "echo value $2",
                      values=[1, 2, 3, 4], extra="prune_after_oom: [params.n]\n")
            out = os.path.join(tmp, "out")
            r = bench_sweep("run", s, "--out", out, check=1, timeout=QUICK)
            self.assertEqual([status_of(p)["status"] for p in points(out)],
                             ["ok", "oom", "skipped", "skipped"], r.stdout)
            open(fits, "w").close()
            r = bench_sweep("run", s, "--out", out, "--retry-failed", "--jobs", "2", check=0,
                            timeout=QUICK)
            self.assertEqual([status_of(p)["status"] for p in points(out)], ["ok"] * 4, r.stdout)
            self.assertIn("# summary: ok 4", r.stdout)

    def test_points_another_runner_finished_are_summarised_as_they_ended(self):
        # Case 9: runner B ended "running 2 ok 2, NOT ALL OK", exit 1, though runner A had
        # finished them ok; points B saw running elsewhere were summarised pending.
        with tempfile.TemporaryDirectory() as tmp:
            go, done = os.path.join(tmp, "go"), os.path.join(tmp, "done")
            # A's points (1, 2) wait until B has passed them; B's own (3, 4) until A is done.
            s = sweep(tmp, "two", f"if [ $2 -le 2 ]; then until [ -e {go} ]; do sleep 0.02; "
                                  f"done; else until [ -e {done} ]; do sleep 0.02; done; fi; "
                                  "echo value $2", values=[1, 2, 3, 4])
            out = os.path.join(tmp, "out")
            bench_sweep("plan", s, "--out", out, check=0, timeout=QUICK)
            dirs = points(out)
            a = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--only", "0,1", "--jobs",
                                  "2"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            deadline = time.time() + 20
            while not all(os.path.exists(os.path.join(d, ".claim")) for d in dirs[:2]):
                self.assertLess(time.time(), deadline, "runner A did not claim its points")
                time.sleep(0.02)
            said = os.path.join(tmp, "b.txt")
            with open(said, "w") as log:
                b = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"],
                                     env=ENV, stdout=log, stderr=subprocess.STDOUT)

            def b_said():
                with open(said) as f:
                    return f.read()
            while b_said().count("elsewhere: claimed by") < 2 or b_said().count("running ") < 4:
                self.assertLess(time.time(), deadline + 20, b_said())
                time.sleep(0.02)
            open(go, "w").close()
            self.assertEqual(a.wait(timeout=QUICK), 0, a.communicate())
            open(done, "w").close()
            self.assertEqual(b.wait(timeout=QUICK), 0, b_said())
            self.assertIn("running     " + os.path.basename(dirs[0]) + "  elsewhere", b_said())
            self.assertIn("# summary: ok 4 (4 points)", b_said())
            self.assertIn("# OK", b_said())

    def test_a_rerun_after_the_runner_was_killed_waits_for_the_orphan_then_runs(self):
        # Case 10: the rerun left the point "running (orphaned)" and ended NOT ALL OK; a third
        # run was needed.
        with tempfile.TemporaryDirectory() as tmp:
            release = os.path.join(tmp, "release")
            # After bench-sweep's stop (SIGUSR2, which bench-command passes on as SIGTERM) the
            # program stops only once `release` exists: an orphan in a long step.
            s = sweep(tmp, "orphan", f"trap 'until [ -e {release} ]; do sleep 0.02; done; exit 3' "
                                     "TERM USR2; for i in $(seq 100); do sleep 0.1; done; "
                                     "echo value $2", values=[1])
            out = os.path.join(tmp, "out")
            p = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out], env=ENV,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_until_running(self, out, 1)
            (point,) = points(out)
            deadline = time.time() + 20
            time.sleep(0.3)
            p.kill()
            p.wait()
            # --orphan-wait 0: the old report, at once, and the run goes on without the point.
            r = bench_sweep("run", s, "--out", out, "--orphan-wait", "0", check=1, timeout=QUICK)
            self.assertIn("running (orphaned)", r.stdout)
            self.assertIn("not waited for past --orphan-wait 0.0 s", r.stdout)
            # The default waits, says so, and runs the point once the orphan has ended.
            said = os.path.join(tmp, "rerun.txt")
            with open(said, "w") as log:
                rerun = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out], env=ENV,
                                         stdout=log, stderr=subprocess.STDOUT)

            def rerun_said():
                with open(said) as f:
                    return f.read()
            while "# waiting for" not in rerun_said():
                self.assertLess(time.time(), deadline + 40, rerun_said())
                time.sleep(0.05)
            self.assertIn(f"# waiting for {os.path.basename(point)}: its runner", rerun_said())
            self.assertIn("is gone, but the point's processes still run", rerun_said())
            self.assertIsNone(rerun.poll())
            open(release, "w").close()
            self.assertEqual(rerun.wait(timeout=QUICK), 0, rerun_said())
            self.assertIn("# OK", rerun_said())
            st = status_of(point)
            self.assertEqual((st["status"], st["attempt"]), ("ok", 2))

    def test_a_second_stop_ends_every_point_at_once(self):
        # Questionable, decided: a second Ctrl-C under --jobs 2 ended the points about 3 s apart
        # (the second point's end waited out the first point's leftovers' grace); docs say at
        # once. Each point leaves a process that ignores SIGTERM in a session of its own.
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "stop2", "trap '' TERM INT USR2; "
                                    "setsid sh -c 'trap \"\" TERM; exec sleep 100' </dev/null "
                                    ">/dev/null 2>&1 & "
                                    "for i in $(seq 600); do sleep 0.1; done; echo value $2")
            out = os.path.join(tmp, "out")
            p = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"], env=ENV,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait_until_running(self, out, 2)
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
            time.sleep(1.3)
            p.send_signal(signal.SIGINT)
            stdout, stderr = p.communicate(timeout=QUICK)
            self.assertEqual(p.returncode, 6, stdout + stderr)
            ended = [status_of(d) for d in points(out)]
            self.assertEqual([e["status"] for e in ended], ["cancelled"] * 2, stdout)
            self.assertLess(abs(ended[0]["seconds"] - ended[1]["seconds"]), 1.5, stdout)
            # What each point left (its program's last `sleep` too, on a loaded machine).
            self.assertRegex(stdout, r"ended \d+ process(es)? the point left running: "
                                     r"\d+ \(sleep\)")


class JsonAtScale(unittest.TestCase):
    """Case 3, end to end: a valid vllm.json of 1.1 million latencies (5.5 MB) through the vllm
    parser. It failed "vllm.json line 1 is not JSON" after 31 s (a 4.5 MB one took 54 s and
    606 MB); each metric parsed the document again."""

    def test_a_large_vllm_json_is_read_by_every_metric_of_the_parser(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = os.path.join(tmp, "big.json")
            with open(doc, "w") as f:
                f.write('{"duration": 12.5, "completed": 900, "request_throughput": 71.75, '
                        '"mean_ttft_ms": 3.25, "itls": [')
                f.write(", ".join("0.00%d" % (i % 97) for i in range(1_100_000)))
                f.write('], "ttfts": [NaN, 1.5]}')
            self.assertGreater(os.path.getsize(doc), 5_000_000)
            path = os.path.join(tmp, "vllm.yaml")
            with open(path, "w") as f:
                f.write("name: vllm\nbase:\n  benchmark: command\n  command:\n"
                        f"    argv: [cp, {doc}, '{{out}}/vllm.json']\n    parser: vllm\n")
            out = os.path.join(tmp, "out")
            bench_sweep("run", path, "--out", out, check=0, timeout=QUICK)
            (point,) = points(out)
            summary = read_json(os.path.join(point, "summary.json"))
            self.assertEqual(summary["status"], "ok", summary)
            self.assertEqual(summary["metrics"]["request_throughput"], 71.75)
            self.assertEqual(summary["metrics"]["completed"], 900)
            self.assertEqual(summary["metrics"]["mean_ttft_ms"], 3.25)


class Directions(unittest.TestCase):
    """Deliver 5: one direction per metric, by its unit, everywhere."""

    def run_points(self, tmp):
        s = sweep(tmp, "dir", "echo tput $2; echo lat 5", values=[10, 30, 20],
                  metrics=["{name: tput, unit: tokens/s, regex: 'tput ([0-9]+)'}",
                           "{name: lat, unit: ms, regex: 'lat ([0-9]+)'}"])
        out = os.path.join(tmp, "out")
        bench_sweep("run", s, "--out", out, check=0, timeout=QUICK)
        return out

    def test_a_rate_unit_is_better_higher_in_best_pareto_and_the_figure(self):
        # Case 11: bench-compare called more tput better, but --best returned the lowest and
        # --pareto and the Pareto figure treated it as lower-is-better.
        with tempfile.TemporaryDirectory() as tmp:
            out = self.run_points(tmp)
            r = tool("bench-extract", "-i", out, "--best", "tput", check=0)
            self.assertEqual([row["tput"] for row in csv.DictReader(io.StringIO(r.stdout))],
                             ["30"])
            r = tool("bench-extract", "-i", out, "--pareto", "tput,lat", check=0)
            self.assertEqual([row["tput"] for row in csv.DictReader(io.StringIO(r.stdout))],
                             ["30"])
            table = os.path.join(tmp, "t.csv")
            tool("bench-extract", "-i", out, "-o", table, check=0)
            # From the CSV too, whose units column is text.
            r = tool("bench-extract", "-i", out, "--best", "lat", "--format", "json", check=0)
            script = os.path.join(tmp, "p.gp")
            r = tool("bench-plot", "-i", table, "--kind", "pareto", "--metric", "tput", "--x",
                     "lat", "-o", os.path.join(tmp, "p.png"), "--script", script, check=0)
            with open(script + ".dat") as f:
                blocks = [b for b in f.read().split("\n\n\n") if b.strip()]
            front = [line.split("\t") for line in blocks[-1].splitlines()
                     if line and not line.startswith("#")]
            self.assertEqual([float(cells[3]) for cells in front], [30.0])


class Arithmetic(unittest.TestCase):
    """Deliver 6: predictions that cannot overflow or go negative."""

    def test_ranks_past_any_machine_are_refused_and_the_largest_predict_sanely(self):
        # Case 12: launch.ranks=9223372036854775807 predicted -0.00043 device-hours; 2^40 gave 0.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "ranks.yaml")
            with open(path, "w") as f:
                f.write("name: ranks\nbase:\n  model: {preset: gpt2-tiny}\n  train: {steps: 20}\n")
            for ranks in ("9223372036854775807", str(2 ** 40), str(2 ** 24 + 1)):
                r = bench_sweep("plan", path, "--estimate", "--set", f"launch.ranks={ranks}",
                                check=2, timeout=QUICK)
                self.assertIn("launch.ranks", r.stderr)
                self.assertIn("16777216", r.stderr)
            r = bench_sweep("plan", path, "--estimate", "--format", "json", "--set",
                            f"launch.ranks={2 ** 24}", "--set", "launch.nodes=65536", check=0,
                            timeout=QUICK)
            total = json.loads(r.stdout)["total"]["device_hours"]
            self.assertTrue(math.isfinite(total) and total > 0, total)


class Messages(unittest.TestCase):
    """Cases 13 and 14: what reaches a terminal is escaped; a name that matches nothing is an
    error, not an empty answer."""

    def test_plan_escapes_the_out_directory(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "esc", "echo value 1", values=[1])
            out = os.path.join(tmp, "o\x1b[31m")
            r = bench_sweep("plan", s, "--out", out, check=0, timeout=QUICK)
            self.assertIn("o\\x1b[31m", r.stdout)
            self.assertNotIn("\x1b", r.stdout + r.stderr)

    def test_compare_refuses_a_metric_or_match_key_that_names_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "cmp", "echo value $2", values=[1, 2], extra="repeats: 3\n")
            out = os.path.join(tmp, "out")
            bench_sweep("run", s, "--out", out, "--jobs", "2", check=0, timeout=QUICK)
            for metric, what in (("nosuch", "neither side has this column"),
                                 ("valeu", "did you mean 'value'?"),
                                 ("status", "is not a metric: no cell of it on either side is a "
                                            "number"),
                                 ("tag", "is not a metric")):
                r = tool("bench-compare", out, out, "--metric", metric, check=2)
                self.assertIn(f"--metric {metric}: error: ", r.stderr)
                self.assertIn(what, r.stderr)
            r = tool("bench-compare", out, out, "--match", "nosuch", check=2)
            self.assertIn("--match nosuch: error: neither side has this key", r.stderr)
            r = tool("bench-compare", out, out, "--metric", "value", check=0)
            self.assertIn("value", r.stdout)

    def test_outputs_never_replace_a_device_or_a_fifo(self):
        # Questionable, decided: `-o NODE -f` replaced a character device or FIFO with a
        # regular file (as root, -o /dev/null -f would replace the system's).
        with tempfile.TemporaryDirectory() as tmp:
            s, out = ran(tmp, "node", "echo value $2", values=[1, 2])
            fifo = os.path.join(tmp, "table.csv")
            os.mkfifo(fifo)
            for target, kind in (("/dev/null", "a character device"), (fifo, "a FIFO")):
                r = tool("bench-extract", "-i", out, "-o", target, "-f", check=2)
                self.assertIn(f"{target}: error: is {kind}, not a regular file", r.stderr)
                r = tool("bench-compare", out, out, "-o", target, "-f", check=2)
                self.assertIn(f"is {kind}, not a regular file", r.stderr)
            self.assertTrue(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"))
            table = os.path.join(tmp, "t.csv")
            tool("bench-extract", "-i", out, "-o", table, check=0)
            r = tool("bench-plot", "-i", table, "--metric", "value", "-o",
                     os.path.join(tmp, "p.png"), "--script", fifo, check=2)
            self.assertIn("is a FIFO, not a regular file", r.stderr)

    def test_a_side_value_of_two_types_is_refused_not_pooled(self):
        # Questionable, decided: --side params.x=1,2 pooled the integer 1 and the string "1".
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "types", "echo value 7", values=[1, "1", 2], extra="repeats: 3\n")
            out = os.path.join(tmp, "out")
            bench_sweep("run", s, "--out", out, "--jobs", "2", check=0, timeout=QUICK)
            r = tool("bench-compare", out, "--side", "params.n=1,2", check=2)
            self.assertIn("params.n=1 is a string and an integer in different points", r.stderr)


if __name__ == "__main__":
    unittest.main()
