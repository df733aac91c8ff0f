"""Core's API for control nodes: an operator's manual grants, refunds and reconciliation.

Only a node with the `admin` scope reaches these; every grant is recorded with that node's
name and the reason given, and the user is told.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import attrs
from fastapi import Depends, FastAPI, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from videocopies.adapters.http.api import IDENTIFIER, NO_NUL, _Body
from videocopies.application import use_cases as uc
from videocopies.application.errors import ProviderNotConfigured, ProviderUnavailable
from videocopies.application.nodes import Node
from videocopies.domain.coins import GrantRules, LotKind
from videocopies.domain.shared import LotId, UserId

CHARGE_ID = Annotated[str, Path(min_length=1, max_length=256, pattern=IDENTIFIER)]


@attrs.frozen
class ControlApiServices:
    grant_coins: Callable[[uc.GrantCoinsCommand], Awaitable[LotId]]
    refund_payment: Callable[[uc.RefundPaymentCommand], Awaitable[Any]]
    reconcile_payments: Callable[[], Awaitable[uc.ReconciliationResult]]
    rules: GrantRules
    queued: Callable[[], None] = lambda: None  # a message for the user was written


class GrantIn(_Body):
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


class RefundIn(_Body):
    reason: str = Field(min_length=1, max_length=500, pattern=NO_NUL)


class RefundOut(BaseModel):
    external_id: str
    state: str
    coins: int


class ReconcileOut(BaseModel):
    credited: list[str]
    uncreditable: list[str]
    unknown: list[str]
    mismatched: list[str]
    refunds_finished: list[str]
    refunds_failed: list[str]
    refunded_elsewhere: list[str]
    report: list[str]


def add_control_routes(
    app: FastAPI, services: ControlApiServices, node_with: Callable[[str], Callable[..., Awaitable[Node]]]
) -> None:
    Operator = Annotated[Node, Depends(node_with("admin"))]

    @app.exception_handler(ProviderUnavailable)
    async def unavailable(_request: Request, exc: ProviderUnavailable) -> JSONResponse:
        return JSONResponse({"error": "provider_unavailable", "detail": str(exc)}, status_code=503)

    @app.exception_handler(ProviderNotConfigured)
    async def not_configured(_request: Request, exc: ProviderNotConfigured) -> JSONResponse:
        # Not a passing trouble: this core has no way to the provider until it is configured.
        return JSONResponse({"error": "provider_not_configured", "detail": str(exc)}, status_code=409)

    @app.post("/v1/control/grants", tags=["control"])
    async def grant(body: GrantIn, node: Operator) -> GrantOut:
        """Give a user coins by hand; recorded with this node's name and the reason."""
        command = uc.GrantCoinsCommand(
            UserId(body.user_id), LotKind.MANUAL, body.amount, services.rules.valid_for(LotKind.MANUAL),
            LotId(f"manual:{body.grant_id}"), granted_by=node.name, reason=body.reason,
        )
        lot_id = await services.grant_coins(command)
        services.queued()
        return GrantOut(lot_id=lot_id, user_id=body.user_id, amount=body.amount, granted_by=node.name)

    @app.post("/v1/control/payments/{charge_id}/refund", tags=["control"])
    async def refund(charge_id: CHARGE_ID, body: RefundIn, node: Operator) -> RefundOut:
        """Give a purchase back while none of its coins was used: its coins leave the account
        and the Stars go back to the user. Asking again finishes a refund left pending."""
        done = await services.refund_payment(uc.RefundPaymentCommand(charge_id, node.name, body.reason))
        services.queued()
        return RefundOut(external_id=done.external_id, state=done.state.value, coins=done.coins)

    @app.post("/v1/control/payments/reconcile", tags=["control"])
    async def reconcile(_node: Operator) -> ReconcileOut:
        """Compare with the provider's list now: credit what was missed, finish pending refunds."""
        result = await services.reconcile_payments()
        services.queued()
        return reconcile_out(result)


def reconcile_out(result: uc.ReconciliationResult) -> ReconcileOut:
    r = result.report
    return ReconcileOut(
        credited=list(result.credited), uncreditable=list(result.uncreditable),
        unknown=[p.external_id for p in r.unknown], mismatched=[tx.external_id for tx, _ in r.mismatched],
        refunds_finished=list(result.refunds_finished), refunds_failed=[e for e, _ in result.refunds_failed],
        refunded_elsewhere=[tx.external_id for tx in r.refunded_elsewhere], report=result.lines(),
    )
