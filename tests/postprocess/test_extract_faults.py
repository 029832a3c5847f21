#!/usr/bin/python3
"""bench-extract (and every binary's output) under attack: directories it may not
read or that vanish while it walks, a full disk behind its output, rank files from another point or
another run, and an -o that would replace a result.

The trees are made by make_results_tree (bench/), which writes rank files with bench-train's own
writer, except where a real run matters (two runs of one 2-rank point). Unreadable directories
only stop a user who is not root, so those cases run bench-extract as `nobody` (setpriv).
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/postprocess/test_extract_faults.py -v
"""
import io
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, bench_sweep, read_json  # noqa: E402

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")
MAKE_TREE = os.path.join(BIN, "make_results_tree")

SWEEP = """\
name: %(name)s
base:
  model: {preset: gpt2-tiny}
  data: {source: synthetic, seq_len: 32}
  train: {steps: 3, warmup_steps: 1, micro_batch: 2}
  eval: {steps: 1}
  metrics: {sample_interval_ms: 0, system: false}
  launch: {cpus_per_rank: 1, ranks: %(ranks)d}
axes:
  train.micro_batch: %(batches)s
"""


def make_tree(tmp, name, batches=(1, 2, 4, 8), ranks=1, steps=20):
    """A planned sweep directory whose points all hold ok results; returns (dir, tags)."""
    sweep = os.path.join(tmp, name + ".yaml")
    with open(sweep, "w") as f:
        f.write(SWEEP % {"name": name, "ranks": ranks, "batches": list(batches)})
    out = os.path.join(tmp, name)
    bench_sweep("plan", sweep, "--out", out, check=0)
    subprocess.run([MAKE_TREE, "--out", out, "--ranks", str(ranks), "--steps", str(steps),
                    "--jobs", "1"], check=True, capture_output=True)
    tags = [p["tag"] for p in read_json(os.path.join(out, "manifest.json"))["points"]]
    return out, tags


def extract(*args, check=0, user=None, binary=BENCH_EXTRACT):
    cmd = [binary, *args]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if check is not None and r.returncode != check:
        raise AssertionError(f"{' '.join(cmd)}: exit {r.returncode}, wanted {check}\n"
                             f"{r.stdout}\n{r.stderr}")
    return r


def rows(r):
    return pd.read_csv(io.StringIO(r.stdout)) if r.stdout.strip() else pd.DataFrame()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def world_readable(top):
    for root, dirs, files in os.walk(top):
        os.chmod(root, 0o755)
        for f in files:
            p = os.path.join(root, f)
            os.chmod(p, os.stat(p).st_mode | stat.S_IROTH | stat.S_IRGRP)


NOBODY = 65534


