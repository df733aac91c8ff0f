"""The soak's drain: once every order is final, every sent quote's button taken off and retention
0 for every table and object; each transient table's rows and the store's objects must then be
back where they started."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

from soak_books import TRANSIENT, growth, stored_keys
from soak_stack import BOT_TOKEN, SECRET, Stack, fetch

from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.objects import ObjectLifecycle
from videocopies.runtime.launch import RoleProcess, edge_process, issue_token
from videocopies.settings import Settings

RETENTION = ("INBOX", "OUTBOX", "RECEIPTS", "QUOTES", "CHECKPOINTS")
LIFECYCLE = {"VIDEOCOPIES_SOURCE_GRACE_S": "0", "VIDEOCOPIES_COPY_RETENTION_S": "0"}
OBJECTS_TABLE = "stored_objects"  # the object lifecycle's rows (migration 0019)
UNBUTTONS_UNSENT = "SELECT count(*) FROM outbox WHERE kind = 'unbutton' AND sent_at IS NULL"
# An edge's start on a busy machine, the polling duty the stopped edge held (its lease, 10 s), and
# an unbutton taken by the stopped edge's claim still waiting in core (offered again after its hold).
UNBUTTON_WAIT_S = 90.0


def prune_command() -> list[str]:
    return [sys.executable, "-m", "videocopies.cli", "db", "prune", "--json"]


def before(stack: Stack) -> dict[str, int]:
    return growth(stack, OBJECTS_TABLE)


def after(stack: Stack, start: dict[str, int]) -> dict[str, Any]:
    """Drain (every role but core stopped, every order final), then count again. `growth_left`
    is how many rows and objects more than at the start."""
    swept = asyncio.run(sweep_objects(stack, start["store_objects"], OBJECTS_TABLE, start.get(OBJECTS_TABLE, 0)))
    try:
        lapsed = lapse_buttons(stack)
        pruned = prune(stack, start)
    except (RuntimeError, subprocess.SubprocessError, ValueError) as failed:
        return {"growth": {"start": start, "end": growth(stack, OBJECTS_TABLE)}, "growth_left": None,
                "growth_error": str(failed)[-1000:]}
    end = growth(stack, OBJECTS_TABLE)
    left = sum(max(0, end[k] - start.get(k, 0)) for k in end)
    return {"growth": {"start": start, "end": end, "swept": swept, "lapsed": lapsed, "pruned": pruned},
            "growth_left": left}


async def sweep_objects(stack: Stack, until: int, table: str, rows_until: int) -> list[dict[str, int]]:
    """Core's object lifecycle with every source and copy due at once: the same passes its
    duty runs, here rather than in a core restarted with these settings (seconds saved); until
    the store and the objects' rows are both back at their start."""
    lifetimes = Settings.from_env({**LIFECYCLE, "VIDEOCOPIES_QUOTE_SECRET": SECRET}).object_lifetimes
    pool = make_pool(stack.url, max_size=2)
    await pool.open(wait=True)
    try:
        lifecycle = ObjectLifecycle(PostgresObjectRows(pool), stack.store, SystemClock(), lifetimes)
        passes = []
        for _ in range(10):
            passes.append((await lifecycle()).deleted)
            rows = int(fetch(stack.url, f"SELECT count(*) FROM {table}")[0][0])  # noqa: S608
            if len(stored_keys(stack.store)) <= until and rows <= rows_until:
                break
        return passes
    finally:
        await pool.close()


def lapse_buttons(stack: Stack) -> dict[str, int]:
    """Every sent quote's Confirm taken off as production takes it off at the quote's expiry:
    core's lapsing sweep queues an `unbutton` message for each `lapsing_buttons` row, in the
    transaction that deletes the row, and an edge sends them; the sent messages are then the
    prune's like any other. No row is deleted while its button is still on a user's screen.

    The sweep's own statement runs here with a clock past the last row's lapse, as
    `sweep_objects` runs the object lifecycle, rather than waiting out the quotes' lifetime
    (`VIDEOCOPIES_QUOTE_TTL_S`, ten minutes): a shorter lifetime would have to be given to the
    users' use cases and to core alike, and would make quotes expire under users still
    confirming them, changing the load the soak is about. The soak's edge is stopped before
    the drain (its acknowledgements and scratch are checked first), so a fresh edge sends the
    unbuttons, as when the edge that sent a quote is gone by its expiry, and is stopped once
    none is left unsent. Started only when a row lapsed: it would send any other unsent
    message too, which the books have counted already."""
    (last,), = fetch(stack.url, "SELECT max(lapses_at) FROM lapsing_buttons")
    if last is None:
        return {"lapsed": 0, "unsent": int(fetch(stack.url, UNBUTTONS_UNSENT)[0][0])}
    lapsed = asyncio.run(_lapse_all(stack.url, last))
    edge = RoleProcess("edge-drain", edge_process(
        stack.core.url, issue_token(stack.url, "soak-edge-drain", "edge"), BOT_TOKEN, stack.sim_url,
        stack.scratch / "work" / "edge-drain",
    ))
    try:
        deadline = time.monotonic() + UNBUTTON_WAIT_S
        while (unsent := int(fetch(stack.url, UNBUTTONS_UNSENT)[0][0])) and time.monotonic() < deadline:
            if edge.process.poll() is not None:
                raise RuntimeError(f"the drain's edge exited: {list(edge.tail)[-5:]}")
            time.sleep(0.5)
    finally:
        edge.terminate()
        edge.wait()
    return {"lapsed": lapsed, "unsent": unsent}


async def _lapse_all(url: str, now: datetime) -> int:
    pool = make_pool(url, max_size=1)
    await pool.open(wait=True)
    try:
        outbox, total = PostgresOutboxQueue(pool), 0
        while (lapsed := await outbox.lapse_buttons(now, 100)) > 0:
            total += lapsed
        return total
    finally:
        await pool.close()


def prune(stack: Stack, start: dict[str, int]) -> list[Any]:
    """`videocopies db prune` with every retention 0, until a pass leaves no row more than at the start."""
    env = {**os.environ, "VIDEOCOPIES_DATABASE_URL": stack.url, **LIFECYCLE,  # checkpoints outlive no copy
           **{f"VIDEOCOPIES_RETENTION_{table}_S": "0" for table in RETENTION}}
    passes = []
    for _ in range(20):
        done = subprocess.run(prune_command(), env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"db prune failed: {done.stderr[-1000:]}")
        line = json.loads(done.stdout.strip().splitlines()[-1])
        passes.append(line)
        end = growth(stack, OBJECTS_TABLE)
        if all(end[k] <= start.get(k, 0) for k in TRANSIENT) or not any(
            v for v in line.values() if isinstance(v, int)
        ):
            break
    return passes
