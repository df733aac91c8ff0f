"""A streaming-replication standby of a LocalPostgres: a base backup of the primary that
follows its WAL, synchronously when asked, and becomes the primary when promoted."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import psycopg
from psycopg import sql

from videocopies.embedded.postgres import (
    SERVICE_USER,
    LocalPostgres,
    LocalServerError,
    as_service_user,
    pg_bindir,
    run,
)


class LocalStandby(LocalPostgres):
    """A hot standby of `primary` on its own port. With `synchronous`, the primary waits for
    this standby to have the WAL of every commit before it answers the client, so nothing a
    client was told is committed can be lost by failing over to it."""

    def __init__(
        self,
        primary: LocalPostgres,
        name: str = "standby",
        base_dir: Path | None = None,
        port: int | None = None,
        *,
        synchronous: bool = True,
        extra_settings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(base_dir, port, durable=primary.durable, extra_settings=extra_settings)
        self.primary = primary
        self.name = name
        self.synchronous = synchronous

    @property
    def slot(self) -> str:
        return f"{self.name.replace('-', '_')}_slot"

    def settings(self) -> dict[str, str]:
        # The WAL receiver reports cluster_name as its application_name, which is what
        # the primary's synchronous_standby_names refers to.
        return {**super().settings(), "cluster_name": self.name, "hot_standby": "on"}

    def start(self, timeout: float = 30.0) -> LocalStandby:
        super().start()
        try:
            self.wait_streaming(timeout)
            if self.synchronous:
                self._make_synchronous(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> LocalStandby:
        return self.start()

    def replication_state(self) -> tuple[str, str] | None:
        """(state, sync_state) of this standby as the primary sees it, None when not connected."""
        with psycopg.connect(self.primary.url(), autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s", [self.name]
            ).fetchone()
        return (row[0], row[1]) if row else None

    def wait_streaming(self, timeout: float = 30.0) -> None:
        self._wait(lambda state: state is not None and state[0] == "streaming", "streaming", timeout)

    def in_recovery(self) -> bool:
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as conn:
            return bool(conn.execute("SELECT pg_is_in_recovery()").fetchone()[0])  # type: ignore[index]

    def promote(self, timeout: int = 60) -> float:
        """End recovery: from now on this server takes writes. Returns the seconds it took."""
        began = time.monotonic()
        argv = [pg_bindir() / "pg_ctl", "promote", "-D", self.data_dir, "-w", "-t", str(timeout), "-s"]
        run(as_service_user(argv), f"pg_ctl promote on port {self.port}", self.base_dir, self.log_path)
        return time.monotonic() - began

    def stop(self) -> None:
        """Stop the standby and undo what it asked of a primary that still runs: commits stop
        waiting for it first, and its slot goes after, or the primary would keep WAL for it
        for ever."""
        primary_running = self.primary.pid is not None
        if primary_running and self.synchronous:
            self._on_primary(
                "ALTER SYSTEM RESET synchronous_standby_names", "ALTER SYSTEM RESET synchronous_commit",
                "SELECT pg_reload_conf()",
            )
        super().stop()
        if primary_running:
            self._on_primary(
                sql.SQL(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    "WHERE slot_name = {} AND NOT active"
                ).format(sql.Literal(self.slot))
            )

    def _on_primary(self, *statements: str | sql.Composable) -> None:
        try:
            with psycopg.connect(self.primary.url(), autocommit=True, connect_timeout=5) as conn:
                for statement in statements:
                    conn.execute(statement)
        except psycopg.OperationalError:
            pass  # a primary on its way down keeps nothing for long

    def _initdb(self, bindir: Path) -> None:
        """Not a new cluster: a copy of the primary's, with standby.signal and primary_conninfo (-R)."""
        argv = [
            bindir / "pg_basebackup", "-D", self.data_dir, "-h", "127.0.0.1", "-p", str(self.primary.port),
            "-U", SERVICE_USER, "-R", "-X", "stream", "-c", "fast", "-C", "-S", self.slot,
        ]
        if not self.durable:
            argv.append("--no-sync")
        run(as_service_user(argv), f"pg_basebackup of port {self.primary.port}", cwd=self.base_dir)

    def _make_synchronous(self, timeout: float) -> None:
        """Set on the primary after the base backup, so this copy does not carry it: once
        promoted, it must not wait for a standby of its own that does not exist yet."""
        with psycopg.connect(self.primary.url(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(
                sql.SQL("ALTER SYSTEM SET synchronous_standby_names = {}").format(
                    sql.Literal(sql.Identifier(self.name).as_string(conn))
                )
            )
            conn.execute("ALTER SYSTEM SET synchronous_commit = 'on'")
            conn.execute("SELECT pg_reload_conf()")
        self._wait(lambda state: state == ("streaming", "sync"), "synchronous", timeout)

    def _wait(self, done: Callable[[tuple[str, str] | None], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            state = self.replication_state()
            if done(state):
                return
            time.sleep(0.05)
        raise LocalServerError(f"standby {self.name} on port {self.port} is not {what} after {timeout} s: {state}")


class Listening(Protocol):
    port: int


def failover_url(servers: Sequence[Listening], dbname: str = "postgres") -> str:
    """One URL for every server of a replicated cluster (or the PgBouncer beside each): a
    client connects to whichever takes writes now, so after a failover it finds the promoted
    standby itself."""
    hosts = ",".join(f"127.0.0.1:{server.port}" for server in servers)
    return f"postgresql://{SERVICE_USER}@{hosts}/{dbname}?target_session_attrs=read-write"
