"""2,000 workers long-polling one core that reaches PostgreSQL through PgBouncer (10 server
connections): every request is answered, the parked claims cost the database next to
nothing, and work that arrives is handed to exactly as many claimers as there are jobs."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import httpx
import psycopg

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres, statements_by_query
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token_async
from videocopies.settings import Settings

SECRET = "load-secret" * 3
CLIENTS = 2000
JOBS = 20


async def _confirm_orders(url: str, count: int) -> None:
    """Orders confirmed by another process, announced by NOTIFY as core's edge would."""
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 4})
    pool, notifier = service.gateways.pool(), service.gateways.notifier()
    await pool.open(wait=True)
    await notifier.start()
    try:
        cases = service.use_cases
        for user in range(1, count + 1):
            await cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 50, timedelta(days=1)))
            quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(user), f"sources/{user}/v.mp4", 1))
            await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token))
    finally:
        await notifier.stop()
        await pool.close()


async def test_two_thousand_parked_claims_through_pgbouncer(
    pg_server: LocalPostgres, database: str, pgbouncer: LocalPgBouncer
) -> None:
    direct = pg_server.url(database)
    with psycopg.connect(direct, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    tokens = [await issue_token_async(direct, f"load-{n}") for n in range(20)]
    with CoreProcess(pgbouncer.url(database), listen_url=direct, quote_secret=SECRET) as core:
        # Many small clients: one connection pool of 2,000 costs its owner O(n) per response.
        clients = [httpx.AsyncClient(base_url=core.url, timeout=60, limits=httpx.Limits(max_connections=60))
                   for _ in range(CLIENTS // 50)]
        http = clients[0]
        try:

            async def claim(n: int) -> httpx.Response:
                headers = {"Authorization": f"Bearer {tokens[n % len(tokens)]}"}
                return await clients[n % len(clients)].post("/v1/jobs/claim", json={"wait_s": 20}, headers=headers)

            started = time.monotonic()
            parked = [asyncio.create_task(claim(n)) for n in range(CLIENTS)]
            deadline = time.monotonic() + 60
            while (await http.get("/_info")).json()["parked_claims"] < CLIENTS:
                assert time.monotonic() < deadline, "not every claim got parked"
                assert not any(task.done() for task in parked)
                await asyncio.sleep(0.2)

            parked_s = time.monotonic() - started
            before = statements_by_query(direct)
            await asyncio.sleep(3.0)
            spent = statements_by_query(direct) - before
            idle = spent.total()
            # Core's own timers run 2 glances every 10 s and about 9 statements once a minute
            # (coin expiry, the node list), which may fall in these 3 s; a parked claim that
            # asked the database even once in them would add 2,000.
            assert idle <= 12, f"{idle} statements in 3 s with {CLIENTS} parked claims: {dict(spent)}"

            # Answers with a job: core may answer a claim empty-handed from 75 % of its wait on.
            def with_job(task: asyncio.Task[httpx.Response]) -> bool:
                return task.done() and (task.result().status_code != 200 or bool(task.result().json()["jobs"]))

            started = time.monotonic()
            await _confirm_orders(direct, JOBS)
            deadline = time.monotonic() + 10
            while sum(with_job(task) for task in parked) < JOBS:
                assert time.monotonic() < deadline, "work arrived but claimers were not woken"
                await asyncio.sleep(0.05)
            woken_s = time.monotonic() - started
            await asyncio.sleep(0.5)
            answered = [task.result() for task in parked if with_job(task)]
            assert len(answered) == JOBS
            assert all(r.status_code == 200 and len(r.json()["jobs"]) == 1 for r in answered)
            handed = sorted(r.json()["jobs"][0]["job_id"] for r in answered)
            with psycopg.connect(direct) as conn:
                leased = [row[0] for row in conn.execute(
                    "SELECT job_id FROM jobs WHERE state = 'leased' AND attempts = 1 ORDER BY job_id"
                ).fetchall()]
            assert handed == leased and len(set(handed)) == JOBS  # each job to exactly one claimer
            print(f"parked in {parked_s:.1f}s, woken in {woken_s:.2f}s, idle statements {idle}")

            rest = await asyncio.gather(*(task for task in parked if not task.done()))
            print(f"rest answered {time.monotonic() - started:.1f}s after the orders")
        finally:
            for client in clients:
                await client.aclose()
    assert all(r.status_code == 200 and r.json() == {"jobs": []} for r in rest)
