"""The HTML reports in a real browser: bench-report of a real sweep and bench-history report of a
real store, each page loaded from the file system by headless Chromium (Debian's chromium, from
scripts/install-deps), which runs the page's script and prints the DOM it ends with; the test reads
that DOM (rows, figures drawn, points in them, the sort asked for in the address), the browser's
console (nothing logged: no error, and no script or handler refused by the page's
Content-Security-Policy), and keeps a screenshot of each page under the build's
test-artifacts/report/.

Hostile text (markup, a script, an event handler, a closing </svg>) in config values, labels and
the environment reaches the pages as text: it is in the cells, and nothing of it runs.
"""
import glob
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support"))
from e2e import BIN, bench_sweep  # noqa: E402

BENCH_REPORT = os.path.join(BIN, "bench-report")
BENCH_HISTORY = os.path.join(BIN, "bench-history")
ARTIFACTS = os.environ.get("SWEEPBENCH_TEST_ARTIFACTS",
                           os.path.join(os.path.dirname(BIN), "test-artifacts", "report"))
HOSTILE = ["<script>document.title='pwned'</script>",
           '"><img src=x onerror="document.documentElement.dataset.pwned=1">',
           "</svg></table><svg onload=\"document.documentElement.dataset.pwned=2\">"]


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise AssertionError("no chromium on PATH: scripts/install-deps installs Debian's")
    return path


def browser(*args, timeout=120):
    # --no-sandbox: CI runs as root, where Chromium's sandbox will not start. The page is ours,
    # opened from a file, with a policy that lets nothing but its own script run.
    r = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                        "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *args],
                       capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise AssertionError(f"chromium {' '.join(args)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return r


def console(stderr):
    """What the page said to the console, or the browser about the page (a refused script)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class Dom(html.parser.HTMLParser):
    """The parts of the DOM the tests read."""

    def __init__(self, text):
        super().__init__()
        self.root = {}
        self.tags = {}
        self.tables = {}  # id -> {"columns": [...], "rows": [[cell text]]}
        self.marks = []   # classes of <g class="mark ...">
        self.title = ""
        self.cells = []   # every cell's text
        self._table = self._row = self._cell = None
        self._in_title = False
        self._in_svg = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "circle" and a.get("fill") == "#fff":
            self.hollow = getattr(self, "hollow", 0) + 1
        if tag == "html":
            self.root = a
        elif tag == "title" and not self._in_svg:
            self._in_title = True
        elif tag == "svg":
            self._in_svg += 1
        elif tag == "table" and a.get("id"):
            self._table = self.tables.setdefault(a["id"], {"columns": [], "rows": []})
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""
        elif tag == "g" and (a.get("class") or "").startswith("mark"):
            self.marks.append(a["class"])

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        elif tag == "svg":
            self._in_svg -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell)
            self.cells.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is None:
            self._row = None
        elif tag == "tr" and self._row is not None:
            if self._row and not self._table["columns"]:
                self._table["columns"] = self._row
            else:
                self._table["rows"].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._cell is not None:
            self._cell += data

    def column(self, table, name):
        t = self.tables[table]
        i = t["columns"].index(name)
        return [row[i] for row in t["rows"]]


class ReportCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-report-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        os.makedirs(ARTIFACTS, exist_ok=True)

    def load(self, page, address_suffix=""):
        """The page's DOM after its script ran, and its console lines."""
        r = browser("--dump-dom", "file://" + page + address_suffix)
        return Dom(r.stdout), console(r.stderr)

    def screenshot(self, page, name):
        shot = os.path.join(ARTIFACTS, name)
        if os.path.exists(shot):
            os.unlink(shot)
        browser("--window-size=1300,2400", "--screenshot=" + shot, "file://" + page)
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(shot), 20000)  # a drawn page, not a blank one

    def assert_clean(self, dom, lines):
        self.assertEqual(lines, [])  # no console error, nothing refused by the policy
        self.assertNotIn("data-error", dom.root)
        self.assertNotIn("data-pwned", dom.root)
        self.assertEqual(dom.root.get("data-ready"), str(dom.tags.get("svg", 0)))
        self.assertNotIn("img", dom.tags)
        self.assertEqual(dom.tags.get("script"), 1)


