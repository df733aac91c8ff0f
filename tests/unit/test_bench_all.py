"""bench/all.py without running a benchmark: recorded.json is well formed and names only what the
benchmarks print, the verdicts (meets, misses, regressed) come out right on synthetic lines and
synthetic machines (the probe's arithmetic, not its measuring), and docs/benchmarks.md's table
is the one recorded.json gives."""

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
            "commit": "abc1234", "date": "2026-12-01", "durable": True, "scales": "cpu"}
    return {**base, **overrides}


def test_every_recorded_figure_has_its_fields_and_a_judgeable_target() -> None:
    assert RECORDED
    for name, figure in RECORDED.items():
        assert set(bench_all.FIELDS) <= set(figure) <= {*bench_all.FIELDS, *bench_all.OPTIONAL}, name
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
    same = spec(scales="none")
    recorded = {"a.fast": same, "a.steady": same, "a.printed": same, "b.x": same, "c.skipped": same}
    runs = [bench_all.Run("a", [], 0, 1.0, {"fast": 2.5, "steady": 1.5, "durable": True}),
            bench_all.Run("b", [], 0, 1.0, {"x": 1.0, "durable": True})]
    rows, figures, failed = bench_all.verdicts(recorded, runs)
    assert failed == ["a.fast", "a.steady", "a.printed"]
    assert figures["a.fast"]["verdict"] == "MISSES target, REGRESSED" and "c.skipped" not in figures
    assert [row[0] for row in rows] == ["figure", "a.fast", "a.steady", "a.printed", "b.x"]
    assert bench_all.verdicts(recorded, runs, quick=True)[2] == ["a.printed"]


# The machine: the probe's figures when a value was recorded, and today's.
RECORDED_ON = {"python_cpu_s": 0.5, "postgres_cpu_ms": 400.0, "fsync_ms": 1.0}


def machine(slower: float, fsync: float = 1.0) -> dict[str, float]:
    """RECORDED_ON, `slower` times as slow in Python and PostgreSQL."""
    return {"python_cpu_s": 0.5 * slower, "postgres_cpu_ms": 400.0 * slower, "fsync_ms": fsync}


def judged(recorded_spec: dict[str, Any], value: Any, today: dict[str, float] | None) -> dict[str, Any]:
    """The JSON line's verdict on `value` of a figure recorded as `recorded_spec`, on `today`'s machine."""
    runs = [bench_all.Run("a", [], 0, 1.0, {"x": value, "durable": True})]
    _, figures, failed = bench_all.verdicts({"a.x": recorded_spec}, runs, today=today)
    return {**figures["a.x"], "failed": failed == ["a.x"]}


def test_a_figure_as_much_slower_as_the_machine_is_not_a_regression() -> None:
    seconds = spec(value=1.0, target=10.0, machine=RECORDED_ON)
    verdict = judged(seconds, 2.5, today=machine(2.5))
    assert (verdict["factor"], verdict["expected"], verdict["verdict"]) == (2.5, 2.5, "meets target")
    assert judged(seconds, 3.1, today=machine(2.5))["verdict"] == "meets target, REGRESSED"  # past 2.5 ± 20 %


def test_a_figure_twice_as_slow_on_an_unchanged_machine_is_a_regression() -> None:
    verdict = judged(spec(value=1.0, target=10.0, machine=RECORDED_ON), 2.0, today=machine(1.0))
    assert (verdict["factor"], verdict["verdict"], verdict["failed"]) == (1.0, "meets target, REGRESSED", True)


def test_a_figure_that_stayed_the_same_on_a_three_times_faster_machine_is_a_regression() -> None:
    verdict = judged(spec(value=1.0, target=10.0, machine=RECORDED_ON), 1.0, today=machine(1 / 3))
    assert (verdict["expected"], verdict["verdict"]) == (0.333, "meets target, REGRESSED")


def test_a_missed_target_stays_missed_on_a_slow_machine() -> None:
    verdict = judged(spec(value=1.9, target=2.0, machine=RECORDED_ON), 2.5, today=machine(3.0))
    assert (verdict["verdict"], verdict["failed"]) == ("MISSES target", True)
    assert bench_all.judge(spec(value=1.9), 2.5, durable=True, factor=3.0).meets is False


