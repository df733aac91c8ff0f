"""Remember whose write closed a job, so that owner's retry is answered and a zombie's refused.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    op.add_column("jobs", sa.Column("closed_by", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "closed_by")
