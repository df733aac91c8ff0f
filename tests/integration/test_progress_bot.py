"""An order's progress in one message, end to end: the Bot API simulator (Telegram's limits and
faults), core, edge and a worker as processes, real FFmpeg. The order's accepted screen is edited
as copies are rendered and delivered and when the order closes; Telegram never refuses an edit as
"not modified"; once the order is closed no message in the chat has a live button; a progress
message the user deleted is replaced by a new one, which the later states edit; a choice pressed
under an older video copies that video, not the newest."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import httpx
import pytest

from videocopies.adapters.ffmpeg.clips import make_clip

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from soak_stack import SoakPlan, stack  # noqa: E402

pytestmark = pytest.mark.slow
BOT_TOKEN = "424242:soak"


class Chat:
    """One simulated user, driven over the simulator's HTTP control API."""

    def __init__(self, sim: httpx.Client, user_id: int) -> None:
        self.sim, self.id, self.seq = sim, user_id, 0

    def say(self, text: str) -> None:
        self.sim.post(f"/_sim/users/{self.id}/messages", json={"text": text}).raise_for_status()

    def send_video(self, path: Path, seconds: int, width: int = 720, height: int = 1280) -> None:
        params = {"file_name": path.name, "mime_type": "video/mp4", "width": width, "height": height,
                  "duration": seconds}
        self.sim.post(f"/_sim/users/{self.id}/videos", params=params, content=path.read_bytes()).raise_for_status()

    def press(self, message_id: int, data: str) -> None:
        pressed = self.sim.post(f"/_sim/users/{self.id}/presses", json={"message_id": message_id, "data": data})
        pressed.raise_for_status()

    def next(self, timeout: float = 90, **criteria: str) -> dict[str, Any]:
        answer = self.sim.get(f"/_sim/users/{self.id}/received/next",
                              params={"after": self.seq, "timeout": timeout, **criteria}, timeout=timeout + 10)
        assert answer.status_code == 200, f"user {self.id} waited for {criteria}: {answer.text}"
        entry = answer.json()
        self.seq = entry["seq"]
        return dict(entry["message"])

    def order(self, copies: int) -> dict[str, Any]:
        """Press the number of copies, then confirm; the accepted screen."""
        choose = self.next(contains="How many copies")
        (choice,) = [d for d in buttons(choose) if d.split(":")[1] == str(copies)]
        self.press(choose["message_id"], choice)
        quote = self.next(contains="coins each")
        (confirm,) = buttons(quote)
        self.press(quote["message_id"], confirm)
        return self.next(contains="Order accepted")

    def received(self) -> list[dict[str, Any]]:
        return list(self.sim.get(f"/_sim/users/{self.id}/received").json())

    def now(self, message_id: int) -> dict[str, Any]:
        """A message as the chat shows it now, after its edits."""
        return dict(self.sim.get(f"/_sim/users/{self.id}/chat/{message_id}").json())

    def delete(self, message_id: int) -> None:
        self.sim.delete(f"/_sim/users/{self.id}/chat/{message_id}").raise_for_status()


def buttons(message: dict[str, Any]) -> list[str]:
    rows = (message.get("reply_markup") or {}).get("inline_keyboard", [])
    return [b["callback_data"] for row in rows for b in row if "callback_data" in b]


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, httpx.Client, Path]]:
    scratch = tmp_path_factory.mktemp("progress-bot")
    # Six seconds of 720x1280: each copy renders long enough (several seconds) for its progress to be shown.
    clip = make_clip(scratch / "clip.mp4", seconds=6, width=720, height=1280)
    with stack(SoakPlan(workers=1, faults=(), lease_ttl_s=10), scratch, []) as built, \
            httpx.Client(base_url=built.sim_url, timeout=30) as sim:
        yield built, sim, clip


_next_user = iter(range(3000, 4000))


def newcomer(bot: tuple[Any, httpx.Client, Path]) -> Chat:
    _, sim, _ = bot
    user = next(_next_user)
    users = [{"id": user, "first_name": f"P{user}", "language_code": "en"}]
    sim.post("/_sim/users/bulk", json={"bot_token": BOT_TOKEN, "users": users}).raise_for_status()
    chat = Chat(sim, user)
    chat.say("/start")
    chat.next(contains="coins")
    return chat


def not_modified(sim: httpx.Client) -> int:
    return int(sim.get("/_sim/stats").json()["not_modified"])


