"""Why an order failed, or coins were given, as the user reads it: a short localized reason from a
fixed list of codes, never the text an exception, FFmpeg or an operator wrote (issue 20, build 3)."""

from __future__ import annotations

import pytest

from videocopies.adapters.screens import render
from videocopies.application.use_cases.reason_codes import FAILURES, failure_code, grant_code

RAW = "TranscodeFailed: ffmpeg exited 1: /tmp/w/1/source: Invalid data found when processing input"


def _failed(reason: str | None, language: str = "en") -> str:
    payload = {"order_id": "o1", "state": "failed", "copies": 5, "charged": 4, "pending": 0, "released": 16,
               "reason": reason}
    return render("order_closed", payload, language).text


@pytest.mark.parametrize(("raw", "code"), [
    ("bad source: the video is longer than the 180 s limit", "too_long"),
    ("bad source: no video stream", "source_unreadable"),
    ("NotEnoughDisk: needed=100, free=3", "storage_full"),
    ("OSError: [Errno 28] No space left on device: '/var/lib/x'", "storage_full"),
    ("lease expired on attempt 3 of 3", "timed_out"),
    ("TranscodeTimeout: ffmpeg ran past 300 s", "timed_out"),
    (RAW, "rendering_failed"),
    ("cancelled by operator alice", "operator_cancelled"),
    ("RuntimeError: boom", "unknown"),
    (None, "unknown"),
    ("storage_full", "storage_full"),
])
def test_a_raw_failure_becomes_a_code_of_the_list(raw: str | None, code: str) -> None:
    assert failure_code(raw) == code and code in FAILURES


@pytest.mark.parametrize("language", ["en", "ru"])
def test_every_failure_code_has_its_words_and_raw_text_never_shows(language: str) -> None:
    said = {code: _failed(code, language) for code in FAILURES}
    assert len(set(said.values())) == len(FAILURES)  # each code its own words
    generic = said["unknown"]
    for leaked in (RAW, "no_such_code", "", None):
        assert _failed(leaked, language) == generic
    assert "ffmpeg" not in generic and "/tmp" not in generic


def test_the_reason_reads_in_the_users_language() -> None:
    assert "(your video is too long)" in _failed("too_long")
    assert "(ваше видео слишком длинное)" in _failed("too_long", "ru")


def test_a_copy_given_up_for_an_unknown_reason_reads_as_the_generic_one() -> None:
    payload = {"order_id": "o1", "index": 0, "copies": 5, "reason": "ValueError: /tmp/x.mp4", "tries": 3,
               "returned": 4}
    text = render("copy_failed", payload, "en").text
    assert "something went wrong while making it" in text and "ValueError" not in text


def test_coins_given_by_hand_say_why_in_words_of_the_list() -> None:
    assert grant_code("sorry for the wait") == "compensation"
    assert grant_code("Promo December") == "promotion"
    assert grant_code("see ticket /srv/tickets/12.txt") == "gift" and grant_code(None) is None
    granted = {"screen": "coins_granted", "amount": 5, "reason": "see ticket /srv/tickets/12.txt"}
    assert render("screen", granted, "en").text == "You were given 5 coins (a gift from us)."
    assert render("screen", granted | {"reason": "compensation"}, "ru").text == (
        "Вам начислено: 5 монет (в качестве извинения за сбой с нашей стороны)."
    )
