"""The control panel's reads from PostgreSQL, on connections that cannot write.

Every connection of the pool begins its transactions READ ONLY (psycopg's `read_only`,
sent with each BEGIN, so it holds through PgBouncer in transaction mode too), and each
read is limited in time: an operator's page must never hold up the service. Each query
walks an index: unfinished jobs through their partial indexes, one user's rows through
the user_id indexes, the last hour through the created_at indexes of migration 0012.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.figures import read_figures
from videocopies.application.control import (
    DutyView,
    HoldView,
    LeaseView,
    Ledger,
    LotView,
    MinuteCount,
    MinuteLatency,
    NodeView,
    OrderView,
    PaymentView,
    QueueDepth,
    ReconciliationView,
    ReservationView,
    ReversedPaymentView,
    UnconfirmedPaymentView,
    UnreadableView,
)

STATEMENT_TIMEOUT = "5s"

_ORDER_COLUMNS = """o.order_id, o.user_id, o.copies, o.total, o.state, o.created_at, o.failure_reason,
       (SELECT count(*) FROM jsonb_array_elements(o.copy_states) s WHERE s->>0 = 'delivered') AS copies_delivered"""

_LEASES = """
SELECT j.job_id, j.order_id, o.user_id, j.worker_id, left(j.owner_token, 6) AS owner_token_prefix, j.created_at,
       j.acquired_at, j.lease_until, j.attempts, j.max_attempts, jsonb_array_length(j.plans) AS copies,
       (SELECT count(*) FROM job_checkpoints c WHERE c.job_id = j.job_id) AS copies_done, j.cancel_requested
  FROM jobs j JOIN orders o ON o.order_id = j.order_id
 WHERE j.state = 'leased'
 ORDER BY j.lease_until
 LIMIT %(limit)s
"""

# Two arms, so each walks its own partial index.
_IN_PROGRESS = f"""
SELECT {_ORDER_COLUMNS}
  FROM (SELECT order_id, created_at FROM jobs WHERE state = 'queued'
        UNION ALL
        SELECT order_id, created_at FROM jobs WHERE state = 'leased') j
  JOIN orders o ON o.order_id = j.order_id
 ORDER BY j.created_at
 LIMIT %(limit)s
"""

_RECENT_ORDERS = f"SELECT {_ORDER_COLUMNS} FROM orders o ORDER BY o.created_at DESC LIMIT %(limit)s"
_USER_ORDERS = f"""
SELECT {_ORDER_COLUMNS} FROM orders o WHERE o.user_id = %(user_id)s ORDER BY o.created_at DESC LIMIT %(limit)s
"""

_LOTS = """
SELECT lot_id, kind, amount, granted_at, expires_at, available, debited, expired
  FROM coin_lots WHERE user_id = %(user_id)s ORDER BY granted_at, lot_id
"""
_RESERVATIONS = """
SELECT r.order_id, r.amount, r.debited, r.released, r.open,
       (SELECT coalesce(json_agg(json_build_array(h.lot_id, h.held) ORDER BY h.seq), '[]')
          FROM coin_holds h WHERE h.order_id = r.order_id) AS holds
  FROM coin_reservations r WHERE r.user_id = %(user_id)s
 ORDER BY r.open DESC, r.order_id
 LIMIT 200
"""

_PAYMENT_COLUMNS = "external_id, user_id, coins, paid_amount, currency, received_at"
_UNCONFIRMED = """
SELECT c.external_id, c.user_id, c.paid_amount, c.currency, c.node, c.claimed_at FROM payment_claims c
 WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.external_id = c.external_id)
 ORDER BY c.claimed_at DESC LIMIT %(limit)s
"""
_REVERSED = """
SELECT external_id, user_id, taken, owed, reversed_at FROM payment_reversals ORDER BY reversed_at DESC
 LIMIT %(limit)s
"""

_COPIES_PER_MINUTE = """
SELECT date_trunc('minute', created_at) AS minute, count(*) AS count
  FROM job_checkpoints WHERE created_at >= %(since)s
 GROUP BY 1 ORDER BY 1
"""

# A finished job no longer holds its claim time (acquired_at goes with the lease), so the
# wait is measured to the job's first stored copy: queue time plus one copy's rendering.
_LATENCY_PER_MINUTE = """
WITH firsts AS (
    SELECT c.job_id, min(c.created_at) AS first_at
      FROM job_checkpoints c WHERE c.created_at >= %(since)s
     GROUP BY c.job_id
)
SELECT date_trunc('minute', f.first_at) AS minute,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM f.first_at - j.created_at)) AS p50_s,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM f.first_at - j.created_at)) AS p95_s,
       count(*) AS jobs
  FROM firsts f JOIN jobs j ON j.job_id = f.job_id
 WHERE NOT EXISTS (SELECT 1 FROM job_checkpoints e WHERE e.job_id = f.job_id AND e.created_at < %(since)s)
 GROUP BY 1 ORDER BY 1
