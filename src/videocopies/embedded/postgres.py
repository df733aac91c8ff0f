"""A private PostgreSQL server on loopback, for tests, benchmarks and the all-in-one role's embedded default."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from videocopies.embedded.local import (
    SERVICE_USER,
    LocalServer,
    LocalServerError,
    free_port,
    hand_to_service_user,
    log_tail,
    make_dir,
    private_dir,
    process_alive,
    run,
    running_as_root,
    service_account,
)
from videocopies.embedded.pg_programs import pg_bindir

# The helpers every local server shares are in `local`; importers have long found them here.
__all__ = [
    "SERVICE_USER", "LocalPostgres", "LocalServerError", "as_service_user", "free_port", "hand_to_service_user",
    "log_tail", "make_dir", "pg_bindir", "private_dir", "process_alive", "run", "running_as_root",
    "statements_by_query", "statements_run",
]


def as_service_user(argv: Sequence[str | Path]) -> list[str | Path]:
    """initdb and postgres refuse to run as root, so root drops to the service user."""
    if not running_as_root():
        return list(argv)
    runuser = shutil.which("runuser")
    if runuser is None:
        raise LocalServerError("running as root needs runuser (util-linux) to start PostgreSQL as the service user")
    return [runuser, "-u", service_account().pw_name, "--", *argv]


# A Unix socket's path may not exceed 107 bytes; a longer one is made in the temporary directory.
_SOCKET_PATH_MAX = 107


class LocalPostgres(LocalServer):
    """One private PostgreSQL server: its own directory, port and Unix socket dir, trust auth.

    Trust is safe only where no other account can connect. The socket (mode 0700, in a directory
    of mode 0700) admits the server's own user and root alone. `tcp` also listens on 127.0.0.1,
    where any local account would get in as superuser (and through `COPY ... PROGRAM`, run
    commands as the server's user): for tests, benchmarks, replicas and PgBouncer, never for the
    roles' own databases (all-in-one's, `copies make`'s, `backup verify`'s scratch), which pass
    `tcp=False` and are reached by `url()` through the socket."""

    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        *,
        durable: bool = False,
        max_connections: int = 300,
        extra_settings: Mapping[str, str] | None = None,
        major: str | None = None,
        tcp: bool = True,
    ) -> None:
        """`major`: the version a new data directory is made with, when installed (an existing
        one always opens with the version that made it)."""
        super().__init__(base_dir, port, "videocopies-pg-")
        self.major = major
        self.tcp = tcp
        self._socket_dir: Path | None = None
        self.durable = durable
        self.max_connections = max_connections
        self.extra_settings = dict(extra_settings or {})
        self._bindir: Path | None = None

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def socket_dir(self) -> Path:
        """`base_dir/socket`, or where that path is too long for a socket, a directory made for
        this server in the temporary directory: a fresh name, mode 0700, removed on stop (a
        name known in advance could be taken first by another account, or be a symlink). The
        same path serves every start of this server, so its URL does not change."""
        if self._socket_dir is None:
            beside = self.base_dir / "socket"
            if len(str(beside / ".s.PGSQL.65535").encode()) <= _SOCKET_PATH_MAX:
                self._socket_dir = beside
            else:
                self._socket_dir = Path(tempfile.mkdtemp(prefix="videocopies-pg-"))
        return self._socket_dir

    def url(self, dbname: str = "postgres") -> str:
        if self.tcp:
            return super().url(dbname)
        where = f"host={quote(str(self.socket_dir))}&port={self.port}"
        return f"postgresql://{SERVICE_USER}@/{quote(dbname, safe='')}?{where}"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "postgres.log"

    @property
    def pid_path(self) -> Path:
        """The postmaster's, while a server runs on this data dir."""
        return self.data_dir / "postmaster.pid"

    def settings(self) -> dict[str, str]:
        off = "on" if self.durable else "off"
        return {
            "listen_addresses": "127.0.0.1" if self.tcp else "",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "unix_socket_permissions": "0700",
            "fsync": off,
            "synchronous_commit": off,
            "full_page_writes": off,
            "shared_preload_libraries": "pg_stat_statements",
            "max_connections": str(self.max_connections),
            "log_min_messages": "warning",
            **self.extra_settings,
        }

    def __repr__(self) -> str:
        return f"LocalPostgres(port={self.port}, base_dir={str(self.base_dir)!r}, running={self.pid is not None})"

    def create_database(self, name: str, template: str | None = None) -> None:
        with self._admin() as conn:
            if template is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                return
            # Idle pooled connections (PgBouncer keeps them for minutes) would make the copy fail.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                [template],
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))
            )

    def drop_database(self, name: str) -> None:
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def database_exists(self, name: str) -> bool:
        with self._admin() as conn:
            return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(self.url(), autocommit=True)

    def _initdb(self, bindir: Path) -> None:
        argv = [bindir / "initdb", "-D", self.data_dir, "-A", "trust", "-U", SERVICE_USER]
        argv += ["-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"]
        run(as_service_user(argv), f"initdb of {self.data_dir}", cwd=self.base_dir)
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\ninclude 'videocopies.conf'\n")

    def _write_settings(self) -> None:
        conf = self.data_dir / "videocopies.conf"
        lines = [f"{key} = '{value.replace(chr(39), chr(39) * 2)}'" for key, value in self.settings().items()]
        conf.write_text("# Written by videocopies on every start; edits are lost.\n" + "\n".join(lines) + "\n")
        hand_to_service_user(conf)

    def _pg_ctl(self, bindir: Path, action: str, *args: str | Path, log_start: int = 0) -> None:
        argv = [bindir / "pg_ctl", action, "-D", self.data_dir, "-w", "-t", "60", "-s", *args]
        run(as_service_user(argv), f"pg_ctl {action} on port {self.port}", self.base_dir, self.log_path, log_start)

    def _find_programs(self) -> None:
        self._bindir = pg_bindir(self._made_by() or self.major)

    def _made_by(self) -> str | None:
        """The major version that made the data directory, the only one that can open it."""
        try:
            return (self.data_dir / "PG_VERSION").read_text().strip()
        except FileNotFoundError:
            return None

    def _prepare(self) -> None:
        assert self._bindir is not None
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        ours = {os.geteuid(), *([service_account().pw_uid] if running_as_root() else [])}
        found = os.lstat(self.socket_dir)
        if stat.S_ISLNK(found.st_mode) or found.st_uid not in ours:
            raise LocalServerError(f"{self.socket_dir} is a link or another account's: not ours to listen in")
        self.socket_dir.chmod(0o700)  # one made before this mode was set, too
        hand_to_service_user(self.base_dir, self.socket_dir)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb(self._bindir)
        elif self.pid is not None:
            # A run that crashed left its server behind on this directory; it holds the data dir's lock.
            self._pg_ctl(self._bindir, "stop", "-m", "fast")

    def _launch(self, log_start: int) -> None:
        assert self._bindir is not None
        self._write_settings()
        self._pg_ctl(self._bindir, "start", "-l", self.log_path, log_start=log_start)

    def _bind_failed(self, log_start: int) -> bool:
        return "could not bind" in log_tail(self.log_path, lines=1000, start=log_start)

    def stop(self) -> None:
        super().stop()
        made = self._socket_dir
        if made is not None and not made.is_relative_to(self.base_dir):  # made by mkdtemp, ours
            shutil.rmtree(made, ignore_errors=True)  # made again, and checked, by a start

    def _halt(self) -> None:
        """Fast mode, immediate if that fails."""
        if self.pid is None:
            return
        bindir = self._bindir or pg_bindir(self._made_by())
        try:
            self._pg_ctl(bindir, "stop", "-m", "fast")
        except LocalServerError:
            if self.pid is not None:
                self._pg_ctl(bindir, "stop", "-m", "immediate")


def statements_run(url: str) -> int:
    """How many statements the database at `url` has run (pg_stat_statements, loaded by
    LocalPostgres), less the ones that read this figure: for measuring what idleness costs."""
    return sum(statements_by_query(url).values())


def statements_by_query(url: str) -> Counter[str]:
    """`statements_run`, counted per normalised statement: what a figure was spent on."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        rows = conn.execute(
            "SELECT s.query, sum(s.calls) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = current_database() AND s.query NOT ILIKE '%pg_stat_statements%' GROUP BY s.query"
        ).fetchall()
    return Counter({query: int(calls) for query, calls in rows})
