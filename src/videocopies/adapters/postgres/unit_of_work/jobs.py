"""Jobs: claimed or loaded locked, in id order; written back at commit, fenced by the owner token
when a worker wrote under a lease, with the checkpoints added since the load."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from videocopies.adapters.postgres import mappers
from videocopies.adapters.postgres.unit_of_work.write_set import Transaction, Writes
from videocopies.domain.jobs import Job
from videocopies.domain.shared import JobId, OrderId


class PostgresJobs:
    def __init__(self, uow: Transaction, keep_seed: bool = False) -> None:
        self._uow = uow
        self._keep_seed = keep_seed  # see mappers.plans_json
        self.loaded: dict[JobId, tuple[Job, int, frozenset[int]]] = {}
        self.added: dict[JobId, Job] = {}
        self.absent: set[JobId] = set()  # prefetched and not there: no second look

    def remember(self, row: dict[str, Any]) -> Job:
        job_id = JobId(row["job_id"])
        if job_id in self.loaded:
            return self.loaded[job_id][0]
        job = mappers.job_from_row(row)
        self.loaded[job_id] = (job, job.version, frozenset(job.checkpoints))
        return job

    def known(self, job_id: JobId) -> Job | None:
        if job_id in self.added:
            return self.added[job_id]
        return self.loaded[job_id][0] if job_id in self.loaded else None

    def knows(self, job_id: JobId) -> bool:
        return job_id in self.added or job_id in self.loaded or job_id in self.absent

    async def get(self, job_id: JobId) -> Job | None:
        return (await self.get_many([job_id])).get(job_id)

    async def get_many(self, job_ids: Sequence[JobId]) -> dict[JobId, Job]:
        """The jobs not loaded yet, locked in id order and read in one round trip."""
        wanted = [job_id for job_id in dict.fromkeys(job_ids) if not self.knows(job_id)]
        if wanted:
            await self._uow.read({"jobs": wanted})
            self.absent.update(job_id for job_id in wanted if not self.knows(job_id))
        return {job_id: job for job_id in job_ids if (job := self.known(job_id)) is not None}

    async def for_order(self, order_id: OrderId) -> Job | None:
        for job in self.added.values():
            if job.order_id == order_id:
                return job
        row = await self._uow.locked_fetchone("load_job_for_order", {"order_id": order_id})
        return None if row is None else self.remember(row)

    async def add(self, job: Job) -> None:
        self.added[job.job_id] = job

    async def claimable(
        self, now: datetime, limit: int, max_source_bytes: int | None = None, *, receipts: Sequence[str] = ()
    ) -> Sequence[Job]:
        """Locked, skipping rows others hold, and read with their orders in the same round trip:
        every claimer reads a claimed job's order next."""
        claim = {"now": now, "limit": limit, "max_bytes": max_source_bytes}
        found = await self._uow.read({"claim": claim, "their_orders": True, "receipts": list(receipts)})
        return [self.loaded[JobId(job_id)][0] for job_id in found["claimed"]]

    async def expired(self, now: datetime, limit: int) -> Sequence[Job]:
        """Lock first (skipping rows others hold), then read what was locked."""
        ids = [row["job_id"] for row in await self._uow.fetchall("expired_leases", {"now": now, "limit": limit})]
        await self.get_many(ids)
        return [self.loaded[JobId(job_id)][0] for job_id in ids]

    def writes(self, now: datetime) -> Writes:
        out: Writes = [("insert_job", mappers.job_params(j, self._keep_seed)) for j in self.added.values()]
        for job, loaded, checkpointed in self.loaded.values():
            if job.version == loaded:
                continue
            params = mappers.job_change_params(job, loaded)
            if job.written_under is not None:
                out.append(("update_job_fenced", {**params, "fence": job.written_under}))
            else:
                out.append(("update_job", params))
            for index in sorted(set(job.checkpoints) - checkpointed):
                out.append(
                    ("insert_checkpoint", mappers.checkpoint_params(job.job_id, index, job.checkpoints[index], now))
                )
        return out
