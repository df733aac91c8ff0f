"""CPU per operation: what one confirmation and one queued job cost the application process
and the PostgreSQL backends. CPU time is steadier than wall time on a shared machine, so
this is the figure to compare changes by; the wall-time benchmarks confirm them.

Both paths run in one process here (50 clients over a pool of 10 for confirmations, one
worker with claim batch 10 for the queue). Application CPU is this process's
`time.process_time()`; PostgreSQL CPU is the user + system time of the server's processes,
read from /proc before and after. Prints one JSON line.

    uv run python bench/cpu_per_op.py [--orders 1000] [--jobs 3000] [--profile confirm|queue]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import uvloop
from _support import emit, fresh_database, server, service
from confirm_wave import drive, prepare
from queue_throughput import INSERT_JOBS

from videocopies.adapters.memory import ManualClock
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.adapters.system import RandomIds, SystemClock
from videocopies.application import use_cases as uc
from videocopies.domain.shared import WorkerId
from videocopies.runtime import heap

_TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(postmaster: int, database: str) -> float:
    """User + system seconds of the server processes serving `database` (the backends of
    this run's connections; autovacuum and the checkpointer are left out)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[1]) == postmaster and f" {database} " in title:  # field 4 is the ppid
            total += (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
    return total


async def measured(
    postmaster: int, database: str, work: Callable[[], Awaitable[int]], profile: bool
) -> tuple[int, float, float, float]:
    """Run `work` (which returns how many operations it did); CPU of both sides, wall."""
    profiler = cProfile.Profile() if profile else None
    server_before, client_before, began = server_cpu(postmaster, database), time.process_time(), time.perf_counter()
    if profiler:
        profiler.enable()
    done = await work()
    if profiler:
        profiler.disable()
    wall = time.perf_counter() - began
    client, server_side = time.process_time() - client_before, server_cpu(postmaster, database) - server_before
    if profiler:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(35)
    return done, client, server_side, wall


async def confirmations(url: str, postmaster: int, orders: int, profile: bool) -> dict[str, Any]:
    now = datetime.now(UTC)
    clock = ManualClock(now)
    quotes, _ = await prepare(url, orders, 1, clock)
    container = service(url, pool_size=10, clock=clock)
    pool = container.gateways.pool()
    await pool.open(wait=True)
    await pool.wait()
    confirm = container.use_cases.confirm_order()
    heap.settle()  # as core does once it has started, before it serves

    async def work() -> int:
        calls = [lambda q=q: confirm(uc.ConfirmOrderCommand(*q)) for q in quotes]
        await drive(calls, 50)
        return len(calls)

    done, client, server_side, wall = await measured(postmaster, url.rsplit("/", 1)[1], work, profile)
    await pool.close()
    return _figures("confirm", done, client, server_side, wall)


async def queue(url: str, postmaster: int, jobs: int, profile: bool) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        psycopg.ClientCursor(conn).execute(INSERT_JOBS, {"first": 1, "last": jobs})
        conn.execute("VACUUM ANALYZE")
    pool = make_pool(url, min_size=2, max_size=2, direct=os.environ.get("VIDEOCOPIES_BENCH_LITERAL") != "1")
    await pool.open(wait=True)
    await pool.wait()
    uow = lambda: PostgresUnitOfWork(pool)  # noqa: E731
    clock = SystemClock()
    claim, complete = uc.ClaimJob(uow, clock, RandomIds(), timedelta(seconds=30)), uc.CompleteJob(uow, clock)

    async def work() -> int:
        done = 0
        while claimed := await claim(uc.ClaimJobCommand(WorkerId("w"), 10)):
            for job in claimed:  # one completion at a time, each with its receipt, as a lone worker sends them
                await complete(uc.CompleteJobCommand(job.job_id, job.token, f"c:{job.job_id}", WorkerId("w")))
                done += 1
        return done

    done, client, server_side, wall = await measured(postmaster, url.rsplit("/", 1)[1], work, profile)
    await pool.close()
    return _figures("job", done, client, server_side, wall)


def _figures(unit: str, done: int, client: float, server_side: float, wall: float) -> dict[str, Any]:
    return {
        f"{unit}s": done,
        "app_cpu_ms": round(client / done * 1000, 3),
        "pg_cpu_ms": round(server_side / done * 1000, 3),
        "total_cpu_ms": round((client + server_side) / done * 1000, 3),
        "wall_s": round(wall, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--profile", choices=["confirm", "queue"], default=None)
    args = parser.parse_args()
    with server() as pg:
        postmaster = pg.pid
        assert postmaster is not None
        confirm = uvloop.run(
            confirmations(fresh_database(pg, "cpu_confirm"), postmaster, args.orders, args.profile == "confirm")
        )
        jobs = uvloop.run(queue(fresh_database(pg, "cpu_queue"), postmaster, args.jobs, args.profile == "queue"))
    emit({"bench": "cpu_per_op", "confirm": confirm, "queue": jobs, "load_average": round(os.getloadavg()[0], 2)})


if __name__ == "__main__":
    main()
