"""The plan → FFmpeg arguments rendering, checked without running FFmpeg."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from videocopies.adapters.ffmpeg.binary import FfmpegNotFound, ffmpeg_binary
from videocopies.adapters.ffmpeg.limits import UNCAPPED_FILE_BYTES, ChildLimits, file_bytes_for
from videocopies.adapters.ffmpeg.render import (
    AUDIO_RATE,
    SourceInfo,
    audio_filters,
    cpu_seconds_for,
    ffmpeg_args,
    output_size,
    timeout_for,
    video_filters,
)
from videocopies.domain.effects import EffectsPlan
from videocopies.domain.effects import plan as effects

SOURCE = SourceInfo(width=360, height=640, duration_s=2.0, has_audio=True, fps=25)
SRC, DST = Path("/in/source.mp4"), Path("/out/copy.mp4")


def make_plan(**changes) -> EffectsPlan:
    if "speed" in changes:
        changes.setdefault("audio_tempo", changes["speed"])
    return attrs.evolve(EffectsPlan.derive(seed=1, copy_index=0), **changes)


def chain(text: str) -> dict[str, list[str]]:
    """A simple filter chain as {filter: its options}, in order (each filter appears once here)."""
    found: dict[str, list[str]] = {}
    for step in text.split(","):
        name, _, options = step.partition("=")
        assert name not in found, f"{name} twice in {text}"
        found[name] = options.split(":") if options else []
    return found


def option(args: list[str], flag: str) -> str:
    assert args.count(flag) == 1, f"{flag} appears {args.count(flag)} times"
    return args[args.index(flag) + 1]


def named(options: list[str]) -> dict[str, str]:
    return dict(o.split("=", 1) for o in options)


def crop_window(plan: EffectsPlan, source: SourceInfo) -> tuple[int, int, int, int]:
    width, height, x, y = map(int, chain(video_filters(plan, source))["crop"])
    return width, height, x, y


# --- argument structure


def test_arguments_read_the_source_and_write_an_mp4_target_last():
    args = ffmpeg_args(make_plan(), SOURCE, SRC, DST)
    assert option(args, "-i") == f"file:{SRC}"
    assert args[-3:] == ["-f", "mp4", str(DST)]
    assert args.index("-i") < args.index("-vf") < args.index("-c:v")
    assert {"-y", "-nostdin", "-nostats"} <= set(args)
    assert option(args, "-progress") == "pipe:1"
    assert option(args, "-movflags") == "+faststart"


def test_video_is_x264_veryfast_at_the_planned_crf_in_yuv420p():
    args = ffmpeg_args(make_plan(crf=21), SOURCE, SRC, DST)
    assert option(args, "-c:v") == "libx264"
    assert option(args, "-preset") == "veryfast"
    assert option(args, "-crf") == "21"
    assert option(args, "-pix_fmt") == "yuv420p"
    assert chain(option(args, "-vf"))["format"] == ["yuv420p"]


def test_audio_is_aac_from_the_first_audio_stream():
    args = ffmpeg_args(make_plan(), SOURCE, SRC, DST)
    maps = [args[i + 1] for i, a in enumerate(args) if a == "-map"]
    assert maps == ["0:v:0", "0:a:0"]
    assert option(args, "-c:a") == "aac"
    assert option(args, "-ar") == str(AUDIO_RATE)
    assert "-an" not in args


def test_metadata_chapters_encoder_tag_and_x264_settings_are_stripped():
    args = ffmpeg_args(make_plan(), SOURCE, SRC, DST)
    assert option(args, "-map_metadata") == "-1"
    assert option(args, "-map_chapters") == "-1"
    assert option(args, "-metadata:s:v") == "encoder="
    assert option(args, "-bsf:v") == "filter_units=remove_types=6"
    assert option(args, "-fflags") == "+bitexact"
    assert option(args, "-flags:v") == "+bitexact"
    assert option(args, "-flags:a") == "+bitexact"


def test_a_plan_that_keeps_metadata_strips_nothing():
    args = ffmpeg_args(make_plan(strip_metadata=False), SOURCE, SRC, DST)
    for flag in ("-map_metadata", "-map_chapters", "-bsf:v", "-fflags", "-metadata:s:v"):
        assert flag not in args


def test_threads_are_set_only_when_asked():
    assert "-threads" not in ffmpeg_args(make_plan(), SOURCE, SRC, DST)
    assert option(ffmpeg_args(make_plan(), SOURCE, SRC, DST, threads=1), "-threads") == "1"


def test_a_silent_source_gets_no_audio_mapping_filters_or_codec():
    silent = attrs.evolve(SOURCE, has_audio=False)
    args = ffmpeg_args(make_plan(), silent, SRC, DST)
    assert "-an" in args
    assert [args[i + 1] for i, a in enumerate(args) if a == "-map"] == ["0:v:0"]
    for flag in ("-af", "-c:a", "-ar", "-flags:a"):
        assert flag not in args


# --- video filters


def test_filters_run_in_order_crop_scale_colour_grain_speed_rate_format():
    names = list(chain(video_filters(make_plan(), SOURCE)))
    assert names == ["crop", "scale", "setsar", "eq", "hue", "noise", "setpts", "fps", "format"]


def test_the_picture_is_scaled_back_to_the_source_size():
    assert chain(video_filters(make_plan(), SOURCE))["scale"][:2] == ["360", "640"]


def test_odd_source_sizes_give_the_even_size_just_below():
    odd = attrs.evolve(SOURCE, width=361, height=641)
    assert output_size(odd) == (360, 640)
    assert chain(video_filters(make_plan(), odd))["scale"][:2] == ["360", "640"]
    width, height, x, y = crop_window(make_plan(crop_x=1.0, crop_y=1.0), odd)
    assert x + width <= 361 and y + height <= 641


@pytest.mark.parametrize("share", effects.CROP)
@pytest.mark.parametrize("position", effects.CROP_POSITION)
def test_the_crop_window_removes_the_planned_share_and_stays_inside(share, position):
    width, height, x, y = crop_window(make_plan(crop=share, crop_x=position, crop_y=position), SOURCE)
    assert 1 - width / 360 == pytest.approx(share, abs=2 / 360)
    assert 1 - height / 640 == pytest.approx(share, abs=2 / 640)
    assert (x, y) == ((0, 0) if position == 0 else (360 - width, 640 - height))


@given(
    width=st.integers(2, 4000), height=st.integers(2, 4000),
    share=st.floats(*effects.CROP), x=st.floats(*effects.CROP_POSITION), y=st.floats(*effects.CROP_POSITION),
)
def test_any_source_gets_an_even_crop_inside_the_frame_and_an_even_output(width, height, share, x, y):
    source = SourceInfo(width=width, height=height, duration_s=1.0, has_audio=False)
    crop_w, crop_h, left, top = crop_window(make_plan(crop=share, crop_x=x, crop_y=y), source)
    assert all(n % 2 == 0 for n in (crop_w, crop_h, left, top))
    assert crop_w >= 2 and left + crop_w <= width and crop_h >= 2 and top + crop_h <= height
    out_w, out_h = output_size(source)
    assert out_w % 2 == out_h % 2 == 0 and width - out_w <= 1 and height - out_h <= 1


@pytest.mark.parametrize("field, bounds", [
    ("brightness", effects.BRIGHTNESS), ("contrast", effects.CONTRAST), ("saturation", effects.SATURATION),
])
def test_colour_bounds_reach_eq_exactly(field, bounds):
    for value in bounds:
        eq = named(chain(video_filters(make_plan(**{field: value}), SOURCE))["eq"])
        assert float(eq[field]) == value


@pytest.mark.parametrize("degrees", effects.HUE_DEGREES)
def test_hue_bounds_reach_the_hue_filter(degrees):
    assert chain(video_filters(make_plan(hue=degrees), SOURCE))["hue"] == [f"h={degrees:g}"]


@pytest.mark.parametrize("amount", effects.NOISE)
def test_noise_bounds_give_temporal_noise_on_all_planes(amount):
    assert chain(video_filters(make_plan(noise=amount), SOURCE))["noise"] == [f"alls={amount}", "allf=t"]


@pytest.mark.parametrize("speed", effects.SPEED)
def test_speed_bounds_divide_the_timestamps(speed):
    assert chain(video_filters(make_plan(speed=speed), SOURCE))["setpts"] == [f"PTS/{speed:g}"]


def test_the_source_frame_rate_is_kept_and_an_unknown_one_left_alone():
    ntsc = attrs.evolve(SOURCE, fps=30000 / 1001)
    assert chain(video_filters(make_plan(), ntsc))["fps"] == ["30000/1001"]
    assert "fps" not in chain(video_filters(make_plan(), attrs.evolve(SOURCE, fps=0.0)))


def test_numbers_are_written_plainly():
    eq = named(chain(video_filters(make_plan(brightness=0.0001, contrast=1.0), SOURCE))["eq"])
    assert eq["brightness"] == "0.0001" and eq["contrast"] == "1"


# --- audio filters


@pytest.mark.parametrize("speed", effects.SPEED)
def test_without_pitch_the_audio_only_keeps_pace(speed):
    audio = chain(audio_filters(make_plan(speed=speed, pitch=None)))
    assert audio == {"aresample": [str(AUDIO_RATE)], "atempo": [f"{speed:g}"]}


@pytest.mark.parametrize("speed", effects.SPEED)
@pytest.mark.parametrize("pitch", effects.PITCH)
def test_pitch_shifts_the_rate_and_the_tempo_still_equals_the_speed(speed, pitch):
    text = audio_filters(make_plan(speed=speed, pitch=pitch))
    steps = [step.split("=") for step in text.split(",")]
    assert [name for name, _ in steps] == ["aresample", "asetrate", "aresample", "atempo"]
    rate, tempo = int(steps[1][1]), float(steps[3][1])
    assert rate / AUDIO_RATE == pytest.approx(pitch, abs=1 / AUDIO_RATE)
    assert rate / AUDIO_RATE * tempo == pytest.approx(speed, abs=1e-5)
    assert 0.5 <= tempo <= 2.0  # atempo's own range


# --- source info and time limit


@pytest.mark.parametrize("change", [{"width": 1}, {"height": 0}, {"duration_s": 0.0}, {"fps": -1.0}])
def test_impossible_sources_are_refused(change):
    with pytest.raises(ValueError):
        attrs.evolve(SOURCE, **change)


def test_the_input_is_one_local_file_read_by_a_video_demuxer():
    args = ffmpeg_args(make_plan(), SOURCE, SRC, DST)
    inputs = args[: args.index("-i")]
    assert option(inputs, "-protocol_whitelist") == "file"
    demuxers = option(inputs, "-format_whitelist").split(",")
    assert "mov" in demuxers and "matroska" in demuxers
    assert not {"hls", "dash", "concat", "image2", "sdp", "rtsp", "data", "tee"} & set(demuxers)
    assert "-f" not in inputs  # no demuxer probed: the allowlist alone


def test_a_probed_mp4_is_read_by_the_mov_demuxer_without_external_references():
    source = attrs.evolve(SOURCE, demuxer="mov,mp4,m4a,3gp,3g2,mj2")
    inputs = (args := ffmpeg_args(make_plan(), source, SRC, DST))[: args.index("-i")]
    assert option(inputs, "-f") == "mov"
    assert option(inputs, "-enable_drefs") == "0"
    assert option(inputs, "-use_absolute_path") == "0"
    matroska = attrs.evolve(SOURCE, demuxer="matroska,webm")
    inputs = (args := ffmpeg_args(make_plan(), matroska, SRC, DST))[: args.index("-i")]
    assert option(inputs, "-f") == "matroska" and "-enable_drefs" not in inputs


def test_the_decoder_refuses_pictures_much_larger_than_the_probed_size():
    args = ffmpeg_args(make_plan(), SOURCE, SRC, DST)
    limit = int(option(args[: args.index("-i")], "-max_pixels"))
    assert 360 * 640 < limit < 2 * 360 * 640


def test_every_output_stops_just_past_its_expected_duration():
    plan = make_plan(speed=0.97)
    args = ffmpeg_args(plan, SOURCE, SRC, DST, source_frames=Path("/out/frames.nut"))
    copy_until, frames_until = (float(args[i + 1]) for i, a in enumerate(args) if a == "-t")
    assert 2.0 / 0.97 < copy_until < 2.0 / 0.97 * 1.1 + 1
    assert 2.0 < frames_until < 2.0 * 1.1 + 1


def test_the_time_limits_follow_the_pixels_with_a_floor():
    big = SourceInfo(width=1920, height=1080, duration_s=180.0, has_audio=True, fps=60)
    small = SourceInfo(width=360, height=640, duration_s=180.0, has_audio=True, fps=25)
    for limit in (timeout_for, cpu_seconds_for):
        assert limit(attrs.evolve(small, duration_s=0.5), 1.0) >= 60
        assert limit(big, 1.0) > 8 * limit(small, 1.0) - 60 * 8
        assert limit(small, 0.97) > limit(small, 1.03)
        assert limit(attrs.evolve(small, fps=0.0), 1.0) > limit(attrs.evolve(small, fps=1.0), 1.0)
    # The old budget for 1080p60 (60 s + 10 s per second of copy) is kept for the biggest source.
    assert timeout_for(big, 1.0) >= 60 + 10 * 180


def test_a_copys_file_may_pass_its_cap_a_little_never_much():
    assert 50 * 2**20 < file_bytes_for(50 * 2**20) < 2 * 50 * 2**20
    assert file_bytes_for(None) > UNCAPPED_FILE_BYTES


@pytest.mark.parametrize(
    ("code", "stderr", "says"),
    [
        (-9, [], "CPU-time limit of 30 s"),
        (-25, [], "size limit of 1000 bytes"),
        (1, ["av_interleaved_write_frame(): File too large"], "size limit"),
        (1, ["Error: Cannot allocate memory"], "memory limit of 256 MiB"),
        (245, ["Error while opening decoder: Resource temporarily unavailable"], "memory limit of 256 MiB"),
        (-11, [], "SIGSEGV"),
        (1, ["Invalid data found when processing input"], None),
    ],
)
def test_a_child_stopped_by_a_limit_is_told_apart_in_one_line(code, stderr, says):
    why = ChildLimits.of(29.5, 256 * 2**20, 1000).why_stopped(code, stderr)
    assert (why is None) if says is None else (says in why and "\n" not in why)


# --- binary


def test_ffmpeg_binary_prefers_the_environment(monkeypatch, tmp_path):
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FFMPEG_BINARY", str(fake))
    assert ffmpeg_binary() == str(fake)


def test_ffmpeg_binary_refuses_a_missing_configured_binary(monkeypatch, tmp_path):
    monkeypatch.setenv("FFMPEG_BINARY", str(tmp_path / "nope"))
    with pytest.raises(FfmpegNotFound, match="FFMPEG_BINARY"):
        ffmpeg_binary()
