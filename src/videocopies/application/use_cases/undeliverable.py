"""Messages that will never reach their user, and users the bot cannot reach.

Telegram refuses some messages for good: the user blocked the bot, the chat is gone, a copy
is too large to send, or the sender gave up after its attempts. Such a message is closed
with the reason and never sent again; a copy among them is dropped and its price returned,
never charged. A user the bot cannot reach gets nothing more: their open orders are
cancelled through the cancel protocol (a worker stops rendering, the coins settle), and
they are remembered as blocked until they write again.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from videocopies.application.errors import Conflict, NotFound
from videocopies.application.ports import Clock, OutboxQueue, QueuedMessage, UnreachableUsers
from videocopies.application.use_cases.cancel_order import CancelOrder, CancelOrderCommand
from videocopies.application.use_cases.record_delivery import GiveUpDelivery, RecordDeliveryCommand
from videocopies.domain.shared import DomainError, OrderId, UserId

COPY = "copy_ready"
REFUSALS = ("blocked", "chat_not_found", "too_large", "rejected", "gave_up")
UNREACHABLE = ("blocked", "chat_not_found")  # refusals that mean the user cannot be reached at all


def in_turns(messages: Sequence[QueuedMessage]) -> list[QueuedMessage]:
    """A claimed batch in the order to send it: replies first, oldest first; then copies,
    and anything behind a copy, by their user's turn. Each user's messages keep their order."""
    position: dict[int, int] = {}
    behind_copy: set[int] = set()
    keys: dict[int, tuple[bool, int, int]] = {}
    for m in sorted(messages, key=lambda m: m.message_id):
        position[m.user_id] = position.get(m.user_id, 0) + 1
        if m.kind == COPY:
            behind_copy.add(m.user_id)
        copy = m.user_id in behind_copy
        keys[m.message_id] = (copy, position[m.user_id] if copy else 0, m.message_id)
    return sorted(messages, key=lambda m: keys[m.message_id])


class GiveUpMessages:
    """Close messages that will never be sent, with the reason; a copy among them is dropped
    first (its price goes back to the user's lots), so an undelivered copy is never charged."""

    def __init__(self, outbox: OutboxQueue, give_up_delivery: GiveUpDelivery) -> None:
        self._outbox, self._give_up_delivery = outbox, give_up_delivery

    async def __call__(self, messages: Sequence[QueuedMessage], error: str) -> int:
        for message in messages:
            if message.kind == COPY:
                await self._give_up_delivery(copy_of(message))
        return await self._outbox.give_up([(m.message_id, {"error": error}) for m in messages]) if messages else 0


def copy_of(message: QueuedMessage) -> RecordDeliveryCommand:
    return RecordDeliveryCommand(OrderId(message.payload["order_id"]), int(message.payload["index"]))


@attrs.frozen
class StopServingUserCommand:
    user_id: UserId
    why: str  # a refusal: blocked, chat_not_found


@attrs.frozen
class Stopped:
    cancelled: tuple[OrderId, ...]
    given_up: int  # messages closed unsent


class StopServingUser:
    """Telegram will not deliver to this user: remember them as blocked, cancel their open
    orders through the cancel protocol (workers stop, coins settle), and give up every
    message still waiting for them, the ones the cancels just wrote included. Running it
    again changes nothing more."""

    def __init__(
        self, users: UnreachableUsers, outbox: OutboxQueue, cancel_order: CancelOrder, give_up: GiveUpMessages,
        clock: Clock, tries: int = 3,
    ) -> None:
        self._users, self._outbox, self._cancel, self._give_up = users, outbox, cancel_order, give_up
        self._clock, self._tries = clock, tries

    async def __call__(self, cmd: StopServingUserCommand) -> Stopped:
        await self._users.block(cmd.user_id, self._clock.now())
        cancelled = [
            order_id for order_id in await self._users.open_orders(cmd.user_id)
            if await self._cancelled(cmd.user_id, order_id)
        ]
        given_up = await self._give_up(await self._outbox.unsent_of(cmd.user_id), cmd.why)
        return Stopped(tuple(cancelled), given_up)

    async def _cancelled(self, user_id: UserId, order_id: OrderId) -> bool:
        for _ in range(self._tries):
            try:
                await self._cancel(CancelOrderCommand(user_id, order_id))
            except Conflict:  # a worker wrote to the order at the same moment: read it again
                continue
            except (NotFound, DomainError):  # closed meanwhile
                return False
            return True
        return False
