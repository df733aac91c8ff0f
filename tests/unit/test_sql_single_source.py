"""Every SQL statement lives in adapters/postgres/sql/, by name: no module of the package holds
a string that reads as SQL, so a newcomer finds any statement in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).parents[2] / "src" / "videocopies"
# Another database (sqlite), and tools that start and drive embedded servers for tests and demos.
ALLOWED = (
    "adapters/postgres/sql/",
    "adapters/sqlite/",
    "testing/",
    "embedded/",
    "adapters/postgres/cluster.py",
    "adapters/postgres/bouncer.py",
    "adapters/postgres/standby.py",
)
KEYWORDS = (
    "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER", "DROP", "LOCK", "LISTEN", "NOTIFY", "SET",
    "BEGIN", "COMMIT", "TRUNCATE", "VACUUM", "ANALYZE", "EXPLAIN",
)
_STARTS_SQL = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*(?:" + "|".join(KEYWORDS) + r")\b", re.DOTALL)


def reads_as_sql(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return _STARTS_SQL.match(text) is not None


def sql_strings(source: str, filename: str) -> list[tuple[int, str]]:
    return [
        (node.lineno, str(node.value)[:60])
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and reads_as_sql(node.value)
    ]


def test_no_sql_outside_the_sql_files() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative.startswith(ALLOWED):
            continue
        found += [f"{relative}:{line}: {text!r}" for line, text in sql_strings(path.read_text(), relative)]
    assert found == [], "\n".join(found)


def test_the_check_sees_sql_in_every_shape() -> None:
    source = '''
a = "SELECT 1"
b = """
    -- a comment first
    UPDATE jobs SET state = 'done'"""
c = b"BEGIN;"
d = f"INSERT INTO nodes ({COLUMNS}) VALUES (%s)"
e = "/* hint */ WITH x AS (SELECT 1) SELECT * FROM x"
'''
    assert sorted(line for line, _ in sql_strings(source, "example.py")) == [2, 3, 6, 7, 8]


def test_words_that_only_look_like_keywords_pass() -> None:
    source = '''
"""Delete every object under `prefix/`; returns how many."""
a = "With keep_frames, the decode keeps frames"
b = "set VIDEOCOPIES_NODE_TOKEN first"
c = "SELECTED"
d = "update %s not stored"
'''
    assert sql_strings(source, "example.py") == []
