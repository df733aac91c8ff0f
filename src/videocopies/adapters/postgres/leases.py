"""A renewal in one round trip: the lease extended under its token by one fenced UPDATE, sent
with its BEGIN and its COMMIT (which does not wait for the flush) as one simple query, so it
also goes through PgBouncer. The whole path (load the job, `Job.renew`, write it back) costs
two round trips and a job's JSON each way; a renewal is the Job API's most frequent write."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.queries import sql
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork, write_set
from videocopies.domain.shared import JobId, OwnerToken, WorkerId


class PostgresLeaseRenewals:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def renew(
        self, job_id: JobId, token: OwnerToken, holder: WorkerId | None, now: datetime, until: datetime
    ) -> bool | None:
        params = {"job_id": job_id, "token": token, "holder": holder, "now": now, "until": until}
        # The unit of work only lends its connection (in autocommit, given back idle or rolled
        # back): the batch holds its own BEGIN and COMMIT.
        async with PostgresUnitOfWork(self._pool) as uow:
            return await _renewed(uow.conn, params)


async def _renewed(conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> bool | None:
    renewal = write_set.bound(conn, [("renew_lease", params)])
    batch = write_set.opening() + write_set.relaxed() + renewal + sql("commit").encode()
    cursor = conn.cursor()
    await cursor.execute(batch, prepare=False)
    while cursor.description is None:  # BEGIN, SET: to the UPDATE's rows
        if not cursor.nextset():
            raise RuntimeError("renew_lease returned no rows")
    row = await cursor.fetchone()
    assert conn.info.transaction_status is TransactionStatus.IDLE  # committed
    return None if row is None else bool(row[0])