def test_a_rate_is_expected_lower_on_a_slower_machine() -> None:
    rate = spec(value=1000.0, target=None, op=">=", machine=RECORDED_ON)
    assert judged(rate, 520.0, today=machine(2.0))["verdict"] == "no target"  # 500 ± 100
    assert judged(rate, 380.0, today=machine(2.0))["verdict"] == "no target, REGRESSED"
    assert judged(rate, 1000.0, today=machine(0.5))["verdict"] == "no target, REGRESSED"  # 2,000 expected


def test_a_figure_that_scales_with_nothing_is_not_scaled() -> None:
    ratio = spec(value=0.8, target=0.6, op=">=", noise=0.2, scales="none", machine=RECORDED_ON)
    verdict = judged(ratio, 0.5, today=machine(3.0))
    assert (verdict["factor"], verdict["expected"], verdict["verdict"]) == (1.0, 0.8, "MISSES target, REGRESSED")
    assert judged(ratio, 0.7, today=None)["verdict"] == "meets target"  # nothing to say of the machine


def test_a_figure_recorded_without_the_probe_is_compared_raw_and_says_so() -> None:
    before_the_probe = spec(value=1.0, target=10.0)
    slow_day = judged(before_the_probe, 2.5, today=machine(2.5))
    assert (slow_day["factor"], slow_day["expected"]) == (None, 1.0)
    assert slow_day["verdict"] == "meets target, REGRESSED, machine unknown: compared raw"
    assert judged(before_the_probe, 1.1, today=machine(2.5))["verdict"] == (
        "meets target, machine unknown: compared raw")
    assert judged(spec(value=1.0, target=10.0, machine=RECORDED_ON), 1.1, today=None)["factor"] is None


def test_the_factor_of_each_unit() -> None:
    today = {"python_cpu_s": 1.0, "postgres_cpu_ms": 1200.0, "fsync_ms": 1.5}
    assert bench_all.machine_factor("python", today, RECORDED_ON) == 2.0
    assert bench_all.machine_factor("postgres", today, RECORDED_ON) == 3.0
    assert bench_all.machine_factor("cpu", today, RECORDED_ON) == 2.5  # time spent in both
    assert bench_all.machine_factor("fsync", today, RECORDED_ON) == 1.5
    assert bench_all.machine_factor("none", None, None) == 1.0
    assert bench_all.machine_factor("cpu", today, None) is None
    assert bench_all.machine_factor("cpu", today, {"python_cpu_s": 0.5}) is None  # a probe of fewer figures
    assert bench_all.expected_here(spec(value=3.0, op="<="), 2.0) == 6.0
    assert bench_all.expected_here(spec(value=3.0, op=">="), 2.0) == 1.5
    assert bench_all.expected_here(spec(value=True, target=True, op="=="), 2.0) is True
    assert repr(bench_all.expected_here(spec(value=0), 1.0)) == "0"  # a count stays a count


def test_the_noise_band_scales_with_the_expectation_but_not_its_floor() -> None:
    wake = spec(value=4.0, target=15.0, noise=1.0, noise_floor=5.0, machine=RECORDED_ON)
    assert bench_all.band(wake, 8.0) == 8.0
    assert bench_all.band(wake, 2.0) == 5.0
    assert judged(wake, 9.5, today=machine(0.5))["verdict"] == "meets target, REGRESSED"  # 2 expected, + 5 floor
    assert judged(wake, 6.5, today=machine(0.5))["verdict"] == "meets target"


def test_every_headline_says_how_it_moves_with_the_machine_and_ratios_and_counts_do_not() -> None:
    for name, figure in RECORDED.items():
        unit = bench_all.scales(name, figure)
        if any(word in name for word in ("ratio", "share", "rss", "violations", "sends_after")) or (
                bench_all.benchmark_of(name) == "soak" or figure["op"] == "=="):
            assert unit == "none", name
    core_cpu = "job_api_cpu.median_core_cpu_ms_per_job"
    assert bench_all.scales(core_cpu, RECORDED[core_cpu]) == "python"
    assert bench_all.scales("confirm_wave.seconds", spec(scales="fsync")) == "fsync"  # recorded.json may say otherwise
    with pytest.raises(ValueError, match="SCALES"):
        bench_all.scales("new_bench.seconds", {"op": "<="})


