"""Transient rows pruned in PostgreSQL: each table is walked along an index in key order, a
batch at a time, and each batch is one short transaction that deletes its due rows.

No batch waits for a lock: the due rows are locked with SKIP LOCKED (a row someone is writing
just stays for the next pass), and only row locks are taken. Each walk is an index range
(EXPLAIN in tests/integration/test_prune_locks.py): inbox and outbox along their primary key,
oldest first, stopping after a batch whose every row began after the cutoff (ids grow with
time and a row ends after it begins; a whole batch allows for clocks a little apart);
receipts and checkpoints along created_at, quotes along the partial index of quoted orders
(migration 0020), each up to the cutoff. Each walk's batch is in sql/retention.sql: one
statement, `prune_batch`, filled with the table's walk and what is done with its due rows.
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

from videocopies.adapters.postgres.queries import composed, sql
from videocopies.domain.retention import Transient

log = logging.getLogger(__name__)
_FIRST_TIME = datetime(1, 1, 1, tzinfo=UTC)


@attrs.frozen
class _Walk:
    table: str
    keys: tuple[str, ...]  # the walk's order; the last batch's last key is where the next starts
    start: tuple[Any, ...]
    statement: str  # in sql/retention.sql: walk_<statement> and take_<statement>

    def sql(self, dry_run: bool) -> str:
        take = "count_due" if dry_run else f"take_{self.statement}"
        return composed("prune_batch", walk=f"walk_{self.statement}", take=take)


WALKS = {
    Transient.INBOX: _Walk("inbox", ("id",), (0,), "inbox"),
    Transient.OUTBOX: _Walk("outbox", ("id",), (0,), "outbox"),
    Transient.RECEIPTS: _Walk("receipts", ("created_at", "receipt_id"), (_FIRST_TIME, ""), "receipts"),
    Transient.QUOTES: _Walk("orders", ("quote_expires_at", "order_id"), (_FIRST_TIME, ""), "quotes"),
    Transient.CHECKPOINTS: _Walk(
        "job_checkpoints", ("created_at", "job_id", "idx"), (_FIRST_TIME, "", -1), "job_checkpoints"
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
                    await cur.execute(sql("prune_timeouts"), self._timeouts)
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
