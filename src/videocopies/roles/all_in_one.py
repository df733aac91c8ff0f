"""`videocopies all-in-one`: every role on this machine, for a first look or a small bot.

It starts the embedded PostgreSQL (its data kept under the data directory), core, edge, two
workers sharing a local object store, the control panel, and the Telegram Bot API simulator unless
VIDEOCOPIES_BOT_TOKEN is set (then edge serves that bot on Telegram, or on
VIDEOCOPIES_TELEGRAM_URL). Each role is a process of its own, as on separate machines
(runtime/launch.py), kept running by runtime/keeper.py; runtime/stack.py starts them and
settings/commands.py reads their variables.

The embedded database is created on the first run only; later runs upgrade it, and a data
directory whose database went missing is an error, not a fresh start.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType

from videocopies.runtime import stack
from videocopies.runtime.keeper import Keeper
from videocopies.runtime.launch import RoleFailed
from videocopies.runtime.lifecycle import until_signalled
from videocopies.runtime.role_run import run_role
from videocopies.runtime.stack import Stack, StartAbandoned
from videocopies.testing.telegram_simulator import BotApiSimulator

__all__ = ["Keeper", "RoleFailed", "Stack", "StartAbandoned", "main", "running"]


def _simulator(files_dir: Path, first_update_id: int) -> BotApiSimulator:
    return BotApiSimulator(mode="local", files_dir=files_dir, first_update_id=first_update_id)


@contextlib.contextmanager
def running(
    data: Path, env: Mapping[str, str] | None = None, say: Callable[[str], None] = print,
    stop_asked: Callable[[], bool] = lambda: False,
) -> Iterator[Stack]:
    """Every role started (the simulator serving the bot unless a token is set), stopped after;
    StartAbandoned, with what had started stopped, when `stop_asked` before every role is up."""
    with stack.running(data, _simulator, env, say, stop_asked) as started:
        yield started


_STOPS = (signal.SIGTERM, signal.SIGINT)
_asked: list[int] = []  # the stop signals that came while the roles were starting or stopping


def _ask_stop(signum: int, frame: FrameType | None) -> None:
    # Only noted: raised from here, the exception could land inside a Popen (its child lost) or an
    # event loop's internals (left hanging). The start looks at it after each step instead.
    _asked.append(signum)


def main(data: Path) -> int:
    for stop in _STOPS:
        signal.signal(stop, _ask_stop)
    try:
        with running(data, stop_asked=lambda: bool(_asked)) as stack:
            print("all roles running; Ctrl-C stops them", flush=True)
            if stack.simulator is not None:
                print(f"simulated users: POST {stack.simulator.url}/_sim/users, then /_sim/users/ID/messages",
                      flush=True)
            try:
                run_role(until_signalled(asked_before=lambda: bool(_asked)))
            finally:
                for stop in _STOPS:  # the loop set them back to the defaults: a second one must not cut the stop short
                    signal.signal(stop, _ask_stop)
    except StartAbandoned:
        print("videocopies all-in-one: stopped while starting; what had started is stopped", file=sys.stderr)
    except RoleFailed as failed:
        print(f"videocopies all-in-one: {failed}", file=sys.stderr)
        return 2
    return 0
