"""Every port lives in application/ports/, and `application.ports` offers every name its modules
define: a newcomer finds what the application needs from the world in one place, and imports it
from one place whatever module of the package it is in."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import videocopies.application.ports as ports

SRC = Path(__file__).parents[2] / "src" / "videocopies"
# Protocols that are no port of the application, as no application code uses them: what the
# PostgreSQL repositories ask of their transaction (Transaction, _Uow), where edge keeps a video
# and finds a copy (SourceStore, CopyFetcher), what a worker process's loop drives (Rounds).
NOT_PORTS = {"Transaction", "_Uow", "SourceStore", "CopyFetcher", "Rounds"}
TOOLS = ("embedded/", "testing/")  # servers and a simulator for tests and demos


def protocols(source: str, filename: str) -> list[tuple[int, str]]:
    """Classes deriving from typing.Protocol (asyncio.Protocol is a transport's callbacks)."""

    def is_typing_protocol(base: ast.expr) -> bool:
        if isinstance(base, ast.Subscript):
            base = base.value
        return (isinstance(base, ast.Name) and base.id == "Protocol") or (
            isinstance(base, ast.Attribute) and base.attr == "Protocol"
            and isinstance(base.value, ast.Name) and base.value.id in ("typing", "typing_extensions")
        )

    return [
        (node.lineno, node.name)
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.ClassDef) and any(is_typing_protocol(base) for base in node.bases)
    ]


def test_protocols_are_found_and_asyncio_ones_are_not() -> None:
    source = (
        "import asyncio, typing\nfrom typing import Protocol\n"
        "class A(Protocol): ...\nclass B(typing.Protocol): ...\nclass C(Protocol[T]): ...\n"
        "class D(asyncio.Protocol): ...\nclass E: ...\n"
    )
    assert [name for _, name in protocols(source, "x.py")] == ["A", "B", "C"]


def test_every_protocol_outside_the_ports_package_is_no_port() -> None:
    outside = [
        f"{path.relative_to(SRC)}:{line} {name}"
        for path in sorted(SRC.rglob("*.py"))
        if not str(path.relative_to(SRC)).startswith(("application/ports/", *TOOLS))
        for line, name in protocols(path.read_text(), str(path))
        if name not in NOT_PORTS
    ]
    assert outside == []


def test_the_package_offers_every_name_its_modules_define() -> None:
    missing = []
    for module_info in pkgutil.iter_modules(ports.__path__):
        module = importlib.import_module(f"{ports.__name__}.{module_info.name}")
        tree = ast.parse(Path(module.__file__ or "").read_text())
        for node in tree.body:
            names = (
                [node.name] if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                else [t.id for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign)
                else []
            )
            for name in names:
                offered = name in ports.__all__ and getattr(ports, name, None) is getattr(module, name)
                if not name.startswith("_") and not offered:
                    missing.append(f"{module_info.name}.{name}")
    assert missing == []
    assert sorted(ports.__all__) == sorted(set(ports.__all__))
    assert all(hasattr(ports, name) for name in ports.__all__)
