"""The object lifecycle: one pass deletes the sources and copies whose time is up, and the
strays, a small batch at a time. The deletion is decided first, under the rows' locks, so that
a quote arriving meanwhile either keeps its source or is refused; a row says deleted only after
the store's delete succeeded, so a store that is away loses nothing: the pass stops and the
next one tries again."""

from __future__ import annotations

import attrs

from videocopies.application.ports import Clock, ListedStore, ObjectRows
from videocopies.domain.objects import Lifetimes, ObjectKind, strays
from videocopies.domain.objects.keys import PREFIXES

# The kind of Conflict a quote or confirmation meets when its source's deletion was decided.
SOURCE_GONE = "source_gone"


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
