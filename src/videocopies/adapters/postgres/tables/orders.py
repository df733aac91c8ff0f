"""Orders from quote to close, and the capacity slots a confirmed order holds while it runs.
A confirmed order is kept (the ledger's audit reads it); a quote never confirmed is pruned a
day past its expiry (docs/domain.md, "How long rows live")."""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Column, Index, Integer, SmallInteger, Table, Text, text
from sqlalchemy.dialects.postgresql import JSONB

from videocopies.adapters.postgres.tables.schema import metadata, when

orders = Table(
    "orders",
    metadata,
    Column("order_id", Text, primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("source_key", Text, nullable=False),
    Column("copies", SmallInteger, nullable=False),
    Column("price_per_copy", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("tariff_version", Integer, nullable=False),
    when("quote_expires_at"),
    Column("quote_token", Text, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("state", Text, nullable=False),
    Column("copy_states", JSONB, nullable=False),
    Column("failure_reason", Text),
    when("created_at"),
    Column("version", Integer, nullable=False),
    Column("source_bytes", BigInteger, nullable=False, server_default=text("0")),
    # When it stopped being a quote: set by a trigger (0028), named by no code but the prune walk.
    when("confirmed_at", nullable=True),
    CheckConstraint(
        "state IN ('quoted', 'confirmed', 'running', 'done', 'cancelling', 'cancelled', 'failed')",
        name="state",
    ),
    CheckConstraint("total = copies * price_per_copy", name="total"),
    Index(None, "user_id", "created_at"),
    Index(None, "created_at"),  # the control panel's latest orders
    # Pruning walks the quotes never confirmed by expiry. No index names `state`, so an order's
    # updates (running, each copy, done) stay heap-only (0028).
    Index("ix_orders_unconfirmed", "quote_expires_at", postgresql_where=text("confirmed_at IS NULL")),
)

capacity_slots = Table(
    "capacity_slots",
    metadata,
    Column("slot_id", Integer, primary_key=True, autoincrement=False),
    Column("order_id", Text, unique=True),
    # Taking a slot reads only free ones: with thousands of orders in progress, a walk along
    # the primary key would step over every taken slot first.
    Index("ix_capacity_slots_free", "slot_id", postgresql_where=text("order_id IS NULL")),
)
