"""The embedded default object store: a directory tree, written only through temp files and atomic renames."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from datetime import timedelta
from pathlib import Path

from videocopies.adapters.objectstore.errors import ChecksumMismatch, ObjectNotFound, StorageUnavailable
from videocopies.adapters.objectstore.files import TEMP_SUFFIX, ObjectInfo, copy_hashing, hash_file, open_temp_beside
from videocopies.adapters.objectstore.keys import check_key, check_prefix

SHA256_XATTR = "user.videocopies.sha256"
_MKDIR_ATTEMPTS = 3  # a concurrent delete may prune the directory we just made


class FilesystemObjectStore:
    """Objects are files at `root/key`. The SHA-256 is kept in an extended attribute where the
    filesystem allows one, and checked on every read."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()

    async def put_file(self, key: str, path: Path) -> tuple[int, str]:
        target = self._path(key)
        return await asyncio.to_thread(self._put, key, Path(path), target)

    def _put(self, key: str, source_path: Path, target: Path) -> tuple[int, str]:
        with source_path.open("rb") as source:  # a missing source is the caller's error, raised as is
            for attempt in range(_MKDIR_ATTEMPTS):
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with open_temp_beside(target) as (out, digest):
                        size = copy_hashing(source, out, digest)
                        _set_sha256(out.fileno(), digest.hexdigest())
                    return size, digest.hexdigest()
                except FileNotFoundError:
                    if attempt == _MKDIR_ATTEMPTS - 1:
                        raise StorageUnavailable(f"cannot create {target.parent}") from None
                    source.seek(0)
                except OSError as e:
                    raise StorageUnavailable(f"writing {key}: {e}") from e
        raise AssertionError("unreachable")

    async def get_file(self, key: str, path: Path) -> None:
        source = self._path(key)
        await asyncio.to_thread(self._get, key, source, Path(path))

    def _get(self, key: str, source_path: Path, target: Path) -> None:
        try:
            source = source_path.open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as e:
            raise ObjectNotFound(key) from e
        with source:
            expected = _get_sha256(source.fileno())
            with open_temp_beside(target) as (out, digest):
                copy_hashing(source, out, digest)
                if expected is not None and digest.hexdigest() != expected:
                    raise ChecksumMismatch(key, expected, digest.hexdigest())

    async def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)

        def head() -> ObjectInfo | None:
            try:
                with path.open("rb") as source:
                    return ObjectInfo(os.fstat(source.fileno()).st_size, _get_sha256(source.fileno()))
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return None

        info = await asyncio.to_thread(head)
        if info is not None and info.sha256 is None:  # no xattr support: compute it
            info = ObjectInfo(*await asyncio.to_thread(hash_file, path))
        return info

    async def delete(self, key: str) -> None:
        path = self._path(key)

        def delete() -> None:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                path.unlink()
            self._prune(path.parent)

        await asyncio.to_thread(delete)

    async def delete_prefix(self, prefix: str) -> int:
        directory = self.root / check_prefix(prefix)

        def delete_all() -> int:
            if not directory.is_dir():
                return 0
            count = sum(1 for p in directory.rglob("*") if p.is_file())
            shutil.rmtree(directory, ignore_errors=True)
            self._prune(directory.parent)
            return count

        return await asyncio.to_thread(delete_all)

    async def keys(self, prefix: str) -> list[str]:
        """Every key under `prefix/`; files still being written (temp files) are not objects yet."""
        directory = self.root / check_prefix(prefix)

        def listed() -> list[str]:
            if not directory.is_dir():
                return []
            return sorted(
                p.relative_to(self.root).as_posix() for p in directory.rglob("*")
                if p.is_file() and not p.name.endswith(TEMP_SUFFIX)
            )

        return await asyncio.to_thread(listed)

    def disk_usage(self) -> tuple[int, int]:
        """The store's disk: total and free bytes (the disk workers and edge may share with it)."""
        usage = shutil.disk_usage(self.root if self.root.exists() else self.root.parent)
        return usage.total, usage.free

    async def presigned_url(self, key: str, ttl: timedelta) -> str:
        """A `file://` URL, for local use only (the all-in-one role, tests): it grants nothing and never expires."""
        return self._path(key).as_uri()

    async def presigned_put_url(self, key: str, ttl: timedelta, sha256: str | None = None) -> str:
        """Same as `presigned_url`; writing through it bypasses the temp-file protocol."""
        return self._path(key).as_uri()

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _prune(self, directory: Path) -> None:
        """Remove directories left empty, up to (not including) the root."""
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent


def _set_sha256(fd: int, digest: str) -> None:
    with contextlib.suppress(OSError, AttributeError):  # not every filesystem (or OS) has user xattrs
        os.setxattr(fd, SHA256_XATTR, digest.encode())


def _get_sha256(fd: int) -> str | None:
    try:
        return os.getxattr(fd, SHA256_XATTR).decode()
    except (OSError, AttributeError):
        return None
