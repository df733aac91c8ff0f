"""The same cases run against the filesystem store and S3 (a real SeaweedFS checking signatures)."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from videocopies.adapters.objectstore import (
    ChecksumMismatch,
    FilesystemObjectStore,
    InvalidKey,
    ObjectInfo,
    ObjectNotFound,
    S3ObjectStore,
    StorageUnavailable,
)
from videocopies.adapters.objectstore.filesystem import SHA256_XATTR
from videocopies.embedded.seaweedfs import LocalSeaweed

from .objectstore_fixtures import big_file, closed_port, object_store, raw_s3, small_file, target_dir

__all__ = ["big_file", "object_store", "small_file", "target_dir"]  # fixtures, used by name

Store = FilesystemObjectStore | S3ObjectStore


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def only(directory: Path, *names: str) -> None:
    assert sorted(p.name for p in directory.iterdir()) == sorted(names)


@pytest.mark.parametrize("which", ["small_file", "big_file"])
async def test_round_trip_keeps_size_and_sha256(
    object_store: Store, which: str, request: pytest.FixtureRequest, target_dir: Path
) -> None:
    source: Path = request.getfixturevalue(which)
    size, digest = await object_store.put_file("orders/1/copy.mp4", source)
    assert (size, digest) == (source.stat().st_size, sha256(source))
    await object_store.get_file("orders/1/copy.mp4", target_dir / "copy.mp4")
    assert sha256(target_dir / "copy.mp4") == digest
    only(target_dir, "copy.mp4")
    assert await object_store.head("orders/1/copy.mp4") == ObjectInfo(size, digest)
    if isinstance(object_store, FilesystemObjectStore):
        only(object_store.root / "orders" / "1", "copy.mp4")  # no temp file left in the store either
    elif size > object_store.multipart_threshold:
        server: LocalSeaweed = request.getfixturevalue("seaweed")
        etag = raw_s3(server).head_object(Bucket=object_store.bucket, Key="orders/1/copy.mp4")["ETag"]  # type: ignore[attr-defined]
        assert etag.strip('"').endswith("-3")  # 20 MiB in 8 MiB parts


async def test_getting_a_missing_key_is_not_found_and_leaves_nothing(object_store: Store, target_dir: Path) -> None:
    with pytest.raises(ObjectNotFound) as refused:
        await object_store.get_file("orders/none.mp4", target_dir / "x.mp4")
    assert refused.value.key == "orders/none.mp4"
    only(target_dir)
    assert await object_store.head("orders/none.mp4") is None


async def test_delete_is_idempotent(object_store: Store, small_file: Path, target_dir: Path) -> None:
    await object_store.put_file("a/b.bin", small_file)
    await object_store.delete("a/b.bin")
    await object_store.delete("a/b.bin")
    await object_store.delete("never/was.bin")
    with pytest.raises(ObjectNotFound):
        await object_store.get_file("a/b.bin", target_dir / "b.bin")


async def test_a_put_overwrites(object_store: Store, small_file: Path, tmp_path: Path, target_dir: Path) -> None:
    second = tmp_path / "second.bin"
    second.write_bytes(b"the second version")
    await object_store.put_file("k.bin", small_file)
    await object_store.put_file("k.bin", second)
    await object_store.get_file("k.bin", target_dir / "k.bin")
    assert (target_dir / "k.bin").read_bytes() == b"the second version"


async def test_get_replaces_an_existing_target(object_store: Store, small_file: Path, target_dir: Path) -> None:
    (target_dir / "k.bin").write_bytes(b"stale")
    await object_store.put_file("k.bin", small_file)
    await object_store.get_file("k.bin", target_dir / "k.bin")
    assert (target_dir / "k.bin").read_bytes() == small_file.read_bytes()
    only(target_dir, "k.bin")


async def test_nested_prefixes_are_separate_and_deletable_together(
    object_store: Store, small_file: Path, tmp_path: Path, target_dir: Path
) -> None:
    other = tmp_path / "other.bin"
    other.write_bytes(b"other")
    await object_store.put_file("orders/1/copies/01.mp4", small_file)
    await object_store.put_file("orders/1/source.mp4", other)
    await object_store.put_file("orders/10/source.mp4", other)
    await object_store.get_file("orders/1/source.mp4", target_dir / "s.mp4")
    assert (target_dir / "s.mp4").read_bytes() == b"other"

    assert await object_store.delete_prefix("orders/1") == 2
    assert await object_store.head("orders/1/source.mp4") is None
    assert await object_store.head("orders/10/source.mp4") is not None  # a prefix is a directory, not a string
    assert await object_store.delete_prefix("orders/1") == 0


@pytest.mark.parametrize("key", ["", "/etc/passwd", "../escape", "a/../../b", "a//b", "a/./b", "a/", "a\\b", "a\x00b"])
async def test_a_key_that_could_escape_is_refused(
    object_store: Store, key: str, small_file: Path, target_dir: Path, tmp_path: Path
) -> None:
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for attempt in (
        object_store.put_file(key, small_file),
        object_store.get_file(key, target_dir / "x"),
        object_store.delete(key),
        object_store.presigned_url(key, timedelta(minutes=1)),
    ):
        with pytest.raises(InvalidKey):
            await attempt
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


async def test_a_corrupted_object_is_refused_and_leaves_nothing(
    object_store: Store, small_file: Path, target_dir: Path, request: pytest.FixtureRequest
) -> None:
    await object_store.put_file("c.bin", small_file)
    if isinstance(object_store, FilesystemObjectStore):
        stored = object_store.root / "c.bin"
        try:
            os.getxattr(stored, SHA256_XATTR)
        except OSError:
            pytest.skip("this filesystem keeps no checksum (no user xattrs)")
        with stored.open("r+b") as f:  # rewrite in place: the recorded checksum stays
            f.write(b"X")
    else:
        server: LocalSeaweed = request.getfixturevalue("seaweed")
        raw_s3(server).put_object(  # type: ignore[attr-defined]
            Bucket=object_store.bucket, Key="c.bin", Body=b"not it", Metadata={"sha256": "0" * 64}
        )
    with pytest.raises(ChecksumMismatch):
        await object_store.get_file("c.bin", target_dir / "c.bin")
    only(target_dir)


async def test_presigned_get_downloads_and_a_tampered_one_is_refused(
    object_store: Store, small_file: Path
) -> None:
    await object_store.put_file("p/q.bin", small_file)
    url = await object_store.presigned_url("p/q.bin", timedelta(minutes=5))
    if isinstance(object_store, FilesystemObjectStore):
        assert url.startswith("file://")
        assert Path(url.removeprefix("file://")).read_bytes() == small_file.read_bytes()
        return
    async with httpx.AsyncClient() as http:
        assert (await http.get(url)).content == small_file.read_bytes()
        signature = url.rpartition("X-Amz-Signature=")[2][:64]
        tampered = url.replace(signature, signature[:-1] + ("0" if signature[-1] != "0" else "1"))
        assert tampered != url
        assert (await http.get(tampered)).status_code == 403


async def test_presigned_put_uploads(object_store: Store, target_dir: Path) -> None:
    if not isinstance(object_store, S3ObjectStore):
        pytest.skip("a file:// URL takes no uploads")
    url = await object_store.presigned_put_url("up/load.bin", timedelta(minutes=5))
    async with httpx.AsyncClient() as http:
        assert (await http.put(url, content=b"uploaded")).status_code == 200
    await object_store.get_file("up/load.bin", target_dir / "u.bin")  # no checksum metadata: accepted as is
    assert (target_dir / "u.bin").read_bytes() == b"uploaded"


async def test_a_wrong_secret_is_rejected(seaweed: LocalSeaweed, small_file: Path) -> None:
    intruder = S3ObjectStore("anything", seaweed.endpoint_url, seaweed.access_key, "not-the-secret")
    with pytest.raises(StorageUnavailable, match="SignatureDoesNotMatch"):
        await intruder.put_file("x.bin", small_file)


async def test_an_unreachable_store_is_unavailable(small_file: Path) -> None:
    store = S3ObjectStore("b-x", f"http://127.0.0.1:{closed_port()}", "a", "b")
    with pytest.raises(StorageUnavailable):
        await store.delete("x.bin")


async def test_deleting_prunes_empty_directories(small_file: Path, tmp_path: Path) -> None:
    store = FilesystemObjectStore(tmp_path / "store")
    await store.put_file("a/b/c/d.bin", small_file)
    await store.put_file("a/keep.bin", small_file)
    await store.delete("a/b/c/d.bin")
    only(store.root / "a", "keep.bin")
    await store.delete("a/keep.bin")
    only(store.root)
