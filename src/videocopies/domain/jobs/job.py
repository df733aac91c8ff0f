"""The job: rendering an order's copies under a lease, with a checkpoint per copy."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import attrs

from videocopies.domain.effects.seeded import SeededPlans
from videocopies.domain.jobs.errors import (
    CancelNotRequested,
    CheckpointConflict,
    CopiesMissing,
    JobNotClaimable,
    LeaseLossReason,
    LeaseLost,
    NoSuchCopyIndex,
)
from videocopies.domain.jobs.lease import Lease
from videocopies.domain.shared import DomainEvent, JobId, OrderId, OwnerToken, WorkerId

if TYPE_CHECKING:
    from videocopies.domain.effects import EffectsPlan
    from videocopies.domain.quality import CopyQuality


class JobState(enum.Enum):
    QUEUED = "queued"
    LEASED = "leased"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_JOB_STATES = frozenset({JobState.DONE, JobState.FAILED, JobState.CANCELLED})


@attrs.frozen
class CopyArtifact:
    """A stored, verified copy: where it is, what it is, and the quality gate's figures. A copy
    the gate gave up on is settled too (never rendered again), with no object and a `failure`."""

    object_key: str
    size: int
    sha256: str
    duration_s: float = 0.0
    width: int = 0
    height: int = 0
    quality: CopyQuality | None = None
    failure: str | None = None

    @classmethod
    def given_up(cls, reason: str, quality: CopyQuality | None) -> CopyArtifact:
        return cls("", 0, "", quality=quality, failure=reason)

    @property
    def is_given_up(self) -> bool:
        return self.failure is not None


@attrs.frozen
class JobClaimed(DomainEvent):
    job_id: JobId
    worker_id: WorkerId
    attempt: int


@attrs.frozen
class CopyCheckpointed(DomainEvent):
    job_id: JobId
    order_id: OrderId
    index: int
    artifact: CopyArtifact


@attrs.frozen
class LeaseExpired(DomainEvent):
    job_id: JobId
    worker_id: WorkerId
    attempt: int


@attrs.frozen
class JobFinished(DomainEvent):
    job_id: JobId
    order_id: OrderId
    state: JobState
    reason: str | None = None


@attrs.define(slots=False, eq=False)
class Job:
    """Only the current lease holder may change a job, and only while its lease runs.
    The effects plan of every copy is fixed when the job is made, so whoever renders
    a copy renders the same one; finished copies are never rendered again."""

    job_id: JobId
    order_id: OrderId
    # A tuple, or SeededPlans: the same plans drawn from the order's seed when first read.
    plans: Sequence[EffectsPlan]
    created_at: datetime
    max_attempts: int = 3
    source_bytes: int = 0
    state: JobState = JobState.QUEUED
    lease: Lease | None = None
    attempts: int = 0
    cancel_requested: bool = False
    checkpoints: dict[int, CopyArtifact] = attrs.Factory(dict)
    last_error: str | None = None
    version: int = 0
    events: list[DomainEvent] = attrs.Factory(list)
    # The owner token the latest change was made under, so storage can fence the write again.
    written_under: OwnerToken | None = None
    # The token of the owner whose own write closed the job, to tell its retry from a zombie.
    closed_by: OwnerToken | None = None

    @property
    def copies(self) -> int:
        return len(self.plans)

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_JOB_STATES

    def remaining(self) -> list[tuple[int, EffectsPlan]]:
        """The copies still to render, each with its fixed plan."""
        return [(i, p) for i, p in enumerate(self.plans) if i not in self.checkpoints]

    def made_looks(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """The fingerprints of the copies made so far, by index; a given-up copy is never
        delivered, so no copy need keep away from it."""
        return tuple(
            (i, a.quality.fingerprint) for i, a in sorted(self.checkpoints.items())
            if not a.is_given_up and a.quality is not None and a.quality.fingerprint
        )

    def claim(self, worker_id: WorkerId, token: OwnerToken, now: datetime, ttl: timedelta) -> Lease:
        """Take the job for `ttl`; a lease that ran out is taken over."""
        self.expire(now)
        if self.state is not JobState.QUEUED:
            raise JobNotClaimable(self.job_id, self.state.value)
        self.attempts += 1
        self.state = JobState.LEASED
        self.lease = Lease(worker_id, token, now, now + ttl, self.attempts)
        self._changed(JobClaimed(self.job_id, worker_id, self.attempts))
        return self.lease

    def renew(self, token: OwnerToken, now: datetime, ttl: timedelta) -> bool:
        """Extend the lease; returns whether a cancel was requested, so the worker stops."""
        lease = self._held(token, now)
        self.lease = lease.renewed(now, ttl)
        self._changed()
        return self.cancel_requested

    def checkpoint(self, token: OwnerToken, now: datetime, index: int, artifact: CopyArtifact) -> bool:
        """Record a finished copy; True the first time, False for a repeat of the same copy."""
        self._held(token, now)
        if not 0 <= index < self.copies:
            raise NoSuchCopyIndex(self.job_id, index)
        if (known := self.checkpoints.get(index)) is not None:
            if known != artifact:
                raise CheckpointConflict(self.job_id, index)
            return False
        self.checkpoints[index] = artifact
        self._changed(CopyCheckpointed(self.job_id, self.order_id, index, artifact))
        return True

    def complete(self, token: OwnerToken, now: datetime) -> None:
        self._held(token, now)
        if missing := tuple(i for i, _ in self.remaining()):
            raise CopiesMissing(self.job_id, missing)
        self._finish(JobState.DONE)

    def fail(self, token: OwnerToken, now: datetime, reason: str, retryable: bool = True) -> JobState:
        """Give the job back; it is queued again unless this was its last attempt."""
        self._held(token, now)
        self.last_error = reason
        if retryable and self.attempts < self.max_attempts and not self.cancel_requested:
            self.lease, self.state = None, JobState.QUEUED
            self._changed()
        elif self.cancel_requested:
            self._finish(JobState.CANCELLED, reason)
        else:
            self._finish(JobState.FAILED, reason)
        return self.state

    def request_cancel(self) -> bool:
        """Ask the owner to stop; True when the job is closed at once (nobody owned it)."""
        if self.is_final:
            return True
        if self.state is JobState.QUEUED:
            self._finish(JobState.CANCELLED, "cancelled")
            return True
        if not self.cancel_requested:
            self.cancel_requested = True
            self._changed()
        return False

    def acknowledge_cancel(self, token: OwnerToken, now: datetime) -> bool:
        """The owner has stopped FFmpeg and its file operations: the job is closed. The same
        owner acknowledging again changes nothing (False); anyone else is refused."""
        if self.state is JobState.CANCELLED and token is not None and token == self.closed_by:
            return False
        self._held(token, now)
        if not self.cancel_requested:
            raise CancelNotRequested(self.job_id)
        self._finish(JobState.CANCELLED, "cancelled")
        return True

    def expire(self, now: datetime) -> bool:
        """Take back a lease that ran out. A cancelled job closes; one out of attempts fails."""
        if self.state is not JobState.LEASED or self.lease is None or not self.lease.is_expired(now):
            return False
        lease = self.lease
        self.written_under = None  # taken back, not written by any owner
        self.events.append(LeaseExpired(self.job_id, lease.worker_id, lease.attempt))
        if self.cancel_requested:
            self._finish(JobState.CANCELLED, "cancelled")
        elif self.attempts >= self.max_attempts:
            self.last_error = f"lease expired on attempt {lease.attempt} of {self.max_attempts}"
            self._finish(JobState.FAILED, self.last_error)
        else:
            self.lease, self.state = None, JobState.QUEUED
            self._changed()
        return True

    def check_held(self, token: OwnerToken, now: datetime) -> Lease:
        """The live lease `token` proves, or LeaseLost; changes nothing (for reads)."""
        if self.state is not JobState.LEASED or self.lease is None:
            raise LeaseLost(self.job_id, LeaseLossReason.NOT_LEASED)
        if self.lease.token != token:
            raise LeaseLost(self.job_id, LeaseLossReason.STALE_TOKEN)
        if self.lease.is_expired(now):
            raise LeaseLost(self.job_id, LeaseLossReason.EXPIRED)
        return self.lease

    def _held(self, token: OwnerToken, now: datetime) -> Lease:
        lease = self.check_held(token, now)
        self.written_under = token
        return lease

    def _finish(self, state: JobState, reason: str | None = None) -> None:
        self.closed_by = self.written_under
        self.state, self.lease = state, None
        self._changed(JobFinished(self.job_id, self.order_id, state, reason))

    def _changed(self, event: DomainEvent | None = None) -> None:
        self.version += 1
        if event is not None:
            self.events.append(event)


def make_job(
    job_id: JobId,
    order_id: OrderId,
    plans: Sequence[EffectsPlan],
    now: datetime,
    max_attempts: int = 3,
    source_bytes: int = 0,
) -> Job:
    fixed = plans if isinstance(plans, SeededPlans) else tuple(plans)
    return Job(job_id, order_id, fixed, now, max_attempts=max_attempts, source_bytes=source_bytes)
