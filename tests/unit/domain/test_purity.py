"""The domain is pure: it imports only the standard library, attrs and itself, and it never
reads the clock, draws ids or takes randomness of its own: all of that comes from outside."""

import ast
import sys
import textwrap
from pathlib import Path

import pytest

import videocopies.domain

DOMAIN = Path(videocopies.domain.__file__).parent
PACKAGE = "videocopies.domain"

# Reading the clock, making ids or drawing entropy. Seeded generators (random.Random(seed))
# and name-based uuids (uuid3, uuid5) are deterministic, so they are allowed.
FORBIDDEN = {
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
    "datetime.date.today",
    "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns", "time.perf_counter",
    "time.perf_counter_ns", "time.process_time", "time.localtime", "time.gmtime", "time.ctime",
    "time.asctime", "time.sleep",
    "uuid.uuid1", "uuid.uuid4",
    "os.urandom", "os.getrandom", "os.getpid",
    "random.SystemRandom",
}
ALLOWED_IN_RANDOM = {"random.Random"}


def domain_files() -> list[Path]:
    return sorted(DOMAIN.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(DOMAIN).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def resolve_relative(module: str | None, level: int, importer: str, is_package: bool) -> str:
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([module] if module else [])])


def is_allowed_import(module: str) -> bool:
    top = module.split(".")[0]
    return (
        module == "__future__"
        or top == "attrs"
        or module == PACKAGE
        or module.startswith(PACKAGE + ".")
        or (top in sys.stdlib_module_names and top != "videocopies")
    )


def import_offenders(tree: ast.AST, importer: str, is_package: bool) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = resolve_relative(node.module, node.level, importer, is_package)
            if node.module is None:  # `from .. import x`: x is a module of that package
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
    return [f"line {line}: import {module}" for line, module in found if not is_allowed_import(module)]


def bound_names(tree: ast.AST, importer: str, is_package: bool) -> dict[str, str]:
    """What each imported name stands for: `import time as t` binds t -> time,
    `from datetime import datetime` binds datetime -> datetime.datetime."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = resolve_relative(node.module, node.level, importer, is_package)
            for alias in node.names:
                names[alias.asname or alias.name] = f"{module}.{alias.name}"
    return names


def dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def is_forbidden(name: str) -> bool:
    if name in FORBIDDEN:
        return True
    module, _, attr = name.rpartition(".")
    if module == "random" and name not in ALLOWED_IN_RANDOM:
        return True  # random.random(), random.choice(), random.seed(), ... share hidden global state
    return module == "secrets" and bool(attr)


def effect_offenders(tree: ast.AST, importer: str, is_package: bool) -> list[str]:
    """Every use, called or merely referenced (as in `default_factory=datetime.now`)."""
    names = bound_names(tree, importer, is_package)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        if not isinstance(node, ast.Attribute | ast.Name):
            continue
        parts = dotted(node)
        if parts is None or parts[0] not in names:
            continue
        full = ".".join([names[parts[0]], *parts[1:]])
        found.append((node.lineno, full))
    return sorted({f"line {line}: {name}" for line, name in found if is_forbidden(name)})


def offenders_in(source: str, importer: str = f"{PACKAGE}.example", is_package: bool = False) -> list[str]:
    tree = ast.parse(source)
    return import_offenders(tree, importer, is_package) + effect_offenders(tree, importer, is_package)


# --- the domain as it is ------------------------------------------------------------------


def test_the_domain_has_modules_to_check():
    assert len(domain_files()) >= 10
    assert DOMAIN / "shared.py" in domain_files()


def test_the_domain_imports_only_the_standard_library_attrs_and_itself():
    offenders = []
    for path in domain_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        found = import_offenders(tree, module_name(path), path.name == "__init__.py")
        offenders += [f"{path.relative_to(DOMAIN.parent)} {o}" for o in found]

    assert not offenders, "the domain imports beyond stdlib/attrs/itself:\n" + "\n".join(offenders)


def test_the_domain_takes_time_ids_and_randomness_from_outside():
    offenders = []
    for path in domain_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        found = effect_offenders(tree, module_name(path), path.name == "__init__.py")
        offenders += [f"{path.relative_to(DOMAIN.parent)} {o}" for o in found]

    assert not offenders, "the domain reads the clock or draws ids/randomness:\n" + "\n".join(offenders)


# --- the checker itself catches what it must ----------------------------------------------


@pytest.mark.parametrize(
    ("source", "offence"),
    [
        ("import sqlalchemy", "import sqlalchemy"),
        ("from pydantic import BaseModel", "import pydantic"),
        ("import attr", "import attr"),
        ("from videocopies.application.ports import Clock", "import videocopies.application.ports"),
        ("import videocopies.adapters.system", "import videocopies.adapters.system"),
        ("from .. import settings", "import videocopies.settings"),
        ("from ..adapters import system", "import videocopies.adapters"),
        ("from datetime import datetime\nx = datetime.now()", "datetime.datetime.now"),
        ("import datetime as dt\nx = dt.datetime.utcnow()", "datetime.datetime.utcnow"),
        ("from datetime import date\nx = date.today()", "datetime.date.today"),
        ("import datetime\nf = datetime.datetime.now", "datetime.datetime.now"),
        ("import time\nx = time.time()", "time.time"),
        ("from time import monotonic", "time.monotonic"),
        ("import uuid\nx = uuid.uuid4()", "uuid.uuid4"),
        ("from uuid import uuid4 as new_id\nx = new_id()", "uuid.uuid4"),
        ("import random\nx = random.random()", "random.random"),
        ("import random\nx = random.choice([1, 2])", "random.choice"),
        ("from random import randint", "random.randint"),
        ("import random\nr = random.SystemRandom()", "random.SystemRandom"),
        ("import os\nx = os.urandom(8)", "os.urandom"),
        ("import secrets\nx = secrets.token_hex()", "secrets.token_hex"),
        ("from secrets import randbits", "secrets.randbits"),
    ],
)
def test_the_checker_finds_a_forbidden_import_or_effect(source, offence):
    found = offenders_in(textwrap.dedent(source))

    assert any(offence in o for o in found), found


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations",
        "import attrs",
        "from datetime import datetime, timedelta\nx = datetime(2026, 1, 1) + timedelta(days=1)",
        "import random\nr = random.Random('seed')\nx = r.random()",
        "import hashlib, hmac, json, enum",
        "from videocopies.domain.shared import DomainError",
        "from . import shared",
        "import uuid\nx = uuid.uuid5(uuid.NAMESPACE_URL, 'x')",
    ],
)
def test_the_checker_lets_pure_code_through(source):
    assert offenders_in(source) == []
