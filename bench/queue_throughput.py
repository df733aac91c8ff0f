"""Benchmark: the job queue with fencing, through the real PostgreSQL adapter.

No-op jobs (no copies) are claimed in batches and completed by worker processes, each
write fenced by owner token and lease expiry exactly as in production: the domain `Job`
claims and completes, `PostgresUnitOfWork` loads with FOR UPDATE SKIP LOCKED and writes
with the fenced update. Then a trickle of jobs at a steady rate measures how long a
parked claimer takes to get new work (LISTEN/NOTIFY on a direct connection).

Prints one JSON line.

    uv run python bench/queue_throughput.py [--jobs 10000] [--trickle 200 --rate 20]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import multiprocessing
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import uvloop
from _support import emit, fresh_database, server

from videocopies.adapters.postgres.notifier import PostgresNotifier
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.domain.shared import OwnerToken, WorkerId

TTL = timedelta(seconds=30)

INSERT_JOBS = """
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
SELECT 'o' || n, n, 's', 1, 1, 1, 1, now(), 't', n, 'confirmed', '[]', now(), 1
  FROM generate_series(%(first)s, %(last)s) AS n;
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
SELECT 'j' || n, 'o' || n, 'queued', '[]', 3, 0, false, clock_timestamp(), 0
  FROM generate_series(%(first)s, %(last)s) AS n;
"""


async def _claim(uow_factory: Any, worker: WorkerId, batch: int) -> list[tuple[str, OwnerToken]]:
    now = datetime.now(UTC)
    async with uow_factory() as uow:
        jobs = await uow.jobs.claimable(now, batch)
        claimed = [(job.job_id, job.claim(worker, OwnerToken(uuid.uuid4().hex), now, TTL).token) for job in jobs]
        await uow.commit()
    return claimed


async def _complete(uow_factory: Any, job_id: str, token: OwnerToken) -> None:
    async with uow_factory() as uow:
        job = await uow.jobs.get(job_id)
        job.complete(token, datetime.now(UTC))
        await uow.commit()


async def _drain(url: str, worker: str, batch: int, start_at: float) -> tuple[float, float, int]:
    pool = make_pool(url, min_size=2, max_size=2, direct=True)
    await pool.open(wait=True)
    uow = lambda: PostgresUnitOfWork(pool)  # noqa: E731
    await asyncio.sleep(max(0.0, start_at - time.time()))
    began, done = time.time(), 0
    while claimed := await _claim(uow, WorkerId(worker), batch):
        for job_id, token in claimed:
            await _complete(uow, job_id, token)
            done += 1
    ended = time.time()
    await pool.close()
    return began, ended, done


def _worker(args: tuple[str, str, int, float]) -> tuple[float, float, int]:
    return uvloop.run(_drain(*args))


def throughput(url: str, workers: int, batch: int) -> dict[str, Any]:
    start_at = time.time() + 2.0 + workers * 0.5
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as ex:
        results = list(ex.map(_worker, [(url, f"w{i}", batch, start_at) for i in range(workers)]))
    seconds = max(e for _, e, _ in results) - min(b for b, _, _ in results)
    jobs = sum(n for _, _, n in results)
    with psycopg.connect(url) as conn:
        done, over = conn.execute(
            "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE attempts > 1) FROM jobs"
        ).fetchone()
    assert done == jobs and over == 0, (done, jobs, over)
    return {
        "workers": workers,
        "batch": batch,
        "jobs": jobs,
        "seconds": round(seconds, 3),
        "jobs_per_s": round(jobs / seconds, 1),
    }


async def trickle(url: str, jobs: int, rate: float, claimers: int) -> dict[str, Any]:
    """Jobs arrive one by one at `rate` per second; parked claimers wake on NOTIFY."""
    pool = make_pool(url, min_size=claimers + 1, max_size=claimers + 1, direct=True)
    await pool.open(wait=True)
    notifier = PostgresNotifier(url, safety_poll_s=1.0)
    await notifier.start()
    uow = lambda: PostgresUnitOfWork(pool)  # noqa: E731
    committed: dict[str, float] = {}
    woke: dict[str, float] = {}
    finished = asyncio.Event()

    async def claimer(i: int) -> None:
        while not finished.is_set():
            ticket = notifier.ticket()
            for job_id, token in await _claim(uow, WorkerId(f"c{i}"), 1):
                woke[job_id] = time.perf_counter()
                await _complete(uow, job_id, token)
            if len(woke) >= jobs:
                finished.set()
            else:
                await notifier.wait(ticket, 1.0)

    async def producer() -> None:
        # The producer announces like core does: after its commit, through its own notifier.
        announcer = PostgresNotifier(url)
        await announcer.start()
        async with pool.connection() as conn:
            for n in range(jobs):
                await asyncio.sleep(1 / rate)
                first = {"first": 10**7 + n, "last": 10**7 + n}
                await psycopg.AsyncClientCursor(conn).execute(INSERT_JOBS, first)
                await conn.commit()
                committed[f"j{10**7 + n}"] = time.perf_counter()
                announcer.job_available()
        await announcer.stop()

    tasks = [asyncio.create_task(claimer(i)) for i in range(claimers)]
    await producer()
    await asyncio.wait_for(finished.wait(), 30)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await notifier.stop()
    await pool.close()
    waits = sorted((woke[j] - committed[j]) * 1000 for j in committed)
    return {
        "trickle_jobs": jobs,
        "trickle_rate_per_s": rate,
        "claimers": claimers,
        "wake_p50_ms": round(statistics.median(waits), 2),
        "wake_p95_ms": round(statistics.quantiles(waits, n=20)[18], 2),
        "wake_max_ms": round(waits[-1], 2),
        "notices": notifier.notices,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--trickle", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0)
    args = parser.parse_args()
    runs = []
    with server() as pg:
        fresh_database(pg, "queue_template")
        with psycopg.connect(pg.url("queue_template"), autocommit=True) as conn:
            psycopg.ClientCursor(conn).execute(INSERT_JOBS, {"first": 1, "last": args.jobs})
            conn.execute("VACUUM ANALYZE")
        for workers, batch in ((1, 1), (1, 10), (4, 1), (4, 10)):
            name = f"queue_{workers}_{batch}"
            if pg.database_exists(name):
                pg.drop_database(name)
            pg.create_database(name, template="queue_template")
            runs.append(throughput(pg.url(name), workers, batch))
            print(runs[-1], file=sys.stderr, flush=True)
        fresh_database(pg, "queue_trickle")
        wake = uvloop.run(trickle(pg.url("queue_trickle"), args.trickle, args.rate, claimers=4))
    best = next(r for r in runs if r["workers"] == 4 and r["batch"] == 10)
    emit(
        {"bench": "queue_throughput", "workers": 4, "batch": 10, "jobs_per_s": best["jobs_per_s"], "runs": runs, **wake}
    )


if __name__ == "__main__":
    main()
