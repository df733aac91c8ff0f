"""Users the bot cannot reach, updates it could not read, and an outbox that serves replies
before copies.

`bot_users.blocked_at`: Telegram refused a message for good (the user blocked the bot, or
the chat is gone); cleared when the user writes again. A partial index holds only blocked
users, so the claim's look at each message's user and the inbox's clearing cost nothing
while nobody is blocked.

The inbox keeps updates it could not read as events of kind `unreadable`; the panel lists the
latest through a partial index on them.

The outbox claim takes replies (every kind but `copy_ready`) first, walking an index of
unsent replies only, and then copies, users taking turns: it finds the users with unsent
copies by skipping through an index of them, one step per user.

Code of level 3 runs on this schema unchanged (a new nullable column, new indexes); level 4
reads and writes `blocked_at`.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

code_levels = (3, 4)  # level 4 uses bot_users.blocked_at; level 3 never reads it


def upgrade() -> None:
    op.add_column("bot_users", sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_bot_users_blocked", "bot_users", ["user_id"], postgresql_where=sa.text("blocked_at IS NOT NULL")
    )
    op.create_index("ix_inbox_unreadable", "inbox", ["id"], postgresql_where=sa.text("kind = 'unreadable'"))
    op.create_index(
        "ix_outbox_replies_pending", "outbox", ["id"],
        postgresql_where=sa.text("sent_at IS NULL AND kind <> 'copy_ready'"),
    )
    op.create_index(
        "ix_outbox_copies_pending", "outbox", ["user_id"],
        postgresql_where=sa.text("sent_at IS NULL AND kind = 'copy_ready'"),
    )


def downgrade() -> None:
    op.drop_index("ix_outbox_copies_pending", table_name="outbox")
    op.drop_index("ix_outbox_replies_pending", table_name="outbox")
    op.drop_index("ix_inbox_unreadable", table_name="inbox")
    op.drop_index("ix_bot_users_blocked", table_name="bot_users")
    op.drop_column("bot_users", "blocked_at")
