"""Start roles as processes of their own: core serving its API, workers talking to it.
Tests, benchmarks and operators' tools use these to run the real thing, not a stand-in."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from videocopies.adapters.postgres.nodes import PostgresNodeRegistry
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.nodes import IssueNodeToken, RevokeNode
from videocopies.embedded.postgres import free_port
from videocopies.telegram_limits import limits_env


class RoleFailed(Exception):
    """A role did not start or stop cleanly (its log went to stderr)."""


async def issue_token_async(url: str, name: str, role: str = "worker", revoke_first: bool = False) -> str:
    """A token for the node `name`; `revoke_first`: the one from a previous run is revoked."""
    pool = make_pool(url, max_size=1)
    await pool.open(wait=True)
    try:
        registry = PostgresNodeRegistry(pool)
        if revoke_first:
            await RevokeNode(registry, SystemClock())(name)
        issued = await IssueNodeToken(registry, SystemClock(), secrets.token_hex)(name, role)
        return issued.token
    finally:
        await pool.close()


def issue_token(url: str, name: str, role: str = "worker", revoke_first: bool = False) -> str:
    return asyncio.run(issue_token_async(url, name, role, revoke_first))


def stop_process(
    process: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 30.0
) -> tuple[int, bytes]:
    """Signal a role to stop, wait for it (killing it after `timeout`); its exit code and stderr."""
    if process.poll() is None:
        process.send_signal(sig)
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    return process.returncode, err or b""


class CoreProcess:
    """`videocopies core` on a free port; `restart` keeps the port, as a deploy would."""

    def __init__(
        self, database_url: str, listen_url: str | None = None, quote_secret: str | None = None,
        log_path: Path | None = None, **env: str,
    ) -> None:
        self.database_url = database_url
        self.log_path = log_path  # stderr appended there (a long run), instead of kept until stop
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._env = {
            **os.environ, "VIDEOCOPIES_QUOTE_SECRET": quote_secret or secrets.token_urlsafe(32),
            "VIDEOCOPIES_DATABASE_URL": database_url, "VIDEOCOPIES_CORE_PORT": str(self.port), **env,
        }
        if listen_url:
            self._env["VIDEOCOPIES_LISTEN_URL"] = listen_url
        self.process: subprocess.Popen[bytes] | None = None
        self.log = b""

    def start(self, timeout: float = 30.0) -> CoreProcess:
        with contextlib.ExitStack() as files:
            stderr = files.enter_context(self.log_path.open("ab")) if self.log_path else subprocess.PIPE
            self.process = subprocess.Popen(
                [sys.executable, "-m", "videocopies.cli", "core"], env=self._env,
                stdout=stderr if self.log_path else subprocess.DEVNULL, stderr=stderr,
            )
        deadline = time.monotonic() + timeout
        # One client for the whole wait: a new one per try builds a TLS context (~25 ms of CPU)
        # every 50 ms, which slowed the very start it waits for.
        with httpx.Client(timeout=1.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    assert self.process.stderr is not None or self.log_path is not None
                    said = (
                        self.log_path.read_text() if self.log_path
                        else self.process.stderr.read().decode()  # type: ignore[union-attr]
                    )
                    raise AssertionError(f"core exited: {said[-3000:]}")
                try:
                    if client.get(f"{self.url}/_info").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        raise AssertionError("core did not start")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        code, err = stop_process(self.process, sig)
        self.log += err
        return code

    def restart(self, **env: str) -> None:
        """Stop and start again on the same port, with `env` changed (a new secret, say)."""
        self.stop()
        self._env.update(env)
        self.start()

    def __enter__(self) -> CoreProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.stop()


def worker_process(
    core_url: str, token: str, work_dir: Path, store_dir: Path | None = None, **env: str
) -> subprocess.Popen[bytes]:
    """A worker with no database in its environment: only core's URL and its token."""
    environment = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("VIDEOCOPIES_", "PG")) and "DATABASE" not in key
    }
    return _node("worker", environment, core_url, token, work_dir, store_dir, env)


