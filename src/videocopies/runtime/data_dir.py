"""all-in-one's data directory: its embedded database (reachable by the server's user), and the
secrets made on the first run kept there."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

from videocopies.adapters.postgres import migrate
from videocopies.embedded.postgres import LocalPostgres, running_as_root
from videocopies.runtime.launch import RoleFailed


def kept_secret(data: Path, given: str | None, file: str) -> tuple[str, Path | None]:
    """The value given, or one made on the first run and kept in the data directory (quotes
    and the panel's password outlive restarts); and the file it is in, if any."""
    if given:
        return given, None
    path = data / file
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip(), path


def _prepare(data: Path) -> None:
    """The data directory, reachable by the database server's user when we run as root."""
    data.mkdir(parents=True, exist_ok=True)
    if running_as_root():  # the database server runs as its own user, which must reach its directory
        data.chmod(data.stat().st_mode | 0o711)
        if closed := [p for p in data.parents if not p.stat().st_mode & 0o001]:
            raise RoleFailed(
                f"as root, PostgreSQL runs as its own user, which cannot enter {closed[0]}: "
                "choose a --data directory that user can reach (e.g. under /var/lib or /tmp)"
            )


@contextlib.contextmanager
def database(data: Path, say: Callable[[str], None]) -> Iterator[str]:
    """The embedded PostgreSQL under `data` while the block runs, and its database's URL: created
    with its schema on the first run, upgraded on later ones (a data directory whose database
    went missing is an error, not a fresh start)."""
    _prepare(data)
    first_run = not (data / "postgres" / "data" / "PG_VERSION").exists()
    with LocalPostgres(base_dir=data / "postgres", durable=True, tcp=False) as pg:
        url = pg.url("videocopies")
        schema = migrate.init(url) if first_run else migrate.upgrade(url)
        say(f"PostgreSQL {'created' if first_run else 'started'} in {data / 'postgres'} (schema {schema.revision})")
        yield url
