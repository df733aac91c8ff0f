"""What an object store can refuse or fail at; adapters translate their libraries' errors into these."""

from __future__ import annotations

import attrs

from videocopies.domain.shared import describe


@attrs.define
class ObjectStoreError(Exception):
    def __str__(self) -> str:
        return describe(self)


@attrs.define
class ObjectNotFound(ObjectStoreError):
    key: str


@attrs.define
class InvalidKey(ObjectStoreError):
    """A key that could name something outside the store (`..`, absolute, empty parts)."""

    key: str
    reason: str


@attrs.define
class ChecksumMismatch(ObjectStoreError):
    """What was read back is not what was stored; nothing was written at the target."""

    key: str
    expected: str
    actual: str


@attrs.define
class StorageUnavailable(ObjectStoreError):
    """The store could not be reached or refused us (network, credentials, disk)."""

    reason: str
