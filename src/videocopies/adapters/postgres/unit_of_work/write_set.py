"""The write set: every change of a unit of work, in the order the database must apply it, sent
as one call of videocopies_apply (migration 0009, SQL in sql/transaction.sql) together with
the COMMIT; and the opening read as one call of videocopies_load. Both travel as JSON in an SQL
literal, so they pass through PgBouncer as simple queries."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg.types.json import Jsonb

from videocopies.adapters.postgres.queries import around, sql

Writes = list[tuple[str, Any]]
Params = Mapping[str, Any] | Sequence[Any]


class Transaction(Protocol):
    """What a repository needs of its unit of work: reads inside the transaction, and the two
    lists of record inserts its commit sends after the aggregates' own writes."""

    pending: Writes  # plain inserts, in any order
    late: Writes  # inserts that reference aggregates written at the same commit

    async def fetchone(self, query: str, params: dict[str, Any]) -> dict[str, Any] | None: ...
    async def fetchall(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...
    async def locked_fetchone(self, query: str, params: dict[str, Any]) -> dict[str, Any] | None: ...
    async def read(self, reads: dict[str, Any]) -> dict[str, Any]: ...


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Jsonb):
        return value.obj
    raise TypeError(f"cannot send {type(value).__name__} to videocopies_apply")


_encode = json.JSONEncoder(default=_json_default, separators=(",", ":")).encode


def _literal(conn: psycopg.AsyncConnection[Any], value: object) -> bytes:
    """`value` as JSON in an SQL string literal, quoted by libpq for this connection."""
    return psycopg.pq.Escaping(conn.pgconn).escape_literal(_encode(value).encode())


def apply_statement(conn: psycopg.AsyncConnection[Any], writes: Writes) -> bytes:
    """The whole write set as one call of videocopies_apply (migration 0009) with its COMMIT:
    one simple query, so it goes through PgBouncer, and the server runs statements whose plans
    it keeps per session instead of parsing and planning each write. A fenced job write that
    matches no row, or a capacity slot that cannot be taken, aborts it from inside."""
    head, tail = around("apply_writes", "writes")
    return head + _literal(conn, _coalesced(writes)) + tail


def bound(conn: psycopg.AsyncConnection[Any], statements: Sequence[tuple[str, Params]]) -> bytes:
    """Named statements with their parameters bound here, to travel in one simple query."""
    if not statements:
        return b""
    cursor = psycopg.AsyncClientCursor(conn)
    return b"".join(cursor.mogrify(sql(name), params).encode() + b";\n" for name, params in statements)


def apply_joined_statement(conn: psycopg.AsyncConnection[Any], writes: Writes) -> bytes:
    """A joined block's writes, inside the open transaction and behind a savepoint: the
    transaction commits later, with the block it joined."""
    head, tail = around("apply_writes_joined", "writes")
    return head + _literal(conn, _coalesced(writes)) + tail


_IN_BULK = {"insert_account": "insert_accounts", "insert_lot": "insert_lots"}  # migration 0016


def _coalesced(writes: Writes) -> list[tuple[str, Any]]:
    """Consecutive inserts of accounts, or of lots, as one write of many rows: the server
    inserts them in one statement instead of one statement per row. Order is kept."""
    out: list[tuple[str, Any]] = []
    for name, params in writes:
        bulk = _IN_BULK.get(name)
        if bulk is None:
            out.append((name, params))
        elif out and out[-1][0] == bulk:
            out[-1][1].append(params)
        else:
            out.append((bulk, [params]))
    return out


def load_statement(conn: psycopg.AsyncConnection[Any], reads: dict[str, Any]) -> bytes:
    """The opening read as one call of videocopies_load (migration 0022): a literal the server
    parses in a moment, while it keeps the plans of the locking reads inside per session."""
    head, tail = around("load_reads", "reads")
    return head + _literal(conn, reads) + tail


@functools.cache
def begin_statement() -> bytes:
    return sql("begin").encode()


@functools.cache
def opening() -> bytes:
    return begin_statement() + b";"


@functools.cache
def relaxed() -> bytes:
    return sql("commit_without_flush").encode() + b";"
