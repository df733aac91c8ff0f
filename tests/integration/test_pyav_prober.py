"""PyAvProber on real files made with FFmpeg: good clips are measured, bad ones refused with a
reason, and rendered copies are held against their source."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from pathlib import Path

import pytest

from media import make_clip
from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.probe import (
    CopyRejected,
    CopyTolerance,
    CorruptMedia,
    InvalidMedia,
    MediaInfo,
    MediaRejected,
    NotAVideo,
    ProbeTimedOut,
    PyAvProber,
    check_copy,
)
from videocopies.adapters.probe.rules import Limits, check_dimensions, check_timing
from videocopies.application.ports import ProbeResult


def ffmpeg(*args: str) -> None:
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


def lavfi_video(size: str, seconds: float = 2) -> list[str]:
    return ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25:duration={seconds}"]


def cut(source: Path, target: Path, keep: float = 0.5) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("probe")
    av_clip = make_clip(d / "av.mp4")  # 2 s, 360×640, H.264 + AAC, moov at the end
    c = {"av": av_clip, "silent": make_clip(d / "silent.mp4", audio=False)}
    ffmpeg("-i", str(av_clip), "-c", "copy", "-movflags", "+faststart", str(d / "faststart.mp4"))
    c["faststart"] = d / "faststart.mp4"
    ffmpeg("-display_rotation:v", "90", "-i", str(av_clip), "-c", "copy", str(d / "rotated.mp4"))
    c["rotated"] = d / "rotated.mp4"
    ffmpeg("-f", "lavfi", "-i", "sine=duration=2", "-c:a", "aac", str(d / "audio.m4a"))
    c["audio_only"] = d / "audio.m4a"
    ffmpeg(*lavfi_video("360x640", 1), "-frames:v", "1", str(d / "still.png"))
    c["png"] = d / "still.png"
    ffmpeg(*lavfi_video("360x640", 1), "-frames:v", "1", str(d / "still.jpg"))
    c["jpeg"] = d / "still.jpg"
    ffmpeg(*lavfi_video("360x640", 1), "-frames:v", "1", "-c:v", "libx264", str(d / "one_frame.mp4"))
    c["one_frame"] = d / "one_frame.mp4"
    ffmpeg(*lavfi_video("4112x64", 0.2), "-c:v", "libx264", "-preset", "ultrafast", str(d / "wide.mp4"))
    c["too_wide"] = d / "wide.mp4"
    c["cut_moov"] = cut(av_clip, d / "cut_moov.mp4")  # moov at the end: the index is gone
    c["cut_data"] = cut(c["faststart"], d / "cut_data.mp4")  # moov first: half the data is gone
    garbled = bytearray(c["faststart"].read_bytes())
    garbled[len(garbled) // 2 : len(garbled) // 2 + 30_000] = bytes(30_000)
    (d / "garbled.mp4").write_bytes(garbled)
    c["garbled"] = d / "garbled.mp4"
    (d / "random.mp4").write_bytes(bytes(range(256)) * 800)
    c["random"] = d / "random.mp4"
    (d / "empty.mp4").write_bytes(b"")
    c["empty"] = d / "empty.mp4"
    return c


@pytest.fixture(scope="module")
def copies(clips: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Renders of `av` as the worker might produce them, right and wrong."""
    d = tmp_path_factory.mktemp("copies")
    src, enc = str(clips["av"]), ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"]
    ffmpeg("-i", src, "-vf", "setpts=PTS/1.25", "-af", "atempo=1.25", *enc, str(d / "fast.mp4"))
    ffmpeg("-i", src, "-vf", "scale=352:640", *enc, str(d / "narrow.mp4"))
    ffmpeg("-i", src, "-an", "-c:v", "copy", str(d / "mute.mp4"))
    return {p.stem: p for p in d.iterdir()}


@pytest.fixture
def prober() -> PyAvProber:
    return PyAvProber()


