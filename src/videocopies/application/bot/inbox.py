"""The inbox: every update is stored before edge acknowledges it to Telegram, and is then
handled in order per user, never two events of one user at once, different users in
parallel.

A turn is one transaction (`Inbox.turn`): it claims users with pending events (their rows
locked, skipping users another turn holds), handles their events oldest first, and commits
the use cases' writes, each event marked done and its replies queued, all at once: a confirm
press costs that one transaction after edge's store. The use cases the conversation calls
join the turn's transaction (`use_cases/joined.py`). Each event runs behind a savepoint: one
that fails is undone alone, marked done with an error reply, and its user's queue goes on. A
processor that dies mid-turn rolls its transaction back; the next turn handles the events.

A video arrives as an event whose file edge is still fetching: its user's queue stops there
(later events wait behind it, in order), and the user is not claimed again until edge
completes the event. A file that never comes is given up after `fetch_timeout_s`.

A payment waits on the provider, which no transaction (nor its pooled connection) may do:
its user's queue stops there, the turn commits with the user held for `lease_s` (a lease
other turns respect), the payment is handled outside any transaction (its use case keeps its
own), and a turn for that user alone marks it done and goes on with the events behind it. The
payments of one turn are handled side by side. In `run` a worker does not wait for them: they go
on in the background (at most `payments_at_once`) while it takes its next turn, so a burst of
payments, or a flood of invented ones, never keeps other users waiting for the provider.
A processor that dies meanwhile leaves the payment to the next once the lease ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

import attrs

from videocopies.application.bot.conversation import Conversation
from videocopies.application.errors import ApplicationError, Conflict, ProviderUnavailable, ServiceBusy
from videocopies.application.ports import Clock, Inbox, InboxEvent, OutboxMessage
from videocopies.application.ports.bot import InboxTurn
from videocopies.application.use_cases.joined import joining
from videocopies.domain.shared import DomainError, UserId

log = logging.getLogger(__name__)
News = list[Callable[[], None]]
Handled = tuple[InboxEvent, Sequence[OutboxMessage], str]


def _failed(event: InboxEvent, error: Exception) -> Handled:
    """The event done with an error screen for its user and the error kept on its row."""
    reply = OutboxMessage(event.user.user_id, "screen", {"screen": "unknown"}, f"in:{event.update_id}:error")
    return event, [reply], f"error: {type(error).__name__}: {error}"[:500]


def _worth_trying_again(error: Exception) -> bool:
    """Not a refusal of the event itself: the database or the provider away, or a transaction
    that lost a race. Anything the application or the domain refuses is final."""
    if isinstance(error, Conflict):
        return error.kind == "transaction"
    if isinstance(error, ServiceBusy | ProviderUnavailable):
        return True
    return not isinstance(error, ApplicationError | DomainError)


class InboxProcessor:
    def __init__(
        self,
        inbox: Inbox,
        conversation: Conversation,
        clock: Clock,
        replies_queued: Callable[[], None] = lambda: None,
        users_per_turn: int = 200,
        others_per_turn: int = 8,
        fetch_timeout_s: float = 600.0,
        lease_s: float = 30.0,
        payments_at_once: int = 64,
        stop_patience_s: float = 15.0,
    ) -> None:
        self._inbox, self._conversation, self._clock = inbox, conversation, clock
        self._replies_queued, self._users_per_turn, self._others_per_turn = (
            replies_queued, users_per_turn, others_per_turn
        )
        self._fetch_timeout, self._lease = timedelta(seconds=fetch_timeout_s), timedelta(seconds=lease_s)
        self.handled = 0
        self._payments_at_once, self._stop_patience_s = payments_at_once, stop_patience_s
        self._payments: set[asyncio.Task[None]] = set()

    async def turn(self, detached: bool = False) -> int:
        """Handle the pending events of waiting users in one transaction: users with only simple
        text commands (the bulk of a burst, up to `users_per_turn`) together in a few
        statements, up to `others_per_turn` others one event at a time. 0 when no user was
        waiting. More users are handled side by side by turns of other workers.

        The turn's payments are waited for, unless `detached`: then they go on in the background
        and count as handled here (`settled` waits for them)."""
        news: News = []
        paying: list[InboxEvent] = []
        async with self._inbox.turn() as turn:
            events = await turn.claim(self._clock.now(), self._users_per_turn, self._others_per_turn)
            by_user: dict[UserId, list[InboxEvent]] = {}
            for event in events:
                by_user.setdefault(event.user.user_id, []).append(event)
            handled = await self._bulk(turn, by_user, news)
            for user_events in by_user.values():
                handled += await self._handle(turn, user_events, news, paying)
            turn.hold([e.user.user_id for e in paying], self._clock.now() + self._lease)
            await turn.commit()
        self._after(handled, news)
        self.handled += handled
        if detached:
            await self._detach(paying)
            return handled + len(paying)
        # Side by side: each waits on the provider for up to about a second and a half, and one
        # after another a turn of many payers (a burst, or a flood of invented charges) would
        # keep this worker from every other user for that long each.
        paid = sum(await asyncio.gather(*map(self._paying, paying)))
        self.handled += paid
        return handled + paid

    async def _detach(self, paying: list[InboxEvent]) -> None:
        """The payments go on in the background; with `payments_at_once` of them under way this
        worker waits for one to end before it starts another, so a flood cannot pile up tasks."""
        for payment in paying:
            while len(self._payments) >= self._payments_at_once:
                await asyncio.wait(set(self._payments), return_when=asyncio.FIRST_COMPLETED)
            task = asyncio.create_task(self._paying_apart(payment))
            self._payments.add(task)
            task.add_done_callback(self._payments.discard)

    async def _paying_apart(self, payment: InboxEvent) -> None:
        try:
            self.handled += await self._paying(payment)
        except Exception as error:  # noqa: BLE001 - the lease ends and a later turn tries again
            log.warning("payment %s not marked done yet, tried again after %s: %r",
                        payment.update_id, self._lease, error)

    async def settled(self, timeout_s: float | None = None) -> None:
        """Wait for the payments going on in the background; past `timeout_s` the rest are
        cancelled: each is still pending, and a later turn takes it up once its lease ends
        (a charge is credited once whatever the tries)."""
        if self._payments:
            await asyncio.wait(set(self._payments), timeout=timeout_s)
        for task in set(self._payments):
            task.cancel()
        await asyncio.gather(*self._payments, return_exceptions=True)

    async def _bulk(self, turn: InboxTurn, by_user: dict[UserId, list[InboxEvent]], news: News) -> int:
        """The users whose events are all simple text, handled together; taken out of `by_user`.
        Should the batch fail, it is undone and they go one event at a time."""
        users = [u for u, events in by_user.items() if all(map(self._conversation.in_bulk, events))]
        if not users:
            return 0
        events = sorted((e for u in users for e in by_user[u]), key=lambda e: e.event_id or 0)
        await turn.savepoint()
        try:
            with joining(turn.uow) as after:
                replies = await self._conversation.handle_many(events)
        except Exception as error:  # noqa: BLE001 - one at a time still works
            log.warning("a bulk turn of %d users failed (%r); one event at a time", len(users), error)
            await turn.undo()
            return 0
        turn.done([(e, r, "ok") for e, r in zip(events, replies, strict=True)])
        news += after
        for user_id in users:
            del by_user[user_id]
        return len(events)

    async def _handle(
        self, turn: InboxTurn, events: Sequence[InboxEvent], news: News, paying: list[InboxEvent]
    ) -> int:
        """One user's events in order, until one waits for its file or is a payment (which is
        handled after the commit, outside the transaction)."""
        handled = 0
        for event in events:
            if event.waits_for_file:
                assert event.video is not None
                waited = self._clock.now() - (event.received_at or self._clock.now())
                if waited < self._fetch_timeout:
                    return handled  # this user's later events wait for the file, in order
                event = attrs.evolve(event, video=event.video.given_up())
            if self._conversation.detached(event):
                paying.append(event)
                return handled
            handled += 1
            await turn.savepoint()
            turn.done([await self._one(event, turn, news)])
        return handled

    async def _one(self, event: InboxEvent, turn: InboxTurn | None, news: News) -> Handled:
        """The event handled, joined to the `turn` when one is given: its replies and outcome. A
        failure is undone (back to the event's savepoint) and answered with an error screen."""
        try:
            if turn is None:
                replies = await self._conversation.handle(event)
            else:
                with joining(turn.uow) as after:
                    replies = await self._conversation.handle(event)
                news += after
            return event, replies, "ok"
        except Exception as error:  # noqa: BLE001 - one bad event must not stop its user's queue
            log.exception("inbox event %s failed", event.update_id)
            if turn is not None:
                await turn.undo()
            return _failed(event, error)

    async def _paying(self, payment: InboxEvent) -> int:
        """A payment, handled while its user is held by the lease the turn left, then marked
        done by a turn for that user alone, which goes on with the events behind it. One that
        fails for an outage (the database restarting, say) is left pending: once the lease ends
        a later turn tries it again, and the charge is credited once whatever the tries."""
        news: News = []
        try:
            handled: Handled = (payment, await self._conversation.handle(payment), "ok")
        except Exception as error:  # noqa: BLE001 - an outage is tried again, a refusal answered
            if _worth_trying_again(error):
                log.warning("payment %s not credited yet, tried again after %s: %r",
                            payment.update_id, self._lease, error)
                return 0
            log.exception("inbox event %s failed", payment.update_id)
            handled = _failed(payment, error)
        async with self._inbox.turn() as turn:
            events = await turn.claim(self._clock.now(), 1, 1, [payment.user.user_id])
            if not events or events[0].update_id != payment.update_id:
                return 0  # the lease ran out and another turn had it: it is said once (by its keys)
            turn.done([handled])
            count = 1 + await self._handle(turn, events[1:], news, [])
            await turn.commit()
        self._after(count, news)
        return count

    def _after(self, handled: int, news: News) -> None:
        """What the committed turn did is told: the use cases' news, and edge's replies."""
        for told in news:
            told()
        if handled:
            self._replies_queued()

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
        try:
            while not stop.is_set():
                if news or peek is None or await _safely(peek):
                    await asyncio.gather(*(self._drain(stop) for _ in range(workers)))
                news = bool(await _stopped_or(stop, wait(safety_poll_s)))
        finally:
            # A payment under way is finished, not left for its lease to end, unless the provider
            # or the database keeps it waiting past a stop's patience.
            await self.settled(timeout_s=self._stop_patience_s)

    async def _drain(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if not await self.turn(detached=True):
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
