"""Full-decode verification in an FFmpeg child: the header comes from PyAV, the decode of
every frame from `ffmpeg -f null`, so a decoder's memory (and any crash) stays out of the
worker's Python process."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import attrs

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.limits import DEFAULT_MEMORY_BYTES, FILE_SPARE_BYTES, ChildLimits
from videocopies.adapters.ffmpeg.render import SourceInfo, cpu_seconds_for, max_pixels
from videocopies.adapters.probe import CorruptMedia, MediaInfo, PyAvProber
from videocopies.adapters.probe.inputs import ffmpeg_input
from videocopies.adapters.quality.sampling import COPY_REACH_FRAMES, kept_frames_filter


class FfmpegDecodingProber:
    """The decoding child runs under the limits of a render of the same video (CPU time for
    its pixels, `memory_bytes` of address space), and writes only the small kept frames."""

    def __init__(
        self,
        header: PyAvProber | None = None,
        binary: str | None = None,
        timeout_s: float = 300.0,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
    ) -> None:
        # The child decodes every frame: decoding the first here too held a decoder's pictures
        # in the worker (3-4 MiB at 720x1280, its peak RSS) for a check the child makes.
        self._header = header or PyAvProber(thread_type="SLICE", first_picture=False)
        self._binary = binary or ffmpeg_binary()
        self._timeout_s = timeout_s
        self._memory_bytes = memory_bytes

    async def probe(self, path: Path, full_decode: bool = True, keep_frames: Path | None = None) -> MediaInfo:
        """With `keep_frames`, the full decode also keeps there the few frames the quality gate
        compares (small, gray, NUT with their times): the copy is decoded once for both."""
        info = await self._header.probe(path, full_decode=False)
        if not full_decode:
            return info
        keep: list[str] = []
        if keep_frames is not None:
            chain = kept_frames_filter(info.duration_s, info.fps, COPY_REACH_FRAMES)
            keep = ["-map", "0:v:0", "-vf", chain, "-c:v", "rawvideo", "-fps_mode", "passthrough", "-f", "nut",
                    "-y", str(keep_frames)]
        frames = await self._decode(path, info, keep)
        if frames <= 0:
            raise CorruptMedia("no frame could be decoded")
        return attrs.evolve(info, frames=frames, decoded=True)

    async def _decode(self, path: Path, info: MediaInfo, keep: list[str]) -> int:
        video = SourceInfo(
            width=max(2, info.width), height=max(2, info.height), duration_s=max(info.duration_s, 1e-3),
            has_audio=info.has_audio, fps=info.fps, demuxer=info.container,
        )
        child = ChildLimits.of(cpu_seconds_for(video, 1.0), self._memory_bytes, FILE_SPARE_BYTES)
        # -progress counts the frames of the first output: every frame, whatever `keep` keeps.
        proc = await asyncio.create_subprocess_exec(
            self._binary, "-hide_banner", "-nostdin", "-v", "error", "-xerror",
            *ffmpeg_input(path, info.container, max_pixels(video)),
            "-map", "0:v:0", "-map", "0:a?", "-f", "null", "-", *keep, "-progress", "pipe:1", "-nostats",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, preexec_fn=child.preexec(),
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self._timeout_s)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        problems, code = err.decode(errors="replace").strip(), await proc.wait()
        if code != 0 and (why := child.why_stopped(code, problems.splitlines())):
            raise CorruptMedia(f"decoding stopped: {why}")
        if code != 0 or problems:
            last = problems.splitlines()[-1] if problems else f"ffmpeg exited with {code}"
            raise CorruptMedia(f"decoding failed: {last}")
        frames = [line for line in out.decode().splitlines() if line.startswith("frame=")]
        return int(frames[-1].split("=", 1)[1]) if frames else 0
