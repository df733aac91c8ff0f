"""The whole path in one process on the embedded defaults, for `videocopies copies make`: a
private PostgreSQL, the queue, one in-process worker, FFmpeg, full-decode verification and a
local object store; the copies land in the output directory and the report is returned."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.inprocess import InProcessJobLeases, LocalDisk, StoreJobFiles
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.adapters.postgres import migrate
from videocopies.adapters.probe import PyAvProber
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.application import use_cases as uc
from videocopies.application.worker import Worker
from videocopies.application.worker_settings import WorkerSettings
from videocopies.domain.coins import LotKind
from videocopies.domain.effects import EffectsPlan
from videocopies.domain.objects.keys import named_source_key
from videocopies.domain.orders import OrderState
from videocopies.domain.quality import variant
from videocopies.domain.shared import UserId, WorkerId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.settings import DEFAULT_TARIFF, quality_thresholds
from videocopies.telegram_limits import DEFAULT_MAX_PIXEL_RATE

LOCAL_USER = UserId(1)
MAX_INPUT_SECONDS = 600.0


class TimedTranscoder:
    """Records how long each copy took to render, for the report."""

    def __init__(self, inner: FfmpegTranscoder) -> None:
        self._inner = inner
        self.seconds: dict[int, float] = {}

    async def render(
        self, plan: EffectsPlan, source: Path, target: Path, source_frames: Path | None = None, **more: Any
    ) -> None:
        began = time.perf_counter()
        await self._inner.render(plan, source, target, source_frames=source_frames, **more)
        self.seconds[plan.copy_index] = round(time.perf_counter() - began, 3)


async def make(
    source: Path, copies: int, out: Path, scratch: Path, memory_bytes: int, service_on: Callable[[str], Any]
) -> dict[str, Any]:
    """The copies of `source` in `out`, `scratch` for the objects and work; the report.
    `service_on`: the application's container over the database at a URL."""
    with LocalPostgres(tcp=False) as pg:  # its own directory, reachable by the server's user, removed on stop
        url = pg.url("videocopies")
        migrate.init(url, capacity=10)
        service = service_on(url)
        pool = service.gateways.pool()
        await pool.open(wait=True)
        try:
            cases = service.use_cases
            store = FilesystemObjectStore(scratch / "objects")
            key = named_source_key(LOCAL_USER, source.name)
            await store.put_file(key, source)
            price = DEFAULT_TARIFF.total(copies)
            await cases.grant_coins()(uc.GrantCoinsCommand(LOCAL_USER, LotKind.MANUAL, price, timedelta(hours=1)))
            quote = await cases.quote_order()(uc.QuoteOrderCommand(LOCAL_USER, key, copies, source.stat().st_size))
            order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(LOCAL_USER, quote.quote_id, quote.token))
            transcoder = TimedTranscoder(FfmpegTranscoder(
                memory_bytes=memory_bytes, max_pixel_work=DEFAULT_MAX_PIXEL_RATE * MAX_INPUT_SECONDS,
            ))
            worker = Worker(
                InProcessJobLeases(cases, WorkerId("local")), StoreJobFiles(store), transcoder, PyAvProber(),
                LocalDisk(),
                WorkerSettings(WorkerId("local"), scratch / "work", renew_every_s=5.0),
                inspector=PyAvCopyInspector(), thresholds=quality_thresholds(),
            )
            await worker.run_once()
            async with service.gateways.uow() as uow:
                order = await uow.orders.get(order_id)
                job = await uow.jobs.for_order(order_id)
            if order is None or job is None or order.state is not OrderState.DONE:
                reason = (job.last_error if job else None) or "the copies could not be made"
                raise RuntimeError(reason)
            report = []
            for index, artifact in sorted(job.checkpoints.items()):
                quality = artifact.quality
                rerenders = quality.attempt if quality else 0
                figures = {
                    "ssim": quality.ssim if quality else None,
                    "phash_distance": quality.phash_distance if quality else None,
                    "min_pair_distance": quality.min_pair_distance if quality else None,
                    "renders": rerenders + 1,
                    "effects": variant(job.plans[index], rerenders).to_dict(),
                }
                if artifact.is_given_up:
                    report.append({"copy": index + 1, "file": None, "failed": artifact.failure, **figures})
                    continue
                name = f"{source.stem}-copy{index + 1}.mp4"
                await store.get_file(artifact.object_key, out / name)
                report.append({
                    "copy": index + 1, "file": name, **figures,
                    "sha256": artifact.sha256, "size": artifact.size, "duration_s": round(artifact.duration_s, 3),
                    "width": artifact.width, "height": artifact.height,
                    "render_seconds": transcoder.seconds.get(index),
                })
            return {"source": source.name, "thresholds": attrs.asdict(quality_thresholds()), "copies": report}
        finally:
            await pool.close()

