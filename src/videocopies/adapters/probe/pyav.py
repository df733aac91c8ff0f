"""Prober on PyAV: read the header, refuse what is not a usable video, and decode every frame."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Literal, TypeVar

import attrs
import av
from av.container import InputContainer
from av.stream import Disposition

from videocopies.adapters.probe.errors import (
    CopyRejected,
    CorruptMedia,
    InvalidMedia,
    MediaRejected,
    NotAVideo,
    ProbeTimedOut,
    SourceTooBig,
    SourceTooLong,
)
from videocopies.adapters.probe.inputs import MOV_NO_REFERENCES, PROTOCOLS, VIDEO_DEMUXERS
from videocopies.adapters.probe.media import MediaInfo
from videocopies.adapters.probe.rules import (
    CopyTolerance,
    Limits,
    check_copy,
    check_dimensions,
    check_header_tells_the_length,
    check_length,
    check_picture,
    check_pixel_rate,
    check_timing,
)
from videocopies.application.ports import ProbeResult
from videocopies.telegram_limits import MediaLimits

# Demuxers that read one picture; everything else must prove it has two frames or more.
_IMAGE_DEMUXERS = ("image2", "image2pipe")
# Still images and plain audio are let in only to be refused by name. image2 reads the one
# file it is given: never a sequence of others, as a name like `frame%03d.jpg` would ask.
_STILLS = sorted(f for f in av.formats_available if f.endswith("_pipe"))
_NAMED_REFUSALS = ("mp3", "aac", "wav", "flac", *_IMAGE_DEMUXERS, *_STILLS)
SAFE_OPEN = {
    "format_whitelist": ",".join((*VIDEO_DEMUXERS, *_NAMED_REFUSALS)), "protocol_whitelist": PROTOCOLS,
    "pattern_type": "none", **MOV_NO_REFERENCES,
}
S = TypeVar("S", bound=av.stream.Stream)


@attrs.frozen
class _Scan:
    frames: int
    rotation: int
    span_s: float | None  # first frame start to last frame end, from decoded timestamps


class PyAvProber:
    """Probes with PyAV in a worker thread; `budget_s` bounds one probe, decode included, so a
    huge or pathological file cannot hold a worker. `clock` is monotonic seconds. Frame
    threads ("AUTO") decode 720×1280 about 25 % faster than "SLICE" for about 9 MiB more RSS.
    Without `full_decode` the first picture is decoded (its rotation, and proof one decodes)
    unless `first_picture` is False: then the headers alone answer, rotation 0, for a file
    whose every frame is decoded elsewhere anyway (our own renders, which FFmpeg writes upright)."""

    def __init__(
        self,
        budget_s: float = 60.0,
        limits: Limits | None = None,
        tolerance: CopyTolerance | None = None,
        clock: Callable[[], float] = time.monotonic,
        thread_type: Literal["AUTO", "SLICE"] = "AUTO",
        first_picture: bool = True,
    ) -> None:
        self._thread_type = thread_type
        self._first_picture = first_picture
        self._budget_s = budget_s
        self._clock = clock
        self._limits = limits or Limits()
        self._tolerance = tolerance or CopyTolerance()

    @classmethod
    def for_sources(cls, limits: MediaLimits, budget_s: float = 60.0) -> PyAvProber:
        """A source's prober for the worker: the limits edge applied before the quote, again."""
        return cls(budget_s=budget_s, limits=Limits.of(limits), thread_type="SLICE")

    async def probe(self, path: Path, full_decode: bool = True, keep_frames: Path | None = None) -> MediaInfo:
        """`keep_frames` is not honoured here (nothing is written): a quality gate then decodes
        the copy again itself."""
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(self.probe_blocking, path, full_decode, cancelled.is_set)
        except asyncio.CancelledError:
            cancelled.set()  # the thread cannot be killed: it stops at its next packet
            raise

    async def verify_copy(
        self, source: ProbeResult, copy_path: Path, plan_speed: float, tolerance: CopyTolerance | None = None
    ) -> MediaInfo:
        """Full-decode the rendered copy and hold it against its source; CopyRejected if it differs."""
        try:
            copy = await self.probe(copy_path, full_decode=True)
        except MediaRejected as e:
            raise CopyRejected(f"copy unusable: {e.reason}") from e
        check_copy(source, copy, plan_speed, tolerance or self._tolerance)
        return copy

    def probe_blocking(
        self, path: Path, full_decode: bool = True, cancelled: Callable[[], bool] = lambda: False
    ) -> MediaInfo:
        deadline = self._clock() + self._budget_s
        size = path.stat().st_size
        if size == 0:
            raise NotAVideo("empty file")
        if self._limits.max_bytes is not None and size > self._limits.max_bytes:
            raise SourceTooBig(f"{size} bytes, over the {self._limits.max_bytes}-byte limit")
        with open_media(path, self._budget_s) as container:
            return self._inspect(container, size, full_decode, lambda: cancelled() or self._clock() > deadline)

    def _inspect(
        self, container: InputContainer, size: int, full_decode: bool, expired: Callable[[], bool]
    ) -> MediaInfo:
        if container.format.name in _IMAGE_DEMUXERS or container.format.name.endswith("_pipe"):
            raise NotAVideo(f"a still image ({container.format.name}), not a video")
        video = first(container.streams.video)
        audio = first(container.streams.audio)
        if video is None:
            raise NotAVideo("audio only: no video stream" if audio else "no video stream")
        codec = video.codec_context
        check_dimensions(codec.width, codec.height, self._limits)
        check_not_cut(container, size)
        header_s = header_duration(container, video)
        check_length(header_s, self._limits)
        header_frames = video.frames
        fps = frame_rate(video)
        check_pixel_rate(codec.width, codec.height, fps, self._limits)
        check_header_tells_the_length(header_s, header_frames, fps, index_span(video), self._limits)
        decode_all = full_decode or header_s is None  # no duration in the header: count it
        video.thread_type = self._thread_type
        if decode_all or self._first_picture:
            scan = _scan(
                container, video, audio if decode_all else None, decode_all, expired, self._limits.max_seconds,
                (codec.width, codec.height),
            )
        else:
            scan = _Scan(frames=header_frames, rotation=0, span_s=None)
        if decode_all:
            _check_complete(scan, header_frames, header_s)
            frames = scan.frames
        elif scan.frames == 0 and self._first_picture:
            raise CorruptMedia("not a single picture decodes")
        else:
            frames = header_frames or (round(header_s * fps) if header_s and fps else 0)
        duration_s = header_s if header_s is not None else scan.span_s or (frames / fps if fps else None)
        duration_s = check_timing(duration_s, frames)
        check_length(duration_s, self._limits)
        fmt = codec.format
        width, height = (codec.height, codec.width) if scan.rotation % 180 == 90 else (codec.width, codec.height)
        return MediaInfo(
            duration_s=duration_s,
            width=width,
            height=height,
            has_audio=audio is not None,
            frames=frames,
            rotation=scan.rotation,
            fps=fps,
            video_codec=codec.name,
            audio_codec=audio.codec_context.name if audio else None,
            pix_fmt=fmt.name if fmt else "",
            bit_depth=fmt.components[0].bits if fmt and fmt.components else 0,
            container=container.format.name,
            decoded=decode_all,
        )


