"""The server inventory in a local SQLite file, control's own (never the working database).

sqlite3 is synchronous: each call runs in a thread with a connection of its own, so the
panel's event loop never waits on the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from videocopies.application.inventory import Server, ServerExists

_SCHEMA = """
CREATE TABLE IF NOT EXISTS servers (
    host TEXT PRIMARY KEY,
    roles TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    added_at TEXT NOT NULL
)
"""


class SqliteServerInventory:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One connection per call, committed when the block succeeds, closed either way."""
        with contextlib.closing(sqlite3.connect(self._path, timeout=5.0)) as conn, conn:
            yield conn

    async def servers(self) -> Sequence[Server]:
        return await asyncio.to_thread(self._servers)

    async def add(self, server: Server) -> None:
        await asyncio.to_thread(self._add, server)

    async def remove(self, host: str) -> bool:
        return await asyncio.to_thread(self._remove, host)

    def _servers(self) -> list[Server]:
        with self._connect() as conn:
            rows = conn.execute("SELECT host, roles, note, added_at FROM servers ORDER BY host").fetchall()
        return [
            Server(host, tuple(roles.split(",")), note, datetime.fromisoformat(at)) for host, roles, note, at in rows
        ]

    def _add(self, server: Server) -> None:
        if server.added_at is None:
            raise ValueError("a server is added with the time it was added")
        try:
            with self._connect() as conn:
                conn.execute(
                    "INSERT INTO servers (host, roles, note, added_at) VALUES (?, ?, ?, ?)",
                    (server.host, ",".join(server.roles), server.note, server.added_at.isoformat()),
                )
        except sqlite3.IntegrityError as taken:
            raise ServerExists(server.host) from taken

    def _remove(self, host: str) -> bool:
        with self._connect() as conn:
            return conn.execute("DELETE FROM servers WHERE host = ?", (host,)).rowcount > 0
