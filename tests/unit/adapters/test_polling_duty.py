"""Edge polls Telegram only while core grants it the duty, and stops on its own clock before
core could hand the duty to another edge."""

from __future__ import annotations

import asyncio
import time

import httpx

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.telegram.duty import PollingDuty


def _core(answers: list[object]) -> CoreClient:
    """Answers the duty requests in turn; an exception stands for core being unreachable."""

    def handler(request: httpx.Request) -> httpx.Response:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(200, json=answer)

    return CoreClient("http://core", "edge.secret", retry_for_s=0.0, transport=httpx.MockTransport(handler))


def _granted(ttl_s: float, held: bool = True, holder: str = "edge-a") -> dict[str, object]:
    return {"held": held, "holder": holder, "lease_until": "2030-01-01T00:00:00Z", "ttl_s": ttl_s, "term": 1}


async def _run(core: CoreClient, ttl_s: float, stop_after: float) -> tuple[float, int]:
    """How long `work` ran, and how many times it started."""
    duty = PollingDuty(core, "t" * 32, margin_s=0.3, standby_poll_s=0.05)
    stop, ran = asyncio.Event(), []

    async def work(lapse: asyncio.Event) -> None:
        began = time.monotonic()
        await lapse.wait()
        ran.append(time.monotonic() - began)

    asyncio.get_running_loop().call_later(stop_after, stop.set)
    await duty.run(stop, work)
    return (ran[0] if ran else 0.0), duty.terms


async def test_work_stops_when_another_edge_holds_the_duty() -> None:
    ran, terms = await _run(_core([_granted(0.9), _granted(0.9, held=False, holder="edge-b")]), 0.9, 2.0)
    assert terms == 1 and 0.2 < ran < 0.6  # stopped at the first renewal, a third of the lease in


async def test_work_stops_before_the_lease_runs_out_when_core_is_unreachable() -> None:
    ran, terms = await _run(_core([_granted(1.5), httpx.ConnectError("core gone")]), 1.5, 3.0)
    assert terms == 1 and ran <= 1.5 - 0.3 + 0.1  # within its lease minus the margin


async def test_a_standby_never_works_while_the_duty_is_held_elsewhere() -> None:
    ran, terms = await _run(_core([_granted(0.9, held=False, holder="edge-b")]), 0.9, 0.5)
    assert (ran, terms) == (0.0, 0)
