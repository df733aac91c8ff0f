"""The demo's third part: a user orders copies through the Telegram Bot API simulator, every role a process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.roles import all_in_one
from videocopies.testing.telegram_simulator.users import SimulatedUser

COPIES = 5
CLIP_SECONDS = 2


class StoryBroken(Exception):
    """The story cannot go on: a role did not start or stop as it should."""


class Narrator:
    """Prints the story for a reader and keeps every point where the bot did not do what the story says."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.step_no = 0
        self.mismatches: list[str] = []

    def check(self, holds: bool, what: str) -> None:
        if not holds:
            self.mismatches.append(what)
            self.say(f"MISMATCH: {what}")

    def step(self, text: str) -> None:
        self.step_no += 1
        print(f"\n{self.step_no:>2}. {text}", file=self.out, flush=True)

    def say(self, text: str) -> None:
        print(f"    {text}", file=self.out, flush=True)

    def bot_says(self, text: str, buttons: list[str] | None = None) -> None:
        for line in text.splitlines():
            self.say(f"bot: {line}")
        if buttons:
            self.say(f"     buttons: {', '.join(buttons)}")


async def tell(user: SimulatedUser, clip: Path, scratch: Path, say: Narrator) -> None:
    """The user's side of the story, each step checked against what the bot answers."""
    say.step("The user sends /start")
    user.send_text("/start")
    welcome = await user.next_message(contains="coins", timeout=30)
    say.bot_says(welcome.text)
    say.check("You have 50 coins" in welcome.text, "the welcome screen does not show 50 coins")

    say.step(f"The user sends a {CLIP_SECONDS} s 540x960 clip ({clip.stat().st_size} bytes)")
    user.send_video(clip.read_bytes(), width=540, height=960, duration=CLIP_SECONDS, file_name="clip.mp4",
                    mime_type="video/mp4")
    choose = await user.next_message(contains="How many copies", timeout=60)
    say.bot_says(choose.text, choose.buttons)

    say.step(f"The user picks {COPIES} copies (presses n:{COPIES})")
    user.press(choose.message_id, next(d for d in choose.buttons if d.split(":")[1] == str(COPIES)))
    quote = await user.next_message(contains="coins each", timeout=30)
    say.bot_says(quote.text, quote.buttons)
    say.check(f"{COPIES} copies at 4 coins each: 20 coins" in quote.text, "the quote is not 5 copies for 20 coins")

    say.step("The user confirms")
    (confirm,) = quote.buttons
    confirmed_at = time.time()
    user.press(quote.message_id, confirm)
    accepted = await user.next_message(contains="Order accepted", timeout=30)
    say.bot_says(accepted.text)

    say.step("The copies arrive one by one; the user downloads each and decodes it fully")
    await receive_copies(user, confirmed_at, scratch, say)
    done = await user.next_message(contains="copies are ready", after=accepted.seq, timeout=60)
    say.bot_says(done.text)
    expected = f"All {COPIES} copies are ready: 20 coins, each copy charged as it arrives."
    say.check(done.text == expected, f"the last message should read {expected!r}")

    say.step("The user sends /balance")
    user.send_text("/balance")
    balance = await user.next_message(contains="Available:", timeout=30)
    say.bot_says(balance.text)
    say.check("Available: 30 coins" in balance.text, "the balance screen does not show 30 coins available")
    say.check("Reserved for orders in progress: 0" in balance.text, "the balance screen still shows coins reserved")


async def receive_copies(user: SimulatedUser, confirmed_at: float, scratch: Path, say: Narrator) -> None:
    prober = FfmpegDecodingProber()
    for n in range(1, COPIES + 1):
        entry = await user.next_message(media="video", timeout=120)
        say.check(entry.text == f"Copy {n} of {COPIES}", f"expected copy {n} of {COPIES}, got {entry.text!r}")
        path = scratch / f"received-{n}.mp4"
        path.write_bytes(user.download_video(entry))
        probed = await prober.probe(path, full_decode=True)
        say.check(probed.frames > 0, f"copy {n} has no decodable frame")
        say.say(
            f"copy {n} of {COPIES} arrived after {entry.at - confirmed_at:.1f} s: {path.stat().st_size} bytes, "
            f"{probed.width}x{probed.height}, {probed.duration_s:.2f} s, {probed.frames} frames decoded"
        )


def story(data: Path, say: Narrator, received: Path | None = None) -> None:
    scratch = (received or data / "demo").absolute()
    scratch.mkdir(parents=True, exist_ok=True)
    for old in scratch.glob("received-*.mp4"):  # an earlier run's copies
        old.unlink()
    clip = make_clip(scratch / "clip.mp4", seconds=CLIP_SECONDS, width=540, height=960)
    env = {k: v for k, v in os.environ.items() if k not in ("VIDEOCOPIES_BOT_TOKEN", "VIDEOCOPIES_TELEGRAM_URL")}
    try:
        with all_in_one.running(data, env, say.say) as stack:
            assert stack.simulator is not None
            user = stack.simulator.create_user(stack.bot_token, first_name="Ann", language_code="en")
            try:
                asyncio.run(tell(user, clip, scratch, say))
            except TimeoutError:
                for entry in user.received[-3:]:
                    say.say(f"the user's chat so far ends with: {entry.text!r}")
                raise
            say.say(f"the copies Ann received are in {scratch}")
            say.say(f"the control panel at {stack.panel_url}/ shows her order and ledger while the roles run"
                    + (f" (password in {stack.panel_password_file})" if stack.panel_password_file else ""))
    except all_in_one.RoleFailed as failed:
        raise StoryBroken(str(failed)) from failed


@contextlib.contextmanager
def quiet(*loggers: str) -> Iterator[None]:
    """The in-process simulator's server and client logs would interleave with the story."""
    levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def run_bot_story(out: TextIO = sys.stdout, data: Path | None = None, received: Path | None = None) -> int:
    """Ann sends a clip, orders 5 copies, receives them one by one, and her balance screen
    matches; 0 if it all held. Every role runs as `videocopies all-in-one` runs them, in
    `data` (a fresh temporary directory unless given); the copies Ann downloads are kept in
    `received` (default: in `data`)."""
    say = Narrator(out)
    started = time.monotonic()
    with quiet("uvicorn", "httpx"), contextlib.ExitStack() as cleanup:
        if data is None:
            data = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="videocopies-demo-")))
        try:
            story(data, say, received)
        except (StoryBroken, TimeoutError) as broken:
            say.mismatches.append(str(broken))
    took = f"{time.monotonic() - started:.0f} s"
    if say.mismatches:
        say.step(f"Result: MISMATCH ({took}): " + "; ".join(say.mismatches))
        return 1
    say.step(f"Result ({took}): {COPIES} copies received and decoded, 20 coins charged, 30 available, 0 reserved")
    return 0