"""


# Backwards along the partial index of unreadable events (migration 0017).
_UNREADABLE = """
SELECT received_at AS at, update_id, nullif(user_id, 0) AS user_id, coalesce(payload->>'reason', '') AS reason
  FROM inbox WHERE kind = 'unreadable'
 ORDER BY id DESC
 LIMIT %(limit)s
"""


async def _read_only(conn: AsyncConnection) -> None:
    await conn.set_read_only(True)
    await conn.set_autocommit(False)


def control_pool(url: str, max_size: int = 4) -> AsyncConnectionPool:
    """A pool whose every transaction is READ ONLY; the panel gets no other connection."""
    return AsyncConnectionPool(
        url, min_size=1, max_size=max_size, open=False, name="videocopies-control",
        kwargs={"prepare_threshold": None}, configure=_read_only,
    )


class PostgresControlReadModel:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def _all(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        async with self._pool.connection() as conn:
            try:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(f"SET LOCAL statement_timeout = '{STATEMENT_TIMEOUT}'")
                await cur.execute(query, params or {})
                return await cur.fetchall()
            finally:
                await conn.rollback()  # nothing to keep: a read-only transaction ends either way

    async def nodes(self) -> Sequence[NodeView]:
        rows = await self._all(
            "SELECT name, role, created_at, revoked_at, last_seen_at FROM nodes "
            "ORDER BY revoked_at IS NOT NULL, role, name"
        )
        return [NodeView(**row) for row in rows]

    async def duties(self) -> Sequence[DutyView]:
        rows = await self._all("SELECT duty, holder, acquired_at, lease_until, term FROM duty_leases ORDER BY duty")
        return [DutyView(**row) for row in rows]

    async def queue_depth(self) -> QueueDepth:
        figures = await read_figures(self._pool)
        return QueueDepth(**{field.name: getattr(figures, field.name) for field in attrs.fields(QueueDepth)})

    async def leases(self, limit: int) -> Sequence[LeaseView]:
        return [LeaseView(**row) for row in await self._all(_LEASES, {"limit": limit})]

    async def orders_in_progress(self, limit: int) -> Sequence[OrderView]:
        return [OrderView(**row) for row in await self._all(_IN_PROGRESS, {"limit": limit})]

    async def recent_orders(self, limit: int) -> Sequence[OrderView]:
        return [OrderView(**row) for row in await self._all(_RECENT_ORDERS, {"limit": limit})]

    async def user_orders(self, user_id: int, limit: int) -> Sequence[OrderView]:
        rows = await self._all(_USER_ORDERS, {"user_id": user_id, "limit": limit})
        return [OrderView(**row) for row in rows]

    async def ledger(self, user_id: int) -> Ledger | None:
        if not await self._all("SELECT 1 FROM coin_accounts WHERE user_id = %(user_id)s", {"user_id": user_id}):
            return None
        lots = [LotView(**row) for row in await self._all(_LOTS, {"user_id": user_id})]
        reservations = [
            ReservationView(
                row["order_id"], row["amount"], row["debited"], row["released"], row["open"],
                tuple(HoldView(lot_id, held) for lot_id, held in row["holds"]),
            )
            for row in await self._all(_RESERVATIONS, {"user_id": user_id})
        ]
        return Ledger(user_id, tuple(lots), tuple(reservations))

    async def payments(self, limit: int, user_id: int | None = None) -> Sequence[PaymentView]:
        if user_id is None:
            query = f"SELECT {_PAYMENT_COLUMNS} FROM payments ORDER BY received_at DESC LIMIT %(limit)s"
        else:
            query = (f"SELECT {_PAYMENT_COLUMNS} FROM payments WHERE user_id = %(user_id)s "
                     "ORDER BY received_at DESC LIMIT %(limit)s")
        return [PaymentView(**row) for row in await self._all(query, {"limit": limit, "user_id": user_id})]

    async def unconfirmed_payments(self, limit: int) -> Sequence[UnconfirmedPaymentView]:
        return [UnconfirmedPaymentView(**row) for row in await self._all(_UNCONFIRMED, {"limit": limit})]

    async def reversed_payments(self, limit: int) -> Sequence[ReversedPaymentView]:
        return [ReversedPaymentView(**row) for row in await self._all(_REVERSED, {"limit": limit})]

    async def reconciliations(self, limit: int) -> Sequence[ReconciliationView] | None:
        # Reconciliation results are not recorded in the database yet; when they are, the
        # query reading them belongs here and the payments page shows them as they come.
        return None

    async def copies_per_minute(self, since: datetime) -> Sequence[MinuteCount]:
        return [MinuteCount(**row) for row in await self._all(_COPIES_PER_MINUTE, {"since": since})]

    async def latency_per_minute(self, since: datetime) -> Sequence[MinuteLatency]:
        rows = await self._all(_LATENCY_PER_MINUTE, {"since": since})
        return [MinuteLatency(row["minute"], float(row["p50_s"]), float(row["p95_s"]), row["jobs"]) for row in rows]

    async def unreadable(self, limit: int) -> Sequence[UnreadableView]:
        return [UnreadableView(**row) for row in await self._all(_UNREADABLE, {"limit": limit})]
