"""Objects in the store and how long each lives.

A source (the video a user sent) is kept while an order or a live quote uses it, and for a
grace period after nothing does; a copy for a retention period after the user received it
(or after its order closed, when it never was received), so the user can ask for it again.
An object the store holds without a row that says it is stored, and for which no row can
still come, is a stray and goes at once.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

import attrs


class ObjectKind(enum.Enum):
    SOURCE = "source"
    COPY = "copy"


class ObjectState(enum.Enum):
    STORED = "stored"
    DELIVERED = "delivered"  # a copy the user received
    DELETED = "deleted"  # gone from the store (recorded only after the store's delete succeeded)


@attrs.frozen
class Lifetimes:
    source_grace: timedelta = timedelta(hours=1)  # after nothing uses the source any more
    copy_retention: timedelta = timedelta(days=1)  # after delivery, or after the order closed

    def __attrs_post_init__(self) -> None:
        if self.source_grace < timedelta(0) or self.copy_retention < timedelta(0):
            raise ValueError("an object's lifetime cannot be negative")

    def released_before(self, kind: ObjectKind, now: datetime) -> datetime:
        """Objects of `kind` released (or, copies, delivered) before this are due."""
        return now - (self.source_grace if kind is ObjectKind.SOURCE else self.copy_retention)


@attrs.frozen
class StoredObject:
    key: str
    kind: ObjectKind
    state: ObjectState
    stored_at: datetime
    size: int | None = None
    sha256: str | None = None
    order_id: str | None = None
    delivered_at: datetime | None = None
    released_at: datetime | None = None  # nothing needs it any more (a copy: its order closed)
    deleted_at: datetime | None = None

    @property
    def in_store(self) -> bool:
        """Still held by the store: a copy that can be sent again."""
        return self.state is not ObjectState.DELETED

    def due_at(self, lifetimes: Lifetimes) -> datetime | None:
        """When the object is to be deleted; None while it is needed (or already gone)."""
        if self.state is ObjectState.DELETED:
            return None
        if self.kind is ObjectKind.COPY and self.state is ObjectState.DELIVERED and self.delivered_at is not None:
            return self.delivered_at + lifetimes.copy_retention
        if self.released_at is None:
            return None
        if self.kind is ObjectKind.SOURCE:
            return self.released_at + lifetimes.source_grace
        return self.released_at + lifetimes.copy_retention

    def is_due(self, now: datetime, lifetimes: Lifetimes) -> bool:
        due = self.due_at(lifetimes)
        return due is not None and due <= now


def strays(listed: Iterable[str], states: Mapping[str, ObjectState], awaited: Iterable[str]) -> list[str]:
    """The keys the store holds that no row keeps: no row, or a row that says deleted, and no
    row can still come for them (`awaited`: an upload whose job or inbox event is still open)."""
    waiting = set(awaited)
    return sorted(
        key for key in set(listed)
        if states.get(key, ObjectState.DELETED) is ObjectState.DELETED and key not in waiting
    )
