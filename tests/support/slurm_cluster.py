"""A real SLURM cluster on loopback for the tests: munged, slurmctld and slurmd from Debian's
munge and slurm-wlm packages, with this host as its one node; or as several nodes, and with
accounting (slurmdbd on a MariaDB server of its own) for sacct.

Several nodes (`nodes=2`): Debian's slurm-wlm is built with multiple-slurmd support, so each node
is a slurmd of its own, on its own loopback address (127.0.0.2, 127.0.0.3, ...) and port, in a
UTS namespace whose host name is the node's (n1, n2, ...): what the jobs see as their host, so
that Open MPI's shared-memory names and the rank files' host names differ by node. Spool, pid,
log and TmpFS directories are per node (%n).

Accounting (`accounting=True`): mariadb-install-db makes a database directory of its own,
mariadbd serves it on a free port of 127.0.0.1 and its own socket, a `slurm` user gets
slurm_acct_db, slurmdbd (slurmdbd.conf beside slurm.conf, mode 600) talks to it, and slurmctld
and sacct reach slurmdbd with this cluster's munge socket (AccountingStoragePass=socket=...).
`min_job_age` makes slurmctld forget finished jobs soon, so that squeue no longer knows them and
sacct must answer.

Everything lives in a temporary directory: munge's own key and socket, a generated slurm.conf
(reached through SLURM_CONF, so the host's /etc/slurm is never read), state, spool and logs. The
ports are free ones picked at start, so two clusters can run side by side. `with LocalSlurm() as
cluster:` waits until the node is idle and stops every daemon afterwards, also when the body
fails. It installs nothing: scripts/install-deps does.

    with LocalSlurm(max_array_size=3) as cluster:
        subprocess.run(["sbatch", ...], env=cluster.env)
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

SLURM_DAEMONS = ("munged", "slurmctld", "slurmd")
ACCOUNTING_PROGRAMS = ("slurmdbd", "mariadbd", "mariadb-install-db", "mariadb", "sacct")


_ports_given = set()


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A free TCP port on loopback for a daemon to listen on, below the kernel's ephemeral range:
    a port the kernel hands out (bind to 0) can be taken by any outgoing connection (slurmdbd to
    MariaDB, a client to slurmctld) between this check and the daemon's own bind, which then
    fails with "Address already in use". Never the same port twice in one process."""
    low = max(2048, _ephemeral_low())
    rng = random.SystemRandom()
    for _ in range(2000):
        port = rng.randrange(max(1024, low - 20000), low)
        if port in _ports_given:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_given.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range")


def missing_programs(accounting=False):
    wanted = SLURM_DAEMONS + ("sbatch", "srun", "squeue", "scontrol")
    if accounting:
        wanted += ACCOUNTING_PROGRAMS
    return [p for p in wanted if shutil.which(p) is None and not os.path.exists("/usr/sbin/" + p)]


