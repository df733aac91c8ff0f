"""Coins and the payments that buy them: accounts, lots, grants, reservations with their holds
and debits, referrals, payments, refunds, claims, the provider's charges and reversals. Money is
kept forever, whatever the settings say (docs/domain.md, "How long rows live")."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from videocopies.adapters.postgres.tables.schema import metadata, when

coin_accounts = Table(
    "coin_accounts",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
    when("created_at"),
)

coin_lots = Table(
    "coin_lots",
    metadata,
    Column("lot_id", Text, primary_key=True),
    Column("user_id", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("amount", Integer, nullable=False),
    when("granted_at"),
    when("expires_at", nullable=True),
    Column("available", Integer, nullable=False),
    Column("debited", Integer, nullable=False),
    Column("expired", Integer, nullable=False),
    Column("refunded", Integer, nullable=False, server_default=text("0")),
    CheckConstraint("kind IN ('start', 'referral', 'manual', 'purchase')", name="kind"),
    CheckConstraint("amount > 0", name="amount_positive"),
    CheckConstraint("available >= 0 AND debited >= 0 AND expired >= 0 AND refunded >= 0", name="not_negative"),
    CheckConstraint("available + debited + expired + refunded <= amount", name="within_amount"),
    Index(None, "user_id"),
    # The expiry sweep looks only at lots that still hold coins and can expire.
    Index("ix_coin_lots_expiring", "expires_at", postgresql_where=text("available > 0 AND expires_at IS NOT NULL")),
)

coin_grants = Table(
    "coin_grants",
    metadata,
    Column("lot_id", Text, ForeignKey("coin_lots.lot_id"), primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("kind", Text, nullable=False),
    Column("amount", Integer, nullable=False),
    Column("granted_by", Text, nullable=False),
    Column("reason", Text, nullable=False),
    when("granted_at"),
)

coin_reservations = Table(
    "coin_reservations",
    metadata,
    Column("order_id", Text, primary_key=True),
    Column("user_id", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    Column("amount", Integer, nullable=False),
    Column("debited", Integer, nullable=False),
    Column("released", Integer, nullable=False),
    Column("open", Boolean, nullable=False),
    # [lot_id, held] in the order the holds were taken (0033; `coin_holds` is a view of it for code of
    # level 13). The ledger audit checks that each lot exists and is the same user's.
    Column("holds", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    CheckConstraint("debited + released <= amount", name="within_amount"),
    Index(None, "user_id"),
    # An account loads its open reservations through this, not every order it ever paid for (0027).
    Index("ix_coin_reservations_open", "user_id", postgresql_where=text("open")),
)

coin_debits = Table(
    "coin_debits",
    metadata,
    Column("order_id", Text, ForeignKey("coin_reservations.order_id"), nullable=False),
    Column("key", Text, nullable=False),
    PrimaryKeyConstraint("order_id", "key"),
)

referrals = Table(
    "referrals",
    metadata,
    Column("invitee", BigInteger, ForeignKey("coin_accounts.user_id"), primary_key=True, autoincrement=False),
    Column("inviter", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    when("at"),
    Column("outcome", Text, nullable=True),  # null until the invited user's first order
    when("settled_at", nullable=True),
    CheckConstraint("invitee <> inviter", name="not_self"),
    CheckConstraint("outcome IS NULL OR outcome IN ('rewarded', 'capped')", name="outcome"),
    Index(None, "inviter"),
    Index("ix_referrals_rewarded", "inviter", "settled_at", postgresql_where=text("outcome = 'rewarded'")),
)

payments = Table(
    "payments",
    metadata,
    Column("external_id", Text, primary_key=True),
    Column("user_id", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    Column("coins", Integer, nullable=False),
    Column("paid_amount", Integer, nullable=False),
    Column("currency", Text, nullable=False),
    when("received_at"),
    Index(None, "user_id"),
    Index(None, "received_at"),  # the control panel's latest payments
)

refunds = Table(
    "refunds",
    metadata,
    Column("external_id", Text, ForeignKey("payments.external_id"), primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("coins", Integer, nullable=False),
    Column("requested_by", Text, nullable=False),
    Column("reason", Text, nullable=False),
    when("requested_at"),
    Column("state", Text, nullable=False),
    when("finished_at", nullable=True),
    Column("provider_answer", Text, nullable=True),
    CheckConstraint("state IN ('pending', 'done', 'refused')", name="state"),
)

payment_claims = Table(
    "payment_claims",
    metadata,
    Column("external_id", Text, primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("paid_amount", Integer, nullable=False),
    Column("currency", Text, nullable=False),
    Column("invoice_payload", Text, nullable=True),
    Column("node", Text, nullable=True),  # the edge that reported it
    when("claimed_at"),
    Index(None, "claimed_at"),
)

provider_charges = Table(  # the payment provider's charges, as far as its list was read
    "provider_charges",
    metadata,
    Column("external_id", Text, primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("paid_amount", Integer, nullable=False),
    Column("currency", Text, nullable=False),
    Column("invoice_payload", Text, nullable=True),
    when("read_at"),
)

provider_cursor = Table(
    "provider_cursor",
    metadata,
    Column("provider", Text, primary_key=True),
    Column("position", BigInteger, nullable=False),
    when("read_at"),
)

payment_reversals = Table(
    "payment_reversals",
    metadata,
    Column("external_id", Text, ForeignKey("payments.external_id"), primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("taken", Integer, nullable=False),
    Column("owed", Integer, nullable=False),
    Column("reason", Text, nullable=False),
    when("reversed_at"),
    CheckConstraint("taken >= 0 AND owed >= 0", name="not_negative"),
)
