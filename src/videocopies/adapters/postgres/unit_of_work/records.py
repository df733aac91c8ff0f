"""The record repositories: rows written once (receipts, payments, grants, refusals, outbox
messages, referrals) or kept beside an aggregate (refunds, capacity slots). Their inserts join
the write set: `pending` ones in any order, `late` ones after the aggregates they reference."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from psycopg.types.json import Jsonb

from videocopies.adapters.postgres import mappers
from videocopies.adapters.postgres.unit_of_work.write_set import Transaction
from videocopies.application.ports import GrantRecord, OutboxMessage, RefusedWrite
from videocopies.domain.coins import InviterRewards, LotKind, Referral
from videocopies.domain.payments import Payment, Refund
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import LotId, OrderId, UserId


class PostgresReceipts:
    def __init__(self, uow: Transaction) -> None:
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
    def __init__(self, uow: Transaction) -> None:
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
    def __init__(self, uow: Transaction) -> None:
        self._uow = uow

    async def get(self, external_id: str) -> Refund | None:
        row = await self._uow.fetchone("get_refund", {"external_id": external_id})
        return None if row is None else mappers.refund_from_row(row)

    async def save(self, refund: Refund) -> None:
        self._uow.late.append(("upsert_refund", mappers.refund_params(refund)))

    async def list(self) -> Sequence[Refund]:
        return [mappers.refund_from_row(r) for r in await self._uow.fetchall("list_refunds", {})]


class PostgresReferrals:
    def __init__(self, uow: Transaction) -> None:
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
    def __init__(self, uow: Transaction) -> None:
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
    def __init__(self, uow: Transaction) -> None:
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
    def __init__(self, uow: Transaction) -> None:
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
    def __init__(self, uow: Transaction) -> None:
        self._uow = uow

    async def take(self, order_id: OrderId) -> bool:
        """Taken at commit, in the same round trip; a full house refuses the commit."""
        self._uow.pending.append(("take_slot", {"order_id": order_id}))
        return True

    async def free(self, order_id: OrderId) -> None:
        self._uow.pending.append(("free_slot", {"order_id": order_id}))
