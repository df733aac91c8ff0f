"""What a user may be told about why: a code from a fixed list, never the text an exception,
FFmpeg or an operator wrote (that stays with the job or the grant record, for operators).
The screens have words for each code; an unknown code reads as the generic one."""

from __future__ import annotations

FAILURES = (
    "source_unreadable", "too_long", "rendering_failed", "storage_full", "timed_out", "operator_cancelled",
    "unknown",
)
GRANTS = ("gift", "compensation", "promotion")

# The first rule whose words all appear in the raw reason (lower-cased) gives its code.
_FAILURE_RULES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("bad source", "long"), "too_long"),
    (("bad source", "duration"), "too_long"),
    (("bad source",), "source_unreadable"),
    (("unusablemedia",), "source_unreadable"),
    (("unreadable",), "source_unreadable"),
    (("operator",), "operator_cancelled"),
    (("notenoughdisk",), "storage_full"),
    (("no space",), "storage_full"),
    (("disk",), "storage_full"),
    (("timeout",), "timed_out"),
    (("timed out",), "timed_out"),
    (("time budget",), "timed_out"),
    (("lease expired",), "timed_out"),
    (("transcode",), "rendering_failed"),
    (("ffmpeg",), "rendering_failed"),
    (("render",), "rendering_failed"),
    (("encod",), "rendering_failed"),
    (("decod",), "rendering_failed"),
)
_GRANT_RULES: tuple[tuple[str, str], ...] = (
    ("compensat", "compensation"), ("apolog", "compensation"), ("sorry", "compensation"),
    ("incident", "compensation"), ("outage", "compensation"), ("promo", "promotion"),
    ("campaign", "promotion"),
)


def failure_code(raw: str | None) -> str:
    """The code of why an order failed, from whatever the worker or the lease sweep wrote."""
    if raw in FAILURES:
        return raw
    said = (raw or "").lower()
    for words, code in _FAILURE_RULES:
        if all(word in said for word in words):
            return code
    return "unknown"


def grant_code(raw: str | None) -> str | None:
    """The code of why coins were given by hand (None: no reason was given)."""
    if not raw:
        return None
    if raw in GRANTS:
        return raw
    said = raw.lower()
    return next((code for word, code in _GRANT_RULES if word in said), "gift")
