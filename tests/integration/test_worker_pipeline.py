"""The worker end to end on real components: PostgreSQL, FFmpeg, PyAV and the filesystem
object store. Copies come out decodable, different from each other, and nothing stays on disk."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import av
from dependency_injector import providers

from media import make_clip
from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.inprocess import InProcessJobLeases, LocalDisk, StoreJobFiles
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.adapters.probe import PyAvProber
from videocopies.application import use_cases as uc
from videocopies.application.worker import Worker
from videocopies.application.worker_settings import WorkerSettings
from videocopies.domain.coins import LotKind
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import UserId, WorkerId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings


async def test_three_copies_rendered_on_real_components(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    service = PostgresService(settings=Settings(quote_secret=b"pipeline" * 4))
    service.gateways.config.from_dict({"database_url": pg_server.url(database), "pool_size": 4})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        cases = service.use_cases
        store = FilesystemObjectStore(tmp_path / "objects")
        clip = make_clip(tmp_path / "clip.mp4", seconds=2)
        await store.put_file("sources/1/clip.mp4", clip)
        user = UserId(1)
        await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, 50, timedelta(days=1)))
        quote = await cases.quote_order()(
            uc.QuoteOrderCommand(user, "sources/1/clip.mp4", 5, clip.stat().st_size)
        )
        order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))

        settings = WorkerSettings(WorkerId("w1"), tmp_path / "work", renew_every_s=1.0)
        worker = Worker(
            InProcessJobLeases(cases, WorkerId("w1")), StoreJobFiles(store), FfmpegTranscoder(), PyAvProber(),
            LocalDisk(), settings,
        )
        assert await worker.run_once()

        async with service.gateways.uow() as uow:
            order = await uow.orders.get(order_id)
            job = await uow.jobs.for_order(order_id)
        assert order.state is OrderState.DONE
        digests = set()
        for index, artifact in sorted(job.checkpoints.items()):
            local = tmp_path / f"got-{index}.mp4"
            await store.get_file(artifact.object_key, local)
            assert hashlib.sha256(local.read_bytes()).hexdigest() == artifact.sha256
            with av.open(str(local)) as container:
                frames = sum(1 for _ in container.decode(video=0))
            assert frames > 40 and (artifact.width, artifact.height) == (360, 640)
            digests.add(artifact.sha256)
        assert len(digests) == 5
        assert [p for p in (tmp_path / "work").rglob("*") if p.is_file()] == []
    finally:
        await pool.close()
