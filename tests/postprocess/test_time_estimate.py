"""bench-sweep plan --estimate's time and cost (docs/metrics.md, "Predicted time and cost") with
real runs: a sweep of short CPU trainings (two shapes of GPT-2 and one of Llama, checkpointing,
two ranks with ZeRO-2) and one generation, run for real; then the prediction calibrated by that
results tree (--calibrate), whose arithmetic is checked against what ran: each model's points
are scaled by one factor, the median of their measured over predicted times (a model measured
once is predicted exactly as it ran), other models are not touched. The FLOPs a step predicts are the FLOPs bench-train
counts, and the bytes its communication term predicts are the bytes bench-train's ranks send
(CommunicationBytes: ZeRO 0-3, accumulation, tensor parallelism, LoRA, odd rank counts). Then
the people's table with its marks and totals, CSV and JSON, what run prints before
it starts, GPUs without hardware.name, prices, commands, and bad --calibrate arguments. No
assertion on how near an uncalibrated time is: that depends on the machine
(docs/performance.md has the accuracy).

    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/postprocess/test_time_estimate.py -v
"""
import io
import json
import os
import statistics
import sys
import tempfile
import unittest

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, ENV, bench_sweep, run_tool  # noqa: E402

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")

SWEEP = """\
name: time-estimate
base:
  model: {preset: gpt2-tiny, n_embd: 128, n_head: 4, vocab_size: 4096, block_size: 256}
  data: {source: synthetic, seq_len: 128}
  train: {steps: 4, warmup_steps: 1, micro_batch: 2}
  eval: {steps: 0}
  metrics: {sample_interval_ms: 0, system: false}
include:
  - {train.micro_batch: 8}
  - {train.activation_checkpointing: true}
  - {launch.ranks: 2, train.zero_stage: 2}
  - {model.n_layer: 1}
  - {model.preset: llama-tiny, model.n_layer: 2, model.ffn_dim: 384}
  - {benchmark: infer, infer: {batch_size: 2, input_tokens: 32, output_tokens: 8, runs: 2}}
"""


