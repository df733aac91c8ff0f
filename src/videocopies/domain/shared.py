"""Identifiers, the error and event bases shared by every bounded context."""

from __future__ import annotations

from typing import TYPE_CHECKING, NewType

import attrs

if TYPE_CHECKING:
    from attrs import AttrsInstance

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


def describe(error: AttrsInstance) -> str:
    """An attrs exception as `Name(field=value, ...)`: the facts, for logs and messages."""
    fields = ", ".join(f"{a.name}={getattr(error, a.name)!r}" for a in attrs.fields(type(error)))
    return f"{type(error).__name__}({fields})"


@attrs.frozen
class DomainEvent:
    """Something that happened; aggregates append events and use cases publish them."""
