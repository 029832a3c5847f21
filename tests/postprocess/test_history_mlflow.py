"""bench-history export mlflow end to end: real sweeps of real command points (bench-sweep run),
ingested into a real SQLite store, exported to a real MLflow tracking server (`mlflow server`
from PyPI, scripts/mlflow-venv, a fixture of this test) on loopback, and read back with MLflow's
own Python client.

Mlflow: a parent run per sweep and a child per attempt with its params, metrics, intervals,
tags, status and times; a second export adds nothing; hostile text arrives verbatim; the
offline file sent later with --sync gives the same runs; a run an export left half-sent is sent
again whole; an unreachable server, a bad URI and MLflow's refusals say what to do and exit as
docs/exit-codes.md says.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from e2e import bench_sweep, command_sweep  # noqa: E402
from mlflow_server import LocalMlflow, free_port  # noqa: E402
from test_bench_history import history as run_history  # noqa: E402

# A label value and a config value no quoting may change: quotes, backslash, SQL, shell, HTML,
# a filter's quotes, and letters beyond ASCII.
HOSTILE = "a'b\"c\\d; DROP TABLE runs; -- $(touch x) `id` </script> tags.\"k\" = 'v' é中"


def history(*args, check=0, env=None):
    """bench-history without the caller's MLFLOW_* variables, with `env`'s."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    environment.update(env or {})
    return run_history(*args, check=check, env=environment)


def comparable(runs):
    """The runs without what differs between two servers' copies (ids), by run key."""
    parents = {r["run_id"]: r["name"] for r in runs if "sweepbench.run_key" not in r["tags"]}
    out = {}
    for r in runs:
        tags = dict(r["tags"])
        parent = tags.pop("mlflow.parentRunId", None)
        key = tags.get("sweepbench.run_key", "parent:" + r["name"])
        out[key] = (r["name"], r["status"], r["start_time"], r["end_time"], r["params"],
                    r["metrics"], tags, parents.get(parent))
    return out


