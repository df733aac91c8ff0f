"""Wake-ups: a claimer parked on the notifier learns of new work once it is committed,
from another process's notifier, while the writes go through PgBouncer; a rolled-back
change announces nothing; and no commit waits on the server-wide notification lock."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from dependency_injector import providers

from videocopies.adapters.memory import InProcessNotifier, ManualClock
from videocopies.adapters.postgres.notifier import PostgresNotifier
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId, WorkerId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings


@pytest.fixture
async def wired(pg_server: LocalPostgres, database: str, pgbouncer) -> tuple[PostgresService, PostgresNotifier]:
    # The application writes through PgBouncer; the listener sits on a direct connection.
    service = PostgresService(settings=Settings(quote_secret=b"n" * 32))
    service.gateways.config.from_dict({"database_url": pgbouncer.url(database), "pool_size": 4})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    service.gateways.config.listen_url.from_value(pg_server.url(database))
    # Another process's notifier, as a worker-facing core would have: it only listens here.
    listener = PostgresNotifier(pg_server.url(database), safety_poll_s=5.0)
    await listener.start()
    announcer = service.gateways.notifier()
    await announcer.start()
    pool = service.gateways.pool()
    await pool.open(wait=True)
    yield service, listener
    await pool.close()
    await announcer.stop()
    await listener.stop()


async def _quote(service: PostgresService, user: int) -> tuple[UserId, str, str]:
    await service.use_cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 50, timedelta(days=1)))
    q = await service.use_cases.quote_order()(uc.QuoteOrderCommand(UserId(user), "s", 5))
    return q.user_id, q.quote_id, q.token


async def test_a_committed_confirmation_wakes_a_parked_claimer(wired) -> None:
    service, listener = wired
    user, quote_id, token = await _quote(service, 1)
    ticket = listener.ticket()
    parked = asyncio.create_task(listener.wait(ticket, timeout=5.0))
    await asyncio.sleep(0.05)
    began = time.perf_counter()
    await service.use_cases.confirm_order()(uc.ConfirmOrderCommand(user, quote_id, token))
    assert await parked is True
    assert time.perf_counter() - began < 1.0
    claimed = await service.use_cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
    assert [c.order_id for c in claimed] == [quote_id]


async def test_news_that_arrives_while_looking_is_not_missed(wired) -> None:
    service, listener = wired
    user, quote_id, token = await _quote(service, 2)
    ticket = listener.ticket()  # taken before looking for work
    assert await service.use_cases.claim_job()(uc.ClaimJobCommand(WorkerId("w"))) == []
    await service.use_cases.confirm_order()(uc.ConfirmOrderCommand(user, quote_id, token))
    await asyncio.sleep(0.2)
    began = time.perf_counter()
    assert await listener.wait(ticket, timeout=5.0) is True
    assert time.perf_counter() - began < 0.05


async def test_a_rolled_back_change_announces_nothing(wired) -> None:
    service, listener = wired
    user, quote_id, _ = await _quote(service, 3)
    ticket = listener.ticket()
    with pytest.raises(Exception, match="Forged"):
        await service.use_cases.confirm_order()(uc.ConfirmOrderCommand(user, quote_id, "forged-token"))
    assert await listener.wait(ticket, timeout=0.3) is False


async def test_the_safety_poll_returns_without_news() -> None:
    notifier = InProcessNotifier()
    began = time.perf_counter()
    assert await notifier.wait(notifier.ticket(), timeout=0.1) is False
    assert 0.09 <= time.perf_counter() - began < 0.5
