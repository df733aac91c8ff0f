"""Benchmark: `backup create` and `backup verify` on a database with N confirmed orders.

Each order is written by the use cases (a grant, a quote, a confirmation: lot, reservation,
holds, order, job, capacity slot), a few at once. Then the archive is made and verified as
the commands do it: pg_dump, then a scratch cluster, pg_restore and every check there.

Prints one JSON line.

    uv run python bench/backup.py [--orders 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from _support import emit, fresh_database, server, service

from videocopies.adapters.postgres.backup import create_backup, verify_backup
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId

CUSTOMERS = 8


async def populate(url: str, orders: int) -> float:
    container = service(url, pool_size=CUSTOMERS)
    pool = container.gateways.pool()
    await pool.open(wait=True, timeout=30)
    cases, users = container.use_cases, itertools.count(1)

    async def customer() -> None:
        while (user := UserId(next(users))) <= orders:
            await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, 50, timedelta(days=30)))
            quote = await cases.quote_order()(uc.QuoteOrderCommand(user, f"sources/{user}.mp4", 5))
            await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))

    began = time.monotonic()
    try:
        await asyncio.gather(*(customer() for _ in range(CUSTOMERS)))
    finally:
        await pool.close()
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=3000)
    args = parser.parse_args()
    with server() as pg, tempfile.TemporaryDirectory() as out_dir:
        url = fresh_database(pg, "bench_backup")
        populate_s = asyncio.run(populate(url, args.orders))
        backup = create_backup(url, Path(out_dir) / "bench.dump")
        began = time.monotonic()
        verified = verify_backup(backup.path)
        emit({
            "bench": "backup", "orders": args.orders, "populate_s": round(populate_s, 1),
            "archive_bytes": backup.size, "create_s": round(backup.seconds, 2),
            "verify_s": round(time.monotonic() - began, 2), "scratch_start_s": round(verified.start_s, 2),
            "restore_s": round(verified.restore_s, 2), "check_s": round(verified.check_s, 2),
            "passed": verified.passed, "confirmed_orders_seen": verified.audit.orders if verified.audit else None,
        })


if __name__ == "__main__":
    main()
