"""`videocopies nodes add|revoke|list`: node identities, managed by an operator."""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys

from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.nodes import PostgresNodeRegistry
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application.nodes import IssueNodeToken, RevokeNode
from videocopies.application.ports import NodeExists


async def _run(database_url: str, args: argparse.Namespace) -> int:
    pool = make_pool(database_url, max_size=1)
    await pool.open(wait=True, timeout=30)
    try:
        registry = PostgresNodeRegistry(pool)
        if args.action == "add":
            try:
                issued = await IssueNodeToken(registry, SystemClock(), secrets.token_hex)(args.name, args.role)
            except NodeExists:
                print(f"videocopies nodes add: a live node is already named {args.name}", file=sys.stderr)
                return 1
            print(issued.token)
            print(f"node {args.name} ({args.role}): keep this token secret; it is not shown again", file=sys.stderr)
            return 0
        if args.action == "revoke":
            if not await RevokeNode(registry, SystemClock())(args.name):
                print(f"videocopies nodes revoke: no live node named {args.name}", file=sys.stderr)
                return 1
            print(f"revoked {args.name}")
            return 0
        for node, last_seen in await registry.all():
            state = "revoked" if node.revoked_at else "live"
            seen = last_seen.isoformat(timespec="seconds") if last_seen else "never"
            print(f"{node.name}\t{node.role}\t{state}\tlast contact {seen}")
        return 0
    finally:
        await pool.close()


def main(database_url: str, args: argparse.Namespace) -> int:
    try:
        migrate.check(database_url)
    except migrate.SchemaError as refused:
        print(f"videocopies nodes: {refused}", file=sys.stderr)
        return 2
    return asyncio.run(_run(database_url, args))
