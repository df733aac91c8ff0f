"""Full decode in an FFmpeg child: a good copy counts its frames; a damaged one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from media import make_clip
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.probe import CorruptMedia, MediaRejected


async def test_a_good_clip_decodes_every_frame(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "clip.mp4", seconds=2, fps=25)
    info = await FfmpegDecodingProber().probe(clip)
    assert info.decoded and info.frames == 50
    assert (info.width, info.height, info.has_audio) == (360, 640, True)


async def test_damaged_data_is_refused(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    data = bytearray(clip.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 20_000] = bytes(20_000)
    damaged = tmp_path / "damaged.mp4"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CorruptMedia):
        await FfmpegDecodingProber().probe(damaged)


async def test_not_a_video_is_refused_before_decoding(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"junk" * 100)
    with pytest.raises(MediaRejected):
        await FfmpegDecodingProber().probe(junk)
