"""Row mappers: rows to domain aggregates and back; the domain never sees a row."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from psycopg.types.json import Jsonb

from videocopies.adapters.postgres.job_plans import plans_from_json, plans_json
from videocopies.domain.coins import CoinAccount, CoinLot, Hold, LotKind, Reservation, SpentLots
from videocopies.domain.jobs import CopyArtifact, Job, JobState, Lease
from videocopies.domain.orders import CopyState, Order, OrderCopy, OrderState
from videocopies.domain.payments import Payment, Refund, RefundState
from videocopies.domain.pricing import Quote
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import JobId, LotId, OrderId, OwnerToken, UserId, WorkerId

E = TypeVar("E", bound=enum.Enum)


def _members(kind: type[E]) -> Callable[[Any], E]:
    """`kind(value)` for a stored value: a dict lookup, where calling an Enum costs about a
    microsecond; an unknown value still raises the Enum's own ValueError."""
    by_value = {member.value: member for member in kind}

    def member(value: Any) -> E:
        found = by_value.get(value)
        return kind(value) if found is None else found

    return member


_lot_kind, _order_state, _copy_state, _job_state = map(_members, (LotKind, OrderState, CopyState, JobState))


def as_time(value: str | datetime | None) -> datetime | None:
    """A time as psycopg reads it, or as JSON (videocopies_load) gives it: text."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def lots_from_rows(rows: Iterable[dict[str, Any]]) -> list[CoinLot]:
    return [
        CoinLot(
            LotId(lot["lot_id"]),
            _lot_kind(lot["kind"]),
            lot["amount"],
            as_time(lot["granted_at"]),  # type: ignore[arg-type]
            as_time(lot["expires_at"]),
            lot["available"],
            lot["debited"],
            lot["expired"],
            lot.get("refunded", 0),
        )
        for lot in rows
    ]


def account_from_row(user_id: UserId, row: dict[str, Any]) -> CoinAccount:
    lots = lots_from_rows(row["lots"])
    reservations = {
        OrderId(r["order_id"]): Reservation(
            OrderId(r["order_id"]),
            r["amount"],
            [Hold(LotId(lot), held) for lot, held in r["holds"]],
            r["debited"],
            r["released"],
            set(r["keys"]),
            True,
        )
        for r in row["reservations"]
    }
    spent = SpentLots(*row["all_lots"]) if "all_lots" in row else SpentLots()
    for lot in lots:  # what every lot adds up to, less the lots loaded: the spent ones
        spent = spent.without(lot)
    return CoinAccount(user_id, lots, reservations, version=row["version"], spent=spent)


def lot_params(user_id: UserId, lot: CoinLot) -> dict[str, Any]:
    return {
        "lot_id": lot.lot_id,
        "user_id": user_id,
        "kind": lot.kind.value,
        "amount": lot.amount,
        "granted_at": lot.granted_at,
        "expires_at": lot.expires_at,
        "available": lot.available,
        "debited": lot.debited,
        "expired": lot.expired,
        "refunded": lot.refunded,
    }


def lot_change_params(lot: CoinLot) -> dict[str, Any]:
    """What update_lot writes: only the counts move once a lot exists."""
    return {"lot_id": lot.lot_id, "available": lot.available, "debited": lot.debited, "expired": lot.expired,
            "refunded": lot.refunded}


def order_from_row(row: dict[str, Any]) -> Order:
    """From a row as psycopg reads it, or as JSON (videocopies_load), where times are text."""
    quote = Quote(
        OrderId(row["order_id"]),
        UserId(row["user_id"]),
        row["source_key"],
        row["copies"],
        row["price_per_copy"],
        row["total"],
        row["tariff_version"],
        as_time(row["quote_expires_at"]),  # type: ignore[arg-type]
        row["quote_token"],
        row["source_bytes"],
    )
    copies = [OrderCopy(i, _copy_state(state), key) for i, (state, key) in enumerate(row["copy_states"])]
    return Order(
        quote.quote_id,
        quote,
        row["seed"],
        as_time(row["created_at"]),
        _order_state(row["state"]),
        copies,
        row["failure_reason"],
        version=row["version"],
    )


def order_params(order: Order) -> dict[str, Any]:
    q = order.quote
    return {
        **_order_changes(order),
        "user_id": q.user_id,
        "source_key": q.source_key,
        "copies": q.copies,
        "price_per_copy": q.price_per_copy,
        "total": q.total,
        "tariff_version": q.tariff_version,
        "quote_expires_at": q.expires_at,
        "quote_token": q.token,
        "seed": order.seed,
        "created_at": order.created_at,
        "source_bytes": q.source_bytes,
    }


def _order_changes(order: Order) -> dict[str, Any]:
    """What update_order writes: the quote never changes once stored. Built on its own, not cut
    from the whole row: every claim and completion writes its orders."""
    return {
        "order_id": order.order_id,
        "state": order.state.value,
        "copy_states": Jsonb([[c.state.value, c.object_key] for c in order.copies]),
        "failure_reason": order.failure_reason,
        "version": order.version,
    }


def order_change_params(order: Order, loaded: int) -> dict[str, Any]:
    """The order's changing columns, checked against the version `loaded`."""
    return {**_order_changes(order), "loaded": loaded}


