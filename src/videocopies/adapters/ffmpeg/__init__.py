"""FFmpeg adapter: effects plans rendered to arguments (pure) and run as a watched child process."""

from videocopies.adapters.ffmpeg.binary import FfmpegNotFound, ffmpeg_binary
from videocopies.adapters.ffmpeg.render import SourceInfo, ffmpeg_args, output_size, timeout_for, video_bitrate_cap
from videocopies.adapters.ffmpeg.transcoder import (
    FfmpegTranscoder,
    SourceTooHeavy,
    TranscodeFailed,
    TranscodeLimited,
    TranscodeStalled,
    TranscodeTimeout,
    probe,
)

__all__ = [
    "FfmpegNotFound", "FfmpegTranscoder", "SourceInfo", "SourceTooHeavy", "TranscodeFailed", "TranscodeLimited",
    "TranscodeStalled",
    "TranscodeTimeout", "ffmpeg_args", "ffmpeg_binary", "output_size", "probe", "timeout_for", "video_bitrate_cap",
]