class Unreadable(unittest.TestCase):
    """D1: a directory that cannot be read ends nothing but itself, and says so."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = cls._tmp.name
        cls.tree, cls.tags = make_tree(cls.tmp, "grid")
        # Another sweep beside it, and a directory that is no point, to be locked below.
        cls.other, cls.other_tags = make_tree(cls.tmp, "other", batches=(1, 2))
        os.makedirs(os.path.join(cls.tmp, "notes", "old"))
        # nobody runs its own copy of bench-extract (the build tree may be closed to it).
        cls.bin = os.path.join(cls.tmp, "bin")
        os.makedirs(cls.bin)
        shutil.copy2(BENCH_EXTRACT, cls.bin)
        cls.exe = os.path.join(cls.bin, "bench-extract")
        world_readable(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        world_readable(cls.tmp)
        cls._tmp.cleanup()

    def as_nobody(self, *args, check=0):
        return extract(*args, check=check, user=NOBODY, binary=self.exe)

    def test_an_unreadable_point_directory_is_an_incomplete_row_named_in_a_warning(self):
        locked = os.path.join(self.tree, self.tags[2])
        os.chmod(locked, 0)
        try:
            r = self.as_nobody("-i", self.tree)
            df = rows(r)
            self.assertEqual(len(df), 4, r.stdout + r.stderr)
            row = df[df["tag"] == self.tags[2]].iloc[0]
            self.assertEqual(row["status"], "incomplete")
            self.assertIn("cannot be read", row["reason"])
            self.assertIn(locked, r.stderr)
            self.assertIn("Permission denied", r.stderr)
            self.assertEqual(sorted(df[df["tag"] != self.tags[2]]["status"]), ["ok"] * 3)
            strict = self.as_nobody("-i", self.tree, "--strict", check=1)
            self.assertEqual(len(rows(strict)), 4)
        finally:
            os.chmod(locked, 0o755)

    def test_an_unreadable_directory_that_is_no_point_is_a_warning_and_the_walk_goes_on(self):
        # Sorted before and after it: points on both sides must still be found.
        notes = os.path.join(self.tmp, "notes")
        os.chmod(notes, 0)
        try:
            r = self.as_nobody("-i", self.tmp)
            df = rows(r)
            self.assertEqual(sorted(df["tag"]), sorted(self.tags + self.other_tags), r.stderr)
            self.assertEqual(set(df["status"]), {"ok"})
            self.assertIn(notes + ": cannot be read: Permission denied", r.stderr)
            self.assertIn("could not be read", r.stderr)
            self.as_nobody("-i", self.tmp, "--strict", check=1)
        finally:
            os.chmod(notes, 0o755)

    def test_an_unreadable_sweep_directory_loses_only_its_own_points(self):
        os.chmod(self.other, 0o711)  # may be entered but not listed
        try:
            r = self.as_nobody("-i", self.tmp)
            df = rows(r)
            self.assertEqual(sorted(df["tag"]), sorted(self.tags), r.stderr)
            self.assertIn(self.other + ": cannot be read", r.stderr)
        finally:
            os.chmod(self.other, 0o755)

    def test_an_unreadable_rank_file_or_status_makes_the_row_incomplete(self):
        point = os.path.join(self.tree, self.tags[1])
        for name in ("rank-00000.h5", "status.json"):
            path = os.path.join(point, name)
            os.chmod(path, 0)
            try:
                r = self.as_nobody("-i", self.tree)
                row = rows(r).set_index("tag").loc[self.tags[1]]
                self.assertEqual(row["status"], "incomplete", name)
                self.assertIn(name, row["reason"])
                self.assertIn(path, r.stderr)
            finally:
                os.chmod(path, 0o644)

    def test_directories_vanishing_during_the_walk_never_cost_the_other_points(self):
        # A running sweep moves attempts aside and new points appear: a directory that goes
        # away between being listed and being read must not end the walk.
        churn = os.path.join(self.tmp, "churn")
        stop = threading.Event()

        def keep_churning():
            n = 0
            while not stop.is_set():
                d = os.path.join(churn, f"d{n % 50:02d}", "inner", "deeper")
                os.makedirs(d, exist_ok=True)
                shutil.rmtree(os.path.join(churn, f"d{(n + 25) % 50:02d}"), ignore_errors=True)
                n += 1

        worker = threading.Thread(target=keep_churning)
        worker.start()
        try:
            want = sorted(self.tags + self.other_tags)
            for _ in range(30):
                r = extract("-i", self.tmp, "-j", "1")
                self.assertEqual(sorted(rows(r)["tag"]), want, r.stderr)
        finally:
            stop.set()
            worker.join()
            shutil.rmtree(churn, ignore_errors=True)


class FullOutput(unittest.TestCase):
    """D2: every binary checks what it writes to standard output and exits 4 when refused."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tree, _ = make_tree(cls._tmp.name, "full", batches=list(range(1, 41)))
        cls.sweep = os.path.join(cls._tmp.name, "full.yaml")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def to_dev_full(self, argv):
        with open("/dev/full", "w") as full:
            return subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=300)

    def test_every_binary_exits_4_when_standard_output_is_full(self):
        for argv in ([os.path.join(BIN, "bench-sweep"), "plan", self.sweep],
                     [os.path.join(BIN, "bench-sweep"), "keys"],
                     [BENCH_EXTRACT, "-i", self.tree],
                     [BENCH_EXTRACT, "-i", self.tree, "--group-repeats"],
                     [os.path.join(BIN, "bench-plot"), "--help"],
                     [os.path.join(BIN, "bench-train"), "--help"]):
            r = self.to_dev_full(argv)
            self.assertEqual(r.returncode, 4, f"{argv}: {r.stderr}")
            self.assertRegex(r.stderr, r"standard output: (error: )?cannot write", argv)
            self.assertEqual(r.stderr.count("error:"), 1, r.stderr)

    def test_extract_to_a_full_file_system_leaves_nothing_and_exits_4(self):
        # A 16 KiB tmpfs in a mount namespace of its own: the 40-row table does not fit.
        disk = os.path.join(self._tmp.name, "disk")
        os.makedirs(disk)
        script = ('mount -t tmpfs -o size=16k tmpfs "$1" && "$2" -i "$3" -o "$1/out.csv"; '
                  'rc=$?; ls -A "$1"; exit $rc')
        r = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", disk, BENCH_EXTRACT,
                            self.tree], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("No space left on device", r.stderr)
        self.assertEqual(r.stdout.strip(), "", "files left on the full disk")
        # And through a redirection, which the shell opens: the rows written so far stay, the
        # exit code says they are not all.
        script = ('mount -t tmpfs -o size=16k tmpfs "$1" && "$2" -i "$3" > "$1/out.csv"; '
                  'rc=$?; wc -l < "$1/out.csv"; exit $rc')
        r = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", disk, BENCH_EXTRACT,
                            self.tree], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertLess(int(r.stdout.strip()), 41)
        self.assertIn("standard output", r.stderr)


