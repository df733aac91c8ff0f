"""Two cores behind HAProxy, one killed mid-stream. PostgreSQL with PgBouncer before it (the
cores LISTEN on a direct connection), two cores, HAProxy before them, edge and two workers
reaching core only through HAProxy's address, the Bot API simulator for the users. Orders
come in a steady stream; one core (the one holding the object lifecycle duty) is SIGKILLed
in the middle. No order is lost or charged twice, every order finishes and every copy reaches
its user, the nodes carry on within the lease time, and the survivor takes the duty over."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

from media import make_clip
from videocopies.adapters.postgres.ledger_audit import audit_ledger
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.haproxy import LocalHaproxy, haproxy_binary
from videocopies.embedded.local import LocalServerError
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.runtime.core_loops import OBJECTS_DUTY
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process, worker_process
from videocopies.settings import Settings
from videocopies.testing.telegram_simulator import BotApiSimulator

from .harness import fetch_all, stopped_if_left, wait_for

SECRET = "two-cores-secret" * 3
LEASE_TTL_S = 8.0
DUTY_TTL_S = 3.0
USERS = 6
ORDER_EVERY_S = 0.3
AFTER_KILL_S = 3.0  # orders keep coming this long after the kill
OBJECTS_DUTY_TTL_S = 2 * 1 + 5  # core_loops.duty_ttl for a sweep every second
UNPACED = {"VIDEOCOPIES_TELEGRAM_RATE": "100000", "VIDEOCOPIES_TELEGRAM_BURST": "100000",
           "VIDEOCOPIES_TELEGRAM_CHAT_RATE": "1000", "VIDEOCOPIES_TELEGRAM_CHAT_BURST": "1000"}


@pytest.fixture
def haproxy_installed() -> None:
    try:
        haproxy_binary()
    except LocalServerError as missing:
        pytest.skip(str(missing))


@contextlib.contextmanager
def started_together(cores: list[CoreProcess]) -> Iterator[None]:
    """The cores start side by side (a core's start is mostly its imports), stopped on the way out."""
    try:
        with ThreadPoolExecutor(len(cores)) as starting:
            list(starting.map(lambda core: core.start(timeout=60), cores))
        yield
    finally:
        for core in cores:
            core.__exit__(None, None, None)


def duty_holder_pid(url: str) -> int | None:
    rows = fetch_all(url, "SELECT holder FROM duty_leases WHERE duty = %s AND lease_until > now()", OBJECTS_DUTY)
    return int(rows[0][0].rsplit(":", 1)[1]) if rows else None


def execute(url: str, statement: str, *params: object) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement, params)  # type: ignore[arg-type]


def now_in_database(url: str) -> datetime:
    ((now,),) = fetch_all(url, "SELECT clock_timestamp()")
    return now


async def place_orders(url: str, store: Path, clip: Path, users: list[int], placed: list[str],
                       enough: threading.Event) -> None:
    """One one-copy order every ORDER_EVERY_S until `enough`, through the use cases as the bot
    would place it."""
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    pool, notifier = service.gateways.pool(), service.gateways.notifier()
    await pool.open(wait=True)
    await notifier.start()  # a confirmation announces its job by NOTIFY, as core's does
    try:
        cases, size = service.use_cases, clip.stat().st_size
        for user in users:
            await cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.MANUAL, 10_000, None, f"two-{user}"))
            key = f"sources/{user}/clip.mp4"
            # The source's row first, as edge's inbox event writes it: a key with no row is a stray.
            await asyncio.to_thread(execute, url, "INSERT INTO stored_objects (key, kind, user_id, size, state, "
                                    "stored_at) VALUES (%s, 'source', %s, %s, 'stored', now())", key, user, size)
            (store / key).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(clip, store / key)
        while not enough.is_set():
            user = users[len(placed) % len(users)]
            quote = await cases.quote_order()(
                uc.QuoteOrderCommand(UserId(user), f"sources/{user}/clip.mp4", 1, size)
            )
            confirm = uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token)
            placed.append(await cases.confirm_order()(confirm))
            await asyncio.sleep(ORDER_EVERY_S)
    finally:
        await notifier.stop()
        await pool.close()


