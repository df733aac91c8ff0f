"""The quote secret: core refuses one shorter than 32 bytes at start, naming the variable, and a
signature is checked only with the key its id names (no key is tried blindly)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from videocopies.adapters.system import RandomIds
from videocopies.application.bot.conversation import confirm_data
from videocopies.domain.pricing import PricingPolicy, Quote, QuoteForged, QuoteKeys, Tariff
from videocopies.domain.shared import OrderId, UserId
from videocopies.embedded.postgres import LocalPostgres

LONG_ENOUGH = "k" * 32
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TARIFF = Tariff(version=1, per_copy={1: 5, 5: 4, 10: 3})


def _core(url: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`videocopies core` on a good database; it must stop on its own (a core that starts is killed)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VIDEOCOPIES_QUOTE_SECRET")}
    environ |= {"VIDEOCOPIES_DATABASE_URL": url, "VIDEOCOPIES_CORE_PORT": "0", **env}
    try:
        return subprocess.run([sys.executable, "-m", "videocopies.cli", "core"], env=environ,
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("core started with a quote secret it should have refused")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"VIDEOCOPIES_QUOTE_SECRET": "s" * 31}, "VIDEOCOPIES_QUOTE_SECRET is 31 bytes"),
        ({"VIDEOCOPIES_QUOTE_SECRET": "secret"}, "VIDEOCOPIES_QUOTE_SECRET is 6 bytes"),
        ({"VIDEOCOPIES_QUOTE_SECRET": LONG_ENOUGH, "VIDEOCOPIES_QUOTE_SECRET_PREVIOUS": "old"},
         "VIDEOCOPIES_QUOTE_SECRET_PREVIOUS is 3 bytes"),
    ],
)
def test_core_refuses_a_quote_secret_shorter_than_32_bytes_naming_the_variable(
    pg_server: LocalPostgres, database: str, env: dict[str, str], named: str
) -> None:
    result = _core(pg_server.url(database), **env)

    assert result.returncode != 0
    assert named in result.stderr and "at least 32" in result.stderr


def _quote(keys: QuoteKeys) -> Quote:
    return Quote.issue(OrderId("q1"), UserId(7), "sources/7/a.mp4", 5, TARIFF, T0, timedelta(minutes=10), keys)


def test_a_signature_is_checked_only_with_the_key_its_id_names() -> None:
    old, new = b"o" * 32, b"n" * 32
    rotating = QuoteKeys.of(new, previous=old)
    by_current = _quote(rotating)
    current_id, mac = by_current.token.split(".")
    previous_id = rotating.previous.key_id if rotating.previous else ""

    by_current.verify(rotating, T0, PricingPolicy(TARIFF), UserId(7))
    _quote(QuoteKeys.of(old)).verify(rotating, T0, PricingPolicy(TARIFF), UserId(7))  # signed before the rotation
    for token in (f"{previous_id}.{mac}", mac, f"zzzz.{mac}", f".{mac}", f"{current_id}.{mac}é"):
        with pytest.raises(QuoteForged):
            attrs.evolve(by_current, token=token).verify(rotating, T0, PricingPolicy(TARIFF), UserId(7))


def test_a_confirm_button_with_its_key_id_fits_in_telegrams_64_bytes() -> None:
    keys = QuoteKeys.of(b"n" * 32, previous=b"o" * 32)
    longest = confirm_data(keys, RandomIds().order_id(), 10, 99_999)

    assert len(longest.encode()) <= 64
    assert longest.rsplit(":", 1)[1].startswith(keys.current.key_id + ".")
