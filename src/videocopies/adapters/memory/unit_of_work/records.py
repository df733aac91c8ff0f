"""Record repositories in memory: rows written once beside the aggregates, kept until commit."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime

from videocopies.adapters.memory.store import InMemoryStore
from videocopies.application.errors import Conflict
from videocopies.application.ports import GrantRecord, OutboxMessage, RefusedWrite
from videocopies.domain.coins import InviterRewards, Referral, ReferralOutcome
from videocopies.domain.payments import Payment, Refund
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import LotId, OrderId, UserId


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
