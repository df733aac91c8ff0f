"""Fixtures shared by every test that needs real servers; each server starts only when a
test asks for it, once per session, and stops at the end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from videocopies.adapters.objectstore import LocalSeaweed
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.bouncer import LocalPgBouncer
from videocopies.adapters.postgres.cluster import LocalPostgres

TEMPLATE = "videocopies_template"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    with LocalPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def pg_template(pg_server: LocalPostgres) -> str:
    """One migrated database; every test clones it, which is far faster than migrating."""
    migrate.init(pg_server.url(TEMPLATE))
    return TEMPLATE


@pytest.fixture(scope="session")
def pgbouncer(pg_server: LocalPostgres) -> Iterator[LocalPgBouncer]:
    with LocalPgBouncer(upstream_port=pg_server.port, default_pool_size=10, max_client_conn=2000) as bouncer:
        yield bouncer


@pytest.fixture
def database(pg_server: LocalPostgres, pg_template: str) -> Iterator[str]:
    """A fresh database with the schema, dropped after the test; yields its name."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    pg_server.create_database(name, template=pg_template)
    try:
        yield name
    finally:
        pg_server.drop_database(name)


@pytest.fixture(params=["direct", "pgbouncer"])
def database_url(request: pytest.FixtureRequest, pg_server: LocalPostgres, database: str) -> str:
    """The test database reached directly and through PgBouncer in transaction mode."""
    if request.param == "direct":
        return pg_server.url(database)
    bouncer: LocalPgBouncer = request.getfixturevalue("pgbouncer")
    return bouncer.url(database)


@pytest.fixture(scope="session")
def seaweed() -> Iterator[LocalSeaweed]:
    """One SeaweedFS (S3) per session; tests use buckets of their own."""
    with LocalSeaweed() as server:
        yield server
