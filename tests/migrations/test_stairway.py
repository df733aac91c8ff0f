"""Migrations: every revision goes up, down and up again, and the result is exactly the schema
of adapters/postgres/tables/."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.tables import metadata
from videocopies.embedded.postgres import LocalPostgres


def _revisions() -> list[str]:
    _, scripts = migrate._scripts()
    return [s.revision for s in reversed(list(scripts.walk_revisions()))]


def _tables(url: str) -> set[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {r[0] for r in rows} - {"alembic_version"}


def test_every_revision_upgrades_downgrades_and_upgrades_again(empty_url: str) -> None:
    migrate._run_alembic(empty_url, "upgrade", "0001")  # the first step creates the bookkeeping
    previous = "base"
    for revision in _revisions():
        migrate._run_alembic(empty_url, "upgrade", revision)
        after_up = _tables(empty_url)
        migrate.downgrade(empty_url, previous)
        migrate._run_alembic(empty_url, "upgrade", revision)
        assert _tables(empty_url) == after_up
        previous = revision
    assert migrate.check(empty_url).applied == tuple(_revisions())


def test_migrations_produce_exactly_the_declared_tables(empty_url: str) -> None:
    migrate._run_alembic(empty_url, "upgrade", "head")
    engine = create_engine("postgresql+psycopg://" + empty_url.split("://", 1)[1], poolclass=NullPool)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
    engine.dispose()
    assert diff == []


def test_init_records_checksums_and_the_accepted_code_levels(empty_url: str) -> None:
    status = migrate.init(empty_url, capacity=5)
    assert status.min_code_level <= migrate.CODE_LEVEL <= status.max_code_level
    with psycopg.connect(empty_url, autocommit=True) as conn:
        stored = dict(conn.execute("SELECT revision, checksum FROM schema_migrations").fetchall())
        slots = conn.execute("SELECT count(*) FROM capacity_slots").fetchone()[0]
    assert stored == migrate.known_checksums()
    assert slots == 5


def test_init_refuses_a_database_that_already_has_a_schema(empty_url: str) -> None:
    migrate.init(empty_url)
    with pytest.raises(migrate.SchemaError, match="already has a videocopies schema"):
        migrate.init(empty_url)


def test_init_creates_a_missing_database(pg_server: LocalPostgres) -> None:
    url = pg_server.url("created_by_init")
    try:
        migrate.init(url)
        assert migrate.check(url).revision == _revisions()[-1]
    finally:
        pg_server.drop_database("created_by_init")


def test_a_missing_database_is_refused_and_not_created(pg_server: LocalPostgres) -> None:
    with pytest.raises(migrate.SchemaError, match="does not exist: refusing to start"):
        migrate.check(pg_server.url("never_created"))
    assert not pg_server.database_exists("never_created")


def test_an_empty_database_is_refused_and_left_empty(empty_url: str) -> None:
    with pytest.raises(migrate.SchemaError, match="no videocopies schema"):
        migrate.check(empty_url)
    with pytest.raises(migrate.SchemaError, match="no videocopies schema"):
        migrate.upgrade(empty_url)
    assert _tables(empty_url) == set()


def test_code_outside_the_accepted_levels_is_refused(empty_url: str) -> None:
    migrate.init(empty_url)
    with psycopg.connect(empty_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_compat SET min_code_level = %s, max_code_level = %s",
                     (migrate.CODE_LEVEL + 1, migrate.CODE_LEVEL + 2))
    with pytest.raises(migrate.SchemaError, match="accepts code levels .* refusing to start"):
        migrate.check(empty_url)


def test_a_changed_migration_is_refused_by_its_checksum(empty_url: str) -> None:
    migrate.init(empty_url)
    with psycopg.connect(empty_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE revision = %s", (_revisions()[0],))
    with pytest.raises(migrate.SchemaError, match="checksum mismatch"):
        migrate.check(empty_url)


def test_every_migration_states_the_code_levels_it_accepts() -> None:
    _, scripts = migrate._scripts()
    for script in scripts.walk_revisions():
        low, high = script.module.code_levels
        assert 1 <= low <= high, script.revision
    head = scripts.get_current_head()
    assert scripts.get_revision(head).module.code_levels[0] <= migrate.CODE_LEVEL


_ONE_JOB = """
INSERT INTO coin_accounts (user_id, version, created_at) VALUES (1, 1, now());
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
VALUES ('o1', 1, 's', 5, 4, 20, 1, now(), 't', 7, 'confirmed', '[]', now(), 1);
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
VALUES ('j1', 'o1', 'queued', %s, 3, 0, false, now(), 0);
"""


def test_jobs_keep_their_seed_only_once_no_admitted_code_misreads_it(empty_url: str) -> None:
    """0029 admits level 12 beside 13, so jobs store every plan; 0030 admits 13 alone, and a
    job storing its seed holds the schema there."""
    migrate._run_alembic(empty_url, "upgrade", "0001")
    migrate._run_alembic(empty_url, "upgrade", "0029")
    assert (migrate.status(empty_url).min_code_level, migrate.status(empty_url).jobs_keep_seed) == (12, False)
    migrate.upgrade(empty_url, "0030")
    assert migrate.status(empty_url).jobs_keep_seed
    with psycopg.connect(empty_url, autocommit=True) as conn:
        *rows, job = _ONE_JOB.strip().split(";\n")
        for row in rows:
            conn.execute(row)
        conn.execute(job, ('{"seed": 7, "copies": 5}',))
    with pytest.raises(Exception, match="store their plans as a seed"):
        migrate.downgrade(empty_url, "0029")
    assert migrate.status(empty_url).revision == "0030"


def test_db_upgrade_stops_at_the_revision_it_is_given(empty_url: str) -> None:
    """An operator's upgrade in steps (docs/operations.md), from the command line: it stops where
    it is told, and says so when this code cannot run there."""
    migrate._run_alembic(empty_url, "upgrade", "0001")
    migrate._run_alembic(empty_url, "upgrade", "0030")
    env = {**os.environ, "VIDEOCOPIES_DATABASE_URL": empty_url}

    def upgrade(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "videocopies.cli", "db", "upgrade", *more],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )

    stopped = upgrade("--to", "0032")
    assert stopped.returncode == 2
    assert "accepts code levels 13..13, but this code is level 14" in stopped.stderr
    assert migrate.status(empty_url).revision == "0032"
    done = upgrade()
    assert done.returncode == 0 and "accepts code levels 13..14" in done.stdout
    assert migrate.status(empty_url).jobs_keep_seed
