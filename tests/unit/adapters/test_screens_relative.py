"""When something ends, told as how long until then (issue 20, build 4): "expires in 12 days",
"сгорят через 12 дней", never a UTC timestamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from videocopies.adapters.screens import render


def _from_now(**delta: float) -> str:
    return (datetime.now(UTC) + timedelta(**delta)).isoformat()


def _balance(language: str, **delta: float) -> str:
    payload = {"screen": "balance", "available": 5, "reserved": 0,
               "lots": [{"amount": 5, "expires_at": _from_now(**delta)}]}
    return render("screen", payload, language).text


def _quote(language: str, **delta: float) -> str:
    payload = {"screen": "quote", "copies": 5, "per_copy": 4, "total": 20, "confirm_data": "c:o",
               "expires_at": _from_now(**delta)}
    return render("screen", payload, language).text


def test_a_lot_expires_in_days_hours_or_minutes() -> None:
    assert _balance("en", days=12, minutes=30).endswith("5 coins, expires in 12 days")
    assert _balance("en", days=1, hours=1, seconds=-5).endswith("expires in 25 hours")  # under two days: hours
    assert _balance("en", minutes=1, seconds=-5).endswith("expires in 1 minute")
    assert _balance("ru", days=12, minutes=30).endswith("5 монет, сгорят через 12 дней")
    assert _balance("ru", days=21, minutes=30).endswith("сгорят через 21 день")
    assert _balance("ru", days=3, minutes=30).endswith("сгорят через 3 дня")
    assert "UTC" not in _balance("en", days=12) + _balance("ru", days=12)


def test_a_quote_holds_for_the_minutes_left() -> None:
    assert _quote("en", minutes=15, seconds=-5).endswith("The price holds for 15 minutes.")
    assert _quote("ru", minutes=1, seconds=-5).endswith("Цена действует ещё 1 минуту.")
    assert _quote("ru", minutes=22, seconds=-5).endswith("Цена действует ещё 22 минуты.")
    assert _quote("en", seconds=-30).endswith("The price holds for 1 minute.")  # a moment past: never "0"
