"""A supervisor may send SIGTERM more than once (ours sends it, then again to a role still
stopping): core and a worker asked again and again while they stop still stop cleanly, exit 0."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx

from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, issue_token, worker_process

from .harness import wait_for

SECRET = "stop-again-secret" * 2


def _stopped_insistently(process: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    """SIGTERM every 10 ms until the process is gone, as an impatient supervisor would."""
    deadline = time.monotonic() + 60
    while process.poll() is None:
        assert time.monotonic() < deadline, "still running a minute after the first SIGTERM"
        process.send_signal(signal.SIGTERM)
        time.sleep(0.01)
    _, err = process.communicate()
    return process.returncode, err or b""


def test_core_and_a_worker_sent_sigterm_again_and_again_exit_0(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    core = CoreProcess(url, quote_secret=SECRET)
    worker = worker_process(core.url, issue_token(url, "w-again"), tmp_path / "work", tmp_path / "objects")
    try:
        core.start()
        # The worker is in its rounds once its first claim's figures show in core's /metrics.
        wait_for(lambda: 'node="w-again"' in httpx.get(f"{core.url}/metrics", timeout=10).text, timeout=60)
        code, err = _stopped_insistently(worker)
        assert code == 0, err.decode()[-3000:]
        assert core.process is not None
        code, err = _stopped_insistently(core.process)
        assert code == 0, err.decode()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
        if core.process is not None and core.process.poll() is None:
            core.process.kill()
            core.process.communicate()