def test_a_core_killed_mid_stream_loses_no_order_and_the_nodes_carry_on(
    haproxy_installed: None, pg_server: LocalPostgres, pgbouncer: LocalPgBouncer, database: str, tmp_path: Path
) -> None:
    began = time.monotonic()
    url = pg_server.url(database)
    store = tmp_path / "store"
    store.mkdir()
    clip = make_clip(tmp_path / "clip.mp4", seconds=1)
    env = {"VIDEOCOPIES_STORE_DIR": str(store), "VIDEOCOPIES_LEASE_TTL_S": str(LEASE_TTL_S),
           "VIDEOCOPIES_DUTY_TTL_S": str(DUTY_TTL_S), "VIDEOCOPIES_OBJECTS_SWEEP_S": "1",
           "VIDEOCOPIES_SAFETY_POLL_S": "2"}
    cores = [CoreProcess(pgbouncer.url(database), listen_url=url, quote_secret=SECRET, **env) for _ in range(2)]
    balancer = LocalHaproxy([f"127.0.0.1:{core.port}" for core in cores])
    with BotApiSimulator(chat_rate=1000, chat_burst=1000, global_rate=100_000, global_burst=100_000) as sim:
        bot = sim.create_bot()
        people = [sim.create_user(bot, first_name=f"T{n}", language_code="en") for n in range(USERS)]
        for person in people:
            person.send_text("/start")  # a bot may write only to users who started it
        # The nodes start beside the cores: their imports take seconds, and they retry until core answers.
        edge = edge_process(balancer.http_url, issue_token(url, "edge", "edge"), bot, sim.url, tmp_path / "edge",
                            store_dir=store, **UNPACED)
        workers = [
            worker_process(balancer.http_url, issue_token(url, f"w{n}"), tmp_path / f"w{n}", store_dir=store,
                           VIDEOCOPIES_LEASE_TTL_S=str(LEASE_TTL_S), VIDEOCOPIES_CLAIM_WAIT_S="5")
            for n in range(2)
        ]
        with stopped_if_left(edge), stopped_if_left(workers[0]), stopped_if_left(workers[1]), \
                started_together(cores), balancer:
            phases = {"started_s": time.monotonic() - began}
            placed: list[str] = []
            enough = threading.Event()
            stream = threading.Thread(target=lambda: asyncio.run(place_orders(
                url, store, clip, [person.id for person in people], placed, enough)))
            stream.start()
            # Mid-stream: every node at work (copies completed and sent), the duty held.
            wait_for(lambda: fetch_all(url, "SELECT count(*) FROM receipts")[0][0] >= 2
                     and fetch_all(url, "SELECT count(*) FROM outbox WHERE kind = 'copy_ready' AND sent_at IS NOT NULL"
                                   )[0][0] >= 2 and duty_holder_pid(url) is not None, 60)
            phases["working_s"] = time.monotonic() - began
            victim = next(core for core in cores if core.process and core.process.pid == duty_holder_pid(url))
            survivor = next(core for core in cores if core is not victim)
            assert victim.process is not None
            victim.process.send_signal(signal.SIGKILL)
            killed_at, killed = time.monotonic(), now_in_database(url)
            victim.process.wait(10)
            wait_for(lambda: duty_holder_pid(url) not in (None, victim.process.pid), 3 * LEASE_TTL_S)
            duty_taken_s = time.monotonic() - killed_at
            time.sleep(max(0.0, AFTER_KILL_S - (time.monotonic() - killed_at)))
            enough.set()
            stream.join(30)
            before_kill = fetch_all(url, "SELECT count(*) FROM orders WHERE created_at < %s", killed)[0][0]
            assert not stream.is_alive() and 0 < before_kill < len(placed), (before_kill, len(placed))
            phases["placed_s"] = time.monotonic() - began
            wait_for(lambda: fetch_all(url, "SELECT count(*) FROM orders WHERE state = 'done'")[0][0] == len(placed)
                     and fetch_all(url, "SELECT count(*) FROM outbox WHERE sent_at IS NULL")[0][0] == 0, 60)
            phases["finished_s"] = time.monotonic() - began
            assert survivor.process is not None and survivor.process.poll() is None
            stopped = [stop_process(process) for process in (*workers, edge)]
            assert all(code == 0 for code, _ in stopped), [err.decode()[-2000:] for _, err in stopped]
    after = {
        "first_completion_after_kill_s": fetch_all(
            url, "SELECT extract(epoch FROM min(created_at) - %s) FROM receipts WHERE created_at > %s", killed, killed
        )[0][0],
        "first_message_sent_after_kill_s": fetch_all(
            url, "SELECT extract(epoch FROM min(sent_at) - %s) FROM outbox WHERE sent_at > %s", killed, killed
        )[0][0],
    }
    figures = {key: round(float(value), 3) for key, value in after.items() if value is not None}
    figures |= {"duty_taken_over_s": round(duty_taken_s, 3), "test_s": round(time.monotonic() - began, 1)}
    figures |= {phase: round(at, 1) for phase, at in phases.items()}
    print("two cores:", json.dumps(figures))
    # Nothing lost, nothing charged twice: every order done once, each charged its one copy.
    orders = fetch_all(url, "SELECT o.order_id, o.state, r.amount, j.state FROM orders o JOIN coin_reservations r "
                            "USING (order_id) JOIN jobs j USING (order_id) WHERE o.order_id = ANY(%s)", placed)
    assert sorted(o for o, *_ in orders) == sorted(placed) and {(s, j) for _, s, _, j in orders} == {("done", "done")}
    debited = dict(fetch_all(url, "SELECT user_id, sum(debited) FROM coin_lots GROUP BY user_id"))
    charged = dict(fetch_all(url, "SELECT o.user_id, sum(r.amount) FROM orders o JOIN coin_reservations r "
                                  "USING (order_id) GROUP BY o.user_id"))
    assert debited == charged, "a copy was charged twice, or not at all"
    assert fetch_all(url, "SELECT count(*) FROM refused_writes") == [(0,)]
    audit = audit_ledger(url)
    assert audit.sound, [finding.describe() for finding in audit.findings]
    orders_of = dict(fetch_all(url, "SELECT user_id, count(*) FROM orders WHERE order_id = ANY(%s) GROUP BY user_id",
                               placed))
    for person in people:
        copies = [e for e in person.received if "video" in e.message]
        assert len(copies) >= orders_of[person.id], f"user {person.id}: {len(copies)} of {orders_of[person.id]} copies"
    # The nodes carried on within the lease time; the duty moved within its own lease.
    assert figures["first_completion_after_kill_s"] < LEASE_TTL_S, figures
    assert figures["first_message_sent_after_kill_s"] < LEASE_TTL_S, figures
    assert duty_taken_s < OBJECTS_DUTY_TTL_S + 4, figures  # its lease, then the survivor's next pass or two
