"""A worker verifies a copy from its headers and one full decode in an FFmpeg child; it no
longer decodes the copy's first picture itself (that held a decoder's pictures, 3-4 MiB of the
worker's peak RSS). What it learns of a copy is what it learned before, a copy of a phone's
rotated video included, and a copy whose pictures do not decode is still refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from media import make_clip
from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.probe import CorruptMedia, PyAvProber
from videocopies.domain.effects import plan_copies


async def _copy_of_a_rotated_video(tmp_path: Path) -> Path:
    clip = make_clip(tmp_path / "clip.mp4", seconds=2, fps=25)  # 360x640
    rotated = tmp_path / "rotated.mp4"
    subprocess.run(
        [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y",
         "-display_rotation:v", "90", "-i", str(clip), "-c", "copy", str(rotated)],
        check=True, capture_output=True, timeout=60,
    )
    copy = tmp_path / "copy.mp4"
    await FfmpegTranscoder().render(plan_copies(7, 1)[0], rotated, copy)
    return copy


async def test_a_copy_is_known_as_it_was_when_its_first_picture_was_decoded(tmp_path: Path) -> None:
    copy = await _copy_of_a_rotated_video(tmp_path)
    decoding_one = FfmpegDecodingProber(header=PyAvProber(thread_type="SLICE"))
    before = await decoding_one.probe(copy, full_decode=True)
    now = await FfmpegDecodingProber().probe(copy, full_decode=True)
    assert now == before
    assert (now.width, now.height, now.rotation, now.frames) == (640, 360, 0, 50)  # rendered upright


async def test_a_copy_whose_pictures_do_not_decode_is_refused(tmp_path: Path) -> None:
    copy = await _copy_of_a_rotated_video(tmp_path)
    data = bytearray(copy.read_bytes())
    start = data.index(b"mdat") + 4  # faststart: the index first, then the pictures
    data[start + 64 : start + 64 + 20_000] = bytes(20_000)
    damaged = tmp_path / "damaged.mp4"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CorruptMedia):
        await FfmpegDecodingProber().probe(damaged, full_decode=True)
