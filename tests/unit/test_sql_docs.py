"""docs/queries.md is generated from the SQL files (bench/explain_queries.py): every named
statement is listed there, and nothing is listed that the files no longer hold."""

from __future__ import annotations

import re
from pathlib import Path

from videocopies.adapters.postgres.queries import statements

DOC = Path(__file__).parents[2] / "docs" / "queries.md"
_LISTED = re.compile(r"^#### `(\w+)`$", re.MULTILINE)
_FILE = re.compile(r"^### (\w+\.sql)$", re.MULTILINE)


def test_every_statement_is_listed_under_its_file_and_nothing_else_is() -> None:
    text = DOC.read_text()
    listed: dict[str, str] = {}
    files = list(_FILE.finditer(text))
    for here, after in zip(files, [*files[1:], None], strict=True):
        section = text[here.end() : after.start() if after else len(text)]
        listed.update((name, here.group(1)) for name in _LISTED.findall(section))
    named = {name: statement.file for name, statement in statements().items()}
    assert sorted(set(named) - set(listed)) == [], "run bench/explain_queries.py"
    assert sorted(set(listed) - set(named)) == [], "run bench/explain_queries.py"
    assert listed == named
