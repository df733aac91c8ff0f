"""bench/queue_floor.py is a floor under the queue benchmark only while it writes the rows the
production claim and completion write: the same tables, as many rows of each, to the same
end states. Ten jobs go through each on one database, and their row writes are compared."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psycopg
import pytest
import uvloop

from videocopies.adapters.postgres.pool import make_pool
from videocopies.application import use_cases as uc
from videocopies.domain.shared import WorkerId
from videocopies.embedded.postgres import LocalPostgres

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import queue_floor  # noqa: E402
import queue_throughput  # noqa: E402

TABLES = ("jobs", "orders", "capacity_slots", "outbox", "receipts", "coin_accounts", "coin_lots",
          "coin_reservations", "refused_writes")
BATCH = 10
Writes = dict[str, tuple[int, int, int]]


def _row_writes(url: str) -> Writes:
    """Inserted, updated and deleted rows per table, once every other session's figures are in."""
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + 30
        while conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "sessions still open"
            time.sleep(0.05)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [list(TABLES)],
        ).fetchall()
    return {name: (ins, upd, dele) for name, ins, upd, dele in rows}


def _less(after: Writes, before: Writes) -> dict[str, tuple[int, ...]]:
    return {t: tuple(a - b for a, b in zip(after[t], before[t], strict=True)) for t in TABLES}


async def _through_the_application(url: str) -> None:
    pool = make_pool(url, min_size=1, max_size=1, direct=True)
    await pool.open(wait=True)
    claim, complete = queue_throughput._cases(pool)
    claimed = await claim(uc.ClaimJobCommand(WorkerId("app"), BATCH))
    assert len(claimed) == BATCH
    await queue_throughput._complete(complete, WorkerId("app"), claimed)
    await pool.close()


def _through_the_floor(url: str, bare: bool = False) -> None:
    claim = queue_floor.BARE_CLAIM if bare else queue_floor.CLAIM
    complete = queue_floor.BARE_COMPLETE if bare else queue_floor.COMPLETE
    with psycopg.connect(url, prepare_threshold=0) as conn:
        rows = conn.execute(claim, {"limit": BATCH, "worker": "floor"}).fetchall()
        conn.commit()
        assert len(rows) == BATCH
        asked = {"jobs": [r[0] for r in rows], "tokens": [r[1] for r in rows],
                 "receipts": [f"complete:{r[0]}:{r[2]}" for r in rows]}
        assert conn.execute(complete, asked).fetchone() == (BATCH,)
        conn.commit()


def _end_states(url: str, first: int) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            """SELECT j.state, j.attempts, j.version, j.owner_token IS NULL, j.closed_by IS NOT NULL,
                      o.state, o.version, s.slot_id IS NULL, b.kind, b.payload->>'state', r.result->>'state'
                 FROM jobs j JOIN orders o USING (order_id)
                 LEFT JOIN capacity_slots s ON s.order_id = o.order_id
                 LEFT JOIN outbox b ON b.dedup_key = 'closed:' || o.order_id
                 LEFT JOIN receipts r ON r.receipt_id = 'complete:' || j.job_id || ':' || j.attempts
                WHERE j.job_id IN (SELECT 'j' || n FROM generate_series(%s::int, %s::int) AS n)
                ORDER BY j.job_id""",
            [first, first + BATCH - 1],
        ).fetchall()


@pytest.mark.slow
def test_the_floor_writes_the_rows_the_application_writes(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    with psycopg.connect(url, autocommit=True) as conn:
        psycopg.ClientCursor(conn).execute(queue_throughput.INSERT_JOBS, {"first": 1, "last": BATCH})
    start = _row_writes(url)
    uvloop.run(_through_the_application(url))
    middle = _row_writes(url)
    with psycopg.connect(url, autocommit=True) as conn:
        psycopg.ClientCursor(conn).execute(queue_throughput.INSERT_JOBS, {"first": BATCH + 1, "last": 2 * BATCH})
    loaded = _row_writes(url)
    _through_the_floor(url)
    end = _row_writes(url)

    application, floor = _less(middle, start), _less(end, loaded)
    assert application["jobs"] == (0, 2 * BATCH, 0) and application["receipts"] == (BATCH, 0, 0), application
    assert floor == application
    assert _end_states(url, BATCH + 1) == _end_states(url, 1)
    assert {row[0] for row in _end_states(url, 1)} == {"done"}


@pytest.mark.slow
def test_the_bare_floor_writes_only_the_jobs_and_their_receipts_and_still_fences(
    pg_server: LocalPostgres, database: str
) -> None:
    """The least a fenced queue with receipts writes: each job leased, then done, its receipt
    stored, and no other row touched."""
    url = pg_server.url(database)
    with psycopg.connect(url, autocommit=True) as conn:
        psycopg.ClientCursor(conn).execute(queue_throughput.INSERT_JOBS, {"first": 1, "last": BATCH})
    start = _row_writes(url)
    _through_the_floor(url, bare=True)
    writes = _less(_row_writes(url), start)

    expected = {t: (0, 0, 0) for t in TABLES} | {"jobs": (0, 2 * BATCH, 0), "receipts": (BATCH, 0, 0)}
    assert writes == expected, writes
    assert {row[0] for row in _end_states(url, 1)} == {"done"}
    with psycopg.connect(url) as conn:
        (late,) = conn.execute(
            queue_floor.BARE_COMPLETE, {"jobs": ["j1"], "tokens": ["not the job's token"], "receipts": ["r"]}
        ).fetchone()  # type: ignore[misc]
    assert late == 0
