"""Edge's downloads: a user's video is fetched from Telegram, checked and stored off the
receive path, so commands and button presses are stored while files arrive.

Its event is already in core's inbox, marked as fetching (core handles that user's later
events after it, in order); a download ends by completing the event: the stored source and
what the file itself says (duration, size, frame size and rate), or the reason it was
refused. One download per user at a time, a few side by side; a file the user sent before
(same `file_unique_id`) is not fetched again; the scratch space has a budget in bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest, TelegramRetryAfter

from videocopies.adapters.probe.source import SourceFacts
from videocopies.adapters.telegram.botapi import refusal_of
from videocopies.adapters.telegram.sources import SourceStore
from videocopies.adapters.telegram.supervise import sleep_unless

log = logging.getLogger(__name__)


Inspect = Callable[[Path], Awaitable[SourceFacts]]
StoreVideos = Callable[[list[dict[str, Any]]], Awaitable[None]]


@attrs.define(eq=False)
class Fetch:
    update_id: int
    user_id: int
    video: dict[str, Any]


class Downloads:
    def __init__(
        self, bot: Bot, sources: SourceStore, work_dir: Path, store_videos: StoreVideos, *,
        download_limit: int, inspect: Inspect | None = None, budget_bytes: int = 2 * 1024**3,
        parallel: int = 4, attempts: int = 3, remembered: int = 4096,
    ) -> None:
        self._bot, self._sources, self._work_dir = bot, sources, work_dir
        self._store_videos, self._inspect = store_videos, inspect
        self._download_limit, self._budget, self._attempts = download_limit, budget_bytes, attempts
        self._parallel = asyncio.Semaphore(parallel)
        self._users: dict[int, deque[Fetch]] = {}
        self._ready: deque[int] = deque()
        self._busy: set[int] = set()
        self._known: set[int] = set()  # update ids queued or in hand
        self._stored: OrderedDict[tuple[int, str], dict[str, Any]] = OrderedDict()
        self._remembered = remembered
        self._reserved = 0
        self._room = asyncio.Condition()
        self._news = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.counts: Counter[str] = Counter()

    @property
    def scratch_bytes(self) -> int:
        """Bytes of scratch space promised to downloads in hand."""
        return self._reserved

    @property
    def waiting(self) -> int:
        return len(self._known)

    def submit(self, update_id: int, user_id: int, video: dict[str, Any]) -> None:
        """Fetch this video (a second submit of the same update is ignored)."""
        if update_id in self._known:
            return
        self._known.add(update_id)
        self._users.setdefault(user_id, deque()).append(Fetch(update_id, user_id, dict(video)))
        if user_id not in self._busy and user_id not in self._ready:
            self._ready.append(user_id)
        self._news.set()

    async def run(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                if not self._ready:
                    self._news.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._news.wait(), 1.0)
                    continue
                await self._parallel.acquire()
                user_id = self._ready.popleft()
                fetch = self._users[user_id].popleft()
                self._busy.add(user_id)
                task = asyncio.ensure_future(self._turn(fetch, stop))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _turn(self, fetch: Fetch, stop: asyncio.Event) -> None:
        try:
            video = await self._complete(fetch)
            await self._report(fetch, video, stop)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the event stays fetching in core; it is offered again
            log.exception("video of update %s not completed", fetch.update_id)
            self.counts["failed"] += 1
        finally:
            self._parallel.release()
            self._known.discard(fetch.update_id)
            self._busy.discard(fetch.user_id)
            if self._users.get(fetch.user_id):
                self._ready.append(fetch.user_id)
            else:
                self._users.pop(fetch.user_id, None)
            self._news.set()

    async def _report(self, fetch: Fetch, video: dict[str, Any], stop: asyncio.Event) -> None:
        pause = 1.0
        while True:
            try:
                await self._store_videos([{"update_id": fetch.update_id, "user_id": fetch.user_id, "video": video}])
                return
            except Exception as error:  # noqa: BLE001 - core away: the client retried; keep trying a while
                if stop.is_set() or pause > 30:
                    raise
                log.warning("video of update %s not reported (%r); again in %.0f s", fetch.update_id, error, pause)
                await sleep_unless(stop, pause)
                pause *= 2

    async def _complete(self, fetch: Fetch) -> dict[str, Any]:
        """The video as core is told: stored with what the file says, or refused with why."""
        video = {**fetch.video, "fetching": False}
        unique = video.get("file_unique_id")
        if unique and (earlier := self._stored.get((fetch.user_id, unique))) is not None:
            self.counts["already_stored"] += 1
            self._stored.move_to_end((fetch.user_id, unique))
            return {**video, **earlier}
        size = int(video.get("size") or 0)
        if size > self._download_limit:
            return {**video, "refusal": "too_big"}
        need = size or self._download_limit
        await self._reserve(need)
        try:
            self._work_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=self._work_dir) as scratch:
                path = Path(scratch) / "source"
                refusal = await self._download(video["file_id"], path)
                if refusal is not None:
                    return {**video, "refusal": refusal}
                size = path.stat().st_size
                if size > self._download_limit:
                    return {**video, "size": size, "refusal": "too_big"}
                measured: dict[str, Any] = {"size": size}
                if self._inspect is not None:
                    facts = await self._inspect(path)
                    measured.update(duration_s=float(facts.duration_s), width=int(facts.width),
                                    height=int(facts.height), fps=float(facts.fps), probed=True)
                    if facts.refusal is not None:
                        return {**video, **measured, "refusal": facts.refusal}
                key, stored, sha256 = await self._sources.put_source(fetch.user_id, fetch.update_id, path)
        finally:
            await self._release(need)
        result = {**measured, "size": stored, "source_key": key, "sha256": sha256, "refusal": None}
        self.counts["stored"] += 1
        if unique:
            self._stored[(fetch.user_id, unique)] = result
            while len(self._stored) > self._remembered:
                self._stored.popitem(last=False)
        return {**video, **result}

    async def _download(self, file_id: str, path: Path) -> str | None:
        """Fetch from Telegram; None when the file is at `path`, else the refusal."""
        for attempt in range(1, self._attempts + 1):
            try:
                file = await self._bot.get_file(file_id)
                if not file.file_path:
                    return "unavailable"
                await self._bot.download_file(file.file_path, destination=path)
                self.counts["downloads"] += 1
                return None
            except TelegramBadRequest as refused:
                self.counts["refused"] += 1
                return "too_big" if "too big" in str(refused).lower() else "unavailable"
            except TelegramRetryAfter as slow_down:
                await asyncio.sleep(float(slow_down.retry_after))
            except Exception as error:  # noqa: BLE001 - 5xx, network: a few more tries, then refused
                if refusal_of(error) is not None or attempt == self._attempts:
                    log.info("file %s not fetched: %r", file_id, error)
                    return "unavailable"
                await asyncio.sleep(0.5 * 2 ** (attempt - 1))
        return "unavailable"

    async def _reserve(self, need: int) -> None:
        async with self._room:
            await self._room.wait_for(lambda: self._reserved == 0 or self._reserved + need <= self._budget)
            self._reserved += need

    async def _release(self, need: int) -> None:
        async with self._room:
            self._reserved -= need
            self._room.notify_all()
