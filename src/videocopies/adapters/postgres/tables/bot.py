"""The Telegram bot's side: its users, the inbox of updates received (with a row for each user
who has some not yet handled), the outbox of messages to send, and the sent messages whose
buttons lapse. Inbox and outbox rows are pruned after their retention, `inbox_users` and
`lapsing_buttons` rows remove themselves, users are kept (docs/domain.md, "How long rows live")."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Identity, Index, SmallInteger, Table, Text, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import JSONB

from videocopies.adapters.postgres.tables.schema import metadata, when

bot_users = Table(
    "bot_users",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    Column("language", Text, nullable=False),  # what the user's Telegram says
    Column("chosen_language", Text),  # what the user chose with /language, spoken when set
    Column("first_name", Text),
    Column("source", JSONB),  # the video waiting for a choice of copies
    when("created_at"),
    # Telegram refused a message for good (blocked, chat gone); cleared when the user writes again.
    when("blocked_at", nullable=True),
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
    when("received_at"),
    when("processed_at", nullable=True),
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
    when("since"),
    when("claimed_until", nullable=True),
    Index("ix_inbox_users_since", "since"),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("user_id", BigInteger, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload", JSONB, nullable=False),
    Column("dedup_key", Text, nullable=False),
    when("created_at"),
    when("sent_at", nullable=True),
    # An edge holds a message while it sends it; a message held past this goes to another.
    when("claimed_until", nullable=True),
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
    when("lapses_at"),
    Index(None, "lapses_at"),
)
