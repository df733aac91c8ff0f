"""Where bench/worker_throughput.py keeps the copies' sources and results: core's local store,
which the workers share (`--store local`), or SeaweedFS's S3, which the workers reach only
through the URLs core signs for each job, as on many hosts (`--store s3`)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import httpx
import uvloop
from prometheus_client.parser import text_string_to_metric_families

from videocopies.adapters.objectstore import FilesystemObjectStore, S3ObjectStore
from videocopies.embedded.seaweedfs import LocalSeaweed


class Store(Protocol):
    core_env: dict[str, str]  # what core is started with
    worker_env: dict[str, str]  # what each worker is started with

    async def put_file(self, key: str, path: Path) -> tuple[int, str]: ...


class LocalStore:
    def __init__(self, directory: Path) -> None:
        self._store = FilesystemObjectStore(directory)
        self.core_env = self.worker_env = {"VIDEOCOPIES_STORE_DIR": str(directory)}

    async def put_file(self, key: str, path: Path) -> tuple[int, str]:
        return await self._store.put_file(key, path)


class S3Store:
    def __init__(self, seaweed: LocalSeaweed) -> None:
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        self._store = S3ObjectStore(bucket, seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
        uvloop.run(self._store.ensure_bucket())
        self.core_env = {
            "VIDEOCOPIES_S3_ENDPOINT": seaweed.endpoint_url, "VIDEOCOPIES_S3_BUCKET": bucket,
            "VIDEOCOPIES_S3_ACCESS_KEY": seaweed.access_key, "VIDEOCOPIES_S3_SECRET_KEY": seaweed.secret_key,
        }
        self.worker_env: dict[str, str] = {}  # no credentials: core signs a URL for every object a job moves

    async def put_file(self, key: str, path: Path) -> tuple[int, str]:
        return await self._store.put_file(key, path)


@contextlib.contextmanager
def opened(kind: str, scratch: Path) -> Iterator[Store]:
    if kind == "local":
        yield LocalStore(scratch / "objects")
        return
    with LocalSeaweed() as seaweed:
        yield S3Store(seaweed)


def worker_figures(core_url: str) -> dict[str, dict[str, float]]:
    """Each worker's own figures as core's /metrics shows them, by worker (node) name."""
    text = httpx.get(f"{core_url}/metrics", timeout=10).text
    figures: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("videocopies_worker_"):
            for sample in family.samples:
                what = sample.name.removeprefix("videocopies_worker_")
                figures.setdefault(sample.labels["node"], {})[what] = sample.value
    return figures
