"""Payment claims, the provider's charges read so far, and reversals, in PostgreSQL. Their
writes travel with the unit of work's commit (videocopies_apply, migration 0018); a claim's and
a reversal's parameters are their fields, by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import attrs

from videocopies.adapters.postgres.mappers import as_time
from videocopies.application.ports import Clock
from videocopies.domain.coins import Referral, ReferralOutcome
from videocopies.domain.payments import PaymentClaim, ProviderTransaction, Reversal
from videocopies.domain.shared import UserId

PROVIDER = "stars"  # one provider, one cursor into its list

Writes = list[tuple[str, Any]]


class _Uow(Protocol):
    pending: Writes
    late: Writes
    clock: Clock

    async def fetchone(self, query: str, params: dict[str, Any]) -> dict[str, Any] | None: ...
    async def fetchall(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...


def claim_from_row(row: dict[str, Any]) -> PaymentClaim:
    return PaymentClaim(
        row["external_id"], UserId(row["user_id"]), row["paid_amount"], row["currency"], row["invoice_payload"],
        row["node"], row["claimed_at"],
    )


def referral_from_row(row: dict[str, Any]) -> Referral:
    outcome = ReferralOutcome(row["outcome"]) if row.get("outcome") else None
    at = as_time(row["at"])
    assert at is not None
    return Referral(UserId(row["invitee"]), UserId(row["inviter"]), at, outcome, as_time(row.get("settled_at")))


class PostgresClaims:
    def __init__(self, uow: _Uow) -> None:
        self._uow = uow

    async def add(self, claim: PaymentClaim) -> None:
        self._uow.pending.append(("insert_claim", attrs.asdict(claim, recurse=False)))

    async def confirmable(self) -> Sequence[tuple[PaymentClaim, ProviderTransaction]]:
        rows = await self._uow.fetchall("confirmable_claims", {})
        return [
            (claim_from_row(r), ProviderTransaction(
                r["external_id"], UserId(r["charge_user_id"]), r["charge_amount"], r["charge_currency"],
                r["charge_payload"],
            ))
            for r in rows
        ]

    async def unconfirmed(self) -> Sequence[PaymentClaim]:
        return [claim_from_row(r) for r in await self._uow.fetchall("unconfirmed_claims", {})]

    async def cursor(self) -> int:
        row = await self._uow.fetchone("provider_position", {"provider": PROVIDER})
        return int(row["position"]) if row else 0

    async def record(self, charges: Sequence[ProviderTransaction], cursor: int) -> None:
        now = self._uow.clock.now()
        rows = [
            {"external_id": tx.external_id, "user_id": tx.user_id, "paid_amount": tx.paid_amount,
             "currency": tx.currency, "invoice_payload": tx.payload, "read_at": now}
            for tx in charges if not tx.refund
        ]
        if rows:
            self._uow.pending.append(("record_charges", rows))
        self._uow.pending.append(("move_provider_cursor", {"provider": PROVIDER, "position": cursor, "read_at": now}))


class PostgresReversals:
    def __init__(self, uow: _Uow) -> None:
        self._uow = uow

    async def add(self, reversal: Reversal) -> None:
        self._uow.late.append(("insert_reversal", attrs.asdict(reversal, recurse=False)))

    async def list(self) -> Sequence[Reversal]:
        return [
            Reversal(r["external_id"], UserId(r["user_id"]), r["taken"], r["owed"], r["reason"], r["reversed_at"])
            for r in await self._uow.fetchall("list_reversals", {})
        ]
