"""Benchmark: core's Job API over HTTP, core reaching PostgreSQL through PgBouncer (10 server
connections), as in production.

- claim + complete per second with 4, 16 and 64 HTTP workers (no-op jobs, in a process of
  their own so the client's CPU is not core's), each claim carrying the completion of the job
  in hand as workers send it (`claim_complete_per_s`), and with a complete call of its own as
  before (`claim_then_complete_per_s`);
- `idle_sql_per_s`: statements per second (pg_stat_statements) while 2,000 clients, in
  another process, long-poll an empty queue;
- `wake_p50_ms` / `wake_p95_ms`: from a producer's COMMIT (announced by NOTIFY, as core
  announces work) until one of the 2,000 parked clients holds the job;
- `renew_p99_ms`: lease renewals of 20 held jobs, 10 per second each, under 1,000 parked claims.

Beside them, what tells a slow core from a slow instrument on a shared machine:
`wake_claim_began_*_ms` (from the COMMIT until core began the claim, by the lease it gave),
the crowd's loop lag and CPU share, core's CPU share in each phase, the claims the crowd
asked again in each phase (waits that ran out), and the load average at the end.

Prints one JSON line.

    uv run python bench/job_api.py [--idle-s 60] [--jobs 2000] [--wake-jobs 100 --rate 10] [--workers 4,16,64]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import uvloop
from _support import cpu_seconds, emit, fresh_database, server
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.notifier import CHANNEL
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import statements_run
from videocopies.runtime.launch import CoreProcess, issue_token_async

HERE = Path(__file__).parent
LEASE_S = 600


# Completing a job settles its order against the user's account, so each needs one.
INSERT_ACCOUNTS = """
INSERT INTO coin_accounts (user_id, version, created_at)
SELECT n, 0, now() FROM generate_series(%(first)s, %(last)s) AS n ON CONFLICT DO NOTHING;
"""
# No-op jobs (no copies) of confirmed orders, as the queue benchmark once made them; kept
# here so that benchmark's own setup can change without moving this one's figures.
INSERT_JOBS = """
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
SELECT 'o' || n, n, 's', 1, 1, 1, 1, now(), 't', n, 'confirmed', '[]', now(), 1
  FROM generate_series(%(first)s, %(last)s) AS n;
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
SELECT 'j' || n, 'o' || n, 'queued', '[]', 3, 0, false, clock_timestamp(), 0
  FROM generate_series(%(first)s, %(last)s) AS n;
