"""Copies are made to fit what the Bot API server accepts in one upload: the render caps the
copy's rate, and a copy still over the limit is given up (not stored, not sent, not charged)
instead of being sent for Telegram to refuse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import av
import pytest
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
from videocopies.domain.effects import EffectsPlan
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

USER = UserId(1)


@pytest.fixture(scope="module")
def grainy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Noise does not compress: an uncapped copy of it is large for its length.
    return make_clip(tmp_path_factory.mktemp("cap") / "grainy.mp4", seconds=3, noise=40, qp=12)


def seconds(path: Path) -> float:
    with av.open(str(path)) as container:
        assert container.duration is not None
        return container.duration / av.time_base


async def test_a_capped_render_fits_the_upload_limit_and_keeps_the_whole_video(grainy: Path, tmp_path: Path) -> None:
    plan = EffectsPlan.derive(seed=3, copy_index=0)
    await FfmpegTranscoder().render(plan, grainy, free := tmp_path / "free.mp4")
    limit = free.stat().st_size // 4

    await FfmpegTranscoder(max_copy_bytes=limit).render(plan, grainy, capped := tmp_path / "capped.mp4")

    print(f"uncapped {free.stat().st_size} bytes, limit {limit}, capped {capped.stat().st_size}")
    assert capped.stat().st_size <= limit
    assert seconds(capped) == pytest.approx(seconds(free), abs=0.1)


async def test_a_copy_over_the_send_limit_is_given_up_not_stored_and_not_charged(grainy: Path, tmp_path: Path) -> None:
    service = InMemoryService(settings=Settings(quote_secret=b"cap" * 11))
    clock = ManualClock(datetime.now(UTC))
    service.gateways.clock.override(providers.Object(clock))
    cases, store = service.use_cases, FilesystemObjectStore(tmp_path / "objects")
    await store.put_file("sources/1/grainy.mp4", grainy)
    await cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, timedelta(days=1)))
    quote = await cases.quote_order()(uc.QuoteOrderCommand(USER, "sources/1/grainy.mp4", 1, grainy.stat().st_size))
    order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    work = tmp_path / "work"
    worker = Worker(
        InProcessJobLeases(cases, WorkerId("w")), StoreJobFiles(store), FfmpegTranscoder(), PyAvProber(), LocalDisk(),
        WorkerSettings(WorkerId("w"), work, renew_every_s=5.0, max_copy_bytes=20_000),
    )

    assert await worker.run_once()

    memory = service.gateways.store()
    order = memory.orders[order_id]
    assert order.state is OrderState.DONE and order.copies[0].state is CopyState.DROPPED
    job = next(iter(memory.jobs.values()))
    assert job.checkpoints[0].is_given_up and job.checkpoints[0].failure == "too_large"
    assert [m.kind for m in memory.outbox.values()].count("copy_ready") == 0
    (failed,) = [m for m in memory.outbox.values() if m.kind == "copy_failed"]
    assert failed.payload["reason"] == "too_large"
    assert [p.name for p in (tmp_path / "objects").rglob("*") if p.is_file()] == ["grainy.mp4"]
    balance = memory.accounts[USER].balance(clock.now())
    assert (balance.available, balance.reserved, balance.debited) == (50, 0, 0)
    assert [p for p in work.rglob("*") if p.is_file()] == []
