"""An effects plan rendered as an FFmpeg argument list: pure, so it is tested without FFmpeg."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import attrs

from videocopies.adapters.probe.inputs import ffmpeg_input
from videocopies.adapters.quality.sampling import kept_frames_filter
from videocopies.domain.effects import EffectsPlan

AUDIO_RATE = 48_000
AUDIO_BITRATE = "128k"
PRESET = "veryfast"
# SEI NAL units: x264 writes its version and every option there ("x264 - core 164 ...").
DROP_SEI = "filter_units=remove_types=6"
# A render's budget follows the pixels it reads (width × height × frames a second × seconds):
# wall-clock at a tenth of what one render on a quiet 2-core machine manages (60-110 million
# pixels a second, 1080p30 and 360×640), since several workers may share the cores; CPU time
# at about a twelfth of what a CPU-second encodes (50-66 million). Both have a floor.
TIMEOUT_BASE_S = 60.0
RENDER_PIXELS_PER_S = 8e6
CPU_BASE_S = 60.0
CPU_PIXELS_PER_S = 4e6
# The rate assumed when the header gives none (0): the work must still be bounded.
ASSUMED_FPS = 30.0
# The decoder refuses a picture this much wider and taller than the probed size: decoders
# align their buffers (64 pixels), but a picture larger still means the header lied.
PICTURE_SLACK_PX = 128
# Each output stops past its expected duration: a stream running on past what its header
# said cannot make a render longer.
DURATION_SLACK = 1.05
DURATION_SLACK_S = 1.0
# A capped copy aims at this share of the send limit: AAC and the MP4 boxes are estimated,
# and x264 may overshoot its rate a little where it cannot do otherwise.
SIZE_TARGET_SHARE = 0.9
AUDIO_BITS_PER_S = 136_000  # 128k AAC and its ADTS-free framing, rounded up
CONTAINER_SHARE = 0.02
VBV_BUFFER_S = 1.0
MIN_VIDEO_BITS_PER_S = 16_000
# A cap above this cannot bind (a 1080p60 source at our CRFs stays far below it), and x264
# refuses a rate over 2^31 bits a second: a short copy under a local server's 2000 MiB
# limit asked for 2.4 Gb/s and every render failed.
UNBINDING_BITS_PER_S = 400_000_000


def _positive(_info: object, attribute: attrs.Attribute, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be positive, got {value!r}")


@attrs.frozen(kw_only=True)
class SourceInfo:
    """What the renderer must know about the source; fps 0 means unknown (the rate is kept as is)."""

    width: int = attrs.field(validator=attrs.validators.ge(2))
    height: int = attrs.field(validator=attrs.validators.ge(2))
    duration_s: float = attrs.field(validator=_positive)
    has_audio: bool
    fps: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    demuxer: str = ""  # as the probe found it ("mov,mp4,m4a,3gp,3g2,mj2"); "" leaves it to the allowlist


def output_size(source: SourceInfo) -> tuple[int, int]:
    """The source's size, rounded down to even numbers as yuv420p requires."""
    return _even(source.width), _even(source.height)


def output_duration(plan: EffectsPlan, source: SourceInfo) -> float:
    return source.duration_s / plan.speed


def video_bitrate_cap(max_bytes: int, duration_s: float, has_audio: bool) -> int:
    """Video bits a second that keep a copy of `duration_s` within SIZE_TARGET_SHARE of
    `max_bytes`. With x264's buffer of VBV_BUFFER_S, no stretch of the video holds more than
    the rate × (its length + the buffer), so the whole copy cannot either."""
    bits = max_bytes * 8 * SIZE_TARGET_SHARE * (1 - CONTAINER_SHARE)
    bits -= AUDIO_BITS_PER_S * duration_s if has_audio else 0
    return max(MIN_VIDEO_BITS_PER_S, int(bits / (duration_s + VBV_BUFFER_S)))


def pixel_work(source: SourceInfo, speed: float = 1.0) -> float:
    """The pixels a render goes through: the source's, at the planned speed's frame count."""
    return source.width * source.height * (source.fps or ASSUMED_FPS) * source.duration_s / speed


def timeout_for(source: SourceInfo, speed: float) -> float:
    """Seconds a render may take: generous, since several workers may share two cores."""
    return TIMEOUT_BASE_S + pixel_work(source, speed) / RENDER_PIXELS_PER_S


def cpu_seconds_for(source: SourceInfo, speed: float) -> float:
    """CPU seconds (all threads together) a render may use, however busy the machine is."""
    return CPU_BASE_S + pixel_work(source, speed) / CPU_PIXELS_PER_S


def max_pixels(source: SourceInfo) -> int:
    return (source.width + PICTURE_SLACK_PX) * (source.height + PICTURE_SLACK_PX)


def _until(duration_s: float) -> list[str]:
    return ["-t", _num(duration_s * DURATION_SLACK + DURATION_SLACK_S)]


