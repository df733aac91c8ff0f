"""Object keys both stores accept: relative, '/'-separated, no empty, '.' or '..' parts."""

from __future__ import annotations

from videocopies.adapters.objectstore.errors import InvalidKey

MAX_KEY_BYTES = 1024  # S3's limit, applied to every store so keys stay portable


def check_key(key: str) -> str:
    if not key:
        raise InvalidKey(key, "empty")
    if len(key.encode()) > MAX_KEY_BYTES:
        raise InvalidKey(key, f"longer than {MAX_KEY_BYTES} bytes")
    if key.startswith("/"):
        raise InvalidKey(key, "absolute")
    if "\\" in key or any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise InvalidKey(key, "backslash or control character")
    for part in key.split("/"):
        if part in ("", ".", ".."):
            raise InvalidKey(key, f"part {part!r} not allowed")
    return key


def check_prefix(prefix: str) -> str:
    """A prefix is a key followed by '/', so 'a/b' never matches 'a/bc'."""
    check_key(prefix.removesuffix("/"))
    return prefix.removesuffix("/") + "/"
