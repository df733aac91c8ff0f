"""Source limits on real files made with FFmpeg. Edge's inspection applies them to what the
file holds, whatever Telegram said about it, and no file can make it open anything else,
run past its budget or fail with anything but a refusal; the worker applies them again and
fails a job over them for good, refunded."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from hostile import BAD, make_bad
from media import make_clip
from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.inprocess import InProcessJobLeases, LocalDisk, StoreJobFiles
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.adapters.probe import (
    FrameTooLarge,
    Limits,
    PyAvProber,
    SourceFacts,
    SourceTooLong,
    inspect_source,
)
from videocopies.adapters.probe.source import inspect_source_blocking
from videocopies.application import use_cases as uc
from videocopies.application.worker import Worker
from videocopies.application.worker_settings import WorkerSettings
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import JobState
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings
from videocopies.telegram_limits import MIB, BotApiServer, MediaLimits

CLOUD = MediaLimits.from_env({})


def ffmpeg(*args: str, stdout: Path | None = None) -> None:
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    if stdout is None:
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)
        return
    with stdout.open("wb") as out:
        subprocess.run([*cmd, "pipe:1"], check=True, stdout=out, stderr=subprocess.PIPE, timeout=120)


def tiny_video(seconds: float, fps: float = 1) -> list[str]:
    return ["-f", "lavfi", "-i", f"color=c=gray:s=64x64:r={fps}:d={seconds}", "-c:v", "libx264", "-preset", "ultrafast"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sources")
    f = {"clip": make_clip(d / "clip.mp4", seconds=3)}
    # Thirty minutes at one tiny frame a second: 1800 frames, a few kilobytes.
    ffmpeg(*tiny_video(1800), "-f", "mp4", str(f.setdefault("half_hour", d / "half_hour.mp4")))
    # Matroska written to a pipe cannot go back to write its duration: the header has none.
    ffmpeg("-i", str(f["half_hour"]), "-c", "copy", "-f", "matroska", stdout=f.setdefault("no_header", d / "nh.mkv"))
    ffmpeg("-i", str(f["clip"]), "-c", "copy", "-f", "matroska", stdout=f.setdefault("short_no_header", d / "snh.mkv"))
    ffmpeg("-f", "lavfi", "-i", "color=c=black:s=3840x2160:r=120:d=0.05", "-c:v", "libx264", "-preset", "ultrafast",
           str(f.setdefault("4k120", d / "4k120.mp4")))
    ffmpeg("-f", "lavfi", "-i", "color=c=black:s=1920x1080:r=60:d=0.1", "-c:v", "libx264", "-preset", "ultrafast",
           str(f.setdefault("1080p60", d / "1080p60.mp4")))
    ffmpeg("-display_rotation:v", "90", "-i", str(f["clip"]), "-c", "copy", str(f.setdefault("rotated", d / "r.mp4")))
    (f.setdefault("text", d / "notes.mp4")).write_text("this is not a video, only text named like one\n" * 50)
    return f


async def test_a_three_second_clip_is_measured_and_passes(files: dict[str, Path]) -> None:
    facts = await inspect_source(files["clip"], CLOUD)

    assert facts.refusal is None, facts.reason
    assert (facts.width, facts.height, facts.fps, facts.size) == (360, 640, 25.0, files["clip"].stat().st_size)
    assert facts.duration_s == pytest.approx(3.0, abs=0.1)


async def test_the_size_as_displayed_follows_the_rotation(files: dict[str, Path]) -> None:
    facts = await inspect_source(files["rotated"], CLOUD)

    assert (facts.width, facts.height, facts.refusal) == (640, 360, None)


async def test_a_thirty_minute_video_is_refused_as_too_long_from_its_header(files: dict[str, Path]) -> None:
    facts = await inspect_source(files["half_hour"], CLOUD)

    assert (facts.refusal, facts.duration_s) == ("too_long", pytest.approx(1800, abs=1))


async def test_without_a_duration_in_the_header_the_timestamps_measure_the_video(files: dict[str, Path]) -> None:
    long, short = await inspect_source(files["no_header"], CLOUD), await inspect_source(files["short_no_header"], CLOUD)

    assert long.refusal == "too_long" and long.duration_s > CLOUD.max_seconds
    assert short.refusal is None, short.reason
    assert short.duration_s == pytest.approx(3.0, abs=0.1)


async def test_a_4k_120_fps_video_is_refused_for_its_pixel_rate_but_1080p60_passes(files: dict[str, Path]) -> None:
    big, full_hd = await inspect_source(files["4k120"], CLOUD), await inspect_source(files["1080p60"], CLOUD)

    assert (big.refusal, big.width, big.height, big.fps) == ("too_large_frame", 3840, 2160, 120.0)
    assert full_hd.refusal is None, full_hd.reason


async def test_text_named_like_a_video_is_not_a_video(files: dict[str, Path]) -> None:
    assert (await inspect_source(files["text"], CLOUD)).refusal == "not_a_video"


async def test_a_file_over_the_byte_limit_is_refused_without_being_opened(tmp_path: Path) -> None:
    junk = tmp_path / "big.mp4"
    with junk.open("wb") as f:  # junk: opened, it would be refused as not a video instead
        f.truncate(2 * MIB)

    facts = await inspect_source(junk, MediaLimits(BotApiServer.cloud(), max_bytes=MIB))

    assert (facts.refusal, facts.size, facts.duration_s) == ("too_big", 2 * MIB, 0.0)


async def test_the_limits_come_from_the_setting(files: dict[str, Path]) -> None:
    strict = MediaLimits.from_env({"VIDEOCOPIES_MAX_VIDEO_S": "2", "VIDEOCOPIES_MAX_PIXEL_RATE": "1000000"})
    lax = MediaLimits.from_env({"VIDEOCOPIES_TELEGRAM_LOCAL": "1", "VIDEOCOPIES_MAX_VIDEO_S": "3600"})

    assert (await inspect_source(files["clip"], strict)).refusal == "too_large_frame"  # 360×640×25 = 5.8 M/s
    assert (await inspect_source(files["half_hour"], lax)).refusal is None


EXPECTED = {
    "empty": "not_a_video", "random_bytes": "not_a_video", "truncated": "unreadable", "audio_only": "not_a_video",
    "huge_header": "too_large_frame", "very_long": "too_long", "over_limit": "too_big", "image": "not_a_video",
    "zip": "not_a_video", "dash_manifest": "not_a_video", "hls_playlist": "not_a_video", "ffconcat": "not_a_video",
    "image_sequence": "not_a_video", "length_lie": "unreadable",
    # Its first picture is the size the header says: only a full decode sees the lie (copies make's),
    # and a render's decoder refuses the larger pictures.
    "size_lie": None,
}


@pytest.mark.parametrize("name", sorted(BAD))
async def test_every_hostile_file_gets_its_refusal(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = make_bad(name, tmp_path_factory.getbasetemp() / "hostile", over_bytes=CLOUD.max_bytes)

    facts = await inspect_source(path, CLOUD)

    assert facts.refusal == EXPECTED[name], facts.reason


async def test_a_playlist_or_a_list_of_files_is_not_a_video(tmp_path: Path) -> None:
    # FFmpeg would follow either to other files on this machine (another user's video, say)
    # and measure, then render, what they hold.
    ffmpeg("-i", str(make_clip(tmp_path / "inner.mp4", seconds=1)), "-c", "copy", "-f", "mpegts",
           str(tmp_path / "inner.ts"))
    playlist = tmp_path / "playlist.m3u8"
    playlist.write_text("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\ninner.ts\n#EXT-X-ENDLIST\n")
    concat = tmp_path / "list.mp4"
    concat.write_text("ffconcat version 1.0\nfile inner.mp4\n")

    for path in (playlist, concat):
        assert (await inspect_source(path, CLOUD)).refusal == "not_a_video"


async def test_what_is_not_a_regular_file_is_unreadable(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)  # opened, a FIFO with no writer would block the thread forever

    for path in (fifo, tmp_path, tmp_path / "missing.mp4"):
        assert (await inspect_source(path, CLOUD)).refusal == "unreadable"


def test_an_inspection_past_its_budget_stops_with_unreadable(files: dict[str, Path]) -> None:
    ticks = iter(range(1000))  # a clock that moves one second every time it is read

    facts = inspect_source_blocking(files["no_header"], MediaLimits.from_env({}), 5, clock=lambda: next(ticks))

    assert (facts.refusal, facts.reason) == ("unreadable", "inspection ran past its time budget")


async def test_inspecting_is_quick_and_never_decodes_the_whole_video(files: dict[str, Path]) -> None:
    started = time.perf_counter()
    facts: list[SourceFacts] = [await inspect_source(files[name], CLOUD) for name in ("clip", "no_header", "4k120")]
    took = time.perf_counter() - started

    assert [f.refusal for f in facts] == [None, "too_long", "too_large_frame"]
    assert took < 1.0


@pytest.mark.parametrize(
    ("name", "error"), [("half_hour", SourceTooLong), ("no_header", SourceTooLong), ("4k120", FrameTooLarge)]
)
async def test_the_workers_prober_applies_the_same_limits(files: dict[str, Path], name: str, error: type) -> None:
    prober = PyAvProber(limits=Limits.of(CLOUD))

    with pytest.raises(error) as refused:
        await prober.probe(files[name], full_decode=False)

    assert refused.value.permanent
    assert (await prober.probe(files["clip"], full_decode=False)).duration_s == pytest.approx(3.0, abs=0.1)


class CountingTranscoder(FfmpegTranscoder):
    def __init__(self) -> None:
        super().__init__()
        self.renders = 0

    async def render(self, *args: Any, **kwargs: Any) -> None:
        self.renders += 1
        await super().render(*args, **kwargs)


async def test_a_job_whose_source_lasts_thirty_minutes_fails_finally_and_refunds(
    files: dict[str, Path], tmp_path: Path
) -> None:
    service = InMemoryService(settings=Settings(quote_secret=b"limits" * 6))
    clock = ManualClock(datetime.now(UTC))
    service.gateways.clock.override(providers.Object(clock))
    cases, store = service.use_cases, FilesystemObjectStore(tmp_path / "objects")
    await store.put_file("sources/1/long.mp4", files["half_hour"])
    await cases.grant_coins()(uc.GrantCoinsCommand(UserId(1), LotKind.START, 50, timedelta(days=1)))
    size = files["half_hour"].stat().st_size
    quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(1), "sources/1/long.mp4", 5, size))
    order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(1), quote.quote_id, quote.token))
    transcoder, work = CountingTranscoder(), tmp_path / "work"
    worker = Worker(
        InProcessJobLeases(cases, WorkerId("w")), StoreJobFiles(store), transcoder, PyAvProber(), LocalDisk(),
        WorkerSettings(WorkerId("w"), work), source_prober=PyAvProber.for_sources(MediaLimits.from_env({})),
    )

    assert await worker.run_once()

    memory = service.gateways.store()
    job = next(iter(memory.jobs.values()))
    assert (job.state, job.attempts) == (JobState.FAILED, 1)  # final: not queued for another worker
    assert "longer than the 180 s limit" in (job.last_error or "")
    assert memory.orders[order_id].state is OrderState.FAILED
    balance = memory.accounts[UserId(1)].balance(clock.now())
    assert (balance.available, balance.reserved, balance.debited) == (50, 0, 0)
    assert transcoder.renders == 0
    assert [p for p in work.rglob("*") if p.is_file()] == []
