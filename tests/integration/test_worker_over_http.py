"""A worker with no database and no storage credentials: only core's URL and its node
token. Sources and copies move through URLs core signs for that job (real S3, SeaweedFS).
Core is restarted in the middle of the job; the worker retries and the job finishes with
every copy made once."""

from __future__ import annotations

import asyncio
import signal
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from dependency_injector import providers

from media import make_clip
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token, worker_process
from videocopies.settings import Settings

from .harness import fetch_all, wait_for

SECRET = "http-secret" * 3


def _read_into(stream: IO[bytes], lines: list[bytes]) -> threading.Thread:
    """Collect a process's output line by line as it comes."""
    def read() -> None:
        for line in stream:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


async def _order(url: str, store: S3ObjectStore, clip: Path, copies: int) -> str:
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        key = "sources/1/clip.mp4"
        await store.ensure_bucket()
        await store.put_file(key, clip)
        cases = service.use_cases
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(1), LotKind.START, 50, timedelta(days=1)))
        quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(1), key, copies, clip.stat().st_size))
        return await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(1), quote.quote_id, quote.token))
    finally:
        await pool.close()


def test_a_worker_with_only_a_token_finishes_its_job_across_a_core_restart(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    bucket = f"t-{uuid.uuid4().hex[:16]}"
    store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
    clip = make_clip(tmp_path / "clip.mp4", seconds=6, width=540, height=960)
    order_id = asyncio.run(_order(url, store, clip, copies=5))
    s3 = {
        "VIDEOCOPIES_S3_ENDPOINT": seaweed.endpoint_url, "VIDEOCOPIES_S3_BUCKET": bucket,
        "VIDEOCOPIES_S3_ACCESS_KEY": seaweed.access_key, "VIDEOCOPIES_S3_SECRET_KEY": seaweed.secret_key,
    }
    core = CoreProcess(url, quote_secret=SECRET, **s3)
    # The worker starts beside core: its imports take seconds, and it retries core until core answers.
    worker = worker_process(core.url, issue_token(url, "w-http"), tmp_path / "work")
    assert worker.stderr is not None
    said: list[bytes] = []
    reader = _read_into(worker.stderr, said)
    try:
        core.start()
        wait_for(lambda: fetch_all(url, "SELECT count(*) FROM job_checkpoints")[0][0] >= 1, timeout=90)
        # The worker holds no credentials and has loaded no SQL driver.
        environment = Path(f"/proc/{worker.pid}/environ").read_bytes().decode(errors="replace")
        assert "DATABASE" not in environment and "S3_SECRET" not in environment and "postgresql:" not in environment
        mapped = Path(f"/proc/{worker.pid}/maps").read_text()
        assert "libpq" not in mapped and "psycopg" not in mapped

        # Core goes away in the middle of the job until the worker has needed it.
        core.stop()
        away = len(said)
        wait_for(lambda: any(b"core unreachable" in line for line in said[away:]), timeout=60)
        core.start()
        wait_for(
            lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done",
            timeout=90,
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        reader.join(timeout=10)
        core.stop()
    err = b"".join(said)
    assert worker.returncode == 0, err.decode()
    # It retried while core was away (not only while both were starting), and the retries were answered.
    assert b"core unreachable" in b"".join(said[away:])
    (attempts, state), = fetch_all(url, "SELECT attempts, state FROM jobs")
    assert (attempts, state) == (1, "done")  # nothing was redone
    rows = fetch_all(url, "SELECT idx, object_key, size, sha256 FROM job_checkpoints ORDER BY idx")
    assert [idx for idx, *_ in rows] == [0, 1, 2, 3, 4]
    for _, key, size, sha256 in rows:
        stored = asyncio.run(store.head(key))
        assert stored is not None and (stored.size, stored.sha256) == (size, sha256)
    assert fetch_all(url, "SELECT count(*) FROM refused_writes") == [(0,)]
    assert [p for p in (tmp_path / "work").rglob("*") if p.is_file()] == []
    store.close()
