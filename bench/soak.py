"""Chaos soak: simulated users order copies while workers, core, PgBouncer, PostgreSQL and
the object store fail under them, then the books are checked.

Every role is a process of its own on the local stack: PostgreSQL behind PgBouncer
(transaction mode; LISTEN direct), SeaweedFS (S3), the Bot API simulator, core, edge and
workers. Users order 1, 5 or 10 copies of a 1 s clip through the use cases, some cancel
midway; every copy reaches the user through edge, so a copy is charged only when edge
reports it delivered. Meanwhile, at seeded random points: SIGKILL of a worker (restarted),
SIGSTOP of a worker past its lease then SIGCONT, restarts of core, PgBouncer and
PostgreSQL, core's connections terminated, a worker's disk filled, the object store down.

Prints one JSON line: the figures that must be 0, and how many of each fault was injected.

    uv run python bench/soak.py [--orders 200] [--users 25] [--workers 3] [--seed 9]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from _support import emit, fresh_database  # noqa: E402

from videocopies.adapters.ffmpeg.clips import make_clip  # noqa: E402
from videocopies.adapters.objectstore import LocalSeaweed, S3ObjectStore  # noqa: E402
from videocopies.adapters.postgres.bouncer import LocalPgBouncer  # noqa: E402
from videocopies.adapters.postgres.cluster import LocalPostgres, free_port  # noqa: E402
from videocopies.application import use_cases as uc  # noqa: E402
from videocopies.domain.coins import LotKind  # noqa: E402
from videocopies.domain.shared import OrderId, UserId  # noqa: E402
from videocopies.roles.containers import PostgresService  # noqa: E402
from videocopies.roles.launch import CoreProcess, RoleProcess, edge_process, issue_token, worker_process  # noqa: E402
from videocopies.settings import Settings  # noqa: E402

BOT_TOKEN = "424242:soak"
SECRET = "soak-secret"
FINAL = ("done", "cancelled", "failed")
FAULTS = ("worker_killed", "worker_stopped", "core_restarted", "pgbouncer_restarted", "postgres_restarted",
          "connections_dropped", "disk_filled", "storage_down")


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

    def work_dir(self, name: str) -> Path:
        if name == "w-disk" and self.small_disk is not None:
            return self.small_disk / "work"
        return self.scratch / "work" / name

    def start_worker(self, name: str) -> None:
        process = worker_process(self.core.url, self.tokens[name], self.work_dir(name), **self.worker_env[name])
        self.workers[name] = RoleProcess(name, process)


# -- the stack ---------------------------------------------------------------------------------


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
def simulator(scratch: Path) -> Iterator[str]:
    port = free_port()
    sim = subprocess.Popen(
        [sys.executable, "-m", "videocopies.adapters.telegram.simulator", "--port", str(port), "--token", BOT_TOKEN,
         "--files-dir", str(scratch / "telegram"), "--chat-rate", "1000000", "--global-rate", "1000000"],
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
        yield url
    finally:
        sim.send_signal(signal.SIGTERM)
        try:
            sim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()


@contextlib.contextmanager
def stack(plan: SoakPlan, scratch: Path, notes: list[str]) -> Iterator[Stack]:
    with contextlib.ExitStack() as cleanup:
        # Directories of our own, so a stop and a start keep the data (a restart, not a new
        # server); under the temp dir, where the service user can reach them.
        servers = Path(tempfile.mkdtemp(prefix="videocopies-soak-servers-"))
        servers.chmod(0o711)
        cleanup.callback(shutil.rmtree, servers, True)
        pg = cleanup.enter_context(LocalPostgres(base_dir=servers / "pg"))
        url = fresh_database(pg, "soak", capacity=64)
        bouncer = cleanup.enter_context(
            LocalPgBouncer(upstream_port=pg.port, default_pool_size=10, base_dir=servers / "pgbouncer")
        )
        seaweed = cleanup.enter_context(LocalSeaweed())
        bucket = f"soak-{uuid.uuid4().hex[:12]}"
        store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
        cleanup.callback(store.close)
        asyncio.run(store.ensure_bucket())
        sim_url = cleanup.enter_context(simulator(scratch))
        ttl = {"VIDEOCOPIES_LEASE_TTL_S": str(plan.lease_ttl_s)}
        s3 = {
            "VIDEOCOPIES_S3_ENDPOINT": seaweed.endpoint_url, "VIDEOCOPIES_S3_BUCKET": bucket,
            "VIDEOCOPIES_S3_ACCESS_KEY": seaweed.access_key, "VIDEOCOPIES_S3_SECRET_KEY": seaweed.secret_key,
        }
        core = CoreProcess(bouncer.url("soak"), listen_url=url, quote_secret=SECRET, log_path=scratch / "core.log",
                           **s3, **ttl,
                           VIDEOCOPIES_SAFETY_POLL_S="2")
        cleanup.enter_context(core)
        disk = cleanup.enter_context(small_disk(scratch, notes, "disk_filled" in plan.faults))
        built = Stack(pg, bouncer, seaweed, store, url, core, sim_url, scratch, small_disk=disk)
        cleanup.callback(stop_roles, built)
        built.edge = RoleProcess("edge", edge_process(
            core.url, issue_token(url, "soak-edge", "edge"), BOT_TOKEN, sim_url, scratch / "work" / "edge",
            VIDEOCOPIES_OUTBOX_HOLD_S="10",
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


# -- the users ---------------------------------------------------------------------------------


@attrs.frozen
class Wish:
    user: int
    copies: int
    cancel_after_s: float | None


def wishes(plan: SoakPlan, rng: random.Random) -> list[Wish]:
    out = []
    for _ in range(plan.orders):
        copies = rng.choices((1, 5, 10), weights=(6, 3, 1))[0]
        cancel = rng.uniform(0.5, 8.0) if rng.random() < 0.15 else None
        out.append(Wish(rng.randrange(plan.users) + 1, copies, cancel))
    return out


async def persist(what: str, call: Any, give_up_s: float = 180.0) -> Any:
    """A user trying again while the service is down (the database or the store restarting);
    a refusal in the domain's words is an answer, not an outage."""
    deadline = time.monotonic() + give_up_s
    while True:
        try:
            return await call()
        except Exception as error:
            if type(error).__module__.startswith(("videocopies.domain", "videocopies.application")):
                raise
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: gave up") from error
            await asyncio.sleep(0.5)


