"""Node identities: every edge, worker and control node calls core with a token of its own.

A token is "<node_id>.<secret>". Only the secret's SHA-256 is stored: the secret is random
and long, so a slow password hash would add cost without adding safety. Checking a token
costs no SQL: core keeps the live nodes in memory, reloads them when told a node was added
or revoked, and every minute in case such news was lost. An id it does not know costs no
query of its own either: at most one reload of the live nodes every `unknown_reload_s`,
shared by every request that waits for it, so random ids cannot drain the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime

import attrs

from videocopies.application.errors import ApplicationError
from videocopies.application.ports import Clock, Node, NodeRegistry

log = logging.getLogger(__name__)

# What each role may do. A worker reaches only the job endpoints, and among those only
# the jobs it holds; no role but core itself moves coins.
ROLE_SCOPES: Mapping[str, frozenset[str]] = {
    "worker": frozenset({"jobs"}),
    "edge": frozenset({"inbox", "outbox"}),
    "control": frozenset({"read", "admin"}),
}


@attrs.frozen
class IssuedToken:
    node: Node
    token: str  # shown once, never stored


@attrs.define
class UnknownRole(ApplicationError):
    role: str


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_token(token: str) -> tuple[str, str] | None:
    node_id, dot, secret = token.partition(".")
    if not dot or not node_id or not secret or len(token) > 200:
        return None
    return node_id, secret


class IssueNodeToken:
    def __init__(self, registry: NodeRegistry, clock: Clock, random_hex: Callable[[int], str]) -> None:
        self._registry, self._clock, self._random_hex = registry, clock, random_hex

    async def __call__(self, name: str, role: str) -> IssuedToken:
        if role not in ROLE_SCOPES:
            raise UnknownRole(role)
        node_id, secret = self._random_hex(8), self._random_hex(32)
        node = Node(node_id, name, role, ROLE_SCOPES[role], hash_secret(secret), self._clock.now())
        await self._registry.add(node)
        return IssuedToken(node, f"{node_id}.{secret}")


class RevokeNode:
    def __init__(self, registry: NodeRegistry, clock: Clock) -> None:
        self._registry, self._clock = registry, clock

    async def __call__(self, name: str) -> bool:
        return await self._registry.revoke(name, self._clock.now())


class NodeAuthenticator:
    """Bearer token → live node, from an in-memory copy of the registry."""

    def __init__(
        self, registry: NodeRegistry, clock: Clock, refresh_s: float = 60.0, flush_seen_s: float = 30.0,
        unknown_reload_s: float = 10.0, remembered_unknown: int = 4096,
    ) -> None:
        self._registry, self._clock = registry, clock
        self._refresh_s, self._flush_seen_s = refresh_s, flush_seen_s
        self._unknown_reload_s, self._remembered_unknown = unknown_reload_s, remembered_unknown
        self._nodes: dict[str, Node] = {}
        # Ids a reload did not find since news last came (a NOTIFY or the periodic reload),
        # oldest first: a node retrying with a revoked token triggers no reloads of its own.
        self._unknown: OrderedDict[str, None] = OrderedDict()
        self._unknown_reload_at: datetime | None = None
        self._reloading: asyncio.Future[None] | None = None
        self._news: asyncio.Future[None] | None = None  # the reload that news asked for, running
        self._loads = 0  # full reloads so far: an older read never replaces a newer one
        self._seen: dict[str, datetime] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.unknown_reloads = 0

    async def start(self) -> None:
        await self.reload()
        self._task = asyncio.create_task(self._keep_fresh(), name="videocopies-nodes")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._flush_seen()

    def nodes_changed(self) -> None:
        """Told (by NOTIFY) that a node was added or revoked: reload at once."""
        self._changed.set()

    async def reload(self) -> None:
        self._loads += 1
        self._nodes = {node.node_id: node for node in await self._registry.live()}
        self._unknown.clear()

    async def authenticate(self, token: str | None) -> Node | None:
        parts = split_token(token) if token else None
        if parts is None:
            return None
        node_id, secret = parts
        node = self._nodes.get(node_id)
        if node is None:
            node = await self._look_up(node_id)
        if node is None or not node.live:
            return None
        if not hmac.compare_digest(node.secret_sha256, hash_secret(secret)):
            return None
        self._seen[node.node_id] = self._clock.now()
        return node

    async def _look_up(self, node_id: str) -> Node | None:
        # News that has come and not been acted on may be about this very node (issued a
        # moment ago, its token used at once): its reload is waited for, not raced.
        if self._changed.is_set() or self._news is not None:
            await self._reload_for_news()
            if (node := self._nodes.get(node_id)) is not None:
                return node
        # A token issued a moment ago whose news has not arrived yet is found by a reload of
        # every live node, at most once per `unknown_reload_s` whatever ids come meanwhile.
        if node_id in self._unknown:
            return None
        now = self._clock.now()
        if self._reloading is None and (
            self._unknown_reload_at is None or (now - self._unknown_reload_at).total_seconds() >= self._unknown_reload_s
        ):
            self._unknown_reload_at = now
            self._reloading = asyncio.ensure_future(self._reload_for_unknown())
        if self._reloading is None:
            return None  # not looked for: remembered only once a reload has not found it
        await asyncio.shield(self._reloading)  # a caller that leaves does not stop it for the others
        node = self._nodes.get(node_id)
        if node is None:
            self._unknown[node_id] = None
            if len(self._unknown) > self._remembered_unknown:
                self._unknown.popitem(last=False)
        return node

    async def _reload_for_unknown(self) -> None:
        try:
            self.unknown_reloads += 1
            loads = self._loads
            nodes = await self._registry.live()
            if loads == self._loads:  # ids refused so far stay refused
                self._nodes = {node.node_id: node for node in nodes}
        finally:
            self._reloading = None

    async def _reload_for_news(self) -> None:
        """The reload news asked for, shared by every caller waiting for it."""
        if self._news is None:
            self._news = asyncio.ensure_future(self._reload_news())
        await asyncio.shield(self._news)

    async def _reload_news(self) -> None:
        try:
            self._changed.clear()  # news arriving during this read asks for another
            await self.reload()
        finally:
            self._news = None

    async def _keep_fresh(self) -> None:
        loop = asyncio.get_running_loop()
        last_reload = last_flush = loop.time()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(self._refresh_s, self._flush_seen_s))
            try:
                if self._changed.is_set():
                    await self._reload_for_news()
                    last_reload = loop.time()
                elif loop.time() - last_reload >= self._refresh_s:
                    await self.reload()
                    last_reload = loop.time()
                if loop.time() - last_flush >= self._flush_seen_s:
                    await self._flush_seen()
                    last_flush = loop.time()
            except Exception as error:  # noqa: BLE001 - keep serving from the copy we have
                log.warning("could not refresh node identities: %r", error)

    async def _flush_seen(self) -> None:
        if self._seen:
            seen, self._seen = self._seen, {}
            await self._registry.seen(seen)
