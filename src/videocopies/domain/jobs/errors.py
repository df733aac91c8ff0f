"""Refusals of the job queue."""

from __future__ import annotations

import enum

import attrs

from videocopies.domain.shared import DomainError, JobId


class LeaseLossReason(enum.Enum):
    NOT_LEASED = "not_leased"
    STALE_TOKEN = "stale_token"
    EXPIRED = "expired"
    NOT_OWNER = "not_owner"  # another worker's job: refused even with the right token


@attrs.define
class LeaseLost(DomainError):
    """A write from a worker that no longer owns the job: a zombie. Refused, never applied."""

    job_id: JobId
    reason: LeaseLossReason


@attrs.define
class JobNotClaimable(DomainError):
    job_id: JobId
    state: str


@attrs.define
class CheckpointConflict(DomainError):
    """The copy was already stored with different content."""

    job_id: JobId
    index: int


@attrs.define
class CopiesMissing(DomainError):
    job_id: JobId
    missing: tuple[int, ...]


@attrs.define
class NoSuchCopyIndex(DomainError):
    job_id: JobId
    index: int


@attrs.define
class CancelNotRequested(DomainError):
    job_id: JobId
