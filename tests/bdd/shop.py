"""The world a scenario runs in: the whole service in memory, and what the scenario remembers."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

import attrs
from dependency_injector import providers

from videocopies.application import use_cases as uc
from videocopies.application.errors import ApplicationError
from videocopies.application.ports import BotUser, InboxEvent
from videocopies.domain.coins import Balance, CoinAccount
from videocopies.domain.jobs import CopyArtifact, Job
from videocopies.domain.orders import Order, OrderClosed
from videocopies.domain.pricing import PricingPolicy, Quote, Tariff
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import DomainError, OrderId, UserId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

T = TypeVar("T")
USER = UserId(1001)
SECRET = b"features-quote-secret" * 2
REFUSALS = (DomainError, ApplicationError)


@attrs.define
class Shop:
    """One scenario's world: the whole service in memory, and what the scenario remembers."""

    run: Callable[[Awaitable[Any]], Any]
    settings: Settings = Settings(quote_secret=SECRET)
    built: InMemoryService | None = None
    quote: Quote | None = None
    order_id: OrderId | None = None
    workers: dict[str, uc.ClaimedJob | None] = attrs.Factory(dict)
    answers: list[Any] = attrs.Factory(list)
    outcome: Any = None
    unchecked: Exception | None = None
    failed: bool = False
    people: dict[str, UserId] = attrs.Factory(lambda: {"the user": USER})
    updates: Any = attrs.Factory(lambda: itertools.count(1))
    invoice: dict[str, Any] | None = None
    buyers: dict[UserId, dict[str, Any]] = attrs.Factory(dict)  # each buyer's invoice
    reads_before: int = 0  # the provider's list reads before a step

    @property
    def service(self) -> InMemoryService:
        if self.built is None:
            self.built = InMemoryService(settings=self.settings)
        return self.built

    @property
    def cases(self) -> Any:
        return self.service.use_cases

    @property
    def clock(self) -> Any:
        return self.service.gateways.clock()

    @property
    def store(self) -> Any:
        return self.service.gateways.store()

    def attempt(self, action: Awaitable[T]) -> T | None:
        """Run a `When` action; a refusal becomes the outcome for a `Then` step to check."""
        try:
            self.outcome = self.run(action)
        except REFUSALS as refused:
            self.outcome = self.unchecked = refused
            return None
        self.answers.append(self.outcome)
        return self.outcome

    def refusal(self, kind: type[Exception] | tuple[type[Exception], ...]) -> Any:
        refused, self.unchecked = self.unchecked, None
        assert isinstance(refused, kind), f"expected a refusal ({kind}), got {self.outcome!r}"
        return refused

    def person(self, name: str) -> UserId:
        return self.people.setdefault(name, UserId(2000 + len(self.people)))

    def tell_bot(self, user_id: UserId, kind: str, **fields: Any) -> None:
        """What edge does with a Telegram update: store it in the inbox; then core handles it."""
        self.tell_bot_at_once([(user_id, kind, fields)])

    def tell_bot_at_once(self, updates: list[tuple[UserId, str, dict[str, Any]]]) -> None:
        """Updates stored together (edge stores a burst so), then handled."""
        events = self._events(updates)

        async def deliver() -> None:
            await self.service.gateways.inbox().add(events, self.clock.now())
            processor = self.service.bot.inbox_processor()
            while await processor.turn():
                pass

        self.run(deliver())

    def tell_running_bot(
        self, updates: list[tuple[UserId, str, dict[str, Any]]], then: tuple[UserId, str, dict[str, Any]],
        taken: Callable[[], bool], until: Callable[[], bool],
    ) -> None:
        """Updates stored together and handled as core runs its inbox (one worker here, payments
        going on in the background); once `taken()`, `then` is stored too; the inbox runs until
        `until()` (10 s at most)."""
        events, (later,) = self._events(updates), self._events([then])

        async def deliver() -> None:
            inbox, processor, stop = self.service.gateways.inbox(), self.service.bot.inbox_processor(), asyncio.Event()
            await inbox.add(events, self.clock.now())
            running = asyncio.create_task(processor.run(stop, _glance, workers=1, safety_poll_s=0.02))
            try:
                await _until(taken)
                await inbox.add([later], self.clock.now())
                await _until(until)
            finally:
                stop.set()
                await running

        self.run(deliver())

    def _events(self, updates: list[tuple[UserId, str, dict[str, Any]]]) -> list[InboxEvent]:
        return [InboxEvent(next(self.updates), BotUser(user, "en"), kind, **f) for user, kind, f in updates]

    def told(self, screen: str, user_id: UserId = USER) -> list[dict[str, Any]]:
        """What the user was told on that screen, oldest first."""
        return [
            m.payload for _, m in sorted(self.store.outbox.items())
            if m.user_id == user_id and m.kind == "screen" and m.payload["screen"] == screen
        ]

    def account(self, user_id: UserId = USER) -> CoinAccount:
        return self.store.accounts[user_id]

    def balance(self) -> Balance:
        balance = self.account().balance(self.clock.now())
        assert balance.balanced, f"coins went missing: {balance}"
        return balance

    def order(self) -> Order:
        return self.store.orders[self.order_id]

    def job(self) -> Job:
        (job,) = [j for j in self.store.jobs.values() if j.order_id == self.order_id]
        return job

    def worker(self, name: str) -> uc.ClaimedJob:
        claimed = self.workers.get(name)
        assert claimed is not None, f"worker {name} holds no job"
        return claimed

    def closing_messages(self) -> list[dict[str, Any]]:
        return [
            m.payload
            for m in self.store.outbox.values()
            if m.kind == "order_closed" and m.payload["order_id"] == self.order_id
        ]

    def closings(self) -> list[OrderClosed]:
        return [e for e in self.store.published if isinstance(e, OrderClosed) and e.order_id == self.order_id]


