"""Every screen in English and Russian for the counts 1, 2, 5, 11, 21, 22 and 101: no placeholder
left, no word of the other language, and every number followed by the form of its noun that the
number asks for (1 копия, 2 копии, 5 копий, 21 копия; монета, монеты, монет)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from videocopies.adapters.screens import Screen, render
from videocopies.application.use_cases.reason_codes import FAILURES, GRANTS

COUNTS = (1, 2, 5, 11, 21, 22, 101)
WHEN = "2026-12-02T10:00:00+00:00"
STATES = ("quoted", "confirmed", "running", "done", "cancelling", "cancelled", "failed")


def _from_now(**delta: float) -> str:
    return (datetime.now(UTC) + timedelta(**delta)).isoformat()


def outbox_rows(c: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """One outbox row for every screen `render` draws, each of its numbers `c`."""
    rows: dict[str, tuple[str, dict[str, Any]]] = {
        "copy_ready": ("copy_ready", {"index": c - 1, "copies": c, "object_key": "copies/k"}),
        "invoice": ("invoice", {"coins": c, "stars": c, "offer": "p1"}),
        "copy_too_large": ("copy_failed", {"index": c - 1, "copies": c, "reason": "too_large"}),
        "order_done": ("order_closed", {"state": "done", "copies": c, "made": c, "charged": c, "pending": 0,
                                        "released": 0}),
        "order_done_partly": ("order_closed", {"state": "done", "copies": c + 1, "made": c, "charged": 0,
                                               "pending": c, "released": c}),
        "order_cancelled": ("order_closed", {"state": "cancelled", "copies": c, "charged": c, "released": c}),
        "order_failed": ("order_closed", {"state": "failed", "copies": c, "charged": c, "pending": c,
                                          "released": c, "reason": "-"}),
        "order_failed_nothing_pending": ("order_closed", {"state": "failed", "copies": c, "charged": c,
                                                          "pending": 0, "released": c, "reason": "-"}),
    }
    for code in FAILURES:
        rows[f"order_failed_{code}"] = ("order_closed", {"state": "failed", "copies": c, "charged": c, "pending": 0,
                                                         "released": c, "reason": code})
    rows["progress"] = ("progress", {"order_id": "order-1", "copies": c, "total": c, "delivered": c - 1,
                                     "index": c - 1, "percent": 40})
    rows["progress_delivered"] = ("progress", {"order_id": "order-1", "copies": c, "total": c, "delivered": c,
                                               "index": None, "percent": None})
    for why in ("looks_different", "matches_source", "matches_other_copy", "unknown"):
        rows[f"copy_failed_{why}"] = ("copy_failed", {"index": c - 1, "copies": c, "reason": why, "tries": c,
                                                      "returned": c})
    screens: dict[str, dict[str, Any]] = {
        "welcome": {"name": "Анна", "available": c, "bonus": c, "referral": c},
        "welcome_plain": {"screen": "welcome", "name": None, "available": c, "bonus": 0},
        "packages": {"packages": [[c, c], [c + 1, c]]},
        "coins_granted": {"amount": c, "reason": None},
        **{f"coins_granted_{code}": {"screen": "coins_granted", "amount": c, "reason": code} for code in GRANTS},
        **{f"cancel_too_late_{s}": {"screen": "cancel_too_late", "state": s} for s in ("done", "cancelled", "failed")},
        "choose_copies": {"prices": [[c, c]]},
        "quote": {"copies": c, "per_copy": c, "total": c, "expires_at": WHEN, "confirm_data": "c:o"},
        "confirmed": {"order_id": "order-1", "copies": c, "total": c},
        "balance": {"available": c, "reserved": c, "lots": [{"amount": c, "expires_at": WHEN},
                                                              {"amount": c, "expires_at": None}]},
        "history": {"orders": [{"created_at": WHEN, "copies": c, "state": s, "charged": c, "order_id": "o",
                                "delivered": list(range(min(c, 3)))} for s in STATES]},
        "copy_again": {"object_key": "copies/o/0.mp4", "n": c, "copies": c},
        "history_empty": {"screen": "history", "orders": []},
        "coins_credited": {"coins": c, "available": c},
        "payment_unmatched": {"stars": c},
        "refunded": {"coins": c, "stars": c},
        "coins_expired": {"amount": c},
        "referral_rewarded": {"amount": c},
        "referral_invitee_rewarded": {"amount": c},
        "payment_confirming": {"stars": c},
        "payment_reversed": {"stars": c, "coins": c},
        "invite": {"user_id": 4242, "amount": c},
        "invite_link": {"screen": "invite", "user_id": 4242, "amount": c, "bot": "videocopies_bot"},
        "help": {"max_mb": c, "max_s": c},
        "not_enough_coins": {"needed": c, "available": c},
        "quote_in_minutes": {"screen": "quote", "copies": c, "per_copy": c, "total": c, "confirm_data": "c:o",
                             "expires_at": _from_now(minutes=c, seconds=-10)},
        "balance_in_hours": {"screen": "balance", "available": c, "reserved": c,
                             "lots": [{"amount": c, "expires_at": _from_now(hours=c, seconds=-10)}]},
        "balance_in_days": {"screen": "balance", "available": c, "reserved": c,
                            "lots": [{"amount": c, "expires_at": _from_now(days=c, minutes=30)}]},
        "not_enough_coins_packages": {"screen": "not_enough_coins", "needed": c, "available": c,
                                      "packages": [[c, c], [c + 1, c]]},
        "too_many_orders": {"limit": c},
        "video_too_big": {"size_mb": c, "max_mb": c},
        "video_too_long": {"seconds": c, "max_s": c},
        "video_too_sharp": {"max_mpx": c, "fps_1080": c},
        "video_unchecked": {"max_s": c},
        "copy_too_large_sent": {"screen": "copy_too_large", "n": c, "copies": c},
        "language": {"languages": ["en", "ru"]},
    }
    for name in ("offer_withdrawn", "payments_unavailable", "cancel_requested", "quote_expired",
                 "already_confirmed", "busy", "video_format", "video_unavailable", "unreadable",
                 "send_video_first", "send_video_again", "button_invalid", "button_stale", "not_found", "unknown",
                 "language_chosen", "not_video_picture", "not_video_sound", "copy_gone"):
        screens[name] = {}
    for name, payload in screens.items():
        rows[name] = ("screen", {"screen": name, **payload})
    return rows


def words_of(screen: Screen) -> str:
    """Everything of a screen a user reads: its text, its buttons, its invoice."""
    parts = [screen.text, *(b.text for row in screen.buttons for b in row)]
    if screen.invoice:
        parts += [screen.invoice.title, screen.invoice.description, screen.invoice.label]
    return "\n".join(parts)


def rendered(language: str) -> list[tuple[int, str, str]]:
    return [(c, name, words_of(render(kind, payload, language)))
            for c in COUNTS for name, (kind, payload) in outbox_rows(c).items()]


# Every form a Russian noun takes after a number, by the number's plural form: 1 and 21, 2-4 and
# 22, 5-20 and 11 (any case the screens use: 1 монета, по 1 монете, ещё 1 монету).
RUSSIAN_FORMS = {
    "монета": ({"монета", "монету", "монете"}, {"монеты"}, {"монет"}),
    "копия": ({"копия", "копию"}, {"копии"}, {"копий"}),
    "звезда": ({"звезда", "звезду"}, {"звезды"}, {"звёзд"}),
    "секунда": ({"секунда", "секунду"}, {"секунды"}, {"секунд"}),
    "заказ": ({"заказ"}, {"заказа"}, {"заказов"}),
    "мегапиксель": ({"мегапиксель"}, {"мегапикселя"}, {"мегапикселей"}),
    "попытка": ({"попытка", "попытку"}, {"попытки"}, {"попыток"}),
    "минута": ({"минуту"}, {"минуты"}, {"минут"}),
    "час": ({"час"}, {"часа"}, {"часов"}),
    "день": ({"день"}, {"дня"}, {"дней"}),
}
NOUN_OF = {form: noun for noun, forms in RUSSIAN_FORMS.items() for group in forms for form in group}


def russian_form(n: int) -> int:
    return 0 if n % 10 == 1 and n % 100 != 11 else 1 if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14 else 2


def test_the_russian_plural_rule() -> None:
    assert [russian_form(n) for n in COUNTS] == [0, 1, 2, 2, 0, 1, 0]
    assert [russian_form(n) for n in (3, 4, 12, 14, 104, 111, 112, 1001)] == [1, 1, 2, 2, 1, 2, 2, 0]


@pytest.mark.parametrize("language", ["en", "ru"])
def test_every_screen_renders_whole(language: str) -> None:
    for c, name, words in rendered(language):
        assert words.strip(), (c, name)
        assert not re.search(r"[{}]", words), (c, name, words)


# Latin words a Russian screen may hold: names of brands and formats, commands, the invite link,
# and English by its own name on the button that chooses it.
BRANDS = {"Reels", "Shorts", "TikTok", "Telegram", "Stars", "MP4", "MOV", "WebM", "UTC", "English"}


def test_russian_screens_speak_russian() -> None:
    for c, name, words in rendered("ru"):
        bare = re.sub(r"t\.me/\w+\?start=ref_\d+|ref_\d+|/[a-z]+", " ", words)
        latin = set(re.findall(r"[A-Za-z][A-Za-z0-9]*", bare)) - BRANDS
        assert not latin, (c, name, latin, words)


def test_english_screens_speak_english() -> None:  # but the user's name and Russian by its own
    for c, name, words in rendered("en"):
        assert not re.search(r"[А-Яа-яЁё]", words.replace("Анна", "").replace("Русский", "")), (c, name, words)


def test_every_russian_noun_takes_the_form_its_number_asks_for() -> None:
    checked = 0
    for c, name, words in rendered("ru"):
        for number, word in re.findall(r"(\d+)\s+([а-яё]+)", words):
            if word in NOUN_OF:
                forms = RUSSIAN_FORMS[NOUN_OF[word]][russian_form(int(number))]
                assert word in forms, (c, name, f"{number} {word}", words)
                checked += 1
    assert checked > 300


def test_every_english_noun_takes_the_form_its_number_asks_for() -> None:
    nouns = r"(coins?|cop(?:y|ies)|Stars?|tr(?:y|ies)|seconds?|orders?|megapixels?|minutes?|hours?|days?)"
    for c, name, words in rendered("en"):
        for number, word in re.findall(rf"\b(\d+) (?:more )?{nouns}\b", words):
            singular = word in ("coin", "copy", "Star", "try", "second", "order", "megapixel", "minute", "hour", "day")
            assert singular == (number == "1"), (c, name, f"{number} {word}", words)
        assert not re.search(r"\bAll 1 cop", words), (c, name, words)


COPIES = {1: "копия", 2: "копии", 5: "копий", 11: "копий", 21: "копия", 22: "копии", 101: "копия"}
COINS = {1: "монета", 2: "монеты", 5: "монет", 11: "монет", 21: "монета", 22: "монеты", 101: "монета"}
EACH = {1: "монете", 2: "монеты", 5: "монет", 11: "монет", 21: "монете", 22: "монеты", 101: "монете"}
READY = {1: "Готова", 2: "Готовы", 5: "Готово", 11: "Готово", 21: "Готова", 22: "Готовы", 101: "Готова"}


@pytest.mark.parametrize("c", COUNTS)
def test_russian_forms_spelled_out(c: int) -> None:
    screens = {name: words for n, name, words in rendered("ru") if n == c}
    assert f"{c} {COPIES[c]} по {c} {EACH[c]}: всего {c} {COINS[c]}." in screens["quote"]
    assert f"Заказ принят: {c} {COPIES[c]}, в резерве {c} {COINS[c]}." in screens["confirmed"]
    assert screens["order_done"].startswith(f"{READY[c]} {c} {COPIES[c]}: {c} {COINS[c]},")
    assert screens["balance"].startswith(f"Доступно: {c} {COINS[c]}\n")
    assert f"На вашем счёте {c} {COINS[c]}." in screens["welcome"]
    assert f": {c} {COPIES[c]}, делается, списано {c}" in screens["history"]
    assert f"Подтвердить — {c} {COINS[c]}" in screens["quote"]


@pytest.mark.parametrize(("c", "quote", "done"), [
    (1, "1 copy at 1 coin each: 1 coin.", "Your copy is ready: 1 coin,"),
    (2, "2 copies at 2 coins each: 2 coins.", "All 2 copies are ready: 2 coins,"),
    (21, "21 copies at 21 coins each: 21 coins.", "All 21 copies are ready: 21 coins,"),
])
def test_english_forms_spelled_out(c: int, quote: str, done: str) -> None:
    screens = {name: words for n, name, words in rendered("en") if n == c}
    assert quote in screens["quote"]
    assert screens["order_done"].startswith(done)


def test_buttons_keep_their_callback_data() -> None:
    for language in ("en", "ru"):
        for _, (kind, payload) in outbox_rows(5).items():
            screen = render(kind, payload, language)
            assert all(1 <= len(b.data.encode()) <= 64 for row in screen.buttons for b in row)
        choose = render("screen", {"screen": "choose_copies", "prices": [[1, 5], [5, 4]]}, language)
        assert [b.data for b in choose.buttons[0]] == ["n:1", "n:5"]
        languages = render("screen", {"screen": "language", "languages": ["en", "ru"]}, language)
        assert [(b.text, b.data) for b in languages.buttons[0]] == [("English", "l:en"), ("Русский", "l:ru")]
