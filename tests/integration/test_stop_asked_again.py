"""A supervisor may send SIGTERM at any moment: more than once (ours sends it, then again to a
role still stopping), or while the role is still starting. Core and a worker stop cleanly, exit 0,
either way."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from videocopies.embedded.local import free_port
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, RoleProcess, issue_token, worker_process
from videocopies.runtime.role_run import LISTEN_GRACE_S

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


def _holds_stops(process: subprocess.Popen[bytes]) -> bool:
    """The process catches SIGTERM: `videocopies <role>` holds stops from just after it has read
    its command line, before the role's own imports (a second or two)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def _stopped_as_soon_as_it_holds(process: subprocess.Popen[bytes]) -> tuple[int, str, float]:
    wait_for(lambda: process.poll() is not None or _holds_stops(process), timeout=30)
    process.send_signal(signal.SIGTERM)
    asked = time.monotonic()
    _, err = process.communicate(timeout=30)
    return process.returncode, err.decode(), time.monotonic() - asked


@pytest.mark.parametrize("role", ["core", "worker"])
def test_a_role_stopped_while_it_imports_exits_0_at_once(
    role: str, pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    if role == "core":
        core = CoreProcess(url, quote_secret=SECRET)
        process = subprocess.Popen(
            [sys.executable, "-m", "videocopies.cli", "core"],
            env=core._env,
            stderr=subprocess.PIPE,  # noqa: SLF001
        )
    else:
        process = worker_process(f"http://127.0.0.1:{free_port()}", "no-token", tmp_path / "work", tmp_path / "objects")
    code, err, took = _stopped_as_soon_as_it_holds(process)
    assert code == 0, err[-3000:]
    assert "stopped before it started" in err
    assert took < 10


def test_a_worker_stopped_while_core_does_not_answer_exits_0_within_the_grace(tmp_path: Path) -> None:
    """A worker waiting for a core that does not answer (it would try for two minutes) has not
    listened for a stop itself yet: its start is cancelled after the grace, and it exits 0."""
    worker = RoleProcess(
        "worker",
        worker_process(f"http://127.0.0.1:{free_port()}", "no-token", tmp_path / "work", tmp_path / "objects"),
    )
    try:
        wait_for(lambda: any("core unreachable" in line for line in worker.tail), timeout=60)
        worker.process.send_signal(signal.SIGTERM)
        asked = time.monotonic()
        code = worker.process.wait(timeout=30)
        took = time.monotonic() - asked
        wait_for(lambda: any("stopped while starting" in line for line in worker.tail), timeout=5)
    finally:
        if worker.process.poll() is None:
            worker.process.kill()
    assert code == 0, "\n".join(worker.tail)
    assert LISTEN_GRACE_S - 0.5 < took < LISTEN_GRACE_S + 10