class Users:
    """Simulated users placing their orders through the use cases, as the bot would."""

    def __init__(self, stack: Stack, plan: SoakPlan, clip: Path) -> None:
        self._stack, self._plan, self._clip = stack, plan, clip
        self.service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
        self.service.gateways.config.from_dict({"database_url": stack.url, "pool_size": 4})
        self.confirmed: list[str] = []
        self.cancel_requests = 0
        self._uploaded: set[int] = set()

    async def open(self) -> None:
        pool = self.service.gateways.pool()
        await pool.open(wait=True)
        async with httpx.AsyncClient(base_url=self._stack.sim_url) as sim:
            users = [{"id": u, "first_name": f"U{u}", "language_code": "en"} for u in range(1, self._plan.users + 1)]
            (await sim.post("/_sim/users/bulk", json={"bot_token": BOT_TOKEN, "users": users})).raise_for_status()
            # A bot may write only to users who started it.
            actions = [{"user_id": u["id"], "text": "/start"} for u in users]
            (await sim.post("/_sim/burst", json={"actions": actions})).raise_for_status()
        grant = self.service.use_cases.grant_coins()
        for user in range(1, self._plan.users + 1):
            await grant(uc.GrantCoinsCommand(UserId(user), LotKind.MANUAL, 100_000, None, f"soak-{user}"))

    async def close(self) -> None:
        await self.service.gateways.pool().close()

    async def order(self, wish: Wish) -> str:
        cases = self.service.use_cases
        key, size = f"sources/{wish.user}/soak.mp4", self._clip.stat().st_size
        if wish.user not in self._uploaded:  # as the bot stores a video when it is sent
            self._uploaded.add(wish.user)
            await persist("upload", lambda: self._stack.store.put_file(key, self._clip))
        quote = await persist("quote", lambda: cases.quote_order()(
            uc.QuoteOrderCommand(UserId(wish.user), key, wish.copies, size)))

        async def confirm() -> None:
            try:
                await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(wish.user), quote.quote_id, quote.token))
            except Exception as error:
                # A retry after a confirmation whose answer was lost: it did happen.
                if type(error).__name__ not in ("QuoteAlreadyUsed", "OrderNotInState"):
                    raise

        await persist("confirm", confirm)
        self.confirmed.append(quote.quote_id)
        if wish.cancel_after_s is not None:
            await asyncio.sleep(wish.cancel_after_s)
            self.cancel_requests += 1
            await persist("cancel", lambda: cases.cancel_order()(
                uc.CancelOrderCommand(UserId(wish.user), OrderId(quote.quote_id))))
        return quote.quote_id


