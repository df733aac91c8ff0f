"""The door of core's HTTP API: a request's size and its node token are judged before a byte
of its body is read, so a stranger cannot make core hold or parse anything.

- A declared Content-Length over the route's limit is answered 413 at once; a chunked body
  is counted as it arrives and refused when it passes the limit.
- Every /v1/ call must carry a live node's token: without one it is answered 401 unread.
  The node found is kept in the ASGI scope; the routes' own scope checks read it there.

Plain ASGI (no task, no channel per request), like the relocation answer: the Job API is hot.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import attrs
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from videocopies.application.ports import Node

NODE_IN_SCOPE = "videocopies.node"
KIB, MIB = 1024, 1024 * 1024

# The largest bodies nodes send, measured on what edge builds (tests/security/test_http_body_limits.py):
# a page of 100 updates with 4096 characters of text each is 2.4 MiB in JSON, 5.0 MiB at
# edge's own ceilings (escaped astral characters); 500 delivery reports 2.6 MiB at worst.
BODY_LIMITS: Mapping[str, int] = {
    "/v1/inbox": 6 * MIB,
    "/v1/outbox/reports": 3 * MIB,
    "/v1/inbox/videos": 256 * KIB,
}
DEFAULT_BODY_LIMIT = 64 * KIB


@attrs.frozen
class BodyLimits:
    by_path: Mapping[str, int] = BODY_LIMITS
    default: int = DEFAULT_BODY_LIMIT

    def of(self, path: str) -> int:
        return self.by_path.get(path, self.default)


class Guarded:
    """Wraps core's app: limits every request's body, and authenticates /v1/ calls first."""

    def __init__(
        self, app: ASGIApp, authenticate: Callable[[str | None], Awaitable[Node | None]],
        limits: BodyLimits | None = None,
    ) -> None:
        self._app, self._authenticate = app, authenticate
        self._limits = limits or BodyLimits()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        length: bytes | None = None
        chunked = False
        authorization: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"authorization":
                authorization = value
            elif name == b"transfer-encoding":
                chunked = True
        path: str = scope["path"]
        limit = self._limits.of(path)
        declared = 0
        if length is not None:
            declared = int(length) if length.isdigit() else -1
            if declared < 0:
                await _refuse(send, 400, "bad_request", "Content-Length is not a number")
                return
            if declared > limit:
                await _refuse(send, 413, "too_large", f"a body here may hold {limit} bytes")
                return
        # A refused request's body, when small and declared, is read and dropped by the server to
        # keep the connection; any other ends the connection with the answer.
        unread = chunked or declared > DEFAULT_BODY_LIMIT
        if path.startswith("/v1/"):
            try:
                node = await self._authenticate(_bearer(authorization))
            except Exception:  # noqa: BLE001 - the registry's database is away: the node asks again
                await _refuse(send, 503, "database_unavailable", "the database is unavailable; try again",
                              {"Retry-After": "1"}, close=unread)
                return
            if node is None:
                await _refuse(send, 401, "unauthorized", "a valid node token is required",
                              {"WWW-Authenticate": "Bearer"}, close=unread)
                return
            scope[NODE_IN_SCOPE] = node
        if chunked:
            body = await _read_within(receive, limit)
            if body is None:
                await _refuse(send, 413, "too_large", f"a body here may hold {limit} bytes")
                return
            receive = _replay(body, receive)
        await self._app(scope, receive, send)


def node_of(scope: Scope) -> Node | None:
    """The node the guard authenticated for this request (None: not a /v1/ call)."""
    node: Node | None = scope.get(NODE_IN_SCOPE)
    return node


def _bearer(authorization: bytes | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, credentials = authorization.decode("latin-1").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credentials.strip() or None


async def _read_within(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes `limit` (or the client left)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read already, then whatever the client says next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _refuse(
    send: Send, status: int, error: str, detail: str, headers: Mapping[str, str] | None = None, close: bool = True,
) -> None:
    """A problem answer; `close`: the connection ends with it, so a body left unread is never
    read (uvicorn would otherwise read and drop it to reach the next request)."""
    body = b'{"error":"%s","detail":"%s"}' % (error.encode(), detail.encode())
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
