"""Benchmark: the bot under Telegram's limits, on the simulator's strict default profile.

Every role is a process of its own, as in bench/ingress.py: the Bot API simulator on its
strict default profile (cloud mode: 20 MB downloads, ~30 messages/s per bot and ~1/s per
chat with 429 windows, 1 % of calls answered 502 and 1 % late), core, edge with its default
pacing, on a durable PostgreSQL (fsync, synchronous_commit and full_page_writes on). Instead
of FFmpeg workers a quick renderer, a worker node of this bench, claims jobs through the real
Job API and checkpoints each copy with one small pre-made MP4, then completes: rendering is
not what this bench measures (bench/worker_throughput.py does), delivery is.

The scenario:
1. 100 users each order 10 copies (/start, a small video, "10", confirm): a 1,000-copy
   delivery backlog builds, which Telegram's ~30 messages/s takes about 35 s to deliver;
2. while it is delivered, 60 new users send /start at once: each one's welcome latency runs
   from the simulator accepting the /start to the welcome reaching it;
3. 20 of them order 5 copies each (video, "5", confirm): the 20 orders;
4. 3 users of the backlog block the bot while their copies are coming;
5. meanwhile 5 users keep sending ~19 MB videos (under the 20 MB cloud cap), one after the
   other: callback answer latency runs from the simulator accepting a press to edge's
   answerCallbackQuery reaching it, for the 20 orders' presses made while those downloads run.

Prints one JSON line with the simulator's counters (flood_violations: sends inside an open
429 window; sends_after_blocked: sends to a chat after its 403 "blocked", the first one not
counted), the latencies and whether each target was met.

    uv run --frozen python bench/telegram_limits.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
from _support import cpu_seconds, emit, fresh_database, postgres_cpu_seconds, server, simulator_process

BOT_TOKEN = "123457:bench-telegram-limits"
TARGETS: dict[str, float] = {
    "flood_violations": 0, "sends_after_blocked": 1, "welcome_p95_s": 2, "callback_answer_p95_ms": 200,
}
BACKLOG_USERS, BACKLOG_COPIES = 100, 10
NEWCOMERS, ORDERING, ORDER_COPIES = 60, 20, 5
BLOCKING, BIG_SENDERS = 3, 5
BIG_VIDEO_BYTES = 19 * 1024 * 1024  # under the cloud Bot API's 20 MiB download cap
BIG_VIDEOS_EACH = 12  # at most; each big sender stops once the 20 orders are placed
CLIP = {"width": 360, "height": 640, "duration": 2, "mime_type": "video/mp4"}


# -- media, made once with FFmpeg -------------------------------------------------------------


@attrs.frozen
class Media:
    clip: bytes  # what users send: a 2-second 360x640 MP4
    copy: Path  # what the quick renderer stores as every copy
    big: bytes  # a ~19 MB MP4: the clip, then a `free` box of padding every demuxer skips


def make_media(cache: Path) -> Media:
    from videocopies.adapters.ffmpeg.clips import make_clip

    cache.mkdir(parents=True, exist_ok=True)
    clip = cache / "clip.mp4"
    if not clip.exists():
        make_clip(clip, seconds=2)
    copy = cache / "copy.mp4"
    if not copy.exists():
        make_clip(copy, seconds=6)
    big = cache / "big.mp4"
    if not big.exists():
        head = clip.read_bytes()
        pad = BIG_VIDEO_BYTES - len(head)
        big.write_bytes(head + pad.to_bytes(4, "big") + b"free" + bytes(pad - 8))
    return Media(clip.read_bytes(), copy, big.read_bytes())


def big_variant(big: bytes, n: int) -> bytes:
    """The big video with a counter in its padding: Telegram gives every different file its own
    file_unique_id, so edge fetches each one (it fetches a file a user sent before only once)."""
    at = len(big) - 16
    return big[:at] + n.to_bytes(16, "big")


# -- the quick renderer: a worker node that renders nothing -----------------------------------


async def quick_renderer(core_url: str, token: str, store: Path, copy: Path, loops: int = 2) -> None:
    """Claim jobs through the Job API; store the pre-made copy as each of a job's copies and
    checkpoint it, then complete the job (the protocol of application/worker.py, without FFmpeg)."""
    from videocopies.adapters.http.client import CoreClient, identify
    from videocopies.adapters.http.job_leases import HttpJobLeases
    from videocopies.adapters.inprocess import StoreJobFiles
    from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
    from videocopies.domain.jobs import CopyArtifact
    from videocopies.domain.shared import WorkerId

    core = CoreClient(core_url, token)
    me = await identify(core, "worker")
    leases, files = HttpJobLeases(core, wait_s=5.0), StoreJobFiles(FilesystemObjectStore(store))
    # The copy's facts as the worker's probe would report them (make_media's 6-second clip).
    facts = {"duration_s": 6.0, "width": 360, "height": 640}

    async def claims() -> None:
        while True:
            try:
                jobs = await leases.claim(WorkerId(me["name"]), 5)
            except Exception as error:  # noqa: BLE001 - core busy or away: claim again shortly
                print(f"quick renderer: claim failed: {error!r}", file=sys.stderr, flush=True)
                await asyncio.sleep(1.0)
                continue
            for job in jobs:
                try:
                    for index, _plan in job.remaining:
                        key, size, sha256 = await files.store_copy(job, index, copy)
                        await leases.checkpoint(job.job_id, job.token, index, CopyArtifact(key, size, sha256, **facts))
                    await leases.complete(job.job_id, job.token, str(uuid.uuid4()))
                except Exception as error:  # noqa: BLE001 - a lost lease, core away: core offers the job again
                    print(f"quick renderer: job {job.job_id}: {error!r}", file=sys.stderr, flush=True)

    await asyncio.gather(*(claims() for _ in range(loops)))


# -- the stack ----------------------------------------------------------------------------


@attrs.frozen
class Stack:
    sim_url: str
    core_url: str
    pids: dict[str, int]  # simulator, core, edge, renderer
    logs: Path

    def cpu(self, postmaster: int) -> dict[str, float]:
        seconds = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        seconds["postgres"] = postgres_cpu_seconds(postmaster)
        return seconds


def _drain(stream: Any, path: Path) -> threading.Thread:
    """Copy a child's stderr to a file as it comes: a full pipe would stop the child."""

    def copy() -> None:
        with path.open("ab") as out:
            for line in stream:
                out.write(line)
                out.flush()

    reader = threading.Thread(target=copy, daemon=True)
    reader.start()
    return reader


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def bot_stack(url: str, scratch: Path, copy: Path) -> Iterator[Stack]:
    from videocopies.runtime.launch import CoreProcess, edge_process, issue_token

    logs, store = scratch / "logs", scratch / "objects"
    logs.mkdir()
    direct = CoreProcess(url, quote_secret="bench" * 7, log_path=logs / "core.log", VIDEOCOPIES_DATABASE_DIRECT="1")
    with simulator_process(scratch, BOT_TOKEN, strict=True) as sim, direct as core:
        edge = edge_process(core.url, issue_token(url, "edge-bench", "edge"), BOT_TOKEN, sim.url,
                            scratch / "edge", store)
        readers = [_drain(edge.stderr, logs / "edge.log")]
        renderer = subprocess.Popen(
            [sys.executable, __file__, "render", core.url, issue_token(url, "quick-renderer", "worker"),
             str(store), str(copy)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        readers.append(_drain(renderer.stderr, logs / "renderer.log"))
        try:
            assert core.process is not None
            _until_polling(sim.url, edge)
            yield Stack(sim.url, core.url, {"simulator": sim.pid, "core": core.process.pid, "edge": edge.pid,
                                            "renderer": renderer.pid}, logs)
        finally:
            for process in (renderer, edge):
                _stop(process)
            for reader in readers:
                reader.join(timeout=5)


def _until_polling(sim_url: str, edge: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while httpx.get(f"{sim_url}/_sim/stats").json()["polls"] < 1:
        assert edge.poll() is None, "edge exited"
        assert time.monotonic() < deadline, "edge did not start polling"
        time.sleep(0.1)


# -- what users do --------------------------------------------------------------------------


class Users:
    """Simulated users driven over the simulator's /_sim endpoints."""

    def __init__(self, sim: httpx.AsyncClient) -> None:
        self.sim = sim
        self.presses: list[tuple[int, str]] = []  # (user, callback query id) of every press made

    async def make(self, ids: list[int]) -> None:
        users = [{"id": u, "first_name": f"U{u}", "language_code": "en"} for u in ids]
        (await self.sim.post("/users/bulk", json={"bot_token": BOT_TOKEN, "users": users})).raise_for_status()

    async def start_burst(self, ids: list[int]) -> dict[int, float]:
        """/start from every user in one request; when the simulator accepted each."""
        answer = await self.sim.post("/burst", json={"actions": [{"user_id": u, "text": "/start"} for u in ids]})
        answer.raise_for_status()
        return {a["user_id"]: a["at"] for a in answer.json()["accepted"]}

    async def next(self, user: int, contains: str, after: int, timeout: float = 180.0) -> dict[str, Any]:
        """The user's first message after seq `after` whose text holds `contains`."""
        params = {"contains": contains, "after": after, "timeout": timeout}
        answer = await self.sim.get(f"/users/{user}/received/next", params=params, timeout=timeout + 30)
        if answer.status_code == 408:
            raise TimeoutError(f"user {user} got no {contains!r} within {timeout} s")
        answer.raise_for_status()
        return dict(answer.json())

    async def send_video(self, user: int, data: bytes) -> float:
        """When the simulator had the video (it takes the upload first, as Telegram does)."""
        params = CLIP | {"file_name": "video.mp4"}
        (await self.sim.post(f"/users/{user}/videos", content=data, params=params)).raise_for_status()
        return time.time()

    async def press(self, user: int, message: dict[str, Any], data: str) -> None:
        answer = await self.sim.post(f"/users/{user}/presses",
                                     json={"message_id": message["message_id"], "data": data})
        answer.raise_for_status()
        self.presses.append((user, answer.json()["callback_query_id"]))

    async def order(self, user: int, copies: int, clip: bytes, after: int) -> None:
        """Send the video, pick `copies`, confirm, and wait for the order to be accepted."""
        await self.send_video(user, clip)
        choose = await self.next(user, "How many copies", after)
        await self.press(user, choose["message"], next(
            b["callback_data"] for row in choose["message"]["reply_markup"]["inline_keyboard"] for b in row
            if b["callback_data"].split(":")[1] == str(copies)))  # n:<copies>:<the video>
        quote = await self.next(user, f"{copies} copies at", choose["seq"])
        confirm = quote["message"]["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        await self.press(user, quote["message"], confirm)
        await self.next(user, "Order accepted", quote["seq"])

    async def received(self, ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        found: dict[int, list[dict[str, Any]]] = {}
        for chunk in range(0, len(ids), 200):
            part = ids[chunk:chunk + 200]
            answer = (await self.sim.get("/received", params={"users": ",".join(map(str, part))})).json()
            found.update({u: answer[str(u)] for u in part})
        return found

    async def stats(self) -> dict[str, Any]:
        return dict((await self.sim.get("/stats")).json())


def is_copy(entry: dict[str, Any]) -> bool:
    message = entry["message"]
    return ("video" in message or "document" in message) and (message.get("caption") or "").startswith("Copy ")


# -- the scenario ---------------------------------------------------------------------------


def _db(url: str, sql: str) -> Any:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchone()


def _unsent_copies(url: str) -> int:
    return int(_db(url, "SELECT count(*) FROM outbox WHERE sent_at IS NULL AND kind = 'copy_ready'")[0])


async def _until(check: Any, timeout: float, every: float = 0.2) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if await asyncio.to_thread(check):
            return True
        await asyncio.sleep(every)
    return False


async def _big_sender(users: Users, user: int, big: bytes, first: int, after: int, stop: asyncio.Event) -> None:
    """Send big videos one after the other, each once the bot has answered the one before
    (with the choice of copies, or a refusal), until `stop`."""
    for n in range(first, first + BIG_VIDEOS_EACH):
        if stop.is_set():
            return
        await users.send_video(user, big_variant(big, n))
        after = (await users.next(user, "", after))["seq"]  # whatever the bot says to it next


def _download_windows(url: str, users: list[int]) -> list[tuple[float, float]]:
    """When each of these users' videos was being fetched: from its event being stored in core's
    inbox (as fetching) to core handling it (edge had downloaded, probed and stored the file)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT extract(epoch FROM received_at), extract(epoch FROM processed_at) FROM inbox"
            " WHERE kind = 'video' AND user_id = ANY(%s) AND processed_at IS NOT NULL ORDER BY id", [users],
        ).fetchall()
    return [(float(start), float(end)) for start, end in rows]


def _percentile(samples: list[float], q: int) -> float | None:
    if not samples:
        return None
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


async def scenario(stack: Stack, url: str, media: Media, postmaster: int) -> dict[str, Any]:
    backlog = list(range(200_001, 200_001 + BACKLOG_USERS))
    newcomers = list(range(300_001, 300_001 + NEWCOMERS))
    ordering, big_senders = newcomers[:ORDERING], newcomers[ORDERING:ORDERING + BIG_SENDERS]
    figures: dict[str, Any] = {}
    cpu_start = stack.cpu(postmaster)
    async with httpx.AsyncClient(base_url=f"{stack.sim_url}/_sim", timeout=300) as sim:
        users = Users(sim)
        await users.make(backlog + newcomers)

        # (1) The backlog: 100 users order 10 copies each.
        began = time.time()
        await users.start_burst(backlog)
        welcomes = await asyncio.gather(*(users.next(u, "coins", 0) for u in backlog))
        gate = asyncio.Semaphore(25)

        async def backlog_order(user: int, welcome: dict[str, Any]) -> None:
            async with gate:
                await users.order(user, BACKLOG_COPIES, media.clip, welcome["seq"])

        await asyncio.gather(*(backlog_order(u, w) for u, w in zip(backlog, welcomes, strict=True)))
        figures["backlog_ordered_s"] = round(time.time() - began, 1)
        # The renderer is far faster than Telegram's 30 messages/s: wait until it has made every
        # copy, so the burst meets the whole backlog.
        made = await _until(lambda: _db(url, "SELECT count(*) FROM outbox WHERE kind = 'copy_ready'")[0]
                            >= BACKLOG_USERS * BACKLOG_COPIES, 120)
        assert made, "the quick renderer did not make the backlog's copies"
        figures["backlog_at_burst"] = _unsent_copies(url)

        # (2) 60 newcomers arrive at once; (4) 3 backlog users block the bot meanwhile.
        burst_at = time.time()
        cpu_burst = stack.cpu(postmaster)
        accepted = await users.start_burst(newcomers)
        blocking = asyncio.ensure_future(_block_some(users, backlog))
        welcomed = await asyncio.gather(*(users.next(u, "coins", 0, timeout=120) for u in newcomers))
        welcome_s = sorted(w["at"] - accepted[u] for u, w in zip(newcomers, welcomed, strict=True))
        cpu_welcomed = stack.cpu(postmaster)
        figures["blocked"] = await blocking

        # (3) 20 of them order 5 copies, (5) while 5 others keep sending ~19 MB videos.
        presses_before = len(users.presses)
        placed = asyncio.Event()
        senders = [asyncio.ensure_future(_big_sender(users, u, media.big, 1000 * i, w["seq"], placed))
                   for i, (u, w) in enumerate(zip(big_senders, welcomed[ORDERING:], strict=False))]
        await asyncio.sleep(0.5)  # the first big downloads are under way
        await asyncio.gather(*(users.order(u, ORDER_COPIES, media.clip, w["seq"])
                               for u, w in zip(ordering, welcomed[:ORDERING], strict=True)))
        placed.set()
        await asyncio.gather(*senders)
        ordered = users.presses[presses_before:]

        # Everything delivered (or given up), every order settled.
        settled = await _until(
            lambda: _db(url, "SELECT count(*) FROM outbox WHERE sent_at IS NULL")[0] == 0
            and _db(url, "SELECT count(*) FROM orders WHERE state NOT IN ('done', 'cancelled', 'failed')")[0] == 0,
            300, every=1.0,
        )
        figures["settled_s"] = round(time.time() - burst_at, 1) if settled else None
        cpu_end = stack.cpu(postmaster)
        stats = await users.stats()
        timings = await _callback_timings(sim)
        received = await users.received(backlog + newcomers)
    edge_figures = _edge_figures(stack.core_url)
    windows = _download_windows(url, big_senders)

    during = [(t["answered_at"] - t["pressed_at"]) * 1000 for user, query in ordered
              if (t := timings.get(query)) is not None and t["answered_at"] is not None
              and any(start <= t["pressed_at"] <= end for start, end in windows)]
    backlog_set = set(backlog)
    backlog_presses = [(t["answered_at"] - t["pressed_at"]) * 1000 for t in timings.values()
                       if t["answered_at"] is not None and t["user_id"] in backlog_set]
    unanswered = sum(1 for _, query in ordered if (t := timings.get(query)) is None or t["answered_at"] is None)
    delivered = sum(1 for entries in received.values() for e in entries if is_copy(e))
    orders = _db(url, "SELECT count(*) FROM orders WHERE state <> 'quoted'")[0]
    return {
        "users": len(backlog) + len(newcomers),
        "orders": int(orders),
        "copies_delivered": delivered,
        "flood_violations": stats.get("flood_violations"),
        "refused_429": stats.get("refused_429"),
        "sends_after_blocked": stats.get("sends_after_blocked"),
        "welcome_p50_s": _round(_percentile(welcome_s, 50), 2),
        "welcome_p95_s": _round(_percentile(welcome_s, 95), 2),
        "welcome_max_s": _round(max(welcome_s), 2),
        "callback_answer_p50_ms": _round(_percentile(during, 50), 1),
        "callback_answer_p95_ms": _round(_percentile(during, 95), 1),
        "faults": stats.get("faults"),
        "details": {
            **figures,
            "presses_during_downloads": len(during), "presses_of_20_orders": len(ordered),
            "presses_unanswered": unanswered, "big_videos": len(windows),
            "download_window_s": [round(end - start, 2) for start, end in windows],
            "callback_answer_backlog_p50_ms": _round(_percentile(backlog_presses, 50), 1),
            "callback_answer_backlog_p95_ms": _round(_percentile(backlog_presses, 95), 1),
            "callback_backlog_stored_p95_ms": _round(_percentile(_press_to_inbox(url, timings, backlog_set), 95), 1),
            "slow_presses": _slow_presses(timings, _failed_polls(stack.logs / "edge.log")),
            "while_welcoming": _sent_between(received, min(accepted.values()), min(w["at"] for w in welcomed),
                                             max(w["at"] for w in welcomed)),
            "welcome_stages_s": _welcome_stages(url, accepted, {u: w["at"] for u, w in zip(newcomers, welcomed,
                                                                                         strict=True)}),
            "slow_answers": stats.get("slow_answers"), "sent_by_kind": stats.get("sent_by_kind"),
            "edge": edge_figures,
            "cpu_s_welcome_burst": _cpu_delta(cpu_burst, cpu_welcomed),
            "cpu_s_run": _cpu_delta(cpu_start, cpu_end),
        },
    }


def _welcome_stages(url: str, accepted: dict[int, float], arrived: dict[int, float]) -> dict[str, Any]:
    """Where each newcomer's welcome spent its time, from the simulator accepting the /start:
    stored in core's inbox (edge received it), handled by core (the welcome is in the outbox),
    and arrived at the simulator (edge claimed, paced and sent it). p50 and p95 of each, seconds."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT i.user_id, extract(epoch FROM min(i.received_at)), extract(epoch FROM min(i.processed_at))"
            " FROM inbox i WHERE i.user_id = ANY(%s) GROUP BY i.user_id", [list(accepted)],
        ).fetchall()
    stages: dict[str, list[float]] = {"stored": [], "handled": [], "arrived": []}
    for user, stored, handled in rows:
        stages["stored"].append(float(stored) - accepted[user])
        stages["handled"].append(float(handled) - accepted[user])
    stages["arrived"] = [arrived[u] - accepted[u] for u in accepted]
    return {name: [_round(_percentile(sorted(v), 50), 2), _round(_percentile(sorted(v), 95), 2)]
            for name, v in stages.items()}


def _press_to_inbox(url: str, timings: dict[str, dict[str, Any]], users: set[int]) -> list[float]:
    """For these users' presses: ms from the press to its event being stored in core's inbox
    (edge had it from getUpdates by then). A user's presses and button events pair up in order."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT user_id, extract(epoch FROM received_at) FROM inbox WHERE kind = 'button' AND user_id = ANY(%s)"
            " ORDER BY id", [list(users)],
        ).fetchall()
    stored: dict[int, list[float]] = {}
    for user, at in rows:
        stored.setdefault(user, []).append(float(at))
    pressed: dict[int, list[float]] = {}
    for t in sorted(timings.values(), key=lambda t: t["pressed_at"]):
        if t["user_id"] in users:
            pressed.setdefault(t["user_id"], []).append(t["pressed_at"])
    return sorted((at - press) * 1000 for user, presses in pressed.items()
                  for press, at in zip(presses, stored.get(user, []), strict=False))


def _failed_polls(log: Path) -> list[float]:
    """When edge's getUpdates failed (a 502 from the simulator), from its log."""
    failed = []
    for line in log.read_text(errors="replace").splitlines():
        if "getUpdates failed" in line:
            with contextlib.suppress(ValueError):
                failed.append(datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return failed


def _slow_presses(timings: dict[str, dict[str, Any]], failed_polls: list[float]) -> dict[str, int]:
    """Presses answered after more than 200 ms, and how many of them were pressed while edge's
    getUpdates failed or waited to be tried again (from 0.5 s before a failure to 1.5 s after)."""
    slow = [t for t in timings.values()
            if t["answered_at"] is not None and t["answered_at"] - t["pressed_at"] > 0.2]
    behind = sum(1 for t in slow if any(at - 0.5 <= t["pressed_at"] <= at + 1.5 for at in failed_polls))
    return {"over_200ms": len(slow), "near_a_failed_getupdates": behind, "failed_getupdates": len(failed_polls)}


def _sent_between(
    received: dict[int, list[dict[str, Any]]], start: float, first: float, end: float,
) -> dict[str, Any]:
    """What reached users from the welcome burst (`start`) to the last welcome (`end`): copies
    and everything else, and the copies that went out before the first welcome (`first`)."""
    entries = [e for got in received.values() for e in got if start <= e["at"] <= end]
    copies = sum(1 for e in entries if is_copy(e))
    return {"s": round(end - start, 2), "first_welcome_s": round(first - start, 2), "copies": copies,
            "copies_before_first_welcome": sum(1 for e in entries if is_copy(e) and e["at"] < first),
            "other": len(entries) - copies, "per_s": round(len(entries) / (end - start), 1) if end > start else None}


async def _block_some(users: Users, backlog: list[int]) -> list[dict[str, int]]:
    """Block the bot for 3 backlog users who have some of their copies and not all."""
    chosen: list[dict[str, int]] = []
    candidates = backlog[::-1]  # users served late in the turns are likeliest to be mid-way
    end = time.monotonic() + 60
    while len(chosen) < BLOCKING and time.monotonic() < end:
        got = await users.received([u for u in candidates if u not in {c["user"] for c in chosen}])
        for user, entries in got.items():
            copies = sum(1 for e in entries if is_copy(e))
            if 1 <= copies < BACKLOG_COPIES - 2 and len(chosen) < BLOCKING:
                (await users.sim.post(f"/users/{user}/block", json={"blocked": True})).raise_for_status()
                chosen.append({"user": user, "copies_before": copies})
        await asyncio.sleep(0.3)
    return chosen


async def _callback_timings(sim: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    """Each callback query's press and answer times, as the simulator recorded them."""
    answer = await sim.get("/callback_queries")
    if answer.status_code == 404:
        return {}
    answer.raise_for_status()
    return {q["id"]: q for q in answer.json()["callback_queries"]}


def _edge_figures(core_url: str) -> dict[str, float]:
    """Edge's own counters, as core shows them in /metrics."""
    with contextlib.suppress(httpx.HTTPError):
        text = httpx.get(f"{core_url}/metrics", timeout=10).text
        figures = {}
        for line in text.splitlines():
            if line.startswith("videocopies_edge_"):
                name, _, value = line.rpartition(" ")
                figures[name.removeprefix("videocopies_edge_").split("{", 1)[0]] = float(value)
        return figures
    return {}


def _cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before[name], 2) for name in after}


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _durable(url: str) -> bool:
    with psycopg.connect(url) as conn:
        return all(conn.execute(f"SHOW {name}").fetchone()[0] == "on"  # type: ignore[index]
                   for name in ("fsync", "synchronous_commit", "full_page_writes"))


def met(figures: dict[str, Any]) -> dict[str, bool]:
    return {name: figures.get(name) is not None and figures[name] <= target for name, target in TARGETS.items()}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "render":
        core_url, token, store, copy = sys.argv[2:6]
        asyncio.run(quick_renderer(core_url, token, Path(store), Path(copy)))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep-logs", type=Path, help="copy the roles' logs here")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with server(durable=True) as pg, tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        url = fresh_database(pg, "telegram_limits")
        durable = _durable(url)
        media = make_media(scratch / "media")
        try:
            with bot_stack(url, scratch, media.copy) as stack:
                figures = asyncio.run(scenario(stack, url, media, pg.pid))
        finally:
            if args.keep_logs:
                shutil.copytree(scratch / "logs", args.keep_logs, dirs_exist_ok=True)
    details = figures.pop("details")
    emit({"bench": "telegram_limits", "durable": durable, **figures, "targets": TARGETS, "met": met(figures),
          "load_average": round(load, 2), **details})


if __name__ == "__main__":
    main()
