"""An object store in memory: for unit tests of the worker and the application."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path


class ObjectMissing(KeyError):
    pass


class InMemoryObjectStore:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    async def put_file(self, key: str, path: Path) -> tuple[int, str]:
        data = path.read_bytes()
        self.objects[key] = data
        return len(data), hashlib.sha256(data).hexdigest()

    async def get_file(self, key: str, path: Path) -> None:
        if key not in self.objects:
            raise ObjectMissing(key)
        path.write_bytes(self.objects[key])

    async def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    async def presigned_url(self, key: str, ttl: timedelta) -> str:
        return f"memory://{key}"

    async def presigned_put_url(self, key: str, ttl: timedelta, sha256: str | None = None) -> str:
        return f"memory://{key}"