class Browser(ReportCase):
    def test_a_sweep_report_draws_its_figures_and_sorts_its_table_in_chromium(self):
        # Eight command points: two axes (a size and a name, the names hostile), two metrics
        # with units (a rate, more is better, and a latency, less is better) for the Pareto
        # figure, both from what the command printed.
        script = ('echo "rate $(( {params.i} * 100 + {params.k} ))"; '
                  'echo "latency $(( 1000 / {params.i} + {params.k} ))"')
        sweep = os.path.join(self.tmp, "hostile.yaml")
        with open(sweep, "w") as f:
            f.write("name: hostile\nbase:\n  benchmark: command\n  command:\n"
                    f"    argv: [bash, -c, {json.dumps(script)}]\n"
                    "    metrics:\n"
                    "      - {name: rate, unit: tokens/s, regex: 'rate ([0-9]+)'}\n"
                    "      - {name: latency, unit: ms, regex: 'latency ([0-9]+)'}\n"
                    "axes:\n  params.i: [1, 2, 4, 8]\n  params.k: [0, 1]\n"
                    f"  params.name: {json.dumps(HOSTILE[:1])}\n")
        out = os.path.join(self.tmp, "runs")
        bench_sweep("run", sweep, "-o", out, check=0)
        page = os.path.join(self.tmp, "report.html")
        r = subprocess.run([BENCH_REPORT, "-i", out, "-o", page, "--title", HOSTILE[1]],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("8 points", r.stderr)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("http://", text.replace('xmlns="http://www.w3.org/2000/svg"', ""))
        self.assertNotIn("https://", text)  # nothing fetched: the page stands alone

        dom, lines = self.load(page)
        self.assert_clean(dom, lines)
        self.assertEqual(dom.title, HOSTILE[1])  # the title, as text
        points = dom.tables["points"]
        self.assertEqual(len(points["rows"]), 8)
        self.assertEqual(sorted(map(int, dom.column("points", "i"))), [1, 1, 2, 2, 4, 4, 8, 8])
        rates = [int(v) for v in dom.column("points", "rate (tokens/s)")]
        self.assertEqual(sorted(rates), [100, 101, 200, 201, 400, 401, 800, 801])
        # rate and latency each against i and k, and the Pareto front of the two.
        self.assertGreaterEqual(dom.tags["svg"], 5)
        self.assertGreaterEqual(dom.tags["circle"], 5 * 4)
        self.assertIn(HOSTILE[0], dom.cells)  # the configuration every point shares
        # The Pareto front of rate (more is better, tokens/s) against latency (less, ms): the
        # two points at i=8 (rate 800 and 801 at latency 125 and 126) and no other.
        self.assertEqual(dom.hollow, 6)

        # The address sorts: by rate, the largest first; then by latency, the smallest first.
        dom, lines = self.load(page, "#sort=points:rate%20(tokens%2Fs):desc")
        self.assert_clean(dom, lines)
        self.assertEqual([int(v) for v in dom.column("points", "rate (tokens/s)")],
                         [801, 800, 401, 400, 201, 200, 101, 100])
        dom, _ = self.load(page, "#sort=points:latency%20(ms)")
        latencies = [int(v) for v in dom.column("points", "latency (ms)")]
        self.assertEqual(latencies, sorted(latencies))
        self.screenshot(page, "sweep.png")

        # Refused: no results, an existing page without -f, a metric no point has.
        r = subprocess.run([BENCH_REPORT, "-i", out, "-o", page], capture_output=True, text=True)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("add -f", r.stderr)
        r = subprocess.run([BENCH_REPORT, "-i", out, "-o", page, "-f", "--metric", "rat"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("did you mean rate?", r.stderr)
        r = subprocess.run([BENCH_REPORT, "-i", self.tmp + "/nothing", "-o", page + "2"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(page + "2"))

    def test_a_history_report_marks_the_regression_and_the_environment_change(self):
        # Point i=1 sleeps as a file says, i=2 always 30 ms, each printing the time it took: six
        # sweeps at 30 ms, then four at 90 ms in what the points' summary.json records as
        # another container image. The image is a stand-in: these points ran on this host with
        # no container, and the test writes the image into summary.json's environment as a
        # containerized run records it (the container tests check that record); the slowdown
        # is real.
        delay = os.path.join(self.tmp, "delay")
        script = (f'if [ {{params.i}} = 1 ]; then d=$(cat {delay}); else d=0.03; fi; '
                  's=$(date +%s%N); sleep $d; e=$(date +%s%N); echo "value $(( (e - s) / 1000000 ))"')
        sweep = os.path.join(self.tmp, "slow.yaml")
        with open(sweep, "w") as f:
            f.write("name: slow\nbase:\n  benchmark: command\n  command:\n"
                    f"    argv: [bash, -c, {json.dumps(script)}]\n"
                    "    metrics:\n      - {name: value, unit: ms, regex: 'value ([0-9]+)'}\n"
                    "axes:\n  params.i: [1, 2]\n")
        store = os.path.join(self.tmp, "history.sqlite")
        for run, seconds in enumerate(["0.03"] * 6 + ["0.09"] * 4):
            with open(delay, "w") as f:
                f.write(seconds)
            out = os.path.join(self.tmp, f"run{run}")
            bench_sweep("run", sweep, "-o", out, check=0)
            image = "/images/ngc-24.02.sif" if seconds == "0.03" else "/images/ngc-24.10.sif"
            for summary in glob.glob(os.path.join(out, "*", "summary.json")):
                with open(summary) as f:
                    s = json.load(f)
                s.setdefault("environment", {})["container_image"] = image
                with open(summary, "w") as f:
                    json.dump(s, f)
            label = "note=" + HOSTILE[2] if run == 9 else "note=plain"
            r = subprocess.run([BENCH_HISTORY, "ingest", out, "--store", store, "--label", label],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
        page = os.path.join(self.tmp, "history.html")
        r = subprocess.run([BENCH_HISTORY, "report", "--store", store, "--sweep", "slow", "-o",
                            page],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("20 runs", r.stderr)

        dom, lines = self.load(page)
        self.assert_clean(dom, lines)
        changes = dom.tables["changes-table"]
        # The latest change of i=1 (the check may also find a smaller one among the runs before:
        # the times are whole ms, and a busy machine moves them).
        slow = [row for row in changes["rows"] if row[changes["columns"].index("tag")]
                .startswith("i=1") and row[changes["columns"].index("latest")] == "yes"]
        self.assertEqual(len(slow), 1, changes)
        row = dict(zip(changes["columns"], slow[0]))
        self.assertEqual(row["verdict"], "worse")
        self.assertTrue(row["change"].startswith("+"), row)
        self.assertIn("container_image /images/ngc-24.02.sif -> /images/ngc-24.10.sif",
                      row["environment change"])
        # Two series (i=1 and i=2), each a figure: i=1's with the regression and the image
        # change marked; i=2's with the image change alone.
        self.assertEqual(len(dom.tables["series"]["rows"]), 2)
        self.assertEqual(dom.tags["svg"], 2)
        self.assertEqual(dom.marks.count("mark worse") + dom.marks.count("mark better"),
                         len(changes["rows"]))  # each change found, marked where it is
        self.assertEqual(dom.marks.count("mark env"), 2)
        self.assertGreaterEqual(dom.tags["circle"], 20)
        # The hostile label is in the page as text, inside a point's tip.
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("note=&lt;/svg&gt;&lt;/table&gt;&lt;svg onload=", text)
        self.assertIn("runs --sweep slow ·", text)  # the filters, from the parsed options
        self.screenshot(page, "history.png")

        # Refused before any work: the page exists (-f replaces it), a metric no run has (the
        # nearest named), a store that is not there (and nothing made for it).
        for args, code, said in ((["--store", store], 3, "add -f"),
                                 (["--store", store, "-f", "--metric", "valu"], 2,
                                  "did you mean value?")):
            r = subprocess.run([BENCH_HISTORY, "report", *args, "-o", page], capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(r.returncode, code, r.stderr)
            self.assertIn(said, r.stderr)
        home = os.path.join(self.tmp, "home")
        env = {k: v for k, v in os.environ.items()
               if k not in ("SWEEPBENCH_HISTORY", "XDG_DATA_HOME")}
        r = subprocess.run([BENCH_HISTORY, "report", "-o", os.path.join(self.tmp, "none.html")],
                           capture_output=True, text=True, timeout=120, env={**env, "HOME": home})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertFalse(os.path.exists(home))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "none.html")))


if __name__ == "__main__":
    unittest.main()
