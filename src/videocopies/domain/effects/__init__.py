"""Effects: the seeded, immutable plan of changes for each copy of a video."""

from videocopies.domain.effects.layout import EDGE_CROP, LAYOUT, LAYOUTS
from videocopies.domain.effects.plan import (
    MAX_COPIES,
    MIN_PLAN_DISTANCE,
    PLAN_VERSION,
    RERENDER_CROP,
    RERENDER_SPOTS,
    EffectsPlan,
    InvalidEffectsPlan,
    distance,
    plan_copies,
)
from videocopies.domain.effects.seeded import SeededPlans

__all__ = [
    "EDGE_CROP", "LAYOUT", "LAYOUTS", "MAX_COPIES", "MIN_PLAN_DISTANCE", "PLAN_VERSION", "RERENDER_CROP",
    "RERENDER_SPOTS", "EffectsPlan", "InvalidEffectsPlan", "SeededPlans", "distance", "plan_copies",
]
