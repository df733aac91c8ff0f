"""An empty database of its own for each migration test: the revisions are run on it one by one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from videocopies.embedded.postgres import LocalPostgres


@pytest.fixture
def empty_url(pg_server: LocalPostgres) -> Iterator[str]:
    name = "stairway_" + hashlib.sha1(str(id(pg_server)).encode()).hexdigest()[:6]
    if pg_server.database_exists(name):
        pg_server.drop_database(name)
    pg_server.create_database(name)
    yield pg_server.url(name)
    pg_server.drop_database(name)
