"""`videocopies all-in-one`: every role on this machine, for a first look or a small bot.

It starts the embedded PostgreSQL (its data kept under the data directory), core, edge, two
workers sharing a local object store, the control panel, and the Telegram Bot API simulator unless
VIDEOCOPIES_BOT_TOKEN is set (then edge serves that bot on Telegram, or on
VIDEOCOPIES_TELEGRAM_URL). Each role is a process of its own, as on separate machines
(runtime/launch.py), kept running by runtime/keeper.py; settings/commands.py reads its variables.

The embedded database is created on the first run only; later runs upgrade it, and a data
directory whose database went missing is an error, not a fresh start.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import attrs

from videocopies.embedded.postgres import free_port
from videocopies.runtime.data_dir import database, kept_secret
from videocopies.runtime.keeper import Keeper, stop_core, stop_roles
from videocopies.runtime.launch import (
    CoreProcess,
    RoleFailed,
    RoleProcess,
    control_process,
    edge_process,
    issue_token,
    wait_until_serving,
    worker_process,
)
from videocopies.runtime.lifecycle import until_signalled
from videocopies.settings.commands import AllInOneSettings
from videocopies.testing.telegram_simulator import BotApiSimulator

__all__ = ["Keeper", "RoleFailed", "Stack", "kept_secret", "main", "running"]
WORKERS = 2


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


@contextlib.contextmanager
def running(
    data: Path, env: Mapping[str, str] | None = None, say: Callable[[str], None] = print
) -> Iterator[Stack]:
    settings, data = AllInOneSettings.from_env(env), data.absolute()
    with database(data, say) as url, contextlib.ExitStack() as stack:
        simulator, bot_token = None, settings.bot.token or ""
        telegram_url, local = settings.bot.api_url, settings.bot.local
        if not bot_token:
            simulator = stack.enter_context(BotApiSimulator(
                mode="local", files_dir=data / "telegram", first_update_id=int(time.time() * 1000)
            ))
            bot_token, telegram_url, local = simulator.create_bot(), simulator.url, True
            say(f"Telegram Bot API simulator at {simulator.url} (no VIDEOCOPIES_BOT_TOKEN set)")
        store = data / "objects"
        # Core asks Telegram (or the simulator) itself whether a payment edge reports was made.
        core = CoreProcess(
            url, quote_secret=kept_secret(data, settings.quote_secret, "quote-secret")[0],
            VIDEOCOPIES_BOT_TOKEN=bot_token, VIDEOCOPIES_TELEGRAM_URL=telegram_url or "",
            VIDEOCOPIES_TELEGRAM_LOCAL="1" if local else "0",
            VIDEOCOPIES_STORE_DIR=str(store),  # for the object lifecycle: it deletes there
        )
        core.start()
        stack.callback(stop_core, core)
        say(f"core at {core.url} (metrics at {core.url}/metrics)")
        edge_token = issue_token(url, "edge-1", "edge", revoke_first=True)

        def edge() -> subprocess.Popen[bytes]:
            return edge_process(core.url, edge_token, bot_token, telegram_url or "", data / "edge", store,
                                local_api=local)

        roles = [RoleProcess("edge", edge(), start=edge)]
        for n in range(1, WORKERS + 1):
            token = issue_token(url, f"worker-{n}", "worker", revoke_first=True)

            def worker(token: str = token, n: int = n) -> subprocess.Popen[bytes]:
                return worker_process(core.url, token, data / f"work-{n}", store,
                                      VIDEOCOPIES_TELEGRAM_LOCAL="1" if local else "0")

            roles.append(RoleProcess(f"worker-{n}", worker(), start=worker))
        say(f"edge and {WORKERS} workers started; copies are kept in {store}")
        password, password_file = kept_secret(data, settings.control_password, "control-password")
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
            stop_roles(roles, say)


def main(data: Path) -> int:
    try:
        with running(data) as stack:
            print("all roles running; Ctrl-C stops them", flush=True)
            if stack.simulator is not None:
                print(f"simulated users: POST {stack.simulator.url}/_sim/users, then /_sim/users/ID/messages",
                      flush=True)
            asyncio.run(until_signalled())
    except RoleFailed as failed:
        print(f"videocopies all-in-one: {failed}", file=sys.stderr)
        return 2
    return 0

