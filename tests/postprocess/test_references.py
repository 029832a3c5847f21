"""Performance references of a sweep file on real runs: bench-train points (gpt2-tiny, two
repeats) checked as they finish, `bench-sweep run` and `status` naming the points that missed with
exit code 10, status.json keeping each check, bench-extract's columns (read back with pandas),
and the verdict of the repeats' interval with --group-repeats. A point that fails is not checked.
The partition condition is tested on the real SLURM cluster (tests/launch/test_slurm.py).

    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/postprocess/test_references.py -v
"""
import io
import json
import os
import socket
import sys
import tempfile
import unittest

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, bench_sweep, read_json, run_tool  # noqa: E402

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")

# micro batch 4 expects a throughput no CPU reaches (a miss); the rest a floor every run passes;
# references keyed to another device or host never apply, whatever they expect.
SWEEP = """\
name: refs
repeats: 2
base:
  model: {preset: gpt2-tiny}
  data: {source: synthetic, seq_len: 32}
  train: {steps: 22, warmup_steps: 2}
  eval: {steps: 0}
  metrics: {sample_interval_ms: 0, system: false}
axes:
  train.micro_batch: [2, 4]
references:
  - {metric: train_tokens_per_second, value: 100, lower: -50%%}
  - {metric: train_tokens_per_second, value: %(fast)s, lower: -10%%, when: {train.micro_batch: 4}}
  - {metric: train_tokens_per_second, value: 1.0e+15, lower: -1%%, device: '*NoSuchGPU*'}
  - {metric: mem_peak_bytes, value: 0, upper: 1.0e+12, host: '%(host)s'}
  - {metric: mem_peak_bytes, value: 1.0e+12, lower: -100%%, host: '%(host)s'}
  - {metric: mem_peak_bytes, value: 0, upper: 1, host: 'no-such-host-*'}
"""


def extract(*args):
    return run_tool(BENCH_EXTRACT, *args).stdout


