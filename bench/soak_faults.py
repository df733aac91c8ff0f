"""The soak's faults: injected at seeded random points, every kind once a round."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
from soak_stack import FAULTS, SoakPlan, Stack, fetch

from videocopies.embedded.postgres import process_alive


@attrs.define
class Zombie:
    """A worker stopped while it held a lease: nothing it writes after `lease_until` may stick."""

    worker: str
    job_id: str
    token: str
    lease_until: Any


class Chaos:
    def __init__(self, stack: Stack, plan: SoakPlan, rng: random.Random, notes: list[str]) -> None:
        self._stack, self._plan, self._rng, self._notes = stack, plan, rng, notes
        self.injected: Counter[str] = Counter({fault: 0 for fault in FAULTS})
        self.took: Counter[str] = Counter()  # seconds spent injecting each kind (and recovering)
        self.zombies: list[Zombie] = []
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)
        self.errors: list[str] = []

    def __enter__(self) -> Chaos:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _kinds(self) -> list[str]:
        return [k for k in self._plan.faults if k != "disk_filled" or self._stack.small_disk is not None]

    def _run(self) -> None:
        cycle: list[str] = []
        while not self._stop.wait(self._rng.uniform(0.5, 1.5) * self._plan.fault_every_s):
            if not cycle:
                cycle = self._kinds()
                self._rng.shuffle(cycle)  # every kind once per round, in a seeded order
            kind = cycle.pop()
            began = time.monotonic()
            try:
                getattr(self, kind)()
                self.injected[kind] += 1
                self.took[kind] = round(self.took[kind] + time.monotonic() - began, 1)
            except Exception as error:  # a fault that could not be injected is reported, not fatal
                self.errors.append(f"{kind}: {error!r}")
            if not cycle:
                self.rounds += 1

    def _worker(self) -> str:
        return self._rng.choice(sorted(n for n in self._stack.workers if n != "w-disk"))

    def worker_killed(self) -> None:
        name = self._worker()
        role = self._stack.workers[name]
        role.process.send_signal(signal.SIGKILL)
        role.wait()
        self._stack.start_worker(name)

    def worker_stopped(self) -> None:
        # Preferably one holding a lease: the point is a worker that wakes up after it lapsed.
        holders = sorted({w for w, in fetch(self._stack.url, "SELECT worker_id FROM jobs WHERE state = 'leased'")}
                         & set(self._stack.workers) - {"w-disk"})
        name = self._rng.choice(holders) if holders else self._worker()
        role = self._stack.workers[name]
        role.process.send_signal(signal.SIGSTOP)
        held = fetch(self._stack.url, "SELECT job_id, owner_token, lease_until FROM jobs "
                      "WHERE worker_id = %s AND state = 'leased'", name)
        self.zombies += [Zombie(name, job, token, until) for job, token, until in held]
        self._stop.wait(self._plan.lease_ttl_s + 3)
        role.process.send_signal(signal.SIGCONT)

    def core_restarted(self) -> None:
        core = self._stack.core
        core.stop()
        try:
            core.start(timeout=120)  # a busy machine imports slowly
        except AssertionError as failed:
            # Recorded as an error of the run, then core is brought back for the rest of it.
            assert core.process is not None
            core.process.kill()
            core.process.wait()
            log = core.log_path.read_text(errors="replace")[-1500:] if core.log_path else ""
            self.errors.append(f"core_restarted: {failed!s:.200}; log: {log}")
            core.start(timeout=120)

    def pgbouncer_restarted(self) -> None:
        self._stack.bouncer.stop()
        time.sleep(1)
        self._stack.bouncer.start()

    def postgres_restarted(self) -> None:
        self._stack.pg.stop()
        time.sleep(1)
        self._stack.pg.start()

    def postgres_killed(self) -> None:
        """A power cut for the server's process tree: every process frozen (the postmaster first),
        then killed, then the server started again on the same data directory (crash recovery)."""
        pg = self._stack.pg
        postmaster = pg.pid
        if postmaster is None:
            raise RuntimeError("no postmaster running")
        os.kill(postmaster, signal.SIGSTOP)  # it forks no new children from here on
        tree = [postmaster, *children(postmaster)]
        for pid in tree[1:]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # Gone for good, not just dead: a zombie not yet reaped (here by init, within a second or
        # so) would pass for a live server holding the lock files, which a power cut leaves stale.
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in tree):
            if time.monotonic() > deadline:
                alive = [pid for pid in tree if process_alive(pid)]
                raise RuntimeError(f"the server's processes outlived SIGKILL: {alive or tree} (alive or unreaped)")
            time.sleep(0.05)
        pg.stop()  # only forgets the dead server: nothing runs on its data directory
        pg.start()

    def connections_dropped(self) -> None:
        # Core's connections (through PgBouncer, and its direct LISTEN), cut by the server.
        fetch(self._stack.url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
               "WHERE datname = 'soak' AND pid <> pg_backend_pid() AND backend_type = 'client backend'")

    def disk_filled(self) -> None:
        assert self._stack.small_disk is not None
        filler = self._stack.small_disk / "filler"
        # Unbuffered, and the suppress outside the open: a buffered file's close flushes into the
        # full disk again, after a suppress inside the `with` has ended (a fault_error, once in 3).
        with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as out:
            while True:
                out.write(b"\0" * 65536)
        self._stop.wait(8)
        filler.unlink()

    def storage_down(self) -> None:
        self._stack.seaweed.restart(down_s=3)




def children(parent: int) -> list[int]:
    """The processes whose parent is `parent`, read from /proc."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
    return found
