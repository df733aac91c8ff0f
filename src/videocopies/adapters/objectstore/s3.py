"""S3 (boto3) object store: every blocking call runs in a thread; each object carries its SHA-256 as metadata."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from videocopies.adapters.objectstore.errors import ChecksumMismatch, ObjectNotFound, StorageUnavailable
from videocopies.adapters.objectstore.files import ObjectInfo, hash_file, open_temp_beside
from videocopies.adapters.objectstore.keys import check_key, check_prefix

MiB = 1024 * 1024
SHA256_META = "sha256"  # sent as x-amz-meta-sha256
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_CHUNK = MiB

T = TypeVar("T")


class S3ObjectStore:
    """One bucket. The client is built once and shared by the worker threads (boto3 clients are thread-safe)."""

    def __init__(
        self,
        bucket: str,
        endpoint_url: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        region: str = "us-east-1",
        multipart_threshold: int = 8 * MiB,
        max_concurrency: int = 4,
    ) -> None:
        self.bucket = bucket
        self.multipart_threshold = multipart_threshold
        self._client = boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            region_name=region,
            config=Config(
                signature_version="s3v4",
                s3={"addressing_style": "path"},
                retries={"max_attempts": 3, "mode": "standard"},
                connect_timeout=5,
                read_timeout=60,
                max_pool_connections=max(10, max_concurrency * 2),
            ),
        )
        self._transfer = TransferConfig(
            multipart_threshold=multipart_threshold, multipart_chunksize=multipart_threshold,
            max_concurrency=max_concurrency,
        )

    async def ensure_bucket(self) -> None:
        def ensure() -> None:
            try:
                self._client.head_bucket(Bucket=self.bucket)
            except ClientError as e:
                if _code(e) not in _NOT_FOUND | {"NoSuchBucket"}:
                    raise
                with contextlib.suppress(self._client.exceptions.BucketAlreadyOwnedByYou):
                    self._client.create_bucket(Bucket=self.bucket)

        await self._call(self.bucket, ensure)

    async def put_file(self, key: str, path: Path) -> tuple[int, str]:
        """Hash first, then upload: the digest must be in the metadata sent before the first byte."""
        check_key(key)

        def put() -> tuple[int, str]:
            size, digest = hash_file(path)
            self._client.upload_file(
                str(path), self.bucket, key, Config=self._transfer, ExtraArgs={"Metadata": {SHA256_META: digest}}
            )
            return size, digest

        return await self._call(key, put)

    async def get_file(self, key: str, path: Path) -> None:
        """Stream into a temp file beside `path`, check the SHA-256, then rename; a failure leaves nothing."""
        check_key(key)

        def get() -> None:
            response = self._client.get_object(Bucket=self.bucket, Key=key)
            expected = response.get("Metadata", {}).get(SHA256_META)
            with contextlib.closing(response["Body"]) as body, open_temp_beside(path) as (out, digest):
                for chunk in body.iter_chunks(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                if expected is not None and digest.hexdigest() != expected:
                    raise ChecksumMismatch(key, expected, digest.hexdigest())

        await self._call(key, get)

    async def head(self, key: str) -> ObjectInfo | None:
        check_key(key)

        def head() -> ObjectInfo | None:
            try:
                response = self._client.head_object(Bucket=self.bucket, Key=key)
            except ClientError as e:
                if _code(e) in _NOT_FOUND:
                    return None
                raise
            return ObjectInfo(response["ContentLength"], response.get("Metadata", {}).get(SHA256_META))

        return await self._call(key, head)

    async def delete(self, key: str) -> None:
        check_key(key)
        await self._call(key, lambda: self._client.delete_object(Bucket=self.bucket, Key=key))

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix/`; returns how many there were."""
        prefix = check_prefix(prefix)

        def delete_all() -> int:
            count = 0
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
                keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
                if keys:
                    self._client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                    count += len(keys)
            return count

        return await self._call(prefix, delete_all)

    async def keys(self, prefix: str) -> list[str]:
        """Every key under `prefix/`."""
        prefix = check_prefix(prefix)

        def listed() -> list[str]:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
            return [item["Key"] for page in pages for item in page.get("Contents", [])]

        return await self._call(prefix, listed)

    async def presigned_url(self, key: str, ttl: timedelta) -> str:
        return await self._presign("get_object", key, ttl)

    async def presigned_put_url(self, key: str, ttl: timedelta, sha256: str | None = None) -> str:
        """An upload URL. With `sha256` the upload must send it as `x-amz-meta-sha256` (the
        header is signed), so the stored object carries the digest its reader checks."""
        return await self._presign("put_object", key, ttl, {"Metadata": {SHA256_META: sha256}} if sha256 else {})

    async def _presign(self, method: str, key: str, ttl: timedelta, extra: dict[str, Any] | None = None) -> str:
        check_key(key)
        params = {"Bucket": self.bucket, "Key": key, **(extra or {})}
        seconds = max(1, int(ttl.total_seconds()))
        return await self._call(
            key, lambda: self._client.generate_presigned_url(method, Params=params, ExpiresIn=seconds)
        )

    def close(self) -> None:
        self._client.close()

    async def _call(self, key: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except ClientError as e:
            if _code(e) in _NOT_FOUND:
                raise ObjectNotFound(key) from e
            raise StorageUnavailable(f"{_code(e)}: {e}") from e
        except (BotoCoreError, Boto3Error, OSError) as e:
            if isinstance(e, OSError) and not isinstance(e, ConnectionError | TimeoutError):
                raise  # a local file problem (missing source, full disk) is the caller's, not the store's
            raise StorageUnavailable(str(e)) from e


def _code(error: ClientError) -> str:
    response: dict[str, Any] = error.response
    return str(response.get("Error", {}).get("Code", ""))
