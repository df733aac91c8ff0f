"""Fixtures for the object-store contract: one SeaweedFS per session, a fresh bucket or directory per test."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import boto3
import pytest

from videocopies.adapters.objectstore import FilesystemObjectStore, S3ObjectStore
from videocopies.embedded.seaweedfs import LocalSeaweed

MiB = 1024 * 1024
BIG = 20 * MiB


def raw_s3(server: LocalSeaweed, secret_key: str | None = None) -> object:
    """A plain boto3 client, for doing what the adapter must never do (tampering, wrong secrets)."""
    return boto3.client(
        "s3", endpoint_url=server.endpoint_url, region_name="us-east-1",
        aws_access_key_id=server.access_key, aws_secret_access_key=secret_key or server.secret_key,
    )


@pytest.fixture(params=["filesystem", "s3"])
async def object_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[FilesystemObjectStore | S3ObjectStore]:
    if request.param == "filesystem":
        yield FilesystemObjectStore(tmp_path / "store")
        return
    server: LocalSeaweed = request.getfixturevalue("seaweed")
    store = S3ObjectStore(
        f"t-{uuid.uuid4().hex[:16]}", server.endpoint_url, server.access_key, server.secret_key
    )
    await store.ensure_bucket()
    try:
        yield store
    finally:
        raw_s3(server).delete_bucket(Bucket=store.bucket)  # type: ignore[attr-defined]
        store.close()


@pytest.fixture(scope="session")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 MiB of random bytes: over the multipart threshold, and nothing a store could compress or dedupe."""
    path = tmp_path_factory.mktemp("objects") / "big.bin"
    with path.open("wb") as out:
        for _ in range(BIG // MiB):
            out.write(os.urandom(MiB))
    return path


@pytest.fixture
def small_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.bin"
    path.write_bytes(b"a small object\n" * 10)
    return path


@pytest.fixture
def target_dir(tmp_path: Path) -> Path:
    """Where gets land; tests check that nothing but the target is ever left here."""
    path = tmp_path / "downloads"
    path.mkdir()
    return path


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
