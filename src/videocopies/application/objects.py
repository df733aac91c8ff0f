"""The object lifecycle: one pass deletes the sources and copies whose time is up, and the
strays, a small batch at a time. The deletion is decided first, under the rows' locks, so that
a quote arriving meanwhile either keeps its source or is refused; a row says deleted only after
the store's delete succeeded, so a store that is away loses nothing: the pass stops and the
next one tries again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import attrs

from videocopies.application.ports import Clock
from videocopies.domain.objects import Lifetimes, ObjectKind, ObjectState, StoredObject, strays

# The kind of Conflict a quote or confirmation meets when its source's deletion was decided.
SOURCE_GONE = "source_gone"
PREFIXES = ("sources", "copies")  # what the service stores; anything else in the store is left alone


class ObjectRows(Protocol):
    async def note_released(self, now: datetime) -> None:
        """Stamp `released_at` on objects nothing needs any more (a copy's order closed; no open
        order or live quote uses a source), and clear it on a source that is used again."""
        ...

    async def due(self, kind: ObjectKind, before: datetime, limit: int) -> Sequence[StoredObject]:
        """Objects of `kind` released (or delivered) before `before`, oldest first."""
        ...

    async def begin_deleting(self, keys: Sequence[str], before: datetime, now: datetime) -> list[str]:
        """Decide to delete those of `keys` (all of one kind, released or delivered before
        `before`) that are still due, checked under their rows' locks: a source that an order or
        a live quote took meanwhile is kept. Returns the keys whose deletion is decided; a quote
        or confirmation that comes later for one of them is refused."""
        ...

    async def mark_deleted(self, keys: Sequence[str], now: datetime) -> None:
        """The store's delete of these keys succeeded."""
        ...

    async def look_up(self, keys: Sequence[str]) -> tuple[dict[str, ObjectState], set[str]]:
        """The state of each key's row, and the keys a row may still come for."""
        ...

    async def forget_deleted(self, before: datetime, limit: int) -> int:
        """Drop rows of objects deleted before `before`; returns how many."""
        ...


class ListedStore(Protocol):
    async def keys(self, prefix: str) -> list[str]: ...
    async def delete(self, key: str) -> None: ...


@attrs.frozen
class ObjectTally:
    """Objects of one kind in one state, and their bytes (from their rows)."""

    kind: str
    state: str
    objects: int
    bytes: int


@attrs.frozen
class StoreDisk:
    """The disk of a store on a local filesystem (all-in-one: the workers' disk too)."""

    total: int
    free: int

    @property
    def used(self) -> int:
        return self.total - self.free


@attrs.frozen
class ScratchUse:
    """A worker's or edge's scratch directory, as the node last measured it."""

    role: str
    node: str
    bytes: int
    files: int


@attrs.frozen
class NodeFigures:
    """What only a core knows, from the nodes that report to it: the store's disk (None: core
    has no store on a local filesystem) and each node's scratch use."""

    disk: StoreDisk | None
    scratch: tuple[ScratchUse, ...]


class ObjectTallies(Protocol):
    async def tallies(self) -> Sequence[ObjectTally]: ...


class CoreFigures(Protocol):
    async def node_figures(self) -> NodeFigures:
        """Raises CoreUnreachable when core cannot be asked."""
        ...


@attrs.define
class CoreUnreachable(Exception):
    """Core did not answer for its figures; `reason` says how."""

    reason: str


@attrs.define
class SweepResult:
    deleted: dict[str, int] = attrs.Factory(lambda: {"source": 0, "copy": 0, "stray": 0})
    failed: int = 0  # deletes the store refused (it is away): retried next pass
    forgotten: int = 0

    @property
    def anything(self) -> bool:
        return bool(sum(self.deleted.values()) or self.failed or self.forgotten)


class ObjectLifecycle:
    def __init__(
        self, rows: ObjectRows, store: ListedStore, clock: Clock, lifetimes: Lifetimes, batch: int = 100
    ) -> None:
        self._rows, self._store, self._clock, self.lifetimes, self._batch = rows, store, clock, lifetimes, batch

    async def __call__(self) -> SweepResult:
        result = SweepResult()
        await self._rows.note_released(self._clock.now())
        for kind in ObjectKind:
            while await self._expire(kind, result):
                pass
        if not result.failed:
            await self._sweep_strays(result)
        # Batch after batch, like the deletions: one batch a pass would forget 100 rows a minute
        # while a busy pass deletes more, and the deleted rows would grow without end.
        before = self._clock.now() - self.lifetimes.copy_retention
        while (forgotten := await self._rows.forget_deleted(before, self._batch)) > 0:
            result.forgotten += forgotten
            if forgotten < self._batch:
                break
        return result

    async def _expire(self, kind: ObjectKind, result: SweepResult) -> bool:
        """One batch; True when there may be more."""
        now = self._clock.now()
        before = self.lifetimes.released_before(kind, now)
        found = await self._rows.due(kind, before, self._batch)
        due = [o.key for o in found if o.is_due(now, self.lifetimes)]
        if due:
            due = await self._rows.begin_deleting(due, before, now)
        gone = await self._delete(due, result)
        result.deleted[kind.value] += len(gone)
        return len(found) == self._batch and len(gone) == len(due) and bool(due)

    async def _sweep_strays(self, result: SweepResult) -> None:
        listed = [key for prefix in PREFIXES for key in await self._store.keys(prefix)]
        for start in range(0, len(listed), self._batch):
            chunk = listed[start:start + self._batch]
            states, awaited = await self._rows.look_up(chunk)
            gone = await self._delete(strays(chunk, states, awaited), result, record=False)
            result.deleted["stray"] += len(gone)
            if result.failed:
                return

    async def _delete(self, keys: list[str], result: SweepResult, record: bool = True) -> list[str]:
        """Delete from the store, then record what went; a failure ends the batch there."""
        gone: list[str] = []
        for key in keys:
            try:
                await self._store.delete(key)
            except Exception:  # noqa: BLE001 - the store is away: keep the row as it is, retry next pass
                result.failed += 1
                break
            gone.append(key)
        if record and gone:
            await self._rows.mark_deleted(gone, self._clock.now())
        return gone
