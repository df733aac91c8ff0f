"""The lifecycle pass with in-memory rows and store: it deletes what is due in batches, records
a deletion only after the store's delete, and a store that is away loses no row."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta

from videocopies.adapters.memory.clock import ManualClock
from videocopies.application.objects import ObjectLifecycle
from videocopies.domain.objects import Lifetimes, ObjectKind, ObjectState, StoredObject

LIFETIMES = Lifetimes(source_grace=timedelta(hours=1), copy_retention=timedelta(days=1))


class Rows:
    """Rows as the adapter keeps them; `awaited`: keys a row may still come for."""

    def __init__(self) -> None:
        self.rows: dict[str, StoredObject] = {}
        self.awaited: set[str] = set()

    async def note_released(self, now: datetime) -> None:
        pass

    async def due(self, kind: ObjectKind, before: datetime, limit: int) -> Sequence[StoredObject]:
        def since(o: StoredObject) -> datetime | None:
            return o.delivered_at or o.released_at

        found = [
            o for o in self.rows.values()
            if o.kind is kind and o.state is not ObjectState.DELETED and (at := since(o)) is not None and at <= before
        ]
        return found[:limit]

    async def begin_deleting(self, keys: Sequence[str], before: datetime, now: datetime) -> list[str]:
        return list(keys)  # nothing takes a source here meanwhile

    async def mark_deleted(self, keys: Sequence[str], now: datetime) -> None:
        for key in keys:
            self.rows[key] = StoredObject(key, self.rows[key].kind, ObjectState.DELETED, now, deleted_at=now)

    async def look_up(self, keys: Sequence[str]) -> tuple[dict[str, ObjectState], set[str]]:
        return {k: self.rows[k].state for k in keys if k in self.rows}, self.awaited & set(keys)

    async def forget_deleted(self, before: datetime, limit: int) -> int:
        old = [k for k, o in self.rows.items() if o.state is ObjectState.DELETED and o.deleted_at <= before][:limit]
        for key in old:
            del self.rows[key]
        return len(old)


class Store:
    def __init__(self, keys: set[str]) -> None:
        self.objects, self.deletes_left = set(keys), 1_000_000

    async def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix + "/"))

    async def delete(self, key: str) -> None:
        if self.deletes_left <= 0:
            raise ConnectionError("store away")
        self.deletes_left -= 1
        self.objects.discard(key)


def _world(clock: ManualClock, copies: int) -> tuple[Rows, Store]:
    rows = Rows()
    released = clock.now() - LIFETIMES.copy_retention - timedelta(seconds=1)
    for i in range(copies):
        key = f"copies/o/{i}.mp4"
        rows.rows[key] = StoredObject(key, ObjectKind.COPY, ObjectState.STORED, released, released_at=released)
    fresh = "copies/p/0.mp4"
    now = clock.now()
    rows.rows[fresh] = StoredObject(fresh, ObjectKind.COPY, ObjectState.DELIVERED, now, delivered_at=now)
    return rows, Store(set(rows.rows))


def test_due_copies_go_in_batches_and_the_rest_stay() -> None:
    clock = ManualClock()
    rows, store = _world(clock, 250)
    result = asyncio.run(ObjectLifecycle(rows, store, clock, LIFETIMES, batch=100)())
    assert result.deleted["copy"] == 250 and result.failed == 0
    assert store.objects == {"copies/p/0.mp4"}
    assert rows.rows["copies/p/0.mp4"].state is ObjectState.DELIVERED


def test_a_store_that_goes_away_mid_pass_leaves_every_undeleted_object_recorded_as_stored() -> None:
    clock = ManualClock()
    rows, store = _world(clock, 250)
    store.deletes_left = 130
    lifecycle = ObjectLifecycle(rows, store, clock, LIFETIMES, batch=100)
    result = asyncio.run(lifecycle())
    assert result.deleted["copy"] == 130 and result.failed == 1
    deleted = {k for k, o in rows.rows.items() if o.state is ObjectState.DELETED}
    assert deleted == {f"copies/o/{i}.mp4" for i in range(250)} - store.objects  # recorded = really gone
    assert len(rows.rows) == 251  # no row lost
    store.deletes_left = 1_000_000
    assert asyncio.run(lifecycle()).deleted["copy"] == 120
    assert store.objects == {"copies/p/0.mp4"}


def test_strays_go_unless_a_row_can_still_come() -> None:
    clock = ManualClock()
    rows, store = _world(clock, 0)
    store.objects |= {"copies/q/0.mp4", "copies/r/0.mp4", "sources/1/5.mp4", "elsewhere/x"}
    rows.awaited = {"copies/r/0.mp4"}
    result = asyncio.run(ObjectLifecycle(rows, store, clock, LIFETIMES)())
    assert result.deleted["stray"] == 2
    assert store.objects == {"copies/p/0.mp4", "copies/r/0.mp4", "elsewhere/x"}


def test_one_pass_forgets_every_row_deleted_past_the_retention_however_many() -> None:
    """A busy pass deletes more than a batch: forgetting one batch a pass would let the rows of
    deleted objects grow without end (the 200-order soak kept 438 of them)."""
    clock = ManualClock()
    rows, store = _world(clock, 0)
    long_ago = clock.now() - LIFETIMES.copy_retention - timedelta(seconds=1)
    for i in range(350):
        key = f"copies/gone/{i}.mp4"
        rows.rows[key] = StoredObject(key, ObjectKind.COPY, ObjectState.DELETED, long_ago, deleted_at=long_ago)
    result = asyncio.run(ObjectLifecycle(rows, store, clock, LIFETIMES, batch=100)())
    assert result.forgotten == 350
    assert list(rows.rows) == ["copies/p/0.mp4"]
