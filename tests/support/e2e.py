"""What the Python end-to-end tests share: where the binaries are, the environment mpirun needs
as root on two cores, running bench-sweep, and reading what it writes.

    sys.path.insert(0, os.path.join(SOURCE, "tests", "support")); from e2e import ...
"""
import json
import os
import subprocess

import yaml

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(os.environ.get("SWEEPBENCH_BIN_DIR",
                                     os.path.join(SOURCE, "build", "release", "bin")))
BENCH_SWEEP = os.path.join(BIN, "bench-sweep")

# mpirun as root (CI runs as root) with more ranks than CI's 2 cores; no SLURM variables of the
# caller's (the tests that want SLURM start their own cluster).
ENV = dict(os.environ)
ENV.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
for _key in [k for k in ENV if k.startswith("SLURM_")]:
    del ENV[_key]


def bench_sweep(*args, env=None, check=None, cwd=None, timeout=600):
    """Runs bench-sweep; with `check`, fails unless it exits with that code."""
    r = subprocess.run([BENCH_SWEEP, *args], env=ENV if env is None else env, cwd=cwd,
                       capture_output=True, text=True, timeout=timeout)
    if check is not None and r.returncode != check:
        raise AssertionError(f"bench-sweep {' '.join(args)}: exit {r.returncode}, wanted {check}\n"
                             f"{r.stdout}\n{r.stderr}")
    return r


def run_tool(binary, *args, check=0, timeout=300):
    """Runs one of our binaries (a path, e.g. os.path.join(BIN, "bench-extract")) in the
    caller's environment; with `check`, fails unless it exits with that code."""
    r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and r.returncode != check:
        raise AssertionError(f"{os.path.basename(binary)} {' '.join(args)}: exit {r.returncode}, "
                             f"wanted {check}\n{r.stdout}\n{r.stderr}")
    return r


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def peer_venv():
    """The venv of the peer programs (transformers, accelerate, peft from PyPI), made once by
    scripts/peer-venv."""
    return subprocess.run([os.path.join(SOURCE, "scripts", "peer-venv")], check=True,
                          capture_output=True, text=True, timeout=900).stdout.strip()


def command_sweep(tmp, name, script, values, base=""):
    """Writes TMP/NAME.yaml, a sweep of command points, one a value of params.i, each running
    `script` in bash; the script prints `value N`, the points' one metric. `base`: more lines of
    the base section (indented two spaces). Returns the path."""
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nbase:\n  benchmark: command\n  command:\n"
                f"    argv: [bash, -c, {json.dumps(script)}]\n"
                f"    metrics:\n      - {{name: value, regex: 'value ([0-9]+)'}}\n"
                f"{base}axes:\n  params.i: {json.dumps(values)}\n")
    return path

