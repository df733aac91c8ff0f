"""An order's updates stay HOT: no index of `orders` names `state` any more.

A claim writes an order `running` and a completion writes it `done`. `state` was in
`ix_orders_quoted`'s predicate, so each of those updates wrote a new entry in every index of
the table (four), and autovacuum had to clean up after each. An update that changes no indexed
column, and finds room on its page, writes none (a heap-only tuple).

- `confirmed_at`: when the order stopped being a quote. A trigger sets it when an order is
  written in any other state. Code of level 11, which never names the column, therefore runs on
  this schema unchanged. Orders confirmed before this revision get their `created_at`.
- `ix_orders_unconfirmed` replaces `ix_orders_quoted`: the same quotes by expiry, with a
  predicate that names a column set once. The prune walk of level 12 ranges over it. Level 11's
  walk names only `state`, so it finds no index of its own: it still prunes, but more slowly.
- `fillfactor` 85: each page keeps room for its orders' next versions. Pages written before this
  revision keep what they had until they are rewritten.

The backfill rewrites every confirmed order once (one new version each) inside the migration's
transaction.

Revision ID: 0028
Revises: 0027
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

code_levels = (11, 12)  # level 12's quote walk names confirmed_at; level 11's only state

_TRIGGER = r"""
CREATE FUNCTION videocopies_order_leaves_quote() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.confirmed_at := coalesce(NEW.confirmed_at, now());
    RETURN NEW;
END
$fn$;
CREATE TRIGGER orders_written_past_quote BEFORE INSERT ON orders FOR EACH ROW
    WHEN (NEW.state <> 'quoted') EXECUTE FUNCTION videocopies_order_leaves_quote();
CREATE TRIGGER orders_leave_quote BEFORE UPDATE OF state ON orders FOR EACH ROW
    WHEN (OLD.state = 'quoted' AND NEW.state <> 'quoted') EXECUTE FUNCTION videocopies_order_leaves_quote();
"""


def upgrade() -> None:
    op.add_column("orders", sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE orders SET confirmed_at = created_at WHERE state <> 'quoted'")
    op.execute(_TRIGGER)
    op.create_index(
        "ix_orders_unconfirmed", "orders", ["quote_expires_at"], postgresql_where=sa.text("confirmed_at IS NULL")
    )
    op.drop_index("ix_orders_quoted", table_name="orders")
    op.execute("ALTER TABLE orders SET (fillfactor = 85)")


def downgrade() -> None:
    op.execute("ALTER TABLE orders RESET (fillfactor)")
    op.create_index(
        "ix_orders_quoted", "orders", ["quote_expires_at"], postgresql_where=sa.text("state = 'quoted'")
    )
    op.drop_index("ix_orders_unconfirmed", table_name="orders")
    op.execute("DROP TRIGGER orders_leave_quote ON orders")
    op.execute("DROP TRIGGER orders_written_past_quote ON orders")
    op.execute("DROP FUNCTION videocopies_order_leaves_quote()")
    op.drop_column("orders", "confirmed_at")
