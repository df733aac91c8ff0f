"""A core that handed over to another (a blue/green deploy) sends every node there: an
operator's call says where, and from then on every /v1/ call but an operator's is answered
308 with the new core's URL, which clients adopt for good."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

from collections.abc import Callable
from typing import Annotated

import attrs
from fastapi import APIRouter, Depends
from fastapi.responses import Response
from pydantic import Field
from starlette.types import ASGIApp, Receive, Scope, Send

from videocopies.adapters.http.core_urls import relocation_refusal
from videocopies.adapters.http.shared import REFUSALS, Body, NodeWith, problem
from videocopies.application.ports import Node

MOVED_HEADER = "X-Videocopies-Moved"


@attrs.define
class Relocation:
    """Where this core's nodes should go instead, once a deploy has said so."""

    url: str | None = None
    moved: Callable[[], None] = lambda: None  # wake what waits here, so it asks again and moves
    allowed_hosts: frozenset[str] = frozenset()  # https hosts nodes may be sent to; loopback always


class MovedRequest(Body):
    url: str = Field(max_length=512, pattern=r"^https?://[A-Za-z0-9.:\[\]_-]+(/[A-Za-z0-9._~/-]*)?$")


class Relocated:
    """Answers 308 once relocated. Plain ASGI, not `@app.middleware`: that runs each request's
    endpoint in a task of its own and streams the answer back through a channel, which cost
    more than many endpoints."""

    def __init__(self, app: ASGIApp, relocation: Relocation) -> None:
        self._app, self._relocation = app, relocation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        moved_to = self._relocation.url
        if moved_to and scope["type"] == "http":
            path: str = scope["path"]
            if path.startswith("/v1/") and not path.startswith("/v1/admin/"):
                headers = {"Location": moved_to + path, MOVED_HEADER: moved_to}
                await Response(status_code=308, headers=headers)(scope, receive, send)
                return
        await self._app(scope, receive, send)


def relocation_router(relocation: Relocation, node_with: NodeWith) -> APIRouter:
    router = APIRouter()

    @router.post("/v1/admin/moved", tags=["admin"], responses=REFUSALS)
    async def moved(body: MovedRequest, _node: Annotated[Node, Depends(node_with("admin"))]) -> dict[str, str]:
        """From now on, send every node to the core at `url` (a deploy switching to it): an
        https host among the allowed ones, or this machine (loopback)."""
        if refusal := relocation_refusal(body.url, relocation.allowed_hosts):
            status, reason = refusal
            return problem(status, "relocation_refused", reason)  # type: ignore[return-value]
        relocation.url = body.url.rstrip("/")
        relocation.moved()
        return {"moved_to": relocation.url}

    return router
