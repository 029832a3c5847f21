"""bench-sweep plan --estimate against real runs (docs/metrics.md, "Predicted memory"): a sweep of
short CPU trainings that exercises every term of the memory model (GPT-2 and Llama with grouped
KV heads, fp32 and bf16, checkpointing, the chunked loss, LoRA, two ranks with ZeRO-2 and ZeRO-3)
and one
generation, run for real; each point's predicted peak against its measured peak of libtorch's
allocations (bench-extract's mem_alloc_peak_bytes, counted). Then the formats: the people's table
with its parts and footer, CSV and JSON, and a command point, which has no prediction.

    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/postprocess/test_memory_estimate.py -v
"""
import io
import json
import os
import re
import sys
import tempfile
import unittest

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, bench_sweep, run_tool  # noqa: E402

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")

SWEEP = """\
name: memory-estimate
base:
  model: {preset: gpt2-tiny, n_embd: 128, n_head: 4, n_kv_head: 2, vocab_size: 4096, block_size: 256}
  data: {source: synthetic, seq_len: 128}
  train: {steps: 3, warmup_steps: 1, micro_batch: 4}
  eval: {steps: 0}
  metrics: {sample_interval_ms: 0, system: false}
include:
  - {train.dtype: bf16}
  - {train.activation_checkpointing: true}
  - {train.dtype: bf16, train.activation_checkpointing: true}
  - {train.fused_loss: true, data.seq_len: 256}
  - {train.fused_loss: true, data.seq_len: 256, train.loss_chunk_rows: 64}
  - {train.peft: lora}
  - {model.preset: llama-tiny, model.n_layer: 3, model.ffn_dim: 384}
  - {model.preset: llama-tiny, model.n_layer: 3, model.ffn_dim: 384, train.dtype: bf16}
  - {launch.ranks: 2, train.zero_stage: 3}
  - {launch.ranks: 2, train.zero_stage: 2, train.activation_checkpointing: true}
  - {benchmark: infer, infer: {batch_size: 4, input_tokens: 64, output_tokens: 16, runs: 1}}
"""


