"""The bot's inbox and its users: every Telegram update is stored before it is processed,
one user's events in order; the outbox learns who is sending a message and until when.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def _at(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "bot_users",
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("language", sa.Text(), nullable=False),
        sa.Column("first_name", sa.Text(), nullable=True),
        sa.Column("source", postgresql.JSONB(), nullable=True),
        _at("created_at"),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_bot_users")),
    )
    op.create_table(
        "inbox",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("update_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("payload", postgresql.JSONB(), nullable=False),
        _at("received_at"),
        _at("processed_at", nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox")),
        sa.UniqueConstraint("update_id", name=op.f("uq_inbox_update_id")),
    )
    op.create_index(
        "ix_inbox_pending", "inbox", ["user_id", "id"], postgresql_where=sa.text("processed_at IS NULL")
    )
    op.create_table(
        "inbox_users",
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        _at("since"),
        _at("claimed_until", nullable=True),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_inbox_users")),
    )
    op.create_index("ix_inbox_users_since", "inbox_users", ["since"])
    op.add_column("outbox", _at("claimed_until", nullable=True))
    op.add_column("outbox", sa.Column("attempts", sa.SmallInteger(), server_default=sa.text("0"), nullable=False))
    op.add_column("outbox", sa.Column("delivery", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("outbox", "delivery")
    op.drop_column("outbox", "attempts")
    op.drop_column("outbox", "claimed_until")
    op.drop_index("ix_inbox_users_since", table_name="inbox_users")
    op.drop_table("inbox_users")
    op.drop_index("ix_inbox_pending", table_name="inbox")
    op.drop_table("inbox")
    op.drop_table("bot_users")