class TimeEstimate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sb-timeest-")
        cls.sweep = os.path.join(cls.tmp, "sweep.yaml")
        with open(cls.sweep, "w") as f:
            f.write(SWEEP)
        cls.out = os.path.join(cls.tmp, "runs")
        cls.first_run = bench_sweep("run", cls.sweep, "--out", cls.out, check=0).stdout
        cls.measured = pd.read_csv(io.StringIO(
            run_tool(BENCH_EXTRACT, "-i", cls.out, "--format", "csv").stdout))

    def estimate(self, *args, sweep=None, check=0):
        return bench_sweep("plan", sweep or self.sweep, "--estimate", *args, check=check)

    def csv(self, *args):
        return pd.read_csv(io.StringIO(self.estimate("--format", "csv", *args).stdout))

    def test_one_measured_point_calibrates_its_model(self):
        plain = self.csv()
        calibrated = self.csv("--calibrate", self.out)
        self.assertEqual(len(plain), 7)
        self.assertTrue(plain.time_pred_step_s.notna().all())
        self.assertTrue((plain.time_calibration == 1).all())
        rows = calibrated.merge(plain, on="tag", suffixes=("", "_plain")).merge(
            self.measured, on="tag", suffixes=("", "_m"))
        self.assertEqual(len(rows), 7)
        self.assertTrue((rows.status == "ok").all())
        measured = rows.step_time_median_s.fillna(rows.e2e_p50_s)
        # A model: the arch and shape (the depth tells the two GPT-2s apart) and the benchmark.
        rows["model"] = (rows["model.arch"] + rows["model.n_layer"].astype(str)
                         + rows["benchmark"].fillna("train"))
        for model, group in rows.groupby("model"):
            # The factor: the median over the model's points of measured over predicted.
            factor = statistics.median(measured[group.index] / group.time_pred_step_s_plain)
            for _, r in group.iterrows():
                self.assertAlmostEqual(r.time_calibration / factor, 1, places=9, msg=model)
                self.assertAlmostEqual(r.time_pred_step_s / (r.time_pred_step_s_plain * factor), 1,
                                       places=9)
                # The point's seconds: the start-up (measured on CPUs, not scaled) and its work.
                self.assertGreater(r.time_pred_startup_s, 0)
                self.assertAlmostEqual((r.time_pred_run_s - r.time_pred_startup_s)
                                       / ((r.time_pred_run_s_plain - r.time_pred_startup_s) * factor),
                                       1, places=9)
                self.assertAlmostEqual(r.time_pred_device_hours * 3600
                                       / (r.time_pred_run_s * r["launch.ranks"]), 1, places=9)
                self.assertAlmostEqual(r.time_pred_tokens_per_second * factor
                                       / r.time_pred_tokens_per_second_plain, 1, places=9)
            if len(group) == 1:  # one point: predicted exactly as it ran
                self.assertAlmostEqual(group.time_pred_step_s.iloc[0] / measured[group.index[0]], 1,
                                       places=9)
        # The four GPT-2 trainings of one shape share one factor.
        gpt2 = rows[rows.model == "gpt22train"]
        self.assertEqual(len(gpt2), 4)
        self.assertEqual(gpt2.time_calibration.round(12).nunique(), 1)

    def test_the_flops_are_what_bench_train_counts(self):
        rows = self.csv().merge(self.measured, on="tag", suffixes=("", "_m"))
        plain = rows[(rows["model.arch"] == "gpt2") & (rows["train.activation_checkpointing"] != True)  # noqa: E712
                     & (rows["launch.ranks"] == 1) & rows.model_flops_per_token.notna()]
        self.assertGreaterEqual(len(plain), 2)
        for _, r in plain.iterrows():
            tokens = r["train.micro_batch"] * r["data.seq_len"]
            self.assertAlmostEqual(r.time_pred_flops / (tokens * r.model_flops_per_token), 1, places=9)
        # Checkpointing runs the blocks' forward again: more FLOPs, same model FLOPs.
        ckpt = rows[rows["train.activation_checkpointing"] == True].iloc[0]  # noqa: E712
        self.assertGreater(ckpt.time_pred_flops, 2 * 128 * ckpt.model_flops_per_token)
        # ZeRO-2 over two ranks: a reduce-scatter and an all-gather of the fp32 gradients.
        zero = rows[rows["launch.ranks"] == 2].iloc[0]
        self.assertGreater(zero.time_pred_comm_bytes, 0)
        self.assertTrue((rows[rows["launch.ranks"] == 1].time_pred_comm_bytes == 0).all())

    def test_the_table_json_and_totals(self):
        text = self.estimate("--calibrate", self.out).stdout
        self.assertIn("predicted memory per rank and time", text.splitlines()[0])
        for column in ("step s", "tokens/s", "device-h"):
            self.assertIn(column, text)
        self.assertNotIn("cost USD", text)  # no price set
        self.assertIn("*", text)
        self.assertRegex(text, r"# predicted [0-9.e-]+ device-hours for 7 of 7 points; 7 calibrated "
                               r"by measured points of their model \(marked \*\)")
        doc = json.loads(self.estimate("--format", "json", "--calibrate", self.out).stdout)
        self.assertEqual(len(doc["points"]), 7)
        total = sum(p["time"]["device_hours"] for p in doc["points"])
        self.assertAlmostEqual(doc["total"]["device_hours"] / total, 1, places=9)
        self.assertEqual(doc["total"]["calibrated"], 7)
        self.assertEqual(doc["total"]["measured_points"], 7)
        self.assertIn("reference CPU", doc["points"][0]["time"]["rate"])

    def test_run_prints_the_prediction_before_it_starts(self):
        lines = self.first_run.splitlines()
        start = next(i for i, l in enumerate(lines) if l.startswith("# bench-sweep run:"))
        self.assertRegex(lines[start + 1], r"^# predicted [0-9.e-]+ device-hours for 7 of 7 points; "
                                           r"uncalibrated")
        # Again over the same tree: every point is ok, nothing to run; forced, every point
        # runs again, predicted from the tree's measurements.
        again = bench_sweep("run", self.sweep, "--out", self.out, check=0).stdout
        self.assertIn("# predicted 0 device-hours: none of its 7 points is to run", again)
        forced = bench_sweep("run", self.sweep, "--out", self.out, "--force", "--only", "0,6",
                             check=0).stdout
        self.assertRegex(forced, r"# predicted [0-9.e-]+ device-hours for 2 of 7 points; "
                                 r"2 calibrated by measured points of their model; 5 not to run")
        # A job array's task calibrates nothing: it would read every point's results, in
        # every task. The line says why; the plain run above calibrated the same points.
        array = dict(ENV, SLURM_ARRAY_TASK_ID="0")
        task = bench_sweep("run", self.sweep, "--out", self.out, "--force", "--only", "0,6",
                           "--dry-run", env=array, check=0).stdout
        self.assertRegex(task, r"# predicted [0-9.e-]+ device-hours for 2 of 7 points; "
                               r"uncalibrated \(a job array's task reads no other point's "
                               r"results\); 5 not to run")

    def test_gpus_prices_and_commands(self):
        sweep = os.path.join(self.tmp, "gpu.yaml")
        with open(sweep, "w") as f:
            f.write("""\
name: gpu
base:
  model: {preset: gpt2}
  train: {micro_batch: 8, steps: 1000, dtype: bf16}
  launch: {device: cuda, gpus_per_rank: 1}
include:
  - {hardware.name: A100, hardware.price_per_hour: 2.5}
  - {hardware.name: Imaginary GPU 9000}
  - {launch.ranks: 16, launch.nodes: 2, train.zero_stage: 3, hardware.name: H100}
  - {benchmark: command, command: {argv: [/bin/true]}}
  - {benchmark: command, command: {argv: [/bin/false], predict_as: train}, hardware.name: H100}
""")
        text = self.estimate(sweep=sweep).stdout
        self.assertIn("cost USD", text)
        self.assertIn("1 on GPUs predicted as an H100 (set hardware.name)", text)
        self.assertIn("1 without a rate (hardware.name Imaginary GPU 9000 is not in the table", text)
        self.assertIn("1 commands (no model to predict: command.predict_as", text)  # /bin/true
        self.assertIn(", $", text.splitlines()[-1])
        rows = pd.read_csv(io.StringIO(self.estimate("--format", "csv", sweep=sweep).stdout))
        a100 = rows[rows["hardware.name"] == "A100"].iloc[0]
        self.assertAlmostEqual(a100.time_pred_cost_usd, a100.time_pred_device_hours * 2.5)
        # 6N + 12LdT a token over bf16's 312 TFLOPS at the measured 26% MFU; AdamW's bytes; the
        # kernels' launches (the smooth maximum with the work: a positive overhead); one GPU.
        self.assertAlmostEqual(a100.time_pred_compute_s, a100.time_pred_flops / (312e12 * 0.26))
        self.assertGreater(a100.time_pred_optimizer_s, 0)
        self.assertGreater(a100.time_pred_overhead_s, 0)
        self.assertEqual(a100.time_pred_comm_s, 0)
        self.assertAlmostEqual(a100.time_pred_step_s, a100.time_pred_compute_s +
                               a100.time_pred_optimizer_s + a100.time_pred_overhead_s)
        # The GPU's start-up, 1000 steps, and the 10 evaluation batches (eval.steps' default):
        # forward passes, each shorter than a step.
        self.assertGreater(a100.time_pred_startup_s, 5)  # CUDA, the model, the first step
        evaluation = (a100.time_pred_run_s - a100.time_pred_startup_s -
                      1000 * a100.time_pred_step_s)
        self.assertGreater(evaluation, 10 / 3 * a100.time_pred_compute_s)
        self.assertLess(evaluation, 10 * a100.time_pred_step_s)
        multi = rows[rows["launch.ranks"] == 16].iloc[0]
        self.assertAlmostEqual(multi.time_pred_device_hours, 16 * multi.time_pred_run_s / 3600)
        self.assertGreater(multi.time_pred_comm_s, 0)
        self.assertTrue(rows[rows["hardware.name"] == "Imaginary GPU 9000"].time_pred_step_s.isna().all())
        # A command declaring what it runs (command.predict_as) is predicted as that point.
        twin = rows[rows["command.predict_as"] == "train"].iloc[0]
        base = rows[(rows["hardware.name"].isna()) & (rows["benchmark"] == "train")].iloc[0]
        self.assertAlmostEqual(twin.time_pred_step_s, base.time_pred_step_s)
        self.assertAlmostEqual(twin.mem_pred_peak_bytes, base.mem_pred_peak_bytes)

    def test_a_command_declaring_its_model_is_predicted_and_calibrates(self):
        # A program that reports its step's median (as bench/pytorch_eager_train.py does),
        # declared as a GPT-2 training of the sweep's shape: predicted, extracted beside its
        # measurement, and calibrating its model.
        sweep = os.path.join(self.tmp, "command.yaml")
        with open(sweep, "w") as f:
            f.write(SWEEP.split("include:")[0].replace("name: time-estimate", "name: twin") + """  benchmark: command
  command:
    argv: [sh, -c, 'echo "{{\\"step_time_median_s\\": 0.25}}"']
    metrics: [{name: step_time_median_s, unit: s, from: stdout, pointer: /step_time_median_s}]
    predict_as: train
""")
        out = os.path.join(self.tmp, "command-runs")
        bench_sweep("run", sweep, "--out", out, check=0)
        plain = pd.read_csv(io.StringIO(self.estimate("--format", "csv", sweep=sweep).stdout)).iloc[0]
        calibrated = pd.read_csv(io.StringIO(self.estimate("--format", "csv", "--calibrate", out,
                                                           sweep=sweep).stdout)).iloc[0]
        self.assertAlmostEqual(calibrated.time_calibration, 0.25 / plain.time_pred_step_s)
        self.assertAlmostEqual(calibrated.time_pred_step_s, 0.25)
        row = pd.read_csv(io.StringIO(run_tool(BENCH_EXTRACT, "-i", out, "--format", "csv").stdout)).iloc[0]
        self.assertEqual(row.status, "ok")
        self.assertAlmostEqual(row.time_pred_step_s, plain.time_pred_step_s)
        self.assertAlmostEqual(row.time_pred_error, plain.time_pred_step_s / 0.25 - 1)
        self.assertAlmostEqual(row.mem_pred_peak_bytes, plain.mem_pred_peak_bytes)
        # The same model's bench-train points are calibrated by it.
        both = pd.read_csv(io.StringIO(self.estimate("--format", "csv", "--calibrate", out).stdout))
        base = both[(both["model.arch"] == "gpt2") & (both["model.n_layer"] == 2)
                    & (both["benchmark"] != "infer")]
        self.assertEqual(len(base), 4)
        self.assertTrue((base.time_calibration.round(12) == round(0.25 / plain.time_pred_step_s, 12)).all())

    def test_bad_calibrate_arguments(self):
        r = bench_sweep("plan", self.sweep, "--calibrate", self.out, check=2)
        self.assertIn("--calibrate: only with --estimate", r.stderr)
        missing = os.path.join(self.tmp, "no-such-dir")
        r = self.estimate("--calibrate", missing, check=2)
        self.assertIn("not a directory", r.stderr)
        self.assertIn(missing, r.stderr)
        # A tree with nothing measured calibrates nothing.
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        self.assertIn("uncalibrated", self.estimate("--calibrate", empty).stdout)


