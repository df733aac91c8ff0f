"""The chaos soak, short, on a durable PostgreSQL: a dozen orders and a few coin purchases while
every kind of fault is injected at least once, PostgreSQL's SIGKILL twice a round; nothing is
lost, charged twice, charged undelivered, written by a zombie, left on disk or left dangling
in storage, the coin ledger adds up, nothing acknowledged before a SIGKILL is missing after it,
and the drain (every sent quote's Confirm taken off, then retention 0) brings the transient rows
and stored objects back to their start. `bench/soak.py` runs the long one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from soak import FAULTS, MUST_BE_ZERO, SoakPlan, soak  # noqa: E402


@pytest.mark.slow
@pytest.mark.alone  # its faults' timings and acknowledgements as in a serial run, on an otherwise idle machine
def test_a_short_durable_soak_under_every_fault_keeps_the_books_and_what_it_acknowledged(tmp_path: Path) -> None:
    plan = SoakPlan(orders=12, users=4, workers=2, seed=7, fault_every_s=1.5, in_flight=6, settle_timeout_s=240,
                    payments=3, faults=(*FAULTS, "postgres_killed"))
    figures = soak(plan, tmp_path)
    summary = {k: v for k, v in figures.items() if k != "log_tail"}
    print(json.dumps(summary, default=str))  # the figures, with -s
    assert figures["durable"], summary
    assert figures["orders"] == 12 and figures["final"] == 12, summary
    assert "growth_error" not in figures, summary
    assert {k: figures[k] for k in MUST_BE_ZERO} == dict.fromkeys(MUST_BE_ZERO, 0), summary
    assert figures["fault_errors"] == [], summary
    injected = {kind for kind, n in figures["faults"].items() if n}
    skipped = {"disk_filled"} if any("disk_filled skipped" in note for note in figures["notes"]) else set()
    assert injected == set(FAULTS) - skipped, summary
    assert figures["faults"]["postgres_killed"] >= 2, summary
    assert figures["copies_delivered"] > 0, summary
    # The users' quote screens went out through edge, so core kept their Confirm buttons, which the
    # drain took off (none was confirmed by a press, whose reply would have forgotten its button).
    assert 0 < figures["growth"]["load_end"]["lapsing_buttons"] <= figures["outbox_messages"]["screen:quote"], summary
    assert figures["growth"]["lapsed"]["lapsed"] == figures["growth"]["load_end"]["lapsing_buttons"], summary
    acknowledged = figures["acknowledged"]
    assert acknowledged["reports"] > 0 and acknowledged["payments"] > 0, summary
