"""The local PostgreSQL and PgBouncer harness, exercised against the real servers."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres, LocalServerError, free_port, process_alive

from .harness import (
    connect,
    database_backends,
    fetch_one,
    pg_ctl_status,
    pool_server_connections,
    started,
    temporary_database,
)

STARTUP_SECONDS: dict[str, float] = {}
POOL_SIZE = 10


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres()
    with started(server) as seconds:
        STARTUP_SECONDS["postgres"] = seconds
        yield server


@pytest.fixture(scope="module")
def bouncer(pg: LocalPostgres) -> Iterator[LocalPgBouncer]:
    server = LocalPgBouncer(upstream_port=pg.port, default_pool_size=POOL_SIZE)
    with started(server) as seconds:
        STARTUP_SECONDS["pgbouncer"] = seconds
        yield server


def test_startup_is_fast(pg: LocalPostgres, bouncer: LocalPgBouncer) -> None:
    print(f"startup: postgres {STARTUP_SECONDS['postgres']:.2f} s, pgbouncer {STARTUP_SECONDS['pgbouncer']:.3f} s")
    # The target is < 2 s; the bound is loose so that a busy CI machine does not fail the build.
    assert STARTUP_SECONDS["postgres"] < 10
    assert STARTUP_SECONDS["pgbouncer"] < 5


def test_query_direct_and_through_pgbouncer(pg: LocalPostgres, bouncer: LocalPgBouncer) -> None:
    assert fetch_one(pg.url(), "SELECT 1 + 1") == (2,)
    assert fetch_one(bouncer.url(), "SELECT %s::int * 3", [7]) == (21,)
    assert fetch_one(pg.url(), "SHOW listen_addresses") == ("127.0.0.1",)
    assert fetch_one(pg.url(), "SHOW fsync") == ("off",)


def test_skip_locked_gives_two_transactions_different_rows_through_pgbouncer(
    pg: LocalPostgres, bouncer: LocalPgBouncer
) -> None:
    with temporary_database(pg) as dbname:
        with connect(bouncer.url(dbname), autocommit=True) as conn:
            conn.execute("CREATE TABLE jobs (id int PRIMARY KEY)")
            conn.execute("INSERT INTO jobs SELECT generate_series(1, 3)")
        claim = "SELECT id FROM jobs ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
        with connect(bouncer.url(dbname)) as first, connect(bouncer.url(dbname)) as second:
            first_row = first.execute(claim).fetchone()
            second_row = second.execute(claim).fetchone()
            assert (first_row, second_row) == ((1,), (2,))


def test_create_database_clones_a_template(pg: LocalPostgres, bouncer: LocalPgBouncer) -> None:
    with temporary_database(pg, prefix="template") as template:
        with connect(pg.url(template), autocommit=True) as conn:
            conn.execute("CREATE TABLE coins (owner text, amount int)")
            conn.execute("INSERT INTO coins VALUES ('ann', 5), ('bob', 7)")
        # PgBouncer now keeps an idle server connection to the template, which must not block the copy.
        assert fetch_one(bouncer.url(template), "SELECT count(*) FROM coins") == (2,)
        with temporary_database(pg, template=template, prefix="clone") as clone:
            assert pg.database_exists(clone)
            assert fetch_one(pg.url(clone), "SELECT sum(amount) FROM coins") == (12,)
        assert not pg.database_exists(clone)


def test_drop_database_terminates_its_connections(pg: LocalPostgres) -> None:
    pg.create_database("doomed")
    with connect(pg.url("doomed")) as conn:
        conn.execute("SELECT 1")
        pg.drop_database("doomed")
        assert not pg.database_exists("doomed")
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
    pg.drop_database("doomed")  # absent: no error


def test_pg_stat_statements_can_be_created(pg: LocalPostgres) -> None:
    with temporary_database(pg) as dbname, connect(pg.url(dbname), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
        conn.execute("SELECT 42")
        row = conn.execute("SELECT count(*) FROM pg_stat_statements WHERE query = 'SELECT $1'").fetchone()
        assert row is not None and row[0] >= 1


async def test_200_async_clients_share_the_pool(pg: LocalPostgres, bouncer: LocalPgBouncer) -> None:
    with temporary_database(pg, prefix="burst") as dbname:
        done = asyncio.Event()
        peak = 0

        async def count_backends() -> None:
            nonlocal peak
            query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'"
            async with await psycopg.AsyncConnection.connect(pg.url(), autocommit=True) as conn:
                while not done.is_set():
                    row = await (await conn.execute(query, [dbname])).fetchone()
                    peak = max(peak, row[0] if row else 0)
                    await asyncio.sleep(0.005)

        async def client() -> None:
            async with await psycopg.AsyncConnection.connect(bouncer.url(dbname), prepare_threshold=None) as conn:
                await conn.execute("SELECT pg_sleep(0.01)")

        sampler = asyncio.create_task(count_backends())
        results = await asyncio.gather(*(client() for _ in range(200)), return_exceptions=True)
        done.set()
        await sampler

        assert [r for r in results if isinstance(r, BaseException)] == []
        assert 1 <= peak <= POOL_SIZE + 2
        assert pool_server_connections(bouncer, dbname) <= POOL_SIZE
        assert database_backends(pg, dbname) <= POOL_SIZE


def test_stop_twice_is_fine_and_leaves_no_process() -> None:
    base_dir = Path(tempfile.mkdtemp(prefix="videocopies-pg-test-"))
    try:
        pg = LocalPostgres(base_dir).start()
        bouncer = LocalPgBouncer(upstream_port=pg.port).start()
        pg_pid, bouncer_pid = pg.pid, bouncer.pid
        assert pg_pid and bouncer_pid and pg_ctl_status(pg) == 0
        for _ in range(2):
            bouncer.stop()
            pg.stop()
        assert not process_alive(pg_pid) and not process_alive(bouncer_pid)
        assert pg_ctl_status(pg) == 3  # the data dir is ours to keep; no server runs on it
        assert not bouncer.base_dir.exists()
    finally:
        shutil.rmtree(base_dir, ignore_errors=True)


def test_a_failed_start_shows_the_server_log() -> None:
    pg = LocalPostgres(extra_settings={"shared_buffers": "lots"})
    with pytest.raises(LocalServerError, match='invalid value for parameter "shared_buffers"'):
        pg.start()
    assert not pg.base_dir.exists()


def test_pgbouncer_without_upstream_fails_with_its_log() -> None:
    bouncer = LocalPgBouncer(upstream_port=free_port())
    with pytest.raises(LocalServerError, match="tail of .*pgbouncer.log"):
        bouncer.start(timeout=1)
    assert bouncer.pid is None


def test_missing_binaries_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIDEOCOPIES_PG_BINDIR", "/nonexistent/bin")
    with pytest.raises(LocalServerError, match="VIDEOCOPIES_PG_BINDIR=/nonexistent/bin has no pg_ctl"):
        LocalPostgres().start()
    monkeypatch.setenv("VIDEOCOPIES_PGBOUNCER", "/nonexistent/pgbouncer")
    with pytest.raises(LocalServerError, match="VIDEOCOPIES_PGBOUNCER=/nonexistent/pgbouncer"):
        LocalPgBouncer().start()
