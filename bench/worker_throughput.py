"""Benchmark: copies per minute through the whole pipeline, against plain FFmpeg doing the
same work with the same parallelism.

The pipeline: 20 clips (720x1280, 3 s, 25 fps), one copy each, confirmed through the
application layer and served by 1, 2, 3 and 4 `videocopies worker` processes through a
`videocopies core` process's Job API. Each job goes through the queue, the lease, download
from the store, FFmpeg, full-decode verification, the quality gate, upload and checkpoint.
`--store local` (the default): the workers share core's local store. `--store s3`: sources
and copies live in SeaweedFS (`weed mini`, started here), and the workers hold no storage
credentials: they move every object through the URLs core signs, as on many hosts; its
default worker counts are 1, 2, 4 and 8 (`--workers` chooses any).
The baseline: a plain loop with the same parallelism that runs the identical FFmpeg command,
the identical verification (a PyAV header probe, then every frame decoded by an FFmpeg
child) and the identical gate for each copy, by the plans the pipeline's jobs were given,
run right after each worker count. Each count also prints the workers' CPU per copy (their
own and their FFmpeg children's) beside the raw loop's (`cpu_ratio_to_raw`: steadier than
the wall-time ratio on a busy machine), each worker's CPU seconds and peak RSS, and the
bytes they downloaded and uploaded (as core's /metrics shows them).
Then one order of 5 copies measures when the first copy is ready against the whole order.
Last (local store only), gate_cpu_share: the quality gate's CPU seconds (source and copy
sampled, measured) as a share of the render's, over one-copy jobs (the gate's worst case:
nothing shared between copies). `--gate-only` measures just that.

Prints one JSON line.

    uv run python bench/worker_throughput.py [--clips 20] [--max-workers 4] [--gate-only]
    uv run python bench/worker_throughput.py --store s3 [--workers 1,2,4,8]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import psycopg
import uvloop
from _support import _stat, cpu_seconds, emit, postgres_cpu_seconds, server
from _worker_runs import FfmpegRssSampler, gate_cpu_share, peak_rss_mib, plain
from _worker_stores import Store, opened, worker_figures
from dependency_injector import providers

from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.postgres import migrate
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token
from videocopies.settings import Settings

SECRET = "bench-worker" * 3


def _source_key(n: int) -> str:
    return f"sources/{n + 1}/clip.mp4"


async def _sources(store: Store, clip: Path, orders: int) -> None:
    """The users' videos in the store before the clock runs, as edge put them there before
    anyone ordered: the raw loop finds its clip in place too."""
    for n in range(orders):
        await store.put_file(_source_key(n), clip)


async def _orders(url: str, clip: Path, orders: int, copies: int) -> list[str]:
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    notifier = service.gateways.notifier()
    await notifier.start()
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        cases, ids = service.use_cases, []
        for n in range(orders):
            user, key = UserId(n + 1), _source_key(n)
            await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.MANUAL, 100, timedelta(days=1)))
            quote = await cases.quote_order()(uc.QuoteOrderCommand(user, key, copies, clip.stat().st_size))
            ids.append(await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)))
        return ids
    finally:
        await pool.close()
        await notifier.stop()


def _start_workers(url: str, store: Store, count: int, tmp: Path) -> Running:
    """Core on the database and `count` HTTP workers, with the store as deployed."""
    core = CoreProcess(url, quote_secret=SECRET, **store.core_env).start()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("VIDEOCOPIES_", "PG")) and "DATABASE" not in key}
    env.update({"VIDEOCOPIES_CORE_URL": core.url, "VIDEOCOPIES_WORK_DIR": str(tmp / "work"), **store.worker_env})
    workers = [
        subprocess.Popen([sys.executable, "-m", "videocopies.cli", "worker"],
                         env={**env, "VIDEOCOPIES_NODE_TOKEN": issue_token(url, f"bench-{i}")},
                         stderr=subprocess.DEVNULL)
        for i in range(count)
    ]
    deadline = time.monotonic() + 90  # imports and the first long poll, before the clock runs
    while len(worker_figures(core.url)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return Running(core, workers, [_cpu_with_children(w.pid) for w in workers], _core_cpu(core))


@attrs.frozen
class Running:
    core: CoreProcess
    workers: list[subprocess.Popen[bytes]]
    started_cpu: list[tuple[float, float]]  # each worker's once it was ready: its imports are not the work
    core_started_cpu: float


def _core_cpu(core: CoreProcess) -> float:
    assert core.process is not None
    return cpu_seconds(core.process.pid)


def _cpu_with_children(pid: int) -> tuple[float, float]:
    """A worker's own CPU seconds and its reaped children's (FFmpeg's)."""
    fields, tick = _stat(pid), os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def _stop(running: Running, copies: int) -> dict[str, Any]:
    core, workers = running.core, running.workers
    deadline = time.monotonic() + 15  # each worker's next claim reports the figures of its last job
    reported = worker_figures(core.url)
    while sum(f.get("copies_made", 0) for f in reported.values()) < copies and time.monotonic() < deadline:
        time.sleep(0.1)
        reported = worker_figures(core.url)
    cpu = [(own - own0, kids - kids0) for (own, kids), (own0, kids0)
           in zip([_cpu_with_children(w.pid) for w in workers], running.started_cpu, strict=True)]
    peak = [peak_rss_mib(w.pid) for w in workers]
    core_cpu = _core_cpu(core) - running.core_started_cpu
    for w in workers:
        w.send_signal(signal.SIGTERM)
    for w in workers:
        w.wait(timeout=60)
    core.stop()
    return {"own_cpu_s": sum(c[0] for c in cpu), "ffmpeg_cpu_s": sum(c[1] for c in cpu), "cpu_each": cpu,
            "rss_mib": peak, "core_cpu_s": core_cpu,
            "downloaded_bytes": sum(f.get("downloaded_bytes", 0) for f in reported.values()),
            "uploaded_bytes": sum(f.get("uploaded_bytes", 0) for f in reported.values())}


def _count(conn: psycopg.Connection[Any], sql: str) -> int:
    """One connection for all the polls of a run: a new one each time forked a server backend
    20 times a second, CPU taken from the pipeline's renders and not from the raw loop's."""
    row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def _database(pg: Any, name: str, capacity: int) -> str:
    if pg.database_exists(name):
        pg.drop_database(name)
    url = pg.url(name)
    migrate.init(url, capacity=capacity)
    return url


def pipeline(pg: Any, store: Store, clip: Path, clips: int, workers: int, tmp: Path) -> dict[str, Any]:
    url = _database(pg, f"pipeline_{workers}", 1000)
    running = _start_workers(url, store, workers, tmp)
    uvloop.run(_sources(store, clip, clips))
    began, pg_began = time.perf_counter(), postgres_cpu_seconds(pg.pid)
    uvloop.run(_orders(url, clip, clips, 1))
    with psycopg.connect(url, autocommit=True) as conn:
        while _count(conn, "SELECT count(*) FROM orders WHERE state = 'done'") < clips:
            time.sleep(0.05)
    seconds, pg_cpu = time.perf_counter() - began, postgres_cpu_seconds(pg.pid) - pg_began
    with psycopg.connect(url) as conn:
        plans = [plan for (planned,) in conn.execute("SELECT plans FROM jobs ORDER BY job_id") for plan in planned]
    return {"seconds": seconds, "plans": plans, "postgres_cpu_s": pg_cpu, **_stop(running, clips)}


def one_order_of_five(pg: Any, store: Store, clip: Path, workers: int, tmp: Path) -> dict[str, float]:
    url = _database(pg, "five", 10)
    running = _start_workers(url, store, workers, tmp)
    uvloop.run(_sources(store, clip, 1))
    began = time.perf_counter()
    uvloop.run(_orders(url, clip, 1, 5))
    first = None
    with psycopg.connect(url, autocommit=True) as conn:
        while _count(conn, "SELECT count(*) FROM orders WHERE state = 'done'") < 1:
            if first is None and _count(conn, "SELECT count(*) FROM job_checkpoints") >= 1:
                first = time.perf_counter() - began
            time.sleep(0.02)
    total = time.perf_counter() - began
    _stop(running, 5)
    return {"first_copy_s": round(first or total, 2), "total_s": round(total, 2)}


def one_count(pg: Any, store: Store, clip: Path, clips: int, workers: int, tmp: Path) -> dict[str, Any]:
    """The pipeline with `workers` processes, then the raw loop with as many, back to back."""
    load = round(os.getloadavg()[0], 2)
    measured = pipeline(pg, store, clip, clips, workers, tmp)
    raw, raw_cpu = plain(clip, measured["plans"], workers, tmp)
    cpu = measured["own_cpu_s"] + measured["ffmpeg_cpu_s"]
    return {
        "workers": workers,
        "jobs_per_min": round(clips / measured["seconds"] * 60, 1),
        "raw_jobs_per_min": round(clips / raw * 60, 1),
        "ratio_to_raw": round(raw / measured["seconds"], 3),
        "worker_rss_mib": round(max(measured["rss_mib"]), 1),
        "each_worker_rss_mib": [round(rss, 1) for rss in measured["rss_mib"]],
        "each_worker_cpu_s": [round(own + kids, 2) for own, kids in measured["cpu_each"]],
        "worker_cpu_s_per_copy": round(cpu / clips, 3),
        "raw_cpu_s_per_copy": round(raw_cpu / clips, 3),
        "cpu_ratio_to_raw": round(raw_cpu / cpu, 3),  # steadier than the wall-time ratio on a busy machine
        "worker_python_cpu_s_per_copy": round(measured["own_cpu_s"] / clips, 3),
        # What else the pipeline ran on the same cores (the orders' confirmation and this
        # benchmark's polls included): CPU the raw loop's renders did not lose.
        "core_cpu_s_per_copy": round(measured["core_cpu_s"] / clips, 3),
        "postgres_cpu_s_per_copy": round(measured["postgres_cpu_s"] / clips, 3),
        "downloaded_bytes": int(measured["downloaded_bytes"]), "uploaded_bytes": int(measured["uploaded_bytes"]),
        "load_average": load,
    }


def counts(args: argparse.Namespace) -> list[int]:
    if args.workers:
        return [int(n) for n in args.workers.split(",")]
    if args.max_workers:
        return list(range(1, args.max_workers + 1))
    return [1, 2, 4, 8] if args.store == "s3" else [1, 2, 3, 4]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--store", choices=("local", "s3"), default="local")
    parser.add_argument("--max-workers", type=int, help="1 to this many workers")
    parser.add_argument("--workers", help="the worker counts, comma-separated (e.g. 1,2,4,8)")
    parser.add_argument("--gate-only", action="store_true", help="measure gate_cpu_share alone")
    args = parser.parse_args()
    if args.gate_only:
        with tempfile.TemporaryDirectory(prefix="videocopies-bench-") as scratch:
            clip = make_clip(Path(scratch) / "clip.mp4", seconds=3, width=720, height=1280, fps=25)
            emit({"bench": "worker_throughput", **gate_cpu_share(clip, args.clips, Path(scratch))})
        return
    runs = []
    sampler = FfmpegRssSampler()
    sampler.start()
    with (server() as pg, tempfile.TemporaryDirectory(prefix="videocopies-bench-") as scratch,
          opened(args.store, Path(scratch)) as store):
        tmp = Path(scratch)
        clip = make_clip(tmp / "clip.mp4", seconds=3, width=720, height=1280, fps=25)
        for workers in counts(args):
            runs.append(one_count(pg, store, clip, args.clips, workers, tmp))
            print(runs[-1], file=sys.stderr, flush=True)
        best = max(runs, key=lambda r: r["jobs_per_min"])
        five = one_order_of_five(pg, store, clip, best["workers"], tmp)
        gate = gate_cpu_share(clip, args.clips, tmp) if args.store == "local" else {}
    sampler.done.set()
    emit({"bench": "worker_throughput", "store": args.store, **best, "ffmpeg_rss_mib": round(sampler.peak_mib, 1),
          **five, **gate, "runs": runs})


if __name__ == "__main__":
    main()
