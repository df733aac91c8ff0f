"""A running inbox processor does not wait for the provider: a payment goes on in the
background while the worker takes other users' turns, its user's later events follow it in
order, and a stopping processor finishes the payments under way."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

from videocopies.adapters.memory.bot import InMemoryInbox
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.application.ports import BotUser, InboxEvent, OutboxMessage
from videocopies.domain.shared import UserId

BOB, ALICE = BotUser(UserId(8), "en", "Bob"), BotUser(UserId(9), "en", "Alice")
CAROL = BotUser(UserId(10), "en", "Carol")


class SlowProvider:
    """The conversation, as the processor sees it: a payment waits until `go_on` is set (the
    provider's list taking its time); anything else is answered at once."""

    def __init__(self) -> None:
        self.go_on = asyncio.Event()
        self.waiting = 0
        self.most_waiting = 0

    def in_bulk(self, event: InboxEvent) -> bool:
        return False

    def detached(self, event: InboxEvent) -> bool:
        return event.kind == "payment"

    async def handle(self, event: InboxEvent) -> Sequence[OutboxMessage]:
        if event.kind == "payment":
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
            await self.go_on.wait()
            self.waiting -= 1
        screen = {"screen": event.text or event.kind}
        return [OutboxMessage(event.user.user_id, "screen", screen, f"in:{event.update_id}")]


def _said(shop) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return [(m.user_id, m.payload["screen"]) for _, m in sorted(shop.store.outbox.items())]


async def _until(condition, seconds: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never came")


class Running:
    """A processor running as core runs it, with one worker, woken whenever events are added."""

    def __init__(self, shop, provider: SlowProvider, **options: float) -> None:  # type: ignore[no-untyped-def]
        self.shop, self.inbox = shop, InMemoryInbox(shop.store)
        self.processor = InboxProcessor(self.inbox, provider, shop.clock, **options)  # type: ignore[arg-type]
        self.stop, self.news = asyncio.Event(), asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def wait(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.news.wait(), seconds)
        except TimeoutError:
            return False
        self.news.clear()
        return True

    async def add(self, *events: InboxEvent) -> None:
        await self.inbox.add(list(events), self.shop.clock.now())
        self.news.set()

    def start(self) -> None:
        self.task = asyncio.create_task(self.processor.run(self.stop, self.wait, workers=1, safety_poll_s=0.05))


async def test_other_users_are_answered_while_a_payment_waits_on_the_provider(shop) -> None:  # type: ignore[no-untyped-def]
    provider = SlowProvider()
    running = Running(shop, provider)
    running.start()
    await running.add(InboxEvent(1, BOB, "payment"), InboxEvent(2, BOB, "text", text="after_paying"))
    await _until(lambda: provider.waiting == 1)
    await running.add(InboxEvent(3, ALICE, "text", text="start"))
    await _until(lambda: _said(shop) == [(ALICE.user_id, "start")])  # one worker, and it is free
    provider.go_on.set()
    await _until(lambda: len(_said(shop)) == 3)
    assert _said(shop)[1:] == [(BOB.user_id, "payment"), (BOB.user_id, "after_paying")]  # in Bob's order
    running.stop.set()
    assert running.task is not None
    await running.task


async def test_a_stopping_processor_finishes_the_payment_under_way(shop) -> None:  # type: ignore[no-untyped-def]
    provider = SlowProvider()
    running = Running(shop, provider)
    running.start()
    await running.add(InboxEvent(1, BOB, "payment"))
    await _until(lambda: provider.waiting == 1)
    running.stop.set()
    assert running.task is not None
    await asyncio.sleep(0.1)
    assert not running.task.done()  # it waits for the payment, not for the lease to end
    provider.go_on.set()
    await asyncio.wait_for(running.task, 5)
    assert _said(shop) == [(BOB.user_id, "payment")]


async def test_payments_in_the_background_are_bounded(shop) -> None:  # type: ignore[no-untyped-def]
    provider = SlowProvider()
    running = Running(shop, provider, payments_at_once=2)
    running.start()
    await running.add(*(InboxEvent(n, BotUser(UserId(100 + n), "en", "P"), "payment") for n in range(1, 6)))
    await _until(lambda: provider.waiting == 2)
    await running.add(InboxEvent(9, CAROL, "text", text="start"))
    await asyncio.sleep(0.2)
    assert provider.most_waiting == 2 and _said(shop) == []  # the worker waits for room, as before
    provider.go_on.set()
    await _until(lambda: len(_said(shop)) == 6)
    running.stop.set()
    assert running.task is not None
    await running.task


async def test_a_stopping_processor_does_not_wait_for_ever_on_a_provider_that_never_answers(shop) -> None:  # type: ignore[no-untyped-def]
    provider = SlowProvider()
    running = Running(shop, provider, stop_patience_s=0.3)
    running.start()
    await running.add(InboxEvent(1, BOB, "payment"))
    await _until(lambda: provider.waiting == 1)
    running.stop.set()
    assert running.task is not None
    await asyncio.wait_for(running.task, 5)  # after its patience: the payment is left for a later turn
    assert _said(shop) == []
    shop.clock.advance(timedelta(seconds=31))  # its lease ends
    provider.go_on.set()
    processor = InboxProcessor(running.inbox, provider, shop.clock)  # type: ignore[arg-type]
    while await processor.turn():
        pass
    assert _said(shop) == [(BOB.user_id, "payment")]
