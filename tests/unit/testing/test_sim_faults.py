"""The Bot API's own failures, injected by the simulator: 502s and slow answers, repeatable by seed,
seen through the ASGI app (the fast path in the HTTP protocol is checked in test_bot_simulator.py)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from videocopies.testing.telegram_simulator import LAX, Settings, SimulatorState, create_app
from videocopies.testing.telegram_simulator.state import BAD_GATEWAY, SLOW
from videocopies.testing.telegram_simulator.users import create_user

BAD_GATEWAY_ANSWER = {"ok": False, "error_code": 502, "description": "Bad Gateway"}


@pytest.fixture
def make_state(tmp_path):
    made: list[SimulatorState] = []

    def make(**settings) -> SimulatorState:
        made.append(SimulatorState(Settings(**settings), files_dir=tmp_path / str(len(made))))
        return made[-1]

    yield make
    for state in made:
        state.close()


@contextlib.asynccontextmanager
async def client_for(state: SimulatorState) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(state)), base_url="http://sim") as c:
        yield c


def test_the_same_seed_meets_the_same_faults(make_state):
    draws = [[s.draw_fault() for _ in range(5000)] for s in (make_state(), make_state(), make_state(seed=7))]
    assert draws[0] == draws[1] != draws[2]
    for kind in (BAD_GATEWAY, SLOW):  # 1 % each by default: 50 expected in 5000
        assert 25 <= draws[0].count(kind) <= 80
    state = make_state()
    assert state.faults == 0
    for _ in range(5000):
        state.draw_fault()
    assert (state.faults, state.slow_answers) == (
        draws[0].count(BAD_GATEWAY) + draws[0].count(SLOW), draws[0].count(SLOW),
    )


def test_a_call_that_must_not_wait_is_never_slow_and_uses_its_draw_all_the_same(make_state):
    waiting, other = make_state(), make_state()
    for _ in range(3000):
        drawn, seen = waiting.draw_fault(may_wait=False), other.draw_fault()
        assert drawn == (BAD_GATEWAY if seen == BAD_GATEWAY else None)
    assert waiting.slow_answers == 0 < waiting.faults


def test_no_rates_no_draws(make_state):
    state = make_state(**LAX)
    assert {state.draw_fault() for _ in range(1000)} == {None}
    assert state.faults == 0


async def test_a_faulty_call_gets_502_before_anything_is_done(make_state):
    state = make_state(fault_rate=1.0, slow_rate=0.0)
    bot = state.create_bot()
    user = create_user(state, bot)
    user.send_text("/start")
    async with client_for(state) as client:
        answer = await client.post(f"/bot{bot.token}/sendMessage", json={"chat_id": user.id, "text": "hi"})
        assert (answer.status_code, answer.json()) == (502, BAD_GATEWAY_ANSWER)
        polled = await client.get(f"/bot{bot.token}/getUpdates")
        assert (polled.status_code, polled.json()) == (502, BAD_GATEWAY_ANSWER)
        fetched = await client.get(f"/file/bot{bot.token}/videos/file_1.mp4")
        assert fetched.status_code == 502
        stats = (await client.get("/_sim/stats")).json()  # the control endpoints never fail
    assert user.received == [] and len(bot.pending) == 1
    assert (stats["faults"], stats["slow_answers"], stats["delivered"]) == (3, 0, 0)


async def test_a_slow_call_is_answered_late_but_a_long_poll_is_not(make_state):
    state = make_state(fault_rate=0.0, slow_rate=1.0, slow_s=0.3)
    bot = state.create_bot()
    user = create_user(state, bot)
    user.send_text("/start")
    async with client_for(state) as client:
        started = time.monotonic()
        answer = await client.post(f"/bot{bot.token}/sendMessage", json={"chat_id": user.id, "text": "hi"})
        assert answer.json()["ok"] is True and time.monotonic() - started >= 0.3
        started = time.monotonic()
        polled = await client.get(f"/bot{bot.token}/getUpdates")
        assert len(polled.json()["result"]) == 1 and time.monotonic() - started < 0.3
    assert (state.faults, state.slow_answers) == (1, 1)


async def test_stats_count_what_a_load_run_checks(make_state):
    state = make_state(**LAX | {"chat_rate": 1.0, "chat_burst": 1})  # flood control on, no faults
    bot = state.create_bot()
    ann, bob = create_user(state, bot), create_user(state, bot)
    for user in (ann, bob):
        user.send_text("/start")
    bob.block()
    async with client_for(state) as client:
        for chat in (ann.id, ann.id, ann.id, bob.id, bob.id):
            await client.post(f"/bot{bot.token}/sendMessage", json={"chat_id": chat, "text": "x"})
        stats = (await client.get("/_sim/stats")).json()
    assert stats == {
        "delivered": 1, "users": 2, "polls": 0, "flood_violations": 1, "refused_429": 2, "sends_after_blocked": 1,
        "faults": 0, "slow_answers": 0, "sent_by_kind": {"sendMessage": 1}, "not_modified": 0,
    }
    assert (state.flood_violations, state.refused_429, state.sends_after_blocked) == (1, 2, 1)