"""


def _insert_jobs(url: str, first: int, last: int, announce: bool = False) -> float:
    with psycopg.connect(url) as conn:
        psycopg.ClientCursor(conn).execute(INSERT_ACCOUNTS + INSERT_JOBS, {"first": first, "last": last})
        conn.commit()
        committed = time.time()
        if announce:
            conn.execute("SELECT pg_notify(%s, '')", [CHANNEL])
            conn.commit()
    return committed


async def _drain(core_url: str, tokens: list[str], workers: int, apart: bool) -> tuple[float, int]:
    """As workers drain: each claim carries the completion of the job in hand (one call, one
    transaction), or, `apart`, a claim and then a complete call of its own (as before)."""
    done = 0
    clients = [httpx.AsyncClient(base_url=core_url, timeout=30, headers={"Authorization": f"Bearer {t}"})
               for t in tokens[:workers]]

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal done
        held: dict[str, Any] | None = None
        while True:
            body: dict[str, Any] = {"limit": 1}
            if held is not None:
                body["complete"] = {"job_id": held["job_id"], "token": held["token"], "receipt_id": uuid.uuid4().hex}
            answer = (await http.post("/v1/jobs/claim", json=body)).json()
            if held is not None:
                if "completed" not in answer:
                    raise RuntimeError(f"complete: {answer}")
                done += 1
            held = answer["jobs"][0] if answer["jobs"] else None
            if held is None:
                return
            if apart:
                receipt = {"token": held["token"], "receipt_id": uuid.uuid4().hex}
                completed = await http.post(f"/v1/jobs/{held['job_id']}/complete", json=receipt)
                if completed.status_code != 200:
                    raise RuntimeError(f"complete: HTTP {completed.status_code} {completed.text}")
                done += 1
                held = None

    began = time.perf_counter()
    await asyncio.gather(*(worker(http) for http in clients))
    seconds = time.perf_counter() - began
    for http in clients:
        await http.aclose()
    return seconds, done


def _drain_in_process(args: tuple[str, list[str], int, bool]) -> tuple[float, int]:
    return uvloop.run(_drain(*args))


def throughput(
    core_url: str, url: str, tokens: list[str], workers: int, jobs: int, first: int, apart: bool = False
) -> float:
    _insert_jobs(url, first, first + jobs - 1, announce=True)
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as ex:
        seconds, done = ex.submit(_drain_in_process, (core_url, tokens, workers, apart)).result()
    assert done == jobs, (done, jobs)
    return round(done / seconds, 1)


class Crowd:
    """bench/_parker.py: `clients` parked claims in `processes` other processes."""

    def __init__(
        self, core_url: str, tokens_file: Path, clients: int, wait_s: float = 20.0, processes: int = 2
    ) -> None:
        shares = [clients // processes + (n < clients % processes) for n in range(processes)]
        self.processes = [
            subprocess.Popen(
                [sys.executable, str(HERE / "_parker.py"), core_url, str(tokens_file), str(share), str(wait_s)],
                stdout=subprocess.PIPE, text=True,
            )
            for share in shares
        ]
        self.core_url, self.clients = core_url, clients

    def wait_parked(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        # A few of them are asking again at any moment: 99 % parked is the crowd parked.
        while httpx.get(f"{self.core_url}/_info").json()["parked_claims"] < self.clients * 0.99:
            alive = all(p.poll() is None for p in self.processes)
            assert time.monotonic() < deadline and alive, "the crowd did not park"
            time.sleep(0.2)

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.processes)

    def stop(self) -> dict[str, Any]:
        for process in self.processes:
            process.send_signal(signal.SIGTERM)
        merged: dict[str, Any] = {"received": {}, "leased": {}, "empty": [], "errors": 0, "kinds": {}, "lags": []}
        for process in self.processes:
            out, _ = process.communicate(timeout=60)
            said = json.loads(out.strip().splitlines()[-1])
            merged["received"].update(said["received"])
            merged["leased"].update(said["leased"])
            merged["empty"] += said["empty"]
            merged["lags"] += said["lags"]
            merged["errors"] += said["errors"]
            for kind, n in said["kinds"].items():
                merged["kinds"][kind] = merged["kinds"].get(kind, 0) + n
        return merged

    def __enter__(self) -> Crowd:
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            if process.poll() is None:  # the run failed before stopping it: leave no crowd behind
                process.kill()
                process.wait()


async def _renewals(core_url: str, token: str, held: list[dict[str, Any]], seconds: float) -> list[float]:
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=core_url, timeout=30, headers={"Authorization": f"Bearer {token}"}) as http:

        async def keep(job: dict[str, Any]) -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                began = time.perf_counter()
                (await http.post(f"/v1/jobs/{job['job_id']}/renew", json={"token": job["token"]})).raise_for_status()
                latencies.append((time.perf_counter() - began) * 1000)
                await asyncio.sleep(max(0.0, 0.1 - (time.perf_counter() - began)))

        await asyncio.gather(*(keep(job) for job in held))
    return latencies


async def _bare_renewals(bouncer_url: str, held: list[dict[str, Any]], seconds: float) -> list[float]:
    """The renewal's write alone, paced the same, on 4 connections through the same PgBouncer:
    what the database and the machine allow right now, for `renew_to_bare`."""
    latencies: list[float] = []
    update = "UPDATE jobs SET lease_until = now() + interval '600 s' WHERE job_id = %s AND owner_token = %s"
    async with AsyncConnectionPool(bouncer_url, min_size=4, max_size=4, kwargs={"prepare_threshold": None}) as pool:

        async def keep(job: dict[str, Any]) -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                began = time.perf_counter()
                async with pool.connection() as conn:
                    await conn.execute(update, [job["job_id"], job["token"]])
                latencies.append((time.perf_counter() - began) * 1000)
                await asyncio.sleep(max(0.0, 0.1 - (time.perf_counter() - began)))

        await asyncio.gather(*(keep(job) for job in held))
    return latencies


def _p95(samples: list[float]) -> float | None:
    """A diagnostic's p95; None when a short run (bench/all.py's) gave too few samples."""
    return round(statistics.quantiles(samples, n=20)[18], 2) if len(samples) >= 2 else None


def _pressure() -> dict[str, float]:
    """The share of the last minute some task waited for a CPU, or for the disk (Linux PSI)."""
    found = {}
    for kind in ("cpu", "io"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            first = Path(f"/proc/pressure/{kind}").read_text().splitlines()[0]
            found[f"{kind}_pressure_60s"] = float(first.split()[2].split("=")[1])
    return found


def _until_taken(url: str, jobs: list[str], timeout: float = 30.0) -> None:
    """Until none of `jobs` is still queued: a late wake-up is measured, not cut off."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            query = "SELECT count(*) FROM jobs WHERE job_id = ANY(%s) AND state = 'queued'"
            row = conn.execute(query, [jobs]).fetchone()
            if row is not None and row[0] == 0:
                break
            time.sleep(0.2)
    time.sleep(1.0)  # the last claimer's answer on its way


