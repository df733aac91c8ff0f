"""The soak's stack: every role a process of its own on loopback, and the servers under them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import psycopg
from _support import fresh_database, simulator_process

from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.embedded.seaweedfs import LocalSeaweed
from videocopies.runtime.launch import CoreProcess, RoleProcess, edge_process, issue_token, worker_process

BOT_TOKEN = "424242:soak"
SECRET = "soak-secret" * 3
FINAL = ("done", "cancelled", "failed")
TIDY_S = 3.0  # how often core removes copies stored but never checkpointed
FAULTS = ("worker_killed", "worker_stopped", "core_restarted", "pgbouncer_restarted", "postgres_restarted",
          "postgres_killed", "connections_dropped", "disk_filled", "storage_down")


@attrs.frozen
class SoakPlan:
    orders: int = 200
    users: int = 25
    workers: int = 3
    seed: int = 9
    lease_ttl_s: float = 5.0
    fault_every_s: float = 6.0
    faults: tuple[str, ...] = FAULTS
    in_flight: int = 10  # unfinished orders at a time: the queue stays busy, not endless
    min_rounds: int = 1  # every kind of fault at least this many times
    settle_timeout_s: float = 600.0
    payments: int = 4  # coin packages bought through the bot, Telegram's payment flow
    # Fsync, synchronous_commit and full_page_writes on, as users run it: a SIGKILL of the
    # server may then lose nothing it acknowledged. `pg_settings` overrides (e.g. to show
    # that synchronous_commit off loses acknowledged writes).
    durable: bool = True
    pg_settings: tuple[tuple[str, str], ...] = ()


@attrs.define
class Stack:
    pg: LocalPostgres
    bouncer: LocalPgBouncer
    seaweed: LocalSeaweed
    store: S3ObjectStore
    url: str  # direct, for the soak's own reads and the users' use cases
    core: CoreProcess
    sim_url: str
    scratch: Path
    workers: dict[str, RoleProcess] = attrs.field(factory=dict)
    worker_env: dict[str, dict[str, str]] = attrs.field(factory=dict)
    tokens: dict[str, str] = attrs.field(factory=dict)
    edge: RoleProcess | None = None
    small_disk: Path | None = None

    @property
    def acks_log(self) -> Path:
        """What core acknowledged to edge (inbox events, delivery reports), as edge saw it."""
        return self.scratch / "edge-acks.jsonl"

    def work_dir(self, name: str) -> Path:
        if name == "w-disk" and self.small_disk is not None:
            return self.small_disk / "work"
        return self.scratch / "work" / name

    def start_worker(self, name: str) -> None:
        process = worker_process(self.core.url, self.tokens[name], self.work_dir(name), **self.worker_env[name])
        self.workers[name] = RoleProcess(name, process)


@contextlib.contextmanager
def small_disk(scratch: Path, notes: list[str], wanted: bool = True) -> Iterator[Path | None]:
    """A 24 MB tmpfs for one worker, or None with the reason recorded (needs root)."""
    mount = scratch / "small-disk"
    mount.mkdir()
    if not wanted:
        yield None
        return
    if os.geteuid() != 0:
        notes.append("disk_filled skipped: mounting a tmpfs needs root")
        yield None
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        notes.append(f"disk_filled skipped: {done.stderr.decode().strip()}")
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@contextlib.contextmanager
def stack(plan: SoakPlan, scratch: Path, notes: list[str]) -> Iterator[Stack]:
    with contextlib.ExitStack() as cleanup:
        # Directories of our own, so a stop and a start keep the data (a restart, not a new
        # server); under the temp dir, where the service user can reach them.
        servers = Path(tempfile.mkdtemp(prefix="videocopies-soak-servers-"))
        servers.chmod(0o711)
        cleanup.callback(shutil.rmtree, servers, True)
        pg = cleanup.enter_context(
            # A port of its own for good: a restart that moved the server would strand every client.
            LocalPostgres(base_dir=servers / "pg", port=free_port(), durable=plan.durable,
                          extra_settings=dict(plan.pg_settings))
        )
        url = fresh_database(pg, "soak", capacity=64)
        bouncer = cleanup.enter_context(
            LocalPgBouncer(upstream_port=pg.port, default_pool_size=10, base_dir=servers / "pgbouncer")
        )
        seaweed = cleanup.enter_context(LocalSeaweed())
        bucket = f"soak-{uuid.uuid4().hex[:12]}"
        store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
        cleanup.callback(store.close)
        asyncio.run(store.ensure_bucket())
        # Telegram as it is (flood control, 502s, late answers): the soak's own faults come on top.
        sim_url = cleanup.enter_context(simulator_process(scratch, BOT_TOKEN, strict=True)).url
        ttl = {"VIDEOCOPIES_LEASE_TTL_S": str(plan.lease_ttl_s)}
        s3 = {
            "VIDEOCOPIES_S3_ENDPOINT": seaweed.endpoint_url, "VIDEOCOPIES_S3_BUCKET": bucket,
            "VIDEOCOPIES_S3_ACCESS_KEY": seaweed.access_key, "VIDEOCOPIES_S3_SECRET_KEY": seaweed.secret_key,
        }
        core = CoreProcess(bouncer.url("soak"), listen_url=url, quote_secret=SECRET, log_path=scratch / "core.log",
                           **s3, **ttl,
                           VIDEOCOPIES_SAFETY_POLL_S="2", VIDEOCOPIES_TIDY_S=str(TIDY_S))
        cleanup.callback(core.__exit__)
        core.start(timeout=120)  # a busy machine imports slowly
        disk = cleanup.enter_context(small_disk(scratch, notes, "disk_filled" in plan.faults))
        built = Stack(pg, bouncer, seaweed, store, url, core, sim_url, scratch, small_disk=disk)
        cleanup.callback(stop_roles, built)
        built.edge = RoleProcess("edge", edge_process(
            core.url, issue_token(url, "soak-edge", "edge"), BOT_TOKEN, sim_url, scratch / "work" / "edge",
            VIDEOCOPIES_OUTBOX_HOLD_S="10", VIDEOCOPIES_EDGE_ACKS_LOG=str(built.acks_log),
        ))
        names = [f"w{i}" for i in range(plan.workers)] + (["w-disk"] if disk is not None else [])
        for name in names:
            built.tokens[name] = issue_token(url, name)
            built.worker_env[name] = {**ttl, "VIDEOCOPIES_RETRY_FOR_S": "600"}
            built.start_worker(name)
        yield built


def stop_roles(stack: Stack) -> None:
    for role in [*stack.workers.values(), *([stack.edge] if stack.edge else [])]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(role.process.pid, signal.SIGCONT)
        role.terminate()
    for role in [*stack.workers.values(), *([stack.edge] if stack.edge else [])]:
        role.wait()


def fetch(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
        cursor = conn.execute(sql, args)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


