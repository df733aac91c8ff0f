"""Wake-ups across processes: LISTEN on one direct connection, a slow safety poll behind it.

Never through PgBouncer: in transaction mode a LISTEN lands on a shared server session and
notices go nowhere. NOTIFY itself is sent inside the writing transaction (see queries.sql),
so it is delivered only when the new work is committed and visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg

from videocopies.adapters.memory.notifier import InProcessNotifier

CHANNEL = "videocopies_jobs"
log = logging.getLogger(__name__)


class PostgresNotifier(InProcessNotifier):
    def __init__(self, direct_url: str, safety_poll_s: float = 1.0) -> None:
        super().__init__()
        self._url = direct_url
        self._safety_poll_s = safety_poll_s
        self._task: asyncio.Task[None] | None = None
        self._conn: psycopg.AsyncConnection | None = None
        self.notices = 0

    async def start(self) -> None:
        self._conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        await self._conn.execute(f"LISTEN {CHANNEL}")
        self._task = asyncio.create_task(self._listen(), name="videocopies-listen")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._conn is not None:
            await self._conn.close()

    async def wait(self, ticket: int, timeout: float) -> bool:
        # Returning after the safety-poll interval makes the caller look anyway, so a lost
        # notice (a dropped connection) costs at most that interval.
        return await super().wait(ticket, min(timeout, self._safety_poll_s))

    async def _listen(self) -> None:
        assert self._conn is not None
        while True:
            try:
                async for _ in self._conn.notifies():
                    self.notices += 1
                    self.job_available()
            except psycopg.OperationalError as lost:
                log.warning("LISTEN connection lost (%s); reconnecting", lost)
                self.job_available()  # something may have been announced while we were away
                await asyncio.sleep(0.5)
                with contextlib.suppress(psycopg.OperationalError):
                    self._conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
                    await self._conn.execute(f"LISTEN {CHANNEL}")
