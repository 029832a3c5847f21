#!/usr/bin/python3
"""The commands of docs/first-steps.md and docs/tour.md, run as written (issue 55): a stale
command, an option that no longer exists or a file a page names that is not there fails here.

Every ```sh block of the two pages runs whole, in page order, with `bash -e -o pipefail`, from a
scratch directory that looks like the repository root to the commands (sweeps/, scripts/,
build/release/bin, ... as links; runs/ its own), so that they write nothing into the checkout.
Two things are not as written, and each says why:
  - `scripts/quickstart` runs from the repository itself (it configures and builds there: a link to
    the build tree from elsewhere would rewrite its CMake cache), with its two results directories
    pointed into the scratch directory (SWEEPBENCH_QUICKSTART_OUT and _INFER_OUT);
  - `<tag>` in `runs/NAME/<tag>` is the first ok point of runs/NAME, as the page tells its reader
    to pick one.
The commands that cannot run here are NOT_RUN below, each with the test that runs it instead; one
that no longer appears in a page fails the test, so the list cannot go stale.

Run by ctest (docs_commands_Commands):
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/layout/test_docs_commands.py
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.abspath(os.environ.get("SWEEPBENCH_BIN_DIR", os.path.join(SOURCE, "build", "release",
                                                                        "bin")))
PAGES = ["docs/first-steps.md", "docs/tour.md"]  # first-steps runs the quickstart the tour reads

# A command (a line's start) not run here: why, and which test runs it.
NOT_RUN = {
    "sbatch slurm/sweep.sh sweeps/gpt2-scaling.yaml runs/s":
        "needs a SLURM cluster: slurm_AllocationMode runs slurm/sweep.sh under sbatch on one",
    "build/release/bin/bench-sweep submit sweeps/gpt2-scaling.yaml":
        "needs sbatch: slurm_ArrayMode and slurm_Submit submit job arrays to a real cluster",
    "build/release/bin/bench-sweep run sweeps/pytorch-vs-bench-train.yaml":
        "about two minutes of training: bench_command_Twin runs this sweep file",
    "build/release/bin/bench-extract -i runs/twin":
        "reads the run above: bench_command_Twin reads it alike",
}
# What the checkout holds that the commands name, linked from the scratch directory.
LINKED = ["sweeps", "scripts", "slurm", "bench", "containers", "tests", "docs", ".venv"]


def sh_blocks(page):
    """Each ```sh block of a page: (its first line's number, its text)."""
    blocks, block, start = [], None, 0
    with open(os.path.join(SOURCE, page)) as f:
        for number, line in enumerate(f, 1):
            if block is None and line.strip() == "```sh":
                block, start = [], number + 1
            elif block is not None and line.strip() == "```":
                blocks.append((start, "".join(block)))
                block = None
            elif block is not None:
                block.append(line)
    return blocks


