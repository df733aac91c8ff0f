"""An index of free capacity slots, so taking one never walks past the taken ones.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    op.create_index(
        "ix_capacity_slots_free", "capacity_slots", ["slot_id"], postgresql_where=sa.text("order_id IS NULL")
    )


def downgrade() -> None:
    op.drop_index("ix_capacity_slots_free", table_name="capacity_slots")
