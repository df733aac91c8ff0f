"""Probing and verifying media files with PyAV."""

from videocopies.adapters.probe.errors import (
    CopyRejected,
    CorruptMedia,
    FrameTooLarge,
    InvalidMedia,
    MediaRejected,
    NotAVideo,
    ProbeTimedOut,
    SourceTooBig,
    SourceTooLong,
)
from videocopies.adapters.probe.media import MediaInfo
from videocopies.adapters.probe.pyav import PyAvProber
from videocopies.adapters.probe.rules import CopyTolerance, Limits, check_copy
from videocopies.adapters.probe.source import SourceFacts, inspect_source

__all__ = [
    "CopyRejected",
    "CopyTolerance",
    "CorruptMedia",
    "FrameTooLarge",
    "InvalidMedia",
    "Limits",
    "MediaInfo",
    "MediaRejected",
    "NotAVideo",
    "ProbeTimedOut",
    "PyAvProber",
    "SourceFacts",
    "SourceTooBig",
    "SourceTooLong",
    "check_copy",
    "inspect_source",
]