class LocalSlurm:
    NODE = "sbnode"

    def __init__(self, cpus=None, max_array_size=1001, kill_wait=5, preempt_mode=None, nodes=1,
                 accounting=False, min_job_age=600):
        """preempt_mode (CANCEL, REQUEUE): add a partition `urgent` whose jobs preempt those of
        the default partition `debug`. cpus: per node."""
        self.cpus = cpus or max(4, os.cpu_count() or 1)
        self.max_array_size = max_array_size
        self.kill_wait = kill_wait
        self.preempt_mode = preempt_mode
        self.nodes = nodes
        self.accounting = accounting
        self.min_job_age = min_job_age
        self.node_names = [self.NODE] if nodes == 1 else [f"n{i + 1}" for i in range(nodes)]
        self.dir = None
        self.procs = {}
        self.env = None

    # -- set-up ---------------------------------------------------------------------------
    def __enter__(self):
        missing = missing_programs(self.accounting)
        if missing:
            raise RuntimeError("LocalSlurm needs " + ", ".join(missing) +
                               ": run scripts/install-deps (Debian's slurm-wlm, munge, slurmdbd, "
                               "mariadb-server)")
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
        if self.accounting:
            self._start_database()
        self._write_conf()
        self.env = dict(os.environ)
        for k in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))]:
            del self.env[k]
        self.env["SLURM_CONF"] = self.path("slurm.conf")
        if self.accounting:
            self._spawn("slurmdbd", [self._sbin("slurmdbd"), "-D"])
            self._wait_for(lambda: self._listening(self.dbd_port), 60, "slurmdbd's port")
        self._spawn("slurmctld", [self._sbin("slurmctld"), "-D", "-i"])
        if self.nodes == 1:
            self._spawn("slurmd", [self._sbin("slurmd"), "-D", "-N", self.NODE])
        else:
            for name in self.node_names:
                # The node's own host name, in a UTS namespace of its own.
                self._spawn("slurmd-" + name,
                            ["unshare", "--uts", "sh", "-c", 'hostname "$1" && exec "$2" -D -N "$1"',
                             "sh", name, self._sbin("slurmd")])
        self._wait_for(self._node_idle, 60, "the nodes to be idle")
        if self.nodes > 1:
            # Debian 12's Open MPI 4.1.4 under srun --mpi=pmix (PMIx 4.2.2) now and then crashes
            # a rank in MPI_Init across two nodes: a peer's first message reaches it over TCP
            # before its PML is ready (SIGSEGV in mca_btl_tcp, a null handler for tag 65). With
            # PMIx's shared-memory store (the default gds) an MPI hello world under srun -N2 -n4
            # on this cluster, both cores busy, crashed 3 times in 250 runs; with the hash store
            # none in 950 (2026-11-24). The jobs get it from the clients' environment;
            # docs/running.md gives users the same workaround (launch.env).
            self.env["PMIX_MCA_gds"] = "hash"

    def _listening(self, port):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def _start_database(self):
        """A MariaDB server of this cluster's own, and a `slurm` user for slurmdbd."""
        db = self.path("db")
        r = subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + db, "--user=root",
                            "--auth-root-authentication-method=normal", "--skip-test-db",
                            "--skip-name-resolve", "--innodb-log-file-size=4M",
                            "--innodb-buffer-pool-size=16M"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{r.stdout}{r.stderr}")
        self.db_port = free_port()
        self.db_socket = self.path("mysqld.sock")
        self._spawn("mariadbd", [self._sbin("mariadbd"), "--no-defaults", "--datadir=" + db,
                                 "--user=root", "--socket=" + self.db_socket,
                                 f"--port={self.db_port}", "--bind-address=127.0.0.1",
                                 "--pid-file=" + self.path("mysqld.pid"), "--skip-name-resolve",
                                 "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=4M",
                                 "--log-error=" + self.path("log", "mariadb.log")])
        self._wait_for(lambda: self._listening(self.db_port), 60, "MariaDB's port")
        self.db_password = os.urandom(8).hex()
        sql = (f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.db_password}'; "
               f"CREATE USER 'slurm'@'localhost' IDENTIFIED BY '{self.db_password}'; "
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; "
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';")
        r = subprocess.run(["mariadb", "--no-defaults", "--socket=" + self.db_socket, "-u", "root",
                            "-e", sql], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"creating the slurm database user failed:\n{r.stderr}")

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
        for name in self.node_names:
            os.makedirs(self.path("spool", name))
            os.makedirs(self.path("tmp", name))
        open(self.path("plugstack.conf"), "w").close()
        if self.nodes == 1:
            node_lines = (f"NodeName={self.NODE} NodeHostname={socket.gethostname()} "
                          f"NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=4000 State=UNKNOWN\n")
            port_line = f"SlurmdPort={free_port()}\n"
        else:
            node_lines = "".join(
                f"NodeName={name} NodeHostname={name} NodeAddr=127.0.0.{i + 2} "
                f"Port={free_port()} CPUs={self.cpus} RealMemory=4000 State=UNKNOWN\n"
                for i, name in enumerate(self.node_names))
            port_line = ""
        nodes = ",".join(self.node_names)
        if self.accounting:
            self.dbd_port = free_port()
            accounting = f"""\
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={self.dbd_port}
AccountingStoragePass=socket={d}/munge.sock
"""
            dbd = f"""\
# Written by tests/support/slurm_cluster.py.
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
DbdAddr=127.0.0.1
DbdHost=localhost
DbdPort={self.dbd_port}
SlurmUser=root
PidFile={d}/slurmdbd.pid
LogFile={d}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=slurm
StoragePass={self.db_password}
StorageLoc=slurm_acct_db
"""
            with open(os.open(self.path("slurmdbd.conf"), os.O_WRONLY | os.O_CREAT, 0o600),
                      "w") as f:
                f.write(dbd)
        else:
            accounting = "AccountingStorageType=accounting_storage/none\n"
        conf = f"""\
# Written by tests/support/slurm_cluster.py: {len(self.node_names)} node(s) on loopback,
# everything under {d}.
ClusterName=sweepbench-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
{port_line}SlurmUser=root
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
TmpFS={d}/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
{accounting}JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge={self.min_job_age}
KillWait={self.kill_wait}
MaxArraySize={self.max_array_size}
{node_lines}PartitionName=debug Nodes={nodes} Default=YES MaxTime=INFINITE State=UP PriorityTier=1
"""
        if self.preempt_mode:
            conf += f"""\
PartitionName=urgent Nodes={nodes} MaxTime=INFINITE State=UP PriorityTier=2
PreemptType=preempt/partition_prio
PreemptMode={self.preempt_mode}
"""
        with open(self.path("slurm.conf"), "w") as f:
            f.write(conf)
        # slurmstepd's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> by default. Every
        # test cluster numbers its jobs from 1, so two clusters (ctest -j2), or a step killed
        # before it could clean up, collide there and srun --mpi=pmix fails with "File exists".
        # slurmd reads mpi.conf from slurm.conf's directory. With several nodes on one host it
        # must be per node, which only TmpFS (above) can say (%n is not expanded here).
        if self.nodes == 1:
            os.makedirs(self.path("pmix"))
            with open(self.path("mpi.conf"), "w") as f:
                f.write(f"PMIxCliTmpDirBase={d}/pmix\n")

    def _node_idle(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode}\n{self.logs()}")
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True,
                           text=True)
        states = r.stdout.split()  # one line per node and partition
        return (r.returncode == 0 and set(states) == {"idle"} and
                len(states) >= len(self.node_names))

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
        try:
            self._wait_for(lambda: not any(s in live for s in self.job_states().values()),
                           seconds, "every job to end")
        except RuntimeError as e:
            raise RuntimeError(f"{e}\n{self.what_still_runs()}") from None

    def what_still_runs(self):
        """The jobs and steps still known and the processes of SLURM's jobs on this host, for a
        failure message: which step of which job hangs, and in which program."""
        text = []
        for argv in (["squeue", "-h", "-r", "-t", "all", "-o", "%i %T %N %M"],
                     ["squeue", "-h", "-s", "-o", "%i %N %M"],
                     ["ps", "-eo", "pid,ppid,stat,etime,args"]):
            try:
                r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
                out = r.stdout
            except (OSError, subprocess.TimeoutExpired) as e:
                out = str(e)
            if argv[0] == "ps":
                keep = ("slurmstepd", "srun", "bench-", "mpirun", "sleep")
                out = "\n".join(line for line in out.splitlines() if any(k in line for k in keep))
            text.append(f"--- {' '.join(argv)} ---\n{out}")
        return "\n".join(text)

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
