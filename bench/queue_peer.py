"""The peer for bench/queue_throughput.py: pgqueuer draining no-op jobs on the same server.

pgqueuer (the `bench` dependency group, installed by default) runs with its
psycopg driver, its schema installed by its own installer into a database of its own, and
its defaults everywhere but the two figures the comparison fixes: `batch_size=10` (its
default too) and `mode=drain`, so each process stops when the queue is empty, as ours
does. Its completion log buffer therefore flushes at its default: every `batch_size`
finished jobs or every 0.1 s; heartbeats every 3.75 s (its 30 s timeout / 8); no
concurrency limit; the periodic log aggregation at its default 30 s. Jobs carry no
payload and the entrypoint returns at once. Its time runs from the common start to its last
job's run (see `_drain`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
import uvloop
from _support import drained_together

ENTRYPOINT = "noop"


def available() -> bool:
    try:
        import pgqueuer  # noqa: F401
    except ImportError:
        return False
    return True


async def install(url: str, jobs: int) -> None:
    """pgqueuer's schema by its own installer, then `jobs` no-op jobs in one bulk enqueue."""
    from pgqueuer import PsycopgDriver, Queries

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        await queries.install()
        for first in range(0, jobs, 5_000):
            n = min(5_000, jobs - first)
            await queries.enqueue([ENTRYPOINT] * n, [None] * n, [0] * n)
        await conn.execute("VACUUM ANALYZE")


async def _drain(url: str, batch: int, start_at: float) -> tuple[float, float, int, float]:
    from pgqueuer import PsycopgDriver, Queries, QueueManager
    from pgqueuer.types import QueueExecutionMode

    done, last = 0, 0.0
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        manager = QueueManager(Queries(PsycopgDriver(conn)))

        @manager.entrypoint(ENTRYPOINT)
        async def noop(job: Any) -> None:
            nonlocal done, last
            done += 1
            last = time.time()

        await asyncio.sleep(max(0.0, start_at - time.time()))
        began, cpu = time.time(), time.process_time()
        await manager.run(batch_size=batch, mode=QueueExecutionMode.drain)
        cpu = time.process_time() - cpu  # its idle seconds before it stops cost next to nothing
    # Ended at its last job's run, not at the process's exit: drain mode idles a few seconds
    # before it sees the queue is empty, and the last completions' log flush (≤ 0.1 s later)
    # is left out too, so any error here favours pgqueuer.
    return began, last, done, cpu


def _worker(args: tuple[str, int, float]) -> tuple[float, float, int, float]:
    return uvloop.run(_drain(*args))


def throughput(url: str, workers: int, batch: int, postmaster: int) -> dict[str, Any]:
    figures = drained_together(_worker, lambda start_at: [(url, batch, start_at)] * workers, postmaster, workers, batch)
    with psycopg.connect(url) as conn:
        left = conn.execute("SELECT count(*) FROM pgqueuer").fetchone()[0]
        logged = conn.execute("SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'").fetchone()[0]
    assert left == 0 and logged == figures["jobs"], (left, logged, figures["jobs"])
    return figures
