"""Podman for the tests: Debian's podman with runc, as root, with storage and configuration of its
own under a temporary directory (reached through CONTAINERS_STORAGE_CONF and CONTAINERS_CONF,
so the host's /etc/containers and /var/lib/containers are never touched).

The configuration keeps podman from what this machine cannot give it: runc (crun fails on hybrid
cgroups here), cgroupfs (no systemd), events to a file, no network namespace by default (podman
must never create its bridge: the container layer always passes --network=host), and ulimits
within the machine's hard limits. `with LocalPodman() as podman:` removes its storage (and the
cgroup directories podman leaves) afterwards, also when the body fails. It installs nothing:
scripts/install-deps does.

    with LocalPodman() as podman:
        image = podman.import_directory("/path/to/rootfs", "localhost/sweepbench-cpu:test")
        subprocess.run([...], env=dict(os.environ, **podman.env))
"""
import glob
import os
import shutil
import subprocess
import tempfile


class LocalPodman:
    def __enter__(self):
        if shutil.which("podman") is None or shutil.which("runc") is None:
            raise RuntimeError("LocalPodman needs podman and runc: run scripts/install-deps")
        self.dir = tempfile.mkdtemp(prefix="sbpodman-", dir="/tmp")
        for sub in ("graph", "run", "tmp"):
            os.makedirs(os.path.join(self.dir, sub))
        storage = os.path.join(self.dir, "storage.conf")
        with open(storage, "w") as f:
            f.write(f"""\
[storage]
driver = "overlay"
graphroot = "{self.dir}/graph"
runroot = "{self.dir}/run"
""")
        conf = os.path.join(self.dir, "containers.conf")
        with open(conf, "w") as f:
            f.write(f"""\
[containers]
netns = "none"
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{self.dir}/events.log"
tmp_dir = "{self.dir}/tmp"
""")
        self.env = {"CONTAINERS_STORAGE_CONF": storage, "CONTAINERS_CONF": conf}
        return self

    def run(self, *args, **kw):
        env = dict(os.environ, **self.env)
        r = subprocess.run(["podman", *args], env=env, capture_output=True, text=True,
                           timeout=kw.pop("timeout", 600), **kw)
        if r.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
        return r

    def import_directory(self, directory, name):
        """Imports a root file system directory (a Charliecloud image) as image `name`."""
        tar = subprocess.Popen(["tar", "-C", directory, "-c", "."], stdout=subprocess.PIPE)
        try:
            self.run("import", "-", name, stdin=tar.stdout)
        finally:
            tar.stdout.close()
            tar.wait()
        return name

    def __exit__(self, *exc):
        try:
            subprocess.run(["podman", "rm", "--all", "--force"], env=dict(os.environ, **self.env),
                           capture_output=True, timeout=120)
            subprocess.run(["podman", "rmi", "--all", "--force"], env=dict(os.environ, **self.env),
                           capture_output=True, timeout=300)
        finally:
            # Overlay mounts podman may still hold, then the directory itself.
            for mount in sorted(glob.glob(os.path.join(self.dir, "graph", "overlay", "*", "merged")),
                                reverse=True):
                subprocess.run(["umount", "-l", mount], capture_output=True)
            shutil.rmtree(self.dir, ignore_errors=True)
            # The cgroups podman made for its containers (cgroupfs manager), empty once they end.
            for cg in sorted(glob.glob("/sys/fs/cgroup/**/libpod_parent*", recursive=True),
                             key=len, reverse=True):
                for sub, dirs, _ in os.walk(cg, topdown=False):
                    for d in dirs:
                        try:
                            os.rmdir(os.path.join(sub, d))
                        except OSError:
                            pass
                try:
                    os.rmdir(cg)
                except OSError:
                    pass
        return False
