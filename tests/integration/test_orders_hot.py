"""An order's updates stay heap-only (0028): no index of `orders` names a column they change,
so a claim (`running`) and a completion (`done`) write no index entry, and the quotes' prune
walk finds the quotes by `confirmed_at`, which a trigger sets once."""

from __future__ import annotations

from datetime import timedelta

import psycopg

from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.adapters.system import RandomIds, SystemClock
from videocopies.application import use_cases as uc
from videocopies.domain.shared import WorkerId
from videocopies.embedded.postgres import LocalPostgres

ORDERS = 200
# Confirmed orders, each with its account, lot, reservation, capacity slot and queued job.
CONFIRMED = f"""
INSERT INTO coin_accounts (user_id, version, created_at) SELECT n, 1, now() FROM generate_series(1, {ORDERS}) n;
INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited, expired, refunded)
SELECT 'l' || n, n, 'start', 10, now(), now() + interval '30 days', 9, 0, 0, 0 FROM generate_series(1, {ORDERS}) n;
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
SELECT 'o' || n, n, 's', 1, 1, 1, 1, now(), 't', n, 'confirmed', '[]', now(), 1 FROM generate_series(1, {ORDERS}) n;
INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open, holds)
SELECT 'o' || n, n, 1, 0, 0, true, jsonb_build_array(jsonb_build_array('l' || n, 1))
  FROM generate_series(1, {ORDERS}) n;
UPDATE capacity_slots SET order_id = 'o' || slot_id WHERE slot_id <= {ORDERS};
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
SELECT 'j' || n, 'o' || n, 'queued', '[]', 3, 0, false, now(), 0 FROM generate_series(1, {ORDERS}) n;
"""


def test_no_index_of_orders_names_its_state(pg_server: LocalPostgres, database: str) -> None:
    with psycopg.connect(pg_server.url(database)) as conn:
        naming = conn.execute(
            """SELECT i.indexrelid::regclass::text FROM pg_index i
                WHERE i.indrelid = 'orders'::regclass
                  AND (pg_get_indexdef(i.indexrelid) ~ '\\mstate\\M'
                       OR coalesce(pg_get_expr(i.indpred, i.indrelid), '') ~ '\\mstate\\M')"""
        ).fetchall()
    assert naming == []


def test_an_order_leaving_its_quote_is_stamped_once(pg_server: LocalPostgres, database: str) -> None:
    with psycopg.connect(pg_server.url(database), autocommit=True) as conn:
        conn.execute(
            """INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                                   quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
               SELECT 'q' || n, n, 'sources/s', 1, 1, 1, 1, now(), 't', n, 'quoted', '[]', now(), 1
                 FROM generate_series(1, 2) n"""
        )
        conn.execute("UPDATE orders SET state = 'confirmed' WHERE order_id = 'q1'")
        first = conn.execute("SELECT confirmed_at FROM orders WHERE order_id = 'q1'").fetchone()[0]
        conn.execute("UPDATE orders SET state = 'running' WHERE order_id = 'q1'")
        stamps = dict(conn.execute("SELECT order_id, confirmed_at FROM orders").fetchall())
    assert first is not None and stamps == {"q1": first, "q2": None}


async def test_a_claim_and_a_completion_write_the_order_heap_only(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(CONFIRMED)
        conn.execute("VACUUM orders")  # the fill factor's room on each page, as a table written over time has
    pool = make_pool(url, min_size=1, max_size=1, direct=True)
    await pool.open(wait=True)
    clock = SystemClock()
    claim = uc.ClaimJob(lambda: PostgresUnitOfWork(pool), clock, RandomIds(), timedelta(seconds=30))
    complete = uc.CompleteJob(lambda: PostgresUnitOfWork(pool), clock)
    worker = WorkerId("w")
    while claimed := await claim(uc.ClaimJobCommand(worker, 10)):
        commands = [uc.CompleteJobCommand(j.job_id, j.token, f"r-{j.job_id}", worker) for j in claimed]
        assert all(not isinstance(o, Exception) for o in await complete.together(commands))
    await pool.close()  # its backends report their figures as they exit
    with psycopg.connect(url) as conn:
        for _ in range(50):
            updates, heap_only = conn.execute(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'orders'"
            ).fetchone()
            if updates >= 2 * ORDERS:
                break
            conn.execute("SELECT pg_sleep(0.1)")
            conn.execute("SELECT pg_stat_clear_snapshot()")
    assert updates == 2 * ORDERS
    assert heap_only >= updates // 2, (updates, heap_only)  # none were, while an index named state
