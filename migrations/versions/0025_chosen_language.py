"""The language a user chose with /language, kept apart from their Telegram's.

`bot_users.language` stays what the user's Telegram says, written with every update as before;
`bot_users.chosen_language` is set by the /language buttons and, when set, is the language the
bot speaks to the user.

Code of level 8 runs on this schema unchanged (a new nullable column it never reads); level 9
reads and writes `chosen_language`.

Revision ID: 0025
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

code_levels = (8, 9)  # level 9 reads and writes bot_users.chosen_language; level 8 never reads it


def upgrade() -> None:
    op.add_column("bot_users", sa.Column("chosen_language", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("bot_users", "chosen_language")