# Every way bench-train communicates: ZeRO 0-3 (with accumulation, with the communication
# thread), tensor parallelism alone, with checkpointing and bf16, and beside data parallelism,
# LoRA, Llama, and an odd number of ranks (ZeRO's padded pieces).
COMM_SWEEP = """\
name: comm-bytes
base:
  model: {preset: gpt2-tiny, n_layer: 2, n_embd: 64, n_head: 4, vocab_size: 2048, block_size: 64}
  data: {source: synthetic, seq_len: 64}
  train: {steps: 3, warmup_steps: 1, micro_batch: 2}
  eval: {steps: 0}
  launch: {ranks: 2}
  metrics: {sample_interval_ms: 0, system: false}
include:
  - {train.zero_stage: 1}
  - {train.zero_stage: 2}
  - {train.zero_stage: 3}
  - {train.zero_stage: 2, train.grad_accum: 3}
  - {train.zero_stage: 3, train.grad_accum: 3}
  - {train.zero_stage: 3, train.grad_accum: 2, train.overlap_comm: true}
  - {launch.tensor_parallel: 2}
  - {launch.tensor_parallel: 2, train.activation_checkpointing: true, train.dtype: bf16}
  - {launch.tensor_parallel: 2, launch.ranks: 4, train.zero_stage: 1}
  - {train.peft: lora, train.zero_stage: 2}
  - {model.preset: llama-tiny, model.n_layer: 2, model.ffn_dim: 192, train.zero_stage: 3}
  - {launch.ranks: 3}
  - {launch.ranks: 3, train.zero_stage: 3, train.grad_accum: 2}
  - {launch.ranks: 1}
"""


