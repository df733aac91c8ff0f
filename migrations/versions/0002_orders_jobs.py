"""Orders, the job queue with leases and checkpoints, receipts, refused writes, outbox, capacity.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def _at(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "orders",
        sa.Column("order_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.BigInteger, nullable=False),
        sa.Column("source_key", sa.Text, nullable=False),
        sa.Column("copies", sa.SmallInteger, nullable=False),
        sa.Column("price_per_copy", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("tariff_version", sa.Integer, nullable=False),
        _at("quote_expires_at"),
        sa.Column("quote_token", sa.Text, nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("copy_states", JSONB, nullable=False),
        sa.Column("failure_reason", sa.Text),
        _at("created_at"),
        sa.Column("version", sa.Integer, nullable=False),
        sa.CheckConstraint(
            "state IN ('quoted', 'confirmed', 'running', 'done', 'cancelling', 'cancelled', 'failed')",
            name="ck_orders_state",
        ),
        sa.CheckConstraint("total = copies * price_per_copy", name="ck_orders_total"),
        sa.PrimaryKeyConstraint("order_id", name="pk_orders"),
    )
    op.create_index("ix_orders_user_id_created_at", "orders", ["user_id", "created_at"])
    op.create_table(
        "jobs",
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("order_id", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("plans", JSONB, nullable=False),
        sa.Column("max_attempts", sa.SmallInteger, nullable=False),
        sa.Column("attempts", sa.SmallInteger, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("worker_id", sa.Text),
        sa.Column("owner_token", sa.Text),
        _at("acquired_at", nullable=True),
        _at("lease_until", nullable=True),
        sa.Column("last_error", sa.Text),
        _at("created_at"),
        sa.Column("version", sa.Integer, nullable=False),
        sa.CheckConstraint("state IN ('queued', 'leased', 'done', 'failed', 'cancelled')", name="ck_jobs_state"),
        sa.CheckConstraint("attempts <= max_attempts", name="ck_jobs_attempts"),
        sa.CheckConstraint(
            "(state = 'leased') = (owner_token IS NOT NULL AND lease_until IS NOT NULL)", name="ck_jobs_lease"
        ),
        sa.ForeignKeyConstraint(["order_id"], ["orders.order_id"], name="fk_jobs_order_id_orders"),
        sa.PrimaryKeyConstraint("job_id", name="pk_jobs"),
        sa.UniqueConstraint("order_id", name="uq_jobs_order_id"),
    )
    op.create_index(
        "ix_jobs_queued", "jobs", ["created_at", "job_id"], postgresql_where=sa.text("state = 'queued'")
    )
    op.create_index("ix_jobs_leased", "jobs", ["lease_until"], postgresql_where=sa.text("state = 'leased'"))
    op.create_table(
        "job_checkpoints",
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("idx", sa.SmallInteger, nullable=False),
        sa.Column("object_key", sa.Text, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("sha256", sa.Text, nullable=False),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("width", sa.Integer, nullable=False),
        sa.Column("height", sa.Integer, nullable=False),
        _at("created_at"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.job_id"], name="fk_job_checkpoints_job_id_jobs"),
        sa.PrimaryKeyConstraint("job_id", "idx", name="pk_job_checkpoints"),
    )
    op.create_table(
        "receipts",
        sa.Column("receipt_id", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("result", JSONB, nullable=False),
        _at("created_at"),
        sa.PrimaryKeyConstraint("receipt_id", name="pk_receipts"),
    )
    op.create_table(
        "refused_writes",
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("worker_id", sa.Text),
        sa.Column("operation", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _at("at"),
        sa.PrimaryKeyConstraint("id", name="pk_refused_writes"),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("user_id", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("payload", JSONB, nullable=False),
        sa.Column("dedup_key", sa.Text, nullable=False),
        _at("created_at"),
        _at("sent_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_outbox"),
        sa.UniqueConstraint("dedup_key", name="uq_outbox_dedup_key"),
    )
    op.create_index("ix_outbox_pending", "outbox", ["id"], postgresql_where=sa.text("sent_at IS NULL"))
    op.create_table(
        "capacity_slots",
        sa.Column("slot_id", sa.Integer, autoincrement=False, nullable=False),
        sa.Column("order_id", sa.Text),
        sa.PrimaryKeyConstraint("slot_id", name="pk_capacity_slots"),
        sa.UniqueConstraint("order_id", name="uq_capacity_slots_order_id"),
    )


def downgrade() -> None:
    for table in ("capacity_slots", "outbox", "refused_writes", "receipts", "job_checkpoints", "jobs", "orders"):
        op.drop_table(table)
