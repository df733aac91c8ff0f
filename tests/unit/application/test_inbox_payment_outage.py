"""A payment whose handling fails because the database (or the provider) is away is not
answered with an error and marked done: it stays pending, and once its user's lease ends a
later turn handles it again. A payment the service refuses for what it is is answered once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from videocopies.adapters.memory.bot import InMemoryInbox
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.application.errors import NotFound
from videocopies.application.ports import BotUser, InboxEvent, OutboxMessage
from videocopies.domain.shared import UserId

BOB = BotUser(UserId(8), "en", "Bob")
LEASE_S = 30.0


class Payments:
    """The conversation, as the processor sees it, for payment events: each try raises the
    next of `failures`, then the charge is credited."""

    def __init__(self, *failures: Exception) -> None:
        self.failures, self.tries = list(failures), 0

    def in_bulk(self, event: InboxEvent) -> bool:
        return False

    def detached(self, event: InboxEvent) -> bool:
        return event.kind == "payment"

    async def handle(self, event: InboxEvent) -> Sequence[OutboxMessage]:
        self.tries += 1
        if self.failures:
            raise self.failures.pop(0)
        return [OutboxMessage(event.user.user_id, "screen", {"screen": "coins_credited"}, f"in:{event.update_id}:paid")]


async def _turns(processor: InboxProcessor) -> None:
    while await processor.turn():
        pass


def _screens(shop) -> list[str]:  # type: ignore[no-untyped-def]
    return [m.payload["screen"] for _, m in sorted(shop.store.outbox.items())]


async def test_a_payment_that_met_an_outage_is_tried_again_after_the_lease_and_credited(shop) -> None:  # type: ignore[no-untyped-def]
    inbox = InMemoryInbox(shop.store)
    payments = Payments(OSError("connection refused: the database is restarting"))
    processor = InboxProcessor(inbox, payments, shop.clock, lease_s=LEASE_S)  # type: ignore[arg-type]
    await inbox.add([InboxEvent(1, BOB, "payment")], shop.clock.now())
    await _turns(processor)
    assert payments.tries == 1 and _screens(shop) == []  # neither answered nor done
    await _turns(processor)
    assert payments.tries == 1  # its user is held until the lease ends
    shop.clock.advance(timedelta(seconds=LEASE_S + 1))
    await _turns(processor)
    assert payments.tries == 2 and _screens(shop) == ["coins_credited"]
    shop.clock.advance(timedelta(seconds=LEASE_S + 1))
    await _turns(processor)
    assert payments.tries == 2  # done: never handled again


async def test_a_payment_refused_for_what_it_is_is_answered_once(shop) -> None:  # type: ignore[no-untyped-def]
    inbox = InMemoryInbox(shop.store)
    payments = Payments(NotFound("package", "gone"))
    processor = InboxProcessor(inbox, payments, shop.clock, lease_s=LEASE_S)  # type: ignore[arg-type]
    await inbox.add([InboxEvent(1, BOB, "payment")], shop.clock.now())
    await _turns(processor)
    shop.clock.advance(timedelta(seconds=LEASE_S + 1))
    await _turns(processor)
    assert payments.tries == 1 and _screens(shop) == ["unknown"]
