"""Core's HTTP API for nodes, assembled: the routers of each area (jobs_api, health_api,
relocation, edge_inbox and edge_outbox, control_api), the door every request passes
(guard), and how refusals are answered.

Every call but `/_info` and `/metrics` carries a node's bearer token."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import videocopies
from videocopies.adapters.http.control_api import CONTROL_ERRORS, ControlApiServices, control_router
from videocopies.adapters.http.edge_api import EdgeApiServices
from videocopies.adapters.http.edge_inbox import inbox_router
from videocopies.adapters.http.edge_outbox import outbox_router
from videocopies.adapters.http.guard import BodyLimits, Guarded
from videocopies.adapters.http.health_api import health_router
from videocopies.adapters.http.jobs_api import JobApiServices, jobs_router, nodes_router
from videocopies.adapters.http.relocation import Relocated, Relocation, relocation_router
from videocopies.adapters.http.shared import Forbidden, Unauthorized, node_with_scope, problem, refused
from videocopies.application.errors import ApplicationError, NotFound
from videocopies.domain.jobs import LeaseLost
from videocopies.domain.shared import DomainError

__all__ = ["JobApiServices", "Relocation", "create_app"]


def create_app(
    services: JobApiServices, edge: EdgeApiServices | None = None, control: ControlApiServices | None = None,
    limits: BodyLimits | None = None,
) -> FastAPI:
    """`edge`: to serve edge's inbox and outbox too; `control`: for operators' grants, refunds
    and reconciliation; `limits`: the largest body each route takes (see guard.BODY_LIMITS)."""
    app = FastAPI(
        title="videocopies core",
        version=videocopies.__version__,
        description="Core's API for nodes: the Job API for workers, and health.",
    )
    app.add_middleware(Relocated, relocation=services.relocation)
    app.add_middleware(Guarded, authenticate=services.authenticator.authenticate, limits=limits)  # the outer one

    @app.exception_handler(Unauthorized)
    async def unauthorized(_request: Request, _exc: Unauthorized) -> JSONResponse:
        return problem(401, "unauthorized", "a valid node token is required", **{"WWW-Authenticate": "Bearer"})

    @app.exception_handler(Forbidden)
    async def forbidden(_request: Request, exc: Forbidden) -> JSONResponse:
        return problem(403, "forbidden", str(exc))

    @app.exception_handler(LeaseLost)
    async def lease_lost(_request: Request, exc: LeaseLost) -> JSONResponse:
        services.metrics.refused.labels(exc.reason.value).inc()
        return refused(exc)

    for refusal in (NotFound, DomainError, ApplicationError):
        app.exception_handler(refusal)(_refused)

    node_with = node_with_scope(services.authenticator)
    app.include_router(nodes_router(node_with))
    app.include_router(relocation_router(services.relocation, node_with))
    app.include_router(health_router(services))
    app.include_router(jobs_router(services, node_with))
    if edge is not None:
        app.include_router(inbox_router(edge, node_with))
        app.include_router(outbox_router(edge, node_with))
    if control is not None:
        for error, handler in CONTROL_ERRORS.items():
            app.exception_handler(error)(handler)
        app.include_router(control_router(control, node_with))
    return app


async def _refused(_request: Request, exc: Exception) -> JSONResponse:
    return refused(exc)
