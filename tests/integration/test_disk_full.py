"""A disk that fills up during a job (a real, small tmpfs): the job fails cleanly, goes back
to the queue for another worker, and the working area is left empty."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
from videocopies.domain.jobs import JobState
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


class FillsTheDiskAfterFirstCopy:
    """Another tenant takes the rest of the disk once the first copy is done."""

    def __init__(self, inner: FfmpegTranscoder, disk: Path) -> None:
        self._inner, self._disk, self.rendered = inner, disk, 0

    async def render(self, plan, source: Path, target: Path, **_: object) -> None:  # type: ignore[no-untyped-def]
        await self._inner.render(plan, source, target)
        self.rendered += 1
        if self.rendered == 1:
            with open(self._disk / "filler", "wb") as filler:
                try:
                    while True:
                        filler.write(b"\0" * 65536)
                except OSError:
                    pass


async def test_a_disk_that_fills_fails_the_job_cleanly_and_gives_it_back(small_disk: Path, tmp_path: Path) -> None:
    service = InMemoryService(settings=Settings(quote_secret=b"disk" * 8))
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    cases = service.use_cases
    store = FilesystemObjectStore(tmp_path / "objects")
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    await store.put_file("sources/1/clip.mp4", clip)
    await cases.grant_coins()(uc.GrantCoinsCommand(UserId(1), LotKind.START, 50, timedelta(days=1)))
    quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(1), "sources/1/clip.mp4", 5, clip.stat().st_size))
    await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(1), quote.quote_id, quote.token))

    work = small_disk / "work"
    transcoder = FillsTheDiskAfterFirstCopy(FfmpegTranscoder(), small_disk)
    worker = Worker(
        InProcessJobLeases(cases, WorkerId("w")), StoreJobFiles(store), transcoder, PyAvProber(), LocalDisk(),
        WorkerSettings(WorkerId("w"), work, renew_every_s=5.0),
    )
    assert await worker.run_once()

    job = next(iter(service.gateways.store().jobs.values()))
    assert job.state is JobState.QUEUED and job.attempts == 1
    assert "No space left" in (job.last_error or "")
    # Copies stored before the disk filled stay checkpointed; the next worker does the rest.
    assert 0 in job.checkpoints and len(job.checkpoints) < 5
    assert [p for p in work.rglob("*") if p.is_file()] == []
