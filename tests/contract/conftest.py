"""The same cases run against the in-memory adapters and real PostgreSQL (direct and
through PgBouncer), so the fakes the unit tests rely on cannot drift."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import attrs
import pytest
from dependency_injector import providers

from videocopies.adapters.memory import InMemoryPaymentProvider, ManualClock, SequentialIds
from videocopies.adapters.postgres import migrate
from videocopies.application.ports import UnitOfWork
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import InMemoryService, PostgresService
from videocopies.settings import Settings

SECRET = b"contract-secret" * 3


@attrs.define
class Backend:
    name: str
    cases: object
    uow: object  # a factory of units of work
    clock: ManualClock
    provider: InMemoryPaymentProvider
    set_capacity: Callable[[int], None]  # an operator's setting, not a port
    service: object = None  # the whole container, for what the use cases do not cover

    def new_uow(self) -> UnitOfWork:
        return self.uow()  # type: ignore[operator,no-any-return]


@pytest.fixture(params=["memory", "postgres", "pgbouncer", "postgres_wheel"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    # Leases are also checked against the database's now(), so the test clock starts at real time.
    clock = ManualClock(datetime.now(UTC))
    provider = InMemoryPaymentProvider()
    settings = Settings(quote_secret=SECRET)
    if request.param == "memory":
        service = InMemoryService(settings=settings)
        service.gateways.clock.override(providers.Object(clock))
        service.gateways.payment_provider.override(providers.Object(provider))
        store = service.gateways.store()
        yield Backend(
            "memory", service.use_cases, service.gateways.uow, clock, provider,
            lambda n: setattr(store, "capacity", n), service,
        )
        return
    wheel = request.param == "postgres_wheel"  # the major a machine without its own PostgreSQL runs
    server: LocalPostgres = request.getfixturevalue("wheel_pg_server" if wheel else "pg_server")
    name = request.getfixturevalue("wheel_database" if wheel else "database")
    url = server.url(name)
    if request.param == "pgbouncer":
        url = request.getfixturevalue("pgbouncer").url(name)
    service = PostgresService(settings=settings)
    # Direct connections prepare statements; through PgBouncer every write is literal SQL.
    service.gateways.config.from_dict({"database_url": url, "pool_size": 8, "direct": request.param != "pgbouncer"})
    service.gateways.clock.override(providers.Object(clock))
    service.gateways.ids.override(providers.Object(SequentialIds()))
    service.gateways.payment_provider.override(providers.Object(provider))
    pool = service.gateways.pool()
    await pool.open(wait=True, timeout=30)
    try:
        direct = server.url(name)
        yield Backend(
            request.param, service.use_cases, service.gateways.uow, clock, provider,
            lambda n: migrate.set_capacity(direct, n), service,
        )
    finally:
        await pool.close()


__all__ = ["Backend", "LocalPgBouncer"]
