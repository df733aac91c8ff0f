"""The worker role's composition root: one worker process, FFmpeg as its child, core over HTTP.

The worker holds no database credentials and loads no SQL driver: it talks to core's Job API
with its own node token. Its variables are read by settings/worker.py; its rounds run in
runtime/worker_loop.py. SIGTERM gives the job in hand back and exits."""

from __future__ import annotations

import logging

import attrs

from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.http.job_leases import HttpJobLeases, SignedUrlJobFiles
from videocopies.adapters.inprocess import LocalDisk, StoreJobFiles
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.probe import PyAvProber
from videocopies.adapters.process_figures import process_figures
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.adapters.scratch import scratch_stats
from videocopies.application.ports import JobFiles
from videocopies.application.worker import Worker
from videocopies.application.worker_figures import WorkerFigures
from videocopies.application.worker_settings import WorkerSettings
from videocopies.domain.shared import WorkerId
from videocopies.roles.nodes_link import core_client, identified
from videocopies.runtime.role_run import run_role
from videocopies.runtime.worker_loop import work_until_stopped
from videocopies.settings.worker import WorkerNodeSettings

log = logging.getLogger("videocopies.worker")


def job_files(settings: WorkerNodeSettings, core: CoreClient) -> JobFiles:
    """Core's local store when the worker shares it, else the URLs core signs for each job."""
    if settings.store_dir is not None:
        return StoreJobFiles(FilesystemObjectStore(settings.store_dir))
    return SignedUrlJobFiles(core)


def job_settings(settings: WorkerNodeSettings, name: str) -> WorkerSettings:
    return WorkerSettings(
        WorkerId(name), settings.work_dir, renew_every_s=settings.lease_ttl_s / 3,
        max_copy_bytes=settings.limits.upload_bytes,
    )


def build(settings: WorkerNodeSettings, name: str, core: CoreClient) -> Worker:
    """Wired by hand: dependency-injector's containers module loads FastAPI (its wiring) when it
    is installed, and a worker loads no web framework (tests/unit/test_worker_imports.py)."""
    job = job_settings(settings, name)
    limits, memory = settings.limits, settings.ffmpeg_memory_bytes
    transcoder = FfmpegTranscoder(
        max_copy_bytes=limits.upload_bytes, memory_bytes=memory,
        max_pixel_work=limits.max_pixel_rate * limits.max_seconds,
    )
    figures = WorkerFigures()

    def stats() -> dict[str, int]:
        """Sent with each claim; core's /metrics shows them per worker (videocopies_worker_*)."""
        return {**scratch_stats(job.work_root), **attrs.asdict(figures), **process_figures()}

    return Worker(
        HttpJobLeases(core, wait_s=settings.claim_wait_s, stats=stats),
        job_files(settings, core), transcoder, FfmpegDecodingProber(memory_bytes=memory), LocalDisk(), job,
        inspector=PyAvCopyInspector(), thresholds=settings.thresholds, source_prober=PyAvProber.for_sources(limits),
        figures=figures,
    )


async def serve(settings: WorkerNodeSettings) -> int:
    core = core_client(settings.core, settings.work_dir, retry_for_s=settings.retry_for_s)
    try:
        if (me := await identified(core, "worker")) is None:
            return 2
        worker = build(settings, me["name"], core)
        if removed := worker.remove_orphans():
            log.info("removed %d leftovers of an earlier run", removed)
        log.info("worker %s polling %s", me["name"], settings.core.url)
        await work_until_stopped(worker)
        return 0
    finally:
        await core.close()


def main() -> int:
    return run_role(serve(WorkerNodeSettings.from_env())) or 0  # None: stopped before it served
