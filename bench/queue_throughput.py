"""Benchmark: the job queue with fencing and receipts, through the production use cases.

No-op jobs (no copies) of confirmed orders (each user with an account, a lot and the
order's reservation; each order holding a capacity slot, as after a confirmation) are
drained in batches by worker processes with `CompleteThenClaim`, as a worker calls the Job
API's claim: the jobs in hand completed and the next batch claimed in one transaction (one
disk flush on a durable server), every job fenced on its own (owner token, and lease expiry
against the database's clock), each completion with a receipt id and its receipt stored,
each order closed and settled.
The same job count is drained by pgqueuer on the same server (bench/queue_peer.py
says how it is configured) with 4 processes and batch 10. The headline's two drains, ours at 4 × 10
and pgqueuer's, alternate `--rounds` times (3): each rate is the median of its rounds, and
`ratio_to_pgqueuer` is ours over pgqueuer's (one pair alone gave 0.43 to 1.13 on one day, pgqueuer
running at 2,612 to 6,215 jobs/s). After them, the floor (bench/queue_floor.py) writes the same rows for the
same jobs by hand-made set-based SQL with 4 processes and batch 10: `ratio_to_floor` is ours
over it, and `floor_ratio_to_pgqueuer` says how far any implementation of these writes that
commits claims and completions apart gets against pgqueuer on this server. The bare floor
runs after it (the job's two writes and its receipt, a worker's completions and next claim in
one commit): `bare_ratio_to_pgqueuer` says how far the least that issue 18's queue line
allows gets against pgqueuer on the machine of the run. Then a trickle of jobs at a steady
rate measures how long a parked claimer takes to get new work (LISTEN/NOTIFY on a direct connection).

Needs the `bench` dependency group for the peer (installed by default; `uv sync --no-group bench` leaves it out);
`--no-peer` runs without it. Prints one JSON line.

    uv run python bench/queue_throughput.py [--jobs 10000] [--rounds 3] [--trickle 200 --rate 20] [--no-peer]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from datetime import timedelta
from typing import Any

import psycopg
import queue_floor
import queue_peer
import uvloop
from _support import drained_together, emit, fresh_database, server

from videocopies.adapters.postgres.notifier import PostgresNotifier
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.adapters.system import RandomIds, SystemClock
from videocopies.application import use_cases as uc
from videocopies.application.claims import ClaimWaiters
from videocopies.domain.shared import WorkerId
from videocopies.runtime import heap

TTL = timedelta(seconds=30)

INSERT_JOBS = """
INSERT INTO coin_accounts (user_id, version, created_at)
SELECT n, 1, now() FROM generate_series(%(first)s, %(last)s) AS n;
INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited, expired, refunded)
SELECT 'l' || n, n, 'start', 10, now(), now() + interval '30 days', 9, 0, 0, 0
  FROM generate_series(%(first)s, %(last)s) AS n;
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
SELECT 'o' || n, n, 's', 1, 1, 1, 1, now(), 't', n, 'confirmed', '[]', now(), 1
  FROM generate_series(%(first)s, %(last)s) AS n;
INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open, holds)
SELECT 'o' || n, n, 1, 0, 0, true, jsonb_build_array(jsonb_build_array('l' || n, 1))
  FROM generate_series(%(first)s, %(last)s) AS n;
UPDATE capacity_slots SET order_id = 'o' || (%(first)s + slot_id - 1)
 WHERE slot_id <= %(last)s - %(first)s + 1 AND order_id IS NULL;
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
SELECT 'j' || n, 'o' || n, 'queued', '[]', 3, 0, false, clock_timestamp(), 0
  FROM generate_series(%(first)s, %(last)s) AS n;
