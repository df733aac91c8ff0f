"""Transient rows pruned in PostgreSQL: each table is walked along an index in key order, a
batch at a time, and each batch is one short transaction that deletes its due rows.

No batch waits for a lock: the due rows are locked with SKIP LOCKED (a row someone is writing
just stays for the next pass), and only row locks are taken. Each walk is an index range
(EXPLAIN in tests/integration/test_prune_locks.py): inbox and outbox along their primary key,
oldest first, stopping after a batch whose every row began after the cutoff (ids grow with
time and a row ends after it begins; a whole batch allows for clocks a little apart);
receipts and checkpoints along created_at, quotes along the partial index of quoted orders
(migration 0020), each up to the cutoff.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any

import attrs
from psycopg.errors import LockNotAvailable
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from videocopies.domain.retention import Transient

log = logging.getLogger(__name__)
_FIRST_TIME = datetime(1, 1, 1, tzinfo=UTC)
# What a due row must not have is looked up row by row (scalar subqueries, by primary or
# unique key): as NOT EXISTS the planner hashed all of jobs for every batch.
_TIMEOUTS = "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)"
_OPEN_JOB = "('queued', 'leased')"
_CLOSED_JOB = "('done', 'failed', 'cancelled')"


@attrs.frozen
class _Walk:
    table: str
    keys: tuple[str, ...]  # the walk's order; the last batch's last key is where the next starts
    start: tuple[Any, ...]
    walked: str  # the next rows after %(k0)s.. in key order, with what decides them
    due: str  # the walked rows (w) that are due: their `row`
    recheck: str  # on the table's own row (t), when locking it
    row: str  # how a due row names its table row

    def sql(self, dry_run: bool) -> str:
        keys = ", ".join(self.keys)
        last = ", ".join(f"{k} DESC" for k in self.keys)
        if dry_run:
            gone = "gone AS (SELECT 1 FROM due)"
        else:
            gone = f"""locked AS (
    SELECT t.{self.row} FROM {self.table} t
     WHERE t.{self.row} = ANY(ARRAY(SELECT row FROM due)) AND {self.recheck}
       FOR UPDATE OF t SKIP LOCKED
), gone AS (
    DELETE FROM {self.table} t WHERE t.{self.row} = ANY(ARRAY(SELECT {self.row} FROM locked)) RETURNING 1
)"""
        return f"""
WITH walked AS ({self.walked}
), due AS ({self.due}
), {gone}
SELECT (SELECT count(*) FROM gone) AS pruned, (SELECT count(*) FROM walked) AS walked,
       coalesce((SELECT bool_and(late) FROM walked), false) AS late, last.*
  FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT {keys} FROM walked ORDER BY {last} LIMIT 1) AS last ON true
