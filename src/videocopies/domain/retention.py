"""How long rows live: a transient row is pruned once it has stayed past its end state for
its retention; money records are kept forever.

A row's end state is the moment it stopped mattering to the service: an inbox event was
processed, an outbox message was sent (or given up), a receipt's job closed, a quote expired
unconfirmed, a checkpoint's job closed and its copy left the store. Nothing that still
refers to a row (an open job, a stored copy, a reservation, a capacity slot) lets it go.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

import attrs

from videocopies.domain.shared import DomainError


class Transient(enum.Enum):
    """The rows that may be pruned, named by their tables."""

    INBOX = "inbox"
    OUTBOX = "outbox"
    RECEIPTS = "receipts"
    QUOTES = "quotes"  # orders that stayed quotes
    CHECKPOINTS = "job_checkpoints"


PRUNE_TABLES = "prune-tables"  # the duty under which one node at a time prunes

# Coins, reservations, payments and their history: kept forever, whatever the settings say.
MONEY = frozenset({
    "coin_accounts", "coin_lots", "coin_reservations", "coin_debits", "payments",
    "refunds", "payment_claims", "provider_charges", "provider_cursor", "payment_reversals",
    "referrals", "coin_grants",
})

DAY = timedelta(days=1)


@attrs.frozen
class PrunableRow:
    """What decides whether a row may go: its table, when it reached its end state (None:
    not yet) and whether anything still refers to it."""

    table: str
    ended_at: datetime | None
    still_referred: bool = False


@attrs.define
class CheckpointsOutliveCopies(DomainError):
    """A checkpoint holds its copy's object key: pruned before the copy left the store, the
    copy would be in the store with no row saying what it is."""

    checkpoints: timedelta
    copy_lifetime: timedelta


def _not_negative(_instance: object, attribute: attrs.Attribute[timedelta], value: timedelta) -> None:
    if value < timedelta(0):
        raise ValueError(f"{attribute.name} retention cannot be negative: {value}")


@attrs.frozen
class RetentionPolicy:
    """How long each transient row is kept past its end state (0: prune at the end state)."""

    inbox: timedelta = attrs.field(default=7 * DAY, validator=_not_negative)
    outbox: timedelta = attrs.field(default=7 * DAY, validator=_not_negative)
    receipts: timedelta = attrs.field(default=30 * DAY, validator=_not_negative)
    quotes: timedelta = attrs.field(default=DAY, validator=_not_negative)
    checkpoints: timedelta = attrs.field(default=30 * DAY, validator=_not_negative)

    def kept_for(self, table: Transient) -> timedelta:
        return {
            Transient.INBOX: self.inbox, Transient.OUTBOX: self.outbox, Transient.RECEIPTS: self.receipts,
            Transient.QUOTES: self.quotes, Transient.CHECKPOINTS: self.checkpoints,
        }[table]

    def cutoff(self, table: Transient, now: datetime) -> datetime:
        """Rows of `table` that reached their end state before this moment are due."""
        return now - self.kept_for(table)

    def is_due(self, row: PrunableRow, now: datetime) -> bool:
        """Money is never due; a transient row is due once it ended at least its retention
        ago and nothing refers to it any more."""
        if row.table in MONEY or row.ended_at is None or row.still_referred:
            return False
        try:
            table = Transient(row.table)
        except ValueError:
            return False  # a table this policy does not know is kept
        return row.ended_at <= self.cutoff(table, now)

    def check_copy_lifetime(self, copy_lifetime: timedelta) -> None:
        """Refuse a checkpoint retention shorter than a copy may stay in the store (its
        retention after delivery plus its order's source grace)."""
        if self.checkpoints < copy_lifetime:
            raise CheckpointsOutliveCopies(self.checkpoints, copy_lifetime)
