"""The job queue as a worker sees it (only the jobs it holds, their files, its disk), and the
news that wakes the claims waiting for work."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import attrs

from videocopies.domain.effects import EffectsPlan
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import JobId, OrderId, OwnerToken, WorkerId


@attrs.frozen
class ClaimedJob:
    """What a worker needs to render: the source, the token for every write, and the
    remaining copies with the plans fixed at confirmation."""

    job_id: JobId
    order_id: OrderId
    token: OwnerToken
    lease_until: datetime
    attempt: int
    source_key: str
    remaining: tuple[tuple[int, EffectsPlan], ...]
    # How the copies made before this lease look (index, fingerprint): the quality gate holds
    # each new copy against them too, so a takeover cannot deliver a near-duplicate of one.
    made_looks: tuple[tuple[int, tuple[int, ...]], ...] = ()

    def to_record(self) -> dict[str, Any]:
        """As JSON: how the Job API spells it, and how a claim's receipt keeps it."""
        return {
            "job_id": self.job_id, "order_id": self.order_id, "token": self.token,
            "lease_until": self.lease_until.isoformat(), "attempt": self.attempt, "source_key": self.source_key,
            "remaining": [{"index": index, "plan": plan.to_dict()} for index, plan in self.remaining],
            "made": [{"index": index, "fingerprint": list(look)} for index, look in self.made_looks],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> ClaimedJob:
        return cls(
            JobId(data["job_id"]), OrderId(data["order_id"]), OwnerToken(data["token"]),
            datetime.fromisoformat(data["lease_until"]), int(data["attempt"]), data["source_key"],
            tuple((int(c["index"]), EffectsPlan.from_dict(c["plan"])) for c in data["remaining"]),
            # A core of an older release says nothing of the copies made before: none are held against.
            tuple((int(c["index"]), tuple(map(int, c["fingerprint"]))) for c in data.get("made", ())),
        )


class JobLeases(Protocol):
    """The queue as a worker sees it: only the jobs it holds, never coins or orders."""

    async def claim(
        self, worker_id: WorkerId, limit: int, max_source_bytes: int | None = None
    ) -> Sequence[ClaimedJob]: ...
    async def renew(self, job_id: JobId, token: OwnerToken) -> bool:
        """Extend the lease; True when the user asked to cancel."""
        ...
    async def progress(self, job_id: JobId, token: OwnerToken, index: int, percent: int) -> None:
        """How far copy `index` is rendered, for the user's progress message (a few seconds apart)."""
        ...
    async def checkpoint(self, job_id: JobId, token: OwnerToken, index: int, artifact: CopyArtifact) -> bool: ...
    async def give_up_copy(
        self, job_id: JobId, token: OwnerToken, index: int, reason: str, quality: CopyQuality | None
    ) -> bool:
        """The copy failed the quality gate on every allowed render: settle it without a file."""
        ...
    async def complete(self, job_id: JobId, token: OwnerToken, receipt_id: str) -> dict[str, Any]: ...
    async def complete_then_claim(
        self, job_id: JobId, token: OwnerToken, receipt_id: str, limit: int, max_source_bytes: int | None = None
    ) -> tuple[dict[str, Any] | Exception, Sequence[ClaimedJob]]:
        """Complete the job and claim the next in one go, without waiting for one: the
        completion's answer or its refusal, and what was claimed (even when it was refused)."""
        ...
    async def fail(
        self, job_id: JobId, token: OwnerToken, reason: str, retryable: bool, receipt_id: str
    ) -> dict[str, Any]: ...
    async def acknowledge_cancel(self, job_id: JobId, token: OwnerToken) -> None: ...


class LeaseRenewals(Protocol):
    """Core's side of a renewal, when a store can do it in one step: a live lease extended in a
    transaction of its own."""

    async def renew(
        self, job_id: JobId, token: OwnerToken, holder: WorkerId | None, now: datetime, until: datetime
    ) -> bool | None:
        """Extend the lease `token` holds on the job to `until`, if it is leased under that token
        (to `holder`, when given) and runs past `now` (and past the store's own clock): whether a
        cancel was requested. None, with nothing changed, when it is not held so; the caller loads
        the job to learn why."""
        ...


class JobFiles(Protocol):
    """A held job's objects: its source to read, and a place for each copy. On another
    machine this goes through URLs core signs for exactly that job's objects."""

    async def fetch_source(self, job: ClaimedJob, path: Path) -> None: ...
    async def store_copy(self, job: ClaimedJob, index: int, path: Path) -> tuple[str, int, str]:
        """Store a verified copy; returns its key, size and SHA-256."""
        ...


class DiskSpace(Protocol):
    def free_bytes(self, path: Path) -> int: ...


class Notifier(Protocol):
    """Wakes waiting claimers; a wake-up only means 'try to claim'. A claimer takes a ticket
    before it looks for work, so news that arrives while it looks is never missed."""

    def job_available(self) -> None: ...
    def ticket(self) -> int: ...
    async def wait(self, ticket: int, timeout: float) -> bool:
        """Return at once if work was announced after `ticket`, else wait up to `timeout`."""
        ...
