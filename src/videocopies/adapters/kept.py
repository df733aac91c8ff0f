"""A small JSON value a node keeps in its work directory from one run to the next (core's
relocations, edge's unsent delivery reports): written whole or not at all."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any


def read_kept(path: Path) -> Any:
    """The value kept at `path`, None when there is none; ValueError when it is unreadable."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def keep(path: Path, value: Any) -> None:
    """Write `value` at `path` through a file beside it renamed over it, so a reader finds the
    old value or the new, never half of one; OSError when it cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temp.write_text(json.dumps(value, indent=1, sort_keys=True))
        temp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        raise
