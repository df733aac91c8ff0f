"""A node's side of core's API, over HTTP: no SQL, no database credentials.

JSON calls go over `JsonWire` (kept-alive connections, httptools): edge makes hundreds of
them in a burst, with bodies of tens of kilobytes, and httpx's machinery around each cost
more CPU than the call. Transfers to and from storage stream through httpx, as do the
calls of a client given an httpx transport (tests).

A request that fails on the network (core restarting, a dropped connection) or with a 502,
503 or 504 is sent again, the same request with the same receipt id, until `retry_for_s`
has passed: a completion that reached core before the connection broke is answered from
its receipt, never run twice.

With several cores (a list of URLs, see core_choice.py) a failed call goes at once to the next
core, and the node comes back to the first once it has rested.

A node talks plain HTTP only to a core on its own machine unless told otherwise
(VIDEOCOPIES_ALLOW_PLAIN_HTTP=1), and follows a relocation only where it would have agreed
to start: its token and users' updates never go out in clear because a 308 said so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import ssl
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videocopies.adapters.http.answers import (
    CoreRefused,
    StorageBusy,
    relocated_to,
    result_of,
    storage_answer,
)
from videocopies.adapters.http.core_choice import CoreChoice, core_urls
from videocopies.adapters.http.core_urls import check_core_url, plain_http_elsewhere
from videocopies.adapters.http.wire import Answer, JsonWire
from videocopies.adapters.objectstore.files import open_temp_beside

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)
_RETRY_STATUS = {502, 503, 504}
_CHUNK = 1024 * 1024


class CoreUnreachable(Exception):
    pass


class CoreClient:
    def __init__(
        self,
        base_url: str | Sequence[str],
        token: str,
        retry_for_s: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Any = asyncio.sleep,
        allow_plain_http: bool = False,
        ca_file: str | None = None,
        moves_file: Path | None = None,
    ) -> None:
        """Raises PlainHttpRefused for plain HTTP to another machine unless `allow_plain_http`
        (a given `transport` reaches no network: tests). `ca_file`: core's certificate
        chains to this CA (a private one) instead of the system's. `base_url`: one core, or
        several (a list, or URLs separated by commas); `moves_file`: where relocations are kept."""
        urls = core_urls(base_url) if isinstance(base_url, str) else list(base_url)
        self.cores = CoreChoice(urls, moves_file)
        base_url = self.cores.current
        if transport is None:
            for url in self.cores.urls:
                check_core_url(url, allow_plain_http)
        self._allow_plain_http, self._ca_file = allow_plain_http, ca_file
        self._headers = {"Authorization": f"Bearer {token}", "User-Agent": "videocopies-node"}
        self._base_url = base_url.rstrip("/")
        self._wires: dict[str, JsonWire] = {}  # one per core: a call in flight keeps its own
        self._wire = None if transport is not None else self._wire_to(base_url)
        self._retry_for_s, self._sleep = retry_for_s, sleep
        self._transport = transport  # tests: storage is reached through it too
        # httpx is loaded only by a node that uses it (a given transport, or signed URLs): a
        # worker on a shared local store does not, and its import and CA bundles were 10 MiB.
        self._http = self._client_of_core() if transport is not None else None
        self._storage: httpx.AsyncClient | None = None
        self.retries = 0
        self.moves_refused = 0  # 308s pointing at plain HTTP elsewhere, not followed

    def _wire_to(self, base_url: str) -> JsonWire:
        base_url = base_url.rstrip("/")
        if base_url not in self._wires:
            self._wires[base_url] = JsonWire(base_url, headers=self._headers, ca_file=self._ca_file)
        return self._wires[base_url]

    def _client_of_core(self) -> httpx.AsyncClient:
        import httpx

        return httpx.AsyncClient(
            base_url=self._base_url, headers=self._headers, timeout=httpx.Timeout(30.0, connect=5.0),
            transport=self._transport,
            verify=ssl.create_default_context(cafile=self._ca_file) if self._ca_file else True,
        )

    def _storage_client(self) -> httpx.AsyncClient:
        """Signed URLs point at storage, not core: no node token goes there. One client for every
        transfer (a new one each loaded the CA bundle: 0.14 s of CPU, and a new connection)."""
        if self._storage is None:
            import httpx

            self._storage = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0), transport=self._transport)
        return self._storage

    @property
    def base_url(self) -> str:
        return self._base_url

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._storage is not None:
            await self._storage.aclose()
        for wire in self._wires.values():
            await wire.close()

    async def _send(self, method: str, path: str, body: dict[str, Any] | None, timeout: float) -> Answer:
        if self._wire is not None:
            payload = None if body is None else json.dumps(body).encode()
            return await self._wire.request(method, path, payload, timeout)
        assert self._http is not None  # no wire: a transport was given
        response = await self._http.request(method, path, json=body, timeout=timeout)
        return Answer(response.status_code, response.headers, response.content)

    async def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30.0,
        resend: dict[str, Any] | None = None,
    ) -> Any:
        """`resend`: the body sent instead of `body` once an attempt failed (a claim's retry asks
        for its receipt without waiting); by default every attempt sends the very same request."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._retry_for_s
        delay, moves = 0.1, 0
        if self.cores.preferred():
            self._use(self.cores.current)
        while True:
            used = self.cores.current
            try:
                answer = await self._send(method, path, body, timeout)
            except _network_errors() as error:
                problem: str = f"{type(error).__name__}: {error}"
            else:
                moved_to = relocated_to(answer) if answer.status == 308 else None
                if moved_to and plain_http_elsewhere(moved_to) and not self._allow_plain_http:
                    self.moves_refused += 1
                    log.warning("core %s sent this node to %s over plain HTTP: not followed", self.base_url, moved_to)
                    problem = f"moved to plain HTTP at {moved_to}, not followed"
                elif moved_to and moves < 3:
                    moves += 1
                    log.warning("core moved: %s -> %s", self.base_url, moved_to)
                    self.cores.moved(used, moved_to)
                    await self._move(used, moved_to)  # the old core did nothing with this call
                    continue
                elif answer.status not in _RETRY_STATUS:
                    self.cores.answered(used)
                    return result_of(answer, path)
                else:
                    problem = f"HTTP {answer.status}"
            if loop.time() + delay > give_up:
                raise CoreUnreachable(f"{method} {path}: {problem}, retried for {self._retry_for_s:.0f}s")
            self.retries += 1
            body = resend if resend is not None else body
            if self.cores.several:
                another = self.cores.failed(used)
                self._use(self.cores.current)
                if another:
                    continue  # at once
            log.info("core unreachable (%s); again in %.1fs", problem, delay)
            await self._sleep(delay * (0.5 + random.random()))  # noqa: S311 - jitter, not secrecy
            delay = min(delay * 2, 5.0)

    def _use(self, base_url: str) -> None:
        self._base_url = base_url.rstrip("/")
        if self._http is not None:
            self._http.base_url = self._base_url
        if self._wire is not None:
            self._wire = self._wire_to(base_url)

    async def _move(self, old_url: str, base_url: str) -> None:
        self._use(base_url)
        if (old := self._wires.pop(old_url.rstrip("/"), None)) is not None and old is not self._wire:
            await old.close()

    async def download(self, url: str, headers: dict[str, str], path: Path) -> None:
        """Stream a signed URL into `path` through a temp file; a failure leaves nothing."""

        async def once() -> None:
            async with self._storage_client().stream("GET", url, headers=headers) as response:
                storage_answer(response, 200)
                with open_temp_beside(path) as (out, _digest):
                    async for chunk in response.aiter_bytes(_CHUNK):
                        out.write(chunk)

        await self._through_outage("download", once)

    async def upload(self, url: str, headers: dict[str, str], path: Path, size: int) -> None:
        async def chunks() -> Any:
            with path.open("rb") as source:
                while chunk := await asyncio.to_thread(source.read, _CHUNK):
                    yield chunk

        async def once() -> None:
            sized = {**headers, "Content-Length": str(size)}
            response = await self._storage_client().put(url, content=chunks(), headers=sized)
            storage_answer(response, 200, 201, 204)

        await self._through_outage("upload", once)

    async def _through_outage(self, what: str, transfer: Any) -> None:
        """Storage that is down or restarting is waited out like core is: failing the job
        instead would spend its attempts on every job in the queue within seconds (the soak
        saw a 3 s outage fail a third of the orders)."""
        import httpx  # a transfer runs through httpx: it is loaded

        loop = asyncio.get_running_loop()
        give_up, delay = loop.time() + self._retry_for_s, 0.2
        while True:
            try:
                return await transfer()
            except (httpx.TransportError, StorageBusy) as error:
                if loop.time() + delay > give_up:
                    raise CoreUnreachable(f"storage {what}: {error!r}, retried for {self._retry_for_s:.0f}s") from error
                log.info("storage unreachable on %s (%r); again in %.1fs", what, error, delay)
                await self._sleep(delay * (0.5 + random.random()))  # noqa: S311 - jitter, not secrecy
                delay = min(delay * 2, 5.0)


def _network_errors() -> tuple[type[BaseException], ...]:
    """What a failed call on the network raises: httpx's errors only where httpx is loaded."""
    httpx = sys.modules.get("httpx")
    return (OSError, TimeoutError) if httpx is None else (httpx.TransportError, OSError, TimeoutError)


class WrongNode(Exception):
    """The token is not usable by this role (refused, or issued to another role)."""


async def identify(core: CoreClient, role: str) -> dict[str, Any]:
    """Who this node is, as core knows it from the token; refused unless it has `role`."""
    try:
        me: dict[str, Any] = await core.call("GET", "/v1/nodes/me")
    except (CoreRefused, CoreUnreachable) as refused:
        raise WrongNode(str(refused)) from refused
    if me["role"] != role:
        raise WrongNode(f"this token belongs to a {me['role']} node")
    return me
