"""The worker role's composition root: one worker process, FFmpeg as its child, core over HTTP.

The worker holds no database credentials and loads no SQL driver: it talks to core's Job
API with its own node token. Configuration comes from the environment:
VIDEOCOPIES_CORE_URL, VIDEOCOPIES_NODE_TOKEN (or VIDEOCOPIES_NODE_TOKEN_FILE),
VIDEOCOPIES_WORK_DIR, and VIDEOCOPIES_STORE_DIR when it shares core's local storage (else
every object goes through URLs core signs for that job). Sources are held to the media
limits edge applies (MediaLimits.from_env) and copies made to fit the Bot API server's
upload limit. Each FFmpeg child gets VIDEOCOPIES_FFMPEG_MEMORY_MB of address space (4096).
SIGTERM gives the job in hand back and exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

import uvloop

from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.ffmpeg.limits import memory_bytes_from_env
from videocopies.adapters.http.client import (
    CoreClient,
    HttpJobLeases,
    SignedUrlJobFiles,
    WrongNode,
    core_client_from_env,
    identify,
)
from videocopies.adapters.inprocess import LocalDisk, StoreJobFiles
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.probe import PyAvProber
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.adapters.scratch import scratch_stats
from videocopies.application.worker import JobFiles, Worker, WorkerSettings
from videocopies.domain.shared import WorkerId
from videocopies.settings import quality_thresholds
from videocopies.telegram_limits import MediaLimits

log = logging.getLogger("videocopies.worker")


def job_files(env: dict[str, str], core: CoreClient) -> JobFiles:
    if directory := env.get("VIDEOCOPIES_STORE_DIR"):
        return StoreJobFiles(FilesystemObjectStore(Path(directory)))
    return SignedUrlJobFiles(core)


async def serve(env: dict[str, str]) -> int:
    core_url = env.get("VIDEOCOPIES_CORE_URL") or "http://127.0.0.1:8700"
    core = core_client_from_env(env, retry_for_s=float(env.get("VIDEOCOPIES_RETRY_FOR_S", "120")))
    try:
        try:
            me = await identify(core, "worker")
        except WrongNode as refused:
            print(f"videocopies worker: {refused}", file=sys.stderr)
            return 2
        lease_ttl_s = float(env.get("VIDEOCOPIES_LEASE_TTL_S", "30"))
        limits = MediaLimits.from_env(env)
        settings = WorkerSettings(
            WorkerId(me["name"]), Path(env.get("VIDEOCOPIES_WORK_DIR", "var/work")), renew_every_s=lease_ttl_s / 3,
            max_copy_bytes=limits.upload_bytes,
        )
        leases = HttpJobLeases(
            core, wait_s=float(env.get("VIDEOCOPIES_CLAIM_WAIT_S", "20")),
            stats=lambda: scratch_stats(settings.work_root),
        )
        memory = memory_bytes_from_env(env)
        transcoder = FfmpegTranscoder(
            max_copy_bytes=limits.upload_bytes, memory_bytes=memory,
            max_pixel_work=limits.max_pixel_rate * limits.max_seconds,
        )
        worker = Worker(
            leases, job_files(env, core), transcoder, FfmpegDecodingProber(memory_bytes=memory),
            LocalDisk(), settings, inspector=PyAvCopyInspector(), thresholds=quality_thresholds(env),
            source_prober=PyAvProber.for_sources(limits),
        )
        if removed := worker.remove_orphans():
            log.info("removed %d leftovers of an earlier run", removed)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: (stopping.set(), worker.stop()))
        log.info("worker %s polling %s", me["name"], core_url)
        while not stopping.is_set():
            # A parked claim is abandoned at once on SIGTERM; a job in hand is given back.
            polling = asyncio.ensure_future(worker.run_once())
            stopped = asyncio.ensure_future(stopping.wait())
            await asyncio.wait([polling, stopped], return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not polling.done() and worker.busy:
                await polling  # the worker is finishing its job (given back on stop)
            elif not polling.done():
                polling.cancel()
                await asyncio.gather(polling, return_exceptions=True)
            elif polling.exception() is not None:
                log.warning("worker round failed: %r", polling.exception())
                await asyncio.sleep(1.0)
        return 0
    finally:
        await core.close()


def main() -> int:
    return uvloop.run(serve(dict(os.environ)))