def idle_and_wake(
    core: CoreProcess, url: str, crowd_tokens: Path, args: Any, first: int, figures: dict[str, Any]
) -> int:
    """Statements per second with 2,000 parked, then the wake-ups; returns the next job number."""
    assert core.process is not None
    with Crowd(core.url, crowd_tokens, 2000) as crowd:
        crowd.wait_parked()
        before, began = statements_run(url), time.monotonic()
        time.sleep(args.idle_s)
        idle = statements_run(url) - before
        figures.update(parked=2000, idle_s=args.idle_s, idle_sql_per_s=round(idle / (time.monotonic() - began), 3))
        print(f"idle: {figures['idle_sql_per_s']} statements/s", file=sys.stderr, flush=True)

        committed = {}
        cpu_before, wake_began = cpu_seconds(core.process.pid), time.time()
        crowd_cpu = crowd.cpu_seconds()
        for n in range(args.wake_jobs):
            job = first + n
            committed[f"j{job}"] = _insert_jobs(url, job, job, announce=True)
            time.sleep(1 / args.rate)
        wake_ended = time.time()
        wake_cpu = cpu_seconds(core.process.pid) - cpu_before
        crowd_cpu = crowd.cpu_seconds() - crowd_cpu
        _until_taken(url, list(committed))
        result = crowd.stop()
    if result["errors"]:  # said, not hidden: a worker would have retried after each
        print(f"the crowd's errors: {result['kinds']}", file=sys.stderr)
    # A job no parked client took (within the wait above) counts as an endless wait.
    waits_by_job = [(result["received"].get(j, float("inf")) - at) * 1000 for j, at in committed.items()]
    waits = sorted(waits_by_job)
    timeline = collections.Counter(int(at - wake_began) for at in result["empty"] if at >= wake_began - 5)
    late = sorted(((w, int(at - wake_began)) for at, w in zip(committed.values(), waits_by_job, strict=True)))[-10:]
    print(f"re-asks per second of the wake phase: {sorted(timeline.items())}", file=sys.stderr)
    print(f"slowest wake-ups (ms, second of the phase): {[(round(w, 1), s) for w, s in late]}", file=sys.stderr)
    # When core began the claim that took each job (its clock): the wake-up without the client's side.
    claimed = sorted((datetime.fromisoformat(result["leased"][j]).timestamp() - LEASE_S - at) * 1000
                     for j, at in committed.items() if j in result["leased"])
    if missed := [j for j in committed if j not in result["received"]]:
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT job_id, state FROM jobs WHERE job_id = ANY(%s)", [missed]).fetchall()
        print(f"jobs no parked client reported: {rows}", file=sys.stderr)
    figures.update(
        wake_jobs=args.wake_jobs, wake_rate_per_s=args.rate,
        wake_p50_ms=round(statistics.median(waits), 2),
        wake_p95_ms=round(statistics.quantiles(waits, n=20)[18], 2), wake_max_ms=round(waits[-1], 2),
        wake_core_cpu_share=round(wake_cpu / (wake_ended - wake_began), 3),
        wake_reasked=sum(wake_began <= at <= wake_ended for at in result["empty"]), wake_crowd_errors=result["errors"],
        wake_claim_began_p50_ms=round(statistics.median(claimed), 2) if claimed else None,
        wake_claim_began_p95_ms=_p95(claimed),
        wake_crowd_loop_lag_p95_ms=_p95([lag * 1000 for at, lag in result["lags"] if wake_began <= at <= wake_ended]),
        wake_crowd_cpu_share=round(crowd_cpu / (wake_ended - wake_began), 3),
    )
    return first + args.wake_jobs


