"""Edge's pacer keeps under Telegram's flood limits on its own clock, and a 429 holds every send."""

from __future__ import annotations

import asyncio

import pytest

from videocopies.adapters.telegram.botapi import Refusal, refusal_of
from videocopies.adapters.telegram.pacing import Pacer, PacingSettings


class FakeTime:
    """A clock that moves only when the pacer sleeps, so the schedule is exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def time_(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    clock = FakeTime()

    async def sleep(seconds: float) -> None:
        clock.now += max(0.0, seconds)

    monkeypatch.setattr("videocopies.adapters.telegram.pacing.asyncio.sleep", sleep)
    return clock


async def _send_times(pacer: Pacer, clock: FakeTime, chats: list[int]) -> list[float]:
    times = []
    for chat in chats:
        await pacer.admit(chat)
        times.append(round(clock.now - 1000.0, 3))
    return times


async def test_one_chat_gets_its_burst_then_one_a_second(time_: FakeTime) -> None:
    pacer = Pacer(PacingSettings(bot_rate=30, bot_burst=20, chat_rate=1.0, chat_burst=2), clock=time_)
    assert await _send_times(pacer, time_, [7] * 5) == [0.0, 0.0, 1.0, 2.0, 3.0]


async def test_the_bot_never_goes_past_its_rate_across_chats(time_: FakeTime) -> None:
    pacer = Pacer(PacingSettings(bot_rate=30, bot_burst=20, chat_rate=1.0, chat_burst=2), clock=time_)
    times = await _send_times(pacer, time_, list(range(200)))
    # In any one second window no more than burst + rate sends: Telegram's ~30/s holds.
    for start in times:
        assert sum(1 for t in times if start <= t < start + 1.0) <= 20 + 30
    assert times[-1] == pytest.approx((200 - 20) / 30, abs=0.05)


async def test_a_429_pauses_every_chat_until_its_window_closes_then_sends_slower(time_: FakeTime) -> None:
    pacer = Pacer(PacingSettings(bot_rate=30, bot_burst=25, chat_rate=1000, chat_burst=1000), clock=time_)
    await pacer.admit(1)
    pacer.pause(3.0)
    assert pacer.chat_ready_at(2) == pytest.approx(time_.now + 3.0)
    times = await _send_times(pacer, time_, [2, 3, 4, 5])  # other chats, never refused themselves: they wait
    # After the window: no burst into the next one, and half the rate (15 a second).
    assert times == pytest.approx([3 + 1 / 15, 3 + 2 / 15, 3 + 3 / 15, 3 + 4 / 15], abs=1e-3)
    assert pacer.pauses == 1


async def test_the_rate_comes_back_after_a_while_without_429(time_: FakeTime) -> None:
    pacer = Pacer(PacingSettings(bot_rate=30, bot_burst=25, chat_rate=1000, chat_burst=1000), clock=time_)
    pacer.pause(1.0)
    time_.now += 120.0  # long enough for every step back up
    times = await _send_times(pacer, time_, list(range(100)))
    assert times[-1] - times[-2] == pytest.approx(1 / 30, abs=1e-3)  # 30 a second again


def test_final_refusals_are_told_apart_from_failures_worth_another_try() -> None:
    from aiogram.exceptions import (
        TelegramBadRequest,
        TelegramEntityTooLarge,
        TelegramForbiddenError,
        TelegramNetworkError,
        TelegramRetryAfter,
        TelegramServerError,
    )
    from aiogram.methods import SendMessage

    m = SendMessage(chat_id=1, text="x")
    assert refusal_of(TelegramForbiddenError(m, "Forbidden: bot was blocked by the user")) is Refusal.BLOCKED
    assert refusal_of(TelegramBadRequest(m, "Bad Request: chat not found")) is Refusal.CHAT_NOT_FOUND
    assert refusal_of(TelegramEntityTooLarge(m, "Request Entity Too Large")) is Refusal.TOO_LARGE
    assert refusal_of(TelegramBadRequest(m, "Bad Request: message is too long")) is Refusal.REJECTED
    assert refusal_of(TelegramServerError(m, "Bad Gateway")) is None
    assert refusal_of(TelegramNetworkError(m, "reset")) is None
    assert refusal_of(TelegramRetryAfter(m, "Too Many Requests", 3)) is None
    assert refusal_of(TimeoutError()) is None


async def test_copies_leave_the_reply_reserve_and_replies_go_before_waiting_copies(time_: FakeTime) -> None:
    pacer = Pacer(PacingSettings(bot_rate=30, bot_burst=25, reply_reserve=15, chat_rate=1000, chat_burst=1000),
                  clock=time_)
    for chat in range(10):  # a backlog of copies spends all but the reserve at once
        await pacer.admit(chat, urgent=False)
    assert time_.now == 1000.0
    await pacer.admit(100, urgent=False)  # the next copy waits for a token beyond the reserve
    assert time_.now == pytest.approx(1000.0 + 1 / 30)
    start = time_.now
    for chat in range(200, 215):  # fifteen newcomers are welcomed at once from the reserve
        await pacer.admit(chat, urgent=True)
    assert time_.now == pytest.approx(start)


async def test_a_copy_waits_while_a_reply_waits() -> None:
    pacer = Pacer(PacingSettings(bot_rate=50, bot_burst=2, reply_reserve=1, chat_rate=1000, chat_burst=1000))
    await pacer.admit(1, urgent=True)
    await pacer.admit(2, urgent=True)  # the bucket is empty now
    order: list[str] = []

    async def send(name: str, urgent: bool) -> None:
        await pacer.admit(hash(name) % 1000, urgent)
        order.append(name)

    copy = asyncio.ensure_future(send("copy", False))
    await asyncio.sleep(0)  # the copy is waiting first
    reply = asyncio.ensure_future(send("reply", True))
    await asyncio.gather(copy, reply)
    assert order == ["reply", "copy"]
