"""A private PgBouncer on loopback in front of a PostgreSQL server, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Self

import psycopg

from videocopies.embedded.local import (
    SERVICE_USER,
    LocalServer,
    LocalServerError,
    hand_to_service_user,
    log_tail,
    process_alive,
    run,
    running_as_root,
    service_account,
    system_program,
)


def pgbouncer_binary() -> str:
    """VIDEOCOPIES_PGBOUNCER, else pgbouncer on PATH, else Debian's /usr/sbin/pgbouncer."""
    return system_program("pgbouncer", "VIDEOCOPIES_PGBOUNCER", "PgBouncer")


class LocalPgBouncer(LocalServer):
    """One private PgBouncer: any database name maps to the same name upstream, trust auth on 127.0.0.1.

    Clients must not use protocol-level prepared statements (psycopg: prepare_threshold=None), LISTEN,
    session advisory locks or plain SET in transaction mode.
    """

    def __init__(
        self,
        upstream_host: str = "127.0.0.1",
        upstream_port: int = 5432,
        port: int | None = None,
        *,
        pool_mode: str = "transaction",
        default_pool_size: int = 10,
        max_client_conn: int = 2000,
        base_dir: Path | None = None,
    ) -> None:
        super().__init__(base_dir, port, "videocopies-pgbouncer-")
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.pool_mode = pool_mode
        self.default_pool_size = default_pool_size
        self.max_client_conn = max_client_conn
        self._binary, self._timeout = "", 10.0

    @property
    def ini_path(self) -> Path:
        return self.base_dir / "pgbouncer.ini"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "pgbouncer.log"

    @property
    def pid_path(self) -> Path:
        return self.base_dir / "pgbouncer.pid"

    def admin_url(self) -> str:
        """The admin console (SHOW POOLS, ...): simple query protocol only, e.g. psycopg's ClientCursor."""
        return self.url("pgbouncer")

    def start(self, timeout: float = 10.0) -> Self:
        self._timeout = timeout
        return super().start()

    def __repr__(self) -> str:
        return f"LocalPgBouncer(port={self.port}, upstream={self.upstream_host}:{self.upstream_port}, pid={self.pid})"

    def _find_programs(self) -> None:
        self._binary = pgbouncer_binary()

    def _prepare(self) -> None:
        self._terminate()  # a run that crashed left its pgbouncer behind on this directory

    def _launch(self, log_start: int) -> None:
        self._write_config()
        # As root pgbouncer switches to the service user itself, and dies silently if it cannot write its files.
        user = ["-u", service_account().pw_name] if running_as_root() else []
        run([self._binary, "-d", *user, self.ini_path], "pgbouncer", self.base_dir, self.log_path, log_start)
        self._wait_ready(self._timeout, log_start)

    def _bind_failed(self, log_start: int) -> bool:
        return "Address already in use" in log_tail(self.log_path, lines=1000, start=log_start)

    def _launch_failed(self) -> None:
        self._terminate()

    def _halt(self) -> None:
        """SIGTERM (immediate shutdown) and wait."""
        self._terminate()

    def _write_config(self) -> None:
        auth_file = self.base_dir / "userlist.txt"
        auth_file.write_text(f'"{SERVICE_USER}" ""\n')
        self.ini_path.write_text(
            "[databases]\n"
            f"* = host={self.upstream_host} port={self.upstream_port}\n"
            "\n[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {auth_file}\n"
            f"admin_users = {SERVICE_USER}\n"
            f"stats_users = {SERVICE_USER}\n"
            f"pool_mode = {self.pool_mode}\n"
            f"default_pool_size = {self.default_pool_size}\n"
            f"max_client_conn = {self.max_client_conn}\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            "server_reset_query =\n"
            "log_connections = 0\n"
            "log_disconnections = 0\n"
            f"pidfile = {self.pid_path}\n"
            f"logfile = {self.log_path}\n"
        )
        log_file = self.log_path
        log_file.touch()
        hand_to_service_user(self.base_dir, auth_file, self.ini_path, log_file)

    def _wait_ready(self, timeout: float, log_start: int) -> None:
        began = time.monotonic()
        while True:
            try:
                with psycopg.connect(self.url(), prepare_threshold=None, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as error:
                last_error = error
            waited = time.monotonic() - began
            pid = self._pid_written()
            # No pid file after a while means it exited before writing one (e.g. it could not open its files).
            exited = (pid is None and waited > 2) or (pid is not None and not process_alive(pid))
            if exited or waited > timeout or "FATAL" in log_tail(self.log_path, lines=1000, start=log_start):
                raise LocalServerError(
                    f"pgbouncer on port {self.port} did not serve a query within {waited:.1f} s "
                    f"({'it exited' if exited else 'still running'}): {last_error}\n"
                    f"--- tail of {self.log_path} ---\n{log_tail(self.log_path, start=log_start)}"
                )
            time.sleep(0.02)

    def _terminate(self, timeout: float = 5.0) -> None:
        pid = self.pid
        if pid is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while process_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            if not process_alive(pid):
                self.pid_path.unlink(missing_ok=True)
                return
        raise LocalServerError(f"pgbouncer (pid {pid}) survived SIGTERM and SIGKILL")
