"""Edge's receiver: every update Telegram delivers is stored in core's inbox before the
offset moves past it, as an event core decides on or as unreadable with its reason.

Nothing in an update can stop the receiver: an update that cannot be read becomes an
unreadable event (its user, when known, gets a screen); a callback query is answered the
moment it arrives, whatever else is going on; a video is stored as fetching and handed to
the downloads, which complete it later.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest, TelegramConflictError, TelegramRetryAfter
from aiogram.methods import AnswerCallbackQuery, GetUpdates
from aiogram.types import PreCheckoutQuery

from videocopies.adapters.http.client import CoreClient, CoreRefused
from videocopies.adapters.screens import text
from videocopies.adapters.telegram.blocked import BlockedChats
from videocopies.adapters.telegram.botapi import LeanBotApi
from videocopies.adapters.telegram.downloads import Downloads
from videocopies.adapters.telegram.supervise import sleep_unless, until_stopped
from videocopies.adapters.telegram.updates import event_of, is_update_id, known_button, unreadable, user_of
from videocopies.application.ports import language_of

log = logging.getLogger(__name__)
ALLOWED_UPDATES = ["message", "callback_query", "pre_checkout_query"]
# Telegram waits 10 s for a pre-checkout answer; core gets most of it, the answer the rest.
PRE_CHECKOUT_ASK_S = 6.0


class Receiver:
    def __init__(
        self, bot: Bot, core: CoreClient, downloads: Downloads, *, blocked: BlockedChats | None = None,
        download_limit: int = 20 * 1024 * 1024, poll_timeout: int = 20,
    ) -> None:
        self._bot, self._core, self._downloads = bot, core, downloads
        self._blocked = blocked or BlockedChats()
        self._download_limit = download_limit
        self._poll_timeout = poll_timeout
        self._api = LeanBotApi(bot)
        self._answered: OrderedDict[str, None] = OrderedDict()
        self._username: str | None = None  # getMe's, for invite links
        self._side: set[asyncio.Task[None]] = set()
        self.stored = 0
        self.counts: Counter[str] = Counter()

    async def close(self) -> None:
        await self._api.close()

    async def run(self, stop: asyncio.Event) -> None:
        await self.resume_fetches()
        offset: int | None = None
        failures = 0
        while not stop.is_set():
            body: dict[str, Any] = {"timeout": self._poll_timeout, "allowed_updates": ALLOWED_UPDATES}
            if offset is not None:
                body["offset"] = offset
            try:
                updates = await until_stopped(stop, self._api.call(GetUpdates, body, timeout_s=self._poll_timeout + 30))
            except TelegramRetryAfter as slow_down:
                await sleep_unless(stop, float(slow_down.retry_after))
                continue
            except TelegramConflictError as conflict:  # another poller or a webhook: wait for it to go
                log.warning("getUpdates refused: %s", conflict)
                await sleep_unless(stop, 5.0)
                continue
            except Exception as error:  # noqa: BLE001 - 5xx, network, odd answers: poll again shortly
                # A lone 502 is common and says nothing about the next call: asked again at
                # once (users are waiting for their presses to be answered); a run of
                # failures backs off.
                failures += 1
                self.counts["poll_failures"] += 1
                pause = 0.0 if failures == 1 else min(5.0, 0.25 * 2 ** (failures - 2))
                log.warning("getUpdates failed (%r); again in %.2f s", error, pause)
                await sleep_unless(stop, pause)
                continue
            failures = 0
            if updates is None:
                return
            if not isinstance(updates, list):
                self.counts["poll_failures"] += 1
                continue
            ids = [u["update_id"] for u in updates if isinstance(u, dict) and is_update_id(u.get("update_id"))]
            if updates:
                await self.store(updates)
            if ids:
                offset = max(ids) + 1  # only after core has them

    async def resume_fetches(self) -> None:
        """Videos whose events wait as fetching in core (an earlier edge stopped mid-way)."""
        try:
            answer = await self._core.call("POST", "/v1/inbox/fetching", {"limit": 500})
        except Exception as error:  # noqa: BLE001 - asked again at the next start of the loop
            log.warning("could not ask core for unfinished downloads: %r", error)
            return
        for item in answer.get("videos", []):
            self._downloads.submit(int(item["update_id"]), int(item["user_id"]), item["video"])

    async def store(self, updates: list[Any]) -> None:
        """Answer callbacks and pre-checkout queries at once, store the page, then start its
        downloads. Updates are the Bot API's JSON: only the rare ones become aiogram models."""
        events: list[dict[str, Any]] = []
        checkouts: list[asyncio.Task[None]] = []
        for update in updates:
            try:
                event = self._judge(update, checkouts)
            except Exception as error:  # noqa: BLE001 - an update we cannot read is kept as such
                event = unreadable(update, f"edge could not read it: {type(error).__name__}")
            if event is not None:
                events.append(event)
            else:
                self.counts["ignored"] += 1
        if username := await self._bot_username():
            for event in events:
                if event["kind"] == "text":
                    event["bot"] = username
        if events:
            answer = await self._store_events(events)
            self.stored += int(answer.get("stored", 0))
            for event in events:
                if event["kind"] == "unreadable":
                    self.counts["unreadable"] += 1
                elif event["kind"] == "video" and event["video"].get("fetching"):
                    self._downloads.submit(event["update_id"], event["user"]["id"], event["video"])
        if checkouts:
            await asyncio.gather(*checkouts, return_exceptions=True)

    async def _bot_username(self) -> str | None:
        """The bot's username (aiogram keeps getMe's answer); None while Telegram has not said."""
        if self._username is None:
            try:
                self._username = (await self._bot.me()).username
            except Exception as error:  # noqa: BLE001 - asked again with the next page
                log.info("getMe not answered: %r", error)
        return self._username

    async def _store_events(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        try:
            return await self._core.call("POST", "/v1/inbox", {"events": events})
        except CoreRefused as refused:
            if refused.status not in (400, 403, 413, 422):
                raise
            if len(events) == 1:  # an older core, stricter than this edge: counted and passed over
                log.warning("core refused update %s: %s", events[0].get("update_id"), refused)
                self.counts["refused_by_core"] += 1
                return {"stored": 0}
        # One event core cannot take must not hold the others: each is stored on its own.
        stored = 0
        for event in events:
            stored += int((await self._store_events([event])).get("stored", 0))
        return {"stored": stored}

    def _judge(self, update: Any, checkouts: list[asyncio.Task[None]]) -> dict[str, Any] | None:
        if not isinstance(update, dict) or not is_update_id(update.get("update_id")):
            self.counts["unreadable_dropped"] += 1
            return None
        if (query := update.get("callback_query")) is not None:
            said = None
            if not known_button(query.get("data")) and isinstance(query.get("from"), dict):
                # A button no release of the bot made: told at once (core still hears of it, and
                # answers what it cannot read as such).
                said = text(language_of(query["from"].get("language_code")), "button_stale")
                self.counts["stale_buttons"] += 1
            self._answer_soon(str(query.get("id", "")), said)
        if (checkout := update.get("pre_checkout_query")) is not None:
            task = asyncio.ensure_future(self._pre_checkout(checkout))
            checkouts.append(task)
            return None
        event = event_of(update, self._download_limit)
        if event is not None and event.get("user", {}).get("id"):
            self._blocked.wrote(event["user"]["id"])
        return event

    def _answer_soon(self, query_id: str, said: str | None = None) -> None:
        if not query_id or query_id in self._answered:
            return
        self._answered[query_id] = None
        while len(self._answered) > 10_000:
            self._answered.popitem(last=False)
        task = asyncio.ensure_future(self._answer(query_id, said))
        self._side.add(task)
        task.add_done_callback(self._side.discard)

    async def _answer(self, query_id: str, said: str | None = None) -> None:
        what, body = f"callback {query_id}", {"callback_query_id": query_id}
        if said:
            body["text"] = said
        if not await _answered(lambda: self._api.call(AnswerCallbackQuery, body, timeout_s=10.0), what):
            self.counts["answers_lost"] += 1

    async def _pre_checkout(self, raw: dict[str, Any]) -> None:
        """Answered now, with core's word on whether the package and price still hold; when
        core cannot say in time, the payment is declined (nothing is charged)."""
        try:
            query = PreCheckoutQuery.model_validate(raw, context={"bot": self._bot})
        except Exception as error:  # noqa: BLE001 - nothing to answer a query we cannot read
            log.warning("pre-checkout query unreadable: %r", error)
            self.counts["unreadable"] += 1
            return
        body = {"user": user_of(raw["from"]), "currency": query.currency, "total_amount": query.total_amount,
                "invoice_payload": query.invoice_payload}
        try:
            verdict = await asyncio.wait_for(
                self._core.call("POST", "/v1/payments/pre-checkout", body), PRE_CHECKOUT_ASK_S
            )
        except Exception as error:  # noqa: BLE001 - declining is always safe
            log.warning("pre-checkout %s not checked: %r", query.id, error)
            language = language_of(query.from_user.language_code)
            verdict = {"ok": False, "error_message": text(language, "payments_unavailable")}
        await _answered(
            lambda: self._bot.answer_pre_checkout_query(
                query.id, ok=bool(verdict["ok"]), error_message=verdict.get("error_message")
            ),
            f"pre-checkout {query.id}",
        )


async def _answered(answer: Callable[[], Awaitable[object]], what: str) -> bool:
    """Answer Telegram while the user waits: a 502 or a slow answer is tried twice more, quickly;
    "too late" or "already answered" leaves nothing to add. False when the answer was lost."""
    for attempt in range(3):
        try:
            await answer()
            return True
        except TelegramBadRequest as late:
            log.info("%s not answered: %r", what, late)
            return True
        except Exception as error:  # noqa: BLE001 - a 502 or a timeout: once more
            if attempt == 2:
                log.info("%s not answered: %r", what, error)
                return False
            await asyncio.sleep(0.2)
    return False
