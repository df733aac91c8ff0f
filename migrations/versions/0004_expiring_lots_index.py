"""An index for the coin expiry sweep: only lots still holding available coins that can expire.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    op.create_index(
        "ix_coin_lots_expiring",
        "coin_lots",
        ["expires_at"],
        postgresql_where=sa.text("available > 0 AND expires_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_coin_lots_expiring", table_name="coin_lots")
