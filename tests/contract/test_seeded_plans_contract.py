"""A confirmed job's copies are handed out with the plans its order's seed fixes, on every
backend, whether the job stores the seed (revision 0030) or every plan (a schema that still
admits code of level 12), laid out as a new order's (`LAYOUT`) or, for a job stored before
layouts, as layout 1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from dependency_injector import providers

from videocopies.adapters.memory import ManualClock, SequentialIds
from videocopies.adapters.postgres import migrate
from videocopies.application import use_cases as uc
from videocopies.domain.effects import LAYOUT, plan_copies
from videocopies.domain.shared import WorkerId
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings

from .conftest import SECRET, Backend
from .test_use_cases_contract import confirmed_order


async def _order_seed(b: Backend, order_id: str) -> int:
    async with b.new_uow() as uow:
        order = await uow.orders.get(order_id)
        assert order is not None
        return order.seed


@pytest.mark.parametrize("copies", [1, 5, 10])
async def test_a_claim_hands_out_the_plans_the_seed_fixes(backend: Backend, copies: int) -> None:
    b = backend
    order_id = await confirmed_order(b, copies=copies, coins=100)
    (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    assert job.order_id == order_id
    assert list(job.remaining) == list(enumerate(plan_copies(await _order_seed(b, order_id), copies, LAYOUT)))


@pytest.fixture(params=[True, False], ids=["seed", "every_plan"])
async def stored_as(request: pytest.FixtureRequest, pg_server: Any, database: str) -> AsyncIterator[Backend]:
    """PostgreSQL told how to store a new job's plans, as a role is told by its schema check."""
    url = pg_server.url(database)
    clock = ManualClock(datetime.now(UTC))
    service = PostgresService(settings=Settings(quote_secret=SECRET))
    service.gateways.config.from_dict(
        {"database_url": url, "pool_size": 2, "direct": True, "jobs_keep_seed": request.param}
    )
    service.gateways.ids.override(providers.Object(SequentialIds()))
    service.gateways.clock.override(providers.Object(clock))
    pool = service.gateways.pool()
    await pool.open(wait=True, timeout=30)
    try:
        yield Backend(url, service.use_cases, service.gateways.uow, clock, None, lambda n: None, service)  # type: ignore[arg-type]
    finally:
        await pool.close()


def _stored_plans(url: str, order_id: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT plans FROM jobs WHERE order_id = %s", (order_id,)).fetchone()
    assert row is not None
    return row[0]


async def test_postgres_stores_the_seed_only_when_told_and_reads_either(stored_as: Backend) -> None:
    b, url = stored_as, stored_as.name
    assert migrate.status(url).jobs_keep_seed  # the head admits level 13 alone
    order_id = await confirmed_order(b)
    seed = await _order_seed(b, order_id)
    keep_seed = b.service.gateways.jobs_keep_seed()  # type: ignore[attr-defined]
    plans = plan_copies(seed, 5, LAYOUT)
    expected = {"seed": seed, "copies": 5, "layout": LAYOUT} if keep_seed else [p.to_dict() for p in plans]
    assert _stored_plans(url, order_id) == expected
    (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    assert list(job.remaining) == list(enumerate(plans))


async def test_a_job_stored_before_layouts_is_handed_out_the_plans_it_was_confirmed_with(stored_as: Backend) -> None:
    """A seed stored without a layout (code before 2026-12-04) is drawn as layout 1."""
    b, url = stored_as, stored_as.name
    order_id = await confirmed_order(b)
    seed = await _order_seed(b, order_id)
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE jobs SET plans = %s::jsonb WHERE order_id = %s",
                     (f'{{"seed": {seed}, "copies": 5}}', order_id))
    (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("a")))
    assert list(job.remaining) == list(enumerate(plan_copies(seed, 5, 1)))
    assert plan_copies(seed, 5, 1) != plan_copies(seed, 5, LAYOUT)


async def test_the_schema_refuses_plans_in_neither_form(stored_as: Backend) -> None:
    b, url = stored_as, stored_as.name
    order_id = await confirmed_order(b)
    with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("UPDATE jobs SET plans = '{\"seed\": \"7\", \"copies\": 5}' WHERE order_id = %s", (order_id,))
    with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.CheckViolation, match="ck_jobs_plans_form|neither"):
        conn.execute(
            "INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at,"
            " version) SELECT 'bad', order_id, 'queued', '{\"copies\": 5}', 3, 0, false, now(), 0 FROM orders"
            " WHERE order_id = %s",
            (order_id,),
        )
    with psycopg.connect(url) as conn:  # a write that does not name the plans leaves them as they are
        conn.execute("UPDATE jobs SET version = version + 1 WHERE order_id = %s", (order_id,))
        assert conn.execute("SELECT jsonb_typeof(plans) FROM jobs WHERE order_id = %s", (order_id,)).fetchone()
