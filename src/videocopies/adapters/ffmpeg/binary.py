"""Which FFmpeg binary to run: FFMPEG_BINARY when set, else the static build from imageio-ffmpeg."""

from __future__ import annotations

import os
import shutil

ENV_VAR = "FFMPEG_BINARY"


class FfmpegNotFound(RuntimeError):
    """No usable FFmpeg binary: the worker cannot render anything."""


def ffmpeg_binary() -> str:
    """The path of the FFmpeg executable to run."""
    if configured := os.environ.get(ENV_VAR):
        # shutil.which accepts both a bare name on PATH and a path, and checks it is executable.
        if found := shutil.which(configured):
            return found
        raise FfmpegNotFound(f"{ENV_VAR}={configured!r} is not an executable file")
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as e:
        raise FfmpegNotFound(f"no FFmpeg: set {ENV_VAR} or install imageio-ffmpeg ({e})") from e
