"""A real PostgreSQL server (Debian's postgresql) on loopback for the history store's tests.

    with LocalPostgres() as pg:
        pg.url   # postgresql://postgres@127.0.0.1:PORT/history

PostgreSQL refuses to run as root: as root (CI) the server runs as the `postgres` user the
package made, in a directory of its own handed to that user; as anyone else, as that user.
Trust authentication, listening on 127.0.0.1 only, a port that was free; stopped and removed on
exit.
"""
import glob
import os
import shutil
import socket
import subprocess
import tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalPostgres:
    def __init__(self, database="history"):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise RuntimeError("no PostgreSQL server: install Debian's postgresql "
                               "(scripts/install-deps)")
        self.bin = os.path.dirname(found[-1])
        self.database = database
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv, check=True):
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        return subprocess.run(prefix + list(argv), capture_output=True, text=True, check=check,
                              timeout=120, stdin=subprocess.DEVNULL)

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="sweepbench-pg-")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self.data = os.path.join(self.dir, "data")
        try:
            self._run(os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres",
                      "--auth=trust", "--no-sync")
            self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-w", "-t", "60",
                      "-l", os.path.join(self.dir, "server.log"), "-o",
                      f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off",
                      "start")
            self._run(os.path.join(self.bin, "createdb"), "-h", "127.0.0.1", "-p",
                      str(self.port), "-U", "postgres", self.database)
        except subprocess.CalledProcessError as e:
            log = self.log()
            self.__exit__(None, None, None)
            raise RuntimeError(f"PostgreSQL did not start: {e.stderr}\n{log}") from e
        return self

    def create_database(self, name):
        """Another database on the server: its URL."""
        self._run(os.path.join(self.bin, "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def sql(self, database, text):
        """Runs SQL in `database` with psql, stopping at the first error: its output."""
        return self._run(os.path.join(self.bin, "psql"), "-h", "127.0.0.1", "-p", str(self.port),
                         "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt",
                         "-c", text).stdout

    def log(self):
        try:
            with open(os.path.join(self.dir, "server.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def __exit__(self, *exc):
        self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop",
                  check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
