"""The worker on the in-memory service with a scripted transcoder and prober: every way a
job can end leaves the working directory empty and the ledger right."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

from videocopies.adapters.inprocess import InProcessJobLeases, StoreJobFiles
from videocopies.adapters.memory.objectstore import InMemoryObjectStore
from videocopies.application import use_cases as uc
from videocopies.application.errors import UnusableMedia
from videocopies.application.ports import CopyLook, ProbeResult
from videocopies.application.worker import Worker
from videocopies.application.worker_settings import WorkerSettings, disk_needed
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import JobState
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.quality import QualityThresholds
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

USER = UserId(7)
SOURCE = "sources/7/clip.mp4"


class ScriptedTranscoder:
    """Writes a copy derived from the plan; can be made to hang until it is cancelled."""

    def __init__(self) -> None:
        self.rendered: list[tuple[int, dict]] = []
        self.started: list[int] = []  # a copy is started only after the one before is checkpointed
        self.hang_on: int | None = None
        self.interrupted = 0

    async def render(self, plan, source: Path, target: Path, **_: object) -> None:  # type: ignore[no-untyped-def]
        self.started.append(plan.copy_index)
        if plan.copy_index == self.hang_on:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.interrupted += 1
                target.unlink(missing_ok=True)
                raise
        target.write_text(json.dumps({"source": source.read_text(), "plan": plan.to_dict()}))
        self.rendered.append((plan.copy_index, plan.to_dict()))


class ScriptedProber:
    async def probe(self, path: Path, full_decode: bool = True, keep_frames: Path | None = None) -> ProbeResult:
        text = path.read_text()
        if text == "not a video":
            raise UnusableMedia("no video stream")
        if text == "slow":
            raise Slow("probing ran out of time")
        if text.startswith("{"):
            speed = json.loads(text)["plan"]["speed"]
            return ProbeResult(3.0 / speed, 720, 1280, True, 75)
        return ProbeResult(3.0, 720, 1280, True, 75)


class Slow(UnusableMedia):
    permanent = False


class Disk:
    def __init__(self, free: int = 10**12) -> None:
        self.free = free

    def free_bytes(self, path: Path) -> int:
        return self.free


class ScriptedInspector:
    """Judges copies by a script: (copy index, render attempt) -> (ssim, phash distance,
    fingerprint); anything unscripted looks fine and unlike every other copy."""

    def __init__(self, script: dict[tuple[int, int], tuple[float, float, tuple[int, ...]]] | None = None) -> None:
        self.script = script or {}
        self.inspected: list[tuple[int, int]] = []

    async def inspect(self, source: Path, copy: Path, plan, *_: Path | None) -> CopyLook:  # type: ignore[no-untyped-def]
        assert json.loads(copy.read_text())["plan"] == plan.to_dict()  # the copy rendered from this plan
        self.inspected.append((plan.copy_index, plan.attempt))
        default = (0.98, 10.0, (1 << (plan.copy_index * 8 + plan.attempt),) * 4)
        ssim, distance, fingerprint = self.script.get((plan.copy_index, plan.attempt), default)
        return CopyLook(ssim, distance, fingerprint)


class Rig:
    def __init__(self, root: Path) -> None:
        self.service = InMemoryService(settings=Settings(quote_secret=b"w" * 32))
        self.cases = self.service.use_cases
        self.store = self.service.gateways.store()
        self.clock = self.service.gateways.clock()
        self.objects = InMemoryObjectStore()
        self.objects.objects[SOURCE] = b"source video"
        self.transcoder = ScriptedTranscoder()
        self.disk = Disk()
        self.root = root

    def worker(self, name: str = "w1", inspector: ScriptedInspector | None = None) -> Worker:
        settings = WorkerSettings(WorkerId(name), self.root, renew_every_s=0.01)
        leases = InProcessJobLeases(self.cases, WorkerId(name))
        return Worker(
            leases, StoreJobFiles(self.objects), self.transcoder, ScriptedProber(), self.disk, settings,
            inspector=inspector, thresholds=QualityThresholds(min_ssim=0.9, min_phash_distance=4, min_pair_distance=2),
        )

    async def order(self, copies: int = 5) -> str:
        await self.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, timedelta(days=30)))
        size = len(self.objects.objects[SOURCE])
        quote = await self.cases.quote_order()(uc.QuoteOrderCommand(USER, SOURCE, copies, size))
        return await self.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))

    def balance(self) -> tuple[int, int, int]:
        b = self.store.accounts[USER].balance(self.clock.now())
        return b.available, b.reserved, b.debited

    def leftovers(self) -> list[Path]:
        return [p for p in self.root.rglob("*") if p.is_file()]


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "work")


async def test_a_job_is_rendered_verified_stored_checkpointed_and_cleaned_up(rig: Rig) -> None:
    order_id = await rig.order(5)
    assert await rig.worker().run_once()
    assert rig.store.orders[order_id].state is OrderState.DONE
    job = next(iter(rig.store.jobs.values()))
    assert sorted(job.checkpoints) == [0, 1, 2, 3, 4]
    assert all(rig.objects.objects[a.object_key] for a in job.checkpoints.values())
    assert [m.kind for m in rig.store.outbox.values()].count("copy_ready") == 5
    assert rig.leftovers() == []
    assert not await rig.worker().run_once()


async def test_the_next_job_comes_with_the_completion_of_the_last(rig: Rig) -> None:
    first, second = await rig.order(1), await rig.order(1)
    worker = rig.worker("a")
    assert await worker.run_once()
    assert rig.store.orders[first].state is OrderState.DONE
    # Claimed in the completion's own call: held by this worker before its next round.
    held = next(job for job in rig.store.jobs.values() if job.order_id == second)
    assert held.state is JobState.LEASED and held.lease.worker_id == "a"
    assert not await rig.worker("b").run_once()
    assert await worker.run_once()
    assert rig.store.orders[second].state is OrderState.DONE
    assert not await worker.run_once()
    assert rig.leftovers() == []


async def test_a_stopping_worker_gives_back_the_job_that_came_with_its_last_completion(rig: Rig) -> None:
    first, second = await rig.order(1), await rig.order(1)
    worker = rig.worker("a")
    assert await worker.run_once()
    worker.stop()
    await worker.give_back()
    held = next(job for job in rig.store.jobs.values() if job.order_id == second)
    assert held.state is JobState.QUEUED and held.lease is None  # not left to lapse, costing an attempt
    assert rig.store.orders[first].state is OrderState.DONE
    assert await rig.worker("b").run_once()
    assert rig.store.orders[second].state is OrderState.DONE


async def test_a_worker_stopped_while_rendering_gives_its_job_back_and_claims_no_other(rig: Rig) -> None:
    first, second = await rig.order(1), await rig.order(1)
    rig.transcoder.hang_on = 0
    worker = rig.worker("a")
    running = asyncio.create_task(worker.run_once())
    while not rig.transcoder.started:
        await asyncio.sleep(0.005)
    worker.stop()
    await asyncio.wait_for(running, 5)
    jobs = {job.order_id: job for job in rig.store.jobs.values()}
    assert jobs[first].state is JobState.QUEUED  # given back, as before
    assert jobs[second].state is JobState.QUEUED
    assert rig.leftovers() == []


async def test_cancel_stops_the_render_waits_and_settles(rig: Rig) -> None:
    order_id = await rig.order(5)
    rig.transcoder.hang_on = 2
    worker = rig.worker()
    running = asyncio.create_task(worker.run_once())
    while 2 not in rig.transcoder.started:
        await asyncio.sleep(0.005)
    for index in (0, 1):
        await rig.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, index))
    await asyncio.sleep(0.02)
    await rig.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
    await asyncio.wait_for(running, 5)
    assert rig.transcoder.interrupted == 1
    assert rig.store.orders[order_id].state is OrderState.CANCELLED
    assert rig.balance() == (42, 0, 8)
    assert rig.leftovers() == []


async def test_a_lost_lease_stops_the_worker_and_it_writes_nothing_more(rig: Rig) -> None:
    order_id = await rig.order(5)
    rig.transcoder.hang_on = 1
    running = asyncio.create_task(rig.worker("a").run_once())
    while not rig.transcoder.rendered:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)
    rig.clock.advance(timedelta(seconds=31))
    rig.transcoder.hang_on = None
    other = rig.worker("b")
    assert await other.run_once()
    await asyncio.wait_for(running, 5)
    job = next(iter(rig.store.jobs.values()))
    assert job.state is JobState.DONE and job.attempts == 2
    assert rig.store.orders[order_id].state is OrderState.DONE
    assert len(rig.store.refusals) >= 1  # the zombie's renew was refused and counted
    assert rig.leftovers() == []


async def test_resume_renders_only_missing_copies_with_the_same_plans(rig: Rig) -> None:
    order_id = await rig.order(5)
    rig.transcoder.hang_on = 2
    first = asyncio.create_task(rig.worker("a").run_once())
    while 2 not in rig.transcoder.started:
        await asyncio.sleep(0.005)
    planned = dict(rig.transcoder.rendered)
    first.cancel()  # the worker process dies
    with pytest.raises(asyncio.CancelledError):
        await first
    stored_before = dict(rig.objects.objects)
    rig.transcoder.hang_on = None
    rig.transcoder.rendered.clear()
    rig.clock.advance(timedelta(seconds=31))
    assert await rig.worker("b").run_once()
    assert [i for i, _ in rig.transcoder.rendered] == [2, 3, 4]
    job = next(iter(rig.store.jobs.values()))
    assert {i: p for i, p in rig.transcoder.rendered} | planned == {i: p.to_dict() for i, p in enumerate(job.plans)}
    assert all(rig.objects.objects[k] == v for k, v in stored_before.items())
    assert rig.store.orders[order_id].state is OrderState.DONE


async def test_a_source_that_is_not_a_video_fails_the_order_and_refunds(rig: Rig) -> None:
    rig.objects.objects[SOURCE] = b"not a video"
    order_id = await rig.order(5)
    assert await rig.worker().run_once()
    assert rig.store.orders[order_id].state is OrderState.FAILED
    assert rig.balance() == (50, 0, 0)
    assert rig.leftovers() == []


async def test_a_worker_claims_nothing_its_disk_cannot_finish(rig: Rig) -> None:
    await rig.order(5)
    rig.disk.free = 10
    assert not await rig.worker().run_once()
    job = next(iter(rig.store.jobs.values()))
    assert job.state is JobState.QUEUED and job.attempts == 0
    rig.disk.free = 10**9
    assert await rig.worker().run_once()


async def test_a_disk_that_fills_after_the_claim_gives_the_job_back(rig: Rig) -> None:
    await rig.order(5)

    class Shrinking(Disk):
        calls = 0

        def free_bytes(self, path: Path) -> int:
            self.calls += 1
            return 10**9 if self.calls == 1 else 10

    rig.disk = Shrinking()
    assert await rig.worker().run_once()
    job = next(iter(rig.store.jobs.values()))
    assert job.state is JobState.QUEUED and "not enough disk" in (job.last_error or "")
    assert rig.leftovers() == []


async def test_a_restarted_worker_removes_what_its_killed_predecessor_left(rig: Rig) -> None:
    worker = rig.worker("w9")
    (worker.home / "job-x").mkdir(parents=True)
    (worker.home / "job-x" / "copy-0.mp4").write_bytes(b"half")
    assert worker.remove_orphans() == 1
    assert rig.leftovers() == []


def test_the_disk_budget_covers_the_source_and_two_copies_with_margin() -> None:
    settings = WorkerSettings(WorkerId("w"), Path("/nonexistent"))
    assert disk_needed(100, 5, settings) == int((100 + 2 * 220) * 1.5)


async def test_a_probe_that_ran_out_of_time_is_retried_not_failed(rig: Rig) -> None:
    rig.objects.objects[SOURCE] = b"slow"
    order_id = await rig.order(5)
    assert await rig.worker().run_once()
    job = next(iter(rig.store.jobs.values()))
    assert job.state is JobState.QUEUED and rig.store.orders[order_id].state is not OrderState.FAILED
    assert rig.leftovers() == []


async def test_a_copy_that_misses_the_gate_is_rendered_again_with_the_next_variant_and_delivered(rig: Rig) -> None:
    # Copy 2's first render is a re-encode in all but name: a matcher would see the source.
    inspector = ScriptedInspector({(1, 0): (0.999, 0.5, (7, 7, 7, 7))})
    order_id = await rig.order(5)
    assert await rig.worker(inspector=inspector).run_once()
    assert inspector.inspected == [(0, 0), (1, 0), (1, 1), (2, 0), (3, 0), (4, 0)]
    job = next(iter(rig.store.jobs.values()))
    assert [i for i, _ in rig.transcoder.rendered] == [0, 1, 1, 2, 3, 4]
    assert rig.transcoder.rendered[2][1] == job.plans[1].next_variant().to_dict()
    assert job.checkpoints[1].quality is not None and job.checkpoints[1].quality.attempt == 1
    assert job.checkpoints[1].quality.phash_distance == 10.0
    assert job.checkpoints[0].quality.min_pair_distance is None  # the first copy has no other to match
    assert job.checkpoints[2].quality.min_pair_distance is not None
    assert rig.store.orders[order_id].state is OrderState.DONE
    assert [m.kind for m in rig.store.outbox.values()].count("copy_ready") == 5
    assert rig.leftovers() == []


async def test_a_copy_that_misses_the_gate_three_times_is_given_up_not_delivered_not_charged(rig: Rig) -> None:
    # Every render of copy 1 looks noticeably different from the source.
    inspector = ScriptedInspector({(0, attempt): (0.5, 10.0, (attempt,) * 4) for attempt in range(3)})
    order_id = await rig.order(5)
    assert rig.balance() == (30, 20, 0)
    assert await rig.worker(inspector=inspector).run_once()
    assert [a for i, a in inspector.inspected if i == 0] == [0, 1, 2]  # rendered at most twice again
    order = rig.store.orders[order_id]
    assert order.state is OrderState.DONE
    assert order.copies[0].state is CopyState.DROPPED
    job = next(iter(rig.store.jobs.values()))
    assert job.checkpoints[0].is_given_up and job.checkpoints[0].failure == "looks_different"
    assert job.checkpoints[0].quality is not None and job.checkpoints[0].quality.attempt == 2
    kinds = [m.kind for m in rig.store.outbox.values()]
    assert kinds.count("copy_ready") == 4  # copy 1 is never sent
    (failed,) = [m for m in rig.store.outbox.values() if m.kind == "copy_failed"]
    assert failed.payload["index"] == 0 and failed.payload["reason"] == "looks_different"
    assert failed.payload["returned"] == 4 and failed.payload["tries"] == 3
    assert rig.balance() == (34, 16, 0)  # its price went back at once
    for index in range(1, 5):
        await rig.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, index))
    assert rig.balance() == (34, 0, 16)  # four copies charged, the given-up one never
    assert rig.leftovers() == []


async def test_a_copy_almost_the_same_as_another_copy_is_rendered_again(rig: Rig) -> None:
    same = (0.98, 10.0, (0xFF, 0xFF, 0xFF, 0xFF))
    inspector = ScriptedInspector({(0, 0): same, (1, 0): same})
    await rig.order(5)
    assert await rig.worker(inspector=inspector).run_once()
    assert (1, 1) in inspector.inspected and (0, 1) not in inspector.inspected
    job = next(iter(rig.store.jobs.values()))
    assert job.checkpoints[1].quality.attempt == 1 and job.checkpoints[1].quality.min_pair_distance >= 2


async def test_a_copy_made_after_a_takeover_keeps_away_from_the_copies_made_before_it(rig: Rig) -> None:
    # Copy 2's first render, by the worker that takes the job over, looks exactly like copy 0,
    # which the dead worker made: only the checkpoint remembers what copy 0 looks like.
    same = (0.98, 10.0, (0xF0F0, 0xF0F0, 0xF0F0, 0xF0F0))
    await rig.order(5)
    rig.transcoder.hang_on = 2
    first = asyncio.create_task(rig.worker("a", inspector=ScriptedInspector({(0, 0): same})).run_once())
    while 2 not in rig.transcoder.started:
        await asyncio.sleep(0.005)
    first.cancel()  # the worker process dies with copies 0 and 1 checkpointed
    with pytest.raises(asyncio.CancelledError):
        await first
    rig.transcoder.hang_on = None
    rig.clock.advance(timedelta(seconds=31))
    inspector = ScriptedInspector({(2, 0): same})
    assert await rig.worker("b", inspector=inspector).run_once()
    assert (2, 0) in inspector.inspected and (2, 1) in inspector.inspected  # rendered again
    job = next(iter(rig.store.jobs.values()))
    assert job.checkpoints[0].quality.fingerprint == same[2]
    assert job.checkpoints[2].quality.attempt == 1 and job.checkpoints[2].quality.min_pair_distance >= 2


async def test_a_copy_made_before_a_takeover_that_cannot_be_compared_is_passed_over(rig: Rig) -> None:
    # Copy 0 was looked at in 3 moments (a worker of another release); this one looks in 4.
    await rig.order(5)
    rig.transcoder.hang_on = 1
    first = asyncio.create_task(
        rig.worker("a", inspector=ScriptedInspector({(0, 0): (0.98, 10.0, (1, 2, 3))})).run_once()
    )
    while 1 not in rig.transcoder.started:
        await asyncio.sleep(0.005)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    rig.transcoder.hang_on = None
    rig.clock.advance(timedelta(seconds=31))
    assert await rig.worker("b", inspector=ScriptedInspector()).run_once()
    job = next(iter(rig.store.jobs.values()))
    assert job.state is JobState.DONE and job.checkpoints[1].quality.min_pair_distance is None
