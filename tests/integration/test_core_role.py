"""The core role on a real database: it starts, takes back leases that ran out, and stops
cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import psycopg
from dependency_injector import providers

from videocopies.adapters.memory import ManualClock
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId, WorkerId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings


async def _a_job_whose_lease_ran_out(url: str) -> str:
    service = PostgresService(settings=Settings(quote_secret=b"s" * 32, lease_ttl=timedelta(seconds=1)))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        cases = service.use_cases
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(1), LotKind.START, 50, None))
        quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(1), "s", 1))
        await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(1), quote.quote_id, quote.token))
        (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("gone")))
        return job.job_id
    finally:
        await pool.close()


def test_core_takes_back_lapsed_leases_and_stops_on_sigterm(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    job_id = asyncio.run(_a_job_whose_lease_ran_out(url))
    env = {**os.environ, "VIDEOCOPIES_QUOTE_SECRET": "s" * 32, "VIDEOCOPIES_DATABASE_URL": url}
    core = subprocess.Popen([sys.executable, "-m", "videocopies.cli", "core"], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        state = None
        while time.monotonic() < deadline:
            with psycopg.connect(url) as conn:
                state = conn.execute("SELECT state FROM jobs WHERE job_id = %s", (job_id,)).fetchone()[0]
            if state == "queued":
                break
            time.sleep(0.2)
        assert state == "queued"
    finally:
        core.send_signal(signal.SIGTERM)
        _, err = core.communicate(timeout=20)
    assert core.returncode == 0, err.decode()
