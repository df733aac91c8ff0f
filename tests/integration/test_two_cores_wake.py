"""Parked claims are woken on whichever core holds them: two cores behind PgBouncer, each
LISTENing on its own direct connection, with a safety poll far longer than the test waits. A
claim parked on either core gets the job confirmed meanwhile within a second, by NOTIFY."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token
from videocopies.settings import Settings

from .test_two_cores import started_together

SECRET = "two-cores-wake" * 3
SAFETY_POLL_S = 30.0


async def _wake_s(core_url: str, token: str, cases: Any, user: int) -> tuple[float, str, str]:
    """Park a claim on the core at `core_url`, confirm an order elsewhere: how long until the
    parked claim got it, the order, and the job's order."""
    async with httpx.AsyncClient(base_url=core_url, headers={"Authorization": f"Bearer {token}"}) as http:
        parked = asyncio.ensure_future(http.post("/v1/jobs/claim", json={"wait_s": 20, "limit": 1}, timeout=30))
        while (await http.get("/_info")).json()["parked_claims"] < 1:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # past the claim's first look
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 50, None))
        quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(user), f"sources/{user}.mp4", 1))
        began = time.monotonic()
        order = await cases.confirm_order()(
            uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token)
        )
        answer = await parked
        assert answer.status_code == 200, answer.text
        jobs = answer.json()["jobs"]
        assert len(jobs) == 1, (time.monotonic() - began, answer.text)
        (job,) = jobs
        return time.monotonic() - began, order, job["order_id"]


async def _both(url: str, cores: list[CoreProcess], token: str) -> list[tuple[float, str, str]]:
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    pool, notifier = service.gateways.pool(), service.gateways.notifier()
    await pool.open(wait=True)
    await notifier.start()  # a confirmation announces its job by NOTIFY, as core's does
    try:
        return [await _wake_s(core.url, token, service.use_cases, 700 + n) for n, core in enumerate(cores)]
    finally:
        await notifier.stop()
        await pool.close()


def test_a_claim_parked_on_either_core_is_woken_by_notify(
    pg_server: LocalPostgres, pgbouncer: LocalPgBouncer, database: str
) -> None:
    url = pg_server.url(database)
    env = {"VIDEOCOPIES_SAFETY_POLL_S": str(SAFETY_POLL_S)}
    cores = [CoreProcess(pgbouncer.url(database), listen_url=url, quote_secret=SECRET, **env) for _ in range(2)]
    token = issue_token(url, "w-wake")
    with started_together(cores):
        woken = asyncio.run(_both(url, cores, token))
    for seconds, order, claimed in woken:
        assert claimed == order
        assert seconds < 1.5, woken  # NOTIFY, not the safety poll (30 s)