def test_the_probe_line_gives_todays_machine_only_when_whole() -> None:
    line = {"bench": "machine", "python_cpu_s": 0.43, "postgres_cpu_ms": 370, "fsync_ms": 0.65, "durable": True}
    assert bench_all.machine_of(line) == {"python_cpu_s": 0.43, "postgres_cpu_ms": 370.0, "fsync_ms": 0.65}
    assert bench_all.machine_of({**line, "fsync_ms": None}) is None
    assert bench_all.machine_of({**line, "python_cpu_s": 0}) is None
    assert bench_all.machine_of(None) is None


def test_the_report_says_how_the_machine_moved_at_its_top() -> None:
    today = {"python_cpu_s": 1.2, "postgres_cpu_ms": 1160.0, "fsync_ms": 1.04}
    recorded = {"a.x": spec(machine=RECORDED_ON), "a.y": spec(machine=RECORDED_ON)}
    assert bench_all.machine_words(today, recorded) == (
        "machine (today: Python 1.2 s, PostgreSQL 1,160 ms, fsync 1.04 ms): against when recorded, "
        "Python 2.4× slower, PostgreSQL 2.9× slower, fsync the same")
    mixed = {**recorded, "b.x": spec(machine=machine(0.25)), "c.x": spec()}
    assert bench_all.machine_words(today, mixed) == (
        "machine (today: Python 1.2 s, PostgreSQL 1,160 ms, fsync 1.04 ms): against when 2 figures were recorded, "
        "Python 2.4× slower, PostgreSQL 2.9× slower, fsync the same; against when 1 figure was recorded, "
        "Python 9.6× slower, PostgreSQL 11.6× slower, fsync the same; 1 scaled figure recorded without the probe, "
        "so compared raw")
    assert "compared raw" in bench_all.machine_words(None, recorded)
    unscaled = {"a.ratio": spec(scales="none"), "a.x": spec()}
    assert bench_all.machine_words(today, unscaled).endswith(": 1 scaled figure recorded without the probe, "
                                                             "so compared raw")


def test_the_table_shows_the_value_expected_here_beside_the_recorded_one() -> None:
    runs = [bench_all.Run("a", [], 0, 1.0, {"x": 2.5, "durable": True})]
    rows, _, _ = bench_all.verdicts({"a.x": spec(value=1.0, target=2.0, machine=RECORDED_ON)}, runs, today=machine(2.5))
    assert rows == [["figure", "value", "target", "met?", "recorded", "expected here", "verdict"],
                    ["a.x", "2.5", "≤ 2", "NO", "1 (durable)", "2.5 ± 0.5 (cpu ×2.50)", "within noise"]]


def test_record_writes_the_machine_beside_each_value_and_drops_one_that_no_longer_describes_it() -> None:
    recorded = {"a.x": spec(machine=RECORDED_ON), "a.y": spec(machine=RECORDED_ON), "b.z": spec(machine=RECORDED_ON)}
    runs = [bench_all.Run("a", [], 0, 1.0, {"bench": "a", "x": 1.7, "durable": True})]
    bench_all.record(recorded, runs, "def5678", "2026-12-02", machine(2.0))
    assert recorded["a.x"]["machine"] == machine(2.0) and recorded["b.z"]["machine"] == RECORDED_ON
    bench_all.record(recorded, runs, "def5678", "2026-12-02", None)  # the probe failed
    assert "machine" not in recorded["a.x"] and recorded["b.z"]["machine"] == RECORDED_ON


def test_the_docs_say_under_the_table_which_machine_the_values_were_recorded_on() -> None:
    text = bench_all.docs_table({"a.x": spec(machine=RECORDED_ON), "b.y": spec()})
    said = text.splitlines()[-3]
    assert "scaled by the machine probe" in said
    assert "recorded with Python 0.5 s, PostgreSQL 400 ms, fsync 1 ms (1 figure)" in said
    assert "1 scaled figure recorded without the probe, compared raw" in said
