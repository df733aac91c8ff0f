"""What every router of core's API shares: the strict request body, the limits a stored value
must keep to, the problem answers and the refusals that raise them, the caller's node as a
dependency, and signed storage URLs."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, StringConstraints

from videocopies.adapters.http.guard import node_of
from videocopies.application.errors import ApplicationError, NotFound
from videocopies.application.nodes import NodeAuthenticator
from videocopies.application.ports import Node, ObjectStore
from videocopies.domain.jobs import LeaseLossReason, LeaseLost
from videocopies.domain.shared import DomainError

MAX_BYTES = 2**62  # sizes are stored as bigint; anything larger is a bad request, not a crash
# PostgreSQL text cannot hold NUL: identifiers keep to a safe alphabet, free text to no NUL.
IDENTIFIER = r"^[A-Za-z0-9._:-]+$"
NO_NUL = r"^[^\x00]*$"
StatName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class Body(BaseModel):
    """A request body: a field the API does not know is refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


class Problem(BaseModel):
    error: str
    detail: str
    reason: str | None = None


class Refusal(Problem):
    """A refusal inside a 200 answer: a claim's completion refused while the claim went on."""

    status: int


def refusal(exc: Exception) -> Refusal | None:
    """How core answers a refused write, the same whether it refuses the request or, inside a
    claim, only the completion the claim carried; None for what is not a refusal."""
    if isinstance(exc, LeaseLost):
        if exc.reason is LeaseLossReason.NOT_OWNER:
            return Refusal(status=403, error="not_your_job", detail="this job is held by another worker",
                           reason=exc.reason.value)
        return Refusal(status=409, error="lease_lost", detail="the lease on this job is no longer yours",
                       reason=exc.reason.value)
    if isinstance(exc, NotFound):
        return Refusal(status=404, error="not_found", detail=str(exc))
    if isinstance(exc, DomainError | ApplicationError):
        return Refusal(status=409, error=type(exc).__name__, detail=str(exc))
    return None


def refused(exc: Exception) -> JSONResponse:
    answer = refusal(exc)
    if answer is None:
        raise exc
    return problem(answer.status, answer.error, answer.detail, answer.reason)


def problem(status: int, error: str, detail: str, reason: str | None = None, **headers: str) -> JSONResponse:
    body = Problem(error=error, detail=detail, reason=reason).model_dump(exclude_none=True)
    return JSONResponse(body, status_code=status, headers=headers or None)


class Unauthorized(Exception):
    """No live node's token came with the call: answered 401."""


class Forbidden(Exception):
    """The node may not do this: answered 403 with the reason."""


REFUSALS: dict[int | str, dict[str, Any]] = {status: {"model": Problem} for status in (401, 403, 404, 409)}

BEARER = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
# A dependency factory: the caller's node, which must hold the scope given (None: any live node).
NodeWith = Callable[[str | None], Callable[..., Awaitable[Node]]]


def node_with_scope(authenticator: NodeAuthenticator) -> NodeWith:
    def node_with(scope: str | None) -> Callable[..., Awaitable[Node]]:
        async def authenticated(request: Request, credentials: Credentials) -> Node:
            node = node_of(request.scope)  # the guard checked the token before the body was read
            if node is None:
                node = await authenticator.authenticate(credentials.credentials if credentials else None)
            if node is None:
                raise Unauthorized()
            if scope is not None and scope not in node.scopes:
                raise Forbidden(f"a {node.role} node may not call this endpoint")
            return node

        return authenticated

    return node_with


class SignedUrl(BaseModel):
    key: str
    url: str
    method: str
    headers: dict[str, str]
    expires_at: datetime


async def signed_url(
    store: ObjectStore | None, ttl: timedelta, key: str, method: str, headers: dict[str, str],
    sha256: str | None = None,
) -> SignedUrl:
    if store is None:
        raise Forbidden("this core signs no URLs: nodes reach storage directly")
    if method == "GET":
        url = await store.presigned_url(key, ttl)
    else:
        url = await store.presigned_put_url(key, ttl, sha256=sha256)
    expires = datetime.now().astimezone() + ttl
    return SignedUrl(key=key, url=url, method=method, headers=headers, expires_at=expires)


async def client_left(request: Request) -> None:
    """Returns when the client hangs up (its body is already read, so only that can come): a
    long poll stops waiting, and claiming, for a caller that is gone."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def news_or_leaving(news: Awaitable[bool], gone: "asyncio.Future[None]") -> bool:
    """Whether news came before the client left (`news` says whether it came in its time)."""
    waiting = asyncio.ensure_future(news)
    await asyncio.wait((waiting, gone), return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return False
    return waiting.result()
