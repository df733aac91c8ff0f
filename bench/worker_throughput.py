"""Benchmark: copies per minute through the whole pipeline, against plain FFmpeg doing the
same work with the same parallelism.

The pipeline: 20 clips (720x1280, 3 s, 25 fps), one copy each, confirmed through the
application layer and served by 1, 2, 3 and 4 `videocopies worker` processes through a
`videocopies core` process's Job API. Each job goes through the queue, the lease, download
from the store, FFmpeg, full-decode verification, the quality gate, upload and checkpoint.
The baseline: a plain loop with the same parallelism that runs the identical FFmpeg command,
the identical verification (a PyAV header probe, then every frame decoded by an FFmpeg
child) and the identical gate for each copy.
Then one order of 5 copies measures when the first copy is ready against the whole order.
Last, gate_cpu_share: the quality gate's CPU seconds (source and copy sampled, measured) as a
share of the render's, over one-copy jobs (the gate's worst case: nothing shared between
copies). `--gate-only` measures just that.

Prints one JSON line.

    uv run python bench/worker_throughput.py [--clips 20] [--max-workers 4] [--gate-only]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import uvloop
from _support import emit, server
from dependency_injector import providers

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.ffmpeg.render import SourceInfo, ffmpeg_args
from videocopies.adapters.ffmpeg.transcoder import probe as probe_source
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.adapters.postgres import migrate
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.effects import EffectsPlan, plan_copies
from videocopies.domain.shared import UserId
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token
from videocopies.settings import Settings

SECRET = "bench-worker" * 3


def _peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class FfmpegRssSampler(threading.Thread):
    """Samples the resident size of every running ffmpeg, keeping the peak."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        if b"ffmpeg" in (entry / "cmdline").read_bytes().split(b"\0")[0]:
                            self.peak_mib = max(self.peak_mib, _peak_rss_mib(int(entry.name)))
                    except OSError:
                        continue
            time.sleep(0.05)


async def _orders(url: str, store_dir: Path, clip: Path, orders: int, copies: int) -> list[str]:
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    notifier = service.gateways.notifier()
    await notifier.start()
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        cases, store, ids = service.use_cases, FilesystemObjectStore(store_dir), []
        for n in range(orders):
            user, key = UserId(n + 1), f"sources/{n + 1}/clip.mp4"
            await store.put_file(key, clip)
            await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.MANUAL, 100, timedelta(days=1)))
            quote = await cases.quote_order()(uc.QuoteOrderCommand(user, key, copies, clip.stat().st_size))
            ids.append(await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)))
        return ids
    finally:
        await pool.close()
        await notifier.stop()


def _start_workers(url: str, count: int, tmp: Path) -> tuple[CoreProcess, list[subprocess.Popen[bytes]]]:
    """Core on the database and `count` HTTP workers sharing its local store, as deployed."""
    core = CoreProcess(url, quote_secret=SECRET, VIDEOCOPIES_STORE_DIR=str(tmp / "objects")).start()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("VIDEOCOPIES_", "PG")) and "DATABASE" not in key}
    env.update({"VIDEOCOPIES_CORE_URL": core.url, "VIDEOCOPIES_WORK_DIR": str(tmp / "work"),
                "VIDEOCOPIES_STORE_DIR": str(tmp / "objects")})
    workers = [
        subprocess.Popen([sys.executable, "-m", "videocopies.cli", "worker"],
                         env={**env, "VIDEOCOPIES_NODE_TOKEN": issue_token(url, f"bench-{i}")},
                         stderr=subprocess.DEVNULL)
        for i in range(count)
    ]
    time.sleep(3.0)  # imports and the first long poll, before the clock runs
    return core, workers


def _stop(started: tuple[CoreProcess, list[subprocess.Popen[bytes]]]) -> float:
    core, workers = started
    peak = max(_peak_rss_mib(w.pid) for w in workers)
    for w in workers:
        w.send_signal(signal.SIGTERM)
    for w in workers:
        w.wait(timeout=60)
    core.stop()
    return peak


def _count(url: str, sql: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(sql).fetchone()[0])


def pipeline(pg: Any, clip: Path, clips: int, workers: int, tmp: Path) -> dict[str, float]:
    name = f"pipeline_{workers}"
    if pg.database_exists(name):
        pg.drop_database(name)
    url = pg.url(name)
    migrate.init(url, capacity=1000)
    running = _start_workers(url, workers, tmp)
    began = time.perf_counter()
    uvloop.run(_orders(url, tmp / "objects", clip, clips, 1))
    while _count(url, "SELECT count(*) FROM orders WHERE state = 'done'") < clips:
        time.sleep(0.05)
    seconds = time.perf_counter() - began
    return {"seconds": seconds, "worker_rss_mib": _stop(running)}


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _plain_copy(args: tuple[str, int, str]) -> None:
    """What one job is, without the machinery: the same FFmpeg command, the same full decode
    and the same quality gate (the render keeps the source's frames, the decode the copy's)."""
    source, seed, target = args
    plan = plan_copies(seed, 1)[0]
    info = probe_source(Path(source))
    kept, seen = Path(target).with_suffix(".nut"), Path(target).with_suffix(".frames.nut")
    subprocess.run([ffmpeg_binary(), *ffmpeg_args(plan, info, Path(source), Path(target), source_frames=kept)],
                   check=True, capture_output=True)
    # The worker's verification: the header through PyAV, every frame decoded by FFmpeg.
    uvloop.run(FfmpegDecodingProber().probe(Path(target), full_decode=True, keep_frames=seen))
    PyAvCopyInspector().inspect_blocking(Path(source), Path(target), plan, kept, seen)
    for path in (Path(target), kept, seen):
        path.unlink()


