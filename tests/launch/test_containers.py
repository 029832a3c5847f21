#!/usr/bin/python3
"""Sweeps in a real container: containers/sweepbench-cpu.def built by tests/container/build-image
(its %post in a debootstrapped Debian 12, since Apptainer is not packaged for Debian) and run with
Charliecloud's ch-run through the container layer, locally (plain exec and mpirun) and through
the local SLURM cluster (srun --mpi=pmix; a serve point's server in the image beside its
client); the same image imported into Podman (Debian's podman
with runc, storage of its own: tests/support/podman.py) and run locally and through srun on a
two-node cluster; the definition file's %test run in the image; and the errors for a missing
image or runtime.

The image build is the ctest fixture container_image (minutes, cached by the recipe's hash in
SWEEPBENCH_IMAGE_CACHE); these tests call build-image again, which then only prints the path.
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/launch/test_containers.py -v Local
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, ENV, SOURCE, bench_sweep, read_json, read_yaml  # noqa: E402
from podman import LocalPodman  # noqa: E402
from slurm_cluster import LocalSlurm  # noqa: E402

DEF = os.path.join(SOURCE, "containers", "sweepbench-cpu.def")


def image():
    r = subprocess.run([os.path.join(SOURCE, "tests", "container", "build-image"), DEF],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise AssertionError(f"build-image failed:\n{r.stderr[-5000:]}")
    return r.stdout.strip().splitlines()[-1]


def sweep_file(tmp, img, runtime="charliecloud", ranks="[1, 2]", nodes=1, benchmark="train"):
    path = os.path.join(tmp, f"in-container-{benchmark}.yaml")
    with open(path, "w") as f:
        f.write(f"""\
name: in-container-{benchmark}
base:
  benchmark: {benchmark}
  infer: {{input_tokens: 8, output_tokens: 4, batch_size: 2, runs: 2}}
  model: {{preset: gpt2-tiny}}
  data: {{source: synthetic, seq_len: 32}}
  train: {{steps: 4, warmup_steps: 1, micro_batch: 2}}
  eval: {{steps: 1}}
  metrics: {{sample_interval_ms: 0, system: false}}
  launch: {{cpus_per_rank: 1, nodes: {nodes}}}
  slurm: {{exclusive: false}}
  container: {{runtime: {runtime}, image: {json.dumps(img)}, env: {{GREETING: "a b $x"}}}}
  command:
    argv: [sh, -c, 'echo "rank {{rank}} of {{world_size}}: $GREETING"; echo "tps=$(( {{rank}} + 10 ))"']
    metrics: [{{name: tps, regex: 'tps=([0-9]+)'}}]
axes:
  launch.ranks: {ranks}
""")
    return path


class ContainerCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.image = image()

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def assert_ran_in_the_image(self, out, runtime="charliecloud", image=None, points=2):
        """Every point ok, run by `runtime` in `image`; returns the tags and each rank's host."""
        program = {"charliecloud": "ch-run", "podman": "podman"}[runtime]
        tags = [p["tag"] for p in read_json(os.path.join(out, "manifest.json"))["points"]]
        self.assertEqual(len(tags), points)
        self.hosts = {}
        for tag in tags:
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["status"], "ok", record)
            self.assertIn(program, record["command"])
            ranks = read_yaml(os.path.join(out, tag, "config.yaml"))["launch"]["ranks"]
            files = sorted(glob.glob(os.path.join(out, tag, "rank-*.h5")))
            self.assertEqual(len(files), ranks, tag)
            for path in files:
                with h5py.File(path) as h5:
                    attrs = dict(h5.attrs)
                self.assertEqual(attrs["container_runtime"], runtime)
                self.assertEqual(attrs["container_image"], image or self.image)
                self.hosts.setdefault(tag, set()).add(attrs["hostname"])
                kept = attrs["container_env_kept"].split(",")
                self.assertIn("OMPI_*", kept)
                self.assertIn("GREETING", kept)
                self.assertEqual(attrs["world_size"], ranks)
        return tags


    def assert_command_ran(self, out, tags):
        """Each rank of each command point ran the program in the container with its variables,
        and read its own figure."""
        for tag in tags:
            files = sorted(glob.glob(os.path.join(out, tag, "rank-*.h5")))
            for rank, path in enumerate(files):
                with h5py.File(path) as h5:
                    self.assertEqual(h5.attrs["benchmark"], "command")
                    self.assertEqual(h5["command/metric_value"][0], rank + 10)
                log = os.path.join(out, tag, "logs", f"rank-{rank:05d}.stdout.txt")
                with open(log) as f:
                    self.assertIn(f"rank {rank} of {len(files)}: a b $x", f.read())

    def run_batch(self, cluster, env, sbatch_options, sweep, out, *expected, **kw):
        """sbatch slurm/sweep.sh SWEEP OUT, waited for; the points checked as
        assert_ran_in_the_image(out, *expected) checks them, with the job's log on failure."""
        cluster.run("sbatch", "--parsable", *sbatch_options, "--output=" + self.tmp + "/%j.out",
                    os.path.join(SOURCE, "slurm", "sweep.sh"), sweep, out, env=env, cwd=self.tmp)
        cluster.wait_until_idle()
        try:
            return self.assert_ran_in_the_image(out, *expected, **kw)
        except AssertionError as e:
            logs = ""
            for path in glob.glob(self.tmp + "/*.out"):
                with open(path) as f:
                    logs += f.read()
            raise AssertionError(f"{e}\n{logs}") from e


