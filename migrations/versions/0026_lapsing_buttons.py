"""Buttons that lapse: the sent messages whose buttons stop meaning anything at a known time (a
quote's Confirm, when its price expires), kept by core rather than in an edge's memory.

`lapsing_buttons` holds one row per sent quote, written with the delivery report that gives its
Telegram message id; core's sweep takes the rows whose time has come and queues, in the same
transaction, an outbox message of kind `unbutton` for each (edge takes the buttons off that
message). A reply to a press that already took the buttons off forgets the row. Rows live only
until their time: the table stays small, and its index on `lapses_at` is what the sweep walks.

Code of level 9 runs on this schema unchanged (a new table it never reads; an edge of that time
takes expired buttons off by its own timer); level 10 writes and sweeps `lapsing_buttons`.

Revision ID: 0026
Revises: 0025
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

code_levels = (9, 10)  # level 10 writes and sweeps lapsing_buttons; level 9 never reads it


def upgrade() -> None:
    op.create_table(
        "lapsing_buttons",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=False),
        sa.Column("lapses_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "message_id", name="pk_lapsing_buttons"),
    )
    op.create_index("ix_lapsing_buttons_lapses_at", "lapsing_buttons", ["lapses_at"])


def downgrade() -> None:
    op.drop_index("ix_lapsing_buttons_lapses_at", table_name="lapsing_buttons")
    op.drop_table("lapsing_buttons")
