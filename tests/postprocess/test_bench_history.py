"""bench-history end to end: real sweeps of real command points (bench-sweep run), ingested into a
real SQLite store, read back with bench-history and with Python's sqlite3.

Ingest: each finished attempt once (a second ingest, a copy of the tree, a rerun's earlier
attempt), the series equal to bench-extract's figures. Killed: an ingest killed while it writes
loses and duplicates nothing. BadInput: what the store and the options refuse, and hostile text
stored as text.
"""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from e2e import BIN, bench_sweep, command_sweep  # noqa: E402
from postgres_server import LocalPostgres  # noqa: E402

BENCH_HISTORY = os.path.join(BIN, "bench-history")
BENCH_EXTRACT = os.path.join(BIN, "bench-extract")


def history(*args, check=0, env=None, timeout=300):
    r = subprocess.run([BENCH_HISTORY, *args], capture_output=True, text=True, timeout=timeout,
                       env=env, stdin=subprocess.DEVNULL)
    if check is not None and r.returncode != check:
        raise AssertionError(f"bench-history {' '.join(args)}: exit {r.returncode}, wanted "
                             f"{check}\n{r.stdout}\n{r.stderr}")
    return r


def json_rows(text):
    return json.loads(text) if text.strip() else []


class HistoryCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-history-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.store = os.path.join(self.tmp, "history.sqlite")

    def sweep(self, name, script, values, check=0, extra=()):
        path = command_sweep(self.tmp, name, script, values)
        out = os.path.join(self.tmp, name)
        bench_sweep("run", path, "-o", out, *extra, check=check)
        return path, out

    def count(self, sql):
        with sqlite3.connect(self.store) as db:
            return db.execute(sql).fetchone()[0]