class Local(ContainerCase):
    def test_points_run_in_the_image_alone_and_under_mpirun(self):
        out = os.path.join(self.tmp, "out")
        bench_sweep("run", sweep_file(self.tmp, self.image), "--out", out, check=0)
        tags = self.assert_ran_in_the_image(out)
        launchers = sorted(read_json(os.path.join(out, t, "status.json"))["launcher"]
                           for t in tags)
        self.assertEqual(launchers, ["local", "mpirun"])

    def test_inference_points_run_in_the_image_alone_and_under_mpirun(self):
        out = os.path.join(self.tmp, "out")
        bench_sweep("run", sweep_file(self.tmp, self.image, benchmark="infer"), "--out", out, check=0)
        for tag in self.assert_ran_in_the_image(out):
            with h5py.File(os.path.join(out, tag, "rank-00000.h5")) as h5:
                self.assertEqual(h5.attrs["benchmark"], "infer")
                self.assertEqual(h5["infer/generated_ids"].shape, (3, 2, 4))

    def test_command_points_run_in_the_image_alone_and_under_mpirun(self):
        out = os.path.join(self.tmp, "out")
        bench_sweep("run", sweep_file(self.tmp, self.image, benchmark="command"), "--out", out,
                    check=0)
        self.assert_command_ran(out, self.assert_ran_in_the_image(out))

    def run_section(self, name, *args):
        """Runs the definition file's %NAME section in the image, as Apptainer would: with
        %environment sourced and `args` as the script's arguments."""
        with open(DEF) as f:
            lines = f.read().splitlines()
        body, on = [], False
        for line in lines:
            if line.startswith("%"):
                on = line.split()[0] == "%" + name
                continue
            if on:
                body.append(line)
        script = ". /.sweepbench-environment\n" + "\n".join(body)
        r = subprocess.run(["ch-run", self.image, "--", "/bin/sh", "-ec", script, name, *args],
                           env=dict(ENV, USER=ENV.get("USER", "root")), capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        return r.stdout

    def test_definition_files_test_section_passes_in_the_image(self):
        self.assertIn("sweepbench-cpu: %test passed", self.run_section("test"))

    def test_runscript_passes_its_arguments_to_bench_sweep(self):
        out = self.run_section("runscript", "plan",
                               "/usr/local/share/sweepbench-sweeps/quickstart.yaml")
        self.assertIn("# sweep quickstart", out)
        self.assertRegex(out, r"# \d+ points")
        self.assertIn("bench-train", self.run_section("runscript", "bench-train", "--help"))

    def test_missing_image_or_runtime_is_an_error_before_anything_runs(self):
        out = os.path.join(self.tmp, "out")
        r = bench_sweep("run", sweep_file(self.tmp, "/nonexistent/image"), "--out", out, check=2)
        self.assertIn("container.image", r.stderr)
        self.assertIn("'/nonexistent/image' does not exist", r.stderr)
        self.assertEqual(glob.glob(os.path.join(out, "*", "status.json")), [])
        # A PATH without apptainer (bench-sweep is called by its full path).
        r = bench_sweep("run", sweep_file(self.tmp, self.image, runtime="apptainer"), "--out",
                        os.path.join(self.tmp, "out2"), env=dict(ENV, PATH="/usr/bin:/bin"),
                        check=2)
        self.assertIn("needs 'apptainer', which is not on PATH", r.stderr)
        self.assertIn("found here: charliecloud", r.stderr)
        self.assertEqual(glob.glob(os.path.join(self.tmp, "out2", "*", "status.json")), [])


class Slurm(ContainerCase):
    def test_points_run_in_the_image_through_srun(self):
        out = os.path.join(self.tmp, "out")
        with LocalSlurm() as cluster:
            env = dict(cluster.env, SWEEPBENCH_BIN_DIR=BIN)
            tags = self.run_batch(cluster, env, ["--ntasks=2"], sweep_file(self.tmp, self.image),
                                  out)
            # bench-infer the same way: srun, in the image.
            infer_out = os.path.join(self.tmp, "infer")
            infer_tags = self.run_batch(cluster, env, ["--ntasks=2"],
                                        sweep_file(self.tmp, self.image, benchmark="infer"), infer_out)
            # A user's program the same way.
            command_out = os.path.join(self.tmp, "command")
            command_tags = self.run_batch(cluster, env, ["--ntasks=2"],
                                          sweep_file(self.tmp, self.image, benchmark="command"),
                                          command_out)
            # A serve point: its server in the image beside the client.
            self.serve_in_the_image(cluster, env)
        self.assert_command_ran(command_out, command_tags)
        for directory, point_tags in ((out, tags), (infer_out, infer_tags),
                                      (command_out, command_tags)):
            for tag in point_tags:
                record = read_json(os.path.join(directory, tag, "status.json"))
                self.assertEqual(record["launcher"], "srun")

    def serve_in_the_image(self, cluster, env):
        """A serve point in the image through sbatch: bench-serve is the point's step and the
        server (the stand-in, Python's standard library, from the host's tests/support bound
        read-only) its child inside the same image, not a step of its own: srun is the host's
        (docs/serving.md, "In a container")."""
        support = os.path.join(SOURCE, "tests", "support")
        path = os.path.join(self.tmp, "serve.yaml")
        with open(path, "w") as f:
            f.write(f"""\
name: serve-in-container
base:
  benchmark: serve
  serve:
    argv: [python3, /mnt/0/openai_standin.py, --port, '{{port}}', --model, in-image,
           --record, '{{out}}/server-record.json', --chunks, '4']
    load: {{mode: concurrency, levels: [1, 2], requests: 8, warmup_requests: 1}}
    prompts: {{input_tokens: 16, output_tokens: 4}}
  metrics: {{sample_interval_ms: 0, system: false}}
  launch: {{cpus_per_rank: 1}}
  slurm: {{exclusive: false}}
  container: {{runtime: charliecloud, image: {json.dumps(self.image)},
              binds: ["{support}:/mnt/0:ro"], env: {{GREETING: hello}}}}
""")
        out = os.path.join(self.tmp, "serve")
        [tag] = self.run_batch(cluster, env, ["--ntasks=1"], path, out, points=1)
        d = os.path.join(out, tag)
        self.assertEqual(read_json(os.path.join(d, "status.json"))["launcher"], "srun")
        summary = read_json(os.path.join(d, "summary.json"))
        self.assertEqual(summary["status"], "ok", summary.get("reason"))
        self.assertEqual(summary["server"]["container"], "charliecloud")
        self.assertNotIn("slurm_step", summary["server"])
        self.assertEqual([(lv["level"], lv["requests"], lv["failed"]) for lv in summary["levels"]],
                         [(1, 8, 0), (2, 8, 0)])
        self.assertIn("ended on SIGTERM", summary["server"]["stop"])
        # The server ran in the image (ch-run's mark in its environment), in the job, with no
        # step of its own (no server.slurm_step above).
        with open(os.path.join(d, "server-record.json")) as f:
            record = json.loads(f.readline())
        self.assertIn("CH_RUNNING", record["env"])
        self.assertEqual(record["env"]["GREETING"], "hello")
        self.assertIn("SLURM_JOB_ID", record["env"])


class History(ContainerCase):
    def test_a_slower_image_is_named_by_check_as_the_change(self):
        # Issue 53's "before and after another image": eight sweeps in the image, then five in
        # "the new image", another path to it (a link: what the runner records and the history
        # compares is the image the sweep names) whose container environment makes the command
        # sleep 90 ms instead of 30 (container.* is not part of the series: the same benchmark in
        # another image continues its series). Each ingested; check must name the change, its
        # size with its interval, and the image change as its cause.
        new_image = os.path.join(self.tmp, "ngc-24.10")
        os.symlink(self.image, new_image)
        store = os.path.join(self.tmp, "history.sqlite")
        script = ('s=$(date +%s%N); sleep $DELAY; e=$(date +%s%N); '
                  'echo "value $(( (e - s) / 1000000 ))"')
        for run, (img, delay) in enumerate([(self.image, "0.03")] * 8 + [(new_image, "0.09")] * 5):
            path = os.path.join(self.tmp, "image.yaml")
            with open(path, "w") as f:
                f.write("name: image\nbase:\n  benchmark: command\n"
                        "  metrics: {sample_interval_ms: 0, system: false}\n"
                        f"  container: {{runtime: charliecloud, image: {json.dumps(img)}, "
                        f"env: {{DELAY: \"{delay}\"}}}}\n"
                        f"  command:\n    argv: [sh, -c, {json.dumps(script)}]\n"
                        "    metrics: [{name: value, unit: ms, regex: 'value ([0-9]+)'}]\n"
                        "axes:\n  params.i: [1]\n")
            bench_sweep("run", path, "--out", os.path.join(self.tmp, f"run{run}"), "--history",
                        store, check=0)
        r = subprocess.run([os.path.join(BIN, "bench-history"), "check", "--store", store,
                            "--format", "json", "--fail-on", "value:50%"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 8, r.stdout + r.stderr)  # a regression beyond 50%
        latest = [c for c in json.loads(r.stdout) if c["latest"]]
        self.assertEqual(len(latest), 1, r.stdout)
        c = latest[0]
        # Whole milliseconds repeat exactly on a quiet machine (31 eight times, then 91: the
        # step must still be judged) and shift by one on a busy one (a level change among the
        # old image's runs may be found too, so the change may start later than run 1).
        self.assertEqual((c["verdict"], c["runs_after"]), ("worse", 5), r.stdout)
        self.assertIn(c["runs_before"], range(3, 9), r.stdout)
        self.assertGreater(c["change_low"], 0.5)  # 30 -> 90 ms, the shell's own time aside
        self.assertLess(c["change_low"], c["change"])
        self.assertGreater(c["change_high"], c["change"])
        self.assertIn(f"container_image {self.image} -> {new_image}", c["environment_change"])
        self.assertIn(f"when container_image {self.image} -> {new_image}", r.stderr)


class Podman(ContainerCase):
    """The Charliecloud image, imported into Podman: the same sweep locally (exec and
    mpirun, a container per rank) and through srun on two nodes."""

    IMAGE = "localhost/sweepbench-cpu:test"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.podman = LocalPodman().__enter__()
        try:
            cls.podman.import_directory(cls.image, cls.IMAGE)
        except BaseException:
            cls.podman.__exit__(None, None, None)
            raise
        cls.env = dict(ENV, **cls.podman.env)

    @classmethod
    def tearDownClass(cls):
        cls.podman.__exit__(None, None, None)

    def test_points_run_in_the_imported_image_alone_and_under_mpirun(self):
        out = os.path.join(self.tmp, "out")
        bench_sweep("run", sweep_file(self.tmp, self.IMAGE, runtime="podman"), "--out", out,
                    env=self.env, check=0)
        tags = self.assert_ran_in_the_image(out, "podman", self.IMAGE)
        # The ranks see the host's name (--uts=host), as Open MPI and the results need.
        for tag in tags:
            self.assertEqual(self.hosts[tag], {os.uname().nodename}, tag)

    def test_points_run_in_the_imported_image_through_srun_on_two_nodes(self):
        out = os.path.join(self.tmp, "out")
        with LocalSlurm(nodes=2, cpus=2) as cluster:
            env = dict(cluster.env, SWEEPBENCH_BIN_DIR=BIN, **self.podman.env)
            tags = self.run_batch(cluster, env, ["-N", "2"],
                                  sweep_file(self.tmp, self.IMAGE, runtime="podman", ranks="[2]",
                                             nodes=2), out, "podman", self.IMAGE, points=1)
        self.assertEqual(self.hosts[tags[0]], {"n1", "n2"})
        self.assertEqual(read_json(os.path.join(out, tags[0], "status.json"))["launcher"], "srun")


if __name__ == "__main__":
    unittest.main()
