"""bench/all.py without running a benchmark: recorded.json is well formed and names only what the
benchmarks print, the verdicts (meets, misses, regressed) come out right on synthetic lines, and
docs/benchmarks.md's table is the one recorded.json gives."""

from __future__ import annotations

import ast
import json
import re
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import all as bench_all  # noqa: E402

RECORDED = bench_all.load()


def spec(**overrides: Any) -> dict[str, Any]:
    base = {"value": 1.0, "target": 2.0, "op": "<=", "noise": 0.2, "command": "uv run python bench/x.py",
            "commit": "abc1234", "date": "2026-12-01", "durable": True}
    return {**base, **overrides}


def test_every_recorded_figure_has_its_fields_and_a_judgeable_target() -> None:
    assert RECORDED
    for name, figure in RECORDED.items():
        assert set(bench_all.FIELDS) <= set(figure) <= {*bench_all.FIELDS, "noise_floor", "note"}, name
        assert figure["op"] in bench_all.OPS, name
        assert figure["noise"] >= 0 and figure.get("noise_floor", 0) >= 0, name
        assert figure["durable"] in (True, False, None), name
        measured = figure["value"] is not None
        assert measured == (figure["commit"] is not None) == (figure["date"] is not None), name
        if measured:
            date.fromisoformat(figure["date"])
            assert type(figure["value"]) in (int, float) or figure["op"] == "==", name
        assert figure["target"] is not None or figure["op"] != "==", name


def test_every_headline_names_a_benchmark_that_prints_it() -> None:
    for name in RECORDED:
        script = BENCH / f"{bench_all.benchmark_of(name)}.py"
        assert script.exists(), name
        key = name.rsplit(".", 1)[1]
        assert re.search(rf"\b{key}\b", script.read_text()), f"{script.name} never mentions {key}"


def test_everything_the_soak_says_must_be_0_is_a_headline_held_at_0() -> None:
    module = ast.parse((BENCH / "soak.py").read_text())
    must_be_zero = next(
        ast.literal_eval(node.value) for node in module.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MUST_BE_ZERO" for t in node.targets)
    )
    for key in must_be_zero:
        assert RECORDED.get(f"soak.{key}", {}).get("target") == 0, key


def test_each_benchmark_has_one_command_that_runs_that_benchmark() -> None:
    commands: dict[str, set[str]] = {}
    for name, figure in RECORDED.items():
        commands.setdefault(bench_all.benchmark_of(name), set()).add(figure["command"])
    for benchmark, seen in commands.items():
        assert len(seen) == 1, (benchmark, seen)
        (command,) = seen
        assert command.startswith(f"uv run python bench/{benchmark}.py"), command
    assert bench_all.arguments(RECORDED["job_api_cpu.median_core_cpu_ms_per_job"]["command"]) == ["--rounds", "5"]


def test_every_benchmark_in_bench_is_either_run_or_said_why_not() -> None:
    # A benchmark runs as a script; a helper (its name starting with _ or not) is only imported.
    benchmarks = {p.stem for p in BENCH.glob("*.py") if '__name__ == "__main__"' in p.read_text()
                  and not p.stem.startswith("_")} - {"all"}
    run = set(bench_all.benchmarks(RECORDED))
    assert run | set(bench_all.NOT_RUN) == benchmarks
    assert not run & set(bench_all.NOT_RUN)


def test_quick_arguments_are_ones_the_benchmark_takes() -> None:
    assert set(bench_all.QUICK) <= set(bench_all.benchmarks(RECORDED))
    for benchmark, args in bench_all.QUICK.items():
        source = (BENCH / f"{benchmark}.py").read_text()
        for flag in (a for a in args if a.startswith("--")):
            assert f'"{flag}"' in source, (benchmark, flag)


def test_a_latency_under_its_target_and_near_its_record_meets_it() -> None:
    verdict = bench_all.judge(spec(), 1.1, durable=True)
    assert (verdict.meets, verdict.regressed, verdict.failed) == (True, False, False)
    assert verdict.words() == "meets target"


def test_a_latency_over_its_target_misses_it() -> None:
    verdict = bench_all.judge(spec(value=1.9), 2.1, durable=True)
    assert (verdict.meets, verdict.regressed, verdict.failed) == (False, False, True)


def test_worse_than_recorded_by_more_than_the_noise_band_is_a_regression_even_within_target() -> None:
    assert not bench_all.judge(spec(), 1.2, durable=True).regressed  # exactly the band
    verdict = bench_all.judge(spec(), 1.25, durable=True)
    assert (verdict.meets, verdict.regressed, verdict.failed) == (True, True, True)
    assert verdict.words() == "meets target, REGRESSED"


def test_higher_is_better_when_the_target_is_a_floor() -> None:
    ratio = spec(value=0.8, target=0.6, op=">=", noise=0.25)
    assert not bench_all.judge(ratio, 0.61, durable=True).failed
    assert bench_all.judge(ratio, 0.59, durable=True).words() == "MISSES target, REGRESSED"
    assert bench_all.judge(ratio, 5.0, durable=True).words() == "meets target"


