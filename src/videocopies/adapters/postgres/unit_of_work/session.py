"""The transaction: a pooled connection held for one unit of work, its opening read, its write
set sent with the COMMIT."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.payment_claims import PostgresClaims, PostgresReversals, referral_from_row
from videocopies.adapters.postgres.queries import sql
from videocopies.adapters.postgres.unit_of_work import write_set
from videocopies.adapters.postgres.unit_of_work.accounts import PostgresAccounts
from videocopies.adapters.postgres.unit_of_work.errors import translate
from videocopies.adapters.postgres.unit_of_work.jobs import PostgresJobs
from videocopies.adapters.postgres.unit_of_work.orders import PostgresOrders
from videocopies.adapters.postgres.unit_of_work.records import (
    PostgresCapacity,
    PostgresGrants,
    PostgresOutbox,
    PostgresPayments,
    PostgresReceipts,
    PostgresReferrals,
    PostgresRefunds,
    PostgresRefusals,
)
from videocopies.adapters.system import SystemClock
from videocopies.application.ports import Clock
from videocopies.application.use_cases.announcements import outbox_rows
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import DomainEvent, JobId, LotId, OrderId, UserId

_IDLE = psycopg.pq.TransactionStatus.IDLE
_FAILED = psycopg.pq.TransactionStatus.INERROR


class PostgresUnitOfWork:
    """Reads lock what they load (only the rows asked for); writes are sent together at commit,
    in one round trip, after the aggregates' own rules have run. The unit of work opens its
    transaction itself (its connection is in autocommit while it holds it), so the BEGIN
    travels with the first read instead of costing a round trip of its own.

    Entered again while open, it is joined: the inner block's `commit` sends its writes inside
    the open transaction (behind a savepoint, so a refused write undoes only them) and the
    outer block commits them all; leaving the inner block without commit forgets what it
    loaded and changed. `at_commit` statements (an inbox turn's) go with the outer COMMIT."""

    def __init__(self, pool: AsyncConnectionPool, clock: Clock | None = None, jobs_keep_seed: bool = False) -> None:
        self._pool = pool
        self.clock = clock or SystemClock()  # asked for what the writes stamp
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._depth = 0  # blocks joined to the open one
        self._joined_done: list[bool] = []  # per joined block: did it commit?
        self.at_commit: list[tuple[str, write_set.Params]] = []  # statements sent, bound here, before the writes
        self.pending: write_set.Writes = []  # plain inserts queued by record repositories
        self.late: write_set.Writes = []  # inserts that reference aggregates written at commit
        self.accounts = PostgresAccounts(self)
        self.orders = PostgresOrders(self)
        # A new job's plans stored as the seed they are drawn from: only once the schema admits
        # no code that cannot read that (migrate.SchemaStatus.jobs_keep_seed).
        self.jobs = PostgresJobs(self, jobs_keep_seed)
        self.receipts = PostgresReceipts(self)
        self.payments = PostgresPayments(self)
        self.refunds = PostgresRefunds(self)
        self.claims = PostgresClaims(self)
        self.reversals = PostgresReversals(self)
        self.referrals = PostgresReferrals(self)
        self.grants = PostgresGrants(self)
        self.refusals = PostgresRefusals(self)
        self.outbox = PostgresOutbox(self)
        self.capacity = PostgresCapacity(self)

    async def __aenter__(self) -> PostgresUnitOfWork:
        if self._conn is not None:
            self._depth += 1
            self._joined_done.append(False)
            return self
        conn = await self._pool.getconn()
        try:
            # The unit of work sends BEGIN itself, in the round trip of its first read.
            await conn.set_autocommit(True)
        except BaseException:
            await self._pool.putconn(conn)
            raise
        self._conn = conn
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._depth:
            self._depth -= 1
            if not self._joined_done.pop():
                await self.discard()
            return
        conn, self._conn = self._conn, None
        self.at_commit.clear()
        if conn is None:
            return
        try:
            if conn.info.transaction_status != _IDLE:
                await conn.rollback()
            await conn.set_autocommit(False)
        except BaseException:
            await conn.close()  # in an unknown state: the pool replaces it
            raise
        finally:
            await self._pool.putconn(conn)

    @property
    def conn(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None:
            raise RuntimeError("unit of work used outside its `async with` block")
        return self._conn

    async def _begin(self) -> None:
        if self.conn.info.transaction_status == _IDLE:
            await self._send(self.conn.cursor(), write_set.begin_statement())

    async def fetchone(self, query: str, params: write_set.Params) -> dict[str, Any] | None:
        try:
            await self._begin()
            async with self.conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(sql(query), params)
                return await cur.fetchone()
        except psycopg.Error as error:
            raise translate(error) from error

    async def fetchall(self, query: str, params: write_set.Params) -> list[dict[str, Any]]:
        try:
            await self._begin()
            async with self.conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(sql(query), params)
                return await cur.fetchall() if cur.description else []
        except psycopg.Error as error:
            raise translate(error) from error

    async def prefetch(
        self,
        orders: Sequence[OrderId] = (),
        accounts: Sequence[UserId] = (),
        *,
        jobs: Sequence[JobId] = (),
        receipts: Sequence[str] = (),
        referrals: Sequence[UserId] = (),
        lots: Sequence[LotId] = (),
        their_orders: bool = False,
        their_accounts: bool = False,
    ) -> None:
        """Lock and load all of these in one round trip (videocopies_load): the first read of the
        unit of work also carries its BEGIN. Locks go jobs, orders, accounts, referrals, each
        kind in id order. Accounts come with their working lots and `lots` (migration 0027)."""
        if their_orders:  # jobs loaded earlier bring their orders from here
            orders = [*orders, *(job.order_id for j in jobs if (job := self.jobs.known(j)) is not None)]
        if their_accounts:
            accounts = [*accounts, *(o.user_id for i in orders if (o := self.orders.known(i)) is not None)]
        reads: dict[str, Any] = {
            "receipts": [r for r in dict.fromkeys(receipts) if r not in self.receipts.known],
            "jobs": [j for j in jobs if not self.jobs.knows(j)],
            "orders": [o for o in orders if o not in self.orders.loaded and o not in self.orders.added],
            "accounts": [a for a in accounts if a not in self.accounts.loaded and a not in self.accounts.added],
            "referrals": [i for i in referrals if i not in self.referrals.known],
        }
        reads = {key: ids for key, ids in reads.items() if ids}
        if reads:
            flags = {"their_orders": their_orders, "their_accounts": their_accounts}
            await self.read(reads | flags | {"lots": list(dict.fromkeys(lots))})

    async def read(self, reads: dict[str, Any]) -> dict[str, Any]:
        """One call of videocopies_load; what it finds is remembered by the repositories. Accounts
        come with their working lots and those named in `lots`, never every lot (the key asks)."""
        reads = {"lots": []} | reads
        if "receipts" in reads:  # a receipt read once in this transaction is not read again
            reads["receipts"] = [r for r in dict.fromkeys(reads["receipts"]) if r not in self.receipts.known]
            if not reads["receipts"]:
                del reads["receipts"]
        try:
            found = await self._load(write_set.load_statement(self.conn, reads))
        except psycopg.Error as error:
            raise translate(error) from error
        for row in found["receipts"]:
            self.receipts.known[row["receipt_id"]] = Receipt(row["receipt_id"], row["fingerprint"], row["result"])
        self.receipts.known.update((r, None) for r in reads.get("receipts", ()) if r not in self.receipts.known)
        for row in found["jobs"]:
            self.jobs.remember(row)
        self.jobs.absent.update(j for j in reads.get("jobs", ()) if not self.jobs.knows(j))
        for row in found["orders"]:
            if row["order_id"] not in self.orders.loaded and row["order_id"] not in self.orders.added:
                self.orders.remember(row)
        self.accounts.remember_found(found["accounts"], found["account_ids"], reads["lots"])
        for row in found["referrals"]:
            self.referrals.known[UserId(row["invitee"])] = referral_from_row(row)
        self.referrals.known.update((i, None) for i in reads.get("referrals", ()) if i not in self.referrals.known)
        return found

    async def _load(self, statement: bytes) -> Any:
        cursor = self.conn.cursor()
        opening = self.conn.info.transaction_status == _IDLE
        await self._send(cursor, write_set.opening() + statement if opening else statement)
        if opening:
            cursor.nextset()
        row = await cursor.fetchone()
        return row[0] if row else None

    async def locked_fetchone(self, query: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Lock a row and read it with what hangs off it. A statement that waited for the lock
        read the rest from its old snapshot; its `seen_version` then lags, and the load runs
        again as a new statement with the lock already held."""
        row = await self.fetchone(query, params)
        if row is not None and row["seen_version"] != row["version"]:
            row = await self.fetchone(query, params)
        return row

    async def commit(self, durable: bool = True) -> None:
        """Every write and the COMMIT go in one round trip; a fenced write that matches no row
        aborts it from inside the database (see write_set.apply_statement). Not `durable`: the COMMIT
        does not wait for its WAL flush (synchronous_commit off for this transaction alone).
        In a joined block: the writes are sent without the COMMIT (see the class)."""
        if self._depth:
            await self._flush()
            self._joined_done[-1] = True
            return
        writes = await self._writes()
        try:
            if writes or self.at_commit:
                opening = write_set.opening() if self.conn.info.transaction_status == _IDLE else b""
                relaxed = b"" if durable else write_set.relaxed()
                first = opening + relaxed + write_set.bound(self.conn, self.at_commit)
                await self._send(self.conn.cursor(), first + write_set.apply_statement(self.conn, writes))
            await self.conn.commit()
        except psycopg.Error as error:
            await self.conn.rollback()
            raise translate(error) from error
        finally:
            self.at_commit.clear()
        self._forget()

    async def record(self, event: DomainEvent) -> None:
        # Its row joins the outbox writes now, so a use case's messages keep the order it
        # announced them in, whether recorded or added; it is written with the commit.
        for message in outbox_rows([event]):
            await self.outbox.add(message)

    async def _writes(self) -> write_set.Writes:
        now = self.clock.now()
        # Aggregates first, then the records that reference them, then the plain inserts.
        return [
            *self.accounts.writes(now), *self.orders.writes(), *self.jobs.writes(now), *self.late, *self.pending,
        ]

    async def _flush(self) -> None:
        writes = await self._writes()
        try:
            if writes:
                await self._begin()
                await self._send(self.conn.cursor(), write_set.apply_joined_statement(self.conn, writes))
        except psycopg.Error as error:
            if self.conn.info.transaction_status == _FAILED:  # refused: back to before these writes
                await self._send(self.conn.cursor(), sql("rollback_joined").encode())
            self._forget()
            raise translate(error) from error
        self._forget()

    async def discard(self) -> None:
        """Forget what a joined block loaded or changed without committing it."""
        self._forget()

    async def savepoint(self, before: Sequence[tuple[str, write_set.Params]] = ()) -> None:
        """A point `undo` returns the transaction to (an inbox turn marks one per event), sent
        with the statements `before` it in one round trip."""
        await self._begin()
        await self._send(self.conn.cursor(), write_set.bound(self.conn, before) + sql("savepoint_event").encode())

    async def undo(self) -> None:
        """Back to the last `savepoint`: its writes undone, what was loaded since forgotten."""
        await self._send(self.conn.cursor(), sql("rollback_event").encode())
        self._forget()

    async def _send(self, cursor: psycopg.AsyncCursor[Any], batch: bytes) -> None:
        """A simple query (never prepared: it may hold several statements)."""
        await cursor.execute(batch, prepare=False)

    async def rollback(self) -> None:
        await self.conn.rollback()
        self._forget()

    def _forget(self) -> None:
        for repo in (self.accounts, self.orders, self.jobs):
            repo.loaded.clear()
            repo.added.clear()
        self.accounts.absent.clear()
        self.jobs.absent.clear()
        self.receipts.known.clear()
        self.referrals.known.clear()
        self.pending.clear()
        self.late.clear()
