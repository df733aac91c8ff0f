"""Duty leases: one node at a time polls Telegram; another takes over once the lease runs out.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    op.create_table(
        "duty_leases",
        sa.Column("duty", sa.Text(), nullable=False),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("token", sa.Text(), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("term", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("duty", name=op.f("pk_duty_leases")),
    )


def downgrade() -> None:
    op.drop_table("duty_leases")
