"""Benchmark: what a synchronous standby costs a commit.

The same small write transaction (an insert, then COMMIT) on a primary alone, with an
asynchronous standby, and with a synchronous one (the failover setup), by 1 and by 8
clients. On loopback the round trip to the standby is as short as it gets; across machines
add the network's round trip to every commit.

Prints one JSON line.

    uv run python bench/synchronous_commit.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Iterator

import psycopg
from _support import emit, p95

from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.standby import LocalStandby


async def commits(url: str, clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    stop_at = time.monotonic() + seconds

    async def client(n: int) -> None:
        async with await psycopg.AsyncConnection.connect(url) as conn:
            i = 0
            while time.monotonic() < stop_at:
                began = time.perf_counter()
                await conn.execute("INSERT INTO ledger_like (client, n) VALUES (%s, %s)", (n, i))
                await conn.commit()
                latencies.append(time.perf_counter() - began)
                i += 1

    await asyncio.gather(*(client(n) for n in range(clients)))
    return {
        f"commits_per_s_{clients}": round(len(latencies) / seconds),
        f"p50_ms_{clients}": round(statistics.median(latencies) * 1000, 3),
        f"p95_ms_{clients}": round(p95(latencies) * 1000, 3),
    }


@contextlib.contextmanager
def cluster(standby: str | None) -> Iterator[str]:
    with LocalPostgres(extra_settings={"synchronous_commit": "on"}) as primary:
        with psycopg.connect(primary.url(), autocommit=True) as conn:
            conn.execute("CREATE TABLE ledger_like (client int, n int, at timestamptz DEFAULT now())")
        if standby is None:
            yield primary.url()
            return
        with LocalStandby(primary, synchronous=standby == "sync"):
            yield primary.url()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    figures: dict[str, object] = {"bench": "synchronous_commit", "seconds": args.seconds}
    for setup in (None, "async", "sync"):
        with cluster(setup) as url:
            for clients in (1, 8):
                measured = asyncio.run(commits(url, clients, args.seconds))
                figures.update({f"{setup or 'alone'}_{key}": value for key, value in measured.items()})
    emit(figures)


if __name__ == "__main__":
    main()
