"""Object stores: S3 (boto3) for deployments, a directory tree as the embedded default, and a
private SeaweedFS for tests and the all-in-one role."""

from videocopies.adapters.objectstore.errors import (
    ChecksumMismatch,
    InvalidKey,
    ObjectNotFound,
    ObjectStoreError,
    StorageUnavailable,
)
from videocopies.adapters.objectstore.files import ObjectInfo
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.objectstore.seaweed import LocalSeaweed, SeaweedError

__all__ = [
    "ChecksumMismatch", "FilesystemObjectStore", "InvalidKey", "LocalSeaweed", "ObjectInfo", "ObjectNotFound",
    "ObjectStoreError", "S3ObjectStore", "SeaweedError", "StorageUnavailable",
]


def __getattr__(name: str) -> object:
    # boto3 costs a worker that stores locally tens of MiB; load it only when S3 is used.
    if name == "S3ObjectStore":
        from videocopies.adapters.objectstore.s3 import S3ObjectStore

        return S3ObjectStore
    raise AttributeError(name)
