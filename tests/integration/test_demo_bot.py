"""The demo's bot story: every role a process, a user on the Bot API simulator orders 5 copies."""

from __future__ import annotations

import io
import re

import pytest

from videocopies.demo.bot_story import run_bot_story


@pytest.fixture(scope="module")
def story() -> tuple[int, str]:
    out = io.StringIO()
    code = run_bot_story(out)
    return code, out.getvalue()


@pytest.mark.slow
def test_the_copies_arrive_one_by_one_decode_and_the_balance_matches(story: tuple[int, str]) -> None:
    _, text = story
    arrivals = re.findall(r"copy (\d) of 5 arrived after [\d.]+ s: .*, (\d+) frames decoded", text)
    assert [n for n, _ in arrivals] == ["1", "2", "3", "4", "5"], text
    assert all(int(frames) > 0 for _, frames in arrivals), text
    assert "bot: Available: 30 coins" in text and "bot: Reserved for orders in progress: 0" in text, text
    assert "stopped on SIGTERM with exit code 0" in text, text
    assert re.search(r"the control panel at http://127\.0\.0\.1:\d+/ shows her order", text), text


@pytest.mark.slow
def test_the_whole_story_holds(story: tuple[int, str]) -> None:
    code, text = story
    assert code == 0, text
    assert "bot: All 5 copies are ready: 20 coins, each copy charged as it arrives." in text
    assert "MISMATCH" not in text
