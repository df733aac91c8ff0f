"""Which core URLs a node talks to in clear, and where core may send its nodes."""

from __future__ import annotations

import pytest

from videocopies.adapters.http.core_urls import (
    PlainHttpRefused,
    check_core_url,
    hosts_from,
    is_loopback,
    relocation_refusal,
)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["10.0.0.1", "core.example", "evil.localhost", "127.0.0.1.nip.io", "0.0.0.0", ""])
def test_hosts_elsewhere(host: str) -> None:
    assert not is_loopback(host)


def test_a_node_talks_plain_http_only_on_its_machine_unless_told() -> None:
    check_core_url("http://127.0.0.1:8700", allow_plain_http=False)
    check_core_url("https://core.example", allow_plain_http=False)
    check_core_url("http://core.example:8700", allow_plain_http=True)
    for url in ("http://core.example:8700", "http://127.0.0.1@core.example/"):
        with pytest.raises(PlainHttpRefused, match="VIDEOCOPIES_ALLOW_PLAIN_HTTP"):
            check_core_url(url, allow_plain_http=False)


def test_relocation_goes_to_listed_https_hosts_or_loopback() -> None:
    listed = hosts_from("green.example, Blue.example  ")
    assert listed == {"green.example", "blue.example"}
    assert relocation_refusal("https://green.example:8443/core", listed) is None
    assert relocation_refusal("https://BLUE.example", listed) is None
    assert relocation_refusal("http://127.0.0.1:8701", frozenset()) is None
    assert relocation_refusal("http://green.example", listed)[0] == 422  # type: ignore[index]
    assert relocation_refusal("https://evil.example", listed)[0] == 403  # type: ignore[index]
    assert relocation_refusal("https://green.example", frozenset())[0] == 403  # type: ignore[index]
