"""Edge's sender: takes core's outbox, sends within Telegram's limits, reports each message.

Claimed messages wait on edge in one queue per chat, sent in order, one at a time per chat.
A chat is handed to a sender when its own pacing allows; chats whose next message is a
reply to something the user just did go before chats waiting for a copy, and chats waiting
for copies take turns, so a user's ten copies never hold up another user's welcome.

What Telegram answers decides a message's fate: sent; 429 (everything pauses for the
window, the message is tried again first); a transient failure (tried again after a pause
that grows, a bounded number of times); or a final refusal, reported with its reason. After
"blocked" the chat's other queued messages are reported unsent with it: nothing more goes to
a user who blocked the bot until they write again.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from aiogram import Bot
from aiogram.exceptions import TelegramRetryAfter
from aiogram.types import FSInputFile, InlineKeyboardButton, InlineKeyboardMarkup, LabeledPrice

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.telegram.botapi import LeanBotApi, Refusal, refusal_of
from videocopies.adapters.telegram.pacing import Pacer
from videocopies.adapters.telegram.supervise import sleep_unless, until_stopped

log = logging.getLogger(__name__)
COPY = "copy_ready"


class CopyFetcher(Protocol):
    async def fetch(self, key: str, url: str | None, path: Path) -> None: ...


class BlockedChats:
    """Chats that refused the bot (403), shared by the sender and the receiver: a user who
    writes again has unblocked the bot. Kept only for `remember_s`: it bridges the moment
    until core has heard of the block (core then gives up that user's messages itself), and
    with a webhook the user's next message may reach another edge's receiver."""

    def __init__(self, remember_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._chats: dict[int, float] = {}
        self._remember_s, self._clock = remember_s, clock

    def __contains__(self, chat_id: object) -> bool:
        since = self._chats.get(chat_id)  # type: ignore[call-overload]
        if since is None:
            return False
        if self._clock() - since > self._remember_s:
            del self._chats[chat_id]  # type: ignore[arg-type]
            return False
        return True

    def add(self, chat_id: int) -> None:
        self._chats[chat_id] = self._clock()

    def wrote(self, chat_id: int) -> None:
        self._chats.pop(chat_id, None)


class Sender:
    def __init__(
        self, bot: Bot, core: CoreClient, copies: CopyFetcher, work_dir: Path, *,
        pacer: Pacer | None = None, blocked: BlockedChats | None = None, batch: int = 100, queue_limit: int = 400,
        hold_s: float = 60.0, connections: int = 16, copy_connections: int = 6, attempts: int = 6,
        longest_pause_s: float = 30.0,
        report_every_s: float = 0.05, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._bot, self._core, self._copies, self._work_dir = bot, core, copies, work_dir
        self._api = LeanBotApi(bot, connections)
        self.pacer = pacer or Pacer()
        self.blocked = blocked or BlockedChats()
        self._batch, self._queue_limit, self._hold_s = batch, queue_limit, hold_s
        self._attempts, self._longest_pause_s, self._report_every_s = attempts, longest_pause_s, report_every_s
        self._clock = clock
        # Replies and copies in flight (waiting for the pacer, or being sent) are bounded
        # apart: copies queued for their turn never take the places a welcome needs.
        self._limits = {True: connections, False: min(copy_connections, connections)}
        self._flying = {True: 0, False: 0}
        self._chats: dict[int, deque[dict[str, Any]]] = {}
        self._scheduled: set[int] = set()  # chats in a queue below, or being sent to
        self._replies: deque[int] = deque()  # chats whose next message answers the user
        self._copy_turns: deque[int] = deque()  # chats waiting for a copy, in turn
        self._later: list[tuple[float, int, int]] = []  # (when, seq, chat): paced or pausing after a failure
        self._seq = itertools.count()
        self._known: dict[int, float] = {}  # message id -> claimed at (dedupes a claim that overlaps)
        self._failures: Counter[int] = Counter()
        self._reports: list[dict[str, Any]] = []
        self._queued = 0
        self._news = asyncio.Event()
        self._room = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent = 0
        self.counts: Counter[str] = Counter()

    async def close(self) -> None:
        await self._api.close()

    @property
    def queued(self) -> int:
        return self._queued

    async def run(self, stop: asyncio.Event) -> None:
        """Claim, send and report until `stop`; what was sent is reported before returning.
        Messages still queued are left to their hold: core offers them again after it."""
        parts = [
            asyncio.ensure_future(self._claim_loop(stop)),
            asyncio.ensure_future(self._dispatch_loop(stop)),
            asyncio.ensure_future(self._report_loop(stop)),
        ]
        try:
            done, _ = await asyncio.wait(parts, return_when=asyncio.FIRST_EXCEPTION)
            for part in done:
                if part.exception() is not None:
                    raise part.exception()  # type: ignore[misc]
        finally:
            for part in parts:
                part.cancel()
            await asyncio.gather(*parts, return_exceptions=True)
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self._flush_reports()
            self._forget_queue()

    # -- claiming ---------------------------------------------------------------------------

    async def _claim_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            room = self._queue_limit - self._queued
            if room < min(self._batch, self._queue_limit // 2):
                self._room.clear()
                await _first(stop, self._room.wait())
                continue
            claim = self._core.call(
                "POST", "/v1/outbox/claim", {"limit": min(self._batch, room), "wait_s": 20, "hold_s": self._hold_s},
                timeout=45,
            )
            try:
                answer = await until_stopped(stop, claim)
            except Exception as error:  # noqa: BLE001 - core restarting: the client retried already
                log.warning("outbox claim failed: %r", error)
                self.counts["claim_failures"] += 1
                await sleep_unless(stop, 1.0)
                continue
            if answer is None:
                return  # stopped while the claim waited: what it held goes out again after its hold
            self.take(answer["messages"])

    def take(self, messages: list[dict[str, Any]]) -> None:
        """Queue claimed messages (a message already queued here is not queued twice)."""
        now = self._clock()
        for message in messages:
            if message["id"] in self._known:
                continue
            self._known[message["id"]] = now
            chat_id = message["chat_id"]
            self._chats.setdefault(chat_id, deque()).append(message)
            self._queued += 1
            if chat_id not in self._scheduled:
                self._schedule(chat_id)
        self._news.set()

    # -- dispatching ------------------------------------------------------------------------

    def _schedule(self, chat_id: int) -> None:
        """Put a chat with queued messages where its next message belongs."""
        queue = self._chats.get(chat_id)
        if not queue:
            self._chats.pop(chat_id, None)
            self._scheduled.discard(chat_id)
            return
        self._scheduled.add(chat_id)
        ready = self.pacer.chat_ready_at(chat_id)
        if ready > self._clock():
            heapq.heappush(self._later, (ready, next(self._seq), chat_id))
        elif queue[0]["kind"] == COPY:
            self._copy_turns.append(chat_id)
        else:
            self._replies.append(chat_id)

    def _later_is_due(self) -> float | None:
        """Move chats whose time has come back to their queues; when the next one is due."""
        now = self._clock()
        while self._later and self._later[0][0] <= now:
            _, _, chat_id = heapq.heappop(self._later)
            self._scheduled.discard(chat_id)
            self._schedule(chat_id)
        return self._later[0][0] - now if self._later else None

    async def _dispatch_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            wait = self._later_is_due()
            if self._replies and self._flying[True] < self._limits[True]:
                chat_id, urgent = self._replies.popleft(), True
            elif self._copy_turns and self._flying[False] < self._limits[False]:
                chat_id, urgent = self._copy_turns.popleft(), False
            else:
                self._news.clear()
                await _first(stop, self._news.wait(), timeout=min(wait if wait is not None else 1.0, 1.0))
                continue
            queue = self._chats.get(chat_id)
            if not queue:
                self._scheduled.discard(chat_id)
                continue
            message = queue.popleft()
            self._queued -= 1
            self._flying[urgent] += 1
            task = asyncio.ensure_future(self._send(message, urgent))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, message: dict[str, Any], urgent: bool) -> None:
        """Send one message; then its chat takes its next turn (or waits, or is dropped)."""
        chat_id = message["chat_id"]
        pause_chat_s = 0.0
        try:
            if chat_id in self.blocked:
                self._refused(message, Refusal.BLOCKED, "the user blocked the bot")
                self._drop_chat(chat_id, Refusal.BLOCKED)
                return
            # Past its hold, core may have handed the message to another edge: sending it now
            # could make it twice (a margin for the report's way back).
            if self._clock() - self._known.get(message["id"], self._clock()) > self._hold_s * 0.9:
                self.counts["held_too_long"] += 1  # core offers it again; sending now could make it twice
                self._known.pop(message["id"], None)
                return
            try:
                message_id, file_id = await self._deliver(message, urgent)
            except Exception as error:  # noqa: BLE001 - every outcome is decided below
                pause_chat_s = self._failed(message, error)
                return
            report: dict[str, Any] = {"id": message["id"], "message_id": message_id}
            if file_id:
                report["file_id"] = file_id
            self._report(report)
            self.sent += 1
        finally:
            self._flying[urgent] -= 1
            self._after(chat_id, pause_chat_s)

    def _failed(self, message: dict[str, Any], error: BaseException) -> float:
        """Decide a failed send; returns how long its chat waits before trying again (0: at once)."""
        chat_id = message["chat_id"]
        if isinstance(error, TelegramRetryAfter):
            self.pacer.pause(float(error.retry_after))
            self.counts["flood_pauses"] += 1
            log.info("Telegram asked to wait %ss: every send pauses", error.retry_after)
            self._requeue(message)
            return 0.0
        refusal = refusal_of(error)
        if refusal is None:
            self._failures[message["id"]] += 1
            failures = self._failures[message["id"]]
            if failures < self._attempts:
                self.counts["retries"] += 1
                log.info("message %s failed (%r); try %d of %d", message["id"], error, failures + 1, self._attempts)
                self._requeue(message)
                return min(self._longest_pause_s, 0.5 * 2 ** (failures - 1))
            refusal = Refusal.GAVE_UP
        self._refused(message, refusal, str(error))
        if refusal in (Refusal.BLOCKED, Refusal.CHAT_NOT_FOUND):
            self.blocked.add(chat_id)
            self._drop_chat(chat_id, refusal)
        return 0.0

    def _requeue(self, message: dict[str, Any]) -> None:
        self._chats.setdefault(message["chat_id"], deque()).appendleft(message)
        self._queued += 1

    def _after(self, chat_id: int, pause_s: float) -> None:
        self._scheduled.discard(chat_id)
        if pause_s > 0 and self._chats.get(chat_id):
            self._scheduled.add(chat_id)
            heapq.heappush(self._later, (self._clock() + pause_s, next(self._seq), chat_id))
        else:
            self._schedule(chat_id)
        self._news.set()

    def _drop_chat(self, chat_id: int, refusal: Refusal) -> None:
        """The chat's queued messages are reported unsent, with the refusal that ended it."""
        for message in self._chats.pop(chat_id, deque()):
            self._queued -= 1
            self._refused(message, refusal, "not sent: an earlier message of this chat was refused")

    def _refused(self, message: dict[str, Any], refusal: Refusal, error: str) -> None:
        self.counts[f"refused_{refusal.value}"] += 1
        log.info("message %s to %s not sent (%s): %s", message["id"], message["chat_id"], refusal.value, error[:200])
        self._report({"id": message["id"], "refusal": refusal.value, "error": error[:900] or refusal.value})

    def _forget_queue(self) -> None:
        self._chats.clear()
        self._scheduled.clear()
        self._replies.clear()
        self._copy_turns.clear()
        self._later.clear()
        self._known.clear()
        self._queued = 0

    # -- Telegram ---------------------------------------------------------------------------

    async def _deliver(self, message: dict[str, Any], urgent: bool) -> tuple[int, str | None]:
        """Send one message, paced; its Telegram message id and, for a video, the file id."""
        chat_id = message["chat_id"]
        if invoice := message.get("invoice"):
            await self.pacer.admit(chat_id, urgent)
            sent = await self._bot.send_invoice(
                chat_id, title=invoice["title"], description=invoice["description"],
                payload=invoice["payload"], currency="XTR",
                prices=[LabeledPrice(label=invoice["label"], amount=invoice["stars"])],
            )
            return sent.message_id, None
        video = message.get("video")
        if not video:
            await self.pacer.admit(chat_id, urgent)
            return await self._api.send_text(chat_id, message["text"], message["buttons"]), None
        markup = None
        if message["buttons"]:
            markup = InlineKeyboardMarkup(inline_keyboard=[
                [InlineKeyboardButton(text=b["text"], callback_data=b["data"]) for b in row]
                for row in message["buttons"]
            ])
        self._work_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self._work_dir) as scratch:
            path = Path(scratch) / "copy.mp4"
            await self._copies.fetch(video["key"], video.get("url"), path)  # before its turn: storage is not Telegram
            await self.pacer.admit(chat_id, urgent)
            sent = await self._bot.send_video(
                chat_id, FSInputFile(path, filename="copy.mp4"), caption=message["text"],
                reply_markup=markup, supports_streaming=True,
            )
        media = sent.video or sent.document
        return sent.message_id, media.file_id if media is not None else None

    # -- reporting --------------------------------------------------------------------------

    def _report(self, report: dict[str, Any]) -> None:
        self._reports.append(report)
        self._known.pop(report["id"], None)
        self._failures.pop(report["id"], None)
        if len(self._known) < self._queue_limit:
            self._room.set()

    async def _report_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await sleep_unless(stop, self._report_every_s)
            try:
                await self._flush_reports()
            except Exception as error:  # noqa: BLE001 - kept and sent with the next ones
                log.warning("reports not delivered to core (%r); again shortly", error)
                self.counts["report_failures"] += 1
                await sleep_unless(stop, 1.0)

    async def _flush_reports(self) -> None:
        while self._reports:
            reports = self._reports[:500]
            await self._core.call("POST", "/v1/outbox/reports", {"reports": reports})
            del self._reports[: len(reports)]


async def _first(stop: asyncio.Event, waiting: Any, timeout: float | None = None) -> None:
    """Wait for `waiting`, `stop`, or the timeout, whichever comes first."""
    task = asyncio.ensure_future(waiting)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
        stopped.cancel()

