"""Making one copy: render it by its plan, verify it (it decodes fully, keeps the source's
picture size and sound, lasts as long as the source at the plan's speed), and hold it to the
quality gate, rendering the plan's next variant while it misses."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from videocopies.application.ports import CopyInspector, Prober, ProbeResult, Transcoder
from videocopies.domain.effects import EffectsPlan
from videocopies.domain.quality import MAX_RERENDERS, CopyQuality, QualityThresholds, pair_distance, variant

log = logging.getLogger(__name__)


@attrs.define
class CopyRejected(Exception):
    """A rendered copy failed verification: it is not stored and not checkpointed."""

    index: int
    reason: str

    def __str__(self) -> str:
        return f"copy {self.index + 1} rejected: {self.reason}"


@attrs.define
class CopyTooLarge(Exception):
    """A rendered copy over what the Bot API server accepts in one upload: it is not stored
    and not sent, and it is settled like a copy that could not be made (never charged)."""

    index: int
    size: int
    limit: int

    def __str__(self) -> str:
        return f"copy {self.index + 1} is {self.size} bytes, over the {self.limit}-byte send limit"


def check_copy(source: ProbeResult, copy: ProbeResult, plan: EffectsPlan, index: int, tolerance_s: float) -> None:
    """A copy must keep the picture size and the sound, decode fully, and last as long as
    the source at the plan's speed."""
    # 4:2:0 video needs even sides, so an odd source side comes back one pixel smaller.
    if abs(copy.width - source.width) > 1 or abs(copy.height - source.height) > 1:
        raise CopyRejected(index, f"size {copy.width}x{copy.height}, source {source.width}x{source.height}")
    if copy.has_audio != source.has_audio:
        raise CopyRejected(index, "audio track " + ("missing" if source.has_audio else "unexpected"))
    if copy.frames <= 0:
        raise CopyRejected(index, "no decodable frames")
    expected = source.duration_s / plan.speed
    if abs(copy.duration_s - expected) > tolerance_s + 0.02 * expected:
        raise CopyRejected(index, f"duration {copy.duration_s:.2f}s, expected {expected:.2f}s")


class MakeCopy:
    def __init__(
        self,
        transcoder: Transcoder,
        prober: Prober,
        inspector: CopyInspector | None,
        thresholds: QualityThresholds,
        duration_tolerance_s: float,
        max_bytes: int | None,
    ) -> None:
        """`inspector` None: no quality gate, a copy that passes verification is kept.
        `max_bytes`: the largest copy that may be sent (None: any)."""
        self._transcoder, self._prober, self._inspector = transcoder, prober, inspector
        self.thresholds, self._tolerance_s, self._max_bytes = thresholds, duration_tolerance_s, max_bytes

    async def __call__(
        self,
        job_id: str,
        source: Path,
        target: Path,
        original: ProbeResult,
        plan: EffectsPlan,
        fingerprints: dict[int, tuple[int, ...]],
        index: int,
        on_progress: Callable[[float], None] | None = None,
    ) -> tuple[ProbeResult | None, CopyQuality | None]:
        """Render and verify the copy; with a quality gate, render it again with the next variant
        of its plan while it misses a threshold, at most MAX_RERENDERS times. The variants depend
        only on the plan, so a worker that takes the job over renders the same ones. Returns the probe
        of the kept copy (None when every render missed) and the figures it was judged by."""
        quality = None
        # The first render keeps the source's frames for the gate; later ones reuse them.
        kept = source.with_name("source-frames.nut")
        progress: dict[str, Any] = {"on_progress": on_progress} if on_progress is not None else {}
        for attempt in range(MAX_RERENDERS + 1):
            used = variant(plan, attempt)
            if self._inspector is not None and not kept.exists():
                await self._transcoder.render(used, source, target, source_frames=kept, **progress)
            else:
                await self._transcoder.render(used, source, target, **progress)
            self._check_fits(target, index)
            if self._inspector is None:
                made = await self._prober.probe(target, full_decode=True)
                check_copy(original, made, used, index, self._tolerance_s)
                return made, None
            # The verification's full decode keeps the copy's frames the gate compares.
            seen = target.with_suffix(".frames.nut")
            made = await self._prober.probe(target, full_decode=True, keep_frames=seen)
            check_copy(original, made, used, index, self._tolerance_s)
            try:
                look = await self._inspector.inspect(
                    source, target, used, kept if kept.exists() else None, seen if seen.exists() else None
                )
            finally:
                seen.unlink(missing_ok=True)
            # A copy checkpointed by a worker of another release may have been looked at in fewer
            # or more moments: it cannot be compared, and is passed over rather than failing the job.
            comparable = [other for other in fingerprints.values() if len(other) == len(look.fingerprint)]
            pairs = [pair_distance(look.fingerprint, other) for other in comparable]
            closest = min(pairs) if pairs else None
            quality = CopyQuality(look.ssim, look.phash_distance, closest, attempt, look.fingerprint)
            if not self.thresholds.shortfalls(quality):
                fingerprints[index] = look.fingerprint
                return made, quality
            log.info("copy %d of job %s misses the quality gate on render %d: %s", index, job_id, attempt + 1,
                     quality)
            target.unlink(missing_ok=True)
        return None, quality

    def _check_fits(self, target: Path, index: int) -> None:
        limit = self._max_bytes
        if limit is not None and (size := target.stat().st_size) > limit:
            target.unlink()
            raise CopyTooLarge(index, size, limit)
