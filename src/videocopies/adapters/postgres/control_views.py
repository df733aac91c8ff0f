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
from videocopies.adapters.postgres.queries import sql
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
                await cur.execute(sql("control_statement_timeout"))
                await cur.execute(query, params or {})
                return await cur.fetchall()
            finally:
                await conn.rollback()  # nothing to keep: a read-only transaction ends either way

    async def nodes(self) -> Sequence[NodeView]:
        rows = await self._all(sql("control_nodes"))
        return [NodeView(**row) for row in rows]

    async def duties(self) -> Sequence[DutyView]:
        rows = await self._all(sql("control_duties"))
        return [DutyView(**row) for row in rows]

    async def queue_depth(self) -> QueueDepth:
        figures = await read_figures(self._pool)
        return QueueDepth(**{field.name: getattr(figures, field.name) for field in attrs.fields(QueueDepth)})

    async def leases(self, limit: int) -> Sequence[LeaseView]:
        return [LeaseView(**row) for row in await self._all(sql("control_leases"), {"limit": limit})]

    async def orders_in_progress(self, limit: int) -> Sequence[OrderView]:
        return [OrderView(**row) for row in await self._all(sql("control_orders_in_progress"), {"limit": limit})]

    async def recent_orders(self, limit: int) -> Sequence[OrderView]:
        return [OrderView(**row) for row in await self._all(sql("control_recent_orders"), {"limit": limit})]

    async def user_orders(self, user_id: int, limit: int) -> Sequence[OrderView]:
        rows = await self._all(sql("control_user_orders"), {"user_id": user_id, "limit": limit})
        return [OrderView(**row) for row in rows]

    async def ledger(self, user_id: int) -> Ledger | None:
        if not await self._all(sql("control_account_exists"), {"user_id": user_id}):
            return None
        lots = [LotView(**row) for row in await self._all(sql("control_lots"), {"user_id": user_id})]
        reservations = [
            ReservationView(
                row["order_id"], row["amount"], row["debited"], row["released"], row["open"],
                tuple(HoldView(lot_id, held) for lot_id, held in row["holds"]),
            )
            for row in await self._all(sql("control_reservations"), {"user_id": user_id})
        ]
        return Ledger(user_id, tuple(lots), tuple(reservations))

    async def payments(self, limit: int, user_id: int | None = None) -> Sequence[PaymentView]:
        query = sql("control_payments" if user_id is None else "control_user_payments")
        return [PaymentView(**row) for row in await self._all(query, {"limit": limit, "user_id": user_id})]

    async def unconfirmed_payments(self, limit: int) -> Sequence[UnconfirmedPaymentView]:
        rows = await self._all(sql("control_unconfirmed_payments"), {"limit": limit})
        return [UnconfirmedPaymentView(**row) for row in rows]

    async def reversed_payments(self, limit: int) -> Sequence[ReversedPaymentView]:
        rows = await self._all(sql("control_reversed_payments"), {"limit": limit})
        return [ReversedPaymentView(**row) for row in rows]

    async def reconciliations(self, limit: int) -> Sequence[ReconciliationView] | None:
        # Reconciliation results are not recorded in the database yet; when they are, the
        # query reading them belongs here and the payments page shows them as they come.
        return None

    async def copies_per_minute(self, since: datetime) -> Sequence[MinuteCount]:
        return [MinuteCount(**row) for row in await self._all(sql("control_copies_per_minute"), {"since": since})]

    async def latency_per_minute(self, since: datetime) -> Sequence[MinuteLatency]:
        rows = await self._all(sql("control_latency_per_minute"), {"since": since})
        return [MinuteLatency(row["minute"], float(row["p50_s"]), float(row["p95_s"]), row["jobs"]) for row in rows]

    async def unreadable(self, limit: int) -> Sequence[UnreadableView]:
        return [UnreadableView(**row) for row in await self._all(sql("control_unreadable"), {"limit": limit})]
