"""The PostgreSQL unit of work: one transaction on a pooled connection, repositories with
row locks on load and optimistic version checks on write."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres import mappers
from videocopies.adapters.postgres.payment_claims import PostgresClaims, PostgresReversals, referral_from_row
from videocopies.adapters.postgres.queries import around, sql
from videocopies.application.errors import Conflict, ServiceBusy
from videocopies.application.objects import SOURCE_GONE
from videocopies.application.ports import GrantRecord, OutboxMessage, RefusedWrite
from videocopies.domain.coins import CoinAccount, InviterRewards, LotKind, Referral
from videocopies.domain.jobs import Job, LeaseLossReason, LeaseLost
from videocopies.domain.orders import Order
from videocopies.domain.payments import Payment, Refund
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import JobId, LotId, OrderId, UserId

Writes = list[tuple[str, dict[str, Any]]]
_IDLE = psycopg.pq.TransactionStatus.IDLE


def _account_snapshot(account: CoinAccount) -> dict[str, Any]:
    return {
        "lots": {
            lot.lot_id: (lot.available, lot.debited, lot.expired, lot.refunded, lot.expires_at) for lot in account.lots
        },
        "reservations": {
            r.order_id: (r.debited, r.released, r.open, tuple(h.held for h in r.holds), frozenset(r.debit_keys))
            for r in account.reservations.values()
        },
    }


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Jsonb):
        return value.obj
    raise TypeError(f"cannot send {type(value).__name__} to videocopies_apply")


_encode = json.JSONEncoder(default=_json_default, separators=(",", ":")).encode


def _literal(conn: psycopg.AsyncConnection[Any], value: object) -> bytes:
    """`value` as JSON in an SQL string literal, quoted by libpq for this connection."""
    return psycopg.pq.Escaping(conn.pgconn).escape_literal(_encode(value).encode())


def _apply_statement(conn: psycopg.AsyncConnection[Any], writes: Writes) -> bytes:
    """The whole write set as one call of videocopies_apply (migration 0009) with its COMMIT:
    one simple query, so it goes through PgBouncer, and the server runs statements whose plans
    it keeps per session instead of parsing and planning each write. A fenced job write that
    matches no row, or a capacity slot that cannot be taken, aborts it from inside."""
    head, tail = around("apply_writes", "writes")
    return head + _literal(conn, _coalesced(writes)) + tail


_IN_BULK = {"insert_account": "insert_accounts", "insert_lot": "insert_lots"}  # migration 0016


def _coalesced(writes: Writes) -> list[tuple[str, Any]]:
    """Consecutive inserts of accounts, or of lots, as one write of many rows: the server
    inserts them in one statement instead of one statement per row. Order is kept."""
    out: list[tuple[str, Any]] = []
    for name, params in writes:
        bulk = _IN_BULK.get(name)
        if bulk is None:
            out.append((name, params))
        elif out and out[-1][0] == bulk:
            out[-1][1].append(params)
        else:
            out.append((bulk, [params]))
    return out


def _load_statement(conn: psycopg.AsyncConnection[Any], reads: dict[str, Any]) -> bytes:
    """The opening read as one call of videocopies_load (migration 0022): a literal the server
    parses in a moment, while it keeps the plans of the locking reads inside per session."""
    head, tail = around("load_reads", "reads")
    return head + _literal(conn, reads) + tail


@functools.cache
def _begin_statement() -> bytes:
    return sql("begin").encode()


@functools.cache
def _opening() -> bytes:
    return _begin_statement() + b";"


@functools.cache
def _relaxed() -> bytes:
    return sql("commit_without_flush").encode() + b";"


# Refusals raised inside the database (migration 0023), each with the key it is about as DETAIL.
LEASE_LOST, CAPACITY_FULL, SOURCE_GONE_STATE = "VCL01", "VCC01", "VCS01"


def _translate(error: psycopg.Error) -> Exception:
    """Database refusals in the application's words, told apart by their SQLSTATE alone."""
    if error.sqlstate == LEASE_LOST:
        return LeaseLost(JobId(error.diag.message_detail or ""), LeaseLossReason.EXPIRED)
    if error.sqlstate == CAPACITY_FULL:
        return ServiceBusy(error.diag.message_detail or "")
    if error.sqlstate == SOURCE_GONE_STATE:
        return Conflict(SOURCE_GONE, error.diag.message_detail or "")
    if isinstance(error, psycopg.errors.UniqueViolation):
        return Conflict("row", error.diag.constraint_name or "unique")
    if isinstance(error, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return Conflict("transaction", error.sqlstate or "")
    return error


class PostgresAccounts:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow
        self.loaded: dict[UserId, tuple[CoinAccount, int, dict[str, Any]]] = {}
        self.added: dict[UserId, CoinAccount] = {}
        self.absent: set[UserId] = set()  # prefetched and not there: no second look

    async def get(self, user_id: UserId) -> CoinAccount | None:
        if user_id in self.added:
            return self.added[user_id]
        if user_id in self.loaded:
            return self.loaded[user_id][0]
        if user_id in self.absent:
            return None
        row = await self._uow.locked_fetchone("load_account", {"user_id": user_id})
        return None if row is None else self.remember(user_id, row)

    def remember(self, user_id: UserId, row: dict[str, Any]) -> CoinAccount:
        account = mappers.account_from_row(user_id, row)
        self.loaded[user_id] = (account, account.version, _account_snapshot(account))
        return account

    async def add(self, account: CoinAccount) -> None:
        self.added[account.account_id] = account

    async def with_lots_expiring(self, now: datetime, limit: int) -> Sequence[CoinAccount]:
        rows = await self._uow.fetchall("accounts_with_expiring_lots", {"now": now, "limit": limit})
        return [a for row in rows if (a := await self.get(UserId(row["user_id"]))) is not None]

    def writes(self, now: datetime) -> Writes:
        # Every new account before any of their children: a batch of newcomers becomes one
        # run of account inserts and one of lot inserts (see _coalesced).
        out: Writes = [
            ("insert_account", {"user_id": account.account_id, "version": account.version, "now": now})
            for account in self.added.values()
        ]
        for account in self.added.values():
            out += self._children(account, {"lots": {}, "reservations": {}})
        for account, loaded, snapshot in self.loaded.values():
            if account.version == loaded:
                continue
            out.append(
                (
                    "update_account_version",
                    {"user_id": account.account_id, "version": account.version, "loaded": loaded},
                )
            )
            out += self._children(account, snapshot)
        return out

    def _children(self, account: CoinAccount, before: dict[str, Any]) -> Writes:
        out: Writes = []
        user_id = account.account_id
        for lot in account.lots:
            was = before["lots"].get(lot.lot_id)
            if was is None:
                out.append(("insert_lot", mappers.lot_params(user_id, lot)))
            else:
                if was[:4] != (lot.available, lot.debited, lot.expired, lot.refunded):
                    out.append(("update_lot", mappers.lot_change_params(lot)))
                if was[4] != lot.expires_at:  # a reversed lot ends (migration 0018)
                    out.append(("end_lot", {"lot_id": lot.lot_id, "expires_at": lot.expires_at}))
        for r in account.reservations.values():
            was = before["reservations"].get(r.order_id)
            params = {
                "order_id": r.order_id,
                "user_id": user_id,
                "amount": r.amount,
                "debited": r.debited,
                "released": r.released,
                "open": r.open,
            }
            if was is None:
                out.append(("insert_reservation", params))
                old_holds: tuple[int, ...] = ()
                old_keys: frozenset[str] = frozenset()
            else:
                if was[:3] != (r.debited, r.released, r.open):
                    out.append(("update_reservation", params))
                old_holds, old_keys = was[3], was[4]
            for seq, hold in enumerate(r.holds):
                if seq >= len(old_holds) or old_holds[seq] != hold.held:
                    out.append(
                        ("upsert_hold", {"order_id": r.order_id, "seq": seq, "lot_id": hold.lot_id, "held": hold.held})
                    )
            for key in sorted(r.debit_keys - old_keys):
                out.append(("insert_debit", {"order_id": r.order_id, "key": key}))
        return out


class PostgresOrders:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow
        self.loaded: dict[OrderId, tuple[Order, int]] = {}
        self.added: dict[OrderId, Order] = {}

    async def get(self, order_id: OrderId) -> Order | None:
        if order_id in self.added:
            return self.added[order_id]
        if order_id in self.loaded:
            return self.loaded[order_id][0]
        row = await self._uow.fetchone("load_order", {"order_id": order_id})
        return None if row is None else self.remember(row)

    def known(self, order_id: OrderId) -> Order | None:
        if order_id in self.added:
            return self.added[order_id]
        return self.loaded[order_id][0] if order_id in self.loaded else None

    def remember(self, row: dict[str, Any]) -> Order:
        order = mappers.order_from_row(row)
        self.loaded[order.order_id] = (order, order.version)
        return order

    async def add(self, order: Order) -> None:
        self.added[order.order_id] = order

    def writes(self) -> Writes:
        out: Writes = [("insert_order", mappers.order_params(o)) for o in self.added.values()]
        for order, loaded in self.loaded.values():
            if order.version != loaded:
                out.append(("update_order", mappers.order_change_params(order, loaded)))
        return out


class PostgresJobs:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow
        self.loaded: dict[JobId, tuple[Job, int, frozenset[int]]] = {}
        self.added: dict[JobId, Job] = {}
        self.absent: set[JobId] = set()  # prefetched and not there: no second look

    def remember(self, row: dict[str, Any]) -> Job:
        job_id = JobId(row["job_id"])
        if job_id in self.loaded:
            return self.loaded[job_id][0]
        job = mappers.job_from_row(row)
        self.loaded[job_id] = (job, job.version, frozenset(job.checkpoints))
        return job

    def known(self, job_id: JobId) -> Job | None:
        if job_id in self.added:
            return self.added[job_id]
        return self.loaded[job_id][0] if job_id in self.loaded else None

    def knows(self, job_id: JobId) -> bool:
        return job_id in self.added or job_id in self.loaded or job_id in self.absent

    async def get(self, job_id: JobId) -> Job | None:
        return (await self.get_many([job_id])).get(job_id)

    async def get_many(self, job_ids: Sequence[JobId]) -> dict[JobId, Job]:
        """The jobs not loaded yet, locked in id order and read in one round trip."""
        wanted = [job_id for job_id in dict.fromkeys(job_ids) if not self.knows(job_id)]
        if wanted:
            await self._uow.read({"jobs": wanted})
            self.absent.update(job_id for job_id in wanted if not self.knows(job_id))
        return {job_id: job for job_id in job_ids if (job := self.known(job_id)) is not None}

    async def for_order(self, order_id: OrderId) -> Job | None:
        for job in self.added.values():
            if job.order_id == order_id:
                return job
        row = await self._uow.locked_fetchone("load_job_for_order", {"order_id": order_id})
        return None if row is None else self.remember(row)

    async def add(self, job: Job) -> None:
        self.added[job.job_id] = job

    async def claimable(self, now: datetime, limit: int, max_source_bytes: int | None = None) -> Sequence[Job]:
        """Locked, skipping rows others hold, and read with their orders in the same round trip:
        every claimer reads a claimed job's order next."""
        claim = {"now": now, "limit": limit, "max_bytes": max_source_bytes}
        found = await self._uow.read({"claim": claim, "their_orders": True})
        return [self.loaded[JobId(job_id)][0] for job_id in found["claimed"]]

    async def expired(self, now: datetime, limit: int) -> Sequence[Job]:
        """Lock first (skipping rows others hold), then read what was locked."""
        ids = [row["job_id"] for row in await self._uow.fetchall("expired_leases", {"now": now, "limit": limit})]
        await self.get_many(ids)
        return [self.loaded[JobId(job_id)][0] for job_id in ids]

    def writes(self, now: datetime) -> Writes:
        out: Writes = [("insert_job", mappers.job_params(j)) for j in self.added.values()]
        for job, loaded, checkpointed in self.loaded.values():
            if job.version == loaded:
                continue
            params = mappers.job_change_params(job, loaded)
            if job.written_under is not None:
                out.append(("update_job_fenced", {**params, "fence": job.written_under}))
            else:
                out.append(("update_job", params))
            for index in sorted(set(job.checkpoints) - checkpointed):
                out.append(
                    ("insert_checkpoint", mappers.checkpoint_params(job.job_id, index, job.checkpoints[index], now))
                )
        return out


class PostgresReceipts:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow
        self.known: dict[str, Receipt | None] = {}  # read in this unit of work; None: not stored

    async def get(self, receipt_id: str) -> Receipt | None:
        return (await self.get_many([receipt_id])).get(receipt_id)

    async def get_many(self, receipt_ids: Sequence[str]) -> dict[str, Receipt]:
        wanted = [r for r in dict.fromkeys(receipt_ids) if r not in self.known]
        if wanted:
            await self._uow.read({"receipts": wanted})
        return {r: receipt for r in receipt_ids if (receipt := self.known.get(r)) is not None}

    async def add(self, receipt: Receipt) -> None:
        self._uow.pending.append(
            (
                "insert_receipt",
                {
                    "receipt_id": receipt.receipt_id,
                    "fingerprint": receipt.fingerprint,
                    "result": Jsonb(dict(receipt.result)),
                },
            )
        )


class PostgresPayments:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow

    async def get(self, external_id: str) -> Payment | None:
        row = await self._uow.fetchone("get_payment", {"external_id": external_id})
        return None if row is None else mappers.payment_from_row(row)

    async def add(self, payment: Payment) -> None:
        self._uow.late.append(
            (
                "insert_payment",
                {
                    "external_id": payment.external_id,
                    "user_id": payment.user_id,
                    "coins": payment.coins,
                    "paid_amount": payment.paid_amount,
                    "currency": payment.currency,
                    "received_at": payment.received_at,
                },
            )
        )

    async def list(self) -> Sequence[Payment]:
        return [mappers.payment_from_row(r) for r in await self._uow.fetchall("list_payments", {})]


class PostgresRefunds:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow

    async def get(self, external_id: str) -> Refund | None:
        row = await self._uow.fetchone("get_refund", {"external_id": external_id})
        return None if row is None else mappers.refund_from_row(row)

    async def save(self, refund: Refund) -> None:
        self._uow.late.append(("upsert_refund", mappers.refund_params(refund)))

    async def list(self) -> Sequence[Refund]:
        return [mappers.refund_from_row(r) for r in await self._uow.fetchall("list_refunds", {})]


class PostgresReferrals:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow
        self.known: dict[UserId, Referral | None] = {}  # unsettled ones, locked; None: none

    async def inviter_of(self, user_id: UserId) -> UserId | None:
        row = await self._uow.fetchone("inviter_of", {"user_id": user_id})
        return None if row is None else UserId(row["inviter"])

    async def add(self, referral: Referral) -> None:
        params = {"invitee": referral.invitee, "inviter": referral.inviter, "at": referral.at}
        self._uow.late.append(("insert_referral", params))

    async def unsettled(self, invitee: UserId) -> Referral | None:
        if invitee not in self.known:
            await self._uow.read({"referrals": [invitee]})
        return self.known.get(invitee)

    async def rewarded(self, inviter: UserId, since: datetime) -> InviterRewards:
        row = await self._uow.fetchone("rewarded_referrals", {"inviter": inviter, "since": since})
        return InviterRewards(int(row["total"]), int(row["last_day"])) if row else InviterRewards(0, 0)

    async def settle(self, referral: Referral) -> None:
        outcome = referral.outcome.value if referral.outcome else None
        params = {"invitee": referral.invitee, "outcome": outcome, "settled_at": referral.settled_at}
        self._uow.late.append(("settle_referral", params))


class PostgresGrants:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow

    async def add(self, record: GrantRecord) -> None:
        params = {
            "lot_id": record.lot_id, "user_id": record.user_id, "kind": record.kind.value, "amount": record.amount,
            "granted_by": record.granted_by, "reason": record.reason, "granted_at": record.at,
        }
        self._uow.late.append(("insert_grant", params))

    async def get(self, lot_id: LotId) -> GrantRecord | None:
        row = await self._uow.fetchone("get_grant", {"lot_id": lot_id})
        if row is None:
            return None
        return GrantRecord(
            LotId(row["lot_id"]), UserId(row["user_id"]), LotKind(row["kind"]), row["amount"], row["granted_by"],
            row["reason"], row["granted_at"],
        )


class PostgresRefusals:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow

    async def add(self, refusal: RefusedWrite) -> None:
        self._uow.pending.append(
            (
                "insert_refused_write",
                {
                    "job_id": refusal.job_id,
                    "worker_id": refusal.worker_id,
                    "operation": refusal.operation,
                    "reason": refusal.reason,
                    "at": refusal.at,
                },
            )
        )

    async def count(self) -> int:
        row = await self._uow.fetchone("count_refused_writes", {})
        return int(row["count"]) if row else 0


class PostgresOutbox:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow

    async def add(self, message: OutboxMessage) -> None:
        self._uow.pending.append(
            (
                "insert_outbox",
                {
                    "user_id": message.user_id,
                    "kind": message.kind,
                    "payload": Jsonb(message.payload),
                    "dedup_key": message.dedup_key,
                },
            )
        )

    async def pending(self, limit: int) -> Sequence[tuple[int, OutboxMessage]]:
        rows = await self._uow.fetchall("pending_outbox", {"limit": limit})
        return [(r["id"], OutboxMessage(UserId(r["user_id"]), r["kind"], r["payload"], r["dedup_key"])) for r in rows]

    async def mark_sent(self, message_id: int) -> None:
        await self._uow.fetchone("mark_outbox_sent", {"id": message_id})


class PostgresCapacity:
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self._uow = uow

    async def take(self, order_id: OrderId) -> bool:
        """Taken at commit, in the same round trip; a full house refuses the commit."""
        self._uow.pending.append(("take_slot", {"order_id": order_id}))
        return True

    async def free(self, order_id: OrderId) -> None:
        self._uow.pending.append(("free_slot", {"order_id": order_id}))


class PostgresUnitOfWork:
    """Reads lock what they load (only the rows asked for); writes are sent together at commit,
    in one round trip, after the aggregates' own rules have run. The unit of work opens its
    transaction itself (its connection is in autocommit while it holds it), so the BEGIN
    travels with the first read instead of costing a round trip of its own."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self.pending: Writes = []  # plain inserts queued by record repositories
        self.late: Writes = []  # inserts that reference aggregates written at commit
        self.accounts = PostgresAccounts(self)
        self.orders = PostgresOrders(self)
        self.jobs = PostgresJobs(self)
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
        conn, self._conn = self._conn, None
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
            await self._send(self.conn.cursor(), _begin_statement())

    async def fetchone(self, query: str, params: dict[str, Any]) -> dict[str, Any] | None:
        try:
            await self._begin()
            async with self.conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(sql(query), params)
                return await cur.fetchone()
        except psycopg.Error as error:
            raise _translate(error) from error

    async def fetchall(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            await self._begin()
            async with self.conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(sql(query), params)
                return await cur.fetchall()
        except psycopg.Error as error:
            raise _translate(error) from error

    async def prefetch(
        self,
        orders: Sequence[OrderId] = (),
        accounts: Sequence[UserId] = (),
        *,
        jobs: Sequence[JobId] = (),
        receipts: Sequence[str] = (),
        referrals: Sequence[UserId] = (),
        their_orders: bool = False,
        their_accounts: bool = False,
    ) -> None:
        """Lock and load all of these in one round trip (videocopies_load): the first read of the
        unit of work also carries its BEGIN. Locks go jobs, orders, accounts, referrals, each
        kind in id order."""
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
            await self.read(reads | {"their_orders": their_orders, "their_accounts": their_accounts})

    async def read(self, reads: dict[str, Any]) -> dict[str, Any]:
        """One call of videocopies_load; what it finds is remembered by the repositories."""
        try:
            found = await self._load(_load_statement(self.conn, reads))
        except psycopg.Error as error:
            raise _translate(error) from error
        for row in found["receipts"]:
            self.receipts.known[row["receipt_id"]] = Receipt(row["receipt_id"], row["fingerprint"], row["result"])
        self.receipts.known.update((r, None) for r in reads.get("receipts", ()) if r not in self.receipts.known)
        for row in found["jobs"]:
            self.jobs.remember(row)
        self.jobs.absent.update(j for j in reads.get("jobs", ()) if not self.jobs.knows(j))
        for row in found["orders"]:
            if row["order_id"] not in self.orders.loaded and row["order_id"] not in self.orders.added:
                self.orders.remember(row)
        for row in found["accounts"]:
            user_id = UserId(row["user_id"])
            if user_id not in self.accounts.loaded and user_id not in self.accounts.added:
                self.accounts.remember(user_id, row)
        self.accounts.absent.update(
            UserId(a) for a in found["account_ids"] if a not in self.accounts.loaded and a not in self.accounts.added
        )
        for row in found["referrals"]:
            self.referrals.known[UserId(row["invitee"])] = referral_from_row(row)
        self.referrals.known.update((i, None) for i in reads.get("referrals", ()) if i not in self.referrals.known)
        return found

    async def _load(self, statement: bytes) -> Any:
        cursor = self.conn.cursor()
        opening = self.conn.info.transaction_status == _IDLE
        await self._send(cursor, _opening() + statement if opening else statement)
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
        aborts it from inside the database (see _apply_statement). Not `durable`: the COMMIT
        does not wait for its WAL flush (synchronous_commit off for this transaction alone)."""
        now = datetime.now(UTC)
        writes = [
            *self.accounts.writes(now), *self.orders.writes(), *self.jobs.writes(now), *self.late, *self.pending,
        ]
        try:
            if writes:
                opening = _opening() if self.conn.info.transaction_status == _IDLE else b""
                relaxed = b"" if durable else _relaxed()
                await self._send(self.conn.cursor(), opening + relaxed + _apply_statement(self.conn, writes))
            await self.conn.commit()
        except psycopg.Error as error:
            await self.conn.rollback()
            raise _translate(error) from error
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