def video_filters(plan: EffectsPlan, source: SourceInfo) -> str:
    width, height = output_size(source)
    crop_w = max(2, _even(source.width * (1 - plan.crop)))
    crop_h = max(2, _even(source.height * (1 - plan.crop)))
    # Even offsets keep the window on chroma sample boundaries.
    x = _even((source.width - crop_w) * plan.crop_x)
    y = _even((source.height - crop_h) * plan.crop_y)
    steps = [
        f"crop={crop_w}:{crop_h}:{x}:{y}",
        f"scale={width}:{height}:flags=bicubic",
        "setsar=1",
        f"eq=brightness={_num(plan.brightness)}:contrast={_num(plan.contrast)}"
        f":saturation={_num(plan.saturation)}",
        f"hue=h={_num(plan.hue)}",
        f"noise=alls={plan.noise}:allf=t",
        f"setpts=PTS/{_num(plan.speed)}",
    ]
    if source.fps > 0:
        # Back to the source's constant rate after setpts: frames are dropped or repeated here.
        steps.append(f"fps={_rate(source.fps)}")
    steps.append("format=yuv420p")
    return ",".join(steps)


def audio_filters(plan: EffectsPlan) -> str:
    steps = [f"aresample={AUDIO_RATE}"]
    tempo = plan.audio_tempo
    if plan.pitch is not None:
        # asetrate shifts pitch and tempo together; atempo then restores the planned tempo.
        shifted = round(AUDIO_RATE * plan.pitch)
        steps += [f"asetrate={shifted}", f"aresample={AUDIO_RATE}"]
        tempo = plan.audio_tempo * AUDIO_RATE / shifted
    steps.append(f"atempo={_num(tempo)}")
    return ",".join(steps)


def ffmpeg_args(
    plan: EffectsPlan,
    source: SourceInfo,
    source_path: Path,
    target: Path,
    *,
    threads: int | None = None,
    source_frames: Path | None = None,
    max_bytes: int | None = None,
) -> list[str]:
    """The full argument list after the binary: one pass, libx264 + AAC, progress on stdout.
    With `source_frames`, the source's frames at the quality gate's moments are also written
    there (small, gray, NUT with their times): the render decodes them anyway. With
    `max_bytes`, the quality setting is kept but the video rate is capped to fit the copy in it."""
    args = ["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-progress", "pipe:1", "-nostats"]
    args += ffmpeg_input(source_path, source.demuxer, max_pixels(source))
    if source_frames is None:
        args += ["-map", "0:v:0"]
    else:
        kept = kept_frames_filter(source.duration_s, source.fps)
        graph = f"[0:v:0]split=2[copy][kept];[copy]{video_filters(plan, source)}[v];[kept]{kept}[k]"
        args += ["-filter_complex", graph, "-map", "[v]"]
    if source.has_audio:
        args += ["-map", "0:a:0"]
    if source_frames is None:
        args += ["-vf", video_filters(plan, source)]
    if source.has_audio:
        args += ["-af", audio_filters(plan)]
    else:
        args += ["-an"]
    args += ["-sn", "-dn"]
    args += ["-c:v", "libx264", "-preset", PRESET, "-crf", str(plan.crf), "-pix_fmt", "yuv420p"]
    if max_bytes is not None:
        rate = video_bitrate_cap(max_bytes, output_duration(plan, source), source.has_audio)
        if rate < UNBINDING_BITS_PER_S:
            args += ["-maxrate", str(rate), "-bufsize", str(int(rate * VBV_BUFFER_S))]
    if source.has_audio:
        args += ["-c:a", "aac", "-b:a", AUDIO_BITRATE, "-ar", str(AUDIO_RATE)]
    if plan.strip_metadata:
        args += ["-bsf:v", DROP_SEI, "-map_metadata", "-1", "-map_chapters", "-1", "-metadata:s:v", "encoder="]
        args += ["-fflags", "+bitexact", "-flags:v", "+bitexact"]
        if source.has_audio:
            args += ["-flags:a", "+bitexact"]
    if threads is not None:
        args += ["-threads", str(threads)]
    args += [*_until(output_duration(plan, source)), "-movflags", "+faststart", "-f", "mp4", str(target)]
    if source_frames is not None:
        # The kept frames carry the source's times.
        args += ["-map", "[k]", "-c:v", "rawvideo", "-fps_mode", "passthrough", *_until(source.duration_s)]
        args += ["-f", "nut", str(source_frames)]
    return args


def _even(value: float) -> int:
    return int(value) // 2 * 2


def _num(value: float) -> str:
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _rate(fps: float) -> str:
    rate = Fraction(fps).limit_denominator(1001)
    return str(rate.numerator) if rate.denominator == 1 else f"{rate.numerator}/{rate.denominator}"
