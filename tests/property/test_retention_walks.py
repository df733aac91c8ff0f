"""The SQL walks against the domain's rule, on a real database: for any rows (times that tie,
rows never ended, rows still referred to), any retention and any batch size, a prune deletes
exactly the rows `RetentionPolicy.is_due` calls due, and a dry run counts the same."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.memory import ManualClock
from videocopies.adapters.postgres.retention import PostgresTransientRows
from videocopies.application.retention import PruneTables
from videocopies.domain.retention import PrunableRow, RetentionPolicy, Transient
from videocopies.embedded.postgres import LocalPostgres

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)
minutes = st.integers(min_value=0, max_value=6)  # a few values: times tie often
# Inbox events arrive in id order (their times never go back); each is processed some
# minutes later, or not yet.
events = st.lists(st.tuples(minutes, st.none() | minutes), max_size=14)
receipts = st.lists(st.tuples(minutes, st.sampled_from(["done", "failed", "queued", "leased", "gone"])), max_size=14)
quotes = st.lists(st.tuples(minutes, st.sampled_from(["quoted", "quoted", "slotted", "done"])), max_size=10)
retentions = st.sampled_from([timedelta(0), timedelta(minutes=5), timedelta(minutes=9)])


@pytest.fixture(scope="module")
def url(pg_server: LocalPostgres, pg_template: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    pg_server.create_database(name, template=pg_template)
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


def at(minute: int) -> datetime:
    return NOW - timedelta(minutes=10 - minute)


def _order(conn: psycopg.Connection, order_id: str, state: str, expires: datetime) -> None:
    conn.execute(
        "INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,"
        " quote_expires_at, quote_token, seed, state, copy_states, created_at, version)"
        " VALUES (%s, 1, 's', 1, 5, 5, 1, %s, 't', 1, %s, '[]', %s, 1)", [order_id, expires, state, expires],
    )


def load(url: str, inbox: list, given_receipts: list, given_quotes: list) -> dict[Transient, dict[str, PrunableRow]]:
    """Writes the rows and returns each one's facts, as the domain sees them."""
    facts: dict[Transient, dict[str, PrunableRow]] = {Transient.INBOX: {}, Transient.RECEIPTS: {},
                                                      Transient.QUOTES: {}}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE capacity_slots SET order_id = NULL WHERE order_id IS NOT NULL")
        conn.execute("TRUNCATE inbox, receipts, job_checkpoints, jobs, orders")
        arrival = 0
        for n, (step, delay) in enumerate(inbox):
            arrival = min(arrival + step, 6)
            processed = None if delay is None else at(arrival + delay)
            (row_id,) = conn.execute(
                "INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at)"
                " VALUES (%s, 1, 'text', '{}', %s, %s) RETURNING id", [n, at(arrival), processed],
            ).fetchone()
            facts[Transient.INBOX][str(row_id)] = PrunableRow("inbox", processed)
        for n, (minute, job_state) in enumerate(given_receipts):
            if job_state != "gone":
                _order(conn, f"oj{n}", "done", at(0))
                conn.execute("INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts,"
                             " cancel_requested, worker_id, owner_token, lease_until, created_at, version)"
                             " VALUES (%s, %s, %s, '[]', 3, 1, false, %s, %s, %s, %s, 1)",
                             [f"j{n}", f"oj{n}", job_state, *(["w", "t", NOW] if job_state == "leased" else [None] * 3),
                              at(0)])
            conn.execute("INSERT INTO receipts VALUES (%s, 'f', %s, %s)",
                         [f"r{n}", f'{{"job_id": "j{n}"}}', at(minute)])
            facts[Transient.RECEIPTS][f"r{n}"] = PrunableRow("receipts", at(minute), job_state in ("queued", "leased"))
        for n, (minute, kind) in enumerate(given_quotes):
            _order(conn, f"q{n}", "done" if kind == "done" else "quoted", at(minute))
            if kind == "slotted":
                conn.execute("UPDATE capacity_slots SET order_id = %s WHERE slot_id = %s", [f"q{n}", n + 1])
            if kind != "done":
                facts[Transient.QUOTES][f"q{n}"] = PrunableRow("quotes", at(minute), kind == "slotted")
    return facts


def left(url: str) -> dict[Transient, set[str]]:
    with psycopg.connect(url) as conn:
        return {
            Transient.INBOX: {str(i) for (i,) in conn.execute("SELECT id FROM inbox")},
            Transient.RECEIPTS: {r for (r,) in conn.execute("SELECT receipt_id FROM receipts")},
            Transient.QUOTES: {o for (o,) in conn.execute("SELECT order_id FROM orders WHERE state = 'quoted'")},
        }


async def prune(url: str, policy: RetentionPolicy, batch: int, dry_run: bool) -> dict[Transient, int]:
    async with AsyncConnectionPool(url, min_size=1, max_size=1, open=False) as pool:
        pruned = await PruneTables(PostgresTransientRows(pool), ManualClock(NOW), policy, batch)(dry_run)
    return pruned.rows


@settings(max_examples=40, deadline=None)
@given(events, receipts, quotes, retentions, st.integers(min_value=1, max_value=4))
def test_a_prune_deletes_exactly_what_the_rule_calls_due(
    url: str, inbox: list, given_receipts: list, given_quotes: list, retention: timedelta, batch: int
) -> None:
    facts = load(url, inbox, given_receipts, given_quotes)
    policy = RetentionPolicy(*(retention,) * 5)
    due = {t: {k for k, row in rows.items() if policy.is_due(row, NOW)} for t, rows in facts.items()}

    dry = asyncio.run(prune(url, policy, batch, dry_run=True))
    pruned = asyncio.run(prune(url, policy, batch, dry_run=False))

    assert {t: dry[t] for t in due} == {t: pruned[t] for t in due} == {t: len(keys) for t, keys in due.items()}
    assert left(url) == {t: set(rows) - due[t] for t, rows in facts.items()}
