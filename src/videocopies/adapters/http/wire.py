"""JSON requests over kept-alive HTTP/1.1 connections, for edge's hot paths (the Bot API,
and core's inbox and outbox).

A burst is tens of thousands of small requests (a getUpdates page, then a sendMessage or an
answerCallbackQuery per user), and a general HTTP client spends several times more CPU on
each than the request itself costs: headers as objects, cookie jars, tracing hooks, timers.
Here a request is one bytes write and its answer is parsed by httptools, the parser uvicorn
uses. Only what these calls need: a method, a JSON body and a few fixed headers; a status,
the headers and a body back; TLS through asyncio; no proxies, no redirects. aiohttp's client,
held to the same job, cost three times its CPU per request and edge 2.5 times its CPU per
update: docs/decisions/0005."""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import attrs
import httptools

# A server closes an idle connection after a while (uvicorn after 5 s); one idle longer than
# this is closed here instead of being found dead on the next request.
IDLE_S = 3.0


class WireError(ConnectionError):
    """No answer: the connection failed, closed early, or sent something that is not HTTP."""


@attrs.frozen
class Answer:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes


class _Connection(asyncio.Protocol):
    """One connection, one request at a time; the parser is fed as bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.open = False
        self.answered = 0  # responses received on this connection
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._body: list[bytes] = []
        self._headers: dict[str, str] = {}
        self._waiter: asyncio.Future[Answer] | None = None
        self._started = False  # the current response has begun

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.open = True

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(WireError(f"not an HTTP response: {error}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        self._fail(WireError(f"connection closed{f': {exc}' if exc else ''}"))

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._started = True
        self._body = []
        self._headers = {}

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self.answered += 1
        if not self._parser.should_keep_alive():
            self.close()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(self._parser.get_status_code(), self._headers, b"".join(self._body)))

    # ours
    @property
    def started(self) -> bool:
        return self._started

    def send(self, request: bytes) -> asyncio.Future[Answer]:
        assert self.transport is not None and self._waiter is None
        self._started = False
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self._waiter

    def close(self) -> None:
        self.open = False
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)


class JsonWire:
    """Up to `connections` kept-alive connections to one server; a request waits for a free one.
    `headers` go with every request; paths are taken below the base URL's own path."""

    def __init__(
        self, base_url: str, connections: int = 100, headers: Mapping[str, str] | None = None,
        ca_file: str | None = None,
    ) -> None:
        """`ca_file`: the certificates an https server's must chain to (a private CA) instead
        of the system's."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url
        self._prefix = parts.path.rstrip("/").encode()
        self._extra = b"".join(f"\r\n{k}: {v}".encode("latin-1") for k, v in (headers or {}).items())
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl = ssl.create_default_context(cafile=ca_file) if parts.scheme == "https" else None
        default_port = parts.port is None or parts.port == (443 if parts.scheme == "https" else 80)
        self._host_header = (self._host if default_port else f"{self._host}:{self._port}").encode("idna")
        self._idle: collections.deque[_Connection] = collections.deque()
        self._slots = asyncio.Semaphore(connections)
        self._closed = False

    async def post(self, path: str, body: bytes, timeout_s: float) -> tuple[int, bytes]:
        """The status and body of POST `path` with a JSON `body`."""
        answer = await self.request("POST", path, body, timeout_s)
        return answer.status, answer.body

    async def request(self, method: str, path: str, body: bytes | None, timeout_s: float) -> Answer:
        """`method` `path` with a JSON `body` (or none). A kept-alive connection the server had
        closed before answering is replaced once: the request never reached it."""
        if self._closed:
            raise WireError("closed")
        content = b"" if body is None else b"\r\nContent-Type: application/json"
        request = b"".join((
            method.encode(), b" ", self._prefix, path.encode(), b" HTTP/1.1\r\nHost: ", self._host_header,
            self._extra, content, b"\r\nContent-Length: ", str(len(body or b"")).encode(), b"\r\n\r\n", body or b"",
        ))
        async with self._slots:
            try:
                async with asyncio.timeout(timeout_s):
                    return await self._exchange(request)
            except TimeoutError:
                raise TimeoutError(f"no answer in {timeout_s} s") from None

    async def _exchange(self, request: bytes) -> Answer:
        for _ in range(2):
            connection, reused = await self._connection()
            try:
                answer = await connection.send(request)
            except WireError:
                connection.close()
                if reused and not connection.started:
                    continue  # the server had let it go: the request was not read
                raise
            except BaseException:  # timed out or cancelled mid-answer: the connection is unusable
                connection.close()
                raise
            if connection.open and not self._closed:
                connection.idle_since = time.monotonic()
                self._idle.append(connection)
            else:
                connection.close()
            return answer
        raise WireError("the server closed two connections in a row")

    async def _connection(self) -> tuple[_Connection, bool]:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()  # the most recently used: least likely to be closed
            if connection.open and now - connection.idle_since < IDLE_S:
                return connection, True
            connection.close()
        try:
            _, connection = await asyncio.get_running_loop().create_connection(
                _Connection, self._host, self._port, ssl=self._ssl,
                server_hostname=self._host if self._ssl else None,
            )
        except OSError as error:
            raise WireError(f"cannot connect to {self._host}:{self._port}: {error}") from error
        return connection, False

    async def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
