"""Benchmark: what one order writes to PostgreSQL over its whole life, through the bot.

Every role a process of its own, as in bench/confirm_via_bot.py: the Bot API simulator, edge,
core on a private PostgreSQL, and here `--workers` workers too. Each of `--users` users sends
/start and a short video (2 s, 360x640), picks 5 copies and confirms (the conversation); then
the workers render the copies, edge sends them, and the order closes (the job). For each
phase, the database's row writes (inserted + updated + deleted tuples, pg_stat_database), its
committed transactions (read-only ones too), the WAL it wrote (pg_stat_wal, the whole
cluster), and the CPU of core, edge and PostgreSQL (from /proc), each per order. Prints one
JSON line.

    uv run python bench/pg_writes.py [--users 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
from _support import UNPACED_EDGE, cpu_seconds, emit, fresh_database, postgres_cpu_seconds, server, simulator_process
from ingress import BOT_TOKEN, _until_polling, burst_of, first_replies, make_users

from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, worker_process

STATS = """SELECT tup_inserted + tup_updated + tup_deleted, xact_commit,
                  (SELECT wal_bytes FROM pg_stat_wal)::bigint, pg_database_size(current_database()),
                  (SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox)
           FROM pg_stat_database WHERE datname = current_database()"""


def _counters(url: str, pids: dict[str, int]) -> tuple[float, ...]:
    """Rows written, transactions, WAL bytes, the database's size, inbox and outbox rows; then
    CPU seconds of core, edge and PostgreSQL."""
    time.sleep(1.5)  # backends flush their statistics at most once a second
    with psycopg.connect(url) as conn:
        figures = conn.execute(STATS).fetchone()
    assert figures is not None
    cpu = (cpu_seconds(pids["core"]), cpu_seconds(pids["edge"]), postgres_cpu_seconds(pids["postgres"]))
    return (*(int(f) for f in figures), *cpu)


def _per_order(before: tuple[float, ...], after: tuple[float, ...], orders: int) -> dict[str, float]:
    written, commits, wal, size, inbox, outbox, core, edge, postgres = (
        b - a for a, b in zip(before, after, strict=True))
    return {"rows_written": round(written / orders, 1), "transactions": round(commits / orders, 1),
            "wal_kib": round(wal / orders / 1024, 1), "database_kib": round(size / orders / 1024, 1),
            "inbox_rows": round(inbox / orders, 1), "outbox_rows": round(outbox / orders, 1),
            "core_cpu_ms": round(core / orders * 1000, 1),
            "edge_cpu_ms": round(edge / orders * 1000, 1), "postgres_cpu_ms": round(postgres / orders * 1000, 1)}


@contextlib.contextmanager
def stack(url: str, scratch: Path) -> Iterator[tuple[str, str, dict[str, int], list[Any]]]:
    """Simulator, core, edge and (started later by the caller) workers sharing core's store."""
    store = scratch / "objects"
    core = CoreProcess(url, quote_secret="bench" * 7, VIDEOCOPIES_DATABASE_DIRECT="1",
                       VIDEOCOPIES_STORE_DIR=str(store))
    with simulator_process(scratch, BOT_TOKEN) as sim, core:
        edge = edge_process(core.url, issue_token(url, "edge-bench", "edge"), BOT_TOKEN, sim.url, scratch / "edge",
                            store, **UNPACED_EDGE)
        started: list[Any] = []
        try:
            _until_polling(sim.url, edge)
            assert core.process is not None
            yield sim.url, core.url, {"core": core.process.pid, "edge": edge.pid}, started
        finally:
            for process in [edge, *started]:
                process.send_signal(signal.SIGTERM)
            for process in [edge, *started]:
                process.communicate(timeout=60)


def _press(message: dict[str, Any], starts: str) -> dict[str, Any]:
    """The press of the button whose data starts with `starts`, under `message`."""
    buttons = [b for row in message["message"]["reply_markup"]["inline_keyboard"] for b in row]
    data = next(b["callback_data"] for b in buttons if b["callback_data"].startswith(starts))
    return {"message_id": message["message"]["message_id"], "data": data}


async def conversation(sim_url: str, users: int, clip: bytes) -> None:
    """Each user: /start, a video, 5 copies, confirm; until every order is accepted."""
    async with httpx.AsyncClient(base_url=f"{sim_url}/_sim", timeout=300) as sim:
        ids = await make_users(sim, users, 50_000)
        await burst_of(sim, [{"user_id": u, "text": "/start"} for u in ids])
        assert len(await first_replies(sim, ids, {}, 300, contains="coins")) == users
        params = {"width": 360, "height": 640, "duration": 2, "mime_type": "video/mp4"}
        for u in ids:
            (await sim.post(f"/users/{u}/videos", content=clip, params=params)).raise_for_status()
        choose = await first_replies(sim, ids, {}, 300, contains="How many copies")
        await burst_of(sim, [{"user_id": u, **_press(choose[u], "n:5")} for u in ids])
        quotes = await first_replies(sim, ids, {u: choose[u]["seq"] for u in ids}, 300, contains="copies at")
        assert len(quotes) == users, len(quotes)
        await burst_of(sim, [{"user_id": u, **_press(quotes[u], "")} for u in ids])  # the first button confirms
        accepted = await first_replies(sim, ids, {u: quotes[u]["seq"] for u in ids}, 300, contains="accepted")
        assert len(accepted) == users, len(accepted)


def _closed(url: str, orders: int) -> bool:
    with psycopg.connect(url) as conn:
        done, unsent = conn.execute(
            "SELECT (SELECT count(*) FROM orders WHERE state = 'done'),"
            " (SELECT count(*) FROM outbox WHERE sent_at IS NULL)"
        ).fetchone()  # type: ignore[misc]
    return int(done) >= orders and int(unsent) == 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    load = round(os.getloadavg()[0], 2)
    with server() as pg, tempfile.TemporaryDirectory(prefix="videocopies-bench-") as scratch:
        url = fresh_database(pg, "pg_writes")
        clip = make_clip(Path(scratch) / "clip.mp4", seconds=2).read_bytes()
        with stack(url, Path(scratch)) as (sim_url, core_url, pids, workers):
            assert pg.pid is not None
            pids["postgres"] = pg.pid
            began = _counters(url, pids)
            asyncio.run(conversation(sim_url, args.users, clip))
            confirmed = _counters(url, pids)
            for n in range(args.workers):
                workers.append(worker_process(core_url, issue_token(url, f"bench-{n}"), Path(scratch) / "work",
                                              Path(scratch) / "objects"))
            deadline = time.monotonic() + 900
            while not _closed(url, args.users):
                assert time.monotonic() < deadline, "the orders did not close"
                time.sleep(0.5)
            closed = _counters(url, pids)
    emit({"bench": "pg_writes", "orders": args.users, "copies_per_order": 5,
          "conversation": _per_order(began, confirmed, args.users), "job": _per_order(confirmed, closed, args.users),
          "per_order": _per_order(began, closed, args.users), "load_average": [load, round(os.getloadavg()[0], 2)]})


if __name__ == "__main__":
    main()