def job_from_row(row: dict[str, Any]) -> Job:
    lease = None
    if row["owner_token"] is not None:
        lease = Lease(
            WorkerId(row["worker_id"]),
            OwnerToken(row["owner_token"]),
            as_time(row["acquired_at"]),  # type: ignore[arg-type]
            as_time(row["lease_until"]),  # type: ignore[arg-type]
            row["attempts"],
        )
    checkpoints = {
        c["idx"]: CopyArtifact(
            c["object_key"], c["size"], c["sha256"], c["duration_s"], c["width"], c["height"],
            CopyQuality.from_dict(c["quality"]) if c.get("quality") else None, c.get("failure"),
        )
        for c in row["checkpoints"]
    }
    return Job(
        JobId(row["job_id"]),
        OrderId(row["order_id"]),
        plans_from_json(row["plans"]),
        as_time(row["created_at"]),  # type: ignore[arg-type]
        max_attempts=row["max_attempts"],
        state=_job_state(row["state"]),
        lease=lease,
        attempts=row["attempts"],
        cancel_requested=row["cancel_requested"],
        checkpoints=checkpoints,
        last_error=row["last_error"],
        version=row["version"],
        closed_by=row["closed_by"],
        source_bytes=row["source_bytes"],
    )


def job_params(job: Job, keep_seed: bool = False) -> dict[str, Any]:
    return {
        **_job_changes(job),
        "order_id": job.order_id,
        "plans": Jsonb(plans_json(job.plans, keep_seed)),
        "max_attempts": job.max_attempts,
        "created_at": job.created_at,
        "source_bytes": job.source_bytes,
    }


def _job_changes(job: Job) -> dict[str, Any]:
    """What update_job writes: plans, order, attempts allowed and size never change once stored.
    Built on its own, not cut from the whole row, which turns every plan into JSON: a job is
    written at each claim, renewal, checkpoint and completion."""
    lease = job.lease
    return {
        "job_id": job.job_id,
        "state": job.state.value,
        "attempts": job.attempts,
        "cancel_requested": job.cancel_requested,
        "worker_id": lease.worker_id if lease else None,
        "owner_token": lease.token if lease else None,
        "acquired_at": lease.acquired_at if lease else None,
        "lease_until": lease.lease_until if lease else None,
        "last_error": job.last_error,
        "version": job.version,
        "closed_by": job.closed_by,
    }


def job_change_params(job: Job, loaded: int) -> dict[str, Any]:
    """The job's changing columns, checked against the version `loaded`."""
    return {**_job_changes(job), "loaded": loaded}


def checkpoint_params(job_id: JobId, index: int, artifact: CopyArtifact, now: datetime) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "idx": index,
        "object_key": artifact.object_key,
        "size": artifact.size,
        "sha256": artifact.sha256,
        "duration_s": artifact.duration_s,
        "width": artifact.width,
        "height": artifact.height,
        "created_at": now,
        "quality": Jsonb(artifact.quality.to_dict()) if artifact.quality else None,
        "failure": artifact.failure,
    }


def payment_from_row(row: dict[str, Any]) -> Payment:
    return Payment(
        row["external_id"],
        UserId(row["user_id"]),
        row["coins"],
        row["paid_amount"],
        row["currency"],
        row["received_at"],
    )


def refund_from_row(row: dict[str, Any]) -> Refund:
    return Refund(
        row["external_id"],
        UserId(row["user_id"]),
        row["coins"],
        row["requested_by"],
        row["reason"],
        row["requested_at"],
        RefundState(row["state"]),
        row["finished_at"],
        row["provider_answer"],
    )


def refund_params(refund: Refund) -> dict[str, Any]:
    return {
        "external_id": refund.external_id,
        "user_id": refund.user_id,
        "coins": refund.coins,
        "requested_by": refund.requested_by,
        "reason": refund.reason,
        "requested_at": refund.requested_at,
        "state": refund.state.value,
        "finished_at": refund.finished_at,
        "provider_answer": refund.provider_answer,
    }
