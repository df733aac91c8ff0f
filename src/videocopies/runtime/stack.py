"""Every role of all-in-one on this machine: the embedded PostgreSQL (its data kept under the
data directory), core, edge, two workers sharing a local object store, the control panel, and
the Telegram Bot API simulator unless a bot token is set. Each role is a process of its own, as
on separate machines (runtime/launch.py), kept running by runtime/keeper.py.

The embedded database is created on the first run only; later runs upgrade it, and a data
directory whose database went missing is an error, not a fresh start.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from videocopies.embedded.postgres import free_port
from videocopies.runtime.data_dir import database, kept_secret
from videocopies.runtime.keeper import Keeper, stop_core, stop_roles
from videocopies.runtime.launch import (
    CoreProcess,
    RoleProcess,
    control_process,
    edge_process,
    issue_token,
    wait_until_serving,
    worker_process,
)
from videocopies.settings.commands import AllInOneSettings

WORKERS = 2


@attrs.frozen
class Stack:
    database_url: str
    core_url: str
    store_dir: Path
    simulator: Any  # the Bot API simulator serving the bot; None: a real bot token, real Telegram
    bot_token: str
    panel_url: str
    panel_password_file: Path | None  # None: the password came from VIDEOCOPIES_CONTROL_PASSWORD
    keeper: Keeper | None = None


class StartAbandoned(Exception):
    """A stop was asked before every role was up; what had started is stopped."""


@contextlib.contextmanager
def running(
    data: Path, simulator: Callable[[Path, int], Any], env: Mapping[str, str] | None = None,
    say: Callable[[str], None] = print, stop_asked: Callable[[], bool] = lambda: False,
) -> Iterator[Stack]:
    """`simulator(files_dir, first_update_id)`: the Bot API simulator to start when no bot token
    is set (a context manager with `url` and `create_bot()`), chosen by the role. `stop_asked` is
    looked at after each step of the start (each takes a few seconds at most): StartAbandoned."""
    settings, data = AllInOneSettings.from_env(env), data.absolute()

    def step_done() -> None:
        if stop_asked():
            raise StartAbandoned

    with database(data, say) as url, contextlib.ExitStack() as stack:
        step_done()
        served: Any = None
        bot_token, telegram_url, local = settings.bot.token or "", settings.bot.api_url, settings.bot.local
        if not bot_token:
            served = stack.enter_context(simulator(data / "telegram", int(time.time() * 1000)))
            bot_token, telegram_url, local = served.create_bot(), served.url, True
            say(f"Telegram Bot API simulator at {served.url} (no VIDEOCOPIES_BOT_TOKEN set)")
            step_done()
        store = data / "objects"
        # Core asks Telegram (or the simulator) itself whether a payment edge reports was made.
        core = CoreProcess(
            url, quote_secret=kept_secret(data, settings.quote_secret, "quote-secret")[0],
            VIDEOCOPIES_BOT_TOKEN=bot_token, VIDEOCOPIES_TELEGRAM_URL=telegram_url or "",
            VIDEOCOPIES_TELEGRAM_LOCAL="1" if local else "0",
            VIDEOCOPIES_STORE_DIR=str(store),  # for the object lifecycle: it deletes there
        )
        # Each part is put on the stack before it starts: a start cut short (a stop asked, a role
        # that fails) stops every process already launched, never leaves one behind. Exit codes are
        # judged once everything is up.
        up: list[bool] = []
        stack.callback(lambda: stop_core(core, judged=bool(up)))
        core.start()
        say(f"core at {core.url} (metrics at {core.url}/metrics)")
        step_done()
        edge_token = issue_token(url, "edge-1", "edge", revoke_first=True)

        def edge() -> subprocess.Popen[bytes]:
            return edge_process(core.url, edge_token, bot_token, telegram_url or "", data / "edge", store,
                                local_api=local)

        roles: list[RoleProcess] = []
        stack.callback(lambda: stop_roles(roles, say, judged=bool(up)))
        roles.append(RoleProcess("edge", edge(), start=edge))
        step_done()
        for n in range(1, WORKERS + 1):
            token = issue_token(url, f"worker-{n}", "worker", revoke_first=True)

            def worker(token: str = token, n: int = n) -> subprocess.Popen[bytes]:
                return worker_process(core.url, token, data / f"work-{n}", store,
                                      VIDEOCOPIES_TELEGRAM_LOCAL="1" if local else "0")

            roles.append(RoleProcess(f"worker-{n}", worker(), start=worker))
            step_done()
        say(f"edge and {WORKERS} workers started; copies are kept in {store}")
        password, password_file = kept_secret(data, settings.control_password, "control-password")
        panel_url = f"http://127.0.0.1:{free_port()}"

        def control() -> subprocess.Popen[bytes]:
            return control_process(url, panel_url, password, data / "control", core.url)

        roles.append(RoleProcess("control", control(), start=control))
        wait_until_serving(f"{panel_url}/login", roles[-1])
        step_done()
        where = f"the password is in {password_file}" if password_file else "VIDEOCOPIES_CONTROL_PASSWORD"
        say(f"control panel at {panel_url}/ ({where})")
        keeper = Keeper(core, roles, say)
        stack.callback(keeper.stop)
        keeper.start()
        up.append(True)
        yield Stack(url, core.url, store, served, bot_token, panel_url, password_file, keeper)
