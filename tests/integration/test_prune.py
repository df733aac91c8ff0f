"""Pruning on a real database: rows of every kind, some past their retention and some not,
some still referred to; the prune deletes exactly the rows the domain's rule calls due, batch
by batch, leaves money alone, and a dry run deletes nothing and counts the same."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.control_views import PostgresControlReadModel, control_pool
from videocopies.adapters.postgres.ledger_audit import audit_ledger
from videocopies.adapters.postgres.retention import PostgresTransientRows
from videocopies.adapters.system import SystemClock
from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.application.retention import PruneTables
from videocopies.cli import main as cli
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import CopyArtifact, LeaseLost
from videocopies.domain.orders import OrderState
from videocopies.domain.retention import MONEY, PrunableRow, RetentionPolicy, Transient
from videocopies.domain.shared import JobId, OrderId, OwnerToken, UserId, WorkerId
from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings

POLICY = RetentionPolicy()  # the defaults: 7, 7, 30, 1 and 30 days
OLD, RECENT = timedelta(days=60), timedelta(hours=1)
USER = 901

# Each table's rows with the facts the domain rule decides on, read plainly (not the walk).
FACTS = {
    Transient.INBOX: "SELECT id::text, processed_at, false FROM inbox",
    Transient.OUTBOX: "SELECT id::text, sent_at, false FROM outbox",
    Transient.RECEIPTS: """SELECT r.receipt_id, r.created_at, EXISTS (SELECT 1 FROM jobs j
        WHERE j.job_id = r.result->>'job_id' AND j.state IN ('queued', 'leased')) FROM receipts r""",
    Transient.QUOTES: """SELECT o.order_id, o.quote_expires_at,
        EXISTS (SELECT 1 FROM jobs j WHERE j.order_id = o.order_id)
        OR EXISTS (SELECT 1 FROM capacity_slots s WHERE s.order_id = o.order_id)
        OR EXISTS (SELECT 1 FROM coin_reservations r WHERE r.order_id = o.order_id)
        FROM orders o WHERE o.state = 'quoted'""",
    Transient.CHECKPOINTS: """SELECT c.job_id || '/' || c.idx,
        CASE WHEN j.state IN ('done', 'failed', 'cancelled') THEN c.created_at END,
        EXISTS (SELECT 1 FROM stored_objects s WHERE s.key = c.object_key AND s.state <> 'deleted')
        FROM job_checkpoints c JOIN jobs j USING (job_id)""",
}


async def seed(url: str) -> dict[str, str]:
    """Orders through the use cases, inbox and outbox rows by hand, then every row aged as
    the test needs: returns the names of the rows the test looks at."""
    service = PostgresService(settings=Settings(quote_secret=b"prune-seed-secret" * 2))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    pool = service.gateways.pool()
    await pool.open(wait=True)
    cases = service.use_cases
    try:
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(USER), LotKind.START, 500, timedelta(days=90)))
        await cases.credit_payment()(uc.CreditPaymentCommand("tg-prune-1", UserId(USER), 100, 50, "XTR"))

        async def quote() -> str:
            return (await cases.quote_order()(uc.QuoteOrderCommand(UserId(USER), "sources/901/a.mp4", 1))).quote_id

        async def run(copies: int, finish: str | None) -> str:
            quoted = await cases.quote_order()(uc.QuoteOrderCommand(UserId(USER), "sources/901/a.mp4", copies))
            await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(USER), quoted.quote_id, quoted.token))
            (job,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("w")))
            job_id, token = JobId(job.job_id), OwnerToken(job.token)
            for index in range(copies if finish != "fail" else 0):
                artifact = CopyArtifact(f"copies/{job.order_id}/{index}.mp4", 10, "c" * 64, 2.0, 540, 960)
                await cases.checkpoint_copy()(uc.CheckpointCopyCommand(job_id, token, index, artifact))
            if finish == "complete":
                await cases.complete_job()(uc.CompleteJobCommand(job_id, token, f"r-{job.order_id}"))
            elif finish == "fail":
                await cases.fail_job()(uc.FailJobCommand(job_id, token, "x", True, f"r-{job.order_id}"))
            return job.job_id

        names = {
            "old_done": await run(5, "complete"), "recent_done": await run(1, "complete"),
            "open": await run(1, None), "requeued": await run(1, "fail"),
            "quote_old": await quote(), "quote_recent": await quote(), "quote_slotted": await quote(),
        }
    finally:
        await pool.close()
    with psycopg.connect(url, autocommit=True) as conn:
        age = f"now() - interval '{OLD.days} days'"
        young = f"now() - interval '{int(RECENT.total_seconds())} seconds'"
        conn.execute(f"UPDATE job_checkpoints SET created_at = {age} WHERE job_id <> %s", [names["recent_done"]])
        conn.execute(f"UPDATE job_checkpoints SET created_at = {young} WHERE job_id = %s", [names["recent_done"]])
        conn.execute("UPDATE stored_objects SET state = 'deleted', deleted_at = now() WHERE kind = 'copy'"
                     " AND key NOT LIKE '%%/1.mp4'")  # copy 1 of the old order is still stored
        conn.execute(f"UPDATE receipts SET created_at = {age}")
        conn.execute(f"UPDATE receipts SET created_at = {young} WHERE result->>'job_id' = %s", [names["recent_done"]])
        conn.execute(f"INSERT INTO receipts VALUES ('r-job-gone', 'f', '{{\"job_id\": \"gone\"}}', {age})")
        conn.execute(f"UPDATE orders SET quote_expires_at = {age} WHERE order_id IN (%s, %s)",
                     [names["quote_old"], names["quote_slotted"]])
        conn.execute(f"UPDATE orders SET created_at = {age} WHERE state <> 'quoted'")
        conn.execute("UPDATE capacity_slots SET order_id = %s WHERE slot_id = "
                     "(SELECT min(slot_id) FROM capacity_slots WHERE order_id IS NULL)", [names["quote_slotted"]])
        conn.execute(f"UPDATE outbox SET sent_at = {age}, created_at = {age} WHERE id % 2 = 0")
        # Inbox and outbox rows of every end: old and ended (7 of each: several batches of 2),
        # old and unfinished, ended recently, old but ended within the retention.
        for n, (received, processed) in enumerate(
            [(age, age)] * 7 + [(age, "NULL"), (young, young), (age, "now() - interval '2 days'")]
        ):
            conn.execute(f"INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at) "
                         f"VALUES ({9000 + n}, {USER}, 'text', '{{}}', {received}, {processed})")
            conn.execute(f"INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at, sent_at) "
                         f"VALUES ({USER}, 'text', '{{}}', 'd-{n}', {received}, {processed})")
    return names


def facts(url: str) -> dict[Transient, dict[str, PrunableRow]]:
    with psycopg.connect(url) as conn:
        return {
            table: {key: PrunableRow(table.value, ended, referred) for key, ended, referred in conn.execute(query)}
            for table, query in FACTS.items()
        }


def money(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        present = {name for (name,) in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")}
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in sorted(MONEY & present)}


def due(rows: dict[Transient, dict[str, PrunableRow]], now: datetime) -> dict[Transient, set[str]]:
    return {t: {k for k, row in found.items() if POLICY.is_due(row, now)} for t, found in rows.items()}


@pytest.fixture
async def pool(pg_server: LocalPostgres, database: str) -> AsyncIterator[AsyncConnectionPool]:
    async with AsyncConnectionPool(pg_server.url(database), min_size=1, max_size=2, open=False) as opened:
        yield opened


class Batches:
    """The real adapter, counting the batches it runs."""

    def __init__(self, rows: PostgresTransientRows) -> None:
        self.rows, self.batches = rows, dict.fromkeys(Transient, 0)

    async def prune(self, table: Transient, cutoff: datetime, batch: int | None, dry_run: bool) -> Any:
        async for pruned in self.rows.prune(table, cutoff, batch, dry_run):
            self.batches[table] += 1
            yield pruned


async def test_prune_deletes_exactly_the_due_rows_in_batches_and_keeps_money(
    pg_server: LocalPostgres, database: str, pool: AsyncConnectionPool
) -> None:
    url = pg_server.url(database)
    names = await seed(url)
    before, money_before = facts(url), money(url)
    expected = due(before, SystemClock().now())
    assert all(expected.values()) and all(before[t].keys() - expected[t] for t in Transient), expected
    assert f"{names['old_done']}/0" in expected[Transient.CHECKPOINTS]
    assert f"{names['old_done']}/1" not in expected[Transient.CHECKPOINTS]  # its copy is still stored
    assert not {f"{names['open']}/0", f"{names['recent_done']}/0"} & expected[Transient.CHECKPOINTS]
    assert expected[Transient.QUOTES] == {names["quote_old"]}
    assert {"r-job-gone", f"r-{_order_of(url, names['old_done'])}"} == expected[Transient.RECEIPTS]

    rows = Batches(PostgresTransientRows(pool))
    dry = await PruneTables(rows, SystemClock(), POLICY, batch=2)(dry_run=True)
    assert facts(url) == before
    assert dry.rows == {t: len(keys) for t, keys in expected.items()}

    pruned = await PruneTables(rows, SystemClock(), POLICY, batch=2)()
    assert pruned.rows == dry.rows
    after = facts(url)
    assert {t: set(before[t]) - set(after[t]) for t in Transient} == expected
    assert money(url) == money_before
    assert rows.batches[Transient.INBOX] >= 2 * 4  # 8 due inbox rows, 2 at a time, in both runs

    assert not (await PruneTables(rows, SystemClock(), POLICY, batch=2)()).total  # nothing left to prune


async def _refusals_in_the_domains_words(url: str, names: dict[str, str]) -> None:
    """A done job whose receipt and checkpoints are gone, and a quote that is gone: a retried
    report is refused as a lost lease, a cancel finds the order done, a confirmation finds nothing."""
    service = PostgresService(settings=Settings(quote_secret=b"prune-seed-secret" * 2))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 1})
    pool = service.gateways.pool()
    await pool.open(wait=True)
    cases, done = service.use_cases, names["old_done"]
    try:
        with pytest.raises(LeaseLost):
            await cases.complete_job()(uc.CompleteJobCommand(JobId(done), OwnerToken("t"), f"r-{_order_of(url, done)}"))
        cancel = uc.CancelOrderCommand(UserId(USER), OrderId(_order_of(url, done)))
        assert await cases.cancel_order()(cancel) is OrderState.DONE  # its job loaded, with no checkpoints
        with pytest.raises(NotFound):
            await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(USER), OrderId(names["quote_old"]), None))
    finally:
        await pool.close()


def _order_of(url: str, job_id: str) -> str:
    with psycopg.connect(url) as conn:
        return str(conn.execute("SELECT order_id FROM jobs WHERE job_id = %s", [job_id]).fetchone()[0])


async def test_the_ledger_audit_and_the_panel_still_work_after_pruning_everything(
    pg_server: LocalPostgres, database: str, pool: AsyncConnectionPool
) -> None:
    url = pg_server.url(database)
    names = await seed(url)
    everything = RetentionPolicy(*(timedelta(0),) * 5)
    assert (await PruneTables(PostgresTransientRows(pool), SystemClock(), everything, batch=None)()).total
    await _refusals_in_the_domains_words(url, names)

    audit = audit_ledger(url)
    assert audit.sound, [f.describe() for f in audit.findings]
    async with control_pool(url) as panel_pool:
        panel = PostgresControlReadModel(panel_pool)
        assert await panel.recent_orders(50)
        assert await panel.orders_in_progress(50)
        assert await panel.ledger(USER) is not None
        assert await panel.payments(10)
        since = SystemClock().now() - timedelta(days=90)
        assert await panel.copies_per_minute(since)  # the open jobs' and stored copy's checkpoints
        await panel.latency_per_minute(since)
        await panel.unreadable(10)
        await panel.leases(10)
        await panel.queue_depth()


def test_the_command_prints_per_table_and_a_dry_run_deletes_nothing(
    pg_server: LocalPostgres, database: str, pgbouncer: LocalPgBouncer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through PgBouncer in transaction mode, as an operator may run it."""
    import asyncio

    url, pooled = pg_server.url(database), pgbouncer.url(database)
    asyncio.run(seed(url))
    before = facts(url)
    expected = {t.value: len(keys) for t, keys in due(before, SystemClock().now()).items()}
    monkeypatch.setenv("VIDEOCOPIES_PRUNE_BATCH", "3")

    assert cli(["--database-url", pooled, "db", "prune", "--dry-run", "--json"]) == 0
    dry = capsys.readouterr().out.splitlines()
    assert json.loads(dry[-1]) == {**expected, "dry_run": True}
    assert f"inbox: would delete {expected['inbox']} rows" in dry
    assert facts(url) == before

    assert cli(["--database-url", pooled, "db", "prune", "--json"]) == 0
    done = capsys.readouterr().out.splitlines()
    assert json.loads(done[-1]) == {**expected, "dry_run": False}
    assert f"quotes: deleted {expected['quotes']} rows" in done
