"""How a job's plans are stored: every plan, or the seed they are drawn from (revision 0030)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videocopies.domain.effects import EffectsPlan, SeededPlans


def plans_from_json(stored: Any) -> Sequence[EffectsPlan]:
    """Every plan (a list), or the seed they are drawn from (an object, revision 0030), with
    the layout of the first plans (a job stored before layouts has layout 1)."""
    if isinstance(stored, dict):
        return SeededPlans(stored["seed"], stored["copies"], stored.get("layout", 1))
    return tuple(EffectsPlan.from_dict(p) for p in stored)


def plans_json(plans: Sequence[EffectsPlan], keep_seed: bool) -> Any:
    """`keep_seed`: plans drawn from a seed are stored as it, which code of level 12 cannot read
    (revision 0030 leaves that code out); otherwise every plan is stored. Code of level 14 before
    layouts reads a seed with `layout` 2 as layout 1: the plans it hands out differ, and each copy
    still passes the quality gate on its own (docs/quality.md)."""
    if keep_seed and isinstance(plans, SeededPlans):
        kept: dict[str, int] = {"seed": plans.seed, "copies": plans.copies}
        if plans.layout != 1:
            kept["layout"] = plans.layout
        return kept
    return [p.to_dict() for p in plans]
