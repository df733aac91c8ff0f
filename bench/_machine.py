"""The machine probe: how fast this machine is today, in the units the benchmarks depend on.

The project machine (2 vCPU, shared) changes speed from day to day by more than any
benchmark's noise band, so bench/all.py runs this first and judges each figure against its
recorded value as expected on today's machine. Each figure is a cost (higher: slower):

- `python_cpu_s`: CPU seconds of a fixed pure-Python workload (loop arithmetic, dict and str
  work, json encode and decode), the median of 3;
- `postgres_cpu_ms`: the server's CPU milliseconds for 20,000 single-row UPDATEs by primary
  key in one transaction (sent in a pipeline, so the server, not the round trips, sets the
  pace), on a fresh table each time, the median of 5;
- `fsync_ms`: the wall milliseconds of one durable single-row commit, the median of 300
  (the disk's flush, which moves apart from the CPU).

The server is durable whatever VIDEOCOPIES_BENCH_DURABLE says: a commit that waits for no
flush measures nothing. The work is the same on every run; it takes about 10 to 20 s.
Prints one JSON line (the figures, then every sample).

    uv run python bench/_machine.py
"""

from __future__ import annotations

import json
import statistics
import time

import psycopg
from _support import emit, postgres_cpu_seconds, server

PYTHON_ROUNDS = 3
POSTGRES_ROUNDS = 5  # its rounds are short, and a shared machine's scheduler makes them vary
UPDATES = 20_000
COMMITS = 300


def python_workload() -> int:
    """A fixed mix of what our code spends its CPU on; returns a checksum so none of it is skipped."""
    total = 0
    for i in range(400_000):
        total += i * i % 7
    counts: dict[str, int] = {}
    for i in range(150_000):
        key = f"user-{i % 997}"
        counts[key] = counts.get(key, 0) + len(key.upper())
    rows = [{"id": i, "name": f"copy {i}", "tags": ["a", "b", str(i % 5)], "price": i / 3} for i in range(15_000)]
    for _ in range(3):
        total += len(json.loads(json.dumps(rows)))
    return total + sum(counts.values())


def python_cpu_s() -> list[float]:
    samples = []
    for _ in range(PYTHON_ROUNDS):
        began = time.process_time()
        python_workload()
        samples.append(round(time.process_time() - began, 3))
    return samples


def postgres_cpu_ms(url: str, postmaster: int) -> list[float]:
    samples = []
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(POSTGRES_ROUNDS):
            conn.execute("DROP TABLE IF EXISTS probe")
            conn.execute("CREATE TABLE probe (id int PRIMARY KEY, n bigint NOT NULL) WITH (autovacuum_enabled = off)")
            conn.execute("INSERT INTO probe SELECT i, 0 FROM generate_series(1, %s) i", [UPDATES])
            conn.execute("CHECKPOINT")  # the previous round's dirty pages are not flushed on this one's time
            began = postgres_cpu_seconds(postmaster)
            with conn.transaction(), conn.cursor() as cursor:
                cursor.executemany("UPDATE probe SET n = n + 1 WHERE id = %s", [(i,) for i in range(1, UPDATES + 1)])
            samples.append(round((postgres_cpu_seconds(postmaster) - began) * 1000, 1))
    return samples


def fsync_ms(url: str) -> list[float]:
    samples = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS probe_commit (id int PRIMARY KEY, n bigint NOT NULL)")
        conn.execute("INSERT INTO probe_commit VALUES (1, 0) ON CONFLICT DO NOTHING")
        for _ in range(COMMITS):
            began = time.perf_counter()
            conn.execute("UPDATE probe_commit SET n = n + 1 WHERE id = 1")
            samples.append((time.perf_counter() - began) * 1000)
    return samples


def probe() -> dict[str, object]:
    python = python_cpu_s()  # before the server starts, so nothing of it competes
    with server(durable=True) as pg:
        assert pg.pid is not None
        postgres = postgres_cpu_ms(pg.url(), pg.pid)
        commits = fsync_ms(pg.url())
    return {
        "bench": "machine",
        "python_cpu_s": statistics.median(python),
        "postgres_cpu_ms": statistics.median(postgres),
        "fsync_ms": round(statistics.median(commits), 3),
        "samples": {"python_cpu_s": python, "postgres_cpu_ms": postgres,
                    "fsync_ms_p10_p90": [round(q, 3) for q in statistics.quantiles(commits, n=10)[::8]]},
    }


if __name__ == "__main__":
    began = time.monotonic()
    figures = probe()
    emit({**figures, "seconds": round(time.monotonic() - began, 1)})
