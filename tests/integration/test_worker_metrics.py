"""A worker on another host, as far as it knows (only core's URL and its token; objects through
signed URLs to SeaweedFS), reports what it did, and core's /metrics shows it under the worker's
name: the copies it stored, the bytes it moved, its CPU and its memory."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from media import make_clip
from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed
from videocopies.runtime.launch import CoreProcess, issue_token, worker_process

from .harness import fetch_all, wait_for
from .test_worker_over_http import SECRET, _order


def _worker_figures(core_url: str, node: str) -> dict[str, float]:
    text = httpx.get(f"{core_url}/metrics", timeout=10).text
    return {sample.name.removeprefix("videocopies_worker_"): sample.value
            for family in text_string_to_metric_families(text) if family.name.startswith("videocopies_worker_")
            for sample in family.samples if sample.labels.get("node") == node}


def _ordered_on_s3(url: str, seaweed: LocalSeaweed, clip: Path) -> tuple[S3ObjectStore, str, CoreProcess]:
    """An order of 5 copies of `clip`, stored in a bucket of its own, and a core that serves it."""
    bucket = f"t-{uuid.uuid4().hex[:16]}"
    store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
    order_id = asyncio.run(_order(url, store, clip, copies=5))
    core = CoreProcess(url, quote_secret=SECRET, VIDEOCOPIES_S3_ENDPOINT=seaweed.endpoint_url,
                       VIDEOCOPIES_S3_BUCKET=bucket, VIDEOCOPIES_S3_ACCESS_KEY=seaweed.access_key,
                       VIDEOCOPIES_S3_SECRET_KEY=seaweed.secret_key).start()
    return store, order_id, core


def test_cores_metrics_show_what_each_worker_did(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "clip.mp4", seconds=2, width=360, height=640)
    store, order_id, core = _ordered_on_s3(url, seaweed, clip)
    worker = worker_process(core.url, issue_token(url, "w-seen"), tmp_path / "work")
    try:
        wait_for(lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done",
                 timeout=120)
        # The figures of a job come with the worker's next claim, right after it.
        wait_for(lambda: _worker_figures(core.url, "w-seen").get("copies_made") == 5, timeout=30)
        shown = _worker_figures(core.url, "w-seen")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        core.stop()
        store.close()
    sizes = [size for (size,) in fetch_all(url, "SELECT size FROM job_checkpoints")]
    assert len(sizes) == 5
    assert shown["downloaded_bytes"] == clip.stat().st_size
    assert shown["uploaded_bytes"] == sum(sizes)
    assert 0.5 < shown["cpu_seconds"] < 600  # five renders, each verified and gated, and the imports
    assert 30 * 2**20 < shown["rss_bytes"] < 2**30


def test_a_workers_figures_stay_fresh_through_a_long_job(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    """Its renewals carry them: the copies it made show before the job ends, not with its next claim."""
    url = pg_server.url(database)
    clip = make_clip(tmp_path / "clip.mp4", seconds=4, width=720, height=1280)
    store, order_id, core = _ordered_on_s3(url, seaweed, clip)
    # A renewal every 0.5 s (a third of the lease the worker plans for).
    worker = worker_process(core.url, issue_token(url, "w-long"), tmp_path / "work", VIDEOCOPIES_LEASE_TTL_S="1.5")
    seen_while_running: list[float] = []

    def order_done() -> bool:
        state = fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0]
        made = _worker_figures(core.url, "w-long").get("copies_made", 0)
        if state != "done" and made:
            seen_while_running.append(made)
        return state == "done"

    try:
        wait_for(order_done, timeout=180)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        core.stop()
        store.close()
    assert seen_while_running and 1 <= min(seen_while_running) < 5, seen_while_running
