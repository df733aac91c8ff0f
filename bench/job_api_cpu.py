"""Core's CPU per job over HTTP: what one claim and one complete cost the core process,
read from /proc (steadier than throughput on a shared machine). Core runs as its own
process on a direct connection; 16 clients in another process drain 3,000 no-op jobs,
three rounds. Prints one JSON line.

    uv run python bench/job_api_cpu.py [--jobs 3000] [--workers 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import statistics

import uvloop
from _support import cpu_seconds, emit, fresh_database, server
from job_api import _drain_in_process, _insert_jobs

from videocopies.runtime.launch import CoreProcess, issue_token_async


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    per_job, rates = [], []
    with server() as pg:
        url = fresh_database(pg, "job_api_cpu")
        tokens = [uvloop.run(issue_token_async(url, f"bench-{n}")) for n in range(args.workers)]
        with CoreProcess(url, VIDEOCOPIES_DATABASE_DIRECT="1") as core:
            assert core.process is not None
            spawn = multiprocessing.get_context("spawn")
            for round_ in range(args.rounds):
                first = 1 + round_ * args.jobs
                _insert_jobs(url, first, first + args.jobs - 1, announce=True)
                before = cpu_seconds(core.process.pid)
                with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
                    seconds, done = pool.submit(_drain_in_process, (core.url, tokens, args.workers)).result()
                per_job.append((cpu_seconds(core.process.pid) - before) / done * 1000)
                rates.append(done / seconds)
    emit({
        "bench": "job_api_cpu", "jobs": args.jobs, "workers": args.workers,
        "core_cpu_ms_per_job": [round(v, 3) for v in per_job],
        "median_core_cpu_ms_per_job": round(statistics.median(per_job), 3),
        "jobs_per_s": [round(v, 1) for v in rates],
    })


if __name__ == "__main__":
    main()
