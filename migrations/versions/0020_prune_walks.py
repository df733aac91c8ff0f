"""Indexes the pruning of transient rows walks (see adapters/postgres/retention.py), so each
batch reads an index range rather than the table.

`ix_receipts_created_at`: receipts oldest first (their primary key is a client's random id).
`ix_orders_quoted`: orders that are still quotes, by expiry; small (only unconfirmed quotes),
where a walk along `orders.created_at` would step over every confirmed order ever kept.

Code of level 5 and 6 runs on this schema unchanged (indexes only); without them pruning
works, only more slowly.

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

code_levels = (5, 6)


def upgrade() -> None:
    op.create_index("ix_receipts_created_at", "receipts", ["created_at"])
    op.create_index(
        "ix_orders_quoted", "orders", ["quote_expires_at"], postgresql_where=sa.text("state = 'quoted'")
    )


def downgrade() -> None:
    op.drop_index("ix_orders_quoted", table_name="orders")
    op.drop_index("ix_receipts_created_at", table_name="receipts")