def edge_process(
    core_url: str, token: str, bot_token: str, telegram_url: str, work_dir: Path,
    store_dir: Path | None = None, local_api: bool = False, **env: str,
) -> subprocess.Popen[bytes]:
    """An edge with no database in its environment: core's URL, its token, and the bot's."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("VIDEOCOPIES_")}
    bot = {"VIDEOCOPIES_BOT_TOKEN": bot_token, "VIDEOCOPIES_TELEGRAM_URL": telegram_url,
           "VIDEOCOPIES_TELEGRAM_LOCAL": "1" if local_api else "0"}
    return _node("edge", environment, core_url, token, work_dir, store_dir, {**bot, **env})


def _node(
    role: str, environment: dict[str, str], core_url: str, token: str, work_dir: Path, store_dir: Path | None,
    env: dict[str, str],
) -> subprocess.Popen[bytes]:
    """`role` started with `environment` and what every node is given: the media limits edge,
    core and the workers share, core's URL, its token, its scratch, the shared store; `env` last."""
    environment.update(limits_env(os.environ))
    environment.update(
        {"VIDEOCOPIES_CORE_URL": core_url, "VIDEOCOPIES_NODE_TOKEN": token, "VIDEOCOPIES_WORK_DIR": str(work_dir)}
    )
    if store_dir is not None:
        environment["VIDEOCOPIES_STORE_DIR"] = str(store_dir)
    environment.update(env)
    return subprocess.Popen([sys.executable, "-m", "videocopies.cli", role], env=environment, stderr=subprocess.PIPE)


def control_process(
    database_url: str, panel_url: str, password: str, home: Path, core_url: str
) -> subprocess.Popen[bytes]:
    port = panel_url.rsplit(":", 1)[1]
    env = {**os.environ, "VIDEOCOPIES_DATABASE_URL": database_url, "VIDEOCOPIES_CONTROL_PASSWORD": password,
           "VIDEOCOPIES_CONTROL_PORT": port, "VIDEOCOPIES_CONTROL_INVENTORY": str(home / "inventory.sqlite3"),
           "VIDEOCOPIES_CORE_URL": core_url}
    return subprocess.Popen([sys.executable, "-m", "videocopies.cli", "control"], env=env, stderr=subprocess.PIPE)


def wait_until_serving(url: str, role: RoleProcess, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if role.process.poll() is not None:
            raise RoleFailed(f"{role.name} exited ({role.process.returncode}):\n" + "\n".join(role.tail))
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code < 500:
                return
        time.sleep(0.2)
    raise RoleFailed(f"{role.name} did not answer on {url} within {timeout:.0f} s")


class RoleProcess:
    """A role started by `launch`, its log drained as it comes so a chatty role never blocks on a full pipe.
    Given how to start it, `restart` starts it again after it died."""

    def __init__(
        self, name: str, process: subprocess.Popen[bytes], start: Callable[[], subprocess.Popen[bytes]] | None = None
    ) -> None:
        self.name = name
        self.process = process
        self.restarts = 0
        self._start = start
        self.tail: collections.deque[str] = collections.deque(maxlen=30)
        self._reader = self._drained()

    def _drained(self) -> threading.Thread:
        reader = threading.Thread(target=self._drain, args=(self.process,), name=f"demo-{self.name}-log", daemon=True)
        reader.start()
        return reader

    def _drain(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            self.tail.append(line.decode(errors="replace").rstrip())

    @property
    def restartable(self) -> bool:
        return self._start is not None

    def restart(self) -> None:
        """Start the role again (it has exited)."""
        assert self._start is not None and self.process.poll() is not None
        self._reader.join(timeout=5)
        self.process = self._start()
        self.restarts += 1
        self._reader = self._drained()

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self) -> int:
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)
        return self.process.returncode