def checks_refusal(step: Callable[..., T]) -> Callable[..., T]:
    """Marks a `Then` step that checks a refusal; any other step after a refusal fails."""
    step.checks_refusal = True  # type: ignore[attr-defined]
    return step


_UNITS = {"second": "seconds", "minute": "minutes", "hour": "hours", "day": "days"}


def duration(text: str) -> timedelta:
    """'1 hour', '30 days', '31 seconds'."""
    number, unit = text.split()
    return timedelta(**{_UNITS[unit.removesuffix("s")]: int(number)})


def copy_numbers(text: str) -> list[int]:
    """'copies 1, 2 and 3' as the user counts them (from 1)."""
    return [int(n) for n in re.findall(r"\d+", text)]


def tariff(version: int, datatable: list[list[str]]) -> Tariff:
    _header, *rows = datatable
    return Tariff(version, {int(copies): int(price) for copies, price in rows})


def artifact(shop: Shop, number: int, by: str) -> CopyArtifact:
    return CopyArtifact(
        f"copies/{shop.order_id}/{number}-{by}.mp4", 1_000_000 + number, f"{number:064x}",
        quality=CopyQuality(0.97, 9.0, None, 0, looks(number)),
    )


def looks(number: int) -> tuple[int, ...]:
    """How copy `number` looks to a matcher (its fingerprint), in these scenarios."""
    return (number, number << 8, number << 16, number << 24)


def override_pricing(shop: Shop, policy: PricingPolicy) -> None:
    """The operator publishes new prices; the use cases that price or confirm pick them up."""
    shop.settings = attrs.evolve(shop.settings, pricing=policy)
    shop.service.settings.override(providers.Object(shop.settings))
    shop.cases.quote_order.reset()
    shop.cases.confirm_order.reset()


def override_settings(shop: Shop, **changes: Any) -> None:
    """The operator changes the configuration; everything built from it is built again."""
    shop.settings = attrs.evolve(shop.settings, **changes)
    shop.service.settings.override(providers.Object(shop.settings))
    shop.service.bot.conversation.reset()
    shop.service.bot.inbox_processor.reset()
    shop.service.bot.bot_settings.reset()
    for case in ("reconcile_payments", "reward_referral", "credit_payment", "confirm_order", "take_payment",
                 "confirm_payments"):
        getattr(shop.cases, case).reset()


async def _glance(seconds: float) -> bool:
    """The inbox's wait for news: a glance every 20 ms, as if news always came."""
    await asyncio.sleep(min(seconds, 0.02))
    return True


async def _until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the inbox never got there")
