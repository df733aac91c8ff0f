"""No internals in what users read (issue 20, "Done when"): a full run through the Bot API
simulator, with core, edge and a worker as processes, covering the main screens and the failures
(a broken video, a too-long one, a worker that cannot make a video, a cancelled order, not
enough coins, a payment, a stale button, coins given with an operator's raw words); then every
text the simulator saw the bot send (messages, edits, captions, buttons, callback answers,
invoices) is searched for exception names, file paths and FFmpeg's output: none."""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hostile import make_bad, make_unusual
from videocopies.adapters.screens import render

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from soak_stack import SoakPlan, stack  # noqa: E402

from videocopies.runtime.launch import issue_token  # noqa: E402

from .test_hostile_bot import CLOUD_DOWNLOAD_LIMIT, Chat  # noqa: E402

RAW = ("RuntimeError: ffmpeg exited 1: /tmp/videocopies-w0/job/source.mp4: Invalid data found when processing "
       "input; moov atom not found; Conversion failed!")
INTERNALS = {
    "exception name": re.compile(r"\b\w+Error\b|\bException\b|Traceback"),
    "file path": re.compile(r"/tmp|(?<![\w.:/])/[\w.-]+/[\w./-]+|\.py\b|[\w-]+\.mp4\b"),
    "FFmpeg output": re.compile(r"(?i)ffmpeg|Invalid data|moov atom|Conversion failed|Stream #"),
}
SHOWN = ("text", "caption", "title", "description", "label")  # what of a message a user reads


def leaks(text: str) -> list[str]:
    """What in this text is an internal the user should never read."""
    return [f"{name}: {found.group(0)!r}" for name, pattern in INTERNALS.items() if (found := pattern.search(text))]


def shown(value: Any) -> Iterator[str]:
    """Every text of a sent message a user reads: text or caption, button labels, an invoice's words."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in SHOWN and isinstance(item, str):
                yield item
            elif isinstance(item, dict | list):
                yield from shown(item)
    elif isinstance(value, list):
        for item in value:
            yield from shown(item)


def test_the_check_finds_a_raw_reason_fed_in() -> None:
    """The check can fail: texts as the bot wrote them before reasons were codes."""
    raw = ("RuntimeError: ffmpeg exited 1: /tmp/videocopies-w1/job/source: Invalid data found when "
           "processing input")
    before = f"Sorry, the copies could not be made ({raw}). Charged 0 coins for copies you received."
    assert len(leaks(before)) == 3
    assert leaks("You were given 5 coins (see Traceback in core.py).")
    assert leaks("Copy 1 of 5 could not be made: ValueError: moov atom not found")
    assert leaks("stored as sources/7/123.mp4")
    # and what the screens draw today from that raw reason has none of it
    payload = {"order_id": "o", "state": "failed", "copies": 5, "charged": 0, "pending": 0, "released": 20,
               "reason": raw}
    assert leaks(render("order_closed", payload, "en").text) == []
    assert leaks("Send a video, or /help. /balance — your coins; t.me/videocopies_bot?start=ref_7") == []


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, httpx.Client]]:
    scratch = tmp_path_factory.mktemp("no-internals")
    with stack(SoakPlan(workers=1, faults=(), lease_ttl_s=10), scratch, []) as built, \
            httpx.Client(base_url=built.sim_url, timeout=30) as sim:
        yield built, sim


def _user(sim: httpx.Client, user: int, language: str) -> Chat:
    users = [{"id": user, "first_name": f"U{user}", "language_code": language}]
    sim.post("/_sim/users/bulk", json={"bot_token": "424242:soak", "users": users}).raise_for_status()
    chat = Chat(sim, user)
    chat.say("/start")
    chat.next(contains="50")
    return chat


def _buttons(message: dict[str, Any]) -> list[str]:
    return [b["callback_data"] for row in message["reply_markup"]["inline_keyboard"] for b in row]


def _order(chat: Chat, choose: dict[str, Any], choice: int, says: str = "Order accepted",
           quote_says: str = "coins each") -> dict[str, Any]:
    """Press a choice of copies under `choose`, then confirm the quote; what the bot says then."""
    chat.press(choose["message_id"], _buttons(choose)[choice])
    quote = chat.next(contains=quote_says)
    chat.press(quote["message_id"], _buttons(quote)[0])
    return chat.next(contains=says)


def _next(chat: Chat, sim: httpx.Client, contains: str, timeout: float = 90) -> dict[str, Any]:
    """chat.next, and when nothing comes, what the user did receive (a failure worth reading)."""
    try:
        return chat.next(contains=contains, timeout=timeout)
    except AssertionError:
        said = [(e["method"], e["message"].get("text")) for e in sim.get(f"/_sim/users/{chat.id}/received").json()]
        raise AssertionError(f"no {contains!r}; the user received {said}") from None


def _fail_as_a_worker(built: Any, reason: str) -> None:
    """Claim the one queued job (the stack's worker is stopped; a claim it had parked holds the
    job until its lease runs out) and report it failed for good, with `reason`."""
    headers = {"Authorization": f"Bearer {issue_token(built.url, 'w-raw')}"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        claimed = httpx.post(f"{built.core.url}/v1/jobs/claim", headers=headers, timeout=30,
                             json={"wait_s": 5, "limit": 1, "max_source_bytes": None})
        claimed.raise_for_status()
        if jobs := claimed.json()["jobs"]:
            (job,) = jobs
            failed = httpx.post(f"{built.core.url}/v1/jobs/{job['job_id']}/fail", headers=headers, timeout=30,
                                json={"token": job["token"], "receipt_id": "r-raw", "reason": reason,
                                      "retryable": False})
            assert failed.status_code == 200, failed.text
            return
    raise AssertionError("no job to fail")


def _answered(sim: httpx.Client, users: str, timeout: float = 20) -> list[dict[str, Any]]:
    """The users' button presses, once every one of them is answered."""
    deadline = time.monotonic() + timeout
    while True:
        queries = sim.get("/_sim/callback_queries", params={"users": users}).json()["callback_queries"]
        if all(q["answered_at"] is not None for q in queries) or time.monotonic() > deadline:
            return list(queries)
        time.sleep(0.2)