def frame_rate(video: av.VideoStream) -> float:
    """Frames a second as the header gives them; 0 when it does not."""
    return float(video.average_rate or video.guessed_rate or video.base_rate or 0)


def open_media(path: Path, budget_s: float) -> InputContainer:
    """Open a local file for reading, through the file protocol and known demuxers only."""
    try:
        return av.open(str(path), timeout=(budget_s, None), container_options=SAFE_OPEN)
    except av.ExitError as e:  # the open timeout interrupted FFmpeg
        raise ProbeTimedOut("opening ran past its time budget") from e
    except av.FFmpegError as e:
        with path.open("rb") as f:
            head = f.read(512)
        if head[4:8] == b"ftyp":
            raise InvalidMedia("an MP4/MOV whose index (moov) cannot be read: truncated or damaged") from e
        for marker, what in _PLAYLISTS:
            if marker in head:
                raise NotAVideo(f"{what}, which would make FFmpeg read other files: not a video") from e
        raise NotAVideo("not a media file FFmpeg recognises") from e


# Text files FFmpeg would follow to other files or addresses (never opened: see SAFE_OPEN).
_PLAYLISTS = (
    (b"#EXTM3U", "an HLS playlist"), (b"ffconcat version", "a concat script"), (b"<MPD", "a DASH manifest"),
)