class Ingest(HistoryCase):
    def test_each_attempt_is_stored_once_and_reads_back_as_bench_extract_reads_it(self):
        # A point fails once (its flag file), then a rerun with --retry-failed makes it ok: two
        # attempts, the first kept in attempts/1/.
        flag = os.path.join(self.tmp, "fail-once")
        open(flag, "w").close()
        script = (f'if [ "$0" = 2 ] && [ -e {flag} ]; then echo broken; exit 3; fi; '
                  'echo "value $((10 * $0))"')
        sweep, out = self.sweep("hist", script.replace("$0", "{params.i}"), [1, 2, 3], check=1)
        r = history("ingest", out, "--store", self.store, "--label", "commit=aaa111")
        self.assertIn("3 new run(s) stored", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 3)
        self.assertEqual(self.count("SELECT count(*) FROM runs WHERE status = 'failed'"), 1)

        os.unlink(flag)
        bench_sweep("run", sweep, "-o", out, "--retry-failed", check=0)
        self.assertTrue(os.path.isdir(os.path.join(out, [t for t in os.listdir(out)
                                                         if t.startswith("i=2")][0], "attempts", "1")))
        r = history("ingest", out, "--store", self.store, "--label", "commit=bbb222")
        self.assertIn("1 new run(s) stored", r.stderr)
        self.assertIn("3 already there", r.stderr)
        # Ingesting again, or a copy of the tree elsewhere, adds nothing: the key is the attempt's.
        copy = os.path.join(self.tmp, "copy")
        shutil.copytree(out, copy, symlinks=True)
        for tree in (out, copy):
            r = history("ingest", tree, "--store", self.store)
            self.assertIn("0 new run(s) stored", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 4)
        self.assertEqual(self.count("SELECT count(*) FROM metrics WHERE name = 'value'"), 3)

        runs = json_rows(history("runs", "--store", self.store, "--format", "json").stdout)
        self.assertEqual([(r["status"], r["attempt"]) for r in runs if r["tag"].startswith("i=2")],
                         [("failed", 1), ("ok", 2)])
        self.assertEqual(sorted(r["labels"] for r in runs),
                         ["commit=aaa111"] * 3 + ["commit=bbb222"])
        # The series is what bench-extract reads from the tree, value for value.
        extract = subprocess.run([BENCH_EXTRACT, "-i", out, "--format", "json"],
                                 capture_output=True, text=True, check=True)
        by_tag = {row["tag"]: row["value"] for row in json.loads(extract.stdout)}
        series = json_rows(history("series", "value", "--store", self.store,
                                   "--format", "json").stdout)
        self.assertEqual(len(series), 3)
        for row in series:
            self.assertEqual(row["value"], by_tag[row["tag"]])
            self.assertEqual(row["status"], "ok")
        # Filters: a key of the config, a label, a time range, the newest run.
        one = json_rows(history("series", "value", "--store", self.store, "--key", "params.i=3",
                                "--format", "json").stdout)
        self.assertEqual([r["value"] for r in one], [30])
        labelled = json_rows(history("runs", "--store", self.store, "--label", "commit=bbb222",
                                     "--format", "json").stdout)
        self.assertEqual([r["tag"][:3] for r in labelled], ["i=2"])
        self.assertEqual(json_rows(history("runs", "--store", self.store, "--until", "2000-01-01",
                                           "--format", "json").stdout), [])
        newest = json_rows(history("runs", "--store", self.store, "--last", "1",
                                   "--format", "json").stdout)
        self.assertEqual(newest[0]["attempt"], 2)
        # Bencher's format: the newest ok run of each point, its metrics as measures.
        bmf = json.loads(history("export", "bmf", "--store", self.store).stdout)
        self.assertEqual(sorted(bmf), sorted(f"hist/{t}" for t in by_tag))
        for name, measures in bmf.items():
            self.assertEqual(measures["value"], {"value": by_tag[name.split("/", 1)[1]]})
        r = history("export", "html", "--store", self.store, check=2)
        self.assertIn("'html' is not a format it writes", r.stderr)
        # The environment each run ran in, and one id for runs in the same one.
        with sqlite3.connect(self.store) as db:
            fields = dict(db.execute("SELECT field, value FROM environments LIMIT 20").fetchall())
            ids = {row[0] for row in db.execute("SELECT environment_id FROM runs WHERE status = 'ok'")}
        self.assertEqual(fields["host"], os.uname().nodename)
        self.assertIn("sweepbench_version", fields)
        self.assertEqual(len(ids), 1)

    def test_bench_sweep_run_history_stores_the_sweep_as_it_ends(self):
        path = command_sweep(self.tmp, "hooked", 'echo "value {params.i}"', [1, 2])
        out = os.path.join(self.tmp, "hooked")
        r = bench_sweep("run", path, "-o", out, "--history", self.store, "--history-label",
                        "commit=c0ffee", check=0)
        self.assertIn("2 new run(s) stored", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM run_labels WHERE value = 'c0ffee'"), 2)
        # Run again: every point is kept, nothing is stored twice.
        r = bench_sweep("run", path, "-o", out, "--history", self.store, check=0)
        self.assertIn("0 new run(s) stored", r.stderr)
        # A store that cannot be written warns and names the command; the run's exit is its own.
        not_a_store = os.path.join(self.tmp, "notes.txt")
        with open(not_a_store, "w") as f:
            f.write("notes\n" * 500)
        r = bench_sweep("run", path, "-o", out, "--history", not_a_store, check=0)
        self.assertIn("bench-sweep: warning: --history: bench-history ended with exit code 4", r.stderr)
        self.assertIn(f"bench-history ingest {out} --store {not_a_store}", r.stderr)
        r = bench_sweep("run", path, "-o", out, "--history-label", "commit=x", check=2)
        self.assertIn("--history-label: error: labels runs in a history store", r.stderr)

    def test_an_unfinished_point_waits_for_a_later_ingest(self):
        _, out = self.sweep("later", 'echo "value {params.i}"', [1, 2])
        point = sorted(t for t in os.listdir(out) if t.startswith("i=2"))[0]
        status = os.path.join(out, point, "status.json")
        with open(status) as f:
            finished = f.read()
        record = json.loads(finished)
        record["status"] = "running"
        with open(status, "w") as f:
            json.dump(record, f)
        r = history("ingest", out, "--store", self.store)
        self.assertIn("1 new run(s) stored", r.stderr)
        self.assertIn("1 point(s) not finished yet", r.stderr)
        with open(status, "w") as f:
            f.write(finished)
        r = history("ingest", out, "--store", self.store)
        self.assertIn("1 new run(s) stored", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 2)


class Check(HistoryCase):
    def test_a_command_that_got_slower_is_named_with_its_size_and_the_change_beside_it(self):
        # Point i=1 sleeps as long as a file says, i=2 always 50 ms; each prints the time it took
        # (a real measured time, in ms). Eight sweeps at 50 ms labelled commit=a, then five at
        # 100 ms labelled commit=b: i=1 got twice as slow at a known run (so much that a busy
        # machine's outliers cannot hide it).
        delay = os.path.join(self.tmp, "delay")
        script = (f'if [ {{params.i}} = 1 ]; then d=$(cat {delay}); else d=0.05; fi; '
                  's=$(date +%s%N); sleep $d; e=$(date +%s%N); echo "value $(( (e - s) / 1000000 ))"')
        path = os.path.join(self.tmp, "slow.yaml")
        with open(path, "w") as f:
            f.write("name: slow\nbase:\n  benchmark: command\n  command:\n"
                    f"    argv: [bash, -c, {json.dumps(script)}]\n"
                    "    metrics:\n      - {name: value, unit: ms, regex: 'value ([0-9]+)'}\n"
                    "axes:\n  params.i: [1, 2]\n")
        for run, (seconds, commit) in enumerate([("0.05", "a")] * 8 + [("0.1", "b")] * 5):
            with open(delay, "w") as f:
                f.write(seconds)
            bench_sweep("run", path, "-o", os.path.join(self.tmp, f"run{run}"), "--history",
                        self.store, "--history-label", f"commit={commit}", check=0)
        r = history("check", "--store", self.store, "--fail-on", "value:20%", "--format", "json",
                    check=8)
        changes = json_rows(r.stdout)
        slow = [c for c in changes if c["tag"].startswith("i=1")]
        self.assertEqual(len(slow), 1, r.stdout + r.stderr)
        c = slow[0]
        self.assertEqual((c["metric"], c["verdict"], c["latest"]), ("value", "worse", True))
        self.assertEqual((c["runs_before"], c["runs_after"]), (8, 5))
        self.assertGreater(c["change"], 0.6)  # 50 -> 100 ms, sleep's and date's own time aside
        self.assertLess(c["change_low"], c["change"])
        self.assertGreater(c["change_high"], c["change"])
        self.assertGreater(c["change_low"], 0.3)
        self.assertEqual(c["labels_change"], "commit a -> b")
        self.assertIsNone(c["environment_change"])  # the same host, software and image
        runs = json_rows(history("runs", "--store", self.store, "--format", "json").stdout)
        first_slow = sorted(r["started"] for r in runs if r["labels"] == "commit=b")[0]
        self.assertEqual(c["since"], first_slow)
        self.assertIn("value +", c["what"])
        self.assertIn("when the labels changed: commit a -> b", c["what"])
        self.assertIn("bench-history check: worse: value +", r.stderr)
        # i=2 did not change beyond noise.
        self.assertFalse([c for c in changes if c["tag"].startswith("i=2") and abs(c["change"]) > 0.2],
                         r.stdout)
        # The gate is the size asked for: 150% is more than this change.
        history("check", "--store", self.store, "--fail-on", "value:150%", check=0)
        for args, message in ((["--fail-on", "valeu:5%"], "no stored run asked for has this metric"),
                              (["--fail-on", "value"], "is not METRIC:PCT"),
                              (["--fdr", "2"], "--fdr: error: must be between 0 and 1")):
            r = history("check", "--store", self.store, *args, check=2)
            self.assertIn(message, r.stderr)


class Postgres(HistoryCase):
    """The same store on a real PostgreSQL server (Debian's, on loopback, started here)."""

    @classmethod
    def setUpClass(cls):
        cls.server = LocalPostgres().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_a_server_store_holds_what_the_sqlite_file_holds(self):
        _, out = self.sweep("pg", 'echo "value {params.i}"; echo "x $(( {params.i} * 7 ))"',
                            [1, 2, 3])
        url = self.server.url
        r = history("ingest", out, "--store", url, "--label", "note=it's $(id)")
        self.assertIn("3 new run(s) stored in postgresql://postgres@127.0.0.1:", r.stderr)
        r = history("ingest", out, "--store", url)
        self.assertIn("0 new run(s) stored", r.stderr)
        history("ingest", out, "--store", self.store, "--label", "note=it's $(id)")
        for args in (["runs"], ["series", "value"], ["runs", "--key", "params.i=2"],
                     ["series", "value", "--label", "note=it's $(id)", "--last", "2"]):
            on_server = json_rows(history(*args, "--store", url, "--format", "json").stdout)
            in_file = json_rows(history(*args, "--store", self.store, "--format", "json").stdout)
            self.assertEqual(on_server, in_file, args)
            self.assertTrue(on_server, args)
        # Three ingests at once of new trees: each run once (the writers take turns).
        trees = [self.sweep(f"pg{k}", 'echo "value {params.i}"', [1, 2])[1] for k in range(3)]
        ps = [subprocess.Popen([BENCH_HISTORY, "ingest", *trees, "--store", url],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
              for _ in range(3)]
        for p in ps:
            _, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        runs = json_rows(history("runs", "--store", url, "--format", "json").stdout)
        self.assertEqual(len(runs), 3 + 6)
        self.assertEqual(len({r["run_key"] for r in runs}), 9)

    def test_a_schema_two_store_on_the_server_is_migrated_with_its_metrics(self):
        # A store as a bench-history of schema 2 left it: metrics keyed by run key.
        _, out = self.sweep("pgold", 'echo "value {params.i}"', [1, 2, 3])
        url = self.server.create_database("old")
        history("ingest", out, "--store", url)
        before = json_rows(history("series", "value", "--store", url, "--format", "json").stdout)
        stored = self.server.sql("old", "SELECT count(*) FROM metrics").strip()
        self.assertGreaterEqual(int(stored), 3)
        self.server.sql("old", (
            "BEGIN; CREATE TABLE metrics_by_key (run_key TEXT NOT NULL REFERENCES runs (run_key) "
            "ON DELETE CASCADE, name TEXT NOT NULL, value DOUBLE PRECISION, ci_low DOUBLE "
            "PRECISION, ci_high DOUBLE PRECISION, unit TEXT NOT NULL, PRIMARY KEY (run_key, "
            "name)); INSERT INTO metrics_by_key SELECT r.run_key, m.name, m.value, m.ci_low, "
            "m.ci_high, m.unit FROM metrics m JOIN runs r ON r.seq = m.run_seq; DROP TABLE "
            "metrics; ALTER TABLE metrics_by_key RENAME TO metrics; DROP INDEX runs_by_seq; "
            "CREATE INDEX runs_by_seq ON runs (seq); UPDATE history_schema SET version = 2; "
            "COMMIT;"))
        self.assertEqual(self.server.sql("old", "SELECT count(*) FROM metrics WHERE run_key "
                                                "IS NOT NULL").strip(), stored)
        after = json_rows(history("series", "value", "--store", url, "--format", "json").stdout)
        self.assertEqual(after, before)
        self.assertEqual([r["value"] for r in after], [1, 2, 3])
        self.assertEqual(self.server.sql("old", "SELECT count(*) FROM metrics").strip(), stored)
        self.assertEqual(self.server.sql("old", "SELECT version FROM history_schema").strip(),
                         "3")

    def test_a_server_that_cannot_be_reached_is_named_without_its_password(self):
        _, out = self.sweep("pgbad", 'echo "value {params.i}"', [1, 2])
        port = self.server.port + 1 if self.server.port < 65535 else 1
        r = history("ingest", out, "--store", f"postgresql://me:s3cret@127.0.0.1:{port}/x",
                    check=4)
        self.assertIn("cannot connect to the history store", r.stderr)
        self.assertIn("postgresql://me:***@127.0.0.1", r.stderr)
        self.assertNotIn("s3cret", r.stderr)
        r = history("runs", "--store", self.server.url.rsplit("/", 1)[0] + "/nosuchdb", check=4)
        self.assertIn("nosuchdb", r.stderr)


class Killed(HistoryCase):
    def test_an_ingest_killed_while_it_writes_loses_and_duplicates_nothing(self):
        # 2,000 finished attempts: one real point's directory, copied with a status.json each of
        # its own (another start time), as a sweep of that size would leave them.
        _, out = self.sweep("big", 'echo "value {params.i}"', [7, 8])
        point = sorted(t for t in os.listdir(out) if t.startswith("i=7"))[0]
        tree = os.path.join(self.tmp, "tree")
        os.mkdir(tree)
        n = 2000
        for i in range(n):
            dst = os.path.join(tree, f"p{i:05d}")
            shutil.copytree(os.path.join(out, point), dst)
            with open(os.path.join(dst, "status.json")) as f:
                record = json.load(f)
            record["started"] = f"2026-11-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
            with open(os.path.join(dst, "status.json"), "w") as f:
                json.dump(record, f)
        kills = 0
        for _ in range(3):
            # 100 runs a transaction (2,000 by default): a kill between two of them.
            p = subprocess.Popen([BENCH_HISTORY, "ingest", tree, "--store", self.store,
                                  "--batch", "100"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # Kill it once it has stored some runs and not all.
            deadline = time.time() + 120
            while p.poll() is None and time.time() < deadline:
                try:
                    stored = self.count("SELECT count(*) FROM runs")
                except sqlite3.OperationalError:  # the schema is being made
                    stored = 0
                if 0 < stored < n:
                    p.send_signal(signal.SIGKILL)
                    kills += 1
                    break
                time.sleep(0.05)
            p.wait()
        self.assertGreater(kills, 0, "no ingest was caught writing: the tree is too small")
        r = history("ingest", tree, "--store", self.store)
        self.assertIn(" already there", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM runs"), n)
        # Every run whole: each with all of the point's metrics.
        self.assertEqual(self.count("SELECT count(*) FROM metrics WHERE name = 'value'"), n)
        per_run = self.count("SELECT count(*) FROM metrics") / n
        self.assertEqual(self.count("SELECT count(*) FROM (SELECT run_seq, count(*) AS c FROM "
                                    f"metrics GROUP BY run_seq) WHERE c != {per_run}"), 0)
        # Read on several threads, stored in the walk's order: each ingest goes on where the one
        # killed before it stopped.
        with sqlite3.connect(self.store) as db:
            stored = [os.path.basename(row[0]) for row in
                      db.execute("SELECT results_dir FROM runs ORDER BY seq")]
        self.assertEqual(stored, [f"p{i:05d}" for i in range(n)])

    def test_two_ingests_at_once_store_each_run_once(self):
        _, a = self.sweep("left", 'echo "value {params.i}"', [1, 2, 3])
        _, b = self.sweep("right", 'echo "value {params.i}"', [4, 5])
        ps = [subprocess.Popen([BENCH_HISTORY, "ingest", a, b, "--store", self.store],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
              for _ in range(3)]
        for p in ps:
            _, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 5)
        self.assertEqual(self.count("SELECT count(*) FROM metrics WHERE name = 'value'"), 5)


class BadInput(HistoryCase):
    def test_what_is_refused_says_why_and_changes_nothing(self):
        _, out = self.sweep("bad", 'echo "value {params.i}"', [1])
        not_a_store = os.path.join(self.tmp, "notes.txt")
        with open(not_a_store, "w") as f:
            f.write("my notes, not a database\n" * 100)
        r = history("ingest", out, "--store", not_a_store, check=4)
        self.assertIn("notes.txt", r.stderr)
        self.assertIn("--store must name a history store", r.stderr)
        with open(not_a_store) as f:
            self.assertEqual(f.read(), "my notes, not a database\n" * 100)
        for args, code, message in (
                (["ingest", out, "--store", "mysql://db/x"], 2,
                 "'mysql' is not a store this bench-history knows"),
                (["ingest", out, "--store", self.store, "--label", "no-equals"], 2, "has no '='"),
                (["ingest", out, "--store", self.store, "--label", "a b=1"], 2, "is no label name"),
                (["runs", "--store", self.store, "--since", "last week"], 2,
                 "is not a date or a UTC time"),
                (["runs", "--store", self.store, "--config-hash", "xyz"], 2, "is not a config hash"),
                (["series", "--store", self.store], 2, "series needs a metric"),
                (["frobnicate"], 2, "'frobnicate' is not a command")):
            r = history(*args, check=code)
            self.assertIn(message, r.stderr, args)
        self.assertFalse(os.path.exists(self.store))

        # A store from a newer bench-history is refused, not guessed at.
        history("ingest", out, "--store", self.store)
        with sqlite3.connect(self.store) as db:
            db.execute("UPDATE history_schema SET version = 99")
        r = history("runs", "--store", self.store, check=3)
        self.assertIn("was made by a newer bench-history (schema 99", r.stderr)

    def test_what_a_reviewer_broke_stays_fixed(self):
        _, out = self.sweep("fix", 'echo "value {params.i}"', [1, 2])
        two = sorted(t for t in os.listdir(out) if t.startswith("i=2"))[0]
        # A summary.json cut short: its attempt is left out, and stored once it is whole.
        summary = os.path.join(out, two, "summary.json")
        with open(summary) as f:
            whole = f.read()
        with open(summary, "w") as f:
            f.write(whole[:50])
        r = history("ingest", out, "--store", self.store)
        self.assertIn("1 new run(s) stored", r.stderr)
        self.assertIn("its attempt is left out", r.stderr)
        with open(summary, "w") as f:
            f.write(whole)
        r = history("ingest", out, "--store", self.store)
        self.assertIn("1 new run(s) stored", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM metrics WHERE name = 'value'"), 2)
        # Without its manifest (or copied out of its tree) an attempt is still the same one.
        os.rename(os.path.join(out, "manifest.json"), os.path.join(self.tmp, "manifest.bak"))
        r = history("ingest", out, "--store", self.store)
        self.assertIn("0 new run(s) stored", r.stderr)
        # Reading makes no store; -o never replaces the store.
        missing = os.path.join(self.tmp, "typo.sqlite")
        r = history("runs", "--store", missing, check=4)
        self.assertIn("there is no history store here", r.stderr)
        self.assertFalse(os.path.exists(missing))
        r = history("runs", "--store", self.store, "-o", self.store, "-f", "--format", "csv",
                    check=3)
        self.assertIn("is the history store itself", r.stderr)
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 2)
        # bench-sweep --history: a store it cannot know is refused before any point runs, and a
        # password never reaches the messages.
        path = command_sweep(self.tmp, "early", 'echo "value {params.i}"', [1, 2])
        r = bench_sweep("run", path, "-o", os.path.join(self.tmp, "early"), "--history",
                        "bogus://x", check=2)
        self.assertIn("'bogus' is not a store bench-history knows", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "early")))
        r = bench_sweep("run", path, "-o", os.path.join(self.tmp, "pw"), "--history",
                        "postgresql://me:s3cret@127.0.0.1:1/x?password=s3cret", check=0)
        self.assertIn("--history: bench-history ended with exit code 4", r.stderr)
        self.assertIn("postgresql://me:***@127.0.0.1:1/x?password=***", r.stderr)
        self.assertNotIn("s3cret", r.stderr + r.stdout)

    def test_hostile_text_is_stored_and_read_back_as_text(self):
        _, out = self.sweep("hostile", 'echo "value {params.i}"', [1])
        evil = "x'); DROP TABLE runs; --"
        history("ingest", out, "--store", self.store, "--label", f"note={evil}")
        runs = json_rows(history("runs", "--store", self.store, "--label", f"note={evil}",
                                 "--format", "json").stdout)
        self.assertEqual([r["labels"] for r in runs], [f"note={evil}"])
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 1)
        history("runs", "--store", self.store, "--sweep", evil)  # matches nothing, breaks nothing
        self.assertEqual(self.count("SELECT count(*) FROM runs"), 1)
        # The default store lives under XDG_DATA_HOME (or ~/.local/share), made when need be.
        home = os.path.join(self.tmp, "data")
        env = {**os.environ, "XDG_DATA_HOME": home}
        env.pop("SWEEPBENCH_HISTORY", None)
        history("ingest", out, env=env)
        self.assertTrue(os.path.isfile(os.path.join(home, "sweepbench", "history.sqlite")))


if __name__ == "__main__":
    unittest.main()
