"""Every table of the schema is either money (kept forever), transient (pruned past its
retention) or kept for a reason named here: a new table has to be placed before it ships."""

from videocopies.adapters.postgres.retention import WALKS
from videocopies.adapters.postgres.tables import metadata
from videocopies.domain.retention import MONEY, Transient

# Kept, though not money: confirmed orders and their jobs (the ledger audit reads them), the
# schema's own tables, identities and leases that are updated in place, rows that remove
# themselves (inbox_users; lapsing_buttons, at the sweep) or that their own duty prunes (stored_objects), and the log of
# refused lease writes, which nothing prunes yet.
KEPT = {"orders", "jobs", "schema_compat", "schema_migrations", "capacity_slots", "nodes", "bot_users",
        "duty_leases", "inbox_users", "lapsing_buttons", "stored_objects", "refused_writes"}


def test_every_table_is_money_transient_or_kept_for_a_reason() -> None:
    transient = {walk.table for walk in WALKS.values()}  # quotes are orders that stayed quotes

    assert set(metadata.tables) >= MONEY
    assert set(metadata.tables) == MONEY | transient | KEPT
    assert not MONEY & (transient | KEPT)


def test_every_transient_table_has_a_walk_and_no_walk_touches_money() -> None:
    assert set(WALKS) == set(Transient)
    assert not {walk.table for walk in WALKS.values()} & MONEY