class CommunicationBytes(unittest.TestCase):
    """The communication term against what bench-train sends: each rank counts the bytes its
    collectives on tensors send a step, as a ring sends them (comm_bytes_per_step), and
    bench-extract puts the prediction beside it (time_pred_comm_bytes)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sb-commbytes-")
        sweep = os.path.join(cls.tmp, "sweep.yaml")
        with open(sweep, "w") as f:
            f.write(COMM_SWEEP)
        cls.out = os.path.join(cls.tmp, "runs")
        bench_sweep("run", sweep, "--out", cls.out, check=0)
        cls.rows = pd.read_csv(io.StringIO(
            run_tool(BENCH_EXTRACT, "-i", cls.out, "--format", "csv").stdout))

    def test_every_point_sends_what_the_model_predicts(self):
        rows = self.rows
        self.assertEqual(len(rows), 15)
        self.assertTrue((rows.status == "ok").all())
        one = rows[rows["launch.ranks"] == 1]
        self.assertEqual(one.comm_bytes_per_step.tolist(), [0])
        self.assertEqual(one.time_pred_comm_bytes.tolist(), [0])
        many = rows[rows["launch.ranks"] > 1]
        self.assertTrue((many.comm_bytes_per_step > 0).all())
        for _, r in many.iterrows():
            # Exact but for ZeRO's pieces, padded to a multiple of the ranks.
            self.assertAlmostEqual(r.time_pred_comm_error, 0, places=4, msg=r.tag)
            self.assertAlmostEqual(r.time_pred_comm_bytes / r.comm_bytes_per_step - 1,
                                   r.time_pred_comm_error, places=9)
            # bench-train's own summary (the largest over its ranks) says the same.
            with open(os.path.join(self.out, r.tag, "summary.json")) as f:
                self.assertEqual(json.load(f)["metrics"]["comm_bytes_per_step"],
                                 r.comm_bytes_per_step)

    def test_the_stages_by_their_own_arithmetic(self):
        # Over two ranks a ring all-reduce sends the whole buffer, a reduce-scatter or an
        # all-gather half of it: stages 0, 1 and 2 all send 4 bytes a trainable value a step.
        rows = self.rows[(self.rows["launch.ranks"] == 2) & (self.rows["launch.tensor_parallel"] == 1)
                         & (self.rows["model.arch"] == "gpt2")]
        plain = rows[(rows["train.grad_accum"] == 1) & (rows["train.peft"] == "none")]

        def sent(stage, accum=1, frame=rows):
            return frame[(frame["train.zero_stage"] == stage)
                         & (frame["train.grad_accum"] == accum)].comm_bytes_per_step.iloc[0]
        values = plain.trainable_parameters.iloc[0]
        for stage in (0, 1, 2):
            self.assertEqual(sent(stage, frame=plain), 4 * values)
        # Stage 2 reduce-scatters every micro step's gradients: 3 of them, one gather.
        self.assertEqual(sent(2, 3), 4 * values * (3 + 1) / 2)
        # Stage 3 gathers the blocks twice and reduce-scatters them every micro step; the root
        # (embeddings, final norm) is gathered once a step and held: more than stage 2 sends,
        # less than three collectives of everything.
        self.assertGreater(sent(3, frame=plain), 4 * values)
        self.assertLess(sent(3, frame=plain), 4 * values * 3 / 2)
        lora = rows[rows["train.peft"] == "lora"].iloc[0]
        self.assertEqual(lora.comm_bytes_per_step, 4 * lora.trainable_parameters)
        # Tensor parallelism over two ranks: four all-reduces a block of the micro batch's
        # activations (2 x 64 tokens x 64 wide, 2 layers), six with checkpointing; fp32 over MPI
        # in bf16 too.
        tp = self.rows[(self.rows["launch.tensor_parallel"] == 2) & (self.rows["launch.ranks"] == 2)]
        activations = 2 * 64 * 64 * 4
        self.assertEqual(sorted(tp.comm_bytes_per_step.tolist()),
                         [4 * 2 * activations, 6 * 2 * activations])


if __name__ == "__main__":
    unittest.main()
