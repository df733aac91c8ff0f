"""The quality gate's figures with each copy's checkpoint, and copies given up by the gate.

A checkpoint now also records `quality` (SSIM, perceptual-hash distance from the source and
from the order's other copies, which render attempt) and, for a copy that missed the gate
on every allowed render, `failure` (which threshold) with no object stored. The write
function learns the two columns; everything else in it is unchanged from 0009.

Revision ID: 0011
Revises: 0010
"""

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
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


def _apply_0009() -> str:
    """The write function as 0009 created it, read from that migration rather than copied."""
    path = next(Path(__file__).parent.glob("*_apply_writes.py"))
    spec = importlib.util.spec_from_file_location("apply_writes_migration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.APPLY
    assert _OLD_INSERT in text, "0009's insert_checkpoint changed: update 0011"
    return text.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def upgrade() -> None:
    op.add_column("job_checkpoints", sa.Column("quality", postgresql.JSONB(), nullable=True))
    op.add_column("job_checkpoints", sa.Column("failure", sa.Text(), nullable=True))
    op.execute(_apply_0009().replace(_OLD_INSERT, _NEW_INSERT))


def downgrade() -> None:
    op.execute(_apply_0009())
    op.drop_column("job_checkpoints", "failure")
    op.drop_column("job_checkpoints", "quality")
