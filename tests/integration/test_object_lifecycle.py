"""The object lifecycle on PostgreSQL and SeaweedFS: rows come with the facts they record (an
inbox video, a checkpoint, a delivery); a source goes its grace after its order closed, a copy
its retention after delivery, nothing earlier; a store that is away deletes nothing and loses
no row; the figures show what the store holds."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.memory.clock import ManualClock
from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.postgres.pool import make_pool
from videocopies.application.objects import ObjectLifecycle
from videocopies.domain.objects import Lifetimes
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed

SOURCE, COPY_0, COPY_1 = "sources/7/10.mp4", "copies/o1/0-a.mp4", "copies/o1/1-b.mp4"
VIDEO = {"file_id": "f", "size": 4, "duration_s": 1.0, "width": 2, "height": 2, "mime_type": "video/mp4",
         "source_key": SOURCE, "sha256": "ab" * 32, "fetching": False}
INBOX = """INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at)
    VALUES (10, 7, 'video', %s, now(), now())"""
ORDER = """INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
    VALUES ('o1', 7, %s, 2, 4, 8, 1, now(), 't', 1, 'running', '[]', now(), 1)"""
JOB = """INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at,
    version, owner_token, lease_until) VALUES ('j1', 'o1', 'leased', '[]', 3, 1, false, now(), 1, 't', '2999-01-01')"""
CHECKPOINT = """INSERT INTO job_checkpoints (job_id, idx, object_key, size, sha256, duration_s, width, height,
    created_at) VALUES ('j1', %s, %s, 4, 'cd', 1, 2, 2, now())"""
DELIVER = "UPDATE orders SET copy_states = %s WHERE order_id = 'o1'"
CLOSE = ["UPDATE jobs SET state = 'done', owner_token = NULL, lease_until = NULL WHERE job_id = 'j1'",
         "UPDATE orders SET state = 'done' WHERE order_id = 'o1'"]
GRACE, RETENTION = timedelta(minutes=10), timedelta(hours=5)


def _states(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT key, state FROM stored_objects").fetchall())


def _record_an_order(url: str) -> None:
    """Through the facts alone: the rows are the triggers' (migration 0019)."""
    with psycopg.connect(url) as conn:
        conn.execute(INBOX, [Jsonb({"user": {"id": 7}, "video": VIDEO})])
        conn.execute(ORDER, [SOURCE])
        conn.execute(JOB)
        conn.execute(CHECKPOINT, [0, COPY_0])
        conn.execute(CHECKPOINT, [1, COPY_1])
        conn.execute(DELIVER, [Jsonb([["delivered", COPY_0], ["rendered", COPY_1]])])


def _s3(seaweed: LocalSeaweed) -> S3ObjectStore:
    return S3ObjectStore(f"t-{uuid.uuid4().hex[:16]}", seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)


def test_sources_and_copies_go_when_their_time_is_up_and_not_before(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url, store, clock = pg_server.url(database), _s3(seaweed), ManualClock()
    blob = tmp_path / "blob"
    blob.write_bytes(b"blob")
    _record_an_order(url)
    assert _states(url) == {SOURCE: "stored", COPY_0: "delivered", COPY_1: "stored"}

    async def scenario() -> list[tuple[dict[str, str], list[str]]]:
        await store.ensure_bucket()
        for key in (SOURCE, COPY_0, COPY_1):
            await store.put_file(key, blob)
        pool = make_pool(url, max_size=2)
        await pool.open(wait=True)
        seen = []
        try:
            with psycopg.connect(pg_server.url(database)) as conn:
                clock.set(conn.execute("SELECT now()").fetchone()[0])  # type: ignore[index]
            lifecycle = ObjectLifecycle(PostgresObjectRows(pool), store, clock, Lifetimes(GRACE, RETENTION))

            async def at(offset: timedelta) -> None:
                clock.set(start + offset)
                await lifecycle()
                seen.append((_states(url), sorted(await store.keys("sources") + await store.keys("copies"))))

            start = clock.now()
            await at(2 * RETENTION)  # the order still runs: its source stays, its delivered copy's time is up
            with psycopg.connect(url) as conn:
                for statement in CLOSE:
                    conn.execute(statement)
            start = clock.now()
            await at(timedelta(0))  # the order closed now
            await at(GRACE - timedelta(seconds=1))
            await at(GRACE + timedelta(seconds=1))
            await at(RETENTION - timedelta(seconds=1))
            await at(RETENTION + timedelta(seconds=1))
        finally:
            await pool.close()
        return seen

    seen = asyncio.run(scenario())
    store.close()
    kept = {SOURCE: "stored", COPY_0: "deleted", COPY_1: "stored"}
    assert seen[0] == (kept, [COPY_1, SOURCE])
    assert seen[1] == seen[2] == seen[0]  # grace not over
    source_gone = {**kept, SOURCE: "deleted"}
    assert seen[3] == seen[4] == (source_gone, [COPY_1])  # the copy never delivered waits its retention
    # ... and the first copy's row, deleted a retention ago, is forgotten
    assert seen[5] == ({SOURCE: "deleted", COPY_1: "deleted"}, [])


def test_a_store_that_is_away_deletes_nothing_and_loses_no_row(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url, store, clock = pg_server.url(database), _s3(seaweed), ManualClock()
    away = S3ObjectStore(store.bucket, "http://127.0.0.1:9", seaweed.access_key, seaweed.secret_key)
    blob = tmp_path / "blob"
    blob.write_bytes(b"blob")
    _record_an_order(url)
    with psycopg.connect(url) as conn:
        for statement in CLOSE:
            conn.execute(statement)

    async def scenario() -> tuple[int, dict[str, str], dict[str, str], list[str]]:
        await store.ensure_bucket()
        for key in (SOURCE, COPY_0, COPY_1):
            await store.put_file(key, blob)
        pool = make_pool(url, max_size=2)
        await pool.open(wait=True)
        try:
            rows, zero = PostgresObjectRows(pool), Lifetimes(timedelta(0), timedelta(0))
            clock.set(clock.now().replace(year=2999))
            failed = (await ObjectLifecycle(rows, away, clock, zero)()).failed
            during = _states(url)
            await ObjectLifecycle(rows, store, clock, zero)()
            return failed, during, _states(url), await store.keys("copies") + await store.keys("sources")
        finally:
            await pool.close()

    failed, during, after, left = asyncio.run(scenario())
    store.close()
    assert failed >= 1
    assert during == {SOURCE: "stored", COPY_0: "delivered", COPY_1: "stored"}
    assert after == {} and left == []  # all gone, and with a retention of 0 their rows at once


def test_the_figures_show_objects_by_state_the_store_disk_and_the_nodes_scratch(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    _record_an_order(url)
    store = FilesystemObjectStore(tmp_path / "objects")

    async def scrape() -> str:
        pool = make_pool(url, max_size=1)
        await pool.open(wait=True)
        try:
            metrics = CoreMetrics(objects=PostgresObjectRows(pool).figures, store_disk=store.disk_usage)
            metrics.scratch_reported("worker", "worker-1", 1234, 3)
            return (await metrics.render()).decode()
        finally:
            await pool.close()

    text = asyncio.run(scrape())
    assert 'videocopies_objects{kind="source",state="stored"} 1.0' in text
    assert 'videocopies_objects{kind="copy",state="delivered"} 1.0' in text
    assert 'videocopies_object_bytes{kind="copy",state="stored"} 4.0' in text
    assert 'videocopies_store_disk_bytes{what="free"}' in text
    assert 'videocopies_scratch{node="worker-1",role="worker",what="bytes"} 1234.0' in text
