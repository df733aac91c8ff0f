"""An in-memory unit of work with the same promises as the database: all or nothing,
optimistic version checks, and skip-locked claims."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from videocopies.adapters.memory.payment_claims import Claims, Reversals
from videocopies.adapters.memory.store import InMemoryStore
from videocopies.adapters.memory.unit_of_work.aggregates import _Accounts, _Aggregates, _Jobs
from videocopies.adapters.memory.unit_of_work.records import (
    _Capacity,
    _Grants,
    _Outbox,
    _Payments,
    _Receipts,
    _Referrals,
    _Refunds,
    _Refusals,
)
from videocopies.application.errors import Conflict
from videocopies.application.use_cases.announcements import outbox_rows
from videocopies.domain.orders import Order
from videocopies.domain.shared import DomainEvent, OrderId, UserId


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
        # Blocks joined to the open one (an inbox turn's use cases): memory has no transaction to
        # share, so a joined block's commit is written at once; leaving without one forgets it.
        self._depth = 0
        self._open = False

    async def __aenter__(self) -> InMemoryUnitOfWork:
        if self._open:
            self._depth += 1
        self._open = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._reset()  # leaving without commit rolls back, as the port promises
        if self._depth:
            self._depth -= 1
            return
        self._open = False
        self._unlock()

    async def savepoint(self) -> None:
        """Memory writes a joined block's commit at once: there is nothing to return to."""

    async def undo(self) -> None:
        self._reset()

    async def prefetch(self, orders: Sequence[OrderId] = (), accounts: Sequence[UserId] = (), **hints: Any) -> None:
        """Memory has no round trips to save; loading stays lazy."""

    async def record(self, event: DomainEvent) -> None:
        # Its row joins the outbox writes now, so a use case's messages keep the order it
        # announced them in, whether recorded or added; it is written with the commit.
        for message in outbox_rows([event]):
            await self.outbox.add(message)

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
