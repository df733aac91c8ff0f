"""Object stores: S3 (boto3) for deployments, and a directory tree as the embedded default."""

from videocopies.adapters.objectstore.errors import (
    ChecksumMismatch,
    InvalidKey,
    ObjectNotFound,
    ObjectStoreError,
    StorageUnavailable,
)
from videocopies.adapters.objectstore.files import ObjectInfo
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore

__all__ = [
    "ChecksumMismatch", "FilesystemObjectStore", "InvalidKey", "ObjectInfo", "ObjectNotFound", "ObjectStoreError",
    "S3ObjectStore", "StorageUnavailable",
]


def __getattr__(name: str) -> object:
    # boto3 costs a worker that stores locally tens of MiB; load it only when S3 is used.
    if name == "S3ObjectStore":
        from videocopies.adapters.objectstore.s3 import S3ObjectStore

        return S3ObjectStore
    raise AttributeError(name)
