"""Schema lifecycle: init, upgrade and the start-up check (level window and checksums).

A missing or empty database is an error, never a first run: only `init` creates a schema.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import psycopg
from psycopg import sql

import videocopies
from videocopies.adapters.postgres import queries

# The schema level this code was written for; each migration states the code levels it accepts.
# 2: confirmations open with videocopies_load (0015); 3: bulk account and lot inserts (0016);
# 4: users the bot cannot reach (bot_users.blocked_at, 0017); 5: payment claims, reversals and referrals
# settled at the first order (0018); 6: the object lifecycle reads stored_objects (0019); 7: a use case
# reads everything it reads first in one videocopies_load: jobs, receipts, referrals (0022); 8: refusals
# told apart by SQLSTATE alone: VCL01 lease lost, VCC01 capacity full, VCS01 source gone (0023);
# 9: the language a user chose with /language (bot_users.chosen_language, 0025); 10: buttons that lapse
# (a sent quote's Confirm) kept and swept by core (lapsing_buttons, 0026); 11: an account loads its working
# lots only, and the lots a use case names (videocopies_load's `lots`, 0027); 12: the quotes' prune walk ranges
# over ix_orders_unconfirmed (orders.confirmed_at, 0028), so no index names an order's state; 13: a job may
# keep the seed its plans are drawn from (0029); 14: a reservation keeps its holds in its row
# (coin_reservations.holds, 0033)
CODE_LEVEL = 14
# Code below this level reads a job's plans only as a list of every plan (revision 0030).
JOBS_KEEP_SEED_FROM = 13
DEFAULT_CAPACITY = 10_000


class SchemaError(Exception):
    """The database cannot be used by this code; the message says why and what to do."""


@attrs.frozen
class SchemaStatus:
    database: str
    revision: str | None
    min_code_level: int
    max_code_level: int
    code_level: int
    applied: tuple[str, ...]

    @property
    def jobs_keep_seed(self) -> bool:
        """New jobs may store their plans as the seed they are drawn from: every code level
        this schema admits reads that form."""
        return self.min_code_level >= JOBS_KEEP_SEED_FROM

    def describe(self) -> str:
        return (
            f"database {self.database}: revision {self.revision}, accepts code levels "
            f"{self.min_code_level}..{self.max_code_level}; this code is level {self.code_level}; "
            f"applied {', '.join(self.applied)}"
        )


def migrations_dir() -> Path:
    shipped = Path(videocopies.__file__).parent / "migrations"
    if shipped.is_dir():
        return shipped
    source_tree = Path(videocopies.__file__).resolve().parents[2] / "migrations"
    if source_tree.is_dir():
        return source_tree
    raise SchemaError("migrations are not installed alongside the videocopies package")


def _scripts() -> Any:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config, ScriptDirectory.from_config(config)


def checksum(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


_REVISION = re.compile(r"^revision\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)


def known_checksums() -> dict[str, str]:
    """Checksums of the migrations this code ships, read without importing alembic: every
    role runs this check at start, and a worker should not pay for alembic's imports."""
    found = {}
    for path in sorted((migrations_dir() / "versions").glob("*.py")):
        if match := _REVISION.search(path.read_text()):
            found[match.group(1)] = checksum(path)
    return found


def record_revision(ctx: Any, step: Any, heads: Iterable[str], run_args: Any) -> None:
    """Alembic hook: keep schema_migrations and the accepted code-level window in step."""
    conn = ctx.connection
    from sqlalchemy import text

    if not conn.execute(text(queries.sql("has_schema_migrations"))).scalar():
        return
    now = datetime.now(UTC)
    if step.is_upgrade:
        script = step.up_revision
        conn.execute(
            text(queries.sql("record_migration")),
            {"r": script.revision, "c": checksum(script.path), "t": now},
        )
        current = script
    else:
        conn.execute(text(queries.sql("forget_migration")), {"r": step.up_revision_id})
        current = step.down_revisions[0] if step.down_revision_ids else None
    if current is None:
        return
    low, high = current.module.code_levels
    conn.execute(
        text(queries.sql("set_code_levels")),
        {"lo": low, "hi": high, "t": now},
    )


def _sqlalchemy_url(url: str) -> str:
    return "postgresql+psycopg://" + url.split("://", 1)[1]


def _run_alembic(url: str, action: str, target: str) -> None:
    from alembic import command
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    config, _ = _scripts()
    engine = create_engine(_sqlalchemy_url(url), poolclass=NullPool)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            getattr(command, action)(config, target)
    finally:
        engine.dispose()


