"""One server-side function that locks and loads what a unit of work reads first.

`videocopies_load` takes a JSON object `{"orders": [...], "accounts": [...]}`, locks each
order row, then each account row, in that order, and returns them as one JSON value: the
orders as rows, the accounts with their lots and open reservations (the shape `load_account`
reads). The unit of work sends it as a literal, behind its BEGIN, in one simple query: one
round trip opens the transaction and reads, through PgBouncer as well, and the server keeps
the plans of the statements inside per session.

An account's children are read by a statement that starts after its row lock is held, so
with a fresh snapshot: a load that waited for the lock sees what the previous holder
committed, without the `seen_version` re-read that a single statement needs.

`videocopies_apply`, as the database holds it (0009's, as 0012 and 0013 taught it more
writes), walks its write set by index instead of through a set-returning query, which
opened a cursor on every call (about 10 % of the function's time). Its statements do not
change. Downgrading walks it through the cursor again.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

code_levels = (2, 2)  # this code needs videocopies_load, and no earlier code knows 0012–0013's writes


LOAD = r"""
CREATE FUNCTION videocopies_load(reads jsonb) RETURNS json
LANGUAGE plpgsql AS $fn$
DECLARE
    i integer;
    wanted_order text;
    wanted_user bigint;
    locked_version integer;
    one json;
    found_orders json[] := '{}';
    found_accounts json[] := '{}';
BEGIN
    -- Index loops, not FOR ... IN SELECT: no cursor to open per call.
    FOR i IN 0 .. jsonb_array_length(reads->'orders') - 1 LOOP
        wanted_order := reads->'orders'->>i;
        SELECT row_to_json(o) INTO one FROM orders o WHERE o.order_id = wanted_order FOR UPDATE;
        IF FOUND THEN
            found_orders := found_orders || one;
        END IF;
    END LOOP;
    FOR i IN 0 .. jsonb_array_length(reads->'accounts') - 1 LOOP
        wanted_user := (reads->'accounts'->>i)::bigint;
        SELECT a.version INTO locked_version FROM coin_accounts a WHERE a.user_id = wanted_user FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        SELECT json_build_object(
                   'user_id', wanted_user,
                   'version', locked_version,
                   'lots', (SELECT coalesce(json_agg(json_build_object(
                                       'lot_id', l.lot_id, 'kind', l.kind, 'amount', l.amount,
                                       'granted_at', l.granted_at, 'expires_at', l.expires_at,
                                       'available', l.available, 'debited', l.debited, 'expired', l.expired,
                                       'refunded', l.refunded)
                                     ORDER BY l.granted_at, l.lot_id), '[]')
                              FROM coin_lots l WHERE l.user_id = wanted_user),
                   'reservations', (SELECT coalesce(json_agg(json_build_object(
                                       'order_id', r.order_id, 'amount', r.amount, 'debited', r.debited,
                                       'released', r.released,
                                       'holds', (SELECT coalesce(json_agg(json_build_array(h.lot_id, h.held)
                                                                          ORDER BY h.seq), '[]')
                                                   FROM coin_holds h WHERE h.order_id = r.order_id),
                                       'keys', (SELECT coalesce(json_agg(d.key), '[]')
                                                  FROM coin_debits d WHERE d.order_id = r.order_id))), '[]')
                                      FROM coin_reservations r WHERE r.user_id = wanted_user AND r.open))
          INTO one;
        found_accounts := found_accounts || one;
    END LOOP;
    RETURN json_build_object('orders', array_to_json(found_orders), 'accounts', array_to_json(found_accounts));
END
$fn$
"""


_CURSOR_LOOP = """    FOR w IN SELECT value FROM jsonb_array_elements(writes) LOOP
        op_name := w->>0;
        p := w->1;"""
_INDEX_LOOP = """    FOR i IN 0 .. jsonb_array_length(writes) - 1 LOOP
        op_name := writes->i->>0;
        p := writes->i->1;"""


def _installed() -> str:
    """The write function as the database holds it now, with every earlier migration's writes."""
    query = sa.text("SELECT pg_get_functiondef('videocopies_apply(jsonb)'::regprocedure)")
    text: str = op.get_bind().execute(query).scalar_one()
    return text


_CURSOR_DECLARED, _INDEX_DECLARED = "    w jsonb;\n", "    i integer;\n"


def upgrade() -> None:
    op.execute(LOAD)
    installed = _installed()
    assert installed.count(_CURSOR_LOOP) == 1 and installed.count(_CURSOR_DECLARED) == 1
    op.execute(installed.replace(_CURSOR_LOOP, _INDEX_LOOP).replace(_CURSOR_DECLARED, _INDEX_DECLARED))


def downgrade() -> None:
    installed = _installed()
    op.execute(installed.replace(_INDEX_LOOP, _CURSOR_LOOP).replace(_INDEX_DECLARED, _CURSOR_DECLARED))
    op.execute("DROP FUNCTION videocopies_load(jsonb)")
