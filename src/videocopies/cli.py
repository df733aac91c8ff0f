"""The `videocopies` command: roles and operations are subcommands."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def _database_url(args: argparse.Namespace) -> str:
    from videocopies.settings.commands import database_url

    return database_url(args.database_url)


def _db(args: argparse.Namespace) -> int:
    from videocopies.adapters.postgres import migrate

    url = _database_url(args)
    try:
        if args.action == "init":
            status = migrate.init(url, capacity=args.capacity)
        elif args.action == "upgrade":
            status = migrate.upgrade(url, args.to)
            migrate.check(url)
        elif args.action == "prune":
            return _prune(url, args.dry_run, args.json)
        elif args.action == "capacity":
            migrate.check(url)
            print(f"capacity slots: {migrate.set_capacity(url, args.slots)}")
            return 0
        else:
            status = migrate.check(url)
    except migrate.SchemaError as refused:
        print(f"videocopies db {args.action}: {refused}", file=sys.stderr)
        return 2
    print(status.describe())
    return 0


def _prune(url: str, dry_run: bool, as_json: bool) -> int:
    """Prints per table the rows deleted (or, with `dry_run`, that would be)."""
    import asyncio
    import json

    from psycopg_pool import AsyncConnectionPool

    from videocopies.adapters.postgres import migrate
    from videocopies.adapters.postgres.retention import PostgresTransientRows
    from videocopies.adapters.system import SystemClock
    from videocopies.application.retention import PruneTables
    from videocopies.settings import pruning_from_env

    pruning = pruning_from_env()
    migrate.check(url)

    async def prune() -> dict[str, int]:
        pool = AsyncConnectionPool(url, min_size=1, max_size=1, open=False, kwargs={"prepare_threshold": None})
        await pool.open(wait=True, timeout=30)
        try:
            rows = PostgresTransientRows(pool)
            pruned = await PruneTables(rows, SystemClock(), pruning["retention"], pruning["prune_batch"])(dry_run)
        finally:
            await pool.close()
        return {table.value: count for table, count in pruned.rows.items()}

    counts = asyncio.run(prune())
    verb = "would delete" if dry_run else "deleted"
    for table, count in counts.items():
        print(f"{table}: {verb} {count} rows")
    if as_json:
        print(json.dumps({**counts, "dry_run": dry_run}))
    return 0


def _backup(args: argparse.Namespace) -> int:
    from videocopies.roles.backup import create, verify

    if args.action == "create":
        return create(_database_url(args), args.out)
    return verify(args.file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="videocopies", description=__doc__)
    parser.add_argument("--database-url", help="PostgreSQL URL (default: $VIDEOCOPIES_DATABASE_URL)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="the seed walk, real copies, then one order through the bot simulator")
    aio = commands.add_parser("all-in-one", help="every role on this machine (the simulator unless a bot token is set)")
    aio.add_argument("--data", type=Path, default=Path("var/all-in-one"), help="where its database and files live")
    aio.add_argument("--demo", action="store_true", help="run the scripted user's order through it, then stop")
    db = commands.add_parser("db", help="create, upgrade or check the database schema; prune old rows")
    db_actions = db.add_subparsers(dest="action", required=True)
    init = db_actions.add_parser("init", help="create the database (if missing) and its schema")
    init.add_argument("--capacity", type=int, default=10_000, help="capacity slots (orders in progress)")
    upgrade = db_actions.add_parser("upgrade", help="apply pending migrations to an initialised database")
    upgrade.add_argument(
        "--to", default="head", metavar="REVISION",
        help="stop at this revision (default: the newest); see docs/operations.md for revisions that come in steps",
    )
    db_actions.add_parser("check", help="refuse (exit 2) a missing, empty or incompatible database")
    prune = db_actions.add_parser(
        "prune", help="delete transient rows past their retention (VIDEOCOPIES_RETENTION_*_S); money rows are kept"
    )
    prune.add_argument("--dry-run", action="store_true", help="delete nothing; print what would be deleted")
    prune.add_argument("--json", action="store_true", help="also print the counts as one JSON line")
    capacity = db_actions.add_parser("capacity", help="set the number of capacity slots")
    capacity.add_argument("slots", type=int)
    backup = commands.add_parser("backup", help="make a backup, or prove one restores and is sound")
    backup_actions = backup.add_subparsers(dest="action", required=True)
    create = backup_actions.add_parser("create", help="pg_dump the database into one archive file")
    create.add_argument("--out", type=Path, help="the archive (default videocopies-<db>-<UTC time>.dump here)")
    verify = backup_actions.add_parser(
        "verify", help="restore an archive into a scratch cluster and check it there (never the working database)"
    )
    verify.add_argument("file", type=Path)
    core = commands.add_parser("core", help="run the core role (Job API and sweeps)")
    core.add_argument("--host", help="listen address (default $VIDEOCOPIES_CORE_HOST or 127.0.0.1)")
    core.add_argument("--port", type=int, help="listen port (default $VIDEOCOPIES_CORE_PORT or 8700)")
    control = commands.add_parser("control", help="run the control panel (read-only over the database)")
    control.add_argument("--host", help="listen address (default $VIDEOCOPIES_CONTROL_HOST or 127.0.0.1)")
    control.add_argument("--port", type=int, help="listen port (default $VIDEOCOPIES_CONTROL_PORT or 8800)")
    nodes = commands.add_parser("nodes", help="issue, revoke and list node tokens")
    nodes_actions = nodes.add_subparsers(dest="action", required=True)
    add = nodes_actions.add_parser("add", help="issue a token for a new node (printed once)")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=["worker", "edge", "control"])
    revoke = nodes_actions.add_parser("revoke", help="revoke a node's token at once")
    revoke.add_argument("name")
    nodes_actions.add_parser("list", help="every node, its role, state and last contact")
    deploy = commands.add_parser("deploy", help="blue/green: replace a running role without dropping leases")
    deploy_roles = deploy.add_subparsers(dest="role", required=True)
    deploy_core = deploy_roles.add_parser("core", help="start a new core beside the old, move the nodes, stop the old")
    deploy_core.add_argument("--from", dest="old_url", help="the running core (default $VIDEOCOPIES_CORE_URL)")
    deploy_core.add_argument("--port", type=int, help="the new core's port (default: a free one)")
    deploy_core.add_argument("--min-free-mb", type=float, default=256.0,
                             help="refuse when less memory is free (at least 1.5x the old core's)")
    deploy_core.add_argument("--log", type=Path, help="the new core's log file")
    deploy_core.add_argument("--balancer", type=Path, metavar="SOCKET",
                             help="two cores behind HAProxy: its admin socket; the old core is drained there, "
                                  "stopped and replaced in place, no node moved")
    deploy_core.add_argument("--server", default="cores/core1",
                             help="with --balancer: the old core's backend/server there (cores/core1)")
    payments = commands.add_parser("payments", help="reconcile with the payment provider, refund a purchase")
    payments_actions = payments.add_subparsers(dest="action", required=True)
    reconcile = payments_actions.add_parser(
        "reconcile", help="credit missed payments, finish pending refunds, reverse unknown ones, print the report"
    )
    reconcile.add_argument(
        "--trust-list", action="store_true",
        help="act on the provider's list even when it holds none of our payments (refused: another bot's token?)",
    )
    refund = payments_actions.add_parser("refund", help="refund a purchase whose coins are all unspent")
    refund.add_argument("charge_id", help="telegram_payment_charge_id")
    refund.add_argument("--reason", default="refunded by an operator", help="recorded with the refund")
    commands.add_parser("worker", help="run a worker (renders copies)")
    commands.add_parser("edge", help="run the Telegram edge (updates in, messages out)")
    copies = commands.add_parser("copies", help="make copies of a video locally")
    copies_actions = copies.add_subparsers(dest="action", required=True)
    make = copies_actions.add_parser("make", help="the whole path on the embedded defaults")
    make.add_argument("input", type=Path)
    make.add_argument("-n", "--copies", type=int, default=1)
    make.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command in ("core", "edge", "worker", "control"):
        from videocopies.runtime.role_run import hold_stops

        hold_stops()  # before the role's imports: a stop while it starts is a clean stop too
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # Every request a client makes is not news; a role's log is for what went wrong or changed.
    for chatty in ("alembic", "httpx", "aiogram.event", "aiohttp.access"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    if args.command == "demo":
        from videocopies.demo.walk import main as demo

        return demo()
    if args.command == "db":
        return _db(args)
    if args.command == "all-in-one" and args.demo:
        from videocopies.demo.bot_story import run_bot_story

        return run_bot_story(data=args.data)
    if args.command == "all-in-one":
        from videocopies.roles.all_in_one import main as all_in_one

        return all_in_one(args.data)
    if args.command == "backup":
        return _backup(args)
    if args.command == "copies":
        from videocopies.roles.copies_make import make_copies

        return make_copies(args.input, args.copies, args.out)
    if args.command == "edge":
        from videocopies.roles.edge import main as edge

        return edge()
    if args.command == "worker":
        from videocopies.roles.worker import main as worker

        return worker()
    if args.command == "core":
        from videocopies.roles.core import main as run_core

        return run_core(_database_url(args), args.host, args.port)
    if args.command == "control":
        from videocopies.roles.control import main as run_control

        return run_control(_database_url(args), args.host, args.port)
    if args.command == "deploy":
        from videocopies.roles.deploy import main as run_deploy

        return run_deploy(args.old_url, args.port, args.min_free_mb, args.log, args.balancer, args.server)
    if args.command == "payments":
        from videocopies.roles.payments import main as payments_main

        return payments_main(_database_url(args), args)
    if args.command == "nodes":
        from videocopies.roles.nodes import main as run_nodes

        return run_nodes(_database_url(args), args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
