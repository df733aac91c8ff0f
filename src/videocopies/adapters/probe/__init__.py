"""Probing and verifying media files with PyAV."""

from videocopies.adapters.probe.errors import (
    CopyRejected,
    CorruptMedia,
    InvalidMedia,
    MediaRejected,
    NotAVideo,
    ProbeTimedOut,
)
from videocopies.adapters.probe.media import MediaInfo
from videocopies.adapters.probe.pyav import PyAvProber
from videocopies.adapters.probe.rules import CopyTolerance, Limits, check_copy

__all__ = [
    "CopyRejected",
    "CopyTolerance",
    "CorruptMedia",
    "InvalidMedia",
    "Limits",
    "MediaInfo",
    "MediaRejected",
    "NotAVideo",
    "ProbeTimedOut",
    "PyAvProber",
    "check_copy",
]
