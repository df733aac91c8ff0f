"""The quote keys: the one that signs now, and the one it replaced, still accepted while a rotation runs."""

from __future__ import annotations

import base64
import hashlib
import hmac

import attrs

from videocopies.domain.shared import DomainError

MIN_SECRET_BYTES = 32
_ID_DOMAIN = b"videocopies quote key id:"


@attrs.define
class QuoteKeyTooShort(DomainError):
    length: int
    minimum: int = MIN_SECRET_BYTES


@attrs.define
class QuoteKeysClash(DomainError):
    """The previous key is the current one (or has its id): a rotation needs two keys."""

    key_id: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _secret(value: bytes) -> bytes:
    if len(value) < MIN_SECRET_BYTES:
        raise QuoteKeyTooShort(len(value))
    return value


@attrs.frozen(repr=False)
class QuoteKey:
    """A secret of at least 32 bytes, and the short public id a signature names it by
    (derived from the secret, so an operator cannot give two keys the same id by mistake)."""

    secret: bytes = attrs.field(converter=_secret)
    key_id: str = attrs.field(init=False)

    @key_id.default
    def _derived_id(self) -> str:
        return _b64(hashlib.sha256(_ID_DOMAIN + self.secret).digest()[:3])

    def __repr__(self) -> str:  # never the secret, in a log or a traceback
        return f"QuoteKey({self.key_id!r})"

    def mac(self, message: bytes, size: int) -> str:
        return _b64(hmac.digest(self.secret, message, "sha256")[:size])


@attrs.frozen
class QuoteKeys:
    """Signatures read `<key id>.<mac>`; verification takes the key the id names, and only
    it. A signature naming any other id (an unknown or retired key) is refused."""

    current: QuoteKey
    previous: QuoteKey | None = None

    def __attrs_post_init__(self) -> None:
        if self.previous is not None and self.previous.key_id == self.current.key_id:
            raise QuoteKeysClash(self.current.key_id)

    @classmethod
    def of(cls, current: bytes, previous: bytes | None = None) -> QuoteKeys:
        return cls(QuoteKey(current), QuoteKey(previous) if previous is not None else None)

    def sign(self, message: bytes, size: int) -> str:
        """A MAC of `size` bytes with the current key, URL-safe, named by the key's id."""
        return f"{self.current.key_id}.{self.current.mac(message, size)}"

    def verify(self, signature: str, message: bytes, size: int) -> bool:
        key_id, dot, mac = signature.partition(".")
        key = self.find(key_id)
        return bool(dot) and key is not None and hmac.compare_digest(mac.encode(), key.mac(message, size).encode())

    def find(self, key_id: str) -> QuoteKey | None:
        return next((k for k in (self.current, self.previous) if k is not None and k.key_id == key_id), None)
