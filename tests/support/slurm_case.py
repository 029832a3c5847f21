"""The base of the Python tests that run sweeps on a real SLURM cluster: one cluster per test
class (tests/support/slurm_cluster.py, started with the class's CLUSTER options), a temporary
directory per test, and bench-sweep, sbatch and waits run against that cluster.

    class ArrayMode(SlurmCase):
        CLUSTER = dict(max_array_size=2)
"""
import subprocess
import tempfile
import time
import unittest

from e2e import BENCH_SWEEP, BIN
from slurm_cluster import LocalSlurm


class SlurmCase(unittest.TestCase):
    CLUSTER = {}  # LocalSlurm's options

    @classmethod
    def setUpClass(cls):
        cls.cluster = LocalSlurm(**cls.CLUSTER).__enter__()
        cls.env = dict(cls.cluster.env, SWEEPBENCH_BIN_DIR=BIN)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def bench_sweep(self, *args, check=0, timeout=300):
        r = subprocess.run([BENCH_SWEEP, *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout, cwd=self.tmp)
        if check is not None and r.returncode != check:
            self.fail(f"bench-sweep {' '.join(args)}: exit {r.returncode}, wanted {check}\n"
                      f"{r.stdout}\n{r.stderr}")
        return r

    def sbatch(self, *args):
        r = self.cluster.run("sbatch", "--parsable", *args, env=self.env, cwd=self.tmp)
        return r.stdout.strip().split(";")[0]

    def wait_for(self, ready, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.5)
        self.fail(f"waited {seconds} s for {what}\n{self.cluster.logs()}")

    def start_requeued_job(self, job):
        # SLURM holds a requeued job back for two minutes (BeginTime); the tests wait until the
        # first run's step daemons are gone, then 2 s. Not less: slurmd refuses a job credential
        # made within the second it revoked the last one ("Job credential revoked") and the job
        # would end FAILED without running; and a step started while slurmd still ends the first
        # run's step of the same id (StepId=1.0) is "aborted before step completely launched",
        # srun saying "task 0 launch failed" and exiting 0 (CI, 2026-11-26).
        # An array task's own job id (1_0 is job 1): its step daemons are "slurmstepd: [1.0]".
        number = self.cluster.run("squeue", "-h", "-j", job, "-o", "%A").stdout.strip()
        if not number.isdigit():
            number = job.split("_")[0]

        def stepds():
            ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            return [line for line in ps.splitlines()
                    if line.startswith(f"slurmstepd: [{number}.")]
        deadline = time.monotonic() + 60
        while stepds() and time.monotonic() < deadline:
            time.sleep(0.5)
        left = stepds()
        if left:
            self.fail(f"the first run's steps still run after 60 s: {left}\n{self.cluster.logs()}")
        time.sleep(2)
        self.cluster.run("scontrol", "update", "JobId=" + job, "StartTime=now")
