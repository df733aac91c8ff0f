"""Keeping the roles of one machine running (all-in-one): a role that died is started again,
and at the end every role is stopped by SIGTERM and must exit 0."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from videocopies.runtime.launch import CoreProcess, RoleFailed, RoleProcess


class Keeper:
    """Starts again a role that died (core included), after a pause that grows while it keeps
    dying: one machine running everything must not go silent because one process fell over."""

    def __init__(
        self, core: CoreProcess, roles: list[RoleProcess], say: Callable[[str], None], every_s: float = 0.5,
        first_pause_s: float = 1.0, longest_pause_s: float = 30.0,
    ) -> None:
        self._core, self._roles, self._say, self._every_s = core, roles, say, every_s
        self._first, self._longest = first_pause_s, longest_pause_s
        self._pause: dict[str, float] = {}
        self._due: dict[str, float] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="all-in-one-keeper", daemon=True)
        self.restarts: dict[str, int] = {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout=10)

    def _watch(self) -> None:
        while not self._stopping.wait(self._every_s):
            if self._core.process is not None and self._core.process.poll() is not None:
                self._again("core", self._core.process.returncode, self._core.start)
            for role in self._roles:
                if role.restartable and role.process.poll() is not None:
                    self._again(role.name, role.process.returncode, role.restart, role.tail)

    def _again(self, name: str, code: int | None, start: Callable[[], object], tail: object = ()) -> None:
        now = time.monotonic()
        if name not in self._due:
            pause = self._pause.get(name, self._first / 2) * 2
            self._pause[name] = min(self._longest, pause)
            self._due[name] = now + self._pause[name]
            last = list(tail)[-1:] if tail else []  # type: ignore[call-overload]
            self._say(f"{name} exited with {code}; starting it again in {self._pause[name]:.0f} s {last}")
            return
        if now < self._due[name] or self._stopping.is_set():
            return
        del self._due[name]
        try:
            start()
        except Exception as error:  # noqa: BLE001 - tried again after a longer pause
            self._say(f"{name} did not start again: {error}")
            return
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self._say(f"{name} started again (restart {self.restarts[name]})")



def stop_core(core: CoreProcess, judged: bool = True) -> None:
    """Core last, by SIGTERM; RoleFailed unless it exits 0 (`judged`: a start cut short is not,
    since a role stopped in its first milliseconds dies by the signal). A core never launched is
    left."""
    if core.process is None:
        return
    if (code := core.stop()) != 0 and judged:
        print(f"core exited with {code}:\n" + core.log.decode(errors="replace")[-3000:], file=sys.stderr)
        raise RoleFailed("core did not stop cleanly on SIGTERM")


def stop_roles(roles: list[RoleProcess], say: Callable[[str], None], judged: bool = True) -> None:
    """Every role but core, by SIGTERM; RoleFailed unless each exits 0 (`judged`: see stop_core)."""
    for role in roles:
        role.terminate()
    failed = [(role, code) for role in roles if (code := role.wait()) != 0 and judged]
    for role, code in failed:
        print(f"{role.name} exited with {code}:\n" + "\n".join(role.tail), file=sys.stderr)
    if failed:
        raise RoleFailed(f"{', '.join(role.name for role, _ in failed)} did not stop cleanly on SIGTERM")
    say("edge, the workers and control stopped on SIGTERM with exit code 0 (core next)")

