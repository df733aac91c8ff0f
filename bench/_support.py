"""What the benchmarks share: a private server, a migrated database, a service over it."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
from dependency_injector import providers

from videocopies.adapters.memory import ManualClock
from videocopies.adapters.postgres import migrate
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings


def durable_default() -> bool:
    """Headline figures come from a durable server, as users run it; VIDEOCOPIES_BENCH_DURABLE=0
    gives the non-durable run to print beside it (our code's cost without the disk's)."""
    return os.environ.get("VIDEOCOPIES_BENCH_DURABLE", "1") != "0"


@contextlib.contextmanager
def server(durable: bool | None = None, **settings: str) -> Iterator[LocalPostgres]:
    """`durable`: fsync, synchronous_commit and full_page_writes on, as in production (the
    default, see `durable_default`)."""
    durable = durable_default() if durable is None else durable
    _started["durable"] = durable
    with LocalPostgres(durable=durable, extra_settings=settings or None) as pg:
        yield pg


_started: dict[str, bool] = {}


def fresh_database(pg: LocalPostgres, name: str, capacity: int = 20_000) -> str:
    if pg.database_exists(name):
        pg.drop_database(name)
    url = pg.url(name)
    migrate.init(url, capacity=capacity)
    return url


def service(url: str, pool_size: int, clock: ManualClock | None = None, direct: bool | None = None) -> PostgresService:
    """`direct` (prepared statements) unless VIDEOCOPIES_BENCH_LITERAL=1 asks for the PgBouncer-safe path."""
    if direct is None:
        direct = os.environ.get("VIDEOCOPIES_BENCH_LITERAL") != "1"
    container = PostgresService(settings=Settings(quote_secret=b"bench-secret" * 3))
    container.gateways.config.from_dict({"database_url": url, "pool_size": pool_size, "direct": direct})
    container.gateways.clock.override(providers.Object(clock or ManualClock(datetime.now(UTC))))
    return container


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[18] if len(samples) >= 20 else max(samples)


def emit(figures: dict[str, object]) -> None:
    """One JSON line; it says whether its server was durable, so no figure is read as the other kind."""
    if "durable" in _started:
        figures = {**figures, "durable": _started["durable"]}
    print(json.dumps(figures, sort_keys=False), file=sys.stdout, flush=True)


def _stat(pid: int) -> list[str]:
    # Fields after the command name, which may itself hold spaces: state is [0], ppid [1].
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """CPU time of a process so far, user and system."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds(postmaster: int) -> float:
    """The server's CPU time so far: the postmaster, its live children (the backends) and
    the children it has already reaped."""
    fields = _stat(postmaster)
    total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(_stat(int(entry.name))[1]) == postmaster:
                    total += cpu_seconds(int(entry.name))
    return total


# One draining process's account: when it began and ended (wall clock), jobs done, its CPU seconds.
Drained = tuple[float, float, int, float]


def drained_together(
    drain: Callable[[Any], Drained], args: Callable[[float], list[Any]], postmaster: int, workers: int, batch: int,
) -> dict[str, Any]:
    """`drain` in `workers` spawned processes from a common start (`args(start_at)` gives each its
    arguments): the jobs, the seconds from the first start to the last end, and the CPU a job
    cost the server (over the whole run) and the processes (their own)."""
    server_cpu = postgres_cpu_seconds(postmaster)
    start_at = time.time() + 2.0 + workers * 0.5
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as ex:
        results = list(ex.map(drain, args(start_at)))
    server_cpu = postgres_cpu_seconds(postmaster) - server_cpu
    seconds = max(e for _, e, _, _ in results) - min(b for b, _, _, _ in results)
    jobs = sum(n for _, _, n, _ in results)
    return {
        "workers": workers, "batch": batch, "jobs": jobs, "seconds": round(seconds, 3),
        "jobs_per_s": round(jobs / seconds, 1),
        "server_cpu_ms_per_job": round(server_cpu * 1000 / jobs, 3),
        "client_cpu_ms_per_job": round(sum(c for _, _, _, c in results) * 1000 / jobs, 3),
    }


@attrs.frozen
class SimulatorProcess:
    url: str
    pid: int


@contextlib.contextmanager
def simulator_process(scratch: Path, bot_token: str, strict: bool = False) -> Iterator[SimulatorProcess]:
    """The Bot API simulator as a process of its own, on its lax profile (no rate limits, no
    faults: these benchmarks measure us, not Telegram), or with `strict` on its default
    profile, Telegram's limits and failures; stopped with SIGTERM afterwards."""
    port = free_port()
    limits = [] if strict else ["--lax"]  # no flood control, no 502s or late answers
    sim = subprocess.Popen(
        [sys.executable, "-m", "videocopies.testing.telegram_simulator", "--port", str(port), "--token", bot_token,
         "--files-dir", str(scratch / "telegram"), *limits],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a busy machine imports slowly
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/_sim/health").status_code == 200:
                    break
            assert time.monotonic() < deadline, "the simulator did not start"
            time.sleep(0.1)
        yield SimulatorProcess(url, sim.pid)
    finally:
        sim.send_signal(signal.SIGTERM)
        try:
            sim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()


# Edge paces itself to Telegram's ~30 messages a second; a benchmark of our own throughput
# (on the lax simulator) lifts that, as a bot with paid broadcasts would.
UNPACED_EDGE = {
    "VIDEOCOPIES_TELEGRAM_RATE": "1000000", "VIDEOCOPIES_TELEGRAM_BURST": "1000000",
    "VIDEOCOPIES_TELEGRAM_REPLY_RESERVE": "0",
    "VIDEOCOPIES_TELEGRAM_CHAT_RATE": "1000000", "VIDEOCOPIES_TELEGRAM_CHAT_BURST": "1000000",
}
