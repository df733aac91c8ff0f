"""The Transcoder port on an FFmpeg child process: progress, timeout, stall watchdog and clean cancel."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import deque
from collections.abc import Callable
from pathlib import Path

import attrs
import av

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.limits import DEFAULT_MEMORY_BYTES, ChildLimits, file_bytes_for
from videocopies.adapters.ffmpeg.render import (
    ASSUMED_FPS,
    SourceInfo,
    cpu_seconds_for,
    ffmpeg_args,
    output_duration,
    pixel_work,
    timeout_for,
)
from videocopies.adapters.probe import MediaRejected
from videocopies.adapters.probe.pyav import open_media
from videocopies.domain.effects import EffectsPlan
from videocopies.telegram_limits import DEFAULT_MAX_PIXEL_RATE, DEFAULT_MAX_SECONDS

STDERR_LINES = 30
PROBE_OPEN_S = 60.0

Progress = Callable[[float], None]


@attrs.define
class TranscodeFailed(Exception):
    """FFmpeg could not make the copy; stderr_tail holds its last words."""

    reason: str
    stderr_tail: str = ""

    def __str__(self) -> str:
        return f"{self.reason}: {self.stderr_tail}" if self.stderr_tail else self.reason


@attrs.define
class TranscodeTimeout(TranscodeFailed):
    """The render ran past the time its duration allows."""


@attrs.define
class TranscodeStalled(TranscodeFailed):
    """FFmpeg stopped making progress (some filters hang on some builds)."""


@attrs.define
class TranscodeLimited(TranscodeFailed):
    """FFmpeg was stopped by one of the limits it runs under (CPU time, memory, file size)."""


@attrs.define
class SourceTooHeavy(TranscodeFailed):
    """The source holds more pixels to go through than the service renders: refused unrendered."""


class FfmpegTranscoder:
    """Renders one copy per call; the target exists afterwards only if the render succeeded.
    With `max_copy_bytes` (what the Bot API server accepts in one upload), every copy is
    encoded to fit in it; the caller still checks, since an encoder's cap is an aim.
    FFmpeg runs with at most `cpu(source, speed)` CPU seconds, `memory_bytes` of address space
    and files of `max_output_bytes` (by default the copy's cap with headroom); a source of more
    than `max_pixel_work` pixels (width × height × frames a second × seconds) is refused."""

    def __init__(
        self,
        binary: str | None = None,
        *,
        threads: int | None = None,
        stall_s: float = 30.0,
        grace_s: float = 5.0,
        timeout: Callable[[SourceInfo, float], float] = timeout_for,
        cpu: Callable[[SourceInfo, float], float] = cpu_seconds_for,
        max_copy_bytes: int | None = None,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        max_output_bytes: int | None = None,
        max_pixel_work: float | None = DEFAULT_MAX_PIXEL_RATE * DEFAULT_MAX_SECONDS,
    ) -> None:
        self._binary = binary or ffmpeg_binary()
        self._cpu = cpu
        self._memory_bytes = memory_bytes
        self._file_bytes = max_output_bytes if max_output_bytes is not None else file_bytes_for(max_copy_bytes)
        self._max_pixel_work = max_pixel_work
        self._max_copy_bytes = max_copy_bytes
        self._threads = threads
        self._stall_s = stall_s
        self._grace_s = grace_s
        self._timeout = timeout

    async def render(
        self,
        plan: EffectsPlan,
        source: Path,
        target: Path,
        *,
        info: SourceInfo | None = None,
        on_progress: Progress | None = None,
        source_frames: Path | None = None,
    ) -> None:
        """Render `plan` of `source` into `target` (MP4), probing the source unless `info` is given;
        with `source_frames`, keep the source's frames the quality gate compares with there too."""
        try:
            if info is None:
                info = await asyncio.to_thread(probe, source)
            self._check_work(info)
            args = ffmpeg_args(
                plan, info, source, target, threads=self._threads, source_frames=source_frames,
                max_bytes=self._max_copy_bytes,
            )
            limit = self._timeout(info, plan.speed)
            child = ChildLimits.of(self._cpu(info, plan.speed), self._memory_bytes, self._file_bytes)
            await self._run(args, output_duration(plan, info), limit, on_progress or (lambda _: None), child)
        except BaseException:
            target.unlink(missing_ok=True)
            if source_frames is not None:
                source_frames.unlink(missing_ok=True)
            raise

    def _check_work(self, info: SourceInfo) -> None:
        if self._max_pixel_work is not None and (work := pixel_work(info)) > self._max_pixel_work:
            raise SourceTooHeavy(
                f"the source is too much work: {info.width}×{info.height} at {info.fps or ASSUMED_FPS:g} frames a "
                f"second for {info.duration_s:.0f} s is {work / 1e9:.1f} billion pixels, over the "
                f"{self._max_pixel_work / 1e9:.1f} billion limit"
            )

    async def _run(
        self, args: list[str], expected_s: float, limit: float, on_progress: Progress, child: ChildLimits
    ) -> None:
        proc = await asyncio.create_subprocess_exec(
            self._binary, *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            preexec_fn=child.preexec(),
        )
        tail: deque[str] = deque(maxlen=STDERR_LINES)
        drain = asyncio.create_task(_collect(proc.stderr, tail))
        try:
            try:
                async with asyncio.timeout(limit):
                    await self._watch(proc, expected_s, on_progress, tail)
                    code = await proc.wait()
                    await drain
            except TimeoutError:
                raise TranscodeTimeout(f"no result within {limit:.0f} s", _text(tail)) from None
            if code != 0 and (why := child.why_stopped(code, tail)):
                raise TranscodeLimited(why)
            if code != 0:
                raise TranscodeFailed(f"ffmpeg exited with {code}", _text(tail))
        finally:
            await self._stop(proc)
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain
        on_progress(1.0)

    async def _watch(
        self, proc: asyncio.subprocess.Process, expected_s: float, on_progress: Progress, tail: deque[str]
    ) -> None:
        """Read -progress blocks until FFmpeg closes stdout; raise if they stop advancing."""
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        advanced_at = loop.time()
        seen: dict[str, int] = {}
        while True:
            wait = self._stall_s - (loop.time() - advanced_at)
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), max(wait, 0))
            except TimeoutError:
                line = None
            if line == b"":
                return
            key, value = _counter(line) if line else ("", 0)
            # Either counter moving counts as progress: frames first, time once muxed.
            if key and value > seen.get(key, -1):
                seen[key] = value
                advanced_at = loop.time()
                if key == "out_time_us" and expected_s > 0:
                    on_progress(min(1.0, max(0.0, value / 1e6 / expected_s)))
            if loop.time() - advanced_at >= self._stall_s:
                raise TranscodeStalled(f"no progress for {self._stall_s:g} s", _text(tail))

    async def _stop(self, proc: asyncio.subprocess.Process) -> None:
        """SIGTERM, then SIGKILL after the grace period; returns once the child has exited."""
        if proc.returncode is not None:
            return
        _send(proc, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), self._grace_s)
        except TimeoutError:
            pass
        finally:
            if proc.returncode is None:
                _send(proc, signal.SIGKILL)
                await proc.wait()


