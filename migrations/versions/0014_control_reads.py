"""Indexes for the control panel's reads by time: the last hour's copies, the latest
orders and payments. Each column is written once, when its row is inserted.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    op.create_index("ix_job_checkpoints_created_at", "job_checkpoints", ["created_at"])
    op.create_index("ix_orders_created_at", "orders", ["created_at"])
    op.create_index("ix_payments_received_at", "payments", ["received_at"])


def downgrade() -> None:
    op.drop_index("ix_payments_received_at", table_name="payments")
    op.drop_index("ix_orders_created_at", table_name="orders")
    op.drop_index("ix_job_checkpoints_created_at", table_name="job_checkpoints")
