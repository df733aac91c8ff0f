"""Test clips: the package's own generator, under the name the tests import."""

from videocopies.adapters.ffmpeg.clips import make_clip

__all__ = ["make_clip"]
