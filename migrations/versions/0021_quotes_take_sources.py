"""A quote and its confirmation take their source: writing a quoted order, or confirming one,
clears the source's `released_at`, and is refused when the lifecycle duty has already decided to
delete that source.

The duty decides a source's deletion in a transaction that locks the source's row and its
quoted orders' rows, checks again that no open order or live quote uses it, and marks it
(`deleted_at` on a row still `stored`: the store's delete is under way). A quote's insert locks
the source's row (a share lock); a confirmation's update holds its order's row lock when it
reads the source's row. So each is ordered with the duty by a lock, whichever comes first:
- the order first: the source is in use again, and the duty's decision passes it by;
- the duty first: the quote or confirmation is refused (sqlstate VC001,
  "conflict:source_gone:<key>"), and the bot asks the user for the video again.
A quoted source under `sources/` without a row (stored by a local run or a test, not through the
inbox) gets its row with the quote, so the lifecycle keeps it while its order runs, rather than
taking it for a stray, and deletes it after. A confirmation only reads the source's row (it is
written only when the source was released), so confirmations pay an index lookup, no lock.

Code of level 5 and 6 runs on this schema unchanged: a quote refused here is the rare case of a
source deleted while its quote or confirmation was being written; without this revision the
order would be made and would fail for want of its source.

Revision ID: 0021
Revises: 0020
"""

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

code_levels = (5, 6)

_TRIGGER = r"""
CREATE FUNCTION videocopies_quote_takes_source() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    source stored_objects%ROWTYPE;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT * INTO source FROM stored_objects WHERE key = NEW.source_key FOR KEY SHARE;
    ELSE  -- the order's row is locked by now: the duty locks it too (see above)
        SELECT * INTO source FROM stored_objects WHERE key = NEW.source_key;
    END IF;
    IF NOT FOUND THEN
        IF NEW.source_key LIKE 'sources/%' THEN
            INSERT INTO stored_objects (key, kind, user_id, size, state, stored_at)
            VALUES (NEW.source_key, 'source', NEW.user_id, NEW.source_bytes, 'stored', now())
                ON CONFLICT (key) DO NOTHING;
        END IF;
        RETURN NEW;
    END IF;
    IF source.state = 'deleted' OR source.deleted_at IS NOT NULL THEN
        RAISE EXCEPTION 'conflict:source_gone:%', NEW.source_key USING ERRCODE = 'VC001';
    END IF;
    IF source.released_at IS NOT NULL THEN
        UPDATE stored_objects SET released_at = NULL WHERE key = NEW.source_key;
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER orders_quote_takes_source BEFORE INSERT ON orders FOR EACH ROW
    WHEN (NEW.state = 'quoted') EXECUTE FUNCTION videocopies_quote_takes_source();
CREATE TRIGGER orders_confirmation_takes_source BEFORE UPDATE OF state ON orders FOR EACH ROW
    WHEN (OLD.state = 'quoted' AND NEW.state = 'confirmed') EXECUTE FUNCTION videocopies_quote_takes_source();
"""


def upgrade() -> None:
    op.execute(_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER orders_confirmation_takes_source ON orders")
    op.execute("DROP TRIGGER orders_quote_takes_source ON orders")
    op.execute("DROP FUNCTION videocopies_quote_takes_source()")
