"""Every SQL statement the application runs, by name, from the files of `sql/`: each statement
under a `-- name --` header, its leading `--` lines saying what it is for. A statement may have
`{holes}` that other named statements fill (`composed`): a rule several statements share is
written once."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import attrs

SQL_DIR = Path(__file__).with_name("sql")
_HEADER = re.compile(r"^-- (\w+) --$", re.MULTILINE)
_HOLE = re.compile(r"\{(\w+)\}")


class DuplicateStatement(Exception):
    """Two statements share a name: which one runs would depend on the order files are read."""


class UnfilledHole(Exception):
    """A statement was composed with a `{hole}` left open, or with a part it has no hole for."""


@attrs.frozen
class Statement:
    name: str
    file: str  # under sql/
    comment: str  # the leading `--` lines, without their markers
    text: str  # what is sent to the server (no leading comment, no final `;`)


def parse(file: str, text: str) -> list[Statement]:
    parts = _HEADER.split(text)[1:]
    found = []
    for name, body in zip(parts[::2], parts[1::2], strict=True):
        lines = body.strip().splitlines()
        comment = []
        while lines and lines[0].startswith("--"):
            comment.append(lines.pop(0).removeprefix("--").strip())
        found.append(Statement(name, file, "\n".join(comment), "\n".join(lines).strip().rstrip(";")))
    return found


@functools.cache
def statements() -> dict[str, Statement]:
    """Every named statement of sql/*.sql, in file then header order; a name used twice is an error."""
    found: dict[str, Statement] = {}
    for path in sorted(SQL_DIR.glob("*.sql")):
        for statement in parse(path.name, path.read_text()):
            if (seen := found.get(statement.name)) is not None:
                raise DuplicateStatement(f"statement {statement.name!r} is named in {seen.file} and {path.name}")
            found[statement.name] = statement
    return found


@functools.cache
def load() -> dict[str, str]:
    return {name: statement.text for name, statement in statements().items()}


def sql(name: str) -> str:
    return load()[name]


@functools.cache
def composed(name: str, **parts: str) -> str:
    """The statement `name` with each `{hole}` filled by the text of the statement `parts` names
    for it: `composed("prune_batch", walk="walk_inbox", take="take_inbox")`."""
    text = sql(name)
    holes = set(_HOLE.findall(text))
    if holes != set(parts):
        raise UnfilledHole(f"{name} has holes {sorted(holes)}, given {sorted(parts)}")
    return _HOLE.sub(lambda hole: sql(parts[hole.group(1)]), text)


@functools.cache
def around(name: str, hole: str) -> tuple[bytes, bytes]:
    """A statement's bytes before and after its `{hole}`, for callers that splice in a literal
    quoted by libpq themselves (see unit_of_work)."""
    head, tail = sql(name).encode().split(b"{" + hole.encode() + b"}")
    return head, tail
