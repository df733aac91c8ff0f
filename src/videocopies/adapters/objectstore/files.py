"""Local file helpers both stores share: hashing while reading, writing through a temp file renamed when complete."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import attrs

CHUNK = 1024 * 1024
TEMP_SUFFIX = ".part"


@attrs.frozen
class ObjectInfo:
    size: int
    sha256: str | None  # None when something other than our adapters stored the object


def hash_file(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def copy_hashing(source: BinaryIO, out: BinaryIO, digest: hashlib._Hash) -> int:
    size = 0
    while chunk := source.read(CHUNK):
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
    return size


def temp_name(path: Path) -> Path:
    """Hidden, beside the target (same filesystem, so the rename is atomic), recognisable as ours."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


@contextlib.contextmanager
def open_temp_beside(path: Path) -> Iterator[tuple[BinaryIO, hashlib._Hash]]:
    """Yields a temp file and a SHA-256 to feed; on a clean exit the file is synced and renamed to `path`,
    on any error it is removed."""
    temp = temp_name(path)
    try:
        with temp.open("xb") as out:
            yield out, hashlib.sha256()
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    # Makes the rename itself durable; some filesystems refuse to open a directory, which is fine.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
