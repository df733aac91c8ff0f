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
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _support import emit, fresh_database, server

from videocopies.adapters.postgres.cluster import free_port
from videocopies.roles.launch import CoreProcess, edge_process, issue_token

BOT_TOKEN = "123456:bench-ingress"


def simulator(port: int, files: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "videocopies.adapters.telegram.simulator", "--port", str(port), "--token", BOT_TOKEN,
         "--files-dir", str(files), "--chat-rate", "1000000", "--global-rate", "1000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


async def _many(calls: list[Any], at_once: int) -> list[Any]:
    gate = asyncio.Semaphore(at_once)

    async def one(call: Any) -> Any:
        async with gate:
            return await call()

    return await asyncio.gather(*(one(c) for c in calls))


async def burst(sim_url: str, users: int, deadline_s: float) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(base_url=f"{sim_url}/_sim", timeout=120, limits=limits) as sim:
        made = await _many([lambda n=n: sim.post("/users", json={"bot_token": BOT_TOKEN, "id": 10_000 + n,
                                                                  "first_name": f"U{n}", "language_code": "en"})
                            for n in range(users)], 100)
        ids = [r.json()["id"] for r in made]
        sent_at: dict[int, float] = {}

        async def start(user_id: int) -> None:
            await sim.post(f"/users/{user_id}/messages", json={"text": "/start"})
            sent_at[user_id] = time.time()  # accepted: the update exists

        began = time.time()
        await _many([lambda u=u: start(u) for u in ids], 100)
        sent_s = time.time() - began
        waits: dict[int, float] = {}
        end = time.monotonic() + deadline_s
        while len(waits) < len(ids) and time.monotonic() < end:
            await asyncio.sleep(1.0)
            missing = [u for u in ids if u not in waits]
            answers = await _many([lambda u=u: sim.get(f"/users/{u}/received") for u in missing], 100)
            for user_id, answer in zip(missing, answers, strict=True):
                entries = answer.json()
                if entries:
                    waits[user_id] = (entries[0]["at"] - sent_at[user_id]) * 1000
        last = max(sent_at[u] + waits[u] / 1000 for u in waits) if waits else time.time()
    samples = sorted(waits.values())
    cut = statistics.quantiles(samples, n=100) if len(samples) >= 100 else [max(samples or [0])] * 99
    return {
        "users": users, "answered": len(samples), "burst_send_s": round(sent_s, 2),
        "p50_ms": round(statistics.median(samples), 1) if samples else None,
        "p95_ms": round(cut[94], 1), "p99_ms": round(cut[98], 1),
        "updates_per_s": round(len(samples) / (last - began), 1) if samples else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--deadline-s", type=float, default=600.0)
    args = parser.parse_args()
    with server() as pg, tempfile.TemporaryDirectory() as scratch:
        url = fresh_database(pg, "ingress")
        port = free_port()
        sim = simulator(port, Path(scratch) / "telegram")
        sim_url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{sim_url}/_sim/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the simulator did not start"
                time.sleep(0.1)
            with CoreProcess(url, quote_secret="bench") as core:
                edge = edge_process(core.url, issue_token(url, "edge-bench", "edge"), BOT_TOKEN, sim_url,
                                    Path(scratch) / "edge")
                try:
                    figures = asyncio.run(burst(sim_url, args.users, args.deadline_s))
                finally:
                    edge.send_signal(signal.SIGTERM)
                    edge.communicate(timeout=30)
        finally:
            sim.send_signal(signal.SIGTERM)
            sim.communicate(timeout=30)
    emit({"bench": "ingress", **figures})


if __name__ == "__main__":
    main()
