"""Every role refuses a missing or empty database with a clear message and creates nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

from videocopies.embedded.postgres import LocalPostgres


def _run(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VIDEOCOPIES_QUOTE_SECRET": "test" * 8, "VIDEOCOPIES_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "videocopies.cli", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("command", [("core",), ("db", "check"), ("db", "upgrade"), ("nodes", "list")])
def test_a_missing_database_is_refused(pg_server: LocalPostgres, command: tuple[str, ...]) -> None:
    result = _run(*command, url=pg_server.url("no_such_db"))
    assert result.returncode == 2
    assert "'no_such_db' does not exist: refusing to start" in result.stderr
    assert not pg_server.database_exists("no_such_db")


@pytest.mark.parametrize("command", [("core",), ("db", "check"), ("db", "upgrade"), ("nodes", "list")])
def test_an_empty_database_is_refused_and_stays_empty(pg_server: LocalPostgres, command: tuple[str, ...]) -> None:
    pg_server.create_database("empty_for_roles")
    try:
        result = _run(*command, url=pg_server.url("empty_for_roles"))
        assert result.returncode == 2
        assert "has no videocopies schema" in result.stderr
        with psycopg.connect(pg_server.url("empty_for_roles")) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        assert tables == (0,)
    finally:
        pg_server.drop_database("empty_for_roles")
