"""`videocopies all-in-one`: every role on this machine, for a first look or a small bot.

It starts the embedded PostgreSQL (its data kept under the data directory), core, edge, two
workers sharing a local object store, the control panel, and the Telegram Bot API simulator unless
VIDEOCOPIES_BOT_TOKEN is set (then edge serves that bot on Telegram, or on
VIDEOCOPIES_TELEGRAM_URL). Each role is a process of its own, as on separate machines.

The embedded database is created on the first run only; later runs upgrade it, and a data
directory whose database went missing is an error, not a fresh start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import httpx

from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.nodes import PostgresNodeRegistry
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.nodes import IssueNodeToken, RevokeNode
from videocopies.embedded.postgres import LocalPostgres, free_port, running_as_root
from videocopies.runtime.launch import CoreProcess, RoleProcess, edge_process, worker_process
from videocopies.testing.telegram_simulator import BotApiSimulator

WORKERS = 2


class RoleFailed(Exception):
    """A role did not stop cleanly (its log went to stderr)."""


@attrs.frozen
class Stack:
    database_url: str
    core_url: str
    store_dir: Path
    simulator: BotApiSimulator | None  # None: a real bot token, real Telegram
    bot_token: str
    panel_url: str
    panel_password_file: Path | None  # None: the password came from VIDEOCOPIES_CONTROL_PASSWORD
    keeper: Keeper | None = None


class Keeper:
    """Starts again a role that died (core included), after a pause that grows while it keeps
    dying: one machine running everything must not go silent because one process fell over."""

    def __init__(
        self, core: CoreProcess, roles: list[RoleProcess], say: Callable[[str], None], every_s: float = 0.5,
        first_pause_s: float = 1.0, longest_pause_s: float = 30.0,
    ) -> None:
        self._core, self._roles, self._say, self._every_s = core, roles, say, every_s
        self._first, self._longest = first_pause_s, longest_pause_s
        self._pause: dict[str, float] = {}
        self._due: dict[str, float] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="all-in-one-keeper", daemon=True)
        self.restarts: dict[str, int] = {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)

    def _watch(self) -> None:
        while not self._stopping.wait(self._every_s):
            if self._core.process is not None and self._core.process.poll() is not None:
                self._again("core", self._core.process.returncode, self._core.start)
            for role in self._roles:
                if role.restartable and role.process.poll() is not None:
                    self._again(role.name, role.process.returncode, role.restart, role.tail)

    def _again(self, name: str, code: int | None, start: Callable[[], object], tail: object = ()) -> None:
        now = time.monotonic()
        if name not in self._due:
            pause = self._pause.get(name, self._first / 2) * 2
            self._pause[name] = min(self._longest, pause)
            self._due[name] = now + self._pause[name]
            last = list(tail)[-1:] if tail else []  # type: ignore[call-overload]
            self._say(f"{name} exited with {code}; starting it again in {self._pause[name]:.0f} s {last}")
            return
        if now < self._due[name] or self._stopping.is_set():
            return
        del self._due[name]
        try:
            start()
        except Exception as error:  # noqa: BLE001 - tried again after a longer pause
            self._say(f"{name} did not start again: {error}")
            return
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self._say(f"{name} started again (restart {self.restarts[name]})")


def kept_secret(data: Path, env: dict[str, str], variable: str, file: str) -> tuple[str, Path | None]:
    """The environment's value, or one made on the first run and kept in the data directory
    (quotes and the panel's password outlive restarts); and the file it is in, if any."""
    if secret := env.get(variable):
        return secret, None
    path = data / file
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip(), path


async def _node_token(url: str, name: str, role: str) -> str:
    """A fresh token for a node of this stack (the one from a previous run is revoked)."""
    pool = make_pool(url, max_size=1)
    await pool.open(wait=True)
    try:
        registry = PostgresNodeRegistry(pool)
        await RevokeNode(registry, SystemClock())(name)
        return (await IssueNodeToken(registry, SystemClock(), secrets.token_hex)(name, role)).token
    finally:
        await pool.close()


@contextlib.contextmanager
def running(data: Path, env: dict[str, str], say: Callable[[str], None] = print) -> Iterator[Stack]:
    data = data.absolute()
    data.mkdir(parents=True, exist_ok=True)
    if running_as_root():  # the database server runs as its own user, which must reach its directory
        data.chmod(data.stat().st_mode | 0o711)
        if closed := [p for p in data.parents if not p.stat().st_mode & 0o001]:
            raise RoleFailed(
                f"as root, PostgreSQL runs as its own user, which cannot enter {closed[0]}: "
                "choose a --data directory that user can reach (e.g. under /var/lib or /tmp)"
            )
    first_run = not (data / "postgres" / "data" / "PG_VERSION").exists()
    with LocalPostgres(base_dir=data / "postgres", durable=True) as pg:
        url = pg.url("videocopies")
        schema = migrate.init(url) if first_run else migrate.upgrade(url)
        say(f"PostgreSQL {'created' if first_run else 'started'} in {data / 'postgres'} (schema {schema.revision})")
        with contextlib.ExitStack() as stack:
            simulator, bot_token = None, env.get("VIDEOCOPIES_BOT_TOKEN", "")
            telegram_url, local = env.get("VIDEOCOPIES_TELEGRAM_URL"), env.get("VIDEOCOPIES_TELEGRAM_LOCAL") == "1"
            if not bot_token:
                simulator = stack.enter_context(BotApiSimulator(
                    mode="local", files_dir=data / "telegram", first_update_id=int(time.time() * 1000)
                ))
                bot_token, telegram_url, local = simulator.create_bot(), simulator.url, True
                say(f"Telegram Bot API simulator at {simulator.url} (no VIDEOCOPIES_BOT_TOKEN set)")
            # Core asks Telegram (or the simulator) itself whether a payment edge reports was made.
            core = CoreProcess(
                url, quote_secret=kept_secret(data, env, "VIDEOCOPIES_QUOTE_SECRET", "quote-secret")[0],
                VIDEOCOPIES_BOT_TOKEN=bot_token, VIDEOCOPIES_TELEGRAM_URL=telegram_url or "",
                VIDEOCOPIES_TELEGRAM_LOCAL="1" if local else "0",
                VIDEOCOPIES_STORE_DIR=str(data / "objects"),  # for the object lifecycle: it deletes there
            )
            core.start()
            stack.callback(_stop_core, core)
            say(f"core at {core.url} (metrics at {core.url}/metrics)")
            store = data / "objects"
            edge_token = asyncio.run(_node_token(url, "edge-1", "edge"))

            def edge() -> subprocess.Popen[bytes]:
                return edge_process(core.url, edge_token, bot_token, telegram_url or "", data / "edge", store,
                                    local_api=local)

            roles = [RoleProcess("edge", edge(), start=edge)]
            for n in range(1, WORKERS + 1):
                token = asyncio.run(_node_token(url, f"worker-{n}", "worker"))

                def worker(token: str = token, n: int = n) -> subprocess.Popen[bytes]:
                    return worker_process(core.url, token, data / f"work-{n}", store,
                                      VIDEOCOPIES_TELEGRAM_LOCAL="1" if local else "0")

                roles.append(RoleProcess(f"worker-{n}", worker(), start=worker))
            say(f"edge and {WORKERS} workers started; copies are kept in {store}")
            password, password_file = kept_secret(data, env, "VIDEOCOPIES_CONTROL_PASSWORD", "control-password")
            panel_url = f"http://127.0.0.1:{free_port()}"

            def control() -> subprocess.Popen[bytes]:
                return control_process(url, panel_url, password, data / "control", core.url)

            roles.append(RoleProcess("control", control(), start=control))
            wait_until_serving(f"{panel_url}/login", roles[-1])
            where = f"the password is in {password_file}" if password_file else "VIDEOCOPIES_CONTROL_PASSWORD"
            say(f"control panel at {panel_url}/ ({where})")
            keeper = Keeper(core, roles, say)
            keeper.start()
            try:
                yield Stack(url, core.url, store, simulator, bot_token, panel_url, password_file, keeper)
            finally:
                keeper.stop()
                _stop(roles, say)


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


def _stop_core(core: CoreProcess) -> None:
    if (code := core.stop()) != 0:
        print(f"core exited with {code}:\n" + core.log.decode(errors="replace")[-3000:], file=sys.stderr)
        raise RoleFailed("core did not stop cleanly on SIGTERM")


def _stop(roles: list[RoleProcess], say: Callable[[str], None]) -> None:
    for role in roles:
        role.terminate()
    failed = [(role, code) for role in roles if (code := role.wait()) != 0]
    for role, code in failed:
        print(f"{role.name} exited with {code}:\n" + "\n".join(role.tail), file=sys.stderr)
    if failed:
        raise RoleFailed(f"{', '.join(role.name for role, _ in failed)} did not stop cleanly on SIGTERM")
    say("edge, the workers and control stopped on SIGTERM with exit code 0 (core next)")


def main(data: Path) -> int:
    try:
        return _main(data)
    except RoleFailed as failed:
        print(f"videocopies all-in-one: {failed}", file=sys.stderr)
        return 2


def _main(data: Path) -> int:
    env = dict(os.environ)
    stopping = asyncio.Event()
    with running(data, env) as stack:
        print("all roles running; Ctrl-C stops them", flush=True)
        if stack.simulator is not None:
            print(f"simulated users: POST {stack.simulator.url}/_sim/users, then /_sim/users/ID/messages", flush=True)

        async def wait() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stopping.set)
            await stopping.wait()

        asyncio.run(wait())
    return 0
