"""A worker counts what it did since it started (the figures it reports to core with each claim):
the copies it stored and the bytes it moved, and nothing for a copy it did not store."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_worker import SOURCE, Rig, ScriptedInspector

from videocopies.application.worker_figures import WorkerFigures
from videocopies.domain.quality import MAX_RERENDERS


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "work")


async def test_the_copies_stored_and_the_bytes_moved_add_up_over_jobs(rig: Rig) -> None:
    worker = rig.worker()
    assert worker.figures == WorkerFigures()
    await rig.order(5)
    await rig.order(1)
    assert await worker.run_once() and await worker.run_once()
    stored = [a for job in rig.store.jobs.values() for a in job.checkpoints.values()]
    assert worker.figures == WorkerFigures(
        copies_made=6, downloaded_bytes=2 * len(rig.objects.objects[SOURCE]),
        uploaded_bytes=sum(len(rig.objects.objects[a.object_key]) for a in stored),
    )
    assert len(stored) == 6 and worker.figures.uploaded_bytes > 0


async def test_a_copy_given_up_at_the_quality_gate_is_not_counted(rig: Rig) -> None:
    alike = (0.99, 1.0, (0, 0, 0, 0))  # too close to its source on every render
    inspector = ScriptedInspector({(1, attempt): alike for attempt in range(MAX_RERENDERS + 1)})
    worker = rig.worker(inspector=inspector)
    await rig.order(5)
    assert await worker.run_once()
    assert worker.figures.copies_made == 4
    assert worker.figures.downloaded_bytes == len(rig.objects.objects[SOURCE])
