"""The floors under bench/confirm_wave.py: what the same wave of 1,000 confirmations costs the
server and a bare psycopg client when a confirmation's statements change shape, with none of
the application around them.

A confirmation is recorded once through the application (as confirm_wave.py records it: two
round trips, the locking read `videocopies_load` with BEGIN, then `videocopies_apply` with
COMMIT), and replayed bare in four shapes, on the same durable server, alternated `--rounds`
times (3), each figure the median of its rounds:

- `raw`: the recorded statements as they are (confirm_wave.py's `raw_sql_seconds`);
- `one_trip`: the same two calls sent as one simple query, as if the confirmation were decided
  in one round trip (inside the database, or from what the application already knew);
- `lean`: the write set without what a confirmation could do without: the copies' plans (since
  a25b050 a job stores only the seed they are drawn from, so `raw` has this already), the
  account's version bump (its row is locked for the whole transaction; but a single-statement
  locked read, `locked_fetchone`, tells a stale snapshot by the version, so dropping the bump
  needs that read changed too), the reservation's hold rows and the capacity slot (which could
  live in the reservation and the order);
- `one_trip_lean`: both, but with the account's version bump kept: a confirmation decided
  without its locking read relies on that guard to refuse a stale account.

Apart from the plans, none of these shapes is built; each says what building it would buy on the machine of the run
(docs/decisions/0007-what-the-confirmation-line-would-take.md). Prints one JSON line.

    uv run python bench/confirm_floor.py [--orders 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from datetime import UTC, datetime
from typing import Any

import confirm_wave as cw
import uvloop
from _support import emit, fresh_database, server

from videocopies.adapters.memory import ManualClock

SHAPES = ("raw", "one_trip", "lean", "one_trip_lean")
LEFT_OUT = {"update_account_version", "upsert_hold", "take_slot"}
GUARD = "update_account_version"
_APPLY = re.compile(rb"SELECT videocopies_apply\('(.*)'::jsonb\);\nCOMMIT", re.S)

Log = list[tuple[str, Any, Any]]


def lean(batch: bytes, keep: frozenset[str] = frozenset()) -> bytes:
    """The write set without the writes in LEFT_OUT but `keep`, and with each job's plans empty."""
    if not batch.startswith(b"SELECT videocopies_apply("):
        return batch  # the load
    found = _APPLY.fullmatch(batch)
    assert found is not None, batch[:200]
    writes = json.loads(found.group(1).replace(b"''", b"'"))
    kept = [
        [kind, {**params, "plans": []} if kind == "insert_job" else params]
        for kind, params in writes
        if kind not in LEFT_OUT - keep
    ]
    literal = json.dumps(kept, separators=(",", ":")).replace("'", "''").encode()
    return b"SELECT videocopies_apply('" + literal + b"'::jsonb);\nCOMMIT"


def shaped(log: Log, shape: str) -> Log:
    keep = frozenset({GUARD} if shape == "one_trip_lean" else ())
    steps = [
        (kind, lean(query, keep) if "lean" in shape and kind == "batch" else query, params)
        for kind, query, params in log
    ]
    if not shape.startswith("one_trip"):
        return steps
    batches = [query for kind, query, _ in steps if kind == "batch"]
    assert len(batches) == len(steps) == 2, [kind for kind, _, _ in steps]  # the load, then the writes
    return [("batch", batches[0] + b";\n" + batches[1], None)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=int, default=40)
    args = parser.parse_args()
    now = datetime.now(UTC)
    clock = ManualClock(now)
    seconds: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    with server() as pg:
        fresh_database(pg, "floor_setup")
        distinct, warm = uvloop.run(cw.prepare(pg.url("floor_setup"), args.orders, 1, clock, args.warm))
        _, _, logs = uvloop.run(
            cw.app_wave(cw.clone(pg, "floor_setup", "floor_rec"), distinct + warm, args.clients, args.pool, clock,
                        record=True)
        )
        for n in range(args.rounds):
            for shape in SHAPES:
                replays = [shaped(log, shape) for log in logs]
                name = f"floor_{shape}_{n}"
                took, _ = cw.wave(
                    "raw", cw.clone(pg, "floor_setup", name), replays[:args.orders], args.clients, args.pool,
                    args.processes, now, replays[args.orders:],
                )
                pg.drop_database(name)
                seconds[shape].append(round(took, 3))
    medians = {shape: statistics.median(values) for shape, values in seconds.items()}
    emit(
        {"bench": "confirm_floor", "orders": args.orders, "clients": args.clients, "pool": args.pool,
         "processes": args.processes,
         **{f"{shape}_seconds": round(median, 3) for shape, median in medians.items()},
         **{f"{shape}_to_raw": round(medians[shape] / medians["raw"], 2) for shape in SHAPES[1:]},
         "rounds": seconds}
    )


if __name__ == "__main__":
    main()
