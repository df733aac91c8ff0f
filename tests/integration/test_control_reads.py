"""The control read model on a real database: it shows what the use cases wrote, and its
connections cannot write, directly or through PgBouncer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import psycopg
import pytest

from videocopies.adapters.postgres.control_views import PostgresControlReadModel, control_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.control import PLOT_WINDOW
from videocopies.embedded.postgres import LocalPostgres

from .control_seed import Seeded, seed


@pytest.fixture
async def seeded(pg_server: LocalPostgres, database: str) -> tuple[str, Seeded]:
    url = pg_server.url(database)
    return url, await seed(url)


@pytest.fixture
async def model(seeded: tuple[str, Seeded]) -> AsyncIterator[PostgresControlReadModel]:
    pool = control_pool(seeded[0], max_size=2)
    await pool.open(wait=True)
    try:
        yield PostgresControlReadModel(pool)
    finally:
        await pool.close()


async def test_the_read_model_shows_what_the_use_cases_wrote(
    seeded: tuple[str, Seeded], model: PostgresControlReadModel
) -> None:
    _, history = seeded
    depth = await model.queue_depth()
    assert (depth.queued, depth.leased, depth.lapsed) == (1, 1, 0)
    (lease,) = await model.leases(10)
    assert (lease.job_id, lease.worker_id, lease.copies, lease.copies_done) == (history.leased_job, "worker-b", 5, 2)
    assert lease.lease_until > lease.acquired_at and len(lease.owner_token_prefix) == 6
    assert {o.order_id for o in await model.orders_in_progress(10)} == {history.leased_order, history.queued_order}
    recent = await model.recent_orders(10)
    assert [o.order_id for o in recent] == [history.queued_order, history.leased_order, history.done_order]
    assert [(o.order_id, o.state) for o in await model.user_orders(history.other_user, 10)] == [
        (history.queued_order, "confirmed")
    ]
    ledger = await model.ledger(history.user)
    assert ledger is not None and {lot.kind for lot in ledger.lots} == {"start", "purchase"}
    # 50 + 220 granted; nothing delivered yet (a copy is debited on delivery), so both
    # orders still hold their price: 1 x 5 and 5 x 4.
    assert (ledger.available, ledger.reserved) == (270 - 5 - 20, 25)
    held = {r.order_id: sum(h.held for h in r.holds) for r in ledger.reservations if r.open}
    assert held == {history.done_order: 5, history.leased_order: 20}
    assert await model.ledger(999) is None
    (payment,) = await model.payments(10)
    assert (payment.external_id, payment.coins, payment.currency) == (history.payment, 220, "XTR")
    assert await model.payments(10, user_id=history.other_user) == []
    assert await model.reconciliations(10) is None
    assert {(n.name, n.role) for n in await model.nodes()} == {("worker-a", "worker"), ("edge-1", "edge")}
    assert await model.duties() == []


async def test_the_last_hour_counts_copies_and_waits_for_first_copies(model: PostgresControlReadModel) -> None:
    since = SystemClock().now() - PLOT_WINDOW
    assert sum(row.count for row in await model.copies_per_minute(since)) == 3
    latency = await model.latency_per_minute(since)
    assert sum(row.jobs for row in latency) == 2
    assert all(0 <= row.p50_s <= row.p95_s < 60 for row in latency)
    assert await model.copies_per_minute(SystemClock().now() + timedelta(minutes=1)) == []


async def test_a_write_through_the_control_connection_fails(database_url: str) -> None:
    pool = control_pool(database_url, max_size=1)
    await pool.open(wait=True)
    try:
        for statement in (
            "UPDATE jobs SET attempts = attempts",
            "INSERT INTO refused_writes (job_id, operation, reason, at) VALUES ('j', 'x', 'y', now())",
            "CREATE TABLE control_was_here (id int)",
        ):
            async with pool.connection() as conn:
                with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                    await conn.execute(statement)
    finally:
        await pool.close()


async def test_time_window_reads_walk_an_index(seeded: tuple[str, Seeded]) -> None:
    """With sequential scans priced out, the planner still finds a way: an index exists."""
    from videocopies.adapters.postgres.queries import sql

    queries = {
        "copies": sql("control_copies_per_minute"), "latency": sql("control_latency_per_minute"),
        "recent orders": sql("control_recent_orders"), "in progress": sql("control_orders_in_progress"),
        "leases": sql("control_leases"),
    }
    params = {"since": SystemClock().now() - PLOT_WINDOW, "limit": 10, "user_id": 1}
    with psycopg.connect(seeded[0]) as conn:
        conn.execute("SET enable_seqscan = off")
        for name, query in queries.items():
            plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {query}", params).fetchall())
            assert "Seq Scan" not in plan, f"{name}:\n{plan}"
