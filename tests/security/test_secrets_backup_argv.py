"""`videocopies backup create` against a role that needs its password: the backup is made, and
pg_dump's argv (what any local user reads in `ps`) never holds the password; it reaches
pg_dump through a passfile of mode 0600 that is gone once the backup is written."""

from __future__ import annotations

import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

from videocopies.adapters.postgres import migrate
from videocopies.cli import main
from videocopies.embedded.postgres import LocalPostgres, hand_to_service_user, pg_bindir

ROLE = "keeper"
# A colon and a backslash: the two characters a passfile must escape.
PASSWORD = f"pa:ss\\word-{secrets.token_hex(8)}"

RECORDER = """#!/bin/sh
printf '%s\\n' "$@" > "{record}/argv"
cat /proc/$$/cmdline > "{record}/cmdline"
if [ -n "$PGPASSFILE" ]; then
  echo "$PGPASSFILE" > "{record}/passfile"
  stat -c '%a' "$PGPASSFILE" > "{record}/passfile_mode"
fi
exec "{real}" "$@"
"""


@pytest.fixture
def protected() -> Iterator[str]:
    """A server of its own where ROLE signs in with a password (SCRAM), owning a database with our schema."""
    with LocalPostgres() as server:
        hba = server.data_dir / "pg_hba.conf"
        hba.write_text(f"host all {ROLE} 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n"
                       "local all all trust\n")
        hand_to_service_user(hba)
        with psycopg.connect(server.url(), autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(ROLE),
                                                                          sql.Literal(PASSWORD)))
            admin.execute(sql.SQL("CREATE DATABASE vault OWNER {}").format(sql.Identifier(ROLE)))
            admin.execute("SELECT pg_reload_conf()")
        url = f"postgresql://{ROLE}:{quote(PASSWORD, safe='')}@127.0.0.1:{server.port}/vault"
        migrate.init(url, capacity=2)
        yield url


def _recording_bindir(tmp_path: Path) -> tuple[Path, Path]:
    """A PostgreSQL bin directory whose pg_dump writes down how it was called, then runs the real one."""
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir()
    record.mkdir()
    for program in pg_bindir().iterdir():
        if program.name != "pg_dump":
            (bindir / program.name).symlink_to(program)
    recorder = bindir / "pg_dump"
    recorder.write_text(RECORDER.format(record=record, real=pg_bindir() / "pg_dump"))
    recorder.chmod(stat.S_IRWXU)
    return bindir, record


def test_pg_dump_gets_the_password_through_a_private_passfile_never_in_its_argv(
    protected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(protected.replace(quote(PASSWORD, safe=""), "wrong")).close()
    bindir, record = _recording_bindir(tmp_path)
    monkeypatch.setenv("VIDEOCOPIES_PG_BINDIR", str(bindir))
    archive = tmp_path / "nightly.dump"

    code = main(["--database-url", protected, "backup", "create", "--out", str(archive)])

    said = capsys.readouterr()
    assert code == 0, said.err
    assert archive.stat().st_size > 0
    argv, cmdline = (record / "argv").read_text(), (record / "cmdline").read_bytes().decode()
    assert f"user={ROLE}" in argv and "dbname=vault" in argv  # the connection is there, without its password
    for seen in (argv, cmdline, said.out, said.err):
        assert PASSWORD not in seen and quote(PASSWORD, safe="") not in seen and "password=" not in seen
    assert (record / "passfile_mode").read_text().strip() == "600"
    assert not Path((record / "passfile").read_text().strip()).exists()