def renewals(
    core: CoreProcess, url: str, bouncer_url: str, token: str, crowd_tokens: Path, args: Any, first: int,
    figures: dict[str, Any],
) -> None:
    """Renewals of 20 held jobs, 10 a second each, with 1,000 claims parked (`--renew-parked`)."""
    assert core.process is not None
    _insert_jobs(url, first, first + 19)
    held: list[dict[str, Any]] = []
    headers = {"Authorization": f"Bearer {token}"}
    while len(held) < 20:
        held += httpx.post(f"{core.url}/v1/jobs/claim", json={"limit": 10}, headers=headers).json()["jobs"]
    with Crowd(core.url, crowd_tokens, args.renew_parked) as crowd:
        crowd.wait_parked()
        cpu_before, renew_began = cpu_seconds(core.process.pid), time.time()
        latencies = sorted(uvloop.run(_renewals(core.url, token, held, args.renew_s)))
        renew_cpu, renew_ended = cpu_seconds(core.process.pid) - cpu_before, time.time()
        bare = sorted(uvloop.run(_bare_renewals(bouncer_url, held, args.renew_s)))
        result = crowd.stop()
    figures.update(
        renew_core_cpu_share=round(renew_cpu / (renew_ended - renew_began), 3),
        renew_reasked=sum(renew_began <= at <= renew_ended for at in result["empty"]),
        renews=len(latencies), parked_during_renew=args.renew_parked,
        renew_p50_ms=round(statistics.median(latencies), 2),
        renew_p99_ms=round(statistics.quantiles(latencies, n=100)[98], 2),
        renew_max_ms=round(latencies[-1], 2),
        bare_renew_p50_ms=round(statistics.median(bare), 2),
        bare_renew_p99_ms=round(statistics.quantiles(bare, n=100)[98], 2),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--wake-jobs", type=int, default=100)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--renew-s", type=float, default=20.0)
    parser.add_argument("--renew-parked", type=int, default=1000)
    parser.add_argument("--lease-pool", type=int, default=4, help="core's connections for lease writes")
    parser.add_argument("--workers", default="4,16,64", help="claim+complete runs; '' skips them")
    args = parser.parse_args()
    figures: dict[str, Any] = {"bench": "job_api", "through": "pgbouncer", "server_connections": 10}
    with server() as pg, LocalPgBouncer(upstream_port=pg.port, default_pool_size=10, max_client_conn=2000) as bouncer, \
            tempfile.TemporaryDirectory() as scratch:
        url = fresh_database(pg, "job_api")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        tokens = [uvloop.run(issue_token_async(url, f"bench-{n}")) for n in range(64)]
        crowd_tokens = Path(scratch) / "crowd"
        crowd_tokens.write_text("\n".join(uvloop.run(issue_token_async(url, f"crowd-{n}")) for n in range(20)))
        # Leases long enough to outlast the crowd's parking on a busy machine: renewals here
        # measure latency, and a lease lapsed before the first renewal would end the run.
        env = {"VIDEOCOPIES_POOL_SIZE": "4", "VIDEOCOPIES_LEASE_POOL_SIZE": str(args.lease_pool),
               "VIDEOCOPIES_LEASE_TTL_S": str(LEASE_S)}
        core_log = Path(scratch) / "core.log"
        with CoreProcess(bouncer.url("job_api"), listen_url=url, log_path=core_log, **env) as core:
            assert core.process is not None
            first = 1
            rates: dict[str, float] = {}
            apart: dict[str, float] = {}
            for workers in [int(w) for w in args.workers.split(",") if w]:
                for way, rate in (("together", rates), ("apart", apart)):
                    rate[str(workers)] = throughput(core.url, url, tokens, workers, args.jobs, first, way == "apart")
                    first += args.jobs
                    print(f"{workers} workers, {way}: {rate[str(workers)]} jobs/s", file=sys.stderr, flush=True)
            figures["claim_complete_per_s"] = rates
            figures["claim_then_complete_per_s"] = apart

            first = idle_and_wake(core, url, crowd_tokens, args, first, figures)
            print(json.dumps({k: v for k, v in figures.items() if k.startswith("wake")}), file=sys.stderr, flush=True)
            renewals(core, url, bouncer.url("job_api"), tokens[0], crowd_tokens, args, first, figures)
        warnings = [line for line in core_log.read_text().splitlines() if "WARNING" in line]
        figures["core_warnings"] = len(warnings)
        print("\n".join(warnings[:10]), file=sys.stderr)
    figures["load_average"] = [round(a, 2) for a in os.getloadavg()]
    figures.update(_pressure())
    emit(figures)


if __name__ == "__main__":
    main()
