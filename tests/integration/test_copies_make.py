"""`videocopies copies make`: copies and a report for a good clip; one line, a non-zero exit
and nothing left behind for anything that is not a usable video."""

from __future__ import annotations

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

from media import make_clip


@pytest.fixture(autouse=True)
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The command's own temp dir (reachable by the database server's user, which runs from there), so
    what it leaves behind is told apart from another test's scratch dirs when tests run side by side."""
    path = Path(tempfile.mkdtemp(prefix="videocopies-copies-test-"))
    path.chmod(0o711)
    monkeypatch.setenv("TMPDIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "videocopies.cli", "copies", "make", *args],
        capture_output=True, text=True, timeout=180, env=dict(os.environ),
    )


def _scratch_dirs() -> set[str]:
    return {p.name for p in Path(os.environ["TMPDIR"]).glob("videocopies-make-*")}


def test_a_clip_becomes_verified_copies_and_a_report(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    before = _scratch_dirs()
    result = _run(str(clip), "-n", "5", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [c["copy"] for c in report["copies"]] == [1, 2, 3, 4, 5]
    made = [c for c in report["copies"] if c["file"] is not None]
    assert len(made) >= 4  # a copy the quality gate gave up on is listed without a file
    assert len({c["sha256"] for c in made}) == len(made)
    gate = report["thresholds"]
    for copy in made:
        with av.open(str(tmp_path / "out" / copy["file"])) as container:
            assert sum(1 for _ in container.decode(video=0)) > 40
        assert set(copy) >= {"effects", "sha256", "size", "duration_s", "render_seconds", "ssim", "phash_distance",
                             "min_pair_distance"}
        assert copy["ssim"] >= gate["min_ssim"] and copy["phash_distance"] >= gate["min_phash_distance"]
    assert made[0]["min_pair_distance"] is None or made[0]["copy"] > 1
    assert all(c["min_pair_distance"] >= gate["min_pair_distance"] for c in made[1:])
    assert _scratch_dirs() == before


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.mp4", b"", "empty file"),
        ("noise.mp4", os.urandom(4096), "not a media file"),
        ("notes.txt", b"hello", "not a media file"),
    ],
)
def test_a_bad_input_is_refused_in_one_line_and_leaves_nothing(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    before = _scratch_dirs()
    result = _run(str(bad), "-n", "1", "-o", str(tmp_path / "out"))
    assert result.returncode != 0
    assert reason in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert _scratch_dirs() == before


def test_a_truncated_clip_is_refused(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    result = _run(str(cut), "-n", "1", "-o", str(tmp_path / "out"))
    assert result.returncode != 0 and "cut.mp4" in result.stderr
    assert not (tmp_path / "out").exists()
