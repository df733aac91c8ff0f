"""Attack: a source that makes FFmpeg work, allocate or write without end (a header that lies
about its length or size, or just a heavy video). The worker's FFmpeg runs under CPU-time,
memory and file-size limits set in the child, and is stopped and reported in one line."""

from __future__ import annotations

import os
import time
from pathlib import Path

import av
import pytest

from hostile import make_bad
from media import make_clip
from videocopies.adapters.ffmpeg import FfmpegTranscoder, SourceTooHeavy, TranscodeLimited
from videocopies.domain.effects import EffectsPlan

PLAN = EffectsPlan.derive(seed=1, copy_index=0)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clips")
    return {
        "heavy": make_clip(folder / "heavy.mp4", seconds=6, width=720, height=1280),
        "short": make_clip(folder / "short.mp4", seconds=2),
    }


def children() -> set[int]:
    """Live child processes of this test process."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if int(ppid) == os.getpid() and state != "Z":
            found.add(int(entry.name))
    return found


async def test_a_render_past_its_cpu_time_is_killed_and_reported_in_one_line(clips, tmp_path):
    target, frames = tmp_path / "copy.mp4", tmp_path / "frames.nut"
    before = children()
    started = time.monotonic()

    with pytest.raises(TranscodeLimited) as stopped:
        await FfmpegTranscoder(cpu=lambda _source, _speed: 1).render(
            PLAN, clips["heavy"], target, source_frames=frames
        )

    assert str(stopped.value) == "ffmpeg was killed at its CPU-time limit of 1 s"
    assert time.monotonic() - started < 20
    assert children() == before
    assert list(tmp_path.iterdir()) == []


async def test_a_render_writing_past_its_file_size_limit_is_stopped(clips, tmp_path):
    target = tmp_path / "copy.mp4"

    with pytest.raises(TranscodeLimited) as stopped:
        await FfmpegTranscoder(max_output_bytes=32 * 1024).render(PLAN, clips["short"], target)

    assert str(stopped.value) == "ffmpeg's output passed its size limit of 32768 bytes"
    assert list(tmp_path.iterdir()) == []


async def test_a_render_past_its_memory_limit_is_stopped(clips, tmp_path):
    with pytest.raises(TranscodeLimited) as stopped:
        await FfmpegTranscoder(memory_bytes=300 * 2**20).render(PLAN, clips["short"], tmp_path / "copy.mp4")

    assert "memory limit of 300 MiB" in str(stopped.value) and "\n" not in str(stopped.value)
    assert list(tmp_path.iterdir()) == []


async def test_a_source_beyond_the_pixel_work_allowed_is_refused_unrendered(clips, tmp_path):
    before = children()
    # 720×1280 at 25 frames a second for 6 s: 138 million pixels.
    with pytest.raises(SourceTooHeavy, match="over the 0.1 billion limit"):
        await FfmpegTranscoder(max_pixel_work=100e6).render(PLAN, clips["heavy"], tmp_path / "copy.mp4")
    assert children() == before
    assert list(tmp_path.iterdir()) == []


async def test_a_stream_running_past_what_its_header_says_makes_no_longer_a_copy(tmp_path):
    # Every header says one second; the frames run for two hours.
    liar = make_bad("length_lie", tmp_path / "in", over_bytes=0)
    target = tmp_path / "copy.mp4"
    started = time.monotonic()

    await FfmpegTranscoder().render(PLAN, liar, target)

    with av.open(str(target)) as copy:
        assert copy.duration / av.time_base < 3
    assert time.monotonic() - started < 30


async def test_pictures_larger_than_the_header_said_are_not_rendered(tmp_path):
    # 25 pictures of 320×240, as the header says, then two of 8000×8000 it does not mention.
    liar = make_bad("size_lie", tmp_path / "in", over_bytes=0)
    target = tmp_path / "copy.mp4"

    await FfmpegTranscoder().render(PLAN, liar, target)

    with av.open(str(target)) as copy:
        sizes = [(picture.width, picture.height) for picture in copy.decode(video=0)]
    assert set(sizes) == {(320, 240)}
    assert len(sizes) <= 25  # only the pictures of the size the header gave reached the copy
