"""The chaos soak, short: a dozen orders while every kind of fault is injected at least once;
nothing is lost, charged twice, charged undelivered, written by a zombie, left on disk or
left dangling in storage, and the coin ledger adds up. `bench/soak.py` runs the long one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from soak import FAULTS, MUST_BE_ZERO, SoakPlan, soak  # noqa: E402


@pytest.mark.slow
def test_a_short_soak_under_every_fault_keeps_the_books(tmp_path: Path) -> None:
    plan = SoakPlan(orders=12, users=4, workers=2, seed=7, fault_every_s=1.5, in_flight=6, settle_timeout_s=240)
    figures = soak(plan, tmp_path)
    summary = {k: v for k, v in figures.items() if k != "log_tail"}
    assert figures["orders"] == 12 and figures["final"] == 12, summary
    assert {k: figures[k] for k in MUST_BE_ZERO} == dict.fromkeys(MUST_BE_ZERO, 0), summary
    assert figures["fault_errors"] == [], summary
    injected = {kind for kind, n in figures["faults"].items() if n}
    skipped = {"disk_filled"} if any("disk_filled skipped" in note for note in figures["notes"]) else set()
    assert injected == set(FAULTS) - skipped, summary
    assert figures["copies_delivered"] > 0, summary
