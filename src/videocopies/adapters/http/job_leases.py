"""A worker's ports over core's Job API: its leases (claim, renew, progress, checkpoint,
complete, fail, cancel) and its files, moved through the URLs core signs (no storage
credentials on the worker). Each call goes through `CoreClient` (client.py), which retries
what failed on the network with the very same request."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from videocopies.adapters.http.answers import CoreRefused, refusal_of
from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.objectstore.files import hash_file
from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.domain.jobs import CopyArtifact, LeaseLost
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import JobId, OwnerToken, WorkerId


class HttpJobLeases:
    """The JobLeases port over the Job API. `claim` long-polls core for up to `wait_s`; with
    `stats`, each claim and each renewal also carries the worker's figures (its scratch use, CPU,
    RSS, bytes moved) for core's /metrics, so they stay fresh through a long job."""

    def __init__(
        self,
        core: CoreClient,
        wait_s: float = 20.0,
        stats: Callable[[], dict[str, int]] | None = None,
        claim_ids: Callable[[], str] = lambda: f"claim-{uuid.uuid4().hex}",
    ) -> None:
        self._core, self._wait_s, self._stats, self._claim_ids = core, wait_s, stats, claim_ids
        self._renewals_carry_stats = stats is not None
        self._qualities_carry_looks = True
        self._claims_carry_completions = True
        self._claims_carry_receipts = True

    async def claim(
        self, worker_id: WorkerId, limit: int, max_source_bytes: int | None = None
    ) -> Sequence[uc.ClaimedJob]:
        """Each claim names a receipt of its own, and a retry (the answer lost on the network)
        asks for it without waiting: it gets the jobs the lost answer named, if any."""
        body = self._claim_body(limit, max_source_bytes, self._wait_s)
        if self._claims_carry_receipts:
            body["receipt_id"] = self._claim_ids()
            try:
                answer = await self._claim(body, resend=body | {"wait_s": 0.0})
            except CoreRefused as refused:
                if refused.status != 422:
                    raise
                # A core older than claim receipts refuses the field: claims go without it from now on.
                self._claims_carry_receipts = False
                del body["receipt_id"]
                answer = await self._claim(body)
        else:
            answer = await self._claim(body)
        return [uc.ClaimedJob.from_record(job) for job in answer["jobs"]]

    async def complete_then_claim(
        self, job_id: JobId, token: OwnerToken, receipt_id: str, limit: int, max_source_bytes: int | None = None
    ) -> tuple[dict[str, Any] | Exception, Sequence[uc.ClaimedJob]]:
        """One call, no wait: the job completed and the next claimed in core's one transaction."""
        if self._claims_carry_completions:
            body = self._claim_body(limit, max_source_bytes, 0.0)
            body["complete"] = {"job_id": job_id, "token": token, "receipt_id": receipt_id}
            try:
                answer = await self._claim(body)
            except CoreRefused as refused:
                if refused.status != 422:
                    raise
                # A core older than this field refuses it: complete, then claim, as before it.
                self._claims_carry_completions = False
            else:
                claimed = [uc.ClaimedJob.from_record(job) for job in answer["jobs"]]
                if answer.get("refused") is None:
                    return dict(answer["completed"]), claimed
                # The refusal as the job's own complete call would have raised it.
                body = {key: value for key, value in answer["refused"].items() if key != "status"}
                return refusal_of(answer["refused"]["status"], body, f"/v1/jobs/{job_id}/complete"), claimed
        try:
            outcome: dict[str, Any] | Exception = await self.complete(job_id, token, receipt_id)
        except (LeaseLost, NotFound, CoreRefused) as refused_alone:
            outcome = refused_alone
        answer = await self._claim(self._claim_body(limit, max_source_bytes, 0.0))
        return outcome, [uc.ClaimedJob.from_record(job) for job in answer["jobs"]]

    def _claim_body(self, limit: int, max_source_bytes: int | None, wait_s: float) -> dict[str, Any]:
        body: dict[str, Any] = {"wait_s": wait_s, "limit": limit, "max_source_bytes": max_source_bytes}
        if self._stats is not None:
            body["stats"] = self._stats()
        return body

    async def _claim(self, body: dict[str, Any], resend: dict[str, Any] | None = None) -> Any:
        return await self._core.call("POST", "/v1/jobs/claim", body, timeout=body["wait_s"] + 15.0, resend=resend)

    async def renew(self, job_id: JobId, token: OwnerToken) -> bool:
        path = f"/v1/jobs/{job_id}/renew"
        if self._stats is not None and self._renewals_carry_stats:
            try:
                answer = await self._core.call("POST", path, {"token": token, "stats": self._stats()})
                return bool(answer["cancel_requested"])
            except CoreRefused as refused:
                if refused.status != 422:
                    raise
                # A core older than figures on renewals refuses the field: they go with claims only.
                self._renewals_carry_stats = False
        answer = await self._core.call("POST", path, {"token": token})
        return bool(answer["cancel_requested"])

    async def progress(self, job_id: JobId, token: OwnerToken, index: int, percent: int) -> None:
        body = {"token": token, "percent": percent}
        await self._core.call("POST", f"/v1/jobs/{job_id}/copies/{index}/progress", body)

    async def checkpoint(self, job_id: JobId, token: OwnerToken, index: int, artifact: CopyArtifact) -> bool:
        body = {
            "token": token, "object_key": artifact.object_key, "size": artifact.size, "sha256": artifact.sha256,
            "duration_s": artifact.duration_s, "width": artifact.width, "height": artifact.height,
        }
        path = f"/v1/jobs/{job_id}/copies/{index}/checkpoint"
        return bool((await self._with_quality(path, body, artifact.quality))["recorded"])

    async def give_up_copy(
        self, job_id: JobId, token: OwnerToken, index: int, reason: str, quality: CopyQuality | None
    ) -> bool:
        path = f"/v1/jobs/{job_id}/copies/{index}/give-up"
        return bool((await self._with_quality(path, {"token": token, "reason": reason}, quality))["recorded"])

    async def _with_quality(self, path: str, body: dict[str, Any], quality: CopyQuality | None) -> Any:
        if quality is None:
            return await self._core.call("POST", path, body | {"quality": None})
        figures = quality.to_dict()
        if self._qualities_carry_looks:
            try:
                return await self._core.call("POST", path, body | {"quality": figures})
            except CoreRefused as refused:
                if refused.status != 422:
                    raise
        # A core older than fingerprints refuses the field (422): the figures go without it, and
        # once that is taken, without it from then on.
        figures.pop("fingerprint")
        answer = await self._core.call("POST", path, body | {"quality": figures})
        self._qualities_carry_looks = False
        return answer

    async def complete(self, job_id: JobId, token: OwnerToken, receipt_id: str) -> dict[str, Any]:
        body = {"token": token, "receipt_id": receipt_id}
        return dict(await self._core.call("POST", f"/v1/jobs/{job_id}/complete", body))

    async def fail(
        self, job_id: JobId, token: OwnerToken, reason: str, retryable: bool, receipt_id: str
    ) -> dict[str, Any]:
        reason = reason.replace("\x00", "")[:2000] or "failed"  # core stores it as text
        body = {"token": token, "receipt_id": receipt_id, "reason": reason, "retryable": retryable}
        return dict(await self._core.call("POST", f"/v1/jobs/{job_id}/fail", body))

    async def acknowledge_cancel(self, job_id: JobId, token: OwnerToken) -> None:
        await self._core.call("POST", f"/v1/jobs/{job_id}/cancel/acknowledge", {"token": token})


class SignedUrlJobFiles:
    """A worker without storage credentials: core signs a URL for each of the job's objects."""

    def __init__(self, core: CoreClient) -> None:
        self._core = core

    async def fetch_source(self, job: uc.ClaimedJob, path: Path) -> None:
        signed = await self._core.call("POST", f"/v1/jobs/{job.job_id}/source/url", {"token": job.token})
        await self._core.download(signed["url"], signed["headers"], path)

    async def store_copy(self, job: uc.ClaimedJob, index: int, path: Path) -> tuple[str, int, str]:
        size, sha256 = await asyncio.to_thread(hash_file, path)
        body = {"token": job.token, "size": size, "sha256": sha256}
        signed = await self._core.call("POST", f"/v1/jobs/{job.job_id}/copies/{index}/upload-url", body)
        await self._core.upload(signed["url"], signed["headers"], path, size)
        return signed["key"], size, sha256
