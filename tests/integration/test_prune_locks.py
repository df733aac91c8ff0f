"""Pruning never holds up the service: each batch walks an index range (no sequential scan,
whatever the table's size), takes only row locks, and a writer waiting on a row the prune
holds waits at most one batch's time."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.retention import WALKS, PostgresTransientRows
from videocopies.adapters.system import SystemClock
from videocopies.application.retention import PruneTables
from videocopies.domain.retention import RetentionPolicy, Transient
from videocopies.embedded.postgres import LocalPostgres

ROWS = 30_000
# Half of each table past its retention (60 days old), half recent; a few rows never ended.
BULK = f"""
INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at)
SELECT n, n % 500, 'text', '{{}}', now() - (({ROWS} - n) * interval '4 minutes'),
       CASE WHEN n % 1000 <> 7 THEN now() - (({ROWS} - n) * interval '4 minutes') END
  FROM generate_series(1, {ROWS}) n;
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at, sent_at)
SELECT n % 500, 'text', '{{}}', 'k' || n, now() - (({ROWS} - n) * interval '4 minutes'),
       CASE WHEN n % 1000 <> 7 THEN now() - (({ROWS} - n) * interval '4 minutes') END
  FROM generate_series(1, {ROWS}) n;
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
SELECT 'o' || n, n % 500, 's', 1, 5, 5, 1, now() - (({ROWS} - n) * interval '4 minutes'), 't', n,
       CASE WHEN n % 3 = 0 THEN 'quoted' ELSE 'done' END, '[["delivered", null]]',
       now() - (({ROWS} - n) * interval '4 minutes'), 1
  FROM generate_series(1, {ROWS}) n;
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
SELECT 'j' || n, 'o' || n, 'done', '[]', 3, 1, false, now() - (({ROWS} - n) * interval '4 minutes'), 1
  FROM generate_series(1, {ROWS}) n WHERE n % 3 <> 0;
INSERT INTO coin_accounts (user_id, version, created_at) SELECT n, 1, now() FROM generate_series(0, 499) n;
INSERT INTO coin_reservations (order_id, user_id, amount, debited, released, open)
SELECT 'o' || n, n % 500, 5, 5, 0, false FROM generate_series(1, {ROWS}) n WHERE n % 3 <> 0;
INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height, created_at)
SELECT 'j' || n, 0, 'copies/o' || n || '/0.mp4', 1, 's', 2, 540, 960, now() - (({ROWS} - n) * interval '4 minutes')
  FROM generate_series(1, {ROWS}) n WHERE n % 3 <> 0;
UPDATE stored_objects SET state = 'deleted', deleted_at = now();
INSERT INTO receipts (receipt_id, fingerprint, result, created_at)
SELECT 'r' || md5(n::text), 'f', jsonb_build_object('job_id', 'j' || n), now() - (({ROWS} - n) * interval '4 minutes')
  FROM generate_series(1, {ROWS}) n WHERE n % 3 <> 0;
ANALYZE;
"""
RETENTION = timedelta(days=40)  # the rows are 0 to 83 days old: half of them are due
POLICY = RetentionPolicy(*(RETENTION,) * 5)
BATCH = 1000
# The index each walk must range over.
INDEXES = {
    Transient.INBOX: "pk_inbox", Transient.OUTBOX: "pk_outbox", Transient.RECEIPTS: "ix_receipts_created_at",
    Transient.QUOTES: "ix_orders_unconfirmed", Transient.CHECKPOINTS: "ix_job_checkpoints_created_at",
}


@pytest.fixture(scope="module")
def bulk(pg_server: LocalPostgres, pg_template: str) -> Iterator[str]:
    """One database with the bulk rows: the plans change nothing (each EXPLAIN ANALYZE is
    rolled back), and the writer's test, which prunes, comes after them."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    pg_server.create_database(name, template=pg_template)
    with psycopg.connect(pg_server.url(name), autocommit=True) as conn:
        conn.execute(BULK)
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


