"""Helpers for integration tests against a real LocalPostgres and LocalPgBouncer, and roles run as
processes (no fixtures here)."""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres, as_service_user, pg_bindir
from videocopies.runtime.launch import stop_process


def connect(url: str, **kwargs: Any) -> psycopg.Connection:
    """A connection that also works through PgBouncer in transaction mode (no server-side prepared statements)."""
    return psycopg.connect(url, prepare_threshold=None, **kwargs)


def fetch_one(url: str, query: str, params: Any = None) -> tuple[Any, ...] | None:
    with connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchone()


def fetch_all(url: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    with connect(url) as conn:
        return conn.execute(query, params).fetchall()


def wait_for(predicate: Any, timeout: float = 60.0) -> None:
    """Poll `predicate` until it is true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def wait_answering(process: subprocess.Popen[bytes], url: str, timeout: float = 30.0, **get: Any) -> None:
    """Poll `url` until it answers 2xx; fail with the process's stderr if it exits first.
    `get`: more arguments for the httpx client (a `verify` context for https)."""
    deadline = time.monotonic() + timeout
    # One client for every try: a new one per try builds a TLS context each time, CPU taken from the role starting.
    with httpx.Client(timeout=1.0, **get) as client:
        while True:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode()[-2000:] if process.stderr else process.returncode)
            with contextlib.suppress(httpx.TransportError):
                if client.get(url).is_success:
                    return
            assert time.monotonic() < deadline, f"nothing answered on {url}"
            time.sleep(0.05)


def unique_name(prefix: str = "test") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def temporary_database(pg: LocalPostgres, template: str | None = None, prefix: str = "test") -> Iterator[str]:
    """A fresh database (optionally cloned from a template, e.g. one with the schema), dropped afterwards."""
    name = unique_name(prefix)
    pg.create_database(name, template=template)
    try:
        yield name
    finally:
        pg.drop_database(name)


@contextlib.contextmanager
def started(server: LocalPostgres | LocalPgBouncer) -> Iterator[float]:
    """Start a server, yield how long start() took in seconds, and stop it afterwards."""
    began = time.perf_counter()
    with server:
        yield time.perf_counter() - began


def show(bouncer: LocalPgBouncer, what: str) -> list[dict[str, Any]]:
    """SHOW <what> on PgBouncer's admin console, which speaks only the simple query protocol."""
    with psycopg.connect(bouncer.admin_url(), autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
        cursor = conn.cursor(row_factory=dict_row)
        cursor.execute(f"SHOW {what}")
        return cursor.fetchall()


def pool_server_connections(bouncer: LocalPgBouncer, dbname: str) -> int:
    """Server connections PgBouncer holds for a database, in any state."""
    states = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")
    return sum(row[state] for row in show(bouncer, "POOLS") if row["database"] == dbname for state in states)


def database_backends(pg: LocalPostgres, dbname: str) -> int:
    """Client backends connected to a database, counted directly on the server."""
    row = fetch_one(
        pg.url(),
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
        [dbname],
    )
    assert row is not None
    return row[0]


def pg_ctl_status(pg: LocalPostgres) -> int:
    """pg_ctl status's exit code: 0 running, 3 not running, 4 no usable data directory."""
    argv = as_service_user([pg_bindir() / "pg_ctl", "status", "-D", pg.data_dir])
    return subprocess.run([str(arg) for arg in argv], capture_output=True, cwd="/").returncode


@contextlib.contextmanager
def stopped_if_left(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """For a role started before the core it talks to (its imports take seconds, and it retries
    core until core answers): stopped on the way out if the test did not stop it, say because
    core failed to start."""
    try:
        yield process
    finally:
        if process.poll() is None:
            stop_process(process)
