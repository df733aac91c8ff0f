"""The source's size on orders and jobs, so a worker claims only jobs that fit its disk.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    for table in ("orders", "jobs"):
        op.add_column(table, sa.Column("source_bytes", sa.BigInteger(), nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    for table in ("orders", "jobs"):
        op.drop_column(table, "source_bytes")
