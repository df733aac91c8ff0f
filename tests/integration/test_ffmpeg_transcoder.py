"""FfmpegTranscoder against the real FFmpeg binary, on clips generated with lavfi."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import attrs
import av
import pytest

from media import make_clip
from videocopies.adapters.ffmpeg import (
    FfmpegTranscoder,
    SourceInfo,
    TranscodeFailed,
    TranscodeStalled,
    TranscodeTimeout,
)
from videocopies.domain.effects import EffectsPlan

CONTAINER_TAGS = {"major_brand", "minor_version", "compatible_brands"}


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clips")
    return {
        "sound": make_clip(folder / "sound.mp4", metadata={"title": "secret source", "comment": "tag"}),
        "silent_odd": make_clip(folder / "silent_odd.mp4", width=361, height=641, audio=False),
        "long": make_clip(folder / "long.mp4", seconds=12),
    }


def children() -> set[int]:
    """Live child processes of this test process, read from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid() and state != "Z":
            found.add(int(entry.name))
    return found


def decoded(path: Path) -> dict:
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        frames = sum(1 for _ in container.decode(video=0))
        container.seek(0)
        samples = sum(f.samples for f in container.decode(audio=0)) if container.streams.audio else 0
        return {
            "size": (video.codec_context.width, video.codec_context.height),
            "duration": container.duration / 1_000_000,
            "frames": frames,
            "audio": bool(container.streams.audio),
            "samples": samples,
            "tags": dict(container.metadata),
            "stream_tags": [dict(s.metadata) for s in container.streams],
        }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_copy_keeps_the_size_follows_the_speed_and_carries_no_tags(clips, tmp_path):
    plan = EffectsPlan.derive(seed=7, copy_index=0)
    target = tmp_path / "copy.mp4"
    await FfmpegTranscoder().render(plan, clips["sound"], target)

    out = decoded(target)
    assert out["size"] == (360, 640)
    assert out["duration"] == pytest.approx(2 / plan.speed, abs=0.1)
    assert out["frames"] == pytest.approx(50 / plan.speed, abs=1)
    assert out["audio"] and out["samples"] / 48_000 == pytest.approx(2 / plan.speed, abs=0.1)
    assert set(out["tags"]) <= CONTAINER_TAGS
    assert not any("encoder" in tags for tags in out["stream_tags"])
    data = target.read_bytes()
    assert b"x264 - core" in clips["sound"].read_bytes()
    for marker in (b"x264 - core", b"Lavf", b"Lavc", b"secret source"):
        assert marker not in data


async def test_different_plans_give_different_files_and_pitch_is_optional(clips, tmp_path):
    first = EffectsPlan.derive(seed=7, copy_index=0)
    second = attrs.evolve(EffectsPlan.derive(seed=7, copy_index=1), pitch=None)
    transcoder = FfmpegTranscoder()
    await transcoder.render(first, clips["sound"], tmp_path / "a.mp4")
    await transcoder.render(second, clips["sound"], tmp_path / "b.mp4")
    assert sha256(tmp_path / "a.mp4") != sha256(tmp_path / "b.mp4")
    assert decoded(tmp_path / "b.mp4")["audio"]


async def test_a_silent_odd_sized_source_gives_a_silent_even_sized_copy(clips, tmp_path):
    target = tmp_path / "copy.mp4"
    await FfmpegTranscoder().render(EffectsPlan.derive(seed=3, copy_index=2), clips["silent_odd"], target)
    out = decoded(target)
    assert out["size"] == (360, 640)
    assert not out["audio"]
    assert out["frames"] > 40


async def test_progress_is_reported_up_to_the_end(clips, tmp_path):
    seen: list[float] = []
    await FfmpegTranscoder().render(
        EffectsPlan.derive(seed=1, copy_index=0), clips["sound"], tmp_path / "copy.mp4", on_progress=seen.append
    )
    assert seen and seen[-1] == 1.0
    assert seen == sorted(seen)


async def test_cancelling_mid_render_kills_ffmpeg_and_leaves_no_file(clips, tmp_path):
    target = tmp_path / "copy.mp4"
    before = children()
    render = asyncio.create_task(
        FfmpegTranscoder(threads=1).render(EffectsPlan.derive(seed=1, copy_index=0), clips["long"], target)
    )
    for _ in range(200):
        if target.exists() and children() - before:
            break
        await asyncio.sleep(0.02)
    assert target.exists() and not render.done()
    render.cancel()
    with pytest.raises(asyncio.CancelledError):
        await render
    assert children() == before
    assert not target.exists()


@pytest.fixture
def never_ready(tmp_path: Path) -> tuple[Path, SourceInfo]:
    """A FIFO nobody writes to: FFmpeg blocks opening it and never reports progress."""
    fifo = tmp_path / "never.mp4"
    os.mkfifo(fifo)
    return fifo, SourceInfo(width=360, height=640, duration_s=2.0, has_audio=True, fps=25)


async def test_a_stalled_render_is_killed(never_ready, tmp_path):
    source, info = never_ready
    target = tmp_path / "copy.mp4"
    before = children()
    transcoder = FfmpegTranscoder(stall_s=0.5, grace_s=0.3)
    with pytest.raises(TranscodeStalled):
        await transcoder.render(EffectsPlan.derive(seed=1, copy_index=0), source, target, info=info)
    assert children() == before
    assert not target.exists()


async def test_a_render_past_its_time_limit_is_killed(never_ready, tmp_path):
    source, info = never_ready
    target = tmp_path / "copy.mp4"
    before = children()
    transcoder = FfmpegTranscoder(stall_s=30, grace_s=0.3, timeout=lambda _source, _speed: 0.5)
    with pytest.raises(TranscodeTimeout):
        await transcoder.render(EffectsPlan.derive(seed=1, copy_index=0), source, target, info=info)
    assert children() == before
    assert not target.exists()


async def test_garbage_is_refused_before_ffmpeg_runs(tmp_path):
    source = tmp_path / "garbage.mp4"
    source.write_bytes(os.urandom(64 * 1024))
    target = tmp_path / "copy.mp4"
    with pytest.raises(TranscodeFailed, match="not a readable video"):
        await FfmpegTranscoder().render(EffectsPlan.derive(seed=1, copy_index=0), source, target)
    assert not target.exists()


async def test_ffmpeg_failing_on_garbage_reports_its_stderr_and_leaves_no_file(tmp_path):
    source = tmp_path / "garbage.mp4"
    source.write_bytes(os.urandom(64 * 1024))
    target = tmp_path / "copy.mp4"
    info = SourceInfo(width=360, height=640, duration_s=2.0, has_audio=True, fps=25)
    with pytest.raises(TranscodeFailed) as failure:
        await FfmpegTranscoder().render(EffectsPlan.derive(seed=1, copy_index=0), source, target, info=info)
    assert type(failure.value) is TranscodeFailed
    assert "exited with" in failure.value.reason and failure.value.stderr_tail
    assert not target.exists()
