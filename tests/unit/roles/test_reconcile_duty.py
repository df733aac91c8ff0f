"""Reconciliation on two cores: each runs the loop, only the holder of the
`reconcile-payments` duty asks the provider; once the holder hands the duty on (a core
stopping), the other one reconciles at its next pass."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from videocopies.adapters.memory import ManualClock
from videocopies.adapters.memory.duties import InMemoryDutyLeases
from videocopies.application.duties import HoldDuty
from videocopies.runtime.core_loops import RECONCILE_DUTY, holding, reconcile_payments


async def test_only_the_duty_holder_reconciles_and_the_other_core_takes_over_when_it_is_handed_on() -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    hold = HoldDuty(InMemoryDutyLeases(), clock, timedelta(seconds=30))
    passes: dict[str, int] = {"a": 0, "b": 0}
    stops = {"a": asyncio.Event(), "b": asyncio.Event()}

    def core(name: str):  # type: ignore[no-untyped-def]
        async def reconcile() -> SimpleNamespace:
            passes[name] += 1
            return SimpleNamespace(report=SimpleNamespace(clean=True))

        return reconcile_payments(reconcile, stops[name], 0.01, held=holding(hold, RECONCILE_DUTY, f"token-{name}" * 3,
                                                                      clock))

    loops = {name: asyncio.ensure_future(core(name)) for name in passes}
    await asyncio.sleep(0.2)
    first = "a" if passes["a"] else "b"
    other = "b" if first == "a" else "a"
    assert passes[first] > 3 and passes[other] == 0
    stops[first].set()  # the holder stops, then hands its duty on, as Core.stop does
    await loops[first]
    assert await hold.release(RECONCILE_DUTY, f"token-{first}" * 3)
    await asyncio.sleep(0.2)
    stops[other].set()
    await loops[other]
    assert passes[other] > 3  # it took the duty at its next pass, not after the 30 s lease
