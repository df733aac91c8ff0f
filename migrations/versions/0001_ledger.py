"""The coin ledger: accounts, lots, reservations, holds, debits, payments; schema bookkeeping.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

code_levels = (1, 1)


def _at(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "schema_compat",
        sa.Column("id", sa.SmallInteger, nullable=False),
        sa.Column("min_code_level", sa.Integer, nullable=False),
        sa.Column("max_code_level", sa.Integer, nullable=False),
        _at("updated_at"),
        sa.CheckConstraint("id = 1", name="ck_schema_compat_single_row"),
        sa.PrimaryKeyConstraint("id", name="pk_schema_compat"),
    )
    op.create_table(
        "schema_migrations",
        sa.Column("revision", sa.Text, nullable=False),
        sa.Column("checksum", sa.Text, nullable=False),
        _at("applied_at"),
        sa.PrimaryKeyConstraint("revision", name="pk_schema_migrations"),
    )
    op.create_table(
        "coin_accounts",
        sa.Column("user_id", sa.BigInteger, autoincrement=False, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        _at("created_at"),
        sa.PrimaryKeyConstraint("user_id", name="pk_coin_accounts"),
    )
    op.create_table(
        "coin_lots",
        sa.Column("lot_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("amount", sa.Integer, nullable=False),
        _at("granted_at"),
        _at("expires_at", nullable=True),
        sa.Column("available", sa.Integer, nullable=False),
        sa.Column("debited", sa.Integer, nullable=False),
        sa.Column("expired", sa.Integer, nullable=False),
        sa.CheckConstraint("kind IN ('start', 'referral', 'manual', 'purchase')", name="ck_coin_lots_kind"),
        sa.CheckConstraint("amount > 0", name="ck_coin_lots_amount_positive"),
        sa.CheckConstraint(
            "available >= 0 AND debited >= 0 AND expired >= 0", name="ck_coin_lots_not_negative"
        ),
        sa.CheckConstraint("available + debited + expired <= amount", name="ck_coin_lots_within_amount"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["coin_accounts.user_id"], name="fk_coin_lots_user_id_coin_accounts"
        ),
        sa.PrimaryKeyConstraint("lot_id", name="pk_coin_lots"),
    )
    op.create_index("ix_coin_lots_user_id", "coin_lots", ["user_id"])
    op.create_table(
        "coin_reservations",
        sa.Column("order_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.BigInteger, nullable=False),
        sa.Column("amount", sa.Integer, nullable=False),
        sa.Column("debited", sa.Integer, nullable=False),
        sa.Column("released", sa.Integer, nullable=False),
        sa.Column("open", sa.Boolean, nullable=False),
        sa.CheckConstraint("debited + released <= amount", name="ck_coin_reservations_within_amount"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["coin_accounts.user_id"], name="fk_coin_reservations_user_id_coin_accounts"
        ),
        sa.PrimaryKeyConstraint("order_id", name="pk_coin_reservations"),
    )
    op.create_index("ix_coin_reservations_user_id", "coin_reservations", ["user_id"])
    op.create_table(
        "coin_holds",
        sa.Column("order_id", sa.Text, nullable=False),
        sa.Column("seq", sa.SmallInteger, nullable=False),
        sa.Column("lot_id", sa.Text, nullable=False),
        sa.Column("held", sa.Integer, nullable=False),
        sa.CheckConstraint("held >= 0", name="ck_coin_holds_not_negative"),
        sa.ForeignKeyConstraint(
            ["order_id"], ["coin_reservations.order_id"], name="fk_coin_holds_order_id_coin_reservations"
        ),
        sa.ForeignKeyConstraint(["lot_id"], ["coin_lots.lot_id"], name="fk_coin_holds_lot_id_coin_lots"),
        sa.PrimaryKeyConstraint("order_id", "seq", name="pk_coin_holds"),
    )
    op.create_table(
        "coin_debits",
        sa.Column("order_id", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"], ["coin_reservations.order_id"], name="fk_coin_debits_order_id_coin_reservations"
        ),
        sa.PrimaryKeyConstraint("order_id", "key", name="pk_coin_debits"),
    )
    op.create_table(
        "payments",
        sa.Column("external_id", sa.Text, nullable=False),
        sa.Column("user_id", sa.BigInteger, nullable=False),
        sa.Column("coins", sa.Integer, nullable=False),
        sa.Column("paid_amount", sa.Integer, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        _at("received_at"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["coin_accounts.user_id"], name="fk_payments_user_id_coin_accounts"
        ),
        sa.PrimaryKeyConstraint("external_id", name="pk_payments"),
    )
    op.create_index("ix_payments_user_id", "payments", ["user_id"])


def downgrade() -> None:
    for table in (
        "payments", "coin_debits", "coin_holds", "coin_reservations", "coin_lots", "coin_accounts",
        "schema_migrations", "schema_compat",
    ):
        op.drop_table(table)
