"""The quality gate's figures with each copy's checkpoint, and copies given up by the gate.

A checkpoint now also records `quality` (SSIM, perceptual-hash distance from the source and
from the order's other copies, which render attempt) and, for a copy that missed the gate
on every allowed render, `failure` (which threshold) with no object stored. The write
function learns the two columns; everything else in it is unchanged from 0009.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

code_levels = (1, 1)

_OLD_INSERT = """            INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height,
                                         created_at)
            VALUES (c.job_id, c.idx, c.object_key, c.size, c.sha256, c.duration_s, c.width, c.height,
                    c.created_at);"""
_NEW_INSERT = """            INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height,
                                         created_at, quality, failure)
            VALUES (c.job_id, c.idx, c.object_key, c.size, c.sha256, c.duration_s, c.width, c.height,
                    c.created_at, c.quality, c.failure);"""


def _patched(old: str, new: str) -> str:
    """The write function as the database holds it now (earlier migrations may have taught it
    other writes), with this migration's one change."""
    query = sa.text("SELECT pg_get_functiondef('videocopies_apply(jsonb)'::regprocedure)")
    text: str = op.get_bind().execute(query).scalar_one()
    assert text.count(old) == 1, "the write function's insert_checkpoint is not as 0009 made it: update 0013"
    return text.replace(old, new)


def upgrade() -> None:
    op.add_column("job_checkpoints", sa.Column("quality", postgresql.JSONB(), nullable=True))
    op.add_column("job_checkpoints", sa.Column("failure", sa.Text(), nullable=True))
    op.execute(_patched(_OLD_INSERT, _NEW_INSERT))


def downgrade() -> None:
    op.execute(_patched(_NEW_INSERT, _OLD_INSERT))
    op.drop_column("job_checkpoints", "failure")
    op.drop_column("job_checkpoints", "quality")
