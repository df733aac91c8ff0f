"""One transaction and the repositories it holds, with the records they keep beside the
aggregates (grants, refused writes, outbox messages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol

import attrs

from videocopies.domain.coins import CoinAccount, InviterRewards, LotKind, Referral
from videocopies.domain.jobs import Job
from videocopies.domain.orders import Order
from videocopies.domain.payments import Payment, PaymentClaim, ProviderTransaction, Refund, Reversal
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import DomainEvent, JobId, LotId, OrderId, UserId, WorkerId


@attrs.frozen
class RefusedWrite:
    """A write from a worker that had lost its lease (a zombie), counted, never applied."""

    job_id: JobId
    worker_id: WorkerId | None
    operation: str
    reason: str
    at: datetime


@attrs.frozen
class OutboxMessage:
    """Something to tell a user, written in the same transaction as the change it reports."""

    user_id: UserId
    kind: str  # copy_ready, order_closed, ...
    payload: dict[str, Any]
    dedup_key: str


@attrs.frozen
class GrantRecord:
    """Who gave a lot of coins (a node, a rule) and why, kept beside the lot."""

    lot_id: LotId
    user_id: UserId
    kind: LotKind
    amount: int
    granted_by: str
    reason: str
    at: datetime


class CoinAccountRepository(Protocol):
    async def get(self, user_id: UserId, lots: Sequence[LotId] = ()) -> CoinAccount | None:
        """The account, locked, with at least its working lots (each with coins available, each
        an open reservation holds from) and the `lots` named, whatever their state. A spent lot
        may be left out: a rule that names a lot by id (a refund, a grant's id) asks for it."""
        ...

    async def add(self, account: CoinAccount) -> None: ...
    async def with_lots_expiring(self, now: datetime, limit: int) -> Sequence[CoinAccount]: ...


class OrderRepository(Protocol):
    async def get(self, order_id: OrderId) -> Order | None: ...
    async def add(self, order: Order) -> None: ...


class JobRepository(Protocol):
    async def get(self, job_id: JobId) -> Job | None: ...
    async def get_many(self, job_ids: Sequence[JobId]) -> Mapping[JobId, Job]:
        """Lock and load these jobs together (those that exist), as `get` does one by one."""
        ...
    async def for_order(self, order_id: OrderId) -> Job | None: ...
    async def add(self, job: Job) -> None: ...
    async def claimable(
        self, now: datetime, limit: int, max_source_bytes: int | None = None, *, receipts: Sequence[str] = ()
    ) -> Sequence[Job]:
        """Queued jobs, and leased ones whose lease ran out, oldest first, skipping any
        another transaction is holding and any whose source is larger than asked. `receipts`:
        a hint, as `UnitOfWork.prefetch`'s, to read these receipts in the same round trip."""
        ...
    async def expired(self, now: datetime, limit: int) -> Sequence[Job]: ...


class ReceiptRepository(Protocol):
    async def get(self, receipt_id: str) -> Receipt | None: ...
    async def get_many(self, receipt_ids: Sequence[str]) -> Mapping[str, Receipt]: ...
    async def add(self, receipt: Receipt) -> None: ...


class PaymentRepository(Protocol):
    async def get(self, external_id: str) -> Payment | None: ...
    async def add(self, payment: Payment) -> None: ...
    async def list(self) -> Sequence[Payment]: ...


class RefundRepository(Protocol):
    async def get(self, external_id: str) -> Refund | None: ...
    async def save(self, refund: Refund) -> None:
        """Insert, or replace the refund of the same external id."""
        ...
    async def list(self) -> Sequence[Refund]: ...


class PaymentClaims(Protocol):
    """Payments as edge reported them, and the provider's charges read so far (a cursor into
    its chronological list, so each read takes only what is new)."""

    async def add(self, claim: PaymentClaim) -> None:
        """Recorded once per external id; a repeat is ignored."""
        ...
    async def confirmable(self) -> Sequence[tuple[PaymentClaim, ProviderTransaction]]:
        """Claims not credited yet whose charge the provider has listed, with that charge."""
        ...
    async def unconfirmed(self) -> Sequence[PaymentClaim]:
        """Claims with no payment credited for them, oldest first."""
        ...
    async def cursor(self) -> int: ...
    async def record(self, charges: Sequence[ProviderTransaction], cursor: int) -> None:
        """The provider's charges read up to `cursor` (the cursor never goes back)."""
        ...


class ReversalRepository(Protocol):
    async def add(self, reversal: Reversal) -> None: ...
    async def list(self) -> Sequence[Reversal]: ...


class ReferralRepository(Protocol):
    async def inviter_of(self, user_id: UserId) -> UserId | None: ...
    async def add(self, referral: Referral) -> None: ...
    async def unsettled(self, invitee: UserId) -> Referral | None:
        """The invited user's referral while their first order is still to come (locked)."""
        ...
    async def rewarded(self, inviter: UserId, since: datetime) -> InviterRewards:
        """How many invited users this inviter was rewarded for: ever, and since `since`."""
        ...
    async def settle(self, referral: Referral) -> None: ...


class GrantLog(Protocol):
    async def add(self, record: GrantRecord) -> None: ...
    async def get(self, lot_id: LotId) -> GrantRecord | None: ...


class RefusedWriteLog(Protocol):
    async def add(self, refusal: RefusedWrite) -> None: ...
    async def count(self) -> int: ...


class Outbox(Protocol):
    async def add(self, message: OutboxMessage) -> None: ...
    async def pending(self, limit: int) -> Sequence[tuple[int, OutboxMessage]]: ...
    async def mark_sent(self, message_id: int) -> None: ...


class CapacitySlots(Protocol):
    """Free places in the queue, counted transactionally (never by counting the queue)."""

    async def take(self, order_id: OrderId) -> bool: ...
    async def free(self, order_id: OrderId) -> None: ...


class UnitOfWork(Protocol):
    """One transaction. Leaving the block without `commit` rolls everything back."""

    accounts: CoinAccountRepository
    orders: OrderRepository
    jobs: JobRepository
    receipts: ReceiptRepository
    payments: PaymentRepository
    refunds: RefundRepository
    claims: PaymentClaims
    reversals: ReversalRepository
    referrals: ReferralRepository
    grants: GrantLog
    refusals: RefusedWriteLog
    outbox: Outbox
    capacity: CapacitySlots

    async def __aenter__(self) -> UnitOfWork: ...
    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    async def prefetch(
        self,
        orders: Sequence[OrderId] = (),
        accounts: Sequence[UserId] = (),
        *,
        jobs: Sequence[JobId] = (),
        receipts: Sequence[str] = (),
        referrals: Sequence[UserId] = (),
        lots: Sequence[LotId] = (),
        their_orders: bool = False,
        their_accounts: bool = False,
    ) -> None:
        """A hint: load (and lock) these now, together: jobs, orders, accounts, then the
        unsettled referrals of these invitees, each kind in id order; receipts unlocked.
        `lots`: lots of these accounts to load whatever their state (see `CoinAccountRepository.get`).
        `their_orders`: also each job's order; `their_accounts`: also each order's account."""
        ...
    async def record(self, event: DomainEvent) -> None:
        """An event to announce: turned into its outbox row by the handler registered for its
        type (application/use_cases/announcements.py), written with this transaction's commit."""
        ...
    async def commit(self, durable: bool = True) -> None:
        """`durable=False` answers before the commit is on disk, so a crash of the database may
        lose it: only for a write whose loss is harmless (a lease renewal, which fencing keeps
        safe: a lost one only makes the lease end sooner)."""
        ...
    async def rollback(self) -> None: ...