@pytest.mark.slow
def test_no_text_a_user_reads_names_an_exception_a_path_or_ffmpeg(
    bot: tuple[Any, httpx.Client], tmp_path: Path
) -> None:
    built, sim = bot
    ann, ivan = _user(sim, 3001, "en"), _user(sim, 3002, "ru")
    clip = make_unusual("no_audio", tmp_path).read_bytes()
    # A worker fails with an exception's text, FFmpeg's output and a path: the order fails.
    worker = built.workers["w0"].process
    worker.send_signal(signal.SIGSTOP)
    try:
        ivan.send("video", clip, "video/mp4", 1, "clip.mp4")
        _order(ivan, ivan.next(contains="Сколько копий", timeout=90), 0, says="Заказ принят", quote_says="всего")
        _fail_as_a_worker(built, RAW)
    finally:
        worker.send_signal(signal.SIGCONT)
    _next(ivan, sim, "Не удалось сделать копии")
    for command in ("/help", "/balance", "/history", "/invite", "/language"):
        ann.say(command)
    # A broken video and a too-long one: refused by edge.
    for name, duration, says in (("random_bytes", 2, "not a video"), ("very_long", 7200, "too long")):
        path = make_bad(name, tmp_path, over_bytes=CLOUD_DOWNLOAD_LIMIT)
        ann.send("video", path.read_bytes(), "video/mp4", duration, path.name)
        ann.next(contains=says, timeout=90)
    # An order cancelled at once (then its Cancel pressed again), one more, and one the coins left
    # do not cover. Presses on Cancel go raw: the button goes when the order closes.
    ann.send("video", clip, "video/mp4", 1, "clip.mp4")
    accepted = _order(ann, ann.next(contains="How many copies"), 2)  # 10 copies: 30 of the 50 coins
    cancel = next(data for data in _buttons(accepted) if data.startswith("x:"))
    sim.post(f"/_sim/users/{ann.id}/raw_presses", json={"data": cancel, "message_id": accepted["message_id"]})
    _next(ann, sim, "Cancelled")
    sim.post(f"/_sim/users/{ann.id}/raw_presses", json={"data": cancel, "message_id": accepted["message_id"]})
    _next(ann, sim, "already")
    for says in ("Order accepted", "Not enough coins"):
        ann.send("video", clip, "video/mp4", 1, "clip.mp4")
        _order(ann, ann.next(contains="How many copies"), 2, says=says)
    # A payment, a button no release made, and coins given with an operator's raw words.
    ann.say("/buy")
    packages = ann.next(contains="Telegram Stars")
    ann.press(packages["message_id"], _buttons(packages)[0])
    invoice = ann.next(method="sendInvoice")
    paid = sim.post(f"/_sim/users/{ann.id}/payments", json={"message_id": invoice["message_id"]})
    query = paid.raise_for_status().json()["pre_checkout_query_id"]
    outcome = sim.get(f"/_sim/users/{ann.id}/payments/{query}", params={"wait": 30}, timeout=40).json()
    assert outcome["outcome"] == "paid"
    ann.next(contains="Payment received", timeout=60)
    sim.post(f"/_sim/users/{ann.id}/raw_presses", json={"data": "zz:1", "message_id": packages["message_id"]})
    operator = {"Authorization": f"Bearer {issue_token(built.url, 'control-1', 'control')}"}
    granted = httpx.post(f"{built.core.url}/v1/control/grants", headers=operator, json={
        "user_id": ann.id, "amount": 5, "reason": "Traceback: KeyError in /srv/app/grants.py", "grant_id": "g-1"})
    assert granted.status_code == 200, granted.text
    ann.next(contains="You were given")

    ids = f"{ann.id},{ivan.id}"
    received = sim.get("/_sim/received", params={"users": ids}).json()
    texts = [text for entries in received.values() for entry in entries for text in shown(entry["message"])]
    texts += [q["text"] for q in _answered(sim, ids) if q.get("text")]
    everything = "\n".join(texts)
    for expected in ("Not enough coins", "Cancelled", "already cancelled", "Payment received",
                     "no longer works", "You were given", "not a video", "too long", "Не удалось сделать копии"):
        assert expected in everything, expected  # the run covered what it claims to
    assert {text: found for text in texts if (found := leaks(text))} == {}
    # /invite names the bot by the username getMe gave edge
    assert re.search(rf"t\.me/[A-Za-z0-9_]+\?start=ref_{ann.id}\b", everything) and "<bot>" not in everything
