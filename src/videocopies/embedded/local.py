"""What every local server here is built on: a private directory, a free port on loopback, the
service user when running as root, and `LocalServer`, the lifecycle PostgreSQL and PgBouncer
share (started once, on another port if the chosen one was taken meanwhile, stopped at exit)."""

from __future__ import annotations

import atexit
import grp
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Self
from urllib.parse import quote

SERVICE_USER = "postgres"  # the servers' superuser role, and under root the system user they run as by default
_PORT_ATTEMPTS = 3  # free_port() cannot reserve a port: another process may take it first
_USERADD_ATTEMPTS = 5


class LocalServerError(RuntimeError):
    """A local server could not be found, started or stopped; the message says what and shows its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def system_program(program: str, variable: str, product: str) -> str:
    """A server program from the system's packages: the file `variable` names, else `program`
    on PATH, else Debian's /usr/sbin/`program`; refused with how to get it."""
    override = os.environ.get(variable)
    if override:
        if not Path(override).exists():
            raise LocalServerError(f"{variable}={override} does not exist")
        return override
    debian = Path("/usr/sbin") / program
    found = shutil.which(program) or (str(debian) if debian.exists() else None)
    if found is None:
        raise LocalServerError(
            f"{product} not found: set {variable}, put {program} on PATH or apt-get install {program}"
        )
    return found


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


def service_account() -> pwd.struct_passwd:
    """The system user the servers run as when we are root (initdb and postgres refuse root):
    VIDEOCOPIES_PG_USER, else `postgres`, which Debian's PostgreSQL and PgBouncer packages make.
    A machine with neither gets it here, as a system user with no home and no login."""
    name = os.environ.get("VIDEOCOPIES_PG_USER") or SERVICE_USER
    said = ""
    for attempt in range(_USERADD_ATTEMPTS + 1):
        try:
            return pwd.getpwnam(name)  # there already, or made by us or another process meanwhile
        except KeyError:
            if attempt == _USERADD_ATTEMPTS:
                break
        time.sleep(0.2 * attempt)  # useradd gives up at once when another holds /etc/passwd's lock
        said = _add_system_user(name)
    raise LocalServerError(f"running as root needs the system user {name!r}; useradd failed: {said}")


def _add_system_user(name: str) -> str:
    """What useradd said."""
    try:
        group = ["--gid", grp.getgrnam(name).gr_name]  # useradd will not make a group that exists
    except KeyError:
        group = ["--user-group"]
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"  # root's PATH may lack sbin
    argv = [useradd, "--system", *group, "--no-create-home", "--home-dir", "/nonexistent",
            "--shell", "/usr/sbin/nologin", "--comment", "videocopies' local servers", name]
    try:
        made = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        return str(e)
    return (made.stdout + made.stderr).strip()


def hand_to_service_user(*paths: Path) -> None:
    """As root the servers run as the service user, so everything they write must be theirs."""
    if not running_as_root():
        return
    user = service_account()
    for path in paths:
        os.chown(path, user.pw_uid, user.pw_gid)


def run(argv: Sequence[str | Path], what: str, cwd: Path, log: Path | None = None, log_start: int = 0) -> None:
    result = subprocess.run([str(arg) for arg in argv], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        details = (result.stdout + result.stderr).strip() or "(no output)"
        tail = f"\n--- tail of {log} ---\n{log_tail(log, start=log_start)}" if log else ""
        raise LocalServerError(f"{what} failed (exit {result.returncode}): {details}{tail}")


class LocalServer:
    """A server of ours speaking PostgreSQL's protocol on 127.0.0.1. Its directory is removed on
    stop when it was made here; a port chosen here is chosen again when another process took it
    before the server bound it. Subclasses say how the server is found, launched and halted."""

    def __init__(self, base_dir: Path | None, port: int | None, prefix: str) -> None:
        self.base_dir, self._owns_dir = private_dir(base_dir, prefix)
        self._auto_port = port is None
        self.port = port if port is not None else free_port()
        self._started = False

    @property
    def log_path(self) -> Path:
        raise NotImplementedError

    @property
    def pid_path(self) -> Path:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs."""
        pid = self._pid_written()
        return pid if pid is not None and process_alive(pid) else None

    def _pid_written(self) -> int | None:
        """The first line of the pid file, if there is one."""
        try:
            return int(self.pid_path.read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/{quote(dbname, safe='')}"

    def start(self) -> Self:
        if self._started:
            return self
        self._find_programs()
        make_dir(self.base_dir, self._owns_dir)
        atexit.register(self.stop)
        try:
            self._prepare()
            for attempt in range(1, _PORT_ATTEMPTS + 1):
                log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
                try:
                    self._launch(log_start)
                    break
                except LocalServerError:
                    if not (self._auto_port and attempt < _PORT_ATTEMPTS and self._bind_failed(log_start)):
                        raise
                    self._launch_failed()
                    self.port = free_port()
        except BaseException:
            self.stop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """Halt the server and remove the directory if it was made here; safe to call again."""
        atexit.unregister(self.stop)
        self._started = False
        self._halt()
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _find_programs(self) -> None:
        """Raise LocalServerError, before anything is made, when the server is not installed."""

    def _prepare(self) -> None:
        """Make the directory ready for a first launch (a crashed run may have left a server on it)."""

    def _launch(self, log_start: int) -> None:
        """Start the server on `self.port` and return once it serves, or raise LocalServerError."""
        raise NotImplementedError

    def _bind_failed(self, log_start: int) -> bool:
        raise NotImplementedError

    def _launch_failed(self) -> None:
        """Clean up after a launch that failed, before the next one on another port."""

    def _halt(self) -> None:
        raise NotImplementedError
