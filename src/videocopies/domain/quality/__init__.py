"""The copy quality gate: a copy must look like its source to a person and differ from it,
and from the order's other copies, for a matcher."""

from videocopies.domain.quality.gate import (
    MAX_MOMENTS,
    MAX_RERENDERS,
    CopyQuality,
    QualityThresholds,
    Shortfall,
    pair_distance,
    variant,
)

__all__ = ["MAX_MOMENTS", "MAX_RERENDERS", "CopyQuality", "QualityThresholds", "Shortfall", "pair_distance", "variant"]
