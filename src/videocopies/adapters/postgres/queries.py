"""Named SQL from queries.sql: one file, each query under a `-- name --` header."""

from __future__ import annotations

import functools
import re
from pathlib import Path

_HEADER = re.compile(r"^-- (\w+) --$", re.MULTILINE)


@functools.cache
def load() -> dict[str, str]:
    text = (Path(__file__).with_name("queries.sql")).read_text()
    parts = _HEADER.split(text)[1:]
    return {name: body.strip().rstrip(";") for name, body in zip(parts[::2], parts[1::2], strict=True)}


def sql(name: str) -> str:
    return load()[name]
