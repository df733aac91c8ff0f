"""Thresholds a rendered copy must meet, and which plan renders it again when it does not."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from videocopies.domain.effects import EffectsPlan

# A copy below a threshold is rendered again with the next variant of its plan, at most this
# often; then it is given up: not delivered, not charged.
MAX_RERENDERS = 2


class Shortfall(enum.Enum):
    LOOKS_DIFFERENT = "looks_different"  # a viewer would notice: SSIM below the floor
    MATCHES_SOURCE = "matches_source"  # a matcher would recognise the source: hash too close
    MATCHES_OTHER_COPY = "matches_other_copy"  # a near-duplicate of another copy of the order


# A copy's fingerprint: its 64-bit perceptual hash at each moment the gate looks at.
MAX_MOMENTS = 64


def _hashes(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _fingerprint(_obj: object, _attribute: attrs.Attribute[tuple[int, ...]], value: tuple[int, ...]) -> None:
    if len(value) > MAX_MOMENTS or not all(type(h) is int and 0 <= h < 1 << 64 for h in value):
        raise ValueError(f"a fingerprint is at most {MAX_MOMENTS} 64-bit hashes, got {value!r}")


@attrs.frozen
class CopyQuality:
    """The figures a copy was judged by; `min_pair_distance` is None for the first (or only)
    copy of an order, which has no other copy to be held against. `fingerprint` is how the copy
    looks to a matcher: kept with its checkpoint, so a worker that takes the job over holds its
    copies against the ones made before it, not only against its own."""

    ssim: float
    phash_distance: float
    min_pair_distance: float | None = None
    attempt: int = 0
    fingerprint: tuple[int, ...] = attrs.field(default=(), converter=_hashes, validator=_fingerprint)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CopyQuality:
        given: dict[str, Any] = {field.name: data.get(field.name) for field in attrs.fields(cls) if field.name in data}
        return cls(**given)


def _unit(_obj: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be within 0..1, got {value!r}")


def _bits(_obj: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 64.0:
        raise ValueError(f"{attribute.name} must be within 0..64 bits, got {value!r}")


@attrs.frozen(kw_only=True)
class QualityThresholds:
    """The floors a copy must reach. Defaults calibrated on the generated corpus (docs/quality.md):
    every good plan clears them with room, a re-encode without effects does not."""

    min_ssim: float = attrs.field(default=0.85, validator=_unit)
    min_phash_distance: float = attrs.field(default=2.0, validator=_bits)
    min_pair_distance: float = attrs.field(default=1.0, validator=_bits)

    def shortfalls(self, quality: CopyQuality) -> tuple[Shortfall, ...]:
        """Every threshold the copy misses; empty when it may be delivered."""
        missed = []
        if quality.ssim < self.min_ssim:
            missed.append(Shortfall.LOOKS_DIFFERENT)
        if quality.phash_distance < self.min_phash_distance:
            missed.append(Shortfall.MATCHES_SOURCE)
        if quality.min_pair_distance is not None and quality.min_pair_distance < self.min_pair_distance:
            missed.append(Shortfall.MATCHES_OTHER_COPY)
        return tuple(missed)


def pair_distance(a: Sequence[int], b: Sequence[int]) -> float:
    """Mean Hamming distance of two copies' perceptual hashes taken at the same moments."""
    if not a or len(a) != len(b):
        raise ValueError("fingerprints must be taken at the same, non-empty, moments")
    return sum((x ^ y).bit_count() for x, y in zip(a, b, strict=True)) / len(a)


def variant(plan: EffectsPlan, rerender: int, others: Iterable[EffectsPlan] = ()) -> EffectsPlan:
    """The plan of the `rerender`-th re-render of a copy (0 = the plan itself): each the next
    deterministic variant (seed + attempt) of the one before, away from the order's other
    copies, so any worker re-rendering the copy renders the same thing."""
    if not 0 <= rerender <= MAX_RERENDERS:
        raise ValueError(f"a copy is rendered again at most {MAX_RERENDERS} times, not {rerender}")
    others = tuple(others)
    for _ in range(rerender):
        plan = plan.next_variant(avoid=others)
    return plan
