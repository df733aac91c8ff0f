"""The soak's drain: once every order is final, retention 0 for every table and object; each
transient table's rows and the store's objects must then be back where they started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from soak_books import growth, stored_keys
from soak_stack import Stack, fetch

RETENTION = ("INBOX", "OUTBOX", "RECEIPTS", "QUOTES", "CHECKPOINTS")
LIFECYCLE = {"VIDEOCOPIES_SOURCE_GRACE_S": "0", "VIDEOCOPIES_COPY_RETENTION_S": "0",
             "VIDEOCOPIES_OBJECTS_SWEEP_S": "1"}
OBJECTS_TABLES = ("objects", "stored_objects")  # the object lifecycle's table (migration 0019)


def objects_table(stack: Stack) -> str | None:
    rows = fetch(stack.url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                 "AND table_name = ANY(%s) ORDER BY 1", list(OBJECTS_TABLES))
    return rows[0][0] if rows else None


def prune_command() -> list[str]:
    return [sys.executable, "-m", "videocopies.cli", "db", "prune", "--json"]


def missing(stack: Stack) -> list[str]:
    """What the drain needs and this code does not have yet."""
    gaps = []
    if objects_table(stack) is None:
        gaps.append(f"the object lifecycle's table (one of {', '.join(OBJECTS_TABLES)})")
    helped = subprocess.run([*prune_command()[:-1], "--help"], capture_output=True, text=True)
    if helped.returncode != 0:
        gaps.append("`videocopies db prune`")
    return gaps


def before(stack: Stack) -> dict[str, int]:
    return growth(stack, objects_table(stack))


def after(stack: Stack, start: dict[str, int]) -> dict[str, Any]:
    """Drain (every role but core stopped, every order final), then count again. `growth_left`
    is how many rows and objects more than at the start; None when the drain cannot run yet."""
    gaps = missing(stack)
    if gaps:
        return {"growth": {"start": start, "end": growth(stack, objects_table(stack))},
                "growth_left": None, "growth_skipped": "needs " + " and ".join(gaps)}
    # Core's lifecycle duty deletes each source and copy at once, and sweeps every second.
    stack.core.restart(**LIFECYCLE)
    deadline = time.monotonic() + 60
    while len(stored_keys(stack.store)) > start["store_objects"] and time.monotonic() < deadline:
        time.sleep(1)
    try:
        pruned = prune(stack)
    except (RuntimeError, subprocess.SubprocessError, ValueError) as failed:
        return {"growth": {"start": start, "end": growth(stack, objects_table(stack))},
                "growth_left": None, "growth_error": str(failed)[-1000:]}
    end = growth(stack, objects_table(stack))
    left = sum(max(0, end[k] - start.get(k, 0)) for k in end)
    return {"growth": {"start": start, "end": end, "pruned": pruned}, "growth_left": left}


def prune(stack: Stack) -> list[Any]:
    """`videocopies db prune` with every retention 0, until a pass deletes nothing."""
    env = {**os.environ, "VIDEOCOPIES_DATABASE_URL": stack.url, **LIFECYCLE,  # checkpoints outlive no copy
           **{f"VIDEOCOPIES_RETENTION_{table}_S": "0" for table in RETENTION}}
    passes = []
    for _ in range(20):
        done = subprocess.run(prune_command(), env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"db prune failed: {done.stderr[-1000:]}")
        line = json.loads(done.stdout.strip().splitlines()[-1])
        passes.append(line)
        if not any(v for v in line.values() if isinstance(v, int)):
            break
    return passes
