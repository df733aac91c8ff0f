"""The worker tells core how far each copy is while it renders; core turns the figures into
the order's progress message (few rows: once per tenth of a copy, once per delivered copy)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_worker import USER, Rig, ScriptedProber

from videocopies.adapters.inprocess import InProcessJobLeases, StoreJobFiles
from videocopies.application import use_cases as uc
from videocopies.application.worker import Worker
from videocopies.application.worker_settings import WorkerSettings
from videocopies.domain.shared import WorkerId


class SlowTranscoder:
    """Reports its way through each render in steps, as FFmpeg's -progress does."""

    def __init__(self, steps: int = 20) -> None:
        self.steps = steps

    async def render(self, plan, source: Path, target: Path, *, on_progress=None, **_: object) -> None:  # type: ignore[no-untyped-def]
        for step in range(self.steps + 1):
            if on_progress is not None:
                on_progress(step / self.steps)
            await asyncio.sleep(0.005)
        target.write_text(f"copy {plan.copy_index} of {source.read_text()}")


def worker(rig: Rig, every_s: float) -> Worker:
    settings = WorkerSettings(WorkerId("w1"), rig.root, renew_every_s=0.05, progress_every_s=every_s)
    leases = InProcessJobLeases(rig.cases, WorkerId("w1"))
    return Worker(leases, StoreJobFiles(rig.objects), SlowTranscoder(), ScriptedProber(), rig.disk, settings)


def progress_rows(rig: Rig) -> list[dict]:
    return [m.payload for m in rig.store.outbox.values() if m.kind == "progress"]


async def test_each_copy_reports_how_far_it_is_while_it_renders(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "work")
    order_id = await rig.order(5)
    assert await worker(rig, every_s=0.01).run_once()
    rows = progress_rows(rig)
    assert {r["index"] for r in rows} == {0, 1, 2, 3, 4}
    assert all(r["order_id"] == order_id and r["copies"] == 5 and r["total"] == 20 for r in rows)
    for index in range(5):
        figures = [r["percent"] for r in rows if r["index"] == index]
        assert len(figures) > 1 and figures == sorted(figures)  # it moves, forwards
        assert len({f // 10 for f in figures}) == len(figures)  # once per tenth at most
    # The rows are written before the order closes, and none after it.
    kinds = [m.kind for m in rig.store.outbox.values() if m.user_id == USER]
    assert kinds[-1] == "order_closed"


async def test_a_slow_reporter_sends_fewer_figures(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "work")
    await rig.order(5)
    assert await worker(rig, every_s=60).run_once()
    assert progress_rows(rig) == []  # nothing inside the interval: the renders were quicker


async def test_a_delivered_copy_moves_the_progress_message_and_a_closed_order_does_not(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "work")
    order_id = await rig.order(5)
    rig.transcoder.hang_on = 1
    w = rig.worker()
    running = asyncio.create_task(w.run_once())
    while 1 not in rig.transcoder.started:
        await asyncio.sleep(0.005)
    await rig.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, 0))
    await rig.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, 0))  # reported again: said once
    delivered = [r for r in progress_rows(rig) if r["index"] is None]
    assert delivered == [{"order_id": order_id, "copies": 5, "total": 20, "delivered": 1, "index": None,
                          "percent": None}]
    await rig.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
    await asyncio.wait_for(running, 5)
    closed = [m.payload for m in rig.store.outbox.values() if m.kind == "order_closed"]
    assert closed[0]["state"] == "cancelled" and closed[0]["charged"] == 4


class InFlight(InProcessJobLeases):
    """Renewals and progress reports that take a while to reach core, and reach it even when
    the worker stops waiting for them: what a request already sent over HTTP does."""

    def __init__(self, *args: object, delay_s: float = 0.05) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.delay_s = delay_s
        self._sent: set[asyncio.Task[object]] = set()

    async def _arrive(self, call):  # type: ignore[no-untyped-def]
        async def later():  # type: ignore[no-untyped-def]
            await asyncio.sleep(self.delay_s)
            return await call()
        task = asyncio.ensure_future(later())
        self._sent.add(task)
        task.add_done_callback(self._sent.discard)
        return await asyncio.shield(task)

    async def renew(self, job_id, token):  # type: ignore[no-untyped-def]
        return await self._arrive(lambda: InProcessJobLeases.renew(self, job_id, token))

    async def progress(self, job_id, token, index, percent):  # type: ignore[no-untyped-def]
        return await self._arrive(lambda: InProcessJobLeases.progress(self, job_id, token, index, percent))

    async def landed(self) -> None:
        while self._sent:
            await asyncio.gather(*self._sent, return_exceptions=True)


async def test_a_report_or_renewal_in_flight_lands_before_the_job_ends_so_none_is_refused(tmp_path: Path) -> None:
    """The job's last word (its completion) goes after whatever the worker already sent about it;
    otherwise that report reaches core after the lease is gone and counts as a refused write,
    the figure operators read as zombie workers."""
    rig = Rig(tmp_path / "work")
    for _ in range(3):
        await rig.order(5)
    leases = InFlight(rig.cases, WorkerId("w1"))
    settings = WorkerSettings(WorkerId("w1"), rig.root, renew_every_s=0.01, progress_every_s=0.01)
    w = Worker(leases, StoreJobFiles(rig.objects), SlowTranscoder(steps=4), ScriptedProber(), rig.disk, settings)
    for _ in range(3):
        assert await w.run_once()
    await leases.landed()
    assert [m.payload["state"] for m in rig.store.outbox.values() if m.kind == "order_closed"] == ["done"] * 3
    assert rig.store.refusals == []
