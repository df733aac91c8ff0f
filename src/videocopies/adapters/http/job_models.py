"""The bodies of the Job API, as workers send and receive them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from videocopies.adapters.http.shared import IDENTIFIER, MAX_BYTES, NO_NUL, Body, Refusal, StatName
from videocopies.domain.quality import MAX_MOMENTS, CopyQuality

MAX_WAIT_S = 60.0
WorkerStats = dict[StatName, Annotated[int, Field(ge=0, le=2**53)]]
# A copy's perceptual hash at each moment the quality gate looks at (docs/quality.md).
Fingerprint = Annotated[list[Annotated[int, Field(ge=0, lt=2**64)]], Field(max_length=MAX_MOMENTS)]


class CopyToRender(BaseModel):
    index: int
    plan: dict[str, Any]


class CopyMade(BaseModel):
    index: int
    fingerprint: Fingerprint


class ClaimedJobOut(BaseModel):
    job_id: str
    order_id: str
    token: str
    lease_until: datetime
    attempt: int
    source_key: str
    remaining: list[CopyToRender]
    made: list[CopyMade] = Field(
        default_factory=list, description="How the copies made before this lease look: new copies keep away from them."
    )


class ClaimResponse(BaseModel):
    jobs: list[ClaimedJobOut]
    completed: dict[str, Any] | None = Field(default=None, description="The answer to the completion it carried.")
    refused: Refusal | None = Field(
        default=None, description="Or its refusal, as the job's own complete call would have been refused."
    )


class LeaseBody(Body):
    token: str = Field(min_length=1, max_length=128, pattern=IDENTIFIER)


class RenewRequest(LeaseBody):
    stats: WorkerStats | None = Field(
        None, max_length=16, description="The worker's figures, as with a claim: a worker busy with a long job "
                                         "keeps them fresh in /metrics with its renewals.",
    )


class ProgressRequest(LeaseBody):
    percent: int = Field(ge=0, le=100)


class RenewResponse(BaseModel):
    lease_until: datetime
    cancel_requested: bool


class QualityIn(BaseModel):
    """The quality gate's figures for a copy (see docs/quality.md)."""

    model_config = ConfigDict(extra="forbid")
    ssim: float = Field(ge=-1.0, le=1.0)
    phash_distance: float = Field(ge=0.0, le=64.0)
    min_pair_distance: float | None = Field(default=None, ge=0.0, le=64.0)
    attempt: int = Field(default=0, ge=0, le=10)
    fingerprint: Fingerprint = Field(default_factory=list)

    def value(self) -> CopyQuality:
        return CopyQuality(
            self.ssim, self.phash_distance, self.min_pair_distance, self.attempt, tuple(self.fingerprint)
        )


class CheckpointRequest(LeaseBody):
    object_key: str = Field(min_length=1, max_length=512, pattern=r"^[A-Za-z0-9._/-]+$")
    size: int = Field(ge=0, le=MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    duration_s: float = Field(ge=0.0, le=86_400.0)
    width: int = Field(ge=1, le=16_384)
    height: int = Field(ge=1, le=16_384)
    quality: QualityIn | None = None


class GiveUpRequest(LeaseBody):
    reason: str = Field(min_length=1, max_length=200, pattern=r"^[a-z_,]+$")
    quality: QualityIn | None = None


class CheckpointResponse(BaseModel):
    recorded: bool = Field(description="False when this copy was already recorded with the same content.")


class CompleteRequest(LeaseBody):
    receipt_id: str = Field(min_length=1, max_length=128, pattern=IDENTIFIER)


class CompleteFirst(CompleteRequest):
    job_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


class ClaimRequest(Body):
    wait_s: float = Field(0.0, ge=0.0, le=MAX_WAIT_S, description="Long-poll for up to this many seconds.")
    limit: int = Field(1, ge=1, le=10)
    max_source_bytes: int | None = Field(
        None, ge=0, le=MAX_BYTES, description="Only jobs whose source fits the worker's disk."
    )
    stats: WorkerStats | None = Field(
        None, max_length=16, description="The worker's own figures (scratch_used_bytes, scratch_files), shown in "
                                         "/metrics as videocopies_scratch{role=\"worker\"}; copies_made, cpu_ms, "
                                         "children_cpu_ms, rss_bytes, downloaded_bytes, uploaded_bytes as "
                                         "videocopies_worker_*{node}.",
    )
    complete: CompleteFirst | None = Field(
        None, description="A job the worker just finished: completed in the claim's own transaction, before any "
                          "wait, and answered in `completed` or `refused`; a refusal never costs the claim.",
    )
    receipt_id: str | None = Field(
        None, min_length=1, max_length=128, pattern=IDENTIFIER,
        description="Chosen by the worker for this claim and sent again, unchanged, when its answer was lost: a "
                    "claim that took jobs keeps a receipt, and the same request with the same id gets those jobs and "
                    "tokens again instead of others. Send the retry with `wait_s` 0: it is answered at once.",
    )


class FailRequest(CompleteRequest):
    reason: str = Field(min_length=1, max_length=2000, pattern=NO_NUL)
    retryable: bool = True


class CancelStatus(BaseModel):
    cancel_requested: bool
    lease_until: datetime


class UploadRequest(LeaseBody):
    size: int = Field(ge=0, le=MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class NodeOut(BaseModel):
    name: str
    role: str
    scopes: list[str]
