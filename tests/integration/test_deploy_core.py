"""Blue/green for core: `videocopies deploy core` starts a new core beside the running one,
moves the nodes to it, and stops the old one only after the active leases were renewed
through the new one. A worker in the middle of a job finishes it with nothing redone."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from media import make_clip
from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.embedded.postgres import LocalPostgres, process_alive
from videocopies.embedded.seaweedfs import LocalSeaweed
from videocopies.runtime.launch import CoreProcess, issue_token, worker_process

from .harness import fetch_all, wait_for
from .test_worker_over_http import SECRET, _order


def _deploy(core: CoreProcess, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "videocopies.cli", "deploy", "core", "--from", core.url, *args],
        env={**os.environ, **core._env, **env}, capture_output=True, text=True, timeout=120,
    )


def test_deploy_moves_a_working_worker_to_the_new_core_and_redoes_nothing(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    bucket = f"t-{uuid.uuid4().hex[:16]}"
    store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
    # Ten copies of a 4 s clip: the job is still rendering when the new core takes over.
    clip = make_clip(tmp_path / "clip.mp4", seconds=4, width=540, height=960)
    order_id = asyncio.run(_order(url, store, clip, copies=10))
    env = {
        "VIDEOCOPIES_S3_ENDPOINT": seaweed.endpoint_url, "VIDEOCOPIES_S3_BUCKET": bucket,
        "VIDEOCOPIES_S3_ACCESS_KEY": seaweed.access_key, "VIDEOCOPIES_S3_SECRET_KEY": seaweed.secret_key,
        "VIDEOCOPIES_LEASE_TTL_S": "6",
    }
    control = {"VIDEOCOPIES_NODE_TOKEN": issue_token(url, "ops", "control"),
               "VIDEOCOPIES_WORK_DIR": str(tmp_path / "deploy")}
    old = CoreProcess(url, quote_secret=SECRET, **env)
    # The worker starts beside core: its imports take seconds, and it retries core until core answers.
    worker = worker_process(old.url, issue_token(url, "w-deploy"), tmp_path / "work", VIDEOCOPIES_LEASE_TTL_S="6")
    new_pid = None
    try:
        old.start()
        # Not enough memory for two cores: refused before anything starts.
        short = _deploy(old, control, "--min-free-mb", str(10**9))
        assert short.returncode == 2 and "not switching" in short.stderr
        assert httpx.get(f"{old.url}/_info").json()["moved_to"] is None

        wait_for(lambda: fetch_all(url, "SELECT count(*) FROM job_checkpoints")[0][0] >= 1, timeout=90)
        deployed = _deploy(old, control)
        assert deployed.returncode == 0, deployed.stderr[-3000:]
        new_url, new_pid = re.search(r"new core on (\S+) \(pid (\d+)", deployed.stdout).groups()  # type: ignore[union-attr]
        new_pid = int(new_pid)
        assert "1 leases renewed through the new core, 0 closed" in deployed.stdout, deployed.stdout
        assert old.process is not None and old.process.wait(timeout=30) == 0  # stopped, cleanly
        wait_for(
            lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done",
            timeout=120,
        )
        assert httpx.get(f"{new_url}/_info").json()["moved_to"] is None
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
        # The new core runs in a session of its own: stopped here whatever else fails. Its parent
        # (the deploy command) is gone, so it stays a zombie until init reaps it: not running.
        if new_pid is not None:
            os.kill(new_pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while process_alive(new_pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        if old.process is not None and old.process.poll() is None:
            old.stop()
    assert worker.returncode == 0, err.decode()[-3000:]
    assert b"core moved" in err
    (attempts, state), = fetch_all(url, "SELECT attempts, state FROM jobs")
    assert (attempts, state) == (1, "done")  # nothing was redone
    assert [i for i, in fetch_all(url, "SELECT idx FROM job_checkpoints ORDER BY idx")] == list(range(10))
    assert fetch_all(url, "SELECT count(*) FROM refused_writes") == [(0,)]
    store.close()
