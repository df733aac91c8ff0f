"""The hostile corpus through `videocopies copies make`: each bad input is refused in one clear
line with nothing left behind; each unusual but valid one becomes verified copies."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import av
import pytest

from hostile import BAD, UNUSUAL, make_bad, make_unusual
from videocopies.adapters.probe import PyAvProber
from videocopies.roles.copies_make import MAX_INPUT_BYTES


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    """The command's temp dir, its own: other suites on this machine share the system one.
    Reachable by the database server's user, which runs from there."""
    path = Path(tempfile.mkdtemp(prefix="videocopies-hostile-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _run(temp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "videocopies.cli", "copies", "make", *args],
        capture_output=True, text=True, timeout=240, env={**os.environ, "TMPDIR": str(temp)},
    )


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_hostile_input_is_refused_in_one_line_and_leaves_nothing(
    tmp_path: Path, private_tmp: Path, name: str
) -> None:
    bad = make_bad(name, tmp_path / "in", over_bytes=MAX_INPUT_BYTES)
    result = _run(private_tmp, str(bad), "-n", "5", "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and bad.name in result.stderr
    assert BAD[name] in result.stderr
    assert not (tmp_path / "out").exists()
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("name", UNUSUAL)
def test_an_unusual_but_valid_input_becomes_copies(tmp_path: Path, private_tmp: Path, name: str) -> None:
    source = make_unusual(name, tmp_path / "in")
    shown = asyncio.run(PyAvProber().probe(source, full_decode=False))  # as displayed: a phone's rotation applied
    result = _run(private_tmp, str(source), "-n", "1", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    (copy,) = json.loads((tmp_path / "out" / "report.json").read_text())["copies"]
    assert (copy["width"], copy["height"]) == (shown.width, shown.height)
    assert list(private_tmp.iterdir()) == []
    with av.open(str(tmp_path / "out" / copy["file"])) as container:
        assert bool(container.streams.audio) == shown.has_audio
        assert sum(1 for _ in container.decode(video=0)) > 10
