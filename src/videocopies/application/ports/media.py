"""What a worker does to video files: render a copy, probe it, compare it with its source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import attrs

from videocopies.domain.effects import EffectsPlan


class Transcoder(Protocol):
    async def render(
        self, plan: EffectsPlan, source: Path, target: Path, *, source_frames: Path | None = None,
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        """Render the copy; with `source_frames`, also keep there the source frames a
        CopyInspector compares copies with (the render decodes the source anyway); `on_progress`
        hears the fraction done as it goes."""
        ...


@attrs.frozen
class ProbeResult:
    duration_s: float
    width: int
    height: int
    has_audio: bool
    frames: int


@attrs.frozen
class CopyLook:
    """How a rendered copy compares with its source, measured at the same moments of both:
    `ssim` (1 = identical to a viewer) and the mean Hamming distance of 64-bit perceptual
    hashes (0 = the same to a matcher); `fingerprint` holds the copy's hash at each moment,
    so copies of one order can be held against each other."""

    ssim: float
    phash_distance: float
    fingerprint: tuple[int, ...]


class CopyInspector(Protocol):
    async def inspect(
        self,
        source: Path,
        copy: Path,
        plan: EffectsPlan,
        source_frames: Path | None = None,
        copy_frames: Path | None = None,
    ) -> CopyLook:
        """Measure `copy` against `source`; frames already kept by the render (`source_frames`)
        and the verification (`copy_frames`) are read instead of decoding the videos again."""
        ...


class Prober(Protocol):
    async def probe(self, path: Path, full_decode: bool = True, keep_frames: Path | None = None) -> ProbeResult:
        """With a full decode and `keep_frames`, a prober may also keep there the frames a
        CopyInspector compares (the decode is done anyway); one that does not leaves no file."""
        ...
