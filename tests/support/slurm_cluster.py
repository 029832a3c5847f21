"""A real SLURM cluster on loopback for the tests: munged, slurmctld and slurmd from Debian's
munge and slurm-wlm packages, with this host as its one node.

Everything lives in a temporary directory: munge's own key and socket, a generated slurm.conf
(reached through SLURM_CONF, so the host's /etc/slurm is never read), state, spool and logs. The
ports are free ones picked at start, so two clusters can run side by side. `with LocalSlurm() as
cluster:` waits until the node is idle and stops every daemon afterwards, also when the body
fails. It installs nothing: scripts/install-deps does.

    with LocalSlurm(max_array_size=3) as cluster:
        subprocess.run(["sbatch", ...], env=cluster.env)
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

SLURM_DAEMONS = ("munged", "slurmctld", "slurmd")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing_programs():
    return [p for p in SLURM_DAEMONS + ("sbatch", "srun", "squeue", "scontrol")
            if shutil.which(p) is None and not os.path.exists("/usr/sbin/" + p)]


class LocalSlurm:
    NODE = "sbnode"

    def __init__(self, cpus=None, max_array_size=1001, kill_wait=5, preempt_mode=None):
        """preempt_mode (CANCEL, REQUEUE): add a partition `urgent` whose jobs preempt those of
        the default partition `debug`."""
        self.cpus = cpus or max(4, os.cpu_count() or 1)
        self.max_array_size = max_array_size
        self.kill_wait = kill_wait
        self.preempt_mode = preempt_mode
        self.dir = None
        self.procs = {}
        self.env = None

    # -- set-up ---------------------------------------------------------------------------
    def __enter__(self):
        missing = missing_programs()
        if missing:
            raise RuntimeError("LocalSlurm needs " + ", ".join(missing) +
                               ": run scripts/install-deps (Debian's slurm-wlm and munge)")
        # Short path: the munge socket's path must fit in sockaddr_un.
        self.dir = tempfile.mkdtemp(prefix="sbslurm-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        for sub in ("state", "spool", "log"):
            os.makedirs(os.path.join(self.dir, sub))
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _start(self):
        key = self.path("munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(os.urandom(1024))
        self._spawn("munged", [self._sbin("munged"), "-F", "--force", "--key-file=" + key,
                               "--socket=" + self.path("munge.sock"),
                               "--pid-file=" + self.path("munged.pid"),
                               "--seed-file=" + self.path("munged.seed"),
                               "--log-file=" + self.path("log", "munged.log")])
        self._wait_for(lambda: os.path.exists(self.path("munge.sock")), 15, "munged's socket")
        self._write_conf()
        self.env = dict(os.environ)
        for k in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))]:
            del self.env[k]
        self.env["SLURM_CONF"] = self.path("slurm.conf")
        self._spawn("slurmctld", [self._sbin("slurmctld"), "-D", "-i"])
        self._spawn("slurmd", [self._sbin("slurmd"), "-D", "-N", self.NODE])
        self._wait_for(self._node_idle, 60, "the node to be idle")

    def _sbin(self, name):
        return shutil.which(name) or "/usr/sbin/" + name

    def _spawn(self, name, argv):
        log = open(self.path("log", name + ".out"), "w")
        env = dict(self.env or os.environ)
        if self.env is not None:
            env["SLURM_CONF"] = self.path("slurm.conf")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            start_new_session=True)
        log.close()

    def _write_conf(self):
        d = self.dir
        os.makedirs(self.path("spool", self.NODE))
        open(self.path("plugstack.conf"), "w").close()
        conf = f"""\
# Written by tests/support/slurm_cluster.py: one node on loopback, everything under {d}.
ClusterName=sweepbench-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
PlugStackConfig={d}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait={self.kill_wait}
MaxArraySize={self.max_array_size}
NodeName={self.NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes={self.NODE} Default=YES MaxTime=INFINITE State=UP PriorityTier=1
"""
        if self.preempt_mode:
            conf += f"""\
PartitionName=urgent Nodes={self.NODE} MaxTime=INFINITE State=UP PriorityTier=2
PreemptType=preempt/partition_prio
PreemptMode={self.preempt_mode}
"""
        with open(self.path("slurm.conf"), "w") as f:
            f.write(conf)
        # slurmstepd's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> by default. Every
        # test cluster numbers its jobs from 1, so two clusters (ctest -j2), or a step killed
        # before it could clean up, collide there and srun --mpi=pmix fails with "File exists".
        # slurmd reads mpi.conf from slurm.conf's directory.
        os.makedirs(self.path("pmix"))
        with open(self.path("mpi.conf"), "w") as f:
            f.write(f"PMIxCliTmpDirBase={d}/pmix\n")

    def _node_idle(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode}\n{self.logs()}")
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True,
                           text=True)
        states = set(r.stdout.split())  # one line per partition the node is in
        return r.returncode == 0 and states == {"idle"}

    def _wait_for(self, ready, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"LocalSlurm: waited {seconds} s for {what}\n{self.logs()}")

    # -- use ------------------------------------------------------------------------------
    def run(self, *argv, check=True, **kw):
        """Runs a SLURM client (sbatch, squeue, ...) against this cluster."""
        r = subprocess.run(list(argv), env=kw.pop("env", self.env), capture_output=True,
                           text=True, timeout=kw.pop("timeout", 120), **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        return r

    def job_states(self):
        """{job id: state} for every job slurmctld still remembers (MinJobAge is 600 s)."""
        r = self.run("squeue", "-h", "-r", "-t", "all", "-o", "%i %T")
        return dict(line.split() for line in r.stdout.splitlines() if line.strip())

    def wait_until_idle(self, seconds=300):
        """Waits until no job is pending, running or completing."""
        live = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT")
        self._wait_for(lambda: not any(s in live for s in self.job_states().values()), seconds,
                       "every job to end")

    def logs(self, lines=30):
        out = []
        for log in sorted(os.listdir(self.path("log"))) if self.dir else []:
            with open(self.path("log", log), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            out.append(f"--- {log} ---\n" + "\n".join(tail))
        return "\n".join(out)

    # -- tear-down ------------------------------------------------------------------------
    def __exit__(self, *exc):
        if self.env is not None and self.procs.get("slurmctld") is not None:
            # Jobs end first (their slurmstepd would outlive slurmd), within KillWait.
            subprocess.run(["scancel", "--full", "--user", str(os.getuid())], env=self.env,
                           capture_output=True, timeout=30)
            try:
                self.wait_until_idle(self.kill_wait + 20)
            except (RuntimeError, AssertionError, subprocess.TimeoutExpired):
                pass  # a daemon already gone: stop the rest regardless
        for name in reversed(list(self.procs)):
            self._stop(self.procs[name])
        if self.dir and os.environ.get("SWEEPBENCH_KEEP_SLURM") is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def _stop(self, proc):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