class References(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, fast):
        path = os.path.join(self.tmp, "refs.yaml")
        with open(path, "w") as f:
            f.write(SWEEP % {"fast": fast, "host": socket.gethostname()[:3] + "*"})
        return path

    def test_run_status_and_extract_name_the_points_that_missed(self):
        sweep = self.write("1.0e+12")
        r = bench_sweep("run", sweep, "--out", self.out, check=10)
        self.assertIn("MISSED its reference: train_tokens_per_second", r.stdout)
        self.assertIn("# references: 2 passed, 2 missed", r.stdout)
        self.assertIn("# MISSED REFERENCES: every point is ok, but 2 points missed", r.stdout)
        manifest = read_json(os.path.join(self.out, "manifest.json"))
        by_batch = {}
        for p in manifest["points"]:
            record = read_json(os.path.join(self.out, p["tag"], "status.json"))
            self.assertEqual(record["status"], "ok")  # a miss does not change how it ran
            by_batch.setdefault(p["varying"]["train.micro_batch"], []).append(record)
        for record in by_batch[2]:
            self.assertEqual(record["reference"], "pass")
            checks = {c["metric"]: c for c in record["references"]}
            tps = checks["train_tokens_per_second"]
            self.assertEqual((tps["reference"], tps["low"], tps["high"]), (100, 50, None))
            # The interval is of the steps after the warm-up cut; the measured value counts every
            # step, so it may lie outside it (docs/metrics.md).
            if tps["ci_high"] is not None:  # see the micro batch 4 points below
                self.assertLess(tps["ci_low"], tps["ci_high"])
            self.assertTrue(tps["pass"])
            # Only this host's two memory references applied (equally specific: both), not the
            # other host's.
            self.assertEqual(len(record["references"]), 3)
            self.assertEqual({(c["low"], c["high"]) for c in record["references"]
                              if c["metric"] == "mem_peak_bytes"}, {(None, 1e12), (0, None)})
        for record in by_batch[4]:
            self.assertEqual(record["reference"], "miss")
            tps = [c for c in record["references"] if c["metric"] == "train_tokens_per_second"]
            # The more specific reference (when: micro_batch 4) replaced the general one.
            self.assertEqual(len(tps), 1)
            self.assertEqual(tps[0]["reference"], 1e12)
            self.assertFalse(tps[0]["pass"])
            # The throughput's interval is the step time's, inverted. On a busy machine a few
            # slow steps can stretch the step time's interval down to 0 (docs/metrics.md): then
            # the throughput has no upper bound, no interval is kept, and the check is of the
            # measured value alone (CI saw it once in 2026-11).
            if tps[0]["ci_high"] is not None:
                self.assertLess(tps[0]["ci_high"], 0.9e12)
                self.assertRegex(tps[0]["why"],
                                 r"^train_tokens_per_second \S+ \[\S+, \S+\] is below 9e\+11$")
            else:
                self.assertIsNone(tps[0]["ci_low"])
                self.assertLess(tps[0]["measured"], 0.9e12)
                self.assertRegex(tps[0]["why"], r"^train_tokens_per_second \S+ is below 9e\+11$")
            self.assertRegex(tps[0]["where"], r"refs\.yaml:13:5$")

        status = bench_sweep("status", "--out", self.out, check=10)
        self.assertIn("# references: 2 passed, 2 missed (exit 10)", status.stdout)
        self.assertEqual(status.stdout.count("MISSED its reference"), 2)
        js = json.loads(bench_sweep("status", "--out", self.out, "--format", "json",
                                    check=10).stdout)
        self.assertEqual(js["references"], {"passed": 2, "missed": 2})
        self.assertEqual(sorted(p["reference"] for p in js["points"]), ["miss"] * 2 + ["pass"] * 2)

        rows = pd.read_csv(io.StringIO(extract("-i", self.out, "--format", "csv")))
        self.assertEqual(len(rows), 4)
        for _, row in rows.iterrows():
            miss = row["train.micro_batch"] == 4
            self.assertEqual(row["reference"], "miss" if miss else "pass")
            self.assertEqual(row["train_tokens_per_second_ref"], 1e12 if miss else 100)
            self.assertEqual(row["train_tokens_per_second_ref_low"], 0.9e12 if miss else 50)
            self.assertEqual(bool(row["train_tokens_per_second_ref_pass"]), not miss)
            # Both memory references in one range: the first's upper, the second's lower bound.
            self.assertEqual(row["mem_peak_bytes_ref_high"], 1e12)
            self.assertEqual(row["mem_peak_bytes_ref_low"], 0)
        grouped = pd.read_csv(io.StringIO(extract("-i", self.out, "--format", "csv",
                                                  "--group-repeats")))
        self.assertEqual(len(grouped), 2)
        for _, row in grouped.iterrows():
            miss = row["train.micro_batch"] == 4
            self.assertEqual(row["repeats"], 2)
            self.assertEqual(row["reference"], "miss" if miss else "pass")
            self.assertEqual(bool(row["train_tokens_per_second_ref_pass"]), not miss)
        people = extract("-i", self.out, "--format", "table")
        self.assertEqual(people.count("MISS"), 2)
        # (Beside the references: --best on a metric no CPU point has, MFU without a peak, says
        # so rather than printing an empty table without a word.)
        r = run_tool(BENCH_EXTRACT, "-i", self.out, "--best", "mfu")
        self.assertIn("--best mfu: no ok row has a value of it", r.stderr)

        # A reference fixed in the sweep file is checked again on the kept points: all pass.
        sweep = self.write("2000")
        r = bench_sweep("run", sweep, "--out", self.out, check=0)
        self.assertIn("# references: 4 passed, 0 missed", r.stdout)
        self.assertEqual(r.stdout.count("kept: ok"), 4)
        bench_sweep("status", "--out", self.out, check=0)
        for p in manifest["points"]:
            record = read_json(os.path.join(self.out, p["tag"], "status.json"))
            self.assertEqual(record["reference"], "pass")

    def test_a_failed_point_is_not_checked_and_exits_1(self):
        path = os.path.join(self.tmp, "fail.yaml")
        with open(path, "w") as f:
            f.write("name: fail\nbase:\n  benchmark: command\n  command:\n"
                    "    argv: [sh, -c, 'echo value $0; exit $0', '{params.code}']\n"
                    "    metrics: [{name: value, regex: 'value ([0-9]+)'}]\n"
                    "axes:\n  params.code: [0, 3]\n"
                    "references:\n  - {metric: value, value: 100, lower: -1}\n"
                    "  - {metric: seconds, value: 0, upper: 60}\n"
                    "  - {metric: value, value: 1, lower: -1, when: {params.code: 7}}\n")
        r = bench_sweep("run", path, "--out", self.out, check=1)
        # A reference whose `when` no point has is a typo: said, not silently ignored.
        self.assertIn("fail.yaml:12:5: references[2] applies to no point of the sweep", r.stderr)
        self.assertIn("# references: 0 passed, 1 missed", r.stdout)
        records = {p["varying"]["params.code"]: read_json(os.path.join(self.out, p["tag"],
                                                                       "status.json"))
                   for p in read_json(os.path.join(self.out, "manifest.json"))["points"]}
        self.assertEqual(records[0]["reference"], "miss")
        self.assertEqual(records[0]["references"][0]["why"], "value 0 is below 99")
        # A command's wall time (summary.json's seconds) is checked like its metrics.
        self.assertEqual(records[0]["references"][1]["metric"], "seconds")
        self.assertEqual(records[0]["references"][1]["unit"], "s")
        self.assertTrue(records[0]["references"][1]["pass"])
        self.assertEqual(records[3]["status"], "failed")
        self.assertNotIn("reference", records[3])

    def test_bad_references_are_refused_before_anything_runs(self):
        path = os.path.join(self.tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write("name: bad\nbase: {model.preset: gpt2-tiny}\n"
                    "references:\n  - {metric: mem_peak_bytes, value: 0, upper: 5%}\n")
        r = bench_sweep("run", path, "--out", self.out, check=2)
        self.assertIn("bad.yaml:4:47: error: references[0].upper: a percentage of a reference of 0",
                      r.stderr)
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()