def delivered_figures(texts: list[str]) -> list[int]:
    return [int(m.group(1)) for t in texts if (m := re.search(r"Delivered: (\d+) of", t))]


def test_one_message_shows_the_order_from_accepted_to_closed(bot: tuple[Any, httpx.Client, Path]) -> None:
    _, sim, clip = bot
    refused_before = not_modified(sim)
    chat = newcomer(bot)
    chat.send_video(clip, 6)
    accepted = chat.order(5)
    shown_in = accepted["message_id"]
    (cancel,) = buttons(accepted)
    assert cancel.startswith("x:")
    closed = chat.next(contains="All 5 copies are ready", timeout=300)
    assert closed["message_id"] == shown_in and buttons(closed) == []

    entries = chat.received()
    edits = [e for e in entries if e["kind"] == "edit"]
    progress = [e for e in edits if e["message"]["message_id"] == shown_in]
    texts = [e["message"]["text"] for e in progress]
    copies = [e for e in entries if e["kind"] == "new" and "video" in e["message"]]
    assert len(copies) == 5  # the copies themselves still arrive as videos
    assert len(progress) >= 3, texts  # rendering and delivered states, and the end
    assert any(re.search(r"Making copy \d of 5: [▰▱]{10} \d+%", t) for t in texts), texts
    figures = delivered_figures(texts)
    assert figures and figures == sorted(figures) and figures[-1] >= 1, texts
    # The end edits the message; no new message says it.
    assert not [e for e in entries if e["kind"] == "new" and "copies are ready" in e["message"].get("text", "")]
    assert not_modified(sim) == refused_before
    # No live button anywhere in the chat once the order is closed: the choice and the quote
    # lost theirs when they were pressed, the progress message its Cancel when the order closed.
    for entry in entries:
        if entry["kind"] == "new":
            assert buttons(chat.now(entry["message"]["message_id"])) == [], entry["message"].get("text")


def test_a_deleted_progress_message_is_replaced_once_and_the_order_ends_in_the_new_one(
    bot: tuple[Any, httpx.Client, Path],
) -> None:
    _, sim, clip = bot
    chat = newcomer(bot)
    chat.send_video(clip, 6)
    accepted = chat.order(5)
    chat.delete(accepted["message_id"])
    closed = chat.next(contains="All 5 copies are ready", timeout=300)
    assert closed["message_id"] != accepted["message_id"]
    entries = chat.received()
    replacements = [e for e in entries if e["kind"] == "new" and "Order accepted" in e["message"].get("text", "")]
    assert [e["message"]["message_id"] for e in replacements][1:] == [closed["message_id"]]  # one new message
    assert all(e["message"]["message_id"] == closed["message_id"]
               for e in entries if e["kind"] == "edit" and e["seq"] > replacements[-1]["seq"])
    time.sleep(1)
    assert buttons(chat.now(closed["message_id"])) == []


def test_a_choice_under_an_older_video_copies_that_video(
    bot: tuple[Any, httpx.Client, Path], tmp_path: Path
) -> None:
    """Two videos of different sizes; "1 copy" pressed under the first one's choice, after the
    second arrived: the copy delivered has the first one's frame size."""
    _, sim, clip = bot
    newer = make_clip(tmp_path / "newer.mp4", seconds=2, width=360, height=640)
    chat = newcomer(bot)
    chat.send_video(clip, 6)
    older_choice = chat.next(contains="How many copies")
    chat.send_video(newer, 2, width=360, height=640)
    chat.next(contains="How many copies")
    (one,) = [d for d in buttons(older_choice) if d.split(":")[1] == "1"]
    chat.press(older_choice["message_id"], one)
    quote = chat.next(contains="The price holds")
    (confirm,) = buttons(quote)
    chat.press(quote["message_id"], confirm)
    chat.next(contains="Your copy is ready", timeout=300)
    (copy,) = [e["message"]["video"] for e in chat.received() if e["kind"] == "new" and "video" in e["message"]]
    file_path = sim.get(f"/bot{BOT_TOKEN}/getFile", params={"file_id": copy["file_id"]}).json()["result"]["file_path"]
    (tmp_path / "copy.mp4").write_bytes(sim.get(f"/file/bot{BOT_TOKEN}/{file_path}").content)
    with av.open(str(tmp_path / "copy.mp4")) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (720, 1280)
