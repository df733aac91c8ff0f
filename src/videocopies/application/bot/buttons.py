"""The buttons' callback data, short enough for Telegram's 64 bytes: a choice of copies names
the video it was under; the confirm button is bound by a MAC to the quote it confirms and to
the terms it repeats."""

from __future__ import annotations

import re

from videocopies.domain.objects.keys import is_source_of, user_sources
from videocopies.domain.pricing import QuoteKeys

_VIDEO_REF = re.compile(r"[A-Za-z0-9._-]{1,48}")  # with "n:10:", well under 64 bytes

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


def video_ref(user_id: int, source_key: str | None) -> str | None:
    """What a choice button names its video by: the file name under the user's sources (the
    user is the one who presses, so the key cannot name another user's video). None when the
    name would not fit: the button then means the user's latest video, as buttons did before."""
    if not source_key or not is_source_of(source_key, user_id):
        return None
    name = source_key[len(user_sources(user_id)):]
    return name if _VIDEO_REF.fullmatch(name) else None


def video_key(user_id: int, ref: str) -> str | None:
    """The source a choice button's reference names, for the user who pressed it."""
    return f"{user_sources(user_id)}{ref}" if _VIDEO_REF.fullmatch(ref) else None