"""


WALKS = {
    # Processed events; ids grow with arrival, so a batch that all arrived after the cutoff ends the walk.
    Transient.INBOX: _Walk(
        "inbox", ("id",), (0,),
        walked="""
    SELECT i.id, i.processed_at <= %(cutoff)s AS due, i.received_at > %(cutoff)s AS late
      FROM inbox i WHERE i.id > %(k0)s ORDER BY i.id LIMIT %(limit)s""",
        due="SELECT w.id AS row FROM walked w WHERE w.due",
        recheck="t.processed_at <= %(cutoff)s", row="id",
    ),
    # Sent or given up (both set sent_at).
    Transient.OUTBOX: _Walk(
        "outbox", ("id",), (0,),
        walked="""
    SELECT o.id, o.sent_at <= %(cutoff)s AS due, o.created_at > %(cutoff)s AS late
      FROM outbox o WHERE o.id > %(k0)s ORDER BY o.id LIMIT %(limit)s""",
        due="SELECT w.id AS row FROM walked w WHERE w.due",
        recheck="t.sent_at <= %(cutoff)s", row="id",
    ),
    # A receipt answers retries of its report; it goes once the job its result names is closed
    # (or gone). Completions grouped in one transaction share created_at: the walk orders ties.
    Transient.RECEIPTS: _Walk(
        "receipts", ("created_at", "receipt_id"), (_FIRST_TIME, ""),
        walked="""
    SELECT r.created_at, r.receipt_id, r.result->>'job_id' AS job_id, false AS late
      FROM receipts r
     WHERE r.created_at <= %(cutoff)s AND r.created_at >= %(k0)s AND (r.created_at, r.receipt_id) > (%(k0)s, %(k1)s)
     ORDER BY r.created_at, r.receipt_id LIMIT %(limit)s""",
        due=f"""
    SELECT w.receipt_id AS row FROM walked w
     WHERE coalesce((SELECT j.state FROM jobs j WHERE j.job_id = w.job_id), 'gone') NOT IN {_OPEN_JOB}""",
        recheck="true", row="receipt_id",
    ),
    # Orders that stayed quotes: nothing was reserved, queued or given a slot for them.
    Transient.QUOTES: _Walk(
        "orders", ("quote_expires_at", "order_id"), (_FIRST_TIME, ""),
        walked="""
    SELECT o.quote_expires_at, o.order_id, false AS late
      FROM orders o
     WHERE o.state = 'quoted' AND o.quote_expires_at <= %(cutoff)s AND o.quote_expires_at >= %(k0)s
       AND (o.quote_expires_at, o.order_id) > (%(k0)s, %(k1)s)
     ORDER BY o.quote_expires_at, o.order_id LIMIT %(limit)s""",
        due="""
    SELECT w.order_id AS row FROM walked w
     WHERE (SELECT 1 FROM jobs j WHERE j.order_id = w.order_id) IS NULL
       AND (SELECT 1 FROM capacity_slots s WHERE s.order_id = w.order_id) IS NULL
       AND (SELECT 1 FROM coin_reservations r WHERE r.order_id = w.order_id) IS NULL""",
        recheck="t.state = 'quoted'", row="order_id",
    ),
    # A closed job's checkpoints, once the copy each names is gone from the store.
    Transient.CHECKPOINTS: _Walk(
        "job_checkpoints", ("created_at", "job_id", "idx"), (_FIRST_TIME, "", -1),
        walked="""
    SELECT c.ctid AS at, c.created_at, c.job_id, c.idx, c.object_key, false AS late
      FROM job_checkpoints c
     WHERE c.created_at <= %(cutoff)s AND c.created_at >= %(k0)s
       AND (c.created_at, c.job_id, c.idx) > (%(k0)s, %(k1)s, %(k2)s)
     ORDER BY c.created_at, c.job_id, c.idx LIMIT %(limit)s""",
        due=f"""
    SELECT w.at AS row FROM walked w
     WHERE (SELECT j.state FROM jobs j WHERE j.job_id = w.job_id) IN {_CLOSED_JOB}
       AND coalesce((SELECT s.state FROM stored_objects s WHERE s.key = w.object_key), 'deleted') = 'deleted'""",
        recheck="true", row="ctid",
    ),
}


class PostgresTransientRows:
    def __init__(self, pool: AsyncConnectionPool, lock_timeout: str = "1s", statement_timeout: str = "30s") -> None:
        """A batch gives up rather than wait `lock_timeout` for a lock (a foreign key's check)."""
        self._pool, self._timeouts = pool, [lock_timeout, statement_timeout]

    async def prune(
        self, table: Transient, cutoff: datetime, batch: int | None, dry_run: bool
    ) -> AsyncGenerator[int, None]:
        walk = WALKS[table]
        query, after = walk.sql(dry_run), walk.start
        while True:
            params = {"cutoff": cutoff, "limit": batch, **{f"k{i}": key for i, key in enumerate(after)}}
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    cur = conn.cursor(row_factory=dict_row)
                    await cur.execute(_TIMEOUTS, self._timeouts)
                    await cur.execute(query, params)
                    result = await cur.fetchone()
            except LockNotAvailable:
                log.info("pruning %s waited too long for a lock; the next pass goes on", table.value)
                return
            assert result is not None
            yield result["pruned"]
            if batch is None or result["walked"] < batch or result["late"]:
                return
            after = tuple(result[k] for k in walk.keys)