def open_orders(url: str, ids: list[str]) -> int:
    if not ids:
        return 0
    with contextlib.suppress(psycopg.Error), psycopg.connect(url, connect_timeout=3) as conn:
        (n,), = conn.execute("SELECT count(*) FROM orders WHERE order_id = ANY(%s) AND state <> ALL(%s)",
                             (ids, list(FINAL))).fetchall()
        return int(n)
    return len(ids)


async def place_all(users: Users, plan: SoakPlan, url: str, all_wishes: list[Wish]) -> None:
    tasks: list[asyncio.Task[str]] = []
    for wish in all_wishes:
        while sum(not t.done() for t in tasks) + await asyncio.to_thread(open_orders, url, users.confirmed) \
                >= plan.in_flight:
            await asyncio.sleep(0.3)
        tasks.append(asyncio.create_task(users.order(wish)))
        await asyncio.sleep(0.05)
    await asyncio.gather(*tasks)


# -- the faults --------------------------------------------------------------------------------


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
            try:
                getattr(self, kind)()
                self.injected[kind] += 1
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
        holders = sorted({w for w, in _fetch(self._stack.url, "SELECT worker_id FROM jobs WHERE state = 'leased'")}
                         & set(self._stack.workers) - {"w-disk"})
        name = self._rng.choice(holders) if holders else self._worker()
        role = self._stack.workers[name]
        role.process.send_signal(signal.SIGSTOP)
        held = _fetch(self._stack.url, "SELECT job_id, owner_token, lease_until FROM jobs "
                      "WHERE worker_id = %s AND state = 'leased'", name)
        self.zombies += [Zombie(name, job, token, until) for job, token, until in held]
        self._stop.wait(self._plan.lease_ttl_s + 3)
        role.process.send_signal(signal.SIGCONT)

    def core_restarted(self) -> None:
        core = self._stack.core
        core.stop()
        try:
            core.start()
        except AssertionError as failed:
            # Recorded as an error of the run, then core is brought back for the rest of it.
            assert core.process is not None
            core.process.kill()
            core.process.wait()
            log = core.log_path.read_text(errors="replace")[-1500:] if core.log_path else ""
            self.errors.append(f"core_restarted: {failed!s:.200}; log: {log}")
            core.start()

    def pgbouncer_restarted(self) -> None:
        self._stack.bouncer.stop()
        time.sleep(1)
        self._stack.bouncer.start()

    def postgres_restarted(self) -> None:
        self._stack.pg.stop()
        time.sleep(1)
        self._stack.pg.start()

    def connections_dropped(self) -> None:
        # Core's connections (through PgBouncer, and its direct LISTEN), cut by the server.
        _fetch(self._stack.url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
               "WHERE datname = 'soak' AND pid <> pg_backend_pid() AND backend_type = 'client backend'")

    def disk_filled(self) -> None:
        assert self._stack.small_disk is not None
        filler = self._stack.small_disk / "filler"
        with open(filler, "wb") as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 65536)
        self._stop.wait(8)
        filler.unlink()

    def storage_down(self) -> None:
        self._stack.seaweed.restart(down_s=3)


