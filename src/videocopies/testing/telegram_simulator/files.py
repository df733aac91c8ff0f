"""Files the simulator holds: each content stored once on disk, many file_ids may point at it."""

from __future__ import annotations

import hashlib
import mimetypes
import os
import secrets
import shutil
from pathlib import Path

import attrs

MB = 1024 * 1024
CLOUD_DOWNLOAD_LIMIT = 20 * MB
CLOUD_UPLOAD_LIMIT = 50 * MB
LOCAL_UPLOAD_LIMIT = 2000 * MB


@attrs.define(eq=False)
class StoredFile:
    file_id: str
    file_unique_id: str
    size: int
    blob: Path
    kind: str  # "video" or "document": the folder Telegram files it under
    mime_type: str | None = None
    file_name: str | None = None
    file_path: str | None = None  # given on the first getFile

    def to_json(self) -> dict:
        body = {"file_id": self.file_id, "file_unique_id": self.file_unique_id, "file_size": self.size}
        if self.file_name:
            body["file_name"] = self.file_name
        if self.mime_type:
            body["mime_type"] = self.mime_type
        return body


class FileStore:
    """Blobs named by content hash; `file_path`s are relative in cloud mode and absolute in local
    mode, where aiogram reads them straight from disk as it does with a local Bot API server."""

    def __init__(self, root: Path, *, local: bool) -> None:
        self.root = root
        self.local = local
        self._by_id: dict[str, StoredFile] = {}
        self._by_path: dict[str, StoredFile] = {}
        self._counter = 0
        (root / "blobs").mkdir(parents=True, exist_ok=True)

    def add(self, data: bytes, *, kind: str, file_name: str | None = None, mime_type: str | None = None) -> StoredFile:
        unique = _unique_id(data)
        blob = self.root / "blobs" / unique
        if not blob.exists():
            tmp = blob.with_suffix(".part")
            tmp.write_bytes(data)
            tmp.replace(blob)
        if mime_type is None and file_name:
            mime_type = mimetypes.guess_type(file_name)[0]
        stored = StoredFile(
            file_id=_file_id(kind), file_unique_id=unique, size=len(data), blob=blob, kind=kind,
            mime_type=mime_type, file_name=file_name,
        )
        self._by_id[stored.file_id] = stored
        return stored

    def get(self, file_id: str) -> StoredFile | None:
        return self._by_id.get(file_id)

    def by_path(self, file_path: str) -> StoredFile | None:
        return self._by_path.get(file_path)

    def read(self, file_id: str) -> bytes:
        return self._by_id[file_id].blob.read_bytes()

    def assign_path(self, stored: StoredFile, token: str) -> str:
        if stored.file_path is None:
            self._counter += 1
            suffix = Path(stored.file_name or "").suffix or (".mp4" if stored.kind == "video" else "")
            relative = f"{stored.kind}s/file_{self._counter}{suffix}"
            if self.local:
                target = self.root / token / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(stored.blob, target)
                except OSError:
                    shutil.copyfile(stored.blob, target)
                stored.file_path = str(target)
            else:
                stored.file_path = relative
            self._by_path[stored.file_path] = stored
        return stored.file_path


def _unique_id(data: bytes) -> str:
    return "AgAD" + hashlib.sha256(data).hexdigest()[:16]


def _file_id(kind: str) -> str:
    prefix = "BAAC" if kind == "video" else "BQAC"
    return prefix + secrets.token_urlsafe(24)
