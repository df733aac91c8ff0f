"""all-in-one's keeper starts again a role that died, with real processes, and keeps count."""

from __future__ import annotations

import subprocess
import sys
import time

from videocopies.runtime.keeper import Keeper
from videocopies.runtime.launch import RoleProcess


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stderr=subprocess.PIPE)


class _Core:
    """Stands where CoreProcess does: a process, and how to start it again."""

    def __init__(self) -> None:
        self.process = _sleeper()
        self.starts = 0

    def start(self) -> None:
        self.process = _sleeper()
        self.starts += 1


def _until(condition, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_role_that_dies_is_started_again_and_counted() -> None:
    core = _Core()
    edge = RoleProcess("edge", _sleeper(), start=_sleeper)
    said: list[str] = []
    keeper = Keeper(core, [edge], said.append, every_s=0.05, first_pause_s=0.1)  # type: ignore[arg-type]
    keeper.start()
    try:
        first = edge.process
        first.kill()
        # The keeper counts a restart once the role's start has returned: wait for its count.
        _until(lambda: keeper.restarts.get("edge") == 1)
        assert edge.process is not first and edge.process.poll() is None and edge.restarts == 1
        core.process.kill()
        _until(lambda: keeper.restarts.get("core") == 1)
        assert keeper.restarts == {"edge": 1, "core": 1} and core.starts == 1
        assert any("edge exited" in line for line in said) and any("core started again" in line for line in said)
    finally:
        keeper.stop()
        for process in (edge.process, core.process):
            process.kill()
            process.wait()


def test_a_role_without_a_way_to_start_it_is_left_alone() -> None:
    core = _Core()
    once = RoleProcess("once", _sleeper())
    keeper = Keeper(core, [once], lambda _: None, every_s=0.05, first_pause_s=0.1)  # type: ignore[arg-type]
    keeper.start()
    try:
        once.process.kill()
        once.process.wait()
        time.sleep(0.5)
        assert keeper.restarts == {} and once.process.poll() is not None
    finally:
        keeper.stop()
        core.process.kill()
        core.process.wait()
