"""The confirm button: short enough for Telegram's 64 bytes of callback data, and bound by a
MAC to the quote it confirms and to the terms it repeats."""

from __future__ import annotations

from videocopies.domain.pricing import QuoteKeys

_BUTTON_MAC_BYTES = 12  # with the key id, a button stays well under Telegram's 64 bytes


def _button_terms(quote_id: str, terms: str) -> bytes:
    return f"confirm:{quote_id}:{terms}".encode()


def confirm_mac(keys: QuoteKeys, quote_id: str, terms: str = "") -> str:
    """A short MAC for the confirm button (`<key id>.<96 bits>`): the full quote token does not
    fit in 64 bytes, so the button names the stored quote (and repeats its copies and total for
    the reply) and proves core issued the button for exactly that."""
    return keys.sign(_button_terms(quote_id, terms), _BUTTON_MAC_BYTES)


def confirm_data(keys: QuoteKeys, quote_id: str, copies: int, total: int) -> str:
    terms = f"{copies}:{total}"
    return f"c:{quote_id}:{terms}:{confirm_mac(keys, quote_id, terms)}"


def confirm_genuine(keys: QuoteKeys, quote_id: str, terms: str, mac: str) -> bool:
    """Whether core issued this confirm button for this quote and these terms."""
    return keys.verify(mac, _button_terms(quote_id, terms), _BUTTON_MAC_BYTES)