def _connect(url: str) -> psycopg.Connection:
    try:
        return psycopg.connect(url, autocommit=True, prepare_threshold=None, connect_timeout=10)
    except psycopg.OperationalError as error:
        info = psycopg.conninfo.conninfo_to_dict(url)
        name = info.get("dbname", "?")
        if "does not exist" in str(error):
            raise SchemaError(
                f"database {name!r} does not exist: refusing to start. "
                "Create it and its schema explicitly with `videocopies db init`."
            ) from error
        raise SchemaError(f"cannot connect to database {name!r}: {error}".strip()) from error


def _has_schema(conn: psycopg.Connection) -> bool:
    return bool(conn.execute(queries.sql("has_schema")).fetchone()[0])  # type: ignore[index]


def init(url: str, capacity: int = DEFAULT_CAPACITY) -> SchemaStatus:
    """Create the database (when missing) and its schema; refuse one that already has a schema."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    name = str(info.get("dbname", ""))
    try:
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=None, connect_timeout=10)
    except psycopg.OperationalError as error:
        if "does not exist" not in str(error):
            raise SchemaError(f"cannot connect to database {name!r}: {error}") from error
        maintenance = psycopg.conninfo.make_conninfo(url, dbname="postgres")
        with psycopg.connect(maintenance, autocommit=True, prepare_threshold=None) as admin:
            admin.execute(sql.SQL(queries.sql("create_database")).format(sql.Identifier(name)))
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    with conn:
        if _has_schema(conn):
            raise SchemaError(f"database {name!r} already has a videocopies schema; use `videocopies db upgrade`")
    _run_alembic(url, "upgrade", "head")
    set_capacity(url, capacity)
    return check(url)


def set_capacity(url: str, slots: int) -> int:
    """Provision `slots` capacity slots; free slots above it are removed, taken ones stay
    until their order closes. Returns how many slots exist now."""
    with _connect(url) as conn, conn.transaction():
        conn.execute(queries.sql("add_capacity_slots"), (slots,))
        conn.execute(queries.sql("remove_free_slots_above"), (slots,))
        return int(conn.execute(queries.sql("count_capacity_slots")).fetchone()[0])  # type: ignore[index]


def upgrade(url: str, target: str = "head") -> SchemaStatus:
    with _connect(url) as conn:
        if not _has_schema(conn):
            raise SchemaError(_empty_message(url))
    _run_alembic(url, "upgrade", target)
    return status(url)


def downgrade(url: str, target: str) -> None:
    _run_alembic(url, "downgrade", target)


def _empty_message(url: str) -> str:
    name = psycopg.conninfo.conninfo_to_dict(url).get("dbname", "?")
    return (
        f"database {name!r} has no videocopies schema: refusing to start (an empty database is "
        "not a first run). Create the schema explicitly with `videocopies db init`."
    )


def status(url: str) -> SchemaStatus:
    with _connect(url) as conn:
        if not _has_schema(conn):
            raise SchemaError(_empty_message(url))
        row = conn.execute(queries.sql("code_levels")).fetchone()
        if row is None:
            raise SchemaError(_empty_message(url))
        applied = conn.execute(queries.sql("applied_migrations")).fetchall()
        stamped = _has_table(conn, "alembic_version")
        version = conn.execute(queries.sql("alembic_revision")).fetchone() if stamped else None
    name = str(psycopg.conninfo.conninfo_to_dict(url).get("dbname", "?"))
    revision = version[0] if version else None
    return SchemaStatus(name, revision, row[0], row[1], CODE_LEVEL, tuple(r for r, _ in applied))


def _has_table(conn: psycopg.Connection, table: str) -> bool:
    return bool(conn.execute(queries.sql("has_table"), (table,)).fetchone()[0])  # type: ignore[index]


def check(url: str) -> SchemaStatus:
    """What every role runs before it starts: refuse a database this code must not touch."""
    current = status(url)
    if not current.min_code_level <= CODE_LEVEL <= current.max_code_level:
        raise SchemaError(
            f"database {current.database!r} accepts code levels {current.min_code_level}.."
            f"{current.max_code_level}, but this code is level {CODE_LEVEL}: refusing to start. "
            + ("Run `videocopies db upgrade`." if current.max_code_level < CODE_LEVEL else "Deploy newer code.")
        )
    known = known_checksums()
    with _connect(url) as conn:
        applied = dict(conn.execute(queries.sql("applied_migrations")).fetchall())
    changed = sorted(rev for rev, digest in applied.items() if rev in known and known[rev] != digest)
    if changed:
        raise SchemaError(
            f"database {current.database!r}: migration(s) {', '.join(changed)} were applied with different "
            "content than this code ships (checksum mismatch): refusing to start."
        )
    return current
