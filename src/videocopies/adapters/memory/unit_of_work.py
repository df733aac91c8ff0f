"""An in-memory unit of work with the same promises as the database: all or nothing,
optimistic version checks, and skip-locked claims."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, TypeVar

from videocopies.adapters.memory.payment_claims import Claims, PaymentLedgers, Reversals
from videocopies.application.errors import Conflict
from videocopies.application.ports import GrantRecord, OutboxMessage, RefusedWrite
from videocopies.domain.coins import CoinAccount, InviterRewards, Referral, ReferralOutcome
from videocopies.domain.jobs import Job, JobState
from videocopies.domain.orders import Order
from videocopies.domain.payments import Payment, Refund
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import DomainEvent, JobId, LotId, OrderId, UserId

T = TypeVar("T")


class InMemoryStore:
    """The committed state, shared by every unit of work of one test or demo."""

    def __init__(self) -> None:
        self.accounts: dict[UserId, CoinAccount] = {}
        self.orders: dict[OrderId, Order] = {}
        self.jobs: dict[JobId, Job] = {}
        self.receipts: dict[str, Receipt] = {}
        self.payments: dict[str, Payment] = {}
        self.refunds: dict[str, Refund] = {}
        self.referrals: dict[UserId, Referral] = {}  # by invited user
        self.payment_ledgers = PaymentLedgers()
        self.grants: dict[LotId, GrantRecord] = {}
        self.refusals: list[RefusedWrite] = []
        self.outbox: dict[int, OutboxMessage] = {}
        self.outbox_sent: set[int] = set()
        self.published: list[DomainEvent] = []
        self.capacity = 10_000
        self.slots: set[OrderId] = set()  # orders holding a capacity slot
        self.locks: dict[Hashable, int] = {}  # row -> unit of work holding it (FOR UPDATE)
        self._outbox_ids = itertools.count(1)
        self._uow_ids = itertools.count(1)

    def uow_factory(self) -> Callable[[], InMemoryUnitOfWork]:
        return lambda: InMemoryUnitOfWork(self)


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

    async def claimable(self, now: datetime, limit: int, max_source_bytes: int | None = None) -> Sequence[Job]:
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


class _Receipts:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.added: dict[str, Receipt] = {}

    async def get(self, receipt_id: str) -> Receipt | None:
        return self.added.get(receipt_id) or self._store.receipts.get(receipt_id)

    async def get_many(self, receipt_ids: Sequence[str]) -> dict[str, Receipt]:
        return {rid: receipt for rid in dict.fromkeys(receipt_ids) if (receipt := await self.get(rid)) is not None}

    async def add(self, receipt: Receipt) -> None:
        if receipt.receipt_id in self._store.receipts or receipt.receipt_id in self.added:
            raise Conflict("receipt", receipt.receipt_id)
        self.added[receipt.receipt_id] = receipt


class _Payments:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.added: dict[str, Payment] = {}

    async def get(self, external_id: str) -> Payment | None:
        return self.added.get(external_id) or self._store.payments.get(external_id)

    async def add(self, payment: Payment) -> None:
        if payment.external_id in self._store.payments or payment.external_id in self.added:
            raise Conflict("payment", payment.external_id)
        self.added[payment.external_id] = payment

    async def list(self) -> Sequence[Payment]:
        return [*self._store.payments.values(), *self.added.values()]


class _Refunds:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.saved: dict[str, Refund] = {}

    async def get(self, external_id: str) -> Refund | None:
        found = self.saved.get(external_id) or self._store.refunds.get(external_id)
        return copy.deepcopy(found)

    async def save(self, refund: Refund) -> None:
        self.saved[refund.external_id] = copy.deepcopy(refund)

    async def list(self) -> Sequence[Refund]:
        return [copy.deepcopy(r) for r in {**self._store.refunds, **self.saved}.values()]


class _Referrals:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.added: dict[UserId, Referral] = {}
        self.settled: dict[UserId, Referral] = {}

    async def inviter_of(self, user_id: UserId) -> UserId | None:
        found = self.added.get(user_id) or self._store.referrals.get(user_id)
        return found.inviter if found else None

    async def add(self, referral: Referral) -> None:
        if referral.invitee in self._store.referrals or referral.invitee in self.added:
            raise Conflict("referral", str(referral.invitee))
        self.added[referral.invitee] = referral

    async def unsettled(self, invitee: UserId) -> Referral | None:
        found = self.settled.get(invitee) or self.added.get(invitee) or self._store.referrals.get(invitee)
        return found if found is not None and found.outcome is None else None

    async def rewarded(self, inviter: UserId, since: datetime) -> InviterRewards:
        rewarded = [
            r for r in {**self._store.referrals, **self.added, **self.settled}.values()
            if r.inviter == inviter and r.outcome is ReferralOutcome.REWARDED
        ]
        return InviterRewards(len(rewarded), sum(1 for r in rewarded if r.settled_at and r.settled_at > since))

    async def settle(self, referral: Referral) -> None:
        self.settled[referral.invitee] = referral


class _Grants:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.added: dict[LotId, GrantRecord] = {}

    async def add(self, record: GrantRecord) -> None:
        self.added[record.lot_id] = record

    async def get(self, lot_id: LotId) -> GrantRecord | None:
        return self.added.get(lot_id) or self._store.grants.get(lot_id)


class _Refusals:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.added: list[RefusedWrite] = []

    async def add(self, refusal: RefusedWrite) -> None:
        self.added.append(refusal)

    async def count(self) -> int:
        return len(self._store.refusals) + len(self.added)


class _Outbox:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.added: list[OutboxMessage] = []

    async def add(self, message: OutboxMessage) -> None:
        known = {m.dedup_key for m in [*self._store.outbox.values(), *self.added]}
        if message.dedup_key not in known:
            self.added.append(message)

    async def pending(self, limit: int) -> Sequence[tuple[int, OutboxMessage]]:
        rows = [(i, m) for i, m in sorted(self._store.outbox.items()) if i not in self._store.outbox_sent]
        return rows[:limit]

    async def mark_sent(self, message_id: int) -> None:
        self._store.outbox_sent.add(message_id)


class _Capacity:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.taken: set[OrderId] = set()
        self.freed: set[OrderId] = set()

    async def take(self, order_id: OrderId) -> bool:
        if len(self._store.slots) + len(self.taken) >= self._store.capacity:
            return False
        self.taken.add(order_id)
        return True

    async def free(self, order_id: OrderId) -> None:
        self.taken.discard(order_id)
        self.freed.add(order_id)


class InMemoryUnitOfWork:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self._id = next(store._uow_ids)
        self.accounts = _Accounts(store.accounts, lambda a: a.account_id, "account")
        self.orders: _Aggregates[Order] = _Aggregates(store.orders, lambda o: o.order_id, "order")
        self.jobs = _Jobs(store, self._id)
        self.receipts = _Receipts(store)
        self.payments = _Payments(store)
        self.refunds = _Refunds(store)
        self.claims = Claims(store.payment_ledgers, self.payments)
        self.reversals = Reversals(store.payment_ledgers)
        self.referrals = _Referrals(store)
        self.grants = _Grants(store)
        self.refusals = _Refusals(store)
        self.outbox = _Outbox(store)
        self.capacity = _Capacity(store)
        self.committed = False

    async def __aenter__(self) -> InMemoryUnitOfWork:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._reset()  # leaving without commit rolls back, as the port promises
        self._unlock()

    async def prefetch(self, orders: Sequence[OrderId] = (), accounts: Sequence[UserId] = (), **hints: Any) -> None:
        """Memory has no round trips to save; loading stays lazy."""

    async def commit(self, durable: bool = True) -> None:
        """All or nothing: every check runs before anything is written."""
        aggregates = (self.accounts, self.orders, self.jobs)
        for repo in aggregates:
            repo.check()
        for rid in self.receipts.added:
            if rid in self._store.receipts:
                raise Conflict("receipt", rid)
        for eid in self.payments.added:
            if eid in self._store.payments:
                raise Conflict("payment", eid)
        for invitee in self.referrals.added:
            if invitee in self._store.referrals:
                raise Conflict("referral", str(invitee))
        for repo in aggregates:
            repo.apply(self._store.published)
        self._store.receipts.update(self.receipts.added)
        self._store.payments.update(self.payments.added)
        self._store.refunds.update(self.refunds.saved)
        self._store.referrals.update(self.referrals.added)
        self._store.referrals.update(self.referrals.settled)
        self.claims.commit()
        self.reversals.commit()
        self._store.grants.update(self.grants.added)
        self._store.refusals.extend(self.refusals.added)
        known = {m.dedup_key for m in self._store.outbox.values()}
        for message in self.outbox.added:
            if message.dedup_key not in known:
                self._store.outbox[next(self._store._outbox_ids)] = message
        self._store.slots |= self.capacity.taken
        self._store.slots -= self.capacity.freed
        self._reset()
        self.committed = True

    async def rollback(self) -> None:
        self._reset()

    def _reset(self) -> None:
        for repo in (self.accounts, self.orders, self.jobs):
            repo.seen.clear()
            repo.added.clear()
        self.receipts.added.clear()
        self.payments.added.clear()
        self.refunds.saved.clear()
        self.referrals.added.clear()
        self.referrals.settled.clear()
        self.claims.reset()
        self.reversals.added.clear()
        self.grants.added.clear()
        self.refusals.added.clear()
        self.outbox.added.clear()
        self.capacity.taken.clear()
        self.capacity.freed.clear()

    def _unlock(self) -> None:
        for key in [k for k, holder in self._store.locks.items() if holder == self._id]:
            del self._store.locks[key]
