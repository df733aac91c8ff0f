"""The objects in the store, sources and copies, each from stored to deleted. The lifecycle
duty deletes an object when nothing needs it any more, and drops its row a copy retention
later (docs/domain.md, "Objects and their lifetimes")."""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Column, Index, Table, Text, text

from videocopies.adapters.postgres.tables.schema import metadata, when

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
    when("stored_at"),
    when("delivered_at", nullable=True),
    when("released_at", nullable=True),  # nothing needs it any more, as the lifecycle duty found
    when("deleted_at", nullable=True),
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
