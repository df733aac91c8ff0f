"""The schema as SQLAlchemy Core tables; alembic migrations must produce exactly this."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _at(name: str, nullable: bool = False) -> Column:
    return Column(name, DateTime(timezone=True), nullable=nullable)


schema_compat = Table(
    "schema_compat",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("min_code_level", Integer, nullable=False),
    Column("max_code_level", Integer, nullable=False),
    _at("updated_at"),
    CheckConstraint("id = 1", name="single_row"),
)

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("revision", Text, primary_key=True),
    Column("checksum", Text, nullable=False),
    _at("applied_at"),
)

coin_accounts = Table(
    "coin_accounts",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
    _at("created_at"),
)

coin_lots = Table(
    "coin_lots",
    metadata,
    Column("lot_id", Text, primary_key=True),
    Column("user_id", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("amount", Integer, nullable=False),
    _at("granted_at"),
    _at("expires_at", nullable=True),
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

coin_reservations = Table(
    "coin_reservations",
    metadata,
    Column("order_id", Text, primary_key=True),
    Column("user_id", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    Column("amount", Integer, nullable=False),
    Column("debited", Integer, nullable=False),
    Column("released", Integer, nullable=False),
    Column("open", Boolean, nullable=False),
    CheckConstraint("debited + released <= amount", name="within_amount"),
    Index(None, "user_id"),
)

coin_holds = Table(
    "coin_holds",
    metadata,
    Column("order_id", Text, ForeignKey("coin_reservations.order_id"), nullable=False),
    Column("seq", SmallInteger, nullable=False),
    Column("lot_id", Text, ForeignKey("coin_lots.lot_id"), nullable=False),
    Column("held", Integer, nullable=False),
    PrimaryKeyConstraint("order_id", "seq"),
    CheckConstraint("held >= 0", name="not_negative"),
)

coin_debits = Table(
    "coin_debits",
    metadata,
    Column("order_id", Text, ForeignKey("coin_reservations.order_id"), nullable=False),
    Column("key", Text, nullable=False),
    PrimaryKeyConstraint("order_id", "key"),
)

payments = Table(
    "payments",
    metadata,
    Column("external_id", Text, primary_key=True),
    Column("user_id", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    Column("coins", Integer, nullable=False),
    Column("paid_amount", Integer, nullable=False),
    Column("currency", Text, nullable=False),
    _at("received_at"),
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
    _at("requested_at"),
    Column("state", Text, nullable=False),
    _at("finished_at", nullable=True),
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
    _at("claimed_at"),
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
    _at("read_at"),
)

provider_cursor = Table(
    "provider_cursor",
    metadata,
    Column("provider", Text, primary_key=True),
    Column("position", BigInteger, nullable=False),
    _at("read_at"),
)

payment_reversals = Table(
    "payment_reversals",
    metadata,
    Column("external_id", Text, ForeignKey("payments.external_id"), primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("taken", Integer, nullable=False),
    Column("owed", Integer, nullable=False),
    Column("reason", Text, nullable=False),
    _at("reversed_at"),
    CheckConstraint("taken >= 0 AND owed >= 0", name="not_negative"),
)

referrals = Table(
    "referrals",
    metadata,
    Column("invitee", BigInteger, ForeignKey("coin_accounts.user_id"), primary_key=True, autoincrement=False),
    Column("inviter", BigInteger, ForeignKey("coin_accounts.user_id"), nullable=False),
    _at("at"),
    Column("outcome", Text, nullable=True),  # null until the invited user's first order
    _at("settled_at", nullable=True),
    CheckConstraint("invitee <> inviter", name="not_self"),
    CheckConstraint("outcome IS NULL OR outcome IN ('rewarded', 'capped')", name="outcome"),
    Index(None, "inviter"),
    Index("ix_referrals_rewarded", "inviter", "settled_at", postgresql_where=text("outcome = 'rewarded'")),
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
    _at("granted_at"),
)

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
    _at("quote_expires_at"),
    Column("quote_token", Text, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("state", Text, nullable=False),
    Column("copy_states", JSONB, nullable=False),
    Column("failure_reason", Text),
    _at("created_at"),
    Column("version", Integer, nullable=False),
    Column("source_bytes", BigInteger, nullable=False, server_default=text("0")),
    CheckConstraint(
        "state IN ('quoted', 'confirmed', 'running', 'done', 'cancelling', 'cancelled', 'failed')",
        name="state",
    ),
    CheckConstraint("total = copies * price_per_copy", name="total"),
    Index(None, "user_id", "created_at"),
    Index(None, "created_at"),  # the control panel's latest orders
    # Pruning walks the quotes never confirmed by expiry (0020).
    Index("ix_orders_quoted", "quote_expires_at", postgresql_where=text("state = 'quoted'")),
)

jobs = Table(
    "jobs",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("order_id", Text, ForeignKey("orders.order_id"), nullable=False, unique=True),
    Column("state", Text, nullable=False),
    Column("plans", JSONB, nullable=False),
    Column("max_attempts", SmallInteger, nullable=False),
    Column("attempts", SmallInteger, nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("worker_id", Text),
    Column("owner_token", Text),
    _at("acquired_at", nullable=True),
    _at("lease_until", nullable=True),
    Column("last_error", Text),
    _at("created_at"),
    Column("version", Integer, nullable=False),
    Column("closed_by", Text),
    Column("source_bytes", BigInteger, nullable=False, server_default=text("0")),
    CheckConstraint("state IN ('queued', 'leased', 'done', 'failed', 'cancelled')", name="state"),
    CheckConstraint("attempts <= max_attempts", name="attempts"),
    CheckConstraint("(state = 'leased') = (owner_token IS NOT NULL AND lease_until IS NOT NULL)", name="lease"),
    # The claim reads queued jobs oldest first, and the sweep reads leases by expiry.
    Index("ix_jobs_queued", "created_at", "job_id", postgresql_where=text("state = 'queued'")),
    Index("ix_jobs_leased", "lease_until", postgresql_where=text("state = 'leased'")),
    # Five copies' plans make a row of about 2.4 kB: kept inline and uncompressed (0009).
    postgresql_with={"toast_tuple_target": 4080},
)

job_checkpoints = Table(
    "job_checkpoints",
    metadata,
    Column("job_id", Text, ForeignKey("jobs.job_id"), nullable=False),
    Column("idx", SmallInteger, nullable=False),
    Column("object_key", Text, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("sha256", Text, nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("width", Integer, nullable=False),
    Column("height", Integer, nullable=False),
    _at("created_at"),
    Column("quality", JSONB),  # the quality gate's figures (0011)
    Column("failure", Text),  # set when the gate gave the copy up: no object was stored
    PrimaryKeyConstraint("job_id", "idx"),
    Index(None, "created_at"),  # copies and waits over the last hour, for the control panel
)

receipts = Table(
    "receipts",
    metadata,
    Column("receipt_id", Text, primary_key=True),
    Column("fingerprint", Text, nullable=False),
    Column("result", JSONB, nullable=False),
    _at("created_at"),
    Index(None, "created_at"),  # pruning walks receipts oldest first (0020)
)

refused_writes = Table(
    "refused_writes",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("job_id", Text, nullable=False),
    Column("worker_id", Text),
    Column("operation", Text, nullable=False),
    Column("reason", Text, nullable=False),
    _at("at"),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload", JSONB, nullable=False),
    Column("dedup_key", Text, nullable=False),
    _at("created_at"),
    _at("sent_at", nullable=True),
    # An edge holds a message while it sends it; a message held past this goes to another.
    _at("claimed_until", nullable=True),
    Column("attempts", SmallInteger, nullable=False, server_default=text("0")),
    Column("delivery", JSONB),  # what Telegram answered: message id, file id
    UniqueConstraint("dedup_key"),
    Index("ix_outbox_pending", "id", postgresql_where=text("sent_at IS NULL")),
    # A claim looks for an earlier unsent message of the same user.
    Index("ix_outbox_user_pending", "user_id", "id", postgresql_where=text("sent_at IS NULL")),
    # A claim takes replies first, then copies with users taking turns (migration 0017).
    Index("ix_outbox_replies_pending", "id", postgresql_where=text("sent_at IS NULL AND kind <> 'copy_ready'")),
    Index("ix_outbox_copies_pending", "user_id", postgresql_where=text("sent_at IS NULL AND kind = 'copy_ready'")),
)

# A sent message whose buttons lapse at a known time (a quote's Confirm): core's sweep queues
# an `unbutton` message for it then (migration 0026).
lapsing_buttons = Table(
    "lapsing_buttons",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    Column("message_id", BigInteger, primary_key=True, autoincrement=False),
    _at("lapses_at"),
    Index(None, "lapses_at"),
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

nodes = Table(
    "nodes",
    metadata,
    # A node's token is "<node_id>.<secret>"; only the secret's SHA-256 is kept.
    Column("node_id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("secret_sha256", Text, nullable=False),
    _at("created_at"),
    _at("revoked_at", nullable=True),
    _at("last_seen_at", nullable=True),
    Index("ix_nodes_name_live", "name", unique=True, postgresql_where=text("revoked_at IS NULL")),
)

bot_users = Table(
    "bot_users",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    Column("language", Text, nullable=False),  # what the user's Telegram says
    Column("chosen_language", Text),  # what the user chose with /language, spoken when set
    Column("first_name", Text),
    Column("source", JSONB),  # the video waiting for a choice of copies
    _at("created_at"),
    # Telegram refused a message for good (blocked, chat gone); cleared when the user writes again.
    _at("blocked_at", nullable=True),
    Index("ix_bot_users_blocked", "user_id", postgresql_where=text("blocked_at IS NOT NULL")),
)

inbox = Table(
    "inbox",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("update_id", BigInteger, nullable=False),
    Column("user_id", BigInteger, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload", JSONB, nullable=False),
    _at("received_at"),
    _at("processed_at", nullable=True),
    Column("outcome", Text),
    UniqueConstraint("update_id"),
    Index("ix_inbox_pending", "user_id", "id", postgresql_where=text("processed_at IS NULL")),
    Index("ix_inbox_unreadable", "id", postgresql_where=text("kind = 'unreadable'")),
)

# One row per user with unprocessed events. A processor leases the row (claimed_until), so
# one user's events are never handled twice at once while other users' go on in parallel,
# and no transaction stays open while an event is handled.
inbox_users = Table(
    "inbox_users",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    _at("since"),
    _at("claimed_until", nullable=True),
    Index("ix_inbox_users_since", "since"),
)

# Duties one node at a time performs (polling Telegram), each under a renewable lease.
duty_leases = Table(
    "duty_leases",
    metadata,
    Column("duty", Text, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("token", Text, nullable=False),
    _at("acquired_at"),
    _at("lease_until"),
    Column("term", BigInteger, nullable=False),
)

# Every object in the store: sources and copies, their state and when it changed (0019). Rows
# are written by triggers with the inbox event, checkpoint or delivery they record.
stored_objects = Table(
    "stored_objects",
    metadata,
    Column("key", Text, primary_key=True),
    Column("kind", Text, nullable=False),
    Column("user_id", BigInteger),
    Column("order_id", Text),
    Column("size", BigInteger),
    Column("sha256", Text),
    Column("state", Text, nullable=False),
    _at("stored_at"),
    _at("delivered_at", nullable=True),
    _at("released_at", nullable=True),  # nothing needs it any more, as the lifecycle duty found
    _at("deleted_at", nullable=True),
    CheckConstraint("kind IN ('source', 'copy')", name="kind"),
    CheckConstraint("state IN ('stored', 'delivered', 'deleted')", name="state"),
    Index(None, "order_id"),
    Index("ix_stored_objects_in_use", "stored_at", postgresql_where=text("state <> 'deleted' AND released_at IS NULL")),
    Index(
        "ix_stored_objects_released", "released_at",
        postgresql_where=text("state = 'stored' AND released_at IS NOT NULL"),
    ),
    Index("ix_stored_objects_delivered", "delivered_at", postgresql_where=text("state = 'delivered'")),
    Index("ix_stored_objects_deleted", "deleted_at", postgresql_where=text("state = 'deleted'")),
)