def test_the_noise_floor_widens_the_band_around_a_small_value() -> None:
    count = spec(value=0, target=1, noise=0.0, noise_floor=1)
    assert not bench_all.judge(count, 1, durable=True).failed
    assert bench_all.judge(count, 2, durable=True).words() == "MISSES target, REGRESSED"
    assert bench_all.judge(spec(value=0, target=1, noise=0.0), 1, durable=True).regressed


def test_a_value_recorded_on_the_other_kind_of_server_is_not_compared() -> None:
    recorded_fast = spec(value=0.5, durable=False)
    verdict = bench_all.judge(recorded_fast, 1.5, durable=True)
    assert (verdict.meets, verdict.regressed, verdict.compared) == (True, False, False)
    assert verdict.words() == "meets target, not compared"
    assert bench_all.judge(recorded_fast, 1.5, durable=False).regressed


def test_a_figure_without_a_target_only_guards_against_regressions() -> None:
    tracked = spec(target=None)
    assert bench_all.judge(tracked, 1.1, durable=True).words() == "no target"
    assert bench_all.judge(tracked, 1.3, durable=True).words() == "no target, REGRESSED"


def test_a_figure_never_recorded_is_judged_by_its_target_alone() -> None:
    new = spec(value=None, commit=None, date=None, durable=None)
    assert bench_all.judge(new, 1.9).words() == "meets target, not compared"
    assert bench_all.judge(new, 2.1).failed


def test_a_headline_missing_from_the_line_fails() -> None:
    line = json.loads('{"bench": "soak", "lost": 0}')
    verdict = bench_all.judge(spec(), bench_all.value_in(line, "soak.double_charged"))
    assert (verdict.measured, verdict.failed, verdict.words()) == (False, True, "NOT PRINTED")


def test_a_nested_figure_is_read_by_its_dotted_path() -> None:
    line = bench_all.last_json_line('progress\n{"bench": "cpu_per_op", "confirm": {"total_cpu_ms": 1.4}}\n')
    assert line is not None
    assert bench_all.value_in(line, "cpu_per_op.confirm.total_cpu_ms") == 1.4
    assert bench_all.value_in(line, "cpu_per_op.queue.total_cpu_ms") is None


def test_a_boolean_headline_must_equal_its_target() -> None:
    passed = spec(value=True, target=True, op="==", noise=0.0)
    assert not bench_all.judge(passed, True).failed
    assert bench_all.judge(passed, False).words() == "MISSES target"


def test_record_writes_what_ran_and_leaves_the_rest() -> None:
    recorded = {"a.x": spec(note="seeded"), "a.gone": spec(), "b.y": spec()}
    runs = [bench_all.Run("a", [], 0, 1.0, {"bench": "a", "x": 1.7, "durable": False})]
    written = bench_all.record(recorded, runs, "def5678", "2026-12-02")
    assert written == ["a.x"]
    assert recorded["a.x"] == {**spec(), "value": 1.7, "commit": "def5678", "date": "2026-12-02", "durable": False}
    assert recorded["a.gone"] == spec() and recorded["b.y"] == spec()


def test_the_table_in_the_docs_is_the_one_recorded_json_gives() -> None:
    docs = bench_all.DOCS.read_text()
    begin, end = docs.index(bench_all.TABLE_BEGIN), docs.index(bench_all.TABLE_END) + len(bench_all.TABLE_END)
    assert docs[begin:end] == bench_all.docs_table(RECORDED), "run: uv run python bench/all.py --write-docs"


def test_write_docs_replaces_only_the_table(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Title\n\n{bench_all.TABLE_BEGIN}\nold\n{bench_all.TABLE_END}\n\n## After\n")
    bench_all.write_docs({"a.x": spec()}, page)
    text = page.read_text()
    assert text.startswith("# Title\n\n") and text.endswith("\n\n## After\n")
    assert "| a | `x` | 1 | ≤ 2 | yes | abc1234, 2026-12-01, durable | `uv run python bench/x.py` |" in text
    assert "old" not in text
    page.write_text("# no markers\n")
    with pytest.raises(SystemExit):
        bench_all.write_docs({"a.x": spec()}, page)


def test_a_run_fails_on_a_miss_a_regression_or_a_figure_not_printed_and_a_quick_run_only_on_the_last() -> None:
    recorded = {"a.fast": spec(), "a.steady": spec(), "a.printed": spec(), "b.x": spec(), "c.skipped": spec()}
    runs = [bench_all.Run("a", [], 0, 1.0, {"fast": 2.5, "steady": 1.5, "durable": True}),
            bench_all.Run("b", [], 0, 1.0, {"x": 1.0, "durable": True})]
    rows, figures, failed = bench_all.verdicts(recorded, runs)
    assert failed == ["a.fast", "a.steady", "a.printed"]
    assert figures["a.fast"]["verdict"] == "MISSES target, REGRESSED" and "c.skipped" not in figures
    assert [row[0] for row in rows] == ["figure", "a.fast", "a.steady", "a.printed", "b.x"]
    assert bench_all.verdicts(recorded, runs, quick=True)[2] == ["a.printed"]