async def test_a_clip_is_measured_and_every_frame_decoded(prober: PyAvProber, clips: dict[str, Path]) -> None:
    info = await prober.probe(clips["av"])

    assert (info.width, info.height, info.has_audio, info.frames) == (360, 640, True, 50)
    assert info.duration_s == pytest.approx(2.0, abs=0.05)
    assert (info.rotation, info.fps, info.video_codec, info.audio_codec) == (0, 25.0, "h264", "aac")
    assert (info.pix_fmt, info.bit_depth, info.decoded) == ("yuv420p", 8, True)
    assert isinstance(info, ProbeResult)


async def test_a_quick_probe_reads_the_header_and_one_picture(prober: PyAvProber, clips: dict[str, Path]) -> None:
    info = await prober.probe(clips["faststart"], full_decode=False)

    assert (info.width, info.height, info.frames, info.decoded) == (360, 640, 50, False)
    assert info.duration_s == pytest.approx(2.0, abs=0.05)


async def test_a_clip_without_sound_has_no_audio(prober: PyAvProber, clips: dict[str, Path]) -> None:
    info = await prober.probe(clips["silent"])

    assert (info.has_audio, info.audio_codec, info.frames) == (False, None, 50)


async def test_a_rotated_clip_reports_its_display_orientation(prober: PyAvProber, clips: dict[str, Path]) -> None:
    for full_decode in (False, True):
        info = await prober.probe(clips["rotated"], full_decode=full_decode)

        assert (info.width, info.height, info.rotation) == (640, 360, 90)


