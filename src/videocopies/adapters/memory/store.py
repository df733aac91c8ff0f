"""The committed state of the in-memory backend, shared by every unit of work of one test or demo."""

from __future__ import annotations

import itertools
from collections.abc import Hashable

from videocopies.adapters.memory.payment_claims import PaymentLedgers
from videocopies.application.ports import GrantRecord, OutboxMessage, RefusedWrite
from videocopies.domain.coins import CoinAccount, Referral
from videocopies.domain.jobs import Job
from videocopies.domain.orders import Order
from videocopies.domain.payments import Payment, Refund
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import DomainEvent, JobId, LotId, OrderId, UserId


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
