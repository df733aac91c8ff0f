"""The inbox: every update is stored before edge acknowledges it to Telegram, and is then
handled in order per user, never two events of one user at once, different users in
parallel.

A processor leases one user with pending events, handles them oldest first, and marks each
done in the same transaction that writes its replies to the outbox. A processor that dies
loses its lease; the next one handles what was not marked done.

A video arrives as an event whose file edge is still fetching: its user's queue stops there
(later events wait behind it, in order), and the user is not leased again until edge
completes the event. A file that never comes is given up after `fetch_timeout_s`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

import attrs

from videocopies.application.bot.conversation import Conversation
from videocopies.application.ports import Clock, Inbox, InboxEvent, OutboxMessage
from videocopies.domain.shared import UserId

log = logging.getLogger(__name__)


class InboxProcessor:
    def __init__(
        self,
        inbox: Inbox,
        conversation: Conversation,
        clock: Clock,
        replies_queued: Callable[[], None] = lambda: None,
        lease_s: float = 30.0,
        users_per_turn: int = 200,
        fetch_timeout_s: float = 600.0,
    ) -> None:
        self._inbox, self._conversation, self._clock = inbox, conversation, clock
        self._replies_queued, self._lease_s, self._users_per_turn = replies_queued, lease_s, users_per_turn
        self._fetch_timeout = timedelta(seconds=fetch_timeout_s)
        self.handled = 0

    async def turn(self) -> int:
        """Handle the pending events of waiting users (one lease and one read for all of
        them); each user's events in order, the users side by side. Users with only simple
        text commands (the bulk of a burst) are handled together in a few statements and
        released at once; the others one event at a time. 0 when no user was waiting."""
        users = await self._inbox.lease_users(self._clock.now(), self._lease_s, self._users_per_turn)
        if not users:
            return 0
        bulk: list[UserId] = []
        rest = list(users)
        handled = 0
        try:
            by_user: dict[UserId, list[InboxEvent]] = {user: [] for user in users}
            for event in await self._inbox.pending(users):
                by_user[event.user.user_id].append(event)
            bulk = [u for u, events in by_user.items() if events and all(map(self._conversation.in_bulk, events))]
            rest = [u for u in users if u not in set(bulk)]
            if bulk:
                try:
                    handled += await self._handle_bulk([e for u in bulk for e in by_user[u]])
                except Exception as error:  # noqa: BLE001 - one at a time still works
                    log.warning("a bulk turn of %d users failed (%r); one event at a time", len(bulk), error)
                    rest, bulk = list(users), []
                else:
                    await self._inbox.release(bulk)
                    bulk = []
            handled += sum(await asyncio.gather(*(self._handle(by_user[u]) for u in rest)))
        finally:
            if bulk or rest:
                await self._inbox.release([*bulk, *rest])
        self.handled += handled
        return handled

    async def _handle_bulk(self, events: Sequence[InboxEvent]) -> int:
        events = sorted(events, key=lambda e: e.event_id or 0)
        replies = await self._conversation.handle_many(events)
        await self._inbox.done_many([(e, r, "ok") for e, r in zip(events, replies, strict=True)])
        self._replies_queued()
        return len(events)

    async def _handle(self, events: Sequence[InboxEvent]) -> int:
        handled = 0
        for event in events:
            if event.waits_for_file:
                assert event.video is not None
                waited = self._clock.now() - (event.received_at or self._clock.now())
                if waited < self._fetch_timeout:
                    return handled  # this user's later events wait for the file, in order
                event = attrs.evolve(event, video=event.video.given_up())
            handled += 1
            try:
                replies = await self._conversation.handle(event)
                outcome = "ok"
            except Exception as error:  # noqa: BLE001 - one bad event must not stop its user's queue
                log.exception("inbox event %s failed", event.update_id)
                replies = [OutboxMessage(event.user.user_id, "screen", {"screen": "unknown"},
                                         f"in:{event.update_id}:error")]
                outcome = f"error: {type(error).__name__}: {error}"[:500]
            await self._inbox.done(event, replies, outcome)
            self._replies_queued()  # use cases may have queued replies of their own
        return handled

    async def run(
        self,
        stop: asyncio.Event,
        wait: Callable[[float], Awaitable[bool]],
        workers: int = 4,
        safety_poll_s: float = 10.0,
        peek: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """Handle waiting users, `workers` at a time, until none is left; then sleep until
        `wait` reports news (events stored) or the safety poll comes round. An idle inbox
        costs one glance (`peek`) per safety poll, not a lease attempt per worker."""
        news = True
        while not stop.is_set():
            if news or peek is None or await _safely(peek):
                await asyncio.gather(*(self._drain(stop) for _ in range(workers)))
            news = bool(await _stopped_or(stop, wait(safety_poll_s)))

    async def _drain(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if not await self.turn():
                    return
            except Exception as error:  # noqa: BLE001 - the database may be restarting
                log.warning("inbox turn failed: %r", error)
                await asyncio.sleep(1.0)
                return


async def _safely(peek: Callable[[], Awaitable[bool]]) -> bool:
    try:
        return await peek()
    except Exception as error:  # noqa: BLE001 - when in doubt, look
        log.warning("inbox peek failed: %r", error)
        return True


async def _stopped_or(stop: asyncio.Event, waiting: Awaitable[bool]) -> bool:
    """What `waiting` returned, or False when `stop` came first."""
    stopped = asyncio.ensure_future(stop.wait())
    task = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait({stopped, task}, return_when=asyncio.FIRST_COMPLETED)
        return bool(task.result()) if task.done() and not task.cancelled() else False
    finally:
        stopped.cancel()
        task.cancel()
