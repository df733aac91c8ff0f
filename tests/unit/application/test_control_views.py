"""The panel's view models: an hour of minutes with nothing left out, balances from lots and
reservations, and servers that are real hosts with known roles."""

from datetime import UTC, datetime, timedelta

import pytest

from videocopies.application.control import (
    Ledger,
    LotView,
    MinuteCount,
    MinuteLatency,
    ReservationView,
    latency_series,
    minutes,
    throughput_series,
)
from videocopies.application.inventory import InvalidServer, Server

NOW = datetime(2026, 5, 1, 10, 30, 42, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def test_the_window_is_sixty_whole_minutes_ending_with_the_current_one() -> None:
    window = minutes(NOW)
    assert len(window) == 60
    assert window[-1] == datetime(2026, 5, 1, 10, 30, tzinfo=UTC)
    assert window[0] == datetime(2026, 5, 1, 9, 31, tzinfo=UTC)
    assert all(b - a == MINUTE for a, b in zip(window, window[1:], strict=False))


def test_a_minute_without_copies_counts_zero() -> None:
    last = minutes(NOW)[-1]
    series = throughput_series([MinuteCount(last, 7), MinuteCount(last - 2 * MINUTE, 3)], NOW)
    values = [p.value for p in series.points]
    assert values[-3:] == [3.0, 0.0, 7.0] and sum(values) == 10.0


def test_a_minute_without_a_first_copy_has_no_latency_rather_than_zero() -> None:
    last = minutes(NOW)[-1]
    p50, p95 = latency_series([MinuteLatency(last, 1.5, 4.0, 3)], NOW)
    assert [p.value for p in p50.points[-2:]] == [None, 1.5]
    assert p95.points[-1].value == 4.0 and p95.name == "p95"


def test_rows_outside_the_window_are_not_drawn() -> None:
    series = throughput_series([MinuteCount(minutes(NOW)[0] - MINUTE, 99)], NOW)
    assert sum(p.value or 0 for p in series.points) == 0


def test_a_ledger_adds_up_available_and_what_open_orders_still_hold() -> None:
    lot = LotView("l1", "start", 50, NOW, None, available=30, debited=8, expired=0)
    ledger = Ledger(
        1,
        (lot,),
        (ReservationView("o1", 20, 8, 0, True, ()), ReservationView("o0", 10, 10, 0, False, ())),
    )
    assert (ledger.available, ledger.reserved, lot.held) == (30, 12, 12)


@pytest.mark.parametrize("host", ["core-1", "db.example.internal", "10.0.0.7", "::1", "WORKER-2.lan"])
def test_hostnames_and_addresses_are_accepted(host: str) -> None:
    assert Server(host, ("worker",)).host == host.lower()


@pytest.mark.parametrize("host", ["", "a b", "-bad", "bad-", "x" * 64, "1.2.3.999", "evil<script>", "a..b"])
def test_anything_else_is_refused_as_a_host(host: str) -> None:
    with pytest.raises(InvalidServer) as refused:
        Server(host, ("worker",))
    assert refused.value.field == "host"


def test_roles_come_from_the_known_ones_in_a_fixed_order() -> None:
    assert Server("h", ("worker", "core", "core")).roles == ("core", "worker")
    with pytest.raises(InvalidServer):
        Server("h", ())
    with pytest.raises(InvalidServer):
        Server("h", ("miner",))


def test_a_note_is_one_short_line() -> None:
    assert Server("h", ("edge",), "  a\nnote  " + "x" * 300).note.startswith("a note")
    assert len(Server("h", ("edge",), "x" * 300).note) == 200
