"""Wake-ups across processes: LISTEN on one direct connection, a slow safety poll behind it.

Never through PgBouncer: in transaction mode a LISTEN lands on a shared server session and
notices go nowhere. The NOTIFY is sent after the change committed, from a connection of its
own and coalesced: a NOTIFY inside the writing transaction would make every such commit on
the server queue on one lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg
from psycopg import sql

from videocopies.adapters.memory.notifier import InProcessNotifier
from videocopies.adapters.postgres import queries

CHANNEL = "videocopies_jobs"
log = logging.getLogger(__name__)


class PostgresNotifier(InProcessNotifier):
    def __init__(self, direct_url: str, safety_poll_s: float = 1.0) -> None:
        super().__init__()
        self._url = direct_url
        self._safety_poll_s = safety_poll_s
        self._listening: psycopg.AsyncConnection | None = None
        self._sending: psycopg.AsyncConnection | None = None
        self._listener: asyncio.Task[None] | None = None
        self._announcer: asyncio.Task[None] | None = None
        self._pending: set[str] = set()
        self._others: dict[str, Callable[[], None]] = {}
        self.notices = 0  # received
        self.announced = 0  # sent

    def on(self, channel: str, callback: Callable[[], None]) -> None:
        """Also listen on `channel` (before `start`): other news core reacts to, such as a
        node being revoked, rides on the same direct connection."""
        self._others[channel] = callback

    async def start(self) -> None:
        self._listening = await self._connect(listen=True)
        self._sending = await self._connect(listen=False)
        self._listener = asyncio.create_task(self._listen(), name="videocopies-listen")

    async def stop(self) -> None:
        if self._announcer is not None and not self._announcer.done():
            # Deliver what was announced before stopping; a lost notice would cost a safety poll.
            with contextlib.suppress(TimeoutError, psycopg.Error):
                await asyncio.wait_for(asyncio.shield(self._announcer), 2.0)
        for task in (self._announcer, self._listener):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for conn in (self._listening, self._sending):
            if conn is not None:
                await conn.close()

    def job_available(self) -> None:
        """Wake this process's claimers now, and the other processes' by one NOTIFY that
        covers every announcement made while the previous one was on its way."""
        super().job_available()
        self.announce(CHANNEL)

    def announce(self, channel: str) -> None:
        """Notify `channel` after the change committed; announcements made meanwhile share one."""
        if self._sending is None:
            return
        self._pending.add(channel)
        if self._announcer is None or self._announcer.done():
            self._announcer = asyncio.create_task(self._announce(), name="videocopies-notify")

    async def wait(self, ticket: int, timeout: float) -> bool:
        # Returning after the safety-poll interval makes the caller look anyway, so a lost
        # notice (a dropped connection) costs at most that interval.
        return await super().wait(ticket, min(timeout, self._safety_poll_s))

    async def _announce(self) -> None:
        while self._pending:
            channel = self._pending.pop()
            try:
                assert self._sending is not None
                await self._sending.execute(queries.sql("announce"), [channel])
                if channel == CHANNEL:
                    self.announced += 1
            except psycopg.OperationalError as lost:
                log.warning("connection sending notifications lost (%s); reconnecting", lost)
                await asyncio.sleep(0.5)
                with contextlib.suppress(psycopg.OperationalError):
                    self._sending = await self._connect(listen=False)
                self._pending.add(channel)

    async def _listen(self) -> None:
        while True:
            try:
                assert self._listening is not None
                async for notice in self._listening.notifies():
                    if notice.channel != CHANNEL:
                        self._others[notice.channel]()
                        continue
                    self.notices += 1
                    InProcessNotifier.job_available(self)  # local only: never echo it back
            except psycopg.OperationalError as lost:
                log.warning("connection listening for notifications lost (%s); reconnecting", lost)
                InProcessNotifier.job_available(self)  # something may have been announced meanwhile
                for callback in self._others.values():
                    callback()
                await asyncio.sleep(0.5)
                with contextlib.suppress(psycopg.OperationalError):
                    self._listening = await self._connect(listen=True)

    async def _connect(self, listen: bool) -> psycopg.AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        if listen:
            for channel in (CHANNEL, *self._others):
                await conn.execute(sql.SQL(queries.sql("listen")).format(sql.Identifier(channel)))
        return conn
