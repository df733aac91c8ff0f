"""`videocopies all-in-one` as an operator runs it: every role up from one command, a user
served through the simulator, a clean stop on SIGTERM, and a second run on the same data
that keeps what the first one stored."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


class AllInOne:
    def __init__(self, data: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VIDEOCOPIES_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "videocopies.cli", "all-in-one", "--data", str(data)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float = 90) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if found := re.search(pattern, line):
                    return found
            assert self.process.poll() is None, "".join(self.lines)
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} in:\n" + "".join(self.lines))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def _say(sim: str, user: int, text: str, contains: str) -> str:
    httpx.post(f"{sim}/_sim/users/{user}/messages", json={"text": text}).raise_for_status()
    answer = httpx.get(f"{sim}/_sim/users/{user}/received/next", params={"contains": contains, "timeout": 60},
                       timeout=70)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["message"]["text"])


@pytest.fixture
def data() -> Iterator[Path]:
    # Not under pytest's tmp_path: as root the database server's own user must reach it.
    with tempfile.TemporaryDirectory(prefix="videocopies-aio-") as scratch:
        Path(scratch).chmod(0o711)
        yield Path(scratch) / "aio"


def test_one_command_runs_every_role_and_a_second_run_keeps_the_data(data: Path) -> None:
    first = AllInOne(data)
    try:
        sim = first.wait_for(r"simulator at (http://\S+)").group(1)
        panel = first.wait_for(r"control panel at (http://\S+)/").group(1)
        first.wait_for(r"all roles running")
        assert httpx.get(f"{panel}/login").status_code == 200
        assert httpx.get(f"{panel}/", follow_redirects=False).status_code in (303, 307)  # signed out: to login
        user = httpx.post(f"{sim}/_sim/users", json={"id": 4242, "first_name": "Ann"}).json()["id"]
        assert "You have 50 coins" in _say(sim, user, "/start", "coins")
        # A payment notice Telegram never made (as a leaked edge token could report one): core
        # asks the simulator, as it would ask Telegram, and credits nothing.
        forged = {
            "message_id": 999, "date": int(time.time()), "chat": {"id": user, "type": "private"},
            "from": {"id": user, "is_bot": False, "first_name": "Ann"},
            "successful_payment": {"currency": "XTR", "total_amount": 250, "invoice_payload": "buy:250:600",
                                   "telegram_payment_charge_id": "forged-1", "provider_payment_charge_id": ""},
        }
        httpx.post(f"{sim}/_sim/updates", json={"kind": "message", "payload": forged}).raise_for_status()
        assert "Available: 50 coins" in _say(sim, user, "/balance", "Available")
    finally:
        code = first.stop()
    output = "".join(first.lines)
    assert code == 0, output
    assert "PostgreSQL created" in output and "2 workers started" in output, output
    assert (data / "control-password").stat().st_mode & 0o077 == 0  # the panel's password, kept privately
    assert "stopped on SIGTERM with exit code 0" in output

    second = AllInOne(data)
    try:
        sim = second.wait_for(r"simulator at (http://\S+)").group(1)
        second.wait_for(r"all roles running")
        # The simulator starts afresh, the service does not: Ann is known, her coins kept.
        user = httpx.post(f"{sim}/_sim/users", json={"id": 4242, "first_name": "Ann"}).json()["id"]
        assert "Available: 50 coins" in _say(sim, user, "/balance", "Available")
    finally:
        assert second.stop() == 0, "".join(second.lines)
    assert "PostgreSQL started" in "".join(second.lines)


def _descendants(pid: int) -> set[int]:
    """Every live process under `pid` (by their parents, read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _using(data: Path) -> set[int]:
    """Live processes that name `data` in their command line or environment (every role does: its
    work or store directory; PostgreSQL its data directory)."""
    mark = str(data).encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if mark in (entry / "cmdline").read_bytes() or mark in (entry / "environ").read_bytes():
                    found.add(int(entry.name))
            except OSError:
                continue
    return {pid for pid in found if _alive(pid)}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("when", [r"2 workers started"])
def test_stopped_while_it_starts_it_leaves_no_process_behind_and_exits_0(data: Path, when: str) -> None:
    """SIGTERM once core is up and edge and the workers are launched, control on its way (the
    window where launched roles used to be left running): everything launched so far is stopped,
    PostgreSQL too, and the stop is a clean one."""
    run = AllInOne(data)
    try:
        run.wait_for(when)
        launched = _descendants(run.process.pid)
        postmaster = int((data / "postgres" / "data" / "postmaster.pid").read_text().split()[0])
        run.process.send_signal(signal.SIGTERM)
        code = run.process.wait(timeout=90)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    output = "".join(run.lines)
    assert code == 0, output
    assert "stopped while starting" in output, output
    assert "all roles running" not in output, output
    deadline = time.monotonic() + 10
    while (left := {pid for pid in launched | {postmaster} if _alive(pid)} | _using(data)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert not left, (left, output)