def first(streams: tuple[S, ...]) -> S | None:
    # Cover art travels as a one-picture video stream; it is not the video.
    return next((s for s in streams if not s.disposition & Disposition.attached_pic), None)


def header_duration(container: InputContainer, video: av.VideoStream) -> float | None:
    if video.duration and video.time_base:
        return float(video.duration * video.time_base)
    if container.duration:
        return container.duration / av.time_base
    return None


def check_not_cut(container: InputContainer, size: int) -> None:
    """The demuxer's index says where each packet lies; an index reaching past the end of the
    file means the data was cut short (an MP4 with its moov first, then a partial mdat)."""
    for stream in container.streams:
        entries = stream.index_entries
        if len(entries) and (end := entries[len(entries) - 1].pos + entries[len(entries) - 1].size) > size:
            raise CorruptMedia(f"cut short: the data should run to byte {end}, the file ends at {size}")


def index_span(video: av.VideoStream) -> float | None:
    """Seconds from the first to the last frame the demuxer's index lists (an MP4 lists every
    frame, without decoding any); None without an index."""
    entries = video.index_entries
    if len(entries) < 2 or not video.time_base:
        return None
    return float((entries[len(entries) - 1].timestamp - entries[0].timestamp) * video.time_base)


def _scan(
    container: InputContainer,
    video: av.VideoStream,
    audio: av.AudioStream | None,
    decode_all: bool,
    expired: Callable[[], bool],
    max_s: float | None,
    header_size: tuple[int, int],
) -> _Scan:
    """Decode until the first picture (for its rotation), or every packet when `decode_all`;
    stop as soon as the decoded span runs past `max_s`, or a picture is larger than `header_size`."""
    frames, rotation = 0, None
    start: Fraction | None = None
    end: Fraction | None = None
    streams = (video, audio) if audio else (video,)
    try:
        for packet in container.demux(*streams):
            if expired():
                raise ProbeTimedOut(f"decoding ran past its time budget after {frames} frames")
            for frame in packet.decode():
                if packet.stream is not video or not isinstance(frame, av.VideoFrame):
                    continue
                if frame.is_corrupt:
                    raise CorruptMedia(f"picture {frames + 1} decodes damaged")
                frames += 1
                check_picture(frame.width, frame.height, *header_size, frames)
                if rotation is None:
                    rotation = round(frame.rotation) % 360
                if frame.pts is not None and frame.time_base:
                    at = frame.pts * frame.time_base
                    start = at if start is None else min(start, at)
                    stop = at + (frame.duration or 0) * frame.time_base
                    end = stop if end is None else max(end, stop)
                    if max_s is not None and end - start > max_s:
                        raise SourceTooLong(f"longer than the {max_s:.0f} s limit (over {float(end - start):.0f} s)")
            if rotation is not None and not decode_all:
                break
    except av.FFmpegError as e:
        raise CorruptMedia(f"decoding failed after {frames} frames: {e.strerror or e}") from e
    span = float(end - start) if start is not None and end is not None else None
    return _Scan(frames=frames, rotation=rotation or 0, span_s=span)


def _check_complete(scan: _Scan, header_frames: int, header_s: float | None) -> None:
    """Fewer frames, or a shorter span, than the header promises means the data was cut."""
    if header_frames and scan.frames < header_frames * 0.95 - 1:
        raise CorruptMedia(f"cut short: decoded {scan.frames} of {header_frames} frames")
    if header_s and scan.span_s is not None and scan.span_s < header_s * 0.9 - 0.1:
        raise CorruptMedia(f"cut short: decoded {scan.span_s:.2f} s of {header_s:.2f} s")
