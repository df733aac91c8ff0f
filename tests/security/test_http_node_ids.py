"""10,000 requests with random node ids, to a core in its own process: the statements
PostgreSQL runs on the nodes table (counted by pg_stat_statements) stay at 10 or fewer,
where each unknown id used to cost a query of its own on core's small pool. A node issued
afterwards is still let in."""

from __future__ import annotations

import asyncio
import secrets
import time

import httpx
import psycopg

from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, issue_token, issue_token_async

REQUESTS = 10_000
CONNECTIONS = 16
CALLS = [("GET", "/v1/nodes/me"), ("POST", "/v1/jobs/claim"), ("POST", "/v1/inbox"), ("POST", "/v1/control/grants")]


def statements(url: str, about: str = "%") -> int:
    """Statements run in the database at `url` whose text mentions `about` (pg_stat_statements)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        (calls,) = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = current_database() AND s.query ILIKE %s AND s.query NOT ILIKE '%%pg_stat%%'",
            [f"%{about}%"],
        ).fetchone()  # type: ignore[misc]
    return int(calls)


async def _random_ids(port: int) -> list[int]:
    """REQUESTS calls, each with a token of a random node id, over kept-alive connections
    (plain sockets: an HTTP client's own cost would make this test slow, not core)."""
    statuses: list[int] = []

    async def connection(numbers: range) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for number in numbers:
            method, path = CALLS[number % len(CALLS)]
            token = f"{secrets.token_hex(8)}.{secrets.token_hex(32)}"
            body = b"{}" if method == "POST" else b""
            writer.write(
                f"{method} {path} HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line[15:]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:"))
            await reader.readexactly(length)
            statuses.append(int(head.split(b" ", 2)[1]))
            if b"connection: close" in head.lower():
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()

    share = REQUESTS // CONNECTIONS
    await asyncio.gather(*(connection(range(n * share, (n + 1) * share)) for n in range(CONNECTIONS)))
    return statuses


def _let_in(core_url: str, token: str, within_s: float = 2.0) -> httpx.Response:
    """The node's first answer that is not a 401, asking until `within_s`: the NOTIFY may still be
    on its way to core when the first call arrives (core waits for news it has, not for news
    still in flight). The flood spent core's reload for unknown ids, the next comes 10 s later:
    a node let in within 2 s was let in by the news."""
    deadline = time.monotonic() + within_s
    while True:
        answer = httpx.get(f"{core_url}/v1/nodes/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        if answer.status_code != 401 or time.monotonic() >= deadline:
            return answer
        time.sleep(0.05)


def settled(url: str, quiet_s: float = 1.0, timeout_s: float = 30) -> int:
    """The statement count once core's start-up duties (their leases and first sweeps, some 25
    statements just after it answers) are done: unchanged for `quiet_s`. On a busy machine they
    run late and would otherwise fall inside the measurement."""
    deadline, last = time.monotonic() + timeout_s, statements(url)
    while True:
        time.sleep(quiet_s)
        now = statements(url)
        if now == last:
            return now
        assert time.monotonic() < deadline, f"core still running statements {timeout_s} s after it answered"
        last = now


def test_random_node_ids_cost_at_most_ten_queries(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    issue_token(url, "worker-1")
    with CoreProcess(url) as core:
        before_all = settled(url)
        before = statements(url, "nodes")
        started = time.monotonic()
        statuses = asyncio.run(_random_ids(core.port))
        took = time.monotonic() - started
        spent, spent_all = statements(url, "nodes") - before, statements(url) - before_all

        late = asyncio.run(issue_token_async(url, "worker-late"))  # its NOTIFY reloads core at once
        me = _let_in(core.url, late)

    print(f"{REQUESTS} random node ids in {took:.1f} s: {spent} statements on nodes, {spent_all} in all")
    assert statuses == [401] * REQUESTS
    assert spent <= 10, f"{spent} statements on the nodes table for {REQUESTS} random node ids"
    assert spent_all <= 10, f"{spent_all} statements in all (sweeps included) for {REQUESTS} random node ids"
    assert me.status_code == 200 and me.json()["name"] == "worker-late"