"""


def _cases(pool: Any) -> tuple[uc.ClaimJob, uc.CompleteJob]:
    uow = lambda: PostgresUnitOfWork(pool)  # noqa: E731
    clock = SystemClock()
    return uc.ClaimJob(uow, clock, RandomIds(), TTL), uc.CompleteJob(uow, clock)


async def _complete(complete: uc.CompleteJob, worker: WorkerId, claimed: list[uc.ClaimedJob]) -> None:
    commands = [uc.CompleteJobCommand(j.job_id, j.token, f"complete:{j.job_id}:{j.attempt}", worker) for j in claimed]
    if len(commands) == 1:
        await complete(commands[0])
        return
    for outcome in await complete.together(commands):
        if isinstance(outcome, Exception):
            raise outcome


async def _drain(url: str, worker: str, batch: int, start_at: float) -> tuple[float, float, int, float]:
    """As a worker drains: each call completes the jobs in hand and claims the next batch in one
    transaction (`CompleteThenClaim`, what the Job API's claim does when it carries completions)."""
    pool = make_pool(url, min_size=2, max_size=2, direct=True)
    await pool.open(wait=True)
    claim, complete = _cases(pool)
    uow = lambda: PostgresUnitOfWork(pool)  # noqa: E731
    then_claim = uc.CompleteThenClaim(uow, SystemClock(), complete.together, claim)
    me = WorkerId(worker)
    heap.settle()  # as core does once it has started, before it serves
    await asyncio.sleep(max(0.0, start_at - time.time()))
    began, done, cpu = time.time(), 0, time.process_time()
    held: list[uc.ClaimedJob] = []
    while True:
        completions = [uc.CompleteJobCommand(j.job_id, j.token, f"complete:{j.job_id}:{j.attempt}", me) for j in held]
        outcomes, held = await then_claim(uc.CompleteThenClaimCommand(completions, uc.ClaimJobCommand(me, batch)))
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        done += len(outcomes)
        if not held:
            break
    ended, cpu = time.time(), time.process_time() - cpu
    await pool.close()
    return began, ended, done, cpu


def _worker(args: tuple[str, str, int, float]) -> tuple[float, float, int, float]:
    return uvloop.run(_drain(*args))


def throughput(url: str, workers: int, batch: int, postmaster: int) -> dict[str, Any]:
    """Also the CPU each job cost: the server's (over the whole run, idle moments included)
    and the claimers' own (from their start to their last completion)."""
    figures = drained_together(
        _worker, lambda start_at: [(url, f"w{i}", batch, start_at) for i in range(workers)], postmaster, workers, batch
    )
    with psycopg.connect(url) as conn:
        done, over, receipts, closed = conn.execute(
            "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE attempts > 1),"
            " (SELECT count(*) FROM receipts WHERE result ? 'job_id'),"  # not the claims' own receipts
            " (SELECT count(*) FROM orders WHERE state = 'done') FROM jobs"
        ).fetchone()
    assert done == figures["jobs"] == receipts == closed and over == 0, (done, figures["jobs"], receipts, closed, over)
    return figures


async def trickle(url: str, jobs: int, rate: float, claimers: int) -> dict[str, Any]:
    """Jobs arrive one by one at `rate` per second; parked claimers wake on NOTIFY. A job's
    wake is from its insert's commit to its claim's commit."""
    pool = make_pool(url, min_size=claimers + 1, max_size=claimers + 1, direct=True)
    await pool.open(wait=True)
    notifier = PostgresNotifier(url, safety_poll_s=1.0)
    await notifier.start()
    claim, complete = _cases(pool)
    committed: dict[str, float] = {}
    woke: dict[str, float] = {}
    finished = asyncio.Event()

    # Parked as core parks them (a wake-up starts a round of claims, two at a time, oldest
    # claimer first, and the first that finds nothing ends it), with a 1 s safety poll.
    waiters = ClaimWaiters(claim, notifier, safety_poll_s=1.0)
    await waiters.start()

    async def claimer(i: int) -> None:
        worker = WorkerId(f"c{i}")
        while not finished.is_set():
            for job in await waiters.claim(worker, 1, None, 1.0):
                woke[job.job_id] = time.perf_counter()
                await _complete(complete, worker, [job])
            if len(woke) >= jobs:
                finished.set()

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
    await waiters.stop()
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


async def lone(url: str, jobs: int) -> dict[str, Any]:
    """One completion at a time, through the grouping (`CompleteJob`) and straight to its
    transaction (`CompleteJob.alone`) in turn: what grouping costs a completion that is alone."""
    first = 2 * 10**7
    with psycopg.connect(url, autocommit=True) as conn:
        psycopg.ClientCursor(conn).execute(INSERT_JOBS, {"first": first, "last": first + 2 * jobs - 1})
    pool = make_pool(url, min_size=1, max_size=1, direct=True)
    await pool.open(wait=True)
    claim, complete = _cases(pool)
    worker = WorkerId("lone")
    took: dict[str, list[float]] = {"grouped": [], "alone": []}
    for n in range(2 * jobs):
        (job,) = await claim(uc.ClaimJobCommand(worker, 1))
        way = "grouped" if n % 2 else "alone"
        command = uc.CompleteJobCommand(job.job_id, job.token, f"complete:{job.job_id}", worker)
        began = time.perf_counter()
        await (complete(command) if way == "grouped" else complete.alone(command))
        took[way].append((time.perf_counter() - began) * 1000)
    await pool.close()
    return {
        "lone_complete_p50_ms": round(statistics.median(took["grouped"]), 2),
        "lone_complete_ungrouped_p50_ms": round(statistics.median(took["alone"]), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--trickle", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3, help="alternating drains of ours and pgqueuer's, medians")
    parser.add_argument("--no-peer", action="store_true", help="skip pgqueuer (without the bench group)")
    args = parser.parse_args()
    if not args.no_peer and not queue_peer.available():
        sys.exit("pgqueuer is not installed: `uv sync --frozen` (bench is a default group), or run with --no-peer")
    runs = []
    heads: list[dict[str, Any]] = []
    peers: list[dict[str, Any]] = []
    with server() as pg:
        fresh_database(pg, "queue_template")
        with psycopg.connect(pg.url("queue_template"), autocommit=True) as conn:
            psycopg.ClientCursor(conn).execute(INSERT_JOBS, {"first": 1, "last": args.jobs})
            conn.execute("VACUUM ANALYZE")

        def ours(name: str, workers: int, batch: int) -> dict[str, Any]:
            if pg.database_exists(name):
                pg.drop_database(name)
            pg.create_database(name, template="queue_template")
            figures = throughput(pg.url(name), workers, batch, pg.pid)
            pg.drop_database(name)
            print(figures, file=sys.stderr, flush=True)
            return figures

        for workers, batch in ((1, 1), (1, 10), (4, 1)):
            runs.append(ours(f"queue_{workers}_{batch}", workers, batch))
        # The headline: ours and pgqueuer's drains in turn, so a slow minute of the machine falls
        # on both alike, and the medians.
        for n in range(args.rounds):
            heads.append(ours(f"queue_4_10_{n}", 4, 10))
            if not args.no_peer:
                name = f"queue_peer_{n}"
                if pg.database_exists(name):
                    pg.drop_database(name)
                pg.create_database(name)
                asyncio.run(queue_peer.install(pg.url(name), args.jobs))
                peers.append(queue_peer.throughput(pg.url(name), 4, 10, pg.pid))
                pg.drop_database(name)
                print({"pgqueuer": peers[-1]}, file=sys.stderr, flush=True)
        pg.create_database("queue_floor", template="queue_template")
        floor = queue_floor.throughput(pg.url("queue_floor"), 4, 10, pg.pid)
        print({"floor": floor}, file=sys.stderr, flush=True)
        pg.create_database("queue_bare", template="queue_template")
        bare = queue_floor.throughput(pg.url("queue_bare"), 4, 10, pg.pid, bare=True)
        print({"bare": bare}, file=sys.stderr, flush=True)
        fresh_database(pg, "queue_trickle")
        wake = uvloop.run(trickle(pg.url("queue_trickle"), args.trickle, args.rate, claimers=4))
        wake |= uvloop.run(lone(pg.url("queue_trickle"), 100))
    best, peer = _median(heads), _median(peers) if peers else {}
    runs.append(best)
    rounds = {"jobs_per_s": [r["jobs_per_s"] for r in heads]}
    if peers:
        rounds["pgqueuer_jobs_per_s"] = [p["jobs_per_s"] for p in peers]
    versus = {
        "floor_jobs_per_s": floor["jobs_per_s"],
        "floor_server_cpu_ms_per_job": floor["server_cpu_ms_per_job"],
        "floor_client_cpu_ms_per_job": floor["client_cpu_ms_per_job"],
        "ratio_to_floor": round(best["jobs_per_s"] / floor["jobs_per_s"], 2),
        "bare_jobs_per_s": bare["jobs_per_s"],
    }
    if peer:
        versus |= {
            "pgqueuer_jobs_per_s": peer["jobs_per_s"],
            "pgqueuer_server_cpu_ms_per_job": peer["server_cpu_ms_per_job"],
            "pgqueuer_client_cpu_ms_per_job": peer["client_cpu_ms_per_job"],
            "ratio_to_pgqueuer": round(best["jobs_per_s"] / peer["jobs_per_s"], 2),
            "floor_ratio_to_pgqueuer": round(floor["jobs_per_s"] / peer["jobs_per_s"], 2),
            "bare_ratio_to_pgqueuer": round(bare["jobs_per_s"] / peer["jobs_per_s"], 2),
        }
    emit(
        {"bench": "queue_throughput", "workers": 4, "batch": 10, "jobs_per_s": best["jobs_per_s"],
         "server_cpu_ms_per_job": best["server_cpu_ms_per_job"], "client_cpu_ms_per_job": best["client_cpu_ms_per_job"],
         **versus,
         "rounds": rounds, "runs": runs, **wake}
    )


def _median(drains: list[dict[str, Any]]) -> dict[str, Any]:
    """The drain whose rate is the median of the rounds' (the lower middle one of an even count),
    with its CPU figures."""
    ranked = sorted(drains, key=lambda d: d["jobs_per_s"])
    return ranked[(len(ranked) - 1) // 2]


if __name__ == "__main__":
    main()
