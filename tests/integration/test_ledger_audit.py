"""The ledger audit on a real database: a ledger written by the use cases is sound, and each
way of breaking it by hand is found by its own check and by nothing it should not be."""

from __future__ import annotations

import psycopg
import pytest

from videocopies.adapters.postgres.ledger_audit import CHECKS, audit_ledger
from videocopies.embedded.postgres import LocalPostgres

from .ledger_scenario import live_a_little

# Each breaks exactly one rule; the constraints in the schema let every one of them through.
BREAKAGES = {
    "lots_add_up": "UPDATE coin_lots SET available = available - 1 WHERE kind = 'manual'",
    "reservations_add_up": "UPDATE coin_reservations SET released = released + 1 "
    "WHERE order_id = (SELECT min(order_id) FROM coin_reservations WHERE open)",
    "holds_on_own_lots": "UPDATE coin_reservations SET holds = holds || jsonb_build_array(jsonb_build_array("
    "(SELECT min(lot_id) FROM coin_lots WHERE user_id = 7002), 0)) "
    "WHERE order_id = (SELECT min(order_id) FROM coin_reservations WHERE user_id = 7001)",
    "orders_reserved": "UPDATE orders SET state = 'quoted' WHERE state = 'cancelled'",
    "debits_per_copy": "DELETE FROM coin_debits",
    "orders_have_jobs": "DELETE FROM job_checkpoints ; DELETE FROM jobs WHERE order_id = "
    "(SELECT order_id FROM orders WHERE state = 'cancelled')",
    "payments_credited": "UPDATE payments SET coins = coins + 1",
}


async def test_a_ledger_written_by_the_use_cases_is_sound(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    lived = await live_a_little(url)
    audit = audit_ledger(url)
    assert audit.sound, [f.describe() for f in audit.findings]
    assert (audit.orders, audit.coins_granted, audit.accounts) == (
        lived["orders"], lived["coins_granted"], lived["accounts"]
    )
    assert audit.checks == len(CHECKS)


@pytest.mark.parametrize("check", sorted(BREAKAGES))
async def test_each_broken_rule_is_found_by_its_check(pg_server: LocalPostgres, database: str, check: str) -> None:
    url = pg_server.url(database)
    await live_a_little(url)
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in BREAKAGES[check].split(" ; "):
            assert conn.execute(statement).rowcount >= 1, statement
    found = {finding.check for finding in audit_ledger(url).findings}
    assert check in found
    # A coin gone from a lot or a reservation unbalances its account too.
    assert found <= {check, "accounts_balance"}, found


async def test_a_hold_on_a_lot_that_does_not_exist_is_found(pg_server: LocalPostgres, database: str) -> None:
    """No foreign key reaches a hold since the holds are a list in their reservation's row (0033)."""
    url = pg_server.url(database)
    await live_a_little(url)
    with psycopg.connect(url, autocommit=True) as conn:
        changed = conn.execute(
            "UPDATE coin_reservations SET holds = holds || '[[\"no-such-lot\", 0]]' "
            "WHERE order_id = (SELECT min(order_id) FROM coin_reservations)"
        ).rowcount
    assert changed == 1
    assert {finding.check for finding in audit_ledger(url).findings} == {"holds_on_own_lots"}
