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

import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from videocopies.runtime import stack
from videocopies.runtime.keeper import Keeper
from videocopies.runtime.launch import RoleFailed
from videocopies.runtime.lifecycle import until_signalled
from videocopies.runtime.stack import Stack
from videocopies.testing.telegram_simulator import BotApiSimulator

__all__ = ["Keeper", "RoleFailed", "Stack", "main", "running"]


def _simulator(files_dir: Path, first_update_id: int) -> BotApiSimulator:
    return BotApiSimulator(mode="local", files_dir=files_dir, first_update_id=first_update_id)


@contextlib.contextmanager
def running(
    data: Path, env: Mapping[str, str] | None = None, say: Callable[[str], None] = print
) -> Iterator[Stack]:
    """Every role started (the simulator serving the bot unless a token is set), stopped after."""
    with stack.running(data, _simulator, env, say) as started:
        yield started


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

