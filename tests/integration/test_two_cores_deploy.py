"""Blue/green through the balancer, and the single-host redirect kept on disk.

Behind HAProxy a core is replaced as docs/operations.md ("Two cores") says: drained at the
balancer, stopped with SIGTERM (its parked claims are answered empty at once, it takes no
more claims, it hands its duties on, its requests finish), replaced by a core on another
port, and put back. A worker in the middle of a job finishes it with nothing redone.

On a single host a node follows the 308 of `deploy core` and keeps the new address in its
work directory: restarted with the old address in its settings, it goes to the new core."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from media import make_clip
from videocopies.adapters.http.core_choice import MOVES_FILE
from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.embedded.haproxy import LocalHaproxy, haproxy_binary, server_name
from videocopies.embedded.local import LocalServerError
from videocopies.embedded.postgres import LocalPostgres, process_alive
from videocopies.embedded.seaweedfs import LocalSeaweed
from videocopies.runtime.core_loops import OBJECTS_DUTY
from videocopies.runtime.launch import CoreProcess, issue_token, stop_process, worker_process

from .harness import fetch_all, stopped_if_left, wait_for
from .test_two_cores import started_together
from .test_worker_over_http import SECRET, _order

LEASE_TTL_S = "6"


@pytest.fixture
def haproxy_installed() -> None:
    try:
        haproxy_binary()
    except LocalServerError as missing:
        pytest.skip(str(missing))


def _s3(seaweed: LocalSeaweed) -> tuple[S3ObjectStore, dict[str, str]]:
    bucket = f"t-{uuid.uuid4().hex[:16]}"
    store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
    env = {"VIDEOCOPIES_S3_ENDPOINT": seaweed.endpoint_url, "VIDEOCOPIES_S3_BUCKET": bucket,
           "VIDEOCOPIES_S3_ACCESS_KEY": seaweed.access_key, "VIDEOCOPIES_S3_SECRET_KEY": seaweed.secret_key}
    return store, env


def _holder_pid(url: str) -> int | None:
    rows = fetch_all(url, "SELECT holder FROM duty_leases WHERE duty = %s AND lease_until > now()", OBJECTS_DUTY)
    return int(rows[0][0].rsplit(":", 1)[1]) if rows else None


async def _parked_claim_answer_s(core_url: str, token: str, stop: asyncio.Future[None]) -> tuple[float, list]:
    """A claim parked directly on a core (20 s wait): how long after `stop` its answer came. The
    caller sees it parked (core's /_info) before it stops the core; asking here as well raced
    the stop (a request to a core already gone)."""
    async with httpx.AsyncClient(base_url=core_url, headers={"Authorization": f"Bearer {token}"}) as http:
        parked = asyncio.ensure_future(http.post("/v1/jobs/claim", json={"wait_s": 20, "limit": 1}, timeout=30))
        await stop
        stopped = time.monotonic()
        answer = await parked
        assert answer.status_code == 200, answer.text
        return time.monotonic() - stopped, answer.json()["jobs"]


def test_a_core_drained_at_the_balancer_is_replaced_with_no_lease_dropped(
    haproxy_installed: None, pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    store, s3 = _s3(seaweed)
    # Five copies of a 3 s clip: the job is still rendering when its core is drained.
    order_id = asyncio.run(_order(url, store, make_clip(tmp_path / "clip.mp4", seconds=3), copies=5))
    env = {**s3, "VIDEOCOPIES_LEASE_TTL_S": LEASE_TTL_S, "VIDEOCOPIES_OBJECTS_SWEEP_S": "1"}
    cores = [CoreProcess(url, quote_secret=SECRET, **env) for _ in range(2)]
    balancer = LocalHaproxy([f"127.0.0.1:{core.port}" for core in cores])
    watcher = issue_token(url, "w-watch")
    worker = worker_process(balancer.http_url, issue_token(url, "w-drain"), tmp_path / "work",
                            VIDEOCOPIES_LEASE_TTL_S=LEASE_TTL_S, VIDEOCOPIES_CLAIM_WAIT_S="5")
    replacement = CoreProcess(url, quote_secret=SECRET, **env)
    with contextlib.ExitStack() as running:
        running.callback(replacement.__exit__, None, None, None)
        running.enter_context(stopped_if_left(worker))
        running.enter_context(started_together(cores))
        running.enter_context(balancer)
        try:
            wait_for(lambda: fetch_all(url, "SELECT count(*) FROM job_checkpoints")[0][0] >= 1, timeout=90)
        except AssertionError:
            _, said = stop_process(worker)
            jobs = fetch_all(url, "SELECT state, attempts, last_error FROM jobs")
            raise AssertionError(f"no copy made: {jobs}\n{said.decode()[-3000:]}") from None
        wait_for(lambda: _holder_pid(url) is not None, 10)
        index = next(i for i, core in enumerate(cores) if core.process and core.process.pid == _holder_pid(url))
        old = cores[index]
        assert old.process is not None

        # 1. Drain at the balancer: no new request goes there; those in hand finish.
        balancer.set_state(index + 1, "drain")
        # 2. Stop it: a claim parked on it is answered at once, empty; its duty is handed on.
        async def drain() -> tuple[float, list]:
            stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            claim = asyncio.ensure_future(_parked_claim_answer_s(old.url, watcher, stop))
            while (await asyncio.to_thread(httpx.get, f"{old.url}/_info")).json()["parked_claims"] < 1:
                await asyncio.sleep(0.02)
            old.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            stop.set_result(None)
            return await claim

        answered_s, jobs = asyncio.run(drain())
        stopped_at = time.monotonic()
        assert old.process.wait(timeout=30) == 0
        assert jobs == [] and answered_s < 2.0, answered_s
        wait_for(lambda: _holder_pid(url) not in (None, old.process.pid), timeout=5)  # type: ignore[union-attr]
        handed_on_s = time.monotonic() - stopped_at

        # 3. Its replacement, on another port, put back in its place.
        replacement.start(timeout=60)
        balancer.set_address(index + 1, f"127.0.0.1:{replacement.port}")
        balancer.set_state(index + 1, "ready")
        wait_for(lambda: balancer.states().get(server_name(index + 1)) == "UP", timeout=10)
        pids = {httpx.get(f"{balancer.http_url}/_info", timeout=5).json()["pid"] for _ in range(6)}
        assert replacement.process is not None and replacement.process.pid in pids

        wait_for(lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done",
                 timeout=120)
        code, err = stop_process(worker)
        replacement.stop()
    assert code == 0, err.decode()[-3000:]
    # The duty went to the other core at once, not after its lease (7 s) ran out.
    assert handed_on_s < 3.0, handed_on_s
    ((attempts, state),) = fetch_all(url, "SELECT attempts, state FROM jobs")
    assert (attempts, state) == (1, "done")  # nothing was redone
    assert [i for (i,) in fetch_all(url, "SELECT idx FROM job_checkpoints ORDER BY idx")] == list(range(5))
    assert fetch_all(url, "SELECT count(*) FROM refused_writes") == [(0,)]
    store.close()


def test_a_worker_restarted_after_a_deploy_goes_to_the_new_core(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    store, s3 = _s3(seaweed)
    clip = make_clip(tmp_path / "clip.mp4", seconds=1)
    env = {**s3, "VIDEOCOPIES_LEASE_TTL_S": LEASE_TTL_S}
    blue, green = CoreProcess(url, quote_secret=SECRET, **env), CoreProcess(url, quote_secret=SECRET, **env)
    token, ops = issue_token(url, "w-moves"), issue_token(url, "ops", "control")
    work = tmp_path / "work"
    with started_together([blue, green]):
        worker = worker_process(blue.url, token, work)
        with stopped_if_left(worker):
            moved = httpx.post(f"{blue.url}/v1/admin/moved", json={"url": green.url},
                               headers={"Authorization": f"Bearer {ops}"}, timeout=10)
            assert moved.status_code == 200, moved.text
            first = asyncio.run(_order(url, store, clip, copies=1))
            wait_for(lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", first)[0][0] == "done",
                     timeout=90)
            code, err = stop_process(worker)
            assert code == 0 and b"core moved" in err, err.decode()[-3000:]
        assert json.loads((work / MOVES_FILE).read_text()) == {blue.url: green.url}
        blue.stop()  # the old address answers nothing now
        again = worker_process(blue.url, token, work)  # its settings still name the old core
        with stopped_if_left(again):
            second = asyncio.run(_order(url, store, clip, copies=1))
            wait_for(lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", second)[0][0] == "done",
                     timeout=90)
            code, err = stop_process(again)
            assert code == 0, err.decode()[-3000:]
    assert b"unreachable" not in err, err.decode()[-3000:]  # it never called the old address
    store.close()


def test_deploy_core_with_the_balancer_replaces_a_core_in_place(
    haproxy_installed: None, pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    store, s3 = _s3(seaweed)
    order_id = asyncio.run(_order(url, store, make_clip(tmp_path / "clip.mp4", seconds=2), copies=5))
    env = {**s3, "VIDEOCOPIES_LEASE_TTL_S": LEASE_TTL_S, "VIDEOCOPIES_OBJECTS_SWEEP_S": "1"}
    cores = [CoreProcess(url, quote_secret=SECRET, **env) for _ in range(2)]
    balancer = LocalHaproxy([f"127.0.0.1:{core.port}" for core in cores])
    worker = worker_process(balancer.http_url, issue_token(url, "w-cmd"), tmp_path / "work",
                            VIDEOCOPIES_LEASE_TTL_S=LEASE_TTL_S, VIDEOCOPIES_CLAIM_WAIT_S="5")
    control = {"VIDEOCOPIES_NODE_TOKEN": issue_token(url, "ops", "control"),
               "VIDEOCOPIES_WORK_DIR": str(tmp_path / "deploy")}
    new_pid = None
    try:
        with stopped_if_left(worker), started_together(cores), balancer:
            wait_for(lambda: fetch_all(url, "SELECT count(*) FROM job_checkpoints")[0][0] >= 1, timeout=90)
            old = cores[1]
            assert old.process is not None
            deployed = subprocess.run(
                [sys.executable, "-m", "videocopies.cli", "deploy", "core", "--from", old.url,
                 "--balancer", str(balancer.admin_socket), "--server", f"cores/{server_name(2)}"],
                env={**os.environ, **old._env, **control}, capture_output=True, text=True, timeout=120,
            )
            assert deployed.returncode == 0, deployed.stderr[-3000:]
            found = re.search(r"new core on (\S+) \(pid (\d+)", deployed.stdout)
            assert found is not None, deployed.stdout
            new_pid = int(found.group(2))
            assert old.process.wait(timeout=5) == 0  # stopped, cleanly, before the command ended
            assert f"cores/{server_name(2)} now {found.group(1)}" in deployed.stdout
            wait_for(lambda: balancer.states().get(server_name(2)) == "UP", timeout=10)
            pids = {httpx.get(f"{balancer.http_url}/_info", timeout=5).json()["pid"] for _ in range(6)}
            assert new_pid in pids and old.process.pid not in pids
            wait_for(lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done",
                     timeout=120)
            code, err = stop_process(worker)
            assert code == 0, err.decode()[-3000:]
    finally:
        if new_pid is not None:  # in a session of its own: stopped here whatever else fails
            os.kill(new_pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while process_alive(new_pid) and time.monotonic() < deadline:
                time.sleep(0.1)
    ((attempts, state),) = fetch_all(url, "SELECT attempts, state FROM jobs")
    assert (attempts, state) == (1, "done")
    assert fetch_all(url, "SELECT count(*) FROM refused_writes") == [(0,)]
    store.close()
