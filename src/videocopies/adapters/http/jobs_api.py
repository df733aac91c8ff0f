"""The Job API workers use. A worker reaches only the jobs it holds: its node name is its worker
id, and the owner token proves the lease. Nothing here moves coins: completing a job settles
its order inside core's own use case."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Annotated, Any

import attrs
from fastapi import APIRouter, Depends, Path, Request

from videocopies.adapters.http.job_models import (
    CancelStatus,
    CheckpointRequest,
    CheckpointResponse,
    ClaimedJobOut,
    ClaimRequest,
    ClaimResponse,
    CompleteRequest,
    FailRequest,
    GiveUpRequest,
    LeaseBody,
    NodeOut,
    ProgressRequest,
    RenewRequest,
    RenewResponse,
    UploadRequest,
)
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.http.relocation import Relocation
from videocopies.adapters.http.shared import (
    REFUSALS,
    Forbidden,
    NodeWith,
    SignedUrl,
    client_left,
    refusal,
    signed_url,
)
from videocopies.application import use_cases as uc
from videocopies.application.claims import ClaimWaiters
from videocopies.application.errors import NotFound
from videocopies.application.nodes import NodeAuthenticator
from videocopies.application.ports import Node, ObjectStore
from videocopies.domain.jobs import CopyArtifact, LeaseLost
from videocopies.domain.objects.keys import copy_key
from videocopies.domain.shared import JobId, OwnerToken, WorkerId

JOB_ID = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
COPY_INDEX = Annotated[int, Path(ge=0, le=99)]


@attrs.frozen
class JobApiServices:
    """What the API calls; the core role builds it from its container."""

    authenticator: NodeAuthenticator
    waiters: ClaimWaiters
    renew_lease: Callable[[uc.RenewLeaseCommand], Awaitable[Any]]
    checkpoint_copy: Callable[[uc.CheckpointCopyCommand], Awaitable[bool]]
    complete_job: Callable[[uc.CompleteJobCommand], Awaitable[dict[str, Any]]]
    complete_then_claim: Callable[[uc.CompleteThenClaimCommand], Awaitable[tuple[list[Any], list[uc.ClaimedJob]]]]
    fail_job: Callable[[uc.FailJobCommand], Awaitable[dict[str, Any]]]
    acknowledge_cancel: Callable[..., Awaitable[None]]
    inspect_held_job: Callable[..., Awaitable[uc.HeldJobView]]
    store: ObjectStore | None  # None: workers share core's storage directly, no URLs signed
    info: Callable[[], Awaitable[dict[str, Any]]]
    give_up_copy: Callable[[uc.GiveUpCopyCommand], Awaitable[bool]] | None = None
    report_progress: Callable[[uc.ReportProgressCommand], Awaitable[bool]] | None = None
    url_ttl: timedelta = timedelta(minutes=15)
    queued: Callable[[], None] = lambda: None  # a write may have queued a message for the user
    metrics: CoreMetrics = attrs.field(factory=CoreMetrics)
    relocation: Relocation = attrs.field(factory=Relocation)


def nodes_router(node_with: NodeWith) -> APIRouter:
    router = APIRouter()

    @router.get("/v1/nodes/me", tags=["nodes"], responses=REFUSALS)
    async def me(node: Annotated[Node, Depends(node_with(None))]) -> NodeOut:
        """Who this token belongs to: a worker's name is its worker id."""
        return NodeOut(name=node.name, role=node.role, scopes=sorted(node.scopes))

    return router


