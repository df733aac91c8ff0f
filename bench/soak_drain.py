"""The soak's drain: once every order is final, retention 0 for every table and object; each
transient table's rows and the store's objects must then be back where they started."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

from soak_books import TRANSIENT, growth, stored_keys
from soak_stack import SECRET, Stack, fetch

from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.objects import ObjectLifecycle
from videocopies.settings import Settings

RETENTION = ("INBOX", "OUTBOX", "RECEIPTS", "QUOTES", "CHECKPOINTS")
LIFECYCLE = {"VIDEOCOPIES_SOURCE_GRACE_S": "0", "VIDEOCOPIES_COPY_RETENTION_S": "0"}
OBJECTS_TABLE = "stored_objects"  # the object lifecycle's rows (migration 0019)


def prune_command() -> list[str]:
    return [sys.executable, "-m", "videocopies.cli", "db", "prune", "--json"]


def before(stack: Stack) -> dict[str, int]:
    return growth(stack, OBJECTS_TABLE)


def after(stack: Stack, start: dict[str, int]) -> dict[str, Any]:
    """Drain (every role but core stopped, every order final), then count again. `growth_left`
    is how many rows and objects more than at the start."""
    swept = asyncio.run(sweep_objects(stack, start["store_objects"], OBJECTS_TABLE, start.get(OBJECTS_TABLE, 0)))
    try:
        pruned = prune(stack, start)
    except (RuntimeError, subprocess.SubprocessError, ValueError) as failed:
        return {"growth": {"start": start, "end": growth(stack, OBJECTS_TABLE)}, "growth_left": None,
                "growth_error": str(failed)[-1000:]}
    end = growth(stack, OBJECTS_TABLE)
    left = sum(max(0, end[k] - start.get(k, 0)) for k in end)
    return {"growth": {"start": start, "end": end, "swept": swept, "pruned": pruned}, "growth_left": left}


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
