"""No SQL text is built from values: every statement passed to the driver is a literal, or an
f-string whose only holes are module constants (column lists); values travel as parameters.
The attack itself is tried through the bot in tests/integration/test_hostile_bot.py."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parents[2] / "src" / "videocopies"
RUNS_SQL = {"execute", "executemany", "text", "SQL"}


def _constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id.lstrip("_").isupper()


def _built_from_values(statement: ast.expr) -> str | None:
    if isinstance(statement, ast.JoinedStr):
        holes = [v.value for v in statement.values if isinstance(v, ast.FormattedValue)]
        if not all(_constant(hole) for hole in holes):
            return "an f-string with a value in it"
    if isinstance(statement, ast.BinOp) and isinstance(statement.op, (ast.Mod, ast.Add)):
        return "text joined with % or +"
    if isinstance(statement, ast.Call) and getattr(statement.func, "attr", "") == "format":
        composed = getattr(statement.func, "value", None)  # psycopg's sql.SQL(...).format quotes what it takes
        if not (isinstance(composed, ast.Call) and getattr(composed.func, "attr", "") == "SQL"):
            return "str.format"
    return None


def test_no_statement_is_built_from_values() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            name = getattr(node, "func", None)
            called = getattr(name, "attr", getattr(name, "id", ""))
            runs_sql = isinstance(node, ast.Call) and called in RUNS_SQL and node.args
            if runs_sql and (why := _built_from_values(node.args[0])) is not None:  # type: ignore[attr-defined]
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {why}")
    assert found == [], "\n".join(found)


def test_the_check_sees_a_value_formatted_into_sql() -> None:
    statement = ast.parse('conn.execute(f"SELECT * FROM orders WHERE user_id = {user_id}")').body[0].value  # type: ignore[attr-defined]
    assert _built_from_values(statement.args[0]) == "an f-string with a value in it"
    safe = ast.parse('conn.execute(f"SELECT {_COLUMNS} FROM nodes WHERE node_id = %s", [node])').body[0].value  # type: ignore[attr-defined]
    assert _built_from_values(safe.args[0]) is None
