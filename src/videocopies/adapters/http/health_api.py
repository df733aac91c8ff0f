"""Core's health, for anyone: `/_info` and `/metrics`. The money figures only go to a control
node (the "read" scope); anyone else gets health alone."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

import os
import time
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials

import videocopies
from videocopies.adapters.http.jobs_api import JobApiServices
from videocopies.adapters.http.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from videocopies.adapters.http.shared import Credentials

API_VERSION = 1


def health_router(services: JobApiServices) -> APIRouter:
    started = time.monotonic()
    router = APIRouter(tags=["health"])

    async def reads_money(credentials: HTTPAuthorizationCredentials | None) -> bool:
        if credentials is None:
            return False
        node = await services.authenticator.authenticate(credentials.credentials)
        return node is not None and "read" in node.scopes

    @router.get("/metrics", response_class=Response)
    async def metrics(credentials: Credentials) -> Response:
        """This core's figures in Prometheus' text format; no token needed, but the money
        figures (payments, coins bought) only with a control node's token."""
        text = await services.metrics.render(money=await reads_money(credentials))
        return Response(text, media_type=METRICS_CONTENT_TYPE)

    @router.get("/_info")
    async def info(credentials: Credentials) -> dict[str, Any]:
        """Version, schema level, uptime and active leases; no token needed. With a control
        node's token, the money figures too."""
        details = await services.info()
        if await reads_money(credentials):
            details["money"] = await services.metrics.money_figures()
        return {
            "version": videocopies.__version__,
            "api": API_VERSION,
            "uptime_s": round(time.monotonic() - started, 3),
            "parked_claims": services.waiters.parked,
            "pid": os.getpid(),
            "moved_to": services.relocation.url,
            **details,
        }

    return router
