"""A worker's settings, and the disk its job needs: the source, one copy being rendered and one
finished but not yet stored, with a margin."""

from __future__ import annotations

from pathlib import Path

import attrs

from videocopies.domain.shared import WorkerId


@attrs.define
class NotEnoughDisk(Exception):
    needed: int
    free: int

    def __str__(self) -> str:
        return f"not enough disk: needs {self.needed} bytes, {self.free} free"


@attrs.frozen
class WorkerSettings:
    worker_id: WorkerId
    work_root: Path
    renew_every_s: float = 10.0
    progress_every_s: float = 2.5  # how often at most the user's progress bar may move
    # Copy size to source size: 0.3-0.5 typically, 2.08 at worst measured (grain 6 at CRF 20
    # on a synthetic 720x1280 clip, in `make demo`), so budget 2.2 and a margin on top.
    copy_to_source: float = 2.2
    margin: float = 1.5
    duration_tolerance_s: float = 0.25
    max_copy_bytes: int | None = None  # the largest copy the Bot API server takes (upload_bytes)


def disk_needed(source_bytes: int, copies: int, settings: WorkerSettings) -> int:
    """Source, one copy being rendered, and the finished copies not yet stored, with margin.
    Copies are uploaded and deleted one by one, so at most two exist at once."""
    at_once = source_bytes + 2 * int(source_bytes * settings.copy_to_source)
    return int(at_once * settings.margin) if copies else 0


def largest_source(free_bytes: int, settings: WorkerSettings) -> int:
    """The biggest source whose job fits in `free_bytes` (the inverse of disk_needed)."""
    return int(free_bytes / (settings.margin * (1 + 2 * settings.copy_to_source)))
