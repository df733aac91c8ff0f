"""docs/scaling.md: every table of figures names the benchmark that measured it (or, for the
capacity model, the benchmarks its inputs came from), and every benchmark command it names
runs: the script is in bench/ and takes each option the command gives it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "scaling.md"
COMMAND = re.compile(r"uv run python (bench/[a-z_]+\.py)([^`\n]*)")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) for each heading of the page, the body up to the next heading."""
    parts = re.split(r"^(#{1,4} .*)$", text, flags=re.MULTILINE)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def commands(body: str) -> list[tuple[str, list[str]]]:
    return [(script, shlex.split(rest.split("#")[0])) for script, rest in COMMAND.findall(body)]


def test_every_table_of_figures_names_a_benchmark_command() -> None:
    tables = [(heading, body) for heading, body in sections(DOC.read_text())
              if re.search(r"^\|.*\|\s*$", body, flags=re.MULTILINE)]
    assert len(tables) >= 4, "the costs and the capacity model are tables"
    for heading, body in tables:
        assert commands(body), f"{heading}: no `uv run python bench/….py` names what measured its figures"


def test_every_benchmark_command_named_runs_as_written() -> None:
    named = commands(DOC.read_text())
    assert {script for script, _ in named} >= {"bench/ingress.py", "bench/job_api_cpu.py", "bench/worker_cost.py",
                                                "bench/pg_writes.py", "bench/worker_throughput.py"}
    for script, args in named:
        source = ROOT / script
        assert source.is_file(), script
        text = source.read_text()
        assert '__name__ == "__main__"' in text, f"{script} is not a benchmark one can run"
        for flag in (a.split("=")[0] for a in args if a.startswith("--")):
            assert f'"{flag}"' in text, f"{script} takes no {flag}"


def test_the_capacity_model_covers_each_size_of_the_service() -> None:
    text = DOC.read_text()
    for users in ("1k", "10k", "100k", "1M"):
        assert re.search(rf"^\| *{users} ", text, flags=re.MULTILINE), users
