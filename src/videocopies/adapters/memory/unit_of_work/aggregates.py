"""Aggregates in memory: copies loaded, written back only at commit, refused when someone else
committed a newer version meanwhile; jobs claimed skipping rows another unit of work holds."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

from videocopies.adapters.memory.store import InMemoryStore
from videocopies.application.errors import Conflict
from videocopies.domain.coins import CoinAccount
from videocopies.domain.jobs import Job, JobState
from videocopies.domain.shared import DomainEvent, JobId, LotId, OrderId, UserId

T = TypeVar("T")


class _Aggregates(Generic[T]):
    """Loads copies of stored aggregates and writes them back only on commit, refusing
    the write when someone else committed a newer version meanwhile."""

    def __init__(self, table: dict[Any, T], key: Callable[[T], Any], kind: str) -> None:
        self._table, self._key, self._kind = table, key, kind
        self.seen: dict[Any, tuple[T, int]] = {}
        self.added: dict[Any, T] = {}

    def _load(self, key: Any) -> T | None:
        if key in self.added:
            return self.added[key]
        if key in self.seen:
            return self.seen[key][0]
        stored = self._table.get(key)
        if stored is None:
            return None
        loaded = copy.deepcopy(stored)
        loaded.events = []  # type: ignore[attr-defined]
        if hasattr(loaded, "written_under"):
            loaded.written_under = None  # a new transaction has written nothing yet
        self.seen[key] = (loaded, loaded.version)  # type: ignore[attr-defined]
        return loaded

    async def get(self, key: Any) -> T | None:
        return self._load(key)

    async def add(self, item: T) -> None:
        key = self._key(item)
        if key in self._table or key in self.added:
            raise Conflict(self._kind, str(key))
        self.added[key] = item

    def check(self) -> None:
        for key, (item, loaded_version) in self.seen.items():
            stored = self._table.get(key)
            changed = item.version != loaded_version  # type: ignore[attr-defined]
            if changed and (stored is None or stored.version != loaded_version):  # type: ignore[attr-defined]
                raise Conflict(self._kind, str(key))
        for key in self.added:
            if key in self._table:
                raise Conflict(self._kind, str(key))

    def apply(self, published: list[DomainEvent]) -> None:
        changed = [item for item, v in self.seen.values() if item.version != v]  # type: ignore[attr-defined]
        for item in [*changed, *self.added.values()]:
            published.extend(item.events)  # type: ignore[attr-defined]
            item.events = []  # type: ignore[attr-defined]
            self._table[self._key(item)] = copy.deepcopy(item)


class _Accounts(_Aggregates[CoinAccount]):
    async def get(self, key: UserId, lots: Sequence[LotId] = ()) -> CoinAccount | None:
        """Every lot, spent ones too: more than the port promises, and what commit writes back."""
        return self._load(key)

    async def with_lots_expiring(self, now: datetime, limit: int) -> Sequence[CoinAccount]:
        keys = [
            k for k, a in self._table.items()
            if any(lot.is_expired(now) and lot.available for lot in a.lots)
        ]
        return [a for k in keys[:limit] if (a := self._load(k)) is not None]


class _Jobs(_Aggregates[Job]):
    def __init__(self, store: InMemoryStore, uow_id: int) -> None:
        super().__init__(store.jobs, lambda j: j.job_id, "job")
        self._store, self._uow_id = store, uow_id

    async def get_many(self, job_ids: Sequence[JobId]) -> dict[JobId, Job]:
        return {job_id: job for job_id in dict.fromkeys(job_ids) if (job := self._load(job_id)) is not None}

    async def for_order(self, order_id: OrderId) -> Job | None:
        for key, job in [*self._table.items(), *self.added.items()]:
            if job.order_id == order_id:
                return self._load(key)
        return None

    def _lock_free(self, predicate: Callable[[Job], bool], limit: int) -> list[Job]:
        """SKIP LOCKED: rows another open unit of work holds are passed over."""
        rows = sorted(
            (j for j in self._table.values() if predicate(j)),
            key=lambda j: (j.created_at, j.job_id),
        )
        taken: list[Job] = []
        for job in rows:
            holder = self._store.locks.get(("job", job.job_id))
            if holder not in (None, self._uow_id):
                continue
            self._store.locks[("job", job.job_id)] = self._uow_id
            loaded = self._load(job.job_id)
            if loaded is not None:
                taken.append(loaded)
            if len(taken) == limit:
                break
        return taken

    async def claimable(
        self, now: datetime, limit: int, max_source_bytes: int | None = None, *, receipts: Sequence[str] = ()
    ) -> Sequence[Job]:
        def ready(job: Job) -> bool:
            if max_source_bytes is not None and job.source_bytes > max_source_bytes:
                return False
            leased_out = job.state is JobState.LEASED and job.lease is not None and job.lease.is_expired(now)
            return job.state is JobState.QUEUED or leased_out

        return self._lock_free(ready, limit)

    async def expired(self, now: datetime, limit: int) -> Sequence[Job]:
        return self._lock_free(
            lambda j: j.state is JobState.LEASED and j.lease is not None and j.lease.is_expired(now), limit
        )
