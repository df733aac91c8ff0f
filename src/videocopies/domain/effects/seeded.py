"""An order's plans kept as the seed they are drawn from."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from videocopies.domain.effects.layout import LAYOUT
from videocopies.domain.effects.plan import (
    MAX_COPIES,
    EffectsPlan,
    InvalidEffectsPlan,
    check_layout,
    plan_copies,
)


class SeededPlans(Sequence[EffectsPlan]):
    """An order's plans as its seed fixes them (`plan_copies`), drawn the first time a plan is
    read. Storage keeps the seed and the number of copies instead of every plan, so a
    confirmation, which only stores the job, never draws them: the claim that hands the copies
    out does. `layout` is how the first plans are laid out (`plan_copies`): a job keeps the one
    it was confirmed with."""

    __slots__ = ("seed", "copies", "layout", "_drawn")

    def __init__(self, seed: int, copies: int, layout: int = LAYOUT) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidEffectsPlan(f"a seed is a whole number, not {seed!r}")
        if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= MAX_COPIES:
            raise InvalidEffectsPlan(f"an order has 1..{MAX_COPIES} copies, not {copies!r}")
        check_layout(layout)
        self.seed, self.copies, self.layout = seed, copies, layout
        self._drawn: tuple[EffectsPlan, ...] | None = None

    def drawn(self) -> tuple[EffectsPlan, ...]:
        if self._drawn is None:
            self._drawn = plan_copies(self.seed, self.copies, self.layout)
        return self._drawn

    def __len__(self) -> int:
        return self.copies

    @overload
    def __getitem__(self, index: int) -> EffectsPlan: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[EffectsPlan, ...]: ...
    def __getitem__(self, index: int | slice) -> EffectsPlan | tuple[EffectsPlan, ...]:
        return self.drawn()[index]

    def __iter__(self) -> Iterator[EffectsPlan]:
        return iter(self.drawn())

    def __eq__(self, other: object) -> bool:
        # The same plans, however each side holds them.
        if isinstance(other, SeededPlans):
            return (self.seed, self.copies, self.layout) == (other.seed, other.copies, other.layout)
        if isinstance(other, Sequence):
            return self.drawn() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.drawn())

    def __repr__(self) -> str:
        return f"SeededPlans(seed={self.seed}, copies={self.copies}, layout={self.layout})"
