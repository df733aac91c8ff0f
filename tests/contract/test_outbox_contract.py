"""The outbox as edge takes it, and users the bot cannot reach: the same cases on the
in-memory adapters, on PostgreSQL and through PgBouncer."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

import pytest

from videocopies.adapters.memory.bot import InMemoryOutboxQueue
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.application import use_cases as uc
from videocopies.application.ports import BotUser, InboxEvent, OutboxMessage
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import UserId, WorkerId

from .conftest import Backend

ANNA = BotUser(UserId(9), "ru", "Анна")
_keys = itertools.count(1)


def copy(user: int, index: int) -> OutboxMessage:
    payload = {"order_id": f"o-{user}", "index": index, "copies": 10, "object_key": f"copies/{user}/{index}.mp4"}
    return OutboxMessage(UserId(user), "copy_ready", payload, f"q{next(_keys)}")


def screen(user: int) -> OutboxMessage:
    return OutboxMessage(UserId(user), "screen", {"screen": "welcome"}, f"q{next(_keys)}")


@pytest.fixture
def queue(backend: Backend) -> Any:
    service: Any = backend.service
    if backend.name == "memory":
        return InMemoryOutboxQueue(service.gateways.store())
    return PostgresOutboxQueue(service.gateways.pool())


async def test_replies_go_first_and_copies_take_turns(backend: Backend, queue: Any) -> None:
    now = backend.clock.now()
    await queue.queue([copy(1, i) for i in range(10)] + [copy(2, 0), copy(3, 0), copy(2, 1)])
    await queue.queue([screen(4), screen(5)])
    claimed = await queue.claim(now, 5)
    assert [(m.user_id, m.payload.get("index")) for m in claimed] == [(4, None), (5, None), (1, 0), (2, 0), (3, 0)]
    assert [m.attempts for m in claimed] == [1] * 5
    # While their first copies are held, users 1 and 2 wait; user 3 has nothing more.
    assert await queue.claim(now, 10) == []
    await queue.sent_many([(m.message_id, {"message_id": 1}) for m in claimed])
    again = await queue.claim(now, 10, per_user=2)
    assert [(m.user_id, m.payload["index"]) for m in again] == [(1, 1), (2, 1), (1, 2)]


async def test_a_user_who_cannot_be_reached_stops_being_served(backend: Backend, queue: Any) -> None:
    b: Any = backend
    service: Any = b.service
    users = service.gateways.bot_users()
    cases = b.cases
    await cases.grant_coins()(uc.GrantCoinsCommand(ANNA.user_id, LotKind.START, 50, timedelta(days=30)))
    running = await _order(b, 5)
    (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
    queued = await _order(b, 1)
    for index in (0, 1):
        art = CopyArtifact(f"copies/{running}/{index}.mp4", 10, "a" * 64, 3.0, 720, 1280)
        await cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, index, art))
    (first, *_) = await queue.claim(b.clock.now(), 10)
    await queue.sent_many([(first.message_id, {"message_id": 77})])
    assert await cases.record_delivery()(uc.RecordDeliveryCommand(running, 0)) == 4  # copy 0 arrived

    inbox, processor = service.gateways.inbox(), service.bot.inbox_processor()
    await inbox.add([InboxEvent(1, ANNA, "text", text="/help")], b.clock.now())  # sent before the block
    b.clock.advance(timedelta(seconds=1))
    give_up = uc.GiveUpMessages(queue, cases.give_up_delivery())
    stop = uc.StopServingUser(users, queue, cases.cancel_order(), give_up, b.clock)
    stopped = await stop(uc.StopServingUserCommand(ANNA.user_id, "blocked"))

    assert set(stopped.cancelled) == {running, queued}
    assert (await cases.renew_lease()(uc.RenewLeaseCommand(job.job_id, job.token))).cancel_requested
    assert await queue.unsent_of(ANNA.user_id) == []  # copy 1 and the queued order's close: given up
    assert await users.blocked([ANNA.user_id]) == {ANNA.user_id}
    await cases.acknowledge_cancel()(job.job_id, job.token)  # the worker stopped
    async with b.new_uow() as uow:
        states = [(await uow.orders.get(o)).state for o in (running, queued)]
        account = await uow.accounts.get(ANNA.user_id)
    assert states == [OrderState.CANCELLED, OrderState.CANCELLED]
    balance = account.balance(b.clock.now())
    assert (balance.available, balance.reserved, balance.debited) == (46, 0, 4)  # only copy 0 was charged
    # What the cancel wrote afterwards is claimed as the user's, marked blocked: core gives it up.
    (closed,) = await queue.claim(b.clock.now(), 10)
    assert closed.kind == "order_closed" and closed.blocked
    assert await stop(uc.StopServingUserCommand(ANNA.user_id, "blocked")) == uc.Stopped((), 1)

    # What the user sent before the block says nothing new; writing again makes them reachable.
    while await processor.turn():
        pass
    assert await users.blocked([ANNA.user_id]) == {ANNA.user_id}
    (help_screen,) = await queue.claim(b.clock.now(), 10)
    assert help_screen.blocked
    await give_up([help_screen], "blocked")  # as core does with what it claims for a blocked user
    b.clock.advance(timedelta(seconds=1))
    await inbox.add([InboxEvent(2, ANNA, "text", text="/balance")], b.clock.now())
    while await processor.turn():
        pass
    assert await users.blocked([ANNA.user_id]) == set()
    (balance_screen,) = await queue.claim(b.clock.now(), 10)
    assert not balance_screen.blocked and balance_screen.payload["screen"] == "balance"


async def _order(b: Any, copies: int) -> Any:
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(ANNA.user_id, f"sources/9/{copies}.mp4", copies))
    return await b.cases.confirm_order()(uc.ConfirmOrderCommand(ANNA.user_id, quote.quote_id, quote.token))


def quote(user: int, expires_at: datetime) -> OutboxMessage:
    payload = {"screen": "quote", "copies": 5, "total": 20, "expires_at": expires_at.isoformat()}
    return OutboxMessage(UserId(user), "screen", payload, f"q{next(_keys)}")


async def test_a_sent_quote_loses_its_buttons_once_when_its_price_expires_unless_a_press_took_them(
    backend: Backend, queue: Any,
) -> None:
    now = backend.clock.now()
    expires = now + timedelta(minutes=10)
    await queue.queue([quote(1, expires), quote(2, expires), quote(3, expires)])
    first, pressed, refused = await queue.claim(now, 10)
    await queue.sent_many([(first.message_id, {"message_id": 11}), (pressed.message_id, {"message_id": 21}),
                           (refused.message_id, {"error": "Bad Request", "refusal": "rejected"})])
    # User 2 confirmed in time: the reply to the press took the quote's buttons off.
    await queue.queue([OutboxMessage(UserId(2), "screen", {"screen": "confirmed", "unbutton": 21}, f"q{next(_keys)}")])
    (reply,) = await queue.claim(now, 10)
    await queue.sent_many([(reply.message_id, {"message_id": 22})])

    assert await queue.next_lapse() == expires  # only user 1's quote still waits to lapse
    assert await queue.lapse_buttons(expires - timedelta(seconds=1)) == 0
    assert await queue.lapse_buttons(expires) == 1
    assert await queue.lapse_buttons(expires + timedelta(hours=1)) == 0  # once
    assert await queue.next_lapse() is None
    (lapsed,) = await queue.claim(expires, 10)
    assert (lapsed.user_id, lapsed.kind, lapsed.payload) == (1, "unbutton", {"unbutton": 11})
    await queue.sent_many([(lapsed.message_id, {})])
    assert await queue.claim(expires, 10) == []
