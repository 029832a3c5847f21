"""The venv scripts (scripts/*-venv) on a disk too small for them and when pip stops half-way.

CI's disk once held too little for the venvs: pip stopped with 'No space left on device' in three
scripts at once, each leaving a half-made venv that took the space the next one needed. Now a
script checks the disk before pip starts and removes a venv it made but did not finish; and once
its last test has run, a venv is removed when the disk is short (tests/support/release-venv).
Real scripts, real pip; the small disk is a real 64 MiB tmpfs (mounting it needs root, as CI is).
"""
import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def script(name, env, timeout=300):
    return subprocess.run([os.path.join(SOURCE, "scripts", name)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout, stdin=subprocess.DEVNULL)


class DiskCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="venv-scripts-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def small_disk(self):
        mount = os.path.join(self.tmp, "small")
        os.mkdir(mount)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mount], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", mount])
        return mount

    def test_too_little_space_stops_before_pip_and_says_what_to_do(self):
        small = self.small_disk()
        for name, variable, size in (("peer-venv", "SWEEPBENCH_PEER_VENV", 6),
                                     ("torch-venv", "SWEEPBENCH_VENV", 2),
                                     ("vllm-venv", "SWEEPBENCH_VLLM_VENV", 7),
                                     ("fairseq2-venv", "SWEEPBENCH_FAIRSEQ2_VENV", 8),
                                     ("mlflow-venv", "SWEEPBENCH_MLFLOW_VENV", 1)):
            venv = os.path.join(small, name)
            r = script(name, {variable: venv}, timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(f"{name}: 0 GB free on the disk of {venv}, and the venv takes {size} GB",
                          r.stderr)
            self.assertIn(f"make it on a larger disk with {variable}=DIR", r.stderr)
            self.assertFalse(os.path.exists(venv), name)
            self.assertEqual(r.stdout, "")

    def test_a_venv_pip_could_not_finish_is_removed_and_a_directory_that_was_there_is_kept(self):
        # pip with no index to reach (a closed port on loopback) stops as it would on a lost
        # connection or a full disk: after the venv is made, before it is whole.
        offline = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0",
                   "PIP_TIMEOUT": "2"}
        venv = os.path.join(self.tmp, "new")
        r = script("torch-venv", {"SWEEPBENCH_VENV": venv, **offline})
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"venv: removed the unfinished {venv}", r.stderr)
        self.assertFalse(os.path.exists(venv))
        self.assertEqual(r.stdout, "")

        kept = os.path.join(self.tmp, "kept")
        os.mkdir(kept)
        with open(os.path.join(kept, "mine.txt"), "w") as f:
            f.write("the user's\n")
        r = script("torch-venv", {"SWEEPBENCH_VENV": kept, **offline})
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("removed", r.stderr)
        with open(os.path.join(kept, "mine.txt")) as f:
            self.assertEqual(f.read(), "the user's\n")
        self.assertFalse(os.path.exists(os.path.join(kept, ".sweepbench-torch")))

    def test_a_venv_is_released_after_its_tests_only_when_the_disk_is_short(self):
        # tests/support/release-venv, the venv fixtures' cleanup: on the 64 MiB disk (0 GB free)
        # a venv our script finished goes; with room (a threshold of 0 GB) it stays; a venv of
        # the user's own (no stamp of ours) stays whatever the disk.
        small = self.small_disk()

        def venv(name, stamp=True):
            d = os.path.join(small, name)
            os.makedirs(os.path.join(d, "bin"))
            with open(os.path.join(d, "pyvenv.cfg"), "w") as f:
                f.write("home = /usr/bin\n")
            if stamp:
                with open(os.path.join(d, ".sweepbench-pins"), "w") as f:
                    f.write("torch==2.15.0\n")
            return d

        def release(d, **env):
            # The default threshold unless the test sets one, whatever the caller's environment.
            base = {k: v for k, v in os.environ.items() if k != "SWEEPBENCH_KEEP_FREE_GB"}
            return subprocess.run(
                [os.path.join(SOURCE, "tests", "support", "release-venv"), "SOME_VENV",
                 "build/none"], capture_output=True, text=True, timeout=60,
                env={**base, "SOME_VENV": d, **env})

        ours, users = venv("ours"), venv("users", stamp=False)
        r = release(ours, SWEEPBENCH_KEEP_FREE_GB="0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"0 GB free (>= 0): {ours} kept for the next run", r.stdout)
        self.assertTrue(os.path.isdir(ours))
        r = release(users)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{users} is not a venv our scripts made: left as it is", r.stdout)
        self.assertTrue(os.path.isdir(users))
        r = release(ours)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"0 GB free (< 40): removed {ours}", r.stdout)
        self.assertFalse(os.path.exists(ours))
        r = release(users, SWEEPBENCH_KEEP_FREE_GB="forty")
        self.assertEqual(r.returncode, 2)
        self.assertIn("SWEEPBENCH_KEEP_FREE_GB must be a whole number of GB", r.stderr)


if __name__ == "__main__":
    unittest.main()
