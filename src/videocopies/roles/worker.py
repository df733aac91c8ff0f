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

import uvloop

from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.inprocess import InProcessJobLeases, LocalDisk
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.adapters.postgres import migrate
from videocopies.adapters.probe import PyAvProber
from videocopies.application.ports import ObjectStore
from videocopies.application.worker import Worker, WorkerSettings
from videocopies.domain.shared import WorkerId
from videocopies.roles.containers import PostgresService
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


async def serve(database_url: str, env: dict[str, str]) -> None:
    settings = Settings.from_env(env)
    service = PostgresService(settings=settings)
    service.gateways.config.from_dict(
        {"database_url": database_url, "pool_size": 3, "listen_url": env.get("VIDEOCOPIES_LISTEN_URL")}
    )
    worker_id = WorkerId(env.get("VIDEOCOPIES_WORKER_ID") or f"{socket.gethostname()}-{os.getpid()}")
    work_root = Path(env.get("VIDEOCOPIES_WORK_DIR", "var/work"))
    renew_every = settings.lease_ttl.total_seconds() / 3
    worker = Worker(
        InProcessJobLeases(service.use_cases, worker_id), object_store(env), FfmpegTranscoder(),
        PyAvProber(thread_type="SLICE"), LocalDisk(), WorkerSettings(worker_id, work_root, renew_every_s=renew_every),
    )
    removed = worker.remove_orphans()
    if removed:
        log.info("removed %d leftovers of an earlier run", removed)
    pool = service.gateways.pool()
    await pool.open(wait=True, timeout=30)
    notifier = service.gateways.notifier()
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
