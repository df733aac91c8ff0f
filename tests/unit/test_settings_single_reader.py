"""Only settings/ reads the environment: a role or an adapter that looked up a variable of its
own would be configured where no operator looks. The exceptions are the ones
settings/__init__.py names, each for its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import videocopies

SRC = Path(videocopies.__file__).parent
# Where reading (or copying) the environment stays, as settings/__init__.py says why.
ALLOWED = {
    "settings", "embedded", "testing", "demo/bot_story.py", "runtime/launch.py",
    "adapters/postgres/backup.py", "adapters/ffmpeg/binary.py",
}


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that touch os.environ or call os.getenv."""
    return [
        node.lineno for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
        and isinstance(node.value, ast.Name) and node.value.id == "os"
    ]


def _allowed(path: Path) -> bool:
    relative = path.relative_to(SRC).as_posix()
    return any(relative == allowed or relative.startswith(f"{allowed}/") for allowed in ALLOWED)


def test_no_module_outside_settings_reads_the_environment() -> None:
    readers = {
        path.relative_to(SRC).as_posix(): lines
        for path in sorted(SRC.rglob("*.py")) if not _allowed(path)
        if (lines := _reads_environment(ast.parse(path.read_text(), str(path))))
    }

    assert readers == {}, f"read the variables in settings/ and pass the values in: {readers}"


def test_the_settings_read_it() -> None:
    assert _reads_environment(ast.parse((SRC / "settings" / "core.py").read_text()))  # the check can see a read