def _render_cpu(plan: EffectsPlan, info: SourceInfo, source: Path, target: Path, kept: Path | None) -> float:
    before = _children_cpu()
    subprocess.run([ffmpeg_binary(), *ffmpeg_args(plan, info, source, target, source_frames=kept)],
                   check=True, capture_output=True)
    return _children_cpu() - before


def _decode_cpu(prober: FfmpegDecodingProber, copy: Path, seen: Path | None) -> float:
    before = _children_cpu()
    uvloop.run(prober.probe(copy, full_decode=True, keep_frames=seen))
    return _children_cpu() - before


def gate_cpu_share(clip: Path, jobs: int, tmp: Path) -> dict[str, float]:
    """The quality gate's CPU seconds as a share of rendering's, over one-copy jobs (nothing
    shared between copies: its worst case). The gate's seconds are the inspector's (everything
    measured) plus what keeping the frames adds to the render and to the verifying decode,
    each taken as the difference between the same run with and without keeping them."""
    info, prober = probe_source(clip), FfmpegDecodingProber()
    render = kept_extra = inspect = 0.0
    for n in range(jobs):
        plan = plan_copies(1000 + n, 1)[0]
        target, kept, seen = tmp / f"gate-{n}.mp4", tmp / f"gate-{n}.nut", tmp / f"gate-{n}.frames.nut"
        # Alternate which run goes first, so neither gains from a warm cache.
        runs = [(kept, seen), (None, None)] if n % 2 else [(None, None), (kept, seen)]
        spent = {}
        for keep, keep_copy in runs:
            spent[keep is not None] = (_render_cpu(plan, info, clip, target, keep),
                                       _decode_cpu(prober, target, keep_copy))
        inspector = PyAvCopyInspector()  # a fresh one per job: nothing cached from the last
        inspector.inspect_blocking(clip, target, plan, kept, seen)
        render += spent[False][0]
        kept_extra += sum(spent[True]) - sum(spent[False])
        inspect += inspector.cpu_seconds
        for path in (target, kept, seen):
            path.unlink()
    return {"gate_cpu_share": round((inspect + kept_extra) / render, 4),
            "render_cpu_s_per_copy": round(render / jobs, 3), "gate_inspect_cpu_s_per_copy": round(inspect / jobs, 4),
            "gate_kept_frames_cpu_s_per_copy": round(kept_extra / jobs, 4)}


def plain(clip: Path, clips: int, workers: int, tmp: Path) -> float:
    jobs = [(str(clip), n, str(tmp / f"plain-{n}.mp4")) for n in range(clips)]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        list(pool.map(_plain_copy, jobs[:workers]))  # warm the processes, untimed
        began = time.perf_counter()
        list(pool.map(_plain_copy, jobs))
        return time.perf_counter() - began


def one_order_of_five(pg: Any, clip: Path, workers: int, tmp: Path) -> dict[str, float]:
    url = pg.url("five")
    if pg.database_exists("five"):
        pg.drop_database("five")
    migrate.init(url, capacity=10)
    running = _start_workers(url, workers, tmp)
    began = time.perf_counter()
    uvloop.run(_orders(url, tmp / "objects", clip, 1, 5))
    first = None
    while _count(url, "SELECT count(*) FROM orders WHERE state = 'done'") < 1:
        if first is None and _count(url, "SELECT count(*) FROM job_checkpoints") >= 1:
            first = time.perf_counter() - began
        time.sleep(0.02)
    total = time.perf_counter() - began
    _stop(running)
    return {"first_copy_s": round(first or total, 2), "total_s": round(total, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--max-workers", type=int, default=4)
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
    with server() as pg, tempfile.TemporaryDirectory(prefix="videocopies-bench-") as scratch:
        tmp = Path(scratch)
        clip = make_clip(tmp / "clip.mp4", seconds=3, width=720, height=1280, fps=25)
        for workers in range(1, args.max_workers + 1):
            measured = pipeline(pg, clip, args.clips, workers, tmp)
            raw = plain(clip, args.clips, workers, tmp)
            runs.append({
                "workers": workers,
                "jobs_per_min": round(args.clips / measured["seconds"] * 60, 1),
                "raw_jobs_per_min": round(args.clips / raw * 60, 1),
                "ratio_to_raw": round(raw / measured["seconds"], 3),
                "worker_rss_mib": round(measured["worker_rss_mib"], 1),
            })
            print(runs[-1], file=sys.stderr, flush=True)
        best = max(runs, key=lambda r: r["jobs_per_min"])
        five = one_order_of_five(pg, clip, best["workers"], tmp)
        gate = gate_cpu_share(clip, args.clips, tmp)
    sampler.done.set()
    emit({"bench": "worker_throughput", **best, "ffmpeg_rss_mib": round(sampler.peak_mib, 1),
          **five, **gate, "runs": runs})


if __name__ == "__main__":
    main()