async def test_a_ten_bit_clip_reports_its_depth(prober: PyAvProber, tmp_path: Path) -> None:
    clip = tmp_path / "ten_bit.mp4"
    try:
        ffmpeg(*lavfi_video("360x640"), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", str(clip))
    except subprocess.CalledProcessError as e:
        pytest.skip(f"this FFmpeg's libx264 cannot encode 10-bit: {e.stderr.decode().strip()}")

    info = await prober.probe(clip)

    assert (info.pix_fmt, info.bit_depth, info.frames) == ("yuv420p10le", 10, 50)


@pytest.mark.parametrize(
    ("clip", "error", "reason"),
    [
        ("empty", NotAVideo, "empty file"),
        ("random", NotAVideo, "not a media file"),
        ("png", NotAVideo, "still image"),
        ("jpeg", NotAVideo, "still image"),
        ("one_frame", NotAVideo, "single frame"),
        ("audio_only", NotAVideo, "audio only"),
        ("cut_moov", InvalidMedia, "index (moov)"),
        ("too_wide", InvalidMedia, "absurd dimensions 4112×64"),
        ("cut_data", CorruptMedia, "cut short"),
        ("garbled", CorruptMedia, "decod"),
    ],
)
async def test_what_is_not_a_usable_video_is_refused_with_a_reason(
    prober: PyAvProber, clips: dict[str, Path], clip: str, error: type[MediaRejected], reason: str
) -> None:
    with pytest.raises(error) as refused:
        await prober.probe(clips[clip])

    assert reason in refused.value.reason


async def test_damage_inside_the_data_is_found_only_by_the_full_decode(
    prober: PyAvProber, clips: dict[str, Path]
) -> None:
    assert (await prober.probe(clips["garbled"], full_decode=False)).frames == 50
    with pytest.raises(CorruptMedia):
        await prober.probe(clips["garbled"], full_decode=True)


async def test_a_probe_past_its_time_budget_stops(clips: dict[str, Path]) -> None:
    ticks = iter(range(1000))  # a clock that moves one second every time it is read

    with pytest.raises(ProbeTimedOut, match="decoding ran past its time budget after"):
        await PyAvProber(budget_s=10, clock=lambda: next(ticks)).probe(clips["av"])
    with pytest.raises(ProbeTimedOut, match="opening"):
        await PyAvProber(budget_s=0).probe(clips["av"])


async def test_a_cancelled_probe_stops_its_thread(clips: dict[str, Path]) -> None:
    loop, reads, stopped = asyncio.get_running_loop(), [], threading.Event()
    task: asyncio.Task[MediaInfo]

    def clock() -> float:  # read once per packet, in the probe's thread
        reads.append(1)
        if len(reads) == 3:
            loop.call_soon_threadsafe(task.cancel)
            stopped.wait(5)
        return 0.0

    task = asyncio.create_task(PyAvProber(clock=clock).probe(clips["av"]))
    with pytest.raises(asyncio.CancelledError):
        await task
    stopped.set()
    await asyncio.sleep(0.2)

    assert len(reads) <= 4  # the thread saw the cancel at its next packet, not after all ~140


async def test_a_file_over_the_size_limit_is_refused(clips: dict[str, Path]) -> None:
    with pytest.raises(InvalidMedia, match="limit"):
        await PyAvProber(limits=Limits(max_bytes=1000)).probe(clips["av"])


def test_zero_size_zero_duration_and_a_lone_frame_are_refused() -> None:
    with pytest.raises(InvalidMedia, match="absurd"):
        check_dimensions(0, 640, Limits())
    with pytest.raises(InvalidMedia, match="zero duration"):
        check_timing(0.0, 50)
    with pytest.raises(InvalidMedia, match="no frames"):
        check_timing(2.0, 0)
    with pytest.raises(NotAVideo, match="single frame"):
        check_timing(0.04, 1)


async def test_a_faithful_copy_at_the_planned_speed_passes(
    prober: PyAvProber, clips: dict[str, Path], copies: dict[str, Path]
) -> None:
    source = await prober.probe(clips["av"])

    copy = await prober.verify_copy(source, copies["fast"], plan_speed=1.25)

    assert copy.duration_s == pytest.approx(1.6, abs=0.1)
    assert copy.decoded and copy.frames > 0


@pytest.mark.parametrize(
    ("copy", "speed", "reason"),
    [
        ("fast", 1.0, "duration 1.6"),
        ("narrow", 1.0, "size 352×640, expected 360×640"),
        ("mute", 1.0, "audio track missing"),
    ],
)
async def test_a_copy_that_differs_from_its_source_is_rejected(
    prober: PyAvProber, clips: dict[str, Path], copies: dict[str, Path], copy: str, speed: float, reason: str
) -> None:
    source = await prober.probe(clips["av"])

    with pytest.raises(CopyRejected) as rejected:
        await prober.verify_copy(source, copies[copy], plan_speed=speed)

    assert reason in rejected.value.reason


async def test_a_copy_that_does_not_decode_is_rejected(prober: PyAvProber, clips: dict[str, Path]) -> None:
    source = await prober.probe(clips["av"])

    with pytest.raises(CopyRejected, match="copy unusable: .*cut short"):
        await prober.verify_copy(source, clips["cut_data"], plan_speed=1.0)


def test_every_problem_of_a_copy_is_named_at_once() -> None:
    source = ProbeResult(duration_s=2.0, width=360, height=640, has_audio=False, frames=50)
    copy = ProbeResult(duration_s=0.5, width=720, height=1280, has_audio=True, frames=0)

    with pytest.raises(CopyRejected) as rejected:
        check_copy(source, copy, 1.0, CopyTolerance())

    assert rejected.value.reason.count(";") == 3


def test_probing_the_clip_is_fast(prober: PyAvProber, clips: dict[str, Path]) -> None:
    timings = {}
    for full_decode in (False, True):
        started = time.perf_counter()
        info: MediaInfo = prober.probe_blocking(clips["av"], full_decode)
        timings[full_decode] = time.perf_counter() - started
        assert info.frames == 50
    header_ms, decode_ms = timings[False] * 1000, timings[True] * 1000
    print(f"probe of a 2 s 360×640 clip: header {header_ms:.1f} ms, full decode {decode_ms:.1f} ms")
    assert timings[True] < 2.0
