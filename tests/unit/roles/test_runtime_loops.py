"""Core's loops and the background they run in, on the event loop alone: each pass does its
work, a failing pass does not end the loop, and a stop ends every loop after its pass."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from videocopies.runtime.core_loops import reconcile_payments, sweep
from videocopies.runtime.lifecycle import Background


async def test_the_sweep_takes_back_leases_every_pass_and_closes_coins_every_nth() -> None:
    passes: list[str] = []
    stop = asyncio.Event()
    expired: list[int] = []

    async def expire_leases() -> int:
        passes.append("leases")
        if passes.count("leases") == 2:
            raise ConnectionError("the database restarted")  # one pass fails; the loop goes on
        if passes.count("leases") == 5:
            stop.set()
        return 1

    async def expire_coins() -> int:
        passes.append("coins")
        return 0

    await asyncio.wait_for(sweep(expire_leases, expire_coins, stop, every_s=0.01, coins_every_s=0.03,
                                 leases_expired=expired.append), timeout=5)

    assert passes.count("leases") == 5
    assert passes.count("coins") == 2  # the passes 0 and 3, not the one that failed before it
    assert expired == [1, 1, 1, 1]


async def test_the_sweep_opens_no_transaction_while_nothing_has_lapsed() -> None:
    stop = asyncio.Event()
    looks: list[bool] = []

    async def lapsed() -> bool:
        looks.append(False)
        if len(looks) == 3:
            stop.set()
        return False

    async def never() -> int:
        raise AssertionError("no lease lapsed: nothing to take back")

    async def no_coins() -> int:
        return 0

    await asyncio.wait_for(sweep(never, no_coins, stop, every_s=0.01, lapsed=lapsed), timeout=5)

    assert len(looks) == 3


async def test_reconciliation_runs_after_each_period_and_wakes_the_senders() -> None:
    stop = asyncio.Event()
    woken: list[str] = []
    runs = 0

    async def reconcile() -> SimpleNamespace:
        nonlocal runs
        runs += 1
        if runs == 2:
            raise TimeoutError("the provider is away")
        if runs == 3:
            stop.set()
        return SimpleNamespace(report=SimpleNamespace(clean=True), lines=list)

    await asyncio.wait_for(reconcile_payments(reconcile, stop, 0.01, lambda: woken.append("queued")), timeout=5)

    assert runs == 3
    assert woken == ["queued", "queued"]  # not after the failed run


async def test_background_stops_every_loop_after_its_pass() -> None:
    background = Background()
    finished: list[str] = []

    async def loop(name: str, stop: asyncio.Event) -> None:
        await stop.wait()
        await asyncio.sleep(0.01)  # the pass in hand ends first
        finished.append(name)

    background.start(lambda stop: loop("sweep", stop))
    background.start(lambda stop: loop("inbox", stop))
    await asyncio.sleep(0.02)
    assert finished == []

    await asyncio.wait_for(background.stop(), timeout=5)

    assert sorted(finished) == ["inbox", "sweep"]