class ForeignRankFiles(unittest.TestCase):
    """D4: rank files from another point, or from another run of the same point, are refused."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        tmp = cls.tmp = cls._tmp.name
        cls.tree, cls.tags = make_tree(tmp, "one", batches=(1, 2))
        # One 2-rank point run twice for real: two runs, two run ids.
        sweep = os.path.join(tmp, "two.yaml")
        with open(sweep, "w") as f:
            f.write(SWEEP % {"name": "two", "ranks": 2, "batches": [2]})
        cls.runs = [os.path.join(tmp, "runs", name) for name in ("a", "b")]
        for out in cls.runs:
            bench_sweep("run", sweep, "--out", out, check=0)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_a_rank_file_copied_from_another_point_is_incomplete(self):
        a, b = (os.path.join(self.tree, t) for t in self.tags)
        victim = os.path.join(b, "rank-00000.h5")
        os.rename(victim, victim + ".orig")
        try:
            shutil.copy(os.path.join(a, "rank-00000.h5"), victim)
            r = extract("-i", self.tree)
            row = rows(r).set_index("tag").loc[self.tags[1]]
            self.assertEqual(row["status"], "incomplete")
            self.assertIn("another config", row["reason"])
            self.assertTrue(pd.isna(row["train_tokens_per_second"]))
            self.assertIn(victim, r.stderr)
            extract("-i", self.tree, "--strict", check=1)
        finally:
            os.replace(victim + ".orig", victim)
        self.assertEqual(set(rows(extract("-i", self.tree))["status"]), {"ok"})

    def test_a_rank_of_another_run_of_the_same_point_is_incomplete(self):
        tag = os.listdir(self.runs[0])
        tag = [t for t in tag if os.path.isdir(os.path.join(self.runs[0], t))][0]
        mixed = os.path.join(self.tmp, "mixed", tag)
        shutil.copytree(os.path.join(self.runs[0], tag), mixed)
        shutil.copy(os.path.join(self.runs[1], tag, "rank-00001.h5"), mixed)
        # Both untouched runs are fine on their own.
        for out in self.runs:
            self.assertEqual(list(rows(extract("-i", out))["status"]), ["ok"])
        r = extract("-i", mixed)
        row = rows(r).iloc[0]
        self.assertEqual(row["status"], "incomplete")
        self.assertIn("rank-00001.h5 is from another run than rank-00000.h5", row["reason"])
        self.assertIn(os.path.join(mixed, "rank-00001.h5"), r.stderr)


class OutputAmongResults(unittest.TestCase):
    """D5: -o can never replace a result file, nor write into a point directory."""

    def test_output_paths_that_would_touch_results_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree, tags = make_tree(tmp, "grid", batches=(1, 2))
            point = os.path.join(tree, tags[0])
            targets = [os.path.join(point, "rank-00000.h5"), os.path.join(tree, "manifest.json"),
                       os.path.join(point, "status.json"), os.path.join(point, "table.csv"),
                       os.path.join(point, "logs", "x.csv"),
                       os.path.join(tree, tags[1], "..", tags[0], "config.yaml")]
            os.symlink(point, os.path.join(tmp, "link"))
            targets.append(os.path.join(tmp, "link", "t.csv"))
            before = {p: read_bytes(p) for p in targets if os.path.exists(p)}
            for target in targets:
                r = extract("-i", tree, "-o", target, "-f", "--format", "csv", check=2)
                self.assertIn("error:", r.stderr)
                self.assertTrue("point directory" in r.stderr or "results files" in r.stderr,
                                r.stderr)
            for p, data in before.items():
                self.assertEqual(read_bytes(p), data, p)
            self.assertFalse(os.path.exists(os.path.join(point, "table.csv")))
            # Beside the points is fine.
            extract("-i", tree, "-o", os.path.join(tree, "table.csv"))
            self.assertEqual(len(pd.read_csv(os.path.join(tree, "table.csv"))), 2)


def process_state(pid):
    """The state letter of /proc/PID/stat (R, S, D, T, Z, ...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


class DamagedFiles(unittest.TestCase):
    """C1: 8 bytes of 0xFF in a rank file crash HDF5 (its free list) or make it loop (its global
    heap). That cost the whole table; now it costs the point: its reader process dies or is
    stopped after --point-timeout, the point is incomplete, a fresh reader goes on."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = cls._tmp.name
        # One point per offset of the file's first 4.4 KB, where HDF5 keeps the metadata that
        # crashes or hangs it (on Debian 12's HDF5 1.10: crashes at 120, 168, 688 ..., loops
        # at 952, 1032, ...).
        cls.offsets = list(range(0, 4400, 8))
        cls.tree, cls.tags = make_tree(cls.tmp, "damaged", batches=[1 + i for i in range(len(cls.offsets))])
        for tag, offset in zip(cls.tags, cls.offsets):
            path = os.path.join(cls.tree, tag, "rank-00000.h5")
            with open(path, "r+b") as f:
                f.seek(offset)
                f.write(b"\xff" * 8)
        # Whether HDF5 loops on a damaged file depends on what its reader process read before:
        # without a manifest the points are read in name order, in which these files make it
        # loop (in the sweep's order, as the manifest gives it, they make it fail at once).
        os.remove(os.path.join(cls.tree, "manifest.json"))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_a_crashing_or_looping_reader_costs_only_its_point(self):
        out_dir = os.path.join(self.tmp, "tables")
        os.makedirs(out_dir)
        table = os.path.join(out_dir, "t.csv")
        # Whether HDF5 loops on one of these files depends on bytes that differ from run to run
        # (it did on Debian 12's HDF5 1.10 at 952 and 1032 for a while, then not at all), so a
        # reader that hangs is also made for certain: one reader is stopped (SIGSTOP) while the
        # extraction runs, as a reader caught in a loop stops answering.
        proc = subprocess.Popen([BENCH_EXTRACT, "-i", self.tree, "-o", table, "-j", "2",
                                 "--point-timeout", "2"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        stopped = None
        deadline = time.monotonic() + 60
        while stopped is None and proc.poll() is None and time.monotonic() < deadline:
            try:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    readers = [int(p) for p in f.read().split()]
            except OSError:
                readers = []
            for pid in readers:
                # A live reader (not one that has just crashed and awaits its reaping), and
                # stopped for sure.
                if process_state(pid) not in ("R", "S", "D"):
                    continue
                os.kill(pid, signal.SIGSTOP)
                for _ in range(100):
                    if process_state(pid) in ("T", "t"):
                        stopped = pid
                        break
                    time.sleep(0.01)
                if stopped is not None:
                    break
            else:
                time.sleep(0.01)
        out, err = proc.communicate(timeout=300)
        self.assertIsNotNone(stopped, "no reader process was seen")
        self.assertEqual(proc.returncode, 0, err)
        r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        df = pd.read_csv(table)  # written, and readable (no damaged bytes in it)
        self.assertEqual(len(df), len(self.offsets))
        self.assertEqual(set(df["status"]) - {"ok", "incomplete"}, set(), df["status"].unique())
        reasons = " ".join(df[df["status"] == "incomplete"]["reason"])
        self.assertIn("killed the reader process (signal 11", reasons)
        self.assertIn("took longer than 2 s; the reader was stopped", reasons)
        self.assertGreater((df["status"] == "ok").sum(), len(self.offsets) // 2)
        self.assertEqual(os.listdir(out_dir), ["t.csv"])
        self.assertIn("points written", r.stderr)
        # The same table with one reader, and a strict run says not all is well.
        one = extract("-i", self.tree, "-j", "1", "--point-timeout", "2", "--strict", check=1)
        self.assertEqual(len(rows(one)), len(self.offsets))

    def test_a_killed_extraction_leaves_no_temporary_file(self):
        out_dir = os.path.join(self.tmp, "killed")
        os.makedirs(out_dir)
        proc = subprocess.Popen([BENCH_EXTRACT, "-i", self.tree, "-o",
                                 os.path.join(out_dir, "t.csv"), "-j", "1",
                                 "--point-timeout", "30"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import time
        time.sleep(3)  # inside the first looping point's 30 s
        self.assertIsNone(proc.poll())
        proc.kill()
        proc.wait()
        self.assertEqual(os.listdir(out_dir), [])


class PlotInjection(unittest.TestCase):
    """I1: no text that reaches gnuplot runs anything: legends, x labels, column names, the
    title, the figure's and the script's paths, with the real gnuplot."""

    def test_hostile_text_everywhere_is_drawn_not_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            marks = os.path.join(tmp, "ran")
            os.makedirs(marks)

            def payloads(n):
                p = os.path.join(marks, str(n))
                return [f"`touch {p}a`", f"$(touch {p}b)", f"system(\"touch {p}c\")",
                        f"\" . system('touch {p}d') . \"", f"' . system(\"touch {p}e\") . '",
                        f"x\nsystem('touch {p}f')", f"@GPVAL_TERM `touch {p}g`"]

            hues = payloads(1)
            xs = payloads(2)
            metric = "`touch %s/3`" % marks
            header = ["tag", "status", "device", "x", "hue", metric]
            lines = []
            for i, (x, hue) in enumerate(zip(xs, hues)):
                lines.append([f"t{i}", "ok", "cpu", x + "\0z", hue, str(10 + i)])

            def csv_field(v):
                return '"' + v.replace('"', '""') + '"'

            data = "\n".join(",".join(csv_field(v) for v in row) for row in [header] + lines)
            csv = os.path.join(tmp, "t.csv")
            with open(csv, "wb") as f:
                f.write(data.encode() + b"\n")
            # Paths cannot hold "/" in a name: these marks are relative to bench-plot's cwd.
            out_dir = os.path.join(tmp, "`touch ran:4`")
            os.makedirs(out_dir)
            title = payloads(5)
            for kind, x in (("bar", "x"), ("line", "tag"), ("bar", "hue")):
                figure = os.path.join(out_dir, f"it's {kind} $(touch ran:6).svg")
                script = os.path.join(out_dir, "`touch ran:7`.gp")
                argv = [os.path.join(BIN, "bench-plot"), "-i", csv, "-o", figure, "--metric",
                        metric, "--x", x, "--hue", "hue", "--kind", kind, "--title",
                        " ".join(t.replace("\n", " ") for t in title), "--script", script]
                if kind == "line":
                    # A line plot needs a numeric x: the row number, hostile hues stay.
                    argv[argv.index("--x") + 1] = metric
                r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(figure) as f:
                    svg = f.read()
                self.assertIn("touch", svg)
                # The kept script, run again by the user, runs nothing either.
                subprocess.run(["gnuplot", script], capture_output=True, cwd=tmp, check=True)
            self.assertEqual(os.listdir(marks), [], "gnuplot ran a command")
            self.assertEqual([f for f in os.listdir(tmp) if f.startswith("ran:")], [])

    def test_the_whole_table_figures_draw_hostile_text_and_run_none(self):
        # --kind pareto (config values as labels, a hostile hue) and --kind change (point names
        # and metrics from a comparison's CSV), with the real gnuplot.
        with tempfile.TemporaryDirectory() as tmp:
            marks = os.path.join(tmp, "ran")
            os.makedirs(marks)

            def payloads(n):
                p = os.path.join(marks, str(n))
                return [f"`touch {p}a`", f"$(touch {p}b)", f"system(\"touch {p}c\")",
                        f"\" . system('touch {p}d') . \"", f"' . system(\"touch {p}e\") . '",
                        f"x\nsystem('touch {p}f'),y:z", f"@GPVAL_TERM `touch {p}g`"]

            def write_csv(name, header, rows):
                def field(v):
                    return '"' + str(v).replace('"', '""') + '"'
                path = os.path.join(tmp, name)
                with open(path, "wb") as f:
                    f.write("\n".join(",".join(field(v) for v in row)
                                      for row in [header] + rows).encode() + b"\n")
                return path

            who, hues = payloads(1), payloads(2)
            pareto = write_csv("p.csv", ["tag", "status", "params.who", "hue", "tps",
                                         "mem_peak_bytes"],
                               [[f"t{i}", "ok", w + "\0q", h, 100 + i, 1000 - i]
                                for i, (w, h) in enumerate(zip(who, hues))])
            points, metrics = payloads(3), payloads(4)
            change = write_csv("c.csv", ["point", "metric", "change", "change_ci_low",
                                         "change_ci_high", "verdict"],
                               [[p, m, 0.1, 0.0, 0.2, "worse"] for p, m in zip(points, metrics)] +
                               [["geomean", metrics[0], 0.1, "", "", ""]])
            title = " ".join(t.replace("\n", " ") for t in payloads(5))
            for kind, csv, args in (("pareto", pareto, ["--metric", "tps", "--hue", "hue"]),
                                    ("change", change, [])):
                figure = os.path.join(tmp, f"it's {kind} $(touch ran:6).svg")
                script = os.path.join(tmp, "`touch ran:7`.gp")
                r = subprocess.run([os.path.join(BIN, "bench-plot"), "-i", csv, "-o", figure,
                                    "--kind", kind, "--title", title, "--script", script, *args],
                                   capture_output=True, text=True, cwd=tmp, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(figure) as f:
                    self.assertIn("touch", f.read())
                subprocess.run(["gnuplot", script], capture_output=True, cwd=tmp, check=True)
            self.assertEqual(os.listdir(marks), [], "gnuplot ran a command")
            self.assertEqual([f for f in os.listdir(tmp) if f.startswith("ran:")], [])


if __name__ == "__main__":
    unittest.main()
