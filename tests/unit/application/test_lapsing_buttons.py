"""Core's sweep of lapsed buttons: a sent quote's message is given to edge to take its buttons off
once its price has expired, once, and the senders are woken; a quote not yet sent (no message
id), one Telegram refused, and other screens are left alone; a database away only fails a pass."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.memory import InMemoryStore, ManualClock
from videocopies.adapters.memory.bot import InMemoryOutboxQueue
from videocopies.application.lapsing import UNBUTTON, LapseAlarm, buttons_until, keep_lapsing
from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import UserId

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
EXPIRES = NOW + timedelta(minutes=10)


def quote(user: int) -> OutboxMessage:
    payload = {"screen": "quote", "copies": 5, "total": 20, "expires_at": EXPIRES.isoformat()}
    return OutboxMessage(UserId(user), "screen", payload, f"quote:{user}")


def test_only_a_quote_s_buttons_lapse_and_at_its_expiry() -> None:
    assert buttons_until("screen", quote(1).payload) == EXPIRES
    assert buttons_until("screen", {"screen": "confirmed", "expires_at": EXPIRES.isoformat()}) is None
    assert buttons_until("progress", {"screen": "quote", "expires_at": EXPIRES.isoformat()}) is None


async def test_the_sweep_gives_each_expired_quote_to_edge_once_and_wakes_the_senders() -> None:
    clock, outbox, woken = ManualClock(NOW), InMemoryOutboxQueue(InMemoryStore()), []
    await outbox.queue([quote(1), quote(2), quote(3), OutboxMessage(UserId(4), "screen", {"screen": "welcome"}, "w")])
    sent, _unsent, refused, welcome = await outbox.claim(NOW, 10)  # user 2's quote: never reported
    await outbox.sent_many([(sent.message_id, {"message_id": 11}), (welcome.message_id, {"message_id": 41}),
                            (refused.message_id, {"error": "Bad Request", "refusal": "rejected"})])
    stop = asyncio.Event()
    sweeping = asyncio.create_task(keep_lapsing(outbox.lapse_buttons, outbox.next_lapse, clock, stop, every_s=0.01,
                                                longest_s=0.02, queued=lambda: woken.append(1)))
    await asyncio.sleep(0.05)
    assert await outbox.claim(NOW, 10) == [] and woken == []  # nothing has expired yet
    clock.set(EXPIRES)
    await asyncio.sleep(0.05)
    stop.set()
    await sweeping
    again = await outbox.claim(EXPIRES, 10)
    assert [(m.user_id, m.kind, m.payload) for m in again if m.user_id != 2] == [(1, UNBUTTON, {UNBUTTON: 11})]
    assert woken == [1]


async def nothing_lapses() -> datetime | None:
    return None


async def test_a_pass_that_fails_is_followed_by_the_next() -> None:
    passes: list[datetime] = []

    async def lapse(now: datetime, limit: int) -> int:
        passes.append(now)
        if len(passes) == 1:
            raise ConnectionError("the database is away")
        return 0

    async def one_lapsed() -> datetime | None:
        return NOW

    stop = asyncio.Event()
    sweeping = asyncio.create_task(keep_lapsing(lapse, one_lapsed, ManualClock(NOW), stop, every_s=0.01,
                                                longest_s=0.02))
    await asyncio.sleep(0.05)
    stop.set()
    await sweeping
    assert len(passes) >= 2


async def test_an_idle_sweep_sleeps_until_the_next_lapse_not_a_pass_a_second() -> None:
    """An idle core reads once a `longest_s` (the Job API's idle figure counts every statement);
    with a quote waiting, it wakes at the quote's expiry."""
    passes: list[float] = []  # the sweep's transactions
    looks: list[float] = []  # its glances at when the next lapse is due
    due: list[datetime | None] = [None]
    clock = ManualClock(NOW)

    async def lapse(now: datetime, limit: int) -> int:
        passes.append(asyncio.get_running_loop().time())
        return 0

    async def next_lapse() -> datetime | None:
        looks.append(asyncio.get_running_loop().time())
        return due[0]

    stop = asyncio.Event()
    sweeping = asyncio.create_task(keep_lapsing(lapse, next_lapse, clock, stop, every_s=0.01, longest_s=0.3))
    await asyncio.sleep(0.2)
    # Nothing waits to lapse: one glance, no transaction, and the next look `longest_s` away, not 0.01.
    assert len(looks) == 1 and passes == []
    stop.set()
    await sweeping

    looks.clear()
    due[0] = NOW + timedelta(seconds=0.1)
    stop = asyncio.Event()
    sweeping = asyncio.create_task(keep_lapsing(lapse, next_lapse, clock, stop, every_s=0.01, longest_s=5.0))
    await asyncio.sleep(0.05)
    clock.set(NOW + timedelta(seconds=0.1))
    await asyncio.sleep(0.2)
    stop.set()
    await sweeping
    assert len(looks) >= 2 and 0.08 <= looks[1] - looks[0] <= 0.2  # looked again at the expiry, 0.1 s later
    assert len(passes) >= 1  # and took it then


async def test_a_quote_sent_through_this_core_wakes_the_sleeping_sweep() -> None:
    """Recording the quote's message rings the alarm: the sweep looks again at once (at most once an
    `every_s`), finds when it lapses, and takes it then, though it had planned to sleep `longest_s`."""
    clock, outbox, alarm = ManualClock(NOW), InMemoryOutboxQueue(InMemoryStore()), LapseAlarm()
    outbox.lapsing_noticed = alarm.noticed
    stop = asyncio.Event()
    sweeping = asyncio.create_task(keep_lapsing(outbox.lapse_buttons, outbox.next_lapse, clock, stop, every_s=0.05,
                                                longest_s=60.0, alarm=alarm))
    await asyncio.sleep(0.1)  # it looked, found nothing, and sleeps for a minute
    await outbox.queue([quote(1)])
    (sent,) = await outbox.claim(NOW, 10)
    await outbox.sent_many([(sent.message_id, {"message_id": 11})])
    clock.set(EXPIRES)
    await asyncio.sleep(0.2)
    stop.set()
    await sweeping
    assert [(m.kind, m.payload) for m in await outbox.claim(EXPIRES, 10)] == [(UNBUTTON, {UNBUTTON: 11})]


async def test_core_s_metrics_count_the_buttons_its_sweep_gave_edge_to_take_off() -> None:
    metrics, clock, outbox = CoreMetrics(), ManualClock(NOW), InMemoryOutboxQueue(InMemoryStore())

    async def lapsed_so_far() -> float:
        text = (await metrics.render()).decode()
        return next(s.value for f in text_string_to_metric_families(text) for s in f.samples
                    if s.name == "videocopies_buttons_lapsed_total")

    await outbox.queue([quote(1), quote(2)])
    first, second = await outbox.claim(NOW, 10)
    await outbox.sent_many([(first.message_id, {"message_id": 11}), (second.message_id, {"message_id": 12})])
    stop = asyncio.Event()
    sweeping = asyncio.create_task(keep_lapsing(outbox.lapse_buttons, outbox.next_lapse, clock, stop, every_s=0.01,
                                                longest_s=0.02, counted=metrics.buttons_lapsed.inc))
    await asyncio.sleep(0.05)
    assert await lapsed_so_far() == 0  # not expired yet
    clock.set(EXPIRES)
    await asyncio.sleep(0.05)
    stop.set()
    await sweeping
    assert await lapsed_so_far() == 2
