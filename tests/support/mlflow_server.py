"""A real MLflow tracking server (`mlflow server` from scripts/mlflow-venv) on loopback for
bench-history export mlflow's tests, and MLflow's own Python client to read back what it holds.

    with LocalMlflow() as server:
        server.url                   # http://127.0.0.1:PORT
        server.runs("experiment")    # every active run, as MlflowClient reads it

A SQLite backend store and the artifact root in a temporary directory, listening on 127.0.0.1
only, a port that was free; about 11 s to start (it is ready when /health answers); stopped and
removed on exit.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Run inside the venv's python: every active run of an experiment, as MLflow's client sees it.
READ_RUNS = r"""
import json, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
runs = client.search_runs([experiment.experiment_id]) if experiment else []
print(json.dumps([{"run_id": r.info.run_id, "name": r.info.run_name, "status": r.info.status,
                   "start_time": r.info.start_time, "end_time": r.info.end_time,
                   "params": r.data.params, "metrics": r.data.metrics, "tags": r.data.tags}
                  for r in runs]))
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mlflow_venv():
    """The venv of MLflow's server and client, made once by scripts/mlflow-venv."""
    return subprocess.run([os.path.join(SOURCE, "scripts", "mlflow-venv")], check=True,
                          capture_output=True, text=True, timeout=1200).stdout.strip()


class LocalMlflow:
    def __init__(self):
        self.venv = mlflow_venv()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.process = None
        self.dir = tempfile.mkdtemp(prefix="sweepbench-mlflow-")
        try:
            return self._start()
        except BaseException:
            # Whatever stopped the start (a half-started server's bad answer, Ctrl-C), the
            # server and its directory go: unittest never calls __exit__ when __enter__ raises.
            self.__exit__(None, None, None)
            raise

    def _start(self):
        self.log_path = os.path.join(self.dir, "server.log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [os.path.join(self.venv, "bin", "mlflow"), "server", "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "1",
                 "--backend-store-uri", f"sqlite:///{self.dir}/mlflow.db",
                 "--default-artifact-root", os.path.join(self.dir, "artifacts")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not start:\n{self.log()}")
            time.sleep(0.5)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def __exit__(self, *exc):
        if self.process is not None:
            # The whole group, also when the main process has ended: its workers hold the port.
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def runs(self, experiment):
        """Every active run of `experiment` as MLflow's own client reads it."""
        r = subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", READ_RUNS, self.url,
                            experiment], capture_output=True, text=True, timeout=300, check=True)
        return json.loads(r.stdout)

    def rest(self, endpoint, body):
        """A POST to MLflow's REST API, its JSON answer."""
        request = urllib.request.Request(f"{self.url}/api/2.0/mlflow/{endpoint}",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.loads(r.read())