def _fetch(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
        cursor = conn.execute(sql, args)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


# -- the books ---------------------------------------------------------------------------------

LEDGER_CHECKS = {
    # Every lot's coins are somewhere: available, debited, expired, or held for an order.
    "lot_adds_up": """
        SELECT count(*) FROM coin_lots l
        WHERE l.amount <> l.available + l.debited + l.expired
              + (SELECT coalesce(sum(h.held), 0) FROM coin_holds h WHERE h.lot_id = l.lot_id)""",
    "negative": """
        SELECT (SELECT count(*) FROM coin_lots WHERE available < 0 OR debited < 0 OR expired < 0)
             + (SELECT count(*) FROM coin_holds WHERE held < 0)
             + (SELECT count(*) FROM coin_reservations WHERE debited < 0 OR released < 0)""",
    "reservation_adds_up": """
        SELECT count(*) FROM coin_reservations r
        WHERE r.amount <> r.debited + r.released
              + (SELECT coalesce(sum(h.held), 0) FROM coin_holds h WHERE h.order_id = r.order_id)""",
    "debits_match": """
        SELECT count(*) FROM coin_reservations r JOIN orders o USING (order_id)
        WHERE r.debited <> o.price_per_copy * (SELECT count(*) FROM coin_debits d WHERE d.order_id = r.order_id)""",
    # Once every message is out, a closed order holds nothing (a done order holds coins
    # only for copies still on their way).
    "closed_order_holds": """
        SELECT count(*) FROM coin_reservations r JOIN orders o USING (order_id)
        WHERE o.state IN ('done', 'cancelled', 'failed')
          AND EXISTS (SELECT 1 FROM coin_holds h WHERE h.order_id = r.order_id AND h.held > 0)""",
}


def books(stack: Stack, confirmed: list[str], zombies: list[Zombie]) -> dict[str, int]:
    url = stack.url
    states = dict(_fetch(url, "SELECT order_id, state FROM orders WHERE order_id = ANY(%s)", confirmed))
    figures: dict[str, int] = {
        "orders": len(confirmed),
        "final": sum(1 for o in confirmed if states.get(o) in FINAL),
        "lost": sum(1 for o in confirmed if states.get(o) not in FINAL),
        "states": dict(Counter(str(s) for s in states.values())),
    }
    (figures["double_charged"],), = _fetch(url, """
        SELECT coalesce(sum(n - 1), 0) FROM (SELECT order_id, key, count(*) n FROM coin_debits GROUP BY 1, 2) d
        WHERE n > 1""")
    figures["double_charged"] += _fetch(url, """
        SELECT count(*) FROM coin_debits d JOIN orders o USING (order_id)
        WHERE split_part(d.key, ':', 2)::int >= o.copies""")[0][0]
    figures["charged_undelivered"] = charged_undelivered(stack)
    refused = dict(_fetch(url, "SELECT operation || ':' || reason, count(*) FROM refused_writes GROUP BY 1"))
    figures["zombie_writes_attempted"] = sum(refused.values())
    figures["refused_writes"] = refused
    figures["failures"] = dict(_fetch(url, "SELECT left(coalesce(last_error, '-'), 60), count(*) FROM jobs "
                                      "WHERE state = 'failed' GROUP BY 1"))
    figures["zombie_writes_accepted"] = sum(
        _fetch(url, "SELECT count(*) FROM job_checkpoints WHERE job_id = %s AND object_key LIKE %s "
               "AND created_at > %s", z.job_id, f"%-{z.token[:12]}.mp4", z.lease_until)[0][0]
        for z in zombies
    )
    figures["zombies_watched"] = len(zombies)
    ledger = {name: int(_fetch(url, sql)[0][0]) for name, sql in LEDGER_CHECKS.items()}
    figures["ledger_invariant_violations"] = sum(ledger.values())
    figures["ledger_checks"] = ledger
    return figures


def charged_undelivered(stack: Stack) -> int:
    """Debited copies whose message is not in the user's chat as a video."""
    rows = _fetch(stack.url, """
        SELECT d.order_id, o.user_id, (x.delivery->>'message_id')::bigint
        FROM coin_debits d JOIN orders o USING (order_id)
        LEFT JOIN outbox x ON x.dedup_key = 'copy:' || d.order_id || ':' || split_part(d.key, ':', 2)
                          AND x.sent_at IS NOT NULL""")
    missing = 0
    with httpx.Client(base_url=stack.sim_url) as sim:
        for _, user, message_id in rows:
            if message_id is None:
                missing += 1
                continue
            answer = sim.get(f"/_sim/users/{user}/chat/{message_id}")
            if answer.status_code != 200 or "video" not in answer.json():
                missing += 1
    return missing


def objects(stack: Stack) -> dict[str, int]:
    stored = set(stored_keys(stack.store))
    rows = _fetch(stack.url, "SELECT source_key FROM orders UNION SELECT object_key FROM job_checkpoints")
    referenced = {key for key, in rows}
    return {"objects": len(stored), "orphan_objects": len(stored - referenced),
            "dangling_rows": len(referenced - stored),
            "orphans_seen": sorted(stored - referenced)[:5], "dangling_seen": sorted(referenced - stored)[:5]}


def stored_keys(store: S3ObjectStore) -> list[str]:
    pages = store._client.get_paginator("list_objects_v2").paginate(Bucket=store.bucket)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def files_left(stack: Stack) -> int:
    dirs = [stack.scratch / "work"] + ([stack.small_disk / "work"] if stack.small_disk else [])
    return sum(1 for d in dirs if d.exists() for p in d.rglob("*") if p.is_file())


# -- the run -----------------------------------------------------------------------------------


def settle(stack: Stack, users: Users, timeout_s: float) -> None:
    """Until every order is final and every copy message is sent (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(psycopg.Error):
            unsent = _fetch(stack.url, "SELECT count(*) FROM outbox WHERE sent_at IS NULL")[0][0]
            if open_orders(stack.url, users.confirmed) == 0 and unsent == 0:
                return
        time.sleep(1)


def soak(plan: SoakPlan, scratch: Path) -> dict[str, Any]:
    rng = random.Random(plan.seed)
    notes: list[str] = []
    clip = make_clip(scratch / "clip.mp4", seconds=1, width=360, height=640)
    started = time.monotonic()
    with stack(plan, scratch, notes) as built:
        users = Users(built, plan, clip)

        async def drive(chaos: Chaos) -> None:
            await users.open()
            try:
                await place_all(users, plan, built.url, wishes(plan, rng))
            finally:
                await users.close()

        with Chaos(built, plan, random.Random(plan.seed + 1), notes) as chaos:
            asyncio.run(drive(chaos))
            deadline = time.monotonic() + plan.settle_timeout_s
            while time.monotonic() < deadline and (
                chaos.rounds < plan.min_rounds or open_orders(built.url, users.confirmed)
            ):
                time.sleep(1)
        settle(built, users, plan.settle_timeout_s)
        figures = books(built, users.confirmed, chaos.zombies)
        figures.update(objects(built))
        stop_roles(built)
        figures["temp_files_left"] = files_left(built)
        (figures["copies_delivered"],), = _fetch(built.url, "SELECT count(*) FROM coin_debits")
        figures["copy_messages"] = _fetch(built.url, "SELECT count(*), count(sent_at), count(delivery), "
                                          "min(delivery::text) FROM outbox WHERE kind = 'copy_ready'")[0]
        figures["cancel_requests"] = users.cancel_requests
        figures["faults"] = dict(chaos.injected)
        figures["fault_errors"] = chaos.errors
        figures["notes"] = notes
        figures["seconds"] = round(time.monotonic() - started, 1)
        figures["log_tail"] = {r.name: list(r.tail)[-3:] for r in [*built.workers.values(), built.edge] if r}
    return figures


MUST_BE_ZERO = ("lost", "double_charged", "charged_undelivered", "zombie_writes_accepted",
                "ledger_invariant_violations", "temp_files_left", "orphan_objects", "dangling_rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--users", type=int, default=25)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--fault-every", type=float, default=6.0)
    parser.add_argument("--faults", default=",".join(FAULTS), help="the kinds of fault to inject")
    parser.add_argument("--verbose", action="store_true", help="also print the roles' last log lines")
    args = parser.parse_args()
    plan = SoakPlan(orders=args.orders, users=args.users, workers=args.workers, seed=args.seed,
                    fault_every_s=args.fault_every, faults=tuple(args.faults.split(",")))
    # A stop asked for by the operator still stops every server this run started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="videocopies-soak-"))
    try:
        figures = soak(plan, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    tail = figures.pop("log_tail")
    emit({k: int(v) if isinstance(v, Decimal) else v for k, v in figures.items()})
    if args.verbose:
        print(tail, file=sys.stderr)
    sys.exit(1 if any(figures[k] for k in MUST_BE_ZERO) else 0)


if __name__ == "__main__":
    main()
