"""What a burst of newcomers and their screens writes, at the cost of its rows only.

`videocopies_apply` learns `insert_accounts` and `insert_lots`: many new accounts, or many
new lots, in one set-based statement. A burst of /start grants each newcomer a lot, and
0009's one statement per write ran two statements per user inside the function (about half
of PostgreSQL's time in that burst). Single writes stay as they were, so code of level 2
runs on this schema unchanged.

The outbox gets an index on (user_id, id) for its unsent rows: a claim skips a message while
an earlier one of the same user is still being sent, and without the index that check read
every unsent row of the table on each claim.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

code_levels = (2, 3)  # level 3 writes insert_accounts and insert_lots; level 2 never does

_UNKNOWN = """        ELSE
            RAISE EXCEPTION 'videocopies_apply: unknown write %', op_name;"""
_BULK = """        ELSIF op_name = 'insert_accounts' THEN
            INSERT INTO coin_accounts (user_id, version, created_at)
            SELECT na.user_id, na.version, na.now
              FROM jsonb_to_recordset(p) AS na(user_id bigint, version integer, now timestamptz);
        ELSIF op_name = 'insert_lots' THEN
            INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,
                                   expired, refunded)
            SELECT nl.lot_id, nl.user_id, nl.kind, nl.amount, nl.granted_at, nl.expires_at, nl.available,
                   nl.debited, nl.expired, nl.refunded
              FROM jsonb_populate_recordset(NULL::coin_lots, p) AS nl;
"""


def _installed() -> str:
    """The write function as the database holds it now, with every earlier migration's writes."""
    query = sa.text("SELECT pg_get_functiondef('videocopies_apply(jsonb)'::regprocedure)")
    text: str = op.get_bind().execute(query).scalar_one()
    return text


def upgrade() -> None:
    op.create_index(
        "ix_outbox_user_pending", "outbox", ["user_id", "id"], postgresql_where=sa.text("sent_at IS NULL")
    )
    installed = _installed()
    assert installed.count(_UNKNOWN) == 1, "the write function does not end as 0009 made it: update 0016"
    op.execute(installed.replace(_UNKNOWN, _BULK + _UNKNOWN))


def downgrade() -> None:
    installed = _installed()
    assert installed.count(_BULK) == 1
    op.execute(installed.replace(_BULK, ""))
    op.drop_index("ix_outbox_user_pending", table_name="outbox")
