"""Attack: files that would make FFmpeg read other files or the network (DASH, HLS and ffconcat
manifests named `.mp4`, a name image2 would expand to a sequence), or whose headers lie about
the work inside (pictures larger, or a stream far longer, than the header says). `videocopies
copies make` refuses each in one line that says what it is, and leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostile import BAD, make_bad
from videocopies.roles.copies_make import MAX_INPUT_BYTES

ATTACKS = ("dash_manifest", "hls_playlist", "ffconcat", "image_sequence", "size_lie", "length_lie")


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    """The command's own temp dir, reachable by the database server's user, which runs from there."""
    path = Path(tempfile.mkdtemp(prefix="videocopies-media-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("name", ATTACKS)
def test_copies_make_refuses_the_file_in_one_line_and_leaves_nothing(
    tmp_path: Path, private_tmp: Path, name: str
) -> None:
    bad = make_bad(name, tmp_path / "in", over_bytes=MAX_INPUT_BYTES)
    beside = sorted((tmp_path / "in").iterdir())
    out = tmp_path / "out"

    result = subprocess.run(
        [sys.executable, "-m", "videocopies.cli", "copies", "make", str(bad), "-n", "5", "-o", str(out)],
        capture_output=True, text=True, timeout=240, env={**os.environ, "TMPDIR": str(private_tmp)},
    )

    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"videocopies copies make: {bad.name}: ") and BAD[name] in line
    assert result.stdout == ""
    assert not out.exists()
    assert list(private_tmp.iterdir()) == []
    assert sorted((tmp_path / "in").iterdir()) == beside
