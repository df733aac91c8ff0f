"""The worker role's composition root: one worker process, FFmpeg as its child.

Configuration comes from the environment: VIDEOCOPIES_DATABASE_URL (reached in-process for
now; the Job API replaces it), VIDEOCOPIES_WORKER_ID, VIDEOCOPIES_WORK_DIR, and either
VIDEOCOPIES_STORE_DIR (a local store) or VIDEOCOPIES_S3_ENDPOINT / _S3_BUCKET /
_S3_ACCESS_KEY / _S3_SECRET_KEY. SIGTERM gives the job in hand back and exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from types import SimpleNamespace

import uvloop

from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.inprocess import InProcessJobLeases, LocalDisk
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.notifier import PostgresNotifier
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.adapters.system import RandomIds, SystemClock
from videocopies.application import use_cases as uc
from videocopies.application.ports import ObjectStore
from videocopies.application.worker import Worker, WorkerSettings
from videocopies.domain.shared import WorkerId
from videocopies.settings import Settings

log = logging.getLogger("videocopies.worker")


def object_store(env: dict[str, str]) -> ObjectStore:
    if endpoint := env.get("VIDEOCOPIES_S3_ENDPOINT"):
        from videocopies.adapters.objectstore.s3 import S3ObjectStore

        return S3ObjectStore(
            env["VIDEOCOPIES_S3_BUCKET"], endpoint, env["VIDEOCOPIES_S3_ACCESS_KEY"], env["VIDEOCOPIES_S3_SECRET_KEY"]
        )
    if directory := env.get("VIDEOCOPIES_STORE_DIR"):
        return FilesystemObjectStore(Path(directory))
    raise SystemExit("videocopies worker: set VIDEOCOPIES_STORE_DIR or the VIDEOCOPIES_S3_* settings")


def _use_cases(pool: object, settings: Settings, listen_url: str) -> tuple[SimpleNamespace, PostgresNotifier]:
    """Only what a worker calls, wired by hand: the declarative containers import
    dependency-injector's wiring, which loads FastAPI, and a worker must stay small."""
    clock, ids, notifier = SystemClock(), RandomIds(), PostgresNotifier(listen_url)

    def uow() -> PostgresUnitOfWork:
        return PostgresUnitOfWork(pool)  # type: ignore[arg-type]

    cases = SimpleNamespace(
        claim_job=uc.ClaimJob(uow, clock, ids, settings.lease_ttl),
        renew_lease=uc.RenewLease(uow, clock, settings.lease_ttl),
        checkpoint_copy=uc.CheckpointCopy(uow, clock),
        complete_job=uc.CompleteJob(uow, clock),
        fail_job=uc.FailJob(uow, clock, notifier),
        acknowledge_cancel=uc.AcknowledgeCancel(uow, clock),
    )
    # InProcessJobLeases asks for each use case by calling it, as it would a provider.
    return SimpleNamespace(**{name: (lambda case=case: case) for name, case in vars(cases).items()}), notifier


async def serve(database_url: str, env: dict[str, str]) -> None:
    settings = Settings.from_env(env)
    pool = make_pool(database_url, min_size=1, max_size=3)
    cases, notifier = _use_cases(pool, settings, env.get("VIDEOCOPIES_LISTEN_URL") or database_url)
    worker_id = WorkerId(env.get("VIDEOCOPIES_WORKER_ID") or f"{socket.gethostname()}-{os.getpid()}")
    work_root = Path(env.get("VIDEOCOPIES_WORK_DIR", "var/work"))
    renew_every = settings.lease_ttl.total_seconds() / 3
    worker = Worker(
        InProcessJobLeases(cases, worker_id), object_store(env), FfmpegTranscoder(),
        FfmpegDecodingProber(), LocalDisk(), WorkerSettings(worker_id, work_root, renew_every_s=renew_every),
    )
    removed = worker.remove_orphans()
    if removed:
        log.info("removed %d leftovers of an earlier run", removed)
    await pool.open(wait=True, timeout=30)
    await notifier.start()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: (stopping.set(), worker.stop()))
    try:
        while not stopping.is_set():
            ticket = notifier.ticket()
            if not await worker.run_once() and not stopping.is_set():
                waiting = asyncio.ensure_future(notifier.wait(ticket, 5.0))
                stopped = asyncio.ensure_future(stopping.wait())
                await asyncio.wait([waiting, stopped], return_when=asyncio.FIRST_COMPLETED)
                waiting.cancel()
                stopped.cancel()
    finally:
        await notifier.stop()
        await pool.close()


def main(database_url: str) -> int:
    try:
        migrate.check(database_url)
    except migrate.SchemaError as refused:
        print(f"videocopies worker: {refused}", file=sys.stderr)
        return 2
    uvloop.run(serve(database_url, dict(os.environ)))
    return 0
