"""Core's HTTP API for nodes: the Job API workers use, and `/_info`.

Every call but `/_info` carries a node's bearer token. A worker reaches only the job
endpoints, and among those only the jobs it holds (its node name is its worker id, and the
owner token proves the lease). Nothing here moves coins: completing a job settles its
order inside core's own use case.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime.

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Annotated, Any

import attrs
from fastapi import Depends, FastAPI, Path, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.types import ASGIApp, Receive, Scope, Send

import videocopies
from videocopies.adapters.http.core_urls import relocation_refusal
from videocopies.adapters.http.guard import BodyLimits, Guarded, node_of
from videocopies.adapters.http.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.application import use_cases as uc
from videocopies.application.claims import ClaimWaiters
from videocopies.application.errors import ApplicationError, NotFound
from videocopies.application.nodes import Node, NodeAuthenticator
from videocopies.application.ports import ObjectStore
from videocopies.application.worker import copy_key
from videocopies.domain.jobs import CopyArtifact, LeaseLossReason, LeaseLost
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import DomainError, JobId, OwnerToken, WorkerId

API_VERSION = 1
MAX_WAIT_S = 60.0
MAX_BYTES = 2**62  # sizes are stored as bigint; anything larger is a bad request, not a crash
JOB_ID = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


@attrs.define
class Relocation:
    """Where this core's nodes should go instead (a blue/green deploy): every /v1/ call but
    an operator's is answered 308 with the new core's URL, which clients adopt for good."""

    url: str | None = None
    moved: Callable[[], None] = lambda: None  # wake what waits here, so it asks again and moves
    allowed_hosts: frozenset[str] = frozenset()  # https hosts nodes may be sent to; loopback always


MOVED_HEADER = "X-Videocopies-Moved"


@attrs.frozen
class JobApiServices:
    """What the API calls; the core role builds it from its container."""

    authenticator: NodeAuthenticator
    waiters: ClaimWaiters
    renew_lease: Callable[[uc.RenewLeaseCommand], Awaitable[Any]]
    checkpoint_copy: Callable[[uc.CheckpointCopyCommand], Awaitable[bool]]
    complete_job: Callable[[uc.CompleteJobCommand], Awaitable[dict[str, Any]]]
    fail_job: Callable[[uc.FailJobCommand], Awaitable[dict[str, Any]]]
    acknowledge_cancel: Callable[..., Awaitable[None]]
    inspect_held_job: Callable[..., Awaitable[uc.HeldJobView]]
    store: ObjectStore | None  # None: workers share core's storage directly, no URLs signed
    info: Callable[[], Awaitable[dict[str, Any]]]
    give_up_copy: Callable[[uc.GiveUpCopyCommand], Awaitable[bool]] | None = None
    url_ttl: timedelta = timedelta(minutes=15)
    queued: Callable[[], None] = lambda: None  # a write may have queued a message for the user
    metrics: CoreMetrics = attrs.field(factory=CoreMetrics)
    relocation: Relocation = attrs.field(factory=Relocation)


# --- wire models ---------------------------------------------------------------------------

class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


_StatName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class ClaimRequest(_Body):
    wait_s: float = Field(0.0, ge=0.0, le=MAX_WAIT_S, description="Long-poll for up to this many seconds.")
    limit: int = Field(1, ge=1, le=10)
    max_source_bytes: int | None = Field(
        None, ge=0, le=MAX_BYTES, description="Only jobs whose source fits the worker's disk."
    )
    stats: dict[_StatName, Annotated[int, Field(ge=0, le=2**53)]] | None = Field(
        None, max_length=16, description="The worker's own figures (scratch_used_bytes, scratch_files), shown in "
                                         "/metrics as videocopies_scratch{role=\"worker\"}.",
    )


class CopyToRender(BaseModel):
    index: int
    plan: dict[str, Any]


class ClaimedJobOut(BaseModel):
    job_id: str
    order_id: str
    token: str
    lease_until: datetime
    attempt: int
    source_key: str
    remaining: list[CopyToRender]


class ClaimResponse(BaseModel):
    jobs: list[ClaimedJobOut]


# PostgreSQL text cannot hold NUL: identifiers keep to a safe alphabet, free text to no NUL.
IDENTIFIER = r"^[A-Za-z0-9._:-]+$"
NO_NUL = r"^[^\x00]*$"


class LeaseBody(_Body):
    token: str = Field(min_length=1, max_length=128, pattern=IDENTIFIER)


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

    def value(self) -> CopyQuality:
        return CopyQuality(self.ssim, self.phash_distance, self.min_pair_distance, self.attempt)


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


class FailRequest(CompleteRequest):
    reason: str = Field(min_length=1, max_length=2000, pattern=NO_NUL)
    retryable: bool = True


class CancelStatus(BaseModel):
    cancel_requested: bool
    lease_until: datetime


class UploadRequest(LeaseBody):
    size: int = Field(ge=0, le=MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class SignedUrl(BaseModel):
    key: str
    url: str
    method: str
    headers: dict[str, str]
    expires_at: datetime


class NodeOut(BaseModel):
    name: str
    role: str
    scopes: list[str]


class MovedRequest(_Body):
    url: str = Field(max_length=512, pattern=r"^https?://[A-Za-z0-9.:\[\]_-]+(/[A-Za-z0-9._~/-]*)?$")


class Problem(BaseModel):
    error: str
    detail: str
    reason: str | None = None


# --- errors -----------------------------------------------------------------------------------

def _problem(status: int, error: str, detail: str, reason: str | None = None, **headers: str) -> JSONResponse:
    body = Problem(error=error, detail=detail, reason=reason).model_dump(exclude_none=True)
    return JSONResponse(body, status_code=status, headers=headers or None)


class _Unauthorized(Exception):
    pass


class _Forbidden(Exception):
    pass


_REFUSALS = {401: {"model": Problem}, 403: {"model": Problem}, 404: {"model": Problem}, 409: {"model": Problem}}


class _Relocated:
    """Once this core has handed over to another (a deploy), every node is sent there with a
    308. Plain ASGI, not `@app.middleware`: that runs each request's endpoint in a task of its
    own and streams the answer back through a channel, which cost more than many endpoints."""

    def __init__(self, app: ASGIApp, relocation: Relocation) -> None:
        self._app, self._relocation = app, relocation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        moved_to = self._relocation.url
        if moved_to and scope["type"] == "http":
            path: str = scope["path"]
            if path.startswith("/v1/") and not path.startswith("/v1/admin/"):
                headers = {"Location": moved_to + path, MOVED_HEADER: moved_to}
                await Response(status_code=308, headers=headers)(scope, receive, send)
                return
        await self._app(scope, receive, send)


def create_app(
    services: JobApiServices, edge: Any = None, control: Any = None, limits: BodyLimits | None = None
) -> FastAPI:
    """`edge`: an EdgeApiServices, to serve edge's inbox and outbox too; `control`: a
    ControlApiServices, for operators' grants, refunds and reconciliation; `limits`: the
    largest body each route takes (see guard.BODY_LIMITS)."""
    started = time.monotonic()
    app = FastAPI(
        title="videocopies core",
        version=videocopies.__version__,
        description="Core's API for nodes: the Job API for workers, and health.",
    )
    bearer = HTTPBearer(auto_error=False)

    app.add_middleware(_Relocated, relocation=services.relocation)
    app.add_middleware(Guarded, authenticate=services.authenticator.authenticate, limits=limits)  # the outer one

    @app.exception_handler(_Unauthorized)
    async def unauthorized(_request: Request, _exc: _Unauthorized) -> JSONResponse:
        return _problem(401, "unauthorized", "a valid node token is required", **{"WWW-Authenticate": "Bearer"})

    @app.exception_handler(_Forbidden)
    async def forbidden(_request: Request, exc: _Forbidden) -> JSONResponse:
        return _problem(403, "forbidden", str(exc))

    @app.exception_handler(LeaseLost)
    async def lease_lost(_request: Request, exc: LeaseLost) -> JSONResponse:
        services.metrics.refused.labels(exc.reason.value).inc()
        if exc.reason is LeaseLossReason.NOT_OWNER:
            return _problem(403, "not_your_job", "this job is held by another worker", exc.reason.value)
        return _problem(409, "lease_lost", "the lease on this job is no longer yours", exc.reason.value)

    @app.exception_handler(NotFound)
    async def not_found(_request: Request, exc: NotFound) -> JSONResponse:
        return _problem(404, "not_found", str(exc))

    @app.exception_handler(DomainError)
    async def refused(_request: Request, exc: DomainError) -> JSONResponse:
        return _problem(409, type(exc).__name__, str(exc))

    @app.exception_handler(ApplicationError)
    async def application_error(_request: Request, exc: ApplicationError) -> JSONResponse:
        return _problem(409, type(exc).__name__, str(exc))

    def node_with(scope: str | None) -> Callable[..., Awaitable[Node]]:
        """A dependency: the caller's node, which must hold `scope` (None: any live node)."""

        async def authenticated(
            request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        ) -> Node:
            node = node_of(request.scope)  # the guard checked the token before the body was read
            if node is None:
                node = await services.authenticator.authenticate(credentials.credentials if credentials else None)
            if node is None:
                raise _Unauthorized()
            if scope is not None and scope not in node.scopes:
                raise _Forbidden(f"a {node.role} node may not call this endpoint")
            return node

        return authenticated

    Worker = Annotated[Node, Depends(node_with("jobs"))]

    @app.get("/v1/nodes/me", tags=["nodes"], responses=_REFUSALS)
    async def me(node: Annotated[Node, Depends(node_with(None))]) -> NodeOut:
        """Who this token belongs to: a worker's name is its worker id."""
        return NodeOut(name=node.name, role=node.role, scopes=sorted(node.scopes))

    @app.post("/v1/admin/moved", tags=["admin"], responses=_REFUSALS)
    async def moved(body: MovedRequest, _node: Annotated[Node, Depends(node_with("admin"))]) -> dict[str, str]:
        """From now on, send every node to the core at `url` (a deploy switching to it): an
        https host among the allowed ones, or this machine (loopback)."""
        if refusal := relocation_refusal(body.url, services.relocation.allowed_hosts):
            status, reason = refusal
            return _problem(status, "relocation_refused", reason)  # type: ignore[return-value]
        services.relocation.url = body.url.rstrip("/")
        services.relocation.moved()
        return {"moved_to": services.relocation.url}

    async def reads_money(credentials: HTTPAuthorizationCredentials | None) -> bool:
        """Money figures are for a control node (the "read" scope); anyone else gets health."""
        if credentials is None:
            return False
        node = await services.authenticator.authenticate(credentials.credentials)
        return node is not None and "read" in node.scopes

    Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]

    @app.get("/metrics", tags=["health"], response_class=Response)
    async def metrics(credentials: Credentials) -> Response:
        """This core's figures in Prometheus' text format; no token needed, but the money
        figures (payments, coins bought) only with a control node's token."""
        text = await services.metrics.render(money=await reads_money(credentials))
        return Response(text, media_type=METRICS_CONTENT_TYPE)

    @app.get("/_info", tags=["health"])
    async def info(credentials: Credentials) -> dict[str, Any]:
        """Version, schema level, uptime and active leases; no token needed. With a control
        node's token, the money figures too."""
        details = await services.info()
        if await reads_money(credentials):
            details["money"] = await services.metrics.money_figures()
        return {
            "version": videocopies.__version__,
            "api": API_VERSION,
            "uptime_s": round(time.monotonic() - started, 3),
            "parked_claims": services.waiters.parked,
            "pid": os.getpid(),
            "moved_to": services.relocation.url,
            **details,
        }

    @app.post("/v1/jobs/claim", tags=["jobs"], responses=_REFUSALS)
    async def claim(body: ClaimRequest, node: Worker, request: Request) -> ClaimResponse:
        """Claim up to `limit` jobs, waiting up to `wait_s` for one; an empty list when none came."""
        if body.stats is not None:
            services.metrics.scratch_reported(
                "worker", node.name, body.stats.get("scratch_used_bytes", 0), body.stats.get("scratch_files", 0)
            )
        claiming = asyncio.ensure_future(
            services.waiters.claim(WorkerId(node.name), body.limit, body.max_source_bytes, body.wait_s)
        )
        gone = asyncio.ensure_future(_disconnected(request)) if body.wait_s > 0 else None
        try:
            if gone is not None:
                await asyncio.wait({claiming, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not claiming.done():  # the client left: stop waiting on its behalf
                    claiming.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await claiming
                    return ClaimResponse(jobs=[])
            jobs = await claiming
        finally:
            if gone is not None:
                gone.cancel()
        services.metrics.jobs_claimed([job.job_id for job in jobs])
        return ClaimResponse(jobs=[_claimed(job) for job in jobs])

    @app.post("/v1/jobs/{job_id}/renew", tags=["jobs"], responses=_REFUSALS)
    async def renew(job_id: JOB_ID, body: LeaseBody, node: Worker) -> RenewResponse:
        """Extend the lease; `cancel_requested` tells the worker to stop."""
        result = await services.renew_lease(uc.RenewLeaseCommand(JobId(job_id), OwnerToken(body.token), _wid(node)))
        return RenewResponse(lease_until=result.lease_until, cancel_requested=result.cancel_requested)

    @app.post("/v1/jobs/{job_id}/copies/{index}/checkpoint", tags=["jobs"], responses=_REFUSALS)
    async def checkpoint(
        job_id: JOB_ID, index: Annotated[int, Path(ge=0, le=99)], body: CheckpointRequest, node: Worker
    ) -> CheckpointResponse:
        """Record a verified, stored copy; it is sent to the user at once."""
        view = await services.inspect_held_job(JobId(job_id), OwnerToken(body.token), _wid(node))
        if body.object_key != copy_key(view.order_id, index, body.token):
            raise _Forbidden("a copy may only be recorded under the key issued for it")
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

    @app.post("/v1/jobs/{job_id}/copies/{index}/give-up", tags=["jobs"], responses=_REFUSALS)
    async def give_up_copy(
        job_id: JOB_ID, index: Annotated[int, Path(ge=0, le=99)], body: GiveUpRequest, node: Worker
    ) -> CheckpointResponse:
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

    @app.post("/v1/jobs/{job_id}/complete", tags=["jobs"], responses=_REFUSALS)
    async def complete(job_id: JOB_ID, body: CompleteRequest, node: Worker) -> dict[str, Any]:
        """Close a job whose every copy is recorded; a retry with the same receipt id gets the same answer."""
        result = await services.complete_job(
            uc.CompleteJobCommand(JobId(job_id), OwnerToken(body.token), body.receipt_id, _wid(node))
        )
        services.queued()
        services.metrics.job_finished(job_id, "done")
        return result

    @app.post("/v1/jobs/{job_id}/fail", tags=["jobs"], responses=_REFUSALS)
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

    @app.post("/v1/jobs/{job_id}/cancel/status", tags=["jobs"], responses=_REFUSALS)
    async def cancel_status(job_id: JOB_ID, body: LeaseBody, node: Worker) -> CancelStatus:
        """Whether the user asked to cancel (renewing tells the same)."""
        view = await services.inspect_held_job(JobId(job_id), OwnerToken(body.token), _wid(node))
        return CancelStatus(cancel_requested=view.cancel_requested, lease_until=view.lease_until)

    @app.post("/v1/jobs/{job_id}/cancel/acknowledge", tags=["jobs"], responses=_REFUSALS)
    async def acknowledge_cancel(job_id: JOB_ID, body: LeaseBody, node: Worker) -> dict[str, str]:
        """The worker stopped FFmpeg and its file operations: the job and order close."""
        await services.acknowledge_cancel(JobId(job_id), OwnerToken(body.token), _wid(node))
        services.queued()
        services.metrics.job_finished(job_id, "cancelled")
        return {"state": "cancelled"}

    @app.post("/v1/jobs/{job_id}/source/url", tags=["jobs"], responses=_REFUSALS)
    async def source_url(job_id: JOB_ID, body: LeaseBody, node: Worker) -> SignedUrl:
        """A download URL for this job's source, valid for a short while."""
        view = await services.inspect_held_job(JobId(job_id), OwnerToken(body.token), _wid(node))
        return await _signed(services.store, services.url_ttl, view.source_key, "GET", {})

    @app.post("/v1/jobs/{job_id}/copies/{index}/upload-url", tags=["jobs"], responses=_REFUSALS)
    async def upload_url(
        job_id: JOB_ID, index: Annotated[int, Path(ge=0, le=99)], body: UploadRequest, node: Worker
    ) -> SignedUrl:
        """An upload URL for copy `index`, under a key of this lease's own."""
        view = await services.inspect_held_job(JobId(job_id), OwnerToken(body.token), _wid(node))
        if index >= view.copies:
            raise NotFound("copy", f"{job_id}/{index}")
        key = copy_key(view.order_id, index, body.token)
        headers = {"x-amz-meta-sha256": body.sha256}
        return await _signed(services.store, services.url_ttl, key, "PUT", headers, sha256=body.sha256)

    if edge is not None:
        from videocopies.adapters.http.edge_api import add_edge_routes

        add_edge_routes(app, edge, node_with)
    if control is not None:
        from videocopies.adapters.http.control_api import add_control_routes

        add_control_routes(app, control, node_with)
    return app


def _wid(node: Node) -> WorkerId:
    return WorkerId(node.name)


def _claimed(job: uc.ClaimedJob) -> ClaimedJobOut:
    return ClaimedJobOut(
        job_id=job.job_id, order_id=job.order_id, token=job.token, lease_until=job.lease_until,
        attempt=job.attempt, source_key=job.source_key,
        remaining=[CopyToRender(index=index, plan=plan.to_dict()) for index, plan in job.remaining],
    )


async def _signed(
    store: ObjectStore | None, ttl: timedelta, key: str, method: str, headers: dict[str, str],
    sha256: str | None = None,
) -> SignedUrl:
    if store is None:
        raise _Forbidden("this core signs no URLs: nodes reach storage directly")
    if method == "GET":
        url = await store.presigned_url(key, ttl)
    else:
        url = await store.presigned_put_url(key, ttl, sha256=sha256)
    expires = datetime.now().astimezone() + ttl
    return SignedUrl(key=key, url=url, method=method, headers=headers, expires_at=expires)


async def _disconnected(request: Request) -> None:
    """Returns when the client hangs up (the body is already read, so only that can come)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
