"""How a job's plans are stored: every plan, or the seed they are drawn from (revision 0030)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videocopies.domain.effects import EffectsPlan, SeededPlans


def plans_from_json(stored: Any) -> Sequence[EffectsPlan]:
    """Every plan (a list), or the seed they are drawn from (an object, revision 0030)."""
    if isinstance(stored, dict):
        return SeededPlans(stored["seed"], stored["copies"])
    return tuple(EffectsPlan.from_dict(p) for p in stored)


def plans_json(plans: Sequence[EffectsPlan], keep_seed: bool) -> Any:
    """`keep_seed`: plans drawn from a seed are stored as it, which code of level 12 cannot read
    (revision 0030 leaves that code out); otherwise every plan is stored."""
    if keep_seed and isinstance(plans, SeededPlans):
        return {"seed": plans.seed, "copies": plans.copies}
    return [p.to_dict() for p in plans]
