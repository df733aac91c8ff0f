"""Backups as pg_dump archives, and their proof: an archive is restored into a scratch
cluster of its own and checked there (schema level, migration checksums, the ledger).

A replica is not a backup: it copies a mistake as faithfully as a payment. Verification
never touches the working database; it does not even know where it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import attrs
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.ledger_audit import LedgerAudit, audit_ledger
from videocopies.embedded.pg_programs import client_bindir, installed_newest_first
from videocopies.embedded.postgres import LocalPostgres

RESTORED = "restored"


class BackupError(Exception):
    """A backup could not be made or read; the message says what and why."""


@attrs.frozen
class Backup:
    path: Path
    size: int
    sha256: str
    seconds: float
    schema: migrate.SchemaStatus


@attrs.frozen
class Verification:
    path: Path
    size: int
    sha256: str
    start_s: float  # the scratch cluster's
    restore_s: float
    check_s: float
    scratch_dir: Path  # removed by the time this is returned
    schema: migrate.SchemaStatus | None
    schema_refusal: str | None
    audit: LedgerAudit | None

    @property
    def passed(self) -> bool:
        return self.schema_refusal is None and self.audit is not None and self.audit.sound


def default_name(database: str, now: datetime | None = None) -> Path:
    moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return Path(f"videocopies-{database}-{moment}.dump")


def create_backup(url: str, out: Path | None = None) -> Backup:
    """pg_dump's custom format of the database at `url`, which must exist and hold a schema.
    Written beside `out` under a temporary name and renamed when complete, so a file with
    the final name is always a whole archive."""
    began = time.monotonic()
    schema = migrate.status(url)  # a missing, unreachable or empty database is refused here
    out = out or default_name(schema.database)
    with psycopg.connect(url) as conn:
        server_major = conn.info.server_version // 10000
    with _partial_beside(out) as partial, _password_apart(url) as (conninfo, env):
        _run(
            [client_bindir(server_major) / "pg_dump", "--format=custom", "--no-password", "--file", partial,
             "--dbname", conninfo],
            "pg_dump", env,
        )
        _sync(partial)
        os.replace(partial, out)
    _sync(out.absolute().parent)
    size, digest = _fingerprint(out)
    return Backup(out, size, digest, time.monotonic() - began, schema)


def verify_backup(path: Path) -> Verification:
    """Restore `path` into a new private cluster, check it there, and remove the cluster."""
    if not path.is_file():
        raise BackupError(f"{path}: no such file")
    size, digest = _fingerprint(path)
    dumped_from, dumped_by = _versions(path)
    # Restored into the major it was dumped from when that is installed, by a pg_restore at least
    # as new as the pg_dump that wrote it.
    restore = client_bindir(dumped_by) / "pg_restore"
    scratch = LocalPostgres(major=str(dumped_from), tcp=False)
    began = time.monotonic()
    with scratch:
        started = time.monotonic()
        scratch.create_database(RESTORED)
        url = scratch.url(RESTORED)
        with _password_apart(url) as (conninfo, env):
            argv = [restore, "--exit-on-error", "--no-owner", "--no-privileges", "--dbname",
                    conninfo, path]
            _run(argv, "pg_restore into the scratch cluster", env)
        restored = time.monotonic()
        schema, refusal = None, None
        try:
            schema = migrate.check(url)
        except migrate.SchemaError as refused:
            refusal = str(refused)
            with contextlib.suppress(migrate.SchemaError):
                schema = migrate.status(url)
        audit = audit_ledger(url) if schema is not None else None
        checked = time.monotonic()
    return Verification(
        path, size, digest, started - began, restored - started, checked - restored, scratch.base_dir,
        schema, refusal, audit,
    )


def _versions(path: Path) -> tuple[int, int]:
    """The major versions of the server an archive was dumped from and of the pg_dump that
    dumped it, as the newest pg_restore installed lists them (an older one may not read it)."""
    listed, error = None, ""
    for bindir in installed_newest_first():
        result = subprocess.run([str(bindir / "pg_restore"), "--list", str(path)], capture_output=True, text=True)
        if result.returncode == 0:
            listed = result.stdout
            break
        error = error or result.stderr.strip()
    if listed is None:
        raise BackupError(f"{path} is not a readable pg_dump archive: {error or 'no pg_restore installed'}")
    found_from = re.search(r"Dumped from database version: (\d+)", listed)
    found_by = re.search(r"Dumped by pg_dump version: (\d+)", listed)
    if found_from is None or found_by is None:
        raise BackupError(f"{path}: its table of contents names no versions")
    return int(found_from.group(1)), int(found_by.group(1))


def _run(argv: list[str | Path], what: str, env: dict[str, str] | None = None) -> None:
    try:
        result = subprocess.run([str(arg) for arg in argv], capture_output=True, text=True, env=env)
    except OSError as error:
        raise BackupError(f"{what} could not start: {error}") from error
    if result.returncode != 0:
        raise BackupError(f"{what} failed (exit {result.returncode}): {result.stderr.strip() or '(no output)'}")


@contextlib.contextmanager
def _password_apart(url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """The connection without its password, for a child's argv (which any local user reads in
    `ps`), and the child's environment naming a passfile that holds it: mode 0600, in a private
    directory, removed when the child is done."""
    params = conninfo_to_dict(url)
    password = params.pop("password", None)
    if password is None:
        yield make_conninfo(**params), dict(os.environ)
        return
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}  # the URL's password wins, as it did
    escaped = password.replace("\\", "\\\\").replace(":", "\\:")
    with tempfile.TemporaryDirectory(prefix="videocopies-pgpass-") as private:
        passfile = Path(private) / "pgpass"
        with os.fdopen(os.open(passfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(f"*:*:*:*:{escaped}\n")
        yield make_conninfo(**params), env | {"PGPASSFILE": str(passfile)}


@contextlib.contextmanager
def _partial_beside(out: Path) -> Iterator[Path]:
    partial = out.with_name(f".{out.name}.partial-{secrets.token_hex(4)}")
    try:
        yield partial
    finally:
        partial.unlink(missing_ok=True)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fingerprint(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    with path.open("rb") as archive:
        while chunk := archive.read(1 << 20):
            digest.update(chunk)
    return path.stat().st_size, digest.hexdigest()

