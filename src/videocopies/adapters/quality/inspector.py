"""The CopyInspector port on PyAV and numpy: a copy is held against its source at matching
moments, through the plan's speed change and crop."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import attrs
import numpy as np

from videocopies.adapters.quality.frames import Picture, frames_near, header, kept_frames, nearest, nearest_frames
from videocopies.adapters.quality.measures import HASH_SIDE, SSIM_SIDE, hamming, phash, resample, ssim
from videocopies.adapters.quality.sampling import SAMPLES, THUMB_SIDE, moments, reach_s
from videocopies.application.ports import CopyLook
from videocopies.domain.effects import EffectsPlan


@attrs.frozen
class _Source:
    key: tuple[str, int, int, str]
    width: int
    height: int
    duration_s: float
    pictures: tuple[Picture, ...]
    hashes: dict[int, int] = attrs.field(factory=dict)  # picture index -> hash, as copies need them

    def hash_of(self, index: int) -> int:
        if index not in self.hashes:
            self.hashes[index] = phash(resample(self.pictures[index].gray, HASH_SIDE))
        return self.hashes[index]


def crop_window(plan: EffectsPlan, width: int, height: int) -> tuple[float, float, float, float]:
    """The plan's crop on a THUMB_SIDE square thumbnail of a width x height source, the same
    rounding as the renderer's (even sides and offsets)."""
    crop_w = max(2, int(width * (1 - plan.crop)) // 2 * 2)
    crop_h = max(2, int(height * (1 - plan.crop)) // 2 * 2)
    x = int((width - crop_w) * plan.crop_x) // 2 * 2
    y = int((height - crop_h) * plan.crop_y) // 2 * 2
    sx, sy = THUMB_SIDE / width, THUMB_SIDE / height
    return x * sx, y * sy, (x + crop_w) * sx, (y + crop_h) * sy


class PyAvCopyInspector:
    """Samples the source once per file (the copies of a job share it) and each copy once.
    The source's frames come from `source_frames` when the renderer kept them (it decodes
    the source anyway), else from decoding the source here.
    `cpu_seconds` adds up the process CPU time spent measuring (the decoder's threads included),
    for the benchmark."""

    def __init__(self, samples: int = SAMPLES) -> None:
        self._samples = samples
        self._source: _Source | None = None
        self._lock = threading.Lock()
        self.cpu_seconds = 0.0

    async def inspect(
        self,
        source: Path,
        copy: Path,
        plan: EffectsPlan,
        source_frames: Path | None = None,
        copy_frames: Path | None = None,
    ) -> CopyLook:
        return await asyncio.to_thread(self.inspect_blocking, source, copy, plan, source_frames, copy_frames)

    def inspect_blocking(
        self,
        source: Path,
        copy: Path,
        plan: EffectsPlan,
        source_frames: Path | None = None,
        copy_frames: Path | None = None,
    ) -> CopyLook:
        with self._lock:
            began = time.process_time()
            try:
                return self._measure(self._sampled(source, source_frames), copy, plan, copy_frames)
            finally:
                self.cpu_seconds += time.process_time() - began

    def _sampled(self, path: Path, kept: Path | None) -> _Source:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, str(kept))
        if self._source is None or self._source.key != key:
            head = header(path)
            wanted = moments(head.duration_s, self._samples)
            pictures = kept_frames(kept) if kept is not None else []
            # A video too short, or too sparse, for the kept frames: decode it here.
            pictures = pictures or frames_near(path, wanted, reach_s(head.fps)) or nearest_frames(path, wanted)
            self._source = _Source(key, head.width, head.height, head.duration_s, tuple(pictures))
        return self._source

    def _measure(self, original: _Source, copy: Path, plan: EffectsPlan, kept: Path | None) -> CopyLook:
        wanted = [m / plan.speed for m in moments(original.duration_s, self._samples)]
        window = crop_window(plan, original.width, original.height)
        times = np.array([p.at for p in original.pictures])
        similarity, distances, fingerprint = [], [], []
        pictures = kept_frames(kept) if kept is not None else []
        seen_in_copy = nearest(pictures, wanted) if pictures else nearest_frames(copy, wanted)
        for picture in seen_in_copy:
            # The copy at time t shows the source at t x speed.
            match = int(np.argmin(np.abs(times - picture.at * plan.speed)))
            seen = original.pictures[match].gray
            similarity.append(ssim(resample(seen, SSIM_SIDE, window), resample(picture.gray, SSIM_SIDE)))
            copy_hash = phash(resample(picture.gray, HASH_SIDE))
            distances.append(hamming(copy_hash, original.hash_of(match)))
            fingerprint.append(copy_hash)
        return CopyLook(
            ssim=round(float(np.mean(similarity)), 4),
            phash_distance=round(float(np.mean(distances)), 2),
            fingerprint=tuple(fingerprint),
        )
