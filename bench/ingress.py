"""Benchmark: a burst of users sending /start through the whole bot path.

Every role is a process of its own, as in production: the Bot API simulator (no rate
limits: this measures us, not Telegram's limits), edge (aiogram, long polling), core
(inbox, per-user processing, outbox) on a private PostgreSQL. `--users` simulated users
(default 10,000) each send /start at once; the figure for each is from the moment its
/start was accepted by the simulator until its welcome screen reached the simulator.

Prints one JSON line: `p50_ms`, `p95_ms`, `p99_ms`, `updates_per_s`.

    uv run python bench/ingress.py [--users 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
from _support import UNPACED_EDGE, cpu_seconds, emit, fresh_database, postgres_cpu_seconds, server, simulator_process

from videocopies.runtime.launch import CoreProcess, edge_process, issue_token

BOT_TOKEN = "123456:bench-ingress"


@attrs.frozen
class BotStack:
    sim_url: str
    pids: dict[str, int]  # simulator, core, edge

    def cpu(self, postmaster: int | None) -> dict[str, float]:
        """Each process's CPU seconds so far (and the database server's, given its pid)."""
        seconds = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        if postmaster is not None:
            seconds["postgres"] = postgres_cpu_seconds(postmaster)
        return seconds


@contextlib.contextmanager
def bot_stack(url: str, scratch: Path, store_dir: Path | None = None) -> Iterator[BotStack]:
    """The simulator, core and edge as processes over the database at `url`; yields their
    simulator's URL and pids, and stops all three afterwards."""
    # Core reaches PostgreSQL directly here, so it prepares its statements, as it is configured
    # for a direct connection (through PgBouncer in transaction mode it cannot).
    direct = CoreProcess(url, quote_secret="bench" * 7, VIDEOCOPIES_DATABASE_DIRECT="1")
    with simulator_process(scratch, BOT_TOKEN) as sim, direct as core:
        edge = edge_process(core.url, issue_token(url, "edge-bench", "edge"), BOT_TOKEN, sim.url,
                            scratch / "edge", store_dir, **UNPACED_EDGE)
        try:
            assert core.process is not None
            _until_polling(sim.url, edge)
            yield BotStack(sim.url, {"simulator": sim.pid, "core": core.process.pid, "edge": edge.pid})
        finally:
            edge.send_signal(signal.SIGTERM)
            edge.communicate(timeout=30)


def _until_polling(sim_url: str, edge: subprocess.Popen[bytes]) -> None:
    """Wait until edge has started and asks for updates: a burst sent earlier would time edge's
    start (seconds of imports) and count its CPU as the burst's."""
    deadline = time.monotonic() + 120
    while httpx.get(f"{sim_url}/_sim/stats").json()["polls"] < 1:
        assert edge.poll() is None, "edge exited"
        assert time.monotonic() < deadline, "edge did not start polling"
        time.sleep(0.1)


async def make_users(sim: httpx.AsyncClient, count: int, first_id: int) -> list[int]:
    ids = list(range(first_id, first_id + count))
    for chunk in range(0, count, 1000):
        users = [{"id": u, "first_name": f"U{u}", "language_code": "en"} for u in ids[chunk:chunk + 1000]]
        (await sim.post("/users/bulk", json={"bot_token": BOT_TOKEN, "users": users})).raise_for_status()
    return ids


async def burst_of(sim: httpx.AsyncClient, actions: list[dict[str, Any]]) -> dict[int, float]:
    """Every action in one request: a burst, not a trickle the driver paces."""
    answer = await sim.post("/burst", json={"actions": actions})
    answer.raise_for_status()
    return {a["user_id"]: a["at"] for a in answer.json()["accepted"]}


async def delivered(sim: httpx.AsyncClient) -> int:
    return int((await sim.get("/stats")).json()["delivered"])


async def first_replies(
    sim: httpx.AsyncClient, ids: list[int], after: dict[int, int], deadline_s: float, contains: str = "",
    expect_delivered: int | None = None,
) -> dict[int, dict[str, Any]]:
    """Each user's first message after `after[user]` (containing `contains`), polled in bulk.
    With `expect_delivered`, waits on the simulator's cheap counter until that many messages
    went out, so the measuring does not compete with the run for the CPU."""
    found: dict[int, dict[str, Any]] = {}
    end = time.monotonic() + deadline_s
    while expect_delivered is not None and time.monotonic() < end and await delivered(sim) < expect_delivered:
        await asyncio.sleep(0.1)
    while len(found) < len(ids) and time.monotonic() < end:
        if found or expect_delivered is None:
            await asyncio.sleep(0.5)
        missing = [u for u in ids if u not in found]
        for chunk in range(0, len(missing), 500):
            part = missing[chunk:chunk + 500]
            answer = (await sim.get("/received", params={"users": ",".join(map(str, part))})).json()
            for user_id in part:
                for entry in answer[str(user_id)]:
                    if entry["seq"] > after.get(user_id, 0) and contains in (entry["message"].get("text") or ""):
                        found[user_id] = entry
                        break
    return found


async def burst(stack: BotStack, postmaster: int | None, users: int, deadline_s: float) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"{stack.sim_url}/_sim", timeout=300) as sim:
        ids = await make_users(sim, users, 10_000)
        before = await delivered(sim)
        cpu_before = stack.cpu(postmaster)
        began = time.time()
        sent_at = await burst_of(sim, [{"user_id": u, "text": "/start"} for u in ids])
        sent_s = time.time() - began
        replies = await first_replies(sim, ids, {}, deadline_s, expect_delivered=before + len(ids))
        cpu_after = stack.cpu(postmaster)
    waits = {u: (entry["at"] - sent_at[u]) * 1000 for u, entry in replies.items()}
    last = max(entry["at"] for entry in replies.values()) if replies else time.time()
    samples = sorted(waits.values())
    cut = statistics.quantiles(samples, n=100) if len(samples) >= 100 else [max(samples or [0])] * 99
    return {
        "began": began, "users": users, "answered": len(samples), "burst_send_s": round(sent_s, 2),
        "p50_ms": round(statistics.median(samples), 1) if samples else None,
        "p95_ms": round(cut[94], 1), "p99_ms": round(cut[98], 1),
        "updates_per_s": round(len(samples) / (last - began), 1) if samples else 0.0,
        # CPU per update, by process: the figure that load on the machine does not move much.
        "cpu_ms_per_update": {
            name: round(1000 * (cpu_after[name] - cpu_before[name]) / users, 3) for name in cpu_after
        },
    }


def stages(url: str, began: float) -> dict[str, float]:
    """When the last update was stored in the inbox, handled, and its reply sent, counted
    from the burst: where a queue builds up."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM (SELECT max(received_at) FROM inbox)),"
            " extract(epoch FROM (SELECT max(processed_at) FROM inbox)),"
            " extract(epoch FROM (SELECT max(sent_at) FROM outbox))"
        ).fetchone()
    assert row is not None
    return {name: round(float(at) - began, 2) for name, at in zip(("stored", "handled", "sent"), row, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--deadline-s", type=float, default=600.0)
    args = parser.parse_args()
    with server() as pg, tempfile.TemporaryDirectory() as scratch:
        url = fresh_database(pg, "ingress")
        with bot_stack(url, Path(scratch)) as stack:
            figures = asyncio.run(burst(stack, pg.pid, args.users, args.deadline_s))
        figures["stages_s"] = stages(url, figures.pop("began"))
    emit({"bench": "ingress", **figures})


if __name__ == "__main__":
    main()
