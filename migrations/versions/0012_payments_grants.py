"""Refunds, referrals and the record of who granted coins and why; a lot can be refunded.

A refunded purchase lot keeps its coins in a place of their own (`refunded`), so the lot
still adds up: available + held + debited + expired + refunded = amount. The write-set
function of 0009 learns the new column and the three new tables' writes.

Revision ID: 0012
Revises: 0011
"""

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

code_levels = (1, 1)


def _apply_0009() -> str:
    spec = importlib.util.spec_from_file_location("apply_0009", Path(__file__).with_name("0009_apply_writes.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.APPLY)


_LOT_UPDATE = "UPDATE coin_lots SET available = l.available, debited = l.debited, expired = l.expired\n"
_LOT_INSERT = """            INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,
                                   expired)
            VALUES (l.lot_id, l.user_id, l.kind, l.amount, l.granted_at, l.expires_at, l.available, l.debited,
                    l.expired);"""
_UNKNOWN = """        ELSE
            RAISE EXCEPTION 'videocopies_apply: unknown write %', op_name;"""
_NEW_WRITES = """        ELSIF op_name = 'insert_referral' THEN
            INSERT INTO referrals (invitee, inviter, at)
            VALUES ((p->>'invitee')::bigint, (p->>'inviter')::bigint, (p->>'at')::timestamptz);
        ELSIF op_name = 'insert_grant' THEN
            INSERT INTO coin_grants (lot_id, user_id, kind, amount, granted_by, reason, granted_at)
            VALUES (p->>'lot_id', (p->>'user_id')::bigint, p->>'kind', (p->>'amount')::integer,
                    p->>'granted_by', p->>'reason', (p->>'granted_at')::timestamptz);
        ELSIF op_name = 'upsert_refund' THEN
            INSERT INTO refunds (external_id, user_id, coins, requested_by, reason, requested_at, state,
                                 finished_at, provider_answer)
            VALUES (p->>'external_id', (p->>'user_id')::bigint, (p->>'coins')::integer, p->>'requested_by',
                    p->>'reason', (p->>'requested_at')::timestamptz, p->>'state',
                    (p->>'finished_at')::timestamptz, p->>'provider_answer')
                ON CONFLICT (external_id) DO UPDATE
               SET coins = excluded.coins, requested_by = excluded.requested_by, reason = excluded.reason,
                   requested_at = excluded.requested_at, state = excluded.state,
                   finished_at = excluded.finished_at, provider_answer = excluded.provider_answer;
"""


def _apply_0011() -> str:
    body = _apply_0009()
    for old, new in (
        ("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"),
        (_LOT_UPDATE, _LOT_UPDATE.replace("expired = l.expired", "expired = l.expired, refunded = l.refunded")),
        (_LOT_INSERT, _LOT_INSERT.replace("l.expired)", "l.expired, l.refunded)").replace(" expired)", " expired, refunded)")),
        (_UNKNOWN, _NEW_WRITES + _UNKNOWN),
    ):
        assert body.count(old) == 1, old
        body = body.replace(old, new)
    return body


def _at(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.add_column("coin_lots", sa.Column("refunded", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.drop_constraint("ck_coin_lots_not_negative", "coin_lots", type_="check")
    op.drop_constraint("ck_coin_lots_within_amount", "coin_lots", type_="check")
    op.create_check_constraint(
        "ck_coin_lots_not_negative", "coin_lots", "available >= 0 AND debited >= 0 AND expired >= 0 AND refunded >= 0"
    )
    op.create_check_constraint(
        "ck_coin_lots_within_amount", "coin_lots", "available + debited + expired + refunded <= amount"
    )
    op.create_table(
        "refunds",
        sa.Column("external_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("coins", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        _at("requested_at"),
        sa.Column("state", sa.Text(), nullable=False),
        _at("finished_at", nullable=True),
        sa.Column("provider_answer", sa.Text(), nullable=True),
        sa.CheckConstraint("state IN ('pending', 'done', 'refused')", name="ck_refunds_state"),
        sa.ForeignKeyConstraint(["external_id"], ["payments.external_id"], name="fk_refunds_external_id_payments"),
        sa.PrimaryKeyConstraint("external_id", name="pk_refunds"),
    )
    op.create_table(
        "referrals",
        sa.Column("invitee", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("inviter", sa.BigInteger(), nullable=False),
        _at("at"),
        sa.CheckConstraint("invitee <> inviter", name="ck_referrals_not_self"),
        sa.ForeignKeyConstraint(["invitee"], ["coin_accounts.user_id"], name="fk_referrals_invitee_coin_accounts"),
        sa.ForeignKeyConstraint(["inviter"], ["coin_accounts.user_id"], name="fk_referrals_inviter_coin_accounts"),
        sa.PrimaryKeyConstraint("invitee", name="pk_referrals"),
    )
    op.create_index("ix_referrals_inviter", "referrals", ["inviter"])
    op.create_table(
        "coin_grants",
        sa.Column("lot_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("granted_by", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        _at("granted_at"),
        sa.ForeignKeyConstraint(["lot_id"], ["coin_lots.lot_id"], name="fk_coin_grants_lot_id_coin_lots"),
        sa.PrimaryKeyConstraint("lot_id", name="pk_coin_grants"),
    )
    op.execute(_apply_0011())


def downgrade() -> None:
    op.execute(_apply_0009().replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
    op.drop_table("coin_grants")
    op.drop_index("ix_referrals_inviter", table_name="referrals")
    op.drop_table("referrals")
    op.drop_table("refunds")
    op.drop_constraint("ck_coin_lots_within_amount", "coin_lots", type_="check")
    op.drop_constraint("ck_coin_lots_not_negative", "coin_lots", type_="check")
    op.create_check_constraint("ck_coin_lots_not_negative", "coin_lots", "available >= 0 AND debited >= 0 AND expired >= 0")
    op.create_check_constraint("ck_coin_lots_within_amount", "coin_lots", "available + debited + expired <= amount")
    op.drop_column("coin_lots", "refunded")
