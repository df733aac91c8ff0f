"""The objects the service stores: the store, their rows, the store as the lifecycle sweeps it, and the
figures control shows about them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import attrs

from videocopies.domain.objects import ObjectKind, ObjectState, StoredObject


class ObjectStore(Protocol):
    async def put_file(self, key: str, path: Path) -> tuple[int, str]:
        """Store a file; returns its size and SHA-256."""
        ...
    async def get_file(self, key: str, path: Path) -> None: ...
    async def delete(self, key: str) -> None: ...
    async def presigned_url(self, key: str, ttl: timedelta) -> str: ...
    async def presigned_put_url(self, key: str, ttl: timedelta, sha256: str | None = None) -> str: ...


class ObjectRows(Protocol):
    async def note_released(self, now: datetime) -> None:
        """Stamp `released_at` on objects nothing needs any more (a copy's order closed; no open
        order or live quote uses a source), and clear it on a source that is used again."""
        ...

    async def due(self, kind: ObjectKind, before: datetime, limit: int) -> Sequence[StoredObject]:
        """Objects of `kind` released (or delivered) before `before`, oldest first."""
        ...

    async def begin_deleting(self, keys: Sequence[str], before: datetime, now: datetime) -> list[str]:
        """Decide to delete those of `keys` (all of one kind, released or delivered before
        `before`) that are still due, checked under their rows' locks: a source that an order or
        a live quote took meanwhile is kept. Returns the keys whose deletion is decided; a quote
        or confirmation that comes later for one of them is refused."""
        ...

    async def mark_deleted(self, keys: Sequence[str], now: datetime) -> None:
        """The store's delete of these keys succeeded."""
        ...

    async def look_up(self, keys: Sequence[str]) -> tuple[dict[str, ObjectState], set[str]]:
        """The state of each key's row, and the keys a row may still come for."""
        ...

    async def forget_deleted(self, before: datetime, limit: int) -> int:
        """Drop rows of objects deleted before `before`; returns how many."""
        ...


class ListedStore(Protocol):
    async def keys(self, prefix: str) -> list[str]: ...
    async def delete(self, key: str) -> None: ...


@attrs.frozen
class ObjectTally:
    """Objects of one kind in one state, and their bytes (from their rows)."""

    kind: str
    state: str
    objects: int
    bytes: int


@attrs.frozen
class StoreDisk:
    """The disk of a store on a local filesystem (all-in-one: the workers' disk too)."""

    total: int
    free: int

    @property
    def used(self) -> int:
        return self.total - self.free


@attrs.frozen
class ScratchUse:
    """A worker's or edge's scratch directory, as the node last measured it, and which core heard
    that report when (None: a core that does not say when)."""

    role: str
    node: str
    bytes: int
    files: int
    heard_by: str = ""
    heard_at: datetime | None = None


@attrs.frozen
class CoreAnswer:
    """One core asked for its figures (`core`: its URL): its store's disk (None: not on a local
    filesystem), or why it could not be read."""

    core: str
    disk: StoreDisk | None = None
    unreachable: str | None = None


@attrs.frozen
class NodeFigures:
    """What only the cores know, each from the nodes that report to it: every core asked, with
    its store's disk or why it could not be read, and each node's scratch use once, as the core
    that heard it last has it."""

    cores: tuple[CoreAnswer, ...]
    scratch: tuple[ScratchUse, ...]

    @property
    def unread(self) -> tuple[CoreAnswer, ...]:
        return tuple(answer for answer in self.cores if answer.unreachable is not None)

    @property
    def disks(self) -> tuple[tuple[StoreDisk | None, tuple[str, ...]], ...]:
        """Each different disk the cores that answered measured, with those cores: one entry when
        they agree (one store, or a store with no local disk such as S3)."""
        seen: dict[StoreDisk | None, list[str]] = {}
        for answer in self.cores:
            if answer.unreachable is None:
                seen.setdefault(answer.disk, []).append(answer.core)
        return tuple((disk, tuple(cores)) for disk, cores in seen.items())


class ObjectTallies(Protocol):
    async def tallies(self) -> Sequence[ObjectTally]: ...


class CoreFigures(Protocol):
    async def node_figures(self) -> NodeFigures:
        """Raises CoreUnreachable when no core can be asked; the cores that could not be read
        while another was are among NodeFigures.cores, with why."""
        ...


@attrs.define
class CoreUnreachable(Exception):
    """Core (or every core) did not answer for its figures; `reason` says how."""

    reason: str
