"""Identifiers, the error and event bases shared by every bounded context."""

from __future__ import annotations

from datetime import datetime
from typing import NewType

import attrs

UserId = NewType("UserId", int)
OrderId = NewType("OrderId", str)
JobId = NewType("JobId", str)
LotId = NewType("LotId", str)
WorkerId = NewType("WorkerId", str)
OwnerToken = NewType("OwnerToken", str)


@attrs.define
class DomainError(Exception):
    """A rule of the domain refused an action; subclasses carry the facts as fields."""

    def __str__(self) -> str:
        return describe(self)


def describe(error: Exception) -> str:
    """An attrs exception as `Name(field=value, ...)`: the facts, for logs and messages."""
    fields = ", ".join(f"{a.name}={getattr(error, a.name)!r}" for a in attrs.fields(type(error)))
    return f"{type(error).__name__}({fields})"


@attrs.frozen
class DomainEvent:
    """Something that happened; aggregates append events and use cases publish them."""


def ensure_aware(moment: datetime) -> datetime:
    """Every instant in the domain is timezone-aware, so comparisons never mix clocks."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment!r}: pass a timezone-aware instant")
    return moment
