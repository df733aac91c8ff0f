"""A copy stored under a lease that never checkpointed it (its worker killed after the upload,
or a zombie refused) is removed once the job has closed; checkpointed copies and open jobs'
files are kept (found by the chaos soak: such copies were left in storage for good). The same
sweep of the object lifecycle removes a source no row keeps once its inbox event is handled,
and keeps one edge is still fetching."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import psycopg

from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.objects import ObjectLifecycle
from videocopies.domain.objects import Lifetimes
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed

ORDER = """INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
    VALUES (%s, 1, 'sources/1/a.mp4', 2, 4, 8, 1, now(), 't', 1, %s, '{}', now(), 1)"""
JOB = """INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at,
    version, owner_token, lease_until) VALUES (%s, %s, %s, '[]', 3, 1, false, now(), 1, %s, %s)"""
CHECKPOINT = """INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height,
    created_at) VALUES (%s, 0, %s, 1, 'x', 1, 2, 2, now())"""
FETCHING = """INSERT INTO inbox (update_id, user_id, kind, payload, received_at)
    VALUES (20, 1, 'video', '{"video": {"source_key": null, "fetching": true}}', now())"""


def test_strays_of_closed_jobs_and_handled_events_go_and_the_rest_stay(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    store = S3ObjectStore(f"t-{uuid.uuid4().hex[:16]}", seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
    blob = tmp_path / "copy.mp4"
    blob.write_bytes(b"copy")
    with psycopg.connect(url) as conn:
        conn.execute(ORDER, ["closed", "done"])
        conn.execute(JOB, ["j-closed", "closed", "done", None, None])
        conn.execute(CHECKPOINT, ["j-closed", "copies/closed/0-kept.mp4"])
        conn.execute(ORDER, ["open", "running"])
        conn.execute(JOB, ["j-open", "open", "leased", "tok", "2999-01-01"])
        conn.execute(FETCHING)
    keys = ["copies/closed/0-kept.mp4", "copies/closed/0-killed.mp4", "copies/closed/1-zombie.mp4",
            "copies/open/0-uploading.mp4", "sources/1/19.mp4", "sources/1/20.mp4"]

    async def scenario() -> tuple[int, list[str]]:
        await store.ensure_bucket()
        for key in keys:
            await store.put_file(key, blob)
        pool = make_pool(url, max_size=1)
        await pool.open(wait=True)
        try:
            lifecycle = ObjectLifecycle(PostgresObjectRows(pool), store, SystemClock(), Lifetimes())
            removed = (await lifecycle()).deleted["stray"]
        finally:
            await pool.close()
        return removed, sorted(await store.keys("copies") + await store.keys("sources"))

    removed, left = asyncio.run(scenario())
    assert removed == 3
    assert left == ["copies/closed/0-kept.mp4", "copies/open/0-uploading.mp4", "sources/1/20.mp4"]
    store.close()
