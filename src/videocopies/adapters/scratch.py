"""How much of a node's scratch directory is in use, as it reports to core (worker with its
claims, edge with its duty): bytes and files, measured on the disk itself."""

from __future__ import annotations

import os
from pathlib import Path


def scratch_use(directory: Path) -> tuple[int, int]:
    """Bytes and files under `directory` (0, 0 when it does not exist)."""
    used = files = 0
    pending = [str(directory)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    used += entry.stat(follow_symlinks=False).st_size
                    files += 1
            except FileNotFoundError:  # removed while we looked
                continue
    return used, files


def scratch_stats(directory: Path) -> dict[str, int]:
    used, files = scratch_use(directory)
    return {"scratch_used_bytes": used, "scratch_files": files}
