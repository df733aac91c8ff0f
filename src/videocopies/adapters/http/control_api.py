"""Core's API for control nodes: an operator's manual grants, refunds and reconciliation.

Only a node with the `admin` scope reaches these; every grant is recorded with that node's
name and the reason given, and the user is told.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import attrs
from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from videocopies.adapters.http.shared import IDENTIFIER, NO_NUL, Body, NodeWith
from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound, ProviderNotConfigured, ProviderUnavailable
from videocopies.application.ports import Node
from videocopies.domain.coins import GrantRules, LotKind
from videocopies.domain.payments import PaymentClaim, Reversal
from videocopies.domain.shared import LotId, UserId

CHARGE_ID = Annotated[str, Path(min_length=1, max_length=256, pattern=IDENTIFIER)]


@attrs.frozen
class ControlApiServices:
    grant_coins: Callable[[uc.GrantCoinsCommand], Awaitable[LotId]]
    refund_payment: Callable[[uc.RefundPaymentCommand], Awaitable[Any]]
    reconcile_payments: Callable[[], Awaitable[uc.ReconciliationResult]]
    rules: GrantRules
    queued: Callable[[], None] = lambda: None  # a message for the user was written
    # Claims the provider has not confirmed, and reversals (None: this core lists none).
    payment_doubts: Callable[[], Awaitable[tuple[list[PaymentClaim], list[Reversal]]]] | None = None


class GrantIn(Body):
    user_id: int = Field(ge=1, le=2**53)
    amount: int = Field(ge=1, le=1_000_000)
    reason: str = Field(min_length=1, max_length=500, pattern=NO_NUL)
    grant_id: str = Field(
        min_length=1, max_length=64, pattern=IDENTIFIER,
        description="Chosen by the operator: the same id again grants nothing more.",
    )


class GrantOut(BaseModel):
    lot_id: str
    user_id: int
    amount: int
    granted_by: str


class RefundIn(Body):
    reason: str = Field(min_length=1, max_length=500, pattern=NO_NUL)


class RefundOut(BaseModel):
    external_id: str
    state: str
    coins: int


class UnconfirmedOut(BaseModel):
    external_id: str
    user_id: int
    paid_amount: int
    currency: str
    node: str | None
    claimed_at: str


class ReversedOut(BaseModel):
    external_id: str
    user_id: int
    taken: int
    owed: int
    reversed_at: str


class DoubtsOut(BaseModel):
    unconfirmed: list[UnconfirmedOut]
    reversed: list[ReversedOut]


class ReconcileOut(BaseModel):
    credited: list[str]
    uncreditable: list[str]
    unknown: list[str]
    reversed: list[str] = []
    unconfirmed: list[str] = []
    mismatched: list[str]
    refunds_finished: list[str]
    refunds_failed: list[str]
    refunded_elsewhere: list[str]
    report: list[str]
    foreign: bool = False  # the provider's list holds none of our payments: nothing was done


async def provider_unavailable(_request: Request, exc: ProviderUnavailable) -> JSONResponse:
    return JSONResponse({"error": "provider_unavailable", "detail": str(exc)}, status_code=503)


async def provider_not_configured(_request: Request, exc: ProviderNotConfigured) -> JSONResponse:
    # Not a passing trouble: this core has no way to the provider until it is configured.
    return JSONResponse({"error": "provider_not_configured", "detail": str(exc)}, status_code=409)


# The app answers these for every route; only control's routes reach the provider.
CONTROL_ERRORS = {ProviderUnavailable: provider_unavailable, ProviderNotConfigured: provider_not_configured}


def control_router(services: ControlApiServices, node_with: NodeWith) -> APIRouter:
    router = APIRouter(tags=["control"])
    Operator = Annotated[Node, Depends(node_with("admin"))]

    @router.post("/v1/control/grants")
    async def grant(body: GrantIn, node: Operator) -> GrantOut:
        """Give a user coins by hand; recorded with this node's name and the reason."""
        command = uc.GrantCoinsCommand(
            UserId(body.user_id), LotKind.MANUAL, body.amount, services.rules.valid_for(LotKind.MANUAL),
            LotId(f"manual:{body.grant_id}"), granted_by=node.name, reason=body.reason,
        )
        lot_id = await services.grant_coins(command)
        services.queued()
        return GrantOut(lot_id=lot_id, user_id=body.user_id, amount=body.amount, granted_by=node.name)

    @router.post("/v1/control/payments/{charge_id}/refund")
    async def refund(charge_id: CHARGE_ID, body: RefundIn, node: Operator) -> RefundOut:
        """Give a purchase back while none of its coins was used: its coins leave the account
        and the Stars go back to the user. Asking again finishes a refund left pending."""
        done = await services.refund_payment(uc.RefundPaymentCommand(charge_id, node.name, body.reason))
        services.queued()
        return RefundOut(external_id=done.external_id, state=done.state.value, coins=done.coins)

    @router.get("/v1/control/payments/doubts")
    async def doubts(_node: Operator) -> DoubtsOut:
        """Payments an edge reported that the provider has not confirmed (no coins were given;
        `node` is the edge that reported it), and credited payments reversed because the
        provider did not know them (`owed`: coins already spent)."""
        if services.payment_doubts is None:
            raise NotFound("operation", "payment doubts")
        claims, reversals = await services.payment_doubts()
        return DoubtsOut(
            unconfirmed=[UnconfirmedOut(external_id=c.external_id, user_id=c.user_id, paid_amount=c.paid_amount,
                                        currency=c.currency, node=c.node, claimed_at=c.claimed_at.isoformat())
                         for c in claims],
            reversed=[ReversedOut(external_id=v.external_id, user_id=v.user_id, taken=v.taken, owed=v.owed,
                                  reversed_at=v.reversed_at.isoformat()) for v in reversals],
        )

    @router.post("/v1/control/payments/reconcile")
    async def reconcile(_node: Operator) -> ReconcileOut:
        """Compare with the provider's list now: credit what was missed, finish pending refunds."""
        result = await services.reconcile_payments()
        services.queued()
        return reconcile_out(result)

    return router


def reconcile_out(result: uc.ReconciliationResult) -> ReconcileOut:
    r = result.report
    return ReconcileOut(
        credited=list(result.credited), uncreditable=list(result.uncreditable),
        unknown=[p.external_id for p in result.unexplained], reversed=[v.external_id for v in result.reversed],
        unconfirmed=[c.external_id for c in result.unconfirmed], mismatched=[tx.external_id for tx, _ in r.mismatched],
        refunds_finished=list(result.refunds_finished), refunds_failed=[e for e, _ in result.refunds_failed],
        refunded_elsewhere=[tx.external_id for tx in r.refunded_elsewhere], report=result.lines(),
        foreign=result.foreign,
    )
