"""Benchmark: 1,000 users press "confirm" at once, through the whole bot path.

The same four processes as bench/ingress.py (simulator, edge, core, PostgreSQL). First each
user sends /start, a short video and picks 5 copies, all through the bot, until every one
holds a quote. Then every user presses the confirm button in one burst; `seconds` runs
from the burst until the 1,000th order is confirmed in the database (coins reserved, job
queued), and `screens_s` until the 1,000th "Order accepted" screen reached the simulator.

Prints one JSON line.

    uv run python bench/confirm_via_bot.py [--users 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from _support import emit, fresh_database, server
from ingress import bot_stack, burst_of, first_replies, make_users

from videocopies.adapters.ffmpeg.clips import make_clip


def _confirmed(url: str) -> int:
    with psycopg.connect(url) as conn:
        (count,) = conn.execute("SELECT count(*) FROM orders WHERE state <> 'quoted'").fetchone()  # type: ignore[misc]
    return int(count)


async def run(sim_url: str, url: str, users: int, clip: bytes) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"{sim_url}/_sim", timeout=300) as sim:
        ids = await make_users(sim, users, 50_000)
        await burst_of(sim, [{"user_id": u, "text": "/start"} for u in ids])
        assert len(await first_replies(sim, ids, {}, 300, contains="coins")) == users

        gate = asyncio.Semaphore(50)

        async def upload(user_id: int) -> None:
            async with gate:
                params = {"width": 360, "height": 640, "duration": 2, "mime_type": "video/mp4"}
                (await sim.post(f"/users/{user_id}/videos", content=clip, params=params)).raise_for_status()

        await asyncio.gather(*(upload(u) for u in ids))
        choose = await first_replies(sim, ids, {}, 300, contains="How many copies")
        assert len(choose) == users, len(choose)
        await burst_of(sim, [{"user_id": u, "message_id": choose[u]["message"]["message_id"], "data": next(
            b["callback_data"] for row in choose[u]["message"]["reply_markup"]["inline_keyboard"] for b in row
            if b["callback_data"].split(":")[1] == "5")} for u in ids])
        seen = {u: choose[u]["seq"] for u in ids}
        quotes = await first_replies(sim, ids, seen, 300, contains="copies at 4 coins")
        assert len(quotes) == users, len(quotes)

        presses = []
        for u in ids:
            markup = quotes[u]["message"]["reply_markup"]["inline_keyboard"]
            presses.append({"user_id": u, "message_id": quotes[u]["message"]["message_id"],
                            "data": markup[0][0]["callback_data"]})
        began = time.time()
        await burst_of(sim, presses)
        seconds = None
        while time.time() - began < 300:
            if _confirmed(url) >= users:
                seconds = time.time() - began
                break
            await asyncio.sleep(0.05)
        accepted = await first_replies(sim, ids, {u: quotes[u]["seq"] for u in ids}, 300, contains="Order accepted")
        screens_s = max(entry["at"] for entry in accepted.values()) - began
    return {"orders": users, "seconds": round(seconds, 2) if seconds else None, "screens_s": round(screens_s, 2),
            "screens": len(accepted)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=1000)
    args = parser.parse_args()
    with server() as pg, tempfile.TemporaryDirectory() as scratch:
        url = fresh_database(pg, "confirm_via_bot")
        clip = make_clip(Path(scratch) / "clip.mp4", seconds=2).read_bytes()
        with bot_stack(url, Path(scratch), Path(scratch) / "objects") as stack:
            figures = asyncio.run(run(stack.sim_url, url, args.users, clip))
    emit({"bench": "confirm_via_bot", **figures})


if __name__ == "__main__":
    main()
