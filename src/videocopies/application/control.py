"""What the control panel shows, read from the working database through one read-only port.

The views are plain values; nothing here can change an order, a job or a coin. The plots
cover the last hour minute by minute, and a minute without any data is shown as such
(zero copies; no latency), not left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import attrs

PLOT_WINDOW = timedelta(hours=1)


@attrs.frozen
class NodeView:
    name: str
    role: str
    created_at: datetime
    revoked_at: datetime | None
    last_seen_at: datetime | None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


@attrs.frozen
class DutyView:
    """A duty one node at a time performs, e.g. which edge polls Telegram."""

    duty: str
    holder: str
    acquired_at: datetime
    lease_until: datetime
    term: int


@attrs.frozen
class QueueDepth:
    queued: int
    leased: int
    lapsed: int  # leased, but the lease ran out and the sweep has not taken it back yet
    inbox_pending: int
    inbox_lag_s: float
    outbox_pending: int
    outbox_lag_s: float
    refused_writes: int


@attrs.frozen
class LeaseView:
    job_id: str
    order_id: str
    user_id: int
    worker_id: str
    owner_token_prefix: str  # enough to tell two owners apart; the token itself fences writes
    created_at: datetime
    acquired_at: datetime
    lease_until: datetime
    attempts: int
    max_attempts: int
    copies: int
    copies_done: int
    cancel_requested: bool

    @property
    def waited_s(self) -> float:
        return (self.acquired_at - self.created_at).total_seconds()


@attrs.frozen
class OrderView:
    order_id: str
    user_id: int
    copies: int
    total: int
    state: str
    created_at: datetime
    copies_delivered: int
    failure_reason: str | None = None


@attrs.frozen
class LotView:
    lot_id: str
    kind: str
    amount: int
    granted_at: datetime
    expires_at: datetime | None
    available: int
    debited: int
    expired: int

    @property
    def held(self) -> int:
        """Reserved by open orders: what the lot lacks once the rest is accounted for."""
        return self.amount - self.available - self.debited - self.expired


@attrs.frozen
class HoldView:
    lot_id: str
    held: int


@attrs.frozen
class ReservationView:
    order_id: str
    amount: int
    debited: int
    released: int
    open: bool
    holds: tuple[HoldView, ...]


@attrs.frozen
class Ledger:
    user_id: int
    lots: tuple[LotView, ...]
    reservations: tuple[ReservationView, ...]

    @property
    def available(self) -> int:
        return sum(lot.available for lot in self.lots)

    @property
    def reserved(self) -> int:
        return sum(r.amount - r.debited - r.released for r in self.reservations if r.open)


@attrs.frozen
class PaymentView:
    external_id: str
    user_id: int
    coins: int
    paid_amount: int
    currency: str
    received_at: datetime


@attrs.frozen
class UnconfirmedPaymentView:
    """A payment an edge reported that no credited payment answers (the provider has not
    listed the charge): invented, or still waiting for the provider."""

    external_id: str
    user_id: int
    paid_amount: int
    currency: str
    node: str | None
    claimed_at: datetime


@attrs.frozen
class ReversedPaymentView:
    """A credited payment the provider did not know, taken back; `owed` was already spent."""

    external_id: str
    user_id: int
    taken: int
    owed: int
    reversed_at: datetime


@attrs.frozen
class ReconciliationView:
    """One recorded run of payment reconciliation, as the read model words it."""

    at: datetime
    outcome: str
    detail: str


@attrs.frozen
class UnreadableView:
    """An update the bot could not read: kept with its reason (its user told, when known)."""

    at: datetime
    update_id: int
    user_id: int | None  # None: the user part could not be read either
    reason: str


@attrs.frozen
class MinuteCount:
    minute: datetime
    count: int


@attrs.frozen
class MinuteLatency:
    minute: datetime
    p50_s: float
    p95_s: float
    jobs: int


@attrs.frozen
class Point:
    minute: datetime
    value: float | None  # None: nothing happened in that minute to measure


@attrs.frozen
class Series:
    name: str
    points: tuple[Point, ...]


def minutes(until: datetime, window: timedelta = PLOT_WINDOW) -> list[datetime]:
    """The whole minutes of the window ending with the minute `until` falls in, oldest first."""
    last = until.replace(second=0, microsecond=0)
    count = int(window / timedelta(minutes=1))
    return [last - timedelta(minutes=count - 1 - i) for i in range(count)]


def throughput_series(rows: Iterable[MinuteCount], until: datetime) -> Series:
    counts = {row.minute: row.count for row in rows}
    return Series("copies", tuple(Point(m, float(counts.get(m, 0))) for m in minutes(until)))


def latency_series(rows: Iterable[MinuteLatency], until: datetime) -> tuple[Series, Series]:
    by_minute = {row.minute: row for row in rows}
    slots = minutes(until)

    def pick(attr: str) -> tuple[Point, ...]:
        return tuple(Point(m, getattr(by_minute[m], attr) if m in by_minute else None) for m in slots)

    return Series("p50", pick("p50_s")), Series("p95", pick("p95_s"))
