"""A private PostgreSQL server on loopback, for tests, benchmarks and the all-in-one role's embedded default."""

from __future__ import annotations

import atexit
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

SERVICE_USER = "postgres"
_PORT_ATTEMPTS = 3


class LocalServerError(RuntimeError):
    """A local server could not be found, started or stopped; the message says what and shows its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def running_as_root() -> bool:
    return os.geteuid() == 0


def process_alive(pid: int) -> bool:
    if not Path("/proc/self/stat").exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}  # a zombie has exited; only its parent has not reaped it yet


def log_tail(path: Path, lines: int = 30, start: int = 0) -> str:
    try:
        with path.open("rb") as log:
            log.seek(start)
            text = log.read().decode(errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or f"(log {path} is empty)"


def private_dir(base_dir: Path | None, prefix: str) -> tuple[Path, bool]:
    """The server's directory (made by make_dir on start) and whether it is ours to remove on stop."""
    if base_dir is not None:
        return Path(base_dir).absolute(), False
    # Under the temp dir, not pytest's tmp_path: the service user must be able to reach it.
    return Path(tempfile.gettempdir()) / f"{prefix}{secrets.token_hex(6)}", True


def make_dir(path: Path, owned: bool) -> None:
    # A directory of our own must be new (like mkdtemp), so nobody else can have planted files in it.
    path.mkdir(mode=0o700, parents=not owned, exist_ok=not owned)


def hand_to_service_user(*paths: Path) -> None:
    """As root the servers run as the service user, so everything they write must be theirs."""
    if not running_as_root():
        return
    try:
        user = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise LocalServerError(f"running as root needs the system user {SERVICE_USER!r} to run the servers") from None
    for path in paths:
        os.chown(path, user.pw_uid, user.pw_gid)


def run(argv: Sequence[str | Path], what: str, cwd: Path, log: Path | None = None, log_start: int = 0) -> None:
    result = subprocess.run([str(arg) for arg in argv], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        details = (result.stdout + result.stderr).strip() or "(no output)"
        tail = f"\n--- tail of {log} ---\n{log_tail(log, start=log_start)}" if log else ""
        raise LocalServerError(f"{what} failed (exit {result.returncode}): {details}{tail}")


def pg_bindir() -> Path:
    """PostgreSQL's programs: VIDEOCOPIES_PG_BINDIR, else `pg_config --bindir`."""
    override = os.environ.get("VIDEOCOPIES_PG_BINDIR")
    if override:
        if not (Path(override) / "pg_ctl").exists():
            raise LocalServerError(f"VIDEOCOPIES_PG_BINDIR={override} has no pg_ctl")
        return Path(override)
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        raise LocalServerError(
            "PostgreSQL not found: neither VIDEOCOPIES_PG_BINDIR is set nor pg_config is on PATH "
            "(install PostgreSQL, e.g. apt-get install postgresql, or point VIDEOCOPIES_PG_BINDIR at its bin dir)"
        )
    bindir = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip())
    if not (bindir / "initdb").exists():
        raise LocalServerError(f"{pg_config} --bindir says {bindir}, which has no initdb: install the server package")
    return bindir


def as_service_user(argv: Sequence[str | Path]) -> list[str | Path]:
    """initdb and postgres refuse to run as root, so root drops to the service user."""
    if not running_as_root():
        return list(argv)
    runuser = shutil.which("runuser")
    if runuser is None:
        raise LocalServerError("running as root needs runuser (util-linux) to start PostgreSQL as the postgres user")
    return [runuser, "-u", SERVICE_USER, "--", *argv]


class LocalPostgres:
    """One private PostgreSQL server: its own directory, port and Unix socket dir, trust auth on 127.0.0.1."""

    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        *,
        durable: bool = False,
        max_connections: int = 300,
        extra_settings: Mapping[str, str] | None = None,
    ) -> None:
        self.base_dir, self._owns_dir = private_dir(base_dir, "videocopies-pg-")
        self._auto_port = port is None
        self.port = port if port is not None else free_port()
        self.durable = durable
        self.max_connections = max_connections
        self.extra_settings = dict(extra_settings or {})
        self._started = False

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base_dir / "socket"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "postgres.log"

    @property
    def pid(self) -> int | None:
        """The postmaster's pid while a server runs on this data dir."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None
        return pid if process_alive(pid) else None

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/{quote(dbname, safe='')}"

    def settings(self) -> dict[str, str]:
        off = "on" if self.durable else "off"
        return {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "fsync": off,
            "synchronous_commit": off,
            "full_page_writes": off,
            "shared_preload_libraries": "pg_stat_statements",
            "max_connections": str(self.max_connections),
            "log_min_messages": "warning",
            **self.extra_settings,
        }

    def start(self) -> LocalPostgres:
        if self._started:
            return self
        bindir = pg_bindir()
        make_dir(self.base_dir, self._owns_dir)
        atexit.register(self.stop)
        try:
            self.socket_dir.mkdir(exist_ok=True)
            hand_to_service_user(self.base_dir, self.socket_dir)
            if not (self.data_dir / "PG_VERSION").exists():
                self._initdb(bindir)
            elif self.pid is not None:
                # A run that crashed left its server behind on this directory; it holds the data dir's lock.
                self._pg_ctl(bindir, "stop", "-m", "fast")
            for attempt in range(1, _PORT_ATTEMPTS + 1):
                log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
                self._write_settings()
                try:
                    self._pg_ctl(bindir, "start", "-l", self.log_path, log_start=log_start)
                    break
                except LocalServerError:
                    # free_port() cannot reserve the port, so another process may have taken it meanwhile.
                    if not (self._auto_port and attempt < _PORT_ATTEMPTS and self._bind_failed(log_start)):
                        raise
                    self.port = free_port()
        except BaseException:
            self.stop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """Stop the server (fast mode) and remove the directory if we made it; safe to call again."""
        atexit.unregister(self.stop)
        self._started = False
        if self.pid is not None:
            bindir = pg_bindir()
            try:
                self._pg_ctl(bindir, "stop", "-m", "fast")
            except LocalServerError:
                if self.pid is not None:
                    self._pg_ctl(bindir, "stop", "-m", "immediate")
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

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

    def _bind_failed(self, log_start: int) -> bool:
        return "could not bind" in log_tail(self.log_path, lines=1000, start=log_start)


def statements_run(url: str) -> int:
    """How many statements the database at `url` has run (pg_stat_statements, loaded by
    LocalPostgres), less the ones that read this figure: for measuring what idleness costs."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        (calls,) = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = current_database() AND s.query NOT ILIKE '%pg_stat_statements%'"
        ).fetchone()  # type: ignore[misc]
    return int(calls)
