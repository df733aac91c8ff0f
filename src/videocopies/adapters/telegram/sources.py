"""Where edge puts a user's video, and where it finds a copy to send."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.objectstore.files import hash_file
from videocopies.domain.objects.keys import source_key


class SourceStore(Protocol):
    """Where a user's video goes before its event is complete in the inbox."""

    async def put_source(self, user_id: int, update_id: int, path: Path) -> tuple[str, int, str]: ...
    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        """Bring a stored object (a copy to send) to a local file."""
        ...


class SignedUrlSources:
    """No storage credentials: core signs a URL for each object."""

    def __init__(self, core: CoreClient) -> None:
        self._core = core

    async def put_source(self, user_id: int, update_id: int, path: Path) -> tuple[str, int, str]:
        size, sha256 = await asyncio.to_thread(hash_file, path)
        body = {"user_id": user_id, "update_id": update_id, "size": size, "sha256": sha256}
        signed = await self._core.call("POST", "/v1/sources/upload-url", body)
        await self._core.upload(signed["url"], signed["headers"], path, size)
        return signed["key"], size, sha256

    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        if url is None:
            raise RuntimeError(f"core gave no URL for {key}")
        await self._core.download(url, {}, path)


class StoreSources:
    """Edge beside core's local object store (one machine, the all-in-one role)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    async def put_source(self, user_id: int, update_id: int, path: Path) -> tuple[str, int, str]:
        key = source_key(user_id, update_id)
        size, sha256 = await self._store.put_file(key, path)
        return key, size, sha256

    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        await self._store.get_file(key, path)