@pytest.fixture
async def pool(bulk: str) -> AsyncIterator[AsyncConnectionPool]:
    async with AsyncConnectionPool(bulk, min_size=2, max_size=2, open=False) as opened:
        yield opened


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]


@pytest.mark.parametrize("table", list(Transient))
def test_each_batch_walks_an_index_range_and_reads_about_a_batch(bulk: str, table: Transient) -> None:
    walk = WALKS[table]
    params = {"cutoff": datetime.now(UTC) - RETENTION, "limit": 1000,
              **{f"k{i}": key for i, key in enumerate(walk.start)}}
    with psycopg.connect(bulk) as conn:
        (plan,) = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + walk.sql(dry_run=False), params).fetchone()[0]
        conn.rollback()
    nodes = _nodes(plan["Plan"])
    assert not [n for n in nodes if n["Node Type"] == "Seq Scan"], json.dumps(plan, indent=1)
    (walked,) = [n for n in nodes if n.get("Index Name") == INDEXES[table] and "ANY" not in n["Index Cond"]]
    # An index range, not a walk of the whole index: about one batch of rows is read.
    assert walked["Actual Rows"] + walked.get("Rows Removed by Filter", 0) <= 1001, json.dumps(plan, indent=1)


async def test_only_row_locks_and_a_writer_waits_at_most_a_batch(bulk: str, pool: AsyncConnectionPool) -> None:
    url = bulk
    rows = PostgresTransientRows(pool)
    batches: dict[Transient, list[float]] = {t: [] for t in Transient}
    locks: set[str] = set()
    writer_waits: list[float] = []
    done = asyncio.Event()

    class Timed:
        async def prune(self, table: Transient, cutoff: datetime, batch: int | None, dry_run: bool) -> Any:
            started = time.perf_counter()
            async for pruned in rows.prune(table, cutoff, batch, dry_run):
                batches[table].append(time.perf_counter() - started)
                yield pruned
                started = time.perf_counter()

    async def prune() -> int:
        try:
            return (await PruneTables(Timed(), SystemClock(), POLICY, batch=BATCH)()).total
        finally:
            done.set()

    async def watch() -> None:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            while not done.is_set():
                cur = await conn.execute(
                    "SELECT DISTINCT l.mode FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                    " WHERE l.locktype = 'relation' AND a.query LIKE '%%WITH walked%%' AND a.pid <> pg_backend_pid()"
                )
                locks.update(mode for (mode,) in await cur.fetchall())
                await asyncio.sleep(0.005)

    async def write() -> None:
        # Touches old rows, the due ones the prune is working on, all the while it works.
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("SET lock_timeout = '5s'")
            n = 1
            while not done.is_set():
                for statement in ("UPDATE outbox SET attempts = attempts + 1 WHERE id = %s",
                                  "UPDATE inbox SET outcome = 'x' WHERE id = %s",
                                  "UPDATE orders SET version = version + 1 WHERE order_id = 'o' || %s"):
                    started = time.perf_counter()
                    await conn.execute(statement, [n % (ROWS // 2)])
                    writer_waits.append(time.perf_counter() - started)
                n += 7

    pruned, *_ = await asyncio.gather(prune(), watch(), write())

    assert pruned > ROWS  # about half of every table
    assert locks <= {"AccessShareLock", "RowShareLock", "RowExclusiveLock"}, locks
    # A writer waits for at most about one batch, measured in this run: under a third of the
    # time the longest table took (all of which it would wait, were a table pruned in one
    # statement or one transaction) or, when one batch ran slow (a disk flush stalled under
    # the suite's load), no longer than that batch and a little for the writer's own commit.
    longest_table = max(sum(times) for times in batches.values())
    slowest_batch = max(max(times) for times in batches.values() if times)
    assert min(len(times) for times in batches.values()) > 2, batches  # in batches, not one statement
    assert len(writer_waits) > 30
    assert max(writer_waits) < max(longest_table / 3, slowest_batch + 0.03), (
        max(writer_waits), {t.value: b for t, b in batches.items()}
    )
