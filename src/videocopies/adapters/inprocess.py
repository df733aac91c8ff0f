"""The worker's queue port served in-process by the application's use cases (the HTTP
adapter replaces it when workers run on other machines; the worker does not change)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from videocopies.application import use_cases as uc
from videocopies.application.ports import ObjectStore
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.objects.keys import copy_key
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import JobId, OwnerToken, WorkerId


class InProcessJobLeases:
    def __init__(self, cases: Any, worker_id: WorkerId) -> None:
        self._cases, self._worker = cases, worker_id

    async def claim(
        self, worker_id: WorkerId, limit: int, max_source_bytes: int | None = None
    ) -> Sequence[uc.ClaimedJob]:
        return await self._cases.claim_job()(uc.ClaimJobCommand(worker_id, limit, max_source_bytes))

    async def renew(self, job_id: JobId, token: OwnerToken) -> bool:
        renewed = await self._cases.renew_lease()(uc.RenewLeaseCommand(job_id, token, self._worker))
        return bool(renewed.cancel_requested)

    async def progress(self, job_id: JobId, token: OwnerToken, index: int, percent: int) -> None:
        await self._cases.report_progress()(uc.ReportProgressCommand(job_id, token, index, percent, self._worker))

    async def checkpoint(self, job_id: JobId, token: OwnerToken, index: int, artifact: CopyArtifact) -> bool:
        return bool(
            await self._cases.checkpoint_copy()(uc.CheckpointCopyCommand(job_id, token, index, artifact, self._worker))
        )

    async def give_up_copy(
        self, job_id: JobId, token: OwnerToken, index: int, reason: str, quality: CopyQuality | None
    ) -> bool:
        command = uc.GiveUpCopyCommand(job_id, token, index, reason, quality, self._worker)
        return bool(await self._cases.give_up_copy()(command))

    async def complete(self, job_id: JobId, token: OwnerToken, receipt_id: str) -> dict[str, Any]:
        return dict(await self._cases.complete_job()(uc.CompleteJobCommand(job_id, token, receipt_id, self._worker)))

    async def complete_then_claim(
        self, job_id: JobId, token: OwnerToken, receipt_id: str, limit: int, max_source_bytes: int | None = None
    ) -> tuple[dict[str, Any] | Exception, Sequence[uc.ClaimedJob]]:
        completion = uc.CompleteJobCommand(job_id, token, receipt_id, self._worker)
        claim = uc.ClaimJobCommand(self._worker, limit, max_source_bytes)
        (outcome,), claimed = await self._cases.complete_then_claim()(uc.CompleteThenClaimCommand([completion], claim))
        return outcome, claimed

    async def fail(
        self, job_id: JobId, token: OwnerToken, reason: str, retryable: bool, receipt_id: str
    ) -> dict[str, Any]:
        command = uc.FailJobCommand(job_id, token, reason, retryable, receipt_id, self._worker)
        return dict(await self._cases.fail_job()(command))

    async def acknowledge_cancel(self, job_id: JobId, token: OwnerToken) -> None:
        await self._cases.acknowledge_cancel()(job_id, token, self._worker)


class StoreJobFiles:
    """A worker with the object store's credentials (one machine, or trusted storage)."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    async def fetch_source(self, job: uc.ClaimedJob, path: Path) -> None:
        await self._store.get_file(job.source_key, path)

    async def store_copy(self, job: uc.ClaimedJob, index: int, path: Path) -> tuple[str, int, str]:
        key = copy_key(job.order_id, index, job.token)
        size, sha256 = await self._store.put_file(key, path)
        return key, size, sha256


class LocalDisk:
    def free_bytes(self, path: Path) -> int:
        return shutil.disk_usage(path).free
