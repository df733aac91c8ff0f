"""Named statements: each one found by its name, with what its leading comment says, and a name
given twice refused when the files are read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from videocopies.adapters.postgres import queries
from videocopies.adapters.postgres.retention import WALKS


def test_a_statement_is_its_text_without_its_comment_or_final_semicolon() -> None:
    (claim, free) = queries.parse(
        "jobs.sql",
        "-- claim_one --\n-- Why it is shaped so,\n-- on two lines.\nSELECT 1\n  FROM jobs;\n\n-- free --\nSELECT 2;\n",
    )
    why = "Why it is shaped so,\non two lines."
    assert claim == queries.Statement("claim_one", "jobs.sql", why, "SELECT 1\n  FROM jobs")
    assert free == queries.Statement("free", "jobs.sql", "", "SELECT 2")


def test_a_name_given_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.sql").write_text("-- take_slot --\nSELECT 1;\n")
    (tmp_path / "b.sql").write_text("-- take_slot --\nSELECT 2;\n")
    monkeypatch.setattr(queries, "SQL_DIR", tmp_path)
    queries.statements.cache_clear()
    try:
        with pytest.raises(queries.DuplicateStatement, match="take_slot.*a.sql and b.sql"):
            queries.statements()
    finally:
        monkeypatch.undo()
        queries.statements.cache_clear()


def test_the_shipped_files_load_and_every_statement_has_text() -> None:
    named = queries.statements()
    assert named and all(statement.text for statement in named.values())
    assert queries.sql("take_slot") == named["take_slot"].text


def test_a_literal_is_spliced_where_its_hole_is() -> None:
    head, tail = queries.around("apply_writes", "writes")
    assert head.endswith(b"videocopies_apply(") and tail.startswith(b"::jsonb)")


def test_every_write_videocopies_apply_runs_is_a_named_statement() -> None:
    """The function runs each write's statement as its file shows it: the names agree."""
    created = "CREATE OR REPLACE FUNCTION videocopies_apply(writes jsonb)"
    versions = sorted((Path(__file__).parents[2] / "migrations" / "versions").glob("*.py"))
    latest = next(text for path in reversed(versions) if created in (text := path.read_text()))
    applied = latest.split(created, 1)[1].split("$function$", 2)[1]
    writes = set(re.findall(r"op_name = '(\w+)'", applied))
    assert len(writes) > 20
    assert sorted(writes - set(queries.statements())) == []


def test_a_composed_statement_has_each_hole_filled_by_the_part_named_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.sql").write_text(
        "-- batch --\n-- Fills {rows}.\nWITH {rows}\nSELECT count(*) FROM {rows_name};\n\n"
        "-- old --\nold AS (SELECT 1);\n\n-- old_name --\nold;\n"
    )
    monkeypatch.setattr(queries, "SQL_DIR", tmp_path)
    for cached in (queries.statements, queries.load, queries.composed):
        cached.cache_clear()
    try:
        assert queries.composed("batch", rows="old", rows_name="old_name") == (
            "WITH old AS (SELECT 1)\nSELECT count(*) FROM old"
        )
        with pytest.raises(queries.UnfilledHole, match=r"batch has holes \['rows', 'rows_name'\], given \['rows'\]"):
            queries.composed("batch", rows="old")
        with pytest.raises(queries.UnfilledHole):
            queries.composed("batch", rows="old", rows_name="old_name", more="old")
    finally:
        monkeypatch.undo()
        for cached in (queries.statements, queries.load, queries.composed):
            cached.cache_clear()


def test_each_prune_batch_is_the_one_statement_with_its_tables_parts() -> None:
    for walk in WALKS.values():
        pruning, counting = walk.sql(dry_run=False), walk.sql(dry_run=True)
        assert pruning.startswith("WITH " + queries.sql(f"walk_{walk.statement}") + ",\n")
        assert queries.sql(f"take_{walk.statement}") in pruning and "DELETE" not in counting
        assert pruning.split(queries.sql(f"take_{walk.statement}"))[1] == counting.split(queries.sql("count_due"))[1]