def probe(path: Path) -> SourceInfo:
    """Size, duration, audio and frame rate from the container headers, and the first picture:
    its rotation, and its size, which the filters will be given (a header may say another)."""
    try:
        with open_media(path, PROBE_OPEN_S) as container:
            if not container.streams.video:
                raise TranscodeFailed("the source has no video stream")
            video = container.streams.video[0]
            if container.duration:
                duration = container.duration / 1_000_000
            elif video.duration and video.time_base:
                duration = float(video.duration * video.time_base)
            else:
                raise TranscodeFailed("the source has no known duration")
            rate = video.average_rate or video.guessed_rate
            width, height, rotation = video.codec_context.width, video.codec_context.height, 0
            for picture in container.decode(video=0):
                width, height, rotation = picture.width, picture.height, round(picture.rotation) % 360
                break
            # FFmpeg turns a phone's rotated picture upright before the filters see it, so
            # they must be sized for the picture as displayed, not as coded.
            if rotation % 180 == 90:
                width, height = height, width
            return SourceInfo(
                width=width, height=height, duration_s=duration,
                has_audio=bool(container.streams.audio), fps=float(rate) if rate else 0.0,
                demuxer=container.format.name,
            )
    except MediaRejected as e:
        raise TranscodeFailed("the source is not a readable video", e.reason) from e
    except OSError as e:
        raise TranscodeFailed("the source cannot be read", e.strerror or str(e)) from e
    except (av.FFmpegError, ValueError) as e:
        raise TranscodeFailed("the source is not a readable video", str(e)) from e


async def _collect(stream: asyncio.StreamReader | None, tail: deque[str]) -> None:
    assert stream is not None
    async for line in stream:
        tail.append(line.decode(errors="replace").rstrip())


def _counter(line: bytes) -> tuple[str, int]:
    """("frame" or "out_time_us", value) from a -progress line, else ("", 0)."""
    key, _, value = line.decode(errors="replace").strip().partition("=")
    if key in ("frame", "out_time_us") and value.lstrip("-").isdigit():
        return key, int(value)
    return "", 0


def _send(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)


def _text(tail: deque[str]) -> str:
    return "\n".join(tail)
