"""Edge's sender: takes core's outbox, sends within Telegram's limits, reports each message.

Claimed messages wait on edge in their chat's turn (`turns`); each is sent by `delivery`.
What Telegram answers decides a message's fate: sent; 429 (everything pauses for the
window, the message is tried again first); a transient failure (tried again after a pause
that grows, a bounded number of times); or a final refusal, reported with its reason. After
"blocked" the chat's other queued messages are reported unsent with it: nothing more goes to
a user who blocked the bot until they write again. A message of kind `unbutton` sends nothing:
it takes the buttons off a message sent before (a quote whose price expired; core decides when,
so it happens whichever edge sent the quote).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiogram import Bot
from aiogram.exceptions import TelegramRetryAfter

from videocopies.adapters.http.answers import CoreRefused
from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.kept import keep, read_kept
from videocopies.adapters.telegram.blocked import BlockedChats
from videocopies.adapters.telegram.botapi import Refusal, refusal_of
from videocopies.adapters.telegram.delivery import CopyFetcher, Delivery
from videocopies.adapters.telegram.pacing import Pacer
from videocopies.adapters.telegram.progress import ProgressMessages, progress_of
from videocopies.adapters.telegram.supervise import first_of, sleep_unless, until_stopped
from videocopies.adapters.telegram.turns import ChatTurns
from videocopies.application.lapsing import UNBUTTON

log = logging.getLogger(__name__)
KEPT_REPORTS = "reports-unsent.json"  # in the work directory, between a stop and the next start


class Sender:
    def __init__(
        self, bot: Bot, core: CoreClient, copies: CopyFetcher, work_dir: Path, *,
        pacer: Pacer | None = None, blocked: BlockedChats | None = None, batch: int = 100, queue_limit: int = 400,
        hold_s: float = 60.0, connections: int = 16, copy_connections: int = 6, attempts: int = 6,
        longest_pause_s: float = 30.0, progress_every_s: float = 2.5,
        report_every_s: float = 0.05, clock: Callable[[], float] = time.monotonic, final_flush_s: float = 10.0,
    ) -> None:
        """`final_flush_s`: how long a stopping sender tries to hand core its last reports; what
        core did not take by then is kept in `work_dir` and handed over by the next start."""
        self._core = core
        self.pacer = pacer or Pacer()
        self.blocked = blocked or BlockedChats()
        self._delivery = Delivery(bot, copies, work_dir, self.pacer, connections)
        self.counts: Counter[str] = Counter()
        self.progress = ProgressMessages(self._delivery, progress_every_s, clock, counts=self.counts)
        self._turns = ChatTurns(self.pacer, clock, self.progress.due_at)
        self._batch, self._queue_limit, self._hold_s = batch, queue_limit, hold_s
        self._attempts, self._longest_pause_s, self._report_every_s = attempts, longest_pause_s, report_every_s
        self._clock = clock
        self._unbuttons = True  # this edge takes buttons off when core says (claimed with `unbuttons`)
        # Replies and copies in flight (waiting for the pacer, or being sent) are bounded
        # apart: copies queued for their turn never take the places a welcome needs.
        self._limits = {True: connections, False: min(copy_connections, connections)}
        self._flying = {True: 0, False: 0}
        self._known: dict[int, float] = {}  # message id -> claimed at (dedupes a claim that overlaps)
        self._failures: Counter[int] = Counter()
        self._reports: list[dict[str, Any]] = []
        self._kept, self._final_flush_s = work_dir / KEPT_REPORTS, final_flush_s
        self._news = asyncio.Event()
        self._room = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent = 0

    async def close(self) -> None:
        await self._delivery.close()

    @property
    def queued(self) -> int:
        return self._turns.queued

    async def run(self, stop: asyncio.Event) -> None:
        """Claim, send and report until `stop`; what was sent is reported before returning.
        Messages still queued are left to their hold: core offers them again after it.

        A report core cannot take while this stops (core away, answering 503) is kept on disk and
        sent first by the next start: lost, its message would be offered again when its hold
        ended and sent twice, and a copy among them charged only then. Core takes a report
        twice as once."""
        self._reports[:0] = self._take_kept()
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
                await asyncio.wait_for(self._flush_reports(), self._final_flush_s)
            self._keep_unsent()
            self._turns.clear()
            self._known.clear()

    # -- claiming ---------------------------------------------------------------------------

    async def _claim_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            room = self._queue_limit - self._turns.queued
            if room < min(self._batch, self._queue_limit // 2):
                self._room.clear()
                await first_of(stop, self._room.wait())
                continue
            body: dict[str, Any] = {"limit": min(self._batch, room), "wait_s": 20, "hold_s": self._hold_s}
            if self._unbuttons:
                body["unbuttons"] = True
            claim = self._core.call("POST", "/v1/outbox/claim", body, timeout=45)
            try:
                answer = await until_stopped(stop, claim)
            except Exception as error:  # noqa: BLE001 - core restarting: the client retried already
                if isinstance(error, CoreRefused) and error.status == 422 and self._unbuttons:
                    # A core older than `unbutton` messages refuses the field, and has none to give.
                    log.warning("core refuses `unbuttons`: claiming without it")
                    self._unbuttons = False
                    continue
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
            for worthless in self._turns.add(message):  # an older state of a progress message
                self.counts["progress_coalesced"] += 1
                self._report({"id": worthless["id"]})
        self._news.set()

    # -- sending ----------------------------------------------------------------------------

    async def _dispatch_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            wait = self._turns.release_due()
            turn = self._turns.next(
                reply_room=self._flying[True] < self._limits[True], copy_room=self._flying[False] < self._limits[False]
            )
            if turn is None:
                self._news.clear()
                await first_of(stop, self._news.wait(), timeout=min(wait if wait is not None else 1.0, 1.0))
                continue
            message, urgent = turn
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
                await self.progress.unbutton(message, urgent)
                if message["kind"] == UNBUTTON:
                    report: dict[str, Any] = {"id": message["id"]}
                elif progress_of(message) is not None:
                    report = {"id": message["id"], **await self.progress.show(message, urgent)}
                else:
                    message_id, file_id = await self._delivery.send(message, urgent)
                    self.progress.sent(message, message_id)
                    report = {"id": message["id"], "message_id": message_id}
                    if file_id:
                        report["file_id"] = file_id
            except Exception as error:  # noqa: BLE001 - every outcome is decided below
                pause_chat_s = self._failed(message, error)
                return
            self._report(report)
            self.sent += 1
        finally:
            self._flying[urgent] -= 1
            self._turns.after(chat_id, pause_chat_s)
            self._news.set()

    def _failed(self, message: dict[str, Any], error: BaseException) -> float:
        """Decide a failed send; returns how long its chat waits before trying again (0: at once)."""
        chat_id = message["chat_id"]
        if isinstance(error, TelegramRetryAfter):
            self.pacer.pause(float(error.retry_after))
            self.counts["flood_pauses"] += 1
            log.info("Telegram asked to wait %ss: every send pauses", error.retry_after)
            self._turns.requeue(message)
            return 0.0
        refusal = refusal_of(error)
        if refusal is None:
            self._failures[message["id"]] += 1
            failures = self._failures[message["id"]]
            if failures < self._attempts:
                self.counts["retries"] += 1
                log.info("message %s failed (%r); try %d of %d", message["id"], error, failures + 1, self._attempts)
                self._turns.requeue(message)
                return min(self._longest_pause_s, 0.5 * 2 ** (failures - 1))
            refusal = Refusal.GAVE_UP
        self._refused(message, refusal, str(error))
        if refusal in (Refusal.BLOCKED, Refusal.CHAT_NOT_FOUND):
            self.blocked.add(chat_id)
            self._drop_chat(chat_id, refusal)
        return 0.0

    def _drop_chat(self, chat_id: int, refusal: Refusal) -> None:
        """The chat's queued messages are reported unsent, with the refusal that ended it."""
        for message in self._turns.drop(chat_id):
            self._refused(message, refusal, "not sent: an earlier message of this chat was refused")

    def _refused(self, message: dict[str, Any], refusal: Refusal, error: str) -> None:
        self.counts[f"refused_{refusal.value}"] += 1
        log.info("message %s to %s not sent (%s): %s", message["id"], message["chat_id"], refusal.value, error[:200])
        self._report({"id": message["id"], "refusal": refusal.value, "error": error[:900] or refusal.value})

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
                # A stop cuts a flush short (core may be retried for minutes): the final one is bounded.
                await until_stopped(stop, self._flush_reports())
            except Exception as error:  # noqa: BLE001 - kept and sent with the next ones
                log.warning("reports not delivered to core (%r); again shortly", error)
                self.counts["report_failures"] += 1
                await sleep_unless(stop, 1.0)

    def _keep_unsent(self) -> None:
        if not self._reports:
            return
        try:
            keep(self._kept, self._reports)
        except OSError as error:  # the stop goes on: these messages may be sent again after their hold
            log.error("%d reports not taken by core while stopping, and not kept (%r)", len(self._reports), error)
            return
        log.warning("%d reports not taken by core while stopping: kept in %s for the next start",
                    len(self._reports), self._kept)

    def _take_kept(self) -> list[dict[str, Any]]:
        try:
            kept = read_kept(self._kept)
        except ValueError:
            log.warning("%s is unreadable: left for an operator, its reports not sent", self._kept)
            self._kept.rename(self._kept.with_name(self._kept.name + ".unreadable"))
            return []
        except OSError as error:  # the sender still runs; its kept reports wait for a readable disk
            log.error("could not read %s: %r", self._kept, error)
            return []
        if kept is None:
            return []
        self._kept.unlink()
        log.info("%d reports kept by the last stop: sent first", len(kept))
        return list(kept)

    async def _flush_reports(self) -> None:
        while self._reports:
            reports = self._reports[:500]
            await self._core.call("POST", "/v1/outbox/reports", {"reports": reports})
            del self._reports[: len(reports)]
