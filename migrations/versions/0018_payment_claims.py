"""Payments edge reports are claims until the provider confirms them; credited payments the
provider does not know are reversed; referrals are settled at the invited user's first order.

`payment_claims`: every `successful_payment` edge stored, with the node that sent it. Where
core can ask the provider, a claim credits coins only once the provider's own list has the
charge; a claim with no payment is unconfirmed (the panel lists them).
`provider_charges` and `provider_cursor`: the provider's charges read so far and how far its
chronological list was read, so each read asks only for what is new.
`payment_reversals`: a credited payment the provider does not know, taken back: the coins
still there (`taken`, moved to the lot's `refunded`) and those already spent (`owed`). The
payment row stays.
`referrals.outcome` / `settled_at`: null until the invited user's first confirmed order, then
`rewarded` or `capped`; a partial index counts an inviter's rewarded referrals for the caps.

`videocopies_apply` learns `insert_claim`, `record_charges`, `move_provider_cursor`,
`insert_reversal`, `end_lot` (a reversed lot ends at once) and `settle_referral`.

Code of level 4 runs on this schema unchanged (new tables, nullable columns, new writes);
a referral it rewards at arrival has its lots, which level 5 recognises at the first order
and settles without a second reward.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

code_levels = (4, 5)  # level 5 writes the claims, reversals and settled referrals; level 4 never does

_UNKNOWN = """        ELSE
            RAISE EXCEPTION 'videocopies_apply: unknown write %', op_name;"""
_WRITES = """        ELSIF op_name = 'insert_claim' THEN
            INSERT INTO payment_claims (external_id, user_id, paid_amount, currency, invoice_payload, node,
                                        claimed_at)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'paid_amount')::integer, p->>'currency',
                    p->>'invoice_payload', p->>'node', (p->>'claimed_at')::timestamptz)
                ON CONFLICT (external_id) DO NOTHING;
        ELSIF op_name = 'record_charges' THEN
            INSERT INTO provider_charges (external_id, user_id, paid_amount, currency, invoice_payload, read_at)
            SELECT nc.external_id, nc.user_id, nc.paid_amount, nc.currency, nc.invoice_payload, nc.read_at
              FROM jsonb_populate_recordset(NULL::provider_charges, p) AS nc
                ON CONFLICT (external_id) DO NOTHING;
        ELSIF op_name = 'move_provider_cursor' THEN
            INSERT INTO provider_cursor (provider, position, read_at)
            VALUES (p->>'provider', (p->>'position')::bigint, (p->>'read_at')::timestamptz)
                ON CONFLICT (provider) DO UPDATE
               SET position = GREATEST(provider_cursor.position, excluded.position), read_at = excluded.read_at;
        ELSIF op_name = 'insert_reversal' THEN
            INSERT INTO payment_reversals (external_id, user_id, taken, owed, reason, reversed_at)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'taken')::integer, (p->>'owed')::integer,
                    p->>'reason', (p->>'reversed_at')::timestamptz);
        ELSIF op_name = 'end_lot' THEN
            UPDATE coin_lots SET expires_at = (p->>'expires_at')::timestamptz WHERE lot_id = p->>'lot_id';
        ELSIF op_name = 'settle_referral' THEN
            UPDATE referrals SET outcome = p->>'outcome', settled_at = (p->>'settled_at')::timestamptz
             WHERE invitee = (p->>'invitee')::bigint AND outcome IS NULL;
"""


def _installed() -> str:
    query = sa.text("SELECT pg_get_functiondef('videocopies_apply(jsonb)'::regprocedure)")
    text: str = op.get_bind().execute(query).scalar_one()
    return text


def _at(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "payment_claims",
        sa.Column("external_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("paid_amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("invoice_payload", sa.Text(), nullable=True),
        sa.Column("node", sa.Text(), nullable=True),
        _at("claimed_at"),
        sa.PrimaryKeyConstraint("external_id", name="pk_payment_claims"),
    )
    op.create_index("ix_payment_claims_claimed_at", "payment_claims", ["claimed_at"])
    op.create_table(
        "provider_charges",
        sa.Column("external_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("paid_amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.Text(), nullable=False),
        sa.Column("invoice_payload", sa.Text(), nullable=True),
        _at("read_at"),
        sa.PrimaryKeyConstraint("external_id", name="pk_provider_charges"),
    )
    op.create_table(
        "provider_cursor",
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        _at("read_at"),
        sa.PrimaryKeyConstraint("provider", name="pk_provider_cursor"),
    )
    op.create_table(
        "payment_reversals",
        sa.Column("external_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("taken", sa.Integer(), nullable=False),
        sa.Column("owed", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        _at("reversed_at"),
        sa.CheckConstraint("taken >= 0 AND owed >= 0", name="ck_payment_reversals_not_negative"),
        sa.ForeignKeyConstraint(
            ["external_id"], ["payments.external_id"], name="fk_payment_reversals_external_id_payments"
        ),
        sa.PrimaryKeyConstraint("external_id", name="pk_payment_reversals"),
    )
    op.add_column("referrals", sa.Column("outcome", sa.Text(), nullable=True))
    op.add_column("referrals", _at("settled_at", nullable=True))
    op.create_check_constraint(
        "ck_referrals_outcome", "referrals", "outcome IS NULL OR outcome IN ('rewarded', 'capped')"
    )
    op.create_index(
        "ix_referrals_rewarded", "referrals", ["inviter", "settled_at"],
        postgresql_where=sa.text("outcome = 'rewarded'"),
    )
    installed = _installed()
    assert installed.count(_UNKNOWN) == 1, "the write function does not end as 0009 made it: update 0018"
    op.execute(installed.replace(_UNKNOWN, _WRITES + _UNKNOWN))


def downgrade() -> None:
    installed = _installed()
    assert installed.count(_WRITES) == 1
    op.execute(installed.replace(_WRITES, ""))
    op.drop_index("ix_referrals_rewarded", table_name="referrals")
    op.drop_constraint("ck_referrals_outcome", "referrals", type_="check")
    op.drop_column("referrals", "settled_at")
    op.drop_column("referrals", "outcome")
    op.drop_table("payment_reversals")
    op.drop_table("provider_cursor")
    op.drop_table("provider_charges")
    op.drop_index("ix_payment_claims_claimed_at", table_name="payment_claims")
    op.drop_table("payment_claims")
