"""A worker given both cores' addresses (VIDEOCOPIES_CORE_URL=a,b) and no balancer: it works
with the first, and when that core is SIGKILLed it goes on with the second, within a lease."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from media import make_clip
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed
from videocopies.runtime.launch import CoreProcess, issue_token, stop_process, worker_process

from .harness import fetch_all, stopped_if_left, wait_for
from .test_two_cores import started_together
from .test_two_cores_deploy import _s3
from .test_worker_over_http import SECRET, _order

LEASE_TTL_S = 6.0


def _done(url: str, order_id: str) -> bool:
    return fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done"


def test_a_worker_given_two_cores_goes_on_with_the_second_when_the_first_dies(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    store, s3 = _s3(seaweed)
    clip = make_clip(tmp_path / "clip.mp4", seconds=1)
    cores = [CoreProcess(url, quote_secret=SECRET, **s3, VIDEOCOPIES_LEASE_TTL_S=str(LEASE_TTL_S)) for _ in range(2)]
    worker = worker_process(",".join(core.url for core in cores), issue_token(url, "w-list"), tmp_path / "work",
                            VIDEOCOPIES_LEASE_TTL_S=str(LEASE_TTL_S), VIDEOCOPIES_CLAIM_WAIT_S="5")
    with stopped_if_left(worker), started_together(cores):
        first = asyncio.run(_order(url, store, clip, copies=1))
        wait_for(lambda: _done(url, first), timeout=90)
        assert cores[0].process is not None and cores[1].process is not None
        cores[0].process.send_signal(signal.SIGKILL)  # the one it calls first
        killed = time.monotonic()
        second = asyncio.run(_order(url, store, clip, copies=1))
        wait_for(lambda: _done(url, second), timeout=90)
        carried_on_s = time.monotonic() - killed
        assert cores[1].process.poll() is None
        code, err = stop_process(worker)
    assert code == 0, err.decode()[-3000:]
    assert f"core {cores[0].url} failed; calling {cores[1].url}".encode() in err, err.decode()[-3000:]
    assert carried_on_s < LEASE_TTL_S + 10, carried_on_s  # a parked claim's answer, then one copy
    assert fetch_all(url, "SELECT count(*) FROM refused_writes") == [(0,)]
    store.close()
