"""Where each object lives in the store: the one spelling of the key layout.

Keys are written into the database (an order's source, a checkpoint's copy), so the layout
of a key already stored can never change. `look_up_objects` in sql/objects.sql reads the
same shapes back in SQL to tell a stray from an object whose row is still to come.
"""

from __future__ import annotations

SOURCES = "sources"
COPIES = "copies"
PREFIXES = (SOURCES, COPIES)  # what the service stores; anything else in the store is left alone

# A source key edge may name: under a user's prefix, one plain file name.
SOURCE_KEY_PATTERN = rf"^{SOURCES}/[0-9]+/[A-Za-z0-9._-]+$"


def user_sources(user_id: int) -> str:
    """The prefix of every source a user sent: a node may name no other user's source."""
    return f"{SOURCES}/{user_id}/"


def source_key(user_id: int, update_id: int) -> str:
    """The video a user sent in one Telegram update."""
    return f"{user_sources(user_id)}{update_id}.mp4"


def named_source_key(user_id: int, file_name: str) -> str:
    """A source that came from a file rather than an update (copies made locally)."""
    return f"{user_sources(user_id)}{file_name}"


def is_source_of(key: str, user_id: int) -> bool:
    return key.startswith(user_sources(user_id))


def copy_key(order_id: str, index: int, token: str) -> str:
    """A key per owner: a worker that lost its lease can never overwrite a stored copy."""
    return f"{COPIES}/{order_id}/{index}-{token[:12]}.mp4"