def jobs_router(services: JobApiServices, node_with: NodeWith) -> APIRouter:
    router = APIRouter(tags=["jobs"], responses=REFUSALS)
    Worker = Annotated[Node, Depends(node_with("jobs"))]

    async def held(job_id: str, token: str, node: Node) -> uc.HeldJobView:
        return await services.inspect_held_job(JobId(job_id), OwnerToken(token), _wid(node))

    @router.post("/v1/jobs/claim", response_model_exclude_none=True)
    async def claim(body: ClaimRequest, node: Worker, request: Request) -> ClaimResponse:
        """Claim up to `limit` jobs, waiting up to `wait_s` for one; an empty list when none came.
        With `complete`, that job is completed first, in the same transaction as the claim."""
        if body.stats is not None:
            services.metrics.worker_reported(node.name, body.stats)
        answer = ClaimResponse(jobs=[])
        if body.complete is not None:
            answer = await _complete_then_claim(body, _wid(node))
            if answer.jobs or body.wait_s <= 0:
                services.metrics.jobs_claimed([job.job_id for job in answer.jobs])
                return answer
        claiming = asyncio.ensure_future(
            services.waiters.claim(WorkerId(node.name), body.limit, body.max_source_bytes, body.wait_s, body.receipt_id)
        )
        gone = asyncio.ensure_future(client_left(request)) if body.wait_s > 0 else None
        try:
            if gone is not None:
                await asyncio.wait({claiming, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not claiming.done():  # the client left: stop waiting on its behalf
                    claiming.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await claiming
                    return answer
            jobs = await claiming
        finally:
            if gone is not None:
                gone.cancel()
        services.metrics.jobs_claimed([job.job_id for job in jobs])
        return answer.model_copy(update={"jobs": [_claimed(job) for job in jobs]})

    async def _complete_then_claim(body: ClaimRequest, worker: WorkerId) -> ClaimResponse:
        first = body.complete
        assert first is not None
        completion = uc.CompleteJobCommand(JobId(first.job_id), OwnerToken(first.token), first.receipt_id, worker)
        claim = uc.ClaimJobCommand(worker, body.limit, body.max_source_bytes, body.receipt_id)
        (outcome,), jobs = await services.complete_then_claim(uc.CompleteThenClaimCommand([completion], claim))
        services.queued()
        claimed = [_claimed(job) for job in jobs]
        if not isinstance(outcome, Exception):
            services.metrics.job_finished(first.job_id, "done")
            return ClaimResponse(jobs=claimed, completed=outcome)
        if isinstance(outcome, LeaseLost):
            services.metrics.refused.labels(outcome.reason.value).inc()
        answer = refusal(outcome)
        if answer is None:
            raise outcome
        return ClaimResponse(jobs=claimed, refused=answer)

    @router.post("/v1/jobs/{job_id}/renew")
    async def renew(job_id: JOB_ID, body: RenewRequest, node: Worker) -> RenewResponse:
        """Extend the lease; `cancel_requested` tells the worker to stop."""
        if body.stats is not None:
            services.metrics.worker_reported(node.name, body.stats)
        result = await services.renew_lease(uc.RenewLeaseCommand(JobId(job_id), OwnerToken(body.token), _wid(node)))
        return RenewResponse(lease_until=result.lease_until, cancel_requested=result.cancel_requested)

    @router.post("/v1/jobs/{job_id}/copies/{index}/progress")
    async def progress(job_id: JOB_ID, index: COPY_INDEX, body: ProgressRequest, node: Worker) -> CheckpointResponse:
        """How far copy `index` is rendered (`percent`), shown to the user in the order's progress
        message; send it every few seconds at most. `recorded` false: the order has ended."""
        if services.report_progress is None:
            raise NotFound("operation", "progress")
        recorded = await services.report_progress(
            uc.ReportProgressCommand(JobId(job_id), OwnerToken(body.token), index, body.percent, _wid(node))
        )
        if recorded:
            services.queued()
        return CheckpointResponse(recorded=recorded)

    @router.post("/v1/jobs/{job_id}/copies/{index}/checkpoint")
    async def checkpoint(
        job_id: JOB_ID, index: COPY_INDEX, body: CheckpointRequest, node: Worker
    ) -> CheckpointResponse:
        """Record a verified, stored copy; it is sent to the user at once."""
        view = await held(job_id, body.token, node)
        if body.object_key != copy_key(view.order_id, index, body.token):
            raise Forbidden("a copy may only be recorded under the key issued for it")
        quality = body.quality.value() if body.quality else None
        artifact = CopyArtifact(
            body.object_key, body.size, body.sha256, body.duration_s, body.width, body.height, quality
        )
        recorded = await services.checkpoint_copy(
            uc.CheckpointCopyCommand(JobId(job_id), OwnerToken(body.token), index, artifact, _wid(node))
        )
        services.queued()  # the copy goes to the user now
        if recorded:
            services.metrics.copy_recorded(job_id)
        return CheckpointResponse(recorded=recorded)

    @router.post("/v1/jobs/{job_id}/copies/{index}/give-up")
    async def give_up_copy(job_id: JOB_ID, index: COPY_INDEX, body: GiveUpRequest, node: Worker) -> CheckpointResponse:
        """Settle a copy that failed the quality gate on every allowed render: not sent, not
        charged, its price returned and the user told why."""
        if services.give_up_copy is None:
            raise NotFound("operation", "give-up")
        quality = body.quality.value() if body.quality else None
        recorded = await services.give_up_copy(
            uc.GiveUpCopyCommand(JobId(job_id), OwnerToken(body.token), index, body.reason, quality, _wid(node))
        )
        services.queued()
        return CheckpointResponse(recorded=recorded)

    @router.post("/v1/jobs/{job_id}/complete")
    async def complete(job_id: JOB_ID, body: CompleteRequest, node: Worker) -> dict[str, Any]:
        """Close a job whose every copy is recorded; a retry with the same receipt id gets the same answer."""
        result = await services.complete_job(
            uc.CompleteJobCommand(JobId(job_id), OwnerToken(body.token), body.receipt_id, _wid(node))
        )
        services.queued()
        services.metrics.job_finished(job_id, "done")
        return result

    @router.post("/v1/jobs/{job_id}/fail")
    async def fail(job_id: JOB_ID, body: FailRequest, node: Worker) -> dict[str, Any]:
        """Give the job back (queued again while attempts remain); idempotent by receipt id."""
        result = await services.fail_job(
            uc.FailJobCommand(
                JobId(job_id), OwnerToken(body.token), body.reason, body.retryable, body.receipt_id, _wid(node)
            )
        )
        services.queued()
        services.metrics.job_finished(job_id, "given_back" if body.retryable else "failed")
        return result

    @router.post("/v1/jobs/{job_id}/cancel/status")
    async def cancel_status(job_id: JOB_ID, body: LeaseBody, node: Worker) -> CancelStatus:
        """Whether the user asked to cancel (renewing tells the same)."""
        view = await held(job_id, body.token, node)
        return CancelStatus(cancel_requested=view.cancel_requested, lease_until=view.lease_until)

    @router.post("/v1/jobs/{job_id}/cancel/acknowledge")
    async def acknowledge_cancel(job_id: JOB_ID, body: LeaseBody, node: Worker) -> dict[str, str]:
        """The worker stopped FFmpeg and its file operations: the job and order close."""
        await services.acknowledge_cancel(JobId(job_id), OwnerToken(body.token), _wid(node))
        services.queued()
        services.metrics.job_finished(job_id, "cancelled")
        return {"state": "cancelled"}

    @router.post("/v1/jobs/{job_id}/source/url")
    async def source_url(job_id: JOB_ID, body: LeaseBody, node: Worker) -> SignedUrl:
        """A download URL for this job's source, valid for a short while."""
        view = await held(job_id, body.token, node)
        return await signed_url(services.store, services.url_ttl, view.source_key, "GET", {})

    @router.post("/v1/jobs/{job_id}/copies/{index}/upload-url")
    async def upload_url(job_id: JOB_ID, index: COPY_INDEX, body: UploadRequest, node: Worker) -> SignedUrl:
        """An upload URL for copy `index`, under a key of this lease's own."""
        view = await held(job_id, body.token, node)
        if index >= view.copies:
            raise NotFound("copy", f"{job_id}/{index}")
        key = copy_key(view.order_id, index, body.token)
        headers = {"x-amz-meta-sha256": body.sha256}
        return await signed_url(services.store, services.url_ttl, key, "PUT", headers, sha256=body.sha256)

    return router


def _wid(node: Node) -> WorkerId:
    return WorkerId(node.name)


def _claimed(job: uc.ClaimedJob) -> ClaimedJobOut:
    return ClaimedJobOut.model_validate(job.to_record())