def logical_lines(text):
    """The block's commands, continuation lines joined: (index of the first physical line, text)."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        first, joined = i, lines[i]
        while joined.endswith("\\") and i + 1 < len(lines):
            i += 1
            joined = joined[:-1] + " " + lines[i].strip()
        out.append((first, i, joined))
        i += 1
    return out


class Commands(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="docs-commands-")
        self.root = self.tmp.name
        for name in LINKED:
            if os.path.exists(os.path.join(SOURCE, name)):
                os.symlink(os.path.join(SOURCE, name), os.path.join(self.root, name))
        os.makedirs(os.path.join(self.root, "build", "release"))
        os.symlink(BIN, os.path.join(self.root, "build", "release", "bin"))
        os.makedirs(os.path.join(self.root, "runs"))
        self.env = dict(os.environ)
        if os.geteuid() == 0:  # Open MPI refuses root unless told (CI runs as root)
            self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        self.env.update(SWEEPBENCH_QUICKSTART_OUT=os.path.join(self.root, "runs", "quickstart"),
                        SWEEPBENCH_QUICKSTART_INFER_OUT=os.path.join(self.root, "runs",
                                                                     "infer-quick"))

    def tearDown(self):
        self.tmp.cleanup()

    def a_tag(self, name):
        """The first ok point of runs/NAME, in plan order."""
        out = os.path.join(self.root, "runs", name)
        with open(os.path.join(out, "manifest.json")) as f:
            for p in json.load(f)["points"]:
                status = os.path.join(out, p["tag"], "status.json")
                if os.path.exists(status):
                    with open(status) as s:
                        if json.load(s)["status"] == "ok":
                            return p["tag"]
        self.fail(f"runs/{name} has no ok point for <tag>")

    def script_of(self, page, start, text, not_run_seen):
        """The block as bash runs it: NOT_RUN lines left out, scripts/quickstart from the
        checkout, <tag> a real point."""
        kept = []
        lines = text.split("\n")
        for first, last, joined in logical_lines(text):
            command = joined.strip()
            skip = next((c for c in NOT_RUN if command.startswith(c)), None)
            if skip:
                not_run_seen.add(skip)
                print(f"# {page}:{start + first}: not run here ({NOT_RUN[skip]}): {command}")
                continue
            if command.split("#")[0].strip() == "scripts/quickstart":
                kept.append(os.path.join(SOURCE, "scripts", "quickstart"))
                continue
            kept.extend(lines[first:last + 1])
        script = "\n".join(kept)
        return re.sub(r"runs/([\w.-]+)/<tag>", lambda m: f"runs/{m.group(1)}/{self.a_tag(m.group(1))}",
                      script)

    def run_block(self, page, start, script):
        print(f"# {page}:{start}:\n{script}", flush=True)
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=self.root,
                           env=self.env, capture_output=True, text=True, timeout=900)
        self.assertEqual(r.returncode, 0,
                         f"{page}:{start}: the block exits {r.returncode}:\n{script}\n"
                         f"--- stdout (end)\n{r.stdout[-4000:]}\n--- stderr (end)\n"
                         f"{r.stderr[-4000:]}")
        return r

    def test_every_command_of_the_pages_runs_as_written(self):
        not_run_seen = set()
        outputs = {}
        for page in PAGES:
            blocks = sh_blocks(page)
            self.assertTrue(blocks, f"{page} has no sh block")
            for start, text in blocks:
                script = self.script_of(page, start, text, not_run_seen)
                outputs[(page, start)] = self.run_block(page, start, script)
        # Every command left out still stands in a page: the list does not outlive the docs.
        self.assertEqual(sorted(not_run_seen), sorted(NOT_RUN))

        # What the pages say of the output holds. The quickstart's table fits a terminal of 120
        # columns: the keys that vary, then tokens/s and the mean step.
        quickstart = outputs[("docs/first-steps.md", sh_blocks("docs/first-steps.md")[0][0])].stdout
        table = [line for line in quickstart.splitlines()
                 if line.startswith("#index  micro_batch")]
        self.assertTrue(table, quickstart[-3000:])
        header = table[0].lstrip("#").split()
        self.assertEqual(header[:7], ["index", "micro_batch", "seq_len", "tokens/s", "step",
                                      "mean", "(ms)"])
        rows = quickstart.split(table[0], 1)[1].splitlines()[1:5]
        self.assertLessEqual(max(len(line) for line in [table[0]] + rows), 120, quickstart)
        # The A/B gate failed or was inconclusive, and said why on stderr. Which of the two
        # depends on the machine's load: the kernel switched off costs a third of the step on a
        # quiet machine, but CI's second test beside this one once hid it (ok, then inconclusive
        # for the points only in the baseline, exit 9).
        ab = next(r for (page, _), r in outputs.items()
                  if page == "docs/first-steps.md" and "--fail-on" in r.args[-1])
        self.assertRegex(ab.stdout, r"exit [89]\n")
        self.assertRegex(ab.stderr, r"bench-compare: (FAIL: --fail-on train_tokens_per_second:5%|"
                                    r"INCONCLUSIVE: --fail-on: a point only in the baseline)")
        # The failed point's reason is gzip's error, not its pointer to --help.
        failed = next(r for (page, _), r in outputs.items()
                      if page == "docs/first-steps.md" and "runs/levels" in r.args[-1])
        self.assertIn("exit 1\n", failed.stdout)
        self.assertRegex(failed.stdout, r"1\s+failed\s+the program ended with exit code 1: gzip: "
                                        r"invalid option")
        for figure in ("quickstart.png", "slide.svg", "quickstart.html", "command-quick.png"):
            self.assertGreater(os.path.getsize(os.path.join(self.root, "runs", figure)), 1000)


if __name__ == "__main__":
    unittest.main()
