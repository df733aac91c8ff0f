"""The embedded PostgreSQL that all-in-one keeps its data in trusts whoever connects, so it must
let no one else connect: it listens on no TCP port (on 127.0.0.1 any local account got in as
superuser, and through `COPY ... PROGRAM` could run commands as the server's user), and its
socket admits the server's own account and root alone. A --data path too long for a socket
still gets one, outside it."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from videocopies.embedded.pg_programs import pg_bindir
from videocopies.embedded.postgres import LocalPostgres, LocalServerError
from videocopies.runtime.data_dir import database


def _port(url: str) -> int:
    return int(conninfo_to_dict(url)["port"])


def _tcp_refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _as_nobody(url: str) -> subprocess.CompletedProcess[str]:
    """psql as the unprivileged `nobody`, through the socket the url names and over TCP."""
    params = conninfo_to_dict(url)
    psql = str(pg_bindir(None) / "psql")
    script = (f"{psql} -h {params['host']} -p {params['port']} -U postgres -d videocopies -Atc 'SELECT 1' ; "
              f"{psql} -h 127.0.0.1 -p {params['port']} -U postgres -d videocopies -Atc 'SELECT 1'")
    return subprocess.run(["sh", "-c", script], user="nobody", cwd="/", capture_output=True, text=True, timeout=30)


@pytest.fixture
def scratch() -> Iterator[Path]:
    # Not under pytest's tmp_path: as root the database server's own user must reach it.
    with tempfile.TemporaryDirectory(prefix="videocopies-access-") as made:
        Path(made).chmod(0o711)
        yield Path(made)


def test_all_in_ones_database_admits_only_its_own_account(scratch: Path) -> None:
    with database(scratch / "data", lambda _: None) as url:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
        assert _tcp_refused(_port(url))
        socket_dir = Path(conninfo_to_dict(url)["host"])
        assert socket_dir.stat().st_mode & 0o077 == 0
        if os.geteuid() == 0:
            other = _as_nobody(url)
            assert other.stdout == "" and other.stderr.count("Permission denied") + other.stderr.count(
                "Connection refused") == 2, other


def _too_deep_for_a_socket(scratch: Path) -> Path:
    """A directory under `scratch` whose socket path would pass 107 bytes, reachable by the
    database server's account."""
    deep = scratch.joinpath(*["a-rather-long-directory-name"] * 4)
    for level in reversed((deep, *deep.parents)):
        if level.is_relative_to(scratch) and level != scratch:
            level.mkdir(exist_ok=True)
            level.chmod(0o711)
    return deep


def test_a_data_directory_too_deep_for_a_socket_still_gets_a_private_one(scratch: Path) -> None:
    deep = _too_deep_for_a_socket(scratch) / "data"
    with database(deep, lambda _: None) as url:
        socket_dir = Path(conninfo_to_dict(url)["host"])
        assert not socket_dir.is_relative_to(deep) and socket_dir.stat().st_mode & 0o077 == 0
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not socket_dir.exists()  # removed with the server


def test_a_socket_directory_swapped_for_a_link_is_refused_and_its_target_left_alone(scratch: Path) -> None:
    """The socket directory in the temporary directory is named at random, but its name shows
    in the server's pid file: one replaced by a link (to a system directory, say) while the
    server is stopped is not used, chmod-ed or handed to the server's account."""
    deep = _too_deep_for_a_socket(scratch)
    target = scratch / "someone-elses"
    target.mkdir(mode=0o755)
    pg = LocalPostgres(deep / "pg", tcp=False)
    with pg:
        url = pg.url()
    assert not pg.socket_dir.exists()
    pg.socket_dir.symlink_to(target)
    try:
        with pytest.raises(LocalServerError, match="a link or another account's"), pg:
            pass
        assert target.stat().st_mode & 0o777 == 0o755 and target.stat().st_uid == os.geteuid()
    finally:
        pg.socket_dir.unlink()
    with pg:  # made again, and the same URL as before
        assert pg.url() == url
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
