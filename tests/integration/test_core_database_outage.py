"""While its database is down, core answers 503 with Retry-After, which nodes retry with the
same receipt, not 500, which a worker takes as a refusal and pays for with a job attempt
(found by the chaos soak: PostgreSQL restarts failed orders)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import httpx

from videocopies.adapters.postgres import migrate
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, issue_token


def test_core_answers_503_while_the_database_is_down_and_recovers() -> None:
    # A directory of our own, so a stop and a start keep the data; one the server's user can reach.
    base = Path(tempfile.mkdtemp(prefix="videocopies-outage-"))
    base.chmod(0o711)
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, base, True)
        pg = cleanup.enter_context(LocalPostgres(base_dir=base / "pg"))
        url = pg.url("outage")
        migrate.init(url, capacity=4)
        token = issue_token(url, "w-outage")
        with CoreProcess(url, VIDEOCOPIES_DB_WAIT_S="3") as core:
            headers = {"Authorization": f"Bearer {token}"}
            claim = {"limit": 1, "wait_s": 0}
            assert httpx.post(f"{core.url}/v1/jobs/claim", json=claim, headers=headers, timeout=10).status_code == 200
            pg.stop()
            try:
                began = time.monotonic()
                down = httpx.post(f"{core.url}/v1/jobs/claim", json=claim, headers=headers, timeout=40)
                assert down.status_code == 503, down.text
                assert time.monotonic() - began < 10, "503 comes after VIDEOCOPIES_DB_WAIT_S, not a client's timeout"
                assert down.headers["Retry-After"] == "1"
            finally:
                pg.start()
            # As a node does: 503 means again after Retry-After, until the pool has reconnected.
            deadline = time.monotonic() + 30
            def ask() -> httpx.Response:
                return httpx.post(f"{core.url}/v1/jobs/claim", json=claim, headers=headers, timeout=40)

            while (back := ask()).status_code == 503:
                assert time.monotonic() < deadline, "core did not recover within 30 s of the database's return"
                time.sleep(float(back.headers["Retry-After"]))
            assert back.status_code == 200, back.text
