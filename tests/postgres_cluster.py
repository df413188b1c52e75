"""A throwaway PostgreSQL cluster for the tests, or the server the environment names.

``TRUEHEART_TEST_POSTGRES_URL`` names a server the tests may use (each test gets a
database of its own, created and dropped there). Without it, :func:`start` runs
``initdb`` and ``pg_ctl`` from the PostgreSQL server binaries (``TRUEHEART_PG_BIN``, else
the newest ``/usr/lib/postgresql/*/bin``, else ``pg_ctl`` on ``PATH``) into a temporary
directory, on a free port of the loopback interface, and :meth:`Cluster.stop` stops it
and removes the directory. The server refuses to run as root, so as root the binaries
run as the ``postgres`` user. When neither is possible, :func:`unavailable` says why.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

URL_VARIABLE = "TRUEHEART_TEST_POSTGRES_URL"


def _binaries() -> Path | None:
    named = os.environ.get("TRUEHEART_PG_BIN")
    if named:
        return Path(named) if (Path(named) / "pg_ctl").exists() else None
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
    )
    for directory in reversed(found):
        if (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


def _runner() -> list[str]:
    """The prefix that runs a server binary as a user the server accepts."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return ["<no postgres user>"]
    return ["runuser", "-u", "postgres", "--"]


def unavailable() -> str | None:
    """Why no PostgreSQL server can be had here, or ``None`` when one can."""
    if os.environ.get(URL_VARIABLE):
        return None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'trueheart-core[postgres]')"
    if _binaries() is None:
        return f"no PostgreSQL server binaries found and {URL_VARIABLE} is not set"
    if _runner() == ["<no postgres user>"]:
        return "running as root and there is no 'postgres' user to run the server as"
    return None


def _pg_ctl(*args: str, check: bool = True) -> None:
    binaries = _binaries()
    assert binaries is not None
    subprocess.run([*_runner(), str(binaries / "pg_ctl"), *args], capture_output=True, check=check)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """A server the tests may use: its base URL, and (for a throwaway cluster) its data
    directory and how to stop it."""

    url: str
    data_directory: Path | None = None
    _home: Path | None = None
    _databases: list[str] = field(default_factory=list)

    def database_url(self, name: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))

    def create_database(self) -> str:
        """A new, empty database on this server; its URL."""
        import psycopg

        name = "th_" + uuid.uuid4().hex[:20]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self._databases.append(name)
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        with contextlib.suppress(ValueError):
            self._databases.remove(name)

    def stop(self) -> None:
        if self._home is None:
            for name in list(self._databases):
                with contextlib.suppress(Exception):
                    self.drop_database(self.database_url(name))
            return
        assert self.data_directory is not None
        _pg_ctl("stop", "-D", str(self.data_directory), "-m", "immediate", "-w", check=False)
        shutil.rmtree(self._home, ignore_errors=True)
        self._home = None

    def kill_server(self) -> None:
        """Stop the server at once, as a crash would (no shutdown checkpoint)."""
        assert self.data_directory is not None
        _pg_ctl("stop", "-D", str(self.data_directory), "-m", "immediate", "-w")

    def start_server(self) -> None:
        """Start the server of this throwaway cluster again (after :meth:`kill_server`)."""
        assert self.data_directory is not None and self._home is not None
        log = str(self._home / "server.log")
        _pg_ctl("start", "-D", str(self.data_directory), "-l", log, "-w", "-t", "60")

    def start_standby(self, settings: str = "") -> Cluster:
        """A hot standby of this throwaway cluster, streaming from it (``pg_basebackup``),
        with ``settings`` added to its configuration; stop it with its :meth:`stop`."""
        binaries = _binaries()
        assert binaries is not None and self.data_directory is not None
        home = Path(tempfile.mkdtemp(prefix="trueheart-pg-standby-"))
        runner = _runner()
        if runner:
            record = pwd.getpwnam("postgres")
            os.chown(home, record.pw_uid, record.pw_gid)
        os.chmod(home, 0o700)
        data = home / "data"
        primary_port = urlsplit(self.url).port
        try:
            subprocess.run(
                [
                    *runner,
                    str(binaries / "pg_basebackup"),
                    "-D",
                    str(data),
                    "-R",
                    "-X",
                    "stream",
                    "-c",
                    "fast",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(primary_port),
                    "-U",
                    "postgres",
                ],
                capture_output=True,
                check=True,
            )
            port = _free_port()
            with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(f"port = {port}\nunix_socket_directories = '{home}'\n{settings}\n")
            standby = Cluster(
                f"postgresql://postgres@127.0.0.1:{port}/postgres", data_directory=data, _home=home
            )
            standby.start_server()
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            raise
        return standby


def start(*, durable: bool = False) -> Cluster:
    """The environment's server, or a new throwaway cluster (see the module docstring).

    A throwaway cluster skips flushes to disk (``fsync``, ``synchronous_commit`` and
    ``full_page_writes`` off), which suits tests; ``durable=True`` keeps the server's
    defaults (every commit flushed), for measurements that must count the flush."""
    named = os.environ.get(URL_VARIABLE)
    if named:
        return Cluster(named)
    binaries = _binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries")
    home = Path(tempfile.mkdtemp(prefix="trueheart-pg-"))
    data = home / "data"
    runner = _runner()
    if runner:
        record = pwd.getpwnam("postgres")
        os.chown(home, record.pw_uid, record.pw_gid)
    os.chmod(home, 0o700)
    port = _free_port()
    initdb = [*runner, str(binaries / "initdb"), "-D", str(data), "-U", "postgres"]
    subprocess.run(
        [*initdb, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
        capture_output=True,
        check=True,
    )
    settings = (
        f"port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{home}'\n"
        "max_connections = 200\nshared_buffers = 128MB\n"
    )
    if not durable:
        settings += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
    with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write(settings)
    cluster = Cluster(
        f"postgresql://postgres@127.0.0.1:{port}/postgres", data_directory=data, _home=home
    )
    try:
        cluster.start_server()
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    return cluster
