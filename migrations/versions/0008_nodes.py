"""Node identities: every edge, worker and control node calls core with its own token.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def upgrade() -> None:
    op.create_table(
        "nodes",
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("scopes", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("secret_sha256", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_nodes")),
    )
    op.create_index(
        "ix_nodes_name_live", "nodes", ["name"], unique=True, postgresql_where=sa.text("revoked_at IS NULL")
    )


def downgrade() -> None:
    op.drop_index("ix_nodes_name_live", table_name="nodes")
    op.drop_table("nodes")