class Mlflow(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = cls.enterClassContext(LocalMlflow())

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-history-mlflow-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.store = os.path.join(self.tmp, "history.sqlite")

    def sweep(self, name, script, values, check=0, base=""):
        path = command_sweep(self.tmp, name, script, values, base)
        out = os.path.join(self.tmp, name)
        bench_sweep("run", path, "-o", out, check=check)
        return path, out

    def stored(self):
        with sqlite3.connect(self.store) as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM runs")]

    def export(self, *args, check=0, env=None):
        return history("export", "mlflow", "--store", self.store, *args, check=check, env=env)

    def two_sweeps(self):
        """Sweep `alpha`: i=1, 2, 3, i=2 failing; sweep `beta`: i=5. With a hostile config value
        and label."""
        flag = os.path.join(self.tmp, "fail-once")
        open(flag, "w").close()
        script = (f'if [ "{{params.i}}" = 2 ] && [ -e {flag} ]; then echo broken; exit 3; fi; '
                  'echo "value $((10 * {params.i}))"')
        base = f"  params.note: {json.dumps(HOSTILE)}\n"
        alpha, alpha_out = self.sweep("alpha", script, [1, 2, 3], check=1, base=base)
        _, beta_out = self.sweep("beta", script, [5], base=base)
        history("ingest", alpha_out, beta_out, "--store", self.store, "--label",
                f"commit={HOSTILE}")
        return flag, alpha, alpha_out

    def test_runs_arrive_under_their_sweeps_once_with_everything_verbatim(self):
        flag, alpha, alpha_out = self.two_sweeps()
        r = self.export("--tracking-uri", self.server.url, "--experiment", "bench")
        self.assertIn("4 new run(s) sent to MLflow experiment 'bench'", r.stderr)
        self.assertIn("2 sweep parent run(s) made", r.stderr)
        runs = self.server.runs("bench")
        self.assertEqual(len(runs), 6)
        parents = {r["name"]: r for r in runs if "mlflow.parentRunId" not in r["tags"]}
        self.assertEqual(sorted(parents), ["alpha", "beta"])
        for p in parents.values():
            self.assertEqual(p["status"], "FINISHED")
            self.assertEqual(p["tags"]["sweepbench.sweep"], p["name"])
        stored = {s["run_key"]: s for s in self.stored()}
        children = [r for r in runs if "mlflow.parentRunId" in r["tags"]]
        self.assertEqual(sorted(r["tags"]["sweepbench.run_key"] for r in children),
                         sorted(stored))
        for child in children:
            s = stored[child["tags"]["sweepbench.run_key"]]
            i = int(child["params"]["params.i"])
            self.assertEqual(child["tags"]["mlflow.parentRunId"], parents[s["sweep"]]["run_id"])
            self.assertEqual(child["name"], s["tag"])
            self.assertEqual(child["params"]["params.note"], HOSTILE)
            self.assertEqual(child["params"]["benchmark"], "command")
            self.assertEqual(child["tags"]["label.commit"], HOSTILE)
            self.assertEqual(child["tags"]["sweepbench.status"], s["status"])
            self.assertEqual(child["tags"]["sweepbench.config_hash"], s["config_hash"])
            self.assertEqual(child["tags"]["env.host"], os.uname().nodename)
            self.assertEqual(child["tags"]["sweepbench.attempt"], "1")
            if s["status"] == "ok":
                self.assertEqual(child["status"], "FINISHED")
                self.assertEqual(child["metrics"], {"value": 10 * i})
            else:
                self.assertEqual((i, s["status"], child["status"]), (2, "failed", "FAILED"))
                self.assertEqual(child["tags"]["sweepbench.reason"], s["reason"])
            # Times: the attempt's, to the second.
            self.assertEqual(child["start_time"] % 1000, 0)
            self.assertLessEqual(child["start_time"], child["end_time"])
            self.assertEqual(
                subprocess.run(["date", "-u", "-d", f"@{child['start_time'] // 1000}",
                                "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True, text=True,
                               check=True).stdout.strip(), s["started"])

        # A second export sends nothing.
        r = self.export("--tracking-uri", self.server.url, "--experiment", "bench")
        self.assertIn("0 new run(s)", r.stderr)
        self.assertIn("4 already there", r.stderr)
        self.assertEqual(comparable(self.server.runs("bench")), comparable(runs))

        # The failed point rerun: its second attempt goes under the same parent; the
        # experiment from $MLFLOW_TRACKING_URI and $MLFLOW_EXPERIMENT_NAME, as MLflow's client.
        os.unlink(flag)
        bench_sweep("run", alpha, "-o", alpha_out, "--retry-failed", check=0)
        history("ingest", alpha_out, "--store", self.store)
        r = self.export(env={"MLFLOW_TRACKING_URI": self.server.url,
                             "MLFLOW_EXPERIMENT_NAME": "bench"})
        self.assertIn("1 new run(s)", r.stderr)
        self.assertNotIn("parent", r.stderr)
        after = self.server.runs("bench")
        self.assertEqual(len(after), 7)
        second = [r for r in after if r["tags"].get("sweepbench.attempt") == "2"]
        self.assertEqual(len(second), 1)
        self.assertEqual(second[0]["status"], "FINISHED")
        self.assertEqual(second[0]["metrics"], {"value": 20})
        self.assertEqual(second[0]["tags"]["mlflow.parentRunId"], parents["alpha"]["run_id"])

    def test_offline_file_sent_later_gives_the_same_runs(self):
        self.two_sweeps()
        self.export("--tracking-uri", self.server.url, "--experiment", "direct")
        spool = os.path.join(self.tmp, "to-send.jsonl")
        r = self.export("--offline", spool, "--experiment", "later")
        self.assertIn("4 run(s) for MLflow experiment 'later' written to", r.stderr)
        self.assertEqual(self.server.runs("later"), [])  # nothing sent
        # Written whole: a second --offline over it needs -f; nothing but the file is left.
        r = self.export("--offline", spool, check=3)
        self.assertIn("add -f", r.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         sorted(["alpha", "alpha.yaml", "beta", "beta.yaml", "fail-once",
                                 "history.sqlite", "to-send.jsonl"]))
        # Sent from elsewhere: no store needed there.
        elsewhere = os.path.join(self.tmp, "login-node")
        os.mkdir(elsewhere)
        copy = shutil.copy(spool, elsewhere)
        r = history("export", "mlflow", "--sync", copy, "--tracking-uri", self.server.url)
        self.assertIn("4 new run(s) sent to MLflow experiment 'later'", r.stderr)
        self.assertEqual(comparable(self.server.runs("later")),
                         comparable(self.server.runs("direct")))
        r = history("export", "mlflow", "--sync", copy, "--tracking-uri", self.server.url)
        self.assertIn("0 new run(s)", r.stderr)
        self.assertEqual(len(self.server.runs("later")), 6)
        # --experiment chooses another at sync time.
        history("export", "mlflow", "--sync", copy, "--tracking-uri", self.server.url,
                "--experiment", "third")
        self.assertEqual(len(self.server.runs("third")), 6)
        # A file cut short is refused before anything is sent.
        with open(spool) as f:
            lines = f.readlines()
        cut = os.path.join(self.tmp, "cut.jsonl")
        with open(cut, "w") as f:
            f.writelines(lines[:-1])
        r = history("export", "mlflow", "--sync", cut, "--tracking-uri", self.server.url,
                    "--experiment", "cut", check=2)
        self.assertIn("holds 3 run(s) where its first line says 4: it was cut short", r.stderr)
        self.assertEqual(self.server.runs("cut"), [])

    def test_a_run_left_half_sent_is_sent_again_whole(self):
        self.two_sweeps()
        spool = os.path.join(self.tmp, "spool.jsonl")
        self.export("--offline", spool, "--experiment", "half")
        with open(spool) as f:
            lines = f.readlines()
        # A metric name MLflow refuses in the last run: MLflow's own error, the run created
        # but not finished, the runs before it whole.
        broken = json.loads(lines[-1])
        broken["metrics"].append({"key": "bad!name", "value": 1, "timestamp": 0, "step": 0})
        edited = os.path.join(self.tmp, "edited.jsonl")
        with open(edited, "w") as f:
            f.writelines(lines[:-1] + [json.dumps(broken) + "\n"])
        r = history("export", "mlflow", "--sync", edited, "--tracking-uri", self.server.url,
                    check=4)
        self.assertIn("MLflow refused runs/log-batch: 400 INVALID_PARAMETER_VALUE", r.stderr)
        self.assertIn("bad!name", r.stderr)
        half = [x for x in self.server.runs("half")
                if x["tags"].get("sweepbench.run_key") == broken["run_key"]]
        self.assertEqual([x["status"] for x in half], ["RUNNING"])
        # The next export finds it unfinished, deletes it and sends it whole.
        r = history("export", "mlflow", "--sync", spool, "--tracking-uri", self.server.url)
        self.assertIn("1 new run(s)", r.stderr)
        self.assertIn("3 already there", r.stderr)
        self.assertIn("1 left unfinished by an export cut short were deleted and sent again",
                      r.stderr)
        runs = self.server.runs("half")
        again = [x for x in runs if x["tags"].get("sweepbench.run_key") == broken["run_key"]]
        self.assertEqual(len(again), 1)
        self.assertNotEqual(again[0]["status"], "RUNNING")
        self.assertNotIn("bad!name", again[0]["metrics"])
        self.assertEqual(len(runs), 6)

    def test_errors_say_what_to_do(self):
        self.two_sweeps()
        port = free_port()  # nothing listens there
        r = self.export("--tracking-uri", f"http://user:s3cret@127.0.0.1:{port}", check=4)
        self.assertIn(f"--tracking-uri http://user:***@127.0.0.1:{port}: error: cannot reach "
                      "the MLflow tracking server", r.stderr)
        self.assertIn("--offline FILE", r.stderr)
        self.assertNotIn("s3cret", r.stderr)
        r = self.export(env={"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"}, check=4)
        self.assertIn(f"$MLFLOW_TRACKING_URI http://127.0.0.1:{port}: error", r.stderr)
        for bad in ("file:///tmp/mlruns", "databricks", "sqlite:///m.db", "http://"):
            r = self.export("--tracking-uri", bad, check=2)
            self.assertIn("--tracking-uri", r.stderr)
            self.assertIn("--tracking-uri http://127.0.0.1:5000", r.stderr)
        r = self.export(check=2)
        self.assertIn("needs the MLflow tracking server", r.stderr)
        # A token with a line break would add headers to every request: refused, not shown.
        r = self.export("--tracking-uri", self.server.url, check=2,
                        env={"MLFLOW_TRACKING_TOKEN": "t0ken\r\nX-Injected: 1"})
        self.assertIn("$MLFLOW_TRACKING_TOKEN: error: holds a control character", r.stderr)
        self.assertNotIn("t0ken", r.stderr)
        # Not MLflow's API there (a path under the server that is not it).
        r = self.export("--tracking-uri", self.server.url + "/not-mlflow", check=4)
        self.assertIn("MLflow refused experiments/get-by-name: 404", r.stderr)
        # A deleted experiment is not written into.
        self.export("--tracking-uri", self.server.url, "--experiment", "gone")
        experiment = self.server.rest("experiments/search", {"max_results": 100,
                                                             "filter": "name = 'gone'"})
        self.server.rest("experiments/delete",
                         {"experiment_id": experiment["experiments"][0]["experiment_id"]})
        r = self.export("--tracking-uri", self.server.url, "--experiment", "gone", check=3)
        self.assertIn("is a deleted experiment", r.stderr)
        self.assertIn("mlflow experiments restore", r.stderr)
        # Options that do not go together.
        r = self.export("--offline", "x.jsonl", "--tracking-uri", self.server.url, check=2)
        self.assertIn("--tracking-uri", r.stderr)
        r = history("export", "mlflow", "--sync", "x.jsonl", "--sweep", "alpha",
                    "--tracking-uri", self.server.url, check=2)
        self.assertIn("--sweep: error: does not apply to --sync", r.stderr)
        r = history("export", "bmf", "--store", self.store, "--tracking-uri", "http://x",
                    check=2)
        self.assertIn("applies to export mlflow", r.stderr)


if __name__ == "__main__":
    unittest.main()