class MemoryEstimate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sb-memest-")
        cls.sweep = os.path.join(cls.tmp, "sweep.yaml")
        with open(cls.sweep, "w") as f:
            f.write(SWEEP)
        cls.out = os.path.join(cls.tmp, "runs")
        bench_sweep("run", cls.sweep, "--out", cls.out, check=0)

    def estimate(self, *args):
        return bench_sweep("plan", self.sweep, "--estimate", *args, check=0).stdout

    def test_every_prediction_is_near_what_ran(self):
        predicted = pd.read_csv(io.StringIO(self.estimate("--format", "csv")))
        measured = pd.read_csv(io.StringIO(run_tool(BENCH_EXTRACT, "-i", self.out, "--format", "csv").stdout))
        self.assertEqual(len(predicted), 12)
        rows = predicted.merge(measured, on="tag", suffixes=("", "_x"))
        self.assertEqual(len(rows), 12)
        self.assertTrue((rows.status == "ok").all())
        self.assertTrue((rows.device == "cpu").all())
        error = (rows.mem_pred_peak_bytes - rows.mem_alloc_peak_bytes) / rows.mem_alloc_peak_bytes
        report = "\n".join(f"{t}: {e:+.3f}" for t, e in zip(rows.tag, error))
        # The goals of issue 36 on a CPU: mean absolute error 5% at most, no point off by 10%.
        self.assertLess(error.abs().mean(), 0.05, report)
        self.assertLess(error.abs().max(), 0.10, report)
        # The resident set (what memory_limit compares on a CPU) against its high-water mark:
        # within 20% everywhere here (docs/performance.md measures 9.4% at worst).
        resident = rows.mem_pred_resident_bytes / rows.mem_peak_bytes - 1
        report = "\n".join(f"{t}: {e:+.3f}" for t, e in zip(rows.tag, resident))
        self.assertLess(resident.abs().max(), 0.20, report)
        # The line through the counted peak, where neither checkpointing nor ZeRO-1/2 is on;
        # with checkpointing, through the peak plus half the gap to its twin's without (point 0
        # is point 2's: docs/metrics.md, "The resident set").
        line = 159e6 + 1.39 * rows.mem_pred_peak_bytes
        shared = rows["train.activation_checkpointing"].astype(str).str.lower().eq("true") | \
            rows["train.zero_stage"].isin([1, 2])
        self.assertTrue(((rows.mem_pred_resident_bytes - line)[~shared].abs() < 1).all())
        self.assertTrue((rows.mem_pred_resident_bytes[shared] > line[shared]).all())
        whole, checkpointed = (rows[rows["index"] == i].iloc[0] for i in (0, 2))
        self.assertEqual(str(whole["train.activation_checkpointing"]).lower(), "false")
        self.assertEqual(str(checkpointed["train.activation_checkpointing"]).lower(), "true")
        self.assertEqual((whole["train.dtype"], whole["launch.ranks"]),
                         (checkpointed["train.dtype"], checkpointed["launch.ranks"]))
        self.assertAlmostEqual(checkpointed.mem_pred_resident_bytes,
                               159e6 + 1.39 * (checkpointed.mem_pred_peak_bytes + 0.5 * (
                                   whole.mem_pred_peak_bytes - checkpointed.mem_pred_peak_bytes)),
                               delta=1)
        # The parts add up to the step, and the point's peak is the larger of step and init.
        train = rows[rows["mem_pred_model_states_bytes"] > 0]
        parts = train[["mem_pred_model_states_bytes", "mem_pred_buckets_bytes",
                       "mem_pred_weight_copies_bytes", "mem_pred_activations_bytes",
                       "mem_pred_gathered_bytes", "mem_pred_gradients_bytes"]].sum(axis=1)
        parts += train[["mem_pred_head_bytes", "mem_pred_recompute_bytes"]].max(axis=1)
        self.assertTrue(((parts - train.mem_pred_step_bytes).abs() < 1).all())
        peak = train[["mem_pred_step_bytes", "mem_pred_init_bytes"]].max(axis=1)
        self.assertTrue(((peak - train.mem_pred_peak_bytes).abs() < 1).all())
        # ZeRO-3 over two ranks: each holds half the states, a gathered block while it computes.
        zero = train[train["train.zero_stage"] == 3].iloc[0]
        self.assertGreater(zero.mem_pred_gathered_bytes, 0)
        self.assertEqual(zero.mem_model_states_bytes, zero.mem_pred_model_states_bytes
                         - 4 * 1.5 * (4096 * 128 + 256 * 128 + 2 * 128))
        # ZeRO-2: the reduce's scratch, the largest bucket (every matrix) whole and half of it.
        zero2 = train[train["train.zero_stage"] == 2].iloc[0]
        matrices = 4096 * 128 + 256 * 128 + 2 * (128 * 256 + 128 * 128 + 2 * 128 * 512)
        self.assertEqual(zero2.mem_pred_buckets_bytes, 4 * 1.5 * matrices)
        infer = rows[rows["mem_pred_weights_bytes"] > 0].iloc[0]
        self.assertEqual(infer.mem_pred_kv_cache_bytes, infer.kv_cache_bytes)
        self.assertEqual(infer.mem_pred_weights_bytes, infer.weight_bytes)
        # train.loss_chunk_rows reaches bench-train: chunks of 64 tokens hold less than one chunk
        # of all 1,024 (the default here, 16 Mi logits over a vocabulary of 4,096, is 4,096 rows).
        chunked = rows[rows["train.fused_loss"] == True].set_index("train.loss_chunk_rows")  # noqa: E712
        self.assertEqual(sorted(chunked.index), [0, 64])
        self.assertLess(chunked.mem_alloc_peak_bytes[64], 0.8 * chunked.mem_alloc_peak_bytes[0])

    def test_the_table_shows_the_parts_and_the_largest(self):
        text = self.estimate()
        self.assertIn("predicted memory per rank", text.splitlines()[0])
        # Sizes in the unit each number asks for: a small model's peak is no "0.00".
        self.assertIn(" peak ", text.splitlines()[1])
        self.assertNotRegex(text, r"\b0\.00\b")
        self.assertRegex(text, r"model_states [0-9.]+ (B|KiB|MiB|GiB)")
        self.assertIn("model_states ", text)
        self.assertIn("kv_cache ", text)
        self.assertRegex(text, r"# 12 points; the largest predicted peak [0-9.]+ [KMG]iB a rank \(point \d+\); "
                               r"the largest resident set \(CPUs\) [0-9.]+ [KMG]iB \(point \d+\)")
        self.assertRegex(text, r"# predicted [0-9.e-]+ device-hours for 12 of 12 points; uncalibrated")
        doc = json.loads(self.estimate("--format", "json"))
        self.assertEqual(len(doc["points"]), 12)
        first = doc["points"][0]["memory"]
        self.assertEqual(first["peak_bytes"], max(first["init_peak_bytes"], first["step_peak_bytes"]))
        self.assertIn("activations", first["terms"])

    def test_memory_limit_skips_what_would_not_fit(self):
        # Two points; a limit between their predicted resident sets (what the limit compares on
        # a CPU): the larger is recorded as skipped with its prediction, and which figure it is,
        # as the reason and never runs, the smaller runs. Forced to run, the larger one's
        # resident set goes over the limit: it would not have fitted.
        base = SWEEP.split("include:")[0].replace("name: memory-estimate", "name: limit")
        sweep = os.path.join(self.tmp, "limit.yaml")
        with open(sweep, "w") as f:
            f.write(base + "axes:\n  train.micro_batch: [1, 64]\n")
        rows = pd.read_csv(io.StringIO(bench_sweep("plan", sweep, "--estimate", "--format", "csv",
                                                   check=0).stdout))
        small, large = sorted(rows.mem_pred_resident_bytes)
        self.assertTrue((rows.mem_pred_resident_bytes > rows.mem_pred_peak_bytes).all())
        limit_mb = int(large / 1.25 / 2**20)
        self.assertGreater(limit_mb * 2**20, small * 1.2)
        with open(sweep, "a") as f:
            f.write(f"memory_limit: {{bytes: {limit_mb} MiB, margin: 5%}}\n")
        table = bench_sweep("plan", sweep, "--estimate", check=0).stdout
        self.assertIn("1 point predicted over it, which bench-sweep run and submit skip", table)
        out = os.path.join(self.tmp, "limit-runs")
        # Skipped by the limit was asked for: the run is not a failure for it.
        r = bench_sweep("run", sweep, "--out", out, check=0)
        self.assertIn("skipped", r.stdout)
        statuses = {}
        for tag in os.listdir(out):
            path = os.path.join(out, tag, "status.json")
            if os.path.exists(path):
                with open(path) as f:
                    statuses[tag] = json.load(f)
        by_status = {s["status"]: (tag, s) for tag, s in statuses.items()}
        self.assertEqual(sorted(by_status), ["ok", "skipped"])
        tag, skipped = by_status["skipped"]
        self.assertIn("micro_batch=64", tag)
        # The prediction in the limit's units (MiB or GiB, never GB beside a MiB limit).
        m = re.search(r"predicted resident set ([0-9.]+) (KiB|MiB|GiB) a rank, over memory_limit "
                      rf"\({limit_mb} MiB, margin 5%\)", skipped["reason"])
        self.assertIsNotNone(m, skipped["reason"])
        unit = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[m.group(2)]
        self.assertAlmostEqual(float(m.group(1)) * unit / large, 1, delta=0.01)
        self.assertFalse([f for f in os.listdir(os.path.join(out, tag)) if f.endswith(".h5")])
        # Run again: the skipped point is left as it was (no new attempt), the ok one kept.
        again = bench_sweep("run", sweep, "--out", out, check=0).stdout
        self.assertRegex(again, rf"skipped\s+{re.escape(tag)}\s+kept: predicted")
        with open(os.path.join(out, tag, "status.json")) as f:
            self.assertEqual(json.load(f)["attempt"], skipped["attempt"])
        # bench-sweep submit never queues it (--dry-run: what it would submit, here without SLURM).
        dry = bench_sweep("submit", sweep, "--out", os.path.join(self.tmp, "submitted"), "--dry-run",
                          check=0).stdout
        self.assertIn(f"#   skipped {tag}: predicted", dry)
        self.assertIn("# array 1/1: 1 point,", dry)
        forced = os.path.join(self.tmp, "forced")
        run_tool(os.path.join(BIN, "bench-train"), "--config", os.path.join(out, tag, "config.yaml"),
                 "--out", forced)
        with open(os.path.join(forced, "summary.json")) as f:
            resident = json.load(f)["metrics"]["mem_peak_bytes"]
        self.assertGreater(resident, limit_mb * 2**20)

    def test_a_bad_memory_limit_names_the_key(self):
        sweep = os.path.join(self.tmp, "bad.yaml")
        for text, message in (("{bytes: lots}", "memory_limit.bytes: 'lots' is not an amount of memory"),
                              ("{bytes: 80 GB, margin: 0.1}", "memory_limit.margin: "),
                              ("{margin: 10%}", "memory_limit: needs bytes"),
                              ("{bytes: 1 GB, slack: 1%}", "slack")):
            with open(sweep, "w") as f:
                f.write("base: {model: {preset: gpt2-tiny}}\nmemory_limit: " + text + "\n")
            r = bench_sweep("plan", sweep, check=2)
            self.assertIn("bad.yaml:2:", r.stderr)
            self.assertIn(message, r.stderr)

    def test_a_command_point_has_no_prediction(self):
        sweep = os.path.join(self.tmp, "command.yaml")
        with open(sweep, "w") as f:
            f.write("base:\n  benchmark: command\n  command: {argv: [sleep, '0']}\n"
                    "axes:\n  params.x: [1, 2]\n")
        text = bench_sweep("plan", sweep, "--estimate", check=0).stdout
        self.assertIn("2 points without a prediction (commands)", text)
        rows = pd.read_csv(io.StringIO(bench_sweep("plan", sweep, "--estimate", "--format", "csv",
                                                   check=0).stdout))
        self.assertTrue(rows.mem_pred_peak_bytes.isna().all())


if __name__ == "__main__":
    unittest.main()
